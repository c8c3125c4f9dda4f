/* HunyuanVideo 1.0 as data (official code: Tencent-Hunyuan/HunyuanVideo; the network
 * in hyvideo/modules/models.py, the defaults in hyvideo/config.py and
 * HUNYUAN_VIDEO_CONFIG): 20 double-stream blocks and 40 single-stream blocks in two
 * pools of different shapes, each with its own chunk size, and a two-block token
 * refiner kept with the non-block weights. The released model is guidance-distilled
 * (HYVideo-T/2-cfgdistill): one pass per step, the embedded guidance scale an input.
 *
 * config.json: the keyword arguments of HYVideoDiffusionTransformer.__init__ plus
 * text_states_dim, text_states_dim_2 and rope_theta (the official CLI's). */
#include <stdio.h>

#include "dit_latent_rgb.h"
#include "dit_hunyuan.h"
#include "dit_model_desc.h"

static const char *const hy_types[] = {"hyvideo", NULL};

static const dit_config_key hy_keys[] = {
    DIT_KEY_INT("hidden_size", dim),
    DIT_KEY_INT("heads_num", num_heads),
    {"mlp_width_ratio", offsetof(dit_hparams, mlp_ratio), DIT_CK_REAL, 0, {4.0}, 1, 64},
    DIT_KEY_OPT("mm_double_blocks_depth", layers[0], 20),
    DIT_KEY_OPT("mm_single_blocks_depth", layers[1], 40),
    {"rope_dim_list", offsetof(dit_hparams, rope_dims), DIT_CK_INT3, 0, {16, 56, 56}, 2, 4096},
    {"rope_theta", offsetof(dit_hparams, rope_theta), DIT_CK_REAL, 0, {256.0}, 1, 1 << 30},
    {"guidance_embed", offsetof(dit_hparams, guidance_embed), DIT_CK_BOOL, 0, {0}, 0, 0},
    DIT_KEY_OPT("text_states_dim", text_dim, 4096),
    DIT_KEY_OPT("text_states_dim_2", text_dim_2, 768),
    {"patch_size", offsetof(dit_hparams, patch), DIT_CK_INT3, 0, {1, 2, 2}, 1, 256},
    DIT_KEY_OPT("in_channels", in_dim, 4),
    /* null or absent: in_channels (the official default) */
    {"out_channels", offsetof(dit_hparams, out_dim), DIT_CK_INT, 0, {0}, 0, 1 << 20},
};

/* What this build implements of the official options. */
static const dit_config_extra hy_extra[] = {
    {"_class_name", DIT_CT_STRING, NULL},
    {"qkv_bias", DIT_CT_BOOL, "true"},
    {"qk_norm", DIT_CT_BOOL, "true"},
    {"qk_norm_type", DIT_CT_STRING, "rms"},
    {"mlp_act_type", DIT_CT_STRING, "gelu_tanh"},
    {"text_projection", DIT_CT_STRING, "single_refiner"},
    {"use_attention_mask", DIT_CT_BOOL, "true"},
};

/* The fields no key gives: the MLP width int(D * ratio) as the official code computes
 * it, head_dim, the fixed sinusoid size, norm epsilon and text length (the official
 * text encoder pads prompts to 256 tokens). */
void dit_hunyuan_derive(dit_hparams *hp)
{
	snprintf(hp->model_type, sizeof hp->model_type, "%s", "hyvideo");
	if (hp->out_dim == 0)
		hp->out_dim = hp->in_dim;
	hp->ffn_dim = (int64_t)((double)hp->dim * hp->mlp_ratio);
	hp->head_dim = hp->num_heads > 0 ? hp->dim / hp->num_heads : 0;
	hp->freq_dim = 256;
	hp->eps = 1e-6;
	if (hp->text_len == 0)
		hp->text_len = 256;
	if (hp->refiner_layers == 0)
		hp->refiner_layers = 2;
}

