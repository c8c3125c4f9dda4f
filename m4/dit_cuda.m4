# DIT_CHECK_CUDA
# --with-cuda[=DIR]: the CUDA codelets are built when nvcc, cuBLAS and a CUDA-enabled
# StarPU are all there (default: when available); --with-cuda fails clearly when one
# is missing. No GPU is needed to build. Sets NVCC, NVCCFLAGS (the GPU architectures:
# --with-cuda-arch, default "80 90"), CUDA_CFLAGS and CUDA_LIBS.
AC_DEFUN([DIT_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@], [use CUDA from DIR (default: auto, /usr/local/cuda)])],
    [], [with_cuda=auto])
  AC_ARG_WITH([cuda-arch],
    [AS_HELP_STRING([--with-cuda-arch=LIST], [compute capabilities to build for (default: "80 90")])],
    [], [with_cuda_arch="80 90"])
  dit_cuda=no
  dit_cuda_why=
  AS_IF([test "x$with_cuda" != xno], [
    dit_cuda_dir=/usr/local/cuda
    AS_IF([test "x$with_cuda" != xyes && test "x$with_cuda" != xauto], [dit_cuda_dir=$with_cuda])
    AS_IF([test "x$with_cuda" = xyes || test "x$with_cuda" = xauto],
      [dit_cuda_where="PATH or $dit_cuda_dir/bin"
       AC_PATH_PROG([NVCC], [nvcc], [], [$PATH$PATH_SEPARATOR$dit_cuda_dir/bin])],
      [dit_cuda_where="$dit_cuda_dir/bin"
       AC_PATH_PROG([NVCC], [nvcc], [], [$dit_cuda_dir/bin])])
    AS_IF([test -n "$NVCC"], [dit_cuda_dir=`AS_DIRNAME(["$NVCC"])`; dit_cuda_dir=`AS_DIRNAME(["$dit_cuda_dir"])`])
    AS_IF([test -d "$dit_cuda_dir/lib64"], [dit_cuda_libdir=$dit_cuda_dir/lib64], [dit_cuda_libdir=$dit_cuda_dir/lib])
    AS_IF([test -z "$NVCC"], [dit_cuda_why="nvcc not found in $dit_cuda_where"],
          [test ! -f "$dit_cuda_dir/include/cublas_v2.h"], [dit_cuda_why="cuBLAS headers not found in $dit_cuda_dir/include"],
          [test "x$dit_starpu_cuda" != xyes], [dit_cuda_why="StarPU ($dit_starpu_libdir) was built without CUDA; ./setup.sh builds one with CUDA when nvcc is found"],
          [dit_cuda=yes])
    AS_IF([test "x$dit_cuda" = xyes], [
      dit_save_LIBS=$LIBS
      LIBS="-L$dit_cuda_libdir -lcublas -lcudart $LIBS"
      AC_MSG_CHECKING([for cublasGemmEx in $dit_cuda_libdir])
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[char cublasGemmEx(void);]], [[return (int)cublasGemmEx();]])],
        [AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no]); dit_cuda=no; dit_cuda_why="cannot link -lcublas -lcudart from $dit_cuda_libdir"])
      LIBS=$dit_save_LIBS])
    AS_IF([test "x$with_cuda" != xauto && test "x$dit_cuda" != xyes],
      [AC_MSG_ERROR([--with-cuda given but the CUDA codelets cannot be built: $dit_cuda_why])])
  ], [dit_cuda_why="disabled"])
  AS_IF([test "x$dit_cuda" = xyes], [
    AC_DEFINE([DIT_HAVE_CUDA], [1], [Define to 1 to build the CUDA codelets])
    CUDA_CFLAGS="-isystem $dit_cuda_dir/include"
    CUDA_LIBS="-L$dit_cuda_libdir -Wl,-rpath,$dit_cuda_libdir -lcublas -lcudart -lstdc++"
    NVCCFLAGS="-std=c++17 -O3 -Xcompiler -fno-strict-aliasing"
    for a in $with_cuda_arch; do
      NVCCFLAGS="$NVCCFLAGS -gencode=arch=compute_$a,code=sm_$a"
    done
    dit_cuda_summary="yes ($dit_cuda_dir, sm: $with_cuda_arch)"
  ], [dit_cuda_summary="no${dit_cuda_why:+ ($dit_cuda_why)}"])
  AC_SUBST([CUDA_CFLAGS])
  AC_SUBST([CUDA_LIBS])
  AC_SUBST([NVCCFLAGS])
  AM_CONDITIONAL([DIT_CUDA], [test "x$dit_cuda" = xyes])
])
