# Progress and interruption, and errors before work: one line a step (step, s/step,
# ETA) when stderr is not a terminal, the bar on a terminal, nothing with --quiet; the
# stages before the first step (the chunk store written, the checkpoint hashed); the
# model line on stdout before the run; Ctrl-C with and without a state file; usage
# errors exit 2, with "unknown option" and "needs a value" told apart; an output that
# cannot be written is refused before any weight is read.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch progress)
plan 18

G="$DITSTAR generate --steps 3"

# ---------------------------------------------------------------- progress
$G --output "$T/a" >"$T/out" 2>"$T/err"
if [ "$(wc -l <"$T/err")" -eq 3 ] &&
	[ "$(grep -Ec '^step [1-3]/3  [0-9]+\.[0-9]{2} s/step  ETA [0-9]+:[0-9]{2}$' "$T/err")" -eq 3 ] &&
	sed -n 3p "$T/err" | grep -q '^step 3/3 .* ETA 0:00$'; then
	ok "not a terminal: one line a step with s/step and ETA"
else
	fail "not a terminal: one line a step with s/step and ETA"
	sed 's/^/# /' "$T/err"
fi
if head -n 1 "$T/out" | grep -q '^model tiny (wan2.1-t2v): 4 blocks, dim 128, 480 tokens' &&
	sed -n 2p "$T/out" | grep -q '^3 unipc steps'; then
	ok "the model line comes first, the run's line after"
else
	fail "the model line comes first, the run's line after"
	sed 's/^/# /' "$T/out"
fi
# before the first step (stages lasting DITSTAR_PROGRESS_AFTER seconds, 0 here, default
# 1): the chunk store written, the checkpoint hashed, the weights loaded say so, a
# line when each begins and one when it ends; a reused store is not written again (its
# checkpoint, just made, is hashed again: a record is trusted 2 s after the file's last
# change); --quiet, nothing
S="env DITSTAR_PROGRESS_AFTER=0 $DITSTAR generate --steps 1 --offload disk --disk-source store --resident-chunks 0 --cache-dir $T/cache"
$S --offload-dir "$T/st1" --output "$T/s1" >/dev/null 2>"$T/err1"
$S --offload-dir "$T/st1" --output "$T/s1" >/dev/null 2>"$T/err2"
$S --offload-dir "$T/st2" --quiet --output "$T/s2" >/dev/null 2>"$T/err3"
env DITSTAR_PROGRESS_AFTER=0 $G --output "$T/s3" >/dev/null 2>"$T/err4"
$G --output "$T/s3" >/dev/null 2>"$T/err5"
if grep -Eq '^hashing the checkpoint: [0-9.]+ GB$' "$T/err1" &&
	grep -Eq '^hashing the checkpoint: done in [0-9]+:[0-9]{2}$' "$T/err1" &&
	grep -Eq '^writing the chunk store: 4 blocks$' "$T/err1" &&
	grep -Eq '^writing the chunk store: done in [0-9]+:[0-9]{2}$' "$T/err1" &&
	! grep -q 'chunk store' "$T/err2" && [ ! -s "$T/err3" ] &&
	grep -Eq '^loading the weights: 4 blocks$' "$T/err4" &&
	grep -Eq '^loading the weights: done in [0-9]+:[0-9]{2}$' "$T/err4" &&
	[ "$(grep -c 'loading' "$T/err4")" -eq 2 ] && ! grep -q 'loading' "$T/err5"; then
	ok "the chunk store written, the checkpoint hashed, the weights loaded: a line as each begins and ends; reused: not written; --quiet or shorter than DITSTAR_PROGRESS_AFTER (1 s): none"
else
	fail "the chunk store written and the checkpoint hashed: a line as each begins and ends"
	cat "$T/err1" "$T/err2" "$T/err3" | sed 's/^/# /'
fi
$G --quiet --output "$T/b" >"$T/out" 2>"$T/err"
if [ ! -s "$T/err" ] && [ ! -s "$T/out" ]; then
	ok "--quiet prints nothing"
else
	fail "--quiet prints nothing"
