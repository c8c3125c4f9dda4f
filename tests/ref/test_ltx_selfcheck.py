#!/usr/bin/env python3
"""Self-check of ltx_ref.py against the official ltx-core code (LTX-2 / 2.3 / 2.5).

Run with a Python that has torch and einops (e.g. ~/.cache/ditstar/torch-venv/bin/python);
the official sources come from $LTX2_SRC (default /tmp/ltx2/packages/ltx-core/src).
Exits 77 (skip) when torch, einops or the sources are missing, 1 on a mismatch.

For each version it writes a tiny checkpoint and inputs with ltx_ref.py, builds the official
LTXModel with LTXModelConfigurator.from_metadata (the checkpoint's own config), loads the DiT
tensors (prefix stripped, connectors left out) and runs LTXModel.forward:
  * float64 ("f64"): model.double(), double inputs, with the two float32 spots of the
    official code made float64 (transformer_args.generate_freq_grid_np rounds the RoPE grid
    to float32; timestep_embedding.get_timestep_embedding builds the sinusoid in float32) --
    must agree with the reference to TOL_F64;
  * float64 as shipped ("f64-as-is", grid and sinusoid in float32) and float32 ("f32"):
    reported only.
Cases: A/V and video-only, sigma-only and per-token timesteps, text masks, STG on block 1
(video and audio self-attention), and the isolated-modality pass (A2V and V2A skipped).
It also compares LTX2Scheduler sigmas, MultiModalGuider.calculate and the default
positions of VideoLatentTools / AudioLatentTools with the reference.
"""
import json
import math
import os
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("LTX2_SRC", "/tmp/ltx2/packages/ltx-core/src")
TOL_F64 = 1e-10

try:
    import numpy as np
    import torch
    import einops  # noqa: F401
except ImportError as e:
    print(f"SKIP: {e} (run with the torch venv, e.g. ~/.cache/ditstar/torch-venv/bin/python)")
    sys.exit(77)
if not os.path.isdir(os.path.join(SRC, "ltx_core")):
    print(f"SKIP: no official ltx_core under {SRC} (set LTX2_SRC)")
    sys.exit(77)

sys.path.insert(0, SRC)
sys.path.insert(0, HERE)
if "scipy" not in sys.modules:
    try:
        import scipy  # noqa: F401
    except ImportError:  # schedulers.py imports scipy for BetaScheduler only
        sys.modules["scipy"] = types.ModuleType("scipy")

import ltx_ref  # noqa: E402
import safetensors_np as st  # noqa: E402
from ltx_core.components import guiders as off_guiders  # noqa: E402
from ltx_core.components.schedulers import LTX2Scheduler  # noqa: E402
from ltx_core.guidance.perturbations import (  # noqa: E402
    BatchedPerturbationConfig, Perturbation, PerturbationConfig, PerturbationType)
from ltx_core.model.transformer import timestep_embedding as off_te  # noqa: E402
from ltx_core.model.transformer import transformer_args as off_ta  # noqa: E402
from ltx_core.model.transformer.modality import Modality  # noqa: E402
from ltx_core.model.transformer.model_configurator import LTXModelConfigurator  # noqa: E402

ORIG_GRID = off_ta.generate_freq_grid_np
ORIG_TE = off_te.get_timestep_embedding


def grid_f64(theta, n_axes, inner_dim):
    n = inner_dim // (2 * n_axes)
    g = np.power(theta, np.linspace(math.log(1) / math.log(theta), math.log(theta) / math.log(theta),
                                    n, dtype=np.float64))
    return torch.as_tensor(g * math.pi / 2, dtype=torch.float64)


def te_f64(timesteps, embedding_dim, flip_sin_to_cos=False, downscale_freq_shift=1, scale=1,
           max_period=10000):
    half = embedding_dim // 2
    exponent = -math.log(max_period) * torch.arange(half, dtype=torch.float64) / (half - downscale_freq_shift)
    emb = scale * (timesteps[:, None].double() * torch.exp(exponent)[None, :])
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    if flip_sin_to_cos:
        emb = torch.cat([emb[:, half:], emb[:, :half]], dim=-1)
    return emb


def set_f64_patches(on):
    off_ta.generate_freq_grid_np = grid_f64 if on else ORIG_GRID
    off_te.get_timestep_embedding = te_f64 if on else ORIG_TE


