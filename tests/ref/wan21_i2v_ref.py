#!/usr/bin/python3
"""NumPy float64 reference of Wan2.1 image-to-video (I2V-14B) and first-last-frame-to-video
(FLF2V-14B).

Written from the semantics of the official Wan2.1 code (wan/modules/model.py WanModel
with model_type 'i2v' / 'flf2v', wan/image2video.py, wan/first_last_frame2video.py) on
top of the text-to-video reference tests/ref/wan_ref.py (imported, not changed). Every
tensor is float64, batch size 1.

What it adds to the Wan2.1 forward:
  * the model input is cat(x, y) along the channels (y: 4 mask channels, then the
    image latent), as Wan2.2 I2V-A14B;
  * the CLIP branch: clip_fea [Li, 1280] (the CLIP ViT-H/14 tokens of the image, 257;
    FLF2V: the first and the last frame's, [2, 257, 1280] read as [514, 1280] plus the
    learned img_emb.emb_pos) projected by img_emb (MLPProj: LayerNorm, Linear, exact
    GELU, Linear, LayerNorm; torch's default eps 1e-5) to ctx_img [Li, D];
  * every block's cross-attention (WanI2VCrossAttention) adds, to the attention of its
    query over the text, the attention of the same query over the image:
    k_img = rms(ctx_img Wk_img^T + b) * norm_k_img, v_img = ctx_img Wv_img^T + b, before
    the output projection o;
  * the conditional and unconditional passes read the same clip_fea and y.

Run `wan21_i2v_ref.py -h` for the command line (make-tiny, forward, generate).
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np as st  # noqa: E402
import wan_ref as ref  # noqa: E402

CLIP_DIM = 1280
CLIP_TOKENS = 257  # per image
IMG_LN_EPS = 1e-5  # torch.nn.LayerNorm's default (MLPProj)
MODEL_TYPES = {"i2v": 1, "flf2v": 2}  # images per video

# Sampling defaults (generate.py): steps, shift (i2v at 480P: 3), guidance 5
DEFAULTS = {"i2v": (40, 5.0, 5.0), "flf2v": (50, 16.0, 5.0)}

TINY_CONFIG = {
    "_class_name": "WanModel", "_diffusers_version": "0.30.0", "dim": 64, "eps": 1e-06,
    "ffn_dim": 128, "freq_dim": 32, "in_dim": 36, "num_heads": 2, "num_layers": 2,
    "out_dim": 16, "text_len": 16, "text_dim": 32,
}

COMFY = "model.diffusion_model."
# ComfyUI's single files: sizes the shapes tell (dim a multiple of 128: heads of 128;
# text_len 512)
TINY128 = {"dim": 128, "ffn_dim": 256, "num_heads": 1, "text_len": 512}

_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x):
    """nn.GELU(): 0.5 x (1 + erf(x / sqrt 2))."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def normalize_config(raw):
    """config.json (official WanModel, model_type i2v or flf2v) -> cfg."""
    raw = dict(raw)
    mtype = raw.get("model_type")
    if mtype not in MODEL_TYPES:
        raise ValueError(f"model_type must be one of {sorted(MODEL_TYPES)}, got {mtype}")
    cfg = ref.normalize_config(dict(raw, model_type="t2v"))
    cfg["model_type"] = mtype
    cfg["image_tokens"] = CLIP_TOKENS * MODEL_TYPES[mtype]
    return cfg


