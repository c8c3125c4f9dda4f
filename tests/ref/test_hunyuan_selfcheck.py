#!/usr/bin/python3
"""Self-checks of the NumPy HunyuanVideo reference (tests/ref/hunyuan_ref.py) that need
no C code (TAP output).

Each check compares the reference with a second formulation: the block functions
composed by hand, a model without the text mask, the forward on the valid text rows
alone, sliced attention, explicit loops for the patch embedding and unpatchify,
hand-computed RoPE / modulation / norm values, torch's float32 schedule values and a
hand-written sampling loop."""
import contextlib
import io
import json
import math
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hunyuan_ref as hy  # noqa: E402
import safetensors_np as st  # noqa: E402

from tap import check, run  # noqa: E402


def close(a, b, tol=1e-12):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, f"shape {a.shape} != {b.shape}"
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    assert err <= tol, f"max abs diff {err:.3e} > {tol:.1e}"


def tiny(seed, **over):
    """-> (cfg, W float64) of a tiny model (not written to disk)."""
    cfg = hy.normalize_config(dict(hy.TINY_CONFIG, **over))
    return cfg, {k: v.astype(np.float64) for k, v in hy.random_weights(cfg, seed).items()}


def rand(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


def inputs(seed, cfg, shape=(2, 4, 6), L=7, V=4, t=713.5, g=6000.0):
    r = np.random.default_rng(seed)
    return {"x": r.standard_normal((cfg["in_channels"],) + shape), "t": np.array([t]),
            "text_states": r.standard_normal((L, cfg["text_states_dim"])),
            "text_mask": (np.arange(L) < V).astype(np.int64),
            "text_states_2": r.standard_normal(cfg["text_states_dim_2"]), "guidance": np.array([g])}


# ---------------------------------------------------------------- model structure


@check("the block functions composed by hand equal forward; each block's recorded input is "
       "the previous output")
def _():
    cfg, W = tiny(1)
    inp = inputs(2, cfg)
    taps = {}
    y = hy.forward_inputs(cfg, W, inp, taps=taps)
    assert y.shape == (4, 2, 4, 6) and np.abs(y).max() > 0.1 and np.all(np.isfinite(y))
    D, V = cfg["hidden_size"], 4
    vec = hy.embed_vec(cfg, W, 713.5, inp["text_states_2"], 6000.0)
    patches, grid = hy.patchify(inp["x"], (1, 2, 2))
    img = patches @ W["img_in.proj.weight"].reshape(D, -1).T + W["img_in.proj.bias"]
    txt = hy.token_refiner(cfg, W, inp["text_states"], V, 713.5)
    rope, Li = hy.rope_cos_sin(cfg, grid), len(img)
    for i in range(2):
        close(taps[f"double.{i}.in"][0], img, 0)
        img, txt = hy.double_block(cfg, W, i, img, txt, vec, rope, Li + V)
    xs = np.concatenate([img, txt])
    for i in range(4):
        close(taps[f"single.{i}.in"], xs, 0)
        xs = hy.single_block(cfg, W, i, xs, vec, rope, Li + V, Li)
    out = hy.unpatchify(hy.final_layer(cfg, W, xs[:Li], vec), grid, (1, 2, 2), 4)
    close(y, out, 0)
    close(taps["vec"], vec, 0)
    assert taps["refiner"].shape == (7, D) and taps["single.3"].shape == (Li + 7, D)


@check("every path matters: t, guidance, text_states_2, valid text rows and each block change y")
def _():
    cfg, W = tiny(3)
    inp = inputs(4, cfg)
    y = hy.forward_inputs(cfg, W, inp)
    changes = {"t": dict(inp, t=np.array([700.0])), "guidance": dict(inp, guidance=np.array([5000.0])),
               "text_states_2": dict(inp, text_states_2=inp["text_states_2"] * 0.5)}
    ts = inp["text_states"].copy()
    ts[1] += 1.0
    changes["a valid text row"] = dict(inp, text_states=ts)
    for what, alt in changes.items():
        assert np.abs(hy.forward_inputs(cfg, W, alt) - y).max() > 1e-4, what
    for name in ("double_blocks.1.txt_mlp.fc2.bias", "single_blocks.3.linear2.bias",
                 "txt_in.individual_token_refiner.blocks.1.adaLN_modulation.1.bias",
                 "single_blocks.0.q_norm.weight", "double_blocks.0.img_attn_k_norm.weight"):
        W2 = dict(W, **{name: W[name] * 1.5})
        assert np.abs(hy.forward_inputs(cfg, W2, inp) - y).max() > 1e-5, name


@check("a full-length text mask (V = L) equals use_attention_mask false on the same weights")
def _():
    cfg, W = tiny(5)
    cfg_nomask = hy.normalize_config(dict(hy.TINY_CONFIG, use_attention_mask=False))
    inp = inputs(6, cfg, L=6, V=6)
    close(hy.forward_inputs(cfg, W, inp), hy.forward_inputs(cfg_nomask, W, inp), 1e-12)


@check("padded text rows never reach y: other padded values, and the forward on the V valid rows alone")
def _():
    cfg, W = tiny(7)
    inp = inputs(8, cfg, L=9, V=3)
    y = hy.forward_inputs(cfg, W, inp)
    ts = inp["text_states"].copy()
    ts[3:] = rand(9, 6, cfg["text_states_dim"]) * 5
    close(hy.forward_inputs(cfg, W, dict(inp, text_states=ts)), y, 1e-13)
    short = dict(inp, text_states=inp["text_states"][:3], text_mask=np.ones(3, np.int64))
    close(hy.forward_inputs(cfg, W, short), y, 1e-12)
    # a float mask is the same mask; a mask that is not a prefix is refused
    close(hy.forward_inputs(cfg, W, dict(inp, text_mask=inp["text_mask"].astype(np.float32))), y, 0)
    for bad in (np.array([1, 0, 1, 0, 0, 0, 0, 0, 0]), np.zeros(9)):
        try:
            hy.forward_inputs(cfg, W, dict(inp, text_mask=bad))
        except ValueError:
            continue
        raise AssertionError(f"mask {bad} accepted")


@check("masked attention = attention over the sliced valid keys; padded refiner rows attend "
       "to token 0 only; joint segments")
def _():
    q, k, v = rand(10, 7, 2, 8), rand(11, 7, 2, 8), rand(12, 7, 2, 8)
    V = 3
    valid = np.arange(7) < V
    mask = valid[:, None] & valid[None, :]
    mask[:, 0] = True
    a = hy.attention(q, k, v, mask)
    close(a[:V], hy.attention(q[:V], k[:V], v[:V]), 1e-14)
    close(a[V:], np.broadcast_to(v[0], (4, 2, 8)), 1e-14)
    # by hand: one head, one query
    s = np.array([q[0, 1] @ k[j, 1] for j in range(V)]) / math.sqrt(8)
    p = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
    close(a[0, 1], p @ v[:V, 1], 1e-14)
    j = hy.joint_attention(q, k, v, 5)
    close(j[:5], hy.attention(q[:5], k[:5], v[:5]), 0)
    close(j[5:], hy.attention(q[5:], k[5:], v[5:]), 0)
    close(hy.joint_attention(q, k, v, 7), hy.attention(q, k, v), 0)


@check("patchify follows the Conv3d weight order; unpatchify inverts it with C outermost "
       "in the features")
def _():
    cfg, W = tiny(13, patch_size=[1, 2, 2])
    x = rand(14, 4, 2, 4, 6)
    patches, grid = hy.patchify(x, (1, 2, 2))
    assert grid == (2, 2, 3) and patches.shape == (12, 16)
    Wc = W["img_in.proj.weight"]                      # [D, C, 1, 2, 2]
    tok = patches @ Wc.reshape(64, -1).T
    for f, h, w in ((0, 0, 0), (1, 1, 2), (0, 1, 1)):  # the convolution at one position
        want = np.einsum("dcopq,copq->d", Wc, x[:, f:f + 1, 2 * h:2 * h + 2, 2 * w:2 * w + 2])
        close(tok[(f * 2 + h) * 3 + w], want, 1e-13)
    close(hy.unpatchify(patches, grid, (1, 2, 2), 4), x, 0)
    x2 = rand(15, 3, 4, 2, 4)
    p2, g2 = hy.patchify(x2, (2, 1, 2))
    close(hy.unpatchify(p2, g2, (2, 1, 2), 3), x2, 0)
    # feature ((c*pt + o)*ph + p)*pw + q of token (t, h, w) lands at [c, t*pt+o, h*ph+p, w*pw+q]
    y = np.arange(12 * 16, dtype=np.float64).reshape(12, 16)
    out = hy.unpatchify(y, grid, (1, 2, 2), 4)
    for c, t, hh, ww in ((3, 1, 3, 5), (0, 0, 1, 0), (2, 1, 0, 3)):
        tok_i = (t * 2 + hh // 2) * 3 + ww // 2
        assert out[c, t, hh, ww] == y[tok_i, (c * 2 + hh % 2) * 2 + ww % 2]
    try:
        hy.patchify(rand(1, 4, 2, 5, 6), (1, 2, 2))
    except ValueError:
        pass
    else:
        raise AssertionError("a grid not a multiple of the patch accepted")


@check("RoPE on hand-computed values: interleaved pairs, axes (t, h, w), theta 256")
def _():
    cfg = {"rope_dim_list": (2, 4, 2), "rope_theta": 256.0}
    cos, sin = hy.rope_cos_sin(cfg, (2, 3, 2))
    assert cos.shape == (12, 8)
    tok = (1 * 3 + 2) * 2 + 1                        # position (t=1, h=2, w=1)
    ang = np.array([1, 1, 2, 2, 2 / 16, 2 / 16, 1, 1], dtype=np.float64)  # 256^(-2/4) = 1/16
    close(cos[tok], np.cos(ang), 1e-15)
    close(sin[tok], np.sin(ang), 1e-15)
    x = np.array([1.0, 0.0, 0.0, 1.0, 2.0, 3.0, 1.0, 1.0]).reshape(1, 1, 8)
    out = hy.rope_apply(x, cos[tok:tok + 1], sin[tok:tok + 1])[0, 0]
    c2, s2, c8, s8 = math.cos(2), math.sin(2), math.cos(1 / 8), math.sin(1 / 8)
    want = [math.cos(1), math.sin(1), -s2, c2, 2 * c8 - 3 * s8, 2 * s8 + 3 * c8,
            math.cos(1) - math.sin(1), math.sin(1) + math.cos(1)]
    close(out, want, 1e-15)
    close(cos[0], np.ones(8), 0)                     # position (0, 0, 0): identity
    # tiny config: 4 t-pairs, 6 h-pairs, 6 w-pairs; pair 4 of token (0, 1, 0) has angle 1
    c3, _ = hy.rope_cos_sin(hy.normalize_config(hy.TINY_CONFIG), (1, 2, 1))
    close(c3[1, 6:10], [1, 1, math.cos(1.0), math.cos(1.0)], 1e-15)


@check("modulate, LayerNorm, RMSNorm, GELU-tanh, SiLU and the t sinusoid on hand-computed values")
def _():
    a = np.array
    close(hy.modulate(a([1.0, 2.0]), a([0.5, -1.0]), a([1.0, -0.5])), [2.5, 0.0], 0)
    x = np.array([1.0, 2.0, 3.0, 6.0])
    close(hy.layer_norm(x), (x - 3) / math.sqrt(3.5 + 1e-6), 1e-15)
    close(hy.layer_norm(x, np.full(4, 2.0), np.ones(4)), 2 * (x - 3) / math.sqrt(3.5 + 1e-6) + 1, 1e-15)
    close(hy.rms_norm(x, np.array([1, 2, 1, 1.0])), x * [1, 2, 1, 1] / math.sqrt(12.5 + 1e-6), 1e-15)
    g1 = 0.5 * (1 + math.tanh(math.sqrt(2 / math.pi) * 1.044715))
    close(hy.gelu_tanh(np.array([0.0, 1.0])), [0, g1], 1e-15)
    close(hy.silu(np.array([0.0, 2.0])), [0, 2 / (1 + math.exp(-2))], 1e-15)
    e = hy.timestep_embedding(0.0)
    close(e, np.r_[np.ones(128), np.zeros(128)], 0)
    e = hy.timestep_embedding(1000.0)
    close(e[[0, 128, 64, 192]], [math.cos(1000), math.sin(1000), math.cos(10), math.sin(10)], 1e-12)


@check("final layer: adaLN chunks are (shift, scale); the refiner's adaLN only gates")
def _():
    cfg, W = tiny(16)
    D = 64
    img = rand(17, 5, D)
    W2 = dict(W, **{"final_layer.adaLN_modulation.1.weight": np.zeros((2 * D, D)),
                    "final_layer.adaLN_modulation.1.bias": np.r_[np.full(D, 0.25), np.full(D, 1.0)]})
    want = hy.linear(W, "final_layer.linear", hy.layer_norm(img) * 2.0 + 0.25)
    close(hy.final_layer(cfg, W2, img, rand(18, D)), want, 1e-13)
    # zero refiner gates: the refiner is the input embedder alone
    W3 = dict(W)
    for r in range(2):
        p = f"txt_in.individual_token_refiner.blocks.{r}.adaLN_modulation.1."
        W3[p + "weight"], W3[p + "bias"] = np.zeros((2 * D, D)), np.zeros(2 * D)
    ts = rand(19, 6, 32)
    close(hy.token_refiner(cfg, W3, ts, 4, 500.0), hy.linear(W, "txt_in.input_embedder", ts), 0)


# ---------------------------------------------------------------- sampling


@check("schedule: sigma 1 -> 0, timesteps sigma*1000 in float32, shift 7 formula, "
       "torch's float32 values")
def _():
    for steps in (1, 5, 50, 129):
        sig = hy.flow_sigmas(steps, 7.0)
        ts = hy.flow_timesteps(sig)
        assert sig.dtype == np.float32 and sig.shape == (steps + 1,) and ts.shape == (steps,)
        assert sig[0] == 1.0 and sig[-1] == 0.0 and ts[0] == 1000.0 and np.all(np.diff(sig) < 0)
    lin = hy.flow_sigmas(50, 1.0)                     # shift 1: torch.linspace(1, 0, 51) itself
    bits = {8: 0x3F570A3E, 11: 0x3F47AE15, 15: 0x3F333333, 17: 0x3F28F5C3, 21: 0x3F147AE1,
            27: 0x3EEB851E, 40: 0x3E4CCCCC}          # from torch 2.x (x86-64) float32 linspace
    for i, b in bits.items():
        assert int(lin[i:i + 1].view(np.uint32)[0]) == b, (i, hex(int(lin[i:i + 1].view(np.uint32)[0])))
    sig = hy.flow_sigmas(50, 7.0)
    assert sig[25] == np.float32(0.875) and sig[49] == np.float32(0.125)  # 7*0.5/4, 7*0.02/1.12
    assert int(sig[11:12].view(np.uint32)[0]) == 0x3F7615A1
    assert float(hy.flow_timesteps(sig)[11]) == 961.2675170898438
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        hy.main(["schedule", "--steps", "4", "--shift", "1"])
    assert out.getvalue().splitlines() == ["0 1000 1", "1 750 0.75", "2 500 0.5", "3 250 0.25", "4 0 0"]


@check("generate equals a hand-written Euler loop (embedded guidance; true CFG with the "
       "negative prompt)")
def _():
    cfg, W = tiny(20, mm_single_blocks_depth=1)
    inp = inputs(21, cfg, shape=(1, 2, 4), L=5, V=3)
    neg = inputs(22, cfg, shape=(1, 2, 4), L=5, V=2)
    ctx = {k: v for k, v in inp.items() if k.startswith("text_")}
    ctx.update({k + "_neg": v for k, v in neg.items() if k.startswith("text_")})
    sig = [1.0, 0.875, 0.0]                          # steps 2, shift 7
    for g in (1.0, 2.5):
        x = inp["x"]
        for i in range(2):
            base = dict(inp, x=x, t=np.array([sig[i] * 1000]), guidance=np.array([6000.0]))
            v = hy.forward_inputs(cfg, W, base)
            if g > 1:
                vu = hy.forward_inputs(cfg, W, dict(neg, x=x, t=base["t"], guidance=base["guidance"]))
                v = vu + g * (v - vu)
            x = x + v * (sig[i + 1] - sig[i])
        close(hy.generate(cfg, W, inp["x"], ctx, 2, 7.0, 6.0, g), x, 0)
    no_neg = {k: v for k, v in ctx.items() if not k.endswith("_neg")}
    close(hy.generate(cfg, W, inp["x"], no_neg, 2, 7.0, 6.0, 1.0),
          hy.generate(cfg, W, inp["x"], ctx, 2, 7.0, 6.0, 1.0), 0)


# ---------------------------------------------------------------- checkpoints and CLI


@check("make-tiny: official names and config keys; diffusers layout, shards and BF16 load "
       "to the same weights")
def _():
    official_keys = set(hy.TINY_CONFIG)
    with tempfile.TemporaryDirectory() as d:
        cfg0, W0 = hy.make_tiny(os.path.join(d, "a"), 3)
        assert sorted(os.listdir(os.path.join(d, "a"))) == ["config.json", "model.safetensors"]
        with open(os.path.join(d, "a", "config.json")) as f:
            assert set(json.load(f)) == official_keys
        cfg, W = hy.load_model(os.path.join(d, "a"))
        assert set(W) == set(hy.tensor_shapes(cfg)) and len(W) == 136
        assert W["img_in.proj.weight"].shape == (64, 4, 1, 2, 2)
        assert "txt_in.individual_token_refiner.blocks.1.adaLN_modulation.1.bias" in W
        assert W["single_blocks.0.linear1.weight"].shape == (3 * 64 + 256, 64)
        for layout, shards in (("official", 2), ("diffusers", 1), ("diffusers", 2)):
            out = os.path.join(d, f"{layout}{shards}")
            hy.make_tiny(out, 3, shards=shards, layout=layout)
            cfg2, W2 = hy.load_model(out)
            assert cfg2["layout"] == layout and set(W2) == set(W)
            assert all(np.array_equal(W[k], W2[k]) for k in W), layout
        dif = os.path.join(d, "diffusers2", "transformer")
        assert "diffusion_pytorch_model.safetensors.index.json" in os.listdir(dif)
        with open(os.path.join(dif, "config.json")) as f:
            dc = json.load(f)
        assert dc["_class_name"] == "HunyuanVideoTransformer3DModel" and dc["attention_head_dim"] == 32
        names = set()
        for k in (1, 2):
            shard = f"diffusion_pytorch_model-0000{k}-of-00002.safetensors"
            names |= set(st.read_header(os.path.join(dif, shard))[0])
        assert names == {dn for dn, _, _ in hy.diffusers_table(cfg)} and len(names) == 184
        Wd = hy.to_diffusers(cfg, W)
        close(Wd["norm_out.linear.bias"][:64], W["final_layer.adaLN_modulation.1.bias"][64:], 0)
        close(Wd["single_transformer_blocks.2.proj_mlp.weight"],
              W["single_blocks.2.linear1.weight"][192:], 0)
        close(Wd["transformer_blocks.1.attn.add_k_proj.bias"],
              W["double_blocks.1.txt_attn_qkv.bias"][64:128], 0)
        hy.make_tiny(os.path.join(d, "b"), 3, dtype="BF16", double=1, single=2, guidance=False)
        cfg3, W3 = hy.load_model(os.path.join(d, "b"))
        assert not cfg3["guidance_embed"] and not any(k.startswith("guidance_in") for k in W3)
        assert cfg3["mm_double_blocks_depth"] == 1 and cfg3["mm_single_blocks_depth"] == 2
        for k in W3:                                  # BF16 of the same values
            close(W3[k], st.bf16_to_f32(st.f32_to_bf16(W0[k])), 0)
        assert np.abs(W3[k] - W0[k]).max() > 0


@check("the diffusers table covers every official row exactly once; names CLI lines")
def _():
    for conf in (hy.TINY_CONFIG, hy.FULL_CONFIG):
        cfg = hy.normalize_config(conf)
        shapes = hy.tensor_shapes(cfg)
        count = {k: np.zeros(s[0], int) for k, s in shapes.items()}
        for dn, on, rows in hy.diffusers_table(cfg):
            for a, b in rows or [(0, shapes[on][0])]:
                count[on][a:b] += 1
        assert all(np.all(c == 1) for c in count.values())
    cfg = hy.normalize_config(hy.FULL_CONFIG)
    n = sum(int(np.prod(s)) for s in hy.tensor_shapes(cfg).values())
    assert n == 12821012544, n                        # dit_specs.md §4.5
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        hy.main(["names", "--layout", "diffusers"])
    lines = out.getvalue().splitlines()
    assert ("single_transformer_blocks.39.proj_mlp.weight single_blocks.39.linear1.weight "
            "rows 9216:21504") in lines
    assert "norm_out.linear.weight final_layer.adaLN_modulation.1.weight rows 3072:6144,0:3072" in lines
    assert ("transformer_blocks.0.attn.norm_added_q.weight "
            "double_blocks.0.txt_attn_q_norm.weight") in lines


@check("CLI: inputs, forward, refiner, double, single, generate and compare agree with the functions")
def _():
    with tempfile.TemporaryDirectory() as d:
        m, i, o = (os.path.join(d, n) for n in ("m", "in", "out"))
        hy.main(["make-tiny", "--output-dir", m, "--seed", "6", "--double", "1", "--single", "2"])
        hy.main(["inputs", "--output", i, "--seed", "7", "--frames", "2", "--height", "4",
                 "--width", "4", "--text-len", "6", "--valid", "4", "--model-dir", m,
                 "--mask-dtype", "F32", "--negative", "--valid-neg", "2"])
        inp = st.load(i)
        assert inp["x"].shape == (4, 2, 4, 4) and inp["text_states"].shape == (6, 32)
        assert inp["text_mask"].dtype == np.float32 and inp["text_mask"].tolist() == [1, 1, 1, 1, 0, 0]
        assert inp["text_mask_neg"].tolist() == [1, 1, 0, 0, 0, 0]
        assert inp["text_states_2"].shape == (24,)
        assert float(inp["t"][0]) == 713.5 and float(inp["guidance"][0]) == 6000.0
        assert np.abs(inp["text_states"][4:]).max() > 0
        cfg, W = hy.load_model(m)
        inp = st.load(i, float64=True)
        taps = {}
        y = hy.forward_inputs(cfg, W, inp, taps=taps)
        for cmd, extra, key, want in (("forward", [], "y", y), ("refiner", [], "txt", taps["refiner"]),
                                      ("double", ["--index", "0"], "txt", taps["double.0"][1]),
                                      ("single", ["--index", "1"], "x", taps["single.1"])):
            argv = [cmd, "--model-dir", m, "--inputs", i, "--output", o, "--dtype", "F64"]
            assert hy.main(argv + extra) == 0
            close(st.load(o)[key], want, 0)
        assert hy.main(["forward", "--model-dir", m, "--inputs", i, "--output", o]) == 0
        assert st.read_header(o)[0]["y"]["dtype"] == "F32"
        with contextlib.redirect_stdout(io.StringIO()):
            assert hy.main(["compare", o, o, "--tensor-a", "y"]) == 0
        assert hy.main(["generate", "--model-dir", m, "--noise", i, "--context", i, "--output", o,
                        "--steps", "2", "--guidance", "2.0", "--dtype", "F64"]) == 0
        ctx = {k: v for k, v in inp.items() if k.startswith("text_")}
        close(st.load(o)["x"], hy.generate(cfg, W, inp["x"], ctx, 2, 7.0, 6.0, 2.0), 0)


def main():
    return run()


if __name__ == "__main__":
    sys.exit(main())
