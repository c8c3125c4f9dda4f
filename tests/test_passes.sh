# Guidance passes in flight (--passes-in-flight, tasks/graph.c) and blocks in token
# chunks (--token-chunk, Wan): the buffers that live
# only inside a block (DIT_LIVE_BLOCK) exist once per pass in flight and the passes
# sharing a copy run one after the other. Every family's latents are byte-identical
# with fewer passes in flight (a buffer wrongly called block-lived would be
# overwritten by the other pass between its uses and change them), also with row
# tiles; the plan adds up the activations by lifetime and shows the saving; a device
# budget between the needs of one and two passes in flight makes the planner take
# one, says so, and the run stays within it and byte-identical; a budget below one
# pass in flight is refused before any work, naming that. Wan blocks in token chunks
# (every per-token buffer but q/k/v one chunk's size, the head's too) give byte-identical
# latents on the CPU (with and without row tiles) and on OpenCL, and latents within
# 1e-4 of the whole with chunks of 7 tokens (GEMMs of so few rows take other kernels)
# and across Wan2.2's per-frame timesteps; the planner takes chunks when one
# pass in flight does not fit; a family without chunks refuses the option. Cosmos and
# HunyuanVideo chunks are byte-identical too. Every official preset at its reference
# setting plans within 8, 12 or 16 GiB of device memory with the weights streamed, its
# buffer list adding up to the activations.
. "$top_srcdir/tests/lib.sh"
blas_rows_fixed # the token-chunk identities (lib.sh)
need_python
T=$(scratch passes)
plan 36

C="--cache-dir $T/cache --steps 2 --quiet"
# same_in_flight DESC PRESET-AND-ARGS: the default run against 1 pass in flight
same_in_flight() {
	desc=$1
	shift
	"$DITSTAR" generate --model "$@" $C --output "$T/all" 2>"$T/err" || sed 's/^/# /' "$T/err"
	"$DITSTAR" generate --model "$@" $C --passes-in-flight 1 --output "$T/one" 2>"$T/err" ||
		sed 's/^/# /' "$T/err"
	identical "$desc: 1 pass in flight byte-identical to all" "$T/all" "$T/one"
}
same_in_flight "Wan2.1 (CFG, 2 passes)" tiny
same_in_flight "Wan2.1 with row tiles of 64 tokens" tiny --tile-tokens 64
same_in_flight "Wan2.2 T2V-A14B (two experts)" tiny-t2v-a14b
same_in_flight "Wan2.2 TI2V-5B (per-token timesteps)" tiny-ti2v-5b
same_in_flight "Cosmos-Predict2.5 (2B shapes)" tiny-cosmos
same_in_flight "LTX-2 (4 passes: CFG, STG, modality)" tiny-ltx2 --stg-blocks 1
same_in_flight "LTX-2.3 (gated attention, text AdaLN) with row tiles" tiny-ltx2.3 --stg-blocks 1 \
	--tile-tokens 32
# blocks in token chunks (row tiles off, then on)
"$DITSTAR" generate --model tiny $C --tile-tokens 0 --output "$T/whole" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
"$DITSTAR" generate --model tiny $C --tile-tokens 0 --token-chunk 100 \
	--stats-json "$T/chunks.json" --output "$T/chunked" 2>"$T/err" || sed 's/^/# /' "$T/err"
identical "Wan: blocks in 5 token chunks of 96, byte-identical to whole" "$T/whole" "$T/chunked"
check "the stats: token chunks of 100 asked" "$PYTHON_NUMPY" -c "import json, sys
w = json.load(open('$T/chunks.json'))['weights']
assert w['token_chunk_rows'] == 100, w"
"$DITSTAR" generate --model tiny $C --tile-tokens 0 --token-chunk 7 --output "$T/chunk7" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
within "Wan: 69 token chunks of 7, within 1e-4 of whole" "$T/chunk7" "$T/whole" latents 1e-4
"$DITSTAR" generate --model tiny $C --tile-tokens 64 --output "$T/whole" 2>/dev/null
"$DITSTAR" generate --model tiny $C --tile-tokens 64 --ffn-chunk-tokens 128 \
	--passes-in-flight 1 --output "$T/chunked" 2>"$T/err" || sed 's/^/# /' "$T/err"
