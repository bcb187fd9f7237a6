/*
 * One direction's scheduler: the seam between the data plane and the
 * queueing discipline (fifo, fq_codel or cake). Plain C, no DPDK, no clock:
 * every entry point takes the current time in nanoseconds, so the same code
 * runs in the daemon and in the simulated-time tests.
 *
 * Packets the scheduler decides to drop are appended to a caller-supplied
 * list (never freed here), so the caller frees them in bulk and counts them.
 */
#ifndef SHAPER_SCHED_H
#define SHAPER_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "shaper/limits.h"
#include "shaper/pkt.h"

#define SCHED_MAX_TINS 8
#define SCHED_NAME_LEN 24

/* SCHED_DISC_ prefix: POSIX <sched.h> already defines SCHED_FIFO. */
enum sched_discipline {
	SCHED_DISC_FIFO = 0,
	SCHED_DISC_FQ_CODEL,
	SCHED_DISC_CAKE,
};

/* Values follow TCA_CAKE_DIFFSERV_MODE. */
enum sched_diffserv {
	SCHED_DIFFSERV3 = 0,
	SCHED_DIFFSERV4 = 1,
	SCHED_DIFFSERV8 = 2,
	SCHED_BESTEFFORT = 3,
	SCHED_PRECEDENCE = 4,
};

/* Values follow TCA_CAKE_FLOW_MODE: bit 1 src host, bit 2 dst host, bit 4 flows. */
enum sched_isolation {
	SCHED_FLOWBLIND = 0,
	SCHED_SRCHOST = 1,
	SCHED_DSTHOST = 2,
	SCHED_HOSTS = 3,
	SCHED_FLOWS = 4,
	SCHED_DUAL_SRCHOST = 5,
	SCHED_DUAL_DSTHOST = 6,
	SCHED_TRIPLE_ISOLATE = 7,
};

enum sched_framing {
	SCHED_FRAMING_NONE = 0, /* noatm */
	SCHED_FRAMING_ATM = 1,  /* 48 bytes of payload per 53-byte cell */
	SCHED_FRAMING_PTM = 2,  /* 64b/65b: one byte per started 64 */
};

enum sched_ack_filter {
	SCHED_ACK_FILTER_OFF = 0,
	SCHED_ACK_FILTER_ON = 1,
	SCHED_ACK_FILTER_AGGRESSIVE = 2,
};

/*
 * Drop reasons, as an X-macro so every counter has a name; the third column
 * says what it counts.
 * The scheduler uses the first three; the data plane adds the rest.
 */
#define SHAPER_DROP_REASONS(X)                                                                     \
	X(AQM, "aqm", "dropped by CoDel/COBALT (or BLUE) at dequeue")                              \
	X(OVERFLOW, "overflow", "dropped because the buffer limit was exceeded")                   \
	X(ACK_FILTER, "ack_filter", "redundant TCP ACK removed by the ACK filter")                 \
	X(EMULATED_LOSS, "emulated_loss", "lost on purpose by the WAN emulator")                   \
	X(EMULATOR_FULL, "emulator_full", "the WAN emulator's delay line was full")                \
	X(NO_BUFFER, "no_buffer", "no mbuf to copy a frame from another pool into")                \
	X(STEER_FULL, "steer_full", "the ring to the worker of the frame's shard was full")        \
	X(STALE, "stale", "received while the bridge carried the line (fail-open), so not sent")   \
	X(OTHER_VLAN, "other_vlan", "on one port on a stick: untagged, or on neither side's VLAN") \
	X(SHUTDOWN, "shutdown", "still queued when the daemon stopped")

enum shaper_drop_reason {
#define SHAPER_DROP_ENUM(id, name, help) SHAPER_DROP_##id,
	SHAPER_DROP_REASONS(SHAPER_DROP_ENUM)
#undef SHAPER_DROP_ENUM
	SHAPER_DROP_MAX
};

/* Name ("aqm") of a drop reason. */
const char *shaper_drop_name(enum shaper_drop_reason r);

/*
 * Count the drops appended to dropped since its tail was old_tail (NULL: it
 * was empty) into by_reason, a reason out of range as aqm; how many there
 * were. The one walk of new drops that the scheduler's counters and each
 * subscriber's go through.
 */
