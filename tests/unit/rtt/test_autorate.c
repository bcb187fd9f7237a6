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
#include <string.h>

#include <cmocka.h>

#include "shaper/autorate.h"
#include "shaper/owd.h"

#define MS(x)   ((uint64_t)(x)*1000000ull)
#define MBIT(x) ((uint64_t)(x)*125000ull)

struct drive {
	struct autorate a;
	uint64_t now, bytes, arrived;
};

static void
start(struct drive *d, uint64_t min, uint64_t max)
{
	struct autorate_params p;

	autorate_params_default(&p, min, max);
	autorate_init(&d->a, &p);
	d->now = MS(1000);
	d->bytes = d->arrived = 0;
	autorate_tick(&d->a, d->now, d->bytes, d->bytes, 0);
}

/*
 * One 100 ms interval sending at share_pct of the rate, with one sample at
 * delay (or none), and arrivals at arrived (bytes/s; UINT64_MAX: as sent).
 */
static bool
interval_arrived(struct drive *d, uint32_t share_pct, uint64_t arrived, int64_t delay_ms)
{
	uint64_t sent = d->a.rate / 10 * share_pct / 100;

	if (delay_ms >= 0)
		autorate_sample(&d->a, MS(30) + MS(delay_ms), MS(30));
	d->bytes += sent;
	d->arrived += arrived == UINT64_MAX ? sent : arrived / 10;
	d->now += MS(100);
	return autorate_tick(&d->a, d->now, d->bytes, d->arrived, 0);
}

static bool
interval(struct drive *d, uint32_t share_pct, int64_t delay_ms)
{
	return interval_arrived(d, share_pct, UINT64_MAX, delay_ms);
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
	assert_false(autorate_tick(&d.a, d.now, d.bytes + MBIT(100), d.bytes + MBIT(100), 0));
}

static void
test_down(void **state)
{
	struct drive d;

	(void)state;
	start(&d, MBIT(10), MBIT(100));
	/* At the threshold (8 ms and one frame's time at the rate): 10 % off. */
	assert_false(interval(&d, 100, 8));
	autorate_sample(&d.a, MS(30) + autorate_threshold(&d.a, MS(8)), MS(30));
	assert_true(interval(&d, 100, -1));
	assert_int_equal(d.a.rate, MBIT(90));
	assert_int_equal(d.a.last_action, AUTORATE_DOWN);
	assert_int_equal(d.a.last_why, AR_WHY_CUT_BLOAT);
	/* Refractory: the queue needs time to drain. */
	assert_false(interval(&d, 100, 40));
	assert_false(interval(&d, 100, 40));
	assert_int_equal(d.a.last_why, AR_WHY_REFRACTORY);
	/* Far over it: 30 % off, from what got through (downstream: 60 % of the rate). */
	assert_true(interval(&d, 60, 40));
	assert_in_range(d.a.rate, MBIT(90) * 60 / 100 * 70 / 100 - 1000,
			MBIT(90) * 60 / 100 * 70 / 100 + 1000);
	/* Never under the minimum. */
	for (int i = 0; i < 40; i++)
		interval(&d, 100, 100);
	assert_int_equal(d.a.rate, MBIT(10));
}

/* Time the shaper wrote off (its worker away) is no time the line was watched. */
static void
test_stall(void **state)
{
	struct drive d;
	uint64_t lost = 0;

	(void)state;
	start(&d, MBIT(10), MBIT(100));
	/* 60 ms of 100 away, every sample late: it runs on (not ended early on them). */
	for (int i = 0; i < 4; i++)
		autorate_sample(&d.a, MS(30) + MS(40), MS(30));
	d.bytes += MBIT(100) * 40 / 1000;
	d.now += MS(100);
	lost += MS(60);
	assert_false(autorate_tick(&d.a, d.now, d.bytes, d.bytes, lost));
	/* Its length run, the samples since at baseline, at the rate: clear, no cut. */
	autorate_sample(&d.a, MS(31), MS(30));
	d.bytes += MBIT(100) * 60 / 1000;
	d.now += MS(60);
	assert_false(autorate_tick(&d.a, d.now, d.bytes, d.bytes, lost));
	assert_int_equal(d.a.last_why, AR_WHY_RAISE);
	assert_in_range(d.a.delivered_rate, MBIT(99), MBIT(101));
	/* Bloat, half the interval away: cut from the rate it sent at while it ran. */
	for (int i = 0; i < 4; i++)
		autorate_sample(&d.a, MS(30) + MS(40), MS(30));
	d.bytes += MBIT(100) * 50 / 1000;
	d.now += MS(100);
	lost += MS(50);
	assert_true(autorate_tick(&d.a, d.now, d.bytes, d.bytes, lost));
	assert_int_equal(d.a.last_why, AR_WHY_CUT_BLOAT);
	assert_in_range(d.a.rate, MBIT(69), MBIT(71));
	/* A count that went back (statistics reset): the interval is its wall time. */
	d.bytes += d.a.rate / 10;
	d.now += MS(100);
	assert_false(autorate_tick(&d.a, d.now, d.bytes, d.bytes, 0));
	assert_int_equal(d.a.last_why, AR_WHY_NO_SAMPLES);
}

static void
test_up(void **state)
{
	struct drive d;
	uint64_t r;

	(void)state;
	start(&d, MBIT(10), MBIT(100));
	d.a.rate = MBIT(40);
	assert_true(interval(&d, 50, 0)); /* at baseline but not loaded: towards base (max) */
	assert_int_equal(d.a.last_why, AR_WHY_DECAY);
	d.a.rate = MBIT(40);
	assert_true(interval(&d, 100, 1)); /* loaded at baseline: 5 % up */
	assert_int_equal(d.a.rate, MBIT(42));
	/* A bloat at 42 makes the next approach to 42 careful. */
	assert_true(interval(&d, 100, 20));
	r = d.a.rate;
	for (int i = 0; i < 3; i++)
		interval(&d, 100, 0);
	assert_true(d.a.rate > r);
	while (d.a.rate < MBIT(42) * 90 / 100)
		assert_true(interval(&d, 100, 0));
	r = d.a.rate;
	assert_true(interval(&d, 100, 0));
	assert_in_range(d.a.rate - r, r / 100, r / 100 + 1); /* 1 % near the old limit */
	/* Never over the maximum. */
	for (int i = 0; i < 200; i++)
		interval(&d, 100, 0);
	assert_int_equal(d.a.rate, MBIT(100));
}

