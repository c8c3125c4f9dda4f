/* --preview FILE.png: the sample's current x0 estimate as a picture, written after
 * every step through the family's fixed latent-to-RGB map (dit_latent_rgb.h), no VAE.
 * Each latent frame is one tile at the latent's resolution, magnified by a whole
 * factor to at least 128 pixels wide (at most 8x); tiles go left to right, 8 to a row,
 * in frame order. */
#ifndef DIT_PREVIEW_H
#define DIT_PREVIEW_H

#include <stdint.h>

#include "dit_error.h"

struct dit_latent_rgb;

/* The picture's size and tiling for a latent [.., f, h, w]. */
typedef struct dit_preview_layout {
	int64_t cols, rows, scale;
	uint32_t width, height;
} dit_preview_layout;

void dit_preview_layout_of(int64_t f, int64_t h, int64_t w, dit_preview_layout *out);

/* The picture of latent [c, f, h, w] as rgb [height][width][3] (malloc'd); c must be
 * the map's channels. */
dit_status dit_preview_render(const struct dit_latent_rgb *map, const float *latent, int64_t c,
                              int64_t f, int64_t h, int64_t w, uint8_t **rgb,
                              dit_preview_layout *lay, dit_error *err);

/* Before a run: refuses (DIT_EUNSUPPORTED) a family without a map (map NULL, family
 * its name) or a latent of c channels the map does not take (model: the run's model). */
dit_status dit_preview_check(const struct dit_latent_rgb *map, int64_t c, const char *model,
                             const char *family, dit_error *err);

/* Renders x0 [c, f, h, w] and writes it to path as a PNG, atomically. */
dit_status dit_preview_write_x0(const char *path, const struct dit_latent_rgb *map, const float *x0,
                                int64_t c, int64_t f, int64_t h, int64_t w, dit_error *err);

/* Renders x0 = x - sigma * v (the flow models' x0 estimate after a step: x the sample
 * after it, v the velocity of the step, sigma the noise level x is at) and writes it
 * to path as a PNG, atomically. */
dit_status dit_preview_write(const char *path, const struct dit_latent_rgb *map, const float *x,
                             const float *v, double sigma, int64_t c, int64_t f, int64_t h,
                             int64_t w, dit_error *err);

#endif
