/* Cosmos-Predict2.5 as data (official code: nvidia-cosmos/cosmos-predict2.5; the network
 * MinimalV1LVGDiT in cosmos_predict2/_src/predict2/networks/minimal_v1_lvg_dit.py and
 * minimal_v4_dit.py, the released configs in .../configs/video2world/): one pool of
 * blocks without biases, AdaLN-LoRA modulation per latent frame, a text projection from
 * 100 352 features to 1 024, and the condition and padding masks as two input channels.
 *
 * config.json: MinimalV1LVGDiT's keyword arguments (other keys ignored). Checkpoints:
 * the released single .pt (a flat dict, names "net." + the state-dict name; "net_ema."
 * also read), or safetensors with the same names; diffusers' layout in
 * models/cosmos_diffusers.c. */
#include <stdio.h>

#include "dit_latent_rgb.h"
#include "dit_cosmos.h"
#include "dit_model_desc.h"

static const char *const cos_types[] = {"cosmos", NULL};

#define COS_REAL(k, f, d, lo, hi)                                                                  \
	{                                                                                          \
		k, offsetof(dit_hparams, f), DIT_CK_REAL, 0, {d}, lo, hi                           \
	}

static const dit_config_key cos_keys[] = {
    DIT_KEY_OPT("model_channels", dim, 2048),
    DIT_KEY_OPT("num_blocks", layers[0], 28),
    DIT_KEY_OPT("num_heads", num_heads, 16),
    COS_REAL("mlp_ratio", mlp_ratio, 4.0, 1, 64),
    DIT_KEY_OPT("in_channels", in_latent, 16),
    DIT_KEY_OPT("out_channels", out_dim, 16),
    DIT_KEY_OPT("patch_spatial", patch[1], 2),
    DIT_KEY_OPT("patch_temporal", patch[0], 1),
    DIT_KEY_OPT("crossattn_emb_channels", cross_dim, 1024),
    DIT_KEY_OPT("crossattn_proj_in_channels", text_dim, 100352),
    DIT_KEY_OPT("adaln_lora_dim", lora_dim, 256),
    DIT_KEY_OPT("max_frames", max_size[0], 128),
    DIT_KEY_OPT("max_img_h", max_size[1], 240),
    DIT_KEY_OPT("max_img_w", max_size[2], 240),
    COS_REAL("rope_t_extrapolation_ratio", rope_ratio[0], 1.0, 0, 1000),
    COS_REAL("rope_h_extrapolation_ratio", rope_ratio[1], 3.0, 0, 1000),
    COS_REAL("rope_w_extrapolation_ratio", rope_ratio[2], 3.0, 0, 1000),
    {"timestep_scale", offsetof(dit_hparams, ts_mult), DIT_CK_REAL, 0, {0.001}, 0, 0},
    {"concat_padding_mask", offsetof(dit_hparams, concat_padding), DIT_CK_BOOL, 0, {1}, 0, 0},
};

/* What this build implements of the official options. */
static const dit_config_extra cos_extra[] = {
    {"pos_emb_cls", DIT_CT_STRING, "rope3d"},
    {"use_adaln_lora", DIT_CT_BOOL, "true"},
    {"use_crossattn_projection", DIT_CT_BOOL, "true"},
    {"extra_per_block_abs_pos_emb", DIT_CT_BOOL, "false"},
    {"rope_enable_fps_modulation", DIT_CT_BOOL, "false"},
    {"use_wan_fp32_strategy", DIT_CT_BOOL, NULL},
};

/* The fields no key gives: both spatial patch sizes, the MLP width, head_dim, the model's
 * input channels (the latent, the condition mask, the padding mask), the sinusoid size
 * (the width), norm epsilon and the text length (512 tokens). */
void dit_cosmos_derive(dit_hparams *hp)
{
	snprintf(hp->model_type, sizeof hp->model_type, "%s", "cosmos");
	hp->patch[2] = hp->patch[1];
	hp->ffn_dim = (int64_t)((double)hp->dim * hp->mlp_ratio);
	hp->head_dim = hp->num_heads > 0 ? hp->dim / hp->num_heads : 0;
	hp->in_dim = hp->in_latent + 1 + (hp->concat_padding ? 1 : 0);
	hp->freq_dim = hp->dim;
	hp->eps = 1e-6;
	if (hp->text_len == 0)
		hp->text_len = 512;
}

