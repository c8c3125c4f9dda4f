#!/usr/bin/python3
"""Self-checks of the NumPy Wan2.1 reference that need no C code (TAP output).

Each check recomputes something with a second, independent formulation (explicit
loops, complex numbers, hand-derived scalars) so that a mistake in wan_ref.py
shows up here rather than as a mysterious mismatch against the C runtime."""
import contextlib
import io
import json
import math
import os
import struct
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np as st  # noqa: E402
import wan_ref as ref  # noqa: E402

from tap import Skip, check, run  # noqa: E402


def close(a, b, tol=1e-12):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, f"shape {a.shape} != {b.shape}"
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    assert err <= tol, f"max abs diff {err:.3e} > {tol:.1e}"


# ---------------------------------------------------------------- (a) RoPE split


@check("rope split: head_dim 128 -> 22/21/21 pairs, 16 -> 4/2/2, matches official real sizes")
def _():
    assert ref.rope_split(128) == (22, 21, 21)
    assert ref.rope_split(16) == (4, 2, 2)
    for d in range(2, 258, 2):
        # official table: rope_params(d - 4*(d//6)), rope_params(2*(d//6)) twice (real sizes)
        real = (d - 4 * (d // 6), 2 * (d // 6), 2 * (d // 6))
        assert tuple(2 * c for c in ref.rope_split(d)) == real, d
    # frame axis of head_dim 128: real size 44 -> freq_j = 10000^(-2j/44)
    close(ref.rope_freqs(22), [10000.0 ** (-2 * j / 44) for j in range(22)])


# ---------------------------------------------------------------- (b) RoPE values


def rope_complex(x, grid):
    """Second formulation: complex multiply with per-axis polar tables (official style)."""
    L, n, d = x.shape
    cf, ch, cw = ref.rope_split(d)
    tables = []
    for pairs in (cf, ch, cw):
        m = 2 * pairs
        freqs = np.outer(np.arange(1024), 1.0 / 10000.0 ** (np.arange(0, m, 2) / m))
        tables.append(np.exp(1j * freqs))
    out = np.empty_like(x)
    F, H, Wd = grid
    for tok in range(L):
        f, h, w = tok // (H * Wd), (tok // Wd) % H, tok % Wd
        rot = np.concatenate([tables[0][f], tables[1][h], tables[2][w]])
        for head in range(n):
            z = (x[tok, head, 0::2] + 1j * x[tok, head, 1::2]) * rot
            out[tok, head, 0::2], out[tok, head, 1::2] = z.real, z.imag
    return out


@check("rope: per-pair norms preserved, position 0 identity, equals complex formulation")
def _():
    rng = np.random.default_rng(1)
    grid = (3, 4, 5)
    x = rng.standard_normal((60, 2, 16))
    y = ref.rope_apply(x, grid)
    close(x[..., 0::2] ** 2 + x[..., 1::2] ** 2, y[..., 0::2] ** 2 + y[..., 1::2] ** 2)
    close(y[0], x[0], tol=0)
    close(y, rope_complex(x, grid))
    # token (f=1, h=0, w=0): only the 4 frame pairs rotate, by angle 10000^(-2j/8)
    tok = 4 * 5
    for j in range(8):
        a = 10000.0 ** (-2 * j / 8) if j < 4 else 0.0
        c, s = math.cos(a), math.sin(a)
        re, im = x[tok, 0, 2 * j], x[tok, 0, 2 * j + 1]
        close(y[tok, 0, 2 * j:2 * j + 2], [re * c - im * s, re * s + im * c])
    # head_dim 128, grid needing the full table
    x = rng.standard_normal((2 * 3 * 4, 1, 128))
    close(ref.rope_apply(x, (2, 3, 4)), rope_complex(x, (2, 3, 4)))


# ---------------------------------------------------------------- (c) patches


def conv3d_loops(x, weight, bias):
    """Conv3d with stride = kernel written as loops; -> [D, F', H', W']."""
    D, C, pt, ph, pw = weight.shape
    F, H, Wd = x.shape[1] // pt, x.shape[2] // ph, x.shape[3] // pw
    out = np.zeros((D, F, H, Wd))
    for o in range(D):
        for f in range(F):
            for h in range(H):
                for w in range(Wd):
                    acc = bias[o]
                    for c in range(C):
                        for a in range(pt):
                            for b in range(ph):
                                for e in range(pw):
                                    acc += weight[o, c, a, b, e] * x[c, f * pt + a, h * ph + b, w * pw + e]
                    out[o, f, h, w] = acc
    return out


@check("patchify GEMM equals Conv3d loops; unpatchify inverts patchify with (pt,ph,pw,C) order")
def _():
    rng = np.random.default_rng(2)
    for patch, shape in (((1, 2, 2), (3, 2, 4, 6)), ((2, 2, 2), (2, 4, 4, 2)), ((1, 2, 2), (3, 2, 5, 7))):
        C = shape[0]
        x = rng.standard_normal(shape)
        weight = rng.standard_normal((5, C) + patch)
        bias = rng.standard_normal(5)
        patches, grid = ref.patchify(x, patch)
        tokens = patches @ weight.reshape(5, -1).T + bias
        close(tokens.T.reshape((5,) + grid), conv3d_loops(x, weight, bias))
        # head output ordered (pt, ph, pw, C): reorder (C, pt, ph, pw) features
        feats = patches.reshape((-1, C) + patch).transpose(0, 2, 3, 4, 1).reshape(patches.shape[0], -1)
        back = ref.unpatchify(feats, grid, patch, C)
        cut = x[:, :grid[0] * patch[0], :grid[1] * patch[1], :grid[2] * patch[2]]
        close(back, cut, tol=0)
    # explicit element check of the output order
    y = np.arange(1 * 2 * 3 * 4 * 4, dtype=np.float64).reshape(6, 16)  # grid (1,2,3), patch (1,2,2), C 4
    out = ref.unpatchify(y, (1, 2, 3), (1, 2, 2), 4)
    for tok in range(6):
        h, w = tok // 3, tok % 3
        for q in range(2):
            for r in range(2):
                for c in range(4):
                    assert out[c, 0, 2 * h + q, 2 * w + r] == y[tok, (q * 2 + r) * 4 + c]


# ---------------------------------------------------------------- (d) attention


@check("attention equals a naive per-head loop (including query chunking)")
def _():
    rng = np.random.default_rng(3)
    q = rng.standard_normal((7, 3, 8)) * 2
    k = rng.standard_normal((5, 3, 8)) * 2
    v = rng.standard_normal((5, 3, 8))
    naive = np.zeros((7, 3, 8))
    for h in range(3):
        for i in range(7):
            s = [sum(q[i, h, c] * k[j, h, c] for c in range(8)) / math.sqrt(8) for j in range(5)]
            m = max(s)
            p = [math.exp(z - m) for z in s]
            tot = sum(p)
            for j in range(5):
                naive[i, h] += p[j] / tot * v[j, h]
    close(ref.attention(q, k, v), naive)
    close(ref.attention(q, k, v, chunk=2), naive)


# ---------------------------------------------------------------- (e) norms


@check("layer_norm (with and without affine), rms_norm, gelu_tanh, silu, sinusoid equal formulas")
def _():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 6)) * 3 + 1
    wt, b = rng.standard_normal(6), rng.standard_normal(6)
    eps = 1e-6
    for r in range(4):
        row = list(x[r])
        mu = sum(row) / 6
        var = sum((z - mu) ** 2 for z in row) / 6
        want = [(z - mu) / math.sqrt(var + eps) for z in row]
        close(ref.layer_norm(x, eps)[r], want)
        close(ref.layer_norm(x, eps, wt, b)[r], [want[i] * wt[i] + b[i] for i in range(6)])
        ms = sum(z * z for z in row) / 6
        close(ref.rms_norm(x, wt, eps)[r], [row[i] / math.sqrt(ms + eps) * wt[i] for i in range(6)])
    for z in (-3.0, -0.5, 0.0, 0.7, 4.0):
        g = 0.5 * z * (1 + math.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3)))
        close(ref.gelu_tanh(np.array(z)), g)
        close(ref.silu(np.array(z)), z / (1 + math.exp(-z)))
    s = ref.sinusoidal_embedding_1d(8, 999.0)
    close(s, [math.cos(999 * 10000 ** (-k / 4)) for k in range(4)] +
          [math.sin(999 * 10000 ** (-k / 4)) for k in range(4)])


