/* The disk node's chunks read where their blocks lie in the checkpoint's files (see
 * dit_diskops_add_extents in dit_diskops.h): each piece of a chunk is filled from the
 * extents it overlaps, widened where the slot is fp32 and the file bf16 or fp16. */
#define _GNU_SOURCE
#include "dit_diskops_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "dit_blockhash.h"
#include "dit_input.h"
#include "dit_wdt.h"

/* The descriptors of an extents list's files. */
struct dit_gather_files {
	const dit_extents *x;
	int *fd;
};

/* An object of blocks read where they lie: what ops_open returns for "#extents:N". */
typedef struct gather_obj {
	size_t index, size;
} gather_obj;

/* x's descriptors, opened the first time; NULL with errno. */
static const int *files_of(dit_diskops *d, const dit_extents *x)
{
	for (size_t i = 0; i < d->ngfiles; i++)
		if (d->gfiles[i].x == x)
			return d->gfiles[i].fd;
	struct dit_gather_files *g = realloc(d->gfiles, (d->ngfiles + 1) * sizeof *g);
	if (!g)
		return NULL;
	d->gfiles = g;
	int *fd = malloc((size_t)(x->nfiles ? x->nfiles : 1) * sizeof *fd);
	for (int i = 0; fd && i < x->nfiles; i++) {
		fd[i] = open(x->files[i], O_RDONLY | O_CLOEXEC);
		if (fd[i] < 0) {
			int e = errno;
			while (i-- > 0)
				close(fd[i]);
			free(fd);
			errno = e;
			return NULL;
		}
	}
	if (fd)
		g[d->ngfiles++] = (struct dit_gather_files){.x = x, .fd = fd};
	return fd;
}

int dit_diskops_add_extents(dit_diskops *d, const dit_extents *x, int64_t first, int64_t n)
{
	const int *fd = files_of(d, x);
	struct dit_gather *g = fd ? realloc(d->gathers, (d->ngathers + 1) * sizeof *g) : NULL;
	if (!g)
		return -1;
	d->gathers = g;
	g[d->ngathers] = (struct dit_gather){.x = x, .fd = fd, .first = first, .n = n};
	return (int)d->ngathers++;
}

void *dit_gather_open(wrap_base *b, const char *pos, size_t size)
{
	char *end;
	unsigned long long i = strtoull(pos + strlen("#extents:"), &end, 10);
	dit_diskops *d = b->d;
	if (!d || *end || i >= d->ngathers)
		return NULL;
	gather_obj *o = malloc(sizeof *o);
	if (o)
		*o = (gather_obj){.index = (size_t)i, .size = size};
	return o;
}

const char *dit_gather_path(const struct dit_gather *g, size_t blk)
{
	const dit_extents *x = g->x;
	int64_t e = x->first[g->first + (int64_t)blk];
	return e < x->first[g->first + (int64_t)blk + 1] ? x->files[x->e[e].file]
	       : x->nfiles                               ? x->files[0]
	                                                 : "?";
}

/* Reads len bytes of fd at off into p (dit_input_pread); 0, the errno of a failure, or
 * -1 when the file ended first. */
static int read_at(int fd, char *p, size_t len, off_t off)
{
	int64_t got = dit_input_pread(fd, p, len, (uint64_t)off);
	return got == (int64_t)len ? 0 : got < 0 && errno ? errno : -1;
}

/* The part [a0, a1) of the block (bytes) that extent e writes, into dst (the block's
 * byte a0); 0 or an errno with *where the file offset that failed. */
