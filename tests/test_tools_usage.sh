# The Python tools' outputs follow ditstar's output rules, checked before any package
# is loaded (so without torch): a device or a FIFO as an output, an output that is an
# input (the same file under any name: ditstar-encode's --checkpoint, ditstar-decode's
# --input) are refused, exit 2, one line naming the option, and nothing of them touched.
# (tests/tools/test_tools.py runs the tools themselves: make check-tools.)
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch tools_usage)
plan 6

ENC="$PYTHON_NUMPY $top_srcdir/tools/ditstar-encode"
DEC="$PYTHON_NUMPY $top_srcdir/tools/ditstar-decode"
printf 'checkpoint' >"$T/ck.safetensors"
printf 'latents' >"$T/lat.safetensors"
ln -s "$T/ck.safetensors" "$T/cklink"
mkfifo "$T/fifo"

# shellcheck disable=SC2086
expect_fail "encode --output /dev/null: refused" 2 "--output /dev/null: not a regular file" \
	$ENC --family wan --encoder "$T" --prompt x --output /dev/null
# shellcheck disable=SC2086
expect_fail "encode --output naming its --checkpoint: refused" 2 \
	"--output $T/ck.safetensors: is the input --checkpoint" \
	$ENC --family ltx-2 --encoder "$T" --prompt x --checkpoint "$T/ck.safetensors" \
	--output "$T/ck.safetensors"
# shellcheck disable=SC2086
expect_fail "encode --output a link to its --checkpoint: refused" 2 \
	"--output $T/cklink: is the input --checkpoint" \
	$ENC --family ltx-2 --encoder "$T" --prompt x --checkpoint "$T/ck.safetensors" \
	--output "$T/cklink"
# shellcheck disable=SC2086
expect_fail "decode --output /dev/null: refused" 2 "--output /dev/null: not a regular file" \
	$DEC --input "$T/lat.safetensors" --vae "$T" --output /dev/null
# shellcheck disable=SC2086
expect_fail "decode --sheet a FIFO: refused, not opened" 2 "--sheet $T/fifo: not a regular file" \
	timeout 60 $DEC --input "$T/lat.safetensors" --vae "$T" --sheet "$T/fifo"
check "the inputs untouched" sh -c \
	"[ \"\$(cat '$T/ck.safetensors')\" = checkpoint ] && [ \"\$(cat '$T/lat.safetensors')\" = latents ]"
finish
