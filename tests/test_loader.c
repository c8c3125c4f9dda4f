/* Tests of the safetensors reader and writer, checkpoint directories and config.json.
 * Standalone (no StarPU); prints TAP and exits 0 only when every test passes.
 * DIT_TEST_FUZZ_ITERS sets the number of corrupted files tried (default 3000);
 * DIT_TEST_VERBOSE prints each expected error message as a TAP comment. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "dit_checkpoint.h"
#include "dit_release.h"
#include "dit_safetensors.h"
#include "dit_wan.h"

#define PATH_BUF 4096

struct tap {
	int n;
	int failed;
	int verbose; /* DIT_TEST_VERBOSE: show each expected error message */
};

static void tap_result(struct tap *t, int ok, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Reports one test; fmt (a reason) is printed only on failure. */
static void tap_result(struct tap *t, int ok, const char *name, const char *fmt, ...)
{
	t->n++;
	if (ok) {
		printf("ok %d - %s\n", t->n, name);
	} else {
		char msg[1024] = "";
		if (fmt) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(msg, sizeof msg, fmt, ap);
			va_end(ap);
		}
		for (char *c = msg; *c; c++) {
			if (*c == '\n')
				*c = ' ';
		}
		printf("not ok %d - %s: %s\n", t->n, name, msg);
		t->failed++;
	}
	fflush(stdout);
}

/* ---- small file helpers ---- */

static void path_join(char *out, const char *dir, const char *name)
{
	int n = snprintf(out, PATH_BUF, "%s/%s", dir, name);
	if (n < 0 || n >= PATH_BUF) {
		fprintf(stderr, "path too long: %s/%s\n", dir, name);
		exit(2);
	}
}

static int write_bytes(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	const char *p = buf;
	while (len > 0) {
		ssize_t r = write(fd, p, len);
		if (r <= 0) {
			close(fd);
			return -1;
		}
		p += r;
		len -= (size_t)r;
	}
	return close(fd);
}

static int write_text(const char *path, const char *text)
{
	return write_bytes(path, text, strlen(text));
}

static uint8_t *read_bytes(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			uint8_t *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		if (r == 0)
			break;
		n += r;
	}
	fclose(f);
	*len = n;
	return buf;
}

static int make_dir(const char *dir, const char *name, char *out)
{
	path_join(out, dir, name);
	return mkdir(out, 0755);
}

static void rm_rf(const char *path)
{
	struct stat sb;
	if (lstat(path, &sb) != 0)
		return;
	if (S_ISDIR(sb.st_mode)) {
		DIR *d = opendir(path);
		if (d) {
			struct dirent *de;
			while ((de = readdir(d)) != NULL) {
				if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
					continue;
				char sub[PATH_BUF];
				path_join(sub, path, de->d_name);
				rm_rf(sub);
			}
			closedir(d);
		}
		rmdir(path);
	} else {
		unlink(path);
	}
}

/* Entries of dir whose name holds ".tmp." (leftover temporary files). */
static int count_tmp(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strstr(de->d_name, ".tmp."))
			n++;
	}
	closedir(d);
	return n;
}

/* Lowers the file size limit so that writes past `bytes` fail with EFBIG, the way a
 * full disk makes them fail; returns 0 when the limit is in place. */
struct fsize_guard {
	struct rlimit old;
	void (*sig)(int);
};

static int fsize_limit(struct fsize_guard *g, rlim_t bytes)
{
	if (getrlimit(RLIMIT_FSIZE, &g->old) != 0)
		return -1;
	struct rlimit lim = g->old;
	if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < bytes)
		return -1;
	lim.rlim_cur = bytes;
	fflush(stdout);
	g->sig = signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &lim) != 0) {
		signal(SIGXFSZ, g->sig);
		return -1;
	}
	return 0;
}

static void fsize_restore(struct fsize_guard *g)
{
	setrlimit(RLIMIT_FSIZE, &g->old);
	signal(SIGXFSZ, g->sig);
}

/* ---- byte buffers for hand-built files ---- */

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static void buf_put(struct buf *b, const void *src, size_t len)
{
	if (b->n + len > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + len)
			cap *= 2;
		uint8_t *np = realloc(b->p, cap);
		if (!np) {
			fprintf(stderr, "out of memory\n");
			exit(2);
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, src, len);
	b->n += len;
}

static void buf_le(struct buf *b, uint64_t v, int bytes)
{
	uint8_t tmp[8];
	for (int i = 0; i < bytes; i++)
		tmp[i] = (uint8_t)(v >> (8 * i));
	buf_put(b, tmp, (size_t)bytes);
}

/* A safetensors file built by hand: u64 length, header text, data. */
static void buf_st(struct buf *b, const char *header, const void *data, size_t dlen)
{
	b->n = 0;
	buf_le(b, strlen(header), 8);
	buf_put(b, header, strlen(header));
	if (dlen)
		buf_put(b, data, dlen);
}

static int same_bits(float a, float b)
{
	uint32_t x, y;
	memcpy(&x, &a, 4);
	memcpy(&y, &b, 4);
	return x == y;
}

/* Expected float check: NaN matches any NaN; everything else must match bit for bit
 * (so -0 differs from +0). */
static int same_float(float got, float want)
{
	if (want != want)
		return got != got;
	return same_bits(got, want);
}

/* Checks a failure: the status, that err agrees, and that the one-line message holds
 * need1 and need2 (when not NULL). */
static void expect_err(struct tap *t, const char *name, dit_status got, const dit_error *e,
                       dit_status want, const char *need1, const char *need2)
{
	if (got != want) {
		tap_result(t, 0, name, "status %s, want %s (%s)", dit_status_str(got),
		           dit_status_str(want), e->msg);
		return;
	}
	if (e->code != want) {
		tap_result(t, 0, name, "err.code %d, want %d", (int)e->code, (int)want);
		return;
	}
	if (strchr(e->msg, '\n') || e->msg[0] == '\0') {
		tap_result(t, 0, name, "message is empty or not one line: '%s'", e->msg);
		return;
	}
	if (need1 && !strstr(e->msg, need1)) {
		tap_result(t, 0, name, "message '%s' lacks '%s'", e->msg, need1);
		return;
	}
	if (need2 && !strstr(e->msg, need2)) {
		tap_result(t, 0, name, "message '%s' lacks '%s'", e->msg, need2);
		return;
	}
	tap_result(t, 1, name, NULL);
	if (t->verbose)
		printf("# %s\n", e->msg);
}

/* ---- safetensors: writer round trip ---- */

