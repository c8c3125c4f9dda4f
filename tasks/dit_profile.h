/* The compute tasks of one step of a run, as the graph submits them: per block of
 * each pool (and for the tasks outside the blocks) the codelets' performance-model
 * symbols and footprints, counted. Recorded by `ditstar calibrate` (the step after
 * the first, whose text embeddings and first fetches a steady step does not have);
 * the planner (src/plan/dit_predict.c) prices it with StarPU's calibrated models. */
#ifndef DIT_PROFILE_H
#define DIT_PROFILE_H

#include <pthread.h>
#include <stdint.h>

#define DIT_PROFILE_SYMBOL 64

typedef struct dit_profile_entry {
	int pool;      /* the model's pool; -1: outside the blocks */
	int64_t block; /* the block in its pool; outside the blocks -1 before them, -2 after */
	uint32_t footprint;
	int count;
	char symbol[DIT_PROFILE_SYMBOL]; /* the codelet's performance model */
} dit_profile_entry;

typedef struct dit_profile {
	pthread_mutex_t lock;
	int step; /* the step recorded */
	dit_profile_entry *e;
	int n, cap;
	int failed;     /* out of memory while recording: the profile is incomplete */
	int seen_block; /* a block task was recorded (what follows outside is "after") */
} dit_profile;

void dit_profile_init(dit_profile *p, int step);
void dit_profile_free(dit_profile *p);
/* Counts count tasks of that kind (thread-safe). */
void dit_profile_add(dit_profile *p, int pool, int64_t block, const char *symbol,
                     uint32_t footprint, int count);

#endif
