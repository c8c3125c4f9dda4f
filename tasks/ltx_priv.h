/* What the LTX-2 block kind (tasks/ltx_block.c) and its stages (tasks/ltx_stages.c)
 * share: the work buffers, the per-stream view of a block, and the helpers both use
 * (private to those two files). */
#ifndef DIT_LTX_PRIV_H
#define DIT_LTX_PRIV_H

#include "dit_codelets.h"
#include "dit_graph.h"
#include "dit_ltx.h"
#include "ltx_state.h"
#include "dit_ops.h"

#define NB(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The work buffers of a pass (dit_pass.ws); ps->x is the video stream [Lv, D]. */
enum {
	LX_AX = 0, /* [La, Da] audio stream */
	LX_HV,     /* [Lv, D] normed video input of a sub-layer */
	LX_HV2,    /* [Lv, D] second normed video input (the v2a keys) */
	LX_HA,     /* [La, Da] */
	LX_HA2,    /* [La, Da] */
	LX_QKV,    /* [Lv, 3D] video self-attention q, k, v; the text query in its q (token
	            * chunks: [Lv, 2D] k, v alone) */
	LX_VQ,     /* token chunks: [T, D] a chunk's self-attention or text query */
	LX_AQKV,   /* [La, 3Da] */
	LX_O,      /* [Lv, D] video attention output */
	LX_AO,     /* [La, Da] */
	LX_Y,      /* [Lv, D] sub-layer output before its residual */
	LX_AY,     /* [La, Da] */
	LX_KV,     /* [Lt, 2D] text keys, values */
	LX_AKV,    /* [Lt, 2Da] */
	LX_AVQ,    /* [Lv, Da] a2v queries */
	LX_AVKV,   /* [La, 2Da] a2v keys, values */
	LX_AVO,    /* [Lv, Da] a2v output */
	LX_VAQ,    /* [La, Da] v2a queries */
	LX_VAKV,   /* [Lv, 2Da] */
	LX_VAO,    /* [La, Da] */
	LX_GL,     /* [Lv, H] gate logits */
	LX_AGL,    /* [La, H] */
	LX_F,      /* [Lv, F] MLP hidden */
	LX_AF,     /* [La, Fa] */
	LX_CTXV,   /* [Lt, D] the video context the blocks read */
	LX_CTXA,   /* [Lt, Da] */
	LX_ACTX,   /* [Lt, aux_text_dim] the audio context input */
	LX_CAPH,   /* [Lt, max(D, Da)] caption projection hidden */
	LX_MCTX,   /* [Lt, D] the modulated text context (2.3+) */
	LX_AMCTX,  /* [Lt, Da] */
	LX_ALAT,   /* [La, 128] patchified audio latent */
	LX_ATOK,   /* [La, 128] audio head tokens */
	LX_AOUT,   /* [8, T, 16] audio velocity */
	LX_S_ATTN, /* scratch of the attention, the patch embedding, bf16 GEMMs, heads */
	LX_S_PATCH,
	LX_S_LIN,
	LX_S_HEAD,
	LX_NPASS
};
/* Shared by the passes (dit_graph.ws). */
enum {
	LS_EV = 0,  /* [ntv, D] video embedded timestep */
	LS_E0V,     /* [ntv, ada_rows D] video block tables */
	LS_AVV,     /* [ntv, 4D] video a2v/v2a scale, shift */
	LS_GV,      /* [D] a2v gate (from the audio sigma) */
	LS_PV,      /* [2D] prompt table (2.3+, from the video sigma) */
	LS_EA,      /* [nta, Da] */
	LS_E0A,     /* [nta, ada_rows Da] */
	LS_AVA,     /* [nta, 4Da] */
	LS_GA,      /* [Da] v2a gate (from the video sigma) */
	LS_PA,      /* [2Da] */
	LS_EJ,      /* embedded timesteps nobody reads */
	LS_S_TIME,  /* time embedding scratch */
	LS_ROPE_V,  /* [Lv, H, hd/2, 2] doubles: video self-attention */
	LS_ROPE_VX, /* [Lv, H, ha/2, 2]: the video side of the cross-attentions */
	LS_ROPE_A,  /* [La, H, ha/2, 2]: audio self-attention */
	LS_ROPE_AX, /* [La, H, ha/2, 2]: the audio side of the cross-attentions */
	LS_ALAT,    /* [8, T, 16] the audio latent input */
	LS_VPOS,    /* [3, Lv, 2] doubles: video token bounds (s, px, px) */
	LS_APOS,    /* [1, La, 2] doubles: audio token bounds (s) */
};

/* The small ops have CPU kernels only. */
static const dit_task_opts lx_on_cpu = {.where = STARPU_CPU};

/* One stream's sizes and buffers inside a block. */
typedef struct lx_stream {
	int a;                          /* 0 video, 1 audio */
	int64_t L, D, F, hd, ntok_rows; /* tokens, width, MLP width, head width, mod_rows */
	int64_t T; /* token chunks: a chunk's rows (h, h2, q, o, y, gl, f hold one; 0: whole) */
	starpu_data_handle_t x, h, h2, qkv, q, o, y, kv, gl, f, ctx, mctx;
	starpu_data_handle_t e0, av, gate, prompt, rope, rope_x;
	int self, text, ff1w, ff1b, ff2w, ff2b, sst, avsst, psst; /* tensor indices */
} lx_stream;

typedef struct lx_ctx {
	dit_graph *g;
	const dit_pass *ps;
	const dit_hparams *c;
	dit_wview w; /* the slab the tasks read: a block's chunk or the globals */
	int64_t H, Lt, valid[2];
	int audio; /* the run has an audio stream */
	lx_stream s[2];
} lx_ctx;

static inline int64_t dit_ltx_max(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* The streams of pass p (the current expert's sizes and this pass's buffers). */
lx_ctx dit_ltx_ctx_for(dit_graph *g, int p);

/* The globals as the slab of the next tasks. */
void dit_ltx_use_globals(lx_ctx *h);

/* y [m, n] (rows ldy apart, from column y_off) = act(x [m, k] (rows ldx apart, from
 * x_off) W^T + b), W tensor wt of the slab, b tensor bt (< 0: none). */
dit_status dit_ltx_linear(const lx_ctx *h, const dit_task_opts *o, const char *name,
                          starpu_data_handle_t x, int64_t x_off, int64_t ldx,
                          starpu_data_handle_t y, int64_t y_off, int64_t ldy, int64_t m, int64_t n,
                          int64_t k, int wt, int bt, dit_act act, dit_error *err);

#endif
