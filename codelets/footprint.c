/* The footprint every op's performance model uses: a hash of the sizes at the start
 * of its argument struct, so ops of different shapes on the same buffers (the slab)
 * get separate histories. */
#include "dit_codelets.h"

uint32_t dit_codelet_footprint(struct starpu_task *task)
{
	const dit_fp *fp = task->cl_arg;
	uint32_t h = 0;
	for (int i = 0; i < 4; i++)
		h = starpu_hash_crc32c_be_n(&fp->v[i], sizeof fp->v[i], h);
	return h;
}
