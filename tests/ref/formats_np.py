"""Checkpoint formats written with NumPy alone, from the format specifications, for
tests/test_formats.sh: fp8 safetensors (float8_e4m3fn and float8_e5m2, ComfyUI's
"scaled fp8" with <module>.scale_weight and the scaled_fp8 marker), ComfyUI single
files (model.diffusion_model. names, other tensors beside them) and GGUF files (as
city96's ComfyUI-GGUF convert tool writes them: general.architecture, the official
names, dimensions innermost first, F32 / F16 / BF16 / Q8_0 tensors, data aligned to
general.alignment), each with the official-layout checkpoint holding the values the
format dequantises to, and hostile variants.

  formats_np.py tiny128 OUT --seed N [--model-type t2v|ti2v|i2v] [--in-dim C]
                [--out-dim C] [--layers N] [--img-emb]
  formats_np.py fp8 SRC OUT DEQ [--comfy] [--single FILE]
  formats_np.py gguf SRC FILE DEQ [--arch wan] [--prefix P]
  formats_np.py hostile-fp8 SRC DIR
  formats_np.py hostile-gguf SRC DIR

SRC, OUT, DEQ are checkpoint folders (config.json + one safetensors file).
"""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np as st  # noqa: E402
import wan_ref  # noqa: E402

COMFY = "model.diffusion_model."
WEIGHTS = "diffusion_pytorch_model.safetensors"

# ---------------------------------------------------------------------------- fp8


def fp8_decode(codes, fmt):
    """uint8 codes -> float64 values. e4m3fn: bias 7, no infinities, S.1111.111 NaN;
    e5m2: bias 15, IEEE-like (exponent 31: inf / NaN)."""
    c = np.asarray(codes, dtype=np.uint8).astype(np.int64)
    sign = np.where(c & 0x80, -1.0, 1.0)
    if fmt == "F8_E4M3":
        e, m, mb, bias = (c >> 3) & 0xF, c & 0x7, 3, 7
    else:
        e, m, mb, bias = (c >> 2) & 0x1F, c & 0x3, 2, 15
    sub = m / (1 << mb) * 2.0 ** (1 - bias)
    norm = (1 + m / (1 << mb)) * 2.0 ** (e - bias)
    v = sign * np.where(e == 0, sub, norm)
    if fmt == "F8_E4M3":
        v = np.where((c & 0x7F) == 0x7F, np.nan, v)
    else:
        v = np.where(e == 31, np.where(m == 0, sign * np.inf, np.nan), v)
    return v


def fp8_encode(x, fmt):
    """float -> the nearest finite fp8 code, ties to the even code, saturating (as
    torch's clamp then cast in ComfyUI's quantisers)."""
    pos = np.arange(128, dtype=np.uint8)
    vals = fp8_decode(pos, fmt)
    ok = np.isfinite(vals)
    pos, vals = pos[ok], vals[ok]
    order = np.argsort(vals)
    pos, vals = pos[order], vals[order]
    a = np.abs(np.asarray(x, dtype=np.float64)).reshape(-1)
    a = np.minimum(a, vals[-1])
    hi = np.clip(np.searchsorted(vals, a), 1, len(vals) - 1)
    lo = hi - 1
    dlo, dhi = a - vals[lo], vals[hi] - a
    pick = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(pos[lo] % 2 == 0, lo, hi)))
    code = pos[pick].astype(np.uint8)
    neg = np.asarray(x).reshape(-1) < 0
    code = np.where(neg & (code != 0), code | 0x80, code).astype(np.uint8)
    return code.reshape(np.shape(x))


def fp8_dequant(codes, fmt, scale):
    """What a loader computes: the fp8 value times the scale, in float32."""
    return (fp8_decode(codes, fmt).astype(np.float32) * np.float32(scale)).astype(np.float32)


# ---------------------------------------------------------------------------- Q8_0


def f16_bits(x):
    return np.asarray(x, dtype=np.float16).view(np.uint16)


