/* The Wan checkpoint formats: the official code's (config.json of WanModel, the
 * state-dict names of wan/modules/model.py; Wan2.2's experts in high_noise_model/ and
 * low_noise_model/) and diffusers' (WanTransformer3DModel: other config keys, other
 * tensor names for the same tensors; Wan2.2's experts in transformer/ and
 * transformer_2/, a one-checkpoint pipeline's in transformer/). */
#include <stdio.h>
#include <string.h>

#include "dit_model_desc.h"
#include "dit_wan.h"
#define PATCH                                                                                      \
	{                                                                                          \
		"patch_size", offsetof(dit_hparams, patch), DIT_CK_INT3, 0, {1, 2, 2}, 1, 256      \
	}

static const char *const wan_types[] = {"t2v", "i2v", "ti2v", "flf2v", NULL};

/* dim must divide into heads of an even head_dim of at least 6 (3-axis RoPE). */
static int wan_config_check(const dit_hparams *hp, char *why, size_t len)
{
	if (hp->freq_dim % 2 != 0) {
		snprintf(why, len, "key 'freq_dim' must be even (got %lld)",
		         (long long)hp->freq_dim);
		return 0;
	}
	if (hp->dim > ((int64_t)1 << 20)) {
		snprintf(why, len, "dim = num_heads x head_dim = %lld is implausibly large",
		         (long long)hp->dim);
		return 0;
	}
	if (hp->dim % hp->num_heads != 0) {
		snprintf(why, len, "key 'dim' (%lld) is not divisible by 'num_heads' (%lld)",
		         (long long)hp->dim, (long long)hp->num_heads);
		return 0;
	}
	if (!hp->image_dim && (hp->image_tokens || hp->added_kv_dim)) {
		snprintf(why, len, "key '%s' is set (%lld) without 'image_dim' (an image embedder)",
		         hp->image_tokens ? "pos_embed_seq_len" : "added_kv_proj_dim",
		         (long long)(hp->image_tokens ? hp->image_tokens : hp->added_kv_dim));
		return 0;
	}
	if (hp->image_dim && hp->added_kv_dim && hp->added_kv_dim != hp->dim) {
		snprintf(why, len,
		         "key 'added_kv_proj_dim' (%lld) must be the model's width %lld with an "
		         "image embedder (image_dim %lld)",
		         (long long)hp->added_kv_dim, (long long)hp->dim, (long long)hp->image_dim);
		return 0;
	}
	int64_t hd = hp->dim / hp->num_heads;
	if (hd % 2 != 0 || hd < 6) {
		snprintf(why, len,
		         "head_dim = dim / num_heads = %lld must be even and at least 6 (3-axis "
		         "RoPE)",
		         (long long)hd);
		return 0;
	}
	return 1;
}

/* ------------------------------------------------------------------ official */

static const dit_config_key official_keys[] = {
    DIT_KEY_INT("dim", dim),
    DIT_KEY_INT("ffn_dim", ffn_dim),
    DIT_KEY_INT("freq_dim", freq_dim),
    DIT_KEY_INT("in_dim", in_dim),
    DIT_KEY_INT("out_dim", out_dim),
    DIT_KEY_INT("num_heads", num_heads),
    DIT_KEY_INT("num_layers", layers[0]),
    DIT_KEY_INT("text_len", text_len),
    DIT_KEY_OPT("text_dim", text_dim, 4096),
    PATCH,
    {"eps", offsetof(dit_hparams, eps), DIT_CK_REAL, 1, {0}, 0, 0},
};

static const dit_config_extra official_extra[] = {
    {"_class_name", DIT_CT_STRING, NULL},
    {"_diffusers_version", DIT_CT_STRING, NULL},
    /* WanModel's architecture switches (absent in the released files: on) */
    {"qk_norm", DIT_CT_BOOL, "true"},
    {"cross_attn_norm", DIT_CT_BOOL, "true"},
    {"window_size", DIT_CT_INT2, NULL},
};

static void official_derive(dit_hparams *hp)
{
	hp->head_dim = hp->num_heads > 0 ? hp->dim / hp->num_heads : 0;
}

const dit_config_desc dit_wan_config_desc = {
    .class_name = "WanModel",
    .model_type_key = 1,
    .model_types = wan_types,
    .keys = official_keys,
    .nkeys = (int)(sizeof official_keys / sizeof official_keys[0]),
    .extra = official_extra,
    .nextra = (int)(sizeof official_extra / sizeof official_extra[0]),
    .derive = official_derive,
    .check = wan_config_check,
};

