/* The restricted pickle reader (see dit_pickle.h): the opcode loop, the stack, the
 * MARKs and the memo. What globals, calls and persistent ids mean is dit_pk_torch.c's. */
#define _POSIX_C_SOURCE 200809L

#include "dit_pk_priv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define PK_MAX_PROTO    5
#define PK_MAX_GLOBAL   256 /* bytes of a GLOBAL's module or name line */
#define PK_MEMO_UNSET   UINT32_MAX
#define PK_MIN_CAPACITY 256

void dit_pickle_caps_default(dit_pickle_caps *c)
{
	c->objects = DIT_PICKLE_MAX_OBJECTS;
	c->items = DIT_PICKLE_MAX_ITEMS;
	c->memo = DIT_PICKLE_MAX_MEMO;
	c->stack = DIT_PICKLE_MAX_STACK;
	c->marks = DIT_PICKLE_MAX_MARKS;
	c->storages = DIT_PICKLE_MAX_STORAGES;
	c->tensors = DIT_PICKLE_MAX_TENSORS;
	c->str_len = DIT_PICKLE_MAX_STR;
}

/* The opcode's name, for messages ("unknown" when pickle has none such). */
static const char *pk_opname(uint8_t op)
{
	/* the opcode byte, then its name */
	static const char tab[][18] = {
	    "(MARK",
	    ".STOP",
	    "0POP",
	    "1POP_MARK",
	    "2DUP",
	    "FFLOAT",
	    "IINT",
	    "JBININT",
	    "KBININT1",
	    "LLONG",
	    "MBININT2",
	    "NNONE",
	    "PPERSID",
	    "QBINPERSID",
	    "RREDUCE",
	    "SSTRING",
	    "TBINSTRING",
	    "USHORT_BINSTRING",
	    "VUNICODE",
	    "XBINUNICODE",
	    "aAPPEND",
	    "bBUILD",
	    "cGLOBAL",
	    "dDICT",
	    "}EMPTY_DICT",
	    "eAPPENDS",
	    "gGET",
	    "hBINGET",
	    "iINST",
	    "jLONG_BINGET",
	    "lLIST",
	    "]EMPTY_LIST",
	    "oOBJ",
	    "pPUT",
	    "qBINPUT",
	    "rLONG_BINPUT",
	    "sSETITEM",
	    "tTUPLE",
	    ")EMPTY_TUPLE",
	    "uSETITEMS",
	    "GBINFLOAT",
	    "\200PROTO",
	    "\201NEWOBJ",
	    "\202EXT1",
	    "\203EXT2",
	    "\204EXT4",
	    "\205TUPLE1",
	    "\206TUPLE2",
	    "\207TUPLE3",
	    "\210NEWTRUE",
	    "\211NEWFALSE",
	    "\212LONG1",
	    "\213LONG4",
	    "BBINBYTES",
	    "CSHORT_BINBYTES",
	    "\214SHORT_BINUNICODE",
	    "\215BINUNICODE8",
	    "\216BINBYTES8",
	    "\217EMPTY_SET",
	    "\220ADDITEMS",
	    "\221FROZENSET",
	    "\222NEWOBJ_EX",
	    "\223STACK_GLOBAL",
	    "\224MEMOIZE",
	    "\225FRAME",
	    "\226BYTEARRAY8",
	    "\227NEXT_BUFFER",
	    "\230READONLY_BUFFER",
	};
	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
		if ((uint8_t)tab[i][0] == op)
			return tab[i] + 1;
	return "unknown";
}

