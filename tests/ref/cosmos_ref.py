#!/usr/bin/python3
"""NumPy float64 reference of the Cosmos-Predict2.5 network (MinimalV1LVGDiT) and its sampler.

Written from the semantics of the official code (nvidia-cosmos/cosmos-predict2.5, files under
cosmos_predict2/_src/predict2/): networks/minimal_v1_lvg_dit.py (MinimalV1LVGDiT),
networks/minimal_v4_dit.py (MiniTrainDIT and its parts), models/video2world_model_rectified_flow.py
(Video2WorldModelRectifiedFlow.denoise, get_velocity_fn_from_batch), models/
text2world_model_rectified_flow.py (generate_samples_from_batch), models/fm_solvers_unipc.py
(FlowUniPCMultistepScheduler), configs/video2world/defaults/conditioner.py (Video2WorldCondition)
and inference/video2world.py. Batch size 1, every tensor float64 (the official code computes the
sinusoid, the RoPE angles and the sampler in float32; see "float32 spots" below).

Notation: C = 16 latent channels, D = model_channels, n = num_heads, d = D/n, (T, H, W) the latent
grid, p = patch_spatial (2), pt = patch_temporal (1), (T', H', W') = (T/pt, H/p, W/p) the token
grid, S = T'H'W' tokens, L text tokens, Cin = crossattn_proj_in_channels (100352),
Cx = crossattn_emb_channels (1024), r = adaln_lora_dim (256). Linear weights are [out, in]:
y = x @ W.T (+ b). No Linear in the net has a bias except crossattn_proj.0.

1. Inputs (MinimalV1LVGDiT.forward, MiniTrainDIT.prepare_embedded_sequence)
   x18 = cat([x (16), condition_mask (1), padding_mask resized (1)]) on the channel axis, in that
   order: the condition mask [1,T,H,W] is concatenated by MinimalV1LVGDiT (in_channels += 1), the
   padding mask by prepare_embedded_sequence (concat_padding_mask: build_patch_embed adds 1).
   padding_mask [H_px, W_px] is resized to [H, W] by torchvision resize NEAREST (= torch
   interpolate "nearest"): mask[i, j] = pm[floor(i*H_px/H), floor(j*W_px/W)], repeated over T.
   timesteps [T] (0..1000) are multiplied by timestep_scale (0.001) in MinimalV1LVGDiT.forward.
2. Patch embedding (PatchEmbed): "b c (t r) (h m) (w n) -> b t h w (c r m n)" then
   x_embedder.proj.1 [D, 18*pt*p*p] (no bias): the feature index is ((c*pt + r)*p + m)*p + n,
   channel outermost. Tokens are ordered (t, h, w) row-major.
3. Time (Timesteps, TimestepEmbedding, MiniTrainDIT.forward), per latent frame t_f (scaled):
   half = D/2, f_k = exp(-ln(10000) * k / half), k = 0..half-1;
   s = [cos(t_f f_k) (half), sin(t_f f_k) (half)]                      [T, D]
   lora = t_embedder.1.linear_2 @ SiLU(t_embedder.1.linear_1 @ s)     [T, 3D]  (the raw s goes in)
   temb = RMSNorm(s; t_embedding_norm.weight, eps 1e-6)              [T, D]
   RMSNorm(x; w, eps) = x / sqrt(mean(x^2) + eps) * w (TE RMSNorm, zero_centered_gamma off).
4. Text (crossattn_proj): ctx = GELU_erf(crossattn_emb @ W.T + b)  [L, Cx]; GELU(x) =
   0.5 x (1 + erf(x / sqrt 2)).
5. RoPE (VideoRopePosition3DEmb, len_h = max_img_h/p, len_w = max_img_w/p, len_t = max_frames/pt):
   d_h = d_w = (d // 6) * 2, d_t = d - 2 d_h (d = 128: 42, 42, 44; d = 32: 10, 10, 12;
   d = 16: 4, 4, 8).  ntk_a = ratio_a ** (d_a / (d_a - 2)), theta_a = 10000 * ntk_a;
   freq_a[j] = theta_a ** -(2j / d_a), j = 0..d_a/2-1 (rope_{h,w,t}_extrapolation_ratio; the
   release: h 3, w 3, t 1). Positions are the integer indices t, h, w (rope_enable_fps_modulation
   False: no fps scaling). Angle per token: ang = cat([t*freq_t, h*freq_h, w*freq_w] * 2) [d].
   Applied to q and k of self-attention only, after q_norm/k_norm, with TransformerEngine's
   apply_rotary_pos_emb (bshd, non-interleaved): out = x cos(ang) + rot(x) sin(ang),
   rot(x) = cat(-x[d/2:], x[:d/2]) -- pairs (i, i + d/2).
6. Block (Block.forward), per sub-layer s in (self_attn, cross_attn, mlp):
   shift_s, scale_s, gate_s = chunk3(adaln_modulation_s.2 @ (adaln_modulation_s.1 @ SiLU(temb))
                                     + lora)          each [T, D], broadcast over the frame's tokens
   h = LN(x) * (1 + scale_sa) + shift_sa;   LN: nn.LayerNorm eps 1e-6, no affine (biased variance)
   q = RMSNorm_d(heads(h Wq^T); q_norm), k = RMSNorm_d(heads(h Wk^T); k_norm), v = heads(h Wv^T)
   q, k = rope(q), rope(k);  x = x + gate_sa * (softmax(q k^T / sqrt d) v  Wo^T)
   h = LN(x) * (1 + scale_ca) + shift_ca
   q = RMSNorm_d(heads(h Wq'^T)), k = RMSNorm_d(heads(ctx Wk'^T)), v = heads(ctx Wv'^T) (no RoPE)
   x = x + gate_ca * (attn(q, k, v) Wo'^T)
   h = LN(x) * (1 + scale_mlp) + shift_mlp;  x = x + gate_mlp * (GELU_erf(h W1^T) W2^T)
   q/k RMSNorm eps 1e-6 over each head's d values; no attention mask; heads split "(h d)".
7. Final layer (FinalLayer): shift, scale = chunk2(adaln_modulation.2 @ (adaln_modulation.1 @
   SiLU(temb)) + lora[:, :2D]); o = (LN(x) * (1 + scale) + shift) @ final_layer.linear^T
   [S, p*p*pt*16]; unpatchify "B T H W (p1 p2 t C) -> B C (T t) (H p1) (W p2)": feature index
   ((p1*p + p2)*pt + tt)*16 + c, channel innermost. Output y [16, T, H, W] = the velocity.
8. Wrapper (Video2WorldModelRectifiedFlow.denoise), mask m = 1 on the first K latent frames:
   x_in = gt*m + x_t*(1-m); if conditional_frame_timestep >= 0 (post-trained: 0.1, pre-trained:
   -1 = off): timesteps_f = 0.1 on masked frames, t elsewhere (0..1000 units, then x0.001 in the
   net, so the net sees 1e-4); v = net(x_in, timesteps, ctx, condition_mask = m, padding 0);
   then v = (noise0 - gt)*m + v*(1-m), noise0 the initial noise of the sampling loop.
   The uncond branch is the same with the negative prompt's embedding (Video2WorldCondition
   .edit_for_inference(is_cfg_conditional=False) sets use_video_condition, so it keeps gt and m).
   Guidance (get_velocity_fn_from_batch): v = v_c + g (v_c - v_u), g = 7.
9. Sampler (generate_samples_from_batch + FlowUniPCMultistepScheduler(num_train_timesteps 1000,
   shift 1), solver_order 2, bh2, predict_x0, lower_order_final, final sigma 0):
   karras (use_kerras_sigma_at_inference, the post-trained model): u_i = i/N, i = 0..N,
   s_i = (200^(1/7) + u_i (0.01^(1/7) - 200^(1/7)))^7, sigma_i = s_i / (1 + s_i): N+1 sigmas,
   N+1 network evaluations; linear (pre-trained): sigma_i = linspace(sigma_max, 0, N+1)[:-1],
   sigma_max = float32(0.999) = 0.9990000128746033, sigma <- shift*sigma/(1 + (shift-1) sigma):
   N sigmas, N evaluations. timesteps_i = int64(sigma_i * 1000) (truncation, from the float64
   sigmas); the solver's sigmas are float32(sigma_i) followed by 0.
   Loop i = 0..M-1 (M evaluations): v_i = velocity(x_i, timesteps_i) [the net sees
   timesteps_i*0.001]; x0_i = x_i - sigma_i v_i; if i > 0: x_i = UniC(...) (corrector with the
   previous order); order_i = 1 if i == 0 or i == M-1 else 2; x_{i+1} = UniP(x_i, order_i).
   With lam_i = ln(1 - sigma_i) - ln(sigma_i), h = lam_{i+1} - lam_i, B = expm1(-h):
   UniP: x_{i+1} = sigma_{i+1}/sigma_i x_i - (1-sigma_{i+1}) B x0_i
                   [order 2: - (1-sigma_{i+1}) B * 0.5 (x0_{i-1} - x0_i)/r, r = (lam_{i-1}-lam_i)/h]
   (the last step, sigma 0, gives x = x0). UniC at step i (see unic() below) corrects x_i with
   x0_i. The final latents keep the conditioning frames as the loop leaves them (not gt).

float32 spots of the official code (float64 here): Timesteps builds the sinusoid from
timesteps.float() and a float32 arange; VideoRopePosition3DEmb keeps seq/dim ranges as float32 and
returns .float() angles; TE's rope and RMSNorm compute in float32; use_wan_fp32_strategy casts q, k
to float32 before RoPE; the scheduler and sigmas are float32; the net runs in bf16 (tensor_kwargs).

Checkpoints: a folder with model.pt (PyTorch zip, flat dict) or model.safetensors, names
<prefix><official name>, prefix "net." (or "net_ema."); pos_embedder.*, accum_* and *._extra_state
entries are skipped; optional config.json with MinimalV1LVGDiT's keyword arguments (in_channels
16 = the latent channels: the net adds the mask channels). Without config.json the sizes are read
from the shapes (see detect_config) and the rest is the release configuration.

Diffusers' layout (CosmosTransformer3DModel, as its convert_cosmos_to_diffusers.py writes the
Cosmos-2.5 transformers): DIR/model_index.json, DIR/transformer/config.json (num_attention_heads,
attention_head_dim, num_layers, in_channels = 16 + 1 (the condition mask), text_embed_dim,
crossattn_proj_in_channels, max_size (t, h, w), patch_size (t, h, w), rope_scale (t, h, w), ...)
and DIR/transformer/diffusion_pytorch_model.safetensors, the same tensors renamed one for one
(see DIFFUSERS_RENAMES), without prefix, buffers or extra state.

Run `cosmos_ref.py -h` for the command line (make-tiny, inputs, forward, schedule, generate,
names, compare).
"""
import argparse
import collections
import json
import math
import os
import pickle
import re
import sys
import zipfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np as st  # noqa: E402

