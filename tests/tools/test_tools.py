#!/usr/bin/env python3
"""Test of tools/ditstar-encode and tools/ditstar-decode on tiny random-weight models.

usage: test_tools.py --ditstar PATH/ditstar --tools DIR [--work DIR] [--keep]

Builds, from the libraries' own config classes and nothing downloaded, a tiny umT5
encoder (UMT5EncoderModel) with a word-level tokenizer, a tiny Llama and CLIP text
model (HunyuanVideo's two encoders), a tiny Qwen2.5-VL with a chat template
(Cosmos-Reason1's architecture), a tiny Gemma 3 and one-file LTX-2 checkpoints holding
the text projection and connectors in the official names (19B and 2.3 forms), and tiny
VAEs (AutoencoderKLWan with 4, 16 and 48 channels, AutoencoderKLHunyuanVideo,
AutoencoderKLLTX2Video, AutoencoderKLLTX2Audio with an LTX2Vocoder), saved as diffusers
pipeline folders; then checks: the encoded tensors' names and shapes are those `ditstar
generate --context` reads (the real binary runs the tiny presets tiny-test,
tiny-ti2v-5b, tiny-hunyuan, tiny-cosmos, tiny-ltx2 and tiny-ltx2.3 on them) and equal
the encoders' outputs computed here (Cosmos' layer normalisation and LTX-2's feature
extractors and connectors re-computed in float64 from the official formulas); the
un-normalisation equals z * std + mean computed in NumPy from the VAE's tables
(HunyuanVideo z / scaling_factor); the decoded frames (and LTX-2's waveform) equal a
decode done here from those latents; two decodes are identical; the mp4 has the frame
count, size, rate (and LTX-2's audio track); the contact sheet its size; usage errors
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


def make_wan_pipe_vae(root, z_dim):
    """A tiny Wan2.1-form VAE of z_dim channels with random tables in root/vae."""
    import torch
    from diffusers import AutoencoderKLWan
    torch.manual_seed(8)
    g = torch.Generator().manual_seed(9)
    mean = (torch.randn(z_dim, generator=g) * 0.5).tolist()
    std = (torch.rand(z_dim, generator=g) * 2 + 0.5).tolist()
    AutoencoderKLWan(base_dim=8, z_dim=z_dim, dim_mult=[1, 2, 2, 2], num_res_blocks=1, latents_mean=mean,
                     latents_std=std).eval().save_pretrained(os.path.join(root, "vae"))


ENC_PATH = [None]  # the tools' folder's ditstar-encode (main sets it)


def make_clip_vision(root, layers=2):
    """A CLIP vision tower of ViT-H/14's width and patch (1280, heads of 80, 224 px: 257
    tokens), 2 blocks and a narrow MLP: as a transformers folder and as ComfyUI's one
    file (vision_model.* with a visual_projection)."""
    import torch
    from safetensors.torch import save_file
    from transformers import CLIPVisionConfig, CLIPVisionModelWithProjection
    torch.manual_seed(3)
    cfg = CLIPVisionConfig(hidden_size=1280, intermediate_size=64, num_hidden_layers=layers,
                           num_attention_heads=16, patch_size=14, image_size=224,
                           projection_dim=32, hidden_act="gelu", layer_norm_eps=1e-5)
    m = CLIPVisionModelWithProjection(cfg).eval()
    m.save_pretrained(os.path.join(root, "image_encoder"))
    save_file({k: v.contiguous() for k, v in m.state_dict().items()},
              os.path.join(root, "clip_vision_h.safetensors"))
    return m


def ref_clip_tokens(m, path):
    """The official CLIPModel.visual(use_31_block=True) written out on the tower's parts:
    [-1, 1] pixels resized bicubic to 224, back to [0, 1], CLIP-normalised, patch and
    class embeddings with positions, the pre-norm, every block but the last."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    from PIL import Image
    x = torch.from_numpy(np.asarray(Image.open(path).convert("RGB"), dtype=np.float32) / 255.0)
    x = x.permute(2, 0, 1)[None] * 2.0 - 1.0
    x = F.interpolate(x, size=(224, 224), mode="bicubic", align_corners=False) * 0.5 + 0.5
    mean = torch.tensor([0.48145466, 0.4578275, 0.40821073]).view(1, 3, 1, 1)
    std = torch.tensor([0.26862954, 0.26130258, 0.27577711]).view(1, 3, 1, 1)
    x = (x - mean) / std
    vm = m.vision_model
    with torch.no_grad():
        p = vm.embeddings.patch_embedding(x).flatten(2).transpose(1, 2)
        h = torch.cat([vm.embeddings.class_embedding.view(1, 1, -1), p], dim=1)
        h = vm.pre_layrnorm(h + vm.embeddings.position_embedding.weight[None])
        for layer in vm.encoder.layers[:-1]:
            out = layer(h, None, None) if "causal_attention_mask" in \
                layer.forward.__code__.co_varnames else layer(h, None)
            h = out[0] if isinstance(out, tuple) else out
    return h[0].numpy()


