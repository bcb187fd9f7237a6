/*
 * The autorate controller's decisions one interval at a time: hold without
 * samples or load, lower on bloat while busy (sized by the rise, from what
 * got through, not again before the cooldown), raise while loaded at
 * baseline (slowly near the last bloat rate), and stay within the bounds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "shaper/autorate.h"

#define MS(x)   ((uint64_t)(x)*1000000ull)
#define MBIT(x) ((uint64_t)(x)*125000ull)

struct drive {
	struct autorate a;
	uint64_t now, bytes;
};

static void
start(struct drive *d, uint64_t min, uint64_t max)
{
	struct autorate_params p;

	autorate_params_default(&p, min, max);
	autorate_init(&d->a, &p);
	d->now = MS(1000);
	d->bytes = 0;
	autorate_tick(&d->a, d->now, d->bytes);
}

/* One 100 ms interval sending at share_pct of the rate, with one sample at delay (or none). */
static bool
interval(struct drive *d, uint32_t share_pct, int64_t delay_ms)
{
	if (delay_ms >= 0)
		autorate_sample(&d->a, MS(30) + MS(delay_ms), MS(30));
	d->bytes += d->a.rate / 10 * share_pct / 100;
	d->now += MS(100);
	return autorate_tick(&d->a, d->now, d->bytes);
}

static void
test_hold(void **state)
{
	struct drive d;

	(void)state;
	start(&d, MBIT(10), MBIT(100));
	assert_int_equal(d.a.rate, MBIT(100));
	assert_false(interval(&d, 100, -1)); /* loaded, no samples */
	assert_false(interval(&d, 5, 50));   /* bloat, but idle: not ours */
	assert_false(interval(&d, 5, 0));    /* idle at baseline */
	assert_false(interval(&d, 100, 5));  /* between clear and bloat */
	assert_int_equal(d.a.rate, MBIT(100));
	assert_int_equal(d.a.ups + d.a.downs, 0);
	/* Not before a whole interval has passed. */
	autorate_sample(&d.a, MS(100), MS(30));
	d.now += MS(50);
	assert_false(autorate_tick(&d.a, d.now, d.bytes + MBIT(100)));
}

static void
test_down(void **state)
{
	struct drive d;

	(void)state;
	start(&d, MBIT(10), MBIT(100));
	/* Just over the threshold: 10 % off. */
	assert_true(interval(&d, 100, 8));
	assert_int_equal(d.a.rate, MBIT(90));
	assert_int_equal(d.a.last_action, AUTORATE_DOWN);
	/* Cooldown: the queue needs time to drain. */
	assert_false(interval(&d, 100, 40));
	assert_false(interval(&d, 100, 40));
	/* Far over it: 30 % off, from what got through (downstream: 60 % of the rate). */
	assert_true(interval(&d, 60, 40));
	assert_in_range(d.a.rate, MBIT(90) * 60 / 100 * 70 / 100 - 1000,
			MBIT(90) * 60 / 100 * 70 / 100 + 1000);
	/* Never under the minimum. */
	for (int i = 0; i < 40; i++)
		interval(&d, 100, 100);
	assert_int_equal(d.a.rate, MBIT(10));
}

static void
test_up(void **state)
{
	struct drive d;
	uint64_t r;

	(void)state;
	start(&d, MBIT(10), MBIT(100));
	d.a.rate = MBIT(40);
	assert_false(interval(&d, 50, 0)); /* at baseline but not loaded */
	assert_true(interval(&d, 100, 1)); /* loaded at baseline: 5 % up */
	assert_int_equal(d.a.rate, MBIT(42));
	/* A bloat at 42 makes the next approach to 42 careful. */
	assert_true(interval(&d, 100, 20));
	r = d.a.rate;
	for (int i = 0; i < 3; i++)
		interval(&d, 100, 0);
	assert_true(d.a.rate > r);
	while (d.a.rate < MBIT(42) * 85 / 100)
		assert_true(interval(&d, 100, 0));
	r = d.a.rate;
	assert_true(interval(&d, 100, 0));
	assert_in_range(d.a.rate - r, r / 100, r / 100 + 1); /* 1 % near the old limit */
	/* Never over the maximum. */
	for (int i = 0; i < 200; i++)
		interval(&d, 100, 0);
	assert_int_equal(d.a.rate, MBIT(100));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hold),
		cmocka_unit_test(test_down),
		cmocka_unit_test(test_up),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
