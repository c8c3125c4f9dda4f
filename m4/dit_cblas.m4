# DIT_CHECK_CBLAS
# A CBLAS with cblas_sgemm: OpenBLAS through pkg-config first, then any library that
# links cblas_sgemm. Records whether openblas_set_num_threads is available.
AC_DEFUN([DIT_CHECK_CBLAS], [
  PKG_CHECK_MODULES([CBLAS], [openblas], [dit_cblas=openblas], [dit_cblas=])
  dit_save_LIBS=$LIBS
  dit_save_CPPFLAGS=$CPPFLAGS
  AS_IF([test -z "$dit_cblas"], [
    AC_SEARCH_LIBS([cblas_sgemm], [openblas cblas blas],
      [dit_cblas=${ac_cv_search_cblas_sgemm#-l}; CBLAS_LIBS=$ac_cv_search_cblas_sgemm],
      [AC_MSG_ERROR([no CBLAS found: install libopenblas-dev])])
  ])
  LIBS="$CBLAS_LIBS $LIBS"
  CPPFLAGS="$CPPFLAGS $CBLAS_CFLAGS"
  AC_CHECK_HEADER([cblas.h], [], [AC_MSG_ERROR([cblas.h not found: install libopenblas-dev])])
  AC_CHECK_FUNCS([openblas_set_num_threads openblas_get_corename])
  LIBS=$dit_save_LIBS
  CPPFLAGS=$dit_save_CPPFLAGS
])
