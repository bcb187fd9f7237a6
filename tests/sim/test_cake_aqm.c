/*
 * CAKE's queue management in simulated time: COBALT's drop schedule
 * (interval/sqrt(count)), ECN marking with a valid IPv4 checksum, BLUE
 * taking over from persistent overflow, the memory limit and its
 * fattest-flow drops (sch_cake's COBALT, sch_cake's cake_drop()), the ACK filter (sch_cake's
 * cake_ack_filter()) and ingress mode (sch_cake's ingress mode).
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

#include "sim.h"

#define MBIT(x) ((uint64_t)(x)*125000ull)
#define MS(x)   ((uint64_t)(x)*1000000ull)
#define SEC(x)  ((uint64_t)(x)*SIM_NS)

static void
cake_params(struct sched_params *p, uint64_t rate)
{
	sched_params_default(p, SCHED_DISC_CAKE);
	p->rate = rate;
	p->diffserv = SCHED_BESTEFFORT;
}

/* Times of AQM signals (drops or CE marks) of source 0. */
struct sig_log {
	uint64_t t[4096];
	uint32_t n;
	uint64_t drops_by_reason_at[SHAPER_DROP_MAX];
	uint64_t bad_csum;
	bool marks; /* log CE-marked deliveries instead of drops */
};

static void
log_drop(struct sim *sim, struct sim_pkt *p, void *ctx)
{
	struct sig_log *l = ctx;

	if (!l->marks && p->pkt.drop_reason == SHAPER_DROP_AQM && p->src == 0 && l->n < 4096)
		l->t[l->n++] = sim->now;
}

static void
log_mark(struct sim *sim, struct sim_pkt *p, void *ctx)
{
	struct sig_log *l = ctx;

	if (sim_ipv4_csum(p->buf + 14, 20) != 0)
		l->bad_csum++;
	if (l->marks && (p->buf[15] & 3) == 3 && l->n < 4096)
		l->t[l->n++] = sim->now;
}

/*
 * One unresponsive flow at twice the rate with room to queue (no
 * overflow): after the first signal, each next one comes interval/sqrt(c)
 * later, c being the count after the previous signal.
 */
static void
check_schedule(const struct sig_log *l, uint64_t interval, uint64_t pkt_time)
{
	uint32_t k;
	double worst = 0;

	assert_true(l->n > 100);
	for (k = 1; k < l->n; k++) {
		double expect = (double)interval / sqrt((double)k + 1);
		double gap = (double)(l->t[k] - l->t[k - 1]);
		double err = fabs(gap - expect);

		if (err / expect > worst)
			worst = err / expect;
		/* The signal waits for the next dequeue: up to a packet late. */
		assert_true(err <= 0.01 * expect + 2.0 * pkt_time);
	}
	SIM_FIGURE("COBALT: %u signals in 4 s, gaps match interval/sqrt(count) within %.3f %% (first %.1f ms, last %.3f ms)",
		   l->n, worst * 100, (l->t[1] - l->t[0]) / 1e6,
		   (l->t[l->n - 1] - l->t[l->n - 2]) / 1e6);
}

static struct sim *
one_flow(struct sched_params *p, uint8_t ecn, struct sig_log *log)
{
	struct sim *sim = sim_new(p, 65536, 2);
	struct sim_src s = sim_src_udp(sim_ip(1, 0, 1), sim_ip(2, 0, 1), 1000, p->rate * 2, 1514);

	s.ecn = ecn;
	sim_add_src(sim, &s);
	sim->on_drop = log_drop;
	sim->on_deliver = log_mark;
	sim->ctx = log;
	return sim;
}

