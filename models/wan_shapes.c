/* A Wan checkpoint without config.json (a ComfyUI single file, a GGUF file): the
 * configuration read from the tensor shapes as ComfyUI's model_detection.py reads it
 * (the width from head.modulation, blocks counted, the FFN width, channels, text and
 * frequency widths from their matrices, heads of 128), the model type from the
 * channels. The names are the official ones, bare or after ComfyUI's prefix. An
 * expert of Wan2.2 A14B (one of the two files of a pair, src/checkpoint/dit_ck_pair.c) reads the
 * same way, its channels telling T2V (16 in) from I2V (36 in). */
#include <stdio.h>
#include <string.h>

#include "dit_wan.h"

#define WAN_HEAD_DIM   128 /* every released Wan: 1.3B 12 x 128, 5B 24 x 128, 14B 40 x 128 */
#define WAN_MAX_BLOCKS 4096

typedef int (*wan_shape_fn)(void *arg, const char *name, int64_t *dims);

/* The shape of name after prefix pre (its ndim; 0 when absent). */
static int wan_shape(wan_shape_fn shape, void *arg, const char *pre, const char *name, int64_t *d)
{
	char n[160];
	snprintf(n, sizeof n, "%s%s", pre, name);
	return shape(arg, n, d);
}

/* The sizes (hp the preset's, for the keys no tensor tells: text_len, eps); 0 with
 * why when a tensor is missing or the shapes disagree. */
static int wan_sizes(wan_shape_fn shape, void *arg, const char *pre, dit_hparams *hp, char *why,
                     size_t len)
{
	int64_t d[8];
#define WAN_NEED(name, nd)                                                                         \
	do {                                                                                       \
		if (wan_shape(shape, arg, pre, name, d) != (nd)) {                                 \
			snprintf(why, len,                                                         \
			         "tensor '%s%s' is missing or not %d-D, so the shapes "            \
			         "do not give the configuration (give a config.json)",             \
			         pre, name, nd);                                                   \
			return 0;                                                                  \
		}                                                                                  \
	} while (0)
	WAN_NEED("head.modulation", 3); /* [1, 2, D] */
	hp->dim = d[2];
	WAN_NEED("patch_embedding.weight", 5); /* [D, in, pt, ph, pw] */
	hp->in_dim = d[1];
	for (int i = 0; i < 3; i++)
		hp->patch[i] = d[2 + i];
	int64_t pv = d[2] * d[3] * d[4];
	WAN_NEED("head.head.weight", 2); /* [out x pt ph pw, D] */
	if (pv < 1 || d[0] % pv) {
		snprintf(why, len,
		         "tensor '%shead.head.weight' has %lld rows, not a multiple of "
		         "the patch's %lld cells",
		         pre, (long long)d[0], (long long)pv);
		return 0;
	}
	hp->out_dim = d[0] / pv;
	WAN_NEED("blocks.0.ffn.0.weight", 2); /* [F, D] */
	hp->ffn_dim = d[0];
	WAN_NEED("text_embedding.0.weight", 2); /* [D, text_dim] */
	hp->text_dim = d[1];
	WAN_NEED("time_embedding.0.weight", 2); /* [D, freq_dim] */
	hp->freq_dim = d[1];
#undef WAN_NEED
	int64_t nb = 0;
	for (; nb < WAN_MAX_BLOCKS; nb++) { /* blocks.N. up to the first one missing */
		char b[64];
		snprintf(b, sizeof b, "blocks.%lld.self_attn.q.weight", (long long)nb);
		if (wan_shape(shape, arg, pre, b, d) != 2)
			break;
	}
	hp->layers[0] = nb;
	if (hp->dim < WAN_HEAD_DIM || hp->dim % WAN_HEAD_DIM) {
		snprintf(why, len,
		         "its width %lld is not a multiple of %d, so the head count (width / %d, "
		         "as the released models) is not told by the shapes (give a config.json)",
		         (long long)hp->dim, WAN_HEAD_DIM, WAN_HEAD_DIM);
		return 0;
	}
	hp->num_heads = hp->dim / WAN_HEAD_DIM;
	return 1;
}