def q8_0_quantize(x):
    """ggml's Q8_0 along the last axis: blocks of 32, d = max|x| / 127 stored as fp16,
    q = round(x / d) (half away from zero, as roundf) in int8. -> (d fp16 [nb],
    q int8 [nb, 32])."""
    b = np.asarray(x, dtype=np.float32).reshape(-1, 32)
    amax = np.abs(b).max(axis=1)
    d = amax / np.float32(127)
    inv = np.where(d > 0, np.float32(1) / np.where(d > 0, d, 1), 0).astype(np.float32)
    v = b * inv[:, None]
    q = (np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))).astype(np.int8)
    return d.astype(np.float16), q


def q8_0_bytes(d, q):
    out = np.zeros((len(d), 34), dtype=np.uint8)
    out[:, 0:2] = f16_bits(d).astype("<u2").view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def q8_0_dequant(d, q, shape):
    """q x d in float32 (exact: 8 by 11 bits)."""
    return (q.astype(np.float32) * d.astype(np.float32)[:, None]).reshape(shape)


def bf16_round32(x):
    return st.bf16_to_f32(st.f32_to_bf16(np.asarray(x, dtype=np.float32)))


# ---------------------------------------------------------------------------- files


def save_raw(path, entries, metadata=None):
    """safetensors from (name, dtype, shape, bytes) entries, in the given order."""
    header, blobs, off = {}, [], 0
    for name, dt, shape, blob in entries:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    if metadata:
        header["__metadata__"] = metadata
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head)
        for b in blobs:
            f.write(b)


def f32_entry(name, a):
    a = np.ascontiguousarray(a, dtype="<f4")
    return (name, "F32", a.shape, a.tobytes())


def load_dir(src):
    """config.json and the tensors of the folder's safetensors files (or shards)."""
    with open(os.path.join(src, "config.json")) as f:
        config = json.load(f)
    W = {}
    for name in sorted(os.listdir(src)):
        if name.endswith(".safetensors"):
            W.update(st.load(os.path.join(src, name)))
    return config, W


def save_official(out, config, W):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    st.save(os.path.join(out, WEIGHTS), {k: np.asarray(v, np.float32) for k, v in W.items()})


def is_block_matrix(name, a):
    """A GEMM matrix of a block (Wan's blocks.N, HunyuanVideo's double_ and single_)."""
    return name.split(".")[0] in ("blocks", "double_blocks", "single_blocks") and a.ndim == 2


def vae_entries():
    """Tensors of another model in the same file (a ComfyUI checkpoint's VAE)."""
    r = np.random.default_rng(1)
    return [f32_entry("first_stage_model.decoder.conv_in.weight", r.standard_normal((8, 4, 3, 3))),
            ("first_stage_model.decoder.conv_in.bias", "BF16", (8,),
             st.f32_to_bf16(r.standard_normal(8).astype(np.float32)).tobytes())]


def quant_entry(module, fmt):
    """<module>.comfy_quant: the layer's format as the bytes of a JSON object (U8)."""
    b = json.dumps({"format": fmt}).encode()
    return (module + ".comfy_quant", "U8", (len(b),), b)


def cmd_fp8(a):
    """The block matrices in fp8: most F8_E4M3 with a scale_weight, some without (x 1),
    some F8_E5M2 with a scale (--uniform: all F8_E4M3 with a scale); the rest F32.
    DEQ: the official layout holding what the fp8 tensors dequantise to."""
    config, W = load_dir(a.src)
    r = np.random.default_rng(11)
    pre = COMFY if a.comfy else ""
    entries, deq = [], {}
    for i, name in enumerate(sorted(W)):
        x = W[name]
        if not is_block_matrix(name, x):
            entries.append(f32_entry(pre + name, x))
            deq[name] = x
            continue
        fmt = "F8_E5M2" if i % 5 == 0 and not a.uniform else "F8_E4M3"
        top = 448.0 if fmt == "F8_E4M3" else 57344.0
        scale = (None if i % 7 == 3 and not a.uniform
                 else np.float32(np.abs(x).max() / top * r.uniform(0.5, 2)))
        if scale is not None and a.pow2_scales:
            scale = np.float32(2.0 ** np.round(np.log2(scale)))
        codes = fp8_encode(x / (scale if scale is not None else 1.0), fmt)
        entries.append((pre + name, fmt, x.shape, codes.tobytes()))
        mod = name[: -len(".weight")]
        if scale is not None:
            sname = ".weight_scale" if a.mixed else ".scale_weight"
            entries.append((pre + mod + sname, "F32", (), np.float32(scale).tobytes()))
        if a.mixed:  # ComfyUI's mixed precision files mark each quantised layer
            entries.append(quant_entry(pre + mod, "float8_e4m3fn" if fmt == "F8_E4M3"
                                       else "float8_e5m2"))
        deq[name] = fp8_dequant(codes, fmt, 1.0 if scale is None else scale)
    if not a.mixed:
        entries.append((pre + "scaled_fp8", "F8_E4M3", (0,), b""))
    if a.comfy:
        entries += vae_entries()
    if a.single:
        save_raw(a.single, entries)
    else:
        os.makedirs(a.out, exist_ok=True)
        shutil.copy(os.path.join(a.src, "config.json"), a.out)
        save_raw(os.path.join(a.out, WEIGHTS), entries)
    save_official(a.deq, config, deq)


