/*
 * The per-subscriber scheduler (src/subscriber/sub_sched.c) at scale, in
 * simulated time: 10,000 subscribers configured under 50 nodes (200 each,
 * plans of 2 to 10 Mbit/s), 2,000 of them busy (40 per node), each with a
 * real CAKE of its own drawn from a pool of 2,000 (besteffort, 64 queues to
 * keep the test's memory small) and kept backlogged by a greedy sender.
 * The allocation runs every 5 ms over all 10,000 (and the link's own
 * scheduler). What each busy subscriber delivers in the last second is
 * compared with a max-min reference worked out here by bisection:
 *  - room: each node's capacity covers its busy subscribers' plans: each
 *    gets its plan, within 1 %;
 *  - nodes full: each node's capacity is a third of its busy subscribers'
 *    plans: each gets its max-min share of its node, within 1 %, and no
 *    node carries more than its capacity;
 *  - slow link: the same under a link of a fifth of the nodes' sum, so
 *    that each busy subscriber's share (about 400 kbit/s) takes 30 ms to
 *    carry a full frame: the allocation runs every 7.5 ms rather than
 *    every 5, and each still gets its max-min share within 1 % (over 6 s:
 *    a few tens of its frames a second).
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

#include "shaper/rand.h"
#include "shaper/sched.h"
#include "shaper/subscriber.h"
#include "shaper/subscriber_pool.h"
#include "shaper/subscriber_sched.h"
#include "sim.h"

#define NNODES   50u
#define PER_NODE 200u
#define BUSY     40u /* per node: subscribers 0..39 of each */
#define NSUBS    (NNODES * PER_NODE)
#define NBUSY    (NNODES * BUSY)
#define DEPTH    4u /* packets each busy subscriber keeps queued */
#define PKT      1000u
#define MBIT     1000000ull
#define RUN_NS   2000000000ull
#define WIN_NS   1000000000ull /* the last second */

struct world {
	struct sub_set set;
	struct sub_sched *ss;
	struct sched *link[SUB_DIRS];
	struct sh_pkt *pkts; /* NBUSY x DEPTH, each kept by its subscriber */
	uint8_t frame[64];
	/* Per subscriber, in the window: bytes after its first departure, and the times of its
	 * first and last (a rate over whole packets, not cut by the window's edges). */
	uint64_t *win_bytes, *first_dep, *last_dep;
	uint64_t delivered, drops;
	uint64_t run_ns, win_ns;
};

static uint32_t
sub_of(uint32_t node, uint32_t k)
{
	return node * PER_NODE + k;
}

static void
build(struct world *w, bool full, uint32_t link_div)
{
	struct sched_params sp, lp;
	struct sub_sched_config cfg;
	uint64_t rng = 12345, link = 0;
	char err[256];

	sub_set_init(&w->set);
	for (uint32_t n = 0; n < NNODES; n++) {
		uint32_t node;

		assert_int_equal(sub_set_add_node(&w->set, &node), 0);
		snprintf(w->set.nodes[node].name, SUB_ID_LEN, "AP%u", n);
		w->set.nodes[node].parent = SUB_ROOT;
		w->set.nodes[node].depth = 1;
	}
	for (uint32_t i = 0; i < NSUBS; i++) {
		uint32_t s, p, node = 1 + i / PER_NODE;

		assert_int_equal(sub_set_add_sub(&w->set, &s), 0);
		snprintf(w->set.subs[s].id, SUB_ID_LEN, "c%u", i);
		w->set.subs[s].node = node;
		w->set.subs[s].plan[SUB_DOWN].max = (2 + sh_rand64(&rng) % 9) * MBIT;
		w->set.subs[s].plan[SUB_UP].max = w->set.subs[s].plan[SUB_DOWN].max;
		w->set.subs[s].nprefixes = 1;
		w->set.nodes[node].nsubs++;
		assert_int_equal(sub_set_add_prefix(&w->set, &p), 0);
		w->set.prefixes[p].family = 4;
		w->set.prefixes[p].len = 32;
		w->set.prefixes[p].addr[0] = 100;
		w->set.prefixes[p].addr[1] = (uint8_t)(64 + (i >> 16));
		w->set.prefixes[p].addr[2] = (uint8_t)(i >> 8);
		w->set.prefixes[p].addr[3] = (uint8_t)i;
		w->set.prefixes[p].sub = s;
	}
	for (uint32_t n = 0; n < NNODES; n++) {
		uint64_t busy = 0, all = 0;

		for (uint32_t k = 0; k < PER_NODE; k++) {
			uint64_t m = w->set.subs[sub_of(n, k)].plan[SUB_DOWN].max;

			all += m;
			busy += k < BUSY ? m : 0;
		}
		w->set.nodes[1 + n].capacity[SUB_DOWN] = w->set.nodes[1 + n].capacity[SUB_UP] =
				full ? busy / 3 : all;
		link += full ? busy / 3 : busy;
	}
	/* The link has room for what the nodes carry (and a little for itself). */
	w->set.nodes[SUB_ROOT].capacity[SUB_DOWN] = w->set.nodes[SUB_ROOT].capacity[SUB_UP] =
			link_div != 0 ? link / link_div : link + link / 50;
	if (sub_set_validate(&w->set, err, sizeof(err)) != 0)
		fail_msg("%s", err);

	sched_params_default(&lp, SCHED_DISC_CAKE);
	lp.rate = w->set.nodes[SUB_ROOT].capacity[SUB_DOWN] / 8;
	lp.diffserv = SCHED_BESTEFFORT;
	for (int d = 0; d < SUB_DIRS; d++) {
		w->link[d] = sched_create(&lp, err, sizeof(err));
		assert_non_null(w->link[d]);
	}
	sched_params_default(&sp, SCHED_DISC_CAKE);
	sp.rate = 10 * MBIT / 8;
	sp.diffserv = SCHED_BESTEFFORT;
	sp.isolation = SCHED_FLOWS;
	sub_pool_cake_size(&sp);
	sp.cake_queues = 64;
	memset(&cfg, 0, sizeof(cfg));
	cfg.set = &w->set;
	cfg.params[SUB_DOWN] = cfg.params[SUB_UP] = sp;
	cfg.active = NBUSY;
	cfg.link[SUB_DOWN] = w->link[SUB_DOWN];
	cfg.link[SUB_UP] = w->link[SUB_UP];
	w->ss = sub_sched_create(&cfg, err, sizeof(err));
	if (w->ss == NULL)
		fail_msg("%s", err);
}

