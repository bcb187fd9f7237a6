/*
 * Passive RTT per subscriber: the samples the RTT tap (shaper/rtt.h) takes
 * from a subscriber's own TCP flows, kept as a small log-scale histogram
 * per part of the path, so that the median and the 95th percentile of its
 * recent samples can be read at any time for the cost of a few dozen
 * counters per subscriber, active or idle.
 *
 * The two parts are kept apart rather than added: the LAN side (from the
 * shaper to the subscriber's host and back: the access network, the
 * subscriber's router and its upload queue) is where an ISP can act; the
 * WAN side (from the shaper to the remote servers and back) is mostly the
 * distance to what the subscriber visits. Their sum would hide which one
 * grew. Neither includes the time a packet waits in shaperd's own queues
 * (shaper/rtt.h: rtt_departed).
 *
 * Buckets: [0, 0.5 ms), then a third of an octave each (26 % wide) from
 * 0.5 ms, the last open from about 1.3 s. A quantile is interpolated inside
 * its bucket. "Recent" is the current window of SUB_RTT_WINDOW_NS and the
 * one before it (10 to 20 s of samples); older ones are forgotten as the
 * windows turn. Counters are 16 bits: when one would overflow, every
 * counter of the subscriber's side is halved, which keeps the shape (and
 * so the quantiles) and scales the sample count down.
 *
 * Plain C: one writer (the worker), any number of readers on other threads
 * with relaxed atomic loads (a reader may see a window half turned: a
 * figure off for one read, never out of bounds).
 */
#ifndef SHAPER_SUBSCRIBER_RTT_H
#define SHAPER_SUBSCRIBER_RTT_H

#include <stdint.h>

#define SUB_RTT_BUCKETS   36
#define SUB_RTT_FIRST_NS  500000ull      /* bucket 0 is [0, 0.5 ms) */
#define SUB_RTT_WINDOW_NS 10000000000ull /* histograms turn every 10 s */

/* The same order as shaper/rtt.h's enum rtt_side. */
enum sub_rtt_side {
	SUB_RTT_WAN = 0, /* beyond the WAN port, there and back */
	SUB_RTT_LAN = 1, /* from the LAN port to the subscriber's host, there and back */
	SUB_RTT_SIDES = 2,
};

/* One side of one subscriber: 148 bytes. */
struct sub_rtt {
	uint32_t win;                   /* window of cur (sub_rtt_window); 0: no sample yet */
	uint16_t cur[SUB_RTT_BUCKETS];  /* samples in window win */
	uint16_t prev[SUB_RTT_BUCKETS]; /* in window win - 1 */
};

/* The window now falls in (never 0). */
static inline uint32_t
sub_rtt_window(uint64_t now_ns)
{
	return (uint32_t)(now_ns / SUB_RTT_WINDOW_NS) + 1u;
}

/* The bucket of a sample, and the lower edge of a bucket in ns. */
unsigned int sub_rtt_bucket(uint64_t rtt_ns);
uint64_t sub_rtt_lower_ns(unsigned int bucket);

/* Count one sample taken in window win (worker). */
void sub_rtt_add(struct sub_rtt *r, uint32_t win, uint64_t rtt_ns);

/*
 * Add r's recent samples, as of window win, to h (any thread): both
 * windows if r's current one is win, only its current one if that is
 * win - 1 (it is now the previous), none if older.
 */
void sub_rtt_merge(const struct sub_rtt *r, uint32_t win, uint32_t h[SUB_RTT_BUCKETS]);

/* What a merged histogram says. */
struct sub_rtt_summary {
	uint64_t samples;
	uint64_t median_ns, p95_ns; /* 0 without samples */
};

/* The q-th quantile (0 < q <= 1) of h, interpolated inside its bucket; 0 if h is empty. */
uint64_t sub_rtt_quantile(const uint32_t h[SUB_RTT_BUCKETS], double q);

void sub_rtt_summarize(const uint32_t h[SUB_RTT_BUCKETS], struct sub_rtt_summary *out);

#endif
