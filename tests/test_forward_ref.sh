# ditstar forward against the independent NumPy reference (tests/ref/wan_ref.py) on
# checkpoints made by the reference itself: one F32 file, two shards with an index,
# BF16 weights; several latent grids, timesteps and context lengths. fp32 vs float64:
# max-abs difference at most 1e-5.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch forward_ref)
plan 9

ref make-tiny --output-dir "$T/f32" --seed 1 >/dev/null
ref make-tiny --output-dir "$T/sharded" --seed 1 --shards 2 >/dev/null
ref make-tiny --output-dir "$T/bf16" --seed 2 --dtype BF16 >/dev/null
ref make-tiny --output-dir "$T/deep" --seed 3 --layers 5 >/dev/null

# inputs NAME C F H W T CTX_ROWS SEED
inputs() {
	"$PYTHON_NUMPY" - "$T/$1.in" "$2" "$3" "$4" "$5" "$6" "$7" "$8" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
out = sys.argv[1]
c, f, h, w = (int(v) for v in sys.argv[2:6])
t, rows, seed = float(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
r = np.random.default_rng(seed)
st.save(out, {'x': r.standard_normal((c, f, h, w)).astype(np.float32),
              't': np.array([t], dtype=np.float32),
              'context': r.standard_normal((rows, 24)).astype(np.float32),
              'ignored': np.zeros(3, dtype=np.float32)})
PY
}

# compare DESC MODEL INPUTS
compare() {
	if ! "$DITSTAR" forward --model-dir "$T/$2" --inputs "$T/$3.in" --output "$T/$3.$2.c" \
		2>"$T/err"; then
		fail "$1: ditstar forward failed"
		sed 's/^/# /' "$T/err"
		return
	fi
	ref forward --model-dir "$T/$2" --inputs "$T/$3.in" --output "$T/$3.$2.ref" >/dev/null
	within "$1" "$T/$3.$2.c" "$T/$3.$2.ref" y 1e-5
}

inputs a 4 3 8 12 937 5 10
inputs single 4 1 2 2 0 1 11
inputs odd 4 5 6 10 501 8 12
inputs long 4 2 4 14 999 20 13
compare "F32 checkpoint, 3x4x6 tokens" f32 a
compare "sharded checkpoint with index" sharded a
compare "BF16 checkpoint" bf16 a
compare "one token, t=0" f32 single
compare "odd grid 5x3x5, context exactly text_len" f32 odd
# more context rows than text_len: the official code's zero padding to text_len fails on
# them, and so does ditstar, naming the tensor (it never cuts them silently)
expect_fail "context longer than text_len is refused, not cut" 1 \
	"long.in: tensor 'context' has 20 rows, more than the model's [0-9]+ \\(text_len; ditstar-encode --text-len [0-9]+ makes one it takes\\)" \
	"$DITSTAR" forward --model-dir "$T/f32" --inputs "$T/long.in" --output "$T/long.f32.c"
compare "5 blocks" deep odd

# Sharding changes nothing: byte-identical outputs.
identical "single file and shards give byte-identical y" "$T/a.f32.c" "$T/a.sharded.c"

# The same forward twice is byte-identical.
"$DITSTAR" forward --model-dir "$T/f32" --inputs "$T/a.in" --output "$T/a.again" 2>/dev/null
identical "repeated forward is byte-identical" "$T/a.f32.c" "$T/a.again"
finish
