# HunyuanVideo on OpenCL workers (PoCL here): forward against the float64 reference
# (the small vector ops run on the CPU workers, the blocks on the device), and the
# two pools streamed to the device with byte-identical latents.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch hunyuan_opencl)
skip_without_workers opencl "$T"
plan 5

refhy() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/hunyuan_ref.py" "$@"; }
refhy make-tiny --output-dir "$T/m" --seed 3 >/dev/null
refhy inputs --model-dir "$T/m" --output "$T/a" --seed 7 --frames 3 --height 8 --width 12 \
	--text-len 20 --valid 7 >/dev/null
refhy forward --model-dir "$T/m" --inputs "$T/a" --output "$T/a.ref" >/dev/null
"$DITSTAR" forward --model-dir "$T/m" --inputs "$T/a" --output "$T/a.c" --workers opencl \
	2>"$T/err" || sed 's/^/# /' "$T/err"
within "OpenCL forward, 7 of 20 text tokens" "$T/a.c" "$T/a.ref" y 1e-5

G="$DITSTAR generate --model-dir $T/m --quiet --steps 2 --frames 5 --height 32 --width 48 --workers opencl"
$G --output "$T/none" 2>/dev/null
for m in "cpu --offload-chunk-size-double 2 --offload-chunk-size-single 1" \
	"cpu --offload-chunk-size 1,4 --prefetch 2" "disk --offload-dir $T/store"; do
	# shellcheck disable=SC2086
	$G --offload $m --output "$T/mode" 2>"$T/err" || sed 's/^/# /' "$T/err"
	identical "OpenCL, offload $m: byte-identical to resident" "$T/none" "$T/mode"
done
$G --offload cpu --offload-chunk-size 2,2 --resident-chunks 0 --stats-json "$T/stats.json" \
	2>/dev/null
check "stats: bytes moved per pool, each chunk once per step" "$PYTHON_NUMPY" -c "
import json, sys
p = json.load(open('$T/stats.json'))['weights']['pools']
sys.exit(not ([x['chunk_size'] for x in p] == [2, 2] and
              all(x['bytes_moved'] == 2 * x['chunks'] * x['chunk_bytes'] for x in p)))"
finish
