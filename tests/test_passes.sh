# Guidance passes in flight (--passes-in-flight, tasks/graph.c): the buffers that live
# only inside a block (DIT_LIVE_BLOCK) exist once per pass in flight and the passes
# sharing a copy run one after the other. Every family's latents are byte-identical
# with fewer passes in flight (a buffer wrongly called block-lived would be
# overwritten by the other pass between its uses and change them), also with row
# tiles; the plan adds up the activations by lifetime and shows the saving; a device
# budget between the needs of one and two passes in flight makes the planner take
# one, says so, and the run stays within it and byte-identical; a budget below one
# pass in flight is refused before any work, naming that.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch passes)
plan 16

C="--cache-dir $T/cache --steps 2 --quiet"
# same_in_flight DESC PRESET-AND-ARGS: the default run against 1 pass in flight
same_in_flight() {
	desc=$1
	shift
	"$DITSTAR" generate --model "$@" $C --output "$T/all" 2>"$T/err" || sed 's/^/# /' "$T/err"
	"$DITSTAR" generate --model "$@" $C --passes-in-flight 1 --output "$T/one" 2>"$T/err" ||
		sed 's/^/# /' "$T/err"
	identical "$desc: 1 pass in flight byte-identical to all" "$T/all" "$T/one"
}
same_in_flight "Wan2.1 (CFG, 2 passes)" tiny
same_in_flight "Wan2.1 with row tiles of 64 tokens" tiny --tile-tokens 64
same_in_flight "Wan2.2 T2V-A14B (two experts)" tiny-t2v-a14b
same_in_flight "Wan2.2 TI2V-5B (per-token timesteps)" tiny-ti2v-5b
same_in_flight "Cosmos-Predict2.5 (2B shapes)" tiny-cosmos
same_in_flight "LTX-2 (4 passes: CFG, STG, modality)" tiny-ltx2 --stg-blocks 1
same_in_flight "LTX-2.3 (gated attention, text AdaLN) with row tiles" tiny-ltx2.3 --stg-blocks 1 \
	--tile-tokens 32
"$DITSTAR" generate --model tiny-ltx2 --stg-blocks 1 $C --passes-in-flight 3 --output "$T/three" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
"$DITSTAR" generate --model tiny-ltx2 --stg-blocks 1 $C --passes-in-flight 1 --output "$T/one" \
	2>/dev/null
identical "LTX-2: 3 of 4 passes in flight byte-identical to 1" "$T/one" "$T/three"

# the plan: the activations by lifetime, adding up, and the saving
P="$DITSTAR plan --model tiny-ltx2 --stg-blocks 1 --cache-dir $T/cache --json"
$P >"$T/p4.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
$P --passes-in-flight 2 >"$T/p2.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "plan: activations = passes x (io + forward-lived) + in flight x block-lived + shared + the run's own" \
	"$PYTHON_NUMPY" - "$T/p4.json" "$T/p2.json" <<'PY'
import json, sys
for path, k, why in ((sys.argv[1], 4, 'all'), (sys.argv[2], 2, 'option')):
    j = json.load(open(path))
    a = j['activations']
    assert a['passes'] == 4 and a['passes_in_flight'] == k, a
    assert a['passes_in_flight_from'] == why, a
    assert min(a['per_pass_io_bytes'], a['per_pass_forward_bytes'],
               a['per_pass_in_flight_block_bytes']) > 0, a
    tot = (4 * (a['per_pass_io_bytes'] + a['per_pass_forward_bytes']) +
           k * a['per_pass_in_flight_block_bytes'] + a['shared_bytes'] + a['caller_bytes'])
    assert a['total_bytes'] == tot == j['compute']['activation_bytes'], (a, tot)
    assert a['all_passes_in_flight_bytes'] == tot + (4 - k) * a['per_pass_in_flight_block_bytes']
    assert a['largest_buffer'] and a['largest_buffer_bytes'] > 0, a
