/* Names of enum values (command-line spellings), looked up both ways. */
#ifndef DIT_NAMES_H
#define DIT_NAMES_H

#include <string.h>

/* Index of name in names[n], or -1. */
static inline int dit_name_find(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(name, names[i]) == 0)
			return i;
	return -1;
}

/* names[i], or "?" outside [0, n). */
static inline const char *dit_name_of(const char *const *names, int n, int i)
{
	return i >= 0 && i < n ? names[i] : "?";
}

#endif
