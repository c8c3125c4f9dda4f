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
plan 53

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
# split_opts [ditstar options] [-- reference options]: $copts, $ropts; counts the runs
split_opts() {
	copts= ropts= side=c
	for a in "$@"; do
		if [ "$a" = "--" ]; then side=r; continue; fi
		if [ $side = c ]; then copts="$copts $a"; else ropts="$ropts $a"; fi
	done
	nfwd=$((nfwd + 1))
}

# fwd DESC MODEL INPUTS [ditstar options] [-- reference options]: both outputs, 1e-5
fwd() {
	desc=$1 model=$2 in=$3
	shift 3
	split_opts "$@"
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

# the sigmas: LTX2Scheduler bit for bit (float32), steps 1..60
check "LTX2Scheduler sigmas, 1..60 steps: the reference's float32 values bit for bit" sh -c '
	for n in $(seq 1 60); do
		a=$("$top_builddir/tests/test_sampler" --ltx2-sigmas $n) || exit 1
		b=$("$PYTHON_NUMPY" "$top_srcdir/tests/ref/ltx_ref.py" sigmas --steps $n) || exit 1
		"$PYTHON_NUMPY" -c "import json, sys, numpy as np
sys.exit(not (np.float32(json.loads(sys.argv[1])) == np.float32(json.loads(sys.argv[2]))).all())" \
			"$a" "$b" || { echo "# $n steps: $a vs $b"; exit 1; }
	done'

# generate: the official one-stage loop (four passes a step) against the reference
for m in m2 m2.3 m2.5 l3; do
	refl inputs --model "$T/$m.safetensors" --output "$T/gin.$m" --seed 9 --frames 3 \
		--height 2 --width 3 --audio-frames 5 --negative >/dev/null
	"$PYTHON_NUMPY" -c "
import sys; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st
d = st.load('$T/gin.$m')
st.save('$T/noise.$m', {'video_noise': d['video_latent'], 'audio_noise': d['audio_latent']})
st.save('$T/ctx.$m', {k.replace('_neg', '_negative'): v for k, v in d.items() if 'context' in k})"
done
# gen DESC MODEL [ditstar options] [-- reference options]: latents within 2e-5
gen() {
	desc=$1 model=$2
	shift 2
	split_opts "$@"
	out="$T/gen.$nfwd"
	# shellcheck disable=SC2086
	if "$DITSTAR" generate --model-dir "$T/$model.safetensors" --noise "$T/noise.$model" \
		--context "$T/ctx.$model" --output "$out.c" --quiet $copts 2>"$T/err" &&
		refl generate --model "$T/$model.safetensors" --noise "$T/gin.$model" \
			--context "$T/gin.$model" \
			--output "$out.ref" $ropts >/dev/null 2>>"$T/err" &&
		rv=$(ref compare "$out.c" "$out.ref" --tensor-a video_latents --tensor-b video \
			--tol 2e-5) &&
		ra=$(ref compare "$out.c" "$out.ref" --tensor-a audio_latents --tensor-b audio \
			--tol 2e-5); then
		ok "$desc: video $rv; audio $ra"
	else
		fail "$desc: video $rv; audio $ra"
		sed 's/^/# /' "$T/err"
	fi
	rv= ra=
}
gen "generate LTX-2, 3 steps, 4 passes (CFG 3/7, STG block 1, modality 3, rescale 0.7)" m2 \
	--steps 3 --stg-blocks 1 -- --steps 3 --stg-blocks 1
gen "generate LTX-2.3, the distilled sigmas, CFG 1 (no negative pass)" m2.3 --sigmas distilled \
	--video-guidance 1 --audio-guidance 1 --stg-blocks 0 -- --distilled --video-cfg 1 \
	--audio-cfg 1 --stg-blocks 0
gen "generate LTX-2.5, --sigmas 0.909375,0.725,0.421875,0, no STG, modality 1 (2 passes)" \
	m2.5 --sigmas 0.909375,0.725,0.421875,0.0 --stg 0 --modality-guidance 1 -- --stg-blocks 0 --sigmas-list \
	0.909375,0.725,0.421875,0.0 --video-stg 0 --audio-stg 0 --video-modality 1 \
	--audio-modality 1
gen "generate LTX-2, 2 steps, rescale 0, STG 2.5 on block 0" m2 --steps 2 --rescale 0 \
	--stg 2.5 --stg-blocks 0 -- --steps 2 --video-rescale 0 --audio-rescale 0 --video-stg 2.5 \
	--audio-stg 2.5 --stg-blocks 0

# image-to-video: the image's latent at a latent frame (VideoConditionByLatentIndex)
"$PYTHON_NUMPY" -c "
import sys; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st, numpy as np
z = st.load('$T/noise.m2')['video_noise'][:, :1] * 0.5 + 0.25
st.save('$T/img', {'image_latent': np.ascontiguousarray(z)})"
gen "generate LTX-2 image-to-video, strength 1 at frame 0" m2 --steps 3 --stg-blocks 1 \
	--image-latent "$T/img" -- --steps 3 --stg-blocks 1 --image-latent "$T/img"
check "strength 1: latent frame 0 is the image's latent, bit for bit" "$PYTHON_NUMPY" -c "
import sys; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st, numpy as np
sys.exit(not np.array_equal(st.load('$T/gen.$nfwd.c')['video_latents'][:, :1],
                            st.load('$T/img')['image_latent']))"
gen "generate LTX-2.3 image-to-video, strength 0.7 at frame 1 (prompt AdaLN at sigma)" m2.3 \
	--sigmas distilled --stg-blocks 0 --image-latent "$T/img" --image-strength 0.7 \
	--image-frame 1 -- --distilled --stg-blocks 0 --image-latent "$T/img" --image-strength 0.7 \
	--image-frame 1
expect_fail "--image-frame past the latent frames" 2 "--image-frame 3: the video has 3 latent frames" \
	"$DITSTAR" generate --model-dir "$T/m2.safetensors" --noise "$T/noise.m2" --quiet \
	--image-latent "$T/img" --image-frame 3 --steps 1
expect_fail "--image-strength without --image-latent" 2 "--image-strength needs --image-latent" \
	"$DITSTAR" generate --model-dir "$T/m2.safetensors" --noise "$T/noise.m2" --quiet \
	--image-strength 0.5 --steps 1
expect_fail "an image latent of another size" 1 "img2: tensor 'image_latent' must be" \
	sh -c "'$PYTHON_NUMPY' -c \"
import sys; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st, numpy as np
st.save('$T/img2', {'image_latent': np.zeros((128, 1, 3, 3), np.float32)})\" &&
	'$DITSTAR' generate --model-dir '$T/m2.safetensors' --noise '$T/noise.m2' --quiet \
	--image-latent '$T/img2' --steps 1"

"$PYTHON_NUMPY" -c "
import sys; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st
st.save('$T/noisev.m2', {'video_noise': st.load('$T/noise.m2')['video_noise']})"
"$DITSTAR" generate --model-dir "$T/m2.safetensors" --noise "$T/noisev.m2" --context "$T/ctx.m2" \
	--steps 3 --stg-blocks 1 --quiet --output "$T/gv.c" 2>"$T/err" || sed 's/^/# /' "$T/err"
refl generate --model "$T/m2.safetensors" --noise "$T/gin.m2" --context "$T/gin.m2" --steps 3 \
	--stg-blocks 1 --video-only --output "$T/gv.ref" >/dev/null
check "generate video only (noise without audio_noise): the reference, no audio written" \
	"$PYTHON_NUMPY" -c "
import sys; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st, numpy as np
a = st.load('$T/gv.c'); b = st.load('$T/gv.ref')
d = float(np.abs(a['video_latents'] - b['video']).max()); print('# max abs', d)
sys.exit(not (d < 2e-5 and list(a) == ['video_latents']))"

# one load per step: byte-identical across modes; the chunk transfers of a step do not
# grow with the passes (4 here); the official pass-major order moves each chunk 4 times
G="$DITSTAR generate --model-dir $T/l3.safetensors --noise $T/noise.l3 --context $T/ctx.l3 --quiet --steps 2 --stg-blocks 1"
$G --output "$T/g.none" 2>/dev/null
for m in "cpu --offload-chunk-size 1" "disk --offload-dir $T/gs1 --offload-chunk-size 1" \
	"disk --offload-dir $T/gs3 --offload-chunk-size 3" \
	"disk --offload-dir $T/gs1 --offload-chunk-size 1 --pass-order pass --resident-chunks 0"; do
	rm -f "$T/g.m"
	# shellcheck disable=SC2086
	$G --offload $m --output "$T/g.m" --stats-json "$T/g.json" 2>"$T/err" ||
		sed 's/^/# /' "$T/err"
	identical "generate, offload $m: byte-identical" "$T/g.none" "$T/g.m"
done
check "pass-major (the official order): each chunk moves once per pass, 4 times a step" \
	"$PYTHON_NUMPY" -c "
import json, sys
p = json.load(open('$T/g.json'))['weights']['pools'][0]
sys.exit(not (p['passes'] == 4 and p['bytes_moved_per_step'] == 4 * 3 * p['chunk_bytes']))"
$G --offload disk --offload-dir "$T/gs1" --offload-chunk-size 1 --resident-chunks 0 --output "$T/g.m" \
	--stats-json "$T/g.json" 2>/dev/null
check "chunk-major: 3 chunks, 4 passes, 2 steps: 6 transfers, one per chunk and step" \
	"$PYTHON_NUMPY" -c "
import json, sys
s = json.load(open('$T/g.json')); p = s['weights']['pools'][0]
print('# fetches', s['transfers']['weight_fetches'], 'bytes/step', p['bytes_moved_per_step'])
sys.exit(not (p['passes'] == 4 and s['transfers']['weight_fetches'] == 6 and
              p['bytes_moved_per_step'] == 3 * p['chunk_bytes']))"
"$DITSTAR" generate --model tiny-ltx2 --steps 2 --stg-blocks 1 --quiet --output "$T/tiny" \
	--cache-dir "$T/cache" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "generate tiny-ltx2 (17 frames of 64 x 96): video [16, 3, 2, 3], audio [8, 18, 16]" \
	"$PYTHON_NUMPY" -c "
import sys; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st
d = st.load('$T/tiny')
sys.exit(not (d['video_latents'].shape == (16, 3, 2, 3) and d['audio_latents'].shape == (8, 18, 16)))"
"$DITSTAR" generate --model tiny-ltx2 --steps 2 --quiet --output "$T/tiny_own" \
	--cache-dir "$T/cache" 2>"$T/err" || sed 's/^/# /' "$T/err"
identical "generate tiny-ltx2 with its own defaults: STG at the official block's depth (29 x 2 / 48: block 1), as --stg-blocks 1" \
	"$T/tiny" "$T/tiny_own"
expect_fail "generate: --sigmas 0.5,0.7,0: refused" 2 "sigmas" "$DITSTAR" generate \
	--model-dir "$T/m2.safetensors" --noise "$T/noise.m2" --context "$T/ctx.m2" --stg-blocks 1 \
	--sigmas 0.5,0.7,0 --output "$T/x"

# refusals
"$PYTHON_NUMPY" -c "
import sys, json; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st
w = st.load('$T/m2.safetensors'); m = st.load_metadata('$T/m2.safetensors')
st.save('$T/nocfg.safetensors', w, metadata={'model_version': m['model_version']})
c = json.loads(m['config']); c.pop('transformer')
st.save('$T/notr.safetensors', w, metadata={'config': json.dumps(c)})
c = json.loads(m['config']); t = json.dumps(c['transformer']); k = next(iter(c['transformer']))
c['transformer'] = 'DUP'
dup = json.dumps(c).replace(json.dumps('DUP'), t[:-1] + ', ' + json.dumps(k) + ': 7}', 1)
st.save('$T/dup.safetensors', w, metadata={'config': dup})
open('$T/dupkey', 'w').write(k)
c = json.loads(m['config']); c['transformer']['_class_name'] = 'LTXVideoTransformer3DModel'
st.save('$T/other.safetensors', w, metadata={'config': json.dumps(c)})
d = st.load('$T/av2'); d['video_sigma'] = d['video_sigma'] + 1.0; st.save('$T/badsig', d)
d = st.load('$T/av2'); d['audio_latent'] = d['audio_latent'][:4]; st.save('$T/badaud', d)"
check "the fixture's header as the released files': config.transformer names AVTransformer3DModel, config.vae CausalVideoAutoencoder" \
	"$PYTHON_NUMPY" -c "
import sys, json; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st
c = json.loads(st.load_metadata('$T/m2.safetensors')['config'])
assert c['transformer']['_class_name'] == 'AVTransformer3DModel', c['transformer']
assert c['vae']['_class_name'] == 'CausalVideoAutoencoder', c"
expect_fail "a transformer of another class (diffusers' LTX-Video): refused, naming the class" 1 \
	"_class_name 'LTXVideoTransformer3DModel' is not a model ditstar reads" \
	"$DITSTAR" forward --model-dir "$T/other.safetensors" --inputs "$T/av2" --output "$T/x"
expect_fail "a header without 'config': refused by name" 1 "no 'config'" \
	"$DITSTAR" forward --model-dir "$T/nocfg.safetensors" --inputs "$T/av2" --output "$T/x"
expect_fail "a config without 'transformer': refused" 1 "no object 'transformer'" \
	"$DITSTAR" forward --model-dir "$T/notr.safetensors" --inputs "$T/av2" --output "$T/x"
expect_fail "a config with a member twice: refused, as config.json is" 1 \
	"dup.safetensors: the header's 'config': member '$(cat "$T/dupkey")' appears twice in one object" \
	"$DITSTAR" forward --model-dir "$T/dup.safetensors" --inputs "$T/av2" --output "$T/x"
expect_fail "video_sigma 1.75: refused" 1 "outside the sigmas" \
	"$DITSTAR" forward --model-dir "$T/m2.safetensors" --inputs "$T/badsig" --output "$T/x"
expect_fail "audio_latent [4, T, 16]: refused" 1 "audio_latent" \
	"$DITSTAR" forward --model-dir "$T/m2.safetensors" --inputs "$T/badaud" --output "$T/x"
expect_fail "--stg-blocks 2 of 2 blocks: refused" 2 "--stg-blocks" \
	"$DITSTAR" forward --model-dir "$T/m2.safetensors" --inputs "$T/av2" --output "$T/x" \
	--stg-blocks 2
check "nothing written by the refused runs" test ! -e "$T/x"
check "info reads the one-file checkpoint: the family and its version flags" sh -c \
	"'$DITSTAR' info --model-dir '$T/m2.5.safetensors' | grep -q ltx-2"
finish
