/* The LTX-2 family as data (Lightricks/LTX-2, packages/ltx-core/src/ltx_core/model/
 * transformer/: LTXModel, BasicAVTransformerBlock): its config keys, and the state-dict
 * names and shapes of every tensor, in the slab order the block kind "ltx_av" and the
 * stages "ltx" (tasks/ltx_block.c) index them by. Two token streams: video (dim D,
 * the first) and audio (aux_dim Da, the second). No math here. */
#ifndef DIT_LTX_H
#define DIT_LTX_H

#include "dit_family_opts.h"
#include "dit_hparams.h"

extern const dit_config_desc dit_ltx_config_desc;

/* The fields of one attention (ltx_core Attention): q, k, v, out projections with
 * biases, RMSNorms of q and k over the whole inner dim, and (LTX-2.3+) the per-head
 * gate logits. */
typedef enum dit_ltx_attn_tensor {
	DIT_LA_Q_W = 0,
	DIT_LA_Q_B,
	DIT_LA_K_W,
	DIT_LA_K_B,
	DIT_LA_V_W,
	DIT_LA_V_B,
	DIT_LA_O_W, /* to_out.0 */
	DIT_LA_O_B,
	DIT_LA_NQ, /* q_norm [inner] */
	DIT_LA_NK,
	DIT_LA_G_W, /* to_gate_logits [heads, query_dim] */
	DIT_LA_G_B,
	DIT_LA_COUNT
} dit_ltx_attn_tensor;

/* The six attentions of a block, in slab order (attention a's field f is tensor
 * a * DIT_LA_COUNT + f). */
typedef enum dit_ltx_attn {
	DIT_LX_V_SELF = 0, /* attn1: video self-attention */
	DIT_LX_V_TEXT,     /* attn2: video text cross-attention */
	DIT_LX_A_SELF,     /* audio_attn1 */
	DIT_LX_A_TEXT,     /* audio_attn2 */
	DIT_LX_A2V,        /* audio_to_video_attn: q video, k v audio (audio geometry) */
	DIT_LX_V2A,        /* video_to_audio_attn: q audio, k v video */
	DIT_LX_COUNT
} dit_ltx_attn;

#define DIT_LTX_ATT(a, f) ((a)*DIT_LA_COUNT + (f))

/* A block (transformer_blocks.N.): the attentions, then these. */
typedef enum dit_ltx_block_tensor {
	DIT_LB_FF1_W = DIT_LX_COUNT * DIT_LA_COUNT, /* ff.net.0.proj [F, D] */
	DIT_LB_FF1_B,
	DIT_LB_FF2_W, /* ff.net.2 [D, F] */
	DIT_LB_FF2_B,
	DIT_LB_AFF1_W, /* audio_ff.net.0.proj [Fa, Da] */
	DIT_LB_AFF1_B,
	DIT_LB_AFF2_W,
	DIT_LB_AFF2_B,
	DIT_LB_SST,     /* scale_shift_table [ada_rows, D]: shift, scale, gate (attn1), the
	                   same (ff), then shift, scale, gate of the text query (2.3+) */
	DIT_LB_ASST,    /* audio_scale_shift_table [ada_rows, Da] */
	DIT_LB_AV_ASST, /* scale_shift_table_a2v_ca_audio [5, Da]: scale, shift (a2v), scale,
	                   shift (v2a), gate (v2a) */
	DIT_LB_AV_VSST, /* scale_shift_table_a2v_ca_video [5, D]: the same, gate (a2v) */
	DIT_LB_PSST,    /* prompt_scale_shift_table [2, D]: shift, scale of the text K/V */
	DIT_LB_APSST,   /* audio_prompt_scale_shift_table [2, Da] */
	DIT_LB_COUNT
} dit_ltx_block_tensor;

/* An AdaLayerNormSingle: sinusoid(256) -> linear_1, SiLU, linear_2 (the embedded
 * timestep), then linear(SiLU(.)) of k x width outputs. */