dit_status pk_fail(pk_state *s, dit_status code, const char *fmt, ...)
{
	char m[DIT_ERROR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	return dit_error_set(s->err, code, "%s: byte %zu: %s", s->o->label, s->at, m);
}

dit_status pk_new(pk_state *s, dit_pk_kind kind, uint32_t *out)
{
	dit_pickle *p = s->p;
	if (p->nobjs >= s->caps.objects)
		return pk_fail(s, DIT_EFORMAT, "more than %zu values, the limit", s->caps.objects);
	if (p->nobjs == p->cap_objs) {
		size_t n = p->cap_objs ? p->cap_objs * 2 : PK_MIN_CAPACITY;
		n = n > s->caps.objects ? s->caps.objects : n;
		dit_pk_obj *v = realloc(p->objs, n * sizeof *v);
		if (!v)
			return pk_fail(s, DIT_ENOMEM, "out of memory for %zu values", n);
		p->objs = v;
		p->cap_objs = n;
	}
	memset(&p->objs[p->nobjs], 0, sizeof p->objs[0]);
	p->objs[p->nobjs].kind = (uint8_t)kind;
	*out = (uint32_t)p->nobjs++;
	return DIT_OK;
}

dit_status pk_append(pk_state *s, uint32_t c, uint32_t item)
{
	if (s->items >= s->caps.items)
		return pk_fail(s, DIT_EFORMAT, "more than %zu container items, the limit",
		               s->caps.items);
	dit_pk_obj *o = &s->p->objs[c];
	if (o->n == o->cap) {
		uint32_t n = o->cap ? o->cap * 2 : 4;
		uint32_t *v = realloc(o->u.items, (size_t)n * sizeof *v);
		if (!v)
			return pk_fail(s, DIT_ENOMEM, "out of memory for %u items", n);
		o->u.items = v;
		o->cap = n;
	}
	o->u.items[o->n++] = item;
	s->items++;
	return DIT_OK;
}

static dit_status pk_push(pk_state *s, uint32_t v)
{
	if (s->sn >= s->caps.stack)
		return pk_fail(s, DIT_EFORMAT, "more than %zu values on the stack, the limit",
		               s->caps.stack);
	if (s->sn == s->scap) {
		size_t n = s->scap ? s->scap * 2 : PK_MIN_CAPACITY;
		uint32_t *st = realloc(s->stack, n * sizeof *st);
		if (!st)
			return pk_fail(s, DIT_ENOMEM, "out of memory for the stack");
		s->stack = st;
		s->scap = n;
	}
	s->stack[s->sn++] = v;
	return DIT_OK;
}

/* The stack height below which the current MARK's values begin. */
static size_t pk_floor(const pk_state *s)
{
	return s->mn ? s->marks[s->mn - 1] : 0;
}

static dit_status pk_underflow(pk_state *s, uint8_t op)
{
	return pk_fail(s, DIT_EFORMAT, "%s on an empty stack", pk_opname(op));
}

static dit_status pk_pop(pk_state *s, uint8_t op, uint32_t *v)
{
	if (s->sn <= pk_floor(s))
		return pk_underflow(s, op);
	*v = s->stack[--s->sn];
	return DIT_OK;
}

/* Ends the innermost MARK: its values are stack[*from..sn). */
static dit_status pk_pop_mark(pk_state *s, uint8_t op, size_t *from)
{
	if (s->mn == 0)
		return pk_fail(s, DIT_EFORMAT, "%s without a MARK", pk_opname(op));
	*from = s->marks[--s->mn];
	return DIT_OK;
}

/* A new container of kind holding stack[from..sn), which it replaces. */
static dit_status pk_collect(pk_state *s, dit_pk_kind kind, size_t from)
{
	uint32_t c;
	dit_status st = pk_new(s, kind, &c);
	for (size_t i = from; st == DIT_OK && i < s->sn; i++)
		st = pk_append(s, c, s->stack[i]);
	if (st != DIT_OK)
		return st;
	s->sn = from;
	return pk_push(s, c);
}

/* Whether container c can take the items of op (kind). */
static dit_status pk_check_kind(pk_state *s, uint8_t op, uint32_t c, dit_pk_kind kind)
{
	if (s->p->objs[c].kind != kind)
		return pk_fail(s, DIT_EUNSUPPORTED, "%s on %s", pk_opname(op),
		               dit_pk_kind_name((dit_pk_kind)s->p->objs[c].kind));
	return DIT_OK;
}

/* Adds stack[from..sn) to the container right below them (APPEND, SETITEM and the
 * forms with a MARK), which must be of kind; pairs when a dict. */
static dit_status pk_extend(pk_state *s, uint8_t op, dit_pk_kind kind, size_t from)
{
	if (from <= pk_floor(s))
		return pk_underflow(s, op);
	uint32_t c = s->stack[from - 1];
	dit_status st = pk_check_kind(s, op, c, kind);
	if (st != DIT_OK)
		return st;
	if (kind == DIT_PK_DICT && (s->sn - from) % 2)
		return pk_fail(s, DIT_EFORMAT, "%s with an odd number of values", pk_opname(op));
	for (size_t i = from; st == DIT_OK && i < s->sn; i++)
		st = pk_append(s, c, s->stack[i]);
	if (st == DIT_OK)
		s->sn = from;
	return st;
}

static dit_status pk_need(pk_state *s, uint8_t op, uint64_t n)
{
	if (s->len - s->pos < n)
		return pk_fail(s, DIT_EFORMAT,
		               "pickle is truncated: %s needs %llu bytes, %zu are left",
		               pk_opname(op), (unsigned long long)n, s->len - s->pos);
	return DIT_OK;
}

/* n (<= 8) little-endian bytes at the read position, consumed. */
static uint64_t pk_le(pk_state *s, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)s->d[s->pos + i] << (8 * i);
	s->pos += n;
	return v;
}

