/* libFuzzer target: a safetensors image parsed in memory, then every tensor read. */
#include "dit_safetensors.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dit_error e;
	dit_error_clear(&e);
	dit_st_file *f = NULL;
	if (dit_st_open_mem(&f, "fuzz.safetensors", data, size, &e) != DIT_OK)
		return 0;
	for (size_t i = 0; i < f->ntensors; i++) {
		const dit_st_tensor *t = &f->tensors[i];
		if (dit_st_find(f, t->name) != t)
			abort();
		/* every tensor lies within the image, so numel is bounded by its size */
		float *out = malloc((size_t)t->numel * sizeof(float) + 1);
		if (!out)
			abort();
		if (dit_st_read_f32(f, t, out, &e) != DIT_OK)
			abort();
		free(out);
	}
	dit_st_close(f);
	return 0;
}
