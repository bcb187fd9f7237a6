/*
 * The worker (src/dataplane/worker.c, lcore.c, rtt_tap.c): a shard of each
 * direction per worker, in a per-lcore context on the worker's NUMA node,
 * and the loop that moves frames LAN->WAN (upstream) and WAN->LAN
 * (downstream) through each shard's scheduler.
 */
#ifndef SHAPER_DP_WORKER_H
#define SHAPER_DP_WORKER_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "shaper/autorate.h"
#include "shaper/classify.h"
#include "shaper/config.h"
#include "shaper/control.h"
#include "shaper/emulate.h"
#include "shaper/owd.h"
#include "shaper/pkt.h"
#include "shaper/rtt.h"
#include "shaper/sched.h"
#include "shaper/share.h"
#include "shaper/subscriber_sched.h"

#include "shaper/dp_mailbox.h"
#include "shaper/dp_steer.h"

#define DP_TX_PENDING_MAX 512

/*
 * Passive RTT for the two directions of one worker (src/dataplane/rtt_tap.c):
 * one table both feed, and each direction's autorate. Only that worker
 * touches it; the control thread sees it through the snapshots.
 */
#define DP_RTT_FLOWS       32768         /* flows timed at once (64 B each, 2.3 MB in all) */
#define DP_RTT_INTERVAL_NS 1000000000ull /* "the last interval" of stats and telemetry */

/*
 * Autorate's cuts and path decisions, for the log: written by the worker,
 * read by dp_rtt_log_decisions on another thread (one of each).
 */
#define DP_AR_EVENTS 64
struct dp_ar_event {
	uint64_t time_ns, from, to; /* the rate before and after, bytes/s */
	uint64_t delay_ns, own_ns, line, path_ns;
	uint8_t why;  /* enum autorate_reason */
	uint8_t rule; /* autorate_rule_name */
};
struct dp_ar_log {
	uint32_t head; /* the worker's: events written */
	uint32_t tail; /* the reader's: events taken */
	uint64_t lost; /* events not written: the reader was DP_AR_EVENTS behind */
	struct dp_ar_event ev[DP_AR_EVENTS];
};

/*
 * Autorate with several workers: one controller, on shard 0's worker (the
 * leader), steers the share group's link rate. The other workers hand it
 * their flows' samples through a ring each (single producer, single
 * consumer: no locks) and apply the rate it publishes to their shard, as
 * config.set would.
 */
struct dp_dir;
struct rte_ring;

struct dp_ar_sample {
	uint32_t kind; /* 0: an RTT sample for both directions; 1: a downstream one-way rise */
	uint32_t pad;
	uint64_t a, b; /* rtt_ns and base_ns, or the rise */
};

struct dp_ar_group {
	unsigned int n;                            /* shards */
	struct rte_ring *ring[SHAPER_MAX_WORKERS]; /* worker i -> the leader; [0] unused */
	struct dp_dir *dir[SHAPER_NUM_DIRS][SHAPER_MAX_WORKERS]; /* to sum what the line carried */
	_Atomic uint64_t rate[SHAPER_NUM_DIRS]; /* the leader's, for every shard to take */
	uint64_t lost;                          /* samples a full ring turned away */
};

struct dp_rtt {
	struct rtt_table *table;
	struct autorate ar[SHAPER_NUM_DIRS];
	bool ar_on[SHAPER_NUM_DIRS];
	struct owd_table *owd; /* with autorate: the downstream one-way delay */
	/* The interval in progress and the last whole one, per side. */
	uint64_t iv_start[RTT_SIDES];
	struct rtt_hist iv_base[RTT_SIDES];
	struct ctl_rtt last[RTT_SIDES];
	struct dp_ar_log log[SHAPER_NUM_DIRS];
	/* With several workers and autorate: the group, and which shard this is. */
	struct dp_ar_group *group;
	unsigned int shard;
	uint64_t applied[SHAPER_NUM_DIRS]; /* the group rate this shard last took */
};

/*
 * Several workers with autorate: link their tables into one group (rings
 * made on the leader's socket). NULL with a message in err on failure.
 */
struct dp_ar_group *dp_rtt_group_create(struct dp_rtt **r, struct dp_dir *const *up,
					struct dp_dir *const *down, unsigned int n, char *err,
					size_t errlen);
void dp_rtt_group_free(struct dp_ar_group *g);

/* NULL on allocation failure. Autorate per c->autorate[]. */
struct dp_rtt *dp_rtt_create(const struct shaper_config *c);
void dp_rtt_free(struct dp_rtt *r);
/*
 * Not the worker: a rate-limited log line (info) for each cut and path
 * decision of autorate the worker has made since the last call. Call it
 * now and then (the daemon's main loop, about once a second).
 */
