# --lora: a LoRA merged into the weights as they are read, against a float64 merge
# reference (tests/ref/lora_ref.py merges as ComfyUI does, wan_ref.py runs the merged
# model): the formats users have (ComfyUI's lora_down/lora_up/alpha with diff and diff_b,
# kohya's lora_unet_ names, diffusers/PEFT lora_A/lora_B with diffusers' module names),
# two LoRAs in order with strengths, bf16 block weights, a disk store (rewritten when
# the LoRA set changes, latents as resident); and hostile files: keys that match
# nothing (listed, refused unless --lora-ignore-unmatched), NaN, wrong shapes, a rank
# above the weight's, a down factor without its up, LyCORIS keys, a LoRA of another
# model, a bad strength, an expert a one-expert model does not have; a two-expert
# model's high= and low=.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch lora)
plan 28

L() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/lora_ref.py" "$@"; }
ref make-tiny --output-dir "$T/m" --seed 3 --layers 3 >/dev/null
"$PYTHON_NUMPY" - "$T/in" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
r = np.random.default_rng(1)
st.save(sys.argv[1], {'x': r.standard_normal((4, 1, 4, 4)).astype(np.float32),
                      't': np.array([500.0], dtype=np.float32),
                      'context': r.standard_normal((5, 24)).astype(np.float32)})
PY
"$DITSTAR" forward --model-dir "$T/m" --inputs "$T/in" --output "$T/plain" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"

# against_ref DESC REFSPEC... -- DITSTAR-LORA-OPTIONS...: ditstar forward with the LoRA
# options within 1e-5 of the reference forward of the float64 merge, and not within it
# of the model without them
against_ref() {
	desc=$1
	shift
	refspec=
	while [ "$1" != -- ]; do
		refspec="$refspec --lora $1"
		shift
	done
	shift
	rm -rf "$T/merged"
	# shellcheck disable=SC2086
	L merge --model-dir "$T/m" $refspec --output-dir "$T/merged" >/dev/null &&
		ref forward --model-dir "$T/merged" --inputs "$T/in" --output "$T/ref" >/dev/null
	if "$DITSTAR" forward --model-dir "$T/m" "$@" --inputs "$T/in" --output "$T/y" \
		2>"$T/err" && ref compare "$T/y" "$T/ref" --tol 1e-5 >"$T/cmp" 2>&1 &&
		! ref compare "$T/plain" "$T/ref" --tol 1e-5 >/dev/null 2>&1; then
		ok "$desc: $(tail -1 "$T/cmp")"
	else
		fail "$desc"
		sed 's/^/# /' "$T/err" "$T/cmp"
	fi
}

for f in comfy kohya peft; do
	L make --model-dir "$T/m" --output "$T/$f.safetensors" --format $f --rank 4 --seed 5 \
		--alpha 2 --dtype BF16
	against_ref "$f LoRA at 0.7 matches the float64 merge" "$T/$f.safetensors:0.7" -- \
		--lora "$T/$f.safetensors:0.7"
done
against_ref "two LoRAs, merged in order with their strengths" \
	"$T/comfy.safetensors:0.5" "$T/peft.safetensors:-0.25" -- \
	--lora "$T/comfy.safetensors:0.5" --lora "$T/peft.safetensors:-0.25"

# bf16 block weights: the merge in fp32, rounded once (close to the fp32 run, visibly
# rounded)
"$DITSTAR" forward --model-dir "$T/m" --lora "$T/comfy.safetensors:0.7" --inputs "$T/in" \
	--output "$T/f32" 2>/dev/null
"$DITSTAR" forward --model-dir "$T/m" --lora "$T/comfy.safetensors:0.7" --weight-dtype bf16 \
	--inputs "$T/in" --output "$T/b16" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "bf16 block weights with a LoRA: within bf16 rounding of fp32" \
	"$PYTHON_NUMPY" - "$T/f32" "$T/b16" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
a, b = (st.load(p, float64=True)['y'] for p in sys.argv[1:3])
d, m = np.abs(a - b).max(), np.abs(a).max()
print('# max diff %.3g of max %.3g' % (d, m))
assert 0 < d < 2e-2 * m
PY

# generate: resident and disk store give the same latents; the store is rewritten when
# the LoRA set changes, and its latents follow
G="$DITSTAR generate --model-dir $T/m --frames 5 --height 32 --width 48 --steps 2 --quiet"
$G --lora "$T/kohya.safetensors" --output "$T/g_none" 2>/dev/null
$G --lora "$T/kohya.safetensors" --offload disk --offload-dir "$T/store" --output "$T/g_disk" \
	--stats-json "$T/s1.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
identical "a disk store of the merged weights: the resident latents" "$T/g_none" "$T/g_disk"
$G --offload disk --offload-dir "$T/store" --output "$T/g_plain" --stats-json "$T/s2.json" \
	2>/dev/null