static void test_roundtrip(struct tap *t, const char *dir)
{
	char path[PATH_BUF];
	path_join(path, dir, "rt.safetensors");
	dit_error e;
	dit_error_clear(&e);

	float w[6] = {1.0f, 0.0f, 0x1p-149f, INFINITY, -0.0f, 1.0f / 3.0f};
	uint32_t nanbits = 0x7fc01234u;
	memcpy(&w[1], &nanbits, 4); /* a NaN with a payload must survive too */
	float bias[3] = {0.1f, -FLT_MAX, FLT_MIN};
	float s = 42.5f;
	int64_t shw[2] = {2, 3}, shb[1] = {3}, she[2] = {0, 4};

	dit_st_writer *wr = dit_st_writer_new();
	int ok = wr != NULL;
	ok = ok && dit_st_writer_add_f32(wr, "b.weight", 2, shw, w, &e) == DIT_OK;
	ok = ok && dit_st_writer_add_f32(wr, "a.bias", 1, shb, bias, &e) == DIT_OK;
	ok = ok && dit_st_writer_add_f32(wr, "s", 0, NULL, &s, &e) == DIT_OK;
	ok = ok && dit_st_writer_add_f32(wr, "e", 2, she, NULL, &e) == DIT_OK;
	ok = ok && dit_st_writer_set_metadata(wr, "format", "pt", &e) == DIT_OK;
	ok = ok && dit_st_writer_set_metadata(wr, "format", "ditstar", &e) == DIT_OK;
	ok = ok && dit_st_writer_set_metadata(wr, "note", "a \"quoted\" value", &e) == DIT_OK;
	w[0] = 99.0f; /* the writer copied the data at add time */
	ok = ok && dit_st_writer_commit(wr, path, &e) == DIT_OK;
	w[0] = 1.0f;
	tap_result(t, ok, "writer: add four tensors, metadata, commit", "%s", e.msg);

	/* the same writer may be given more bad input without harm */
	dit_status st = dit_st_writer_add_f32(wr, "s", 0, NULL, &s, &e);
	expect_err(t, "writer: duplicate name rejected", st, &e, DIT_EINVAL, "tensor 's'", NULL);
	int64_t neg[1] = {-1};
	st = dit_st_writer_add_f32(wr, "neg", 1, neg, w, &e);
	expect_err(t, "writer: negative dim rejected", st, &e, DIT_EINVAL, "tensor 'neg'", NULL);
	int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
	st = dit_st_writer_add_f32(wr, "nine", 9, nine, w, &e);
	expect_err(t, "writer: 9 dims rejected", st, &e, DIT_EINVAL, "tensor 'nine'", NULL);
	st = dit_st_writer_add_f32(wr, "__metadata__", 1, shb, w, &e);
	expect_err(t, "writer: __metadata__ as a name rejected", st, &e, DIT_EINVAL, NULL, NULL);
	st = dit_st_writer_add_f32(wr, "nodata", 1, shb, NULL, &e);
	expect_err(t, "writer: NULL data rejected", st, &e, DIT_EINVAL, "tensor 'nodata'", NULL);
	st = dit_st_writer_add_f32(wr, "bad\xff", 1, shb, w, &e);
	expect_err(t, "writer: non-UTF-8 name rejected", st, &e, DIT_EINVAL, NULL, NULL);
	dit_st_writer_free(wr);

	dit_st_file *f = NULL;
	st = dit_st_open(&f, path, &e);
	tap_result(t, st == DIT_OK && f, "reader: open the written file", "%s", e.msg);
	if (!f)
		return;

	ok = f->ntensors == 4 && strcmp(f->tensors[0].name, "a.bias") == 0 &&
	     strcmp(f->tensors[1].name, "b.weight") == 0 && strcmp(f->tensors[2].name, "e") == 0 &&
	     strcmp(f->tensors[3].name, "s") == 0;
	tap_result(t, ok, "reader: four tensors sorted by name", "ntensors %zu", f->ntensors);

	const dit_st_tensor *tw = dit_st_find(f, "b.weight"), *tb = dit_st_find(f, "a.bias");
	const dit_st_tensor *ts = dit_st_find(f, "s"), *te = dit_st_find(f, "e");
	ok = tw && tb && ts && te && !dit_st_find(f, "missing") && !dit_st_find(f, "") &&
	     !dit_st_find(f, "zzz") && !dit_st_find(f, "a");
	tap_result(t, ok, "reader: find present and absent names", NULL);
	if (!ok) {
		dit_st_close(f);
		return;
	}
	ok = tw->dtype == DIT_DTYPE_F32 && tw->ndim == 2 && tw->shape[0] == 2 &&
	     tw->shape[1] == 3 && tw->numel == 6 && tw->nbytes == 24 && tb->ndim == 1 &&
	     tb->shape[0] == 3 && ts->ndim == 0 && ts->numel == 1 && te->ndim == 2 &&
	     te->shape[0] == 0 && te->shape[1] == 4 && te->numel == 0 && te->nbytes == 0;
	tap_result(t, ok, "reader: dtypes and shapes (matrix, vector, scalar, empty)", NULL);
	ok = tw->offset == 0 && tb->offset == 24 && ts->offset == 36 && te->offset == 40 &&
	     f->data_size == 40;
	tap_result(t, ok, "writer: data offsets follow insertion order", "offsets %llu %llu %llu",
	           (unsigned long long)tw->offset, (unsigned long long)tb->offset,
	           (unsigned long long)ts->offset);
	tap_result(t, f->data_pos % 8 == 0 && f->fd >= 0 && !f->data,
	           "writer: data section 8-byte aligned", NULL);

	float rw[6], rb[3], rs = 0.0f;
	ok = dit_st_read_f32(f, tw, rw, &e) == DIT_OK && dit_st_read_f32(f, tb, rb, &e) == DIT_OK &&
	     dit_st_read_f32(f, ts, &rs, &e) == DIT_OK &&
	     dit_st_read_f32(f, te, NULL, &e) == DIT_OK;
	ok = ok && memcmp(rw, w, sizeof w) == 0 && memcmp(rb, bias, sizeof bias) == 0 &&
	     same_bits(rs, s);
	tap_result(t, ok, "round trip: F32 values bit-exact", "%s", e.msg);

	/* the metadata, checked straight from the header */
	size_t flen = 0;
	uint8_t *fbytes = read_bytes(path, &flen);
	char *htext = NULL;
	if (fbytes && flen >= f->data_pos && f->data_pos >= 8) {
		htext = calloc(1, (size_t)f->data_pos - 7);
		if (htext)
			memcpy(htext, fbytes + 8, (size_t)f->data_pos - 8);
	}
	free(fbytes);
	struct json_object *root = htext ? json_tokener_parse(htext) : NULL;
	struct json_object *meta = NULL, *v = NULL;
	ok = root && json_object_object_get_ex(root, "__metadata__", &meta) &&
	     json_object_object_get_ex(meta, "format", &v) &&
	     strcmp(json_object_get_string(v), "ditstar") == 0 &&
	     json_object_object_get_ex(meta, "note", &v) &&
	     strcmp(json_object_get_string(v), "a \"quoted\" value") == 0;
	json_object_put(root);
	tap_result(t, ok, "writer: metadata stored (last value wins)", NULL);

	/* the header text is padded with spaces only */
	const char *h = htext ? htext : "";
	size_t end = htext ? (size_t)f->data_pos - 8 : 0;
	while (end > 0 && h[end - 1] == ' ')
		end--;
	tap_result(t, end > 0 && h[end - 1] == '}', "writer: header padded with spaces", NULL);
	free(htext);

	tap_result(t, count_tmp(dir) == 0, "writer: no temporary file left after commit", NULL);

	/* read_f32 refuses a tensor of another file */
	dit_st_tensor fake = *tw;
	st = dit_st_read_f32(f, &fake, rw, &e);
	expect_err(t, "reader: foreign tensor pointer rejected", st, &e, DIT_EINVAL, path, NULL);
	dit_st_close(f);
}

static void test_writer_failures(struct tap *t, const char *dir)
{
	char path[PATH_BUF], sub[PATH_BUF];
	dit_error e;
	float x[2] = {1, 2};
	int64_t sh[1] = {2};
	dit_st_writer *w = dit_st_writer_new();
	dit_st_writer_add_f32(w, "x", 1, sh, x, &e);

	path_join(path, dir, "no-such-dir/out.safetensors");
	dit_status st = dit_st_writer_commit(w, path, &e);
	expect_err(t, "writer: commit into a missing directory fails", st, &e, DIT_EIO, path, NULL);
	tap_result(t, count_tmp(dir) == 0, "writer: no temporary file left after failed commit",
	           NULL);

	/* a directory is never replaced: refused by kind, naming it */
	make_dir(dir, "occupied", sub);
	st = dit_st_writer_commit(w, sub, &e);
	expect_err(t, "writer: commit onto a directory is refused", st, &e, DIT_EINVAL, sub,
	           "is a directory");
	tap_result(t, count_tmp(dir) == 0, "writer: temporary file removed after failed rename",
	           "%d left", count_tmp(dir));
	rmdir(sub);

	st = dit_st_writer_commit(w, "", &e);
	expect_err(t, "writer: empty path rejected", st, &e, DIT_EINVAL, NULL, NULL);
	dit_st_writer_free(w);

	/* a write that fails midway (file size limit standing in for a full disk) */
	float big[1024] = {0};
	int64_t shbig[1] = {1024};
	w = dit_st_writer_new();
	dit_st_writer_add_f32(w, "big", 1, shbig, big, &e);
	path_join(path, dir, "too-big.safetensors");
	struct fsize_guard g;
	if (fsize_limit(&g, 1000) == 0) {
		st = dit_st_writer_commit(w, path, &e);
		fsize_restore(&g);
		expect_err(t, "writer: failed write reported", st, &e, DIT_EIO, path,
		           "write failed");
		struct stat sb;
		tap_result(t, count_tmp(dir) == 0 && stat(path, &sb) != 0,
		           "writer: nothing left behind after a failed write", NULL);
	} else {
		tap_result(t, 1, "writer: failed write reported # SKIP cannot set RLIMIT_FSIZE",
		           NULL);
		tap_result(t, 1, "writer: nothing left behind after a failed write # SKIP", NULL);
	}
	dit_st_writer_free(w);

	/* an empty writer makes a valid file with no tensors */
	w = dit_st_writer_new();
	path_join(path, dir, "empty.safetensors");
	st = dit_st_writer_commit(w, path, &e);
	dit_st_writer_free(w);
	dit_st_file *f = NULL;
	int ok = st == DIT_OK && dit_st_open(&f, path, &e) == DIT_OK && f->ntensors == 0 &&
	         !dit_st_find(f, "x");
	tap_result(t, ok, "writer: empty file round trip", "%s", e.msg);
	dit_st_close(f);
	unlink(path);
}

/* ---- safetensors: hand-built F16/BF16/F64 files ---- */

static const uint16_t f16_in[] = {0x0000, 0x8000, 0x3c00, 0xc000, 0x0001, 0x8001, 0x03ff, 0x0200,
                                  0x0400, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0x3555, 0xfbff};
#define N16 (sizeof f16_in / sizeof f16_in[0])
static const uint16_t bf16_in[] = {0x3f80, 0x8000, 0x0001, 0x807f, 0x7f80, 0xff80,
                                   0x7fc0, 0xc040, 0x4049, 0x7f7f, 0x0000, 0xffc1};
#define NB16 (sizeof bf16_in / sizeof bf16_in[0])
static const double f64_in[] = {1.5,
                                -0.0,
                                0x1p-140,
                                1e300,
                                -1e300,
                                INFINITY,
                                -INFINITY,
                                NAN,
                                0x1.fffffep127,
                                0x1.ffffffp127,
                                0x1.fffffefffffffp127,
                                1e-50,
                                0.1,
                                0x1p-150,
                                -0x1.8p-149,
                                -123456.789};
#define N64 (sizeof f64_in / sizeof f64_in[0])

/* Builds (in b) a file with tensors h (F16), b (BF16), d (F64) and f (F32), whose data
 * section starts at an odd offset so that every load is unaligned. */
