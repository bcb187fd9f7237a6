/*
 * A smaller CAKE, as each subscriber gets one: fewer flow queues per tin
 * (params.cake_queues) and only the tins of its diffserv mode
 * (params.cake_mode_tins). Its size against the full one, and the same
 * guarantees as the full one at 256 and 64 queues: flows share equally,
 * hosts share equally whatever their flow counts (the host modes), a sparse
 * flow waits almost nothing next to bulk ones, overflow drops hit the fattest
 * queue across tins; a diffserv change beyond the tins it was made with, a
 * change of queue count and a reinit into another shape are refused.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/sched.h"
#include "sim.h"

#define MBIT(x) ((uint64_t)(x)*125000ull)
#define MS(x)   ((uint64_t)(x)*1000000ull)
#define SEC(x)  ((uint64_t)(x)*SIM_NS)

static const uint32_t queue_counts[] = { 256, 64 };

static void
small_params(struct sched_params *p, uint32_t queues, uint64_t rate)
{
	sched_params_default(p, SCHED_DISC_CAKE);
	p->rate = rate;
	p->diffserv = SCHED_DIFFSERV4;
	p->cake_queues = queues;
	p->cake_mode_tins = true;
}

struct count_alloc {
	size_t bytes;
};

static void *
count_zalloc(size_t size, void *ctx)
{
	((struct count_alloc *)ctx)->bytes += size;
	return calloc(1, size);
}

static void
count_free(void *p, void *ctx)
{
	(void)ctx;
	free(p);
}

static size_t
bytes_of(const struct sched_params *p)
{
	struct count_alloc n = { 0 };
	struct sched_alloc a = { count_zalloc, count_free, &n };
	char err[128];
	struct sched *s = sched_create_on(p, &a, err, sizeof(err));

	if (s == NULL)
		fail_msg("%s", err);
	sched_free(s);
	return n.bytes;
}

static void
test_size(void **state)
{
	struct sched_params full, small, be;
	size_t bf, bs, bb;
	char err[128];

	(void)state;
	sched_params_default(&full, SCHED_DISC_CAKE);
	full.diffserv = SCHED_DIFFSERV4;
	small_params(&small, 256, MBIT(100));
	small_params(&be, 256, MBIT(100));
	be.diffserv = SCHED_BESTEFFORT;
	bf = bytes_of(&full);
	bs = bytes_of(&small);
	bb = bytes_of(&be);
	SIM_FIGURE("CAKE size: 8 tins x 1024 queues %zu bytes, diffserv4 4 x 256 %zu bytes (%.1f x "
		   "smaller), besteffort 1 x 256 %zu bytes",
		   bf, bs, (double)bf / (double)bs, bb);
	assert_true(bs * 7 < bf);
	assert_true(bb < bs);
	assert_int_equal(sched_flow_slots(&small), 4 * 256);
	assert_int_equal(sched_flow_slots(&full), 8 * 1024);
	/* Not a power of two, too few, too many: refused. */
	for (uint32_t q = 0; q < 3; q++) {
		static const uint32_t bad[] = { 100, 8, 2048 };

		small.cake_queues = bad[q];
		assert_null(sched_create(&small, err, sizeof(err)));
		assert_non_null(strstr(err, "queues"));
	}
}

/* 10 equal flows of one host pair at twice the link: equal shares. */
static void
test_flow_fairness(void **state)
{
	(void)state;
	for (uint32_t q = 0; q < 2; q++) {
		struct sched_params p;
		struct sim *sim;
		double x[10], mean = 0, lo, hi;
		uint32_t i;

		small_params(&p, queue_counts[q], MBIT(100));
		sim = sim_new(&p, 16384, 10);
		for (i = 0; i < 10; i++) {
			struct sim_src s = sim_src_udp(sim_ip(1, 0, 1), sim_ip(2, 0, 1),
						       (uint16_t)(2000 + i), MBIT(20),
						       i % 2 ? 1514 : 0);

			sim_add_src(sim, &s);
		}
		sim->meas_start = SEC(1);
		sim->meas_end = SEC(4);
		sim_run(sim, SEC(4));
		sim_check_accounting(sim);
		for (i = 0; i < 10; i++) {
			x[i] = (double)sim->srcs[i].meas_adj;
			mean += x[i] / 10;
		}
		lo = hi = x[0];
		for (i = 1; i < 10; i++) {
			lo = x[i] < lo ? x[i] : lo;
			hi = x[i] > hi ? x[i] : hi;
		}
		SIM_FIGURE("%u queues: 10 flows at 2x, Jain %.6f, min %.4f max %.4f of mean",
			   queue_counts[q], sim_jain(x, 10), lo / mean, hi / mean);
		for (i = 0; i < 10; i++)
			assert_true(fabs(x[i] / mean - 1) < 0.02);
		assert_true(fabs(mean * 10 - MBIT(100) * 3.0) < MBIT(100) * 3.0 * 0.005);
		sim_free(sim);
	}
}

