#!/usr/bin/python3
"""Self-check of the NumPy Cosmos-Predict2.5 reference (tests/ref/cosmos_ref.py) against the
official network, scheduler and wrapper code (TAP output).

Run with a Python that has torch, einops, diffusers and attrs (the project's torch venv,
~/.cache/ditstar/torch-venv/bin/python). The official sources are read from $COSMOS_SRC
(default /tmp/cosmos, a checkout of nvidia-cosmos/cosmos-predict2.5); nothing is copied.
Exits 77 (skip) when torch or the sources are missing, 1 on a mismatch.

The official modules are imported from their files with stand-ins for what they only import
(TransformerEngine: RMSNorm, apply_rotary_pos_emb with TE's unfused semantics; torchvision's
resize NEAREST = torch interpolate "nearest"; megatron, logging, NATTEN, context parallel;
the training-side base classes of the wrapper). The attention runs through the official
"torch" backend (torch_attention_op). In the float64 run the official float32-only spots are
made float64 by a context that maps Tensor.float to double, torch.arange(dtype=float32) to
float64 and the default dtype to float64 (Timesteps' sinusoid, the RoPE buffers and angles,
timesteps * 0.001), and use_wan_fp32_strategy is off (it only casts q, k to float32 before
RoPE; the float32 run keeps it on).
"""
import contextlib
import enum
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
SRC = os.environ.get("COSMOS_SRC", "/tmp/cosmos")
NET_DIR = os.path.join(SRC, "cosmos_predict2", "_src", "predict2")

try:
    import torch
    import einops  # noqa: F401
    import attrs
    import diffusers  # noqa: F401
except ImportError as e:
    print(f"SKIP: {e} (run with the torch venv, e.g. ~/.cache/ditstar/torch-venv/bin/python)")
    sys.exit(77)
if not os.path.exists(os.path.join(NET_DIR, "networks", "minimal_v4_dit.py")):
    print(f"SKIP: no official sources at {SRC} (set COSMOS_SRC)")
    sys.exit(77)

import cosmos_ref as cr  # noqa: E402
import safetensors_np as st  # noqa: E402
from tap import check, run  # noqa: E402

torch.set_num_threads(min(8, os.cpu_count() or 1))
P = "cosmos_predict2._src.predict2."


# ---------------------------------------------------------------- stand-ins


def _mod(name, **attrs_):
    m = types.ModuleType(name)
    m.__path__ = []
    m.__dict__.update(attrs_)
    sys.modules[name] = m
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, m)
    return m


class TERMSNorm(torch.nn.Module):
    """transformer_engine.pytorch.RMSNorm: y = x / sqrt(mean(x^2) + eps) * weight."""

    def __init__(self, hidden_size, eps=1e-5, **kw):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))

    def reset_parameters(self):
        torch.nn.init.ones_(self.weight)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def te_apply_rotary_pos_emb(t, freqs, tensor_format="sbhd", fused=False, **kw):
    """TE apply_rotary_pos_emb (non-interleaved): freqs [s,1,1,d]; bshd transposes it to
    [1,s,1,d]; out = t*cos + rotate_half(t)*sin on the first d features."""
    if tensor_format == "bshd":
        freqs = freqs[: t.shape[1]].transpose(0, 1)
    else:
        freqs = freqs[: t.shape[0]]
    d = freqs.shape[-1]
    tr, tp = t[..., :d], t[..., d:]
    x1, x2 = tr.chunk(2, dim=-1)
    rot = torch.cat((-x2, x1), dim=-1)
    out = tr * torch.cos(freqs).to(t.dtype) + rot * torch.sin(freqs).to(t.dtype)
    return torch.cat((out, tp), dim=-1)


def tv_resize(img, size, interpolation=None, **kw):
    """torchvision.transforms.functional.resize(tensor, size, NEAREST) = interpolate nearest."""
    return torch.nn.functional.interpolate(img, size=list(size), mode="nearest")


