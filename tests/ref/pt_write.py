#!/usr/bin/python3
"""Writes PyTorch checkpoints as torch.save does, without torch: a zip of stored
members <root>/data.pkl, <root>/data/<key>, <root>/version, <root>/byteorder, ...
with the data 64-byte aligned, whose pickle (protocol 2, Python's own pickler) names
tensors through torch._utils._rebuild_tensor_v2 (v3 with an UntypedStorage for
float8) and storages through persistent ids ('storage', <storage class>, key,
'cpu', numel). The torch names are stand-ins registered for the pickler, so the
bytes are those torch.save would write for the same tensors.

  pt_write.py checkpoint PT_DIR REF_DIR [--dtype bf16|f32|f16|fp8]
        [--load-key module|ema|none] [--root NAME] [--stem NAME] [--zip64] [--seed N]
      PT_DIR/<stem>.pt (and <stem>_map.pt for fp8) with config.json; the dicts
      "module" and "ema" (different values; none: a bare state dict); REF_DIR/<dict>/
      the same tensors as safetensors (fp8 ones dequantized, as F32) with config.json.
  pt_write.py convert SRC.safetensors OUT.pt [--load-key module|ema|none] [--dtype f32|bf16]
      the tensors of SRC as F32 (or BF16: SRC's values rounded to nearest even, the
      same bits when SRC is BF16) under that key of the dict (none: a bare state dict).
  pt_write.py hostile KIND PT_DIR
      a checkpoint the loader must refuse (KIND: see HOSTILE), or one it must accept
      (selfref_ok).

The zip and pickle functions use the standard library only (tests/fuzz/make_seeds.py
imports them); NumPy is needed for the tensor values of `checkpoint`.
"""
import collections
import io
import json
import os
import pickle
import struct
import sys
import types
import zipfile

# ----------------------------------------------------------------------------
# torch's names, for the pickler

DTYPES = {  # short name -> (torch dtype name, storage class, bytes per element)
    'f32': ('float32', 'FloatStorage', 4),
    'f16': ('float16', 'HalfStorage', 2),
    'bf16': ('bfloat16', 'BFloat16Storage', 2),
    'f64': ('float64', 'DoubleStorage', 8),
    'i64': ('int64', 'LongStorage', 8),
    'i32': ('int32', 'IntStorage', 4),
    'u8': ('uint8', 'ByteStorage', 1),
    'fp8': ('float8_e4m3fn', None, 1),  # written as torch 2.x does: v3, UntypedStorage
}


def _torch_names():
    """Stand-in modules torch, torch._utils and torch.storage with the functions,
    storage classes and dtypes a state dict pickle names."""
    if 'torch' in sys.modules and getattr(sys.modules['torch'], '_pt_write', False):
        return sys.modules['torch']
    torch = types.ModuleType('torch')
    torch._pt_write = True
    utils = types.ModuleType('torch._utils')
    storage = types.ModuleType('torch.storage')
    torch._utils, torch.storage = utils, storage

    def fn(mod, name):
        def f(*args):
            raise RuntimeError('a stand-in for ' + name)
        f.__module__, f.__name__, f.__qualname__ = mod.__name__, name, name
        setattr(mod, name, f)

    for name in ('_rebuild_tensor_v2', '_rebuild_tensor_v3', '_rebuild_parameter'):
        fn(utils, name)
    for _, cls, _ in DTYPES.values():
        if cls:
            setattr(torch, cls, type(cls, (), {'__module__': 'torch'}))
    storage.UntypedStorage = type('UntypedStorage', (), {'__module__': 'torch.storage'})

    class dtype:
        __module__ = 'torch'

        def __init__(self, name):
            self.name = name

        def __reduce__(self):
            return self.name

    for name, _, _ in DTYPES.values():
        setattr(torch, name, dtype(name))
    sys.modules.update({'torch': torch, 'torch._utils': utils, 'torch.storage': storage})
    return torch


