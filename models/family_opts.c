/* The families' own options: lookup over the registry, parsing into slots, and the
 * check that a run's options are its model's family's (dit_family_opts.h). */
#include "dit_family_opts.h"

#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dit_model_desc.h"

/* Whether descs[i]'s doc is new among descs[0..i). */
static int doc_first(const dit_model_desc *const *descs, size_t i)
{
	if (!descs[i]->doc)
		return 0;
	for (size_t k = 0; k < i; k++)
		if (descs[k]->doc == descs[i]->doc)
			return 0;
	return 1;
}

size_t dit_family_doc_count(void)
{
	size_t n, count = 0;
	const dit_model_desc *const *descs = dit_model_descs(&n);
	for (size_t i = 0; i < n; i++)
		count += (size_t)doc_first(descs, i);
	return count;
}

const dit_family_doc *dit_family_doc_get(size_t k)
{
	size_t n;
	const dit_model_desc *const *descs = dit_model_descs(&n);
	for (size_t i = 0; i < n; i++)
		if (doc_first(descs, i) && k-- == 0)
			return descs[i]->doc;
	return NULL;
}

const dit_family_opt *dit_family_opt_find(const char *name, const dit_family_doc **doc)
{
	for (size_t i = 0; i < dit_family_doc_count(); i++) {
		const dit_family_doc *d = dit_family_doc_get(i);
		for (const dit_family_opt *o = d->opts; o && o->name; o++)
			if (strcmp(o->name, name) == 0) {
				if (doc)
					*doc = d;
				return o;
			}
	}
	return NULL;
}

void dit_family_values_init(dit_family_values *v)
{
	memset(v, 0, sizeof *v);
	for (int i = 0; i < DIT_FAMILY_NUMS; i++)
		v->num[i] = NAN;
}

double dit_family_num(const dit_family_values *v, const dit_family_doc *doc, int slot, double dflt)
{
	int ok = v->doc == doc && slot >= 0 && slot < DIT_FAMILY_NUMS && !isnan(v->num[slot]);
	return ok ? v->num[slot] : dflt;
}

const char *dit_family_str(const dit_family_values *v, const dit_family_doc *doc, int slot)
{
	return v->doc == doc && slot >= 0 && slot < DIT_FAMILY_STRS ? v->str[slot] : NULL;
}

dit_status dit_family_opt_set(dit_family_values *v, const char *name, const char *value,
                              dit_error *err)
{
	if (!dit_family_opt_find(name, NULL))
		return dit_error_set(err, DIT_EUSAGE, "--%s: no family has this option", name);
	for (int i = 0; i < v->ngiven; i++)
		if (strcmp(v->given[i].name, name) == 0) {
			v->given[i].value = value;
			return DIT_OK;
		}
	if (v->ngiven == DIT_FAMILY_GIVEN)
		return dit_error_set(err, DIT_EUSAGE, "--%s: more than %d family options", name,
		                     DIT_FAMILY_GIVEN);
	v->given[v->ngiven].name = name;
	v->given[v->ngiven++].value = value;
	return DIT_OK;
}

void dit_family_opt_want(const dit_family_opt *o, char *buf, size_t len)
{
	if (o->want) {
		snprintf(buf, len, "%s", o->want);
		return;
	}
	size_t k;
	switch (o->kind) {
	case DIT_FOPT_INT:
		snprintf(buf, len, "needs an integer from %g to %g", o->lo, o->hi);
		break;
	case DIT_FOPT_DOUBLE:
		if (o->hi > 1000)
			snprintf(buf, len, "needs a number %s %g", o->lo_open ? ">" : ">=", o->lo);
		else if (o->lo_open)
			snprintf(buf, len, "needs a number in (%g, %g]", o->lo, o->hi);
		else
			snprintf(buf, len, "needs a number from %g to %g", o->lo, o->hi);
		break;
	case DIT_FOPT_CHOICE: /* "is a, b or c" */
		k = (size_t)snprintf(buf, len, "is");
		for (int i = 0; o->names[i] && k < len; i++)
			k += (size_t)snprintf(buf + k, len - k, "%s%s",
			                      i == 0            ? " "
			                      : o->names[i + 1] ? ", "
			                                        : " or ",
			                      o->names[i]);
		break;
	default: snprintf(buf, len, "needs a value"); break;
	}
}

/* value into o's slot; -1 when o does not take it. */
static int opt_store(dit_family_values *v, const dit_family_opt *o, const char *value)
{
	if (o->kind == DIT_FOPT_STRING) {
		v->str[o->slot] = value;
		return 0;
	}
	if (o->kind == DIT_FOPT_CHOICE) {
		for (int i = 0; o->names[i]; i++)
			if (strcmp(o->names[i], value) == 0) {
				v->str[o->slot] = value;
				return 0;
			}
		return -1;
	}
	char *end;
	errno = 0;
	double x = strtod(value, &end);
	if (end == value || *end || errno || isnan(x) || x < o->lo || x > o->hi ||
	    (o->lo_open && x == o->lo) || (o->kind == DIT_FOPT_INT && x != floor(x)))
		return -1;
	v->num[o->slot] = x;
	return 0;
}

/* The families that have option name, "A or B", for the refusal. */
static void owners(const char *name, char *buf, size_t len)
{
	size_t k = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < dit_family_doc_count() && k < len; i++) {
		const dit_family_doc *d = dit_family_doc_get(i);
		for (const dit_family_opt *o = d->opts; o && o->name; o++)
			if (strcmp(o->name, name) == 0)
				k += (size_t)snprintf(buf + k, len - k, "%s%s", k ? " or " : "",
				                      d->name);
	}
}

dit_status dit_family_values_resolve(dit_family_values *v, const dit_family_doc *doc, unsigned runs,
                                     const char *model, dit_error *err)
{
	v->doc = doc;
	for (int i = 0; i < DIT_FAMILY_NUMS; i++)
		v->num[i] = NAN;
	memset(v->str, 0, sizeof v->str);
	for (int i = 0; i < v->ngiven; i++) {
		const char *name = v->given[i].name, *value = v->given[i].value;
		const dit_family_opt *o = doc ? doc->opts : NULL;
		while (o && o->name && strcmp(o->name, name) != 0)
			o++;
		char why[200];
		if (!o || !o->name) {
			owners(name, why, sizeof why);
			return dit_error_set(err, DIT_EUSAGE,
			                     "--%s is an option of %s, not of %s (%s)", name, why,
			                     model, doc ? doc->name : "no such family");
		}
		if (!(o->runs & runs))
			return dit_error_set(
			    err, DIT_EUSAGE, "--%s: %s's option applies to %s only", name,
			    doc->name, o->runs & DIT_FOPT_FORWARD ? "forward" : "generate");
		if (opt_store(v, o, value)) {
			dit_family_opt_want(o, why, sizeof why);
			return dit_error_set(err, DIT_EUSAGE, "--%s %s, not '%s'", name, why,
			                     value);
		}
	}
	return DIT_OK;
}