class _Any:
    def __init__(self, *a, **k):
        pass


def install_stubs():
    for name in ("cosmos_predict2", "cosmos_predict2._src", "cosmos_predict2._src.predict2",
                 P + "networks", P + "models", P + "modules", P + "utils", P + "configs",
                 P + "configs.video2world", P + "configs.video2world.defaults",
                 "cosmos_predict2._src.imaginaire", "cosmos_predict2._src.imaginaire.utils"):
        _mod(name)
    noop = lambda *a, **k: None  # noqa: E731
    _mod("cosmos_predict2._src.imaginaire.utils.log", debug=noop, info=noop, warning=noop,
         error=noop, critical=noop)
    DataType = enum.Enum("DataType", {"IMAGE": "image", "VIDEO": "video"})
    _mod(P + "conditioner", DataType=DataType, Text2WorldCondition=_Any)
    _mod(P + "modules.neighborhood_attn", NeighborhoodAttention=type("NA", (_Any,), {}))
    _mod(P + "networks.a2a_cp", MinimalA2AAttnOp=type("A", (_Any,), {}),
         NattenA2AAttnOp=type("N", (_Any,), {}))
    _mod(P + "utils.context_parallel", split_inputs_cp=noop, broadcast=noop,
         broadcast_split_tensor=noop, cat_outputs_cp=noop)
    te = _mod("transformer_engine")
    _mod("transformer_engine.pytorch", RMSNorm=TERMSNorm)
    _mod("transformer_engine.pytorch.attention", apply_rotary_pos_emb=te_apply_rotary_pos_emb,
         DotProductAttention=_Any)
    te.pytorch = sys.modules["transformer_engine.pytorch"]
    tv = _mod("torchvision")
    tr = _mod("torchvision.transforms",
              InterpolationMode=enum.Enum("InterpolationMode", {"NEAREST": "nearest"}))
    tr.functional = types.SimpleNamespace(resize=tv_resize)
    tv.transforms = tr
    _mod("megatron")
    _mod("megatron.core", parallel_state=types.SimpleNamespace(is_initialized=lambda: False))
    _mod(P + "configs.video2world.defaults.conditioner", Video2WorldCondition=_Any)
    _mod(P + "models.text2world_model", DenoisePrediction=_Any)

    @attrs.define(slots=False)
    class T2WConfig:
        def __attrs_post_init__(self):
            pass
    _mod(P + "models.text2world_model_rectified_flow", Text2WorldCondition=_Any,
         Text2WorldModelRectifiedFlow=type("T2W", (), {}),
         Text2WorldModelRectifiedFlowConfig=T2WConfig)


def load_official(rel):
    name = P + rel[:-3].replace("/", ".")
    spec = importlib.util.spec_from_file_location(name, os.path.join(NET_DIR, rel))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, mod)
    return mod


install_stubs()
load_official("networks/model_weights_stats.py")
load_official("networks/selective_activation_checkpoint.py")
V4 = load_official("networks/minimal_v4_dit.py")
V1 = load_official("networks/minimal_v1_lvg_dit.py")
SOLV = load_official("models/fm_solvers_unipc.py")
V2W = load_official("models/video2world_model_rectified_flow.py")
DataType = sys.modules[P + "conditioner"].DataType


@contextlib.contextmanager
def fp64():
    """The official float32-only spots in float64 (see the module docstring)."""
    f, ar, dd = torch.Tensor.float, torch.arange, torch.get_default_dtype()

    def arange(*a, **k):
        if k.get("dtype") is torch.float32:
            k["dtype"] = torch.float64
        return ar(*a, **k)
    torch.Tensor.float = lambda self, *a, **k: self.double()
    torch.arange = arange
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.Tensor.float, torch.arange = f, ar
        torch.set_default_dtype(dd)


# ---------------------------------------------------------------- helpers

TMP = tempfile.mkdtemp(prefix="cosmos_selfcheck_")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
RESULTS = {}