static void build_mixed(struct buf *b)
{
	char header[1024];
	size_t o16 = 0, ob = o16 + 2 * N16, od = ob + 2 * NB16, of = od + 8 * N64, oe = of + 8;
	int n = snprintf(header, sizeof header,
	                 "{\"h\":{\"dtype\":\"F16\",\"shape\":[2,%zu],\"data_offsets\":[%zu,%zu]},"
	                 "\"b\":{\"dtype\":\"BF16\",\"shape\":[%zu],\"data_offsets\":[%zu,%zu]},"
	                 "\"d\":{\"dtype\":\"F64\",\"shape\":[%zu,1],\"data_offsets\":[%zu,%zu]},"
	                 "\"f\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[%zu,%zu]},"
	                 "\"__metadata__\":{\"format\":\"pt\"}}",
	                 N16 / 2, o16, ob, NB16, ob, od, N64, od, of, of, oe);
	if ((8 + n) % 2 == 0)
		strcat(header, " ");
	struct buf data = {0};
	for (size_t i = 0; i < N16; i++)
		buf_le(&data, f16_in[i], 2);
	for (size_t i = 0; i < NB16; i++)
		buf_le(&data, bf16_in[i], 2);
	for (size_t i = 0; i < N64; i++) {
		uint64_t bits;
		memcpy(&bits, &f64_in[i], 8);
		buf_le(&data, bits, 8);
	}
	float fv[2] = {1.25f, -7.5f};
	for (size_t i = 0; i < 2; i++) {
		uint32_t bits;
		memcpy(&bits, &fv[i], 4);
		buf_le(&data, bits, 4);
	}
	buf_st(b, header, data.p, data.n);
	free(data.p);
}

static void test_dtypes(struct tap *t, const char *dir)
{
	const float f16_want[N16] = {
	    0.0f,     -0.0f,    1.0f,     -2.0f,     0x1p-24f, -0x1p-24f, 0x3ffp-24f,  0x1p-15f,
	    0x1p-14f, 65504.0f, INFINITY, -INFINITY, NAN,      NAN,       0x1.554p-2f, -65504.0f};
	const float bf16_want[NB16] = {1.0f, -0.0f, 0x1p-133f, -0x7fp-133f, INFINITY, -INFINITY,
	                               NAN,  -3.0f, 3.140625f, 0x1.fep127f, 0.0f,     NAN};
	const float f64_want[N64] = {1.5f,      -0.0f, 0x1p-140f,  INFINITY,    -INFINITY, INFINITY,
	                             -INFINITY, NAN,   FLT_MAX,    INFINITY,    FLT_MAX,   0.0f,
	                             0.1f,      0.0f,  -0x1p-148f, -123456.789f};
	char path[PATH_BUF];
	path_join(path, dir, "mixed.safetensors");
	struct buf b = {0};
	build_mixed(&b);
	write_bytes(path, b.p, b.n);
	free(b.p);

	dit_error e;
	dit_st_file *f = NULL;
	dit_status st = dit_st_open(&f, path, &e);
	tap_result(t, st == DIT_OK && f && f->ntensors == 4,
	           "hand-built: F16/BF16/F64/F32 file opens, metadata skipped", "%s", e.msg);
	if (!f)
		return;
	tap_result(t, (f->data_pos & 1) == 1, "hand-built: data section is unaligned", NULL);

	const dit_st_tensor *th = dit_st_find(f, "h"), *tb = dit_st_find(f, "b");
	const dit_st_tensor *td = dit_st_find(f, "d"), *tf = dit_st_find(f, "f");
	int ok = th && tb && td && tf && th->dtype == DIT_DTYPE_F16 &&
	         tb->dtype == DIT_DTYPE_BF16 && td->dtype == DIT_DTYPE_F64 &&
	         tf->dtype == DIT_DTYPE_F32 && th->ndim == 2 && th->numel == (int64_t)N16 &&
	         td->shape[1] == 1 && !dit_st_find(f, "__metadata__");
	tap_result(t, ok, "hand-built: dtypes and shapes", NULL);
	if (!ok) {
		dit_st_close(f);
		return;
	}

	float out[64];
	int bad = -1;
	st = dit_st_read_f32(f, th, out, &e);
	for (size_t i = 0; st == DIT_OK && i < N16 && bad < 0; i++)
		if (!same_float(out[i], f16_want[i]))
			bad = (int)i;
	tap_result(t, st == DIT_OK && bad < 0, "F16 -> F32: zeros, subnormals, inf, NaN, max",
	           "element %d (0x%04x) gave %a", bad, bad >= 0 ? f16_in[bad] : 0,
	           bad >= 0 ? (double)out[bad] : 0.0);

	bad = -1;
	st = dit_st_read_f32(f, tb, out, &e);
	for (size_t i = 0; st == DIT_OK && i < NB16 && bad < 0; i++)
		if (!same_float(out[i], bf16_want[i]))
			bad = (int)i;
	tap_result(t, st == DIT_OK && bad < 0, "BF16 -> F32: zeros, subnormals, inf, NaN",
	           "element %d gave %a", bad, bad >= 0 ? (double)out[bad] : 0.0);

	bad = -1;
	st = dit_st_read_f32(f, td, out, &e);
	for (size_t i = 0; st == DIT_OK && i < N64 && bad < 0; i++)
		if (!same_float(out[i], f64_want[i]))
			bad = (int)i;
	tap_result(t, st == DIT_OK && bad < 0,
	           "F64 -> F32: rounding, overflow to inf, underflow, subnormal, NaN",
	           "element %d (%a) gave %a", bad, bad >= 0 ? f64_in[bad] : 0.0,
	           bad >= 0 ? (double)out[bad] : 0.0);

	st = dit_st_read_f32(f, tf, out, &e);
	tap_result(t, st == DIT_OK && out[0] == 1.25f && out[1] == -7.5f,
	           "F32 from an unaligned offset", "%s", e.msg);
	dit_st_close(f);
}

/* ---- safetensors: images in memory ---- */

static void test_open_mem(struct tap *t, const char *dir)
{
	char src[PATH_BUF];
	path_join(src, dir, "rt.safetensors");
	size_t len = 0;
	uint8_t *bytes = read_bytes(src, &len);
	if (!bytes) {
		tap_result(t, 0, "open_mem: source file", "cannot read %s", src);
		return;
	}
	dit_error e;
	dit_error_clear(&e);
	dit_st_file *ff = NULL, *fm = NULL;
	dit_status sf = dit_st_open(&ff, src, &e);
	dit_status sm = dit_st_open_mem(&fm, "image.safetensors", bytes, len, &e);
	int ok = sf == DIT_OK && sm == DIT_OK && ff->ntensors == fm->ntensors &&
	         strcmp(fm->path, "image.safetensors") == 0 && fm->data > bytes &&
	         fm->data + fm->data_size == bytes + len;
	for (size_t i = 0; ok && i < fm->ntensors; i++) {
		const dit_st_tensor *a = &ff->tensors[i], *b = &fm->tensors[i];
		size_t n = (size_t)a->numel;
		float *x = malloc(n * sizeof(float) + 1), *y = malloc(n * sizeof(float) + 1);
		ok = x && y && strcmp(a->name, b->name) == 0 && a->nbytes == b->nbytes &&
		     dit_st_read_f32(ff, a, x, &e) == DIT_OK &&
		     dit_st_read_f32(fm, b, y, &e) == DIT_OK &&
		     memcmp(x, y, n * sizeof(float)) == 0;
		free(x);
		free(y);
	}
	tap_result(t, ok, "open_mem: same tensors and values as the file, data not copied", "%s",
	           e.msg);
	uint8_t *copy = malloc(len);
	if (copy)
		memcpy(copy, bytes, len);
	dit_st_close(ff);
	dit_st_close(fm);
	tap_result(t, copy && memcmp(copy, bytes, len) == 0,
	           "open_mem: dit_st_close leaves the image to the caller, unchanged", NULL);
	free(copy);

	uint8_t *longer = malloc(len + 1);
	if (longer) {
		memcpy(longer, bytes, len);
		longer[len] = 0;
		fm = &(dit_st_file){0};
		sm = dit_st_open_mem(&fm, "mem-image", longer, len + 1, &e);
		tap_result(
		    t,
		    sm == DIT_EFORMAT && fm == NULL && strstr(e.msg, "mem-image: ") == e.msg &&
		        strstr(e.msg, "trailing bytes"),
		    "open_mem: a trailing byte is refused, message names the image", "%s", e.msg);
		free(longer);
	}
	sm = dit_st_open_mem(&fm, "empty-image", NULL, 0, &e);
	tap_result(t,
	           sm == DIT_EFORMAT && strstr(e.msg, "empty-image") && strstr(e.msg, "truncated"),
	           "open_mem: an empty image is truncated", "%s", e.msg);
	sm = dit_st_open_mem(&fm, NULL, bytes, len, &e);
	tap_result(t, sm == DIT_EINVAL, "open_mem: NULL name is DIT_EINVAL", "%s", e.msg);
	free(bytes);
}

/* ---- safetensors: malformed files ---- */

/* Writes bytes to dir/name, opens it and expects failure with want; the message must
 * name the file, and the tensor and extra text when given. */
/* The format's other dtypes (BOOL, I8, U8, ...: flags, indices, packed codes beside the
 * weights) do not refuse the file; they read as numbers, and are no dtype of weights
 * (the weight loader refuses one naming it). */
