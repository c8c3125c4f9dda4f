# --trace DIR: StarPU's FxT trace converted to Paje and the .rec files, and trace.json
# (Chrome trace events) with one row per worker and one per memory link. The tasks in
# trace.json are the tasks the run executed (checked against --stats-json of the same
# run), transfers of an out-of-core run show on link rows, hand-written traces (device
# and disk nodes, malformed records, corruptions) convert without a crash, and bad trace
# directories are one-line errors.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch trace)
CONVERT="$top_builddir/tests/trace_convert"
plan 57

# The checks on trace.json: check.py TRACE WHAT [STATS [WALL_US]]
cat >"$T/check.py" <<'PY'
import json, math, sys
from collections import Counter

trace, what = sys.argv[1], sys.argv[2]
d = json.load(open(trace))
ev = d['traceEvents']
procs = {e['pid']: e['args']['name'] for e in ev if e['ph'] == 'M' and e['name'] == 'process_name'}
rows = {(e['pid'], e['tid']): e['args']['name'] for e in ev
        if e['ph'] == 'M' and e['name'] == 'thread_name'}
pid = {v: k for k, v in procs.items()}
wpid, lpid = pid.get('workers'), pid.get('links')
workers = {t: n for (p, t), n in rows.items() if p == wpid}
links = {t: n for (p, t), n in rows.items() if p == lpid}
tasks = [e for e in ev if e['ph'] == 'X' and e['pid'] == wpid]
xfers = [e for e in ev if e['ph'] == 'X' and lpid is not None and e['pid'] == lpid]
stats = json.load(open(sys.argv[3])) if len(sys.argv) > 3 else None

def need(cond, msg):
    if not cond:
        print(msg)
        sys.exit(1)

def link_names():
    # a link's rows: its name, then "name (2)", ... for transfers overlapping in time
    return sorted({n.rsplit(' (', 1)[0] for n in links.values()})

def no_overlap():
    rows = {}
    for e in xfers:
        rows.setdefault(e['tid'], []).append((e['ts'], e['ts'] + e['dur']))
    for v in rows.values():
        v.sort()
        if any(b[0] < a[1] for a, b in zip(v, v[1:])):
            return False
    return True

def per_link():
    out = {}
    for e in xfers:
        k = e['args']['link']
        assert links[e['tid']].rsplit(' (', 1)[0] == k, (links[e['tid']], k)
        n, b = out.get(k, (0, 0))
        out[k] = (n + 1, b + e['args']['bytes'])
    return out

if what == 'rows':
    names = sorted(workers.values())
    need(wpid is not None and workers, 'no worker rows')
    cpus = [n for n in names if n.startswith('CPU ')]
    need(len(cpus) == stats['run']['cpu_workers'], 'CPU rows %s, stats say %d' % (names, stats['run']['cpu_workers']))
    need(all(e['tid'] in workers for e in tasks), 'a task on a row without a name')
elif what == 'tasks':
    want = {k: v for k, v in stats['tasks'].items() if v}
    need(len(tasks) == sum(want.values()), '%d task events, %d tasks run' % (len(tasks), sum(want.values())))
    got = Counter(e['args']['codelet'] for e in tasks)
    need(got == Counter(want), 'per codelet %s, stats %s' % (dict(got), want))
    names = Counter(e['name'] for e in tasks)
    # two CFG passes: a pass's tasks carry its name, the shared ones none
    need({'sa.qkv.cond', 'sa.qkv.uncond', 'ffn.0.cond', 'ffn.0.uncond', 'text_embed.cond',
          'text_embed.uncond', 'patch_embed.cond', 'head.uncond', 'solver', 'time_embed'}
         <= set(names), 'task names %s' % sorted(names))
    blk = [n for n in names if n.startswith(('sa.', 'ca.', 'ffn.', 'norm'))]
    need(all(n.endswith(('.cond', '.uncond')) for n in blk), 'block tasks without a pass %s' % blk)
    need(all(names[n] == names[n[:-len('.cond')] + '.uncond'] for n in blk if n.endswith('.cond')),
         'the two passes differ %s' % names)
    need(not any(n.endswith(('.cond', '.uncond')) for n in ('solver', 'time_embed', 'cfg')
                 if n in names), 'shared tasks with a pass')
    need(d['otherData']['tasks'] == len(tasks) and d['otherData']['skipped_records'] == 0,
         'otherData %s' % d['otherData'])
elif what == 'times':
    wall = float(sys.argv[4])
    for e in tasks + xfers:
        need(math.isfinite(e['ts']) and math.isfinite(e['dur']), 'bad numbers %s' % e)
        need(e['dur'] >= 0 and e['ts'] >= 0 and e['ts'] + e['dur'] <= wall,
             'event outside the run (%.0f us): %s' % (wall, e))
elif what == 'no-links':
    need(stats['links'] == [] and not links and not xfers, 'links %s' % links)
elif what == 'links':
    want = {'%s -> %s' % (l['src'], l['dst']): (l['transfers'], l['bytes'])
            for l in stats['links'] if l['transfers']}
    need(want, 'the run made no transfer: %s' % stats['links'])
    need(link_names() == sorted(want), 'link rows %s, stats %s' % (links, want))
    need(no_overlap(), 'overlapping transfers on one row')
    need(per_link() == want, 'per link %s, stats %s' % (per_link(), want))
    need(all(e['args']['bytes'] > 0 and e['args']['kind'] for e in xfers), 'transfer args')