def ref_cli(*args):
    subprocess.run([PY, os.path.join(HERE, "cosmos_ref.py"), *map(str, args)], check=True,
                   stdout=subprocess.DEVNULL)


def make(shape, **kw):
    d = os.path.join(TMP, shape + "".join(f"_{k}{v}" for k, v in kw.items()).replace(".", ""))
    if not os.path.exists(d):
        extra = [a for k, v in kw.items() for a in (f"--{k.replace('_', '-')}", v)]
        ref_cli("make-tiny", "--output-dir", d, "--seed", 11, "--shape", shape, *extra)
    return d


def official_net(cfg, model_dir, dtype):
    kw = cr.config_json(cfg)
    kw["atten_backend"] = "torch"
    if dtype == torch.float64:
        kw["use_wan_fp32_strategy"] = False
    net = V1.MinimalV1LVGDiT(**kw)
    sd = torch.load(os.path.join(model_dir, "model.pt"), weights_only=True)
    assert all(k.startswith("net.") for k in sd), "prefix"
    sd = {k[4:]: v for k, v in sd.items()}
    skipped = sorted(k for k in sd if k.endswith("._extra_state"))
    res = net.load_state_dict({k: v for k, v in sd.items() if k not in skipped}, strict=False)
    assert not res.missing_keys and not res.unexpected_keys, res
    assert skipped, "the checkpoint has _extra_state entries"
    net = net.to(dtype).eval()
    if dtype == torch.float64:
        with fp64():
            net.pos_embedder.reset_parameters()
    return net


def official_forward(net, inp, dtype):
    T, H, W = inp["x"].shape[1:]
    t = lambda a: torch.as_tensor(np.asarray(a, np.float64), dtype=dtype)[None]  # noqa: E731
    pm = inp.get("padding_mask", np.zeros((8 * H, 8 * W)))
    ctx = fp64() if dtype == torch.float64 else contextlib.nullcontext()
    with torch.no_grad(), ctx:
        y = net(x_B_C_T_H_W=t(inp["x"]), timesteps_B_T=t(inp["timesteps"]),
                crossattn_emb=t(inp["crossattn_emb"]),
                condition_video_input_mask_B_C_T_H_W=t(inp["condition_mask"]),
                padding_mask=t(pm)[None], fps=None, data_type=DataType.VIDEO)
    return y[0].double().numpy()


