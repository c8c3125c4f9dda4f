# The planner's time model end to end and --offload auto (src/plan/dit_predict.c,
# src/plan/dit_auto.c): without a calibration the plan says what is missing and auto falls
# back to its rule (mode none here); `ditstar calibrate` writes the step profile and the
# chunk store's read rate; then `plan` predicts s/step (its parts adding up, and within
# a factor 50 of the measured step of the built-in tiny model: a bound that a unit
# slip (1000x) breaks and that no load of a shared machine reaches, not an accuracy
# claim; the 15% target is perf/bench-auto's), and auto under a host budget that cannot hold the model
# chooses disk mode, says so with its prediction, and its latents are byte-identical to
# --offload none. A budget below any plan is refused before any work. FIFOs in place of
# the cache's files block nothing.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch auto)
plan 12
# under ASan StarPU's own overhead, which the models do not hold, dominates: no time bound
sanitized=0
grep -q __asan_init "$(real_bin ditstar)" 2>/dev/null && sanitized=1

H="$T/home"
G="$DITSTAR generate --model tiny --cache-dir $T/cache --steps 3 --quiet"
GN="$DITSTAR generate --model tiny --cache-dir $T/cache --steps 3" # prints the auto note
D="--host-mem-limit 12M --offload-dir $T/store"
env STARPU_HOME="$H" $G --output "$T/none" 2>"$T/err" || sed 's/^/# /' "$T/err"

env STARPU_HOME="$H" "$DITSTAR" plan --model tiny --cache-dir "$T/cache" --json \
	>"$T/plan0.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "uncalibrated: no prediction, and the plan says to run ditstar calibrate" \
	"$PYTHON_NUMPY" - "$T/plan0.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j['calibrated'] is False and j['predicted_seconds_per_step'] is None, j
assert 'ditstar calibrate' in j['prediction']['why'], j['prediction']
PY

env STARPU_HOME="$H" $GN --offload auto --output "$T/auto0" 2>"$T/auto0.err" ||
	sed 's/^/# /' "$T/auto0.err"
if grep -q "offload auto: --offload none by the uncalibrated rule" "$T/auto0.err" &&
	cmp -s "$T/none" "$T/auto0"; then
	ok "uncalibrated --offload auto: the rule's mode none, said so, byte-identical"
else
	sed 's/^/# /' "$T/auto0.err"
	fail "uncalibrated --offload auto: the rule's mode none, said so, byte-identical"
fi

env STARPU_HOME="$H" "$DITSTAR" calibrate --model tiny --cache-dir "$T/cache" --steps 3 \
	--offload disk $D >"$T/cal.out" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "calibrate: the step profile and the chunk store's read rate, where they are" \
	"$PYTHON_NUMPY" - "$T/cal.out" "$H" <<'PY'
import os, re, sys
out, home = open(sys.argv[1]).read(), sys.argv[2]
prof = re.search(r'^step profile: (\S+)$', out, re.M)
assert prof and prof.group(1).startswith(home + '/.starpu/sampling/ditstar/profile-'), out
lines = open(prof.group(1)).read().splitlines()
assert lines[0] == 'ditstar-profile 1' and lines[1].startswith('key '), lines[:2]
# every block of the pool has its tasks, and so has the step outside the blocks
blocks = {int(l.split()[1]) for l in lines[2:] if l.split()[0] == '0'}
assert blocks == {0, 1, 2, 3}, blocks
assert any(l.split()[:2] == ['-1', '-1'] for l in lines[2:]), lines
assert any(l.split()[:2] == ['-1', '-2'] for l in lines[2:]), lines
rate = re.search(r'^chunk store reads: (\d+) MB/s .*median of 3 rounds, (\d+)-(\d+);', out, re.M)
assert rate and 0 < int(rate.group(2)) <= int(rate.group(1)) <= int(rate.group(3)), out
saved = float(open(home + '/.starpu/sampling/ditstar/disk-read.txt').read().split()[1])
assert abs(saved / 1e6 - int(rate.group(1))) <= 1, (saved, out)
PY

env STARPU_HOME="$H" "$DITSTAR" plan --model tiny --cache-dir "$T/cache" --offload disk $D \
	--json >"$T/plan1.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
env STARPU_HOME="$H" $G --steps 5 --offload disk $D --stats-json "$T/s1.json" \
	--output "$T/disk" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "calibrated: predicted s/step, compute + exposed transfer = step, the run's order of magnitude" \
	"$PYTHON_NUMPY" - "$T/plan1.json" "$T/s1.json" "$sanitized" <<'PY'
import json, statistics, sys
j, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
p = j['prediction']
assert j['calibrated'] is True and p['available'], p
t = j['predicted_seconds_per_step']
assert t == p['seconds_per_step'] and t > 0, p
assert abs(p['compute_seconds'] + p['exposed_transfer_seconds'] - t) <= 1e-9 * t, p
assert p['uncalibrated_tasks'] * 20 <= p['tasks'] and p['disk_read_MB_per_s'] > 0, p
assert p['disk_read_cpu_MB_per_s'] >= p['disk_read_MB_per_s'] * 0.999, p
meas = statistics.median(s['step_seconds'][1:])
print('# predicted %.4f s/step, measured %.4f' % (t, meas))
assert sys.argv[3] == '1' or 0.02 <= meas / t <= 50.0, (t, meas)
PY
check "a disk run adds its steady read rates (wall and CPU) to calibrate's 3; the rates are their medians" \
	"$PYTHON_NUMPY" - "$H/.starpu/sampling/ditstar/disk-read.txt" "$T/s1.json" "$T/cal.out" <<'PY'
