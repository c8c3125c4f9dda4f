# The embeddings and single Wan blocks, run as StarPU tasks, against the NumPy
# reference: the patch embedding, time embedding (e, e0) and text embedding are
# compared with the reference's embed; each block's output with the reference block
# applied to the C tokens, so a block is checked on its own.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch block_ref)
plan 6

ref make-tiny --output-dir "$T/m" --seed 5 --layers 3 >/dev/null
"$PYTHON_NUMPY" - "$T/in" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
r = np.random.default_rng(21)
st.save(sys.argv[1], {'x': r.standard_normal((4, 3, 6, 10)).astype(np.float32),
                      't': np.array([614.0], dtype=np.float32),
                      'context': r.standard_normal((3, 24)).astype(np.float32)})
PY

# Reference embeddings of the same inputs.
ref embed --model-dir "$T/m" --inputs "$T/in" --output "$T/embed.ref" >/dev/null

for b in 0 2; do
	if ! "$top_builddir/tests/test_block" "$T/m" "$T/in" "$T/c$b" "$b" 2>"$T/err"; then
		fail "block $b ran"
		sed 's/^/# /' "$T/err"
		continue
	fi
	# Reference block on the C tokens, e0 and ctx (each already checked below).
	"$PYTHON_NUMPY" - "$T/c$b" "$T/blockin$b" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
c = st.load(sys.argv[1])
st.save(sys.argv[2], {'x_tokens': c['tokens'], 'e0': c['e0'], 'ctx': c['ctx'],
                      'grid': np.array([3, 3, 5], dtype=np.float64)})
PY
	ref block --model-dir "$T/m" --inputs "$T/blockin$b" --output "$T/block$b.ref" --index "$b" \
		>/dev/null
	within "block $b" "$T/c$b" "$T/block$b.ref" x_out 1e-5
done

for name in tokens e0 ctx; do
	within "embedding $name" "$T/c0" "$T/embed.ref" "$name" 1e-5
done
within "time embedding e" "$T/c0" "$T/embed.ref" e 1e-5
finish
