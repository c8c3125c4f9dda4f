/* The state-dict names and shapes of MinimalV1LVGDiT (after "net."), in the slab order of
 * models/dit_cosmos.h. */
#include "dit_cosmos.h"

#define M DIT_T_MATRIX

/* blocks.N. */
const dit_tensor_desc dit_cosmos_block_rules[DIT_CB_COUNT] = {
    {"self_attn.q_proj.weight", 2, {DIT_SYM_D, DIT_SYM_D}, M},
    {"self_attn.k_proj.weight", 2, {DIT_SYM_D, DIT_SYM_D}, M},
    {"self_attn.v_proj.weight", 2, {DIT_SYM_D, DIT_SYM_D}, M},
    {"self_attn.output_proj.weight", 2, {DIT_SYM_D, DIT_SYM_D}, M},
    {"self_attn.q_norm.weight", 1, {DIT_SYM_HD}, 0},
    {"self_attn.k_norm.weight", 1, {DIT_SYM_HD}, 0},
    {"cross_attn.q_proj.weight", 2, {DIT_SYM_D, DIT_SYM_D}, M},
    {"cross_attn.k_proj.weight", 2, {DIT_SYM_D, DIT_SYM_CROSS}, M},
    {"cross_attn.v_proj.weight", 2, {DIT_SYM_D, DIT_SYM_CROSS}, M},
    {"cross_attn.output_proj.weight", 2, {DIT_SYM_D, DIT_SYM_D}, M},
    {"cross_attn.q_norm.weight", 1, {DIT_SYM_HD}, 0},
    {"cross_attn.k_norm.weight", 1, {DIT_SYM_HD}, 0},
    {"mlp.layer1.weight", 2, {DIT_SYM_F, DIT_SYM_D}, M},
    {"mlp.layer2.weight", 2, {DIT_SYM_D, DIT_SYM_F}, M},
    {"adaln_modulation_self_attn.1.weight", 2, {DIT_SYM_LORA, DIT_SYM_D}, 0},
    {"adaln_modulation_self_attn.2.weight", 2, {DIT_SYM_3D, DIT_SYM_LORA}, 0},
    {"adaln_modulation_cross_attn.1.weight", 2, {DIT_SYM_LORA, DIT_SYM_D}, 0},
    {"adaln_modulation_cross_attn.2.weight", 2, {DIT_SYM_3D, DIT_SYM_LORA}, 0},
    {"adaln_modulation_mlp.1.weight", 2, {DIT_SYM_LORA, DIT_SYM_D}, 0},
    {"adaln_modulation_mlp.2.weight", 2, {DIT_SYM_3D, DIT_SYM_LORA}, 0},
};

const dit_tensor_desc dit_cosmos_global_rules[DIT_CG_COUNT] = {
    {"x_embedder.proj.1.weight", 2, {DIT_SYM_D, DIT_SYM_INP}, 0},
    {"t_embedder.1.linear_1.weight", 2, {DIT_SYM_D, DIT_SYM_D}, 0},
    {"t_embedder.1.linear_2.weight", 2, {DIT_SYM_3D, DIT_SYM_D}, 0},
    {"t_embedding_norm.weight", 1, {DIT_SYM_D}, 0},
    {"crossattn_proj.0.weight", 2, {DIT_SYM_CROSS, DIT_SYM_TEXT}, 0},
    {"crossattn_proj.0.bias", 1, {DIT_SYM_CROSS}, 0},
    {"final_layer.linear.weight", 2, {DIT_SYM_OUTP, DIT_SYM_D}, 0},
    {"final_layer.adaln_modulation.1.weight", 2, {DIT_SYM_LORA, DIT_SYM_D}, 0},
    {"final_layer.adaln_modulation.2.weight", 2, {DIT_SYM_2D, DIT_SYM_LORA}, 0},
};
