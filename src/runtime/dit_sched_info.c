/* What ditstar knows of StarPU's scheduling policies beyond their names: which read the
 * tasks' priorities (a range wider than one value once started: measured policy by
 * policy with StarPU 1.4.10, tests/test_sched_list.sh checks every one), which place
 * tasks by calibrated performance models, and the default. `ditstar sched list`. */
#include "dit_runtime.h"

#include <string.h>

#include <starpu.h>

/* the policies whose priority range is wider than one value */
static const char *const sched_prio[] = {"prio",
                                         "lws",
                                         "ws",
                                         "dmdap",
                                         "dmdas",
                                         "dmdasd",
                                         "heteroprio",
                                         "modular-prio",
                                         "modular-prio-prefetching",
                                         "modular-gemm",
                                         "modular-eager-prio",
                                         "modular-random-prio",
                                         "modular-random-prio-prefetching",
                                         "modular-prandom-prio",
                                         "modular-dmdap",
                                         "modular-dmdas",
                                         "modular-heft",
                                         "modular-heft-prio",
                                         "modular-heft2",
                                         "modular-heteroprio",
                                         "modular-heteroprio-heft",
                                         "modular-pheft",
                                         NULL};

/* the policies that place tasks by their performance models' estimates */
static const char *const sched_models[] = {"dm",
                                           "dmda",
                                           "dmdar",
                                           "dmdap",
                                           "dmdas",
                                           "dmdasd",
                                           "pheft",
                                           "modular-dmda",
                                           "modular-dmdap",
                                           "modular-dmdar",
                                           "modular-dmdas",
                                           "modular-heft",
                                           "modular-heft-prio",
                                           "modular-heft2",
                                           "modular-pheft",
                                           "modular-heteroprio-heft",
                                           NULL};

static int listed(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (strcmp(*list, name) == 0)
			return 1;
	return 0;
}

int dit_sched_reads_priorities(const char *name)
{
	return listed(sched_prio, name);
}

int dit_sched_uses_models(const char *name)
{
	return listed(sched_models, name);
}

void dit_runtime_sched_list(FILE *out)
{
	struct starpu_sched_policy **p = starpu_sched_get_predefined_policies();
	for (; *p; p++) {
		const char *n = (*p)->policy_name;
		char marks[64];
		snprintf(marks, sizeof marks, "%s%s%s",
		         strcmp(n, DIT_SCHED_DEFAULT) == 0 ? "default " : "",
		         dit_sched_reads_priorities(n) ? "priorities " : "",
		         dit_sched_uses_models(n) ? "models " : "");
		size_t k = strlen(marks);
		if (k)
			marks[k - 1] = '\0';
		fprintf(out, "%-32s %-27s %s\n", n, marks,
		        (*p)->policy_description ? (*p)->policy_description : "");
	}
}
