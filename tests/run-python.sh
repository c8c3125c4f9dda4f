# Runs a Python test with the interpreter configure found with NumPy; without one the
# test is skipped (TAP "1..0 # SKIP").
if [ -z "$PYTHON_NUMPY" ]; then
	echo "1..0 # SKIP no Python with NumPy"
	exit 0
fi
exec "$PYTHON_NUMPY" "$@"
