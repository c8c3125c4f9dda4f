# TAP helpers for the shell tests. Source it, call plan N, then ok/fail/check.
dit_n=0
dit_failed=0

plan() { echo "1..$1"; }

ok() {
	dit_n=$((dit_n + 1))
	echo "ok $dit_n - $*"
}

fail() {
	dit_n=$((dit_n + 1))
	dit_failed=$((dit_failed + 1))
	echo "not ok $dit_n - $*"
}

# check "description" command...: ok when the command succeeds.
check() {
	desc=$1
	shift
	if out=$("$@" 2>&1); then
		ok "$desc"
	else
		fail "$desc"
		printf '%s\n' "$out" | sed 's/^/# /'
	fi
}

# expect_fail "description" expected_rc pattern command...: the command must exit with
# expected_rc and print exactly one line on stderr matching pattern (grep -E).
expect_fail() {
	desc=$1
	want_rc=$2
	pattern=$3
	shift 3
	errf="$DIT_TEST_TMP/stderr.$$"
	"$@" >/dev/null 2>"$errf"
	rc=$?
	lines=$(wc -l <"$errf")
	if [ "$rc" -eq "$want_rc" ] && [ "$lines" -eq 1 ] && grep -Eq -- "$pattern" "$errf"; then
		ok "$desc"
	else
		fail "$desc (rc $rc, want $want_rc; $lines stderr lines)"
		sed 's/^/# /' "$errf"
	fi
	rm -f "$errf"
}

# tiny_forward_inputs DIR: DIR/tiny (reference tiny checkpoint, seed 4), DIR/sharded
# (the same in two shards with an index) and DIR/a.in (forward inputs x [4, 3, 8, 12],
# t 713, context [5, 24]).
tiny_forward_inputs() {
	ref make-tiny --output-dir "$1/tiny" --seed 4 >/dev/null
	ref make-tiny --output-dir "$1/sharded" --seed 4 --shards 2 >/dev/null
	"$PYTHON_NUMPY" - "$1/a.in" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
r = np.random.default_rng(7)
st.save(sys.argv[1], {'x': r.standard_normal((4, 3, 8, 12)).astype(np.float32),
                      't': np.array([713.0], dtype=np.float32),
                      'context': r.standard_normal((5, 24)).astype(np.float32)})
PY
}

ref() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/wan_ref.py" "$@"; }
ref22() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/wan22_ref.py" "$@"; }

# wan22_inputs DIR: the Wan2.2 sampling inputs of the tiny checkpoints (text_dim 24):
# DIR/ctx (context, context_null), DIR/noise4 [4,3,4,6], DIR/noise8 [8,3,4,6], DIR/y
# (I2V conditioning [8,3,4,6], with an unused tensor), DIR/z (TI2V first frame).
wan22_inputs() {
	"$PYTHON_NUMPY" - "$1" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
T = sys.argv[1]
r = np.random.default_rng(9)
f32 = lambda *s: r.standard_normal(s).astype(np.float32)
st.save(T + '/ctx', {'context': f32(5, 24), 'context_null': f32(3, 24)})
st.save(T + '/noise4', {'noise': f32(4, 3, 4, 6)})
st.save(T + '/noise8', {'noise': f32(8, 3, 4, 6)})
st.save(T + '/y', {'y': f32(8, 3, 4, 6), 'unused': f32(2)})
st.save(T + '/z', {'z': f32(8, 1, 4, 6)})
PY
}

# gen22 DIR DESC MODEL NOISE OUT "options" ["ditstar-only options"]: ditstar generate
# on DIR/MODEL with DIR/NOISE and DIR/ctx against wan22_ref.py's sampling loop, 2e-5.
gen22() {
	dir=$1 desc=$2 model=$3 noise=$4 out=$5 opts=$6 only=${7:-}
	# shellcheck disable=SC2086 # options split on purpose
	if ! "$DITSTAR" generate --model-dir "$dir/$model" --noise "$dir/$noise" \
		--context "$dir/ctx" --quiet --output "$dir/$out.c" $opts $only 2>"$dir/err"; then
		fail "$desc: ditstar generate failed"
		sed 's/^/# /' "$dir/err"
		return
	fi
	# shellcheck disable=SC2086
	if ref22 generate --model-dir "$dir/$model" --noise "$dir/$noise" --context "$dir/ctx" \
		--output "$dir/$out.ref" $opts >/dev/null 2>"$dir/err" &&
		res=$(ref compare "$dir/$out.c" "$dir/$out.ref" --tensor-a latents --tol 2e-5); then
		ok "$desc: $res"
	else
		fail "$desc: ${res:-reference failed}"
		sed 's/^/# /' "$dir/err"
	fi
}

