/* Token positions of LTX-2's official patchifiers (ltx_core/components/patchifiers.py,
 * tools.py), in float64, and an affine modulation without a norm. Plain C. */
#include <math.h>

#include "dit_cpu.h"

void dit_cpu_ltx_video_positions(double *pos, int64_t f, int64_t h, int64_t w,
                                 const int64_t stride[3], double fps)
{
	int64_t L = f * h * w;
	for (int64_t fi = 0; fi < f; fi++)
		for (int64_t hi = 0; hi < h; hi++)
			for (int64_t wi = 0; wi < w; wi++) {
				int64_t l = (fi * h + hi) * w + wi;
				/* [start, end) in pixels; the causal first frame is its own
				 * frame: time + 1 - stride, clamped at 0; then seconds */
				double t0 = (double)(fi * stride[0] + 1 - stride[0]);
				double t1 = (double)((fi + 1) * stride[0] + 1 - stride[0]);
				pos[(0 * L + l) * 2 + 0] = (t0 > 0 ? t0 : 0) / fps;
				pos[(0 * L + l) * 2 + 1] = (t1 > 0 ? t1 : 0) / fps;
				pos[(1 * L + l) * 2 + 0] = (double)(hi * stride[1]);
				pos[(1 * L + l) * 2 + 1] = (double)((hi + 1) * stride[1]);
				pos[(2 * L + l) * 2 + 0] = (double)(wi * stride[2]);
				pos[(2 * L + l) * 2 + 1] = (double)((wi + 1) * stride[2]);
			}
}

void dit_cpu_ltx_audio_positions(double *pos, int64_t t)
{
	/* 16 kHz, hop 160, 4 mel frames per latent frame, causal: the first sample fully
	 * available */
	const double hop = 160.0 / 16000.0;
	for (int64_t i = 0; i < t; i++) {
		int64_t m0 = 4 * i + 1 - 4, m1 = 4 * (i + 1) + 1 - 4;
		pos[i * 2 + 0] = (double)(m0 > 0 ? m0 : 0) * hop;
		pos[i * 2 + 1] = (double)(m1 > 0 ? m1 : 0) * hop;
	}
}

void dit_cpu_modulate(float *y, const float *x, int64_t rows, int64_t dim, const float *shift,
                      const float *scale, const float *vshift, const float *vscale)
{
	for (int64_t j = 0; j < dim; j++) {
		float sh = shift[j] + (vshift ? vshift[j] : 0.0f);
		float sc = scale[j] + (vscale ? vscale[j] : 0.0f);
		for (int64_t r = 0; r < rows; r++)
			y[r * dim + j] = x[r * dim + j] * (1.0f + sc) + sh;
	}
}
