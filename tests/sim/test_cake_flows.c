/*
 * CAKE's flow scheduling in simulated time: DRR++ fairness between flows,
 * low delay for sparse flows, per-host fairness in every isolation mode
 * (sch_cake's host-scaled quantum), and the set-associative queue lookup counters (sch_cake's
 * set-associative cake_hash()).
 */
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

static void
cake_params(struct sched_params *p, uint64_t rate)
{
	sched_params_default(p, SCHED_DISC_CAKE);
	p->rate = rate;
}

/* 10 equal flows offered twice the link get equal shares. */
static void
test_flow_fairness(void **state)
{
	static const enum sched_isolation modes[] = { SCHED_TRIPLE_ISOLATE, SCHED_FLOWS };
	uint32_t m, i;

	(void)state;
	for (m = 0; m < 2; m++) {
		struct sched_params p;
		struct sim *sim;
		double x[10], mean = 0, jain;

		cake_params(&p, MBIT(100));
		p.isolation = modes[m];
		sim = sim_new(&p, 16384, 10);
		for (i = 0; i < 10; i++) {
			/* Same host pair, mixed sizes, so DRR must count bytes. */
			struct sim_src s = sim_src_udp(sim_ip(1, 0, 1), sim_ip(2, 0, 1),
						       (uint16_t)(2000 + i), MBIT(20),
						       i % 2 ? 1514 : 0);

			sim_add_src(sim, &s);
		}
		sim->meas_start = SEC(1);
		sim->meas_end = SEC(5);
		sim_run(sim, SEC(5));
		sim_check_accounting(sim);
		for (i = 0; i < 10; i++) {
			x[i] = (double)sim->srcs[i].meas_adj;
			mean += x[i] / 10;
		}
		jain = sim_jain(x, 10);
		{
			double lo = x[0], hi = x[0];

			for (i = 1; i < 10; i++) {
				lo = x[i] < lo ? x[i] : lo;
				hi = x[i] > hi ? x[i] : hi;
			}
			SIM_FIGURE("fairness (isolation %d), 10 flows at 2x: Jain %.6f, min %.4f max %.4f of mean",
				   (int)modes[m], jain, lo / mean, hi / mean);
		}
		for (i = 0; i < 10; i++)
			assert_true(fabs(x[i] / mean - 1) < 0.02);
		assert_true(jain > 0.999);
		/* And together they fill the link. */
		assert_true(fabs(mean * 10 - MBIT(100) * 4.0) < MBIT(100) * 4.0 * 0.005);
		sim_free(sim);
	}
}

/*
 * A sparse flow next to 8 saturating ones sees almost no queue, in CAKE and
 * (the same DRR++ new-flow priority) fq_codel. The schedulers' sparse
 * sojourn histogram holds exactly that flow's packets plus each bulk flow's
 * first one (it arrived to an empty queue too), so the shaper's own stats
 * tell a sparse flow's wait apart from the bulk queue's.
 */