def load_model(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = normalize_config(json.load(f))
    files, weight_map = ref._weight_files(model_dir)
    W = {}
    for name in files:
        W.update(st.load(os.path.join(model_dir, name), float64=True))
    return cfg, {k[len(COMFY):] if k.startswith(COMFY) else k: v for k, v in W.items()}


def tensor_shapes(cfg):
    """Official names -> shapes: the text-to-video tensors plus the CLIP branch."""
    D = cfg["dim"]
    shapes = ref.tensor_shapes(cfg)
    shapes.update({
        "img_emb.proj.0.weight": (CLIP_DIM,), "img_emb.proj.0.bias": (CLIP_DIM,),
        "img_emb.proj.1.weight": (CLIP_DIM, CLIP_DIM), "img_emb.proj.1.bias": (CLIP_DIM,),
        "img_emb.proj.3.weight": (D, CLIP_DIM), "img_emb.proj.3.bias": (D,),
        "img_emb.proj.4.weight": (D,), "img_emb.proj.4.bias": (D,),
    })
    if cfg["model_type"] == "flf2v":
        shapes["img_emb.emb_pos"] = (1, 2 * CLIP_TOKENS, CLIP_DIM)
    for i in range(cfg["num_layers"]):
        p = f"blocks.{i}.cross_attn."
        shapes.update({p + "k_img.weight": (D, D), p + "k_img.bias": (D,),
                       p + "v_img.weight": (D, D), p + "v_img.bias": (D,),
                       p + "norm_k_img.weight": (D,)})
    return shapes


def random_weights(cfg, seed):
    """wan_ref.random_weights for the text-to-video tensors; the CLIP branch's from
    seed + 1: its norms' weights 1 + N(0, 0.1^2), biases N(0, 0.02^2), emb_pos
    N(0, 0.1^2), matrices N(0, 1)/sqrt(fan_in)."""
    W = ref.random_weights(cfg, seed)
    rng = np.random.default_rng(seed + 1)
    for name, shape in tensor_shapes(cfg).items():
        if name in W:
            continue
        if name.endswith(".bias"):
            a = 0.02 * rng.standard_normal(shape)
        elif len(shape) == 1 or name == "img_emb.emb_pos":
            a = (1.0 if len(shape) == 1 else 0.0) + 0.1 * rng.standard_normal(shape)
        else:
            a = rng.standard_normal(shape) / math.sqrt(np.prod(shape[1:]))
        W[name] = a.astype(np.float32)
    return W


def image_embed(cfg, W, clip_fea):
    """clip_fea [Li, 1280] (FLF2V: [2, 257, 1280] flattened) -> ctx_img [Li, D]."""
    h = np.asarray(clip_fea, dtype=np.float64).reshape(-1, CLIP_DIM)
    if h.shape[0] != cfg["image_tokens"]:
        raise ValueError(f"clip_fea must hold {cfg['image_tokens']} tokens, got {h.shape[0]}")
    if "img_emb.emb_pos" in W:
        h = h + W["img_emb.emb_pos"][0]
    h = ref.layer_norm(h, IMG_LN_EPS, W["img_emb.proj.0.weight"], W["img_emb.proj.0.bias"])
    h = ref.linear(W, "img_emb.proj.3", gelu(ref.linear(W, "img_emb.proj.1", h)))
    return ref.layer_norm(h, IMG_LN_EPS, W["img_emb.proj.4.weight"], W["img_emb.proj.4.bias"])


def cross_attention(cfg, W, p, x, ctx, ctx_img):
    """WanI2VCrossAttention: x [L, D], ctx [text_len, D], ctx_img [Li, D] -> [L, D]."""
    n, eps = cfg["num_heads"], cfg["eps"]
    q = ref.heads(ref.rms_norm(ref.linear(W, p + "q", x), W[p + "norm_q.weight"], eps), n)
    k = ref.rms_norm(ref.linear(W, p + "k", ctx), W[p + "norm_k.weight"], eps)
    v = ref.linear(W, p + "v", ctx)
    ki = ref.rms_norm(ref.linear(W, p + "k_img", ctx_img), W[p + "norm_k_img.weight"], eps)
    vi = ref.linear(W, p + "v_img", ctx_img)
    a = ref.attention(q, ref.heads(k, n), ref.heads(v, n)).reshape(x.shape)
    a = a + ref.attention(q, ref.heads(ki, n), ref.heads(vi, n)).reshape(x.shape)
    return ref.linear(W, p + "o", a)


def block(cfg, W, i, x, e0, ctx, ctx_img, grid):
    p, eps = f"blocks.{i}.", cfg["eps"]
    shift_msa, scale_msa, gate_msa, shift_ffn, scale_ffn, gate_ffn = W[p + "modulation"][0] + e0
    h = ref.layer_norm(x, eps) * (1 + scale_msa) + shift_msa
    x = x + ref.self_attention(cfg, W, p + "self_attn.", h, grid) * gate_msa
    h = ref.layer_norm(x, eps, W[p + "norm3.weight"], W[p + "norm3.bias"])
    x = x + cross_attention(cfg, W, p + "cross_attn.", h, ctx, ctx_img)
    h = ref.layer_norm(x, eps) * (1 + scale_ffn) + shift_ffn
    y = ref.linear(W, p + "ffn.2", ref.gelu_tanh(ref.linear(W, p + "ffn.0", h)))
    return x + y * gate_ffn


def forward(cfg, W, x, t, context, clip_fea, y):
    """x [C, F, H, W], t scalar, context [Lt, text_dim], clip_fea [Li, 1280],
    y [in_dim - C, F, H, W] -> velocity [out_dim, F, H, W]."""
    if y.shape[1:] != x.shape[1:] or x.shape[0] + y.shape[0] != cfg["in_dim"]:
        raise ValueError(f"x {x.shape} and y {y.shape} do not make {cfg['in_dim']} channels")
    x_tok, e, e0, ctx, grid = ref.embed(cfg, W, np.concatenate([x, y]), t, context)
    ctx_img = image_embed(cfg, W, clip_fea)
    for i in range(cfg["num_layers"]):
        x_tok = block(cfg, W, i, x_tok, e0, ctx, ctx_img, grid)
    return ref.unpatchify(ref.head(cfg, W, x_tok, e), grid, cfg["patch_size"], cfg["out_dim"])


def generate(cfg, W, noise, context, context_null, clip_fea, y, steps, shift, guidance,
             solver="unipc"):
    """The official loop (image2video.py): both passes read clip_fea and y."""
    sampler_ref = ref._sampler_module()
    cls = {"euler": sampler_ref.EulerSampler, "unipc": sampler_ref.UniPCSampler}[solver]
    sampler = cls(steps, shift)
    x = np.asarray(noise, dtype=np.float64)
    for i, t in enumerate(sampler.timesteps):
        v_c = forward(cfg, W, x, float(t), context, clip_fea, y)
        v_u = forward(cfg, W, x, float(t), context_null, clip_fea, y)
        x = sampler.step(i, v_u + guidance * (v_c - v_u), x)
    return x


# ----------------------------------------------------------------------------
# Released layouts


def diffusers_config(cfg):
    """WanTransformer3DModel's config.json of a Wan2.1 I2V / FLF2V checkpoint, as
    diffusers' scripts/convert_wan_to_diffusers.py writes it."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import to_diffusers
    conf = to_diffusers.config(cfg)
    conf.update(image_dim=CLIP_DIM, added_kv_proj_dim=cfg["dim"],
                pos_embed_seq_len=2 * CLIP_TOKENS if cfg["model_type"] == "flf2v" else None)
    if cfg["text_len"] != 512:
        conf["text_len"] = cfg["text_len"]
    return conf


def make_tiny(variant, output_dir, seed, layers=2, layout="official", shards=2):
    """official: config.json + shards; diffusers: its names and config (one folder);
    comfy: one file of model.diffusion_model.* names (sizes TINY128) with the official
    config.json beside it for this reference (ditstar is given the file)."""
    config = dict(TINY_CONFIG, model_type=variant, num_layers=layers)
    if layout == "comfy":
        config.update(TINY128)
    cfg = normalize_config(config)
    W = random_weights(cfg, seed)
    if layout == "official":
        ref.save_checkpoint(output_dir, dict(sorted(config.items())), W, shards=shards)
    elif layout == "diffusers":
        import to_diffusers
        ref.save_checkpoint(output_dir, diffusers_config(cfg),
                            {to_diffusers.rename(k): v for k, v in W.items()}, shards=shards)
    elif layout == "comfy":
        os.makedirs(output_dir, exist_ok=True)
        with open(os.path.join(output_dir, "config.json"), "w") as f:
            json.dump(dict(sorted(config.items())), f, indent=2)
        st.save(os.path.join(output_dir, f"wan2.1_{variant}_tiny.safetensors"),
                {COMFY + k: v for k, v in W.items()})
    else:
        raise ValueError(f"unknown layout {layout}")
    return cfg, W


# ----------------------------------------------------------------------------
# Command line


def _inputs(path):
    """The inputs, a leading batch of 1 dropped (the official forward's shapes)."""
    inp = st.load(path, float64=True)
    for k, nd in (("x", 4), ("y", 4), ("context", 2)):
        if inp[k].ndim == nd + 1 and inp[k].shape[0] == 1:
            inp[k] = inp[k][0]
    return inp


def cmd_forward(args):
    cfg, W = load_model(args.model_dir)
    inp = _inputs(args.inputs)
    t = float(np.asarray(inp["t"]).reshape(-1)[0])
    out = forward(cfg, W, inp["x"], t, inp["context"], inp["clip_fea"], inp["y"])
    st.save(args.output, {"y": out}, dtype="F64")


def cmd_generate(args):
    cfg, W = load_model(args.model_dir)
    steps, shift, guidance = DEFAULTS[cfg["model_type"]]
    noise = st.load(args.noise, float64=True)["noise"]
    c = st.load(args.context, float64=True)
    img = st.load(args.image_latent, float64=True)
    clip = c["clip_fea"] if "clip_fea" in c else img["clip_fea"]
    x = generate(cfg, W, noise, c["context"], c.get("context_null", np.zeros_like(c["context"])),
                 clip, img["y"], args.steps or steps, args.shift or shift,
                 guidance if args.guidance is None else args.guidance, args.solver)
    st.save(args.output, {"latents": x}, dtype="F64")


def cmd_make_tiny(args):
    make_tiny(args.variant, args.output_dir, args.seed, args.layers, args.layout, args.shards)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("forward", help="x, t, context, clip_fea, y -> y (velocity)")
    p.add_argument("--model-dir", required=True)
    p.add_argument("--inputs", required=True)
    p.add_argument("--output", required=True)
    p.set_defaults(fn=cmd_forward)
    p = sub.add_parser("generate", help="noise + context(_null) + clip_fea + y -> latents")
    p.add_argument("--model-dir", required=True)
    p.add_argument("--noise", required=True)
    p.add_argument("--context", required=True, help="context, context_null (, clip_fea)")
    p.add_argument("--image-latent", required=True, help="y (, clip_fea)")
    p.add_argument("--output", required=True)
    p.add_argument("--steps", type=int)
    p.add_argument("--shift", type=float)
    p.add_argument("--guidance", type=float)
    p.add_argument("--solver", choices=("euler", "unipc"), default="unipc")
    p.set_defaults(fn=cmd_generate)
    p = sub.add_parser("make-tiny", help="tiny random checkpoint in a released layout")
    p.add_argument("--variant", choices=sorted(MODEL_TYPES), required=True)
    p.add_argument("--output-dir", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--layout", choices=("official", "diffusers", "comfy"), default="official")
    p.add_argument("--shards", type=int, default=2)
    p.set_defaults(fn=cmd_make_tiny)
    args = ap.parse_args(argv)
    return args.fn(args) or 0


if __name__ == "__main__":
    sys.exit(main())
