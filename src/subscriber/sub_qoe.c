/*
 * Loaded latency per subscriber (shaper/subscriber_qoe.h).
 */
#include <string.h>

#include "shaper/subscriber_qoe.h"

#define Q_SET(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define Q_GET(x)    __atomic_load_n(&(x), __ATOMIC_RELAXED)

_Static_assert(sizeof(struct sub_qoe) == 488, "the size docs/subscribers.md gives");

uint64_t
sub_qoe_need(uint64_t plan_bps)
{
	/* plan / 8 bytes a second, for 60 s, at SUB_QOE_BUSY_PERCENT: no overflow below 2^57. */
	return plan_bps / 800 * 60 * SUB_QOE_BUSY_PERCENT;
}

static bool
was_busy(const uint64_t mark[SUB_DIRS], const uint64_t need[SUB_DIRS],
	 const uint64_t bytes[SUB_DIRS])
{
	for (int d = 0; d < SUB_DIRS; d++) {
		uint64_t got = bytes[d] - mark[d];

		if (got != 0 && got >= need[d])
			return true;
	}
	return false;
}

/* The busy minute m's samples into the windows. */
static void
fold(struct sub_qoe *q, uint32_t m)
{
	uint32_t w = sub_qoe_window(m);

	if (q->win != w) {
		/* The window turned: the current one becomes the previous, if it was the last. */
		for (int s = 0; s < SUB_RTT_SIDES; s++)
			for (int b = 0; b < SUB_RTT_BUCKETS; b++) {
				Q_SET(q->prev[s][b], q->win + 1 == w ? q->cur[s][b] : 0);
				Q_SET(q->cur[s][b], 0);
			}
		Q_SET(q->busy_prev, q->win + 1 == w ? q->busy_cur : 0);
		Q_SET(q->busy_cur, 0);
		Q_SET(q->win, w);
	}
	for (int s = 0; s < SUB_RTT_SIDES; s++) {
		bool full = false;

		for (int b = 0; b < SUB_RTT_BUCKETS; b++)
			full |= (uint32_t)q->cur[s][b] + q->minute[s][b] > UINT16_MAX;
		if (full)
			/* Halve this side's windows: the shape, and so the quantiles, stay. */
			for (int b = 0; b < SUB_RTT_BUCKETS; b++) {
				Q_SET(q->cur[s][b], (uint16_t)(q->cur[s][b] / 2));
				Q_SET(q->prev[s][b], (uint16_t)(q->prev[s][b] / 2));
			}
		for (int b = 0; b < SUB_RTT_BUCKETS; b++) {
			uint32_t v = (uint32_t)q->cur[s][b] + q->minute[s][b];

			Q_SET(q->cur[s][b], (uint16_t)(v > UINT16_MAX ? UINT16_MAX : v));
		}
	}
	Q_SET(q->busy_cur, (uint16_t)(q->busy_cur + 1));
}

void
sub_qoe_turn(struct sub_qoe *q, uint32_t min, const uint64_t bytes[SUB_DIRS],
	     const uint64_t plan_bps[SUB_DIRS])
{
	bool any = false;

	if (q->min == min)
		return;
	if (q->min != 0) {
		uint64_t moved = 0;

		for (int d = 0; d < SUB_DIRS; d++)
			moved += bytes[d] - q->mark[d];
		if (was_busy(q->mark, q->need, bytes))
			fold(q, q->min);
		Q_SET(q->last_bytes, moved);
		Q_SET(q->last_min, q->min);
	}
	for (int s = 0; s < SUB_RTT_SIDES; s++)
		for (int b = 0; b < SUB_RTT_BUCKETS; b++)
			any |= q->minute[s][b] != 0;
	if (any)
		for (int s = 0; s < SUB_RTT_SIDES; s++)
			for (int b = 0; b < SUB_RTT_BUCKETS; b++)
				Q_SET(q->minute[s][b], 0);
	/*
	 * A record's first minute counts from its counters' zero: it is new
	 * (start, a reused slot) and what arrived before this turn arrived
	 * moments ago, before the worker's clock had a minute.
	 */
	for (int d = 0; d < SUB_DIRS; d++) {
		Q_SET(q->mark[d], q->min != 0 ? bytes[d] : 0);
		Q_SET(q->need[d], sub_qoe_need(plan_bps[d]));
	}
	Q_SET(q->min, min);
}

void
sub_qoe_sample(struct sub_qoe *q, enum sub_rtt_side side, unsigned int bucket)
{
	uint16_t *h = q->minute[side];

	if (h[bucket] == UINT16_MAX)
		for (int b = 0; b < SUB_RTT_BUCKETS; b++)
			Q_SET(h[b], (uint16_t)(h[b] / 2));
	Q_SET(h[bucket], (uint16_t)(h[bucket] + 1));
}

void
sub_qoe_merge(const struct sub_qoe *q, uint32_t now, const uint64_t bytes[SUB_DIRS],
	      struct sub_qoe_acc *acc)
{
	uint32_t w = Q_GET(q->win), m = Q_GET(q->min), at = sub_qoe_window(now), busy = 0;
	uint64_t mark[SUB_DIRS], need[SUB_DIRS], last = 0;

	if (w != 0 && (w == at || w + 1 == at)) {
		for (int s = 0; s < SUB_RTT_SIDES; s++)
			for (int b = 0; b < SUB_RTT_BUCKETS; b++) {
				acc->h[s][b] += Q_GET(q->cur[s][b]);
				if (w == at)
					acc->h[s][b] += Q_GET(q->prev[s][b]);
			}
		busy = Q_GET(q->busy_cur) + (w == at ? Q_GET(q->busy_prev) : 0u);
	}
	if (m == 0)
		goto out;
	for (int d = 0; d < SUB_DIRS; d++) {
		mark[d] = Q_GET(q->mark[d]);
		need[d] = Q_GET(q->need[d]);
	}
	/* The minute being counted: busy already (bytes only grow), or ended without a turn. */
	if ((sub_qoe_window(m) == at || sub_qoe_window(m) + 1 == at) &&
	    was_busy(mark, need, bytes)) {
		for (int s = 0; s < SUB_RTT_SIDES; s++)
			for (int b = 0; b < SUB_RTT_BUCKETS; b++)
				acc->h[s][b] += Q_GET(q->minute[s][b]);
		busy++;
	}
	if (m == now)
		last = Q_GET(q->last_min) + 1 == now ? Q_GET(q->last_bytes) : 0;
	else if (m + 1 == now)
		for (int d = 0; d < SUB_DIRS; d++)
			last += bytes[d] - mark[d];
	acc->last_bytes += last;
out:
	if (busy > acc->busy_minutes)
		acc->busy_minutes = busy;
}

void
sub_qoe_summarize(const struct sub_qoe_acc *acc, enum sub_rtt_side side,
		  struct sub_qoe_summary *out)
{
	memset(out, 0, sizeof(*out));
	for (int b = 0; b < SUB_RTT_BUCKETS; b++)
		out->samples += acc->h[side][b];
	out->p80_ns = sub_rtt_quantile(acc->h[side], 0.8);
	out->p95_ns = sub_rtt_quantile(acc->h[side], 0.95);
}
