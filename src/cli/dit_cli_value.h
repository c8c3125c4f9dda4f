/* The values of the ditstar command's options (src/cli/dit_cli_value.c): strict number
 * and size parsing, and each kind of the option table stored where its entry says. */
#ifndef DIT_CLI_VALUE_H
#define DIT_CLI_VALUE_H

#include <stddef.h>

#include "dit_cli_opt.h"

/* Parses arg for the entry o (as given: an alias or an option) into *c: 0, or -1 with the
 * whole message ("--frames needs a positive integer, not 'ten'") in msg. */
int dit_cli_value_set(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len);

/* The refusal of a bad value after the option's name ("needs a positive integer"). */
void dit_cli_value_want(const dit_cli_opt *o, char *buf, size_t len);

/* A whole decimal number: 0, else -1. */
int dit_cli_parse_f64(const char *s, double *out);

/* A size in bytes: a number with an optional K, M, G or T suffix (powers of 1024, "KiB"
 * and "KB" alike); a bare number counts MiB. From a byte to 2^60 bytes: 0, else -1. */
int dit_cli_parse_size(const char *s, size_t *out);

#endif