elif what == 'fixture':
    need(sorted(workers.values()) == ['CPU 0', 'OpenCL 0', 'worker 5'], 'workers %s' % workers)
    need(d['otherData']['memory_nodes'] == ['NUMA 0', 'OpenCL 0', 'Disk 0'],
         'nodes %s' % d['otherData']['memory_nodes'])
    need(link_names() == ['NUMA 0 -> Disk 0', 'NUMA 0 -> OpenCL 0', 'OpenCL 0 -> NUMA 0'],
         'links %s' % links)
    need(no_overlap(), 'overlapping transfers on one row')
    need(per_link() == {'NUMA 0 -> OpenCL 0': (2, 6144), 'OpenCL 0 -> NUMA 0': (1, 1024),
                        'NUMA 0 -> Disk 0': (1, 512)}, 'per link %s' % per_link())
    x = {e['args']['bytes']: e for e in xfers}
    need(x[4096]['ts'] == 1000.0 and x[4096]['dur'] == 500.0 and x[4096]['name'] == 'w0'
         and x[4096]['args']['kind'] == 'fetch' and x[1024]['args']['kind'] == 'prefetch',
         'transfer %s' % x)
    by = {e['args'].get('job'): e for e in tasks}
    need(sorted(by) == [1, 2, 3, 7], 'tasks %s' % sorted(by))
    need(workers[by[1]['tid']] == 'CPU 0' and by[1]['name'] == 'sa.qkv'
         and by[1]['args']['codelet'] == 'linear' and by[1]['args']['model'] == 'dit_linear'
         and by[1]['ts'] == 1500.0 and by[1]['dur'] == 250.0, 'task 1 %s' % by[1])
    need(workers[by[2]['tid']] == 'OpenCL 0' and by[2]['name'] == 'a "quoted"\\ \ufffd name'
         and by[2]['args']['codelet'] == 'starpu_internal', 'task 2 %s' % by[2])
    need(by[3]['name'] == 'glued' and workers[by[7]['tid']] == 'worker 5', 'tasks 3, 7')
    need(d['otherData']['skipped_records'] == 3, 'skipped %s' % d['otherData'])
    mem = [(e['name'], e['ts'], e['args']['MiB']) for e in d['traceEvents']
           if e['ph'] == 'C' and e['name'].startswith('MiB used on ')]
    need(mem == [('MiB used on NUMA 0', 400.0, 0.5), ('MiB used on OpenCL 0', 600.0, 1.25)],
         'memory %s' % mem)
else:
    need(False, 'unknown check ' + what)
PY
chk() { "$PYTHON_NUMPY" "$T/check.py" "$@"; }

# A CPU-only run, from an empty working directory: nothing may land there.
mkdir -p "$T/cwd"
t0=$(date +%s%N)
(cd "$T/cwd" && "$DITSTAR" generate --quiet --steps 2 --trace "$T/tr" \
	--stats-json "$T/stats.json") 2>"$T/err"
rc=$?
wall_us=$((($(date +%s%N) - t0) / 1000))
if [ $rc -eq 0 ]; then
	ok "generate --trace exits 0"
else
	fail "generate --trace exits 0 (rc $rc)"
	sed 's/^/# /' "$T/err"
fi
check "paje.trace is not empty" test -s "$T/tr/paje.trace"
check "tasks.rec: each task carries its step (starpu_iteration_push), 0 and 1 of 2" sh -c \
	"test \"\$(sed -n 's/^Iteration: \([0-9]*\).*/\1/p' '$T/tr/tasks.rec' | sort -u | tr '\n' ' ')\" = '0 1 '"
check "tasks.rec: each block's tasks carry the block as subiteration, 0 to 3 of each step" sh -c \
	"test \"\$(sed -n 's/^Iteration: [0-9]* \([0-9]*\)$/\1/p' '$T/tr/tasks.rec' | sort -u | tr '\n' ' ')\" = '0 1 2 3 '"
check "StarPU's .rec files and the raw FxT file are there" \
	test -s "$T/tr/tasks.rec" -a -f "$T/tr/comms.rec" -a -s "$T/tr/prof_file_0"
check "nothing in the working directory, no temporary file" sh -c \
	"[ -z \"\$(ls -A '$T/cwd')\" ] && ! ls '$T/tr' | grep -q tmp"
check "trace.json: a named row per worker" chk "$T/tr/trace.json" rows "$T/stats.json"
check "trace.json: one slice per executed task, per codelet as in the stats" \
	chk "$T/tr/trace.json" tasks "$T/stats.json"
check "trace.json: slices lie within the run" chk "$T/tr/trace.json" times "$T/stats.json" "$wall_us"
check "trace.json: no link rows on a CPU-only run" chk "$T/tr/trace.json" no-links "$T/stats.json"

# Out-of-core to a StarPU disk swap with a small RAM limit: the activations move between
# RAM and disk, and every transfer StarPU counted shows on its link row. (Without
# STARPU_PREFETCH=0, StarPU 1.4 sometimes livelocks with a RAM limit and a disk.)
mkdir -p "$T/swap"
t0=$(date +%s%N)
STARPU_DISK_SWAP="$T/swap" STARPU_DISK_SWAP_BACKEND=unistd STARPU_DISK_SWAP_SIZE=256 \
	STARPU_LIMIT_CPU_MEM=6 STARPU_PREFETCH=0 "$DITSTAR" generate --quiet --steps 2 --trace "$T/trd" \
	--stats-json "$T/stats_d.json" 2>"$T/err"
rc=$?
wall_us=$((($(date +%s%N) - t0) / 1000))
if [ $rc -eq 0 ]; then
	ok "out-of-core run with --trace exits 0"
else
	fail "out-of-core run with --trace exits 0 (rc $rc)"
	sed 's/^/# /' "$T/err"
fi
check "trace.json: link rows with each link's transfers and bytes" \
	chk "$T/trd/trace.json" links "$T/stats_d.json"
