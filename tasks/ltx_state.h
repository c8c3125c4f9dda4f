/* LTX-2's own inputs to the graph (dit_graph.fam when the stage kind is ltx): what the
 * audio-video blocks and stages read besides the timesteps. */
#ifndef DIT_LTX_STATE_H
#define DIT_LTX_STATE_H

#include <stdint.h>

#include "dit_graph.h"

typedef struct dit_ltx_state {
	/* the per-sample sigma of each stream (0 video, 1 audio) */
	double sigma[2];
	/* the audio tokens' timesteps (aux_nt distinct; NULL: its sigma x ts_mult
	 * everywhere): token r sees aux_ts[r / aux_mod_rows] */
	const double *aux_ts;
	int64_t aux_nt, aux_mod_rows;
	double fps;       /* the frame rate of the default positions (0: 24) */
	int pos_given[2]; /* which streams' positions the caller filled */
	/* per pass, the blocks whose self-attention is replaced by its value projection
	 * (STG; [layers] flags, bit 0 video, bit 1 audio; NULL: none), and whether the
	 * streams' cross-attentions are left out (an isolated-modality pass) */
	const unsigned char *skip_self[DIT_MAX_PASSES];
	int skip_cross[DIT_MAX_PASSES];
} dit_ltx_state;

/* g's LTX-2 state; NULL when g's stage kind is not LTX-2's. */
dit_ltx_state *dit_ltx_state_of(dit_graph *g);

#endif
