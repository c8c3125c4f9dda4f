/* config.json of any family: read through the family's key table (models/), checked,
 * compared and written back. The family is the one whose descriptor accepts the file's
 * "model_type". */
#ifndef DIT_CONFIG_H
#define DIT_CONFIG_H

#include <stddef.h>

#include "dit_error.h"
#include "dit_model_desc.h"

/* Parses a config.json. Errors name the file and the key. */
dit_status dit_config_load(dit_hparams *hp, const char *path, dit_error *err);

/* The same for len bytes of config.json text already in memory (e.g. a member of a
 * checkpoint archive); name stands for the file in messages. */
dit_status dit_config_parse_text(dit_hparams *hp, const char *name, const char *text, size_t len,
                                 dit_error *err);

/* Checks the values (the ranges of the family's keys, then its relations between
 * keys). path (NULL: none) names the file in messages, and makes a bad value a format
 * error rather than an invalid argument. */
dit_status dit_config_check(const dit_hparams *hp, const char *path, dit_error *err);

/* The first field in which a and b differ, written to buf as "dim 32 vs 48"; NULL when
 * they are the same config. */
const char *dit_config_diff(const dit_hparams *a, const dit_hparams *b, char *buf, size_t len);

/* hp as config.json text (the family's keys) into text[cap], *len its bytes; path
 * names the file in messages. */
dit_status dit_config_text(const dit_hparams *hp, const char *path, char *text, size_t cap,
                           size_t *len, dit_error *err);
/* Writes hp as config.json (the family's keys) to path, atomically. */
dit_status dit_config_save(const dit_hparams *hp, const char *path, dit_error *err);

#endif