def err(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


# ---------------------------------------------------------------- checks

CASES = [("t2w", 0, False), ("t2w_pad", 0, True), ("v2w1", 1, False), ("v2w2", 2, True)]
NETS = {}


def nets(shape):
    if shape not in NETS:
        d = make(shape)
        cfg, W = cr.load_model(d)
        NETS[shape] = (d, cfg, W, official_net(cfg, d, torch.float64),
                       official_net(cfg, d, torch.float32))
    return NETS[shape]


for _shape in ("2b", "14b"):
    @check(f"{_shape}-shaped tiny: forward float64 within 1e-10 and float32 within 1e-4 of the "
           "official MinimalV1LVGDiT (text2world, video2world 1-2 frames, +- padding mask)")
    def _(shape=_shape):
        d, cfg, W, n64, n32 = nets(shape)
        for name, K, pad in CASES:
            f = os.path.join(TMP, f"in_{shape}_{name}.st")
            ref_cli("inputs", "--model-dir", d, "--output", f, "--seed", 5 + K, "--frames", 3,
                    "--height", 4, "--width", 6, "--cond-frames", K,
                    *(["--padding-mask"] if pad else []))
            inp = st.load(f, float64=True)
            y = cr.forward(cfg, W, inp["x"], inp["timesteps"], inp["crossattn_emb"],
                           inp["condition_mask"], inp.get("padding_mask"))
            e64 = err(y, official_forward(n64, inp, torch.float64))
            e32 = err(y, official_forward(n32, inp, torch.float32))
            RESULTS[f"forward {shape} {name}"] = {"f64": e64, "f32": e32,
                                                 "max|y|": float(np.abs(y).max())}
            assert e64 < 1e-10 and e32 < 1e-4, (name, e64, e32)


@check("the padding mask matters (its resize is nearest/floor) and the condition mask channel too")
def _():
    d, cfg, W, n64, _ = nets("2b")
    inp = st.load(os.path.join(TMP, "in_2b_t2w_pad.st"), float64=True)
    base = cr.forward(cfg, W, inp["x"], inp["timesteps"], inp["crossattn_emb"])
    padded = cr.forward(cfg, W, inp["x"], inp["timesteps"], inp["crossattn_emb"], None,
                        inp["padding_mask"])
    assert err(base, padded) > 1e-3
    cm = np.zeros((1, 3, 4, 6))
    cm[:, :1] = 1
    assert err(base, cr.forward(cfg, W, inp["x"], inp["timesteps"], inp["crossattn_emb"], cm)) > 1e-3
    m = cr.resize_nearest(inp["padding_mask"], 4, 6)
    want = inp["padding_mask"][::8, ::8]
    assert np.array_equal(m, want), (m, want)


@check("checkpoint variants (BF16, net_ema., safetensors, no config.json) load to the same "
       "network; shape detection gives the tiny config")
def _():
    for shape in ("2b", "14b"):
        cfg0, W0 = cr.load_model(make(shape))
        for kw in ({"dtype": "BF16"}, {"prefix": "net_ema."}, {"format": "safetensors"},
                   {"config": "no"}, {"format": "safetensors", "dtype": "BF16", "config": "no"}):
            cfg, W = cr.load_model(make(shape, **kw))
            assert cfg == cfg0, (kw, {k: (cfg[k], cfg0[k]) for k in cfg if cfg[k] != cfg0[k]})
            tol = 1e-2 if kw.get("dtype") == "BF16" else 0.0
            assert set(W) == set(W0)
            e = max(err(W[k], W0[k]) / max(1.0, float(np.abs(W0[k]).max())) for k in W)
            assert e <= tol, (kw, e)
        # BF16 .pt: torch reads the same values as the reference reader
        d = make(shape, dtype="BF16")
        sd = torch.load(os.path.join(d, "model.pt"), weights_only=True)
        _, Wb = cr.load_model(d)
        for k, v in Wb.items():
            assert sd["net." + k].dtype == torch.bfloat16
            assert err(sd["net." + k].double().numpy(), v) == 0.0, k


for _kind, _steps in (("karras", 35), ("linear", 35), ("karras", 4), ("linear", 7)):
    @check(f"schedule {_kind} {_steps} steps equals FlowUniPCMultistepScheduler.set_timesteps "
           "(int64 timesteps, float32 sigmas)")
    def _(kind=_kind, steps=_steps):
        s = SOLV.FlowUniPCMultistepScheduler(num_train_timesteps=1000, shift=1,
                                             use_dynamic_shifting=False)
        s.set_timesteps(steps, device="cpu", shift=5.0, use_kerras_sigma=kind == "karras")
        mine = cr.schedule(steps, kind, 5.0)
        assert s.timesteps.dtype == torch.int64
        assert s.timesteps.tolist() == mine["timesteps"], (s.timesteps.tolist(), mine["timesteps"])
        assert s.sigmas.dtype == torch.float32
        assert s.sigmas.tolist() == mine["sigmas"]
        RESULTS[f"schedule {kind} {steps}"] = {
            "evaluations": mine["evaluations"], "first_t": mine["timesteps"][0],
            "last_t": mine["timesteps"][-1], "sigma0": mine["sigmas"][0],
            "sigma_last_nonzero": mine["sigmas"][-2]}


def official_generate(net, cfg, noise, pos, neg, gt, K, steps, kind, g, cond_ts):
    s = SOLV.FlowUniPCMultistepScheduler(num_train_timesteps=1000, shift=1,
                                         use_dynamic_shifting=False)
    s.set_timesteps(steps, device="cpu", shift=5.0, use_kerras_sigma=kind == "karras")
    s.sigmas = s.sigmas.double()  # the same float32 values, the solver arithmetic in float64
    C, T, H, W = noise.shape
    t64 = lambda a: torch.as_tensor(np.asarray(a, np.float64))[None]  # noqa: E731
    mask = np.zeros((1, T, H, W))
    mask[:, :K] = 1
    fake = types.SimpleNamespace(
        config=types.SimpleNamespace(conditional_frame_timestep=cond_ts,
                                     denoise_replace_gt_frames=True),
        net=net, tensor_kwargs={"device": "cpu", "dtype": torch.float64})

    def cond(emb):
        kw = dict(crossattn_emb=t64(emb), condition_video_input_mask_B_C_T_H_W=t64(mask),
                  fps=None, padding_mask=torch.zeros(1, 1, 8 * H, 8 * W, dtype=torch.float64),
                  data_type=DataType.VIDEO)
        return types.SimpleNamespace(is_video=True, use_video_condition=True, gt_frames=t64(gt),
                                     condition_video_input_mask_B_C_T_H_W=t64(mask),
                                     to_dict=lambda: kw)
    c, u = cond(pos), cond(neg)
    n0 = t64(noise)
    latents = n0
    with torch.no_grad(), fp64():
        for t in s.timesteps:
            ts = torch.stack([t]).unsqueeze(0)
            vc = V2W.Video2WorldModelRectifiedFlow.denoise(fake, n0, latents, ts, c)
            vu = V2W.Video2WorldModelRectifiedFlow.denoise(fake, n0, latents, ts, u)
            v = vc + g * (vc - vu)  # get_velocity_fn_from_batch's velocity_fn
            latents = s.step(v.unsqueeze(0), t, latents[0].unsqueeze(0), return_dict=False)[0]
            latents = latents.squeeze(0)
    return latents[0].numpy()


for _kind, _steps, _K in (("karras", 4, 1), ("linear", 5, 2), ("karras", 3, 0)):
    @check(f"generate {_kind} {_steps} steps, {_K} conditioning frames: the reference loop "
           "within 1e-9 of the official scheduler + Video2WorldModelRectifiedFlow.denoise")
    def _(kind=_kind, steps=_steps, K=_K):
        d, cfg, W, n64, _ = nets("2b")
        r = np.random.default_rng(40 + K)
        T, H, Wd = 3, 4, 6
        noise = r.standard_normal((16, T, H, Wd))
        gt = r.standard_normal((16, T, H, Wd))
        pos = r.standard_normal((5, cfg["crossattn_proj_in_channels"]))
        neg = r.standard_normal((5, cfg["crossattn_proj_in_channels"]))
        cts = 0.1 if kind == "karras" else -1.0
        mine = cr.generate(cfg, W, noise, {"crossattn_emb": pos, "neg_crossattn_emb": neg},
                           steps, 7.0, kind, 5.0, gt if K else None, K)
        off = official_generate(n64, cfg, noise, pos, neg, gt, K, steps, kind, 7.0, cts)
        e = err(mine, off)
        info = {"f64": e, "max|x|": float(np.abs(off).max())}
        if K:
            s0 = cr.schedule(steps, kind, 5.0)["sigmas"][0]
            info["cond_frames_vs_gt+(1-s0)(noise-gt)"] = err(
                mine[:, :K], gt[:, :K] + (1 - s0) * (noise[:, :K] - gt[:, :K]))
        RESULTS[f"generate {kind} {steps} K{K}"] = info
        assert e < 1e-9, e


if __name__ == "__main__":
    rc = run()
    print("# " + json.dumps(RESULTS, indent=1).replace("\n", "\n# "))
    sys.exit(rc)
