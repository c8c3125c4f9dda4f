/* HunyuanVideo in diffusers' layout (HunyuanVideoTransformer3DModel): its
 * transformer/config.json keys, and its tensor names for the same tensors. Fused
 * official GEMMs are split there (q, k, v; the single block's linear1 into q, k, v
 * and proj_mlp), so they are joined back row by row, and the final adaLN's halves
 * are swapped (diffusers' norm_out.linear is scale first). The mapping follows
 * diffusers' convert_hunyuan_video_transformer_to_diffusers. */
#include <stdio.h>

#include "dit_hunyuan.h"
#include "dit_model_desc.h"

static const char *const hy_types[] = {"hyvideo", NULL};

static const dit_config_key diffusers_keys[] = {
    DIT_KEY_INT("num_attention_heads", num_heads),
    DIT_KEY_INT("attention_head_dim", head_dim),
    DIT_KEY_OPT("num_layers", layers[0], 20),
    DIT_KEY_OPT("num_single_layers", layers[1], 40),
    DIT_KEY_OPT("num_refiner_layers", refiner_layers, 2),
    {"mlp_ratio", offsetof(dit_hparams, mlp_ratio), DIT_CK_REAL, 0, {4.0}, 1, 64},
    DIT_KEY_OPT("patch_size", patch[1], 2),
    DIT_KEY_OPT("patch_size_t", patch[0], 1),
    DIT_KEY_OPT("in_channels", in_dim, 16),
    DIT_KEY_OPT("out_channels", out_dim, 16),
    DIT_KEY_OPT("text_embed_dim", text_dim, 4096),
    DIT_KEY_OPT("pooled_projection_dim", text_dim_2, 768),
    {"rope_theta", offsetof(dit_hparams, rope_theta), DIT_CK_REAL, 0, {256.0}, 1, 1 << 30},
    {"rope_axes_dim", offsetof(dit_hparams, rope_dims), DIT_CK_INT3, 0, {16, 56, 56}, 2, 4096},
    {"guidance_embeds", offsetof(dit_hparams, guidance_embed), DIT_CK_BOOL, 0, {1}, 0, 0},
};

static const dit_config_extra diffusers_extra[] = {
    {"_class_name", DIT_CT_STRING, NULL},
    {"_diffusers_version", DIT_CT_STRING, NULL},
    {"qk_norm", DIT_CT_STRING, "rms_norm"},
    /* HunyuanVideo-I2V's "latent_concat" or "token_replace" */
    {"image_condition_type", DIT_CT_STRING, "null"},
};

/* D = heads x head_dim, square patches; then the official derivation. */
static void diffusers_derive(dit_hparams *hp)
{
	hp->dim = hp->num_heads * hp->head_dim;
	hp->patch[2] = hp->patch[1];
	dit_hunyuan_derive(hp);
}

const dit_config_desc dit_hunyuan_diffusers_config = {
    .class_name = "HunyuanVideoTransformer3DModel",
    .model_type_key = 0,
    .model_types = hy_types,
    .keys = diffusers_keys,
    .nkeys = (int)(sizeof diffusers_keys / sizeof diffusers_keys[0]),
    .extra = diffusers_extra,
    .nextra = (int)(sizeof diffusers_extra / sizeof diffusers_extra[0]),
    .derive = diffusers_derive,
    .check = dit_hunyuan_check,
};

#define RP(n) "context_embedder.token_refiner.refiner_blocks." #n "."
#define RO(n) "txt_in.individual_token_refiner.blocks." #n "."
#define REFINER_RENAMES(n)                                                                         \
	{RP(n) "norm1.weight", RO(n) "norm1.weight"}, {RP(n) "norm1.bias", RO(n) "norm1.bias"},    \
	    {RP(n) "norm2.weight", RO(n) "norm2.weight"},                                          \
	    {RP(n) "norm2.bias", RO(n) "norm2.bias"},                                              \
	    {RP(n) "attn.to_out.0.weight", RO(n) "self_attn_proj.weight"},                         \
	    {RP(n) "attn.to_out.0.bias", RO(n) "self_attn_proj.bias"},                             \
	    {RP(n) "ff.net.0.proj.weight", RO(n) "mlp.fc1.weight"},                                \
	    {RP(n) "ff.net.0.proj.bias", RO(n) "mlp.fc1.bias"},                                    \
	    {RP(n) "ff.net.2.weight", RO(n) "mlp.fc2.weight"},                                     \
	    {RP(n) "ff.net.2.bias", RO(n) "mlp.fc2.bias"},                                         \
	    {RP(n) "norm_out.linear.weight", RO(n) "adaLN_modulation.1.weight"},                   \
	{                                                                                          \
		RP(n) "norm_out.linear.bias", RO(n) "adaLN_modulation.1.bias"                      \
	}

