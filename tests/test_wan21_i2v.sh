# Wan2.1 image-to-video (I2V-14B) and first-last-frame-to-video (FLF2V-14B) from their
# released layouts (tiny checkpoints made by tests/ref/wan21_i2v_ref.py: the official
# config.json and names, diffusers' WanTransformer3DModel, ComfyUI's single file):
# forward and generate against the float64 NumPy reference (1e-5 forward, 2e-5 for the
# sampling loop), the official forward's input shapes, where the CLIP features are read
# from, byte-identical latents across offload modes (the store carries the image keys:
# a block without them would compute other latents), and the refusals.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch wan21_i2v)
plan 27

refi() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/wan21_i2v_ref.py" "$@"; }
for v in i2v flf2v; do
	for l in official diffusers comfy; do
		refi make-tiny --variant $v --layout $l --output-dir "$T/$v-$l" --seed 3 >/dev/null
	done
done

# inputs NAME IMAGES TEXT_DIM SEED: x, t, context, clip_fea [IMAGES, 257, 1280], y, as
# the official forward takes them
"$PYTHON_NUMPY" - "$T" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
T = sys.argv[1]
for name, images, seed in (('a1', 1, 1), ('a2', 2, 2), ('b1', 1, 5), ('b2', 2, 6)):
    r = np.random.default_rng(seed)
    d = {'x': r.standard_normal((16, 3, 4, 6)), 't': np.array([713.0]),
         'context': r.standard_normal((5, 32)),
         'clip_fea': r.standard_normal((images, 257, 1280)),
         'y': r.standard_normal((20, 3, 4, 6))}
    d = {k: v.astype(np.float32) for k, v in d.items()}
    st.save('%s/%s.in' % (T, name), d)
    if name == 'a1':  # another image, all else the same
        st.save('%s/a1c.in' % T, dict(d, clip_fea=r.standard_normal((1, 257, 1280)).astype(np.float32)))
    # the official shapes with a batch of 1, and FLF2V's features as [514, 1280]
    st.save('%s/%s.b1.in' % (T, name), {k: v[None] if k in ('x', 'y', 'context') else v
                                         for k, v in d.items()})
    st.save('%s/%s.2d.in' % (T, name), dict(d, clip_fea=d['clip_fea'].reshape(-1, 1280)))
r = np.random.default_rng(9)
st.save(T + '/noise', {'noise': r.standard_normal((16, 2, 4, 6)).astype(np.float32)})
ctx = {'context': r.standard_normal((5, 32)), 'context_null': r.standard_normal((3, 32))}
ctx = {k: v.astype(np.float32) for k, v in ctx.items()}
clip1 = r.standard_normal((1, 257, 1280)).astype(np.float32)
clip2 = r.standard_normal((2, 257, 1280)).astype(np.float32)
y = r.standard_normal((20, 2, 4, 6)).astype(np.float32)
st.save(T + '/ctx', ctx)
st.save(T + '/ctx1', dict(ctx, clip_fea=clip1))
st.save(T + '/y', {'y': y})
st.save(T + '/y1', {'y': y, 'clip_fea': clip1})
st.save(T + '/y2', {'y': y, 'clip_fea': clip2})
st.save(T + '/y1bad', {'y': y, 'clip_fea': clip1[:, :200]})
PY

# fwd DESC VARIANT LAYOUT INPUTS: ditstar forward vs the reference, 1e-5
fwd() {
	m="$T/$2-$3"
	[ "$3" = comfy ] && m="$m/wan2.1_$2_tiny.safetensors"
	if ! "$DITSTAR" forward --model-dir "$m" --inputs "$T/$4.in" --output "$T/$4.$2-$3.c" \
		2>"$T/err"; then
		fail "$1: ditstar forward failed"
		sed 's/^/# /' "$T/err"
		return
	fi
	r="$T/$2-official" # the same weights (seed and sizes), diffusers' under its names
	[ "$3" = comfy ] && r="$T/$2-comfy"
	refi forward --model-dir "$r" --inputs "$T/$4.in" --output "$T/$4.$2-$3.ref"
	within "$1" "$T/$4.$2-$3.c" "$T/$4.$2-$3.ref" y 1e-5
}
fwd "I2V forward, official layout" i2v official a1
fwd "I2V forward, diffusers layout (image_embedder, add_k_proj)" i2v diffusers a1
fwd "I2V forward, ComfyUI single file (no config.json)" i2v comfy b1
fwd "FLF2V forward, official layout (emb_pos over 514 tokens)" flf2v official a2
fwd "FLF2V forward, diffusers layout (pos_embed_seq_len)" flf2v diffusers a2
fwd "FLF2V forward, ComfyUI single file" flf2v comfy b2
fwd "I2V forward, another image" i2v official a1c
check "the image's features change the velocity (the branch is read)" "$PYTHON_NUMPY" -c "
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
a, b = st.load('$T/a1.i2v-official.c')['y'], st.load('$T/a1c.i2v-official.c')['y']
sys.exit(not np.abs(a - b).max() > 1e-2)"

