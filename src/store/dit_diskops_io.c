/* One request of the chunk store's disk ops (see dit_diskops.h): its pieces' pread /
 * pwrite loops, the checksums of a whole chunk's blocks, and the record of what
 * failed. */
#define _GNU_SOURCE
#include "dit_diskops_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define XXH_STATIC_LINKING_ONLY /* a hash state on the stack */
#include <xxhash.h>

#include "dit_blockhash.h"

/* Linux moves at most this many bytes in one read or write call. */
#define IO_MAX ((size_t)0x7ffff000)
/* what a checked read's piece reads before hashing it, through the page cache (with
 * O_DIRECT: the whole piece) */
#define CHECK_READ ((size_t)256 << 10)

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
			++d->verified;
			*edit = d->verified == d->edit_at   ? 1
			        : d->verified == d->cut_at  ? 2
			        : d->verified == d->swap_at ? 3
			                                    : 0;
		}
	}
	pthread_mutex_unlock(&d->sums_lock);
	return check;
}

void dit_diskops_edit_file(const char *path, off_t offset, int how)
{
	if (how == 2) {
		if (truncate(path, offset) != 0)
			fprintf(stderr, "DIT_TEST_STORE_CUT: %s: cannot cut\n", path);
		return;
	}
	if (how == 3) { /* an edited copy renamed over the file */
		char tmp[DIT_DISK_PATH_MAX + 8];
		snprintf(tmp, sizeof tmp, "%s.swap", path);
		FILE *in = fopen(path, "rb"), *out = in ? fopen(tmp, "wb") : NULL;
		char buf[65536];
		size_t n;
		while (out && (n = fread(buf, 1, sizeof buf, in)) > 0)
			fwrite(buf, 1, n, out);
		if (in)
			fclose(in);
		if (!out || fclose(out) != 0 || rename(tmp, path) != 0) {
			fprintf(stderr, "DIT_TEST_STORE_SWAP: %s: cannot swap\n", path);
			return;
		}
		how = 1; /* then the copy edited */
	}
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

static long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static long long cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int dit_io_req_init(io_req *r, wrap_base *b, void *obj, void *buf, off_t offset, size_t size,
                    int write)
{
	const unistd_obj *o = obj;
	*r = (io_req){.b = b, .obj = obj, .buf = buf, .size = size, .write = write};
	int edit = 0;
	r->check = !write && must_check(b->d, obj, offset, size, &r->want, &edit);
	off_t start = dit_diskops_obj_of(b, obj, &r->gather);
	if (r->gather) { /* blocks where they lie: read whole and checked, never written */
		r->path = dit_gather_path(r->gather, 0);
		r->fd = -1;
		if (write || !r->check) {
			if (!write)
				memset(buf, 0, size);
			dit_disk_fault_record(b->fault, write, write ? EROFS : EINVAL, r->path,
			                      offset, size, 0);
			return -1;
		}
		if (edit)
			dit_gather_edit(r->gather, edit);
	} else {
		r->path = o->path;
		r->offset = offset + start; /* in the file */
		if (edit)
			dit_diskops_edit_file(o->path, r->offset, edit);
		r->fd = request_fd(o, buf, r->offset, size, &r->flags);
	}
	if (r->check) { /* the blocks' hash pieces */
		r->per = dit_block_pieces(r->want.piece);
		r->npieces = r->per * (size / r->want.piece);
		r->psums = calloc(r->npieces, sizeof *r->psums);
		if (!r->psums) {
			if (!write)
				memset(buf, 0, size);
			dit_disk_fault_record(b->fault, write, ENOMEM, r->path, r->offset, size, 0);
			return -1;
		}
	} else {
		r->npieces = size ? (size + DIT_HASH_PIECE - 1) / DIT_HASH_PIECE : 0;
	}
	r->pending = r->npieces;
	return 0;
}

/* Piece i of r: *at bytes into the request, *len of them. */
static void piece_at(const io_req *r, size_t i, size_t *at, size_t *len)
{
	size_t whole = r->check ? r->want.piece : r->size, k = r->check ? i % r->per : i;
	size_t start = r->check ? i / r->per * whole : 0;
	*at = start + k * DIT_HASH_PIECE;
	*len = whole - k * DIT_HASH_PIECE < DIT_HASH_PIECE ? whole - k * DIT_HASH_PIECE
	                                                   : DIT_HASH_PIECE;
}

/* len bytes between p and the file at off, step bytes a call, each read hashed into
 * st (when not NULL); the bytes moved, and *e the errno of a failure (ENOSPC: a write
 * that moves nothing; 0: the end of the file). */
static size_t move(int fd, char *p, off_t off, size_t len, int write, size_t step, XXH3_state_t *st,
                   int *e)
{
	size_t done = 0;
	while (done < len) {
		size_t n = len - done < step ? len - done : step;
		ssize_t r = write ? pwrite(fd, p + done, n, off + (off_t)done)
		                  : pread(fd, p + done, n, off + (off_t)done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			*e = r < 0 ? errno : write ? ENOSPC : 0;
			break;
		}
		if (st)
			XXH3_64bits_update(st, p + done, (size_t)r);
		done += (size_t)r;
	}
	return done;
}

void dit_diskops_piece(io_req *r, size_t i)
{
	long long c0 = cpu_ns();
	if (r->gather) {
		dit_gather_piece(r, i);
		__atomic_add_fetch(&r->cpu_ns, (unsigned long long)(cpu_ns() - c0),
		                   __ATOMIC_RELAXED);
		return;
	}
	size_t at, len;
	piece_at(r, i, &at, &len);
	off_t off = r->offset + (off_t)at;
	int fd = r->fd, own = -1, e = 0;
	if (fd < 0)
		fd = own = open(r->path, r->flags | O_CLOEXEC);
	size_t done = 0;
	if (fd < 0) {
		e = errno;
	} else {
		XXH3_state_t st;
		XXH3_INITSTATE(&st);
		XXH3_64bits_reset(&st);
		/* a checked read hashes what lands while it is in the core's cache: a piece
		 * read whole before hashing it made the read rate fall with the reads in
		 * flight through the page cache; an O_DIRECT read waits for the device once
		 * a call, so it reads the piece at once */
		size_t step = !r->check ? IO_MAX : (r->flags & O_DIRECT) ? len : CHECK_READ;
		done = move(fd, r->buf + at, off, len, r->write, step, r->check ? &st : NULL, &e);
		if (r->check && done == len)
			r->psums[i] = XXH3_64bits_digest(&st);
		if (own >= 0)
			close(own);
	}
	if (done < len) {
		if (!r->write)
			memset(r->buf + at + done, 0, len - done);
		pthread_mutex_lock(&r->b->lock);
		if (!r->failed) {
			r->failed = 1;
			r->err = e;
			r->fail_offset = (long long)off;
			r->fail_size = len;
			r->fail_done = done;
		}
		pthread_mutex_unlock(&r->b->lock);
	}
	__atomic_add_fetch(&r->cpu_ns, (unsigned long long)(cpu_ns() - c0), __ATOMIC_RELAXED);
}

void dit_io_req_started(io_req *r)
{
	if (r->check && r->b->d && r->b->active++ == 0)
		r->b->busy_since = now_ns();
}

/* A checked read whose pieces are all in: each block's checksum from its pieces' against
 * the manifest's; a changed block zeroes the whole read, recorded. */
static int verify(io_req *r)
{
	size_t bs = r->want.piece;
	for (size_t blk = 0; blk < r->size / bs; blk++) {
		uint64_t got = dit_block_hash_of(r->psums + blk * r->per, r->per);
		if (got != r->want.xxh3[blk]) {
			memset(r->buf, 0, r->size); /* never hand changed weights on */
			record_corrupt(r->b->fault,
			               r->gather ? dit_gather_path(r->gather, blk) : r->path,
			               r->gather ? -1 : r->offset + (off_t)(blk * bs), bs,
			               r->want.first + (long long)blk, r->want.xxh3[blk], got);
			return -1;
		}
	}
	return 0;
}

int dit_io_req_finish(io_req *r)
{
	wrap_base *b = r->b;
	int rc = 0;
	if (r->failed) {
		dit_disk_fault_record(b->fault, r->write, r->err, r->path, r->fail_offset,
		                      r->fail_size, r->fail_done);
		rc = -1;
	} else if (r->check) {
		rc = verify(r);
	}
	if (r->check && b->d) {
		/* the link's rate: a chunk's bytes over the time the node had a checked read
		 * under way (reads in flight overlap), checksums included; and the CPU time
		 * the reading threads spent (what they take from the workers sharing their
		 * cores) */
		dit_diskops *d = b->d;
		__atomic_add_fetch(&d->read_bytes, (unsigned long long)r->size, __ATOMIC_RELAXED);
		__atomic_add_fetch(&d->read_cpu_ns, r->cpu_ns, __ATOMIC_RELAXED);
		pthread_mutex_lock(&b->lock);
		if (--b->active == 0)
			__atomic_add_fetch(&d->read_ns,
			                   (unsigned long long)(now_ns() - b->busy_since),
			                   __ATOMIC_RELAXED);
		pthread_mutex_unlock(&b->lock);
	}
	free(r->psums);
	r->psums = NULL;
	return rc;
}

int dit_diskops_transfer(void *base, void *obj, void *buf, off_t offset, size_t size, int write)
{
	wrap_base *b = base;
	io_req r;
	if (dit_io_req_init(&r, b, obj, buf, offset, size, write) != 0)
		return -1;
	pthread_mutex_lock(&b->lock);
	dit_io_req_started(&r);
	pthread_mutex_unlock(&b->lock);
	for (size_t i = 0; i < r.npieces; i++)
		dit_diskops_piece(&r, i);
	return dit_io_req_finish(&r);
}
