# TAP helpers for the shell tests. Source it, call plan N, then ok/fail/check.
dit_n=0
dit_failed=0

plan() { echo "1..$1"; }

ok() {
	dit_n=$((dit_n + 1))
	echo "ok $dit_n - $*"
}

fail() {
	dit_n=$((dit_n + 1))
	dit_failed=$((dit_failed + 1))
	echo "not ok $dit_n - $*"
}

# check "description" command...: ok when the command succeeds.
check() {
	desc=$1
	shift
	if out=$("$@" 2>&1); then
		ok "$desc"
	else
		fail "$desc"
		printf '%s\n' "$out" | sed 's/^/# /'
	fi
}

# expect_fail "description" expected_rc pattern command...: the command must exit with
# expected_rc and print exactly one line on stderr matching pattern (grep -E).
expect_fail() {
	desc=$1
	want_rc=$2
	pattern=$3
	shift 3
	errf="$DIT_TEST_TMP/stderr.$$"
	"$@" >/dev/null 2>"$errf"
	rc=$?
	lines=$(wc -l <"$errf")
	if [ "$rc" -eq "$want_rc" ] && [ "$lines" -eq 1 ] && grep -Eq -- "$pattern" "$errf"; then
		ok "$desc"
	else
		fail "$desc (rc $rc, want $want_rc; $lines stderr lines)"
		sed 's/^/# /' "$errf"
	fi
	rm -f "$errf"
}

ref() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/wan_ref.py" "$@"; }

finish() {
	[ "$dit_failed" -eq 0 ]
	exit $?
}

need_python() {
	if [ -z "$PYTHON_NUMPY" ]; then
		echo "1..0 # SKIP no Python with NumPy"
		exit 0
	fi
}

# A fresh scratch directory for one test script.
scratch() {
	d="$DIT_TEST_TMP/$1"
	rm -rf "$d"
	mkdir -p "$d"
	echo "$d"
}
