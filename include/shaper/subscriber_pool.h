/*
 * Memory that scales with active subscribers, not configured ones: each
 * configured subscriber keeps only a small record while idle (struct
 * sub_idle); a full CAKE per direction is drawn from a pool when its first
 * packet comes and goes back once its queues have drained and COBALT has
 * had time to forget (SUB_POOL_HOLD_NS without a packet). Pools are
 * allocated once, at start-up, so the fast path never allocates; one pool
 * per worker, so no locks.
 *
 * The per-subscriber scheduler (shaper/subscriber_sched.h) draws from it;
 * the memory estimate here is what shaperd --check-config prints.
 */
#ifndef SHAPER_SUBSCRIBER_POOL_H
#define SHAPER_SUBSCRIBER_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shaper/sched.h"
#include "shaper/subscriber.h"

/* How long an emptied CAKE is kept before it may go back: COBALT's state
 * (drop count, BLUE probability) has relaxed well within this. */
#define SUB_POOL_HOLD_NS 1000000000ull

/* Why one of a subscriber's packets was dropped (its own counters). */
enum sub_drop_kind {
	SUB_DROP_AQM = 0,    /* COBALT at dequeue */
	SUB_DROP_OVERFLOW,   /* its own CAKE's buffer limit */
	SUB_DROP_ACK_FILTER, /* a redundant ACK its CAKE's filter removed */
	SUB_DROP_BUDGET, /* the direction's joint limit: it held the most (the "overflow" reason) */
	SUB_DROP_KINDS
};

/*
 * What the data path keeps per configured subscriber, active or not. The
 * worker is the only writer; the counters are stored with relaxed atomics
 * so the control thread may read them at any time (sub_sched_counters),
 * without a lock.
 *
 * What a packet reads and writes in one direction, on its way in and on
 * its way out, is that direction's cache line (struct sub_idle_dir): with
 * thousands of subscribers busy a record is out of cache at each packet,
 * and so a packet touches one line of it, not one per field as arrays by
 * direction would have it.
 */
struct sub_idle_dir {
	struct sched *cake; /* NULL while idle in that direction */
	uint64_t last_pkt_ns;
	uint64_t bytes, packets; /* arrived (handed to its scheduler) */
	uint64_t sent_bytes, sent_packets;
	/* Its CAKE's count of written-off pacing time at the last fold into lag_skipped_ns. */
	uint64_t lag_seen;
	uint32_t qlen; /* packets queued in its CAKE now */
} __attribute__((aligned(64)));

struct sub_idle {
	struct sub_idle_dir dir[SUB_DIRS];
	/* What each allocation reads and writes, in the line after. */
	uint64_t rate[SUB_DIRS];     /* allocated bytes/s */
	uint64_t arrivals[SUB_DIRS]; /* moving average of the arrival rate, for the demand */
	uint64_t marks[SUB_DIRS];    /* packets its CAKE turned CE (ECN) */
	/* Pacing time its CAKEs wrote off (the worker away longer than their lag limit). */
	uint64_t lag_skipped_ns[SUB_DIRS];
	uint64_t dropped[SUB_DIRS][SUB_DROP_KINDS];
};

/*
 * A subscriber's CAKE is smaller than the link's: SUB_CAKE_QUEUES flow
 * queues per tin (a household has tens of flows, not thousands) and only
 * the tins of its diffserv mode. diffserv4 at this size is about 126 kB,
 * against 887 kB for 8 tins x 1024 queues.
 */
#define SUB_CAKE_QUEUES 256u

/* Make CAKE params p the subscriber size (leaves everything else). */
static inline void
sub_pool_cake_size(struct sched_params *p)
{
	p->cake_queues = SUB_CAKE_QUEUES;
	p->cake_mode_tins = true;
}

struct sub_pool;

/*
 * count schedulers made with params p (normally CAKE at a subscriber's
 * plan; sched_set_rate moves each to its allocation), memory from a (NULL:
 * calloc). NULL with err if p is refused or memory runs out.
 */
struct sub_pool *sub_pool_create(const struct sched_params *p, uint32_t count,
				 const struct sched_alloc *a, char *err, size_t errlen);
/* Frees every scheduler; all must have been given back. */
void sub_pool_free(struct sub_pool *pool);

/*
 * An empty scheduler as sched_create(p) makes it, or NULL when none is
 * left: the data path is then to queue the subscriber's packets in the
 * link's own CAKE (as for unknown addresses) and try again next tick.
 */
struct sched *sub_pool_take(struct sub_pool *pool);

/*
 * Give s back (cleared with sched_reinit for its next subscriber). -EBUSY
 * if packets are still queued in it (flush or wait), -EINVAL if it is not
 * this pool's.
 */
int sub_pool_give(struct sub_pool *pool, struct sched *s);

/* Schedulers left to take. */
uint32_t sub_pool_available(const struct sub_pool *pool);

/* May s go back at now? Empty, and no packet for SUB_POOL_HOLD_NS. */
bool sub_pool_may_return(const struct sched *s, uint64_t last_pkt_ns, uint64_t now);

/* ------------------------------------------------------------------------ */
/* The memory estimate                                                       */

struct sub_mem {
	uint32_t configured, active, prefixes, nodes;
	uint32_t unknown_slots; /* per worker: addresses no subscriber owns, with a plan each */
	uint64_t config_bytes;  /* the loaded set: nodes, subscribers, prefixes */
	uint64_t idle_bytes;    /* the scheduler's state for every configured subscriber and slot */
	uint64_t lookup_bytes;  /* the address -> subscriber table */
	uint64_t lpm_bytes;     /* the worker's rte_lpm and rte_lpm6 for prefixes on no VLAN */
	uint64_t alloc_bytes;   /* the rate allocator */
	uint64_t sched_bytes;   /* one scheduler with the pool's params, measured */
	uint64_t pool_bytes;    /* active x 2 directions x sched_bytes */
	/*
	 * A live change of addresses builds the new set and its tables
	 * (rte_lpm, the lookup) while the old ones serve: a second copy of
	 * those, held until the workers have swapped.
	 */
	uint64_t change_bytes;
	uint64_t total;
};

/*
 * Bytes for configured subscribers with prefixes addresses under nodes
 * nodes, active of them with a scheduler (from p) in both directions. The
 * scheduler's size is measured by making one (and freeing it). 0, or
 * -EINVAL with err if p is refused.
 */
int sub_mem_estimate(uint32_t configured, uint32_t prefixes, uint32_t nodes, uint32_t active,
		     const struct sched_params *p, struct sub_mem *out, char *err, size_t errlen);

/*
 * Bytes of rte_lpm (v4 prefixes, v4_groups of them past /24) and rte_lpm6
 * (v6 prefixes reaching v6_groups 8-bit steps past /24 in all); 0 for none.
 */
uint64_t sub_lpm_bytes_for(uint32_t v4, uint32_t v4_groups, uint32_t v6, uint32_t v6_groups);

/*
 * The same for a loaded set (its tables sized from its prefixes), with the
 * slots of addresses no subscriber owns that a worker keeps if the set
 * gives them a plan (unknown_addresses as configured: 0 = active / 4).
 */
int sub_mem_estimate_set(const struct sub_set *set, uint32_t active, uint32_t unknown_addresses,
			 const struct sched_params *p, struct sub_mem *out, char *err,
			 size_t errlen);

/* One line for people: "10000 subscribers (2000 active): 1.77 GB = ...". */
void sub_mem_format(const struct sub_mem *m, char *buf, size_t len);

#endif