/* What a baseline taken ms milliseconds ago has crept up by (OWD_CREEP_PPM), in ns. */
#define CREPT_NS(ms) ((uint64_t)(ms)*OWD_CREEP_PPM / 1000 * 1000)

/* The downstream one-way delay from TSvals: rises above each flow's own settled baseline. */
static void
test_owd(void **state)
{
	static struct owd_table t;
	uint64_t now = MS(5000);
	uint32_t ts = 777000;

	(void)state;
	owd_table_init(&t);
	/* A flow's first packet starts its baseline; its clock offset is its own. */
	assert_int_equal(owd_observe(&t, 0x1234, ts, now), -1);
	/* Nothing counts before the baseline has settled (half a second of packets). */
	assert_int_equal(owd_observe(&t, 0x1234, ts + 10, now + MS(10)), -1);
	assert_int_equal(owd_observe(&t, 0x1234, ts + 400, now + MS(400)), -1);
	/* Settled, the clock at 1 kHz: the same offset is no rise. */
	assert_int_equal(owd_observe(&t, 0x1234, ts + 600, now + MS(600)), 0);
	/* Sent 1 ms later but here 7 ms later: 6 ms in a queue on the way. */
	assert_int_equal(owd_observe(&t, 0x1234, ts + 601, now + MS(607)), MS(6) - CREPT_NS(7));
	/* A faster path than the baseline lowers it. */
	assert_int_equal(owd_observe(&t, 0x1234, ts + 700, now + MS(699)), 0);
	assert_int_equal(owd_observe(&t, 0x1234, ts + 701, now + MS(701)), MS(1));
	/* The baseline outlives one window, not two (a packet a second keeps the flow). */
	for (uint32_t s = 1; s <= 30; s++) {
		int64_t r = owd_observe(&t, 0x1234, ts + 700 + s * 1000 + 4,
					now + MS(699) + MS(s * 1000) + MS(9));
		if (s < 10)
			assert_int_equal(r, MS(5) - CREPT_NS(s * 1000 + 9));
		if (s > 21)
			assert_int_equal(r, 0);
	}
	/* Another flow, across the 2^32 wrap. */
	assert_int_equal(owd_observe(&t, 0x5678, 0xfffffff0u, now), -1);
	assert_int_equal(owd_observe(&t, 0x5678, 0x00000010u + 500, now + MS(0x20 + 500)), 0);
	assert_int_equal(owd_observe(&t, 0x5678, 0x00000010u + 501, now + MS(0x20 + 504)), MS(3));
}

/*
 * A sender's clock 100 ppm slow (an NTP-slewed server against our TSC):
 * one-way delays grow 1 ms every 10 s with no queue. The baseline follows
 * it (OWD_CREEP_PPM); a real queue of 5 ms still reads as one.
 */
static void
test_owd_drift(void **state)
{
	static struct owd_table t;
	uint64_t now = MS(5000);
	int64_t r, worst = 0;

	(void)state;
	owd_table_init(&t);
	/* A packet every 10 ms for 40 s, the sender's ms 0.9999 of ours. */
	for (uint32_t ms = 0; ms <= 40000; ms += 10) {
		r = owd_observe(&t, 0x40, 1000 + (uint32_t)((uint64_t)ms * 9999 / 10000),
				now + MS(ms));
		if (ms >= 1000 && r > worst)
			worst = r;
	}
	/* Without the creep: up to 2 ms (a minimum 20 s old); the rounding of TSvals is 1 ms. */
	assert_true(worst <= (int64_t)MS(1));
	/* 5 ms of queue on top is seen (less what 10 ms of creep takes). */
	r = owd_observe(&t, 0x40, 1000 + 40010 * 9999 / 10000 - 5, now + MS(40010));
	assert_true(r >= (int64_t)MS(4) && r <= (int64_t)MS(6));
}

/* Flows whose TSval clock is not at 1 kHz are left out; slots are not stolen; stale ones go. */
static void
test_owd_flows(void **state)
{
	static struct owd_table t;
	uint64_t now = MS(5000);

	(void)state;
	owd_table_init(&t);
	/* A microsecond clock (Linux can send one): its offset falls by 999 us a ms. */
	assert_int_equal(owd_observe(&t, 0x10, 1000000, now), -1);
	for (uint32_t ms = 10; ms <= 2000; ms += 10)
		assert_int_equal(owd_observe(&t, 0x10, 1000000 + ms * 1000, now + MS(ms)), -1);
	assert_int_equal(t.c.bad_clock, 1);
	/* A 100 Hz clock likewise. */
	assert_int_equal(owd_observe(&t, 0x11, 5000, now), -1);
	assert_int_equal(owd_observe(&t, 0x11, 5000 + 60, now + MS(600)), -1);
	assert_int_equal(t.c.bad_clock, 2);
	/* A flow landing in a busy slot is not timed, and the owner keeps its baseline. */
	assert_int_equal(owd_observe(&t, 0x20, 100, now), -1);
	assert_int_equal(owd_observe(&t, 0x20 + OWD_SLOTS, 9, now + MS(100)), -1);
	assert_int_equal(t.c.collisions, 1);
	assert_int_equal(owd_observe(&t, 0x20, 100 + 600, now + MS(602)), MS(2) - CREPT_NS(602));
	/* Once the owner is quiet for OWD_STALE_MS, the slot goes to the newcomer. */
	now += MS(602) + MS(OWD_STALE_MS);
	assert_int_equal(owd_observe(&t, 0x20 + OWD_SLOTS, 9, now), -1);
	assert_int_equal(owd_observe(&t, 0x20 + OWD_SLOTS, 9 + 600, now + MS(600)), 0);
	/* An owner back after a long silence starts over (its old baseline is stale). */
	assert_int_equal(owd_observe(&t, 0x30, 100, now), -1);
	assert_int_equal(owd_observe(&t, 0x30, 100 + 600, now + MS(600)), 0);
	assert_int_equal(owd_observe(&t, 0x30, 100 + 9600, now + MS(600 + 9000 + 30)), -1);
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
	d->bytes = d->arrived = 0;
	autorate_tick(&d->a, d->now, d->bytes, d->bytes, 0);
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
	assert_true(up.a.path.owd_last_ns == UINT64_MAX);
}