static const dit_rename diffusers_renames[] = {
    /* non-block */
    {"x_embedder.proj.weight", "img_in.proj.weight"},
    {"x_embedder.proj.bias", "img_in.proj.bias"},
    {"time_text_embed.timestep_embedder.linear_1.weight", "time_in.mlp.0.weight"},
    {"time_text_embed.timestep_embedder.linear_1.bias", "time_in.mlp.0.bias"},
    {"time_text_embed.timestep_embedder.linear_2.weight", "time_in.mlp.2.weight"},
    {"time_text_embed.timestep_embedder.linear_2.bias", "time_in.mlp.2.bias"},
    {"time_text_embed.guidance_embedder.linear_1.weight", "guidance_in.mlp.0.weight"},
    {"time_text_embed.guidance_embedder.linear_1.bias", "guidance_in.mlp.0.bias"},
    {"time_text_embed.guidance_embedder.linear_2.weight", "guidance_in.mlp.2.weight"},
    {"time_text_embed.guidance_embedder.linear_2.bias", "guidance_in.mlp.2.bias"},
    {"time_text_embed.text_embedder.linear_1.weight", "vector_in.in_layer.weight"},
    {"time_text_embed.text_embedder.linear_1.bias", "vector_in.in_layer.bias"},
    {"time_text_embed.text_embedder.linear_2.weight", "vector_in.out_layer.weight"},
    {"time_text_embed.text_embedder.linear_2.bias", "vector_in.out_layer.bias"},
    {"context_embedder.proj_in.weight", "txt_in.input_embedder.weight"},
    {"context_embedder.proj_in.bias", "txt_in.input_embedder.bias"},
    {"context_embedder.time_text_embed.timestep_embedder.linear_1.weight",
     "txt_in.t_embedder.mlp.0.weight"},
    {"context_embedder.time_text_embed.timestep_embedder.linear_1.bias",
     "txt_in.t_embedder.mlp.0.bias"},
    {"context_embedder.time_text_embed.timestep_embedder.linear_2.weight",
     "txt_in.t_embedder.mlp.2.weight"},
    {"context_embedder.time_text_embed.timestep_embedder.linear_2.bias",
     "txt_in.t_embedder.mlp.2.bias"},
    {"context_embedder.time_text_embed.text_embedder.linear_1.weight",
     "txt_in.c_embedder.linear_1.weight"},
    {"context_embedder.time_text_embed.text_embedder.linear_1.bias",
     "txt_in.c_embedder.linear_1.bias"},
    {"context_embedder.time_text_embed.text_embedder.linear_2.weight",
     "txt_in.c_embedder.linear_2.weight"},
    {"context_embedder.time_text_embed.text_embedder.linear_2.bias",
     "txt_in.c_embedder.linear_2.bias"},
    {"proj_out.weight", "final_layer.linear.weight"},
    {"proj_out.bias", "final_layer.linear.bias"},
    REFINER_RENAMES(0),
    REFINER_RENAMES(1),
    /* in a double block */
    {"norm1.linear.weight", "img_mod.linear.weight"},
    {"norm1.linear.bias", "img_mod.linear.bias"},
    {"norm1_context.linear.weight", "txt_mod.linear.weight"},
    {"norm1_context.linear.bias", "txt_mod.linear.bias"},
    {"attn.norm_q.weight", "img_attn_q_norm.weight"},
    {"attn.norm_k.weight", "img_attn_k_norm.weight"},
    {"attn.norm_added_q.weight", "txt_attn_q_norm.weight"},
    {"attn.norm_added_k.weight", "txt_attn_k_norm.weight"},
    {"attn.to_out.0.weight", "img_attn_proj.weight"},
    {"attn.to_out.0.bias", "img_attn_proj.bias"},
    {"attn.to_add_out.weight", "txt_attn_proj.weight"},
    {"attn.to_add_out.bias", "txt_attn_proj.bias"},
    {"ff.net.0.proj.weight", "img_mlp.fc1.weight"},
    {"ff.net.0.proj.bias", "img_mlp.fc1.bias"},
    {"ff.net.2.weight", "img_mlp.fc2.weight"},
    {"ff.net.2.bias", "img_mlp.fc2.bias"},
    {"ff_context.net.0.proj.weight", "txt_mlp.fc1.weight"},
    {"ff_context.net.0.proj.bias", "txt_mlp.fc1.bias"},
    {"ff_context.net.2.weight", "txt_mlp.fc2.weight"},
    {"ff_context.net.2.bias", "txt_mlp.fc2.bias"},
    /* in a single block */
    {"proj_out.weight", "linear2.weight"},
    {"proj_out.bias", "linear2.bias"},
    {"attn.norm_q.weight", "q_norm.weight"},
    {"attn.norm_k.weight", "k_norm.weight"},
    {"norm.linear.weight", "modulation.linear.weight"},
    {"norm.linear.bias", "modulation.linear.bias"},
};

