/* The per-tensor scales of fp8 safetensors files, as ComfyUI's "scaled fp8"
 * checkpoints store them: beside "<module>.weight" (F8_E4M3 or F8_E5M2) a one-element
 * float tensor "<module>.scale_weight"; the weight is the stored value times the scale,
 * in fp32. An fp8 weight without a scale has scale 1 (ComfyUI's default). The marker
 * tensor "scaled_fp8" (after the model's prefix) names the fp8 format; the dtypes of
 * the weights themselves say it here, so it is accepted and never read. */
#define _POSIX_C_SOURCE 200809L

#include "dit_st_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define SC_SUFFIX   ".scale_weight"
#define SC_WEIGHT   ".weight"
#define SC_MAX_NAME 1024

static int sc_is_fp8(dit_dtype dt)
{
	return dt == DIT_DTYPE_F8_E4M3 || dt == DIT_DTYPE_F8_E5M2;
}

static int sc_is_float(dit_dtype dt)
{
	return dt == DIT_DTYPE_F32 || dt == DIT_DTYPE_F16 || dt == DIT_DTYPE_BF16 ||
	       dt == DIT_DTYPE_F64;
}

/* The scale tensor s of the weight named w: checked, read, and set on the weight. */
static dit_status sc_apply(dit_st_file *f, const dit_st_tensor *s, const char *w, dit_error *err)
{
	char q1[ST_QUOTE_BUF], q2[ST_QUOTE_BUF];
	const char *qs = st_quote(q1, sizeof q1, s->name, strlen(s->name));
	dit_st_tensor *t = (dit_st_tensor *)dit_st_find(f, w);
	if (!t)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: a scale for tensor '%s', which the file does not hold "
		                     "(tensor '%s')",
		                     f->label, st_quote(q2, sizeof q2, w, strlen(w)), qs);
	if (!sc_is_fp8(t->dtype))
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: a scale for tensor '%s', which is %s, not F8_E4M3 or "
		                     "F8_E5M2 (tensor '%s')",
		                     f->label, st_quote(q2, sizeof q2, w, strlen(w)),
		                     dit_dtype_name(t->dtype), qs);
	if (s->numel != 1 || !sc_is_float(s->dtype))
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: the scale is not one float element (%lld elements of "
		                     "%s) (tensor '%s')",
		                     f->label, (long long)s->numel, dit_dtype_name(s->dtype), qs);
	float v = 0.0f;
	dit_status st = dit_st_read_f32(f, s, &v, err);
	if (st)
		return st;
	if (!isfinite(v))
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: the scale %g is not finite (tensor '%s')", f->label,
		                     (double)v, qs);
	t->scale = v;
	return DIT_OK;
}

dit_status dit_st_apply_scales(dit_st_file *f, dit_error *err)
{
	size_t sl = strlen(SC_SUFFIX), wl = strlen(SC_WEIGHT);
	for (size_t i = 0; i < f->ntensors; i++) {
		const dit_st_tensor *s = &f->tensors[i];
		size_t n = strlen(s->name);
		if (n <= sl || n - sl > SC_MAX_NAME || strcmp(s->name + n - sl, SC_SUFFIX) != 0)
			continue;
		char w[SC_MAX_NAME + 16];
		memcpy(w, s->name, n - sl);
		memcpy(w + n - sl, SC_WEIGHT, wl + 1);
		dit_status st = sc_apply(f, s, w, err);
		if (st)
			return st;
	}
	return DIT_OK;
}