/* A line that fell far below the rate: the direction delivers 10 % of it, and is cut to that. */
static void
test_cut_at_any_load(void **state)
{
	struct drive d;

	(void)state;
	start(&d, MBIT(1), MBIT(100));
	assert_true(interval(&d, 10, 40));
	assert_int_equal(d.a.last_why, AR_WHY_CUT_BLOAT);
	/* 30 % off what got through (10 Mbit/s), not off the rate. */
	assert_in_range(d.a.rate, MBIT(7) - 1000, MBIT(7) + 1000);
	/* Downstream what arrived is the modem's rate, whatever we sent. */
	start_dir(&d, true);
	d.a.p.min_rate = MBIT(1);
	autorate_sample(&d.a, MS(30) + MS(40), MS(30));
	d.bytes += MBIT(100) / 10 / 10;
	d.now += MS(100);
	assert_true(autorate_tick(&d.a, d.now, d.bytes / 2, d.bytes, 0));
	assert_in_range(d.a.rate, MBIT(7) - 1000, MBIT(7) + 1000);
	/* A queue that takes long to drain is cut by more, up to cut_max_pct. */
	start(&d, MBIT(1), MBIT(100));
	assert_true(interval(&d, 10, 800));
	assert_in_range(d.a.rate, MBIT(5) - 1000, MBIT(5) + 1000);
}

/* At a low rate the thresholds grow by a frame's time: 1514 B at 1 Mbit/s is 12 ms. */
static void
test_threshold_at_low_rate(void **state)
{
	struct drive d;

	(void)state;
	start(&d, MBIT(1) / 2, MBIT(1));
	assert_in_range(autorate_threshold(&d.a, MS(8)), MS(20), MS(20) + 200000);
	assert_false(interval(&d, 100, 17)); /* over clear (3 ms and a frame), under bloat */
	assert_int_equal(d.a.last_why, AR_WHY_HOLD);
	assert_true(interval(&d, 100, 25));
	assert_int_equal(d.a.last_why, AR_WHY_CUT_BLOAT);
}

/*
 * At 80 Mbit/s a rise of 25 ms is cut for, then reads flat_ms until a path
 * decision takes it: returns the intervals that took.
 */
static int
cut_then_flat(struct drive *d, int64_t flat_ms)
{
	int i;

	start(d, MBIT(5), MBIT(100));
	d->a.rate = MBIT(80);
	assert_true(interval(d, 100, 25));
	assert_true(d->a.rate < MBIT(80));
	for (i = 0; i < 20 && d->a.last_why != AR_WHY_PATH; i++)
		interval(d, 100, flat_ms);
	assert_int_equal(d->a.last_why, AR_WHY_PATH);
	assert_int_equal(d->a.rate, MBIT(80));
	assert_int_equal(d->a.path.ns, MS(flat_ms));
	return i;
}

/* A rise that stays flat after a cut is the path's: taken into the baseline, the rate restored. */
static void
test_path_step(void **state)
{
	struct drive d;
	int i;

	(void)state;
	assert_true(cut_then_flat(&d, 25) <= 8); /* within a second */
	/* Now 25 ms reads as none: loaded, the rate rises. */
	for (i = 0; i < 3; i++) {
		assert_true(interval(&d, 100, 25));
		assert_int_equal(d.a.last_why, AR_WHY_RAISE);
	}
	/* A queue on top of the new path is seen. */
	assert_true(interval(&d, 100, 45));
	assert_int_equal(d.a.last_why, AR_WHY_CUT_BLOAT);
	/*
	 * The path back (samples at the old baseline): the part goes after two
	 * intervals in a row, not after one (an echo read low by its gap).
	 */
	interval(&d, 100, 0);
	assert_int_equal(d.a.path.ns, MS(25));
	interval(&d, 100, 25);
	interval(&d, 100, 0);
	assert_int_equal(d.a.path.ns, MS(25));
	interval(&d, 100, 0);
	assert_int_equal(d.a.path.ns, 0);
}

/*
 * A path decision taken at the cut rate read the step short (the rest then
 * stands between clear and bloat at the restored rate): the first standing
 * run after it, once loaded, is taken into the path, not cut for.
 */
static void
test_path_settles(void **state)
{
	struct drive d;
	int i;

	(void)state;
	cut_then_flat(&d, 20); /* read short at the cut rate */
	for (i = 0; i < 10 && d.a.path.ns == MS(20); i++)
		assert_false(interval(&d, 100, 25)); /* 5 ms: between clear and bloat */
	assert_int_equal(d.a.last_why, AR_WHY_PATH);
	assert_int_equal(i, 5); /* after the standing run, standing_intervals long */
	assert_int_equal(d.a.path.ns, MS(25));
	assert_int_equal(d.a.rate, MBIT(80));
	assert_true(interval(&d, 100, 25)); /* clear now: it rises */
	assert_int_equal(d.a.last_why, AR_WHY_RAISE);
	/* Only once: a standing rise after that is trimmed as ever. */
	for (i = 0; i < 10 && d.a.last_why != AR_WHY_CUT_STANDING; i++)
		interval(&d, 100, 30);
	assert_int_equal(d.a.last_why, AR_WHY_CUT_STANDING);
	assert_int_equal(d.a.path.ns, MS(25));
}

/*
 * A step read low now and then (one interval at a time: an echo not held for
 * the flow's next segment reads its gap short) is still one step: one cut,
 * a path decision that takes all of it, and the rate from before the cut.
 * Taken one interval at a time, the low one ended the series, the next
 * bloat cut again from the rate already cut, and the decision then took
 * the low reading as the step's size and restored the cut rate.
 */
static void
test_path_step_read_low(void **state)
{
	static const int64_t rise[] = {
		25, 25, 0, 25, 13, 25, 25, 0, 25, 25, 14, 25, 25, 25, 25, 25
	};
	struct drive d;
	unsigned int i;

	(void)state;
	start(&d, MBIT(5), MBIT(100));
	d.a.rate = MBIT(20);
	assert_true(interval(&d, 100, 25));
	for (i = 0; i < sizeof(rise) / sizeof(rise[0]) && d.a.last_why != AR_WHY_PATH; i++)
		interval(&d, 100, rise[i]);
	assert_int_equal(d.a.last_why, AR_WHY_PATH);
	assert_int_equal(d.a.downs, 1);
	assert_int_equal(d.a.path.ns, MS(25));
	assert_int_equal(d.a.rate, MBIT(20));
	/* Now 25 ms reads as none: the rate rises. */
	interval(&d, 100, 25);
	assert_int_equal(d.a.last_why, AR_WHY_RAISE);
}

