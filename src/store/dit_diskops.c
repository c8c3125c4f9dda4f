/* StarPU disk ops for the chunk store (see dit_diskops.h): the backend's ops wrapped,
 * the node's I/O thread, the checksums expected (one request's data movement in
 * dit_diskops_io.c). */
#define _GNU_SOURCE
#include "dit_diskops_priv.h"

#include "dit_grow.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The return value of read and write: StarPU 1.4.10 ignores it (disk.c), and the
 * stock backend returns 0 whenever it returns at all; failures go to the record. */
static int ops_read(void *base, void *obj, void *buf, off_t offset, size_t size)
{
	dit_diskops_transfer(base, obj, buf, offset, size, 0);
	return 0;
}

static int ops_write(void *base, void *obj, const void *buf, off_t offset, size_t size)
{
	dit_diskops_transfer(base, obj, (void *)buf, offset, size, 1);
	return 0;
}

/* The whole object into a new buffer on dst_node (a RAM node: disk nodes only talk
 * to RAM): a part of a file is its size, a file all of it. */
static int ops_full_read(void *base, void *obj, void **ptr, size_t *size, unsigned dst_node)
{
	(void)dst_node;
	wrap_base *b = base;
	unistd_obj *o = obj;
	struct stat sb;
	const struct dit_gather *g;
	off_t start = dit_diskops_obj_of(b, obj, &g);
	if (g) {
		sb.st_size = (off_t)dit_gather_size(obj);
	} else if (start) {
		sb.st_size = (off_t)o->size;
	} else if (stat(o->path, &sb) != 0) {
		dit_disk_fault_record(b->fault, 0, errno, o->path, 0, 0, 0);
		sb.st_size = (off_t)o->size;
	}
	*size = (size_t)sb.st_size;
	if (starpu_malloc_flags(ptr, *size ? *size : 1, 0) != 0 || !*ptr) {
		dit_disk_fault_record(b->fault, 0, ENOMEM, o->path, start, *size, 0);
		*size = 0;
		return 0;
	}
	dit_diskops_transfer(b, obj, *ptr, 0, *size, 0);
	return 0;
}

/* The object becomes exactly size bytes of ptr (a file of its own: StarPU's; a part
 * of a file keeps its size). */
static int ops_full_write(void *base, void *obj, void *ptr, size_t size)
{
	wrap_base *b = base;
	unistd_obj *o = obj;
	const struct dit_gather *g;
	off_t start = dit_diskops_obj_of(b, obj, &g);
	if (g) { /* the checkpoint is never written */
		dit_disk_fault_record(b->fault, 1, EROFS, "the checkpoint", 0, size, 0);
		return 0;
	}
	if (size != o->size) {
		if (start || truncate(o->path, (off_t)size) != 0) {
			dit_disk_fault_record(b->fault, 1, start ? EINVAL : errno, o->path, start,
			                      size, 0);
			return 0;
		}
		o->size = size;
	}
	dit_diskops_transfer(b, obj, ptr, 0, size, 1);
	return 0;
}

/* ------------------------------------------------------------------ asynchronous I/O */

/* An I/O thread: one of the node's, taking the pieces of the requests in submission
 * order (all of one request's before the next one's), each a blocking transfer;
 * whoever does a request's last piece finishes it. StarPU's workers keep computing
 * meanwhile. */
