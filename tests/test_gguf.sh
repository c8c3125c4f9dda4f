# GGUF files as city96's ComfyUI-GGUF tool writes them (tests/ref/formats_np.py writes
# the layout, F16 / BF16 rounding and ggml's Q8_0 quantisation from the format's
# definition): --model-dir FILE.gguf with the configuration from the shapes, or a
# folder holding the file and config.json; widened on load, they give the bytes of
# the official checkpoint holding the dequantised values. Hostile files are one-line
# errors naming the file (and the tensor or key).
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch gguf)
plan 49

fmt() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/formats_np.py" "$@"; }
refhy() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/hunyuan_ref.py" "$@"; }
"$PYTHON_NUMPY" - "$T/in" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
r = np.random.default_rng(3)
st.save(sys.argv[1], {'x': r.standard_normal((4, 3, 4, 6)).astype(np.float32),
                      't': np.array([613.0], dtype=np.float32),
                      'context': r.standard_normal((5, 24)).astype(np.float32)})
PY
# same DESC MODEL REF [INPUTS]: forward of MODEL, its block matrices widened to fp32 as
# they are read (--weight-dtype f32), gives the bytes of REF's
same() {
	for m in "$2" "$3"; do
		"$DITSTAR" forward --model-dir "$m" --inputs "${4:-$T/in}" --weight-dtype f32 \
			--output "$m.y" 2>"$T/err" || sed 's/^/# /' "$T/err"
	done
	identical "$1" "$2.y" "$3.y"
}

fmt tiny128 "$T/w" --seed 3
fmt gguf "$T/w" "$T/g/w-Q8_0.gguf" "$T/wdeq"
check "info: Q8_0, F16, BF16 and F32 tensors, the configuration from the shapes" sh -c "
	'$DITSTAR' info --model-dir '$T/g/w-Q8_0.gguf' >'$T/info' &&
	grep -Eq '^stored       F32 [0-9]+, F16 [0-9]+, BF16 [0-9]+, Q8_0 [0-9]+ ' '$T/info' &&
	grep -q '^config       read from the tensor shapes' '$T/info' &&
	grep -q '^family       wan2.1-t2v' '$T/info'"
check "every tensor reads as its dequantised value (fp32 and bf16 bits)" \
	"$top_builddir/tests/pt_check" same "$T/g/w-Q8_0.gguf" "$T/wdeq"
fmt big "$T/big.gguf" "$T/big8.safetensors" "$T/bigdeq"
check "Q8_0, F16, BF16 and F32 tensors past the 256 KiB read tile: the same bits" \
	"$top_builddir/tests/pt_check" same "$T/big.gguf" "$T/bigdeq"
same "forward: the GGUF = the official layout of its dequantised values" "$T/g/w-Q8_0.gguf" \
	"$T/wdeq"
"$DITSTAR" forward --model-dir "$T/g/w-Q8_0.gguf" --inputs "$T/in" --weight-dtype bf16 \
	--output "$T/y16.g" 2>"$T/err" || sed 's/^/# /' "$T/err"
"$DITSTAR" forward --model-dir "$T/wdeq" --inputs "$T/in" --weight-dtype bf16 \
	--output "$T/y16.d" 2>"$T/err" || sed 's/^/# /' "$T/err"
identical "forward with bf16 block weights: the same" "$T/y16.g" "$T/y16.d"
# compact weights (the default): Q8_0, F16 and BF16 matrices kept as stored, widened a
# tile at a time in the GEMMs, the same values: within fp32 rounding of the widened run
"$DITSTAR" forward --model-dir "$T/g/w-Q8_0.gguf" --inputs "$T/in" --output "$T/yc.g" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
within "forward with compact weights (Q8_0, F16, BF16 kept) = widened, within 1e-5" \
	"$T/yc.g" "$T/wdeq.y" y 1e-5
