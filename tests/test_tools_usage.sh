# The Python tools' outputs follow ditstar's output rules, checked before any package
# is loaded (so without torch): a device or a FIFO as an output, an output that is an
# input (the same file under any name: ditstar-encode's --checkpoint, ditstar-decode's
# --input, ditstar-condition's --image) are refused, exit 2, one line naming the option,
# and nothing of them touched; ditstar-condition's sizes and images are checked as well.
# (tests/tools/test_tools.py runs the tools themselves: make check-tools.)
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch tools_usage)
plan 10

ENC="$PYTHON_NUMPY $top_srcdir/tools/ditstar-encode"
DEC="$PYTHON_NUMPY $top_srcdir/tools/ditstar-decode"
CON="$PYTHON_NUMPY $top_srcdir/tools/ditstar-condition"
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
# shellcheck disable=SC2086
expect_fail "condition --output naming its --image: refused" 2 \
	"--output $T/ck.safetensors: is the input --image" \
	$CON --family wan2.1-i2v --vae "$T" --image "$T/ck.safetensors" --frames 17 --height 64 \
	--width 96 --output "$T/ck.safetensors"
# shellcheck disable=SC2086
expect_fail "condition --frames off the VAE's stride: refused" 2 "--frames 16: must be 4k\+1" \
	$CON --family wan2.1-i2v --vae "$T" --image "$T/lat.safetensors" --frames 16 --height 64 \
	--width 96 --output "$T/y.safetensors"
# shellcheck disable=SC2086
expect_fail "condition: FLF2V without --last-image, refused" 2 "--last-image is wan2.1-flf2v's" \
	$CON --family wan2.1-flf2v --vae "$T" --image "$T/lat.safetensors" --frames 17 --height 64 \
	--width 96 --output "$T/y.safetensors"
# shellcheck disable=SC2086
expect_fail "encode --image for a family without CLIP features: refused" 2 \
	"--image: the CLIP image features are Wan2.1 image-to-video's" \
	$ENC --family ltx-2 --encoder "$T" --prompt x --checkpoint "$T/ck.safetensors" \
	--image "$T/lat.safetensors" --output "$T/x.safetensors"
check "the inputs untouched" sh -c \
	"[ \"\$(cat '$T/ck.safetensors')\" = checkpoint ] && [ \"\$(cat '$T/lat.safetensors')\" = latents ]"
finish
