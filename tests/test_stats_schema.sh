# --stats-json is documented by a JSON Schema (docs/stats.schema.json, layout 2): the
# statistics of every kind of run (generate resident, disk offload, OpenCL streaming,
# LTX-2's two streams, HunyuanVideo with a trace, forward, ditstar-sim) are instances of
# it, no more and no less (every object closed), checked with tests/ref/schema_check.py;
# and the head says what ran: the schema, the command line as given, host, date, video.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch stats_schema)
plan 4

C="--cache-dir $T/cache --quiet --steps 2"
run() { # NAME ARGS...: a run, its statistics in $T/NAME.json
	n=$1
	shift
	"$@" --stats-json "$T/$n.json" 2>"$T/err" || { sed 's/^/# /' "$T/err"; rm -f "$T/$n.json"; }
}
run gen "$DITSTAR" generate $C --output "$T/a"
run disk "$DITSTAR" generate $C --offload disk --offload-dir "$T/store" --resident-chunks 0 \
	--output "$T/b"
if "$DITSTAR" generate --model tiny-test --steps 1 --quiet --workers opencl \
	--cache-dir "$T/cache" --output "$T/probe" 2>/dev/null; then
	run ocl "$DITSTAR" generate $C --workers opencl --offload cpu --resident-chunks 0 --output "$T/c"
fi
run ltx "$DITSTAR" generate --model tiny-ltx2 $C --output "$T/d"
run hy "$DITSTAR" generate --model tiny-hunyuan $C --trace "$T/tr" --output "$T/e"
ref make-tiny --output-dir "$T/m" --seed 1 >/dev/null
"$PYTHON_NUMPY" -c "
import sys; sys.path.insert(0, '$top_srcdir/tests/ref'); import safetensors_np as st, numpy as np
r = np.random.default_rng(1)
st.save('$T/in', {'x': r.standard_normal((4, 3, 4, 6)).astype(np.float32),
                  't': np.array([500.0], np.float32),
                  'context': r.standard_normal((8, 24)).astype(np.float32)})"
run fwd "$DITSTAR" forward --model-dir "$T/m" --inputs "$T/in" --output "$T/g"
[ -x "$top_builddir/ditstar-sim" ] && run sim "$top_builddir/ditstar-sim" generate $C
n=$(ls "$T"/*.json 2>/dev/null | wc -l)
check "every kind of run wrote its statistics ($n)" test "$n" -ge 6
if res=$("$PYTHON_NUMPY" "$top_srcdir/tests/ref/schema_check.py" \
	"$top_srcdir/docs/stats.schema.json" "$T"/*.json 2>&1); then
	ok "each is an instance of docs/stats.schema.json (every object closed)"
else
	fail "each is an instance of docs/stats.schema.json: $res"
fi
check "the head: schema 2, the command line as given, host, a UTC date, the video (tiny: 17 x 128 x 192)" \
	"$PYTHON_NUMPY" -c "
import json, re
s = json.load(open('$T/gen.json'))
assert s['schema'] == 2 and s['command'] == 'generate', s['schema']
assert s['argv'][1:] == ['generate', '--cache-dir', '$T/cache', '--quiet', '--steps', '2',
                         '--output', '$T/a', '--stats-json', '$T/gen.json'], s['argv']
assert s['host'] and re.match(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$', s['date']), s
assert s['video'] == {'frames': 17, 'height': 128, 'width': 192}, s['video']"
check "no key both at the top and in run; rates named MB_per_s" "$PYTHON_NUMPY" -c "
import json, glob
for f in glob.glob('$T/*.json'):
    s = json.load(open(f))
    assert not set(s) & set(s['run']), (f, set(s) & set(s['run']))
    text = open(f).read()
    assert 'mbps' not in text, f"
finish
