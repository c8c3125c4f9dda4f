/* A model family as data: what a checkpoint of it looks like (layout, config.json
 * model_type, tensor tables), its latent and RoPE descriptions, the conditioning
 * inputs a forward reads, its guidance form and its sampler defaults. The runtime
 * core (src/, tasks/) reads these fields instead of knowing the family; a block kind
 * (tasks/<kind>_block.c) computes one block of a pool. No math here.
 *
 * Today's families: Wan2.1 text-to-video and the three Wan2.2 models (models/wan.c),
 * all made of blocks of kind "wan". Adding a family is a descriptor file here (its
 * config keys, tensor tables, presets) plus its block-kind file in tasks/. */
#ifndef DIT_MODEL_DESC_H
#define DIT_MODEL_DESC_H

#include <stddef.h>
#include <stdint.h>

#include "dit_error.h"
#include "dit_family_opts.h"
#include "dit_hparams.h"
#include "dit_schedule.h"

#define DIT_MAX_EXPERTS 2

/* How an image conditions the model. */
typedef enum dit_image_form {
	DIT_IMAGE_NONE = 0,
	/* y [in_dim - out_dim, F, H, W] is concatenated after the noisy latent along the
	 * channels (Wan I2V: 4 mask channels, then the image latent) */
	DIT_IMAGE_CONCAT,
	/* z [C, 1, H, W] is the first latent frame: it replaces frame 0 of the latent
	 * before the first step and after every step, and the tokens of frame 0 see
	 * timestep 0 (Wan2.2 TI2V-5B) */
	DIT_IMAGE_FIRST_FRAME,
} dit_image_form;

/* The timestep the blocks' modulation sees. */
typedef enum dit_timestep_form {
	DIT_TIMESTEP_SAMPLE = 0, /* one value per sample (Wan2.1) */
	DIT_TIMESTEP_TOKEN,      /* one value per token: [L] (Wan2.2) */
} dit_timestep_form;

/* Pixels to latent cells. */
typedef struct dit_latent_desc {
	int64_t vae_stride[3]; /* (t, h, w): 4, 8, 8 (Wan2.2 TI2V-5B: 4, 16, 16) */
	int causal;            /* the first frame is its own latent frame: F = (frames - 1)/st + 1,
	                          so frames must be st * k + 1 */
	const struct dit_latent_rgb *rgb; /* the VAE's latent-to-RGB preview map
	                                     (dit_latent_rgb.h); NULL: no preview */
} dit_latent_desc;

/* 3-D RoPE over the (frame, row, column) token grid. */
typedef enum dit_rope_pairing {
	DIT_ROPE_INTERLEAVED = 0, /* features (2i, 2i+1) form pair i (Wan, HunyuanVideo) */
	DIT_ROPE_HALVES,          /* features (i, i + hd/2), angles per head over fractional
	                             positions (LTX-2's "split"): the stages build the tables */
} dit_rope_pairing;

typedef struct dit_rope_desc {
	double theta;                                    /* 10000 */
	void (*axes)(int64_t head_dim, int64_t axes[3]); /* pairs per axis, summing to hd/2 */
	dit_rope_pairing pairing;
} dit_rope_desc;

/* How the guidance scale enters a step. */
typedef enum dit_guidance_form {
	DIT_GUIDANCE_CFG = 0,  /* two passes, conditional and unconditional, mixed by the scale */
	DIT_GUIDANCE_EMBEDDED, /* one pass, the scale an input of the network (guidance-distilled
	                          HunyuanVideo) */
	DIT_GUIDANCE_MULTI,    /* x0 guided over up to four passes per step (cond, negative
	                          prompt, STG-perturbed, isolated streams), one scale set per
	                          stream (LTX-2's MultiModalGuider) */
} dit_guidance_form;

/* A conditioning input of forward --inputs (by the name of the official forward's
 * argument) and of generate. */
typedef struct dit_cond_desc {
	const char *name;  /* "context" */
	const char *shape; /* for messages and the docs: "[L, text_dim]" */
	const char *about;
	int required;
} dit_cond_desc;