static inline uint32_t
sched_count_new_drops(const struct sh_pkt_list *dropped, const struct sh_pkt *old_tail,
		      uint64_t by_reason[SHAPER_DROP_MAX])
{
	uint32_t n = 0;

	for (const struct sh_pkt *d = sh_pkt_list_after(dropped, old_tail); d != NULL;
	     d = d->next, n++)
		by_reason[d->drop_reason < SHAPER_DROP_MAX ? d->drop_reason : SHAPER_DROP_AQM]++;
	return n;
}

/* Everything that configures one direction. Units: bytes, bytes/s, µs. */
struct sched_params {
	enum sched_discipline discipline;
	uint64_t rate; /* shaper rate in bytes/s; 0 = unlimited */
	uint32_t mtu;  /* largest L2 frame, for mtu_time (default 1514) */
	bool upstream; /* LAN->WAN: the internal host is the source */
	uint64_t seed; /* seeds hash key, quantum dither and BLUE draws */
	/*
	 * Buffer memory one queued packet pins whatever its length (an mbuf's
	 * truesize; shaperd sets it from its pool, it is not a config key),
	 * 0 = mtu. CAKE counts a derived memory limit in packets of this
	 * footprint, as Linux counts full-size frames: see cake_limit_bytes.
	 */
	uint32_t pkt_mem;
	/*
	 * How far the shaper's clock may fall behind now (ns) before the lag
	 * is written off: after a stall (the worker not scheduled) a backlog
	 * leaves at the rate again instead of as a catch-up burst. SCHED_LAG_AUTO
	 * = one MTU time at the rate, at least SCHED_LAG_AUTO_MIN_NS.
	 */
	uint64_t lag_limit_ns;

	/* cake */
	enum sched_diffserv diffserv;
	enum sched_isolation isolation;
	uint32_t rtt_us;    /* CoDel interval (default 100000) */
	uint32_t target_us; /* CoDel target (default 5000) */
	bool overhead_mode; /* false = raw: charge the L2 length as is */
	int32_t overhead;   /* bytes added per packet, -64..256 */
	uint32_t mpu;       /* minimum packet unit, 0..256 */
	enum sched_framing framing;
	bool wash;    /* clear DSCP on the way out */
	bool ingress; /* drops count against the rate */
	bool nat;     /* tc's "nat": accepted, no effect (a bridge has no conntrack) */
	bool ecn;     /* CE-mark ECT packets instead of dropping */
	/*
	 * L4S (RFC 9331), cake and fq_codel: CE-mark ECT(1) packets (and CE
	 * ones, unless their flow last sent ECT(0) or Not-ECT) that waited
	 * longer than l4s_step_us, whatever COBALT or CoDel says; classic
	 * packets see COBALT or CoDel alone. Off: sch_cake's and Linux's
	 * fq_codel's behaviour exactly.
	 */
	bool l4s;
	bool nqb; /* DSCP 45 (NQB) to the low-latency tin, not best effort */
	uint32_t l4s_step_us;
	enum sched_ack_filter ack_filter;
	uint64_t memlimit; /* bytes of buffer memory; 0 = derive from rate */
	/* A host is its address on its VLAN (ids of the outer two tags), for
	 * trunks where address space repeats across VLANs; false = the address. */
	bool vlan_hosts;
	/*
	 * The size of a CAKE, fixed when it is made (not config keys): flow
	 * queues per tin, a power of two 16..1024 (0 = 1024, as sch_cake), and
	 * whether only the tins of the diffserv mode get queues (a later
	 * change to a mode with more tins is then refused). A subscriber's CAKE
	 * is made small this way: 4 tins x 256 queues is a ninth of 8 x 1024.
	 */
	uint32_t cake_queues;
	bool cake_mode_tins;

	/* fifo */
	uint32_t fifo_limit_pkts;  /* 0 = no packet limit */
	uint64_t fifo_limit_bytes; /* 0 = no byte limit */

	/* fq_codel */
	uint32_t fqc_flows;           /* 1..65536, default 1024 */
	uint32_t fqc_quantum;         /* default 1514 */
	uint32_t fqc_limit;           /* packets, default 10240 */
	uint64_t fqc_memory_limit;    /* bytes, default 32 MiB */
	uint32_t fqc_target_us;       /* default 5000 */
	uint32_t fqc_interval_us;     /* default 100000 */
	uint32_t fqc_ce_threshold_us; /* 0 = off */
	uint32_t fqc_drop_batch;      /* default 64 */
};

