/* Weight transfers as tasks, following the planner's decisions (dit_xfer.h):
 * for each use of a chunk, a task-less task that starts an asynchronous prefetch of
 * the chunk to the compute node once the use prefetch + 1 earlier has ended (task
 * tags give the order), then the "xfer" task that reads the chunk on the compute node
 * right before the chunk's compute, which waits for it. The prefetch first evicts the
 * streamed chunk whose use it waited for. */
#include <stdlib.h>

#include "dit_codelets.h"
#include "dit_graph.h"
#include "dit_xfer.h"

typedef struct prefetch_req {
	starpu_data_handle_t h;
	unsigned node;
	starpu_data_handle_t evict; /* the streamed chunk whose use has ended, or NULL */
	int evict_ram;              /* and its host RAM copy too (disk mode, a device) */
} prefetch_req;

/* A resident chunk is pinned on the compute node once its first transfer is done: an
 * acquisition (read-only, so its tasks still run) that StarPU's eviction respects,
 * released by dit_place_release. */
typedef struct pin_req {
	starpu_data_handle_t h;
	int node;             /* the compute node, or host RAM (a chunk kept there) */
	unsigned char *state; /* the pool's resident[k] or ram[k] */
	void (*done)(void *);
	void *done_arg;
} pin_req;

static void pin_acquired(void *arg)
{
	pin_req *r = arg;
	__atomic_store_n(r->state, DIT_CHUNK_PINNED, __ATOMIC_RELEASE);
	free(r);
}

static void xfer_done_pin(void *arg)
{
	pin_req *r = arg;
	if (r->done)
		r->done(r->done_arg);
	if (starpu_data_acquire_on_node_cb(r->h, r->node, STARPU_R, pin_acquired, r) != 0) {
		__atomic_store_n(r->state, DIT_CHUNK_RESIDENT, __ATOMIC_RELEASE);
		free(r);
	}
}

/* The eviction comes first, in the same callback: given by another task ending on the
 * same tags (or as starpu_data_wont_use, asynchronous) it could follow the prefetch,
 * which then found the node full and StarPU evicted the chunk prefetched last, not
 * yet used, and read it again (perf/results/bench-auto.md: c2 p2 read each chunk
 * twice a step). If the copy cannot go now (a reader still holds it), it is marked
 * to go first. */
static void prefetch_now(void *arg)
{
	prefetch_req *r = arg;
	if (r->evict &&
	    (r->node != STARPU_MAIN_RAM || starpu_data_evict_from_node(r->evict, r->node) != 0))
		starpu_data_wont_use(r->evict);
	if (r->evict && r->evict_ram)
		(void)starpu_data_evict_from_node(r->evict, STARPU_MAIN_RAM);
	starpu_data_prefetch_on_node(r->h, r->node, 1);
	free(r);
}

/* Declares that tag id waits for tags deps[0..n). */
static void tag_after(uint64_t id, int n, const uint64_t *deps)
{
	starpu_tag_t t[DIT_XFER_MAX_PASSES + 1];
	for (int i = 0; i < n; i++)
		t[i] = deps[i];
	if (n > 0)
		starpu_tag_declare_deps_array(id, (unsigned)n, t);
}

uint64_t dit_xfer_tag(const dit_xfer *x, long use, int kind)
{
	return x->tag_base + DIT_TAGS_PER_USE * (uint64_t)use + (uint64_t)kind;
}

uint64_t dit_xfer_end_tag(const dit_xfer *x, int pass)
{
	return dit_xfer_tag(x, x->uses, DIT_TAG_END + pass);
}

uint64_t dit_xfer_first_tag(const dit_xfer *x, int pass)
{
	return dit_xfer_tag(x, x->uses, DIT_TAG_FIRST + pass);
}

int dit_xfer_pool_of(const dit_xfer *x, const void *id)
{
	for (int p = 0; p < x->npools; p++)
		if (x->pool[p].id == id)
			return p;
	return 0;
}

int dit_xfer_evicts(const dit_xfer *x, int pool, int64_t k)
{
	const unsigned char *r = x->pool[pool].resident;
	return x->streams && !(r && r[k] != DIT_CHUNK_STREAMED);
}

