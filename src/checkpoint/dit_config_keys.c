/* The keys of one config.json format read into a dit_hparams through its table:
 * integers, arrays of them, numbers, booleans, and the extra keys official files carry
 * checked for type (see dit_config_priv.h). */
#define _POSIX_C_SOURCE 200809L

#include "dit_config_priv.h"

#include <stdio.h>
#include <string.h>

/* Integral doubles are accepted as integers up to 2^53, where they stay exact. */
#define CFG_MAX_EXACT 9007199254740992.0

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
static dit_status cfg_check_extra(const dit_config_desc *cd, struct json_object *root,
                                  const char *path, dit_error *err)
{
	for (int i = 0; i < cd->nextra; i++) {
		const char *key = cd->extra[i].key;
		struct json_object *v = NULL;
		if (cd->extra[i].type == DIT_CT_NULL) {
			if (json_object_object_get_ex(root, key, &v) && v)
				return dit_error_set(
				    err, DIT_EUNSUPPORTED,
				    "%s: key '%s' is set (%s); this build implements "
				    "only null",
				    path, key,
				    json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
			continue;
		}
		json_type want = cd->extra[i].type == DIT_CT_STRING ? json_type_string
		                 : cd->extra[i].type == DIT_CT_BOOL ? json_type_boolean
		                                                    : json_type_array;
		dit_status st = cfg_check_type(root, path, key, want, err);
		if (st != DIT_OK)
			return st;
		const char *must = cd->extra[i].must;
		if (must && json_object_object_get_ex(root, key, &v) && v &&
		    cd->extra[i].type != DIT_CT_INT2) {
			const char *got = cd->extra[i].type == DIT_CT_BOOL
			                      ? (json_object_get_boolean(v) ? "true" : "false")
			                      : json_object_get_string(v);
			if (strcmp(got, must) != 0)
				return dit_error_set(
				    err, DIT_EUNSUPPORTED,
				    "%s: key '%s' is %s%s%s; this build implements "
				    "only %s%s%s",
				    path, key, cd->extra[i].type == DIT_CT_STRING ? "'" : "", got,
				    cd->extra[i].type == DIT_CT_STRING ? "'" : "",
				    cd->extra[i].type == DIT_CT_STRING ? "'" : "", must,
				    cd->extra[i].type == DIT_CT_STRING ? "'" : "");
		}
		if (cd->extra[i].type != DIT_CT_INT2 || !json_object_object_get_ex(root, key, &v) ||
		    !v)
			continue;
		if (json_object_array_length(v) != 2)
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: key '%s' must be an array of 2 integers", path,
			                     key);
		for (size_t j = 0; j < 2; j++) {
			char what[64];
			int64_t w = 0;
			snprintf(what, sizeof what, "key '%s'[%zu]", key, j);
			st = cfg_to_int(json_object_array_get_idx(v, j), path, what, &w, err);
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

/* An array key of one or three integers (DIT_CK_INT1, _INT3) into dst, the table's
 * defaults where it is absent. */
static dit_status cfg_read_ints(const dit_config_key *k, struct json_object *v, int have,
                                const char *path, int64_t *dst, dit_error *err)
{
	size_t n = k->kind == DIT_CK_INT3 ? 3 : 1;
	for (size_t i = 0; i < n; i++)
		dst[i] = (int64_t)k->def[i];
	if (!have)
		return DIT_OK;
	if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) != n)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: key '%s' must be an array of %zu integer%s", path, k->key,
		                     n, n > 1 ? "s" : "");
	for (size_t i = 0; i < n; i++) {
		char what[64];
		snprintf(what, sizeof what, "key '%s'[%zu]", k->key, i);
		dit_status st =
		    cfg_to_int(json_object_array_get_idx(v, i), path, what, dst + i, err);
		if (st != DIT_OK)
			return st;
	}
	return DIT_OK;
}

/* An array key of three numbers (DIT_CK_REAL3) into dst, the table's defaults where it
 * is absent. */
static dit_status cfg_read_reals(const dit_config_key *k, struct json_object *v, int have,
                                 const char *path, double *dst, dit_error *err)
{
	for (size_t i = 0; i < 3; i++)
		dst[i] = k->def[i];
	if (!have)
		return DIT_OK;
	if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) != 3)
		return dit_error_set(err, DIT_EFORMAT, "%s: key '%s' must be an array of 3 numbers",
		                     path, k->key);
	for (size_t i = 0; i < 3; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);
		if (!json_object_is_type(e, json_type_double) &&
		    !json_object_is_type(e, json_type_int))
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: key '%s'[%zu] must be a number (got %s)", path,
			                     k->key, i, json_type_to_name(json_object_get_type(e)));
		dst[i] = json_object_get_double(e);
	}
	return DIT_OK;
}

/* Reads one key of the table into hp: its value checked for its kind, or (absent) its
 * default; a required key absent is an error. */
static dit_status cfg_read_key(const dit_config_key *k, struct json_object *root, const char *path,
                               dit_hparams *hp, dit_error *err)
{
	char *dst = (char *)hp + k->off;
	struct json_object *v = NULL;
	int have = json_object_object_get_ex(root, k->key, &v) && v;
	if (!have && k->required)
		return dit_error_set(err, DIT_EFORMAT, "%s: key '%s' missing", path, k->key);
	switch (k->kind) {
	case DIT_CK_INT:
		if (!have) {
			*(int64_t *)dst = (int64_t)k->def[0];
			return DIT_OK;
		}
		return cfg_get_int(root, path, k->key, -1, (int64_t *)dst, err);
	case DIT_CK_INT1:
	case DIT_CK_INT3: return cfg_read_ints(k, v, have, path, (int64_t *)dst, err);
	case DIT_CK_REAL3: return cfg_read_reals(k, v, have, path, (double *)dst, err);
	case DIT_CK_REAL:
		if (!have) {
			*(double *)dst = k->def[0];
			return DIT_OK;
		}
		if (!json_object_is_type(v, json_type_double) &&
		    !json_object_is_type(v, json_type_int))
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: key '%s' must be a number (got %s)", path, k->key,
			                     json_type_to_name(json_object_get_type(v)));
		*(double *)dst = json_object_get_double(v);
		return DIT_OK;
	case DIT_CK_BOOL:
		if (!have) {
			*(int64_t *)dst = k->def[0] != 0.0;
			return DIT_OK;
		}
		if (!json_object_is_type(v, json_type_boolean))
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: key '%s' must be a boolean (got %s)", path,
			                     k->key, json_type_to_name(json_object_get_type(v)));
		*(int64_t *)dst = json_object_get_boolean(v) ? 1 : 0;
		return DIT_OK;
	}
	return DIT_OK;
}

dit_status dit_config_format_read(const dit_config_desc *cd, struct json_object *root,
                                  const char *path, dit_hparams *c, dit_error *err)
{
	dit_status st = cfg_check_extra(cd, root, path, err);
	for (int i = 0; i < cd->nkeys && st == DIT_OK; i++)
		st = cfg_read_key(&cd->keys[i], root, path, c, err);
	if (st != DIT_OK)
		return st;
	c->config = cd;
	if (cd->derive)
		cd->derive(c);
	return DIT_OK;
}
