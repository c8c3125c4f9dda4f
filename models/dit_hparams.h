/* What every family's descriptor is made of below the family level: hyper-parameters,
 * the config.json keys they are read from, tensor tables whose shapes are rules over
 * the hyper-parameters, the slab layout of such a table, and presets. No math here;
 * the config.json parser that reads a key table is src/checkpoint/dit_config.c. */
#ifndef DIT_HPARAMS_H
#define DIT_HPARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "dit_wdt.h"

#define DIT_MAX_POOLS   4
#define DIT_T_MAX_DIMS  5
#define DIT_MAX_TENSORS 96

/* A model's sizes, as its config.json gives them. One struct serves every family (as
 * llama.cpp's hparams do): a family's key table says which fields it reads; fields it
 * does not read stay 0. */
typedef struct dit_hparams {
	char model_type[16]; /* the family's variant: Wan "t2v", "i2v", "ti2v" */
	int64_t dim;         /* D, width of the token stream: 1536 (Wan 1.3B), 5120 (14B) */
	int64_t ffn_dim;     /* F, hidden width of the MLP: 8960, 13824 */
	int64_t freq_dim;    /* sinusoid size of the timestep embedding: 256 */
	int64_t in_dim;      /* latent channels into the patch embedding: 16 */
	int64_t out_dim;     /* latent channels out of the head: 16 */
	int64_t num_heads;   /* 12, 40 */
	int64_t head_dim;    /* D / heads = 128 */
	int64_t layers[DIT_MAX_POOLS]; /* blocks of each pool: 30, 40 */
	int64_t text_len;              /* context rows after zero padding: 512 */
	int64_t text_dim;              /* context features: 4096 (umT5-XXL) */
	int64_t patch[3];              /* (pt, ph, pw) = (1, 2, 2) */
	double eps;                    /* norm epsilon: 1e-6 */
	/* HunyuanVideo and the later families */
	int64_t text_dim_2;     /* pooled text features (CLIP-L): 768 */
	int64_t rope_dims[3];   /* RoPE features of the t, h, w axes ([16, 56, 56]; 0: the
	                           family's split) */
	double rope_theta;      /* RoPE base (0: the family's) */
	double mlp_ratio;       /* ffn_dim / dim where the config gives a ratio */
	int64_t guidance_embed; /* the network takes the guidance scale as an input */
	int64_t refiner_layers; /* HunyuanVideo's token-refiner blocks (2) */
	/* a second token stream (LTX-2's audio) beside the first: its width, heads, MLP
	 * width, latent features in and out per token, text features */
	int64_t aux_dim, aux_heads, aux_ffn_dim, aux_in, aux_out, aux_text_dim;
	int64_t ada_rows;        /* rows of a block's modulation table (LTX-2: 6, 2.3+: 9) */
	int64_t gated_attn;      /* per-head gates on every attention (LTX-2.3+) */
	int64_t ca_adaln;        /* AdaLN on the text cross-attention (LTX-2.3+) */
	int64_t prompt_adaln;    /* ... with a timestep-dependent prompt AdaLN (with ca_adaln) */
	int64_t ff_bias;         /* the first stream's MLP has biases */
	int64_t aux_ff_bias;     /* the second stream's MLP has biases */
	int64_t caption_outside; /* the text projection is the text encoder's (LTX-2.3+);
	                            else the network's (LTX-2 19B) */
	int64_t keyframes;       /* a learned embedding added to first-frame tokens (LTX-2.5) */
	int64_t max_pos[3];      /* RoPE position range per axis (LTX: 20 s, 2048 px, 2048 px) */
	int64_t aux_max_pos;     /* ... of the second stream's time axis (20 s) */
	double ts_mult;          /* timestep = sigma x this (1000) */
	double av_ts_mult;       /* the cross-stream gates' timestep multiplier (LTX: 1000) */
	int64_t aux_head_dim;    /* head width of the second stream */
	int64_t cross_dim, aux_cross_dim; /* the text cross-attentions' context widths */
	/* Cosmos-Predict2.5 */
	int64_t lora_dim;       /* AdaLN-LoRA rank (256) */
	double rope_ratio[3];   /* RoPE extrapolation ratios of the t, h, w axes (1, 3, 3) */
	int64_t max_size[3];    /* largest latent frames, rows, columns (128, 240, 240) */
	int64_t concat_padding; /* the padding mask is an input channel */
	int64_t in_latent;      /* the latent's channels ("in_channels"; in_dim adds the
	                           mask channels) */
	int64_t in_cond;        /* diffusers' Cosmos "in_channels": the latent's and the
	                           condition mask's (0: not given) */
	int64_t cross_out;      /* diffusers' Cosmos "encoder_hidden_states_channels": the
	                           text projection's width (0: not given) */
	/* Wan2.1 image-to-video: the CLIP image features the network reads beside the
	 * text (1280; 0: none), their rows (257; FLF2V 514, two images), learned
	 * positions added to them (FLF2V), diffusers' width of the image keys */
	int64_t image_dim, image_tokens, image_pos, added_kv_dim;
	/* the config.json format the values were read from, and are written back in
	 * (NULL: the official one of the family of model_type) */
	const struct dit_config_desc *config;
} dit_hparams;

