# Offload on a CPU-only machine: byte-identical latents for --offload none and disk
# with every chunk size and several prefetch depths; the disk store really streams
# under a tight host limit and StarPU's RAM use stays within the planned bound; the
# chunk store is reused, also when the checkpoint was only touched (its content is
# what identifies it; tests/test_store.sh changes it); bad options get a
# one-line error.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch offload)
plan 34

ref make-tiny --output-dir "$T/m" --seed 4 --layers 4 >/dev/null
G="$DITSTAR generate --model-dir $T/m --frames 5 --height 32 --width 48 --steps 3 --quiet"

$G --output "$T/ref" 2>"$T/err" || sed 's/^/# /' "$T/err"
same() { # desc file
	identical "$1" "$T/ref" "$2"
}
for c in 1 2 4; do
	$G --offload-chunk-size $c --output "$T/none$c" 2>/dev/null
	same "none, chunk $c: byte-identical" "$T/none$c"
done
for c in 1 2 4; do
	$G --offload disk --offload-chunk-size $c --offload-dir "$T/store$c" --resident-chunks 0 \
		--output "$T/disk$c" 2>"$T/err" || sed 's/^/# /' "$T/err"
	same "disk, chunk $c: byte-identical" "$T/disk$c"
done
for d in 0 2; do
	$G --offload disk --prefetch $d --disk-ram-slots 3 --offload-dir "$T/store1" \
		--resident-chunks 0 --output "$T/pf$d" 2>/dev/null
	same "disk, prefetch $d: byte-identical" "$T/pf$d"
done
$G --offload cpu --output "$T/cpu" 2>/dev/null
same "cpu mode without a device: byte-identical" "$T/cpu"

# Streaming under a host limit below what all chunks and activations need (the
# built-in tiny model: 4 chunks of 0.9 MiB, 8.5 MiB of activations, 2 chunks in flight): every step reads
# the chunks again, StarPU's RAM use stays within the limit, and only clean weight
# chunks are evicted (an activation written back to disk from inside a prefetch can
# deadlock StarPU).
P="$DITSTAR generate --model tiny --steps 3 --quiet"
$P --output "$T/pref" 2>/dev/null
$P --offload disk --offload-dir "$T/pstore" --host-mem-limit 11M --stats-json "$T/s.json" \
	--output "$T/tight" 2>"$T/err" || sed 's/^/# /' "$T/err"
identical "disk with a 11 MiB host limit: byte-identical" "$T/pref" "$T/tight"
check "disk streams every step and stays within the host limit" "$PYTHON_NUMPY" - "$T/s.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
w, off = s['weights'], s['offload']
assert off['mode'] == 'disk' and off['host_limit_bytes'] == 11 << 20, off
disk_in = sum(l['bytes'] for l in s['links'] if l['src'].startswith('Disk') and l['dst'].startswith('NUMA'))
# all chunks do not fit besides the activations: some are read again in later steps
# (which ones StarPU evicts is its choice)
assert disk_in > w['chunks'] * w['chunk_bytes'], (disk_in, w)
# activations stay in RAM: nothing is ever written back to the disk node
disk_out = sum(l['bytes'] for l in s['links'] if l['dst'].startswith('Disk'))
assert disk_out == 0, s['links']
assert s['transfers']['weight_fetches'] == 3 * w['chunks'], s['transfers']
ram = [n for n in s['memory_nodes'] if n['kind'] == 'ram'][0]
assert ram['starpu_peak_bytes'] <= off['host_limit_bytes'], ram
disk = [n for n in s['memory_nodes'] if n['kind'] == 'disk'][0]
assert disk['weight_bytes'] == w['chunks'] * w['chunk_bytes'], disk
assert len(s['step_bytes']) == 3 and all(b > 0 for b in s['step_bytes']), s['step_bytes']
PY
# The planned limit (no --host-mem-limit) follows the stated formula.
$P --offload disk --offload-dir "$T/pstore" --resident-chunks 0 --stats-json "$T/p.json" \
	--output "$T/planned" \
	2>/dev/null