# b1 DESC VARIANT INPUTS SUFFIX: the same bytes as the unbatched inputs' forward
b1() {
	"$DITSTAR" forward --model-dir "$T/$2-official" --inputs "$T/$3.$4.in" \
		--output "$T/$3.$4.c" 2>"$T/err" || sed 's/^/# /' "$T/err"
	identical "$1" "$T/$3.$2-official.c" "$T/$3.$4.c"
}
b1 "I2V forward, x, context, y with a batch of 1: byte-identical" i2v a1 b1
b1 "I2V forward, clip_fea [257, 1280]: byte-identical to [1, 257, 1280]" i2v a1 2d
b1 "FLF2V forward, clip_fea [514, 1280]: byte-identical to [2, 257, 1280]" flf2v a2 2d

# generate: 4 UniPC steps (I2V), 3 (FLF2V), both passes reading the image's features
G="$DITSTAR generate --noise $T/noise --quiet"
# shellcheck disable=SC2086
$G --model-dir "$T/i2v-official" --context "$T/ctx1" --image-latent "$T/y" --steps 4 \
	--output "$T/g1.c" 2>"$T/err" || sed 's/^/# /' "$T/err"
refi generate --model-dir "$T/i2v-official" --noise "$T/noise" --context "$T/ctx1" \
	--image-latent "$T/y" --steps 4 --output "$T/g1.ref"
within "I2V generate, 4 steps, clip_fea in the --context file" "$T/g1.c" "$T/g1.ref" latents 2e-5
# shellcheck disable=SC2086
$G --model-dir "$T/flf2v-official" --context "$T/ctx" --image-latent "$T/y2" --steps 3 \
	--output "$T/g2.c" 2>"$T/err" || sed 's/^/# /' "$T/err"
refi generate --model-dir "$T/flf2v-official" --noise "$T/noise" --context "$T/ctx" \
	--image-latent "$T/y2" --steps 3 --output "$T/g2.ref"
within "FLF2V generate, 3 steps, clip_fea in the --image-latent file" "$T/g2.c" "$T/g2.ref" \
	latents 2e-5
# shellcheck disable=SC2086
$G --model-dir "$T/i2v-official" --context "$T/ctx" --image-latent "$T/y1" --steps 4 \
	--output "$T/g1b.c" 2>"$T/err" || sed 's/^/# /' "$T/err"
identical "I2V generate: clip_fea from --image-latent = from --context" "$T/g1.c" "$T/g1b.c"
for m in "cpu" "disk --offload-dir $T/store"; do
	# shellcheck disable=SC2086
	$G --model-dir "$T/i2v-official" --context "$T/ctx1" --image-latent "$T/y" --steps 4 \
		--offload $m --output "$T/g1m.c" 2>"$T/err" || sed 's/^/# /' "$T/err"
	identical "I2V generate, offload $m: byte-identical latents" "$T/g1.c" "$T/g1m.c"
done

# what a user sees
check "info: Wan2.1 I2V from the official folder, the ComfyUI file, diffusers'" sh -c "
	'$DITSTAR' info --model-dir '$T/i2v-official' | grep -q '^family       wan2.1-i2v' &&
	'$DITSTAR' info --model-dir '$T/i2v-comfy/wan2.1_i2v_tiny.safetensors' | grep -q '^family       wan2.1-i2v' &&
	'$DITSTAR' info --model-dir '$T/i2v-diffusers' | grep -q '^inputs .*clip_fea \\[257, 1280\\]'"
check "info: FLF2V from each layout" sh -c "
	'$DITSTAR' info --model-dir '$T/flf2v-official' | grep -q '^family       wan2.1-flf2v' &&
	'$DITSTAR' info --model-dir '$T/flf2v-comfy/wan2.1_flf2v_tiny.safetensors' | grep -q '^family       wan2.1-flf2v' &&
	'$DITSTAR' info --model-dir '$T/flf2v-diffusers' | grep -q '^family       wan2.1-flf2v'"
check "plan from the shapes alone: the 480P preset, its image buffers counted" sh -c "
	'$DITSTAR' plan --model wan2.1-i2v-14b-480p | grep -q 'plan: wan2.1-i2v'"
