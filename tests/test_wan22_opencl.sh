# Wan2.2 on OpenCL workers (PoCL here): the three models against the float64
# reference, the two-expert model streamed to the device with byte-identical
# latents, and --offload none refused with the numbers when both experts do not fit.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch wan22_opencl)
skip_without_workers opencl "$T"
plan 7

ref22 make-tiny --variant t2v-a14b --output-dir "$T/t2v" --seed 5 --layers 2 >/dev/null
ref22 make-tiny --variant i2v-a14b --output-dir "$T/i2v" --seed 6 --layers 2 >/dev/null
ref22 make-tiny --variant ti2v-5b --output-dir "$T/ti2v" --seed 7 --layers 2 >/dev/null
wan22_inputs "$T"

W="--workers opencl"
gen22 "$T" "OpenCL: T2V-A14B, 27 steps across the boundary" t2v noise4 t2v "--steps 27" "$W"
gen22 "$T" "OpenCL: I2V-A14B with y" i2v noise4 i2v "--steps 5 --image-latent $T/y" "$W"
gen22 "$T" "OpenCL: TI2V-5B, first frame from z (per-frame time embedding)" ti2v noise8 tii \
	"--steps 5 --image-latent $T/z" "$W"

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
