/* The Wan2.1 config.json: load, check, save. */
#define _POSIX_C_SOURCE 200809L

#include "dit_wan.h"
#include "dit_io.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

/* A config.json is a few hundred bytes; anything this large is something else. */
#define CFG_MAX_FILE ((size_t)1 << 20)
/* Upper bounds that keep products of sizes far from int64 overflow. */
#define CFG_MAX_SIZE  ((int64_t)1 << 20)
#define CFG_MAX_PATCH ((int64_t)256)
/* Integral doubles are accepted as integers up to 2^53, where they stay exact. */
#define CFG_MAX_EXACT 9007199254740992.0

/* Same as dit_wan_config_load, of config.json text already in memory (len bytes);
 * name stands for the file in messages. Used where the text does not come from a
 * file of its own (and by the parser's fuzz target). */
dit_status dit_wan_config_parse_text(dit_wan_config *cfg, const char *name, const char *text,
                                     size_t len, dit_error *err);

static const char *cfg_name(const char *path)
{
	return path ? path : "config";
}

/* An integer value: a JSON integer, or a double holding an integral value. */
static dit_status cfg_to_int(struct json_object *v, const char *path, const char *what,
                             int64_t *out, dit_error *err)
{
	if (json_object_is_type(v, json_type_int)) {
		int64_t x = json_object_get_int64(v);
		if (x == INT64_MAX || x == INT64_MIN) /* json-c clamps out-of-range values */
			return dit_error_set(err, DIT_EFORMAT, "%s: %s is out of range", path,
			                     what);
		*out = x;
		return DIT_OK;
	}
	if (json_object_is_type(v, json_type_double)) {
		double d = json_object_get_double(v);
		if (d > -CFG_MAX_EXACT && d < CFG_MAX_EXACT && d == (double)(int64_t)d) {
			*out = (int64_t)d;
			return DIT_OK;
		}
		return dit_error_set(err, DIT_EFORMAT, "%s: %s must be an integer (got %.17g)",
		                     path, what, d);
	}
	return dit_error_set(err, DIT_EFORMAT, "%s: %s must be an integer (got %s)", path, what,
	                     json_type_to_name(json_object_get_type(v)));
}

/* Reads key as an integer; an absent (or null) key is an error when def < 0 and
 * yields def otherwise. */
static dit_status cfg_get_int(struct json_object *root, const char *path, const char *key,
                              int64_t def, int64_t *out, dit_error *err)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(root, key, &v) || !v) {
		if (def < 0)
			return dit_error_set(err, DIT_EFORMAT, "%s: key '%s' missing", path, key);
		*out = def;
		return DIT_OK;
	}
	char what[64];
	snprintf(what, sizeof what, "key '%s'", key);
	return cfg_to_int(v, path, what, out, err);
}

/* An optional key: absent or null is fine, otherwise it must have type want. */
static dit_status cfg_check_type(struct json_object *root, const char *path, const char *key,
                                 json_type want, dit_error *err)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(root, key, &v) || !v || json_object_is_type(v, want))
		return DIT_OK;
	return dit_error_set(err, DIT_EFORMAT, "%s: key '%s' must be a %s (got %s)", path, key,
	                     json_type_to_name(want), json_type_to_name(json_object_get_type(v)));
}

/* Keys the runtime does not use but that official files carry: checked for type. */
static dit_status cfg_check_optional(struct json_object *root, const char *path, dit_error *err)
{
	static const struct {
		const char *key;
		json_type type;
	} opt[] = {
	    {"_class_name", json_type_string}, {"_diffusers_version", json_type_string},
	    {"qk_norm", json_type_boolean},    {"cross_attn_norm", json_type_boolean},
	    {"window_size", json_type_array},
	};
	for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++) {
		dit_status st = cfg_check_type(root, path, opt[i].key, opt[i].type, err);
		if (st != DIT_OK)
			return st;
	}
	struct json_object *v = NULL;
	if (json_object_object_get_ex(root, "window_size", &v) && v) {
		if (json_object_array_length(v) != 2)
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: key 'window_size' must be an array of 2 integers",
			                     path);
		for (size_t i = 0; i < 2; i++) {
			char what[32];
			int64_t w = 0;
			snprintf(what, sizeof what, "key 'window_size'[%zu]", i);
			dit_status st =
			    cfg_to_int(json_object_array_get_idx(v, i), path, what, &w, err);
			if (st != DIT_OK)
				return st;
			if (w < -1 || w > CFG_MAX_SIZE)
				return dit_error_set(
				    err, DIT_EFORMAT, "%s: %s must be -1 or in 0..%lld (got %lld)",
				    path, what, (long long)CFG_MAX_SIZE, (long long)w);
		}
	}
	return DIT_OK;
}

