# Row tiles (tasks/dit_tiles.h, --tile-tokens): a forward cut into tiles of any size
# matches the NumPy reference and the untiled forward within 1e-6 relative (tiles of
# 5 rows cross every frame boundary and leave a short last tile); for one plan the
# latents are byte-identical across schedulers, worker counts and offload modes; the
# per-token timesteps of Wan2.2 (tables read from a tile's first row) agree across
# tile sizes; column tiles of the GEMMs with bf16 weights and on OpenCL; the stats
# name the plan; one forward keeps both CPU workers busy (the
# workers' executing seconds over the run's: ~1 for one task chain; with lws, whose
# work stealing needs no calibrated performance models).
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch tiles)
plan 28

"$PYTHON_NUMPY" - "$T" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st, wan_ref
T = sys.argv[1]
r = np.random.default_rng(5)
f32 = lambda *s: r.standard_normal(s).astype(np.float32)
wan_ref.make_tiny(T + '/m', 11, layers=3)
# latent [4, 3, 8, 12]: 3 x 4 x 6 = 72 tokens; 8 context rows of 24
st.save(T + '/in', {'x': f32(4, 3, 8, 12), 't': np.array([640.0], np.float32),
                    'context': f32(8, 24)})
# a wider model for the concurrency check: 1152 tokens of dim 512
cfg = dict(wan_ref.TINY_CONFIG, dim=512, ffn_dim=2048, num_heads=8, freq_dim=64, text_len=64,
           text_dim=64, num_layers=2)
wan_ref.save_checkpoint(T + '/w', cfg, wan_ref.random_weights(wan_ref.normalize_config(cfg), 3))
st.save(T + '/win', {'x': f32(4, 3, 32, 48), 't': np.array([300.0], np.float32),
                     'context': f32(20, 64)})
PY

F="$DITSTAR forward --model-dir $T/m --inputs $T/in"
ref forward --model-dir "$T/m" --inputs "$T/in" --output "$T/ref"
$F --tile-tokens 0 --output "$T/f0" 2>"$T/err" || sed 's/^/# /' "$T/err"
within "forward, one task per op, against NumPy" "$T/f0" "$T/ref" y 1e-5
for n in 5 16 33 71 72; do
	$F --tile-tokens $n --output "$T/f$n" 2>"$T/err" || sed 's/^/# /' "$T/err"
	if res=$(ref compare "$T/f$n" "$T/f0" --tensor-a y --tol 1e-6 --rel); then
		ok "forward, tiles of $n tokens, within 1e-6 relative of one task per op: $res"
	else
		fail "forward, tiles of $n tokens: $res"
	fi
done
within "forward, tiles of 5 tokens, against NumPy" "$T/f5" "$T/ref" y 1e-5

# One plan (tiles of 16 tokens: 5 tiles, text 1): byte-identical whatever runs it.
G="$DITSTAR generate --model-dir $T/m --frames 9 --height 64 --width 96 --steps 3 --quiet"
G="$G --tile-tokens 16"
$G --output "$T/g" 2>"$T/err" || sed 's/^/# /' "$T/err"
for s in eager prio random ws lws dmda dmdas; do
	$G --sched $s --output "$T/g_$s" 2>/dev/null
	identical "tiles of 16, scheduler $s: byte-identical" "$T/g" "$T/g_$s"
done
$G --ncpus 1 --output "$T/g_1" 2>/dev/null
identical "tiles of 16, one CPU worker: byte-identical" "$T/g" "$T/g_1"
$G --offload cpu --output "$T/g_cpu" 2>/dev/null
identical "tiles of 16, --offload cpu: byte-identical" "$T/g" "$T/g_cpu"
$G --offload disk --offload-dir "$T/store" --offload-chunk-size 3 --output "$T/g_disk" 2>/dev/null
identical "tiles of 16, --offload disk, chunks of 3: byte-identical" "$T/g" "$T/g_disk"
$G --tile-tokens 0 --output "$T/g0" 2>/dev/null
if res=$(ref compare "$T/g" "$T/g0" --tensor-a latents --tol 1e-6 --rel); then
	ok "generate, tiles of 16 within 1e-6 relative of one task per op: $res"
else
	fail "generate, tiles of 16 against one task per op: $res"
fi

# Wan2.2 TI2V-5B: per-token timesteps (frame 0 at t = 0; any t per token) read from
# each tile's first row, tiles of 4 of the 18 tokens crossing the frames of 6.
ref22 make-tiny --variant ti2v-5b --output-dir "$T/ti2v" --seed 7 --layers 2 >/dev/null
"$PYTHON_NUMPY" - "$T" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
T = sys.argv[1]
r = np.random.default_rng(8)
L = 3 * 2 * 3
for name, t in (('first', np.where(np.arange(L) < 6, 0.0, 713.0)),
                ('tokens', r.integers(0, 1000, L).astype(np.float64))):
    st.save(f'{T}/ti_{name}', {'x': r.standard_normal((8, 3, 4, 6)).astype(np.float32),
                               't': t.astype(np.float32),
                               'context': r.standard_normal((5, 24)).astype(np.float32)})
PY
for m in first tokens; do
	"$DITSTAR" forward --model-dir "$T/ti2v" --inputs "$T/ti_$m" --tile-tokens 4 \
		--output "$T/ti_$m.c" 2>"$T/err" || sed 's/^/# /' "$T/err"
	ref22 forward --model-dir "$T/ti2v" --inputs "$T/ti_$m" --output "$T/ti_$m.ref" >/dev/null
	within "TI2V-5B forward, t per token ($m), tiles of 4, against NumPy" "$T/ti_$m.c" \
		"$T/ti_$m.ref" y 1e-5
