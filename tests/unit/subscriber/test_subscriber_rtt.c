/*
 * Per-subscriber RTT histograms (src/subscriber/sub_rtt.c): buckets and
 * their edges, quantiles of known samples against the exact ones, windows
 * turning (the previous one kept, older ones forgotten), the halving at a
 * full counter, and the scheduler's per-subscriber entries with samples fed
 * through sub_sched_rtt_sample as the worker feeds them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/subscriber_rtt.h"

#define MS 1000000ull

/* Edges rise by a third of an octave; every sample falls in the bucket whose edges hold it. */
static void
test_buckets(void **state)
{
	(void)state;
	assert_int_equal(sub_rtt_lower_ns(0), 0);
	assert_int_equal(sub_rtt_lower_ns(1), SUB_RTT_FIRST_NS);
	assert_int_equal(sub_rtt_lower_ns(4), 2 * SUB_RTT_FIRST_NS);
	assert_int_equal(sub_rtt_lower_ns(31), 1024 * SUB_RTT_FIRST_NS);
	for (unsigned int b = 2; b < SUB_RTT_BUCKETS; b++) {
		double r = (double)sub_rtt_lower_ns(b) / (double)sub_rtt_lower_ns(b - 1);

		assert_true(r > 1.259 && r < 1.261);
	}
	for (uint64_t ns = 0; ns < 3000 * MS; ns = ns * 21 / 20 + 1000) {
		unsigned int b = sub_rtt_bucket(ns);

		assert_true(sub_rtt_lower_ns(b) <= ns);
		if (b + 1 < SUB_RTT_BUCKETS)
			assert_true(ns < sub_rtt_lower_ns(b + 1));
	}
	assert_int_equal(sub_rtt_bucket(UINT64_MAX), SUB_RTT_BUCKETS - 1);
}

static int
by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median and p95 of a spread of samples within a bucket's width of the exact ones. */
static void
test_quantiles(void **state)
{
	static uint64_t v[4000];
	struct sub_rtt r = { 0 };
	struct sub_rtt_summary s;
	uint32_t h[SUB_RTT_BUCKETS] = { 0 };
	uint32_t win = sub_rtt_window(0);
	uint64_t x = 12345;

	(void)state;
	for (size_t i = 0; i < 4000; i++) {
		/* Most between 20 and 40 ms, a tail of one in ten from 100 to 300 ms. */
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		v[i] = i % 10 == 9 ? 100 * MS + (x >> 33) % (200 * MS)
				   : 20 * MS + (x >> 33) % (20 * MS);
		sub_rtt_add(&r, win, v[i]);
	}
	sub_rtt_merge(&r, win, h);
	sub_rtt_summarize(h, &s);
	qsort(v, 4000, sizeof(v[0]), by_u64);
	assert_int_equal(s.samples, 4000);
	/* A bucket is 26 % wide: interpolated inside it, within 13 % of the truth. */
	assert_true(s.median_ns > v[1999] * 87 / 100 && s.median_ns < v[1999] * 113 / 100);
	assert_true(s.p95_ns > v[3799] * 87 / 100 && s.p95_ns < v[3799] * 113 / 100);
	assert_true(s.p95_ns > 100 * MS); /* the tail, not the bulk */

	/* Empty: nothing, zeros. */
	memset(h, 0, sizeof(h));
	sub_rtt_summarize(h, &s);
	assert_int_equal(s.samples, 0);
	assert_int_equal(s.median_ns, 0);
	assert_int_equal(s.p95_ns, 0);

	/* One sample in the open last bucket: its lower edge, not beyond. */
	h[SUB_RTT_BUCKETS - 1] = 1;
	assert_int_equal(sub_rtt_quantile(h, 0.5), sub_rtt_lower_ns(SUB_RTT_BUCKETS - 1));
}

/* Recent = this window and the last; a window turned away is forgotten. */
static void
test_windows(void **state)
{
	struct sub_rtt r = { 0 };
	uint32_t h[SUB_RTT_BUCKETS];
	struct sub_rtt_summary s;
	uint64_t t0 = 5 * SUB_RTT_WINDOW_NS;

	(void)state;
	/* Nothing yet. */
	memset(h, 0, sizeof(h));
	sub_rtt_merge(&r, sub_rtt_window(t0), h);
	sub_rtt_summarize(h, &s);
	assert_int_equal(s.samples, 0);

	for (int i = 0; i < 100; i++)
		sub_rtt_add(&r, sub_rtt_window(t0), 10 * MS);
	/* The next window: 10 ms is still recent, 100 ms joins it. */
	for (int i = 0; i < 300; i++)
		sub_rtt_add(&r, sub_rtt_window(t0 + SUB_RTT_WINDOW_NS), 100 * MS);
	memset(h, 0, sizeof(h));
	sub_rtt_merge(&r, sub_rtt_window(t0 + SUB_RTT_WINDOW_NS), h);
	sub_rtt_summarize(h, &s);
	assert_int_equal(s.samples, 400);
	assert_true(s.median_ns > 80 * MS && s.median_ns < 125 * MS);

	/* Read a window later with no new sample: only the 100 ms window is recent. */
	memset(h, 0, sizeof(h));
	sub_rtt_merge(&r, sub_rtt_window(t0 + 2 * SUB_RTT_WINDOW_NS), h);
	sub_rtt_summarize(h, &s);
	assert_int_equal(s.samples, 300);
	/* Two windows later: nothing. */
	memset(h, 0, sizeof(h));
	sub_rtt_merge(&r, sub_rtt_window(t0 + 3 * SUB_RTT_WINDOW_NS), h);
	sub_rtt_summarize(h, &s);
	assert_int_equal(s.samples, 0);

	/* A sample after a gap of windows starts over: the old ones do not come back. */
	sub_rtt_add(&r, sub_rtt_window(t0 + 4 * SUB_RTT_WINDOW_NS), 1 * MS);
	memset(h, 0, sizeof(h));
	sub_rtt_merge(&r, sub_rtt_window(t0 + 4 * SUB_RTT_WINDOW_NS), h);
	sub_rtt_summarize(h, &s);
	assert_int_equal(s.samples, 1);
	assert_true(s.median_ns >= 1 * MS && s.median_ns < 2 * MS);
}

/* A counter at 65,535 halves them all: no wrap, the quantiles stay. */
static void
test_saturation(void **state)
{
	struct sub_rtt r = { 0 };
	uint32_t h[SUB_RTT_BUCKETS] = { 0 };
	struct sub_rtt_summary s;
	uint32_t win = sub_rtt_window(0);

	(void)state;
	for (uint32_t i = 0; i < 200000; i++)
		sub_rtt_add(&r, win, i % 4 == 3 ? 200 * MS : 5 * MS);
	sub_rtt_merge(&r, win, h);
	sub_rtt_summarize(h, &s);
	assert_true(s.samples > 30000 && s.samples <= 65535 * 2);
	assert_true(s.median_ns >= 5 * MS * 87 / 100 && s.median_ns < 5 * MS * 113 / 100);
	/* A quarter at 200 ms: the 95th percentile is there. */
	assert_true(s.p95_ns >= 200 * MS * 87 / 100 && s.p95_ns < 200 * MS * 113 / 100);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_quantiles),
		cmocka_unit_test(test_windows),
		cmocka_unit_test(test_saturation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
