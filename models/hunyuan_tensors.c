/* HunyuanVideo tensor tables: the official state-dict names (hyvideo/modules/models.py,
 * token_refiner.py, embed_layers.py, mlp_layers.py), shapes as rules over the
 * hyper-parameters; M marks the block GEMM matrices the weight store may keep in bf16. */
#include "dit_hunyuan.h"

#define S(x) DIT_SYM_##x
#define M    DIT_T_MATRIX

/* A tensor of shape [a, b] (flags f), of shape [a]. */
#define T2(n, a, b, f)                                                                             \
	{                                                                                          \
		n, 2, {S(a), S(b)}, f                                                              \
	}
#define T1(n, a)                                                                                   \
	{                                                                                          \
		n, 1, {S(a)}, 0                                                                    \
	}

/* The tensors of one stream of a double block (p: "img" or "txt"). */
#define HALF(p)                                                                                    \
	T2(p "_mod.linear.weight", 6D, D, M), T1(p "_mod.linear.bias", 6D),                        \
	    T2(p "_attn_qkv.weight", 3D, D, M), T1(p "_attn_qkv.bias", 3D),                        \
	    T1(p "_attn_q_norm.weight", HD), T1(p "_attn_k_norm.weight", HD),                      \
	    T2(p "_attn_proj.weight", D, D, M), T1(p "_attn_proj.bias", D),                        \
	    T2(p "_mlp.fc1.weight", F, D, M), T1(p "_mlp.fc1.bias", F),                            \
	    T2(p "_mlp.fc2.weight", D, F, M), T1(p "_mlp.fc2.bias", D)

const dit_tensor_desc dit_hunyuan_double_rules[DIT_HD_COUNT] = {HALF("img"), HALF("txt")};

const dit_tensor_desc dit_hunyuan_single_rules[DIT_HS_COUNT] = {
    [DIT_HS_LIN1_W] = {"linear1.weight", 2, {S(3D_F), S(D)}, M},
    [DIT_HS_LIN1_B] = {"linear1.bias", 1, {S(3D_F)}, 0},
    [DIT_HS_LIN2_W] = {"linear2.weight", 2, {S(D), S(D_F)}, M},
    [DIT_HS_LIN2_B] = {"linear2.bias", 1, {S(D)}, 0},
    [DIT_HS_NQ] = {"q_norm.weight", 1, {S(HD)}, 0},
    [DIT_HS_NK] = {"k_norm.weight", 1, {S(HD)}, 0},
    [DIT_HS_MOD_W] = {"modulation.linear.weight", 2, {S(3D), S(D)}, M},
    [DIT_HS_MOD_B] = {"modulation.linear.bias", 1, {S(3D)}, 0},
};

/* The tensors of token-refiner block n (kept with the globals, fp32). */
#define RBP(n) "txt_in.individual_token_refiner.blocks." #n "."
#define RB(n)                                                                                      \
	T1(RBP(n) "norm1.weight", D), T1(RBP(n) "norm1.bias", D),                                  \
	    T2(RBP(n) "self_attn_qkv.weight", 3D, D, 0), T1(RBP(n) "self_attn_qkv.bias", 3D),      \
	    T2(RBP(n) "self_attn_proj.weight", D, D, 0), T1(RBP(n) "self_attn_proj.bias", D),      \
	    T1(RBP(n) "norm2.weight", D), T1(RBP(n) "norm2.bias", D),                              \
	    T2(RBP(n) "mlp.fc1.weight", 4D, D, 0), T1(RBP(n) "mlp.fc1.bias", 4D),                  \
	    T2(RBP(n) "mlp.fc2.weight", D, 4D, 0), T1(RBP(n) "mlp.fc2.bias", D),                   \
	    T2(RBP(n) "adaLN_modulation.1.weight", 2D, D, 0),                                      \
	    T1(RBP(n) "adaLN_modulation.1.bias", 2D)

