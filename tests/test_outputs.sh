# Outputs never clobber what was not asked for: a device node, FIFO, directory or
# symbolic link given as an output is refused before the run and left as it was; an
# output naming an input (a checkpoint shard, --context, --inputs, --resume) or another
# output is refused, the input byte-identical afterwards; a link planted in a --trace
# directory is not followed; a failed write to standard output is an error.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch outputs)
plan 27

gen() { "$DITSTAR" generate --model tiny-test --steps 1 --quiet "$@"; }

# skip_n N WHY: N checks skipped.
skip_n() {
	for _ in $(seq 1 "$1"); do
		dit_n=$((dit_n + 1))
		echo "ok $dit_n # SKIP $2"
	done
}

# Device nodes of the test's own (never the system's /dev/null): refused, still a node.
if mknod "$T/null" c 1 3 2>/dev/null && mknod "$T/full" c 1 7 2>/dev/null; then
	expect_fail "--output on a character device is refused" 2 \
		"--output $T/null: is a character device, not a regular file; refusing" \
		gen --output "$T/null"
	check "the device node is still there" test -c "$T/null"
	expect_fail "--stats-json on a character device is refused" 2 \
		"--stats-json $T/full: is a character device" gen --stats-json "$T/full"
	check "that device node is still there, and no temporary file beside it" \
		sh -c "test -c '$T/full' && ! ls '$T' | grep -q tmp"
else
	skip_n 4 "mknod not permitted"
fi

mkfifo "$T/fifo"
expect_fail "--output on a FIFO is refused" 2 "--output $T/fifo: is a FIFO" \
	gen --output "$T/fifo"
check "the FIFO is still there" test -p "$T/fifo"

mkdir "$T/dir"
expect_fail "--output on a directory is refused" 2 "--output $T/dir: is a directory" \
	gen --output "$T/dir"

echo target >"$T/target"
ln -s "$T/target" "$T/link"
expect_fail "--output on a symbolic link is refused" 2 \
	"--output $T/link: is a symbolic link" gen --output "$T/link"
check "the link and its target are unchanged" \
	sh -c "test -L '$T/link' && [ \"\$(cat '$T/target')\" = target ]"
expect_fail "--state on a symbolic link is refused" 2 "--state $T/link: is a symbolic link" \
	gen --state "$T/link"

# Outputs that are inputs: the checkpoint, --inputs, --context, --resume.
ref make-tiny --output-dir "$T/ck" --seed 3 >/dev/null
cp -a "$T/ck" "$T/ck.orig"
cp -a "$T/ck" "$T/ck2"
"$PYTHON_NUMPY" - "$T" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
r = np.random.default_rng(1)
st.save(sys.argv[1] + '/in', {'x': r.standard_normal((4, 1, 4, 6)).astype(np.float32),
                              't': np.array([500.0], np.float32),
                              'context': r.standard_normal((2, 24)).astype(np.float32)})
st.save(sys.argv[1] + '/ctx', {'context': r.standard_normal((3, 24)).astype(np.float32)})
PY
shard="$T/ck/diffusion_pytorch_model.safetensors"
expect_fail "forward: --output naming the checkpoint's shard is refused" 2 \
	"--output $shard: is the checkpoint file $shard, an input" \
	"$DITSTAR" forward --model-dir "$T/ck" --inputs "$T/in" --output "$shard"
expect_fail "generate: --output naming config.json (another spelling) is refused" 2 \
	"is the checkpoint file .*config.json, an input" \
	"$DITSTAR" generate --model-dir "$T/ck" --steps 1 --quiet --output "$T/ck/../ck/config.json"
check "the checkpoint is byte-identical afterwards" diff -r "$T/ck" "$T/ck.orig"
cp "$T/in" "$T/in.orig"
expect_fail "forward: --output naming --inputs is refused" 2 "is the --inputs $T/in, an input" \
	"$DITSTAR" forward --model-dir "$T/ck2" --inputs "$T/in" --output "$T/in"
ln "$T/in" "$T/in.hard"
expect_fail "forward: --stats-json hard-linked to --inputs is refused" 2 \
	"--stats-json $T/in.hard: is the --inputs $T/in, an input" \
	"$DITSTAR" forward --model-dir "$T/ck2" --inputs "$T/in" --output "$T/y" \
	--stats-json "$T/in.hard"
identical "the --inputs file is byte-identical afterwards" "$T/in" "$T/in.orig"
cp "$T/ctx" "$T/ctx.orig"
expect_fail "generate: --output naming --context is refused" 2 \
	"--output $T/ctx: is the --context $T/ctx, an input" gen --context "$T/ctx" --output "$T/ctx"
identical "the --context file is byte-identical afterwards" "$T/ctx" "$T/ctx.orig"

# Outputs that are each other, even when not there yet.
expect_fail "--stats-json naming --output is refused" 2 \
	"--stats-json $T/sub/../same: is also the --output $T/same" \
	sh -c "mkdir -p '$T/sub' && '$DITSTAR' generate --model tiny-test --steps 1 --quiet \
		--output '$T/same' --stats-json '$T/sub/../same'"
check "and nothing was written" test ! -e "$T/same"
gen --state "$T/state" --output "$T/lat1" 2>/dev/null
expect_fail "--output naming --resume is refused" 2 "--output $T/state: is the --resume" \
	gen --resume "$T/state" --output "$T/state"
check "--resume with --state on the same file is still an update in place" \
	gen --resume "$T/state" --state "$T/state" --output "$T/lat2"

# A link planted in the trace directory is never followed.
mkdir "$T/tr"
echo keep >"$T/victim"
if gen --trace "$T/probe" 2>"$T/err"; then
	ln -s "$T/victim" "$T/tr/paje.trace"
	expect_fail "--trace with a planted link is refused" 1 \
		"--trace $T/tr/paje.trace: is a symbolic link" gen --trace "$T/tr"
	check "the link's target is unchanged" sh -c "[ \"\$(cat '$T/victim')\" = keep ]"
else
	skip_n 2 "no trace ($(head -n 1 "$T/err"))"
fi

# An output inside the folders the run fills itself.
mkdir -p "$T/tr2" "$T/store"
expect_fail "--output inside the --trace folder is refused" 2 \
	"--output $T/tr2/trace.json: is inside the --trace folder" \
	gen --trace "$T/tr2" --output "$T/tr2/trace.json"
expect_fail "--output inside the chunk store is refused" 2 \
	"--output $T/store/blocks.bin: is inside the --offload-dir folder" \
	gen --offload disk --offload-dir "$T/store" --output "$T/store/blocks.bin"

# Standard output.
if [ -c /dev/full ]; then
	expect_fail "info >/dev/full exits 1" 1 "cannot write to standard output" \
		sh -c "'$DITSTAR' info --model tiny-test >/dev/full"
else
	skip_n 1 "no /dev/full"
fi
finish
