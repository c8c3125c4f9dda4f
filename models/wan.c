/* The Wan families as data: Wan2.1 text-to-video, image-to-video and
 * first-last-frame-to-video, and Wan2.2 T2V-A14B, I2V-A14B and TI2V-5B (official code:
 * Wan-Video/Wan2.1 and Wan2.2, the configs in wan/configs/ for the defaults, wan/modules/model.py
 * for the network). Every one is made of blocks of kind "wan" with the tensor tables of
 * wan21_tensors.c.
 *
 * Built-in presets: the official configs, and tiny ones that keep each architecture
 * with small sizes so that tests and the default run finish in seconds. */
#include <stdio.h>

#include "dit_latent_rgb.h"
#include "dit_model_desc.h"
#include "dit_wan.h"

extern const dit_format_desc dit_wan_official, dit_wan_diffusers;

void dit_rope_axes_wan(int64_t head_dim, int64_t axes[3])
{
	int64_t c = head_dim / 2;
	axes[1] = axes[2] = c / 3;
	axes[0] = c - 2 * (c / 3);
}

static const dit_pool_desc wan_pool[] = {
    {"blocks.", "wan", dit_wan_block_rules, DIT_WB_COUNT},
};

static const dit_cond_desc wan_t2v_conds[] = {
    {"x", "[C, F, H, W]", "the noisy latent", 1},
    {"t", "[1]", "the timestep, 0..1000", 1},
    {"context", "[L, text_dim]", "umT5 text embedding, zero-padded to text_len rows", 1},
};
static const dit_cond_desc wan22_t2v_conds[] = {
    {"x", "[C, F, H, W]", "the noisy latent", 1},
    {"t", "[1] or [L]", "the timestep, one value or one per token (L = F'H'W')", 1},
    {"context", "[L, text_dim]", "umT5 text embedding, zero-padded to text_len rows", 1},
};
static const dit_cond_desc wan22_i2v_conds[] = {
    {"x", "[C, F, H, W]", "the noisy latent", 1},
    {"t", "[1] or [L]", "the timestep, one value or one per token", 1},
    {"context", "[L, text_dim]", "umT5 text embedding", 1},
    {"y", "[in_dim - C, F, H, W]",
     "4 first-frame mask channels, then the image latent (concatenated after x)", 1},
};

static const dit_cond_desc wan21_i2v_conds[] = {
    {"x", "[C, F, H, W]", "the noisy latent", 1},
    {"t", "[1]", "the timestep, 0..1000", 1},
    {"context", "[L, text_dim]", "umT5 text embedding, zero-padded to text_len rows", 1},
    {"clip_fea", "[257, 1280]",
     "CLIP ViT-H/14 features of the image (its penultimate block's 257 tokens)", 1},
    {"y", "[in_dim - C, F, H, W]",
     "4 first-frame mask channels, then the image latent (concatenated after x)", 1},
};
static const dit_cond_desc wan21_flf2v_conds[] = {
    {"x", "[C, F, H, W]", "the noisy latent", 1},
    {"t", "[1]", "the timestep, 0..1000", 1},
    {"context", "[L, text_dim]", "umT5 text embedding, zero-padded to text_len rows", 1},
    {"clip_fea", "[2, 257, 1280]", "CLIP ViT-H/14 features of the first and the last frame", 1},
    {"y", "[in_dim - C, F, H, W]",
     "4 mask channels (first and last frame), then the latent of the first frame, zeros "
     "and the last frame",
     1},
};

#define WAN_TABLES                                                                                 \
	.formats = {&dit_wan_official, &dit_wan_diffusers}, .globals = dit_wan_global_rules,       \
	.nglobals = DIT_WG_COUNT, .pools = wan_pool, .npools = 1, .stages = "wan",                 \
	.rope = {10000.0, dit_rope_axes_wan, DIT_ROPE_INTERLEAVED}, .guidance = DIT_GUIDANCE_CFG,  \
	.gguf_arch = "wan"
#define WAN_COMMON WAN_TABLES, .inputs = {.context = "context", .neg = "_null"}
/* Wan2.1 I2V and FLF2V: one checkpoint, the sizes of a one-file one from its shapes, y
 * concatenated, clip_fea beside the text */