const dit_tensor_desc dit_hunyuan_global_rules[DIT_HG_COUNT] = {
    [DIT_HG_PATCH_W] = {"img_in.proj.weight", 5, {S(D), S(IN), S(PT), S(PH), S(PW)}, 0},
    [DIT_HG_PATCH_B] = {"img_in.proj.bias", 1, {S(D)}, 0},
    [DIT_HG_TIME0_W] = {"time_in.mlp.0.weight", 2, {S(D), S(FREQ)}, 0},
    [DIT_HG_TIME0_B] = {"time_in.mlp.0.bias", 1, {S(D)}, 0},
    [DIT_HG_TIME2_W] = {"time_in.mlp.2.weight", 2, {S(D), S(D)}, 0},
    [DIT_HG_TIME2_B] = {"time_in.mlp.2.bias", 1, {S(D)}, 0},
    [DIT_HG_VEC0_W] = {"vector_in.in_layer.weight", 2, {S(D), S(TEXT2)}, 0},
    [DIT_HG_VEC0_B] = {"vector_in.in_layer.bias", 1, {S(D)}, 0},
    [DIT_HG_VEC2_W] = {"vector_in.out_layer.weight", 2, {S(D), S(D)}, 0},
    [DIT_HG_VEC2_B] = {"vector_in.out_layer.bias", 1, {S(D)}, 0},
    [DIT_HG_GUID0_W] = {"guidance_in.mlp.0.weight", 2, {S(D), S(FREQ)}, 0},
    [DIT_HG_GUID0_B] = {"guidance_in.mlp.0.bias", 1, {S(D)}, 0},
    [DIT_HG_GUID2_W] = {"guidance_in.mlp.2.weight", 2, {S(D), S(D)}, 0},
    [DIT_HG_GUID2_B] = {"guidance_in.mlp.2.bias", 1, {S(D)}, 0},
    [DIT_HG_TXT_IN_W] = {"txt_in.input_embedder.weight", 2, {S(D), S(TEXT)}, 0},
    [DIT_HG_TXT_IN_B] = {"txt_in.input_embedder.bias", 1, {S(D)}, 0},
    [DIT_HG_TXT_T0_W] = {"txt_in.t_embedder.mlp.0.weight", 2, {S(D), S(FREQ)}, 0},
    [DIT_HG_TXT_T0_B] = {"txt_in.t_embedder.mlp.0.bias", 1, {S(D)}, 0},
    [DIT_HG_TXT_T2_W] = {"txt_in.t_embedder.mlp.2.weight", 2, {S(D), S(D)}, 0},
    [DIT_HG_TXT_T2_B] = {"txt_in.t_embedder.mlp.2.bias", 1, {S(D)}, 0},
    [DIT_HG_TXT_C1_W] = {"txt_in.c_embedder.linear_1.weight", 2, {S(D), S(TEXT)}, 0},
    [DIT_HG_TXT_C1_B] = {"txt_in.c_embedder.linear_1.bias", 1, {S(D)}, 0},
    [DIT_HG_TXT_C2_W] = {"txt_in.c_embedder.linear_2.weight", 2, {S(D), S(D)}, 0},
    [DIT_HG_TXT_C2_B] = {"txt_in.c_embedder.linear_2.bias", 1, {S(D)}, 0},
    [DIT_HG_FINAL_W] = {"final_layer.linear.weight", 2, {S(OUTP), S(D)}, 0},
    [DIT_HG_FINAL_B] = {"final_layer.linear.bias", 1, {S(OUTP)}, 0},
    [DIT_HG_FINAL_MOD_W] = {"final_layer.adaLN_modulation.1.weight", 2, {S(2D), S(D)}, 0},
    [DIT_HG_FINAL_MOD_B] = {"final_layer.adaLN_modulation.1.bias", 1, {S(2D)}, 0},
    RB(0),
    RB(1),
};