# LTX-2's pre-quantised fp8 checkpoints (ltx-2-19b-dev-fp8, ltx-2.3-22b-dev-fp8): the
# Linears ltx_core's quantization/fp8_cast.py lists (_FP8_CAST_LINEAR_SUFFIXES under
# transformer_blocks.: the attentions' to_q, to_k, to_v, to_out.0 and both streams'
# ff.net.0.proj and ff.net.2) hold F8_E4M3 weights, each with a float32 scalar
# <module>.weight_scale (the weight is the code times it) and <module>.input_scale (the
# activation's scale for fp8_scaled_mm, unused once the weight is widened); everything
# else, biases included, as the file had it (bf16).
LTX_FP8_SUFFIXES = (".to_q", ".to_k", ".to_v", ".to_out.0", "ff.net.0.proj", "ff.net.2")
LTX_PREFIX = "model.diffusion_model."


def ltx_fp8_module(name, a):
    if not name.startswith(LTX_PREFIX + "transformer_blocks.") or not name.endswith(".weight"):
        return None
    mod = name[: -len(".weight")]
    return mod if a.ndim == 2 and mod.endswith(LTX_FP8_SUFFIXES) else None


def cmd_ltx_fp8(a):
    """SRC (an LTX-2 one-file checkpoint) to OUT, its fp8 release layout, and DEQ, the
    same file with the fp8 weights as what they dequantise to (F32)."""
    hdr, meta, _ = st.read_header(a.src)
    W = st.load(a.src)
    r = np.random.default_rng(17)
    out, deq = [], []
    for name in hdr:
        x = np.asarray(W[name], np.float32)
        dt = hdr[name]["dtype"]
        mod = ltx_fp8_module(name, x)
        if mod is None:
            e = (name, "BF16", x.shape, st.f32_to_bf16(x).tobytes()) if dt == "BF16" \
                else f32_entry(name, x)
            out.append(e)
            deq.append(e)
            continue
        scale = np.float32(np.abs(x).max() / 448.0 * r.uniform(0.5, 2))
        codes = fp8_encode(x / scale, "F8_E4M3")
        out.append((name, "F8_E4M3", x.shape, codes.tobytes()))
        out.append((mod + ".weight_scale", "F32", (), np.float32(scale).tobytes()))
        out.append((mod + ".input_scale", "F32", (), np.float32(r.uniform(0.01, 0.05)).tobytes()))
        deq.append(f32_entry(name, fp8_dequant(codes, "F8_E4M3", scale)))
    save_raw(a.out, out, meta)
    save_raw(a.deq, deq, meta)


