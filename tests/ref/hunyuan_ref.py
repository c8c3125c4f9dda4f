#!/usr/bin/python3
"""NumPy float64 reference of the HunyuanVideo 1.0 transformer (HYVideo-T/2-cfgdistill).

Written from the semantics of the official HYVideoDiffusionTransformer
(hyvideo/modules/models.py, token_refiner.py, embed_layers.py, mlp_layers.py,
modulate_layers.py, norm_layers.py, posemb_layers.py, attenion.py), its sampler
(hyvideo/diffusion/schedulers/scheduling_flow_match_discrete.py, pipeline
hunyuan_video.py) and the RoPE tables of hyvideo/inference.py. Every tensor is
float64, batch size 1; the sinusoids of t and guidance and the RoPE angles are
computed in float64 too (the official code uses float32 there).

Shapes: C channels, D hidden_size, n heads, d = D/n, M = D*mlp_width_ratio,
(F', H', W') the patched grid, Li = F'*H'*W' image tokens, L text tokens of which
the first V are valid (a prefix mask), Ct / Ct2 the two text-state widths.
Linear weights are [out, in]: y = x @ W.T + b.

Joint attention runs over [image tokens; text tokens] in two segments, as the
official flash varlen call with cu_seqlens [0, Li+V, Li+L]: the first Li+V tokens
attend among themselves, the L-V padded text tokens among themselves (their rows
never reach the image output).

Run `hunyuan_ref.py -h` for the command line (make-tiny, inputs, forward, refiner,
double, single, generate, schedule, names, compare).
"""
import argparse
import glob
import json
import math
import os
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np as st  # noqa: E402
import wan_ref  # noqa: E402  (compare)

EPS = 1e-6          # every LayerNorm and RMSNorm of the model
FREQ_DIM = 256      # TimestepEmbedder frequency_embedding_size
MAX_PERIOD = 10000.0

# ----------------------------------------------------------------------------
# diffusers names (HunyuanVideoTransformer3DModel), as diffusers'
# loaders/single_file_utils.py::convert_hunyuan_video_transformer_to_diffusers and
# scripts/convert_hunyuan_video_to_diffusers.py rename the official state dict.
# Entries: (official name, diffusers name, rows). rows None: the whole tensor; else
# the diffusers tensor is the official one's rows in those pieces, concatenated:
# "q" "k" "v" = [0,D) [D,2D) [2D,3D) of a fused qkv (or of single linear1), "mlp" =
# [3D, 3D+M) of single linear1, "swap" = [D,2D) then [0,D) (the final adaLN's
# (shift, scale) stored as (scale, shift)). Each pattern is given for .weight and
# .bias alike (norm weights have no bias: "W" only).
DIFFUSERS_TOP = [
    ("img_in.proj", "x_embedder.proj", None),
    ("time_in.mlp.0", "time_text_embed.timestep_embedder.linear_1", None),
    ("time_in.mlp.2", "time_text_embed.timestep_embedder.linear_2", None),
    ("guidance_in.mlp.0", "time_text_embed.guidance_embedder.linear_1", None),
    ("guidance_in.mlp.2", "time_text_embed.guidance_embedder.linear_2", None),
    ("vector_in.in_layer", "time_text_embed.text_embedder.linear_1", None),
    ("vector_in.out_layer", "time_text_embed.text_embedder.linear_2", None),
    ("txt_in.input_embedder", "context_embedder.proj_in", None),
    ("txt_in.t_embedder.mlp.0", "context_embedder.time_text_embed.timestep_embedder.linear_1", None),
    ("txt_in.t_embedder.mlp.2", "context_embedder.time_text_embed.timestep_embedder.linear_2", None),
    ("txt_in.c_embedder.linear_1", "context_embedder.time_text_embed.text_embedder.linear_1", None),
    ("txt_in.c_embedder.linear_2", "context_embedder.time_text_embed.text_embedder.linear_2", None),
    ("final_layer.linear", "proj_out", None),
    ("final_layer.adaLN_modulation.1", "norm_out.linear", "swap"),
]
# txt_in.individual_token_refiner.blocks.{r}. -> context_embedder.token_refiner.refiner_blocks.{r}.
DIFFUSERS_REFINER = [
    ("norm1", "norm1", None), ("norm2", "norm2", None),
    ("self_attn_qkv", "attn.to_q", "q"), ("self_attn_qkv", "attn.to_k", "k"),
    ("self_attn_qkv", "attn.to_v", "v"), ("self_attn_proj", "attn.to_out.0", None),
    ("mlp.fc1", "ff.net.0.proj", None), ("mlp.fc2", "ff.net.2", None),
    ("adaLN_modulation.1", "norm_out.linear", None),
]
# double_blocks.{i}. -> transformer_blocks.{i}.
DIFFUSERS_DOUBLE = [
    ("img_mod.linear", "norm1.linear", None), ("txt_mod.linear", "norm1_context.linear", None),
    ("img_attn_qkv", "attn.to_q", "q"), ("img_attn_qkv", "attn.to_k", "k"),
    ("img_attn_qkv", "attn.to_v", "v"),
    ("txt_attn_qkv", "attn.add_q_proj", "q"), ("txt_attn_qkv", "attn.add_k_proj", "k"),
    ("txt_attn_qkv", "attn.add_v_proj", "v"),
    ("img_attn_q_norm", "attn.norm_q", "W"), ("img_attn_k_norm", "attn.norm_k", "W"),
    ("txt_attn_q_norm", "attn.norm_added_q", "W"), ("txt_attn_k_norm", "attn.norm_added_k", "W"),
    ("img_attn_proj", "attn.to_out.0", None), ("txt_attn_proj", "attn.to_add_out", None),
    ("img_mlp.fc1", "ff.net.0.proj", None), ("img_mlp.fc2", "ff.net.2", None),
    ("txt_mlp.fc1", "ff_context.net.0.proj", None), ("txt_mlp.fc2", "ff_context.net.2", None),
]
# single_blocks.{i}. -> single_transformer_blocks.{i}.
DIFFUSERS_SINGLE = [
    ("linear1", "attn.to_q", "q"), ("linear1", "attn.to_k", "k"), ("linear1", "attn.to_v", "v"),
    ("linear1", "proj_mlp", "mlp"), ("linear2", "proj_out", None),
    ("q_norm", "attn.norm_q", "W"), ("k_norm", "attn.norm_k", "W"),
    ("modulation.linear", "norm.linear", None),
]


