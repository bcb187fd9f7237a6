/*
 * Per-subscriber RTT histograms (shaper/subscriber_rtt.h).
 */
#include <string.h>

#include "shaper/hist_quantile.h"
#include "shaper/subscriber_rtt.h"

#define RTT_SET(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define RTT_GET(x)    __atomic_load_n(&(x), __ATOMIC_RELAXED)

uint64_t
sub_rtt_lower_ns(unsigned int bucket)
{
	/* 2^(0/3), 2^(1/3), 2^(2/3), in millionths. */
	static const uint64_t third[3] = { 1000000, 1259921, 1587401 };
	unsigned int k;

	if (bucket == 0)
		return 0;
	k = bucket - 1;
	return (SUB_RTT_FIRST_NS << (k / 3)) * third[k % 3] / 1000000;
}

unsigned int
sub_rtt_bucket(uint64_t rtt_ns)
{
	unsigned int lo = 0, hi = SUB_RTT_BUCKETS - 1;

	/* The last bucket whose lower edge is at or below the sample. */
	while (lo < hi) {
		unsigned int mid = (lo + hi + 1) / 2;

		if (sub_rtt_lower_ns(mid) <= rtt_ns)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

void
sub_rtt_add(struct sub_rtt *r, uint32_t win, uint64_t rtt_ns)
{
	unsigned int b = sub_rtt_bucket(rtt_ns), i;

	if (r->win != win) {
		/* The window turned: the current one becomes the previous, if it was the last. */
		for (i = 0; i < SUB_RTT_BUCKETS; i++) {
			RTT_SET(r->prev[i], r->win + 1 == win ? r->cur[i] : 0);
			RTT_SET(r->cur[i], 0);
		}
		RTT_SET(r->win, win);
	}
	if (r->cur[b] == UINT16_MAX)
		/* Halve both windows: the shape, and so the quantiles, stay. */
		for (i = 0; i < SUB_RTT_BUCKETS; i++) {
			RTT_SET(r->cur[i], (uint16_t)(r->cur[i] / 2));
			RTT_SET(r->prev[i], (uint16_t)(r->prev[i] / 2));
		}
	RTT_SET(r->cur[b], (uint16_t)(r->cur[b] + 1));
}

void
sub_rtt_merge(const struct sub_rtt *r, uint32_t win, uint32_t h[SUB_RTT_BUCKETS])
{
	uint32_t w = RTT_GET(r->win);

	if (w == 0 || (w != win && w + 1 != win))
		return;
	for (unsigned int i = 0; i < SUB_RTT_BUCKETS; i++) {
		h[i] += RTT_GET(r->cur[i]);
		if (w == win)
			h[i] += RTT_GET(r->prev[i]);
	}
}

uint64_t
sub_rtt_quantile(const uint32_t h[SUB_RTT_BUCKETS], double q)
{
	uint64_t count[SUB_RTT_BUCKETS], edge[SUB_RTT_BUCKETS + 1];

	for (unsigned int i = 0; i < SUB_RTT_BUCKETS; i++) {
		count[i] = h[i];
		edge[i] = sub_rtt_lower_ns(i);
	}
	edge[SUB_RTT_BUCKETS] =
			edge[SUB_RTT_BUCKETS - 1]; /* open above: its lower edge is all it says */
	return sh_hist_quantile(count, edge, SUB_RTT_BUCKETS, q);
}

void
sub_rtt_summarize(const uint32_t h[SUB_RTT_BUCKETS], struct sub_rtt_summary *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned int i = 0; i < SUB_RTT_BUCKETS; i++)
		out->samples += h[i];
	out->median_ns = sub_rtt_quantile(h, 0.5);
	out->p95_ns = sub_rtt_quantile(h, 0.95);
}
