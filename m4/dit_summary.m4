# DIT_SUMMARY
# What configure found, printed last.
AC_DEFUN([DIT_SUMMARY], [
  cat <<DIT_EOF

ditstar $PACKAGE_VERSION configuration
  prefix:              $prefix
  compiler:            $CC $DIT_WARN_CFLAGS $CFLAGS
  StarPU:              $dit_starpu_version ($dit_starpu_libdir)
    FxT tracing:       $dit_starpu_fxt
    OpenCL driver:     $dit_starpu_opencl
    CUDA driver:       $dit_starpu_cuda
  CBLAS:               $dit_cblas
  CPU kernel ISAs:     $dit_cpu_isa_summary (run-time choice, DITSTAR_CPU_ISA)
  hwloc, libarchive, json-c, xxhash: yes
  CUDA codelets:       $dit_cuda_summary
  cuDNN attention:     $dit_cudnn_summary
  Python+NumPy tests:  ${PYTHON_NUMPY:-no}
  gnuplot (perf):      ${GNUPLOT:-no}
  sanitizers:          $dit_sanitizers
DIT_EOF
])
