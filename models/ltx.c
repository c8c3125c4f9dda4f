/* The LTX-2 family as data (official code: Lightricks/LTX-2, packages/ltx-core/src/
 * ltx_core/model/transformer/; the config keys as model_configurator.py reads them):
 * 48 blocks of one kind, each with a video stream (dim 4096, 32 heads of 128) and an
 * audio stream (2048, 32 of 64) joined by two cross-attentions, and three released
 * versions told apart by their config: LTX-2 (19B: the caption projection inside the
 * network), LTX-2.3 (per-head gated attention, AdaLN on the text cross-attention, the
 * projection in the text encoder) and LTX-2.5 (also a video MLP without biases and the
 * keyframe position embedding).
 *
 * The release is one .safetensors file whose header holds the config ("config":
 * {"transformer": {...}}) and whose DiT tensors are named "model.diffusion_model." +
 * the state-dict name; a folder with that "transformer" object as config.json and the
 * tensors so named is read the same way. */
#include <stdio.h>

#include "dit_latent_rgb.h"
#include "dit_ltx.h"
#include "dit_model_desc.h"

static const char *const ltx_types[] = {"ltx2", NULL};

#define LTX_BOOL(k, f, d)                                                                          \
	{                                                                                          \
		k, offsetof(dit_hparams, f), DIT_CK_BOOL, 0, {d}, 0, 0                             \
	}

static const dit_config_key ltx_keys[] = {
    DIT_KEY_OPT("num_attention_heads", num_heads, 32),
    DIT_KEY_OPT("attention_head_dim", head_dim, 128),
    DIT_KEY_OPT("in_channels", in_dim, 128),
    DIT_KEY_OPT("out_channels", out_dim, 128),
    DIT_KEY_OPT("num_layers", layers[0], 48),
    DIT_KEY_OPT("cross_attention_dim", cross_dim, 4096),
    DIT_KEY_OPT("caption_channels", text_dim, 3840),
    {"norm_eps", offsetof(dit_hparams, eps), DIT_CK_REAL, 0, {1e-6}, 0, 0},
    {"positional_embedding_theta",
     offsetof(dit_hparams, rope_theta),
     DIT_CK_REAL,
     0,
     {10000.0},
     1,
     1 << 30},
    {"positional_embedding_max_pos",
     offsetof(dit_hparams, max_pos),
     DIT_CK_INT3,
     0,
     {20, 2048, 2048},
     1,
     1 << 20},
    {"timestep_scale_multiplier",
     offsetof(dit_hparams, ts_mult),
     DIT_CK_REAL,
     0,
     {1000.0},
     1,
     1 << 20},
    DIT_KEY_OPT("audio_num_attention_heads", aux_heads, 32),
    DIT_KEY_OPT("audio_attention_head_dim", aux_head_dim, 64),
    DIT_KEY_OPT("audio_in_channels", aux_in, 128),
    DIT_KEY_OPT("audio_out_channels", aux_out, 128),
    DIT_KEY_OPT("audio_cross_attention_dim", aux_cross_dim, 2048),
    {"audio_positional_embedding_max_pos",
     offsetof(dit_hparams, aux_max_pos),
     DIT_CK_INT1,
     0,
     {20},
     1,
     1 << 20},
    {"av_ca_timestep_scale_multiplier",
     offsetof(dit_hparams, av_ts_mult),
     DIT_CK_REAL,
     0,
     {1.0},
     1,
     1 << 20},
    LTX_BOOL("apply_gated_attention", gated_attn, 0),
    LTX_BOOL("cross_attention_adaln", ca_adaln, 0),
    LTX_BOOL("use_prompt_adaln_single", prompt_adaln, 1),
    LTX_BOOL("ff_bias", ff_bias, 1),
    LTX_BOOL("audio_ff_bias", aux_ff_bias, 1),
    LTX_BOOL("use_keyframes_abs_pos_embedding", keyframes, 0),
    LTX_BOOL("caption_proj_before_connector", caption_outside, 0),
};

