# Interrupt and resume: with --state, SIGINT or SIGTERM stop a run after the current
# step (exit 130) with the solver state saved atomically; kill -9 at any moment leaves
# the last finished step's state; --resume continues to latents byte-identical to an
# uninterrupted run; a state from another model or other arguments is refused.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch resume)
plan 8

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
