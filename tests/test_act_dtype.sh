# bf16 activations (--act-dtype bf16: a block's normed input, q/k/v, attention output,
# projections and FFN hidden stored in bf16, computed in fp32; the token stream in
# fp32). Wan: ditstar forward on CPU workers against the NumPy reference that rounds
# the same activations to bf16 (rms of the difference under a quarter of that to the
# unrounded reference: the rounding happens at the same points); on CPU and OpenCL
# workers against the plain float64 reference (the documented tolerance, relative
# 1e-2) and visibly rounded (the test can tell the two apart); OpenCL against the CPU
# (1e-2: its attention rounds a few outputs to the neighbouring bf16 value;
# tests/test_opencl_ops checks each op). HunyuanVideo, Cosmos-Predict2.5 and LTX-2.3
# (STG: bf16 rows copied) within 1e-2 of their float64 references, visibly rounded.
# Latents byte-identical across offload modes, chunk sizes and token chunks; the plan
# counts half the bytes for those buffers and names the dtype; a bad value refused.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch act_dtype)
plan 33

ref make-tiny --output-dir "$T/m" --seed 8 --layers 4 >/dev/null
"$PYTHON_NUMPY" - "$T/in" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
r = np.random.default_rng(9)
st.save(sys.argv[1], {'x': r.standard_normal((4, 3, 8, 12)).astype(np.float32),
                      't': np.array([811.0], dtype=np.float32),
                      'context': r.standard_normal((6, 24)).astype(np.float32)})
PY
ref forward --model-dir "$T/m" --inputs "$T/in" --output "$T/yref" >/dev/null
ref forward --model-dir "$T/m" --inputs "$T/in" --output "$T/yref16" --bf16-acts >/dev/null

# rel_within DESC A B TOL: max |A - B| <= TOL * max |B| (tensor y)
rel_within() {
	if res=$(ref compare "$2" "$3" --tensor-a y --tol "$4" --rel); then
		ok "$1: $res"
	else
		fail "$1: $res"
	fi
}

# forward_checks WORKERS: bf16 activations on those workers
forward_checks() {
	w=$1
	if ! "$DITSTAR" forward --model-dir "$T/m" --inputs "$T/in" --output "$T/y16.$w" \
		--act-dtype bf16 --workers "$w" 2>"$T/err"; then
		fail "$w: forward --act-dtype bf16"
		sed 's/^/# /' "$T/err"
		return
	fi
	if [ "$w" != cpu ]; then
		# a device's attention sums in another order: a few of its outputs round to
		# the neighbouring bf16 value, and the blocks after carry that on
		rel_within "$w: bf16 activations agree with the CPU's" "$T/y16.$w" "$T/y16.cpu" 1e-2
	else
		check "$w: bf16 activations round where the reference rounding them does" \
			"$PYTHON_NUMPY" - "$T/y16.$w" "$T/yref16" "$T/yref" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
y, r16, r = (st.load(p)['y'].astype(np.float64) for p in sys.argv[1:4])
rms = lambda d: float(np.sqrt((d * d).mean()))
# the same rounding points: far closer to the reference that rounds alike than to the
# unrounded one (a device's own fp32 rounding flips a few bf16 roundings, no more)
a, b = rms(y - r16), rms(y - r)
print(f"# rms to the rounding reference {a:.3e}, to the unrounded one {b:.3e}")
assert a < 0.25 * b, (a, b)
PY
	fi
	rel_within "$w: bf16 activations within 1e-2 of the float64 reference" \
		"$T/y16.$w" "$T/yref" 1e-2
	if ref compare "$T/y16.$w" "$T/yref" --tensor-a y --tol 2e-4 --rel >/dev/null; then
		fail "$w: the bf16 rounding is visible against the unrounded reference"
	else
		ok "$w: the bf16 rounding is visible against the unrounded reference"
	fi
	"$DITSTAR" forward --model-dir "$T/m" --inputs "$T/in" --output "$T/y32.$w" \
		--act-dtype f32 --workers "$w" 2>/dev/null
	rel_within "$w: --act-dtype f32 stays at fp32 accuracy" "$T/y32.$w" "$T/yref" 1e-6
}

