/* What config.json's reader (dit_config.c) and its key table's readers
 * (dit_config_keys.c) share (private). */
#ifndef DIT_CONFIG_PRIV_H
#define DIT_CONFIG_PRIV_H

#include <json-c/json.h>

#include "dit_config.h"

/* Upper bounds that keep products of sizes far from int64 overflow. */
#define CFG_MAX_SIZE  ((int64_t)1 << 20)
#define CFG_MAX_PATCH ((int64_t)256)

/* The keys of format cd in root into *c (its other fields kept), then the derived
 * fields; the extra keys checked first. Errors name path and the key. */
dit_status dit_config_format_read(const dit_config_desc *cd, struct json_object *root,
                                  const char *path, dit_hparams *c, dit_error *err);

#endif