/*
 * A step whose first readings after the cut are short for longer (below
 * bloat for two intervals: the flows' segments spaced wider at the cut
 * rate) ends the first series of cuts; the next, begun within a second,
 * still takes its starting rate from the first, and the path decision
 * restores the rate from before the step. Begun later, it starts from
 * the rate then.
 */
static uint64_t
step_read_short_at_first(unsigned int gap_intervals)
{
	struct drive d;
	unsigned int i;

	start(&d, MBIT(5), MBIT(100));
	d.a.rate = MBIT(20);
	assert_true(interval(&d, 100, 15));
	interval(&d, 100, 14);
	for (i = 0; i < gap_intervals; i++)
		interval(&d, 100, 6);
	for (i = 0; i < 30 && d.a.last_why != AR_WHY_PATH; i++)
		interval(&d, 100, 25);
	assert_int_equal(d.a.last_why, AR_WHY_PATH);
	return d.a.rate;
}

static void
test_path_step_short_at_first(void **state)
{
	(void)state;
	assert_int_equal(step_read_short_at_first(4), MBIT(20));
	assert_true(step_read_short_at_first(12) < MBIT(20));
}

/* A standing rise while the direction refills its rate (not loaded) is not cut for. */
static void
test_standing_needs_load(void **state)
{
	struct drive d;
	int i;

	(void)state;
	start(&d, MBIT(5), MBIT(100));
	d.a.rate = MBIT(80);
	for (i = 0; i < 10; i++)
		assert_false(interval(&d, 40, 5)); /* sends 40 % of its rate */
	assert_int_equal(d.a.last_why, AR_WHY_HOLD);
	assert_int_equal(d.a.rate, MBIT(80));
}

/*
 * Downstream, a flat rise after a cut while the line still carries the rate
 * it bloated at is the modem's own queue (short flows' bursts keep one
 * standing), not a longer path: it is cut again, from our rate, never taken
 * into the baseline. One whose arrivals follow our rate down is the path's.
 */
static void
test_flat_modem_queue(void **state)
{
	struct drive d;
	int i;

	(void)state;
	start_dir(&d, true);
	interval_arrived(&d, 100, MBIT(50), 13);
	assert_int_equal(d.a.last_why, AR_WHY_CUT_BLOAT);
	assert_true(d.a.rate < MBIT(50));
	for (i = 0; i < 30; i++) {
		interval_arrived(&d, 100, MBIT(50), 11);
		assert_true(d.a.last_why != AR_WHY_PATH);
	}
	assert_true(d.a.rate < MBIT(30));
	assert_int_equal(d.a.path.ns, 0);
	/* The same rise with the arrivals following our rate: the path's, the rate restored. */
	start_dir(&d, true);
	interval_arrived(&d, 100, MBIT(50), 13);
	for (i = 0; i < 20 && d.a.last_why != AR_WHY_PATH; i++)
		interval_arrived(&d, 100, d.a.rate, 11);
	assert_int_equal(d.a.last_why, AR_WHY_PATH);
	assert_int_equal(d.a.rate, MBIT(100));
}

/* A queue that grows after a cut is cut again; one that drains is waited for; neither is the path.
 */
static void
test_rising_and_draining(void **state)
{
	struct drive d;
	int64_t q = 30;

	(void)state;
	start(&d, MBIT(5), MBIT(100));
	assert_true(interval(&d, 100, q));
	for (int i = 0; i < 30; i++) {
		q = q > 12 ? q - 3 : 12; /* draining, slowly, then standing at 12 ms */
		interval(&d, 100, q);
		assert_true(d.a.last_why != AR_WHY_PATH || q == 12);
	}
	/* Larger than path_max_ns: never the path. */
	start(&d, MBIT(5), MBIT(100));
	for (int i = 0; i < 30; i++) {
		interval(&d, 100, 200);
		assert_true(d.a.last_why != AR_WHY_PATH);
	}
	assert_int_equal(d.a.rate, MBIT(5));
}

/* Idle: the rate decays towards base; without samples it holds, or decays when so configured. */
static void
test_decay_to_base(void **state)
{
	struct autorate_params p;
	struct drive d;

	(void)state;
	autorate_params_default(&p, MBIT(10), MBIT(100));
	p.base_rate = MBIT(50);
	autorate_init(&d.a, &p);
	d.now = MS(1000);
	d.bytes = 0;
	autorate_tick(&d.a, d.now, 0, 0, 0);
	assert_int_equal(d.a.rate, MBIT(100));
	assert_true(interval(&d, 2, 0));
	assert_int_equal(d.a.rate, MBIT(99));
	assert_int_equal(d.a.last_why, AR_WHY_DECAY);
	for (int i = 0; i < 200; i++)
		interval(&d, 2, 0);
	assert_int_equal(d.a.rate, MBIT(50));
	/* From below, up to base. */
	d.a.rate = MBIT(20);
	for (int i = 0; i < 200; i++)
		interval(&d, 0, 1);
	assert_int_equal(d.a.rate, MBIT(50));
	/* No samples: hold ... */
	d.a.rate = MBIT(90);
	assert_false(interval(&d, 0, -1));
	assert_int_equal(d.a.last_why, AR_WHY_NO_SAMPLES);
	assert_true(d.a.why[AR_WHY_NO_SAMPLES] >= 1);
	/* ... or decay. */
	d.a.p.decay_without_samples = true;
	assert_true(interval(&d, 0, -1));
	assert_true(d.a.rate < MBIT(90));
	assert_string_equal(autorate_reason_name(AR_WHY_DECAY), "decay");
	assert_string_equal(autorate_reason_name(AR_WHY_N), "hold");
}

