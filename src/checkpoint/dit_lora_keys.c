/* A LoRA file's keys: what each is (its ending), which tensor its module names (in the
 * format of the family that resolves the most of them), checked against that tensor's
 * shape (see dit_lora.h). */
#define _POSIX_C_SOURCE 200809L
#include "dit_lora_priv.h"
#include "dit_grow.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LORA_MAX_RANK 65536

/* What a key of a LoRA file is, by its ending. */
enum { R_DOWN, R_UP, R_ALPHA, R_DIFF, R_DIFF_B, R_LYCORIS, R_OTHER };
static const struct {
	const char *end;
	int role;
} suffixes[] = {
    {".lora_down.weight", R_DOWN},
    {".lora_up.weight", R_UP},
    {".lora_A.weight", R_DOWN},
    {".lora_B.weight", R_UP},
    {".lora_A.default.weight", R_DOWN},
    {".lora_B.default.weight", R_UP},
    {".lora.down.weight", R_DOWN},
    {".lora.up.weight", R_UP},
    {"_lora.down.weight", R_DOWN},
    {"_lora.up.weight", R_UP},
    {".lora_linear_layer.down.weight", R_DOWN},
    {".lora_linear_layer.up.weight", R_UP},
    {".alpha", R_ALPHA},
    {".diff", R_DIFF},
    {".diff_b", R_DIFF_B},
    /* LyCORIS' other decompositions and DoRA: not merged here */
    {".hada_w1_a", R_LYCORIS},
    {".hada_w1_b", R_LYCORIS},
    {".hada_w2_a", R_LYCORIS},
    {".hada_w2_b", R_LYCORIS},
    {".hada_t1", R_LYCORIS},
    {".hada_t2", R_LYCORIS},
    {".lokr_w1", R_LYCORIS},
    {".lokr_w2", R_LYCORIS},
    {".lokr_w1_a", R_LYCORIS},
    {".lokr_w1_b", R_LYCORIS},
    {".lokr_w2_a", R_LYCORIS},
    {".lokr_w2_b", R_LYCORIS},
    {".lokr_t2", R_LYCORIS},
    {".lora_mid.weight", R_LYCORIS},
    {".dora_scale", R_LYCORIS},
};

/* Prefixes the tools put before a module name. */
static const char *const prefixes[] = {"base_model.model.",
                                       "model.diffusion_model.",
                                       "diffusion_model.",
                                       "transformer.",
                                       "lora_unet_",
                                       "lora_transformer_",
                                       "unet.",
                                       "model."};

/* One key of a file: its module name (prefixes cut), role, tensor. */
typedef struct lora_key {
	char base[256];
	int role;
	const dit_st_tensor *t;
} lora_key;

static int role_of(const char *name, size_t *cut)
{
	size_t n = strlen(name);
	int best = R_OTHER;
	size_t bl = 0;
	for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
		size_t l = strlen(suffixes[i].end);
		if (l > bl && n > l && !strcmp(name + n - l, suffixes[i].end)) {
			best = suffixes[i].role;
			bl = l;
		}
	}
	*cut = n - bl;
	return best;
}

static void strip_prefixes(char *s)
{
	for (int again = 1; again;) {
		again = 0;
		for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
			size_t l = strlen(prefixes[i]);
			if (!strncmp(s, prefixes[i], l) && s[l]) {
				memmove(s, s + l, strlen(s + l) + 1);
				again = 1;
			}
		}
	}
}

static int cmp_key(const void *a, const void *b)
{
	const lora_key *x = a, *y = b;
	int c = strcmp(x->base, y->base);
	return c ? c : x->role - y->role;
}

/* The file's keys, sorted by module. */
static dit_status file_keys(const dit_st_file *f, lora_key **out, dit_error *err)
{
	lora_key *k = calloc(f->ntensors ? f->ntensors : 1, sizeof *k);
	if (!k)
		return dit_error_set(err, DIT_ENOMEM, "out of memory reading %s", f->label);
	for (size_t i = 0; i < f->ntensors; i++) {
		size_t cut;
		k[i].t = &f->tensors[i];
		k[i].role = role_of(f->tensors[i].name, &cut);
		if (k[i].role == R_LYCORIS) {
			dit_status st =
			    dit_error_set(err, DIT_EUNSUPPORTED,
			                  "--lora %s: key '%s' is a LyCORIS (LoHa, LoKr) "
			                  "or DoRA factor; only LoRA and diff keys are "
			                  "merged",
			                  f->label, f->tensors[i].name);
			free(k);
			return st;
		}
		snprintf(k[i].base, sizeof k[i].base, "%.*s", (int)cut, f->tensors[i].name);
		strip_prefixes(k[i].base);
	}
	qsort(k, f->ntensors, sizeof *k, cmp_key);
	*out = k;
	return DIT_OK;
}