# ---------------------------------------------------------------- (f) tiny forward


def tiny_inputs(cfg, seed=5, shape=(2, 4, 6)):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((cfg["in_dim"],) + shape)
    context = rng.standard_normal((5, cfg["text_dim"]))  # shorter than text_len: padded
    return x, 637.0, context


@check("make-tiny checkpoint loads; forward gives finite output of the input shape")
def _():
    with tempfile.TemporaryDirectory() as d:
        assert ref.main(["make-tiny", "--output-dir", d, "--seed", "7"]) == 0
        with open(os.path.join(d, "config.json")) as f:
            raw = json.load(f)
        for key in ("dim", "eps", "ffn_dim", "freq_dim", "in_dim", "out_dim", "num_heads",
                    "num_layers", "text_len", "model_type"):
            assert key in raw, key
        cfg, W = ref.load_model(d)
        assert cfg["head_dim"] == 16 and cfg["text_dim"] == 24
        assert set(W) == set(ref.tensor_shapes(cfg))
        assert all(W[n].shape == s for n, s in ref.tensor_shapes(cfg).items())
        assert len(W) == 12 + 27 * 2 + 3  # 27 tensors per block
        x, t, context = tiny_inputs(cfg)
        y = ref.forward(cfg, W, x, t, context)
        assert y.shape == (4, 2, 4, 6), y.shape
        assert np.all(np.isfinite(y)) and 0.01 < np.abs(y).max() < 100
        # the CLI path gives the same numbers
        st.save(os.path.join(d, "in.safetensors"), {"x": x.astype(np.float32), "t": np.array([t]),
                                                   "context": context})
        xin = st.load(os.path.join(d, "in.safetensors"), float64=True)["x"]
        assert ref.main(["forward", "--model-dir", d, "--inputs", os.path.join(d, "in.safetensors"),
                         "--output", os.path.join(d, "y.safetensors")]) == 0
        close(st.load(os.path.join(d, "y.safetensors"))["y"], ref.forward(cfg, W, xin, t, context), 0)