/* The names forward --inputs and generate --context read the conditioning by. */
typedef struct dit_input_names {
	const char *context;  /* "context" [L, text_dim] */
	const char *mask;     /* "text_mask" [L]: 1 for the prompt's tokens, then 0; NULL: none */
	const char *pooled;   /* "text_states_2" [text_dim_2]; NULL: none */
	const char *guidance; /* "guidance" [1], the embedded guidance input; NULL: none */
	const char *neg;      /* generate --context: the negative prompt's names end so
	                         ("_null": context_null; "_neg": text_states_neg), or begin
	                         so when neg_prefix ("neg_": neg_crossattn_emb) */
	int neg_prefix;
	/* forward --inputs and its output (NULL: the Wan names x, t, y): */
	const char *latent;    /* "x" [C, F, H, W] */
	const char *sigma;     /* the noise level in 0..1 ([1]), which the network scales by
	                          its ts_mult, instead of "t" in 0..1000; NULL: "t" */
	const char *timesteps; /* optional per-token sigmas [F, H, W] (with sigma) */
	const char *positions; /* optional token positions [3, L, 2] (NULL: none read) */
	const char *out;       /* "y" */
	/* a timestep per latent frame [T] in 0..1000 instead of "t" (Cosmos) */
	const char *frame_t;
	/* with DIT_IMAGE_CONCAT, the extra input channels from masks instead of "y": a
	 * condition mask [1, F, H, W] (absent: zeros) and a pixel padding mask [Hpx, Wpx]
	 * resized nearest to [H, W] (absent: zeros; NULL: no such channel) */
	const char *cond_mask;
	const char *pad_mask;
	/* the network attends to exactly the context rows it is given (Cosmos): padding
	 * rows ditstar adds are masked out; else they are attended to (Wan) */
	int context_rows_only;
	/* image features beside the text, [image_tokens, image_dim] (Wan2.1 I2V's
	 * "clip_fea", read from the --context file; FLF2V [2, 257, 1280]); NULL: none */
	const char *image;
} dit_input_names;

/* Image features the network reads beside the text (Wan2.1 I2V's CLIP ViT-H/14
 * tokens): their width, rows (the images' tokens together) and whether learned
 * positions are added to them; all 0: none. */
typedef struct dit_image_ctx_desc {
	int64_t dim, tokens, pos;
} dit_image_ctx_desc;

/* A second token stream of the model (LTX-2's audio): the names of its forward inputs
 * and output, and its latent [channels, T, mel], token t = the channels x mel features
 * c * mel + m. */
typedef struct dit_stream_desc {
	const char *name;      /* "audio" */
	const char *latent;    /* "audio_latent" [channels, T, mel] */
	const char *out;       /* "audio" */
	const char *sigma;     /* "audio_sigma" [1] */
	const char *timesteps; /* "audio_timesteps" [T] */
	const char *context;   /* "audio_context" [L, aux_text_dim] */
	const char *mask;      /* "audio_context_mask" [L] */
	const char *positions; /* "audio_positions" [1, T, 2] */
	int64_t channels, mel; /* 8, 16 */
} dit_stream_desc;

/* Sampling defaults of the official pipeline. */
/* DIT_GUIDANCE_MULTI (LTX-2): the official defaults of its sampling loop, by generation
 * (the first, then the later ones, which the config tells apart by their features:
 * cross-attention AdaLN or gated attention). */
typedef struct dit_multi_desc {
	int steps_later;                    /* the later generations' steps (the first's: .steps) */
	int64_t stg_block, stg_block_later; /* the block of the STG pass */
	int64_t stg_of_blocks; /* of the official models' blocks (a model of fewer takes the
	                        * block at the same depth) */
	/* each stream's scales: CFG, STG, rescale, isolated modality */
	double video[4], audio[4];
} dit_multi_desc;

typedef struct dit_sched_desc {
	dit_solver solver;             /* DIT_SOLVER_UNIPC */
	int steps;                     /* 50 */
	double shift;                  /* 5.0 */
	double shift_480;              /* the shift at 832*480 and 480*832 where the official
	                                  CLI changes it (Wan2.1 I2V: 3.0; 0: shift) */
	double guidance[2];            /* CFG scale of expert 0 and 1 (one expert: both equal) */
	double boundary;               /* two experts: expert 0 (high noise) while the integer
	                                  timestep >= boundary * 1000; else expert 1 */
	int64_t frames, height, width; /* default pixel size */
	const char *sizes;             /* the official CLI's sizes ("1280*704 704*1280"),
	                                  NULL when any size is official */
	dit_schedule schedule;         /* sigmas and timesteps: DIT_SCHEDULE_UNIPC (Wan's scheduler,
	                                  integer timesteps), _FLOW (HunyuanVideo's, fp32 ones),
	                                  _KARRAS (Cosmos'), _LTX2 */
	unsigned schedules;            /* the schedules --schedule may choose (bit 1 << each;
	                                  0: the family has one) */
	dit_ltx2_shift ltx2;           /* DIT_SCHEDULE_LTX2's constants */
	dit_multi_desc multi;          /* DIT_GUIDANCE_MULTI's defaults */
	double embedded;               /* DIT_GUIDANCE_EMBEDDED: the default scale (6.0) */
	double cfg_offset;             /* the official scale g means v_u + (g + cfg_offset)
	                                  (v_c - v_u) (Cosmos: v_c + g (v_c - v_u), 1) */
	double cond_t;                 /* conditioning frames' timestep (0..1000) with the
	                                  default schedule (Cosmos 0.1; < 0 or 0: none) */
} dit_sched_desc;

