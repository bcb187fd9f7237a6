/*
 * CAKE details the other simulation tests do not pin down, each written
 * from sch_cake's behaviour and driven packet by packet: the flow state
 * machine (new-flow credit, SPARSE_WAIT -> BULK, the decaying list and its
 * retirement, sp_flows counting decaying flows, sch_cake's DRR++), COBALT's count decay
 * on an empty queue and the 4-MTU-time floor (sch_cake's cobalt_should_drop()/sch_cake's
 * cobalt_queue_full()/cobalt_queue_empty()), BLUE's step and its relaxation with un_flows
 * (sch_cake's cobalt_queue_full()/cobalt_queue_empty()), head drop on overflow (sch_cake's
 * cake_drop()), ingress charging and the bulk-flow term (sch_cake's ingress mode), way_inds
 * (sch_cake's set-associative cake_hash()), the quantum dither (sch_cake's host-scaled quantum),
 * the delay EWMAs (sch_cake's TCA_CAKE_TIN_STATS_*), and fq_codel's overflow feeding CoDel's count
 * (sch_fq_codel.c). tools/mutate.py checks that single-line bugs in these places make a test here
 * fail.
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
#define US(x)   ((uint64_t)(x)*1000ull)
#define MS(x)   ((uint64_t)(x)*1000000ull)
#define SEC(x)  ((uint64_t)(x)*SIM_NS)

static void
params(struct sched_params *p, uint64_t rate, enum sched_isolation iso)
{
	sched_params_default(p, SCHED_DISC_CAKE);
	p->rate = rate;
	p->diffserv = SCHED_BESTEFFORT;
	p->isolation = iso;
	p->seed = 16;
}

static uint32_t
add_udp(struct sim *sim, uint8_t host, uint16_t sport, uint32_t size)
{
	struct sim_src s = sim_src_udp(sim_ip(1, 0, host), sim_ip(2, 0, 1), sport, 0, size);

	return sim_add_src(sim, &s);
}

static void
emit_at(struct sim *sim, uint32_t src, uint64_t t)
{
	sim->now = t;
	assert_non_null(sim_emit(sim, src));
}

static int
deq_at(struct sim *sim, uint64_t t)
{
	sim->now = t;
	return sim_dequeue_once(sim);
}

static struct sched_tin_stats
tin0(struct sim *sim)
{
	struct sched_stats st;

	sched_get_stats(sim->s, &st);
	return st.tins[0];
}

/*
 * sch_cake's DRR++ with an unshaped tin (flow quantum 1514): a flow that empties within
 * an interval of its last packet keeps its COBALT state (drop_next is an
 * activity timeout) and moves to the decaying list, still counted in
 * sp_flows; its next look after the timeout retires it; a flow that was
 * waiting in the old list as SPARSE_WAIT turns BULK on its next packet; a
 * returning flow finds its old queue in its home way (no way_inds).
 */
