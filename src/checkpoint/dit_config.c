/* config.json of any family, read through its descriptor's key table (the keys
 * themselves in dit_config_keys.c), checked, and written back. */
#define _POSIX_C_SOURCE 200809L

#include "dit_config.h"
#include "dit_config_priv.h"
#include "dit_io.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

/* A config.json is a few hundred bytes; anything this large is something else. */
#define CFG_MAX_FILE ((size_t)1 << 20)

static const char *cfg_name(const char *path)
{
	return path ? path : "config";
}

/* Calls f(cd, arg) for every config.json format of every family, each once. */
static const dit_config_desc *cfg_each(int (*f)(const dit_config_desc *cd, void *arg), void *arg)
{
	size_t n;
	const dit_model_desc *const *all = dit_model_descs(&n);
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < DIT_MAX_FORMATS && all[i]->formats[k]; k++) {
			const dit_config_desc *cd = all[i]->formats[k]->config;
			int seen = 0; /* families share formats */
			for (size_t j = 0; j <= i && !seen; j++)
				for (int l = 0; l < DIT_MAX_FORMATS && all[j]->formats[l]; l++) {
					if (j == i && l == k)
						break;
					seen |= all[j]->formats[l]->config == cd;
				}
			if (!seen && f(cd, arg))
				return cd;
		}
	return NULL;
}

typedef struct known_types {
	char *buf;
	size_t len, used;
} known_types;

/* Appends "name, " to k's list unless it is there. */
static void known_add(known_types *k, const char *name)
{
	char quoted[64];
	snprintf(quoted, sizeof quoted, "%s, ", name);
	if (!strstr(k->buf, quoted) && k->used < k->len)
		k->used += (size_t)snprintf(k->buf + k->used, k->len - k->used, "%s", quoted);
}

/* The model types a format's files name. */
static int add_types(const dit_config_desc *cd, void *arg)
{
	for (const char *const *t = cd->model_types; cd->model_type_key && *t; t++)
		known_add(arg, *t);
	return 0;
}

/* The class name of a format whose files name no model_type. */
static int add_class(const dit_config_desc *cd, void *arg)
{
	if (!cd->model_type_key && cd->class_name)
		known_add(arg, cd->class_name);
	return 0;
}

/* What add gives of every format, for messages: "t2v, i2v, ti2v". */
static void cfg_known(char *buf, size_t len, int (*add)(const dit_config_desc *, void *))
{
	known_types k = {buf, len, 0};
	buf[0] = '\0';
	cfg_each(add, &k);
	if (k.used >= 2 && k.used <= len)
		buf[k.used - 2] = '\0';
}

static int names_type(const dit_config_desc *cd, void *arg)
{
	for (const char *const *t = cd->model_types; cd->model_type_key && *t; t++)
		if (strcmp(*t, arg) == 0)
			return 1;
	return 0;
}

static int has_class(const dit_config_desc *cd, void *arg)
{
	return !cd->model_type_key && strcmp(cd->class_name, arg) == 0;
}

static int names_class(const dit_config_desc *cd, void *arg)
{
	return cd->class_name && strcmp(cd->class_name, arg) == 0;
}

static int has_detect_key(const dit_config_desc *cd, void *arg)
{
	struct json_object *v = NULL;
	return !cd->model_type_key && cd->detect_key &&
	       json_object_object_get_ex(arg, cd->detect_key, &v);
}

/* The format of a file that names model_type; NULL: none. */
static const dit_config_desc *cfg_family(const char *model_type)
{
	return cfg_each(names_type, (void *)model_type);
}

/* The format of hp's values: its own, or the one of its model_type. */
static const dit_config_desc *cfg_of(const dit_hparams *hp)
{
	if (hp->config)
		return hp->config;
	if (memchr(hp->model_type, '\0', sizeof hp->model_type) == NULL)
		return NULL;
	return cfg_family(hp->model_type);
}

/* The first n bytes of s (up to a NUL) printable, for messages: bytes outside ASCII's
 * printable ones and backslashes as \xNN. */
static void cfg_printable(const char *s, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n && s[i] && o + 5 < cap; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			out[o++] = (char)ch;
		else
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", ch);
	}
	out[o] = '\0';
}