static void other_dtypes(struct tap *t, const char *dir)
{
	const char *h = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
	                "\"flag\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[8,10]},"
	                "\"idx\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[10,12]},"
	                "\"bytes\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[12,16]},"
	                "\"big\":{\"dtype\":\"U64\",\"shape\":[1],\"data_offsets\":[16,24]}}";
	float w[2] = {1.5f, -2.0f};
	uint8_t data[24] = {0};
	memcpy(data, w, sizeof w);
	data[8] = 7;     /* a true */
	data[10] = 0xfe; /* -2 */
	data[16] = 5;    /* 5 */
	struct buf b = {0};
	buf_st(&b, h, data, sizeof data);
	char path[PATH_BUF];
	path_join(path, dir, "other-dtypes.safetensors");
	write_bytes(path, b.p, b.n);
	free(b.p);
	dit_error e;
	dit_error_clear(&e);
	dit_st_file *f = NULL;
	dit_status st = dit_st_open(&f, path, &e);
	tap_result(t, st == DIT_OK && f->ntensors == 5,
	           "safetensors: BOOL, I8, U8, U64 tensors beside the weights open", "%s", e.msg);
	float got[2] = {0}, flag[2] = {0}, idx[2] = {0}, big = 0;
	const dit_st_tensor *tw = f ? dit_st_find(f, "w") : NULL,
	                    *tf = f ? dit_st_find(f, "flag") : NULL,
	                    *ti = f ? dit_st_find(f, "idx") : NULL,
	                    *tb = f ? dit_st_find(f, "big") : NULL;
	tap_result(t,
	           tw && tf && ti && tb && dit_st_read_f32(f, tw, got, &e) == DIT_OK &&
	               got[0] == 1.5f && dit_st_read_f32(f, tf, flag, &e) == DIT_OK &&
	               flag[0] == 1 && flag[1] == 0 && dit_st_read_f32(f, ti, idx, &e) == DIT_OK &&
	               idx[0] == -2 && dit_st_read_f32(f, tb, &big, &e) == DIT_OK && big == 5,
	           "safetensors: ... each reads as numbers (BOOL 0/1, I8 signed)", "%s", e.msg);
	tap_result(t,
	           tw && tf && dit_dtype_is_weight(tw->dtype) && !dit_dtype_is_weight(tf->dtype) &&
	               !dit_dtype_is_weight(DIT_DTYPE_U8) && !dit_dtype_is_weight(DIT_DTYPE_U64),
	           "safetensors: F32 is a dtype of weights, BOOL, U8, U64 are not", NULL);
	dit_st_close(f);
}

static void expect_bad_bytes(struct tap *t, const char *dir, const char *name, const void *bytes,
                             size_t len, dit_status want, const char *tensor, const char *extra)
{
	char path[PATH_BUF], tq[256], tname[300];
	path_join(path, dir, name);
	write_bytes(path, bytes, len);
	dit_error e;
	dit_error_clear(&e);
	dit_st_file sentinel;
	dit_st_file *f = &sentinel; /* must be reset to NULL */
	dit_status st = dit_st_open(&f, path, &e);
	snprintf(tname, sizeof tname, "malformed: %s", name);
	if (st == DIT_OK) {
		tap_result(t, 0, tname, "opened without error");
		dit_st_close(f);
		return;
	}
	if (f != NULL) {
		tap_result(t, 0, tname, "*out not NULL after failure");
		return;
	}
	if (tensor)
		snprintf(tq, sizeof tq, "(tensor '%s')", tensor);
	if (tensor && extra && !strstr(e.msg, extra)) {
		tap_result(t, 0, tname, "message '%s' lacks '%s'", e.msg, extra);
		return;
	}
	expect_err(t, tname, st, &e, want, path, tensor ? tq : extra);
	unlink(path);
}

static void expect_bad_header(struct tap *t, const char *dir, const char *name, const char *header,
                              size_t dlen, dit_status want, const char *tensor, const char *extra)
{
	uint8_t data[64] = {0};
	struct buf b = {0};
	buf_st(&b, header, data, dlen);
	expect_bad_bytes(t, dir, name, b.p, b.n, want, tensor, extra);
	free(b.p);
}

#define T1(dt, shape, offs)                                                                        \
	"{\"t\":{\"dtype\":" dt ",\"shape\":" shape ",\"data_offsets\":" offs "}}"

static void test_malformed(struct tap *t, const char *dir)
{
	const uint8_t five[5] = {1, 2, 3, 4, 5};
	expect_bad_bytes(t, dir, "empty-file", five, 0, DIT_EFORMAT, NULL, "truncated");
	expect_bad_bytes(t, dir, "shorter-than-8", five, 5, DIT_EFORMAT, NULL, "truncated");

	struct buf b = {0};
	buf_le(&b, 0, 8);
	buf_put(&b, "{}", 2);
	expect_bad_bytes(t, dir, "header-length-0", b.p, b.n, DIT_EFORMAT, NULL,
	                 "below the 2-byte minimum");
	b.n = 0;
	buf_le(&b, 100, 8);
	buf_put(&b, "{}", 2);
	expect_bad_bytes(t, dir, "header-length-past-end", b.p, b.n, DIT_EFORMAT, NULL,
	                 "truncated");
	b.n = 0;
	buf_le(&b, (uint64_t)1 << 40, 8);
	buf_put(&b, "{}", 2);
	expect_bad_bytes(t, dir, "header-length-absurd", b.p, b.n, DIT_EFORMAT, NULL, "limit");
	b.n = 0;
	buf_le(&b, ~(uint64_t)0, 8);
	buf_put(&b, "{}", 2);
	expect_bad_bytes(t, dir, "header-length-max", b.p, b.n, DIT_EFORMAT, NULL, NULL);

	expect_bad_header(t, dir, "not-json", "{not json}", 0, DIT_EFORMAT, NULL, "JSON");
	expect_bad_header(t, dir, "json-array", "[1,2]", 0, DIT_EFORMAT, NULL, "not an object");
	expect_bad_header(t, dir, "json-number", "12", 0, DIT_EFORMAT, NULL, "JSON");
	expect_bad_header(t, dir, "json-cut", "{\"t\":{\"dtype\":", 0, DIT_EFORMAT, NULL, "JSON");
	expect_bad_header(t, dir, "trailing-garbage", "{} x", 0, DIT_EFORMAT, NULL, "trailing");
	expect_bad_header(t, dir, "single-quotes", "{'t':1}", 0, DIT_EFORMAT, NULL, NULL);
	expect_bad_header(t, dir, "bad-utf8", "{\"\xc3\x28\":1}", 0, DIT_EFORMAT, NULL, NULL);
	expect_bad_header(t, dir, "entry-not-object", "{\"t\":3}", 0, DIT_EFORMAT, "t",
	                  "not a JSON object");
	expect_bad_header(t, dir, "dtype-missing", "{\"t\":{\"shape\":[2],\"data_offsets\":[0,8]}}",
	                  8, DIT_EFORMAT, "t", "dtype");
	expect_bad_header(t, dir, "dtype-not-string", T1("5", "[2]", "[0,8]"), 8, DIT_EFORMAT, "t",
	                  "dtype");
	other_dtypes(t, dir);
	expect_bad_header(t, dir, "dtype-unknown", T1("\"Q4\\n\"", "[1]", "[0,8]"), 8,
	                  DIT_EUNSUPPORTED, "t", "Q4");
	expect_bad_header(t, dir, "shape-missing",
	                  "{\"t\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, DIT_EFORMAT, "t",
	                  "shape");
	expect_bad_header(t, dir, "shape-not-array", T1("\"F32\"", "2", "[0,8]"), 8, DIT_EFORMAT,
	                  "t", "shape");
	expect_bad_header(t, dir, "shape-string-dim", T1("\"F32\"", "[\"2\"]", "[0,8]"), 8,
	                  DIT_EFORMAT, "t", "shape");
	expect_bad_header(t, dir, "shape-float-dim", T1("\"F32\"", "[2.0]", "[0,8]"), 8,
	                  DIT_EFORMAT, "t", "shape");
	expect_bad_header(t, dir, "shape-negative", T1("\"F32\"", "[-2]", "[0,8]"), 8, DIT_EFORMAT,
	                  "t", "negative");
	expect_bad_header(t, dir, "shape-9-dims", T1("\"F32\"", "[1,1,1,1,1,1,1,1,2]", "[0,8]"), 8,
	                  DIT_EUNSUPPORTED, "t", "dimensions");
	expect_bad_header(t, dir, "shape-numel-overflow",
	                  T1("\"F32\"", "[4294967296,4294967296]", "[0,8]"), 8, DIT_EFORMAT, "t",
	                  "overflow");
	expect_bad_header(t, dir, "shape-bytes-overflow",
	                  T1("\"F64\"", "[2305843009213693952]", "[0,8]"), 8, DIT_EFORMAT, "t",
	                  "overflow");
	expect_bad_header(t, dir, "shape-dim-huge",
	                  T1("\"F32\"", "[99999999999999999999]", "[0,8]"), 8, DIT_EFORMAT, "t",
	                  NULL);
	expect_bad_header(t, dir, "offsets-missing", "{\"t\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8,
	                  DIT_EFORMAT, "t", "data_offsets");
	expect_bad_header(t, dir, "offsets-three", T1("\"F32\"", "[2]", "[0,8,8]"), 8, DIT_EFORMAT,
	                  "t", "data_offsets");
	expect_bad_header(t, dir, "offsets-not-int", T1("\"F32\"", "[2]", "[0,\"8\"]"), 8,
	                  DIT_EFORMAT, "t", "data_offsets");
	expect_bad_header(t, dir, "offsets-negative", T1("\"F32\"", "[0]", "[-4,-4]"), 8,
	                  DIT_EFORMAT, "t", "negative");
	expect_bad_header(t, dir, "offsets-begin-after-end", T1("\"F32\"", "[2]", "[8,0]"), 8,
	                  DIT_EFORMAT, "t", "after");
	expect_bad_header(t, dir, "offsets-past-data", T1("\"F32\"", "[2]", "[8,16]"), 8,
	                  DIT_EFORMAT, "t", "truncated");
	expect_bad_header(t, dir, "offsets-size-mismatch", T1("\"F32\"", "[3]", "[0,8]"), 16,
	                  DIT_EFORMAT, "t", "needs 12");
	expect_bad_header(t, dir, "overlap",
	                  "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
	                  "\"b\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[4,12]}}",
	                  16, DIT_EFORMAT, "b", "'a'");
	expect_bad_header(t, dir, "duplicate-name",
	                  "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
	                  "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
	                  16, DIT_EFORMAT, NULL, "member 'a' appears twice");
	expect_bad_header(t, dir, "duplicate-name-escaped",
	                  "{\"ab\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
	                  "\"x\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]},"
	                  "\"a\\u0062\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
	                  16, DIT_EFORMAT, NULL, "member 'ab' appears twice");
	expect_bad_header(
	    t, dir, "nul-in-name",
	    "{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0,
	    DIT_EFORMAT, NULL, "NUL");
	expect_bad_header(t, dir, "gap-between-tensors",
	                  "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
	                  "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
	                  12, DIT_EFORMAT, "b", "not contiguous");
	expect_bad_header(t, dir, "gap-at-start", T1("\"F32\"", "[1]", "[4,8]"), 8, DIT_EFORMAT,
	                  "t", "not contiguous");
	expect_bad_header(t, dir, "trailing-bytes", T1("\"F32\"", "[1]", "[0,4]"), 5, DIT_EFORMAT,
	                  NULL, "trailing bytes");
	expect_bad_header(t, dir, "trailing-bytes-no-tensors", "{}", 3, DIT_EFORMAT, NULL,
	                  "trailing bytes");
	expect_bad_header(t, dir, "trailing-bytes-empty-tensor", T1("\"F32\"", "[0]", "[0,0]"), 4,
	                  DIT_EFORMAT, NULL, "trailing bytes");
	b.n = 0;
	buf_le(&b, 1, 8);
	buf_put(&b, "{", 1);
	expect_bad_bytes(t, dir, "header-length-1", b.p, b.n, DIT_EFORMAT, NULL,
	                 "below the 2-byte minimum");
	free(b.p);
	expect_bad_header(t, dir, "metadata-not-object", "{\"__metadata__\":[1]}", 0, DIT_EFORMAT,
	                  NULL, "__metadata__");
	expect_bad_header(t, dir, "metadata-value-not-string", "{\"__metadata__\":{\"k\":1}}", 0,
	                  DIT_EFORMAT, NULL, "'k'");

	/* accepted corner cases */
	char path[PATH_BUF];
	path_join(path, dir, "ok-corners.safetensors");
	struct buf c = {0};
	uint8_t z[8] = {0};
	buf_st(
	    &c,
	    "  {\"__metadata__\":{},\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"
	    "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
	    "\"e\":{\"dtype\":\"BF16\",\"shape\":[2,0],\"data_offsets\":[4,4]}}\n  ",
	    z, 4);
	write_bytes(path, c.p, c.n);
	free(c.p);
	dit_error e;
	dit_st_file *f = NULL;
	dit_status st = dit_st_open(&f, path, &e);
	tap_result(t, st == DIT_OK && f && f->ntensors == 3,
	           "accepted: whitespace, empty metadata, scalar, empty tensors", "%s", e.msg);
	dit_st_close(f);

	path_join(path, dir, "does-not-exist.safetensors");
	st = dit_st_open(&f, path, &e);
	expect_err(t, "missing file is DIT_ENOTFOUND", st, &e, DIT_ENOTFOUND, path, NULL);
	st = dit_st_open(&f, dir, &e);
	expect_err(t, "a directory is refused", st, &e, DIT_EIO, dir, NULL);
}