static dit_status pk_push_new(pk_state *s, dit_pk_kind kind, int64_t i)
{
	uint32_t v;
	dit_status st = pk_new(s, kind, &v);
	if (st == DIT_OK) {
		s->p->objs[v].u.i = i;
		st = pk_push(s, v);
	}
	return st;
}

/* A string or bytes value whose length takes lb bytes. */
static dit_status pk_string(pk_state *s, uint8_t op, dit_pk_kind kind, size_t lb)
{
	dit_status st = pk_need(s, op, lb);
	if (st != DIT_OK)
		return st;
	uint64_t n = pk_le(s, lb);
	if (n > s->caps.str_len)
		return pk_fail(s, DIT_EFORMAT, "%s of %llu bytes, more than the limit of %zu",
		               pk_opname(op), (unsigned long long)n, s->caps.str_len);
	uint32_t v;
	if ((st = pk_need(s, op, n)) != DIT_OK || (st = pk_new(s, kind, &v)) != DIT_OK)
		return st;
	s->p->objs[v].n = (uint32_t)n;
	s->p->objs[v].u.s = (const char *)s->d + s->pos;
	s->pos += (size_t)n;
	return pk_push(s, v);
}

/* LONG1 and LONG4: two's complement little-endian integers of at most 8 bytes. */
static dit_status pk_long(pk_state *s, uint8_t op, size_t lb)
{
	dit_status st = pk_need(s, op, lb);
	if (st != DIT_OK)
		return st;
	uint64_t n = pk_le(s, lb);
	if (n > 8)
		return pk_fail(s, DIT_EUNSUPPORTED, "an integer of %llu bytes is too large",
		               (unsigned long long)n);
	if ((st = pk_need(s, op, n)) != DIT_OK)
		return st;
	uint64_t v = pk_le(s, (size_t)n);
	if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~(uint64_t)0 << (8 * n);
	int64_t i;
	memcpy(&i, &v, sizeof i);
	return pk_push_new(s, DIT_PK_INT, i);
}

static dit_status pk_memo_put(pk_state *s, uint8_t op, uint64_t idx)
{
	if (s->sn <= pk_floor(s))
		return pk_underflow(s, op);
	if (idx >= s->caps.memo)
		return pk_fail(s, DIT_EFORMAT, "memo index %llu, beyond the limit of %zu",
		               (unsigned long long)idx, s->caps.memo);
	if (idx >= s->memo_len) {
		size_t n = s->memo_len ? s->memo_len : PK_MIN_CAPACITY;
		while (n <= idx)
			n *= 2;
		n = n > s->caps.memo ? s->caps.memo : n;
		uint32_t *m = realloc(s->memo, n * sizeof *m);
		if (!m)
			return pk_fail(s, DIT_ENOMEM, "out of memory for the memo");
		for (size_t i = s->memo_len; i < n; i++)
			m[i] = PK_MEMO_UNSET;
		s->memo = m;
		s->memo_len = n;
	}
	s->memo_count += s->memo[idx] == PK_MEMO_UNSET;
	s->memo[idx] = s->stack[s->sn - 1];
	return DIT_OK;
}

