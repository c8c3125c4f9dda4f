# HunyuanVideo 1.0 (tiny checkpoints made by tests/ref/hunyuan_ref.py in the official
# layout): forward against the float64 NumPy reference (1e-5) with text masks of
# several lengths (one token, a partial prompt, the full length) and both mask dtypes,
# bf16 weights, other block counts; generate (the official Euler loop with embedded
# guidance, and true CFG) within 3e-5; byte-identical latents across --offload
# none|cpu|disk and every valid pair of pool chunk sizes; two shards with the
# transformers-style model.safetensors.index.json give the unsharded bytes; the
# refusals.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch hunyuan)
plan 32

refhy() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/hunyuan_ref.py" "$@"; }

refhy make-tiny --output-dir "$T/m" --seed 3 >/dev/null
refhy make-tiny --output-dir "$T/bf" --seed 5 --dtype BF16 >/dev/null
refhy make-tiny --output-dir "$T/d1" --seed 6 --double 1 --single 1 >/dev/null
refhy make-tiny --output-dir "$T/dif" --seed 3 --layout diffusers >/dev/null
refhy make-tiny --output-dir "$T/sh" --seed 3 --shards 2 >/dev/null

# inputs NAME L V [options]: x [4, 3, 8, 12], text_states [L, 32], V prompt tokens
inputs() {
	name=$1 len=$2 valid=$3
	shift 3
	refhy inputs --model-dir "$T/m" --output "$T/$name" --seed "$valid" --frames 3 --height 8 \
		--width 12 --text-len "$len" --valid "$valid" "$@" >/dev/null
}

# fwd DESC MODEL INPUTS [ditstar options]: forward vs reference, 1e-5
fwd() {
	desc=$1 model=$2 in=$3
	shift 3
	if ! "$DITSTAR" forward --model-dir "$T/$model" --inputs "$T/$in" \
		--output "$T/$in.$model.c" "$@" 2>"$T/err"; then
		fail "$desc: ditstar forward failed"
		sed 's/^/# /' "$T/err"
		return
	fi
	refhy forward --model-dir "$T/$model" --inputs "$T/$in" --output "$T/$in.$model.ref" \
		>/dev/null
	within "$desc" "$T/$in.$model.c" "$T/$in.$model.ref" y 1e-5
}

inputs a 20 7
inputs one 20 1 --mask-dtype F32
inputs full 16 16
inputs long 40 33 --t 0 --guidance 1000
"$PYTHON_NUMPY" -c "
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
d = st.load('$T/a'); d['text_mask'] = np.array([1, 1, 0, 1] + [0] * 16, np.int64)
st.save('$T/bad_mask', d)"
fwd "forward, 7 of 20 text tokens (I64 mask)" m a
"$PYTHON_NUMPY" -c "
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
d = st.load('$T/a'); d['text_states'][7:] = 100.0
st.save('$T/a2', d)"
"$DITSTAR" forward --model-dir "$T/m" --inputs "$T/a2" --output "$T/a2.c" 2>/dev/null
identical "padded text rows (set to 100): the same bytes of y" "$T/a.m.c" "$T/a2.c"
fwd "forward, one text token (F32 mask)" m one
fwd "forward, a full-length prompt" m full
fwd "forward, 33 of 40 tokens, t 0, guidance 1000" m long
fwd "forward, bf16 checkpoint" bf a
"$DITSTAR" forward --model-dir "$T/dif" --inputs "$T/a" --output "$T/a.dif" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
identical "diffusers layout (split q, k, v; swapped final adaLN): the bytes of the official" \
	"$T/a.m.c" "$T/a.dif"
check "two shards of seed 3 (model.safetensors.index.json): the unsharded tensors" sh -c "
	test -f '$T/sh/model.safetensors.index.json' &&
	'$top_builddir/tests/pt_check' same '$T/sh' '$T/m'"
"$DITSTAR" forward --model-dir "$T/sh" --inputs "$T/a" --output "$T/a.sh" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
identical "two shards with model.safetensors.index.json: the bytes of the unsharded" \
	"$T/a.m.c" "$T/a.sh"
fwd "forward, 1 double and 1 single block" d1 a
fwd "forward, row tiles of 16 tokens" m a --tile-tokens 16
"$DITSTAR" forward --model-dir "$T/m" --inputs "$T/a" --output "$T/a.bf" --weight-dtype bf16 \
	2>/dev/null
within "forward, bf16 block weights in the store: near the fp32 reference" "$T/a.bf" \
	"$T/a.m.ref" y 3e-2

# generate: embedded guidance only, then true CFG with a negative prompt
refhy inputs --model-dir "$T/m" --output "$T/ctx" --seed 9 --frames 3 --height 8 --width 12 \
	--text-len 24 --valid 9 --negative --valid-neg 4 >/dev/null
