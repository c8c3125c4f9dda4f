#!/usr/bin/env python3
"""Test of tools/ditstar-encode and tools/ditstar-decode on tiny random-weight models.

usage: test_tools.py --ditstar PATH/ditstar --tools DIR [--work DIR] [--keep]

Builds, from the libraries' own config classes and nothing downloaded, a tiny umT5
encoder (UMT5EncoderModel) with a word-level tokenizer, a tiny Llama and CLIP text
model (HunyuanVideo's two encoders), and tiny VAEs (AutoencoderKLWan with 4 and 48
channels, AutoencoderKLHunyuanVideo), saved as diffusers pipeline folders; then checks:
the encoded tensors' names and shapes are those `ditstar generate --context` reads (the
real binary runs the tiny presets tiny-test, tiny-ti2v-5b and tiny-hunyuan on them) and
equal the encoders' outputs computed here; the un-normalisation equals z * std + mean
computed in NumPy from the VAE config's tables (HunyuanVideo z / scaling_factor); the
decoded frames equal a decode done here from those latents; two decodes are identical;
the mp4 has the frame count, size and rate; the contact sheet its size; usage errors
exit 2 and failed runs leave no output. Ends with "N passed, N failed".

Run by `make check-tools` (or `./setup.sh tools check`), never by `make check`; it runs
itself with the tools venv's python (see ./setup.sh tools).
"""

import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

PROG = "test_tools"


def _enter_venv():
    if os.environ.get("DITSTAR_TOOLS_VENV"):
        venv = os.environ["DITSTAR_TOOLS_VENV"]
    else:
        cache = os.environ.get("DITSTAR_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "ditstar")
        venv = os.path.join(cache, "tools-venv")
    py = os.path.join(venv, "bin", "python")
    if os.path.realpath(sys.prefix) != os.path.realpath(venv) and os.access(py, os.X_OK) and \
            not os.environ.get("DITSTAR_TOOLS_REEXEC"):
        os.environ["DITSTAR_TOOLS_REEXEC"] = "1"
        os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])
    try:
        import diffusers  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as e:
        sys.stderr.write("%s: %s: run ./setup.sh tools first (venv: %s)\n" % (PROG, e, venv))
        sys.exit(1)
    return venv


class T:
    passed = 0
    failed = 0

    @classmethod
    def check(cls, ok, what, detail=""):
        if ok:
            cls.passed += 1
            print("ok %s" % what)
        else:
            cls.failed += 1
            print("not ok %s%s" % (what, (": " + detail) if detail else ""))
        sys.stdout.flush()
        return ok


def run(cmd, env=None):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def load_script(path, name):
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------ tiny models

WORDS = ("a cat walks on the grass in the sun red fox jumps over lazy dog video of blue sky "
         "describe by detailing following aspects 1 2 3 4 5 . , : main content and theme color "
         "shape size texture quantity text spatial relationships objects actions events behaviors "
         "temporal physical movement changes background environment light style atmosphere "
         "camera angles movements transitions used system user aerial view overexposed low "
         "quality deformation poor composition bad hands teeth eyes limbs distortion").split()


