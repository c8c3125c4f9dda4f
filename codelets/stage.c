/* fp32 views of bf16 activation rows for the CPU kernels (dit_f32rows, dit_codelets.h):
 * the kernels compute in fp32 whatever the storage, so a CPU task over bf16 buffers
 * widens what it reads and narrows what it wrote, DIT_STAGE_ROWS rows at a time. */
#include <stdio.h>
#include <stdlib.h>

#include "dit_codelets.h"

void dit_f32rows_open(dit_f32rows *r, void *buf, int64_t off, int64_t ld, int64_t rows,
                      int64_t width, int read, const char *op)
{
	*r = (dit_f32rows){.rows = rows, .width = width};
	if (!dit_buf_bf16(buf)) {
		r->p = dit_buf_at(buf, off);
		r->ld = ld;
		return;
	}
	r->bf = dit_buf_at(buf, off);
	r->bld = ld;
	r->ld = width;
	size_t n = (size_t)(rows > 0 ? rows : 0) * (size_t)(width > 0 ? width : 0);
	r->p = malloc((n ? n : 1) * sizeof(float));
	if (!r->p) {
		fprintf(stderr, "ditstar: out of host memory for the fp32 rows of the %s codelet\n",
		        op);
		abort();
	}
	if (read)
		dit_cpu_bf16_widen_rows(r->p, r->ld, r->bf, r->bld, rows, width);
}

void dit_f32rows_close(dit_f32rows *r, int written)
{
	if (!r->bf)
		return;
	if (written)
		dit_cpu_bf16_narrow_rows(r->bf, r->bld, r->p, r->ld, r->rows, r->width);
	free(r->p);
	r->p = NULL;
	r->bf = NULL;
}
