/*
 * COBALT per-flow AQM (see cobalt.h and cake-reference.md §4). Unlike
 * textbook CoDel there is no "above target for a whole interval" wait:
 * entering the dropping state schedules the first signal one
 * interval/sqrt(count) ahead, and count decays by one per control-law slot
 * spent below target instead of being reset, so a flow that comes back
 * resumes near its old signalling rate. At most one signal per packet.
 */
#include <stddef.h>

#include "sched/cobalt.h"

/*
 * 1/sqrt(count) for small counts, where one Newton step per increment would
 * be too coarse: entry n is four Newton steps from entry n-1 (entry 0 is
 * 1.0). The unit tests regenerate it with cobalt_newton_step.
 */
const uint32_t cobalt_rec_inv_sqrt_cache[COBALT_CACHE_LEN] = {
	0xffffffff, 0xffffffff, 0xb4ead8a0, 0x93cd39e7,
	0x7fffffff, 0x727c9717, 0x6882f5bf, 0x60c2479b,
	0x5a82799a, 0x55555555, 0x50f44d8a, 0x4d2fd8f4,
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

static inline void
cobalt_invsqrt(struct cobalt_vars *v)
{
	if (v->count < COBALT_CACHE_LEN)
		v->rec_inv_sqrt = cobalt_rec_inv_sqrt_cache[v->count];
	else
		v->rec_inv_sqrt = cobalt_newton_step(v->rec_inv_sqrt, v->count);
}

bool
cobalt_queue_full(struct cobalt_vars *v, const struct cobalt_params *p, uint64_t now)
{
	bool up = false;

	if ((int64_t)(now - v->blue_timer) > (int64_t)p->target) {
		up = v->p_drop == 0;
		v->p_drop = v->p_drop > UINT32_MAX - p->p_inc ? UINT32_MAX : v->p_drop + p->p_inc;
		v->blue_timer = now;
	}
	v->dropping = true;
	v->drop_next = now;
	if (v->count == 0)
		v->count = 1;
	return up;
}

bool
cobalt_queue_empty(struct cobalt_vars *v, const struct cobalt_params *p, uint64_t now)
{
	bool down = false;

	if (v->p_drop != 0 && (int64_t)(now - v->blue_timer) > (int64_t)p->target) {
		v->p_drop = v->p_drop < p->p_dec ? 0 : v->p_drop - p->p_dec;
		v->blue_timer = now;
		down = v->p_drop == 0;
	}
	v->dropping = false;
	if (v->count != 0 && now >= v->drop_next) {
		v->count--;
		cobalt_invsqrt(v);
		v->drop_next = cobalt_control(v->drop_next, p->interval, v->rec_inv_sqrt);
	}
	return down;
}

bool
cobalt_should_drop(struct cobalt_vars *v, const struct cobalt_params *p, uint64_t now,
		   uint64_t enq_ns, uint32_t bulk_flows, bool (*mark)(void *pkt), void *pkt,
		   cobalt_rand_fn rnd, void *rnd_ctx)
{
	uint64_t sojourn = now - enq_ns;
	int64_t sched = (int64_t)(now - v->drop_next);
	bool over_target, next_due, drop = false;

	/*
	 * The mtu_time terms keep at least a few packets' worth of queue on
	 * slow links (and two MTUs per bulk flow in ingress mode), where one
	 * packet alone can take longer than target.
	 */
	over_target = sojourn > p->target &&
		      sojourn > 2 * p->mtu_time * bulk_flows &&
		      sojourn > 4 * p->mtu_time;
	next_due = v->count != 0 && sched >= 0;
	v->ecn_marked = false;

	if (over_target) {
		if (!v->dropping) {
			v->dropping = true;
			v->drop_next = cobalt_control(now, p->interval, v->rec_inv_sqrt);
		}
		if (v->count == 0)
			v->count = 1;
	} else if (v->dropping) {
		v->dropping = false;
	}

	if (next_due && v->dropping) {
		v->ecn_marked = mark != NULL && mark(pkt);
		drop = !v->ecn_marked;
		if (v->count != UINT32_MAX)
			v->count++;
		cobalt_invsqrt(v);
		v->drop_next = cobalt_control(v->drop_next, p->interval, v->rec_inv_sqrt);
		sched = (int64_t)(now - v->drop_next);
	} else {
		/* Below target: one step of relaxation per elapsed slot. */
		while (next_due) {
			v->count--;
			cobalt_invsqrt(v);
			v->drop_next = cobalt_control(v->drop_next, p->interval, v->rec_inv_sqrt);
			sched = (int64_t)(now - v->drop_next);
			next_due = v->count != 0 && sched >= 0;
		}
	}

	/* BLUE never marks: its flows have shown they ignore signals. */
	if (v->p_drop != 0 && !drop && rnd(rnd_ctx) < v->p_drop)
		drop = true;

	/* drop_next doubles as an activity timeout while count is zero. */
	if (v->count == 0)
		v->drop_next = now + p->interval;
	else if (sched > 0 && !drop)
		v->drop_next = now;
	return drop;
}
