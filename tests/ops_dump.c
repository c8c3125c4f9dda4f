/* Runs one fp32 CPU kernel (codelets/cpu, no StarPU) on the tensors and parameters of
 * a safetensors file and writes its results, for the float64 NumPy references of
 * tests/ref/ops_ref.py (tests/test_ops_ref.sh):
 *
 *   ops_dump OP IN OUT
 *
 * Parameters are IN's __metadata__ values (decimal text). Every op takes pad (default
 * 0): the kernel sees rows of cols + pad floats, the padding a NaN that must come out
 * unchanged (a read of it shows as NaN in the results, a write as an error). Matrices
 * are [rows, cols] F32 tensors, vectors [n]; "?" marks an optional tensor.
 *
 *   attention      q [lq, heads*hd], k, v [lk, heads*hd]; heads, lk_valid (1..lk):
 *                  o [lq, heads*hd] over the first lk_valid keys, scale 1/sqrt(hd)
 *   rmsnorm_group  x [rows, dim], weight? [group > 0 ? group : dim]; group, eps: x
 *   layernorm      x [rows, dim], weight? bias? shift? scale? [dim], table? [any
 *                  shape, read flat: the second terms of shift and scale at shift_off
 *                  and scale_off of its rows, mod_ld floats apart]; eps, mod_ld,
 *                  mod_rows, shift_off, scale_off: y [rows, dim]
 *   residual       x, y [rows, dim], gate? [dim], table? (the gate's second term at
 *                  gate_off); mod_ld, mod_rows, gate_off: x
 *   rope           x [f*h*w, heads*hd]; f, h, w, heads, theta, axes ("wan" or
 *                  "A,B,C" pairs): x rotated
 *
 * Errors: one line on stderr; exit 2 for a usage error, 1 for any other. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_cpu.h"
#include "dit_error.h"
#include "dit_safetensors.h"

#define DIT_PAD_BITS 0x7fc0d17eu /* a quiet NaN with a payload of its own */

/* One run: the input file, the writer of the results and the row padding. */
typedef struct dit_dump {
	const char *op;
	const char *path;
	dit_st_file *in;
	dit_st_writer *out;
	int64_t pad;
	dit_error *err;
} dit_dump;

/* A matrix as the kernel sees it: p [rows, ld], ld = cols + pad. */
typedef struct dit_mat {
	float *p;
	int64_t rows, cols, ld;
} dit_mat;

static float dit_pad_value(void)
{
	uint32_t u = DIT_PAD_BITS;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* The integer parameter key (def when absent and not required). */
static dit_status dit_dump_int(const dit_dump *d, const char *key, int required, int64_t def,
                               int64_t *out)
{
	const char *s = dit_st_metadata(d->in, key);
	if (!s) {
		*out = def;
		return required ? dit_error_set(d->err, DIT_ENOTFOUND, "%s: %s: no parameter %s",
		                                d->op, d->path, key)
		                : DIT_OK;
	}
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return dit_error_set(d->err, DIT_EFORMAT, "%s: %s: parameter %s is not an integer",
		                     d->op, d->path, key);
	*out = (int64_t)v;
	return DIT_OK;
}

/* The real parameter key, required. */
static dit_status dit_dump_real(const dit_dump *d, const char *key, double *out)
{
	const char *s = dit_st_metadata(d->in, key);
	if (!s)
		return dit_error_set(d->err, DIT_ENOTFOUND, "%s: %s: no parameter %s", d->op,
		                     d->path, key);
	char *end;
	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(*out))
		return dit_error_set(d->err, DIT_EFORMAT, "%s: %s: parameter %s is not a number",
		                     d->op, d->path, key);
	return DIT_OK;
}

/* The tensor name, read whole as fp32 into *out (numel floats, *out NULL when it is
 * absent and optional); ndim > 0 requires that many dimensions. */
static dit_status dit_dump_read(const dit_dump *d, const char *name, int optional, int ndim,
                                const dit_st_tensor **tp, float **out)
{
	const dit_st_tensor *t = dit_st_find(d->in, name);
	*out = NULL;
	*tp = t;
	if (!t)
		return optional ? DIT_OK
		                : dit_error_set(d->err, DIT_ENOTFOUND, "%s: %s: no tensor %s",
		                                d->op, d->path, name);
	if (ndim > 0 && t->ndim != ndim)
		return dit_error_set(d->err, DIT_ESHAPE,
		                     "%s: %s: tensor %s has %d dimensions, not %d", d->op, d->path,
		                     name, t->ndim, ndim);
	*out = malloc((size_t)(t->numel > 0 ? t->numel : 1) * sizeof(float));
	if (!*out)
		return dit_error_set(d->err, DIT_ENOMEM, "%s: out of memory", d->op);
	return dit_st_read_f32(d->in, t, *out, d->err);
}