void dp_rtt_log_decisions(struct dp_rtt *r);
/*
 * Worker: the packets of direction dir left the scheduler: samples in
 * flight are timed from here, leaving out our own queue (rtt_departed).
 */
void dp_rtt_departed(struct dp_rtt *r, enum shaper_dir dir, struct sh_pkt **pkts, unsigned int n,
		     uint64_t now);
/*
 * Worker: time the TCP packets of a classified burst of direction dir. The
 * samples it completed go to smp (room for n; each names its packet) and
 * their count is returned: per-subscriber RTT takes them from there.
 */
unsigned int dp_rtt_burst(struct dp_rtt *r, enum shaper_dir dir, struct sh_pkt **pkts,
			  unsigned int n, uint64_t now, struct rtt_sample *smp);

/*
 * One shard of a direction: the worker's hot state for it. It lives in its
 * worker's context (struct dp_lcore), on the worker's NUMA node and on
 * cache lines no other worker writes.
 */
struct dp_dir {
	enum shaper_dir dir;
	int socket;               /* NUMA node of its worker: its schedulers' memory */
	struct sched_alloc alloc; /* allocates on socket (dp_dir_alloc) */
	struct dp_rtt *rtt;       /* shared with the other direction of the worker; NULL = off */
	uint16_t rx_port, tx_port;
	uint16_t queue;         /* its rx queue on rx_port and tx queue on tx_port */
	uint32_t shard;         /* its index among the direction's shards */
	uint32_t n_shards;      /* the direction's shards (1: the whole direction) */
	struct dp_steer *steer; /* software steering; NULL with one shard or RSS */
	struct dp_stick *stick; /* one port on a stick: shared with the worker's other direction */
	/* With several shards: its part of the link rate (share_tick). */
	struct share_group *share_group; /* NULL with one shard */
	struct share_shard share;
	enum share_by share_by;   /* what the weight counts: hosts or flows */
	struct share_hosts hosts; /* the active hosts (or flows), the shard's weight */
	struct sched *sched;
	/*
	 * Per-subscriber shaping: every frame goes to its subscriber's CAKE,
	 * and sched is the link's own scheduler inside it (unknown addresses).
	 * NULL = the link's scheduler alone. Shared by the worker's two
	 * directions (dp_subs_attach); with several workers each shard has
	 * its own, and a subscriber's frames are steered to its shard.
	 */
	struct sub_sched *subs;
	uint32_t subs_cakes;        /* CAKEs in subs's pool for this direction (its budget) */
	struct emulate *emu;        /* WAN emulator after the scheduler, or NULL */
	struct emu_params emu_path; /* its parameters: the control thread's copy */
	struct classify_key key;
	uint16_t n_pending; /* frames the output port refused, sent first next turn */
	bool backlogged;    /* scheduler or pending frames at the end of the last turn */
	bool owing;         /* and it released one since the backlog began (backlogged_ns) */
	/*
	 * Fail-open: its worker's line_until (NULL without fail-open). Each rx
	 * burst is judged by the clock read after it: a frame read while
	 * shaperd does not hold the line, the bridge forwarded, and it is
	 * dropped as stale. rx_drained: the last such read emptied the queue.
	 */
	const uint64_t *line_until;
	bool rx_drained;
	uint64_t turn_ns; /* the clock of the last turn (backlogged_ns) */
	struct rte_mbuf *pending[DP_TX_PENDING_MAX];
	uint32_t pending_len[DP_TX_PENDING_MAX]; /* their pkt_len, read while they were hot */
	struct ctl_dir_counters stats;           /* written only by the owning worker */
	struct dp_dir_ctl *ctl;                  /* mailbox and snapshots (dp_dir_control_init) */
	struct sched_move move;                  /* a discipline swap in progress (SWAP) */
	/*
	 * The scheduler counters of the schedulers a swap replaced, so that
	 * "packets", "bytes", "overlimits"... carry on instead of restarting.
	 */
	struct sched_stats carried; /* only the fields sched_counters_add sums */
	/*
	 * Autorate: the time this shard's schedulers wrote off (its worker
	 * away while packets waited), as of its last control turn, for the
	 * group's leader (dp_rtt_autorate).
	 */
	uint64_t ar_lost_ns;
	/* The direction's own mbuf pool (rx of its input port) and its budget. */
	struct rte_mempool *pool;
	uint32_t truesize;   /* buffer memory one of its mbufs pins */
	uint32_t pool_mbufs; /* its size */
	uint64_t mbuf_fixed; /* held outside the scheduler at worst (rings, emulator, caches) */
} __rte_cache_aligned;

/*
 * The allocator d's schedulers use: on d->socket once dp_dir_set_socket
 * gave it one, else calloc (NULL).
 */
