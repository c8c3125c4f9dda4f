# Inputs from the outside world: no hang, crash or unbounded memory, one line each.
# FIFOs (and a directory, a device) named as a shard, config.json, the index, an
# archive or a run input are refused by name; a zip or tar.gz bomb is not inflated;
# huge safetensors headers and indexes are refused before parsing with bounded
# memory; names with ESC and newline are printed escaped.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch inputs)
plan 31

tiny_forward_inputs "$T"
# every run is bounded: a hang shows as exit code 124, never as a stuck suite (a hang
# guard wide enough for the sanitized build on a loaded machine, not a speed bound)
D="timeout 120 $DITSTAR"
G="generate --quiet --model-dir $T/tiny --frames 9 --height 64 --width 96 --steps 1"

# --- FIFOs, a directory, a device ---
mkfifo "$T/fifo"
# $D splits into timeout, its limit and ditstar on purpose
# shellcheck disable=SC2086
{
	expect_fail "--inputs FIFO refused by name" 1 "$T/fifo: is a FIFO, not a regular file" \
		$D forward --model-dir "$T/tiny" --inputs "$T/fifo" --output "$T/y"
	expect_fail "--context FIFO refused by name" 1 "$T/fifo: is a FIFO, not a regular file" \
		$D $G --context "$T/fifo" --output "$T/y"
	expect_fail "--noise FIFO refused by name" 1 "$T/fifo: is a FIFO, not a regular file" \
		$D $G --noise "$T/fifo" --output "$T/y"
	expect_fail "--image-latent FIFO refused by name" 1 "$T/fifo: is a FIFO, not a regular file" \
		$D generate --quiet --model tiny-ti2v-5b --steps 1 --image-latent "$T/fifo" --output "$T/y"
	expect_fail "--resume FIFO refused by name" 2 "$T/fifo: is a FIFO, not a regular file" \
		$D $G --resume "$T/fifo" --output "$T/y"
	expect_fail "--inputs directory refused by name" 1 "$T/tiny: is a directory, not a regular file" \
		$D forward --model-dir "$T/tiny" --inputs "$T/tiny" --output "$T/y"
	expect_fail "--inputs /dev/zero refused by name" 1 "/dev/zero: is a character device, not a regular file" \
		$D forward --model-dir "$T/tiny" --inputs /dev/zero --output "$T/y"
}
# a checkpoint directory whose files are FIFOs
mkdir "$T/fcfg" "$T/fshard" "$T/findex" "$T/fsharded"
mkfifo "$T/fcfg/config.json"
cp "$T/tiny/diffusion_pytorch_model.safetensors" "$T/fcfg/"
cp "$T/tiny/config.json" "$T/fshard/"
mkfifo "$T/fshard/diffusion_pytorch_model.safetensors"
cp "$T/tiny/config.json" "$T/tiny/diffusion_pytorch_model.safetensors" "$T/findex/"
mkfifo "$T/findex/diffusion_pytorch_model.safetensors.index.json"
cp "$T/sharded/"* "$T/fsharded/"
shard=$(cd "$T/fsharded" && ls -- *-00002-*.safetensors)
rm "$T/fsharded/$shard"
mkfifo "$T/fsharded/$shard"
# shellcheck disable=SC2086
{
	expect_fail "config.json FIFO refused by name" 1 "fcfg/config.json: is a FIFO, not a regular file" \
		$D info --model-dir "$T/fcfg"
	expect_fail "single shard FIFO refused by name" 1 \
		"fshard/diffusion_pytorch_model.safetensors: is a FIFO, not a regular file" \
		$D info --model-dir "$T/fshard"
	expect_fail "index FIFO refused by name" 1 "findex/diffusion_pytorch_model.safetensors.index.json: is a FIFO" \
		$D info --model-dir "$T/findex"
	expect_fail "indexed shard FIFO refused by name" 1 "fsharded/$shard: is a FIFO, not a regular file" \
		$D info --model-dir "$T/fsharded"
	expect_fail "--model-dir FIFO refused by name" 1 "$T/fifo: not a directory or an archive" \
		$D info --model-dir "$T/fifo"
}

