# The CUDA backend through the whole program (skipped without a GPU): latents
# byte-identical across --offload none, cpu and disk, chunk sizes and prefetch depths
# on the GPU; close to the CPU result (bf16 GEMMs and attention: tolerance 5e-2 on
# latents of unit scale after 3 steps, where fp32 differences are 1e-5); --workers
# all (CPU cores and the GPU, the scheduler picks) close too; bf16 weights planned
# into the device limit and streamed; and both memories limited from disk without a
# hang.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch offload_cuda)
skip_without_workers cuda "$T"
plan 21

ref make-tiny --output-dir "$T/m" --seed 6 --layers 4 >/dev/null
G="$DITSTAR generate --model-dir $T/m --frames 5 --height 32 --width 48 --steps 3 --quiet"
C="$G --workers cuda"

offload_identity cuda "$T" $C
$C --output "$T/again" 2>/dev/null
identical "cuda: the same run twice is byte-identical" "$T/ref" "$T/again"
$G --output "$T/cpu_workers" 2>/dev/null
within "CUDA and CPU workers agree" "$T/cpu_workers" "$T/ref" latents 5e-2
$G --workers all --output "$T/all" 2>/dev/null
within "CPU + CUDA workers agree with CPU workers" "$T/cpu_workers" "$T/all" latents 5e-2

S="$DITSTAR generate --model small --frames 1 --height 32 --width 32 --steps 2 --quiet --workers cuda"
device_limits cuda 5 "$T" $S
keep_what_fits cuda "$T" $S
check "bf16 chunks on the GPU by default" "$PYTHON_NUMPY" -c \
	"import json, sys; w = json.load(open(sys.argv[1]))['weights']; assert w.get('block_matrices') == 'bf16', w" \
	"$T/planned.json"
finish
