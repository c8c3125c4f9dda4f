# DIT_CHECK_CUDA
# --with-cuda[=DIR]: CUDA is used when nvcc, cuBLAS and a CUDA-enabled StarPU are all
# there (default: when available); --with-cuda fails clearly when one is missing.
AC_DEFUN([DIT_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@], [use CUDA from DIR (default: auto, /usr/local/cuda)])],
    [], [with_cuda=auto])
  dit_cuda=no
  dit_cuda_why=
  AS_IF([test "x$with_cuda" != xno], [
    dit_cuda_dir=/usr/local/cuda
    AS_IF([test "x$with_cuda" != xyes && test "x$with_cuda" != xauto], [dit_cuda_dir=$with_cuda])
    AC_PATH_PROG([NVCC], [nvcc], [], [$dit_cuda_dir/bin$PATH_SEPARATOR$PATH])
    AS_IF([test -z "$NVCC"], [dit_cuda_why="nvcc not found"],
          [test ! -f "$dit_cuda_dir/include/cublas_v2.h"], [dit_cuda_why="cuBLAS headers not found in $dit_cuda_dir"],
          [test "x$dit_starpu_cuda" != xyes], [dit_cuda_why="StarPU built without CUDA"],
          [dit_cuda=yes])
    AS_IF([test "x$with_cuda" != xauto && test "x$dit_cuda" != xyes],
      [AC_MSG_ERROR([--with-cuda given but CUDA cannot be used: $dit_cuda_why])])
  ], [dit_cuda_why="disabled"])
  AS_IF([test "x$dit_cuda" = xyes], [AC_DEFINE([DIT_HAVE_CUDA], [1], [Define to 1 to build the CUDA codelets])])
  AM_CONDITIONAL([DIT_CUDA], [test "x$dit_cuda" = xyes])
])
