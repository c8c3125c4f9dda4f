# The disk chunk store's integrity and I/O faults: a store is reused only when every
# chunk matches the manifest's size and XXH3 checksum and the manifest matches the
# checkpoint; a flipped bit, a truncated chunk, a missing manifest or a changed
# checkpoint make it rebuilt (with the reason in the stats), never used. A write that
# fails (file-size limit, full file system) is a one-line error naming the file, and
# leaves no manifest and no temporary file.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch store)
plan 11

ref make-tiny --output-dir "$T/m" --seed 8 --layers 4 >/dev/null
G="$DITSTAR generate --model-dir $T/m --frames 5 --height 32 --width 48 --steps 2 --quiet"
$G --output "$T/ref" 2>/dev/null
S="$G --offload disk --offload-dir $T/store"

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

printf '\001' | dd of="$T/store/chunk_0002.bin" bs=1 seek=1000 conv=notrunc 2>/dev/null
run flipped && store_field flipped store_written_because | grep -q "chunk_0002.bin: checksum .* (corrupted)" &&
	ok "flipped bit detected, store rebuilt, output unchanged" ||
	fail "flipped bit detected, store rebuilt, output unchanged"
run after_flip && [ "$(store_field after_flip store_reused)" = True ] &&
	ok "rebuilt store is reused" || fail "rebuilt store is reused"

head -c 4096 "$T/store/chunk_0001.bin" >"$T/cut" && mv "$T/cut" "$T/store/chunk_0001.bin"
run truncated && store_field truncated store_written_because | grep -q "chunk_0001.bin is 4096 bytes.*truncated" &&
	ok "truncated chunk detected, store rebuilt" || fail "truncated chunk detected, store rebuilt"

rm "$T/store/manifest.json"
run nomanifest && store_field nomanifest store_written_because | grep -q "no complete store" &&
	ok "store without manifest rebuilt" || fail "store without manifest rebuilt"

touch -d '2002-02-02' "$T/m/diffusion_pytorch_model.safetensors"
run stale && store_field stale store_written_because | grep -q "another checkpoint" &&
	ok "stale store (checkpoint changed) rebuilt" || fail "stale store (checkpoint changed) rebuilt"

# A write that fails half-way: a file-size limit below one chunk.
rm -rf "$T/store2"
(ulimit -f 20; $G --offload disk --offload-dir "$T/store2" --output "$T/limited") \
	>/dev/null 2>"$T/err"
rc=$?
if [ $rc -eq 1 ] && [ "$(wc -l <"$T/err")" -eq 1 ] &&
	grep -q "$T/store2/chunk_0000.bin: write failed: File too large" "$T/err"; then
	ok "failed chunk write: one-line error naming the file"
else
	fail "failed chunk write: one-line error naming the file (rc $rc)"
	sed 's/^/# /' "$T/err"
fi
if [ ! -e "$T/store2/manifest.json" ] && [ -z "$(ls "$T/store2" | grep tmp)" ] &&
	[ ! -e "$T/limited" ]; then
	ok "failed write leaves no manifest, no temporary file, no output"
else
	fail "failed write leaves no manifest, no temporary file, no output"
	ls -la "$T/store2" | sed 's/^/# /'
fi
$G --offload disk --offload-dir "$T/store2" --output "$T/recovered" 2>/dev/null
identical "next run completes the store" "$T/ref" "$T/recovered"

# A full file system (a 1 MiB tmpfs, where mounting is allowed).
mkdir -p "$T/small"
if mount -t tmpfs -o size=1m tmpfs "$T/small" 2>/dev/null; then
	expect_fail "full file system refused before writing" 1 "$T/small/store: not enough space for the chunk store" \
		$G --offload disk --offload-dir "$T/small/store"
	umount "$T/small"
else
	ok "full file system refused before writing # SKIP cannot mount a tmpfs here"
fi
finish
