/*
 * The data plane: ports (any PMD: PCI, vdev, existing name), the mbuf pool
 * whose private area holds each packet's struct sh_pkt, and the worker loop
 * that moves frames LAN->WAN (upstream) and WAN->LAN (downstream). With N
 * workers each direction is N shards, one scheduler each: worker i owns
 * rx and tx queue i of both ports and the i-th shard of both directions,
 * frames reach their shard by RSS or by software steering (steer.c), and
 * the shards of a direction share its link rate (shaper/share.h).
 */
#ifndef SHAPER_DATAPLANE_H
#define SHAPER_DATAPLANE_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ethdev.h>
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

#define DP_TX_PENDING_MAX 512
#define DP_POOL_CACHE     256 /* per-lcore mempool cache */
#define DP_POOL_MIN       2047u
#define DP_POOL_MAX       (1u << 24)
/* The mbuf private area holds the packet's struct sh_pkt. */
#define DP_MBUF_PRIV_SIZE RTE_ALIGN_CEIL(sizeof(struct sh_pkt), RTE_MBUF_PRIV_ALIGN)

static inline struct sh_pkt *
dp_mbuf_pkt(struct rte_mbuf *m)
{
	return (struct sh_pkt *)rte_mbuf_to_priv(m);
}

static inline struct rte_mbuf *
dp_pkt_mbuf(struct sh_pkt *p)
{
	return (struct rte_mbuf *)((char *)p - sizeof(struct rte_mbuf));
}

/*
 * What the worker publishes for the control thread every few ms and after
 * every change: a seqlock (odd seq = being written) so readers never stop it.
 */
struct dp_snapshot {
	uint32_t seq;
	uint64_t time_ns;
	struct ctl_dir_counters c;
	struct sched_params params;
	struct sched_stats st;
};

/* Control -> worker requests, posted in the direction's mailbox. */
enum dp_msg_type {
	DP_MSG_UPDATE, /* sched_update with params */
	DP_MSG_SWAP,   /* replace the scheduler (new discipline): queued packets move over */
	DP_MSG_RESET,  /* zero the counters */
	DP_MSG_FLOWS,  /* copy the facts of every queued flow */
};

/*
 * A message owns everything it points to (dp_msg_free releases it all): the
 * scheduler of a SWAP is the new one until the worker installs it, nothing
 * while the worker moves the backlog (the direction holds the old one), and
 * the old one, empty, in the answer; so whoever frees the message frees the
 * right one. SWAP and FLOWS are served a slice per turn; the worker keeps
 * the message until it answers.
 */
struct dp_msg {
	enum dp_msg_type type;
	uint64_t gen; /* the mailbox generation it was posted under */
	struct sched_params params;
	struct sched *sched;           /* SWAP: the new one in, the old one back out */
	struct sched_flow_fact *facts; /* FLOWS: fact_cap of them, filled by the worker */
	unsigned int fact_cap;
	uint32_t cursor; /* FLOWS: the walk's place (sched_flow_facts) */
	int rc;          /* result: 0 / -errno, or the number of facts */
	char err[256];
};

/*
 * A direction's control mailbox: one request slot. The state word holds a
 * generation (bits 8..63, one per posted request) and a state (bits 0..7);
 * every transition is a compare-and-swap of the whole word, so a caller can
 * only ever act on the request it posted itself, never on an older answer.
 *   FREE -> POSTING -> POSTED                 control posts a request
 *   POSTED -> TAKEN -> DONE -> FREE           worker serves, caller collects
 *   POSTED -> FREE                            caller times out first: withdrawn
 *   TAKEN -> ABANDONED -> ORPHANED -> FREE    caller times out while the worker
 *                                             works; the worker answers anyway
 *                                             and the next caller (or
 *                                             dp_dir_control_free) frees it
 * The worker's side is two atomic operations, no lock, no allocation.
 */
enum dp_mbox_state {
	DP_MBOX_FREE,
	DP_MBOX_POSTING,
	DP_MBOX_POSTED,
	DP_MBOX_TAKEN,
	DP_MBOX_DONE,
	DP_MBOX_ABANDONED,
	DP_MBOX_ORPHANED,
};

struct dp_mailbox {
	uint64_t state;     /* gen << 8 | enum dp_mbox_state */
	struct dp_msg *msg; /* written by the poster before POSTED */
};

