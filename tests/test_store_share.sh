# One chunk store, several runs: two runs of different checkpoints started together
# on one --offload-dir each end with their own latents (the second waits for the
# first, then rebuilds the store); two runs of one checkpoint share it at once; a run
# waiting for another says so in one line, and DITSTAR_STORE_WAIT bounds the wait.
# A chunk edited with finite values in the middle of a run (the test-only hook
# DIT_TEST_STORE_EDIT) is caught when it is read: one line naming the file, exit 1, no
# output; the next run rebuilds the store and --resume completes byte-identically.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch store_share)
plan 13

# a: the built-in tiny model's checkpoint (4 chunks of 0.9 MiB, 7 MiB of activations,
# so that under a 10 MiB host limit chunks are read again in later steps); b: the
# same config with other weights
$DITSTAR generate --model tiny --steps 1 --quiet 2>/dev/null
cp -r "$DITSTAR_CACHE/tiny-synth-v1" "$T/a" && cp -r "$T/a" "$T/b"
"$PYTHON_NUMPY" - "$T/b/diffusion_pytorch_model.safetensors" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import safetensors_np as st
t = st.load(sys.argv[1])
st.save(sys.argv[1], {k: v * 0.9 if k.startswith('blocks.') else v for k, v in t.items()})
PY
args="--frames 17 --height 128 --width 192 --steps 3 --quiet"
L="--offload disk --disk-source store --offload-dir $T/shared --host-mem-limit 11M"
GA="$DITSTAR generate --model-dir $T/a $args"
GB="$DITSTAR generate --model-dir $T/b $args"
$GA --output "$T/ref_a" 2>/dev/null
$GB --output "$T/ref_b" 2>/dev/null
WAIT="^ditstar: waiting for the chunk store $T/shared, which another run is (preparing|using) it$"

# only_waits FILE: FILE holds nothing but (at most) the waiting line.
only_waits() { [ -z "$(grep -Ev "$WAIT" "$1")" ]; }

# 1. Different checkpoints, started together, three rounds.
bad=""
for r in 1 2 3; do
	$GA $L --output "$T/a$r" 2>"$T/a$r.err" &
	pa=$!
	$GB $L --output "$T/b$r" 2>"$T/b$r.err" &
	pb=$!
	wait $pa || bad="$bad a$r"
	wait $pb || bad="$bad b$r"
	cmp -s "$T/ref_a" "$T/a$r" && only_waits "$T/a$r.err" || bad="$bad a$r"
	cmp -s "$T/ref_b" "$T/b$r" && only_waits "$T/b$r.err" || bad="$bad b$r"
done
if [ -z "$bad" ]; then
	ok "two checkpoints on one store at once: each run gets its own latents"
else
	fail "two checkpoints on one store at once: each run gets its own latents ($bad)"
	cat "$T"/a?.err "$T"/b?.err | sed 's/^/# /'
fi

# 2. One checkpoint twice at once: shared, the store is not rewritten.
$GB $L --output "$T/b0" 2>/dev/null
before=$(stat -c %i "$T/shared/blocks.bin")
$GB $L --output "$T/s1" 2>"$T/s1.err" &
p1=$!
$GB $L --output "$T/s2" 2>"$T/s2.err" &
p2=$!
wait $p1 && wait $p2 && cmp -s "$T/ref_b" "$T/s1" && cmp -s "$T/ref_b" "$T/s2" &&
	[ "$before" = "$(stat -c %i "$T/shared/blocks.bin")" ] &&
	ok "one checkpoint twice at once: both right, store kept" ||
	fail "one checkpoint twice at once: both right, store kept"

# hold MODE FILE SECONDS: another process holds a lock on FILE (flock -s or -x),
# taken before this returns; $holder is its pid.
hold() {
	rm -f "$T/held"
	flock "$1" "$2" -c "touch '$T/held'; sleep $3" &
	holder=$!
	while [ ! -e "$T/held" ] && kill -0 $holder 2>/dev/null; do sleep 0.05; done
}

# 3. Another run preparing the store: this one waits, says so once, then runs.
hold -x "$T/shared/build.lock" 2
$GB $L --output "$T/w1" 2>"$T/w1.err"
rc=$?
wait $holder
if [ $rc -eq 0 ] && [ "$(wc -l <"$T/w1.err")" -eq 1 ] &&
	grep -q "which another run is preparing it$" "$T/w1.err" && cmp -s "$T/ref_b" "$T/w1"; then
	ok "waits for a run preparing the store, one line, then completes"
else
	fail "waits for a run preparing the store, one line, then completes (rc $rc)"
	sed 's/^/# /' "$T/w1.err"
fi

