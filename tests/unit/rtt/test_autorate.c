/*
 * The autorate controller's decisions one interval at a time: hold without
 * samples or load, lower on bloat while busy (sized by the rise, from what
 * got through, not again before the cooldown), raise while loaded at
 * baseline (slowly near the last bloat rate), and stay within the bounds;
 * the downstream one-way delay (owd.c), and a rise put down to the
 * direction whose queue it is.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "shaper/autorate.h"
#include "shaper/owd.h"

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

/* The downstream one-way delay from TSvals: rises above each flow's own baseline. */
static void
test_owd(void **state)
{
	static struct owd_table t;
	uint64_t now = MS(5000);

	(void)state;
	owd_table_init(&t);
	/* A flow's first packet sets its baseline; its clock offset is its own. */
	assert_int_equal(owd_observe(&t, 0x1234, 777000, now), -1);
	/* The same offset 10 ms later: no rise. */
	assert_int_equal(owd_observe(&t, 0x1234, 777010, now + MS(10)), 0);
	/* Sent 1 ms later but here 7 ms later: 6 ms in a queue on the way. */
	assert_int_equal(owd_observe(&t, 0x1234, 777011, now + MS(17)), MS(6));
	/* Another flow, another offset (and TSvals across the 2^32 wrap). */
	assert_int_equal(owd_observe(&t, 0x5678, 0xfffffff0u, now), -1);
	assert_int_equal(owd_observe(&t, 0x5678, 0x00000010u, now + MS(0x20) + MS(3)), MS(3));
	/* A faster path than the baseline lowers it. */
	assert_int_equal(owd_observe(&t, 0x1234, 777100, now + MS(99)), 0);
	assert_int_equal(owd_observe(&t, 0x1234, 777101, now + MS(101)), MS(1));
	/* The baseline outlives one window, not two. */
	assert_int_equal(owd_observe(&t, 0x1234, 787100, now + MS(10000) + MS(104)), MS(5));
	assert_int_equal(owd_observe(&t, 0x1234, 797200, now + MS(20000) + MS(208)), MS(4));
	assert_int_equal(owd_observe(&t, 0x1234, 807300, now + MS(30000) + MS(312)), MS(4));
	/* A flow that lands in a used slot starts over. */
	assert_int_equal(owd_observe(&t, 0x1234 + OWD_SLOTS, 5, now), -1);
}

/* One interval of each direction: the RTT's rise, and the downstream one-way rise. */
static void
both(struct drive *up, struct drive *down, int64_t rtt_ms, int64_t owd_ms)
{
	autorate_owd_sample(&down->a, MS(owd_ms));
	autorate_owd_sample(&down->a, MS(owd_ms) + MS(3)); /* the minimum counts */
	interval(down, 100, rtt_ms);
	autorate_attribute(&up->a, &down->a);
	interval(up, 100, rtt_ms);
}

static void
start_dir(struct drive *d, bool after_modem)
{
	struct autorate_params p;

	autorate_params_default(&p, MBIT(5), MBIT(100));
	p.after_modem = after_modem;
	autorate_init(&d->a, &p);
	d->now = MS(1000);
	d->bytes = 0;
	autorate_tick(&d->a, d->now, d->bytes);
}

static void
test_attribute(void **state)
{
	struct drive up, down;

	(void)state;
	/* The RTT rose 20 ms and the downstream's one-way delay 1 ms: the upstream's queue. */
	start_dir(&up, false);
	start_dir(&down, true);
	both(&up, &down, 20, 1);
	assert_int_equal(down.a.rate, MBIT(100));
	assert_int_equal(up.a.last_action, AUTORATE_DOWN);
	/* ... and the other way round: the downstream's. */
	start_dir(&up, false);
	start_dir(&down, true);
	both(&up, &down, 20, 18);
	assert_int_equal(down.a.last_action, AUTORATE_DOWN);
	assert_int_equal(up.a.rate, MBIT(100));
	/* Both queues: both lower. */
	start_dir(&up, false);
	start_dir(&down, true);
	both(&up, &down, 20, 10);
	assert_int_equal(down.a.last_action, AUTORATE_DOWN);
	assert_int_equal(up.a.last_action, AUTORATE_DOWN);
	/* A queue standing downstream (6 ms, under the threshold) does not keep the upstream from
	 * raising; the downstream, whose share it is, holds. */
	start_dir(&up, false);
	start_dir(&down, true);
	up.a.rate = down.a.rate = MBIT(50);
	both(&up, &down, 6, 6);
	assert_int_equal(up.a.last_action, AUTORATE_UP);
	assert_int_equal(down.a.last_action, AUTORATE_HOLD);
	/* Without one-way figures each decides on the RTT alone, as before. */
	start_dir(&up, false);
	start_dir(&down, true);
	interval(&down, 100, 20);
	autorate_attribute(&up.a, &down.a);
	interval(&up, 100, 20);
	assert_int_equal(down.a.last_action, AUTORATE_DOWN);
	assert_int_equal(up.a.last_action, AUTORATE_DOWN);
	autorate_attribute(&up.a, NULL);
	assert_true(up.a.owd_last_ns == UINT64_MAX);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hold),      cmocka_unit_test(test_down),
		cmocka_unit_test(test_up),        cmocka_unit_test(test_owd),
		cmocka_unit_test(test_attribute),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
