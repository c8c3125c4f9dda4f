# --preview FILE.png: after every step the x0 estimate through the family's fixed
# latent-to-RGB map. After the last step x0 is the latents, so the last picture is
# checked pixel for pixel against tests/ref/preview_ref.py's rendering of --output,
# with its own strict PNG reader (CRCs, IHDR, zlib); the latents are the same with and
# without a preview. LTX-2's preview is the video stream's guided x0 of the step (after
# the last step the latents, up to the last bit of the Euler update).
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch preview)
plan 14

PR="$PYTHON_NUMPY $top_srcdir/tests/ref/preview_ref.py"

# preview_case DESC PRESET TABLE[:TENSOR] [generate options] (TENSOR: the output's
# latents, by default 'latents')
preview_case() {
	desc=$1 preset=$2 table=${3%%:*} tensor=latents
	case $3 in *:*) tensor=${3#*:} ;; esac
	shift 3
	if "$DITSTAR" generate --quiet --model "$preset" --steps 2 "$@" --output "$T/$preset.st" \
		--preview "$T/$preset.png" 2>"$T/err" &&
		out=$($PR check "$T/$preset.png" "$T/$preset.st" "$table" \
			--latent "$tensor" 2>&1); then
		ok "$desc ($out)"
	else
		fail "$desc"
		sed 's/^/# /' "$T/err"
		printf '%s\n' "$out" | sed 's/^/# /'
	fi
}
preview_case "Wan2.1 (16 channels): the last preview is the latents' picture" tiny wan21
"$DITSTAR" generate --quiet --model tiny --steps 2 --output "$T/plain.st" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
check "the latents are the same with and without --preview" cmp "$T/plain.st" "$T/tiny.st"
preview_case "Wan2.2 TI2V-5B (48 channels, its own map)" tiny-ti2v-5b wan22
preview_case "HunyuanVideo (16 channels, its map)" small-hunyuan hunyuan --frames 5 --height 64 --width 64
preview_case "Cosmos-Predict2.5 (Wan2.1's VAE, its map)" tiny-cosmos wan21
# LTX-2 (128 channels: the small preset; 3 latent frames of 4 x 6, tiles magnified 8x)
preview_case "LTX-2 (128 channels, the LTXV map): the video's guided x0" small-ltx2 \
	ltxv:video_latents --frames 17 --height 128 --width 192 --stg-blocks 1
"$DITSTAR" generate --quiet --model small-ltx2 --steps 2 --frames 17 --height 128 --width 192 \
	--stg-blocks 1 --output "$T/ltx-plain.st" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "LTX-2: both streams' latents are the same with and without --preview" \
	cmp "$T/ltx-plain.st" "$T/small-ltx2.st"
# 17 frames give 5 latent frames: 5 tiles in a row; 16x24 latent tiles magnified 6x
if "$PYTHON_NUMPY" -c "
import sys; sys.path.insert(0, sys.argv[1])
import preview_ref as p
img = p.read_png(sys.argv[2])
assert img.shape == (16 * 6, 5 * 24 * 6, 3), img.shape
" "$top_srcdir/tests/ref" "$T/tiny.png" 2>"$T/err"; then
	ok "the layout: one tile a latent frame, magnified to 128 pixels or more"
else
	fail "the layout"
	sed 's/^/# /' "$T/err"
fi

# the reference can fail: a byte of the picture changed, then its CRC is wrong
cp "$T/tiny.png" "$T/bad.png"
"$PYTHON_NUMPY" -c "
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
b[100] ^= 1
open(sys.argv[1], 'wb').write(b)
" "$T/bad.png"
if $PR check "$T/bad.png" "$T/tiny.st" wan21 >/dev/null 2>&1; then
	fail "a damaged picture fails the check"
else
	ok "a damaged picture fails the check"
fi
cp "$T/tiny.png" "$T/other.png"
if $PR check "$T/other.png" "$T/tiny-cosmos.st" wan21 >/dev/null 2>&1; then
	fail "another run's latents fail the check"
else
	ok "another run's latents fail the check"
fi

expect_fail "--preview in a missing folder: refused before the run" 2 \
	"^ditstar: --preview $T/nodir/p.png: cannot write in $T/nodir" \
	"$DITSTAR" generate --quiet --steps 1 --preview "$T/nodir/p.png"
expect_fail "a plan has no preview" 2 "do not apply" \
	"$DITSTAR" plan --preview "$T/p.png"
expect_fail "a latent the map does not fit: refused before the run" 1 \
	"^ditstar: --preview: tiny-hunyuan's latent has 4 channels; the preview map of its VAE takes 16" \
	"$DITSTAR" generate --quiet --model tiny-hunyuan --steps 1 --preview "$T/h.png"
expect_fail "LTX-2 with a latent the map does not fit: refused before the run" 1 \
	"^ditstar: --preview: tiny-ltx2's latent has 16 channels; the preview map of its VAE takes 128" \
	"$DITSTAR" generate --quiet --model tiny-ltx2 --steps 1 --stg-blocks 1 --preview "$T/ltx.png"
finish
