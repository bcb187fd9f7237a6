/*
 * The per-subscriber scheduler of one worker: every subscriber's traffic in
 * a CAKE of its own, drawn from a pool at its first packet and given back
 * once drained and quiet (shaper/subscriber_pool.h), paced at the rate the
 * hierarchical allocation (shaper/subscriber_alloc.h) gives it. The
 * allocation runs every SUB_SCHED_TICK_NS (less often with thousands of
 * subscribers holding a CAKE, see SUB_SCHED_TICK_MAX_NS) from each
 * subscriber's demand:
 * all it can get while it has a standing queue (two packets or more, and
 * then until its queue is found empty), else its averaged arrival rate
 * plus 1/32, 0 while idle. A tick looks only at the subscribers holding a
 * CAKE (an idle one's demand is 0 and takes nothing), so its cost follows
 * the active subscribers, not the configured.
 *
 * Addresses no subscriber owns share the link's own scheduler (the
 * caller's), which competes under the link as one more subscriber with the
 * link's capacity as its plan; so do the packets of a subscriber that finds
 * the pool empty, until a CAKE is free. Or, with a plan per unknown address
 * (the set's unknown), each such address (a v4 address, a v6 /64) is a
 * subscriber of its own under the link while it has packets, in one of a
 * fixed number of slots (sub_sched_unknown_key). Dequeue serves the subscriber due
 * soonest (a heap keyed by each scheduler's next time), and a pacer at the
 * link's rate bounds the total: a subscriber that has just become active
 * shapes at its plan until the next allocation, and never pushes the link
 * past its rate meanwhile.
 *
 * Plain C, no DPDK, no clock: every call takes now in ns, so the same code
 * runs in the worker and in the simulated-time tests. One instance per
 * worker, used by that worker only: no locks. No allocation after create.
 */
#ifndef SHAPER_SUBSCRIBER_SCHED_H
#define SHAPER_SUBSCRIBER_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shaper/classify.h"
#include "shaper/pkt.h"
#include "shaper/sched.h"
#include "shaper/subscriber.h"
#include "shaper/subscriber_pool.h"
#include "shaper/subscriber_rtt.h"

#define SUB_SCHED_TICK_NS     5000000ull /* how often the allocation runs */
/*
 * Less often with many subscribers holding a CAKE: a quarter of the time
 * their average share of the link takes to carry a full frame of
 * SUB_SCHED_FRAME_BITS, between SUB_SCHED_TICK_NS and this.
 */
#define SUB_SCHED_TICK_MAX_NS 50000000ull
#define SUB_SCHED_FRAME_BITS  (1514u * 8u)

struct sub_sched;

struct sub_sched_config {
	const struct sub_set *set; /* valid; copied where needed, may go after create */
	/* One subscriber CAKE's params (sub_config_sched_params), per direction. */
	struct sched_params params[SUB_DIRS];
	uint32_t active; /* CAKEs in each direction's pool */
	/* The link's scheduler per direction, for unknown addresses (the caller's). */
	struct sched *link[SUB_DIRS];
	const struct sched_alloc *mem; /* NULL: calloc */
	/*
	 * A faster longest-prefix match for the prefixes on no VLAN (the
	 * worker's rte_lpm and rte_lpm6): the subscriber owning the address,
	 * or SUB_NONE. Used for every frame unless it is tagged and the set
	 * has VLAN-qualified prefixes; NULL: the set's own lookup. ctx is the
	 * caller's and must outlive the scheduler.
	 */
	uint32_t (*lookup_v4)(const void *ctx, uint32_t addr);
	uint32_t (*lookup_v6)(const void *ctx, const uint8_t addr[16]);
	const void *lookup_ctx;
	/*
	 * With a plan per unknown address (the set's unknown): how many such
	 * addresses may be shaped at once, each as one more subscriber under
	 * the link (shaper/subscriber_unknown.h). 0: a quarter of active; never
	 * more than active. Past it, a new address shares the link's entry.
	 */
	uint32_t unknown_slots;
	/* Their table's hash key (the classifier's, the same on every worker). */
	struct classify_key unknown_key;
};

/* NULL with err if a param is refused or memory runs out. */
struct sub_sched *sub_sched_create(const struct sub_sched_config *cfg, char *err, size_t errlen);
/* Frees the pools (each CAKE must be empty: sub_sched_flush first); not the link's schedulers. */
void sub_sched_free(struct sub_sched *ss);

/*
 * The subscriber of a classified packet in direction dir: its LAN-side
 * address (the destination going down, the source going up) on its VLAN
 * (the inner of two tags), or SUB_NONE.
 */
