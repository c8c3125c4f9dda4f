# --offload disk reading the checkpoint's files where the blocks lie (--disk-source auto
# or checkpoint), no chunk store written: a bf16 safetensors checkpoint (matrices kept
# bf16, norms and biases widened to fp32 as they are read) gives latents byte-identical
# to the resident run and to the store path at chunks 1, 2 and 4, prefetch 0 and 2;
# only inplace.json (the blocks' checksums) is written; the plan says where each pool
# is read from and why not in place (an fp32 checkpoint narrowed to bf16), and
# --disk-source checkpoint refuses such a pool naming the tensor. Integrity as the
# store's: a block edited mid-run (DIT_TEST_STORE_EDIT) or the file cut short mid-run
# (DIT_TEST_STORE_CUT) stops the run in one line naming the checkpoint file, exit 1,
# no output; replaced mid-run (DIT_TEST_STORE_SWAP, a rename over it) the run keeps the
# file it opened; the checkpoint replaced between runs (same size and times, cp -p,
# touch -r) has its checksums taken again and gives the new model's latents, never
# stale ones; a checkpoint truncated before the run is refused in one line. PoCL reads
# in place byte-identical to its resident run.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch inplace)
plan 19

ref make-tiny --output-dir "$T/m" --seed 8 --layers 4 --dtype BF16 >/dev/null
ref make-tiny --output-dir "$T/m32" --seed 8 --layers 4 >/dev/null
ARGS="--frames 5 --height 32 --width 48 --steps 2 --quiet"
G="$DITSTAR generate --model-dir $T/m $ARGS"
$G --output "$T/ref" 2>"$T/err" || sed 's/^/# /' "$T/err"
D="$G --offload disk --resident-chunks 0"

$D --offload-dir "$T/s" --stats-json "$T/d.json" --output "$T/d" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
identical "bf16 checkpoint read in place: byte-identical to resident" "$T/ref" "$T/d"
check "no chunk store written, the blocks' checksums kept; the stats say checkpoint" \
	"$PYTHON_NUMPY" - "$T/s" "$T/d.json" <<'PY'
import json, os, sys
d, s = sys.argv[1], json.load(open(sys.argv[2]))
names = sorted(os.listdir(d))
assert 'blocks.bin' not in names and 'manifest.json' not in names, names
m = json.load(open(os.path.join(d, 'inplace.json')))
assert len(m['blocks']) == 4 and m['identity']['source'] == 'checkpoint', m
assert s['offload']['disk_source'] == 'checkpoint' and s['offload']['disk_source_why'] is None, s['offload']
# every chunk read each step (2 steps), from the checkpoint
t = s['transfers']
assert t['disk_read_bytes'] == 2 * s['weights']['chunks'] * s['weights']['chunk_bytes'], t
PY
for c in 2 4; do
	$D --offload-dir "$T/s" --offload-chunk-size $c --output "$T/c$c" 2>"$T/err" ||
		sed 's/^/# /' "$T/err"
	identical "in place, chunk $c: byte-identical" "$T/ref" "$T/c$c"
done
for p in 0 2; do
	$D --offload-dir "$T/s" --prefetch $p --disk-ram-slots 3 --output "$T/p$p" 2>"$T/err" ||
		sed 's/^/# /' "$T/err"
	identical "in place, prefetch $p: byte-identical" "$T/ref" "$T/p$p"
done
$D --offload-dir "$T/s" --disk-source store --output "$T/st" --stats-json "$T/st.json" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
check "--disk-source store: the chunk store beside the checksums, byte-identical" sh -c "
	cmp -s '$T/ref' '$T/st' && [ -s '$T/s/blocks.bin' ] && [ -s '$T/s/inplace.json' ] &&
	grep -q '\"disk_source\":\"store\"' '$T/st.json'"

# the plan: where each pool is read from, and why not in place
P="$DITSTAR plan $ARGS --offload disk"
check "plan: the bf16 checkpoint's blocks read where they lie" sh -c "
	$P --model-dir '$T/m' | grep -q '^pool blocks: .*; read where its blocks lie in the checkpoint$'"
check "plan: an fp32 checkpoint narrowed to bf16 reads the store, saying why" sh -c "
	$P --model-dir '$T/m32' --weight-dtype bf16 --json >'$T/p32.json' 2>'$T/err' &&
	'$PYTHON_NUMPY' -c \"import json