static void
test_sparse_flow_delay(void **state)
{
	static const enum sched_discipline discs[] = { SCHED_DISC_CAKE, SCHED_DISC_FQ_CODEL };
	static uint64_t delays[2000];

	(void)state;
	for (uint32_t d = 0; d < 2; d++) {
		uint64_t own[SCHED_SOJOURN_BUCKETS] = { 0 }, p50, p99, pmax, extra = 0, bulk_p50;
		struct sched_params p;
		struct sched_stats st;
		struct sim *sim;
		struct sim_src s;
		uint32_t i, sparse, n;

		sched_params_default(&p, discs[d]);
		p.rate = MBIT(100);
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
		s.delays_cap = 2000;
		sparse = sim_add_src(sim, &s);
		sim_run(sim, SEC(10));
		sim_check_accounting(sim);
		assert_int_equal(sim->srcs[sparse].drops[SHAPER_DROP_AQM] +
						 sim->srcs[sparse].drops[SHAPER_DROP_OVERFLOW],
				 0);
		n = sim->srcs[sparse].delays_n;
		assert_true(n >= 995);
		for (i = 0; i < n; i++)
			own[sched_sojourn_bucket(delays[i])]++;
		pmax = sim_percentile(delays, n, 100);
		p99 = sim_percentile(delays, n, 99);
		p50 = sim_percentile(delays, n, 50);
		SIM_FIGURE("%s: sparse flow next to 8 bulk flows at 100 Mbit: delay p50 %.1f us, p99 %.1f us, max %.1f us",
			   discs[d] == SCHED_DISC_CAKE ? "cake" : "fq_codel", p50 / 1e3, p99 / 1e3,
			   pmax / 1e3);
		assert_true(p99 < MS(1));

		sched_get_stats(sim->s, &st);
		for (i = 0; i < SCHED_SOJOURN_BUCKETS; i++) {
			assert_true(st.sparse_sojourn[i] >= own[i]);
			assert_true(st.sojourn[i] >= st.sparse_sojourn[i]);
			extra += st.sparse_sojourn[i] - own[i];
		}
		assert_true(extra >= 1 && extra <= 8); /* the bulk flows' first packets */
		/* The whole tin's median is the bulk queue's, far above the sparse flow's. */
		for (i = 0, n = 0; n * 2 < st.dequeued_pkts; i++)
			n += (uint32_t)st.sojourn[i];
		bulk_p50 = sched_sojourn_bucket_lo_ns(i - 1);
		assert_true(bulk_p50 > 10 * p99);
		sim_free(sim);
	}
}

/* Host A: 1 flow, host B: 8 flows. */
struct host_case {
	enum sched_isolation mode;
	bool upstream; /* the hosts are sources (else destinations) */
	double share_a;
};

static void
test_host_isolation(void **state)
{
	static const struct host_case cases[] = {
		{ SCHED_TRIPLE_ISOLATE, true, 0.5 },
		{ SCHED_TRIPLE_ISOLATE, false, 0.5 },
		{ SCHED_DUAL_SRCHOST, true, 0.5 },
		{ SCHED_DUAL_DSTHOST, false, 0.5 },
		{ SCHED_SRCHOST, true, 0.5 },
		{ SCHED_DSTHOST, false, 0.5 },
		/* Host pairs: B's 8 flows are 8 different pairs. */
		{ SCHED_HOSTS, true, 1.0 / 9 },
		{ SCHED_FLOWS, true, 1.0 / 9 },
		{ SCHED_FLOWS, false, 1.0 / 9 },
		/* The other side's host mode gives no fairness between A and B. */
		{ SCHED_DUAL_DSTHOST, true, 1.0 / 9 },
		{ SCHED_DUAL_SRCHOST, false, 1.0 / 9 },
	};
	uint32_t c, i;

	(void)state;
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct host_case *hc = &cases[c];
		uint32_t a_host = sim_ip(1, 0, 1), b_host = sim_ip(1, 0, 2);
		uint64_t a = 0, b = 0;
		struct sched_params p;
		struct sim *sim;
		double share;

		cake_params(&p, MBIT(100));
		p.diffserv = SCHED_BESTEFFORT;
		p.isolation = hc->mode;
		sim = sim_new(&p, 16384, 9);
		for (i = 0; i < 9; i++) {
			/* Each flow talks to its own server. */
			uint32_t host = i == 0 ? a_host : b_host;
			uint32_t server = sim_ip(9, 0, (uint8_t)(1 + i));
			struct sim_src s = hc->upstream ? sim_src_udp(host, server,
								      (uint16_t)(5000 + i),
								      MBIT(50), 1514)
							: sim_src_udp(server, host,
								      (uint16_t)(5000 + i),
								      MBIT(50), 1514);

			sim_add_src(sim, &s);
		}
		sim->meas_start = SEC(1);
		sim->meas_end = SEC(4);
		sim_run(sim, SEC(4));
		sim_check_accounting(sim);
		a = sim->srcs[0].meas_adj;
		for (i = 1; i < 9; i++)
			b += sim->srcs[i].meas_adj;
		share = (double)a / (double)(a + b);
		SIM_FIGURE("isolation %d %s: host A (1 flow) %.4f, host B (8 flows) %.4f, expected A %.4f",
			   (int)hc->mode, hc->upstream ? "upstream" : "downstream", share,
			   1 - share, hc->share_a);
		assert_true(fabs(share - hc->share_a) < 0.03);
		sim_free(sim);
	}
}