/* model_type printable, for messages. */
static void cfg_escape_type(const dit_hparams *hp, char *mt, size_t cap)
{
	cfg_printable(hp->model_type, sizeof hp->model_type, mt, cap);
}

/* Fills *hp from a parsed config object; *hp is left alone on failure. */
static dit_status cfg_from_object(dit_hparams *hp, const char *path, struct json_object *root,
                                  dit_error *err)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(root, "model_type", &v) || !v) {
		/* a format whose files name no model_type, told by its class name */
		const dit_config_desc *cd = NULL;
		if (json_object_object_get_ex(root, "_class_name", &v) && v &&
		    json_object_is_type(v, json_type_string)) {
			const char *cls = json_object_get_string(v);
			cd = cfg_each(has_class, (void *)cls);
			/* a class whose files name their model_type (WanModel) lacks the key */
			if (!cd && !cfg_each(names_class, (void *)cls)) {
				char known[256], name[64];
				cfg_known(known, sizeof known, add_class);
				cfg_printable(cls, SIZE_MAX, name, sizeof name);
				return dit_error_set(err, DIT_EUNSUPPORTED,
				                     "%s: _class_name '%s' is not a model ditstar "
				                     "reads (%s are)",
				                     path, name, known);
			}
		} else {
			cd = cfg_each(has_detect_key, root);
		}
		if (!cd)
			return dit_error_set(err, DIT_EFORMAT, "%s: key 'model_type' missing",
			                     path);
		dit_hparams c;
		memset(&c, 0, sizeof c);
		dit_status st = dit_config_format_read(cd, root, path, &c, err);
		if (st == DIT_OK && (st = dit_config_check(&c, path, err)) == DIT_OK)
			*hp = c;
		return st;
	}
	if (!json_object_is_type(v, json_type_string))
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: key 'model_type' must be a string (got %s)", path,
		                     json_type_to_name(json_object_get_type(v)));
	dit_hparams c;
	memset(&c, 0, sizeof c);
	const char *mt = json_object_get_string(v);
	size_t mtlen = (size_t)json_object_get_string_len(v);
	if (mtlen >= sizeof c.model_type || strlen(mt) != mtlen) {
		char known[128];
		cfg_known(known, sizeof known, add_types);
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "%s: model_type is not supported (%s are)", path, known);
	}
	memcpy(c.model_type, mt, mtlen + 1);
	const dit_config_desc *cd = cfg_family(c.model_type);
	/* an unknown model_type is refused by the check below, with its name */
	if (cd) {
		dit_status st = dit_config_format_read(cd, root, path, &c, err);
		if (st != DIT_OK)
			return st;
	}
	dit_status st = dit_config_check(&c, path, err);
	if (st == DIT_OK)
		*hp = c;
	return st;
}

dit_status dit_config_load(dit_hparams *hp, const char *path, dit_error *err)
{
	if (!hp || !path)
		return dit_error_set(err, DIT_EINVAL, "dit_config_load: NULL argument");
	struct json_object *root = NULL;
	dit_status st = dit_io_read_json_object(path, CFG_MAX_FILE, &root, err);
	if (st != DIT_OK)
		return st;
	st = cfg_from_object(hp, path, root, err);
	json_object_put(root);
	return st;
}

dit_status dit_config_parse_text(dit_hparams *hp, const char *name, const char *text, size_t len,
                                 dit_error *err)
{
	if (!hp || !name || (!text && len > 0))
		return dit_error_set(err, DIT_EINVAL, "dit_config_parse_text: NULL argument");
	if (len > CFG_MAX_FILE)
		return dit_error_set(err, DIT_EFORMAT, "%s: file is implausibly large (%zu bytes)",
		                     name, len);
	struct json_object *root = NULL;
	dit_status st = dit_io_parse_json_object(name, text ? text : "", len, &root, err);
	if (st == DIT_OK)
		st = cfg_from_object(hp, name, root, err);
	json_object_put(root);
	return st;
}

