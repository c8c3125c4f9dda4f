/* The per-tensor scales of fp8 safetensors files, as ComfyUI writes them: beside
 * "<module>.weight" (F8_E4M3 or F8_E5M2) a one-element float tensor, "<module>.scale_weight"
 * (its "scaled fp8" checkpoints, comfy/ops.py) or "<module>.weight_scale" (its mixed
 * precision files, which mark each quantised layer with "<module>.comfy_quant", the
 * bytes of a JSON object {"format": "float8_e4m3fn", ...}); the weight is the stored
 * value times the scale, in fp32. An fp8 weight without a scale has scale 1 (ComfyUI's
 * default). The marker tensor "scaled_fp8" (after the model's prefix) names the fp8
 * format; the weights' dtypes say it here, so it is accepted and never read. */
#define _POSIX_C_SOURCE 200809L

#include "dit_st_priv.h"

#include "dit_io.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <json-c/json.h>

#define SC_MAX_NAME  1024
#define SC_MAX_QUANT 4096 /* bytes of a comfy_quant */

static const char *const sc_suffix[] = {".scale_weight", ".weight_scale"};

static int sc_is_fp8(dit_dtype dt)
{
	return dt == DIT_DTYPE_F8_E4M3 || dt == DIT_DTYPE_F8_E5M2;
}

static int sc_is_float(dit_dtype dt)
{
	return dt == DIT_DTYPE_F32 || dt == DIT_DTYPE_F16 || dt == DIT_DTYPE_BF16 ||
	       dt == DIT_DTYPE_F64;
}

/* name with its suffix sfx (of length sl) replaced by rep into buf; 0 when name does not
 * end so or is too long. */
static int sc_swap(const char *name, const char *sfx, const char *rep, char *buf, size_t cap)
{
	size_t n = strlen(name), sl = strlen(sfx), rl = strlen(rep);
	if (n <= sl || strcmp(name + n - sl, sfx) != 0 || n - sl + rl + 1 > cap)
		return 0;
	memcpy(buf, name, n - sl);
	memcpy(buf + n - sl, rep, rl + 1);
	return 1;
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

/* A comfy_quant tensor c: the layer's format must be the fp8 its weight w is stored in. */
static dit_status sc_quant(dit_st_file *f, const dit_st_tensor *c, const char *w, dit_error *err)
{
	char q1[ST_QUOTE_BUF], q2[ST_QUOTE_BUF];
	const char *qc = st_quote(q1, sizeof q1, c->name, strlen(c->name));
	if (c->dtype != DIT_DTYPE_U8 || c->numel < 2 || c->numel > SC_MAX_QUANT)
		return dit_error_set(
		    err, DIT_EFORMAT,
		    "%s: a comfy_quant that is not 2 to %d bytes of U8 (tensor '%s')", f->label,
		    SC_MAX_QUANT, qc);
	float v[SC_MAX_QUANT];
	char text[SC_MAX_QUANT];
	dit_status st = dit_st_read_f32(f, c, v, err);
	for (int64_t i = 0; !st && i < c->numel; i++)
		text[i] = (char)(unsigned char)v[i];
	struct json_object *root = NULL, *jf = NULL;
	if (!st)
		st = dit_io_parse_json_object(f->label, text, (size_t)c->numel, &root, err);
	const char *fmt = NULL;
	if (!st && json_object_object_get_ex(root, "format", &jf) &&
	    json_object_is_type(jf, json_type_string))
		fmt = json_object_get_string(jf);
	const dit_st_tensor *t = dit_st_find(f, w);
	dit_dtype want = fmt && strcmp(fmt, "float8_e4m3fn") == 0 ? DIT_DTYPE_F8_E4M3
	                 : fmt && strcmp(fmt, "float8_e5m2") == 0 ? DIT_DTYPE_F8_E5M2
	                                                          : DIT_DTYPE_COUNT;
	if (!st && !fmt)
		st = dit_error_set(err, DIT_EFORMAT,
		                   "%s: a comfy_quant without a 'format' (tensor '%s')", f->label,
		                   qc);
	else if (!st && want == DIT_DTYPE_COUNT)
		st = dit_error_set(err, DIT_EUNSUPPORTED,
		                   "%s: layer quantised as '%s'; ditstar reads float8_e4m3fn and "
		                   "float8_e5m2 layers (tensor '%s')",
		                   f->label, st_quote(q2, sizeof q2, fmt, strlen(fmt)), qc);
	else if (!st && (!t || t->dtype != want))
		st = dit_error_set(err, DIT_EFORMAT,
		                   "%s: comfy_quant says %s, but tensor '%s' is %s (tensor '%s')",
		                   f->label, fmt, st_quote(q2, sizeof q2, w, strlen(w)),
		                   t ? dit_dtype_name(t->dtype) : "missing", qc);
	json_object_put(root);
	return st;
}

dit_status dit_st_apply_scales(dit_st_file *f, dit_error *err)
{
	char w[SC_MAX_NAME + 32], other[SC_MAX_NAME + 32], q[ST_QUOTE_BUF];
	for (size_t i = 0; i < f->ntensors; i++) {
		const dit_st_tensor *s = &f->tensors[i];
		dit_status st = DIT_OK;
		if (sc_swap(s->name, ".comfy_quant", ".weight", w, sizeof w))
			st = sc_quant(f, s, w, err);
		for (int k = 0; k < 2 && !st; k++) {
			if (!sc_swap(s->name, sc_suffix[k], ".weight", w, sizeof w))
				continue;
			if (k == 1 &&
			    sc_swap(s->name, sc_suffix[1], sc_suffix[0], other, sizeof other) &&
			    dit_st_find(f, other))
				return dit_error_set(
				    err, DIT_EFORMAT,
				    "%s: two scales for tensor '%s' (scale_weight and "
				    "weight_scale)",
				    f->label, st_quote(q, sizeof q, w, strlen(w)));
			st = sc_apply(f, s, w, err);
		}
		if (st)
			return st;
	}
	return DIT_OK;
}
