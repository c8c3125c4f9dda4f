# DIT_ENABLE_SANITIZERS
# --enable-sanitizers: build the library, the command, the tests and the benchmarks
# with AddressSanitizer and UndefinedBehaviorSanitizer. Any undefined behaviour aborts
# the program (-fno-sanitize-recover), so a test that triggers one fails. The flags go
# into CFLAGS and LDFLAGS after every other check, so the configure tests themselves
# run uninstrumented; StarPU and the other libraries are not instrumented.
AC_DEFUN([DIT_ENABLE_SANITIZERS], [
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers],
      [build with -fsanitize=address,undefined (for make check)])],
    [], [enable_sanitizers=no])
  DIT_SANITIZE_FLAGS=
  dit_sanitizers=no
  AS_IF([test "x$enable_sanitizers" = xyes], [
    dit_san_flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
    AC_MSG_CHECKING([whether $CC builds with $dit_san_flags])
    dit_save_CFLAGS=$CFLAGS
    dit_save_LDFLAGS=$LDFLAGS
    CFLAGS="$CFLAGS $dit_san_flags"
    LDFLAGS="$LDFLAGS $dit_san_flags"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <stdlib.h>]],
                                    [[char *p = malloc(4); p[0] = 1; free(p);]])],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no])
       AC_MSG_FAILURE([--enable-sanitizers needs a compiler and a libasan/libubsan that accept $dit_san_flags])])
    CFLAGS=$dit_save_CFLAGS
    LDFLAGS=$dit_save_LDFLAGS
    DIT_SANITIZE_FLAGS=$dit_san_flags
    CFLAGS="$CFLAGS $DIT_SANITIZE_FLAGS"
    LDFLAGS="$LDFLAGS $DIT_SANITIZE_FLAGS"
    dit_sanitizers="address, undefined ($DIT_SANITIZE_FLAGS)"
  ], [test "x$enable_sanitizers" != xno], [
    AC_MSG_ERROR([--enable-sanitizers takes no value (got $enable_sanitizers)])
  ])
  AC_SUBST([DIT_SANITIZE_FLAGS])
])
