/* The values of the ditstar command's options: see dit_cli_value.h. */
#include "dit_cli_value.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_names.h"

int dit_cli_parse_f64(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end)
		return -1;
	*out = v;
	return 0;
}

int dit_cli_parse_size(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || !(v > 0) || v > 1e15)
		return -1;
	static const char units[] = "KMGT";
	const char *u = *end ? strchr(units, *end & ~0x20) : NULL;
	double unit = 1048576.0;
	if (u) {
		unit = 1024.0;
		for (const char *p = units; p < u; p++)
			unit *= 1024.0;
		end++;
		if (*end == 'i')
			end++;
		if (*end == 'B')
			end++;
	}
	if (*end)
		return -1;
	/* in range before the cast: at least a byte, at most 2^60 bytes (1 EiB) */
	double bytes = v * unit;
	if (!(bytes >= 1.0) || bytes > 0x1p60)
		return -1;
	*out = (size_t)bytes;
	return 0;
}

/* "a, b or c" */
static void names_list(const char *const *names, char *buf, size_t len)
{
	size_t k = 0;
	buf[0] = '\0';
	for (int i = 0; names[i] && k < len; i++)
		k += (size_t)snprintf(buf + k, len - k, "%s%s",
		                      i == 0         ? ""
		                      : names[i + 1] ? ", "
		                                     : " or ",
		                      names[i]);
}

void dit_cli_value_want(const dit_cli_opt *o, char *buf, size_t len)
{
	const dit_cli_opt *p = dit_cli_opt_parser(o);
	char list[160];
	if (o->want || p->want) {
		snprintf(buf, len, "%s", o->want ? o->want : p->want);
		return;
	}
	switch (p->kind) {
	case DIT_CLI_INT:
	case DIT_CLI_INT64: /* a bound above 1000 only guards against nonsense: untold */
		if (p->max <= 1000)
			snprintf(buf, len, "needs an integer from %lld to %lld", (long long)p->min,
			         (long long)p->max);
		else if (p->min == 1)
			snprintf(buf, len, "needs a positive integer");
		else
			snprintf(buf, len, "needs an integer >= %lld", (long long)p->min);
		break;
	case DIT_CLI_DOUBLE:
		if (p->hi > 1000)
			snprintf(buf, len, "needs a number %s %g", p->lo_open ? ">" : ">=", p->lo);
		else if (p->lo_open)
			snprintf(buf, len, "needs a number in (%g, %g]", p->lo, p->hi);
		else
			snprintf(buf, len, "needs a number from %g to %g", p->lo, p->hi);
		break;
	case DIT_CLI_SIZE: snprintf(buf, len, "needs a size like 512M or 4G"); break;
	case DIT_CLI_STRING: snprintf(buf, len, "needs a value"); break;
	case DIT_CLI_CHOICE:
	case DIT_CLI_ENUM:
		names_list(p->names, list, sizeof list);
		snprintf(buf, len, "is %s", list);
		break;
	default: snprintf(buf, len, "needs a valid value"); break;
	}
}

/* The index of arg in names, or -1. */
static int name_index(const char *const *names, const char *arg)
{
	for (int i = 0; names[i]; i++)
		if (strcmp(names[i], arg) == 0)
			return i;
	return -1;
}

/* Stores arg at p's offset in *c by p's kind: 0, else -1 (a bad value). */
static int store(dit_cli *c, const dit_cli_opt *p, const char *arg)
{
	char *at = (char *)c + p->off;
	int64_t v;
	double d;
	size_t z;
	int i;
	switch (p->kind) {
	case DIT_CLI_FLAG: *(int *)at = 1; return 0;
	case DIT_CLI_STRING: /* a path, a list, a name: never empty */
		if (!*arg)
			return -1;
		*(const char **)at = arg;
		return 0;
	case DIT_CLI_INT:
	case DIT_CLI_INT64:
		if (dit_parse_i64(arg, p->min, p->max, &v))
			return -1;
		if (p->kind == DIT_CLI_INT)
			*(int *)at = (int)v;
		else
			*(int64_t *)at = v;
		return 0;
	case DIT_CLI_DOUBLE:
		if (dit_cli_parse_f64(arg, &d) || !(p->lo_open ? d > p->lo : d >= p->lo) ||
		    d > p->hi)
			return -1;
		*(double *)at = d;
		return 0;
	case DIT_CLI_SIZE:
		if (dit_cli_parse_size(arg, &z))
			return -1;
		*(size_t *)at = z;
		return 0;
	case DIT_CLI_CHOICE:
	case DIT_CLI_ENUM:
		if ((i = name_index(p->names, arg)) < 0)
			return -1;
		if (p->kind == DIT_CLI_CHOICE)
			*(const char **)at = arg;
		else
			*(int *)at = p->values[i];
		return 0;
	default: return -1;
	}
}

int dit_cli_value_set(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len)
{
	const dit_cli_opt *p = dit_cli_opt_parser(o);
	if (p->kind == DIT_CLI_SPECIAL)
		return p->parse(c, o, arg, msg, len);
	if (store(c, p, arg) == 0) {
		if (!p->family) /* the value is where the entry says */
			return 0;
		dit_error err; /* a family's option: the run's family options take it by name */
		dit_error_clear(&err);
		if (dit_family_opt_set(&c->gen.fam, p->name, arg, &err) == DIT_OK)
			return 0;
		snprintf(msg, len, "%s", err.msg);
		return -1;
	}
	char want[200];
	dit_cli_value_want(o, want, sizeof want);
	snprintf(msg, len, "--%s %s, not '%s'", o->name, want, arg);
	return -1;
}