static void
test_flow_lifecycle(void **state)
{
	struct sched_params p;
	struct sched_tin_stats t;
	struct sim *sim;
	uint32_t a, b;

	(void)state;
	params(&p, 0, SCHED_FLOWS);
	sim = sim_new(&p, 64, 2);
	a = add_udp(sim, 1, 1000, 1514);
	b = add_udp(sim, 2, 2000, 1514);

	emit_at(sim, a, MS(1));
	emit_at(sim, b, MS(1));
	emit_at(sim, b, MS(1));
	t = tin0(sim);
	assert_int_equal(t.sparse_flows, 2);
	assert_int_equal(t.bulk_flows, 0);
	assert_int_equal(t.way_misses, 2);

	/* New flows in arrival order, each on its new-flow credit. */
	assert_int_equal(deq_at(sim, MS(2)), (int)a);
	/* a spent its credit with nothing queued: SPARSE_WAIT in old_flows. */
	assert_int_equal(deq_at(sim, MS(3)), (int)b);
	t = tin0(sim);
	assert_int_equal(t.sparse_flows, 2);
	assert_int_equal(t.bulk_flows, 0);

	/* A packet for a SPARSE_WAIT flow makes it BULK. */
	emit_at(sim, a, MS(4));
	t = tin0(sim);
	assert_int_equal(t.sparse_flows, 1);
	assert_int_equal(t.bulk_flows, 1);

	/* b spent its credit with a packet left: BULK too, behind a. */
	assert_int_equal(deq_at(sim, MS(5)), (int)a);
	t = tin0(sim);
	assert_int_equal(t.sparse_flows, 0);
	assert_int_equal(t.bulk_flows, 2);
	assert_int_equal(deq_at(sim, MS(6)), (int)b);

	/* Both queues are empty; nothing looks at them until traffic. */
	t = tin0(sim);
	assert_int_equal(t.bulk_flows, 2);
	assert_int_equal(t.backlog_bytes, 0);

	/*
	 * b sends again 10 ms after a's last packet: the dequeue finds a
	 * empty with COBALT's activity timeout still running, so a decays
	 * and stays in sp_flows.
	 */
	emit_at(sim, b, MS(7));
	assert_int_equal(deq_at(sim, MS(8)), (int)b);
	t = tin0(sim);
	assert_int_equal(t.sparse_flows, 1); /* a, decaying */
	assert_int_equal(t.bulk_flows, 1);   /* b, empty but not yet looked at */

	/*
	 * 300 ms later (past the 100 ms interval): the first look of a
	 * dequeue goes to the decaying list, which retires a.
	 */
	emit_at(sim, b, MS(300));
	assert_int_equal(deq_at(sim, MS(300)), (int)b);
	t = tin0(sim);
	assert_int_equal(t.sparse_flows, 0);
	assert_int_equal(t.bulk_flows, 1);

	/* a returns to its own (idle) queue in its home way. */
	emit_at(sim, a, MS(400));
	t = tin0(sim);
	assert_int_equal(t.way_indirect_hits, 0);
	assert_int_equal(t.way_misses, 2);
	assert_int_equal(t.way_collisions, 0);
	assert_int_equal(t.sparse_flows, 1);
	sim_drain(sim);
	sim_check_accounting(sim);
	sim_free(sim);
}

/*
 * sch_cake's DRR++: a new flow's first packet goes ahead of a backlogged bulk flow
 * (new-flow credit); with no credit it would join the old rotation
 * behind it.
 */
static void
test_new_flow_credit(void **state)
{
	struct sched_params p;
	struct sim *sim;
	uint32_t a, b, i;

	(void)state;
	params(&p, 0, SCHED_FLOWS);
	sim = sim_new(&p, 64, 2);
	a = add_udp(sim, 1, 1000, 1000);
	b = add_udp(sim, 2, 2000, 200);
	for (i = 0; i < 20; i++)
		emit_at(sim, a, US(10));
	for (i = 0; i < 3; i++)
		assert_int_equal(deq_at(sim, US(20 + i)), (int)a);
	assert_int_equal(tin0(sim).bulk_flows, 1);
	emit_at(sim, b, US(30));
	assert_int_equal(deq_at(sim, US(31)), (int)b);
	assert_int_equal(deq_at(sim, US(32)), (int)a);
	sim_drain(sim);
	sim_check_accounting(sim);
	sim_free(sim);
}

/*
 * sch_cake's cobalt_queue_full()/cobalt_queue_empty(): a flow that stood above target (COBALT count
 * > 0) and emptied decays; every look at it while it is found empty lets count fall by one per
 * control-law slot, so with occasional traffic of another flow it is retired after a while instead
 * of decaying for ever.
 */
