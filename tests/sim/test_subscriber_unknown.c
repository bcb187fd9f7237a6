/*
 * Addresses no subscriber owns, each at a plan of its own (subscribers'
 * "unknown" as a plan), through the per-subscriber scheduler in simulated
 * time. Two subscribers (plans 10 Mbit/s) under a 100 Mbit/s link, and
 * unknown addresses at 5 Mbit/s each, every one offering twice its plan:
 * - each unknown address gets its own plan within 1 %, beside the
 *   subscribers' plans, as one more subscriber under the link;
 * - with fewer slots than unknown addresses, those that found a slot keep
 *   their plan and the others share the link's own CAKE (counted as
 *   unknown_full);
 * - once quiet and drained, every slot goes back; new addresses then take
 *   them, with counters from zero;
 * - a live change back to "link": every unknown address shares the link's
 *   CAKE from then on; what the slots held drains, and they go back.
 * - a live change with more subscriber slots than the scheduler has grows
 *   it: everything queued, every counter and every rate stays with its
 *   subscriber, the link's entry and the unknown slots (whose indices move
 *   up), and a subscriber in a new slot takes an unknown address over.
 * Every frame is accounted: sent = delivered + dropped + queued.
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
#include "shaper/subscriber_sched.h"
#include "shaper/subscriber_unknown.h"
#include "sim.h"

#define MBIT  1000000ull
#define NSUB  2u
#define NUNK  4u /* unknown addresses */
#define NSRC  (NSUB + NUNK)
#define NPKTS 32768u
#define FRAME 1514u
#define PLAN  (10 * MBIT)
#define UPLAN (5 * MBIT)

struct src {
	struct sim_src s;
	uint32_t addr; /* LAN side */
	uint32_t sub;  /* its subscriber, SUB_NONE for an unknown address */
	uint64_t rate; /* bytes/s */
	uint64_t next;
	bool on;
	uint64_t win_bytes;
};

struct world {
	struct sub_set set;
	struct sub_sched *ss;
	struct sched *link[SUB_DIRS];
	struct classify_key key;
	struct src src[NSRC];
	struct sim_pool pool;
	uint64_t now, win_from;
	uint64_t sent, delivered, dropped;
};

static uint32_t
unknown_addr(uint32_t k, uint32_t gen)
{
	return (192u << 24) | (168u << 16) | (gen << 8) | (10u + k); /* 192.168.gen.10+k */
}

