# The disk chunk store's integrity and I/O faults: a store is reused only when every
# block matches the manifest's size and XXH3 checksum and the manifest matches the
# checkpoint's content; a flipped bit, a truncated blocks file, a missing manifest or a
# changed checkpoint (even one copied over with the same size and times: cp -p,
# touch -r) make it rebuilt (with the reason in the stats), never used; a checkpoint
# only touched keeps it. Stale temporary files are removed. A write that fails
# (file-size limit, full file system) is a one-line error naming the file, and leaves
# no manifest and no temporary file. One store serves every chunk size (one blocks
# file, reused as it is); an older version's per-chunk-size layout is rewritten in
# place, and its stores in the cache removed. tests/test_store_share.sh: concurrent
# runs, blocks edited in the middle of a run.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch store)
plan 21

ref make-tiny --output-dir "$T/m" --seed 8 --layers 4 >/dev/null
G="$DITSTAR generate --model-dir $T/m --frames 5 --height 32 --width 48 --steps 2 --quiet"
$G --output "$T/ref" 2>/dev/null
S="$G --offload disk --disk-source store --offload-dir $T/store"

# run NAME: a disk-mode run; its output must equal the resident run's.
run() {
	$S --output "$T/$1" --stats-json "$T/$1.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
	cmp -s "$T/ref" "$T/$1"
}
# store_field NAME KEY
store_field() {
	"$PYTHON_NUMPY" -c "import json,sys; print(json.load(open(sys.argv[1]))['offload'][sys.argv[2]])" \
		"$T/$1.json" "$2"
}

run first && [ "$(store_field first store_reused)" = False ] &&
	ok "store written on first use" || fail "store written on first use"
run second && [ "$(store_field second store_reused)" = True ] &&
	ok "intact store reused" || fail "intact store reused"

B="$T/store/blocks.bin"
# block 2 of the 4, 1000 bytes in
printf '\001' | dd of="$B" bs=1 seek=$(($(stat -c %s "$B") / 2 + 1000)) conv=notrunc 2>/dev/null
run flipped && store_field flipped store_written_because | grep -q "blocks.bin: block 2 has checksum .* (corrupted)" &&
	ok "flipped bit detected, store rebuilt, output unchanged" ||
	fail "flipped bit detected, store rebuilt, output unchanged"
run after_flip && [ "$(store_field after_flip store_reused)" = True ] &&
	ok "rebuilt store is reused" || fail "rebuilt store is reused"

head -c 4096 "$B" >"$T/cut" && mv "$T/cut" "$B"
run truncated && store_field truncated store_written_because | grep -q "blocks.bin is 4096 bytes.*truncated" &&
	ok "truncated blocks file detected, store rebuilt" || fail "truncated blocks file detected, store rebuilt"

rm "$T/store/manifest.json"
run nomanifest && store_field nomanifest store_written_because | grep -q "no complete store" &&
	ok "store without manifest rebuilt" || fail "store without manifest rebuilt"

# record_field KEY: records.json's record of the checkpoint file (none: "none").
F="$T/m/diffusion_pytorch_model.safetensors"
record_field() {
	"$PYTHON_NUMPY" -c "import json,sys; r=json.load(open(sys.argv[1]))['files']; print(r[0][sys.argv[2]] if r else 'none')" \
		"$T/store/records.json" "$1"
}
man=$(stat -c %i "$T/store/manifest.json")
touch -d '2002-02-02' "$F"
run touched && [ "$(store_field touched store_reused)" = True ] &&
	[ "$man" = "$(stat -c %i "$T/store/manifest.json")" ] &&
	ok "checkpoint touched, same content (hashed again): store kept" ||
	fail "checkpoint touched, same content (hashed again): store kept"

