/* The options structs' defaults: what a run gets for every field it leaves alone. */
#include <stdlib.h>
#include <string.h>

#include "dit_checkpoint.h"
#include "dit_opts.h"
#include "dit_rng.h"

void dit_checkpoint_opts_default(dit_checkpoint_opts *o)
{
	memset(o, 0, sizeof *o); /* load key "module"; weights read */
}

void dit_generate_opts_default(dit_generate_opts *o)
{
	memset(o, 0, sizeof *o);
	o->model_name = "tiny";
	o->guidance = -1.0;
	o->shift = 0.0;
	o->seed = 42;
	dit_family_values_init(&o->fam);
	o->solver = DIT_SOLVER_DEFAULT;
	dit_runtime_opts_default(&o->rt);
	dit_offload_opts_default(&o->offload);
	dit_checkpoint_opts_default(&o->ck);
}

void dit_forward_opts_default(dit_forward_opts *o)
{
	memset(o, 0, sizeof *o);
	dit_family_values_init(&o->fam);
	dit_runtime_opts_default(&o->rt);
	dit_offload_opts_default(&o->offload);
	dit_checkpoint_opts_default(&o->ck);
}

float *dit_synthetic_context(int64_t text_len, int64_t text_dim, int null_prompt, int64_t *rows)
{
	int64_t r = (text_len + 1) / 2;
	float *c = malloc((size_t)(r * text_dim) * sizeof *c);
	if (!c)
		return NULL;
	dit_rng_fill_normal(c, r * text_dim, 0,
	                    dit_rng_stream(null_prompt ? "context_null" : "context"), 1.0, 0.0);
	*rows = r;
	return c;
}