int dit_cosmos_check(const dit_hparams *hp, char *why, size_t len)
{
	if (hp->dim > ((int64_t)1 << 20) || hp->dim % hp->num_heads != 0 ||
	    (hp->dim / hp->num_heads) % 2) {
		snprintf(why, len,
		         "key 'model_channels' (%lld) must be 'num_heads' (%lld) times an even "
		         "head width",
		         (long long)hp->dim, (long long)hp->num_heads);
		return 0;
	}
	int64_t hd = hp->dim / hp->num_heads, dh = hd / 6 * 2;
	if (dh < 4 || hd - 2 * dh < 4) {
		snprintf(why, len, "head width %lld is too small for the 3-axis RoPE",
		         (long long)hd);
		return 0;
	}
	if (hp->ffn_dim < 1 || hp->ffn_dim > ((int64_t)1 << 22)) {
		snprintf(why, len, "key 'mlp_ratio' gives an MLP width of %lld",
		         (long long)hp->ffn_dim);
		return 0;
	}
	if (!(hp->ts_mult > 0.0 && hp->ts_mult <= 1.0)) {
		snprintf(why, len, "key 'timestep_scale' must be in (0, 1] (got %g)", hp->ts_mult);
		return 0;
	}
	return 1;
}

const dit_config_desc dit_cosmos_config_desc = {
    .class_name = "MinimalV1LVGDiT",
    .detect_key = "crossattn_proj_in_channels",
    .model_type_key = 0,
    .model_types = cos_types,
    .keys = cos_keys,
    .nkeys = (int)(sizeof cos_keys / sizeof cos_keys[0]),
    .extra = cos_extra,
    .nextra = (int)(sizeof cos_extra / sizeof cos_extra[0]),
    .derive = dit_cosmos_derive,
    .check = dit_cosmos_check,
};

static const dit_format_desc cos_official = {
    .name = "official",
    .config = &dit_cosmos_config_desc,
    .name_prefix = "net.",
    .alt_prefix = "net_ema.",
};

extern const dit_format_desc dit_cosmos_diffusers;

static const dit_pool_desc cos_pools[] = {
    {"blocks.", "cosmos", dit_cosmos_block_rules, DIT_CB_COUNT},
};

static const dit_cond_desc cos_conds[] = {
    {"x", "[16, T, H, W]", "the noisy latent (conditioning frames already the clean ones)", 1},
    {"timesteps", "[T]", "per latent frame, 0..1000 (the net sees x timestep_scale)", 1},
    {"crossattn_emb", "[L, crossattn_proj_in_channels]", "Cosmos-Reason1 text features", 1},
    {"condition_mask", "[1, T, H, W]", "1 on conditioning frames (absent: zeros)", 0},
    {"padding_mask", "[H_px, W_px]", "pixel padding, resized nearest (absent: zeros)", 0},
};

static void cos_rope_axes(int64_t head_dim, int64_t axes[3])
{
	axes[1] = axes[2] = head_dim / 6; /* pairs: (hd/6)*2 features each */
	axes[0] = head_dim / 2 - 2 * axes[1];
}

/* Without config.json: the sizes from the shapes (the released files ship none), the
 * other keys the release's. */