/* Four samples at bloat half an interval in end the interval early. */
static void
test_early(void **state)
{
	struct drive d;

	(void)state;
	start(&d, MBIT(5), MBIT(100));
	for (int i = 0; i < 4; i++)
		autorate_sample(&d.a, MS(30) + MS(20), MS(30));
	d.bytes += MBIT(100) / 40;
	assert_false(autorate_tick(&d.a, d.now + MS(25), d.bytes, d.bytes, 0)); /* too soon */
	assert_true(autorate_tick(&d.a, d.now + MS(50), d.bytes, d.bytes, 0));
	assert_int_equal(d.a.last_why, AR_WHY_CUT_BLOAT);
	/* Three are not enough. */
	start(&d, MBIT(5), MBIT(100));
	for (int i = 0; i < 3; i++)
		autorate_sample(&d.a, MS(30) + MS(20), MS(30));
	assert_false(autorate_tick(&d.a, d.now + MS(60), d.bytes, d.bytes, 0));
}

/*
 * The direction that carries the other's ACKs (a fifth of the other's load share) is
 * not cut for a rise without one-way figures, nor for a small one the figures put in it.
 */
static void
test_lesser_direction(void **state)
{
	struct drive up, down;

	(void)state;
	start_dir(&up, false);
	start_dir(&down, true);
	interval(&down, 100, 20);
	autorate_attribute(&up.a, &down.a);
	assert_int_equal(up.a.other.load_pct, 100);
	assert_false(interval(&up, 20, 20));
	assert_int_equal(up.a.last_why, AR_WHY_OTHER_DIR);
	assert_int_equal(down.a.last_why, AR_WHY_CUT_BLOAT);
	/* Loaded alike: both cut, as before. */
	start_dir(&up, false);
	start_dir(&down, true);
	interval(&down, 100, 20);
	autorate_attribute(&up.a, &down.a);
	assert_true(interval(&up, 100, 20));
	assert_int_equal(up.a.last_why, AR_WHY_CUT_BLOAT);
	/* One-way figures that put a large rise in the lesser direction: cut. */
	start_dir(&up, false);
	start_dir(&down, true);
	autorate_owd_sample(&down.a, MS(1));
	interval(&down, 100, 60);
	autorate_attribute(&up.a, &down.a);
	assert_true(interval(&up, 20, 60));
	assert_int_equal(up.a.last_why, AR_WHY_CUT_BLOAT);
	/* ... a small one: not. */
	start_dir(&up, false);
	start_dir(&down, true);
	autorate_owd_sample(&down.a, MS(1));
	interval(&down, 100, 20);
	autorate_attribute(&up.a, &down.a);
	assert_false(interval(&up, 20, 20));
	assert_int_equal(up.a.last_why, AR_WHY_OTHER_DIR);
}

/*
 * Both lines fallen to a tenth under RRUL: the download carries a tenth of
 * its rate and the upload, at its minimum, all of its own; but the download
 * carries twice the upload's bytes, so it is not the upload's ACKs, and its
 * own one-way rise of 20 ms is cut for. At a fiftieth of the upload's bytes
 * it is (a rise under lesser_ratio times bloat is not its own to cut).
 */
static void
test_lesser_by_bytes(void **state)
{
	struct drive up, down;

	(void)state;
	start_dir(&up, false);
	start_dir(&down, true);
	up.a.rate = MBIT(5);
	interval(&up, 100, 25);
	autorate_attribute(&up.a, &down.a);
	assert_in_range(down.a.other.load_rate, MBIT(5) - 10, MBIT(5) + 10);
	assert_int_equal(down.a.other.load_pct, 100);
	autorate_owd_sample(&down.a, MS(20));
	assert_true(interval(&down, 10, 25));
	assert_int_equal(down.a.last_why, AR_WHY_CUT_BLOAT);
	assert_true(down.a.rate < MBIT(10));
	/* The same rise, a fiftieth of the upload's bytes: its ACKs. */
	start_dir(&up, false);
	start_dir(&down, true);
	interval(&up, 100, 25);
	autorate_attribute(&up.a, &down.a);
	autorate_owd_sample(&down.a, MS(20));
	assert_false(interval(&down, 2, 25));
	assert_int_equal(down.a.last_why, AR_WHY_OTHER_DIR);
}

/*
 * Short downloads (no one-way figures): the upload carries only their ACKs
 * and requests, all of its rate once cut to its minimum of 5 Mbit/s, a share
 * no smaller than the download's of its own; but a twentieth of its bytes.
 * Not cut for the rise, at bloat or standing; at a tenth of the bytes (an
 * upload of its own), it is.
 */
static void
test_acks_only(void **state)
{
	struct drive up, down;

	(void)state;
	start_dir(&up, false);
	start_dir(&down, true);
	interval(&down, 100, -1); /* 100 Mbit/s, all of its rate */
	up.a.rate = MBIT(5);
	autorate_attribute(&up.a, &down.a);
	assert_false(interval(&up, 100, 20));
	assert_int_equal(up.a.last_why, AR_WHY_OTHER_DIR);
	for (int i = 0; i < 10; i++) {
		autorate_attribute(&up.a, &down.a);
		assert_false(interval(&up, 100, 8)); /* between clear and bloat (5.4, 10.4 ms) */
		assert_int_equal(up.a.last_why, AR_WHY_OTHER_DIR);
	}
	/* Ten times fewer bytes: more than ACKs, cut. */
	start_dir(&up, false);
	start_dir(&down, true);
	interval(&down, 100, -1);
	up.a.rate = MBIT(10);
	autorate_attribute(&up.a, &down.a);
	assert_true(interval(&up, 100, 20));
	assert_int_equal(up.a.last_why, AR_WHY_CUT_BLOAT);
}

/*
 * An upload carrying only the downloads' ACKs (5 Mbit/s of its 20, the
 * download 100), its one-way figures putting a large rise in it: cut, but
 * not below what it carries and a quarter (acks_floor); without the rule
 * to 70 % of it.
 */
static uint64_t
acks_cut(uint32_t floor_pct)
{
	struct drive up, down;

	start_dir(&up, false);
	start_dir(&down, true);
	up.a.p.min_rate = MBIT(1);
	up.a.p.acks_floor_pct = floor_pct;
	up.a.rate = MBIT(20);
	autorate_owd_sample(&down.a, 0);
	interval(&down, 100, 60);
	autorate_attribute(&up.a, &down.a);
	assert_true(interval(&up, 25, 60));
	assert_int_equal(up.a.last_why, AR_WHY_CUT_BLOAT);
	return up.a.rate;
}

