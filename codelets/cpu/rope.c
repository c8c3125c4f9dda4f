/* 3D rotary position embedding over a (frame, row, column) latent grid, float64
 * table and float64 rotation, and LTX-2's "split" RoPE (its per-head table from
 * token position bounds, and the rotation of the pairs (j, j + head_dim/2)), whose
 * rotation also takes Cosmos-Predict2.5's table; the rotations here are the scalar
 * path (vector ones: vec_rope.c). */
#include <math.h>
#include <string.h>

#include "dit_cpu_isa_impl.h"

#define DIT_ROPE_PI 3.14159265358979323846

/* Fills the (cos, sin) of pairs [j0, j0 + n) of one token row cs_l [head_dim/2, 2]
 * for axis position pos on an axis of n pairs (real size 2n). */
static void dit_rope_axis_fill(double *cs_l, int64_t j0, int64_t n, int64_t pos, double theta)
{
	for (int64_t i = 0; i < n; i++) {
		double freq = 1.0 / pow(theta, (double)(2 * i) / (double)(2 * n));
		double ang = (double)pos * freq;
		cs_l[2 * (j0 + i)] = cos(ang);
		cs_l[2 * (j0 + i) + 1] = sin(ang);
	}
}

void dit_cpu_rope_axes_wan(int64_t head_dim, int64_t axes[3])
{
	int64_t c = head_dim / 2; /* complex pairs per head */
	axes[1] = axes[2] = c / 3;
	axes[0] = c - 2 * axes[1];
}

void dit_cpu_rope_table(double *cs, int64_t f, int64_t h, int64_t w, int64_t head_dim, double theta,
                        const int64_t axes[3])
{
	int64_t t = axes[0], nh = axes[1], nw = axes[2]; /* pairs of the frame, row, column */
	int64_t c = head_dim / 2;
	for (int64_t fi = 0; fi < f; fi++)
		for (int64_t hi = 0; hi < h; hi++)
			for (int64_t wi = 0; wi < w; wi++) {
				int64_t l = (fi * h + hi) * w + wi;
				double *cs_l = cs + l * head_dim; /* [c, 2] */
				dit_rope_axis_fill(cs_l, 0, t, fi, theta);
				dit_rope_axis_fill(cs_l, t, nh, hi, theta);
				dit_rope_axis_fill(cs_l, t + nh, nw, wi, theta);
				for (int64_t j = t + nh + nw; j < c; j++) { /* axes short of c */
					cs_l[2 * j] = 1.0;
					cs_l[2 * j + 1] = 0.0;
				}
			}
}

void dit_rope_apply_scalar(float *x, int64_t ldx, int64_t rows, int64_t heads, int64_t head_dim,
                           const double *cs)
{
	int64_t c = head_dim / 2;
	for (int64_t r = 0; r < rows; r++) {
		const double *cs_l = cs + r * head_dim; /* [c, 2] */
		for (int64_t hd = 0; hd < heads; hd++) {
			float *xh = x + r * ldx + hd * head_dim; /* [c, 2] */
			for (int64_t j = 0; j < c; j++) {
				double a = xh[2 * j], b = xh[2 * j + 1];
				double co = cs_l[2 * j], si = cs_l[2 * j + 1];
				xh[2 * j] = (float)(a * co - b * si);
				xh[2 * j + 1] = (float)(a * si + b * co);
			}
		}
	}
}

void dit_rope_split_apply_scalar(float *x, int64_t ldx, int64_t rows, int64_t heads,
                                 int64_t head_dim, const double *cs)
{
	int64_t c = head_dim / 2;
	for (int64_t r = 0; r < rows; r++)
		for (int64_t h = 0; h < heads; h++) {
			const double *cs_h = cs + (r * heads + h) * c * 2;    /* [c, 2] */
			float *x1 = x + r * ldx + h * head_dim, *x2 = x1 + c; /* [c] each */
			for (int64_t j = 0; j < c; j++) {
				double a = x1[j], b = x2[j];
				double co = cs_h[2 * j], si = cs_h[2 * j + 1];
				x1[j] = (float)(a * co - b * si);
				x2[j] = (float)(b * co + a * si);
			}
		}
}