# identical "description" A B: ok when files A and B are byte-identical.
identical() {
	if cmp -s "$2" "$3"; then ok "$1"; else fail "$1"; fi
}

# same_latents DESC A B: ok when the tensor 'latents' of A and B hold the same bytes
same_latents() {
	if res=$("$PYTHON_NUMPY" - "$2" "$3" 2>&1 <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
a, b = (st.load(p)['latents'] for p in sys.argv[1:3])
assert a.shape == b.shape and a.tobytes() == b.tobytes(), 'max |a - b| %g' % np.abs(a - b).max()
print('%d values, byte-identical' % a.size)
PY
	); then ok "$1: $res"; else fail "$1: $res"; fi
}

# within "description" A B TENSOR TOL: ok when tensor TENSOR of A matches B within TOL
# (max-abs); the comparison's figures follow the description.
within() {
	if res=$(ref compare "$2" "$3" --tensor-a "$4" --tol "$5"); then
		ok "$1: $res"
	else
		fail "$1: $res"
	fi
}

finish() {
	[ "$dit_failed" -eq 0 ]
	exit $?
}

# blas_rows_fixed: for the checks that a graph cut into token chunks computes the same
# bytes as the whole one. A GEMM cut into other row blocks gives the same bytes only
# where the BLAS computes a row the same way wherever it stands in the call: OpenBLAS's
# Haswell and Zen sgemm kernels do not (the last rows of a call that is not a multiple
# of their unroll go through narrower kernels that sum in another order: chunks of 96
# rows match, of 100 or 128 not), its Sandybridge kernels do (as its SkylakeX ones
# were seen to). So those checks ask OpenBLAS for its Sandybridge kernels where the CPU
# has AVX (other BLAS ignore the variable). In the caller's shell: use a subshell.
blas_rows_fixed() {
	if grep -qw avx /proc/cpuinfo 2>/dev/null; then
		OPENBLAS_CORETYPE=Sandybridge
		export OPENBLAS_CORETYPE
	fi
}

need_python() {
	if [ -z "$PYTHON_NUMPY" ]; then
		echo "1..0 # SKIP no Python with NumPy"
		exit 0
	fi
}

# A fresh scratch directory for one test script.
scratch() {
	d="$DIT_TEST_TMP/$1"
	rm -rf "$d"
	mkdir -p "$d"
	echo "$d"
}

# real_bin NAME: the program itself for a libtool-built NAME under the build tree.
real_bin() {
	if [ -x "$top_builddir/$(dirname "$1")/.libs/$(basename "$1")" ]; then
		echo "$top_builddir/$(dirname "$1")/.libs/$(basename "$1")"
	else
		echo "$top_builddir/$1"
	fi
}

# sanitized NAME: whether the program NAME was built with AddressSanitizer (a case
# the normal build runs may then be left to it: `ok "... # SKIP ..."`).
sanitized() {
	grep -q __asan_init "$(real_bin "$1")" 2>/dev/null
}

# skip_if_sanitized NAME WHY: ends the test with a SKIP plan when the program NAME
# was built with AddressSanitizer.
skip_if_sanitized() {
	if sanitized "$1"; then
		echo "1..0 # SKIP a sanitized build ($2)"
		exit 0
	fi
}

# skip_without_workers KIND DIR: ends the test with a SKIP plan when a one-step run
# with --workers KIND fails (no such device), giving the reason.
skip_without_workers() {
	if ! "$DITSTAR" generate --quiet --steps 1 --workers "$1" --output "$2/probe" \
		2>"$2/err"; then
		echo "1..0 # SKIP no $1 device ($(head -n 1 "$2/err"))"
		exit 0
	fi
}

