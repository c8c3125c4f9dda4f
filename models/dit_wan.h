/* The Wan DiT as data (Wan2.1 and Wan2.2): its config keys, and the state-dict names
 * and shapes of every tensor (as rules over the hyper-parameters), in the slab order the
 * block kind "wan" (tasks/wan_block.c) indexes them by. No math here. */
#ifndef DIT_WAN_H
#define DIT_WAN_H

#include <stddef.h>
#include <stdint.h>

#include "dit_family_opts.h"
#include "dit_hparams.h"

/* The Wan config.json (wan/modules/model.py WanModel arguments; num_layers is the
 * block count of the one pool), read by src/checkpoint/dit_config.c. */
extern const dit_config_desc dit_wan_config_desc;

/* Tensors of one block, in slab order. The order is chosen so that tensors used by
 * one GEMM are adjacent: q, k, v weights form one [3D, D] matrix and their biases one
 * [3D] vector; the cross-attention k, v weights one [2D, D] matrix. */
typedef enum dit_wan_block_tensor {
	DIT_WB_MOD = 0, /* modulation [1, 6, D] */
	DIT_WB_SA_QW,
	DIT_WB_SA_KW,
	DIT_WB_SA_VW,
	DIT_WB_SA_QB,
	DIT_WB_SA_KB,
	DIT_WB_SA_VB,
	DIT_WB_SA_OW,
	DIT_WB_SA_OB,
	DIT_WB_SA_NQ,
	DIT_WB_SA_NK,
	DIT_WB_N3W,
	DIT_WB_N3B,
	DIT_WB_CA_QW,
	DIT_WB_CA_QB,
	DIT_WB_CA_KW,
	DIT_WB_CA_VW,
	DIT_WB_CA_KB,
	DIT_WB_CA_VB,
	DIT_WB_CA_OW,
	DIT_WB_CA_OB,
	DIT_WB_CA_NQ,
	DIT_WB_CA_NK,
	DIT_WB_F0W,
	DIT_WB_F0B,
	DIT_WB_F2W,
	DIT_WB_F2B,
	/* Wan2.1 I2V: the image keys and values ([2D, D] for one GEMM), the image keys'
	 * RMSNorm (absent from the other models: no slab slots) */
	DIT_WB_CA_KIW,
	DIT_WB_CA_VIW,
	DIT_WB_CA_KIB,
	DIT_WB_CA_VIB,
	DIT_WB_CA_NKI,
	DIT_WB_COUNT
} dit_wan_block_tensor;

/* Tensors outside the blocks, in the order of the globals slab. */
typedef enum dit_wan_global_tensor {
	DIT_WG_PATCH_W = 0, /* patch_embedding.weight [D, in, pt, ph, pw] */
	DIT_WG_PATCH_B,
	DIT_WG_TEXT0_W,
	DIT_WG_TEXT0_B,
	DIT_WG_TEXT2_W,
	DIT_WG_TEXT2_B,
	DIT_WG_TIME0_W,
	DIT_WG_TIME0_B,
	DIT_WG_TIME2_W,
	DIT_WG_TIME2_B,
	DIT_WG_TPROJ_W,
	DIT_WG_TPROJ_B,
	DIT_WG_HEAD_W,
	DIT_WG_HEAD_B,
	DIT_WG_HEAD_MOD, /* head.modulation [1, 2, D] */
	/* Wan2.1 I2V's image projection MLPProj: LayerNorm, Linear, GELU, Linear,
	 * LayerNorm (img_emb.proj.0 .. 4); FLF2V's positions img_emb.emb_pos */
	DIT_WG_IMG_N0W,
	DIT_WG_IMG_N0B,
	DIT_WG_IMG_L1W,
	DIT_WG_IMG_L1B,
	DIT_WG_IMG_L3W,
	DIT_WG_IMG_L3B,
	DIT_WG_IMG_N4W,
	DIT_WG_IMG_N4B,
	DIT_WG_IMG_POS, /* [1, image_tokens, image_dim] */
	DIT_WG_COUNT
} dit_wan_global_tensor;

extern const dit_tensor_desc dit_wan_block_rules[DIT_WB_COUNT];
extern const dit_tensor_desc dit_wan_global_rules[DIT_WG_COUNT];

/* Without config.json (a one-file checkpoint): the configuration from the tensor
 * shapes (models/wan_shapes.c), a family's config_from_shapes. */
int dit_wan_from_shapes(int (*shape)(void *arg, const char *name, int64_t *dims), void *arg,
                        dit_hparams *hp, char *why, size_t len);

/* The same for one expert of Wan2.2 A14B (T2V-A14B and I2V-A14B's config_from_shapes):
 * more channels in than out is I2V-A14B, 48 channels (TI2V-5B) are refused. */
int dit_wan_expert_from_shapes(int (*shape)(void *arg, const char *name, int64_t *dims), void *arg,
                               dit_hparams *hp, char *why, size_t len);

/* The image features of a Wan2.1 image-to-video checkpoint (CLIP ViT-H/14's, 257
 * tokens of 1280 per image; FLF2V two images). */
#define DIT_WAN_CLIP_DIM    1280
#define DIT_WAN_CLIP_TOKENS 257

/* Wan2.2's own options (dit_family_opts.h): the slots of their values. */
enum {
	DIT_WAN22_OPT_GUIDANCE_HIGH = 0, /* num: the high-noise expert's scale */
	DIT_WAN22_OPT_BOUNDARY = 1,      /* num: the experts' boundary */
	DIT_WAN22_OPT_EXPERT = 0,        /* str: forward's expert, "high" or "low" */
};
extern const dit_family_doc dit_wan21_doc, dit_wan22_doc;

#endif
