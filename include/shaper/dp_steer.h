/*
 * Software steering between the shards of a direction (src/dataplane/steer.c)
 * and the choice between it and the NICs' RSS.
 */
#ifndef SHAPER_DP_STEER_H
#define SHAPER_DP_STEER_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ring.h>

#include "shaper/config.h"
#include "shaper/pkt.h"
#include "shaper/share.h"

struct dp_dir;
struct dp_port;

/*
 * Software steering of one direction's shard: frames received on its
 * queue that belong to another shard go there through a single-producer,
 * single-consumer ring per (from, to) pair; no locks.
 */
struct dp_steer {
	enum share_by by;
	bool upstream;                            /* the LAN host is the source */
	uint32_t n;                               /* shards */
	struct rte_ring *out[SHAPER_MAX_WORKERS]; /* to shard i (NULL for itself) */
	struct rte_ring *in[SHAPER_MAX_WORKERS];  /* from shard i (NULL for itself) */
	uint64_t steered_out, steered_in;         /* frames sent to / taken from the rings */
	uint32_t next_in;                         /* the ring a turn takes from first */
};

/* Software steering (steer.c) ------------------------------------------- */

/*
 * The rings of a direction's n shards: dirs[i]->steer of each is set up
 * (allocated) with rings between every pair. 0 or -errno with err.
 */
int dp_steer_create(struct dp_dir *const *dirs, uint32_t n, enum share_by by, char *err,
		    size_t errlen);
/*
 * Whether frames reach their shard by the ports' RSS (1) or by software
 * steering (0): RSS only when both ports put the LAN host (or the flow) on
 * the same queue numbers (both sharded, the same hash types but for which
 * address they take, the same key length, tables that agree on i mod n),
 * and want is not "software". -1 with err when want is "rss" and they
 * cannot; why says what decided.
 */
int dp_steering_choose(const struct dp_port *lan, const struct dp_port *wan, uint32_t n,
		       enum shaper_steering want, char *why, size_t len);
/* Free the rings and steer blocks (workers stopped; the rings must be empty). */
void dp_steer_free(struct dp_dir *const *dirs, uint32_t n);
/* Ring size between two shards of n (power of two): bounded total per shard. */
uint32_t dp_steer_ring_size(uint32_t n);
/*
 * Worker: split a classified burst: frames of this shard stay in pkts
 * (compacted, order kept; the count is returned), the others go to their
 * shard's ring (counted steered_out, or dropped as steer_full onto drops).
 */
unsigned int dp_steer_burst(struct dp_dir *d, struct sh_pkt **pkts, unsigned int n,
			    struct sh_pkt_list *drops);
/*
 * The same with the shards chosen by the caller: to[i] is frame i's shard
 * (per subscriber, dp_subs_steer_burst). tag (NULL: none) is compacted
 * along with the frames that stay.
 */
unsigned int dp_steer_burst_to(struct dp_dir *d, struct sh_pkt **pkts, const uint8_t *to,
			       uint32_t *tag, unsigned int n, struct sh_pkt_list *drops);
/*
 * Worker: take up to max frames other shards sent this one: an equal part
 * from each ring first, the rest from the rings in turn (the first one
 * rotates every call).
 */
unsigned int dp_steer_take(struct dp_dir *d, struct sh_pkt **pkts, unsigned int max);
/* Drop every frame still in the rings towards d (shutdown). */
void dp_steer_flush(struct dp_dir *d, struct sh_pkt_list *out);

#endif
