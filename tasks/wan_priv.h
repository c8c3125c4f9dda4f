/* What the Wan block kind (tasks/wan_block.c) and its image stage (tasks/wan_image.c)
 * share: the work buffers of a Wan forward (dit_pass.ws, dit_graph.ws). */
#ifndef DIT_WAN_PRIV_H
#define DIT_WAN_PRIV_H

#include "dit_error.h"
#include "dit_graph.h"

/* Per pass. */
enum {
	WAN_CTX = 0, /* [Lc, D] embedded context */
	WAN_H,       /* [L, D] normed input of a sub-layer (token chunks: [T, D], T the
	                longest chunk, likewise q, o, y, ffn) */
	WAN_QKV,     /* [L, 3D] */
	WAN_Q,       /* [L, D] cross-attention query */
	WAN_KV,      /* [Lc, 2D] cross-attention keys, values */
	WAN_O,       /* [L, D] attention output */
	WAN_Y,       /* [L, D] sub-layer output before the residual */
	WAN_FFN,     /* [L, F] */
	WAN_S_ATTN,  /* scratch of the attention, the patch embedding, the head, the text */
	WAN_S_PATCH, /* embedding and the block GEMMs with bf16 weights */
	WAN_S_HEAD,
	WAN_S_TEXT,
	WAN_S_LIN,
	WAN_KVI, /* [Li, 2D] the image keys, values of the block (Wan2.1 I2V) */
};

/* Shared by the passes. */
enum {
	WAN_E = 0,  /* [T, D] time embedding of the current step, a row per distinct t */
	WAN_E0,     /* [T, 6D] its projection */
	WAN_S_TIME, /* [min(T, DIT_TIME_MAX_T) * (freq_dim + D)] */
	/* Wan2.1 I2V: the image features [Li, image_dim] (the input "clip_fea", Li =
	 * image_tokens), two buffers of the projection [Li, max(image_dim, D)], the
	 * projected image context [Li, D] every block's cross-attention reads */
	WAN_CLIP,
	WAN_IMG_A,
	WAN_IMG_B,
	WAN_CTX_IMG,
};

/* The image buffers of the workspace (none without image features). */
void dit_wan_image_workspace(const dit_hparams *c, dit_ws_spec *ws);

/* ctx_img = img_emb(clip_fea [+ emb_pos]) into WAN_CTX_IMG, once for the passes
 * (nothing without image features). */
dit_status dit_wan_image_embed(dit_graph *g, dit_error *err);

#endif