# --- archive bombs: members the model does not need are never inflated ---
# peak RSS of a command in KiB (GNU time), or empty without /usr/bin/time
peak_kib() {
	/usr/bin/time -f '%M' -o "$T/rss" "$@" >/dev/null 2>"$T/bomb.err"
	rc=$?
	tail -n 1 "$T/rss"
	return $rc
}
"$PYTHON_NUMPY" - "$T" <<'PY'
import io, os, sys, tarfile, zipfile
t = sys.argv[1]
zero = bytes(1 << 20)
# 1 GiB of zeros deflates to about 1 MB
def bomb(z, name):
    with z.open(name, 'w', force_zip64=True) as w:
        for _ in range(1024):
            w.write(zero)
with zipfile.ZipFile(t + '/unused.zip', 'w', zipfile.ZIP_DEFLATED) as z:
    for f in ('config.json', 'diffusion_pytorch_model.safetensors'):
        z.write(os.path.join(t, 'tiny', f), 'ck/' + f)
    bomb(z, 'ck/junk.bin')
# the model's one safetensors is the bomb: its declared size breaks the ratio cap
with zipfile.ZipFile(t + '/needed.zip', 'w', zipfile.ZIP_DEFLATED) as z:
    z.write(os.path.join(t, 'tiny', 'config.json'), 'config.json')
    bomb(z, 'diffusion_pytorch_model.safetensors')
# a tar.gz whose stream inflates 1000:1 (an unused member: the stream must be read)
with tarfile.open(t + '/bomb.tar.gz', 'w:gz', compresslevel=1) as tar:
    for f in ('config.json', 'diffusion_pytorch_model.safetensors'):
        tar.add(os.path.join(t, 'tiny', f), 'ck/' + f)
    ti = tarfile.TarInfo('ck/junk.bin')
    ti.size = 1 << 30
    class Zeros(io.RawIOBase):
        def __init__(self): self.left = 1 << 30
        def readable(self): return True
        def readinto(self, b):
            n = min(len(b), self.left); b[:n] = bytes(n); self.left -= n; return n
    tar.addfile(ti, io.BufferedReader(Zeros(), 1 << 20))
PY
if [ -x /usr/bin/time ]; then
	base=$(peak_kib "$DITSTAR" info --model-dir "$T/tiny")
	if kib=$(peak_kib "$DITSTAR" info --model-dir "$T/unused.zip") &&
		[ $((kib - base)) -lt 65536 ]; then
		ok "zip with an unused 1 GiB member: info runs, RSS +$((kib - base)) KiB"
	else
		fail "zip with an unused 1 GiB member: rc $?, RSS $kib KiB (base $base)"
		sed 's/^/# /' "$T/bomb.err"
	fi
	# refused_small DESC ARCHIVE PATTERN: info refuses ARCHIVE in one line matching
	# PATTERN, within 64 MiB of the baseline's peak memory
	refused_small() {
		if kib=$(peak_kib "$DITSTAR" info --model-dir "$2"); then
			fail "$1: accepted"
		elif [ $((kib - base)) -lt 65536 ] && [ "$(wc -l <"$T/bomb.err")" -eq 1 ] &&
			grep -q "$3" "$T/bomb.err"; then
			ok "$1 refused with the numbers, RSS +$((kib - base)) KiB"
		else
			fail "$1: RSS $kib KiB (base $base)"
			sed 's/^/# /' "$T/bomb.err"
		fi
	}
	refused_small "zip bomb as the model's safetensors" "$T/needed.zip" \
		"needed.zip: member 'diffusion_pytorch_model.safetensors' declares 1073741824 bytes to decompress into memory, over the compression ratio limit"
	refused_small "tar.gz bomb" "$T/bomb.tar.gz" \
		"bomb.tar.gz: compressed stream inflates [0-9]* bytes from [0-9]* (at member 'ck/junk.bin'), over the limit of 100 times"
else
	ok "# SKIP zip bombs: no /usr/bin/time"
	ok "# SKIP zip bombs: no /usr/bin/time"
	ok "# SKIP zip bombs: no /usr/bin/time"
fi
# a sharded zip: only the shards the index names are loaded, an extra one is not
"$PYTHON_NUMPY" - "$T" <<'PY'
import os, sys, zipfile
t = sys.argv[1]
with zipfile.ZipFile(t + '/extra.zip', 'w', zipfile.ZIP_DEFLATED) as z:
    for f in sorted(os.listdir(t + '/sharded')):
        z.write(os.path.join(t, 'sharded', f), f)
    z.writestr('unlisted.safetensors', b'not a safetensors file')
