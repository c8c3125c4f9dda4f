/* Keep what fits (src/plan/dit_fit.c): the spread rule marks exactly r of n chunks, chunk 0
 * first, with no gap between resident chunks wider than ceil(n / r); dit_fit keeps
 * every chunk when the budget holds them, none when it holds only the fixed bytes and
 * the slots, the same fraction of each pool, at most --resident-chunks, and never more
 * bytes than the budget leaves; on a device a mixed plan has one slot more. */
#include <stdio.h>
#include <string.h>

#define DIT_TEST_MAX 64
#define DIT_LINE_MAX 160
#include "dit_planner.h"
#include "dit_tap.h"

static void spread_rule(dit_tap *tap)
{
	int bad = 0;
	for (int64_t n = 1; n <= 48; n++)
		for (int64_t r = 0; r <= n; r++) {
			int64_t count = 0, first = -1, last = -1, gap = 0;
			for (int64_t k = 0; k < n; k++) {
				if (!dit_fit_is_resident(k, r, n))
					continue;
				count++;
				if (last >= 0 && k - last > gap)
					gap = k - last;
				if (first < 0)
					first = k;
				last = k;
			}
			if (count > 0 && n - last + first > gap) /* around to the next step */
				gap = n - last + first;
			int64_t widest = r > 0 ? (n + r - 1) / r : 0;
			if (count != r || (r > 0 && first != 0) || gap > widest)
				bad++;
		}
	dit_tap_add(tap, bad == 0, "spread rule: r of n, chunk 0 first, gaps <= ceil(n/r)", bad, 0);
}

/* An offload of two pools: n0 chunks of c0 floats, n1 of c1. */
static void two_pools(dit_offload *off, dit_pool *p, int64_t n0, int64_t c0, int64_t n1, int64_t c1,
                      int64_t cap)
{
	memset(off, 0, sizeof *off);
	memset(p, 0, 2 * sizeof *p);
	p[0].nchunks = n0, p[0].chunk_size = 1, p[0].block_stride = c0;
	p[1].nchunks = n1, p[1].chunk_size = 1, p[1].block_stride = c1;
	off->pool[0] = &p[0], off->pool[1] = &p[1];
	off->npools = 2;
	off->o.prefetch = 1;
	off->o.resident = cap;
}

static void fits(dit_tap *tap)
{
	dit_offload off;
	dit_pool p[2];
	const size_t f = sizeof(float);
	/* 20 double chunks of 100 floats, 40 single chunks of 50 */
	two_pools(&off, p, 20, 100, 40, 50, -1);
	size_t all = (20 * 100 + 40 * 50) * f, fixed = 1000;
	dit_fit(&off, fixed + all, fixed, 2);
	dit_tap_add(tap, off.nresident[0] == 20 && off.nresident[1] == 40,
	            "a budget holding every chunk keeps every chunk", 0, 0);
	dit_fit(&off, fixed + 2 * 100 * f, fixed, 2);
	dit_tap_add(tap, off.nresident[0] == 0 && off.nresident[1] == 0,
	            "a budget of the fixed bytes and the slots keeps none", 0, 0);
	/* half of what the chunks take, beyond the slots: half of each pool */
	dit_fit(&off, fixed + 2 * 100 * f + all / 2, fixed, 2);
	dit_tap_add(tap, off.nresident[0] == 10 && off.nresident[1] == 20,
	            "half the chunks' bytes: half of each pool", 0, 0);
	/* a third plus one single chunk left over: the leftover in pool order */
	dit_fit(&off, fixed + 2 * 100 * f + all / 4 + 60 * f, fixed, 2);
	size_t kept = dit_fit_resident_bytes(&off);
	dit_tap_add(
	    tap, off.nresident[0] == 5 && off.nresident[1] == 11 && kept <= all / 4 + 60 * f,
	    "a quarter and 60 floats: 5 and 10 + 1 leftover chunk, within the budget", 0, 0);
	two_pools(&off, p, 20, 100, 40, 50, 7);
	dit_fit(&off, fixed + all, fixed, 2);
	dit_tap_add(tap, off.nresident[0] + off.nresident[1] == 7,
	            "--resident-chunks 7 caps what fits", 0, 0);
	two_pools(&off, p, 20, 100, 40, 50, 0);
	dit_fit(&off, fixed + all, fixed, 2);
	dit_tap_add(tap, off.nresident[0] == 0 && off.nresident[1] == 0,
	            "--resident-chunks 0 keeps none", 0, 0);
	/* on a device a mixed plan needs one slot more than a streamed-only one */
	two_pools(&off, p, 20, 100, 40, 50, -1);
	off.device = DIT_DEVICE_OPENCL;
	dit_fit(&off, fixed + 2 * 100 * f + all / 2, fixed, 2);
	int short_one = off.nresident[0] + off.nresident[1];
	dit_fit(&off, fixed + 3 * 100 * f + all / 2, fixed, 2);
	dit_tap_add(tap,
	            short_one < 30 && off.nresident[0] == 10 && off.nresident[1] == 20 &&
	                dit_fit_slot_bytes(&off, 2) == 3 * 100 * f,
	            "device: half the chunks' bytes beside 3 slots keeps half of each pool",
	            short_one, 30);
	off.nresident[0] = off.nresident[1] = 0;
	dit_tap_add(tap, dit_fit_slot_bytes(&off, 2) == 2 * 100 * f,
	            "device: a streamed-only plan's slots are the prefetch + 1", 0, 0);
	dit_fit_all(&off);
	dit_tap_add(tap, dit_fit_slot_bytes(&off, 2) == 0, "device: nothing streams, no slots", 0,
	            0);
	dit_tap_add(tap, dit_fit_margin(1000u << 20) == (50u << 20) + (256u << 20),
	            "margin: 5% and 256 MiB", 0, 0);
}

int main(void)
{
	static dit_tap tap;
	spread_rule(&tap);
	fits(&tap);
	dit_tap_print(&tap);
	return tap.failed ? 1 : 0;
}
