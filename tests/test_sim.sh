# ditstar-sim (configure --with-starpu-simgrid): the same task graph simulated by
# SimGrid from the calibrated performance models. Skipped when it is not built. After
# ditstar calibrate, a simulation runs, says so, is deterministic, agrees with
# `ditstar plan`'s prediction from the same models, and writes a trace that `ditstar
# trace summarize` reads; without models it stops with one line naming the codelet;
# what it cannot do is refused as a usage error.
. "$top_srcdir/tests/lib.sh"
need_python
SIM="$top_builddir/ditstar-sim"
if [ ! -x "$SIM" ]; then
	echo "1..0 # SKIP ditstar-sim not built (./setup.sh simgrid, or configure --with-starpu-simgrid)"
	exit 0
fi
T=$(scratch sim)
plan 11

G="generate --model tiny --steps 2"
"$DITSTAR" calibrate --model tiny --steps 2 >"$T/cal" 2>&1 || sed 's/^/# /' "$T/cal"
if "$SIM" $G --stats-json "$T/s1.json" --trace "$T/tr" >"$T/out" 2>"$T/err" &&
	grep -q '^2 unipc steps, guidance 5, shift 5: simulated [0-9.]* s ([0-9.]* s/step) on 2 CPU workers' "$T/out"; then
	ok "after calibrate, a simulated generate runs and says it is simulated"
else
	fail "a simulated generate"
	sed 's/^/# /' "$T/out" "$T/err"
fi
"$SIM" $G --stats-json "$T/s2.json" >/dev/null 2>"$T/err" || sed 's/^/# /' "$T/err"
"$DITSTAR" plan --model tiny --steps 2 --json >"$T/plan.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "the stats: simulated, seconds from the models, deterministic, near the plan's prediction" \
	"$PYTHON_NUMPY" - "$T/s1.json" "$T/s2.json" "$T/plan.json" <<'PY'
import json, sys
a, b, p = (json.load(open(f)) for f in sys.argv[1:4])
assert a['run']['simulated'] is True and a['run']['models_calibrated'] is True, a['run']
assert all(s > 0 for s in a['step_seconds']) and len(a['step_seconds']) == 2, a['step_seconds']
assert a['step_seconds'] == b['step_seconds'], (a['step_seconds'], b['step_seconds'])
sim = sum(a['step_seconds']) / 2
pred = p['predicted_seconds_per_step']
# the plan plays the same tasks from the same models; the simulation also plays the
# scheduler and the dependencies
assert 0.5 < sim / pred < 2.0, (sim, pred)
print('# simulated %.4f s/step, predicted %.4f' % (sim, pred))
PY
if "$DITSTAR" trace summarize "$T/tr" --json >"$T/summ.json" 2>"$T/err" &&
	"$PYTHON_NUMPY" - "$T/summ.json" "$T/s1.json" <<'PY'; then
import json, sys
s, st = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert s['tasks'] > 0 and s['makespan_seconds'] > 0, s
assert abs(s['makespan_seconds'] - st['total_seconds']) <= 0.05 * st['total_seconds'], (s['makespan_seconds'], st['total_seconds'])
PY
	ok "the simulated run's trace: summarize reads it, its makespan is the run's"
else
	fail "the simulated run's trace"
	sed 's/^/# /' "$T/err"
fi

# nothing calibrated: one line naming the platform file, not SimGrid's abort; the
# platform but no model for a task: one line naming the task and codelet
mkdir -p "$T/home" "$T/home2/.starpu/sampling"
expect_fail "no platform: refused naming the file and the host" 1 \
	"$T/home/.starpu/sampling/bus/[^ ]*.platform.v4.xml: no platform of host" \
	env STARPU_HOME="$T/home" "$SIM" $G
cp -r "$STARPU_HOME/.starpu/sampling/bus" "$T/home2/.starpu/sampling/bus"
expect_fail "no model: refused naming the codelet" 1 \
	"no calibrated length for its shape on CPU 0, which SimGrid needs" \
	env STARPU_HOME="$T/home2" "$SIM" $G
expect_fail "--output refused: nothing is computed" 2 "computes no latents" "$SIM" $G --output "$T/x"
expect_fail "--offload disk refused" 2 "is not simulated" "$SIM" $G --offload disk
expect_fail "forward refused" 2 "simulates generate and plan only" \
	"$SIM" forward --model-dir "$T" --inputs "$T/x" --output "$T/y"
expect_fail "calibrate refused" 2 "calibrate with ditstar" "$SIM" calibrate --model tiny
if "$SIM" generate --help | head -n 1 | grep -q '^usage: ditstar generate' &&
	"$SIM" --version | grep -q '^ditstar '; then
	ok "--help and --version are ditstar's, not SimGrid's"
else
	fail "--help and --version are ditstar's"
fi
if "$SIM" plan --model tiny --steps 2 >"$T/plan.txt" 2>&1 && grep -q '^predicted s/step' "$T/plan.txt"; then
	ok "ditstar-sim plan prints the prediction"
else
	fail "ditstar-sim plan"
	sed 's/^/# /' "$T/plan.txt"
fi
finish