static void
test_decaying_count_relaxes(void **state)
{
	struct sched_params p;
	struct sched_tin_stats t;
	struct sim *sim;
	uint32_t a, b, i;
	uint64_t now = MS(1);

	(void)state;
	params(&p, MBIT(100), SCHED_FLOWS);
	sim = sim_new(&p, 256, 2);
	a = add_udp(sim, 1, 1000, 1514);
	b = add_udp(sim, 2, 2000, 100);

	/* 150 packets at once: 18 ms of queue at 100 Mbit, over target. */
	for (i = 0; i < 150; i++)
		emit_at(sim, a, now);
	while (sim->srcs[a].backlog_pkts != 0) {
		uint64_t next = sched_next_time(sim->s, now);

		now = next > now ? next : now;
		deq_at(sim, now);
	}
	assert_true(sim->srcs[a].drops[SHAPER_DROP_AQM] > 0); /* count went up */

	/* b's packets make dequeues look at a, found empty. */
	now += MS(1);
	emit_at(sim, b, now);
	assert_int_equal(deq_at(sim, now), (int)b);
	t = tin0(sim);
	assert_int_equal(t.sparse_flows + t.bulk_flows, 2);

	/* One b packet every 150 ms for 15 s. */
	for (i = 0; i < 100; i++) {
		now += MS(150);
		emit_at(sim, b, now);
		assert_int_equal(deq_at(sim, now), (int)b);
	}
	/* a is gone; only b (sparse or decaying) is left. */
	t = tin0(sim);
	assert_int_equal(t.sparse_flows + t.bulk_flows, 1);
	sim_drain(sim);
	sim_check_accounting(sim);
	sim_free(sim);
}

/* Keep source a at least `depth` packets deep. */
static void
top_up(struct sim *sim, uint32_t a, uint32_t depth)
{
	while (sim->srcs[a].backlog_pkts < depth)
		assert_non_null(sim_emit(sim, a));
}

/*
 * sch_cake's cobalt_queue_full()/cobalt_queue_empty() and sch_cake's cake_drop(): one loss to the
 * memory limit raises the flow's BLUE probability by exactly 1/256 (measured by the share of BLUE
 * drops over 25 600 packets within one target of the overflow, queue never empty, sojourn far below
 * target) and makes it unresponsive; once the flow no longer overflows and its queue is seen empty
 * from time to time, p_drop relaxes back to zero and un_flows returns to 0. BLUE drops ECN-capable
 * packets too (it never marks).
 */
static void
test_blue_step_and_relaxation(void **state)
{
	struct sched_params p;
	struct sim *sim;
	uint32_t a, b, i;
	uint64_t now = SEC(1), drops;

	(void)state;
	params(&p, 0, SCHED_FLOWS);
	p.memlimit = 10 * SIM_MBUF_MEM;
	sim = sim_new(&p, 64, 2);
	a = add_udp(sim, 1, 1000, 100);
	b = add_udp(sim, 2, 2000, 100);
	sim->srcs[a].ecn = 2; /* ECT(0): BLUE drops it all the same */

	for (i = 0; i < 11; i++)
		emit_at(sim, a, now);
	assert_int_equal(sim->srcs[a].drops[SHAPER_DROP_OVERFLOW], 1);
	assert_int_equal(tin0(sim).unresponsive_flows, 1);

	/* 25 600 dequeues 100 ns apart (2.56 ms < target), >= 2 queued. */
	for (i = 0; i < 25600; i++) {
		now += 100;
		sim->now = now;
		top_up(sim, a, 4);
		assert_true(deq_at(sim, now) == (int)a);
	}
	drops = sim->srcs[a].drops[SHAPER_DROP_AQM];
	SIM_FIGURE("BLUE: %llu drops in 25600 packets after one overflow (1/256: 100 expected)",
		   (unsigned long long)drops);
	assert_true(drops >= 60 && drops <= 150);
	assert_int_equal(sim->srcs[a].ce, 0);
	assert_int_equal(sim->srcs[a].drops[SHAPER_DROP_OVERFLOW], 1);

	/*
	 * The overflow is over: every 20 ms a sends a packet, and after it
	 * went out b sends three that outlast b's new-flow credit, so a
	 * dequeue finds a's queue empty. p_drop relaxes to 0.
	 */
	sim->srcs[b].size = 1514;
	while (deq_at(sim, now) >= 0)
		;
	for (i = 0; i < 500 && tin0(sim).unresponsive_flows != 0; i++) {
		now += MS(20);
		emit_at(sim, a, now);
		while (deq_at(sim, now) >= 0)
			;
		now += MS(1);
		emit_at(sim, b, now);
		emit_at(sim, b, now);
		emit_at(sim, b, now);
		while (deq_at(sim, now) >= 0)
			;
	}
	SIM_FIGURE("BLUE: un_flows back to 0 after %u rounds of 20 ms", i);
	assert_int_equal(tin0(sim).unresponsive_flows, 0);
	assert_int_equal(sim->srcs[a].drops[SHAPER_DROP_OVERFLOW], 1);
	sim_drain(sim);
	sim_check_accounting(sim);
	sim_free(sim);
}