int dit_hunyuan_check(const dit_hparams *hp, char *why, size_t len)
{
	if (hp->dim > ((int64_t)1 << 20) || hp->dim % hp->num_heads != 0) {
		snprintf(why, len,
		         "key 'hidden_size' (%lld) is not a multiple of 'heads_num' (%lld)",
		         (long long)hp->dim, (long long)hp->num_heads);
		return 0;
	}
	int64_t hd = hp->dim / hp->num_heads, sum = 0;
	for (int i = 0; i < 3; i++) {
		if (hp->rope_dims[i] % 2) {
			snprintf(why, len, "key 'rope_dim_list'[%d] must be even (got %lld)", i,
			         (long long)hp->rope_dims[i]);
			return 0;
		}
		sum += hp->rope_dims[i];
	}
	if (sum != hd) {
		snprintf(why, len, "key 'rope_dim_list' sums to %lld, not head_dim %lld",
		         (long long)sum, (long long)hd);
		return 0;
	}
	if (hp->ffn_dim < 1 || hp->ffn_dim > ((int64_t)1 << 22)) {
		snprintf(why, len, "key 'mlp_width_ratio' gives an MLP width of %lld",
		         (long long)hp->ffn_dim);
		return 0;
	}
	if (hp->refiner_layers != 2) {
		snprintf(why, len, "%lld token-refiner blocks: the official model has 2",
		         (long long)hp->refiner_layers);
		return 0;
	}
	if (!hp->guidance_embed) {
		snprintf(why, len,
		         "key 'guidance_embed' is false: HYVideo-T/2 without guidance "
		         "embedding is not supported yet (HYVideo-T/2-cfgdistill is)");
		return 0;
	}
	return 1;
}

const dit_config_desc dit_hunyuan_config_desc = {
    .class_name = "HYVideoDiffusionTransformer",
    .detect_key = "mm_double_blocks_depth",
    .model_type_key = 0,
    .model_types = hy_types,
    .keys = hy_keys,
    .nkeys = (int)(sizeof hy_keys / sizeof hy_keys[0]),
    .extra = hy_extra,
    .nextra = (int)(sizeof hy_extra / sizeof hy_extra[0]),
    .derive = dit_hunyuan_derive,
    .check = dit_hunyuan_check,
};

extern const dit_format_desc dit_hunyuan_diffusers;

static const dit_format_desc hy_official = {
    .name = "official",
    .config = &dit_hunyuan_config_desc,
    /* the official download: hunyuan-video-t2v-720p/transformers/ */
    .subdir = "transformers",
    /* ComfyUI's files: the same names, bare or after its diffusion model's prefix; a
     * model ComfyUI saved has its own names (models/hunyuan_comfy.c) */
    .alt_prefix = "model.diffusion_model.",
    .alt_exclusive = 1,
    .other_names = dit_hunyuan_comfy_names,
    .nother_names = DIT_HUNYUAN_COMFY_NAMES,
};

static const dit_pool_desc hy_pools[] = {
    {"double_blocks.", "hunyuan_double", dit_hunyuan_double_rules, DIT_HD_COUNT},
    {"single_blocks.", "hunyuan_single", dit_hunyuan_single_rules, DIT_HS_COUNT},
};

static const dit_cond_desc hy_conds[] = {
    {"x", "[C, F, H, W]", "the noisy latent", 1},
    {"t", "[1]", "the timestep, 0..1000", 1},
    {"text_states", "[L, text_states_dim]", "LLaVA text states (padded rows masked)", 1},
    {"text_mask", "[L]", "1 for the prompt's tokens, then 0 (I64 or F32)", 1},
    {"text_states_2", "[text_states_dim_2]", "CLIP-L pooled text embedding", 1},
    {"guidance", "[1]", "embedded guidance scale x 1000", 1},
};

static void hy_rope_axes(int64_t head_dim, int64_t axes[3])
{
	/* without rope_dim_list: the released 16/56/56 split scaled to head_dim */
	axes[0] = head_dim / 16;
	axes[1] = axes[2] = (head_dim / 2 - axes[0]) / 2;
	axes[0] = head_dim / 2 - 2 * axes[1];
}