static void
test_cobalt_drop_schedule(void **state)
{
	static struct sig_log log;
	struct sched_params p;
	struct sched_stats st;
	struct sim *sim;

	(void)state;
	memset(&log, 0, sizeof(log));
	cake_params(&p, MBIT(100));
	p.memlimit = 256u << 20; /* no overflow: only CoDel acts */
	sim = one_flow(&p, 0, &log);
	sim_run(sim, SEC(4));
	sim_check_accounting(sim);
	assert_int_equal(sim->drops[SHAPER_DROP_OVERFLOW], 0);
	assert_int_equal(sim->drops[SHAPER_DROP_AQM], log.n);
	/* The first signal comes once sojourn passes target (5 ms). */
	assert_true(log.t[0] > MS(5) && log.t[0] < MS(20));
	check_schedule(&log, MS(100), 1514 * 80);
	sched_get_stats(sim->s, &st);
	assert_int_equal(st.tins[0].drops, log.n);
	assert_int_equal(st.tins[0].ecn_mark, 0);
	assert_int_equal(st.tins[0].bulk_flows, 1);
	assert_int_equal(st.tins[0].unresponsive_flows, 0);
	SIM_FIGURE("COBALT: peak/avg/base delay %u/%u/%u us with a growing queue",
		   st.tins[0].peak_delay_us, st.tins[0].avg_delay_us, st.tins[0].base_delay_us);
	sim_drain(sim);
	sim_check_accounting(sim);
	sim_free(sim);
}

static void
test_cobalt_ecn(void **state)
{
	static struct sig_log log;
	struct sched_params p;
	struct sched_stats st;
	struct sim *sim;
	uint32_t i;

	(void)state;
	/* ECT(0) and ECT(1) both get CE instead of a drop. */
	for (i = 0; i < 2; i++) {
		memset(&log, 0, sizeof(log));
		log.marks = true;
		cake_params(&p, MBIT(100));
		p.memlimit = 256u << 20;
		sim = one_flow(&p, i == 0 ? 2 : 1, &log);
		sim_run(sim, SEC(4));
		sim_check_accounting(sim);
		assert_int_equal(sim->drops[SHAPER_DROP_AQM], 0);
		assert_int_equal(sim->drops[SHAPER_DROP_OVERFLOW], 0);
		assert_int_equal(log.bad_csum, 0); /* checksum recomputed in the test */
		check_schedule(&log, MS(100), 1514 * 80);
		sched_get_stats(sim->s, &st);
		assert_int_equal(st.tins[0].ecn_mark, log.n);
		assert_int_equal(st.ecn_marked, log.n);
		assert_int_equal(sim->srcs[0].ce, log.n);
		sim_free(sim);
	}

	/* With ecn off the same ECT packets are dropped instead. */
	memset(&log, 0, sizeof(log));
	cake_params(&p, MBIT(100));
	p.memlimit = 256u << 20;
	p.ecn = false;
	sim = one_flow(&p, 2, &log);
	sim_run(sim, SEC(4));
	sim_check_accounting(sim);
	assert_int_equal(sim->srcs[0].ce, 0);
	assert_true(sim->drops[SHAPER_DROP_AQM] > 100);
	assert_int_equal(log.bad_csum, 0);
	sim_free(sim);
}