PY
check "sharded zip: a shard the index does not name is not read" \
	"$DITSTAR" info --model-dir "$T/extra.zip"

# --- huge headers and indexes: refused before parsing, bounded memory ---
"$PYTHON_NUMPY" - "$T" <<'PY'
import os, shutil, struct, sys
t = sys.argv[1]
def st(path, header):
    h = header.encode()
    open(path, 'wb').write(struct.pack('<Q', len(h)) + h)
for d in ('h60', 'h16', 'hmeta', 'idx'):
    os.makedirs(t + '/' + d)
    shutil.copy(t + '/tiny/config.json', t + '/' + d)
# a million entries, 60 MB
st(t + '/h60/diffusion_pytorch_model.safetensors', '{' + ','.join(
    '"t%d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}' % i for i in range(1000000)) + '}')
# within the byte cap, 1.2 million tiny entries
st(t + '/h16/diffusion_pytorch_model.safetensors',
   '{' + ','.join('"%d":{}' % i for i in range(1200000)) + '}')
# __metadata__ with a million keys
st(t + '/hmeta/diffusion_pytorch_model.safetensors',
   '{"__metadata__":{' + ','.join('"k%d":"v"' % i for i in range(1000000)) + '}}')
# an index of 600 000 names
open(t + '/idx/diffusion_pytorch_model.safetensors.index.json', 'w').write(
    '{"weight_map": {%s}}' % ','.join('"w%d": "a.safetensors"' % i for i in range(550000)))
PY
# huge NAME PATTERN DESC: refused in one line, within 64 MiB over the base (and the
# 120 s hang guard)
huge() {
	if [ ! -x /usr/bin/time ]; then
		ok "# SKIP $3: no /usr/bin/time"
		return
	fi
	start=$(date +%s)
	if kib=$(peak_kib timeout 120 "$DITSTAR" info --model-dir "$T/$1"); then
		fail "$3: accepted"
	elif [ $((kib - base)) -lt 65536 ] && [ "$(wc -l <"$T/bomb.err")" -eq 1 ] &&
		grep -Eq -- "$2" "$T/bomb.err"; then
		ok "$3: refused in $(($(date +%s) - start)) s, RSS +$((kib - base)) KiB"
	else
		fail "$3: RSS $kib KiB (base $base)"
		sed 's/^/# /' "$T/bomb.err"
	fi
}
huge h60 "h60/diffusion_pytorch_model.safetensors: header length 58888891 exceeds the 16777216-byte limit" \
	"safetensors header of 60 MB, a million entries"
huge h16 "h16/diffusion_pytorch_model.safetensors: more than 65537 header entries" \
	"safetensors header of 1.2 million entries under 16 MiB"
huge hmeta "hmeta/diffusion_pytorch_model.safetensors: an object below the top level has more than 4096 members" \
	"__metadata__ of a million keys"
huge idx "idx/diffusion_pytorch_model.safetensors.index.json: an object below the top level has more than 524288 members" \
	"index of 550 000 names"

# --- names from files are printed escaped: no ESC, no newline on the terminal ---
"$PYTHON_NUMPY" - "$T" <<'PY'
import io, os, shutil, sys, tarfile
t = sys.argv[1]
bad = '\x1b[31m\nX'
cfg = open(t + '/tiny/config.json', 'rb').read()
def add(tar, name, data):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    tar.addfile(ti, io.BytesIO(data))
# a folder named with ESC and newline holding a malformed shard
with tarfile.open(t + '/esc_folder.tar', 'w', format=tarfile.PAX_FORMAT) as tar:
    add(tar, 'ck' + bad + '/config.json', cfg)
    add(tar, 'ck' + bad + '/diffusion_pytorch_model.safetensors', b'\x02\0\0\0\0\0\0\0{]')
# a member named with them (a symbolic link, refused)
with tarfile.open(t + '/esc_member.tar', 'w', format=tarfile.PAX_FORMAT) as tar:
    add(tar, 'config.json', cfg)
    ti = tarfile.TarInfo('a' + bad + '.safetensors')
    ti.type = tarfile.SYMTYPE
    ti.linkname = 'x'
    tar.addfile(ti)
