/* libFuzzer target: bytes read as a state dict pickle by the restricted reader, whose
 * storage keys are sizes (key "16": a data member of 16 bytes); then every value, storage
 * and tensor it made is checked: indices in range, strings inside the input, tensors
 * inside their storage. Small caps keep each input fast. */
#include "dit_pickle.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "fuzz.pkl"

static int resolve(void *ud, const char *key, size_t len, uint64_t *id, uint64_t *nbytes)
{
	uint64_t v = 0;
	(void)ud;
	if (len == 0 || len > 6)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (key[i] < '0' || key[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(key[i] - '0');
	}
	*id = v;
	*nbytes = v;
	return 0;
}

static void check(const dit_pickle *p, const uint8_t *data, size_t size)
{
	if (p->root >= p->nobjs)
		abort();
	for (size_t i = 0; i < p->nobjs; i++) {
		const dit_pk_obj *o = &p->objs[i];
		switch ((dit_pk_kind)o->kind) {
		case DIT_PK_STR:
		case DIT_PK_BYTES:
			if ((const uint8_t *)o->u.s < data || o->n > size ||
			    (const uint8_t *)o->u.s + o->n > data + size)
				abort();
			break;
		case DIT_PK_TUPLE:
		case DIT_PK_LIST:
		case DIT_PK_DICT:
		case DIT_PK_SET:
			if (o->n > o->cap || (o->kind == DIT_PK_DICT && o->n % 2))
				abort();
			for (uint32_t k = 0; k < o->n; k++)
				if (o->u.items[k] >= p->nobjs)
					abort();
			break;
		case DIT_PK_STORAGE:
			if (o->u.ref >= p->nstorages)
				abort();
			break;
		case DIT_PK_TENSOR:
			if (o->u.ref >= p->ntensors)
				abort();
			break;
		default: break;
		}
	}
	for (size_t i = 0; i < p->ntensors; i++) {
		const dit_pk_tensor *t = &p->tensors[i];
		if (t->storage >= p->nstorages || t->ndim < 0 || t->ndim > DIT_PK_MAX_DIMS)
			abort();
		int64_t n = 1;
		for (int d = 0; d < t->ndim; d++)
			n *= t->shape[d];
		const dit_pk_storage *s = &p->storages[t->storage];
		if (n != t->numel || t->nbytes != (uint64_t)n * dit_pk_dtype_size(t->dtype) ||
		    t->offset > s->nbytes || t->nbytes > s->nbytes - t->offset)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dit_pickle_caps caps;
	dit_pickle_caps_default(&caps);
	caps.objects = caps.items = caps.stack = 1 << 16;
	caps.memo = 1 << 12;
	const dit_pickle_opts o = {
	    .label = NAME, .caps = &caps, .resolve = resolve, .data_dir = "archive/data/"};
	dit_pickle p;
	dit_error e;
	dit_error_clear(&e);
	dit_status st = dit_pickle_load(&p, data, size, &o, &e);
	if (st != DIT_OK) {
		if (e.code != st || strncmp(e.msg, NAME ": byte ", strlen(NAME ": byte ")) != 0 ||
		    p.nobjs || p.objs)
			abort();
		return 0;
	}
	check(&p, data, size);
	uint32_t v;
	dit_pickle_dict_find(&p, dit_pickle_obj(&p, p.root), "module", 6, &v);
	dit_pickle_free(&p);
	return 0;
}