/* sch_cake's set-associative cake_hash() counters: misses for new flows, collisions only when a set
 * is full. */
static void
test_set_associative(void **state)
{
	static const uint32_t counts[] = { 100, 300, 500, 1100 };
	uint32_t c, i;

	(void)state;
	for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		struct sched_params p;
		struct sched_stats st;
		struct sim *sim;
		uint32_t n = counts[c];
		bool clean;

		cake_params(&p, MBIT(100));
		p.diffserv = SCHED_BESTEFFORT;
		p.isolation = SCHED_FLOWS;
		sim = sim_new(&p, 4096, n + 1);
		for (i = 0; i < n; i++) {
			struct sim_src s =
					sim_src_udp(sim_ip(1, (uint8_t)(i >> 8), (uint8_t)i),
						    sim_ip(2, 0, 1), (uint16_t)(1000 + i), 0, 200);

			sim_add_src(sim, &s);
			sim_emit(sim, i); /* all active at once: nothing dequeued */
		}
		sched_get_stats(sim->s, &st);
		SIM_FIGURE("%u concurrent flows in 1024 8-way queues: way_miss %llu way_cols %llu way_inds %llu",
			   n, (unsigned long long)st.tins[0].way_misses,
			   (unsigned long long)st.tins[0].way_collisions,
			   (unsigned long long)st.tins[0].way_indirect_hits);
		assert_int_equal(st.tins[0].way_misses + st.tins[0].way_collisions, n);
		if (n == 100)
			assert_int_equal(st.tins[0].way_collisions, 0);
		else if (n == 300)
			assert_true(st.tins[0].way_collisions <= 3);
		else if (n == 500)
			assert_true(st.tins[0].way_collisions <= 30);
		else
			assert_true(st.tins[0].way_collisions >= n - 1024);
		/*
		 * Without collisions a second packet of each flow finds its
		 * queue again (a colliding flow steals the tag, so its victim
		 * collides again: not checked then).
		 */
		clean = st.tins[0].way_collisions == 0;
		for (i = 0; i < n && clean; i++)
			sim_emit(sim, i);
		sched_get_stats(sim->s, &st);
		if (clean) {
			assert_int_equal(st.tins[0].way_misses + st.tins[0].way_collisions, n);
			/* Some flows live off their home way: found indirectly. */
			SIM_FIGURE("%u flows, second packet each: way_inds %llu", n,
				   (unsigned long long)st.tins[0].way_indirect_hits);
			assert_true(st.tins[0].way_indirect_hits > 0);
		}
		sim_drain(sim);
		sim_check_accounting(sim);
		/* After idle, returning flows find their old (free) queues. */
		sim->now += SEC(1);
		{
			uint64_t misses = st.tins[0].way_misses;

			for (i = 0; i < n && clean; i++)
				sim_emit(sim, i);
			sched_get_stats(sim->s, &st);
			if (clean)
				assert_int_equal(st.tins[0].way_misses, misses);
		}
		sim_drain(sim);
		sim_check_accounting(sim);
		sim_free(sim);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flow_fairness),
		cmocka_unit_test(test_sparse_flow_delay),
		cmocka_unit_test(test_host_isolation),
		cmocka_unit_test(test_set_associative),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