struct drop_seq {
	uint32_t seq[16];
	uint32_t n;
};

static void
log_overflow(struct sim *sim, struct sim_pkt *p, void *ctx)
{
	struct drop_seq *d = ctx;

	(void)sim;
	if (p->pkt.drop_reason == SHAPER_DROP_OVERFLOW && d->n < 16)
		d->seq[d->n++] = p->seq;
}

/* sch_cake's cake_drop(): the memory limit drops from the head of the fattest queue. */
static void
test_overflow_drops_head(void **state)
{
	struct sched_params p;
	struct drop_seq d;
	struct sim *sim;
	uint32_t a, b, i;

	(void)state;
	memset(&d, 0, sizeof(d));
	params(&p, MBIT(10), SCHED_FLOWS);
	p.memlimit = 10 * SIM_MBUF_MEM;
	sim = sim_new(&p, 64, 2);
	sim->on_drop = log_overflow;
	sim->ctx = &d;
	a = add_udp(sim, 1, 1000, 1514);
	b = add_udp(sim, 2, 2000, 1514);
	for (i = 0; i < 7; i++)
		emit_at(sim, a, MS(1));
	for (i = 0; i < 3; i++)
		emit_at(sim, b, MS(1));
	assert_int_equal(d.n, 0);
	emit_at(sim, a, MS(2)); /* a: seq 7, 8 packets */
	emit_at(sim, b, MS(2)); /* b: 4 packets */
	assert_int_equal(d.n, 2);
	assert_int_equal(d.seq[0], 0);
	assert_int_equal(d.seq[1], 1);
	assert_int_equal(sim->srcs[b].drops[SHAPER_DROP_OVERFLOW], 0);
	sim_drain(sim);
	sim_check_accounting(sim);
	sim_free(sim);
}

struct adj_sum {
	uint64_t aqm_adj, aqm_pkts;
};

static void
sum_aqm(struct sim *sim, struct sim_pkt *p, void *ctx)
{
	struct adj_sum *s = ctx;

	(void)sim;
	if (p->pkt.drop_reason == SHAPER_DROP_AQM) {
		s->aqm_adj += p->pkt.adj_len;
		s->aqm_pkts++;
	}
}

/*
 * sch_cake's ingress mode (a): in ingress mode packets dropped by COBALT advance the shaper
 * clocks, so delivered plus COBALT-dropped bytes add up to the rate.
 */