/* Host A with 1 flow, host B with 8: half each in the host modes. */
static void
test_host_isolation(void **state)
{
	static const struct {
		enum sched_isolation mode;
		bool upstream;
	} cases[] = {
		{ SCHED_TRIPLE_ISOLATE, true },
		{ SCHED_TRIPLE_ISOLATE, false },
		{ SCHED_DUAL_SRCHOST, true },
		{ SCHED_DUAL_DSTHOST, false },
	};

	(void)state;
	for (uint32_t q = 0; q < 2; q++)
		for (uint32_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
			uint32_t a_host = sim_ip(1, 0, 1), b_host = sim_ip(1, 0, 2), i;
			uint64_t a, b = 0;
			struct sched_params p;
			struct sim *sim;
			double share;

			small_params(&p, queue_counts[q], MBIT(100));
			p.isolation = cases[c].mode;
			sim = sim_new(&p, 16384, 9);
			for (i = 0; i < 9; i++) {
				uint32_t host = i == 0 ? a_host : b_host;
				uint32_t server = sim_ip(9, 0, (uint8_t)(1 + i));
				struct sim_src s =
						cases[c].upstream
								? sim_src_udp(host, server,
									      (uint16_t)(5000 + i),
									      MBIT(50), 1514)
								: sim_src_udp(server, host,
									      (uint16_t)(5000 + i),
									      MBIT(50), 1514);

				sim_add_src(sim, &s);
			}
			sim->meas_start = SEC(1);
			sim->meas_end = SEC(3);
			sim_run(sim, SEC(3));
			sim_check_accounting(sim);
			a = sim->srcs[0].meas_adj;
			for (i = 1; i < 9; i++)
				b += sim->srcs[i].meas_adj;
			share = (double)a / (double)(a + b);
			SIM_FIGURE("%u queues, isolation %d %s: host A (1 flow) %.4f, host B (8 "
				   "flows) %.4f",
				   queue_counts[q], (int)cases[c].mode,
				   cases[c].upstream ? "upstream" : "downstream", share, 1 - share);
			assert_true(fabs(share - 0.5) < 0.03);
			sim_free(sim);
		}
}

/* A 10 ms ping next to 8 bulk flows: its p99 delay stays under 1 ms. */
static void
test_sparse_flow_delay(void **state)
{
	static uint64_t delays[1000];

	(void)state;
	for (uint32_t q = 0; q < 2; q++) {
		struct sched_params p;
		struct sim *sim;
		struct sim_src s;
		uint32_t i, sparse, n;
		uint64_t p99;

		small_params(&p, queue_counts[q], MBIT(100));
		sim = sim_new(&p, 16384, 10);
		for (i = 0; i < 8; i++) {
			s = sim_src_udp(sim_ip(1, 0, (uint8_t)(1 + i)), sim_ip(2, 0, 1),
					(uint16_t)(3000 + i), MBIT(25), 1514);
			sim_add_src(sim, &s);
		}
		s = sim_src_udp(sim_ip(1, 0, 100), sim_ip(2, 0, 2), 4000, 0, 100);
		s.interval = MS(10);
		s.start = MS(3);
		s.delays = delays;
		s.delays_cap = 1000;
		sparse = sim_add_src(sim, &s);
		sim_run(sim, SEC(5));
		sim_check_accounting(sim);
		n = sim->srcs[sparse].delays_n;
		assert_true(n >= 495);
		assert_int_equal(sim->srcs[sparse].drops[SHAPER_DROP_AQM] +
						 sim->srcs[sparse].drops[SHAPER_DROP_OVERFLOW],
				 0);
		p99 = sim_percentile(delays, n, 99);
		SIM_FIGURE("%u queues: sparse flow next to 8 bulk flows, delay p99 %.1f us",
			   queue_counts[q], p99 / 1e3);
		assert_true(p99 < MS(1));
		sim_free(sim);
	}
}