def word_tokenizer(path, specials, template, eos, bos=None, pad="<pad>", extra=()):
    """A word-level fast tokenizer saved in path: specials first, then WORDS."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast
    vocab = {}
    for w in list(specials) + [w for w in WORDS if w not in specials] + list(extra):
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    st = [(t, vocab[t]) for t in (eos, bos) if t]
    tk.post_processor = processors.TemplateProcessing(single=template, special_tokens=st)
    kw = dict(tokenizer_object=tk, unk_token="<unk>", pad_token=pad, eos_token=eos)
    if bos:
        kw["bos_token"] = bos
    fast = PreTrainedTokenizerFast(**kw)
    others = [t for t in specials if t not in (eos, bos, pad, "<unk>")]
    if others:
        fast.add_special_tokens({"additional_special_tokens": others})
    fast.save_pretrained(path)
    return vocab


def make_wan_pipe(root, text_dim, z_dim, residual=False):
    import torch
    from diffusers import AutoencoderKLWan
    from transformers import UMT5Config, UMT5EncoderModel
    torch.manual_seed(1)
    vocab = word_tokenizer(os.path.join(root, "tokenizer"), ["<pad>", "</s>", "<unk>"], "$A </s>", "</s>",
                           extra=[chr(0x8272), "，"])
    cfg = UMT5Config(vocab_size=len(vocab) + 3, d_model=text_dim, d_kv=8, d_ff=2 * text_dim,
                     num_layers=2, num_heads=text_dim // 8, relative_attention_num_buckets=8,
                     relative_attention_max_distance=16, pad_token_id=0, eos_token_id=1,
                     decoder_start_token_id=0)
    UMT5EncoderModel(cfg).eval().save_pretrained(os.path.join(root, "text_encoder"))
    g = torch.Generator().manual_seed(2)
    mean = (torch.randn(z_dim, generator=g) * 0.5).tolist()
    std = (torch.rand(z_dim, generator=g) * 2 + 0.5).tolist()
    if residual:  # the Wan2.2 VAE's form: patchified RGB, residual up/down sampling
        vae = AutoencoderKLWan(base_dim=16, decoder_base_dim=16, z_dim=z_dim, dim_mult=[1, 2, 2, 2],
                               num_res_blocks=1, is_residual=True, in_channels=12, out_channels=12,
                               patch_size=2, scale_factor_spatial=16, latents_mean=mean, latents_std=std)
    else:
        vae = AutoencoderKLWan(base_dim=8, z_dim=z_dim, dim_mult=[1, 2, 2, 2], num_res_blocks=1,
                               latents_mean=mean, latents_std=std)
    vae.eval().save_pretrained(os.path.join(root, "vae"))


LLAMA_SPECIALS = ["<pad>", "<unk>", "<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                  "<|eot_id|>"]
CLIP_SPECIALS = ["<pad>", "<unk>", "<|startoftext|>"]


def make_hy_pipe(root, text_dim, text_dim_2, z_dim):
    import torch
    from diffusers import AutoencoderKLHunyuanVideo
    from transformers import CLIPTextConfig, CLIPTextModel, LlamaConfig, LlamaModel
    torch.manual_seed(3)
    v1 = word_tokenizer(os.path.join(root, "tokenizer"), LLAMA_SPECIALS, "<|begin_of_text|> $A",
                        "<|eot_id|>", bos="<|begin_of_text|>")
    LlamaModel(LlamaConfig(vocab_size=len(v1), hidden_size=text_dim, intermediate_size=2 * text_dim,
                           num_hidden_layers=3, num_attention_heads=2, num_key_value_heads=2,
                           max_position_embeddings=512, pad_token_id=0, bos_token_id=2,
                           eos_token_id=5)).eval().save_pretrained(os.path.join(root, "text_encoder"))
    # CLIP's end token is the last id, as in the released vocabulary (the pooled row)
    v2 = word_tokenizer(os.path.join(root, "tokenizer_2"), CLIP_SPECIALS,
                        "<|startoftext|> $A <|endoftext|>", "<|endoftext|>", bos="<|startoftext|>",
                        extra=["<|endoftext|>"])
    CLIPTextModel(CLIPTextConfig(vocab_size=len(v2), hidden_size=text_dim_2, intermediate_size=2 * text_dim_2,
                                 num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=77,
                                 pad_token_id=0, bos_token_id=2, eos_token_id=v2["<|endoftext|>"],
                                 projection_dim=text_dim_2)).eval().save_pretrained(
        os.path.join(root, "text_encoder_2"))
    AutoencoderKLHunyuanVideo(latent_channels=z_dim, block_out_channels=(8, 8, 16, 16), layers_per_block=1,
                              norm_num_groups=4).eval().save_pretrained(os.path.join(root, "vae"))
    return v1


# ------------------------------------------------------------------ checks

def st_read(path):
    from safetensors import safe_open
    with safe_open(path, framework="numpy") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, (f.metadata() or {})


def leftovers(d, name):
    return [f for f in os.listdir(d) if f.startswith(name + ".tmp.")]


def main(argv):
    import argparse
    p = argparse.ArgumentParser(prog=PROG)
    p.add_argument("--ditstar", required=True)
    p.add_argument("--tools", required=True)
    p.add_argument("--work")
    p.add_argument("--keep", action="store_true")
    a = p.parse_args(argv)
    venv = _enter_venv()
    import numpy as np
    import torch

    import transformers
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    import diffusers
    diffusers.utils.logging.disable_progress_bar()
    diffusers.utils.logging.set_verbosity_error()
    enc = os.path.join(a.tools, "ditstar-encode")
    dec = os.path.join(a.tools, "ditstar-decode")
    if a.work:
        os.makedirs(a.work, exist_ok=True)
        w = tempfile.mkdtemp(prefix="run.", dir=a.work)
    else:
        w = tempfile.mkdtemp(prefix="ditstar-tools.")
    env = dict(os.environ)
    env["STARPU_HOME"] = os.path.join(w, "starpu-home")
    env["STARPU_SILENT"] = "1"
    env["STARPU_WATCHDOG_TIMEOUT"] = "30000000"
    env["STARPU_WATCHDOG_CRASH"] = "1"
    env.pop("DITSTAR_TOOLS_REEXEC", None)
    env["DITSTAR_TOOLS_VENV"] = venv
    os.makedirs(env["STARPU_HOME"])
    cache = os.path.join(w, "cache")
    py = sys.executable

    def ditstar(*args):
        return run([a.ditstar] + list(args) + ["--cache-dir", cache, "--quiet"], env)

    # --- models
    wan = os.path.join(w, "wan-pipe")        # tiny-test: text_dim 24, 4 channels
    ti2v = os.path.join(w, "ti2v-pipe")      # tiny-ti2v-5b: text_dim 32, 48 channels
    hy = os.path.join(w, "hy-pipe")          # tiny-hunyuan: 32 / 24, 4 channels
    make_wan_pipe(wan, 24, 4)
    make_wan_pipe(ti2v, 32, 48, residual=True)
    hy_vocab = make_hy_pipe(hy, 32, 24, 4)
    prompt = "a red fox jumps over the lazy dog in the sun"

    # --- usage and help
    rc, out, err = run([py, enc, "--help"], env)
    T.check(rc == 0 and "usage: ditstar-encode" in out, "encode --help")
    rc, out, err = run([py, dec, "--help"], env)
    T.check(rc == 0 and "usage: ditstar-decode" in out, "decode --help")
    rc, out, err = run([py, enc, "--family", "wan2.1-t2v", "--encoder", wan, "--output", os.path.join(w, "x.st")], env)
    T.check(rc == 2 and "--prompt" in err and len(err.strip().splitlines()) == 1, "encode without --prompt: exit 2", err)
    rc, out, err = run([py, enc, "--family", "ltx-2", "--encoder", wan, "--prompt", "x", "--output",
                        os.path.join(w, "x.st")], env)
    T.check(rc == 2 and "ltx-2" in err, "encode --family ltx-2 refused by name", err)
    rc, out, err = run([py, enc, "--family", "wan2.1-t2v", "--encoder", wan, "--prompt", "x", "--output",
                        os.path.join(w, "nodir", "x.st")], env)
    T.check(rc == 2 and "nodir" in err, "encode --output in a missing directory: exit 2", err)
    rc, out, err = run([py, enc, "--family", "wan2.1-t2v", "--encoder", wan, "--prompt", "x", "--bogus", "1",
                        "--output", os.path.join(w, "x.st")], env)
    T.check(rc == 2 and "--bogus" in err, "encode with an unknown option: exit 2", err)
    bad = os.path.join(w, "bad.safetensors")
    rc, out, err = run([py, enc, "--family", "wan2.1-t2v", "--encoder", os.path.join(w, "hy-pipe", "vae"),
                        "--prompt", "x", "--output", bad], env)
    T.check(rc == 1 and len(err.strip().splitlines()) == 1 and not os.path.exists(bad) and
            not leftovers(w, "bad.safetensors"), "encode with a wrong encoder: one line, exit 1, no output", err)

    cuda = os.path.join(w, "cuda.safetensors")
    rc, out, err = run([py, enc, "--family", "wan", "--encoder", wan, "--prompt", prompt, "--device", "cuda",
                        "--output", cuda], env)
    if torch.cuda.is_available():
        T.check(rc == 0 and os.path.isfile(cuda), "encode wan --device cuda", err)
    else:
        T.check(rc == 2 and "CUDA" in err and not os.path.exists(cuda), "--device cuda without a GPU: exit 2", err)
    rc, out, err = run([py, enc, "--family", "wan", "--enc", wan, "--prompt", prompt, "--output", cuda], env)
    T.check(rc == 2 and "--enc" in err, "abbreviated options are refused", err)

    # --- Wan encode (run with the system python: the script enters the venv itself)
    ctx = os.path.join(w, "wan-ctx.safetensors")
    sys_py = shutil.which("python3") or py
    rc, out, err = run([sys_py, enc, "--family", "wan2.1-t2v", "--encoder", wan, "--prompt", "  " + prompt + "\n",
                        "--negative-prompt", "low quality", "--output", ctx], env)
    T.check(rc == 0 and os.path.isfile(ctx), "encode wan (system python3 re-executes in the venv)", err)
    if rc == 0:
        t, meta = st_read(ctx)
        T.check(sorted(t) == ["context", "context_null"], "wan names: context, context_null", str(sorted(t)))
        from transformers import AutoTokenizer, UMT5EncoderModel
        tok = AutoTokenizer.from_pretrained(os.path.join(wan, "tokenizer"))
        m = UMT5EncoderModel.from_pretrained(os.path.join(wan, "text_encoder")).eval()
        good = True
        for name, text in (("context", prompt), ("context_null", "low quality")):
            ids = tok(text).input_ids  # the words and </s>
            with torch.no_grad():
                ref = m(input_ids=torch.tensor([ids])).last_hidden_state[0].numpy()
            got = t[name]
            good &= T.check(got.shape == (len(ids), 24) and got.dtype == np.float32,
                            "wan %s [L, 24] F32 holds the real tokens only" % name, str(got.shape))
            if got.shape == ref.shape:
                d = float(np.abs(got - ref).max())
                T.check(d < 1e-5, "wan %s equals the encoder's rows without padding (%.2g)" % (name, d))
        T.check(meta.get("family") == "wan2.1-t2v" and meta.get("prompt"), "wan metadata: family, prompt")
        ctx_def = os.path.join(w, "wan-ctx-default.safetensors")
        rc, out, err = run([py, enc, "--family", "wan", "--encoder", wan, "--prompt", prompt, "--output", ctx_def], env)
        if T.check(rc == 0, "encode wan with the official negative prompt", err):
            t2, _ = st_read(ctx_def)
            T.check(t2["context_null"].shape[0] > 1, "the default negative prompt is not empty")
        # tiny-test's text_len is 8: the encoder's --text-len cuts the prompt to it
        ctx8 = os.path.join(w, "wan-ctx8.safetensors")
        rc, out, err = run([py, enc, "--family", "wan", "--encoder", wan, "--prompt", prompt, "--text-len", "8",
                            "--output", ctx8], env)
        if T.check(rc == 0, "encode wan --text-len 8", err):
            t8, _ = st_read(ctx8)
            T.check(t8["context"].shape == (8, 24), "--text-len 8 truncates to 8 rows", str(t8["context"].shape))

        lat = os.path.join(w, "wan-latents.safetensors")
        rc, out, err = ditstar("generate", "--model", "tiny-test", "--steps", "2", "--context", ctx8,
                               "--output", lat, "--save-inputs")
        if T.check(rc == 0, "ditstar generate --model tiny-test --context (encoded)", err.strip()):
            lt, lmeta = st_read(lat)
            d = max(float(np.abs(lt["context"][:t8["context"].shape[0]] - t8["context"]).max()),
                    float(np.abs(lt["context_null"][:t8["context_null"].shape[0]] - t8["context_null"]).max()))
            T.check(d == 0.0, "ditstar read both encoded contexts as written", "max diff %g" % d)
            T.check(lmeta.get("family") == "wan2.1-t2v", "ditstar wrote the family in the latents' metadata")
        # --- Wan decode
        frames1, frames2 = os.path.join(w, "f1.npy"), os.path.join(w, "f2.npy")
        mp4, sheet = os.path.join(w, "wan.mp4"), os.path.join(w, "wan.png")
        rc, out, err = run([sys_py, dec, "--vae", wan, "--input", lat, "--output", mp4, "--sheet", sheet,
                            "--frames-out", frames1], env)
        T.check(rc == 0, "decode wan (family from the metadata): mp4, sheet, frames", err)
        rc2, out, err2 = run([py, dec, "--vae", os.path.join(wan, "vae"), "--input", lat, "--frames-out", frames2,
                              "--family", "wan2.1-t2v"], env)
        T.check(rc2 == 0, "decode wan again (the vae/ folder itself, --family)", err2)
        if rc == 0 and rc2 == 0:
            f1, f2 = np.load(frames1), np.load(frames2)
            z = lt["latents"]
            C, F, H, W = z.shape
            T.check(f1.shape == (4 * (F - 1) + 1, 8 * H, 8 * W, 3) and f1.dtype == np.uint8,
                    "wan frames [4(F-1)+1, 8H, 8W, 3] uint8", str(f1.shape))
            T.check(np.array_equal(f1, f2), "two decodes of the same latents are identical")
            # the un-normalisation against the official formula, in NumPy from the config's tables
            cfg = json.load(open(os.path.join(wan, "vae", "config.json")))
            mean = np.asarray(cfg["latents_mean"], np.float64)
            std = np.asarray(cfg["latents_std"], np.float64)
            ref = z.astype(np.float64) * std[:, None, None, None] + mean[:, None, None, None]
            dmod = load_script(dec, "ditstar_decode")
            from diffusers import AutoencoderKLWan
            vae = AutoencoderKLWan.from_pretrained(os.path.join(wan, "vae")).eval()
            got = dmod.unnormalize(z, "wan", vae, "test")
            d = float(np.abs(got - ref).max() / np.abs(ref).max())
            T.check(d < 1e-6, "un-normalised = z * std + mean per channel (NumPy, rel %.2g)" % d)
            import inspect
            dft = inspect.signature(AutoencoderKLWan.__init__).parameters
            T.check(list(dmod.WAN21_MEAN) == list(dft["latents_mean"].default) and
                    list(dmod.WAN21_STD) == list(dft["latents_std"].default) and
                    len(dmod.WAN22_MEAN) == len(dmod.WAN22_STD) == 48,
                    "the Wan2.1 tables equal diffusers' AutoencoderKLWan defaults; 48 for Wan2.2")
            sm = float(np.abs(dmod.unnormalize(z, "wan", vae, "t") - (z * 1.0)).max())
            T.check(sm > 0, "the un-normalisation changes the latents")
            # the official WanVAE.decode in fp32: z / scale[1] + scale[0], scale = [mean, 1 / std]
            inv = (1.0 / np.asarray(cfg["latents_std"], np.float32)).astype(np.float32)
            off = z / inv[:, None, None, None] + np.asarray(cfg["latents_mean"], np.float32)[:, None, None, None]
            T.check(np.array_equal(got, off), "un-normalised bit for bit as the official fp32 z / (1/std) + mean")
            with torch.no_grad():
                v = vae.decode(torch.from_numpy(off)[None]).sample[0]
            mine = ((v.clamp(-1, 1) + 1) / 2 * 255).to(torch.uint8).permute(1, 2, 3, 0).numpy()
            T.check(np.array_equal(mine, f1), "frames = the VAE's decode of the NumPy-un-normalised latents")
            import imageio.v2 as iio
            rd = iio.get_reader(mp4, "ffmpeg")
            n = sum(1 for _ in rd)
            md = rd.get_meta_data()
            rd.close()
            T.check(n == f1.shape[0], "mp4 holds %d frames" % f1.shape[0], "read %d" % n)
            T.check(tuple(md.get("size", ())) == (8 * W, 8 * H), "mp4 is %dx%d" % (8 * W, 8 * H), str(md.get("size")))
            T.check(abs(float(md.get("fps", 0)) - 16) < 0.01, "mp4 at Wan's 16 fps", str(md.get("fps")))
            from PIL import Image
            im = Image.open(sheet)
            idx, cols, rows, tw, th = dmod.sheet_layout(f1.shape[0], 16, None, None, 8 * W, 8 * H)
            T.check(im.size == (cols * tw, rows * th) and im.format == "PNG",
                    "sheet %dx%d (%d frames in %d columns)" % (cols * tw, rows * th, len(idx), cols), str(im.size))
            T.check(np.array_equal(np.asarray(im.convert("RGB"))[:8 * H, :8 * W], f1[0]),
                    "the sheet's first tile is frame 0")
            sheet2 = os.path.join(w, "wan2.png")
            rc, out, err = run([py, dec, "--vae", wan, "--input", lat, "--sheet", sheet2, "--sheet-frames", "3",
                                "--sheet-columns", "3", "--sheet-width", "24"], env)
            if T.check(rc == 0, "decode --sheet-frames 3 --sheet-columns 3 --sheet-width 24", err):
                T.check(Image.open(sheet2).size == (72, int(round(8 * H * 24 / (8 * W)))),
                        "a 3 x 1 sheet of 24-pixel tiles", str(Image.open(sheet2).size))
            ft = os.path.join(w, "ft.npy")
            rc, out, err = run([py, dec, "--vae", wan, "--input", lat, "--frames-out", ft, "--tiled"], env)
            T.check(rc == 0 and np.load(ft).shape == f1.shape, "decode wan --tiled", err)
            fps8 = os.path.join(w, "wan8.mp4")
            rc, out, err = run([py, dec, "--vae", wan, "--input", lat, "--output", fps8, "--fps", "8"], env)
            if T.check(rc == 0, "decode --fps 8", err):
                rd = iio.get_reader(fps8, "ffmpeg")
                T.check(abs(float(rd.get_meta_data().get("fps", 0)) - 8) < 0.01, "mp4 at 8 fps")
                rd.close()
        # decode refusals
        bad = os.path.join(w, "bad.mp4")
        rc, out, err = run([py, dec, "--vae", os.path.join(ti2v, "vae"), "--input", lat, "--output", bad], env)
        T.check(rc == 1 and "channels" in err and not os.path.exists(bad) and not leftovers(w, "bad.mp4"),
                "decode with a 48-channel VAE of 4-channel latents: exit 1, no output", err)
        rc, out, err = run([py, dec, "--vae", wan, "--input", ctx, "--output", bad], env)
        T.check(rc == 1 and "latents" in err and not os.path.exists(bad), "decode of a file without 'latents'", err)
        rc, out, err = run([py, dec, "--vae", wan, "--input", lat], env)
        T.check(rc == 2 and "--output" in err, "decode without an output: exit 2", err)
        rc, out, err = run([py, dec, "--vae", wan, "--input", lat, "--output", lat], env)
        T.check(rc == 2 and "input" in err, "decode --output naming the input: exit 2", err)
        rc, out, err = run([py, dec, "--vae", wan, "--input", lat, "--output", bad, "--family", "ltx-2"], env)
        T.check(rc == 2 and "ltx-2" in err, "decode --family ltx-2 refused by name", err)

    # --- Wan2.2 TI2V-5B: 48 channels, the residual VAE, stride 16, 24 fps
    ctx5 = os.path.join(w, "ti2v-ctx.safetensors")
    rc, out, err = run([py, enc, "--family", "wan2.2-ti2v-5b", "--encoder", ti2v, "--prompt", prompt,
                        "--text-len", "16", "--output", ctx5], env)
    T.check(rc == 0, "encode wan2.2-ti2v-5b", err)
    lat5 = os.path.join(w, "ti2v-latents.safetensors")
    rc, out, err = ditstar("generate", "--model", "tiny-ti2v-5b", "--steps", "2", "--frames", "5", "--height", "64",
                           "--width", "96", "--context", ctx5, "--output", lat5)
    if T.check(rc == 0, "ditstar generate --model tiny-ti2v-5b --context (encoded)", err.strip()):
        f5, mp45 = os.path.join(w, "ti2v.npy"), os.path.join(w, "ti2v.mp4")
        rc, out, err = run([py, dec, "--vae", ti2v, "--input", lat5, "--frames-out", f5, "--output", mp45], env)
        if T.check(rc == 0, "decode wan2.2-ti2v-5b with the 48-channel VAE", err):
            T.check("differ from the official 48-channel tables" in err,
                    "a note that the test VAE's tables are not the official ones", err)
            z5, _ = st_read(lat5)
            C, F, H, W = z5["latents"].shape
            fr = np.load(f5)
            T.check(C == 48 and fr.shape == (4 * (F - 1) + 1, 16 * H, 16 * W, 3),
                    "ti2v frames [4(F-1)+1, 16H, 16W, 3]", str(fr.shape))
            import imageio.v2 as iio
            rd = iio.get_reader(mp45, "ffmpeg")
            T.check(abs(float(rd.get_meta_data().get("fps", 0)) - 24) < 0.01, "ti2v mp4 at 24 fps")
            rd.close()

    # --- HunyuanVideo
    hctx = os.path.join(w, "hy-ctx.safetensors")
    rc, out, err = run([py, enc, "--family", "hunyuan-video", "--encoder", hy, "--prompt", prompt,
                        "--text-len", "16", "--output", hctx], env)
    if T.check(rc == 0, "encode hunyuan-video (LLM + CLIP-L, template cropped)", err):
        t, meta = st_read(hctx)
        names = ["text_mask", "text_mask_neg", "text_states", "text_states_2", "text_states_2_neg", "text_states_neg"]
        T.check(sorted(t) == names, "hunyuan names: text_states, text_mask, text_states_2 and _neg", str(sorted(t)))
        T.check(t["text_states"].shape == (16, 32) and t["text_mask"].shape == (16,) and
                t["text_mask"].dtype == np.int64 and t["text_states_2"].shape == (24,),
                "hunyuan shapes [16, 32], [16] I64, [24]")
        # independently: the template's prefix is cropped, the prompt's tokens stay, skip layer 2
        from transformers import AutoTokenizer, CLIPTextModel, LlamaModel
        emod = load_script(enc, "ditstar_encode")
        tok = AutoTokenizer.from_pretrained(os.path.join(hy, "tokenizer"))
        full = tok(emod.HY_TEMPLATE.format(prompt)).input_ids
        prefix = tok(emod.HY_TEMPLATE.split("{}")[0]).input_ids
        crop = len(prefix)
        T.check(meta.get("crop_start") == str(crop) and full[:crop] == prefix,
                "the crop is the template's %d tokens before the prompt" % crop, meta.get("crop_start", ""))
        n_prompt = len(full) - crop  # the prompt's words and the closing <|eot_id|>
        m = t["text_mask"]
        T.check(m[:min(n_prompt, 16)].all() and not m[min(n_prompt, 16):].any(),
                "text_mask: %d ones for the prompt's tokens, then zeros" % min(n_prompt, 16), str(m.tolist()))
        llm = LlamaModel.from_pretrained(os.path.join(hy, "text_encoder")).eval()
        ids = full[:crop + 16]
        with torch.no_grad():
            hs = llm(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states
        ref = hs[-3][0, crop:].numpy()
        k = ref.shape[0]
        d = float(np.abs(t["text_states"][:k] - ref).max())
        T.check(d < 1e-4, "text_states = the LLM's hidden state 2 layers before the last, cropped (%.2g)" % d)
        tok2 = AutoTokenizer.from_pretrained(os.path.join(hy, "tokenizer_2"))
        clip = CLIPTextModel.from_pretrained(os.path.join(hy, "text_encoder_2")).eval()
        e2 = tok2([prompt], padding="max_length", max_length=77, return_tensors="pt")
        with torch.no_grad():
            pooled = clip(input_ids=e2.input_ids, attention_mask=e2.attention_mask).pooler_output[0].numpy()
        d = float(np.abs(t["text_states_2"] - pooled).max())
        T.check(d < 1e-5, "text_states_2 = CLIP's pooled output (%.2g)" % d)
        # the official layout: the two encoders' folders named apart
        hctx2 = os.path.join(w, "hy-ctx2.safetensors")
        rc, out, err = run([py, enc, "--family", "hunyuan-video", "--encoder", os.path.join(hy, "text_encoder"),
                            "--prompt", prompt, "--text-len", "16", "--output", hctx2], env)
        T.check(rc == 2 and "--encoder-2" in err and not os.path.exists(hctx2),
                "hunyuan --encoder without text_encoder_2/ asks for --encoder-2", err)
        rc, out, err = run([py, enc, "--family", "hunyuan-video", "--encoder", os.path.join(hy, "text_encoder"),
                            "--tokenizer", os.path.join(hy, "tokenizer"), "--encoder-2",
                            os.path.join(hy, "text_encoder_2"), "--tokenizer-2", os.path.join(hy, "tokenizer_2"),
                            "--prompt", prompt, "--text-len", "16", "--output", hctx2], env)
        if T.check(rc == 0, "encode hunyuan from the encoders' folders (--encoder-2, --tokenizer, --tokenizer-2)", err):
            t2, _ = st_read(hctx2)
            T.check(all(np.array_equal(t[k], t2[k]) for k in t), "the same tensors as from the pipeline folder")
        hlat = os.path.join(w, "hy-latents.safetensors")
        rc, out, err = ditstar("generate", "--model", "tiny-hunyuan", "--steps", "2", "--guidance", "2",
                               "--context", hctx, "--output", hlat)
        if T.check(rc == 0, "ditstar generate --model tiny-hunyuan --guidance 2 --context (encoded, _neg too)",
                   err.strip()):
            hf = os.path.join(w, "hy.npy")
            hmp4 = os.path.join(w, "hy.mp4")
            rc, out, err = run([py, dec, "--vae", hy, "--input", hlat, "--frames-out", hf, "--output", hmp4], env)
            if T.check(rc == 0, "decode hunyuan-video (AutoencoderKLHunyuanVideo)", err):
                z, _ = st_read(hlat)
                z = z["latents"]
                from diffusers import AutoencoderKLHunyuanVideo
                emod_dec = load_script(dec, "ditstar_decode_hy")
                vae = AutoencoderKLHunyuanVideo.from_pretrained(os.path.join(hy, "vae")).eval()
                x = z / np.float32(0.476986)  # the official latents / scaling_factor, in fp32
                d = float(np.abs(emod_dec.unnormalize(z, "hunyuan", vae, "t") - z.astype(np.float64) / 0.476986).max())
                T.check(d < 1e-5 * float(np.abs(z).max() / 0.476986), "hunyuan un-normalised = z / 0.476986 (%.2g)" % d)
                with torch.no_grad():
                    v = vae.decode(torch.from_numpy(x)[None]).sample[0]
                mine = ((v.clamp(-1, 1) + 1) / 2 * 255).to(torch.uint8).permute(1, 2, 3, 0).numpy()
                T.check(np.array_equal(np.load(hf), mine), "hunyuan frames = decode of z / 0.476986 (tiled by default)")
                hf2 = os.path.join(w, "hy2.npy")
                rc, out, err = run([py, dec, "--vae", hy, "--input", hlat, "--frames-out", hf2, "--no-tiled"], env)
                T.check(rc == 0 and np.array_equal(np.load(hf2), mine), "hunyuan --no-tiled: the same frames here", err)
                import imageio.v2 as iio
                rd = iio.get_reader(hmp4, "ffmpeg")
                T.check(abs(float(rd.get_meta_data().get("fps", 0)) - 24) < 0.01, "hunyuan mp4 at 24 fps")
                rd.close()

    if not a.keep:
        shutil.rmtree(w, ignore_errors=True)
    else:
        print("# kept %s" % w)
    print("%d passed, %d failed" % (T.passed, T.failed))
    return 1 if T.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