/* Fills *cfg from a parsed config object; *cfg is left alone on failure. */
static dit_status cfg_from_object(dit_wan_config *cfg, const char *path, struct json_object *root,
                                  dit_error *err)
{
	struct json_object *v = NULL;
	dit_status st = cfg_check_optional(root, path, err);
	if (st != DIT_OK)
		return st;

	dit_wan_config c;
	memset(&c, 0, sizeof c);
	static const struct {
		const char *key;
		size_t off;
		int64_t def;
	} ints[] = {
	    {"dim", offsetof(dit_wan_config, dim), -1},
	    {"ffn_dim", offsetof(dit_wan_config, ffn_dim), -1},
	    {"freq_dim", offsetof(dit_wan_config, freq_dim), -1},
	    {"in_dim", offsetof(dit_wan_config, in_dim), -1},
	    {"out_dim", offsetof(dit_wan_config, out_dim), -1},
	    {"num_heads", offsetof(dit_wan_config, num_heads), -1},
	    {"num_layers", offsetof(dit_wan_config, num_layers), -1},
	    {"text_len", offsetof(dit_wan_config, text_len), -1},
	    {"text_dim", offsetof(dit_wan_config, text_dim), 4096},
	};

	if (!json_object_object_get_ex(root, "model_type", &v) || !v) {
		st = dit_error_set(err, DIT_EFORMAT, "%s: key 'model_type' missing", path);
		goto out;
	}
	if (!json_object_is_type(v, json_type_string)) {
		st = dit_error_set(err, DIT_EFORMAT,
		                   "%s: key 'model_type' must be a string (got %s)", path,
		                   json_type_to_name(json_object_get_type(v)));
		goto out;
	}
	const char *mt = json_object_get_string(v);
	size_t mtlen = (size_t)json_object_get_string_len(v);
	if (mtlen >= sizeof c.model_type || strlen(mt) != mtlen) {
		st = dit_error_set(err, DIT_EUNSUPPORTED,
		                   "%s: model_type is not supported (t2v, i2v, ti2v are)", path);
		goto out;
	}
	memcpy(c.model_type, mt, mtlen + 1);

	for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
		int64_t *dst = (int64_t *)((char *)&c + ints[i].off);
		st = cfg_get_int(root, path, ints[i].key, ints[i].def, dst, err);
		if (st != DIT_OK)
			goto out;
	}

	if (!json_object_object_get_ex(root, "eps", &v) || !v) {
		st = dit_error_set(err, DIT_EFORMAT, "%s: key 'eps' missing", path);
		goto out;
	}
	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)) {
		st = dit_error_set(err, DIT_EFORMAT, "%s: key 'eps' must be a number (got %s)",
		                   path, json_type_to_name(json_object_get_type(v)));
		goto out;
	}
	c.eps = json_object_get_double(v);

	c.patch[0] = 1;
	c.patch[1] = 2;
	c.patch[2] = 2;
	if (json_object_object_get_ex(root, "patch_size", &v) && v) {
		if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) != 3) {
			st = dit_error_set(err, DIT_EFORMAT,
			                   "%s: key 'patch_size' must be an array of 3 integers",
			                   path);
			goto out;
		}
		for (size_t i = 0; i < 3; i++) {
			char what[32];
			snprintf(what, sizeof what, "key 'patch_size'[%zu]", i);
			st = cfg_to_int(json_object_array_get_idx(v, i), path, what, &c.patch[i],
			                err);
			if (st != DIT_OK)
				goto out;
		}
	}

	st = dit_wan_config_check(&c, path, err);
	if (st == DIT_OK)
		*cfg = c;
out:
	return st;
}

dit_status dit_wan_config_load(dit_wan_config *cfg, const char *path, dit_error *err)
{
	if (!cfg || !path)
		return dit_error_set(err, DIT_EINVAL, "dit_wan_config_load: NULL argument");
	struct json_object *root = NULL;
	dit_status st = dit_io_read_json_object(path, CFG_MAX_FILE, &root, err);
	if (st != DIT_OK)
		return st;
	st = cfg_from_object(cfg, path, root, err);
	json_object_put(root);
	return st;
}