$G --output "$T/g_plain_none" 2>/dev/null
check "without the LoRA the store is rewritten: the plain model's latents" sh -c "
	cmp -s '$T/g_plain' '$T/g_plain_none' && ! cmp -s '$T/g_plain' '$T/g_disk' &&
	grep -q '\"store_reused\": *false' '$T/s2.json'"
check "plan takes --lora (headers only)" \
	"$DITSTAR" plan --model-dir "$T/m" --lora "$T/peft.safetensors" --frames 5 --height 32 --width 48

# hostile LoRA files, each from the comfy one: one line, the right exit code, naming
hostile() {
	"$PYTHON_NUMPY" - "$T/comfy.safetensors" "$T/h.safetensors" "$1" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
L = st.load(sys.argv[1])
k = 'diffusion_model.blocks.1.self_attn.q'
case = sys.argv[3]
if case == 'extra':
    L['diffusion_model.blocks.9.self_attn.q.lora_down.weight'] = L[k + '.lora_down.weight']
    L['diffusion_model.blocks.9.self_attn.q.lora_up.weight'] = L[k + '.lora_up.weight']
    L['diffusion_model.blocks.9.self_attn.q.alpha'] = L[k + '.alpha']
elif case == 'nan':
    d = L[k + '.lora_up.weight'].astype(np.float32)
    d[3, 1] = np.nan
    L[k + '.lora_up.weight'] = d
elif case == 'shape':
    L[k + '.lora_down.weight'] = np.ones((4, 31), dtype=np.float32)
elif case == 'rank':
    L[k + '.lora_down.weight'] = np.ones((40, 32), dtype=np.float32)
    L[k + '.lora_up.weight'] = np.ones((32, 40), dtype=np.float32)
elif case == 'noup':
    del L[k + '.lora_up.weight']
elif case == 'loha':
    L[k + '.hada_w1_a'] = np.ones((32, 2), dtype=np.float32)
elif case == 'other':
    L = {'lora_unet_down_blocks_0_attentions_0.lora_down.weight': np.ones((2, 8), np.float32),
         'lora_unet_down_blocks_0_attentions_0.lora_up.weight': np.ones((8, 2), np.float32)}
st.save(sys.argv[2], L)
PY
}
hostile extra
expect_fail "a key naming no weight: listed, refused" 2 \
	"h.safetensors: 2 keys match no weight of wan2.1-t2v: 'diffusion_model.blocks.9.self_attn.q.lora_down.weight'.*--lora-ignore-unmatched" \
	"$DITSTAR" forward --model-dir "$T/m" --lora "$T/h.safetensors" --inputs "$T/in" --output "$T/x"
"$DITSTAR" forward --model-dir "$T/m" --lora "$T/comfy.safetensors" --inputs "$T/in" --output "$T/c1" 2>/dev/null
check "--lora-ignore-unmatched skips them: the latents of the LoRA without them" sh -c "
	'$DITSTAR' forward --model-dir '$T/m' --lora '$T/h.safetensors' --lora-ignore-unmatched \
		--inputs '$T/in' --output '$T/c2' && cmp -s '$T/c1' '$T/c2'"
# refused CASE RC PATTERN DESC [OPTIONS...]: the comfy LoRA made hostile as CASE is
# refused, exit RC, one line matching PATTERN
refused() {
	case=$1 rc=$2 pattern=$3 desc=$4
	shift 4
	hostile "$case"
	expect_fail "$desc" "$rc" "$pattern" "$DITSTAR" forward --model-dir "$T/m" \
		--lora "$T/h.safetensors" "$@" --inputs "$T/in" --output "$T/x"
}
refused nan 1 \
	"h.safetensors: tensor 'diffusion_model.blocks.1.self_attn.q.lora_up.weight' holds NaN at index 13" \
	"NaN in a LoRA factor: file, tensor and index named"
refused shape 1 "lora_down.weight' makes a 32 x 31 delta; its weight is 32 x 32" \
	"a factor of the wrong shape: named with both shapes"
refused rank 1 "has rank 40, above its weight's 32 x 32" "a rank above the weight's: refused"
refused noup 1 "lora_down.weight' has a down \(A\) factor and no up \(B\)" \
	"a down factor without its up: named"
refused loha 1 "key 'diffusion_model.blocks.1.self_attn.q.hada_w1_a' is a LyCORIS" \
	"a LyCORIS key: refused by name"
refused other 1 "no key names a weight of wan2.1-t2v \(a LoRA of another model\?\)" \
	"a LoRA of another model: refused" --lora-ignore-unmatched
expect_fail "a strength out of range: a usage error" 2 "--lora: strength 1e9, not in -100..100" \
	"$DITSTAR" forward --model-dir "$T/m" --lora "$T/comfy.safetensors:1e9" --inputs "$T/in" --output "$T/x"