fi
# a terminal: script(1) runs the command on a pseudo-terminal
if command -v script >/dev/null 2>&1; then
	script -qec "$G --output $T/c" /dev/null >"$T/tty" 2>&1
	if [ "$(tr '\r' '\n' <"$T/tty" | grep -Ec '^\[[#.]{30}\] step [1-3]/3  [0-9.]+ s/step  ETA [0-9]+:[0-9]{2}')" -eq 3 ] &&
		tr '\r' '\n' <"$T/tty" | grep -q '^\[#\{30\}\] step 3/3' &&
		tr -d '\r' <"$T/tty" | head -n 1 | grep -q '^model tiny'; then
		ok "a terminal: the bar redrawn in place, after the model line"
	else
		fail "a terminal: the bar redrawn in place, after the model line"
		tr '\r' '\n' <"$T/tty" | sed 's/^/# /'
	fi
else
	ok "# SKIP no script(1)"
fi
check "the same latents with and without progress" cmp "$T/a" "$T/b"

# ---------------------------------------------------------------- Ctrl-C
# The small preset at 480 tokens: a few tenths of a second a step, so SIGINT lands
# in the middle of a run. wait_step FILE PID: until FILE shows the first step done.
S="$DITSTAR generate --model small --frames 9 --height 128 --width 192 --steps 40"
wait_step() {
	while ! grep -q '^step 1/' "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 0.02; done
}
rm -f "$T/err" # a step line of the run before would end wait_step early
$S --output "$T/int" >/dev/null 2>"$T/err" &
pid=$!
wait_step "$T/err" $pid
kill -INT $pid
wait $pid
rc=$?
if [ $rc -eq 130 ] && tail -n 1 "$T/err" | grep -q '^ditstar: interrupted; no state saved: use --state FILE' &&
	[ ! -e "$T/int" ]; then
	ok "Ctrl-C without --state: exit 130, says no state was saved, writes nothing"
else
	fail "Ctrl-C without --state (rc $rc)"
	sed 's/^/# /' "$T/err"
fi
rm -f "$T/err" # a step line of the run before would end wait_step early
$S --output "$T/int" --state "$T/state" >/dev/null 2>"$T/err" &
pid=$!
wait_step "$T/err" $pid
kill -INT $pid
wait $pid
rc=$?
if [ $rc -eq 130 ] &&
	grep -q "^ditstar: stopping after the current step; its state goes to $T/state" "$T/err" &&
	tail -n 1 "$T/err" | grep -q "^ditstar: interrupted after step [0-9]* of 40; state saved in $T/state" &&
	[ -s "$T/state" ] && [ ! -e "$T/int" ]; then
	ok "Ctrl-C with --state: says it stops after the step, then where the state is"
else
	fail "Ctrl-C with --state (rc $rc)"
	sed 's/^/# /' "$T/err"
fi
rm -f "$T/state"
rm -f "$T/err" # a step line of the run before would end wait_step early
$S --output "$T/int" --state "$T/state" >/dev/null 2>"$T/err" &
pid=$!
wait_step "$T/err" $pid
kill -INT $pid
sleep 0.05
kill -INT $pid
wait $pid
rc=$?
if [ $rc -eq 130 ] && tail -n 1 "$T/err" | grep -Eq "^ditstar: stopped; $T/state holds the state of the last finished step|^ditstar: interrupted after step" &&
	[ ! -e "$T/int" ]; then
	ok "a second Ctrl-C stops at once, naming the state"
else
	fail "a second Ctrl-C stops at once (rc $rc)"
	sed 's/^/# /' "$T/err"
fi

# A second Ctrl-C while StarPU writes its performance models waits for the write to
# end: a process ended in between would leave a model cut short (StarPU truncates the
# file, then writes it) that every later run refuses. Here the models (of a private
# StarPU home, STARPU_CALIBRATE=1 so that they are written) are write-locked once
# step 1 is done; the first Ctrl-C stops the run after its step and StarPU's save
# blocks on the lock (seen in /proc/locks); the second Ctrl-C must not end the process
# until the lock goes; then it ends with 130 and every model reads back.
H="$T/home"
mkdir -p "$H/.starpu/sampling"
[ -d "$STARPU_HOME/.starpu/sampling/bus" ] && cp -r "$STARPU_HOME/.starpu/sampling/bus" "$H/.starpu/sampling/"
STARPU_HOME="$H" $G --quiet --output "$T/w" 2>"$T/err" || sed 's/^/# /' "$T/err"
rm -f "$T/err" "$T/state"
if "$PYTHON_NUMPY" - "$H" "$T/err" "$T/state" $S --output "$T/int" --state "$T/state" <<'PY' >"$T/py" 2>&1; then
import fcntl, glob, os, signal, subprocess, sys, time
home, errpath, state, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
env = dict(os.environ, STARPU_HOME=home, STARPU_CALIBRATE='1')
p = subprocess.Popen(cmd, stderr=open(errpath, 'w'), stdout=subprocess.DEVNULL, env=env)
def until(cond, what, limit=120):
    t0 = time.time()
    while not cond():
        if p.poll() is not None or time.time() - t0 > limit:
            sys.exit('%s: the run ended (rc %s) or %d s went by' % (what, p.poll(), limit))
        time.sleep(0.02)
