# bf16 block weights (--weight-dtype bf16, the default when CUDA computes) on the
# CPU: ditstar forward against the NumPy reference with the same weights rounded to
# bf16 (max-abs 1e-5, as for fp32 weights); a BF16 checkpoint gives the same numbers
# either way; latents byte-identical across offload modes, chunk sizes and prefetch
# depths; the chunks are half the bytes and the chunk stores of the two dtypes are
# kept apart; OpenCL workers read bf16 weights too.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch weight_dtype)
plan 16

ref make-tiny --output-dir "$T/f32" --seed 4 --layers 4 >/dev/null
ref make-tiny --output-dir "$T/bf16ck" --seed 5 --layers 2 --dtype BF16 >/dev/null
"$PYTHON_NUMPY" - "$T/in" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
r = np.random.default_rng(7)
st.save(sys.argv[1], {'x': r.standard_normal((4, 3, 8, 12)).astype(np.float32),
                      't': np.array([731.0], dtype=np.float32),
                      'context': r.standard_normal((6, 24)).astype(np.float32)})
PY

# against the reference with bf16-rounded block matrices
if "$DITSTAR" forward --model-dir "$T/f32" --inputs "$T/in" --output "$T/y16" \
	--weight-dtype bf16 2>"$T/err"; then
	ref forward --model-dir "$T/f32" --inputs "$T/in" --output "$T/y16.ref" \
		--bf16-block-weights >/dev/null
	within "bf16 weights match the reference with bf16-rounded weights" "$T/y16" "$T/y16.ref" y 1e-5
	# and differ from the fp32-weight reference by more than fp32 noise
	ref forward --model-dir "$T/f32" --inputs "$T/in" --output "$T/y32.ref" >/dev/null
	if ref compare "$T/y16" "$T/y32.ref" --tensor-a y --tol 1e-5 >/dev/null; then
		fail "bf16 rounding is visible against fp32 weights (the test can tell them apart)"
	else
		ok "bf16 rounding is visible against fp32 weights (the test can tell them apart)"
	fi
else
	fail "forward --weight-dtype bf16"
	sed 's/^/# /' "$T/err"
	fail "bf16 rounding is visible"
fi

# a BF16 checkpoint holds bf16 values already: both dtypes compute the same numbers
"$DITSTAR" forward --model-dir "$T/bf16ck" --inputs "$T/in" --output "$T/ck32" \
	--weight-dtype f32 2>/dev/null
"$DITSTAR" forward --model-dir "$T/bf16ck" --inputs "$T/in" --output "$T/ck16" \
	--weight-dtype bf16 2>/dev/null
within "BF16 checkpoint: f32 and bf16 weight stores agree" "$T/ck16" "$T/ck32" y 1e-5

G="$DITSTAR generate --model-dir $T/f32 --frames 5 --height 32 --width 48 --steps 2 --quiet --weight-dtype bf16"
offload_identity bf16 "$T" $G
$G --stats-json "$T/ref.json" --output "$T/ref_stats" 2>/dev/null

"$DITSTAR" generate --model-dir "$T/f32" --frames 5 --height 32 --width 48 --steps 2 --quiet \
	--weight-dtype f32 --stats-json "$T/f32.json" --output "$T/o32" 2>/dev/null
check "bf16 chunks hold the matrices in half the bytes" "$PYTHON_NUMPY" - "$T/ref.json" "$T/f32.json" <<'PY'
import json, sys
a, b = (json.load(open(p))['weights'] for p in sys.argv[1:3])
assert a['block_matrices'] == 'bf16' and b['block_matrices'] == 'f32', (a, b)
# a tiny block: dim 32, ffn 64: matrices 8*32*32 + 2*32*64 = 12288 elements
assert b['block_bytes'] - a['block_bytes'] == 12288 * 2, (a, b)
PY

# the f32 store for the same checkpoint and chunk size is a different directory
"$DITSTAR" generate --model-dir "$T/f32" --frames 5 --height 32 --width 48 --steps 2 --quiet \
	--weight-dtype f32 --offload disk --offload-chunk-size 2 --cache-dir "$T/cache" \
	--output "$T/d32" 2>/dev/null
$G --offload disk --offload-chunk-size 2 --cache-dir "$T/cache" --output "$T/d16" 2>/dev/null
n=$(ls "$T/cache/chunks" 2>/dev/null | wc -l)
if [ "$n" -eq 2 ] && cmp -s "$T/ref" "$T/d16" && cmp -s "$T/o32" "$T/d32"; then
	ok "f32 and bf16 chunk stores live side by side ($n stores), each run byte-identical"
else
	fail "f32 and bf16 chunk stores live side by side ($n stores: $(ls "$T/cache/chunks" 2>/dev/null | tr '\n' ' '))"
fi

# OpenCL workers read bf16 weights too: byte-identical across modes, close to the CPU
O="$G --workers opencl"
if $O --output "$T/ocl" 2>"$T/err"; then
	$O --offload cpu --offload-chunk-size 2 --output "$T/ocl_cpu2" 2>/dev/null
	if cmp -s "$T/ocl" "$T/ocl_cpu2" &&
		res=$(ref compare "$T/ref" "$T/ocl" --tensor-a latents --tol 1e-4); then
		ok "OpenCL workers with bf16 weights: offload byte-identical, CPU agrees: $res"
	else
		fail "OpenCL workers with bf16 weights: offload byte-identical, CPU agrees: ${res:-}"
	fi
else
	dit_n=$((dit_n + 1))
	echo "ok $dit_n # SKIP no OpenCL device ($(head -n 1 "$T/err"))"
fi
finish