/* Persistent overflow raises BLUE until its drops keep the queue short. */
static void
test_blue(void **state)
{
	static struct sig_log log;
	struct sched_params p;
	struct sched_stats st;
	struct sim *sim;
	uint64_t ovf1, aqm1, ovf2, aqm2, rx2;

	(void)state;
	memset(&log, 0, sizeof(log));
	cake_params(&p, MBIT(100));
	sim = one_flow(&p, 0, &log);
	sim_run(sim, SEC(2));
	sched_get_stats(sim->s, &st);
	ovf1 = sim->drops[SHAPER_DROP_OVERFLOW];
	aqm1 = sim->drops[SHAPER_DROP_AQM];
	assert_true(ovf1 > 0);
	assert_int_equal(st.tins[0].unresponsive_flows, 1);
	assert_true(sim->max_in_mem <= st.memory_limit);
	sim_run(sim, SEC(6));
	ovf2 = sim->drops[SHAPER_DROP_OVERFLOW];
	aqm2 = sim->drops[SHAPER_DROP_AQM];
	rx2 = sim->srcs[0].rx_adj;
	sim_run(sim, SEC(8));
	sim_check_accounting(sim);
	sched_get_stats(sim->s, &st);
	SIM_FIGURE("BLUE: 0-2 s overflow %llu aqm %llu; 6-8 s overflow %llu aqm %llu; throughput %.4f of rate; peak memory %llu of %llu",
		   (unsigned long long)ovf1, (unsigned long long)aqm1,
		   (unsigned long long)(sim->drops[SHAPER_DROP_OVERFLOW] - ovf2),
		   (unsigned long long)(sim->drops[SHAPER_DROP_AQM] - aqm2),
		   (double)(sim->srcs[0].rx_adj - rx2) / (MBIT(100) * 2.0),
		   (unsigned long long)st.memory_used, (unsigned long long)st.memory_limit);
	/* Late on, BLUE's dequeue drops do the work, not the buffer limit. */
	assert_true(sim->drops[SHAPER_DROP_AQM] - aqm2 >
		    10 * (sim->drops[SHAPER_DROP_OVERFLOW] - ovf2));
	assert_true(fabs((double)(sim->srcs[0].rx_adj - rx2) / (MBIT(100) * 2.0) - 1) < 0.01);
	assert_true(sim->max_in_mem <= st.memory_limit);
	assert_int_equal(st.tins[0].unresponsive_flows, 1);
	sim_free(sim);
}

/* 10x offered load: memory stays under the limit, drops hit the fattest. */
static void
test_memlimit(void **state)
{
	static const uint64_t limits[] = { 0, 300000 };
	uint32_t l, i;

	(void)state;
	for (l = 0; l < 2; l++) {
		static const uint8_t dscp[4] = { 0, 8, 46, 0 };
		static const uint64_t mult[4] = { 5, 2, 1, 2 };
		struct sched_params p;
		struct sched_stats st;
		struct sim *sim;
		uint64_t delivered = 0;

		sched_params_default(&p, SCHED_DISC_CAKE);
		p.rate = MBIT(100);
		p.memlimit = limits[l];
		sim = sim_new(&p, 16384, 4);
		sim->check_fattest = true;
		/* Four flows in three tins, 10x the rate in total. */
		for (i = 0; i < 4; i++) {
			struct sim_src s = sim_src_udp(sim_ip(1, 0, (uint8_t)(1 + i)),
						       sim_ip(2, 0, 1), (uint16_t)(1000 + i),
						       MBIT(100) * mult[i], i == 3 ? 0 : 1514);

			s.dscp = dscp[i];
			sim_add_src(sim, &s);
		}
		sim_run(sim, SEC(10));
		sim_check_accounting(sim);
		sched_get_stats(sim->s, &st);
		for (i = 0; i < 4; i++)
			delivered += sim->srcs[i].rx_adj;
		SIM_FIGURE("memlimit %llu at 10x load: peak in use %llu (stats peak %llu), overflow drops %llu all from the fattest flow (%llu checked, %llu not), delivered %.4f of rate",
			   (unsigned long long)st.memory_limit, (unsigned long long)sim->max_in_mem,
			   (unsigned long long)st.memory_used,
			   (unsigned long long)sim->drops[SHAPER_DROP_OVERFLOW],
			   (unsigned long long)sim->overflow_checked,
			   (unsigned long long)sim->fattest_violations,
			   (double)delivered / (MBIT(100) * 10.0));
		assert_true(sim->max_in_mem <= st.memory_limit);
		/* The high-water mark may pass the limit by the packet that
		 * triggered the drop, never more. */
		assert_true(st.memory_used <= st.memory_limit + SIM_MBUF_MEM);
		assert_true(sim->drops[SHAPER_DROP_OVERFLOW] > 100);
		assert_int_equal(sim->overflow_checked, sim->drops[SHAPER_DROP_OVERFLOW]);
		assert_int_equal(sim->fattest_violations, 0);
		assert_true(fabs((double)delivered / (MBIT(100) * 10.0) - 1) < 0.01);
		sim_drain(sim);
		sim_check_accounting(sim);
		sim_free(sim);
	}
}