for m in g/w-Q8_0.gguf wdeq; do
	"$DITSTAR" generate --model-dir "$T/$m" --steps 3 --frames 5 --height 32 --width 48 \
		--quiet --weight-dtype f32 --stats-json "$T/stats.$(basename "$m")" --output "$T/gen.$(basename "$m")" \
		2>"$T/err" || sed 's/^/# /' "$T/err"
done
within "generate: the same latents" "$T/gen.w-Q8_0.gguf" "$T/gen.wdeq" latents 0
check "the stats list the stored dtypes" "$PYTHON_NUMPY" -c "
import json
w = json.load(open('$T/stats.w-Q8_0.gguf'))['weights']['stored_dtypes']
assert w['Q8_0'] > 0 and w['F16'] > 0 and w['BF16'] > 0, w"
"$DITSTAR" generate --model-dir "$T/g/w-Q8_0.gguf" --steps 3 --frames 5 --height 32 \
	--width 48 --quiet --weight-dtype f32 --offload disk --offload-dir "$T/store" \
	--output "$T/gen.disk" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
within "generate --offload disk from the GGUF: the same latents" "$T/gen.disk" "$T/gen.wdeq" \
	latents 0

# the names after ComfyUI's prefix; a folder of the file and config.json (32 wide)
fmt gguf "$T/w" "$T/gp/w.gguf" "$T/wdeq2" --prefix model.diffusion_model.
same "forward: prefixed names = the same" "$T/gp/w.gguf" "$T/wdeq"
ref make-tiny --output-dir "$T/off" --seed 5 --layers 2 >/dev/null
fmt gguf "$T/off" "$T/dir/wan-Q8_0.gguf" "$T/offdeq" --config
same "forward: a folder of the GGUF and config.json = dequantised official" "$T/dir" \
	"$T/offdeq"
same "forward: the GGUF named, config.json beside it = the same" "$T/dir/wan-Q8_0.gguf" \
	"$T/offdeq"

# Wan2.2 T2V-A14B: each expert's folder holds its GGUF and config.json
ref22 make-tiny --variant t2v-a14b --output-dir "$T/a14b" --seed 5 --layers 2 >/dev/null
for e in high_noise_model low_noise_model; do
	fmt gguf "$T/a14b/$e" "$T/a14bg/$e/$e-Q8_0.gguf" "$T/a14bd/$e" --config
done
wan22_inputs "$T"
for m in a14bg a14bd; do
	"$DITSTAR" generate --model-dir "$T/$m" --noise "$T/noise4" --context "$T/ctx" --steps 6 \
		--quiet --weight-dtype f32 --output "$T/gen.$m" 2>"$T/err" || sed 's/^/# /' "$T/err"
done
within "Wan2.2 T2V-A14B: the experts' GGUF files = their dequantised official layout" \
	"$T/gen.a14bg" "$T/gen.a14bd" latents 0

# HunyuanVideo ("hyvid"): beside its config.json
refhy make-tiny --output-dir "$T/hy" --seed 3 >/dev/null
refhy inputs --model-dir "$T/hy" --output "$T/hin" --seed 7 --frames 3 --height 8 --width 12 \
	--text-len 20 --valid 7 >/dev/null
fmt gguf "$T/hy" "$T/hyg/hy-Q8_0.gguf" "$T/hydeq" --arch hyvid --config
same "HunyuanVideo: its GGUF beside config.json = dequantised official" "$T/hyg/hy-Q8_0.gguf" \
	"$T/hydeq" "$T/hin"