def ref_wan_y(vae_dir, images, frames, h, w):
    """wan/image2video.py's y written out: the pictures in [-1, 1] resized bicubic to
    h x w as the first (and last) of `frames` black frames, the VAE's mean normalised by
    its tables, after the 4 mask channels."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    from PIL import Image
    from diffusers import AutoencoderKLWan
    vae = AutoencoderKLWan.from_pretrained(vae_dir).eval()
    video = torch.zeros(1, 3, frames, h, w)
    for k, path in zip((0, frames - 1), images):
        x = torch.from_numpy(np.asarray(Image.open(path).convert("RGB"), np.float32) / 255.0)
        x = x.permute(2, 0, 1)[None] * 2 - 1
        video[0, :, k] = F.interpolate(x, size=(h, w), mode="bicubic", align_corners=False)[0]
    with torch.no_grad():
        mu = vae.encode(video).latent_dist.mean[0].numpy().astype(np.float64)
    mean = np.asarray(vae.config.latents_mean)[:, None, None, None]
    std = np.asarray(vae.config.latents_std)[:, None, None, None]
    lf = (frames - 1) // 4 + 1
    mask = np.zeros((4, lf, h // 8, w // 8))
    mask[:, 0] = 1
    if len(images) > 1:
        mask[3, lf - 1] = 1  # the last video frame: the last of its latent frame's four
    return np.concatenate([mask, (mu - mean) / std])


def wan_i2v_flow(T, py, w, env, prompt, ditstar, ctx, images):
    """ditstar-condition y for Wan2.1 I2V and FLF2V against ref_wan_y, then the prompt
    and picture to an mp4: generate --model tiny-i2v on the encoded context and clip_fea
    and the y, decoded."""
    import numpy as np
    cond = os.path.join(os.path.dirname(ENC_PATH[0]), "ditstar-condition")
    dec = os.path.join(os.path.dirname(ENC_PATH[0]), "ditstar-decode")
    pipe = os.path.join(w, "i2v-pipe")  # tiny-i2v: text_dim 32, 16 channels
    make_wan_pipe(pipe, 32, 16)
    for fam, imgs in (("wan2.1-i2v", images[:1]), ("wan2.1-flf2v", images)):
        y = os.path.join(w, fam + "-y.safetensors")
        args = [py, cond, "--family", fam, "--vae", pipe, "--image", imgs[0], "--frames", "17",
                "--height", "64", "--width", "96", "--output", y]
        if len(imgs) > 1:
            args[-2:-2] = ["--last-image", imgs[1]]
        rc, _, err = run(args, env)
        if not T.check(rc == 0, "ditstar-condition %s" % fam, err):
            continue
        got = st_read(y)[0]["y"]
        want = ref_wan_y(os.path.join(pipe, "vae"), imgs, 17, 64, 96)
        if T.check(got.shape == want.shape == (20, 5, 8, 12), "%s y [20, 5, 8, 12]" % fam, str(got.shape)):
            d = float(np.abs(got - want).max())
            T.check(d < 1e-4, "%s y = the mask channels, then the VAE's normalised mean (%.2g)" % (fam, d))
    y = os.path.join(w, "wan2.1-i2v-y.safetensors")
    lat, mp4 = os.path.join(w, "i2v-latents.safetensors"), os.path.join(w, "i2v.mp4")
    rc, _, err = ditstar("generate", "--model", "tiny-i2v", "--steps", "2", "--context", ctx,
                         "--image-latent", y, "--output", lat)
    if T.check(rc == 0, "generate --model tiny-i2v on the encoded prompt, clip_fea and y", err.strip()):
        rc, _, err = run([py, dec, "--vae", pipe, "--input", lat, "--output", mp4], env)
        T.check(rc == 0 and os.path.getsize(mp4) > 0, "decode wan2.1-i2v to an mp4", err)
    rc, _, err = run([py, cond, "--family", "wan2.1-i2v", "--vae", pipe, "--image", images[0], "--frames",
                      "16", "--height", "64", "--width", "96", "--output", os.path.join(w, "bad.st")], env)
    T.check(rc == 2 and "--frames 16" in err, "condition --frames 16: exit 2, named", err)


def ref_cover_latent(vae, path, h, w, resample):
    """A picture scaled (PIL resample) to cover w x h, centre-cropped, in [-1, 1],
    encoded as one frame: the VAE's mean [C, 1, h', w'] in float64."""
    import numpy as np
    import torch
    from PIL import Image
    im = Image.open(path).convert("RGB")
    s = max(w / im.width, h / im.height)
    im = im.resize((round(im.width * s), round(im.height * s)), resample)
    x1, y1 = (im.width - w) // 2, (im.height - h) // 2
    px = np.asarray(im.crop((x1, y1, x1 + w, y1 + h)), np.float32) / 255.0 * 2 - 1
    x = torch.from_numpy(px).permute(2, 0, 1)[None, :, None]
    with torch.no_grad():
        return vae.encode(x).latent_dist.mean[0].numpy().astype(np.float64)


def condition_latent_tests(T, py, w, env, ditstar, ti2v, ltx):
    """ditstar-condition's TI2V-5B z and LTX-2 image_latent against ref_cover_latent
    normalised by the VAEs' tables, and generate on them (the frame they set is theirs,
    bit for bit)."""
    import numpy as np
    from PIL import Image
    cond = os.path.join(os.path.dirname(ENC_PATH[0]), "ditstar-condition")
    pic = os.path.join(w, "first.png")
    for fam, vdir, name, preset, frames, shape in (
            ("wan2.2-ti2v-5b", ti2v, "z", "tiny-ti2v-5b", "5", (48, 1, 4, 6)),
            ("ltx-2", ltx, "image_latent", "tiny-ltx2", "17", (16, 1, 2, 3))):
        out = os.path.join(w, fam + "-cond.safetensors")
        rc, _, err = run([py, cond, "--family", fam, "--vae", vdir, "--image", pic, "--frames", frames,
                          "--height", "64", "--width", "96", "--output", out], env)
        if not T.check(rc == 0, "ditstar-condition %s" % fam, err):
            continue
        got = st_read(out)[0][name]
        if fam == "ltx-2":
            from diffusers import AutoencoderKLLTX2Video
            vae = AutoencoderKLLTX2Video.from_pretrained(os.path.join(vdir, "vae")).eval()
            mu = ref_cover_latent(vae, pic, 64, 96, Image.BILINEAR)
            mean = vae.latents_mean.double().numpy()[:, None, None, None]
            std = vae.latents_std.double().numpy()[:, None, None, None]
        else:
            from diffusers import AutoencoderKLWan
            vae = AutoencoderKLWan.from_pretrained(os.path.join(vdir, "vae")).eval()
            mu = ref_cover_latent(vae, pic, 64, 96, Image.LANCZOS)
            mean = np.asarray(vae.config.latents_mean)[:, None, None, None]
            std = np.asarray(vae.config.latents_std)[:, None, None, None]
        want = (mu - mean) / std
        if not T.check(got.shape == want.shape == shape, "%s %s %s" % (fam, name, list(shape)), str(got.shape)):
            continue
        d = float(np.abs(got - want).max())
        T.check(d < 1e-4, "%s %s = the cropped picture's latent, normalised (%.2g)" % (fam, name, d))
        lat = os.path.join(w, fam + "-cond-latents.safetensors")
        rc, _, err = ditstar("generate", "--model", preset, "--steps", "2", "--frames", frames, "--height", "64",
                             "--width", "96", "--image-latent", out, "--output", lat)
        if T.check(rc == 0, "generate --model %s --image-latent (ditstar-condition's)" % preset, err.strip()):
            t = st_read(lat)[0]
            x = t.get("video_latents", t.get("latents"))
            T.check(np.array_equal(x[:, :1], got), "%s: latent frame 0 is the picture's, bit for bit" % preset)


