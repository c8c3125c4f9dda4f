/* Scaled-dot-product attention through cuDNN's graph API (see dit_cudnn.h): the graph
 * that cuDNN's fused flash-attention engine recognises, built from backend descriptors,
 *
 *   S  = Q . K^T            matmul, fp32     Q [1, H, lq, hd], K^T [1, H, hd, lk] (bf16)
 *   S' = S * scale          pointwise MUL by a scalar passed by value
 *   M  = max_j S'           reduction        [1, H, lq, 1]
 *   E  = exp(S' - M)        pointwise SUB, EXP
 *   Z  = sum_j E            reduction
 *   (log Z + M: the softmax statistics, virtual: the inference form)
 *   P  = E / Z              pointwise DIV, stored bf16 (virtual)
 *   O  = P . V              matmul           V [1, H, lk, hd], O [1, H, lq, hd] (bf16)
 *
 * over the codelet's row-major buffers as they are (a head is hd columns, a token a row
 * ld elements long: strides {_, hd, ld, 1}; K^T is K's view with the last two strides
 * swapped). The plan of each shape is built once (the heuristics' first engine config
 * that finalizes) and kept in the worker's cache. */
#include "cudnn_priv.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

enum { UID_Q = 1, UID_K, UID_V, UID_O, UID_SCALE, UID_VIRTUAL = 100 };
#define DIT_SDPA_MAX_CFGS 8

/* ------------------------------------------------------------------ refusals */

const char *dit_cudnn_sdpa_refusal(long version, const dit_sdpa_shape *sh)
{
	if (!sh->q_bf16 || !sh->kv_bf16 || !sh->o_bf16)
		return "fp32 activations (cuDNN's fused attention takes bf16)";
	if (sh->lk <= 0 || sh->lq <= 0 || sh->heads <= 0 || sh->hd <= 0)
		return "no queries, keys or heads";
	if (sh->lq == 1 && sh->lk == 1)
		return "one query and one key";
	if (sh->hd % 8 != 0 || sh->hd > 256)
		return "head_dim not a multiple of 8, or above 256";
	if (sh->ldq % 8 || sh->ldk % 8 || sh->ldv % 8 || sh->ldo % 8)
		return "row strides not multiples of 8 elements";
	if (sh->addr % 16 != 0)
		return "buffers not 16-byte aligned";
	if (sh->lq > INT32_MAX || sh->lk > INT32_MAX)
		return "more than 2^31 rows";
	if (version <= 91500 && sh->lk % 128 != 0)
		return "keys not a multiple of 128 (cuDNN 9.15 and earlier need a padding mask)";
	return NULL;
}

/* ------------------------------------------------------------------ graph builder */

/* Builds descriptors into a plan's list, stopping at the first failure (st, step). */
typedef struct gb {
	dit_cudnn *c;
	dit_sdpa_plan *p;
	cudnnStatus_t st;
	const char *step;
	int64_t next_uid;
} gb;

static cudnnBackendDescriptor_t gb_new(gb *g, cudnnBackendDescriptorType_t t, const char *step)
{
	if (g->st)
		return NULL;
	if (g->p->ndesc >= DIT_SDPA_MAX_DESCS) {
		g->st = CUDNN_STATUS_INTERNAL_ERROR;
		g->step = "too many descriptors";
		return NULL;
	}
	cudnnBackendDescriptor_t d = NULL;
	g->st = g->c->f.BackendCreateDescriptor(t, &d);
	if (g->st) {
		g->step = step;
		return NULL;
	}
	g->p->desc[g->p->ndesc++] = d;
	return d;
}

static void gb_set(gb *g, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a,
                   cudnnBackendAttributeType_t t, int64_t n, const void *v, const char *step)
{
	if (g->st)
		return;
	g->st = g->c->f.BackendSetAttribute(d, a, t, n, v);
	if (g->st)
		g->step = step;
}

static void gb_fin(gb *g, cudnnBackendDescriptor_t d, const char *step)
{
	if (g->st)
		return;
	g->st = g->c->f.BackendFinalize(d);
	if (g->st)
		g->step = step;
}

