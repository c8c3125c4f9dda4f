# Runs tests/test_env_run (the environment around library runs) in a scratch directory.
. "$top_srcdir/tests/lib.sh"
T=$(scratch env_run)
exec "$top_builddir/tests/test_env_run" "$T"
