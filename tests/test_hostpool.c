/* The host buffer pool (src/runtime/dit_hostpool.h): while a runtime runs, a chunk-sized
 * buffer StarPU frees is kept and handed back for the next allocation of that size,
 * at most DIT_HOSTPOOL_MAX of them, small ones never; StarPU's own allocations of a
 * handle's RAM copy go through it. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <starpu.h>

#include "dit_hostpool.h"
#include "dit_runtime.h"

#define DIT_TEST_MAX 8
#define DIT_LINE_MAX 200
#include "dit_tap.h"

#define BIG ((size_t)4 << 20)

static void fill_cpu(void *buffers[], void *arg)
{
	(void)arg;
	memset((void *)STARPU_VECTOR_GET_PTR(buffers[0]), 7, STARPU_VECTOR_GET_NX(buffers[0]));
}

static struct starpu_codelet fill_cl = {
    .cpu_funcs = {fill_cpu}, .nbuffers = 1, .modes = {STARPU_W}, .name = "fill"};

/* a handle with no home: StarPU allocates its RAM copy, a task writes it, and
 * unregistering frees it; returns the copy's address */
static uintptr_t handle_round(void)
{
	starpu_data_handle_t h;
	starpu_vector_data_register(&h, -1, 0, BIG, 1);
	starpu_task_insert(&fill_cl, STARPU_W, h, 0);
	starpu_task_wait_for_all();
	uintptr_t p = starpu_vector_get_local_ptr(h);
	starpu_data_unregister(h);
	return p;
}

int main(void)
{
	dit_tap tap = {0};
	dit_runtime_opts o;
	dit_runtime_opts_default(&o);
	o.ncpus = 1;
	dit_runtime *rt;
	dit_error err;
	if (dit_runtime_init(&rt, &o, &err)) {
		printf("1..0 # SKIP %s\n", err.msg);
		return 0;
	}
	dit_hostpool *hp = rt->pool;
	dit_tap_add(&tap, hp != NULL, "a CPU runtime has the pool", 0, 0);
	if (!hp) {
		dit_runtime_shutdown(rt);
		dit_tap_print(&tap);
		return 1;
	}
	void *a, *b, *c, *d;
	starpu_malloc_flags(&a, BIG, 0);
	memset(a, 1, BIG);
	starpu_free_flags(a, BIG, 0);
	starpu_malloc_flags(&b, BIG, 0);
	dit_tap_add(&tap, a == b && hp->hits == 1 && hp->n == 0,
	            "a freed 4 MiB buffer comes back for the next 4 MiB", (double)hp->hits, 1);
	starpu_malloc_flags(&c, 2 * BIG, 0);
	dit_tap_add(&tap, c != a && hp->hits == 1, "another size is a new buffer", (double)hp->hits,
	            1);
	starpu_malloc_flags(&d, BIG, 0);
	starpu_free_flags(b, BIG, 0);
	starpu_free_flags(c, 2 * BIG, 0);
	starpu_free_flags(d, BIG, 0);
	dit_tap_add(&tap, hp->n == DIT_HOSTPOOL_MAX && hp->buf[0] == c && hp->buf[1] == d,
	            "it keeps the last 2 freed, the oldest goes", hp->n, DIT_HOSTPOOL_MAX);
	void *s1, *s2;
	starpu_malloc_flags(&s1, 4096, 0);
	starpu_free_flags(s1, 4096, 0);
	long hits = hp->hits;
	starpu_malloc_flags(&s2, 4096, 0);
	dit_tap_add(&tap, hp->hits == hits && hp->n == DIT_HOSTPOOL_MAX,
	            "small buffers pass through", (double)(hp->hits - hits), 0);
	starpu_free_flags(s2, 4096, 0);
	uintptr_t p1 = handle_round();
	hits = hp->hits;
	uintptr_t p2 = handle_round();
	dit_tap_add(&tap, p1 && p1 == p2 && hp->hits == hits + 1,
	            "StarPU's RAM copy of a handle, freed, is the next handle's copy",
	            (double)(hp->hits - hits), 1);
	dit_runtime_shutdown(rt); /* frees what the pool kept (the sanitized suite checks) */
	dit_tap_print(&tap);
	return tap.failed != 0;
}