forward_checks cpu
if "$DITSTAR" forward --model-dir "$T/m" --inputs "$T/in" --output "$T/probe" \
	--workers opencl 2>"$T/err"; then
	forward_checks opencl
else
	for i in 1 2 3 4 5; do
		dit_n=$((dit_n + 1))
		echo "ok $dit_n # SKIP no OpenCL device ($(head -n 1 "$T/err"))"
	done
fi

# the other families: HunyuanVideo, Cosmos-Predict2.5, LTX-2.3 (video and audio, STG
# on block 1: its skip copies bf16 rows) on CPU and OpenCL workers against their
# float64 references, and visibly rounded
family() {
	fam=$1 model=$2 in=$3 tensor=$4
	shift 4
	for w in cpu $ocl; do
		for d in f32 bf16; do
			"$DITSTAR" forward --model-dir "$model" --inputs "$in" --output "$T/$fam.$w.$d" \
				--workers "$w" --act-dtype "$d" "$@" 2>"$T/err" || sed 's/^/# /' "$T/err"
		done
		for t in $tensor; do
			if res=$(ref compare "$T/$fam.$w.bf16" "$T/$fam.ref" --tensor-a "$t" --tol 1e-2 \
				--rel) && ! ref compare "$T/$fam.$w.bf16" "$T/$fam.$w.f32" --tensor-a "$t" \
				--tol 1e-5 --rel >/dev/null; then
				ok "$fam $t, $w: bf16 activations within 1e-2 of float64, visibly rounded: $res"
			else
				fail "$fam $t, $w: bf16 activations within 1e-2 of float64, visibly rounded: $res"
			fi
		done
	done
}
ocl=
[ -s "$T/y16.opencl" ] && ocl=opencl
PYH="$PYTHON_NUMPY $top_srcdir/tests/ref/hunyuan_ref.py"
$PYH make-tiny --output-dir "$T/hy" --seed 3 >/dev/null
$PYH inputs --model-dir "$T/hy" --output "$T/hy.in" --seed 7 --frames 3 --height 8 --width 12 \
	--text-len 20 --valid 7 >/dev/null
$PYH forward --model-dir "$T/hy" --inputs "$T/hy.in" --output "$T/hunyuan.ref" >/dev/null
family hunyuan "$T/hy" "$T/hy.in" y
PYC="$PYTHON_NUMPY $top_srcdir/tests/ref/cosmos_ref.py"
$PYC make-tiny --output-dir "$T/cs" --seed 4 --shape 14b >/dev/null
$PYC inputs --model-dir "$T/cs" --output "$T/cs.in" --seed 7 --frames 3 --height 4 --width 6 \
	--padding-mask >/dev/null
$PYC forward --model-dir "$T/cs" --inputs "$T/cs.in" --output "$T/cosmos.ref" >/dev/null
family cosmos "$T/cs" "$T/cs.in" y
PYL="$PYTHON_NUMPY $top_srcdir/tests/ref/ltx_ref.py"
$PYL make-tiny --output "$T/lx.safetensors" --seed 3 --version 2.3 >/dev/null
$PYL inputs --model "$T/lx.safetensors" --output "$T/lx.in" --seed 7 --frames 3 --height 2 \
	--width 3 --audio-frames 5 >/dev/null
$PYL forward --model "$T/lx.safetensors" --inputs "$T/lx.in" --output "$T/ltx.ref" \
	--stg-blocks 1 >/dev/null
family ltx "$T/lx.safetensors" "$T/lx.in" "video audio" --stg-blocks 1
if [ -z "$ocl" ]; then
	for i in 1 2 3 4; do
		dit_n=$((dit_n + 1))
		echo "ok $dit_n # SKIP no OpenCL device"
	done
