# ditstar generate: the whole sampling loop against the NumPy reference (which runs
# its own port of the official solver on the noise and contexts the run stored with
# --save-inputs), determinism across runs, schedulers and worker counts, and the
# stats report.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch generate)
plan 15

ref make-tiny --output-dir "$T/m" --seed 7 --layers 2 >/dev/null
G="$DITSTAR generate --model-dir $T/m --frames 5 --height 32 --width 48 --quiet"

# generate vs reference: Euler and UniPC, guidance 5; fp32 through 4 steps of CFG
# amplifies rounding, hence 1e-4.
for solver in euler unipc; do
	$G --steps 4 --solver $solver --seed 3 --output "$T/$solver.c" --save-inputs 2>"$T/err" ||
		sed 's/^/# /' "$T/err"
	if ref generate --model-dir "$T/m" --noise "$T/$solver.c" --context "$T/$solver.c" \
		--steps 4 --shift 5 --guidance 5 --solver $solver --output "$T/$solver.ref" \
		>/dev/null 2>"$T/err" &&
		res=$(ref compare "$T/$solver.c" "$T/$solver.ref" --tensor-a latents --tol 1e-4); then
		ok "generate $solver vs reference: $res"
	else
		fail "generate $solver vs reference: ${res:-reference failed}"
		sed 's/^/# /' "$T/err"
	fi
done

# Same seed twice: byte-identical; another seed: different.
$G --steps 3 --seed 11 --output "$T/s11a" 2>/dev/null
$G --steps 3 --seed 11 --output "$T/s11b" 2>/dev/null
$G --steps 3 --seed 12 --output "$T/s12" 2>/dev/null
identical "same seed: byte-identical" "$T/s11a" "$T/s11b"
if cmp -s "$T/s11a" "$T/s12"; then fail "another seed changes the latents"; else ok "another seed changes the latents"; fi

# The result does not depend on the scheduler or the number of workers.
for s in eager lws dmdas; do
	$G --steps 3 --seed 11 --sched $s --output "$T/sched_$s" 2>/dev/null
	identical "scheduler $s: byte-identical" "$T/s11a" "$T/sched_$s"
done
$G --steps 3 --seed 11 --ncpus 1 --output "$T/one" 2>/dev/null
identical "one worker: byte-identical" "$T/s11a" "$T/one"

# --priorities critical-path: each compute task's b-level (blocks left to the end of
# the run: 3 steps of 2 blocks + 1 = 9 levels, the last block 1), and the latents of
# every scheduler unchanged.
good=0
for s in prio dmdas heteroprio eager; do
	$G --steps 3 --seed 11 --sched $s --priorities critical-path --output "$T/prio_$s" \
		--stats-json "$T/prio_$s.json" 2>/dev/null && cmp -s "$T/s11a" "$T/prio_$s" &&
		good=$((good + 1))
done
check "critical-path priorities: the b-levels 1..9 (eager: none), byte-identical on 4 schedulers" \
	"$PYTHON_NUMPY" - "$good" "$T" <<'PY'
import json, sys
assert sys.argv[1] == '4', sys.argv[1]
for s in ('prio', 'dmdas', 'heteroprio'):
    p = json.load(open('%s/prio_%s.json' % (sys.argv[2], s)))['priorities']
    assert p == {'scheme': 'critical-path', 'min': 1, 'max': 9}, (s, p)
p = json.load(open('%s/prio_eager.json' % sys.argv[2]))['priorities']
assert p['min'] == p['max'] == 0, p  # eager has no priorities
PY

# heteroprio's default scheme is op-class (its buckets: GEMM 0, attention 1, the other
# ops 2 on a CPU-only run), and --priorities op-class on another scheduler gives the
# same buckets; the latents stay byte-identical.
good=0
$G --steps 3 --seed 11 --sched heteroprio --output "$T/hp" --stats-json "$T/hp.json" 2>/dev/null &&
	cmp -s "$T/s11a" "$T/hp" && good=$((good + 1))
$G --steps 3 --seed 11 --sched prio --priorities op-class --output "$T/hpp" \
	--stats-json "$T/hpp.json" 2>/dev/null && cmp -s "$T/s11a" "$T/hpp" && good=$((good + 1))
check "op-class priorities: heteroprio's default, buckets 0..2 on CPU workers, byte-identical" \
	"$PYTHON_NUMPY" - "$good" "$T" <<'PY'
import json, sys
assert sys.argv[1] == '2', sys.argv[1]
for s in ('hp', 'hpp'):
    p = json.load(open('%s/%s.json' % (sys.argv[2], s)))['priorities']
    assert p == {'scheme': 'op-class', 'min': 0, 'max': 2}, (s, p)