/* A pool of identical blocks: "<prefix>N.<tensor>" for N < hp.layers[pool]. */
typedef struct dit_pool_desc {
	const char *prefix; /* "blocks." */
	const char *kind;   /* block kind: "wan" (tasks/wan_block.c) */
	const dit_tensor_desc *tensors;
	int ntensors;
} dit_pool_desc;

/* A checkpoint format of a family: how its config.json reads, what its tensors are
 * called (renames from the official names), and where a two-expert model's experts
 * sit. formats[0] of a family is the official code's. */
typedef struct dit_format_desc {
	const char *name; /* "official", "diffusers" */
	const dit_config_desc *config;
	const dit_rename *renames; /* (NULL: the table's names) */
	int nrenames;
	const dit_join *joins; /* table tensors stored in parts (NULL: none) */
	int njoins;
	const char *pool_prefix[DIT_MAX_POOLS]; /* the pools' prefixes in this format ("
	                                           transformer_blocks."; NULL: the table's) */
	const char *expert[DIT_MAX_EXPERTS];    /* folders: "high_noise_model", "transformer" */
	const char *subdir;      /* a one-checkpoint model may sit in this folder of --model-dir
	                            (a diffusers pipeline's "transformer"); NULL: none */
	const char *name_prefix; /* before every tensor name of the checkpoint
	                            ("model.diffusion_model."); NULL: none */
	const char *alt_prefix;  /* read when a tensor is not there under name_prefix
	                            (Cosmos' "net_ema."); NULL: none */
	/* other names a tensor goes by in files of this layout (ComfyUI's internal names of
	 * a model it saved), tried after the format's own, with either prefix; messages name
	 * the format's own. NULL: none */
	const dit_rename *other_names;
	int nother_names;
	int alt_exclusive; /* 1: a tensor there under both is refused (ComfyUI's files
	                      hold one copy, bare or prefixed: two are two models);
	                      0: the name_prefix one is read (a Cosmos checkpoint may
	                      hold the model and its EMA) */
} dit_format_desc;

#define DIT_MAX_FORMATS 4

