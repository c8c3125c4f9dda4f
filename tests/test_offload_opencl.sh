# Offload onto an OpenCL device (PoCL in CI), a StarPU memory node of its own: latents
# byte-identical across --offload none, cpu and disk, chunk sizes 1, 2 and all and
# several prefetch depths; close to the CPU result; chunks really stream to the device
# and from disk, with StarPU's use of each node within the planned bound; and the
# configuration where both host RAM and device memory are limited (which livelocks
# StarPU's own prefetching) runs 20 times without a hang under the watchdog.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch offload_opencl)
skip_without_workers opencl "$T"
plan 15

ref make-tiny --output-dir "$T/m" --seed 6 --layers 4 >/dev/null
G="$DITSTAR generate --model-dir $T/m --frames 5 --height 32 --width 48 --steps 3 --quiet"
O="$G --workers opencl"

offload_identity opencl "$T" $O
$G --output "$T/cpu_workers" 2>/dev/null
within "OpenCL and CPU workers agree" "$T/cpu_workers" "$T/ref" latents 1e-4

# The small preset at 4 tokens: 8 blocks of 14 MiB, almost no activations, so the
# chunks dominate and must stream.
S="$DITSTAR generate --model small --frames 1 --height 32 --width 32 --steps 2 --quiet --workers opencl"
device_limits opencl 20 "$T" $S
finish