dit_status dit_wan_config_parse_text(dit_wan_config *cfg, const char *name, const char *text,
                                     size_t len, dit_error *err)
{
	if (!cfg || !name || (!text && len > 0))
		return dit_error_set(err, DIT_EINVAL, "dit_wan_config_parse_text: NULL argument");
	if (len > CFG_MAX_FILE)
		return dit_error_set(err, DIT_EFORMAT, "%s: file is implausibly large (%zu bytes)",
		                     name, len);
	struct json_object *root = NULL;
	dit_status st = dit_io_parse_json_object(name, text ? text : "", len, &root, err);
	if (st == DIT_OK)
		st = cfg_from_object(cfg, name, root, err);
	json_object_put(root);
	return st;
}

/* code is what a bad value yields: DIT_EFORMAT for a file, DIT_EINVAL for an argument. */
static dit_status cfg_check(const dit_wan_config *cfg, const char *path, dit_status code,
                            dit_error *err)
{
	const char *p = cfg_name(path);
	if (!cfg)
		return dit_error_set(err, DIT_EINVAL, "%s: NULL config", p);
	if (memchr(cfg->model_type, '\0', sizeof cfg->model_type) == NULL ||
	    (strcmp(cfg->model_type, "t2v") != 0 && strcmp(cfg->model_type, "i2v") != 0 &&
	     strcmp(cfg->model_type, "ti2v") != 0)) {
		char mt[sizeof cfg->model_type * 4 + 1];
		size_t o = 0;
		for (size_t i = 0; i < sizeof cfg->model_type && cfg->model_type[i]; i++) {
			unsigned char ch = (unsigned char)cfg->model_type[i];
			if (ch >= 0x20 && ch < 0x7f && ch != '\\')
				mt[o++] = (char)ch;
			else
				o += (size_t)snprintf(mt + o, sizeof mt - o, "\\x%02x", ch);
		}
		mt[o] = '\0';
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "%s: model_type '%s' is not supported (t2v, i2v, ti2v are)", p,
		                     mt);
	}
	const struct {
		const char *key;
		int64_t v;
	} sizes[] = {
	    {"dim", cfg->dim},
	    {"ffn_dim", cfg->ffn_dim},
	    {"freq_dim", cfg->freq_dim},
	    {"in_dim", cfg->in_dim},
	    {"out_dim", cfg->out_dim},
	    {"num_heads", cfg->num_heads},
	    {"num_layers", cfg->num_layers},
	    {"text_len", cfg->text_len},
	    {"text_dim", cfg->text_dim},
	};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		if (sizes[i].v <= 0)
			return dit_error_set(err, code, "%s: key '%s' must be positive (got %lld)",
			                     p, sizes[i].key, (long long)sizes[i].v);
		if (sizes[i].v > CFG_MAX_SIZE)
			return dit_error_set(
			    err, code, "%s: key '%s' is implausibly large (%lld > %lld)", p,
			    sizes[i].key, (long long)sizes[i].v, (long long)CFG_MAX_SIZE);
	}
	for (int i = 0; i < 3; i++) {
		if (cfg->patch[i] <= 0 || cfg->patch[i] > CFG_MAX_PATCH)
			return dit_error_set(
			    err, code, "%s: key 'patch_size'[%d] must be in 1..%lld (got %lld)", p,
			    i, (long long)CFG_MAX_PATCH, (long long)cfg->patch[i]);
	}
	if (cfg->freq_dim % 2 != 0)
		return dit_error_set(err, code, "%s: key 'freq_dim' must be even (got %lld)", p,
		                     (long long)cfg->freq_dim);
	if (cfg->dim % cfg->num_heads != 0)
		return dit_error_set(err, code,
		                     "%s: key 'dim' (%lld) is not divisible by 'num_heads' (%lld)",
		                     p, (long long)cfg->dim, (long long)cfg->num_heads);
	int64_t hd = cfg->dim / cfg->num_heads;
	if (hd % 2 != 0 || hd < 6)
		return dit_error_set(
		    err, code,
		    "%s: head_dim = dim / num_heads = %lld must be even and at least "
		    "6 (3-axis RoPE)",
		    p, (long long)hd);
	if (!(cfg->eps > 0.0 && cfg->eps <= 1.0))
		return dit_error_set(err, code, "%s: key 'eps' must be in (0, 1] (got %g)", p,
		                     cfg->eps);
	return DIT_OK;
}