done
"$PYTHON_NUMPY" - "$T/z" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
r = np.random.default_rng(2)
st.save(sys.argv[1], {'z': r.standard_normal((48, 1, 8, 12)).astype(np.float32)})
PY
# the preset: 120 tokens, 24 a frame; two sampling steps
P="$DITSTAR generate --model tiny-ti2v-5b --steps 2 --image-latent $T/z --quiet"
$P --tile-tokens 0 --output "$T/ti0" 2>"$T/err" || sed 's/^/# /' "$T/err"
$P --tile-tokens 5 --output "$T/ti5" 2>"$T/err" || sed 's/^/# /' "$T/err"
if res=$(ref compare "$T/ti5" "$T/ti0" --tensor-a latents --tol 5e-6 --rel); then
	ok "TI2V-5B image-to-video, 2 steps, tiles of 5: within 5e-6 relative: $res"
else
	fail "TI2V-5B image-to-video, tiles of 5: $res"
fi

# The stats name the plan; with tiles both workers compute inside one forward.
W="$DITSTAR forward --model-dir $T/w --inputs $T/win --ncpus 2 --sched lws"
$W --tile-tokens 0 --stats-json "$T/s0.json" --output "$T/w0" 2>"$T/err" || sed 's/^/# /' "$T/err"
$W --tile-tokens 256 --stats-json "$T/s64.json" --output "$T/w64" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
check "stats: the tile plan (256 tokens: 5 token tiles, 1 text tile; 0: one of each)" \
	"$PYTHON_NUMPY" - "$T/s0.json" "$T/s64.json" <<'PY'
import json, sys
s0, s = (json.load(open(p)) for p in sys.argv[1:3])
assert s['tiles'] == {'tile_tokens': 256, 'token_tiles': 5, 'text_tiles': 1}, s['tiles']
assert s0['tiles'] == {'tile_tokens': 0, 'token_tiles': 1, 'text_tiles': 1}, s0['tiles']
assert len(s['workers']) == 2 and all(w['tasks'] > 0 for w in s['workers']), s['workers']
PY
if [ "$(nproc)" -ge 2 ]; then
	# alone 1.6-1.8; under `make -j2 check` another test shares the two cores (1.2 seen)
	check "one forward keeps both CPU workers busy with tiles (concurrency > 1.15, one chain ~1)" \
		"$PYTHON_NUMPY" - "$T/s0.json" "$T/s64.json" <<'PY'
import json, sys
s0, s = (json.load(open(p)) for p in sys.argv[1:3])
c0, c = s0['concurrency'], s['concurrency']
assert c > 1.15 and c > c0 + 0.15, (c0, c, s['workers'])
print(c0, c)
PY
else
	ok "# SKIP one core: no concurrency to measure"
fi
$W --stats-json "$T/sd.json" --output "$T/wd" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "default plan: 1152 tokens in 2 tiles of 576 (a power of two of about 512)" \
	"$PYTHON_NUMPY" - "$T/sd.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s['tiles'] == {'tile_tokens': 576, 'token_tiles': 2, 'text_tiles': 1}, s['tiles']
PY
if res=$(ref compare "$T/w64" "$T/w0" --tensor-a y --tol 1e-6 --rel); then
	ok "wider model, tiles of 256 within 1e-6 relative: $res"
else
	fail "wider model, tiles of 256: $res"
fi

# Column tiles (the GEMMs with fewer tokens than output features: qkv, ffn.0 here)
# with bf16 weights, whose rows start two to a float; and on OpenCL, whose kernels
# take a column tile's offset and row stride.
$W --tile-tokens 0 --weight-dtype bf16 --output "$T/wb0" 2>"$T/err" || sed 's/^/# /' "$T/err"
$W --tile-tokens 256 --weight-dtype bf16 --output "$T/wb" 2>"$T/err" || sed 's/^/# /' "$T/err"
if res=$(ref compare "$T/wb" "$T/wb0" --tensor-a y --tol 1e-6 --rel); then
	ok "bf16 weights, row and column tiles within 1e-6 relative: $res"
else
	fail "bf16 weights, row and column tiles: $res"
fi
# (Under LeakSanitizer a tiled run on PoCL reports objects PoCL allocated and never
# freed, with no ditstar frame in the stacks, while the same run untiled reports none:
# leak checking is off for this one run; it is an open question in
# perf/results/compare-torch.md.
# Memory errors are still checked.)
if "$DITSTAR" generate --quiet --steps 1 --workers opencl --output "$T/probe" 2>"$T/err"; then
	if ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "$DITSTAR" forward \
		--model-dir "$T/w" --inputs "$T/win" --workers opencl --tile-tokens 256 \
		--output "$T/wo" 2>"$T/err" &&
		res=$(ref compare "$T/wo" "$T/w0" --tensor-a y --tol 1e-4 --rel); then
		ok "OpenCL, row and column tiles, against the CPU within 1e-4 relative: $res"
	else
		fail "OpenCL, row and column tiles: ${res:-forward failed}"
		sed 's/^/# /' "$T/err"
	fi
else
	ok "# SKIP no OpenCL device ($(head -n 1 "$T/err"))"
fi

expect_fail "--tile-tokens -1 is a usage error" 2 "tile-tokens" $F --tile-tokens -1 --output "$T/x"
finish
