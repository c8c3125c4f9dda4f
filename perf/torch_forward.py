#!/usr/bin/env python3
"""ditstar's one-forward time side by side with PyTorch on the CPU: the official
Wan2.1 model code (WanModel) and diffusers' WanTransformer3DModel, at the Wan2.1-1.3B
dims with a few blocks. Run it through perf/compare-torch, which makes the venv.

    perf/torch_forward.py [--tokens 1170,4000] [--threads 1,2] [--reps 3]
        [--blocks 4] [--wan-src DIR] [--skip-official] [--skip-diffusers]
        [--no-split] [--keep DIR] [--wait-idle SECONDS] [--ditstar PATH]

What it does, in one process (the torch models stay loaded; ditstar is run as its
command, one process per forward):

1. One random checkpoint in the official layout (tests/ref/wan_ref.random_weights,
   written with NumPy), the same tensors renamed for diffusers (tests/ref/to_diffusers).
   dim 1536, ffn 8960, 12 heads, freq 256, text_len 512, text_dim 4096, in/out 16,
   patch 1x2x2, --blocks blocks; fp32 everywhere. Per token count one inputs file:
   x [16, F, H, W] N(0,1), t [937], context [512, 4096] N(0,1) (exactly text_len
   rows, so no side pads or cuts). Token grids (F', H', W' after the 1x2x2 patch):
   1170 = 5 x 13 x 18 (latent 16x5x26x36), 4000 = 10 x 20 x 20 (latent 16x10x40x40);
   other counts get the most cube-like factorisation.
2. For each token count and thread count: one warm-up forward on each side (the
   outputs are compared: max |a - b| / max |official|), then --reps interleaved
   rounds "ditstar, official, diffusers". torch: torch.set_num_threads(N), under
   torch.no_grad(), perf_counter around the model call. ditstar: `ditstar forward
   --ncpus N --stats-json`, its total_seconds (task submission to the last task's
   end: the forward itself, weights already loaded; time and text embeddings are in
   both sides' figures) and the process's wall time (load, StarPU start and exit
   included). N = 1 is one StarPU worker against one torch thread. Medians.
3. The per-op split (unless --no-split), one more forward per side: torch.profiler
   self CPU time per op, grouped as gemm (linear, conv), attention (SDPA and the
   layout copies around it), norm+rope (layer/RMS norms, RoPE) and elementwise
   (the rest: modulation, residuals, GELU, copies); ditstar's --trace trace.json,
   task durations summed per codelet, grouped the same way (linear has the bias and
   GELU fused, layernorm the modulation, qk_norm the RoPE; head, time, text and patch
   embeddings count as gemm). With 2 workers ditstar's sums are busy time, which
   can exceed its wall time.
4. The attention alone: torch's scaled_dot_product_attention on q, k, v
   [1, 12, L, 128] fp32 at each thread count, and perf/bench_cpu_ops (one-thread
   dit_cpu attention) when that program is built, else 'not built'.

The official code (wan/modules/model.py and attention.py only; never copied into
this tree) is read from --wan-src: a checkout, or a bare git repository whose HEAD
is extracted with `git archive` into a temporary folder. Its flash_attention needs
the flash_attn package and CUDA; in this process only, the name flash_attention in
its model module is bound to a function that does the same math with torch's
scaled_dot_product_attention: softmax(q k^T / sqrt(d)) v per head, batch of one,
every key valid (k_lens = the full length, no window), in the inputs' dtype. (The
original also casts q, k, v to bf16, which flash_attn needs; here all sides are fp32.)

Other processes' CPU use is measured (/proc/stat busy time less this process's and
its children's) and printed per row as the cores they kept busy on average, beside
the load average; --wait-idle waits for them to leave before the run and before
each round, up to that many seconds each time.

Lines starting with "result " carry the figures for scripts.
"""
import argparse
import contextlib
import importlib
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "tests", "ref"))

import numpy as np  # noqa: E402

import safetensors_np as st  # noqa: E402
import to_diffusers  # noqa: E402
import wan_ref  # noqa: E402