/*
 * The L4S marking step's default (µs): half the millisecond L4S aims at,
 * since a scalable sender overshoots the step by a round trip's growth
 * (a packet or two); a 1 ms step gave a 1.2-1.3 ms p99 in tests/sim.
 */
#define SCHED_L4S_STEP_US 500u

#define SCHED_LAG_AUTO        UINT64_MAX
#define SCHED_LAG_AUTO_MIN_NS 250000ull /* covers a worker turn and a nap's overshoot */
#define SCHED_LAG_MAX_NS      10000000000ull

/* Fill p with tc's defaults for the given discipline. */
void sched_params_default(struct sched_params *p, enum sched_discipline d);

/* CAKE's flow queues per tin, and tins with queues, for p (cake_queues, cake_mode_tins). */
uint32_t sched_cake_queues(const struct sched_params *p);
uint32_t sched_cake_tins(const struct sched_params *p);

/*
 * Sojourn-time histogram (enqueue to dequeue, as the scheduler saw it), in
 * buckets of about 19 % width: below 4 µs one per µs, then four per octave.
 * Times are counted in units of 1024 ns ("µs" below); the last bucket holds
 * everything from about 7.5 s up.
 */
#define SCHED_SOJOURN_BUCKETS 84

static inline unsigned int
sched_sojourn_bucket(uint64_t ns)
{
	uint64_t v = ns >> 10;
	unsigned int o, b;

	if (v < 4)
		return (unsigned int)v;
	o = 63u - (unsigned int)__builtin_clzll(v);
	b = 4u * (o - 1u) + (unsigned int)((v >> (o - 2u)) & 3u);
	return b < SCHED_SOJOURN_BUCKETS ? b : SCHED_SOJOURN_BUCKETS - 1;
}

/* Lower bound of bucket b in ns (the upper bound is that of b + 1). */
static inline uint64_t
sched_sojourn_bucket_lo_ns(unsigned int b)
{
	if (b < 4)
		return (uint64_t)b << 10;
	return ((uint64_t)(4u + (b & 3u)) << (b / 4u - 1u)) << 10;
}

/* Per-tin statistics, named after tc -s -j qdisc show. Times in µs. */
struct sched_tin_stats {
	char name[SCHED_NAME_LEN];
	uint64_t threshold_rate; /* bytes/s */
	uint32_t target_us;
	uint32_t interval_us;
	uint32_t peak_delay_us;
	uint32_t avg_delay_us;
	uint32_t base_delay_us;
	uint64_t sent_packets; /* accepted at enqueue (CAKE's quirk) */
	uint64_t sent_bytes;
	uint64_t backlog_bytes;
	uint64_t way_indirect_hits;
	uint64_t way_misses;
	uint64_t way_collisions;
	uint64_t drops;
	uint64_t ecn_mark;
	uint64_t ack_drops;
	uint64_t ect1_packets; /* arrived ECT(1) (counted with l4s on) */
	uint64_t step_marks;   /* CE-marked at the L4S step (not in ecn_mark) */
	uint32_t sparse_flows;
	uint32_t bulk_flows;
	uint32_t unresponsive_flows;
	uint32_t max_pkt_len;
	uint32_t flow_quantum;
	uint64_t sojourn[SCHED_SOJOURN_BUCKETS]; /* packets by sojourn time */
	/*
	 * The part of sojourn served from the new-flows list: packets of
	 * sparse flows (a flow with no queue when the packet came, that has
	 * not used up its quantum since), such as a ping beside bulk flows.
	 */
	uint64_t sparse_sojourn[SCHED_SOJOURN_BUCKETS];
};

/* Direction-wide statistics. */
struct sched_stats {
	uint64_t enqueued_pkts; /* handed to sched_enqueue */
	uint64_t enqueued_bytes;
	uint64_t dequeued_pkts; /* returned by sched_dequeue */
	uint64_t dequeued_bytes;
	uint64_t dropped[SHAPER_DROP_MAX]; /* by reason, scheduler's own drops */
	uint64_t backlog_pkts;
	uint64_t backlog_bytes;
	uint64_t overlimits;
	uint64_t lag_skips;      /* times the shaper's clock lag was written off */
	uint64_t lag_skipped_ns; /* time written off (stalls beyond lag_limit) */
	uint64_t ecn_marked;
	uint64_t memory_used; /* peak buffer memory (CAKE's quirk) */
	uint64_t memory_limit;
	uint64_t capacity_estimate; /* bytes/s */
	uint32_t min_network_size, max_network_size;
	uint32_t min_adj_size, max_adj_size;
	uint32_t avg_hdr_offset;
	uint32_t tin_count;
	struct sched_tin_stats tins[SCHED_MAX_TINS];    /* in tc's display order */
	uint64_t sojourn[SCHED_SOJOURN_BUCKETS];        /* all tins */
	uint64_t sparse_sojourn[SCHED_SOJOURN_BUCKETS]; /* all tins */
};