def diffusers_table(cfg):
    """-> [(diffusers name, official name, rows [(a, b), ...] or None)] for every
    tensor of the official state dict of cfg."""
    D, M = cfg["hidden_size"], cfg["mlp_hidden"]
    pieces = {None: None, "W": None, "q": [(0, D)], "k": [(D, 2 * D)], "v": [(2 * D, 3 * D)],
              "mlp": [(3 * D, 3 * D + M)], "swap": [(D, 2 * D), (0, D)]}
    groups = [("", "", DIFFUSERS_TOP)]
    groups += [(f"txt_in.individual_token_refiner.blocks.{r}.",
                f"context_embedder.token_refiner.refiner_blocks.{r}.", DIFFUSERS_REFINER)
               for r in range(cfg["refiner_depth"])]
    groups += [(f"double_blocks.{i}.", f"transformer_blocks.{i}.", DIFFUSERS_DOUBLE)
               for i in range(cfg["mm_double_blocks_depth"])]
    groups += [(f"single_blocks.{i}.", f"single_transformer_blocks.{i}.", DIFFUSERS_SINGLE)
               for i in range(cfg["mm_single_blocks_depth"])]
    shapes = tensor_shapes(cfg)
    table = []
    for po, pd, entries in groups:
        for o, d, rows in entries:
            for suffix in ((".weight",) if rows == "W" else (".weight", ".bias")):
                if po + o + suffix in shapes:
                    table.append((pd + d + suffix, po + o + suffix, pieces[rows]))
    return table


# ----------------------------------------------------------------------------
# Configuration and checkpoints

# HYVideoDiffusionTransformer.__init__ defaults, plus hyvideo/config.py's defaults for
# the three values the official model takes from its args
OFFICIAL_DEFAULTS = {
    "patch_size": [1, 2, 2], "in_channels": 4, "out_channels": None, "hidden_size": 3072,
    "heads_num": 24, "mlp_width_ratio": 4.0, "mlp_act_type": "gelu_tanh",
    "mm_double_blocks_depth": 20, "mm_single_blocks_depth": 40, "rope_dim_list": [16, 56, 56],
    "qkv_bias": True, "qk_norm": True, "qk_norm_type": "rms", "guidance_embed": False,
    "text_projection": "single_refiner", "use_attention_mask": True,
    "text_states_dim": 4096, "text_states_dim_2": 768, "rope_theta": 256,
}
# HunyuanVideoTransformer3DModel.__init__ defaults
DIFFUSERS_DEFAULTS = {
    "in_channels": 16, "out_channels": 16, "num_attention_heads": 24, "attention_head_dim": 128,
    "num_layers": 20, "num_single_layers": 40, "num_refiner_layers": 2, "mlp_ratio": 4.0,
    "patch_size": 2, "patch_size_t": 1, "qk_norm": "rms_norm", "guidance_embeds": True,
    "text_embed_dim": 4096, "pooled_projection_dim": 768, "rope_theta": 256.0,
    "rope_axes_dim": [16, 56, 56], "image_condition_type": None,
}
TINY_CONFIG = dict(OFFICIAL_DEFAULTS, _class_name="HYVideoDiffusionTransformer", in_channels=4,
                   out_channels=4, hidden_size=64, heads_num=2, mm_double_blocks_depth=2,
                   mm_single_blocks_depth=4, rope_dim_list=[8, 12, 12], guidance_embed=True,
                   text_states_dim=32, text_states_dim_2=24)
# HYVideo-T/2-cfgdistill (HUNYUAN_VIDEO_CONFIG; 16 latent channels)
FULL_CONFIG = dict(OFFICIAL_DEFAULTS, in_channels=16, out_channels=16, guidance_embed=True)
DIFFUSERS_CLASS = "HunyuanVideoTransformer3DModel"
OFFICIAL_FILE, OFFICIAL_INDEX = "model.safetensors", "model.safetensors.index.json"
DIFFUSERS_FILE = "diffusion_pytorch_model.safetensors"
DIFFUSERS_INDEX = "diffusion_pytorch_model.safetensors.index.json"


