#!/bin/sh
# Compares the C sampler plans with the NumPy reference scheduler; prints TAP and exits 0
# only if every comparison passes (77, the skip status, when no python3 with NumPy).
#
# The plan dumper is $TEST_SAMPLER, else tests/test_sampler (or ./test_sampler) from the
# current directory, else it is compiled from the sources with ${CC:-gcc}.
# The interpreter is $PYTHON_NUMPY, default /usr/bin/python3.

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
py=${PYTHON_NUMPY:-/usr/bin/python3}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dit_sampler_ref.XXXXXX") || {
	echo "1..1"
	echo "not ok 1 - cannot create a temporary directory"
	exit 1
}
trap 'rm -rf "$tmp"' EXIT HUP INT TERM

bin=${TEST_SAMPLER:-}
if [ -z "$bin" ]; then
	for c in ./tests/test_sampler ./test_sampler; do
		if [ -f "$c" ] && [ -x "$c" ]; then
			bin=$c
			break
		fi
	done
fi
if [ -z "$bin" ]; then
	if ! ${CC:-gcc} -std=c11 -O2 -I"$top/common" -I"$top/src" "$top/common/dit_error.c" \
		"$top/src/sampling/dit_sampler.c" "$here/test_sampler.c" -lm \
		-o "$tmp/test_sampler" >"$tmp/build.log" 2>&1; then
		echo "1..1"
		echo "not ok 1 - build the plan dumper"
		sed 's/^/# /' "$tmp/build.log"
		exit 1
	fi
	bin=$tmp/test_sampler
fi

if ! "$py" -c "import numpy" >/dev/null 2>&1; then
	echo "1..0 # SKIP $py with numpy not available"
	exit 77
fi

if ! "$bin" --dump "$tmp/plans.json"; then
	echo "1..1"
	echo "not ok 1 - $bin --dump failed"
	exit 1
fi

"$py" "$here/ref/sampler_plan_check.py" "$tmp/plans.json"
rc=$?
[ "$rc" -eq 0 ] || exit 1
exit 0
