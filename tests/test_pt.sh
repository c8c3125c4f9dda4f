# PyTorch .pt checkpoints (torch.save's zip, written by tests/ref/pt_write.py) through
# the checkpoint layer: every tensor reads bit for bit as the same tensors written as
# safetensors (bf16, f32, f16; fp8 dequantized with the scales of its *_map.pt, also
# from a tar; zip64; another zip folder; a bare state dict), --load-key picks the
# dict (TransformerEngine's _extra_state, an io.BytesIO, skipped: every dict holds one),
# a forward of the tiny model from a .pt is byte-identical to the safetensors
# one, and hostile files are refused with exit 1 and one line naming the file and
# what is wrong.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch pt)
plan 52

W="$top_srcdir/tests/ref/pt_write.py"
PT="$top_builddir/tests/pt_check"
pt_write() { "$PYTHON_NUMPY" "$W" "$@"; }

# same "description" DIR REF [KEY]: every tensor of DIR reads as REF's.
same() {
	if res=$("$PT" same "$2" "$3" ${4:+"$4"} 2>&1); then
		ok "$1: $res"
	else
		fail "$1"
		printf '%s\n' "$res" | sed 's/^/# /'
	fi
}

# opens "description" DIR PATTERN [KEY]: DIR opens, its summary matching PATTERN.
opens() {
	if res=$("$PT" open "$2" ${4:+"$4"} 2>&1) && printf '%s\n' "$res" | grep -Eq -- "$3"; then
		ok "$1: $res"
	else
		fail "$1"
		printf '%s\n' "$res" | sed 's/^/# /'
	fi
}

for dt in bf16 f32 f16; do
	pt_write checkpoint "$T/$dt" "$T/$dt.ref" --dtype $dt --seed 1
	same "$dt .pt reads as the safetensors" "$T/$dt" "$T/$dt.ref/module"
done
same "--load-key ema reads the other dict" "$T/bf16" "$T/bf16.ref/ema" ema
if "$PT" same "$T/bf16" "$T/bf16.ref/ema" >/dev/null 2>&1; then
	fail "the default key is module, not ema"
else
	ok "the default key is module, not ema"
fi
opens "the load key is recorded" "$T/bf16" "^1 files, 14 tensors, load key module$"

pt_write checkpoint "$T/fp8" "$T/fp8.ref" --dtype fp8 --seed 2
same "fp8 .pt with its _map.pt: dequantized" "$T/fp8" "$T/fp8.ref/module"
same "fp8 .pt, the ema dict, same scales" "$T/fp8" "$T/fp8.ref/ema" ema
opens "the map is one of the checkpoint's files" "$T/fp8" "^2 files, 14 tensors"
(cd "$T/fp8" && tar cf "$T/fp8.tar" .)
same "fp8 .pt and map in an uncompressed tar, read in place" "$T/fp8.tar" "$T/fp8.ref/module"

pt_write checkpoint "$T/z64" "$T/z64.ref" --zip64 --root archive --seed 3
same "zip64 records and folder 'archive'" "$T/z64" "$T/z64.ref/module"
pt_write checkpoint "$T/fp8z" "$T/fp8z.ref" --dtype fp8 --zip64 --seed 4
same "fp8 and map with zip64 records" "$T/fp8z" "$T/fp8z.ref/module"
pt_write checkpoint "$T/bare" "$T/bare.ref" --load-key none --seed 5
same "a bare state dict" "$T/bare" "$T/bare.ref/bare"
opens "a bare state dict has no load key" "$T/bare" "load key -$" ema

# the fp8 scales
mkdir -p "$T/nomap" && cp "$T/fp8/config.json" "$T/fp8/mp_rank_00_model_states_fp8.pt" "$T/nomap/"
expect_fail "fp8 without its map" 1 \
	"nomap/mp_rank_00_model_states_fp8.pt: float8_e4m3fn tensors need their scales from .*/nomap/mp_rank_00_model_states_fp8_map.pt, which is missing \(tensor 'double_blocks.0.img_attn_qkv.weight'\)" \
	"$PT" open "$T/nomap"
pt_write checkpoint "$T/mapdrop" "$T/mapdrop.ref" --dtype fp8 --map-drop 1
expect_fail "fp8 map without the layer's scale" 1 \
	"_fp8_map.pt: no scale for .*_fp8.pt's float8_e4m3fn tensor \(tensor 'double_blocks.0.img_attn_qkv.weight'\)" \
	"$PT" open "$T/mapdrop"

# the choice of the file
mkdir -p "$T/two" && cp "$T/bf16/"* "$T/two/" && cp "$T/bf16/mp_rank_00_model_states.pt" "$T/two/other.pt"
expect_fail "two .pt files" 1 "two: 2 \*.pt files \('mp_rank_00_model_states.pt', 'other.pt'\)" \
	"$PT" open "$T/two"
# HunyuanVideo's official download: the bf16 file beside the fp8 pair, of which the
# official loader takes the first (the fp8 one is its own download's run)
mkdir -p "$T/release" && cp "$T/bf16/"* "$T/fp8/"*_fp8*.pt "$T/release/"
same "the official download's folder (the file, the fp8 pair): the first read" \
	"$T/release" "$T/bf16.ref/module"