static void
test_acks_floor(void **state)
{
	(void)state;
	assert_in_range(acks_cut(125), MBIT(5) * 125 / 100 - 1000, MBIT(5) * 125 / 100 + 1000);
	assert_true(acks_cut(0) <= MBIT(5) * 70 / 100 + 1000);
}

/*
 * Every reason has a name, every rule a name and words for the decision
 * log, the names apart.
 */
static void
test_reason_texts(void **state)
{
	unsigned int n = autorate_rule_count();

	(void)state;
	for (unsigned int i = 0; i < AR_WHY_N; i++) {
		assert_non_null(autorate_reason_name(i));
		for (unsigned int j = 0; j < i; j++)
			assert_string_not_equal(autorate_reason_name(i), autorate_reason_name(j));
	}
	assert_string_equal(autorate_reason_name(AR_WHY_REGAIN), "regain");
	assert_true(n >= AR_WHY_N);
	for (unsigned int i = 0; i < n; i++) {
		assert_non_null(autorate_rule_name(i));
		assert_true(strlen(autorate_rule_text(i)) > 10);
		for (unsigned int j = 0; j < i; j++)
			assert_string_not_equal(autorate_rule_name(i), autorate_rule_name(j));
	}
	assert_string_equal(autorate_rule_name(n), "hold");
}

/*
 * Without one-way figures (no timestamps) both directions see the same
 * rise. Each has a line (what got through at its last cut): 50 Mbit/s
 * down, 10 up, both rates there.
 */
static void
lines(struct drive *up, struct drive *down, uint32_t line_pct)
{
	start_dir(up, false);
	start_dir(down, true);
	up->a.p.line_pct = down->a.p.line_pct = line_pct;
	up->a.rate = up->a.series.bloat_rate = MBIT(10);
	down->a.rate = down->a.series.bloat_rate = MBIT(50);
	interval(up, 100, -1); /* what the upload carries, for autorate_attribute */
	autorate_attribute(&up->a, &down->a);
}

static void
test_no_owd_attribution(void **state)
{
	struct drive up, down;

	(void)state;
	/* The download refilling after a cut (60 % of its line), the upload at its own: not cut. */
	lines(&up, &down, 90);
	assert_false(interval(&down, 60, 20));
	assert_int_equal(down.a.last_why, AR_WHY_OTHER_DIR);
	/* ... as it was without the rule. */
	lines(&up, &down, 0);
	assert_true(interval(&down, 60, 20));
	assert_int_equal(down.a.last_why, AR_WHY_CUT_BLOAT);

	/*
	 * Both at their lines: the cheaper cut first. The download waits, the
	 * upload is cut; the download holds a refractory period from that cut
	 * and, the rise outlasting it, is cut.
	 */
	lines(&up, &down, 90);
	assert_false(interval(&down, 100, 20));
	assert_int_equal(down.a.last_why, AR_WHY_OTHER_DIR);
	autorate_attribute(&up.a, &down.a);
	assert_true(interval(&up, 100, 20));
	assert_int_equal(up.a.last_why, AR_WHY_CUT_BLOAT);
	autorate_attribute(&up.a, &down.a);
	for (int i = 0; i < 3; i++) { /* the download's clock: 0, 100 and 200 ms after the cut */
		assert_false(interval(&down, 100, 20));
		assert_int_equal(down.a.last_why, AR_WHY_OTHER_DIR);
	}
	assert_true(interval(&down, 100, 20));
	assert_int_equal(down.a.last_why, AR_WHY_CUT_BLOAT);

	/* The upload at its minimum cannot take the cut: the download's own. */
	lines(&up, &down, 90);
	up.a.rate = up.a.p.min_rate;
	autorate_attribute(&up.a, &down.a);
	assert_true(interval(&down, 60, 20));
	assert_int_equal(down.a.last_why, AR_WHY_CUT_BLOAT);

	/* With one-way figures none of this applies: the rise is put where they say. */
	lines(&up, &down, 90);
	autorate_owd_sample(&down.a, MS(20));
	assert_true(interval(&down, 60, 20));
	assert_int_equal(down.a.last_why, AR_WHY_CUT_BLOAT);
}

/*
 * Both at their lines, the download's rate raised far over what its TCP
 * fills (80 Mbit/s, carrying 50, its line), the upload carrying 8 % over
 * its own: the upload is the one probing (a queue grows only by what is
 * carried), and the download is not cut first. By the rates alone (80 / 50
 * against 11 / 10) it was.
 */
static void
test_probing_is_what_is_carried(void **state)
{
	struct drive up, down;

	(void)state;
	lines(&up, &down, 90);
	up.a.rate = MBIT(11);
	interval(&up, 98, -1); /* 10.8 Mbit/s */
	down.a.rate = MBIT(80);
	autorate_attribute(&up.a, &down.a);
	assert_false(interval(&down, 62, 20)); /* 49.6 Mbit/s */
	assert_int_equal(down.a.last_why, AR_WHY_OTHER_DIR);
	assert_int_equal(down.a.rate, MBIT(80));
	autorate_attribute(&up.a, &down.a);
	assert_true(interval(&up, 98, 20));
	assert_int_equal(up.a.last_why, AR_WHY_CUT_BLOAT);
}

/*
 * Upstream, a rise growing fast after a cut: what was sent fills the modem
 * faster than it drains, and the next cut is sized from the line that
 * growth implies (sent / (1 + growth)), not from what was sent.
 */
static uint64_t
second_cut(uint32_t growth_pct)
{
	struct drive up;
	uint64_t first;

	start_dir(&up, false);
	up.a.p.growth_pct = growth_pct;
	up.a.rate = MBIT(20);
	assert_true(interval(&up, 100, 20));
	first = up.a.rate;
	assert_false(interval(&up, 100, 60)); /* refractory */
	assert_false(interval(&up, 100, 100));
	/* 300 ms on, 140 ms: grown 120 ms in 300 (40 %): the line is what was sent / 1.4 */
	assert_true(interval(&up, 100, 140));
	assert_int_equal(up.a.last_why, AR_WHY_CUT_BLOAT);
	return up.a.rate * 1000 / first;
}

