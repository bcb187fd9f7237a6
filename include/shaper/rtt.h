/*
 * Passive round-trip times from the users' own TCP flows. A bridge sees both
 * directions of a flow between a LAN host L and a remote host R:
 *  - a TSval L sends upstream, echoed as TSecr in R's reply coming down,
 *    times the path beyond the WAN port (the WAN side: modem, ISP, R);
 *  - a TSval R sends downstream, echoed by L going up, times the LAN side.
 * Flows without the timestamp option are sampled by sequence/ACK matching:
 * one data segment per flow and direction at a time, dropped when any of it
 * is retransmitted (Karn's rule). Each sample is also reported against the
 * flow's baseline (the lowest RTT over the last one to two windows), so a
 * rise says "a queue grew on the path", whatever the remote's distance.
 *
 * Memory is one fixed table allocated up front: 4-way buckets, the least
 * recently seen flow of a full bucket is evicted. rtt_observe allocates
 * nothing, makes no syscall and is given the time; it is meant for the worker.
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

enum rtt_method {
	RTT_BY_TIMESTAMP = 0,
	RTT_BY_SEQUENCE = 1,
};

#define RTT_TS_SLOTS     4              /* TSvals awaiting their echo, per flow and direction */
#define RTT_BASE_WIN_NS  10000000000ull /* baseline: min over this window and the one before */
#define RTT_MAX_NS       60000000000ull /* an echo later than this is not a sample */
#define RTT_HIST_BUCKETS 40             /* half-octave buckets from 100 us */
#define RTT_HIST_UNIT_NS 100000ull      /* bucket 0 is [0, 100 us) */

struct rtt_sample {
	uint64_t rtt_ns;
	uint64_t base_ns; /* the flow's baseline for this side, this sample included */
	uint8_t side;     /* enum rtt_side */
	uint8_t method;   /* enum rtt_method */
};

/* What one flow and direction is waiting for. */
struct rtt_half {
	uint32_t ts_val[RTT_TS_SLOTS]; /* a FIFO, oldest at ts_head */
	uint64_t ts_ns[RTT_TS_SLOTS];
	uint32_t last_tsval; /* newest TSval recorded (later ones must be after it) */
	uint32_t seq_max;    /* highest sequence end sent */
	uint32_t seq_expect; /* the ACK that completes the sampled segment */
	uint64_t seq_ns;     /* when the sampled segment passed */
	uint8_t ts_head, ts_n;
	uint8_t have_tsval, have_seq, seq_armed;
};

struct rtt_side_stats {
	uint64_t last_ns, min_ns; /* min_ns over the flow's life */
	uint64_t win_min[2];      /* this window's and the last window's minimum */
	uint64_t win_start;
	uint32_t samples;
};

struct rtt_flow {
	uint8_t lan[16], wan[16]; /* addresses; IPv4 uses the first 4 bytes, the rest 0 */
	uint16_t lan_port, wan_port;
	uint8_t family; /* 4 or 6; 0 = free slot */
	uint8_t has_ts; /* timestamps seen: no sequence sampling */
	uint32_t hash;
	uint64_t seen_ns;        /* last packet, for eviction */
	struct rtt_half half[2]; /* indexed by enum rtt_dir of the recorded packet */
	struct rtt_side_stats side[RTT_SIDES];
};

struct rtt_hist {
	uint64_t count[RTT_HIST_BUCKETS];
	uint64_t samples, sum_ns;
};

struct rtt_counters {
	uint64_t packets;   /* TCP packets looked at */
	uint64_t samples;   /* samples taken (both methods) */
	uint64_t evictions; /* flows evicted to make room */
	uint64_t ts_full;   /* TSvals not recorded: the flow's FIFO was full */
	uint64_t karn;      /* sequence samples dropped for a retransmission */
};

struct rtt_table {
	struct rtt_flow *flows;
	uint32_t *tags; /* the flows' hashes (0 = free), a bucket's four in one cache line */
	uint32_t mask;  /* buckets - 1 */
	uint64_t seed;
	struct rtt_hist hist[RTT_SIDES];
	struct rtt_counters c;
};

/*
 * Allocate a table for about max_flows flows (rounded up to a power of two,
 * at least 4). Control-thread work. Returns NULL on allocation failure.
 */
struct rtt_table *rtt_table_new(uint32_t max_flows, uint64_t seed);
void rtt_table_free(struct rtt_table *t);

/*
 * Look at one classified packet (classify_pkt filled l3_off, l4_off,
 * flags) going in direction dir at time now (ns). Non-TCP packets and
 * fragments are ignored. Returns true and fills *out when the packet
 * completed a sample; the sample is also in the histogram of its side and
 * in the flow's stats.
 */
bool rtt_observe(struct rtt_table *t, const struct sh_pkt *p, enum rtt_dir dir, uint64_t now,
		 struct rtt_sample *out);

/*
 * The burst form the worker calls: rtt_observe on each of n classified
 * packets in order; the samples they completed go to out (room for n) and
 * their count is returned.
 */
unsigned int rtt_observe_burst(struct rtt_table *t, struct sh_pkt *const *pkts, unsigned int n,
			       enum rtt_dir dir, uint64_t now, struct rtt_sample *out);

/*
 * The flow with this LAN and WAN address and port (family 4 or 6), or
 * NULL. Addresses in network order, 4 or 16 bytes.
 */
const struct rtt_flow *rtt_find(const struct rtt_table *t, uint8_t family, const uint8_t *lan,
				const uint8_t *wan, uint16_t lan_port, uint16_t wan_port);

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
