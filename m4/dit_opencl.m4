# DIT_CHECK_OPENCL
# The OpenCL codelets (codelets/opencl) are built when StarPU has its OpenCL driver
# (dit_starpu_opencl, from DIT_CHECK_STARPU, which must come first). They call the
# OpenCL API themselves, so the OpenCL library is linked too: OPENCL_LIBS.
# Defines the Automake conditional DIT_OPENCL.
AC_DEFUN([DIT_CHECK_OPENCL], [
  OPENCL_LIBS=
  AS_IF([test "x$dit_starpu_opencl" = xyes],
    [AC_CHECK_LIB([OpenCL], [clEnqueueNDRangeKernel], [OPENCL_LIBS=-lOpenCL],
      [AC_MSG_ERROR([StarPU has its OpenCL driver but libOpenCL was not found
(Debian: ocl-icd-opencl-dev)])])])
  AC_SUBST([OPENCL_LIBS])
  AM_CONDITIONAL([DIT_OPENCL], [test "x$dit_starpu_opencl" = xyes])
])
