/* A chunk handle larger than 2 GiB on a StarPU disk node reads back intact: a sparse
 * 2.5 GiB file with markers on both sides of the 2 GiB boundary is registered the
 * way the offload planner registers chunks (its disk ops, starpu_disk_open, a vector
 * whose element is 4 KiB) and read by a CPU task in host RAM. (StarPU 1.3.10
 * corrupted such objects; the stock 1.4.10 unistd backend asserts on them, because
 * Linux reads at most 0x7ffff000 bytes per call.) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <starpu.h>

#include "dit_place.h"

#define SIZE  ((size_t)5 << 29) /* 2.5 GiB */
#define ELEM  ((size_t)4096)
#define NMARK 4

static const size_t mark_off[NMARK] = {0, ((size_t)2 << 30) - 8, ((size_t)2 << 30) + 4096,
                                       SIZE - 8};

static uint64_t mark_value(int i)
{
	return 0x0123456789abcdefull ^ ((uint64_t)i * 0x9e3779b97f4a7c15ull);
}

static void check_cpu(void *buffers[], void *arg)
{
	const char *p = (const char *)STARPU_VECTOR_GET_PTR(buffers[0]);
	int *bad = arg;
	for (int i = 0; i < NMARK; i++) {
		uint64_t v;
		memcpy(&v, p + mark_off[i], sizeof v);
		*bad += v != mark_value(i);
	}
	/* a zero region of the sparse file in between */
	for (size_t o = ((size_t)2 << 30) + 65536; o < ((size_t)2 << 30) + 65536 + 4096; o++)
		*bad += p[o] != 0;
}

static struct starpu_codelet check_cl = {
    .cpu_funcs = {check_cpu},
    .nbuffers = 1,
    .modes = {STARPU_R},
    .name = "check_big_chunk",
};

int main(void)
{
	char dir[] = "/tmp/ditstar-bigchunk-XXXXXX";
	const char *tmp = getenv("DIT_TEST_TMP");
	char pattern[4096];
	snprintf(pattern, sizeof pattern, "%s/bigchunk-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	char *d = mkdtemp(tmp && *tmp ? pattern : dir);
	struct statvfs vfs;
	if (!d || statvfs(d, &vfs) != 0 ||
	    (size_t)vfs.f_bavail * vfs.f_frsize < ((size_t)64 << 20)) {
		printf("1..0 # SKIP no scratch directory with free space\n");
		return 0;
	}
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	if (pages > 0 && psz > 0 && (size_t)pages * (size_t)psz < ((size_t)6 << 30)) {
		printf("1..0 # SKIP needs 6 GiB of RAM\n");
		return 0;
	}
	printf("1..3\n");
	char path[8192];
	snprintf(path, sizeof path, "%s/chunk_big.bin", d);
	int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
	int ok = fd >= 0 && ftruncate(fd, (off_t)SIZE) == 0;
	for (int i = 0; ok && i < NMARK; i++) {
		uint64_t v = mark_value(i);
		ok = pwrite(fd, &v, sizeof v, (off_t)mark_off[i]) == (ssize_t)sizeof v;
	}
	if (fd >= 0)
		close(fd);
	printf("%s 1 - sparse 2.5 GiB chunk file written\n", ok ? "ok" : "not ok");

	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.ncpus = 1;
	conf.nopencl = 0;
	conf.ncuda = 0;
	int bad = -1;
	if (ok && starpu_init(&conf) == 0) {
		struct starpu_disk_ops ops;
		dit_place_disk_ops(&ops, 0);
		int node =
		    starpu_disk_register(&ops, d, (starpu_ssize_t)(SIZE + ((size_t)64 << 20)));
		void *obj =
		    node >= 0 ? starpu_disk_open((unsigned)node, "chunk_big.bin", SIZE) : NULL;
		printf("%s 2 - registered on disk node %d as %zu elements of %zu bytes\n",
		       obj ? "ok" : "not ok", node, SIZE / ELEM, ELEM);
		if (obj) {
			starpu_data_handle_t h;
			starpu_vector_data_register(&h, node, (uintptr_t)obj,
			                            (uint32_t)(SIZE / ELEM), ELEM);
			bad = 0;
			/* the codelet counts mismatches through the pointer it is given */
			if (starpu_task_insert(&check_cl, STARPU_R, h, STARPU_CL_ARGS_NFREE, &bad,
			                       sizeof bad, 0) != 0)
				bad = -1;
			starpu_task_wait_for_all();
			starpu_data_unregister(h);
			starpu_disk_close((unsigned)node, obj, SIZE);
		}
		starpu_shutdown();
	} else {
		printf("not ok 2 - StarPU did not start\n");
	}
	printf("%s 3 - markers on both sides of 2 GiB read back (%d bad)\n",
	       bad == 0 ? "ok" : "not ok", bad);
	unlink(path);
	rmdir(d);
	return bad == 0 && ok ? 0 : 1;
}
