# The ditstar command line: help on every subcommand, exit codes, one-line errors that
# name the file or tensor for bad checkpoints and inputs, nothing left behind on
# failure, and the sizes `info` reports for the official presets.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch cli)
plan 50

for cmd in generate forward info; do
	if "$DITSTAR" $cmd --help | grep -q "^usage: ditstar $cmd"; then
		ok "$cmd --help"
	else
		fail "$cmd --help"
	fi
done
check "--help lists the commands" sh -c "'$DITSTAR' --help | grep -q forward"
expect_fail "unknown command" 2 "unknown command 'frobnicate'" "$DITSTAR" frobnicate
expect_fail "unknown option" 2 "unknown option.*--bogus" "$DITSTAR" generate --bogus
expect_fail "bad number" 2 "--steps needs a positive integer, not 'ten'" \
	"$DITSTAR" generate --steps ten
expect_fail "option of another command" 2 "--inputs does not apply" \
	"$DITSTAR" generate --inputs x
expect_fail "frames not 4k+1" 2 "--frames 6: must be 4k\+1" "$DITSTAR" generate --frames 6
expect_fail "height not a multiple of 16" 2 "--height 40: must be a multiple of 16" \
	"$DITSTAR" generate --height 40
expect_fail "too many tokens for one pass" 1 "22020096 tokens are too many" \
	"$DITSTAR" generate --frames 81 --height 16384 --width 16384
# a family's own options (its descriptor declares them): refused for a model of another
# family, before any work, naming the option and whose it is
expect_fail "an LTX-2 option on a Wan model" 2 \
	"--stg is an option of LTX-2, not of wan2.1-t2v \\(Wan2.1\\)" \
	"$DITSTAR" generate --stg 2 --quiet
expect_fail "a Wan2.2 option on an LTX-2 model" 2 "--boundary is an option of Wan2.2" \
	"$DITSTAR" generate --model tiny-ltx2 --boundary 0.5 --quiet
expect_fail "options of two families" 2 "--schedule is an option of Cosmos-Predict2.5" \
	"$DITSTAR" generate --model tiny-ltx2 --stg 1 --schedule linear --quiet
expect_fail "a family option's range, checked as it is parsed" 2 \
	"--boundary needs a number from 0 to 1, not '2'" "$DITSTAR" generate --boundary 2
expect_fail "a family option of another command" 2 "--expert does not apply" \
	"$DITSTAR" generate --model tiny-t2v-a14b --expert low --quiet
# common options a family's guidance has no use for: refused, not ignored
expect_fail "LTX-2 refuses --guidance, naming its own scales" 2 \
	"--guidance: ltx-2 takes --video-guidance and --audio-guidance" \
	"$DITSTAR" generate --model tiny-ltx2 --stg-blocks 1 --guidance 3 --quiet
expect_fail "LTX-2 refuses --shift and --solver" 2 "--solver: ltx-2 samples with Euler only" \
	"$DITSTAR" generate --model tiny-ltx2 --stg-blocks 1 --solver unipc --quiet
expect_fail "unknown preset: a usage error naming the option" 2 "--model nope: unknown model preset" \
	"$DITSTAR" generate --model nope
expect_fail "unknown solver" 2 "solver" "$DITSTAR" generate --solver heun
expect_fail "unknown scheduler: StarPU's names in the message" 2 \
	"unknown StarPU scheduler 'fastest' \\(StarPU's: eager, prio, .*dmda.* modular-\\* ones; 'ditstar sched list'" \
	"$DITSTAR" generate --sched fastest --quiet
"$DITSTAR" sched list >"$T/sched.txt" 2>&1
"$DITSTAR" generate --sched help >"$T/schedhelp.txt" 2>&1
check "sched list and --sched help: StarPU's policies with descriptions" sh -c \
	"grep -q '^dmda  *[a-z]' '$T/sched.txt' && test \$(wc -l <'$T/sched.txt') -ge 20 &&
	 cmp -s '$T/sched.txt' '$T/schedhelp.txt'"
expect_fail "missing model directory" 1 "$T/none" "$DITSTAR" generate --model-dir "$T/none"
expect_fail "forward needs its files" 2 "required" "$DITSTAR" forward --model-dir "$T/none"

# Broken checkpoints, each derived from a good one.
ref make-tiny --output-dir "$T/good" --seed 9 >/dev/null
ST=diffusion_pytorch_model.safetensors
broken() {
	rm -rf "$T/$1"
	cp -r "$T/good" "$T/$1"
	echo "$T/$1"
}
d=$(broken trunc)
size=$(stat -c %s "$d/$ST")
head -c $((size - 100)) "$T/good/$ST" >"$d/$ST"
expect_fail "truncated checkpoint names the file" 1 "$d/$ST.*truncated" \
	"$DITSTAR" generate --model-dir "$d" --quiet