check "trace.json: tasks and transfers lie within the run" \
	chk "$T/trd/trace.json" times "$T/stats_d.json" "$wall_us"

# Paje tools read the traces: pj_dump (Debian's pajeng) on a CPU run, a disk-offload
# run (the transfer tasks' names) and an OpenCL-offload run, without an error
"$DITSTAR" generate --quiet --steps 2 --offload disk --offload-dir "$T/pjstore" \
	--resident-chunks 0 --trace "$T/trdisk" --stats-json "$T/stats_pj.json" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
# the chunks' data as StarVZ reads it (data.rec): named by their blocks, as their
# transfers are, not all "chunk"
check "data.rec names each chunk by its blocks (blk_K-K), as its transfer task" \
	"$PYTHON_NUMPY" - "$T/trdisk" <<'PY'
import re, sys
names = re.findall(r'^Name: (\S+)$', open(sys.argv[1] + '/data.rec').read(), re.M)
blk = sorted({n for n in names if re.match(r'^blk_\d+-\d+$', n)})
assert 'chunk' not in names and len(blk) >= 2, (blk, 'chunk' in names)
xf = set(re.findall(r'^Name: xfer_(blk_\d+-\d+)$', open(sys.argv[1] + '/tasks.rec').read(), re.M))
assert xf and xf <= set(blk), (xf, blk)
PY
# StarVZ reads the .rec files through recutils' rec2csv: each converts, a row a record
if command -v rec2csv >/dev/null; then
	bad=
	for f in tasks.rec data.rec sched_tasks.rec; do
		rec2csv "$T/trdisk/$f" >"$T/rec.csv" 2>"$T/err" || bad="$bad $f ($(head -c 80 "$T/err"))"
		[ "$(($(wc -l <"$T/rec.csv") - 1))" -ge 1 ] || bad="$bad $f (no row)"
	done
	check "rec2csv (recutils, StarVZ's reader) converts tasks.rec, data.rec and sched_tasks.rec${bad:+:$bad}" \
		test -z "$bad"
else
	ok "# SKIP rec2csv not installed (./setup.sh installs recutils)"
fi
# trace.json's memory process: the MiB StarPU holds on each node, read here from
# paje.trace's "use" variables, reaching the peak the stats sampled
check "trace.json: MiB used per memory node as paje.trace's samples, up to the stats' peak" \
	"$PYTHON_NUMPY" - "$T/trdisk" "$T/stats_pj.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1] + '/trace.json'))
stats = json.load(open(sys.argv[2]))
node_name = {n['node']: n['name'] for n in stats['memory_nodes']}
want = []
for line in open(sys.argv[1] + '/paje.trace'):
    f = line.rstrip('\n').split('\t')
    if f[0] == '13' and f[3] == 'use' and f[2].startswith('mm'):
        want.append(('MiB used on ' + node_name[int(f[2][2:])], round(float(f[1]) * 1e3, 3),
                     float(f[4])))
got = [(e['name'], e['ts'], e['args']['MiB']) for e in d['traceEvents']
       if e['ph'] == 'C' and e['name'].startswith('MiB used on ')]
assert len(got) == len(want) > 10, (len(got), len(want))
for g, w in zip(got, want):
    assert g[0] == w[0] and abs(g[1] - w[1]) < 1e-3 and abs(g[2] - w[2]) < 1e-6, (g, w)
assert all(e['pid'] == 3 for e in d['traceEvents'] if e['name'].startswith('MiB used on '))
ram = [n for n in stats['memory_nodes'] if n['kind'] == 'ram'][0]
top = max(m for n, _, m in got if n == 'MiB used on ' + ram['name'])
assert ram['starpu_peak_bytes'] > 0 and top * 2**20 >= ram['starpu_peak_bytes'] - 16, (top, ram)
PY
pj() { # DESC DIR: pj_dump, then ViTE (without a display: its SVG export)
	if ! command -v pj_dump >/dev/null 2>&1; then
		fail "$1 (pj_dump not installed: setup.sh installs pajeng)"
	elif pj_dump "$2/paje.trace" >"$T/pj.out" 2>&1 && ! grep -qi 'error\|exception' "$T/pj.out"; then
		ok "$1 ($(grep -c '^State' "$T/pj.out") states)"
	else
		fail "$1"
		grep -i -m 3 'error\|exception\|contents' "$T/pj.out" | sed 's/^/# /'
	fi
	v="ViTE reads it too: ${1#pj_dump reads }"
	rm -rf "$T/vite" && mkdir -p "$T/vite/xdg" && chmod 700 "$T/vite/xdg"
	if ! command -v vite >/dev/null 2>&1; then
		fail "$v (vite not installed: setup.sh installs it)"
	elif (cd "$T/vite" && QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR="$T/vite/xdg" \
		timeout 120 vite "$2/paje.trace" -e "$T/vite/out.svg") >"$T/vite.out" 2>&1 &&
		grep -q '^0 errors and 0 warnings were found during parsing' "$T/vite.out" &&
		test -s "$T/vite/out.svg"; then
		ok "$v"
	else
		fail "$v"
		grep -i -m 3 'error\|warning' "$T/vite.out" "$T/vite/log.txt" 2>/dev/null | sed 's/^/# /'
	fi
}
pj "pj_dump reads the CPU run's paje.trace" "$T/tr"
# the check can fail: a task name with blanks (what the transfer tasks once had) is
# what ViTE reports as errors
mkdir -p "$T/bad"
sed 's/"sa\.qkv\.cond"/"sa qkv cond"/; s/\tsa\.qkv\.cond\t/\tsa qkv cond\t/' "$T/tr/paje.trace" >"$T/bad/paje.trace"
if command -v vite >/dev/null 2>&1 && grep -q 'sa qkv cond' "$T/bad/paje.trace" &&
	(cd "$T/bad" && QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR="$T/vite/xdg" \
		timeout 120 vite "$T/bad/paje.trace" -e "$T/bad/out.svg") 2>&1 |
	grep -q '^ERROR: [1-9][0-9]* errors'; then
	ok "ViTE reports the errors of a trace whose task name has blanks"
