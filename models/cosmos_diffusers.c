/* Cosmos-Predict2.5 in diffusers' layout (CosmosTransformer3DModel, as diffusers'
 * scripts/convert_cosmos_to_diffusers.py writes the "Cosmos-2.5-Predict-Base-*"
 * transformers): its transformer/config.json keys, and its tensor names for the same
 * tensors, renamed one for one (no tensor is split or reordered), without the "net."
 * prefix and without the buffers and TransformerEngine state. */
#include <stdio.h>

#include "dit_cosmos.h"
#include "dit_model_desc.h"

static const char *const cos_types[] = {"cosmos", NULL};

static const dit_config_key diffusers_keys[] = {
    DIT_KEY_OPT("num_attention_heads", num_heads, 32),
    DIT_KEY_OPT("attention_head_dim", head_dim, 128),
    DIT_KEY_OPT("num_layers", layers[0], 28),
    {"mlp_ratio", offsetof(dit_hparams, mlp_ratio), DIT_CK_REAL, 0, {4.0}, 1, 64},
    /* the latent's channels and the condition mask's (17) */
    {"in_channels", offsetof(dit_hparams, in_cond), DIT_CK_INT, 0, {16}, 2, 1 << 20},
    DIT_KEY_OPT("out_channels", out_dim, 16),
    DIT_KEY_OPT("text_embed_dim", cross_dim, 1024),
    DIT_KEY_OPT("encoder_hidden_states_channels", cross_out, 1024),
    DIT_KEY_OPT("crossattn_proj_in_channels", text_dim, 1024),
    DIT_KEY_OPT("adaln_lora_dim", lora_dim, 256),
    {"max_size", offsetof(dit_hparams, max_size), DIT_CK_INT3, 0, {128, 240, 240}, 1, 1 << 20},
    {"patch_size", offsetof(dit_hparams, patch), DIT_CK_INT3, 0, {1, 2, 2}, 1, 256},
    /* the t, h, w RoPE extrapolation ratios */
    {"rope_scale", offsetof(dit_hparams, rope_ratio), DIT_CK_REAL3, 0, {2.0, 1.0, 1.0}, 0, 1000},
    {"concat_padding_mask", offsetof(dit_hparams, concat_padding), DIT_CK_BOOL, 0, {1}, 0, 0},
};

/* What this build implements of diffusers' options: Cosmos-Predict2.5's (the text
 * projection, no learnable positions, no ControlNet or image context). */
static const dit_config_extra diffusers_extra[] = {
    {"_class_name", DIT_CT_STRING, NULL},
    {"_diffusers_version", DIT_CT_STRING, NULL},
    {"use_crossattn_projection", DIT_CT_BOOL, "true"},
    {"extra_pos_embed_type", DIT_CT_NULL, NULL},
    {"controlnet_block_every_n", DIT_CT_NULL, NULL},
    {"img_context_dim_in", DIT_CT_NULL, NULL},
};

/* D = heads x head_dim; in_channels counts the condition mask; the rest as the
 * official keys (the timestep scale is the release's, 0.001). */
static void diffusers_derive(dit_hparams *hp)
{
	hp->dim = hp->num_heads * hp->head_dim;
	hp->in_latent = hp->in_cond - 1;
	if (hp->ts_mult == 0.0)
		hp->ts_mult = 0.001;
	dit_cosmos_derive(hp);
}

static int diffusers_check(const dit_hparams *hp, char *why, size_t len)
{
	if (hp->patch[1] != hp->patch[2]) {
		snprintf(why, len,
		         "key 'patch_size' must have equal h and w sizes (got %lld, %lld)",
		         (long long)hp->patch[1], (long long)hp->patch[2]);
		return 0;
	}
	if (hp->cross_out != hp->cross_dim) {
		snprintf(why, len,
		         "key 'encoder_hidden_states_channels' (%lld) must equal 'text_embed_dim' "
		         "(%lld)",
		         (long long)hp->cross_out, (long long)hp->cross_dim);
		return 0;
	}
	return dit_cosmos_check(hp, why, len);
}

const dit_config_desc dit_cosmos_diffusers_config = {
    .class_name = "CosmosTransformer3DModel",
    .model_type_key = 0,
    .model_types = cos_types,
    .keys = diffusers_keys,
    .nkeys = (int)(sizeof diffusers_keys / sizeof diffusers_keys[0]),
    .extra = diffusers_extra,
    .nextra = (int)(sizeof diffusers_extra / sizeof diffusers_extra[0]),
    .derive = diffusers_derive,
    .check = diffusers_check,
};

static const dit_rename diffusers_renames[] = {
    /* non-block */
    {"patch_embed.proj.weight", "x_embedder.proj.1.weight"},
    {"time_embed.t_embedder.linear_1.weight", "t_embedder.1.linear_1.weight"},
    {"time_embed.t_embedder.linear_2.weight", "t_embedder.1.linear_2.weight"},
    {"time_embed.norm.weight", "t_embedding_norm.weight"},
    {"proj_out.weight", "final_layer.linear.weight"},
    {"norm_out.linear_1.weight", "final_layer.adaln_modulation.1.weight"},
    {"norm_out.linear_2.weight", "final_layer.adaln_modulation.2.weight"},
    /* crossattn_proj.0.* keeps its name */
    /* in a block */
    {"attn1.to_q.weight", "self_attn.q_proj.weight"},
    {"attn1.to_k.weight", "self_attn.k_proj.weight"},
    {"attn1.to_v.weight", "self_attn.v_proj.weight"},
    {"attn1.to_out.0.weight", "self_attn.output_proj.weight"},
    {"attn1.norm_q.weight", "self_attn.q_norm.weight"},
    {"attn1.norm_k.weight", "self_attn.k_norm.weight"},
    {"attn2.to_q.weight", "cross_attn.q_proj.weight"},
    {"attn2.to_k.weight", "cross_attn.k_proj.weight"},
    {"attn2.to_v.weight", "cross_attn.v_proj.weight"},
    {"attn2.to_out.0.weight", "cross_attn.output_proj.weight"},
    {"attn2.norm_q.weight", "cross_attn.q_norm.weight"},
    {"attn2.norm_k.weight", "cross_attn.k_norm.weight"},
    {"ff.net.0.proj.weight", "mlp.layer1.weight"},
    {"ff.net.2.weight", "mlp.layer2.weight"},
    {"norm1.linear_1.weight", "adaln_modulation_self_attn.1.weight"},
    {"norm1.linear_2.weight", "adaln_modulation_self_attn.2.weight"},
    {"norm2.linear_1.weight", "adaln_modulation_cross_attn.1.weight"},
    {"norm2.linear_2.weight", "adaln_modulation_cross_attn.2.weight"},
    {"norm3.linear_1.weight", "adaln_modulation_mlp.1.weight"},
    {"norm3.linear_2.weight", "adaln_modulation_mlp.2.weight"},
};

const dit_format_desc dit_cosmos_diffusers = {
    .name = "diffusers",
    .config = &dit_cosmos_diffusers_config,
    .renames = diffusers_renames,
    .nrenames = (int)(sizeof diffusers_renames / sizeof diffusers_renames[0]),
    .pool_prefix = {"transformer_blocks."},
    .subdir = "transformer",
};