/* The matrix name [rows, cols] into m with rows pad floats longer, the padding
 * DIT_PAD_BITS; rows or cols < 0: any. */
static dit_status dit_mat_read(const dit_dump *d, const char *name, int64_t rows, int64_t cols,
                               dit_mat *m)
{
	const dit_st_tensor *t;
	float *dense;
	dit_status st = dit_dump_read(d, name, 0, 2, &t, &dense);
	if (st) {
		free(dense);
		return st;
	}
	if ((rows >= 0 && t->shape[0] != rows) || (cols >= 0 && t->shape[1] != cols)) {
		free(dense);
		int bad = rows >= 0 && t->shape[0] != rows ? 0 : 1;
		return dit_error_set(d->err, DIT_ESHAPE, "%s: %s: tensor %s has %lld %s, not %lld",
		                     d->op, d->path, name, (long long)t->shape[bad],
		                     bad ? "columns" : "rows", (long long)(bad ? cols : rows));
	}
	m->rows = t->shape[0];
	m->cols = t->shape[1];
	m->ld = m->cols + d->pad;
	m->p = malloc((size_t)(m->rows * m->ld > 0 ? m->rows * m->ld : 1) * sizeof(float));
	if (!m->p) {
		free(dense);
		return dit_error_set(d->err, DIT_ENOMEM, "%s: out of memory", d->op);
	}
	float nan = dit_pad_value();
	for (int64_t r = 0; r < m->rows; r++) {
		memcpy(m->p + r * m->ld, dense + r * m->cols, (size_t)m->cols * sizeof(float));
		for (int64_t c = m->cols; c < m->ld; c++)
			m->p[r * m->ld + c] = nan;
	}
	free(dense);
	return DIT_OK;
}

/* A matrix [rows, cols] for the kernel to write: padding DIT_PAD_BITS, the rest 0. */
static dit_status dit_mat_new(const dit_dump *d, int64_t rows, int64_t cols, dit_mat *m)
{
	m->rows = rows;
	m->cols = cols;
	m->ld = cols + d->pad;
	m->p = calloc((size_t)(rows * m->ld > 0 ? rows * m->ld : 1), sizeof(float));
	if (!m->p)
		return dit_error_set(d->err, DIT_ENOMEM, "%s: out of memory", d->op);
	float nan = dit_pad_value();
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = cols; c < m->ld; c++)
			m->p[r * m->ld + c] = nan;
	return DIT_OK;
}

/* The vector name [n] (*out NULL when absent and optional). */
static dit_status dit_vec_read(const dit_dump *d, const char *name, int optional, int64_t n,
                               float **out)
{
	const dit_st_tensor *t;
	dit_status st = dit_dump_read(d, name, optional, 1, &t, out);
	if (!st && t && t->numel != n)
		st = dit_error_set(d->err, DIT_ESHAPE,
		                   "%s: %s: tensor %s has %lld elements, not %lld", d->op, d->path,
		                   name, (long long)t->numel, (long long)n);
	return st;
}

/* Fails when a padding float of m no longer holds DIT_PAD_BITS. */
static dit_status dit_mat_pad_check(const dit_dump *d, const char *name, const dit_mat *m)
{
	for (int64_t r = 0; r < m->rows; r++)
		for (int64_t c = m->cols; c < m->ld; c++) {
			uint32_t u;
			memcpy(&u, m->p + r * m->ld + c, sizeof u);
			if (u != DIT_PAD_BITS)
				return dit_error_set(
				    d->err, DIT_ERUNTIME,
				    "%s: padding of %s changed (row %lld, column %lld)", d->op,
				    name, (long long)r, (long long)c);
		}
	return DIT_OK;
}

/* Checks m's padding and adds m, unpadded, to the results as name. */
static dit_status dit_mat_write(const dit_dump *d, const char *name, const dit_mat *m)
{
	dit_status st = dit_mat_pad_check(d, name, m);
	if (st)
		return st;
	float *dense =
	    malloc((size_t)(m->rows * m->cols > 0 ? m->rows * m->cols : 1) * sizeof(float));
	if (!dense)
		return dit_error_set(d->err, DIT_ENOMEM, "%s: out of memory", d->op);
	for (int64_t r = 0; r < m->rows; r++)
		memcpy(dense + r * m->cols, m->p + r * m->ld, (size_t)m->cols * sizeof(float));
	int64_t shape[2] = {m->rows, m->cols};
	st = dit_st_writer_add_f32(d->out, name, 2, shape, dense, d->err);
	free(dense);
	return st;
}