else
	fail "ViTE reports the errors of a trace whose task name has blanks"
fi
check "paje.trace holds the handles' memory states StarVZ reads (-memory-states)" sh -c \
	"grep -q 'data state owner' '$T/tr/paje.trace' && grep -q 'data state invalid' '$T/tr/paje.trace'"
pj "pj_dump reads the disk-offload run's paje.trace (xfer_blk_a-b tasks)" "$T/trdisk"
# LTX-2's four passes a step: each pass's tasks carry its role, as many in cond as in
# uncond (the same graph), fewer in the perturbed and isolated passes (the attention they skip)
"$DITSTAR" generate --quiet --model tiny-ltx2 --steps 1 --stg-blocks 1 --trace "$T/trltx" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
check "tasks.rec: LTX-2's tasks carry their pass (cond, uncond, perturbed, isolated)" \
	"$PYTHON_NUMPY" - "$T/trltx/tasks.rec" <<'PY'
import sys
from collections import Counter
names = [l[6:].strip() for l in open(sys.argv[1]) if l.startswith('Name: ')]
roles = Counter(n.rsplit('.', 1)[1] for n in names
                if n.endswith(('.cond', '.uncond', '.perturbed', '.isolated')))
assert set(roles) == {'cond', 'uncond', 'perturbed', 'isolated'}, roles
assert roles['cond'] == roles['uncond'] > roles['perturbed'] > 0 and roles['isolated'] > 0, roles
per = {r: Counter(n.rsplit('.', 1)[0] for n in names if n.endswith('.' + r)) for r in roles}
assert per['cond'] == per['uncond'], (per['cond'] - per['uncond'], per['uncond'] - per['cond'])
# the perturbed pass passes the values by in the STG block (attn1.skip) instead of attending
assert set(per['perturbed']) - set(per['cond']) == {'attn1.skip'}, per['perturbed']
assert set(per['isolated']) < set(per['cond']), per['isolated']
PY
pj "pj_dump reads the LTX-2 run's paje.trace (pass-named tasks)" "$T/trltx"
if "$DITSTAR" generate --quiet --steps 1 --workers opencl --output "$T/oclprobe" 2>/dev/null; then
	"$DITSTAR" generate --quiet --steps 2 --workers opencl --offload cpu --resident-chunks 0 \
		--trace "$T/trocl" 2>"$T/err" || sed 's/^/# /' "$T/err"
	pj "pj_dump reads the OpenCL-offload run's paje.trace" "$T/trocl"
	# heteroprio with CPU and OpenCL workers: each task's priority is its bucket
	# (src/runtime/dit_heteroprio.h), by its op and by who can run it; the transfers to the
	# OpenCL device, which only its worker runs, in the device's own bucket
	"$DITSTAR" generate --quiet --steps 2 --sched heteroprio --workers all \
		--trace "$T/trhp" 2>"$T/err" || sed 's/^/# /' "$T/err"
	"$DITSTAR" generate --quiet --steps 2 --sched heteroprio --workers opencl --offload cpu \
		--resident-chunks 0 --trace "$T/trhpx" 2>"$T/err" || sed 's/^/# /' "$T/err"
	check "heteroprio, CPU + OpenCL: buckets GEMM 0, attention 1, others 2, transfers 4" \
		"$PYTHON_NUMPY" - "$T/trhp/tasks.rec" "$T/trhpx/tasks.rec" <<'PY'
import sys
def tasks(path):
    out, cur = [], {}
    for line in open(path).read().split('\n') + ['']:
        if not line:
            if 'Model' in cur and int(cur.get('WorkerId', -1)) >= 0:
                out.append(cur)
            cur = {}
        elif ': ' in line:
            k, v = line.split(': ', 1)
            cur[k] = v
    return out
gemm = {'dit_linear', 'dit_patch_embed', 'dit_text_embed', 'dit_head'}
seen = set()
for t in tasks(sys.argv[1]):
    m, p = t['Model'], int(t['Priority'])
    want = 0 if m in gemm else 1 if m == 'dit_attention' else 2
    assert p == want, (t['Name'], m, p)
    seen.add(p)
assert seen == {0, 1, 2}, seen
x = [t for t in tasks(sys.argv[2]) if t['Name'].startswith('xfer')]
assert x and all(int(t['Priority']) == 4 for t in x), [(t['Name'], t['Priority']) for t in x]
PY
else
	ok "pj_dump on an OpenCL-offload run # SKIP no OpenCL device"
	ok "ViTE on an OpenCL-offload run # SKIP no OpenCL device"
	ok "heteroprio buckets on CPU + OpenCL # SKIP no OpenCL device"
fi

# Each task's step (iteration), block (subiteration, -1 outside the blocks) and, with
# --priorities critical-path, its b-level as priority, in Paje's WS events (what StarVZ
# reads): 2 steps of the tiny model's 4 blocks, 10 levels.
"$DITSTAR" generate --quiet --steps 2 --sched prio --priorities critical-path \
	--trace "$T/trprio" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "paje.trace: step, block and the critical-path priority of every task" \
	"$PYTHON_NUMPY" - "$T/trprio/paje.trace" <<'PY'
