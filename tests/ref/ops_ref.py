#!/usr/bin/python3
"""Float64 NumPy references of single CPU kernels, written from their contracts in
codelets/cpu/dit_cpu.h (and, for RoPE, from the official Wan rope_params/rope_apply
of wan/modules/model.py), for tests/test_ops_ref.sh:

  ops_ref.py make DIR < CASES   one input file DIR/NAME.in per case line
                                "NAME OP key=value ...", printing "NAME OP" lines
  ops_ref.py check IN OUT [--tol T]
                                the reference of IN against tests/ops_dump's OUT:
                                max |out - ref| / max |ref|, exit 1 above T

The ops (the tensors and __metadata__ parameters of an input file, as tests/ops_dump
reads them; matrices [rows, cols], "?" optional):
  attention      q [lq, n*d], k, v [lk, n*d]; heads, lk_valid -> o
  rmsnorm_group  x [rows, dim], weight? [group or dim]; group, eps -> x
  layernorm      x [rows, dim], weight? bias? shift? scale? [dim], table? (flat);
                 eps, mod_ld, mod_rows, shift_off, scale_off -> y
  residual       x, y [rows, dim], gate? [dim], table?; mod_ld, mod_rows, gate_off -> x
  rope           x [f*h*w, n*d]; f, h, w, heads, theta, axes ("wan" or "A,B,C") -> x
Every op also takes pad (the driver's extra floats per row; no effect on results).
"""
import argparse
import os
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np as st  # noqa: E402

OUTPUT = {"attention": "o", "rmsnorm_group": "x", "layernorm": "y", "residual": "x",
          "rope": "x"}


# ----------------------------------------------------------------------------
# References (float64 throughout)


def attention(q, k, v, heads, lk_valid, scale=None):
    """o = softmax(q k^T * scale) v per head over the first lk_valid keys only (the
    keys of a padded sequence past its length do not exist). q [lq, n*d], k and v
    [lk, n*d] -> o [lq, n*d]; scale 1/sqrt(d) by default."""
    lq, width = q.shape
    d = width // heads
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    qh = q.reshape(lq, heads, d)
    kh = k[:lk_valid].reshape(lk_valid, heads, d)
    vh = v[:lk_valid].reshape(lk_valid, heads, d)
    s = np.einsum("qnd,knd->nqk", qh, kh) * scale  # [n, lq, lk_valid]
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("nqk,knd->qnd", p, vh).reshape(lq, width)


def rms_norm(x, eps, weight=None):
    """x * rsqrt(mean(x^2) + eps) [* weight] over the last axis."""
    y = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
    return y if weight is None else y * weight


def rmsnorm_group(x, group, eps, weight=None):
    """RMSNorm of each run of group consecutive features of a row, weight [group]
    shared by every run; a last, shorter run of n features takes weight[:n]. group <= 0:
    the whole row (weight [dim])."""
    dim = x.shape[1]
    if group <= 0:
        group = dim
    y = np.empty_like(x)
    for g0 in range(0, dim, group):
        n = min(group, dim - g0)
        y[:, g0:g0 + n] = rms_norm(x[:, g0:g0 + n], eps, None if weight is None else weight[:n])
    return y


