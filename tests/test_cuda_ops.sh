# Every op's CUDA codelet as a StarPU task against the CPU kernels
# (tests/test_cuda_ops.c). Without a GPU the program prints a SKIP plan itself; a
# build without CUDA skips here.
prog="$top_builddir/tests/test_cuda_ops"
if [ ! -x "$prog" ]; then
	echo "1..0 # SKIP ditstar was built without CUDA"
	exit 0
fi
exec "$prog"