def normalize_config(raw):
    """config.json (official keys, or diffusers' HunyuanVideoTransformer3DModel keys)
    -> cfg in official terms plus head_dim, mlp_hidden, refiner_depth."""
    if raw.get("_class_name") == DIFFUSERS_CLASS or "num_attention_heads" in raw:
        r = dict(DIFFUSERS_DEFAULTS, **raw)
        if r["image_condition_type"]:
            raise ValueError("image-conditioned (I2V) HunyuanVideo is not supported")
        raw = dict(patch_size=[r["patch_size_t"], r["patch_size"], r["patch_size"]],
                   in_channels=r["in_channels"], out_channels=r["out_channels"],
                   hidden_size=r["num_attention_heads"] * r["attention_head_dim"],
                   heads_num=r["num_attention_heads"], mlp_width_ratio=r["mlp_ratio"],
                   mm_double_blocks_depth=r["num_layers"],
                   mm_single_blocks_depth=r["num_single_layers"], rope_dim_list=r["rope_axes_dim"],
                   guidance_embed=r["guidance_embeds"], text_states_dim=r["text_embed_dim"],
                   text_states_dim_2=r["pooled_projection_dim"], rope_theta=r["rope_theta"],
                   qk_norm=r["qk_norm"] == "rms_norm", refiner_depth=r["num_refiner_layers"],
                   layout="diffusers")
    cfg = dict(OFFICIAL_DEFAULTS, layout="official", refiner_depth=2)
    cfg.update({k: v for k, v in raw.items() if not k.startswith("_")})
    for k in ("in_channels", "hidden_size", "heads_num", "mm_double_blocks_depth",
              "mm_single_blocks_depth", "text_states_dim", "text_states_dim_2", "refiner_depth"):
        cfg[k] = int(cfg[k])
    cfg["out_channels"] = int(cfg["out_channels"] or cfg["in_channels"])
    cfg["patch_size"] = tuple(int(p) for p in cfg["patch_size"])
    cfg["rope_dim_list"] = tuple(int(r) for r in cfg["rope_dim_list"])
    cfg["rope_theta"] = float(cfg["rope_theta"])
    D, n = cfg["hidden_size"], cfg["heads_num"]
    if D % n or sum(cfg["rope_dim_list"]) != D // n or any(r % 2 for r in cfg["rope_dim_list"]):
        raise ValueError(f"rope_dim_list {cfg['rope_dim_list']} must be even dims summing to D/n")
    if cfg["mlp_act_type"] != "gelu_tanh" or cfg["text_projection"] != "single_refiner" or \
            (cfg["qk_norm"] and cfg["qk_norm_type"] != "rms"):
        raise ValueError("only mlp_act_type gelu_tanh, text_projection single_refiner and "
                         "qk_norm_type rms are supported")
    cfg["head_dim"] = D // n
    cfg["mlp_hidden"] = int(D * cfg["mlp_width_ratio"])
    return cfg


def tensor_shapes(cfg):
    """Official state-dict names (as model.state_dict() names them) -> shapes."""
    D, M, d = cfg["hidden_size"], cfg["mlp_hidden"], cfg["head_dim"]
    C, Ct, Ct2 = cfg["in_channels"], cfg["text_states_dim"], cfg["text_states_dim_2"]
    out = cfg["out_channels"] * int(np.prod(cfg["patch_size"]))
    shapes = {}

    def lin(name, o, i, bias=True):
        shapes[name + ".weight"] = (o, i)
        if bias:
            shapes[name + ".bias"] = (o,)

    shapes["img_in.proj.weight"], shapes["img_in.proj.bias"] = (D, C) + cfg["patch_size"], (D,)
    lin("txt_in.input_embedder", D, Ct)
    lin("txt_in.t_embedder.mlp.0", D, FREQ_DIM)
    lin("txt_in.t_embedder.mlp.2", D, D)
    lin("txt_in.c_embedder.linear_1", D, Ct)
    lin("txt_in.c_embedder.linear_2", D, D)
    for r in range(cfg["refiner_depth"]):
        p = f"txt_in.individual_token_refiner.blocks.{r}."
        for nm in ("norm1", "norm2"):
            shapes[p + nm + ".weight"], shapes[p + nm + ".bias"] = (D,), (D,)
        lin(p + "self_attn_qkv", 3 * D, D)
        lin(p + "self_attn_proj", D, D)
        lin(p + "mlp.fc1", 4 * D, D)       # the refiner's mlp_width_ratio is always 4
        lin(p + "mlp.fc2", D, 4 * D)
        lin(p + "adaLN_modulation.1", 2 * D, D)
    for emb in ("time_in",) + (("guidance_in",) if cfg["guidance_embed"] else ()):
        lin(emb + ".mlp.0", D, FREQ_DIM)
        lin(emb + ".mlp.2", D, D)
    lin("vector_in.in_layer", D, Ct2)
    lin("vector_in.out_layer", D, D)
    for i in range(cfg["mm_double_blocks_depth"]):
        for s in ("img", "txt"):
            p = f"double_blocks.{i}.{s}_"
            lin(p + "mod.linear", 6 * D, D)
            lin(p + "attn_qkv", 3 * D, D, cfg["qkv_bias"])
            if cfg["qk_norm"]:
                shapes[p + "attn_q_norm.weight"] = shapes[p + "attn_k_norm.weight"] = (d,)
            lin(p + "attn_proj", D, D, cfg["qkv_bias"])
            lin(p + "mlp.fc1", M, D)
            lin(p + "mlp.fc2", D, M)
    for i in range(cfg["mm_single_blocks_depth"]):
        p = f"single_blocks.{i}."
        lin(p + "linear1", 3 * D + M, D)
        lin(p + "linear2", D, D + M)
        if cfg["qk_norm"]:
            shapes[p + "q_norm.weight"] = shapes[p + "k_norm.weight"] = (d,)
        lin(p + "modulation.linear", 3 * D, D)
    lin("final_layer.linear", out, D)
    lin("final_layer.adaLN_modulation.1", 2 * D, D)
    return shapes


def to_diffusers(cfg, W):
    """Official state dict -> diffusers state dict (same values)."""
    return {dn: (W[on] if rows is None else np.concatenate([W[on][a:b] for a, b in rows]))
            for dn, on, rows in diffusers_table(cfg)}


def from_diffusers(cfg, Wd):
    """Diffusers state dict -> official state dict (inverse of to_diffusers)."""
    shapes, W = tensor_shapes(cfg), {}
    for dn, on, rows in diffusers_table(cfg):
        if rows is None:
            W[on] = Wd[dn]
            continue
        full = W.setdefault(on, np.full(shapes[on], np.nan, dtype=Wd[dn].dtype))
        at = 0
        for a, b in rows:
            full[a:b] = Wd[dn][at:at + b - a]
            at += b - a
    return W


def _model_folder(model_dir):
    sub = os.path.join(model_dir, "transformer")
    return sub if os.path.exists(os.path.join(sub, "config.json")) else model_dir