PY
if $DITSTAR plan --model tiny --cache-dir "$T/cache" --passes-in-flight 1 >"$T/p.txt" 2>&1 &&
	grep -Eq '^  activations [0-9.]+ MiB: 2 passes x \(inputs and stream [0-9.]+ \+ forward-lived [0-9.]+\) \+ 1 in flight x block-lived [0-9.]+ \+ shared [0-9.]+' "$T/p.txt" &&
	grep -q '^  passes in flight: 1 of 2 (--passes-in-flight)$' "$T/p.txt"; then
	ok "the text plan: activations by lifetime, passes in flight and why"
else
	fail "the text plan: activations by lifetime, passes in flight and why"
	sed 's/^/# /' "$T/p.txt"
fi
expect_fail "--passes-in-flight takes 0..64" 2 "^ditstar plan: --passes-in-flight needs an integer from 0 to 64, not '-1'" \
	$DITSTAR plan --model tiny --passes-in-flight -1

# A device budget (PoCL's OpenCL device) between the needs of 1 and 2 passes in flight:
# the planner takes 1, and the run keeps to the budget.
if ! "$DITSTAR" generate --quiet --model tiny-test --steps 1 --workers opencl \
	--cache-dir "$T/cache" --output "$T/probe" 2>"$T/err"; then
	for i in 1 2 3 4 5; do ok "# SKIP no OpenCL device ($(head -n 1 "$T/err"))"; done
	finish
fi
S="--model small --frames 9 --height 256 --width 384 --cache-dir $T/cache --workers opencl"
S="$S --offload cpu --resident-chunks 0"
for k in 1 2; do
	$DITSTAR plan $S --passes-in-flight $k --json >"$T/need$k.json" 2>"$T/err" ||
		sed 's/^/# /' "$T/err"
done
lim=$("$PYTHON_NUMPY" - "$T/need1.json" "$T/need2.json" <<'PY'
import json, sys
def need(p):
    c = json.load(open(p))['compute']
    return c['global_bytes'] + c['streaming_slot_bytes'] + c['activation_bytes']
n1, n2 = need(sys.argv[1]), need(sys.argv[2])
mib = 1 << 20
lim = (n1 + n2) // 2 // mib
assert n1 <= lim * mib < n2, (n1, n2, lim)
print(lim)
PY
)
$DITSTAR plan $S --device-mem-limit "${lim}M" --json >"$T/lim.json" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
check "a budget between the needs of 1 and 2 passes in flight: the plan takes 1, from the limit" \
	"$PYTHON_NUMPY" - "$T/lim.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))['activations']
assert a['passes_in_flight'] == 1 and a['passes_in_flight_from'] == 'limit', a
PY
"$DITSTAR" generate $S --steps 2 --quiet --output "$T/sall" 2>"$T/err" || sed 's/^/# /' "$T/err"
"$DITSTAR" generate $S --steps 2 --quiet --device-mem-limit "${lim}M" --stats-json "$T/s.json" \
	--output "$T/slim" 2>"$T/err" || sed 's/^/# /' "$T/err"
identical "the run under that budget: byte-identical to all passes in flight" "$T/sall" "$T/slim"
check "the run under that budget: 1 pass in flight, StarPU's peak on the device within the budget" \
	"$PYTHON_NUMPY" - "$T/s.json" "$lim" <<'PY'
import json, sys
s, lim = json.load(open(sys.argv[1])), int(sys.argv[2]) << 20
assert s['weights']['passes_in_flight'] == 1, s['weights']
dev = [n for n in s['memory_nodes'] if n['kind'] == 'opencl'][0]
print('# peak %.1f MiB, budget %.1f MiB' % (dev['starpu_peak_bytes'] / 2**20, lim / 2**20))
assert 0 < dev['starpu_peak_bytes'] <= lim, (dev, lim)
PY
small=$("$PYTHON_NUMPY" -c "import json; c = json.load(open('$T/need1.json'))['compute']
print((c['global_bytes'] + c['streaming_slot_bytes'] + c['activation_bytes']) // (1 << 20) - 1)")
expect_fail "a budget below one pass in flight: refused before any work, saying so" 2 \
	"--device-mem-limit $small MiB is below the .* MiB this run needs on the device .*, with 1 of the 2 passes in flight$" \
	$DITSTAR generate $S --steps 2 --device-mem-limit "${small}M" --output "$T/never"
check "nothing written" test ! -e "$T/never"
finish