uint32_t sub_sched_classify(const struct sub_sched *ss, enum sub_dir dir, const struct sh_pkt *pkt);

/*
 * Queue pkt for subscriber sub (SUB_NONE: the link's scheduler) at now.
 * Drops (pkt or others of the same scheduler) are appended to dropped with
 * their reason. Returns 1 if pkt itself was dropped, else 0.
 */
int sub_sched_enqueue(struct sub_sched *ss, enum sub_dir dir, uint32_t sub, struct sh_pkt *pkt,
		      uint64_t now, struct sh_pkt_list *dropped);

/*
 * sub_sched_enqueue of pkts[i] for subs[i], i = 0..n-1, in order, loading
 * each subscriber's record and CAKE for the whole burst before the first
 * enqueue (sched_prefetch_enqueue): with thousands busy, each packet's are
 * out of cache, and the loads then overlap instead of following one another.
 */
void sub_sched_enqueue_burst(struct sub_sched *ss, enum sub_dir dir, const uint32_t *subs,
			     struct sh_pkt *const *pkts, unsigned int n, uint64_t now,
			     struct sh_pkt_list *dropped);

/*
 * Up to max packets due at now, soonest-due subscriber first, within the
 * link's rate; runs the allocation when it is due. AQM drops on the way go
 * to dropped.
 */
unsigned int sub_sched_dequeue_burst(struct sub_sched *ss, enum sub_dir dir, struct sh_pkt **out,
				     unsigned int max, uint64_t now, struct sh_pkt_list *dropped);

/*
 * Earliest time a dequeue has work: a packet due, or the allocation while
 * CAKEs are taken; UINT64_MAX when nothing is queued and none is taken.
 */
uint64_t sub_sched_next_time(const struct sub_sched *ss, enum sub_dir dir, uint64_t now);

/*
 * The link's rate in bytes/s from now (autorate, a share of the link); 0 =
 * the set's capacity. A wait the link's pacer has ahead (the last frame's
 * time at the old rate) is rescaled to the new one, as a CAKE's own clocks
 * are: a shard idling at its floor of a few hundred bytes a second would
 * otherwise hold its next frame for seconds after its share came back.
 */
void sub_sched_set_link_rate(struct sub_sched *ss, enum sub_dir dir, uint64_t rate, uint64_t now);

/*
 * Node node's capacity in dir from the next allocation (bit/s): this
 * worker's part of a node whose subscribers several workers shape. A live
 * change brings back the set's capacities.
 */
void sub_sched_set_node_capacity(struct sub_sched *ss, enum sub_dir dir, uint32_t node,
				 uint64_t bps);

/* Every packet queued in direction dir onto out (shutdown); CAKEs go back to the pool. */
void sub_sched_flush(struct sub_sched *ss, enum sub_dir dir, struct sh_pkt_list *out);

/* Packets queued in direction dir: every subscriber's CAKE and the link's scheduler. */
uint64_t sub_sched_backlog_pkts(const struct sub_sched *ss, enum sub_dir dir);

/*
 * The most packets the direction's schedulers (every subscriber's CAKE and
 * the link's) may hold together: the share of the mbuf pool the link's
 * scheduler alone would have (shaper/dp_budget.h). A packet past it is
 * made room for by dropping from the head of the subscriber holding the
 * most, counted under the "overflow" reason (its SUB_DROP_BUDGET). 0: no
 * joint limit (each CAKE only its own).
 */
void sub_sched_set_limit(struct sub_sched *ss, enum sub_dir dir, uint64_t pkts);

struct sub_sched_stats {
	uint64_t budget_drops; /* packets dropped for the joint limit (sub_sched_set_limit) */
	uint64_t taken, given; /* CAKEs drawn from and returned to the pool */
	uint64_t pool_empty;   /* packets queued in the link's scheduler for want of a CAKE */
	uint64_t unknown;      /* packets of addresses no subscriber owns */
	uint64_t unknown_full; /* of them, ones of a new address when every unknown slot was taken
				*/
	uint64_t allocations;  /* allocation runs */
	uint64_t repeats;    /* of them, ones with last run's input: its rates kept as they were */
	uint64_t link_waits; /* dequeues held back by the link's pacer */
	/*
	 * Times the link's pacer, behind now by more than its lag limit, was
	 * pulled up to it, and the time so passed over: a worker slower than the
	 * link, or subscribers held below it by their own plans. Not stalls.
	 */
	uint64_t link_lag_skips, link_lag_skipped_ns;
	uint32_t active;       /* CAKEs taken now */
	uint32_t pool_free;    /* CAKEs left */
	uint64_t rate_changes; /* rates an allocation wrote into a subscriber's CAKE */
};