import sys
seen = {}
for line in open(sys.argv[1]):
    f = line.rstrip('\n').split('\t')
    if f[0] != '20' or f[3] != 'WS':
        continue
    name, prio, it, sub = f[4].strip('"'), int(f[11]), int(f[-3]), int(f[-2])
    seen.setdefault((it, sub), set()).add(prio)
    if name.endswith(('.cond', '.uncond')):
        name = name.rsplit('.', 1)[0]
    if name.startswith(('sa.', 'ca.', 'ffn.', 'norm')):
        assert it in (0, 1) and 0 <= sub < 4, (name, it, sub)
        # blocks left to the end of the run: (2 - step) x 5 - (block + 1)
        assert prio == (2 - it) * 5 - (sub + 1), (name, it, sub, prio)
    elif name in ('head', 'solver', 'cfg', 'time_embed', 'patch_embed', 'text_embed'):
        assert sub == -1 and prio == (2 - it) * 5, (name, it, sub, prio)
assert sorted(k for k in seen if k[1] >= 0) == [(s, b) for s in (0, 1) for b in range(4)], seen
PY

# ditstar trace summarize against a reading of tasks.rec and trace.json written here:
# makespan, busy per worker and per step, the critical path, transfers hidden/exposed.
summ() { # DESC DIR
	if "$DITSTAR" trace summarize "$2" --json >"$T/summ.json" 2>"$T/err" &&
		"$DITSTAR" trace summarize "$2" >"$T/summ.txt" 2>>"$T/err" &&
		grep -q "^transfers: " "$T/summ.txt" &&
		"$PYTHON_NUMPY" - "$2" "$T/summ.json" <<'PY'; then
import json, sys
tasks, cur = [], {}
for line in open(sys.argv[1] + '/tasks.rec').read().split('\n') + ['']:
    if not line:
        if 'JobId' in cur and 'StartTime' in cur and 'EndTime' in cur and int(cur.get('WorkerId', -1)) >= 0:
            tasks.append(cur)
        cur = {}
        continue
    k, _, v = line.partition(': ')
    cur[k] = v
job = {int(t['JobId']): t for t in tasks}
st = lambda t: float(t['StartTime']) / 1e3
en = lambda t: float(t['EndTime']) / 1e3
s = json.load(open(sys.argv[2]))
make = max(map(en, tasks)) - min(map(st, tasks))
near = lambda a, b: abs(a - b) <= 1e-6 + 1e-6 * abs(b)
assert s['tasks'] == len(tasks) and near(s['makespan_seconds'], make), (s['tasks'], len(tasks))
for w, o in enumerate(s['workers']):
    busy = sum(en(t) - st(t) for t in tasks if int(t['WorkerId']) == w)
    assert near(o['busy_seconds'], busy), (w, o, busy)
steps = sorted({int(t['Iteration'].split()[0]) for t in tasks})
assert [x['step'] for x in s['steps']] == steps, s['steps']
# a step's window: from the end of the step before (the first: the run's first task) to
# the end of its last task; the windows cut the makespan; busy: any task's time inside it
frm = min(map(st, tasks))
for x in s['steps']:
    mine = [t for t in tasks if int(t['Iteration'].split()[0]) == x['step']]
    to = max(map(en, mine))
    assert near(x['span_seconds'], to - frm), (x, to - frm)
    for w, f in enumerate(x['busy_fraction']):
        b = sum(max(0.0, min(en(t), to) - max(st(t), frm)) for t in tasks
                if int(t['WorkerId']) == w)
        assert abs(f * (to - frm) - b) <= 1e-6 + 1e-6 * b, (x, w, b)
    frm = to
assert near(sum(x['span_seconds'] for x in s['steps']), make), s['steps']
work = sum(en(t) - st(t) for t in tasks) / len(s['workers'])
assert near(s['work_bound_seconds'], work) and s['work_bound_seconds'] <= make + 1e-9, s
cp = {}
for j in sorted(job):  # dependencies come earlier in the job order
    t = job[j]
    deps = [int(d) for d in t.get('DependsOn', '').split() if int(d) in cp]
    cp[j] = en(t) - st(t) + max([cp[d] for d in deps] or [0])
assert near(s['critical_path_seconds'], max(cp.values())), (s['critical_path_seconds'], max(cp.values()))
assert s['critical_path_seconds'] <= make + 1e-9
xf = [e for e in json.load(open(sys.argv[1] + '/trace.json'))['traceEvents'] if e.get('cat') == 'transfer']
assert s['transfers']['count'] == len(xf) and near(s['transfers']['seconds'], sum(e['dur'] for e in xf) / 1e6)
assert sum(l['bytes'] for l in s['transfers']['links']) == sum(e['args']['bytes'] for e in xf)
assert 0 <= s['transfers']['hidden_fraction'] <= 1 and s['transfers']['exposed_seconds'] >= 0
print('# %d tasks, critical path %.4f of %.4f s, %d transfers' % (len(tasks), max(cp.values()), make, len(xf)))
PY
		ok "$1"
	else
		sed 's/^/# /' "$T/err"
		fail "$1"
	fi
}
check "trace.json counters: transfers in flight per node back to 0, MiB arrived = the transfers' bytes" \
	"$PYTHON_NUMPY" - "$T/trdisk/trace.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
xf = [e for e in ev if e.get('cat') == 'transfer']
cs = [e for e in ev if e['ph'] == 'C']
assert xf and cs, (len(xf), len(cs))
for e in cs:  # the trace-event format's counter: pid, ts, name, numeric args
    assert set(e) == {'ph', 'pid', 'ts', 'name', 'args'} and isinstance(e['ts'], (int, float)), e
    assert all(isinstance(v, (int, float)) for v in e['args'].values()), e
    assert e['name'].startswith(('transfers in flight to ', 'MiB arrived at ', 'MiB used on ')), e