struct sched;

/*
 * Where a scheduler's memory comes from. shaperd hands each shard's
 * schedulers one that allocates on its worker's NUMA node; NULL means
 * calloc and free. zalloc returns zeroed memory aligned to a cache line
 * (or NULL); the struct must outlive every scheduler made with it.
 */
struct sched_alloc {
	void *(*zalloc)(size_t size, void *ctx);
	void (*free)(void *p, void *ctx);
	void *ctx;
};

/*
 * Create a scheduler. Validates p; on error returns NULL and, if err is not
 * NULL, writes a human-readable reason (errlen bytes at most).
 */
struct sched *sched_create(const struct sched_params *p, char *err, size_t errlen);
/* The same with its memory from a (NULL: calloc). */
struct sched *sched_create_on(const struct sched_params *p, const struct sched_alloc *a, char *err,
			      size_t errlen);
void sched_free(struct sched *s);

/*
 * Queue one packet at time now. Packets that must be dropped (this one or
 * others, e.g. overflow from the fattest flow or a filtered ACK) are
 * appended to dropped. Returns 0 if pkt was queued, 1 if pkt itself was
 * dropped (it is then on the dropped list).
 */
int sched_enqueue(struct sched *s, struct sh_pkt *pkt, uint64_t now, struct sh_pkt_list *dropped);

/*
 * sched_enqueue for pkts[0..n-1] in order, with the per-call accounting
 * done once per burst. Returns how many of them were dropped at once.
 */
unsigned int sched_enqueue_burst(struct sched *s, struct sh_pkt *const *pkts, unsigned int n,
				 uint64_t now, struct sh_pkt_list *dropped);

/*
 * Release the next packet allowed at time now, or NULL if none is due
 * (queue empty or the shaper is holding back). AQM drops made on the way
 * are appended to dropped.
 */
struct sh_pkt *sched_dequeue(struct sched *s, uint64_t now, struct sh_pkt_list *dropped);

/*
 * sched_dequeue repeated into out[] until max packets or the first NULL;
 * returns the count.
 */
unsigned int sched_dequeue_burst(struct sched *s, struct sh_pkt **out, unsigned int max,
				 uint64_t now, struct sh_pkt_list *dropped);

/* Earliest time a dequeue could return a packet; UINT64_MAX if empty. */
uint64_t sched_next_time(const struct sched *s, uint64_t now);

/*
 * Apply new parameters between bursts: queued packets are kept in order,
 * the new rate holds from the next packet. Returns 0 or -EINVAL (with err).
 * Changing the discipline is done by the caller (drain, create, refill).
 */
int sched_update(struct sched *s, const struct sched_params *p, char *err, size_t errlen);

/*
 * Shape at rate bytes/s from now on instead of the configured rate, for a
 * shard that owns part of a link (shaper/share.h): cheap (no validation,
 * no scan of the queues), nothing queued is dropped or reordered, and a
 * packet already being "sent" keeps the part of its transmission time that
 * has elapsed. Buffer limits stay those of the configured rate. The next
 * sched_update returns to the configured rate. -EINVAL if the scheduler is
 * unshaped (params rate 0) or rate is 0.
 */
int sched_set_rate(struct sched *s, uint64_t rate, uint64_t now);

/* Bytes handed to sched_enqueue so far (the shard's arrivals). */
uint64_t sched_enqueued_bytes(const struct sched *s);

/*
 * Make an empty scheduler what sched_create(p) would return (same
 * discipline; counters, flow tables and AQM state cleared), without
 * allocating where the discipline allows it: CAKE's state is a megabyte.
 * For the fuzz harness, which runs thousands of programs a second.
 * Returns 0, -EINVAL (p refused or another discipline; s unchanged) or
 * -EBUSY (packets still queued: flush first).
 */