# Another checkpoint of the same config copied over it with its size, times and
# inode (cp -p, touch -r): only the change time tells, and the store is rebuilt.
ref make-tiny --output-dir "$T/m2" --seed 9 --layers 4 >/dev/null
sleep 3 # the next hash is taken over 2 s after the file's last change: recorded
run trusted && [ "$(record_field ctime_ns)" = "$(stat -c %.9Z "$F" | tr -d .)" ] &&
	[ "$(record_field mtime_ns)" = "$(stat -c %.9Y "$F" | tr -d .)" ] &&
	ok "an old checkpoint's stat is recorded with its hash (not read while it matches)" ||
	fail "an old checkpoint's stat is recorded with its hash (not read while it matches)"
touch -r "$F" "$T/stamp"
before=$(stat -c '%s %.9Y %i' "$F")
cp -p "$T/m2/diffusion_pytorch_model.safetensors" "$F" && touch -r "$T/stamp" "$F"
after=$(stat -c '%s %.9Y %i' "$F")
$S --output "$T/swapped" --stats-json "$T/swapped.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
$G --output "$T/ref2" 2>/dev/null # the new model, resident
if [ "$before" = "$after" ] && cmp -s "$T/ref2" "$T/swapped" && ! cmp -s "$T/ref" "$T/ref2" &&
	store_field swapped store_written_because | grep -q "safetensors changed"; then
	ok "checkpoint swapped with the same size, mtime, inode: store rebuilt, new latents"
else
	fail "checkpoint swapped with the same size, mtime, inode: store rebuilt, new latents"
	echo "# $before / $after"
fi
cp "$T/ref2" "$T/ref" # the checkpoint is now the new one

# Temporary files left by a killed run are removed once the store is locked; other
# files are kept.
touch "$T/store/blocks.bin.tmp.Ab12Cd" "$T/store/manifest.json.tmp.x1y2z3" \
	"$T/store/STARPU_a1b2c3" "$T/store/notes.txt" "$T/store/notes.tmp.txt"
