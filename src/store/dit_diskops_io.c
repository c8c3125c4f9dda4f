/* One request of the chunk store's disk ops (see dit_diskops.h): its pread / pwrite
 * loop, the checksum of a whole chunk read, and the record of what failed. */
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
		snprintf(f->path, sizeof f->path, "%s", path ? path : "?");
	}
	pthread_mutex_unlock(&f->lock);
}

static void record_corrupt(dit_disk_fault *f, const char *path, size_t size, uint64_t want,
                           uint64_t got)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	if (f->failures++ == 0) {
		f->write = 0;
		f->err = 0;
		f->offset = 0;
		f->size = size;
		f->done = size;
		f->corrupt = 1;
		f->want = want;
		f->got = got;
		snprintf(f->path, sizeof f->path, "%s", path ? path : "?");
	}
	pthread_mutex_unlock(&f->lock);
}

/* Whether a read of obj must be checked (all of it is read): then *want is its
 * checksum, and *edit tells the test hook to edit the file first. */
static int must_check(dit_diskops *d, const void *obj, off_t offset, size_t size, uint64_t *want,
                      int *edit)
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
			check = 1;
			*want = s->xxh3;
			*edit = ++d->verified == d->edit_at;
		}
	}
	pthread_mutex_unlock(&d->sums_lock);
	return check;
}

/* The test hook: finite values over the first 64 bytes of the file. */
static void edit_file(const char *path)
{
	float v[16];
	for (int i = 0; i < 16; i++)
		v[i] = 0.5f;
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (pwrite(fd, v, sizeof v, 0) != (ssize_t)sizeof v)
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

/* A checked read's hash state, and the pieces it reads (*piece) so that each is hashed
 * as it lands, while it is in the core's cache: hashing the whole chunk after its read
 * made the read rate fall with the chunk size and the reads in flight (1150 MB/s at
 * 14 MiB, 700 at 28 MiB, 590 with three in flight, on a 2 vCPU EPYC), which the
 * planner could not predict; an O_DIRECT read waits for the device once a piece, so its
 * pieces are bigger (256 KiB ones read at 850 MB/s inside a run where 4 MiB ones read
 * at 1160). NULL (*piece kept) when out of memory: the read is hashed after. */
static XXH3_state_t *hash_start(int flags, size_t *piece)
{
	XXH3_state_t *hs = XXH3_createState();
	if (hs) {
		XXH3_64bits_reset(hs);
		*piece = CHECK_PIECE;
#ifdef O_DIRECT
		if (flags & O_DIRECT)
			*piece = CHECK_PIECE_DIRECT;
#else
		(void)flags;
#endif
	}
	return hs;
}

/* size bytes moved between buf and the file at offset, piece bytes a call, each piece
 * read hashed into hs (when not NULL); the bytes moved, and *e the errno of a failure
 * (ENOSPC: a write that moves nothing; 0: the end of the file). */
static size_t move_pieces(int fd, void *buf, off_t offset, size_t size, int write, size_t piece,
                          XXH3_state_t *hs, int *e)
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
		if (hs)
			XXH3_64bits_update(hs, (const char *)buf + done, (size_t)r);
		done += (size_t)r;
	}
	return done;
}

/* A checked read complete: its rate counted (from t0, c0), its checksum got compared
 * with want; a changed chunk is zeroed and recorded. */
static int read_verify(wrap_base *b, const unistd_obj *o, void *buf, size_t size, uint64_t want,
                       uint64_t got, const struct timespec *t0, const struct timespec *c0)
{
	struct timespec t1, c1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* the rate of a chunk's read, checksum included (the planner's disk link), and
	 * the CPU time the reading thread spent on it (what it takes from the workers
	 * when they share its cores) */
	__atomic_add_fetch(&b->d->read_bytes, (unsigned long long)size, __ATOMIC_RELAXED);
	__atomic_add_fetch(&b->d->read_ns, elapsed_ns(t0, &t1), __ATOMIC_RELAXED);
	__atomic_add_fetch(&b->d->read_cpu_ns, elapsed_ns(c0, &c1), __ATOMIC_RELAXED);
	if (got == want)
		return 0;
	memset(buf, 0, size); /* never hand changed weights on */
	record_corrupt(b->fault, o->path, size, want, got);
	return -1;
}

int dit_diskops_transfer(void *base, void *obj, void *buf, off_t offset, size_t size, int write)
{
	wrap_base *b = base;
	unistd_obj *o = obj;
	int flags, own = -1;
	int fd = request_fd(o, buf, offset, size, &flags);
	uint64_t want = 0;
	int edit = 0, check = !write && must_check(b->d, obj, offset, size, &want, &edit);
	if (edit)
		edit_file(o->path);
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
	XXH3_state_t *hs = check ? hash_start(flags, &piece) : NULL;
	size_t done = move_pieces(fd, buf, offset, size, write, piece, hs, &e);
	if (own >= 0)
		close(own);
	int hashed = hs != NULL;
	uint64_t got = hs ? XXH3_64bits_digest(hs) : 0;
	XXH3_freeState(hs);
	if (done == size && check) {
		if (!hashed)
			got = XXH3_64bits(buf, size);
		return read_verify(b, o, buf, size, want, got, &t0, &c0);
	}
	if (done == size)
		return 0;
	if (!write)
		memset((char *)buf + done, 0, size - done);
	dit_disk_fault_record(b->fault, write, e, o->path, offset, size, done);
	return -1;
}
