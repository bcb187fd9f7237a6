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
	uint64_t drop_next;   /* next signal time, or activity timeout */
	uint64_t blue_timer;  /* last BLUE adjustment */
	uint32_t count;
	uint32_t rec_inv_sqrt; /* ~1/sqrt(count), Q0.32 */
	uint32_t p_drop;      /* BLUE probability, Q0.32 */
	bool dropping;
	bool ecn_marked;      /* the last packet judged was CE-marked */
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

/*
 * Judge a packet leaving the flow at now. mark is called when a congestion
 * signal is due; it returns true if the packet now carries CE (then no drop
 * is needed). bulk_flows is the tin's bulk flow count in ingress mode, else
 * 0. Returns true if the packet should be dropped.
 */
bool cobalt_should_drop(struct cobalt_vars *v, const struct cobalt_params *p, uint64_t now,
			uint64_t enq_ns, uint32_t bulk_flows, bool (*mark)(void *pkt), void *pkt,
			cobalt_rand_fn rnd, void *rnd_ctx);

/*
 * The flow lost a packet to the buffer limit: raise BLUE (at most once per
 * target) and force the CoDel side into dropping. Returns true if p_drop
 * just became non-zero (one more unresponsive flow).
 */
bool cobalt_queue_full(struct cobalt_vars *v, const struct cobalt_params *p, uint64_t now);

/*
 * The flow was found empty at dequeue: relax BLUE (at most once per target)
 * and let CoDel's count decay. Returns true if p_drop just reached zero.
 */
bool cobalt_queue_empty(struct cobalt_vars *v, const struct cobalt_params *p, uint64_t now);

/* True while the flow still carries AQM memory worth keeping (decaying). */
static inline bool
cobalt_busy(const struct cobalt_vars *v, uint64_t now)
{
	return v->p_drop != 0 || v->count != 0 || now < v->drop_next;
}

#endif
