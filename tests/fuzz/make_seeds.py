#!/usr/bin/env python3
"""Writes the seed corpora of fuzz_index, fuzz_archive, fuzz_pickle, fuzz_ptzip and
fuzz_gguf, and a safetensors seed with a name to escape (tests/fuzz/corpus/...).

Standard library only (zstd command for the .tar.zst seed, skipped without it; the
torch checkpoints come from tests/ref/pt_write.py's zip and pickle writers):
    python3 tests/fuzz/make_seeds.py
The archives hold a tiny checkpoint: config.json and a safetensors file of a few F32
tensors, or two shards and their index. Deterministic (fixed mtimes, names, owners)."""
import io, json, os, shutil, struct, subprocess, sys, tarfile, zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'ref'))
import pt_write as ptw  # noqa: E402 (its zip and pickle writers: standard library only)
IDX = 'diffusion_pytorch_model.safetensors.index.json'
SH1 = 'diffusion_pytorch_model-00001-of-00002.safetensors'
SH2 = 'diffusion_pytorch_model-00002-of-00002.safetensors'
CONFIG = json.dumps({
    '_class_name': 'WanModel', 'dim': 64, 'eps': 1e-06, 'ffn_dim': 128, 'freq_dim': 16,
    'in_dim': 16, 'model_type': 't2v', 'num_heads': 4, 'num_layers': 1, 'out_dim': 16,
    'text_len': 512, 'window_size': [-1, -1], 'qk_norm': True, 'cross_attn_norm': True,
    'text_dim': 32, 'patch_size': [1, 2, 2]}).encode()


def safetensors(tensors):
    """tensors: [(name, shape)] as F32 counting up."""
    header, data = {}, b''
    for name, shape in tensors:
        n = 1
        for d in shape:
            n *= d
        blob = struct.pack('<%df' % n, *range(n))
        header[name] = {'dtype': 'F32', 'shape': shape,
                        'data_offsets': [len(data), len(data) + len(blob)]}
        data += blob
    header['__metadata__'] = {'format': 'pt'}
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * (-len(h) % 8)
    return struct.pack('<Q', len(h)) + h + data


SINGLE = [('patch_embedding.weight', [4, 2]), ('patch_embedding.bias', [4]),
          ('head.head.weight', [2, 4])]
SHARD1 = SINGLE[:2]
SHARD2 = SINGLE[2:]
INDEX = json.dumps({'metadata': {'total_size': 64}, 'weight_map': dict(
    [(n, SH1) for n, _ in SHARD1] + [(n, SH2) for n, _ in SHARD2])}, indent=2).encode()

TINY = [('config.json', CONFIG),
        ('diffusion_pytorch_model.safetensors', safetensors(SINGLE))]
SHARDED = [('config.json', CONFIG), (IDX, INDEX), (SH1, safetensors(SHARD1)),
           (SH2, safetensors(SHARD2))]


def tar(members, prefix='', fmt=tarfile.GNU_FORMAT, dirs=False, extra=None):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w', format=fmt) as t:
        if dirs and prefix:
            ti = tarfile.TarInfo(prefix.rstrip('/'))
            ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 1700000000
            t.addfile(ti)
        for n, data in members:
            ti = tarfile.TarInfo(prefix + n)
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 1700000000
            t.addfile(ti, io.BytesIO(data))
        if extra:
            extra(t)
    return buf.getvalue()


def gz(data):
    import gzip
    return gzip.compress(data, 9, mtime=0)


def zst(data):
    if not shutil.which('zstd'):
        return None
    return subprocess.run(['zstd', '-q', '-19', '-c'], input=data, stdout=subprocess.PIPE,
                          check=True).stdout