def load_config(model_dir):
    with open(os.path.join(_model_folder(model_dir), "config.json")) as f:
        return normalize_config(json.load(f))


def load_model(model_dir):
    """A checkpoint folder (official or diffusers layout, or a diffusers pipeline folder
    with transformer/) -> (cfg, W): W maps official names to float64 arrays."""
    folder, cfg = _model_folder(model_dir), load_config(model_dir)
    index = glob.glob(os.path.join(folder, "*.safetensors.index.json"))
    if len(index) == 1:
        with open(index[0]) as f:
            weight_map = json.load(f)["weight_map"]
        files = sorted(set(weight_map.values()))
    else:
        files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(folder, "*.safetensors")))
        if len(files) != 1:
            raise FileNotFoundError(f"{folder}: need one *.safetensors or one index json")
    W = {}
    for name in files:
        W.update(st.load(os.path.join(folder, name), float64=True))
    if cfg["layout"] == "diffusers":
        W = from_diffusers(cfg, W)
    shapes = tensor_shapes(cfg)
    bad = sorted(set(shapes) ^ set(W)) + [k for k in shapes if k in W and W[k].shape != shapes[k]]
    if bad:
        raise KeyError(f"{folder}: missing, unexpected or misshapen tensors {bad[:5]}")
    return cfg, W


def save_checkpoint(model_dir, config, W, shards=1, dtype="F32", layout="official"):
    """Writes config.json and the weights: official layout DIR/model.safetensors (or
    model-0000k-of-0000n.safetensors + model.safetensors.index.json); diffusers layout
    DIR/model_index.json and DIR/transformer/ with diffusers' config and names
    (diffusion_pytorch_model[-0000k-of-0000n].safetensors [+ index])."""
    cfg = normalize_config(config)
    single, index = OFFICIAL_FILE, OFFICIAL_INDEX
    if layout == "diffusers":
        os.makedirs(model_dir, exist_ok=True)
        with open(os.path.join(model_dir, "model_index.json"), "w") as f:
            json.dump({"_class_name": "HunyuanVideoPipeline",
                       "transformer": ["diffusers", DIFFUSERS_CLASS]}, f, indent=2)
        model_dir = os.path.join(model_dir, "transformer")
        single, index = DIFFUSERS_FILE, DIFFUSERS_INDEX
        pt, ph, pw = cfg["patch_size"]
        config = {"_class_name": DIFFUSERS_CLASS, "_diffusers_version": "0.32.0",
                  "in_channels": cfg["in_channels"], "out_channels": cfg["out_channels"],
                  "num_attention_heads": cfg["heads_num"], "attention_head_dim": cfg["head_dim"],
                  "num_layers": cfg["mm_double_blocks_depth"],
                  "num_single_layers": cfg["mm_single_blocks_depth"],
                  "num_refiner_layers": cfg["refiner_depth"], "mlp_ratio": cfg["mlp_width_ratio"],
                  "patch_size": ph, "patch_size_t": pt,
                  "qk_norm": "rms_norm" if cfg["qk_norm"] else None,
                  "guidance_embeds": cfg["guidance_embed"],
                  "text_embed_dim": cfg["text_states_dim"],
                  "pooled_projection_dim": cfg["text_states_dim_2"],
                  "rope_theta": cfg["rope_theta"], "rope_axes_dim": list(cfg["rope_dim_list"]),
                  "image_condition_type": None}
        W = to_diffusers(cfg, W)
    os.makedirs(model_dir, exist_ok=True)
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    if shards <= 1:
        st.save(os.path.join(model_dir, single), W, dtype=dtype)
        return
    stem = single[:-len(".safetensors")]
    weight_map, total = {}, 0
    for k, part in enumerate(np.array_split(np.array(sorted(W), dtype=object), shards)):
        fname = f"{stem}-{k + 1:05d}-of-{shards:05d}.safetensors"
        st.save(os.path.join(model_dir, fname), {nm: W[nm] for nm in part}, dtype=dtype)
        weight_map.update({nm: fname for nm in part})
        total += sum(W[nm].size * {"F64": 8, "F32": 4}.get(dtype, 2) for nm in part)
    with open(os.path.join(model_dir, index), "w") as f:
        json.dump({"metadata": {"total_size": int(total)}, "weight_map": weight_map}, f, indent=2)


# ----------------------------------------------------------------------------
# Elementary functions


def linear(W, p, x):
    """x [..., in] -> [..., out]; W[p.weight] [out, in], W[p.bias] [out] if present."""
    y = x @ W[p + ".weight"].T
    return y + W[p + ".bias"] if p + ".bias" in W else y


def silu(x):
    return x / (1.0 + np.exp(-x))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(x, weight=None, bias=None):
    """nn.LayerNorm over the last axis, eps 1e-6 (affine only in the token refiner)."""
    mu = x.mean(axis=-1, keepdims=True)
    y = (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + EPS)
    return y if weight is None else y * weight + bias


def rms_norm(x, weight):
    """RMSNorm over the last axis (head_dim) times weight [d]."""
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + EPS) * weight


def modulate(x, shift, scale):
    return x * (1.0 + scale) + shift


def timestep_embedding(t):
    """scalar t -> [256] = [cos(t*f_k), sin(t*f_k)], f_k = exp(-ln(10000)*k/128)."""
    half = FREQ_DIM // 2
    freqs = np.exp(-math.log(MAX_PERIOD) * np.arange(half, dtype=np.float64) / half)
    a = float(t) * freqs
    return np.concatenate([np.cos(a), np.sin(a)])


def timestep_embedder(W, p, t):
    """TimestepEmbedder: sinusoid -> Linear -> SiLU -> Linear -> [D]."""
    return linear(W, p + ".mlp.2", silu(linear(W, p + ".mlp.0", timestep_embedding(t))))


def softmax(s):
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return p / p.sum(axis=-1, keepdims=True)