/* ---- safetensors: truncation and random corruption ---- */

static void test_truncation(struct tap *t, const char *dir)
{
	char src[PATH_BUF], path[PATH_BUF];
	path_join(src, dir, "rt.safetensors");
	path_join(path, dir, "cut.safetensors");
	size_t len = 0;
	uint8_t *bytes = read_bytes(src, &len);
	if (!bytes || len < 16) {
		tap_result(t, 0, "truncation: source file", "cannot read %s", src);
		free(bytes);
		return;
	}
	uint64_t hlen = 0;
	for (int i = 7; i >= 0; i--)
		hlen = (hlen << 8) | bytes[i];
	const struct {
		size_t at;
		const char *where;
	} cuts[] = {
	    {0, "empty"},
	    {4, "inside the length"},
	    {7, "inside the length"},
	    {8, "right after the length"},
	    {8 + (size_t)hlen / 2, "inside the header"},
	    {8 + (size_t)hlen - 1, "at the header's last byte"},
	    {8 + (size_t)hlen, "at the start of the data"},
	    {8 + (size_t)hlen + 10, "inside the first tensor"},
	    {len - 5, "inside the data"},
	    {len - 1, "one byte short"},
	};
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
		write_bytes(path, bytes, cuts[i].at);
		dit_error e;
		dit_st_file *f = NULL;
		dit_status st = dit_st_open(&f, path, &e);
		char name[160];
		snprintf(name, sizeof name, "truncated at %zu of %zu (%s)", cuts[i].at, len,
		         cuts[i].where);
		if (st == DIT_OK)
			dit_st_close(f);
		expect_err(t, name, st, &e, DIT_EFORMAT, path, "truncated");
	}
	free(bytes);
	unlink(path);
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static void test_fuzz(struct tap *t, const char *dir)
{
	int iters = 3000;
	const char *env = getenv("DIT_TEST_FUZZ_ITERS");
	if (env && atoi(env) > 0)
		iters = atoi(env);

	struct buf bases[2] = {{0}, {0}};
	char src[PATH_BUF], path[PATH_BUF];
	path_join(src, dir, "rt.safetensors");
	size_t len = 0;
	uint8_t *rt = read_bytes(src, &len);
	if (!rt) {
		tap_result(t, 0, "fuzz: source file", "cannot read %s", src);
		return;
	}
	buf_put(&bases[0], rt, len);
	free(rt);
	build_mixed(&bases[1]);
	path_join(path, dir, "fuzz.safetensors");

	static const char tokens[] = "{}[]\":,0123456789-.eE \\u";
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	int opened = 0, rejected = 0, bad_msgs = 0;
	char first_bad[DIT_ERROR_MSG_MAX] = "";
	uint8_t *work = NULL;
	size_t cap = 0;
	for (int it = 0; it < iters; it++) {
		const struct buf *base = &bases[it % 2];
		if (cap < base->n) {
			free(work);
			cap = base->n;
			work = malloc(cap);
		}
		memcpy(work, base->p, base->n);
		size_t n = base->n;
		uint64_t hlen = 0;
		for (int i = 7; i >= 0; i--)
			hlen = (hlen << 8) | base->p[i];
		size_t hend = 8 + (size_t)hlen;
		uint64_t r = rng_next(&seed);
		int mode = (int)(r % 6);
		int flips = 1 + (int)((r >> 8) % 6);
		if (mode == 0 || mode == 3) { /* flip random bytes anywhere */
			for (int k = 0; k < flips; k++) {
				uint64_t q = rng_next(&seed);
				work[q % n] ^= (uint8_t)(1 + (q >> 32) % 255);
			}
		}
		if (mode == 1) { /* structural characters inside the header */
			for (int k = 0; k < flips; k++) {
				uint64_t q = rng_next(&seed);
				work[8 + q % (hend - 8)] =
				    (uint8_t)tokens[(q >> 32) % (sizeof tokens - 1)];
			}
		}
		if (mode == 5 && n > hend) { /* flip bits in the data section only */
			for (int k = 0; k < flips; k++) {
				uint64_t q = rng_next(&seed);
				work[hend + q % (n - hend)] ^= (uint8_t)(1u << ((q >> 32) % 8));
			}
		}
		if (mode == 2 || mode == 3) /* truncate */
			n = (size_t)(rng_next(&seed) % n);
		if (mode == 4) { /* a nearby or random header length */
			uint64_t q = rng_next(&seed);
			uint64_t v = (q & 1) ? hlen + (q >> 40) % 64 - 32 : q >> (q % 64);
			for (int i = 0; i < 8; i++)
				work[i] = (uint8_t)(v >> (8 * i));
		}
		write_bytes(path, work, n);

		dit_error e;
		dit_error_clear(&e);
		dit_st_file *f = NULL;
		dit_status st = dit_st_open(&f, path, &e);
		if (st != DIT_OK) {
			rejected++;
			if (f || e.code != st || !strstr(e.msg, path) || strchr(e.msg, '\n')) {
				if (!bad_msgs)
					snprintf(first_bad, sizeof first_bad, "%s", e.msg);
				bad_msgs++;
			}
			continue;
		}
		opened++;
		for (size_t i = 0; i < f->ntensors; i++) {
			const dit_st_tensor *ten = &f->tensors[i];
			if (dit_st_find(f, ten->name) != ten)
				bad_msgs++;
			float *out = malloc((size_t)ten->numel * sizeof(float) + 1);
			if (dit_st_read_f32(f, ten, out, &e) != DIT_OK)
				bad_msgs++;
			free(out);
		}
		dit_st_close(f);
	}
	free(work);
	free(bases[0].p);
	free(bases[1].p);
	unlink(path);
	char name[128];
	snprintf(name, sizeof name, "fuzz: %d corrupted files (%d opened, %d rejected), no crash",
	         iters, opened, rejected);
	tap_result(t, opened + rejected == iters, name, NULL);
	tap_result(t, bad_msgs == 0, "fuzz: every error names the file on one line",
	           "%d bad, first: '%s'", bad_msgs, first_bad);
}

/* ---- checkpoint directories ---- */

static const char *config_ok = "{\"_class_name\":\"WanModel\",\"_diffusers_version\":\"0.30.0\","
                               "\"dim\":1536,\"eps\":1e-06,\"ffn_dim\":8960,\"freq_dim\":256,"
                               "\"in_dim\":16,\"model_type\":\"t2v\",\"num_heads\":12,"
                               "\"num_layers\":30,\"out_dim\":16,\"text_len\":512,"
                               "\"window_size\":[-1,-1],\"qk_norm\":true,"
                               "\"cross_attn_norm\":true}";