/* A tensor: uid 0 gives the next virtual id. */
static cudnnBackendDescriptor_t gb_tensor(gb *g, int64_t uid, cudnnDataType_t dt,
                                          const int64_t dim[4], const int64_t str[4], bool virt,
                                          bool by_value)
{
	cudnnBackendDescriptor_t d = gb_new(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor");
	int64_t id = uid ? uid : g->next_uid++, align = 16;
	gb_set(g, d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id, "tensor id");
	gb_set(g, d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "tensor type");
	gb_set(g, d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim, "tensor dims");
	gb_set(g, d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, str, "tensor strides");
	gb_set(g, d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "alignment");
	gb_set(g, d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt, "virtual");
	gb_set(g, d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value, "by value");
	gb_fin(g, d, "tensor");
	return d;
}

/* An operation of type t whose attributes a[i] are the descriptors d[i] (a NULL d[i]
 * is left unset), finalized. */
static cudnnBackendDescriptor_t gb_op(gb *g, cudnnBackendDescriptorType_t t, int n,
                                      const cudnnBackendAttributeName_t *a,
                                      const cudnnBackendDescriptor_t *d, const char *step)
{
	cudnnBackendDescriptor_t op = gb_new(g, t, step);
	for (int i = 0; i < n; i++)
		if (d[i])
			gb_set(g, op, a[i], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d[i], step);
	gb_fin(g, op, step);
	return op;
}

/* A descriptor of type t with one enum-valued attribute (ta: its type) and an fp32
 * precision attribute pa (0, which is no precision attribute: none), finalized. */
static cudnnBackendDescriptor_t gb_desc(gb *g, cudnnBackendDescriptorType_t t,
                                        cudnnBackendAttributeName_t a,
                                        cudnnBackendAttributeType_t ta, const void *v,
                                        cudnnBackendAttributeName_t pa, const char *step)
{
	cudnnDataType_t prec = CUDNN_DATA_FLOAT;
	cudnnBackendDescriptor_t d = gb_new(g, t, step);
	gb_set(g, d, a, ta, 1, v, step);
	if (pa)
		gb_set(g, d, pa, CUDNN_TYPE_DATA_TYPE, 1, &prec, step);
	gb_fin(g, d, step);
	return d;
}

/* y = mode(x[, b]) in fp32. */
static cudnnBackendDescriptor_t gb_pointwise(gb *g, cudnnPointwiseMode_t mode,
                                             cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                                             cudnnBackendDescriptor_t y)
{
	cudnnBackendDescriptor_t pw =
	    gb_desc(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, CUDNN_ATTR_POINTWISE_MODE,
	            CUDNN_TYPE_POINTWISE_MODE, &mode, CUDNN_ATTR_POINTWISE_MATH_PREC, "pointwise");
	const cudnnBackendAttributeName_t a[] = {
	    CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
	    CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_ATTR_OPERATION_POINTWISE_YDESC};
	const cudnnBackendDescriptor_t d[] = {pw, x, b, y};
	return gb_op(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, 4, a, d, "pointwise op");
}

/* y = reduce(x) over the dimensions where y has extent 1, in fp32. */
static cudnnBackendDescriptor_t gb_reduce(gb *g, cudnnReduceTensorOp_t how,
                                          cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y)
{
	cudnnBackendDescriptor_t rd = gb_desc(
	    g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, CUDNN_ATTR_REDUCTION_OPERATOR,
	    CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &how, CUDNN_ATTR_REDUCTION_COMP_TYPE, "reduction");
	const cudnnBackendAttributeName_t a[] = {CUDNN_ATTR_OPERATION_REDUCTION_DESC,
	                                         CUDNN_ATTR_OPERATION_REDUCTION_XDESC,
	                                         CUDNN_ATTR_OPERATION_REDUCTION_YDESC};
	const cudnnBackendDescriptor_t d[] = {rd, x, y};
	return gb_op(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, 3, a, d, "reduction op");
}

/* c = a . b (batched over the first two dimensions), fp32 accumulation. */
static cudnnBackendDescriptor_t gb_matmul(gb *g, cudnnBackendDescriptor_t a,
                                          cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c)
{
	cudnnDataType_t prec = CUDNN_DATA_FLOAT;
	cudnnBackendDescriptor_t mm =
	    gb_desc(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR, CUDNN_ATTR_MATMUL_COMP_TYPE,
	            CUDNN_TYPE_DATA_TYPE, &prec, 0, "matmul");
	const cudnnBackendAttributeName_t at[] = {
	    CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_ATTR_OPERATION_MATMUL_BDESC,
	    CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_ATTR_OPERATION_MATMUL_DESC};
	const cudnnBackendDescriptor_t d[] = {a, b, c, mm};
	return gb_op(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, 4, at, d, "matmul op");
}

/* The graph's ten operations into ops[], in data-flow order. */
static void sdpa_ops(gb *g, const dit_sdpa_shape *sh, cudnnBackendDescriptor_t ops[10])
{
	const int64_t H = sh->heads, lq = sh->lq, lk = sh->lk, hd = sh->hd;
	const cudnnDataType_t bf = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;
	const int64_t qd[4] = {1, H, lq, hd}, qs[4] = {lq * sh->ldq, hd, sh->ldq, 1};
	const int64_t kd[4] = {1, H, hd, lk}, ks[4] = {lk * sh->ldk, hd, 1, sh->ldk};
	const int64_t vd[4] = {1, H, lk, hd}, vs[4] = {lk * sh->ldv, hd, sh->ldv, 1};
	const int64_t od[4] = {1, H, lq, hd}, os[4] = {lq * sh->ldo, hd, sh->ldo, 1};
	const int64_t sd[4] = {1, H, lq, lk}, ss[4] = {H * lq * lk, lq * lk, lk, 1};
	const int64_t rd[4] = {1, H, lq, 1}, rs[4] = {H * lq, lq, 1, 1};
	const int64_t one[4] = {1, 1, 1, 1};

	cudnnBackendDescriptor_t q = gb_tensor(g, UID_Q, bf, qd, qs, false, false);
	cudnnBackendDescriptor_t kt = gb_tensor(g, UID_K, bf, kd, ks, false, false);
	cudnnBackendDescriptor_t v = gb_tensor(g, UID_V, bf, vd, vs, false, false);
	cudnnBackendDescriptor_t o = gb_tensor(g, UID_O, bf, od, os, false, false);
	cudnnBackendDescriptor_t scale = gb_tensor(g, UID_SCALE, f32, one, one, false, true);
	cudnnBackendDescriptor_t s = gb_tensor(g, 0, f32, sd, ss, true, false);
	cudnnBackendDescriptor_t s2 = gb_tensor(g, 0, f32, sd, ss, true, false);
	cudnnBackendDescriptor_t m = gb_tensor(g, 0, f32, rd, rs, true, false);
	cudnnBackendDescriptor_t d = gb_tensor(g, 0, f32, sd, ss, true, false);
	cudnnBackendDescriptor_t e = gb_tensor(g, 0, f32, sd, ss, true, false);
	cudnnBackendDescriptor_t z = gb_tensor(g, 0, f32, rd, rs, true, false);
	cudnnBackendDescriptor_t lz = gb_tensor(g, 0, f32, rd, rs, true, false);
	cudnnBackendDescriptor_t stats = gb_tensor(g, 0, f32, rd, rs, true, false);
	cudnnBackendDescriptor_t p = gb_tensor(g, 0, bf, sd, ss, true, false);

	ops[0] = gb_matmul(g, q, kt, s);
	ops[1] = gb_pointwise(g, CUDNN_POINTWISE_MUL, s, scale, s2);
	ops[2] = gb_reduce(g, CUDNN_REDUCE_TENSOR_MAX, s2, m);
	ops[3] = gb_pointwise(g, CUDNN_POINTWISE_SUB, s2, m, d);
	ops[4] = gb_pointwise(g, CUDNN_POINTWISE_EXP, d, NULL, e);
	ops[5] = gb_reduce(g, CUDNN_REDUCE_TENSOR_ADD, e, z);
	ops[6] = gb_pointwise(g, CUDNN_POINTWISE_LOG, z, NULL, lz);
	ops[7] = gb_pointwise(g, CUDNN_POINTWISE_ADD, m, lz, stats);
	ops[8] = gb_pointwise(g, CUDNN_POINTWISE_DIV, e, z, p);
	ops[9] = gb_matmul(g, p, v, o);
}

int dit_cudnn_sdpa_describe(dit_cudnn *c, const dit_sdpa_shape *sh, char *why, size_t cap)
{
	if (sh->lk <= 0 || sh->lq <= 0 || sh->heads <= 0 || sh->hd <= 0) {
		snprintf(why, cap, "empty shape");
		return DIT_CUDNN_ERR_BASE + (int)CUDNN_STATUS_BAD_PARAM;
	}
	dit_sdpa_plan p;
	memset(&p, 0, sizeof p);
	gb g = {.c = c, .p = &p, .next_uid = UID_VIRTUAL};
	cudnnBackendDescriptor_t ops[10];
	sdpa_ops(&g, sh, ops);
	int rc = g.st ? dit_cudnn_fail(c, g.st, g.step, why, cap) : 0;
	dit_sdpa_plan_clear(c, &p);
	return rc;
}

/* ------------------------------------------------------------------ plans */

/* The operation graph, the heuristics' engine configs, and the first plan that
 * finalizes, into p (p->plan; p->refused when no engine takes the graph). */
static int sdpa_plan_build(dit_cudnn *c, dit_sdpa_plan *p, char *why, size_t cap)
{
	gb g = {.c = c, .p = p, .next_uid = UID_VIRTUAL};
	cudnnBackendDescriptor_t ops[10];
	sdpa_ops(&g, &p->sh, ops);
	cudnnBackendDescriptor_t graph =
	    gb_new(&g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "graph");
	gb_set(&g, graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &c->handle,
	       "graph handle");
	gb_set(&g, graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 10, ops,
	       "graph ops");
	gb_fin(&g, graph, "operation graph");
	cudnnBackendDescriptor_t heur =
	    gb_new(&g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "heuristics");
	cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
	gb_set(&g, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
	       &graph, "heuristics graph");
	gb_set(&g, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode,
	       "heuristics mode");
	gb_fin(&g, heur, "heuristics");
	if (g.st) /* cuDNN does not take the graph as built: a refusal, not an error */
		goto refused;
	int64_t ncfg = 0;
	g.st = c->f.BackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
	                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &ncfg, NULL);
	if (g.st || ncfg <= 0) {
		g.step = "no engine for the attention graph";
		goto refused;
	}
	if (ncfg > DIT_SDPA_MAX_CFGS)
		ncfg = DIT_SDPA_MAX_CFGS;
	cudnnBackendDescriptor_t cfg[DIT_SDPA_MAX_CFGS];
	for (int64_t i = 0; i < ncfg; i++)
		cfg[i] = gb_new(&g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config");
	int64_t got = 0;
	if (!g.st)
		g.st = c->f.BackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
		                                CUDNN_TYPE_BACKEND_DESCRIPTOR, ncfg, &got, cfg);
	if (g.st)
		goto refused;
	for (int64_t i = 0; i < got && !p->plan; i++) {
		cudnnBackendDescriptor_t plan = NULL;
		if (c->f.BackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan))
			break;
		if (c->f.BackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
		                             CUDNN_TYPE_HANDLE, 1, &c->handle) == 0 &&
		    c->f.BackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
		                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]) == 0 &&
		    c->f.BackendFinalize(plan) == 0 && p->ndesc < DIT_SDPA_MAX_DESCS) {
			p->plan = plan;
			p->desc[p->ndesc++] = plan;
		} else {
			c->f.BackendDestroyDescriptor(plan);
		}
	}
	if (!p->plan) {
		g.step = "no engine config of the attention graph finalizes";
		goto refused;
	}
	int64_t n = 0;
	if (c->f.BackendGetAttribute(p->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
	                             CUDNN_TYPE_INT64, 1, &n, &p->ws_bytes) != 0 ||
	    p->ws_bytes < 0)
		p->ws_bytes = 0;
	if ((size_t)p->ws_bytes > DIT_CUDNN_WS_MAX) {
		g.step = "the attention plan's workspace is above 256 MiB";
		goto refused;
	}
	return 0;