p = json.load(open('$T/p32.json'))['pools'][0]
assert p['disk_source'] == 'store', p
assert 'is F32 in the file, bf16 in the weights' in p['disk_source_why'], p\""
expect_fail "--disk-source checkpoint refuses a pool it cannot read in place, naming the tensor" 2 \
	"^ditstar: --disk-source checkpoint: the checkpoint cannot be read where its blocks lie: blocks\.0\.[a-z_.0-9]+ is F32 in the file, bf16 in the weights" \
	$DITSTAR generate --model-dir "$T/m32" $ARGS --offload disk --weight-dtype bf16 \
	--disk-source checkpoint --offload-dir "$T/never" --output "$T/never.out"

# midrun NAME HOOK PATTERN DESC: a copy of the checkpoint in $T/NAME read in place
# (its checksums taken by a first run, $T/NAME0), then a run with the test hook HOOK
# (DIT_TEST_STORE_..., at the 5th read: step 2) must exit 1 with one line matching
# PATTERN (after the checkpoint's path) and no output. Leaves $GM, the run's command.
midrun() {
	cp -a "$T/m" "$T/$1"
	GM="$DITSTAR generate --model-dir $T/$1 $ARGS --offload disk --resident-chunks 0 --offload-dir $T/s$1"
	$GM --output "$T/${1}0" 2>/dev/null
	env "$2=5" $GM --output "$T/${1}1" 2>"$T/$1.err"
	rc=$?
	if [ $rc -eq 1 ] && [ "$(wc -l <"$T/$1.err")" -eq 1 ] && [ ! -e "$T/${1}1" ] &&
		grep -Eq "$T/$1/diffusion_pytorch_model\.safetensors$3" "$T/$1.err"; then
		ok "$4"
	else
		fail "$4: rc $rc"
		sed 's/^/# /' "$T/$1.err"
	fi
}
midrun e DIT_TEST_STORE_EDIT \
	" changed during the run: block [0-3], read where it lies, has XXH3 [0-9a-f]{16}, its checksum when the run began [0-9a-f]{16}; " \
	"a block edited mid-run: one line naming the checkpoint and the block, exit 1, no output"
$GM --output "$T/e2" --stats-json "$T/e2.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
$DITSTAR generate --model-dir "$T/e" $ARGS --output "$T/e2ref" 2>/dev/null
check "the next run takes the checksums again: the edited model's latents" sh -c "
	cmp -s '$T/e2' '$T/e2ref' && ! cmp -s '$T/e2' '$T/e0' &&
	grep -q 'diffusion_pytorch_model.safetensors changed' '$T/e2.json'"
midrun k DIT_TEST_STORE_CUT \
	": unexpected end of file \(offset [0-9]+, [0-9]+ bytes[^)]*\); the run read its blocks where they lie$" \
	"the checkpoint cut short mid-run: one line naming it, exit 1, no output"
expect_fail "a checkpoint cut short before the run is refused in one line" 1 \
	"$T/k/diffusion_pytorch_model.safetensors" $GM --output "$T/k2"

# the checkpoint replaced during the run (an edited copy renamed over it, as an update
# would): the run keeps reading the file it opened, the model it began with; the next
# run takes the new file's checksums, its latents
cp -a "$T/m" "$T/w"
GW="$DITSTAR generate --model-dir $T/w $ARGS --offload disk --resident-chunks 0 --offload-dir $T/sw"
$GW --output "$T/w0" 2>/dev/null
DIT_TEST_STORE_SWAP=5 $GW --output "$T/w1" 2>"$T/err" || sed 's/^/# /' "$T/err"
$GW --output "$T/w2" --stats-json "$T/w2.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
$DITSTAR generate --model-dir "$T/w" $ARGS --output "$T/w2ref" 2>/dev/null
check "replaced mid-run: that run the model it began with; the next one the new file's" sh -c "
	cmp -s '$T/w1' '$T/w0' && cmp -s '$T/w2' '$T/w2ref' && ! cmp -s '$T/w2' '$T/w0' &&
	grep -q 'safetensors changed' '$T/w2.json'"