identical "Wan with row tiles: token chunks (the option's first name) and 1 pass in flight, byte-identical" \
	"$T/whole" "$T/chunked"
# TI2V-5B image-to-video: the first frame at t = 0, the others at t (120 tokens, 24 a
# frame), in chunks of 50 that cut frames (OpenBLAS takes other GEMM kernels for so
# few rows of its small widths: a tolerance, not identity)
"$PYTHON_NUMPY" - "$T/z" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
r = np.random.default_rng(2)
st.save(sys.argv[1], {'z': r.standard_normal((48, 1, 8, 12)).astype(np.float32)})
PY
I="--model tiny-ti2v-5b --image-latent $T/z --tile-tokens 0"
"$DITSTAR" generate $I $C --output "$T/whole" 2>"$T/err" || sed 's/^/# /' "$T/err"
"$DITSTAR" generate $I $C --token-chunk 50 --output "$T/chunked" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
if res=$(ref compare "$T/chunked" "$T/whole" --tensor-a latents --tol 5e-6 --rel); then
	ok "Wan2.2 TI2V-5B image-to-video: chunks across the per-frame timesteps, within 5e-6 relative: $res"
else
	fail "Wan2.2 TI2V-5B image-to-video: chunks across the per-frame timesteps: $res"
fi
# Cosmos (per-head norms, split RoPE) and HunyuanVideo (the image stream of the double
# blocks, the joint stream of the single blocks, whose chunks cross from image to text
# rows, and the final layer) in token chunks
for m in tiny-cosmos tiny-hunyuan; do
	"$DITSTAR" generate --model $m $C --output "$T/whole" 2>"$T/err" || sed 's/^/# /' "$T/err"
	"$DITSTAR" generate --model $m $C --token-chunk 50 --output "$T/chunked" 2>"$T/err" ||
		sed 's/^/# /' "$T/err"
	identical "$m: blocks in token chunks of 50, byte-identical to whole" "$T/whole" "$T/chunked"
	"$DITSTAR" generate --model $m $C --token-chunk 7 --output "$T/chunked" 2>"$T/err" ||
		sed 's/^/# /' "$T/err"
	within "$m: token chunks of 7, within 1e-4 of whole" "$T/chunked" "$T/whole" latents 1e-4
done
# token chunks in row tiles: a chunk's buffers cut in a power of two of tiles, and the
# shorter last chunk (the joint stream's 328 rows in chunks of 47 and 46) on the first
# tiles of them, the last one cut short
for m in tiny tiny-cosmos tiny-hunyuan; do
	"$DITSTAR" generate --model $m $C --tile-tokens 8 --output "$T/whole" 2>"$T/err" ||
		sed 's/^/# /' "$T/err"
	"$DITSTAR" generate --model $m $C --tile-tokens 8 --token-chunk 50 --output "$T/chunked" \
		2>"$T/err" || sed 's/^/# /' "$T/err"
	if res=$(ref compare "$T/chunked" "$T/whole" --tensor-a latents --tol 1e-5 --rel); then
		ok "$m: token chunks of 50 in row tiles of 8, within 1e-5 relative of whole: $res"
	else
		fail "$m: token chunks of 50 in row tiles of 8, within 1e-5 relative of whole: $res"
	fi