d=$(broken header)
printf 'garbage!' >"$d/$ST"
expect_fail "bad header names the file" 1 "$d/$ST" "$DITSTAR" generate --model-dir "$d" --quiet
d=$(broken shape)
"$PYTHON_NUMPY" - "$d/$ST" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
w = st.load(sys.argv[1])
w['blocks.1.ffn.0.weight'] = np.zeros((65, 32), dtype=np.float32)
st.save(sys.argv[1], w)
PY
expect_fail "wrong shape names file and tensor" 1 \
	"$d/$ST: tensor 'blocks.1.ffn.0.weight' has shape \[65, 32\], config.json implies \[64, 32\]" \
	"$DITSTAR" generate --model-dir "$d" --quiet
d=$(broken missing)
"$PYTHON_NUMPY" - "$d/$ST" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import safetensors_np as st
w = st.load(sys.argv[1])
del w['blocks.0.cross_attn.norm_k.weight']
st.save(sys.argv[1], w)
PY
expect_fail "missing tensor is named" 1 "tensor 'blocks.0.cross_attn.norm_k.weight' missing" \
	"$DITSTAR" generate --model-dir "$d" --quiet
d=$(broken config)
sed -i 's/"num_heads": *[0-9]*/"num_heads": 5/' "$d/config.json"
expect_fail "inconsistent config names config.json" 1 "$d/config.json" \
	"$DITSTAR" generate --model-dir "$d" --quiet
d=$(broken layers)
sed -i 's/"num_layers": *[0-9]*/"num_layers": 1/' "$d/config.json"
expect_fail "more blocks than num_layers" 1 "blocks.1.modulation' exists but config.json says num_layers 1" \
	"$DITSTAR" generate --model-dir "$d" --quiet

# A NaN in a weight is refused as it loads, naming file, tensor and index (before the
# whole run computes NaN latents).
d=$(broken nan)
"$PYTHON_NUMPY" - "$d/$ST" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
w = st.load(sys.argv[1])
a = w['blocks.1.ffn.0.weight'].copy()
a[3, 5] = np.nan
w['blocks.1.ffn.0.weight'] = a
st.save(sys.argv[1], w)
PY
expect_fail "a NaN weight is refused at load, by file, tensor and index" 1 \
	"$ST: tensor 'blocks.1.ffn.0.weight' holds a value that is not finite \(NaN or Inf\) at index $((3 * 32 + 5))" \
	"$DITSTAR" generate --model-dir "$d" --frames 5 --height 32 --width 48 --steps 2 --quiet \
	--output "$T/nan_out"
# Weights that overflow (finite, 3e38): --check-finite names the first block and step
# that produce NaN or Inf; without it the run still refuses to write non-finite latents.
d=$(broken overflow)
"$PYTHON_NUMPY" - "$d/$ST" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
w = st.load(sys.argv[1])
a = w['blocks.1.ffn.0.weight'].copy()
a[3, :] = 3e38
w['blocks.1.ffn.0.weight'] = a
st.save(sys.argv[1], w)
PY
expect_fail "--check-finite stops at the first bad block" 1 \
	"--check-finite: NaN or Inf after block 1 of step 1 \(conditional pass" \
	"$DITSTAR" generate --model-dir "$d" --frames 5 --height 32 --width 48 --steps 2 --quiet \
	--check-finite --output "$T/nan_out"
expect_fail "non-finite latents are never written" 1 "latents are not finite.*nothing written" \
	"$DITSTAR" generate --model-dir "$d" --frames 5 --height 32 --width 48 --steps 2 --quiet \
	--output "$T/nan_out"
"$DITSTAR" generate --model-dir "$T/good" --frames 5 --height 32 --width 48 --steps 2 --quiet \
	--output "$T/fin_a" 2>/dev/null
"$DITSTAR" generate --model-dir "$T/good" --frames 5 --height 32 --width 48 --steps 2 --quiet \
	--check-finite --output "$T/fin_b" 2>/dev/null
check "--check-finite on good weights changes nothing" cmp "$T/fin_a" "$T/fin_b"

# A JSON object naming a member twice says two things at once: refused.
d=$(broken dupcfg)
sed -i 's/{/{"dim": 64, /' "$d/config.json"
expect_fail "config.json with a member twice" 1 "$d/config.json: member 'dim' appears twice" \
	"$DITSTAR" generate --model-dir "$d" --quiet
d=$(broken dupindex)
"$PYTHON_NUMPY" - "$d" <<'PY'
import json, os, sys
d = sys.argv[1]
os.rename(d + '/diffusion_pytorch_model.safetensors', d + '/shard-1.safetensors')
names = ['patch_embedding.weight']  # listed twice below
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import safetensors_np as st
keys = list(st.read_header(d + '/shard-1.safetensors')[0])
body = ', '.join('"%s": "shard-1.safetensors"' % k for k in keys + names)
open(d + '/diffusion_pytorch_model.safetensors.index.json', 'w').write('{"weight_map": {%s}}' % body)
PY
expect_fail "index naming a tensor twice" 1 "index.json: member 'patch_embedding.weight' appears twice" \
	"$DITSTAR" generate --model-dir "$d" --quiet
