# Interrupt and resume: with --state, SIGINT or SIGTERM stop a run after the current
# step (exit 130) with the solver state saved atomically; kill -9 at any moment leaves
# the last finished step's state; --resume continues to latents byte-identical to an
# uninterrupted run; a state from another model or other arguments is refused.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch resume)
plan 9

# The small preset at 480 tokens: a few tenths of a second per step, long enough to
# interrupt between steps.
G="$DITSTAR generate --quiet --model small --frames 9 --height 128 --width 192 --steps 6"
$G --output "$T/ref" 2>"$T/err" || sed 's/^/# /' "$T/err"

# start_and_signal SIG STATE OUT: starts a run, sends SIG once a state exists, waits.
start_and_signal() {
	rm -f "$2"
	$G --state "$2" --output "$3" 2>"$T/err.$1" &
	pid=$!
	while [ ! -e "$2" ] && kill -0 $pid 2>/dev/null; do sleep 0.02; done
	kill -"$1" $pid 2>/dev/null
	wait $pid 2>/dev/null
}
next_step() {
	"$PYTHON_NUMPY" -c "import sys; sys.path.insert(0, sys.argv[1]); import safetensors_np as st; print(st.read_header(sys.argv[2])[1]['next_step'])" \
		"$top_srcdir/tests/ref" "$1"
}

start_and_signal INT "$T/s_int" "$T/o_int"
rc=$?
if [ $rc -eq 130 ] && grep -q "interrupted after step [1-5] of 6; state saved in $T/s_int" "$T/err.INT" &&
	[ ! -e "$T/o_int" ]; then
	ok "SIGINT stops after the current step, exit 130, state saved, no output"
else
	fail "SIGINT stops after the current step (rc $rc)"
	sed 's/^/# /' "$T/err.INT"
fi
$G --resume "$T/s_int" --output "$T/r_int" 2>/dev/null
check "resumed after SIGINT: byte-identical latents" cmp "$T/ref" "$T/r_int"

start_and_signal TERM "$T/s_term" "$T/o_term"
rc=$?
if [ $rc -eq 130 ]; then ok "SIGTERM stops the same way"; else fail "SIGTERM stops the same way (rc $rc)"; fi
$G --resume "$T/s_term" --output "$T/r_term" 2>/dev/null
check "resumed after SIGTERM: byte-identical latents" cmp "$T/ref" "$T/r_term"

# The signal given to a thread that was started before ditstar's main (OpenBLAS's
# pool, at load), which does not block it: the kernel may pick any such thread for a
# signal sent to the process. tgkill aims it at one; the run must stop the same way.
rm -f "$T/s_thr"
if "$PYTHON_NUMPY" - "$T/s_thr" $G --state "$T/s_thr" --output "$T/o_thr" <<'PY' >"$T/thr" 2>&1; then
import ctypes, os, signal, subprocess, sys, time
state, cmd = sys.argv[1], sys.argv[2:]
p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
t0 = time.time()
while not os.path.exists(state) and p.poll() is None and time.time() - t0 < 300:
    time.sleep(0.02)
def blocks_int(tid):
    for l in open('/proc/%d/task/%d/status' % (p.pid, tid)):
        if l.startswith('SigBlk:'):
            return int(l.split()[1], 16) & (1 << (signal.SIGINT - 1))
    return 1
open_threads = [int(t) for t in os.listdir('/proc/%d/task' % p.pid) if not blocks_int(int(t))]
if not open_threads:
    p.kill()
    sys.exit('no thread of the run leaves SIGINT unblocked: nothing to aim at')
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall(234, p.pid, open_threads[0], signal.SIGINT) != 0:  # SYS_tgkill on x86-64
    sys.exit('tgkill: errno %d' % ctypes.get_errno())
err = p.communicate(timeout=300)[1]
if p.returncode != 130 or 'interrupted after step' not in err:
    sys.exit('rc %d: %s' % (p.returncode, err))
PY
	ok "SIGINT taken by a thread started before main: the same stop"
elif [ "$(uname -m)" != x86_64 ]; then
	ok "SIGINT taken by a thread started before main # SKIP tgkill's number is x86-64's"
else
	fail "SIGINT taken by a thread started before main"
	sed 's/^/# /' "$T/thr"
fi

# kill -9: no chance to clean up; the state on disk is the last one written whole.
start_and_signal KILL "$T/s_kill" "$T/o_kill"
n=$(next_step "$T/s_kill" 2>/dev/null)
case $n in
[1-6]) ok "after kill -9 the state is intact (next step $n)" ;;
*) fail "after kill -9 the state is intact ('$n')" ;;
esac
$G --resume "$T/s_kill" --output "$T/r_kill" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "resumed after kill -9: byte-identical latents" cmp "$T/ref" "$T/r_kill"

expect_fail "a state from other arguments is refused" 1 \
	"$T/s_int: resume state from another model or other arguments" \
	$G --seed 7 --resume "$T/s_int" --output "$T/x"
printf 'not a state' >"$T/junk"
expect_fail "a file that is not a state is refused" 1 "$T/junk" \
	$G --resume "$T/junk" --output "$T/x"
finish