static void *io_thread(void *arg)
{
	wrap_base *b = arg;
	pthread_mutex_lock(&b->lock);
	for (;;) {
		while (!b->head && !b->stop)
			pthread_cond_wait(&b->work, &b->lock);
		io_req *r = b->head;
		if (!r)
			break; /* stopping, nothing left */
		size_t i = r->handed++;
		if (i == 0)
			dit_io_req_started(r);
		if (r->handed == r->npieces) {
			b->head = r->next;
			if (!b->head)
				b->tail = NULL;
		}
		pthread_mutex_unlock(&b->lock);
		dit_diskops_piece(r, i);
		pthread_mutex_lock(&b->lock);
		if (--r->pending == 0) {
			pthread_mutex_unlock(&b->lock);
			dit_io_req_finish(r);
			pthread_mutex_lock(&b->lock);
			r->done = 1;
			pthread_cond_broadcast(&b->done);
		}
	}
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

/* NULL (no thread, no memory) makes StarPU do the request synchronously. */
static void *submit(wrap_base *b, void *obj, void *buf, off_t offset, size_t size, int write)
{
	io_req *r = b->nthreads ? malloc(sizeof *r) : NULL;
	if (!r)
		return NULL;
	int rc = dit_io_req_init(r, b, obj, buf, offset, size, write);
	if (rc != 0 || r->npieces == 0) {
		if (rc == 0) /* nothing to move (not a checked read: those have bytes) */
			dit_io_req_finish(r);
		r->done = 1; /* or failed before any piece, recorded */
		return r;
	}
	pthread_mutex_lock(&b->lock);
	if (b->tail)
		b->tail->next = r;
	else
		b->head = r;
	b->tail = r;
	pthread_cond_broadcast(&b->work);
	pthread_mutex_unlock(&b->lock);
	return r;
}

static void *ops_async_read(void *base, void *obj, void *buf, off_t offset, size_t size)
{
	return submit(base, obj, buf, offset, size, 0);
}

static void *ops_async_write(void *base, void *obj, void *buf, off_t offset, size_t size)
{
	return submit(base, obj, buf, offset, size, 1);
}

/* StarPU passes only the request, which knows its node. */
static int ops_test_request(void *event)
{
	io_req *r = event;
	pthread_mutex_lock(&r->b->lock);
	int done = r->done;
	pthread_mutex_unlock(&r->b->lock);
	return done;
}

static void ops_wait_request(void *event)
{
	io_req *r = event;
	pthread_mutex_lock(&r->b->lock);
	while (!r->done)
		pthread_cond_wait(&r->b->done, &r->b->lock);
	pthread_mutex_unlock(&r->b->lock);
}

static void ops_free_request(void *event)
{
	free(event);
}

/* Everything else is the stock backend's, given its own base. */
static void *plug_wrap(const struct starpu_disk_ops *stock, const char *dir, dit_diskops *d,
                       starpu_ssize_t size)
{
	wrap_base *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	b->stock = stock;
	b->fault = d ? &d->fault : NULL;
	b->d = d;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->work, NULL);
	pthread_cond_init(&b->done, NULL);
	int want = d ? d->nreads : DIT_DISK_READS_DEFAULT;
	while (b->nthreads < want &&
	       pthread_create(&b->threads[b->nthreads], NULL, io_thread, b) == 0)
		b->nthreads++;
	b->stock_base = stock->plug((void *)dir, size);
	return b;
}

static void *ops_plug(void *parameter, starpu_ssize_t size)
{
	dit_diskops *d = parameter;
	return plug_wrap(d->stock, d->dir, d, size);
}

static void *plug_plain_unistd(void *parameter, starpu_ssize_t size)
{
	return plug_wrap(&starpu_disk_unistd_ops, parameter, NULL, size);
}

static void *plug_plain_o_direct(void *parameter, starpu_ssize_t size)
{
	return plug_wrap(&starpu_disk_unistd_o_direct_ops, parameter, NULL, size);
}

