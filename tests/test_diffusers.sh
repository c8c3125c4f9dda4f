# Wan checkpoints in diffusers' layout (WanTransformer3DModel: its config keys and
# tensor names, tests/ref/to_diffusers.py), read through the format's rename table:
# the same weights give identical outputs in either layout, for a bare
# transformer folder, a pipeline's transformer/ and Wan2.2's transformer/ +
# transformer_2/; errors name the tensors as the format calls them.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch diffusers)
plan 15

conv() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/to_diffusers.py" "$@"; }

ref make-tiny --output-dir "$T/off" --seed 5 --layers 2 >/dev/null
conv "$T/off" "$T/dif"
conv "$T/off" "$T/pipe/transformer" --shards 2
echo '{"_class_name": "WanPipeline"}' >"$T/pipe/model_index.json"
"$PYTHON_NUMPY" - "$T/in" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
r = np.random.default_rng(3)
st.save(sys.argv[1], {'x': r.standard_normal((4, 3, 4, 6)).astype(np.float32),
                      't': np.array([613.0], dtype=np.float32),
                      'context': r.standard_normal((5, 24)).astype(np.float32)})
PY

check "info reads the diffusers config" sh -c "
	'$DITSTAR' info --model-dir '$T/dif' | grep -q '^format       diffusers' &&
	'$DITSTAR' info --model-dir '$T/dif' | grep -q '^width        32 = 2 heads x 16' &&
	'$DITSTAR' info --model-dir '$T/pipe' | grep -q '^family       wan2.1-t2v'"

for m in off dif pipe; do
	"$DITSTAR" forward --model-dir "$T/$m" --inputs "$T/in" --output "$T/fwd.$m" 2>"$T/err" ||
		sed 's/^/# /' "$T/err"
done
identical "forward: diffusers layout = official layout" "$T/fwd.off" "$T/fwd.dif"
identical "forward: a pipeline's transformer/ (2 shards) = official" "$T/fwd.off" "$T/fwd.pipe"

for m in off dif; do
	"$DITSTAR" generate --model-dir "$T/$m" --steps 3 --frames 5 --height 32 --width 48 \
		--quiet --output "$T/gen.$m" 2>"$T/err" || sed 's/^/# /' "$T/err"
done
# the latents (the files' metadata name the model folder)
within "generate: diffusers layout = official layout" "$T/gen.off" "$T/gen.dif" latents 0

"$DITSTAR" generate --model-dir "$T/pipe" --steps 3 --frames 5 --height 32 --width 48 --quiet \
	--offload disk --offload-chunk-size 2 --offload-dir "$T/store" --output "$T/gen.disk" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
within "generate --offload disk from a pipeline = official, in RAM" "$T/gen.off" "$T/gen.disk" \
	latents 0

# Wan2.2 T2V-A14B: high noise in transformer/, low noise in transformer_2/
ref22 make-tiny --variant t2v-a14b --output-dir "$T/a14b" --seed 5 --layers 2 >/dev/null
conv "$T/a14b/high_noise_model" "$T/a14bd/transformer"
conv "$T/a14b/low_noise_model" "$T/a14bd/transformer_2"
wan22_inputs "$T"
for m in a14b a14bd; do
	"$DITSTAR" generate --model-dir "$T/$m" --noise "$T/noise4" --context "$T/ctx" --steps 6 \
		--quiet --output "$T/gen.$m" 2>"$T/err" || sed 's/^/# /' "$T/err"
done
within "Wan2.2 T2V-A14B: transformer/ + transformer_2/ = the official layout" \
	"$T/gen.a14b" "$T/gen.a14bd" latents 0
check "info: Wan2.2 experts from the diffusers folders" sh -c "
	'$DITSTAR' info --model-dir '$T/a14bd' | grep -q '^experts      2: transformer/ (high noise), transformer_2/'"