#define WAN21_IMAGE                                                                                \
	.family = "wan2.1", .nexperts = 1, .release_name = "Wan",                                  \
	.config_from_shapes = dit_wan_from_shapes, .shapes_one_file = 1, WAN_TABLES,               \
	.inputs = {.context = "context", .neg = "_null", .image = "clip_fea"},                     \
	.latent = {{4, 8, 8}, 1, &dit_latent_rgb_wan21}, .image = DIT_IMAGE_CONCAT,                \
	.timestep = DIT_TIMESTEP_SAMPLE, .nconds = 5, .doc = &dit_wan21_doc
/* every Wan model samples with UniPC on Wan's schedule */
#define WAN_SCHED .solver = DIT_SOLVER_UNIPC, .schedule = DIT_SCHEDULE_UNIPC

const dit_model_desc dit_wan21_t2v = {
    .name = "wan2.1-t2v",
    .family = "wan2.1",
    .about = "Wan2.1 text-to-video (1.3B, 14B)",
    .model_type = "t2v",
    .nexperts = 1,
    .refuse_tensor = "img_emb.proj.0.weight",
    .refuse_why = "Wan2.1 image-to-video's CLIP branch, in a text-to-video checkpoint (its "
                  "config.json says t2v, or its channels do)",
    /* one file without config.json (ComfyUI's, GGUF): the sizes from the shapes, the
     * rest of the 1.3B's config (text_len 512, eps 1e-6); TI2V-5B by its channels */
    .release_preset = "wan2.1-t2v-1.3b",
    .release_name = "Wan",
    .probe_tensor = "head.modulation",
    .config_from_shapes = dit_wan_from_shapes,
    .shapes_one_file = 1,
    WAN_COMMON,
    .latent = {{4, 8, 8}, 1, &dit_latent_rgb_wan21},
    .image = DIT_IMAGE_NONE,
    .timestep = DIT_TIMESTEP_SAMPLE,
    .conds = wan_t2v_conds,
    .nconds = 3,
    .sched = {WAN_SCHED, .steps = 50, .shift = 5.0, .guidance = {5.0, 5.0}, .frames = 81,
              .height = 480, .width = 832},
    .doc = &dit_wan21_doc,
};

/* Wan2.1 image-to-video (wan/image2video.py, WanModel model_type 'i2v'): the image
 * latent concatenated to the input as Wan2.2 I2V-A14B's, and the CLIP branch: the
 * image's features projected by img_emb, read by every block's cross-attention
 * through its own keys and values. One checkpoint with config.json model_type "i2v"
 * (a Wan2.2 I2V-A14B expert's config reads the same: the two are told apart by the
 * layout, one folder or two experts). */
const dit_model_desc dit_wan21_i2v = {
    .name = "wan2.1-i2v",
    WAN21_IMAGE,
    .about = "Wan2.1 I2V-14B (480P, 720P): image latent and CLIP image features",
    .model_type = "i2v",
    .release_preset = "wan2.1-i2v-14b-720p",
    .image_ctx = {DIT_WAN_CLIP_DIM, DIT_WAN_CLIP_TOKENS, 0},
    .need_tensor = "img_emb.proj.0.weight",
    .need_why = "model_type 'i2v' in one checkpoint is Wan2.1 I2V, whose CLIP branch it lacks: "
                "one expert of Wan2.2 I2V-A14B? (give the folder holding high_noise_model/ "
                "and low_noise_model/)",
    .conds = wan21_i2v_conds,
    /* wan/configs/wan_i2v_14B.py, generate.py: 40 steps, shift 5 (3 at 832*480) */
    .sched = {WAN_SCHED, .steps = 40, .shift = 5.0, .shift_480 = 3.0, .guidance = {5.0, 5.0},
              .frames = 81, .height = 720, .width = 1280,
              .sizes = "720*1280 1280*720 480*832 832*480"},
};

/* Wan2.1 first-last-frame-to-video (wan/first_last_frame2video.py, model_type
 * 'flf2v'): Wan2.1 I2V with two images, whose 514 CLIP tokens get img_emb.emb_pos. */