/* What the official configurator checks (check_config_value) and this build implements. */
static const dit_config_extra ltx_extra[] = {
    {"attention_bias", DIT_CT_BOOL, "true"},
    {"activation_fn", DIT_CT_STRING, "gelu-approximate"},
    {"use_linear_projection", DIT_CT_BOOL, "false"},
    {"only_cross_attention", DIT_CT_BOOL, "false"},
    {"cross_attention_norm", DIT_CT_BOOL, "true"},
    {"double_self_attention", DIT_CT_BOOL, "false"},
    {"upcast_attention", DIT_CT_BOOL, "false"},
    {"standardization_norm", DIT_CT_STRING, "rms_norm"},
    {"norm_elementwise_affine", DIT_CT_BOOL, "false"},
    {"qk_norm", DIT_CT_STRING, "rms_norm"},
    {"positional_embedding_type", DIT_CT_STRING, "rope"},
    {"use_audio_video_cross_attention", DIT_CT_BOOL, "true"},
    {"share_ff", DIT_CT_BOOL, "false"},
    {"av_cross_ada_norm", DIT_CT_BOOL, "true"},
    {"use_middle_indices_grid", DIT_CT_BOOL, "true"},
    {"rope_type", DIT_CT_STRING, "split"},
    {"frequencies_precision", DIT_CT_STRING, NULL},
};

/* The fields no key gives: the widths, the MLPs' 4x, the table rows, the context widths
 * the network reads (before its caption projection, or the text encoder's), the
 * sinusoid size, the text length (Gemma's 1024 tokens) and the 1 x 1 x 1 patch. */
static void ltx_derive(dit_hparams *hp)
{
	snprintf(hp->model_type, sizeof hp->model_type, "%s", "ltx2");
	hp->dim = hp->num_heads * hp->head_dim;
	hp->aux_dim = hp->aux_heads * hp->aux_head_dim;
	hp->ffn_dim = 4 * hp->dim;
	hp->aux_ffn_dim = 4 * hp->aux_dim;
	hp->ada_rows = hp->ca_adaln ? 9 : 6;
	if (hp->caption_outside) {
		hp->text_dim = hp->cross_dim;
		hp->aux_text_dim = hp->aux_cross_dim;
	} else {
		hp->aux_text_dim = hp->text_dim;
	}
	hp->freq_dim = 256;
	if (hp->text_len == 0)
		hp->text_len = 1024;
	for (int i = 0; i < 3; i++)
		hp->patch[i] = 1;
}

static int ltx_check(const dit_hparams *hp, char *why, size_t len)
{
	if (hp->aux_heads != hp->num_heads) {
		snprintf(why, len,
		         "key 'num_attention_heads' (%lld) must equal 'audio_num_attention_heads' "
		         "(%lld)",
		         (long long)hp->num_heads, (long long)hp->aux_heads);
		return 0;
	}
	if (hp->head_dim % 2 || hp->aux_head_dim % 2) {
		snprintf(why, len, "the head widths (%lld, %lld) must be even",
		         (long long)hp->head_dim, (long long)hp->aux_head_dim);
		return 0;
	}
	if (hp->dim > ((int64_t)1 << 20) || hp->aux_dim > ((int64_t)1 << 20)) {
		snprintf(why, len, "widths %lld and %lld are implausibly large", (long long)hp->dim,
		         (long long)hp->aux_dim);
		return 0;
	}
	if (hp->cross_dim != hp->dim || hp->aux_cross_dim != hp->aux_dim) {
		snprintf(why, len,
		         "key 'cross_attention_dim' (%lld) must be the video width %lld and "
		         "'audio_cross_attention_dim' (%lld) the audio width %lld",
		         (long long)hp->cross_dim, (long long)hp->dim, (long long)hp->aux_cross_dim,
		         (long long)hp->aux_dim);
		return 0;
	}
	if (hp->aux_in != 128 || hp->aux_out != 128) {
		snprintf(why, len,
		         "audio channels %lld in, %lld out: the audio latent is 8 channels x 16 "
		         "mel bins (128)",
		         (long long)hp->aux_in, (long long)hp->aux_out);
		return 0;
	}
	if (hp->dim / 2 < 3 * (hp->dim / 6) || hp->dim / 6 < 1) {
		snprintf(why, len, "video width %lld is too small for a 3-axis RoPE",
		         (long long)hp->dim);
		return 0;
	}
	if (hp->layers[0] < 1) {
		snprintf(why, len, "no blocks");
		return 0;
	}
	return 1;
}

const dit_config_desc dit_ltx_config_desc = {
    .class_name = "AVTransformer3DModel",
    .detect_key = "audio_num_attention_heads",
    .model_type_key = 0,
    .model_types = ltx_types,
    .keys = ltx_keys,
    .nkeys = (int)(sizeof ltx_keys / sizeof ltx_keys[0]),
    .extra = ltx_extra,
    .nextra = (int)(sizeof ltx_extra / sizeof ltx_extra[0]),
    .derive = ltx_derive,
    .check = ltx_check,
};

