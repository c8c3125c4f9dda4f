/* HunyuanVideo's graph builders, shared by its block kinds (tasks/hunyuan_block.c)
 * and its stages (tasks/hunyuan_stages.c): the work buffers, what one block's or
 * stage's tasks share, and the op helpers over them. */
/* The HunyuanVideo forward (hyvideo/modules/models.py) as chains of generic op
 * tasks: the block kinds "hunyuan_double" (MMDoubleStreamBlock) and "hunyuan_single"
 * (MMSingleStreamBlock), and the stages "hunyuan" around them (embeddings, the token
 * refiner, the final layer).
 *
 * Shapes: Li image tokens, Lt = text_len text rows (the prompt's Lv tokens, then
 * padding), L = Li + Lt, D = dim, F = ffn_dim, hd = head_dim. Every modulation is
 * Linear(SiLU(vec)); the Linear is computed without its bias into a [kD] buffer and
 * the bias enters as the slab term of the layernorm and residual ops (shift = bias +
 * W SiLU(vec)), which is the same fp32 sum.
 *
 *   vec  = time_in(sin t) + vector_in(text_states_2) + guidance_in(sin g)     [D]
 *   c    = t_embedder(sin t) + c_embedder(mean of the prompt's text states)    [D]
 *   txt  = refiner_2(refiner_1(input_embedder(text_states), c))             [Lt, D]
 *   img  = img_in(latent)                                                   [Li, D]
 *   img, txt = double_b(img, txt, vec)                 20 blocks, pool 0
 *   x = [img; txt]; x = single_b(x, vec)               40 blocks, pool 1
 *   out = unpatchify(final_layer(x[:Li], vec))         [C, f, h, w]
 *
 * Attention is joint over [img; txt]: keys are the image tokens and the prompt's text
 * tokens (lk_valid = Li + Lv). Padded text rows are computed against the same keys;
 * they never reach the image output (the official code gives them their own segment,
 * whose values are as meaningless). RoPE rotates image q, k only. */
#ifndef HUNYUAN_PRIV_H
#define HUNYUAN_PRIV_H

#include "dit_codelets.h"
#include "dit_graph.h"
#include "dit_hunyuan.h"
#include "dit_ops.h"

#define NB(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The work buffers of a pass (dit_pass.ws); ps->x is the image stream [Li, D]. */
enum {
	HY_XT = 0, /* [Lt, D] text stream */
	HY_XJ,     /* [L, D] joint stream of the single blocks */
	HY_HI,     /* [Li, D] normed image input of a sub-layer */
	HY_HT,     /* [Lt, D] normed text input */
	HY_HJ,     /* [L, D] normed joint input */
	HY_QKV,    /* [L, 3D] joint q, k, v (the refiner: its first Lt rows; token chunks:
	              k, v alone, [L, 2D]) */
	HY_O,      /* [L, D] joint attention output */
	HY_YI,     /* [Li, D] sub-layer outputs before the residual */
	HY_YT,     /* [Lt, D] */
	HY_YJ,     /* [L, D] */
	HY_FI,     /* [Li, F] MLP hidden */
	HY_FT,     /* [Lt, F] (the refiner: [Lt, 4D]) */
	HY_CAT,    /* [L, D + F] single block: attention output, then gelu_tanh(mlp) */
	HY_MODI,   /* [6D] image modulation, without its bias */
	HY_MODT,   /* [6D] text modulation */
	HY_MOD3,   /* [3D] single-block modulation */
	HY_MOD2,   /* [2D] refiner and final-layer modulation */
	HY_SVEC,   /* [D] SiLU(vec) */
	HY_SC,     /* [D] SiLU(c) of the refiner */
	HY_CLIP,   /* [D] vector_in(text_states_2), once per run */
	HY_CEMB,   /* [D] c_embedder(mean), once per run */
	HY_MEAN,   /* [text_dim] mean of the prompt's text states */
	HY_HID,    /* [D] hidden layer of an embedding MLP */
	HY_TXT0,   /* [Lt, D] input_embedder(text_states), once per run */
	HY_TOK,    /* [Li, C pt ph pw] final layer output */
	HY_S_ATTN, /* scratch of the attention, the patch embedding, the bf16 GEMMs */
	HY_S_PATCH,
	HY_S_LIN,
	HY_Q,  /* token chunks: [max(T, Lt), D] the q of an image chunk or of the text */
	HY_QJ, /* token chunks: [Tj, D] the q of a joint chunk (single blocks) */
	HY_NPASS
};
/* Shared by the passes (dit_graph.ws): this step's time terms. */
enum {
	HY_SIN_T = 0, /* [256] sinusoid of t */
	HY_SIN_G,     /* [256] sinusoid of the guidance input */
	HY_TIN,       /* [D] time_in */
	HY_GIN,       /* [D] guidance_in, once per run */
	HY_RT,        /* [D] the refiner's t_embedder */
	HY_HID_S,     /* [D] hidden layer */
};

