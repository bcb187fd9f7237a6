/*
 * Per-subscriber CAKE from the pool, in simulated time: 40 subscribers
 * under one 100 Mbit/s node (plans of 5..15 Mbit/s, 3x oversubscribed),
 * each with two bulk flows. A subscriber draws a CAKE from a pool of 25 at
 * its first packet and gives it back once it has drained and been quiet for
 * SUB_POOL_HOLD_NS; the allocator sets each CAKE's rate every 5 ms. Phase
 * one: subscribers 0..19 busy. Phase two: 20..39 busy, most of them
 * waiting (5 ms ticks) for the CAKEs the first twenty give back after
 * their hold. In the last second of each phase, each busy subscriber's
 * delivered rate is within 1 % of its max-min share of the node (computed
 * here by bisection), and its two flows share its rate evenly.
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
#include "shaper/subscriber.h"
#include "shaper/subscriber_alloc.h"
#include "shaper/subscriber_pool.h"
#include "sim.h"

#define NSUB      40u
#define POOLN     25u
#define PKT       1500u
#define TICK_NS   5000000ull
#define MBIT      1000000ull
#define NPKTS     4096u
#define PHASE_NS  3000000000ull /* > SUB_POOL_HOLD_NS: the idle ones give back */
#define WINDOW_NS 1000000000ull /* the last second of a phase */

struct sub {
	struct sched *cake; /* NULL while idle */
	bool busy;
	uint32_t queued;
	uint64_t last_pkt;
	uint64_t first_dep, last_dep, win_bytes, flow_bytes[2];
	uint32_t next_flow;
};

struct world {
	struct sub_set set;
	struct sub_alloc *alloc;
	struct sub_pool *pool;
	struct sub sub[NSUB];
	uint64_t demand[NSUB], rate[NSUB];
	struct sh_pkt pkts[NPKTS], *free_pkts[NPKTS];
	uint32_t nfree;
	uint8_t frame[64];
	uint64_t now, takes, gives, pool_empty, drops;
};

/* CAKE's own drops (COBALT: a greedy sender keeps a standing queue) go back to the pool. */
static void
reclaim(struct world *w, uint32_t i, struct sh_pkt_list *dropped)
{
	struct sh_pkt *p;

	while ((p = dropped->head) != NULL) {
		dropped->head = p->next;
		dropped->count--;
		w->sub[i].queued--;
		w->drops++;
		w->free_pkts[w->nfree++] = p;
	}
	sh_pkt_list_init(dropped);
}

static void
refill(struct world *w, uint32_t i)
{
	struct sub *s = &w->sub[i];
	struct sh_pkt_list dropped;

	if (s->cake == NULL) {
		s->cake = sub_pool_take(w->pool);
		if (s->cake == NULL) {
			w->pool_empty++;
			return;
		}
		w->takes++;
		/* A fresh CAKE starts at the pool's rate until the next tick. */
	}
	sh_pkt_list_init(&dropped);
	while (s->queued < 4) {
		struct sh_pkt *p = w->free_pkts[--w->nfree];
		uint32_t f = s->next_flow++ & 1;

		memset(p, 0, sizeof(*p));
		p->data = w->frame;
		p->len = PKT;
		p->hdr_len = sizeof(w->frame);
		p->mem = 2048;
		p->l3_off = p->l4_off = SH_OFF_NONE;
		p->flow_hash = 0x9e3779b1u * (2 * i + f + 1);
		p->src_hash = p->dst_hash = 0x85ebca6bu * (i + 1);
		p->queue = (uint16_t)f; /* overwritten by CAKE; the flow is kept in the hash */
		sched_enqueue(s->cake, p, w->now, &dropped);
		s->queued++;
		s->last_pkt = w->now;
		reclaim(w, i, &dropped);
	}
}

