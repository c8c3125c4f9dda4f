# Checkpoints as archives (--model-dir FILE): tar, tar.gz, tar.zst and zip of a tiny
# checkpoint, at the top or under one folder, single file or shards with an index (by
# either name; both names are refused), give a forward output byte-identical to the
# directory; hostile archives (a '..' member, an absolute name, a duplicate, a symbolic
# link, a truncated archive, a member declaring more than the cap) each fail with exit
# 1 and one line naming the archive and member.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch archive)
plan 23

tiny_forward_inputs "$T"
"$DITSTAR" forward --model-dir "$T/tiny" --inputs "$T/a.in" --output "$T/y.dir" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"

# same DESC ARCHIVE: forward from the archive gives the directory's y, byte for byte.
same() {
	rm -f "$T/y.arch"
	if ! "$DITSTAR" forward --model-dir "$2" --inputs "$T/a.in" --output "$T/y.arch" \
		2>"$T/err"; then
		fail "$1: ditstar forward failed"
		sed 's/^/# /' "$T/err"
	elif cmp -s "$T/y.dir" "$T/y.arch"; then
		ok "$1: y byte-identical to the directory"
	else
		fail "$1: y differs from the directory"
	fi
}

(cd "$T/tiny" && tar cf "$T/top.tar" .)
(cd "$T" && tar cf "$T/folder.tar" tiny)
(cd "$T" && tar czf "$T/folder.tar.gz" tiny)
(cd "$T/tiny" && tar czf "$T/top.tar.gz" config.json diffusion_pytorch_model.safetensors)
(cd "$T" && tar cf "$T/sharded.tar" sharded)
(cd "$T/sharded" && tar czf "$T/sharded.tar.gz" .)
# the index under transformers' name; then both names
cp -r "$T/sharded" "$T/tfidx"
mv "$T/tfidx/diffusion_pytorch_model.safetensors.index.json" \
	"$T/tfidx/model.safetensors.index.json"
(cd "$T" && tar czf "$T/tfidx.tar.gz" tfidx)
cp "$T/tfidx/model.safetensors.index.json" "$T/sharded/"
(cd "$T" && tar cf "$T/twoidx.tar" sharded)
rm "$T/sharded/model.safetensors.index.json"
# zip (stored and deflated) written by Python's zipfile
"$PYTHON_NUMPY" - "$T" <<'PY'
import os, sys, zipfile
t = sys.argv[1]
def mk(out, src, prefix, comp):
    with zipfile.ZipFile(out, 'w', comp) as z:
        if prefix:
            z.writestr(prefix + '/', '')
        for f in sorted(os.listdir(src)):
            z.write(os.path.join(src, f), (prefix + '/' if prefix else '') + f)
mk(t + '/top.zip', t + '/tiny', '', zipfile.ZIP_DEFLATED)
mk(t + '/folder.zip', t + '/tiny', 'tiny', zipfile.ZIP_STORED)
mk(t + '/sharded.zip', t + '/sharded', 'ck', zipfile.ZIP_DEFLATED)
mk(t + '/lzma.zip', t + '/tiny', '', zipfile.ZIP_LZMA)
PY

same "tar, members as ./NAME" "$T/top.tar"
same "tar under one folder" "$T/folder.tar"
same "tar.gz under one folder" "$T/folder.tar.gz"
same "tar.gz at the top" "$T/top.tar.gz"
same "sharded tar with index" "$T/sharded.tar"
same "sharded tar.gz with index" "$T/sharded.tar.gz"
same "zip at the top (deflated)" "$T/top.zip"
same "zip under one folder (stored)" "$T/folder.zip"
same "sharded zip with index" "$T/sharded.zip"
same "sharded tar.gz with model.safetensors.index.json" "$T/tfidx.tar.gz"
expect_fail "both index names in an archive are refused" 1 \
	"$T/twoidx.tar: both diffusion_pytorch_model.safetensors.index.json and model.safetensors.index.json are there" \
	"$DITSTAR" info --model-dir "$T/twoidx.tar"
if command -v zstd >/dev/null 2>&1; then
	(cd "$T" && tar cf - tiny | zstd -q -o "$T/folder.tar.zst")
	same "tar.zst under one folder" "$T/folder.tar.zst"
else
	ok "# SKIP tar.zst: no zstd command"
fi

if "$DITSTAR" info --model-dir "$T/sharded.tar" >"$T/info" 2>&1 &&
	grep -q "^checkpoint   $T/sharded.tar (2 files" "$T/info" &&
	grep -q "^num_layers   2" "$T/info"; then
	ok "info --model-dir ARCHIVE"
else
	fail "info --model-dir ARCHIVE"
	sed 's/^/# /' "$T/info"
fi

