#!/bin/sh
# LTX-2 on OpenCL workers (PoCL here): forward of the three versions (video + audio, and
# a video-only input) against the float64 NumPy reference (1e-5, what the CPU reaches
# too), per-token timesteps with a text mask, the one-stage generate loop (four passes a
# step, STG on block 1; LTX-2.3 image-to-video too) against the reference (2e-5); --offload cpu byte-identical to
# resident on OpenCL at chunks 1 and 3 with one transfer per chunk and step (four with
# --pass-order pass); and the small preset, whose chunks do not fit the planned device
# limit, streamed once per chunk and step, not once per pass.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch ltx_opencl)
skip_without_workers opencl "$T"
plan 21

refl() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/ltx_ref.py" "$@"; }

for v in 2 2.3 2.5; do
	refl make-tiny --output "$T/m$v.safetensors" --seed 3 --version "$v" >/dev/null
done
refl make-tiny --output "$T/l3.safetensors" --seed 6 --version 2 --layers 3 >/dev/null

# inputs NAME MODEL [options]: latent 3 x 2 x 3, 5 audio tokens, 8 text tokens
inputs() {
	name=$1 model=$2
	shift 2
	refl inputs --model "$T/$model.safetensors" --output "$T/$name" --seed 7 --frames 3 \
		--height 2 --width 3 --audio-frames 5 "$@" >/dev/null
}

# fwd DESC MODEL INPUTS "TENSORS": ditstar forward on OpenCL workers against the
# reference, each of TENSORS (video, audio) within 1e-5
fwd() {
	desc=$1 model=$2 in=$3 tensors=$4
	out="$T/$in.$model"
	if ! "$DITSTAR" forward --model-dir "$T/$model.safetensors" --inputs "$T/$in" \
		--output "$out.c" --workers opencl 2>"$T/err"; then
		fail "$desc: ditstar forward failed"
		sed 's/^/# /' "$T/err"
		return
	fi
	refl forward --model "$T/$model.safetensors" --inputs "$T/$in" --output "$out.ref" \
		>/dev/null
	res='' good=1
	for t in $tensors; do
		r=$(ref compare "$out.c" "$out.ref" --tensor-a "$t" --tol 1e-5) || good=0
		res="${res:+$res; }$t $r"
	done
	if [ $good = 1 ]; then ok "$desc: $res"; else fail "$desc: $res"; fi
}

for v in 2 2.3 2.5; do
	inputs "av$v" "m$v"
	inputs "vo$v" "m$v" --video-only
	fwd "OpenCL, LTX-$v: video + audio" "m$v" "av$v" "video audio"
	fwd "OpenCL, LTX-$v: video only" "m$v" "vo$v" video
done
inputs pt m2.3 --per-token --audio-sigma 0.3 --mask-valid 5
fwd "OpenCL, LTX-2.3: per-token timesteps, audio sigma 0.3, 5 of 8 text tokens" m2.3 pt \
	"video audio"

# generate: the sampling inputs of tests/test_ltx.sh (noise and contexts with negatives)
for m in m2 m2.3 m2.5 l3; do
	refl inputs --model "$T/$m.safetensors" --output "$T/gin.$m" --seed 9 --frames 3 \
		--height 2 --width 3 --audio-frames 5 --negative >/dev/null
	"$PYTHON_NUMPY" -c "
import sys; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st
d = st.load('$T/gin.$m')
st.save('$T/noise.$m', {'video_noise': d['video_latent'], 'audio_noise': d['audio_latent']})
st.save('$T/ctx.$m', {k.replace('_neg', '_negative'): v for k, v in d.items() if 'context' in k})"
done
# image-to-video on m2.3: its frame 1 at strength 0.7 (per-frame time rows on the device)
"$PYTHON_NUMPY" -c "
import sys; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st, numpy as np
z = st.load('$T/noise.m2.3')['video_noise'][:, :1] * 0.5 + 0.25
st.save('$T/img', {'image_latent': np.ascontiguousarray(z)})"
for m in m2 m2.3 m2.5 m2.3i; do
	desc="OpenCL, generate LTX-${m#m}, 3 steps, 4 passes, STG on block 1"
	img='' rimg=''
	if [ "$m" = m2.3i ]; then
		desc="OpenCL, generate LTX-2.3 image-to-video, frame 1 at strength 0.7"
		img="--image-latent $T/img --image-frame 1 --image-strength 0.7" rimg=$img m=m2.3
	fi
	rv='' ra=''
	# shellcheck disable=SC2086
	if "$DITSTAR" generate --model-dir "$T/$m.safetensors" --noise "$T/noise.$m" \
		--context "$T/ctx.$m" --output "$T/gen.$m.c" --quiet --steps 3 --stg-blocks 1 --workers opencl \
		$img 2>"$T/err" &&
		refl generate --model "$T/$m.safetensors" --noise "$T/gin.$m" --context "$T/gin.$m" \
			--output "$T/gen.$m.ref" --steps 3 --stg-blocks 1 $rimg >/dev/null 2>>"$T/err" &&
		rv=$(ref compare "$T/gen.$m.c" "$T/gen.$m.ref" --tensor-a video_latents \
			--tensor-b video --tol 2e-5) &&
		ra=$(ref compare "$T/gen.$m.c" "$T/gen.$m.ref" --tensor-a audio_latents \
			--tensor-b audio --tol 2e-5); then
		ok "$desc: video $rv; audio $ra"
	else
		fail "$desc: video $rv; audio $ra"
		sed 's/^/# /' "$T/err"
	fi