done
# LTX-2 in token chunks (576 video tokens in 6 chunks of 96): self-attention's and v2a's
# keys from every row first, the audio stream whole; STG's skip of the chunks' attention
# (the sanitized build runs the last, whose code paths hold the others': the CI's time)
for v in "tiny-ltx2" "tiny-ltx2.3" "tiny-ltx2.3 --act-dtype bf16"; do
	if sanitized ditstar && [ "$v" != "tiny-ltx2.3 --act-dtype bf16" ]; then
		ok "$v: LTX-2's video stream in token chunks # SKIP the normal build runs it"
		continue
	fi
	X="--model $v --stg-blocks 1 --frames 41 --height 256 --width 384 $C"
	rm -f "$T/whole" "$T/chunked"
	"$DITSTAR" generate $X --output "$T/whole" 2>"$T/err" || sed 's/^/# /' "$T/err"
	"$DITSTAR" generate $X --token-chunk 100 --output "$T/chunked" 2>"$T/err" ||
		sed 's/^/# /' "$T/err"
	identical "$v: LTX-2's video stream in token chunks of 100, byte-identical to whole" \
		"$T/whole" "$T/chunked"
done
"$DITSTAR" generate --model tiny-ltx2 --stg-blocks 1 $C --passes-in-flight 3 --output "$T/three" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
"$DITSTAR" generate --model tiny-ltx2 --stg-blocks 1 $C --passes-in-flight 1 --output "$T/one" \
	2>/dev/null
identical "LTX-2: 3 of 4 passes in flight byte-identical to 1" "$T/one" "$T/three"

# the plan: the activations by lifetime, adding up, and the saving
P="$DITSTAR plan --model tiny-ltx2 --stg-blocks 1 --cache-dir $T/cache --json"
$P >"$T/p4.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
$P --passes-in-flight 2 >"$T/p2.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "plan: activations = passes x (io + forward-lived) + in flight x block-lived + shared + the run's own" \
	"$PYTHON_NUMPY" - "$T/p4.json" "$T/p2.json" <<'PY'
import json, sys
for path, k, why in ((sys.argv[1], 4, 'all'), (sys.argv[2], 2, 'option')):
    j = json.load(open(path))
    a = j['activations']
    assert a['passes'] == 4 and a['passes_in_flight'] == k, a
    assert a['passes_in_flight_from'] == why, a
    assert min(a['per_pass_io_bytes'], a['per_pass_forward_bytes'],
               a['per_pass_in_flight_block_bytes']) > 0, a
    tot = (4 * (a['per_pass_io_bytes'] + a['per_pass_forward_bytes']) +
           k * a['per_pass_in_flight_block_bytes'] + a['shared_bytes'] + a['caller_bytes'])
    assert a['total_bytes'] == tot == j['compute']['activation_bytes'], (a, tot)
    assert a['all_passes_in_flight_bytes'] == tot + (4 - k) * a['per_pass_in_flight_block_bytes']
    assert a['largest_buffer'] and a['largest_buffer_bytes'] > 0, a
PY
if $DITSTAR plan --model tiny --cache-dir "$T/cache" --passes-in-flight 1 >"$T/p.txt" 2>&1 &&
	grep -Eq '^  activations [0-9.]+ MiB: 2 passes x \(inputs and stream [0-9.]+ \+ forward-lived [0-9.]+\) \+ 1 in flight x block-lived [0-9.]+ \+ shared [0-9.]+' "$T/p.txt" &&
	grep -q '^  passes in flight: 1 of 2 (--passes-in-flight)$' "$T/p.txt" &&
	grep -Eq '^  the most: [a-z_0-9]+ [0-9.]+ MiB( x [0-9]+)? \((pass|forward|block|shared)\)(, [a-z_0-9]+ [0-9.]+ MiB( x [0-9]+)? \((pass|forward|block|shared)\)){4}$' "$T/p.txt"; then
	ok "the text plan: activations by lifetime, the five buffers holding the most, passes in flight and why"
else
	fail "the text plan: activations by lifetime, the five buffers holding the most, passes in flight and why"
	sed 's/^/# /' "$T/p.txt"