static void
test_ingress_charges_drops(void **state)
{
	struct sched_params p;
	struct adj_sum s;
	struct sim *sim;
	uint32_t a;
	double total, rate;

	(void)state;
	memset(&s, 0, sizeof(s));
	params(&p, MBIT(10), SCHED_FLOWS);
	p.ingress = true;
	p.memlimit = 64u << 20; /* no overflow */
	sim = sim_new(&p, 16384, 1);
	sim->on_drop = sum_aqm;
	sim->ctx = &s;
	a = add_udp(sim, 1, 1000, 1514);
	sim->srcs[a].rate = MBIT(20);
	sim->meas_start = 0;
	sim_run(sim, SEC(4));
	total = (double)(sim->srcs[a].rx_adj + s.aqm_adj);
	rate = total / 4.0 / (double)MBIT(10);
	SIM_FIGURE("ingress: %llu COBALT drops; delivered + dropped = %.4f x rate",
		   (unsigned long long)s.aqm_pkts, rate);
	assert_true(s.aqm_pkts * 20 > sim->srcs[a].rx_pkts); /* drops matter (> 5 %) */
	assert_true(fabs(rate - 1.0) < 0.01);
	sim_drain(sim);
	sim_check_accounting(sim);
	sim_free(sim);
}

/*
 * sch_cake's ingress mode (b): in ingress mode COBALT leaves about two MTUs of queue per bulk
 * flow: with 8 bulk flows at 10 Mbit (MTU time 1.2 ms) sojourns up to
 * 2 x 8 x 1.2 = 19 ms draw no signal although they are over target.
 */
static void
test_ingress_bulk_term(void **state)
{
	static uint64_t delays[8][4096];
	struct sched_params p;
	struct sim *sim;
	uint64_t max = 0;
	uint32_t i, k;

	(void)state;
	params(&p, MBIT(10), SCHED_FLOWS);
	p.ingress = true;
	sim = sim_new(&p, 4096, 8);
	for (i = 0; i < 8; i++) {
		uint32_t s = add_udp(sim, (uint8_t)(1 + i), (uint16_t)(1000 + i), 1514);

		sim->srcs[s].rate = MBIT(10) * 105 / 100 / 8;
		sim->srcs[s].delays = delays[i];
		sim->srcs[s].delays_cap = 4096;
	}
	/* The queue grows by 0.05 x rate and more: about 15 ms by 0.18 s. */
	sim_run(sim, MS(180));
	for (i = 0; i < 8; i++)
		for (k = 0; k < sim->srcs[i].delays_n; k++)
			if (delays[i][k] > max)
				max = delays[i][k];
	SIM_FIGURE("ingress, 8 bulk flows: max sojourn %.1f ms, %llu COBALT drops", max / 1e6,
		   (unsigned long long)sim->drops[SHAPER_DROP_AQM]);
	assert_true(max > MS(8) && max < MS(19));
	assert_int_equal(sim->drops[SHAPER_DROP_AQM], 0);
	assert_int_equal(tin0(sim).bulk_flows, 8);
	sim_free(sim);
}

/*
 * sch_cake's cobalt_should_drop(): over_target also needs sojourn > 4 MTU times. At 2 Mbit (MTU
 * time 6.06 ms, target raised to 9.08 ms) a closed loop keeping 3 packets queued sees about 18 ms
 * of sojourn: above target but under 24 ms, so COBALT stays quiet.
 */
static void
test_four_mtu_floor(void **state)
{
	static uint64_t delays[4096];
	struct sched_params p;
	struct sched_tin_stats t;
	struct sim *sim;
	uint32_t a, k;
	uint64_t now = MS(1), min = UINT64_MAX;

	(void)state;
	params(&p, MBIT(2), SCHED_FLOWS);
	sim = sim_new(&p, 64, 1);
	a = add_udp(sim, 1, 1000, 1514);
	sim->srcs[a].delays = delays;
	sim->srcs[a].delays_cap = 4096;
	t = tin0(sim);
	assert_int_equal(t.target_us, 9084);
	for (k = 0; k < 1500; k++) {
		uint64_t next;

		sim->now = now;
		top_up(sim, a, 3);
		next = sched_next_time(sim->s, now);
		now = next > now ? next : now;
		deq_at(sim, now);
	}
	for (k = 10; k < sim->srcs[a].delays_n; k++)
		if (delays[k] < min)
			min = delays[k];
	SIM_FIGURE("2 Mbit, 3 packets queued: min sojourn %.2f ms, %llu COBALT drops", min / 1e6,
		   (unsigned long long)sim->drops[SHAPER_DROP_AQM]);
	assert_true(min > MS(10));
	assert_int_equal(sim->drops[SHAPER_DROP_AQM], 0);
	sim_free(sim);
}

