#!/usr/bin/python3
"""NumPy float64 reference of Wan2.2 (T2V-A14B, I2V-A14B, TI2V-5B).

Written from the semantics of the official Wan2.2 code (wan/modules/model.py,
wan/text2video.py, wan/image2video.py, wan/textimage2video.py, wan/configs/*), on
top of the Wan2.1 reference tests/ref/wan_ref.py (imported, not changed). Every
tensor is float64, batch size 1.

What Wan2.2 adds to the Wan2.1 forward:
  * the timestep may be given per token: t [L] (L = F'*H'*W' video tokens), so
    e = time_embedding(sinusoid(t_l)) is [L, D], e0 = time_projection(e) is
    [L, 6, D]; block l-th token modulation = blocks.i.modulation[0] + e0[l]; the
    head uses e[l]. A scalar t is the same for every token (Wan2.1);
  * model_type "i2v": the model input is cat(x, y) along channels, x the noisy
    latent [C, F, H, W], y [in_dim - C, F, H, W] = (4 mask channels, C image-latent
    channels); no CLIP / img_emb branch in Wan2.2;
  * the A14B checkpoints are two experts (high_noise_model/, low_noise_model/): the
    high-noise expert (and its guidance scale) runs while the int64 timestep
    t >= boundary * 1000;
  * TI2V-5B image mode: frame 0 of the latent is the image latent z, re-inserted after
    every step, and its tokens get t = 0.

Shapes: C = latent channels (out_dim), D = dim, L = tokens, Lc = text_len.
Run `wan22_ref.py -h` for the command line (make-tiny, forward, embed, block,
generate, schedule, compare).
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np as st  # noqa: E402
import wan_ref as ref  # noqa: E402

NUM_TRAIN_TIMESTEPS = 1000
HIGH_DIR = "high_noise_model"   # wan/configs/wan_t2v_A14B.py high_noise_checkpoint
LOW_DIR = "low_noise_model"     # wan/configs/wan_t2v_A14B.py low_noise_checkpoint
MODEL_TYPES = ("t2v", "i2v", "ti2v")

# Sampling defaults of the official configs (guidance of the A14B variants as the
# official tuple (low-noise expert, high-noise expert)).
VARIANTS = {
    "t2v-a14b": {"model_type": "t2v", "experts": True, "steps": 40, "shift": 12.0,
                 "guide": (3.0, 4.0), "boundary": 0.875},
    "i2v-a14b": {"model_type": "i2v", "experts": True, "steps": 40, "shift": 5.0,
                 "guide": (3.5, 3.5), "boundary": 0.900},
    "ti2v-5b": {"model_type": "ti2v", "experts": False, "steps": 50, "shift": 5.0,
                "guide": 5.0, "boundary": None},
    # a single Wan2.1-style t2v checkpoint (wan_ref.py make-tiny); Wan2.1 defaults
    "t2v": {"model_type": "t2v", "experts": False, "steps": 50, "shift": 5.0,
            "guide": 5.0, "boundary": None},
}


# ----------------------------------------------------------------------------
# Checkpoint


def normalize_config(raw):
    """config.json dict -> cfg (wan_ref.normalize_config, which only knows t2v, plus
    model_type t2v / i2v / ti2v)."""
    model_type = raw.get("model_type", "t2v")
    if model_type not in MODEL_TYPES:
        raise ValueError(f"model_type {model_type!r} is not one of {MODEL_TYPES}")
    cfg = ref.normalize_config(dict(raw, model_type="t2v"))
    cfg["model_type"] = model_type
    if model_type == "i2v" and cfg["in_dim"] <= cfg["out_dim"]:
        raise ValueError("an i2v model needs in_dim > out_dim (x and y concatenated)")
    return cfg


def load_model(model_dir):
    """One model folder (config.json + one file or shards + index) ->
    (cfg, W): W maps official tensor names to float64 arrays."""
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = normalize_config(json.load(f))
    files, weight_map = ref._weight_files(model_dir)
    W = {}
    for name in files:
        wanted = None if weight_map is None else {k for k, v in weight_map.items() if v == name}
        W.update(st.load(os.path.join(model_dir, name), float64=True, names=wanted))
    if weight_map is not None and set(weight_map) - set(W):
        raise KeyError(f"tensors in the index but not in shards: {sorted(set(weight_map) - set(W))[:5]}")
    missing = set(ref.tensor_shapes(cfg)) - set(W)
    if missing:
        raise KeyError(f"{model_dir}: missing tensors {sorted(missing)[:5]}")
    return cfg, W


def is_moe_dir(model_dir):
    """True for the A14B release layout: DIR/high_noise_model/ and DIR/low_noise_model/."""
    return all(os.path.exists(os.path.join(model_dir, d, "config.json")) for d in (HIGH_DIR, LOW_DIR))


ARCH_KEYS = ("model_type", "dim", "eps", "ffn_dim", "freq_dim", "in_dim", "out_dim",
             "num_heads", "num_layers", "text_len", "text_dim", "patch_size")


def config_disagreement(cfg_a, cfg_b):
    """-> list of 'key a vs b' for the architecture keys in which two configs differ."""
    return [f"{k} {cfg_a[k]} vs {cfg_b[k]}" for k in ARCH_KEYS if cfg_a[k] != cfg_b[k]]


def load_models(model_dir):
    """-> {"high": (cfg, W), "low": (cfg, W)} for the A14B layout (the two configs must
    agree), or {"single": (cfg, W)} for one model at DIR."""
    if not is_moe_dir(model_dir):
        return {"single": load_model(model_dir)}
    high = load_model(os.path.join(model_dir, HIGH_DIR))
    low = load_model(os.path.join(model_dir, LOW_DIR))
    diff = config_disagreement(high[0], low[0])
    if diff:
        raise ValueError(f"{model_dir}: the experts' configs disagree: {', '.join(diff)}")
    return {"high": high, "low": low}


def variant_of(models):
    """-> the VARIANTS key of loaded models."""
    cfg = next(iter(models.values()))[0]
    if "high" in models:
        if cfg["model_type"] == "ti2v":
            raise ValueError("a ti2v model in the two-expert layout")
        return f"{cfg['model_type']}-a14b"
    if cfg["model_type"] == "i2v":
        raise ValueError("an i2v model needs the two-expert layout (high_noise_model/, low_noise_model/)")
    return "ti2v-5b" if cfg["model_type"] == "ti2v" else "t2v"


# ----------------------------------------------------------------------------
# Model


def time_embed(cfg, W, t):
    """t: scalar or [L] -> (e [U, D], e0 [U, 6, D], index [L] or None) for the U distinct
    timestep values (sorted); token l uses row index[l] (index None: scalar t, one row).
    Equal timesteps thus get bit-identical embeddings."""
    D = cfg["dim"]
    t = np.asarray(t, dtype=np.float64)
    if t.ndim == 0:
        values, index = t.reshape(1), None
    else:
        values, index = np.unique(t.reshape(-1), return_inverse=True)
    sin = np.stack([ref.sinusoidal_embedding_1d(cfg["freq_dim"], v) for v in values])  # [U, freq]
    e = ref.linear(W, "time_embedding.2", ref.silu(ref.linear(W, "time_embedding.0", sin)))
    e0 = ref.linear(W, "time_projection.1", ref.silu(e)).reshape(len(values), 6, D)
    return e, e0, index


def model_input(cfg, x, y=None):
    """x [C, F, H, W] (+ y [in_dim - C, F, H, W]) -> cat(x, y) [in_dim, F, H, W], checked."""
    if cfg["model_type"] == "i2v" and y is None:
        raise ValueError("an i2v model needs y (mask + image latent) besides x")
    if y is not None:
        if y.shape[1:] != x.shape[1:]:
            raise ValueError(f"y {y.shape} and x {x.shape} differ in F, H, W")
        x = np.concatenate([x, y], axis=0)
    if x.shape[0] != cfg["in_dim"]:
        raise ValueError(f"the model takes {cfg['in_dim']} input channels, got {x.shape[0]}")
    return x


def embed(cfg, W, x, t, context, y=None):
    """x [C, F, H, W], t scalar or [L], context [Lt, text_dim], y optional (i2v) ->
    (tokens [L, D], e [L, D], e0 [L, 6, D], ctx [text_len, D], grid).
    e / e0 are given per token even for a scalar t."""
    D = cfg["dim"]
    x = model_input(cfg, x, y)
    patches, grid = ref.patchify(x, cfg["patch_size"])
    L = patches.shape[0]
    tokens = patches @ W["patch_embedding.weight"].reshape(D, -1).T + W["patch_embedding.bias"]
    t = np.asarray(t, dtype=np.float64)
    if t.ndim != 0 and t.size == 1:
        t = t.reshape(())
    if t.ndim != 0 and t.size != L:
        raise ValueError(f"t has {t.size} values; give 1 or one per token ({L})")
    e_u, e0_u, index = time_embed(cfg, W, t)
    if index is None:
        index = np.zeros(L, dtype=np.int64)
    ctx = ref.embed_text(cfg, W, context)
    return tokens, e_u[index], e0_u[index], ctx, grid


def block(cfg, W, i, x, e0, ctx, grid):
    """WanAttentionBlock i with per-token modulation: x [L, D], e0 [L, 6, D] (or [6, D]
    for all tokens), ctx [text_len, D] -> [L, D]."""
    p, eps = f"blocks.{i}.", cfg["eps"]
    mod = W[p + "modulation"][0] + e0            # [L, 6, D] or [6, D]
    shift_msa, scale_msa, gate_msa, shift_ffn, scale_ffn, gate_ffn = (
        mod[..., k, :] for k in range(6))        # each [L, D] or [D]
    h = ref.layer_norm(x, eps) * (1 + scale_msa) + shift_msa
    x = x + ref.self_attention(cfg, W, p + "self_attn.", h, grid) * gate_msa
    h = ref.layer_norm(x, eps, W[p + "norm3.weight"], W[p + "norm3.bias"])
    x = x + ref.cross_attention(cfg, W, p + "cross_attn.", h, ctx)
    h = ref.layer_norm(x, eps) * (1 + scale_ffn) + shift_ffn
    y = ref.linear(W, p + "ffn.2", ref.gelu_tanh(ref.linear(W, p + "ffn.0", h)))
    return x + y * gate_ffn


def head(cfg, W, x, e):
    """x [L, D], e [L, D] (or [D]) -> [L, pt*ph*pw*out_dim]; shift = row 0, scale = row 1
    of head.modulation[0] + e (per token)."""
    mod = W["head.modulation"][0] + e[..., None, :]   # [L, 2, D] or [2, D]
    shift, scale = mod[..., 0, :], mod[..., 1, :]
    return ref.linear(W, "head.head", ref.layer_norm(x, cfg["eps"]) * (1 + scale) + shift)


def forward(cfg, W, x, t, context, y=None):
    """x [C, F, H, W], t scalar or [L], context [Lt, text_dim], y [in_dim - C, F, H, W]
    (i2v; x = cat(x, y)) -> velocity [out_dim, F, H, W]."""
    x_tok, e, e0, ctx, grid = embed(cfg, W, x, t, context, y)
    for i in range(cfg["num_layers"]):
        x_tok = block(cfg, W, i, x_tok, e0, ctx, grid)
    return ref.unpatchify(head(cfg, W, x_tok, e), grid, cfg["patch_size"], cfg["out_dim"])


# ----------------------------------------------------------------------------
# Sampling


def _sampler_module():
    import sampler_ref  # tests/ref/sampler_ref.py
    return sampler_ref


def boundary_timestep(boundary):
    """The official threshold: cfg.boundary * num_train_timesteps (a Python float)."""
    return boundary * NUM_TRAIN_TIMESTEPS


def expert_plan(timesteps, boundary, guide):
    """timesteps int64 [steps], boundary (fraction, e.g. 0.875) or None, guide
    (low, high) or a float -> list of (expert, guidance) per step: "high" while
    t >= boundary*1000 (t.item() >= boundary as text2video.py), else "low";
    "single" when boundary is None."""
    if boundary is None:
        return [("single", float(guide))] * len(timesteps)
    low, high = (guide, guide) if np.isscalar(guide) else guide
    b = boundary_timestep(boundary)
    return [("high", float(high)) if int(t) >= b else ("low", float(low)) for t in timesteps]


def ti2v_mask(shape):
    """Latent shape [C, F, H, W] -> mask of ones with frame 0 zero (masks_like(zero=True))."""
    mask = np.ones(shape)
    mask[:, 0] = 0.0
    return mask


def ti2v_token_timesteps(mask, t, patch):
    """mask [C, F, H, W], t -> per-token t [L] = (mask[0][:, ::ph, ::pw] * t).flatten()
    (textimage2video.py; patch (1, 2, 2) so ::2): 0 on frame-0 tokens, t elsewhere."""
    if patch[0] != 1:
        raise ValueError("the TI2V per-token timesteps assume a temporal patch of 1")
    return (mask[0][:, ::patch[1], ::patch[2]] * float(t)).reshape(-1)


def generate(models, noise, context, context_null, steps, shift, guide, boundary=None,
             solver="unipc", image=None, callback=None):
    """The official sampling loop (text2video.py / image2video.py / textimage2video.py)
    in float64.

    models: {"high": (cfg, W), "low": (cfg, W)} or {"single": (cfg, W)};
    noise [C, F, H, W]; context / context_null [rows, text_dim];
    guide (low, high) or one float; boundary fraction (A14B) or None (single model);
    image: i2v -> y [4 + C, F, H, W] (passed to the cond and uncond forwards);
           ti2v -> z [C, 1, H, W] (image mode); else None.
    callback(i, t, expert, latent) after each step (latent after any re-insertion).
    -> latents [C, F, H, W]."""
    sampler_ref = _sampler_module()
    cfg = next(iter(models.values()))[0]
    mtype = cfg["model_type"]
    cls = {"euler": sampler_ref.EulerSampler, "unipc": sampler_ref.UniPCSampler}[solver]
    sampler = cls(steps, shift)
    x = np.asarray(noise, dtype=np.float64)
    if x.ndim != 4 or x.shape[0] != cfg["out_dim"]:
        raise ValueError(f"noise must be [{cfg['out_dim']}, F, H, W], got {x.shape}")
    if ("high" in models) != (boundary is not None):
        raise ValueError("a boundary goes with, and only with, the two-expert layout")
    y, mask, z = None, None, None
    if mtype == "i2v":
        if image is None:
            raise ValueError("an i2v model needs the image latent y [4 + C, F, H, W]")
        y = np.asarray(image, dtype=np.float64)
        if y.shape != (cfg["in_dim"] - cfg["out_dim"],) + x.shape[1:]:
            raise ValueError(f"y must be [{cfg['in_dim'] - cfg['out_dim']}, F, H, W] "
                             f"matching the noise, got {y.shape}")
    elif mtype == "ti2v" and image is not None:
        z = np.asarray(image, dtype=np.float64)
        if z.shape != (x.shape[0], 1) + x.shape[2:]:
            raise ValueError(f"z must be [C, 1, H, W] = {(x.shape[0], 1) + x.shape[2:]}, got {z.shape}")
        pt, ph, pw = cfg["patch_size"]
        if x.shape[2] % ph or x.shape[3] % pw:
            raise ValueError("TI2V image mode needs H and W divisible by the patch")
        mask = ti2v_mask(x.shape)
        x = (1.0 - mask) * z + mask * x
    elif image is not None:
        raise ValueError(f"a {mtype} model takes no image latent")
    plan = expert_plan(sampler.timesteps, boundary, guide)
    for i, t in enumerate(sampler.timesteps):
        expert, g = plan[i]
        mcfg, W = models[expert]
        tt = float(t) if mask is None else ti2v_token_timesteps(mask, t, mcfg["patch_size"])
        v_cond = forward(mcfg, W, x, tt, context, y)
        v_uncond = forward(mcfg, W, x, tt, context_null, y)
        x = sampler.step(i, v_uncond + g * (v_cond - v_uncond), x)
        if mask is not None:
            x = (1.0 - mask) * z + mask * x
        if callback is not None:
            callback(i, int(t), expert, x)
    return x


def sampling_options(variant, steps=None, shift=None, guidance=None, guide_low=None,
                     guide_high=None, boundary=None):
    """Command-line options over the variant defaults -> (steps, shift, guide, boundary):
    guide (low, high) for the A14B variants (guidance sets both), a float otherwise."""
    v = VARIANTS[variant]
    steps = v["steps"] if steps is None else steps
    shift = v["shift"] if shift is None else shift
    if v["experts"]:
        low, high = v["guide"]
        if guidance is not None:
            low = high = guidance
        low = low if guide_low is None else guide_low
        high = high if guide_high is None else guide_high
        guide = (float(low), float(high))
        boundary = v["boundary"] if boundary is None else boundary
    else:
        if guide_low is not None or guide_high is not None or boundary is not None:
            raise ValueError(f"{variant} is a single model: no --guide-low/--guide-high/--boundary")
        guide = float(v["guide"] if guidance is None else guidance)
    return int(steps), float(shift), guide, boundary


# ----------------------------------------------------------------------------
# Tiny random checkpoints

TINY_BASE = {
    "_class_name": "WanModel", "dim": 32, "eps": 1e-06, "ffn_dim": 64, "freq_dim": 16,
    "num_heads": 2, "num_layers": 2, "text_len": 8, "text_dim": 24,
}
TINY_CHANNELS = {  # variant -> (model_type, in_dim, out_dim)
    "t2v-a14b": ("t2v", 4, 4),
    "i2v-a14b": ("i2v", 2 * 4 + 4, 4),   # x 4 + mask 4 + image latent 4
    "ti2v-5b": ("ti2v", 8, 8),
}
DISAGREE = {"dim": 48, "num_heads": 3}   # the low-noise expert of --disagree


def tiny_config(variant, layers=2):
    model_type, in_dim, out_dim = TINY_CHANNELS[variant]
    conf = dict(TINY_BASE, model_type=model_type, in_dim=in_dim, out_dim=out_dim,
                num_layers=layers)
    return dict(sorted(conf.items()))  # keys in order, as the official config.json


def make_tiny(variant, output_dir, seed, layers=2, dtype="F32", disagree=False, shards=2):
    """Writes a tiny checkpoint in the released layout; -> {subfolder or "": (config, W)}.
    A14B: DIR/high_noise_model (seed) and DIR/low_noise_model (seed + 1); TI2V: DIR.
    Each: config.json, `shards` files diffusion_pytorch_model-0000k-of-0000n.safetensors
    and diffusion_pytorch_model.safetensors.index.json (shards 1: one file)."""
    config = tiny_config(variant, layers)
    out = {}
    if VARIANTS[variant]["experts"]:
        low = dict(config, **DISAGREE) if disagree else config
        parts = [(HIGH_DIR, config, seed), (LOW_DIR, low, seed + 1)]
    else:
        if disagree:
            raise ValueError("--disagree needs a two-expert variant")
        parts = [("", config, seed)]
    for sub, conf, s in parts:
        W = ref.random_weights(normalize_config(conf), s)
        ref.save_checkpoint(os.path.join(output_dir, sub) if sub else output_dir, conf, W,
                            shards=shards, dtype=dtype)
        out[sub] = (conf, W)
    return out


# ----------------------------------------------------------------------------
# Command line


def _fail(msg):
    print(f"wan22_ref.py: {msg}", file=sys.stderr)
    return 2


def _pick_model(model_dir, expert):
    if is_moe_dir(model_dir):
        return load_model(os.path.join(model_dir, HIGH_DIR if expert in (None, "high") else LOW_DIR))
    if expert is not None:
        raise ValueError(f"{model_dir} holds one model, not two experts: no --expert")
    return load_model(model_dir)


def _time_input(t):
    t = np.asarray(t, dtype=np.float64).reshape(-1)
    return float(t[0]) if t.size == 1 else t


def cmd_forward(args):
    cfg, W = _pick_model(args.model_dir, args.expert)
    if args.bf16_block_weights:
        W = ref.bf16_block_matrices(W)
    inp = st.load(args.inputs, float64=True)
    y = forward(cfg, W, inp["x"], _time_input(inp["t"]), inp["context"], inp.get("y"))
    st.save(args.output, {"y": y}, dtype="F64")


def cmd_embed(args):
    cfg, W = _pick_model(args.model_dir, args.expert)
    inp = st.load(args.inputs, float64=True)
    tokens, e, e0, ctx, grid = embed(cfg, W, inp["x"], _time_input(inp["t"]), inp["context"],
                                     inp.get("y"))
    st.save(args.output, {"tokens": tokens, "e": e, "e0": e0, "ctx": ctx,
                          "grid": np.array(grid, dtype=np.float64)}, dtype="F64")


def cmd_block(args):
    cfg, W = _pick_model(args.model_dir, args.expert)
    inp = st.load(args.inputs, float64=True)
    grid = tuple(int(round(float(v))) for v in np.asarray(inp["grid"]).reshape(-1)[:3])
    y = block(cfg, W, args.index, inp["x_tokens"], inp["e0"], inp["ctx"], grid)
    st.save(args.output, {"x_out": y}, dtype="F64")


def cmd_generate(args):
    models = load_models(args.model_dir)
    variant = variant_of(models)
    steps, shift, guide, boundary = sampling_options(
        variant, args.steps, args.shift, args.guidance, args.guide_low, args.guide_high,
        args.boundary)
    noise = st.load(args.noise, float64=True)["noise"]
    c = st.load(args.context, float64=True)
    # Missing context_null: zeros (as wan_ref.py generate). After the zero-padding to
    # text_len this equals one zero row: every row of the padded context is zero.
    context_null = c.get("context_null", np.zeros_like(c["context"]))
    image = None
    if args.image_latent:
        lat = st.load(args.image_latent, float64=True)
        key = {"i2v": "y", "ti2v": "z"}.get(next(iter(models.values()))[0]["model_type"])
        if key is None:
            raise ValueError(f"a {variant} model takes no --image-latent")
        if key not in lat:
            raise ValueError(f"{args.image_latent}: no tensor {key}")
        image = lat[key]
    trace = []
    x = generate(models, noise, c["context"], context_null, steps, shift, guide, boundary,
                 args.solver, image, callback=lambda i, t, ex, _x: trace.append((t, ex)))
    meta = {"variant": variant, "steps": steps, "shift": shift, "solver": args.solver,
            "guide": json.dumps(guide), "boundary": json.dumps(boundary),
            "timesteps": ",".join(str(t) for t, _ in trace),
            "experts": ",".join(ex for _, ex in trace)}
    st.save(args.output, {"latents": x}, metadata=meta, dtype="F64")


def cmd_schedule(args):
    steps, shift, guide, boundary = sampling_options(
        args.variant, args.steps, args.shift, args.guidance, args.guide_low, args.guide_high,
        args.boundary)
    _, timesteps = _sampler_module().sampling_schedule(steps, shift)
    for i, (t, (expert, g)) in enumerate(zip(timesteps, expert_plan(timesteps, boundary, guide))):
        print(f"{i} {int(t)} {expert} {g:g}")


def cmd_make_tiny(args):
    make_tiny(args.variant, args.output_dir, args.seed, args.layers, args.dtype,
              args.disagree, args.shards)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    def model_cmd(name, fn, help_):
        p = sub.add_parser(name, help=help_)
        p.add_argument("--model-dir", required=True)
        p.add_argument("--output", required=True)
        p.set_defaults(fn=fn)
        return p

    def expert_opt(p):
        p.add_argument("--expert", choices=("high", "low"),
                       help="the expert of a two-expert folder (default high)")

    p = model_cmd("forward", cmd_forward,
                  "x [C,F,H,W], t [1] or [L], context [rows,text_dim], y (i2v) -> y [out_dim,F,H,W]")
    p.add_argument("--inputs", required=True)
    expert_opt(p)
    p.add_argument("--bf16-block-weights", action="store_true",
                   help="round the block GEMM matrices to bf16 first")
    p = model_cmd("embed", cmd_embed, "x, t, context (, y) -> tokens, e [L,D], e0 [L,6,D], ctx, grid")
    p.add_argument("--inputs", required=True)
    expert_opt(p)
    p = model_cmd("block", cmd_block, "x_tokens, e0 [L,6,D] or [6,D], ctx, grid -> x_out")
    p.add_argument("--inputs", required=True)
    p.add_argument("--index", type=int, required=True)
    expert_opt(p)

    def sampling_opts(p):
        p.add_argument("--steps", type=int, help="default: 40 (A14B), 50 (TI2V-5B, Wan2.1 t2v)")
        p.add_argument("--shift", type=float, help="default: 12 (T2V-A14B), 5 (others)")
        p.add_argument("--guidance", type=float,
                       help="guidance of a single model, or of both experts")
        p.add_argument("--guide-low", type=float, help="low-noise expert (default 3.0 T2V, 3.5 I2V)")
        p.add_argument("--guide-high", type=float, help="high-noise expert (default 4.0 T2V, 3.5 I2V)")
        p.add_argument("--boundary", type=float,
                       help="high-noise expert while t >= B*1000 (default 0.875 T2V, 0.900 I2V)")

    p = model_cmd("generate", cmd_generate, "noise + context(_null) (+ image latent) -> latents")
    p.add_argument("--noise", required=True, help="file with noise [C,F,H,W]")
    p.add_argument("--context", required=True, help="file with context (and context_null)")
    p.add_argument("--image-latent",
                   help="I2V: file with y [4+C,F,H,W]; TI2V: file with z [C,1,H,W]")
    p.add_argument("--solver", choices=("euler", "unipc"), default="unipc")
    sampling_opts(p)

    p = sub.add_parser("schedule", help="print 'step timestep expert guidance' per step")
    p.add_argument("--variant", choices=sorted(VARIANTS), required=True)
    sampling_opts(p)
    p.set_defaults(fn=cmd_schedule)

    p = sub.add_parser("compare", help="max-abs difference of two tensors (wan_ref.py compare)")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--tensor-a")
    p.add_argument("--tensor-b")
    p.add_argument("--tol", type=float, default=1e-5)
    p.set_defaults(fn=ref.cmd_compare)

    p = sub.add_parser("make-tiny", help="tiny random checkpoint in the released layout")
    p.add_argument("--variant", choices=sorted(TINY_CHANNELS), required=True)
    p.add_argument("--output-dir", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dtype", choices=("F32", "BF16", "F16", "F64"), default="F32")
    p.add_argument("--shards", type=int, default=2, help="1: one diffusion_pytorch_model.safetensors")
    p.add_argument("--disagree", action="store_true",
                   help="A14B: the low-noise expert gets dim 48 / 3 heads (configs disagree)")
    p.set_defaults(fn=cmd_make_tiny)

    args = ap.parse_args(argv)
    try:
        return args.fn(args) or 0
    except (ValueError, KeyError, FileNotFoundError) as why:
        return _fail(why)


if __name__ == "__main__":
    sys.exit(main())