static int cos_from_shapes(int (*shape)(void *arg, const char *name, int64_t *dims), void *arg,
                           dit_hparams *hp, char *why, size_t len)
{
	const char *pre[] = {"net.", "net_ema."};
	int64_t d[8];
	for (int k = 0; k < 2; k++) {
		char n[128];
#define COS_SHAPE(name) (snprintf(n, sizeof n, "%s%s", pre[k], name), shape(arg, n, d))
		if (COS_SHAPE("x_embedder.proj.1.weight") != 2)
			continue;
		hp->dim = d[0];
		int64_t pin = d[1] / (hp->patch[0] * hp->patch[1] * hp->patch[1]);
		hp->in_latent = pin - 1 - (hp->concat_padding ? 1 : 0);
		if (COS_SHAPE("blocks.0.self_attn.q_norm.weight") != 1 || d[0] < 1)
			break;
		hp->num_heads = hp->dim / d[0];
		if (COS_SHAPE("blocks.0.adaln_modulation_self_attn.1.weight") != 2)
			break;
		hp->lora_dim = d[0];
		if (COS_SHAPE("crossattn_proj.0.weight") != 2)
			break;
		hp->cross_dim = d[0];
		hp->text_dim = d[1];
		if (COS_SHAPE("blocks.0.mlp.layer1.weight") != 2)
			break;
		hp->mlp_ratio = (double)d[0] / (double)hp->dim;
		if (COS_SHAPE("final_layer.linear.weight") != 2)
			break;
		hp->out_dim = d[0] / (hp->patch[0] * hp->patch[1] * hp->patch[1]);
		int64_t nb = 0;
		for (;;) { /* blocks.N. up to the first one missing */
			char b[64];
			snprintf(b, sizeof b, "blocks.%lld.mlp.layer1.weight", (long long)nb);
			if (COS_SHAPE(b) != 2)
				break;
			nb++;
		}
#undef COS_SHAPE
		hp->layers[0] = nb;
		return 1;
	}
	snprintf(why, len,
	         "its tensors do not give the model's sizes (x_embedder.proj.1, "
	         "blocks.0.*, crossattn_proj.0, final_layer.linear)");
	return 0;
}

const dit_model_desc dit_cosmos_predict25 = {
    .name = "cosmos-predict2.5",
    .family = "cosmos-predict2.5",
    .about = "Cosmos-Predict2.5 (2B, 14B): text2world, image2world and video2world",
    .model_type = "cosmos",
    .nexperts = 1,
    .formats = {&cos_official, &dit_cosmos_diffusers},
    /* the releases ship the .pt alone */
    .release_preset = "cosmos-predict2.5-2b",
    .release_name = "Cosmos-Predict2.5",
    .probe_tensor = "x_embedder.proj.1.weight",
    .gguf_arch = "cosmos",
    .config_from_shapes = cos_from_shapes,
    .globals = dit_cosmos_global_rules,
    .nglobals = DIT_CG_COUNT,
    .pools = cos_pools,
    .npools = 1,
    .stages = "cosmos",
    .latent = {{4, 8, 8}, 1, &dit_latent_rgb_wan21},
    .rope = {10000.0, cos_rope_axes, DIT_ROPE_HALVES},
    .image = DIT_IMAGE_CONCAT,
    .timestep = DIT_TIMESTEP_TOKEN,
    .conds = cos_conds,
    .nconds = (int)(sizeof cos_conds / sizeof cos_conds[0]),
    .inputs = {.context = "crossattn_emb",
               .neg = "neg_",
               .neg_prefix = 1,
               .latent = "x",
               .frame_t = "timesteps",
               .cond_mask = "condition_mask",
               .pad_mask = "padding_mask",
               .out = "y",
               .context_rows_only = 1},
    .guidance = DIT_GUIDANCE_CFG,
    /* inference/video2world.py: the post-trained 2B, 35 steps, guidance 7 as cond +
     * 7 (cond - uncond), 93 frames of 704 x 1280 */
    /* the post-trained model's Karras sigmas; --schedule linear: the pre-trained
     * models' shifted linear ones */
    .sched = {.solver = DIT_SOLVER_UNIPC,
              .steps = 35,
              .shift = 5.0,
              .guidance = {7.0, 7.0},
              .frames = 93,
              .height = 704,
              .width = 1280,
              .schedule = DIT_SCHEDULE_KARRAS,
              .schedules = 1u << DIT_SCHEDULE_KARRAS | 1u << DIT_SCHEDULE_UNIPC,
              .cfg_offset = 1.0,
              .cond_t = 0.1},
    .doc = &dit_cosmos_doc,
};

/* ------------------------------------------------------------------ presets */

#define COS_CFG(d, h, nb, r, cx, cin)                                                              \
	{                                                                                          \
		.model_type = "cosmos", .dim = (d), .num_heads = (h), .layers = {(nb)},            \
		.mlp_ratio = 4.0, .in_latent = 16, .out_dim = 16, .patch = {1, 2, 2},              \
		.cross_dim = (cx), .text_dim = (cin), .lora_dim = (r),                             \
		.max_size = {128, 240, 240}, .rope_ratio = {1.0, 3.0, 3.0}, .ts_mult = 0.001,      \
		.concat_padding = 1                                                                \
	}