# ---------------------------------------------------------------- (g) sharding


@check("forward is invariant to sharding the checkpoint (single file vs 2 shards + index)")
def _():
    with tempfile.TemporaryDirectory() as d:
        one, two = os.path.join(d, "one"), os.path.join(d, "two")
        ref.make_tiny(one, seed=11)
        ref.make_tiny(two, seed=11, shards=2)
        files = sorted(os.listdir(two))
        assert ref.INDEX_NAME in files and len([f for f in files if f.endswith(".safetensors")]) == 2
        with open(os.path.join(two, ref.INDEX_NAME)) as f:
            assert len(set(json.load(f)["weight_map"].values())) == 2
        cfg1, W1 = ref.load_model(one)
        cfg2, W2 = ref.load_model(two)
        assert set(W1) == set(W2) and all(np.array_equal(W1[n], W2[n]) for n in W1)
        x, t, context = tiny_inputs(cfg1)
        close(ref.forward(cfg1, W1, x, t, context), ref.forward(cfg2, W2, x, t, context), 0)


# ---------------------------------------------------------------- (h) hand-computed


def degenerate_model():
    """dim 4, 1 head, 1 layer, in/out 1 channel, patch (1,1,1), text_len 2, text_dim 1.
    Most weights are identities so the forward reduces to short scalar formulas."""
    cfg = ref.normalize_config({
        "dim": 4, "eps": 1e-6, "ffn_dim": 4, "freq_dim": 4, "in_dim": 1, "out_dim": 1,
        "num_heads": 1, "num_layers": 1, "text_len": 2, "text_dim": 1, "patch_size": [1, 1, 1]})
    rng = np.random.default_rng(9)
    I4, z4 = np.eye(4), np.zeros(4)
    W = {"patch_embedding.weight": np.array([1.0, -1.0, 0.5, 2.0]).reshape(4, 1, 1, 1, 1),
         "patch_embedding.bias": np.array([0.0, 0.0, 0.1, 0.0]),
         "time_embedding.0.weight": I4, "time_embedding.0.bias": z4,
         "time_embedding.2.weight": I4, "time_embedding.2.bias": np.array([0.0, 0.1, 0.0, -0.1]),
         # e0 row r = 0.1*(r+1)*silu(e) + bias row r
         "time_projection.1.weight": np.concatenate([0.1 * (r + 1) * I4 for r in range(6)]),
         "time_projection.1.bias": np.linspace(-0.3, 0.4, 24),
         "text_embedding.0.weight": np.array([[1.0], [0.5], [-1.0], [2.0]]), "text_embedding.0.bias": z4,
         "text_embedding.2.weight": I4, "text_embedding.2.bias": z4,
         "head.head.weight": np.array([[1.0, 2.0, 3.0, 4.0]]), "head.head.bias": np.array([0.5]),
         "head.modulation": np.array([[[0.1, 0.0, -0.1, 0.2], [0.3, -0.2, 0.0, 0.1]]])}
    p = "blocks.0."
    W[p + "modulation"] = np.linspace(0.2, -0.25, 24).reshape(1, 6, 4)
    # self-attention q/k are arbitrary: with one token the softmax weight is 1
    for m in "qk":
        W[p + f"self_attn.{m}.weight"] = rng.standard_normal((4, 4))
        W[p + f"self_attn.{m}.bias"] = rng.standard_normal(4)
    W[p + "self_attn.v.weight"], W[p + "self_attn.v.bias"] = I4, np.array([0.1, 0.2, 0.0, -0.3])
    W[p + "self_attn.o.weight"], W[p + "self_attn.o.bias"] = I4, np.array([0.0, 0.0, 0.05, 0.0])
    W[p + "self_attn.norm_q.weight"] = W[p + "self_attn.norm_k.weight"] = np.ones(4)
    # cross-attention: q = RMSNorm(norm3(x)), k = RMSNorm(ctx); the padded row has k = 0
    for m in "qkvo":
        W[p + f"cross_attn.{m}.weight"], W[p + f"cross_attn.{m}.bias"] = I4, z4
    W[p + "cross_attn.v.bias"] = np.array([0.0, 0.3, 0.0, 0.1])
    W[p + "cross_attn.norm_q.weight"] = np.array([1.0, 2.0, 1.0, 0.5])
    W[p + "cross_attn.norm_k.weight"] = np.ones(4)
    W[p + "norm3.weight"], W[p + "norm3.bias"] = np.array([1.0, 2.0, 0.5, 1.0]), np.array([0.0, -1.0, 0.0, 0.5])
    W[p + "ffn.0.weight"], W[p + "ffn.0.bias"] = I4, z4
    W[p + "ffn.2.weight"], W[p + "ffn.2.bias"] = I4, z4
    return cfg, W


