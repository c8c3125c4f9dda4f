/* Latent <-> patch-token reshuffles (pure copies). */
#include "dit_cpu.h"

void dit_cpu_patchify(float *tok, const float *x, int64_t c, int64_t f, int64_t h, int64_t w,
                      int64_t pt, int64_t ph, int64_t pw)
{
	int64_t fp = f / pt, hp = h / ph, wp = w / pw;
	int64_t feat = c * pt * ph * pw; /* row width of tok */
	for (int64_t fi = 0; fi < fp; fi++)
		for (int64_t hi = 0; hi < hp; hi++)
			for (int64_t wi = 0; wi < wp; wi++) {
				float *row =
				    tok + ((fi * hp + hi) * wp + wi) * feat; /* [c, pt, ph, pw] */
				for (int64_t ci = 0; ci < c; ci++)
					for (int64_t a = 0; a < pt; a++)
						for (int64_t b = 0; b < ph; b++) {
							/* x[ci, fi*pt + a, hi*ph + b, wi*pw : wi*pw
							 * + pw] */
							const float *src =
							    x +
							    ((ci * f + fi * pt + a) * h + hi * ph +
							     b) *
							        w +
							    wi * pw;
							float *dst =
							    row + ((ci * pt + a) * ph + b) * pw;
							for (int64_t d = 0; d < pw; d++)
								dst[d] = src[d];
						}
			}
}

void dit_cpu_unpatchify(float *y, const float *tok, int64_t c, int64_t fp, int64_t hp, int64_t wp,
                        int64_t pt, int64_t ph, int64_t pw)
{
	int64_t f = fp * pt, h = hp * ph, w = wp * pw;
	int64_t feat = pt * ph * pw * c; /* row width of tok */
	for (int64_t fi = 0; fi < fp; fi++)
		for (int64_t hi = 0; hi < hp; hi++)
			for (int64_t wi = 0; wi < wp; wi++) {
				const float *row =
				    tok + ((fi * hp + hi) * wp + wi) * feat; /* [pt, ph, pw, c] */
				for (int64_t a = 0; a < pt; a++)
					for (int64_t b = 0; b < ph; b++)
						for (int64_t d = 0; d < pw; d++) {
							const float *src =
							    row + ((a * ph + b) * pw + d) * c;
							/* y[:, fi*pt + a, hi*ph + b, wi*pw + d] */
							float *dst =
							    y +
							    ((fi * pt + a) * h + hi * ph + b) * w +
							    wi * pw + d;
							for (int64_t ci = 0; ci < c; ci++)
								dst[ci * f * h * w] = src[ci];
						}
			}
}

void dit_cpu_unpatchify_c_outer(float *y, const float *tok, int64_t c, int64_t fp, int64_t hp,
                                int64_t wp, int64_t pt, int64_t ph, int64_t pw)
{
	int64_t f = fp * pt, h = hp * ph, w = wp * pw, P = pt * ph * pw;
	for (int64_t fi = 0; fi < fp; fi++)
		for (int64_t hi = 0; hi < hp; hi++)
			for (int64_t wi = 0; wi < wp; wi++) {
				/* [c, pt, ph, pw] */
				const float *row = tok + ((fi * hp + hi) * wp + wi) * c * P;
				for (int64_t ci = 0; ci < c; ci++)
					for (int64_t a = 0; a < pt; a++)
						for (int64_t b = 0; b < ph; b++)
							for (int64_t d = 0; d < pw; d++)
								y[((ci * f + fi * pt + a) * h +
								   hi * ph + b) *
								      w +
								  wi * pw + d] =
								    row[((ci * pt + a) * ph + b) *
								            pw +
								        d];
			}
}

void dit_cpu_row_mean(float *out, const float *x, int64_t ld, int64_t rows, int64_t dim)
{
	for (int64_t j = 0; j < dim; j++) {
		double s = 0.0;
		for (int64_t r = 0; r < rows; r++)
			s += x[r * ld + j];
		out[j] = (float)(s / (double)rows);
	}
}