# Hostile archives: the good members plus one bad one.
# hostile NAME KIND: writes $T/NAME.tar
hostile() {
	"$PYTHON_NUMPY" - "$T" "$1" "$2" <<'PY'
import io, os, sys, tarfile
t, name, kind = sys.argv[1:4]
out = '%s/%s.tar' % (t, name)
with open(out, 'wb') as f:
    with tarfile.open(fileobj=f, mode='w', format=tarfile.PAX_FORMAT) as tar:
        for m in ('config.json', 'diffusion_pytorch_model.safetensors'):
            tar.add(os.path.join(t, 'tiny', m), 'ck/' + m)
        def add(n, data=b'x'):
            ti = tarfile.TarInfo(n)
            ti.size = len(data)
            tar.addfile(ti, io.BytesIO(data))
        if kind == 'dotdot':
            add('ck/../x')
        elif kind == 'absolute':
            add('/tmp/evil.safetensors')
        elif kind == 'duplicate':
            add('./ck//config.json', b'{}')
        elif kind == 'symlink':
            ti = tarfile.TarInfo('ck/link.safetensors')
            ti.type = tarfile.SYMTYPE
            ti.linkname = '/etc/passwd'
            tar.addfile(ti)
        elif kind == 'huge':
            ti = tarfile.TarInfo('ck/huge.safetensors')
            ti.size = 1 << 41
            f.write(ti.tobuf(tarfile.PAX_FORMAT))
            f.write(b'\0' * 4096)
            tar.fileobj = io.BytesIO()  # nothing more: the data never comes
        elif kind == 'bigconfig':
            ti = tarfile.TarInfo('config.json')
            ti.size = 65 << 20
            f.write(ti.tobuf(tarfile.PAX_FORMAT))
            f.write(b'\0' * 4096)
            tar.fileobj = io.BytesIO()
PY
}
hostile dotdot dotdot
expect_fail "member with '..' is refused" 1 "$T/dotdot.tar: member 'ck/../x' has a '..' component" \
	"$DITSTAR" info --model-dir "$T/dotdot.tar"
hostile absolute absolute
expect_fail "absolute member is refused" 1 \
	"$T/absolute.tar: member '/tmp/evil.safetensors' is an absolute path" \
	"$DITSTAR" info --model-dir "$T/absolute.tar"
hostile duplicate duplicate
expect_fail "duplicate name after normalising is refused" 1 \
	"$T/duplicate.tar: member 'ck/config.json' appears more than once" \
	"$DITSTAR" info --model-dir "$T/duplicate.tar"
hostile symlink symlink
expect_fail "symbolic link member is refused" 1 \
	"$T/symlink.tar: member 'ck/link.safetensors' is a symbolic link" \
	"$DITSTAR" forward --model-dir "$T/symlink.tar" --inputs "$T/a.in" --output "$T/y.bad"
hostile huge huge
expect_fail "shard declaring more than 1 TiB is refused" 1 \
	"$T/huge.tar: member 'ck/huge.safetensors' declares 2199023255552 bytes, more than the limit" \
	"$DITSTAR" info --model-dir "$T/huge.tar"
# LZMA (like XZ and BZip2) members are refused before decoding: the decoder would
# first allocate whatever dictionary size the member's header declares.
expect_fail "zip with LZMA members is refused, naming the member and the method" 1 \
	"$T/lzma.zip: member '.*' uses zip compression 'lzma' \\(only stored and deflate" \
	"$DITSTAR" info --model-dir "$T/lzma.zip"
hostile bigconfig bigconfig
expect_fail "config.json declaring more than 16 MiB is refused" 1 \
	"$T/bigconfig.tar: member 'config.json' declares 68157440 bytes, more than the limit of 16777216" \
	"$DITSTAR" info --model-dir "$T/bigconfig.tar"

size=$(stat -c %s "$T/folder.tar")
head -c $((size / 2)) "$T/folder.tar" >"$T/cut.tar"
expect_fail "truncated tar names the member" 1 \
	"$T/cut.tar: member 'tiny/diffusion_pytorch_model.safetensors' is truncated" \
	"$DITSTAR" forward --model-dir "$T/cut.tar" --inputs "$T/a.in" --output "$T/y.bad"
size=$(stat -c %s "$T/folder.tar.gz")
head -c $((size * 3 / 4)) "$T/folder.tar.gz" >"$T/cut.tar.gz"
expect_fail "truncated tar.gz names the archive and member" 1 \
	"$T/cut.tar.gz: (member '[^']*'|truncated or corrupt after member)" \
	"$DITSTAR" info --model-dir "$T/cut.tar.gz"
if [ ! -e "$T/y.bad" ]; then
	ok "nothing written on failure"
else
	fail "nothing written on failure"
fi
finish
