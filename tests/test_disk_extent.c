/* Chunks as extents of one blocks file, the way the chunk store is read: disk objects
 * opened as "blocks.bin@OFFSET" on a node of the store's disk ops (4 reads in flight)
 * read the bytes of their own blocks, each block checked against its checksum (XXH3-64
 * of its 4 MiB pieces' XXH3-64s, computed here independently) as the pieces land. Two
 * geometries: small blocks (one piece each) and 9 MiB ones (three pieces, read by
 * several threads at once, the last one short). A byte changed on disk in one block of a
 * chunk is caught when the chunk is read again: the read is recorded as corrupt,
 * naming that block, its offset in the file and both checksums, and the buffer the
 * task gets is zeroed; the other chunks still read intact. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <starpu.h>
#include <xxhash.h>

#include "dit_diskops.h"

#define NBLOCKS 6
#define CHUNK   2 /* blocks a chunk */

static int t;     /* the test number */
static int nfail; /* failed tests */

static void check(int ok, const char *what)
{
	printf("%s %d - %s\n", ok ? "ok" : "not ok", ++t, what);
	nfail += !ok;
}

/* A block's checksum as the store defines it (src/store/dit_blockhash.h): XXH3-64 of
 * the XXH3-64s of its 4 MiB pieces. */
static uint64_t block_sum(const unsigned char *p, size_t n)
{
	uint64_t h[16];
	size_t np = 0;
	for (size_t at = 0; at < n && np < 16; at += (size_t)4 << 20)
		h[np++] = XXH3_64bits(p + at, n - at < ((size_t)4 << 20) ? n - at : (size_t)4 << 20);
	return XXH3_64bits(h, np * sizeof *h);
}

/* Byte i of block b of the file. */
static unsigned char byte_of(int b, size_t i)
{
	return (unsigned char)(b * 37 + (int)(i * 7 % 251) + 1);
}

typedef struct want {
	int first;    /* the chunk's first block */
	size_t block; /* bytes a block */
	int bad;      /* out: bytes that differ, -1 if the chunk is all zero */
} want;

static void compare_cpu(void *buffers[], void *arg)
{
	const unsigned char *p = (const unsigned char *)STARPU_VECTOR_GET_PTR(buffers[0]);
	want *w;
	starpu_codelet_unpack_args(arg, &w);
	size_t n = CHUNK * w->block, zeros = 0;
	w->bad = 0;
	for (size_t i = 0; i < n; i++) {
		w->bad += p[i] != byte_of(w->first + (int)(i / w->block), i % w->block);
		zeros += p[i] == 0;
	}
	if (zeros == n)
		w->bad = -1;
}

static struct starpu_codelet compare_cl = {
    .cpu_funcs = {compare_cpu},
    .nbuffers = 1,
    .modes = {STARPU_R},
    .name = "compare_extent",
};

/* Reads chunk k (a fresh handle on obj, so that the disk is read) and compares. */
static int read_chunk(int node, void *obj, int k, size_t block)
{
	starpu_data_handle_t h;
	starpu_vector_data_register(&h, node, (uintptr_t)obj, CHUNK, block);
	want w = {.first = k * CHUNK, .block = block, .bad = -2};
	want *pw = &w;
	if (starpu_task_insert(&compare_cl, STARPU_R, h, STARPU_VALUE, &pw, sizeof pw, 0) != 0)
		w.bad = -2;
	starpu_task_wait_for_all();
	starpu_data_unregister(h);
	return w.bad;
}

/* One geometry: blocks of block bytes in dir/blocks.bin, read through ops (StarPU keeps
 * pointers to it until it shuts down: one per disk node). */
