# fp8 safetensors (tests/ref/formats_np.py writes them from the format's definition):
# F8_E4M3 and F8_E5M2 block matrices, most with ComfyUI's <module>.scale_weight, some
# without (scale 1), the scaled_fp8 marker; widened on load as fp8 x scale in fp32, so
# they give the bytes of the official checkpoint holding the dequantised values; LTX-2's
# pre-quantised release (weight_scale and input_scale scalars). Bad scales are one-line
# errors naming the file and the tensor.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch fp8)
plan 22

fmt() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/formats_np.py" "$@"; }

ref make-tiny --output-dir "$T/off" --seed 5 --layers 2 >/dev/null
fmt fp8 "$T/off" "$T/fp8" "$T/deq"
"$PYTHON_NUMPY" - "$T/in" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
r = np.random.default_rng(3)
st.save(sys.argv[1], {'x': r.standard_normal((4, 3, 4, 6)).astype(np.float32),
                      't': np.array([613.0], dtype=np.float32),
                      'context': r.standard_normal((5, 24)).astype(np.float32)})
PY

check "info lists the stored dtypes" sh -c "
	'$DITSTAR' info --model-dir '$T/fp8' | grep -Eq '^stored       F32 [0-9]+, F8_E4M3 [0-9]+, F8_E5M2 [0-9]+ '"

PT="$top_builddir/tests/pt_check"
check "every tensor reads as its dequantised value (fp32 and bf16 bits)" "$PT" same "$T/fp8" \
	"$T/deq"
fmt big "$T/big.gguf" "$T/big8.safetensors" "$T/bigdeq"
check "F8_E4M3 and F8_E5M2 tensors past the 256 KiB read tile: the same bits" "$PT" same \
	"$T/big8.safetensors" "$T/bigdeq8"
for m in fp8 deq; do
	"$DITSTAR" forward --model-dir "$T/$m" --inputs "$T/in" --weight-dtype f32 \
		--output "$T/fwd.$m" 2>"$T/err" || sed 's/^/# /' "$T/err"
	"$DITSTAR" forward --model-dir "$T/$m" --inputs "$T/in" --weight-dtype bf16 \
		--output "$T/fwd16.$m" 2>"$T/err" || sed 's/^/# /' "$T/err"
done
identical "forward: fp8 x scale = the official layout of the dequantised values" \
	"$T/fwd.fp8" "$T/fwd.deq"
identical "forward with bf16 block weights: the same" "$T/fwd16.fp8" "$T/fwd16.deq"
# compact weights (the default): the fp8 matrices kept as stored with their scales,
# widened a tile at a time in the GEMMs: the same values, within fp32 rounding
"$DITSTAR" forward --model-dir "$T/fp8" --inputs "$T/in" --output "$T/fwdc.fp8" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
within "forward with compact fp8 weights = widened, within 1e-5" "$T/fwdc.fp8" "$T/fwd.deq" y \
	1e-5

for m in fp8 deq; do
	"$DITSTAR" generate --model-dir "$T/$m" --steps 3 --frames 5 --height 32 --width 48 \
		--quiet --weight-dtype f32 --stats-json "$T/stats.$m" --output "$T/gen.$m" \
		2>"$T/err" || sed 's/^/# /' "$T/err"
done
within "generate: fp8 = dequantised" "$T/gen.fp8" "$T/gen.deq" latents 0
"$DITSTAR" generate --model-dir "$T/fp8" --steps 3 --frames 5 --height 32 --width 48 --quiet \
	--stats-json "$T/statsc.fp8" --output "$T/genc.fp8" 2>"$T/err" || sed 's/^/# /' "$T/err"
within "generate with compact fp8 weights = widened, within 1e-4" "$T/genc.fp8" "$T/gen.deq" \
	latents 1e-4
check "the stats say the weights were fp8, and kept so" "$PYTHON_NUMPY" -c "
import json, sys
w = json.load(open('$T/stats.fp8'))['weights']['stored_dtypes']
d = json.load(open('$T/stats.deq'))['weights']['stored_dtypes']
assert w['F8_E4M3'] > 0 and w['F8_E5M2'] > 0 and list(d) == ['F32'], (w, d)
assert sum(w.values()) == sum(d.values()), (w, d)
c, f = (json.load(open(p))['weights'] for p in ('$T/statsc.fp8', '$T/stats.fp8'))
assert c['block_matrices'] == 'f8_e4m3+f32' and f['block_matrices'] == 'f32', (c, f)
assert c['block_bytes'] < 0.7 * f['block_bytes'], (c['block_bytes'], f['block_bytes'])"

# the fp8 files of a ComfyUI folder: model.diffusion_model. names beside config.json
fmt fp8 "$T/off" "$T/cfp8" "$T/cdeq" --comfy
"$DITSTAR" forward --model-dir "$T/cfp8" --inputs "$T/in" --weight-dtype f32 \
	--output "$T/fwd.cfp8" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
