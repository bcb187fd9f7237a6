/*
 * Time-based rate arithmetic shared by the disciplines: ns per byte in
 * fixed point (precomputed per config, so the fast path only multiplies and
 * shifts) and the framing/overhead compensation of a packet's length.
 */
#ifndef SHAPER_SCHED_RATE_H
#define SHAPER_SCHED_RATE_H

#include <stdbool.h>
#include <stdint.h>

#include "shaper/pkt.h"
#include "shaper/sched.h"

struct sched_rate {
	uint64_t rate;    /* bytes/s, 0 = unlimited */
	uint64_t rate_ns; /* ns per byte << rate_shft */
	uint32_t rate_shft;
};

/* CAKE's scaling: keep rate_ns below 2^34 so len * rate_ns fits 64 bits. */
static inline void
sched_rate_set(struct sched_rate *r, uint64_t rate)
{
	uint64_t rate_ns = 0;
	uint32_t shft = 0;

	if (rate > 0) {
		shft = 34;
		rate_ns = ((uint64_t)1000000000 << 34) / (rate > 64 ? rate : 64);
		if (rate_ns >= (1ULL << 34)) {
			/* As many halvings as bring it below 2^34, at once. */
			uint32_t over = (uint32_t)(64 - __builtin_clzll(rate_ns)) - 34;

			rate_ns >>= over;
			shft -= over;
		}
	}
	r->rate = rate;
	r->rate_ns = rate_ns;
	r->rate_shft = shft;
}

/*
 * A live rate change from old to new bytes/s (both shaped) at now: a clock
 * still ahead of now was set for a packet charged at the old rate, so the
 * part not yet elapsed is stretched or shrunk by old/new. Nothing is lost,
 * nothing is paid twice, and a big rise after a tiny rate releases the
 * next packet at once rather than after the tiny rate's wait.
 */
static inline void
sched_rescale_clock(uint64_t *clock, uint64_t now, uint64_t old_rate, uint64_t new_rate)
{
	if (*clock <= now || old_rate == 0 || new_rate == 0)
		return;
	*clock = now + (uint64_t)((double)(*clock - now) * (double)old_rate / (double)new_rate);
}

/* Nanoseconds to send len bytes at r; 0 when unlimited. */
static inline uint64_t
sched_rate_ns(const struct sched_rate *r, uint32_t len)
{
	return ((uint64_t)len * r->rate_ns) >> r->rate_shft;
}

/* The clock lag a discipline tolerates at rate r (see sched_params.lag_limit_ns). */
static inline uint64_t
sched_lag_limit(const struct sched_params *p, const struct sched_rate *r)
{
	uint64_t mtu_ns;

	if (p->lag_limit_ns != SCHED_LAG_AUTO)
		return p->lag_limit_ns;
	mtu_ns = sched_rate_ns(r, p->mtu);
	return mtu_ns > SCHED_LAG_AUTO_MIN_NS ? mtu_ns : SCHED_LAG_AUTO_MIN_NS;
}

/*
 * Pull a pacing clock that lags now by more than lag up to now - lag: time
 * the worker lost in a stall is not paid back as a burst. Returns the time
 * written off (0 if none).
 */
static inline uint64_t
sched_clamp_lag(uint64_t *clock, uint64_t now, uint64_t lag)
{
	uint64_t skipped;

	if (now <= lag || *clock >= now - lag)
		return 0;
	skipped = now - lag - *clock;
	*clock = now - lag;
	return skipped;
}

/*
 * A single pacing clock, as fifo and fq_codel use it: each released packet
 * moves time_next by its transmission time; idle time earns no credit, and
 * a lag beyond the limit is written off.
 */
struct sched_pacer {
	struct sched_rate rate;
	uint64_t time_next;
	uint64_t lag; /* effective lag limit, ns */
	uint64_t lag_skips, lag_skipped_ns;
};

static inline void
sched_pacer_set(struct sched_pacer *pc, const struct sched_params *p)
{
	sched_rate_set(&pc->rate, p->rate);
	pc->lag = sched_lag_limit(p, &pc->rate);
}

/* The shard's share of the link changed (see sched_set_rate). */
static inline void
sched_pacer_set_rate(struct sched_pacer *pc, const struct sched_params *p, uint64_t rate,
		     uint64_t now)
{
	sched_rescale_clock(&pc->time_next, now, pc->rate.rate, rate);
	sched_rate_set(&pc->rate, rate);
	pc->lag = sched_lag_limit(p, &pc->rate);
}

/* A packet arrives at an empty queue: no credit for the idle time. */
static inline void
sched_pacer_wake(struct sched_pacer *pc, uint64_t now)
{
	if (pc->time_next < now)
		pc->time_next = now;
}

/* True if the pacer holds the next packet back at now. */
static inline bool
sched_pacer_hold(struct sched_pacer *pc, uint64_t now)
{
	uint64_t skipped;

	if (pc->rate.rate == 0)
		return false;
	if (pc->time_next > now)
		return true;
	skipped = sched_clamp_lag(&pc->time_next, now, pc->lag);
	if (skipped != 0) {
		pc->lag_skips++;
		pc->lag_skipped_ns += skipped;
	}
	return false;
}

static inline void
sched_pacer_charge(struct sched_pacer *pc, uint32_t adj_len)
{
	if (pc->rate.rate != 0)
		pc->time_next += sched_rate_ns(&pc->rate, adj_len);
}

/*
 * A paced discipline's next_time with queued packets behind the pacer:
 * UINT64_MAX when empty, now when unshaped or due, else the release time.
 */
static inline uint64_t
sched_pacer_next_time(const struct sched_pacer *pc, uint32_t queued, uint64_t now)
{
	if (queued == 0)
		return UINT64_MAX;
	if (pc->rate.rate == 0 || pc->time_next <= now)
		return now;
	return pc->time_next;
}

/* Count a packet's sojourn in hist; returns the bucket. */
static inline unsigned int
sched_sojourn_add(uint64_t *hist, uint64_t enq_ns, uint64_t now)
{
	unsigned int b = sched_sojourn_bucket(now > enq_ns ? now - enq_ns : 0);

	hist[b]++;
	return b;
}

/*
 * Overhead-adjusted length (tc-cake's rules): strip the MAC header in
 * overhead mode, add overhead, apply mpu, then ATM cells or PTM 64b/65b.
 * net_len, if not NULL, receives the network-layer size before overhead.
 */
static inline uint32_t
sched_adjust_len(const struct sched_params *p, uint32_t len, uint32_t net_off, uint32_t *net_len)
{
	int64_t n = len;

	if (p->overhead_mode)
		n -= net_off;
	if (n < 0)
		n = 0;
	if (net_len != NULL)
		*net_len = (uint32_t)n;
	n += p->overhead;
	if (n < (int64_t)p->mpu)
		n = p->mpu;
	if (n < 0)
		n = 0;
	if (p->framing == SCHED_FRAMING_ATM)
		n = ((n + 47) / 48) * 53;
	else if (p->framing == SCHED_FRAMING_PTM)
		n += (n + 63) / 64;
	return (uint32_t)n;
}

#endif
