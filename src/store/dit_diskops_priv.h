/* What the chunk store's disk ops (dit_diskops.c) and one request's data movement
 * (dit_diskops_io.c) share (private). */
#ifndef DIT_DISKOPS_PRIV_H
#define DIT_DISKOPS_PRIV_H

#include <stdint.h>
#include <sys/types.h>

#include "dit_diskops.h"

/* A request: size bytes between buf and a disk object, moved a piece at a time by the
 * node's I/O threads (asynchronous: polled by StarPU) or by the caller. A checked read's
 * pieces are its blocks' hash pieces (dit_blockhash.h), each hashed as it lands; the
 * request is verified when its last piece is done. */
typedef struct wrap_base wrap_base;
typedef struct io_req {
	struct io_req *next; /* in the node's queue while pieces are left to hand out */
	wrap_base *b;
	const void *obj;
	char *buf;
	off_t offset; /* in the file: the object's start added */
	size_t size;
	int write;
	const char *path; /* the object's file, its open flags for this request and */
	int flags, fd;    /* descriptor (-1: each piece opens one) */
	const struct dit_gather *gather; /* the blocks' extents in the checkpoint, or NULL */
	int check; /* a checked read: want's blocks, pieces a block, their hashes */
	dit_disk_sum want;
	size_t per;
	uint64_t *psums;
	size_t npieces, handed, pending; /* under the node's lock */
	int failed, err;                 /* the first failed piece: errno, where, what moved */
	long long fail_offset;
	size_t fail_size, fail_done;
	unsigned long long cpu_ns; /* the pieces' threads' CPU time (atomic) */
	int done;                  /* under the node's lock */
} io_req;

/* A chunk read where its blocks lie: blocks first to first + n - 1 of x, whose files'
 * descriptors are fd. */
struct dit_gather {
	const dit_extents *x;
	const int *fd;
	int64_t first, n;
};

/* Where a disk object opened as "NAME@OFFSET" starts in its file. */
typedef struct obj_base {
	const void *obj;
	off_t base;
	size_t gather; /* an object of blocks read where they lie: its index + 1, else 0 */
} obj_base;

/* What StarPU's plug returns for our ops, and what every op receives as base: the
 * stock backend's base, the stock ops, where failures go (NULL: nowhere), and the
 * node's I/O threads (the reads in flight) with their queue of requests. */
struct wrap_base {
	void *stock_base;
	const struct starpu_disk_ops *stock;
	dit_disk_fault *fault;
	dit_diskops *d; /* the checksums (NULL: none) */
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	io_req *head, *tail;
	int stop, nthreads; /* I/O threads running (0: requests done by the caller) */
	pthread_t threads[DIT_DISK_READS_MAX];
	int active; /* checked reads under way, and since when (ns) */
	long long busy_since;
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

/* Disk object obj of node b: where it starts in its file (0 unless it was opened with an
 * offset), and in *gather the extents of the blocks it reads where they lie (NULL: an
 * object of a file). One lookup, under the node's lock. */
off_t dit_diskops_obj_of(wrap_base *b, const void *obj, const struct dit_gather **gather);

/* "#extents:N": the object of the blocks of dit_diskops_add_extents's N, registered in
 * b; NULL when pos names none (or out of memory). */
void *dit_gather_open(wrap_base *b, const char *pos, size_t size);

/* Piece i of r, a read of a gather object: the piece zeroed, then its part of every
 * extent read (and widened) in, then hashed. */
void dit_gather_piece(io_req *r, size_t i);

/* The file of a gather object's block blk (its first extent's), for messages. */
const char *dit_gather_path(const struct dit_gather *g, size_t blk);

/* Closes the gather objects' files and forgets them (dit_diskops_forget). */
void dit_gather_forget(dit_diskops *d);

/* The size a gather object was opened with, and its index in the node's list. */
size_t dit_gather_size(const void *obj);
size_t dit_gather_index(const void *obj);

/* The test hooks on a file: finite values over its 64 bytes at offset (how 1), the
 * file cut short there (2), or an edited copy renamed over it (3). */
void dit_diskops_edit_file(const char *path, off_t offset, int how);

/* The test hooks on a gather object: finite values over 64 bytes of its first block's
 * first extent in the checkpoint, as dit_diskops_edit_file does with how. */
void dit_gather_edit(const struct dit_gather *g, int how);

/* Prepares r, a request of node b (the test hook's edit done); 0, or -1 when it
 * failed before any piece (recorded; a read's buffer zeroed). */
int dit_io_req_init(io_req *r, wrap_base *b, void *obj, void *buf, off_t offset, size_t size,
                    int write);

/* Called as a request's first piece is handed out (under the node's lock). */
void dit_io_req_started(io_req *r);

/* After its last piece: verifies a checked read, records the failure, counts the
 * rate; frees what init took. 0 when the request moved all its bytes intact. */
int dit_io_req_finish(io_req *r);

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
