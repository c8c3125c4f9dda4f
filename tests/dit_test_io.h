/* Small helpers of the test programs that run graphs on checkpoints: a tensor of an
 * input file read whole as fp32, a StarPU vector copied out. */
#ifndef DIT_TEST_IO_H
#define DIT_TEST_IO_H

#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "dit_safetensors.h"

/* Tensor name of f as malloc'd fp32 (*t its entry); NULL when absent or unreadable. */
static inline float *dit_test_read_all(const dit_st_file *f, const char *name,
                                       const dit_st_tensor **t)
{
	*t = dit_st_find(f, name);
	if (!*t)
		return NULL;
	float *d = malloc((size_t)(*t)->numel * sizeof *d);
	if (d && dit_st_read_f32(f, *t, d, NULL)) {
		free(d);
		return NULL;
	}
	return d;
}

/* The first n floats of vector h into dst (waits for the tasks writing h). */
static inline void dit_test_fetch(float *dst, starpu_data_handle_t h, size_t n)
{
	starpu_data_acquire(h, STARPU_R);
	memcpy(dst, (void *)starpu_vector_get_local_ptr(h), n * sizeof *dst);
	starpu_data_release(h);
}

#endif
