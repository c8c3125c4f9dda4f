/* Wan2.1 T2V tensor tables: names are the official state-dict names
 * (wan/modules/model.py), shapes are rules over the config. */
#include "dit_wan.h"

#define S(x) DIT_SYM_##x

const dit_wan_tensor_rule dit_wan_block_rules[DIT_WB_COUNT] = {
    [DIT_WB_MOD] = {"modulation", 3, {S(ONE), S(SIX), S(D)}},
    [DIT_WB_SA_QW] = {"self_attn.q.weight", 2, {S(D), S(D)}},
    [DIT_WB_SA_KW] = {"self_attn.k.weight", 2, {S(D), S(D)}},
    [DIT_WB_SA_VW] = {"self_attn.v.weight", 2, {S(D), S(D)}},
    [DIT_WB_SA_QB] = {"self_attn.q.bias", 1, {S(D)}},
    [DIT_WB_SA_KB] = {"self_attn.k.bias", 1, {S(D)}},
    [DIT_WB_SA_VB] = {"self_attn.v.bias", 1, {S(D)}},
    [DIT_WB_SA_OW] = {"self_attn.o.weight", 2, {S(D), S(D)}},
    [DIT_WB_SA_OB] = {"self_attn.o.bias", 1, {S(D)}},
    [DIT_WB_SA_NQ] = {"self_attn.norm_q.weight", 1, {S(D)}},
    [DIT_WB_SA_NK] = {"self_attn.norm_k.weight", 1, {S(D)}},
    [DIT_WB_N3W] = {"norm3.weight", 1, {S(D)}},
    [DIT_WB_N3B] = {"norm3.bias", 1, {S(D)}},
    [DIT_WB_CA_QW] = {"cross_attn.q.weight", 2, {S(D), S(D)}},
    [DIT_WB_CA_QB] = {"cross_attn.q.bias", 1, {S(D)}},
    [DIT_WB_CA_KW] = {"cross_attn.k.weight", 2, {S(D), S(D)}},
    [DIT_WB_CA_VW] = {"cross_attn.v.weight", 2, {S(D), S(D)}},
    [DIT_WB_CA_KB] = {"cross_attn.k.bias", 1, {S(D)}},
    [DIT_WB_CA_VB] = {"cross_attn.v.bias", 1, {S(D)}},
    [DIT_WB_CA_OW] = {"cross_attn.o.weight", 2, {S(D), S(D)}},
    [DIT_WB_CA_OB] = {"cross_attn.o.bias", 1, {S(D)}},
    [DIT_WB_CA_NQ] = {"cross_attn.norm_q.weight", 1, {S(D)}},
    [DIT_WB_CA_NK] = {"cross_attn.norm_k.weight", 1, {S(D)}},
    [DIT_WB_F0W] = {"ffn.0.weight", 2, {S(F), S(D)}},
    [DIT_WB_F0B] = {"ffn.0.bias", 1, {S(F)}},
    [DIT_WB_F2W] = {"ffn.2.weight", 2, {S(D), S(F)}},
    [DIT_WB_F2B] = {"ffn.2.bias", 1, {S(D)}},
};