identical "forward: ComfyUI-named fp8 beside config.json = dequantised" "$T/fwd.cfp8" \
	"$T/fwd.deq"

# ComfyUI's mixed precision layout: weight_scale, and comfy_quant marking each layer
fmt fp8 "$T/off" "$T/mixed" "$T/mdeq" --mixed
"$DITSTAR" forward --model-dir "$T/mixed" --inputs "$T/in" --weight-dtype f32 \
	--output "$T/fwd.mixed" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
identical "forward: weight_scale and comfy_quant = dequantised" "$T/fwd.mixed" "$T/fwd.deq"

# LTX-2's pre-quantised release (ltx-2.3-22b-dev-fp8): F8_E4M3 Linears with float32
# scalars weight_scale and input_scale, the rest bf16, one file with its config metadata
"$PYTHON_NUMPY" "$top_srcdir/tests/ref/ltx_ref.py" make-tiny --output "$T/ltx.safetensors" \
	--seed 5 --version 2.3 --dtype BF16 >/dev/null
fmt ltx-fp8 "$T/ltx.safetensors" "$T/ltx8.safetensors" "$T/ltxdeq.safetensors"
"$PYTHON_NUMPY" "$top_srcdir/tests/ref/ltx_ref.py" inputs --model "$T/ltx.safetensors" \
	--output "$T/ltxin" --seed 7 --frames 3 --height 2 --width 3 --audio-frames 5 >/dev/null
check "LTX-2 fp8: info lists its F8_E4M3 and BF16 tensors" sh -c "
	'$DITSTAR' info --model-dir '$T/ltx8.safetensors' | grep -Eq '^stored       BF16 [0-9]+, F8_E4M3 [0-9]+ '"
for m in ltx8 ltxdeq; do
	for d in f32 bf16; do
		"$DITSTAR" forward --model-dir "$T/$m.safetensors" --inputs "$T/ltxin" --weight-dtype $d \
			--output "$T/fwd.$m.$d" 2>"$T/err" || sed 's/^/# /' "$T/err"
	done
done
identical "LTX-2 fp8: weight_scale applied, input_scale read past = dequantised (fp32 weights)" \
	"$T/fwd.ltx8.f32" "$T/fwd.ltxdeq.f32"
identical "LTX-2 fp8: the same with bf16 weights" "$T/fwd.ltx8.bf16" "$T/fwd.ltxdeq.bf16"

fmt hostile-fp8 "$T/off" "$T/bad"
F=diffusion_pytorch_model.safetensors
expect_fail "a scale for a tensor that is not fp8" 1 \
	"bad/not_fp8/$F: a scale for tensor 'blocks.0.self_attn.k.weight', which is F32, not F8_E4M3 or F8_E5M2 \(tensor 'blocks.0.self_attn.k.scale_weight'\)" \
	"$DITSTAR" info --model-dir "$T/bad/not_fp8"
expect_fail "a scale of two elements" 1 \
	"bad/two_elems/$F: the scale is not one float element \(2 elements of F32\) \(tensor 'blocks.0.self_attn.q.scale_weight'\)" \
	"$DITSTAR" info --model-dir "$T/bad/two_elems"
expect_fail "a NaN scale" 1 \
	"bad/nan/$F: the scale nan is not finite \(tensor 'blocks.0.self_attn.q.scale_weight'\)" \
	"$DITSTAR" forward --model-dir "$T/bad/nan" --inputs "$T/in" --output "$T/never"
expect_fail "an integer scale" 1 \
	"bad/int/$F: the scale is not one float element \(1 elements of I32\)" \
	"$DITSTAR" info --model-dir "$T/bad/int"
expect_fail "a scale for no tensor" 1 \
	"bad/orphan/$F: a scale for tensor 'blocks.0.nothing.weight', which the file does not hold" \
	"$DITSTAR" info --model-dir "$T/bad/orphan"
expect_fail "two scales for one weight" 1 \
	"bad/both/$F: two scales for tensor 'blocks.0.self_attn.q.weight' \(scale_weight and weight_scale\)" \
	"$DITSTAR" info --model-dir "$T/bad/both"
expect_fail "a layer of another quantisation refused by name" 1 \
	"bad/nvfp4/$F: layer quantised as 'nvfp4'; ditstar reads float8_e4m3fn and float8_e5m2 layers \(tensor 'blocks.0.self_attn.q.comfy_quant'\)" \
	"$DITSTAR" info --model-dir "$T/bad/nvfp4"
expect_fail "a comfy_quant that does not match its weight" 1 \
	"bad/quant_e5m2/$F: comfy_quant says float8_e5m2, but tensor 'blocks.0.self_attn.q.weight' is F8_E4M3" \
	"$DITSTAR" info --model-dir "$T/bad/quant_e5m2"
finish
