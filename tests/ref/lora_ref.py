"""LoRA files for a Wan or HunyuanVideo checkpoint of the official layout, in the
formats users have, and their float64 merge: the reference ditstar's --lora is checked
against.

    lora_ref.py make --model-dir DIR --output FILE --format F [--rank R] [--seed S]
                     [--alpha A] [--dtype BF16|F32] [--family wan|hunyuan]
    lora_ref.py merge --model-dir DIR --lora FILE[:STRENGTH] ... --output-dir OUT
                      [--family wan|hunyuan]

Formats (the key names each tool writes; ComfyUI's comfy/lora.py reads them all):
  comfy   diffusion_model.<module>.lora_down.weight / .lora_up.weight / .alpha
          (ComfyUI, lightx2v, musubi-tuner's ComfyUI export), plus
          diffusion_model.<module>.diff_b bias deltas and .diff for norms and the
          modulation table
  kohya   lora_unet_<module with '_' for '.'>.lora_down.weight / .lora_up.weight / .alpha
  peft    transformer.<diffusers module>.lora_A.weight / .lora_B.weight (diffusers,
          PEFT; no alpha: the scale is 1)

Any checkpoint folder (--family any, for every family): ComfyUI-style factors of every 2-D
weight under the names its files store.

HunyuanVideo (--family hunyuan): peft only, diffusers' module names
(transformer_blocks.N.attn.to_q, single_transformer_blocks.N.proj_mlp, ...), whose
rows land in the official fused tensors (img_attn_qkv, linear1) as diffusers' converter
splits them (hunyuan_ref.diffusers_table).

The merge, as ComfyUI computes it: W += strength * (alpha / rank) * up @ down (alpha:
the rank when absent), W += strength * diff, b += strength * diff_b, in float64. The
merged checkpoint is written in F64, so that wan_ref.py's forward on it is the
reference of the merged model."""
import argparse
import glob
import os
import re
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np as st  # noqa: E402
import hunyuan_ref  # noqa: E402
import to_diffusers  # noqa: E402
import wan_ref  # noqa: E402

SUFFIXES = [(".lora_down.weight", "down"), (".lora_up.weight", "up"),
            (".lora_A.weight", "down"), (".lora_B.weight", "up"), (".alpha", "alpha"),
            (".diff_b", "diff_b"), (".diff", "diff")]
PREFIXES = ["diffusion_model.", "transformer.", "lora_unet_"]


def modules(W):
    """The 2-D weights a LoRA trains: every block linear, the head, the text MLP."""
    return sorted(k[:-len(".weight")] for k, v in W.items()
                  if k.endswith(".weight") and v.ndim == 2)


def make_hunyuan(a):
    """Diffusers-named factors of every 2-D weight, its rows as diffusers splits them."""
    cfg, _ = hunyuan_ref.load_model(a.model_dir)
    shapes = hunyuan_ref.tensor_shapes(cfg)
    r = np.random.default_rng(a.seed)
    out = {}
    for dn, on, rows in hunyuan_ref.diffusers_table(cfg):
        if not dn.endswith(".weight") or len(shapes[on]) != 2:
            continue
        n = sum(b - q for q, b in rows) if rows else shapes[on][0]
        key = "transformer." + dn[:-len(".weight")]
        out[key + ".lora_A.weight"] = r.standard_normal((a.rank, shapes[on][1])) * 0.2
        out[key + ".lora_B.weight"] = r.standard_normal((n, a.rank)) * 0.2
    st.save(a.output, {k: np.asarray(v, dtype=np.float32) for k, v in out.items()},
            dtype=a.dtype)


def merge_hunyuan(a):
    cfg, W = hunyuan_ref.load_model(a.model_dir)
    table = {dn[:-len(".weight")]: (on, rows) for dn, on, rows in hunyuan_ref.diffusers_table(cfg)
             if dn.endswith(".weight")}
    for path, strength in specs(a.lora):
        for base, g in groups_of(st.load(path, float64=True)).items():
            on, rows = table[base[len("transformer."):]]
            rank = g["down"].shape[0]
            delta = strength * (float(g.get("alpha", rank)) / rank) * (g["up"] @ g["down"])
            at = 0
            for q, b in (rows or [(0, W[on].shape[0])]):
                W[on] = W[on].copy()
                W[on][q:b] += delta[at:at + b - q]
                at += b - q
    os.makedirs(a.output_dir, exist_ok=True)
    shutil.copy(os.path.join(a.model_dir, "config.json"), os.path.join(a.output_dir, "config.json"))
    st.save(os.path.join(a.output_dir, "model.safetensors"), W, dtype="F64")


def specs(loras):
    """--lora FILE[:STRENGTH] -> [(file, strength)]."""
    out = []
    for spec in loras:
        m = re.match(r"(.*):([-+0-9.eE]+)$", spec)
        out.append((m.group(1), float(m.group(2))) if m else (spec, 1.0))
    return out


def groups_of(L):
    """A LoRA's tensors by module: {base: {role: array}}."""
    groups = {}
    for k, v in L.items():
        for suf, role in SUFFIXES:
            if k.endswith(suf):
                groups.setdefault(k[:-len(suf)], {})[role] = v
                break
        else:
            raise KeyError(k)
    return groups