#define DP_CALL_TIMEOUT_MS 2000 /* how long the control thread waits for an answer */

/*
 * Passive RTT for the two directions of one worker (src/dataplane/rtt_tap.c):
 * one table both feed, and each direction's autorate. Only that worker
 * touches it; the control thread sees it through the snapshots.
 */
#define DP_RTT_FLOWS       32768         /* flows timed at once (64 B each, 2.3 MB in all) */
#define DP_RTT_INTERVAL_NS 1000000000ull /* "the last interval" of stats and telemetry */

struct dp_rtt {
	struct rtt_table *table;
	struct autorate ar[SHAPER_NUM_DIRS];
	bool ar_on[SHAPER_NUM_DIRS];
	struct owd_table *owd; /* with autorate: the downstream one-way delay */
	/* The interval in progress and the last whole one, per side. */
	uint64_t iv_start[RTT_SIDES];
	struct rtt_hist iv_base[RTT_SIDES];
	struct ctl_rtt last[RTT_SIDES];
};

/* NULL on allocation failure. Autorate per c->autorate[]. */
struct dp_rtt *dp_rtt_create(const struct shaper_config *c);
void dp_rtt_free(struct dp_rtt *r);
/* Worker: time the TCP packets of a classified burst of direction dir. */
void dp_rtt_burst(struct dp_rtt *r, enum shaper_dir dir, struct sh_pkt **pkts, unsigned int n,
		  uint64_t now);

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

struct dp_dir {
	enum shaper_dir dir;
	struct dp_rtt *rtt; /* shared with the other direction of the worker; NULL = off */
	uint16_t rx_port, tx_port;
	uint16_t queue;         /* its rx queue on rx_port and tx queue on tx_port */
	uint32_t shard;         /* its index among the direction's shards */
	uint32_t n_shards;      /* the direction's shards (1: the whole direction) */
	struct dp_steer *steer; /* software steering; NULL with one shard or RSS */
	/* With several shards: its part of the link rate (share_tick). */
	struct share_group *share_group; /* NULL with one shard */
	struct share_shard share;
	enum share_by share_by;   /* what the weight counts: hosts or flows */
	struct share_hosts hosts; /* the active hosts (or flows), the shard's weight */
	struct sched *sched;
	struct emulate *emu; /* WAN emulator after the scheduler, or NULL */
	struct classify_key key;
	uint16_t n_pending; /* frames the output port refused, sent first next turn */
	bool backlogged;    /* scheduler or pending frames at the end of the last turn */
	uint64_t turn_ns;   /* the clock of the last turn (backlogged_ns) */
	struct rte_mbuf *pending[DP_TX_PENDING_MAX];
	struct ctl_dir_counters stats; /* written only by the owning worker */
	struct dp_mailbox mbox;        /* control requests */
	struct dp_msg *busy;           /* a request served over several turns, or NULL */
	struct sched_move move;        /* a discipline swap in progress (SWAP) */
	/*
	 * The scheduler counters of the schedulers a swap replaced, so that
	 * "packets", "bytes", "overlimits"... carry on instead of restarting.
	 */
	struct sched_stats carried; /* only the fields sched_counters_add sums */
	struct dp_snapshot *snap;
	uint64_t next_snap_ns;
	/* The direction's own mbuf pool (rx of its input port) and its budget. */
	struct rte_mempool *pool;
	uint32_t truesize;   /* buffer memory one of its mbufs pins */
	uint32_t pool_mbufs; /* its size */
	uint64_t mbuf_fixed; /* held outside the scheduler at worst (rings, emulator, caches) */
};

struct dp_port {
	uint16_t port_id;
	char name[RTE_ETH_NAME_MAX_LEN];
	bool started;
	uint64_t offloads;     /* rx and tx offloads asked of the device */
	bool link_up;          /* as last seen by dp_ports_wait_link or dp_port_watch_link */
	uint32_t link_speed;   /* Mbit/s */
	uint64_t link_changes; /* up/down transitions seen since start */
	uint16_t n_queues;     /* rx and tx queues, one pair per worker */
	bool rss_sharded;      /* RSS puts every frame on its shard's queue */
	uint16_t reta_size;
	uint8_t rss_key_len;
	uint8_t rss_key[64];
};

