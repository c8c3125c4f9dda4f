# Every op's CUDA codelet as a StarPU task against the CPU kernels
# (tests/test_cuda_ops.c). Without a GPU the program prints a SKIP plan itself; a
# build without CUDA skips here.
. "$top_srcdir/tests/lib.sh"
run_built tests/test_cuda_ops "ditstar was built without CUDA"