void dit_xfer_forget(dit_xfer *x)
{
	for (long u = 0; u < x->uses; u++)
		for (int i = 0; i < DIT_TAGS_PER_USE; i++)
			starpu_tag_remove(dit_xfer_tag(x, u, i));
	x->uses = x->fetches = 0;
}

/* Whether chunk k of pool is fetched for this use: a streamed chunk each time; one that
 * stays once, the first time (or never when the host computes where it is). */
static int needs_fetch(dit_xfer *x, int pool, int64_t k)
{
	if (dit_xfer_evicts(x, pool, k))
		return 1;
	dit_xfer_pool *xp = &x->pool[pool];
	if (!x->fetch_once || xp->fetched[k])
		return 0;
	xp->fetched[k] = 1;
	return 1;
}

/* The use whose last tasks must end before this fetch's prefetch starts (-1: at once):
 * that of the fetch prefetch + 1 fetches earlier, which bounds the chunks in flight to
 * prefetch + 1; *evict_pool and *evict_chunk name that use's chunk when it streams,
 * which this prefetch evicts first (-1: none). Called once per fetch. */
static long prefetch_after(dit_xfer *x, long use, int pool, int64_t k, int *evict_pool,
                           int64_t *evict_chunk)
{
	long f = x->fetches, before = f - x->prefetch - 1;
	int evicts = dit_xfer_evicts(x, pool, k);
	x->fetch_use[f % DIT_XFER_RING] = use;
	x->fetch_pool[f % DIT_XFER_RING] = evicts ? pool : -1;
	x->fetch_chunk[f % DIT_XFER_RING] = k;
	*evict_pool = -1;
	*evict_chunk = -1;
	if (!x->streams || before < 0)
		return -1;
	int ep = x->fetch_pool[before % DIT_XFER_RING];
	int64_t ek = x->fetch_chunk[before % DIT_XFER_RING];
	/* a chunk fetched again since (a model of fewer chunks than are in flight) stays */
	for (long i = before + 1; i <= f && ep >= 0; i++)
		if (x->fetch_pool[i % DIT_XFER_RING] == ep &&
		    x->fetch_chunk[i % DIT_XFER_RING] == ek)
			ep = -1;
	*evict_pool = ep;
	*evict_chunk = ep >= 0 ? ek : -1;
	return x->fetch_use[before % DIT_XFER_RING];
}

/* The copy: an asynchronous prefetch of chunk k of pool to the compute node, issued
 * once the use prefetch + 1 places earlier has finished (what bounds the chunks in
 * flight), after evicting that use's chunk when it streams. */
static dit_status submit_prefetch(dit_xfer *x, int pool, int64_t k, long u, int np, dit_error *err)
{
	uint64_t deps[DIT_XFER_MAX_PASSES + 1];
	int ep;
	int64_t ek;
	long before = prefetch_after(x, u, pool, k, &ep, &ek);
	int n = 0;
	if (before >= 0)
		for (int p = 0; p < np; p++)
			deps[n++] = dit_xfer_tag(x, before, DIT_TAG_END + p);
	prefetch_req *r = malloc(sizeof *r);
	struct starpu_task *t = starpu_task_create();
	if (!r || !t) {
		free(r);
		return dit_error_set(err, DIT_ENOMEM, "out of memory submitting a transfer");
	}
	/* with a device in disk mode a chunk host RAM does not keep leaves RAM too */
	int ram = ep >= 0 && x->evict_ram &&
	          !(x->pool[ep].ram && x->pool[ep].ram[ek] != DIT_CHUNK_STREAMED);
	*r = (prefetch_req){x->pool[pool].h[k], (unsigned)x->compute_node,
	                    ep >= 0 ? x->pool[ep].h[ek] : NULL, ram};
	t->cl = NULL;
	t->use_tag = 1;
	t->tag_id = dit_xfer_tag(x, u, DIT_TAG_PREFETCH);
	t->callback_func = prefetch_now;
	t->callback_arg = r;
	tag_after(t->tag_id, n, deps);
	if (starpu_task_submit(t) != 0) {
		free(r);
		return dit_error_set(err, DIT_ERUNTIME, "StarPU refused a prefetch task");
	}
	return DIT_OK;
}

