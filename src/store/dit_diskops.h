/* StarPU disk ops for the chunk store: StarPU's unistd backend (or its O_DIRECT
 * variant) for everything but the data movement, which is done here with pread /
 * pwrite loops that retry EINTR and short transfers and never assert. StarPU 1.4.10's
 * stock backend asserts when a read or write fails (and its POSIX AIO requests abort
 * on an error), which kills the process deep inside StarPU; these ops instead record
 * the first failure in a dit_disk_fault the caller owns, zero-fill what a failed read
 * did not bring, and let the run go on, so that it can stop cleanly and say which
 * file failed. Asynchronous requests go to the node's I/O threads, which move their
 * pieces (4 MiB) with the same loops, several at once (the reads in flight the drive's
 * queue takes: DIT_DISK_READS_DEFAULT, or DITSTAR_DISK_READS; no POSIX AIO, so no
 * 2 GiB limit per request either).
 *
 * A disk object may be a part of a file: opened as "NAME@OFFSET" (the chunk store's
 * chunks, each an extent of its blocks file), its offsets count from OFFSET.
 *
 * Every read of a whole disk object whose checksums were given (dit_diskops_expect: a
 * chunk's blocks, from the store's manifest) is checked against them before StarPU
 * gets the data, block by block as the pieces land: a block that changed on disk
 * since the store was checked (edited, even with finite values) is recorded as a
 * failed read, the buffer zeroed, so the run stops as on a read error and says which
 * block of which file changed. */
#ifndef DIT_DISKOPS_H
#define DIT_DISKOPS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <starpu.h>

#include "dit_extent.h"

#define DIT_DISK_PATH_MAX 4096
/* reads in flight on a disk node: its I/O threads (DITSTAR_DISK_READS) */
#define DIT_DISK_READS_DEFAULT 4
#define DIT_DISK_READS_MAX     64

/* The first failed request on a disk node (later ones are only counted). */
typedef struct dit_disk_fault {
	pthread_mutex_t lock;
	long failures;    /* failed requests so far (0: none) */
	int write;        /* the first one was a write (else a read) */
	int err;          /* its errno; 0: the file ended before the request did */
	long long offset; /* the request: offset in the file and size */
	size_t size;
	size_t done;                  /* bytes it moved before failing */
	int corrupt;                  /* a read whose data did not match the checksum */
	uint64_t want, got;           /* then the block's expected and read XXH3-64, */
	long long block;              /* its number (offset and size: the block's) */
	char path[DIT_DISK_PATH_MAX]; /* the file */
} dit_disk_fault;

/* A disk object's expected checksums: one per piece of piece bytes, the first one of
 * block number first. */
typedef struct dit_disk_sum {
	const void *obj;
	size_t size, piece;
	long long first;
	uint64_t *xxh3; /* size / piece of them, owned */
} dit_disk_sum;

/* One disk node's ops and its fault record. StarPU keeps pointers to ops (and, through
 * the node's base, to fault) until it shuts down: the object must outlive the
 * runtime. */
typedef struct dit_diskops {
	struct starpu_disk_ops ops;
	const struct starpu_disk_ops *stock; /* the backend whose plug/open/... are used */
	const char *dir;                     /* only read while registering */
	dit_disk_fault fault;
	pthread_mutex_t sums_lock; /* guards what follows */
	dit_disk_sum *sums;        /* objects with a checksum, sorted by address */
	size_t nsums, cap;
	long reads, verified; /* whole reads of those objects, and checked ones */
	/* bytes of the checked reads, the nanoseconds while one was under way (read and
	 * checksum: the link's busy time) and the reading threads' CPU nanoseconds in
	 * them */
	unsigned long long read_bytes, read_ns, read_cpu_ns;
	long edit_at; /* test hooks (DIT_TEST_STORE_EDIT, _CUT, _SWAP), 0: off */
	long cut_at, swap_at;
	int nreads; /* reads in flight: the node's I/O threads */
	/* chunks read where their blocks lie (dit_diskops_add_extents), and the
	 * descriptors of their files */
	struct dit_gather *gathers;
	size_t ngathers;
	struct dit_gather_files *gfiles;
	size_t ngfiles;
} dit_diskops;

