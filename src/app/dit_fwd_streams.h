/* forward --inputs of a family that takes noise levels and a second token stream
 * (LTX-2: video_sigma, video_timesteps, video_positions, and the audio_* tensors of
 * its dit_stream_desc), read by the names of its descriptor, put into the graph and
 * written back as the second output. */
#ifndef DIT_FWD_STREAMS_H
#define DIT_FWD_STREAMS_H

#include "dit_graph.h"
#include "dit_safetensors.h"

typedef struct dit_fwd_streams {
	/* the first stream: per-token timesteps (sigma x ts_mult), its positions */
	float *t;   /* [tokens] or [1] */
	int64_t nt; /* 1 or tokens */
	double sigma[2];
	double *pos[2]; /* [3, tokens, 2], [1, aux_t, 2] doubles, or NULL */
	/* the second stream (aux_t 0: the file has none) */
	float *aux_latent; /* [channels, T, mel] */
	float *aux_context;
	int64_t aux_ctx_rows, aux_valid;
	double *aux_ts; /* distinct timesteps x ts_mult */
	int64_t aux_nt, aux_mod_rows;
} dit_fwd_streams;

/* Reads the sigma inputs and positions of the first stream and everything of the
 * second from in (path names it in messages); sets gr->aux_t and gr->aux_time_rows. */
dit_status dit_fwd_streams_read(dit_fwd_streams *s, const dit_st_file *in, const char *path,
                                const dit_model_desc *d, const dit_hparams *c, dit_grid *gr,
                                dit_error *err);

/* Fills the graph's buffers and fields from s (after dit_graph_init, before any task). */
dit_status dit_fwd_streams_apply(const dit_fwd_streams *s, dit_graph *g, double fps,
                                 dit_error *err);

/* Adds the second stream's output of pass 0 to w (nothing without one). */
dit_status dit_fwd_streams_write(const dit_fwd_streams *s, dit_graph *g, dit_st_writer *w,
                                 dit_error *err);

void dit_fwd_streams_free(dit_fwd_streams *s);

/* A timestep per latent frame (name [F], 0..1000) as one per token into *t [tokens]. */
dit_status dit_fwd_frame_t(const dit_st_file *in, const char *path, const char *name,
                           const dit_grid *gr, float **t, dit_error *err);

/* The extra input channels of a DIT_IMAGE_CONCAT family built from its masks
 * (dit_input_names cond_mask, pad_mask): *y [extra, F, H, W], channel 0 the condition
 * mask [1, F, H, W], channel 1 (with extra 2) the padding mask [Hpx, Wpx] resized nearest
 * (floor) to [H, W] for every frame; absent masks are zeros. */
dit_status dit_fwd_mask_channels(const dit_st_file *in, const char *path, const dit_model_desc *d,
                                 const dit_grid *gr, int64_t extra, float **y, dit_error *err);

/* Block indices "28" or "1,2" (each in 0..nblocks-1, what names the option for
 * messages) as flags out[nblocks]. */
dit_status dit_parse_blocks(const char *list, int64_t nblocks, const char *what, unsigned char *out,
                            dit_error *err);

#endif