void sub_sched_get_stats(const struct sub_sched *ss, enum sub_dir dir, struct sub_sched_stats *st);

/*
 * The lookup_ctx it was made with or a change brought (for its owner to
 * free after sub_sched_free). Any thread: a change publishes it after the
 * count and the records, so a context read here was made for a count the
 * scheduler has at least (a set kept in it is indexed by its own count).
 */
const void *sub_sched_lookup_ctx(const struct sub_sched *ss);

/* Bytes its per-subscriber state takes for nsubs subscribers (pools and lookup aside). */
size_t sub_sched_bytes_for(uint32_t nsubs);

/* Subscriber sub's record (counters, rate, its CAKE); sub < nsubs of the set. */
const struct sub_idle *sub_sched_sub(const struct sub_sched *ss, uint32_t sub);

/* One subscriber's counters in one direction, as another thread may read them. */
struct sub_counters {
	uint64_t rate;                     /* allocated now, bytes/s (0 while it has no CAKE) */
	uint64_t arrival_bps;              /* its arrival rate, averaged over about four ticks */
	uint64_t bytes, packets;           /* arrived */
	uint64_t sent_bytes, sent_packets; /* left its scheduler */
	uint64_t dropped[SUB_DROP_KINDS];
	uint64_t marks;
	uint32_t qlen;
	uint64_t lag_skipped_ns; /* pacing time its CAKEs wrote off: the worker was away */
	bool active;             /* holds a CAKE from the pool */
};

/*
 * Subscriber sub's counters in direction dir (sub == nsubs: the link's own
 * scheduler's entry), safe to call from any thread while the worker runs:
 * each value is read atomically, the set of them is not one instant.
 */
void sub_sched_counters(const struct sub_sched *ss, uint32_t sub, enum sub_dir dir,
			struct sub_counters *out);

/* Subscriber sub's plan (its max) in direction dir, bit/s; nsubs + 1 + k: unknown slot k's. */
uint64_t sub_sched_plan_max(const struct sub_sched *ss, enum sub_dir dir, uint32_t sub);

/* Subscribers of the set it was made with (the link's entry is index nsubs). */
uint32_t sub_sched_nsubs(const struct sub_sched *ss);

/*
 * The subscriber owning address a (a /32 or /128 from sub_prefix_parse;
 * vlan 0 for untagged), or SUB_NONE. Read-only: any thread.
 */
uint32_t sub_sched_find(const struct sub_sched *ss, const struct sub_prefix *a);

/*
 * Unknown addresses with a plan each: the number of slots (0 without), and
 * slot k's address (a /32 or /64 with its VLAN) if it holds one now (any
 * thread). Its counters are sub_sched_counters(ss, nsubs + 1 + k, ...).
 */
uint32_t sub_sched_unknown_slots(const struct sub_sched *ss);
/* The slots a scheduler made from set with active CAKEs and unknown_slots want will have. */
uint32_t sub_sched_unknown_slots_for(const struct sub_set *set, uint32_t active, uint32_t want);
bool sub_sched_unknown_key(const struct sub_sched *ss, uint32_t k, struct sub_prefix *key);
/* Slots holding an address now (any thread). */
uint32_t sub_sched_unknown_used(const struct sub_sched *ss);

/*
 * A hash of pkt's unknown address (the same on every worker), to steer it:
 * each unknown address must reach one shard only, or it would get a plan
 * on each. false if the scheduler has no plan per unknown address (or pkt
 * no IP header).
 */
bool sub_sched_unknown_hash(const struct sub_sched *ss, enum sub_dir dir, const struct sh_pkt *pkt,
			    uint32_t *hash);

/*
 * The index (nsubs + 1 + k) of the unknown slot holding pkt's address
 * going dir, or SUB_NONE (no plan per unknown address, or none holds it).
 * Worker; for crediting an RTT sample to the address it belongs to.
 */
uint32_t sub_sched_unknown_find(const struct sub_sched *ss, enum sub_dir dir,
				const struct sh_pkt *pkt);

/* ------------------------------------------------------------------------ */
/* Live changes (subscribers.set/del, a reload of the subscriber files)       */