const dit_model_desc dit_wan21_flf2v = {
    .name = "wan2.1-flf2v",
    WAN21_IMAGE,
    .about = "Wan2.1 FLF2V-14B: first and last frame to video",
    .model_type = "flf2v",
    .release_preset = "wan2.1-flf2v-14b-720p",
    .image_ctx = {DIT_WAN_CLIP_DIM, 2 * DIT_WAN_CLIP_TOKENS, 1},
    .conds = wan21_flf2v_conds,
    /* generate.py: 50 steps, shift 16 */
    .sched = {WAN_SCHED, .steps = 50, .shift = 16.0, .guidance = {5.0, 5.0}, .frames = 81,
              .height = 720, .width = 1280, .sizes = "720*1280 1280*720 480*832 832*480"},
};

const dit_model_desc dit_wan22_t2v_a14b = {
    .name = "wan2.2-t2v-a14b",
    .release_preset = "wan2.2-t2v-a14b",
    .family = "wan2.2",
    .about = "Wan2.2 T2V-A14B: two 14B experts (high noise, low noise)",
    .model_type = "t2v",
    .nexperts = 2,
    .expert_label = {"high", "low"},
    /* two one-file experts without config.json (ComfyUI's pair, src/checkpoint/dit_ck_pair.c):
     * the sizes from each file's shapes, T2V or I2V by the channels */
    .release_name = "Wan",
    .probe_tensor = "head.modulation",
    .config_from_shapes = dit_wan_expert_from_shapes,
    .shapes_one_file = 1,
    WAN_COMMON,
    .latent = {{4, 8, 8}, 1, &dit_latent_rgb_wan21},
    .image = DIT_IMAGE_NONE,
    .timestep = DIT_TIMESTEP_TOKEN,
    .conds = wan22_t2v_conds,
    .nconds = 3,
    /* wan/configs/wan_t2v_A14B.py: guide (low 3.0, high 4.0), boundary 0.875 */
    .sched = {WAN_SCHED, .steps = 40, .shift = 12.0, .guidance = {4.0, 3.0}, .boundary = 0.875,
              .frames = 81, .height = 720, .width = 1280},
    .doc = &dit_wan22_doc,
};

const dit_model_desc dit_wan22_i2v_a14b = {
    .name = "wan2.2-i2v-a14b",
    .release_preset = "wan2.2-i2v-a14b",
    .family = "wan2.2",
    .about = "Wan2.2 I2V-A14B: two 14B experts, image latent concatenated to the input",
    .model_type = "i2v",
    .nexperts = 2,
    .expert_label = {"high", "low"},
    /* two one-file experts without config.json (ComfyUI's pair, src/checkpoint/dit_ck_pair.c):
     * the sizes from each file's shapes, T2V or I2V by the channels */
    .release_name = "Wan",
    .probe_tensor = "head.modulation",
    .config_from_shapes = dit_wan_expert_from_shapes,
    .shapes_one_file = 1,
    .refuse_tensor = "img_emb.proj.0.weight",
    .refuse_why = "a CLIP branch (Wan2.1 image-to-video): Wan2.2 I2V-A14B has none",
    WAN_COMMON,
    .latent = {{4, 8, 8}, 1, &dit_latent_rgb_wan21},
    .image = DIT_IMAGE_CONCAT,
    .timestep = DIT_TIMESTEP_TOKEN,
    .conds = wan22_i2v_conds,
    .nconds = 4,
    /* wan/configs/wan_i2v_A14B.py: guide (3.5, 3.5), boundary 0.900, shift 5 */
    .sched = {WAN_SCHED, .steps = 40, .shift = 5.0, .guidance = {3.5, 3.5}, .boundary = 0.900,
              .frames = 81, .height = 720, .width = 1280},
    .doc = &dit_wan22_doc,
};

const dit_model_desc dit_wan22_ti2v_5b = {
    .name = "wan2.2-ti2v-5b",
    .family = "wan2.2",
    .about = "Wan2.2 TI2V-5B: text or first-frame image to video, VAE stride 4/16/16",
    .model_type = "ti2v",
    .nexperts = 1,
    /* read from the shapes by wan2.1-t2v's probe when the channels are 48 */
    .release_preset = "wan2.2-ti2v-5b",
    .release_name = "Wan",
    .config_from_shapes = dit_wan_from_shapes,
    .shapes_one_file = 1,
    WAN_COMMON,
    .latent = {{4, 16, 16}, 1, &dit_latent_rgb_wan22},
    .image = DIT_IMAGE_FIRST_FRAME,
    .timestep = DIT_TIMESTEP_TOKEN,
    .conds = wan22_t2v_conds,
    .nconds = 3,
    /* wan/configs/wan_ti2v_5B.py; generate.py passes 50 steps */
    .sched = {WAN_SCHED, .steps = 50, .shift = 5.0, .guidance = {5.0, 5.0}, .frames = 121,
              .height = 704, .width = 1280, .sizes = "1280*704 704*1280"},
    .doc = &dit_wan22_doc,
};