/*
 * sch_cake's host-scaled quantum: host-scaled quanta are dithered, so a host with two bulk flows
 * gets the same share as a host with one. Without the dither both lose
 * the fraction rounded off, and the two-flow host loses it twice. At
 * 1 Mbit the flow quantum is 300: 299 vs 2 x 149 per round without it.
 */
static void
test_quantum_dither(void **state)
{
	struct sched_params p;
	struct sim *sim;
	uint32_t x, y1, y2, k;
	uint64_t now = MS(1);
	double ratio;

	(void)state;
	params(&p, MBIT(1), SCHED_DUAL_SRCHOST);
	sim = sim_new(&p, 256, 3);
	x = add_udp(sim, 1, 1000, 64);
	y1 = add_udp(sim, 2, 2000, 64);
	y2 = add_udp(sim, 2, 2001, 64);
	assert_int_equal(tin0(sim).flow_quantum, 300);
	for (k = 0; k < 200000; k++) {
		uint64_t next;

		sim->now = now;
		top_up(sim, x, 3);
		top_up(sim, y1, 3);
		top_up(sim, y2, 3);
		next = sched_next_time(sim->s, now);
		now = next > now ? next : now;
		deq_at(sim, now);
	}
	assert_int_equal(sim->drops[SHAPER_DROP_AQM], 0);
	ratio = (double)(sim->srcs[y1].rx_adj + sim->srcs[y2].rx_adj) / (double)sim->srcs[x].rx_adj;
	SIM_FIGURE("dither: host with 2 flows / host with 1 = %.5f", ratio);
	assert_true(fabs(ratio - 1.0) < 0.001);
	sim_free(sim);
}

/*
 * sch_cake's TCA_CAKE_TIN_STATS_*: pk_delay, av_delay and sp_delay are EWMAs of each delivered
 * packet's sojourn (gain 1/4 up and 1/256 down for pk_delay, 1/256 for
 * av_delay, 1/4 down and 1/256 up for sp_delay), reported in µs. Replayed
 * exactly from known sojourns.
 */
static void
test_delay_ewmas(void **state)
{
	static const uint64_t sojourn_us[] = { 1000, 20000, 300, 300, 50000, 10, 8000, 8000, 2 };
	struct sched_params p;
	struct sched_tin_stats t;
	struct sim *sim;
	uint64_t pk = 0, av = 0, sp = 0, now = MS(1);
	uint32_t a, i, rep;

	(void)state;
	params(&p, 0, SCHED_FLOWS);
	sim = sim_new(&p, 64, 1);
	a = add_udp(sim, 1, 1000, 500);
	for (rep = 0; rep < 3; rep++) {
		for (i = 0; i < sizeof(sojourn_us) / sizeof(sojourn_us[0]); i++) {
			uint64_t d = US(sojourn_us[i]) + 7;

			emit_at(sim, a, now);
			now += d;
			assert_int_equal(deq_at(sim, now), (int)a);
			av = av - (av >> 8) + (d >> 8);
			pk = d > pk ? pk - (pk >> 2) + (d >> 2) : pk - (pk >> 8) + (d >> 8);
			sp = d < sp ? sp - (sp >> 2) + (d >> 2) : sp - (sp >> 8) + (d >> 8);
			t = tin0(sim);
			assert_int_equal(t.peak_delay_us, pk / 1000);
			assert_int_equal(t.avg_delay_us, av / 1000);
			assert_int_equal(t.base_delay_us, sp / 1000);
			now += MS(1);
		}
	}
	SIM_FIGURE("delay EWMAs after 27 samples: pk %u us, av %u us, sp %u us", t.peak_delay_us,
		   t.avg_delay_us, t.base_delay_us);
	sim_free(sim);
}