/* The target of module base as kind W/B/P in names; NULL when none. */
/* The targets of module base as kind W, B or P (the first kind that has any): *count of
 * them from the returned one; NULL when none. */
static const dit_lora_target *find(const dit_lora_names *nm, const char *base, const char *kinds,
                                   size_t *count)
{
	char key[300], norm[280];
	dit_lora_normalise(norm, sizeof norm, base);
	for (const char *k = kinds; *k; k++) {
		snprintf(key, sizeof key, "%s|%c", norm, *k);
		const dit_lora_target *t = dit_lora_names_find(nm, key, count);
		if (t)
			return t;
	}
	*count = 0;
	return NULL;
}

/* How many of the file's modules the names resolve. */
static size_t count_matches(const lora_key *k, size_t n, const dit_lora_names *nm)
{
	size_t hits = 0, c;
	for (size_t i = 0; i < n; i++)
		if (k[i].role != R_OTHER &&
		    find(nm, k[i].base, k[i].role == R_DIFF_B ? "B" : "WP", &c) != NULL)
			hits++;
	return hits;
}

static int64_t numel_of(const dit_st_tensor *t)
{
	return t->numel;
}

static int add_merge(dit_lora_set *s, const lora_merge *m)
{
	if (dit_grow((void **)&s->m, &s->cap, s->n, sizeof *s->m, 256))
		return -1;
	s->m[s->n] = *m;
	s->m[s->n].order = s->n;
	s->n++;
	return 0;
}

/* The table tensor tg's rows and columns under m's config. */
static void table_dims(const dit_lora_model *m, const dit_lora_target *tg, int64_t *rows,
                       int64_t *cols)
{
	const dit_tensor_desc *rule = tg->pool < 0 ? &m->desc->globals[tg->tensor]
	                                           : &m->desc->pools[tg->pool].tensors[tg->tensor];
	int64_t shape[DIT_T_MAX_DIMS], n = 1;
	int nd = dit_tensor_shape(m->cfg, rule, shape);
	for (int i = 0; i < nd; i++)
		n *= shape[i];
	*rows = shape[0];
	*cols = shape[0] ? n / shape[0] : 0;
}

/* A module's factors, by role. */
typedef struct lora_module {
	const dit_st_tensor *by[R_OTHER];
	double alpha; /* the rank when there is no alpha */
} lora_module;

/* The low-rank pair of md checked against target tg (columns tcols): one merge. */
static dit_status lowrank_merge(lora_merge *mg, const lora_module *md, const dit_st_file *f,
                                double strength, const dit_lora_target *tg, int64_t tcols,
                                dit_error *err)
{
	const dit_st_tensor *d = md->by[R_DOWN], *u = md->by[R_UP];
	int64_t r = d->ndim >= 2 ? d->shape[0] : 0;
	int64_t src_rows = tg->join ? 0 : tg->src_rows;
	if (r <= 0 || u->ndim < 2 || u->shape[1] != r || numel_of(u) != u->shape[0] * r)
		return dit_error_set(err, DIT_ESHAPE,
		                     "--lora %s: '%s' and its up factor '%s' do not make a rank-r "
		                     "product",
		                     f->label, d->name, u->name);
	if (numel_of(d) / r != tcols || (src_rows && u->shape[0] != src_rows))
		return dit_error_set(
		    err, DIT_ESHAPE,
		    "--lora %s: '%s' makes a %lld x %lld delta; its weight is "
		    "%lld x %lld",
		    f->label, d->name, (long long)u->shape[0], (long long)(numel_of(d) / r),
		    (long long)(src_rows ? src_rows : u->shape[0]), (long long)tcols);
	if (r > LORA_MAX_RANK || r > u->shape[0] || r > tcols)
		return dit_error_set(
		    err, DIT_ESHAPE,
		    "--lora %s: '%s' has rank %lld, above its weight's %lld x %lld", f->label,
		    d->name, (long long)r, (long long)u->shape[0], (long long)tcols);
	mg->down = d;
	mg->up = u;
	mg->scale = (float)(strength * (md->alpha > 0 ? md->alpha : (double)r) / (double)r);
	if (tg->join)
		mg->rows = u->shape[0];
	return DIT_OK;
}