static void geometry(const char *dir, size_t block, dit_diskops *opsp)
{
	char path[4200], what[160];
	snprintf(path, sizeof path, "%s/blocks.bin", dir);
	unsigned char *buf = malloc(block);
	uint64_t sums[NBLOCKS];
	int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644), ok = fd >= 0 && buf;
	for (int b = 0; ok && b < NBLOCKS; b++) {
		for (size_t i = 0; i < block; i++)
			buf[i] = byte_of(b, i);
		sums[b] = block_sum(buf, block);
		ok = write(fd, buf, block) == (ssize_t)block;
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	snprintf(what, sizeof what, "%d blocks of %zu bytes written", NBLOCKS, block);
	check(ok, what);

	dit_diskops *ops = opsp;
	dit_diskops_init(ops, dir, 0, DIT_DISK_READS_DEFAULT);
	int node = dit_diskops_register(ops, (starpu_ssize_t)(NBLOCKS * block + (64 << 20)));
	void *obj[NBLOCKS / CHUNK] = {0};
	int opened = node >= 0;
	for (int k = 0; opened && k < NBLOCKS / CHUNK; k++) {
		char name[64];
		snprintf(name, sizeof name, "blocks.bin@%zu", (size_t)k * CHUNK * block);
		obj[k] = starpu_disk_open((unsigned)node, name, CHUNK * block);
		opened = obj[k] && dit_diskops_expect(ops, obj[k], CHUNK * block, sums + k * CHUNK,
		                                      CHUNK, k * CHUNK) == 0;
	}
	snprintf(what, sizeof what, "%zu-byte blocks: chunks opened as extents of the file", block);
	check(opened, what);
	int bad[NBLOCKS / CHUNK];
	for (int k = 0; k < NBLOCKS / CHUNK; k++)
		bad[k] = opened ? read_chunk(node, obj[k], k, block) : -2;
	snprintf(what, sizeof what, "%zu-byte blocks: each chunk reads its own blocks (%d %d %d)",
	         block, bad[0], bad[1], bad[2]);
	check(!bad[0] && !bad[1] && !bad[2] && dit_diskops_fault(ops, NULL) == 0, what);

	/* one byte of block 3 (chunk 1's second) changed on disk */
	size_t at = 3 * block + block / 2 + 5;
	unsigned char x = (unsigned char)(byte_of(3, block / 2 + 5) ^ 0x40);
	fd = open(path, O_WRONLY);
	ok = fd >= 0 && pwrite(fd, &x, 1, (off_t)at) == 1;
	if (fd >= 0)
		close(fd);
	int b1 = opened && ok ? read_chunk(node, obj[1], 1, block) : -2;
	int b2 = opened ? read_chunk(node, obj[2], 2, block) : -2;
	dit_disk_fault f;
	long n = dit_diskops_fault(ops, &f);
	buf = malloc(block);
	for (size_t i = 0; buf && i < block; i++)
		buf[i] = byte_of(3, i);
	if (buf)
		buf[block / 2 + 5] = x;
	uint64_t got = buf ? block_sum(buf, block) : 0;
	free(buf);
	snprintf(what, sizeof what,
	         "%zu-byte blocks: a changed byte in block 3: caught, that block named, the "
	         "chunk zeroed (%d), the next chunk intact (%d)",
	         block, b1, b2);
	check(n == 1 && f.corrupt && f.block == 3 && f.offset == (long long)(3 * block) &&
	          f.size == block && f.want == sums[3] && f.got == got && b1 == -1 && b2 == 0 &&
	          strstr(f.path, "blocks.bin"),
	      what);
	dit_diskops_forget(ops);
	for (int k = 0; k < NBLOCKS / CHUNK; k++)
		if (obj[k])
			starpu_disk_close((unsigned)node, obj[k], CHUNK * block);
	unlink(path);
}

int main(void)
{
	const char *tmp = getenv("DIT_TEST_TMP");
	char pattern[4096];
	snprintf(pattern, sizeof pattern, "%s/extent-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	char *d = mkdtemp(pattern);
	if (!d) {
		printf("1..0 # SKIP no scratch directory\n");
		return 0;
	}
	printf("1..8\n");
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.ncpus = 1;
	conf.nopencl = 0;
	conf.ncuda = 0;
	if (starpu_init(&conf) != 0) {
		printf("not ok 1 - StarPU did not start\n");
		return 1;
	}
	static dit_diskops ops[2];
	geometry(d, 8192, &ops[0]);            /* a read piece of 8 KiB a block */
	geometry(d, (size_t)9 << 20, &ops[1]); /* 9 MiB: three hash pieces a block */
	starpu_shutdown();
	rmdir(d);
	return nfail ? 1 : 0;
}
