#!/usr/bin/python3
"""NumPy float64 reference of the LTX-2 family transformer (LTX-2 19B, LTX-2.3, LTX-2.5).

Written from the semantics of the official ltx-core LTXModel (model_type AudioVideo):
ltx_core/model/transformer/{model.py, transformer.py, transformer_args.py, attention.py,
ops.py, rope.py, adaln.py, timestep_embedding.py, text_projection.py, feed_forward.py,
model_configurator.py}, the patchifiers and latent tools (ltx_core/components/patchifiers.py,
ltx_core/tools.py), the scheduler, guider and Euler step (ltx_core/components/{schedulers.py,
guiders.py, diffusion_steps.py}, ltx_core/guidance/perturbations.py) and the one-stage
pipeline (ltx_pipelines/ti2vid_one_stage.py, utils/{constants.py, denoisers.py, helpers.py,
samplers.py, blocks.py}). Batch 1, every tensor float64; the timestep sinusoids, the RoPE
frequency grid and the RoPE angles are float64 too (the official code rounds the grid to
float32 and builds the sinusoids in float32).

Shapes. Video: latent [C, F, H, W], Lv = F*H*W tokens in (f, h, w) row-major order, token
features = the C channels (patch size 1); D = heads*head_dim. Audio: latent [8, T, 16],
La = T tokens, token features (c, m) -> c*16 + m (128); Da = audio heads*audio head_dim.
Text: video context [L, Cctx] (Cctx = caption_channels for LTX-2 19B, whose DiT holds
caption_projection; = cross_attention_dim for 2.3+), audio context [La_t, Cactx].
Linear weights are [out, in]: y = x @ W.T + b.

Conditioning per modality (transformer_args.py):
  t_tok = per-token timesteps (sigma * denoise_mask), sigma = the modality's sigma.
  adaln_single(t_tok*1000) -> (mod [L, K*D], emb [L, D]), K = 6 (9 with cross_attention_adaln);
  prompt_adaln_single(sigma*1000) -> [1, 2D] (2.3+ with use_prompt_adaln_single);
  AV: av_ca_{video,audio}_scale_shift_adaln_single(t_tok*1000) -> [L, 4D];
      av_ca_a2v_gate_adaln_single(sigma_audio * 1000 * (av_ca_mult/1000)) -> [1, D] (video),
      av_ca_v2a_gate_adaln_single(sigma_video * 1000 * (av_ca_mult/1000)) -> [1, Da] (audio).
  AdaLayerNormSingle(t) = Linear(SiLU(e)), e = linear_2(SiLU(linear_1(sinusoid256(t)))),
  sinusoid256(t) = [cos(t*f), sin(t*f)], f_j = exp(-ln(10000)*j/128), j < 128.

Block (transformer.py BasicAVTransformerBlock.forward), rms(x) = x/sqrt(mean(x^2)+eps):
  main table rows (table + mod): 0 shift_msa, 1 scale_msa, 2 gate_msa, 3 shift_mlp,
  4 scale_mlp, 5 gate_mlp, [6 shift_q, 7 scale_q, 8 gate_q with cross_attention_adaln]
  vx = vx + attn1(rms(vx)*(1+sc)+sh, rope=video) * g
  vn = rms(vx); vx = vx + attn2(vn, ctx)                                 (2.0)
           or vx = vx + attn2(vn*(1+scale_q)+shift_q, ctx*(1+scale_kv)+shift_kv) * gate_q
              with (shift_kv, scale_kv) = prompt_scale_shift_table[0|1] + prompt_mod[0|1]
  (the same for audio with the audio_* modules)
  AV tables [5, D] (row 0 a2v scale, 1 a2v shift, 2 v2a scale, 3 v2a shift, 4 gate) + the
  AV scale/shift mod [L, 4D] (rows 0-3) / the gate mod (row 4); vx0, ax0 = pre-AV snapshots:
  vx = vx + a2v(q = rms(vx0)*(1+scV[0])+shV[1], kv = rms(ax0)*(1+scA[0])+shA[1],
                q rope = video cross rope, k rope = audio cross rope) * gate_a2v
  ax = ax + v2a(q = rms(ax0)*(1+scA[2])+shA[3], kv = rms(vx0)*(1+scV[2])+shV[3]) * gate_v2a
  vx = vx + ff(rms(vx)*(1+sc_mlp)+sh_mlp) * g_mlp           (ff: Linear, GELU-tanh, Linear)
Attention (attention.py): v = to_v(ctx); q = q_norm(to_q(x)), k = k_norm(to_k(ctx)) (RMSNorm
over the whole inner dim, with weight), RoPE on q and k, softmax(q k^T / sqrt(head_dim)) v;
text-mask keys get the additive bias -finfo(float64).max; STG (perturbed self-attention):
out = v (q/k skipped); gated attention (2.3+): out_head *= 2*sigmoid(to_gate_logits(x))
where x is the attention's query input (also under STG); then to_out.0.
Output (model.py _process_output): LayerNorm (no affine, eps) * (1 + (sst[1] + emb)) +
(sst[0] + emb), then proj_out; the result is the velocity (x0 = x - t_tok * v).

RoPE "split" (rope.py precompute_freqs_cis, generate_freqs, split_freqs_cis,
apply_split_rotary_emb): positions [n_axes, L, 2] ([start, end) bounds); p = (start+end)/2;
frac_a = p_a / max_pos[a]; grid_j = theta^(j/(n-1)) * pi/2, j < n = dim // (2*n_axes);
angle[l, j*n_axes + a] = grid_j * (2*frac_a - 1); left-padded with dim/2 - n*n_axes
identity entries (cos 1, sin 0) to dim/2, split into H heads of dim/(2H); head h rotates
its pairs (x[h, i], x[h, i + dh/2]) by its own dh/2 angles:
  out1 = x1*cos - x2*sin, out2 = x2*cos + x1*sin.
Self-attention: video dim D, max_pos positional_embedding_max_pos, H video heads; audio dim
Da, audio max_pos, audio heads. AV cross: positions[0:1] (time only), dim =
audio_cross_attention_dim, max_pos [max(video max_pos[0], audio max_pos[0])], H = that
modality's heads (transformer_args.py MultiModalTransformerArgsPreprocessor.prepare).

Default positions (what the one-stage pipeline builds):
  video (tools.py VideoLatentTools.create_initial_state, patchifiers.py
  VideoLatentPatchifier.get_patch_grid_bounds + get_pixel_coords(causal_fix=True)), token
  (f, h, w): t = [max(8f-7, 0), 8f+1] / fps, y = [32h, 32h+32], x = [32w, 32w+32]
  (the official code holds them as float32; here float64).
  audio (patchifiers.py AudioPatchifier._get_audio_latent_time_in_sec, sample rate 16000,
  hop 160, latent downsample 4, causal, shift 0), token i:
  [max(4i-3, 0), 4i+1] * 160 / 16000 seconds.

Run `ltx_ref.py -h` for the command line (make-tiny, inputs, forward, positions, rope,
sigmas, guide, generate, names, compare).
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np as st  # noqa: E402

PREFIX = "model.diffusion_model."
FREQ_DIM = 256
MAX_PERIOD = 10000.0
VIDEO_SCALE = (8, 32, 32)          # SpatioTemporalScaleFactors.default()
AUDIO_SR, AUDIO_HOP, AUDIO_DOWN = 16000, 160, 4
AUDIO_CH, AUDIO_MEL = 8, 16        # AudioLatentShape channels, mel_bins
DISTILLED_SIGMAS = [1.0, 0.99375, 0.9875, 0.98125, 0.975, 0.909375, 0.725, 0.421875, 0.0]

# Config keys the official LTXModelConfigurator checks (check_config_value) or reads.
CHECKED_KEYS = {
    "dropout": 0.0, "attention_bias": True, "activation_fn": "gelu-approximate",
    "num_embeds_ada_norm": 1000, "use_linear_projection": False, "only_cross_attention": False,
    "cross_attention_norm": True, "double_self_attention": False, "upcast_attention": False,
    "standardization_norm": "rms_norm", "norm_elementwise_affine": False, "qk_norm": "rms_norm",
    "positional_embedding_type": "rope", "use_audio_video_cross_attention": True,
    "share_ff": False, "av_cross_ada_norm": True, "use_middle_indices_grid": True,
}
DEFAULTS = {  # model_configurator.py LTXModelConfigurator.from_metadata defaults
    "num_attention_heads": 32, "attention_head_dim": 128, "in_channels": 128, "out_channels": 128,
    "num_layers": 48, "cross_attention_dim": 4096, "norm_eps": 1e-6,
    "positional_embedding_theta": 10000.0, "positional_embedding_max_pos": [20, 2048, 2048],
    "timestep_scale_multiplier": 1000, "audio_num_attention_heads": 32,
    "audio_attention_head_dim": 64, "audio_in_channels": 128, "audio_out_channels": 128,
    "audio_cross_attention_dim": 2048, "audio_positional_embedding_max_pos": [20],
    "av_ca_timestep_scale_multiplier": 1, "apply_gated_attention": False,
    "cross_attention_adaln": False, "use_prompt_adaln_single": True, "ff_bias": True,
    "audio_ff_bias": True, "use_keyframes_abs_pos_embedding": False,
    "caption_proj_before_connector": False, "caption_channels": 3840, "rope_type": "split",
}

# Pipeline defaults per generation (ltx_pipelines/utils/constants.py LTX_2_PARAMS, LTX_2_3_PARAMS).
PIPELINE = {
    "2": {"steps": 40, "stg_block": 29},
    "2.3": {"steps": 30, "stg_block": 28},
    "2.5": {"steps": 30, "stg_block": 28},
}
GUIDER_VIDEO = {"cfg": 3.0, "stg": 1.0, "rescale": 0.7, "modality": 3.0}
GUIDER_AUDIO = {"cfg": 7.0, "stg": 1.0, "rescale": 0.7, "modality": 3.0}


# ----------------------------------------------------------------------------
# config and weights


def normalize_config(tcfg):
    """The "transformer" config dict -> cfg with every key the model reads (defaults as
    model_configurator.py) plus derived sizes."""
    cfg = dict(DEFAULTS)
    cfg.update(tcfg)
    cfg["D"] = cfg["num_attention_heads"] * cfg["attention_head_dim"]
    cfg["Da"] = cfg["audio_num_attention_heads"] * cfg["audio_attention_head_dim"]
    cfg["caption_in_dit"] = not cfg["caption_proj_before_connector"]
    cfg["K"] = 9 if cfg["cross_attention_adaln"] else 6
    cfg["prompt_adaln"] = bool(cfg["cross_attention_adaln"] and cfg["use_prompt_adaln_single"])
    if cfg["rope_type"] != "split":
        raise ValueError("only the split RoPE is implemented")
    return cfg


def load_model(path):
    """-> (cfg, W) with W the DiT tensors (prefix stripped) as float64."""
    meta = st.load_metadata(path) or {}
    if "config" not in meta:
        raise SystemExit(f"{path}: no 'config' in __metadata__")
    cfg = normalize_config(json.loads(meta["config"]).get("transformer", {}))
    cfg["model_version"] = meta.get("model_version", "")
    W = {k[len(PREFIX):]: v for k, v in st.load(path, float64=True).items()
         if k.startswith(PREFIX) and "embeddings_connector." not in k}
    return cfg, W


def attention_shapes(p, q_dim, kv_dim, inner, heads, gated):
    s = {}
    for n, i in (("to_q", q_dim), ("to_k", kv_dim), ("to_v", kv_dim)):
        s[f"{p}.{n}.weight"] = (inner, i)
        s[f"{p}.{n}.bias"] = (inner,)
    s[f"{p}.to_out.0.weight"] = (q_dim, inner)
    s[f"{p}.to_out.0.bias"] = (q_dim,)
    s[f"{p}.q_norm.weight"] = (inner,)
    s[f"{p}.k_norm.weight"] = (inner,)
    if gated:
        s[f"{p}.to_gate_logits.weight"] = (heads, q_dim)
        s[f"{p}.to_gate_logits.bias"] = (heads,)
    return s


def adaln_shapes(p, dim, coef):
    return {f"{p}.emb.timestep_embedder.linear_1.weight": (dim, FREQ_DIM),
            f"{p}.emb.timestep_embedder.linear_1.bias": (dim,),
            f"{p}.emb.timestep_embedder.linear_2.weight": (dim, dim),
            f"{p}.emb.timestep_embedder.linear_2.bias": (dim,),
            f"{p}.linear.weight": (coef * dim, dim), f"{p}.linear.bias": (coef * dim,)}


def tensor_shapes(cfg):
    """Every DiT state-dict name (without the prefix) -> shape, from the official modules'
    __init__ (model.py _init_video/_init_audio/_init_audio_video, transformer.py
    BasicAVTransformerBlock, attention.py Attention, feed_forward.py, text_projection.py)."""
    D, Da, K = cfg["D"], cfg["Da"], cfg["K"]
    H, Ha = cfg["num_attention_heads"], cfg["audio_num_attention_heads"]
    gated = cfg["apply_gated_attention"]
    s = {"patchify_proj.weight": (D, cfg["in_channels"]), "patchify_proj.bias": (D,),
         "audio_patchify_proj.weight": (Da, cfg["audio_in_channels"]),
         "audio_patchify_proj.bias": (Da,),
         "scale_shift_table": (2, D), "audio_scale_shift_table": (2, Da),
         "proj_out.weight": (cfg["out_channels"], D), "proj_out.bias": (cfg["out_channels"],),
         "audio_proj_out.weight": (cfg["audio_out_channels"], Da),
         "audio_proj_out.bias": (cfg["audio_out_channels"],)}
    if cfg["use_keyframes_abs_pos_embedding"]:
        s["keyframes_abs_pos_embedding"] = (1, D)
    if cfg["caption_in_dit"]:
        for p, d in (("caption_projection", D), ("audio_caption_projection", Da)):
            s.update({f"{p}.linear_1.weight": (d, cfg["caption_channels"]),
                      f"{p}.linear_1.bias": (d,), f"{p}.linear_2.weight": (d, d),
                      f"{p}.linear_2.bias": (d,)})
    s.update(adaln_shapes("adaln_single", D, K))
    s.update(adaln_shapes("audio_adaln_single", Da, K))
    if cfg["prompt_adaln"]:
        s.update(adaln_shapes("prompt_adaln_single", D, 2))
        s.update(adaln_shapes("audio_prompt_adaln_single", Da, 2))
    s.update(adaln_shapes("av_ca_video_scale_shift_adaln_single", D, 4))
    s.update(adaln_shapes("av_ca_audio_scale_shift_adaln_single", Da, 4))
    s.update(adaln_shapes("av_ca_a2v_gate_adaln_single", D, 1))
    s.update(adaln_shapes("av_ca_v2a_gate_adaln_single", Da, 1))
    for i in range(cfg["num_layers"]):
        b = f"transformer_blocks.{i}"
        s.update(attention_shapes(f"{b}.attn1", D, D, D, H, gated))
        s.update(attention_shapes(f"{b}.attn2", D, cfg["cross_attention_dim"], D, H, gated))
        s.update(attention_shapes(f"{b}.audio_attn1", Da, Da, Da, Ha, gated))
        s.update(attention_shapes(f"{b}.audio_attn2", Da, cfg["audio_cross_attention_dim"], Da,
                                  Ha, gated))
        # audio_to_video_attn: q video, kv audio, audio heads x audio head_dim
        s.update(attention_shapes(f"{b}.audio_to_video_attn", D, Da, Da, Ha, gated))
        s.update(attention_shapes(f"{b}.video_to_audio_attn", Da, D, Da, Ha, gated))
        for p, d, bias in (("ff", D, cfg["ff_bias"]), ("audio_ff", Da, cfg["audio_ff_bias"])):
            s[f"{b}.{p}.net.0.proj.weight"] = (4 * d, d)
            s[f"{b}.{p}.net.2.weight"] = (d, 4 * d)
            if bias:
                s[f"{b}.{p}.net.0.proj.bias"] = (4 * d,)
                s[f"{b}.{p}.net.2.bias"] = (d,)
        s[f"{b}.scale_shift_table"] = (K, D)
        s[f"{b}.audio_scale_shift_table"] = (K, Da)
        s[f"{b}.scale_shift_table_a2v_ca_audio"] = (5, Da)
        s[f"{b}.scale_shift_table_a2v_ca_video"] = (5, D)
        if cfg["cross_attention_adaln"]:
            s[f"{b}.prompt_scale_shift_table"] = (2, D)
            s[f"{b}.audio_prompt_scale_shift_table"] = (2, Da)
    return s


# ----------------------------------------------------------------------------
# primitives


def linear(W, p, x, bias=True):
    y = x @ W[p + ".weight"].T
    b = W.get(p + ".bias") if bias else None
    return y if b is None else y + b


def silu(x):
    return x / (1.0 + np.exp(-x))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def rms(x, eps, w=None):
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y if w is None else y * w


def layer_norm(x, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps)


def softmax(s):
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return p / p.sum(axis=-1, keepdims=True)


def sinusoid(t):
    """timestep_embedding.py get_timestep_embedding(t, 256, flip_sin_to_cos=True,
    downscale_freq_shift=0) in float64: t [N] -> [N, 256] = [cos, sin]."""
    half = FREQ_DIM // 2
    f = np.exp(-math.log(MAX_PERIOD) * np.arange(half, dtype=np.float64) / half)
    a = np.asarray(t, np.float64).reshape(-1, 1) * f[None]
    return np.concatenate([np.cos(a), np.sin(a)], axis=1)


def adaln_single(W, p, t):
    """adaln.py AdaLayerNormSingle: t [N] (already scaled) -> (Linear(SiLU(e)) [N, K*D], e [N, D]).
    Computed once per distinct t value."""
    t = np.asarray(t, np.float64).reshape(-1)
    u, inv = np.unique(t, return_inverse=True)
    e = linear(W, p + ".emb.timestep_embedder.linear_2",
               silu(linear(W, p + ".emb.timestep_embedder.linear_1", sinusoid(u))))
    return linear(W, p + ".linear", silu(e))[inv.reshape(-1)], e[inv.reshape(-1)]


def caption_projection(W, p, x):
    """text_projection.py PixArtAlphaTextProjection: linear_1, GELU-tanh, linear_2."""
    return linear(W, p + ".linear_2", gelu_tanh(linear(W, p + ".linear_1", x)))


# ----------------------------------------------------------------------------
# RoPE


def freq_grid(theta, n_axes, dim):
    """rope.py generate_freq_grid_np, kept in float64: theta^linspace(0, 1, dim//(2*n_axes)) * pi/2."""
    n = dim // (2 * n_axes)
    return np.power(float(theta), np.linspace(0.0, 1.0, n, dtype=np.float64)) * math.pi / 2


def rope_tables(positions, dim, max_pos, heads, theta):
    """positions [n_axes, L, 2] -> (cos, sin) [L, heads, dim/(2*heads)] (split layout)."""
    pos = np.asarray(positions, np.float64)
    n_axes, L = pos.shape[0], pos.shape[1]
    if len(max_pos) != n_axes:
        raise ValueError(f"{n_axes} position axes but max_pos {max_pos}")
    mid = (pos[..., 0] + pos[..., 1]) / 2.0                                  # [n_axes, L]
    frac = np.stack([mid[a] / max_pos[a] for a in range(n_axes)], axis=-1)  # [L, n_axes]
    g = freq_grid(theta, n_axes, dim)
    ang = g[None, None, :] * (frac[:, :, None] * 2 - 1)                     # [L, n_axes, n]
    ang = ang.transpose(0, 2, 1).reshape(L, -1)                             # axis fastest
    pad = dim // 2 - ang.shape[1]
    cos, sin = np.cos(ang), np.sin(ang)
    if pad:
        cos = np.concatenate([np.ones((L, pad)), cos], axis=1)
        sin = np.concatenate([np.zeros((L, pad)), sin], axis=1)
    return cos.reshape(L, heads, -1), sin.reshape(L, heads, -1)


def rope_apply(x, pe):
    """x [L, inner]; pe (cos, sin) [L, Hp, r]: the inner dim in Hp chunks of 2r, each chunk
    rotating its pairs (i, i + r) (apply_split_rotary_emb; Hp = the table's head count)."""
    cos, sin = pe
    L, Hp, r = cos.shape
    y = x.reshape(L, Hp, 2, r)
    x1, x2 = y[:, :, 0], y[:, :, 1]
    return np.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=2).reshape(L, -1)