PY

# Output shape and metadata, stats JSON content.
$G --steps 2 --seed 1 --output "$T/shape" --stats-json "$T/stats.json" 2>/dev/null
check "latents are [4, 2, 4, 6] F32 with metadata" "$PYTHON_NUMPY" - "$T/shape" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import safetensors_np as st
h, meta, _ = st.read_header(sys.argv[1])
assert h['latents']['shape'] == [4, 2, 4, 6] and h['latents']['dtype'] == 'F32', h
assert meta.get('steps') == '2' and meta.get('seed') == '1' and meta.get('solver') == 'unipc', meta
PY
check "stats JSON: steps, nodes, tasks per codelet" "$PYTHON_NUMPY" - "$T/stats.json" <<'PY'
import json, os, sys
s = json.load(open(sys.argv[1]))
assert len(s['step_seconds']) == 2 and all(x > 0 for x in s['step_seconds'])
r = s['run']  # what ran
assert r['family'] == 'wan2.1-t2v' and r['steps'] == 2 and r['seed'] == 1, r
assert r['model_arg'].endswith('/m') and r['starpu_version'].startswith('1.4.'), r
assert r['cpu_workers'] >= 1 and 'cpu_workers' not in s and r['ditstar_version'], r
assert isinstance(s['perfmodels']['calibrated'], bool) and 'models_calibrated' not in r, r
# the kernels that ran: the ISA path, OpenBLAS's core (OPENBLAS_CORETYPE when set)
assert r['cpu_isa'] in ('scalar', 'avx2', 'avx512'), r
core = os.environ.get('OPENBLAS_CORETYPE')
assert r['blas_core'] and (not core or r['blas_core'].lower() == core.lower()), r
ram = [n for n in s['memory_nodes'] if n['kind'] == 'ram']
w = s['weights']
assert ram and ram[0]['weight_bytes'] == w['chunks'] * w['chunk_bytes'] + w['global_bytes'], ram
assert w['chunk_bytes'] >= w['block_bytes'] and w['chunk_bytes'] % 4096 == 0, w
# every activation buffer is allocated by StarPU during the run
assert ram[0]['starpu_peak_bytes'] >= w['activation_bytes'], (ram, w)
assert ram[0]['peak_bytes'] == ram[0]['starpu_peak_bytes'] + ram[0]['weight_bytes'], ram
t = s['tasks']
# 2 steps x 2 passes x 2 blocks x 4 attention tasks (self + cross)
assert t['attention'] == 2 * 2 * 2 * 2, t
assert t['head'] == 4 and t['patch_embed'] == 4 and t['text_embed'] == 2 and t['cfg'] == 2, t
assert s['weights']['blocks'] == 2 and s['tokens'] == 2 * 2 * 3
PY
# The stats name the kernels the environment asked for: the scalar ISA path, and on
# x86-64 with AVX2 OpenBLAS's Haswell core
core=
grep -qw avx2 /proc/cpuinfo 2>/dev/null && core=Haswell
env DITSTAR_CPU_ISA=scalar ${core:+OPENBLAS_CORETYPE=$core} $G --steps 1 --output "$T/isa" \
	--stats-json "$T/isa.json" 2>/dev/null
check "stats JSON: cpu_isa scalar and blas_core ${core:-(any)} as the environment asks" \
	"$PYTHON_NUMPY" -c "
import json; r = json.load(open('$T/isa.json'))['run']
assert r['cpu_isa'] == 'scalar' and r['blas_core'].lower() == ('$core' or r['blas_core']).lower(), r"
# A preset's synthetic checkpoint cut short in the cache (a disk that filled up, a run
# killed while writing it) is written again, not refused on every run after.
"$DITSTAR" generate --model tiny-test --steps 1 --quiet --cache-dir "$T/pc" --output "$T/pc1" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
st="$T/pc/tiny-test-synth-v1/diffusion_pytorch_model.safetensors"
[ -f "$st" ] && truncate -s -100 "$st"
"$DITSTAR" generate --model tiny-test --steps 1 --quiet --cache-dir "$T/pc" --output "$T/pc2" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
check "a preset's checkpoint cut short in the cache is written again" cmp "$T/pc1" "$T/pc2"
# The default run: the built-in tiny preset, `generate` alone (no arguments at all print
# the overview: tests/test_conventions.sh).
check "generate alone: the built-in tiny model runs" "$DITSTAR" generate
finish
