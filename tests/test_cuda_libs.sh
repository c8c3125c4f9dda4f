# The CUDA codelets' library paths, cuDNN's attention and cuBLASLt's GEMMs
# (tests/test_cuda_libs.c): the refusal rules and cuDNN's attention graph for every
# family's shapes here, the libraries against the CPU kernels on a GPU. A build without
# CUDA skips.
. "$top_srcdir/tests/lib.sh"
run_built tests/test_cuda_libs "ditstar was built without CUDA"