PROG = "compare-torch"
CONFIG = {
    "model_type": "t2v", "dim": 1536, "ffn_dim": 8960, "freq_dim": 256, "in_dim": 16,
    "out_dim": 16, "num_heads": 12, "num_layers": 4, "text_len": 512, "text_dim": 4096,
    "patch_size": [1, 2, 2], "window_size": [-1, -1], "qk_norm": True,
    "cross_attn_norm": True, "eps": 1e-06,
}
GRIDS = {1170: (5, 13, 18), 4000: (10, 20, 20)}
TIMESTEP = 937.0
SEED = 0
GROUPS = ("gemm", "attention", "norm+rope", "elementwise")
DITSTAR_GROUP = {"linear": "gemm", "head": "gemm", "time_embed": "gemm", "text_embed": "gemm",
                 "patch_embed": "gemm", "attention": "attention", "layernorm": "norm+rope",
                 "qk_norm": "norm+rope", "residual": "elementwise"}


class Fail(Exception):
    """A one-line error: printed as 'compare-torch: ...', exit status 1."""


def log(msg=""):
    print(msg, flush=True)


def token_grid(n):
    """Tokens -> (F', H', W') after the patch: the table, else the most cube-like."""
    if n in GRIDS:
        return GRIDS[n]
    best = None
    for f in range(1, int(round(n ** (1 / 3))) + 2):
        if n % f:
            continue
        for h in range(f, int(math.isqrt(n // f)) + 1):
            if (n // f) % h == 0:
                w = n // f // h
                if best is None or w / f < best[2] / best[0]:
                    best = (f, h, w)
    return best


def parse_list(text, what):
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise Fail(f"{what} {text!r}: want a comma-separated list of positive integers")
    if not vals or min(vals) < 1:
        raise Fail(f"{what} {text!r}: want a comma-separated list of positive integers")
    return vals


# ----------------------------------------------------------------------------
# Checkpoint and inputs


def make_checkpoint(work, blocks):
    """Official-layout and diffusers-layout checkpoints of the same random weights;
    reused from a --keep folder when its config matches."""
    cfg = dict(CONFIG, num_layers=blocks)
    off, dif = os.path.join(work, "official"), os.path.join(work, "diffusers")
    stamp = os.path.join(work, "checkpoint.json")
    want = {"config": cfg, "seed": SEED}
    if os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f) == want:
                log(f"checkpoint: reusing {off} and {dif}")
                return off, dif
    log(f"checkpoint: writing {blocks} blocks of random fp32 weights (seed {SEED}) ...")
    W = wan_ref.random_weights(wan_ref.normalize_config(cfg), SEED)
    wan_ref.save_checkpoint(off, cfg, W)
    W = {to_diffusers.rename(k): v for k, v in W.items()}
    wan_ref.save_checkpoint(dif, to_diffusers.config(cfg), W)
    del W
    with open(stamp, "w") as f:
        json.dump(want, f)
    return off, dif


def make_inputs(work, tokens):
    f, h, w = token_grid(tokens)
    pt, ph, pw = CONFIG["patch_size"]
    shape = (CONFIG["in_dim"], f * pt, h * ph, w * pw)
    path = os.path.join(work, f"inputs-{tokens}.safetensors")
    rng = np.random.default_rng(1000 + tokens)
    arrays = {"x": rng.standard_normal(shape).astype(np.float32),
              "t": np.array([TIMESTEP], dtype=np.float32),
              "context": rng.standard_normal((CONFIG["text_len"], CONFIG["text_dim"])).astype(np.float32)}
    st.save(path, arrays)
    return path, arrays


# ----------------------------------------------------------------------------
# The official Wan2.1 code


def is_checkout(src):
    return os.path.isfile(os.path.join(src, "wan", "modules", "model.py"))


def check_wan_src(src):
    if not os.path.isdir(src):
        raise Fail(f"--wan-src {src}: no such folder")
    if not is_checkout(src) and not os.path.isfile(os.path.join(src, "HEAD")):
        raise Fail(f"--wan-src {src}: neither a checkout with wan/modules/model.py nor a git repository")


def official_source(src, tmp):
    """--wan-src (a checkout or a bare git repository) -> a folder holding wan/modules."""
    if is_checkout(src):
        return src
    dest = os.path.join(tmp, "wan-src")
    os.makedirs(dest)
    files = ["wan/modules/model.py", "wan/modules/attention.py"]
    arch = subprocess.run(["git", "--git-dir", src, "archive", "HEAD"] + files,
                          capture_output=True)
    if arch.returncode:
        raise Fail(f"--wan-src {src}: git archive failed: {arch.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", dest], input=arch.stdout, check=True)
    return dest


def sdpa_flash_attention(q, k, v, q_lens=None, k_lens=None, dropout_p=0.0, softmax_scale=None,
                         q_scale=None, causal=False, window_size=(-1, -1), deterministic=False,
                         dtype=None, version=None):
    """wan.modules.attention.flash_attention's math on torch's SDPA: q [B, Lq, N, d],
    k, v [B, Lk, N, d] -> [B, Lq, N, d]. Only what the T2V forward uses at batch 1:
    every query and key valid, no window, no dropout, not causal."""
    import torch
    import torch.nn.functional as F

    lq, lk = q.size(1), k.size(1)
    if (q_lens is not None and bool((q_lens != lq).any())) or \
       (k_lens is not None and bool((k_lens != lk).any())):
        raise NotImplementedError("sdpa_flash_attention: padded sequences")
    if tuple(window_size) != (-1, -1) or dropout_p or causal:
        raise NotImplementedError("sdpa_flash_attention: window, dropout or causal")
    with torch.profiler.record_function("split::attention"):
        if q_scale is not None:
            q = q * q_scale
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                             v.transpose(1, 2), scale=softmax_scale)
        return out.transpose(1, 2).contiguous().type(q.dtype)


def load_official(src, ckpt, tmp):
    import torch
    from safetensors.torch import load_file

    root = official_source(src, tmp)
    pkg_name = "wan_official_modules"
    pkg = types.ModuleType(pkg_name)
    pkg.__path__ = [os.path.join(root, "wan", "modules")]
    sys.modules[pkg_name] = pkg  # the package without its __init__ (T5, VAE, ...)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model_mod = importlib.import_module(pkg_name + ".model")
    model_mod.flash_attention = sdpa_flash_attention
    # its torch.cuda.amp.autocast(...) blocks warn on every call without CUDA
    warnings.filterwarnings("ignore", message=r".*torch\.cuda\.amp\.autocast.*")
    warnings.filterwarnings("ignore", message=r"CUDA is not available.*")
    with open(os.path.join(ckpt, "config.json")) as f:
        cfg = json.load(f)
    kwargs = {k: cfg[k] for k in ("model_type", "text_len", "in_dim", "dim", "ffn_dim", "freq_dim",
                                  "text_dim", "out_dim", "num_heads", "num_layers", "qk_norm",
                                  "cross_attn_norm", "eps")}
    kwargs["patch_size"] = tuple(cfg["patch_size"])
    kwargs["window_size"] = tuple(cfg["window_size"])
    model = model_mod.WanModel(**kwargs)
    missing, unexpected = model.load_state_dict(
        load_file(os.path.join(ckpt, wan_ref.SINGLE_NAME)), strict=False)
    if missing or unexpected:
        raise Fail(f"official WanModel: missing {missing[:3]}, unexpected {unexpected[:3]}")
    model.eval()

    def forward(x, t, ctx):
        return model([x], t=t, context=[ctx], seq_len=x.shape[1] * x.shape[2] * x.shape[3]
                     // math.prod(cfg["patch_size"]))[0]

    norm_classes = (model_mod.WanRMSNorm, torch.nn.LayerNorm)
    rev = subprocess.run(["git", "--git-dir", src, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip() \
        if not is_checkout(src) else "checkout"
    return forward, model, norm_classes, rev


def load_diffusers(ckpt):
    import torch
    from diffusers import WanTransformer3DModel
    from safetensors.torch import load_file

    # from_config + load_state_dict: from_pretrained would want accelerate for fp32
    # modules; the checkpoint is fp32 throughout anyway
    model = WanTransformer3DModel.from_config(WanTransformer3DModel.load_config(ckpt))
    missing, unexpected = model.load_state_dict(
        load_file(os.path.join(ckpt, wan_ref.SINGLE_NAME)), strict=False)
    if missing or unexpected:
        raise Fail(f"diffusers WanTransformer3DModel: missing {missing[:3]}, unexpected {unexpected[:3]}")
    model.float().eval()

    def forward(x, t, ctx):
        return model(hidden_states=x[None], timestep=t, encoder_hidden_states=ctx[None],
                     return_dict=False)[0][0]

    return forward, model, (torch.nn.LayerNorm, torch.nn.RMSNorm)


# ----------------------------------------------------------------------------
# Timing


def time_torch(forward, inputs, threads):
    import torch

    torch.set_num_threads(threads)
    with torch.no_grad():
        t0 = time.perf_counter()
        y = forward(*inputs)
        return time.perf_counter() - t0, y


def run_ditstar(exe, ckpt, inputs, threads, out_dir, tag, trace=False):
    """One `ditstar forward`: -> (forward seconds from its stats, wall seconds, stats)."""
    out = os.path.join(out_dir, f"ditstar-{tag}.safetensors")
    stats = os.path.join(out_dir, f"ditstar-{tag}.json")
    cmd = [exe, "forward", "--model-dir", ckpt, "--inputs", inputs, "--output", out,
           "--ncpus", str(threads), "--stats-json", stats]
    if trace:
        tdir = os.path.join(out_dir, f"trace-{tag}")
        shutil.rmtree(tdir, ignore_errors=True)
        cmd += ["--trace", tdir]
    env = dict(os.environ, STARPU_SILENT=os.environ.get("STARPU_SILENT", "1"))
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if p.returncode:
        last = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise Fail(f"ditstar forward failed (exit {p.returncode}): {last}")
    with open(stats) as f:
        s = json.load(f)
    return s["total_seconds"], wall, s, out


def max_rel(a, ref):
    a, ref = np.asarray(a, np.float64), np.asarray(ref, np.float64)
    return float(np.abs(a - ref).max() / max(np.abs(ref).max(), 1e-30))


# ----------------------------------------------------------------------------
# Per-op split


def torch_split(forward, model, norm_classes, inputs, threads):
    """Self CPU seconds per group over one profiled forward."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    wrapped = []
    for m in model.modules():
        if isinstance(m, norm_classes):
            def fwd(*a, _f=m.forward, **k):
                with record_function("split::norm+rope"):
                    return _f(*a, **k)
            m.forward = fwd
            wrapped.append(m)
    torch.set_num_threads(threads)
    try:
        with stderr_silenced(), torch.no_grad(), \
                profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
            t0 = time.perf_counter()
            forward(*inputs)
            wall = time.perf_counter() - t0
    finally:
        for m in wrapped:
            del m.forward
    groups = dict.fromkeys(GROUPS, 0.0)
    for e in prof.events():
        self_us = e.self_cpu_time_total
        if self_us <= 0 or e.name.startswith("split::"):
            continue
        groups[torch_group(e)] += self_us * 1e-6
    return groups, wall


@contextlib.contextmanager
def stderr_silenced():
    """File descriptor 2 to /dev/null: the profiler's C++ side logs its start, stop and
    a failed GPU count there."""
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def torch_group(e):
    p = e
    while p is not None:  # the innermost label wins
        if p.name.startswith("split::"):
            return p.name[len("split::"):]
        p = p.cpu_parent
    if any("rope_apply" in s or "apply_rotary_emb" in s for s in (e.stack or [])):
        return "norm+rope"
    n = e.name
    if re.search(r"addmm|\bmm\b|::mm$|bmm|matmul|linear|conv|mkldnn", n):
        return "gemm"
    if "attention" in n:
        return "attention"
    if re.search(r"layer_norm|rms_norm", n):
        return "norm+rope"
    return "elementwise"


def ditstar_split(trace_dir):
    with open(os.path.join(trace_dir, "trace.json")) as f:
        events = json.load(f)["traceEvents"]
    groups = dict.fromkeys(GROUPS, 0.0)
    per_codelet = {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "task":
            continue
        c = e.get("args", {}).get("codelet", e["name"])
        per_codelet[c] = per_codelet.get(c, 0.0) + e["dur"] * 1e-6
        groups[DITSTAR_GROUP.get(c, "elementwise")] += e["dur"] * 1e-6
    return groups, per_codelet


# ----------------------------------------------------------------------------
# Attention alone


def sdpa_alone(tokens, threads, reps):
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, CONFIG["num_heads"], tokens, 128, generator=g) for _ in range(3))
    with torch.no_grad():
        F.scaled_dot_product_attention(q, k, v)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            F.scaled_dot_product_attention(q, k, v)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_cpu_ops(tokens):
    """perf/bench_cpu_ops's one-thread attention -> (GFLOP/s or None, its line or why not)."""
    exe = os.path.join(HERE, "bench_cpu_ops")
    if not os.access(exe, os.X_OK):
        return None, "not built"
    cmd = [exe, "--lq", str(tokens), "--lk", str(tokens), "--heads", str(CONFIG["num_heads"]),
           "--hd", "128", "--only", "attention"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        return None, f"failed (exit {p.returncode})"
    lines = p.stdout.splitlines()
    # the ISA ditstar runs ("default avx512" in the header), then its column of the
    # attention line: "| avx512   82.37 ms  102.1 GFLOP/s"
    isa = next((m.group(1) for m in (re.search(r"default (\w+)", ln) for ln in lines) if m),
               None)
    for ln in lines:
        if "attention" not in ln or not isa:
            continue
        m = re.search(r"\|\s*%s\s+[\d.]+ ms\s+([\d.]+) GFLOP/s" % re.escape(isa), ln)
        if m:
            return float(m.group(1)), f"{isa}: " + ln.strip()
    return None, "output not understood: " + (lines[-1] if lines else "(empty)")


# ----------------------------------------------------------------------------
# Machine description


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_counters():
    """-> (wall seconds, CPU seconds all CPUs were busy, CPU seconds this process and
    its finished children used): other processes' use is the busy minus ours."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    busy = (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")  # less idle and iowait
    t = os.times()
    return time.perf_counter(), busy, t.user + t.system + t.children_user + t.children_system


def others_load(c0, c1):
    """Cores other processes kept busy on average between two cpu_counters()."""
    wall, busy, own = (b - a for a, b in zip(c0, c1))
    return max(busy - own, 0.0) / wall if wall > 0 else 0.0


def cpu_summary():
    model, flags = "?", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model == "?":
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    wanted = ["avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
              "avx512_fp16", "amx_tile", "amx_bf16"]
    return model, " ".join(f for f in wanted if f in flags) or "none of the AVX2/AVX-512/AMX"


def ditstar_blas(exe):
    """OpenBLAS library and the core it runs (after ditstar's own core choice)."""
    lib = "?"
    so = os.path.join(TOP, ".libs", "libditstar.so")
    if os.path.exists(so):
        out = subprocess.run(["ldd", so], capture_output=True, text=True).stdout
        m = re.search(r"(\S*blas\S*) => (\S+)", out)
        if m:
            lib = os.path.realpath(m.group(2))
    p = subprocess.run([exe, "info", "--list"], capture_output=True, text=True,
                       env=dict(os.environ, OPENBLAS_VERBOSE="2"))
    cores = re.findall(r"Core: (\S+)", p.stdout + p.stderr)
    return lib, cores[-1] if cores else "?"


def torch_blas():
    import torch

    cfg = torch.__config__.show()
    mkl = re.search(r"Math Kernel Library Version (\S+)", cfg)
    dnn = re.search(r"MKL-DNN (v[\d.]+)", cfg) or re.search(r"oneDNN (v[\d.]+)", cfg)
    blas = re.search(r"BLAS_INFO=(\w+)", cfg)
    parts = [f"BLAS_INFO={blas.group(1) if blas else '?'}"]
    if mkl:
        parts.append(f"MKL {mkl.group(1)}")
    if dnn:
        parts.append(f"oneDNN {dnn.group(1)}")
    parts.append(f"CPU capability {torch.backends.cpu.get_cpu_capability()}")
    return ", ".join(parts)


# ----------------------------------------------------------------------------
# Main


def fmt(v, nd=3):
    return "-" if v is None else f"{v:.{nd}f}"


def ratio(a, b):
    return None if a is None or b is None else a / b


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", default="1170,4000", help="token counts (default 1170,4000)")
    ap.add_argument("--threads", default="1,2",
                    help="threads per side: torch threads = ditstar --ncpus (default 1,2)")
    ap.add_argument("--reps", type=int, default=3, help="timed rounds per size (default 3)")
    ap.add_argument("--blocks", type=int, default=4, help="transformer blocks (default 4)")
    ap.add_argument("--wan-src", help="official Wan2.1 code: a checkout or a bare git repository")
    ap.add_argument("--skip-official", action="store_true")
    ap.add_argument("--skip-diffusers", action="store_true")
    ap.add_argument("--no-split", action="store_true", help="no per-op split")
    ap.add_argument("--keep", help="work folder kept (and checkpoints reused) instead of a temporary one")
    ap.add_argument("--wait-idle", type=float, default=0, metavar="SECONDS",
                    help="before the run (10 s windows) and before each round (3 s windows), "
                         "wait up to SECONDS for other processes to leave the CPUs (under "
                         "0.2 cores busy); default 0: no wait")
    ap.add_argument("--ditstar", default=os.path.join(TOP, "ditstar"), help="the ditstar command")
    a = ap.parse_args(argv)

    tokens_list = parse_list(a.tokens, "--tokens")
    threads_list = parse_list(a.threads, "--threads")
    if a.reps < 1 or a.blocks < 1:
        raise Fail("--reps and --blocks must be at least 1")
    if not os.access(a.ditstar, os.X_OK):
        raise Fail(f"{a.ditstar}: not built (run make)")
    if not a.skip_official and not a.wan_src:
        raise Fail("--wan-src DIR is needed for the official code (or --skip-official)")
    if a.wan_src and not a.skip_official:
        check_wan_src(a.wan_src)
    if a.wait_idle < 0:
        raise Fail("--wait-idle must be at least 0")

    import torch

    tmp = tempfile.mkdtemp(prefix="compare-torch.")
    work = os.path.abspath(a.keep) if a.keep else tmp
    os.makedirs(work, exist_ok=True)
    try:
        run(a, torch, tokens_list, threads_list, work, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def wait_idle(limit, window=10.0):
    """Waits until other processes keep under 0.2 cores busy over window s, or limit s."""
    start = time.perf_counter()
    while True:
        c0 = cpu_counters()
        time.sleep(window)
        busy = others_load(c0, cpu_counters())
        waited = time.perf_counter() - start
        if busy < 0.2:
            if waited > window + 1:
                log(f"  (waited {waited:.0f} s for idle CPUs)")
            return
        if waited >= limit:
            log(f"warning: other processes still keep {busy:.2f} cores busy after "
                f"{waited:.0f} s; measuring anyway")
            return


def run(a, torch, tokens_list, threads_list, work, tmp):
    if a.wait_idle:
        wait_idle(a.wait_idle)
    load_before, counters = loadavg(), cpu_counters()
    cpu_model, cpu_flags = cpu_summary()
    blas_lib, blas_core = ditstar_blas(a.ditstar)
    log(f"machine: {cpu_model}, {os.cpu_count()} CPUs, flags: {cpu_flags}")
    log(f"python {platform.python_version()}, torch {torch.__version__}: {torch_blas()}")
    log(f"ditstar: {a.ditstar}, OpenBLAS {blas_lib}, core {blas_core}, "
        "one BLAS thread per StarPU worker")
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS", "STARPU_SCHED"):
        if var in os.environ:
            log(f"environment: {var}={os.environ[var]}")
    log(f"load average before: {load_before}")
    log(f"dims: dim {CONFIG['dim']}, ffn {CONFIG['ffn_dim']}, {CONFIG['num_heads']} heads, "
        f"{a.blocks} blocks, text_len {CONFIG['text_len']}, fp32; warm-up 1, median of {a.reps}")
    log()

    off_ckpt, dif_ckpt = make_checkpoint(work, a.blocks)
    sides = ["ditstar"]
    models = {}
    if not a.skip_official:
        fwd, model, norms, rev = load_official(a.wan_src, off_ckpt, tmp)
        models["official"] = (fwd, model, norms)
        sides.append("official")
        log(f"official: WanModel from {a.wan_src} at {rev}, flash_attention routed to "
            "torch SDPA (fp32)")
    if not a.skip_diffusers:
        import diffusers
        fwd, model, norms = load_diffusers(dif_ckpt)
        models["diffusers"] = (fwd, model, norms)
        sides.append("diffusers")
        log(f"diffusers {diffusers.__version__}: WanTransformer3DModel, native SDPA attention")
    log()

    rows, splits, accuracy = [], [], []
    for tokens in tokens_list:
        grid = token_grid(tokens)
        in_path, arrays = make_inputs(work, tokens)
        x = torch.from_numpy(arrays["x"])
        t = torch.from_numpy(arrays["t"])
        ctx = torch.from_numpy(arrays["context"])
        log(f"== {tokens} tokens: grid {grid[0]}x{grid[1]}x{grid[2]}, latent "
            f"{list(arrays['x'].shape)}")
        for threads in threads_list:
            tag = f"{tokens}-{threads}"
            c0 = cpu_counters()
            # warm-up, and the outputs compared
            d_s, d_wall, _, d_out = run_ditstar(a.ditstar, off_ckpt, in_path, threads, work, tag)
            y_d = st.load(d_out)["y"]
            outs = {}
            for side, (fwd, _, _) in models.items():
                _, y = time_torch(fwd, (x, t, ctx), threads)
                outs[side] = y.float().numpy()
            acc = {"tokens": tokens, "threads": threads}
            if "official" in outs:
                acc["ditstar_vs_official"] = max_rel(y_d, outs["official"])
                if "diffusers" in outs:
                    acc["diffusers_vs_official"] = max_rel(outs["diffusers"], outs["official"])
            elif "diffusers" in outs:
                acc["ditstar_vs_diffusers"] = max_rel(y_d, outs["diffusers"])
            accuracy.append(acc)
            log(f"  {threads} thread(s): warm-up done; max rel diff " + ", ".join(
                f"{k.replace('_vs_', ' vs ')} {v:.2e}" for k, v in acc.items() if "_vs_" in k))

            times = {s: [] for s in sides}
            walls = []
            for rep in range(a.reps):
                if a.wait_idle:
                    wait_idle(a.wait_idle, window=3.0)
                d_s, d_wall, _, _ = run_ditstar(a.ditstar, off_ckpt, in_path, threads, work, tag)
                times["ditstar"].append(d_s)
                walls.append(d_wall)
                for side, (fwd, _, _) in models.items():
                    s, _ = time_torch(fwd, (x, t, ctx), threads)
                    times[side].append(s)
                log(f"  {threads} thread(s) round {rep + 1}: " + ", ".join(
                    f"{s} {times[s][-1]:.3f} s" for s in sides) + f" (ditstar wall {d_wall:.3f} s)")
            med = {s: statistics.median(v) for s, v in times.items()}
            rows.append({"tokens": tokens, "threads": threads, "med": med,
                         "wall": statistics.median(walls), "runs": times,
                         "others": others_load(c0, cpu_counters()), "load": loadavg()})

            if not a.no_split:
                tr_s, _, _, _ = run_ditstar(a.ditstar, off_ckpt, in_path, threads, work, tag,
                                            trace=True)
                g, per_codelet = ditstar_split(os.path.join(work, f"trace-{tag}"))
                split = {"tokens": tokens, "threads": threads, "ditstar": g,
                         "ditstar_codelets": per_codelet, "wall": {"ditstar": tr_s}}
                for side, (fwd, model, norms) in models.items():
                    split[side], split["wall"][side] = torch_split(fwd, model, norms,
                                                                   (x, t, ctx), threads)
                splits.append(split)
                log(f"  {threads} thread(s): per-op split recorded")
        log()

    # attention alone
    attn = []
    for tokens in tokens_list:
        flops = 4.0 * tokens * tokens * 128 * CONFIG["num_heads"]
        for threads in threads_list:
            s = sdpa_alone(tokens, threads, a.reps)
            attn.append(("torch-sdpa", tokens, threads, s, flops / s / 1e9, ""))
        gf, note = bench_cpu_ops(tokens)
        attn.append(("ditstar-bench_cpu_ops", tokens, 1, flops / gf / 1e9 if gf else None, gf, note))
    load_after = loadavg()
    others = others_load(counters, cpu_counters())

    report(sides, rows, splits, accuracy, attn, load_before, load_after, others)


def report(sides, rows, splits, accuracy, attn, load_before, load_after, others):
    torch_sides = [s for s in sides if s != "ditstar"]
    log("RESULTS (seconds per forward, medians; ditstar = its stats' total_seconds, "
        "wall = the whole command)")
    head = f"{'tokens':>6} {'thr':>3} {'ditstar':>8} {'(wall)':>8}" + \
        "".join(f" {s:>9}" for s in torch_sides) + \
        "".join(f" {'d/' + s[:3]:>7}" for s in torch_sides) + f" {'others':>6}  load average"
    log(head)
    for r in rows:
        m = r["med"]
        line = f"{r['tokens']:>6} {r['threads']:>3} {m['ditstar']:>8.3f} {r['wall']:>8.3f}" + \
            "".join(f" {m[s]:>9.3f}" for s in torch_sides) + \
            "".join(f" {fmt(ratio(m['ditstar'], m[s]), 2):>7}" for s in torch_sides) + \
            f" {r['others']:>6.2f}  {r['load']}"
        log(line)
    log("(d/off = ditstar / official, d/dif = ditstar / diffusers: below 1 ditstar is faster;")
    log(" others = cores other processes kept busy on average during that row's runs;")
    log(" load average at the row's end)")
    log()

    if splits:
        log("PER-OP SPLIT (seconds in one forward: self CPU time per torch op, "
            "ditstar task durations; share of the group sum)")
        for sp in splits:
            log(f"  {sp['tokens']} tokens, {sp['threads']} thread(s):")
            cols = ["ditstar"] + torch_sides
            log(f"    {'group':<12}" + "".join(f" {c:>18}" for c in cols))
            for grp in GROUPS + ("sum", "wall"):
                cells = []
                for c in cols:
                    g = sp[c]
                    tot = sum(g.values())
                    if grp == "sum":
                        v, share = tot, ""
                    elif grp == "wall":
                        v, share = sp["wall"][c], ""
                    else:
                        v, share = g[grp], f"({100 * g[grp] / tot:4.1f}%)" if tot else ""
                    cells.append(f"{v:>10.3f} {share:>7}")
                log(f"    {grp:<12}" + "".join(f" {c:>18}" for c in cells))
            cod = ", ".join(f"{k} {v:.3f}" for k, v in sorted(sp["ditstar_codelets"].items(),
                                                              key=lambda kv: -kv[1]))
            log(f"    ditstar per codelet: {cod}")
        log()

    log("ATTENTION ALONE (q, k, v [1, 12, L, 128] fp32, FLOPs 4 L^2 128 12)")
    for name, tokens, threads, s, gf, note in attn:
        if s is None:
            log(f"  {name:<22} L {tokens:>5} {threads} thread(s): {note}")
        else:
            log(f"  {name:<22} L {tokens:>5} {threads} thread(s): {s:8.4f} s {gf:7.1f} GFLOP/s"
                + (f"  [{note}]" if note else ""))
    log()
    log("ACCURACY (max |a - b| / max |b|, b = official unless skipped)")
    for acc in accuracy:
        log(f"  {acc['tokens']} tokens, {acc['threads']} thread(s): " + ", ".join(
            f"{k.replace('_vs_', ' vs ')} {v:.2e}" for k, v in acc.items() if "_vs_" in k))
    log()
    log(f"load average before: {load_before}, after: {load_after}; other processes kept "
        f"{others:.2f} cores busy on average during the whole run")
    log()

    for r in rows:
        m = r["med"]
        fields = [f"tokens={r['tokens']}", f"threads={r['threads']}",
                  f"ditstar_s={m['ditstar']:.4f}", f"ditstar_wall_s={r['wall']:.4f}"]
        fields += [f"{s}_s={m[s]:.4f}" for s in torch_sides]
        fields += [f"ditstar_over_{s}={ratio(m['ditstar'], m[s]):.4f}" for s in torch_sides]
        fields += [f"others_cores={r['others']:.3f}"]
        log("result forward " + " ".join(fields))
    for sp in splits:
        for c in ["ditstar"] + torch_sides:
            log(f"result split side={c} tokens={sp['tokens']} threads={sp['threads']} " + " ".join(
                f"{g.replace('+', '_')}_s={v:.4f}" for g, v in sp[c].items())
                + f" wall_s={sp['wall'][c]:.4f}")
    for name, tokens, threads, s, gf, note in attn:
        if s is None:
            log(f"result attention impl={name} tokens={tokens} threads={threads} status={note.split(' (')[0].replace(' ', '_')}")
        else:
            log(f"result attention impl={name} tokens={tokens} threads={threads} "
                f"seconds={s:.5f} gflops={gf:.2f}")
    for acc in accuracy:
        log(f"result accuracy tokens={acc['tokens']} threads={acc['threads']} " + " ".join(
            f"{k}_maxrel={v:.3e}" for k, v in acc.items() if "_vs_" in k))
    log(f"result loadavg before=\"{load_before}\" after=\"{load_after}\" "
        f"others_cores={others:.3f}")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Fail as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        sys.exit(130)
