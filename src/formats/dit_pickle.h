/* A restricted reader of the pickles torch.save writes (protocol 2, and the opcodes of
 * protocols up to 5 that a state dict uses). Nothing is executed: a pickle becomes a
 * graph of inert values (none, bools, ints, floats, strings, bytes, tuples, lists,
 * dicts, sets), storages and tensors, and only these globals are accepted:
 *
 *   collections.OrderedDict                        called with no arguments
 *   torch._utils._rebuild_tensor_v2 / _v3          called on a storage: a tensor
 *   torch._utils._rebuild_parameter                a tensor as a parameter
 *   torch.Size, builtins.set / frozenset           a tuple, a set
 *   torch.<T>Storage, torch.storage.UntypedStorage in persistent ids only
 *   torch.<dtype> (float32, bfloat16, float8_e4m3fn, ...)  as _rebuild_tensor_v3's dtype
 *
 * Every other global, every call (REDUCE) of anything but the callables above, every
 * BUILD but a dict's, and every opcode not listed in dit_pickle.c is refused with one
 * line naming the pickle, the byte offset, and the opcode or global. A persistent id
 * must be ('storage', <storage class>, key, location, numel) with a key the caller's
 * resolver knows and numel elements filling the member it names; a tensor must be
 * contiguous (row-major strides; dimensions of size 1 may have any stride) and lie
 * within its storage. Memory and time are bounded by the caps below; nothing recurses,
 * so self-referencing lists and dicts are harmless values. */
#ifndef DIT_PICKLE_H
#define DIT_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "dit_error.h"

#define DIT_PK_MAX_DIMS 8 /* as DIT_MAX_DIMS of the safetensors reader */

typedef enum dit_pk_kind {
	DIT_PK_NONE = 0,
	DIT_PK_BOOL,
	DIT_PK_INT,
	DIT_PK_FLOAT,
	DIT_PK_STR,
	DIT_PK_BYTES,
	DIT_PK_TUPLE,
	DIT_PK_LIST,
	DIT_PK_DICT,
	DIT_PK_SET,
	DIT_PK_GLOBAL,
	DIT_PK_STORAGE,
	DIT_PK_TENSOR,
	DIT_PK_BYTESIO, /* an io.BytesIO (TransformerEngine's _extra_state): never read */
} dit_pk_kind;

/* Element types of storages and tensors, as torch names them. */
typedef enum dit_pk_dtype {
	DIT_PKD_UNTYPED = 0, /* bytes: an UntypedStorage */
	DIT_PKD_F32,
	DIT_PKD_F16,
	DIT_PKD_BF16,
	DIT_PKD_F64,
	DIT_PKD_I64,
	DIT_PKD_I32,
	DIT_PKD_I16,
	DIT_PKD_I8,
	DIT_PKD_U8,
	DIT_PKD_BOOL,
	DIT_PKD_F8_E4M3,
	DIT_PKD_F8_E5M2,
} dit_pk_dtype;

/* The accepted globals. */
typedef enum dit_pk_global {
	DIT_PKG_ORDERED_DICT = 0,
	DIT_PKG_REBUILD_V2,
	DIT_PKG_REBUILD_V3,
	DIT_PKG_REBUILD_PARAM,
	DIT_PKG_SIZE,
	DIT_PKG_SET,
	DIT_PKG_FROZENSET,
	DIT_PKG_STORAGE, /* a storage class: dtype says which */
	DIT_PKG_DTYPE,   /* a dtype: dtype says which */
	DIT_PKG_BYTESIO, /* io.BytesIO, made by NEWOBJ with no arguments (its BUILD ignored) */
	DIT_PKG_CODECS_ENCODE, /* _codecs.encode(str, 'latin1'): protocol 2's bytes */
} dit_pk_global;

typedef struct dit_pk_obj {
	uint8_t kind;   /* dit_pk_kind */
	uint8_t global; /* DIT_PK_GLOBAL: dit_pk_global */
	uint8_t dtype;  /* DIT_PK_GLOBAL of a storage class or a dtype: dit_pk_dtype */
	uint32_t n;     /* items of a container (a dict: key, value, key, ...); bytes of a string */
	uint32_t cap;
	union {
		int64_t i;       /* BOOL, INT */
		double f;        /* FLOAT */
		const char *s;   /* STR (UTF-8 as stored), BYTES: into the pickle's bytes */
		uint32_t *items; /* TUPLE, LIST, DICT, SET: object indices */
		uint32_t ref;    /* STORAGE, TENSOR: index in storages, tensors */
	} u;
} dit_pk_obj;

