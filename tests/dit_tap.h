/* TAP bookkeeping for the C tests: the lines are kept until the end, so that "1..N"
 * comes first. The including test defines DIT_TEST_MAX (checks) and DIT_LINE_MAX
 * (characters a line) first. */
#ifndef DIT_TAP_H
#define DIT_TAP_H

#include <stdio.h>
#include <stdlib.h>

typedef struct dit_tap {
	int n, failed;
	char line[DIT_TEST_MAX][DIT_LINE_MAX];
} dit_tap;

static inline void dit_tap_add(dit_tap *tap, int ok, const char *name, double err, double tol)
{
	if (tap->n >= DIT_TEST_MAX) {
		fprintf(stderr, "too many checks\n");
		exit(2);
	}
	snprintf(tap->line[tap->n], DIT_LINE_MAX, "%s %d - %s (maxerr=%.3g tol=%.3g)",
	         ok ? "ok" : "not ok", tap->n + 1, name, err, tol);
	tap->n++;
	tap->failed += !ok;
}

static inline void dit_tap_skip(dit_tap *tap, const char *name, const char *why)
{
	if (tap->n >= DIT_TEST_MAX) {
		fprintf(stderr, "too many checks\n");
		exit(2);
	}
	snprintf(tap->line[tap->n], DIT_LINE_MAX, "ok %d - %s # SKIP %s", tap->n + 1, name, why);
	tap->n++;
}

static inline void dit_tap_print(const dit_tap *tap)
{
	printf("1..%d\n", tap->n);
	for (int i = 0; i < tap->n; i++)
		printf("%s\n", tap->line[i]);
	if (tap->failed)
		printf("# %d of %d checks failed\n", tap->failed, tap->n);
	else
		printf("# all %d checks passed\n", tap->n);
}

/* ok when err <= tol */
static inline void dit_tap_check(dit_tap *tap, const char *name, double err, double tol)
{
	dit_tap_add(tap, err <= tol, name, err, tol);
}

#endif