const dit_model_desc dit_hunyuan_video = {
    .name = "hunyuan-video",
    .family = "hunyuan-video",
    .about = "HunyuanVideo 1.0 (13B): 20 double-stream and 40 single-stream blocks",
    .model_type = "hyvideo",
    .nexperts = 1,
    .formats = {&hy_official, &dit_hunyuan_diffusers},
    /* tencent/HunyuanVideo ships transformers/mp_rank_00_model_states.pt alone */
    .release_preset = "hunyuan-video",
    .release_name = "HYVideo-T/2-cfgdistill",
    /* ComfyUI's own detection key: the same name in the official and ComfyUI's naming */
    .probe_tensor = "txt_in.individual_token_refiner.blocks.0.norm1.weight",
    .gguf_arch = "hyvid",
    .globals = dit_hunyuan_global_rules,
    .nglobals = DIT_HG_COUNT,
    .pools = hy_pools,
    .npools = 2,
    .stages = "hunyuan",
    .latent = {{4, 8, 8}, 1, &dit_latent_rgb_hunyuan},
    .rope = {256.0, hy_rope_axes, DIT_ROPE_INTERLEAVED},
    .image = DIT_IMAGE_NONE,
    .timestep = DIT_TIMESTEP_SAMPLE,
    .conds = hy_conds,
    .nconds = 6,
    .inputs = {.context = "text_states",
               .mask = "text_mask",
               .pooled = "text_states_2",
               .guidance = "guidance",
               .neg = "_neg"},
    .guidance = DIT_GUIDANCE_EMBEDDED,
    /* hyvideo/config.py: flow shift 7, 50 Euler steps, embedded guidance 6, no CFG
     * (cfg-scale 1), 129 frames of 720 x 1280 */
    .sched = {.solver = DIT_SOLVER_EULER,
              .steps = 50,
              .shift = 7.0,
              .guidance = {1.0, 1.0},
              .frames = 129,
              .height = 720,
              .width = 1280,
              .schedule = DIT_SCHEDULE_FLOW,
              .embedded = 6.0},
    .doc = &dit_hunyuan_doc,
};

/* ------------------------------------------------------------------ presets */

#define HY_CFG(d, h, ratio, nd, ns, tdim, tdim2, tlen, ch, r0, r1, r2)                             \
	{                                                                                          \
		.model_type = "hyvideo", .dim = (d), .ffn_dim = (int64_t)((d) * (ratio)),          \
		.freq_dim = 256, .in_dim = (ch), .out_dim = (ch), .num_heads = (h),                \
		.layers = {(nd), (ns)}, .text_len = (tlen), .text_dim = (tdim),                    \
		.text_dim_2 = (tdim2), .patch = {1, 2, 2}, .eps = 1e-6, .rope_dims = {r0, r1, r2}, \
		.rope_theta = 256.0, .mlp_ratio = (ratio), .guidance_embed = 1                     \
	}

const dit_preset dit_hunyuan_presets[] = {
    {"hunyuan-video", "official HunyuanVideo 1.0 T2V 720p (20 + 40 blocks, dim 3072)",
     "hunyuan-video", HY_CFG(3072, 24, 4.0, 20, 40, 4096, 768, 256, 16, 16, 56, 56), 129, 720, 1280,
     50},
    {"tiny-hunyuan", "tiny HunyuanVideo (2 + 4 blocks, dim 64, 2 heads of 32)", "hunyuan-video",
     HY_CFG(64, 2, 4.0, 2, 4, 32, 24, 16, 4, 8, 12, 12), 9, 64, 96, 6},
    {"small-hunyuan", "small HunyuanVideo for benchmarks (4 + 8 blocks, dim 512)", "hunyuan-video",
     HY_CFG(512, 4, 4.0, 4, 8, 256, 64, 64, 16, 16, 56, 56), 17, 256, 384, 4},
};

const size_t dit_hunyuan_npresets = sizeof dit_hunyuan_presets / sizeof dit_hunyuan_presets[0];

/* ------------------------------------------------------------ options and notes */
static const dit_family_opt hunyuan_opts[] = {
    {.name = "embedded-guidance",
     .arg = "G",
     .runs = DIT_FOPT_SAMPLING,
     .kind = DIT_FOPT_DOUBLE,
     .slot = DIT_HUNYUAN_OPT_EMBEDDED,
     .lo = 0,
     .hi = 1e6,
     .help = "the guidance scale the network takes as an input (default 6; it sees "
             "`fp32(G)*1000`)",
     .more = "Two-pass families refuse it"},
    {0}};

static const dit_family_note hunyuan_notes[] = {
    {"guidance", "1 (default): no unconditional pass; > 1 adds one"},
    {"context", "`text_states` `[L, 4096]`, `text_mask` `[L]` (ones for the prompt's tokens, "
                "then zeros; I64 or F32), `text_states_2` `[768]` (CLIP-L pooled), and for "
                "`--guidance` > 1 the same with `_neg`"},
    {"chunk", "one size per pool: `--chunk double_blocks=N --chunk single_blocks=M`"},
    {NULL, NULL}};

const dit_family_doc dit_hunyuan_doc = {
    "HunyuanVideo", "one pass a step with the guidance scale embedded, two pools of blocks",
    hunyuan_opts, hunyuan_notes};
