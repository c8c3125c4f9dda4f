# DIT_CHECK_PYTHON_NUMPY
# A Python 3 interpreter with NumPy for the reference tests. The system interpreter
# is tried first: a python3 earlier on PATH may lack Debian's python3-numpy.
AC_DEFUN([DIT_CHECK_PYTHON_NUMPY], [
  AC_ARG_VAR([PYTHON_NUMPY], [Python 3 interpreter with NumPy, for the reference tests])
  AC_MSG_CHECKING([for a Python 3 with NumPy])
  AS_IF([test -z "$PYTHON_NUMPY"], [
    for dit_py in /usr/bin/python3 python3 python; do
      AS_IF([$dit_py -c 'import numpy' >/dev/null 2>&1], [PYTHON_NUMPY=$dit_py; break])
    done
  ])
  AS_IF([test -n "$PYTHON_NUMPY"], [AC_MSG_RESULT([$PYTHON_NUMPY])],
        [AC_MSG_RESULT([no (reference tests will be skipped)])])
])
