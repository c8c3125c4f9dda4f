/* One request of the chunk store's disk ops (see dit_diskops.h): its pread / pwrite
 * loop, the checksums of a whole chunk's blocks, and the record of what failed. */
#define _GNU_SOURCE
#include "dit_diskops_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

/* Linux moves at most this many bytes in one read or write call. */
#define IO_MAX ((size_t)0x7ffff000)
/* what a checked read reads before hashing it, through the page cache and with
 * O_DIRECT (multiples of the page) */
#define CHECK_PIECE        ((size_t)256 << 10)
#define CHECK_PIECE_DIRECT ((size_t)4 << 20)

void dit_disk_fault_record(dit_disk_fault *f, int write, int err, const char *path, off_t offset,
                           size_t size, size_t done)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	if (f->failures++ == 0) {
		f->write = write;
		f->err = err;
		f->offset = (long long)offset;
		f->size = size;
		f->done = done;
		f->block = -1;
		snprintf(f->path, sizeof f->path, "%s", path ? path : "?");
	}
	pthread_mutex_unlock(&f->lock);
}

/* A block read whole whose XXH3-64 is got, not want: at offset in path. */
static void record_corrupt(dit_disk_fault *f, const char *path, off_t offset, size_t size,
                           long long block, uint64_t want, uint64_t got)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	if (f->failures++ == 0) {
		f->write = 0;
		f->err = 0;
		f->offset = (long long)offset;
		f->size = size;
		f->done = size;
		f->corrupt = 1;
		f->block = block;
		f->want = want;
		f->got = got;
		snprintf(f->path, sizeof f->path, "%s", path ? path : "?");
	}
	pthread_mutex_unlock(&f->lock);
}

/* Whether a read of obj must be checked (all of it is read): then *want is its
 * checksums (their array stays until dit_diskops_forget, after the last read), and
 * *edit tells the test hook to edit the file first. */
static int must_check(dit_diskops *d, const void *obj, off_t offset, size_t size,
                      dit_disk_sum *want, int *edit)
{
	if (!d)
		return 0;
	dit_disk_sum key = {.obj = obj};
	int check = 0;
	pthread_mutex_lock(&d->sums_lock);
	const dit_disk_sum *s =
	    d->nsums ? bsearch(&key, d->sums, d->nsums, sizeof *d->sums, dit_disk_sum_cmp) : NULL;
	if (s) {
		d->reads++;
		if (offset == 0 && size == s->size) {
			*want = *s;
			check = 1;
			*edit = ++d->verified == d->edit_at;
		}
	}
	pthread_mutex_unlock(&d->sums_lock);
	return check;
}

/* The test hook: finite values over the first 64 bytes at offset. */
static void edit_file(const char *path, off_t offset)
{
	float v[16];
	for (int i = 0; i < 16; i++)
		v[i] = 0.5f;
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (pwrite(fd, v, sizeof v, offset) != (ssize_t)sizeof v)
		fprintf(stderr, "DIT_TEST_STORE_EDIT: %s: cannot write\n", path);
	close(fd);
}

static int aligned(const void *buf, off_t offset, size_t size)
{
	size_t page = (size_t)getpagesize();
	return (uintptr_t)buf % page == 0 && (size_t)offset % page == 0 && size % page == 0;
}

static unsigned long long elapsed_ns(const struct timespec *a, const struct timespec *b)
{
	return (unsigned long long)((b->tv_sec - a->tv_sec) * 1000000000LL +
	                            (b->tv_nsec - a->tv_nsec));
}

/* The object's descriptor for a request, or -1 to open one by path: StarPU keeps none
 * open, or the object is O_DIRECT and the request is not page-aligned (the stock
 * variant asserts), which then goes through a buffered descriptor (*flags without
 * O_DIRECT). */
static int request_fd(const unistd_obj *o, const void *buf, off_t offset, size_t size, int *flags)
{
	*flags = o->flags;
#ifdef O_DIRECT
	if ((*flags & O_DIRECT) && !aligned(buf, offset, size)) {
		*flags &= ~O_DIRECT;
		return -1;
	}
#else
	(void)buf;
	(void)offset;
	(void)size;
#endif
	return o->descriptor;
}

/* A checked read's hashes: one XXH3-64 state over the block being read, whose digest
 * is compared with the manifest's when the block is whole; the first block that
 * differs is kept. */
typedef struct block_hash {
	XXH3_state_t *st;
	const dit_disk_sum *want;
	size_t at, i; /* bytes of block i hashed so far */
	int bad;      /* the first differing block: its index and hash */
	size_t bad_i;
	uint64_t bad_got;
} block_hash;

/* Block i's digest against the manifest's. */
static void block_done(block_hash *h, uint64_t got)
{
	if (!h->bad && got != h->want->xxh3[h->i]) {
		h->bad = 1;
		h->bad_i = h->i;
		h->bad_got = got;
	}
	h->i++;
}

/* len bytes more of the read, hashed into their blocks. */
static void block_hash_update(block_hash *h, const char *p, size_t len)
{
	while (len > 0) {
		size_t take = h->want->piece - h->at < len ? h->want->piece - h->at : len;
		XXH3_64bits_update(h->st, p, take);
		p += take;
		len -= take;
		h->at += take;
		if (h->at == h->want->piece) {
			block_done(h, XXH3_64bits_digest(h->st));
			XXH3_64bits_reset(h->st);
			h->at = 0;
		}
	}
}

