# Wan2.2 A14B as ComfyUI ships it: the two experts as two one-file checkpoints side by
# side without config.json (safetensors, scaled fp8 or GGUF; tests/ref/formats_np.py),
# their names saying which is the high-noise and which the low-noise expert, or the two
# files named HIGH,LOW. Each expert's configuration is read from its shapes, T2V or I2V
# by the channels, and the official defaults of that variant apply (boundary, shift,
# guidance); generate gives latents byte-identical to the same weights in the official
# layout (high_noise_model/ and low_noise_model/ with their config.json). Pairs that do
# not make one model are refused in one line naming the folder or the files.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch ckpair)
plan 22

fmt() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/formats_np.py" "$@"; }
wan22_inputs "$T"
# gen MODEL OUT [options]: generate on MODEL, the Wan2.2 inputs, 6 steps
gen() {
	m=$1 out=$2
	shift 2
	"$DITSTAR" generate --model-dir "$m" --noise "$T/noise4" --context "$T/ctx" --steps 6 \
		--quiet --output "$T/$out" "$@" 2>"$T/err" || sed 's/^/# /' "$T/err"
}
# experts of T2V-A14B (4 channels) in the official layout, different weights each
fmt tiny128 "$T/t2v/high_noise_model" --seed 3
fmt tiny128 "$T/t2v/low_noise_model" --seed 4
gen "$T/t2v" gen.t2v

# ComfyUI's names, F32: the configuration from the shapes, T2V-A14B's defaults
fmt comfy "$T/t2v/high_noise_model" "$T/p/wan2.2_t2v_high_noise_14B_fp16.safetensors"
fmt comfy "$T/t2v/low_noise_model" "$T/p/wan2.2_t2v_low_noise_14B_fp16.safetensors"
check "info: two experts from the shapes, T2V-A14B's boundary and sampling" sh -c "
	'$DITSTAR' info --model-dir '$T/p' >'$T/info' &&
	grep -q '^family       wan2.2-t2v-a14b' '$T/info' &&
	grep -q '^experts      2: $T/p/wan2.2_t2v_high_noise_14B_fp16.safetensors (high noise), $T/p/wan2.2_t2v_low_noise_14B_fp16.safetensors (low noise); boundary 0.875$' '$T/info' &&
	grep -q '^sampling     unipc, 40 steps, shift 12, guidance 4 (high) / 3 (low)$' '$T/info' &&
	[ \$(grep -c '^config       read from the tensor shapes (no config.json)' '$T/info') -eq 2 ]"
gen "$T/p" gen.p
same_latents "generate: the pair = the official layout" "$T/gen.p" "$T/gen.t2v"
gen "$T/p" gen.pb --boundary 0.5 --guidance-high 2 --guidance 1.5 --shift 3
gen "$T/t2v" gen.t2vb --boundary 0.5 --guidance-high 2 --guidance 1.5 --shift 3
same_latents "generate with --boundary, guidances, --shift: the same" "$T/gen.pb" "$T/gen.t2vb"
check "the defaults are T2V-A14B's (--boundary 0.5 changes the latents)" sh -c "
	! cmp -s '$T/gen.p' '$T/gen.pb'"

# the names decide, not their order: the low-noise file sorts first here
mkdir -p "$T/q"
cp "$T/p/wan2.2_t2v_high_noise_14B_fp16.safetensors" "$T/q/b-HighNoise.safetensors"
cp "$T/p/wan2.2_t2v_low_noise_14B_fp16.safetensors" "$T/q/a-LOW-NOISE.safetensors"
gen "$T/q" gen.q
same_latents "generate: names in any case, the low-noise file first in the folder" \
	"$T/gen.q" "$T/gen.t2v"