static dit_status pk_memo_get(pk_state *s, uint64_t idx)
{
	if (idx >= s->memo_len || s->memo[idx] == PK_MEMO_UNSET)
		return pk_fail(s, DIT_EFORMAT, "memo entry %llu is read before it is set",
		               (unsigned long long)idx);
	return pk_push(s, s->memo[idx]);
}

/* GLOBAL's argument: "module\nname\n". */
static dit_status pk_global_line(pk_state *s, uint8_t op, const char **p, size_t *n)
{
	size_t left = s->len - s->pos, lim = left < PK_MAX_GLOBAL + 1 ? left : PK_MAX_GLOBAL + 1;
	const char *b = (const char *)s->d + s->pos;
	const char *nl = memchr(b, '\n', lim);
	if (!nl)
		return lim == left ? pk_need(s, op, left + 1)
		                   : pk_fail(s, DIT_EFORMAT, "GLOBAL name longer than %d bytes",
		                             PK_MAX_GLOBAL);
	*p = b;
	*n = (size_t)(nl - b);
	s->pos += *n + 1;
	return DIT_OK;
}

static dit_status pk_op_global(pk_state *s, uint8_t op)
{
	const char *mod, *name;
	size_t ml, nl;
	uint32_t v;
	dit_status st;
	if (op == 'c') {
		if ((st = pk_global_line(s, op, &mod, &ml)) != DIT_OK ||
		    (st = pk_global_line(s, op, &name, &nl)) != DIT_OK)
			return st;
	} else {
		uint32_t a, b;
		if ((st = pk_pop(s, op, &b)) != DIT_OK || (st = pk_pop(s, op, &a)) != DIT_OK)
			return st;
		const dit_pk_obj *m = &s->p->objs[a], *n = &s->p->objs[b];
		if (m->kind != DIT_PK_STR || n->kind != DIT_PK_STR)
			return pk_fail(s, DIT_EFORMAT, "STACK_GLOBAL of %s and %s, not strings",
			               dit_pk_kind_name((dit_pk_kind)m->kind),
			               dit_pk_kind_name((dit_pk_kind)n->kind));
		mod = m->u.s, ml = m->n, name = n->u.s, nl = n->n;
	}
	if ((st = pk_global(s, mod, ml, name, nl, &v)) != DIT_OK)
		return st;
	return pk_push(s, v);
}

/* One opcode with its arguments; *done at STOP. Long by nature: one case per opcode the
 * reader accepts, each reading its argument and calling the function that does the work;
 * split up, the opcodes and the machine's state they share would be scattered. */
