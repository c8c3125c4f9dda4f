#!/bin/sh
# Cosmos-Predict2.5 (tiny checkpoints made by tests/ref/cosmos_ref.py in the released
# layout: one .pt with the net. prefix, TransformerEngine's _extra_state and the buffers
# beside the weights): forward against the float64 NumPy reference (1e-5) for text2world
# and video2world inputs (conditioning frames, their timestep, the padding mask), 2B- and
# 14B-shaped, net_ema. and safetensors and bf16 files, diffusers' layout (a pipeline folder,
# its transformer/, refused variants); byte-identical outputs across
# --offload none|cpu|disk and chunk sizes; a hostile .pt refused.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch cosmos)
plan 34

refc() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/cosmos_ref.py" "$@"; }

refc make-tiny --output-dir "$T/m2" --seed 3 --shape 2b >/dev/null
refc make-tiny --output-dir "$T/m14" --seed 4 --shape 14b >/dev/null
refc make-tiny --output-dir "$T/ema" --seed 3 --shape 2b --prefix net_ema. >/dev/null
refc make-tiny --output-dir "$T/st" --seed 3 --shape 2b --format safetensors >/dev/null
refc make-tiny --output-dir "$T/bf" --seed 5 --shape 2b --dtype BF16 >/dev/null
refc make-tiny --output-dir "$T/b4" --seed 6 --shape 2b --blocks 4 >/dev/null

# inputs NAME MODEL [options]: latent 3 x 4 x 6 (2 x 3 patches of 2 x 2)
inputs() {
	name=$1 model=$2
	shift 2
	refc inputs --model-dir "$T/$model" --output "$T/$name" --seed 7 --frames 3 --height 4 \
		--width 6 "$@" >/dev/null
}

# fwd DESC MODEL INPUTS [ditstar options]: forward vs reference, 1e-5
fwd() {
	desc=$1 model=$2 in=$3
	shift 3
	if ! "$DITSTAR" forward --model-dir "$T/$model" --inputs "$T/$in" \
		--output "$T/$in.$model.c" "$@" 2>"$T/err"; then
		fail "$desc: ditstar forward failed"
		sed 's/^/# /' "$T/err"
		return
	fi
	refc forward --model-dir "$T/$model" --inputs "$T/$in" --output "$T/$in.$model.ref" \
		>/dev/null
	within "$desc" "$T/$in.$model.c" "$T/$in.$model.ref" y 1e-5
}

inputs t2w m2
inputs v2w m2 --cond-frames 1 --padding-mask
inputs v2w2 m2 --cond-frames 2 --timestep 250
inputs t2w14 m14 --padding-mask
fwd "2B-shaped: text2world" m2 t2w
fwd "2B-shaped: video2world, 1 conditioning frame (timestep 0.1), padding mask" m2 v2w
fwd "2B-shaped: video2world, 2 conditioning frames, timestep 250" m2 v2w2
fwd "14B-shaped (5 heads of 16): text2world with a padding mask" m14 t2w14
fwd "4 blocks: video2world" b4 v2w
"$DITSTAR" forward --model-dir "$T/ema" --inputs "$T/v2w" --output "$T/v2w.ema" 2>/dev/null
identical "net_ema. names: the bytes of net." "$T/v2w.m2.c" "$T/v2w.ema"
"$DITSTAR" forward --model-dir "$T/st" --inputs "$T/v2w" --output "$T/v2w.st" 2>/dev/null
identical "safetensors with the same names: the bytes of the .pt" "$T/v2w.m2.c" "$T/v2w.st"
fwd "bf16 .pt (read as stored)" bf v2w
# the releases ship the .pt alone: the sizes from the shapes
refc make-tiny --output-dir "$T/nc" --seed 3 --shape 2b --config no >/dev/null
refc make-tiny --output-dir "$T/nc14" --seed 4 --shape 14b --config no >/dev/null
"$DITSTAR" forward --model-dir "$T/nc" --inputs "$T/v2w" --output "$T/v2w.nc" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
identical "no config.json, 2B-shaped: the sizes from the tensors, the bytes with config.json" \
	"$T/v2w.m2.c" "$T/v2w.nc"
"$DITSTAR" forward --model-dir "$T/nc14" --inputs "$T/t2w14" --output "$T/t2w14.nc" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
identical "no config.json, 14B-shaped (5 heads of 16): the bytes with config.json" \
	"$T/t2w14.m14.c" "$T/t2w14.nc"