/* ------------------------------------------------------------------ presets */

#define WAN_CFG(mt, d, f, h, l, in, out)                                                           \
	{                                                                                          \
		.model_type = mt, .dim = (d), .ffn_dim = (f), .freq_dim = 256, .in_dim = (in),     \
		.out_dim = (out), .num_heads = (h), .layers = {(l)}, .text_len = 512,              \
		.text_dim = 4096, .patch = {1, 2, 2}, .eps = 1e-6                                  \
	}
#define WAN_TINY(mt, in, out)                                                                      \
	{                                                                                          \
		.model_type = mt, .dim = 64, .ffn_dim = 128, .freq_dim = 32, .in_dim = (in),       \
		.out_dim = (out), .num_heads = 2, .layers = {4}, .text_len = 16, .text_dim = 32,   \
		.patch = {1, 2, 2}, .eps = 1e-6                                                    \
	}

const dit_preset dit_wan_presets[] = {
    {"wan2.1-t2v-1.3b", "official Wan2.1 T2V 1.3B (30 blocks, dim 1536)", "wan2.1-t2v",
     WAN_CFG("t2v", 1536, 8960, 12, 30, 16, 16), 81, 480, 832, 50},
    {"wan2.1-t2v-14b", "official Wan2.1 T2V 14B (40 blocks, dim 5120)", "wan2.1-t2v",
     WAN_CFG("t2v", 5120, 13824, 40, 40, 16, 16), 81, 720, 1280, 50},
    {"wan2.2-t2v-a14b", "official Wan2.2 T2V-A14B (2 experts x 40 blocks, dim 5120)",
     "wan2.2-t2v-a14b", WAN_CFG("t2v", 5120, 13824, 40, 40, 16, 16), 81, 720, 1280, 40},
    {"wan2.2-i2v-a14b", "official Wan2.2 I2V-A14B (2 experts x 40 blocks, in_dim 36)",
     "wan2.2-i2v-a14b", WAN_CFG("i2v", 5120, 13824, 40, 40, 36, 16), 81, 720, 1280, 40},
    {"wan2.2-ti2v-5b", "official Wan2.2 TI2V-5B (30 blocks, dim 3072, 48 channels)",
     "wan2.2-ti2v-5b", WAN_CFG("ti2v", 3072, 14336, 24, 30, 48, 48), 121, 704, 1280, 50},
    {"tiny",
     "tiny Wan (4 blocks, dim 128, 2 heads of 64): the default run",
     "wan2.1-t2v",
     {.model_type = "t2v",
      .dim = 128,
      .ffn_dim = 384,
      .freq_dim = 64,
      .in_dim = 16,
      .out_dim = 16,
      .num_heads = 2,
      .layers = {4},
      .text_len = 32,
      .text_dim = 64,
      .patch = {1, 2, 2},
      .eps = 1e-6},
     17,
     128,
     192,
     10},
    {"tiny-test",
     "smallest Wan for unit tests (2 blocks, dim 32, 2 heads of 16)",
     "wan2.1-t2v",
     {.model_type = "t2v",
      .dim = 32,
      .ffn_dim = 64,
      .freq_dim = 16,
      .in_dim = 4,
      .out_dim = 4,
      .num_heads = 2,
      .layers = {2},
      .text_len = 8,
      .text_dim = 24,
      .patch = {1, 2, 2},
      .eps = 1e-6},
     5,
     32,
     48,
     3},
    {"small",
     "small Wan for benchmarks (8 blocks, dim 512, 4 heads of 128)",
     "wan2.1-t2v",
     {.model_type = "t2v",
      .dim = 512,
      .ffn_dim = 1536,
      .freq_dim = 256,
      .in_dim = 16,
      .out_dim = 16,
      .num_heads = 4,
      .layers = {8},
      .text_len = 64,
      .text_dim = 256,
      .patch = {1, 2, 2},
      .eps = 1e-6},
     17,
     256,
     384,
     4},
    {"wan2.1-i2v-14b-480p", "official Wan2.1 I2V-14B-480P (40 blocks, in_dim 36, CLIP branch)",
     "wan2.1-i2v", WAN_CFG("i2v", 5120, 13824, 40, 40, 36, 16), 81, 480, 832, 40},
    {"wan2.1-i2v-14b-720p", "official Wan2.1 I2V-14B-720P (40 blocks, in_dim 36, CLIP branch)",
     "wan2.1-i2v", WAN_CFG("i2v", 5120, 13824, 40, 40, 36, 16), 81, 720, 1280, 40},
    {"wan2.1-flf2v-14b-720p", "official Wan2.1 FLF2V-14B-720P (I2V with first and last frame)",
     "wan2.1-flf2v", WAN_CFG("flf2v", 5120, 13824, 40, 40, 36, 16), 81, 720, 1280, 50},
    {"tiny-i2v", "tiny Wan2.1 I2V (4 blocks, dim 64, in_dim 36, CLIP branch)", "wan2.1-i2v",
     WAN_TINY("i2v", 36, 16), 17, 64, 96, 8},
    {"tiny-flf2v", "tiny Wan2.1 FLF2V (4 blocks, dim 64, two images' CLIP tokens)", "wan2.1-flf2v",
     WAN_TINY("flf2v", 36, 16), 17, 64, 96, 8},
    {"tiny-t2v-a14b", "tiny Wan2.2 T2V-A14B (2 experts x 4 blocks, dim 64)", "wan2.2-t2v-a14b",
     WAN_TINY("t2v", 16, 16), 17, 64, 96, 8},
    {"tiny-i2v-a14b", "tiny Wan2.2 I2V-A14B (2 experts x 4 blocks, in_dim 36)", "wan2.2-i2v-a14b",
     WAN_TINY("i2v", 36, 16), 17, 64, 96, 8},
    {"tiny-ti2v-5b", "tiny Wan2.2 TI2V-5B (4 blocks, 48 channels, VAE stride 4/16/16)",
     "wan2.2-ti2v-5b", WAN_TINY("ti2v", 48, 48), 17, 128, 192, 8},
};

