/* cuDNN loaded at run time: dlopen of the library, its entry points by name, its
 * version checked, its handle (see dit_cudnn.h). */
#include "cudnn_priv.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIT_CUDNN_SONAME "libcudnn.so.9"

int dit_cudnn_fail(const dit_cudnn *c, cudnnStatus_t st, const char *what, char *why, size_t cap)
{
	if (why && cap)
		snprintf(why, cap, "%s: %s", what,
		         c && c->f.GetErrorString ? c->f.GetErrorString(st) : "cuDNN error");
	return DIT_CUDNN_ERR_BASE + (int)st;
}

/* Resolves every entry point; 0, or -1 with the missing name in why. */
static int load_fns(dit_cudnn *c, char *why, size_t cap)
{
	static const struct {
		const char *name;
		size_t off;
	} tab[] = {
#define DIT_FN(n) {"cudnn" #n, offsetof(dit_cudnn_fns, n)}
	    DIT_FN(GetVersion),
	    DIT_FN(GetErrorString),
	    DIT_FN(Create),
	    DIT_FN(Destroy),
	    DIT_FN(SetStream),
	    DIT_FN(BackendCreateDescriptor),
	    DIT_FN(BackendDestroyDescriptor),
	    DIT_FN(BackendFinalize),
	    DIT_FN(BackendSetAttribute),
	    DIT_FN(BackendGetAttribute),
	    DIT_FN(BackendExecute),
#undef DIT_FN
	};
	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
		void *p = dlsym(c->so, tab[i].name);
		if (!p) {
			snprintf(why, cap, "cuDNN library has no %s", tab[i].name);
			return -1;
		}
		memcpy((char *)&c->f + tab[i].off, &p, sizeof p);
	}
	return 0;
}

dit_cudnn *dit_cudnn_open(const char *path, int with_handle, char *why, size_t cap)
{
	const char *name = path && *path ? path : DIT_CUDNN_SONAME;
	dit_cudnn *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(why, cap, "out of memory");
		return NULL;
	}
	c->so = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!c->so) {
		const char *e = dlerror();
		snprintf(why, cap, "cannot load %s: %s", name, e ? e : "not found");
		free(c);
		return NULL;
	}
	if (load_fns(c, why, cap) != 0) {
		dit_cudnn_close(c);
		return NULL;
	}
	c->version = (long)c->f.GetVersion();
	if (c->version < 90000) {
		snprintf(why, cap, "%s is cuDNN %ld.%ld: 9.0 or later needed", name,
		         c->version / 10000, (c->version % 10000) / 100);
		dit_cudnn_close(c);
		return NULL;
	}
	if (with_handle) {
		cudnnStatus_t st = c->f.Create(&c->handle);
		if (st != CUDNN_STATUS_SUCCESS) {
			c->handle = NULL;
			dit_cudnn_fail(c, st, "cudnnCreate", why, cap);
			dit_cudnn_close(c);
			return NULL;
		}
	}
	return c;
}

void dit_sdpa_plan_clear(dit_cudnn *c, dit_sdpa_plan *p)
{
	for (int i = p->ndesc - 1; i >= 0; i--)
		c->f.BackendDestroyDescriptor(p->desc[i]);
	memset(p, 0, sizeof *p);
}

void dit_cudnn_close(dit_cudnn *c)
{
	if (!c)
		return;
	for (int i = 0; i < DIT_SDPA_CACHE; i++)
		if (c->cache[i].used)
			dit_sdpa_plan_clear(c, &c->cache[i]);
	if (c->ws)
		cudaFree(c->ws);
	if (c->handle)
		c->f.Destroy(c->handle);
	/* The library stays loaded (no dlclose): cuDNN keeps process-wide state that it
	 * does not free at unload, and a leak checker can then still name its frames. */
	free(c);
}

long dit_cudnn_version(const dit_cudnn *c)
{
	return c ? c->version : 0;
}