cs = [e for e in cs if not e['name'].startswith('MiB used on ')]  # checked above
last = {}
for e in sorted(cs, key=lambda e: e['ts']):
    v = list(e['args'].values())[0]
    assert v >= 0, e
    last[e['name']] = v
for k, v in last.items():
    if k.startswith('transfers in flight'):
        assert v == 0, (k, v)
    else:
        node = k[len('MiB arrived at '):]
        want = sum(x['args']['bytes'] for x in xf if x['args']['link'].endswith('-> ' + node))
        assert abs(v - want / 2**20) < 1e-3, (k, v, want)
PY
check "trace.json flows: each from a transfer's slice to the start of a task slice after it; a marker per step" \
	"$PYTHON_NUMPY" - "$T/trdisk/trace.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
xs = [e for e in ev if e['ph'] == 'X']
s = {e['id']: e for e in ev if e['ph'] == 's'}
f = {e['id']: e for e in ev if e['ph'] == 'f'}
assert s and set(s) == set(f), (len(s), len(f))
for i in s:
    a, b = s[i], f[i]
    assert a['cat'] == b['cat'] == 'flow' and b['bp'] == 'e' and b['ts'] >= a['ts'], (a, b)
    assert any(x['cat'] == 'transfer' and x['pid'] == a['pid'] and x['tid'] == a['tid'] and
               x['ts'] <= a['ts'] <= x['ts'] + x['dur'] for x in xs), a
    assert any(x['cat'] == 'task' and x['tid'] == b['tid'] and abs(x['ts'] - b['ts']) < 1e-3
               for x in xs), b
marks = [e for e in ev if e['ph'] == 'i']
assert [m['name'] for m in marks] == ['step 0', 'step 1'] and all(m['s'] == 'g' for m in marks), marks
PY
summ "trace summarize (CPU run): makespan, busy per worker and step, critical path as tasks.rec says" "$T/trprio"
summ "trace summarize (disk-offload run): the same, and its transfers as trace.json draws them" "$T/trdisk"
"$DITSTAR" trace summarize "$T/trd" --json >"$T/summ_d.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "a traced run's stats hold the trace summary, and hidden_fraction is the trace's" \
	"$PYTHON_NUMPY" - "$T/stats_d.json" "$T/summ_d.json" <<'PY'
import json, sys
s, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert s['trace'] == t, (s.get('trace'), t)
assert s['transfers']['hidden_fraction_from'] == 'trace', s['transfers']
assert s['transfers']['hidden_fraction'] == t['transfers']['hidden_fraction'], s['transfers']
PY
expect_fail "trace summarize of a folder without tasks.rec: an error naming it" 1 \
	"$T/empty2/tasks.rec" "$DITSTAR" trace summarize "$T/empty2"
expect_fail "trace summarize without a folder: a usage error" 2 "usage: ditstar trace summarize" \
	"$DITSTAR" trace summarize
# special and huge files in its place: refused at once, never waited on or held whole
mkdir -p "$T/fifo_tr" "$T/long_tr"
mkfifo "$T/fifo_tr/tasks.rec"
expect_fail "trace summarize: a FIFO as tasks.rec refused by name, not waited on" 1 \
	"fifo_tr/tasks.rec: is a FIFO, not a regular file" timeout 60 "$DITSTAR" trace summarize "$T/fifo_tr"
head -c 3000000 /dev/zero | tr '\0' 'x' >"$T/long_tr/tasks.rec"
expect_fail "trace summarize: a line of megabytes refused, not held whole" 1 \
	"long_tr/tasks.rec: a NUL byte or a line over 1048576 bytes: not a trace" \
	"$DITSTAR" trace summarize "$T/long_tr"
# a sparse file of gigabytes (zeros): refused at its first byte, not read through
mkdir -p "$T/sparse_tr"
truncate -s 3G "$T/sparse_tr/tasks.rec"
expect_fail "trace summarize: a 3 GB sparse file refused at its first byte" 1 \
	"sparse_tr/tasks.rec: a NUL byte or a line over 1048576 bytes: not a trace" \
	timeout 60 "$DITSTAR" trace summarize "$T/sparse_tr"
rm -f "$T/sparse_tr/tasks.rec"

# A Paje file with an event out of time order (as StarPU's merge of its threads'
# buffers sometimes writes) and a definition after timed events: put in order, the
# definitions first; a file in order is left byte for byte
cat >"$T/order.paje" <<'PAJE'
%EventDef PajeDefineContainerType 1
% Alias string
% Type string
% Name string
%EndEventDef
%EventDef PajeCreateContainer 7
% Time date
% Alias string
% Type string
% Container string
% Name string
%EndEventDef
%EventDef PajeSetVariable 13
% Time date
% Container string
% Type string
% Value double
%EndEventDef
1	P	0	Program
7	0.000000	p	P	0	program
1	V	P	Variable
13	2.000000	p	V	1.0
13	1.500000	p	V	2.0
13	3.000000	p	V	3.0
PAJE
cp "$T/order.paje" "$T/order.orig"
"$CONVERT" --sort "$T/order.paje" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "an out-of-order Paje file is put in order, definitions first" sh -c \
	"sed -n '/^[0-9]/p' '$T/order.paje' | cut -f1,2 | tr '\t\n' ':,' |
	 grep -qx '1:P,1:V,7:0.000000,13:1.500000,13:2.000000,13:3.000000,' &&
	 ! cmp -s '$T/order.paje' '$T/order.orig'"
cp "$T/order.paje" "$T/order.sorted"
"$CONVERT" --sort "$T/order.paje" 2>/dev/null
check "a Paje file in order is left as it is" cmp -s "$T/order.paje" "$T/order.sorted"