static const dit_format_desc ltx_official = {
    .name = "official",
    .config = &dit_ltx_config_desc,
    .pool_prefix = {"transformer_blocks."},
    .name_prefix = "model.diffusion_model.",
};

static const dit_pool_desc ltx_pools[] = {
    {"transformer_blocks.", "ltx_av", dit_ltx_block_rules, DIT_LB_COUNT},
};

static const dit_cond_desc ltx_conds[] = {
    {"video_latent", "[C, F, H, W]", "the noisy video latent", 1},
    {"video_sigma", "[1]", "the video sigma, 0..1", 1},
    {"video_timesteps", "[F, H, W]", "per-token sigmas (sigma x denoise mask)", 0},
    {"video_context", "[L, text_dim]", "video text features", 1},
    {"video_context_mask", "[L]", "1 for the prompt's tokens, then 0", 0},
    {"video_positions", "[3, F H W, 2]", "token bounds (s, px, px); else from the grid", 0},
    {"audio_latent", "[8, T, 16]", "the noisy audio latent (none: video only)", 0},
    {"audio_sigma", "[1]", "the audio sigma", 0},
    {"audio_timesteps", "[T]", "per-token audio sigmas", 0},
    {"audio_context", "[L, aux_text_dim]", "audio text features", 0},
    {"audio_context_mask", "[L]", "1 for the prompt's tokens, then 0", 0},
    {"audio_positions", "[1, T, 2]", "token bounds in seconds; else from T", 0},
};

static const dit_stream_desc ltx_audio = {
    .name = "audio",
    .latent = "audio_latent",
    .out = "audio",
    .sigma = "audio_sigma",
    .timesteps = "audio_timesteps",
    .context = "audio_context",
    .mask = "audio_context_mask",
    .positions = "audio_positions",
    .channels = 8,
    .mel = 16,
};

const dit_model_desc dit_ltx2 = {
    .name = "ltx-2",
    .family = "ltx-2",
    .about = "LTX-2 audio-video DiT (19B, 2.3 and 2.5 22B): 48 blocks of video + audio",
    .model_type = "ltx2",
    .nexperts = 1,
    .formats = {&ltx_official},
    .globals = dit_ltx_global_rules,
    .nglobals = DIT_LG_COUNT,
    .pools = ltx_pools,
    .npools = 1,
    .stages = "ltx",
    .latent = {{8, 32, 32}, 1, &dit_latent_rgb_ltxv},
    .rope = {10000.0, NULL, DIT_ROPE_HALVES},
    .image = DIT_IMAGE_NONE,
    .timestep = DIT_TIMESTEP_TOKEN,
    .conds = ltx_conds,
    .nconds = (int)(sizeof ltx_conds / sizeof ltx_conds[0]),
    .inputs = {.context = "video_context",
               .mask = "video_context_mask",
               .neg = "_negative",
               .latent = "video_latent",
               .sigma = "video_sigma",
               .timesteps = "video_timesteps",
               .positions = "video_positions",
               .out = "video"},
    .aux = &ltx_audio,
    .guidance = DIT_GUIDANCE_MULTI,
    /* ltx_pipelines/utils/constants.py: 40 Euler steps (LTX-2.3+: 30), 121 frames of
     * 512 x 768 at 24 fps */
    /* ltx_core's LTX2Scheduler as every official pipeline calls it (4096 tokens), and
     * the pipelines' defaults: LTX-2.3 and later 30 steps and STG on block 28 (LTX-2:
     * 40 steps, block 29); video CFG 3, audio CFG 7, STG 1, rescale 0.7, modality 3 */
    .sched = {.solver = DIT_SOLVER_EULER,
              .steps = 40,
              .guidance = {3.0, 3.0},
              .frames = 121,
              .height = 512,
              .width = 768,
              .schedule = DIT_SCHEDULE_LTX2,
              .ltx2 = {.base_shift = 0.95,
                       .max_shift = 2.05,
                       .base_tokens = 1024,
                       .max_tokens = 4096,
                       .tokens = 4096,
                       .terminal = 0.1},
              .multi = {.steps_later = 30,
                        .stg_block = 29,
                        .stg_block_later = 28,
                        .stg_of_blocks = 48,
                        .video = {3.0, 1.0, 0.7, 3.0},
                        .audio = {7.0, 1.0, 0.7, 3.0}}},
    .doc = &dit_ltx_doc,
};