static struct world *
world_new(uint32_t slots)
{
	struct world *w = calloc(1, sizeof(*w));
	struct sched_params sp, lp;
	struct sub_sched_config cfg;
	char err[256];
	uint32_t i;

	sim_pool_init(&w->pool, NPKTS);
	classify_key_init(&w->key, 7);
	sub_set_init(&w->set);
	for (int d = 0; d < SUB_DIRS; d++) {
		w->set.nodes[SUB_ROOT].capacity[d] = 100 * MBIT;
		w->set.unknown_plan[d].max = UPLAN;
	}
	w->set.unknown = SUB_UNKNOWN_PLAN;
	for (i = 0; i < NSUB; i++) {
		uint32_t s, p;

		assert_int_equal(sub_set_add_sub(&w->set, &s), 0);
		snprintf(w->set.subs[s].id, SUB_ID_LEN, "c%u", i);
		w->set.subs[s].node = SUB_ROOT;
		w->set.subs[s].plan[SUB_DOWN].max = PLAN;
		w->set.subs[s].plan[SUB_UP].max = PLAN;
		w->set.subs[s].nprefixes = 1;
		w->set.nodes[SUB_ROOT].nsubs++;
		assert_int_equal(sub_set_add_prefix(&w->set, &p), 0);
		w->set.prefixes[p].family = 4;
		w->set.prefixes[p].len = 32;
		w->set.prefixes[p].addr[0] = 100;
		w->set.prefixes[p].addr[1] = 64;
		w->set.prefixes[p].addr[3] = (uint8_t)(1 + i);
		w->set.prefixes[p].sub = s;
	}
	if (sub_set_validate(&w->set, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	sched_params_default(&lp, SCHED_DISC_CAKE);
	lp.rate = 100 * MBIT / 8;
	lp.diffserv = SCHED_BESTEFFORT;
	for (int d = 0; d < SUB_DIRS; d++) {
		w->link[d] = sched_create(&lp, err, sizeof(err));
		assert_non_null(w->link[d]);
	}
	sched_params_default(&sp, SCHED_DISC_CAKE);
	sp.rate = PLAN / 8;
	sp.diffserv = SCHED_BESTEFFORT;
	sub_pool_cake_size(&sp);
	memset(&cfg, 0, sizeof(cfg));
	cfg.set = &w->set;
	cfg.params[SUB_DOWN] = cfg.params[SUB_UP] = sp;
	cfg.active = 16;
	cfg.unknown_slots = slots;
	cfg.link[SUB_DOWN] = w->link[SUB_DOWN];
	cfg.link[SUB_UP] = w->link[SUB_UP];
	w->ss = sub_sched_create(&cfg, err, sizeof(err));
	if (w->ss == NULL)
		fail_msg("%s", err);
	for (i = 0; i < NSRC; i++) {
		struct src *s = &w->src[i];

		s->addr = i < NSUB ? (100u << 24) | (64u << 16) | (1u + i)
				   : unknown_addr(i - NSUB, 0);
		s->sub = i < NSUB ? i : SUB_NONE;
		s->rate = (i < NSUB ? PLAN : UPLAN) * 2 / 8;
		s->s = sim_src_udp(sim_ip(9, 0, (uint8_t)(1 + i)), s->addr, (uint16_t)(4000 + i),
				   s->rate, FRAME);
		s->next = i * 1000ull;
		s->on = true;
	}
	return w;
}

static void
world_free(struct world *w)
{
	struct sh_pkt_list rest;

	/* Flushed, every unknown slot goes back. */
	sh_pkt_list_init(&rest);
	sub_sched_flush(w->ss, SUB_DOWN, &rest);
	sub_sched_flush(w->ss, SUB_UP, &rest);
	assert_int_equal(sub_sched_unknown_used(w->ss), 0);
	sim_sub_world_free(w->ss, w->link, &w->set);
	sim_pool_destroy(&w->pool);
	free(w);
}

static void
take_drops(struct world *w, struct sh_pkt_list *dropped)
{
	struct sh_pkt *d;

	while ((d = sh_pkt_list_pop(dropped)) != NULL) {
		struct sim_pkt *p = (struct sim_pkt *)d;

		assert_true(d->drop_reason == SHAPER_DROP_AQM ||
			    d->drop_reason == SHAPER_DROP_OVERFLOW);
		w->dropped++;
		sim_pool_give(&w->pool, p);
	}
}

static void
emit(struct world *w, uint32_t i)
{
	struct src *s = &w->src[i];
	struct sh_pkt_list dropped;
	struct sim_pkt *p;

	p = sim_pool_take(&w->pool);
	p->src = i;
	sh_pkt_list_init(&dropped);
	sim_sub_enqueue(w->ss, &w->key, &s->s, s->sub, p, FRAME, w->now, &dropped);
	take_drops(w, &dropped);
	w->sent++;
	s->next += (uint64_t)FRAME * SIM_NS / s->rate;
}

static void
run(struct world *w, uint64_t until)
{
	struct sh_pkt *out[32];

	while (w->now < until) {
		uint64_t t_src = UINT64_MAX, t_deq = sub_sched_next_time(w->ss, SUB_DOWN, w->now);
		uint32_t first = NSRC;
		struct sh_pkt_list dropped;
		unsigned int n;

		for (uint32_t i = 0; i < NSRC; i++)
			if (w->src[i].on && w->src[i].next < t_src) {
				t_src = w->src[i].next;
				first = i;
			}
		if (t_src >= until && t_deq >= until) {
			w->now = until;
			break;
		}
		if (t_src < t_deq) {
			w->now = t_src > w->now ? t_src : w->now;
			emit(w, first);
			continue;
		}
		w->now = t_deq;
		sh_pkt_list_init(&dropped);
		n = sub_sched_dequeue_burst(w->ss, SUB_DOWN, out, 32, w->now, &dropped);
		take_drops(w, &dropped);
		for (unsigned int k = 0; k < n; k++) {
			struct sim_pkt *p = (struct sim_pkt *)out[k];

			if (w->now >= w->win_from)
				w->src[p->src].win_bytes += p->pkt.len;
			w->delivered++;
			sim_pool_give(&w->pool, p);
		}
	}
}

static void
check_accounting(const struct world *w)
{
	assert_int_equal(w->sent, w->delivered + w->dropped + sim_pool_held(&w->pool));
	assert_int_equal(sub_sched_backlog_pkts(w->ss, SUB_DOWN), sim_pool_held(&w->pool));
}

/* Measure from now for window ns: each source's Mbit/s delivered. */
static void
measure(struct world *w, uint64_t settle, uint64_t window, double *mbit)
{
	run(w, w->now + settle);
	w->win_from = w->now;
	for (uint32_t i = 0; i < NSRC; i++)
		w->src[i].win_bytes = 0;
	run(w, w->now + window);
	for (uint32_t i = 0; i < NSRC; i++)
		mbit[i] = (double)w->src[i].win_bytes * 8 * SIM_NS / (double)window / 1e6;
}

/* The unknown slot holding LAN address addr (SUB_NONE if none), through the public view. */
static uint32_t
slot_of(const struct world *w, uint32_t addr)
{
	for (uint32_t k = 0; k < sub_sched_unknown_slots(w->ss); k++) {
		struct sub_prefix key;
		uint32_t a;

		if (!sub_sched_unknown_key(w->ss, k, &key))
			continue;
		a = (uint32_t)key.addr[0] << 24 | (uint32_t)key.addr[1] << 16 |
		    (uint32_t)key.addr[2] << 8 | key.addr[3];
		assert_int_equal(key.family, 4);
		assert_int_equal(key.len, 32);
		if (a == addr)
			return k;
	}
	return SUB_NONE;
}

static void
test_each_its_plan(void **state)
{
	struct world *w = world_new(8);
	struct sub_sched_stats st;
	double mbit[NSRC];

	(void)state;
	measure(w, 500000000ull, 2000000000ull, mbit);
	for (uint32_t i = 0; i < NSRC; i++) {
		double want = (i < NSUB ? PLAN : UPLAN) / 1e6;

		print_message("  source %u: %.3f Mbit/s (plan %.1f)\n", i, mbit[i], want);
		assert_true(mbit[i] > want * 0.99 && mbit[i] < want * 1.01);
	}
	assert_int_equal(sub_sched_unknown_used(w->ss), NUNK);
	for (uint32_t k = 0; k < NUNK; k++) {
		struct sub_counters c;
		uint32_t slot = slot_of(w, unknown_addr(k, 0));

		assert_int_not_equal(slot, SUB_NONE);
		sub_sched_counters(w->ss, NSUB + 1 + slot, SUB_DOWN, &c);
		assert_true(c.active);
		assert_int_equal(c.rate * 8, UPLAN);
		assert_true(c.sent_packets > 0);
	}
	sub_sched_get_stats(w->ss, SUB_DOWN, &st);
	assert_int_equal(st.unknown_full, 0);
	assert_true(st.unknown > 0);
	check_accounting(w);
	world_free(w);
}

static void
test_fewer_slots(void **state)
{
	struct world *w = world_new(2);
	struct sub_sched_stats st;
	double mbit[NSRC];
	uint32_t planned = 0;

	(void)state;
	measure(w, 500000000ull, 2000000000ull, mbit);
	assert_int_equal(sub_sched_unknown_used(w->ss), 2);
	for (uint32_t k = 0; k < NUNK; k++) {
		uint32_t i = NSUB + k;

		print_message("  unknown %u: %.3f Mbit/s, slot %s\n", k, mbit[i],
			      slot_of(w, unknown_addr(k, 0)) != SUB_NONE ? "yes" : "no");
		if (slot_of(w, unknown_addr(k, 0)) != SUB_NONE) {
			planned++;
			assert_true(mbit[i] > UPLAN / 1e6 * 0.99 && mbit[i] < UPLAN / 1e6 * 1.01);
		} else {
			/* The link's own CAKE, which has room: all it sends. */
			assert_true(mbit[i] > UPLAN * 2 / 1e6 * 0.99);
		}
	}
	assert_int_equal(planned, 2);
	sub_sched_get_stats(w->ss, SUB_DOWN, &st);
	assert_true(st.unknown_full > 0);
	check_accounting(w);
	world_free(w);
}

static void
test_slots_come_back(void **state)
{
	struct world *w = world_new(4);
	struct sub_counters c;
	double mbit[NSRC];

	(void)state;
	run(w, 300000000ull);
	assert_int_equal(sub_sched_unknown_used(w->ss), NUNK);
	/* The unknown senders stop; their CAKEs drain and go back, and the slots with them. */
	for (uint32_t k = 0; k < NUNK; k++)
		w->src[NSUB + k].on = false;
	run(w, w->now + 2000000000ull);
	assert_int_equal(sub_sched_unknown_used(w->ss), 0);
	for (uint32_t k = 0; k < NUNK; k++)
		assert_int_equal(slot_of(w, unknown_addr(k, 0)), SUB_NONE);
	/* Four new addresses take the same four slots, from zero. */
	for (uint32_t k = 0; k < NUNK; k++) {
		struct src *s = &w->src[NSUB + k];

		s->addr = unknown_addr(k, 1);
		s->s = sim_src_udp(sim_ip(9, 0, 50), s->addr, (uint16_t)(5000 + k), s->rate, FRAME);
		s->on = true;
		s->next = w->now + k * 1000ull;
	}
	run(w, w->now + 1000000ull);
	assert_int_equal(sub_sched_unknown_used(w->ss), NUNK);
	for (uint32_t k = 0; k < NUNK; k++) {
		uint32_t slot = slot_of(w, unknown_addr(k, 1));

		assert_int_not_equal(slot, SUB_NONE);
		sub_sched_counters(w->ss, NSUB + 1 + slot, SUB_DOWN, &c);
		/* 1 ms at 10 Mbit/s offered: one or two frames, not the last address's seconds. */
		assert_true(c.packets >= 1 && c.packets <= 3);
	}
	/* Its arrival estimate, from its own bytes: at most what it offers (10 Mbit/s). */
	run(w, w->now + 2 * SUB_SCHED_TICK_NS);
	for (uint32_t k = 0; k < NUNK; k++) {
		sub_sched_counters(w->ss, NSUB + 1 + slot_of(w, unknown_addr(k, 1)), SUB_DOWN, &c);
		assert_true(c.arrival_bps > 0 && c.arrival_bps <= 2 * UPLAN);
	}
	measure(w, 300000000ull, 1000000000ull, mbit);
	for (uint32_t k = 0; k < NUNK; k++)
		assert_true(mbit[NSUB + k] > UPLAN / 1e6 * 0.99 &&
			    mbit[NSUB + k] < UPLAN / 1e6 * 1.01);
	check_accounting(w);
	world_free(w);
}

static void
test_change_to_link(void **state)
{
	struct world *w = world_new(8);
	struct sub_sched_change *c;
	struct sub_set nw;
	struct sub_sched_stats st0, st1;
	char err[256];

	(void)state;
	run(w, 300000000ull);
	assert_int_equal(sub_sched_unknown_used(w->ss), NUNK);
	assert_int_equal(sub_set_copy(&nw, &w->set), 0);
	nw.unknown = SUB_UNKNOWN_LINK;
	c = sub_sched_change_build(w->ss, &nw, NULL, 0, NULL, NULL, err, sizeof(err));
	if (c == NULL)
		fail_msg("%s", err);
	sub_sched_change_apply(w->ss, c);
	sub_sched_change_free(c);
	sub_sched_get_stats(w->ss, SUB_DOWN, &st0);
	/*
	 * From now on every unknown address's packets go to the link's CAKE;
	 * what the slots hold drains at their plan, then they go back.
	 */
	run(w, w->now + 2000000000ull);
	assert_int_equal(sub_sched_unknown_used(w->ss), 0);
	sub_sched_get_stats(w->ss, SUB_DOWN, &st1);
	assert_true(st1.unknown > st0.unknown);
	assert_int_equal(st1.taken, st0.taken); /* no CAKE for an unknown address since */
	assert_int_equal(st1.unknown_full, 0);
	{
		double mbit[NSRC];

		/* The link's CAKE has room: each sends all it offers. */
		measure(w, 0, 1000000000ull, mbit);
		for (uint32_t k = 0; k < NUNK; k++)
			assert_true(mbit[NSUB + k] > UPLAN * 2 / 1e6 * 0.99);
	}
	check_accounting(w);
	sub_set_free(&nw);
	world_free(w);
}

/* A scheduler started with unknown addresses on the link cannot take a plan live. */
static void
test_plan_needs_restart(void **state)
{
	struct world *w = world_new(8);
	struct sub_sched_change *c;
	struct sub_set set, nw;
	struct sub_sched_config cfg = { 0 };
	struct sched_params sp;
	struct sub_sched *ss;
	char err[256];

	(void)state;
	assert_int_equal(sub_set_copy(&set, &w->set), 0);
	set.unknown = SUB_UNKNOWN_LINK;
	sched_params_default(&sp, SCHED_DISC_CAKE);
	sp.rate = PLAN / 8;
	sub_pool_cake_size(&sp);
	cfg.set = &set;
	cfg.params[SUB_DOWN] = cfg.params[SUB_UP] = sp;
	cfg.active = 4;
	cfg.link[SUB_DOWN] = w->link[SUB_DOWN];
	cfg.link[SUB_UP] = w->link[SUB_UP];
	ss = sub_sched_create(&cfg, err, sizeof(err));
	assert_non_null(ss);
	assert_int_equal(sub_sched_unknown_slots(ss), 0);
	assert_int_equal(sub_set_copy(&nw, &w->set), 0);
	c = sub_sched_change_build(ss, &nw, NULL, 0, NULL, NULL, err, sizeof(err));
	assert_null(c);
	assert_non_null(strstr(err, "restart"));
	sub_sched_free(ss);
	sub_set_free(&nw);
	sub_set_free(&set);
	world_free(w);
}

static void
test_grow_live(void **state)
{
	struct world *w = world_new(8);
	struct sub_counters before[NSUB + 1 + 8], after;
	struct sub_sched_stats st0, st1;
	struct sub_sched_change *c;
	struct sub_set nw;
	uint32_t added, slot, p, unk_before[NUNK];
	uint64_t queued;
	double mbit[NSRC];
	char err[256];

	(void)state;
	run(w, 500000000ull);
	sub_sched_get_stats(w->ss, SUB_DOWN, &st0);
	memset(before, 0, sizeof(before)); /* compared whole, padding too */
	for (uint32_t i = 0; i < NSUB + 1 + 8; i++)
		sub_sched_counters(w->ss, i, SUB_DOWN, &before[i]);
	for (uint32_t k = 0; k < NUNK; k++)
		unk_before[k] = slot_of(w, unknown_addr(k, 0));
	queued = sub_sched_backlog_pkts(w->ss, SUB_DOWN);
	/* More slots (a quarter, at least one), and in the first new one a subscriber that
	 * owns unknown address 0's address at 3 Mbit/s. */
	assert_int_equal(sub_set_copy(&nw, &w->set), 0);
	assert_int_equal(sub_set_grow_slots(&nw, 1, &added), 0);
	assert_true(added >= 1);
	slot = w->set.nsubs;
	snprintf(nw.subs[slot].id, SUB_ID_LEN, "grown");
	nw.subs[slot].plan[SUB_DOWN].max = nw.subs[slot].plan[SUB_UP].max = 3 * MBIT;
	nw.subs[slot].nprefixes = 1;
	assert_int_equal(sub_set_add_prefix(&nw, &p), 0);
	nw.prefixes[p].family = 4;
	nw.prefixes[p].len = 32;
	nw.prefixes[p].addr[0] = 192;
	nw.prefixes[p].addr[1] = 168;
	nw.prefixes[p].addr[3] = 10;
	nw.prefixes[p].sub = slot;
	if (sub_set_validate(&nw, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	c = sub_sched_change_build(w->ss, &nw, &slot, 1, NULL, NULL, err, sizeof(err));
	if (c == NULL)
		fail_msg("%s", err);
	sub_sched_change_apply(w->ss, c);
	sub_sched_change_free(c); /* the old arrays */
	assert_int_equal(sub_sched_nsubs(w->ss), w->set.nsubs + added);
	/* Nothing moved but the indices past the old slots: queues, counters, slots. */
	assert_int_equal(sub_sched_backlog_pkts(w->ss, SUB_DOWN), queued);
	for (uint32_t i = 0; i < NSUB + 1 + 8; i++) {
		uint32_t j = i < NSUB ? i : i + added;

		memset(&after, 0, sizeof(after));
		sub_sched_counters(w->ss, j, SUB_DOWN, &after);
		assert_memory_equal(&after, &before[i], sizeof(after));
	}
	for (uint32_t k = 0; k < NUNK; k++)
		assert_int_equal(slot_of(w, unknown_addr(k, 0)), unk_before[k]);
	sub_set_free(&w->set);
	w->set = nw; /* the set the world names subscribers from */
	/* Source NSUB (unknown address 0) is the new subscriber's now. */
	w->src[NSUB].sub = slot;
	/* The next allocations see each one's arrivals since the last, not since its start. */
	run(w, w->now + 2 * SUB_SCHED_TICK_NS);
	for (uint32_t i = 0; i < NSUB; i++) {
		sub_sched_counters(w->ss, i, SUB_DOWN, &after);
		/* Each offers twice its plan. */
		assert_true(after.arrival_bps > 0 && after.arrival_bps <= 3 * PLAN);
	}
	measure(w, 1000000000ull, 2000000000ull, mbit);
	for (uint32_t i = 0; i < NSRC; i++) {
		double want = i < NSUB ? PLAN / 1e6 : i == NSUB ? 3.0 : UPLAN / 1e6;

		print_message("  source %u: %.3f Mbit/s (plan %.1f)\n", i, mbit[i], want);
		assert_true(mbit[i] > want * 0.99 && mbit[i] < want * 1.01);
	}
	sub_sched_counters(w->ss, slot, SUB_DOWN, &after);
	assert_true(after.active && after.sent_packets > 0);
	/* Its old unknown slot drained and went back. */
	assert_int_equal(slot_of(w, unknown_addr(0, 0)), SUB_NONE);
	sub_sched_get_stats(w->ss, SUB_DOWN, &st1);
	assert_true(st1.allocations > st0.allocations);
	check_accounting(w);
	world_free(w);
}

/* Apply a change to set copied from w's, with more slots than w has if grow. */
static void
change_to(struct world *w, uint32_t grow)
{
	struct sub_sched_change *c;
	struct sub_set nw;
	uint32_t added = 0;
	char err[256];

	assert_int_equal(sub_set_copy(&nw, &w->set), 0);
	if (grow != 0)
		assert_int_equal(sub_set_grow_slots(&nw, grow, &added), 0);
	c = sub_sched_change_build(w->ss, &nw, NULL, 0, NULL, NULL, err, sizeof(err));
	if (c == NULL)
		fail_msg("%s", err);
	sub_sched_change_apply(w->ss, c);
	sub_sched_change_free(c);
	sub_set_free(&w->set);
	w->set = nw;
}

/*
 * Growth alone changes nothing a packet sees: two worlds run the same
 * traffic, one grows its slots (37 more) mid-run and the other takes the
 * same change at its own size; every frame is delivered or dropped alike.
 */
static void
test_grow_invisible(void **state)
{
	struct world *a = world_new(8), *b = world_new(8);

	(void)state;
	run(a, 500000000ull);
	run(b, 500000000ull);
	change_to(a, 0);
	change_to(b, 37);
	assert_int_equal(sub_sched_nsubs(b->ss), NSUB + 37);
	run(a, 1500000000ull);
	run(b, 1500000000ull);
	assert_int_equal(a->sent, b->sent);
	assert_int_equal(a->delivered, b->delivered);
	assert_int_equal(a->dropped, b->dropped);
	for (uint32_t i = 0; i < NSRC; i++)
		assert_int_equal(a->src[i].win_bytes, b->src[i].win_bytes);
	check_accounting(b);
	world_free(a);
	world_free(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_its_plan),      cmocka_unit_test(test_fewer_slots),
		cmocka_unit_test(test_slots_come_back),    cmocka_unit_test(test_change_to_link),
		cmocka_unit_test(test_plan_needs_restart), cmocka_unit_test(test_grow_live),
		cmocka_unit_test(test_grow_invisible),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