# The names ComfyUI gives a HunyuanVideo model inside, as its
# supported_models.HunyuanVideo.process_unet_state_dict renames the official ones (in its
# order): what a model ComfyUI saves holds.
HUNYUAN_COMFY_RENAMES = [
    ("txt_in.t_embedder.mlp.0.", "txt_in.t_embedder.in_layer."),
    ("txt_in.t_embedder.mlp.2.", "txt_in.t_embedder.out_layer."),
    ("txt_in.c_embedder.linear_1.", "txt_in.c_embedder.in_layer."),
    ("txt_in.c_embedder.linear_2.", "txt_in.c_embedder.out_layer."),
    ("_mod.linear.", "_mod.lin."), ("_attn_qkv.", "_attn.qkv."),
    ("mlp.fc1.", "mlp.0."), ("mlp.fc2.", "mlp.2."),
    ("_attn_q_norm.weight", "_attn.norm.query_norm.scale"),
    ("_attn_k_norm.weight", "_attn.norm.key_norm.scale"),
    (".q_norm.weight", ".norm.query_norm.scale"), (".k_norm.weight", ".norm.key_norm.scale"),
    ("_attn_proj.", "_attn.proj."), (".modulation.linear.", ".modulation.lin."),
    ("_in.mlp.2.", "_in.out_layer."), ("_in.mlp.0.", "_in.in_layer."),
]


def comfy_internal(name):
    for a, b in HUNYUAN_COMFY_RENAMES:
        name = name.replace(a, b)
    return name


def cmd_comfy(a):
    """The same tensors, F32, named model.diffusion_model.*, with a VAE beside them
    (--internal: HunyuanVideo under ComfyUI's own names)."""
    _, W = load_dir(a.src)
    name = comfy_internal if a.internal else (lambda k: k)
    entries = [f32_entry(COMFY + name(k), W[k]) for k in sorted(W)] + vae_entries()
    os.makedirs(os.path.dirname(os.path.abspath(a.file)), exist_ok=True)
    if a.config:
        shutil.copy(os.path.join(a.src, "config.json"), os.path.dirname(a.file))
    save_raw(a.file, entries)


def tiny128_config(model_type, in_dim, out_dim, layers):
    """A Wan config whose sizes its tensors tell (dim a multiple of 128: the head
    count is dim / 128, as ComfyUI infers it; text_len 512, eps 1e-6)."""
    return {"_class_name": "WanModel", "dim": 128, "eps": 1e-06, "ffn_dim": 256,
            "freq_dim": 32, "in_dim": in_dim, "model_type": model_type, "num_heads": 1,
            "num_layers": layers, "out_dim": out_dim, "patch_size": [1, 2, 2],
            "text_dim": 24, "text_len": 512}


def cmd_tiny128(a):
    config = tiny128_config(a.model_type, a.in_dim, a.out_dim, a.layers)
    cfg = dict(config, patch_size=(1, 2, 2), head_dim=128)
    W = wan_ref.random_weights(cfg, a.seed)
    if a.vace:
        W["vace_patch_embedding.weight"] = np.zeros((128, 4, 1, 2, 2), np.float32)
    if a.img_emb:
        W["img_emb.proj.0.weight"] = np.ones(16, np.float32)
        W["img_emb.proj.0.bias"] = np.zeros(16, np.float32)
    save_official(a.out, config, W)


# ---------------------------------------------------------------------------- GGUF

GGUF_TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q8_0": 8, "Q4_K": 12, "BF16": 30}
KV_UINT32, KV_STRING, KV_ARRAY, KV_UINT64 = 4, 8, 9, 10


def gg_str(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gg_kv(key, vtype, value):
    out = gg_str(key) + struct.pack("<I", vtype)
    if vtype == KV_STRING:
        return out + gg_str(value)
    if vtype == KV_UINT32:
        return out + struct.pack("<I", value)
    if vtype == KV_UINT64:
        return out + struct.pack("<Q", value)
    raise ValueError(vtype)


def gg_tensor(name, a, qtype):
    """-> (ggml type, data bytes, the values a loader dequantises to)."""
    a = np.asarray(a, dtype=np.float32)
    if qtype == "F32":
        return 0, a.astype("<f4").tobytes(), a
    if qtype == "F16":
        h = a.astype(np.float16)
        return 1, h.astype("<f2").tobytes(), h.astype(np.float32)
    if qtype == "BF16":
        return 30, st.f32_to_bf16(a).astype("<u2").tobytes(), bf16_round32(a)
    d, q = q8_0_quantize(a)
    return 8, q8_0_bytes(d, q), q8_0_dequant(d, q, a.shape)


def gg_write(path, tensors, kvs, version=3, align=32, magic=b"GGUF", ndims=None):
    """tensors: (name, shape (torch order), ggml type, bytes). Dimensions are written
    innermost first (ggml's ne), offsets aligned to align, the data section at the
    first aligned byte after the tensor infos."""
    infos, datas, off = [], [], 0
    for name, shape, gtype, blob in tensors:
        off += -off % align
        dims = list(reversed(shape))
        nd = len(dims) if ndims is None else ndims
        infos.append(gg_str(name) + struct.pack("<I", nd) +
                     b"".join(struct.pack("<Q", d) for d in dims) +
                     struct.pack("<IQ", gtype, off))
        datas.append((off, blob))
        off += len(blob)
    head = magic + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs)
    head += b"".join(infos)
    head += b"\0" * (-len(head) % align)
    body = bytearray()
    for o, blob in datas:
        body += b"\0" * (o - len(body)) + blob
    with open(path, "wb") as f:
        f.write(head + bytes(body))