def degenerate_by_hand(W, x0, t, c):
    """The forward of degenerate_model written out with scalar arithmetic."""
    eps = 1e-6

    def ln(v):
        mu = sum(v) / len(v)
        var = sum((z - mu) ** 2 for z in v) / len(v)
        return [(z - mu) / math.sqrt(var + eps) for z in v]

    def rms(v, w):
        r = math.sqrt(sum(z * z for z in v) / len(v) + eps)
        return [z / r * wi for z, wi in zip(v, w)]

    def gelu(z):
        return 0.5 * z * (1 + math.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3)))

    def silu(z):
        return z / (1 + math.exp(-z))

    def row(name, r=None):
        a = W[name][0] if r is None else W[name][0][r]
        return [float(z) for z in a]

    # time: sinusoid (cos(t), cos(t/100), sin(t), sin(t/100)); two identity Linears
    sinus = [math.cos(t), math.cos(t / 100), math.sin(t), math.sin(t / 100)]
    e = [silu(z) + b for z, b in zip(sinus, [0.0, 0.1, 0.0, -0.1])]
    tb = [float(z) for z in W["time_projection.1.bias"]]
    mod = [[0.1 * (r + 1) * silu(e[j]) + tb[4 * r + j] + W["blocks.0.modulation"][0][r][j]
            for j in range(4)] for r in range(6)]
    sh1, sc1, g1, sh2, sc2, g2 = mod
    x = [x0 * 1.0, -x0, 0.5 * x0 + 0.1, 2.0 * x0]
    # self-attention with one token: output = v = h + bias_v, then o bias
    h = [n * (1 + s) + b for n, s, b in zip(ln(x), sc1, sh1)]
    o = [hi + bv + bo for hi, bv, bo in zip(h, [0.1, 0.2, 0.0, -0.3], [0.0, 0.0, 0.05, 0.0])]
    x = [xi + oi * gi for xi, oi, gi in zip(x, o, g1)]
    # cross-attention: context (c) and one zero-padded row
    ctx0 = [gelu(c * w) for w in (1.0, 0.5, -1.0, 2.0)]
    hq = [n * w + b for n, w, b in zip(ln(x), [1.0, 2.0, 0.5, 1.0], [0.0, -1.0, 0.0, 0.5])]
    q, k0 = rms(hq, [1.0, 2.0, 1.0, 0.5]), rms(ctx0, [1.0] * 4)
    p0 = 1 / (1 + math.exp(-sum(a * b for a, b in zip(q, k0)) / 2))  # scores (q.k0/2, 0)
    bv = [0.0, 0.3, 0.0, 0.1]
    x = [xi + p0 * (ci + b) + (1 - p0) * b for xi, ci, b in zip(x, ctx0, bv)]
    # ffn with identity Linears
    h = [n * (1 + s) + b for n, s, b in zip(ln(x), sc2, sh2)]
    x = [xi + gelu(hi) * gi for xi, hi, gi in zip(x, h, g2)]
    # head: shift/scale from head.modulation + e (not e0)
    shift = [m + ei for m, ei in zip(row("head.modulation", 0), e)]
    scale = [m + ei for m, ei in zip(row("head.modulation", 1), e)]
    h = [n * (1 + s) + b for n, s, b in zip(ln(x), scale, shift)]
    return sum(w * hi for w, hi in zip((1.0, 2.0, 3.0, 4.0), h)) + 0.5