/* code is what a bad value yields: DIT_EFORMAT for a file, DIT_EINVAL for an argument. */
static dit_status cfg_check(const dit_hparams *hp, const char *path, dit_status code,
                            const dit_config_desc **family, dit_error *err)
{
	const char *p = cfg_name(path);
	if (!hp)
		return dit_error_set(err, DIT_EINVAL, "%s: NULL config", p);
	const dit_config_desc *cd = cfg_of(hp);
	int known_type = 0;
	for (const char *const *t = cd ? cd->model_types : NULL; t && *t; t++)
		known_type |= memchr(hp->model_type, '\0', sizeof hp->model_type) != NULL &&
		              strcmp(*t, hp->model_type) == 0;
	if (!known_type) {
		char mt[sizeof hp->model_type * 4 + 1], known[128];
		cfg_escape_type(hp, mt, sizeof mt);
		cfg_known(known, sizeof known, add_types);
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "%s: model_type '%s' is not supported (%s are)", p, mt, known);
	}
	for (int i = 0; i < cd->nkeys; i++) {
		const dit_config_key *k = &cd->keys[i];
		const char *src = (const char *)hp + k->off;
		if (k->kind == DIT_CK_REAL || k->kind == DIT_CK_REAL3) {
			int n = k->kind == DIT_CK_REAL3 ? 3 : 1;
			for (int j = 0; j < n; j++) {
				double d = ((const double *)src)[j];
				char name[64];
				if (n > 1)
					snprintf(name, sizeof name, "'%s'[%d]", k->key, j);
				else
					snprintf(name, sizeof name, "'%s'", k->key);
				if ((k->lo || k->hi) && !(d >= (double)k->lo && d <= (double)k->hi))
					return dit_error_set(
					    err, code, "%s: key %s must be in %lld..%lld (got %g)",
					    p, name, (long long)k->lo, (long long)k->hi, d);
				if (!(k->lo || k->hi) && !(d > 0.0 && d <= 1.0))
					return dit_error_set(
					    err, code, "%s: key %s must be in (0, 1] (got %g)", p,
					    name, d);
			}
			continue;
		}
		if (k->kind == DIT_CK_BOOL)
			continue;
		int64_t lo = k->lo || k->hi ? k->lo : 1, hi = k->lo || k->hi ? k->hi : CFG_MAX_SIZE;
		int n = k->kind == DIT_CK_INT3 ? 3 : 1;
		for (int j = 0; j < n; j++) {
			int64_t x = ((const int64_t *)src)[j];
			char name[64];
			if (k->kind != DIT_CK_INT)
				snprintf(name, sizeof name, "'%s'[%d]", k->key, j);
			else
				snprintf(name, sizeof name, "'%s'", k->key);
			if (n > 1 && (x < lo || x > hi))
				return dit_error_set(
				    err, code, "%s: key %s must be in %lld..%lld (got %lld)", p,
				    name, (long long)lo, (long long)hi, (long long)x);
			if (x < lo)
				return dit_error_set(err, code,
				                     "%s: key %s must be positive (got %lld)", p,
				                     name, (long long)x);
			if (x > hi)
				return dit_error_set(
				    err, code, "%s: key %s is implausibly large (%lld > %lld)", p,
				    name, (long long)x, (long long)hi);
		}
	}
	char why[200];
	if (cd->check && !cd->check(hp, why, sizeof why))
		return dit_error_set(err, code, "%s: %s", p, why);
	if (family)
		*family = cd;
	return DIT_OK;
}

