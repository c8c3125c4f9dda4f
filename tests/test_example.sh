# The example program on the library (examples/forward_mem.c): a forward with its
# inputs and output in memory gives exactly what `ditstar forward` gives from files,
# and the headers' version is the library's.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch example)
plan 4

EX="$top_builddir/examples/forward_mem"
ref make-tiny --output-dir "$T/tiny" --seed 3 >/dev/null
"$EX" "$T/tiny" "$T/in" "$T/y_mem" >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -eq 0 ] && grep -Eq '^ditstar [0-9]+\.[0-9]+\.[0-9]+: y \[4, 1, 4, 4\], sum -?[0-9.]+$' "$T/out"; then
	ok "the example runs a forward from memory and reads y back"
else
	fail "the example runs a forward from memory (rc $rc)"
	sed 's/^/# /' "$T/out" "$T/err"
fi
"$DITSTAR" forward --model-dir "$T/tiny" --inputs "$T/in" --output "$T/y_file" --ncpus 1 \
	2>"$T/err" || sed 's/^/# /' "$T/err"
check "y from memory is byte-identical to y from files" cmp "$T/y_mem" "$T/y_file"
if grep -q "^ditstar $("$DITSTAR" --version | cut -d' ' -f2):" "$T/out"; then
	ok "ditstar_version() is the command's version"
else
	fail "ditstar_version() is the command's version"
fi
expect_fail "the example's usage error" 2 "^usage: forward_mem" "$EX"
finish
