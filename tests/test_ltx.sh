#!/bin/sh
# LTX-2 (tiny one-file checkpoints made by tests/ref/ltx_ref.py for the three released
# versions): forward of both streams against the float64 NumPy reference (1e-5) with
# default and given positions, per-token timesteps, text masks, video-only runs, STG
# blocks and other frame rates; bf16 weights; byte-identical outputs across --offload
# none|cpu|disk and chunk sizes; the refusals (a header without config, bad shapes and
# sigmas).
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch ltx)
plan 29

refl() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/ltx_ref.py" "$@"; }

for v in 2 2.3 2.5; do
	refl make-tiny --output "$T/m$v.safetensors" --seed 3 --version "$v" >/dev/null
done
refl make-tiny --output "$T/bf.safetensors" --seed 5 --version 2.3 --dtype BF16 >/dev/null
refl make-tiny --output "$T/l3.safetensors" --seed 6 --version 2 --layers 3 >/dev/null

# inputs NAME MODEL [options]: latent 3 x 2 x 3, 5 audio tokens, 8 text tokens
inputs() {
	name=$1 model=$2
	shift 2
	refl inputs --model "$T/$model.safetensors" --output "$T/$name" --seed 7 --frames 3 \
		--height 2 --width 3 --audio-frames 5 "$@" >/dev/null
}

nfwd=0
# fwd DESC MODEL INPUTS [ditstar options] [-- reference options]: both outputs, 1e-5
fwd() {
	desc=$1 model=$2 in=$3
	shift 3
	copts= ropts= side=c
	for a in "$@"; do
		if [ "$a" = "--" ]; then side=r; continue; fi
		if [ $side = c ]; then copts="$copts $a"; else ropts="$ropts $a"; fi
	done
	nfwd=$((nfwd + 1))
	out="$T/$in.$model.$nfwd"
	# shellcheck disable=SC2086
	if ! "$DITSTAR" forward --model-dir "$T/$model.safetensors" --inputs "$T/$in" \
		--output "$out.c" $copts 2>"$T/err"; then
		fail "$desc: ditstar forward failed"
		sed 's/^/# /' "$T/err"
		return
	fi
	# shellcheck disable=SC2086
	refl forward --model "$T/$model.safetensors" --inputs "$T/$in" --output "$out.ref" \
		$ropts >/dev/null
	if rv=$(ref compare "$out.c" "$out.ref" --tensor-a video --tol 1e-5) && {
		! "$PYTHON_NUMPY" -c "
import sys; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st
sys.exit(0 if 'audio' in st.read_header('$out.ref')[0] else 1)" ||
			ra=$(ref compare "$out.c" "$out.ref" --tensor-a audio --tol 1e-5); }; then
		ok "$desc: video $rv${ra:+; audio $ra}"
	else
		fail "$desc: video $rv; audio $ra"
	fi
	ra=
}

for v in 2 2.3 2.5; do
	inputs "av$v" "m$v"
	inputs "vo$v" "m$v" --video-only
	inputs "pt$v" "m$v" --per-token --audio-sigma 0.3 --mask-valid 5
	fwd "LTX-$v: video + audio" "m$v" "av$v"
	fwd "LTX-$v: video only" "m$v" "vo$v"
	fwd "LTX-$v: per-token timesteps, audio sigma 0.3, 5 of 8 text tokens" "m$v" "pt$v"
	fwd "LTX-$v: STG on block 1 (self-attention -> value)" "m$v" "av$v" --stg-blocks 1 -- \
		--stg-blocks 1
done
fwd "LTX-2: 3 blocks, STG on blocks 0 and 2, 30 fps" l3 av2 --stg-blocks 0,2 --fps 30 -- \
	--stg-blocks 0,2 --fps 30
inputs big m2.3 --frames 5 --height 4 --width 2 --audio-frames 9 --text-len 12 --sigma 1.0
fwd "LTX-2.3: latent 5 x 4 x 2, 9 audio tokens, sigma 1" m2.3 big
"$DITSTAR" forward --model-dir "$T/bf.safetensors" --inputs "$T/av2.3" --output "$T/bf.c" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
refl forward --model "$T/bf.safetensors" --inputs "$T/av2.3" --output "$T/bf.ref" >/dev/null
within "bf16 checkpoint (read as stored, computed in fp32): the reference" "$T/bf.c" \
	"$T/bf.ref" video 1e-5