opens "the official download's folder: the fp8 pair left alone" "$T/release" \
	"^1 files, 14 tensors, load key module$"
mkdir -p "$T/both" && cp "$T/bf16.ref/module/"* "$T/both/"
pt_write hostile global_os_system "$T/both.h" && cp "$T/both.h/model.pt" "$T/both/"
opens "safetensors are read before a .pt" "$T/both" "^1 files, 14 tensors, load key -$"
mkdir -p "$T/empty" && echo '{}' >"$T/empty/config.json"
expect_fail "no weights" 1 "empty: no \*.safetensors or \*.pt file" "$PT" open "$T/empty"

# hostile files: KIND and the message expected (after "DIR/model.pt")
while read -r kind pattern; do
	pt_write hostile "$kind" "$T/h.$kind"
	expect_fail "hostile: $kind" 1 "h\.$kind/model\.pt$pattern" "$PT" open "$T/h.$kind"
done <<'EOF'
global_os_system :archive/data\.pkl: byte 2: global 'os\.system' is not allowed
reduce_storage :archive/data\.pkl: byte [0-9]+: REDUCE of 'torch\.FloatStorage' is not allowed
reduce_dtype :archive/data\.pkl: byte [0-9]+: REDUCE of 'torch\.bfloat16' is not allowed
newobj :archive/data\.pkl: byte [0-9]+: opcode NEWOBJ \(0x81\) is not allowed
build_tensor :archive/data\.pkl: byte [0-9]+: BUILD of a tensor with a dict is not allowed
huge_storage :archive/data\.pkl: byte [0-9]+: storage '0' declares 4611686018427387904 elements of 4 bytes, but its data member holds 16 bytes
offset_past :archive/data\.pkl: byte [0-9]+: tensor of storage '0' \(offset 8, 1 elements of 4 bytes\) ends past the storage's 16 bytes
extent_past :archive/data\.pkl: byte [0-9]+: tensor of storage '0' \(offset 0, 6 elements of 4 bytes\) ends past the storage's 16 bytes
noncontiguous :archive/data\.pkl: byte [0-9]+: tensor of storage '0' is not contiguous
missing_storage :archive/data\.pkl: byte [0-9]+: storage '7' has no data member archive/data/7
recursive : the state dict holds a dict, not a tensor \(tensor 'module'\)
memo_unset :archive/data\.pkl: byte 2: memo entry 5 is read before it is set
deep_marks :archive/data\.pkl: byte 258: more than 256 MARKs open
stack_underflow :archive/data\.pkl: byte 2: SETITEM on an empty stack
truncated :archive/data\.pkl: byte [0-9]+: pickle is truncated
trailing :archive/data\.pkl: byte [0-9]+: 1 bytes after STOP
not_tensor : the state dict holds an int, not a tensor \(tensor 'w'\)
duplicate : the state dict names a tensor twice \(tensor 'w'\)
u8_tensor : dtype torch\.uint8 is not read \(tensor 'w'\)
compressed : member 'archive/data/0' is compressed \(method 8\)
big_endian : byteorder 'big': only little-endian checkpoints are read
two_roots : members 'a/data\.pkl' and 'b/data\.pkl': two pickles
cd_offset_lies : member 'archive/data/0': no matching local header at byte 3
cd_size_lies : member 'archive/data/0': its 1048576 bytes at byte [0-9]+ run into the central directory
eocd_lies : zip central directory \(byte [0-9]+, [0-9]+ bytes\) does not end where the end record begins
not_zip : not a zip file \(no end of central directory record\)
EOF
pt_write hostile selfref_ok "$T/selfref"
opens "a list that holds itself, next to the state dict" "$T/selfref" "^1 files, 1 tensors"
expect_fail "a missing load key names the keys there" 1 \
	"selfref/model.pt: load key 'ema' missing; the checkpoint's keys are 'x', 'module'$" \
	"$PT" open "$T/selfref" ema

# the tiny model from a .pt, through the command line
tiny_forward_inputs "$T"
"$DITSTAR" forward --model-dir "$T/tiny" --inputs "$T/a.in" --output "$T/y.dir" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
mkdir -p "$T/tinypt" && cp "$T/tiny/config.json" "$T/tinypt/"
pt_write convert "$T/tiny/diffusion_pytorch_model.safetensors" "$T/tinypt/model.pt" --load-key ema
if "$DITSTAR" forward --model-dir "$T/tinypt" --load-key ema --inputs "$T/a.in" \
	--output "$T/y.pt" 2>"$T/err" && cmp -s "$T/y.dir" "$T/y.pt"; then
	ok "forward from a .pt (--load-key ema): y byte-identical to the safetensors one"
else
	fail "forward from a .pt (--load-key ema)"
	sed 's/^/# /' "$T/err"
fi
expect_fail "forward from a .pt without its key" 1 \
	"tinypt/model.pt: load key 'module' missing; the checkpoint's keys are 'ema'" \
	"$DITSTAR" forward --model-dir "$T/tinypt" --inputs "$T/a.in" --output "$T/y.bad"
expect_fail "--load-key takes module or ema" 2 "--load-key needs module or ema, not 'best'" \
	"$DITSTAR" info --model-dir "$T/tinypt" --load-key best
finish
