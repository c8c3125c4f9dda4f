#!/usr/bin/python3
"""NumPy float64 reference of the Wan2.1 text-to-video diffusion transformer.

Written from the semantics of the official WanModel (wan/modules/model.py); every
tensor is float64, batch size 1. Shapes: D = dim, n = num_heads, d = head_dim,
L = number of video tokens = F'*H'*W', Lc = text_len, (pt, ph, pw) = patch size.
Linear weights are [out, in] as in the checkpoint: y = x @ W.T + b.

Run `wan_ref.py -h` for the command-line interface (forward, block, embed,
generate, compare, make-tiny).
"""
import argparse
import glob
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np as st  # noqa: E402

ROPE_THETA = 10000.0
ROPE_MAX_POS = 1024  # length of the official RoPE tables (positions 0..1023)
INDEX_NAME = "diffusion_pytorch_model.safetensors.index.json"
SINGLE_NAME = "diffusion_pytorch_model.safetensors"


# ----------------------------------------------------------------------------
# Checkpoint


def normalize_config(raw):
    """config.json dict -> cfg with defaults filled in and head_dim added."""
    cfg = dict(raw)
    cfg.setdefault("text_dim", 4096)
    cfg.setdefault("model_type", "t2v")
    cfg["patch_size"] = tuple(int(p) for p in cfg.get("patch_size", (1, 2, 2)))
    for key in ("dim", "ffn_dim", "freq_dim", "in_dim", "out_dim", "num_heads",
                "num_layers", "text_len", "text_dim"):
        cfg[key] = int(cfg[key])
    cfg["eps"] = float(cfg["eps"])
    if cfg["model_type"] != "t2v":
        raise ValueError(f"only t2v models are supported, got {cfg['model_type']}")
    if cfg["dim"] % cfg["num_heads"] or (cfg["dim"] // cfg["num_heads"]) % 2:
        raise ValueError("dim / num_heads must be an even integer")
    cfg["head_dim"] = cfg["dim"] // cfg["num_heads"]
    return cfg


def _weight_files(model_dir):
    index = os.path.join(model_dir, INDEX_NAME)
    if os.path.exists(index):
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
        return sorted(set(weight_map.values())), weight_map
    single = os.path.join(model_dir, SINGLE_NAME)
    if os.path.exists(single):
        return [SINGLE_NAME], None
    files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(model_dir, "*.safetensors")))
    if len(files) != 1:
        raise FileNotFoundError(f"{model_dir}: need one *.safetensors or {INDEX_NAME}")
    return files, None


def load_model(model_dir):
    """-> (cfg, W): W maps official tensor names to float64 arrays."""
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = normalize_config(json.load(f))
    files, weight_map = _weight_files(model_dir)
    W = {}
    for name in files:
        wanted = None if weight_map is None else {k for k, v in weight_map.items() if v == name}
        W.update(st.load(os.path.join(model_dir, name), float64=True, names=wanted))
    if weight_map is not None and set(weight_map) - set(W):
        raise KeyError(f"tensors in the index but not in shards: {sorted(set(weight_map) - set(W))[:5]}")
    return cfg, W


def save_checkpoint(model_dir, config, W, shards=1, dtype="F32"):
    """Writes config.json and the weights in the official layout: one
    diffusion_pytorch_model.safetensors, or `shards` files
    diffusion_pytorch_model-0000k-of-0000n.safetensors plus the index json."""
    os.makedirs(model_dir, exist_ok=True)
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    if shards <= 1:
        st.save(os.path.join(model_dir, SINGLE_NAME), W, dtype=dtype)
        return
    names = sorted(W)
    weight_map, total = {}, 0
    for k, part in enumerate(np.array_split(np.array(names, dtype=object), shards)):
        fname = f"diffusion_pytorch_model-{k + 1:05d}-of-{shards:05d}.safetensors"
        st.save(os.path.join(model_dir, fname), {n: W[n] for n in part}, dtype=dtype)
        weight_map.update({n: fname for n in part})
        total += sum(W[n].size * (8 if dtype == "F64" else 4 if dtype == "F32" else 2) for n in part)
    with open(os.path.join(model_dir, INDEX_NAME), "w") as f:
        json.dump({"metadata": {"total_size": int(total)}, "weight_map": weight_map}, f, indent=2)