import json, re, statistics, sys
lines = open(sys.argv[1]).read().split('\n')
s, cal = json.load(open(sys.argv[2])), open(sys.argv[3]).read()
rate = float(lines[0].split()[1])
assert lines[1].startswith('read_cpu_bytes_per_second '), lines
cpu_rate = float(lines[1].split()[1])
samples = [float(l.split()[1]) for l in lines[2:] if l.startswith('sample ')]
cpus = [float(l.split()[2]) for l in lines[2:] if l.startswith('sample ')]
assert len(samples) == 4, lines
assert abs(statistics.median(samples) - rate) <= 1e-5 * rate, (rate, samples)
assert abs(statistics.median(cpus) - cpu_rate) <= 1e-5 * cpu_rate, (cpu_rate, cpus)
run = s['transfers']['disk_read_MB_per_s_after_first_step'] * 1e6
assert abs(samples[-1] - run) <= 1e-5 * run, (samples, run)
# a read's CPU time is at most its wall time: bytes per CPU second >= bytes per second
run_cpu = s['transfers']['disk_read_cpu_MB_per_s_after_first_step'] * 1e6
assert abs(cpus[-1] - run_cpu) <= 1e-5 * run_cpu and run_cpu >= run * 0.999, (cpus, run_cpu, run)
assert all(c >= w * 0.999 for c, w in zip(cpus, samples)), lines
med3 = statistics.median(samples[:3])
assert abs(med3 / 1e6 - int(re.search(r'^chunk store reads: (\d+)', cal, re.M).group(1))) <= 1, cal
PY
check "the text plan prints the prediction and its parts" sh -c \
	"env STARPU_HOME='$H' $DITSTAR plan --model tiny --cache-dir $T/cache --offload disk $D |
	grep -E '^predicted s/step: [0-9.]+ \\(compute [0-9.]+, exposed transfer [0-9.]+'"

env STARPU_HOME="$H" $GN --offload auto $D --stats-json "$T/s2.json" --output "$T/auto1" \
	2>"$T/auto1.err" || sed 's/^/# /' "$T/auto1.err"
if grep -qE "^offload auto: --offload disk --offload-chunk-size [124] --prefetch [123] .*the least predicted of [0-9]+ plans: [0-9.]+ s/step" "$T/auto1.err" &&
	cmp -s "$T/none" "$T/auto1"; then
	ok "calibrated --offload auto under a host budget: disk mode chosen, said so, byte-identical"
else
	sed 's/^/# /' "$T/auto1.err"
	fail "calibrated --offload auto under a host budget: disk mode chosen, said so, byte-identical"
fi
check "the run's stats: the chosen mode and its prediction" "$PYTHON_NUMPY" - "$T/s2.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s['offload']['mode'] == 'disk', s['offload']
assert s['offload']['auto'] is True and s['offload']['predicted_seconds_per_step'] > 0, s['offload']
PY

env STARPU_HOME="$H" "$DITSTAR" plan --model tiny --cache-dir "$T/cache" --offload auto $D \
	--json >"$T/plan2.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "plan --offload auto: the chosen plan, and the note" "$PYTHON_NUMPY" - "$T/plan2.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j['mode'] == 'disk' and j['auto'].startswith('offload auto: --offload disk'), j
assert j['calibrated'] is True, j
PY

expect_fail "--offload auto with a budget below any plan: refused" 2 \
	"--offload auto: no plan fits this run's memory" \
	env STARPU_HOME="$H" $G --offload auto --host-mem-limit 2M --offload-dir "$T/store" \
	--output "$T/never"

# the cache's files replaced by FIFOs (the profiles, the read rates, a performance model):
# nothing blocks; the plan reads them as not there, the model check names the model
P=$(find "$H" -name 'profile-*.txt' | head -1)
R=$(find "$H" -name disk-read.txt | head -1)
M=$(find "$H" -name 'dit_linear.*' | head -1)
if [ -n "$P" ] && [ -n "$R" ]; then
	rm "$P" "$R" && mkfifo "$P" "$R"
	if out=$(env STARPU_HOME="$H" timeout 60 "$DITSTAR" plan --model tiny --cache-dir "$T/cache" \
		--json 2>&1) && printf '%s' "$out" | grep -q '"calibrated":false'; then
		ok "FIFOs for the profile and the read rates: read as not there, nothing blocks"
	else
		fail "FIFOs for the profile and the read rates: read as not there, nothing blocks"
		printf '%s\n' "$out" | tail -3 | sed 's/^/# /'
	fi
else
	fail "FIFOs for the profile and the read rates: no profile or rate file under $H"
fi
if [ -n "$M" ]; then
	rm "$M" && mkfifo "$M"
	expect_fail "a FIFO for a performance model: named, nothing blocks" 1 \
		"$M: corrupt StarPU performance model" \
		env STARPU_HOME="$H" timeout 60 $G --output "$T/never"
else
	fail "a FIFO for a performance model: no dit_linear model under $H"
fi