# ----------------------------------------------------------------------------
# attention and block


def attention(cfg, W, p, x, ctx=None, heads=1, pe=None, k_pe=None, mask=None, perturbed=False):
    """attention.py Attention.forward for batch 1. x [Lq, q_dim], ctx [Lk, kv_dim] (None: x),
    mask [Lk] 1 = attend (None: all); perturbed: the STG pass-through (out = v)."""
    ctx = x if ctx is None else ctx
    v = linear(W, p + ".to_v", ctx)
    if perturbed:
        out = v
    else:
        eps = cfg["norm_eps"]
        q = rms(linear(W, p + ".to_q", x), eps, W[p + ".q_norm.weight"])
        k = rms(linear(W, p + ".to_k", ctx), eps, W[p + ".k_norm.weight"])
        if pe is not None:
            q = rope_apply(q, pe)
            k = rope_apply(k, pe if k_pe is None else k_pe)
        Lq, Lk = q.shape[0], k.shape[0]
        dh = q.shape[1] // heads
        qh, kh, vh = q.reshape(Lq, heads, dh), k.reshape(Lk, heads, dh), v.reshape(Lk, heads, dh)
        s = np.einsum("qhd,khd->hqk", qh, kh) / math.sqrt(dh)
        if mask is not None:  # transformer_args.py _prepare_attention_mask: (m - 1) * finfo.max
            s = s + ((np.asarray(mask, np.float64) - 1.0) * np.finfo(np.float64).max)[None, None]
        out = np.einsum("hqk,khd->qhd", softmax(s), vh).reshape(Lq, heads * dh)
    if p + ".to_gate_logits.weight" in W:  # ops.py PytorchGatedAttention
        g = 2.0 / (1.0 + np.exp(-linear(W, p + ".to_gate_logits", x)))      # [Lq, heads]
        out = (out.reshape(out.shape[0], heads, -1) * g[:, :, None]).reshape(out.shape[0], -1)
    return linear(W, p + ".to_out.0", out)


