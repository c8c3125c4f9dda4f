/* The state of a multi-stream generate run (LTX-2), shared by its loop
 * (dit_gen_multi.c) and its per-step outputs (dit_gen_mstate.c). */
#ifndef DIT_GEN_MULTI_PRIV_H
#define DIT_GEN_MULTI_PRIV_H

#include <signal.h>

#include "dit_gen_multi.h"

typedef struct gm_guider {
	double cfg, stg, rescale, modality;
} gm_guider;

typedef struct gm_state {
	const dit_model_desc *d;
	const dit_hparams *c;
	dit_grid gr;
	int nsteps;
	double *sigmas;
	gm_guider gv, ga;
	int npasses, role[DIT_MAX_PASSES], pass_of[4];
	float *ctx[2][2]; /* [stream][positive, negative] */
	int64_t rows[2][2];
	float *noise[2];
	unsigned char *stg; /* [layers] */
	starpu_data_handle_t xv;
	/* --preview, --state, --resume */
	dit_session *ses;
	const char *state_path, *preview_path;
	volatile sig_atomic_t *stop;
	char fingerprint[32];
	int next_step;           /* the first step to run (a resumed run's state's) */
	float *saved[2];         /* the streams of a resume state (NULL: from the noise) */
	starpu_data_handle_t x0; /* the video's guided x0 of the last step (--preview) */
	/* --image-latent: the image's latent [C, 1, h, w] at latent frame img_frame, its
	 * denoise mask 1 - strength (img NULL: none), and its handle */
	float *img;
	int64_t img_frame;
	double img_mask;
	starpu_data_handle_t clean;
} gm_state;

/* Before the run: refuses a preview the family's latent-to-RGB map does not fit, takes
 * the fingerprint of the run and, with --resume, reads the state (both streams and the
 * next step) into s->saved and s->next_step. */
dit_status dit_gm_outputs_start(gm_state *s, const dit_generate_opts *o, dit_error *err);

/* After step (the run waited for it): the preview of the video's guided x0, then the
 * state of both streams; stops the run when a signal asked for it. */
dit_status dit_gm_after_step(gm_state *s, int step, dit_error *err);

#endif
