/*
 * One link rate shared by the shards of a direction, without locks.
 *
 * Each shard (a worker's scheduler for part of the hosts or flows) owns one
 * cache line of the group, where it alone publishes its demand: a weight
 * (hosts or flows active in it) and a need (the rate it can use; "all" when
 * it is backlogged). Every SHARE_TICK_NS each shard reads every line and
 * computes the same weighted max-min split of the link: shards that need
 * less than their weighted share get what they need, the rest of the rate
 * goes to the others in proportion to their weight (host fairness across
 * shards when the weight counts hosts), and idle shards keep a small floor.
 * A lone busy shard thus gets the whole link; a nearly idle one little
 * more than it uses.
 *
 * The sum of the shards' rates never exceeds the link: rate moves only
 * through one atomic pool of unallocated rate. A shard lowers its
 * scheduler's rate before it returns the difference to the pool, and takes
 * from the pool (compare-and-swap, never more than is there) before it
 * raises it. Snapshots read at different moments can disagree, so a shard
 * may wait a tick for rate others have yet to return: convergence takes two
 * to three ticks. Time is an argument: no clock is read here.
 */
#ifndef SHAPER_SHARE_H
#define SHAPER_SHARE_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shaper/sched.h"

#define SHARE_MAX_SHARDS 64
#define SHARE_TICK_NS    100000ull  /* how often a shard re-reads the others */
#define SHARE_NEED_ALL   UINT64_MAX /* a backlogged shard can use any rate */
#define SHARE_LINE       64

/* One shard's published demand: written by that shard only. */
struct share_slot {
	alignas(SHARE_LINE) _Atomic uint64_t need; /* bytes/s, or SHARE_NEED_ALL */
	_Atomic uint32_t weight;                   /* hosts or flows active; 0 = idle */
	_Atomic uint64_t rate;                     /* the rate it shapes at now (for stats) */
	/*
	 * Part of the need that is not shared by weight: what its children
	 * below the level can use (share_tick_need; 0 for shards of hosts).
	 */
	_Atomic uint64_t base;
};

struct share_group {
	_Atomic uint64_t link_rate; /* bytes/s, the configured rate */
	uint32_t nshards;
	uint32_t mtu;
	alignas(SHARE_LINE) _Atomic int64_t pool; /* rate no shard holds; < 0 after a cut */
	struct share_slot slot[SHARE_MAX_SHARDS];
};

/* A shard's private side, touched only by its own worker. */
struct share_shard {
	struct share_group *g;
	uint32_t id;
	uint64_t rate;      /* what its scheduler shapes at */
	uint64_t last_tick; /* time of the last share_tick */
	uint64_t last_enq;  /* sched_enqueued_bytes at the last tick */
	uint64_t arrivals;  /* moving average of the arrival rate, bytes/s */
	uint64_t ticks, rate_changes;
	double level; /* the split's level at the last tick (bytes/s per weight; INFINITY: none) */
};

/*
 * Set up a group of nshards (1..SHARE_MAX_SHARDS) for link_rate bytes/s
 * (> 0) and frames of up to mtu bytes; every shard starts at an equal part.
 * Returns 0 or -EINVAL with a reason in err.
 */
int share_group_init(struct share_group *g, uint64_t link_rate, uint32_t nshards, uint32_t mtu,
		     char *err, size_t errlen);

/* 0 if link_rate (0 = unshaped) can be shared among nshards, else -EINVAL and err. */
int share_rate_check(uint64_t link_rate, uint32_t nshards, char *err, size_t errlen);

/*
 * Every shard's least rate (the scheduler needs one): a small part of the
 * link, so the floors of all shards together stay far below it whatever the
 * link is set to; it follows config.set.
 */
uint64_t share_group_floor(const struct share_group *g);

/*
 * The configured rate changed (config.set): the difference goes to or comes
 * from the pool; each shard moves to its new share when its worker applies
 * the change (share_shard_rebind) or on its next tick, whichever is first
 * (a cut is complete once every shard has done either).
 */
void share_group_set_rate(struct share_group *g, uint64_t link_rate);

/* Bind shard id of g; s then shapes at the shard's starting part (at now). */
void share_shard_init(struct share_shard *sh, struct share_group *g, uint32_t id, struct sched *s,
		      uint64_t now);

/*
 * s was updated (sched_update sets the configured, whole-link rate) or
 * replaced by a new scheduler: shape at the shard's share again, and at
 * once at no more than its part of the split after a cut, so the shards
 * never sum above a lowered link for longer than it takes every worker to
 * apply the change. A shard that holds no rate yet (the link was unshaped)
 * takes the floor.
 */
void share_shard_rebind(struct share_shard *sh, struct sched *s, uint64_t now);

static inline bool
share_due(const struct share_shard *sh, uint64_t now)
{
	return now - sh->last_tick >= SHARE_TICK_NS;
}

/*
 * One tick of shard sh at now: publish its demand (weight = hosts or flows
 * active, see share_hosts; the need follows from s's arrivals and backlog:
 * counters that went back, after stats.reset or a swap, count from 0),
 * read the others, and move s to the shard's share, loss-free and in order
 * (sched_set_rate). Returns the rate s shapes at. No locks, no allocation:
 * O(shards) reads of the others' lines.
 */
