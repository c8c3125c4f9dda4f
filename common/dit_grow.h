/* Arrays grown by doubling. Dependency-free, for every layer. */
#ifndef DIT_GROW_H
#define DIT_GROW_H

#include <stdlib.h>

/* Room in *p (*cap elements of elem bytes, n used) for one more: doubled when full, the
 * first time to first elements. 0, or -1 out of memory (*p and *cap unchanged). */
static inline int dit_grow(void **p, size_t *cap, size_t n, size_t elem, size_t first)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? 2 * *cap : first;
	void *q = realloc(*p, c * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

#endif
