/* The step profile: see dit_profile.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_profile.h"

void dit_profile_init(dit_profile *p, int step)
{
	memset(p, 0, sizeof *p);
	pthread_mutex_init(&p->lock, NULL);
	p->step = step;
}

void dit_profile_free(dit_profile *p)
{
	free(p->e);
	pthread_mutex_destroy(&p->lock);
	memset(p, 0, sizeof *p);
}

void dit_profile_add(dit_profile *p, int pool, int64_t block, const char *symbol,
                     uint32_t footprint, int count)
{
	pthread_mutex_lock(&p->lock);
	/* the same block's tasks come together: search from the end */
	for (int i = p->n - 1; i >= 0; i--) {
		dit_profile_entry *e = &p->e[i];
		if (e->block == block && e->pool == pool && e->footprint == footprint &&
		    strcmp(e->symbol, symbol) == 0) {
			e->count += count;
			pthread_mutex_unlock(&p->lock);
			return;
		}
	}
	if (p->n == p->cap) {
		int cap = p->cap ? 2 * p->cap : 256;
		dit_profile_entry *e = realloc(p->e, (size_t)cap * sizeof *e);
		if (!e) {
			p->failed = 1;
			pthread_mutex_unlock(&p->lock);
			return;
		}
		p->e = e;
		p->cap = cap;
	}
	dit_profile_entry *e = &p->e[p->n++];
	memset(e, 0, sizeof *e);
	e->pool = pool;
	e->block = block;
	e->footprint = footprint;
	e->count = count;
	snprintf(e->symbol, sizeof e->symbol, "%s", symbol);
	pthread_mutex_unlock(&p->lock);
}
