#!/usr/bin/env python3
"""The PyTorch peer of a ditstar Wan2.1 block on the same GPU: one DiT block at 14B
dimensions written from the official semantics (WanAttentionBlock) in PyTorch bf16
with scaled_dot_product_attention, timed resident and streamed, so that
perf/gpu-check.sh prints ditstar / PyTorch per block and per 40-block step.

The block (dit_specs.md, Wan2.1): six modulation vectors e = modulation + t_emb; x is
the fp32 residual stream [L, D];
    y = self_attn(LN(x) * (1 + e1) + e0)      q, k, v, o Linear with bias; RMSNorm over D
                                              on q and k; RoPE; SDPA over L tokens
    x = x + y * e2
    x = x + cross_attn(LN_affine(x), context) q from x, k/v from 512 text tokens, RMSNorm
    y = ffn(LN(x) * (1 + e4) + e3)            Linear D->F, GELU (tanh), Linear F->D
    x = x + y * e5
LayerNorm eps 1e-6, the norms and modulation in fp32, the Linears and attention in
bf16 (what the official code runs under bf16 autocast). RoPE is applied as the real
rotation of pairs with a precomputed table (the same arithmetic as the official
complex product over the three axes; positions are not what is measured).

Resident: the weights of --blocks blocks on the GPU, run in turn. Streamed: the weights
in pinned host memory, each block's copied to one of two GPU buffers on a second CUDA
stream while the previous block computes (what diffusers' group offloading with
use_stream does). Median seconds per block over --reps rounds of --blocks blocks,
after one warm-up round. Lines "result ..." are for scripts. Exits 77 without a GPU.

    python3 perf/peer_wan_block.py [--tokens 32760 --dim 5120 --ffn 13824 --heads 40]
"""
import argparse
import statistics
import sys


def make_block(torch, D, F, dev, dtype, gen):
    """The block's weights: a dict of tensors (bf16 matrices, fp32 vectors)."""
    def mat(n, k):  # made where gen lives (the GPU: seconds, not minutes, at 14B dims)
        return (torch.randn(n, k, generator=gen, device=gen.device) * (1.0 / k ** 0.5)).to(
            dtype).to(dev)

    def vec(n, s=0.02):
        return (torch.randn(n, generator=gen, device=gen.device) * s).to(dev)

    w = {}
    for p in ("sa", "ca"):
        for n in ("q", "k", "v", "o"):
            w[p + n] = mat(D, D)
            w[p + n + "b"] = vec(D).to(dtype)
        w[p + "nq"] = (1 + vec(D)).float()
        w[p + "nk"] = (1 + vec(D)).float()
    w["n3w"], w["n3b"] = (1 + vec(D)).float(), vec(D).float()
    w["f0"], w["f0b"] = mat(F, D), vec(F).to(dtype)
    w["f2"], w["f2b"] = mat(D, F), vec(D).to(dtype)
    w["mod"] = vec(6 * D).float().view(6, D)
    return w