def feed_forward(W, p, x):
    return linear(W, p + ".net.2", gelu_tanh(linear(W, p + ".net.0.proj", x)))


def ada(table, mod, rows):
    """get_ada_values: table [K, D] + mod [L|1, K*D] -> rows of [L|1, D]."""
    m = mod.reshape(mod.shape[0], table.shape[0], -1)
    return [table[r][None] + m[:, r] for r in rows]


def text_cross(cfg, W, b, pre, x, s):
    """_apply_text_cross_attention; x = vx (or ax) after the self-attention update."""
    xn = rms(x, cfg["norm_eps"])
    attn = f"{b}.{pre}attn2"
    if not cfg["cross_attention_adaln"]:
        return attn_call(cfg, W, attn, xn, s, ctx=s["context"], mask=s["mask"])
    sh_q, sc_q, g_q = ada(W[f"{b}.{pre}scale_shift_table"], s["mod"], (6, 7, 8))
    kv = W[f"{b}.{pre}prompt_scale_shift_table"][None]                      # [1, 2, D]
    if s["prompt_mod"] is not None:
        kv = kv + s["prompt_mod"].reshape(1, 2, -1)
    ctx = s["context"] * (1 + kv[:, 1]) + kv[:, 0]
    return attn_call(cfg, W, attn, xn * (1 + sc_q) + sh_q, s, ctx=ctx, mask=s["mask"]) * g_q


