/* What the benchmarks share: summaries of repeated timings, argument parsing. */
#ifndef DIT_BENCH_STATS_H
#define DIT_BENCH_STATS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DIT_BENCH_MAX_REPS 100 /* timings per measurement, at most */

static inline int dit_bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median of v[n], n <= DIT_BENCH_MAX_REPS. */
static inline double dit_bench_median(const double *v, int n)
{
	double s[DIT_BENCH_MAX_REPS];
	memcpy(s, v, (size_t)n * sizeof *s);
	qsort(s, (size_t)n, sizeof *s, dit_bench_cmp_double);
	return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

static inline double dit_bench_min(const double *v, int n)
{
	double m = v[0];
	for (int i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

/* Parses a decimal integer of at least min; 0 on success, -1 otherwise. */
static inline int dit_bench_parse_i64(const char *s, int64_t *v, int64_t min)
{
	char *end;
	long long x = strtoll(s, &end, 10);
	if (*s == '\0' || *end != '\0' || x < min)
		return -1;
	*v = x;
	return 0;
}

#endif