/* The queues a port opens: one rx and one tx per worker. */
struct dp_port_queues {
	uint16_t n;
	enum share_by by; /* what RSS should keep together, when it can */
	bool lan_side;    /* the LAN host is the frame's source on this port */
};

struct dp_worker {
	unsigned int lcore;
	unsigned int n_dirs;
	struct dp_dir *dirs[SHAPER_NUM_DIRS];
	uint32_t burst;
	uint32_t idle_sleep_us;
	uint32_t rt_priority; /* SCHED_FIFO priority of the worker thread; 0 = leave it */
	uint64_t heartbeat;   /* loops run; the service watchdog reads it (relaxed) */
};

/* Software steering (steer.c) ------------------------------------------- */

/*
 * The rings of a direction's n shards: dirs[i]->steer of each is set up
 * (allocated) with rings between every pair. 0 or -errno with err.
 */
int dp_steer_create(struct dp_dir *const *dirs, uint32_t n, enum share_by by, char *err,
		    size_t errlen);
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
 * Worker: take up to max frames other shards sent this one: an equal part
 * from each ring first, the rest from the rings in turn (the first one
 * rotates every call).
 */
unsigned int dp_steer_take(struct dp_dir *d, struct sh_pkt **pkts, unsigned int max);
/* Drop every frame still in the rings towards d (shutdown). */
void dp_steer_flush(struct dp_dir *d, struct sh_pkt_list *out);

/*
 * Worker: after a sched_update or a swap, the shard's scheduler shapes at
 * its share again (the update set the link's rate).
 */
void dp_share_reapply(struct dp_dir *d, uint64_t now);

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

/* Memory a queued packet pins, charged against the buffer limit. */
uint32_t dp_mbuf_truesize(const struct rte_mempool *mp);

/* dp_mbuf_truesize of the pools dp_pool_create will make (no EAL needed). */
uint32_t dp_mbuf_truesize_planned(void);

/* Who can pin one direction's mbufs at once, at worst (counts of mbufs). */
struct dp_mbuf_budget {
	uint64_t sched;    /* sched_max_packets (SCHED_UNBOUNDED if nothing bounds it) */
	uint32_t emulator; /* the delay line's limit, 0 when it is off */
	uint32_t rx_ring;  /* rx descriptors of the input port */
	uint32_t tx_ring;  /* tx descriptors of the output port: sent, not yet freed */
	uint32_t pending;  /* held after a refused tx */
	uint32_t burst;    /* between rx and the scheduler */
	uint32_t cache;    /* the worker's mempool cache */
	uint32_t shards;   /* the schedulers, rings, hold and cache above are per shard */
	uint64_t steer;    /* in the steering rings between shards */
	uint64_t fixed;    /* all but the schedulers */
	uint64_t total;
};

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

struct rte_mempool *dp_pool_create(const char *name, uint32_t n_mbufs, int socket);

/*
 * Find or create the port named by device (PCI address, vdev string such as
 * "net_af_packet0,iface=lan0", or an existing port name), configure q->n rx
 * and tx queues (RSS over them when there are several: see
 * port->rss_sharded), promiscuous mode, and start it. Returns 0 or -errno
 * with a message in err.
 */
int dp_port_open(struct dp_port *port, const struct shaper_port_config *pc, struct rte_mempool *mp,
		 uint32_t max_frame, const struct dp_port_queues *q, char *err, size_t errlen);

/*
 * Wait up to timeout_ms for the links of ports[0..n) to come up; returns
 * how many are still down (forwarding starts anyway: a bridge's peer may
 * come later).
 */
int dp_ports_wait_link(struct dp_port *ports, unsigned int n, unsigned int timeout_ms);

/*
 * Read the port's link state (control thread, a few times a second) and,
 * when it went down or up since the last look, count it and log it naming
 * the port's role. Returns true on a change.
 */
bool dp_port_watch_link(struct dp_port *port, const char *role);

/* Whether the port's driver keeps rx mbufs past close (net_af_xdp's fill ring). */
bool dp_port_keeps_rx_mbufs(const struct dp_port *port);
void dp_port_close(struct dp_port *port);

/* The port's ethdev counters; 0 or -errno. */
int dp_port_counters(const struct dp_port *port, struct ctl_port_counters *pc);

/* Ask every worker to stop (signal-safe). */
void dp_request_stop(void);
bool dp_stop_requested(void);