/* Fills d for a disk node in directory dir (o_direct: StarPU's O_DIRECT variant,
 * whose page alignment is kept; an unaligned request goes through a buffered
 * descriptor instead of failing), with nreads reads in flight (1 to
 * DIT_DISK_READS_MAX). */
void dit_diskops_init(dit_diskops *d, const char *dir, int o_direct, int nreads);

/* The reads in flight DITSTAR_DISK_READS asks for (unset or empty: the default); -1
 * when it is not a number from 1 to DIT_DISK_READS_MAX. */
int dit_diskops_reads_env(void);

/* From now on, a read of all size bytes of disk object obj (from starpu_disk_open on
 * this node) must have, for each of its n blocks of size / n bytes, XXH3-64 xxh3[i]
 * (copied), else it is recorded as a failed read (corrupt) of block first + i.
 * Returns -1 when out of memory. */
int dit_diskops_expect(dit_diskops *d, void *obj, size_t size, const uint64_t *xxh3, size_t n,
                       long long first);

/* A chunk read where its blocks lie in the checkpoint's files: blocks first to
 * first + n - 1 of x (which must outlive the node), the disk object
 * "#extents:<returned index>" for starpu_disk_open (size: n blocks). x's files are
 * opened now and stay open until dit_diskops_forget. -1 with errno when a file cannot
 * be opened or memory is short. Its reads fill the blocks' slots (the rest zero) and
 * are checked as the store's: dit_diskops_expect with the blocks' checksums. */
int dit_diskops_add_extents(dit_diskops *d, const dit_extents *x, int64_t first, int64_t n);

/* Forgets every checksum and chunk read where it lies (before the objects are
 * closed). */
void dit_diskops_forget(dit_diskops *d);

/* Test only: with DIT_TEST_STORE_EDIT=N in the environment when dit_diskops_init
 * runs, the ops overwrite the first 64 bytes of the Nth checked read's object with
 * finite floats (0.5) just before reading it, as if someone edited the chunk in the
 * middle of the run (a chunk read in place: its first block's first extent in the
 * checkpoint); with DIT_TEST_STORE_CUT=N they cut the file short there instead, and with
 * DIT_TEST_STORE_SWAP=N they put an edited copy in the file's place (a rename over it,
 * as an update of the checkpoint would). */

/* starpu_disk_register with these ops; returns the node or a negative value. */
int dit_diskops_register(dit_diskops *d, starpu_ssize_t size);

/* Copies the fault record into *out (may be NULL); returns the number of failed
 * requests (0: none). Safe to call while requests run. */
long dit_diskops_fault(dit_diskops *d, dit_disk_fault *out);

/* The same ops for starpu_disk_register(ops, path, size) with a plain directory path
 * as parameter: failures are not recorded anywhere (reads still zero-fill and never
 * assert). For tests and tools that do not keep a dit_diskops. */
void dit_diskops_plain(struct starpu_disk_ops *ops, int o_direct);

/* A synchronous read or write of these ops: moves size bytes between buf and the disk
 * object obj at offset (base: the node's base, as StarPU passes it; offset from the
 * object's start), its pieces one after the other in the calling thread; 0 when all
 * moved (and a checked read is intact), else -1 with the failure recorded and, for a
 * read, what did not come zeroed. */
int dit_diskops_transfer(void *base, void *obj, void *buf, off_t offset, size_t size, int write);

/* Piece i of request r (dit_diskops_priv.h), in whichever thread does it: every
 * pread and pwrite of these ops happens inside this function, exported so that fault
 * injection can aim at the chunk store's I/O alone (libfiu's enable_stack_by_name with
 * func_name=dit_diskops_piece, tests/test_fault_read.sh). */
struct io_req;
void dit_diskops_piece(struct io_req *r, size_t i);

#endif