# An index of 300 000 members (8 MB) is checked for repeated names in n log n: a
# pairwise scan took minutes, a hang a hostile download could cause.
d=$(broken bigindex)
"$PYTHON_NUMPY" - "$d" <<'PY'
import sys
body = ', '.join('"w%d": "a.safetensors"' % i for i in range(300000))
open(sys.argv[1] + '/diffusion_pytorch_model.safetensors.index.json', 'w').write('{"weight_map": {%s}}' % body)
PY
expect_fail "index of 300 000 names: checked without a hang" 1 "names shard 'a.safetensors', which is missing" \
	timeout 120 "$DITSTAR" info --model-dir "$d"

# Bad forward inputs.
"$PYTHON_NUMPY" - "$T" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
T = sys.argv[1]
r = np.random.default_rng(0)
x = r.standard_normal((4, 1, 4, 6)).astype(np.float32)
ctx = r.standard_normal((2, 24)).astype(np.float32)
st.save(T + '/in_ok', {'x': x, 't': np.array([500.0], dtype=np.float32), 'context': ctx})
st.save(T + '/in_int', {'x': x, 't': np.array([500], dtype=np.int64), 'context': ctx})
st.save(T + '/in_channels', {'x': np.zeros((3, 1, 4, 6), np.float32),
                             't': np.array([500.0], np.float32),
                             'context': np.zeros((2, 24), np.float32)})
st.save(T + '/in_ctx', {'x': np.zeros((4, 1, 4, 6), np.float32),
                        't': np.array([500.0], np.float32),
                        'context': np.zeros((2, 23), np.float32)})
st.save(T + '/in_not', {'x': np.zeros((4, 1, 4, 6), np.float32)})
PY
expect_fail "forward: wrong latent channels" 1 "3 channels, the model takes 4" \
	"$DITSTAR" forward --model-dir "$T/good" --inputs "$T/in_channels" --output "$T/y"
expect_fail "forward: wrong context width names the tensor" 1 "$T/in_ctx: tensor 'context'" \
	"$DITSTAR" forward --model-dir "$T/good" --inputs "$T/in_ctx" --output "$T/y"
expect_fail "forward: missing t" 1 "$T/in_not: tensor 't' missing" \
	"$DITSTAR" forward --model-dir "$T/good" --inputs "$T/in_not" --output "$T/y"
if [ ! -e "$T/y" ] && [ -z "$(ls "$T" | grep '\.tmp\.')" ]; then
	ok "failed runs leave no output and no temporary file"
else
	fail "failed runs leave no output and no temporary file"
fi
expect_fail "output in a missing directory" 2 "$T/nodir/y" \
	"$DITSTAR" forward --model-dir "$T/good" --inputs "$T/in_ok" --output "$T/nodir/y"
check "forward writes y" "$DITSTAR" forward --model-dir "$T/good" --inputs "$T/in_ok" --output "$T/y"
"$DITSTAR" forward --model-dir "$T/good" --inputs "$T/in_int" --output "$T/y_int" 2>/dev/null
check "an int64 t (as PyTorch saves timesteps) gives the same y" cmp "$T/y" "$T/y_int"

expect_fail "info: a size the model cannot patch is refused, not counted as 0 tokens" 2 \
	"^ditstar: --frames 6: must be 4k\\+1" "$DITSTAR" info --model tiny --frames 6 --width 1
expect_fail "an empty path is refused as the option's value" 2 \
	"^ditstar info: --model-dir needs a value, not ''" "$DITSTAR" info --model-dir ""
# info: the official sizes (dit_specs: 1,418,996,800 and 14,288,491,584 parameters,
# 46,440,704 and 351,394,304 per block; 32,760 tokens at 480P, 75,600 at 720P).
check "info 1.3B: parameters, block, 480P tokens" sh -c \
	"'$DITSTAR' info --model wan2.1-t2v-1.3b --frames 81 --height 480 --width 832 |
	 grep -q '^parameters   1418996800 ' &&
	 '$DITSTAR' info --model wan2.1-t2v-1.3b | grep -q '^per block    46440704 params' &&
	 '$DITSTAR' info --model wan2.1-t2v-1.3b --frames 81 --height 480 --width 832 |
	 grep -q '^tokens       32760 '"
check "info 14B: parameters, block, 720P tokens" sh -c \
	"'$DITSTAR' info --model wan2.1-t2v-14b | grep -q '^parameters   14288491584 ' &&
	 '$DITSTAR' info --model wan2.1-t2v-14b | grep -q '^per block    351394304 params' &&
	 '$DITSTAR' info --model wan2.1-t2v-14b --height 720 --width 1280 |
	 grep -q '^tokens       75600 '"
check "info --model-dir reads the checkpoint" sh -c \
	"'$DITSTAR' info --model-dir '$T/good' | grep -q '1 file, 69 tensors'"
# a plan needs shapes alone: every preset plans with its defaults and no input file
# (the image-to-video ones once asked for --image-latent)
bad=
for p in $("$DITSTAR" info --list | awk '{print $1}'); do
	"$DITSTAR" plan --model "$p" --cache-dir "$T/cache" >/dev/null 2>"$T/err" ||
		bad="$bad $p: $(head -n 1 "$T/err")"
done
check "plan: every preset from its shapes alone${bad:+ (failed:$bad)}" test -z "$bad"
finish