static void
tick(struct world *w)
{
	uint32_t i;

	for (i = 0; i < NSUB; i++) {
		struct sub *s = &w->sub[i];

		w->demand[i] = s->queued >= 2 ? SUB_DEMAND_ALL : 0;
		/* Drained and quiet long enough: back to the pool. */
		if (!s->busy && s->cake != NULL && s->queued == 0 &&
		    sub_pool_may_return(s->cake, s->last_pkt, w->now)) {
			assert_int_equal(sub_pool_give(w->pool, s->cake), 0);
			s->cake = NULL;
			w->gives++;
		}
	}
	/* A busy subscriber the pool could not serve tries again. */
	for (i = 0; i < NSUB; i++)
		if (w->sub[i].busy && w->sub[i].cake == NULL)
			refill(w, i);
	sub_alloc_run(w->alloc, SUB_DOWN, 0, w->demand, w->rate, NULL);
	for (i = 0; i < NSUB; i++)
		if (w->sub[i].cake != NULL && w->rate[i] >= 8 * 64)
			sched_set_rate(w->sub[i].cake, w->rate[i] / 8, w->now);
}

/* Run [now, until): serve every CAKE when due, tick every TICK_NS. */
static void
run(struct world *w, uint64_t until, uint64_t win_from)
{
	while (w->now < until) {
		uint64_t next = w->now - w->now % TICK_NS + TICK_NS;
		struct sh_pkt_list dropped;
		uint32_t i, best = NSUB;

		for (i = 0; i < NSUB; i++) {
			uint64_t t;

			if (w->sub[i].cake == NULL || w->sub[i].queued == 0)
				continue;
			t = sched_next_time(w->sub[i].cake, w->now);
			if (t < next) {
				next = t;
				best = i;
			}
		}
		w->now = next;
		if (best == NSUB) {
			tick(w);
			continue;
		}
		sh_pkt_list_init(&dropped);
		for (;;) {
			struct sub *s = &w->sub[best];
			struct sh_pkt *p = sched_dequeue(s->cake, w->now, &dropped);

			if (p == NULL)
				break;
			s->queued--;
			if (w->now >= win_from) {
				if (s->first_dep == 0) {
					s->first_dep = w->now;
				} else {
					s->win_bytes += p->len;
					s->flow_bytes[p->flow_hash == 0x9e3779b1u * (2 * best + 1)
								      ? 0
								      : 1] += p->len;
				}
				s->last_dep = w->now;
			}
			w->free_pkts[w->nfree++] = p;
		}
		reclaim(w, best, &dropped);
		if (w->sub[best].busy)
			refill(w, best);
	}
}

/* Max-min shares of the node by bisection over the busy subscribers' maxes. */
static void
reference(const struct world *w, double *want)
{
	double cap = (double)w->set.nodes[1].capacity[SUB_DOWN], lo = 0, hi = 1e12;
	uint32_t i;
	int it;

	for (it = 0; it < 200; it++) {
		double mid = (lo + hi) / 2, s = 0;

		for (i = 0; i < NSUB; i++)
			if (w->sub[i].busy)
				s += fmin(mid, (double)w->set.subs[i].plan[SUB_DOWN].max);
		if (s > cap)
			hi = mid;
		else
			lo = mid;
	}
	for (i = 0; i < NSUB; i++)
		want[i] = w->sub[i].busy ? fmin(lo, (double)w->set.subs[i].plan[SUB_DOWN].max) : 0;
}