# hostile files
fmt hostile-gguf "$T/w" "$T/bad"
bad() { # bad DESC CASE PATTERN
	expect_fail "$1" 1 "bad/$2.gguf: $3" "$DITSTAR" info --model-dir "$T/bad/$2.gguf"
}
check "the hostile set's good file opens" "$DITSTAR" info --model-dir "$T/bad/good.gguf"
bad "truncated in the header" trunc_header "file is truncated: it ends at byte 20, inside the header"
bad "truncated in the tensor infos" trunc_infos "file is truncated: 69 tensors and 3 metadata entries declared"
bad "truncated in the data" trunc_data "file is truncated: the tensor's data ends past the [0-9]+ bytes of the data section \\(tensor '[a-z_.0-9]+'\\)"
bad "no magic" magic "not a GGUF file"
bad "version 1" v1 "GGUF version 1: versions 2 and 3 are read"
bad "big-endian" bigendian "a big-endian GGUF file \\(version 3 byte-swapped\\)"
bad "Q4_K refused by name" q4k "tensor 'blocks.0.ffn.0.weight' is Q4_K; ditstar reads F32, F16, BF16, Q8_0"
bad "an unknown type" unknown "tensor 'blocks.0.ffn.0.weight' has ggml type 99"
bad "a huge tensor count" huge_tensors "1099511627776 tensors and 0 metadata entries declared \\(65536 and 65536 at most\\)"
bad "a huge metadata count" huge_kvs "0 tensors and 1099511627776 metadata entries declared"
bad "a huge string" huge_string "a metadata key is a string of 4611686018427387904 bytes \\(65535 at most\\)"
bad "a huge array" huge_array "key 'a' declares an array of 1152921504606846976 values"
bad "an alignment that is no power of two" align3 "general.alignment 3 is not a power of two"
bad "misaligned data" misaligned "tensor data at offset [0-9]+ is not aligned to 32 \\(tensor 'blocks.0.ffn.2.weight'\\)"
bad "overlapping data" overlap "data overlaps that of tensor 'blocks.0.ffn.2.bias' \\(tensor 'blocks.0.ffn.2.weight'\\)"
bad "data past the end" past_end "file is truncated: the tensor's data ends past the [0-9]+ bytes of the data section \\(tensor 'head.modulation'\\)"
bad "Q8_0 rows of partial blocks" q8_rows "tensor 'blocks.0.extra.weight' is Q8_0 with rows of 24 elements, not whole blocks of 32"
bad "a name twice" dup "tensor named twice \\(tensor '"
bad "a NUL in a name" nul "tensor 0's name is empty or holds a NUL byte \\('bad\\\\x00name'\\)"
bad "dimensions that overflow" overflow "the dimensions overflow the element count \\(tensor 'big'\\)"
bad "nine dimensions" ndims "9 dimensions, 1 to 8 are read \\(tensor 'deep'\\)"
bad "an array of arrays" nested "key 'a' is an array of arrays"
bad "another model's architecture" flux "no config: .* general.architecture 'flux'"
# GGUF inside archives: read through the archive's member reader (an uncompressed tar's
# member in place, the others decompressed into memory), alone (the configuration from
# the shapes) or in a folder with config.json
(cd "$T/g" && tar cf "$T/ga.tar" w-Q8_0.gguf && tar czf "$T/ga.tar.gz" w-Q8_0.gguf)
(cd "$T" && tar czf "$T/dir.tar.gz" dir)
"$PYTHON_NUMPY" - "$T" <<'PY'
import sys, zipfile
t = sys.argv[1]
with zipfile.ZipFile(t + '/ga.zip', 'w', zipfile.ZIP_DEFLATED) as z:
    z.write(t + '/g/w-Q8_0.gguf', 'w-Q8_0.gguf')
PY
check "info: the GGUF alone in a tar, its configuration from the shapes" sh -c "
	'$DITSTAR' info --model-dir '$T/ga.tar' >'$T/infoa' &&
	grep -Eq '^stored       F32 [0-9]+, F16 [0-9]+, BF16 [0-9]+, Q8_0 [0-9]+ ' '$T/infoa' &&
	grep -q '^config       read from the tensor shapes' '$T/infoa' &&
	grep -q '^family       wan2.1-t2v' '$T/infoa'"
# compact weights read from the archive's members as from the file
"$DITSTAR" generate --model-dir "$T/g/w-Q8_0.gguf" --steps 3 --frames 5 --height 32 --width 48 \
	--quiet --output "$T/gen.cg" 2>"$T/err" || sed 's/^/# /' "$T/err"