const size_t dit_wan_npresets = sizeof dit_wan_presets / sizeof dit_wan_presets[0];

/* ------------------------------------------------------------ options and notes */
static const char *const wan22_experts[] = {"high", "low", NULL};

static const dit_family_opt wan22_opts[] = {
    {.name = "guidance-high",
     .arg = "G",
     .runs = DIT_FOPT_SAMPLING,
     .kind = DIT_FOPT_DOUBLE,
     .slot = DIT_WAN22_OPT_GUIDANCE_HIGH,
     .lo = 0,
     .hi = 1e6,
     .help = "two-expert models: the high-noise expert's scale (then `--guidance` is the "
             "low-noise one's)"},
    {.name = "boundary",
     .arg = "B",
     .runs = DIT_FOPT_SAMPLING,
     .kind = DIT_FOPT_DOUBLE,
     .slot = DIT_WAN22_OPT_BOUNDARY,
     .lo = 0,
     .hi = 1,
     .help = "two-expert models: the high-noise expert runs while the integer timestep >= "
             "B*1000 (default 0.875; I2V-A14B 0.900)",
     .more = "As the official `t.item() >= boundary`"},
    {.name = "expert",
     .runs = DIT_FOPT_FORWARD,
     .kind = DIT_FOPT_CHOICE,
     .slot = DIT_WAN22_OPT_EXPERT,
     .names = wan22_experts,
     .want = "needs high or low",
     .help = "two-expert models: which expert (default high)"},
    {0}};

static const dit_family_note wan22_notes[] = {
    {"guidance", "the scale of both experts (T2V-A14B 3.0 low / 4.0 high; I2V-A14B 3.5)"},
    {NULL, NULL}};
static const dit_family_note no_notes[] = {{NULL, NULL}};

const dit_family_doc dit_wan21_doc = {"Wan2.1", "", NULL, no_notes};
const dit_family_doc dit_wan22_doc = {
    "Wan2.2", "two experts (T2V-A14B, I2V-A14B) and image conditioning (I2V-A14B, TI2V-5B)",
    wan22_opts, wan22_notes};