refused:
	if (why && cap)
		snprintf(why, cap, "%s", g.step ? g.step : "refused");
	for (int i = p->ndesc - 1; i >= 0; i--)
		c->f.BackendDestroyDescriptor(p->desc[i]);
	p->ndesc = 0;
	p->plan = NULL;
	p->refused = g.step ? g.step : "refused by cuDNN";
	return DIT_LIB_REFUSED;
}

static int same_shape(const dit_sdpa_shape *a, const dit_sdpa_shape *b)
{
	return a->lq == b->lq && a->lk == b->lk && a->heads == b->heads && a->hd == b->hd &&
	       a->ldq == b->ldq && a->ldk == b->ldk && a->ldv == b->ldv && a->ldo == b->ldo;
}

/* The cache entry of shape sh (built on first use; the least recently used one goes
 * when the cache is full). */
static dit_sdpa_plan *sdpa_plan_get(dit_cudnn *c, const dit_sdpa_shape *sh, uint32_t scale_bits)
{
	dit_sdpa_plan *victim = &c->cache[0];
	c->clock++;
	for (int i = 0; i < DIT_SDPA_CACHE; i++) {
		dit_sdpa_plan *p = &c->cache[i];
		if (p->used && p->scale_bits == scale_bits && same_shape(&p->sh, sh)) {
			p->last_use = c->clock;
			return p;
		}
		if (!p->used || (victim->used && p->last_use < victim->last_use))
			victim = p;
	}
	if (victim->used)
		dit_sdpa_plan_clear(c, victim);
	victim->used = 1;
	victim->sh = *sh;
	victim->sh.addr = 0;
	victim->scale_bits = scale_bits;
	victim->last_use = c->clock;
	sdpa_plan_build(c, victim, NULL, 0);
	return victim;
}

