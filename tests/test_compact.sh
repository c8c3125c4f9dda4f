# Compact weights (--weight-dtype auto, the default): the block matrices a checkpoint
# stores in fp16, bf16, float8 with its scale or Q8_0 stay so in the chunks, host RAM,
# the chunk store and device memory, and the kernels widen them a tile at a time.
# - A ComfyUI-style scaled-fp8 Wan checkpoint (every block matrix F8_E4M3 with its
#   scale_weight): latents byte-identical across offload modes, chunk sizes and prefetch
#   depths, within 1e-4 of the widened run (--weight-dtype f32); its chunk store and the
#   bytes a step reads from it at most 0.52 x the bf16 path's (scales aside: the other
#   tensors are the same fp32 bytes in both); the store named by its dtypes; the plan
#   and the stats give the bytes by dtype.
# - Every family's block kind reads compact matrices (Wan2.1, Wan2.2 A14B, HunyuanVideo,
#   LTX-2.3, Cosmos-Predict2.5): each tiny model's checkpoint written in F16 and in
#   BF16 runs with its matrices kept so, within 1e-4 of the same values widened (the
#   sanitized build: F16 alone, whose code paths hold BF16's, and the block kinds other
#   than Wan's, which the fp8 checks run: the CI's time).
# - OpenCL workers (PoCL) with fp8 weights: offload byte-identical, the CPU's within 1e-4.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch compact)
DTS="F16 BF16"
FAMS="tiny tiny-t2v-a14b tiny-hunyuan tiny-ltx2.3 tiny-cosmos"
if sanitized ditstar; then
	DTS=F16
	FAMS="tiny-hunyuan tiny-ltx2.3 tiny-cosmos"
fi
plan $((16 + $(echo $FAMS | wc -w) * $(echo $DTS | wc -w)))

fmt() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/formats_np.py" "$@"; }
ref make-tiny --output-dir "$T/off" --seed 5 --layers 4 >/dev/null
fmt fp8 "$T/off" "$T/fp8" "$T/deq" --uniform

G="$DITSTAR generate --model-dir $T/fp8 --frames 5 --height 32 --width 48 --steps 2 --quiet"
offload_identity "fp8 compact" "$T" $G
$G --weight-dtype f32 --output "$T/wide" 2>"$T/err" || sed 's/^/# /' "$T/err"
within "compact fp8 = widened fp32, within 1e-4" "$T/ref" "$T/wide" latents 1e-4

# the store and the bytes read per step: compact against bf16 (chunk 1, every chunk
# streamed from the store through host RAM)
D="--offload disk --disk-source store --resident-chunks 0 --cache-dir $T/cache"
$G $D --stats-json "$T/c.json" --output "$T/dc" 2>"$T/err" || sed 's/^/# /' "$T/err"
$G $D --weight-dtype bf16 --stats-json "$T/b.json" --output "$T/db" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
identical "disk, chunk 1, from the cache's store: byte-identical" "$T/ref" "$T/dc"
check "compact fp8: the matrices in half bf16's bytes, the store and the reads likewise" \
	"$PYTHON_NUMPY" - "$T/c.json" "$T/b.json" "$T/cache/chunks" <<'PY'
import json, os, sys
c, b = (json.load(open(p)) for p in sys.argv[1:3])
cw, bw = c['weights'], b['weights']
assert cw['block_matrices'] == 'f8_e4m3' and bw['block_matrices'] == 'bf16', (cw, bw)
cb, bb = cw['block_bytes_by_dtype'], bw['block_bytes_by_dtype']
# the tensors besides the matrices are the same fp32 bytes in both
assert cb['f32'] == bb['f32'], (cb, bb)
scales = 4 * 10  # one fp32 scale per matrix (10 a Wan block)
assert cb['f8_e4m3'] - scales == bb['bf16'] // 2, (cb, bb)
def store(tag):
    d = [x for x in os.listdir(sys.argv[3]) if x.endswith(tag)]
    assert len(d) == 1, (tag, os.listdir(sys.argv[3]))
    p = os.path.join(sys.argv[3], d[0])
    return os.path.getsize(os.path.join(p, 'blocks.bin'))
sc, sb = store('-f8_e4m3'), store('-bf16')
# the store holds the blocks as laid out; every step reads each once (2 steps)
assert sc == cw['blocks'] * cw['chunk_bytes'] and sb == bw['blocks'] * bw['chunk_bytes'], (sc, sb)
rc, rb = c['transfers']['disk_read_bytes'], b['transfers']['disk_read_bytes']
assert rc == 2 * sc and rb == 2 * sb, (rc, rb, sc, sb)
moved = c['weights']['pools'][0]['bytes_moved_by_dtype']
assert moved['f8_e4m3'] == 2 * cw['blocks'] * cb['f8_e4m3'], moved
# the ratio of a tiny block, whose norms and biases weigh more than a real model's
# (perf/bench-compact measures the latter)
print('# store %d / %d bytes (%.3f), read %d / %d (%.3f)' % (sc, sb, sc / sb, rc, rb, rc / rb))
PY
P="$DITSTAR plan --model-dir $T/fp8 --frames 5 --height 32 --width 48 --steps 2 $D --json"
check "plan: the matrices' dtype, the bytes by dtype a block and a step" sh -c "
	$P >'$T/plan.json' 2>'$T/err' && '$PYTHON_NUMPY' -c \"import json
