/* The bytes of a pool's weights by dtype, as the stats and the plan print them. */
#include "dit_wdt_json.h"

static json_object *by_wdt(const int64_t b[DIT_WDT_COUNT], int64_t padding)
{
	json_object *o = json_object_new_object();
	for (int w = 1; w <= DIT_WDT_COUNT; w++) { /* fp32 last */
		int d = w % DIT_WDT_COUNT;
		if (b[d] > 0)
			json_object_object_add(o, dit_wdt_name(d), json_object_new_int64(b[d]));
	}
	if (padding > 0)
		json_object_object_add(o, "padding", json_object_new_int64(padding));
	return o;
}

json_object *dit_json_block_bytes_by_wdt(const dit_pool *pl)
{
	int64_t b[DIT_WDT_COUNT];
	dit_layout_bytes_by_wdt(&pl->lay, b);
	return by_wdt(b, 0);
}

json_object *dit_json_chunk_bytes_by_wdt(const dit_pool *pl, int64_t bytes)
{
	int64_t b[DIT_WDT_COUNT], chunk = (int64_t)dit_pool_chunk_bytes(pl), sum = 0;
	dit_layout_bytes_by_wdt(&pl->lay, b);
	int64_t blocks = chunk > 0 ? bytes / chunk * pl->chunk_size : 0;
	for (int w = 0; w < DIT_WDT_COUNT; w++)
		sum += b[w] *= blocks;
	return by_wdt(b, bytes - sum);
}