# Bad trace directories.
: >"$T/file"
expect_fail "--trace under a regular file names the path" 2 "$T/file/sub" \
	"$DITSTAR" generate --quiet --steps 1 --trace "$T/file/sub"
expect_fail "--trace naming a regular file names the path" 2 "$T/file" \
	"$DITSTAR" generate --quiet --steps 1 --trace "$T/file"

# A hand-written trace: a CPU worker on node 0, an OpenCL worker on node 1, a disk
# (node 2, no worker); records that did not run, that are malformed, or that lack the
# blank line before the next; links without an end or a start; lines cut short.
F="$T/fx"
mkdir -p "$F"
cat >"$F/tasks.rec" <<'REC'
Name: sa.qkv
Model: dit_linear
JobId: 1
WorkerId: 0
StartTime: 1.500000
EndTime: 1.750000
Footprint: fcbd27ae
GFlop: 0.5

Name: not run
JobId: 4
SubmitTime: 1.0

Name: bad time
JobId: 5
WorkerId: 0
StartTime: soon
EndTime: 2.0

Name: backwards
JobId: 6
WorkerId: 1
StartTime: 3.0
EndTime: 2.0

Name: no end
JobId: 8
WorkerId: 1
StartTime: 3.0
Name: glued
Model: dit_cfg
JobId: 3
WorkerId: 0
StartTime: 4.0
EndTime: 4.5
unknown line without a colon
Extra: ignored

JobId: 7
WorkerId: 5
StartTime: 0.25
EndTime: 0.5
REC
printf '\nName: a "quoted"\\ \377 name\nModel: starpu_internal\nJobId: 2\nWorkerId: 1\nStartTime: 2.0\nEndTime: 2.125\n' \
	>>"$F/tasks.rec"
# Paje: the event definitions StarPU writes (fields in this order), then the events.
cat >"$F/paje.trace" <<'PAJE'
%EventDef	PajeCreateContainer	7
%	Time	date
%	Alias	string
%	Type	string
%	Container	string
%	Name	string
%EndEventDef
%EventDef	PajeSetState	10
%	Time	date
%	Container	string
%	Type	string
%	Value	string
%EndEventDef
%EventDef	PajeEndLink	19
%	Time	date
%	Type	string
%	Container	string
%	Value	string
%	EndContainer	string
%	Key	string
%EndEventDef
%EventDef	PajeStartLink	24
%	Time	date
%	Type	string
%	Container	string
%	Value	string
%	StartContainer	string
%	Key	string
%	Handle	string
%	HName	string
%	X	string
%	Y	string
%EndEventDef
%EventDef	PajeSetVariable	13
%	Time	date
%	Container	string
%	Type	string
%	Value	double
%EndEventDef
7	0.0	p	P	MPIroot	program
7	0.1	mn0	Mn	p	MEMNODE0
7	0.1	mm0	Mm	mn0	MEMMANAGER0
7	0.1	t11	T	mn0	T0
7	0.1	w0	W	t11	CPU0
7	0.2	mn1	Mn	p	MEMNODE1
7	0.2	mm1	Mm	mn1	MEMMANAGER1
7	0.2	t12	T	mn1	T1
7	0.2	w1	W	t12	OpenCL0
7	0.3	mn2	Mn	p	MEMNODE2
7	0.3	mm2	Mm	mn2	MEMMANAGER2
10	0.5	w0	WS	"Idle"
13	0.4	mm0	use	0.5
13	0.6	mm1	use	1.25
13	0.7	mm9	use	3
13	0.8	mm0	use	-1
13	0.9	mm0	use	nan
13	1.0	mm0	bwi_mm	5
13	1.1	w0	use	7
13	x	mm0	use	2
24	1.000000000	F	p	4096	mm0	com_1	55aa01	"w0"	0	0
19	1.500000000	F	p	4096	mm1	com_1
24	2.000000000	PF	p	1024	mm1	com_2	55aa02	""	0	0
24	2.100000000	TF	p	2048	mm0	com_3	55aa03	"w1"	0	0
19	2.200000000	PF	p	1024	mm0	com_2
19	2.300000000	TF	p	2048	mm1	com_3
24	2.500000000	IF	p	512	mm0	com_4	55aa04	"x"	0	0
19	2.600000000	IF	p	512	mm2	com_4
24	3.000000000	F	p	99	mm0	com_5	55aa05	"never ends"	0	0
19	3.100000000	F	p	77	mm1	com_404
24	3.2
19
garbage line
24	x	F	p	12	mm0	com_6
PAJE
"$CONVERT" "$F" 2>"$T/err"
rc=$?
if [ $rc -eq 0 ] && chk "$F/trace.json" fixture >"$T/out" 2>&1; then
	ok "hand-written trace: rows, node names, tasks, transfers, skipped records"
else
	fail "hand-written trace: rows, node names, tasks, transfers, skipped records (rc $rc)"
	sed 's/^/# /' "$T/err" "$T/out"
fi