done

# offload: 3 blocks in chunks of 1 and 3 streamed from host RAM to the OpenCL device,
# byte-identical to resident; chunk-major (the default) moves each chunk once a step for
# its 4 passes, pass-major (the official order) once per pass
G="$DITSTAR generate --model-dir $T/l3.safetensors --noise $T/noise.l3 --context $T/ctx.l3 --quiet --steps 2 --stg-blocks 1 --workers opencl"
$G --offload none --output "$T/g.none" 2>"$T/err" || sed 's/^/# /' "$T/err"
for order in chunk pass; do
	k=1
	[ $order = pass ] && k=4
	for c in 1 3; do
		rm -f "$T/g.m"
		$G --offload cpu --offload-chunk-size $c --pass-order $order --resident-chunks 0 \
			--output "$T/g.m" \
			--stats-json "$T/g.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
		identical "OpenCL, offload cpu, chunk $c, --pass-order $order: byte-identical to resident" \
			"$T/g.none" "$T/g.m"
		check "OpenCL, chunk $c, --pass-order $order: $((k * 3 / c)) transfers a step (2 steps, 4 passes)" \
			"$PYTHON_NUMPY" - "$T/g.json" $c $k <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); c, k = int(sys.argv[2]), int(sys.argv[3])
p = s['weights']['pools'][0]; f = s['transfers']['weight_fetches']
n = k * 3 // c
print('# weight_fetches', f, 'bytes_moved_per_step', p['bytes_moved_per_step'],
      'chunk_bytes', p['chunk_bytes'], 'chunks', p['chunks'], 'passes', p['passes'])
sys.exit(not (p['chunk_size'] == c and p['chunks'] == 3 // c and p['passes'] == 4 and
              f == 2 * n and p['bytes_moved_per_step'] == n * p['chunk_bytes']))
PY
	done
done

# the small preset (8 chunks of 23 MiB, 1 video token): the planned device limit holds
# two chunks, so the chunks really stream over the link, each once a step (not per pass)
S="$DITSTAR generate --model small-ltx2 --frames 1 --height 32 --width 32 --steps 2 --stg-blocks 1 --quiet --workers opencl"
$S --output "$T/s.none" 2>"$T/err" || sed 's/^/# /' "$T/err"
$S --offload cpu --resident-chunks 0 --output "$T/s.cpu" --stats-json "$T/s.json" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
identical "OpenCL, small-ltx2, offload cpu: byte-identical to resident" "$T/s.none" "$T/s.cpu"
check "OpenCL, small-ltx2: the chunks cross the link once a step, within the device limit" \
	"$PYTHON_NUMPY" - "$T/s.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); w = s['weights']
step = w['chunks'] * w['chunk_bytes']      # every chunk once
moved = sum(l['bytes'] for l in s['links'] if l['dst'].startswith('OpenCL'))
dev = [n for n in s['memory_nodes'] if n['kind'] == 'opencl'][0]
print('# to the device', moved, 'chunks of a step', step, 'peak', dev['starpu_peak_bytes'],
      'limit', s['offload']['device_limit_bytes'])
# all blocks do not fit the limit; 2 steps: each chunk at least twice, far from 4 passes x 2
assert w['blocks'] * w['block_bytes'] > s['offload']['device_limit_bytes'], w
assert dev['starpu_peak_bytes'] <= s['offload']['device_limit_bytes'], dev
assert 2 * step <= moved < 4 * step, (moved, step)
PY
finish