@check("hand-computed 1-token, 1-head degenerate model matches forward")
def _():
    cfg, W = degenerate_model()
    x0, t, c = 0.75, 100.0, 1.5
    y = degenerate_by_hand(W, x0, t, c)

    def run():
        return ref.forward(cfg, W, np.full((1, 1, 1, 1), x0), t, np.array([[c]]))

    close(run(), np.full((1, 1, 1, 1), y), tol=1e-12)
    # every hand-modelled path is live: perturbing it moves the output (a uniform
    # shift would vanish in the next LayerNorm, hence the ramp)
    for name in ("blocks.0.norm3.bias", "blocks.0.cross_attn.v.bias", "head.modulation",
                 "blocks.0.modulation", "time_projection.1.bias", "patch_embedding.bias",
                 "blocks.0.cross_attn.norm_q.weight", "text_embedding.0.weight"):
        saved = W[name]
        W[name] = saved + 0.1 * np.linspace(-1, 1, saved.size).reshape(saved.shape)
        moved = abs(run()[0, 0, 0, 0] - y)
        W[name] = saved
        assert moved > 1e-8, f"{name} does not reach the output"
    assert abs(run()[0, 0, 0, 0] - y) < 1e-12


# ---------------------------------------------------------------- extras


@check("safetensors: F32/F64/F16/BF16 round trip, header layout, hand-made BF16 bytes")
def _():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "a.safetensors")
        a = np.arange(6, dtype=np.float32).reshape(2, 3) / 3
        b = np.linspace(-1, 1, 5)
        st.save(path, {"a": a, "b": b}, metadata={"k": "v"})
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
        assert n % 8 == 0
        back = st.load(path)
        assert back["a"].dtype == np.float32 and back["b"].dtype == np.float64
        close(back["a"], a, 0)
        close(back["b"], b, 0)
        assert st.load_metadata(path) == {"k": "v"}
        for dt, tol in (("F16", 1e-3), ("BF16", 1e-2)):
            st.save(path, {"a": a}, dtype=dt)
            close(st.load(path, float64=True)["a"], a, tol)
        # BF16 0x3FC0 = 1.5, 0xC000 = -2.0, written by hand
        head = json.dumps({"x": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}).encode()
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(head)) + head + struct.pack("<HH", 0x3FC0, 0xC000))
        close(st.load(path, float64=True)["x"], [1.5, -2.0], 0)


