/* A short program on libditstar: one DiT forward of a Wan checkpoint with its inputs
 * made in memory and its output read back from memory, no file in between.
 *
 *   forward_mem MODEL_DIR [INPUTS_OUT [Y_OUT]]
 *
 * It reads the model's config.json for the sizes, makes x [in_dim, 1, 4, 4],
 * t = [500] and a context [3, text_dim] of fixed pseudo-random values, runs the forward
 * on the CPU and prints y's shape and sum. INPUTS_OUT and Y_OUT (optional) keep the
 * inputs and the output as safetensors files, so that `ditstar forward --inputs
 * INPUTS_OUT` can be compared with it. Built with
 *
 *   cc forward_mem.c $(pkg-config --cflags --libs ditstar) -o forward_mem
 */
#include <ditstar.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const dit_error *err)
{
	fprintf(stderr, "forward_mem: %s\n", err->msg);
	return 1;
}

/* Fills x[0..n) with values in [-1, 1) from a fixed linear congruential sequence. */
static void fill(float *x, int64_t n, unsigned long long seed)
{
	for (int64_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		x[i] = (float)((double)(seed >> 40) / (double)(1ULL << 23) - 1.0);
	}
}

static int save(const char *path, const void *image, size_t size)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(image, 1, size, f) == size;
	if (f && fclose(f) != 0)
		ok = 0;
	if (!ok)
		fprintf(stderr, "forward_mem: cannot write %s\n", path);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: forward_mem MODEL_DIR [INPUTS_OUT [Y_OUT]]\n");
		return 2;
	}
	if (strcmp(ditstar_version(), DITSTAR_VERSION) != 0) {
		fprintf(stderr, "forward_mem: headers of ditstar %s, library %s\n", DITSTAR_VERSION,
		        ditstar_version());
		return 1;
	}
	dit_error err;
	dit_error_clear(&err);

	/* the sizes: config.json */
	dit_checkpoint *ck;
	if (dit_checkpoint_open(&ck, argv[1], &err))
		return fail(&err);
	dit_hparams hp;
	dit_status st = dit_checkpoint_load_config(ck, &hp, &err);
	dit_checkpoint_close(ck);
	if (st)
		return fail(&err);

	/* the inputs, as a safetensors image in memory */
	int64_t xs[4] = {hp.in_dim, 1, 2 * hp.patch[1], 2 * hp.patch[2]};
	int64_t ts[1] = {1}, cs[2] = {3, hp.text_dim};
	int64_t nx = xs[0] * xs[1] * xs[2] * xs[3], nc = cs[0] * cs[1];
	float *x = malloc((size_t)nx * sizeof *x), *c = malloc((size_t)nc * sizeof *c);
	float t = 500.0f;
	if (!x || !c) {
		fprintf(stderr, "forward_mem: out of memory\n");
		return 1;
	}
	fill(x, nx, 1);
	fill(c, nc, 2);
	dit_st_writer *w = dit_st_writer_new();
	void *inputs = NULL;
	size_t inputs_size = 0;
	if (!w || dit_st_writer_add_f32(w, "x", 4, xs, x, &err) ||
	    dit_st_writer_add_f32(w, "t", 1, ts, &t, &err) ||
	    dit_st_writer_add_f32(w, "context", 2, cs, c, &err) ||
	    dit_st_writer_image(w, &inputs, &inputs_size, &err))
		return fail(&err);
	dit_st_writer_free(w);
	free(x);
	free(c);

	/* the forward: inputs from memory, y into memory */
	dit_forward_opts o;
	dit_forward_opts_default(&o);
	o.model_dir = argv[1];
	o.inputs_image = inputs;
	o.inputs_size = inputs_size;
	void *y_image = NULL;
	size_t y_size = 0;
	o.output_image = &y_image;
	o.output_size = &y_size;
	o.rt.ncpus = 1;
	if (dit_forward(&o, &err))
		return fail(&err);

	/* y, read back from the image */
	dit_st_file *f;
	if (dit_st_open_mem(&f, "y", y_image, y_size, &err))
		return fail(&err);
	const dit_st_tensor *yt = dit_st_find(f, "y");
	float *y = yt ? malloc((size_t)yt->numel * sizeof *y) : NULL;
	if (!y || dit_st_read_f32(f, yt, y, &err)) {
		fprintf(stderr, "forward_mem: no y in the output (%s)\n", err.msg);
		return 1;
	}
	double sum = 0;
	for (int64_t i = 0; i < yt->numel; i++)
		sum += y[i];
	printf("ditstar %s: y [%lld, %lld, %lld, %lld], sum %.6f\n", ditstar_version(),
	       (long long)yt->shape[0], (long long)yt->shape[1], (long long)yt->shape[2],
	       (long long)yt->shape[3], sum);
	int rc = 0;
	if (argc > 2)
		rc |= save(argv[2], inputs, inputs_size);
	if (argc > 3)
		rc |= save(argv[3], y_image, y_size);
	free(y);
	dit_st_close(f);
	free(y_image);
	free(inputs);
	return rc;
}
