# The CUDA codelets' library paths, cuDNN's attention and cuBLASLt's GEMMs
# (tests/test_cuda_libs.c): the refusal rules, the counts and reasons as the stats write
# them, and cuDNN's attention graph for every family's shapes here; the libraries
# against the CPU kernels on a GPU. Then the stats' cuda_libraries object the program
# wrote, set into a CPU run's statistics, checked against docs/stats.schema.json. A
# build without CUDA skips.
. "$top_srcdir/tests/lib.sh"
if [ ! -x "$top_builddir/tests/test_cuda_libs" ]; then
	echo "1..0 # SKIP ditstar was built without CUDA"
	exit 0
fi
T=$(scratch cuda_libs)
rc=0
# in a sanitized build: NVIDIA's libraries' own process-wide allocations are not leaks
LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$top_srcdir/tests/lsan-cuda.supp \
	DIT_TEST_CUDA_LIBS_JSON=$T/libs.json "$top_builddir/tests/test_cuda_libs" >"$T/tap" || rc=$?
n=$(sed -n 's/^1\.\.\([0-9]*\).*/\1/p' "$T/tap")
grep -v '^1\.\.' "$T/tap"
[ $rc -eq 0 ] || [ $rc -eq 77 ] || echo "not ok $((n + 1)) - test_cuda_libs exited $rc"
n=$((n + 1))
need_python
if "$DITSTAR" generate --quiet --steps 1 --cache-dir "$T/cache" --output "$T/a" \
	--stats-json "$T/s.json" 2>"$T/err" &&
	"$PYTHON_NUMPY" -c "
import json, sys
s = json.load(open('$T/s.json'))
s['cuda_libraries'] = json.load(open('$T/libs.json'))
json.dump(s, open('$T/with.json', 'w'))" &&
	"$PYTHON_NUMPY" "$top_srcdir/tests/ref/schema_check.py" "$top_srcdir/docs/stats.schema.json" \
		"$T/s.json" "$T/with.json" >"$T/schema" 2>&1; then
	echo "ok $n - the stats with cuda_libraries (and with null) are instances of the schema"
else
	sed 's/^/# /' "$T/err" "$T/schema" 2>/dev/null
	echo "not ok $n - the stats with cuda_libraries (and with null) are instances of the schema"
fi
echo "1..$n"
