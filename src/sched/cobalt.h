/*
 * COBALT: the per-flow AQM of CAKE, CoDel's control law (drop or mark at
 * interval/sqrt(count)) combined with BLUE (a drop probability that rises
 * only while the flow keeps overflowing the buffer). Private to src/sched.
 * Times are nanoseconds; probabilities are Q0.32 (0xffffffff ~ 1.0).
 */
#ifndef SHAPER_SCHED_COBALT_H
#define SHAPER_SCHED_COBALT_H

#include <stdbool.h>
#include <stdint.h>

/* count values whose 1/sqrt(count) comes from a table rather than Newton. */
#define COBALT_CACHE_LEN 16

/* Per-tin parameters, derived from the tin's rate (see cake_tin_config). */
struct cobalt_params {
	uint64_t target;   /* ns */
	uint64_t interval; /* ns */
	uint64_t mtu_time; /* ns to send one MTU at the tin rate, 0 if unlimited */
	uint32_t p_inc;    /* BLUE increment, Q0.32 */
	uint32_t p_dec;    /* BLUE decrement, Q0.32 */
};

/* Per-flow state; all zero is the idle state. */
struct cobalt_vars {
	uint64_t drop_next;  /* next signal time, or activity timeout */
	uint64_t blue_timer; /* last BLUE adjustment */
	uint32_t count;
	uint32_t rec_inv_sqrt; /* ~1/sqrt(count), Q0.32 */
	uint32_t p_drop;       /* BLUE probability, Q0.32 */
	bool dropping;
	bool ecn_marked; /* the last packet judged was CE-marked */
};

/* Newton step towards 1/sqrt(count), exposed for the unit tests. */
uint32_t cobalt_newton_step(uint32_t rec_inv_sqrt, uint32_t count);

/* The 1/sqrt(count) table for count < COBALT_CACHE_LEN. */
extern const uint32_t cobalt_rec_inv_sqrt_cache[COBALT_CACHE_LEN];

/* t + interval / sqrt(count), with rec_inv_sqrt standing for 1/sqrt(count). */
static inline uint64_t
cobalt_control(uint64_t t, uint64_t interval, uint32_t rec_inv_sqrt)
{
	/* Split so intervals beyond 2^32 ns (over 4 s) do not overflow. */
	uint64_t hi = interval >> 32;
	uint64_t lo = interval & 0xffffffffu;

	return t + hi * rec_inv_sqrt + ((lo * rec_inv_sqrt) >> 32);
}

/*
 * Pseudo-random source for the BLUE draw; the caller owns the generator so
 * runs are reproducible.
 */
typedef uint32_t (*cobalt_rand_fn)(void *ctx);

/* True while the flow still carries AQM memory worth keeping (decaying). */
static inline bool
cobalt_busy(const struct cobalt_vars *v, uint64_t now)
{
	return v->p_drop != 0 || v->count != 0 || now < v->drop_next;
}

/*
 * The per-packet entry points are inline: called from cake.c's fast path
 * they cost no call, and the mark/random callbacks become direct calls.
 */
static inline void
cobalt_invsqrt(struct cobalt_vars *v)
{
	if (v->count < COBALT_CACHE_LEN)
		v->rec_inv_sqrt = cobalt_rec_inv_sqrt_cache[v->count];
	else
		v->rec_inv_sqrt = cobalt_newton_step(v->rec_inv_sqrt, v->count);
}

/*
 * BLUE forgets with time (a deliberate difference from sch_cake, see
 * docs/ARCHITECTURE.md): while the flow is not building a queue (found
 * empty, or its packets leave within half of target) p_drop loses a quarter
 * per target elapsed since it last changed, halving in about 2.4 targets
 * (12 ms by default). sch_cake takes 1/4096 per target and only when the
 * queue is found empty, so a flow that once flooded (p_drop ~0.8) kept
 * losing most of its packets for ~15 s after it slowed down. A
 * flood is still held: once p_drop falls below what the flood needs, its
 * queue grows past half of target, the decay stops, and overflow raises
 * p_drop again. floor keeps the last step (to zero) for cobalt_queue_empty,
 * which accounts for it (unresponsive_flow_count).
 */
static inline void
cobalt_blue_decay(struct cobalt_vars *v, const struct cobalt_params *p, uint64_t now,
		  uint32_t floor)
{
	uint64_t steps;

	if (v->p_drop <= floor || (int64_t)(now - v->blue_timer) <= (int64_t)p->target)
		return;
	steps = (now - v->blue_timer) / p->target;
	v->blue_timer += steps * p->target;
	if (steps > 80) /* 0.75^80 < 2^-32: at the floor whatever p_drop was */
		steps = 80;
	while (steps-- != 0 && v->p_drop > floor) {
		uint32_t d = (v->p_drop >> 2) + 1;

		v->p_drop = v->p_drop - floor > d ? v->p_drop - d : floor;
	}
}

/*
 * The flow lost a packet to the buffer limit: raise BLUE (at most once per
 * target) and force the CoDel side into dropping. Returns true if p_drop
 * just became non-zero (one more unresponsive flow).
 */
static inline bool
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

/*
 * The flow was found empty at dequeue: relax BLUE (at most once per target)
 * and let CoDel's count decay. Returns true if p_drop just reached zero.
 */
static inline bool
cobalt_queue_empty(struct cobalt_vars *v, const struct cobalt_params *p, uint64_t now)
{
	bool down = false;

	if ((v->p_drop | v->count) == 0) {
		/* No AQM memory (the usual case): nothing decays. */
		v->dropping = false;
		return false;
	}
	cobalt_blue_decay(v, p, now, p->p_dec);
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

/*
 * Judge a packet leaving the flow at now. mark is called when a congestion
 * signal is due; it returns true if the packet now carries CE (then no drop
 * is needed). bulk_flows is the tin's bulk flow count in ingress mode, else
 * 0. Returns true if the packet should be dropped.
 */
static inline bool
cobalt_should_drop(struct cobalt_vars *v, const struct cobalt_params *p, uint64_t now,
		   uint64_t enq_ns, uint32_t bulk_flows, bool (*mark)(void *pkt), void *pkt,
		   cobalt_rand_fn rnd, void *rnd_ctx)
{
	uint64_t sojourn = now - enq_ns;
	int64_t sched;
	bool over_target, next_due, drop = false;

	if ((v->p_drop | v->count) == 0 && sojourn <= p->target) {
		/*
		 * The usual packet: no AQM memory and within target. What the
		 * general path below does then: no signal, no BLUE draw, and
		 * drop_next becomes the activity timeout.
		 */
		v->ecn_marked = false;
		v->dropping = false;
		v->drop_next = now + p->interval;
		return false;
	}
	sched = (int64_t)(now - v->drop_next);

	/*
	 * The mtu_time terms keep at least a few packets' worth of queue on
	 * slow links (and two MTUs per bulk flow in ingress mode), where one
	 * packet alone can take longer than target.
	 */
	over_target = sojourn > p->target && sojourn > 2 * p->mtu_time * bulk_flows &&
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
	} else {
		v->dropping = false;
		/* Well below target: the flow is not outrunning its share. */
		if (v->p_drop != 0 && sojourn <= p->target / 2)
			cobalt_blue_decay(v, p, now, p->p_dec);
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

#endif