/* ComfyUI's files (single checkpoints, scaled fp8, GGUF) hold the same names, bare or
 * after its diffusion model's prefix: read when the bare name is absent. */
const dit_format_desc dit_wan_official = {
    .name = "official",
    .config = &dit_wan_config_desc,
    .expert = {"high_noise_model", "low_noise_model"},
    .alt_prefix = "model.diffusion_model.",
    .alt_exclusive = 1,
};

/* ------------------------------------------------------------------ diffusers */

/* an optional size, 0 (none) when absent or null */
#define IMG_KEY(k, f)                                                                              \
	{                                                                                          \
		k, offsetof(dit_hparams, f), DIT_CK_INT, 0, {0}, 0, 1 << 20                        \
	}

static const dit_config_key diffusers_keys[] = {
    DIT_KEY_INT("num_attention_heads", num_heads),
    DIT_KEY_INT("attention_head_dim", head_dim),
    DIT_KEY_INT("ffn_dim", ffn_dim),
    DIT_KEY_INT("freq_dim", freq_dim),
    DIT_KEY_INT("in_channels", in_dim),
    DIT_KEY_INT("out_channels", out_dim),
    DIT_KEY_INT("num_layers", layers[0]),
    DIT_KEY_OPT("text_dim", text_dim, 4096),
    /* no key in diffusers' file: its pipelines pad the prompt to 512 tokens */
    DIT_KEY_OPT("text_len", text_len, 512),
    PATCH,
    {"eps", offsetof(dit_hparams, eps), DIT_CK_REAL, 0, {1e-6}, 0, 0},
    /* Wan2.1 I2V's CLIP branch (null in the others): the image features' width, the
     * image keys' width, FLF2V's positions (514 tokens) */
    IMG_KEY("image_dim", image_dim),
    IMG_KEY("added_kv_proj_dim", added_kv_dim),
    IMG_KEY("pos_embed_seq_len", image_tokens),
};

static const dit_config_extra diffusers_extra[] = {
    {"_class_name", DIT_CT_STRING, NULL},
    {"_diffusers_version", DIT_CT_STRING, NULL},
    /* the architecture switches of WanTransformer3DModel: the released values */
    {"qk_norm", DIT_CT_STRING, "rms_norm_across_heads"},
    {"cross_attn_norm", DIT_CT_BOOL, "true"},
};

/* D = heads x head_dim; the model type from the channels, as the official configs
 * have them: 48 latent channels (TI2V-5B), more channels in than out (I2V), else
 * text-to-video; an image embedder with positions is FLF2V (its 514 tokens), one
 * without Wan2.1 I2V's 257 tokens. */
static void diffusers_derive(dit_hparams *hp)
{
	hp->dim = hp->num_heads * hp->head_dim;
	const char *mt = hp->out_dim == 48 ? "ti2v" : hp->in_dim > hp->out_dim ? "i2v" : "t2v";
	hp->image_pos = hp->image_dim && hp->image_tokens;
	if (hp->image_dim && !hp->image_tokens)
		hp->image_tokens = DIT_WAN_CLIP_TOKENS;
	if (hp->image_pos && !strcmp(mt, "i2v"))
		mt = "flf2v";
	snprintf(hp->model_type, sizeof hp->model_type, "%s", mt);
}

const dit_config_desc dit_wan_diffusers_config = {
    .class_name = "WanTransformer3DModel",
    .model_type_key = 0,
    .model_types = wan_types,
    .keys = diffusers_keys,
    .nkeys = (int)(sizeof diffusers_keys / sizeof diffusers_keys[0]),
    .extra = diffusers_extra,
    .nextra = (int)(sizeof diffusers_extra / sizeof diffusers_extra[0]),
    .derive = diffusers_derive,
    .check = wan_config_check,
};