def zipped(members, prefix='', comp=zipfile.ZIP_DEFLATED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w', comp) as z:
        if prefix:
            z.writestr(zipfile.ZipInfo(prefix, (2024, 1, 1, 0, 0, 0)), b'')
        for n, data in members:
            z.writestr(zipfile.ZipInfo(prefix + n, (2024, 1, 1, 0, 0, 0)), data,
                       compress_type=comp)
    return buf.getvalue()


def add_file(t, name, data=b'x'):
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime = len(data), 1700000000
    t.addfile(ti, io.BytesIO(data))


def add_link(t, name, target, kind):
    ti = tarfile.TarInfo(name)
    ti.type, ti.linkname, ti.mtime = kind, target, 1700000000
    t.addfile(ti)


def write(corpus, name, data):
    if data is None:
        return
    d = os.path.join(HERE, 'corpus', corpus)
    os.makedirs(d, exist_ok=True)
    assert len(data) < 64 << 10, (name, len(data))
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def main():
    # ---- fuzz_index
    wi = lambda n, s: write('fuzz_index', n, s if isinstance(s, bytes) else s.encode())
    wi('valid_single', '{"weight_map":{"a":"model.safetensors","b":"model.safetensors"}}')
    wi('valid_sharded_metadata', INDEX)
    wi('valid_three_shards', json.dumps({'metadata': {'total_size': 1234, 'format': 'pt'},
                                         'weight_map': {'blocks.%d.w' % i: 's%d.safetensors' % (i % 3)
                                                        for i in range(9)}}))
    wi('valid_unicode', '{"weight_map":{"\\u00e9t\\u00e9":"\\u00e9.safetensors","x":"a b"}}')
    wi('invalid_empty_map', '{"weight_map":{}}')
    wi('invalid_no_map', '{"metadata":{"total_size":0}}')
    wi('invalid_map_array', '{"weight_map":["a.safetensors"]}')
    wi('invalid_value_number', '{"weight_map":{"a":1}}')
    wi('invalid_dotdot', '{"weight_map":{"a":"../model.safetensors"}}')
    wi('invalid_absolute', '{"weight_map":{"a":"/etc/passwd"}}')
    wi('invalid_dot', '{"weight_map":{"a":"."}}')
    wi('invalid_nul', '{"weight_map":{"a":"x\\u0000.safetensors"}}')
    wi('invalid_duplicate_key', '{"weight_map":{"a":"x.safetensors","a":"y.safetensors"}}')
    wi('invalid_trailing', '{"weight_map":{"a":"x.safetensors"}} x')
    wi('invalid_not_object', '["weight_map"]')
    wi('invalid_truncated', '{"weight_map":{"a":"x.safe')
    wi('valid_control_chars', '{"weight_map":{"\\u001b[2J":"a\\u001b]0;x\\u0007\\n.safetensors"}}')
    wi('invalid_top_members', '{' + ','.join('"m%d":0' % i for i in range(65)) +
       ',"weight_map":{"a":"x.safetensors"}}')

    # ---- fuzz_safetensors: a name to escape
    def st_header(h):
        h = h.encode()
        return struct.pack('<Q', len(h)) + h
    ws = lambda n, s: write('fuzz_safetensors', n, s)
    ws('valid_escaped_name', st_header(
        '{"\\u001b[31m\\nx":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}'))
    # fp8 weights with ComfyUI's scales (scale_weight; weight_scale and comfy_quant)
    q = b'{"format": "float8_e5m2"}'
    ws('valid_fp8_scaled', st_header(json.dumps({
        'a.weight': {'dtype': 'F8_E4M3', 'shape': [2, 4], 'data_offsets': [0, 8]},
        'a.scale_weight': {'dtype': 'F32', 'shape': [], 'data_offsets': [8, 12]},
        'b.weight': {'dtype': 'F8_E5M2', 'shape': [4], 'data_offsets': [12, 16]},
        'b.weight_scale': {'dtype': 'F32', 'shape': [1], 'data_offsets': [16, 20]},
        'b.comfy_quant': {'dtype': 'U8', 'shape': [len(q)], 'data_offsets': [20, 20 + len(q)]},
        'scaled_fp8': {'dtype': 'F8_E4M3', 'shape': [0], 'data_offsets': [20 + len(q)] * 2}},
        separators=(',', ':'))) + bytes(range(0x30, 0x38)) + struct.pack('<f', 0.5) +
        bytes([0x3c, 0xbc, 0x40, 0x00]) + struct.pack('<f', 2.0) + q)

    # ---- fuzz_archive
    wa = lambda n, s: write('fuzz_archive', n, s)
    wa('valid_top.tar', tar([('./' + n, d) for n, d in TINY]))
    wa('valid_folder_pax.tar', tar(TINY, 'tiny/', tarfile.PAX_FORMAT, dirs=True))
    wa('valid_sharded.tar', tar(SHARDED, 'ck/', dirs=True))
    wa('valid_folder.tar.gz', gz(tar(TINY, 'tiny/', dirs=True)))
    wa('valid_sharded.tar.gz', gz(tar(SHARDED)))
    wa('valid_folder.tar.zst', zst(tar(TINY, 'tiny/', tarfile.PAX_FORMAT, dirs=True)))
    wa('valid_top.zip', zipped(TINY))
    wa('valid_folder_stored.zip', zipped(TINY, 'tiny/', zipfile.ZIP_STORED))
    wa('valid_sharded.zip', zipped(SHARDED, 'ck/'))
    wa('invalid_dotdot.tar', tar(TINY, 'ck/', extra=lambda t: add_file(t, 'ck/../x')))
    wa('invalid_absolute.tar',
       tar(TINY, 'ck/', extra=lambda t: add_file(t, '/tmp/evil.safetensors')))
    wa('invalid_duplicate.tar',
       tar(TINY, 'ck/', extra=lambda t: add_file(t, './ck//config.json', b'{}')))
    wa('invalid_symlink.tar', tar(TINY, 'ck/', extra=lambda t: add_link(
        t, 'ck/link.safetensors', '/etc/passwd', tarfile.SYMTYPE)))
    wa('invalid_hardlink.tar', tar(TINY, 'ck/', extra=lambda t: add_link(
        t, 'ck/hard.safetensors', 'ck/config.json', tarfile.LNKTYPE)))
    wa('invalid_dotdot.zip', zipped([('../evil', b'x')] + TINY))
    full = tar(TINY, 'tiny/')
    wa('invalid_truncated.tar', full[:len(full) // 3])
    wa('invalid_truncated.tar.gz', gz(full)[:200])
    # members the checkpoint does not need (loaded only on request) and names to escape
    junk = [('junk.bin', bytes(60000))]
    wa('valid_unused_member.zip', zipped(TINY + junk, 'ck/'))
    wa('valid_unused_member.tar.gz', gz(tar(TINY + junk, 'ck/')))
    wa('valid_escaped_names.tar', tar(TINY + [('\x1b[31m\n.bin', b'x')], 'ck\x1b]0;\x07/',
                                      tarfile.PAX_FORMAT))
    pt_seeds()


def pt_objects(key):
    """A module/ema checkpoint of a few tensors (bf16, float8 as torch 2.x writes it,
    a scalar, two views of one storage) with deepspeed's other keys; key(i, nbytes)
    names storage i."""
    import collections

    def st(i, dt, n):
        size = ptw.DTYPES[dt][2]
        return ptw.Storage(key(i, n * size), dt, bytes(range(n * size)), untyped=dt == 'fp8')

    def sd(base):
        shared = st(base + 3, 'bf16', 8)
        return ptw.state_dict([
            ('w', ptw.Tensor(st(base, 'bf16', 6), (2, 3))),
            ('q.weight', ptw.Tensor(st(base + 1, 'fp8', 4), (4,))),
            ('s', ptw.Tensor(st(base + 2, 'f32', 1), ())),
            ('a', ptw.Tensor(shared, (2, 2))), ('b', ptw.Tensor(shared, (2, 2), 4))])
    return ({'module': sd(0), 'ema': sd(4), 'x': set(), 'steps': 1 << 40,
             'cfg': {'lr': 1.5e-4, 'none': None, 'on': True, 'neg': -5}},
            collections.OrderedDict([('q', ptw.Tensor(st(9, 'f32', 1), ()))]))


def pt_seeds():
    gguf_seeds()
    # ---- fuzz_pickle: storage keys are sizes
    wp = lambda n, s: write('fuzz_pickle', n, s)
    top, scale_map = pt_objects(lambda i, n: str(n))
    wp('valid_module_ema', ptw.state_pickle(top))
    wp('valid_protocol4', ptw.state_pickle(top, 4))
    wp('valid_bare', ptw.state_pickle(top['module']))
    wp('valid_map', ptw.state_pickle(scale_map))
    for kind, (pkl, _, kw) in sorted(ptw.HOSTILE.items()):
        if pkl is not None and not kw:  # the zip's faults are fuzz_ptzip's
            wp('hostile_' + kind, pkl)
    # ---- fuzz_ptzip
    wz = lambda n, s: write('fuzz_ptzip', n, s)
    top, scale_map = pt_objects(lambda i, n: str(i))
    wz('valid_module_ema.pt', ptw.torch_save(top, 'mp_rank_00_model_states'))
    wz('valid_zip64.pt', ptw.torch_save(top, 'archive', zip64=True))
    wz('valid_bare.pt', ptw.torch_save(top['module'], 'm'))
    wz('valid_map.pt', ptw.torch_save(scale_map, 'x_map'))
    for kind in ('cd_offset_lies', 'cd_size_lies', 'eocd_lies', 'compressed', 'two_roots',
                 'big_endian', 'truncated', 'not_zip'):
        wz('invalid_%s.pt' % kind, ptw.hostile(kind))


def gg_str(b):
    b = b.encode() if isinstance(b, str) else b
    return struct.pack('<Q', len(b)) + b


def gguf(tensors, kvs=b'', nkv=0, version=3, align=32):
    """tensors: [(name, ne (innermost first), ggml type, data)]; offsets aligned."""
    infos, body = b'', b''
    for name, ne, gtype, blob in tensors:
        body += b'\0' * (-len(body) % align)
        infos += gg_str(name) + struct.pack('<I', len(ne)) + b''.join(
            struct.pack('<Q', d) for d in ne) + struct.pack('<IQ', gtype, len(body))
        body += blob
    head = b'GGUF' + struct.pack('<IQQ', version, len(tensors), nkv) + kvs + infos
    return head + b'\0' * (-len(head) % align) + body


def gguf_tensors():
    """F32, F16, BF16 and Q8_0 tensors (a Q8_0 block: fp16 d, 32 int8) and metadata."""
    q8 = b''.join(struct.pack('<e', 0.5 + i) + bytes(range(32)) for i in range(2))
    tensors = [('blocks.0.ffn.0.weight', [32, 2], 8, q8),
               ('head.modulation', [4, 2, 1], 0, struct.pack('<8f', *range(8))),
               ('text_embedding.0.weight', [3, 2], 1, struct.pack('<6e', *range(6))),
               ('time_embedding.0.bias', [5], 30, struct.pack('<5H', *range(0x3f80, 0x3f85)))]
    kvs = (gg_str('general.architecture') + struct.pack('<I', 8) + gg_str('wan') +
           gg_str('general.alignment') + struct.pack('<II', 4, 32) +
           gg_str('general.tags') + struct.pack('<IIQ', 9, 8, 2) + gg_str('a') + gg_str('b') +
           gg_str('general.ok') + struct.pack('<IB', 7, 1))
    return tensors, kvs


def gguf_seeds():
    # ---- fuzz_gguf
    wg = lambda n, s: write('fuzz_gguf', n, s)
    tensors, kvs = gguf_tensors()
    wg('valid_types.gguf', gguf(tensors, kvs, 4))
    wg('valid_v2.gguf', gguf(tensors[:2], version=2))
    wg('valid_align64.gguf', gguf(tensors, gg_str('general.alignment') +
                                  struct.pack('<II', 4, 64), 1, align=64))
    wg('invalid_q4k.gguf', gguf([('x', [32], 12, b'\0' * 18)]))
    wg('invalid_truncated.gguf', gguf(tensors, kvs, 4)[:150])
    wg('invalid_nested.gguf', gguf([], gg_str('a') + struct.pack('<IIQ', 9, 9, 1), 1))
    # ---- fuzz_archive: a GGUF checkpoint archived, alone or beside config.json, and
    # one whose tensor data the GGUF member does not hold
    wa = lambda n, s: write('fuzz_archive', n, s)
    g = gguf(tensors, kvs, 4)
    wa('valid_gguf_folder.tar', tar([('config.json', CONFIG), ('w-Q8_0.gguf', g)], 'ck/',
                                    dirs=True))
    wa('valid_gguf_alone.tar.gz', gz(tar([('w-Q8_0.gguf', g)])))
    wa('valid_gguf.zip', zipped([('config.json', CONFIG), ('w-Q8_0.gguf', g)]))
    wa('invalid_gguf_truncated.tar', tar([('w-Q8_0.gguf', g[:len(g) - 40])]))


if __name__ == '__main__':
    sys.exit(main())
