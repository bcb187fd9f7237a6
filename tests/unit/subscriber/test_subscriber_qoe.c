/*
 * Loaded latency per subscriber (src/subscriber/sub_qoe.c): a minute's
 * samples kept only when the subscriber's own traffic made it busy, the
 * 80th and 95th percentiles over busy minutes, the windows forgetting old
 * ones, the bytes of the last whole minute; then the scheduler's entries,
 * fed as the worker feeds them (frames enqueued at their times, samples
 * through sub_sched_rtt_sample, the allocation's ticks turning minutes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/classify.h"
#include "shaper/sched.h"
#include "shaper/subscriber.h"
#include "shaper/subscriber_pool.h"
#include "shaper/subscriber_qoe.h"
#include "shaper/subscriber_sched.h"

#define MS  1000000ull
#define SEC 1000000000ull
#define MIN (60 * SEC)

static void
samples(struct sub_qoe *q, enum sub_rtt_side side, uint64_t rtt_ns, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		sub_qoe_sample(q, side, sub_rtt_bucket(rtt_ns));
}

static struct sub_qoe_acc
read_at(const struct sub_qoe *q, uint32_t minute, const uint64_t bytes[SUB_DIRS])
{
	struct sub_qoe_acc a;

	memset(&a, 0, sizeof(a));
	sub_qoe_merge(q, minute, bytes, &a);
	return a;
}

/* A 10 % share of the plan over the minute, either way: 80 kbit/s -> 60,000 bytes. */
static void
test_need(void **state)
{
	(void)state;
	assert_int_equal(sub_qoe_need(80000), 60000);
	assert_int_equal(sub_qoe_need(100000000), 75000000);
	assert_int_equal(sub_qoe_need(0), 0);
}

/*
 * Busy minutes keep their samples, quiet ones lose them; the percentiles
 * are of the busy minutes only, whatever the quiet ones held.
 */
static void
test_busy_only(void **state)
{
	static const uint64_t plan[SUB_DIRS] = { 80000, 80000 };
	struct sub_qoe q;
	struct sub_qoe_acc a;
	struct sub_qoe_summary s;
	uint64_t bytes[SUB_DIRS] = { 0, 0 };

	(void)state;
	memset(&q, 0, sizeof(q));
	/* Minute 5: quiet (1,000 bytes), 5 ms samples. */
	sub_qoe_turn(&q, 5, bytes, plan);
	samples(&q, SUB_RTT_LAN, 5 * MS, 100);
	bytes[SUB_DOWN] += 1000;
	a = read_at(&q, 5, bytes);
	assert_int_equal(a.busy_minutes, 0);
	sub_qoe_summarize(&a, SUB_RTT_LAN, &s);
	assert_int_equal(s.samples, 0);
	/* Minute 6: busy upstream alone (60,000 bytes), 40 ms samples. */
	sub_qoe_turn(&q, 6, bytes, plan);
	samples(&q, SUB_RTT_LAN, 40 * MS, 50);
	samples(&q, SUB_RTT_WAN, 20 * MS, 10);
	bytes[SUB_UP] += 59999;
	a = read_at(&q, 6, bytes);
	assert_int_equal(a.busy_minutes, 0); /* one byte short, so far */
	bytes[SUB_UP] += 1;
	a = read_at(&q, 6, bytes); /* busy already: counted before it ends */
	assert_int_equal(a.busy_minutes, 1);
	sub_qoe_summarize(&a, SUB_RTT_LAN, &s);
	assert_int_equal(s.samples, 50);
	/* Minute 7: quiet again, 5 ms. Minute 6's samples stay, 7's do not count. */
	sub_qoe_turn(&q, 7, bytes, plan);
	samples(&q, SUB_RTT_LAN, 5 * MS, 200);
	a = read_at(&q, 7, bytes);
	assert_int_equal(a.busy_minutes, 1);
	assert_int_equal(a.last_bytes, 60000);
	sub_qoe_summarize(&a, SUB_RTT_LAN, &s);
	assert_int_equal(s.samples, 50);
	assert_int_equal(sub_rtt_bucket(s.p80_ns), sub_rtt_bucket(40 * MS));
	assert_int_equal(sub_rtt_bucket(s.p95_ns), sub_rtt_bucket(40 * MS));
	sub_qoe_summarize(&a, SUB_RTT_WAN, &s);
	assert_int_equal(s.samples, 10);
	assert_int_equal(sub_rtt_bucket(s.p95_ns), sub_rtt_bucket(20 * MS));
	/* The minute after 7, without a turn: 7 was the last whole one, with no bytes. */
	a = read_at(&q, 8, bytes);
	assert_int_equal(a.last_bytes, 0);
}