# 4. A run using the store (shared lock): one of the same checkpoint does not wait,
# one of another checkpoint waits for it to end before rebuilding.
# (the holder keeps its lock until the waiting run has said so, however slow the
# machine)
rm -f "$T/release" "$T/held"
flock -s "$T/shared/use.lock" -c "touch '$T/held'; while [ ! -e '$T/release' ]; do sleep 0.05; done" &
holder=$!
while [ ! -e "$T/held" ] && kill -0 $holder 2>/dev/null; do sleep 0.05; done
$GB $L --output "$T/w2" 2>"$T/w2.err"
rc2=$?
$GA $L --output "$T/w3" 2>"$T/w3.err" &
p3=$!
n=0
while ! grep -q "which another run is using it$" "$T/w3.err" && [ $n -lt 1200 ] &&
	kill -0 $p3 2>/dev/null; do
	sleep 0.05
	n=$((n + 1))
done
touch "$T/release"
wait $p3
rc3=$?
wait $holder
if [ $rc2 -eq 0 ] && [ ! -s "$T/w2.err" ] && cmp -s "$T/ref_b" "$T/w2"; then
	ok "a run of the same checkpoint shares the store without waiting"
else
	fail "a run of the same checkpoint shares the store without waiting (rc $rc2)"
	sed 's/^/# /' "$T/w2.err"
fi
if [ $rc3 -eq 0 ] && grep -q "which another run is using it$" "$T/w3.err" &&
	[ "$(wc -l <"$T/w3.err")" -eq 1 ] && cmp -s "$T/ref_a" "$T/w3"; then
	ok "a run of another checkpoint waits for the runs using the store, then rebuilds"
else
	fail "a run of another checkpoint waits for the runs using the store, then rebuilds (rc $rc3)"
	sed 's/^/# /' "$T/w3.err"
fi

# 5. DITSTAR_STORE_WAIT: give up after that many seconds.
hold -x "$T/shared/build.lock" 5
DITSTAR_STORE_WAIT=1 $GA $L --output "$T/t1" 2>"$T/t1.err"
rc=$?
if [ $rc -eq 1 ] && [ "$(wc -l <"$T/t1.err")" -eq 2 ] && grep -Eq "$WAIT" "$T/t1.err" &&
	grep -q "^ditstar: $T/shared: another run is preparing this chunk store; gave up after 1 s (DITSTAR_STORE_WAIT)$" "$T/t1.err" &&
	[ ! -e "$T/t1" ]; then
	ok "DITSTAR_STORE_WAIT=1: gives up after a second, exit 1"
else
	fail "DITSTAR_STORE_WAIT=1: gives up after a second, exit 1 (rc $rc)"
	sed 's/^/# /' "$T/t1.err"
fi
expect_fail "DITSTAR_STORE_WAIT=0: no wait" 1 "another run is preparing this chunk store; gave up after 0 s" \
	env DITSTAR_STORE_WAIT=0 $GA $L
wait $holder
expect_fail "DITSTAR_STORE_WAIT must be a number" 1 "^ditstar: DITSTAR_STORE_WAIT=soon: must be a number of seconds$" \
	env DITSTAR_STORE_WAIT=soon $GA $L
for v in many 0 65; do
	expect_fail "DITSTAR_DISK_READS=$v refused" 1 \
		"^ditstar: DITSTAR_DISK_READS=$v: must be a number of reads in flight from 1 to 64$" \
		env DITSTAR_DISK_READS=$v $GA $L
done

# 6. A block edited in the middle of a run: with --state the loop runs step by step;
# step 1 reads each of the 4 chunks once, so the 5th read (a chunk read again) is in
# a later step, after step 1's state is saved.
$GA $L --output "$T/a0" 2>/dev/null
rm -f "$T/state"
DIT_TEST_STORE_EDIT=5 $GA $L --state "$T/state" --output "$T/edited" >/dev/null 2>"$T/e.err"
rc=$?
if [ $rc -eq 1 ] && [ "$(wc -l <"$T/e.err")" -eq 1 ] && [ ! -e "$T/edited" ] && [ -e "$T/state" ] &&
	grep -Eq "^ditstar: chunk store $T/shared/blocks\.bin changed during the run: block [0-3] \([0-9]+ bytes at offset [0-9]+\) has XXH3 [0-9a-f]{16}, the manifest says [0-9a-f]{16}; the store will be rebuilt on the next run$" "$T/e.err"; then
	ok "chunk edited mid-run: caught on read, one line naming it, exit 1, no output"
else
	fail "chunk edited mid-run: caught on read, one line naming it, exit 1, no output (rc $rc)"
	sed 's/^/# /' "$T/e.err"
fi
$GA $L --resume "$T/state" --output "$T/resumed" --stats-json "$T/resumed.json" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
if cmp -s "$T/ref_a" "$T/resumed" && grep -q '"store_written_because":"[^"]*(corrupted)' "$T/resumed.json"; then
	ok "next run rebuilds the store; --resume gives byte-identical latents"
else
	fail "next run rebuilds the store; --resume gives byte-identical latents"
fi
finish