def gguf_plan(W):
    """The types city96's tool and llama-quantize give: 1-D and small tensors F32,
    block matrices Q8_0 (their rows a multiple of 32), the other matrices F16 or BF16,
    the 5-D patch embedding F32 (fix_5d_tensors.py)."""
    plan = {}
    for i, (name, a) in enumerate(sorted(W.items())):
        if a.ndim <= 1 or a.size <= 1024 or a.ndim == 5 or name.endswith("modulation"):
            plan[name] = "F32"
        elif is_block_matrix(name, a) and a.shape[-1] % 32 == 0:
            plan[name] = "Q8_0"
        else:
            plan[name] = "BF16" if i % 2 else "F16"
    return plan


def gguf_kvs(arch):
    return [gg_kv("general.architecture", KV_STRING, arch),
            gg_kv("general.quantization_version", KV_UINT32, 2),
            gg_kv("general.file_type", KV_UINT32, 7)]


def cmd_gguf(a):
    config, W = load_dir(a.src)
    plan = gguf_plan(W)
    tensors, deq = [], {}
    for name in sorted(W):
        gtype, blob, back = gg_tensor(name, W[name], plan[name])
        tensors.append((a.prefix + name, W[name].shape, gtype, blob))
        deq[name] = back
    os.makedirs(os.path.dirname(os.path.abspath(a.file)), exist_ok=True)
    gg_write(a.file, tensors, gguf_kvs(a.arch))
    save_official(a.deq, config, deq)
    if a.config:
        shutil.copy(os.path.join(a.src, "config.json"), os.path.dirname(a.file))


def cmd_big(a):
    """Tensors past the readers' 256 KiB tile (read from a file in several steps), each
    type: FILE.gguf and DEQ/ (a safetensors file of the dequantised values, F32), and
    FP8.safetensors with scaled F8_E4M3 and F8_E5M2 tensors of the same size."""
    r = np.random.default_rng(2)
    x = r.standard_normal((1536, 160)).astype(np.float32)  # 245760 values, 961 KiB
    tensors, deq, entries = [], {}, []
    for name, qtype in (("q", "Q8_0"), ("h", "F16"), ("b", "BF16"), ("f", "F32")):
        gtype, blob, back = gg_tensor(name, x, qtype)
        tensors.append((name, x.shape, gtype, blob))
        deq[name] = back
    for name, fmt in (("e4", "F8_E4M3"), ("e5", "F8_E5M2")):
        codes = fp8_encode(x / np.float32(0.01), fmt)
        entries.append((name + ".weight", fmt, x.shape, codes.tobytes()))
        entries.append((name + ".scale_weight", "F32", (), np.float32(0.01).tobytes()))
        deq[name + ".weight"] = fp8_dequant(codes, fmt, np.float32(0.01))
    gg_write(a.file, tensors, gguf_kvs("wan"))
    save_raw(a.fp8, entries)
    os.makedirs(a.deq, exist_ok=True)
    st.save(os.path.join(a.deq, "q.safetensors"), {k: deq[k] for k in "qhbf"})
    os.makedirs(a.deq + "8", exist_ok=True)
    st.save(os.path.join(a.deq + "8", "f.safetensors"), {k: deq[k] for k in deq if "." in k})