/*
 * The percentiles over several busy minutes: 70 % of the samples at 10 ms
 * and 30 % at 100 ms put both in the 100 ms bucket; 90 % and 10 % split them.
 */
static void
test_percentiles(void **state)
{
	static const uint64_t plan[SUB_DIRS] = { 80000, 80000 };
	struct sub_qoe q;
	struct sub_qoe_acc a;
	struct sub_qoe_summary s;
	uint64_t bytes[SUB_DIRS] = { 0, 0 };

	(void)state;
	memset(&q, 0, sizeof(q));
	for (uint32_t m = 1; m <= 4; m++) {
		sub_qoe_turn(&q, m, bytes, plan);
		samples(&q, SUB_RTT_LAN, 10 * MS, 70);
		samples(&q, SUB_RTT_LAN, 100 * MS, 30);
		bytes[SUB_DOWN] += 100000;
	}
	sub_qoe_turn(&q, 5, bytes, plan);
	a = read_at(&q, 5, bytes);
	assert_int_equal(a.busy_minutes, 4);
	sub_qoe_summarize(&a, SUB_RTT_LAN, &s);
	assert_int_equal(s.samples, 400);
	assert_true(s.p80_ns >= 10 * MS && s.p80_ns < 126 * MS);
	assert_int_equal(sub_rtt_bucket(s.p80_ns), sub_rtt_bucket(100 * MS));
	assert_int_equal(sub_rtt_bucket(s.p95_ns), sub_rtt_bucket(100 * MS));
	/* 90 % at 10 ms: p80 in the 10 ms bucket, p95 at 100 ms. */
	memset(&q, 0, sizeof(q));
	sub_qoe_turn(&q, 1, bytes, plan);
	samples(&q, SUB_RTT_LAN, 10 * MS, 90);
	samples(&q, SUB_RTT_LAN, 100 * MS, 10);
	bytes[SUB_DOWN] += 100000;
	sub_qoe_turn(&q, 2, bytes, plan);
	a = read_at(&q, 2, bytes);
	sub_qoe_summarize(&a, SUB_RTT_LAN, &s);
	assert_int_equal(sub_rtt_bucket(s.p80_ns), sub_rtt_bucket(10 * MS));
	assert_int_equal(sub_rtt_bucket(s.p95_ns), sub_rtt_bucket(100 * MS));
}

/* Busy minutes are kept 15 to 30 minutes: the window and the one before. */
static void
test_windows(void **state)
{
	static const uint64_t plan[SUB_DIRS] = { 80000, 80000 };
	struct sub_qoe q;
	struct sub_qoe_acc a;
	uint64_t bytes[SUB_DIRS] = { 0, 0 };

	(void)state;
	memset(&q, 0, sizeof(q));
	sub_qoe_turn(&q, 3, bytes, plan); /* window 1: minutes 1-15 */
	samples(&q, SUB_RTT_LAN, 10 * MS, 10);
	bytes[SUB_DOWN] += 60000;
	sub_qoe_turn(&q, 20, bytes, plan); /* window 2 */
	samples(&q, SUB_RTT_LAN, 10 * MS, 5);
	bytes[SUB_DOWN] += 60000;
	sub_qoe_turn(&q, 21, bytes, plan);
	a = read_at(&q, 21, bytes);
	assert_int_equal(a.busy_minutes, 2);
	assert_int_equal(a.h[SUB_RTT_LAN][sub_rtt_bucket(10 * MS)], 15);
	/* Window 3: window 1's minute is gone, 2's stays. */
	a = read_at(&q, 31, bytes);
	assert_int_equal(a.busy_minutes, 1);
	assert_int_equal(a.h[SUB_RTT_LAN][sub_rtt_bucket(10 * MS)], 5);
	/* Window 4: nothing recent. */
	a = read_at(&q, 46, bytes);
	assert_int_equal(a.busy_minutes, 0);
	assert_int_equal(a.h[SUB_RTT_LAN][sub_rtt_bucket(10 * MS)], 0);
	/* A busy minute long after: the old windows are not carried. */
	sub_qoe_turn(&q, 100, bytes, plan);
	bytes[SUB_DOWN] += 60000;
	sub_qoe_turn(&q, 101, bytes, plan);
	a = read_at(&q, 101, bytes);
	assert_int_equal(a.busy_minutes, 1);
	assert_int_equal(a.h[SUB_RTT_LAN][sub_rtt_bucket(10 * MS)], 0);
}