/* Writes a safetensors file holding small F32 tensors with the given names. */
static int write_st(const char *path, const char *const *names, size_t n)
{
	dit_error e;
	dit_st_writer *w = dit_st_writer_new();
	float v[4] = {1, 2, 3, 4};
	int64_t sh[1] = {4};
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		v[0] = (float)i;
		rc = dit_st_writer_add_f32(w, names[i], 1, sh, v, &e) == DIT_OK ? 0 : -1;
	}
	if (rc == 0)
		rc = dit_st_writer_commit(w, path, &e) == DIT_OK ? 0 : -1;
	dit_st_writer_free(w);
	return rc;
}

/* Makes dir/name with config.json (unless no_config) and returns its path in out. */
static void ck_dir(const char *dir, const char *name, int with_config, char *out)
{
	char p[PATH_BUF];
	make_dir(dir, name, out);
	if (with_config) {
		path_join(p, out, "config.json");
		write_text(p, config_ok);
	}
}

static void ck_file(const char *d, const char *file, const char *const *names, size_t n)
{
	char p[PATH_BUF];
	path_join(p, d, file);
	write_st(p, names, n);
}

static void ck_text(const char *d, const char *file, const char *text)
{
	char p[PATH_BUF];
	path_join(p, d, file);
	write_text(p, text);
}

#define IDX    "diffusion_pytorch_model.safetensors.index.json"
#define IDX_TF "model.safetensors.index.json"
#define SH1    "diffusion_pytorch_model-00001-of-00002.safetensors"
#define SH2    "diffusion_pytorch_model-00002-of-00002.safetensors"
#define TF1    "model-00001-of-00002.safetensors"
#define TF2    "model-00002-of-00002.safetensors"

/* Checkpoints without config.json: opened all the same, the config reported missing
 * unless a family's probe tensor is there, then its released configuration assumed. */
static void test_release(struct tap *t, const char *dir)
{
	char d[PATH_BUF], p[PATH_BUF];
	dit_error e;
	dit_checkpoint *ck = NULL;
	dit_hparams c;
	const dit_model_desc *fam = NULL;
	const dit_preset *pre = NULL;
	const char *const xy[] = {"x", "y"};
	const char *const hy[] = {"txt_in.individual_token_refiner.blocks.0.norm1.weight",
	                          "img_in.proj.bias"};

	ck_dir(dir, "ck-no-config", 0, d);
	ck_file(d, "model.safetensors", xy, 2);
	path_join(p, d, "config.json");
	dit_status st = dit_checkpoint_open(&ck, d, &e);
	tap_result(t, st == DIT_OK && ck->config_missing && ck->nfiles == 1,
	           "checkpoint: without config.json the weights open", "%s", e.msg);
	if (st == DIT_OK) {
		tap_result(t, dit_release_probe(ck, NULL) == NULL,
		           "release: no probe tensor, no family", NULL);
		st = dit_checkpoint_load_config(ck, &c, &e);
		expect_err(t, "checkpoint: config.json reported missing", st, &e, DIT_ENOTFOUND, p,
		           "needs config.json");
		st = dit_release_assume(ck, NULL, &c, &fam, &pre, &e);
		expect_err(t, "release: no probe tensor, config.json still missing", st, &e,
		           DIT_ENOTFOUND, p, "needs config.json");
		tap_result(t, fam == NULL && pre == NULL, "release: nothing assumed", NULL);
	}
	dit_checkpoint_close(ck);
	ck = NULL;

	ck_dir(dir, "ck-release", 0, d);
	ck_file(d, "mp_rank_00_model_states.safetensors", hy, 2);
	st = dit_checkpoint_open(&ck, d, &e);
	const dit_model_desc *hv = dit_model_desc_find("hunyuan-video");
	const dit_model_desc *wan = dit_model_desc_find("wan2.1-t2v");
	tap_result(t, st == DIT_OK && hv && dit_release_probe(ck, NULL) == hv,
	           "release: the probe tensor picks hunyuan-video", "%s", e.msg);
	memset(&c, 0, sizeof c);
	st = ck ? dit_release_assume(ck, NULL, &c, &fam, &pre, &e) : DIT_EINVAL;
	tap_result(t,
	           st == DIT_OK && fam == hv && pre && strcmp(pre->name, "hunyuan-video") == 0 &&
	               strcmp(c.model_type, "hyvideo") == 0 && c.dim == 3072 && c.num_heads == 24 &&
	               c.head_dim == 128 && c.layers[0] == 20 && c.layers[1] == 40 &&
	               c.in_dim == 16 && c.out_dim == 16 && c.text_dim == 4096 &&
	               c.text_dim_2 == 768 && c.guidance_embed == 1 && c.rope_dims[0] == 16 &&
	               c.rope_dims[1] == 56 && c.rope_dims[2] == 56 &&
	               c.config == hv->formats[0]->config,
	           "release: HYVideo-T/2-cfgdistill's configuration assumed", "%s", e.msg);
	tap_result(t, ck && wan && dit_release_probe(ck, wan) == NULL,
	           "release: a family without a release is never probed", NULL);
	dit_checkpoint_close(ck);
	ck = NULL;

	ck_dir(dir, "ck-release-config", 1, d);
	ck_file(d, "model.safetensors", hy, 2);
	st = dit_checkpoint_open(&ck, d, &e);
	if (st == DIT_OK)
		st = dit_release_assume(ck, NULL, &c, &fam, &pre, &e);
	tap_result(t, st == DIT_OK && pre == NULL && c.dim == 1536,
	           "release: config.json wins over the probe tensor", "%s", e.msg);
	dit_checkpoint_close(ck);
	ck = NULL;

	ck_dir(dir, "ck-nothing", 0, d);
	path_join(p, d, "config.json");
	st = dit_checkpoint_open(&ck, d, &e);
	expect_err(t, "checkpoint: neither config.json nor weights", st, &e, DIT_ENOTFOUND, p,
	           "needs config.json");
}

