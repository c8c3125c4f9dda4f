# What StarPU and the sampler read from the outside world: bad StarPU variables (of
# StarPU's own list, and the worker id lists), StarPU's calibration folder (a file where
# a folder belongs, bus files garbage, cut short or a FIFO), a
# STARPU_HOME that is not a folder and a truncated performance model are one-line
# errors (StarPU itself aborts on each); the bus model stays across worker kinds; a resume state edited in its data or its
# step index is refused; forward refuses timesteps outside 0..1000 and never writes
# a non-finite output; sizes in bytes are range-checked before any cast; info counts
# parameters without overflowing.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch outside)
plan 31

G="$DITSTAR generate --model tiny-test --steps 1 --quiet --cache-dir $T/cache"
for v in STARPU_NCPU=-1 STARPU_NCUDA=-5 STARPU_LIMIT_CPU_MEM=-1 STARPU_CALIBRATE=abc; do
	expect_fail "$v is an error, not a StarPU abort" 1 "^ditstar: ${v%%=*}='${v#*=}': must be an integer" \
		env "$v" $G --output "$T/o"
done
# StarPU's own list of numeric variables (tests/test_starpu_vars checks each) and its
# worker id lists, through a run: one line before StarPU starts (it aborts, or with an
# id list of -1 crashes)
expect_fail "STARPU_WORKERS_CPUID=-1 is an error, not a crash" 1 \
	"^ditstar: STARPU_WORKERS_CPUID='-1': must be ids" env STARPU_WORKERS_CPUID=-1 $G --output "$T/o"
expect_fail "STARPU_SCHED_ALPHA=abc is an error, not a StarPU abort" 1 \
	"^ditstar: STARPU_SCHED_ALPHA='abc': must be a number" env STARPU_SCHED_ALPHA=abc $G --output "$T/o"
expect_fail "STARPU_BACKOFF_MAX=-1 is an error, not a StarPU abort" 1 \
	"^ditstar: STARPU_BACKOFF_MAX='-1': must be an integer" env STARPU_BACKOFF_MAX=-1 $G --output "$T/o"
expect_fail "STARPU_HOME naming a file is an error" 1 "STARPU_HOME=/dev/null is not a directory" \
	env STARPU_HOME=/dev/null $G --output "$T/o"

# a performance model cut short: named, with the command that resets it
H="$T/home"
mkdir -p "$H"
env STARPU_HOME="$H" $G --output "$T/o" 2>"$T/err" || sed 's/^/# /' "$T/err"

# StarPU's calibration folder as an input: a file where its folder belongs, a bus
# calibration file of this host garbage, cut mid-line, or a FIFO (StarPU aborts in
# starpu_init on each, or blocks): one line naming it and what to do, nothing hangs
B="$H/.starpu/sampling/bus"
host=$(ls "$B" 2>/dev/null | sed -n 's/\.config$//p' | head -1)
if [ -n "$host" ]; then
	for f in config affinity latency; do cp "$B/$host.$f" "$T/bus.$f"; done
	echo garbage >"$B/$host.config"
	expect_fail "a garbage bus .config is named, with its reset" 1 \
		"$B/$host.config: corrupt StarPU bus calibration.*rm '$B/$host'" \
		env STARPU_HOME="$H" $G --output "$T/o"
	cp "$T/bus.config" "$B/$host.config"
	printf '# GPU\tNUMA0\t\n0\t' >"$B/$host.affinity"
	expect_fail "a bus .affinity cut mid-line is named" 1 \
		"$B/$host.affinity: corrupt StarPU bus calibration \(line 2\)" \
		env STARPU_HOME="$H" $G --output "$T/o"
	cp "$T/bus.affinity" "$B/$host.affinity"
	rm "$B/$host.latency" && mkfifo "$B/$host.latency"
	expect_fail "a FIFO in place of a bus file is refused, not read" 1 \
		"$B/$host.latency: not a regular file" timeout 60 env STARPU_HOME="$H" $G --output "$T/o"
	rm "$B/$host.latency" && cp "$T/bus.latency" "$B/$host.latency"
	check "the calibration put back, the run goes" env STARPU_HOME="$H" $G --output "$T/o"
