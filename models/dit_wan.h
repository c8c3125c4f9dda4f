/* The Wan2.1 text-to-video DiT as data: its config, the state-dict names and shapes
 * of every tensor (as rules over the config), the layout of one block's weight slab,
 * and built-in presets. No math here. */
#ifndef DIT_WAN_H
#define DIT_WAN_H

#include <stddef.h>
#include <stdint.h>

#include "dit_error.h"

/* Mirrors the official config.json (wan/modules/model.py WanModel arguments). */
typedef struct dit_wan_config {
	char model_type[16]; /* "t2v", "i2v", "ti2v" */
	int64_t dim;         /* D, hidden size: 1536 (1.3B), 5120 (14B) */
	int64_t ffn_dim;     /* F: 8960, 13824 */
	int64_t freq_dim;    /* sinusoid size of the timestep embedding: 256 */
	int64_t in_dim;      /* latent channels in: 16 */
	int64_t out_dim;     /* latent channels out: 16 */
	int64_t num_heads;   /* 12, 40; head_dim = D / heads = 128 */
	int64_t num_layers;  /* blocks: 30, 40 */
	int64_t text_len;    /* context rows after zero padding: 512 */
	int64_t text_dim;    /* context features: 4096 (umT5-XXL) */
	int64_t patch[3];    /* (pt, ph, pw) = (1, 2, 2) */
	double eps;          /* norm epsilon: 1e-6 */
} dit_wan_config;

/* Parses an official config.json; text_dim and patch_size default to 4096 and
 * [1,2,2] when absent. Errors name the file and the key. */
dit_status dit_wan_config_load(dit_wan_config *cfg, const char *path, dit_error *err);

/* The same for len bytes of config.json text already in memory (e.g. a member of a
 * checkpoint archive); name stands for the file in messages. */
dit_status dit_wan_config_parse_text(dit_wan_config *cfg, const char *name, const char *text,
                                     size_t len, dit_error *err);

/* Checks the values (positive sizes, dim divisible by heads, even head_dim, ...). */
dit_status dit_wan_config_check(const dit_wan_config *cfg, const char *path, dit_error *err);

/* The first field in which a and b differ, written to buf as "dim 32 vs 48"; NULL when
 * they are the same config. */
const char *dit_wan_config_diff(const dit_wan_config *a, const dit_wan_config *b, char *buf,
                                size_t len);

/* Writes cfg as config.json (official keys) to path, atomically. */
dit_status dit_wan_config_save(const dit_wan_config *cfg, const char *path, dit_error *err);

/* Symbolic sizes used by the shape rules. */
typedef enum dit_wan_sym {
	DIT_SYM_ONE = 0,
	DIT_SYM_TWO,
	DIT_SYM_SIX,
	DIT_SYM_D,    /* dim */
	DIT_SYM_F,    /* ffn_dim */
	DIT_SYM_6D,   /* 6 * dim */
	DIT_SYM_TEXT, /* text_dim */
	DIT_SYM_FREQ, /* freq_dim */
	DIT_SYM_IN,   /* in_dim */
	DIT_SYM_OUTP, /* out_dim * pt * ph * pw */
	DIT_SYM_PT,
	DIT_SYM_PH,
	DIT_SYM_PW,
} dit_wan_sym;

#define DIT_WAN_MAX_DIMS 5

/* One tensor: its state-dict name (for block tensors, the part after "blocks.N.") and
 * its shape as symbols. */
typedef struct dit_wan_tensor_rule {
	const char *name;
	int ndim;
	dit_wan_sym dims[DIT_WAN_MAX_DIMS];
} dit_wan_tensor_rule;

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
	DIT_WG_COUNT
} dit_wan_global_tensor;

extern const dit_wan_tensor_rule dit_wan_block_rules[DIT_WB_COUNT];
extern const dit_wan_tensor_rule dit_wan_global_rules[DIT_WG_COUNT];

/* Offsets of every tensor in its slab, and the slab sizes, in fp32 slots (4 bytes).
 * With bf16 block weights, the block's GEMM matrices (its 2-D tensors) are stored as
 * bf16, two to a slot (their sizes are even: dim is); every other tensor, and every
 * non-block tensor, stays fp32. */
typedef struct dit_wan_layout {
	int bf16;                               /* block matrices in bf16 */
	unsigned char block_bf16[DIT_WB_COUNT]; /* this tensor is stored as bf16 */
	int64_t block_off[DIT_WB_COUNT];
	int64_t block_numel[DIT_WB_COUNT]; /* elements (not slots) */
	int64_t block_size;                /* slots of one block slab */
	int64_t global_off[DIT_WG_COUNT];
	int64_t global_numel[DIT_WG_COUNT];
	int64_t global_size;
} dit_wan_layout;

/* Size of one symbol under cfg. */
int64_t dit_wan_sym_value(const dit_wan_config *cfg, dit_wan_sym s);

/* Concrete shape of a rule under cfg; returns ndim. */
int dit_wan_rule_shape(const dit_wan_config *cfg, const dit_wan_tensor_rule *r, int64_t *shape);

void dit_wan_layout_init(dit_wan_layout *lay, const dit_wan_config *cfg);
/* The same with the block matrices in bf16 when bf16 is set. */
void dit_wan_layout_init_dtype(dit_wan_layout *lay, const dit_wan_config *cfg, int bf16);

/* Total parameters (blocks and globals). */
int64_t dit_wan_param_count(const dit_wan_config *cfg);

/* Built-in presets: the official configs ("wan2.1-t2v-1.3b", "wan2.1-t2v-14b",
 * "wan2.2-t2v-a14b", "wan2.2-i2v-a14b", "wan2.2-ti2v-5b") and tiny ones for tests
 * ("tiny", "tiny-t2v-a14b", ...); a two-expert preset's experts share its config. NULL-terminated
 * list of names; lookup returns DIT_ENOTFOUND for an unknown name. */
typedef struct dit_wan_preset {
	const char *name;
	const char *about;
	const char *model; /* its dit_model_desc name: "wan2.1-t2v", "wan2.2-t2v-a14b", ... */
	dit_wan_config cfg;
	int frames, height, width; /* default pixel size of a generate run */
	int steps;
} dit_wan_preset;

const dit_wan_preset *dit_wan_presets(size_t *count);
dit_status dit_wan_preset_find(const dit_wan_preset **out, const char *name, dit_error *err);

#endif