/* A modulation table: tensor table read flat (p NULL when absent), its rows ld =
 * mod_ld floats apart, row r of x using table row r / mod_rows (mod_rows <= 0 or
 * mod_ld 0: row 0). */
typedef struct dit_table {
	float *p;
	int64_t n, ld, mod_rows;
} dit_table;

static dit_status dit_table_read(const dit_dump *d, dit_table *tab)
{
	const dit_st_tensor *t;
	dit_status st = dit_dump_read(d, "table", 1, 0, &t, &tab->p);
	if (st || !t)
		return st;
	tab->n = t->numel;
	if ((st = dit_dump_int(d, "mod_ld", 1, 0, &tab->ld)) ||
	    (st = dit_dump_int(d, "mod_rows", 1, 0, &tab->mod_rows)))
		return st;
	if (tab->ld < 0)
		return dit_error_set(d->err, DIT_EINVAL, "%s: %s: mod_ld must be >= 0", d->op,
		                     d->path);
	return DIT_OK;
}

/* The offset off_key of a term within a table row: the dim floats there must lie in
 * the table for every row of x [rows, dim]. */
static dit_status dit_table_off(const dit_dump *d, const dit_table *tab, const char *off_key,
                                int64_t rows, int64_t dim, int64_t *off)
{
	dit_status st = dit_dump_int(d, off_key, 1, 0, off);
	if (st)
		return st;
	int64_t last =
	    tab->mod_rows > 0 && tab->ld != 0 && rows > 0 ? (rows - 1) / tab->mod_rows : 0;
	if (*off < 0 || last * tab->ld + *off + dim > tab->n)
		return dit_error_set(
		    d->err, DIT_ESHAPE,
		    "%s: %s: table of %lld floats has no %lld floats at %s %lld of row %lld", d->op,
		    d->path, (long long)tab->n, (long long)dim, off_key, (long long)*off,
		    (long long)last);
	return DIT_OK;
}

static dit_status dit_attention_dump(dit_dump *d)
{
	dit_mat q = {0}, k = {0}, v = {0}, o = {0};
	float *scratch = NULL;
	int64_t heads, nv;
	dit_status st;
	if ((st = dit_dump_int(d, "heads", 1, 0, &heads)) ||
	    (st = dit_dump_int(d, "lk_valid", 1, 0, &nv)) ||
	    (st = dit_mat_read(d, "q", -1, -1, &q)))
		goto done;
	if (heads <= 0 || q.cols % heads) {
		st = dit_error_set(d->err, DIT_EINVAL, "%s: %s: %lld columns are not %lld heads",
		                   d->op, d->path, (long long)q.cols, (long long)heads);
		goto done;
	}
	if ((st = dit_mat_read(d, "k", -1, q.cols, &k)) ||
	    (st = dit_mat_read(d, "v", k.rows, q.cols, &v)))
		goto done;
	if (nv < 1 || nv > k.rows) {
		st = dit_error_set(d->err, DIT_EINVAL, "%s: %s: lk_valid %lld not in 1..%lld",
		                   d->op, d->path, (long long)nv, (long long)k.rows);
		goto done;
	}
	int64_t hd = q.cols / heads;
	if ((st = dit_mat_new(d, q.rows, q.cols, &o)))
		goto done;
	scratch = malloc(dit_cpu_attention_scratch(hd) * sizeof(float));
	if (!scratch) {
		st = dit_error_set(d->err, DIT_ENOMEM, "%s: out of memory", d->op);
		goto done;
	}
	/* the key count is lk_valid: rows of k and v past it are never read */
	dit_cpu_attention(o.p, o.ld, q.p, q.ld, k.p, k.ld, v.p, v.ld, q.rows, nv, heads, hd,
	                  (float)(1.0 / sqrt((double)hd)), scratch);
	st = dit_mat_write(d, "o", &o);
done:
	free(q.p);
	free(k.p);
	free(v.p);
	free(o.p);
	free(scratch);
	return st;
}

