/*
 * Loaded latency per subscriber: the RTT samples (shaper/subscriber_rtt.h)
 * of the minutes in which the subscriber was busy, in the units QoE
 * reports compare: the 80th and 95th percentile RTT over busy minutes.
 *
 * A minute (of the worker's clock) is busy for a subscriber when what
 * arrived for it in that minute, in either direction, came to at least
 * SUB_QOE_BUSY_PERCENT of its plan's max that way (the link's entry: of the
 * link's capacity; an unlimited one, any traffic). The subscriber's own
 * traffic decides, not the link's busy hour. A minute's samples are held
 * apart until it ends, then kept if it was busy and forgotten if not.
 * Busy minutes go into windows of SUB_QOE_WINDOW_MIN minutes; "recent" is
 * the current window and the one before (15 to 30 minutes of busy
 * minutes), as the RTT histograms keep two windows of 10 s.
 *
 * Each minute also leaves its bytes (both ways together), so readers can
 * rank subscribers by the last whole minute without keeping state of
 * their own between calls.
 *
 * One writer (the worker), readers on any thread with relaxed loads: a
 * figure read while a minute turns may be off for that read, never out of
 * bounds.
 */
#ifndef SHAPER_SUBSCRIBER_QOE_H
#define SHAPER_SUBSCRIBER_QOE_H

#include <stdbool.h>
#include <stdint.h>

#include "shaper/subscriber.h"
#include "shaper/subscriber_rtt.h"

#define SUB_QOE_MINUTE_NS    60000000000ull
#define SUB_QOE_WINDOW_MIN   15u /* busy minutes are kept 15 to 30 minutes */
#define SUB_QOE_BUSY_PERCENT 10u /* of the plan, either way, over the minute */

/* One subscriber's: 488 bytes. */
struct sub_qoe {
	uint32_t min;            /* minute being counted (sub_qoe_minute); 0: none yet */
	uint32_t win;            /* window of cur (sub_qoe_window); 0: none yet */
	uint64_t mark[SUB_DIRS]; /* bytes arrived (both counters) when min began */
	uint64_t need[SUB_DIRS]; /* bytes in min that make it busy; 0: any */
	uint64_t last_bytes;     /* both ways, in minute last_min */
	uint32_t last_min;       /* the minute before min, if it had traffic; else older */
	uint16_t busy_cur;       /* busy minutes in window win */
	uint16_t busy_prev;      /* in window win - 1 */
	uint16_t minute[SUB_RTT_SIDES][SUB_RTT_BUCKETS]; /* samples of minute min */
	uint16_t cur[SUB_RTT_SIDES][SUB_RTT_BUCKETS];    /* of busy minutes in window win */
	uint16_t prev[SUB_RTT_SIDES][SUB_RTT_BUCKETS];   /* in window win - 1 */
};

/* The minute now falls in (never 0), and the window of a minute. */
static inline uint32_t
sub_qoe_minute(uint64_t now_ns)
{
	return (uint32_t)(now_ns / SUB_QOE_MINUTE_NS) + 1u;
}

static inline uint32_t
sub_qoe_window(uint32_t minute)
{
	return minute == 0 ? 0 : (minute - 1) / SUB_QOE_WINDOW_MIN + 1u;
}

/* Bytes a minute needs to be busy at a plan of plan_bps; 0 (unlimited): any. */
uint64_t sub_qoe_need(uint64_t plan_bps);

/*
 * Worker: start minute min for q (nothing if it is q's already). bytes:
 * the subscriber's arrived bytes per direction now; plan_bps: its plan's
 * max per direction. The minute before is judged on what arrived in it and
 * its samples kept if it was busy.
 */
void sub_qoe_turn(struct sub_qoe *q, uint32_t min, const uint64_t bytes[SUB_DIRS],
		  const uint64_t plan_bps[SUB_DIRS]);

/* Worker: one sample in q's current minute (turn it first), by bucket. */
void sub_qoe_sample(struct sub_qoe *q, enum sub_rtt_side side, unsigned int bucket);

/* What readers add up: over shards for one subscriber, over subscribers for a node. */
struct sub_qoe_acc {
	uint32_t h[SUB_RTT_SIDES][SUB_RTT_BUCKETS]; /* samples of recent busy minutes */
	uint32_t busy_minutes;                      /* recent busy minutes (the most of any) */
	uint64_t last_bytes;                        /* in the last whole minute, both ways */
};

/*
 * Add q's recent busy minutes as of minute now to acc (any thread). bytes:
 * the subscriber's arrived bytes now (its minute may have ended, or be
 * busy already, without a turn yet).
 */
void sub_qoe_merge(const struct sub_qoe *q, uint32_t now, const uint64_t bytes[SUB_DIRS],
		   struct sub_qoe_acc *acc);

/* The busy RTT of one side as reported. */
struct sub_qoe_summary {
	uint64_t samples;
	uint64_t p80_ns, p95_ns; /* 0 without samples */
};

void sub_qoe_summarize(const struct sub_qoe_acc *acc, enum sub_rtt_side side,
		       struct sub_qoe_summary *out);

#endif