dit_status dit_config_check(const dit_hparams *hp, const char *path, dit_error *err)
{
	return cfg_check(hp, path, path ? DIT_EFORMAT : DIT_EINVAL, NULL, err);
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

dit_status dit_config_text(const dit_hparams *hp, const char *path, char *text, size_t cap,
                           size_t *len, dit_error *err)
{
	const dit_config_desc *cd = NULL;
	dit_status st = cfg_check(hp, path, DIT_EINVAL, &cd, err);
	if (st != DIT_OK)
		return st;
	size_t used = (size_t)snprintf(text, cap, "{\n  \"_class_name\": \"%s\"", cd->class_name);
	if (cd->model_type_key)
		used += (size_t)snprintf(text + used, cap - used, ",\n  \"model_type\": \"%s\"",
		                         hp->model_type);
	for (int i = 0; i < cd->nkeys && used < cap; i++) {
		const dit_config_key *k = &cd->keys[i];
		const char *src = (const char *)hp + k->off;
		char val[96];
		if (k->kind == DIT_CK_REAL)
			cfg_format_double(val, sizeof val, *(const double *)src);
		else if (k->kind == DIT_CK_REAL3) {
			char a[3][28];
			for (int j = 0; j < 3; j++)
				cfg_format_double(a[j], sizeof a[j], ((const double *)src)[j]);
			snprintf(val, sizeof val, "[%s, %s, %s]", a[0], a[1], a[2]);
		} else if (k->kind == DIT_CK_BOOL)
			snprintf(val, sizeof val, "%s", *(const int64_t *)src ? "true" : "false");
		else if (k->kind == DIT_CK_INT3)
			snprintf(val, sizeof val, "[%lld, %lld, %lld]",
			         (long long)((const int64_t *)src)[0],
			         (long long)((const int64_t *)src)[1],
			         (long long)((const int64_t *)src)[2]);
		else if (k->kind == DIT_CK_INT1)
			snprintf(val, sizeof val, "[%lld]", (long long)*(const int64_t *)src);
		else
			snprintf(val, sizeof val, "%lld", (long long)*(const int64_t *)src);
		used += (size_t)snprintf(text + used, cap - used, ",\n  \"%s\": %s", k->key, val);
	}
	if (used < cap)
		used += (size_t)snprintf(text + used, cap - used, "\n}\n");
	if (used >= cap)
		return dit_error_set(err, DIT_EINVAL, "%s: config text too long", path);
	*len = used;
	return DIT_OK;
}

dit_status dit_config_save(const dit_hparams *hp, const char *path, dit_error *err)
{
	if (!hp || !path || !*path)
		return dit_error_set(err, DIT_EINVAL, "dit_config_save: NULL config or empty path");
	char text[2048];
	size_t used = 0;
	dit_status st = dit_config_text(hp, path, text, sizeof text, &used, err);
	if (st != DIT_OK)
		return st;
	dit_io_atomic f;
	st = dit_io_atomic_open(&f, path, err);
	if (st == DIT_OK)
		st = dit_io_atomic_write(&f, text, used, err);
	if (st == DIT_OK)
		st = dit_io_atomic_commit(&f, err);
	return st;
}

const char *dit_config_diff(const dit_hparams *a, const dit_hparams *b, char *buf, size_t len)
{
	if (strcmp(a->model_type, b->model_type) != 0) {
		snprintf(buf, len, "model_type '%s' vs '%s'", a->model_type, b->model_type);
		return buf;
	}
	const dit_config_desc *cd = cfg_of(a);
	if (cd != cfg_of(b)) {
		snprintf(buf, len, "format '%s' vs '%s'", cd ? cd->class_name : "?",
		         cfg_of(b) ? cfg_of(b)->class_name : "?");
		return buf;
	}
	for (int i = 0; cd && i < cd->nkeys; i++) {
		const dit_config_key *k = &cd->keys[i];
		const char *x = (const char *)a + k->off, *y = (const char *)b + k->off;
		if (k->kind == DIT_CK_REAL || k->kind == DIT_CK_REAL3) {
			for (int j = 0; j < (k->kind == DIT_CK_REAL3 ? 3 : 1); j++) {
				double u = ((const double *)x)[j], v = ((const double *)y)[j];
				if (u == v)
					continue;
				snprintf(buf, len, "%s %g vs %g", k->key, u, v);
				return buf;
			}
			continue;
		}
		int n = k->kind == DIT_CK_INT3 ? 3 : 1;
		for (int j = 0; j < n; j++) {
			int64_t u = ((const int64_t *)x)[j], v = ((const int64_t *)y)[j];
			if (u == v)
				continue;
			if (n > 1)
				snprintf(buf, len, "%s[%d] %lld vs %lld", k->key, j, (long long)u,
				         (long long)v);
			else
				snprintf(buf, len, "%s %lld vs %lld", k->key, (long long)u,
				         (long long)v);
			return buf;
		}
	}
	return NULL;
}