p = json.load(open('$T/plan.json'))['pools'][0]
assert p['block_matrices'] == 'f8_e4m3', p
b, s = p['block_bytes_by_dtype'], p['bytes_per_step_by_dtype']
assert b['f8_e4m3'] > 0 and b['f32'] > 0, p
assert s['f8_e4m3'] == b['f8_e4m3'] * p['blocks'] and s['f32'] == b['f32'] * p['blocks'], p
assert sum(s.values()) == p['bytes_per_step'], p\""
# CUDA widens fp8 matrices in a 64 MiB tile a worker, outside StarPU: counted in the limit
check "plan for CUDA: the compact tile beside the libraries' workspaces (352 MiB)" sh -c "
	'$DITSTAR' plan --model-dir '$T/fp8' --frames 5 --height 32 --width 48 --workers cuda \
		--offload cpu --device-mem-limit 1G --json >'$T/cplan.json' 2>'$T/err' &&
	'$PYTHON_NUMPY' -c \"import json
c = json.load(open('$T/cplan.json'))['compute']
assert c['outside_bytes'] == 352 << 20 and c['budget_bytes'] == (1024 - 352) << 20, c\""

# every family's block kind with compact F16 and BF16 matrices
for m in $FAMS; do # the synthetic checkpoints, in the test's cache
	"$DITSTAR" generate --model $m --cache-dir "$T/cache" --steps 1 --frames 9 --height 32 \
		--width 64 --quiet --output "$T/syn" 2>"$T/err" || sed 's/^/# /' "$T/err"
done
"$PYTHON_NUMPY" - "$T" "$DTS" <<'PY' >/dev/null
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import safetensors_np as st
t = sys.argv[1]
def convert(src, dst, dtype):
    for root, _, files in os.walk(src):
        out = os.path.join(dst, os.path.relpath(root, src))
        os.makedirs(out, exist_ok=True)
        for f in files:
            p = os.path.join(root, f)
            if f.endswith('.safetensors'):
                st.save(os.path.join(out, f), st.load(p), st.load_metadata(p), dtype=dtype)
            else:
                with open(p, 'rb') as i, open(os.path.join(out, f), 'wb') as o:
                    o.write(i.read())
for m in sorted(os.listdir(t + '/cache')):
    if m.endswith('-synth-v1'):
        for dt in sys.argv[2].split():
            convert(os.path.join(t, 'cache', m), os.path.join(t, 'fam', m + '-' + dt), dt)
PY
for m in $FAMS; do
	for dt in $DTS; do
		M="--model-dir $T/fam/$m-synth-v1-$dt --steps 2 --quiet --frames 9 --height 32"
		"$DITSTAR" generate $M --width 64 --stats-json "$T/s.json" --output "$T/fc" \
			2>"$T/err" || sed 's/^/# /' "$T/err"
		"$DITSTAR" generate $M --width 64 --weight-dtype f32 --output "$T/fw" 2>"$T/err" ||
			sed 's/^/# /' "$T/err"
		if res=$("$PYTHON_NUMPY" - "$T/fc" "$T/fw" "$T/s.json" $dt 2>"$T/err" <<'PY'
import json, os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
a, b = st.load(sys.argv[1]), st.load(sys.argv[2])
assert sorted(a) == sorted(b) and a, (list(a), list(b))
d = max(float(np.abs(a[k] - b[k]).max()) for k in a)
assert d <= 1e-4, 'max |compact - widened| %g' % d
w = json.load(open(sys.argv[3]))['weights']
assert all(p['block_matrices'] == sys.argv[4].lower() for p in w['pools']), w
print('max |compact - widened| %.3g over %s' % (d, ', '.join(sorted(a))))
PY
		); then
			ok "$m, $dt matrices kept: = widened within 1e-4: $res"
		else
			fail "$m, $dt matrices kept: = widened within 1e-4: ${res:-} $(cat "$T/err")"
		fi
	done
done

# OpenCL workers (PoCL) read compact fp8 matrices too
O="$G --workers opencl"
if $O --output "$T/ocl" 2>"$T/err"; then
	$O --offload disk --offload-chunk-size 2 --offload-dir "$T/ostore" --output "$T/ocl_d2" \
		2>/dev/null
	if cmp -s "$T/ocl" "$T/ocl_d2" &&
		res=$(ref compare "$T/ref" "$T/ocl" --tensor-a latents --tol 1e-4); then
		ok "OpenCL workers with compact fp8 weights: disk byte-identical, CPU agrees: $res"
	else
		fail "OpenCL workers with compact fp8 weights: disk byte-identical, CPU agrees: ${res:-}"
	fi
else
	dit_n=$((dit_n + 1))
	echo "ok $dit_n # SKIP no OpenCL device ($(head -n 1 "$T/err"))"
fi
finish
