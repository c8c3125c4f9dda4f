#!/bin/sh
# The device check: runs on the GPU machine, from a bundle made by perf/pack-device.sh
# (that machine has CUDA, python3 with torch and numpy, none of our Debian packages).
#
#     sh BUNDLE/perf/gpu-check.sh OUT_DIR [BUNDLE]      # BUNDLE: default, the script's ../
#
# Stages, each under its own `timeout`, its output in OUT_DIR/<stage>.log; a stage that
# fails does not stop the next. Run in this order, the long sweep last so that it gets
# what is left of the budget:
#
#   0-env       GPU, driver, disks; ldd of the bundle's binaries (a missing library
#               fails here, by name, and the stages that need the bundle are skipped)
#   a-kernels   bin/test_cuda_kernels: every CUDA kernel against the CPU one (TAP); then
#               bin/test_cuda_ops, if the bundle has it: every op's codelet as a StarPU
#               task on CUDA workers against the CPU kernels, and the ops of a block on
#               bf16 activations against a CPU worker's (TAP); then bin/test_cuda_libs:
#               cuDNN's attention and cuBLASLt's GEMMs against the CPU kernels (TAP;
#               cuDNN: $DIT_CUDNN_LIBRARY, else the first libcudnn.so.9 of the CUDA
#               folder or python3's site-packages, PyTorch's wheels)
#   b-identity  `ditstar generate` on the tiny preset with --workers cuda: offload none,
#               cpu and disk, chunk sizes 1, 2, 4, prefetch 0, 1, 2 (all 9 pairs per mode
#               with DIT_CHECK_FULL=1, else chunk 1 at prefetch 0-2 and chunks 2, 4 at
#               prefetch 1) and a repeated run: latents byte-identical (cmp); --workers
#               cuda and all against cpu within DIT_CHECK_TOL (relative L2, default 5e-2);
#               then the library paths: the stats' cuda_libraries, a run with cuDNN
#               and cuBLASLt forced byte-identical to the default, the own kernels alone
#               against cpu; then HunyuanVideo (tiny-hunyuan): cuda against cpu, and two pools
#               streamed (chunks 1,2) byte-identical to resident; then LTX-2 (tiny-ltx2,
#               2 steps of 4 guidance passes, STG on block 1): cuda against cpu (video
#               and audio latents), and chunks of 1 block streamed byte-identical to
#               resident; then Cosmos-Predict2.5 (tiny-cosmos) the same two checks;
#               then keep what fits (--resident-chunks 2: byte-identical, 2 chunks
#               pinned, the others fetched every step) and `ditstar plan` on the GPU
#   d-ops       bin/bench_cuda_ops: attention TFLOP/s and the block's bf16 GEMMs against
#               cuBLAS at 14B/480P shapes; then bin/bench_cuda_libs: cuDNN's attention
#               and cuBLASLt's epilogue GEMMs against the own kernels on bf16 activations
#   d-sdpa      perf/bench_sdpa.py: torch SDPA at the same attention shape
#   d-peer      perf/peer_wan_block.py: a PyTorch bf16 Wan2.1 block at 14B dims, 480P,
#               resident and streamed (pinned host memory, a copy stream): s/block, set
#               beside the sweep's resident s/block in the summary
#   e-act       perf/act-check on the sweep's checkpoint (14B dims, 8 blocks) at 720P
#               (CUDA's default bf16 activations, as every --workers cuda run here)
#               (81 x 720 x 1280, 75 600 tokens): resident with every pass in flight,
#               then --offload cpu --resident-chunks 0 --device-mem-limit 12G (the
#               planner takes 1 pass in flight and token chunks): s/block of each, the
#               ratio, StarPU's peak on the GPU against the limit (fails above it)
#   f-coexec    perf/bench-coexec --accel cuda: the small model's clips with --workers
#               cpu, cuda and all (dmda): when CPU workers beside the GPU help
#   e-fp8       perf/sweep-cuda --dtype fp8: the sweep's checkpoint with its block
#               matrices F8_E4M3 (a scale_weight each), kept compact: resident and
#               --offload disk at chunk 1, against c-sweep's bf16 disk c1 row
#   c-sweep     perf/sweep-cuda: a random BF16 checkpoint with 14B dims and 8 blocks, then
#               resident, --offload cpu and disk at chunks 1, 2, 4, 8 (prefetch 1), keep
#               what fits (--offload cpu, chunk 1, budgets of the streaming limit + 25,
#               50, 75% of the chunks: rows fit25, fit50, fit75), and resident again,
#               at 480P (81 x 480 x 832, 32 760 tokens), 2 steps each
#
# OUT_DIR then holds the ten logs, summary.md (status per stage and the lines for
# perf/results/gpu-check.md, each with the command behind it) and details.tar.gz
# (stats JSONs, the sweep's TSV and per-run log): 12 files, what a device call brings
# back. Scratch space: $DIT_CHECK_SCRATCH (default /tmp/ditstar-gpu-check); the
# checkpoint goes to /dev/shm when it has room. Total time: at most $DIT_CHECK_BUDGET
# seconds (540: a device call of 600 s with its transfers).
#
# Without a CUDA device (here, to test the plumbing) stage 0 runs, the GPU stages are
# skipped and the exit status is 77. Otherwise 0 when every stage passed, else 1.
# Plumbing test of the GPU stages on a CPU build: DIT_CHECK_FORCE=1 DIT_CHECK_WORKERS=cpu
# DIT_CHECK_SWEEP_ARGS="--dim 256 --ffn 512 --heads 2 --blocks 4 --frames 5 --height 64
# --width 64 --chunks 1,2,4" (extra arguments of perf/sweep-cuda; DIT_CHECK_OPS_ARGS:
# of bench_cuda_ops).
set -eu