static void
test_growth_sized_cut(void **state)
{
	(void)state;
	/* The same 30 % cut (140 ms is past twice bloat) from 1/1.4 of what was sent. */
	assert_in_range(second_cut(25), 490, 510);
	assert_in_range(second_cut(0), 690, 710);
	/* Growth under the threshold: sized from what was sent. */
	assert_in_range(second_cut(50), 690, 710);
}

/* The upstream's share is taken against the highest one-way rise of the last intervals. */
static void
test_owd_recent(void **state)
{
	struct drive up, down;
	static const int64_t owd[3] = { 30, 12, 1 }; /* a downstream queue draining */

	(void)state;
	start_dir(&up, false);
	start_dir(&down, true);
	for (int i = 0; i < 3; i++) {
		autorate_owd_sample(&down.a, MS(owd[i]));
		interval(&down, 100, 30);
	}
	autorate_attribute(&up.a, &down.a);
	assert_int_equal(up.a.path.owd_last_ns, MS(30));
	assert_false(interval(&up, 100,
			      30)); /* the RTT still shows the queue: not the upstream's */
	assert_int_equal(up.a.last_why, AR_WHY_OTHER_DIR);
}

/*
 * The upstream's interval ends while the downstream's is under way (early
 * ends drift them apart): a downstream line that just fell shows its queue
 * in the downstream's interval under way, whose latest one-way figure the
 * upstream's share is taken against (its lowest, 20 ms, came before the
 * queue grew), so only the downstream is cut.
 */
static void
test_owd_under_way(void **state)
{
	struct drive up, down;

	(void)state;
	start_dir(&up, false);
	start_dir(&down, true);
	for (int i = 0; i < 3; i++)
		both(&up, &down, 0, 0);
	assert_int_equal(up.a.rate, MBIT(100));
	autorate_owd_sample(&down.a, MS(20));
	autorate_owd_sample(&down.a, MS(40));
	autorate_attribute(&up.a, &down.a);
	assert_int_equal(up.a.path.owd_last_ns, MS(40)); /* the latest: the queue grew */
	assert_false(interval(&up, 100, 40));
	assert_int_equal(up.a.last_why, AR_WHY_OTHER_DIR);
	assert_true(interval(&down, 100, 40));
	assert_int_equal(down.a.last_why, AR_WHY_CUT_BLOAT);
	assert_int_equal(up.a.rate, MBIT(100));
}

/*
 * Downstream without one-way figures, cut for a rise that then outlasted
 * the cut while what arrives followed its rate down, the upstream cut a
 * refractory period later: the rise was not the downstream's, and its cut
 * is undone, back to the rate it had when cut (42 Mbit/s, not the 25 that
 * got through: its TCP was held back by the upstream's queue, so what got
 * through says nothing of its line). A modem draining its own queue keeps arrivals
 * at its rate, above ours: that cut stands. So does one the other's came
 * with, and one the other only held after (its own queue draining: a hold
 * that restarts its refractory period, not a cut). Returns the rate after.
 */
static uint64_t rate_when_cut; /* the rate a cut_then_other* cut was made at */

static uint64_t
cut_then_other(uint64_t arrived_after, uint64_t other_after_ms, bool other_cut)
{
	struct drive down;

	start_dir(&down, true);
	down.a.rate = MBIT(40);
	interval_arrived(&down, 100, MBIT(25), 0);
	rate_when_cut = down.a.rate;
	interval_arrived(&down, 100, MBIT(25), 20);
	assert_int_equal(down.a.last_why, AR_WHY_CUT_BLOAT);
	assert_true(down.a.rate < MBIT(25));
	for (int i = 0; i < 4; i++) {
		if (i == 3) { /* the upstream's cut (or hold), as autorate_attribute copies it */
			down.a.other.down_ns = down.a.series.last_cut_ns + MS(other_after_ms);
			down.a.other.cut_ns = other_cut ? down.a.other.down_ns
							: down.a.series.last_cut_ns - MS(50);
			down.a.other.rate = MBIT(10);
		}
		interval_arrived(&down, 100, arrived_after == 0 ? down.a.rate : arrived_after, 20);
	}
	return down.a.rate;
}

static void
test_undo_not_mine(void **state)
{
	uint64_t undone;

	(void)state;
	undone = cut_then_other(0, 350, true);

	assert_int_equal(undone, rate_when_cut);
	assert_true(rate_when_cut > MBIT(40)); /* raised once, clear, before the cut */
	assert_in_range(cut_then_other(MBIT(25), 350, true), 1, MBIT(25) - 1);
	assert_in_range(cut_then_other(0, 100, true), 1, MBIT(25) - 1);
	assert_in_range(cut_then_other(0, 350, false), 1, MBIT(25) - 1);
}

/*
 * The same cut, its rise gone in the next intervals (our own queue, drained)
 * and a new one coming while the other direction holds for its own queue
 * draining, which restarts its refractory period but is no cut: nothing says
 * the rise was not ours, and the cut stands. After the fall of a line
 * both directions' first cuts are right, and the upstream's hold while its
 * modem drained undid the downstream's (on the bed, back to its old line
 * over a modem that had halved; the next cut then took it to half of that).
 */
static uint64_t
cut_then_other_held(bool other_cut)
{
	struct drive down;
	uint64_t cut_at;

	start_dir(&down, true);
	down.a.rate = MBIT(40);
	interval_arrived(&down, 100, MBIT(25), 0);
	rate_when_cut = down.a.rate;
	interval_arrived(&down, 100, MBIT(25), 20);
	assert_int_equal(down.a.last_why, AR_WHY_CUT_BLOAT);
	cut_at = down.a.series.last_cut_ns;
	interval_arrived(&down, 100, down.a.rate, 20); /* refractory */
	interval_arrived(&down, 100, down.a.rate, 20);
	interval_arrived(&down, 100, down.a.rate, 2); /* drained */
	assert_int_equal(down.a.series.last_down_ns, cut_at);
	down.a.other.down_ns = cut_at + MS(350);
	down.a.other.cut_ns = other_cut ? down.a.other.down_ns : cut_at - MS(50);
	down.a.other.rate = MBIT(10);
	interval_arrived(&down, 100, down.a.rate, 20);
	return down.a.rate;
}

static void
test_undo_needs_a_cut(void **state)
{
	uint64_t undone;

	(void)state;
	undone = cut_then_other_held(true);

	assert_int_equal(undone, rate_when_cut);
	assert_in_range(cut_then_other_held(false), 1, MBIT(25) - 1);
}

