/* What the pickle reader's opcode loop (dit_pickle.c) and its torch part (globals,
 * calls, persistent ids, tensors: dit_pk_torch.c) share (private). */
#ifndef DIT_PK_PRIV_H
#define DIT_PK_PRIV_H

#include <string.h>

#include "dit_pickle.h"

#define PK_QUOTE_MAX 80
#define PK_QBUF      (PK_QUOTE_MAX * 4 + 8)

typedef struct pk_state {
	dit_pickle *p;
	const dit_pickle_opts *o;
	dit_pickle_caps caps;
	const uint8_t *d;
	size_t len, pos;
	size_t at; /* offset of the opcode being read, for messages */
	uint32_t *stack;
	size_t sn, scap;
	size_t *marks; /* stack heights */
	size_t mn, mcap;
	uint32_t *memo; /* UINT32_MAX: unset */
	size_t memo_len, memo_count;
	size_t items;
	dit_error *err;
} pk_state;

/* err = "LABEL: byte AT: " + the message; returns code. */
dit_status pk_fail(pk_state *s, dit_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A new value of kind (zeroed) at *out. The values may move: a pointer to one taken
 * before is stale after (indices stay). */
dit_status pk_new(pk_state *s, dit_pk_kind kind, uint32_t *out);

/* Appends item to the container c (within the items cap). */
dit_status pk_append(pk_state *s, uint32_t c, uint32_t item);

/* s[0..len) quoted for a message. */
static inline const char *pk_quote(char *buf, const char *str, size_t len)
{
	return dit_error_quote(buf, PK_QBUF, str, len, PK_QUOTE_MAX);
}

/* The global module.name (GLOBAL, STACK_GLOBAL): an accepted one, else refused. */
dit_status pk_global(pk_state *s, const char *mod, size_t ml, const char *name, size_t nl,
                     uint32_t *out);
/* REDUCE: fn called on the tuple args. */
dit_status pk_reduce(pk_state *s, uint32_t fn, uint32_t args, uint32_t *out);
/* BINPERSID: the storage pid names. */
dit_status pk_persistent(pk_state *s, uint32_t pid, uint32_t *out);
/* BUILD: state applied to target. */
dit_status pk_build(pk_state *s, uint32_t target, uint32_t state);
/* NEWOBJ: cls(*args), of io.BytesIO with no arguments alone */
dit_status pk_newobj(pk_state *s, uint32_t cls, uint32_t args, uint32_t *out);

#endif