# a directory whose index names such a shard, present and malformed
d = t + '/esc_dir'
os.makedirs(d)
shutil.copy(t + '/tiny/config.json', d)
shard = 's' + bad + '.safetensors'
open(os.path.join(d, shard), 'wb').write(b'\x02\0\0\0\0\0\0\0{]')
open(d + '/diffusion_pytorch_model.safetensors.index.json', 'w').write(
    '{"weight_map": {"patch_embedding.weight": "%s"}}' % shard.replace('\x1b', '\\u001b').replace('\n', '\\n'))
# the shard of a directory with such a name whose tensor has the wrong shape
e = t + '/esc_shape'
os.makedirs(e)
shutil.copy(t + '/tiny/config.json', e)
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
st.save(os.path.join(e, 'w' + bad + '.safetensors'),
        {'patch_embedding.weight': np.zeros((1, 1), dtype=np.float32)})
PY
esc=$(printf '\033')
expect_fail "archive folder name escaped" 1 \
	"esc_folder.tar:ck\\\\x1b\\[31m\\\\x0aX/diffusion_pytorch_model.safetensors: not valid JSON" \
	"$DITSTAR" info --model-dir "$T/esc_folder.tar"
expect_fail "archive member name escaped" 1 \
	"esc_member.tar: member 'a\\\\x1b\\[31m\\\\x0aX.safetensors' is a symbolic link" \
	"$DITSTAR" info --model-dir "$T/esc_member.tar"
expect_fail "shard file name from the index escaped" 1 \
	"esc_dir/s\\\\x1b\\[31m\\\\x0aX.safetensors: not valid JSON" \
	"$DITSTAR" info --model-dir "$T/esc_dir"
expect_fail "shard file name escaped in a shape error" 1 \
	"esc_shape/w\\\\x1b\\[31m\\\\x0aX.safetensors: tensor 'patch_embedding.weight' has shape" \
	"$DITSTAR" info --model-dir "$T/esc_shape"
for c in esc_folder.tar esc_member.tar esc_dir esc_shape; do
	"$DITSTAR" info --model-dir "$T/$c" 2>"$T/esc.err" >/dev/null
	if grep -q "$esc" "$T/esc.err"; then
		fail "$c: no raw ESC in the message"
	else
		ok "$c: no raw ESC in the message"
	fi
done
# --- non-finite values in a run input: refused before any work, naming the tensor ---
"$PYTHON_NUMPY" - "$T/nan.in" "$T/inf.ctx" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
r = np.random.default_rng(7)
x = r.standard_normal((4, 3, 8, 12)).astype(np.float32)
x[1, 2, 3, 4] = np.nan
st.save(sys.argv[1], {'x': x, 't': np.array([713.0], dtype=np.float32),
                      'context': r.standard_normal((5, 24)).astype(np.float32)})
c = r.standard_normal((5, 24)).astype(np.float32)
c[2, 7] = np.inf
st.save(sys.argv[2], {'context': c, 'context_null': np.zeros((5, 24), np.float32)})
PY
"$PYTHON_NUMPY" - "$T/long.in" <<'PY'
import os, sys
sys.path.insert(0, os.environ['top_srcdir'] + '/tests/ref')
import numpy as np, safetensors_np as st
r = np.random.default_rng(7)
st.save(sys.argv[1], {'x': r.standard_normal((4, 3, 8, 12)).astype(np.float32),
                      't': np.array([713.0], dtype=np.float32),
                      'context': r.standard_normal((1000, 24)).astype(np.float32)})
PY
expect_fail "forward: more context rows than the model's text_len refused, not cut" 1 \
	"long.in: tensor 'context' has 1000 rows, more than the model's [0-9]+ \\(text_len; ditstar-encode --text-len [0-9]+ makes one it takes\\)" \
	$DITSTAR forward --model-dir "$T/tiny" --inputs "$T/long.in" --output "$T/never"
expect_fail "forward: a NaN in x refused, naming the tensor and the index" 1 \
	"nan.in: tensor 'x'\\[520\\] is nan: the inputs must be finite" \
	$DITSTAR forward --model-dir "$T/tiny" --inputs "$T/nan.in" --output "$T/never"
expect_fail "generate: an Inf in --context refused before the first step" 1 \
	"inf.ctx: tensor 'context'\\[55\\] is inf: the inputs must be finite" \
	$DITSTAR $G --context "$T/inf.ctx" --output "$T/never"
finish
