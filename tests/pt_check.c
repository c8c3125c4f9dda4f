/* Opens checkpoints through the checkpoint layer, for tests/test_pt.sh:
 *
 *   pt_check open DIR [LOAD_KEY]       prints "N files, M tensors, load key K" (K: "-"
 *                                      when none was used); on failure the error's
 *                                      line on stderr, exit 1
 *   pt_check same DIR REF [LOAD_KEY]   every tensor of DIR (opened with LOAD_KEY) and
 *                                      of REF has the same name, shape and, read as
 *                                      fp32 and as bf16, the same bits; exit 1 naming
 *                                      the first difference; DIR's fp8 scale tensors
 *                                      (*.scale_weight, scaled_fp8: the reference
 *                                      holds their product) are not compared */
#include "dit_checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const dit_error *e)
{
	fprintf(stderr, "%s\n", e->msg);
	return 1;
}

/* A ComfyUI fp8 scale or marker tensor: applied to its weight when read. */
static int is_scale(const char *name)
{
	size_t n = strlen(name);
	return (n >= 13 && strcmp(name + n - 13, ".scale_weight") == 0) ||
	       (n >= 10 && strcmp(name + n - 10, "scaled_fp8") == 0);
}

static size_t count(const dit_checkpoint *ck)
{
	size_t n = 0;
	for (size_t i = 0; i < ck->nfiles; i++)
		for (size_t t = 0; t < ck->files[i]->ntensors; t++)
			n += !is_scale(ck->files[i]->tensors[t].name);
	return n;
}

/* The tensors of a and b (in a's file fa, b's file fb) read the same. */
static int same_tensor(const dit_st_file *fa, const dit_st_tensor *a, const dit_st_file *fb,
                       const dit_st_tensor *b)
{
	if (a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof a->shape[0] * a->ndim) != 0) {
		fprintf(stderr, "tensor '%s': shapes differ\n", a->name);
		return 0;
	}
	size_t n = (size_t)a->numel;
	float *x = malloc(n * 4 + 4), *y = malloc(n * 4 + 4);
	uint16_t *u = malloc(n * 2 + 2), *v = malloc(n * 2 + 2);
	dit_error e;
	int ok = x && y && u && v;
	if (ok && (dit_st_read_f32(fa, a, x, &e) || dit_st_read_f32(fb, b, y, &e) ||
	           dit_st_read_bf16(fa, a, u, &e) || dit_st_read_bf16(fb, b, v, &e))) {
		fprintf(stderr, "%s\n", e.msg);
		ok = 0;
	} else if (ok && (memcmp(x, y, n * 4) != 0 || memcmp(u, v, n * 2) != 0)) {
		fprintf(stderr, "tensor '%s': values differ\n", a->name);
		ok = 0;
	}
	free(x);
	free(y);
	free(u);
	free(v);
	return ok;
}

static int cmd_same(const char *dir, const char *ref, const char *key)
{
	dit_checkpoint *a = NULL, *b = NULL;
	dit_checkpoint_opts o = {.load_key = key};
	dit_error e;
	if (dit_checkpoint_open_opts(&a, dir, &o, &e) || dit_checkpoint_open(&b, ref, &e)) {
		dit_checkpoint_close(a);
		return fail(&e);
	}
	int ok = count(a) == count(b);
	if (!ok)
		fprintf(stderr, "%zu tensors, the reference has %zu\n", count(a), count(b));
	size_t n = 0;
	for (size_t i = 0; ok && i < a->nfiles; i++) {
		const dit_st_file *fa = a->files[i];
		for (size_t t = 0; ok && t < fa->ntensors; t++) {
			if (is_scale(fa->tensors[t].name))
				continue;
			n++;
			const dit_st_file *fb;
			const dit_st_tensor *tb = dit_checkpoint_find(b, fa->tensors[t].name, &fb);
			if (!tb)
				fprintf(stderr, "tensor '%s': not in the reference\n",
				        fa->tensors[t].name);
			ok = tb && same_tensor(fa, &fa->tensors[t], fb, tb);
		}
	}
	if (ok)
		printf("%zu tensors identical\n", n);
	dit_checkpoint_close(a);
	dit_checkpoint_close(b);
	return !ok;
}

int main(int argc, char **argv)
{
	dit_error e;
	if (argc >= 3 && argc <= 4 && strcmp(argv[1], "open") == 0) {
		dit_checkpoint *ck;
		dit_checkpoint_opts o = {.load_key = argc == 4 ? argv[3] : NULL};
		if (dit_checkpoint_open_opts(&ck, argv[2], &o, &e))
			return fail(&e);
		printf("%zu files, %zu tensors, load key %s\n", ck->nfiles, count(ck),
		       ck->load_key ? ck->load_key : "-");
		dit_checkpoint_close(ck);
		return 0;
	}
	if (argc >= 4 && argc <= 5 && strcmp(argv[1], "same") == 0)
		return cmd_same(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
	fprintf(stderr, "usage: pt_check open DIR [LOAD_KEY] | same DIR REF [LOAD_KEY]\n");
	return 2;
}
