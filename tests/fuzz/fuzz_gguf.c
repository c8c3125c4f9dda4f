/* libFuzzer target: a GGUF file opened in memory as the checkpoint loader opens one;
 * then every tensor is checked to lie within the image and read as fp32 and as bf16. */
#include "dit_gguf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "fuzz.gguf"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dit_error e;
	dit_error_clear(&e);
	dit_st_file *f = NULL;
	dit_status st = dit_gguf_open_mem(&f, NAME, data, size, &e);
	if (st != DIT_OK) {
		if (f || e.code != st || !strstr(e.msg, NAME) || strchr(e.msg, '\n'))
			abort();
		return 0;
	}
	if (!dit_gguf_is(f) || f->data_pos > size || f->data_size != size - f->data_pos)
		abort();
	for (size_t i = 0; i < f->ntensors; i++) {
		const dit_st_tensor *t = &f->tensors[i];
		if (dit_st_find(f, t->name) != t || t->offset > f->data_size ||
		    t->nbytes > f->data_size - t->offset)
			abort();
		/* the data lie within the image: numel is at most 32/34 per byte */
		size_t n = (size_t)t->numel;
		float *out = malloc(n * sizeof(float) + 1);
		uint16_t *h = malloc(n * sizeof(uint16_t) + 1);
		if (!out || !h)
			abort();
		if (dit_st_read_f32(f, t, out, &e) != DIT_OK ||
		    dit_st_read_bf16(f, t, h, &e) != DIT_OK)
			abort();
		free(out);
		free(h);
	}
	dit_st_close(f);
	return 0;
}
