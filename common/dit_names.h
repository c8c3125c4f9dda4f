/* Names of enum values (command-line spellings), looked up both ways, and integers
 * as options and variables spell them. */
#ifndef DIT_NAMES_H
#define DIT_NAMES_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_error.h"

/* *out = the index of name in names[n]; otherwise the error "unknown WHAT 'name'
 * (a, b or c)", listing the names. */
static inline dit_status dit_name_parse(int *out, const char *const *names, int n, const char *name,
                                        const char *what, dit_error *err)
{
	char list[128] = "";
	for (int i = 0; i < n; i++) {
		if (strcmp(name, names[i]) == 0) {
			*out = i;
			return DIT_OK;
		}
		size_t len = strlen(list);
		snprintf(list + len, sizeof list - len, "%s%s",
		         i == 0       ? ""
		         : i == n - 1 ? " or "
		                      : ", ",
		         names[i]);
	}
	return dit_error_set(err, DIT_EINVAL, "unknown %s '%s' (%s)", what, name, list);
}

/* names[i], or "?" outside [0, n). */
static inline const char *dit_name_of(const char *const *names, int n, int i)
{
	return i >= 0 && i < n ? names[i] : "?";
}

/* *out = s as a decimal integer in [lo, hi] (nothing after it); 0, else -1. */
static inline int dit_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = (int64_t)v;
	return 0;
}

#endif