/* ------------------------------------------------------------------ presets */

#define LTX_CFG(h, hd, ahd, nl, ch, cap, outside, gated, ca, ffb, kf)                              \
	{                                                                                          \
		.model_type = "ltx2", .num_heads = (h), .head_dim = (hd), .in_dim = (ch),          \
		.out_dim = (ch), .layers = {(nl)}, .cross_dim = (h) * (hd), .text_dim = (cap),     \
		.eps = 1e-6, .rope_theta = 10000.0, .max_pos = {20, 2048, 2048},                   \
		.ts_mult = 1000.0, .aux_heads = (h), .aux_head_dim = (ahd), .aux_in = 128,         \
		.aux_out = 128, .aux_cross_dim = (h) * (ahd), .aux_max_pos = 20,                   \
		.av_ts_mult = 1000.0, .gated_attn = (gated), .ca_adaln = (ca), .prompt_adaln = 1,  \
		.ff_bias = (ffb), .aux_ff_bias = 1, .keyframes = (kf),                             \
		.caption_outside = (outside)                                                       \
	}

const dit_preset dit_ltx_presets[] = {
    {"ltx-2-19b", "official LTX-2 19B (48 blocks, video 4096 + audio 2048)", "ltx-2",
     LTX_CFG(32, 128, 64, 48, 128, 3840, 0, 0, 0, 1, 0), 121, 512, 768, 40},
    {"ltx-2.3-22b", "official LTX-2.3 22B (gated attention, text AdaLN)", "ltx-2",
     LTX_CFG(32, 128, 64, 48, 128, 4096, 1, 1, 1, 1, 0), 121, 512, 768, 30},
    {"ltx-2.5-22b", "official LTX-2.5 22B (video MLP without biases, keyframe embedding)", "ltx-2",
     LTX_CFG(32, 128, 64, 48, 128, 4096, 1, 1, 1, 0, 1), 121, 512, 768, 30},
    {"small-ltx2", "small LTX-2 for benchmarks (8 blocks, video 512 + audio 256, 8 heads)", "ltx-2",
     LTX_CFG(8, 64, 32, 8, 128, 256, 0, 0, 0, 1, 0), 49, 256, 384, 4},
    {"tiny-ltx2", "tiny LTX-2 (2 blocks, video 64 + audio 32, 2 heads)", "ltx-2",
     LTX_CFG(2, 32, 16, 2, 16, 48, 0, 0, 0, 1, 0), 17, 64, 96, 4},
    {"tiny-ltx2.3", "tiny LTX-2.3 (2 blocks, gated attention, text AdaLN)", "ltx-2",
     LTX_CFG(2, 32, 16, 2, 16, 64, 1, 1, 1, 1, 0), 17, 64, 96, 4},
    {"tiny-ltx2.5", "tiny LTX-2.5 (2 blocks, bias-free video MLP, keyframes)", "ltx-2",
     LTX_CFG(2, 32, 16, 2, 16, 64, 1, 1, 1, 0, 1), 17, 64, 96, 4},
};

const size_t dit_ltx_npresets = sizeof dit_ltx_presets / sizeof dit_ltx_presets[0];