/* A chunk kept on the compute node, or kept in host RAM on its way to a device, is
 * pinned there once its transfer (task options o) is done: o's callback becomes the pin
 * request's. Returns the chunk's state to restore if no task runs (NULL: nothing to
 * pin), or sets *oom. */
static unsigned char *xfer_pin(dit_xfer *x, int pool, int64_t k, dit_task_opts *o, int *oom)
{
	dit_xfer_pool *xp = &x->pool[pool];
	unsigned char *state = NULL;
	int node = x->compute_node;
	if (xp->resident && xp->resident[k] == DIT_CHUNK_RESIDENT) {
		state = &xp->resident[k];
	} else if (xp->ram && xp->ram[k] == DIT_CHUNK_RESIDENT) {
		state = &xp->ram[k];
		node = STARPU_MAIN_RAM;
	}
	if (!state)
		return NULL;
	pin_req *pr = malloc(sizeof *pr);
	if (!pr) {
		*oom = 1;
		return NULL;
	}
	*pr = (pin_req){xp->h[k], node, state, o->done, o->done_arg};
	*state = DIT_CHUNK_PIN_ASKED;
	o->done = xfer_done_pin;
	o->done_arg = pr;
	return state;
}

dit_status dit_xfer_fetch(dit_graph *g, int pool, int64_t k, uint64_t *gate, dit_error *err)
{
	dit_xfer *x = g->xfer;
	dit_xfer_pool *xp = &x->pool[pool];
	long u = x->uses;
	int np = g->pass_major ? 1 : g->npasses; /* the passes of one chunk use */
	*gate = 0;
	if (!needs_fetch(x, pool, k))
		return DIT_OK;
	dit_status st = submit_prefetch(x, pool, k, u, np, err);
	if (st)
		return st;

	/* The transfer task, just ahead of the chunk's compute: it runs once the
	 * previous chunk is done, so it does not hold a compute worker while the copy
	 * is in flight; if the copy is late it waits for it, which is the transfer time
	 * not hidden (the stats' stall). The chunk's first tasks wait for it. */
	uint64_t deps[DIT_XFER_MAX_PASSES + 1];
	int n = 0;
	deps[n++] = dit_xfer_tag(x, u, DIT_TAG_PREFETCH);
	if (u > 0)
		for (int p = 0; p < np; p++)
			deps[n++] = dit_xfer_tag(x, u - 1, DIT_TAG_END + p);
	uint64_t xt = dit_xfer_tag(x, u, DIT_TAG_XFER);
	tag_after(xt, n, deps);
	starpu_data_handle_t h[] = {xp->h[k]};
	enum starpu_data_access_mode md[] = {STARPU_R};
	dit_fp fp = {{(int64_t)xp->chunk_bytes, 0, 0, 0}};
	dit_task_opts o = {.tag = xt,
	                   .priority = STARPU_MAX_PRIO,
	                   .where = x->where,
	                   .done = x->on_xfer,
	                   .done_arg = x->on_xfer_arg};
	int oom = 0;
	unsigned char *state = xfer_pin(x, pool, k, &o, &oom);
	if (oom)
		return dit_error_set(err, DIT_ENOMEM, "out of memory submitting a transfer");
	x->fetches++;
	xp->fetch_bytes += (int64_t)xp->chunk_bytes;
	*gate = xt;
	st = dit_graph_insert(g, &dit_cl_xfer, xp->names[k], &fp, sizeof fp, 0, 1, h, md, &o, err);
	if (st && state) { /* no task: no pin to wait for at the end */
		*state = DIT_CHUNK_RESIDENT;
		free(o.done_arg);
	}
	return st;
}

/* Streamed chunks are evicted by the prefetch prefetch + 1 fetches later
 * (prefetch_now). */
dit_status dit_xfer_done(dit_graph *g, int pool, int64_t k, dit_error *err)
{
	(void)pool;
	(void)k;
	(void)err;
	g->xfer->uses++;
	return DIT_OK;
}