/* p as subscriber sub's next frame. */
static void
build_one(struct world *w, struct sh_pkt *p, uint32_t sub)
{
	memset(p, 0, sizeof(*p));
	p->data = w->frame;
	p->len = PKT;
	p->hdr_len = sizeof(w->frame);
	p->mem = 2048;
	p->l3_off = p->l4_off = SH_OFF_NONE;
	p->flow_hash = 0x9e3779b1u * (sub + 1);
	p->src_hash = p->dst_hash = 0x85ebca6bu * (sub + 1);
}

static void
send_one(struct world *w, struct sh_pkt *p, uint32_t sub, uint64_t now)
{
	struct sh_pkt_list dropped;

	build_one(w, p, sub);
	sh_pkt_list_init(&dropped);
	sub_sched_enqueue(w->ss, SUB_DOWN, sub, p, now, &dropped);
	/* A greedy sender within its CAKE's limits: nothing is dropped. */
	assert_int_equal(dropped.count, 0);
}

/* The subscriber a packet belongs to: each keeps DEPTH packets of w->pkts. */
static uint32_t
owner(const struct world *w, const struct sh_pkt *p)
{
	uint32_t b = (uint32_t)(p - w->pkts) / DEPTH;

	return sub_of(b / BUSY, b % BUSY);
}

static void
run(struct world *w)
{
	struct sh_pkt *out[64];
	uint32_t subs[64];
	uint64_t now = 0;

	for (uint32_t n = 0, b = 0; n < NNODES; n++)
		for (uint32_t k = 0; k < BUSY; k++, b++)
			for (uint32_t j = 0; j < DEPTH; j++)
				send_one(w, &w->pkts[b * DEPTH + j], sub_of(n, k), now + j);
	while (now < w->run_ns) {
		struct sh_pkt_list dropped;
		unsigned int got;

		now = sub_sched_next_time(w->ss, SUB_DOWN, now);
		assert_true(now != UINT64_MAX);
		sh_pkt_list_init(&dropped);
		got = sub_sched_dequeue_burst(w->ss, SUB_DOWN, out, 64, now, &dropped);
		w->drops += dropped.count;
		assert_int_equal(dropped.count, 0);
		for (unsigned int i = 0; i < got; i++) {
			uint32_t sub = owner(w, out[i]);

			assert_true(sub < NSUBS);
			if (now >= w->run_ns - w->win_ns) {
				if (w->first_dep[sub] == 0)
					w->first_dep[sub] = now;
				else
					w->win_bytes[sub] += out[i]->len;
				w->last_dep[sub] = now;
			}
			w->delivered++;
			build_one(w, out[i], sub); /* the sender tops its queue up */
			subs[i] = sub;
		}
		/* As the worker does: a burst at a time, its state loaded together. */
		sub_sched_enqueue_burst(w->ss, SUB_DOWN, subs, out, got, now, &dropped);
		assert_int_equal(dropped.count, 0);
	}
}

/* sum over i of clamp(L, 0, cap[i]) == total, by bisection; out[i] at that L. */
static void
water(uint32_t n, const double *cap, double total, double *out)
{
	double lo = 0, hi = 1e13, sum = 0;

	for (uint32_t i = 0; i < n; i++)
		sum += cap[i];
	if (sum <= total) {
		memcpy(out, cap, n * sizeof(*out));
		return;
	}
	for (int it = 0; it < 200; it++) {
		double mid = (lo + hi) / 2, s = 0;

		for (uint32_t i = 0; i < n; i++)
			s += fmin(mid, cap[i]);
		if (s > total)
			hi = mid;
		else
			lo = mid;
	}
	for (uint32_t i = 0; i < n; i++)
		out[i] = fmin(lo, cap[i]);
}

