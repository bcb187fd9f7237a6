/*
 * Passive round-trip times from the users' own TCP flows. A bridge sees both
 * directions of a flow between a LAN host L and a remote host R:
 *  - a TSval L sends upstream, echoed as TSecr in R's reply coming down,
 *    times the path beyond the WAN port (the WAN side: modem, ISP, R);
 *  - a TSval R sends downstream, echoed by L going up, times the LAN side.
 * Flows without the timestamp option are sampled by sequence/ACK matching
 * instead, a sample dropped when any of its segment is retransmitted (Karn's
 * rule); their handshake (SYN to SYN-ACK) is the one WAN-side sample a
 * download without timestamps gives. Either way each flow and direction has one sample in flight at
 * a time (a TSval awaiting its echo, a segment awaiting its ACK): at most one sample per round
 * trip, which keeps the state of a flow in one cache line. Each sample is also reported against the
 * flow's baseline (the lowest RTT over the last one to two windows), or its remote host's where
 * that is lower or the flow is too young for one (RTT_HOST_SLOTS), so a rise says "a queue grew on
 * the path", whatever the remote's distance.
 *
 * Memory is one fixed table allocated up front: 4-way buckets, the least
 * recently seen flow of a full bucket is evicted once it has been idle for
 * RTT_IDLE_NS (before that, a new flow is not timed: flows that stay get
 * their samples, rather than every flow churning through and none). A flow is known by the
 * classifier's flow_hash (direction-symmetric, so both directions must be
 * classified with one key), as CAKE knows its queues: two flows with one
 * hash would share an entry, which can cost at most a wrong sample.
 * rtt_observe allocates nothing, makes no syscall and is given the time; it
 * is meant for the worker, and its cost per packet is budgeted (at most 10 %
 * of CAKE's; tools/bench/sched_bench --rtt measures it): a packet reads and
 * writes one bucket line and one flow line.
 */
#ifndef SHAPER_RTT_H
#define SHAPER_RTT_H

#include <stdbool.h>
#include <stdint.h>

#include "shaper/pkt.h"

/* The direction a packet travels through the bridge. */
enum rtt_dir {
	RTT_UP = 0,   /* LAN -> WAN: the source is the LAN host */
	RTT_DOWN = 1, /* WAN -> LAN */
};

/* Which part of the path a sample times. */
enum rtt_side {
	RTT_SIDE_WAN = 0, /* beyond the WAN port, there and back */
	RTT_SIDE_LAN = 1, /* between the LAN port and the LAN host, there and back */
	RTT_SIDES = 2,
};

/* How a sample was taken (its source, counted in rtt_counters.by_method). */
enum rtt_method {
	RTT_BY_TIMESTAMP = 0, /* a TSval and the TSecr echoing it */
	RTT_BY_SEQUENCE = 1,  /* a data segment and the ACK covering it (no timestamps) */
	/*
	 * The handshake: SYN to SYN-ACK (the WAN side: the SYN-ACK waits in the
	 * downstream modem's queue like any packet) and SYN-ACK to the LAN
	 * host's first ACK (the LAN side), timed by timestamps or sequence
	 * numbers, whichever the flow has: the first sample of each side of a
	 * flow seen from its SYN (so, after a SYN sent again, its first data
	 * sample). The one WAN-side sample a download without timestamps gives.
	 */
	RTT_BY_HANDSHAKE = 2,
	RTT_METHODS = 3,
};

#define RTT_BUCKET_WAYS  4              /* flows per bucket */
#define RTT_BASE_WIN_NS  10000000000ull /* baseline: min over this window and the one before */
#define RTT_MAX_NS       60000000000ull /* an echo later than this is not a sample */
#define RTT_IDLE_NS      1000000000ull  /* a flow idle this long may be evicted for a new one */
#define RTT_HIST_BUCKETS 40             /* half-octave buckets from 100 us */
#define RTT_HIST_UNIT_NS 100000ull      /* bucket 0 is [0, 100 us) */

/*
 * A sample counts against its flow's baseline (for autorate) once the flow
 * has this many earlier samples on that side: never against itself, and not
 * on the handshake alone (a flow's first sample, SYN to SYN-ACK).
 */
#define RTT_BASE_SAMPLES 2

/*
 * WAN-side baselines per remote host, so that a new flow to a host already
 * known is judged from its first sample: short flows (a web page's, an
 * API's) live a few round trips, too few for a baseline of their own, and
 * one they made under a standing queue would read "no queue". The remote
 * host is its address's /24 (IPv4) or /48 (IPv6): the longest prefixes
 * routed separately on the Internet (what is announced longer is filtered),
 * so every address in one shares the path up to its site, and a CDN's many
 * addresses there share one baseline. The baseline is the lowest sample of
 * the host's flows over this and the last RTT_BASE_WIN_NS window, as a
 * flow's own; a host without samples for two windows starts over. A flow
 * is judged against the lower of its own baseline and its host's; before it
 * has RTT_BASE_SAMPLES of its own, against its host's only if another flow
 * set it (never against its own handshake). Direct-mapped: a host whose
 * slot another holds, seen within RTT_IDLE_NS, goes without (counted).
 */