# Corrupted copies of both files: the converter never crashes and writes valid JSON, or
# refuses a file holding a NUL byte in one line.
if "$PYTHON_NUMPY" - "$F" "$T/fz" "$CONVERT" >"$T/out" 2>&1 <<'PY'; then
import json, os, random, shutil, subprocess, sys
src, dst, conv = sys.argv[1:4]
r = random.Random(5)
orig = {n: open(os.path.join(src, n), 'rb').read() for n in ('tasks.rec', 'paje.trace')}
for i in range(150):
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    for n, b in orig.items():
        b = bytearray(b)
        for _ in range(r.randint(1, 20)):
            if not b:
                break
            op, p = r.randrange(3), r.randrange(len(b))
            if op == 0:
                b[p] = r.randrange(256)
            elif op == 1:
                del b[p:p + r.randint(1, 40)]
            else:
                b[p:p] = bytes(r.choice(b'\n\t :"%0123456789x') for _ in range(r.randint(1, 8)))
        if r.random() < 0.2:
            b = b[:r.randrange(len(b) + 1)]
        open(os.path.join(dst, n), 'wb').write(bytes(b))
    p = subprocess.run([conv, dst], capture_output=True)
    if p.returncode == 1 and p.stderr.count(b'\n') == 1 and b'not a trace' in p.stderr \
            and not os.path.exists(os.path.join(dst, 'trace.json')):
        continue  # a NUL byte the corruption put in: refused in one line, nothing written
    if p.returncode != 0:
        sys.exit('case %d: rc %d %s' % (i, p.returncode, p.stderr))
    json.load(open(os.path.join(dst, 'trace.json'), encoding='utf-8'))
PY
	ok "150 corrupted traces convert to valid JSON (or, holding a NUL byte, are refused)"
else
	fail "150 corrupted traces convert to valid JSON (or, holding a NUL byte, are refused)"
	sed 's/^/# /' "$T/out"
fi

mkdir -p "$T/empty"
expect_fail "a missing tasks.rec is an error naming it" 1 "$T/empty/tasks.rec" "$CONVERT" "$T/empty"
: >"$T/empty/tasks.rec"
expect_fail "a missing paje.trace is an error naming it" 1 "$T/empty/paje.trace" \
	"$CONVERT" "$T/empty"
# A trace on a full file system: StarPU's converter checks none of its writes; the run
# fails in one line naming the trace folder and the previous trace's files stay as they
# were (a 4 MiB tmpfs, where mounting is allowed, filled to 600 KiB after one trace)
mkdir -p "$T/fs"
if mount -t tmpfs -o size=4m tmpfs "$T/fs" 2>/dev/null; then
	GF="$DITSTAR generate --model tiny --steps 1 --quiet --trace $T/fs/t"
	$GF --output "$T/fs1" 2>"$T/err" || sed 's/^/# /' "$T/err"
	cp -r "$T/fs/t" "$T/fs.prev"
	avail=$(df -k --output=avail "$T/fs" | tail -1)
	dd if=/dev/zero of="$T/fs/fill" bs=1k count=$((avail - 600)) 2>/dev/null
	expect_fail "a trace on a full file system: one line naming the folder" 1 \
		"^ditstar: $T/fs/t: trace not written \(.*No space left on device\)" \
		$GF --output "$T/fs2"
	check "the previous trace's files kept" sh -c "
		for f in paje.trace tasks.rec data.rec trace.json; do
			cmp -s '$T/fs.prev/'\$f '$T/fs/t/'\$f || exit 1
		done; [ -z \"\$(ls -A '$T/fs/t' | grep convert)\" ]"
	umount "$T/fs"
else
	ok "a trace on a full file system # SKIP cannot mount a tmpfs here"
	ok "the previous trace's files kept # SKIP cannot mount a tmpfs here"
fi
# --trace-steps: a window of the run; its steps' tasks, as many as the whole trace has
# of them, none of the others; the latents as without it
GW="$DITSTAR generate --model tiny --steps 4 --quiet"
$GW --trace "$T/wall" --output "$T/wall.lat" 2>"$T/err" || sed 's/^/# /' "$T/err"
$GW --trace "$T/win" --trace-steps 2:3 --output "$T/win.lat" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "--trace-steps 2:3 of 4: steps 2 and 3 recorded whole, no other" "$PYTHON_NUMPY" -c "
import collections, sys
def steps(d):
    c = collections.Counter()
    for line in open(d + '/tasks.rec'):
        if line.startswith('Iteration: '):
            c[int(line.split()[1])] += 1
    return c
a, w = steps('$T/wall'), steps('$T/win')
print('# all', dict(a), 'window', dict(w))
sys.exit(not (sorted(w) == [1, 2] and all(w[k] == a[k] for k in w) and len(a) == 4))"
identical "--trace-steps: the latents of the whole run" "$T/wall.lat" "$T/win.lat"
check "trace summarize reads the window: its iterations 1 and 2" sh -c \
	"[ \"\$('$DITSTAR' trace summarize '$T/win' | grep '^  step ' | cut -d: -f1 | tr -d ' ')\" = \"step1
step2\" ]"
$DITSTAR generate --model tiny-ltx2 --steps 2 --stg-blocks 1 --quiet --trace "$T/wltx" \
	--trace-steps 2 --output "$T/wltx.lat" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "--trace-steps 2 on LTX-2's four passes: step 2 alone" sh -c \
	"[ \"\$(grep '^Iteration: ' '$T/wltx/tasks.rec' | cut -d' ' -f2 | sort -u)\" = 1 ]"
expect_fail "--trace-steps without --trace" 2 "^ditstar: --trace-steps needs --trace DIR$" \
	$GW --trace-steps 2
expect_fail "--trace-steps past the run's steps, nothing made" 2 \
	"--trace-steps 4:7: needs A:B or A, the steps from 1 with A <= B <= 4" \
	sh -c "$GW --trace '$T/wbad' --trace-steps 4:7 || { [ ! -e '$T/wbad' ] && exit 2; }"
expect_fail "--trace-steps B before A" 2 "--trace-steps 5:3: needs A:B" \
	$GW --trace "$T/wbad" --trace-steps 5:3
check "without --trace StarPU records nothing" sh -c \
	"env -u STARPU_FXT_TRACE STARPU_FXT_PREFIX='$T/nofxt' '$DITSTAR' generate --quiet --steps 1 &&
	 [ ! -e '$T/nofxt' ]"
finish