# errors name the tensors as diffusers calls them
"$PYTHON_NUMPY" - "$T/dif" "$T/miss" "$T/clip" <<'PY'
import os, shutil, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
src, miss, clip = sys.argv[1:4]
W = st.load(src + '/diffusion_pytorch_model.safetensors')
for d, w in ((miss, {k: v for k, v in W.items() if k != 'blocks.1.attn2.to_k.weight'}),
             (clip, dict(W, **{'condition_embedder.image_embedder.norm1.weight':
                               np.ones(32, np.float32)}))):
    os.makedirs(d)
    shutil.copy(src + '/config.json', d)
    st.save(d + '/diffusion_pytorch_model.safetensors', w)
PY
expect_fail "a missing tensor is named as diffusers calls it" 1 \
	"tensor 'blocks.1.attn2.to_k.weight' missing" "$DITSTAR" info --model-dir "$T/miss"
expect_fail "a CLIP branch in a text-to-video config is refused by its diffusers name" 1 \
	"tensor 'condition_embedder.image_embedder.norm1.weight' means Wan2.1 image-to-video's CLIP branch, in a text-to-video checkpoint" \
	"$DITSTAR" info --model-dir "$T/clip"
# one expert official, the other diffusers, in the official folders
mkdir -p "$T/mixed"
cp -r "$T/a14b/high_noise_model" "$T/mixed/"
conv "$T/a14b/low_noise_model" "$T/mixed/low_noise_model"
expect_fail "experts in two formats are refused" 1 \
	"low_noise_model/config.json: a WanTransformer3DModel config.json in a official layout" \
	"$DITSTAR" info --model-dir "$T/mixed"
# a diffusers config with a bad key names the key
sed 's/"num_attention_heads": 2/"num_attention_heads": "two"/' "$T/dif/config.json" >"$T/badcfg.json"
mkdir -p "$T/badcfg" && cp "$T/dif/diffusion_pytorch_model.safetensors" "$T/badcfg/" &&
	mv "$T/badcfg.json" "$T/badcfg/config.json"
expect_fail "a bad diffusers key is named" 1 "key 'num_attention_heads' must be an integer" \
	"$DITSTAR" info --model-dir "$T/badcfg"
# the config's architecture switches: another architecture than the one ditstar
# implements is refused by its key, never read as this one
# cfgswitch NAME JSON-EDIT: a copy of the diffusers checkpoint with its config edited
cfgswitch() {
	rm -rf "${T:?}/$1" && mkdir -p "$T/$1" &&
		cp "$T/dif/diffusion_pytorch_model.safetensors" "$T/$1/" &&
		"$PYTHON_NUMPY" -c "
import json, sys
c = json.load(open('$T/dif/config.json'))
c.update($2)
json.dump(c, open('$T/$1/config.json', 'w'))"
}
cfgswitch clip2 "{'image_dim': 1280, 'added_kv_proj_dim': 64}"
expect_fail "an image embedder whose keys' width is not the model's is refused by its key" 1 \
	"key 'added_kv_proj_dim' \(64\) must be the model's width 32 with an image embedder \(image_dim 1280\)" \
	"$DITSTAR" info --model-dir "$T/clip2"
cfgswitch nocan "{'cross_attn_norm': False}"
expect_fail "cross_attn_norm false is refused by its key" 1 "cross_attn_norm" \
	"$DITSTAR" info --model-dir "$T/nocan"
cfgswitch qkn "{'qk_norm': 'rms_norm'}"
expect_fail "another qk_norm is refused by its key" 1 "qk_norm" \
	"$DITSTAR" info --model-dir "$T/qkn"
cfgswitch flf "{'pos_embed_seq_len': 514}"
expect_fail "pos_embed_seq_len (FLF2V's positions) without image_dim is refused by its key" 1 \
	"key 'pos_embed_seq_len' is set \(514\) without 'image_dim'" "$DITSTAR" info --model-dir "$T/flf"
finish
