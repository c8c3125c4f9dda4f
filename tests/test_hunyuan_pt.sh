# HunyuanVideo checkpoints in every layout and without config.json: a tiny checkpoint
# as official safetensors, in the diffusers layout and as the official release's
# PyTorch file (mp_rank_00_model_states.pt written by tests/ref/pt_write.py: fp32 and
# bf16, under the load key module or ema) gives byte-identical forward outputs. A folder
# (or archive) holding the .pt alone is taken for the release, HYVideo-T/2-cfgdistill,
# and every tensor is checked against that configuration: the tiny .pt is refused
# naming the assumption and the first tensor whose shape differs; weights of another
# family keep needing config.json. Where the filesystem keeps sparse files, a
# config-less checkpoint of the released shapes (the reference's table, data all holes)
# opens: info says the configuration was assumed, and one misshapen tensor is refused.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch hunyuan_pt)
plan 12

refhy() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/hunyuan_ref.py" "$@"; }
pt_write() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/pt_write.py" "$@"; }
PT=mp_rank_00_model_states.pt

refhy make-tiny --output-dir "$T/m" --seed 3 >/dev/null
refhy make-tiny --output-dir "$T/dif" --seed 3 --layout diffusers >/dev/null
refhy make-tiny --output-dir "$T/bf" --seed 5 --dtype BF16 >/dev/null
refhy inputs --model-dir "$T/m" --output "$T/a" --seed 7 --frames 3 --height 8 --width 12 \
	--text-len 20 --valid 7 >/dev/null

# topt NAME SRC DTYPE KEY: $T/NAME holds SRC's config.json and SRC's weights as $PT
topt() {
	mkdir -p "$T/$1"
	cp "$T/$2/config.json" "$T/$1/"
	pt_write convert "$T/$2/model.safetensors" "$T/$1/$PT" --dtype "$3" --load-key "$4"
}
topt pt32 m f32 module
topt pt32ema m f32 ema
topt ptbf bf bf16 module
topt ptbfema bf bf16 ema

# same DESC MODEL REF [options]: forward of MODEL gives the bytes of REF's forward
same() {
	desc=$1 model=$2 want=$3
	shift 3
	if "$DITSTAR" forward --model-dir "$T/$model" --inputs "$T/a" --output "$T/y.$model" "$@" \
		2>"$T/err" && cmp -s "$T/y.$want" "$T/y.$model"; then
		ok "$desc"
	else
		fail "$desc"
		sed 's/^/# /' "$T/err"
	fi
}
"$DITSTAR" forward --model-dir "$T/m" --inputs "$T/a" --output "$T/y.m" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
"$DITSTAR" forward --model-dir "$T/bf" --inputs "$T/a" --output "$T/y.bf" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
same "diffusers layout: the bytes of the official safetensors" dif m
same "fp32 .pt (load key module): the bytes of the official safetensors" pt32 m
same "fp32 .pt under ema (--load-key ema): the same bytes" pt32ema m --load-key ema
same "bf16 .pt (load key module): the bytes of the bf16 safetensors" ptbf bf
same "bf16 .pt under ema (--load-key ema): the same bytes" ptbfema bf --load-key ema

# Without config.json: the release is assumed, and the tiny shapes are not its.
mkdir -p "$T/nocfg" && cp "$T/pt32/$PT" "$T/nocfg/"
ASSUMED="the released HYVideo-T/2-cfgdistill configuration \\(assumed: no config.json\\)"
expect_fail "a .pt alone: the release assumed, the first misshapen tensor named" 1 \
	"nocfg/$PT: tensor 'img_in.proj.weight' has shape \\[64, 4, 1, 2, 2\\], $ASSUMED implies \\[3072, 16, 1, 2, 2\\]$" \
	"$DITSTAR" info --model-dir "$T/nocfg"