until(lambda: 'step 1/' in open(errpath).read(), 'step 1')
files = sorted(glob.glob(home + '/.starpu/sampling/codelets/*/dit_*'))
held = [open(f, 'r+b') for f in files]
for f in held:
    fcntl.lockf(f, fcntl.LOCK_EX)
inos = [':%d ' % os.fstat(f.fileno()).st_ino for f in held]
p.send_signal(signal.SIGINT)
until(lambda: any('->' in l and any(i in l for i in inos) for l in open('/proc/locks')),
      'StarPU saving a model')
p.send_signal(signal.SIGINT)
time.sleep(0.5)
if p.poll() is not None:
    sys.exit('the second Ctrl-C ended the run (rc %d) while StarPU wrote its models' % p.returncode)
for f in held:
    f.close()
rc = p.wait(120)
if rc != 130:
    sys.exit('rc %d after the lock went, not 130' % rc)
print('%d models locked' % len(files))
PY
	if STARPU_HOME="$H" $G --quiet --output "$T/w2" 2>"$T/err2"; then
		ok "a second Ctrl-C while StarPU writes its models waits for the write ($(cat "$T/py"))"
	else
		fail "a second Ctrl-C while StarPU writes its models: a model is damaged"
		sed 's/^/# /' "$T/err2"
	fi
else
	fail "a second Ctrl-C while StarPU writes its models waits for the write"
	sed 's/^/# /' "$T/py" "$T/err"
fi

# ---------------------------------------------------------------- usage errors: exit 2
expect_fail "an unknown option" 2 "^ditstar generate: unknown option: --bogus " $G --bogus
expect_fail "a missing value is not an unknown option" 2 "^ditstar generate: --frames needs a value " \
	$G --frames
expect_fail "a value for an option that takes none" 2 "^ditstar generate: --quiet takes no value " \
	$G --quiet=1
expect_fail "a size the model refuses is a usage error" 2 "^ditstar: --frames 80: must be 4k\+1" \
	$G --frames 80

# ---------------------------------------------------------------- errors before work
# A checkpoint whose shard is cut short: reading its weights fails, so an error about
# the output proves that the output was checked first.
ref make-tiny --output-dir "$T/ck" --seed 1 >/dev/null
shard=$(ls "$T/ck"/*.safetensors | head -n 1)
size=$(wc -c <"$shard")
truncate -s $((size / 2)) "$shard"
expect_fail "--output in a missing folder: refused before the weights are read" 2 \
	"^ditstar: --output $T/nodir/x: cannot write in $T/nodir: No such file or directory$" \
	$DITSTAR generate --model-dir "$T/ck" --steps 1 --output "$T/nodir/x"
expect_fail "--stats-json in a missing folder: refused before the weights" 2 \
	"^ditstar: --stats-json $T/nodir/s.json: cannot write in $T/nodir" \
	$DITSTAR generate --model-dir "$T/ck" --steps 1 --stats-json "$T/nodir/s.json"
expect_fail "--trace under a file: refused before the weights" 2 \
	"^ditstar: --trace $T/ck/config.json/t: cannot write in" \
	$DITSTAR generate --model-dir "$T/ck" --steps 1 --trace "$T/ck/config.json/t"
expect_fail "forward: --output in a missing folder, before the weights" 2 \
	"^ditstar: --output $T/nodir/y: cannot write in $T/nodir" \
	$DITSTAR forward --model-dir "$T/ck" --inputs "$T/ck/config.json" --output "$T/nodir/y"
finish
