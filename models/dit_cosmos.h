/* Cosmos-Predict2.5 as data (nvidia-cosmos/cosmos-predict2.5, MinimalV1LVGDiT in
 * cosmos_predict2/_src/predict2/networks/minimal_v4_dit.py): its config keys, and the
 * state-dict names and shapes of every tensor (after the checkpoint's "net." prefix),
 * in the slab order the block kind "cosmos" and the stages "cosmos"
 * (tasks/cosmos_block.c) index them by. No math here. */
#ifndef DIT_COSMOS_H
#define DIT_COSMOS_H

#include "dit_family_opts.h"
#include "dit_hparams.h"

extern const dit_config_desc dit_cosmos_config_desc;
extern const dit_config_desc dit_cosmos_diffusers_config;

/* The official config's derived fields (head_dim, MLP width, input channels) and its
 * relations, which diffusers' layout shares. */
void dit_cosmos_derive(dit_hparams *hp);
int dit_cosmos_check(const dit_hparams *hp, char *why, size_t len);

/* A block (blocks.N.): no biases anywhere. */
typedef enum dit_cosmos_block_tensor {
	DIT_CB_SQ = 0, /* self_attn.q_proj [D, D] */
	DIT_CB_SK,
	DIT_CB_SV,
	DIT_CB_SO,  /* self_attn.output_proj */
	DIT_CB_SNQ, /* self_attn.q_norm [head_dim] */
	DIT_CB_SNK,
	DIT_CB_CQ, /* cross_attn.q_proj [D, D] */
	DIT_CB_CK, /* cross_attn.k_proj [D, crossattn_emb_channels] */
	DIT_CB_CV,
	DIT_CB_CO,
	DIT_CB_CNQ,
	DIT_CB_CNK,
	DIT_CB_FC1, /* mlp.layer1 [F, D] */
	DIT_CB_FC2, /* mlp.layer2 [D, F] */
	DIT_CB_MOD, /* adaln_modulation_{self_attn, cross_attn, mlp}: .1 [r, D], .2 [3D, r] */
	DIT_CB_COUNT = DIT_CB_MOD + 6
} dit_cosmos_block_tensor;

/* Outside the blocks. */
typedef enum dit_cosmos_global_tensor {
	DIT_CG_PATCH = 0, /* x_embedder.proj.1 [D, (in + 2) pt ph pw] */
	DIT_CG_T1,        /* t_embedder.1.linear_1 [D, D] */
	DIT_CG_T2,        /* t_embedder.1.linear_2 [3D, D]: the AdaLN-LoRA term */
	DIT_CG_TNORM,     /* t_embedding_norm [D] */
	DIT_CG_XPROJ_W,   /* crossattn_proj.0 [crossattn_emb_channels, text_dim] */
	DIT_CG_XPROJ_B,
	DIT_CG_FINAL, /* final_layer.linear [out pt ph pw, D] */
	DIT_CG_FMOD1, /* final_layer.adaln_modulation.1 [r, D] */
	DIT_CG_FMOD2, /* final_layer.adaln_modulation.2 [2D, r] */
	DIT_CG_COUNT
} dit_cosmos_global_tensor;

extern const dit_tensor_desc dit_cosmos_block_rules[DIT_CB_COUNT];
extern const dit_tensor_desc dit_cosmos_global_rules[DIT_CG_COUNT];

/* Cosmos-Predict2.5's own options (dit_family_opts.h): the slots of their values. */
enum {
	DIT_COSMOS_OPT_COND_FRAMES = 0, /* num: the conditioning latent frames */
	DIT_COSMOS_OPT_SCHEDULE = 0,    /* str: "karras" or "linear" */
	DIT_COSMOS_OPT_COND_PATH = 1,   /* str: the conditioning latent's file */
};
extern const dit_family_doc dit_cosmos_doc;

#endif