mkdir -p "$T/release/transformers" && cp "$T/pt32/$PT" "$T/release/transformers/"
expect_fail "the official download's folder: its transformers/ sub-folder is read" 1 \
	"release/transformers/$PT: tensor 'img_in.proj.weight' has shape \\[64, 4, 1, 2, 2\\], $ASSUMED" \
	"$DITSTAR" info --model-dir "$T/release"
(cd "$T/nocfg" && tar cf "$T/nocfg.tar" "$PT")
expect_fail "the same .pt alone in a tar: the same check, through forward" 1 \
	"nocfg.tar:$PT: tensor 'img_in.proj.weight' has shape \\[64, 4, 1, 2, 2\\], $ASSUMED implies" \
	"$DITSTAR" forward --model-dir "$T/nocfg.tar" --inputs "$T/a" --output "$T/y.bad"
ref make-tiny --output-dir "$T/wan" --seed 4 >/dev/null
rm "$T/wan/config.json"
expect_fail "Wan weights without config.json: config.json missing" 1 \
	"wan/config.json: missing \\(a checkpoint needs config.json\\)$" \
	"$DITSTAR" info --model-dir "$T/wan"
mkdir -p "$T/empty"
expect_fail "a folder with neither: config.json missing" 1 \
	"empty/config.json: missing \\(a checkpoint needs config.json\\)$" \
	"$DITSTAR" info --model-dir "$T/empty"

# The released shapes, as the reference's table gives them, in a sparse bf16
# safetensors file (25 GB of holes; info reads the 1.4 GB of non-block weights).
# full NAME [TENSOR ROWS]: $T/NAME/model.safetensors, TENSOR's first dimension ROWS
full() {
	mkdir -p "$T/$1"
	"$PYTHON_NUMPY" - "$T/$1/model.safetensors" "${2:-}" "${3:-0}" <<'PY'
import json, os, struct, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import hunyuan_ref as h
shapes = h.tensor_shapes(h.normalize_config(h.FULL_CONFIG))
if sys.argv[2]:
    shapes[sys.argv[2]] = (int(sys.argv[3]),) + shapes[sys.argv[2]][1:]
head, off = {}, 0
for name in sorted(shapes):
    n = 2
    for d in shapes[name]:
        n *= d
    head[name] = {'dtype': 'BF16', 'shape': list(shapes[name]), 'data_offsets': [off, off + n]}
    off += n
b = json.dumps(head, separators=(',', ':')).encode()
b += b' ' * (-len(b) % 8)
with open(sys.argv[1], 'wb') as f:
    f.write(struct.pack('<Q', len(b)) + b)
    f.truncate(8 + len(b) + off)
PY
}
full full
if [ "$(du -k "$T/full/model.safetensors" | cut -f1)" -gt 65536 ]; then
	rm -rf "$T/full"
	ok "# SKIP the released shapes: no sparse files here"
	ok "# SKIP the released shapes, one misshapen: no sparse files here"
else
	if "$DITSTAR" info --model-dir "$T/full" >"$T/info" 2>&1 &&
		grep -q "^config       assumed (no config.json): the released HYVideo-T/2-cfgdistill configuration, preset hunyuan-video" "$T/info" &&
		grep -q "^checkpoint   $T/full (1 file, 856 tensors)" "$T/info" &&
		grep -q "^parameters   12821012544 " "$T/info"; then
		ok "the released shapes without config.json: info says the configuration was assumed"
	else
		fail "the released shapes without config.json: info says the configuration was assumed"
		sed 's/^/# /' "$T/info"
	fi
	rm -rf "$T/full"
	full bad single_blocks.39.modulation.linear.weight 3072
	expect_fail "the released shapes, the last block's modulation misshapen: refused" 1 \
		"bad/model.safetensors: tensor 'single_blocks.39.modulation.linear.weight' has shape \\[3072, 3072\\], $ASSUMED implies \\[9216, 3072\\]$" \
		"$DITSTAR" info --model-dir "$T/bad"
	rm -rf "$T/bad"
fi
finish