gen "$T/q/b-HighNoise.safetensors,$T/q/a-LOW-NOISE.safetensors" gen.named
same_latents "generate: the files named HIGH,LOW" "$T/gen.named" "$T/gen.t2v"
cp "$T/t2v/high_noise_model/diffusion_pytorch_model.safetensors" "$T/h.safetensors"
cp "$T/t2v/low_noise_model/diffusion_pytorch_model.safetensors" "$T/l.safetensors"
gen "$T/h.safetensors,$T/l.safetensors" gen.bare
same_latents "generate: HIGH,LOW whose names say nothing (bare official names)" \
	"$T/gen.bare" "$T/gen.t2v"

# scaled fp8 and GGUF Q8_0 pairs: the official layout of their dequantised values (the
# block matrices widened as they are read, --weight-dtype f32; compact weights, the
# default, are tests/test_compact.sh's)
mkdir -p "$T/f8"
for e in high low; do
	fmt fp8 "$T/t2v/${e}_noise_model" - "$T/f8deq/${e}_noise_model" --comfy \
		--single "$T/f8/wan2.2_t2v_${e}_noise_14B_fp8_scaled.safetensors"
	E=$([ $e = high ] && echo HighNoise || echo LowNoise)
	fmt gguf "$T/t2v/${e}_noise_model" "$T/gg/Wan2.2-T2V-A14B-$E-Q8_0.gguf" \
		"$T/ggdeq/${e}_noise_model"
done
gen "$T/f8" gen.f8 --weight-dtype f32
gen "$T/f8deq" gen.f8deq
same_latents "generate: the scaled-fp8 pair = the official layout, dequantised" \
	"$T/gen.f8" "$T/gen.f8deq"
gen "$T/gg" gen.gg --weight-dtype f32
gen "$T/ggdeq" gen.ggdeq
same_latents "generate: the GGUF pair = the official layout, dequantised" "$T/gen.gg" \
	"$T/gen.ggdeq"
gen "$T/gg" gen.ggdisk --weight-dtype f32 --offload disk --offload-dir "$T/store"
same_latents "generate --offload disk from the GGUF pair: the same latents" \
	"$T/gen.ggdisk" "$T/gen.ggdeq"
check "info: the GGUF pair's stored dtypes, Q8_0 in both experts" sh -c "
	'$DITSTAR' info --model-dir '$T/gg' >'$T/infog' &&
	[ \$(grep -c '^stored       .*Q8_0' '$T/infog') -eq 2 ] &&
	grep -q '^family       wan2.2-t2v-a14b' '$T/infog'"

# I2V-A14B: 12 channels in for 4 out, told from the shapes, its own defaults
fmt tiny128 "$T/i2v/high_noise_model" --seed 5 --model-type i2v --in-dim 12 --out-dim 4
fmt tiny128 "$T/i2v/low_noise_model" --seed 6 --model-type i2v --in-dim 12 --out-dim 4
for e in high low; do
	fmt comfy "$T/i2v/${e}_noise_model" "$T/pi/wan2.2_i2v_${e}_noise_14B_fp16.safetensors"
done
check "info: I2V-A14B from the channels, its boundary and sampling" sh -c "
	'$DITSTAR' info --model-dir '$T/pi' >'$T/infoi' &&
	grep -q '^family       wan2.2-i2v-a14b' '$T/infoi' &&
	grep -q '^model_type   i2v$' '$T/infoi' && grep -q '; boundary 0.9$' '$T/infoi' &&
	grep -q '^sampling     unipc, 40 steps, shift 5, guidance 3.5 (high) / 3.5 (low)$' '$T/infoi'"
gen "$T/pi" gen.pi --image-latent "$T/y"
gen "$T/i2v" gen.i2v --image-latent "$T/y"
same_latents "generate: the I2V pair with y = the official layout" "$T/gen.pi" "$T/gen.i2v"

# one file alone reads as before: a T2V expert has Wan2.1 T2V-14B's shapes
check "a T2V-A14B expert's file alone: Wan2.1 T2V, as before" sh -c "
	'$DITSTAR' info --model-dir '$T/p/wan2.2_t2v_high_noise_14B_fp16.safetensors' |
	grep -q '^family       wan2.1-t2v'"

