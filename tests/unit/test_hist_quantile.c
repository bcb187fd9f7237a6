/*
 * include/shaper/hist_quantile.h: the histogram quantile the RTT tap and
 * the subscribers' RTT and QoE figures share, at its edges (no samples,
 * one sample, ties, q = 0 and 1, an open last bucket), and the two
 * histograms' own edges through rtt_hist_percentile and sub_rtt_quantile.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/hist_quantile.h"
#include "shaper/rtt.h"
#include "shaper/subscriber_rtt.h"

/* Four buckets: [0, 10), [10, 20), [20, 40), [40, 80). */
static const uint64_t edge[5] = { 0, 10, 20, 40, 80 };

static uint64_t
quant(uint64_t c0, uint64_t c1, uint64_t c2, uint64_t c3, double q)
{
	const uint64_t count[4] = { c0, c1, c2, c3 };

	return sh_hist_quantile(count, edge, 4, q);
}

/* The edges, case by case. */
static void
test_cases(void **state)
{
	static const struct {
		uint64_t count[4];
		double q;
		uint64_t want;
	} cases[] = {
		/* no samples: 0 whatever q */
		{ { 0, 0, 0, 0 }, 0.0, 0 },
		{ { 0, 0, 0, 0 }, 0.5, 0 },
		{ { 0, 0, 0, 0 }, 1.0, 0 },
		/* one sample: its bucket's lower edge, middle, upper edge */
		{ { 0, 0, 1, 0 }, 0.0, 20 },
		{ { 0, 0, 1, 0 }, 0.5, 30 },
		{ { 0, 0, 1, 0 }, 1.0, 40 },
		{ { 1, 0, 0, 0 }, 0.0, 0 },
		{ { 0, 0, 0, 1 }, 1.0, 80 },
		/* ties: spread evenly over their bucket; a rank on a boundary is the boundary */
		{ { 0, 0, 4, 0 }, 0.25, 25 },
		{ { 0, 0, 4, 0 }, 0.5, 30 },
		{ { 0, 0, 4, 0 }, 1.0, 40 },
		{ { 0, 2, 2, 0 }, 0.25, 15 },
		{ { 0, 2, 2, 0 }, 0.5, 20 },
		{ { 0, 2, 2, 0 }, 0.75, 30 },
		/* q = 0 and 1 skip empty buckets at either end */
		{ { 0, 1, 0, 3 }, 0.0, 10 },
		{ { 0, 1, 0, 3 }, 1.0, 80 },
		{ { 3, 0, 1, 0 }, 1.0, 40 },
		/* above 1: the last bucket's lower edge */
		{ { 1, 0, 0, 0 }, 2.0, 40 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t got = sh_hist_quantile(cases[i].count, edge, 4, cases[i].q);

		if (got != cases[i].want)
			fail_msg("case %zu: q %g gave %llu, not %llu", i, cases[i].q,
				 (unsigned long long)got, (unsigned long long)cases[i].want);
	}
}

/* Never falls as q grows. */
static void
test_monotonic(void **state)
{
	uint64_t prev = 0;

	(void)state;
	for (int i = 0; i <= 100; i++) {
		uint64_t v = quant(3, 0, 7, 1, i / 100.0);

		assert_true(v >= prev);
		prev = v;
	}
	assert_int_equal(prev, 80);
}

/* An open last bucket (its upper edge its lower) says only its lower edge. */
static void
test_open_last(void **state)
{
	static const uint64_t open[4] = { 0, 10, 20, 20 };
	const uint64_t count[3] = { 0, 1, 5 };

	(void)state;
	assert_int_equal(sh_hist_quantile(count, open, 3, 0.0), 10);
	assert_int_equal(sh_hist_quantile(count, open, 3, 0.5), 20);
	assert_int_equal(sh_hist_quantile(count, open, 3, 1.0), 20);
}

/* The RTT tap's buckets: half octaves, the last one more octave wide; p in percent. */
static void
test_rtt_hist(void **state)
{
	struct rtt_hist h;
	unsigned int last = RTT_HIST_BUCKETS - 1, b = rtt_hist_bucket(20000000);

	(void)state;
	memset(&h, 0, sizeof(h));
	assert_int_equal(rtt_hist_percentile(&h, 50), 0);
	h.count[b] = 1;
	assert_int_equal(rtt_hist_percentile(&h, 0), rtt_hist_lower_ns(b));
	assert_int_equal(rtt_hist_percentile(&h, 100), rtt_hist_lower_ns(b + 1));
	memset(&h, 0, sizeof(h));
	h.count[last] = 1;
	assert_int_equal(rtt_hist_percentile(&h, 100), 2 * rtt_hist_lower_ns(last));
}

/* The subscribers' buckets: thirds of an octave, the last open; q in 0..1. */
static void
test_sub_rtt(void **state)
{
	uint32_t h[SUB_RTT_BUCKETS];
	unsigned int b = sub_rtt_bucket(20000000);

	(void)state;
	memset(h, 0, sizeof(h));
	assert_int_equal(sub_rtt_quantile(h, 0.95), 0);
	h[b] = 1;
	assert_int_equal(sub_rtt_quantile(h, 0.0), sub_rtt_lower_ns(b));
	assert_int_equal(sub_rtt_quantile(h, 1.0), sub_rtt_lower_ns(b + 1));
	memset(h, 0, sizeof(h));
	h[SUB_RTT_BUCKETS - 1] = 3;
	assert_int_equal(sub_rtt_quantile(h, 1.0), sub_rtt_lower_ns(SUB_RTT_BUCKETS - 1));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),     cmocka_unit_test(test_monotonic),
		cmocka_unit_test(test_open_last), cmocka_unit_test(test_rtt_hist),
		cmocka_unit_test(test_sub_rtt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