const struct sched_alloc *dp_dir_alloc(const struct dp_dir *d);
/* d's schedulers and control block go on NUMA node socket. */
void dp_dir_set_socket(struct dp_dir *d, int socket);
/* d's worker's NUMA node, or SOCKET_ID_ANY before dp_dir_set_socket. */
int dp_dir_socket(const struct dp_dir *d);

/*
 * A worker: read every loop by its own lcore only, but for the heartbeat,
 * which it writes every loop and the main thread reads, on a line of its
 * own (the struct is padded to whole lines, so no neighbour shares it).
 */
struct dp_worker {
	unsigned int lcore;
	unsigned int n_dirs;
	struct dp_dir *dirs[SHAPER_NUM_DIRS];
	uint32_t burst;
	uint32_t idle_sleep_us;
	uint32_t rt_priority; /* SCHED_FIFO priority of the worker thread; 0 = leave it */
	/*
	 * Fail-open: until when shaperd holds the line, on dp_now_ns()'s clock
	 * (struct dp_failopen's line_until); NULL without fail-open, always held.
	 */
	const uint64_t *line_until;
	alignas(RTE_CACHE_LINE_SIZE) uint64_t heartbeat; /* loops run; the service watchdog
							    and dp_workers_quiesced read it */
	/*
	 * Fail-open: the last turn, while the line was not held, that found every
	 * rx queue of the worker empty (dp_now_ns()); the lease thread grants
	 * the lease only after it, so nothing the bridge forwarded is sent again.
	 */
	uint64_t drained_ns;
} __rte_cache_aligned;

/*
 * A worker's context: the worker and the shards it serves (one of each
 * direction), in one block on the worker's NUMA node, cache-line aligned,
 * so no two workers' hot state shares a line.
 */
struct dp_lcore {
	struct dp_worker w;
	struct dp_dir dir[SHAPER_NUM_DIRS];
};

/* The context of a worker on lcore (zeroed, on its NUMA node); NULL if out of memory. */
struct dp_lcore *dp_lcore_create(unsigned int lcore);
void dp_lcore_free(struct dp_lcore *lc);

/*
 * Cache lines that the hot state of two of the n workers share (each
 * worker's struct dp_worker and its shards' struct dp_dir, as allocated):
 * 0 when every worker has lines of its own. shaperd prints it at start-up.
 */
unsigned int dp_lcore_shared_lines(struct dp_lcore *const *lc, unsigned int n);

/*
 * Worker: after a sched_update or a swap, the shard's scheduler shapes at
 * its share again (the update set the link's rate).
 */
void dp_share_reapply(struct dp_dir *d, uint64_t now);

/*
 * Worker: after sched_update took p (config.set, or autorate's rate), the
 * rest follows it: the shard's share, and with subscribers the link's rate
 * their allocation splits and their buffer.
 */
void dp_rate_applied(struct dp_dir *d, const struct sched_params *p, uint64_t now);

/*
 * Where the direction's received packets are right now, besides sent and
 * dropped: c's sched_qlen, swap_qlen, emulator_qlen and tx_pending (and the
 * pool's mbufs in use at the same moment). Only
 * between turns (by the worker, or after it stopped): then no packet is
 * between rx and the scheduler or on a drops list.
 */
void dp_dir_count_queued(const struct dp_dir *d, struct ctl_dir_counters *c);

/* The direction's scheduler statistics, counters carried across discipline swaps. */
void dp_dir_sched_stats(const struct dp_dir *d, struct sched_stats *st);

/* Ask every worker to stop (signal-safe). */
void dp_request_stop(void);
bool dp_stop_requested(void);

/*
 * While a port is paused no worker calls its rx or tx burst: received
 * frames are not polled and frames for it wait in their queue. The control
 * thread pauses a port, waits for dp_workers_quiesced, and may then stop
 * and start it (a net_memif client reconnecting, src/dataplane/port.c).
 */
void dp_port_set_paused(uint16_t port_id, bool paused);

/*
 * Whether every worker (beats: their heartbeats) began a new loop within
 * timeout_us: from then on each of them sees what dp_port_set_paused set
 * before this call. Called by the control thread only.
 */
bool dp_workers_quiesced(const uint64_t *const *beats, unsigned int n, unsigned int timeout_us);

/* The worker loop; arg is a struct dp_worker *. Returns when stop is requested. */
int dp_worker_main(void *arg);

/* Drop every packet still held by a direction (scheduler and tx pending), counted as shutdown. */
void dp_dir_drain(struct dp_dir *d);

/*
 * One data turn of a direction (worker side): send what was held, receive
 * a burst, classify and enqueue, dequeue what the shaper releases, send.
 * Returns the frames moved; *next_due is lowered to when the shaper next
 * releases a frame.
 */
unsigned int dp_dir_turn(struct dp_dir *d, uint64_t now, uint32_t burst, uint64_t *next_due);