int sched_reinit(struct sched *s, const struct sched_params *p, char *err, size_t errlen);

/* Remove every queued packet, in order, onto out (shutdown, discipline swap). */
void sched_flush(struct sched *s, struct sh_pkt_list *out);

/* Copy the statistics. Cheap enough to call between bursts. */
void sched_get_stats(const struct sched *s, struct sched_stats *st);
void sched_reset_stats(struct sched *s);

const struct sched_params *sched_get_params(const struct sched *s);

/*
 * Fold shard `from`'s statistics into `into`, for a direction shaped by
 * several shards with the same params: into starts as the first shard's
 * copy and takes the others in turn. Counters, backlogs, flow counts and histograms add up; tin
 * threshold rates add up to the link (each shard reports its share);
 * peaks and maximum sizes take the maximum, minimums the minimum, average
 * and base delays are weighted by the packets each shard sent. Memory
 * figures add up (the peak is then an upper bound of the joint peak);
 * capacity_estimate, the configured link, stays as it is.
 */
void sched_stats_merge(struct sched_stats *into, const struct sched_stats *from);

/*
 * The most packets a scheduler with params p can hold at once when each
 * packet pins truesize bytes of buffer (one mbuf): what the mbuf pool must
 * hold for it. SCHED_UNBOUNDED if nothing limits it (p must be valid).
 */
#define SCHED_UNBOUNDED UINT64_MAX
uint64_t sched_max_packets(const struct sched_params *p, uint32_t truesize);

/* The config keys that bound sched_max_packets for p's discipline, for messages. */
const char *sched_limit_keys(const struct sched_params *p);

/* A byte limit charges every frame at least this much (a minimum Ethernet frame). */
#define SCHED_MIN_CHARGE 60u

/*
 * What the worker copies about one queued flow for the control socket's
 * "flows" command: plain values and a few header bytes, never a pointer, so
 * the control thread sorts, selects and formats them on its own time.
 */
#define SCHED_FACT_ADDR_LEN 16

struct sched_flow_fact {
	uint64_t backlog_bytes;
	uint64_t sojourn_ns; /* age of its oldest packet when it was visited */
	uint32_t packets;
	uint16_t queue;        /* queue index inside the tin */
	uint8_t tin;           /* display order (the index in sched_stats.tins) */
	uint8_t family;        /* 4, 6, or 0 when the head packet is not IP */
	uint8_t l4_proto;      /* IP protocol number, 0 if none */
	uint16_t sport, dport; /* 0 without TCP/UDP ports */
	uint8_t src[SCHED_FACT_ADDR_LEN], dst[SCHED_FACT_ADDR_LEN]; /* 4 or 16 bytes used */
	uint32_t vlan; /* classify_vlan_key of the head packet (0 = untagged) */
	/* Filled by the worker from its passive RTT table (not the scheduler); 0 = none. */
	uint64_t rtt_wan_ns, rtt_lan_ns;
	uint16_t shard; /* filled by the data plane: the shard that queues it */
};

#define SCHED_FACTS_DONE  UINT32_MAX /* the cursor once every queue was visited */
/* Queues the worker visits per turn: a cold head packet each, ~0.3 us: ~10 us a turn. */
#define SCHED_FACTS_SLICE 32u

/*
 * How many queue slots a walk of a scheduler with these params visits:
 * the most facts sched_flow_facts can write in a whole walk (0: fifo).
 */
uint32_t sched_flow_slots(const struct sched_params *p);

/*
 * One slice of a walk over the queues: visit up to max_slots queue slots
 * from *cursor (0 to start), append a fact for each non-empty one to out
 * (room at most), and advance *cursor; it is SCHED_FACTS_DONE once the walk
 * is complete. Returns the facts written. O(max_slots), no allocation: the
 * worker calls it once per turn. Flows are seen as they are when visited,
 * so a walk over several turns is not one instant's picture.
 */
unsigned int sched_flow_facts(const struct sched *s, uint32_t *cursor, unsigned int max_slots,
			      uint64_t now, struct sched_flow_fact *out, unsigned int room);

/*
 * Order facts largest backlog first; equal backlogs keep their walk order
 * (tin, then queue). Control-thread work: O(n log n).
 */
void sched_flow_facts_sort(struct sched_flow_fact *f, unsigned int n);

/* ------------------------------------------------------------------------ */
/* Enqueue stamps and moving a backlog between schedulers                    */

