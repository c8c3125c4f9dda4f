/* What the cuDNN files share: the functions taken from the loaded library, the plan
 * cache, and the object a worker owns (dit_cudnn.h). */
#ifndef DIT_CUDNN_PRIV_H
#define DIT_CUDNN_PRIV_H

#include <cudnn.h>

#include "dit_cudnn.h"

/* The entry points used, resolved with dlsym (same names and types as cudnn_graph.h). */
typedef struct dit_cudnn_fns {
	size_t (*GetVersion)(void);
	const char *(*GetErrorString)(cudnnStatus_t);
	cudnnStatus_t (*Create)(cudnnHandle_t *);
	cudnnStatus_t (*Destroy)(cudnnHandle_t);
	cudnnStatus_t (*SetStream)(cudnnHandle_t, cudaStream_t);
	cudnnStatus_t (*BackendCreateDescriptor)(cudnnBackendDescriptorType_t,
	                                         cudnnBackendDescriptor_t *);
	cudnnStatus_t (*BackendDestroyDescriptor)(cudnnBackendDescriptor_t);
	cudnnStatus_t (*BackendFinalize)(cudnnBackendDescriptor_t);
	cudnnStatus_t (*BackendSetAttribute)(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t,
	                                     cudnnBackendAttributeType_t, int64_t, const void *);
	cudnnStatus_t (*BackendGetAttribute)(cudnnBackendDescriptor_t const,
	                                     cudnnBackendAttributeName_t,
	                                     cudnnBackendAttributeType_t, int64_t, int64_t *,
	                                     void *);
	cudnnStatus_t (*BackendExecute)(cudnnHandle_t, cudnnBackendDescriptor_t,
	                                cudnnBackendDescriptor_t);
} dit_cudnn_fns;

#define DIT_SDPA_MAX_DESCS 64 /* descriptors of one plan (tensors, ops, graph, plan) */
#define DIT_SDPA_CACHE     32 /* shapes remembered per worker */

/* One shape's plan, or its refusal. */
typedef struct dit_sdpa_plan {
	int used;
	dit_sdpa_shape sh; /* the key (addr: its alignment class only) */
	uint32_t scale_bits;
	const char *refused; /* non-NULL: cuDNN would not take it */
	cudnnBackendDescriptor_t plan;
	int64_t ws_bytes;
	int ndesc;
	cudnnBackendDescriptor_t desc[DIT_SDPA_MAX_DESCS]; /* everything the plan was made of */
	uint64_t last_use;
} dit_sdpa_plan;

struct dit_cudnn {
	void *so;
	dit_cudnn_fns f;
	long version;
	cudnnHandle_t handle; /* NULL when opened without one */
	cudaStream_t stream;  /* the stream the handle is bound to now */
	void *ws;             /* workspace, ws_bytes on the device */
	size_t ws_bytes;
	uint64_t clock;
	dit_sdpa_plan cache[DIT_SDPA_CACHE];
};

/* DIT_CUDNN_ERR_BASE + st, with "what: cuDNN's message" in why[cap] (why may be NULL). */
int dit_cudnn_fail(const dit_cudnn *c, cudnnStatus_t st, const char *what, char *why, size_t cap);

/* Destroys the descriptors of p and empties it. */
void dit_sdpa_plan_clear(dit_cudnn *c, dit_sdpa_plan *p);

#endif