#define QKV(to, a, b, c)                                                                           \
	{                                                                                          \
		to, 3,                                                                             \
		{                                                                                  \
			{a, 0}, {b, 0},                                                            \
			{                                                                          \
				c, 0                                                               \
			}                                                                          \
		}                                                                                  \
	}
#define REFINER_JOINS(n)                                                                           \
	QKV(RO(n) "self_attn_qkv.weight", RP(n) "attn.to_q.weight", RP(n) "attn.to_k.weight",      \
	    RP(n) "attn.to_v.weight"),                                                             \
	    QKV(RO(n) "self_attn_qkv.bias", RP(n) "attn.to_q.bias", RP(n) "attn.to_k.bias",        \
	        RP(n) "attn.to_v.bias")

static const dit_join diffusers_joins[] = {
    /* diffusers' norm_out.linear gives scale then shift */
    {"final_layer.adaLN_modulation.1.weight",
     2,
     {{"norm_out.linear.weight", 2}, {"norm_out.linear.weight", 1}}},
    {"final_layer.adaLN_modulation.1.bias",
     2,
     {{"norm_out.linear.bias", 2}, {"norm_out.linear.bias", 1}}},
    REFINER_JOINS(0),
    REFINER_JOINS(1),
    QKV("img_attn_qkv.weight", "attn.to_q.weight", "attn.to_k.weight", "attn.to_v.weight"),
    QKV("img_attn_qkv.bias", "attn.to_q.bias", "attn.to_k.bias", "attn.to_v.bias"),
    QKV("txt_attn_qkv.weight", "attn.add_q_proj.weight", "attn.add_k_proj.weight",
        "attn.add_v_proj.weight"),
    QKV("txt_attn_qkv.bias", "attn.add_q_proj.bias", "attn.add_k_proj.bias",
        "attn.add_v_proj.bias"),
    {"linear1.weight",
     4,
     {{"attn.to_q.weight", 0},
      {"attn.to_k.weight", 0},
      {"attn.to_v.weight", 0},
      {"proj_mlp.weight", 0}}},
    {"linear1.bias",
     4,
     {{"attn.to_q.bias", 0}, {"attn.to_k.bias", 0}, {"attn.to_v.bias", 0}, {"proj_mlp.bias", 0}}},
};

const dit_format_desc dit_hunyuan_diffusers = {
    .name = "diffusers",
    .config = &dit_hunyuan_diffusers_config,
    .renames = diffusers_renames,
    .nrenames = (int)(sizeof diffusers_renames / sizeof diffusers_renames[0]),
    .joins = diffusers_joins,
    .njoins = (int)(sizeof diffusers_joins / sizeof diffusers_joins[0]),
    .pool_prefix = {"transformer_blocks.", "single_transformer_blocks."},
    .subdir = "transformer",
};
