# The CUDA backend through the whole program (skipped without a GPU): latents
# byte-identical across --offload none, cpu and disk, chunk sizes and prefetch depths
# on the GPU; close to the CPU result (bf16 GEMMs and attention: tolerance 5e-2 on
# latents of unit scale after 3 steps, where fp32 differences are 1e-5); --workers
# all (CPU cores and the GPU, the scheduler picks) close too; bf16 weights planned
# into the device limit and streamed; and both memories limited from disk without a
# hang.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch offload_cuda)
skip_without_workers cuda "$T"
plan 16

ref make-tiny --output-dir "$T/m" --seed 6 --layers 4 >/dev/null
G="$DITSTAR generate --model-dir $T/m --frames 5 --height 32 --width 48 --steps 3 --quiet"
C="$G --workers cuda"

offload_identity cuda "$T" $C
$C --output "$T/again" 2>/dev/null
identical "cuda: the same run twice is byte-identical" "$T/ref" "$T/again"
$G --output "$T/cpu_workers" 2>/dev/null
within "CUDA and CPU workers agree" "$T/cpu_workers" "$T/ref" latents 5e-2
$G --workers all --output "$T/all" 2>/dev/null
within "CPU + CUDA workers agree with CPU workers" "$T/cpu_workers" "$T/all" latents 5e-2

S="$DITSTAR generate --model small --frames 1 --height 32 --width 32 --steps 2 --quiet --workers cuda"
$S --output "$T/sref" 2>/dev/null
$S --offload cpu --stats-json "$T/planned.json" --output "$T/splanned" 2>/dev/null
identical "small, cpu mode: byte-identical" "$T/sref" "$T/splanned"
check "bf16 chunks; device limit planned as non-block + (prefetch+1) chunks + activations + slack, peak within, chunks streamed" \
	"$PYTHON_NUMPY" - "$T/planned.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
w, off = s['weights'], s['offload']
assert w.get('block_matrices') == 'bf16', w
lat = 16 * 1 * 4 * 4 * 4
act = w['activation_bytes'] + 6 * lat
need = w['global_bytes'] + 2 * w['chunk_bytes'] + act
want = need + need // 16 + (16 << 20)
mib = 1 << 20
assert off['device_limit_bytes'] == (want + mib - 1) // mib * mib, (off, want)
dev = [n for n in s['memory_nodes'] if n['kind'] == 'cuda'][0]
assert dev['starpu_peak_bytes'] <= off['device_limit_bytes'], dev
moved = sum(l['bytes'] for l in s['links'] if l['dst'].startswith('CUDA'))
assert moved >= 2 * w['chunks'] * w['chunk_bytes'], (moved, w)
PY

good=0
for i in $(seq 1 5); do
	if $S --offload disk --offload-dir "$T/sstore" --host-mem-limit 64M \
		--device-mem-limit 64M --output "$T/both" 2>"$T/err" &&
		cmp -s "$T/sref" "$T/both"; then
		good=$((good + 1))
	else
		sed 's/^/# /' "$T/err"
	fi
done
if [ $good -eq 5 ]; then
	ok "disk -> RAM -> GPU with both memories limited: 5 of 5 runs byte-identical"
else
	fail "disk -> RAM -> GPU with both memories limited: $good of 5 runs"
fi
finish
