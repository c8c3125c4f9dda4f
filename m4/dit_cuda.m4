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
    CUDA_LIBS="-L$dit_cuda_libdir -Wl,-rpath,$dit_cuda_libdir -lcublasLt -lcublas -lcudart -lstdc++"
    NVCCFLAGS="-std=c++17 -O3 -Xcompiler -fno-strict-aliasing"
    for a in $with_cuda_arch; do
      NVCCFLAGS="$NVCCFLAGS -gencode=arch=compute_$a,code=sm_$a"
    done
    dit_cuda_summary="yes ($dit_cuda_dir, sm: $with_cuda_arch)"
  ], [dit_cuda_summary="no${dit_cuda_why:+ ($dit_cuda_why)}"])
  DIT_CHECK_CUDNN
  AC_SUBST([CUDA_CFLAGS])
  AC_SUBST([CUDA_LIBS])
  AC_SUBST([NVCCFLAGS])
  AM_CONDITIONAL([DIT_CUDA], [test "x$dit_cuda" = xyes])
])

# DIT_CHECK_CUDNN (inside DIT_CHECK_CUDA)
# --with-cudnn[=DIR]: cuDNN 9's headers (DIR/include, default the CUDA directory's) for
# the fused attention of the CUDA codelets. The library itself is loaded at run time
# (dlopen of libcudnn.so.9, or $DIT_CUDNN_LIBRARY), so a build with the headers runs
# where cuDNN is absent, with the own attention kernel. Default: when the headers are
# found; --with-cudnn fails clearly when they are not, or are older than 9.
AC_DEFUN([DIT_CHECK_CUDNN], [
  AC_ARG_WITH([cudnn],
    [AS_HELP_STRING([--with-cudnn@<:@=DIR@:>@], [cuDNN 9 headers for the fused attention (default: auto, in the CUDA directory; the library is loaded at run time)])],
    [], [with_cudnn=auto])
  dit_cudnn=no
  dit_cudnn_why=
  AS_IF([test "x$with_cudnn" = xno], [dit_cudnn_why="disabled"],
        [test "x$dit_cuda" != xyes], [dit_cudnn_why="no CUDA codelets"],
    [dit_cudnn_dir=$dit_cuda_dir
     AS_IF([test "x$with_cudnn" != xyes && test "x$with_cudnn" != xauto], [dit_cudnn_dir=$with_cudnn])
     dit_save_CPPFLAGS=$CPPFLAGS
     CPPFLAGS="-I$dit_cudnn_dir/include $CPPFLAGS"
     AC_MSG_CHECKING([for cuDNN 9 headers in $dit_cudnn_dir/include])
     AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <cudnn_version.h>
#if CUDNN_MAJOR < 9
#error cuDNN older than 9
#endif
]], [[]])], [dit_cudnn=yes], [dit_cudnn_why="no cuDNN 9 headers (cudnn_version.h) in $dit_cudnn_dir/include"])
     AC_MSG_RESULT([$dit_cudnn])
     CPPFLAGS=$dit_save_CPPFLAGS
     AS_IF([test "x$with_cudnn" != xauto && test "x$dit_cudnn" != xyes],
       [AC_MSG_ERROR([--with-cudnn given but $dit_cudnn_why])])])
  AS_IF([test "x$dit_cudnn" = xyes], [
    AC_DEFINE([DIT_HAVE_CUDNN], [1], [Define to 1 to build the cuDNN attention path])
    AS_IF([test "x$dit_cudnn_dir" != "x$dit_cuda_dir"], [CUDA_CFLAGS="$CUDA_CFLAGS -isystem $dit_cudnn_dir/include"])
    dit_cudnn_ver=`sed -n 's/^#define CUDNN_\(MAJOR\|MINOR\|PATCHLEVEL\) *\(@<:@0-9@:>@*\).*/\2/p' "$dit_cudnn_dir/include/cudnn_version.h" | tr '\n' . | sed 's/\.$//'`
    dit_cudnn_summary="yes (headers $dit_cudnn_ver, library loaded at run time)"
  ], [dit_cudnn_summary="no${dit_cudnn_why:+ ($dit_cudnn_why)}"])
  AM_CONDITIONAL([DIT_CUDNN], [test "x$dit_cudnn" = xyes])
])
