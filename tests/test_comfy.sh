# ComfyUI single files (tests/ref/formats_np.py): the official tensor names after
# model.diffusion_model., a VAE's tensors beside them, as --model-dir FILE.safetensors
# or a folder holding the file and config.json. Without a config the Wan configuration
# is read from the tensor shapes as ComfyUI does (heads of 128, the model type from
# the channels); the same weights give the bytes of the official layout. Shapes that
# do not tell the model are refused in one line saying what to pass.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch comfy)
plan 20

fmt() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/formats_np.py" "$@"; }
refhy() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/hunyuan_ref.py" "$@"; }
inputs() { # inputs FILE CHANNELS: x [C, 3, 4, 6], t 613, context [5, 24]
	"$PYTHON_NUMPY" - "$1" "$2" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
r = np.random.default_rng(3)
st.save(sys.argv[1], {'x': r.standard_normal((int(sys.argv[2]), 3, 4, 6)).astype(np.float32),
                      't': np.array([613.0], dtype=np.float32),
                      'context': r.standard_normal((5, 24)).astype(np.float32)})
PY
}
# same DESC MODEL REF INPUTS: forward of MODEL gives the bytes of REF's
same() { # the block matrices widened as they are read (the loaders' values)
	for m in "$2" "$3"; do
		"$DITSTAR" forward --model-dir "$m" --inputs "$4" --weight-dtype f32 --output "$m.y" \
			2>"$T/err" || sed 's/^/# /' "$T/err"
	done
	identical "$1" "$2.y" "$3.y"
}
inputs "$T/in4" 4
inputs "$T/in48" 48

# Wan2.1 T2V, 128 wide: its configuration from the shapes
fmt tiny128 "$T/w" --seed 3
fmt comfy "$T/w" "$T/c/w.safetensors"
check "info: the configuration read from the shapes" sh -c "
	'$DITSTAR' info --model-dir '$T/c/w.safetensors' >'$T/info' &&
	grep -q '^config       read from the tensor shapes (no config.json)' '$T/info' &&
	grep -q '^family       wan2.1-t2v' '$T/info' && grep -q '^num_heads    1$' '$T/info' &&
	grep -q '^text_len     512$' '$T/info' && grep -q '^ffn_dim      256$' '$T/info' &&
	grep -q '^freq_dim     32$' '$T/info' && grep -q '^text_dim     24$' '$T/info'"
same "forward: one ComfyUI file without config = the official layout" "$T/c/w.safetensors" \
	"$T/w" "$T/in4"
for m in c/w.safetensors w; do
	"$DITSTAR" generate --model-dir "$T/$m" --steps 3 --frames 5 --height 32 --width 48 \
		--quiet --output "$T/gen.$(basename "$m")" 2>"$T/err" || sed 's/^/# /' "$T/err"
done
within "generate: the same latents" "$T/gen.w.safetensors" "$T/gen.w" latents 0

# Wan2.2 TI2V-5B by its 48 channels: VAE stride 4/16/16
fmt tiny128 "$T/w5" --seed 4 --model-type ti2v --in-dim 48 --out-dim 48
fmt comfy "$T/w5" "$T/c/w5.safetensors"
check "info: 48 channels are Wan2.2 TI2V-5B" sh -c "
	'$DITSTAR' info --model-dir '$T/c/w5.safetensors' >'$T/info5' &&
	grep -q '^family       wan2.2-ti2v-5b' '$T/info5' &&
	grep -q '^latent       48 channels, VAE stride 4/16/16' '$T/info5'"
same "forward: TI2V-5B from one file = the official layout" "$T/c/w5.safetensors" "$T/w5" \
	"$T/in48"

# with config.json: beside the file, or the file alone in a folder with it (32 wide)
ref make-tiny --output-dir "$T/off" --seed 5 --layers 2 >/dev/null
fmt comfy "$T/off" "$T/beside/wan.safetensors" --config
same "forward: a folder of the ComfyUI file and config.json = official" "$T/beside" "$T/off" \
	"$T/in4"
same "forward: the file named, config.json beside it = official" "$T/beside/wan.safetensors" \
	"$T/off" "$T/in4"
"$DITSTAR" generate --model-dir "$T/beside" --steps 3 --frames 5 --height 32 --width 48 \
	--quiet --output "$T/gen.beside" 2>"$T/err" || sed 's/^/# /' "$T/err"
"$DITSTAR" generate --model-dir "$T/off" --steps 3 --frames 5 --height 32 --width 48 \
	--quiet --output "$T/gen.off" 2>"$T/err" || sed 's/^/# /' "$T/err"
within "generate: a folder of the ComfyUI file and config.json = official" "$T/gen.beside" \
	"$T/gen.off" latents 0

# scaled fp8 in one ComfyUI file, no config
fmt fp8 "$T/w" "-" "$T/wdeq" --comfy --single "$T/c/w_fp8_scaled.safetensors"
same "forward: a scaled-fp8 ComfyUI file = the official layout of its dequantised values" \
	"$T/c/w_fp8_scaled.safetensors" "$T/wdeq" "$T/in4"

# Wan2.2 T2V-A14B: each expert's folder holds its ComfyUI file and config.json
ref22 make-tiny --variant t2v-a14b --output-dir "$T/a14b" --seed 5 --layers 2 >/dev/null
for e in high_noise_model low_noise_model; do
	fmt comfy "$T/a14b/$e" "$T/a14bc/$e/wan2.2_t2v_${e}_14B.safetensors" --config
