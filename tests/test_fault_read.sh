# I/O faults on the StarPU disk node in disk mode, injected with libfiu (Debian's
# fiu-utils): a read of the chunk store that fails with EIO in the middle of a run,
# a write to the disk node that fails with ENOSPC, and every pread of the process
# failing. Each must end the run with exit 1 and one line on stderr naming the file,
# never an assertion or abort inside StarPU, a hang, an output file or a resume state
# computed from the failed reads; the store is kept and the next run (no fault) gives
# latents byte-identical to a run that never saw one. StarPU 1.4.10's stock unistd
# backend asserts (or, through POSIX AIO, aborts) on such errors: src/store/dit_diskops.c
# replaces its reads and writes.
. "$top_srcdir/tests/lib.sh"
need_python
if ! command -v fiu-run >/dev/null 2>&1; then
	echo "1..0 # SKIP fiu-run not found (Debian package fiu-utils)"
	exit 0
fi
# libfiu's preloaded libraries start before ASan's runtime, which then crashes
skip_if_sanitized ditstar "libfiu's preload and ASan exclude each other"
T=$(scratch fault_read)
plan 15

# The real binary, not the libtool wrapper: the preload then only sees ditstar.
LT="$top_builddir/libtool --mode=execute"
# Fail the chunk store's reads only (pread called from the planner's disk ops), so
# that the store check before the run reads fine: a fault in the middle of the run.
READ_FAULT='enable_stack_by_name name=posix/io/rw/pread,func_name=dit_diskops_piece,failinfo=5'
WRITE_FAULT='enable_stack_by_name name=posix/io/rw/pwrite,func_name=dit_diskops_piece,failinfo=28'
ALL_READS='enable name=posix/io/rw/pread,failinfo=5'
# A hang guard, not a speed bound: a faulty run that hangs is killed (rc 137, a
# failure); one that is only slow (the sanitized build on a loaded machine) is not.
# The StarPU watchdog (tests/test-env.sh) fires after 120 s without a finished task.
LIMIT=400

ref make-tiny --output-dir "$T/m" --seed 9 --layers 4 >/dev/null
ARGS="generate --model-dir $T/m --frames 5 --height 32 --width 48 --steps 3 --quiet"
$DITSTAR $ARGS --output "$T/ref" 2>"$T/err" || sed 's/^/# /' "$T/err"
D="$ARGS --offload disk --disk-source store --offload-dir $T/store"
$DITSTAR $D --output "$T/first" 2>"$T/err" || sed 's/^/# /' "$T/err"
identical "store built, disk run byte-identical" "$T/ref" "$T/first"

store_id() { stat -c '%n %i %Y %s' "$T"/store/blocks.bin "$T/store/manifest.json"; }

# faulty NAME FIU-COMMAND DITSTAR-ARGS...: runs ditstar under fiu-run with the hang
# guard; leaves rc, seconds (shown in failures), $T/NAME.err (stderr) and $T/NAME.all
# (both streams).
faulty() {
	name=$1 cmd=$2
	shift 2
	t0=$(date +%s)
	timeout -s KILL $LIMIT $LT fiu-run -x -f "" -c "$cmd" "$DITSTAR" "$@" >"$T/$name.out" 2>"$T/$name.err"
	rc=$?
	seconds=$(($(date +%s) - t0))
	cat "$T/$name.out" "$T/$name.err" >"$T/$name.all"
}
# clean NAME PATTERN DESC: exit 1 (not killed by the guard), exactly one stderr line matching
# PATTERN, nothing about an assertion, an abort or a core dump.
clean() {
	if [ "$rc" -eq 1 ] && [ "$(wc -l <"$T/$1.err")" -eq 1 ] &&
		grep -Eq -- "$2" "$T/$1.err" &&
		! grep -Eiq 'assert|abort|core dumped|segmentation|watchdog' "$T/$1.all"; then
		ok "$3"
	else
		fail "$3 (rc $rc, ${seconds}s)"
		sed 's/^/# /' "$T/$1.all" | head -20
	fi
}
# untouched NAME DESC: the faulty run NAME wrote no output and left the store as it was.
untouched() {
	if [ ! -e "$T/${1}_out" ] && [ "$before" = "$(store_id)" ]; then ok "$2"; else fail "$2"; fi
}
# next_ok NAME DESC: a run without a fault completes, byte-identical to the reference.
next_ok() {
	$DITSTAR $D --output "$T/$1" --stats-json "$T/$1.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
	identical "$2" "$T/ref" "$T/$1"
}

# 1. A read error in the middle of the run (the store itself was checked fine).
before=$(store_id)
faulty read "$READ_FAULT" $D --output "$T/read_out"
clean read "^ditstar: read error on chunk store $T/store/blocks\.bin: Input/output error \(offset [0-9]+, [0-9]+ bytes.*\); the store is kept but will be verified on the next run$" \
	"read error: exit 1, one line naming the chunk file, no abort"