/* Four flows in three of the four tins at 10x: overflow drops only the fattest queue. */
static void
test_overflow_fattest(void **state)
{
	static const uint8_t dscp[4] = { 0, 8, 46, 0 };
	static const uint64_t mult[4] = { 5, 2, 1, 2 };
	struct sched_params p;
	struct sched_stats st;
	struct sim *sim;

	(void)state;
	small_params(&p, 64, MBIT(100));
	p.memlimit = 300000;
	sim = sim_new(&p, 16384, 4);
	sim->check_fattest = true;
	for (uint32_t i = 0; i < 4; i++) {
		struct sim_src s = sim_src_udp(sim_ip(1, 0, (uint8_t)(1 + i)), sim_ip(2, 0, 1),
					       (uint16_t)(1000 + i), MBIT(100) * mult[i],
					       i == 3 ? 0 : 1514);

		s.dscp = dscp[i];
		sim_add_src(sim, &s);
	}
	sim_run(sim, SEC(5));
	sim_check_accounting(sim);
	sched_get_stats(sim->s, &st);
	SIM_FIGURE("64 queues, 4 tins, memlimit 300000 at 10x: %llu overflow drops, %llu not from "
		   "the fattest queue",
		   (unsigned long long)sim->drops[SHAPER_DROP_OVERFLOW],
		   (unsigned long long)sim->fattest_violations);
	assert_true(sim->drops[SHAPER_DROP_OVERFLOW] > 100);
	assert_int_equal(sim->overflow_checked, sim->drops[SHAPER_DROP_OVERFLOW]);
	assert_int_equal(sim->fattest_violations, 0);
	assert_true(sim->max_in_mem <= st.memory_limit);
	sim_drain(sim);
	sim_check_accounting(sim);
	sim_free(sim);
}

/* What the allocation fixes: refused by update and reinit; a mode with fewer tins is fine. */
static void
test_shape_fixed(void **state)
{
	struct sched_params p, q;
	struct sched_stats st;
	struct sim *sim;
	struct sim_src s;
	char err[160];

	(void)state;
	small_params(&p, 256, MBIT(100));
	sim = sim_new(&p, 4096, 2);
	s = sim_src_udp(sim_ip(1, 0, 1), sim_ip(2, 0, 1), 1000, 0, 1000);
	s.dscp = 46; /* Voice: tin 3 of diffserv4 */
	sim_add_src(sim, &s);
	for (int i = 0; i < 20; i++)
		sim_emit(sim, 0);

	q = p;
	q.diffserv = SCHED_DIFFSERV8;
	assert_int_equal(sched_update(sim->s, &q, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "needs 8 tins"));
	q = p;
	q.cake_queues = 1024;
	assert_int_equal(sched_update(sim->s, &q, err, sizeof(err)), -EINVAL);
	q = p;
	q.diffserv = SCHED_DIFFSERV3; /* 3 tins: the Voice packets drain from tin 3 */
	assert_int_equal(sched_update(sim->s, &q, err, sizeof(err)), 0);
	sim_drain(sim);
	sim_check_accounting(sim);
	assert_int_equal(sim->srcs[0].rx_pkts, 20);
	sched_get_stats(sim->s, &st);
	assert_int_equal(st.tin_count, 3);

	/* reinit: only into the same shape. */
	q = p;
	q.cake_queues = 128;
	assert_int_equal(sched_reinit(sim->s, &q, err, sizeof(err)), -EINVAL);
	q = p;
	q.diffserv = SCHED_BESTEFFORT;
	assert_int_equal(sched_reinit(sim->s, &q, err, sizeof(err)), -EINVAL);
	assert_int_equal(sched_reinit(sim->s, &p, err, sizeof(err)), 0);
	for (int i = 0; i < 5; i++)
		sim_emit(sim, 0);
	sim_drain(sim);
	assert_int_equal(sim->srcs[0].rx_pkts, 25);
	sim_free(sim);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_flow_fairness),
		cmocka_unit_test(test_host_isolation),
		cmocka_unit_test(test_sparse_flow_delay),
		cmocka_unit_test(test_overflow_fattest),
		cmocka_unit_test(test_shape_fixed),
	};

	sim_watchdog(240, "a small CAKE's test hung");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
