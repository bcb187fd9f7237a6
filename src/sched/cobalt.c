/*
 * COBALT per-flow AQM (see cobalt.h; sch_cake's cobalt_*()). Unlike
 * textbook CoDel there is no "above target for a whole interval" wait:
 * entering the dropping state schedules the first signal one
 * interval/sqrt(count) ahead, and count decays by one per control-law slot
 * spent below target instead of being reset, so a flow that comes back
 * resumes near its old signalling rate. At most one signal per packet.
 *
 * The per-packet functions are inline in cobalt.h (CAKE's fast path calls
 * them per packet); this file keeps the 1/sqrt table and the Newton step.
 */
#include <stddef.h>

#include "sched/cobalt.h"

/*
 * 1/sqrt(count) for small counts, where one Newton step per increment would
 * be too coarse: entry n is four Newton steps from entry n-1 (entry 0 is
 * 1.0). The unit tests regenerate it with cobalt_newton_step.
 */
const uint32_t cobalt_rec_inv_sqrt_cache[COBALT_CACHE_LEN] = {
	0xffffffff, 0xffffffff, 0xb4ead8a0, 0x93cd39e7, 0x7fffffff, 0x727c9717,
	0x6882f5bf, 0x60c2479b, 0x5a82799a, 0x55555555, 0x50f44d8a, 0x4d2fd8f4,
	0x49e69d17, 0x47006a81, 0x446b3b96, 0x4219528c,
};

uint32_t
cobalt_newton_step(uint32_t y, uint32_t count)
{
	/* y' = y * (3 - count * y^2) / 2, everything Q0.32 or Q32.32. */
	uint64_t y2 = ((uint64_t)y * y) >> 32;
	uint64_t cy2 = (uint64_t)count * y2;
	uint64_t three = 3ULL << 32;
	uint64_t r;

	if (cy2 >= three)
		return y >> 1; /* estimate far too high: halve, never wrap */
	/* (three - cy2) >> 2 stays below 2^32 * 0.75 so the product fits. */
	r = (((three - cy2) >> 2) * (uint64_t)y) >> 31;
	return r > 0xffffffffu ? 0xffffffffu : (uint32_t)r;
}
