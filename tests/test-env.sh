# Sourced before every test (AM_TESTS_ENVIRONMENT, where automake has set $log to the
# test's log file). A StarPU home of the test's own, made empty at its start (bus
# calibration, performance models, ditstar's step profiles and disk rates: what one
# test calibrates or writes there no other test running beside it can see or change),
# a watchdog that aborts a run in which no task finishes for 120 s (a hang fails in
# minutes; a task slowed by a loaded machine and the sanitizers does not), quiet StarPU,
# StarPU's history models keeping measures up to 10x off their mean (by default it drops
# those over 1.5x, and flushes an entry that drops as many as it keeps: on a loaded
# machine `ditstar calibrate` then never ends with estimates for every task, which the
# calibration, prediction and simulation tests need), the folder of ditstar's helper
# programs, and a cache for preset checkpoints inside the build (shared: its entries are
# written once, atomically, and only read after).
DIT_TEST_TMP="$top_builddir/tests/tmp"
mkdir -p "$DIT_TEST_TMP"
dit_test_name=$(printf '%s' "${log:-tests/unnamed.log}" | sed 's/\.log$//; s/[^A-Za-z0-9_.-]/_/g')
STARPU_HOME="$DIT_TEST_TMP/home/$dit_test_name"
rm -rf "$STARPU_HOME"
mkdir -p "$STARPU_HOME"
STARPU_WATCHDOG_TIMEOUT=120000000
STARPU_WATCHDOG_CRASH=1
STARPU_SILENT=1
STARPU_HISTORY_MAX_ERROR=1000
DITSTAR_CACHE="$DIT_TEST_TMP/cache"
DITSTAR="$top_builddir/ditstar"
DITSTAR_LIBEXECDIR="$top_builddir"
export DIT_TEST_TMP STARPU_HOME STARPU_WATCHDOG_TIMEOUT STARPU_WATCHDOG_CRASH STARPU_SILENT
export STARPU_HISTORY_MAX_ERROR
export DITSTAR_CACHE DITSTAR DITSTAR_LIBEXECDIR