/* The worker loop; arg is a struct dp_worker *. Returns when stop is requested. */
int dp_worker_main(void *arg);

/* Drop every packet still held by a direction (scheduler and tx pending), counted as shutdown. */
void dp_dir_drain(struct dp_dir *d);

/* Create the direction's mailbox and snapshot; 0 or -errno. */
int dp_dir_control_init(struct dp_dir *d);
void dp_dir_control_free(struct dp_dir *d);

/* Read a consistent snapshot (control thread); 0 or -EAGAIN if none yet. */
int dp_snapshot_read(const struct dp_dir *d, struct dp_snapshot *out);

/*
 * Post *mp and wait up to timeout_ms for the worker's answer (control
 * thread). Returns 0 (answered: m->rc holds the result), -EBUSY (an earlier
 * request is still with the worker; nothing posted) or -ETIMEDOUT. On
 * return *mp is NULL when the mailbox kept the message (the worker took it
 * and has not answered: it will be freed once it has), else still the
 * caller's to dp_msg_free. A timed-out request the worker never took is
 * withdrawn and not applied.
 */
int dp_dir_call(struct dp_dir *d, struct dp_msg **mp, unsigned int timeout_ms);

/*
 * Whether d's mailbox can take a request now (control thread): an answer
 * nobody collected is freed on the way.
 */
bool dp_dir_mailbox_free(struct dp_dir *d);

/* Free a message and everything it owns (NULL is fine). */
void dp_msg_free(struct dp_msg *m);

/* Worker side: the posted request, now taken, or NULL. Lock-free. */
struct dp_msg *dp_mailbox_take(struct dp_dir *d);
/* Worker side: hand back the answer to a request dp_mailbox_take returned. */
void dp_mailbox_answer(struct dp_dir *d, struct dp_msg *m);

/*
 * Serve one request, or its next slice (worker side, between bursts): call
 * once per turn with the same message until it returns true, then answer.
 * A slice is bounded: SCHED_FACTS_SLICE queues of a FLOWS walk, or
 * SCHED_MOVE_SLICE packets of a SWAP's backlog.
 */
bool dp_dir_handle_msg(struct dp_dir *d, struct dp_msg *m, uint64_t now);

/*
 * The worker's control turn: serve a slice of the request in progress (or
 * take the next one), answer it once complete, publish the snapshot when due.
 */
void dp_control_turn(struct dp_dir *d, uint64_t now);

/*
 * One data turn of a direction (worker side): send what was held, receive
 * a burst, classify and enqueue, dequeue what the shaper releases, send.
 * Returns the frames moved; *next_due is lowered to when the shaper next
 * releases a frame.
 */
unsigned int dp_dir_turn(struct dp_dir *d, uint64_t now, uint32_t burst, uint64_t *next_due);

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

/* What the control server needs to reach the data plane. */
struct dp_control {
	uint32_t n_shards;
	struct dp_dir *dirs[SHAPER_NUM_DIRS][SHAPER_MAX_WORKERS]; /* each direction's shards */
	struct dp_port *ports[SHAPER_NUM_PORTS];
	unsigned int timeout_ms; /* mailbox answer timeout; 0 = DP_CALL_TIMEOUT_MS */
};

void dp_control_backend(struct dp_control *ctl, struct ctl_backend *be);

/* Register /shaper/... telemetry commands served through be. */
void dp_telemetry_register(const struct ctl_backend *be);
/*
 * Refuse further /shaper/... requests and wait for those in flight: after
 * this, what be reaches may be freed (the telemetry thread lives until
 * rte_eal_cleanup).
 */
void dp_telemetry_shutdown(void);

/*
 * Nanoseconds since start from the TSC (set up once by dp_clock_init, which
 * measures the TSC's frequency for 100 ms against CLOCK_MONOTONIC_RAW).
 */
void dp_clock_init(void);
uint64_t dp_now_ns(void);
uint64_t dp_tsc_hz(void); /* the frequency in use */
/* Measure the TSC against CLOCK_MONOTONIC_RAW over ms milliseconds; 0 on failure. */
uint64_t dp_tsc_hz_measure(unsigned int ms);
/* Ticks per second from two (tsc, ns) samples; 0 if they do not advance. */
uint64_t dp_tsc_hz_from_samples(uint64_t tsc0, uint64_t ns0, uint64_t tsc1, uint64_t ns1);

#endif