#define RTT_HOST_SLOTS   2048
#define RTT_HOST_V4_BITS 24
#define RTT_HOST_V6_BITS 48

struct rtt_sample {
	uint64_t rtt_ns;
	uint64_t base_ns; /* the flow's baseline for this side before this sample (its first:
			     itself) */
	uint8_t side;     /* enum rtt_side */
	uint8_t method;   /* enum rtt_method */
	bool established; /* the flow had RTT_BASE_SAMPLES earlier samples of this side */
	uint16_t pkt;     /* rtt_observe_burst: the index of the packet that completed it */
	/*
	 * The time from the sampled segment's departure to the departure of the
	 * flow's next segment with data, if one left before the echo came (0:
	 * none). A receiver that acknowledges every second segment (RFC 1122,
	 * RFC 9293) echoes the first of a pair only once the second arrived, so
	 * a sample can hold up to this much of the flow's own spacing.
	 */
	uint32_t gap_us;
};

/* One flow and direction (of the packets recorded). */
struct rtt_half {
	uint32_t last;   /* the newest TSval seen; without timestamps the highest sequence end */
	uint32_t want;   /* the TSecr, or the ACK, that completes the sample in flight */
	uint32_t us;     /* when the sample's packet passed (us, wrapping) */
	uint32_t gap_us; /* then until the flow's next segment with data left (0: none yet;
			    RTT_GAP_NONE: the next was a pure ACK) */
};
#define RTT_GAP_NONE UINT32_MAX

/* rtt_flow.state: bits of each direction (shifted by 2 * enum rtt_dir), then the flow's. */
enum rtt_flow_state {
	RTT_HAVE = 1u << 0,     /* half[dir].last is valid */
	RTT_ARMED = 1u << 1,    /* half[dir] has a sample in flight */
	RTT_HAS_TS = 1u << 4,   /* timestamps seen: no sequence sampling */
	RTT_SAMPLED = 1u << 5,  /* win_start and win_min are valid */
	RTT_DEPARTED = 1u << 6, /* (shifted by enum rtt_dir) the armed packet left our queue */
};

/*
 * One cache line. RTTs are kept in whole us (60 s fits), the baseline
 * window's start in units of 2^20 ns (about 1 ms; wraps after 52 days).
 */
struct rtt_flow {
	struct rtt_half half[2];           /* indexed by enum rtt_dir */
	uint32_t last_us[RTT_SIDES];       /* the newest sample of each side */
	uint32_t win_min_us[RTT_SIDES][2]; /* this window's and the last window's minimum */
	uint32_t win_start;
	uint8_t state;               /* enum rtt_flow_state */
	uint8_t nsamples[RTT_SIDES]; /* samples of each side so far (saturating) */
	uint8_t syn;                 /* seen from its SYN: its first samples are the handshake's */
} __attribute__((aligned(64)));

/* A remote host's WAN-side baseline (see RTT_HOST_SLOTS). */
struct rtt_host {
	uint32_t tag;           /* the prefix's hash | 1; 0: free */
	uint32_t win_min_us[2]; /* this window's and the last window's lowest sample */
	uint32_t who[2];        /* the flow (its hash | 1) that set each */
	uint32_t win_start;     /* in units of 2^20 ns, as rtt_flow's */
	uint32_t last;          /* the latest sample, same units */
	uint32_t pad;
};

/* Half a cache line per bucket. */
struct rtt_bucket {
	uint32_t tag[RTT_BUCKET_WAYS];  /* the flows' tags; 0 = a free way */
	uint32_t seen[RTT_BUCKET_WAYS]; /* last packet, in units of 2^16 ns (for eviction) */
} __attribute__((aligned(32)));

struct rtt_hist {
	uint64_t count[RTT_HIST_BUCKETS];
	uint64_t samples, sum_ns;
};

struct rtt_counters {
	uint64_t packets;   /* TCP packets looked at */
	uint64_t samples;   /* samples taken (both methods) */
	uint64_t evictions; /* flows evicted to make room */
	uint64_t no_room; /* packets of new flows not timed: their bucket's flows are all in use */
	uint64_t ts_full; /* new TSvals not recorded: one was already awaiting its echo */
	uint64_t karn;    /* sequence samples dropped for a retransmission */
	uint64_t host_based;      /* WAN-side samples judged by their host's lower baseline */
	uint64_t host_collisions; /* WAN-side samples whose host's slot another host held */
	uint64_t by_method[RTT_SIDES][RTT_METHODS]; /* samples taken, by side and source */
	/* WAN-side samples with a baseline (the ones autorate takes), by source. */
	uint64_t judged[RTT_METHODS];
};