def attn_call(cfg, W, p, x, s, **kw):
    return attention(cfg, W, p, x, heads=s["heads"], **kw)


def block(cfg, W, i, v, a, stg_video=False, stg_audio=False, skip_a2v=False, skip_v2a=False):
    """BasicAVTransformerBlock.forward; v / a: stream dicts (x, mod, ...) or None. In place."""
    b, eps = f"transformer_blocks.{i}", cfg["norm_eps"]
    for s, pre, stg in ((v, "", stg_video), (a, "audio_", stg_audio)):
        if s is None:
            continue
        table = W[f"{b}.{pre}scale_shift_table"]
        sh, sc, g = ada(table, s["mod"], (0, 1, 2))
        y = attn_call(cfg, W, f"{b}.{pre}attn1", rms(s["x"], eps) * (1 + sc) + sh, s,
                      pe=s["pe"], perturbed=stg)
        s["x"] = s["x"] + y * g
        s["x"] = s["x"] + text_cross(cfg, W, b, pre, s["x"], s)
    if v is not None and a is not None:
        vx0, ax0 = v["x"], a["x"]
        tv, ta = W[f"{b}.scale_shift_table_a2v_ca_video"], W[f"{b}.scale_shift_table_a2v_ca_audio"]

        def av(table, s, r):  # (scale, shift) rows r, r+1 of the 4 scale/shift rows
            return ada(table[:4], s["av_mod"], (r, r + 1))

        def gate(table, s):
            return table[4][None] + s["av_gate"]

        if not skip_a2v:
            scv, shv = av(tv, v, 0)
            sca, sha = av(ta, a, 0)
            y = attention(cfg, W, f"{b}.audio_to_video_attn", rms(vx0, eps) * (1 + scv) + shv,
                          ctx=rms(ax0, eps) * (1 + sca) + sha, heads=a["heads"],
                          pe=v["cross_pe"], k_pe=a["cross_pe"])
            v["x"] = v["x"] + y * gate(tv, v)
        if not skip_v2a:
            sca, sha = av(ta, a, 2)
            scv, shv = av(tv, v, 2)
            y = attention(cfg, W, f"{b}.video_to_audio_attn", rms(ax0, eps) * (1 + sca) + sha,
                          ctx=rms(vx0, eps) * (1 + scv) + shv, heads=a["heads"],
                          pe=a["cross_pe"], k_pe=v["cross_pe"])
            a["x"] = a["x"] + y * gate(ta, a)
    for s, pre in ((v, ""), (a, "audio_")):
        if s is None:
            continue
        sh, sc, g = ada(W[f"{b}.{pre}scale_shift_table"], s["mod"], (3, 4, 5))
        s["x"] = s["x"] + feed_forward(W, f"{b}.{pre}ff", rms(s["x"], eps) * (1 + sc) + sh) * g


# ----------------------------------------------------------------------------
# patchify, positions, model forward


def patchify_video(x):
    """[C, F, H, W] -> [F*H*W, C], token (f*H + h)*W + w."""
    C = x.shape[0]
    return x.reshape(C, -1).T


def unpatchify_video(y, F, H, Wd):
    return y.T.reshape(y.shape[1], F, H, Wd)


def patchify_audio(x):
    """[8, T, 16] -> [T, 128], feature c*16 + m."""
    C, T, M = x.shape
    return x.transpose(1, 0, 2).reshape(T, C * M)


def unpatchify_audio(y, C=AUDIO_CH, M=AUDIO_MEL):
    return y.reshape(y.shape[0], C, M).transpose(1, 0, 2)


def video_positions(F, H, Wd, fps=24.0, scale=VIDEO_SCALE):
    """-> [3, F*H*W, 2] float64 (see the module docstring)."""
    f, h, w = np.meshgrid(np.arange(F), np.arange(H), np.arange(Wd), indexing="ij")
    lat = np.stack([f, h, w]).reshape(3, -1).astype(np.float64)
    pos = np.stack([lat, lat + 1], axis=-1) * np.array(scale, np.float64).reshape(3, 1, 1)
    pos[0] = np.maximum(pos[0] + 1 - scale[0], 0) / fps
    return pos


def audio_positions(T, shift=0):
    """-> [1, T, 2] float64 seconds (AudioPatchifier._compute_audio_timings)."""
    def sec(start):
        mel = np.arange(start, start + T, dtype=np.float64) * AUDIO_DOWN
        return np.maximum(mel + 1 - AUDIO_DOWN, 0) * AUDIO_HOP / AUDIO_SR
    return np.stack([sec(shift), sec(shift + 1)], axis=-1)[None]