# ----------------------------------------------------------------------------
# Elementary functions


def linear(W, prefix, x):
    """x [..., in] -> [..., out] with W[prefix.weight] [out, in], W[prefix.bias] [out]."""
    return x @ W[prefix + ".weight"].T + W[prefix + ".bias"]


def silu(x):
    return x / (1.0 + np.exp(-x))


def gelu_tanh(x):
    """nn.GELU(approximate='tanh')."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(x, eps, weight=None, bias=None):
    """LayerNorm over the last axis: biased variance, eps inside the sqrt."""
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def rms_norm(x, weight, eps):
    """WanRMSNorm over the whole last axis (all heads together) times weight."""
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * weight


def sinusoidal_embedding_1d(dim, t):
    """-> [dim] = [cos(t*w_k), sin(t*w_k)], w_k = 10000^(-k/half), k < half = dim/2."""
    half = dim // 2
    w = np.power(10000.0, -np.arange(half, dtype=np.float64) / half)
    a = float(t) * w
    return np.concatenate([np.cos(a), np.sin(a)])


def softmax(s, axis=-1):
    s = s - s.max(axis=axis, keepdims=True)
    p = np.exp(s)
    return p / p.sum(axis=axis, keepdims=True)


def attention(q, k, v, chunk=2048):
    """Full softmax attention per head, scale 1/sqrt(d), no mask.
    q [Lq, n, d], k [Lk, n, d], v [Lk, n, d] -> [Lq, n, d] (queries in chunks)."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    out = np.empty(q.shape[:2] + v.shape[2:], dtype=np.float64)
    for s in range(0, q.shape[0], chunk):
        scores = np.einsum("qnd,knd->nqk", q[s:s + chunk], k) * scale  # [n, lq, Lk]
        out[s:s + chunk] = np.einsum("nqk,knd->qnd", softmax(scores), v)
    return out


# ----------------------------------------------------------------------------
# 3-D rotary position embedding


