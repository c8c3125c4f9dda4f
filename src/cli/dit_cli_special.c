/* The option values the table's plain kinds do not parse: see dit_cli_special.h. */
#include "dit_cli_special.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_cli_value.h"
#include "dit_names.h"

/* "--NAME WANT, not 'ARG'": the refusal of a bad value; -1 */
static int refuse(const dit_cli_opt *o, const char *arg, char *msg, size_t len)
{
	char want[200];
	dit_cli_value_want(o, want, sizeof want);
	snprintf(msg, len, "--%s %s, not '%s'", o->name, want, arg);
	return -1;
}

/* "N" or "N,M,...": one positive size per pool (at most DIT_MAX_POOLS). */
static int parse_sizes(const char *s, int64_t *out)
{
	int64_t v[DIT_MAX_POOLS] = {0};
	int n = 0;
	for (const char *p = s;; n++) {
		char buf[24];
		size_t len = strcspn(p, ",");
		if (n == DIT_MAX_POOLS || len == 0 || len >= sizeof buf)
			return -1;
		memcpy(buf, p, len);
		buf[len] = '\0';
		if (dit_parse_i64(buf, 1, 100000, &v[n]))
			return -1;
		if (!p[len])
			break;
		p += len + 1;
	}
	memcpy(out, v, sizeof v);
	return 0;
}

/* The chunk size of the pools named pool (its first len bytes): a name given again
 * replaces its size. 0; -1 for a bad name or size; -2 when every slot is taken. */
static int chunk_named(dit_cli *c, const char *pool, size_t len, const char *size)
{
	dit_offload_opts *f = &c->gen.offload;
	int64_t v;
	if (len == 0 || len >= sizeof c->pool_names[0] ||
	    strspn(pool, "abcdefghijklmnopqrstuvwxyz"
	                 "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                 "0123456789_.-") < len ||
	    dit_parse_i64(size, 1, 100000, &v))
		return -1;
	int k = 0;
	while (k < f->nchunk_named &&
	       !(strlen(c->pool_names[k]) == len && strncmp(c->pool_names[k], pool, len) == 0))
		k++;
	if (k == DIT_MAX_POOLS)
		return -2;
	memcpy(c->pool_names[k], pool, len);
	c->pool_names[k][len] = '\0';
	f->chunk_named[k].name = c->pool_names[k];
	f->chunk_named[k].size = v;
	if (k == f->nchunk_named)
		f->nchunk_named++;
	return 0;
}

int dit_cli_chunk_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len)
{
	const char *eq = strchr(arg, '=');
	int r = eq ? chunk_named(c, arg, (size_t)(eq - arg), eq + 1)
	           : parse_sizes(arg, c->gen.offload.chunk_size);
	if (r == -2) {
		snprintf(msg, len, "--%s: at most %d pools named (POOL=N)", o->name, DIT_MAX_POOLS);
		return -1;
	}
	return r ? refuse(o, arg, msg, len) : 0;
}

int dit_cli_chunk_pool_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg,
                             size_t len)
{
	const char *pool = strrchr(o->name, '-') + 1; /* "double" of "...-size-double" */
	int r = chunk_named(c, pool, strlen(pool), arg);
	if (r == -2) {
		snprintf(msg, len, "--%s: at most %d pools named", o->name, DIT_MAX_POOLS);
		return -1;
	}
	return r ? refuse(o, arg, msg, len) : 0;
}

int dit_cli_resident_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len)
{
	int64_t v;
	if (strcmp(arg, "auto") == 0)
		v = -1;
	else if (dit_parse_i64(arg, 0, INT64_MAX / 2, &v))
		return refuse(o, arg, msg, len);
	c->gen.offload.resident = v;
	return 0;
}

int dit_cli_lora_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len)
{
	dit_checkpoint_opts *ck = &c->gen.ck;
	if (ck->nlora == DIT_MAX_LORAS) {
		snprintf(msg, len, "--%s: at most %d files", o->name, DIT_MAX_LORAS);
		return -1;
	}
	int k = ck->nlora;
	dit_lora_spec *sp = &ck->lora[k];
	*sp = (dit_lora_spec){.strength = 1.0};
	/* EXPERT=: a lowercase word before the first '=' */
	size_t w = strspn(arg, "abcdefghijklmnopqrstuvwxyz");
	if (w && arg[w] == '=' && w < sizeof c->lora_experts[k]) {
		memcpy(c->lora_experts[k], arg, w);
		c->lora_experts[k][w] = 0;
		sp->expert = c->lora_experts[k];
		arg += w + 1;
	}
	/* :STRENGTH: a number after the last ':' (else the ':' is the path's) */
	const char *colon = strrchr(arg, ':');
	size_t plen = strlen(arg);
	char *end = NULL;
	double v = colon && colon[1] ? strtod(colon + 1, &end) : 0;
	if (colon && end && !*end && end != colon + 1 && isfinite(v)) {
		if (!(v >= -100 && v <= 100)) {
			snprintf(msg, len, "--%s: strength %s, not in -100..100", o->name,
			         colon + 1);
			return -1;
		}
		sp->strength = v;
		plen = (size_t)(colon - arg);
	}
	if (!plen || plen >= sizeof c->lora_paths[k])
		return refuse(o, arg, msg, len);
	memcpy(c->lora_paths[k], arg, plen);
	c->lora_paths[k][plen] = 0;
	sp->path = c->lora_paths[k];
	ck->nlora++;
	return 0;
}

/* "--NAME: the library's reason" */
static int named_error(const dit_cli_opt *o, const dit_error *err, char *msg, size_t len)
{
	snprintf(msg, len, "--%s: %s", o->name, err->msg);
	return -1;
}

int dit_cli_offload_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len)
{
	dit_error err;
	if (dit_offload_mode_parse(&c->gen.offload.mode, arg, &err))
		return named_error(o, &err, msg, len);
	return 0;
}

int dit_cli_solver_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len)
{
	dit_error err;
	if (dit_solver_parse(&c->gen.solver, arg, &err))
		return named_error(o, &err, msg, len);
	return 0;
}

int dit_cli_workers_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len)
{
	dit_error err;
	if (dit_workers_parse(&c->gen.rt.workers, arg, &err))
		return named_error(o, &err, msg, len);
	return 0;
}

int dit_cli_wdtype_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len)
{
	dit_error err;
	if (dit_weight_dtype_parse(&c->gen.offload.weight_dtype, arg, &err))
		return named_error(o, &err, msg, len);
	return 0;
}

int dit_cli_adtype_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len)
{
	dit_error err;
	if (dit_weight_dtype_parse(&c->gen.offload.act_dtype, arg, &err))
		return named_error(o, &err, msg, len);
	return 0;
}

int dit_cli_roofline_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len)
{
#ifndef DIT_SIMGRID
	(void)c;
	(void)arg;
	snprintf(msg, len, "--%s is ditstar-sim's (a simulation option)", o->name);
	return -1;
#else
	(void)o;
	(void)msg;
	(void)len;
	c->gen.rt.sim_roofline = arg;
	return 0;
#endif
}
