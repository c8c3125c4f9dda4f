# DIT_CHECK_STARPU
# StarPU 1.4 through pkg-config (starpu-1.4); reads which drivers and tracing the
# installed build has from its starpu_config.h.
# --with-starpu=PREFIX names a StarPU install; without it, the prefix ./setup.sh
# builds into ($DITSTAR_STARPU_PREFIX or ~/.local/ditstar/starpu-1.4) is tried after
# PKG_CONFIG_PATH.
AC_DEFUN([DIT_CHECK_STARPU], [
  AC_ARG_WITH([starpu],
    [AS_HELP_STRING([--with-starpu=PREFIX], [StarPU 1.4 installation prefix])],
    [], [with_starpu=])
  dit_setup_prefix=${DITSTAR_STARPU_PREFIX:-$HOME/.local/ditstar/starpu-1.4}
  AS_IF([test -n "$with_starpu"],
    [PKG_CONFIG_PATH="$with_starpu/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"],
    [PKG_CONFIG_PATH="${PKG_CONFIG_PATH:+$PKG_CONFIG_PATH:}$dit_setup_prefix/lib/pkgconfig"])
  export PKG_CONFIG_PATH
  PKG_CHECK_MODULES([STARPU], [starpu-1.4 >= 1.4.0], [],
    [AC_MSG_ERROR([StarPU 1.4 not found through pkg-config (starpu-1.4).
Run ./setup.sh, or point PKG_CONFIG_PATH at the prefix/lib/pkgconfig of a StarPU 1.4 build.])])
  dnl A CUDA-enabled StarPU adds the CUDA include directory, whose headers (cuSPARSE)
  dnl carry deprecation warnings: include it as a system directory.
  STARPU_CFLAGS=`echo " $STARPU_CFLAGS" | sed 's/ -I *\([[^ ]]*cuda[[^ ]]*\)/ -isystem \1/g'`
  dit_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $STARPU_CFLAGS"
  AC_MSG_CHECKING([for FxT tracing in StarPU])
  AC_PREPROC_IFELSE([AC_LANG_PROGRAM([[#include <starpu_config.h>
#ifndef STARPU_USE_FXT
#error no fxt
#endif]])], [dit_starpu_fxt=yes], [dit_starpu_fxt=no])
  AC_MSG_RESULT([$dit_starpu_fxt])
  AC_MSG_CHECKING([for the OpenCL driver in StarPU])
  AC_PREPROC_IFELSE([AC_LANG_PROGRAM([[#include <starpu_config.h>
#ifndef STARPU_USE_OPENCL
#error no opencl
#endif]])], [dit_starpu_opencl=yes], [dit_starpu_opencl=no])
  AC_MSG_RESULT([$dit_starpu_opencl])
  AC_MSG_CHECKING([for the CUDA driver in StarPU])
  AC_PREPROC_IFELSE([AC_LANG_PROGRAM([[#include <starpu_config.h>
#ifndef STARPU_USE_CUDA
#error no cuda
#endif]])], [dit_starpu_cuda=yes], [dit_starpu_cuda=no])
  AC_MSG_RESULT([$dit_starpu_cuda])
  CPPFLAGS=$dit_save_CPPFLAGS
  dit_starpu_version=`$PKG_CONFIG --modversion starpu-1.4`
  dit_starpu_libdir=`$PKG_CONFIG --variable=libdir starpu-1.4`
  dit_starpu_bindir=`$PKG_CONFIG --variable=prefix starpu-1.4`/bin
  AC_SUBST([STARPU_LIBDIR], [$dit_starpu_libdir])
  AC_SUBST([STARPU_BINDIR], [$dit_starpu_bindir])
  AC_DEFINE_UNQUOTED([DIT_STARPU_BINDIR], ["$dit_starpu_bindir"],
    [StarPU's programs (starpu_fxt_tool, ...) of the StarPU ditstar was built against])
  dnl Run the programs against the StarPU they were built with, wherever it lives.
  AS_CASE([$dit_starpu_libdir],
    [/usr/lib|/usr/lib64|/usr/lib/*-linux-gnu], [],
    [STARPU_LIBS="$STARPU_LIBS -Wl,-rpath,$dit_starpu_libdir"])
])
