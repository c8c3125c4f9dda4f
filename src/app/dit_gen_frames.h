/* Conditioning frames of a generate run (Cosmos-Predict2.5's image2world and
 * video2world, Video2WorldModelRectifiedFlow): the first k latent frames of gt condition
 * the run: the model input holds gt there, the condition-mask channel is 1 there, their
 * velocity is the initial noise - gt, and with the Karras schedule they see their own
 * timestep. k 0 is text2world (the mask channels are zeros). */
#ifndef DIT_GEN_FRAMES_H
#define DIT_GEN_FRAMES_H

#include "dit_graph.h"
#include "dit_session.h"

typedef struct dit_gen_frames {
	int64_t k; /* conditioning latent frames */
	float *y;  /* [in_dim - out_dim, F, H, W]: the condition mask, the padding mask (0) */
	float *gt; /* [C, F, H, W] the conditioning latent, or NULL */
} dit_gen_frames;

/* --condition-latent path ('gt' [C, F, H, W]) and --condition-frames k (0 <= k < F). */
dit_status dit_gen_frames_load(dit_gen_frames *fr, const dit_model_desc *d, const dit_hparams *c,
                               const dit_grid *gr, const char *path, int64_t k, dit_error *err);

/* After the session started: the graph's conditioning frames from gt and the initial
 * noise [C, F, H, W]; cond_t their timestep (< 0: the step's). */
dit_status dit_gen_frames_start(dit_gen_frames *fr, dit_session *ses, const float *noise,
                                double cond_t, dit_error *err);

void dit_gen_frames_free(dit_gen_frames *fr);

#endif