static dit_status dit_rmsnorm_group_dump(dit_dump *d)
{
	dit_mat x = {0};
	float *w = NULL;
	int64_t group;
	double eps;
	dit_status st;
	if ((st = dit_dump_int(d, "group", 1, 0, &group)) || (st = dit_dump_real(d, "eps", &eps)) ||
	    (st = dit_mat_read(d, "x", -1, -1, &x)) ||
	    (st = dit_vec_read(d, "weight", 1, group > 0 ? group : x.cols, &w)))
		goto done;
	dit_cpu_rmsnorm_group(x.p, x.ld, x.rows, x.cols, group, (float)eps, w);
	st = dit_mat_write(d, "x", &x);
done:
	free(x.p);
	free(w);
	return st;
}

static dit_status dit_layernorm_dump(dit_dump *d)
{
	dit_mat x = {0}, y = {0};
	float *w = NULL, *b = NULL, *sh = NULL, *sc = NULL;
	dit_table tab = {0};
	int64_t sh_off = 0, sc_off = 0;
	double eps;
	dit_status st;
	if ((st = dit_dump_real(d, "eps", &eps)) || (st = dit_mat_read(d, "x", -1, -1, &x)))
		goto done;
	int64_t dim = x.cols;
	if ((st = dit_vec_read(d, "weight", 1, dim, &w)) ||
	    (st = dit_vec_read(d, "bias", 1, dim, &b)) ||
	    (st = dit_vec_read(d, "shift", 1, dim, &sh)) ||
	    (st = dit_vec_read(d, "scale", 1, dim, &sc)) || (st = dit_table_read(d, &tab)))
		goto done;
	if (tab.p && ((st = dit_table_off(d, &tab, "shift_off", x.rows, dim, &sh_off)) ||
	              (st = dit_table_off(d, &tab, "scale_off", x.rows, dim, &sc_off))))
		goto done;
	if (!sh != !sc || (tab.p && !sh)) {
		st = dit_error_set(d->err, DIT_EINVAL,
		                   "%s: %s: shift and scale go together, and a table needs them",
		                   d->op, d->path);
		goto done;
	}
	if ((st = dit_mat_new(d, x.rows, dim, &y)))
		goto done;
	dit_cpu_layernorm(y.p, y.ld, x.p, x.ld, x.rows, dim, (float)eps, w, b, sh,
	                  tab.p ? tab.p + sh_off : NULL, sc, tab.p ? tab.p + sc_off : NULL, tab.ld,
	                  tab.mod_rows);
	if (!(st = dit_mat_pad_check(d, "x", &x)))
		st = dit_mat_write(d, "y", &y);
done:
	free(x.p);
	free(y.p);
	free(w);
	free(b);
	free(sh);
	free(sc);
	free(tab.p);
	return st;
}

static dit_status dit_residual_dump(dit_dump *d)
{
	dit_mat x = {0}, y = {0};
	float *g = NULL;
	dit_table tab = {0};
	int64_t off = 0;
	dit_status st;
	if ((st = dit_mat_read(d, "x", -1, -1, &x)) ||
	    (st = dit_mat_read(d, "y", x.rows, x.cols, &y)) ||
	    (st = dit_vec_read(d, "gate", 1, x.cols, &g)) || (st = dit_table_read(d, &tab)) ||
	    (tab.p && (st = dit_table_off(d, &tab, "gate_off", x.rows, x.cols, &off))))
		goto done;
	if (tab.p && !g) {
		st = dit_error_set(d->err, DIT_EINVAL, "%s: %s: a table needs a gate", d->op,
		                   d->path);
		goto done;
	}
	dit_cpu_residual(x.p, x.ld, y.p, y.ld, x.rows, x.cols, g, tab.p ? tab.p + off : NULL,
	                 tab.ld, tab.mod_rows);
	if (!(st = dit_mat_pad_check(d, "y", &y)))
		st = dit_mat_write(d, "x", &x);
done:
	free(x.p);
	free(y.p);
	free(g);
	free(tab.p);
	return st;
}

/* The axes parameter: "wan" (dit_cpu_rope_axes_wan) or three pair counts "A,B,C"
 * adding up to at most head_dim/2. */