"$PYTHON_NUMPY" -c "
import sys; sys.path.insert(0, '$top_srcdir/tests/ref')
import numpy as np, safetensors_np as st
st.save('$T/y480', {'y': np.zeros((20, 1, 60, 104), np.float32)})"
"$DITSTAR" generate --model-dir "$T/i2v-official" --context "$T/ctx1" --image-latent "$T/y480" \
	--frames 1 --height 480 --width 832 --steps 1 --quiet --output "$T/g480" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
check "the official shift: 3 at 832*480, else 5 (the latents' metadata)" "$PYTHON_NUMPY" -c "
import sys; sys.path.insert(0, '$top_srcdir/tests/ref')
import safetensors_np as st
sys.exit(not (st.load_metadata('$T/g480')['shift'] == '3' and
              st.load_metadata('$T/g1.c')['shift'] == '5'))"

# OpenCL workers (PoCL here; a skip where none): the image stage and the image keys on
# the device, against the reference
if "$DITSTAR" generate --quiet --steps 1 --workers opencl --output "$T/probe" 2>/dev/null; then
	"$DITSTAR" forward --model-dir "$T/flf2v-official" --inputs "$T/a2.in" --workers opencl \
		--output "$T/a2.ocl" 2>"$T/err" || sed 's/^/# /' "$T/err"
	within "OpenCL: FLF2V forward" "$T/a2.ocl" "$T/a2.flf2v-official.ref" y 1e-5
	# shellcheck disable=SC2086
	$G --model-dir "$T/i2v-official" --context "$T/ctx1" --image-latent "$T/y" --steps 4 \
		--workers opencl --output "$T/g1o.c" 2>"$T/err" || sed 's/^/# /' "$T/err"
	within "OpenCL: I2V generate, 4 steps" "$T/g1o.c" "$T/g1.ref" latents 2e-5
else
	for i in 1 2; do
		dit_n=$((dit_n + 1))
		echo "ok $dit_n # SKIP no OpenCL device"
	done
fi

# refusals
expect_fail "forward without clip_fea" 1 "a1nc.in: tensor 'clip_fea' missing" sh -c "
	'$PYTHON_NUMPY' -c \"
import sys; sys.path.insert(0, '$top_srcdir/tests/ref')
import safetensors_np as st
d = st.load('$T/a1.in'); del d['clip_fea']; st.save('$T/a1nc.in', d)\" &&
	'$DITSTAR' forward --model-dir '$T/i2v-official' --inputs '$T/a1nc.in' --output '$T/o'"
expect_fail "clip_fea of another shape, named with the shapes taken" 1 \
	"tensor 'clip_fea' must be \\[257, 1280\\] \\(or \\[1, 257, 1280\\]\\)" \
	"$DITSTAR" generate --model-dir "$T/i2v-official" --noise "$T/noise" --context "$T/ctx" \
	--image-latent "$T/y1bad" --quiet
expect_fail "clip_fea in both files" 2 "tensor 'clip_fea' is in both" \
	"$DITSTAR" generate --model-dir "$T/i2v-official" --noise "$T/noise" --context "$T/ctx1" \
	--image-latent "$T/y1" --quiet
expect_fail "a --context without clip_fea and an --image-latent without" 2 \
	"wan2.1-i2v needs the image's CLIP features, tensor 'clip_fea' \\[257, 1280\\]" \
	"$DITSTAR" generate --model-dir "$T/i2v-official" --noise "$T/noise" --context "$T/ctx" \
	--image-latent "$T/y" --quiet
refi make-tiny --variant i2v --output-dir "$T/noclip" --seed 3 >/dev/null
"$PYTHON_NUMPY" - "$T/noclip" <<'PY'
import glob, json, os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import safetensors_np as st
for f in glob.glob(sys.argv[1] + '/*.safetensors'):
    st.save(f, {k: v for k, v in st.load(f).items() if 'img' not in k})
idx = sys.argv[1] + '/diffusion_pytorch_model.safetensors.index.json'
j = json.load(open(idx))
j['weight_map'] = {k: v for k, v in j['weight_map'].items() if 'img' not in k}
json.dump(j, open(idx, 'w'))
PY
expect_fail "an i2v folder without the CLIP branch: one expert of Wan2.2 I2V-A14B?" 1 \
	"noclip: no tensor 'img_emb.proj.0.weight': model_type 'i2v' in one checkpoint is Wan2.1 I2V, whose CLIP branch it lacks: one expert of Wan2.2 I2V-A14B" \
	"$DITSTAR" info --model-dir "$T/noclip"
finish