static void test_checkpoint(struct tap *t, const char *dir)
{
	char d[PATH_BUF], p[PATH_BUF];
	dit_error e;
	dit_checkpoint *ck = NULL;
	const dit_st_file *sf = NULL;
	const char *const xy[] = {"x", "y"}, *const ab[] = {"a", "b"}, *const c1[] = {"c"};
	const char *const pn[] = {"p"}, *const qn[] = {"q"};

	ck_dir(dir, "ck-single", 1, d);
	ck_file(d, "model.safetensors", xy, 2);
	dit_status st = dit_checkpoint_open(&ck, d, &e);
	int ok = st == DIT_OK && ck && ck->nfiles == 1 && dit_checkpoint_find(ck, "y", &sf) &&
	         sf == ck->files[0] && !dit_checkpoint_find(ck, "nope", &sf) && sf == NULL &&
	         strstr(ck->config_path, "config.json");
	tap_result(t, ok, "checkpoint: single file", "%s", e.msg);
	dit_checkpoint_close(ck);
	ck = NULL;

	ck_dir(dir, "ck-preferred", 1, d);
	ck_file(d, "diffusion_pytorch_model.safetensors", pn, 1);
	ck_file(d, "other.safetensors", qn, 1);
	st = dit_checkpoint_open(&ck, d, &e);
	ok = st == DIT_OK && ck->nfiles == 1 && dit_checkpoint_find(ck, "p", NULL) &&
	     !dit_checkpoint_find(ck, "q", NULL);
	tap_result(t, ok, "checkpoint: diffusion_pytorch_model.safetensors preferred", "%s", e.msg);
	dit_checkpoint_close(ck);
	ck = NULL;

	const char *index_ok = "{\"metadata\":{\"total_size\":48},\"weight_map\":{"
	                       "\"a\":\"" SH1 "\",\"b\":\"" SH1 "\",\"c\":\"" SH2 "\"}}";
	ck_dir(dir, "ck-sharded", 1, d);
	ck_file(d, SH1, ab, 2);
	ck_file(d, SH2, c1, 1);
	ck_text(d, IDX, index_ok);
	st = dit_checkpoint_open(&ck, d, &e);
	const dit_st_tensor *tc = NULL, *ta = NULL;
	const dit_st_file *fa = NULL;
	ok = st == DIT_OK && ck->nfiles == 2 && (tc = dit_checkpoint_find(ck, "c", &sf)) != NULL &&
	     strstr(sf->path, SH2) && (ta = dit_checkpoint_find(ck, "a", &fa)) != NULL &&
	     strstr(fa->path, SH1) && dit_checkpoint_find(ck, "b", NULL);
	float v[4] = {0};
	ok = ok && dit_st_read_f32(sf, tc, v, &e) == DIT_OK && v[0] == 0.0f && v[3] == 4.0f;
	tap_result(t, ok, "checkpoint: two shards with an index", "%s", e.msg);
	dit_checkpoint_close(ck);
	ck = NULL;

	const char *tf_ok =
	    "{\"weight_map\":{\"a\":\"" TF1 "\",\"b\":\"" TF1 "\",\"c\":\"" TF2 "\"}}";
	ck_dir(dir, "ck-sharded-tf", 1, d);
	ck_file(d, TF1, ab, 2);
	ck_file(d, TF2, c1, 1);
	ck_text(d, IDX_TF, tf_ok);
	st = dit_checkpoint_open(&ck, d, &e);
	ok = st == DIT_OK && ck->nfiles == 2 && (tc = dit_checkpoint_find(ck, "c", &sf)) != NULL &&
	     strstr(sf->path, TF2) && dit_checkpoint_find(ck, "a", NULL);
	tap_result(t, ok, "checkpoint: two shards with model.safetensors.index.json", "%s", e.msg);
	dit_checkpoint_close(ck);
	ck = NULL;

	ck_text(d, IDX, tf_ok);
	st = dit_checkpoint_open(&ck, d, &e);
	expect_err(t, "checkpoint: both index names refused", st, &e, DIT_EFORMAT, IDX, IDX_TF);

	ck_dir(dir, "ck-missing-shard", 1, d);
	ck_file(d, SH1, ab, 2);
	ck_text(d, IDX, index_ok);
	path_join(p, d, IDX);
	st = dit_checkpoint_open(&ck, d, &e);
	expect_err(t, "checkpoint: index names a missing shard", st, &e, DIT_ENOTFOUND, p, SH2);
	tap_result(t, ck == NULL && strstr(e.msg, "tensor 'c'"),
	           "checkpoint: missing-shard message names the tensor", "%s", e.msg);

	ck_dir(dir, "ck-wrong-shard", 1, d);
	ck_file(d, SH1, ab, 2);
	ck_file(d, SH2, c1, 1);
	ck_text(d, IDX, "{\"weight_map\":{\"a\":\"" SH1 "\",\"b\":\"" SH1 "\",\"c\":\"" SH1 "\"}}");
	path_join(p, d, IDX);
	st = dit_checkpoint_open(&ck, d, &e);
	expect_err(t, "checkpoint: tensor in the wrong shard", st, &e, DIT_EFORMAT, p,
	           "(tensor 'c')");
	tap_result(t, strstr(e.msg, SH1) != NULL, "checkpoint: wrong-shard message names the shard",
	           "%s", e.msg);

	ck_dir(dir, "ck-dotdot", 1, d);
	ck_file(d, SH1, ab, 2);
	ck_text(d, IDX, "{\"weight_map\":{\"a\":\"" SH1 "\",\"b\":\"../" SH1 "\"}}");
	path_join(p, d, IDX);
	st = dit_checkpoint_open(&ck, d, &e);
	expect_err(t, "checkpoint: shard path with ../ rejected", st, &e, DIT_EFORMAT, p, "../");

	ck_dir(dir, "ck-slash", 1, d);
	ck_file(d, SH1, ab, 2);
	ck_text(d, IDX, "{\"weight_map\":{\"a\":\"/etc/passwd\"}}");
	path_join(p, d, IDX);
	st = dit_checkpoint_open(&ck, d, &e);
	expect_err(t, "checkpoint: absolute shard path rejected", st, &e, DIT_EFORMAT, p,
	           "tensor 'a'");

	ck_dir(dir, "ck-bad-index", 1, d);
	ck_file(d, SH1, ab, 2);
	ck_text(d, IDX, "{\"weight_map\":{\"a\":");
	path_join(p, d, IDX);
	st = dit_checkpoint_open(&ck, d, &e);
	expect_err(t, "checkpoint: index not valid JSON", st, &e, DIT_EFORMAT, p, NULL);

	ck_dir(dir, "ck-no-weight-map", 1, d);
	ck_file(d, SH1, ab, 2);
	ck_text(d, IDX, "{\"metadata\":{}}");
	path_join(p, d, IDX);
	st = dit_checkpoint_open(&ck, d, &e);
	expect_err(t, "checkpoint: index without weight_map", st, &e, DIT_EFORMAT, p, "weight_map");

	ck_dir(dir, "ck-bad-shard", 1, d);
	ck_file(d, SH1, ab, 2);
	ck_text(d, SH2, "garbage!!");
	ck_text(d, IDX, index_ok);
	path_join(p, d, SH2);
	st = dit_checkpoint_open(&ck, d, &e);
	expect_err(t, "checkpoint: malformed shard named", st, &e, DIT_EFORMAT, p, NULL);

	ck_dir(dir, "ck-dup-across", 1, d);
	ck_file(d, SH1, ab, 2);
	ck_file(d, SH2, ab, 2);
	ck_text(d, IDX, "{\"weight_map\":{\"a\":\"" SH1 "\",\"b\":\"" SH2 "\"}}");
	st = dit_checkpoint_open(&ck, d, &e);
	expect_err(t, "checkpoint: tensor present in two shards", st, &e, DIT_EFORMAT, d,
	           "also present");

	ck_dir(dir, "ck-two-stray", 1, d);
	ck_file(d, "one.safetensors", pn, 1);
	ck_file(d, "two.safetensors", qn, 1);
	st = dit_checkpoint_open(&ck, d, &e);
	expect_err(t, "checkpoint: two safetensors files without index", st, &e, DIT_EFORMAT, d,
	           "one.safetensors");

	ck_dir(dir, "ck-no-weights", 1, d);
	st = dit_checkpoint_open(&ck, d, &e);
	expect_err(t, "checkpoint: no safetensors file", st, &e, DIT_ENOTFOUND, d, NULL);

	path_join(p, dir, "ck-does-not-exist");
	st = dit_checkpoint_open(&ck, p, &e);
	expect_err(t, "checkpoint: missing directory", st, &e, DIT_ENOTFOUND, p, NULL);
}

/* ---- config.json ---- */

static const char *const cfg_keys[] = {"model_type", "dim",     "eps",     "ffn_dim",
                                       "freq_dim",   "in_dim",  "out_dim", "num_heads",
                                       "num_layers", "text_len"};
static const char *const cfg_vals[] = {"\"t2v\"", "1536", "1e-06", "8960", "256",
                                       "16",      "16",   "12",    "30",   "512"};

/* Writes an official-looking config.json with key replaced by val (omitted when val is
 * NULL) and extra (raw "key": value pairs, each with a leading comma) appended. */
static void write_cfg(const char *path, const char *key, const char *val, const char *extra)
{
	/* the optional official keys, unless extra gives one of them (a member may
	 * appear only once) */
	static const char *const opt[][2] = {{"_class_name", "\"WanModel\""},
	                                     {"_diffusers_version", "\"0.30.0\""},
	                                     {"window_size", "[-1, -1]"},
	                                     {"qk_norm", "true"},
	                                     {"cross_attn_norm", "true"}};
	char text[2048];
	size_t o = (size_t)snprintf(text, sizeof text, "{\n  \"_note\": \"test\"");
	for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++) {
		char quoted[64];
		snprintf(quoted, sizeof quoted, "\"%s\"", opt[i][0]);
		if (!extra || !strstr(extra, quoted))
			o += (size_t)snprintf(text + o, sizeof text - o, ",\n  \"%s\": %s",
			                      opt[i][0], opt[i][1]);
	}
	for (size_t i = 0; i < sizeof cfg_keys / sizeof cfg_keys[0]; i++) {
		const char *v = cfg_vals[i];
		if (key && strcmp(key, cfg_keys[i]) == 0) {
			if (!val)
				continue;
			v = val;
		}
		o += (size_t)snprintf(text + o, sizeof text - o, ",\n  \"%s\": %s", cfg_keys[i], v);
	}
	snprintf(text + o, sizeof text - o, "%s\n}\n", extra ? extra : "");
	write_text(path, text);
}

static void expect_cfg_err(struct tap *t, const char *dir, const char *name, const char *key,
                           const char *val, const char *extra, dit_status want, const char *need)
{
	char path[PATH_BUF];
	path_join(path, dir, "cfg-bad.json");
	write_cfg(path, key, val, extra);
	dit_hparams c;
	memset(&c, 0x5a, sizeof c);
	dit_hparams before = c;
	dit_error e;
	dit_status st = dit_config_load(&c, path, &e);
	char tn[160];
	snprintf(tn, sizeof tn, "config: %s", name);
	if (st != DIT_OK && memcmp(&c, &before, sizeof c) != 0) {
		tap_result(t, 0, tn, "config modified on failure");
		return;
	}
	expect_err(t, tn, st, &e, want, path, need);
}

