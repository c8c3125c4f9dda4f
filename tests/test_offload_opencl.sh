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
plan 20

ref make-tiny --output-dir "$T/m" --seed 6 --layers 4 >/dev/null
G="$DITSTAR generate --model-dir $T/m --frames 5 --height 32 --width 48 --steps 3 --quiet"
O="$G --workers opencl"

offload_identity opencl "$T" $O
$G --output "$T/cpu_workers" 2>/dev/null
within "OpenCL and CPU workers agree" "$T/cpu_workers" "$T/ref" latents 1e-4

# The small preset at 4 tokens: 8 blocks of 14 MiB, almost no activations, so the
# chunks dominate and must stream.
S="$DITSTAR generate --model small --frames 1 --height 32 --width 32 --steps 2 --quiet --workers opencl"
# 20 runs; 5 in the sanitized build (the hang this repeats for is StarPU's, not memory
# misuse the sanitizers would see: the CI's time)
n=20
sanitized ditstar && n=5
device_limits opencl $n "$T" $S
keep_what_fits opencl "$T" $S
# the plan of those runs: the same decisions, printed without running
lim=$("$PYTHON_NUMPY" -c "
import json; print(json.load(open('$T/fit4.json'))['offload']['device_limit_bytes'] >> 20)")
P="$DITSTAR plan --model small --frames 1 --height 32 --width 32 --steps 2 --workers opencl --offload cpu --json"
$P --device-mem-limit "${lim}M" >"$T/plan4.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
$P >"$T/planall.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "plan --json: the runs' resident chunks, budgets, limits and bytes a step" \
	"$PYTHON_NUMPY" - "$T/plan4.json" "$T/fit4.json" "$T/planall.json" "$T/fitall.json" <<'PY'
import json, sys
for pp, sp in ((sys.argv[1], sys.argv[2]), (sys.argv[3], sys.argv[4])):
    p, s = json.load(open(pp)), json.load(open(sp))
    pool, spool, off = p['pools'][0], s['weights']['pools'][0], s['offload']
    print('#', pp, pool['resident_chunks'], p['compute']['budget_bytes'], off['budget_bytes'])
    assert pool['resident_chunks'] == spool['resident_chunks'], (pool, spool)
    assert p['compute']['budget_from'] == off['budget_from'], (p['compute'], off)
    assert p['compute']['budget_bytes'] == off['budget_bytes'], (p['compute'], off)
    assert p['compute']['limit_bytes'] == off['device_limit_bytes'], (p['compute'], off)
    assert p['compute']['resident_chunk_bytes'] == off['resident_bytes']
    n, r, c = pool['chunks'], pool['resident_chunks'], pool['chunk_bytes']
    assert pool['bytes_per_step'] == (n - r) * c, pool
    assert spool['bytes_moved'] == 2 * pool['bytes_per_step'] + r * c, spool
PY

# Disk mode on the device with host RAM short of the model: of the chunks the device
# streams, those RAM holds stay there after their first read (pinned), so the store is
# read at most the plan's bytes (StarPU may cache more under its limit), less than
# without keep what fits; latents byte-identical to --offload none.
K="$DITSTAR generate --model small --frames 1 --height 32 --width 32 --steps 4 --quiet --workers opencl"
KD="--offload disk --offload-dir $T/kstore --device-mem-limit 100M --host-mem-limit 80M"
$K --output "$T/knone" 2>"$T/err" || sed 's/^/# /' "$T/err"
$K $KD --output "$T/kram" --stats-json "$T/kram.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
$K $KD --resident-chunks 0 --output "$T/kzero" --stats-json "$T/kzero.json" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
$DITSTAR plan --model small --frames 1 --height 32 --width 32 --steps 4 --workers opencl $KD \
	--json >"$T/kplan.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
if cmp -s "$T/knone" "$T/kram" && cmp -s "$T/knone" "$T/kzero" &&
	"$PYTHON_NUMPY" - "$T/kplan.json" "$T/kram.json" "$T/kzero.json" <<'PY'; then
import json, sys
p, s, z = (json.load(open(f)) for f in sys.argv[1:])
pool = p['pools'][0]
print('#', pool['resident_chunks'], pool['ram_resident_chunks'], p['host'])
assert pool['ram_resident_chunks'] >= 1, pool
assert p['host']['resident_chunk_bytes'] == pool['ram_resident_chunks'] * pool['chunk_bytes']
disk = lambda j: sum(l['bytes'] for l in j['links'] if l['src'].startswith('Disk'))
link = [l for l in p['links'] if l['src'] == 'disk'][0]
planned = link['first_step_extra_bytes'] + 4 * link['bytes_per_step']
print('# store reads', disk(s), 'planned at most', planned, 'streaming', disk(z))
assert disk(s) <= planned and disk(s) < disk(z), (disk(s), planned, disk(z))
PY
	ok "disk mode on the device: host RAM keeps what fits, the store read less; byte-identical"
else
	fail "disk mode on the device: host RAM keeps what fits, the store read less; byte-identical"
fi
finish