done
wan22_inputs "$T"
for m in a14b a14bc; do
	"$DITSTAR" generate --model-dir "$T/$m" --noise "$T/noise4" --context "$T/ctx" --steps 6 \
		--quiet --output "$T/gen.$m" 2>"$T/err" || sed 's/^/# /' "$T/err"
done
within "Wan2.2 T2V-A14B: the experts' ComfyUI files = the official layout" "$T/gen.a14bc" \
	"$T/gen.a14b" latents 0

# HunyuanVideo: the same names after the prefix; its release assumed without config
refhy make-tiny --output-dir "$T/hy" --seed 3 >/dev/null
refhy inputs --model-dir "$T/hy" --output "$T/hin" --seed 7 --frames 3 --height 8 --width 12 \
	--text-len 20 --valid 7 >/dev/null
fmt comfy "$T/hy" "$T/hyc/hy.safetensors" --config
same "HunyuanVideo: its ComfyUI file beside config.json = official" "$T/hyc/hy.safetensors" \
	"$T/hy" "$T/hin"
fmt comfy "$T/hy" "$T/hy1/hy.safetensors"
expect_fail "HunyuanVideo without config: the release assumed and checked" 1 \
	"hy1/hy.safetensors: tensor 'img_in.proj.weight' has shape \\[64, 4, 1, 2, 2\\], the released HYVideo-T/2-cfgdistill configuration \\(assumed: no config.json\\)" \
	"$DITSTAR" info --model-dir "$T/hy1/hy.safetensors"
# a HunyuanVideo model ComfyUI saved: its own names (img_attn.qkv, img_mod.lin,
# norm.query_norm.scale, time_in.in_layer, ...), read as the official ones; without
# config.json its family is still told (ComfyUI's own detection key)
fmt comfy "$T/hy" "$T/hyi/hy.safetensors" --config --internal
same "HunyuanVideo under ComfyUI's own names = official" "$T/hyi/hy.safetensors" \
	"$T/hy" "$T/hin"
fmt comfy "$T/hy" "$T/hyi1/hy.safetensors" --internal
expect_fail "... and without config.json, the release assumed" 1 \
	"hyi1/hy.safetensors: tensor 'img_in.proj.weight' has shape \\[64, 4, 1, 2, 2\\], the released HYVideo-T/2-cfgdistill configuration \\(assumed: no config.json\\)" \
	"$DITSTAR" info --model-dir "$T/hyi1/hy.safetensors"

# shapes that do not tell the model
fmt tiny128 "$T/i2v" --seed 4 --in-dim 12 --out-dim 4
fmt comfy "$T/i2v" "$T/c/i2v.safetensors"
expect_fail "an I2V-A14B expert alone: refused, saying what to pass" 1 \
	"c/i2v.safetensors: no config.json, and its 12 input channels for 4 output ones and no CLIP branch make it one expert of Wan2.2 I2V-A14B \\(two experts\\): give a folder of the two experts' files \\(high_noise and low_noise in their names\\), or one with high_noise_model/ and low_noise_model/" \
	"$DITSTAR" info --model-dir "$T/c/i2v.safetensors"
fmt tiny128 "$T/vace" --seed 4 --vace
fmt comfy "$T/vace" "$T/c/vace.safetensors"
expect_fail "a VACE model is not taken for text-to-video" 1 \
	"c/vace.safetensors: no config.json, and tensor 'model.diffusion_model.vace_patch_embedding.weight' means a Wan VACE model" \
	"$DITSTAR" info --model-dir "$T/c/vace.safetensors"
fmt tiny128 "$T/clip" --seed 4 --in-dim 12 --out-dim 4 --img-emb
fmt comfy "$T/clip" "$T/c/clip.safetensors"
expect_fail "a CLIP branch cut short: Wan2.1 I2V told, its missing tensor named" 1 \
	"c/clip.safetensors: tensor 'img_emb.proj.1.weight' missing \\(the configuration read from its tensor shapes" \
	"$DITSTAR" info --model-dir "$T/c/clip.safetensors"
fmt comfy "$T/off" "$T/c/narrow.safetensors"
expect_fail "a width that is no multiple of 128: the heads are not told" 1 \
	"c/narrow.safetensors: no config.json, and its width 32 is not a multiple of 128" \
	"$DITSTAR" info --model-dir "$T/c/narrow.safetensors"
"$PYTHON_NUMPY" - "$T/c/vae.safetensors" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
st.save(sys.argv[1], {'first_stage_model.decoder.conv_in.weight': np.zeros((8, 4), np.float32)})
PY
expect_fail "a file of no family: refused by name" 1 \
	"c/vae.safetensors: no config: the file has no 'config' in its header and no config.json beside it" \
	"$DITSTAR" info --model-dir "$T/c/vae.safetensors"
# every tensor there twice, bare and after ComfyUI's prefix (two models in one file):
# refused naming both, never one copy taken silently
"$PYTHON_NUMPY" - "$T/c/w.safetensors" "$T/twice.safetensors" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import safetensors_np as st
w = st.load(sys.argv[1])
p = 'model.diffusion_model.'
twice = dict(w)
for k, v in w.items():
    if k.startswith(p):
        twice[k[len(p):]] = v * 2
st.save(sys.argv[2], twice)
PY
expect_fail "a tensor bare and prefixed is refused, both named" 1 \
	"tensor '[a-z_0-9.]+' is there twice, also as 'model.diffusion_model.[a-z_0-9.]+'" \
	"$DITSTAR" info --model-dir "$T/twice.safetensors"
finish
