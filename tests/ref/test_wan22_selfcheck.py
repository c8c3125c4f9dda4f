#!/usr/bin/python3
"""Self-checks of the NumPy Wan2.2 reference (tests/ref/wan22_ref.py) that need no C
code (TAP output).

Each check compares wan22_ref.py with a second formulation: the Wan2.1 reference
(wan_ref.py) where the two must agree, explicit per-token loops, hand-written
sampling loops, and schedule facts read off the official code."""
import contextlib
import io
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np as st  # noqa: E402
import sampler_ref  # noqa: E402
import wan22_ref as w22  # noqa: E402
import wan_ref as ref  # noqa: E402

from tap import check, run  # noqa: E402


def close(a, b, tol=1e-12):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, f"shape {a.shape} != {b.shape}"
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    assert err <= tol, f"max abs diff {err:.3e} > {tol:.1e}"


def tiny(variant, seed, layers=2):
    """-> (cfg, W float64) of a tiny model of the variant (not written to disk)."""
    cfg = w22.normalize_config(w22.tiny_config(variant, layers))
    return cfg, {k: v.astype(np.float64) for k, v in ref.random_weights(cfg, seed).items()}


def rand(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


# ---------------------------------------------------------------- forward


@check("scalar-t Wan2.2 forward equals the Wan2.1 forward (wan_ref) on the same weights, 1e-12")
def _():
    for variant, seed in (("t2v-a14b", 1), ("ti2v-5b", 2)):
        cfg, W = tiny(variant, seed)
        cfg21 = ref.normalize_config(dict(w22.tiny_config(variant), model_type="t2v"))
        for shape, t in (((2, 4, 6), 937.0), ((1, 2, 2), 0.0), ((3, 6, 4), 501.0)):
            x = rand(seed + 10, cfg["in_dim"], *shape)
            ctx = rand(seed + 11, 5, cfg["text_dim"])
            y = w22.forward(cfg, W, x, t, ctx)
            assert y.shape == (cfg["out_dim"],) + shape
            assert np.all(np.isfinite(y)) and np.abs(y).max() > 1e-3
            close(y, ref.forward(cfg21, W, x, t, ctx), 1e-12)


@check("per-token t with all values equal is bit-identical to scalar t")
def _():
    cfg, W = tiny("ti2v-5b", 3)
    x, ctx = rand(4, 8, 2, 4, 6), rand(5, 3, 24)
    L = 2 * 2 * 3
    for t in (0.0, 640.0, 999.0):
        a = w22.forward(cfg, W, x, t, ctx)
        b = w22.forward(cfg, W, x, np.full(L, t), ctx)
        assert np.array_equal(a, b), float(np.abs(a - b).max())
    # and a [1] t is a scalar t
    assert np.array_equal(w22.forward(cfg, W, x, np.array([640.0]), ctx),
                          w22.forward(cfg, W, x, 640.0, ctx))


def loop_forward(cfg, W, x, t_tok, ctx):
    """Second formulation of the per-token forward: every per-token quantity (time
    embedding, modulation, residual gates, head) computed token by token with the
    Wan2.1 functions; attention on the stacked rows."""
    D, eps = cfg["dim"], cfg["eps"]
    patches, grid = ref.patchify(x, cfg["patch_size"])
    L = patches.shape[0]
    xt = patches @ W["patch_embedding.weight"].reshape(D, -1).T + W["patch_embedding.bias"]
    c = ref.embed_text(cfg, W, ctx)
    e, e0 = [], []
    for l in range(L):
        sin = ref.sinusoidal_embedding_1d(cfg["freq_dim"], t_tok[l])
        el = ref.linear(W, "time_embedding.2", ref.silu(ref.linear(W, "time_embedding.0", sin)))
        e.append(el)
        e0.append(ref.linear(W, "time_projection.1", ref.silu(el)).reshape(6, D))
    for i in range(cfg["num_layers"]):
        p = f"blocks.{i}."
        mods = [W[p + "modulation"][0] + e0[l] for l in range(L)]
        h = np.stack([ref.layer_norm(xt[l], eps) * (1 + mods[l][1]) + mods[l][0] for l in range(L)])
        sa = ref.self_attention(cfg, W, p + "self_attn.", h, grid)
        xt = np.stack([xt[l] + sa[l] * mods[l][2] for l in range(L)])
        hc = ref.layer_norm(xt, eps, W[p + "norm3.weight"], W[p + "norm3.bias"])
        xt = xt + ref.cross_attention(cfg, W, p + "cross_attn.", hc, c)
        rows = []
        for l in range(L):
            hl = ref.layer_norm(xt[l], eps) * (1 + mods[l][4]) + mods[l][3]
            f = ref.linear(W, p + "ffn.2", ref.gelu_tanh(ref.linear(W, p + "ffn.0", hl)))
            rows.append(xt[l] + f * mods[l][5])
        xt = np.stack(rows)
    out = np.stack([ref.head(cfg, W, xt[l:l + 1], e[l])[0] for l in range(L)])
    return ref.unpatchify(out, grid, cfg["patch_size"], cfg["out_dim"])


@check("per-token t (distinct values, TI2V first frame t=0) equals a token-by-token formulation")
def _():
    cfg, W = tiny("ti2v-5b", 6)
    x, ctx = rand(7, 8, 3, 4, 4), rand(8, 6, 24)
    mask = w22.ti2v_mask(x.shape)
    t_tok = w22.ti2v_token_timesteps(mask, 733, cfg["patch_size"])
    assert t_tok.shape == (12,) and np.all(t_tok[:4] == 0) and np.all(t_tok[4:] == 733)
    y = w22.forward(cfg, W, x, t_tok, ctx)
    close(y, loop_forward(cfg, W, x, t_tok, ctx), 1e-12)
    t_rand = np.random.default_rng(9).integers(0, 1000, 12).astype(np.float64)
    close(w22.forward(cfg, W, x, t_rand, ctx), loop_forward(cfg, W, x, t_rand, ctx), 1e-12)
    # the per-token t matters: differs from the scalar-t forward
    assert np.abs(y - w22.forward(cfg, W, x, 733.0, ctx)).max() > 1e-6
    # the embed CLI shapes: e [L, D], e0 [L, 6, D]
    tokens, e, e0, c, grid = w22.embed(cfg, W, x, t_tok, ctx)
    assert e.shape == (12, 32) and e0.shape == (12, 6, 32) and grid == (3, 2, 2)
    # a t of the wrong length is refused
    try:
        w22.forward(cfg, W, x, np.zeros(5), ctx)
    except ValueError:
        pass
    else:
        raise AssertionError("t of 5 values for 12 tokens accepted")


@check("i2v forward = forward of a t2v model with the same weights on cat(x, y); y required")
def _():
    cfg, W = tiny("i2v-a14b", 10)
    assert cfg["in_dim"] == 12 and cfg["out_dim"] == 4
    x, yc, ctx = rand(11, 4, 2, 4, 6), rand(12, 8, 2, 4, 6), rand(13, 4, 24)
    out = w22.forward(cfg, W, x, 875.0, ctx, yc)
    cat = np.concatenate([x, yc], axis=0)
    t2v = ref.normalize_config(dict(w22.tiny_config("i2v-a14b"), model_type="t2v"))
    close(out, ref.forward(t2v, W, cat, 875.0, ctx), 1e-12)
    # patch embedding split: the x and y parts of the Conv3d weight add up
    px, _ = ref.patchify(x, (1, 2, 2))
    py, _ = ref.patchify(yc, (1, 2, 2))
    tok = w22.embed(cfg, W, x, 875.0, ctx, yc)[0]
    tok_split = (px @ W["patch_embedding.weight"][:, :4].reshape(32, -1).T +
                 py @ W["patch_embedding.weight"][:, 4:].reshape(32, -1).T + W["patch_embedding.bias"])
    close(tok, tok_split, 1e-12)
    for bad in (None, yc[:7]):
        try:
            w22.forward(cfg, W, x, 875.0, ctx, bad)
        except ValueError:
            continue
        raise AssertionError("i2v forward without a proper y accepted")


# ---------------------------------------------------------------- checkpoints


@check("make-tiny: released layouts, official config keys, 2 shards + index, experts differ")
def _():
    keys = {"_class_name", "dim", "eps", "ffn_dim", "freq_dim", "in_dim", "model_type",
            "num_heads", "num_layers", "out_dim", "text_len", "text_dim"}
    with tempfile.TemporaryDirectory() as d:
        for variant, (mtype, cin, cout) in w22.TINY_CHANNELS.items():
            out = os.path.join(d, variant)
            assert w22.main(["make-tiny", "--variant", variant, "--output-dir", out,
                             "--seed", "5"]) == 0
            subs = [w22.HIGH_DIR, w22.LOW_DIR] if variant.endswith("a14b") else [""]
            if subs != [""]:
                assert sorted(os.listdir(out)) == subs, os.listdir(out)
            weights = []
            for sub in subs:
                m = os.path.join(out, sub)
                files = sorted(os.listdir(m))
                assert files == ["config.json", "diffusion_pytorch_model-00001-of-00002.safetensors",
                                 "diffusion_pytorch_model-00002-of-00002.safetensors",
                                 ref.INDEX_NAME], files
                with open(os.path.join(m, "config.json")) as f:
                    raw = json.load(f)
                assert set(raw) == keys, set(raw) ^ keys
                assert (raw["model_type"], raw["in_dim"], raw["out_dim"]) == (mtype, cin, cout)
                assert raw["text_dim"] == 24 and raw["_class_name"] == "WanModel"
                with open(os.path.join(m, ref.INDEX_NAME)) as f:
                    assert len(set(json.load(f)["weight_map"].values())) == 2
                cfg, W = w22.load_model(m)
                assert set(W) == set(ref.tensor_shapes(cfg)) and len(W) == 12 + 27 * 2 + 3
                assert not any(k.startswith("img_emb") or "_img" in k for k in W)
                assert W["patch_embedding.weight"].shape == (32, cin, 1, 2, 2)
                weights.append(W)
            if len(weights) == 2:
                assert all(not np.array_equal(weights[0][k], weights[1][k]) for k in weights[0])
                models = w22.load_models(out)
                assert set(models) == {"high", "low"} and w22.variant_of(models) == variant
                # the expert seeds: high = seed, low = seed + 1
                cfg0 = w22.normalize_config(w22.tiny_config(variant))
                assert np.array_equal(weights[1]["head.head.weight"],
                                      ref.random_weights(cfg0, 6)["head.head.weight"])
            else:
                assert w22.variant_of(w22.load_models(out)) == "ti2v-5b"
        # BF16 and layers
        out = os.path.join(d, "bf16")
        assert w22.main(["make-tiny", "--variant", "t2v-a14b", "--output-dir", out, "--seed", "1",
                         "--layers", "3", "--dtype", "BF16"]) == 0
        shard = os.path.join(out, w22.LOW_DIR, "diffusion_pytorch_model-00001-of-00002.safetensors")
        assert {h["dtype"] for h in st.read_header(shard)[0].values()} == {"BF16"}
        assert w22.load_model(os.path.join(out, w22.LOW_DIR))[0]["num_layers"] == 3


@check("make-tiny --disagree: expert configs differ; the reference refuses them")
def _():
    with tempfile.TemporaryDirectory() as d:
        assert w22.main(["make-tiny", "--variant", "t2v-a14b", "--output-dir", d, "--seed", "2",
                         "--disagree"]) == 0
        cfgs = []
        for sub in (w22.HIGH_DIR, w22.LOW_DIR):
            with open(os.path.join(d, sub, "config.json")) as f:
                cfgs.append(json.load(f))
        assert cfgs[0]["dim"] == 32 and cfgs[1]["dim"] == 48
        w22.load_model(os.path.join(d, w22.LOW_DIR))  # each expert is itself consistent
        try:
            w22.load_models(d)
        except ValueError as why:
            assert "dim 32 vs 48" in str(why), why
        else:
            raise AssertionError("disagreeing experts accepted")
        st.save(os.path.join(d, "n"), {"noise": np.zeros((4, 1, 2, 2))})
        st.save(os.path.join(d, "c"), {"context": np.zeros((2, 24))})
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = w22.main(["generate", "--model-dir", d, "--noise", os.path.join(d, "n"),
                           "--context", os.path.join(d, "c"), "--steps", "2",
                           "--output", os.path.join(d, "o")])
        assert rc == 2 and "disagree" in err.getvalue(), (rc, err.getvalue())
        assert not os.path.exists(os.path.join(d, "o"))
        try:
            w22.make_tiny("ti2v-5b", os.path.join(d, "t"), 1, disagree=True)
        except ValueError:
            pass
        else:
            raise AssertionError("--disagree for a single model accepted")


@check("forward CLI: --expert picks the subfolder (default high); i2v reads y; per-token t")
def _():
    with tempfile.TemporaryDirectory() as d:
        m = os.path.join(d, "m")
        w22.make_tiny("i2v-a14b", m, 20)
        inp = os.path.join(d, "in")
        x, yc, ctx = rand(21, 4, 2, 4, 4), rand(22, 8, 2, 4, 4), rand(23, 3, 24)
        t_tok = np.arange(8, dtype=np.float64) * 100
        st.save(inp, {"x": x, "y": yc, "t": t_tok, "context": ctx})
        outs = {}
        for expert in (None, "high", "low"):
            o = os.path.join(d, f"o{expert}")
            args = ["forward", "--model-dir", m, "--inputs", inp, "--output", o]
            assert w22.main(args + (["--expert", expert] if expert else [])) == 0
            outs[expert] = st.load(o)["y"]
        assert np.array_equal(outs[None], outs["high"])
        for expert, sub in (("high", w22.HIGH_DIR), ("low", w22.LOW_DIR)):
            cfg, W = w22.load_model(os.path.join(m, sub))
            close(outs[expert], w22.forward(cfg, W, x, t_tok, ctx, yc), 0)
        assert np.abs(outs["high"] - outs["low"]).max() > 1e-6
        # i2v inputs without y: refused with exit 2
        st.save(inp, {"x": x, "t": np.array([3.0]), "context": ctx})
        with contextlib.redirect_stderr(io.StringIO()):
            assert w22.main(["forward", "--model-dir", m, "--inputs", inp,
                             "--output", os.path.join(d, "bad")]) == 2


# ---------------------------------------------------------------- schedule


@check("expert split at the default 40 steps: T2V-A14B 26 high + 14 low, I2V-A14B 15 + 25")
def _():
    for variant, want in (("t2v-a14b", (26, 14)), ("i2v-a14b", (15, 25))):
        steps, shift, guide, boundary = w22.sampling_options(variant)
        assert steps == 40
        _, ts = sampler_ref.sampling_schedule(steps, shift)
        plan = w22.expert_plan(ts, boundary, guide)
        experts = [e for e, _ in plan]
        assert (experts.count("high"), experts.count("low")) == want, experts
        # high first, then low, never back
        assert experts == ["high"] * want[0] + ["low"] * want[1]
        assert all(g == guide[1] for e, g in plan if e == "high")
        assert all(g == guide[0] for e, g in plan if e == "low")
    assert w22.sampling_options("t2v-a14b")[1:] == (12.0, (3.0, 4.0), 0.875)
    assert w22.sampling_options("i2v-a14b")[1:] == (5.0, (3.5, 3.5), 0.9)
    assert w22.sampling_options("ti2v-5b") == (50, 5.0, 5.0, None)
    assert w22.sampling_options("t2v-a14b", guidance=2.0)[2] == (2.0, 2.0)
    assert w22.sampling_options("t2v-a14b", guidance=2.0, guide_high=6.0)[2] == (2.0, 6.0)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert w22.main(["schedule", "--variant", "t2v-a14b"]) == 0
    lines = buf.getvalue().split("\n")
    assert lines[0] == "0 999 high 4" and lines[26].startswith("26 ") and lines[26].endswith(" low 3"), lines


@check("t = 875 exactly at 27 and 46 steps (shift 12): the >= boundary picks the high expert there")
def _():
    exact = [n for n in range(1, 101) if 875 in sampler_ref.sampling_schedule(n, 12.0)[1]]
    assert exact[:2] == [27, 46], exact
    for n in (27, 46):
        _, ts = sampler_ref.sampling_schedule(n, 12.0)
        k = int(np.where(ts == 875)[0][0])
        plan = w22.expert_plan(ts, 0.875, (3.0, 4.0))
        assert plan[k] == ("high", 4.0) and plan[k + 1][0] == "low", (k, plan[k], plan[k + 1])
        assert w22.boundary_timestep(0.875) == 875.0
    # I2V: 900 exactly at 31 steps (shift 5)
    _, ts = sampler_ref.sampling_schedule(31, 5.0)
    k = int(np.where(ts == 900)[0][0])
    assert w22.expert_plan(ts, 0.9, (3.5, 3.5))[k][0] == "high" and w22.boundary_timestep(0.9) == 900.0


def hand_loop(models, noise, c, cn, steps, shift, pick, y=None):
    """Euler CFG loop written out: pick(t) -> (expert, guidance)."""
    sigmas, ts = sampler_ref.sampling_schedule(steps, shift)
    x = noise.copy()
    for i, t in enumerate(ts):
        expert, g = pick(int(t))
        cfg, W = models[expert]
        vc = w22.forward(cfg, W, x, float(t), c, y)
        vu = w22.forward(cfg, W, x, float(t), cn, y)
        x = x + (sigmas[i + 1] - sigmas[i]) * (vu + g * (vc - vu))
    return x


@check("A14B generate switches expert and guidance at t >= boundary (hand loop; > would differ)")
def _():
    models = {"high": tiny("t2v-a14b", 30, 1), "low": tiny("t2v-a14b", 31, 1)}
    noise, c, cn = rand(32, 4, 1, 4, 4), rand(33, 5, 24), rand(34, 2, 24)
    got = w22.generate(models, noise, c, cn, 27, 12.0, (3.0, 4.0), 0.875, "euler")
    want = hand_loop(models, noise, c, cn, 27, 12.0,
                     lambda t: ("high", 4.0) if t >= 875 else ("low", 3.0))
    close(got, want, 1e-12)
    strict = hand_loop(models, noise, c, cn, 27, 12.0,
                       lambda t: ("high", 4.0) if t > 875 else ("low", 3.0))
    assert np.abs(strict - got).max() > 1e-9
    seen = []
    w22.generate(models, noise, c, cn, 27, 12.0, (3.0, 4.0), 0.875, "unipc",
                 callback=lambda i, t, e, x: seen.append((t, e)))
    assert (875, "high") in seen and len(seen) == 27


@check("I2V generate: y in both cond and uncond passes (hand loop); UniPC finite")
def _():
    models = {"high": tiny("i2v-a14b", 40, 1), "low": tiny("i2v-a14b", 41, 1)}
    noise, yc = rand(42, 4, 2, 4, 4), rand(43, 8, 2, 4, 4)
    c, cn = rand(44, 5, 24), rand(45, 3, 24)
    got = w22.generate(models, noise, c, cn, 6, 5.0, (3.5, 2.5), 0.9, "euler", image=yc)
    want = hand_loop(models, noise, c, cn, 6, 5.0,
                     lambda t: ("high", 2.5) if t >= 900 else ("low", 3.5), yc)
    close(got, want, 1e-12)
    u = w22.generate(models, noise, c, cn, 6, 5.0, (3.5, 3.5), 0.9, "unipc", image=yc)
    assert np.all(np.isfinite(u))
    for bad in (None, yc[:, :1]):
        try:
            w22.generate(models, noise, c, cn, 2, 5.0, (3.5, 3.5), 0.9, "euler", image=bad)
        except ValueError:
            continue
        raise AssertionError("i2v generate without a proper y accepted")


@check("TI2V image mode: frame 0 == z exactly after every step; first-frame tokens t = 0; hand loop")
def _():
    cfg, W = tiny("ti2v-5b", 50, 1)
    models = {"single": (cfg, W)}
    noise, z = rand(51, 8, 3, 4, 4), rand(52, 8, 1, 4, 4)
    c, cn = rand(53, 4, 24), rand(54, 2, 24)
    for solver in ("unipc", "euler"):
        frames = []
        out = w22.generate(models, noise, c, cn, 5, 5.0, 5.0, None, solver, image=z,
                           callback=lambda i, t, e, x: frames.append(x.copy()))
        assert len(frames) == 5
        for x in frames:
            assert np.array_equal(x[:, :1], z)
        assert np.array_equal(out[:, :1], z)
        assert np.abs(out[:, 1:] - noise[:, 1:]).max() > 1e-3
    # hand loop: latent starts as noise with frame 0 = z, per-token t, re-insertion
    sigmas, ts = sampler_ref.sampling_schedule(4, 5.0)
    x = noise.copy()
    x[:, 0] = z[:, 0]
    for i, t in enumerate(ts):
        tt = np.concatenate([np.zeros(4), np.full(8, float(t))])  # 2x2 tokens per frame
        vc = w22.forward(cfg, W, x, tt, c)
        vu = w22.forward(cfg, W, x, tt, cn)
        x = x + (sigmas[i + 1] - sigmas[i]) * (vu + 5.0 * (vc - vu))
        x[:, 0] = z[:, 0]
    close(w22.generate(models, noise, c, cn, 4, 5.0, 5.0, None, "euler", image=z), x, 1e-12)


@check("TI2V text mode and a single Wan2.1 t2v folder equal wan_ref.generate (1e-12)")
def _():
    for variant in ("ti2v-5b", "t2v-a14b"):
        cfg, W = tiny(variant, 60, 1)
        cfg21 = ref.normalize_config(dict(w22.tiny_config(variant, 1), model_type="t2v"))
        noise = rand(61, cfg["out_dim"], 2, 4, 4)
        c, cn = rand(62, 5, 24), rand(63, 2, 24)
        for solver in ("unipc", "euler"):
            got = w22.generate({"single": (cfg, W)}, noise, c, cn, 4, 5.0, 5.0, None, solver)
            close(got, ref.generate(cfg21, W, noise, c, cn, 4, 5.0, 5.0, solver), 1e-12)


@check("generate CLI: defaults per variant, image latents by name, metadata, equals the function")
def _():
    with tempfile.TemporaryDirectory() as d:
        for variant, img in (("t2v-a14b", None), ("i2v-a14b", "y"), ("ti2v-5b", "z")):
            m = os.path.join(d, variant)
            w22.make_tiny(variant, m, 70, layers=1)
            models = w22.load_models(m)
            cfg = next(iter(models.values()))[0]
            C = cfg["out_dim"]
            noise = rand(71, C, 2, 4, 4)
            c = rand(72, 3, 24)
            st.save(os.path.join(d, "noise"), {"noise": noise})
            st.save(os.path.join(d, "ctx"), {"context": c})   # no context_null: zeros
            args = ["generate", "--model-dir", m, "--noise", os.path.join(d, "noise"),
                    "--context", os.path.join(d, "ctx"), "--steps", "3",
                    "--output", os.path.join(d, "out")]
            image = None
            if img == "y":
                image = rand(73, 4 + C, 2, 4, 4)
            elif img == "z":
                image = rand(73, C, 1, 4, 4)
            if image is not None:
                st.save(os.path.join(d, "img"), {img: image})
                args += ["--image-latent", os.path.join(d, "img")]
            assert w22.main(args) == 0
            got = st.load(os.path.join(d, "out"))["latents"]
            steps, shift, guide, boundary = w22.sampling_options(variant, 3)
            want = w22.generate(models, noise, c, np.zeros((1, 24)), steps, shift, guide,
                                boundary, "unipc", image)
            close(got, want, 0)
            meta = st.load_metadata(os.path.join(d, "out"))
            assert meta["variant"] == variant and len(meta["experts"].split(",")) == 3, meta
            assert meta["guide"] == json.dumps(guide) and meta["steps"] == "3", meta
        # an image latent for a t2v model is refused
        st.save(os.path.join(d, "img"), {"z": np.zeros((4, 1, 4, 4))})
        with contextlib.redirect_stderr(io.StringIO()):
            assert w22.main(["generate", "--model-dir", os.path.join(d, "t2v-a14b"),
                             "--noise", os.path.join(d, "noise"), "--context",
                             os.path.join(d, "ctx"), "--steps", "2", "--image-latent",
                             os.path.join(d, "img"), "--output", os.path.join(d, "x")]) == 2


def main():
    return run()


if __name__ == "__main__":
    sys.exit(main())