def build_official(path):
    meta = st.load_metadata(path)
    model = LTXModelConfigurator.from_metadata({"config": json.loads(meta["config"])})
    sd = {k[len(ltx_ref.PREFIX):]: torch.from_numpy(np.array(v, np.float64))
          for k, v in st.load(path).items()
          if k.startswith(ltx_ref.PREFIX) and "embeddings_connector." not in k}
    missing, unexpected = model.load_state_dict(sd, strict=True, assign=True)
    assert not missing and not unexpected
    return model.double().eval()


def official_modality(cfg, inp, video, dtype, ts3=False):
    s = ltx_ref.stream_inputs(cfg, inp, video)
    t = lambda a: torch.as_tensor(np.asarray(a, np.float64), dtype=dtype)[None]  # noqa: E731
    mask = s["mask"]
    return Modality(latent=t(s["tokens"]), sigma=torch.tensor([s["sigma"]], dtype=dtype),
                    timesteps=t(s["timesteps"])[..., None] if ts3 else t(s["timesteps"]), positions=t(s["positions"]), context=t(s["context"]),
                    context_mask=None if mask is None else torch.as_tensor(np.asarray(mask, np.int64))[None],
                    keyframes_mask=t(s["keyframes"])[..., None] if video else None)


def official_forward(model, cfg, inp, dtype, stg_blocks=(), skip_av=False):
    v = official_modality(cfg, inp, True, dtype)
    a = official_modality(cfg, inp, False, dtype) if "audio_latent" in inp else None
    pert = []
    if stg_blocks:
        pert += [Perturbation(PerturbationType.SKIP_VIDEO_SELF_ATTN, list(stg_blocks)),
                 Perturbation(PerturbationType.SKIP_AUDIO_SELF_ATTN, list(stg_blocks))]
    if skip_av:
        pert += [Perturbation(PerturbationType.SKIP_A2V_CROSS_ATTN, None),
                 Perturbation(PerturbationType.SKIP_V2A_CROSS_ATTN, None)]
    bp = BatchedPerturbationConfig([PerturbationConfig(pert)], model.num_blocks, dtype=dtype)
    with torch.no_grad():
        vx, ax = model(v, a, bp)
    s = ltx_ref.stream_inputs(cfg, inp, True)
    out = {"video": ltx_ref.unpatchify_video(vx[0].double().numpy(), *s["shape"])}
    if ax is not None:
        out["audio"] = ltx_ref.unpatchify_audio(ax[0].double().numpy())
    return out


def maxdiff(a, b):
    return max(float(np.abs(np.asarray(a[k], np.float64) - b[k]).max()) for k in b)


def check_forward(tmp):
    fails = 0
    cases = [
        ("av", dict(), dict()),
        ("av per-token mask", dict(per_token=True, mask_valid=5), dict()),
        ("av STG block 1", dict(mask_valid=6), dict(stg_blocks=(1,))),
        ("av isolated modality", dict(per_token=True), dict(skip_av=True)),
        ("av sigmas differ", dict(sigma=0.6, audio_sigma=0.3), dict()),
        ("video-only", dict(video_only=True), dict()),
        ("video-only per-token STG", dict(video_only=True, per_token=True, mask_valid=4),
         dict(stg_blocks=(0,))),
    ]
    print(f"{'version':8s} {'case':28s} {'f64 vs ref':>11s} {'f64-as-is':>11s} {'f32':>11s} {'max|ref|':>9s}")
    for ver in ("2", "2.3", "2.5"):
        path = os.path.join(tmp, f"ltx{ver}.safetensors")
        ltx_ref.make_tiny(path, seed=11, version=ver, layers=2)
        cfg, W = ltx_ref.load_model(path)
        model64 = build_official(path)
        import copy
        model32 = copy.deepcopy(model64).float()
        for ci, (name, ikw, fkw) in enumerate(cases):
            inp32 = ltx_ref.make_inputs(cfg, 100 + ci, 3, 2, 3, 5, text_len=8, audio_text_len=7, **ikw)
            inp = {k: np.asarray(v, np.float64) if v.dtype.kind == "f" else v for k, v in inp32.items()}
            ref = ltx_ref.forward(cfg, W, inp, **fkw)
            set_f64_patches(True)
            o64 = official_forward(model64, cfg, inp, torch.float64, **fkw)
            set_f64_patches(False)
            o64raw = official_forward(model64, cfg, inp, torch.float64, **fkw)
            o32 = official_forward(model32, cfg, inp, torch.float32, **fkw)
            d64, draw, d32 = maxdiff(o64, ref), maxdiff(o64raw, ref), maxdiff(o32, ref)
            scale = max(float(np.abs(v).max()) for v in ref.values())
            ok = d64 <= TOL_F64 and set(o64) == set(ref)
            fails += not ok
            print(f"{ver:8s} {name:28s} {d64:11.3e} {draw:11.3e} {d32:11.3e} {scale:9.3f}"
                  f"{'' if ok else '  FAIL'}")
    return fails