/* How a config.json key fills a field of dit_hparams. */
typedef enum dit_config_kind {
	DIT_CK_INT = 0, /* an int64 field: a JSON integer (or an integral double) */
	DIT_CK_INT3,    /* int64[3]: an array of 3 integers */
	DIT_CK_REAL,    /* a double: any JSON number */
	DIT_CK_BOOL,    /* an int64 field, 0 or 1: a JSON boolean */
	DIT_CK_INT1,    /* an int64 field: an array of 1 integer */
	DIT_CK_REAL3,   /* double[3]: an array of 3 numbers */
} dit_config_kind;

typedef struct dit_config_key {
	const char *key; /* "dim" */
	size_t off;      /* offsetof(dit_hparams, dim) */
	dit_config_kind kind;
	int required; /* else absent (or null) gives def */
	double def[3];
	int64_t lo, hi; /* accepted range of each integer (both 0: 1..2^20); of each real
	                   (both 0: (0, 1]) */
} dit_config_key;

/* Table entries: a required integer key, an optional one with its default. */
#define DIT_KEY_INT(k, f)                                                                          \
	{                                                                                          \
		k, offsetof(dit_hparams, f), DIT_CK_INT, 1, {0}, 0, 0                              \
	}
#define DIT_KEY_OPT(k, f, d)                                                                       \
	{                                                                                          \
		k, offsetof(dit_hparams, f), DIT_CK_INT, 0, {d}, 0, 0                              \
	}

/* A key official files carry that the runtime does not use: checked for its type. */
typedef enum dit_config_type {
	DIT_CT_STRING = 0,
	DIT_CT_BOOL,
	DIT_CT_INT2, /* an array of 2 integers, each -1 or in 0..2^20 */
	DIT_CT_NULL, /* an option this build does not implement: absent or null only */
} dit_config_type;

typedef struct dit_config_extra {
	const char *key;
	dit_config_type type;
	const char *must; /* when present, the only value the runtime implements ("rms",
	                     "true"); NULL: any */
} dit_config_extra;

/* A family's config.json in one checkpoint format. A file is of this format when its
 * "model_type" is one of model_types (model_type_key set), or else when its
 * "_class_name" is class_name. */
typedef struct dit_config_desc {
	const char *class_name;         /* "_class_name": "WanModel", "WanTransformer3DModel" */
	const char *detect_key;         /* a file without model_type and _class_name is of
	                                   this format when it has this key (NULL: never) */
	int model_type_key;             /* the file names its model_type */
	const char *const *model_types; /* the model_type values, NULL-terminated */
	const dit_config_key *keys;
	int nkeys;
	const dit_config_extra *extra;
	int nextra;
	/* The fields no key gives, from those the keys gave (head_dim, and model_type
	 * without model_type_key); may be NULL. */
	void (*derive)(dit_hparams *hp);
	/* Relations between keys (divisibility, parity): 0 with why filled when broken. */
	int (*check)(const dit_hparams *hp, char *why, size_t len);
} dit_config_desc;

/* Sizes the tensor shape rules are written in. */
typedef enum dit_sym {
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
	DIT_SYM_2D,    /* 2 * dim */
	DIT_SYM_3D,    /* 3 * dim */
	DIT_SYM_4D,    /* 4 * dim */
	DIT_SYM_HD,    /* head_dim */
	DIT_SYM_TEXT2, /* text_dim_2 */
	DIT_SYM_3D_F,  /* 3 * dim + ffn_dim */
	DIT_SYM_D_F,   /* dim + ffn_dim */
	DIT_SYM_FIVE,
	DIT_SYM_HEADS, /* num_heads */
	DIT_SYM_DA,    /* aux_dim */
	DIT_SYM_FA,    /* aux_ffn_dim */
	DIT_SYM_2DA,   /* 2 * aux_dim */
	DIT_SYM_4DA,   /* 4 * aux_dim */
	DIT_SYM_AIN,   /* aux_in */
	DIT_SYM_AOUT,  /* aux_out */
	DIT_SYM_ATEXT, /* aux_text_dim */
	DIT_SYM_NT,    /* ada_rows */
	DIT_SYM_NTD,   /* ada_rows * dim */
	DIT_SYM_NTDA,  /* ada_rows * aux_dim */
	DIT_SYM_LORA,  /* lora_dim */
	DIT_SYM_INP,   /* in_dim * pt * ph * pw */
	DIT_SYM_CROSS, /* cross_dim */
	DIT_SYM_IMG,   /* image_dim */
	DIT_SYM_IMGN,  /* image_tokens */
} dit_sym;

/* When a tensor is in the checkpoint: always, or when the config turns its feature on
 * (a tensor that is not there has no elements and no slots); in a tensor's flags as
 * DIT_T_WHEN(w). */