# ---------------------------------------------------------------------------- hostile


def cmd_hostile_fp8(a):
    """Each file: one thing wrong with the scales (config.json beside each)."""
    _, W = load_dir(a.src)
    q = "blocks.0.self_attn.q.weight"
    base = []
    for name in sorted(W):
        x = W[name]
        if name == q:
            base.append((name, "F8_E4M3", x.shape, fp8_encode(x, "F8_E4M3").tobytes()))
        else:
            base.append(f32_entry(name, x))
    one = np.float32(0.5).tobytes()
    cases = {
        "not_fp8": [("blocks.0.self_attn.k.scale_weight", "F32", (), one)],
        "two_elems": [("blocks.0.self_attn.q.scale_weight", "F32", (2,), one + one)],
        "nan": [("blocks.0.self_attn.q.scale_weight", "F32", (),
                 np.float32(np.nan).tobytes())],
        "int": [("blocks.0.self_attn.q.scale_weight", "I32", (), struct.pack("<i", 2))],
        "orphan": [("blocks.0.nothing.scale_weight", "F32", (), one)],
        "both": [("blocks.0.self_attn.q.scale_weight", "F32", (), one),
                 ("blocks.0.self_attn.q.weight_scale", "F32", (), one)],
        "nvfp4": [quant_entry("blocks.0.self_attn.q", "nvfp4")],
        "quant_e5m2": [quant_entry("blocks.0.self_attn.q", "float8_e5m2")],
    }
    for case, extra in cases.items():
        d = os.path.join(a.dir, case)
        os.makedirs(d, exist_ok=True)
        shutil.copy(os.path.join(a.src, "config.json"), d)
        save_raw(os.path.join(d, WEIGHTS), base + extra)


