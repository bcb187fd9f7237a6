/*
 * Hierarchical rate allocation for subscribers: subscribers under a node
 * share the node's capacity, nodes share their parent's, and the top nodes
 * the link's, work-conservingly. At every node the split among its children
 * (subscribers and child nodes alike, each one share) is max-min fair with
 * floors and ceilings: a child gets clamp(L, floor, ceiling) for the one
 * water level L that uses up the node's rate (or every child its ceiling).
 *
 * A subscriber's ceiling is min(plan max, demand) and its floor min(plan
 * min, ceiling): a backlogged subscriber borrows up to its max while the
 * node has room and keeps its min while it is backlogged; an idle one
 * (demand 0) takes nothing. A node's floor is the sum of its children's
 * floors and its ceiling min(capacity, sum of its children's ceilings). If
 * a cut of the link leaves less than the floors need, the floors are scaled
 * down together.
 *
 * Pure: the result depends only on the tree, the plans, the link rate and
 * the demands. A few passes over a node's children per node (the water
 * level found by Newton's steps, starting from the node's last level), no
 * allocation per run (10,000 subscribers in 50 nodes: well under a
 * millisecond, so it can run every few milliseconds); sub_alloc_run_active, what the scheduler
 * runs, looks only at the active subscribers and the nodes above them. Rates in bit/s.
 */
#ifndef SHAPER_SUBSCRIBER_ALLOC_H
#define SHAPER_SUBSCRIBER_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shaper/subscriber.h"

#define SUB_DEMAND_ALL UINT64_MAX /* backlogged: can use any rate */

struct sub_alloc;

/*
 * The allocator for set's tree and plans (set must be valid; it is copied,
 * so set may change or go afterwards). NULL if out of memory.
 */
struct sub_alloc *sub_alloc_create(const struct sub_set *set);
void sub_alloc_free(struct sub_alloc *a);

/* Bytes an allocator for nnodes nodes and nsubs subscribers takes (at most). */
size_t sub_alloc_bytes_for(uint32_t nnodes, uint32_t nsubs);

/*
 * One allocation for direction dir. link: the link's rate now (bit/s;
 * 0 = the root node's capacity, itself 0 = unlimited). demand[s] for every
 * subscriber: 0 idle, the bit/s it can use, or SUB_DEMAND_ALL. Writes
 * rate[s] for every subscriber; if node_rate is not NULL, node_rate[n] is
 * what node n was given (the sum of its subtree's rates). Returns the total.
 */
uint64_t sub_alloc_run(struct sub_alloc *a, enum sub_dir dir, uint64_t link, const uint64_t *demand,
		       uint64_t *rate, uint64_t *node_rate);

/*
 * The same allocation as sub_alloc_run, in time proportional to the active
 * subscribers and the nodes above them rather than to the configured ones:
 * active[0 .. nactive) are the subscribers whose demand may be non-zero,
 * in ascending order, each once; every other subscriber's demand is taken
 * to be 0. Reads demand[s] and writes rate[s] only for the active ones
 * (every other subscriber's rate is 0 and is not written). node_rate, if
 * not NULL, is written for every node, as by sub_alloc_run. The rates are
 * exactly sub_alloc_run's.
 *
 * rate must be the array the last run in dir wrote, its active entries
 * untouched since: a run with that run's input (sub_alloc_same_as_last)
 * has its rates, so it writes nothing and leaves them there.
 */
uint64_t sub_alloc_run_active(struct sub_alloc *a, enum sub_dir dir, uint64_t link,
			      const uint32_t *active, uint32_t nactive, const uint64_t *demand,
			      uint64_t *rate, uint64_t *node_rate);

/*
 * Whether the last sub_alloc_run_active in dir found the same input as the
 * run before it in dir (the same active subscribers in the same order, each
 * with the same min(plan max, demand), the same link) and so left that
 * run's rates in rate[] without splitting anything. Backlogged subscribers (demand
 * SUB_DEMAND_ALL or above their plan) that stay so keep this true.
 * False after sub_alloc_forget and for a run given node_rate.
 */
bool sub_alloc_same_as_last(const struct sub_alloc *a, enum sub_dir dir);

/* The next sub_alloc_run_active in either direction splits afresh. */
void sub_alloc_forget(struct sub_alloc *a);

/* Subscriber s's plan in direction dir as the allocator has it (s < its set's nsubs). */
const struct sub_plan *sub_alloc_plan(const struct sub_alloc *a, enum sub_dir dir, uint32_t s);

/*
 * The dead band on rate changes: what to write into a subscriber's shaper
 * whose rate is written when the allocation gives it share (any unit, the
 * same for all four), or 0 to keep written. The water level drifts a
 * little from one allocation to the next as demands move, and each write
 * costs its CAKE's tins a rewrite; so a rate at most 1/2^SUB_RATE_BAND_SHIFT
 * below the share is kept, and a rate written lands half that below the
 * share, leaving the share room to drift either way. The rate is thus
 * never above the share (a node, which has no pacer, never carries more
 * than its capacity) and never more than the band below it: the band is
 * measured from the rate written, so a slow drift cannot pile up. A share
 * at the subscriber's min or its max (its plan) is written exactly.
 */
#define SUB_RATE_BAND_SHIFT 8

/*
 * The band's test alone: written is at most the band below share, so it is
 * kept unless share is at the max (or at the min: not while written is at
 * least the min, as every rate this rule writes is). The common case needs
 * no look at the plan's min.
 */
static inline bool
sub_rate_band_keeps(uint64_t share, uint64_t written)
{
	return share > written && share - written <= written >> SUB_RATE_BAND_SHIFT;
}

static inline uint64_t
sub_rate_banded(uint64_t share, uint64_t written, uint64_t min, uint64_t max)
{
	uint64_t r;

	if (share <= min || share >= max)
		return share;
	if (share == written || sub_rate_band_keeps(share, written))
		return 0;
	r = share - (share >> (SUB_RATE_BAND_SHIFT + 1));
	return r > min ? r : min;
}

/*
 * Node node's capacity in dir from now (bit/s, > 0; not the root's: the
 * link is run's argument): with several workers, the part of a node's
 * capacity this worker's subscribers under it may use.
 */
void sub_alloc_set_capacity(struct sub_alloc *a, enum sub_dir dir, uint32_t node, uint64_t bps);

/*
 * The split at one node: n children with floor[i] <= ceiling[i], total to
 * share. out[i] = clamp(L, floor[i], ceiling[i]) for the water level L
 * that makes the sum total (rounding remainders go one bit/s each to
 * children between floor and ceiling), or every ceiling if they sum below
 * total, or the floors scaled to total if they sum above it. scratch holds
 * 2n values. Returns the sum of out.
 */
uint64_t sub_waterfill(uint32_t n, const uint64_t *floor, const uint64_t *ceiling, uint64_t total,
		       uint64_t *out, uint64_t *scratch);

#endif