/* ------------------------------------------------------------ options and notes */
#define LTX_SCALE(n, s, h)                                                                         \
	{                                                                                          \
		.name = n, .arg = "G", .runs = DIT_FOPT_SAMPLING, .kind = DIT_FOPT_DOUBLE,         \
		.slot = s, .lo = 0, .hi = 1000, .help = h

static const dit_family_opt
    ltx_opts[] = {LTX_SCALE("video-guidance", DIT_LTX_OPT_VIDEO_CFG,
                            "the video stream's CFG scale (default 3)"),
                  .more = "The negative-prompt pass runs when it or `--audio-guidance` is not 1"},
    LTX_SCALE("audio-guidance", DIT_LTX_OPT_AUDIO_CFG, "the audio stream's CFG scale (default 7)")
}
,
    {.name = "stg",
     .arg = "S",
     .runs = DIT_FOPT_SAMPLING,
     .kind = DIT_FOPT_DOUBLE,
     .slot = DIT_LTX_OPT_STG,
     .lo = 0,
     .hi = 1000,
     .help = "STG scale (default 1; 0: no STG pass)"},
    {.name = "stg-blocks",
     .arg = "LIST",
     .runs = DIT_FOPT_SAMPLING | DIT_FOPT_FORWARD,
     .kind = DIT_FOPT_STRING,
     .slot = DIT_LTX_OPT_STG_BLOCKS,
     .help = "the blocks whose self-attention the STG pass replaces by its value projection "
             "(default 29; LTX-2.3+ 28; a model of fewer than 48 blocks the block at the "
             "same depth, 29 x blocks / 48 rounded down)",
     .more = "As `ltx_pipelines/utils/constants.py`"},
    {.name = "modality-guidance",
     .arg = "M",
     .runs = DIT_FOPT_SAMPLING,
     .kind = DIT_FOPT_DOUBLE,
     .slot = DIT_LTX_OPT_MODALITY,
     .lo = 0,
     .hi = 1000,
     .help = "isolated-modality scale (default 3; 1: no such pass)",
     .more = "That pass runs without the audio-video cross-attentions"},
    {.name = "rescale",
     .arg = "R",
     .runs = DIT_FOPT_SAMPLING,
     .kind = DIT_FOPT_DOUBLE,
     .slot = DIT_LTX_OPT_RESCALE,
     .lo = 0,
     .hi = 1000,
     .help = "guidance rescale (default 0.7)",
     .more = "The guided x0 is multiplied by `R*std(x0_cond)/std(x0_guided) + 1 - R`"},
    {.name = "sigmas",
     .arg = "LIST|distilled",
     .runs = DIT_FOPT_SAMPLING,
     .kind = DIT_FOPT_STRING,
     .slot = DIT_LTX_OPT_SIGMAS,
     .help = "the sigmas instead of the LTX2Scheduler's: a decreasing list ending in 0 "
             "(`0.909375,0.725,0.421875,0.0`) or `distilled` (the distilled pipeline's 8 "
             "steps)",
     .more = "A list such as the two-stage pipeline's second stage, on latents you "
             "upsampled, given with `--noise`"},
    {.name = "fps",
     .arg = "F",
     .runs = DIT_FOPT_SAMPLING | DIT_FOPT_FORWARD,
     .kind = DIT_FOPT_DOUBLE,
     .slot = DIT_LTX_OPT_FPS,
     .lo = 0,
     .hi = 1000,
     .lo_open = 1,
     .want = "needs a frame rate in (0, 1000]",
     .help = "frame rate of the video positions (default 24)"},
    {.name = "image-strength",
     .arg = "S",
     .runs = DIT_FOPT_SAMPLING,
     .kind = DIT_FOPT_DOUBLE,
     .slot = DIT_LTX_OPT_IMG_STRENGTH,
     .lo = 0,
     .hi = 1,
     .want = "needs a strength in [0, 1]",
     .help = "with `--image-latent`: how strongly the image latent holds its frame (default "
             "1: kept as it is)",
     .more = "The official `--image PATH FRAME STRENGTH`: the frame's tokens are denoised "
             "with the mask 1 - S (their timestep (1 - S) sigma, their x0 blended with the "
             "image latent)"},
    {.name = "image-frame",
     .arg = "K",
     .runs = DIT_FOPT_SAMPLING,
     .kind = DIT_FOPT_INT,
     .slot = DIT_LTX_OPT_IMG_FRAME,
     .lo = 0,
     .hi = 1 << 20,
     .want = "needs a latent frame index",
     .help = "with `--image-latent`: the latent frame it sets (default 0, the first)"},
{
	0
}
}
;
#undef LTX_SCALE

static const dit_family_note ltx_notes[] = {
    {"steps", "Euler steps over the LTX2Scheduler sigmas (default 40; LTX-2.3+ 30)"},
    {"noise", "`video_noise` `[128, F, H, W]` and `audio_noise` `[8, T, 16]`; without "
              "`audio_noise` the video stream runs alone (and only `video_latents` is "
              "written)"},
    {"context", "`video_context` `[L, text_dim]`, `audio_context` `[L, aux_text_dim]` and "
                "the negative prompt's `video_context_negative`, `audio_context_negative` "
                "(LTX-2 19B: the 3840-wide connector outputs before the DiT's caption "
                "projection; LTX-2.3+: 4096 and 2048 wide)"},
    {"output", "writes `video_latents` `[128, F, H, W]` and `audio_latents` `[8, T, 16]`"},
    {NULL, NULL}};

const dit_family_doc dit_ltx_doc = {
    "LTX-2",
    "four guidance passes a step, a video and an audio stream; "
    "these instead of `--guidance`, `--shift` and `--solver`, which it refuses",
    ltx_opts, ltx_notes};