/* The full delta df checked against target tg: one merge. */
static dit_status diff_merge(lora_merge *mg, const dit_st_tensor *df, const dit_st_file *f,
                             double strength, const dit_lora_target *tg, int64_t tcols,
                             dit_error *err)
{
	int64_t drows = df->ndim ? df->shape[0] : 1;
	int64_t src_rows = tg->join ? 0 : tg->src_rows;
	if (numel_of(df) != drows * tcols || (src_rows && drows != src_rows))
		return dit_error_set(err, DIT_ESHAPE,
		                     "--lora %s: '%s' has %lld values; its weight's rows hold %lld "
		                     "x %lld",
		                     f->label, df->name, (long long)numel_of(df),
		                     (long long)(src_rows ? src_rows : drows), (long long)tcols);
	mg->diff = df;
	mg->scale = (float)strength;
	if (tg->join)
		mg->rows = drows;
	return DIT_OK;
}

/* The module's alpha: one finite number (else the rank: -1). */
static dit_status module_alpha(lora_module *md, const dit_st_file *f, dit_error *err)
{
	md->alpha = -1;
	const dit_st_tensor *a = md->by[R_ALPHA];
	if (!a)
		return DIT_OK;
	float v;
	if (numel_of(a) != 1 || dit_st_read_f32(f, a, &v, err) != DIT_OK || !isfinite(v) || v <= 0)
		return dit_error_set(err, DIT_EFORMAT, "--lora %s: '%s' is not one positive number",
		                     f->label, a->name);
	md->alpha = v;
	return DIT_OK;
}

/* A module's keys [k, k + n) (one base) checked and turned into merges, one per tensor
 * (or rows of one: both halves of a swapped tensor) its name covers. */
static dit_status module_merges(dit_lora_set *s, const dit_lora_model *m, const dit_st_file *f,
                                double strength, const lora_key *k, size_t n,
                                const dit_lora_names *nm, dit_error *err)
{
	lora_module md = {{NULL}, 0};
	for (size_t i = 0; i < n; i++)
		if (k[i].role < R_OTHER)
			md.by[k[i].role] = k[i].t;
	const dit_st_tensor **by = md.by;
	if (!by[R_DOWN] != !by[R_UP])
		return dit_error_set(err, DIT_EFORMAT, "--lora %s: '%s' has a %s factor and no %s",
		                     f->label, (by[R_DOWN] ? by[R_DOWN] : by[R_UP])->name,
		                     by[R_DOWN] ? "down (A)" : "up (B)",
		                     by[R_DOWN] ? "up (B)" : "down (A)");
	dit_status st = module_alpha(&md, f, err);
	for (int role = R_DOWN; role <= R_DIFF_B && !st; role++) {
		if (!by[role] || role == R_UP || role == R_ALPHA)
			continue;
		size_t nt;
		const dit_lora_target *t0 = find(nm, k[0].base, role == R_DIFF_B ? "B" : "WP", &nt);
		for (size_t q = 0; q < nt && !st; q++) { /* none: listed by the caller */
			const dit_lora_target *tg = &t0[q];
			lora_merge mg = {.pool = tg->pool,
			                 .block = tg->block,
			                 .tensor = tg->tensor,
			                 .dst_row = tg->dst_row,
			                 .rows = tg->rows,
			                 .src_row = tg->src_row,
			                 .f = f,
			                 .tg = tg};
			int64_t trows;
			table_dims(m, tg, &trows, &mg.cols);
			st = role == R_DOWN
			         ? lowrank_merge(&mg, &md, f, strength, tg, mg.cols, err)
			         : diff_merge(&mg, by[role], f, strength, tg, mg.cols, err);
			if (!st && add_merge(s, &mg))
				st = dit_error_set(err, DIT_ENOMEM, "out of memory for the LoRA");
		}
	}
	return st;
}

/* The merges [from, s->n) on parts of a fused tensor get their rows' place: the file's
 * parts of that tensor, all there, in order (their rows adding up to the tensor's), or
 * parts of equal rows. */