def prepare_stream(cfg, W, video, inp, other):
    """TransformerArgsPreprocessor.prepare (+ the AV part when other is not None).
    inp: dict tokens [L, Cin], timesteps [L], sigma, context, mask, positions, keyframes."""
    pre = "" if video else "audio_"
    dim = cfg["D"] if video else cfg["Da"]
    heads = cfg["num_attention_heads"] if video else cfg["audio_num_attention_heads"]
    max_pos = cfg["positional_embedding_max_pos"] if video else cfg["audio_positional_embedding_max_pos"]
    tsm = cfg["timestep_scale_multiplier"]
    x = linear(W, pre + "patchify_proj", inp["tokens"])
    if video and "keyframes_abs_pos_embedding" in W and inp.get("keyframes") is not None:
        x = x + (np.asarray(inp["keyframes"]) > 0)[:, None] * W["keyframes_abs_pos_embedding"]
    mod, emb = adaln_single(W, pre + "adaln_single", inp["timesteps"] * tsm)
    prompt_mod = None
    if cfg["prompt_adaln"]:
        prompt_mod = adaln_single(W, pre + "prompt_adaln_single", np.array([inp["sigma"]]) * tsm)[0]
    ctx = inp["context"]
    if cfg["caption_in_dit"]:
        ctx = caption_projection(W, pre + "caption_projection", ctx)
    s = {"x": x, "mod": mod, "emb": emb, "prompt_mod": prompt_mod, "context": ctx,
         "mask": inp.get("mask"), "heads": heads,
         "pe": rope_tables(inp["positions"], dim, max_pos, heads, cfg["positional_embedding_theta"])}
    if other is not None:
        cross_max = max(cfg["positional_embedding_max_pos"][0],
                        cfg["audio_positional_embedding_max_pos"][0])
        s["cross_pe"] = rope_tables(np.asarray(inp["positions"])[0:1], cfg["audio_cross_attention_dim"],
                                    [cross_max], heads, cfg["positional_embedding_theta"])
        s["av_mod"] = adaln_single(W, f"av_ca_{'video' if video else 'audio'}_scale_shift_adaln_single",
                                   inp["timesteps"] * tsm)[0]
        factor = cfg["av_ca_timestep_scale_multiplier"] / tsm
        gate_p = "av_ca_a2v_gate_adaln_single" if video else "av_ca_v2a_gate_adaln_single"
        s["av_gate"] = adaln_single(W, gate_p, np.array([other["sigma"]]) * tsm * factor)[0]
    return s


def output_head(cfg, W, pre, s):
    """model.py _process_output."""
    sst = W[pre + "scale_shift_table"]
    shift, scale = sst[0][None] + s["emb"], sst[1][None] + s["emb"]
    return linear(W, pre + "proj_out", layer_norm(s["x"], cfg["norm_eps"]) * (1 + scale) + shift)


def forward_tokens(cfg, W, vin, ain, stg_blocks=(), skip_av=False, stg_video=True, stg_audio=True):
    """LTXModel.forward on token inputs; vin / ain as prepare_stream (ain None: video only).
    stg_blocks: blocks whose video (stg_video) and audio (stg_audio) self-attention is the
    STG pass-through; skip_av: the isolated-modality pass (A2V and V2A skipped in every block).
    -> (video velocity tokens [Lv, Cout], audio velocity tokens [La, Ca_out] or None)."""
    v = prepare_stream(cfg, W, True, vin, ain) if vin is not None else None
    a = prepare_stream(cfg, W, False, ain, vin) if ain is not None else None
    stg_blocks = set(stg_blocks)
    for i in range(cfg["num_layers"]):
        block(cfg, W, i, v, a, stg_video=stg_video and i in stg_blocks,
              stg_audio=stg_audio and i in stg_blocks, skip_a2v=skip_av, skip_v2a=skip_av)
    return (output_head(cfg, W, "", v) if v is not None else None,
            output_head(cfg, W, "audio_", a) if a is not None else None)


def stream_inputs(cfg, inp, video, fps=24.0):
    """Inputs-file tensors -> prepare_stream input dict (default positions / timesteps)."""
    if video:
        lat = inp["video_latent"]
        C, F, H, Wd = lat.shape
        tokens = patchify_video(lat)
        sigma = float(np.asarray(inp["video_sigma"]).reshape(-1)[0])
        t = inp["video_timesteps"].reshape(-1) if "video_timesteps" in inp else np.full(len(tokens), sigma)
        pos = inp["video_positions"] if "video_positions" in inp else video_positions(F, H, Wd, fps)
        kf = (inp["video_keyframes_mask"].reshape(-1) if "video_keyframes_mask" in inp
              else (np.arange(len(tokens)) < H * Wd).astype(np.float64))
        return {"tokens": tokens, "timesteps": np.asarray(t, np.float64), "sigma": sigma,
                "context": inp["video_context"], "mask": inp.get("video_context_mask"),
                "positions": pos, "keyframes": kf, "shape": (F, H, Wd)}
    lat = inp["audio_latent"]
    tokens = patchify_audio(lat)
    sigma = float(np.asarray(inp["audio_sigma"]).reshape(-1)[0])
    t = inp["audio_timesteps"].reshape(-1) if "audio_timesteps" in inp else np.full(len(tokens), sigma)
    pos = inp["audio_positions"] if "audio_positions" in inp else audio_positions(lat.shape[1])
    return {"tokens": tokens, "timesteps": np.asarray(t, np.float64), "sigma": sigma,
            "context": inp["audio_context"], "mask": inp.get("audio_context_mask"),
            "positions": pos, "shape": lat.shape}