static dit_status pk_step(pk_state *s, int *done)
{
	uint8_t op = s->d[s->pos++];
	uint32_t a, b, c;
	size_t from;
	dit_status st = DIT_OK;
	switch (op) {
	case 0x80: /* PROTO */
		if ((st = pk_need(s, op, 1)) == DIT_OK && s->d[s->pos++] > PK_MAX_PROTO)
			st = pk_fail(s, DIT_EUNSUPPORTED, "pickle protocol %u, at most %d is read",
			             s->d[s->pos - 1], PK_MAX_PROTO);
		return st;
	case 0x95: /* FRAME: a length only; the bytes follow as usual */
		if ((st = pk_need(s, op, 8)) == DIT_OK && pk_le(s, 8) > s->len - s->pos)
			st =
			    pk_fail(s, DIT_EFORMAT, "pickle is truncated: FRAME runs past its end");
		return st;
	case '.':
		if (s->mn)
			return pk_fail(s, DIT_EFORMAT, "STOP with %zu MARKs open", s->mn);
		if (s->sn != 1)
			return pk_fail(s, DIT_EFORMAT, "STOP with %zu values on the stack, not 1",
			               s->sn);
		if (s->pos != s->len)
			return pk_fail(s, DIT_EFORMAT, "%zu bytes after STOP", s->len - s->pos);
		s->p->root = s->stack[0];
		*done = 1;
		return DIT_OK;
	case '(':
		if (s->mn >= s->caps.marks)
			return pk_fail(s, DIT_EFORMAT, "more than %zu MARKs open, the limit",
			               s->caps.marks);
		if (s->mn == s->mcap) {
			size_t n = s->mcap ? s->mcap * 2 : 16;
			size_t *m = realloc(s->marks, n * sizeof *m);
			if (!m)
				return pk_fail(s, DIT_ENOMEM, "out of memory for MARKs");
			s->marks = m;
			s->mcap = n;
		}
		s->marks[s->mn++] = s->sn;
		return DIT_OK;
	case '0': return pk_pop(s, op, &a);
	case '1':
		if ((st = pk_pop_mark(s, op, &from)) == DIT_OK)
			s->sn = from;
		return st;
	case 'N': return pk_push_new(s, DIT_PK_NONE, 0);
	case 0x88: return pk_push_new(s, DIT_PK_BOOL, 1);
	case 0x89: return pk_push_new(s, DIT_PK_BOOL, 0);
	case 'J':
		if ((st = pk_need(s, op, 4)) != DIT_OK)
			return st;
		return pk_push_new(s, DIT_PK_INT, (int32_t)(uint32_t)pk_le(s, 4));
	case 'K':
	case 'M':
		if ((st = pk_need(s, op, op == 'K' ? 1 : 2)) != DIT_OK)
			return st;
		return pk_push_new(s, DIT_PK_INT, (int64_t)pk_le(s, op == 'K' ? 1 : 2));
	case 0x8a: return pk_long(s, op, 1);
	case 0x8b: return pk_long(s, op, 4);
	case 'G': {
		if ((st = pk_need(s, op, 8)) != DIT_OK)
			return st;
		uint64_t bits = 0;
		for (int i = 0; i < 8; i++)
			bits = bits << 8 | s->d[s->pos++];
		if ((st = pk_new(s, DIT_PK_FLOAT, &a)) == DIT_OK) {
			memcpy(&s->p->objs[a].u.f, &bits, sizeof bits);
			st = pk_push(s, a);
		}
		return st;
	}
	case 0x8c: return pk_string(s, op, DIT_PK_STR, 1);
	case 'X': return pk_string(s, op, DIT_PK_STR, 4);
	case 0x8d: return pk_string(s, op, DIT_PK_STR, 8);
	case 'C': return pk_string(s, op, DIT_PK_BYTES, 1);
	case 'B': return pk_string(s, op, DIT_PK_BYTES, 4);
	case 0x8e: return pk_string(s, op, DIT_PK_BYTES, 8);
	case ')': return pk_collect(s, DIT_PK_TUPLE, s->sn);
	case ']': return pk_collect(s, DIT_PK_LIST, s->sn);
	case '}': return pk_collect(s, DIT_PK_DICT, s->sn);
	case 0x8f: return pk_collect(s, DIT_PK_SET, s->sn);
	case 0x85:
	case 0x86:
	case 0x87:
		if (s->sn - pk_floor(s) < (size_t)(op - 0x84))
			return pk_underflow(s, op);
		return pk_collect(s, DIT_PK_TUPLE, s->sn - (size_t)(op - 0x84));
	case 't':
	case 'l':
	case 'd':
	case 0x91:
		if ((st = pk_pop_mark(s, op, &from)) != DIT_OK)
			return st;
		if (op == 'd' && (s->sn - from) % 2)
			return pk_fail(s, DIT_EFORMAT, "DICT with an odd number of values");
		return pk_collect(s,
		                  op == 't'   ? DIT_PK_TUPLE
		                  : op == 'l' ? DIT_PK_LIST
		                  : op == 'd' ? DIT_PK_DICT
		                              : DIT_PK_SET,
		                  from);
	case 'a':
		if (s->sn - pk_floor(s) < 2)
			return pk_underflow(s, op);
		return pk_extend(s, op, DIT_PK_LIST, s->sn - 1);
	case 's':
		if (s->sn - pk_floor(s) < 3)
			return pk_underflow(s, op);
		return pk_extend(s, op, DIT_PK_DICT, s->sn - 2);
	case 'e':
	case 'u':
	case 0x90:
		if ((st = pk_pop_mark(s, op, &from)) != DIT_OK)
			return st;
		return pk_extend(s, op,
		                 op == 'e'   ? DIT_PK_LIST
		                 : op == 'u' ? DIT_PK_DICT
		                             : DIT_PK_SET,
		                 from);
	case 'q':
	case 'r':
		if ((st = pk_need(s, op, op == 'q' ? 1 : 4)) != DIT_OK)
			return st;
		return pk_memo_put(s, op, pk_le(s, op == 'q' ? 1 : 4));
	case 0x94: return pk_memo_put(s, op, s->memo_count);
	case 'h':
	case 'j':
		if ((st = pk_need(s, op, op == 'h' ? 1 : 4)) != DIT_OK)
			return st;
		return pk_memo_get(s, pk_le(s, op == 'h' ? 1 : 4));
	case 'c':
	case 0x93: return pk_op_global(s, op);
	case 'R':
		if ((st = pk_pop(s, op, &b)) != DIT_OK || (st = pk_pop(s, op, &a)) != DIT_OK ||
		    (st = pk_reduce(s, a, b, &c)) != DIT_OK)
			return st;
		return pk_push(s, c);
	case 'b':
		if ((st = pk_pop(s, op, &b)) != DIT_OK)
			return st;
		if (s->sn <= pk_floor(s))
			return pk_underflow(s, op);
		return pk_build(s, s->stack[s->sn - 1], b);
	case 'Q':
		if ((st = pk_pop(s, op, &a)) != DIT_OK || (st = pk_persistent(s, a, &c)) != DIT_OK)
			return st;
		return pk_push(s, c);
	case 0x81: /* NEWOBJ: cls, args */
		if ((st = pk_pop(s, op, &b)) != DIT_OK || (st = pk_pop(s, op, &a)) != DIT_OK ||
		    (st = pk_newobj(s, a, b, &c)) != DIT_OK)
			return st;
		return pk_push(s, c);
	default:
		return pk_fail(s, DIT_EUNSUPPORTED,
		               "opcode %s (0x%02x) is not allowed in a state dict pickle",
		               pk_opname(op), op);
	}
}