def wan_clip_tests(T, py, enc, pipe, w, env, prompt, ditstar):
    """encode --image for Wan2.1 I2V and FLF2V (one file and a folder), the features
    against ref_clip_tokens, and ditstar generate --model tiny-i2v on them."""
    import numpy as np
    from PIL import Image
    root = os.path.join(w, "clip")
    m = make_clip_vision(root)
    rng = np.random.default_rng(4)
    first, last = os.path.join(w, "first.png"), os.path.join(w, "last.jpg")
    Image.fromarray(rng.integers(0, 256, (120, 200, 3), dtype=np.uint8)).save(first)
    Image.fromarray(rng.integers(0, 256, (90, 160, 3), dtype=np.uint8)).save(last)
    want = [ref_clip_tokens(m, first), ref_clip_tokens(m, last)]
    for fam, images, spec in (("wan2.1-i2v", [first], os.path.join(root, "clip_vision_h.safetensors")),
                              ("wan2.1-flf2v", [first, last], root)):
        out = os.path.join(w, fam + "-ctx.safetensors")
        args = [py, enc, "--family", fam, "--encoder", pipe, "--prompt", prompt, "--text-len", "16",
                "--image", images[0], "--image-encoder", spec, "--output", out]
        if len(images) > 1:
            args[-2:-2] = ["--last-image", images[1]]
        rc, _, err = run(args, env)
        if not T.check(rc == 0, "encode %s --image (%s)" % (fam, os.path.basename(spec)), err):
            continue
        t, meta = st_read(out)
        got = t.get("clip_fea")
        if T.check(got is not None and got.shape == (len(images), 257, 1280),
                   "%s clip_fea [%d, 257, 1280]" % (fam, len(images)), str(None if got is None else got.shape)):
            d = max(float(np.abs(got[i] - want[i]).max()) for i in range(len(images)))
            T.check(d < 1e-4, "%s clip_fea = the tokens after all but the last block (%.2g)" % (fam, d))
        if fam == "wan2.1-i2v":
            y = os.path.join(w, "i2v-y.safetensors")
            from safetensors.numpy import save_file
            save_file({"y": np.zeros((20, 5, 8, 12), np.float32)}, y)
            lat = os.path.join(w, "i2v-latents.safetensors")
            rc, _, err = ditstar("generate", "--model", "tiny-i2v", "--steps", "2", "--context", out,
                                 "--image-latent", y, "--output", lat)
            T.check(rc == 0, "ditstar generate --model tiny-i2v on the encoded context and clip_fea",
                    err.strip())
            wan_i2v_flow(T, py, w, env, prompt, ditstar, out, [first, last])
    rc, _, err = run([py, enc, "--family", "wan2.1-i2v", "--encoder", pipe, "--prompt", "x", "--image", first,
                      "--image-encoder", os.path.join(pipe, "vae"), "--output", os.path.join(w, "bad.st")], env)
    T.check(rc == 1 and len(err.strip().splitlines()) == 1, "encode --image-encoder not a CLIP tower: exit 1", err)


def make_ltx_vae(root, channels):
    """A tiny AutoencoderKLLTX2Video (stride 8/32/32) with random per-channel statistics."""
    import torch
    from diffusers import AutoencoderKLLTX2Video
    torch.manual_seed(10)
    vae = AutoencoderKLLTX2Video(latent_channels=channels, block_out_channels=(8, 16, 32, 64),
                                 decoder_block_out_channels=(8, 16, 32), layers_per_block=(1, 1, 1, 1, 1),
                                 decoder_layers_per_block=(1, 1, 1, 1)).eval()
    g = torch.Generator().manual_seed(11)
    with torch.no_grad():
        vae.latents_mean.copy_(torch.randn(channels, generator=g) * 0.5)
        vae.latents_std.copy_(torch.rand(channels, generator=g) * 2 + 0.5)
    vae.save_pretrained(os.path.join(root, "vae"))


def make_ltx_audio(root):
    """A tiny LTX-2 audio decoder: AutoencoderKLLTX2Audio (8 latent channels, 64 mel bins, so
    16 latent bins and 128 statistics) with random statistics, and an LTX2Vocoder of 80
    samples a mel frame at 8000 Hz."""
    import torch
    from diffusers import AutoencoderKLLTX2Audio
    from diffusers.pipelines.ltx2.vocoder import LTX2Vocoder
    torch.manual_seed(12)
    avae = AutoencoderKLLTX2Audio(base_channels=128, ch_mult=(1, 1, 1), num_res_blocks=1, latent_channels=8,
                                  mel_bins=64).eval()
    g = torch.Generator().manual_seed(13)
    with torch.no_grad():
        avae.latents_mean.copy_(torch.randn(128, generator=g) * 0.3)
        avae.latents_std.copy_(torch.rand(128, generator=g) + 0.5)
    avae.save_pretrained(os.path.join(root, "audio_vae"))
    LTX2Vocoder(in_channels=128, hidden_channels=16, upsample_kernel_sizes=[20, 16], upsample_factors=[10, 8],
                resnet_kernel_sizes=[3], resnet_dilations=[[1]], output_sampling_rate=8000).eval().save_pretrained(
        os.path.join(root, "vocoder"))


def audio_streams(path):
    """The 'Audio:' stream lines ffmpeg prints for a media file."""
    import imageio_ffmpeg
    r = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-i", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    return [l for l in r.stderr.decode("utf-8", "replace").splitlines() if "Stream" in l and "Audio:" in l]


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


QWEN_SPECIALS = ["<|endoftext|>", "<unk>", "<|im_start|>", "<|im_end|>"]
QWEN_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}"
                 "{{ m['content'] }}{% else %}{% for c in m['content'] %}{{ c['text'] }}{% endfor %}{% endif %}"
                 "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
COSMOS_WORDS = "you are helpful assistant who will provide prompts to an image generator".split()


def make_cosmos_encoder(root, hidden, layers):
    """A tiny Qwen2.5-VL (Cosmos-Reason1's architecture) with a word-level tokenizer and a
    Qwen-style chat template: layers x hidden = tiny-cosmos' crossattn_proj_in_channels."""
    import torch
    from transformers import AutoTokenizer, Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    torch.manual_seed(5)
    path = os.path.join(root, "text_encoder")
    vocab = word_tokenizer(os.path.join(root, "tokenizer"), QWEN_SPECIALS, "$A", "<|im_end|>",
                           pad="<|endoftext|>", extra=COSMOS_WORDS)
    tok = AutoTokenizer.from_pretrained(os.path.join(root, "tokenizer"))
    tok.chat_template = QWEN_TEMPLATE
    tok.save_pretrained(os.path.join(root, "tokenizer"))
    n = len(vocab) + 4
    cfg = Qwen2_5_VLConfig(
        text_config=dict(vocab_size=n, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024,
                         rope_scaling={"type": "mrope", "mrope_section": [1, 1, 2]}, pad_token_id=0,
                         bos_token_id=None, eos_token_id=vocab["<|im_end|>"]),
        vision_config=dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=hidden,
                           patch_size=14, spatial_merge_size=2, temporal_patch_size=2, fullatt_block_indexes=[0]),
        image_token_id=n - 4, video_token_id=n - 3, vision_start_token_id=n - 2, vision_end_token_id=n - 1)
    Qwen2_5_VLForConditionalGeneration(cfg).eval().save_pretrained(path)
    return vocab


