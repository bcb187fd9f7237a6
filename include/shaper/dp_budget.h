/*
 * The mbuf budget (src/dataplane/budget.c): everything that can pin one
 * direction's mbufs at once, at worst, which its pool must hold.
 */
#ifndef SHAPER_DP_BUDGET_H
#define SHAPER_DP_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "shaper/config.h"
#include "shaper/sched.h"

struct dp_dir;

/* Who can pin one direction's mbufs at once, at worst (counts of mbufs). */
struct dp_mbuf_budget {
	uint64_t sched;      /* sched_max_packets (SCHED_UNBOUNDED if nothing bounds it) */
	uint32_t emulator;   /* the delay line's limit, 0 when it is off */
	uint32_t rx_ring;    /* rx descriptors of the input port */
	uint32_t tx_ring;    /* tx descriptors of the output port: sent, not yet freed */
	uint32_t pending;    /* held after a refused tx */
	uint32_t burst;      /* between rx and the scheduler (own and steered bursts) */
	uint32_t held;       /* arrivals held behind a discipline swap (SCHED_MOVE_HELD_MAX) */
	uint32_t cache;      /* the worker's mempool cache */
	uint32_t shards;     /* the schedulers, rings, holds and cache above are per shard */
	uint32_t main_cache; /* the main lcore's mempool cache, once */
	uint64_t steer;      /* in the steering rings between shards */
	uint64_t fixed;      /* all but the schedulers */
	uint64_t total;
};

/*
 * Packets a direction's subscribers may hold together for each CAKE of its
 * pool, at least: a subscriber backlogged at a slow plan keeps a frame or
 * two standing (COBALT's target is at least 1.5 frame times at its rate),
 * so a joint limit below that for every busy one would run some dry.
 */
#define DP_SUBS_PKTS_PER_CAKE 4u

/*
 * One shard's scheduler part of the budget: what its scheduler can hold
 * (sched_max_packets, "one"), and with subscribers (subs_cakes CAKEs in its
 * pool) at least DP_SUBS_PKTS_PER_CAKE for each; also the joint limit of
 * the subscribers' CAKEs (dp_subs_set_limit).
 */
uint64_t dp_budget_sched_part(uint64_t one, uint32_t subs_cakes);

/* Direction d's budget with scheduler params p (c's or a live change's). */
void dp_mbuf_budget_dir(const struct shaper_config *c, enum shaper_dir d,
			const struct sched_params *p, uint32_t truesize, struct dp_mbuf_budget *b);

/*
 * Direction d's pool size: dataplane.mbufs, or its budget with "auto".
 * -1 with a message naming the keys to change if the budget does not fit.
 */
int dp_pool_size(const struct shaper_config *c, enum shaper_dir d, uint32_t truesize, uint32_t *n,
		 char *err, size_t errlen);

/* 0 if the direction's pool can hold what a live change to p allows, else -1 and err. */
int dp_budget_check_update(const struct dp_dir *dd, const struct sched_params *p, char *err,
			   size_t errlen);

#endif
