# Wan2.2 on OpenCL workers (PoCL here): the three models against the float64
# reference, the two-expert model streamed to the device with byte-identical
# latents, and --offload none refused with the numbers when both experts do not fit.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch wan22_opencl)
skip_without_workers opencl "$T"
plan 7

ref22() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/wan22_ref.py" "$@"; }
ref22 make-tiny --variant t2v-a14b --output-dir "$T/t2v" --seed 5 --layers 2 >/dev/null
ref22 make-tiny --variant i2v-a14b --output-dir "$T/i2v" --seed 6 --layers 2 >/dev/null
ref22 make-tiny --variant ti2v-5b --output-dir "$T/ti2v" --seed 7 --layers 2 >/dev/null
"$PYTHON_NUMPY" - "$T" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
T = sys.argv[1]
r = np.random.default_rng(9)
f32 = lambda *s: r.standard_normal(s).astype(np.float32)
st.save(T + '/ctx', {'context': f32(5, 24), 'context_null': f32(3, 24)})
st.save(T + '/noise4', {'noise': f32(4, 3, 4, 6)})
st.save(T + '/noise8', {'noise': f32(8, 3, 4, 6)})
st.save(T + '/y', {'y': f32(8, 3, 4, 6)})
st.save(T + '/z', {'z': f32(8, 1, 4, 6)})
PY

# gen DESC MODEL NOISE OUT "options": generate on OpenCL vs reference, 2e-5
gen() {
	desc=$1 model=$2 noise=$3 out=$4 opts=$5
	# shellcheck disable=SC2086 # options split on purpose
	if ! "$DITSTAR" generate --model-dir "$T/$model" --noise "$T/$noise" --context "$T/ctx" \
		--workers opencl --quiet --output "$T/$out.c" $opts 2>"$T/err"; then
		fail "$desc: ditstar generate failed"
		sed 's/^/# /' "$T/err"
		return
	fi
	# shellcheck disable=SC2086
	if ref22 generate --model-dir "$T/$model" --noise "$T/$noise" --context "$T/ctx" \
		--output "$T/$out.ref" $opts >/dev/null 2>"$T/err" &&
		res=$(ref compare "$T/$out.c" "$T/$out.ref" --tensor-a latents --tol 2e-5); then
		ok "$desc: $res"
	else
		fail "$desc: ${res:-reference failed}"
		sed 's/^/# /' "$T/err"
	fi
}

gen "OpenCL: T2V-A14B, 27 steps across the boundary" t2v noise4 t2v "--steps 27"
gen "OpenCL: I2V-A14B with y" i2v noise4 i2v "--steps 5 --image-latent $T/y"
gen "OpenCL: TI2V-5B, first frame from z (per-frame time embedding)" ti2v noise8 tii \
	"--steps 5 --image-latent $T/z"

G="$DITSTAR generate --model-dir $T/t2v --noise $T/noise4 --context $T/ctx --quiet --steps 27 --workers opencl"
for m in "cpu" "cpu --offload-chunk-size 2 --prefetch 2" "disk --offload-dir $T/store"; do
	# shellcheck disable=SC2086
	$G --offload $m --output "$T/mode" 2>"$T/err" || sed 's/^/# /' "$T/err"
	identical "OpenCL, offload $m: byte-identical to resident" "$T/t2v.c" "$T/mode"
done
expect_fail "OpenCL, --offload none: both experts must fit the device limit" 1 \
	"below the .* MiB this run needs on the device .*all chunks of the 2 experts" \
	$G --offload none --device-mem-limit 64K
finish