GEMMA_SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>"]


def make_gemma(root, hidden, layers):
    """A tiny Gemma 3 (Gemma3ForConditionalGeneration, a one-layer SigLIP tower) with a
    word-level tokenizer that starts with <bos>, as Gemma's does."""
    import torch
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration
    torch.manual_seed(6)
    vocab = word_tokenizer(os.path.join(root, "tokenizer"), GEMMA_SPECIALS, "<bos> $A", "<eos>", bos="<bos>")
    n = len(vocab) + 3
    cfg = Gemma3Config(
        text_config=dict(vocab_size=n, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=hidden // 2,
                         max_position_embeddings=2048, sliding_window=64, pad_token_id=0, eos_token_id=1,
                         bos_token_id=2),
        vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                           image_size=28, patch_size=14),
        mm_tokens_per_image=4, image_token_index=n - 1, boi_token_index=n - 3, eoi_token_index=n - 2)
    Gemma3ForConditionalGeneration(cfg).eval().save_pretrained(os.path.join(root, "text_encoder"))
    return vocab


def ltx_connector_tensors(prefix, dim, heads, blocks, regs, gated, g):
    """The official names and random values of one Embeddings1DConnector."""
    import torch
    t = {prefix + "learnable_registers": torch.rand(regs, dim, generator=g) * 2 - 1}
    for i in range(blocks):
        b = "%stransformer_1d_blocks.%d." % (prefix, i)
        for lin, (o, n) in (("attn1.to_q", (dim, dim)), ("attn1.to_k", (dim, dim)), ("attn1.to_v", (dim, dim)),
                            ("attn1.to_out.0", (dim, dim)), ("ff.net.0.proj", (4 * dim, dim)),
                            ("ff.net.2", (dim, 4 * dim))):
            t[b + lin + ".weight"] = torch.randn(o, n, generator=g) / n ** 0.5
            t[b + lin + ".bias"] = torch.randn(o, generator=g) * 0.1
        t[b + "attn1.q_norm.weight"] = 1 + 0.1 * torch.randn(dim, generator=g)
        t[b + "attn1.k_norm.weight"] = 1 + 0.1 * torch.randn(dim, generator=g)
        if gated:
            t[b + "attn1.to_gate_logits.weight"] = torch.randn(heads, dim, generator=g) / dim ** 0.5
            t[b + "attn1.to_gate_logits.bias"] = torch.randn(heads, generator=g) * 0.1
    return t