typedef enum dit_ltx_adaln_tensor {
	DIT_LN_L1_W = 0, /* emb.timestep_embedder.linear_1 [W, 256] */
	DIT_LN_L1_B,
	DIT_LN_L2_W, /* emb.timestep_embedder.linear_2 [W, W] */
	DIT_LN_L2_B,
	DIT_LN_P_W, /* linear [k W, W] */
	DIT_LN_P_B,
	DIT_LN_COUNT
} dit_ltx_adaln_tensor;

/* The AdaLNs of the globals, in slab order. */
typedef enum dit_ltx_adaln {
	DIT_LT_V = 0,    /* adaln_single: ada_rows x D */
	DIT_LT_A,        /* audio_adaln_single: ada_rows x Da */
	DIT_LT_VP,       /* prompt_adaln_single: 2 x D (2.3+) */
	DIT_LT_AP,       /* audio_prompt_adaln_single */
	DIT_LT_V_AVSS,   /* av_ca_video_scale_shift_adaln_single: 4 x D */
	DIT_LT_A_AVSS,   /* av_ca_audio_scale_shift_adaln_single: 4 x Da */
	DIT_LT_A2V_GATE, /* av_ca_a2v_gate_adaln_single: 1 x D */
	DIT_LT_V2A_GATE, /* av_ca_v2a_gate_adaln_single: 1 x Da */
	DIT_LT_COUNT
} dit_ltx_adaln;

#define DIT_LTX_ADALN(t, f) ((t)*DIT_LN_COUNT + (f))

/* The other globals, after the AdaLNs. */
typedef enum dit_ltx_global_tensor {
	DIT_LG_PATCH_W = DIT_LT_COUNT * DIT_LN_COUNT, /* patchify_proj [D, in] */
	DIT_LG_PATCH_B,
	DIT_LG_APATCH_W, /* audio_patchify_proj [Da, aux_in] */
	DIT_LG_APATCH_B,
	DIT_LG_CAP1_W, /* caption_projection.linear_1 [D, text_dim] (LTX-2 19B) */
	DIT_LG_CAP1_B,
	DIT_LG_CAP2_W, /* caption_projection.linear_2 [D, D] */
	DIT_LG_CAP2_B,
	DIT_LG_ACAP1_W, /* audio_caption_projection.linear_1 [Da, aux_text_dim] */
	DIT_LG_ACAP1_B,
	DIT_LG_ACAP2_W,
	DIT_LG_ACAP2_B,
	DIT_LG_SST,   /* scale_shift_table [2, D]: shift, scale of the output */
	DIT_LG_OUT_W, /* proj_out [out, D] */
	DIT_LG_OUT_B,
	DIT_LG_ASST,   /* audio_scale_shift_table [2, Da] */
	DIT_LG_AOUT_W, /* audio_proj_out [aux_out, Da] */
	DIT_LG_AOUT_B,
	DIT_LG_KEYFRAME, /* keyframes_abs_pos_embedding [1, D] (LTX-2.5) */
	DIT_LG_COUNT
} dit_ltx_global_tensor;

extern const dit_tensor_desc dit_ltx_block_rules[DIT_LB_COUNT];
extern const dit_tensor_desc dit_ltx_global_rules[DIT_LG_COUNT];

/* LTX-2's own options (dit_family_opts.h): the slots of their values. */
enum {
	DIT_LTX_OPT_VIDEO_CFG = 0,    /* num: the video stream's CFG scale */
	DIT_LTX_OPT_AUDIO_CFG = 1,    /* num: the audio stream's CFG scale */
	DIT_LTX_OPT_STG = 2,          /* num: the STG scale */
	DIT_LTX_OPT_MODALITY = 3,     /* num: the isolated-modality scale */
	DIT_LTX_OPT_RESCALE = 4,      /* num: the guidance rescale */
	DIT_LTX_OPT_FPS = 5,          /* num: the frame rate of the default positions */
	DIT_LTX_OPT_IMG_STRENGTH = 6, /* num: the image latent's conditioning strength */
	DIT_LTX_OPT_IMG_FRAME = 7,    /* num: the latent frame the image latent sets */
	DIT_LTX_OPT_STG_BLOCKS = 0,   /* str: the STG pass's blocks */
	DIT_LTX_OPT_SIGMAS = 1,       /* str: the sigmas, or "distilled" */
};
extern const dit_family_doc dit_ltx_doc;

#endif