# ----------------------------------------------------------------------------
# Configurations

RELEASE = {  # net.py COSMOS_V1_7B_NET_MININET + the reason_embeddings rectified-flow experiments
    "max_img_h": 240, "max_img_w": 240, "max_frames": 128, "in_channels": 16, "out_channels": 16,
    "patch_spatial": 2, "patch_temporal": 1, "concat_padding_mask": True,
    "model_channels": 2048, "num_blocks": 28, "num_heads": 16, "mlp_ratio": 4.0,
    "crossattn_emb_channels": 1024, "use_crossattn_projection": True,
    "crossattn_proj_in_channels": 100352, "pos_emb_cls": "rope3d", "use_adaln_lora": True,
    "adaln_lora_dim": 256, "rope_h_extrapolation_ratio": 3.0, "rope_w_extrapolation_ratio": 3.0,
    "rope_t_extrapolation_ratio": 1.0, "extra_per_block_abs_pos_emb": False,
    "rope_enable_fps_modulation": False, "timestep_scale": 0.001, "use_wan_fp32_strategy": True,
}
SIZES = {"2b": {"model_channels": 2048, "num_blocks": 28, "num_heads": 16},
         "14b": {"model_channels": 5120, "num_blocks": 36, "num_heads": 40}}
TINY = {  # tiny sizes keeping the official relations; everything else as RELEASE
    "2b": {"model_channels": 64, "num_heads": 2, "num_blocks": 2, "adaln_lora_dim": 16,
           "crossattn_proj_in_channels": 48, "crossattn_emb_channels": 32},   # d 32: 10/10/12
    "14b": {"model_channels": 80, "num_heads": 5, "num_blocks": 2, "adaln_lora_dim": 16,
            "crossattn_proj_in_channels": 40, "crossattn_emb_channels": 24},  # d 16: 4/4/8
}
DIFFUSERS_CLASS = "CosmosTransformer3DModel"
DIFFUSERS_FILE = "diffusion_pytorch_model.safetensors"
# official name piece -> diffusers', applied in this order as substring replacements (the rename
# table of diffusers' convert_cosmos_to_diffusers.py for Cosmos 2.0 / 2.5)
DIFFUSERS_RENAMES = (
    ("t_embedder.1", "time_embed.t_embedder"), ("t_embedding_norm", "time_embed.norm"),
    ("blocks", "transformer_blocks"),
    ("adaln_modulation_self_attn.1", "norm1.linear_1"),
    ("adaln_modulation_self_attn.2", "norm1.linear_2"),
    ("adaln_modulation_cross_attn.1", "norm2.linear_1"),
    ("adaln_modulation_cross_attn.2", "norm2.linear_2"),
    ("adaln_modulation_mlp.1", "norm3.linear_1"), ("adaln_modulation_mlp.2", "norm3.linear_2"),
    ("self_attn", "attn1"), ("cross_attn", "attn2"), ("q_proj", "to_q"), ("k_proj", "to_k"),
    ("v_proj", "to_v"), ("output_proj", "to_out.0"), ("q_norm", "norm_q"), ("k_norm", "norm_k"),
    ("mlp.layer1", "ff.net.0.proj"), ("mlp.layer2", "ff.net.2"),
    ("x_embedder.proj.1", "patch_embed.proj"),
    ("final_layer.adaln_modulation.1", "norm_out.linear_1"),
    ("final_layer.adaln_modulation.2", "norm_out.linear_2"),
    ("final_layer.linear", "proj_out"),
)
PREFIXES = ("net.", "net_ema.")
EXTRA_RE = re.compile(r"^(pos_embedder\.|accum_)|_extra_state$")