/*
 * sch_cake's shaper gating in cake_dequeue() and sch_cake's failsafe clock: the failsafe clock runs
 * at 2/3 of the rate on delivered packets only, so in ingress mode, where a flood's overflow and
 * COBALT drops push the main clock far ahead, delivery still gets exactly 2/3 of the rate.
 */
static void
test_ingress_failsafe(void **state)
{
	struct sched_params p;
	struct sim *sim;
	uint32_t a;
	double got;

	(void)state;
	params(&p, MBIT(10), SCHED_FLOWS);
	p.ingress = true;
	p.memlimit = 20 * SIM_MBUF_MEM;
	sim = sim_new(&p, 4096, 1);
	a = add_udp(sim, 1, 1000, 1514);
	sim->srcs[a].rate = MBIT(30);
	sim->meas_start = SEC(1);
	sim->meas_end = SEC(4);
	sim_run(sim, SEC(4));
	got = (double)sim->srcs[a].meas_adj / 3.0 / (double)MBIT(10);
	SIM_FIGURE("ingress flood at 3x: delivered %.4f x rate (failsafe: 2/3)", got);
	assert_true(sim->drops[SHAPER_DROP_OVERFLOW] + sim->drops[SHAPER_DROP_AQM] > sim->deq);
	assert_true(fabs(got - 2.0 / 3.0) < 0.01);
	sim_drain(sim);
	sim_check_accounting(sim);
	sim_free(sim);
}

/*
 * sch_cake's tin choice in cake_dequeue(): in shaped mode, when no tin is due, the one due soonest
 * wins and a tie goes to the higher index. diffserv3 at 8 Mbit: Voice (tin 2, 2 Mbit, 4 us a byte)
 * sends 400 bytes and Bulk (tin 1, 500 kbit, 16 us a byte) 100: both tin clocks then stand 1.6 ms
 * after their start, and the next packet is Voice's.
 */
static void
test_shaped_tie_higher_tin(void **state)
{
	struct sched_params p;
	struct sim *sim;
	uint32_t bulk, voice, i;
	uint64_t t0 = MS(1), next;

	(void)state;
	params(&p, 1000000, SCHED_FLOWS);
	p.diffserv = SCHED_DIFFSERV3;
	sim = sim_new(&p, 64, 2);
	bulk = add_udp(sim, 1, 1000, 100);
	voice = add_udp(sim, 2, 2000, 400);
	sim->srcs[bulk].dscp = 8;   /* CS1 */
	sim->srcs[voice].dscp = 46; /* EF */
	for (i = 0; i < 3; i++) {
		emit_at(sim, bulk, t0);
		emit_at(sim, voice, t0);
	}
	/* Both due at t0: the higher index. */
	assert_int_equal(deq_at(sim, t0), (int)voice);
	next = sched_next_time(sim->s, t0);
	assert_int_equal(next, t0 + US(400));
	/* Only Bulk's clock is due. */
	assert_int_equal(deq_at(sim, next), (int)bulk);
	next = sched_next_time(sim->s, next);
	assert_int_equal(next, t0 + US(500));
	/* Neither is due, both are 1.1 ms ahead: Voice. */
	assert_int_equal(deq_at(sim, next), (int)voice);
	sim_drain(sim);
	sim_check_accounting(sim);
	sim_free(sim);
}

/*
 * cake_dequeue()'s empty-flow branch and sch_cake's host-scaled quantum: a bulk flow that empties
 * (and decays) no longer counts toward its host's load, so the host's remaining bulk flow gets a
 * whole quantum again: as much as a flow of a host with only one.
 */
