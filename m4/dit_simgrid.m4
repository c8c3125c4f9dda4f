# DIT_CHECK_STARPU_SIMGRID
# --with-starpu-simgrid=PREFIX: a second StarPU 1.4 built with --enable-simgrid
# (./setup.sh simgrid builds one into ~/.local/ditstar/starpu-1.4-simgrid), against
# which ditstar-sim is built: the same program, whose tasks and transfers SimGrid
# simulates from the calibrated performance models instead of running them.
AC_DEFUN([DIT_CHECK_STARPU_SIMGRID], [
  AC_ARG_WITH([starpu-simgrid],
    [AS_HELP_STRING([--with-starpu-simgrid=PREFIX],
      [also build ditstar-sim against the SimGrid StarPU 1.4 in PREFIX (./setup.sh simgrid)])],
    [], [with_starpu_simgrid=no])
  dit_simgrid=no
  AS_IF([test "x$with_starpu_simgrid" != xno], [
    AS_IF([test "x$with_starpu_simgrid" = xyes],
      [with_starpu_simgrid=${DITSTAR_STARPU_PREFIX:-$HOME/.local/ditstar/starpu-1.4}-simgrid])
    dit_sim_pc="$with_starpu_simgrid/lib/pkgconfig"
    AC_MSG_CHECKING([for a SimGrid StarPU 1.4 in $with_starpu_simgrid])
    AS_IF([PKG_CONFIG_PATH="$dit_sim_pc" $PKG_CONFIG --exists 'starpu-1.4 >= 1.4.0'], [],
      [AC_MSG_RESULT([no])
       AC_MSG_ERROR([--with-starpu-simgrid: no starpu-1.4.pc in $dit_sim_pc (./setup.sh simgrid builds one)])])
    STARPU_SIM_CFLAGS=`PKG_CONFIG_PATH="$dit_sim_pc" $PKG_CONFIG --cflags starpu-1.4`
    STARPU_SIM_LIBS=`PKG_CONFIG_PATH="$dit_sim_pc" $PKG_CONFIG --libs starpu-1.4`
    dit_sim_libdir=`PKG_CONFIG_PATH="$dit_sim_pc" $PKG_CONFIG --variable=libdir starpu-1.4`
    dit_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $STARPU_SIM_CFLAGS"
    AC_PREPROC_IFELSE([AC_LANG_PROGRAM([[#include <starpu_config.h>
#ifndef STARPU_SIMGRID
#error not simgrid
#endif]])], [dit_simgrid=yes], [dit_simgrid=no])
    CPPFLAGS=$dit_save_CPPFLAGS
    AC_MSG_RESULT([$dit_simgrid])
    AS_IF([test "x$dit_simgrid" != xyes],
      [AC_MSG_ERROR([--with-starpu-simgrid: the StarPU in $with_starpu_simgrid was not built with --enable-simgrid])])
    PKG_CHECK_MODULES([SIMGRID], [simgrid], [],
      [AC_MSG_ERROR([--with-starpu-simgrid: SimGrid not found through pkg-config (Debian: libsimgrid-dev)])])
    STARPU_SIM_CFLAGS="$STARPU_SIM_CFLAGS $SIMGRID_CFLAGS"
    STARPU_SIM_LIBS="$STARPU_SIM_LIBS $SIMGRID_LIBS -Wl,-rpath,$dit_sim_libdir"
  ])
  AC_SUBST([STARPU_SIM_CFLAGS])
  AC_SUBST([STARPU_SIM_LIBS])
  AM_CONDITIONAL([DIT_SIMGRID], [test "x$dit_simgrid" = xyes])
  AH_BOTTOM([/* ditstar-sim is built with DIT_SIMGRID: its StarPU simulates the devices and
   has no CUDA driver, so the CUDA codelets are left out of it (the comment keeps
   config.status from turning the line into a define). */
#ifdef DIT_SIMGRID
/**/#undef DIT_HAVE_CUDA
#endif])
])