expect_fail "an expert a one-expert model lacks: a usage error" 2 "--lora high=.*has one expert" \
	"$DITSTAR" forward --model-dir "$T/m" --lora "high=$T/comfy.safetensors" --inputs "$T/in" --output "$T/x"
# HunyuanVideo (official checkpoint) with a diffusers-named LoRA: to_q/to_k/to_v and
# proj_mlp land in the rows of the fused img_attn_qkv, txt_attn_qkv and linear1,
# norm_out.linear's halves swapped into final_layer.adaLN_modulation.1; the float64
# merge of hunyuan_ref's own diffusers table is the reference. A lone part of linear1
# (whose parts differ in rows) is refused.
HY() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/hunyuan_ref.py" "$@"; }
HY make-tiny --output-dir "$T/hy" --seed 2 --double 2 --single 2 >/dev/null
HY inputs --model-dir "$T/hy" --output "$T/hin" --seed 7 --frames 3 --height 8 --width 12 \
	--text-len 20 --valid 7 >/dev/null
L make --family hunyuan --model-dir "$T/hy" --output "$T/hl.safetensors" --format peft --rank 3 \
	--seed 4
L merge --family hunyuan --model-dir "$T/hy" --lora "$T/hl.safetensors:0.6" \
	--output-dir "$T/hymerged" >/dev/null
HY forward --model-dir "$T/hymerged" --inputs "$T/hin" --output "$T/hyref" >/dev/null
"$DITSTAR" forward --model-dir "$T/hy" --inputs "$T/hin" --output "$T/hyplain" 2>/dev/null
if "$DITSTAR" forward --model-dir "$T/hy" --lora "$T/hl.safetensors:0.6" --inputs "$T/hin" \
	--output "$T/hyy" 2>"$T/err" && HY compare "$T/hyy" "$T/hyref" --tol 1e-5 >"$T/cmp" 2>&1 &&
	! HY compare "$T/hyplain" "$T/hyref" --tol 1e-5 >/dev/null 2>&1; then
	ok "HunyuanVideo, diffusers names into fused tensors: $(tail -1 "$T/cmp")"
else
	fail "HunyuanVideo, diffusers names into fused tensors"
	sed 's/^/# /' "$T/err" "$T/cmp"
fi
"$PYTHON_NUMPY" - "$T/hl.safetensors" "$T/hpart.safetensors" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import safetensors_np as st
L = st.load(sys.argv[1])
st.save(sys.argv[2], {k: v for k, v in L.items()
                      if k.startswith('transformer.single_transformer_blocks.0.attn.to_v.')})
PY
expect_fail "a lone part of a fused tensor whose parts differ: refused" 1 \
	"a part \(attn.to_v.weight\) of the fused 'linear1.weight' whose other parts' rows are unknown" \
	"$DITSTAR" forward --model-dir "$T/hy" --lora "$T/hpart.safetensors" --inputs "$T/hin" --output "$T/x"

# every family: a LoRA on every 2-D weight under the names its checkpoint stores (LTX-2's
# and Cosmos' prefixes included) resolves whole; strength 0 leaves the latents byte for
# byte, 0.5 changes them
for m in tiny-ltx2 tiny-cosmos tiny-ti2v-5b tiny-hunyuan; do
	GF="$DITSTAR generate --model $m --cache-dir $T/cache --steps 1 --quiet"
	$GF --output "$T/$m.plain" 2>/dev/null
	L make --family any --model-dir "$T/cache/$m-synth-v1" --output "$T/$m.lora" --format comfy \
		--rank 2
	if $GF --lora "$T/$m.lora:0" --output "$T/$m.0" 2>"$T/err" &&
		$GF --lora "$T/$m.lora:0.5" --output "$T/$m.5" 2>>"$T/err" &&
		cmp -s "$T/$m.plain" "$T/$m.0" && ! cmp -s "$T/$m.plain" "$T/$m.5"; then
		ok "$m: every weight's LoRA resolves; strength 0 identical, 0.5 not"
	else
		fail "$m: a LoRA on every weight"
		sed 's/^/# /' "$T/err"
	fi
done

# a two-expert model: high= and low= merge into one expert, a bare file into both (four
# different latents at 4 steps, where both experts run); another label is refused
GW="$DITSTAR generate --model tiny-t2v-a14b --cache-dir $T/cache --steps 4 --quiet"
$GW --output "$T/w_none" 2>/dev/null
L make --model-dir "$T/cache/tiny-t2v-a14b-synth-v1/high_noise_model" --output "$T/w.safetensors" \
	--format comfy --rank 2 --seed 1
