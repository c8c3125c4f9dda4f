# LTX-2's --state and --resume: the state holds both streams (video and audio) and the
# next step; a run stopped by SIGINT after a step and resumed ends with video and audio
# latents byte-identical to an uninterrupted run, with audio and video alone (--noise
# without audio_noise); a state from other arguments or one edited is refused.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch resume_ltx)
plan 12

# The small LTX-2 preset (8 blocks) at 48 video tokens: a few tenths of a second per
# step, long enough to interrupt between steps.
G="$DITSTAR generate --quiet --model small-ltx2 --frames 9 --height 128 --width 192 --steps 8 --stg-blocks 1"
PY="$PYTHON_NUMPY -c"
LIB="import sys; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st"

$G --output "$T/ref" 2>"$T/err" || sed 's/^/# /' "$T/err"

# interrupt STATE OUT [options]: starts a run with --state, sends SIGINT once the state
# exists (after step 1), waits; the run's exit code is $rc.
interrupt() {
	state=$1 out=$2
	shift 2
	rm -f "$state"
	$G "$@" --state "$state" --output "$out" 2>"$T/err.int" &
	pid=$!
	while [ ! -e "$state" ] && kill -0 $pid 2>/dev/null; do sleep 0.02; done
	kill -INT $pid 2>/dev/null
	wait $pid
	rc=$?
}
next_step() {
	$PY "$LIB; print(st.read_header(sys.argv[1])[1]['next_step'])" "$1"
}

# uninterrupted with --state: the same latents, and the last state is them
$G --state "$T/full" --output "$T/full.out" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "--state (step by step): latents byte-identical to a run without it" cmp "$T/ref" "$T/full.out"
check "the last state: next step 8, video_x and audio_x the final latents, bit for bit" $PY "
$LIB
s, o = st.load(sys.argv[1]), st.load(sys.argv[2])
assert st.read_header(sys.argv[1])[1]['next_step'] == '8'
assert sorted(s) == ['audio_x', 'video_x'], sorted(s)
for k, l in (('video_x', 'video_latents'), ('audio_x', 'audio_latents')):
    assert s[k].shape == (o[l].size,), (k, s[k].shape, o[l].shape)
    assert (s[k].view('u4') == o[l].reshape(-1).view('u4')).all(), k
" "$T/full" "$T/full.out"

interrupt "$T/mid" "$T/mid.out"
n=$(next_step "$T/mid" 2>/dev/null)
if [ "$rc" -eq 130 ] && grep -q "interrupted after step $n of 8; state saved in $T/mid" "$T/err.int" &&
	[ ! -e "$T/mid.out" ]; then
	ok "SIGINT: stopped after step $n of 8, exit 130, state saved, no output"
else
	fail "SIGINT: stopped after a step (rc $rc, next step '$n')"
	sed 's/^/# /' "$T/err.int"
fi
check "the state is from the middle of the run and differs from the final latents" $PY "
$LIB
s, o = st.load(sys.argv[1]), st.load(sys.argv[2])
assert 1 <= int(st.read_header(sys.argv[1])[1]['next_step']) < 8
assert not (s['video_x'] == o['video_latents'].reshape(-1)).all()
assert not (s['audio_x'] == o['audio_latents'].reshape(-1)).all()
" "$T/mid" "$T/ref"
cp "$T/mid" "$T/mid.orig"
$G --resume "$T/mid" --output "$T/res" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "--resume: video and audio latents byte-identical to the uninterrupted run" cmp "$T/ref" "$T/res"
n=$(next_step "$T/mid" 2>/dev/null)
check "--resume kept updating the state: its next step is now 8 ('$n')" test "$n" = 8

# refusals, each before the run: nothing written
refused() {
	desc=$1
	shift
	expect_fail "$desc" 1 "$T/mid.orig: resume state from another model or other arguments" \
		$G "$@" --resume "$T/mid.orig" --output "$T/x"
}
cp "$T/mid.orig" "$T/keep"
refused "another seed: refused" --seed 7
refused "another audio CFG scale (the audio stream's guider): refused" --audio-guidance 5
refused "other STG blocks: refused" --stg-blocks 2
$PY "
$LIB
import numpy as np
d, m = st.load(sys.argv[1]), st.read_header(sys.argv[1])[1]
d['audio_x'] = d['audio_x'].copy(); d['audio_x'][3] += np.float32(1.0)
st.save(sys.argv[2], d, metadata=m)
" "$T/mid.orig" "$T/edited"
expect_fail "an edited audio stream: the checksum refuses it" 1 "$T/edited: resume state damaged" \
	$G --resume "$T/edited" --output "$T/x"
check "the refused runs wrote nothing and left the state as it was" sh -c \
	"[ ! -e '$T/x' ] && cmp '$T/keep' '$T/mid.orig'"

# video alone: --noise with video_noise only; the state holds the video stream alone
$PY "
$LIB
import numpy as np
r = np.random.default_rng(3)
st.save(sys.argv[1], {'video_noise': r.standard_normal((128, 2, 4, 6)).astype(np.float32)})
" "$T/vnoise"
$G --noise "$T/vnoise" --output "$T/vref" 2>"$T/err" || sed 's/^/# /' "$T/err"
interrupt "$T/vmid" "$T/vmid.out" --noise "$T/vnoise"
$G --noise "$T/vnoise" --resume "$T/vmid" --output "$T/vres" 2>"$T/err" || sed 's/^/# /' "$T/err"
n=$(next_step "$T/vmid" 2>/dev/null)
if [ "$rc" -eq 130 ] && cmp -s "$T/vref" "$T/vres" &&
	$PY "$LIB; s = st.load(sys.argv[1]); sys.exit(sorted(s) != ['video_x'])" "$T/vmid" &&
	$PY "$LIB; o = st.load(sys.argv[1]); sys.exit(sorted(o) != ['video_latents'])" "$T/vres"; then
	ok "video alone: stopped, resumed, byte-identical; the state holds video_x alone"
else
	fail "video alone: stopped (rc $rc), resumed, byte-identical"
	sed 's/^/# /' "$T/err.int" "$T/err"
fi
finish
