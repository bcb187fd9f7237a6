/*
 * Live reconfiguration of CAKE (sched_update) with packets queued: rate,
 * rtt, overhead, diffserv and isolation changes keep every packet (in order
 * within its queue), apply from the next packet, and leak nothing; plus
 * flush.
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
update(struct sim *sim, const struct sched_params *p)
{
	char err[128] = "";

	if (sched_update(sim->s, p, err, sizeof(err)) != 0)
		fail_msg("sched_update: %s", err);
}

static uint64_t
total_meas(struct sim *sim)
{
	uint64_t t = 0;
	uint32_t i;

	for (i = 0; i < sim->nsrc; i++)
		t += sim->srcs[i].meas_adj;
	return t;
}

static void
reset_meas(struct sim *sim, uint64_t from, uint64_t to)
{
	uint32_t i;

	for (i = 0; i < sim->nsrc; i++) {
		sim->srcs[i].meas_adj = 0;
		sim->srcs[i].meas_bytes = 0;
		sim->srcs[i].meas_pkts = 0;
	}
	sim->meas_start = from;
	sim->meas_end = to;
}

/* Rate, rtt and overhead change under load: no loss, no reordering. */
static void
test_update_rate(void **state)
{
	static const uint8_t dscps[] = { 0, 8, 46, 10, 26, 18, 16, 48 };
	struct sched_params p;
	struct sched_stats st;
	struct sim *sim;
	double got;
	uint32_t i;

	(void)state;
	sched_params_default(&p, SCHED_DISC_CAKE);
	p.rate = MBIT(100);
	p.memlimit = 64u << 20; /* room to queue: only AQM may drop */
	sim = sim_new(&p, 65536, 16);
	for (i = 0; i < 8; i++) {
		struct sim_src s = sim_src_udp(sim_ip(1, 0, (uint8_t)(1 + i)), sim_ip(2, 0, 1),
					       (uint16_t)(1000 + i), MBIT(40), i % 2 ? 0 : 1514);

		s.dscp = dscps[i];
		sim_add_src(sim, &s);
	}
	sim_run(sim, SEC(1));

	/* Slower, with Ethernet framing and a longer rtt. */
	p.rate = MBIT(50);
	p.overhead_mode = true;
	p.overhead = 38;
	p.mpu = 84;
	p.rtt_us = 300000;
	p.target_us = 15000;
	update(sim, &p);
	sched_get_stats(sim->s, &st);
	assert_int_equal(st.tins[1].threshold_rate, MBIT(50));
	assert_int_equal(st.tins[1].target_us, 15000);
	assert_int_equal(st.tins[1].interval_us, 300000);
	assert_int_equal(st.memory_limit, 64u << 20);
	assert_true(st.backlog_pkts > 100); /* changed with packets queued */
	reset_meas(sim, SEC(2), SEC(4));
	sim_run(sim, SEC(4));
	sim_check_accounting(sim);
	got = (double)total_meas(sim) / (MBIT(50) * 2.0);
	SIM_FIGURE("update 100 -> 50 Mbit + ethernet under load: %.4f of the new rate", got);
	assert_true(fabs(got - 1) < 0.01);

	/* Faster again, unshaped target. */
	p.rate = MBIT(200);
	update(sim, &p);
	reset_meas(sim, SEC(5), SEC(6));
	sim_run(sim, SEC(6));
	got = (double)total_meas(sim) / (MBIT(200) * 1.0);
	SIM_FIGURE("update 50 -> 200 Mbit under load: %.4f of the new rate", got);
	assert_true(fabs(got - 1) < 0.01);

	sim_drain(sim);
	sim_check_accounting(sim);
	for (i = 0; i < sim->nsrc; i++)
		assert_int_equal(sim->srcs[i].reorders, 0);
	sim_free(sim);
}