const dit_preset dit_cosmos_presets[] = {
    {"cosmos-predict2.5-2b", "official Cosmos-Predict2.5 2B (28 blocks, dim 2048)",
     "cosmos-predict2.5", COS_CFG(2048, 16, 28, 256, 1024, 100352), 93, 704, 1280, 35},
    {"cosmos-predict2.5-14b", "official Cosmos-Predict2.5 14B (36 blocks, dim 5120)",
     "cosmos-predict2.5", COS_CFG(5120, 40, 36, 256, 1024, 100352), 93, 704, 1280, 35},
    {"tiny-cosmos", "tiny Cosmos-Predict2.5, 2B-shaped (2 blocks, dim 64, 2 heads of 32)",
     "cosmos-predict2.5", COS_CFG(64, 2, 2, 16, 32, 48), 9, 64, 96, 4},
    {"tiny-cosmos-14b", "tiny Cosmos-Predict2.5, 14B-shaped (2 blocks, dim 80, 5 heads of 16)",
     "cosmos-predict2.5", COS_CFG(80, 5, 2, 16, 24, 40), 9, 64, 96, 4},
    {"small-cosmos", "small Cosmos-Predict2.5 for benchmarks (8 blocks, 5 heads of 128)",
     "cosmos-predict2.5", COS_CFG(640, 5, 8, 64, 256, 1024), 17, 256, 384, 4},
};

const size_t dit_cosmos_npresets = sizeof dit_cosmos_presets / sizeof dit_cosmos_presets[0];

/* ------------------------------------------------------------ options and notes */
static const char *const cosmos_schedules[] = {"karras", "linear", NULL};

static const dit_family_opt cosmos_opts[] = {
    {.name = "schedule",
     .runs = DIT_FOPT_SAMPLING,
     .kind = DIT_FOPT_CHOICE,
     .slot = DIT_COSMOS_OPT_SCHEDULE,
     .names = cosmos_schedules,
     .help = "`karras` (default: the post-trained model's, N + 1 evaluations) or `linear` "
             "(the pre-trained models', with `--shift`)",
     .more = "`karras`: Karras sigmas (max 200, min 0.01, rho 7) mapped s/(1+s), "
             "conditioning frames at timestep 0.1; `linear`: the shift schedule (default 5), "
             "no own timestep for conditioning frames. Either way FlowUniPC (bh2, order 2), "
             "timesteps truncated to integers and seen x0.001"},
    {.name = "condition-latent",
     .arg = "FILE",
     .runs = DIT_FOPT_SAMPLING,
     .kind = DIT_FOPT_STRING,
     .slot = DIT_COSMOS_OPT_COND_PATH,
     .help = "video2world's conditioning: `gt` `[16, F, H, W]`",
     .more = "The model input holds `gt` on the first K frames, the condition-mask channel "
             "is 1 there, their velocity is the initial noise - `gt` (in both branches), so "
             "the final latents there are `gt + (1 - s0)(noise - gt)`, as the official code "
             "leaves them"},
    {.name = "condition-frames",
     .arg = "K",
     .runs = DIT_FOPT_SAMPLING,
     .kind = DIT_FOPT_INT,
     .slot = DIT_COSMOS_OPT_COND_FRAMES,
     .lo = 0,
     .hi = 1 << 20,
     .want = "needs a count",
     .help = "the first K latent frames of `--condition-latent` condition (1: image2world)"},
    {0}};

static const dit_family_note cosmos_notes[] = {
    {"guidance", "`v = v_c + G (v_c - v_u)` (default 7: the official form, standard CFG with "
                 "scale G + 1)"},
    {"context", "`crossattn_emb` `[L, 100352]` and `neg_crossattn_emb` (the negative "
                "prompt; Cosmos-Reason1's 28 hidden layers, 512 tokens)"},
    {"noise", "`noise` `[16, F, H, W]`"},
    {NULL, NULL}};

const dit_family_doc dit_cosmos_doc = {"Cosmos-Predict2.5",
                                       "its text2world, image2world and video2world runs",
                                       cosmos_opts, cosmos_notes};