/*
 * sched_enqueue_burst that keeps each packet's enq_ns (clamped to now)
 * instead of stamping now: for packets that were already waiting, so the
 * AQM of the scheduler they move into sees how long they have waited.
 */
unsigned int sched_enqueue_stamped_burst(struct sched *s, struct sh_pkt *const *pkts,
					 unsigned int n, uint64_t now, struct sh_pkt_list *dropped);

/* Packets queued now. */
uint32_t sched_backlog_pkts(const struct sched *s);

/*
 * The pacing time written off so far (sched_stats.lag_skipped_ns) without
 * assembling the whole stats: cheap enough to read per scheduler often.
 */
uint64_t sched_lag_skipped_ns(const struct sched *s);

/*
 * For a caller that hands a burst to many schedulers, each out of cache
 * (one CAKE per subscriber): start loading the lines an enqueue of pkt
 * into s will read, without waiting for any. Step 0 reads nothing of s;
 * each later step reads only lines the step before asked for, so a caller
 * runs one step over the whole burst before the next, and by the enqueue
 * the loads have overlapped instead of following one another. Steps a
 * discipline has no use for do nothing; a hint only, never needed.
 */
#define SCHED_PREFETCH_ENQUEUE_STEPS 3u
void sched_prefetch_enqueue(const struct sched *s, const struct sh_pkt *pkt, unsigned int step);

/* The same for a dequeue from s at now (as far as its head packets). */
#define SCHED_PREFETCH_DEQUEUE_STEPS 6u
void sched_prefetch_dequeue(const struct sched *s, uint64_t now, unsigned int step);

/*
 * Take up to max queued packets off s, in sched_flush order (each flow's
 * packets oldest first), onto out; returns how many. The scheduler stays
 * usable. Bounded work per call.
 */
unsigned int sched_flush_some(struct sched *s, struct sh_pkt_list *out, unsigned int max);

/*
 * A discipline swap spread over turns. The new scheduler takes over at
 * once (dequeue serves it); the old one is emptied into it a slice at a
 * time with the packets' original stamps. Packets arriving meanwhile are
 * stamped and held, in arrival order, behind the old backlog (they cannot
 * go into the new scheduler before older packets of their flow), and move
 * last. Nothing is reordered within a flow; the new discipline's limits
 * apply to each packet as it moves (its drops are named, as usual).
 *
 * A step moves at least twice what arrived since the last one, so the held
 * arrivals shrink every turn once the old backlog is gone, however much a
 * turn takes in, and the swap ends. Until then at most SCHED_MOVE_HELD_MAX
 * arrivals are held (more would pin mbufs no budget counts): past it they
 * are dropped as overflow, as a full scheduler would.
 */
#define SCHED_MOVE_SLICE    512u  /* packets moved per turn at least: twice the largest rx burst */
#define SCHED_MOVE_HELD_MAX 4096u /* arrivals held behind the old backlog, at most */
_Static_assert(SCHED_MOVE_SLICE >= 2 * SHAPER_BURST_MAX,
	       "a swap must move more per turn than a turn can receive, or it never ends");

struct sched_move {
	struct sched *from;        /* the old scheduler, NULL when no move runs */
	struct sh_pkt_list staged; /* arrivals during the move, stamped */
	uint32_t arrived;          /* arrivals since the last step */
};

void sched_move_begin(struct sched_move *mv, struct sched *from);

static inline bool
sched_move_active(const struct sched_move *mv)
{
	return mv->from != NULL;
}

/*
 * Hold arrivals during a move, stamped now; those past SCHED_MOVE_HELD_MAX
 * go onto dropped as overflow.
 */
void sched_move_stage(struct sched_move *mv, struct sh_pkt *const *pkts, unsigned int n,
		      uint64_t now, struct sh_pkt_list *dropped);

/*
 * Move up to max packets, or twice the arrivals since the last step if that
 * is more (the old backlog first, then the staged arrivals) into to.
 * Returns true once everything has moved: then mv->from is empty (the
 * caller frees it) and the move is over.
 */
bool sched_move_step(struct sched_move *mv, struct sched *to, unsigned int max, uint64_t now,
		     struct sh_pkt_list *dropped);

/* Everything still waiting to move, in order, onto out (shutdown). */
void sched_move_flush(struct sched_move *mv, struct sh_pkt_list *out);

#endif
