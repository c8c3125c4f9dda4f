"""Rewrites a checkpoint of the official Wan layout in diffusers' layout, the way
diffusers' scripts/convert_wan_to_diffusers.py names things: the config.json of
WanTransformer3DModel (no model_type; heads x head_dim instead of dim; in/out
channels) and the state-dict names of its modules, over the same tensor values.

    to_diffusers.py SRC DST [--shards N]

SRC is one checkpoint (config.json and shards); DST receives the diffusers one."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wan_ref  # noqa: E402

# Substring replacements in the order diffusers applies them; norm2 and norm3 swap
# (the official block calls norm1, norm3, norm2).
RENAMES = [
    ("time_embedding.0", "condition_embedder.time_embedder.linear_1"),
    ("time_embedding.2", "condition_embedder.time_embedder.linear_2"),
    ("text_embedding.0", "condition_embedder.text_embedder.linear_1"),
    ("text_embedding.2", "condition_embedder.text_embedder.linear_2"),
    ("time_projection.1", "condition_embedder.time_proj"),
    ("head.modulation", "scale_shift_table"),
    ("head.head", "proj_out"),
    ("modulation", "scale_shift_table"),
    ("ffn.0", "ffn.net.0.proj"),
    ("ffn.2", "ffn.net.2"),
    ("norm2", "norm__placeholder"),
    ("norm3", "norm2"),
    ("norm__placeholder", "norm3"),
    ("img_emb.proj.0", "condition_embedder.image_embedder.norm1"),
    ("img_emb.proj.1", "condition_embedder.image_embedder.ff.net.0.proj"),
    ("img_emb.proj.3", "condition_embedder.image_embedder.ff.net.2"),
    ("img_emb.proj.4", "condition_embedder.image_embedder.norm2"),
    ("img_emb.emb_pos", "condition_embedder.image_embedder.pos_embed"),
    # Wan2.1 I2V's image keys (before cross_attn.k, whose name they begin with)
    ("cross_attn.k_img", "attn2.add_k_proj"),
    ("cross_attn.v_img", "attn2.add_v_proj"),
    ("cross_attn.norm_k_img", "attn2.norm_added_k"),
    ("self_attn.q", "attn1.to_q"),
    ("self_attn.k", "attn1.to_k"),
    ("self_attn.v", "attn1.to_v"),
    ("self_attn.o", "attn1.to_out.0"),
    ("self_attn.norm_q", "attn1.norm_q"),
    ("self_attn.norm_k", "attn1.norm_k"),
    ("cross_attn.q", "attn2.to_q"),
    ("cross_attn.k", "attn2.to_k"),
    ("cross_attn.v", "attn2.to_v"),
    ("cross_attn.o", "attn2.to_out.0"),
    ("cross_attn.norm_q", "attn2.norm_q"),
    ("cross_attn.norm_k", "attn2.norm_k"),
]


def rename(name):
    for a, b in RENAMES:
        name = name.replace(a, b)
    return name


def config(cfg):
    heads = cfg["num_heads"]
    return {
        "_class_name": "WanTransformer3DModel",
        "_diffusers_version": "0.35.0",
        "added_kv_proj_dim": None,
        "attention_head_dim": cfg["dim"] // heads,
        "cross_attn_norm": True,
        "eps": cfg["eps"],
        "ffn_dim": cfg["ffn_dim"],
        "freq_dim": cfg["freq_dim"],
        "image_dim": None,
        "in_channels": cfg["in_dim"],
        "num_attention_heads": heads,
        "num_layers": cfg["num_layers"],
        "out_channels": cfg["out_dim"],
        "patch_size": list(cfg.get("patch_size", [1, 2, 2])),
        "qk_norm": "rms_norm_across_heads",
        "rope_max_seq_len": 1024,
        "text_dim": cfg.get("text_dim", 4096),
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--shards", type=int, default=1)
    a = p.parse_args()
    with open(os.path.join(a.src, "config.json")) as f:
        raw = json.load(f)
    conf = config(raw)
    # diffusers' file has no text_len (its pipelines pad prompts to 512 tokens); the
    # tiny test models keep theirs under that name, which ditstar reads
    if raw.get("text_len", 512) != 512:
        conf["text_len"] = raw["text_len"]
    _, W = wan_ref.load_model(a.src)
    W = {rename(k): v.astype("float32") for k, v in W.items()}
    wan_ref.save_checkpoint(a.dst, conf, W, shards=a.shards)


if __name__ == "__main__":
    main()