@check("block/embed CLIs agree with the functions; compare exits 0/1")
def _():
    with tempfile.TemporaryDirectory() as d:
        cfg, W = ref.make_tiny(d, seed=3)
        cfg, W = ref.load_model(d)
        x, t, context = tiny_inputs(cfg, shape=(1, 4, 4))
        inp = os.path.join(d, "in.safetensors")
        st.save(inp, {"x": x, "t": np.array([t]), "context": context})
        emb = os.path.join(d, "emb.safetensors")
        assert ref.main(["embed", "--model-dir", d, "--inputs", inp, "--output", emb]) == 0
        E = st.load(emb)
        tokens, e, e0, ctx, grid = ref.embed(cfg, W, x, t, context)
        close(E["tokens"], tokens, 0)
        close(E["e0"], e0, 0)
        assert tuple(E["grid"].astype(int)) == grid == (1, 2, 2)
        blk_in = os.path.join(d, "blk.safetensors")
        st.save(blk_in, {"x_tokens": E["tokens"], "e0": E["e0"], "ctx": E["ctx"], "grid": E["grid"]})
        out = os.path.join(d, "out.safetensors")
        assert ref.main(["block", "--model-dir", d, "--inputs", blk_in, "--output", out, "--index", "1"]) == 0
        close(st.load(out)["x_out"], ref.block(cfg, W, 1, tokens, e0, ctx, grid), 0)
        other = os.path.join(d, "p.safetensors")

        def compare(*extra):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = ref.main(["compare", out, other, "--tensor-a", "x_out", *extra])
            return rc, buf.getvalue()

        st.save(other, {"y": st.load(out)["x_out"]})
        assert compare("--tensor-b", "y", "--tol", "0")[0] == 0
        st.save(other, {"x_out": st.load(out)["x_out"] + 1e-3})
        rc, text = compare()
        assert rc == 1 and "1.000000e-03" in text, text
        st.save(other, {"x_out": np.zeros(3)})
        rc, text = compare()
        assert rc == 1 and "shape" in text, text


@check("text context: zero-padded rows embed to Linear2(GELU(b1)) + b2, long contexts are cut")
def _():
    cfg = ref.normalize_config(ref.TINY_CONFIG)
    W = {k: v.astype(np.float64) for k, v in ref.random_weights(cfg, 4).items()}
    rng = np.random.default_rng(6)
    c = rng.standard_normal((3, cfg["text_dim"]))
    ctx = ref.embed_text(cfg, W, c)
    assert ctx.shape == (8, 32)
    pad = W["text_embedding.2.weight"] @ ref.gelu_tanh(W["text_embedding.0.bias"]) + W["text_embedding.2.bias"]
    close(ctx[3:], np.tile(pad, (5, 1)))
    assert np.abs(pad).max() > 1e-3
    long = rng.standard_normal((11, cfg["text_dim"]))
    close(ref.embed_text(cfg, W, long), ref.embed_text(cfg, W, long[:8]), 0)


@check("generate: Euler CFG equals a hand-written loop; guidance 1 ignores context_null")
def _():
    try:
        import sampler_ref
    except ImportError:
        raise Skip("tests/ref/sampler_ref.py not present")
    cfg = ref.normalize_config(dict(ref.TINY_CONFIG, num_layers=1))
    W = {k: v.astype(np.float64) for k, v in ref.random_weights(cfg, 8).items()}
    rng = np.random.default_rng(10)
    noise = rng.standard_normal((4, 1, 4, 4))
    c, cn = rng.standard_normal((5, 24)), rng.standard_normal((2, 24))
    sigmas, timesteps = sampler_ref.sampling_schedule(4, 3.0)
    x = noise.copy()
    for i in range(4):
        vc = ref.forward(cfg, W, x, float(timesteps[i]), c)
        vu = ref.forward(cfg, W, x, float(timesteps[i]), cn)
        x = x + (sigmas[i + 1] - sigmas[i]) * (vu + 4.5 * (vc - vu))
    close(ref.generate(cfg, W, noise, c, cn, 4, 3.0, 4.5, "euler"), x, 1e-12)
    for solver in ("euler", "unipc"):
        a = ref.generate(cfg, W, noise, c, cn, 3, 5.0, 1.0, solver)
        b = ref.generate(cfg, W, noise, c, np.zeros_like(c), 3, 5.0, 1.0, solver)
        close(a, b, 1e-12)
        assert np.all(np.isfinite(a))


def main():
    return run()


if __name__ == "__main__":
    sys.exit(main())