# ------------------------------------------------------------------ one stage
# The script runs each stage as `gpu-check.sh --stage NAME` under timeout, with the
# state in exported variables (OUT, SCRATCH, B, LIB, PERF, HAVE_GPU).

note() { # KEY VALUE: a result for the summary
	echo "$1 $2" >>"$SCRATCH/results.txt"
}
line() { # TEXT: a line for perf/results/gpu-check.md
	echo "$1" >>"$SCRATCH/lines.md"
}
dit() { # runs one of the bundle's binaries with the bundle's libraries
	LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"
}

stage_env() {
	echo "== machine"
	uname -a
	echo "cores: $(nproc)"
	free -g 2>/dev/null || true
	df -h /tmp /dev/shm 2>/dev/null || true
	echo
	echo "== GPU"
	if command -v nvidia-smi >/dev/null 2>&1; then
		nvidia-smi -L || true
		nvidia-smi -q 2>/dev/null | grep -E 'Product Name|Driver Version|CUDA Version|Persistence Mode|Compute Mode' || true
		nvidia-smi -q 2>/dev/null | sed -n '/FB Memory Usage/,/Free/p' || true
		nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv 2>/dev/null || true
	else
		echo "nvidia-smi: not found"
	fi
	command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 2
	echo
	echo "== bundle"
	sed -n '1,6p' "$B/MANIFEST" 2>/dev/null || echo "(no MANIFEST)"
	echo "LD_LIBRARY_PATH for our binaries: $LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	rc=0
	for f in "$B"/bin/*; do
		echo
		echo "== ldd $(basename "$f")"
		dit ldd "$f" || rc=1
		# the driver's own libraries come with a GPU: not missing on a machine without one
		miss=$(dit ldd "$f" | awk '/not found/ { print $1 }' | while read -r l; do
			case $l in libcuda.so* | libnvidia-*) [ "$HAVE_GPU" = 1 ] && echo "$l" ;; *) echo "$l" ;; esac
		done | tr '\n' ' ')
		if [ -n "$miss" ]; then
			echo "MISSING for $(basename "$f"): $miss"
			rc=1
		fi
	done
	echo
	if [ $rc -eq 0 ]; then
		echo "ldd: every library of the bundle's binaries found"
	else
		touch "$SCRATCH/ldd-broken"
		echo "stage 0: libraries missing (above): the stages that run the bundle are skipped"
	fi
	if [ "$HAVE_GPU" = 1 ]; then
		note gpu "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
	else
		echo "no CUDA device: the GPU stages are skipped"
	fi
	return $rc
}

tap_prog() { # NAME WHAT: runs the TAP test bin/NAME; ok when it exits 0 with no "not ok"
	t=$SCRATCH/tap-$1.txt
	set +e
	dit "$B/bin/$1" >"$t" 2>&1
	rc=$?
	set -e
	cat "$t"
	nok=$(grep -c '^ok' "$t" || true)
	nbad=$(grep -c '^not ok' "$t" || true)
	nskip=$(grep -ci '^ok.*# *skip' "$t" || true)
	# a plan of 1..0 (test_cuda_ops without a CUDA worker) passes nothing: not ok here
	grep -q '^1\.\.0' "$t" && rc="$rc, skipped all"
	echo "$1: exit $rc, $nok ok ($nskip skipped), $nbad not ok"
	line "- $2: $nok ok ($nskip skipped), $nbad not ok (exit $rc) -- \`bin/$1\`"
	[ "$rc" = 0 ] && [ "$nbad" -eq 0 ]
}

stage_kernels() {
	[ -x "$B/bin/test_cuda_kernels" ] || {
		echo "bin/test_cuda_kernels: not in the bundle (not built?)"
		return 1
	}
	kfail=0
	tap_prog test_cuda_kernels "CUDA kernels vs CPU" || kfail=1
	if [ -x "$B/bin/test_cuda_ops" ]; then
		echo
		tap_prog test_cuda_ops "CUDA codelets as StarPU tasks vs CPU" || kfail=1
	else
		echo "bin/test_cuda_ops: not in the bundle (not built?)"
	fi
	if [ -x "$B/bin/test_cuda_libs" ]; then
		echo
		echo "DIT_CUDNN_LIBRARY=${DIT_CUDNN_LIBRARY:-(unset: libcudnn.so.9 on the loader's path)}"
		tap_prog test_cuda_libs "cuDNN attention and cuBLASLt GEMMs vs CPU" || kfail=1
	else
		echo "bin/test_cuda_libs: not in the bundle (not built?)"
	fi
	return $kfail
}

# Latents comparison: relative L2 error and max |a - b| of the `latents` tensors (or
# of TENSOR: LTX-2 writes video_latents and audio_latents).
compare_latents() { # A B TOL [TENSOR]
	python3 - "$1" "$2" "$3" "${4:-latents}" <<'EOF'
import json, struct, sys
import numpy as np
name = sys.argv[4]
def latents(p):
    with open(p, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        b, e = h[name]["data_offsets"]
        assert h[name]["dtype"] == "F32"
        f.seek(8 + n + b)
        return np.frombuffer(f.read(e - b), dtype="<f4").astype(np.float64)
a, b, tol = latents(sys.argv[1]), latents(sys.argv[2]), float(sys.argv[3])
rel = np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)
print("rel_l2 %.3e max_abs %.3e (tolerance rel_l2 %.1e) %s" % (rel, np.abs(a - b).max(), tol,
      "ok" if rel <= tol and np.isfinite(a).all() else "OVER"))
sys.exit(0 if rel <= tol and np.isfinite(a).all() else 1)
EOF
}

stage_identity() {
	w=$SCRATCH/identity
	rm -rf "$w"
	mkdir -p "$w"
	base="generate --quiet --model tiny --cache-dir $SCRATCH/cache"
	run() { # NAME ARGS...: one generate, latents to $w/NAME.st
		n=$1
		shift
		echo "\$ ditstar $base $* --output $w/$n.st"
		# shellcheck disable=SC2086 # base is a list of words
		dit "$B/bin/ditstar" $base "$@" --output "$w/$n.st"
	}
	rc=0
	wk0=${DIT_CHECK_WORKERS:-cuda}
	run ref --workers "$wk0" --offload none --stats-json "$w/ref.json" || return 1
	cp "$w/ref.json" "$SCRATCH/details/identity-cuda-stats.json"
	echo "memory nodes of the cuda run: $(python3 -c 'import json,sys; print([(n["name"], n["kind"]) for n in json.load(open(sys.argv[1]))["memory_nodes"]])' "$w/ref.json")"
	if [ "${DIT_CHECK_FULL:-0}" = 1 ]; then
		pairs="1:0 1:1 1:2 2:0 2:1 2:2 4:0 4:1 4:2"
	else
		pairs="1:0 1:1 1:2 2:1 4:1"
	fi
	same=0 total=0
	check() { # NAME: cmp against ref
		total=$((total + 1))
		if cmp "$w/ref.st" "$w/$1.st"; then
			same=$((same + 1))
			echo "identical: $1"
		else
			echo "DIFFERENT: $1"
			rc=1
		fi
	}
	if run again --workers "$wk0" --offload none; then check again; else rc=1; fi
	for mode in cpu disk; do
		for p in $pairs; do
			c=${p%:*} f=${p#*:}
			n=$mode-c$c-p$f
			set -- --workers "$wk0" --offload "$mode" --offload-chunk-size "$c" --prefetch "$f" \
				--resident-chunks 0
			# disk: prefetch + 1 host RAM slots (ditstar refuses fewer)
			[ "$mode" = disk ] && set -- "$@" --offload-dir "$w/store-c$c" \
				--disk-ram-slots $((f + 1 > 2 ? f + 1 : 2))
			if run "$n" "$@"; then check "$n"; else rc=1; total=$((total + 1)); fi
		done
	done
	echo "byte-identical to --offload none: $same of $total"
	line "- offload identity on the GPU (tiny, --workers cuda): $same of $total runs byte-identical to \`--offload none\` (cpu, disk; chunk:prefetch $pairs; and a repeated run) -- \`ditstar $base --workers cuda --offload MODE --offload-chunk-size C --prefetch P --output F\`, cmp"
	tol=${DIT_CHECK_TOL:-5e-2}
	run cpu --workers cpu || rc=1
	for wk in cuda all; do
		[ "$wk" = all ] && { run all --workers all || { rc=1; continue; }; }
		[ "$wk" = cuda ] && src=ref || src=all
		if r=$(compare_latents "$w/$src.st" "$w/cpu.st" "$tol"); then :; else rc=1; fi
		echo "--workers $wk vs cpu: $r"
		line "- --workers $wk vs cpu (tiny, 10 UniPC steps): $r -- \`ditstar $base --workers $wk\`"
	done
	# the library paths: what ran where (the stats), the run with both libraries forced
	# (a library that refuses a call its rules take fails it) byte-identical to auto,
	# and the own kernels alone against cpu
	python3 -c 'import json,sys; print("cuda_libraries:", json.dumps(json.load(open(sys.argv[1]))["cuda_libraries"]))' "$w/ref.json" || rc=1
	export DIT_CUDA_ATTENTION=cudnn DIT_CUDA_GEMM=cublaslt
	if run forced --workers "$wk0" --stats-json "$w/forced.json"; then check forced; else rc=1; fi
	export DIT_CUDA_ATTENTION=own DIT_CUDA_GEMM=own
	run own --workers "$wk0" || rc=1
	unset DIT_CUDA_ATTENTION DIT_CUDA_GEMM
	r=$(compare_latents "$w/own.st" "$w/cpu.st" "$tol") || rc=1
	echo "own kernels (DIT_CUDA_ATTENTION=own DIT_CUDA_GEMM=own) vs cpu: $r"
	libs=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["cuda_libraries"] or {}; print("; ".join("%s: %s %d of %d tasks" % (k, v["library"] or "own", v["library_tasks"], v["library_tasks"] + v["own_kernel_tasks"]) for k, v in c.items()))' "$w/ref.json" 2>/dev/null || echo "?")
	line "- CUDA libraries on the tiny run: $libs; forced (cudnn, cublaslt) byte-identical to auto; own kernels vs cpu: $r -- \`DIT_CUDA_ATTENTION=cudnn|own DIT_CUDA_GEMM=cublaslt|own ditstar $base --workers cuda --stats-json F\`"
	# HunyuanVideo (two pools, joint attention, the CPU-only vector ops beside the GPU)
	base="generate --quiet --model tiny-hunyuan --steps 3 --cache-dir $SCRATCH/cache"
	if run hy-cuda --workers "$wk0" && run hy-cpu --workers cpu &&
		run hy-pairs --workers "$wk0" --offload cpu --offload-chunk-size 1,2 --resident-chunks 0; then
		r=$(compare_latents "$w/hy-cuda.st" "$w/hy-cpu.st" "$tol") || rc=1
		cmp "$w/hy-cuda.st" "$w/hy-pairs.st" && id=identical || { id=DIFFERENT; rc=1; }
		echo "hunyuan --workers cuda vs cpu: $r; offload cpu 1,2: $id"
		line "- HunyuanVideo (tiny-hunyuan, 3 steps) --workers cuda vs cpu: $r; --offload cpu --offload-chunk-size 1,2 $id to resident -- \`ditstar $base --workers cuda\`"
	else
		rc=1
	fi
	# LTX-2 (two streams, four guidance passes a step sharing each chunk, STG, the
	# CPU-only modulation, RoPE tables and guidance step beside the GPU)
	base="generate --quiet --model tiny-ltx2 --steps 2 --stg-blocks 1 --cache-dir $SCRATCH/cache"
	if run ltx-cuda --workers "$wk0" && run ltx-cpu --workers cpu &&
		run ltx-c1 --workers "$wk0" --offload cpu --offload-chunk-size 1 --resident-chunks 0; then
		rv=$(compare_latents "$w/ltx-cuda.st" "$w/ltx-cpu.st" "$tol" video_latents) || rc=1
		ra=$(compare_latents "$w/ltx-cuda.st" "$w/ltx-cpu.st" "$tol" audio_latents) || rc=1
		if cmp "$w/ltx-cuda.st" "$w/ltx-c1.st"; then id=identical; else id=DIFFERENT rc=1; fi
		echo "ltx-2 --workers cuda vs cpu: video $rv; audio $ra; offload cpu 1: $id"
		note ltx2_video_rel_l2 "$(echo "$rv" | awk '{ print $2 }')"
		note ltx2_audio_rel_l2 "$(echo "$ra" | awk '{ print $2 }')"
		note ltx2_offload_cpu_c1 "$id"
		line "- LTX-2 (tiny-ltx2, 2 steps x 4 passes, STG block 1) --workers cuda vs cpu: video $rv; audio $ra; --offload cpu --offload-chunk-size 1 $id to resident -- \`ditstar $base --workers cuda\`"
	else
		rc=1
	fi
	# Cosmos-Predict2.5 (per-frame AdaLN-LoRA, split RoPE, exact GELU, Karras UniPC)
	base="generate --quiet --model tiny-cosmos --steps 2 --cache-dir $SCRATCH/cache"
	if run cos-cuda --workers "$wk0" && run cos-cpu --workers cpu &&
		run cos-c1 --workers "$wk0" --offload cpu --offload-chunk-size 1 --resident-chunks 0; then
		r=$(compare_latents "$w/cos-cuda.st" "$w/cos-cpu.st" "$tol") || rc=1
		if cmp "$w/cos-cuda.st" "$w/cos-c1.st"; then id=identical; else id=DIFFERENT rc=1; fi
		echo "cosmos --workers cuda vs cpu: $r; offload cpu 1: $id"
		note cosmos_rel_l2 "$(echo "$r" | awk '{ print $2 }')"
		note cosmos_offload_cpu_c1 "$id"
		line "- Cosmos-Predict2.5 (tiny-cosmos, 2 steps, 3 evaluations) --workers cuda vs cpu: $r; --offload cpu --offload-chunk-size 1 $id to resident -- \`ditstar $base --workers cuda\`"
	else
		rc=1
	fi
	# keep what fits: 2 of tiny's 4 chunks pinned on the GPU, the others streamed; and
	# the plan of a run without a limit (the budget from the device's free memory)
	base="generate --quiet --model tiny --cache-dir $SCRATCH/cache"
	if run fit2 --workers "$wk0" --offload cpu --resident-chunks 2 --stats-json "$w/fit2.json" &&
		dit "$B/bin/ditstar" plan --model tiny --cache-dir "$SCRATCH/cache" --workers "$wk0" \
			--offload cpu --json >"$w/plan.json"; then
		if cmp "$w/ref.st" "$w/fit2.st"; then id=identical; else id=DIFFERENT rc=1; fi
		f=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["weights"]["pools"][0]["resident_chunks"], s["transfers"]["weight_fetches"], len(s["step_bytes"]))' "$w/fit2.json")
		pb=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["compute"]; print(p["budget_bytes"] >> 20, p["budget_from"])' "$w/plan.json")
		echo "keep what fits: $id; resident, fetches, steps: $f; plan budget MiB, from: $pb"
		note fit_resident2 "$id ($f)"
		note plan_budget "$pb"
		line "- keep what fits on the GPU (tiny, --resident-chunks 2): $id to resident; resident chunks, weight fetches, steps: $f (want 2, 2 + 2 x steps); \`ditstar plan --workers cuda --offload cpu\` budget $pb -- \`ditstar $base --workers cuda --offload cpu --resident-chunks 2\`"
	else
		rc=1
	fi
	# the time model on the GPU: calibrate, the plan's prediction against the run, and
	# --offload auto (byte-identical)
	pa="--model tiny --cache-dir $SCRATCH/cache --workers $wk0 --offload cpu --resident-chunks 2"
	# shellcheck disable=SC2086 # pa is a list of words
	if dit "$B/bin/ditstar" calibrate $pa >"$w/cal.txt" 2>&1 &&
		dit "$B/bin/ditstar" plan $pa --json >"$w/plan2.json" &&
		run auto --workers "$wk0" --offload auto --stats-json "$w/auto.json"; then
		if cmp "$w/ref.st" "$w/auto.st"; then id=identical; else id=DIFFERENT rc=1; fi
		pr=$(python3 -c 'import json,sys,statistics; p=json.load(open(sys.argv[1])); s=json.load(open(sys.argv[2])); print(p["predicted_seconds_per_step"], statistics.median(s["step_seconds"][1:]) if len(s["step_seconds"]) > 1 else None)' "$w/plan2.json" "$w/fit2.json")
		echo "time model: predicted, measured s/step (resident 2): $pr; --offload auto: $id"
		note predicted_vs_measured "$pr"
		line "- time model on the GPU (tiny, --offload cpu --resident-chunks 2): predicted, measured s/step $pr; --offload auto $id to resident -- \`ditstar calibrate $pa\`"
	else
		rc=1
	fi
	return $rc
}

stage_ops() {
	[ -x "$B/bin/bench_cuda_ops" ] || {
		echo "bin/bench_cuda_ops: not in the bundle (not built?)"
		return 1
	}
	set +e
	# shellcheck disable=SC2086 # extra arguments, split on purpose
	dit "$B/bin/bench_cuda_ops" ${DIT_CHECK_OPS_ARGS:-} >"$SCRATCH/ops.txt" 2>&1
	rc=$?
	set -e
	cat "$SCRATCH/ops.txt"
	grep '^result ' "$SCRATCH/ops.txt" | sed 's/^result //' >>"$SCRATCH/results.txt" || true
	line "- dit_cuda_attention, 14B/480P (L 32760, 40 x 128): $(sed -n 's/^result attention_tflops //p' "$SCRATCH/ops.txt") TFLOP/s -- \`bin/bench_cuda_ops\`"
	for k in qkv o ffn0 ffn2 all; do
		r=$(sed -n "s/^result linear_${k}_ratio //p" "$SCRATCH/ops.txt")
		[ -n "$r" ] && line "- dit_cuda_linear $k (bf16 w, m 32760) / cuBLAS best bf16: $r ($(sed -n "s/^result linear_${k}_tflops //p" "$SCRATCH/ops.txt") vs $(sed -n "s/^result cublas_${k}_tflops //p" "$SCRATCH/ops.txt") TFLOP/s) -- \`bin/bench_cuda_ops\`"
	done
	[ -x "$B/bin/bench_cuda_libs" ] || {
		echo "bin/bench_cuda_libs: not in the bundle (not built?)"
		return 1
	}
	set +e
	# shellcheck disable=SC2086 # extra arguments, split on purpose
	dit "$B/bin/bench_cuda_libs" ${DIT_CHECK_LIBS_ARGS:-} >"$SCRATCH/libs.txt" 2>&1
	rc2=$?
	set -e
	echo
	cat "$SCRATCH/libs.txt"
	grep '^result ' "$SCRATCH/libs.txt" | sed 's/^result //' >>"$SCRATCH/results.txt" || true
	line "- attention on bf16 activations, 14B/480P: cuDNN $(sed -n 's/^result cudnn_attention_tflops //p' "$SCRATCH/libs.txt") TFLOP/s, own kernel $(sed -n 's/^result own_attention_bf16_tflops //p' "$SCRATCH/libs.txt") (cuDNN / own $(sed -n 's/^result cudnn_attention_vs_own //p' "$SCRATCH/libs.txt")) -- \`bin/bench_cuda_libs\`"
	for k in qkv o ffn0 ffn2; do
		lt=$(sed -n "s/^result lt_${k}_tflops //p" "$SCRATCH/libs.txt")
		cb=$(sed -n "s/^result cublas_${k}_tflops //p" "$SCRATCH/ops.txt")
		[ -n "$lt" ] && [ -n "$cb" ] && line "- cuBLASLt linear $k (bf16 in/out, bias/GELU epilogue) / cuBLAS best: $(awk -v a="$lt" -v b="$cb" 'BEGIN { printf "%.3f", a / b }') ($lt vs $cb TFLOP/s; own bf16 path $(sed -n "s/^result own_bf16_${k}_tflops //p" "$SCRATCH/libs.txt")) -- \`bin/bench_cuda_libs\`, \`bin/bench_cuda_ops\`"
	done
	[ $rc -eq 0 ] && rc=$rc2
	return $rc
}

# py_stage NAME SCRIPT [ARGS...]: python3 PERF/SCRIPT, its output in SCRATCH/NAME.txt
# (and printed), its "result " lines added to the results; its exit status.
py_stage() {
	n=$1 sc=$2
	shift 2
	set +e
	python3 "$PERF/$sc" "$@" >"$SCRATCH/$n.txt" 2>&1
	prc=$?
	set -e
	cat "$SCRATCH/$n.txt"
	grep '^result ' "$SCRATCH/$n.txt" | sed 's/^result //' >>"$SCRATCH/results.txt" || true
	return $prc
}

stage_sdpa() {
	rc=0
	py_stage sdpa bench_sdpa.py || rc=$?
	grep -q '^result sdpa_tflops' "$SCRATCH/sdpa.txt" &&
		line "- torch SDPA bf16 [1, 40, 32760, 128]: $(sed -n 's/^result sdpa_tflops //p' "$SCRATCH/sdpa.txt") TFLOP/s (backend $(sed -n 's/^result sdpa_backend //p' "$SCRATCH/sdpa.txt")) -- \`python3 perf/bench_sdpa.py\`"
	return $rc
}

stage_peer() {
	rc=0
	# shellcheck disable=SC2086 # extra arguments, split on purpose
	py_stage peer peer_wan_block.py ${DIT_CHECK_PEER_ARGS:-} || rc=$?
	grep -q '^result torch_block_resident_s' "$SCRATCH/peer.txt" &&
		line "- PyTorch bf16 Wan2.1 block, 14B dims, 480P (SDPA): resident $(sed -n 's/^result torch_block_resident_s //p' "$SCRATCH/peer.txt") s/block, streamed $(sed -n 's/^result torch_block_streamed_s //p' "$SCRATCH/peer.txt") s/block (pinned host, copy stream) -- \`python3 perf/peer_wan_block.py\`"
	return $rc
}

stage_coexec() {
	set +e
	LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} python3 "$PERF/bench-coexec" \
		--accel cuda --ditstar "$B/bin/ditstar" --num-runs 1 --num-steps 3 \
		--clips "${DIT_CHECK_COEXEC_CLIPS:-short=1x32x32,mid=5x64x96,long=9x128x192}" \
		--out "$SCRATCH/coexec" >"$SCRATCH/coexec.txt" 2>&1
	rc=$?
	set -e
	cat "$SCRATCH/coexec.txt"
	cp "$SCRATCH"/coexec/*.tsv "$SCRATCH/details/" 2>/dev/null || true
	line "- CPU workers beside the GPU (small model, dmda; all / cuda per clip in f-coexec.log) -- \`perf/bench-coexec --accel cuda --num-runs 1 --num-steps 3\`"
	return $rc
}

stage_sweep() {
	model=$SCRATCH/wan14b-8
	shm=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
	[ "${shm:-0}" -gt 10000000 ] && model=/dev/shm/ditstar-wan14b-8
	limit=${STAGE_LIMIT:-300}
	budget=$((limit - 75)) # no run starts after this: one 14B run takes well under 75 s
	fits="--fits 0.25,0.5,0.75" # a device budget: not with the CPU plumbing test
	[ "${DIT_CHECK_WORKERS:-cuda}" = cpu ] && fits=""
	[ $budget -gt 0 ] || budget=1
	set +e
	# shellcheck disable=SC2086 # extra arguments, split on purpose
	python3 "$PERF/sweep-cuda" --make-model --model-dir "$model" --ditstar "$B/bin/ditstar" \
		--lib "$LIB" --workers "${DIT_CHECK_WORKERS:-cuda}" --out "$SCRATCH/sweep" --budget "$budget" \
		$fits ${DIT_CHECK_SWEEP_ARGS:-}
	rc=$?
	set -e
	cp "$SCRATCH/sweep/sweep.tsv" "$SCRATCH/sweep/runs.log" "$SCRATCH/sweep/sweep-stats.json" \
		"$SCRATCH/details/" 2>/dev/null || true
	line "- offload sweep, 14B dims, 8 blocks, 480P, --workers cuda, prefetch 1 (table in c-sweep.log) -- \`perf/sweep-cuda --make-model --model-dir DIR --ditstar bin/ditstar\`"
	return $rc
}

# compact fp8 weights: the sweep's checkpoint with its block matrices F8_E4M3 (each with
# a scale_weight), resident and --offload disk at chunk 1: what disk costs when each
# weight is one byte (the c-sweep's disk c1 row is the bf16 run of the same shapes)
stage_fp8() {
	model=$SCRATCH/wan14b-8-fp8
	shm=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
	[ "${shm:-0}" -gt 10000000 ] && model=/dev/shm/ditstar-wan14b-8-fp8
	limit=${STAGE_LIMIT:-120}
	budget=$((limit - 60))
	[ $budget -gt 0 ] || budget=1
	set +e
	# shellcheck disable=SC2086 # extra arguments, split on purpose
	python3 "$PERF/sweep-cuda" --make-model --dtype fp8 --model-dir "$model" \
		--ditstar "$B/bin/ditstar" --lib "$LIB" --workers "${DIT_CHECK_WORKERS:-cuda}" \
		--out "$SCRATCH/fp8" --modes disk --chunks 1 --no-repeat --budget "$budget" \
		${DIT_CHECK_SWEEP_ARGS:-}
	rc=$?
	set -e
	rm -rf "$model"
	cp "$SCRATCH/fp8/sweep.tsv" "$SCRATCH/details/fp8-sweep.tsv" 2>/dev/null || true
	cp "$SCRATCH/fp8/sweep-stats.json" "$SCRATCH/details/fp8-sweep-stats.json" 2>/dev/null || true
	line "- compact fp8 weights (F8_E4M3 block matrices kept as stored), 14B dims, 8 blocks, 480P: resident and --offload disk chunk 1 (table in e-fp8.log; bf16's disk c1 row in c-sweep.log) -- \`perf/sweep-cuda --make-model --dtype fp8 --modes disk --chunks 1 --model-dir DIR\`"
	return $rc
}

stage_act() {
	model=$SCRATCH/wan14b-8
	shm=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
	[ "${shm:-0}" -gt 10000000 ] && model=/dev/shm/ditstar-wan14b-8
	set +e
	python3 "$PERF/sweep-cuda" --make-model --make-only --model-dir "$model" &&
		# shellcheck disable=SC2086 # extra arguments, split on purpose
		python3 "$PERF/act-check" --ditstar "$B/bin/ditstar" --lib "$LIB" --model-dir "$model" \
			--workers "${DIT_CHECK_WORKERS:-cuda}" --limit "${DIT_CHECK_ACT_LIMIT:-12G}" \
			--out "$SCRATCH/act" ${DIT_CHECK_ACT_ARGS:-} | tee "$SCRATCH/act.txt"
	rc=$?
	set -e
	cp "$SCRATCH"/act/act-*.json "$SCRATCH/details/" 2>/dev/null || true
	grep '^result ' "$SCRATCH/act.txt" | sed 's/^result /act_/' >>"$SCRATCH/results.txt" || true
	line "- 14B dims, 8 blocks, 720P: resident vs --offload cpu under --device-mem-limit ${DIT_CHECK_ACT_LIMIT:-12G}: $(grep '^result ' "$SCRATCH/act.txt" | sed 's/^result //' | tr '\n' ';') -- \`perf/act-check --model-dir DIR --limit 12G\`"
	return $rc
}

if [ "${1:-}" = --stage ]; then
	case $2 in
	0-env) stage_env ;;
	a-kernels) stage_kernels ;;
	b-identity) stage_identity ;;
	c-sweep) stage_sweep ;;
	e-fp8) stage_fp8 ;;
	e-act) stage_act ;;
	d-ops) stage_ops ;;
	d-sdpa) stage_sdpa ;;
	d-peer) stage_peer ;;
	f-coexec) stage_coexec ;;
	*) echo "gpu-check: unknown stage $2" >&2; exit 2 ;;
	esac
	exit
fi

# ------------------------------------------------------------------ the driver

[ $# -ge 1 ] && [ $# -le 2 ] || {
	echo "usage: gpu-check.sh OUT_DIR [BUNDLE_DIR]" >&2
	exit 2
}
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
src_bundle=${2:-$(dirname "$self")/..}
[ -f "$src_bundle/bin/ditstar" ] || [ -f "$src_bundle/MANIFEST" ] || {
	echo "gpu-check: $src_bundle: not a bundle of perf/pack-device.sh (no bin/ditstar)" >&2
	exit 2
}
SCRATCH=${DIT_CHECK_SCRATCH:-/tmp/ditstar-gpu-check}
budget=${DIT_CHECK_BUDGET:-540}
t0=$(date +%s)

# A private copy of the bundle with the big libraries decompressed.
rm -rf "$SCRATCH/bundle" "$SCRATCH/details" "$SCRATCH/results.txt" "$SCRATCH/lines.md" \
	"$SCRATCH/ldd-broken" "$SCRATCH/sweep"
mkdir -p "$SCRATCH/details"
cp -R "$src_bundle" "$SCRATCH/bundle"
B=$SCRATCH/bundle
for f in "$B"/lib/*.xz "$B"/lib/fallback/*.xz; do
	[ -f "$f" ] || continue
	if command -v xz >/dev/null 2>&1; then
		xz -d "$f"
	else
		python3 -c 'import lzma, os, sys; p = sys.argv[1]; open(p[:-3], "wb").write(lzma.open(p).read()); os.remove(p)' "$f"
	fi
done
LIB=$B/lib
{ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep -q 'libstdc++\.so\.6 ' || LIB=$LIB:$B/lib/fallback
[ -d /usr/local/cuda/lib64 ] && LIB=$LIB:/usr/local/cuda/lib64
# cuDNN, which the attention loads at run time: the system's, else the one PyTorch's
# wheels bring (its folder also on the path, for the libraries it loads)
if [ -z "${DIT_CUDNN_LIBRARY:-}" ]; then
	for d in /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu \
		$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
		f=$(find "$d" -maxdepth 5 -name 'libcudnn.so.9' 2>/dev/null | head -n 1)
		[ -n "$f" ] && DIT_CUDNN_LIBRARY=$f && break
	done
fi
[ -n "${DIT_CUDNN_LIBRARY:-}" ] && LIB=$LIB:$(dirname "$DIT_CUDNN_LIBRARY")
export DIT_CUDNN_LIBRARY
PERF=$B/perf
[ -f "$PERF/sweep-cuda" ] || PERF=$(dirname "$self")
HAVE_GPU=${DIT_CHECK_FORCE:-0} # 1: run the GPU stages anyway (plumbing tests, with DIT_CHECK_WORKERS=cpu)
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
	HAVE_GPU=1
fi
STARPU_HOME=$SCRATCH/starpu-home # bus calibration and performance models, kept across runs
mkdir -p "$STARPU_HOME"
export OUT SCRATCH B LIB PERF HAVE_GPU STARPU_HOME
: >"$SCRATCH/results.txt"
: >"$SCRATCH/lines.md"
: >"$SCRATCH/status.md"

failed=0
# STAGE LIMIT NEEDS: runs one stage; NEEDS: gpu, bundle (its binaries load) or both
stage() {
	name=$1 limit=$2 needs=$3
	left=$((budget - ($(date +%s) - t0) - 10))
	[ "$limit" -gt "$left" ] && limit=$left
	log=$OUT/$name.log
	why=""
	case $needs in *gpu*) [ "$HAVE_GPU" = 1 ] || why="no CUDA device" ;; esac
	case $needs in *bundle*) [ -e "$SCRATCH/ldd-broken" ] && why="libraries missing (0-env.log)" ;; esac
	[ -z "$why" ] && [ "$limit" -lt 15 ] && why="no time left in the ${budget} s budget"
	if [ -n "$why" ]; then
		echo "skipped: $why" >"$log"
		printf '| %s | SKIP | 0 | %s |\n' "$name" "$why" >>"$SCRATCH/status.md"
		echo "gpu-check: $name: skipped ($why)"
		[ "$why" = "no CUDA device" ] || failed=1
		return 0
	fi
	start=$(date +%s)
	echo "gpu-check: $name (limit ${limit} s) ..."
	set +e
	STAGE_LIMIT=$limit timeout -k 10 "$limit" sh "$self" --stage "$name" >"$log" 2>&1
	rc=$?
	set -e
	secs=$(($(date +%s) - start))
	case $rc in
	0) st=PASS ;;
	124 | 137) st=TIMEOUT ;;
	77) st=SKIP ;;
	*) st="FAIL (exit $rc)" ;;
	esac
	case $st in PASS | SKIP) ;; *) failed=1 ;; esac
	printf '| %s | %s | %d | %s |\n' "$name" "$st" "$secs" "$(tail -n 1 "$log" | cut -c 1-100 | tr '|' '/')" >>"$SCRATCH/status.md"
	echo "gpu-check: $name: $st in ${secs} s"
}

stage 0-env 30 none
stage a-kernels 90 gpu,bundle
stage b-identity 110 gpu,bundle
stage d-ops 100 gpu,bundle
stage d-sdpa 45 gpu
stage d-peer 60 gpu
stage e-act 150 gpu,bundle
stage f-coexec 60 gpu,bundle
stage e-fp8 120 gpu,bundle
stage c-sweep 400 gpu,bundle

# ours / SDPA from the two benches
att=$(sed -n 's/^attention_tflops //p' "$SCRATCH/results.txt")
sdpa=$(sed -n 's/^sdpa_tflops //p' "$SCRATCH/results.txt")
if [ -n "$att" ] && [ -n "$sdpa" ]; then
	echo "- attention ours / SDPA: $(awk -v a="$att" -v b="$sdpa" 'BEGIN { printf "%.3f", a / b }') ($att vs $sdpa TFLOP/s, same shape, ours fp32 in/out with bf16 tensor cores, SDPA bf16) -- \`bin/bench_cuda_ops\`, \`python3 perf/bench_sdpa.py\`" >>"$SCRATCH/lines.md"
fi

# cuDNN's attention / SDPA, and ditstar's resident block / PyTorch's
cud=$(sed -n 's/^cudnn_attention_tflops //p' "$SCRATCH/results.txt")
if [ -n "$cud" ] && [ -n "$sdpa" ]; then
	echo "- attention cuDNN (ours, bf16 activations) / SDPA: $(awk -v a="$cud" -v b="$sdpa" 'BEGIN { printf "%.3f", a / b }') ($cud vs $sdpa TFLOP/s) -- \`bin/bench_cuda_libs\`, \`python3 perf/bench_sdpa.py\`" >>"$SCRATCH/lines.md"
fi
tres=$(sed -n 's/^torch_block_resident_s //p' "$SCRATCH/results.txt")
ours=$(sed -n 's/^resident (none, chunk 1): \([0-9.]*\) s\/block.*/\1/p' "$OUT/c-sweep.log" 2>/dev/null | head -n 1)
if [ -n "$tres" ] && [ -n "$ours" ]; then
	echo "- resident 14B block at 480P, ditstar / PyTorch bf16: $(awk -v a="$ours" -v b="$tres" 'BEGIN { printf "%.3f", a / b }') ($ours vs $tres s/block; per 40-block, 2-pass step: $(awk -v a="$ours" 'BEGIN { printf "%.2f", a * 80 }') vs $(awk -v b="$tres" 'BEGIN { printf "%.2f", b * 80 }') s) -- \`perf/sweep-cuda\`, \`python3 perf/peer_wan_block.py\`" >>"$SCRATCH/lines.md"
fi

{
	echo "# ditstar GPU check"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(sed -n 's/^gpu //p' "$SCRATCH/results.txt" || true); bundle: $(sed -n 's/^source: *//p' "$B/MANIFEST" 2>/dev/null)"
	echo "command: \`sh perf/gpu-check.sh OUT_DIR BUNDLE\`, $(($(date +%s) - t0)) s in all (budget $budget s)"
	echo
	echo "| stage | status | s | last line of its log |"
	echo "| --- | --- | ---: | --- |"
	cat "$SCRATCH/status.md"
	echo
	echo "## Lines for perf/results/gpu-check.md"
	echo
	cat "$SCRATCH/lines.md"
	if grep -q '^mode ' "$OUT/c-sweep.log" 2>/dev/null; then
		echo
		echo "The sweep (c-sweep.log; ratio = s/block over the first resident run, none* = resident again):"
		echo
		echo '```'
		awk '/^mode / { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' "$OUT/c-sweep.log"
		echo '```'
	fi
} >"$OUT/summary.md"
(cd "$SCRATCH/details" && tar czf "$OUT/details.tar.gz" .)
cat "$OUT/summary.md"
[ $failed -eq 0 ] || exit 1
[ "$HAVE_GPU" = 1 ] || exit 77
exit 0