typedef struct dit_model_desc {
	const char *name;       /* "wan2.2-t2v-a14b": what `info` and stats print */
	const char *family;     /* "wan2.2" */
	const char *about;      /* one line */
	const char *model_type; /* config.json "model_type" it is detected by */
	/* Experts: nexperts sub-folders of --model-dir (the format's expert[i]), each a
	 * checkpoint with its own config.json; 1 expert: --model-dir itself. */
	int nexperts;
	const char *expert_label[DIT_MAX_EXPERTS];       /* "high", "low" */
	const dit_format_desc *formats[DIT_MAX_FORMATS]; /* NULL-terminated; [0] official */
	/* A checkpoint without config.json (the official HunyuanVideo release ships its
	 * weights alone) is of this family when it holds probe_tensor (an official name,
	 * after formats[0]'s name_prefix or alt_prefix);
	 * the preset release_preset's configuration, called release_name in messages, is
	 * then assumed and every tensor checked against it. NULL: config.json required. */
	const char *release_preset; /* "hunyuan-video" */
	const char *release_name;   /* "HYVideo-T/2-cfgdistill" */
	const char *probe_tensor;   /* "txt_in.individual_token_refiner.blocks.0.norm1.weight" */
	/* The sizes the release leaves open read from the tensor shapes instead (Cosmos: 2B
	 * or 14B): shape(arg, name, dims) gives the checkpoint's tensor name's shape (its
	 * ndim; 0 when absent); hp starts as release_preset's. 0 with why filled when the
	 * shapes do not make a config. NULL: the release preset as it is. */
	int (*config_from_shapes)(int (*shape)(void *arg, const char *name, int64_t *dims),
	                          void *arg, dit_hparams *hp, char *why, size_t len);
	/* The probe and config_from_shapes apply to one-file checkpoints only (ComfyUI's
	 * single files, GGUF): a folder keeps needing its config.json. The config they
	 * make may name another family of the same tables by its model_type (Wan: the
	 * channels tell TI2V-5B). */
	int shapes_one_file;
	/* GGUF's general.architecture of the family's files ("wan", "hyvid"; city96's
	 * convert tool); a GGUF file naming another is not probed for it. NULL: none. */
	const char *gguf_arch;
	/* A tensor whose presence means another family (Wan2.1 I2V's CLIP branch). */
	const char *refuse_tensor;
	const char *refuse_why;
	/* A tensor whose absence means another family (the CLIP branch of Wan2.1 I2V,
	 * whose config.json reads as a Wan2.2 I2V-A14B expert's), and what it is then. */
	const char *need_tensor;
	const char *need_why;
	const dit_tensor_desc *globals;
	int nglobals;
	const dit_pool_desc *pools;
	int npools;
	const char *stages; /* the forward outside the blocks: "wan" (tasks/wan_block.c) */
	dit_latent_desc latent;
	dit_rope_desc rope;
	dit_image_form image;
	dit_timestep_form timestep;
	const dit_cond_desc *conds;
	int nconds;
	dit_input_names inputs;
	/* set on a config that does not give them (the official Wan config.json has no
	 * key for them: a Wan2.1 I2V and a Wan2.2 I2V-A14B expert's configs are alike) */
	dit_image_ctx_desc image_ctx;
	const dit_stream_desc *aux; /* a second token stream; NULL: none */
	dit_guidance_form guidance;
	dit_sched_desc sched;
	/* the family as its users see it: its name, its own options, its notes on the
	 * common ones (the descriptors of one family share it) */
	const dit_family_doc *doc;
} dit_model_desc;

/* Every family, NULL-terminated order of detection. */
const dit_model_desc *const *dit_model_descs(size_t *count);

/* The family whose model_type and expert count match (NULL: none). */
const dit_model_desc *dit_model_desc_match(const char *model_type, int nexperts);

/* A description by name ("wan2.2-ti2v-5b"); NULL when unknown. */
const dit_model_desc *dit_model_desc_find(const char *name);

/* A family that reads config.json's of this model_type (the first in detection order);
 * NULL: none. */
const dit_model_desc *dit_model_desc_for_type(const char *model_type);

/* The format of desc whose config.json format is cd; NULL: none. */
const dit_format_desc *dit_model_desc_format(const dit_model_desc *d, const dit_config_desc *cd);

/* Checks hp against the family's channel rule; why receives the reason. */
int dit_model_desc_check(const dit_model_desc *d, const dit_hparams *hp, char *why, size_t len);

/* The config's fields the family implies and a config of its format does not give
 * (image_ctx); after the config is read and the family known. */
void dit_model_desc_finish(const dit_model_desc *d, dit_hparams *hp);

/* Parameters of the whole model (one expert: blocks of every pool and globals); -1
 * when the count overflows 64 bits. */
int64_t dit_model_param_count(const dit_model_desc *d, const dit_hparams *hp);

/* The built-in presets of every family: count, i-th, by name (NULL when unknown). */
size_t dit_preset_count(void);
const dit_preset *dit_preset_get(size_t i);
const dit_preset *dit_preset_find(const char *name);

/* A preset's hyper-parameters, with the fields its config format derives (head_dim)
 * and that format (the family's official one). */
dit_hparams dit_preset_hparams(const dit_preset *p);

/* The latent frames of `frames` video frames (0 when frames breaks the frame rule). */
int64_t dit_model_latent_frames(const dit_model_desc *d, int64_t frames);

/* Whether a video of frames x height x width makes whole latent patches: DIT_EUSAGE
 * naming the option (--frames, --height, --width) and the rule it breaks. */
dit_status dit_model_check_size(const dit_model_desc *d, const dit_hparams *cfg, int64_t frames,
                                int64_t height, int64_t width, dit_error *err);

/* Wan's RoPE split: t = hd/2 - 2 (hd/2/3) pairs, h = w = hd/2/3 (22/21/21 for 128). */
void dit_rope_axes_wan(int64_t head_dim, int64_t axes[3]);

#endif