# positions given in the inputs: the default ones give the default's bytes; others differ
refl positions --frames 3 --height 2 --width 3 --audio-frames 5 --output "$T/pos" >/dev/null
"$PYTHON_NUMPY" -c "
import sys; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st
d = st.load('$T/av2'); p = st.load('$T/pos', float64=True)
d['video_positions'] = p['video_positions'].astype('f4')
d['audio_positions'] = p['audio_positions'].astype('f4')
st.save('$T/avpos', d)
d['video_positions'] = d['video_positions'] * 1.5
d['audio_positions'] = d['audio_positions'] + 0.25
st.save('$T/avpos2', d)"
"$DITSTAR" forward --model-dir "$T/m2.safetensors" --inputs "$T/avpos" --output "$T/avpos.c" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
"$DITSTAR" forward --model-dir "$T/m2.safetensors" --inputs "$T/av2" --output "$T/avdef.c" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
within "positions given as the default ones (in fp32): the default's output" "$T/avpos.c" \
	"$T/avdef.c" video 1e-5
fwd "LTX-2: other positions given in the inputs" m2 avpos2

# offload: byte-identical across modes and chunk sizes (3 blocks)
F="$DITSTAR forward --model-dir $T/l3.safetensors --inputs $T/av2"
$F --output "$T/o.none" 2>/dev/null
for m in "cpu --offload-chunk-size 1" "cpu --offload-chunk-size 3" \
	"disk --offload-dir $T/store --offload-chunk-size 1" "none --offload-chunk-size 3"; do
	rm -f "$T/o.m"
	# shellcheck disable=SC2086
	$F --offload $m --output "$T/o.m" 2>"$T/err" || sed 's/^/# /' "$T/err"
	identical "offload $m: byte-identical" "$T/o.none" "$T/o.m"
done
rm -f "$T/o.m"
$F --offload cpu --offload-chunk-size 1 --tile-tokens 4 --output "$T/o.m" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
identical "offload cpu, row tiles of 4 tokens: byte-identical" "$T/o.none" "$T/o.m"

# refusals
"$PYTHON_NUMPY" -c "
import sys, json; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st
w = st.load('$T/m2.safetensors'); m = st.load_metadata('$T/m2.safetensors')
st.save('$T/nocfg.safetensors', w, metadata={'model_version': m['model_version']})
c = json.loads(m['config']); c.pop('transformer')
st.save('$T/notr.safetensors', w, metadata={'config': json.dumps(c)})
d = st.load('$T/av2'); d['video_sigma'] = d['video_sigma'] + 1.0; st.save('$T/badsig', d)
d = st.load('$T/av2'); d['audio_latent'] = d['audio_latent'][:4]; st.save('$T/badaud', d)"
expect_fail "a header without 'config': refused by name" 1 "no 'config'" \
	"$DITSTAR" forward --model-dir "$T/nocfg.safetensors" --inputs "$T/av2" --output "$T/x"
expect_fail "a config without 'transformer': refused" 1 "no object 'transformer'" \
	"$DITSTAR" forward --model-dir "$T/notr.safetensors" --inputs "$T/av2" --output "$T/x"
expect_fail "video_sigma 1.75: refused" 1 "outside the sigmas" \
	"$DITSTAR" forward --model-dir "$T/m2.safetensors" --inputs "$T/badsig" --output "$T/x"
expect_fail "audio_latent [4, T, 16]: refused" 1 "audio_latent" \
	"$DITSTAR" forward --model-dir "$T/m2.safetensors" --inputs "$T/badaud" --output "$T/x"
expect_fail "--stg-blocks 2 of 2 blocks: refused" 1 "--stg-blocks" \
	"$DITSTAR" forward --model-dir "$T/m2.safetensors" --inputs "$T/av2" --output "$T/x" \
	--stg-blocks 2
check "nothing written by the refused runs" test ! -e "$T/x"
check "info reads the one-file checkpoint: the family and its version flags" sh -c \
	"'$DITSTAR' info --model-dir '$T/m2.5.safetensors' | grep -q ltx-2"
finish