static void ops_unplug(void *base)
{
	wrap_base *b = base;
	if (!b)
		return;
	/* every request is done by now: StarPU waited for them */
	pthread_mutex_lock(&b->lock);
	b->stop = 1;
	pthread_cond_broadcast(&b->work);
	pthread_mutex_unlock(&b->lock);
	for (int i = 0; i < b->nthreads; i++)
		pthread_join(b->threads[i], NULL);
	b->stock->unplug(b->stock_base);
	free(b->bases);
	pthread_cond_destroy(&b->work);
	pthread_cond_destroy(&b->done);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

/* The stock calibration: it allocates and writes a scratch object through the node
 * (so through these ops) and keeps its results under the stock base's path. */
static int ops_bandwidth(unsigned node, void *base)
{
	wrap_base *b = base;
	return b ? b->stock->bandwidth(node, b->stock_base) : 0;
}

static void *ops_alloc(void *base, size_t size)
{
	wrap_base *b = base;
	return b->stock->alloc(b->stock_base, size);
}

static void ops_free(void *base, void *obj, size_t size)
{
	wrap_base *b = base;
	b->stock->free(b->stock_base, obj, size);
}

off_t dit_diskops_obj_of(wrap_base *b, const void *obj, const struct dit_gather **gather)
{
	obj_base key = {.obj = obj};
	pthread_mutex_lock(&b->lock);
	const obj_base *e =
	    b->nbases ? bsearch(&key, b->bases, b->nbases, sizeof key, dit_obj_base_cmp) : NULL;
	off_t start = e ? e->base : 0;
	size_t g = e ? e->gather : 0;
	pthread_mutex_unlock(&b->lock);
	*gather = g && b->d && g <= b->d->ngathers ? &b->d->gathers[g - 1] : NULL;
	return start;
}

/* Records that obj starts at base in its file (gather: of blocks read where they lie,
 * its index + 1); 0 when out of memory. */
static int add_base(wrap_base *b, const void *obj, off_t base, size_t gather)
{
	pthread_mutex_lock(&b->lock);
	int ok = dit_grow((void **)&b->bases, &b->cap, b->nbases, sizeof *b->bases, 64) == 0;
	if (ok) {
		size_t i = b->nbases++;
		for (; i > 0 && (uintptr_t)b->bases[i - 1].obj > (uintptr_t)obj; i--)
			b->bases[i] = b->bases[i - 1];
		b->bases[i] = (obj_base){.obj = obj, .base = base, .gather = gather};
	}
	pthread_mutex_unlock(&b->lock);
	return ok;
}

static void remove_base(wrap_base *b, const void *obj)
{
	pthread_mutex_lock(&b->lock);
	for (size_t i = 0; i < b->nbases; i++)
		if (b->bases[i].obj == obj) {
			memmove(b->bases + i, b->bases + i + 1,
			        (b->nbases - i - 1) * sizeof *b->bases);
			b->nbases--;
			break;
		}
	pthread_mutex_unlock(&b->lock);
}

/* pos: a file's name in the node's folder, or "NAME@OFFSET": size bytes of file NAME
 * from byte OFFSET on. */
static void *ops_open(void *base, void *pos, size_t size)
{
	wrap_base *b = base;
	if (!strncmp(pos, "#extents:", strlen("#extents:"))) { /* blocks where they lie */
		void *g = dit_gather_open(b, pos, size);
		if (g && !add_base(b, g, 0, dit_gather_index(g) + 1)) {
			free(g);
			g = NULL;
		}
		return g;
	}
	const char *at = strrchr(pos, '@');
	char *end = NULL;
	long long offset = at && at[1] ? strtoll(at + 1, &end, 10) : 0;
	if (!at || !end || *end || offset < 0)
		return b->stock->open(b->stock_base, pos, size);
	char *name = strndup(pos, (size_t)(at - (const char *)pos));
	void *obj = name ? b->stock->open(b->stock_base, name, size) : NULL;
	free(name);
	if (obj && offset && !add_base(b, obj, (off_t)offset, 0)) {
		b->stock->close(b->stock_base, obj, size);
		obj = NULL;
	}
	return obj;
}

static void ops_close(void *base, void *obj, size_t size)
{
	wrap_base *b = base;
	const struct dit_gather *g;
	dit_diskops_obj_of(b, obj, &g);
	int gather = g != NULL;
	remove_base(b, obj);
	if (gather)
		free(obj);
	else
		b->stock->close(b->stock_base, obj, size);
}

static void fill_ops(struct starpu_disk_ops *ops)
{
	memset(ops, 0, sizeof *ops);
	ops->plug = ops_plug;
	ops->unplug = ops_unplug;
	ops->bandwidth = ops_bandwidth;
	ops->alloc = ops_alloc;
	ops->free = ops_free;
	ops->open = ops_open;
	ops->close = ops_close;
	ops->read = ops_read;
	ops->write = ops_write;
	ops->full_read = ops_full_read;
	ops->full_write = ops_full_write;
	ops->async_read = ops_async_read;
	ops->async_write = ops_async_write;
	ops->test_request = ops_test_request;
	ops->wait_request = ops_wait_request;
	ops->free_request = ops_free_request;
	/* no copy (disk to disk: the stock one asserts on errors), no asynchronous full
	 * read or write (StarPU does those synchronously) */
}

int dit_diskops_reads_env(void)
{
	const char *v = getenv("DITSTAR_DISK_READS");
	if (!v || !*v)
		return DIT_DISK_READS_DEFAULT;
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	return *end || errno || n < 1 || n > DIT_DISK_READS_MAX ? -1 : (int)n;
}

void dit_diskops_init(dit_diskops *d, const char *dir, int o_direct, int nreads)
{
	memset(d, 0, sizeof *d);
	d->nreads = nreads < 1 ? 1 : nreads > DIT_DISK_READS_MAX ? DIT_DISK_READS_MAX : nreads;
	fill_ops(&d->ops);
	d->stock = o_direct ? &starpu_disk_unistd_o_direct_ops : &starpu_disk_unistd_ops;
	d->dir = dir;
	pthread_mutex_init(&d->fault.lock, NULL);
	pthread_mutex_init(&d->sums_lock, NULL);
	const char *edit = getenv("DIT_TEST_STORE_EDIT");
	d->edit_at = edit ? strtol(edit, NULL, 10) : 0;
	const char *cut = getenv("DIT_TEST_STORE_CUT"), *swap = getenv("DIT_TEST_STORE_SWAP");
	d->cut_at = cut ? strtol(cut, NULL, 10) : 0;
	d->swap_at = swap ? strtol(swap, NULL, 10) : 0;
}

int dit_diskops_expect(dit_diskops *d, void *obj, size_t size, const uint64_t *xxh3, size_t n,
                       long long first)
{
	uint64_t *sums = n && size % n == 0 ? malloc(n * sizeof *sums) : NULL;
	if (!sums)
		return -1;
	memcpy(sums, xxh3, n * sizeof *sums);
	pthread_mutex_lock(&d->sums_lock);
	int rc = dit_grow((void **)&d->sums, &d->cap, d->nsums, sizeof *d->sums, 64);
	if (rc == 0) {
		size_t i = d->nsums++;
		while (i > 0 && (uintptr_t)d->sums[i - 1].obj > (uintptr_t)obj) {
			d->sums[i] = d->sums[i - 1];
			i--;
		}
		d->sums[i] = (dit_disk_sum){
		    .obj = obj, .size = size, .piece = size / n, .first = first, .xxh3 = sums};
	} else {
		free(sums);
	}
	pthread_mutex_unlock(&d->sums_lock);
	return rc;
}

void dit_diskops_forget(dit_diskops *d)
{
	pthread_mutex_lock(&d->sums_lock);
	for (size_t i = 0; i < d->nsums; i++)
		free(d->sums[i].xxh3);
	free(d->sums);
	d->sums = NULL;
	d->nsums = d->cap = 0;
	pthread_mutex_unlock(&d->sums_lock);
	dit_gather_forget(d);
}

int dit_diskops_register(dit_diskops *d, starpu_ssize_t size)
{
	return starpu_disk_register(&d->ops, d, size);
}

long dit_diskops_fault(dit_diskops *d, dit_disk_fault *out)
{
	pthread_mutex_lock(&d->fault.lock);
	long n = d->fault.failures;
	if (out) {
		out->failures = n;
		out->write = d->fault.write;
		out->err = d->fault.err;
		out->offset = d->fault.offset;
		out->size = d->fault.size;
		out->done = d->fault.done;
		out->corrupt = d->fault.corrupt;
		out->want = d->fault.want;
		out->got = d->fault.got;
		out->block = d->fault.block;
		memcpy(out->path, d->fault.path, sizeof out->path);
	}
	pthread_mutex_unlock(&d->fault.lock);
	return n;
}

void dit_diskops_plain(struct starpu_disk_ops *ops, int o_direct)
{
	fill_ops(ops);
	ops->plug = o_direct ? plug_plain_o_direct : plug_plain_unistd;
}
