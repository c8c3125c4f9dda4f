/* HunyuanVideo's own input to the graph (dit_graph.fam when the stage kind is
 * hunyuan). */
#ifndef DIT_HUNYUAN_STATE_H
#define DIT_HUNYUAN_STATE_H

#include "dit_graph.h"

typedef struct dit_hunyuan_state {
	/* the embedded guidance input (scale x 1000) of the guidance-distilled model */
	double guidance;
} dit_hunyuan_state;

/* g's HunyuanVideo state; NULL when g's stage kind is not HunyuanVideo's. */
dit_hunyuan_state *dit_hunyuan_state_of(dit_graph *g);

#endif
