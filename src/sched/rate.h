/*
 * Time-based rate arithmetic shared by the disciplines: ns per byte in
 * fixed point (precomputed per config, so the fast path only multiplies and
 * shifts) and the framing/overhead compensation of a packet's length.
 */
#ifndef SHAPER_SCHED_RATE_H
#define SHAPER_SCHED_RATE_H

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
		while (rate_ns >= (1ULL << 34)) {
			rate_ns >>= 1;
			shft--;
		}
	}
	r->rate = rate;
	r->rate_ns = rate_ns;
	r->rate_shft = shft;
}

/* Nanoseconds to send len bytes at r; 0 when unlimited. */
static inline uint64_t
sched_rate_ns(const struct sched_rate *r, uint32_t len)
{
	return ((uint64_t)len * r->rate_ns) >> r->rate_shft;
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