def forward(cfg, W, inp, fps=24.0, stg_blocks=(), skip_av=False):
    """Inputs-file dict -> {"video": [C_out, F, H, W], "audio": [8, T, 16]} velocities."""
    vin = stream_inputs(cfg, inp, True, fps)
    ain = stream_inputs(cfg, inp, False, fps) if "audio_latent" in inp else None
    vy, ay = forward_tokens(cfg, W, vin, ain, stg_blocks, skip_av)
    out = {"video": unpatchify_video(vy, *vin["shape"])}
    if ay is not None:
        out["audio"] = unpatchify_audio(ay, AUDIO_CH, ay.shape[1] // AUDIO_CH)
    return out


# ----------------------------------------------------------------------------
# scheduler, guider, sampling loop


def torch_linspace_f32(start, end, n):
    """torch.linspace(start, end, n) float32 as the CPU kernel computes it (checked bit-exact
    against torch 2.15 on x86-64): step = (end-start)/(n-1) rounded to float32;
    i < n//2: fma(step, i, start), else fma(-step, n-1-i, end), each rounded once to float32
    (the float64 product and sum below are exact, so one rounding)."""
    f = np.float32
    step = np.float64((f(end) - f(start)) / f(n - 1))
    i = np.arange(n, dtype=np.float64)
    lo = np.float64(f(start)) + step * i
    hi = np.float64(f(end)) - step * (n - 1 - i)
    return np.where(i < n // 2, lo, hi).astype(np.float32)


def ltx2_sigmas(steps, tokens=4096, max_shift=2.05, base_shift=0.95, stretch=True, terminal=0.1):
    """schedulers.py LTX2Scheduler.execute (latent None -> tokens 4096), float32 as torch."""
    f = np.float32
    sig = torch_linspace_f32(1.0, 0.0, steps + 1)
    mm = (max_shift - base_shift) / (4096 - 1024)
    b = base_shift - mm * 1024
    e = f(math.exp(tokens * mm + b))
    with np.errstate(divide="ignore", invalid="ignore"):
        # torch: 1 / t = reciprocal; python scalar / tensor = reciprocal(tensor) * scalar
        shifted = (f(1) / (e + (f(1) / sig - f(1)))) * e
    sig = np.where(sig != 0, shifted, f(0)).astype(np.float32)
    if stretch:
        nz = sig != 0
        omz = f(1) - sig[nz]
        scale = omz[-1] / f(1.0 - terminal)
        sig[nz] = f(1) - omz / scale
    return sig.astype(np.float32)


def guide(cond, uncond, ptb, mod, cfg_scale, stg_scale, rescale, modality_scale):
    """guiders.py MultiModalGuider.calculate (float64 here; float32 officially):
    pred = cond + (cfg-1)(cond-uncond) + stg(cond-ptb) + (modality-1)(cond-mod);
    rescale != 0: pred *= rescale * std(cond)/std(pred) + (1 - rescale), std over every
    element, unbiased (N-1). A pass not run enters as 0."""
    cond = np.asarray(cond, np.float64)
    pred = (cond + (cfg_scale - 1) * (cond - uncond) + stg_scale * (cond - ptb)
            + (modality_scale - 1) * (cond - mod))
    if rescale != 0:
        factor = np.std(cond, ddof=1) / np.std(pred, ddof=1)
        pred = pred * (rescale * factor + (1 - rescale))
    return pred


def generate(cfg, W, noise_v, noise_a, ctx, sigmas, gv, ga, stg_blocks, fps=24.0, log=None,
             image=None, image_frame=0, strength=1.0):
    """ti2vid_one_stage.py: Euler loop over sigmas, per step the passes cond / uncond
    (negative contexts) / ptb (STG) / mod (A2V+V2A skipped) in that order
    (denoisers.py _guided_denoise), x0 = x - t*v (X0Model, t the token's timestep),
    guided x0 per modality (MultiModalGuider), x += (x - x0)/sigma * (sigma_next - sigma).
    noise_v [C,F,H,W], noise_a [8,T,16] or None; ctx: video_context, audio_context, *_neg;
    no text mask. image [C,1,H,W] (or None): VideoConditionByLatentIndex at latent frame
    image_frame: denoise mask 1 - strength on its tokens (timestep mask*sigma), the noise
    lerp(clean, noise, mask) (GaussianNoiser), the guided x0 blended mask*x0 + (1-mask)*clean
    (post_process_latent) before each step."""
    C, F, H, Wd = noise_v.shape
    xv, xa = patchify_video(noise_v), (patchify_audio(noise_a) if noise_a is not None else None)
    mask, clean = np.ones((len(xv), 1)), np.zeros_like(xv)
    if image is not None:
        sl = slice(image_frame * H * Wd, (image_frame + 1) * H * Wd)
        mask[sl] = 1.0 - strength
        clean[sl] = patchify_video(image)
        xv = clean + mask * (xv - clean)
    pv, pa = video_positions(F, H, Wd, fps), (audio_positions(noise_a.shape[1]) if xa is not None else None)
    kf = (np.arange(len(xv)) < H * Wd).astype(np.float64)
    has_a = xa is not None
    guiders = [gv] + ([ga] if has_a else [])
    need_unc = any(g["cfg"] != 1.0 for g in guiders)
    need_ptb = any(g["stg"] != 0.0 for g in guiders)
    need_mod = any(g["modality"] != 1.0 for g in guiders)
    for i in range(len(sigmas) - 1):
        s, s_next = float(sigmas[i]), float(sigmas[i + 1])

        def run(vc, ac, **kw):
            vin = {"tokens": xv, "timesteps": mask[:, 0] * s, "sigma": s, "context": vc,
                   "mask": None, "positions": pv, "keyframes": kf}
            ain = ({"tokens": xa, "timesteps": np.full(len(xa), s), "sigma": s, "context": ac,
                    "mask": None, "positions": pa} if has_a else None)
            vy, ay = forward_tokens(cfg, W, vin, ain, **kw)
            return xv - vy * (mask * s), (xa - ay * s if has_a else None)

        outs = {"cond": run(ctx["video_context"], ctx.get("audio_context"))}
        if need_unc:
            outs["uncond"] = run(ctx["video_context_neg"], ctx.get("audio_context_neg"))
        if need_ptb:
            outs["ptb"] = run(ctx["video_context"], ctx.get("audio_context"), stg_blocks=stg_blocks,
                              stg_video=gv["stg"] != 0.0, stg_audio=has_a and ga["stg"] != 0.0)
        if need_mod:
            outs["mod"] = run(ctx["video_context"], ctx.get("audio_context"), skip_av=True)

        def pick(name, j):
            return outs[name][j] if name in outs else 0.0

        x0v = guide(pick("cond", 0), pick("uncond", 0), pick("ptb", 0), pick("mod", 0),
                    gv["cfg"], gv["stg"], gv["rescale"], gv["modality"])
        x0v = x0v * mask + clean * (1 - mask)
        xv = xv + (xv - x0v) / s * (s_next - s)
        if has_a:
            x0a = guide(pick("cond", 1), pick("uncond", 1), pick("ptb", 1), pick("mod", 1),
                        ga["cfg"], ga["stg"], ga["rescale"], ga["modality"])
            xa = xa + (xa - x0a) / s * (s_next - s)
        if log:
            log(f"step {i} sigma {s:.6f} -> {s_next:.6f}")
    out = {"video": unpatchify_video(xv, F, H, Wd)}
    if has_a:
        out["audio"] = unpatchify_audio(xa)
    return out


# ----------------------------------------------------------------------------
# tiny checkpoints and inputs


def tiny_config(version, layers=2):
    """The "transformer" config of a tiny model of a released version ("2", "2.3", "2.5"),
    named as the released files' header names it (public loaders check that name)."""
    c = {"_class_name": "AVTransformer3DModel"}
    c.update(CHECKED_KEYS)
    c.update({
        "num_attention_heads": 2, "attention_head_dim": 32, "in_channels": 16, "out_channels": 16,
        "num_layers": layers, "cross_attention_dim": 64, "caption_channels": 48, "norm_eps": 1e-6,
        "positional_embedding_theta": 10000.0, "positional_embedding_max_pos": [20, 2048, 2048],
        "timestep_scale_multiplier": 1000, "audio_num_attention_heads": 2,
        "audio_attention_head_dim": 16, "audio_in_channels": 128, "audio_out_channels": 128,
        "audio_cross_attention_dim": 32, "audio_positional_embedding_max_pos": [20],
        "av_ca_timestep_scale_multiplier": 1000, "rope_type": "split",
        "frequencies_precision": "float64", "caption_proj_before_connector": False,
    })
    if version in ("2.3", "2.5"):
        c.update({"apply_gated_attention": True, "cross_attention_adaln": True,
                  "use_prompt_adaln_single": True, "caption_proj_before_connector": True})
        del c["caption_channels"]
    if version == "2.5":
        c.update({"ff_bias": False, "audio_ff_bias": True, "use_keyframes_abs_pos_embedding": True})
    return c


def release_flags(version):
    """The version flags on top of the configurator defaults (= the released sizes:
    32 x 128 video, 32 x 64 audio, 48 blocks, contexts 4096 / 2048)."""
    c = {"av_ca_timestep_scale_multiplier": 1000}
    if version in ("2.3", "2.5"):
        c.update({"apply_gated_attention": True, "cross_attention_adaln": True,
                  "caption_proj_before_connector": True})
    if version == "2.5":
        c.update({"ff_bias": False, "use_keyframes_abs_pos_embedding": True})
    return c


MODEL_VERSION = {"2": "2.0.0", "2.3": "2.3.0", "2.5": "2.5.0"}

# Release tensors outside the DiT (or inside its prefix but not part of the DiT: the text
# connectors), written by make-tiny so loaders learn to skip them (names as the ltx-core
# loaders match them: text_encoders/gemma/encoders/encoder_configurator.py,
# model/video_vae/model_configurator.py, embeddings_connector.py).
EXTRA_TENSORS = {
    "vae.decoder.conv_in.conv.weight": (8, 16, 3, 3, 3),
    "vae.per_channel_statistics.mean-of-means": (16,),
    "audio_vae.decoder.conv_in.conv.weight": (8, 8, 3, 3),
    "vocoder.conv_pre.weight": (8, 16, 7),
    "text_embedding_projection.aggregate_embed.weight": (48, 96),
    PREFIX + "video_embeddings_connector.transformer_1d_blocks.0.attn1.to_q.weight": (64, 64),
    PREFIX + "video_embeddings_connector.learnable_registers": (4, 64),
    PREFIX + "audio_embeddings_connector.transformer_1d_blocks.0.attn1.to_q.weight": (32, 32),
}


def random_weights(cfg, seed):
    """Seeded random DiT weights: Linear weights N(0, 1/in), biases N(0, 0.02^2), RMSNorm
    weights 1 + N(0, 0.1^2), tables N(0, 0.1^2), AdaLN output linears scaled 0.3."""
    rng = np.random.default_rng(seed)
    W = {}
    for name, shape in tensor_shapes(cfg).items():
        if name.endswith("norm.weight"):
            a = 1.0 + 0.1 * rng.standard_normal(shape)
        elif name.endswith(".weight") and len(shape) == 2:
            a = rng.standard_normal(shape) / math.sqrt(shape[1])
            if "adaln_single.linear" in name:
                a *= 0.3
        elif name.endswith(".bias"):
            a = 0.02 * rng.standard_normal(shape)
        else:  # scale_shift tables, keyframes embedding
            a = 0.1 * rng.standard_normal(shape)
        W[name] = a
    return W


def make_tiny(path, seed, version, layers=2, dtype="F32"):
    tcfg = tiny_config(version, layers)
    cfg = normalize_config(tcfg)
    W = random_weights(cfg, seed)
    rng = np.random.default_rng(seed + 1)
    out = {PREFIX + k: v for k, v in W.items()}
    for k, shape in EXTRA_TENSORS.items():
        out[k] = 0.02 * rng.standard_normal(shape)
    # the released bundles' config has a section per model in the file; the video VAE's
    # names its class (the official configurator picks its decoder by it)
    config = {"transformer": tcfg, "vae": {"_class_name": "CausalVideoAutoencoder"},
              "audio_vae": {}, "vocoder": {}}
    meta = {"config": json.dumps(config), "model_version": MODEL_VERSION[version]}
    st.save(path, out, metadata=meta, dtype=dtype)


def context_dims(cfg):
    if cfg["caption_in_dit"]:
        return cfg["caption_channels"], cfg["caption_channels"]
    return cfg["cross_attention_dim"], cfg["audio_cross_attention_dim"]


def make_inputs(cfg, seed, F, H, Wd, T, video_only=False, text_len=8, audio_text_len=None,
                mask_valid=None, sigma=0.75, audio_sigma=None, per_token=False, negative=False):
    rng = np.random.default_rng(seed)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    audio_sigma = sigma if audio_sigma is None else audio_sigma
    La = text_len if audio_text_len is None else audio_text_len
    cv, ca = context_dims(cfg)
    out = {"video_latent": f32(cfg["in_channels"], F, H, Wd),
           "video_sigma": np.array([sigma], np.float32), "video_context": f32(text_len, cv)}
    if per_token:  # the denoise-mask case: first latent frame conditioned (t = 0)
        t = np.full((F, H, Wd), sigma, np.float32)
        t[0] = 0
        out["video_timesteps"] = t
    if mask_valid is not None:
        out["video_context_mask"] = (np.arange(text_len) < mask_valid).astype(np.int64)
    if negative:
        out["video_context_neg"] = f32(text_len, cv)
    if not video_only:
        out.update({"audio_latent": f32(AUDIO_CH, T, AUDIO_MEL),
                    "audio_sigma": np.array([audio_sigma], np.float32),
                    "audio_context": f32(La, ca)})
        if per_token:
            t = np.full((T,), audio_sigma, np.float32)
            t[0] = 0
            out["audio_timesteps"] = t
        if mask_valid is not None:
            out["audio_context_mask"] = (np.arange(La) < min(mask_valid, La)).astype(np.int64)
        if negative:
            out["audio_context_neg"] = f32(La, ca)
    return out


# ----------------------------------------------------------------------------
# command line


def parse_blocks(s, num_layers=None):
    if s is None or s == "":
        return []
    blocks = [int(b) for b in s.split(",")]
    if num_layers is not None:
        for b in blocks:
            if not 0 <= b < num_layers:
                raise SystemExit(f"STG block {b} out of range (model has {num_layers} blocks)")
    return blocks


def _save(path, tensors, dtype="F32"):
    st.save(path, {k: np.asarray(v, np.float64) for k, v in tensors.items()}, dtype=dtype)


def cmd_make_tiny(args):
    make_tiny(args.output, args.seed, args.version, args.layers, args.dtype)


def cmd_inputs(args):
    cfg, _ = load_model(args.model)
    st.save(args.output, make_inputs(
        cfg, args.seed, args.frames, args.height, args.width, args.audio_frames, args.video_only,
        args.text_len, args.audio_text_len, args.mask_valid, args.sigma, args.audio_sigma,
        args.per_token, args.negative))


def cmd_forward(args):
    cfg, W = load_model(args.model)
    inp = st.load(args.inputs, float64=True)
    out = forward(cfg, W, inp, args.fps, parse_blocks(args.stg_blocks, cfg["num_layers"]),
                  args.skip_av)
    _save(args.output, out, args.dtype)


def cmd_positions(args):
    st.save(args.output, {"video_positions": video_positions(args.frames, args.height, args.width, args.fps),
                          "audio_positions": audio_positions(args.audio_frames)})


def cmd_rope(args):
    cfg, _ = load_model(args.model)
    pos = st.load(args.positions, float64=True)
    out = {}
    theta = cfg["positional_embedding_theta"]
    cross_max = [max(cfg["positional_embedding_max_pos"][0], cfg["audio_positional_embedding_max_pos"][0])]
    if "video_positions" in pos:
        vp, H = pos["video_positions"], cfg["num_attention_heads"]
        out["video_cos"], out["video_sin"] = rope_tables(vp, cfg["D"], cfg["positional_embedding_max_pos"], H, theta)
        out["video_cross_cos"], out["video_cross_sin"] = rope_tables(
            vp[0:1], cfg["audio_cross_attention_dim"], cross_max, H, theta)
    if "audio_positions" in pos:
        ap, H = pos["audio_positions"], cfg["audio_num_attention_heads"]
        out["audio_cos"], out["audio_sin"] = rope_tables(
            ap, cfg["Da"], cfg["audio_positional_embedding_max_pos"], H, theta)
        out["audio_cross_cos"], out["audio_cross_sin"] = rope_tables(
            ap[0:1], cfg["audio_cross_attention_dim"], cross_max, H, theta)
    st.save(args.output, out)  # float64, [L, heads, head_dim/2]


def cmd_sigmas(args):
    sig = DISTILLED_SIGMAS if args.distilled else ltx2_sigmas(args.steps).tolist()
    print(json.dumps([float(np.float32(s)) for s in sig]))


def cmd_guide(args):
    p = st.load(args.passes, float64=True)
    out = {}
    for m, dflt in (("video", GUIDER_VIDEO), ("audio", GUIDER_AUDIO)):
        if f"{m}_cond" not in p:
            continue
        g = {k: getattr(args, f"{m}_{k}") if getattr(args, f"{m}_{k}") is not None else v
             for k, v in dflt.items()}
        out[m] = guide(p[f"{m}_cond"], p.get(f"{m}_uncond", 0.0), p.get(f"{m}_ptb", 0.0),
                       p.get(f"{m}_mod", 0.0), g["cfg"], g["stg"], g["rescale"], g["modality"])
    _save(args.output, out, args.dtype)


def cmd_generate(args):
    cfg, W = load_model(args.model)
    ver = "2.5" if cfg["use_keyframes_abs_pos_embedding"] else ("2.3" if cfg["cross_attention_adaln"] else "2")
    noise = st.load(args.noise, float64=True)
    ctx = st.load(args.context, float64=True)
    steps = args.steps if args.steps is not None else PIPELINE[ver]["steps"]
    if args.stg_blocks is not None:
        blocks = parse_blocks(args.stg_blocks, cfg["num_layers"])
    else:
        blocks = parse_blocks(str(PIPELINE[ver]["stg_block"]), cfg["num_layers"])
    sig = ltx2_sigmas(steps) if not args.distilled else np.array(DISTILLED_SIGMAS, np.float32)
    if args.sigmas_list:  # a given list (e.g. the two-stage pipeline's second stage)
        sig = np.array([float(v) for v in args.sigmas_list.split(",")], np.float32)
    gv = {k: getattr(args, "video_" + k) if getattr(args, "video_" + k) is not None else v
          for k, v in GUIDER_VIDEO.items()}
    ga = {k: getattr(args, "audio_" + k) if getattr(args, "audio_" + k) is not None else v
          for k, v in GUIDER_AUDIO.items()}
    na = noise.get("audio_latent") if not args.video_only else None
    image = None
    if args.image_latent:
        image = st.load(args.image_latent, float64=True)["image_latent"]
        image = image[0] if image.ndim == 5 else image
    out = generate(cfg, W, noise["video_latent"], na, ctx, sig.astype(np.float64), gv, ga, blocks,
                   args.fps, log=(lambda m: print(m, file=sys.stderr)) if args.verbose else None,
                   image=image, image_frame=args.image_frame, strength=args.image_strength)
    _save(args.output, out, args.dtype)


def cmd_names(args):
    cfg = load_model(args.model)[0] if args.model else normalize_config(release_flags(args.version))
    for name, shape in tensor_shapes(cfg).items():
        print(PREFIX + name, "x".join(str(s) for s in shape))


def cmd_compare(args):
    a = st.load(args.a, float64=True)[args.name]
    b = st.load(args.b, float64=True)[args.name]
    if a.shape != b.shape:
        print(f"shape mismatch: {a.shape} vs {b.shape}")
        return 1
    diff = np.abs(a - b)
    worst = float(diff.max()) if diff.size else 0.0
    if not np.all(np.isfinite(diff)):
        worst = float("inf")
    scale = float(np.abs(b).max()) if b.size else 0.0
    tol = args.tol * scale if args.rel else args.tol
    print(f"{args.name}: max_abs_diff {worst:.6e} (max |b| {scale:.6e}, tol {tol:g})")
    return 0 if worst <= tol else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("make-tiny", help="tiny random checkpoint (one .safetensors + config metadata)")
    p.add_argument("--output", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--version", choices=("2", "2.3", "2.5"), required=True)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dtype", choices=("F32", "BF16", "F64"), default="F32")
    p.set_defaults(fn=cmd_make_tiny)

    p = sub.add_parser("inputs", help="random forward inputs for a checkpoint")
    p.add_argument("--model", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--seed", type=int, required=True)
    for a in ("--frames", "--height", "--width"):
        p.add_argument(a, type=int, required=True, help="latent size")
    p.add_argument("--audio-frames", type=int, default=4)
    p.add_argument("--video-only", action="store_true")
    p.add_argument("--text-len", type=int, default=8)
    p.add_argument("--audio-text-len", type=int)
    p.add_argument("--mask-valid", type=int, help="prefix mask: this many valid text tokens")
    p.add_argument("--sigma", type=float, default=0.75)
    p.add_argument("--audio-sigma", type=float)
    p.add_argument("--per-token", action="store_true",
                   help="video_timesteps (frame 0 -> 0) and audio_timesteps (token 0 -> 0)")
    p.add_argument("--negative", action="store_true", help="also *_context_neg (for generate)")
    p.set_defaults(fn=cmd_inputs)

    p = sub.add_parser("forward", help="one LTXModel forward -> video [, audio] velocities")
    p.add_argument("--model", required=True)
    p.add_argument("--inputs", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--fps", type=float, default=24.0)
    p.add_argument("--stg-blocks", help="comma list: video+audio self-attention -> value (STG)")
    p.add_argument("--skip-av", action="store_true", help="isolated-modality pass: no A2V/V2A")
    p.add_argument("--dtype", choices=("F32", "F64"), default="F32")
    p.set_defaults(fn=cmd_forward)

    p = sub.add_parser("positions", help="default video/audio RoPE positions (float64)")
    for a in ("--frames", "--height", "--width", "--audio-frames"):
        p.add_argument(a, type=int, required=True)
    p.add_argument("--fps", type=float, default=24.0)
    p.add_argument("--output", required=True)
    p.set_defaults(fn=cmd_positions)

    p = sub.add_parser("rope", help="cos/sin tables [L, heads, head_dim/2] for a positions file")
    p.add_argument("--model", required=True, help="checkpoint whose config sizes the tables")
    p.add_argument("--positions", required=True)
    p.add_argument("--output", required=True)
    p.set_defaults(fn=cmd_rope)

    p = sub.add_parser("sigmas", help="LTX2Scheduler sigmas (JSON list, float32 values)")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--distilled", action="store_true")
    p.set_defaults(fn=cmd_sigmas)

    def guider_opts(p):
        for m in ("video", "audio"):
            for k in ("cfg", "stg", "rescale", "modality"):
                p.add_argument(f"--{m}-{k}", type=float)

    p = sub.add_parser("guide", help="MultiModalGuider on {video,audio}_{cond,uncond,ptb,mod}")
    p.add_argument("--passes", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--dtype", choices=("F32", "F64"), default="F64")
    guider_opts(p)
    p.set_defaults(fn=cmd_guide)

    p = sub.add_parser("generate", help="the one-stage sampling loop (4 passes per step)")
    p.add_argument("--model", required=True)
    p.add_argument("--noise", required=True, help="video_latent [C,F,H,W], audio_latent [8,T,16]")
    p.add_argument("--context", required=True,
                   help="video_context, audio_context, video_context_neg, audio_context_neg")
    p.add_argument("--output", required=True)
    p.add_argument("--steps", type=int)
    p.add_argument("--distilled", action="store_true", help="the distilled sigma list")
    p.add_argument("--sigmas-list", help="comma list of sigmas, the last 0")
    p.add_argument("--stg-blocks")
    p.add_argument("--fps", type=float, default=24.0)
    p.add_argument("--video-only", action="store_true")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--dtype", choices=("F32", "F64"), default="F32")
    p.add_argument("--image-latent", help="file with image_latent [C,1,H,W]")
    p.add_argument("--image-frame", type=int, default=0)
    p.add_argument("--image-strength", type=float, default=1.0)
    guider_opts(p)
    p.set_defaults(fn=cmd_generate)

    p = sub.add_parser("names", help="DiT tensor names and shapes")
    p.add_argument("--model")
    p.add_argument("--version", choices=("2", "2.3", "2.5"), default="2")
    p.set_defaults(fn=cmd_names)

    p = sub.add_parser("compare", help="max-abs difference of one tensor; exit 1 above tol")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("name")
    p.add_argument("tol", type=float)
    p.add_argument("--rel", action="store_true", help="tol relative to max |b|")
    p.set_defaults(fn=cmd_compare)

    args = ap.parse_args(argv)
    return args.fn(args) or 0


if __name__ == "__main__":
    sys.exit(main())