for a in ga.tar ga.tar.gz ga.zip; do
	"$DITSTAR" generate --model-dir "$T/$a" --steps 3 --frames 5 --height 32 --width 48 \
		--quiet --output "$T/gen.$a" 2>"$T/err" || sed 's/^/# /' "$T/err"
	same_latents "generate: the GGUF alone in ${a#ga} = the plain file" "$T/gen.$a" \
		"$T/gen.cg"
done
if command -v zstd >/dev/null 2>&1; then
	(cd "$T/g" && tar cf - w-Q8_0.gguf | zstd -q -o "$T/ga.tar.zst")
	same "forward: the GGUF alone in a tar.zst = the plain file" "$T/ga.tar.zst" \
		"$T/g/w-Q8_0.gguf"
else
	ok "# SKIP tar.zst: no zstd command"
fi
same "forward: a tar.gz of the folder (config.json and the GGUF) = the folder" \
	"$T/dir.tar.gz" "$T/dir"
head -c 200000 "$T/ga.tar" >"$T/gtrunc.tar"
expect_fail "a tar whose GGUF member is truncated: archive and member named" 1 \
	"gtrunc.tar: member 'w-Q8_0.gguf' is truncated \\(declares [0-9]+ bytes, only 199[0-9]+ present\\)" \
	"$DITSTAR" info --model-dir "$T/gtrunc.tar"
head -c 200000 "$T/ga.zip" >"$T/gtrunc.zip"
expect_fail "a zip whose GGUF member is truncated: archive and member named" 1 \
	"gtrunc.zip: truncated or corrupt after member 'w-Q8_0.gguf'" \
	"$DITSTAR" info --model-dir "$T/gtrunc.zip"
(cd "$T/bad" && tar cf "$T/gbad.tar" trunc_data.gguf)
expect_fail "a GGUF whose data the file does not hold, in a tar: archive:member named" 1 \
	"gbad.tar:trunc_data.gguf: file is truncated: the tensor's data ends past the [0-9]+ bytes of the data section" \
	"$DITSTAR" info --model-dir "$T/gbad.tar"
# the readers under valgrind's memcheck: every file above, good and hostile, opened
# through the checkpoint layer (tests/pt_check), the good ones read in full, and the
# GGUF archives (good ones read in full)
PT=$(real_bin tests/pt_check)
if ! command -v valgrind >/dev/null 2>&1; then
	ok "# SKIP valgrind not installed"
elif grep -q __asan_init "$PT" 2>/dev/null; then
	ok "# SKIP a sanitized build (ASan and valgrind exclude each other)"
else
	vg() { valgrind -q --error-exitcode=9 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect "$PT" "$@" >/dev/null 2>>"$T/vg"; }
	: >"$T/vg"
	vgok=1
	for f in "$T"/bad/*.gguf; do
		vg open "$f"
		[ $? -eq 9 ] && vgok=0
	done
	vg same "$T/g/w-Q8_0.gguf" "$T/wdeq" || vgok=0
	vg same "$T/big.gguf" "$T/bigdeq" || vgok=0
	for a in ga.tar ga.tar.gz ga.zip; do # in place and in memory, read in full
		vg same "$T/$a" "$T/wdeq" || vgok=0
	done
	for a in gtrunc.tar gtrunc.zip gbad.tar; do
		vg open "$T/$a"
		[ $? -eq 9 ] && vgok=0
	done
	if [ $vgok -eq 1 ]; then
		ok "the GGUF reader is valgrind-clean on $(ls "$T"/bad/*.gguf | wc -l) files, two full reads and six archives"
	else
		fail "the GGUF reader is valgrind-clean"
		grep '==' "$T/vg" | head -n 30 | sed 's/^/# /'
	fi
fi
expect_fail "generate refuses a hostile file before any work" 1 \
	"bad/q4k.gguf: tensor 'blocks.0.ffn.0.weight' is Q4_K" \
	"$DITSTAR" generate --model-dir "$T/bad/q4k.gguf" --steps 2 --frames 5 --height 32 \
	--width 48 --quiet --output "$T/never"
finish