static int fill(const struct dit_gather *g, const dit_extent *e, char *dst, uint64_t a0,
                uint64_t a1, long long *where)
{
	uint64_t d0 = e->dst > a0 ? e->dst : a0,
	         d1 = e->dst + e->bytes < a1 ? e->dst + e->bytes : a1;
	if (d0 >= d1)
		return 0;
	char *p = dst + (d0 - a0);
	if (e->op == DIT_EXT_CONST) {
		memcpy(p, (const char *)&e->value + (d0 - e->dst), d1 - d0);
		return 0;
	}
	if (e->op == DIT_EXT_COPY) {
		*where = (long long)(e->src + (d0 - e->dst));
		return read_at(g->fd[e->file], p, d1 - d0, (off_t)*where);
	}
	/* a widening: the 2-byte values into the upper half, then widened forward (each
	 * value read before its slot is written: slot k ends at 4k + 4, value k + 1
	 * starts at 2n + 2k + 2, later for every k < n - 1) */
	size_t n = (d1 - d0) / 4;
	uint16_t *h = (uint16_t *)(p + 2 * n);
	*where = (long long)(e->src + (d0 - e->dst) / 2);
	int rc = read_at(g->fd[e->file], (char *)h, 2 * n, (off_t)*where);
	float *f = (float *)p;
	for (size_t k = 0; !rc && k < n; k++) {
		uint16_t v = h[k];
		if (e->op == DIT_EXT_BF16_F32) {
			uint32_t u = (uint32_t)v << 16;
			memcpy(&f[k], &u, sizeof u);
		} else {
			f[k] = dit_f16_to_f32(v);
		}
	}
	return rc;
}

void dit_gather_piece(io_req *r, size_t i)
{
	const struct dit_gather *g = r->gather;
	size_t bs = r->want.piece, blk = i / r->per, k = i % r->per;
	uint64_t a0 = (uint64_t)k * DIT_HASH_PIECE;
	uint64_t a1 = bs - a0 < DIT_HASH_PIECE ? bs : a0 + DIT_HASH_PIECE;
	char *dst = r->buf + blk * bs + a0;
	const dit_extents *x = g->x;
	int64_t b = g->first + (int64_t)blk;
	int rc = 0;
	long long where = 0;
	const dit_extent *bad = NULL;
	/* the extents in order of their place: what lies between them (padding, the
	 * slots of tensors left out) and after the last one is zeroed, the rest read */
	uint64_t at = a0;
	for (int64_t e = x->first[b]; !rc && e < x->first[b + 1] && at < a1; e++) {
		const dit_extent *x_e = &x->e[e];
		uint64_t gap_end = x_e->dst < a1 ? x_e->dst : a1;
		if (gap_end > at)
			memset(dst + (at - a0), 0, gap_end - at);
		if ((rc = fill(g, x_e, dst, a0, a1, &where)))
			bad = x_e;
		if (x_e->dst + x_e->bytes > at)
			at = x_e->dst + x_e->bytes;
	}
	if (!rc && at < a1)
		memset(dst + (at - a0), 0, a1 - at);
	if (!rc) {
		r->psums[i] = XXH3_64bits(dst, a1 - a0);
		return;
	}
	memset(dst, 0, a1 - a0);
	pthread_mutex_lock(&r->b->lock);
	if (!r->failed) {
		r->failed = 1;
		r->err = rc > 0 ? rc : 0; /* 0: the file ended */
		r->fail_offset = where;
		r->fail_size = (size_t)bad->bytes;
		r->fail_done = 0;
		r->path = x->files[bad->file];
	}
	pthread_mutex_unlock(&r->b->lock);
}

size_t dit_gather_size(const void *obj)
{
	return ((const gather_obj *)obj)->size;
}

size_t dit_gather_index(const void *obj)
{
	return ((const gather_obj *)obj)->index;
}

void dit_gather_edit(const struct dit_gather *g, int how)
{
	const dit_extents *x = g->x;
	for (int64_t e = x->first[g->first]; e < x->first[g->first + 1]; e++)
		if (x->e[e].op == DIT_EXT_COPY && x->e[e].bytes >= 64) {
			dit_diskops_edit_file(x->files[x->e[e].file], (off_t)x->e[e].src, how);
			return;
		}
}

void dit_gather_forget(dit_diskops *d)
{
	for (size_t i = 0; i < d->ngfiles; i++) {
		for (int k = 0; k < d->gfiles[i].x->nfiles; k++)
			close(d->gfiles[i].fd[k]);
		free(d->gfiles[i].fd);
	}
	free(d->gfiles);
	free(d->gathers);
	d->gfiles = NULL;
	d->gathers = NULL;
	d->ngfiles = d->ngathers = 0;
}