def rope_split(head_dim):
    """Complex pairs per axis (frame, row, col): c = d/2 -> [c - 2*(c//3), c//3, c//3]."""
    c = head_dim // 2
    return (c - 2 * (c // 3), c // 3, c // 3)


def rope_freqs(pairs):
    """Frequencies of one axis with real size m = 2*pairs: 1/10000^(2i/m), i < pairs."""
    m = 2 * pairs
    return 1.0 / np.power(ROPE_THETA, np.arange(0, m, 2, dtype=np.float64) / m)


def rope_angles(grid, head_dim):
    """-> [L, d/2] angle of each pair of each token; tokens in (f, h, w) row-major
    order, pairs = concat(frame pairs, row pairs, col pairs)."""
    F, H, Wd = grid
    if max(grid) > ROPE_MAX_POS:
        raise ValueError(f"grid {grid} exceeds the {ROPE_MAX_POS}-position RoPE table")
    cf, ch, cw = rope_split(head_dim)
    f, h, w = np.meshgrid(np.arange(F), np.arange(H), np.arange(Wd), indexing="ij")
    return np.concatenate([
        f.reshape(-1, 1) * rope_freqs(cf),
        h.reshape(-1, 1) * rope_freqs(ch),
        w.reshape(-1, 1) * rope_freqs(cw)], axis=1)


def rope_apply(x, grid):
    """x [L, n, d]: each interleaved pair (x[2j], x[2j+1]) as a complex number is
    multiplied by exp(i*angle_j) of its token."""
    L, n, d = x.shape
    ang = rope_angles(grid, d)[:, None, :]  # [L, 1, d/2]
    cos, sin = np.cos(ang), np.sin(ang)
    re, im = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = re * cos - im * sin
    out[..., 1::2] = re * sin + im * cos
    return out


# ----------------------------------------------------------------------------
# Patches


def patchify(x, patch):
    """x [C, F, H, W] -> (patches [L, C*pt*ph*pw] with features ordered (C, pt, ph, pw),
    grid (F', H', W')). Like Conv3d with stride = kernel, trailing remainders are dropped."""
    pt, ph, pw = patch
    C = x.shape[0]
    grid = (x.shape[1] // pt, x.shape[2] // ph, x.shape[3] // pw)
    F, H, Wd = grid
    x = x[:, :F * pt, :H * ph, :Wd * pw].reshape(C, F, pt, H, ph, Wd, pw)
    x = x.transpose(1, 3, 5, 0, 2, 4, 6)  # [F', H', W', C, pt, ph, pw]
    return x.reshape(F * H * Wd, C * pt * ph * pw), grid


def unpatchify(y, grid, patch, channels):
    """y [L, pt*ph*pw*C] with features ordered (pt, ph, pw, C), channel innermost
    -> [C, F'*pt, H'*ph, W'*pw]."""
    F, H, Wd = grid
    pt, ph, pw = patch
    y = y.reshape(F, H, Wd, pt, ph, pw, channels)
    y = y.transpose(6, 0, 3, 1, 4, 2, 5)  # [C, F', pt, H', ph, W', pw]
    return y.reshape(channels, F * pt, H * ph, Wd * pw)


# ----------------------------------------------------------------------------
# Model


def embed(cfg, W, x, t, context):
    """x [C, F, H, W], t scalar, context [Lt, text_dim] ->
    (tokens [L, D], e [D], e0 [6, D], ctx [text_len, D], grid)."""
    D = cfg["dim"]
    patches, grid = patchify(x, cfg["patch_size"])
    tokens = patches @ W["patch_embedding.weight"].reshape(D, -1).T + W["patch_embedding.bias"]
    sin = sinusoidal_embedding_1d(cfg["freq_dim"], t)
    e = linear(W, "time_embedding.2", silu(linear(W, "time_embedding.0", sin)))  # [D]
    e0 = linear(W, "time_projection.1", silu(e)).reshape(6, D)
    ctx = embed_text(cfg, W, context)
    return tokens, e, e0, ctx, grid


def embed_text(cfg, W, context):
    """context [Lt, text_dim] -> zero-padded (or cut) to text_len rows ->
    Linear -> GELU(tanh) -> Linear -> [text_len, D]. Padded rows are not zero after this."""
    Lc = cfg["text_len"]
    padded = np.zeros((Lc, cfg["text_dim"]))
    rows = min(Lc, context.shape[0])
    padded[:rows] = context[:rows]
    return linear(W, "text_embedding.2", gelu_tanh(linear(W, "text_embedding.0", padded)))


def heads(x, n):
    """[L, D] -> [L, n, D/n]."""
    return x.reshape(x.shape[0], n, -1)


def _same(a):
    return a


def self_attention(cfg, W, p, x, grid):
    """x [L, D] (already normalized and modulated) -> [L, D]. cfg["act_round"] (if
    any) rounds each activation a block stores (bf16 activations, bf16_round)."""
    n, eps, r = cfg["num_heads"], cfg["eps"], cfg.get("act_round", _same)
    q = rms_norm(r(linear(W, p + "q", x)), W[p + "norm_q.weight"], eps)
    k = rms_norm(r(linear(W, p + "k", x)), W[p + "norm_k.weight"], eps)
    v = r(linear(W, p + "v", x))
    q, k = r(rope_apply(heads(q, n), grid)), r(rope_apply(heads(k, n), grid))
    a = r(attention(q, k, heads(v, n)).reshape(x.shape))
    return r(linear(W, p + "o", a))


def cross_attention(cfg, W, p, x, ctx):
    """x [L, D], ctx [text_len, D] -> [L, D]; no RoPE, every context row attended."""
    n, eps, r = cfg["num_heads"], cfg["eps"], cfg.get("act_round", _same)
    q = r(rms_norm(r(linear(W, p + "q", x)), W[p + "norm_q.weight"], eps))
    k = r(rms_norm(r(linear(W, p + "k", ctx)), W[p + "norm_k.weight"], eps))
    v = r(linear(W, p + "v", ctx))
    a = r(attention(heads(q, n), heads(k, n), heads(v, n)).reshape(x.shape))
    return r(linear(W, p + "o", a))


def block(cfg, W, i, x, e0, ctx, grid):
    """WanAttentionBlock i (qk_norm, cross_attn_norm): x [L, D] -> [L, D]; the token
    stream x stays unrounded."""
    p, eps, r = f"blocks.{i}.", cfg["eps"], cfg.get("act_round", _same)
    shift_msa, scale_msa, gate_msa, shift_ffn, scale_ffn, gate_ffn = W[p + "modulation"][0] + e0
    h = r(layer_norm(x, eps) * (1 + scale_msa) + shift_msa)
    x = x + self_attention(cfg, W, p + "self_attn.", h, grid) * gate_msa
    h = r(layer_norm(x, eps, W[p + "norm3.weight"], W[p + "norm3.bias"]))
    x = x + cross_attention(cfg, W, p + "cross_attn.", h, ctx)
    h = r(layer_norm(x, eps) * (1 + scale_ffn) + shift_ffn)
    y = r(linear(W, p + "ffn.2", r(gelu_tanh(linear(W, p + "ffn.0", h)))))
    return x + y * gate_ffn


def head(cfg, W, x, e):
    """x [L, D], e [D] (time embedding before the projection) -> [L, pt*ph*pw*out_dim]."""
    shift, scale = W["head.modulation"][0] + e
    return linear(W, "head.head", layer_norm(x, cfg["eps"]) * (1 + scale) + shift)


def forward(cfg, W, x, t, context):
    """x [C, F, H, W], t scalar, context [Lt, text_dim] -> velocity [out_dim, F, H, W]."""
    x_tok, e, e0, ctx, grid = embed(cfg, W, x, t, context)
    for i in range(cfg["num_layers"]):
        x_tok = block(cfg, W, i, x_tok, e0, ctx, grid)
    return unpatchify(head(cfg, W, x_tok, e), grid, cfg["patch_size"], cfg["out_dim"])


def _sampler_module():
    import sampler_ref  # tests/ref/sampler_ref.py, imported only when sampling
    return sampler_ref


def generate(cfg, W, noise, context, context_null, steps, shift, guidance, solver="unipc"):
    """Classifier-free guided flow-matching sampling from noise [C, F, H, W].
    At step i the model sees t = timesteps[i]; v = v_u + g*(v_c - v_u)."""
    sampler_ref = _sampler_module()
    cls = {"euler": sampler_ref.EulerSampler, "unipc": sampler_ref.UniPCSampler}[solver]
    sampler = cls(steps, shift)
    x = np.asarray(noise, dtype=np.float64)
    for i, t in enumerate(sampler.timesteps):
        v_cond = forward(cfg, W, x, float(t), context)
        v_uncond = forward(cfg, W, x, float(t), context_null)
        x = sampler.step(i, v_uncond + guidance * (v_cond - v_uncond), x)
    return x


# ----------------------------------------------------------------------------
# Tiny random checkpoint

TINY_CONFIG = {
    "_class_name": "WanModel", "_diffusers_version": "0.30.0", "model_type": "t2v",
    "dim": 32, "eps": 1e-06, "ffn_dim": 64, "freq_dim": 16, "in_dim": 4, "out_dim": 4,
    "num_heads": 2, "num_layers": 2, "text_len": 8, "text_dim": 24, "patch_size": [1, 2, 2],
}


def tensor_shapes(cfg):
    """Official tensor names -> shapes, in a fixed order."""
    D, F, pt, ph, pw = cfg["dim"], cfg["ffn_dim"], *cfg["patch_size"]
    shapes = {
        "patch_embedding.weight": (D, cfg["in_dim"], pt, ph, pw), "patch_embedding.bias": (D,),
        "text_embedding.0.weight": (D, cfg["text_dim"]), "text_embedding.0.bias": (D,),
        "text_embedding.2.weight": (D, D), "text_embedding.2.bias": (D,),
        "time_embedding.0.weight": (D, cfg["freq_dim"]), "time_embedding.0.bias": (D,),
        "time_embedding.2.weight": (D, D), "time_embedding.2.bias": (D,),
        "time_projection.1.weight": (6 * D, D), "time_projection.1.bias": (6 * D,),
    }
    for i in range(cfg["num_layers"]):
        p = f"blocks.{i}."
        shapes[p + "modulation"] = (1, 6, D)
        for a in ("self_attn.", "cross_attn."):
            for m in "qkvo":
                shapes[p + a + m + ".weight"] = (D, D)
                shapes[p + a + m + ".bias"] = (D,)
            shapes[p + a + "norm_q.weight"] = (D,)
            shapes[p + a + "norm_k.weight"] = (D,)
        shapes[p + "norm3.weight"] = (D,)
        shapes[p + "norm3.bias"] = (D,)
        shapes[p + "ffn.0.weight"], shapes[p + "ffn.0.bias"] = (F, D), (F,)
        shapes[p + "ffn.2.weight"], shapes[p + "ffn.2.bias"] = (D, F), (D,)
    shapes["head.head.weight"] = (cfg["out_dim"] * pt * ph * pw, D)
    shapes["head.head.bias"] = (cfg["out_dim"] * pt * ph * pw,)
    shapes["head.modulation"] = (1, 2, D)
    return shapes


def random_weights(cfg, seed):
    """Weights N(0,1)/sqrt(fan_in), biases N(0, 0.02^2), norm weights 1 + N(0, 0.1^2),
    modulation tables N(0,1)/sqrt(D) (as the official init); float32."""
    rng = np.random.default_rng(seed)
    W = {}
    for name, shape in tensor_shapes(cfg).items():
        if name.endswith("modulation"):
            a = rng.standard_normal(shape) / math.sqrt(cfg["dim"])
        elif "norm" in name and name.endswith(".weight"):
            a = 1.0 + 0.1 * rng.standard_normal(shape)
        elif name.endswith(".bias"):
            a = 0.02 * rng.standard_normal(shape)
        else:
            a = rng.standard_normal(shape) / math.sqrt(np.prod(shape[1:]))
        W[name] = a.astype(np.float32)
    return W


def make_tiny(output_dir, seed, layers=2, shards=1, dtype="F32"):
    config = dict(TINY_CONFIG, num_layers=layers)
    W = random_weights(normalize_config(config), seed)
    save_checkpoint(output_dir, config, W, shards=shards, dtype=dtype)
    return config, W


# ----------------------------------------------------------------------------
# Command line


def _scalar(a):
    return float(np.asarray(a).reshape(-1)[0])


def _grid(a):
    return tuple(int(round(float(v))) for v in np.asarray(a).reshape(-1)[:3])


def bf16_round(a):
    """Rounds to the nearest bfloat16 (ties to even), as float64: the value a bf16
    weight store holds."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


def bf16_block_matrices(W):
    """The block GEMM matrices (2-D tensors of blocks.N) rounded to bf16."""
    return {k: bf16_round(v) if k.startswith("blocks.") and v.ndim == 2 else v
            for k, v in W.items()}


def cmd_forward(args):
    cfg, W = load_model(args.model_dir)
    if args.bf16_block_weights:
        W = bf16_block_matrices(W)
    if args.bf16_acts:
        cfg = dict(cfg, act_round=bf16_round)
    inp = st.load(args.inputs, float64=True)
    y = forward(cfg, W, inp["x"], _scalar(inp["t"]), inp["context"])
    st.save(args.output, {"y": y}, dtype="F64")


def cmd_block(args):
    cfg, W = load_model(args.model_dir)
    inp = st.load(args.inputs, float64=True)
    y = block(cfg, W, args.index, inp["x_tokens"], inp["e0"], inp["ctx"], _grid(inp["grid"]))
    st.save(args.output, {"x_out": y}, dtype="F64")


def cmd_embed(args):
    cfg, W = load_model(args.model_dir)
    inp = st.load(args.inputs, float64=True)
    tokens, e, e0, ctx, grid = embed(cfg, W, inp["x"], _scalar(inp["t"]), inp["context"])
    out = {"tokens": tokens, "e": e, "e0": e0, "ctx": ctx, "grid": np.array(grid, dtype=np.float64)}
    st.save(args.output, out, dtype="F64")


def cmd_generate(args):
    cfg, W = load_model(args.model_dir)
    noise = st.load(args.noise, float64=True)["noise"]
    c = st.load(args.context, float64=True)
    # The official pipeline encodes a negative prompt for the unconditional pass;
    # zeros are only a fallback here, the tests pass context_null explicitly.
    context_null = c.get("context_null", np.zeros_like(c["context"]))
    x = generate(cfg, W, noise, c["context"], context_null, args.steps, args.shift,
                 args.guidance, args.solver)
    st.save(args.output, {"latents": x}, dtype="F64")


def _pick(tensors, name, path):
    if name is None:
        if len(tensors) != 1:
            raise SystemExit(f"{path}: holds {len(tensors)} tensors, name one")
        return next(iter(tensors.values()))
    if name not in tensors:
        raise SystemExit(f"{path}: no tensor {name}")
    return tensors[name]


def cmd_compare(args):
    a = _pick(st.load(args.a, float64=True), args.tensor_a, args.a)
    b = _pick(st.load(args.b, float64=True), args.tensor_b or args.tensor_a, args.b)
    if a.shape != b.shape:
        print(f"shape mismatch: {a.shape} vs {b.shape}")
        return 1
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    worst = float(diff.max()) if diff.size else 0.0
    if not np.all(np.isfinite(diff)):
        worst = float("inf")
    scale = float(np.abs(b).max()) if b.size else 0.0
    tol = args.tol * scale if args.rel else args.tol
    print(f"max_abs_diff {worst:.6e} (max |b| {scale:.6e}, tol {tol:g})")
    return 0 if worst <= tol else 1


def cmd_make_tiny(args):
    make_tiny(args.output_dir, args.seed, args.layers, args.shards, args.dtype)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    def model_cmd(name, fn, help_):
        p = sub.add_parser(name, help=help_)
        p.add_argument("--model-dir", required=True)
        p.add_argument("--output", required=True)
        p.set_defaults(fn=fn)
        return p

    p = model_cmd("forward", cmd_forward, "x [C,F,H,W], t [1], context [L,text_dim] -> y")
    p.add_argument("--inputs", required=True)
    p.add_argument("--bf16-block-weights", action="store_true",
                   help="round the block GEMM matrices to bf16 first")
    p.add_argument("--bf16-acts", action="store_true",
                   help="round every activation a block stores to bf16 (--act-dtype bf16)")
    p = model_cmd("block", cmd_block, "x_tokens, e0, ctx, grid -> x_out after block --index")
    p.add_argument("--inputs", required=True)
    p.add_argument("--index", type=int, required=True)
    p = model_cmd("embed", cmd_embed, "x, t, context -> tokens, e, e0, ctx, grid")
    p.add_argument("--inputs", required=True)
    p = model_cmd("generate", cmd_generate, "noise + context(_null) -> latents")
    p.add_argument("--noise", required=True)
    p.add_argument("--context", required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--shift", type=float, required=True)
    p.add_argument("--guidance", type=float, required=True)
    p.add_argument("--solver", choices=("euler", "unipc"), default="unipc")

    p = sub.add_parser("compare", help="max-abs difference of two tensors; exit 1 above tol")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--tensor-a")
    p.add_argument("--tensor-b")
    p.add_argument("--tol", type=float, default=1e-5)
    p.add_argument("--rel", action="store_true", help="tol is relative to max |b|")
    p.set_defaults(fn=cmd_compare)

    p = sub.add_parser("make-tiny", help="tiny random checkpoint in the official layout")
    p.add_argument("--output-dir", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--shards", type=int, default=1, help="> 1: sharded files + index json")
    p.add_argument("--dtype", choices=("F32", "F64", "F16", "BF16"), default="F32")
    p.set_defaults(fn=cmd_make_tiny)

    args = ap.parse_args(argv)
    return args.fn(args) or 0


if __name__ == "__main__":
    sys.exit(main())