/*
 * The undone cut's line goes with it: a downstream whose line was 40 Mbit/s
 * (an earlier cut), cut where 25 got through for a rise that was the
 * upstream's, has its rate back where it was and its line back at 40. Left at 25,
 * it would look at its line and probing as soon as it carried 25, and be
 * cut again at the upstream's next rise (not_bottleneck). An earlier line
 * below the cut's (or none) leaves the cut's.
 */
static void
test_undo_restores_line(void **state)
{
	const uint64_t before[] = { MBIT(40), MBIT(20), 0 };

	(void)state;
	for (unsigned int k = 0; k < 3; k++) {
		struct drive down;

		start_dir(&down, true);
		down.a.rate = MBIT(40);
		down.a.series.bloat_rate = before[k];
		interval_arrived(&down, 100, MBIT(25), 0);
		rate_when_cut = down.a.rate;
		interval_arrived(&down, 100, MBIT(25), 20);
		assert_int_equal(down.a.last_why, AR_WHY_CUT_BLOAT);
		assert_int_equal(down.a.series.bloat_rate, MBIT(25));
		for (int i = 0; i < 4; i++) {
			if (i == 3) {
				down.a.other.down_ns = down.a.other.cut_ns =
						down.a.series.last_cut_ns + MS(350);
				down.a.other.rate = MBIT(10);
			}
			interval_arrived(&down, 100, down.a.rate, 20);
		}
		assert_int_equal(down.a.last_why, AR_WHY_OTHER_DIR);
		assert_int_equal(down.a.rate, rate_when_cut);
		assert_int_equal(down.a.series.bloat_rate,
				 before[k] > MBIT(25) ? before[k] : MBIT(25));
	}
}

/*
 * Downstream without one-way figures, a rise that goes on growing after the
 * series' first cut (sized from the 50 Mbit/s that arrived: the modem's
 * rate) while what arrives falls far under our rate: no modem queue drains
 * into us at a rate above ours, so the flows are paced by something else
 * (their ACKs in the upload's queue) or the line fell again. The second
 * cut is sized from our rate and the line stays the first cut's. Arrivals
 * at our rate (a modem queue draining into us) still size it, as before.
 */
static void
down_second_cut(uint64_t arrived_share_pct, uint64_t *rate_before, struct drive *down)
{
	start_dir(down, true);
	interval_arrived(down, 100, MBIT(50), 20);
	assert_int_equal(down->a.last_why, AR_WHY_CUT_BLOAT);
	assert_int_equal(down->a.series.bloat_rate, MBIT(50));
	for (int i = 0; i < 2; i++) /* refractory */
		interval_arrived(down, 100, down->a.rate, 20);
	*rate_before = down->a.rate;
	interval_arrived(down, 100, down->a.rate * arrived_share_pct / 100, 40);
	assert_int_equal(down->a.last_why, AR_WHY_CUT_BLOAT);
}

static void
test_second_cut_from_rate(void **state)
{
	struct drive down;
	uint64_t before;

	(void)state;
	down_second_cut(50, &before, &down);
	assert_in_range(down.a.rate, before * 69 / 100, before * 71 / 100); /* 30 % of our rate */
	assert_int_equal(down.a.series.bloat_rate, MBIT(50));
	down_second_cut(100, &before, &down);
	assert_in_range(down.a.series.bloat_rate, before * 99 / 100, before * 101 / 100);
	assert_in_range(down.a.rate, before * 69 / 100, before * 71 / 100);
	down_second_cut(120, &before, &down); /* more than our rate arrives: the modem's queue */
	assert_in_range(down.a.series.bloat_rate, before * 119 / 100, before * 121 / 100);
}

/* A one-way figure without news for owd_stale_ns is forgotten: the RTT alone decides. */
static void
test_owd_stale(void **state)
{
	struct drive up, down;

	(void)state;
	start_dir(&up, false);
	start_dir(&down, true);
	autorate_owd_sample(&down.a, MS(1));
	interval(&down, 100, 1);
	assert_int_equal(down.a.path.owd_last_ns, MS(1));
	for (int i = 0; i < 10; i++)
		interval(&down, 100, 1);
	assert_int_equal(down.a.path.owd_last_ns, MS(1)); /* 1 s: not yet */
	interval(&down, 100, 1);
	assert_true(down.a.path.owd_last_ns == UINT64_MAX);
	autorate_attribute(&up.a, &down.a);
	assert_true(up.a.path.owd_last_ns == UINT64_MAX);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hold),
		cmocka_unit_test(test_down),
		cmocka_unit_test(test_stall),
		cmocka_unit_test(test_up),
		cmocka_unit_test(test_owd),
		cmocka_unit_test(test_owd_flows),
		cmocka_unit_test(test_owd_drift),
		cmocka_unit_test(test_attribute),
		cmocka_unit_test(test_cut_at_any_load),
		cmocka_unit_test(test_threshold_at_low_rate),
		cmocka_unit_test(test_path_step),
		cmocka_unit_test(test_path_settles),
		cmocka_unit_test(test_path_step_read_low),
		cmocka_unit_test(test_path_step_short_at_first),
		cmocka_unit_test(test_standing_needs_load),
		cmocka_unit_test(test_flat_modem_queue),
		cmocka_unit_test(test_rising_and_draining),
		cmocka_unit_test(test_decay_to_base),
		cmocka_unit_test(test_early),
		cmocka_unit_test(test_owd_stale),
		cmocka_unit_test(test_lesser_direction),
		cmocka_unit_test(test_lesser_by_bytes),
		cmocka_unit_test(test_acks_only),
		cmocka_unit_test(test_acks_floor),
		cmocka_unit_test(test_reason_texts),
		cmocka_unit_test(test_no_owd_attribution),
		cmocka_unit_test(test_probing_is_what_is_carried),
		cmocka_unit_test(test_growth_sized_cut),
		cmocka_unit_test(test_owd_recent),
		cmocka_unit_test(test_owd_under_way),
		cmocka_unit_test(test_undo_not_mine),
		cmocka_unit_test(test_second_cut_from_rate),
		cmocka_unit_test(test_undo_needs_a_cut),
		cmocka_unit_test(test_undo_restores_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