/* From unshaped (behind an external line) to shaped: no catch-up burst. */
static void
test_update_from_unlimited(void **state)
{
	struct sched_params p;
	struct sim *sim;
	struct sim_src s;
	double got;

	(void)state;
	sched_params_default(&p, SCHED_DISC_CAKE);
	p.rate = 0;
	p.memlimit = 64u << 20;
	p.rtt_us = 10000000; /* long AQM interval: keep the backlog */
	p.target_us = 1000000;
	sim = sim_new(&p, 65536, 2);
	sim->line_rate = MBIT(100);
	s = sim_src_udp(sim_ip(1, 0, 1), sim_ip(2, 0, 1), 1000, MBIT(150), 1514);
	sim_add_src(sim, &s);
	sim_run(sim, SEC(1));
	p.rate = MBIT(10);
	update(sim, &p);
	sim->line_rate = 0;
	reset_meas(sim, SEC(1), SEC(2));
	sim_run(sim, SEC(2));
	got = (double)total_meas(sim) / (double)MBIT(10);
	SIM_FIGURE("update unlimited -> 10 Mbit with %llu packets queued: first second carries %.4f of the new rate",
		   (unsigned long long)sim->in_pkts, got);
	assert_true(fabs(got - 1) < 0.01);
	sim_check_accounting(sim);
	sim_drain(sim);
	sim_check_accounting(sim);
	sim_free(sim);
}

/* Mode changes with packets queued: everything queued still comes out. */
static void
test_update_modes(void **state)
{
	static const struct {
		enum sched_diffserv ds;
		enum sched_isolation iso;
		uint64_t rate;
	} steps[] = {
		{ SCHED_DIFFSERV8, SCHED_TRIPLE_ISOLATE, MBIT(100) },
		{ SCHED_BESTEFFORT, SCHED_FLOWS, MBIT(100) }, /* strands tins 1..7 */
		{ SCHED_DIFFSERV4, SCHED_DUAL_DSTHOST, MBIT(100) },
		{ SCHED_PRECEDENCE, SCHED_DUAL_SRCHOST, 0 }, /* unshaped */
		{ SCHED_DIFFSERV3, SCHED_FLOWBLIND, MBIT(80) },
		{ SCHED_DIFFSERV8, SCHED_HOSTS, MBIT(100) },
		{ SCHED_DIFFSERV3, SCHED_TRIPLE_ISOLATE, MBIT(100) },
	};
	struct sched_params p;
	struct sched_stats st;
	struct sim *sim;
	uint64_t t = 0;
	uint32_t i, k;

	(void)state;
	sched_params_default(&p, SCHED_DISC_CAKE);
	p.rate = MBIT(100);
	p.diffserv = SCHED_DIFFSERV3;
	sim = sim_new(&p, 65536, 64);
	sim->line_rate = MBIT(100); /* paces the unshaped step */
	for (i = 0; i < 64; i++) {
		/* Every codepoint, several hosts, offered 3x the link in total. */
		struct sim_src s =
				sim_src_udp(sim_ip(1, 0, (uint8_t)(1 + i % 5)),
					    sim_ip(2, 0, (uint8_t)(1 + i % 7)),
					    (uint16_t)(1000 + i), MBIT(300) / 64, i % 3 ? 1514 : 0);

		s.dscp = (uint8_t)i;
		sim_add_src(sim, &s);
	}
	for (k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		t += MS(700);
		sim_run(sim, t);
		sched_get_stats(sim->s, &st);
		assert_true(st.backlog_pkts > 50);
		p.diffserv = steps[k].ds;
		p.isolation = steps[k].iso;
		p.rate = steps[k].rate;
		update(sim, &p);
		sim_check_accounting(sim);
		sched_get_stats(sim->s, &st);
		if (steps[k].ds == SCHED_BESTEFFORT) /* old tins still hold packets */
			assert_true(st.tins[0].backlog_bytes < st.backlog_bytes);
		assert_int_equal(st.tin_count, steps[k].ds == SCHED_BESTEFFORT  ? 1
					       : steps[k].ds == SCHED_DIFFSERV3 ? 3
					       : steps[k].ds == SCHED_DIFFSERV4 ? 4
										: 8);
	}
	/* Stranded tins drain too; the stats then see all of the backlog. */
	t += MS(700);
	sim_run(sim, t);
	sim_check_accounting(sim);
	p.diffserv = SCHED_BESTEFFORT;
	update(sim, &p);
	t += SEC(1);
	sim_run(sim, t);
	sim_check_accounting(sim);
	{
		uint64_t before = sim->deq;

		sim_drain(sim);
		SIM_FIGURE("mode changes under load: %llu packets drained after the last change, %llu enqueued in all, none lost",
			   (unsigned long long)(sim->deq - before), (unsigned long long)sim->enq);
	}
	sim_check_accounting(sim);
	assert_int_equal(sim->in_pkts, 0);
	assert_int_equal(sched_next_time(sim->s, sim->now), UINT64_MAX);
	sim_free(sim);
}

