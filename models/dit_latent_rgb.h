/* A VAE's latent-to-RGB preview map (models/latent_rgb.c): rgb[c] = bias[c] +
 * sum_k latent[k] * factors[k][c], for a latent of `channels` channels. */
#ifndef DIT_LATENT_RGB_H
#define DIT_LATENT_RGB_H

typedef struct dit_latent_rgb {
	int channels;
	const float (*factors)[3]; /* [channels][3] */
	float bias[3];
} dit_latent_rgb;

extern const dit_latent_rgb dit_latent_rgb_wan21;   /* Wan2.1's VAE (16 channels) */
extern const dit_latent_rgb dit_latent_rgb_wan22;   /* Wan2.2's TI2V-5B VAE (48) */
extern const dit_latent_rgb dit_latent_rgb_hunyuan; /* HunyuanVideo's VAE (16) */
extern const dit_latent_rgb dit_latent_rgb_ltxv;    /* LTX's video VAE (128) */

#endif