/* ---------------------------------------------------------------- sched */

#define NPKT  400
#define FRAME 600u

static struct {
	struct sub_set set;
	struct sub_sched *ss;
	struct sched *link[SUB_DIRS];
	uint8_t buf[NPKT][FRAME];
	struct sh_pkt pkt[NPKT];
	unsigned int used;
} W;

/* An untagged IPv4/UDP frame to 100.64.0.(1 + sub). */
static struct sh_pkt *
frame(uint32_t sub, const struct classify_key *key)
{
	struct sh_pkt *p = &W.pkt[W.used];
	uint8_t *b = W.buf[W.used++];

	assert_true(W.used <= NPKT);
	memset(b, 0, FRAME);
	b[12] = 0x08;
	b[14] = 0x45;
	b[16] = (FRAME - 14) >> 8;
	b[17] = (FRAME - 14) & 0xff;
	b[22] = 64;
	b[23] = 17;
	b[26] = 198, b[27] = 51, b[28] = 100, b[29] = 1;
	b[30] = 100, b[31] = 64, b[32] = 0, b[33] = (uint8_t)(1 + sub);
	b[34] = 0x13, b[36] = 0x23;
	memset(p, 0, sizeof(*p));
	p->data = b;
	p->len = p->hdr_len = FRAME;
	p->mem = 2304;
	classify_pkt(p, key);
	return p;
}