def cmd_hostile_gguf(a):
    """One file per defect, beside the GGUF a.src would give; each named after it."""
    _, W = load_dir(a.src)
    plan = gguf_plan(W)
    good = []
    for name in sorted(W):
        gtype, blob, _ = gg_tensor(name, W[name], plan[name])
        good.append((name, W[name].shape, gtype, blob))
    kv = gguf_kvs("wan")
    os.makedirs(a.dir, exist_ok=True)
    P = lambda n: os.path.join(a.dir, n + ".gguf")  # noqa: E731
    gg_write(P("good"), good, kv)
    raw = open(P("good"), "rb").read()
    with open(P("trunc_header"), "wb") as f:
        f.write(raw[:20])
    with open(P("trunc_infos"), "wb") as f:
        f.write(raw[:400])
    with open(P("trunc_data"), "wb") as f:
        f.write(raw[:-7])
    with open(P("magic"), "wb") as f:
        f.write(b"GGUX" + raw[4:])
    gg_write(P("v1"), good, kv, version=1)
    with open(P("bigendian"), "wb") as f:
        f.write(raw[:4] + struct.pack(">I", 3) + raw[8:])
    # a Q4_K tensor, an unknown type
    q4 = [(n, s, 12 if n == "blocks.0.ffn.0.weight" else t, b) for n, s, t, b in good]
    gg_write(P("q4k"), q4, kv)
    unk = [(n, s, 99 if n == "blocks.0.ffn.0.weight" else t, b) for n, s, t, b in good]
    gg_write(P("unknown"), unk, kv)
    # counts far beyond the file
    with open(P("huge_tensors"), "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 1 << 40, 0))
    with open(P("huge_kvs"), "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 1 << 40))
    with open(P("huge_string"), "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 62) + b"k" * 64)
    with open(P("huge_array"), "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gg_str("a") +
                struct.pack("<IIQ", KV_ARRAY, KV_UINT32, 1 << 60))
    gg_write(P("align3"), good, kv + [gg_kv("general.alignment", KV_UINT32, 3)], align=32)
    # a tensor offset that is not aligned, one overlapping its neighbour, one past the end
    def patch_offset(b, name, delta, absolute=None):
        """The offset in the info of tensor name moved by delta (or set)."""
        key = gg_str(name)
        i = b.index(key) + len(key)
        (nd,) = struct.unpack_from("<I", b, i)
        j = i + 4 + 8 * nd + 4
        (o,) = struct.unpack_from("<Q", b, j)
        struct.pack_into("<Q", b, j, absolute if absolute is not None else o + delta)
        return b
    for case, name, delta, absolute in (("misaligned", "blocks.0.ffn.2.weight", 4, None),
                                        ("overlap", "blocks.0.ffn.2.weight", -32, None),
                                        ("past_end", "head.modulation", 0, 1 << 40)):
        with open(P(case), "wb") as f:
            f.write(bytes(patch_offset(bytearray(raw), name, delta, absolute)))
    # Q8_0 rows that are not whole blocks: a [4, 24] matrix declared Q8_0
    odd = list(good)
    odd.append(("blocks.0.extra.weight", (4, 24), 8, b"\0" * (34 * 3)))
    gg_write(P("q8_rows"), odd, kv)
    # a name twice; a name holding NUL
    gg_write(P("dup"), good + [good[0]], kv)
    gg_write(P("nul"), [(b"bad\0name", (1,), 0, b"\0" * 4)] + good, kv)
    # dimensions whose product overflows
    gg_write(P("overflow"), [("big", (1 << 40, 1 << 40), 0, b"")] + good, kv)
    # 9 dimensions
    gg_write(P("ndims"), [("deep", (1,) * 9, 0, b"\0" * 4)] + good, kv)
    # nested array
    with open(P("nested"), "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gg_str("a") +
                struct.pack("<IIQ", KV_ARRAY, KV_ARRAY, 1))
    # the architecture of another model
    gg_write(P("flux"), good, gguf_kvs("flux"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("tiny128")
    p.add_argument("out")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--model-type", default="t2v")
    p.add_argument("--in-dim", type=int, default=4)
    p.add_argument("--out-dim", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--img-emb", action="store_true")
    p.add_argument("--vace", action="store_true", help="a VACE tensor beside the model's")
    p = sub.add_parser("fp8")
    p.add_argument("src")
    p.add_argument("out")
    p.add_argument("deq")
    p.add_argument("--comfy", action="store_true")
    p.add_argument("--mixed", action="store_true",
                   help="weight_scale and comfy_quant (ComfyUI's mixed precision files)")
    p.add_argument("--single")
    p.add_argument("--pow2-scales", action="store_true",
                   help="scales rounded to powers of two (exact merges in the tests)")
    p.add_argument("--uniform", action="store_true",
                   help="every block matrix F8_E4M3 with its scale_weight (ComfyUI's "
                        "*_fp8_scaled releases), none F8_E5M2 or unscaled")
    p = sub.add_parser("ltx-fp8")
    p.add_argument("src")
    p.add_argument("out")
    p.add_argument("deq")
    p = sub.add_parser("comfy")
    p.add_argument("src")
    p.add_argument("file")
    p.add_argument("--config", action="store_true", help="config.json beside the file")
    p.add_argument("--internal", action="store_true",
                   help="HunyuanVideo's names as ComfyUI saves them")
    p = sub.add_parser("gguf")
    p.add_argument("src")
    p.add_argument("file")
    p.add_argument("deq")
    p.add_argument("--arch", default="wan")
    p.add_argument("--prefix", default="")
    p.add_argument("--config", action="store_true", help="config.json beside the file")
    p = sub.add_parser("big")
    p.add_argument("file")
    p.add_argument("fp8")
    p.add_argument("deq")
    p = sub.add_parser("hostile-fp8")
    p.add_argument("src")
    p.add_argument("dir")
    p = sub.add_parser("hostile-gguf")
    p.add_argument("src")
    p.add_argument("dir")
    a = ap.parse_args(argv)
    {"tiny128": cmd_tiny128, "fp8": cmd_fp8, "ltx-fp8": cmd_ltx_fp8, "comfy": cmd_comfy, "gguf": cmd_gguf,
     "big": cmd_big, "hostile-fp8": cmd_hostile_fp8, "hostile-gguf": cmd_hostile_gguf}[a.cmd](a)


if __name__ == "__main__":
    main()