def make_ltx_checkpoint(path, hidden, layers, v2, video, audio, heads=2, regs=128, seed=7):
    """A one-file LTX-2 checkpoint in the official layout holding only the text projection
    and the two connectors (and a stray DiT tensor): v2 false as LTX-2 19B (one projection
    to hidden, the connectors hidden wide), true as LTX-2.3 (video and audio projections
    with biases, gated connectors)."""
    import torch
    from safetensors.torch import save_file
    g = torch.Generator().manual_seed(seed)
    flat = hidden * (layers + 1)
    t = {"model.diffusion_model.patchify_proj.weight": torch.zeros(4, 4)}
    tcfg = {"rope_type": "split", "connector_num_layers": 2, "connector_num_attention_heads": heads,
            "connector_attention_head_dim": video // heads}
    if v2:
        t["text_embedding_projection.video_aggregate_embed.weight"] = torch.randn(video, flat, generator=g) / flat ** 0.5
        t["text_embedding_projection.video_aggregate_embed.bias"] = torch.randn(video, generator=g) * 0.1
        t["text_embedding_projection.audio_aggregate_embed.weight"] = torch.randn(audio, flat, generator=g) / flat ** 0.5
        t["text_embedding_projection.audio_aggregate_embed.bias"] = torch.randn(audio, generator=g) * 0.1
        tcfg.update({"caption_proj_before_connector": True, "caption_projection_first_linear": False,
                     "caption_proj_input_norm": False, "caption_projection_second_linear": False,
                     "connector_apply_gated_attention": True, "frequencies_precision": "float64",
                     "connector_positional_embedding_max_pos": [4096],
                     "audio_connector_num_attention_heads": heads, "audio_connector_attention_head_dim": audio // heads})
    else:
        assert video == audio == hidden
        t["text_embedding_projection.aggregate_embed.weight"] = torch.randn(hidden, flat, generator=g) / flat ** 0.5
        tcfg["connector_positional_embedding_max_pos"] = [1]
    for s, d in (("video", video), ("audio", audio)):
        t.update(ltx_connector_tensors("model.diffusion_model.%s_embeddings_connector." % s, d, heads, 2, regs, v2, g))
    save_file({k: v.contiguous() for k, v in t.items()}, path,
              metadata={"config": json.dumps({"transformer": tcfg}), "model_version": "2.3.0" if v2 else "2.0.0"})
    return t, tcfg


# ------------------------------------------------------------------ references (the official semantics)

def ref_ltx_features(hs, mask, t, v2, video, audio):
    """ltx_core's FeatureExtractorV1 / V2 in float64: hs [T, D, L], mask [T] (0/1)."""
    import math
    import torch
    T, D, L = hs.shape
    m = mask.bool()
    if not v2:
        n = int(m.sum())
        x = hs[m]
        mean = x.sum(dim=(0, 1)) / (n * D + 1e-6)
        rng = x.amax(dim=(0, 1)) - x.amin(dim=(0, 1))
        normed = (8 * (hs - mean) / (rng + 1e-6)).reshape(T, D * L)
        normed[~m] = 0
        f = normed @ t["text_embedding_projection.aggregate_embed.weight"].double().T
        return f, f
    normed = hs * torch.rsqrt((hs ** 2).mean(dim=1, keepdim=True) + 1e-6)
    normed = normed.reshape(T, D * L)
    normed[~m] = 0
    out = []
    for s, w in (("video", video), ("audio", audio)):
        W = t["text_embedding_projection.%s_aggregate_embed.weight" % s].double()
        b = t["text_embedding_projection.%s_aggregate_embed.bias" % s].double()
        out.append((normed * math.sqrt(w / D)) @ W.T + b)
    return out


def ref_ltx_connector(x, mask, t, prefix, heads, gated, max_pos, f64_freqs, theta=10000.0):
    """ltx_core's Embeddings1DConnector in float64 on x [T, C]: the valid rows first, the
    rest the registers at their positions, 2 blocks (RMSNorm, attention with q/k RMSNorm
    and split RoPE, optional per-head gates, GELU-tanh MLP), a final RMSNorm."""
    import math
    import numpy as np
    import torch
    import torch.nn.functional as Fn
    P = {k[len(prefix):]: v.double() for k, v in t.items() if k.startswith(prefix)}
    T, C = x.shape
    hd = C // heads
    order = torch.argsort((mask == 0).int(), stable=True)
    x = x[order]
    n = int(mask.sum())
    regs = P["learnable_registers"]
    for p in range(n, T):
        x[p] = regs[p % regs.shape[0]]
    nf = C // 2
    # the angles in float32 as the official code computes them (large with max_pos 1)
    if f64_freqs:
        base = torch.from_numpy(np.power(theta, np.linspace(0.0, 1.0, nf)) * math.pi / 2).float()
    else:
        base = theta ** torch.linspace(0.0, 1.0, nf, dtype=torch.float32) * math.pi / 2
    pos = torch.arange(T, dtype=torch.float32) / max_pos
    ang = base[None, :] * (pos[:, None] * 2 - 1)  # [T, C/2], frequency j for head j // (hd/2)
    cos = ang.cos().double().reshape(T, heads, hd // 2)
    sin = ang.sin().double().reshape(T, heads, hd // 2)

    def rope(q):
        q = q.reshape(T, heads, hd)
        a, b = q[..., :hd // 2], q[..., hd // 2:]
        return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)

    def rms(v, w=None):
        v = v * torch.rsqrt((v ** 2).mean(dim=-1, keepdim=True) + 1e-6)
        return v * w if w is not None else v

    def lin(v, name):
        return v @ P[name + ".weight"].T + P[name + ".bias"]

    blocks = sorted({int(k.split(".")[1]) for k in P if k.startswith("transformer_1d_blocks.")})
    for i in blocks:
        b = "transformer_1d_blocks.%d." % i
        h = rms(x)
        q = rope(rms(lin(h, b + "attn1.to_q"), P[b + "attn1.q_norm.weight"]))
        k = rope(rms(lin(h, b + "attn1.to_k"), P[b + "attn1.k_norm.weight"]))
        v = lin(h, b + "attn1.to_v").reshape(T, heads, hd)
        att = torch.softmax(torch.einsum("thd,shd->hts", q, k) / math.sqrt(hd), dim=-1)
        o = torch.einsum("hts,shd->thd", att, v)
        if gated:
            o = o * (2 * torch.sigmoid(lin(h, b + "attn1.to_gate_logits")))[..., None]
        x = x + lin(o.reshape(T, C), b + "attn1.to_out.0")
        x = x + lin(Fn.gelu(lin(rms(x), b + "ff.net.0.proj"), approximate="tanh"), b + "ff.net.2")
    return rms(x)


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
    ENC_PATH[0] = enc
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
    rc, out, err = run([py, enc, "--family", "ltx-9", "--encoder", wan, "--prompt", "x", "--output",
                        os.path.join(w, "x.st")], env)
    T.check(rc == 2 and "ltx-9" in err and "ltx-2" in err, "encode --family unknown: exit 2, the families listed", err)
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
        rc, out, err = run([py, dec, "--vae", wan, "--input", lat, "--output", bad, "--family", "ltx-9"], env)
        T.check(rc == 2 and "ltx-9" in err, "decode --family unknown: exit 2", err)
        rc, out, err = run([py, dec, "--vae", wan, "--input", lat, "--output", bad, "--family", "ltx-2"], env)
        T.check(rc == 1 and "video_latents" in err and not os.path.exists(bad),
                "decode of Wan latents as ltx-2: no tensor 'video_latents', exit 1", err)

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

    # --- Wan2.1 I2V / FLF2V: the image's CLIP features (a ViT-H-wide tower of 2 blocks)
    wan_clip_tests(T, py, enc, ti2v, w, env, prompt, ditstar)

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

    # --- Cosmos-Predict2.5: Cosmos-Reason1 (Qwen2.5-VL) layers normalised and concatenated
    cos = os.path.join(w, "cosmos-pipe")     # tiny-cosmos: crossattn_proj_in_channels 48 = 3 layers x 16
    make_cosmos_encoder(cos, 16, 3)
    make_wan_pipe_vae(cos, 16)
    emod = load_script(enc, "ditstar_encode_cos")
    cctx = os.path.join(w, "cosmos-ctx.safetensors")
    rc, out, err = run([py, enc, "--family", "cosmos-predict2.5", "--encoder", cos, "--prompt", prompt,
                        "--negative-prompt", "low quality", "--text-len", "48", "--output", cctx], env)
    if T.check(rc == 0, "encode cosmos-predict2.5 (Qwen2.5-VL, chat template, 3 layers)", err):
        t, meta = st_read(cctx)
        T.check(sorted(t) == ["crossattn_emb", "neg_crossattn_emb"], "cosmos names: crossattn_emb, neg_crossattn_emb",
                str(sorted(t)))
        T.check(t["crossattn_emb"].shape == (48, 48) and t["crossattn_emb"].dtype == np.float32 and
                t["neg_crossattn_emb"].shape == (48, 48), "cosmos [text_len 48, 3 x 16] F32, every row kept",
                str(t["crossattn_emb"].shape))
        # independently: the conversation written out by hand, padded with the pad token, the
        # whole Qwen2.5-VL run, each layer's state (h - mean) / (std_unbiased + 1e-8) in float64
        from transformers import AutoTokenizer, Qwen2_5_VLForConditionalGeneration
        tok = AutoTokenizer.from_pretrained(os.path.join(cos, "tokenizer"))
        qwen = Qwen2_5_VLForConditionalGeneration.from_pretrained(os.path.join(cos, "text_encoder")).eval()
        for name, text in (("crossattn_emb", prompt), ("neg_crossattn_emb", "low quality")):
            conv = ("<|im_start|>system\n" + emod.COSMOS_SYSTEM + "<|im_end|>\n<|im_start|>user\n" + text +
                    "<|im_end|>\n")
            ids = tok(conv).input_ids
            ids = ids + [tok.pad_token_id] * (48 - len(ids))
            with torch.no_grad():
                hs = qwen(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states
            ref = []
            for h in hs[1:]:
                h = h[0].double().numpy()
                ref.append((h - h.mean(-1, keepdims=True)) / (h.std(-1, ddof=1, keepdims=True) + 1e-8))
            ref = np.concatenate(ref, axis=-1)
            d = float(np.abs(t[name] - ref).max())
            T.check(d < 1e-4, "cosmos %s = the 3 layers after the embeddings, each standardised, concatenated "
                    "(%.2g)" % (name, d))
        T.check(meta.get("layers") == "3" and meta.get("family") == "cosmos-predict2.5", "cosmos metadata: layers 3")
        cdef = os.path.join(w, "cosmos-ctx-default.safetensors")
        rc, out, err = run([py, enc, "--family", "cosmos-predict2.5", "--encoder", cos, "--prompt", prompt,
                            "--text-len", "48", "--output", cdef], env)
        if T.check(rc == 0, "encode cosmos with the official negative prompt", err):
            t2, _ = st_read(cdef)
            T.check(np.array_equal(t2["crossattn_emb"], t["crossattn_emb"]) and
                    not np.array_equal(t2["neg_crossattn_emb"], t["neg_crossattn_emb"]),
                    "the same prompt rows; the default negative prompt is another text")
        clat = os.path.join(w, "cosmos-latents.safetensors")
        rc, out, err = ditstar("generate", "--model", "tiny-cosmos", "--steps", "2", "--context", cctx,
                               "--output", clat, "--save-inputs")
        if T.check(rc == 0, "ditstar generate --model tiny-cosmos --context (encoded)", err.strip()):
            lt, lmeta = st_read(clat)
            T.check(np.array_equal(lt["crossattn_emb"], t["crossattn_emb"]) and
                    np.array_equal(lt["neg_crossattn_emb"], t["neg_crossattn_emb"]),
                    "ditstar read crossattn_emb and neg_crossattn_emb as written")
            cf, cmp4 = os.path.join(w, "cosmos.npy"), os.path.join(w, "cosmos.mp4")
            rc, out, err = run([py, dec, "--vae", cos, "--input", clat, "--frames-out", cf, "--output", cmp4], env)
            if T.check(rc == 0, "decode cosmos-predict2.5 (the Wan2.1 VAE, 16 channels)", err):
                z = lt["latents"]
                C, F, H, W = z.shape
                cfg = json.load(open(os.path.join(cos, "vae", "config.json")))
                inv = (1.0 / np.asarray(cfg["latents_std"], np.float32)).astype(np.float32)
                x = z / inv[:, None, None, None] + np.asarray(cfg["latents_mean"], np.float32)[:, None, None, None]
                from diffusers import AutoencoderKLWan
                vae = AutoencoderKLWan.from_pretrained(os.path.join(cos, "vae")).eval()
                with torch.no_grad():
                    v = vae.decode(torch.from_numpy(x)[None]).sample[0]
                mine = ((v.clamp(-1, 1) + 1) / 2 * 255).to(torch.uint8).permute(1, 2, 3, 0).numpy()
                fr = np.load(cf)
                T.check(C == 16 and fr.shape == (4 * (F - 1) + 1, 8 * H, 8 * W, 3) and np.array_equal(fr, mine),
                        "cosmos frames = decode of z / (1/std) + mean with the config's tables", str(fr.shape))
                import imageio.v2 as iio
                rd = iio.get_reader(cmp4, "ffmpeg")
                T.check(abs(float(rd.get_meta_data().get("fps", 0)) - 16) < 0.01, "cosmos mp4 at 16 fps")
                rd.close()
    bad = os.path.join(w, "bad-cos.safetensors")
    rc, out, err = run([py, enc, "--family", "cosmos-predict2.5", "--encoder", wan, "--prompt", prompt,
                        "--output", bad], env)
    T.check(rc == 1 and "chat template" in err and len(err.strip().splitlines()) == 1 and not os.path.exists(bad)
            and not leftovers(w, "bad-cos.safetensors"), "cosmos with umT5's tokenizer (no chat template): exit 1", err)
    rc, out, err = run([py, enc, "--family", "cosmos-predict2.5", "--encoder", cos, "--checkpoint", cctx,
                        "--prompt", prompt, "--output", bad], env)
    T.check(rc == 2 and "--checkpoint" in err and not os.path.exists(bad), "cosmos --checkpoint refused: exit 2", err)

    # --- LTX-2: Gemma 3, the feature extractor, the checkpoint's connectors
    ltx = os.path.join(w, "ltx-pipe")        # Gemma 3 of 48 x (3 + 1); tiny-ltx2 48 / 48, tiny-ltx2.3 64 / 32
    make_gemma(ltx, 48, 3)
    ck19 = os.path.join(w, "ltx-2-tiny.safetensors")
    ck23 = os.path.join(w, "ltx-2.3-tiny.safetensors")
    t19, c19 = make_ltx_checkpoint(ck19, 48, 3, False, 48, 48)
    t23, c23 = make_ltx_checkpoint(ck23, 48, 3, True, 64, 32)
    from transformers import AutoTokenizer, Gemma3ForConditionalGeneration
    gtok = AutoTokenizer.from_pretrained(os.path.join(ltx, "tokenizer"))
    gemma = Gemma3ForConditionalGeneration.from_pretrained(os.path.join(ltx, "text_encoder")).eval()
    ltx_ctx = {}
    for ver, ck, tt, v2, vw, aw, preset in (("19B", ck19, t19, False, 48, 48, "tiny-ltx2"),
                                            ("2.3", ck23, t23, True, 64, 32, "tiny-ltx2.3")):
        lctx = os.path.join(w, "ltx-ctx-%s.safetensors" % ver)
        rc, out, err = run([py, enc, "--family", "ltx-2", "--encoder", ltx, "--checkpoint", ck, "--prompt",
                            " " + prompt + " ", "--negative-prompt", "low quality", "--text-len", "128",
                            "--output", lctx], env)
        if not T.check(rc == 0, "encode ltx-2 (%s connectors from the one-file checkpoint)" % ver, err):
            continue
        t, meta = st_read(lctx)
        ltx_ctx[ver] = (lctx, t)
        T.check(sorted(t) == ["audio_context", "audio_context_negative", "video_context", "video_context_negative"],
                "ltx-2 %s names: video_context, audio_context and _negative" % ver, str(sorted(t)))
        T.check(t["video_context"].shape == (128, vw) and t["audio_context"].shape == (128, aw) and
                t["video_context_negative"].shape == (128, vw) and t["video_context"].dtype == np.float32,
                "ltx-2 %s shapes [128, %d] and [128, %d] F32" % (ver, vw, aw), str(t["video_context"].shape))
        for suffix, text in (("", prompt), ("_negative", "low quality")):
            ids = gtok(text).input_ids  # <bos> and the words
            n = len(ids)
            ids = [gtok.pad_token_id] * (128 - n) + ids
            mask = torch.tensor([0] * (128 - n) + [1] * n)
            with torch.no_grad():
                hs = gemma(input_ids=torch.tensor([ids]), attention_mask=mask[None],
                           output_hidden_states=True).hidden_states
            x = torch.stack([h[0] for h in hs], dim=-1).double()  # [T, D, L]
            fv, fa = ref_ltx_features(x, mask, tt, v2, vw, aw)
            mp = c19["connector_positional_embedding_max_pos"][0] if not v2 else 4096
            rv = ref_ltx_connector(fv, mask, tt, "model.diffusion_model.video_embeddings_connector.", 2, v2, mp, v2)
            ra = ref_ltx_connector(fa, mask, tt, "model.diffusion_model.audio_embeddings_connector.", 2, v2, mp, v2)
            dv = float(np.abs(t["video_context" + suffix] - rv.numpy()).max())
            da = float(np.abs(t["audio_context" + suffix] - ra.numpy()).max())
            T.check(dv < 2e-4 and da < 2e-4, "ltx-2 %s video/audio_context%s = the official feature extractor and "
                    "connectors computed here (%.2g, %.2g)" % (ver, suffix, dv, da))
        T.check(meta.get("ltx_text_features") == ("2.3" if v2 else "2"), "ltx-2 %s metadata: the feature version" % ver)
        lat = os.path.join(w, "ltx-latents-%s.safetensors" % ver)
        rc, out, err = ditstar("generate", "--model", preset, "--steps", "2", "--stg-blocks", "1", "--context", lctx,
                               "--output", lat)
        if T.check(rc == 0, "ditstar generate --model %s --context (encoded)" % preset, err.strip()):
            lat0 = os.path.join(w, "ltx-latents0-%s.safetensors" % ver)
            rc, out, err = ditstar("generate", "--model", preset, "--steps", "2", "--stg-blocks", "1", "--output", lat0)
            if rc == 0:
                T.check(not np.array_equal(st_read(lat)[0]["video_latents"], st_read(lat0)[0]["video_latents"]),
                        "%s: the encoded context changes the latents (it is read)" % preset)
            ltx_ctx[ver] = (lctx, t, lat)
    # the same 19B connectors from a diffusers folder (LTX2TextConnectors), the names mapped back
    if "19B" in ltx_ctx and len(ltx_ctx["19B"]) == 3:
        from diffusers.pipelines.ltx2.connectors import LTX2TextConnectors
        dconn = LTX2TextConnectors(caption_channels=48, text_proj_in_factor=4, video_connector_num_attention_heads=2,
                                   video_connector_attention_head_dim=24, audio_connector_num_attention_heads=2,
                                   audio_connector_attention_head_dim=24, connector_rope_base_seq_len=1,
                                   rope_double_precision=False, rope_type="split")
        sd = {}
        for k, v in t19.items():
            k = k.replace("text_embedding_projection.aggregate_embed.", "text_proj_in.")
            k = k.replace("model.diffusion_model.video_embeddings_connector.", "video_connector.")
            k = k.replace("model.diffusion_model.audio_embeddings_connector.", "audio_connector.")
            k = k.replace("transformer_1d_blocks", "transformer_blocks").replace("q_norm", "norm_q").replace("k_norm",
                                                                                                             "norm_k")
            if not k.startswith("model."):
                sd[k] = v
        dconn.load_state_dict(sd, strict=True)
        dconn.save_pretrained(os.path.join(w, "ltx-diffusers", "connectors"))
        dctx = os.path.join(w, "ltx-ctx-diffusers.safetensors")
        rc, out, err = run([py, enc, "--family", "ltx-2", "--encoder", ltx, "--checkpoint",
                            os.path.join(w, "ltx-diffusers"), "--prompt", " " + prompt + " ", "--negative-prompt",
                            "low quality", "--text-len", "128", "--output", dctx], env)
        if T.check(rc == 0, "encode ltx-2 with a diffusers connectors/ folder", err):
            td, _ = st_read(dctx)
            t = ltx_ctx["19B"][1]
            d = max(float(np.abs(td[k] - t[k]).max()) for k in t)
            T.check(d < 1e-5, "the same contexts as from the one-file checkpoint (%.2g)" % d)
    bad = os.path.join(w, "bad-ltx.safetensors")
    for what, args, code, word in (
            ("without --checkpoint", [], 2, "--checkpoint"),
            ("--text-len not a multiple of the 128 registers", ["--checkpoint", ck19, "--text-len", "100"], 2, "128"),
            ("a --checkpoint without connectors", ["--checkpoint", os.path.join(wan, "vae",
                                                   "diffusion_pytorch_model.safetensors")], 1, "config"),
            ("a --checkpoint that is not safetensors", ["--checkpoint", os.path.join(wan, "vae", "config.json")], 1,
             "safetensors"),
            ("a missing --checkpoint", ["--checkpoint", os.path.join(w, "nothing.safetensors")], 2, "nothing")):
        rc, out, err = run([py, enc, "--family", "ltx-2", "--encoder", ltx, "--prompt", prompt, "--output", bad] + args,
                           env)
        T.check(rc == code and word in err and len(err.strip().splitlines()) == 1 and not os.path.exists(bad) and
                not leftovers(w, "bad-ltx.safetensors"), "ltx-2 %s: one line, exit %d, no output" % (what, code), err)
    rc, out, err = run([py, enc, "--family", "ltx-2", "--encoder", cos, "--checkpoint", ck19, "--prompt", prompt,
                        "--text-len", "128", "--output", bad], env)
    T.check(rc == 1 and len(err.strip().splitlines()) == 1 and not os.path.exists(bad),
            "ltx-2 with an encoder the connectors do not fit: one line, exit 1", err)

    # --- LTX-2 decode: AutoencoderKLLTX2Video, z * std + mean with the VAE's statistics
    if "19B" in ltx_ctx and len(ltx_ctx["19B"]) == 3:
        lat = ltx_ctx["19B"][2]
        make_ltx_vae(ltx, 16)
        make_ltx_audio(ltx)
        lf, lmp4, lwav = os.path.join(w, "ltx.npy"), os.path.join(w, "ltx.mp4"), os.path.join(w, "ltx.wav")
        rc, out, err = run([py, dec, "--vae", ltx, "--input", lat, "--frames-out", lf, "--output", lmp4,
                            "--audio-out", lwav], env)
        if T.check(rc == 0, "decode ltx-2 video_latents (AutoencoderKLLTX2Video)", err):
            z = st_read(lat)[0]["video_latents"]
            C, F, H, W = z.shape
            stats = st_read(os.path.join(ltx, "vae", "diffusion_pytorch_model.safetensors"))[0]
            mean, std = stats["latents_mean"].astype(np.float64), stats["latents_std"].astype(np.float64)
            ref = z.astype(np.float64) * std[:, None, None, None] + mean[:, None, None, None]
            dmod = load_script(dec, "ditstar_decode_ltx")
            from diffusers import AutoencoderKLLTX2Video
            vae = AutoencoderKLLTX2Video.from_pretrained(os.path.join(ltx, "vae")).eval()
            got = dmod.unnormalize(z, "ltx2", vae, "t")
            d = float(np.abs(got - ref).max() / np.abs(ref).max())
            T.check(d < 1e-6 and float(np.abs(std - 1).max()) > 0.1,
                    "ltx-2 un-normalised = z * std + mean with the VAE's per-channel statistics (rel %.2g)" % d)
            with torch.no_grad():
                v = vae.decode(torch.from_numpy(got)[None]).sample[0]
            mine = ((v.clamp(-1, 1) + 1) / 2 * 255).to(torch.uint8).permute(1, 2, 3, 0).numpy()
            fr = np.load(lf)
            T.check(fr.shape == (8 * (F - 1) + 1, 32 * H, 32 * W, 3) and np.array_equal(fr, mine),
                    "ltx-2 frames [8(F-1)+1, 32H, 32W, 3] = the VAE's decode of those latents", str(fr.shape))
            lf2 = os.path.join(w, "ltx2.npy")
            rc, out, err = run([py, dec, "--vae", os.path.join(ltx, "vae"), "--input", lat, "--frames-out", lf2], env)
            T.check(rc == 0 and np.array_equal(np.load(lf2), fr), "ltx-2 decoded again: the same frames", err)
            import imageio.v2 as iio
            rd = iio.get_reader(lmp4, "ffmpeg")
            n = sum(1 for _ in rd)
            T.check(n == fr.shape[0] and abs(float(rd.get_meta_data().get("fps", 0)) - 24) < 0.01,
                    "ltx-2 mp4: %d frames at 24 fps" % fr.shape[0], "read %d" % n)
            rd.close()
            # the audio: patchified [T, 128], z * std + mean with the audio VAE's statistics, decoded, vocoded
            import wave
            from diffusers import AutoencoderKLLTX2Audio
            from diffusers.pipelines.ltx2.vocoder import LTX2Vocoder
            za = st_read(lat)[0]["audio_latents"]
            Ca, Ta, Ma = za.shape
            ast_ = st_read(os.path.join(ltx, "audio_vae", "diffusion_pytorch_model.safetensors"))[0]
            pa = za.transpose(1, 0, 2).reshape(Ta, Ca * Ma) * ast_["latents_std"] + ast_["latents_mean"]
            xa = pa.reshape(Ta, Ca, Ma).transpose(1, 0, 2).astype(np.float32)
            avae = AutoencoderKLLTX2Audio.from_pretrained(os.path.join(ltx, "audio_vae")).eval()
            voc = LTX2Vocoder.from_pretrained(os.path.join(ltx, "vocoder")).eval()
            with torch.no_grad():
                ref = voc(avae.decode(torch.from_numpy(np.ascontiguousarray(xa))[None]).sample)[0]
            ref = np.round(ref.clamp(-1, 1).numpy().T * 32767).astype(np.int16)
            with wave.open(lwav, "rb") as wf:
                got = np.frombuffer(wf.readframes(wf.getnframes()), "<i2").reshape(-1, wf.getnchannels())
                rate = wf.getframerate()
            T.check(rate == 8000 and got.shape == ref.shape == (80 * (4 * Ta - 3), 2),
                    "ltx-2 --audio-out: a stereo WAV at the vocoder's 8000 Hz, 80 samples a mel frame",
                    "%s %s %d" % (got.shape, ref.shape, rate))
            if got.shape == ref.shape:
                d = int(np.abs(got.astype(np.int32) - ref).max())
                T.check(d <= 1 and np.abs(ref).max() > 100,
                        "ltx-2 audio = the vocoder of the audio VAE's decode of z * std + mean (max %d LSB)" % d)
            T.check(len(audio_streams(lmp4)) == 1 and "aac" in audio_streams(lmp4)[0],
                    "ltx-2 mp4 holds the AAC audio track", str(audio_streams(lmp4)))
            T.check(not leftovers(w, "ltx.mp4.wav") and not [f for f in os.listdir(w) if f.endswith(".wav.tmp")],
                    "no WAV of the mp4's audio is left behind")
            nmp4 = os.path.join(w, "ltx-mute.mp4")
            rc, out, err = run([py, dec, "--vae", ltx, "--input", lat, "--output", nmp4, "--no-audio"], env)
            T.check(rc == 0 and audio_streams(nmp4) == [], "ltx-2 --no-audio: an mp4 without audio", err)
            rc, out, err = run([py, dec, "--vae", os.path.join(ltx, "vae"), "--input", lat, "--output", nmp4,
                                "--audio-out", lwav + "2"], env)
            T.check(rc == 2 and "audio_vae" in err and not os.path.exists(lwav + "2"),
                    "ltx-2 --audio-out with a VAE folder without audio_vae/: exit 2", err)
        bad = os.path.join(w, "bad-ltx.mp4")
        rc, out, err = run([py, dec, "--vae", ltx, "--input", lat, "--output", bad, "--family", "wan2.1-t2v"], env)
        T.check(rc == 1 and "'latents'" in err and not os.path.exists(bad),
                "decode of LTX-2 latents as wan2.1-t2v: no tensor 'latents', exit 1", err)
        rc, out, err = run([py, dec, "--vae", wan, "--input", lat, "--output", bad], env)
        T.check(rc == 1 and len(err.strip().splitlines()) == 1 and not os.path.exists(bad),
                "decode of LTX-2 latents with a Wan VAE: one line, exit 1", err)
        rc, out, err = run([py, dec, "--vae", cos, "--input", os.path.join(w, "cosmos-latents.safetensors"),
                            "--audio-out", os.path.join(w, "bad.wav")], env)
        T.check(rc == 2 and "--audio-out" in err and not os.path.exists(os.path.join(w, "bad.wav")),
                "--audio-out of Cosmos latents: exit 2", err)
        condition_latent_tests(T, py, w, env, ditstar, ti2v, ltx)

    if not a.keep:
        shutil.rmtree(w, ignore_errors=True)
    else:
        print("# kept %s" % w)
    print("%d passed, %d failed" % (T.passed, T.failed))
    return 1 if T.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
