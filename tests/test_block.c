/* Runs the embeddings and one Wan block as StarPU tasks on a checkpoint and writes
 * what they produced, for tests/test_block_ref.sh to compare with the NumPy reference:
 *
 *   test_block MODEL_DIR INPUTS OUTPUT BLOCK
 *
 * INPUTS holds x [C,F,H,W], t [1], context [L, text_dim]. OUTPUT gets tokens [L, D]
 * (patch embedding), e [D], e0 [6, D], ctx [text_len, D], and x_out [L, D], the
 * tokens after block BLOCK alone (applied to the patch embedding). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "dit_place.h"
#include "dit_graph.h"
#include "dit_runtime.h"
#include "dit_safetensors.h"
#include "dit_test_io.h"
#include "dit_weights.h"

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: test_block MODEL_DIR INPUTS OUTPUT BLOCK\n");
		return 2;
	}
	dit_error err;
	dit_model *m;
	dit_st_file *in;
	dit_runtime *rt;
	dit_graph g;
	dit_grid gr;
	const dit_st_tensor *tx, *tt, *tc;
	int64_t block = atoll(argv[4]);

	if (dit_model_load(&m, argv[1], &err) || dit_st_open(&in, argv[2], &err))
		goto fail;
	const dit_hparams *c = &m->cfg;
	float *x = dit_test_read_all(in, "x", &tx), *t = dit_test_read_all(in, "t", &tt);
	float *context = dit_test_read_all(in, "context", &tc);
	if (!x || !t || !context || block < 0 || block >= c->layers[0]) {
		fprintf(stderr, "test_block: bad inputs\n");
		return 1;
	}
	if (dit_grid_from_latent(&gr, c, tx->shape[0], tx->shape[1], tx->shape[2], tx->shape[3],
	                         &err) ||
	    dit_runtime_init(&rt, NULL, &err) || dit_model_register(m, &err))
		goto fail;
	const float *ctxs[1] = {context};
	int64_t rows = tc->shape[0];
	dit_weights wt = {.desc = dit_model_desc_find("wan2.1-t2v"), .nexperts = 1, .expert = {m}};
	dit_graph_weights gw;
	dit_place_graph_weights(&wt, &gw);
	if (dit_graph_init(&g, &gw, &gr, 1, 1, ctxs, &rows, 1, NULL, NULL, &err))
		goto fail;

	int64_t L = gr.tokens, D = c->dim, Lc = c->text_len;
	starpu_data_handle_t latent;
	dit_graph_vector(&g, &latent, tx->numel, sizeof(float), "latent");
	starpu_data_acquire(latent, STARPU_W);
	memcpy((void *)starpu_vector_get_local_ptr(latent), x, (size_t)tx->numel * sizeof(float));
	starpu_data_release(latent);

	/* embeddings, then a copy of the tokens, then the one block */
	float *tokens = malloc((size_t)(L * D) * sizeof(float));
	float *x_out = malloc((size_t)(L * D) * sizeof(float));
	float *e = malloc((size_t)D * sizeof(float)), *e0 = malloc((size_t)(6 * D) * sizeof(float));
	float *ctx = malloc((size_t)(Lc * D) * sizeof(float));
	if (dit_graph_submit_text(&g, &err) || dit_graph_submit_time(&g, t[0], &err))
		goto fail;
	/* the patch embedding alone: dit_graph_submit_passes would run every block */
	if (dit_graph_submit_patch_embed(&g, 0, latent, &err))
		goto fail;
	dit_test_fetch(tokens, g.pass[0].x, (size_t)(L * D));
	if (dit_graph_submit_block(&g, 0, 0, block, NULL, NULL, &err))
		goto fail;
	starpu_task_wait_for_all();
	dit_test_fetch(x_out, g.pass[0].x, (size_t)(L * D));
	dit_test_fetch(e, dit_graph_buffer(&g, -1, "e"), (size_t)D);
	dit_test_fetch(e0, dit_graph_buffer(&g, -1, "e0"), (size_t)(6 * D));
	dit_test_fetch(ctx, dit_graph_buffer(&g, 0, "ctx"), (size_t)(Lc * D));

	dit_st_writer *w = dit_st_writer_new();
	int64_t s_tok[2] = {L, D}, s_e[1] = {D}, s_e0[2] = {6, D}, s_ctx[2] = {Lc, D};
	if (dit_st_writer_add_f32(w, "tokens", 2, s_tok, tokens, &err) ||
	    dit_st_writer_add_f32(w, "x_out", 2, s_tok, x_out, &err) ||
	    dit_st_writer_add_f32(w, "e", 1, s_e, e, &err) ||
	    dit_st_writer_add_f32(w, "e0", 2, s_e0, e0, &err) ||
	    dit_st_writer_add_f32(w, "ctx", 2, s_ctx, ctx, &err) ||
	    dit_st_writer_commit(w, argv[3], &err))
		goto fail;
	dit_st_writer_free(w);
	starpu_data_unregister(latent);
	dit_graph_free(&g);
	dit_model_free(m);
	dit_runtime_shutdown(rt);
	dit_st_close(in);
	free(x);
	free(t);
	free(context);
	free(tokens);
	free(x_out);
	free(e);
	free(e0);
	free(ctx);
	return 0;
fail:
	fprintf(stderr, "test_block: %s\n", err.msg);
	return 1;
}