typedef struct dit_pk_storage {
	const char *key; /* into the pickle's bytes */
	uint32_t keylen;
	dit_pk_dtype dtype;
	uint64_t nbytes;
	uint64_t id; /* what the resolver returned for the key */
} dit_pk_storage;

typedef struct dit_pk_tensor {
	uint32_t storage; /* index in storages */
	dit_pk_dtype dtype;
	int ndim;
	int64_t shape[DIT_PK_MAX_DIMS];
	int64_t numel;
	uint64_t offset; /* bytes from the start of the storage */
	uint64_t nbytes;
} dit_pk_tensor;

/* Caps: each bounds what one pickle may make the reader allocate. */
typedef struct dit_pickle_caps {
	size_t objects;  /* values made */
	size_t items;    /* container items, all containers together */
	size_t memo;     /* highest memo index + 1 */
	size_t stack;    /* values on the stack */
	size_t marks;    /* MARKs open at once */
	size_t storages; /* persistent ids */
	size_t tensors;  /* tensors rebuilt */
	size_t str_len;  /* bytes of one string */
} dit_pickle_caps;

#define DIT_PICKLE_MAX_OBJECTS  ((size_t)1 << 21)
#define DIT_PICKLE_MAX_ITEMS    ((size_t)1 << 22)
#define DIT_PICKLE_MAX_MEMO     ((size_t)1 << 20)
#define DIT_PICKLE_MAX_STACK    ((size_t)1 << 20)
#define DIT_PICKLE_MAX_MARKS    ((size_t)256)
#define DIT_PICKLE_MAX_STORAGES ((size_t)1 << 18)
#define DIT_PICKLE_MAX_TENSORS  ((size_t)1 << 18)
#define DIT_PICKLE_MAX_STR      ((size_t)1 << 20)

void dit_pickle_caps_default(dit_pickle_caps *c);

/* Finds a storage's data: 0 with *id and *nbytes (the member's size) set when key
 * (len bytes, no NUL) names one, else -1. */
typedef int (*dit_pk_resolve_fn)(void *ud, const char *key, size_t len, uint64_t *id,
                                 uint64_t *nbytes);

typedef struct dit_pickle_opts {
	const char *label;           /* names the pickle in messages */
	const dit_pickle_caps *caps; /* NULL: the defaults */
	dit_pk_resolve_fn resolve;   /* NULL: every persistent id is refused */
	void *ud;
	const char *data_dir; /* where storages' members are, for messages ("archive/data/") */
} dit_pickle_opts;

typedef struct dit_pickle {
	dit_pk_obj *objs;
	size_t nobjs, cap_objs;
	dit_pk_storage *storages;
	size_t nstorages, cap_storages;
	dit_pk_tensor *tensors;
	size_t ntensors, cap_tensors;
	uint32_t root; /* the value STOP returned */
} dit_pickle;

/* Reads the pickle of len bytes at data into *p (which owns what it made; strings
 * point into data, which the caller keeps until dit_pickle_free). On failure *p is
 * empty and err names o->label, the byte offset and the reason. */
dit_status dit_pickle_load(dit_pickle *p, const uint8_t *data, size_t len, const dit_pickle_opts *o,
                           dit_error *err);
void dit_pickle_free(dit_pickle *p);

/* The value with index i. */
static inline const dit_pk_obj *dit_pickle_obj(const dit_pickle *p, uint32_t i)
{
	return &p->objs[i];
}

/* How many entries of dict d have the string key (len bytes); *val receives the last
 * one's value (Python's rule for a repeated key). */
size_t dit_pickle_dict_find(const dit_pickle *p, const dit_pk_obj *d, const char *key, size_t len,
                            uint32_t *val);

/* "a dict", "a tensor", ...: what a value is, for messages. */
const char *dit_pk_kind_name(dit_pk_kind k);
/* "torch.float32", ...; "bytes" for UNTYPED. */
const char *dit_pk_dtype_name(dit_pk_dtype d);
/* Bytes per element (1 for UNTYPED). */
size_t dit_pk_dtype_size(dit_pk_dtype d);

#endif
