#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention at the shape of perf/bench_cuda_ops's (a):
the reference TFLOP/s for dit_cuda_attention (perf/gpu-check.sh prints ours / SDPA).

bf16 q, k, v of [1, heads, L, hd] (default 40 heads, L 32 760, hd 128: Wan2.1-14B at
480P), no mask, no dropout; FLOPs 4 L Lk hd heads, as bench_cuda_ops counts them. It
prints the torch.backends.cuda flags, then times the default choice and each backend
forced alone (flash, memory-efficient, cuDNN; one that refuses the shape is reported
as such): the backend whose time matches the default's is the one it picked. Median of
--reps runs after --warmup, CUDA events. Lines starting with "result " are for scripts.
Exits 77 without a CUDA device.

    python3 perf/bench_sdpa.py [--tokens 32760 --heads 40 --hd 128 --reps 5]
"""
import argparse
import statistics
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=32760)
    ap.add_argument("--lk", type=int, default=0, help="key tokens (default: --tokens)")
    ap.add_argument("--heads", type=int, default=40)
    ap.add_argument("--hd", type=int, default=128)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    a = ap.parse_args()

    import torch
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        print("no CUDA device (torch %s)" % torch.__version__)
        return 77
    lk = a.lk or a.tokens
    dev = torch.device("cuda")
    dt = getattr(torch, a.dtype)
    print("torch %s, CUDA %s, cuDNN %s, %s" % (torch.__version__, torch.version.cuda,
                                              torch.backends.cudnn.version(),
                                              torch.cuda.get_device_name(0)))
    b = torch.backends.cuda
    flags = [("flash_sdp_enabled", b.flash_sdp_enabled()),
             ("mem_efficient_sdp_enabled", b.mem_efficient_sdp_enabled()),
             ("math_sdp_enabled", b.math_sdp_enabled())]
    if hasattr(b, "cudnn_sdp_enabled"):
        flags.append(("cudnn_sdp_enabled", b.cudnn_sdp_enabled()))
    print("torch.backends.cuda: " + ", ".join("%s=%s" % f for f in flags))

    g = torch.Generator(device=dev).manual_seed(0)
    q = torch.randn(1, a.heads, a.tokens, a.hd, device=dev, dtype=dt, generator=g)
    k = torch.randn(1, a.heads, lk, a.hd, device=dev, dtype=dt, generator=g)
    v = torch.randn(1, a.heads, lk, a.hd, device=dev, dtype=dt, generator=g)
    flops = 4.0 * a.tokens * lk * a.hd * a.heads
    print("shape [1, %d, %d, %d] x Lk %d, %s, %.2f TFLOP per call; median of %d after %d warm-up"
          % (a.heads, a.tokens, a.hd, lk, a.dtype, flops / 1e12, a.reps, a.warmup))

    def timed():
        for _ in range(a.warmup):
            F.scaled_dot_product_attention(q, k, v)
        torch.cuda.synchronize()
        t = []
        for _ in range(a.reps):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            F.scaled_dot_product_attention(q, k, v)
            e1.record()
            e1.synchronize()
            t.append(e0.elapsed_time(e1))
        return statistics.median(t), min(t)

    results = {}
    med, best = timed()
    results["default"] = med
    print("  %-16s median %9.3f ms  %7.1f TFLOP/s  (best %.3f ms)"
          % ("default", med, flops / med / 1e9, best))
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backends = [("flash", "FLASH_ATTENTION"), ("efficient", "EFFICIENT_ATTENTION"),
                    ("cudnn", "CUDNN_ATTENTION")]
        for name, attr in backends:
            if not hasattr(SDPBackend, attr):
                continue
            try:
                with sdpa_kernel(getattr(SDPBackend, attr)):
                    m, bst = timed()
            except RuntimeError as e:
                print("  %-16s refused: %s" % (name, str(e).splitlines()[0][:100]))
                continue
            results[name] = m
            print("  %-16s median %9.3f ms  %7.1f TFLOP/s  (best %.3f ms)"
                  % (name, m, flops / m / 1e9, bst))
    except ImportError:
        print("  (torch.nn.attention.sdpa_kernel missing: backends not timed apart)")
    forced = {n: t for n, t in results.items() if n != "default"}
    if forced:
        picked = min(forced, key=lambda n: abs(forced[n] - results["default"]))
        fastest = min(forced, key=forced.get)
        print("default matches %s (within %.1f%%); fastest: %s"
              % (picked, 100 * abs(forced[picked] / results["default"] - 1), fastest))
        print("result sdpa_backend %s" % picked)
        print("result sdpa_best_backend %s" % fastest)
        print("result sdpa_best_tflops %.2f" % (flops / forced[fastest] / 1e9))
    print("result sdpa_ms %.4f" % results["default"])
    print("result sdpa_tflops %.2f" % (flops / results["default"] / 1e9))
    return 0


if __name__ == "__main__":
    sys.exit(main())