def block_forward(torch, Fn, x, ctx, e, w, rope, heads):
    """x [L, D] fp32 -> x [L, D] fp32."""
    L, D = x.shape
    hd = D // heads
    e = (w["mod"] + e).float()

    def rms(t, g):
        tf = t.float()
        return (tf * torch.rsqrt(tf.pow(2).mean(-1, keepdim=True) + 1e-6) * g).to(t.dtype)

    def rot(t):  # [L, heads, hd] pairs (2i, 2i+1) rotated by the table
        c, s = rope
        t2 = t.float().view(t.shape[0], heads, hd // 2, 2)
        a, b = t2[..., 0], t2[..., 1]
        return torch.stack((a * c - b * s, a * s + b * c), -1).flatten(2).to(t.dtype)

    def attn(q, k, v):
        q = q.view(q.shape[0], heads, hd).transpose(0, 1).unsqueeze(0)
        k = k.view(k.shape[0], heads, hd).transpose(0, 1).unsqueeze(0)
        v = v.view(v.shape[0], heads, hd).transpose(0, 1).unsqueeze(0)
        o = Fn.scaled_dot_product_attention(q, k, v)
        return o.squeeze(0).transpose(0, 1).reshape(-1, D)

    bf = w["saq"].dtype
    h = (Fn.layer_norm(x, (D,), eps=1e-6) * (1 + e[1]) + e[0]).to(bf)
    q = rms(Fn.linear(h, w["saq"], w["saqb"]), w["sanq"])
    k = rms(Fn.linear(h, w["sak"], w["sakb"]), w["sank"])
    v = Fn.linear(h, w["sav"], w["savb"])
    q = rot(q.view(L, heads, hd)).view(L, D)
    k = rot(k.view(L, heads, hd)).view(L, D)
    y = Fn.linear(attn(q, k, v), w["sao"], w["saob"])
    x = x + y.float() * e[2]
    h = Fn.layer_norm(x, (D,), w["n3w"], w["n3b"], eps=1e-6).to(bf)
    q = rms(Fn.linear(h, w["caq"], w["caqb"]), w["canq"])
    k = rms(Fn.linear(ctx, w["cak"], w["cakb"]), w["cank"])
    v = Fn.linear(ctx, w["cav"], w["cavb"])
    x = x + Fn.linear(attn(q, k, v), w["cao"], w["caob"]).float()
    h = (Fn.layer_norm(x, (D,), eps=1e-6) * (1 + e[4]) + e[3]).to(bf)
    y = Fn.linear(Fn.gelu(Fn.linear(h, w["f0"], w["f0b"]), approximate="tanh"), w["f2"],
                  w["f2b"])
    return x + y.float() * e[5]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=32760)
    ap.add_argument("--text", type=int, default=512)
    ap.add_argument("--dim", type=int, default=5120)
    ap.add_argument("--ffn", type=int, default=13824)
    ap.add_argument("--heads", type=int, default=40)
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--model-blocks", type=int, default=40, help="blocks per pass (step figure)")
    ap.add_argument("--passes", type=int, default=2, help="guidance passes per step")
    a = ap.parse_args()

    import torch
    import torch.nn.functional as Fn

    if not torch.cuda.is_available():
        print("no CUDA device (torch %s)" % torch.__version__)
        return 77
    dev, bf = torch.device("cuda"), torch.bfloat16
    D, F, L, heads = a.dim, a.ffn, a.tokens, a.heads
    hd = D // heads
    gen = torch.Generator(device=dev).manual_seed(0)
    print("torch %s, %s, cuDNN %s; L %d, D %d, F %d, %d heads; SDPA backends: flash %s, "
          "cudnn %s" % (torch.__version__, torch.cuda.get_device_name(0),
                        torch.backends.cudnn.version(), L, D, F, heads,
                        torch.backends.cuda.flash_sdp_enabled(),
                        torch.backends.cuda.cudnn_sdp_enabled()))
    x0 = torch.randn(L, D, generator=gen, device=dev)
    ctx = torch.randn(a.text, D, generator=gen, device=dev).to(bf)
    e = torch.randn(6, D, generator=gen, device=dev) * 0.1
    ang = torch.arange(L, dtype=torch.float32)[:, None] * torch.pow(
        10000.0, -torch.arange(0, hd, 2, dtype=torch.float32) / hd)[None, :]
    rope = (ang.cos()[:, None, :].to(dev), ang.sin()[:, None, :].to(dev))
    blocks = [make_block(torch, D, F, dev, bf, gen) for _ in range(a.blocks)]
    nbytes = sum(t.numel() * t.element_size() for t in blocks[0].values())

    def timed(fn):
        out = []
        for r in range(a.reps + 1):  # round 0: warm-up
            torch.cuda.synchronize()
            s, t = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            t.record()
            torch.cuda.synchronize()
            if r:
                out.append(s.elapsed_time(t) / 1000.0 / a.blocks)
        return statistics.median(out)

    with torch.no_grad():
        def resident():
            x = x0
            for w in blocks:
                x = block_forward(torch, Fn, x, ctx, e, w, rope, heads)
        t_res = timed(resident)

        # streamed: host copies in pinned memory, two device buffers, a copy stream
        host = [{k: v.cpu().pin_memory() for k, v in w.items()} for w in blocks]
        dbuf = [{k: torch.empty_like(v) for k, v in blocks[0].items()} for _ in range(2)]
        del blocks
        torch.cuda.empty_cache()
        copy = torch.cuda.Stream()
        done = [torch.cuda.Event() for _ in range(2)]
        free = [torch.cuda.Event() for _ in range(2)]

        def fetch(i):
            buf = dbuf[i % 2]
            with torch.cuda.stream(copy):
                copy.wait_event(free[i % 2])
                for k, v in host[i].items():
                    buf[k].copy_(v, non_blocking=True)
                done[i % 2].record(copy)

        def streamed():
            for ev in free:
                ev.record()
            x = x0
            fetch(0)
            for i in range(a.blocks):
                if i + 1 < a.blocks:
                    fetch(i + 1)
                torch.cuda.current_stream().wait_event(done[i % 2])
                x = block_forward(torch, Fn, x, ctx, e, dbuf[i % 2], rope, heads)
                free[i % 2].record()
        t_str = timed(streamed)

    step = a.model_blocks * a.passes
    print("resident: %.4f s/block; streamed (pinned host, copy stream, 2 buffers): %.4f s/block "
          "(%.3fx); %.0f MB of weights per block" % (t_res, t_str, t_str / t_res, nbytes / 1e6))
    print("result torch_block_resident_s %.5f" % t_res)
    print("result torch_block_streamed_s %.5f" % t_str)
    print("result torch_step_resident_s %.3f" % (t_res * step))
    print("result torch_step_streamed_s %.3f" % (t_str * step))
    return 0


if __name__ == "__main__":
    sys.exit(main())