dit_status dit_pickle_load(dit_pickle *p, const uint8_t *data, size_t len, const dit_pickle_opts *o,
                           dit_error *err)
{
	if (!p)
		return dit_error_set(err, DIT_EINVAL, "dit_pickle_load: NULL argument");
	memset(p, 0, sizeof *p);
	if (!o || !o->label || (!data && len > 0))
		return dit_error_set(err, DIT_EINVAL, "dit_pickle_load: NULL argument");
	pk_state s;
	memset(&s, 0, sizeof s);
	s.p = p;
	s.o = o;
	if (o->caps)
		s.caps = *o->caps;
	else
		dit_pickle_caps_default(&s.caps);
	s.d = data;
	s.len = len;
	s.err = err;
	dit_status st = DIT_OK;
	for (int done = 0; st == DIT_OK && !done;) {
		s.at = s.pos;
		if (s.pos >= s.len)
			st = pk_fail(&s, DIT_EFORMAT, "pickle is truncated: it ends before STOP");
		else
			st = pk_step(&s, &done);
	}
	free(s.stack);
	free(s.marks);
	free(s.memo);
	if (st != DIT_OK)
		dit_pickle_free(p);
	return st;
}

void dit_pickle_free(dit_pickle *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nobjs; i++) {
		dit_pk_kind k = (dit_pk_kind)p->objs[i].kind;
		if (k == DIT_PK_TUPLE || k == DIT_PK_LIST || k == DIT_PK_DICT || k == DIT_PK_SET)
			free(p->objs[i].u.items);
	}
	free(p->objs);
	free(p->storages);
	free(p->tensors);
	memset(p, 0, sizeof *p);
}