struct rtt_table {
	struct rtt_bucket *buckets;
	struct rtt_flow *flows; /* RTT_BUCKET_WAYS per bucket, in bucket order */
	struct rtt_host *hosts; /* RTT_HOST_SLOTS */
	uint32_t mask;          /* buckets - 1 */
	struct rtt_hist hist[RTT_SIDES];
	/* The lowest and highest sample of each side since rtt_range_take (UINT64_MAX, 0: none). */
	uint64_t lo_ns[RTT_SIDES], hi_ns[RTT_SIDES];
	struct rtt_counters c;
};

/*
 * Allocate a table for about max_flows flows (rounded up to a power of two,
 * at least RTT_BUCKET_WAYS). Control-thread work. Returns NULL on allocation failure.
 */
struct rtt_table *rtt_table_new(uint32_t max_flows);
void rtt_table_free(struct rtt_table *t);

/*
 * Look at one classified packet (classify_pkt filled l3_off, l4_off,
 * flags, flow_hash) going in direction dir at time now (ns). Non-TCP
 * packets and fragments are ignored. Returns true and fills *out when the packet
 * completed a sample; the sample is also in the histogram of its side and
 * in the flow's stats.
 */
bool rtt_observe(struct rtt_table *t, const struct sh_pkt *p, enum rtt_dir dir, uint64_t now,
		 struct rtt_sample *out);

/*
 * The burst form the worker calls: what rtt_observe does for each of n
 * classified packets in order (their table buckets fetched ahead); the
 * samples they completed go to out (room for n) and their count is returned.
 */
unsigned int rtt_observe_burst(struct rtt_table *t, struct sh_pkt *const *pkts, unsigned int n,
			       enum rtt_dir dir, uint64_t now, struct rtt_sample *out);

/* A packet's TSval, handed back by rtt_observe_burst_ts. */
struct rtt_tsval {
	uint32_t flow_hash;
	uint32_t tsval;
};

/*
 * rtt_observe_burst, also handing back the TSval of each packet it found
 * the timestamp option on (in order, to ts, room for n; their count in
 * *nts), so that a second reader of the TSvals (owd_observe, downstream
 * with autorate) does not parse the options again. RSTs, fragments and
 * malformed headers are left out, as rtt_observe leaves them.
 */
unsigned int rtt_observe_burst_ts(struct rtt_table *t, struct sh_pkt *const *pkts, unsigned int n,
				  enum rtt_dir dir, uint64_t now, struct rtt_sample *out,
				  struct rtt_tsval *ts, unsigned int *nts);

/*
 * The remote host of a classified packet going in direction dir (the
 * source of one coming down, the destination of one going up): a hash of
 * its address's /24 or /48 (RTT_HOST_SLOTS).
 */
uint32_t rtt_host_key(const struct sh_pkt *p, enum rtt_dir dir);

/*
 * Judge a WAN-side sample s of flow flow_hash, to the remote host host_key,
 * also against the host's baseline (RTT_HOST_SLOTS): lowers s->base_ns and
 * sets s->established where that says so, then takes s into the host's
 * baseline. rtt_observe and rtt_observe_burst do this for every WAN-side
 * sample; exposed for models that make their own samples.
 */
void rtt_host_judge(struct rtt_table *t, uint32_t host_key, uint32_t flow_hash, uint64_t now,
		    struct rtt_sample *s);

/* A classified TCP packet's TSval, if it carries the timestamp option. */
bool rtt_tsval(const struct sh_pkt *p, uint32_t *tsval);

/* The flow with this flow_hash (classify_flow_hash of its 5-tuple), or NULL. */
const struct rtt_flow *rtt_find(const struct rtt_table *t, uint32_t flow_hash);

/*
 * The packets of direction dir left shaperd's own queue at now: a flow's
 * sample in flight (the packet of its TSval, or without timestamps the
 * segment whose ACK it awaits) is timed from here, so the RTT beyond the
 * port leaves out the time the packet waited in our scheduler. The flow's
 * next packet after it notes the gap (rtt_sample.gap_us), or that it was a
 * pure ACK. Lookup only: no flow is created.
 */
void rtt_departed(struct rtt_table *t, struct sh_pkt *const *pkts, unsigned int n, enum rtt_dir dir,
		  uint64_t now);

/*
 * The lowest and highest sample of a side since the last call (0, 0 if
 * none), and start over: the range of "the last interval".
 */
void rtt_range_take(struct rtt_table *t, enum rtt_side side, uint64_t *lo_ns, uint64_t *hi_ns);

/* Bucket of a sample, and the lower edge of a bucket in ns (half-octave steps). */
unsigned int rtt_hist_bucket(uint64_t rtt_ns);
uint64_t rtt_hist_lower_ns(unsigned int bucket);

/*
 * The p-th percentile (0..100) of the samples in a histogram, interpolated
 * inside its bucket; 0 if empty. Used on differences of two snapshots for
 * "over the last interval".
 */
uint64_t rtt_hist_percentile(const struct rtt_hist *h, double p);

/* a - b, bucket by bucket (for an interval between two snapshots). */
void rtt_hist_diff(const struct rtt_hist *a, const struct rtt_hist *b, struct rtt_hist *out);

#endif