/* Grows the workspace to bytes (the device synchronises: once per larger plan). */
static int ws_reserve(dit_cudnn *c, size_t bytes)
{
	if (bytes <= c->ws_bytes)
		return 0;
	if (c->ws)
		cudaFree(c->ws);
	c->ws = NULL;
	c->ws_bytes = 0;
	cudaError_t e = cudaMalloc(&c->ws, bytes);
	if (e != cudaSuccess) {
		c->ws = NULL;
		return (int)e;
	}
	c->ws_bytes = bytes;
	return 0;
}

int dit_cudnn_sdpa(dit_cudnn *c, cudaStream_t s, void *o, const void *q, const void *k,
                   const void *v, const dit_sdpa_shape *sh, float scale, const char **why)
{
	const char *r = c && c->handle ? dit_cudnn_sdpa_refusal(c->version, sh) : "no cuDNN handle";
	if (r) {
		*why = r;
		return DIT_LIB_REFUSED;
	}
	uint32_t bits;
	memcpy(&bits, &scale, sizeof bits);
	dit_sdpa_plan *p = sdpa_plan_get(c, sh, bits);
	if (p->refused) {
		*why = p->refused;
		return DIT_LIB_REFUSED;
	}
	int rc = ws_reserve(c, (size_t)p->ws_bytes);
	if (rc)
		return rc;
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	if (c->stream != s) {
		st = c->f.SetStream(c->handle, s);
		if (st)
			return dit_cudnn_fail(c, st, "cudnnSetStream", NULL, 0);
		c->stream = s;
	}
	int64_t uids[5] = {UID_Q, UID_K, UID_V, UID_O, UID_SCALE};
	void *ptrs[5] = {(void *)q, (void *)k, (void *)v, o, &scale};
	cudnnBackendDescriptor_t pack = NULL;
	st = c->f.BackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
	if (!st)
		st = c->f.BackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
		                              CUDNN_TYPE_INT64, 5, uids);
	if (!st)
		st = c->f.BackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
		                              CUDNN_TYPE_VOID_PTR, 5, ptrs);
	if (!st)
		st = c->f.BackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
		                              CUDNN_TYPE_VOID_PTR, 1, &c->ws);
	if (!st)
		st = c->f.BackendFinalize(pack);
	if (!st)
		st = c->f.BackendExecute(c->handle, p->plan, pack);
	if (pack)
		c->f.BackendDestroyDescriptor(pack);
	return st ? dit_cudnn_fail(c, st, "cudnnBackendExecute", NULL, 0) : 0;
}