fi
# the planner: one pass in flight first, then token chunks (a plan for
# CUDA needs no GPU when the limit is given; fp32 activations, as the sums below count)
W="$DITSTAR plan --model wan2.1-t2v-14b --frames 81 --height 480 --width 832 --workers cuda"
W="$W --offload cpu --resident-chunks 0 --act-dtype f32 --json"
$W --device-mem-limit 1T >"$T/w_all.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
$W --device-mem-limit 1T --passes-in-flight 1 >"$T/w_one.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
$W --device-mem-limit 1T --passes-in-flight 1 --token-chunk 4096 >"$T/w_ffn.json" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
lims=$("$PYTHON_NUMPY" - "$T/w_all.json" "$T/w_one.json" "$T/w_ffn.json" <<'PY'
import json, sys
def need(p):
    c = json.load(open(p))['compute']
    return c['global_bytes'] + c['streaming_slot_bytes'] + c['activation_bytes']
n = [need(p) for p in sys.argv[1:]]
assert n[0] > n[1] > n[2], n
# the limit holds the CUDA libraries' workspaces too (beside StarPU)
out = json.load(open(sys.argv[1]))['compute']['outside_bytes']
assert out >= (32 + 256) << 20, out
mib = 1 << 20
print((n[0] + n[1]) // 2 // mib + out // mib, (n[1] + n[2]) // 2 // mib + out // mib)
PY
)
$W --device-mem-limit "${lims% *}M" >"$T/w1.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
$W --device-mem-limit "${lims#* }M" >"$T/w2.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "Wan2.1-14B 480P: a budget below both passes takes 1 in flight; below that, token chunks of 4096" \
	"$PYTHON_NUMPY" - "$T/w1.json" "$T/w2.json" "$T/w_ffn.json" <<'PY'
import json, sys
a1, a2, af = (json.load(open(p))['activations'] for p in sys.argv[1:4])
assert a1['passes_in_flight'] == 1 and a1['passes_in_flight_from'] == 'limit', a1
assert a1['token_chunk_rows'] == 0 and a1['token_chunk_from'] == 'all', a1
assert a2['passes_in_flight'] == 1 and a2['token_chunk_rows'] == 4096, a2
assert a2['token_chunk_from'] == 'limit' and af['token_chunk_from'] == 'option', (a2, af)
# one chunk instead of all 32 760 tokens (8 chunks of 4095) in h, q, o, y [., D], the
# FFN hidden [., F] and the head's normed input [., D]; self-attention's k/v [L, 2D]
# without its q (a chunk's, in q)
D, F = 5120, 13824
saved = (32760 - 4095) * (5 * D + F) * 4 + 32760 * D * 4
assert a1['per_pass_in_flight_block_bytes'] - a2['per_pass_in_flight_block_bytes'] == saved, (a1, a2)
PY
# every official preset at its reference setting, weights streamed: the planner fits
# the device budget of the "Activations fit" targets by itself (shapes only, no GPU)
if out=$("$PYTHON_NUMPY" - "$DITSTAR" <<'PY'
import json, subprocess, sys
rows = [("wan2.1-t2v-14b", "81x720x1280", [], 12), ("wan2.1-t2v-14b", "81x480x832", [], 8),
        ("wan2.2-t2v-a14b", "81x720x1280", [], 12), ("wan2.2-ti2v-5b", "121x704x1280", [], 8),
        ("hunyuan-video", "129x720x1280", [], 16), ("cosmos-predict2.5-14b", "93x704x1280", [], 16),
        ("ltx-2.3-22b", "121x1024x1536", ["--stg-blocks", "28"], 16)]
bad = []
for model, size, extra, gib in rows:
    f, h, w = size.split("x")
    r = subprocess.run([sys.argv[1], "plan", "--model", model, "--frames", f, "--height", h,
                        "--width", w, "--workers", "cuda", "--offload", "cpu",
                        "--resident-chunks", "0", "--device-mem-limit", "%dG" % gib, "--json"]
                       + extra, capture_output=True, text=True)
    if r.returncode:
        bad.append("%s %s: %s" % (model, size, r.stderr.strip()))
        continue
    j = json.loads(r.stdout)
    c, a = j["compute"], j["activations"]
    # what the planner holds to the limit (StarPU's slack, 1/16 more, is its estimate
    # of rounding on top)
    need = c["global_bytes"] + c["streaming_slot_bytes"] + c["activation_bytes"]
    print("# %s %s: %.1f GiB of %d, %.1f with the slack (%d in flight, chunks %d)" % (
        model, size, need / 2**30, gib, (need + c["slack_bytes"]) / 2**30,
        a["passes_in_flight"], a["token_chunk_rows"]))
    if need > gib << 30 or sum(b["bytes"] * b["copies"] for b in a["buffers"]) != a["total_bytes"] - a["caller_bytes"]:
        bad.append("%s %s: %d bytes" % (model, size, need))
assert not bad, bad
PY
); then
	ok "the official presets at their reference settings fit 8/12/16 GiB with the weights streamed"
	printf '%s\n' "$out"
else
	fail "the official presets at their reference settings fit 8/12/16 GiB with the weights streamed"
	printf '%s\n' "$out" | sed 's/^/# /'
fi
expect_fail "--passes-in-flight takes 0..64" 2 "^ditstar plan: --passes-in-flight needs an integer from 0 to 64, not '-1'" \
	$DITSTAR plan --model tiny --passes-in-flight -1

# A device budget (PoCL's OpenCL device) between the needs of 1 and 2 passes in flight:
# the planner takes 1, and the run keeps to the budget.
if ! "$DITSTAR" generate --quiet --model tiny-test --steps 1 --workers opencl \
	--cache-dir "$T/cache" --output "$T/probe" 2>"$T/err"; then
	for i in 1 2 3 4 5 6 7 8; do ok "# SKIP no OpenCL device ($(head -n 1 "$T/err"))"; done
	finish
fi
S="--model small --frames 9 --height 256 --width 384 --cache-dir $T/cache --workers opencl"
S="$S --offload cpu --resident-chunks 0"
for k in 1 2; do
	$DITSTAR plan $S --passes-in-flight $k --json >"$T/need$k.json" 2>"$T/err" ||
		sed 's/^/# /' "$T/err"
done
lim=$("$PYTHON_NUMPY" - "$T/need1.json" "$T/need2.json" <<'PY'
import json, sys
def need(p):
    c = json.load(open(p))['compute']
    return c['global_bytes'] + c['streaming_slot_bytes'] + c['activation_bytes']
n1, n2 = need(sys.argv[1]), need(sys.argv[2])
mib = 1 << 20
lim = (n1 + n2) // 2 // mib
assert n1 <= lim * mib < n2, (n1, n2, lim)
print(lim)
PY
)
$DITSTAR plan $S --device-mem-limit "${lim}M" --json >"$T/lim.json" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
check "a budget between the needs of 1 and 2 passes in flight: the plan takes 1, from the limit, and its sum (the slack cut to what the limit leaves) is StarPU's limit, within the budget" \
	"$PYTHON_NUMPY" - "$T/lim.json" "$lim" <<'PY'
import json, sys
j, lim = json.load(open(sys.argv[1])), int(sys.argv[2]) << 20
a, c = j['activations'], j['compute']
assert a['passes_in_flight'] == 1 and a['passes_in_flight_from'] == 'limit', a
total = sum(c[k] for k in ('global_bytes', 'resident_chunk_bytes', 'streaming_slot_bytes',
                           'activation_bytes', 'slack_bytes'))
print('# plan %.1f MiB, slack %.1f MiB (wanted %.1f), budget %.1f MiB' % (
    total / 2**20, c['slack_bytes'] / 2**20, c.get('slack_wanted_bytes', 0) / 2**20, lim / 2**20))
assert total <= lim and c['limit_bytes'] <= lim and abs(c['limit_bytes'] - total) < 2**20, c
assert c.get('slack_wanted_bytes', 0) > c['slack_bytes'], c
PY
"$DITSTAR" generate $S --steps 1 --quiet --output "$T/sall" 2>"$T/err" || sed 's/^/# /' "$T/err"
"$DITSTAR" generate $S --steps 1 --quiet --device-mem-limit "${lim}M" --stats-json "$T/s.json" \
	--output "$T/slim" 2>"$T/err" || sed 's/^/# /' "$T/err"
identical "the run under that budget: byte-identical to all passes in flight" "$T/sall" "$T/slim"
"$DITSTAR" generate $S --steps 1 --quiet --token-chunk 256 --output "$T/sffn" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
identical "OpenCL: blocks in token chunks of 256, byte-identical" "$T/sall" "$T/sffn"
check "the run under that budget: 1 pass in flight, StarPU's peak on the device within the budget" \
	"$PYTHON_NUMPY" - "$T/s.json" "$lim" <<'PY'
import json, sys
s, lim = json.load(open(sys.argv[1])), int(sys.argv[2]) << 20
assert s['weights']['passes_in_flight'] == 1, s['weights']
dev = [n for n in s['memory_nodes'] if n['kind'] == 'opencl'][0]
print('# peak %.1f MiB, budget %.1f MiB' % (dev['starpu_peak_bytes'] / 2**20, lim / 2**20))
assert 0 < dev['starpu_peak_bytes'] <= s['offload']['device_limit_bytes'] <= lim, (dev, lim)
PY
$DITSTAR plan $S --passes-in-flight 1 --token-chunk 256 --json >"$T/least.json" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
small=$("$PYTHON_NUMPY" -c "import json; c = json.load(open('$T/least.json'))['compute']
print((c['global_bytes'] + c['streaming_slot_bytes'] + c['activation_bytes']) // (1 << 20) - 1)")
expect_fail "a budget below one pass in flight and the smallest token chunks: refused before any work, saying so" 2 \
	"--device-mem-limit $small MiB is below the .* MiB this run needs on the device .*, with 1 of the 2 passes in flight, the blocks in token chunks of 256 rows$" \
	$DITSTAR generate $S --steps 2 --device-mem-limit "${small}M" --output "$T/never"
check "nothing written" test ! -e "$T/never"

# No limit given: the device's own memory is the budget (PoCL's device memory cut to
# 1 GiB by POCL_MEMORY_LIMIT): the plan takes one pass in flight and token chunks from
# it, and a run it cannot hold is refused before any work, naming that memory.
M="--model small --frames 121 --height 480 --width 832 --cache-dir $T/cache --workers opencl"
M="$M --offload cpu --resident-chunks 0"
POCL_MEMORY_LIMIT=1 $DITSTAR plan $M --json >"$T/mem.json" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "no limit: the passes in flight and token chunks the device's memory holds" \
	"$PYTHON_NUMPY" - "$T/mem.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
a, c = p['activations'], p['compute']
assert a['passes_in_flight'] == 1 and a['passes_in_flight_from'] == 'memory', a
assert a['token_chunk_rows'] > 0 and a['token_chunk_from'] == 'memory', a
need = c['global_bytes'] + c['streaming_slot_bytes'] + c['activation_bytes']
assert need <= (1 << 30) * 95 // 100 - (256 << 20), need
PY
expect_fail "no limit: a run the device's memory cannot hold is refused, naming it" 2 \
	"the device's memory \\(1024 MiB, of which the run may use [0-9]+\\) is below the [0-9]+ MiB this run needs on the device" \
	env POCL_MEMORY_LIMIT=1 $DITSTAR generate --model small --frames 121 --height 720 \
	--width 1280 --cache-dir "$T/cache" --workers opencl --steps 1 --output "$T/never2"
finish
