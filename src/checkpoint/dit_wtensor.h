/* The checkpoint's tensor for an entry of a family's table (src/checkpoint/dit_wtensor.c):
 * private to the weight store. */
#ifndef DIT_WTENSOR_H
#define DIT_WTENSOR_H

#include "dit_checkpoint.h"
#include "dit_weights.h"

/* What the shapes a model expects come from, for messages: "config.json", or the
 * released configuration assumed without one (written into b). */
typedef struct dit_wt_source_buf {
	char s[160];
} dit_wt_source_buf;
const char *dit_wt_source(const dit_model *m, dit_wt_source_buf *b);

/* The checkpoint's tensor for table name tname after prefix (the format's renames
 * give the checkpoint's name when it differs); NULL when absent. */
const dit_st_tensor *dit_wt_find(const dit_checkpoint *ck, const dit_format_desc *d,
                                 const char *prefix, const char *tname, const dit_st_file **file);

/* A table name as the format calls it, for messages. */
const char *dit_wt_format_name(const dit_format_desc *d, const char *tname);

/* The join that stores table tensor tname in parts in format d; NULL: none. */
const dit_join *dit_wt_join(const dit_format_desc *d, const char *tname);

/* Checks the tensor of table rule (after prefix) against m's config and, dst not
 * NULL, converts it into dst as dtype wdt (dit_wdt.h: fp32 or bf16 from any stored
 * dtype; a compact one, the stored dtype kept, must be the tensor's). */
dit_status dit_wt_load(const dit_model *m, const dit_tensor_desc *rule, const char *prefix,
                       float *dst, int wdt, dit_error *err);

/* The compact weight dtype (dit_wdt) that keeps t's stored one as it is, -1 when none
 * does (fp32, fp64, integers; Q8_0 rows not whole blocks). */
int dit_wt_compact_dtype(const dit_st_tensor *t);

/* The compact dtype tensor i of pool pl can keep in every block: a GEMM matrix stored
 * whole (not in parts), with the same compact dtype in every block (a LoRA merged into
 * it is rounded to that dtype again, dit_wquant.h); -1 when it cannot. */
int dit_wt_compact(const dit_model *m, const dit_pool *pl, int i);

/* Counts, per stored dtype, the checkpoint tensors m's tables read (every block of
 * every pool, the parts of joined tensors) into m->stored. */
void dit_wt_count_dtypes(dit_model *m);

#endif