/* Flush hands back every queued packet and leaves a clean scheduler. */
static void
test_flush(void **state)
{
	struct sched_params p;
	struct sched_stats st;
	struct sh_pkt_list out;
	struct sim *sim;
	struct sh_pkt *d;
	uint32_t i, n = 0;

	(void)state;
	sched_params_default(&p, SCHED_DISC_CAKE);
	p.rate = MBIT(10);
	sim = sim_new(&p, 16384, 8);
	for (i = 0; i < 8; i++) {
		struct sim_src s = sim_src_udp(sim_ip(1, 0, (uint8_t)(1 + i)), sim_ip(2, 0, 1),
					       (uint16_t)(1000 + i), MBIT(10), 1514);

		s.dscp = (uint8_t)(i * 8);
		sim_add_src(sim, &s);
	}
	sim_run(sim, SEC(1));
	sched_get_stats(sim->s, &st);
	assert_true(st.backlog_pkts > 100);
	sh_pkt_list_init(&out);
	sched_flush(sim->s, &out);
	assert_int_equal(out.count, st.backlog_pkts);
	while ((d = sh_pkt_list_pop(&out)) != NULL) {
		struct sim_pkt *sp = (struct sim_pkt *)d;

		/* Account as delivered, as the wrapper does. */
		sim->srcs[sp->src].backlog_pkts--;
		sim->srcs[sp->src].backlog_bytes -= d->len;
		sim->in_pkts--;
		sim->in_bytes -= d->len;
		sim->in_mem -= d->mem;
		sim->deq++;
		sim->free_idx[sim->nfree++] = (uint32_t)(sp - sim->pool);
		n++;
	}
	sim_check_accounting(sim);
	sched_get_stats(sim->s, &st);
	assert_int_equal(st.backlog_pkts, 0);
	assert_int_equal(st.backlog_bytes, 0);
	for (i = 0; i < st.tin_count; i++) {
		assert_int_equal(st.tins[i].backlog_bytes, 0);
		assert_int_equal(st.tins[i].bulk_flows, 0);
		assert_int_equal(st.tins[i].sparse_flows, 0);
	}
	assert_int_equal(sched_next_time(sim->s, sim->now), UINT64_MAX);
	/* And it works as before afterwards. */
	sim_run(sim, SEC(2));
	sim_drain(sim);
	sim_check_accounting(sim);
	assert_true(n > 100);
	sim_free(sim);
}

/*
 * Raising the rate must not wait out a clock the slow old rate pushed far
 * ahead: at 8 kbit one 1500-byte packet holds the clock 1.5 s ahead; after
 * an update to 100 Mbit the next packet leaves within one MTU time.
 */
static void
test_update_rate_up_no_stall(void **state)
{
	struct sched_params p;
	struct sim *sim;
	uint32_t i;
	uint64_t t0;

	(void)state;
	sched_params_default(&p, SCHED_DISC_CAKE);
	p.rate = 1000; /* 8 kbit */
	sim = sim_new(&p, 64, 1);
	i = sim_add_src(sim, &(struct sim_src){ 0 });
	sim->srcs[i] = sim_src_udp(sim_ip(10, 0, 1), sim_ip(10, 0, 2), 9, 0, 1500);
	sim->now = 1000000;
	for (int k = 0; k < 3; k++)
		assert_non_null(sim_emit(sim, i));
	assert_int_equal(sim_dequeue_once(sim), (int)i); /* clock now 1.5 s ahead */
	assert_int_equal(sim_dequeue_once(sim), -1);
	p.rate = 12500000; /* 100 Mbit */
	assert_int_equal(sched_update(sim->s, &p, NULL, 0), 0);
	t0 = sim->now;
	assert_true(sched_next_time(sim->s, sim->now) <= sim->now + 121120);
	while (sim_dequeue_once(sim) < 0 && sim->now < t0 + 10000000)
		sim->now += 1000;
	/* one 1514-byte MTU at 100 Mbit is 121 us */
	assert_true(sim->now - t0 <= 122000);
	sim_drain(sim);
	sim_check_accounting(sim);
	sim_free(sim);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_update_rate),
		cmocka_unit_test(test_update_from_unlimited),
		cmocka_unit_test(test_update_modes),
		cmocka_unit_test(test_flush),
		cmocka_unit_test(test_update_rate_up_no_stall),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