const dit_wan_tensor_rule dit_wan_global_rules[DIT_WG_COUNT] = {
    [DIT_WG_PATCH_W] = {"patch_embedding.weight", 5, {S(D), S(IN), S(PT), S(PH), S(PW)}},
    [DIT_WG_PATCH_B] = {"patch_embedding.bias", 1, {S(D)}},
    [DIT_WG_TEXT0_W] = {"text_embedding.0.weight", 2, {S(D), S(TEXT)}},
    [DIT_WG_TEXT0_B] = {"text_embedding.0.bias", 1, {S(D)}},
    [DIT_WG_TEXT2_W] = {"text_embedding.2.weight", 2, {S(D), S(D)}},
    [DIT_WG_TEXT2_B] = {"text_embedding.2.bias", 1, {S(D)}},
    [DIT_WG_TIME0_W] = {"time_embedding.0.weight", 2, {S(D), S(FREQ)}},
    [DIT_WG_TIME0_B] = {"time_embedding.0.bias", 1, {S(D)}},
    [DIT_WG_TIME2_W] = {"time_embedding.2.weight", 2, {S(D), S(D)}},
    [DIT_WG_TIME2_B] = {"time_embedding.2.bias", 1, {S(D)}},
    [DIT_WG_TPROJ_W] = {"time_projection.1.weight", 2, {S(6D), S(D)}},
    [DIT_WG_TPROJ_B] = {"time_projection.1.bias", 1, {S(6D)}},
    [DIT_WG_HEAD_W] = {"head.head.weight", 2, {S(OUTP), S(D)}},
    [DIT_WG_HEAD_B] = {"head.head.bias", 1, {S(OUTP)}},
    [DIT_WG_HEAD_MOD] = {"head.modulation", 3, {S(ONE), S(TWO), S(D)}},
};

int64_t dit_wan_sym_value(const dit_wan_config *cfg, dit_wan_sym s)
{
	switch (s) {
	case DIT_SYM_ONE: return 1;
	case DIT_SYM_TWO: return 2;
	case DIT_SYM_SIX: return 6;
	case DIT_SYM_D: return cfg->dim;
	case DIT_SYM_F: return cfg->ffn_dim;
	case DIT_SYM_6D: return 6 * cfg->dim;
	case DIT_SYM_TEXT: return cfg->text_dim;
	case DIT_SYM_FREQ: return cfg->freq_dim;
	case DIT_SYM_IN: return cfg->in_dim;
	case DIT_SYM_OUTP: return cfg->out_dim * cfg->patch[0] * cfg->patch[1] * cfg->patch[2];
	case DIT_SYM_PT: return cfg->patch[0];
	case DIT_SYM_PH: return cfg->patch[1];
	case DIT_SYM_PW: return cfg->patch[2];
	}
	return 0;
}

int dit_wan_rule_shape(const dit_wan_config *cfg, const dit_wan_tensor_rule *r, int64_t *shape)
{
	for (int i = 0; i < r->ndim; i++)
		shape[i] = dit_wan_sym_value(cfg, r->dims[i]);
	return r->ndim;
}

static int64_t rule_numel(const dit_wan_config *cfg, const dit_wan_tensor_rule *r)
{
	int64_t shape[DIT_WAN_MAX_DIMS], n = 1;
	int nd = dit_wan_rule_shape(cfg, r, shape);
	for (int i = 0; i < nd; i++)
		n *= shape[i];
	return n;
}

void dit_wan_layout_init(dit_wan_layout *lay, const dit_wan_config *cfg)
{
	dit_wan_layout_init_dtype(lay, cfg, 0);
}

void dit_wan_layout_init_dtype(dit_wan_layout *lay, const dit_wan_config *cfg, int bf16)
{
	int64_t off = 0;
	lay->bf16 = bf16 != 0;
	for (int i = 0; i < DIT_WB_COUNT; i++) {
		lay->block_off[i] = off;
		lay->block_numel[i] = rule_numel(cfg, &dit_wan_block_rules[i]);
		lay->block_bf16[i] = bf16 && dit_wan_block_rules[i].ndim == 2;
		/* two bf16 to a slot; an odd count rounds up (never for Wan: dim is even) */
		off += lay->block_bf16[i] ? (lay->block_numel[i] + 1) / 2 : lay->block_numel[i];
	}
	lay->block_size = off;
	off = 0;
	for (int i = 0; i < DIT_WG_COUNT; i++) {
		lay->global_off[i] = off;
		lay->global_numel[i] = rule_numel(cfg, &dit_wan_global_rules[i]);
		off += lay->global_numel[i];
	}
	lay->global_size = off;
}

int64_t dit_wan_param_count(const dit_wan_config *cfg)
{
	dit_wan_layout lay;
	dit_wan_layout_init(&lay, cfg);
	return lay.block_size * cfg->num_layers + lay.global_size;
}
