/* The bytes of a pool's weights by dtype (common/dit_wdt.h) as JSON objects, for the
 * stats and the plan: {"f8_e4m3": n, "f32": m} (the dtypes present, in dit_wdt order,
 * fp32 last), with "padding" for the bytes that align tensors and blocks. */
#ifndef DIT_WDT_JSON_H
#define DIT_WDT_JSON_H

#include <json-c/json.h>
#include <stdint.h>

#include "dit_weights.h"

/* One block of the pool: every tensor's data (an f8 scale with its tensor). */
json_object *dit_json_block_bytes_by_wdt(const dit_pool *pl);

/* bytes, a count of whole chunks of the pool moved or streamed, split as each chunk is:
 * its blocks' tensors by dtype, the rest padding. */
json_object *dit_json_chunk_bytes_by_wdt(const dit_pool *pl, int64_t bytes);

#endif