# gen DESC OUT [options]: generate vs reference, 3e-5
gen() {
	desc=$1 out=$2
	shift 2
	if "$DITSTAR" generate --model-dir "$T/m" --noise "$T/noise" --context "$T/ctx" \
		--output "$T/$out.c" --quiet "$@" 2>"$T/err" &&
		refhy generate --model-dir "$T/m" --noise "$T/ctx" --context "$T/ctx" \
			--output "$T/$out.ref" "$@" >/dev/null 2>>"$T/err" &&
		res=$(ref compare "$T/$out.c" "$T/$out.ref" --tensor-a latents --tensor-b x \
			--tol 3e-5); then
		ok "$desc: $res"
	else
		fail "$desc: ${res:-failed}"
		sed 's/^/# /' "$T/err"
	fi
}
"$PYTHON_NUMPY" -c "
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import safetensors_np as st
st.save('$T/noise', {'noise': st.load('$T/ctx')['x']})"
gen "generate, 6 steps, embedded guidance 6" g1 --steps 6
gen "generate, 4 steps, shift 5, embedded guidance 3.5" g2 --steps 4 --shift 5 \
	--embedded-guidance 3.5
gen "generate, true CFG 4.5 with the negative prompt" g3 --steps 3 --guidance 4.5
"$DITSTAR" generate --model-dir "$T/m" --noise "$T/noise" --context "$T/ctx" --steps 3 \
	--quiet --stats-json "$T/stats.json" 2>/dev/null
check "stats: one pass per step without CFG, two pools" "$PYTHON_NUMPY" -c "
import json, sys
s = json.load(open('$T/stats.json'))
n = {c['name']: c['count'] for c in s['tasks']} if isinstance(s['tasks'], list) else s['tasks']
sys.exit(not (n.get('cfg', 0) == 0 and s['model']['name'] == 'hunyuan-video'))"

# every valid pair of chunk sizes (2 double blocks, 4 single blocks) and every mode
G="$DITSTAR generate --model-dir $T/m --noise $T/noise --context $T/ctx --quiet --steps 2"
$G --output "$T/none" 2>/dev/null
for pair in "1 1" "1 2" "1 4" "2 1" "2 2" "2 4"; do
	set -- $pair
	$G --offload cpu --offload-chunk-size-double "$1" --offload-chunk-size-single "$2" \
		--output "$T/pair" 2>"$T/err" || sed 's/^/# /' "$T/err"
	identical "cpu, chunks $1 double + $2 single: byte-identical" "$T/none" "$T/pair"
done
for m in "disk --offload-dir $T/store" "disk --offload-dir $T/store2 --offload-chunk-size 2" \
	"none --offload-chunk-size 2,4"; do
	# shellcheck disable=SC2086
	$G --offload $m --output "$T/mode" 2>"$T/err" || sed 's/^/# /' "$T/err"
	identical "offload $m: byte-identical" "$T/none" "$T/mode"
done
# read in place (a plain safetensors checkpoint): the blocks' checksums in each folder
check "disk store: one folder per pool" test -f "$T/store/double_blocks/inplace.json" -a \
	-f "$T/store/single_blocks/inplace.json"

# refusals
expect_fail "a chunk size that does not divide its pool" 2 \
	"does not divide the 4 blocks of pool single_blocks" \
	$G --offload-chunk-size-single 3
expect_fail "a text mask that is not a prefix" 1 "text_mask'\[3\] is 1" \
	"$DITSTAR" forward --model-dir "$T/m" --inputs "$T/bad_mask" --output "$T/x"
expect_fail "--embedded-guidance on a two-pass family" 2 "--embedded-guidance is an option of HunyuanVideo" \
	"$DITSTAR" generate --embedded-guidance 3 --quiet
cp -r "$T/m" "$T/layer"
sed -i 's/"qk_norm_type": "rms"/"qk_norm_type": "layer"/' "$T/layer/config.json"
expect_fail "an option this build does not implement" 1 \
	"key 'qk_norm_type' is 'layer'; this build implements only 'rms'" \
	"$DITSTAR" forward --model-dir "$T/layer" --inputs "$T/a" --output "$T/x"
cp -r "$T/dif" "$T/i2v"
sed -i 's/"image_condition_type": null/"image_condition_type": "latent_concat"/' \
	"$T/i2v/transformer/config.json"
expect_fail "diffusers: an image-to-video transformer" 1 \
	"key 'image_condition_type' is 'latent_concat'" \
	"$DITSTAR" forward --model-dir "$T/i2v" --inputs "$T/a" --output "$T/x"
check "info: two pools and the per-block sizes" sh -c "
	'$DITSTAR' info --model-dir '$T/m' | grep -q 'double_blocks.N.\*: 2 blocks of kind .hunyuan_double.' &&
	'$DITSTAR' info --model hunyuan-video | grep -q '^parameters   12821012544'"
finish