uint64_t share_tick(struct share_shard *sh, struct sched *s, uint32_t weight, uint64_t now);

/*
 * share_tick for a shard whose demand its caller measures (the
 * per-subscriber scheduler, shaper/subscriber_sched.h): need (bytes/s, or
 * SHARE_NEED_ALL), base and weight are published as given, and the
 * shard's rate moves to its part of the split the same way. The split
 * gives a shard min(need, base + level x weight): base is what its
 * children whose own need is below the level can use, weight the children
 * at the level (sh->level, from the last tick, tells the caller where that
 * is). No scheduler is touched: the caller shapes at the rate returned.
 */
uint64_t share_tick_need(struct share_shard *sh, uint64_t need, uint64_t base, uint32_t weight,
			 uint64_t now);

/* share_split, and the level it found (bytes/s per weight; INFINITY if every need is met). */
void share_split_level(const struct share_group *g, uint64_t *out, double *level);

/*
 * The same split of link (bytes/s) among n parts (n <= SHARE_MAX_SHARDS)
 * whose demands the caller holds (need, base, weight as a shard publishes
 * them): for a capacity shared by shards that is not the link's, such as
 * a node's whose subscribers are on several workers.
 */
void share_split_of(uint64_t link, uint32_t n, const uint64_t *need, const uint64_t *base,
		    const uint32_t *weight, uint64_t *out, double *level);

/*
 * The split every shard computes: weighted max-min of the link over the
 * published demands. out[i] = shard i's rate; sums to at most the link.
 */
void share_split(const struct share_group *g, uint64_t *out);

/* ------------------------------------------------------------------------ */
/* Which shard a packet belongs to (software steering)                      */

enum share_by {
	SHARE_BY_HOST = 0, /* every flow of a LAN host, both ways, on one shard */
	SHARE_BY_FLOW = 1, /* a host can use more than one shard; fairness per shard */
};

/*
 * The shard (0..n-1) of a packet the classifier has seen: by its LAN-side
 * host (the source going up, the destination coming down, so both
 * directions of a host agree) or by its flow (the hash is direction-
 * symmetric). Non-IP frames (hash 0) go to shard 0. Multiply-shift: no
 * division, no bias. Both directions agree only if their hashes come from
 * the same classify_key (shaperd seeds one key per direction today).
 */
static inline uint32_t
share_key(const struct sh_pkt *p, bool upstream, enum share_by by)
{
	return by == SHARE_BY_FLOW ? p->flow_hash : upstream ? p->src_hash : p->dst_hash;
}

static inline uint32_t
share_shard_of(const struct sh_pkt *p, bool upstream, enum share_by by, uint32_t n)
{
	return (uint32_t)(((uint64_t)share_key(p, upstream, by) * n) >> 32);
}

/* ------------------------------------------------------------------------ */
/* Active hosts (or flows) of a shard, for the weight                        */

/*
 * Hash of every packet's LAN host (or flow) marked in a 4096-bit map, at
 * enqueue and again at dequeue (a host whose backlog drains is active even
 * when it sends nothing new); the count is that of the hosts seen in the
 * current and the previous window, estimated from the map's empty bits
 * (linear counting: exact while hosts are few, under 1 % off at 6400). A
 * window lasts SHARE_HOST_WINDOW_NS and until it has seen
 * SHARE_HOST_ROUNDS packets per host it counts (a slow shard's scheduler
 * takes longer to visit every backlogged host once); after two windows'
 * time with no packet at all the shard counts none.
 */
#define SHARE_HOST_BITS      4096u
#define SHARE_HOST_WINDOW_NS 5000000ull
#define SHARE_HOST_ROUNDS    4u

struct share_hosts {
	uint64_t cur[SHARE_HOST_BITS / 64], prev[SHARE_HOST_BITS / 64];
	uint32_t cur_bits;   /* bits set in cur */
	uint32_t union_bits; /* bits set in cur | prev */
	uint32_t cur_pkts;   /* packets noted in cur */
	uint32_t seen_pkts;  /* cur_pkts at the last count */
	uint64_t window_start;
	uint64_t last_active; /* the last count that found new packets */
};

static inline void
share_hosts_note(struct share_hosts *h, uint32_t hash)
{
	uint32_t w, b;

	h->cur_pkts++;
	hash *= 0x9e3779b1u; /* spread hashes that differ only in high bits */
	w = (hash >> 20) & (SHARE_HOST_BITS / 64 - 1);
	b = hash >> 26;
	if ((h->cur[w] >> b & 1) == 0) {
		h->cur[w] |= 1ull << b;
		h->cur_bits++;
		h->union_bits += (uint32_t)((h->prev[w] >> b & 1) ^ 1);
	}
}

/* Hosts seen in the last one to two windows, at now (rotates the windows). */
uint32_t share_hosts_count(struct share_hosts *h, uint64_t now);

#endif