static dit_status dit_rope_axes_parse(const dit_dump *d, int64_t head_dim, int64_t axes[3])
{
	const char *s = dit_st_metadata(d->in, "axes");
	if (!s)
		return dit_error_set(d->err, DIT_ENOTFOUND, "%s: %s: no parameter axes", d->op,
		                     d->path);
	if (!strcmp(s, "wan")) {
		dit_cpu_rope_axes_wan(head_dim, axes);
		return DIT_OK;
	}
	const char *p = s;
	int64_t sum = 0;
	for (int a = 0; a < 3; a++) {
		char *end;
		errno = 0;
		long long v = strtoll(p, &end, 10);
		if (errno || end == p || v < 0 || *end != (a < 2 ? ',' : '\0'))
			return dit_error_set(d->err, DIT_EFORMAT,
			                     "%s: %s: axes \"%.40s\" is neither wan nor A,B,C",
			                     d->op, d->path, s);
		axes[a] = v;
		sum += v;
		p = end + 1;
	}
	if (sum > head_dim / 2)
		return dit_error_set(
		    d->err, DIT_EINVAL, "%s: %s: axes add up to %lld pairs, head_dim %lld has %lld",
		    d->op, d->path, (long long)sum, (long long)head_dim, (long long)(head_dim / 2));
	return DIT_OK;
}

static dit_status dit_rope_dump(dit_dump *d)
{
	dit_mat x = {0};
	double *cs = NULL, theta;
	int64_t f, h, w, heads, axes[3];
	dit_status st;
	if ((st = dit_dump_int(d, "f", 1, 0, &f)) || (st = dit_dump_int(d, "h", 1, 0, &h)) ||
	    (st = dit_dump_int(d, "w", 1, 0, &w)) ||
	    (st = dit_dump_int(d, "heads", 1, 0, &heads)) ||
	    (st = dit_dump_real(d, "theta", &theta)))
		goto done;
	if (f < 1 || h < 1 || w < 1 || heads < 1 || theta <= 0.0) {
		st = dit_error_set(d->err, DIT_EINVAL,
		                   "%s: %s: f, h, w, heads and theta must be > 0", d->op, d->path);
		goto done;
	}
	if ((st = dit_mat_read(d, "x", f * h * w, -1, &x)))
		goto done;
	int64_t hd = x.cols / heads;
	if (x.cols % heads || hd % 2) {
		st = dit_error_set(d->err, DIT_EINVAL,
		                   "%s: %s: %lld columns are not %lld heads of an even head_dim",
		                   d->op, d->path, (long long)x.cols, (long long)heads);
		goto done;
	}
	if ((st = dit_rope_axes_parse(d, hd, axes)))
		goto done;
	cs = malloc((size_t)(x.rows * hd > 0 ? x.rows * hd : 1) * sizeof(double));
	if (!cs) {
		st = dit_error_set(d->err, DIT_ENOMEM, "%s: out of memory", d->op);
		goto done;
	}
	dit_cpu_rope_table(cs, f, h, w, hd, theta, axes); /* [f*h*w, hd/2, 2] */
	dit_cpu_rope_apply(x.p, x.ld, x.rows, heads, hd, cs);
	st = dit_mat_write(d, "x", &x);
done:
	free(x.p);
	free(cs);
	return st;
}

static const struct {
	const char *name;
	dit_status (*run)(dit_dump *d);
} dit_dump_ops[] = {
    {"attention", dit_attention_dump}, {"rmsnorm_group", dit_rmsnorm_group_dump},
    {"layernorm", dit_layernorm_dump}, {"residual", dit_residual_dump},
    {"rope", dit_rope_dump},
};

int main(int argc, char **argv)
{
	size_t nops = sizeof(dit_dump_ops) / sizeof(dit_dump_ops[0]), i = 0;
	while (argc == 4 && i < nops && strcmp(argv[1], dit_dump_ops[i].name))
		i++;
	if (argc != 4 || i == nops) {
		fprintf(stderr, "usage: ops_dump attention|rmsnorm_group|layernorm|residual|rope "
		                "IN.safetensors OUT.safetensors\n");
		return 2;
	}
	dit_error err;
	dit_error_clear(&err);
	dit_dump d = {.op = argv[1], .path = argv[2], .err = &err};
	dit_status st = dit_st_open(&d.in, argv[2], &err);
	if (!st)
		st = dit_dump_int(&d, "pad", 0, 0, &d.pad);
	if (!st && d.pad < 0)
		st = dit_error_set(&err, DIT_EINVAL, "%s: %s: pad must be >= 0", d.op, d.path);
	if (!st && !(d.out = dit_st_writer_new()))
		st = dit_error_set(&err, DIT_ENOMEM, "%s: out of memory", d.op);
	if (!st)
		st = dit_dump_ops[i].run(&d);
	if (!st)
		st = dit_st_writer_commit(d.out, argv[3], &err);
	dit_st_writer_free(d.out);
	dit_st_close(d.in);
	if (st) {
		fprintf(stderr, "ops_dump: %s\n", err.msg);
		return 1;
	}
	return 0;
}
