/* libFuzzer target: a PyTorch checkpoint (torch.save's zip) opened in memory as the
 * checkpoint loader opens one, its fp8 scales taken from a second reading of the same
 * bytes as the map; then every tensor is read as fp32 and as bf16. */
#include "dit_pt.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "fuzz.pt"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dit_error e;
	dit_error_clear(&e);
	dit_st_file *f = NULL, *map = NULL;
	dit_status st = dit_pt_open_mem(&f, NAME, data, size, NULL, &e);
	if (st != DIT_OK) {
		if (f || e.code != st || !strstr(e.msg, NAME))
			abort();
		return 0;
	}
	if (dit_pt_open_mem(&map, NAME, data, size, "ema", &e) == DIT_OK)
		dit_pt_apply_scales(f, map, NAME, &e);
	for (size_t i = 0; i < f->ntensors; i++) {
		const dit_st_tensor *t = &f->tensors[i];
		if (dit_st_find(f, t->name) != t || t->offset > size ||
		    t->nbytes > size - t->offset)
			abort();
		/* every tensor lies within the image, so numel is bounded by its size */
		float *out = malloc((size_t)t->numel * sizeof(float) + 1);
		uint16_t *h = malloc((size_t)t->numel * sizeof(uint16_t) + 1);
		if (!out || !h)
			abort();
		if (dit_st_read_f32(f, t, out, &e) != DIT_OK ||
		    dit_st_read_bf16(f, t, h, &e) != DIT_OK)
			abort();
		free(out);
		free(h);
	}
	dit_st_close(map);
	dit_st_close(f);
	return 0;
}