typedef enum dit_when {
	DIT_W_ALWAYS = 0,
	DIT_W_GATED,        /* gated_attn */
	DIT_W_CA_ADALN,     /* ca_adaln */
	DIT_W_PROMPT_ADALN, /* ca_adaln and prompt_adaln */
	DIT_W_FF_BIAS,      /* ff_bias */
	DIT_W_AUX_FF_BIAS,  /* aux_ff_bias */
	DIT_W_CAPTION,      /* not caption_outside */
	DIT_W_KEYFRAMES,    /* keyframes */
	DIT_W_IMAGE,        /* image_dim */
	DIT_W_IMAGE_POS,    /* image_pos */
} dit_when;

/* A tensor may be stored narrower than fp32 in the weight store (--weight-dtype bf16,
 * or the checkpoint's compact dtype, dit_wdt.h): the GEMM matrices. */
#define DIT_T_MATRIX  1u
#define DIT_T_WHEN(w) ((unsigned)(w) << 8)

/* One tensor of a table: its name (inside a pool: the part after "<prefix>N."), its
 * shape as symbols, its flags. */
typedef struct dit_tensor_desc {
	const char *name;
	int ndim;
	dit_sym dims[DIT_T_MAX_DIMS];
	unsigned flags; /* DIT_T_MATRIX, DIT_T_WHEN(w) */
} dit_tensor_desc;

/* Whether the checkpoint holds tensor t under hp (its DIT_T_WHEN). */
int dit_tensor_present(const dit_hparams *hp, const dit_tensor_desc *t);

/* Where each tensor of a table sits in its slab, in fp32 slots (4 bytes), and its
 * dtype (dit_wdt): an fp32 tensor takes a slot per element, a narrower one the slots
 * dit_wdt_slots gives (two bf16 to a slot, an odd count rounding up); f16, f8 and q8_0
 * data start on a 16-byte boundary (4 slots). */
typedef struct dit_layout {
	int n;
	int narrow;                         /* some matrix of the table is not fp32 */
	unsigned char wdt[DIT_MAX_TENSORS]; /* dit_wdt of each tensor */
	int64_t off[DIT_MAX_TENSORS];
	int64_t numel[DIT_MAX_TENSORS]; /* elements (not slots) */
	int64_t size;                   /* slots of the slab; -1 when it overflows 64 bits */
} dit_layout;

/* The dtypes of the table's matrices in lay (DIT_T_MATRIX tensors present), for names
 * and messages: "f32", "bf16", "f8_e4m3", or several joined by '+' in dit_wdt order
 * ("f8_e4m3+f32"); "f32" when none. */
void dit_layout_tag(const dit_layout *lay, const dit_tensor_desc *t, char *buf, size_t len);

/* Bytes of each dtype (dit_wdt) in one slab of lay: every tensor's data, an f8 one's
 * scale counted with it (alignment padding not counted). */
void dit_layout_bytes_by_wdt(const dit_layout *lay, int64_t bytes[DIT_WDT_COUNT]);

/* Size of one symbol under hp. */
int64_t dit_sym_value(const dit_hparams *hp, dit_sym s);

/* Concrete shape of a tensor under hp (every dimension 0 when it is not present);
 * returns ndim. */
int dit_tensor_shape(const dit_hparams *hp, const dit_tensor_desc *t, int64_t *shape);

/* The layout of table t[0..n) under hp, its DIT_T_MATRIX tensors in bf16 when bf16. */
void dit_layout_init(dit_layout *lay, const dit_hparams *hp, const dit_tensor_desc *t, int n,
                     int bf16);
/* The same with the dtype of each tensor given (mwdt[i], a dit_wdt, taken for the
 * DIT_T_MATRIX tensors; the others are fp32). */
void dit_layout_init_wdt(dit_layout *lay, const dit_hparams *hp, const dit_tensor_desc *t, int n,
                         const unsigned char *mwdt);

/* A checkpoint name that differs from the table's: from (the checkpoint's, after the
 * pool prefix for block tensors) is read as to (the table's). */
typedef struct dit_rename {
	const char *from;
	const char *to;
} dit_rename;

/* A table tensor the checkpoint holds in parts (diffusers splits fused GEMMs): its
 * rows are, in order, those of each part, a checkpoint tensor (after the pool prefix
 * for block tensors) whole or one half of its rows (final adaLN halves swapped). */
#define DIT_JOIN_MAX_PARTS 4
typedef struct dit_join_part {
	const char *from;
	int half; /* 0: every row; 1: the first half of its rows; 2: the second half */
} dit_join_part;
typedef struct dit_join {
	const char *to;
	int nparts;
	dit_join_part part[DIT_JOIN_MAX_PARTS];
} dit_join;

/* A built-in model: a family's hyper-parameters and a default run size. A two-expert
 * family's experts share the config. */
typedef struct dit_preset {
	const char *name;
	const char *about;
	const char *model; /* its dit_model_desc name: "wan2.1-t2v", "wan2.2-t2v-a14b", ... */
	dit_hparams hp;
	int frames, height, width; /* default pixel size of a generate run */
	int steps;
} dit_preset;

#endif
