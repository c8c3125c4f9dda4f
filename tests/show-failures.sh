#!/bin/sh
# tests/show-failures.sh BUILDDIR: what the failed tests said. For each test log under
# BUILDDIR/tests with a "not ok" line: those lines with the "# " diagnostics that follow
# each (at most 15 a failure, shown as "  | ..." so that no reader of the output takes
# them for comments), and the sanitizer reports (at most 40 lines a log). Used by
# ./setup.sh check and .ci/run, whose summaries alone name a failure, not its cause.
dir=${1:?usage: tests/show-failures.sh BUILDDIR}
for log in "$dir"/tests/*.log; do
	[ -f "$log" ] || continue
	grep -q '^not ok ' "$log" || grep -Eq '^(ERROR|FAIL): ' "${log%.log}.trs" 2>/dev/null ||
		continue
	echo "---- ${log#"$dir"/}"
	awk '/^(not ok |Bail out!)/ { n = 15; print; next }
	     n > 0 && /^# / { print "  | " substr($0, 3); n--; next }
	     { n = 0 }' "$log" | head -n 120
	grep -E -A 25 '(AddressSanitizer|LeakSanitizer|runtime error:)' "$log" | head -n 40
done