fi

# the default on CPU workers is f32: the same bytes as --act-dtype f32
"$DITSTAR" forward --model-dir "$T/m" --inputs "$T/in" --output "$T/ydef" 2>/dev/null
identical "the CPU default is f32 activations" "$T/ydef" "$T/y32.cpu"

# the same bytes however the weights move and however a block is cut into token chunks
G="$DITSTAR generate --model-dir $T/m --frames 5 --height 32 --width 48 --steps 2 --quiet --act-dtype bf16"
offload_identity "bf16 activations" "$T" $G
(
	blas_rows_fixed
	$G --output "$T/whole4" 2>"$T/err" || sed 's/^/# /' "$T/err"
	$G --token-chunk 4 --output "$T/tc4" 2>"$T/err" || sed 's/^/# /' "$T/err"
)
identical "bf16 activations, token chunks of 4: byte-identical" "$T/whole4" "$T/tc4"
if [ -n "$ocl" ]; then
	$G --workers opencl --output "$T/o_none" 2>"$T/err" || sed 's/^/# /' "$T/err"
	$G --workers opencl --offload cpu --offload-chunk-size 2 --resident-chunks 0 \
		--output "$T/o_cpu2" 2>"$T/err" || sed 's/^/# /' "$T/err"
	identical "OpenCL, bf16 activations, offload cpu chunk 2: byte-identical" "$T/o_none" \
		"$T/o_cpu2"
else
	dit_n=$((dit_n + 1))
	echo "ok $dit_n # SKIP no OpenCL device"
fi

# the plan: the block buffers at half the bytes, the dtype named
P="$DITSTAR plan --model wan2.1-t2v-14b --frames 81 --height 480 --width 832 --workers cuda --offload cpu --resident-chunks 0 --passes-in-flight 1"
$P --act-dtype f32 --json >"$T/p32.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
$P --json >"$T/p16.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "plan: CUDA's default is bf16, the block-lived buffers at half the bytes" \
	"$PYTHON_NUMPY" - "$T/p32.json" "$T/p16.json" <<'PY'
import json, sys
a, b = (json.load(open(p))['activations'] for p in sys.argv[1:3])
assert a['dtype'] == 'f32' and b['dtype'] == 'bf16', (a['dtype'], b['dtype'])
bufs = lambda s: {x['name']: x['bytes'] for x in s['buffers']}
ba, bb = bufs(a), bufs(b)
for n in ('h', 'qkv', 'o', 'y', 'ffn'):
    assert ba[n] == 2 * bb[n], (n, ba[n], bb[n])
assert ba['x'] == bb['x'], 'the token stream stays f32'
assert b['total_bytes'] < a['total_bytes'], (a['total_bytes'], b['total_bytes'])
PY
$P --act-dtype bf16 >"$T/p16.txt" 2>&1
check "plan text names bf16 activations" grep -q "activations in bf16" "$T/p16.txt"

expect_fail "--act-dtype f16 is refused" 2 "act-dtype" \
	"$DITSTAR" plan --model wan2.1-t2v-14b --act-dtype f16
# auto is bf16 whenever CUDA computes, with fp32 weights too; OpenCL keeps f32
$P --weight-dtype f32 --json >"$T/pw32.json" 2>/dev/null
${P/--workers cuda/--workers opencl} --device-mem-limit 1T --json >"$T/pocl.json" 2>/dev/null
check "auto: bf16 activations on CUDA with f32 weights, f32 on OpenCL" "$PYTHON_NUMPY" -c "
import json
a = json.load(open('$T/pw32.json'))['activations']
b = json.load(open('$T/pocl.json'))['activations']
assert a['dtype'] == 'bf16' and b['dtype'] == 'f32', (a['dtype'], b['dtype'])"
finish
