# Sourced before every test (AM_TESTS_ENVIRONMENT). A private StarPU home (bus
# calibration, performance models), a watchdog that aborts a run in which no task
# finishes for 30 s, quiet StarPU, and a cache for preset checkpoints inside the build.
DIT_TEST_TMP="$top_builddir/tests/tmp"
mkdir -p "$DIT_TEST_TMP"
STARPU_HOME="$DIT_TEST_TMP/starpu-home"
mkdir -p "$STARPU_HOME"
STARPU_WATCHDOG_TIMEOUT=30000000
STARPU_WATCHDOG_CRASH=1
STARPU_SILENT=1
DITSTAR_CACHE="$DIT_TEST_TMP/cache"
DITSTAR="$top_builddir/ditstar"
export DIT_TEST_TMP STARPU_HOME STARPU_WATCHDOG_TIMEOUT STARPU_WATCHDOG_CRASH STARPU_SILENT
export DITSTAR_CACHE DITSTAR