refc make-tiny --output-dir "$T/nce" --seed 3 --shape 2b --config no --prefix net_ema. \
	>/dev/null
"$DITSTAR" forward --model-dir "$T/nce" --inputs "$T/v2w" --output "$T/v2w.nce" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
identical "no config.json, net_ema. names only: found by the probe, the bytes of net." \
	"$T/v2w.m2.c" "$T/v2w.nce"

# diffusers' layout (CosmosTransformer3DModel): a pipeline folder, or its transformer/
refc make-tiny --output-dir "$T/dif" --seed 3 --shape 2b --layout diffusers >/dev/null
"$DITSTAR" forward --model-dir "$T/dif" --inputs "$T/v2w" --output "$T/v2w.dif" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
identical "diffusers pipeline folder (renamed tensors, in_channels 17): the bytes of the .pt" \
	"$T/v2w.m2.c" "$T/v2w.dif"
refc make-tiny --output-dir "$T/dif14" --seed 4 --shape 14b --layout diffusers >/dev/null
"$DITSTAR" forward --model-dir "$T/dif14/transformer" --inputs "$T/t2w14" \
	--output "$T/t2w14.dif" 2>"$T/err" || sed 's/^/# /' "$T/err"
identical "diffusers transformer/ folder, 14B-shaped: the bytes of the .pt" \
	"$T/t2w14.m14.c" "$T/t2w14.dif"
check "info: the diffusers format and its rope_scale (t, h, w)" sh -c \
	"'$DITSTAR' info --model-dir '$T/dif' | grep -q '^format *diffusers' &&
	 '$DITSTAR' info --model-dir '$T/dif' | grep -q '^rope_scale *1, 3, 3'"
# dconf NAME PYTHON-STATEMENT: a copy of the diffusers folder with config c changed
dconf() {
	rm -rf "${T:?}/$1" && cp -r "$T/dif" "$T/$1" && "$PYTHON_NUMPY" -c "
import json; p = '$T/$1/transformer/config.json'; c = json.load(open(p)); $2
json.dump(c, open(p, 'w'))"
}
dconf dl "c['extra_pos_embed_type'] = 'learnable'"
expect_fail "diffusers: learnable positions (Cosmos 1.0) refused" 1 \
	"config.json: key 'extra_pos_embed_type' is set \\(\"learnable\"\\); this build implements only null" \
	"$DITSTAR" forward --model-dir "$T/dl" --inputs "$T/v2w" --output "$T/x"
dconf dc "c['controlnet_block_every_n'] = 7"
expect_fail "diffusers: a ControlNet transformer (Transfer2.5) refused" 1 \
	"key 'controlnet_block_every_n' is set \(7\); this build implements only null" \
	"$DITSTAR" forward --model-dir "$T/dc" --inputs "$T/v2w" --output "$T/x"
dconf dp "c['use_crossattn_projection'] = False"
expect_fail "diffusers: no text projection (Predict2) refused" 1 \
	"key 'use_crossattn_projection' is false; this build implements only true" \
	"$DITSTAR" forward --model-dir "$T/dp" --inputs "$T/v2w" --output "$T/x"
dconf dr "c['rope_scale'] = [1.0, 3.0]"
expect_fail "diffusers: rope_scale of 2 numbers refused" 1 \
	"key 'rope_scale' must be an array of 3 numbers" \
	"$DITSTAR" forward --model-dir "$T/dr" --inputs "$T/v2w" --output "$T/x"
dconf de "c['encoder_hidden_states_channels'] = 64"
expect_fail "diffusers: a text projection wider than the cross-attention refused" 1 \
	"'encoder_hidden_states_channels' \(64\) must equal 'text_embed_dim' \(32\)" \
	"$DITSTAR" forward --model-dir "$T/de" --inputs "$T/v2w" --output "$T/x"

# offload: byte-identical across modes and chunk sizes (4 blocks)
F="$DITSTAR forward --model-dir $T/b4 --inputs $T/v2w"
for m in "cpu --offload-chunk-size 1" "cpu --offload-chunk-size 4" \
	"disk --offload-dir $T/store --offload-chunk-size 2" "none --offload-chunk-size 2"; do
	rm -f "$T/o.m"
	# shellcheck disable=SC2086
	$F --offload $m --output "$T/o.m" 2>"$T/err" || sed 's/^/# /' "$T/err"
	identical "offload $m: byte-identical" "$T/v2w.b4.c" "$T/o.m"
done