/* diffusers' scripts/convert_wan_to_diffusers.py names, for the same tensors */
static const dit_rename diffusers_renames[] = {
    /* non-block */
    {"condition_embedder.time_embedder.linear_1.weight", "time_embedding.0.weight"},
    {"condition_embedder.time_embedder.linear_1.bias", "time_embedding.0.bias"},
    {"condition_embedder.time_embedder.linear_2.weight", "time_embedding.2.weight"},
    {"condition_embedder.time_embedder.linear_2.bias", "time_embedding.2.bias"},
    {"condition_embedder.text_embedder.linear_1.weight", "text_embedding.0.weight"},
    {"condition_embedder.text_embedder.linear_1.bias", "text_embedding.0.bias"},
    {"condition_embedder.text_embedder.linear_2.weight", "text_embedding.2.weight"},
    {"condition_embedder.text_embedder.linear_2.bias", "text_embedding.2.bias"},
    {"condition_embedder.time_proj.weight", "time_projection.1.weight"},
    {"condition_embedder.time_proj.bias", "time_projection.1.bias"},
    {"scale_shift_table", "head.modulation"},
    {"proj_out.weight", "head.head.weight"},
    {"proj_out.bias", "head.head.bias"},
    {"condition_embedder.image_embedder.norm1.weight", "img_emb.proj.0.weight"},
    {"condition_embedder.image_embedder.norm1.bias", "img_emb.proj.0.bias"},
    {"condition_embedder.image_embedder.ff.net.0.proj.weight", "img_emb.proj.1.weight"},
    {"condition_embedder.image_embedder.ff.net.0.proj.bias", "img_emb.proj.1.bias"},
    {"condition_embedder.image_embedder.ff.net.2.weight", "img_emb.proj.3.weight"},
    {"condition_embedder.image_embedder.ff.net.2.bias", "img_emb.proj.3.bias"},
    {"condition_embedder.image_embedder.norm2.weight", "img_emb.proj.4.weight"},
    {"condition_embedder.image_embedder.norm2.bias", "img_emb.proj.4.bias"},
    {"condition_embedder.image_embedder.pos_embed", "img_emb.emb_pos"},
    /* in a block */
    {"scale_shift_table", "modulation"},
    {"attn1.to_q.weight", "self_attn.q.weight"},
    {"attn1.to_q.bias", "self_attn.q.bias"},
    {"attn1.to_k.weight", "self_attn.k.weight"},
    {"attn1.to_k.bias", "self_attn.k.bias"},
    {"attn1.to_v.weight", "self_attn.v.weight"},
    {"attn1.to_v.bias", "self_attn.v.bias"},
    {"attn1.to_out.0.weight", "self_attn.o.weight"},
    {"attn1.to_out.0.bias", "self_attn.o.bias"},
    {"attn1.norm_q.weight", "self_attn.norm_q.weight"},
    {"attn1.norm_k.weight", "self_attn.norm_k.weight"},
    {"norm2.weight", "norm3.weight"},
    {"norm2.bias", "norm3.bias"},
    {"attn2.to_q.weight", "cross_attn.q.weight"},
    {"attn2.to_q.bias", "cross_attn.q.bias"},
    {"attn2.to_k.weight", "cross_attn.k.weight"},
    {"attn2.to_k.bias", "cross_attn.k.bias"},
    {"attn2.to_v.weight", "cross_attn.v.weight"},
    {"attn2.to_v.bias", "cross_attn.v.bias"},
    {"attn2.to_out.0.weight", "cross_attn.o.weight"},
    {"attn2.to_out.0.bias", "cross_attn.o.bias"},
    {"attn2.norm_q.weight", "cross_attn.norm_q.weight"},
    {"attn2.norm_k.weight", "cross_attn.norm_k.weight"},
    {"ffn.net.0.proj.weight", "ffn.0.weight"},
    {"ffn.net.0.proj.bias", "ffn.0.bias"},
    {"ffn.net.2.weight", "ffn.2.weight"},
    {"ffn.net.2.bias", "ffn.2.bias"},
    {"attn2.add_k_proj.weight", "cross_attn.k_img.weight"},
    {"attn2.add_k_proj.bias", "cross_attn.k_img.bias"},
    {"attn2.add_v_proj.weight", "cross_attn.v_img.weight"},
    {"attn2.add_v_proj.bias", "cross_attn.v_img.bias"},
    {"attn2.norm_added_k.weight", "cross_attn.norm_k_img.weight"},
};

const dit_format_desc dit_wan_diffusers = {
    .name = "diffusers",
    .config = &dit_wan_diffusers_config,
    .renames = diffusers_renames,
    .nrenames = (int)(sizeof diffusers_renames / sizeof diffusers_renames[0]),
    .expert = {"transformer", "transformer_2"},
    .subdir = "transformer",
};