# offload_identity KIND DIR COMMAND...: with the generate COMMAND (its --output to
# come), DIR/ref is written resident, then --offload none, cpu and disk at chunks 1,
# 2 and 4 (every chunk streamed: --resident-chunks 0) and prefetch 0 and 2 must each
# give its bytes (10 checks).
offload_identity() {
	kind=$1 dir=$2
	shift 2
	"$@" --output "$dir/ref" 2>"$dir/err" || sed 's/^/# /' "$dir/err"
	for m in none cpu disk; do
		for c in 1 2 4; do
			[ $m = none ] && [ $c = 1 ] && continue
			"$@" --offload $m --offload-chunk-size $c --offload-dir "$dir/store$c" \
				--resident-chunks 0 --output "$dir/$m$c" 2>"$dir/err" ||
				sed 's/^/# /' "$dir/err"
			identical "$kind, $m, chunk $c: byte-identical" "$dir/ref" "$dir/$m$c"
		done
	done
	for d in 0 2; do
		"$@" --offload cpu --prefetch $d --resident-chunks 0 --output "$dir/pf$d" 2>/dev/null
		identical "$kind, cpu, prefetch $d: byte-identical" "$dir/ref" "$dir/pf$d"
	done
}

# keep_what_fits KIND DIR COMMAND...: after device_limits (DIR/sref, DIR/planned.json
# of the streaming plan): the small preset with --offload cpu and a device budget of
# the streaming plan's limit + 5 chunks keeps 4 of the 8 chunks resident (a mixed plan
# streams through one slot more than a streamed-only one; the stats'
# resident_chunks; one fetch of each, then 4 a step; over the link less than
# streaming every chunk), byte-identical; --resident-chunks 2 keeps 2; without a
# limit the device's memory holds all 8: each crosses the link once (3 checks).
keep_what_fits() {
	kind=$1 dir=$2
	shift 2
	lim=$("$PYTHON_NUMPY" -c "
import json; s = json.load(open('$dir/planned.json'))
mib = 1 << 20
# a --device-mem-limit holds the CUDA codelets' own workspaces beside StarPU's limit
print((s['offload']['device_limit_bytes'] + s['offload']['device_outside_bytes'] +
       5 * s['weights']['chunk_bytes'] + mib - 1) // mib)")
	"$@" --offload cpu --device-mem-limit "${lim}M" --stats-json "$dir/fit4.json" \
		--output "$dir/fit4" 2>"$dir/err" || sed 's/^/# /' "$dir/err"
	"$@" --offload cpu --device-mem-limit "${lim}M" --resident-chunks 2 \
		--stats-json "$dir/fit2.json" --output "$dir/fit2" 2>"$dir/err" ||
		sed 's/^/# /' "$dir/err"
	if cmp -s "$dir/sref" "$dir/fit4" && cmp -s "$dir/sref" "$dir/fit2"; then
		ok "keep what fits: 4 and 2 chunks resident, byte-identical to resident"
	else
		fail "keep what fits: 4 and 2 chunks resident, byte-identical to resident"
	fi
	check "a budget of the streaming limit + 5 chunks keeps 4 of 8 (2 with --resident-chunks 2): one fetch each, the rest every step" \
		"$PYTHON_NUMPY" - "$dir/fit4.json" "$dir/fit2.json" "$kind" <<'PY'
import json, sys
kind = sys.argv[3]
for path, r in ((sys.argv[1], 4), (sys.argv[2], 2)):
    s = json.load(open(path))
    w, off, steps = s['weights'], s['offload'], len(s['step_bytes'])
    n, c = w['chunks'], w['chunk_bytes']
    print('#', path, 'resident', w['pools'][0]['resident_chunks'], 'fetches',
          s['transfers']['weight_fetches'], 'budget', off['budget_bytes'], off.get('budget_from'))
    assert w['pools'][0]['resident_chunks'] == r and off['resident_bytes'] == r * c, off
    assert off['budget_from'] == 'limit' and off['budget_bytes'] == off['device_limit_bytes'], off
    assert s['transfers']['weight_fetches'] == r + steps * (n - r), s['transfers']
    moved = sum(l['bytes'] for l in s['links'] if l['dst'].lower().startswith(kind))
    # with --resident-chunks 2 the budget (that of 4 kept chunks) leaves room for 2
    # more that StarPU may keep cached, which then need not cross again
    cached = 4 - r
    assert steps * (n - r - cached) * c <= moved < steps * n * c, (moved, steps, n, r, c)
    dev = [x for x in s['memory_nodes'] if x['kind'] == kind][0]
    assert dev['starpu_peak_bytes'] <= off['device_limit_bytes'], dev
PY
	"$@" --offload cpu --stats-json "$dir/fitall.json" --output "$dir/fitall" 2>"$dir/err" ||
		sed 's/^/# /' "$dir/err"
	check "no limit: the device's memory holds every chunk, each crosses the link once, byte-identical" \
		"$PYTHON_NUMPY" - "$dir/fitall.json" "$kind" "$dir/sref" "$dir/fitall" <<'PY'
import json, sys
s, kind = json.load(open(sys.argv[1])), sys.argv[2]
w, off = s['weights'], s['offload']
n, c = w['chunks'], w['chunk_bytes']
assert open(sys.argv[3], 'rb').read() == open(sys.argv[4], 'rb').read()
assert off['budget_from'] == 'memory' and w['pools'][0]['resident_chunks'] == n, off
assert s['transfers']['weight_fetches'] == n, s['transfers']
moved = sum(l['bytes'] for l in s['links'] if l['dst'].lower().startswith(kind))
assert n * c <= moved < (n + 1) * c + w['global_bytes'] + (8 << 20), (moved, n, c)
assert all(b == 0 for b in s['step_bytes'][1:]), s['step_bytes']
PY
}

# device_limits KIND RUNS DIR COMMAND...: the small preset (8 blocks of 14 MiB, almost
# no activations) on the device KIND ("opencl" or "cuda", its memory node kind), with
# the generate COMMAND (its --output to come): --offload cpu byte-identical to resident;
# the device limit planned as non-block + (prefetch+1) chunks + activations + slack,
# StarPU's use within it and the chunks streamed; then disk mode with host RAM and the
# device both limited to 64 MiB, RUNS runs without a hang, all byte-identical, within
# both limits and reading the chunks from disk every step (4 checks; DIR/sref and
# DIR/planned.json are left for more).
device_limits() {
	kind=$1 runs=$2 dir=$3
	shift 3
	"$@" --output "$dir/sref" 2>/dev/null
	"$@" --offload cpu --resident-chunks 0 --stats-json "$dir/planned.json" \
		--output "$dir/splanned" 2>/dev/null
	identical "small, cpu mode: byte-identical" "$dir/sref" "$dir/splanned"
	check "device limit planned as non-block + (prefetch+1) chunks + activations + slack, peak within, chunks streamed" \
		"$PYTHON_NUMPY" - "$dir/planned.json" "$kind" <<'PY'
import json, sys
s, kind = json.load(open(sys.argv[1])), sys.argv[2]
w, off = s['weights'], s['offload']
lat = 16 * 1 * 4 * 4 * 4                       # one latent buffer, bytes
act = w['activation_bytes'] + 6 * lat
need = w['global_bytes'] + 2 * w['chunk_bytes'] + act
# CUDA: one more 32 MiB chunk of StarPU's suballocator (buffers of up to 4 MiB)
want = need + need // 16 + (16 << 20) + ((32 << 20) if kind == 'cuda' else 0)
mib = 1 << 20
assert off['device_limit_bytes'] == (want + mib - 1) // mib * mib, (off, want)
dev = [n for n in s['memory_nodes'] if n['kind'] == kind][0]
assert dev['starpu_peak_bytes'] <= off['device_limit_bytes'], dev
# 8 chunks do not fit in that limit: they were streamed every step (on CUDA the
# suballocator's chunk can leave room for all 8 bf16 chunks: then each crossed at
# least once)
moved = sum(l['bytes'] for l in s['links'] if l['dst'].lower().startswith(kind))
if off['device_limit_bytes'] < w['global_bytes'] + act + w['chunks'] * w['chunk_bytes']:
    assert moved >= 2 * w['chunks'] * w['chunk_bytes'], (moved, w)
else:  # each chunk crossed at least once
    print('# every chunk fits in the limit of', off['device_limit_bytes'])
    assert moved >= w['chunks'] * w['chunk_bytes'], (moved, w)
PY
	# 64 MiB for StarPU, and on CUDA the codelets' workspaces beside it
	dlim=$("$PYTHON_NUMPY" -c "
import json; s = json.load(open('$dir/planned.json'))
print(64 + s['offload']['device_outside_bytes'] // (1 << 20))")
	good=0
	for i in $(seq 1 "$runs"); do
		if "$@" --offload disk --offload-dir "$dir/sstore" --host-mem-limit 64M \
			--device-mem-limit "${dlim}M" --resident-chunks 0 --stats-json "$dir/both.json" --output "$dir/both" \
			2>"$dir/err" && cmp -s "$dir/sref" "$dir/both"; then
			good=$((good + 1))
		else
			sed 's/^/# /' "$dir/err"
		fi
	done
	if [ $good -eq "$runs" ]; then
		ok "disk -> RAM -> $kind with both memories limited: $runs of $runs runs byte-identical"
	else
		fail "disk -> RAM -> $kind with both memories limited: $good of $runs runs"
	fi
	check "both limits hold and the chunks come from disk every step" \
		"$PYTHON_NUMPY" - "$dir/both.json" "$kind" <<'PY'
import json, sys
s, kind = json.load(open(sys.argv[1])), sys.argv[2]
w = s['weights']
nodes = {n['kind']: n for n in s['memory_nodes']}
assert nodes[kind]['starpu_peak_bytes'] <= 64 << 20, nodes
assert nodes['ram']['starpu_peak_bytes'] <= 64 << 20, nodes
from_disk = sum(l['bytes'] for l in s['links'] if l['src'].startswith('Disk'))
assert from_disk >= 2 * w['chunks'] * w['chunk_bytes'], (from_disk, w)
PY
}

# run_built NAME WHY: runs the TAP program NAME of the build tree, a SKIP plan (WHY)
# when it was not built; its exit code 77 (nothing to test on) counts as success.
run_built() {
	if [ ! -x "$top_builddir/$1" ]; then
		echo "1..0 # SKIP $2"
		exit 0
	fi
	rc=0
	"$top_builddir/$1" || rc=$?
	[ $rc -eq 77 ] && exit 0
	exit $rc
}

# spoil PATH KIND ORIG: makes the file PATH hostile: a FIFO, a folder, garbage, cut short
# (the first 40 bytes of ORIG, its intact copy) or a dangling link (KIND fifo, dir,
# garbage, cut, dangling).
spoil() {
	case $2 in
	fifo) rm -f "$1" && mkfifo "$1" ;;
	dir) rm -f "$1" && mkdir "$1" ;;
	garbage) printf '{"a": \001garbage' >"$1" ;;
	cut) [ -s "$3" ] && head -c 40 "$3" >"$1" ;;
	dangling) rm -f "$1" && ln -s "$DIT_TEST_TMP/nothing-here" "$1" ;;
	esac
}

# run_or_name OUT REF PATH COMMAND...: COMMAND (its --output OUT) either gives REF's
# bytes or exits 1 or 2 with one line naming PATH, within 60 s; otherwise prints what
# it did ("rc N: first line") and returns 1.
run_or_name() {
	out=$1 want=$2 path=$3
	shift 3
	timeout 60 "$@" --output "$out" >/dev/null 2>"$DIT_TEST_TMP/ron.err"
	rc=$?
	if [ $rc -eq 0 ] && cmp -s "$out" "$want"; then
		return 0
	elif { [ $rc -eq 1 ] || [ $rc -eq 2 ]; } && [ "$(wc -l <"$DIT_TEST_TMP/ron.err")" -eq 1 ] &&
		grep -qF -- "$path" "$DIT_TEST_TMP/ron.err"; then
		return 0
	fi
	echo "rc $rc: $(head -c 120 "$DIT_TEST_TMP/ron.err" | head -1)"
	return 1
}