static void
test_decaying_flow_leaves_host_load(void **state)
{
	struct sched_params p;
	struct sim *sim;
	uint32_t x1, x2, z, k;
	uint64_t now = MS(1), x0 = 0, z0 = 0;
	double ratio;

	(void)state;
	params(&p, MBIT(1), SCHED_DUAL_SRCHOST);
	sim = sim_new(&p, 256, 3);
	x1 = add_udp(sim, 1, 1000, 64);
	x2 = add_udp(sim, 1, 1001, 64);
	z = add_udp(sim, 2, 2000, 64);
	for (k = 0; k < 30000; k++) {
		uint64_t next;

		sim->now = now;
		top_up(sim, x1, 3);
		top_up(sim, z, 3);
		if (k < 2000)
			top_up(sim, x2, 3); /* x2 stops after 2000 packets */
		if (k == 10000) {
			x0 = sim->srcs[x1].rx_adj;
			z0 = sim->srcs[z].rx_adj;
		}
		next = sched_next_time(sim->s, now);
		now = next > now ? next : now;
		deq_at(sim, now);
	}
	assert_int_equal(sim->srcs[x2].backlog_pkts, 0);
	ratio = (double)(sim->srcs[x1].rx_adj - x0) / (double)(sim->srcs[z].rx_adj - z0);
	SIM_FIGURE("host load after a flow left: x1 / z = %.4f", ratio);
	assert_true(fabs(ratio - 1.0) < 0.01);
	sim_free(sim);
}

/*
 * fq_codel (sch_fq_codel.c): an overflow head-drops from the fattest flow and adds the
 * number dropped to that flow's CoDel count, so CoDel on a flow that keeps
 * overflowing signals much more often than its own count alone would
 * give. One unresponsive flow at twice the rate into a 100-packet limit.
 */
static void
test_fq_codel_overflow_raises_count(void **state)
{
	struct sched_params p;
	struct sim *sim;
	uint32_t a;

	(void)state;
	sched_params_default(&p, SCHED_DISC_FQ_CODEL);
	p.rate = MBIT(10);
	p.fqc_limit = 100;
	p.seed = 16;
	sim = sim_new(&p, 4096, 1);
	a = add_udp(sim, 1, 1000, 1514);
	sim->srcs[a].rate = MBIT(20);
	sim_run(sim, SEC(4));
	SIM_FIGURE("fq_codel overflow: %llu overflow drops, %llu CoDel drops in 4 s",
		   (unsigned long long)sim->drops[SHAPER_DROP_OVERFLOW],
		   (unsigned long long)sim->drops[SHAPER_DROP_AQM]);
	assert_true(sim->drops[SHAPER_DROP_OVERFLOW] > 0);
	/*
	 * Count rising by one per signal gives about 400 signals in 4 s at a
	 * 100 ms interval (the sum of 100 ms / sqrt(k) reaches 4 s near
	 * k = 400); the overflows' additions make it several times that.
	 */
	assert_true(sim->drops[SHAPER_DROP_AQM] > 800);
	sim_drain(sim);
	sim_check_accounting(sim);
	sim_free(sim);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flow_lifecycle),
		cmocka_unit_test(test_new_flow_credit),
		cmocka_unit_test(test_decaying_count_relaxes),
		cmocka_unit_test(test_blue_step_and_relaxation),
		cmocka_unit_test(test_overflow_drops_head),
		cmocka_unit_test(test_ingress_charges_drops),
		cmocka_unit_test(test_ingress_bulk_term),
		cmocka_unit_test(test_four_mtu_floor),
		cmocka_unit_test(test_quantum_dither),
		cmocka_unit_test(test_delay_ewmas),
		cmocka_unit_test(test_ingress_failsafe),
		cmocka_unit_test(test_shaped_tie_higher_tin),
		cmocka_unit_test(test_decaying_flow_leaves_host_load),
		cmocka_unit_test(test_fq_codel_overflow_raises_count),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
