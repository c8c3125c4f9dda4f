/* Task names that carry the CFG pass: "sa.qkv" submitted for the unconditional pass
 * becomes "sa.qkv.uncond". The names live as long as the graph, since StarPU and its
 * trace keep the pointer a task was given; each distinct (name, pass) is made once. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_graph.h"

struct dit_task_names {
	size_t cap, n; /* open addressing: cap a power of two, n entries */
	struct tn_entry {
		char *base; /* the name as submitted */
		int pass;
		char *full; /* base "." pass name */
	} * e;
};

static uint64_t tn_hash(const char *s, int pass)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)(unsigned)pass;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int tn_grow(struct dit_task_names *t)
{
	size_t cap = t->cap ? 2 * t->cap : 64;
	struct tn_entry *e = calloc(cap, sizeof *e);
	if (!e)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->e[i].full)
			continue;
		size_t j = tn_hash(t->e[i].base, t->e[i].pass) & (cap - 1);
		while (e[j].full)
			j = (j + 1) & (cap - 1);
		e[j] = t->e[i];
	}
	free(t->e);
	t->e = e;
	t->cap = cap;
	return 0;
}

void dit_graph_pass_names(dit_graph *g, const char *const *names)
{
	for (int p = 0; p < g->npasses && p < DIT_MAX_PASSES; p++)
		g->pass_name[p] = names ? names[p] : NULL;
}

const char *dit_graph_task_name(dit_graph *g, const char *name)
{
	int p = g->cur_pass;
	if (p < 0 || g->npasses < 2 || !name)
		return name;
	if (!g->names && !(g->names = calloc(1, sizeof *g->names)))
		return NULL;
	struct dit_task_names *t = g->names;
	if ((t->n + 1) * 2 > t->cap && tn_grow(t))
		return NULL;
	size_t j = tn_hash(name, p) & (t->cap - 1);
	for (; t->e[j].full; j = (j + 1) & (t->cap - 1))
		if (t->e[j].pass == p && strcmp(t->e[j].base, name) == 0)
			return t->e[j].full;
	char tag[16];
	const char *pn = g->pass_name[p];
	if (!pn) {
		snprintf(tag, sizeof tag, "p%d", p);
		pn = tag;
	}
	size_t lb = strlen(name), lp = strlen(pn);
	char *base = malloc(lb + 1), *full = malloc(lb + lp + 2);
	if (!base || !full) {
		free(base);
		free(full);
		return NULL;
	}
	memcpy(base, name, lb + 1);
	memcpy(full, name, lb);
	full[lb] = '.';
	memcpy(full + lb + 1, pn, lp + 1);
	t->e[j] = (struct tn_entry){base, p, full};
	t->n++;
	return full;
}

void dit_graph_task_names_free(dit_graph *g)
{
	struct dit_task_names *t = g->names;
	if (!t)
		return;
	for (size_t i = 0; i < t->cap; i++) {
		free(t->e[i].base);
		free(t->e[i].full);
	}
	free(t->e);
	free(t);
	g->names = NULL;
}