/* A pure-ACK stream on a slow uplink next to a bulk upload. */
static void
test_ack_filter(void **state)
{
	static const enum sched_ack_filter modes[] = {
		SCHED_ACK_FILTER_OFF,
		SCHED_ACK_FILTER_ON,
		SCHED_ACK_FILTER_AGGRESSIVE,
	};
	uint64_t filtered[3];
	uint32_t m;

	(void)state;
	for (m = 0; m < 3; m++) {
		struct sched_params p;
		struct sched_stats st;
		struct sim *sim;
		struct sim_src s;

		cake_params(&p, MBIT(1));
		p.ack_filter = modes[m];
		sim = sim_new(&p, 16384, 2);
		s = sim_src_udp(sim_ip(1, 0, 1), sim_ip(2, 0, 1), 1000, 0, 0);
		s.proto = SIM_TCP;
		s.tcp_ack = true;
		s.interval = 250000; /* 4000 ACKs/s: 1.7 Mbit of ACKs */
		sim_add_src(sim, &s);
		s = sim_src_udp(sim_ip(1, 0, 1), sim_ip(2, 0, 2), 1001, MBIT(2), 1514);
		sim_add_src(sim, &s);
		sim_run(sim, SEC(3));
		sim_check_accounting(sim);
		sched_get_stats(sim->s, &st);
		filtered[m] = sim->drops[SHAPER_DROP_ACK_FILTER];
		assert_int_equal(st.tins[0].ack_drops, filtered[m]);
		assert_int_equal(sim->srcs[1].drops[SHAPER_DROP_ACK_FILTER], 0);
		SIM_FIGURE("ack filter mode %d: %llu of %llu ACKs removed, ACK queue peak %u packets, ACKs delivered %llu",
			   (int)modes[m], (unsigned long long)filtered[m],
			   (unsigned long long)sim->srcs[0].tx_pkts, sim->srcs[0].max_backlog_pkts,
			   (unsigned long long)sim->srcs[0].rx_pkts);
		if (modes[m] == SCHED_ACK_FILTER_OFF) {
			assert_int_equal(filtered[m], 0);
			assert_true(sim->srcs[0].max_backlog_pkts > 10);
		} else {
			/* Every newer ACK supersedes the queued ones: at most two stay. */
			assert_true(sim->srcs[0].max_backlog_pkts <= 2);
			assert_true(filtered[m] > sim->srcs[0].tx_pkts / 2);
		}
		sim_drain(sim);
		sim_check_accounting(sim);
		sim_free(sim);
	}
	assert_true(filtered[2] >= filtered[1]);
}

/*
 * Ingress: dropped packets already used the link, so they are charged to
 * the shaper; the failsafe clock still delivers at least 2/3 of the rate.
 */
static void
test_ingress(void **state)
{
	uint32_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		struct sched_params p;
		struct sim *sim;
		struct sim_src s;
		double rx;

		cake_params(&p, MBIT(100));
		p.ingress = i == 1;
		sim = sim_new(&p, 16384, 2);
		s = sim_src_udp(sim_ip(1, 0, 1), sim_ip(2, 0, 1), 1000, MBIT(300), 1514);
		sim_add_src(sim, &s);
		sim->meas_start = SEC(2);
		sim->meas_end = SEC(6);
		sim_run(sim, SEC(6));
		sim_check_accounting(sim);
		rx = (double)sim->srcs[0].meas_adj / (MBIT(100) * 4.0);
		SIM_FIGURE("%s, one unresponsive flow at 3x: delivered %.4f of rate",
			   p.ingress ? "ingress" : "egress", rx);
		if (p.ingress) {
			/* Drops push the main clock ahead; the failsafe gives 2/3. */
			assert_true(rx > 0.66 && rx < 0.9);
		} else {
			assert_true(fabs(rx - 1) < 0.01);
		}
		sim_free(sim);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cobalt_drop_schedule),
		cmocka_unit_test(test_cobalt_ecn),
		cmocka_unit_test(test_blue),
		cmocka_unit_test(test_memlimit),
		cmocka_unit_test(test_ack_filter),
		cmocka_unit_test(test_ingress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
