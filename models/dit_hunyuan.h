/* HunyuanVideo 1.0 as data (hyvideo/modules/models.py, HYVideoDiffusionTransformer):
 * its config keys, and the state-dict names and shapes of every tensor, in the slab
 * order the block kinds "hunyuan_double" and "hunyuan_single" and the stages
 * "hunyuan" (tasks/hunyuan_block.c) index them by. No math here. */
#ifndef DIT_HUNYUAN_H
#define DIT_HUNYUAN_H

#include "dit_family_opts.h"
#include "dit_hparams.h"

extern const dit_config_desc dit_hunyuan_config_desc;

/* The official config's derived fields and relations, which the diffusers format
 * shares (models/hunyuan.c). */
void dit_hunyuan_derive(dit_hparams *hp);
int dit_hunyuan_check(const dit_hparams *hp, char *why, size_t len);

/* A double-stream block: an image half, then a text half of the same tensors
 * (DIT_HD_TXT + i is the text twin of image tensor i). */
typedef enum dit_hunyuan_double_tensor {
	DIT_HD_MOD_W = 0, /* img_mod.linear [6D, D]: shift, scale, gate of attention, then MLP */
	DIT_HD_MOD_B,
	DIT_HD_QKV_W, /* img_attn_qkv [3D, D] */
	DIT_HD_QKV_B,
	DIT_HD_NQ, /* img_attn_q_norm [head_dim] */
	DIT_HD_NK,
	DIT_HD_PROJ_W, /* img_attn_proj [D, D] */
	DIT_HD_PROJ_B,
	DIT_HD_FC1_W, /* img_mlp.fc1 [F, D] */
	DIT_HD_FC1_B,
	DIT_HD_FC2_W, /* img_mlp.fc2 [D, F] */
	DIT_HD_FC2_B,
	DIT_HD_TXT, /* the txt_* tensors follow in the same order */
	DIT_HD_COUNT = 2 * DIT_HD_TXT
} dit_hunyuan_double_tensor;

typedef enum dit_hunyuan_single_tensor {
	DIT_HS_LIN1_W = 0, /* linear1 [3D + F, D]: q, k, v, then the MLP input */
	DIT_HS_LIN1_B,
	DIT_HS_LIN2_W, /* linear2 [D, D + F] over cat(attention, gelu_tanh(mlp)) */
	DIT_HS_LIN2_B,
	DIT_HS_NQ, /* q_norm [head_dim] */
	DIT_HS_NK,
	DIT_HS_MOD_W, /* modulation.linear [3D, D]: shift, scale, gate */
	DIT_HS_MOD_B,
	DIT_HS_COUNT
} dit_hunyuan_single_tensor;

/* One token-refiner block (txt_in.individual_token_refiner.blocks.N.), in the globals. */
typedef enum dit_hunyuan_refiner_tensor {
	DIT_HR_N1W = 0, /* norm1 (affine) [D] */
	DIT_HR_N1B,
	DIT_HR_QKV_W, /* self_attn_qkv [3D, D] */
	DIT_HR_QKV_B,
	DIT_HR_PROJ_W, /* self_attn_proj [D, D] */
	DIT_HR_PROJ_B,
	DIT_HR_N2W, /* norm2 (affine) [D] */
	DIT_HR_N2B,
	DIT_HR_FC1_W, /* mlp.fc1 [4D, D] */
	DIT_HR_FC1_B,
	DIT_HR_FC2_W, /* mlp.fc2 [D, 4D] */
	DIT_HR_FC2_B,
	DIT_HR_MOD_W, /* adaLN_modulation.1 [2D, D]: gate of attention, gate of MLP */
	DIT_HR_MOD_B,
	DIT_HR_COUNT
} dit_hunyuan_refiner_tensor;

#define DIT_HUNYUAN_REFINER_BLOCKS 2

/* Tensors outside the blocks, in the order of the globals slab. */
typedef enum dit_hunyuan_global_tensor {
	DIT_HG_PATCH_W = 0, /* img_in.proj [D, C, pt, ph, pw] */
	DIT_HG_PATCH_B,
	DIT_HG_TIME0_W, /* time_in.mlp.0 [D, 256] */
	DIT_HG_TIME0_B,
	DIT_HG_TIME2_W, /* time_in.mlp.2 [D, D] */
	DIT_HG_TIME2_B,
	DIT_HG_VEC0_W, /* vector_in.in_layer [D, text_dim_2] */
	DIT_HG_VEC0_B,
	DIT_HG_VEC2_W, /* vector_in.out_layer [D, D] */
	DIT_HG_VEC2_B,
	DIT_HG_GUID0_W, /* guidance_in.mlp.0 [D, 256] */
	DIT_HG_GUID0_B,
	DIT_HG_GUID2_W, /* guidance_in.mlp.2 [D, D] */
	DIT_HG_GUID2_B,
	DIT_HG_TXT_IN_W, /* txt_in.input_embedder [D, text_dim] */
	DIT_HG_TXT_IN_B,
	DIT_HG_TXT_T0_W, /* txt_in.t_embedder.mlp.0 [D, 256] */
	DIT_HG_TXT_T0_B,
	DIT_HG_TXT_T2_W, /* txt_in.t_embedder.mlp.2 [D, D] */
	DIT_HG_TXT_T2_B,
	DIT_HG_TXT_C1_W, /* txt_in.c_embedder.linear_1 [D, text_dim] */
	DIT_HG_TXT_C1_B,
	DIT_HG_TXT_C2_W, /* txt_in.c_embedder.linear_2 [D, D] */
	DIT_HG_TXT_C2_B,
	DIT_HG_FINAL_W, /* final_layer.linear [C pt ph pw, D] */
	DIT_HG_FINAL_B,
	DIT_HG_FINAL_MOD_W, /* final_layer.adaLN_modulation.1 [2D, D]: shift, then scale */
	DIT_HG_FINAL_MOD_B,
	DIT_HG_REFINER, /* then DIT_HUNYUAN_REFINER_BLOCKS x DIT_HR_COUNT refiner tensors */
	DIT_HG_COUNT = DIT_HG_REFINER + DIT_HUNYUAN_REFINER_BLOCKS * DIT_HR_COUNT
} dit_hunyuan_global_tensor;

extern const dit_tensor_desc dit_hunyuan_double_rules[DIT_HD_COUNT];
extern const dit_tensor_desc dit_hunyuan_single_rules[DIT_HS_COUNT];
extern const dit_tensor_desc dit_hunyuan_global_rules[DIT_HG_COUNT];
/* ComfyUI's internal names of the tensors (models/hunyuan_comfy.c) */
#define DIT_HUNYUAN_COMFY_NAMES 60
extern const dit_rename dit_hunyuan_comfy_names[DIT_HUNYUAN_COMFY_NAMES];

/* HunyuanVideo's own option (dit_family_opts.h): the slot of its value. */
enum {
	DIT_HUNYUAN_OPT_EMBEDDED = 0, /* num: the embedded guidance scale */
};
extern const dit_family_doc dit_hunyuan_doc;

#endif