static dit_status place_parts(dit_lora_set *s, size_t from, const dit_st_file *f, dit_error *err)
{
	for (size_t i = from; i < s->n; i++) {
		lora_merge *a = &s->m[i];
		if (!a->tg->join)
			continue;
		const dit_join *j = a->tg->join;
		int64_t rows[DIT_JOIN_MAX_PARTS] = {0};
		for (size_t k = from; k < s->n; k++) {
			const lora_merge *b = &s->m[k];
			if (b->tg->join == j && b->pool == a->pool && b->block == a->block &&
			    b->tensor == a->tensor)
				rows[b->tg->part] = b->rows;
		}
		int64_t total = a->tg->table_rows, off = 0, sum = 0;
		int all = 1;
		for (int p = 0; p < j->nparts; p++) {
			all &= rows[p] > 0;
			sum += rows[p];
		}
		if (all && sum == total) {
			for (int p = 0; p < a->tg->part; p++)
				off += rows[p];
		} else if (total % j->nparts == 0 && a->rows == total / j->nparts) {
			off = a->tg->part * (total / j->nparts);
		} else {
			return dit_error_set(err, DIT_ESHAPE,
			                     "--lora %s: a part (%s) of the fused '%s' whose other "
			                     "parts' rows are unknown: give all its parts",
			                     f->label, j->part[a->tg->part].from, j->to);
		}
		a->dst_row = off;
		a->src_row = 0;
	}
	return DIT_OK;
}

/* "'a', 'b', 'c' (and N more)" of the unmatched keys into buf. */
static void list_keys(char *buf, size_t len, const lora_key *k, const unsigned char *miss, size_t n)
{
	size_t used = 0, shown = 0, total = 0;
	buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		if (!miss[i])
			continue;
		total++;
		if (shown < 3 && used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s'%s'",
			                         shown ? ", " : "", k[i].t->name);
		shown += shown < 3;
	}
	if (total > shown && used < len)
		snprintf(buf + used, len - used, " and %zu more", total - shown);
}

dit_status dit_lora_file_attach(dit_lora_set *s, const dit_lora_model *m, dit_st_file *f,
                                double strength, int ignore, dit_error *err)
{
	lora_key *k = NULL;
	dit_status st = file_keys(f, &k, err);
	if (st)
		return st;
	/* the names of the tables and of each format: the one that resolves the most */
	dit_lora_names nm[DIT_MAX_FORMATS + 1];
	int nn = 0, best = 0;
	size_t best_hits = 0;
	for (int i = -1; !st && i < DIT_MAX_FORMATS && (i < 0 || m->desc->formats[i]); i++) {
		st = dit_lora_names_build(&nm[nn], m, i < 0 ? NULL : m->desc->formats[i], err);
		if (st)
			break;
		size_t hits = count_matches(k, f->ntensors, &nm[nn]);
		if (hits > best_hits) {
			best_hits = hits;
			best = nn;
		}
		nn++;
	}
	unsigned char *miss = calloc(f->ntensors ? f->ntensors : 1, 1);
	if (!st && !miss)
		st = dit_error_set(err, DIT_ENOMEM, "out of memory for the LoRA");
	size_t from = s->n, nmiss = 0;
	for (size_t i = 0; !st && i < f->ntensors;) {
		size_t e = i;
		while (e < f->ntensors && !strcmp(k[e].base, k[i].base))
			e++;
		for (size_t q = i; q < e; q++) {
			int role = k[q].role;
			size_t c;
			miss[q] = role == R_OTHER ||
			          (role != R_ALPHA &&
			           !find(&nm[best], k[q].base, role == R_DIFF_B ? "B" : "WP", &c));
			nmiss += miss[q];
		}
		size_t before = s->n;
		st = module_merges(s, m, f, strength, k + i, e - i, &nm[best], err);
		s->modules += s->n > before;
		i = e;
	}
	if (!st)
		st = place_parts(s, from, f, err);
	for (size_t i = from; i < s->n; i++)
		s->m[i].tg = NULL; /* the names go */
	if (!st && best_hits == 0)
		st = dit_error_set(err, DIT_EFORMAT,
		                   "--lora %s: no key names a weight of %s (a LoRA of another "
		                   "model?)",
		                   f->label, m->desc->name);
	if (!st && nmiss && !ignore) {
		char list[256];
		list_keys(list, sizeof list, k, miss, f->ntensors);
		st = dit_error_set(err, DIT_EUSAGE,
		                   "--lora %s: %zu key%s match%s no weight of %s: %s "
		                   "(--lora-ignore-unmatched skips them)",
		                   f->label, nmiss, nmiss > 1 ? "s" : "", nmiss > 1 ? "" : "es",
		                   m->desc->name, list);
	}
	for (int i = 0; i < nn; i++)
		dit_lora_names_free(&nm[i]);
	free(miss);
	free(k);
	return st;
}