def table_rows(table, rows, dim, mod_ld, mod_rows, off):
    """The second modulation term of every row: row r of x takes the dim floats at off
    of table row r // mod_rows (rows mod_ld floats apart in the flat table); mod_rows
    <= 0 or mod_ld == 0: table row 0 for every row. -> [rows, dim]."""
    table = table.reshape(-1)
    out = np.empty((rows, dim))
    for r in range(rows):
        t = (r // mod_rows) * mod_ld if mod_rows > 0 and mod_ld != 0 else 0
        out[r] = table[t + off:t + off + dim]
    return out


def layernorm(x, eps, weight=None, bias=None, shift=None, scale=None):
    """LayerNorm over the last axis (biased variance, eps inside the sqrt), then
    * weight + bias, then the adaLN modulation * (1 + scale) + shift; shift and scale
    [dim] or per row [rows, dim] (Wan: norm(x) * (1 + e[1]) + e[0])."""
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    if shift is not None:
        y = y * (1.0 + scale) + shift
    return y


def residual(x, y, gate=None):
    """x + y * gate; gate [dim] or per row [rows, dim]; no gate: x + y (Wan:
    x + y * e[2])."""
    return x + y if gate is None else x + y * gate


def rope_params(positions, m, theta):
    """Wan's rope_params for an axis of real size m: angle of pair i (i < m/2) at
    position p = p * theta^(-2i/m) -> [len(positions), m/2]."""
    freqs = 1.0 / np.power(theta, np.arange(0, m, 2, dtype=np.float64) / m)
    return np.outer(np.asarray(positions, dtype=np.float64), freqs)


def wan_axes(head_dim):
    """The pairs of each axis in the official model: real sizes d - 4 (d // 6) (frame),
    2 (d // 6) (row, column)."""
    return ((head_dim - 4 * (head_dim // 6)) // 2, head_dim // 6, head_dim // 6)


def rope(x, f, h, w, heads, theta, axes):
    """3D RoPE of x [f*h*w, n*d] (tokens in f-major order): each interleaved pair
    (x[2j], x[2j+1]) of every head, as the complex x[2j] + i x[2j+1], times
    exp(i angle_j); pairs [0, a0) take the frame's angles, the next a1 the row's, the
    next a2 the column's (rope_params of real size 2 a); pairs past a0 + a1 + a2 keep
    angle 0."""
    rows, width = x.shape
    d = width // heads
    fi, hi, wi = (g.reshape(-1) for g in np.meshgrid(np.arange(f), np.arange(h), np.arange(w),
                                                      indexing="ij"))
    ang = np.zeros((rows, d // 2))
    ang[:, :sum(axes)] = np.concatenate([rope_params(fi, 2 * axes[0], theta),
                                         rope_params(hi, 2 * axes[1], theta),
                                         rope_params(wi, 2 * axes[2], theta)], axis=1)
    xc = x.reshape(rows, heads, d // 2, 2)
    z = (xc[..., 0] + 1j * xc[..., 1]) * np.exp(1j * ang)[:, None, :]  # torch.polar
    return np.stack([z.real, z.imag], axis=-1).reshape(rows, width)


# ----------------------------------------------------------------------------
# Cases


def _int(p, key, default=None):
    return int(p[key]) if key in p else default


def make_inputs(op, p, rng):
    """The tensors of one case of op with generation parameters p (strings)."""
    nrm = rng.standard_normal
    f32 = lambda a: np.asarray(a, dtype=np.float32)  # noqa: E731
    t = {}
    if op == "attention":
        lq, lk, nv = _int(p, "lq"), _int(p, "lk"), _int(p, "lk_valid")
        width = _int(p, "heads") * _int(p, "hd")
        t["q"] = f32(2.0 * nrm((lq, width)))
        t["k"], t["v"] = f32(nrm((lk, width))), f32(nrm((lk, width)))
        t["k"][nv:] = np.nan  # keys past lk_valid must not be read
        t["v"][nv:] = np.nan
    elif op == "rmsnorm_group":
        rows, dim, group = _int(p, "rows"), _int(p, "dim"), _int(p, "group")
        t["x"] = f32(3.0 * nrm((rows, dim)) + 0.5)
        if _int(p, "weight", 1):
            t["weight"] = f32(rng.uniform(-1.5, 1.5, group if group > 0 else dim))
    elif op in ("layernorm", "residual"):
        rows, dim = _int(p, "rows"), _int(p, "dim")
        t["x"] = f32(1.5 * nrm((rows, dim)) + 0.25)
        if op == "residual":
            t["y"] = f32(nrm((rows, dim)))
        vecs = {"layernorm": (("weight", "affine"), ("bias", "affine"), ("shift", "mod"),
                              ("scale", "mod")),
                "residual": (("gate", "gate"),)}[op]
        for name, flag in vecs:
            if _int(p, flag, 0):
                t[name] = f32(0.5 * nrm(dim))
        if "mod_ld" in p:
            mod_ld, mod_rows = _int(p, "mod_ld"), _int(p, "mod_rows")
            offs = [_int(p, k) for k in ("shift_off", "scale_off", "gate_off") if k in p]
            tab_rows = _int(p, "tab_rows", 3)
            if mod_rows > 0 and mod_ld != 0:
                tab_rows = -(-rows // mod_rows)
            n = max(tab_rows * mod_ld, (tab_rows - 1) * mod_ld + max(offs) + dim)
            t["table"] = f32(0.5 * nrm(n))
    elif op == "rope":
        rows = _int(p, "f") * _int(p, "h") * _int(p, "w")
        t["x"] = f32(nrm((rows, _int(p, "heads") * _int(p, "hd"))))
    else:
        raise ValueError(f"unknown op {op}")
    return t


def reference(op, t, p):
    """The float64 result of op on tensors t (float64) with parameters p (strings)."""
    if op == "attention":
        return attention(t["q"], t["k"], t["v"], _int(p, "heads"), _int(p, "lk_valid"))
    if op == "rmsnorm_group":
        return rmsnorm_group(t["x"], _int(p, "group"), float(p["eps"]), t.get("weight"))
    rows, dim = t["x"].shape
    tab = lambda g, key: g + table_rows(t["table"], rows, dim, _int(p, "mod_ld"),  # noqa: E731
                                        _int(p, "mod_rows"), _int(p, key))
    if op == "layernorm":
        shift, scale = t.get("shift"), t.get("scale")
        if "table" in t:
            shift, scale = tab(shift, "shift_off"), tab(scale, "scale_off")
        return layernorm(t["x"], float(p["eps"]), t.get("weight"), t.get("bias"), shift, scale)
    if op == "residual":
        gate = t.get("gate")
        if "table" in t:
            gate = tab(gate, "gate_off")
        return residual(t["x"], t["y"], gate)
    if op == "rope":
        d = t["x"].shape[1] // _int(p, "heads")
        axes = wan_axes(d) if p["axes"] == "wan" else tuple(int(a) for a in p["axes"].split(","))
        return rope(t["x"], _int(p, "f"), _int(p, "h"), _int(p, "w"), _int(p, "heads"),
                    float(p["theta"]), axes)
    raise ValueError(f"unknown op {op}")


def cmd_make(args):
    for line in sys.stdin:
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        name, op, params = words[0], words[1], dict(w.split("=", 1) for w in words[2:])
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        st.save(os.path.join(args.dir, name + ".in"), make_inputs(op, params, rng),
                metadata=dict(params, op=op))
        print(name, op)
    return 0


def cmd_check(args):
    p = st.load_metadata(args.input)
    op = p["op"]
    ref = reference(op, st.load(args.input, float64=True), p)
    out = st.load(args.output, float64=True)[OUTPUT[op]]
    if out.shape != ref.shape:
        print(f"shape {list(out.shape)}, want {list(ref.shape)}")
        return 1
    rmax = np.abs(ref).max()
    err = np.inf if np.isnan(out).any() else np.abs(out - ref).max() / (rmax if rmax else 1.0)
    print(f"max rel err {err:.3g} (tol {args.tol:g})")
    return 0 if err <= args.tol else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make", help="write the input file of each case line of stdin")
    mk.add_argument("dir")
    ck = sub.add_parser("check", help="compare ops_dump's output with the reference")
    ck.add_argument("input")
    ck.add_argument("output")
    ck.add_argument("--tol", type=float, default=1e-5)
    args = ap.parse_args()
    return cmd_make(args) if args.cmd == "make" else cmd_check(args)


if __name__ == "__main__":
    sys.exit(main())