# another checkpoint copied over it with its size, times and inode: only the change time
# tells; the checksums are taken again, the new model's latents
ref make-tiny --output-dir "$T/m2" --seed 9 --layers 4 --dtype BF16 >/dev/null
cp -a "$T/m" "$T/r"
F="$T/r/diffusion_pytorch_model.safetensors"
GR="$DITSTAR generate --model-dir $T/r $ARGS --offload disk --resident-chunks 0 --offload-dir $T/sr"
sleep 3 # the first hash over 2 s after the file's last change: recorded
$GR --output "$T/r0" 2>/dev/null
touch -r "$F" "$T/stamp"
before=$(stat -c '%s %.9Y %i' "$F")
cp -p "$T/m2/diffusion_pytorch_model.safetensors" "$F" && touch -r "$T/stamp" "$F"
$GR --output "$T/r1" --stats-json "$T/r1.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
$DITSTAR generate --model-dir "$T/r" $ARGS --output "$T/r1ref" 2>/dev/null # the new model, resident
check "a checkpoint swapped with the same size, times, inode: checksums taken again, new latents" sh -c "
	[ '$before' = \"\$(stat -c '%s %.9Y %i' '$F')\" ] && cmp -s '$T/r1' '$T/r1ref' &&
	! cmp -s '$T/r1' '$T/r0' && grep -q 'safetensors changed' '$T/r1.json'"

# the checksums' file as a FIFO, a folder, garbage, cut short or a dangling link: the
# run ends (no hang) with the latents (the checksums taken again) or one line naming it;
# so does a FIFO where no blocks file is (nothing opens it)
GH="$G --offload disk --resident-chunks 0 --offload-dir $T/sh"
$GH --output "$T/h0" 2>/dev/null
cp -a "$T/sh" "$T/sh.bak"
bad=
FILES="inplace.json blocks.bin"
sanitized ditstar && FILES=inplace.json # the file it reads; the CI's time
for f in $FILES; do
	for kind in fifo dir garbage cut dangling; do
		rm -rf "$T/sh" && cp -a "$T/sh.bak" "$T/sh"
		spoil "$T/sh/$f" $kind "$T/sh.bak/$f"
		why=$(run_or_name "$T/h1" "$T/ref" "$T/sh/$f" $GH) || bad="$bad $f:$kind($why)"
	done
done
if [ -z "$bad" ]; then
	ok "hostile inplace.json and blocks.bin: the latents or one line naming the file, no hang"
else
	fail "hostile inplace.json and blocks.bin:$bad"
fi

# every family's block kinds (two experts, two pools) and a GGUF Q8_0 checkpoint, in
# place (test_compact.sh: scaled fp8, its scales in their slots)
bad=
FAMS="tiny-t2v-a14b tiny-hunyuan tiny-ltx2.3 tiny-cosmos"
sanitized ditstar && FAMS=tiny-hunyuan # its two pools; the CI's time
for m in $FAMS; do
	GF="$DITSTAR generate --model $m --steps 2 --frames 9 --height 32 --width 64 --quiet --cache-dir $T/cache"
	$GF --output "$T/$m.ref" 2>/dev/null
	$GF --offload disk --resident-chunks 0 --stats-json "$T/$m.json" --output "$T/$m.d" \
		2>"$T/err" || sed 's/^/# /' "$T/err"
	cmp -s "$T/$m.ref" "$T/$m.d" && grep -q '"disk_source":"checkpoint"' "$T/$m.json" ||
		bad="$bad $m"
done
"$PYTHON_NUMPY" "$top_srcdir/tests/ref/formats_np.py" gguf "$T/m32" "$T/gguf/wan-Q8_0.gguf" \
	"$T/gdeq" --config >/dev/null
GG="$DITSTAR generate --model-dir $T/gguf $ARGS"
$GG --output "$T/g.ref" 2>/dev/null
$GG --offload disk --resident-chunks 0 --offload-dir "$T/sg" --stats-json "$T/g.json" \
	--output "$T/g.d" 2>"$T/err" || sed 's/^/# /' "$T/err"
cmp -s "$T/g.ref" "$T/g.d" && grep -q '"disk_source":"checkpoint"' "$T/g.json" &&
	grep -q '"block_matrices":"q8_0' "$T/g.json" || bad="$bad gguf"
if [ -z "$bad" ]; then
	ok "every family's tiny preset and a GGUF Q8_0 checkpoint read in place, byte-identical"
else
	fail "read in place, byte-identical:$bad"
fi

# PoCL reads in place too
if "$DITSTAR" generate --model-dir "$T/m" $ARGS --workers opencl --output "$T/oref" 2>/dev/null; then
	$G --workers opencl --offload disk --resident-chunks 0 --offload-dir "$T/so" \
		--output "$T/od" 2>"$T/err" || sed 's/^/# /' "$T/err"
	identical "PoCL, in place: byte-identical to its resident run" "$T/oref" "$T/od"
else
	ok "PoCL, in place # SKIP no OpenCL device"
fi
finish
