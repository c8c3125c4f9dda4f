/* What the chunk store's disk ops (dit_diskops.c) and one request's data movement
 * (dit_diskops_io.c) share (private). */
#ifndef DIT_DISKOPS_PRIV_H
#define DIT_DISKOPS_PRIV_H

#include <stdint.h>
#include <sys/types.h>

#include "dit_diskops.h"

/* An asynchronous request: done by the node's I/O thread, polled by StarPU. */
typedef struct wrap_base wrap_base;
typedef struct io_req {
	struct io_req *next;
	wrap_base *b;
	void *obj, *buf;
	off_t offset;
	size_t size;
	int write;
	int done; /* under the queue's lock */
} io_req;

/* Where a disk object opened as "NAME@OFFSET" starts in its file. */
typedef struct obj_base {
	const void *obj;
	off_t base;
} obj_base;

/* What StarPU's plug returns for our ops, and what every op receives as base: the
 * stock backend's base, the stock ops, where failures go (NULL: nowhere), and the
 * node's I/O thread with its queue of requests. */
struct wrap_base {
	void *stock_base;
	const struct starpu_disk_ops *stock;
	dit_disk_fault *fault;
	dit_diskops *d; /* the checksums (NULL: none) */
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	io_req *head, *tail;
	int stop, thread_ok;
	pthread_t thread;
	/* the objects opened with an offset (the stock objects, which StarPU's own
	 * calibration reads the fields of: not wrapped), sorted by address; under lock */
	obj_base *bases;
	size_t nbases, cap;
};

/* The leading fields of StarPU 1.4's struct starpu_unistd_global_obj
 * (src/core/disk_ops/unistd/disk_unistd_global.h), what the stock open/alloc return
 * as a disk object: its descriptor (-1 when StarPU keeps more than 64 files open:
 * then it reopens by path for each request), path and open flags. */
typedef struct unistd_obj {
	int descriptor;
	char *path;
	size_t size;
	int flags;
} unistd_obj;

/* The start in its file of disk object obj of node b: 0 unless it was opened with an
 * offset. */
off_t dit_diskops_obj_base(wrap_base *b, const void *obj);

/* Records a failed request in f (the first one; later ones are only counted): write or
 * read, its errno, the file, the request's offset and size, the bytes it moved. */
void dit_disk_fault_record(dit_disk_fault *f, int write, int err, const char *path, off_t offset,
                           size_t size, size_t done);

/* Orders objects' starts by the object's address. */
static inline int dit_obj_base_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const obj_base *)a)->obj,
	          y = (uintptr_t)((const obj_base *)b)->obj;
	return x < y ? -1 : x > y;
}

/* Orders checksums by their object's address. */
static inline int dit_disk_sum_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const dit_disk_sum *)a)->obj,
	          y = (uintptr_t)((const dit_disk_sum *)b)->obj;
	return x < y ? -1 : x > y;
}

#endif