def make_any(a):
    """ComfyUI-style factors for every 2-D weight of any checkpoint folder, under the names
    its files store them ("diffusion_model." before them)."""
    r = np.random.default_rng(a.seed)
    out = {}
    for f in sorted(glob.glob(os.path.join(a.model_dir, "*.safetensors"))):
        for k, v in st.read_header(f)[0].items():
            if k == "__metadata__" or not k.endswith(".weight") or len(v["shape"]) != 2:
                continue
            rows, cols = v["shape"]
            base = "diffusion_model." + k[:-len(".weight")]
            out[base + ".lora_down.weight"] = r.standard_normal((a.rank, cols)) * 0.1
            out[base + ".lora_up.weight"] = r.standard_normal((rows, a.rank)) * 0.1
    st.save(a.output, {k: np.asarray(v, dtype=np.float32) for k, v in out.items()},
            dtype=a.dtype)


def cmd_make(a):
    if a.family == "any":
        return make_any(a)
    if a.family == "hunyuan":
        return make_hunyuan(a)
    _, W = wan_ref.load_model(a.model_dir)
    r = np.random.default_rng(a.seed)
    out = {}
    for m in modules(W):
        rows, cols = W[m + ".weight"].shape
        down = r.standard_normal((a.rank, cols)) * 0.2
        up = r.standard_normal((rows, a.rank)) * 0.2
        if a.format == "comfy":
            key = "diffusion_model." + m
            out[key + ".lora_down.weight"], out[key + ".lora_up.weight"] = down, up
            out[key + ".alpha"] = np.array(a.alpha if a.alpha else a.rank, dtype=np.float32)
        elif a.format == "kohya":
            key = "lora_unet_" + m.replace(".", "_")
            out[key + ".lora_down.weight"], out[key + ".lora_up.weight"] = down, up
            out[key + ".alpha"] = np.array(a.alpha if a.alpha else a.rank, dtype=np.float32)
        else:
            key = "transformer." + to_diffusers.rename(m)
            out[key + ".lora_A.weight"], out[key + ".lora_B.weight"] = down, up
    if a.format == "comfy":  # full deltas: biases, a norm, the modulation table
        for k in sorted(W):
            if k.startswith("blocks.0.") and k.endswith(".bias") and W[k].ndim == 1:
                out["diffusion_model." + k[:-len(".bias")] + ".diff_b"] = \
                    r.standard_normal(W[k].shape) * 0.1
        out["diffusion_model.blocks.1.norm3.diff"] = r.standard_normal(W["blocks.1.norm3.weight"].shape) * 0.1
        out["diffusion_model.blocks.1.modulation.diff"] = r.standard_normal(W["blocks.1.modulation"].shape) * 0.1
    st.save(a.output, {k: np.asarray(v, dtype=np.float32) for k, v in out.items()},
            dtype=a.dtype)


def official_name(base, W):
    """The official weight a LoRA module names (prefixes cut; kohya's '_' and diffusers'
    names mapped back)."""
    for p in PREFIXES:
        if base.startswith(p):
            base = base[len(p):]
    by_norm = {}
    for k in W:
        for stem in (k[:-len(".weight")] if k.endswith(".weight") else None,
                     k[:-len(".bias")] if k.endswith(".bias") else None, k):
            if stem:
                by_norm.setdefault(stem.replace(".", "_"), stem)
                by_norm.setdefault(to_diffusers.rename(stem).replace(".", "_"), stem)
    return by_norm[base.replace(".", "_")]


def cmd_merge(a):
    if a.family == "hunyuan":
        return merge_hunyuan(a)
    cfg_path = os.path.join(a.model_dir, "config.json")
    _, W = wan_ref.load_model(a.model_dir)
    for path, strength in specs(a.lora):
        for base, g in groups_of(st.load(path, float64=True)).items():
            name = official_name(base, W)
            if "down" in g:
                rank = g["down"].shape[0]
                alpha = float(g["alpha"]) if "alpha" in g else rank
                w = name + ".weight"
                W[w] = W[w] + strength * (alpha / rank) * (g["up"] @ g["down"]).reshape(W[w].shape)
            if "diff" in g:
                w = name + ".weight" if name + ".weight" in W else name
                W[w] = W[w] + strength * g["diff"].reshape(W[w].shape)
            if "diff_b" in g:
                W[name + ".bias"] = W[name + ".bias"] + strength * g["diff_b"]
    os.makedirs(a.output_dir, exist_ok=True)
    shutil.copy(cfg_path, os.path.join(a.output_dir, "config.json"))
    st.save(os.path.join(a.output_dir, wan_ref.SINGLE_NAME), W, dtype="F64")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--model-dir", required=True)
    m.add_argument("--output", required=True)
    m.add_argument("--format", choices=["comfy", "kohya", "peft"], required=True)
    m.add_argument("--rank", type=int, default=4)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--alpha", type=float, default=0)
    m.add_argument("--dtype", default="F32")
    m.add_argument("--family", choices=["wan", "hunyuan", "any"], default="wan")
    g = sub.add_parser("merge")
    g.add_argument("--model-dir", required=True)
    g.add_argument("--lora", action="append", required=True)
    g.add_argument("--output-dir", required=True)
    g.add_argument("--family", choices=["wan", "hunyuan"], default="wan")
    a = p.parse_args()
    {"make": cmd_make, "merge": cmd_merge}[a.cmd](a)


if __name__ == "__main__":
    main()