def check_sigmas():
    fails = 0
    for steps in (1, 2, 8, 20, 30, 40, 50):
        off = LTX2Scheduler().execute(steps=steps).numpy()
        ref = ltx_ref.ltx2_sigmas(steps)
        exact = off.dtype == ref.dtype and np.array_equal(off, ref)
        fails += not exact
        print(f"sigmas steps {steps:2d}: {'bit-exact' if exact else 'DIFFER max %.3e' % np.abs(off - ref).max()}"
              f"  first {off[0]!r} last non-zero {off[-2]!r}")
    return fails


def check_guider():
    fails = 0
    rng = np.random.default_rng(5)
    for params in ((3.0, 1.0, 0.7, 3.0), (7.0, 1.0, 0.7, 3.0), (3.0, 0.0, 0.0, 1.0), (1.0, 1.0, 0.7, 3.0)):
        x = [rng.standard_normal((1, 30, 16)).astype(np.float32) for _ in range(4)]
        g = off_guiders.MultiModalGuider(off_guiders.MultiModalGuiderParams(
            cfg_scale=params[0], stg_scale=params[1], rescale_scale=params[2], modality_scale=params[3]))
        off = g.calculate(*[torch.from_numpy(a) for a in x]).double().numpy()
        ref = ltx_ref.guide(*[a.astype(np.float64) for a in x], *params)
        d = float(np.abs(off - ref).max())
        rel = d / float(np.abs(ref).max())
        ok = rel < 1e-5
        fails += not ok
        print(f"guider cfg/stg/rescale/modality {params}: official f32 vs ref max-abs {d:.3e} "
              f"(rel {rel:.1e}){'' if ok else '  FAIL'}")
    return fails


def check_positions():
    from ltx_core.components.patchifiers import AudioPatchifier, VideoLatentPatchifier
    from ltx_core.tools import AudioLatentTools, VideoLatentTools
    from ltx_core.types import AudioLatentShape, VideoLatentShape
    fails = 0
    for (F, H, Wd, T, fps) in ((3, 2, 3, 5, 24.0), (16, 16, 24, 126, 24.0), (4, 3, 2, 9, 25.0)):
        vt = VideoLatentTools(VideoLatentPatchifier(patch_size=1),
                              VideoLatentShape(batch=1, channels=128, frames=F, height=H, width=Wd), fps)
        vs = vt.create_initial_state("cpu", torch.float32)
        at = AudioLatentTools(AudioPatchifier(patch_size=1),
                              AudioLatentShape(batch=1, channels=8, frames=T, mel_bins=16))
        as_ = at.create_initial_state("cpu", torch.float32)
        rv, ra = ltx_ref.video_positions(F, H, Wd, fps), ltx_ref.audio_positions(T)
        dv = float(np.abs(vs.positions[0].double().numpy() - rv).max())
        da = float(np.abs(as_.positions[0].double().numpy() - ra).max())
        kf = vs.keyframes_mask[0, :, 0].numpy()
        kf_ok = np.array_equal(kf, (np.arange(F * H * Wd) < H * Wd).astype(np.float32))
        ok = dv < 1e-6 and da < 1e-6 and kf_ok
        fails += not ok
        print(f"positions F{F} H{H} W{Wd} T{T} fps {fps}: video {dv:.2e} audio {da:.2e} "
              f"(official float32 vs float64), keyframes mask {'ok' if kf_ok else 'DIFFERS'}"
              f"{'' if ok else '  FAIL'}")
    return fails


