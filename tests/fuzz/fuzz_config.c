/* libFuzzer target: config.json text parsed and checked in memory. */
#include "dit_config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dit_error e;
	dit_error_clear(&e);
	dit_hparams c;
	memset(&c, 0, sizeof c);
	dit_status st =
	    dit_config_parse_text(&c, "fuzz/config.json", (const char *)data, size, &e);
	/* what loads must pass the checks the savers apply */
	if (st == DIT_OK && dit_config_check(&c, NULL, &e) != DIT_OK)
		abort();
	if (st != DIT_OK && (e.code != st || !strstr(e.msg, "fuzz/config.json")))
		abort();
	return 0;
}