dit_status dit_wan_config_check(const dit_wan_config *cfg, const char *path, dit_error *err)
{
	return cfg_check(cfg, path, path ? DIT_EFORMAT : DIT_EINVAL, err);
}

/* Formats a double with the fewest digits (up to 17) that read back exactly, with a
 * '.' whatever the locale. */
static void cfg_format_double(char *buf, size_t cap, double d)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, cap, "%.*g", prec, d);
		if (prec == 17 || strtod(buf, NULL) == d)
			break;
	}
	for (char *c = buf; *c; c++) {
		if (*c == ',')
			*c = '.';
	}
}

dit_status dit_wan_config_save(const dit_wan_config *cfg, const char *path, dit_error *err)
{
	if (!cfg || !path || !*path)
		return dit_error_set(err, DIT_EINVAL,
		                     "dit_wan_config_save: NULL config or empty path");
	dit_status st = cfg_check(cfg, path, DIT_EINVAL, err);
	if (st != DIT_OK)
		return st;

	char eps[64];
	cfg_format_double(eps, sizeof eps, cfg->eps);
	char text[1024];
	int len =
	    snprintf(text, sizeof text,
	             "{\n"
	             "  \"_class_name\": \"WanModel\",\n"
	             "  \"model_type\": \"%s\",\n"
	             "  \"dim\": %lld,\n"
	             "  \"eps\": %s,\n"
	             "  \"ffn_dim\": %lld,\n"
	             "  \"freq_dim\": %lld,\n"
	             "  \"in_dim\": %lld,\n"
	             "  \"num_heads\": %lld,\n"
	             "  \"num_layers\": %lld,\n"
	             "  \"out_dim\": %lld,\n"
	             "  \"patch_size\": [%lld, %lld, %lld],\n"
	             "  \"text_dim\": %lld,\n"
	             "  \"text_len\": %lld\n"
	             "}\n",
	             cfg->model_type, (long long)cfg->dim, eps, (long long)cfg->ffn_dim,
	             (long long)cfg->freq_dim, (long long)cfg->in_dim, (long long)cfg->num_heads,
	             (long long)cfg->num_layers, (long long)cfg->out_dim, (long long)cfg->patch[0],
	             (long long)cfg->patch[1], (long long)cfg->patch[2], (long long)cfg->text_dim,
	             (long long)cfg->text_len);
	if (len < 0 || (size_t)len >= sizeof text)
		return dit_error_set(err, DIT_EINVAL, "%s: config text too long", path);

	dit_io_atomic f;
	st = dit_io_atomic_open(&f, path, err);
	if (st == DIT_OK)
		st = dit_io_atomic_write(&f, text, (size_t)len, err);
	if (st == DIT_OK)
		st = dit_io_atomic_commit(&f, err);
	return st;
}

const char *dit_wan_config_diff(const dit_wan_config *a, const dit_wan_config *b, char *buf,
                                size_t len)
{
	const struct {
		const char *key;
		int64_t x, y;
	} f[] = {
	    {"dim", a->dim, b->dim},
	    {"ffn_dim", a->ffn_dim, b->ffn_dim},
	    {"freq_dim", a->freq_dim, b->freq_dim},
	    {"in_dim", a->in_dim, b->in_dim},
	    {"out_dim", a->out_dim, b->out_dim},
	    {"num_heads", a->num_heads, b->num_heads},
	    {"num_layers", a->num_layers, b->num_layers},
	    {"text_len", a->text_len, b->text_len},
	    {"text_dim", a->text_dim, b->text_dim},
	    {"patch_size[0]", a->patch[0], b->patch[0]},
	    {"patch_size[1]", a->patch[1], b->patch[1]},
	    {"patch_size[2]", a->patch[2], b->patch[2]},
	};
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		if (f[i].x != f[i].y) {
			snprintf(buf, len, "%s %lld vs %lld", f[i].key, (long long)f[i].x,
			         (long long)f[i].y);
			return buf;
		}
	if (strcmp(a->model_type, b->model_type) != 0) {
		snprintf(buf, len, "model_type '%s' vs '%s'", a->model_type, b->model_type);
		return buf;
	}
	if (a->eps != b->eps) {
		snprintf(buf, len, "eps %g vs %g", a->eps, b->eps);
		return buf;
	}
	return NULL;
}