/* Tensors of Wan models ditstar does not run, as ComfyUI's model_detection.py tells
 * them (each would otherwise pass for text-to-video, its extra tensors unread). */
static const struct {
	const char *tensor, *model;
} wan_other[] = {
    {"vace_patch_embedding.weight", "Wan VACE"},
    {"control_adapter.conv.weight", "Wan Fun camera control"},
    {"casual_audio_encoder.encoder.final_linear.weight", "Wan2.2 S2V"},
    {"audio_proj.audio_proj_glob_1.layer.bias", "HuMo"},
    {"face_adapter.fuser_blocks.0.k_norm.weight", "Wan2.2 Animate"},
    {"ref_conv.weight", "Wan Fun with a reference image"},
};

/* The sizes and the model type; expert: the file is one expert of a two-expert
 * model (more channels in than out is then I2V-A14B, 48 channels are refused). */
static int wan_read(wan_shape_fn shape, void *arg, dit_hparams *hp, int expert, char *why,
                    size_t len)
{
	static const char *const pre[] = {"", "model.diffusion_model."};
	int64_t d[8];
	int k = wan_shape(shape, arg, pre[0], "head.modulation", d) ? 0 : 1;
	if (!wan_sizes(shape, arg, pre[k], hp, why, len))
		return 0;
	for (size_t i = 0; i < sizeof wan_other / sizeof wan_other[0]; i++)
		if (wan_shape(shape, arg, pre[k], wan_other[i].tensor, d) > 0) {
			snprintf(why, len,
			         "tensor '%s%s' means a %s model, which ditstar does not run",
			         pre[k], wan_other[i].tensor, wan_other[i].model);
			return 0;
		}
	int clip = wan_shape(shape, arg, pre[k], "img_emb.proj.0.weight", d) > 0;
	/* 48 latent channels: TI2V-5B (Wan2.2's VAE); more in than out without a CLIP
	 * branch: an I2V-A14B expert; with one, Wan2.1 I2V (FLF2V with the images'
	 * positions, img_emb.emb_pos [1, 514, 1280]) */
	const char *mt = "t2v";
	if (clip && !expert) {
		hp->image_dim = d[0];
		hp->image_tokens = DIT_WAN_CLIP_TOKENS;
		if (wan_shape(shape, arg, pre[k], "img_emb.emb_pos", d) == 3) {
			hp->image_tokens = d[1];
			hp->image_pos = 1;
		}
	}
	if (hp->in_dim == 48 && hp->out_dim == 48) {
		mt = "ti2v";
		if (expert) {
			snprintf(why, len,
			         "its 48 channels in and out make it Wan2.2 TI2V-5B, a model of "
			         "one checkpoint, not an expert of Wan2.2 A14B");
			return 0;
		}
	} else if (hp->in_dim > hp->out_dim && (expert || clip)) {
		mt = hp->image_pos ? "flf2v" : "i2v";
	} else if (hp->in_dim > hp->out_dim && !clip) {
		snprintf(why, len,
		         "its %lld input channels for %lld output ones and no CLIP branch make it "
		         "one expert of Wan2.2 I2V-A14B (two experts): give a folder of the two "
		         "experts' files (high_noise and low_noise in their names), or one with "
		         "high_noise_model/ and low_noise_model/, each holding its file and a "
		         "config.json",
		         (long long)hp->in_dim, (long long)hp->out_dim);
		return 0;
	}
	snprintf(hp->model_type, sizeof hp->model_type, "%s", mt);
	return 1;
}

int dit_wan_from_shapes(int (*shape)(void *arg, const char *name, int64_t *dims), void *arg,
                        dit_hparams *hp, char *why, size_t len)
{
	return wan_read(shape, arg, hp, 0, why, len);
}

int dit_wan_expert_from_shapes(int (*shape)(void *arg, const char *name, int64_t *dims), void *arg,
                               dit_hparams *hp, char *why, size_t len)
{
	return wan_read(shape, arg, hp, 1, why, len);
}