def attention(q, k, v, mask=None):
    """Softmax attention per head, scale 1/sqrt(d). q [Lq, n, d], k, v [Lk, n, d],
    mask [Lq, Lk] bool (True = attend) or None -> [Lq, n, d]."""
    s = np.einsum("qnd,knd->nqk", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask[None], s, -np.inf)
    return np.einsum("nqk,knd->qnd", softmax(s), v)


def joint_attention(q, k, v, split):
    """The official varlen attention of batch 1: tokens [0, split) attend among
    themselves, tokens [split, N) among themselves. q, k, v [N, n, d] -> [N, n, d]."""
    out = [attention(q[:split], k[:split], v[:split])]
    if split < q.shape[0]:
        out.append(attention(q[split:], k[split:], v[split:]))
    return np.concatenate(out)


def heads(x, n, parts=1):
    """[L, parts*D] with features (part, head, d) -> parts x [L, n, d]."""
    y = x.reshape(x.shape[0], parts, n, -1)
    return [y[:, j] for j in range(parts)] if parts > 1 else y[:, 0]


# ----------------------------------------------------------------------------
# RoPE and patches


def rope_cos_sin(cfg, grid):
    """-> cos, sin [Li, d] for the patched grid (F', H', W'), tokens in (f, h, w)
    row-major order: per axis a with dim d_a, angles pos_a * theta^(-(2j)/d_a),
    j < d_a/2, axes concatenated (t, h, w), each angle repeated for the pair
    (features 2j, 2j+1), as get_nd_rotary_pos_embed(use_real=True)."""
    pos = np.meshgrid(*[np.arange(g, dtype=np.float64) for g in grid], indexing="ij")
    ang = []
    for p, dim in zip(pos, cfg["rope_dim_list"]):
        freqs = 1.0 / cfg["rope_theta"] ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
        ang.append(np.outer(p.reshape(-1), freqs))
    ang = np.repeat(np.concatenate(ang, axis=1), 2, axis=1)
    return np.cos(ang), np.sin(ang)


def rope_apply(x, cos, sin):
    """x [Li, n, d] -> x*cos + rotate_half(x)*sin, rotate_half on adjacent pairs:
    (x[2j], x[2j+1]) -> (-x[2j+1], x[2j])."""
    rot = np.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)
    return x * cos[:, None, :] + rot * sin[:, None, :]


