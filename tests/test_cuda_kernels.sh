# Every CUDA kernel against its CPU twin (tests/test_cuda_kernels.c). The program
# exits 77 without a GPU, which TAP reports as a skip; a build without CUDA skips too.
. "$top_srcdir/tests/lib.sh"
run_built tests/test_cuda_kernels "ditstar was built without CUDA"
