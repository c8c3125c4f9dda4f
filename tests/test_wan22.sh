# Wan2.2 from its released layouts (tiny checkpoints made by tests/ref/wan22_ref.py):
# T2V-A14B and I2V-A14B (high_noise_model/ + low_noise_model/), TI2V-5B (one folder).
# forward and generate against the float64 NumPy reference (1e-5 forward, 2e-5 for
# the sampling loop given the same noise), expert switching on a step whose timestep
# equals the boundary, byte-identical latents across offload modes and chunk sizes
# for the two-expert model, and the refusals.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch wan22)
plan 27

ref22 make-tiny --variant t2v-a14b --output-dir "$T/t2v" --seed 5 --layers 2 >/dev/null
ref22 make-tiny --variant i2v-a14b --output-dir "$T/i2v" --seed 6 --layers 2 >/dev/null
ref22 make-tiny --variant ti2v-5b --output-dir "$T/ti2v" --seed 7 --layers 2 >/dev/null
ref22 make-tiny --variant t2v-a14b --output-dir "$T/bad" --seed 5 --disagree >/dev/null

# inputs NAME C F H W MODE SEED [y]: x, t (MODE: scalar | first | tokens), context, and
# with y the I2V conditioning y [8, F, H, W]
inputs() {
	"$PYTHON_NUMPY" - "$T/$1.in" "$2" "$3" "$4" "$5" "$6" "$7" "${8:-}" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
out, mode = sys.argv[1], sys.argv[6]
c, f, h, w = (int(v) for v in sys.argv[2:6])
r = np.random.default_rng(int(sys.argv[7]))
L = f * (h // 2) * (w // 2)
t = {'scalar': np.array([713.0]),
     'first': np.where(np.arange(L) < (h // 2) * (w // 2), 0.0, 713.0),
     'tokens': r.integers(0, 1000, L).astype(np.float64)}[mode]
d = {'x': r.standard_normal((c, f, h, w)).astype(np.float32), 't': t.astype(np.float32),
     'context': r.standard_normal((5, 24)).astype(np.float32)}
if sys.argv[8] == 'y':
    d['y'] = r.standard_normal((8, f, h, w)).astype(np.float32)
st.save(out, d)
PY
}

# fwd DESC MODEL INPUTS [ditstar options]: forward vs reference, 1e-5
fwd() {
	desc=$1 model=$2 in=$3
	shift 3
	if ! "$DITSTAR" forward --model-dir "$T/$model" --inputs "$T/$in.in" \
		--output "$T/$in.$model.c" "$@" 2>"$T/err"; then
		fail "$desc: ditstar forward failed"
		sed 's/^/# /' "$T/err"
		return
	fi
	ref22 forward --model-dir "$T/$model" --inputs "$T/$in.in" --output "$T/$in.$model.ref" \
		"$@" >/dev/null
	within "$desc" "$T/$in.$model.c" "$T/$in.$model.ref" y 1e-5
}

inputs a 4 3 4 6 scalar 1
inputs ay 4 3 4 6 scalar 1 y
inputs tok 4 3 4 6 tokens 2
inputs ti 8 3 4 6 first 3
inputs titok 8 2 4 4 tokens 4
inputs titok72 8 2 12 12 tokens 5
fwd "T2V-A14B forward, high-noise expert" t2v a
fwd "T2V-A14B forward, low-noise expert" t2v a --expert low
fwd "T2V-A14B forward, one timestep per token" t2v tok
fwd "I2V-A14B forward: x then y concatenated" i2v ay
fwd "TI2V-5B forward, first-frame tokens at t = 0" ti2v ti
fwd "TI2V-5B forward, any timestep per token" ti2v titok
fwd "TI2V-5B forward, 72 timesteps: time embedding tasks of 64 rows and 8" ti2v titok72
# the official forward's shapes, with their batch of one: x [1, C, F, H, W], t [1, L],
# context [1, L, C], y [1, C, F, H, W]
"$PYTHON_NUMPY" - "$T" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import safetensors_np as st
for n in ('titok', 'ay'):
    d = st.load('%s/%s.in' % (sys.argv[1], n))
    st.save('%s/%s.b1.in' % (sys.argv[1], n), {k: v[None] for k, v in d.items()})
PY
# b1 MODEL INPUTS DESC: the forward of INPUTS with a batch of 1, the unbatched one's bytes
b1() {
	"$DITSTAR" forward --model-dir "$T/$1" --inputs "$T/$2.b1.in" --output "$T/$2.b1.c" \
		2>"$T/err" || sed 's/^/# /' "$T/err"
	identical "$3" "$T/$2.$1.c" "$T/$2.b1.c"
}
b1 ti2v titok "TI2V-5B forward, inputs with a batch of 1 (t [1, L]): byte-identical to [L]"
b1 i2v ay "I2V-A14B forward, x, t, context and y with a batch of 1: byte-identical"

wan22_inputs "$T"

# 27 steps at shift 12: step 18 has timestep 875 exactly, which is the high-noise
# expert's (>=); 18 high-noise steps then 9 low-noise ones.
gen22 "$T" "T2V-A14B generate, 27 steps, t = 875 on the boundary" t2v noise4 t2v27 "--steps 27"
"$DITSTAR" generate --model-dir "$T/t2v" --noise "$T/noise4" --context "$T/ctx" --quiet \
	--steps 27 --stats-json "$T/stats.json" 2>/dev/null
check "stats: both experts, 18 + 9 steps" "$PYTHON_NUMPY" -c "
import json, sys
m = json.load(open('$T/stats.json'))['model']
e = m['experts']
sys.exit(not (m['name'] == 'wan2.2-t2v-a14b' and [x['name'] for x in e] == ['high', 'low']
              and [x['steps'] for x in e] == [18, 9]))"
gen22 "$T" "T2V-A14B generate, euler, one guidance for both" t2v noise4 t2ve \
	"--steps 6 --solver euler --guidance 2.5"
gen22 "$T" "I2V-A14B generate with y" i2v noise4 i2v "--steps 5 --image-latent $T/y"
gen22 "$T" "TI2V-5B generate, text only" ti2v noise8 tit "--steps 4"
gen22 "$T" "TI2V-5B generate, first frame from z" ti2v noise8 tii "--steps 5 --image-latent $T/z"
check "TI2V-5B: frame 0 of the latents is z exactly" "$PYTHON_NUMPY" -c "
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
x = st.load('$T/tii.c')['latents']; z = st.load('$T/z')['z']
sys.exit(not np.array_equal(x[:, :1], z))"

# Offload modes and chunk sizes: byte-identical latents for the two-expert model.
G="$DITSTAR generate --model-dir $T/t2v --noise $T/noise4 --context $T/ctx --quiet --steps 27"
$G --output "$T/none" 2>/dev/null
for m in "cpu" "disk --offload-dir $T/store" "disk --offload-dir $T/store2 --offload-chunk-size 2" \
	"none --offload-chunk-size 2"; do
	# shellcheck disable=SC2086
	$G --offload $m --output "$T/mode" 2>"$T/err" || sed 's/^/# /' "$T/err"
	identical "offload $m: byte-identical latents" "$T/none" "$T/mode"
done
# read in place (a plain safetensors checkpoint): the blocks' checksums in each folder
check "disk store: one folder per expert" test -f "$T/store/high_noise_model/inplace.json" -a \
	-f "$T/store/low_noise_model/inplace.json"

# Refusals: experts that disagree, an image for a text model, sizes against --noise.
expect_fail "experts whose configs disagree are refused naming both" 1 \
	"high_noise_model/config.json and .*low_noise_model/config.json disagree" \
	"$DITSTAR" generate --model-dir "$T/bad" --quiet
expect_fail "I2V-A14B without --image-latent" 2 "needs --image-latent" \
	"$DITSTAR" generate --model-dir "$T/i2v" --noise "$T/noise4" --quiet
expect_fail "--image-latent for a text-to-video model" 2 "takes no image" \
	"$DITSTAR" generate --model-dir "$T/t2v" --image-latent "$T/y" --quiet
expect_fail "--frames that disagrees with --noise" 2 "disagrees with" \
	"$DITSTAR" generate --model-dir "$T/t2v" --noise "$T/noise4" --frames 17 --quiet

# The tiny presets write their synthetic checkpoints in the released layouts.
check "preset tiny-t2v-a14b: two expert folders with different weights" sh -c "
	'$DITSTAR' generate --model tiny-t2v-a14b --cache-dir '$T/cache' --quiet &&
	test -f '$T/cache/tiny-t2v-a14b-synth-v1/high_noise_model/config.json' &&
	test -f '$T/cache/tiny-t2v-a14b-synth-v1/low_noise_model/diffusion_pytorch_model.safetensors' &&
	! cmp -s '$T/cache/tiny-t2v-a14b-synth-v1/high_noise_model/diffusion_pytorch_model.safetensors' \
		'$T/cache/tiny-t2v-a14b-synth-v1/low_noise_model/diffusion_pytorch_model.safetensors'"
check "info --model-dir: family and experts from the layout" sh -c "
	'$DITSTAR' info --model-dir '$T/i2v' | grep -q '^family       wan2.2-i2v-a14b' &&
	'$DITSTAR' info --model-dir '$T/i2v' | grep -q '^experts      2: high_noise_model/' &&
	'$DITSTAR' info --model-dir '$T/ti2v' | grep -q 'VAE stride 4/16/16'"
finish