# refused
mkdir -p "$T/one" "$T/three" "$T/same" "$T/mix"
cp "$T/p/wan2.2_t2v_high_noise_14B_fp16.safetensors" "$T/one/"
expect_fail "one expert alone in its folder: the other is needed" 1 \
	"one: no config.json, and its one weight file 'wan2.2_t2v_high_noise_14B_fp16.safetensors' is the high-noise expert of a two-expert model \\(Wan2.2 A14B\\): the low-noise expert's file is needed beside it" \
	"$DITSTAR" info --model-dir "$T/one"
cp "$T"/p/*.safetensors "$T/three/"
cp "$T/h.safetensors" "$T/three/wan_2.1_vae.safetensors"
expect_fail "three files: refused" 1 \
	"three: no config.json, and 3 weight files \\('wan2.2_t2v_high_noise_14B_fp16.safetensors', 'wan2.2_t2v_low_noise_14B_fp16.safetensors', 'wan_2.1_vae.safetensors'\\) named for noise levels: the folder of a two-expert model \\(Wan2.2 A14B\\) holds exactly two" \
	"$DITSTAR" info --model-dir "$T/three"
cp "$T/p/wan2.2_t2v_high_noise_14B_fp16.safetensors" "$T/same/a_high_noise.safetensors"
cp "$T/p/wan2.2_t2v_low_noise_14B_fp16.safetensors" "$T/same/b_high_noise.safetensors"
expect_fail "two names that do not tell high from low" 1 \
	"same: no config.json, and the names of its weight files \\('a_high_noise.safetensors', 'b_high_noise.safetensors'\\) do not tell which is the high-noise and which the low-noise expert" \
	"$DITSTAR" info --model-dir "$T/same"
cp "$T/p/wan2.2_t2v_high_noise_14B_fp16.safetensors" "$T/mix/"
cp "$T/pi/wan2.2_i2v_low_noise_14B_fp16.safetensors" "$T/mix/"
expect_fail "two experts of different shapes (T2V and I2V): both files named" 1 \
	"mix/wan2.2_t2v_high_noise_14B_fp16.safetensors and .*mix/wan2.2_i2v_low_noise_14B_fp16.safetensors disagree \\(model_type 't2v' vs 'i2v'\\): the experts of one model must share a config" \
	"$DITSTAR" info --model-dir "$T/mix"
fmt tiny128 "$T/t5/high_noise_model" --seed 7 --model-type ti2v --in-dim 48 --out-dim 48
fmt tiny128 "$T/t5/low_noise_model" --seed 8 --model-type ti2v --in-dim 48 --out-dim 48
for e in high low; do
	fmt comfy "$T/t5/${e}_noise_model" "$T/p5/ti2v_${e}_noise.safetensors"
done
expect_fail "48 channels: TI2V-5B has no experts" 1 \
	"p5/ti2v_high_noise.safetensors: no config.json, and its 48 channels in and out make it Wan2.2 TI2V-5B, a model of one checkpoint" \
	"$DITSTAR" info --model-dir "$T/p5"
expect_fail "HIGH,LOW in the wrong order: a usage error" 2 \
	"q/a-LOW-NOISE.safetensors' names the low-noise expert, but the high-noise expert's file comes first \\(HIGH,LOW\\)" \
	"$DITSTAR" info --model-dir "$T/q/a-LOW-NOISE.safetensors,$T/q/b-HighNoise.safetensors"
expect_fail "three files named: a usage error" 2 \
	"3 files named: a two-expert model is two" \
	"$DITSTAR" info --model-dir "$T/h.safetensors,$T/l.safetensors,$T/l.safetensors"
expect_fail "a named file that is missing" 1 \
	"nothere_low_noise.safetensors: No such file" \
	"$DITSTAR" info --model-dir "$T/h.safetensors,$T/nothere_low_noise.safetensors"
finish
