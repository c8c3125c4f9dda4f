# HunyuanVideo one kind at a time (tests/test_hunyuan_block runs the stages and
# blocks as StarPU tasks): the patch embedding, the token refiner, a double-stream
# block and a single-stream block against the float64 NumPy reference's outputs of
# the same pieces (1e-5). Text rows are compared for the prompt's tokens: padded rows
# are computed against other keys than the official second segment's (they never
# reach the image output, see test_hunyuan.sh).
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch hunyuan_kinds)
plan 10

refhy() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/hunyuan_ref.py" "$@"; }

# kinds NAME LEN VALID: the C pieces and the reference's for a prompt of VALID of LEN
kinds() {
	refhy inputs --model-dir "$T/m" --output "$T/$1" --seed "$3" --frames 3 --height 8 \
		--width 12 --text-len "$2" --valid "$3" >/dev/null
	"$top_builddir/tests/test_hunyuan_block" "$T/m" "$T/$1" "$T/$1.c" 2>"$T/err" ||
		sed 's/^/# /' "$T/err"
	for k in refiner "double --index 0" "single --index 0"; do
		# shellcheck disable=SC2086
		refhy $k --model-dir "$T/m" --inputs "$T/$1" --output "$T/$1.${k%% *}" >/dev/null
	done
}

# piece DESC INPUT C_TENSOR REF_FILE REF_TENSOR ROWS: rows [0, ROWS) within 1e-5
piece() {
	if res=$("$PYTHON_NUMPY" - "$T/$2.c" "$3" "$T/$2.$4" "$5" "$6" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
c = st.load(sys.argv[1], float64=True)[sys.argv[2]]
r = st.load(sys.argv[3], float64=True)[sys.argv[4]]
n = int(sys.argv[5])
d = float(np.max(np.abs(c[:n] - r[:n])))
print("max_abs_diff %.6e (max |b| %.6e, %d rows)" % (d, np.max(np.abs(r[:n])), n))
sys.exit(not d <= 1e-5)
PY
	); then ok "$1: $res"; else fail "$1: $res"; fi
}

refhy make-tiny --output-dir "$T/m" --seed 11 >/dev/null
kinds a 20 7
# Li = 3 * 4 * 6 = 72 image tokens
piece "patch embedding (img_in)" a img_in double img_in 72
piece "token refiner, 7 of 20 tokens" a txt_refined refiner txt 7
piece "double block 0: image stream" a img_d0 double img 72
piece "double block 0: the prompt's text tokens" a txt_d0 double txt 7
piece "single block 0: image and prompt tokens" a x_s0 single x 79
kinds full 12 12
piece "full-length prompt: token refiner" full txt_refined refiner txt 12
piece "full-length prompt: double block 0, image" full img_d0 double img 72
piece "full-length prompt: double block 0, text" full txt_d0 double txt 12
piece "full-length prompt: single block 0, image rows" full x_s0 single x 72
"$PYTHON_NUMPY" - "$T/full.c" "$T/full.single" <<'PY' >"$T/cmp" 2>&1
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
c = st.load(sys.argv[1], float64=True)['x_s0']
r = st.load(sys.argv[2], float64=True)['x']
# the reference's rows are Li image then 12 text rows; ditstar's text rows follow
# the image rows too, padded to text_len
d = np.max(np.abs(c[72:84] - r[72:84]))
print("max_abs_diff %.6e" % d)
sys.exit(not d <= 1e-5)
PY
if [ $? -eq 0 ]; then ok "full-length prompt: single block 0, text rows: $(cat "$T/cmp")"; else
	fail "full-length prompt: single block 0, text rows: $(cat "$T/cmp")"; fi
finish