/* The per-subscriber scheduler's direction of d. */
static inline enum sub_dir
sub_dir_of(const struct dp_dir *d)
{
	return d->dir == SHAPER_DOWN ? SUB_DOWN : SUB_UP;
}

/*
 * Per-subscriber shaping for a worker's two directions (src/dataplane/subs.c):
 * load the files c->subscribers names, make the per-subscriber scheduler
 * around each direction's scheduler (which serves unknown addresses) and
 * hang it on both. 0, or -errno with err. Before the worker runs.
 */
int dp_subs_attach(struct dp_dir *dirs[SHAPER_NUM_DIRS], const struct shaper_config *c, char *err,
		   size_t errlen);
/*
 * The same for the n shards of both directions (down[i] and up[i]: worker
 * i's): each shard gets a scheduler of its own over the whole set, and the
 * subscribers are split among the shards by their top-level node (or, under
 * the link, by their id), for dp_subs_steer_burst. With n > 1 the shards'
 * share groups and steering must be set up first.
 */
int dp_subs_attach_shards(struct dp_dir *const *down, struct dp_dir *const *up, uint32_t n,
			  const struct shaper_config *c, char *err, size_t errlen);
/* After dp_dir_drain of both directions: free it (the link schedulers stay). */
void dp_subs_detach(struct dp_dir *dirs[SHAPER_NUM_DIRS]);
void dp_subs_detach_shards(struct dp_dir *const *down, struct dp_dir *const *up, uint32_t n);
/*
 * Worker, with subscribers and software steering: look up each frame's
 * subscriber (subs[i], SUB_NONE if nobody's) and send it to its
 * subscriber's shard, or by LAN host if nobody's (dp_steer_burst_to).
 * Returns the frames that stay, compacted with their subs[].
 */
unsigned int dp_subs_steer_burst(struct dp_dir *d, struct sh_pkt **pkts, unsigned int n,
				 uint32_t *subs, struct sh_pkt_list *drops);
/*
 * Worker, with subscribers and several shards: the share tick. The shard's
 * demand is what its last allocation gave its subscribers (all it can get
 * if that used up its part of the link), weighed by its busy top-level
 * nodes; its part of the link becomes the allocation's link rate.
 */
void dp_subs_share_tick(struct dp_dir *d, uint64_t now);
/*
 * Worker: a classified burst into the subscribers' CAKEs (subs: each
 * frame's subscriber if the steering looked it up, else NULL), and the RTT
 * samples it completed (dp_rtt_burst) to the subscribers they time.
 */
void dp_subs_enqueue_burst(struct dp_dir *d, struct sh_pkt **pkts, unsigned int n,
			   const uint32_t *subs, const struct rtt_sample *smp, unsigned int nsmp,
			   uint64_t now, struct sh_pkt_list *drops);
/* Bytes each worker's share of that takes, past the scheduler's (with several workers). */
size_t dp_subs_shard_bytes_for(uint32_t nsubs, uint32_t nnodes);
/*
 * The joint packet limit of d's subscriber CAKEs and the link's scheduler
 * with params p: what the budget gives the link's scheduler alone. At
 * attach and on every live change of p (worker side). No-op without.
 */
void dp_subs_set_limit(struct dp_dir *d, const struct sched_params *p);
/* The subscribers d shapes (ids, plans, nodes; read-only), or NULL. */
const struct sub_set *dp_subs_set(const struct dp_dir *d);
/*
 * Control thread: shape set (taken, freed either way) from now on, with
 * the subscriber slots of the running one (sub_sched_change_build), on
 * every one of the n shards (down[i]: shard i's downstream direction; the
 * two directions share the scheduler and the worker). New address tables
 * are built when addresses is true, else shared. reset: the slots that
 * take a new subscriber (idle on every shard). Nothing is posted while a
 * shard's mailbox is busy; the old state is freed here once each worker
 * has swapped it out. 0, or -errno with err (naming the worker).
 */
int dp_subs_change(struct dp_dir *const *down, uint32_t n, struct sub_set *set, bool addresses,
		   const uint32_t *reset, uint32_t nreset, unsigned int timeout_ms, char *err,
		   size_t errlen);

/* Worker: autorate's decision for d, applied with sched_update. */
void dp_rtt_autorate(struct dp_dir *d, uint64_t now);
/* Worker: a live update keeps autorate's rate while autorate runs. */
void dp_rtt_update_params(const struct dp_dir *d, struct sched_params *p);
/* Worker: fill the RTT of n flow facts of d. */
void dp_rtt_facts(const struct dp_dir *d, struct sched_flow_fact *f, unsigned int n);
/* Worker: what d's snapshot shows (and close the interval when it is over). */
void dp_rtt_publish(struct dp_dir *d, struct ctl_rtt *out, uint64_t now);
/* Worker: zero d's histogram (stats.reset). */
void dp_rtt_reset(struct dp_dir *d);

#endif