def patchify(x, patch):
    """x [C, F, H, W] -> (patches [Li, C*pt*ph*pw] with features (C, pt, ph, pw) as the
    Conv3d weight flattens, grid (F', H', W'))."""
    C, F, H, Wd = x.shape
    pt, ph, pw = patch
    if F % pt or H % ph or Wd % pw:
        raise ValueError(f"latent {x.shape[1:]} is not a multiple of the patch {patch}")
    grid = (F // pt, H // ph, Wd // pw)
    x = x.reshape(C, grid[0], pt, grid[1], ph, grid[2], pw).transpose(1, 3, 5, 0, 2, 4, 6)
    return x.reshape(int(np.prod(grid)), C * pt * ph * pw), grid


def unpatchify(y, grid, patch, C):
    """y [Li, C*pt*ph*pw] (features (C, pt, ph, pw), C outermost) -> [C, F, H, W], as
    reshape(t, h, w, c, pt, ph, pw) + einsum('nthwcopq->nctohpwq')."""
    (F, H, Wd), (pt, ph, pw) = grid, patch
    y = y.reshape(F, H, Wd, C, pt, ph, pw).transpose(3, 0, 4, 1, 5, 2, 6)
    return y.reshape(C, F * pt, H * ph, Wd * pw)


# ----------------------------------------------------------------------------
# Model


def text_valid(text_mask):
    """text_mask [L] (int or float, a prefix of ones) -> number of valid tokens V."""
    m = np.asarray(text_mask).reshape(-1) > 0.5
    V = int(m.sum())
    if V == 0 or not m[:V].all():
        raise ValueError("text_mask must be a non-empty prefix mask (ones, then zeros)")
    return V


def token_refiner(cfg, W, text_states, V, t):
    """SingleTokenRefiner: text_states [L, Ct], V valid tokens, t scalar -> [L, D].
    c = t_embedder(t) + c_embedder(mean of the valid raw text states); self-attention
    mask: valid x valid pairs, column 0 always on (padded rows attend to token 0)."""
    D, n, L = cfg["hidden_size"], cfg["heads_num"], text_states.shape[0]
    if cfg["use_attention_mask"]:
        mean = text_states[:V].sum(axis=0) / V
        valid = np.arange(L) < V
        mask = valid[:, None] & valid[None, :]
        mask[:, 0] = True
    else:
        mean, mask = text_states.mean(axis=0), None
    c = timestep_embedder(W, "txt_in.t_embedder", t) + linear(
        W, "txt_in.c_embedder.linear_2", silu(linear(W, "txt_in.c_embedder.linear_1", mean)))
    x = linear(W, "txt_in.input_embedder", text_states)             # [L, D]
    for r in range(cfg["refiner_depth"]):
        p = f"txt_in.individual_token_refiner.blocks.{r}."
        gate_msa, gate_mlp = linear(W, p + "adaLN_modulation.1", silu(c)).reshape(2, D)
        h = layer_norm(x, W[p + "norm1.weight"], W[p + "norm1.bias"])
        q, k, v = heads(linear(W, p + "self_attn_qkv", h), n, 3)    # no qk-norm
        x = x + linear(W, p + "self_attn_proj", attention(q, k, v, mask).reshape(L, D)) * gate_msa
        h = layer_norm(x, W[p + "norm2.weight"], W[p + "norm2.bias"])
        x = x + linear(W, p + "mlp.fc2", silu(linear(W, p + "mlp.fc1", h))) * gate_mlp
    return x


def qk_norm(cfg, W, name, x):
    return rms_norm(x, W[name + ".weight"]) if cfg["qk_norm"] else x


def double_block(cfg, W, i, img, txt, vec, rope, split):
    """MMDoubleStreamBlock i: img [Li, D], txt [L, D], vec [D], rope (cos, sin),
    split = Li + V -> (img, txt)."""
    D, n, p = cfg["hidden_size"], cfg["heads_num"], f"double_blocks.{i}."
    qkv, mods = [], []
    for s, x in (("img", img), ("txt", txt)):
        # shift1, scale1, gate1, shift2, scale2, gate2
        m = linear(W, p + s + "_mod.linear", silu(vec)).reshape(6, D)
        q, k, v = heads(linear(W, p + s + "_attn_qkv", modulate(layer_norm(x), m[0], m[1])), n, 3)
        q, k = qk_norm(cfg, W, p + s + "_attn_q_norm", q), qk_norm(cfg, W, p + s + "_attn_k_norm", k)
        if s == "img":
            q, k = rope_apply(q, *rope), rope_apply(k, *rope)
        qkv.append((q, k, v))
        mods.append(m)
    q, k, v = (np.concatenate([qkv[0][j], qkv[1][j]]) for j in range(3))
    a = joint_attention(q, k, v, split).reshape(-1, D)
    out = []
    for s, x, m, a_s in (("img", img, mods[0], a[:len(img)]), ("txt", txt, mods[1], a[len(img):])):
        x = x + linear(W, p + s + "_attn_proj", a_s) * m[2]
        h = modulate(layer_norm(x), m[3], m[4])
        x = x + linear(W, p + s + "_mlp.fc2", gelu_tanh(linear(W, p + s + "_mlp.fc1", h))) * m[5]
        out.append(x)
    return out[0], out[1]


def single_block(cfg, W, i, x, vec, rope, split, Li):
    """MMSingleStreamBlock i: x [Li+L, D] = [img; txt] -> [Li+L, D]."""
    D, n, p = cfg["hidden_size"], cfg["heads_num"], f"single_blocks.{i}."
    shift, scale, gate = linear(W, p + "modulation.linear", silu(vec)).reshape(3, D)
    y = linear(W, p + "linear1", modulate(layer_norm(x), shift, scale))   # [N, 3D + M]
    q, k, v = heads(y[:, :3 * D], n, 3)
    q, k = qk_norm(cfg, W, p + "q_norm", q), qk_norm(cfg, W, p + "k_norm", k)
    q = np.concatenate([rope_apply(q[:Li], *rope), q[Li:]])
    k = np.concatenate([rope_apply(k[:Li], *rope), k[Li:]])
    a = joint_attention(q, k, v, split).reshape(-1, D)
    return x + linear(W, p + "linear2", np.concatenate([a, gelu_tanh(y[:, 3 * D:])], axis=1)) * gate


def final_layer(cfg, W, img, vec):
    """img [Li, D] -> [Li, C*pt*ph*pw]; adaLN chunks are (shift, scale)."""
    shift, scale = linear(W, "final_layer.adaLN_modulation.1", silu(vec)).reshape(2, -1)
    return linear(W, "final_layer.linear", modulate(layer_norm(img), shift, scale))


def embed_vec(cfg, W, t, text_states_2, guidance):
    """vec [D] = time_in(t) + vector_in(text_states_2) [+ guidance_in(guidance)]."""
    vec = timestep_embedder(W, "time_in", t) + linear(
        W, "vector_in.out_layer", silu(linear(W, "vector_in.in_layer", text_states_2)))
    if cfg["guidance_embed"]:
        if guidance is None:
            raise ValueError("a guidance-distilled model needs guidance")
        vec = vec + timestep_embedder(W, "guidance_in", guidance)
    return vec


def forward(cfg, W, x, t, text_states, text_mask, text_states_2, guidance=None, taps=None):
    """x [C, F, H, W], t scalar, text_states [L, Ct], text_mask [L], text_states_2 [Ct2],
    guidance scalar (already x1000) -> y [C_out, F, H, W]. taps (a dict): receives
    vec, refiner txt, and each block's input and output states."""
    taps = {} if taps is None else taps
    D = cfg["hidden_size"]
    V = text_valid(text_mask)
    vec = embed_vec(cfg, W, t, text_states_2, guidance)
    patches, grid = patchify(x, cfg["patch_size"])
    img = patches @ W["img_in.proj.weight"].reshape(D, -1).T + W["img_in.proj.bias"]  # [Li, D]
    txt = token_refiner(cfg, W, text_states, V, t)                                     # [L, D]
    Li, rope = len(img), rope_cos_sin(cfg, grid)
    taps.update(vec=vec, refiner=txt)
    for i in range(cfg["mm_double_blocks_depth"]):
        taps[f"double.{i}.in"] = (img, txt)
        img, txt = double_block(cfg, W, i, img, txt, vec, rope, Li + V)
        taps[f"double.{i}"] = (img, txt)
    xs = np.concatenate([img, txt])
    for i in range(cfg["mm_single_blocks_depth"]):
        taps[f"single.{i}.in"] = xs
        xs = single_block(cfg, W, i, xs, vec, rope, Li + V, Li)
        taps[f"single.{i}"] = xs
    y = final_layer(cfg, W, xs[:Li], vec)
    return unpatchify(y, grid, cfg["patch_size"], cfg["out_channels"])


def forward_inputs(cfg, W, inp, suffix="", taps=None, t=None):
    """forward() on the tensors of an inputs file (x, t, text_states, text_mask,
    text_states_2, guidance; suffix "_neg" picks the negative prompt's)."""
    g = inp.get("guidance")
    return forward(cfg, W, inp["x"], _scalar(inp["t"]) if t is None else t,
                   inp["text_states" + suffix], inp["text_mask" + suffix],
                   inp["text_states_2" + suffix].reshape(-1),
                   None if g is None else _scalar(g), taps)


# ----------------------------------------------------------------------------
# Sampling (FlowMatchDiscreteScheduler, reverse=True, solver euler)


def flow_sigmas(steps, shift):
    """-> float32 sigmas [steps+1] as the official set_timesteps computes them on the
    CPU: torch.linspace(1, 0, steps+1) (torch's kernel: start + step*i with one
    rounding (FMA) below n/2, end - step*(n-1-i) above; checked against torch 2.x on
    x86-64 for 1..1000 steps; the float64 sum is exact, so rounding it once to float32
    is the FMA), then sd3_time_shift s' = shift*s / (1 + (shift-1)*s) in float32."""
    n, f32 = steps + 1, np.float32
    step = f32(-1.0) / f32(steps)
    s = np.array([f32(np.float64(step) * i + 1.0) if i < n // 2 else f32(0) - step * f32(n - 1 - i)
                  for i in range(n)], dtype=f32)
    return (f32(shift) * s) / (f32(1) + f32(shift - 1.0) * s)


def flow_timesteps(sigmas):
    """-> float32 timesteps [steps] = sigmas[:-1] * 1000 (the values the model sees)."""
    return (sigmas[:-1] * np.float32(1000)).astype(np.float32)


def generate(cfg, W, noise, ctx, steps, shift, embedded_guidance, guidance=1.0):
    """The official sampling loop from noise [C, F, H, W]: at step i the model sees
    t = float32(sigma_i*1000) and guidance float32(embedded_guidance*1000);
    x += v * (sigma_{i+1} - sigma_i). guidance > 1: true CFG, batch order (uncond, cond),
    v = v_u + g*(v_c - v_u) with the _neg tensors of ctx."""
    sig = flow_sigmas(steps, shift)
    ts = flow_timesteps(sig)
    g = None
    if embedded_guidance is not None:
        g = float(np.float32(embedded_guidance) * np.float32(1000.0))
    x = np.asarray(noise, dtype=np.float64)
    for i in range(steps):
        inp = dict(ctx, x=x) if g is None else dict(ctx, x=x, guidance=np.array([g]))
        v = forward_inputs(cfg, W, inp, t=float(ts[i]))
        if guidance > 1.0:
            vu = forward_inputs(cfg, W, inp, "_neg", t=float(ts[i]))
            v = vu + guidance * (v - vu)
        x = x + v * (np.float64(sig[i + 1]) - np.float64(sig[i]))
    return x


# ----------------------------------------------------------------------------
# Tiny random checkpoint


def random_weights(cfg, seed):
    """float32 weights: matrices N(0,1)/sqrt(fan_in) (modulation matrices half that,
    so the gates stay moderate), biases N(0, 0.05^2), norm weights 1 + N(0, 0.1^2),
    refiner LayerNorm biases N(0, 0.05^2). Each tensor has its own stream, seeded by
    (seed, crc32(name)): a tensor's values do not depend on the other options."""
    W = {}
    for name, shape in tensor_shapes(cfg).items():
        rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
        if "norm" in name and name.endswith(".weight") and len(shape) == 1:
            a = 1.0 + 0.1 * rng.standard_normal(shape)
        elif name.endswith(".bias"):
            a = 0.05 * rng.standard_normal(shape)
        else:
            a = rng.standard_normal(shape) / math.sqrt(np.prod(shape[1:]))
            if "mod" in name or "adaLN" in name:
                a *= 0.5
        W[name] = a.astype(np.float32)
    return W


def make_tiny(output_dir, seed, double=2, single=4, dtype="F32", shards=1, guidance=True,
              layout="official"):
    config = dict(TINY_CONFIG, mm_double_blocks_depth=double, mm_single_blocks_depth=single,
                  guidance_embed=guidance)
    W = random_weights(normalize_config(config), seed)
    save_checkpoint(output_dir, config, W, shards=shards, dtype=dtype, layout=layout)
    return config, W


# ----------------------------------------------------------------------------
# Command line


def _scalar(a):
    return float(np.asarray(a).reshape(-1)[0])


def _save(path, tensors, dtype):
    st.save(path, {k: np.asarray(v, dtype=np.float64) for k, v in tensors.items()}, dtype=dtype)


def cmd_make_tiny(args):
    make_tiny(args.output_dir, args.seed, args.double, args.single, args.dtype, args.shards,
              not args.no_guidance, args.layout)


def cmd_inputs(args):
    cfg = load_config(args.model_dir) if args.model_dir else normalize_config(TINY_CONFIG)
    if not 1 <= args.valid <= args.text_len or not 1 <= (args.valid_neg or 1) <= args.text_len:
        raise SystemExit("need 1 <= --valid <= --text-len")
    rng = np.random.default_rng(args.seed)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    mask_dt = np.int64 if args.mask_dtype == "I64" else np.float32
    mask = lambda v: (np.arange(args.text_len) < v).astype(mask_dt)  # noqa: E731
    out = {"x": f32(cfg["in_channels"], args.frames, args.height, args.width),
           "t": np.array([args.t], np.float32), "guidance": np.array([args.guidance], np.float32),
           "text_states": f32(args.text_len, cfg["text_states_dim"]), "text_mask": mask(args.valid),
           "text_states_2": f32(cfg["text_states_dim_2"])}
    if args.negative:
        out.update(text_states_neg=f32(args.text_len, cfg["text_states_dim"]),
                   text_mask_neg=mask(args.valid_neg or args.valid),
                   text_states_2_neg=f32(cfg["text_states_dim_2"]))
    st.save(args.output, out)


def cmd_forward(args):
    cfg, W = load_model(args.model_dir)
    taps = {}
    y = forward_inputs(cfg, W, st.load(args.inputs, float64=True), taps=taps)
    if args.cmd == "forward":
        out = {"y": y}
    elif args.cmd == "refiner":
        out = {"txt": taps["refiner"], "vec": taps["vec"]}
    elif args.cmd == "double":
        key = f"double.{args.index}"
        if key not in taps:
            raise SystemExit(f"no double block {args.index}")
        (ii, ti), (io, to) = taps[key + ".in"], taps[key]
        out = {"img": io, "txt": to, "img_in": ii, "txt_in": ti, "vec": taps["vec"]}
    else:
        key = f"single.{args.index}"
        if key not in taps:
            raise SystemExit(f"no single block {args.index}")
        out = {"x": taps[key], "x_in": taps[key + ".in"], "vec": taps["vec"]}
    _save(args.output, out, args.dtype)


def cmd_generate(args):
    cfg, W = load_model(args.model_dir)
    noise = st.load(args.noise, float64=True)["x"]
    ctx = st.load(args.context, float64=True)
    ctx = {k: v for k, v in ctx.items() if k.startswith("text_")}
    if args.guidance > 1.0 and "text_states_neg" not in ctx:
        raise SystemExit(f"{args.context}: --guidance > 1 needs text_states_neg, text_mask_neg, "
                         "text_states_2_neg")
    eg = args.embedded_guidance if cfg["guidance_embed"] else None
    x = generate(cfg, W, noise, ctx, args.steps, args.shift, eg, args.guidance)
    _save(args.output, {"x": x}, args.dtype)


def cmd_schedule(args):
    sig = flow_sigmas(args.steps, args.shift)
    ts = np.append(flow_timesteps(sig), np.float32(0))
    for i in range(args.steps + 1):
        print(f"{i} {float(ts[i]):.17g} {float(sig[i]):.17g}")


def cmd_names(args):
    cfg = load_config(args.model_dir) if args.model_dir else normalize_config(FULL_CONFIG)
    if args.layout == "official":
        for name, shape in tensor_shapes(cfg).items():
            print(name, "x".join(str(s) for s in shape))
        return
    for dn, on, rows in diffusers_table(cfg):
        print(dn, on, *(() if rows is None else ("rows " + ",".join(f"{a}:{b}" for a, b in rows),)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("make-tiny", help="tiny random checkpoint")
    p.add_argument("--output-dir", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--double", type=int, default=2)
    p.add_argument("--single", type=int, default=4)
    p.add_argument("--dtype", choices=("F32", "BF16", "F16", "F64"), default="F32")
    p.add_argument("--shards", type=int, default=1, help="> 1: sharded files + index json")
    p.add_argument("--no-guidance", action="store_true", help="guidance_embed false")
    p.add_argument("--layout", choices=("official", "diffusers"), default="official")
    p.set_defaults(fn=cmd_make_tiny)

    p = sub.add_parser("inputs", help="random forward inputs (and sampling context)")
    p.add_argument("--output", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--model-dir", help="read channels and text widths from its config")
    for a in ("--frames", "--height", "--width", "--text-len", "--valid"):
        p.add_argument(a, type=int, required=True)
    p.add_argument("--mask-dtype", choices=("I64", "F32"), default="I64")
    p.add_argument("--t", type=float, default=713.5)
    p.add_argument("--guidance", type=float, default=6000.0, help="already x1000")
    p.add_argument("--negative", action="store_true", help="also the *_neg tensors (CFG)")
    p.add_argument("--valid-neg", type=int, help="valid tokens of the negative prompt")
    p.set_defaults(fn=cmd_inputs)

    helps = {"forward": "y [C,F,H,W]", "refiner": "txt [L,D] after the token refiner (+ vec)",
             "double": "img [Li,D], txt [L,D] after double block --index (+ img_in, txt_in, vec)",
             "single": "x [Li+L,D] after single block --index (+ x_in, vec)"}
    for name, h in helps.items():
        p = sub.add_parser(name, help=h)
        p.add_argument("--model-dir", required=True)
        p.add_argument("--inputs", required=True)
        p.add_argument("--output", required=True)
        p.add_argument("--dtype", choices=("F32", "F64"), default="F32", help="written dtype")
        if name in ("double", "single"):
            p.add_argument("--index", type=int, required=True)
        p.set_defaults(fn=cmd_forward)

    p = sub.add_parser("generate", help="the official Euler sampling loop -> x")
    p.add_argument("--model-dir", required=True)
    p.add_argument("--noise", required=True, help="holds x [C,F,H,W]")
    p.add_argument("--context", required=True, help="text_states, text_mask, text_states_2 (+ _neg)")
    p.add_argument("--output", required=True)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--shift", type=float, default=7.0)
    p.add_argument("--embedded-guidance", type=float, default=6.0)
    p.add_argument("--guidance", type=float, default=1.0, help="> 1: true CFG with the _neg tensors")
    p.add_argument("--dtype", choices=("F32", "F64"), default="F32")
    p.set_defaults(fn=cmd_generate)

    p = sub.add_parser("schedule", help="print 'i timestep sigma', i = 0..steps")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--shift", type=float, default=7.0)
    p.set_defaults(fn=cmd_schedule)

    p = sub.add_parser("names", help="tensor names: official (name shape) or diffusers "
                       "(diffusers_name official_name [rows a:b[,c:d]])")
    p.add_argument("--layout", choices=("official", "diffusers"), default="diffusers")
    p.add_argument("--model-dir", help="sizes of this checkpoint (default: HYVideo-T/2-cfgdistill)")
    p.set_defaults(fn=cmd_names)

    p = sub.add_parser("compare", help="max-abs difference of two tensors; exit 1 above tol")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--tensor-a")
    p.add_argument("--tensor-b")
    p.add_argument("--tol", type=float, default=1e-5)
    p.add_argument("--rel", action="store_true", help="tol is relative to max |b|")
    p.set_defaults(fn=wan_ref.cmd_compare)

    args = ap.parse_args(argv)
    return args.fn(args) or 0


if __name__ == "__main__":
    sys.exit(main())