else
	for i in 1 2 3 4; do
		dit_n=$((dit_n + 1))
		echo "ok $dit_n # SKIP no bus calibration written under $H"
	done
fi
mkdir -p "$T/h2" && : >"$T/h2/.starpu"
expect_fail "a file where StarPU's folder belongs is named" 1 \
	"$T/h2/.starpu is not a folder \(StarPU keeps its calibration there\)" \
	env STARPU_HOME="$T/h2" $G --output "$T/o"
# a STARPU_HOME on a read-only or a full file system (tmpfs mounts, where allowed; root
# passes access() checks but not a read-only mount): one line naming the folder, before
# StarPU starts (StarPU aborts when it cannot save its calibration)
mkdir -p "$T/rohome" "$T/fullhome"
if mount -t tmpfs -o size=1m,ro tmpfs "$T/rohome" 2>/dev/null; then
	expect_fail "a read-only STARPU_HOME is named" 1 \
		"$T/rohome: Read-only file system \(StarPU saves its calibration there\)" \
		env STARPU_HOME="$T/rohome" $G --output "$T/o"
	umount "$T/rohome"
	mount -t tmpfs -o size=1m tmpfs "$T/fullhome"
	mkdir -p "$T/fullhome/.starpu"
	dd if=/dev/zero of="$T/fullhome/fill" bs=64k 2>/dev/null
	expect_fail "a STARPU_HOME with no room left is named" 1 \
		"$T/fullhome/.starpu: no room left \(StarPU saves its calibration there\)" \
		env STARPU_HOME="$T/fullhome" $G --output "$T/o"
	umount "$T/fullhome"
else
	ok "a read-only STARPU_HOME is named # SKIP cannot mount a tmpfs here"
	ok "a STARPU_HOME with no room left is named # SKIP cannot mount a tmpfs here"