def check_generate(tmp):
    """3 Euler steps of the one-stage loop built from the official pieces (X0Model,
    MultiModalGuider, EulerDiffusionStep; the four passes cond / uncond / ptb / mod as
    _guided_denoise runs them) vs ltx_ref.generate. The official guider and Euler step
    compute in float32 (cond.float(), calc_dtype float32), so this is reported with a
    float32-level tolerance."""
    from ltx_core.components.diffusion_steps import EulerDiffusionStep
    from ltx_core.model.transformer.model import X0Model
    path = os.path.join(tmp, "gen.safetensors")
    ltx_ref.make_tiny(path, seed=21, version="2.3", layers=2)
    cfg, W = ltx_ref.load_model(path)
    x0model = X0Model(build_official(path))
    inp = ltx_ref.make_inputs(cfg, 7, 2, 2, 3, 4, text_len=6, negative=True)
    inp = {k: v.astype(np.float64) for k, v in inp.items()}
    sig = ltx_ref.ltx2_sigmas(3)
    gv, ga = dict(ltx_ref.GUIDER_VIDEO), dict(ltx_ref.GUIDER_AUDIO)
    ref = ltx_ref.generate(cfg, W, inp["video_latent"], inp["audio_latent"], inp,
                           sig.astype(np.float64), gv, ga, [1])
    P = off_guiders.MultiModalGuiderParams
    guiders = [off_guiders.MultiModalGuider(P(cfg_scale=g["cfg"], stg_scale=g["stg"],
                                              rescale_scale=g["rescale"], modality_scale=g["modality"]))
               for g in (gv, ga)]
    set_f64_patches(True)
    state = {"video_latent": inp["video_latent"], "audio_latent": inp["audio_latent"]}
    sig_t = torch.from_numpy(sig)
    stepper = EulerDiffusionStep()
    for i in range(len(sig) - 1):
        s = float(sig[i])
        outs = []
        for vc, ac, pert in (
                ("video_context", "audio_context", []),
                ("video_context_neg", "audio_context_neg", []),
                ("video_context", "audio_context",
                 [Perturbation(PerturbationType.SKIP_VIDEO_SELF_ATTN, [1]),
                  Perturbation(PerturbationType.SKIP_AUDIO_SELF_ATTN, [1])]),
                ("video_context", "audio_context",
                 [Perturbation(PerturbationType.SKIP_A2V_CROSS_ATTN, None),
                  Perturbation(PerturbationType.SKIP_V2A_CROSS_ATTN, None)])):
            d = dict(state, video_sigma=np.array([s]), audio_sigma=np.array([s]),
                     video_context=inp[vc], audio_context=inp[ac])
            # timesteps [1, T, 1] as the pipeline's patchified denoise mask (X0Model broadcast)
            v = official_modality(cfg, d, True, torch.float64, ts3=True)
            a = official_modality(cfg, d, False, torch.float64, ts3=True)
            bp = BatchedPerturbationConfig([PerturbationConfig(pert)], 2, dtype=torch.float64)
            with torch.no_grad():
                outs.append(x0model(v, a, bp))
        new = {}
        for j, key in enumerate(("video_latent", "audio_latent")):
            den = guiders[j].calculate(*[o[j] for o in outs])
            toks = (ltx_ref.patchify_video if j == 0 else ltx_ref.patchify_audio)(state[key])
            x = stepper.step(torch.from_numpy(toks)[None], den, sig_t, i)[0].double().numpy()
            new[key] = (ltx_ref.unpatchify_video(x, *state[key].shape[1:]) if j == 0
                        else ltx_ref.unpatchify_audio(x))
        state = new
    set_f64_patches(False)
    dv = float(np.abs(state["video_latent"] - ref["video"]).max())
    da = float(np.abs(state["audio_latent"] - ref["audio"]).max())
    ok = max(dv, da) < 1e-4
    print(f"generate 2.3, 3 steps, 4 passes (STG block 1): video {dv:.3e} audio {da:.3e} "
          f"(official guider/Euler in float32){'' if ok else '  FAIL'}")
    return 0 if ok else 1


def main():
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        fails = check_forward(tmp)
        fails += check_generate(tmp)
    fails += check_sigmas()
    fails += check_guider()
    fails += check_positions()
    print("OK" if not fails else f"{fails} FAILED")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
