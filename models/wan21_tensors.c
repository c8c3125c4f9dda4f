/* Wan tensor tables: names are the official state-dict names (wan/modules/model.py),
 * shapes are rules over the hyper-parameters; M marks the GEMM matrices, which the
 * weight store may keep in bf16 (the non-block tensors always stay fp32); IMG the
 * tensors of Wan2.1 I2V/FLF2V's CLIP branch (MLPProj img_emb, WanI2VCrossAttention's
 * k_img, v_img, norm_k_img). */
#include "dit_wan.h"

#define S(x) DIT_SYM_##x
#define M    DIT_T_MATRIX
#define IMG  DIT_T_WHEN(DIT_W_IMAGE) /* Wan2.1 image-to-video only */

const dit_tensor_desc dit_wan_block_rules[DIT_WB_COUNT] = {
    [DIT_WB_MOD] = {"modulation", 3, {S(ONE), S(SIX), S(D)}, 0},
    [DIT_WB_SA_QW] = {"self_attn.q.weight", 2, {S(D), S(D)}, M},
    [DIT_WB_SA_KW] = {"self_attn.k.weight", 2, {S(D), S(D)}, M},
    [DIT_WB_SA_VW] = {"self_attn.v.weight", 2, {S(D), S(D)}, M},
    [DIT_WB_SA_QB] = {"self_attn.q.bias", 1, {S(D)}, 0},
    [DIT_WB_SA_KB] = {"self_attn.k.bias", 1, {S(D)}, 0},
    [DIT_WB_SA_VB] = {"self_attn.v.bias", 1, {S(D)}, 0},
    [DIT_WB_SA_OW] = {"self_attn.o.weight", 2, {S(D), S(D)}, M},
    [DIT_WB_SA_OB] = {"self_attn.o.bias", 1, {S(D)}, 0},
    [DIT_WB_SA_NQ] = {"self_attn.norm_q.weight", 1, {S(D)}, 0},
    [DIT_WB_SA_NK] = {"self_attn.norm_k.weight", 1, {S(D)}, 0},
    [DIT_WB_N3W] = {"norm3.weight", 1, {S(D)}, 0},
    [DIT_WB_N3B] = {"norm3.bias", 1, {S(D)}, 0},
    [DIT_WB_CA_QW] = {"cross_attn.q.weight", 2, {S(D), S(D)}, M},
    [DIT_WB_CA_QB] = {"cross_attn.q.bias", 1, {S(D)}, 0},
    [DIT_WB_CA_KW] = {"cross_attn.k.weight", 2, {S(D), S(D)}, M},
    [DIT_WB_CA_VW] = {"cross_attn.v.weight", 2, {S(D), S(D)}, M},
    [DIT_WB_CA_KB] = {"cross_attn.k.bias", 1, {S(D)}, 0},
    [DIT_WB_CA_VB] = {"cross_attn.v.bias", 1, {S(D)}, 0},
    [DIT_WB_CA_OW] = {"cross_attn.o.weight", 2, {S(D), S(D)}, M},
    [DIT_WB_CA_OB] = {"cross_attn.o.bias", 1, {S(D)}, 0},
    [DIT_WB_CA_NQ] = {"cross_attn.norm_q.weight", 1, {S(D)}, 0},
    [DIT_WB_CA_NK] = {"cross_attn.norm_k.weight", 1, {S(D)}, 0},
    [DIT_WB_F0W] = {"ffn.0.weight", 2, {S(F), S(D)}, M},
    [DIT_WB_F0B] = {"ffn.0.bias", 1, {S(F)}, 0},
    [DIT_WB_F2W] = {"ffn.2.weight", 2, {S(D), S(F)}, M},
    [DIT_WB_F2B] = {"ffn.2.bias", 1, {S(D)}, 0},
    [DIT_WB_CA_KIW] = {"cross_attn.k_img.weight", 2, {S(D), S(D)}, M | IMG},
    [DIT_WB_CA_VIW] = {"cross_attn.v_img.weight", 2, {S(D), S(D)}, M | IMG},
    [DIT_WB_CA_KIB] = {"cross_attn.k_img.bias", 1, {S(D)}, IMG},
    [DIT_WB_CA_VIB] = {"cross_attn.v_img.bias", 1, {S(D)}, IMG},
    [DIT_WB_CA_NKI] = {"cross_attn.norm_k_img.weight", 1, {S(D)}, IMG},
};

const dit_tensor_desc dit_wan_global_rules[DIT_WG_COUNT] = {
    [DIT_WG_PATCH_W] = {"patch_embedding.weight", 5, {S(D), S(IN), S(PT), S(PH), S(PW)}, 0},
    [DIT_WG_PATCH_B] = {"patch_embedding.bias", 1, {S(D)}, 0},
    [DIT_WG_TEXT0_W] = {"text_embedding.0.weight", 2, {S(D), S(TEXT)}, 0},
    [DIT_WG_TEXT0_B] = {"text_embedding.0.bias", 1, {S(D)}, 0},
    [DIT_WG_TEXT2_W] = {"text_embedding.2.weight", 2, {S(D), S(D)}, 0},
    [DIT_WG_TEXT2_B] = {"text_embedding.2.bias", 1, {S(D)}, 0},
    [DIT_WG_TIME0_W] = {"time_embedding.0.weight", 2, {S(D), S(FREQ)}, 0},
    [DIT_WG_TIME0_B] = {"time_embedding.0.bias", 1, {S(D)}, 0},
    [DIT_WG_TIME2_W] = {"time_embedding.2.weight", 2, {S(D), S(D)}, 0},
    [DIT_WG_TIME2_B] = {"time_embedding.2.bias", 1, {S(D)}, 0},
    [DIT_WG_TPROJ_W] = {"time_projection.1.weight", 2, {S(6D), S(D)}, 0},
    [DIT_WG_TPROJ_B] = {"time_projection.1.bias", 1, {S(6D)}, 0},
    [DIT_WG_HEAD_W] = {"head.head.weight", 2, {S(OUTP), S(D)}, 0},
    [DIT_WG_HEAD_B] = {"head.head.bias", 1, {S(OUTP)}, 0},
    [DIT_WG_HEAD_MOD] = {"head.modulation", 3, {S(ONE), S(TWO), S(D)}, 0},
    [DIT_WG_IMG_N0W] = {"img_emb.proj.0.weight", 1, {S(IMG)}, IMG},
    [DIT_WG_IMG_N0B] = {"img_emb.proj.0.bias", 1, {S(IMG)}, IMG},
    [DIT_WG_IMG_L1W] = {"img_emb.proj.1.weight", 2, {S(IMG), S(IMG)}, IMG},
    [DIT_WG_IMG_L1B] = {"img_emb.proj.1.bias", 1, {S(IMG)}, IMG},
    [DIT_WG_IMG_L3W] = {"img_emb.proj.3.weight", 2, {S(D), S(IMG)}, IMG},
    [DIT_WG_IMG_L3B] = {"img_emb.proj.3.bias", 1, {S(D)}, IMG},
    [DIT_WG_IMG_N4W] = {"img_emb.proj.4.weight", 1, {S(D)}, IMG},
    [DIT_WG_IMG_N4B] = {"img_emb.proj.4.bias", 1, {S(D)}, IMG},
    [DIT_WG_IMG_POS] = {"img_emb.emb_pos",
                        3,
                        {S(ONE), S(IMGN), S(IMG)},
                        DIT_T_WHEN(DIT_W_IMAGE_POS)},
};
