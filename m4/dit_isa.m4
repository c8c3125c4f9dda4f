# DIT_CHECK_CPU_ISA
# The vector paths of the CPU kernels (codelets/cpu/vec_*.c), built once per ISA with
# that ISA's flags and chosen at run time (codelets/cpu/dit_cpu_isa.h). On x86 each
# path is built when the compiler accepts its flags and intrinsics; elsewhere, or with
# --disable-cpu-isa, only the scalar path is. Sets DIT_AVX2_CFLAGS and
# DIT_AVX512_CFLAGS, the conditionals DIT_ISA_AVX2 / DIT_ISA_AVX512 and the defines
# DIT_HAVE_ISA_AVX2 / DIT_HAVE_ISA_AVX512.
AC_DEFUN([DIT_CHECK_CPU_ISA], [
  AC_REQUIRE([AC_CANONICAL_HOST])
  AC_ARG_ENABLE([cpu-isa],
    [AS_HELP_STRING([--disable-cpu-isa],
      [build the scalar CPU kernels only (no AVX2 / AVX-512 paths)])],
    [], [enable_cpu_isa=yes])
  DIT_AVX2_CFLAGS="-mavx2 -mfma"
  DIT_AVX512_CFLAGS="-mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma"
  dit_isa_avx2=no
  dit_isa_avx512=no
  AS_CASE([$host_cpu], [x86_64|i?86], [dit_isa_x86=yes], [dit_isa_x86=no])
  AS_IF([test "x$enable_cpu_isa" != xno && test "x$dit_isa_x86" = xyes], [
    dit_isa_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS $DIT_AVX2_CFLAGS"
    AC_MSG_CHECKING([whether $CC builds AVX2 + FMA code with $DIT_AVX2_CFLAGS])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <immintrin.h>]], [[
      __m256 a = _mm256_set1_ps(1.0f);
      __m256i m = _mm256_slli_epi32(_mm256_castps_si256(a), 1);
      a = _mm256_fmadd_ps(a, a, _mm256_maskload_ps((const float *)0, m));
      return __builtin_cpu_supports("avx2") + (int)_mm256_cvtss_f32(a);]])],
      [dit_isa_avx2=yes])
    AC_MSG_RESULT([$dit_isa_avx2])
    CFLAGS="$dit_isa_save_CFLAGS $DIT_AVX512_CFLAGS"
    AC_MSG_CHECKING([whether $CC builds AVX-512 code with $DIT_AVX512_CFLAGS])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <immintrin.h>]], [[
      __m512 a = _mm512_maskz_loadu_ps((__mmask16)3, (const float *)0);
      __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16((__mmask16)1, (const void *)0));
      a = _mm512_fmadd_ps(a, a, _mm512_castsi512_ps(w));
      __mmask16 k = _mm512_movepi32_mask(w);
      __m256 h = _mm256_maskz_loadu_ps((__mmask8)k, (const float *)0);
      return __builtin_cpu_supports("avx512f") + (int)_mm256_cvtss_f32(h) +
             (int)_mm512_cvtss_f32(a);]])],
      [dit_isa_avx512=yes])
    AC_MSG_RESULT([$dit_isa_avx512])
    CFLAGS=$dit_isa_save_CFLAGS
  ])
  AS_IF([test "x$dit_isa_avx2" = xyes],
    [AC_DEFINE([DIT_HAVE_ISA_AVX2], [1], [Define to 1 to build the AVX2 CPU kernel path])])
  AS_IF([test "x$dit_isa_avx512" = xyes],
    [AC_DEFINE([DIT_HAVE_ISA_AVX512], [1], [Define to 1 to build the AVX-512 CPU kernel path])])
  AM_CONDITIONAL([DIT_ISA_AVX2], [test "x$dit_isa_avx2" = xyes])
  AM_CONDITIONAL([DIT_ISA_AVX512], [test "x$dit_isa_avx512" = xyes])
  AC_SUBST([DIT_AVX2_CFLAGS])
  AC_SUBST([DIT_AVX512_CFLAGS])
  dit_cpu_isa_summary="scalar"
  AS_IF([test "x$dit_isa_avx2" = xyes], [dit_cpu_isa_summary="$dit_cpu_isa_summary avx2"])
  AS_IF([test "x$dit_isa_avx512" = xyes], [dit_cpu_isa_summary="$dit_cpu_isa_summary avx512"])
  AC_SEARCH_LIBS([pthread_once], [pthread])
])
