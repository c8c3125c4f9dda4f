/* --preview (see dit_preview.h). */
#include "dit_preview.h"

#include <math.h>
#include <stdlib.h>

#include "dit_latent_rgb.h"
#include "dit_png.h"

#define PREVIEW_COLS      8
#define PREVIEW_MIN_WIDTH 128
#define PREVIEW_MAX_SCALE 8

void dit_preview_layout_of(int64_t f, int64_t h, int64_t w, dit_preview_layout *out)
{
	out->cols = f < PREVIEW_COLS ? f : PREVIEW_COLS;
	out->rows = (f + out->cols - 1) / out->cols;
	int64_t s = (PREVIEW_MIN_WIDTH + w - 1) / w;
	out->scale = s < 1 ? 1 : s > PREVIEW_MAX_SCALE ? PREVIEW_MAX_SCALE : s;
	out->width = (uint32_t)(out->cols * w * out->scale);
	out->height = (uint32_t)(out->rows * h * out->scale);
}

dit_status dit_preview_render(const dit_latent_rgb *map, const float *latent, int64_t c, int64_t f,
                              int64_t h, int64_t w, uint8_t **rgb, dit_preview_layout *lay,
                              dit_error *err)
{
	if (!map || map->channels != c)
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "--preview: no latent-to-RGB map for %lld latent channels",
		                     (long long)c);
	if (f < 1 || h < 1 || w < 1 || f > 4096 || h > 4096 || w > 4096)
		return dit_error_set(err, DIT_EINVAL, "--preview: latent %lldx%lldx%lld",
		                     (long long)f, (long long)h, (long long)w);
	dit_preview_layout_of(f, h, w, lay);
	size_t n = (size_t)lay->width * lay->height * 3;
	uint8_t *img = calloc(n, 1); /* tiles past the last frame stay black */
	if (!img)
		return dit_error_set(err, DIT_ENOMEM, "--preview: out of memory");
	int64_t hw = h * w, fhw = f * hw, s = lay->scale;
	for (int64_t fr = 0; fr < f; fr++) {
		int64_t x0 = fr % lay->cols * w * s, y0 = fr / lay->cols * h * s;
		for (int64_t i = 0; i < h; i++)
			for (int64_t j = 0; j < w; j++) {
				uint8_t px[3];
				for (int k = 0; k < 3; k++) {
					double v = map->bias[k];
					for (int64_t ch = 0; ch < c; ch++)
						v +=
						    (double)latent[ch * fhw + fr * hw + i * w + j] *
						    map->factors[ch][k];
					v = (v + 1.0) / 2.0;
					v = v < 0 ? 0 : v > 1 ? 1 : v;
					px[k] = (uint8_t)lrint(v * 255.0);
				}
				for (int64_t a = 0; a < s; a++)
					for (int64_t b = 0; b < s; b++) {
						uint8_t *o =
						    img + ((size_t)(y0 + i * s + a) * lay->width +
						           (size_t)(x0 + j * s + b)) *
						              3;
						o[0] = px[0];
						o[1] = px[1];
						o[2] = px[2];
					}
			}
	}
	*rgb = img;
	return DIT_OK;
}

dit_status dit_preview_check(const dit_latent_rgb *map, int64_t c, const char *model,
                             const char *family, dit_error *err)
{
	if (!map)
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "--preview: %s has no latent-to-RGB map", family);
	if (map->channels != c)
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "--preview: %s's latent has %lld channels; the preview map "
		                     "of its VAE takes %d",
		                     model, (long long)c, map->channels);
	return DIT_OK;
}

dit_status dit_preview_write_x0(const char *path, const dit_latent_rgb *map, const float *x0,
                                int64_t c, int64_t f, int64_t h, int64_t w, dit_error *err)
{
	uint8_t *rgb;
	dit_preview_layout lay;
	dit_status st = dit_preview_render(map, x0, c, f, h, w, &rgb, &lay, err);
	if (st)
		return st;
	st = dit_png_write(path, rgb, lay.width, lay.height, err);
	free(rgb);
	return st;
}

dit_status dit_preview_write(const char *path, const dit_latent_rgb *map, const float *x,
                             const float *v, double sigma, int64_t c, int64_t f, int64_t h,
                             int64_t w, dit_error *err)
{
	int64_t n = c * f * h * w;
	float *x0 = malloc((size_t)n * sizeof *x0);
	if (!x0)
		return dit_error_set(err, DIT_ENOMEM, "--preview: out of memory");
	for (int64_t i = 0; i < n; i++)
		x0[i] = (float)((double)x[i] - sigma * (double)v[i]);
	dit_status st = dit_preview_write_x0(path, map, x0, c, f, h, w, err);
	free(x0);
	return st;
}