$GW --lora "high=$T/w.safetensors" --output "$T/w_high" 2>/dev/null
$GW --lora "low=$T/w.safetensors:0.5" --output "$T/w_low" 2>/dev/null
$GW --lora "$T/w.safetensors" --output "$T/w_both" 2>/dev/null
check "two experts: high=, low= and both give four different latents" sh -c "
	[ \$(md5sum '$T/w_none' '$T/w_high' '$T/w_low' '$T/w_both' | cut -d' ' -f1 | sort -u | wc -l) -eq 4 ]"
expect_fail "an expert label the model does not have: a usage error naming its experts" 2 \
	"--lora mid=.*wan2.2-t2v-a14b's experts are high and low" \
	$GW --lora "mid=$T/w.safetensors" --output "$T/x"
# compact weights: a LoRA merged into fp8 block matrices (ComfyUI's scaled fp8, scales
# powers of two) is rounded back to fp8 with each tensor's scale (to nearest even,
# saturating): the matrices stay one byte a weight. The LoRA's values are dyadic, so the
# merge is exact in any order; the reference requantises the float64 merge of the
# dequantised weights (tests/ref/formats_np.py's encoder) and runs it widened.
"$PYTHON_NUMPY" "$top_srcdir/tests/ref/formats_np.py" fp8 "$T/m" "$T/f8" "$T/f8deq" --uniform \
	--pow2-scales
"$PYTHON_NUMPY" - "$T/comfy.safetensors" "$T/dy.safetensors" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
L = st.load(sys.argv[1])
for k, v in L.items():
    if v.dtype.kind == 'f' and not k.endswith('.alpha'):
        L[k] = (np.clip(np.round(v.astype(np.float64) * 16), -8, 8) / 16).astype(np.float32)
st.save(sys.argv[2], L)
PY
L merge --model-dir "$T/f8deq" --lora "$T/dy.safetensors:0.5" --output-dir "$T/f8merged" \
	>/dev/null
"$PYTHON_NUMPY" - "$T/f8" "$T/f8merged" "$T/f8rq" <<'PY'
import os, shutil, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st, formats_np as fm
path = os.path.join(sys.argv[1], 'diffusion_pytorch_model.safetensors')
H, _, base = st.read_header(path)  # the scales (the F8 tensors NumPy has no dtype for)
raw = open(path, 'rb').read()
F = {k: np.frombuffer(raw[base + h['data_offsets'][0]:base + h['data_offsets'][1]], '<f4')[0]
     for k, h in H.items() if k.endswith('.scale_weight')}
M = st.load(os.path.join(sys.argv[2], 'diffusion_pytorch_model.safetensors'), float64=True)
out = {}
for k, v in M.items():
    s = k[:-len('.weight')] + '.scale_weight'
    if s in F:  # an fp8 matrix: the merge rounded back with its scale
        scale = float(F[s])
        out[k] = fm.fp8_dequant(fm.fp8_encode(v / scale, 'F8_E4M3'), 'F8_E4M3', np.float32(scale))
    else:
        out[k] = v.astype(np.float32)
os.makedirs(sys.argv[3], exist_ok=True)
shutil.copy(os.path.join(sys.argv[2], 'config.json'), sys.argv[3])
st.save(os.path.join(sys.argv[3], 'diffusion_pytorch_model.safetensors'), out)
PY
"$DITSTAR" forward --model-dir "$T/f8rq" --inputs "$T/in" --weight-dtype f32 --output "$T/rqref" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
"$DITSTAR" forward --model-dir "$T/f8" --lora "$T/dy.safetensors:0.5" --inputs "$T/in" \
	--output "$T/f8y" 2>"$T/err" || sed 's/^/# /' "$T/err"
"$DITSTAR" forward --model-dir "$T/f8" --inputs "$T/in" --output "$T/f8plain" 2>/dev/null
if ref compare "$T/f8y" "$T/rqref" --tol 1e-5 >"$T/cmp" 2>&1 &&
	! ref compare "$T/f8plain" "$T/rqref" --tol 1e-5 >/dev/null 2>&1; then
	ok "a LoRA on compact fp8 matrices: rounded back to fp8 as the reference requantises: $(tail -1 "$T/cmp")"
else
	fail "a LoRA on compact fp8 matrices: rounded back to fp8 as the reference requantises"
	sed 's/^/# /' "$T/err" "$T/cmp"
fi
"$DITSTAR" generate --model-dir "$T/f8" --lora "$T/dy.safetensors:0.5" --frames 5 --height 32 \
	--width 48 --steps 1 --quiet --stats-json "$T/f8s.json" --output "$T/f8g" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
check "the LoRA leaves the fp8 matrices compact (one byte a weight in the chunks)" \
	"$PYTHON_NUMPY" -c "import json
w = json.load(open('$T/f8s.json'))['weights']
assert w['block_matrices'] == 'f8_e4m3', w"
finish