static int
setup(void **state)
{
	struct sched_params lp, sp;
	struct sub_sched_config cfg;
	char err[256];

	(void)state;
	memset(&W, 0, sizeof(W));
	sub_set_init(&W.set);
	W.set.nodes[SUB_ROOT].capacity[SUB_DOWN] = W.set.nodes[SUB_ROOT].capacity[SUB_UP] =
			100000000;
	for (uint32_t i = 0; i < 2; i++) {
		uint32_t s, p;

		assert_int_equal(sub_set_add_sub(&W.set, &s), 0);
		assert_int_equal(sub_set_add_prefix(&W.set, &p), 0);
		snprintf(W.set.subs[s].id, SUB_ID_LEN, "c%u", i);
		W.set.subs[s].node = SUB_ROOT;
		W.set.subs[s].plan[SUB_DOWN].max = W.set.subs[s].plan[SUB_UP].max = 80000;
		W.set.subs[s].nprefixes = 1;
		W.set.nodes[SUB_ROOT].nsubs++;
		W.set.prefixes[p].family = 4;
		W.set.prefixes[p].len = 32;
		W.set.prefixes[p].addr[0] = 100;
		W.set.prefixes[p].addr[1] = 64;
		W.set.prefixes[p].addr[3] = (uint8_t)(1 + i);
		W.set.prefixes[p].sub = s;
	}
	if (sub_set_validate(&W.set, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	sched_params_default(&lp, SCHED_DISC_CAKE);
	lp.rate = 100000000 / 8;
	for (int d = 0; d < SUB_DIRS; d++)
		assert_non_null(W.link[d] = sched_create(&lp, err, sizeof(err)));
	sp = lp;
	sp.rate = 80000 / 8;
	sub_pool_cake_size(&sp);
	memset(&cfg, 0, sizeof(cfg));
	cfg.set = &W.set;
	cfg.params[SUB_DOWN] = cfg.params[SUB_UP] = sp;
	cfg.active = 4;
	cfg.link[SUB_DOWN] = W.link[SUB_DOWN];
	cfg.link[SUB_UP] = W.link[SUB_UP];
	W.ss = sub_sched_create(&cfg, err, sizeof(err));
	if (W.ss == NULL)
		fail_msg("%s", err);
	return 0;
}

static int
teardown(void **state)
{
	struct sh_pkt_list rest;

	(void)state;
	sh_pkt_list_init(&rest);
	sub_sched_flush(W.ss, SUB_DOWN, &rest);
	sub_sched_flush(W.ss, SUB_UP, &rest);
	sub_sched_free(W.ss);
	sched_free(W.link[SUB_DOWN]);
	sched_free(W.link[SUB_UP]);
	sub_set_free(&W.set);
	return 0;
}

static struct sub_qoe_summary
busy_rtt(uint32_t sub, enum sub_rtt_side side, uint32_t *minutes, uint64_t *last)
{
	struct sub_qoe_acc a;
	struct sub_qoe_summary s;

	memset(&a, 0, sizeof(a));
	sub_sched_qoe(W.ss, sub, &a);
	sub_qoe_summarize(&a, side, &s);
	*minutes = a.busy_minutes;
	*last = a.last_bytes;
	return s;
}

/*
 * Two subscribers with 80 kbit/s plans in the scheduler: c0 has 150 frames
 * (90,000 bytes) arrive in its minute, c1 ten. Both have 40 ms samples on
 * the LAN side. Only c0's minute was busy, so only c0 has a busy RTT; and
 * the allocation's tick in the next minute turns it without a sample.
 */
static void
test_sched(void **state)
{
	struct sh_pkt_list dropped;
	struct classify_key key;
	struct sub_qoe_summary s;
	struct sh_pkt *out[16];
	uint64_t t = 2 * MIN + SEC, last;
	uint32_t minutes;

	(void)state;
	classify_key_init(&key, 7);
	sh_pkt_list_init(&dropped);
	sub_sched_note_time(W.ss, t); /* the worker's time, before any frame */
	for (unsigned int k = 0; k < 160; k++, t += 10 * MS) {
		uint32_t sub = k % 16 == 0 ? 1 : 0;

		sub_sched_enqueue(W.ss, SUB_DOWN, sub, frame(sub, &key), t, &dropped);
		sub_sched_dequeue_burst(W.ss, SUB_DOWN, out, 16, t, &dropped);
	}
	for (unsigned int k = 0; k < 40; k++) {
		sub_sched_rtt_sample(W.ss, 0, SUB_RTT_LAN, 40 * MS, t);
		sub_sched_rtt_sample(W.ss, 1, SUB_RTT_LAN, 40 * MS, t);
	}
	s = busy_rtt(0, SUB_RTT_LAN, &minutes, &last);
	assert_int_equal(minutes, 1); /* busy already */
	assert_int_equal(s.samples, 40);
	assert_int_equal(sub_rtt_bucket(s.p95_ns), sub_rtt_bucket(40 * MS));
	s = busy_rtt(1, SUB_RTT_LAN, &minutes, &last);
	assert_int_equal(minutes, 0);
	assert_int_equal(s.samples, 0);

	/* The next minute: a dequeue's tick starts it for both, no sample needed. */
	t = 3 * MIN + SEC;
	sub_sched_dequeue_burst(W.ss, SUB_DOWN, out, 16, t, &dropped);
	s = busy_rtt(0, SUB_RTT_LAN, &minutes, &last);
	assert_int_equal(minutes, 1);
	assert_int_equal(s.samples, 40);
	assert_int_equal(last, 150 * FRAME);
	s = busy_rtt(1, SUB_RTT_LAN, &minutes, &last);
	assert_int_equal(s.samples, 0);
	assert_int_equal(last, 10 * FRAME);
	/* The link's entry: nothing arrived for it. */
	s = busy_rtt(2, SUB_RTT_LAN, &minutes, &last);
	assert_int_equal(minutes, 0);
	assert_int_equal(last, 0);
	/* Half an hour later both are forgotten. */
	sub_sched_note_time(W.ss, 40 * MIN);
	s = busy_rtt(0, SUB_RTT_LAN, &minutes, &last);
	assert_int_equal(s.samples, 0);
	assert_int_equal(minutes, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_need),
		cmocka_unit_test(test_busy_only),
		cmocka_unit_test(test_percentiles),
		cmocka_unit_test(test_windows),
		cmocka_unit_test_setup_teardown(test_sched, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
