/* Built-in Wan2.1 T2V presets. The first two are the official configs
 * (wan/configs/wan_t2v_1_3B.py, wan_t2v_14B.py); the tiny ones keep the architecture
 * with small sizes so that tests and the default run finish in seconds. */
#include <string.h>

#include "dit_wan.h"

#define WAN_T2V(d, f, h, l)                                                                        \
	{                                                                                          \
		.model_type = "t2v", .dim = (d), .ffn_dim = (f), .freq_dim = 256, .in_dim = 16,    \
		.out_dim = 16, .num_heads = (h), .num_layers = (l), .text_len = 512,               \
		.text_dim = 4096, .patch = {1, 2, 2}, .eps = 1e-6                                  \
	}

static const dit_wan_preset presets[] = {
    {"wan2.1-t2v-1.3b", "official Wan2.1 T2V 1.3B (30 blocks, dim 1536)",
     WAN_T2V(1536, 8960, 12, 30), 81, 480, 832, 50},
    {"wan2.1-t2v-14b", "official Wan2.1 T2V 14B (40 blocks, dim 5120)",
     WAN_T2V(5120, 13824, 40, 40), 81, 720, 1280, 50},
    {"tiny",
     "tiny Wan (4 blocks, dim 128, 2 heads of 64): the default run",
     {.model_type = "t2v",
      .dim = 128,
      .ffn_dim = 384,
      .freq_dim = 64,
      .in_dim = 16,
      .out_dim = 16,
      .num_heads = 2,
      .num_layers = 4,
      .text_len = 32,
      .text_dim = 64,
      .patch = {1, 2, 2},
      .eps = 1e-6},
     17,
     128,
     192,
     10},
    {"tiny-test",
     "smallest Wan for unit tests (2 blocks, dim 32, 2 heads of 16)",
     {.model_type = "t2v",
      .dim = 32,
      .ffn_dim = 64,
      .freq_dim = 16,
      .in_dim = 4,
      .out_dim = 4,
      .num_heads = 2,
      .num_layers = 2,
      .text_len = 8,
      .text_dim = 24,
      .patch = {1, 2, 2},
      .eps = 1e-6},
     5,
     32,
     48,
     3},
    {"small",
     "small Wan for benchmarks (8 blocks, dim 512, 4 heads of 128)",
     {.model_type = "t2v",
      .dim = 512,
      .ffn_dim = 1536,
      .freq_dim = 256,
      .in_dim = 16,
      .out_dim = 16,
      .num_heads = 4,
      .num_layers = 8,
      .text_len = 64,
      .text_dim = 256,
      .patch = {1, 2, 2},
      .eps = 1e-6},
     17,
     256,
     384,
     4},
};

const dit_wan_preset *dit_wan_presets(size_t *count)
{
	*count = sizeof presets / sizeof presets[0];
	return presets;
}

dit_status dit_wan_preset_find(const dit_wan_preset **out, const char *name, dit_error *err)
{
	size_t n;
	const dit_wan_preset *p = dit_wan_presets(&n);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(p[i].name, name) == 0) {
			*out = &p[i];
			return DIT_OK;
		}
	}
	return dit_error_set(err, DIT_ENOTFOUND,
	                     "unknown model preset '%s' (see 'ditstar info --list')", name);
}