mkdir -p "$T/store/sub" && touch "$T/store/sub/blocks.bin.tmp.Q1w2E3"
run cleaned
left=$(cd "$T/store" && ls -d *.tmp.* STARPU_* sub/* 2>/dev/null | tr '\n' ' ')
if [ "$left" = "notes.tmp.txt " ] && [ -e "$T/store/notes.txt" ] && cmp -s "$T/ref" "$T/cleaned"; then
	ok "stale temporary files removed, other files kept"
else
	fail "stale temporary files removed, other files kept (left: $left)"
fi

# A write that fails half-way: a file-size limit below one block.
rm -rf "$T/store2"
(ulimit -f 20; $G --offload disk --disk-source store --offload-dir "$T/store2" --output "$T/limited") \
	>/dev/null 2>"$T/err"
rc=$?
if [ $rc -eq 1 ] && [ "$(wc -l <"$T/err")" -eq 1 ] &&
	grep -q "$T/store2/blocks.bin: write failed: File too large" "$T/err"; then
	ok "failed store write: one-line error naming the file"
else
	fail "failed store write: one-line error naming the file (rc $rc)"
	sed 's/^/# /' "$T/err"
fi
if [ ! -e "$T/store2/manifest.json" ] && [ -z "$(ls "$T/store2" | grep tmp)" ] &&
	[ ! -e "$T/limited" ]; then
	ok "failed write leaves no manifest, no temporary file, no output"
else
	fail "failed write leaves no manifest, no temporary file, no output"
	ls -la "$T/store2" | sed 's/^/# /'
fi
$G --offload disk --disk-source store --offload-dir "$T/store2" --output "$T/recovered" 2>/dev/null
identical "next run completes the store" "$T/ref" "$T/recovered"

# A full file system (a 1 MiB tmpfs, where mounting is allowed).
mkdir -p "$T/small"
if mount -t tmpfs -o size=1m tmpfs "$T/small" 2>/dev/null; then
	expect_fail "full file system refused before writing" 1 "$T/small/store: not enough space for the chunk store" \
		$G --offload disk --disk-source store --offload-dir "$T/small/store"
	umount "$T/small"
	# a store rewritten in place (its manifest gone): the blocks file it replaces
	# counts as free (the tiny preset's 3.6 MiB store and StarPU's 64 MiB of room fit
	# 70 MiB once, not twice: counted as taken they were refused)
	mount -t tmpfs -o size=70m tmpfs "$T/small"
	GT="$DITSTAR generate --model tiny --steps 1 --quiet --cache-dir $T/cache"
	$GT --offload disk --disk-source store --offload-dir "$T/small/store" --output "$T/fs1" 2>"$T/err" ||
		sed 's/^/# /' "$T/err"
	rm -f "$T/small/store/manifest.json"
	if $GT --offload disk --disk-source store --offload-dir "$T/small/store" --output "$T/fs2" 2>"$T/err" &&
		cmp -s "$T/fs1" "$T/fs2"; then
		ok "a store rewritten in place counts its old blocks as free"
	else
		fail "a store rewritten in place counts its old blocks as free"
		sed 's/^/# /' "$T/err"
	fi
	umount "$T/small"
else
	ok "full file system refused before writing # SKIP cannot mount a tmpfs here"
	ok "a store rewritten in place counts its old blocks as free # SKIP cannot mount a tmpfs here"
fi
# SIGTERM while the store is written: exit 130 with the one line that says so, no
# manifest (the store is not taken as whole), and the next run completes it
GS="$DITSTAR generate --model small --frames 5 --height 64 --width 96 --steps 1 --quiet"
GS="$GS --cache-dir $T/cache --offload disk --disk-source store --offload-dir $T/sigstore"
$DITSTAR info --model small --cache-dir "$T/cache" >/dev/null 2>&1 # the preset, made once
$GS --output "$T/sig" 2>"$T/sigerr" &
pid=$!
i=0
while ! ls "$T"/sigstore/blocks.bin.tmp.* >/dev/null 2>&1 && [ $i -lt 600 ] &&
	kill -0 $pid 2>/dev/null; do
	sleep 0.05
	i=$((i + 1))
done
kill -TERM $pid 2>/dev/null
wait $pid
rc=$?
if [ $rc -eq 130 ] && [ "$(wc -l <"$T/sigerr")" -eq 1 ] && grep -q "interrupted" "$T/sigerr" &&
	[ ! -e "$T/sigstore/manifest.json" ] && [ ! -e "$T/sig" ]; then
	ok "SIGTERM while the store is written: exit 130, one line, no manifest, no output"
elif [ $rc -eq 0 ]; then
	ok "SIGTERM while the store is written # SKIP the run ended before the signal"
else
	fail "SIGTERM while the store is written: rc $rc, manifest $([ -e "$T/sigstore/manifest.json" ] && echo left || echo absent)"
	sed 's/^/# /' "$T/sigerr"
fi
check "after SIGTERM the next run completes the store" $GS --output "$T/sig2"

# old_store DIR: what an older version left in DIR, a store per chunk size: its marker,
# a format-3 manifest, chunk files
old_store() {
	mkdir -p "$1" && echo 'ditstar chunk store, format 1' >"$1/ditstar-store" &&
		echo '{"format": 3}' >"$1/manifest.json" && touch "$1/build.lock" "$1/use.lock" &&
		head -c 8192 /dev/zero >"$1/chunk_0000.bin" && head -c 8192 /dev/zero >"$1/chunk_0001.bin"
}
# an older version's layout in the --offload-dir folder: rewritten, its chunk files gone
old_store "$T/relayout"
$G --offload disk --disk-source store --offload-dir "$T/relayout" --output "$T/rl1" --stats-json "$T/rl1.json" \
	2>/dev/null
check "an older layout in the folder: rewritten as one blocks file, its chunk files gone" sh -c "
	[ -z \"\$(ls '$T/relayout' | grep '^chunk_')\" ] && [ -s '$T/relayout/blocks.bin' ] &&
	cmp -s '$T/ref' '$T/rl1' && grep -q 'older layout (a file per chunk' '$T/rl1.json'"
# ditstar's cache keeps one store per checkpoint for every chunk size: chunk sizes 1, 2
# and 4 read the same blocks file, reused as it is, no larger than the blocks
GC="$DITSTAR generate --model tiny --steps 1 --quiet --cache-dir $T/rc --offload disk --disk-source store"
for c in 1 2 4; do
	$GC --offload-chunk-size $c --output "$T/c$c" --stats-json "$T/c$c.json" 2>/dev/null
	ls -i "$T"/rc/chunks/*/blocks.bin >>"$T/inodes" 2>/dev/null
done
h=$(ls "$T/rc/chunks")
k=${h%%-*}    # the checkpoint's hash
tag=${h#"$k"} # the matrices' dtype ("-bf16"; none for fp32)
stores() { ls "$T/rc/chunks" | sed "s/^$k/H/" | tr '\n' ' '; }
check "chunk sizes 1, 2, 4: one store, its blocks file written once, outputs identical" \
	"$PYTHON_NUMPY" - "$T" "$T/rc/chunks/$h" <<'PY'
import json, os, sys
t, d = sys.argv[1:3]
runs = [json.load(open('%s/c%d.json' % (t, c))) for c in (1, 2, 4)]
assert [r['offload']['store_reused'] for r in runs] == [False, True, True], runs
inodes = open(t + '/inodes').read().split()[::2]
assert len(inodes) == 3 and len(set(inodes)) == 1, inodes
outs = [open('%s/c%d' % (t, c), 'rb').read() for c in (1, 2, 4)]
assert outs[0] == outs[1] == outs[2]
w = runs[0]['weights']
blocks = w['blocks'] * w['chunk_bytes']  # chunk 1: a block's stored bytes
files = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
assert os.path.getsize(d + '/blocks.bin') == blocks, (os.path.getsize(d + '/blocks.bin'), blocks)
assert files <= 1.01 * blocks, (files, blocks)
print('# store %d bytes for %d bytes of blocks (%.4f)' % (files, blocks, files / blocks))
PY
# an older version's stores of this checkpoint (one per chunk size): removed when the
# store is written, each unless a run holds one of its locks; a store of another dtype
# stays; in a folder holding a file not the store's, that file and its folder stay
old_store "$T/rc/chunks/$k-c4$tag"
old_store "$T/rc/chunks/$k-c2$tag"
old_store "$T/rc/chunks/$k-c1-f16"
o2="$T/rc/chunks/$k-c2$tag"
mkfifo "$T/hold"
"$PYTHON_NUMPY" -c "
import fcntl, sys
f = open(sys.argv[1])
fcntl.flock(f, fcntl.LOCK_SH)
open(sys.argv[2]).read()" "$o2/use.lock" "$T/hold" &
holder=$!
i=0
while ! grep -q "$(stat -c %i "$o2/use.lock")" /proc/locks && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
rm "$T/rc/chunks/$h/manifest.json"
$GC --offload-chunk-size 2 --output "$T/c2b" --stats-json "$T/c2b.json" 2>/dev/null
s1=$(stores)
echo >"$T/hold" # the holder ends
wait $holder
echo mine >"$o2/notes.txt"
rm "$T/rc/chunks/$h/manifest.json"
$GC --offload-chunk-size 1 --output "$T/c1b" 2>/dev/null
want="H$tag H-c1-f16 H-c2$tag "
if [ "$s1" = "$want" ] && grep -q 'removed 1 other store of this checkpoint' "$T/c2b.json" &&
	cmp -s "$T/c1" "$T/c2b"; then
	ok "an older version's stores of the checkpoint go when the store is written"
else
	fail "an older version's stores of the checkpoint go when the store is written: '$s1'"
fi
if [ "$(stores)" = "$want" ] && [ "$(ls "$o2")" = notes.txt ] &&
	[ "$(cat "$o2/notes.txt")" = mine ] && cmp -s "$T/c1" "$T/c1b"; then
	ok "a store in use stays; a file not the store's stays"
else
	fail "a store in use stays; a file not the store's stays: '$(stores)', $(ls "$o2" | tr '\n' ' ')"
fi
finish
