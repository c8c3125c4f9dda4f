# Wan2.2 on OpenCL workers (PoCL here): the three models against the float64
# reference, the two-expert model streamed to the device with byte-identical
# latents, and --offload none refused with the numbers when both experts do not fit.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch wan22_opencl)
skip_without_workers opencl "$T"
plan 8

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
# keep what fits across the experts (4 blocks each): a budget of the streaming plan's
# bytes + 5.5 of the 8 chunks keeps 2 chunks of each expert (the same fraction of each
# pool, beside the mixed plan's one more streaming slot); the plan says so beforehand,
# and the run fetches the 4 resident chunks once and the other 2 of its expert every
# step
ref22 make-tiny --variant t2v-a14b --output-dir "$T/t2v4" --seed 5 --layers 4 >/dev/null
G4="$DITSTAR generate --model-dir $T/t2v4 --noise $T/noise4 --context $T/ctx --quiet --steps 27 --workers opencl"
PL="$DITSTAR plan --model-dir $T/t2v4 --noise $T/noise4 --context $T/ctx --steps 27 --workers opencl --offload cpu --json"
lim=$($PL --resident-chunks 0 | "$PYTHON_NUMPY" -c "
import json, sys; p = json.load(sys.stdin); c = p['compute']
need = sum(c[k] for k in ('global_bytes', 'activation_bytes', 'slack_bytes',
                          'streaming_slot_bytes'))
print((need + 11 * p['pools'][0]['chunk_bytes'] // 2) // 1024 + 1)")
$G4 --output "$T/fit.ref" 2>"$T/err" || sed 's/^/# /' "$T/err"
$G4 --offload cpu --device-mem-limit "${lim}K" --output "$T/fit" --stats-json "$T/fit.json" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
$PL --device-mem-limit "${lim}K" >"$T/fitplan.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "two experts, a budget of 5.5 of 8 chunks: 2 of each expert kept (planned so), byte-identical" \
	"$PYTHON_NUMPY" - "$T/fit.json" "$T/fitplan.json" "$T/fit.ref" "$T/fit" <<'PY'
import json, sys
s, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert open(sys.argv[3], 'rb').read() == open(sys.argv[4], 'rb').read(), 'latents differ'
assert [(x['label'], x['resident_chunks']) for x in p['pools']] == [('high', 2), ('low', 2)], p
assert s['weights']['pools'][0]['resident_chunks'] == 4, s['weights']['pools']
assert s['transfers']['weight_fetches'] == 4 + 2 * 27, s['transfers']
PY
expect_fail "OpenCL, --offload none: both experts must fit the device limit" 2 \
	"below the .* MiB this run needs on the device .*all chunks of the 2 experts" \
	$G --offload none --device-mem-limit 64K
finish
