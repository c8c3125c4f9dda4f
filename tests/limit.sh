# tests/limit.sh COMMAND [ARGS...]: runs one test (the LOG_COMPILER of every test)
# under a time limit, so that a hang fails that test in minutes instead of holding
# the whole suite until CI's own limit. The limit is DIT_TEST_LIMIT seconds (default
# 1200: the slowest test takes about 5 minutes in the sanitized build on 2 loaded
# cores); past it the test's process group gets SIGTERM, then SIGKILL 20 s later
# (a process that blocks SIGTERM still ends), and the test reports "Bail out!", which
# the TAP driver counts as an error. Either way the log ends with the seconds the
# test took, as a TAP comment: the suite's timings are read from the logs.
limit=${DIT_TEST_LIMIT:-1200}
t0=$(date +%s)
if command -v timeout >/dev/null 2>&1; then
	timeout -k 20 "$limit" "$@"
else
	"$@"
fi
rc=$?
took=$(($(date +%s) - t0))
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo "Bail out! ${*##* } ran past its time limit of $limit s (DIT_TEST_LIMIT) and was killed"
fi
echo "# tests/limit.sh: ${took} s"
exit "$rc"