check "planned host limit = slots x chunk + activations + 1/16 + 16 MiB" "$PYTHON_NUMPY" - "$T/p.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
w, off = s['weights'], s['offload']
lat = 16 * 5 * 16 * 24 * 4                   # one latent buffer, bytes
need = 2 * w['chunk_bytes'] + w['activation_bytes'] + 6 * lat
want = need + need // 16 + (16 << 20)
mib = 1 << 20
assert off['host_limit_bytes'] == (want + mib - 1) // mib * mib, (off, want)
ram = [n for n in s['memory_nodes'] if n['kind'] == 'ram'][0]
assert ram['starpu_peak_bytes'] <= off['host_limit_bytes'], ram
PY

# Keep what fits in host RAM (disk mode, no device): a budget of the streaming plan + 1.5
# chunks keeps 1 of the 4 chunks (read once, the others every step; 2 more chunks would
# hold all 4, the 2 slots then unneeded); without a limit the
# RAM available holds all 4 (read once); byte-identical.
lim=$("$PYTHON_NUMPY" -c "
import json; s = json.load(open('$T/p.json')); w = s['weights']
lat = 16 * 5 * 16 * 24 * 4
need = 2 * w['chunk_bytes'] + w['activation_bytes'] + 6 * lat
print((need + need // 16 + (16 << 20) + 3 * w['chunk_bytes'] // 2) // 1024 + 1)")
$P --offload disk --offload-dir "$T/pstore" --host-mem-limit "${lim}K" --stats-json "$T/f2.json" \
	--output "$T/f2" 2>"$T/err" || sed 's/^/# /' "$T/err"
$P --offload disk --offload-dir "$T/pstore" --stats-json "$T/fa.json" --output "$T/fa" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
check "keep what fits in RAM: 1 of 4 chunks under the budget, all 4 without; byte-identical" \
	"$PYTHON_NUMPY" - "$T/f2.json" "$T/fa.json" "$T/planned" "$T/f2" "$T/fa" <<'PY'
import json, sys
for path, r, src in ((sys.argv[1], 1, 'limit'), (sys.argv[2], 4, 'memory')):
    s = json.load(open(path))
    w, off, steps = s['weights'], s['offload'], len(s['step_bytes'])
    n = w['chunks']
    assert (w['pools'][0]['resident_chunks'], off['budget_from']) == (r, src), (r, off)
    assert s['transfers']['weight_fetches'] == r + steps * (n - r), s['transfers']
    # after the first step a streamed chunk's RAM buffer is the one evicted before it
    # (dit_hostpool.h): no fresh pages to fault in during the read
    print('# host buffers reused', off['host_buffers_reused'], 'of', off['host_buffer_allocations'])
    assert off['host_buffers_reused'] >= (steps - 1) * (n - r), off
    ram = [x for x in s['memory_nodes'] if x['kind'] == 'ram'][0]
    assert ram['starpu_peak_bytes'] <= off['host_limit_bytes'], ram
ref = open(sys.argv[3], 'rb').read()
assert all(open(f, 'rb').read() == ref for f in sys.argv[4:])
PY

# ditstar plan: the same decisions as the run, printed without running (no store
# written, no output), and its text form; what does not apply is a usage error
"$DITSTAR" plan --model tiny --steps 3 --offload disk --offload-dir "$T/nostore" \
	--host-mem-limit "${lim}K" --json >"$T/plan.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "plan --json: the run's resident chunks, limits and bytes a step; nothing written" \
	"$PYTHON_NUMPY" - "$T/plan.json" "$T/f2.json" "$T/nostore" <<'PY'
import json, os, sys
p, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert not os.path.exists(sys.argv[3]), 'store written'
pool, spool = p['pools'][0], s['weights']['pools'][0]
assert pool['resident_chunks'] == spool['resident_chunks'] == 1, (pool, spool)
assert p['compute']['limit_bytes'] == s['offload']['host_limit_bytes'], (p, s['offload'])
assert p['compute']['budget_bytes'] == s['offload']['budget_bytes'], p
assert p['compute']['resident_chunk_bytes'] == s['offload']['resident_bytes'], p
# the run's xfer tasks: the 3 streamed chunks every step (the resident one once more)
assert pool['bytes_per_step'] == 3 * pool['chunk_bytes'], pool
assert spool['bytes_moved'] == 3 * pool['bytes_per_step'] + pool['chunk_bytes'], spool
assert p['links'] == [{'src': 'disk', 'dst': 'RAM', 'bytes_per_step': pool['bytes_per_step'],
                       'first_step_extra_bytes': pool['chunk_bytes']}], p['links']
PY
check "plan (text): the pool, the budget, the link" sh -c \
	"'$DITSTAR' plan --model tiny --offload disk --offload-dir '$T/nostore' --host-mem-limit ${lim}K |
	 grep -q '^pool blocks: 4 blocks in 4 chunks of 0.9 MiB (f32 matrices), 1 resident' &&
	 '$DITSTAR' generate --dry-run --model tiny --offload disk --offload-dir '$T/nostore' |
	 grep -q '^link disk -> RAM: 0.0 MiB a step' && test ! -e '$T/nostore'"
# A preset planned from its shapes alone sees the config its checkpoint reads back:
# HunyuanVideo's text length (no key of its config: 256) and so its activations are
# the run's (the graph's, and the solver's six latent-sized buffers beside them)
"$DITSTAR" plan --model tiny-hunyuan --cache-dir "$T/hycache" --json >"$T/phy.json" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
"$DITSTAR" generate --model tiny-hunyuan --cache-dir "$T/hycache" --steps 2 --quiet \
	--stats-json "$T/shy.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "a preset's plan without its checkpoint: the activations of its run (HunyuanVideo)" \
	"$PYTHON_NUMPY" - "$T/phy.json" "$T/shy.json" <<'PY'
import json, sys
p, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
latent = 4 * 4 * 3 * 8 * 12  # bytes of the [4, 3, 8, 12] latent
assert p['compute']['activation_bytes'] == s['weights']['activation_bytes'] + 6 * latent, (p['compute'], s['weights'])
PY
# a plan of an official size needs no weights: Wan2.1-14B on a 40 GiB device, bf16
# blocks (--workers cuda needs no GPU to plan with a limit), nothing written
"$DITSTAR" plan --model wan2.1-t2v-14b --workers cuda --offload cpu --device-mem-limit 40G \
	--frames 49 --cache-dir "$T/plancache" --json >"$T/p14.json" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
check "plan of Wan2.1-14B (no checkpoint): 670 MiB bf16 chunks, as many kept as 40 GiB holds beside the workspaces" \
	"$PYTHON_NUMPY" - "$T/p14.json" "$T/plancache" <<'PY'
import json, os, sys
p = json.load(open(sys.argv[1]))
assert not os.path.exists(sys.argv[2]), 'the plan wrote a checkpoint'
pool, c = p['pools'][0], p['compute']
D, F = 5120, 13824
mats = 2 * (8 * D * D + 2 * D * F)                     # bf16 GEMM matrices of a block
assert pool['blocks'] == 40 and mats <= pool['chunk_bytes'] < 1.01 * mats, pool
r, n, cb = pool['resident_chunks'], pool['chunks'], pool['chunk_bytes']
used = c['global_bytes'] + c['activation_bytes'] + c['slack_bytes'] + c['streaming_slot_bytes']
assert 0 < r < n and used + r * cb <= c['budget_bytes'] < used + (r + 1) * cb, (r, c)
# the limit less the CUDA libraries' workspaces (cuBLASLt 32 + cuDNN 256 MiB)
assert c['outside_bytes'] == 288 << 20, c
assert c['budget_bytes'] == (40 << 30) - c['outside_bytes'], c
assert pool['bytes_per_step'] == (n - r) * cb, p
PY
# CUDA: a --device-mem-limit holds the codelets' own workspaces beside StarPU (cuBLASLt
# 32 MiB + cuDNN at most 256 MiB; a plan for CUDA needs no GPU when the limit is given)
expect_fail "CUDA: a limit below the run's need with the libraries' workspaces is refused" 2 \
	"--device-mem-limit 200 MiB is below the [0-9]+ MiB this run needs on the device \(.* \+ the CUDA libraries' workspaces 288 MiB\)" \
	"$DITSTAR" plan --model tiny --workers cuda --offload cpu --resident-chunks 0 \
	--device-mem-limit 200M
check "CUDA: StarPU gets the limit less the workspaces (budget 400 - 288 MiB)" sh -c "
	'$DITSTAR' plan --model tiny --workers cuda --offload cpu --resident-chunks 0 \
		--device-mem-limit 400M --json >'$T/cudaplan.json' 2>'$T/err' &&
	'$PYTHON_NUMPY' -c \"import json
c = json.load(open('$T/cudaplan.json'))['compute']
mib = 1 << 20
assert c['outside_bytes'] == 288 * mib and c['budget_bytes'] == 112 * mib, c
assert c['limit_bytes'] <= 112 * mib, c\""
expect_fail "plan --output: a usage error" 2 "a plan runs nothing" \
	"$DITSTAR" plan --model tiny --output "$T/x"
expect_fail "generate --json without --dry-run: a usage error" 2 "--json needs --dry-run" \
	"$DITSTAR" generate --model tiny --json

# The chunk store is reused while the checkpoint's content is unchanged, even touched
# (--disk-source store: a plain checkpoint is read in place by default).
S1="--offload disk --disk-source store --offload-dir $T/store1"
$G $S1 --output "$T/first1" 2>/dev/null
before=$(stat -c '%Y.%N %i' "$T/store1/blocks.bin")
$G $S1 --output "$T/again" 2>/dev/null
after=$(stat -c '%Y.%N %i' "$T/store1/blocks.bin")
if [ -n "$before" ] && [ "$before" = "$after" ]; then ok "chunk store reused"; else fail "chunk store reused"; fi
touch -d '2001-01-01' "$T/m/diffusion_pytorch_model.safetensors"
$G $S1 --output "$T/touched" 2>/dev/null
after2=$(stat -c '%Y.%N %i' "$T/store1/blocks.bin")
if [ -n "$after" ] && [ "$after" = "$after2" ] && cmp -s "$T/ref" "$T/touched"; then
	ok "chunk store kept when the checkpoint is only touched"
else
	fail "chunk store kept when the checkpoint is only touched"
fi

# Bad options.
expect_fail "chunk size must divide the blocks" 2 "--offload-chunk-size 3 does not divide the 4 blocks" \
	$G --offload-chunk-size 3
expect_fail "one chunk size per pool, no more" 2 "gives 2 sizes, but wan2.1-t2v has 1 pool" \
	$G --offload-chunk-size 2,2
expect_fail "a malformed chunk size list" 2 "--offload-chunk-size needs a positive integer.*not '2,'" \
	$G --offload-chunk-size 2,
expect_fail "prefetch beyond the disk RAM slots" 2 "--prefetch 2 keeps 3 chunks in host RAM, more than --disk-ram-slots 2" \
	$G --offload disk --prefetch 2 --offload-dir "$T/store1"
expect_fail "host limit needs disk mode" 2 "--host-mem-limit needs --offload disk" \
	$G --host-mem-limit 1G
expect_fail "device limit needs a device" 2 "--device-mem-limit needs an accelerator" \
	$G --offload cpu --device-mem-limit 1G
expect_fail "host limit below one chunk and the activations" 2 "--host-mem-limit 1 MiB is below the [0-9]+ MiB" \
	$P --offload disk --offload-dir "$T/pstore" --host-mem-limit 1M
expect_fail "unknown mode" 2 "unknown offload mode 'ssd'" $G --offload ssd
# The store writes and cleans only a folder ditstar made or an empty one: a folder of
# the user's (files, no marker) and the checkpoint's own folder are refused before any
# work, and nothing in them is touched.
mkdir -p "$T/mine"
printf 'keep me\n' >"$T/mine/notes.txt"
printf 'keep me too\n' >"$T/mine/blocks.bin"
printf 'and me\n' >"$T/mine/draft.tmp.abcdef"
expect_fail "--offload-dir a folder of the user's: refused, naming it" 2 \
	"--offload-dir $T/mine: a folder ditstar did not make" \
	$G --offload disk --offload-dir "$T/mine" --output "$T/never"
check "its files untouched" sh -c "[ \"\$(cat '$T/mine/notes.txt' '$T/mine/blocks.bin' \
	'$T/mine/draft.tmp.abcdef')\" = \"keep me
keep me too
and me\" ] && [ ! -e '$T/mine/ditstar-store' ] && [ ! -e '$T/never' ]"
before=$(cd "$T/m" && ls -lA --time-style=+%s | md5sum)
expect_fail "--offload-dir the checkpoint's own folder: refused" 2 \
	"--offload-dir $T/m: a folder ditstar did not make" \
	sh -c "$G --offload disk --offload-dir '$T/m' --output '$T/never'; rc=\$?; \
	[ \"\$(cd '$T/m' && ls -lA --time-style=+%s | md5sum)\" = '$before' ] || echo changed >&2; exit \$rc"
finish