void dit_cpu_rope_split_table(double *cs, const double *pos, int64_t L, int naxes,
                              const double *max_pos, double theta, int64_t inner_dim, int64_t heads)
{
	int64_t half = inner_dim / 2;                        /* pairs of all heads together */
	int64_t n = naxes > 0 ? inner_dim / (2 * naxes) : 0; /* frequencies per axis */
	int64_t pad = half - n * naxes;
	(void)heads; /* the padded pairs are [heads, hd/2] in order: cs_l [half, 2] */
	for (int64_t l = 0; l < L; l++) {
		double *cs_l = cs + l * inner_dim; /* [half, 2] */
		for (int64_t p = 0; p < pad; p++) {
			cs_l[2 * p] = 1.0;
			cs_l[2 * p + 1] = 0.0;
		}
		/* theta^linspace(0, 1, n)[k] * pi/2, linspace as numpy's: k * step, the
		 * last exactly 1 */
		double step = n > 1 ? 1.0 / (double)(n - 1) : 0.0;
		for (int64_t k = 0; k < n; k++) {
			double e = k == n - 1 && n > 1 ? 1.0 : (double)k * step;
			double fk = pow(theta, e) * DIT_ROPE_PI / 2.0;
			for (int a = 0; a < naxes; a++) {
				const double *pa =
				    pos + ((int64_t)a * L + l) * 2; /* [start, end) */
				double mid = (pa[0] + pa[1]) / 2.0;
				double ang = fk * (2.0 * (mid / max_pos[a]) - 1.0);
				int64_t p = pad + k * naxes + a;
				cs_l[2 * p] = cos(ang);
				cs_l[2 * p + 1] = sin(ang);
			}
		}
	}
}

void dit_cpu_rope_cosmos_table(double *cs, int64_t T, int64_t H, int64_t W, int64_t head_dim,
                               int64_t heads, const double ratio[3])
{
	int64_t half = head_dim / 2;                /* pairs (j, j + half) of a head */
	int64_t dh = head_dim / 6 * 2;              /* real sizes of the row and column axes */
	int64_t d[3] = {head_dim - 2 * dh, dh, dh}; /* frame, row, column */
	double theta[3];
	for (int a = 0; a < 3; a++) /* NTK-scaled base, as the official h_ntk_factor */
		theta[a] = 10000.0 * pow(ratio[a], (double)d[a] / (double)(d[a] - 2));
	for (int64_t t = 0; t < T; t++)
		for (int64_t h = 0; h < H; h++)
			for (int64_t w = 0; w < W; w++) {
				int64_t l = (t * H + h) * W + w, pos[3] = {t, h, w}, j = 0;
				double *cs_l = cs + l * heads * half * 2; /* [heads, half, 2] */
				for (int a = 0; a < 3; a++)
					for (int64_t i = 0; i < d[a] / 2 && j < half; i++, j++) {
						/* 1 / theta^(2i / d_a), the reference's order */
						double freq = 1.0 / pow(theta[a], (double)(2 * i) /
						                                      (double)d[a]);
						double ang = (double)pos[a] * freq;
						cs_l[2 * j] = cos(ang);
						cs_l[2 * j + 1] = sin(ang);
					}
				for (; j < half; j++) { /* none for an even head_dim */
					cs_l[2 * j] = 1.0;
					cs_l[2 * j + 1] = 0.0;
				}
				for (int64_t hh = 1; hh < heads; hh++) /* the same for every head */
					memcpy(cs_l + hh * half * 2, cs_l,
					       (size_t)half * 2 * sizeof *cs_l);
			}
}