/* The pieces a checked read reads (*piece), so that each is hashed as it lands, while
 * it is in the core's cache: hashing the whole chunk after its read made the read rate
 * fall with the chunk size and the reads in flight (1150 MB/s at 14 MiB, 700 at
 * 28 MiB, 590 with three in flight, on a 2 vCPU EPYC), which the planner could not
 * predict; an O_DIRECT read waits for the device once a piece, so its pieces are
 * bigger (256 KiB ones read at 850 MB/s inside a run where 4 MiB ones read at 1160).
 * h->st NULL (*piece kept) when out of memory: the read is hashed after it. */
static void hash_start(block_hash *h, const dit_disk_sum *want, int flags, size_t *piece)
{
	*h = (block_hash){.st = XXH3_createState(), .want = want};
	if (h->st) {
		XXH3_64bits_reset(h->st);
		*piece = CHECK_PIECE;
#ifdef O_DIRECT
		if (flags & O_DIRECT)
			*piece = CHECK_PIECE_DIRECT;
#else
		(void)flags;
#endif
	}
}

/* size bytes moved between buf and the file at offset, piece bytes a call, each piece
 * read hashed into h (when not NULL); the bytes moved, and *e the errno of a failure
 * (ENOSPC: a write that moves nothing; 0: the end of the file). */
static size_t move_pieces(int fd, void *buf, off_t offset, size_t size, int write, size_t piece,
                          block_hash *h, int *e)
{
	size_t done = 0;
	while (done < size) {
		size_t n = size - done < piece ? size - done : piece;
		ssize_t r = write ? pwrite(fd, (const char *)buf + done, n, offset + (off_t)done)
		                  : pread(fd, (char *)buf + done, n, offset + (off_t)done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			*e = errno;
			break;
		}
		if (r == 0) { /* end of file on a read; a write that moves nothing */
			*e = write ? ENOSPC : 0;
			break;
		}
		if (h)
			block_hash_update(h, (const char *)buf + done, (size_t)r);
		done += (size_t)r;
	}
	return done;
}

/* A checked read complete (its blocks hashed in h, or now when h could not hash): its
 * rate counted (from t0, c0); a changed block zeroes the whole read, recorded. */
static int read_verify(wrap_base *b, const unistd_obj *o, off_t start, void *buf, block_hash *h,
                       int hashed, const struct timespec *t0, const struct timespec *c0)
{
	if (!hashed)
		for (size_t i = 0; i < o->size / h->want->piece; i++)
			block_done(
			    h, XXH3_64bits((const char *)buf + i * h->want->piece, h->want->piece));
	struct timespec t1, c1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* the rate of a chunk's read, checksum included (the planner's disk link), and
	 * the CPU time the reading thread spent on it (what it takes from the workers
	 * when they share its cores) */
	__atomic_add_fetch(&b->d->read_bytes, (unsigned long long)o->size, __ATOMIC_RELAXED);
	__atomic_add_fetch(&b->d->read_ns, elapsed_ns(t0, &t1), __ATOMIC_RELAXED);
	__atomic_add_fetch(&b->d->read_cpu_ns, elapsed_ns(c0, &c1), __ATOMIC_RELAXED);
	if (!h->bad)
		return 0;
	memset(buf, 0, o->size); /* never hand changed weights on */
	size_t p = h->want->piece;
	record_corrupt(b->fault, o->path, start + (off_t)(h->bad_i * p), p,
	               h->want->first + (long long)h->bad_i, h->want->xxh3[h->bad_i], h->bad_got);
	return -1;
}

int dit_diskops_transfer(void *base, void *obj, void *buf, off_t offset, size_t size, int write)
{
	wrap_base *b = base;
	const unistd_obj *o = obj;
	dit_disk_sum want = {0};
	int edit = 0, check = !write && must_check(b->d, obj, offset, size, &want, &edit);
	off_t start = dit_diskops_obj_base(b, obj);
	offset += start; /* in the file */
	if (edit)
		edit_file(o->path, offset);
	int flags, own = -1;
	int fd = request_fd(o, buf, offset, size, &flags);
	if (fd < 0) {
		fd = own = open(o->path, flags | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			if (!write)
				memset(buf, 0, size);
			dit_disk_fault_record(b->fault, write, e, o->path, offset, size, 0);
			return -1;
		}
	}
	size_t piece = IO_MAX;
	int e = 0;
	struct timespec t0, c0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	block_hash h = {0};
	if (check)
		hash_start(&h, &want, flags, &piece);
	size_t done = move_pieces(fd, buf, offset, size, write, piece, h.st ? &h : NULL, &e);
	if (own >= 0)
		close(own);
	int hashed = h.st != NULL;
	XXH3_freeState(h.st);
	h.st = NULL;
	int rc = 0;
	if (done == size && check) {
		rc = read_verify(b, o, start, buf, &h, hashed, &t0, &c0);
	} else if (done != size) {
		if (!write)
			memset((char *)buf + done, 0, size - done);
		dit_disk_fault_record(b->fault, write, e, o->path, offset, size, done);
		rc = -1;
	}
	return rc;
}