static double
phase(struct world *w, uint32_t from, uint32_t to, const char *name)
{
	double want[NSUB], worst = 0, flow_worst = 0;
	uint64_t start = w->now;
	uint32_t i;

	for (i = 0; i < NSUB; i++) {
		struct sub *s = &w->sub[i];

		s->busy = i >= from && i < to;
		s->first_dep = s->last_dep = s->win_bytes = 0;
		s->flow_bytes[0] = s->flow_bytes[1] = 0;
		if (s->busy)
			refill(w, i);
	}
	run(w, start + PHASE_NS, start + PHASE_NS - WINDOW_NS);
	reference(w, want);
	for (i = from; i < to; i++) {
		const struct sub *s = &w->sub[i];
		double got, f0, f1;

		assert_true(s->last_dep > s->first_dep);
		got = (double)s->win_bytes * 8e9 / (double)(s->last_dep - s->first_dep);
		worst = fmax(worst, fabs(got - want[i]) / want[i]);
		f0 = (double)s->flow_bytes[0];
		f1 = (double)s->flow_bytes[1];
		flow_worst = fmax(flow_worst, fabs(f0 - f1) / (f0 + f1));
	}
	SIM_FIGURE("subscriber CAKEs from a pool of %u, %s: largest error %.3f %% against the "
		   "max-min share; flows inside a subscriber differ by at most %.2f %%; %llu taken, "
		   "%llu given back, %u left; %llu AQM drops; %llu waits for a free one",
		   POOLN, name, worst * 100, flow_worst * 100, (unsigned long long)w->takes,
		   (unsigned long long)w->gives, sub_pool_available(w->pool),
		   (unsigned long long)w->drops, (unsigned long long)w->pool_empty);
	assert_true(flow_worst < 0.02);
	return worst;
}

static void
test_pool_in_use(void **state)
{
	struct world *w = calloc(1, sizeof(*w));
	struct sched_params p;
	uint32_t i, node;
	uint64_t sum = 0;
	char err[128];

	(void)state;
	sim_watchdog(300, "subscriber pool");
	sub_set_init(&w->set);
	assert_int_equal(sub_set_add_node(&w->set, &node), 0);
	snprintf(w->set.nodes[node].name, SUB_ID_LEN, "AP");
	w->set.nodes[node].parent = SUB_ROOT;
	for (i = 0; i < NSUB; i++) {
		uint32_t idx;

		assert_int_equal(sub_set_add_sub(&w->set, &idx), 0);
		snprintf(w->set.subs[idx].id, SUB_ID_LEN, "c%u", i);
		w->set.subs[idx].node = node;
		w->set.subs[idx].plan[SUB_DOWN].max = (5 + 5 * (i % 3)) * MBIT;
		w->set.subs[idx].plan[SUB_UP] = w->set.subs[idx].plan[SUB_DOWN];
		sum += w->set.subs[idx].plan[SUB_DOWN].max;
	}
	/* A third of the plans of each half, so both phases are 3x oversubscribed. */
	w->set.nodes[node].capacity[SUB_DOWN] = w->set.nodes[node].capacity[SUB_UP] = sum / 2 / 3;
	if (sub_set_validate(&w->set, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	w->alloc = sub_alloc_create(&w->set);
	sched_params_default(&p, SCHED_DISC_CAKE);
	p.rate = 10 * MBIT / 8;
	p.diffserv = SCHED_BESTEFFORT;
	p.isolation = SCHED_FLOWS;
	sub_pool_cake_size(&p); /* 1 tin x 256 queues, as the data path will make them */
	w->pool = sub_pool_create(&p, POOLN, NULL, err, sizeof(err));
	if (w->pool == NULL)
		fail_msg("%s", err);
	for (i = 0; i < NPKTS; i++)
		w->free_pkts[w->nfree++] = &w->pkts[i];

	assert_true(phase(w, 0, 20, "phase 1 (subscribers 0..19)") < 0.01);
	assert_true(phase(w, 20, 40, "phase 2 (20..39, on CAKEs given back)") < 0.01);
	/* Phase two waited for the CAKEs the first twenty held for SUB_POOL_HOLD_NS. */
	assert_true(w->pool_empty > 0);
	assert_int_equal(w->gives, 20); /* the first twenty gave theirs back */
	assert_int_equal(w->takes, 40);

	for (i = 0; i < NSUB; i++) {
		struct sh_pkt_list out;

		if (w->sub[i].cake == NULL)
			continue;
		sh_pkt_list_init(&out);
		sched_flush(w->sub[i].cake, &out);
		assert_int_equal(sub_pool_give(w->pool, w->sub[i].cake), 0);
	}
	assert_int_equal(sub_pool_available(w->pool), POOLN);
	sub_pool_free(w->pool);
	sub_alloc_free(w->alloc);
	sub_set_free(&w->set);
	free(w);
	sim_watchdog(0, NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_in_use),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