static void test_config(struct tap *t, const char *dir)
{
	char path[PATH_BUF], path2[PATH_BUF];
	dit_error e;
	dit_hparams c, d;
	path_join(path, dir, "config.json");
	write_cfg(path, NULL, NULL, NULL);
	dit_status st = dit_config_load(&c, path, &e);
	int ok = st == DIT_OK && strcmp(c.model_type, "t2v") == 0 && c.dim == 1536 &&
	         c.ffn_dim == 8960 && c.freq_dim == 256 && c.in_dim == 16 && c.out_dim == 16 &&
	         c.num_heads == 12 && c.layers[0] == 30 && c.text_len == 512 && c.eps == 1e-6;
	tap_result(t, ok, "config: official 1.3B config loads", "%s", e.msg);
	tap_result(t,
	           st == DIT_OK && c.text_dim == 4096 && c.patch[0] == 1 && c.patch[1] == 2 &&
	               c.patch[2] == 2,
	           "config: text_dim and patch_size defaults", NULL);

	write_cfg(path, "dim", "1536.0", ", \"text_dim\": 2048, \"patch_size\": [1, 4, 4]");
	st = dit_config_load(&c, path, &e);
	ok = st == DIT_OK && c.dim == 1536 && c.text_dim == 2048 && c.patch[1] == 4 &&
	     c.patch[2] == 4;
	tap_result(t, ok, "config: explicit text_dim/patch_size, integral double accepted", "%s",
	           e.msg);

	c.eps = 1.2345678901234567e-7;
	c.layers[0] = 7;
	path_join(path2, dir, "saved-config.json");
	st = dit_config_save(&c, path2, &e);
	ok = st == DIT_OK && dit_config_load(&d, path2, &e) == DIT_OK &&
	     strcmp(c.model_type, d.model_type) == 0 && c.dim == d.dim && c.ffn_dim == d.ffn_dim &&
	     c.freq_dim == d.freq_dim && c.in_dim == d.in_dim && c.out_dim == d.out_dim &&
	     c.num_heads == d.num_heads && c.layers[0] == d.layers[0] && c.text_len == d.text_len &&
	     c.text_dim == d.text_dim && c.patch[0] == d.patch[0] && c.patch[1] == d.patch[1] &&
	     c.patch[2] == d.patch[2] && c.eps == d.eps;
	tap_result(t, ok, "config: save/load round trip (eps exact)", "%s", e.msg);
	size_t len = 0;
	char *saved = (char *)read_bytes(path2, &len);
	ok = saved != NULL;
	if (saved) {
		char *z = realloc(saved, len + 1);
		ok = z != NULL;
		saved = z ? z : saved;
		if (ok)
			saved[len] = '\0';
		for (size_t i = 0; ok && i < sizeof cfg_keys / sizeof cfg_keys[0]; i++) {
			char k[64];
			snprintf(k, sizeof k, "\"%s\":", cfg_keys[i]);
			ok = strstr(saved, k) != NULL;
		}
		ok = ok && strstr(saved, "\"text_dim\":") && strstr(saved, "\"patch_size\":");
	}
	free(saved);
	tap_result(t, ok && count_tmp(dir) == 0, "config: saved file has every key, no temp left",
	           NULL);

	path_join(path2, dir, "missing-dir/config.json");
	st = dit_config_save(&c, path2, &e);
	expect_err(t, "config: save into a missing directory", st, &e, DIT_EIO, path2, NULL);
	tap_result(t, count_tmp(dir) == 0, "config: no temp file after failed save", NULL);

	path_join(path2, dir, "limited-config.json");
	struct fsize_guard g;
	if (fsize_limit(&g, 64) == 0) {
		st = dit_config_save(&c, path2, &e);
		fsize_restore(&g);
		expect_err(t, "config: failed write reported", st, &e, DIT_EIO, path2,
		           "write failed");
		tap_result(t, count_tmp(dir) == 0 && access(path2, F_OK) != 0,
		           "config: nothing left behind after a failed write", NULL);
	} else {
		tap_result(t, 1, "config: failed write reported # SKIP cannot set RLIMIT_FSIZE",
		           NULL);
		tap_result(t, 1, "config: nothing left behind after a failed write # SKIP", NULL);
	}

	d = c;
	d.num_heads = 7;
	st = dit_config_save(&d, path, &e);
	expect_err(t, "config: save refuses an invalid config", st, &e, DIT_EINVAL, "divisible",
	           NULL);
	st = dit_config_check(&d, NULL, &e);
	expect_err(t, "config: check without a path", st, &e, DIT_EINVAL, "config", NULL);

	expect_cfg_err(t, dir, "missing key num_heads", "num_heads", NULL, NULL, DIT_EFORMAT,
	               "key 'num_heads' missing");
	expect_cfg_err(t, dir, "missing key model_type", "model_type", NULL, NULL, DIT_EFORMAT,
	               "key 'model_type' missing");
	expect_cfg_err(t, dir, "missing key eps", "eps", NULL, NULL, DIT_EFORMAT,
	               "key 'eps' missing");
	expect_cfg_err(t, dir, "dim as a string", "dim", "\"1536\"", NULL, DIT_EFORMAT, "'dim'");
	expect_cfg_err(t, dir, "dim non-integral", "dim", "1536.5", NULL, DIT_EFORMAT, "'dim'");
	expect_cfg_err(t, dir, "eps as a string", "eps", "\"1e-6\"", NULL, DIT_EFORMAT, "'eps'");
	expect_cfg_err(t, dir, "model_type as a number", "model_type", "3", NULL, DIT_EFORMAT,
	               "'model_type'");
	expect_cfg_err(t, dir, "model_type s2v", "model_type", "\"s2v\"", NULL, DIT_EUNSUPPORTED,
	               "'s2v'");
	expect_cfg_err(t, dir, "model_type very long", "model_type", "\"t2v-but-much-longer\"",
	               NULL, DIT_EUNSUPPORTED, "model_type");
	expect_cfg_err(t, dir, "dim not divisible by num_heads", "dim", "1540", NULL, DIT_EFORMAT,
	               "divisible");
	expect_cfg_err(t, dir, "odd head_dim", "dim", "60", NULL, DIT_EFORMAT, "head_dim");
	expect_cfg_err(t, dir, "head_dim below 6", "dim", "48", NULL, DIT_EFORMAT, "head_dim");
	expect_cfg_err(t, dir, "num_layers zero", "num_layers", "0", NULL, DIT_EFORMAT,
	               "'num_layers'");
	expect_cfg_err(t, dir, "ffn_dim negative", "ffn_dim", "-5", NULL, DIT_EFORMAT, "'ffn_dim'");
	expect_cfg_err(t, dir, "eps zero", "eps", "0", NULL, DIT_EFORMAT, "'eps'");
	expect_cfg_err(t, dir, "eps negative", "eps", "-1e-6", NULL, DIT_EFORMAT, "'eps'");
	expect_cfg_err(t, dir, "patch_size of two", NULL, NULL, ", \"patch_size\": [2, 2]",
	               DIT_EFORMAT, "patch_size");
	expect_cfg_err(t, dir, "patch_size zero", NULL, NULL, ", \"patch_size\": [1, 0, 2]",
	               DIT_EFORMAT, "patch_size");
	expect_cfg_err(t, dir, "text_dim as a string", NULL, NULL, ", \"text_dim\": \"4096\"",
	               DIT_EFORMAT, "'text_dim'");
	expect_cfg_err(t, dir, "trailing garbage", NULL, NULL, "} x", DIT_EFORMAT, NULL);
	expect_cfg_err(t, dir, "eps above 1", "eps", "2.5", NULL, DIT_EFORMAT, "'eps'");
	expect_cfg_err(t, dir, "eps huge", "eps", "1e308", NULL, DIT_EFORMAT, "'eps'");
	expect_cfg_err(t, dir, "dim above the cap", "dim", "2097152", NULL, DIT_EFORMAT,
	               "implausibly large");
	expect_cfg_err(t, dir, "qk_norm as a string", NULL, NULL, ", \"qk_norm\": \"yes\"",
	               DIT_EFORMAT, "'qk_norm'");
	expect_cfg_err(t, dir, "_class_name as a number", NULL, NULL, ", \"_class_name\": 3",
	               DIT_EFORMAT, "'_class_name'");
	expect_cfg_err(t, dir, "single-quoted member name", NULL, NULL, ", '\\\"': 34", DIT_EFORMAT,
	               "single-quoted");
	expect_cfg_err(t, dir, "member named twice", NULL, NULL, ", \"dim\": 64", DIT_EFORMAT,
	               "'dim' appears twice");
	expect_cfg_err(t, dir, "window_size of one", NULL, NULL, ", \"window_size\": [-1]",
	               DIT_EFORMAT, "'window_size'");
	expect_cfg_err(t, dir, "window_size below -1", NULL, NULL, ", \"window_size\": [-1, -2]",
	               DIT_EFORMAT, "'window_size'[1]");
	expect_cfg_err(t, dir, "window_size as a string", NULL, NULL, ", \"window_size\": \"-1\"",
	               DIT_EFORMAT, "'window_size'");

	static const char good[] = "{\"model_type\":\"t2v\",\"dim\":64,\"eps\":1e-6,"
	                           "\"ffn_dim\":128,\"freq_dim\":16,\"in_dim\":4,\"out_dim\":4,"
	                           "\"num_heads\":4,\"num_layers\":2,\"text_len\":8}  \n";
	st = dit_config_parse_text(&c, "mem/config.json", good, sizeof good - 1, &e);
	tap_result(t, st == DIT_OK && c.dim == 64 && c.num_heads == 4 && c.text_dim == 4096,
	           "config: parsed from text in memory", "%s", e.msg);
	st = dit_config_parse_text(&c, "mem/config.json", good, sizeof good - 6, &e);
	expect_err(t, "config: text cut short", st, &e, DIT_EFORMAT, "mem/config.json", "JSON");
	st = dit_config_parse_text(&c, "mem/config.json", "{} {}", 5, &e);
	expect_err(t, "config: text with a second object", st, &e, DIT_EFORMAT, "mem/config.json",
	           "JSON");

	path_join(path, dir, "cfg-notjson.json");
	write_text(path, "dim = 1536\n");
	st = dit_config_load(&c, path, &e);
	expect_err(t, "config: not JSON", st, &e, DIT_EFORMAT, path, NULL);
	path_join(path, dir, "cfg-array.json");
	write_text(path, "[1536]");
	st = dit_config_load(&c, path, &e);
	expect_err(t, "config: JSON array", st, &e, DIT_EFORMAT, path, NULL);
	path_join(path, dir, "cfg-missing.json");
	st = dit_config_load(&c, path, &e);
	expect_err(t, "config: missing file", st, &e, DIT_ENOTFOUND, path, NULL);
}

int main(void)
{
	const char *base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	char dir[PATH_BUF];
	snprintf(dir, sizeof dir, "%s/dit-test-loader.XXXXXX", base);
	if (!mkdtemp(dir)) {
		printf("1..0 # SKIP cannot create a temporary directory in %s: %s\n", base,
		       strerror(errno));
		return 1;
	}
	struct tap t = {0, 0, getenv("DIT_TEST_VERBOSE") != NULL};
	test_roundtrip(&t, dir);
	test_writer_failures(&t, dir);
	test_dtypes(&t, dir);
	test_open_mem(&t, dir);
	test_malformed(&t, dir);
	test_truncation(&t, dir);
	test_fuzz(&t, dir);
	test_checkpoint(&t, dir);
	test_release(&t, dir);
	test_config(&t, dir);
	rm_rf(dir);
	struct stat sb;
	tap_result(&t, stat(dir, &sb) != 0, "temporary directory removed", "%s remains", dir);
	printf("1..%d\n", t.n);
	if (t.failed)
		printf("# %d of %d tests failed\n", t.failed, t.n);
	return t.failed ? 1 : 0;
}
