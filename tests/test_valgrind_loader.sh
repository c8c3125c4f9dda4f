# The loaders under valgrind's memcheck: the whole loader test (safetensors, index,
# config, archives, 500 corrupted files) with no invalid access, no use of
# uninitialised memory and no leak. Skipped where valgrind is missing.
. "$top_srcdir/tests/lib.sh"
if ! command -v valgrind >/dev/null 2>&1; then
	echo "1..0 # SKIP valgrind not installed"
	exit 0
fi
skip_if_sanitized tests/test_loader "ASan and valgrind exclude each other"
bin=$(real_bin tests/test_loader)
plan 1
if DIT_TEST_FUZZ_ITERS=500 valgrind -q --error-exitcode=9 --leak-check=full \
	--errors-for-leak-kinds=definite,indirect "$bin" >"$DIT_TEST_TMP/valgrind.out" 2>&1; then
	ok "test_loader is valgrind-clean ($(grep -c '^ok' "$DIT_TEST_TMP/valgrind.out") checks)"
else
	fail "test_loader is valgrind-clean"
	grep -v '^ok' "$DIT_TEST_TMP/valgrind.out" | head -n 40 | sed 's/^/# /'
fi
finish