fi
m=$(ls "$H"/.starpu/sampling/codelets/*/dit_linear.* 2>/dev/null | head -1)
if [ -n "$m" ]; then
	head -c 200 "$m" >"$T/cut" && cp "$T/cut" "$m"
	expect_fail "a truncated performance model is named, with its reset" 1 \
		"$m: corrupt StarPU performance model.*rm '$m'" env STARPU_HOME="$H" $G --output "$T/o"
	rm -f "$m"
	check "once removed, the run recalibrates" env STARPU_HOME="$H" $G --output "$T/o"
	# Another process saving that model: StarPU 1.4 unlocks the file before fclose
	# writes its last buffer, so a reader may see it cut short for a moment. Here the
	# file is cut and write-locked, ditstar's check blocks on the lock (seen in
	# /proc/locks), reads the cut file once the lock goes, and the whole file is back
	# 50 ms later: the run must read it again, not call it corrupt.
	if "$PYTHON_NUMPY" - "$m" "$T/err" env STARPU_HOME="$H" $G --output "$T/o" <<'PY'; then
import fcntl, os, subprocess, sys, time
m, errpath, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
whole = open(m, 'rb').read()
f = open(m, 'r+b')
fcntl.lockf(f, fcntl.LOCK_EX)
f.truncate(200)
f.flush()
ino = ':%d ' % os.fstat(f.fileno()).st_ino
p = subprocess.Popen(cmd, stderr=open(errpath, 'w'))
t0 = time.time()
while p.poll() is None and time.time() - t0 < 120:
    if any('->' in l and ino in l for l in open('/proc/locks')):
        break
    time.sleep(0.005)
else:
    sys.exit('no reader ever waited on the lock (rc %s)' % p.poll())
fcntl.lockf(f, fcntl.LOCK_UN)
time.sleep(0.05)
f.seek(0)
f.write(whole)
f.flush()
f.close()
sys.exit(p.wait())
PY
		ok "a model cut short for a moment (another process saving it) is read again"
	else
		fail "a model cut short for a moment (another process saving it) is read again"
		sed 's/^/# /' "$T/err"
	fi
else
	fail "the first run wrote StarPU performance models in $H"
	fail "(no model to truncate)"
	fail "(no model to cut for a moment)"
fi

# ditstar calibrate under a fresh STARPU_HOME: the first round runs uncalibrated tasks,
# the counts fall, the folders are named; a run after it reports its models calibrated
# (or nearly: the once-a-run tasks) in the stats, a run on a fresh home does not
C="$T/calhome"
mkdir -p "$C"
env STARPU_HOME="$C" "$DITSTAR" calibrate --model tiny-test --cache-dir "$T/cache" \
	--steps 3 >"$T/cal.out" 2>"$T/err" || sed 's/^/# /' "$T/err"
env STARPU_HOME="$C" $G --steps 3 --stats-json "$T/cal.json" --output "$T/o" 2>/dev/null
env STARPU_HOME="$T/fresh" $G --steps 3 --stats-json "$T/fresh.json" --output "$T/o" \
	2>/dev/null
check "calibrate: rounds until the models have estimates; the stats say so" \
	"$PYTHON_NUMPY" - "$T/cal.out" "$T/cal.json" "$T/fresh.json" "$C" <<'PY'
import json, re, sys
out = open(sys.argv[1]).read()
rounds = [(int(u), int(n)) for u, n in re.findall(r'round \d+: (\d+) of (\d+) compute', out)]
print('#', rounds)
assert rounds and rounds[0][0] > 0 and rounds[-1][0] * 20 <= rounds[-1][1], rounds
assert rounds[-1][0] < rounds[0][0], rounds
assert 'models: %s/.starpu/sampling/codelets' % sys.argv[4] in out, out
assert out.rstrip().splitlines()[-1].startswith('calibrated'), out
cal, fresh = json.load(open(sys.argv[2]))['perfmodels'], json.load(open(sys.argv[3]))['perfmodels']
assert cal['uncalibrated_tasks'] * 20 <= cal['tasks'], cal
assert not fresh['calibrated'] and fresh['uncalibrated_tasks'] > cal['uncalibrated_tasks'], fresh
PY
expect_fail "calibrate --rounds 0: a usage error" 2 "--rounds needs an integer from 1 to 100" \
	"$DITSTAR" calibrate --model tiny-test --rounds 0

# resume states carry a checksum over their data, fingerprint and next step
$G --steps 3 --state "$T/s" --output "$T/full" 2>"$T/err" || sed 's/^/# /' "$T/err"
edit() {
	"$PYTHON_NUMPY" - "$T/s" "$1" "$2" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
src, dst, what = sys.argv[1:4]
meta = st.load_metadata(src)
t = st.load(src)
if what == 'data':
    t['m0'] = t['m0'].copy()
    t['m0'].view(np.uint32)[5] ^= 1  # one bit of one value
else:
    meta = dict(meta, next_step=str(int(meta['next_step']) - 1))
st.save(dst, t, metadata=meta)
PY
}
edit "$T/s.data" data
edit "$T/s.step" step
check "the untouched state resumes" $G --steps 3 --resume "$T/s" --output "$T/r"
expect_fail "a state with one flipped bit is refused" 1 "$T/s.data: resume state damaged" \
	$G --steps 3 --resume "$T/s.data" --output "$T/r1"
expect_fail "a state whose step index was changed is refused" 1 "$T/s.step: resume state damaged" \
	$G --steps 3 --resume "$T/s.step" --output "$T/r2"

# forward: timesteps in 0..1000, outputs finite
ref make-tiny --output-dir "$T/m" --seed 5 --layers 2 >/dev/null
inputs() {
	"$PYTHON_NUMPY" - "$1" "$2" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
r = np.random.default_rng(3)
st.save(sys.argv[1], {'x': r.standard_normal((4, 3, 4, 6)).astype(np.float32),
                      't': np.array([float(sys.argv[2])], dtype=np.float32),
                      'context': r.standard_normal((5, 24)).astype(np.float32)})
PY
}
inputs "$T/tnan" nan
inputs "$T/tbig" 1500
expect_fail "forward refuses a NaN timestep" 1 "tnan: tensor 't'\[0\] is nan: the inputs must be finite" \
	"$DITSTAR" forward --model-dir "$T/m" --inputs "$T/tnan" --output "$T/y1"
expect_fail "forward refuses a timestep above 1000" 1 "tensor 't'\[0\] is 1500" \
	"$DITSTAR" forward --model-dir "$T/m" --inputs "$T/tbig" --output "$T/y2"
# a finite context too large for fp32 arithmetic gives a non-finite output: refused,
# nothing written (a NaN input is refused when read)
"$PYTHON_NUMPY" - "$T/cnan" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
r = np.random.default_rng(3)
c = r.standard_normal((5, 24)).astype(np.float32)
c[:, :] = 3e38
st.save(sys.argv[1], {'x': r.standard_normal((4, 3, 4, 6)).astype(np.float32),
                      't': np.array([500.0], dtype=np.float32), 'context': c})
PY
expect_fail "forward never writes a non-finite output" 1 "the output holds [0-9]+ NaN or Inf values" \
	"$DITSTAR" forward --model-dir "$T/m" --inputs "$T/cnan" --output "$T/y3"
if [ ! -e "$T/y3" ]; then ok "nothing written for a non-finite output"; else fail "nothing written for a non-finite output"; fi

# sizes: range-checked before the cast to bytes
expect_fail "--host-mem-limit beyond 1 EiB is refused" 2 "--host-mem-limit needs a size" \
	$G --offload disk --host-mem-limit 1e15 --output "$T/o"
mkdir -p "$T/huge"
cat >"$T/huge/config.json" <<'JSON'
{"model_type": "t2v", "dim": 1048576, "eps": 1e-6, "ffn_dim": 1048576, "freq_dim": 256,
 "in_dim": 16, "out_dim": 16, "num_heads": 8192, "num_layers": 1048576, "text_len": 512}
JSON
"$PYTHON_NUMPY" -c "import sys; sys.path.insert(0, sys.argv[1]); import numpy as np, safetensors_np as st; st.save(sys.argv[2], {'x': np.zeros(1, np.float32)})" \
	"$top_srcdir/tests/ref" "$T/huge/diffusion_pytorch_model.safetensors"
expect_fail "sizes whose parameter count overflows 64 bits are refused" 1 \
	"huge/config.json: the sizes of config.json overflow 64 bits" "$DITSTAR" info --model-dir "$T/huge"
# sizes that fit 64 bits but not this machine, on a file that holds none of it: the
# missing tensor is named, not "out of memory" (the shapes are checked first)
mkdir -p "$T/big"
cat >"$T/big/config.json" <<'JSON'
{"model_type": "t2v", "dim": 65536, "eps": 1e-6, "ffn_dim": 262144, "freq_dim": 256,
 "in_dim": 16, "out_dim": 16, "num_heads": 512, "num_layers": 400, "text_len": 512}
JSON
cp "$T/huge/diffusion_pytorch_model.safetensors" "$T/big/"
# StarPU's bus model is per machine: once an OpenCL run counted the CPU-type OpenCL
# device (PoCL), switching --workers between cpu and opencl keeps it (StarPU measures
# the bus again whenever the device counts differ from its file's: every run counts it
# from then on)
if $G --workers opencl --output "$T/o" 2>/dev/null; then
	Gb="env STARPU_HOME=$T/hb $G --output $T/o"
	$Gb --workers cpu 2>"$T/err" || sed 's/^/# /' "$T/err"
	$Gb --workers opencl 2>"$T/err" || sed 's/^/# /' "$T/err"
	sums() { (cd "$T/hb/.starpu/sampling/bus" && ls --full-time && cat ./*) | md5sum; }
	first=$(sums)
	for w in cpu opencl cpu opencl cpu; do
		$Gb --workers $w 2>"$T/err" || sed 's/^/# /' "$T/err"
	done
	check "--workers cpu, opencl, cpu, ...: the bus model (with OpenCL) never measured again" \
		test "$first" = "$(sums)"
else
	ok "the bus model across --workers # SKIP no OpenCL device"
fi
expect_fail "absurd sizes on a small file: the missing tensor named before any allocation" 1 \
	"big: tensor 'patch_embedding.weight' missing \\(config.json implies it: 400 blocks, dim 65536\\)" \
	"$DITSTAR" generate --model-dir "$T/big" --quiet --output "$T/never"
finish