class Storage:
    """A storage: the bytes of data member `key`, numel elements of dtype (bytes
    for an untyped storage)."""

    def __init__(self, key, dtype, data, untyped=False):
        self.key, self.dtype, self.data, self.untyped = str(key), dtype, bytes(data), untyped


class Tensor:
    """A tensor of `shape` at element `offset` of storage, row-major unless stride
    is given."""

    def __init__(self, storage, shape, offset=0, stride=None, dtype=None):
        self.storage, self.shape, self.offset = storage, tuple(shape), offset
        self.dtype = dtype or storage.dtype
        if stride is None:
            stride, n = [], 1
            for d in reversed(self.shape):
                stride.insert(0, n)
                n *= d
        self.stride = tuple(stride)

    def __reduce_ex__(self, proto):
        torch = _torch_names()
        args = (self.storage, self.offset, self.shape, self.stride, False,
                collections.OrderedDict())
        if self.storage.untyped:
            return (torch._utils._rebuild_tensor_v3,
                    args + (getattr(torch, DTYPES[self.dtype][0]),))
        return (torch._utils._rebuild_tensor_v2, args)


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if not isinstance(obj, Storage):
            return None
        torch = _torch_names()
        size = DTYPES[obj.dtype][2]
        if obj.untyped:
            return ('storage', torch.storage.UntypedStorage, obj.key, 'cpu', len(obj.data))
        return ('storage', getattr(torch, DTYPES[obj.dtype][1]), obj.key, 'cpu',
                len(obj.data) // size)


def state_pickle(obj, protocol=2):
    """The pickle of obj (dicts, lists, Tensors, ...), as torch.save (protocol 2 by
    default, as torch's)."""
    _torch_names()
    buf = io.BytesIO()
    _Pickler(buf, protocol=protocol).dump(obj)
    return buf.getvalue()


def state_dict(tensors):
    """An OrderedDict of name -> Tensor with the _metadata a module's state_dict()
    carries."""
    sd = collections.OrderedDict(tensors)
    sd._metadata = collections.OrderedDict([('', {'version': 1})])
    return sd


def storages_of(obj, out=None):
    """The storages obj refers to, by key, in order of first use."""
    out = collections.OrderedDict() if out is None else out
    if isinstance(obj, Tensor):
        out.setdefault(obj.storage.key, obj.storage)
    elif isinstance(obj, dict):
        for v in obj.values():
            storages_of(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            storages_of(v, out)
    return out


# ----------------------------------------------------------------------------
# the zip


def _member(z, name, data, compress=zipfile.ZIP_STORED, zip64=False):
    """Adds a member whose data start on a 64-byte boundary (padding in an extra
    field, as torch's writer does)."""
    zi = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
    zi.compress_type = compress
    fixed = 30 + len(name.encode()) + 4 + (20 if zip64 and len(data) else 0)
    pad = -(z.fp.tell() + fixed) % 64
    zi.extra = struct.pack('<HH', 0x4246, pad) + b'Z' * pad
    z.writestr(zi, data)


def torch_zip(pkl, storages, root='archive', zip64=False, compress=(), members=None,
              byteorder='little'):
    """The zip torch.save writes: pkl as <root>/data.pkl, storages [(key, bytes)] as
    <root>/data/<key>. zip64: zip64 records everywhere (as a file past 4 GiB has);
    compress: the data keys to deflate instead; members: replaces the list of
    (name, bytes) written."""
    if members is None:
        members = [('data.pkl', pkl), ('.format_version', b'1'),
                   ('.storage_alignment', b'64')]
        if byteorder:
            members.append(('byteorder', byteorder.encode()))
        members += [('data/' + k, d) for k, d in storages]
        members += [('version', b'3\n'), ('.data/serialization_id', b'1234567890' * 4)]
    buf = io.BytesIO()
    saved = zipfile.ZIP64_LIMIT
    if zip64:
        zipfile.ZIP64_LIMIT = 0  # zipfile then writes zip64 fields for every value
    try:
        with zipfile.ZipFile(buf, 'w', zipfile.ZIP_STORED) as z:
            for name, data in members:
                deflate = name.startswith('data/') and name[5:] in compress
                _member(z, root + '/' + name, data,
                        zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED, zip64)
    finally:
        zipfile.ZIP64_LIMIT = saved
    return buf.getvalue()


def torch_save(obj, root='archive', **kw):
    """torch.save(obj) as bytes."""
    pkl = state_pickle(obj)
    return torch_zip(pkl, [(k, s.data) for k, s in storages_of(obj).items()], root, **kw)


# ----------------------------------------------------------------------------
# checkpoints with values


def e4m3_table():
    """float8 e4m3fn byte -> float (NaN for S.1111.111)."""
    import math
    out = []
    for b in range(256):
        s, e, m = -1.0 if b & 0x80 else 1.0, (b >> 3) & 15, b & 7
        if e == 15 and m == 7:
            out.append(float('nan'))
        elif e == 0:
            out.append(s * math.ldexp(m, -9))
        else:
            out.append(s * math.ldexp(8 + m, e - 10))
    return out


def st_write(path, tensors):
    """safetensors: name -> (dtype "F32"/"F16"/"BF16", shape, bytes)."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        dt, shape, data = tensors[name]
        header[name] = {'dtype': dt, 'shape': list(shape), 'data_offsets': [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    head = json.dumps(header, separators=(',', ':')).encode()
    head += b' ' * (-len(head) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(head)) + head + b''.join(blobs))


SHAPES = [  # HunyuanVideo-like names; the Linear weights of the blocks go fp8
    ('img_in.proj.weight', (8, 4, 1, 2, 2)), ('img_in.proj.bias', (8,)),
    ('double_blocks.0.img_mod.linear.weight', (48, 8)),
    ('double_blocks.0.img_mod.linear.bias', (48,)),
    ('double_blocks.0.img_attn_qkv.weight', (24, 8)),
    ('double_blocks.0.img_attn_qkv.bias', (24,)),
    ('double_blocks.0.img_mlp.fc1.weight', (16, 8)),
    ('single_blocks.0.linear1.weight', (12, 8)),
    ('single_blocks.0.modulation.linear.weight', (24, 8)),
    ('final_layer.linear.weight', (4, 8)),
    ('scalar', ()), ('empty', (0, 8)),
]
# every nn.Linear of the blocks, the modulation ones included, as the official
# hyvideo/modules/fp8_optimization.py (convert_fp8_linear) makes them fp8
FP8 = ('double_blocks.0.img_mod.linear.weight', 'double_blocks.0.img_attn_qkv.weight',
       'double_blocks.0.img_mlp.fc1.weight', 'single_blocks.0.linear1.weight',
       'single_blocks.0.modulation.linear.weight')


def make_dict(np, rng, dtype, keys, scales):
    """One state dict: (name -> Tensor, name -> reference (dtype, shape, bytes)).
    keys: a counter for storage keys; scales: the fp8 scales by module name, made
    when absent (the dicts of one checkpoint share them, as they share one map)."""
    from safetensors_np import f32_to_bf16
    tensors, ref = collections.OrderedDict(), {}
    table = np.array(e4m3_table(), dtype=np.float32)

    def store(name, shape, dt):
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if dt == 'fp8':
            raw = rng.integers(0, 256, n, dtype=np.uint8)
            raw[(raw & 0x7f) == 0x7f] = 0x3c  # no NaN
            raw[:2] = [0x00, 0x80]  # +0, -0; the random bytes give subnormals too
            scale = scales.setdefault(name[:-len('.weight')],
                                      np.float32(rng.uniform(0.001, 0.01)))
            vals = table[raw] * scale
            return raw.tobytes(), ('F32', shape, vals.astype('<f4').tobytes())
        x = rng.standard_normal(n).astype(np.float32)
        if dt == 'bf16':
            bits = f32_to_bf16(x).astype('<u2').tobytes()
            return bits, ('BF16', shape, bits)
        if dt == 'f16':
            b = x.astype('<f2').tobytes()
            return b, ('F16', shape, b)
        b = x.astype('<f4').tobytes()
        return b, ('F32', shape, b)

    for name, shape in SHAPES:
        dt = dtype if dtype != 'fp8' else ('fp8' if name in FP8 else 'bf16')
        data, ref[name] = store(name, shape, dt)
        s = Storage(next(keys), dt, data, untyped=dt == 'fp8')
        tensors[name] = Tensor(s, shape)
    # two views of one storage, at offsets 0 and 3 rows
    sdt = 'bf16' if dtype == 'fp8' else dtype
    data, whole = store('shared', (6, 8), sdt)
    s = Storage(next(keys), sdt, data)
    es = DTYPES[sdt][2]
    tensors['shared.a'] = Tensor(s, (3, 8), 0)
    tensors['shared.b'] = Tensor(s, (3, 8), 24)
    ref['shared.a'] = (whole[0], (3, 8), whole[2][:24 * es])
    ref['shared.b'] = (whole[0], (3, 8), whole[2][24 * es:])
    return tensors, ref


def cmd_checkpoint(a):
    import itertools
    import numpy as np
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    rng = np.random.default_rng(a.seed)
    keys = itertools.count()
    names = ['bare'] if a.load_key == 'none' else ['module', 'ema']
    dicts, refs, scales = {}, {}, {}
    for n in names:
        t, refs[n] = make_dict(np, rng, a.dtype, keys, scales)
        # TransformerEngine's per-module state, as older TE versions save it: an
        # io.BytesIO (pickled by protocol 2 through NEWOBJ, _codecs.encode and BUILD)
        t['final_layer._extra_state'] = io.BytesIO(b'\x00te fp8 meta\xff')
        dicts[n] = state_dict(t)
    if a.load_key == 'none':
        top = dicts['bare']
    else:
        top = {'module': dicts['module'], 'ema': dicts['ema'], 'buffer_names': [],
               'ds_version': '0.10.0', 'global_steps': 1000, 'skipped_steps': 0,
               'sparse_tensor_module_names': set(), 'dp_world_size': 8,
               'ds_config': {'train_batch_size': 32, 'bf16': {'enabled': True}, 'lr': 1e-4,
                             'grad_clip': None}}
    os.makedirs(a.pt_dir, exist_ok=True)
    stem = a.stem + ('_fp8' if a.dtype == 'fp8' else '')
    with open(os.path.join(a.pt_dir, stem + '.pt'), 'wb') as f:
        f.write(torch_save(top, a.root or stem, zip64=a.zip64))
    if a.dtype == 'fp8':
        # the official map: module name -> float32 scalar
        ks = itertools.count()
        m = {k: Tensor(Storage(next(ks), 'f32', np.float32(v).tobytes()), ())
             for k, v in sorted(scales.items())[a.map_drop:]}
        with open(os.path.join(a.pt_dir, stem + '_map.pt'), 'wb') as f:
            f.write(torch_save(m, stem + '_map', zip64=a.zip64))
    with open(os.path.join(a.pt_dir, 'config.json'), 'w') as f:
        f.write('{}\n')
    for n in names:
        d = os.path.join(a.ref_dir, n)
        os.makedirs(d, exist_ok=True)
        st_write(os.path.join(d, 'model.safetensors'), refs[n])
        with open(os.path.join(d, 'config.json'), 'w') as f:
            f.write('{}\n')


def cmd_convert(a):
    import itertools
    import numpy as np
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import safetensors_np
    keys = itertools.count()

    def data(v):
        if a.dtype == 'bf16':
            return safetensors_np.f32_to_bf16(v).astype('<u2').tobytes()
        return np.ascontiguousarray(v, '<f4').tobytes()

    sd = state_dict((n, Tensor(Storage(next(keys), a.dtype, data(v)), v.shape))
                    for n, v in sorted(safetensors_np.load(a.src).items()))
    top = sd if a.load_key == 'none' else {a.load_key: sd}
    with open(a.out, 'wb') as f:
        f.write(torch_save(top, os.path.splitext(os.path.basename(a.out))[0]))


# ----------------------------------------------------------------------------
# hostile checkpoints

P2 = b'\x80\x02'


def _binunicode(s):
    b = s.encode()
    return b'X' + struct.pack('<I', len(b)) + b


def _int(v):
    return b'\x8a\x08' + struct.pack('<q', v) if v >= 1 << 31 else b'J' + struct.pack('<i', v)


def _pid(key, cls=b'FloatStorage', numel=4):
    """A persistent id tuple of a storage, then BINPERSID."""
    return (b'(' + _binunicode('storage') + b'ctorch\n' + cls + b'\n' + _binunicode(key) +
            _binunicode('cpu') + _int(numel) + b'tQ')


def _tensor(key, offset=0, size=(4,), stride=(1,), numel=4, cls=b'FloatStorage'):
    """_rebuild_tensor_v2 of a storage, by hand."""
    def tup(v):
        return b'(' + b''.join(_int(x) for x in v) + b't'
    return (b'ctorch._utils\n_rebuild_tensor_v2\n(' + _pid(key, cls, numel) + _int(offset) +
            tup(size) + tup(stride) + b'\x89' + b'ccollections\nOrderedDict\n)R' + b'tR')


def _sd(*items):
    """A module dict {'module': {name: value, ...}} by hand: items are (name, pickle
    bytes of the value)."""
    body = b''.join(_binunicode(k) + v for k, v in items)
    return P2 + b'}(' + _binunicode('module') + b'}(' + body + b'uu.'


F4 = struct.pack('<4f', 1, 2, 3, 4)

HOSTILE = {
    # name: (pickle bytes or None for the default, storages, extra torch_zip options)
    'global_os_system': (P2 + b'cos\nsystem\n' + _binunicode('echo hi') + b'\x85R.', [], {}),
    'reduce_storage': (P2 + b'ctorch\nFloatStorage\n)R.', [], {}),
    'reduce_dtype': (P2 + b'ctorch\nbfloat16\n)R.', [], {}),
    'newobj': (P2 + b'ccollections\nOrderedDict\n)\x81.', [], {}),
    'build_tensor': (_sd(('w', _tensor('0') + b'}b')), [('0', F4)], {}),
    'huge_storage': (_sd(('w', _tensor('0', numel=1 << 62))), [('0', F4)], {}),
    'offset_past': (_sd(('w', _tensor('0', offset=8, size=(1,)))), [('0', F4)], {}),
    'extent_past': (_sd(('w', _tensor('0', size=(2, 3), stride=(3, 1)))), [('0', F4)], {}),
    'noncontiguous': (_sd(('w', _tensor('0', size=(2, 2), stride=(1, 2)))), [('0', F4)], {}),
    'missing_storage': (_sd(('w', _tensor('7'))), [('0', F4)], {}),
    'recursive': (P2 + b'}q\x00(' + _binunicode('module') + b'h\x00u.', [], {}),
    'memo_unset': (P2 + b'h\x05.', [], {}),
    'deep_marks': (P2 + b'(' * 1000 + b'.', [], {}),
    'stack_underflow': (P2 + b's.', [], {}),
    'truncated': (_sd(('w', _tensor('0')))[:60], [('0', F4)], {}),
    'trailing': (_sd(('w', _tensor('0'))) + b'N', [('0', F4)], {}),
    'not_tensor': (_sd(('w', b'K\x07')), [], {}),
    'duplicate': (_sd(('w', _tensor('0')), ('w', _tensor('0'))), [('0', F4)], {}),
    'compressed': (_sd(('w', _tensor('0'))), [('0', F4 * 64)], {'compress': ('0',)}),
    'big_endian': (_sd(('w', _tensor('0'))), [('0', F4)], {'byteorder': 'big'}),
    'u8_tensor': (_sd(('w', _tensor('0', cls=b'ByteStorage', numel=16, size=(16,)))),
                  [('0', F4)], {}),
    'two_roots': (None, [], {}),
    'cd_offset_lies': (None, [], {}),
    'cd_size_lies': (None, [], {}),
    'eocd_lies': (None, [], {}),
    'not_zip': (None, [], {}),
    'selfref_ok': (None, [], {}),
}


def _patch_cd(data, name, field, value):
    """Changes a field of member name's central directory entry: 'offset' (local
    header) or 'size' (both sizes)."""
    cd = data.rfind(b'PK\x05\x06')
    (cd_off,) = struct.unpack('<I', data[cd + 16:cd + 20])
    pos = cd_off
    out = bytearray(data)
    while data[pos:pos + 4] == b'PK\x01\x02':
        nl, xl, cl = struct.unpack('<HHH', data[pos + 28:pos + 34])
        if data[pos + 46:pos + 46 + nl] == name.encode():
            if field == 'offset':
                out[pos + 42:pos + 46] = struct.pack('<I', value)
            else:
                out[pos + 20:pos + 28] = struct.pack('<II', value, value)
        pos += 46 + nl + xl + cl
    return bytes(out)


def hostile(kind):
    """The .pt bytes of a hostile checkpoint."""
    pkl, storages, kw = HOSTILE[kind]
    if kind == 'two_roots':
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, 'w') as z:
            for n in ('a/data.pkl', 'b/data.pkl'):
                z.writestr(n, _sd())
        return buf.getvalue()
    if kind == 'selfref_ok':
        # a list that holds itself next to a valid state dict: harmless
        pkl = (P2 + b'}(' + _binunicode('x') + b']q\x00h\x00a' + _binunicode('module') +
               b'}(' + _binunicode('w') + _tensor('0') + b'uu.')
        return torch_zip(pkl, [('0', F4)])
    base = torch_zip(_sd(('w', _tensor('0'))), [('0', F4)])
    if kind == 'cd_offset_lies':
        return _patch_cd(base, 'archive/data/0', 'offset', 3)
    if kind == 'cd_size_lies':
        return _patch_cd(base, 'archive/data/0', 'size', 1 << 20)
    if kind == 'eocd_lies':
        cd = base.rfind(b'PK\x05\x06')
        return base[:cd + 16] + struct.pack('<I', len(base) * 2) + base[cd + 20:]
    if kind == 'not_zip':
        return b'\x80\x02\x8a\x0a' + b'\x00' * 60  # the legacy format's magic number
    return torch_zip(pkl, storages, **kw)


def cmd_hostile(a):
    os.makedirs(a.pt_dir, exist_ok=True)
    with open(os.path.join(a.pt_dir, 'model.pt'), 'wb') as f:
        f.write(hostile(a.kind))
    with open(os.path.join(a.pt_dir, 'config.json'), 'w') as f:
        f.write('{}\n')


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    c = sub.add_parser('checkpoint')
    c.add_argument('pt_dir')
    c.add_argument('ref_dir')
    c.add_argument('--dtype', choices=('bf16', 'f32', 'f16', 'fp8'), default='bf16')
    c.add_argument('--load-key', choices=('module', 'ema', 'none'), default='module',
                   help='module, ema: both dicts (and deepspeed\'s other keys); none: a '
                   'bare state dict')
    c.add_argument('--map-drop', type=int, default=0, help='leave out the first N scales')
    c.add_argument('--root', help='the zip folder (default: the file stem)')
    c.add_argument('--stem', default='mp_rank_00_model_states')
    c.add_argument('--zip64', action='store_true')
    c.add_argument('--seed', type=int, default=0)
    v = sub.add_parser('convert')
    v.add_argument('src')
    v.add_argument('out')
    v.add_argument('--load-key', choices=('module', 'ema', 'none'), default='module')
    v.add_argument('--dtype', choices=('f32', 'bf16'), default='f32')
    h = sub.add_parser('hostile')
    h.add_argument('kind', choices=sorted(HOSTILE))
    h.add_argument('pt_dir')
    a = ap.parse_args()
    {'checkpoint': cmd_checkpoint, 'convert': cmd_convert, 'hostile': cmd_hostile}[a.cmd](a)


if __name__ == '__main__':
    main()