/*
 * A change of the subscriber set while the worker runs. The control thread
 * builds it (sub_sched_change_build: the new allocator, plans and lookup,
 * every allocation done there); the worker applies it between bursts
 * (sub_sched_change_apply: pointer swaps and the reset of reused slots, no
 * allocation, no lock); it then holds the old state, which the control
 * thread frees (sub_sched_change_free) once the worker has answered. Freed
 * unapplied, it frees the new state instead.
 *
 * Subscriber indices are slots that never move: the set of a change has
 * at least as many subscribers as the scheduler (the caller keeps spare
 * slots, see dp_subs_attach); one with more grows the scheduler to them
 * (the link's entry and the unknown slots, which follow the subscribers,
 * move up). A slot whose id is "" owns no address. A subscriber that stays keeps its CAKE, its
 * queued packets and its counters whatever else changes; its new plan takes effect at the next
 * allocation (within SUB_SCHED_TICK_MAX_NS). A deleted one keeps its CAKE and
 * its plan in the allocation until it has drained (no new packet reaches it)
 * and its CAKE goes back to the pool; its slot may then be reused.
 */
struct sub_sched_change;

/*
 * The change to set (valid, set->nsubs >= sub_sched_nsubs(ss)). reset: the
 * slots that take a new subscriber (their counters start from zero; each
 * must be idle, sub_sched_slot_idle). lookup_ctx: the new context of the
 * lookup_v4/v6 functions (NULL: keep the current one); ctx_free frees
 * whichever context the change holds when it is freed. NULL with err if
 * memory runs out.
 */
struct sub_sched_change *sub_sched_change_build(const struct sub_sched *ss,
						const struct sub_set *set, const uint32_t *reset,
						uint32_t nreset, const void *lookup_ctx,
						void (*ctx_free)(const void *ctx), char *err,
						size_t errlen);
/* Worker side, between bursts: swap it in. Afterwards c holds the old state. */
void sub_sched_change_apply(struct sub_sched *ss, struct sub_sched_change *c);
/* Whether it has been applied (then it holds the old state). */
bool sub_sched_change_applied(const struct sub_sched_change *c);
void sub_sched_change_free(struct sub_sched_change *c);

/*
 * A slot holds no CAKE in either direction (any thread): a deleted
 * subscriber's slot has drained and may take a new one. Once a slot owns
 * no address this only goes from false to true.
 */
bool sub_sched_slot_idle(const struct sub_sched *ss, uint32_t sub);

/* Changes applied since start-up. */
uint64_t sub_sched_changes(const struct sub_sched *ss);

/*
 * Subscriber sub's demand at the last allocation in direction dir (bit/s,
 * SUB_DEMAND_ALL, 0 idle; sub == nsubs: the link's own entry). The
 * worker's only: with several workers, what its shard asks of the link.
 */
uint64_t sub_sched_demand(const struct sub_sched *ss, enum sub_dir dir, uint32_t sub);

/*
 * The subscribers the last allocation in direction dir looked at, in
 * ascending order (the link's entry, nsubs, among them): the only ones
 * whose sub_sched_demand may be non-zero, save those that took a CAKE since
 * (they join at the next allocation). *n gets their count. The worker's
 * only; valid until its next call into the scheduler.
 */
const uint32_t *sub_sched_active(const struct sub_sched *ss, enum sub_dir dir, uint32_t *n);

/* ------------------------------------------------------------------------ */
/* Passive RTT per subscriber (shaper/subscriber_rtt.h)                       */

/*
 * One RTT sample of a flow of subscriber sub (SUB_NONE or past the set:
 * the link's entry, addresses no subscriber owns), taken at now. Worker.
 */
void sub_sched_rtt_sample(struct sub_sched *ss, uint32_t sub, enum sub_rtt_side side,
			  uint64_t rtt_ns, uint64_t now);

/*
 * The worker's time, so that readers know which windows are recent even
 * while no sample comes (call it every so often; samples call it too).
 */
void sub_sched_note_time(struct sub_sched *ss, uint64_t now);

/*
 * Add subscriber sub's recent samples of side to h (sub == nsubs: the
 * link's entry). Any thread; with several shards, add every shard's.
 */
void sub_sched_rtt(const struct sub_sched *ss, uint32_t sub, enum sub_rtt_side side,
		   uint32_t h[SUB_RTT_BUCKETS]);

struct sub_qoe_acc;

/*
 * Add subscriber sub's recent busy minutes (shaper/subscriber_qoe.h: their
 * RTT samples, how many, and the bytes of its last whole minute) to acc, as
 * of the worker's minute now. Any thread; with several shards, add every
 * shard's.
 */
void sub_sched_qoe(const struct sub_sched *ss, uint32_t sub, struct sub_qoe_acc *acc);

#endif