def normalize_config(raw):
    """config.json (MinimalV1LVGDiT kwargs; unknown keys ignored) -> full config."""
    cfg = dict(RELEASE)
    cfg.update({k: v for k, v in raw.items() if k in RELEASE})
    for k in ("model_channels", "num_blocks", "num_heads", "in_channels", "out_channels",
              "patch_spatial", "patch_temporal", "crossattn_emb_channels", "adaln_lora_dim",
              "crossattn_proj_in_channels", "max_img_h", "max_img_w", "max_frames"):
        cfg[k] = int(cfg[k])
    for k in ("mlp_ratio", "rope_h_extrapolation_ratio", "rope_w_extrapolation_ratio",
              "rope_t_extrapolation_ratio", "timestep_scale"):
        cfg[k] = float(cfg[k])
    D, n = cfg["model_channels"], cfg["num_heads"]
    if D % n or (D // n) % 2 or (D // n) // 6 * 2 <= 2:
        raise ValueError(f"bad heads: D {D}, {n} heads")
    if not (cfg["use_adaln_lora"] and cfg["use_crossattn_projection"]
            and cfg["pos_emb_cls"] == "rope3d" and not cfg["extra_per_block_abs_pos_emb"]
            and not cfg["rope_enable_fps_modulation"]):
        raise ValueError("only the Cosmos-Predict2.5 variant (AdaLN-LoRA, crossattn_proj, rope3d, "
                         "no abs pos emb, no fps modulation) is modelled")
    return cfg


def diffusers_name(name):
    for a, b in DIFFUSERS_RENAMES:
        name = name.replace(a, b)
    return name


def diffusers_config(cfg):
    """CosmosTransformer3DModel's config.json for cfg."""
    D, n = cfg["model_channels"], cfg["num_heads"]
    p, pt = cfg["patch_spatial"], cfg["patch_temporal"]
    return {"_class_name": DIFFUSERS_CLASS, "_diffusers_version": "0.36.0",
            "in_channels": cfg["in_channels"] + 1, "out_channels": cfg["out_channels"],
            "num_attention_heads": n, "attention_head_dim": D // n,
            "num_layers": cfg["num_blocks"], "mlp_ratio": cfg["mlp_ratio"],
            "text_embed_dim": cfg["crossattn_emb_channels"],
            "adaln_lora_dim": cfg["adaln_lora_dim"],
            "max_size": [cfg["max_frames"], cfg["max_img_h"], cfg["max_img_w"]],
            "patch_size": [pt, p, p],
            "rope_scale": [cfg["rope_t_extrapolation_ratio"], cfg["rope_h_extrapolation_ratio"],
                           cfg["rope_w_extrapolation_ratio"]],
            "concat_padding_mask": cfg["concat_padding_mask"], "extra_pos_embed_type": None,
            "use_crossattn_projection": True,
            "crossattn_proj_in_channels": cfg["crossattn_proj_in_channels"],
            "encoder_hidden_states_channels": cfg["crossattn_emb_channels"],
            "controlnet_block_every_n": None, "img_context_dim_in": None,
            "img_context_num_tokens": 256, "img_context_dim_out": 2048}


def from_diffusers_config(raw):
    """CosmosTransformer3DModel's config.json -> full config (official keys)."""
    if raw.get("extra_pos_embed_type", "learnable") is not None or \
            not raw.get("use_crossattn_projection") or raw.get("controlnet_block_every_n") or \
            raw.get("img_context_dim_in"):
        raise ValueError("only the Cosmos-Predict2.5 transformer (crossattn projection, no "
                         "learnable positions, ControlNet or image context) is modelled")
    pt, p, p2 = raw["patch_size"]
    assert p == p2 and raw["encoder_hidden_states_channels"] == raw["text_embed_dim"]
    t, h, w = raw["rope_scale"]
    return normalize_config({
        "model_channels": raw["num_attention_heads"] * raw["attention_head_dim"],
        "num_heads": raw["num_attention_heads"], "num_blocks": raw["num_layers"],
        "mlp_ratio": raw["mlp_ratio"], "in_channels": raw["in_channels"] - 1,
        "out_channels": raw["out_channels"], "crossattn_emb_channels": raw["text_embed_dim"],
        "crossattn_proj_in_channels": raw["crossattn_proj_in_channels"],
        "adaln_lora_dim": raw["adaln_lora_dim"], "max_frames": raw["max_size"][0],
        "max_img_h": raw["max_size"][1], "max_img_w": raw["max_size"][2],
        "patch_temporal": pt, "patch_spatial": p, "rope_t_extrapolation_ratio": t,
        "rope_h_extrapolation_ratio": h, "rope_w_extrapolation_ratio": w,
        "concat_padding_mask": raw["concat_padding_mask"]})


def detect_config(W):
    """The config from the tensor shapes (no config.json): D = x_embedder.proj.1.weight rows,
    d = blocks.0.self_attn.q_norm.weight length (n = D/d), num_blocks = 1 + largest block index,
    r = adaln_modulation_self_attn.1.weight rows, Cx/Cin = crossattn_proj.0.weight [Cx, Cin],
    mlp_ratio = mlp.layer1 rows / D, p*p*pt*out = final_layer.linear rows with p = 2, pt = 1,
    in_channels = x_embedder columns/(p*p*pt) - 2. The rest (max_img_h/w 240, max_frames 128,
    rope ratios 3/3/1, timestep_scale 0.001, concat_padding_mask) is the release value."""
    D, kin = W["x_embedder.proj.1.weight"].shape
    d = W["blocks.0.self_attn.q_norm.weight"].shape[0]
    nb = 1 + max(int(k.split(".")[1]) for k in W if k.startswith("blocks."))
    cx, cin = W["crossattn_proj.0.weight"].shape
    p, pt = RELEASE["patch_spatial"], RELEASE["patch_temporal"]
    raw = {"model_channels": D, "num_heads": D // d, "num_blocks": nb,
           "adaln_lora_dim": W["blocks.0.adaln_modulation_self_attn.1.weight"].shape[0],
           "crossattn_emb_channels": cx, "crossattn_proj_in_channels": cin,
           "mlp_ratio": W["blocks.0.mlp.layer1.weight"].shape[0] / D,
           "in_channels": kin // (p * p * pt) - 2,
           "out_channels": W["final_layer.linear.weight"].shape[0] // (p * p * pt)}
    return normalize_config(raw)


def tiny_config(shape, blocks=None):
    cfg = dict(RELEASE)
    cfg.update(TINY[shape])
    if blocks is not None:
        cfg["num_blocks"] = blocks
    return normalize_config(cfg)


def config_json(cfg):
    """The MinimalV1LVGDiT kwargs written to config.json (in_channels: latent channels)."""
    return {k: cfg[k] for k in RELEASE}


def rope_dims(cfg):
    d = cfg["model_channels"] // cfg["num_heads"]
    dh = d // 6 * 2
    return dh, dh, d - 2 * dh


def tensor_shapes(cfg):
    """Official names (without prefix) -> shapes, parameters only."""
    D, r = cfg["model_channels"], cfg["adaln_lora_dim"]
    d = D // cfg["num_heads"]
    p, pt = cfg["patch_spatial"], cfg["patch_temporal"]
    cin = cfg["in_channels"] + 1 + (1 if cfg["concat_padding_mask"] else 0)
    M, cx = int(D * cfg["mlp_ratio"]), cfg["crossattn_emb_channels"]
    s = collections.OrderedDict()
    s["x_embedder.proj.1.weight"] = (D, cin * p * p * pt)
    s["t_embedder.1.linear_1.weight"] = (D, D)
    s["t_embedder.1.linear_2.weight"] = (3 * D, D)
    s["t_embedding_norm.weight"] = (D,)
    s["crossattn_proj.0.weight"] = (cx, cfg["crossattn_proj_in_channels"])
    s["crossattn_proj.0.bias"] = (cx,)
    for i in range(cfg["num_blocks"]):
        b = f"blocks.{i}."
        for a, ctx in (("self_attn", D), ("cross_attn", cx)):
            s[b + a + ".q_proj.weight"] = (D, D)
            s[b + a + ".q_norm.weight"] = (d,)
            s[b + a + ".k_proj.weight"] = (D, ctx)
            s[b + a + ".k_norm.weight"] = (d,)
            s[b + a + ".v_proj.weight"] = (D, ctx)
            s[b + a + ".output_proj.weight"] = (D, D)
        s[b + "mlp.layer1.weight"] = (M, D)
        s[b + "mlp.layer2.weight"] = (D, M)
        for a in ("self_attn", "cross_attn", "mlp"):
            s[b + f"adaln_modulation_{a}.1.weight"] = (r, D)
            s[b + f"adaln_modulation_{a}.2.weight"] = (3 * D, r)
    s["final_layer.linear.weight"] = (p * p * pt * cfg["out_channels"], D)
    s["final_layer.adaln_modulation.1.weight"] = (r, D)
    s["final_layer.adaln_modulation.2.weight"] = (2 * D, r)
    return s


def buffer_tensors(cfg, num_blocks=None):
    """The non-parameter entries of an official state dict (all skipped by loaders):
    pos_embedder buffers, WeightTrainingStat's accum_* counters and TransformerEngine
    *._extra_state entries (here empty uint8 tensors)."""
    dh, _, dt = rope_dims(cfg)
    p, pt = cfg["patch_spatial"], cfg["patch_temporal"]
    n = max(cfg["max_img_h"] // p, cfg["max_img_w"] // p, cfg["max_frames"] // pt)
    out = collections.OrderedDict()
    out["pos_embedder.seq"] = np.arange(n, dtype=np.float32)
    out["pos_embedder.dim_spatial_range"] = (np.arange(0, dh, 2)[:dh // 2] / dh).astype(np.float32)
    out["pos_embedder.dim_temporal_range"] = (np.arange(0, dt, 2)[:dt // 2] / dt).astype(np.float32)
    out["accum_video_sample_counter"] = np.array(123, np.int64)
    out["accum_image_sample_counter"] = np.array(45, np.int64)
    out["accum_iteration"] = np.array(6789, np.int64)
    out["accum_train_in_hours"] = np.array(1.5, np.float32)
    out["t_embedding_norm._extra_state"] = np.zeros(0, np.uint8)
    for i in range(cfg["num_blocks"] if num_blocks is None else num_blocks):
        for a in ("self_attn", "cross_attn"):
            out[f"blocks.{i}.{a}.attn_op._extra_state"] = np.zeros(0, np.uint8)
    return out


# ----------------------------------------------------------------------------
# Checkpoint reading (.pt without torch: a restricted unpickler) and writing

_PT_STORAGES = {"FloatStorage": "<f4", "DoubleStorage": "<f8", "HalfStorage": "<f2",
                "BFloat16Storage": "bf16", "LongStorage": "<i8", "IntStorage": "<i4",
                "ByteStorage": "u1", "BoolStorage": "?", "ShortStorage": "<i2", "CharStorage": "i1"}


class _Skipped:
    """Stands for a non-tensor object of an allowed kind (an _extra_state BytesIO)."""

    def __init__(self, *a, **k):
        pass

    def __setstate__(self, state):
        pass


def _rebuild_tensor(storage, offset, size, stride, *rest):
    arr = storage
    item = arr.itemsize
    if not size:
        return np.array(arr[offset])
    return np.lib.stride_tricks.as_strided(arr[offset:], shape=tuple(size),
                                           strides=tuple(s * item for s in stride)).copy()


def load_pt(path):
    """A torch.save zip of a (possibly nested) dict of tensors -> flat dict name -> ndarray
    (BF16/F16 as float32). Only torch._utils._rebuild_tensor_v2, the storage classes,
    collections.OrderedDict and _io.BytesIO (skipped) are accepted."""
    z = zipfile.ZipFile(path)
    names = z.namelist()
    pkl = [n for n in names if n.endswith("/data.pkl")]
    if len(pkl) != 1:
        raise ValueError(f"{path}: not a torch zip checkpoint")
    root = pkl[0][:-len("data.pkl")]

    class U(pickle.Unpickler):
        def find_class(self, module, name):
            if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
                return _rebuild_tensor
            if (module, name) == ("collections", "OrderedDict"):
                return collections.OrderedDict
            if module == "torch" and name in _PT_STORAGES:
                return name
            if (module, name) == ("_io", "BytesIO"):
                return _Skipped
            raise pickle.UnpicklingError(f"{path}: global {module}.{name} not allowed")

        def persistent_load(self, pid):
            kind, cls, key, _loc, numel = pid
            if kind != "storage" or cls not in _PT_STORAGES:
                raise pickle.UnpicklingError(f"{path}: bad persistent id {pid!r}")
            raw = z.read(root + "data/" + str(key))
            dt = _PT_STORAGES[cls]
            if dt == "bf16":
                return st.bf16_to_f32(np.frombuffer(raw, "<u2")[:numel])
            arr = np.frombuffer(raw, dt)[:numel]
            return arr.astype(np.float32) if dt == "<f2" else arr

    import io
    obj = U(io.BytesIO(z.read(pkl[0]))).load()
    flat = {}

    def walk(o, pre):
        if isinstance(o, dict):
            for k, v in o.items():
                walk(v, pre + str(k) + ".")
        elif isinstance(o, np.ndarray):
            flat[pre[:-1]] = o
    walk(obj, "")
    return flat


def strip_prefix(T):
    """Drops the prefix (net. preferred, else net_ema.; or none) and the skipped entries."""
    for pre in PREFIXES:
        if any(k.startswith(pre) for k in T):
            T = {k[len(pre):]: v for k, v in T.items() if k.startswith(pre)}
            break
    return {k: v for k, v in T.items() if not EXTRA_RE.search(k)}


def load_model(model_dir):
    """-> (cfg, W): W maps official names (no prefix) to float64 arrays."""
    if os.path.exists(os.path.join(model_dir, "transformer", DIFFUSERS_FILE)):
        model_dir = os.path.join(model_dir, "transformer")
    if os.path.exists(os.path.join(model_dir, DIFFUSERS_FILE)):
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = from_diffusers_config(json.load(f))
        T = st.load(os.path.join(model_dir, DIFFUSERS_FILE))
        back = {diffusers_name(k): k for k in tensor_shapes(cfg)}
        if set(back) != set(T):
            raise KeyError(f"{model_dir}: missing or unexpected tensors "
                           f"{sorted(set(back) ^ set(T))[:5]}")
        return cfg, {back[k]: np.asarray(v, np.float64) for k, v in T.items()}
    files = [f for f in sorted(os.listdir(model_dir)) if f.endswith((".pt", ".safetensors"))]
    if len(files) != 1:
        raise FileNotFoundError(f"{model_dir}: need exactly one .pt or .safetensors file")
    path = os.path.join(model_dir, files[0])
    T = load_pt(path) if path.endswith(".pt") else st.load(path)
    W = {k: np.asarray(v, np.float64) for k, v in strip_prefix(T).items()}
    cj = os.path.join(model_dir, "config.json")
    if os.path.exists(cj):
        with open(cj) as f:
            cfg = normalize_config(json.load(f))
    else:
        cfg = detect_config(W)
    shapes = tensor_shapes(cfg)
    bad = sorted(set(shapes) ^ set(W)) + [k for k in shapes if k in W and W[k].shape != shapes[k]]
    if bad:
        raise KeyError(f"{path}: missing, unexpected or misshapen tensors {bad[:5]}")
    return cfg, W


def random_weights(cfg, seed):
    """Seeded weights with O(1) activations: std 1/sqrt(fan_in) for the linears, norm weights
    around 1, the AdaLN second layers small-ish (scale/shift/gate O(0.3))."""
    rng = np.random.default_rng(seed)
    W = collections.OrderedDict()
    for name, shape in tensor_shapes(cfg).items():
        if name.endswith("norm.weight"):
            W[name] = 1.0 + 0.1 * rng.standard_normal(shape)
        elif name.endswith(".bias"):
            W[name] = 0.1 * rng.standard_normal(shape)
        else:
            scale = 1.0 / math.sqrt(shape[1])
            if "adaln_modulation" in name and name.endswith(".2.weight"):
                scale *= 0.5
            W[name] = scale * rng.standard_normal(shape)
    return W


def save_model(model_dir, cfg, W, fmt="pt", prefix="net.", dtype="F32", config=True,
               buffers=True):
    """Writes model.pt (flat dict via pt_write) or model.safetensors with `prefix`, the
    buffers/extra-state entries, and config.json when config. Returns the weights as stored
    (rounded to BF16 when dtype BF16), float64."""
    os.makedirs(model_dir, exist_ok=True)
    W = collections.OrderedDict((k, np.asarray(v, np.float32)) for k, v in W.items())
    if dtype == "BF16":
        W = collections.OrderedDict((k, st.bf16_to_f32(st.f32_to_bf16(v)).reshape(v.shape))
                                    for k, v in W.items())
    allt = collections.OrderedDict((prefix + k, v) for k, v in W.items())
    if buffers:
        allt.update((prefix + k, v) for k, v in buffer_tensors(cfg).items())
    for f in ("model.pt", "model.safetensors", "config.json"):
        if os.path.exists(os.path.join(model_dir, f)):
            os.remove(os.path.join(model_dir, f))
    if fmt == "safetensors":
        # a safetensors conversion holds tensors only: no TransformerEngine extra state
        allt = collections.OrderedDict((k, v) for k, v in allt.items()
                                       if not k.endswith("_extra_state"))
        _st_write(os.path.join(model_dir, "model.safetensors"), allt,
                  set(prefix + k for k in W) if dtype == "BF16" else set())
    else:
        import pt_write
        storages, entries = [], collections.OrderedDict()
        for i, (k, v) in enumerate(allt.items()):
            if v.dtype == np.float32:
                if dtype == "BF16" and k[len(prefix):] in W:
                    sd, data = "bf16", st.f32_to_bf16(v).astype("<u2").tobytes()
                else:
                    sd, data = "f32", v.astype("<f4").tobytes()
            elif v.dtype == np.int64:
                sd, data = "i64", v.astype("<i8").tobytes()
            else:
                sd, data = "u8", v.astype("u1").tobytes()
            s = pt_write.Storage(str(i), sd, data)
            entries[k] = pt_write.Tensor(s, v.shape)
        with open(os.path.join(model_dir, "model.pt"), "wb") as f:
            f.write(pt_write.torch_save(pt_write.state_dict(entries)))
    if config:
        with open(os.path.join(model_dir, "config.json"), "w") as f:
            json.dump(config_json(cfg), f, indent=2)
    return {k: v.astype(np.float64) for k, v in W.items()}


def save_diffusers(out_dir, cfg, W):
    """A diffusers pipeline folder: model_index.json and transformer/ (config.json and
    diffusion_pytorch_model.safetensors with diffusers' names, float32)."""
    tdir = os.path.join(out_dir, "transformer")
    os.makedirs(tdir, exist_ok=True)
    with open(os.path.join(out_dir, "model_index.json"), "w") as f:
        json.dump({"_class_name": "Cosmos2_5_PredictBasePipeline",
                   "_diffusers_version": "0.36.0",
                   "transformer": ["diffusers", DIFFUSERS_CLASS]}, f, indent=2)
    with open(os.path.join(tdir, "config.json"), "w") as f:
        json.dump(diffusers_config(cfg), f, indent=2)
    T = collections.OrderedDict((diffusers_name(k), np.asarray(v, np.float32))
                                for k, v in W.items())
    _st_write(os.path.join(tdir, DIFFUSERS_FILE), T, set())


def _st_write(path, allt, bf16_names):
    """safetensors with bf16_names as BF16 and every other entry in its own dtype."""
    import struct
    header, blobs, off = {}, [], 0
    for name in sorted(allt):
        v = allt[name]
        if name in bf16_names:
            dt, blob = "BF16", st.f32_to_bf16(v).astype("<u2").tobytes()
        else:
            dt, blob = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64",
                        np.dtype(np.uint8): "U8"}[v.dtype], np.ascontiguousarray(v).tobytes()
        header[name] = {"dtype": dt, "shape": list(v.shape), "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))


# ----------------------------------------------------------------------------
# Elementary functions

_erf = np.frompyfunc(math.erf, 1, 1)


def linear(W, name, x, bias=False):
    y = x @ W[name + ".weight"].T
    return y + W[name + ".bias"] if bias else y


def silu(x):
    return x / (1.0 + np.exp(-x))


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def layer_norm(x, eps=1e-6):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps)


def rms_norm(x, w, eps=1e-6):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def softmax(s):
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def attention(q, k, v):
    """q [n,S,d], k/v [n,L,d] -> [S, n*d]."""
    a = softmax(q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])) @ v
    return a.transpose(1, 0, 2).reshape(q.shape[1], -1)


def heads(x, n):
    """[S, n*d] -> [n, S, d] ("(h d)")."""
    return x.reshape(x.shape[0], n, -1).transpose(1, 0, 2)


# ----------------------------------------------------------------------------
# The network


def timestep_sinusoid(t, D):
    """Timesteps(D): t [T] (already x timestep_scale) -> [T, D] = [cos, sin]."""
    half = D // 2
    freqs = np.exp(-math.log(10000.0) * np.arange(half, dtype=np.float64) / half)
    a = np.asarray(t, np.float64)[:, None] * freqs[None, :]
    return np.concatenate([np.cos(a), np.sin(a)], -1)


def time_embed(cfg, W, t_scaled):
    """-> (temb [T,D] = RMSNorm(sinusoid), lora [T,3D] = t_embedder MLP of the raw sinusoid)."""
    s = timestep_sinusoid(t_scaled, cfg["model_channels"])
    lora = linear(W, "t_embedder.1.linear_2", silu(linear(W, "t_embedder.1.linear_1", s)))
    return rms_norm(s, W["t_embedding_norm.weight"]), lora


def rope_angles(cfg, grid):
    """VideoRopePosition3DEmb.generate_embeddings for grid (T', H', W') -> [S, d]."""
    Tg, Hg, Wg = grid
    p, pt = cfg["patch_spatial"], cfg["patch_temporal"]
    if Hg > cfg["max_img_h"] // p or Wg > cfg["max_img_w"] // p:
        raise ValueError(f"grid {grid} exceeds max_img_h/w // patch")
    dh, dw, dt = rope_dims(cfg)

    def freqs(ratio, dim):
        theta = 10000.0 * ratio ** (dim / (dim - 2))
        return 1.0 / theta ** (np.arange(0, dim, 2)[:dim // 2] / dim)
    ft = freqs(cfg["rope_t_extrapolation_ratio"], dt)
    fh = freqs(cfg["rope_h_extrapolation_ratio"], dh)
    fw = freqs(cfg["rope_w_extrapolation_ratio"], dw)
    tt, hh, ww = np.meshgrid(np.arange(Tg), np.arange(Hg), np.arange(Wg), indexing="ij")
    parts = [tt.reshape(-1, 1) * ft, hh.reshape(-1, 1) * fh, ww.reshape(-1, 1) * fw]
    return np.concatenate(parts * 2, -1).astype(np.float64)


def rope_apply(x, ang):
    """x [n,S,d], ang [S,d]: rotate-half (pairs i, i + d/2)."""
    h = x.shape[-1] // 2
    rot = np.concatenate([-x[..., h:], x[..., :h]], -1)
    return x * np.cos(ang) + rot * np.sin(ang)


def patchify(cfg, x):
    """[Cc, T, H, W] -> [T', H', W', Cc*pt*p*p], feature (c, r, m, n)."""
    p, pt = cfg["patch_spatial"], cfg["patch_temporal"]
    Cc, T, H, W = x.shape
    x = x.reshape(Cc, T // pt, pt, H // p, p, W // p, p)
    return x.transpose(1, 3, 5, 0, 2, 4, 6).reshape(T // pt, H // p, W // p, -1)


def unpatchify(cfg, o, grid):
    """[S, p*p*pt*C] (p1 p2 t C) -> [C, T'pt, H'p, W'p]."""
    p, pt, C = cfg["patch_spatial"], cfg["patch_temporal"], cfg["out_channels"]
    Tg, Hg, Wg = grid
    o = o.reshape(Tg, Hg, Wg, p, p, pt, C)
    return o.transpose(6, 0, 5, 1, 3, 2, 4).reshape(C, Tg * pt, Hg * p, Wg * p)


def resize_nearest(m, H, W):
    """torchvision resize NEAREST (torch interpolate 'nearest'): src = floor(dst * in / out)."""
    Hp, Wp = m.shape
    ri = np.minimum(np.floor(np.arange(H) * (Hp / H)).astype(np.int64), Hp - 1)
    ci = np.minimum(np.floor(np.arange(W) * (Wp / W)).astype(np.int64), Wp - 1)
    return m[ri][:, ci]


def modulation(W, name, temb, lora, chunks):
    """AdaLN-LoRA: (name.2 @ (name.1 @ SiLU(temb)) + lora[:, :chunks*D]) split in chunks."""
    D = temb.shape[-1]
    m = linear(W, name + ".2", linear(W, name + ".1", silu(temb))) + lora[:, :chunks * D]
    return [m[:, i * D:(i + 1) * D] for i in range(chunks)]


def per_token(v, grid):
    """[T', D] per frame -> [S, D]."""
    Tg, Hg, Wg = grid
    return np.repeat(v, Hg * Wg, axis=0)


def block(cfg, W, i, x, temb, lora, ctx, ang, grid):
    n, b = cfg["num_heads"], f"blocks.{i}."
    mods = {}
    for a in ("self_attn", "cross_attn", "mlp"):
        mods[a] = [per_token(v, grid) for v in
                   modulation(W, b + "adaln_modulation_" + a, temb, lora, 3)]
    shift, scale, gate = mods["self_attn"]
    h = layer_norm(x) * (1 + scale) + shift
    a = b + "self_attn."
    q = rms_norm(heads(linear(W, a + "q_proj", h), n), W[a + "q_norm.weight"])
    k = rms_norm(heads(linear(W, a + "k_proj", h), n), W[a + "k_norm.weight"])
    v = heads(linear(W, a + "v_proj", h), n)
    q, k = rope_apply(q, ang), rope_apply(k, ang)
    x = x + gate * linear(W, a + "output_proj", attention(q, k, v))
    shift, scale, gate = mods["cross_attn"]
    h = layer_norm(x) * (1 + scale) + shift
    a = b + "cross_attn."
    q = rms_norm(heads(linear(W, a + "q_proj", h), n), W[a + "q_norm.weight"])
    k = rms_norm(heads(linear(W, a + "k_proj", ctx), n), W[a + "k_norm.weight"])
    v = heads(linear(W, a + "v_proj", ctx), n)
    x = x + gate * linear(W, a + "output_proj", attention(q, k, v))
    shift, scale, gate = mods["mlp"]
    h = layer_norm(x) * (1 + scale) + shift
    return x + gate * linear(W, b + "mlp.layer2", gelu(linear(W, b + "mlp.layer1", h)))


def forward(cfg, W, x, timesteps, crossattn_emb, condition_mask=None, padding_mask=None,
            taps=None):
    """MinimalV1LVGDiT.forward: x [C,T,H,W], timesteps [T] (0..1000), crossattn_emb [L, Cin],
    condition_mask [1,T,H,W] (zeros if None), padding_mask [H_px, W_px] (zeros if None)
    -> y [C, T, H, W]."""
    x = np.asarray(x, np.float64)
    C, T, H, Wd = x.shape
    p, pt = cfg["patch_spatial"], cfg["patch_temporal"]
    cm = np.zeros((1, T, H, Wd)) if condition_mask is None else np.asarray(condition_mask, np.float64)
    parts = [x, cm.reshape(1, T, H, Wd)]
    if cfg["concat_padding_mask"]:
        pm = np.zeros((H, Wd)) if padding_mask is None else resize_nearest(
            np.asarray(padding_mask, np.float64), H, Wd)
        parts.append(np.broadcast_to(pm, (1, T, H, Wd)))
    x18 = np.concatenate(parts, 0)
    grid = (T // pt, H // p, Wd // p)
    tok = patchify(cfg, x18).reshape(-1, x18.shape[0] * pt * p * p)
    h = linear(W, "x_embedder.proj.1", tok)
    ts = np.asarray(timesteps, np.float64).reshape(-1)
    if ts.size == 1:
        ts = np.repeat(ts, grid[0])
    temb, lora = time_embed(cfg, W, ts * cfg["timestep_scale"])
    ctx = gelu(linear(W, "crossattn_proj.0", np.asarray(crossattn_emb, np.float64), bias=True))
    ang = rope_angles(cfg, grid)
    if taps is not None:
        taps.update(embed=h, temb=temb, lora=lora, ctx=ctx, rope=ang)
    for i in range(cfg["num_blocks"]):
        h = block(cfg, W, i, h, temb, lora, ctx, ang, grid)
        if taps is not None:
            taps[f"block.{i}"] = h
    shift, scale = [per_token(v, grid) for v in
                    modulation(W, "final_layer.adaln_modulation", temb, lora, 2)]
    o = linear(W, "final_layer.linear", layer_norm(h) * (1 + scale) + shift)
    return unpatchify(cfg, o, grid)


# ----------------------------------------------------------------------------
# Sampler


def schedule(steps, kind="karras", shift=5.0):
    """FlowUniPCMultistepScheduler.set_timesteps -> dict with sigmas64 (the float64 sigmas the
    timesteps come from), timesteps (int64 truncation of sigmas64*1000), sigmas (float32, with
    the final 0 appended) and net_t (timesteps*0.001, what the net's sinusoid sees)."""
    if kind == "karras":
        smax, smin, rho = 200, 0.01, 7
        u = np.arange(steps + 1) / steps
        s = (smax ** (1 / rho) + u * (smin ** (1 / rho) - smax ** (1 / rho))) ** rho
        s = s / (1 + s)
    elif kind == "linear":
        sigma_max = float(np.float32(1.0 - 1.0 / 1000))  # init: 1 - linspace(1, 1/1000)[::-1][0]
        sigma_min = 0.0
        s = np.linspace(sigma_max, sigma_min, steps + 1).copy()[:-1]
        s = shift * s / (1 + (shift - 1) * s)
    else:
        raise ValueError(kind)
    ts = (s * 1000).astype(np.int64)
    sig = np.concatenate([s, [0.0]]).astype(np.float32)
    return {"kind": kind, "steps": steps, "shift": shift if kind == "linear" else None,
            "evaluations": len(ts), "sigmas64": s.tolist(), "timesteps": ts.tolist(),
            "sigmas": [float(v) for v in sig], "net_t": (ts * 0.001).tolist()}


def _lam(s):
    return math.log(1.0 - s) - math.log(s) if s > 0 else math.inf


def unip(sig, i, x, m, order):
    """multistep_uni_p_bh_update (bh2, predict_x0): m = [x0_{i-1}, x0_i]."""
    st_, s0 = sig[i + 1], sig[i]
    h = _lam(st_) - _lam(s0)
    Bh = math.expm1(-h)
    xt = (st_ / s0) * x - (1 - st_) * Bh * m[-1]
    if order == 2:
        rk = (_lam(sig[i - 1]) - _lam(s0)) / h
        D1 = (m[-2] - m[-1]) / rk
        xt = xt - (1 - st_) * Bh * (0.5 * D1)
    return xt


def unic(sig, i, last, this, m, model_t, order):
    """multistep_uni_c_bh_update (bh2, predict_x0) at step i, m = [x0_{i-2}, x0_{i-1}]:
    hh = -h, phi = expm1(hh), B = expm1(hh); b_k = g_k k!/B with g_1 = phi/hh - 1,
    g_{k+1} = g_k/hh - 1/(k+1)!; order 1: rho = [0.5]; order 2: rho = solve([[1,1],[r,1]], b);
    x = s_i/s_{i-1} last - (1-s_i) phi x0_{i-1} - (1-s_i) B (sum rho[:-1] D1 + rho[-1](x0_i - x0_{i-1}))."""
    st_, s0 = sig[i], sig[i - 1]
    h = _lam(st_) - _lam(s0)
    hh = -h
    phi = math.expm1(hh)
    Bh = math.expm1(hh)
    m0 = m[-1]
    rks, D1s = [], []
    if order == 2:
        rk = (_lam(sig[i - 2]) - _lam(s0)) / h
        rks.append(rk)
        D1s.append((m[-2] - m0) / rk)
    rks.append(1.0)
    R, b, g, fact = [], [], phi / hh - 1, 1
    for k in range(1, order + 1):
        R.append([r ** (k - 1) for r in rks])
        b.append(g * fact / Bh)
        fact *= k + 1
        g = g / hh - 1 / fact
    rhos = [0.5] if order == 1 else list(np.linalg.solve(np.array(R), np.array(b)))
    xt = (st_ / s0) * last - (1 - st_) * phi * m0
    corr = sum(r * d for r, d in zip(rhos[:-1], D1s)) if D1s else 0.0
    return xt - (1 - st_) * Bh * (corr + rhos[-1] * (model_t - m0))


def unipc_sample(velocity, noise, sched):
    """The FlowUniPCMultistepScheduler loop (solver_order 2, lower_order_final): velocity(x, i)
    -> v. sigmas: the float32 sigmas as float64."""
    sig = [float(v) for v in sched["sigmas"]]
    M = sched["evaluations"]
    x, m, last, order_prev = np.asarray(noise, np.float64), [], None, None
    for i in range(M):
        v = velocity(x, i)
        x0 = x - sig[i] * v
        if i > 0:
            x = unic(sig, i, last, x, m, x0, order_prev)
        m = (m + [x0])[-2:]
        order = min(2, M - i, i + 1)
        last = x
        x = unip(sig, i, x, m, order)
        order_prev = order
    return x


def generate(cfg, W, noise, ctx, steps=35, guidance=7.0, kind="karras", shift=5.0,
             gt=None, cond_frames=0, cond_timestep=None):
    """generate_samples_from_batch with Video2WorldModelRectifiedFlow's velocity_fn.
    cond_timestep: conditional_frame_timestep (default 0.1 for karras, -1 for linear)."""
    sched = schedule(steps, kind, shift)
    if cond_timestep is None:
        cond_timestep = 0.1 if kind == "karras" else -1.0
    noise = np.asarray(noise, np.float64)
    C, T, H, Wd = noise.shape
    mask = np.zeros((1, T, H, Wd))
    mask[:, :cond_frames] = 1.0
    gt = np.zeros_like(noise) if gt is None else np.asarray(gt, np.float64)
    pos, neg = ctx["crossattn_emb"], ctx.get("neg_crossattn_emb")
    if neg is None:
        raise SystemExit("context needs neg_crossattn_emb")

    def denoise(x, t, emb):
        xin = gt * mask + x * (1 - mask)
        ts = np.full(T, float(t))
        if cond_timestep >= 0:
            ts[:cond_frames] = cond_timestep
        v = forward(cfg, W, xin, ts, emb, mask)
        return (noise - gt) * mask + v * (1 - mask)

    def velocity(x, i):
        t = sched["timesteps"][i]
        vc = denoise(x, t, pos)
        vu = denoise(x, t, neg)
        return vc + guidance * (vc - vu)

    return unipc_sample(velocity, noise, sched)


# ----------------------------------------------------------------------------
# Command line


def _one(tensors, names, path):
    for n in names:
        if n in tensors:
            return tensors[n]
    if len(tensors) == 1:
        return next(iter(tensors.values()))
    raise SystemExit(f"{path}: none of {names}")


def cmd_make_tiny(a):
    cfg = tiny_config(a.shape, a.blocks)
    W = random_weights(cfg, a.seed)
    if a.layout == "diffusers":
        save_diffusers(a.output_dir, cfg, W)
        print(json.dumps(diffusers_config(cfg)))
        return
    save_model(a.output_dir, cfg, W, a.format, a.prefix, a.dtype, a.config == "yes")
    print(json.dumps(config_json(cfg)))


def cmd_inputs(a):
    cfg = load_model(a.model_dir)[0]
    rng = np.random.default_rng(a.seed)
    T, H, W = a.frames, a.height, a.width
    ts = np.full(T, a.timestep, np.float32)
    ts[:a.cond_frames] = 0.1
    cm = np.zeros((1, T, H, W), np.float32)
    cm[:, :a.cond_frames] = 1
    out = {"x": rng.standard_normal((cfg["in_channels"], T, H, W)).astype(np.float32),
           "timesteps": ts, "condition_mask": cm,
           "crossattn_emb": rng.standard_normal((a.text_len, cfg["crossattn_proj_in_channels"]))
           .astype(np.float32),
           "neg_crossattn_emb": rng.standard_normal((a.text_len, cfg["crossattn_proj_in_channels"]))
           .astype(np.float32),
           "gt": rng.standard_normal((cfg["in_channels"], T, H, W)).astype(np.float32)}
    if a.padding_mask:
        pm = np.zeros((H * 8, W * 8), np.float32)
        pm[:, (W * 8 * 3) // 4:] = 1   # a right-hand padded strip, not aligned to 8 pixels
        pm[(H * 8 * 5) // 6:, :] = 1
        out["padding_mask"] = pm
    st.save(a.output, out)


def cmd_forward(a):
    cfg, W = load_model(a.model_dir)
    inp = st.load(a.inputs, float64=True)
    y = forward(cfg, W, inp["x"], inp["timesteps"], inp["crossattn_emb"],
                inp.get("condition_mask"), inp.get("padding_mask"))
    st.save(a.output, {"y": y}, dtype=a.dtype)


def cmd_schedule(a):
    print(json.dumps(schedule(a.steps, a.kind, a.shift), indent=1))


def cmd_generate(a):
    cfg, W = load_model(a.model_dir)
    noise = _one(st.load(a.noise, float64=True), ("noise", "x"), a.noise)
    ctx = st.load(a.context, float64=True)
    gt = None
    if a.cond_latent:
        gt = _one(st.load(a.cond_latent, float64=True), ("gt",), a.cond_latent)
    x = generate(cfg, W, noise, ctx, a.steps, a.guidance, a.schedule, a.shift, gt,
                 a.cond_frames, a.cond_timestep)
    st.save(a.output, {"x": x}, dtype=a.dtype)


def cmd_names(a):
    cfg = load_model(a.model_dir)[0] if a.model_dir else normalize_config(SIZES[a.shape])
    for name, shape in tensor_shapes(cfg).items():
        print(a.prefix + name, "x".join(str(s) for s in shape))
    if a.buffers:
        for name, v in buffer_tensors(cfg, 1).items():
            print(a.prefix + name, "x".join(str(s) for s in v.shape) or "scalar", v.dtype, "(skipped)")


def cmd_compare(a):
    A = st.load(a.a, float64=True)[a.name]
    B = st.load(a.b, float64=True)[a.name]
    if A.shape != B.shape:
        print(f"{a.name}: shape mismatch {A.shape} vs {B.shape}")
        return 1
    d = float(np.abs(A - B).max()) if A.size else 0.0
    if not np.all(np.isfinite(A - B)):
        d = float("inf")
    print(f"{a.name}: max_abs_diff {d:.6e} (max |b| {float(np.abs(B).max()):.6e}, tol {a.tol:g})")
    return 0 if d <= a.tol else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("make-tiny", help="tiny random checkpoint shaped like 2B or 14B")
    p.add_argument("--output-dir", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--shape", choices=("2b", "14b"), required=True)
    p.add_argument("--blocks", type=int)
    p.add_argument("--format", choices=("pt", "safetensors"), default="pt")
    p.add_argument("--prefix", choices=PREFIXES, default="net.")
    p.add_argument("--dtype", choices=("F32", "BF16"), default="F32")
    p.add_argument("--config", choices=("yes", "no"), default="yes")
    p.add_argument("--layout", choices=("official", "diffusers"), default="official",
                   help="diffusers: a pipeline folder with transformer/ (float32 safetensors)")
    p.set_defaults(fn=cmd_make_tiny)

    p = sub.add_parser("inputs", help="forward inputs (+ neg_crossattn_emb, gt for generate)")
    p.add_argument("--model-dir", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--frames", type=int, required=True)
    p.add_argument("--height", type=int, required=True)
    p.add_argument("--width", type=int, required=True)
    p.add_argument("--text-len", type=int, default=7)
    p.add_argument("--cond-frames", type=int, default=0)
    p.add_argument("--padding-mask", action="store_true", help="a non-zero mask at 8x resolution")
    p.add_argument("--timestep", type=float, default=713.0)
    p.set_defaults(fn=cmd_inputs)

    p = sub.add_parser("forward", help="y [16,T,H,W], the network velocity")
    p.add_argument("--model-dir", required=True)
    p.add_argument("--inputs", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--dtype", choices=("F32", "F64"), default="F32")
    p.set_defaults(fn=cmd_forward)

    p = sub.add_parser("schedule", help="sigmas and timesteps as JSON")
    p.add_argument("--steps", type=int, default=35)
    p.add_argument("--kind", choices=("karras", "linear"), default="karras")
    p.add_argument("--shift", type=float, default=5.0)
    p.set_defaults(fn=cmd_schedule)

    p = sub.add_parser("generate", help="the official UniPC sampling loop -> x")
    p.add_argument("--model-dir", required=True)
    p.add_argument("--noise", required=True, help="noise (or x) [16,T,H,W]")
    p.add_argument("--context", required=True, help="crossattn_emb, neg_crossattn_emb")
    p.add_argument("--output", required=True)
    p.add_argument("--steps", type=int, default=35)
    p.add_argument("--guidance", type=float, default=7.0)
    p.add_argument("--schedule", choices=("karras", "linear"), default="karras")
    p.add_argument("--shift", type=float, default=5.0)
    p.add_argument("--cond-latent", help="gt [16,T,H,W]")
    p.add_argument("--cond-frames", type=int, default=0)
    p.add_argument("--cond-timestep", type=float,
                   help="conditional_frame_timestep (default 0.1 karras, -1 linear)")
    p.add_argument("--dtype", choices=("F32", "F64"), default="F32")
    p.set_defaults(fn=cmd_generate)

    p = sub.add_parser("names", help="official tensor names and shapes")
    p.add_argument("--model-dir")
    p.add_argument("--shape", choices=("2b", "14b"), default="2b")
    p.add_argument("--prefix", default="net.")
    p.add_argument("--buffers", action="store_true", help="also the skipped entries (block 0)")
    p.set_defaults(fn=cmd_names)

    p = sub.add_parser("compare", help="max-abs difference of tensor NAME; exit 1 above TOL")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("name")
    p.add_argument("tol", type=float)
    p.set_defaults(fn=cmd_compare)

    a = ap.parse_args(argv)
    return a.fn(a) or 0


if __name__ == "__main__":
    sys.exit(main())