untouched read "read error: no output written, store untouched"
next_ok after_read "next run without the fault: byte-identical latents"
if grep -q '"store_reused":true' "$T/after_read.json"; then ok "next run reuses the verified store"; else fail "next run reuses the verified store"; fi

# 1b. Failing from the first chunk read of a 12-step run of the small preset whose
# host limit makes every step read its 8 chunks again (96 reads in all), the run stops
# submitting within two steps: far fewer requests fail than the whole run would make.
L="generate --quiet --model small --frames 1 --height 32 --width 32 --steps 12 --offload disk --disk-source store"
L="$L --offload-dir $T/lstore --host-mem-limit 64M"
$DITSTAR $L --output "$T/long_ref" 2>"$T/err" || sed 's/^/# /' "$T/err" # builds the store
faulty long "$READ_FAULT" $L --output "$T/long_out"
nfail=$(sed -n 's/.* \([0-9][0-9]*\) failed requests in all.*/\1/p' "$T/long.err")
nfail=${nfail:-1}
if [ "$rc" -eq 1 ] && [ "$nfail" -le 32 ] && [ ! -e "$T/long_out" ]; then
	ok "read error in a 12-step run: stopped within steps ($nfail failed reads of 96)"
else
	fail "read error in a 12-step run: stopped within steps (rc $rc, $nfail failed reads of 96)"
	sed 's/^/# /' "$T/long.all" | head -5
fi

# 2. A write to the disk node that fails (StarPU writes there to calibrate it; the
# planner keeps activations out of it): the same clean stop.
faulty write "$WRITE_FAULT" $D --output "$T/write_out"
clean write "^ditstar: write error on chunk store .*$T/store/.*: No space left on device" \
	"write error: exit 1, one line naming the file, no abort"
untouched write "write error: no output written, chunks untouched"
next_ok after_write "next run after the write error: byte-identical latents"

# 3. StarPU's copies synchronous (the path where the stock backend asserts): the
# disk node's reads failing stop the run cleanly; and with every pread of the process
# failing, the checkpoint (read by pread) is the first thing that cannot be read.
STARPU_DISABLE_ASYNCHRONOUS_COPY=1 faulty sync "$READ_FAULT" $D --output "$T/sync_out"
clean sync "^ditstar: read error on chunk store $T/store/blocks\.bin: Input/output error" \
	"synchronous copies, disk reads failing: exit 1, one line naming the chunk, no abort"
STARPU_DISABLE_ASYNCHRONOUS_COPY=1 faulty all "$ALL_READS" $D --output "$T/all_out"
clean all "^ditstar: $T/m/diffusion_pytorch_model\.safetensors: read failed: Input/output error" \
	"every pread failing: exit 1, one line naming the checkpoint, no abort"
if [ ! -e "$T/all_out" ]; then ok "every pread failing: no output written"; else fail "every pread failing: no output written"; fi
next_ok after_all "next run after that: byte-identical latents"

# 4. With a resume state: the failed run keeps the state of the last good step, and
# resuming from it without the fault ends byte-identical to an uninterrupted run.
# A state from the middle of a run comes from SIGINT (as in test_resume.sh), on the
# small preset, slow enough to interrupt between steps.
S="generate --quiet --model small --frames 9 --height 128 --width 192 --steps 4"
SD="$S --offload disk --disk-source store --offload-dir $T/sstore"
$DITSTAR $S --output "$T/sref" 2>"$T/err" || sed 's/^/# /' "$T/err"
$DITSTAR $S --state "$T/mid" --output "$T/sint" 2>/dev/null &
pid=$!
while [ ! -e "$T/mid" ] && kill -0 $pid 2>/dev/null; do sleep 0.02; done
kill -INT $pid 2>/dev/null
wait $pid
if [ $? -ne 130 ] || [ ! -e "$T/mid" ]; then
	ok "state: failed run keeps the last good state # SKIP the run ended before SIGINT"
	ok "state: resume without the fault is byte-identical # SKIP no state from mid-run"
else
	$DITSTAR $SD --output "$T/sbuild" 2>/dev/null # builds the small model's store
	cp "$T/mid" "$T/mid.orig"
	faulty state "$READ_FAULT" $SD --resume "$T/mid" --output "$T/sout"
	if [ "$rc" -eq 1 ] && grep -q "read error on chunk store $T/sstore/blocks.bin" "$T/state.err" &&
		cmp -s "$T/mid" "$T/mid.orig" && [ ! -e "$T/sout" ] &&
		! grep -Eiq 'assert|abort|core dumped' "$T/state.all"; then
		ok "state: failed run keeps the last good state, no output"
	else
		fail "state: failed run keeps the last good state, no output (rc $rc)"
		sed 's/^/# /' "$T/state.all" | head -20
	fi
	$DITSTAR $SD --resume "$T/mid" --output "$T/sres" 2>"$T/err" || sed 's/^/# /' "$T/err"
	identical "state: resume without the fault is byte-identical" "$T/sref" "$T/sres"
fi
finish