static void
check(struct world *w, const char *name)
{
	static double node_want[NNODES], node_cap[NNODES], want[BUSY], caps[BUSY];
	double worst = 0, mean = 0, node_over = 0, signed_mean = 0;
	struct sub_sched_stats st;

	/* The nodes share the link as one child each (ceiling: min(capacity, their busy plans)). */
	for (uint32_t n = 0; n < NNODES; n++) {
		double busy = 0;

		for (uint32_t k = 0; k < BUSY; k++)
			busy += (double)w->set.subs[sub_of(n, k)].plan[SUB_DOWN].max;
		node_cap[n] = fmin((double)w->set.nodes[1 + n].capacity[SUB_DOWN], busy);
	}
	water(NNODES, node_cap, (double)w->set.nodes[SUB_ROOT].capacity[SUB_DOWN], node_want);
	for (uint32_t n = 0; n < NNODES; n++) {
		double carried = 0;

		for (uint32_t k = 0; k < BUSY; k++)
			caps[k] = (double)w->set.subs[sub_of(n, k)].plan[SUB_DOWN].max;
		water(BUSY, caps, node_want[n], want);
		for (uint32_t k = 0; k < BUSY; k++) {
			uint32_t s = sub_of(n, k);
			double got = (double)w->win_bytes[s] * 8 * SIM_NS /
				     (double)(w->last_dep[s] - w->first_dep[s]);
			double e = fabs(got - want[k]) / want[k];

			worst = fmax(worst, e);
			signed_mean += (got - want[k]) / want[k] / NBUSY;
			mean += e / NBUSY;
			carried += got;
		}
		node_over = fmax(node_over,
				 carried / (double)w->set.nodes[1 + n].capacity[SUB_DOWN] - 1);
	}
	sub_sched_get_stats(w->ss, SUB_DOWN, &st);
	printf("# signed mean error %+.4f %%\n", signed_mean * 100);
	SIM_FIGURE("%s: %u of %u subscribers busy under %u nodes, a real CAKE each: largest error "
		   "%.3f %%, mean %.3f %% against the max-min reference; nodes at most %+.3f %% of "
		   "their capacity; %llu allocations, %llu CAKEs taken, %llu packets",
		   name, NBUSY, NSUBS, NNODES, worst * 100, mean * 100, node_over * 100,
		   (unsigned long long)st.allocations, (unsigned long long)st.taken,
		   (unsigned long long)w->delivered);
	assert_true(worst < 0.01);
	assert_true(node_over < 0.001);
	assert_int_equal(st.taken, NBUSY);
	assert_int_equal(st.pool_empty, 0);
}

static void
scenario(bool full, uint32_t link_div, const char *name)
{
	struct world *w = calloc(1, sizeof(*w));
	struct sh_pkt_list rest;
	struct sub_sched_stats st;

	w->pkts = calloc(NBUSY * DEPTH, sizeof(*w->pkts));
	w->win_bytes = calloc(NSUBS, sizeof(*w->win_bytes));
	w->first_dep = calloc(NSUBS, sizeof(*w->first_dep));
	w->last_dep = calloc(NSUBS, sizeof(*w->last_dep));
	/* A slow link's subscribers send a few tens of frames a second each: a longer window. */
	w->run_ns = link_div != 0 ? 7 * SIM_NS : RUN_NS;
	w->win_ns = link_div != 0 ? 6 * SIM_NS : WIN_NS;
	build(w, full, link_div);
	run(w);
	check(w, name);
	sub_sched_get_stats(w->ss, SUB_DOWN, &st);
	/* Every 5 ms with room; every 7.5 ms (a quarter of a frame at 400 kbit/s) on the slow link.
	 */
	if (link_div != 0)
		assert_true(st.allocations < w->run_ns / SUB_SCHED_TICK_NS * 3 / 4);
	else
		assert_true(st.allocations > w->run_ns / SUB_SCHED_TICK_NS * 9 / 10);
	sh_pkt_list_init(&rest);
	sub_sched_flush(w->ss, SUB_DOWN, &rest);
	assert_int_equal(rest.count, NBUSY * DEPTH); /* every packet is still its sender's */
	sub_sched_free(w->ss);
	sched_free(w->link[SUB_DOWN]);
	sched_free(w->link[SUB_UP]);
	sub_set_free(&w->set);
	free(w->pkts);
	free(w->win_bytes);
	free(w->first_dep);
	free(w->last_dep);
	free(w);
}

static void
test_room(void **state)
{
	(void)state;
	scenario(false, 0, "room");
}

static void
test_nodes_full(void **state)
{
	(void)state;
	scenario(true, 0, "nodes 3x oversubscribed");
}

static void
test_slow_link(void **state)
{
	(void)state;
	scenario(true, 5, "nodes 3x oversubscribed, link at a fifth of them");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_room),
		cmocka_unit_test(test_nodes_full),
		cmocka_unit_test(test_slow_link),
	};

	sim_watchdog(280, "the per-subscriber scheduler at scale hung");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