/* The small ops have CPU kernels only (codelets/vec_small.c). */
static const dit_task_opts on_cpu = {.where = STARPU_CPU};

/* What the tasks of one block (or stage) share. */
typedef struct hy_ctx {
	dit_graph *g;
	const dit_pass *ps;
	dit_wview w; /* the slab: a block's chunk or the globals */
	int64_t Li, Lt, L, D, F, hd, heads;
	int64_t valid; /* the prompt's text tokens */
} hy_ctx;

hy_ctx dit_hy_ctx_for(dit_graph *g, int p);

/* The globals as the slab. */
void dit_hy_use_globals(hy_ctx *h);

/* y [m, n] (rows ldy apart, from y_off) = act(x [m, k] (from x_off) W^T + b), W the
 * n rows of tensor wt from row r0, b from element r0 of tensor bt (bt < 0: none). */
dit_status dit_hy_linear(const hy_ctx *h, const dit_task_opts *o, const char *name,
                         starpu_data_handle_t x, int64_t x_off, starpu_data_handle_t y,
                         int64_t y_off, int64_t ldy, int64_t m, int64_t n, int64_t k, int wt,
                         int64_t r0, int bt, dit_act act, dit_error *err);

/* y [rows, D] = LN(x) * (1 + scale) + shift for rows x0 .. x0 + rows of x, shift =
 * slab[bias + s0 D] + mod[s0 D], scale likewise from chunk s0 + 1 (the modulation
 * Linear's bias and its output). */
dit_status dit_hy_adaln(const hy_ctx *h, const dit_task_opts *o, const char *name,
                        starpu_data_handle_t x, int64_t x0, starpu_data_handle_t y, int64_t rows,
                        int bias, starpu_data_handle_t mod, int64_t s0, dit_error *err);

/* x [x0 .. x0 + rows) += y [rows, D] * gate, gate = slab[bias + s D] + mod[s D]. */
dit_status dit_hy_gate(const hy_ctx *h, const dit_task_opts *o, const char *name,
                       starpu_data_handle_t x, int64_t x0, starpu_data_handle_t y, int64_t rows,
                       int bias, starpu_data_handle_t mod, int64_t s, dit_error *err);

/* Self-attention of the queries of rows q0 .. q0 + lq over the keys [0, valid) of lk
 * rows, q, k, v [lk, 3D] of one buffer, into o [lq, ldo]. */
dit_status dit_hy_attention(const hy_ctx *h, const char *name, starpu_data_handle_t qkv, int64_t q0,
                            int64_t lq, int64_t lk, int64_t valid, starpu_data_handle_t o,
                            int64_t ldo, dit_error *err);

/* rows of src from row s0 into dst from row d0, [.., D] both. */
dit_status dit_hy_copy_rows(const hy_ctx *h, const dit_task_opts *o, const char *name,
                            starpu_data_handle_t dst, int64_t d0, starpu_data_handle_t src,
                            int64_t rows, dit_error *err);

#endif