# generate: the official loop (FlowUniPC, CFG as cond + g (cond - uncond), the wrapper's
# conditioning frames) against the reference, 1e-4
refc inputs --model-dir "$T/m2" --output "$T/gin" --seed 9 --frames 3 --height 4 --width 6 \
	--cond-frames 1 >/dev/null
"$PYTHON_NUMPY" -c "
import sys; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st
d = st.load('$T/gin')
st.save('$T/noise', {'noise': d['x']}); st.save('$T/gt', {'gt': d['gt']})
st.save('$T/ctx', {k: d[k] for k in ('crossattn_emb', 'neg_crossattn_emb')})"
# gen DESC MODEL [ditstar options] -- [reference options]
gen() {
	desc=$1 model=$2
	shift 2
	copts= ropts= side=c
	for a in "$@"; do
		if [ "$a" = "--" ]; then side=r; continue; fi
		if [ $side = c ]; then copts="$copts $a"; else ropts="$ropts $a"; fi
	done
	n=$((n + 1))
	# shellcheck disable=SC2086
	if "$DITSTAR" generate --model-dir "$T/$model" --noise "$T/noise" --context "$T/ctx" \
		--quiet --output "$T/g$n.c" $copts 2>"$T/err" &&
		refc generate --model-dir "$T/$model" --noise "$T/noise" --context "$T/ctx" \
			--output "$T/g$n.ref" $ropts >/dev/null 2>>"$T/err" &&
		res=$(ref compare "$T/g$n.c" "$T/g$n.ref" --tensor-a latents --tensor-b x \
			--tol 1e-4); then
		ok "$desc: $res"
	else
		fail "$desc: ${res:-failed}"
		sed 's/^/# /' "$T/err"
	fi
	res=
}
n=0
gen "generate text2world, Karras sigmas, 3 steps (4 evaluations), guidance 7" m2 --steps 3 -- \
	--steps 3
gen "generate text2world, the linear shift-5 schedule (pre-trained), guidance 4" m2 --steps 3 \
	--schedule linear --guidance 4 -- --steps 3 --schedule linear --guidance 4
gen "generate video2world, 1 conditioning frame at timestep 0.1 (Karras)" m2 --steps 3 \
	--condition-latent "$T/gt" --condition-frames 1 -- --steps 3 --cond-latent "$T/gt" \
	--cond-frames 1
gen "generate video2world, 2 conditioning frames, linear schedule, 4 blocks" b4 --steps 3 \
	--schedule linear --condition-latent "$T/gt" --condition-frames 2 -- --steps 3 \
	--schedule linear --cond-latent "$T/gt" --cond-frames 2
G="$DITSTAR generate --model-dir $T/b4 --noise $T/noise --context $T/ctx --steps 2 --quiet --condition-latent $T/gt --condition-frames 1"
$G --output "$T/gg.none" 2>/dev/null
for m in "cpu --offload-chunk-size 1" "disk --offload-dir $T/gstore --offload-chunk-size 2"; do
	rm -f "$T/gg.m"
	# shellcheck disable=SC2086
	$G --offload $m --output "$T/gg.m" 2>"$T/err" || sed 's/^/# /' "$T/err"
	identical "generate video2world, offload $m: byte-identical" "$T/gg.none" "$T/gg.m"
done
expect_fail "--schedule foo: a usage error" 2 "--schedule is karras or linear" \
	"$DITSTAR" generate --model-dir "$T/m2" --schedule foo --output "$T/x"
check "generate metadata: the official guidance scale (7, not the cfg task's 8)" \
	"$PYTHON_NUMPY" -c "
import sys; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st
sys.exit(st.load_metadata('$T/g1.c').get('guidance') != '7')"
expect_fail "--condition-frames without --condition-latent: refused" 2 "condition-latent" \
	"$DITSTAR" generate --model-dir "$T/m2" --noise "$T/noise" --context "$T/ctx" --steps 2 \
	--condition-frames 1 --output "$T/x"

# refusals
mkdir -p "$T/hostile"
"$PYTHON_NUMPY" "$top_srcdir/tests/ref/pt_write.py" hostile global_os_system "$T/hostile" &&
	cp "$T/m2/config.json" "$T/hostile/"
expect_fail "a .pt naming os.system: refused, nothing run" 1 "global 'os\.system' is not allowed" \
	"$DITSTAR" forward --model-dir "$T/hostile" --inputs "$T/t2w" --output "$T/x"
check "nothing written by the refused run" test ! -e "$T/x"
finish
