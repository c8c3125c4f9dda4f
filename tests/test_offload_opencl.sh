# Offload onto an OpenCL device (PoCL in CI), a StarPU memory node of its own: latents
# byte-identical across --offload none, cpu and disk, chunk sizes 1, 2 and all and
# several prefetch depths; close to the CPU result; chunks really stream to the device
# and from disk, with StarPU's use of each node within the planned bound; and the
# configuration where both host RAM and device memory are limited (which livelocks
# StarPU's own prefetching) runs 20 times without a hang under the watchdog.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch offload_opencl)
skip_without_workers opencl "$T"
plan 15

ref make-tiny --output-dir "$T/m" --seed 6 --layers 4 >/dev/null
G="$DITSTAR generate --model-dir $T/m --frames 5 --height 32 --width 48 --steps 3 --quiet"
O="$G --workers opencl"

offload_identity opencl "$T" $O
$G --output "$T/cpu_workers" 2>/dev/null
within "OpenCL and CPU workers agree" "$T/cpu_workers" "$T/ref" latents 1e-4

# The small preset at 4 tokens: 8 blocks of 14 MiB, almost no activations, so the
# chunks dominate and must stream.
S="$DITSTAR generate --model small --frames 1 --height 32 --width 32 --steps 2 --quiet --workers opencl"
$S --output "$T/sref" 2>/dev/null
$S --offload cpu --stats-json "$T/planned.json" --output "$T/splanned" 2>/dev/null
identical "small, cpu mode: byte-identical" "$T/sref" "$T/splanned"
check "device limit planned as non-block + (prefetch+1) chunks + activations + slack, peak within" \
	"$PYTHON_NUMPY" - "$T/planned.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
w, off = s['weights'], s['offload']
lat = 16 * 1 * 4 * 4 * 4                       # one latent buffer, bytes
act = w['activation_bytes'] + 6 * lat
need = w['global_bytes'] + 2 * w['chunk_bytes'] + act
want = need + need // 16 + (16 << 20)
mib = 1 << 20
assert off['device_limit_bytes'] == (want + mib - 1) // mib * mib, (off, want)
dev = [n for n in s['memory_nodes'] if n['kind'] == 'opencl'][0]
assert dev['starpu_peak_bytes'] <= off['device_limit_bytes'], dev
# 8 chunks of 14 MiB do not fit in that limit: they were streamed every step
moved = sum(l['bytes'] for l in s['links'] if l['dst'].startswith('OpenCL'))
assert moved >= 2 * w['chunks'] * w['chunk_bytes'], (moved, w)
PY

# Both host RAM and the device limited, chunks from disk: 20 runs, no hang (the
# StarPU watchdog aborts a run in which no task ends for 30 s), all byte-identical.
good=0
for i in $(seq 1 20); do
	if $S --offload disk --offload-dir "$T/sstore" --host-mem-limit 64M \
		--device-mem-limit 64M --stats-json "$T/both.json" --output "$T/both" 2>"$T/err" &&
		cmp -s "$T/sref" "$T/both"; then
		good=$((good + 1))
	else
		sed 's/^/# /' "$T/err"
	fi
done
if [ $good -eq 20 ]; then
	ok "disk -> RAM -> device with both memories limited: 20 of 20 runs"
else
	fail "disk -> RAM -> device with both memories limited: $good of 20 runs"
fi
check "both limits hold and the chunks come from disk every step" "$PYTHON_NUMPY" - "$T/both.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
w, off = s['weights'], s['offload']
nodes = {n['kind']: n for n in s['memory_nodes']}
assert nodes['opencl']['starpu_peak_bytes'] <= 64 << 20, nodes
assert nodes['ram']['starpu_peak_bytes'] <= 64 << 20, nodes
from_disk = sum(l['bytes'] for l in s['links'] if l['src'].startswith('Disk'))
assert from_disk >= 2 * w['chunks'] * w['chunk_bytes'], (from_disk, w)
PY
finish
