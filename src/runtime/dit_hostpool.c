/* StarPU's host RAM allocator while a runtime runs: see dit_hostpool.h. */
#include "dit_hostpool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

/* The pool the hooks serve: StarPU's hooks take no argument, so the runtime's pool
 * is named here while that runtime runs (set and cleared with it). */
static dit_hostpool *active;

static int pool_malloc(unsigned node, void **a, size_t dim, int flags)
{
	(void)node;
	(void)flags;
	dit_hostpool *hp = active;
	if (hp && dim >= DIT_HOSTPOOL_MIN) {
		pthread_mutex_lock(&hp->mu);
		hp->allocs++;
		for (int i = hp->n - 1; i >= 0; i--)
			if (hp->dim[i] == dim) {
				*a = hp->buf[i];
				memmove(hp->buf + i, hp->buf + i + 1,
				        (size_t)(hp->n - i - 1) * sizeof hp->buf[0]);
				memmove(hp->dim + i, hp->dim + i + 1,
				        (size_t)(hp->n - i - 1) * sizeof hp->dim[0]);
				hp->n--;
				hp->hits++;
				pthread_mutex_unlock(&hp->mu);
				return 0;
			}
		pthread_mutex_unlock(&hp->mu);
	}
	/* pages for big buffers (O_DIRECT reads need them), cache lines otherwise */
	void *p = NULL;
	if (posix_memalign(&p, dim >= DIT_HOSTPOOL_MIN ? 4096 : 64, dim) != 0)
		return -ENOMEM;
	*a = p;
	return 0;
}

static int pool_free(unsigned node, void *a, size_t dim, int flags)
{
	(void)node;
	(void)flags;
	dit_hostpool *hp = active;
	void *drop = a;
	if (hp && dim >= DIT_HOSTPOOL_MIN) {
		pthread_mutex_lock(&hp->mu);
		drop = NULL;
		if (hp->n == DIT_HOSTPOOL_MAX) { /* the oldest goes */
			drop = hp->buf[0];
			memmove(hp->buf, hp->buf + 1, (size_t)(hp->n - 1) * sizeof hp->buf[0]);
			memmove(hp->dim, hp->dim + 1, (size_t)(hp->n - 1) * sizeof hp->dim[0]);
			hp->n--;
		}
		hp->buf[hp->n] = a;
		hp->dim[hp->n++] = dim;
		pthread_mutex_unlock(&hp->mu);
	}
	free(drop);
	return 0;
}

void dit_hostpool_install(dit_hostpool *hp)
{
	memset(hp, 0, sizeof *hp);
	pthread_mutex_init(&hp->mu, NULL);
	active = hp;
	starpu_malloc_set_hooks(pool_malloc, pool_free);
}

void dit_hostpool_remove(dit_hostpool *hp)
{
	starpu_malloc_set_hooks(NULL, NULL);
	active = NULL;
	for (int i = 0; i < hp->n; i++)
		free(hp->buf[i]);
	hp->n = 0;
	pthread_mutex_destroy(&hp->mu);
}
