/*
 * The per-subscriber scheduler (src/subscriber/sub_sched.c) fed real
 * frames in simulated time: each frame is classified (classify_pkt), its
 * LAN-side address looked up to a subscriber, queued in that subscriber's
 * CAKE from the pool, and sent when due within the link's rate.
 *
 * Seven subscribers (plans 5..20 Mbit/s, six under one access point, one
 * under the link), each with two devices of two UDP flows each offering
 * twice its plan, and an unknown address sending 3 Mbit/s through the
 * link's own CAKE:
 * - room: the access point and the link have room; every subscriber gets
 *   its plan within 1 %, its two devices half each, the unknown address
 *   what it sends;
 * - full: the access point at 40 Mbit/s is 1.75x oversubscribed; each of
 *   its subscribers gets its max-min share (5, 7, 7, 7, 7, 7) within 1 %;
 * - quiet: after the subscribers stop, their CAKEs go back to the pool
 *   once drained and quiet; a small pool (4 for 7) sends the rest through
 *   the link's CAKE and nothing is lost unaccounted.
 * - sparse: two sparse flows in a subscriber otherwise idle, alone and
 *   beside a full access point, leave at its plan's pace (one frame time),
 *   not at the small share that what they send earns.
 * Every frame is accounted: sent = delivered + dropped (by reason) + queued.
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

#include "shaper/classify.h"
#include "shaper/sched.h"
#include "shaper/subscriber.h"
#include "shaper/subscriber_pool.h"
#include "shaper/subscriber_sched.h"
#include "sim.h"

#define MBIT  1000000ull
#define NSUB  7u
#define NDEV  2u /* devices per subscriber */
#define NFLOW 2u /* flows per device */
#define NSRC  (NSUB * NDEV * NFLOW + 1)
#define NPKTS 65536u
#define FRAME 1514u

static const uint64_t plan_mbit[NSUB] = { 5, 10, 15, 20, 8, 12, 10 };
static uint32_t spare_slots;                 /* empty slots after the subscribers (live changes) */
static uint64_t sub_lag_ns = SCHED_LAG_AUTO; /* the subscribers' CAKEs' lag limit */

struct src {
	struct sim_src s;
	uint32_t sub; /* expected subscriber, SUB_NONE for the unknown address */
	uint32_t dev;
	uint64_t rate; /* bytes/s */
	uint64_t next;
	bool on;
	uint64_t sent, delivered, win_bytes;
	uint64_t max_wait; /* the longest one of its frames delivered in the window waited, ns */
	uint64_t drops[SHAPER_DROP_MAX];
};

struct world {
	struct sub_set set;
	struct sub_sched *ss;
	struct sched *link[SUB_DIRS];
	struct classify_key key;
	struct src src[NSRC];
	struct sim_pool pool;
	uint64_t now, win_from;
	uint64_t sent, delivered, dropped[SHAPER_DROP_MAX];
	uint64_t max_backlog; /* the most the schedulers held together after an enqueue */
};

static uint32_t
lan_addr(uint32_t sub, uint32_t dev)
{
	return (100u << 24) | (64u << 16) | (sub << 8) | (1u + dev); /* 100.64.sub.1+dev */
}

static void
build_set(struct world *w, uint64_t ap_mbit, uint32_t pool)
{
	struct sched_params sp, lp;
	struct sub_sched_config cfg;
	uint32_t ap, i;
	char err[256];

	sub_set_init(&w->set);
	w->set.nodes[SUB_ROOT].capacity[SUB_DOWN] = 100 * MBIT;
	w->set.nodes[SUB_ROOT].capacity[SUB_UP] = 100 * MBIT;
	assert_int_equal(sub_set_add_node(&w->set, &ap), 0);
	snprintf(w->set.nodes[ap].name, SUB_ID_LEN, "AP");
	w->set.nodes[ap].parent = SUB_ROOT;
	w->set.nodes[ap].depth = 1;
	w->set.nodes[ap].capacity[SUB_DOWN] = ap_mbit * MBIT;
	w->set.nodes[ap].capacity[SUB_UP] = ap_mbit * MBIT;
	for (i = 0; i < NSUB; i++) {
		uint32_t s, p;

		assert_int_equal(sub_set_add_sub(&w->set, &s), 0);
		snprintf(w->set.subs[s].id, SUB_ID_LEN, "c%u", i);
		w->set.subs[s].node = i < 6 ? ap : SUB_ROOT;
		w->set.subs[s].plan[SUB_DOWN].max = plan_mbit[i] * MBIT;
		w->set.subs[s].plan[SUB_UP].max = plan_mbit[i] * MBIT;
		w->set.subs[s].nprefixes = 1;
		w->set.nodes[w->set.subs[s].node].nsubs++;
		assert_int_equal(sub_set_add_prefix(&w->set, &p), 0);
		/* 100.64.i.0/29: both devices */
		w->set.prefixes[p].family = 4;
		w->set.prefixes[p].len = 29;
		w->set.prefixes[p].addr[0] = 100;
		w->set.prefixes[p].addr[1] = 64;
		w->set.prefixes[p].addr[2] = (uint8_t)i;
		w->set.prefixes[p].sub = s;
	}
	for (i = 0; i < spare_slots; i++) {
		uint32_t s;

		assert_int_equal(sub_set_add_sub(&w->set, &s), 0);
		sub_slot_clear(&w->set.subs[s]);
	}
	if (sub_set_validate(&w->set, err, sizeof(err)) != 0)
		fail_msg("%s", err);

	sched_params_default(&lp, SCHED_DISC_CAKE);
	lp.rate = 100 * MBIT / 8;
	lp.diffserv = SCHED_BESTEFFORT;
	lp.isolation = SCHED_DUAL_DSTHOST;
	for (int d = 0; d < SUB_DIRS; d++) {
		w->link[d] = sched_create(&lp, err, sizeof(err));
		assert_non_null(w->link[d]);
	}
	sched_params_default(&sp, SCHED_DISC_CAKE);
	sp.rate = 20 * MBIT / 8;
	sp.diffserv = SCHED_DIFFSERV4;
	sp.isolation = SCHED_DUAL_DSTHOST;
	sp.lag_limit_ns = sub_lag_ns;
	sub_pool_cake_size(&sp);
	memset(&cfg, 0, sizeof(cfg));
	cfg.set = &w->set;
	cfg.params[SUB_DOWN] = cfg.params[SUB_UP] = sp;
	cfg.active = pool;
	cfg.link[SUB_DOWN] = w->link[SUB_DOWN];
	cfg.link[SUB_UP] = w->link[SUB_UP];
	w->ss = sub_sched_create(&cfg, err, sizeof(err));
	if (w->ss == NULL)
		fail_msg("%s", err);
}

static struct world *
world_new(uint64_t ap_mbit, uint32_t pool)
{
	struct world *w = calloc(1, sizeof(*w));
	uint32_t i, n = 0;

	sim_pool_init(&w->pool, NPKTS);
	classify_key_init(&w->key, 42);
	build_set(w, ap_mbit, pool);
	/* Downstream: servers on the WAN side send to the subscribers' devices. */
	for (i = 0; i < NSUB; i++)
		for (uint32_t d = 0; d < NDEV; d++)
			for (uint32_t f = 0; f < NFLOW; f++, n++) {
				struct src *s = &w->src[n];

				s->rate = plan_mbit[i] * MBIT / 8 * 2 / (NDEV * NFLOW);
				s->s = sim_src_udp(sim_ip(9, 0, (uint8_t)(1 + f)), lan_addr(i, d),
						   (uint16_t)(4000 + n), s->rate, FRAME);
				s->sub = i;
				s->dev = d;
				s->next = n * 1000ull; /* not all at once */
			}
	w->src[n].rate = 3 * MBIT / 8;
	w->src[n].s = sim_src_udp(sim_ip(9, 0, 9), (192u << 24) | (2u << 8) | 1u, 5000,
				  w->src[n].rate, FRAME);
	w->src[n].sub = SUB_NONE;
	return w;
}

static void
world_free(struct world *w)
{
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
		uint32_t r = d->drop_reason;

		assert_true(r < SHAPER_DROP_MAX);
		w->dropped[r]++;
		w->src[p->src].drops[r]++;
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
	p->seq = (uint32_t)s->sent;
	sh_pkt_list_init(&dropped);
	sim_sub_enqueue(w->ss, &w->key, &s->s, s->sub, p, FRAME, w->now, &dropped);
	take_drops(w, &dropped);
	if (sub_sched_backlog_pkts(w->ss, SUB_DOWN) > w->max_backlog)
		w->max_backlog = sub_sched_backlog_pkts(w->ss, SUB_DOWN);
	s->sent++;
	w->sent++;
	s->next += (uint64_t)FRAME * SIM_NS / s->rate;
}

static void
run(struct world *w, uint64_t until)
{
	struct sh_pkt *out[32];
	uint64_t guard = 0;

	while (w->now < until) {
		uint64_t t_src = UINT64_MAX, t_deq = sub_sched_next_time(w->ss, SUB_DOWN, w->now);
		uint32_t i, first = NSRC;

		for (i = 0; i < NSRC; i++)
			if (w->src[i].on && w->src[i].next < t_src) {
				t_src = w->src[i].next;
				first = i;
			}
		assert_true(++guard < 200000000ull);
		if (t_src >= until && t_deq >= until) {
			w->now = until; /* nothing to do before the end */
			break;
		}
		if (t_src < t_deq) {
			w->now = t_src > w->now ? t_src : w->now;
			emit(w, first);
			continue;
		}
		w->now = t_deq;
		{
			struct sh_pkt_list dropped;
			unsigned int n;

			sh_pkt_list_init(&dropped);
			n = sub_sched_dequeue_burst(w->ss, SUB_DOWN, out, 32, w->now, &dropped);
			take_drops(w, &dropped);
			for (unsigned int k = 0; k < n; k++) {
				struct sim_pkt *p = (struct sim_pkt *)out[k];
				struct src *s = &w->src[p->src];

				s->delivered++;
				if (w->now >= w->win_from) {
					s->win_bytes += p->pkt.len;
					if (w->now - p->born > s->max_wait)
						s->max_wait = w->now - p->born;
				}
				w->delivered++;
				sim_pool_give(&w->pool, p);
			}
		}
	}
}

/* sent = delivered + dropped + queued (the queued ones are what the pool is missing). */
static void
check_accounting(const struct world *w)
{
	uint64_t drops = 0;

	for (int r = 0; r < SHAPER_DROP_MAX; r++)
		drops += w->dropped[r];
	assert_int_equal(w->sent, w->delivered + drops + sim_pool_held(&w->pool));
	assert_int_equal(sub_sched_backlog_pkts(w->ss, SUB_DOWN), sim_pool_held(&w->pool));
	/* Only the schedulers' own reasons: nothing vanished unnamed. */
	assert_int_equal(drops, w->dropped[SHAPER_DROP_AQM] + w->dropped[SHAPER_DROP_OVERFLOW]);
}

static void
set_on(struct world *w, bool on)
{
	for (uint32_t i = 0; i < NSRC; i++) {
		w->src[i].on = on;
		if (on && w->src[i].next < w->now)
			w->src[i].next = w->now + i * 1000ull;
	}
}

/* Delivered Mbit/s in the window, per subscriber (sum of its sources) and per device. */
static double
got_mbit(const struct world *w, uint32_t sub, int dev, uint64_t window)
{
	uint64_t b = 0;

	for (uint32_t i = 0; i < NSRC; i++)
		if (w->src[i].sub == sub && (dev < 0 || w->src[i].dev == (uint32_t)dev))
			b += w->src[i].win_bytes;
	return (double)b * 8 * SIM_NS / (double)window / 1e6;
}

static void
reset_window(struct world *w, uint64_t from)
{
	w->win_from = from;
	for (uint32_t i = 0; i < NSRC; i++)
		w->src[i].win_bytes = w->src[i].max_wait = 0;
}

static void
test_room(void **state)
{
	struct world *w = world_new(90, 8);
	struct sub_sched_stats st;
	double worst = 0, dev_worst = 0, unk;

	(void)state;
	set_on(w, true);
	reset_window(w, 2 * SIM_NS);
	run(w, 4 * SIM_NS);
	for (uint32_t i = 0; i < NSUB; i++) {
		double got = got_mbit(w, i, -1, 2 * SIM_NS), want = (double)plan_mbit[i];
		double d0 = got_mbit(w, i, 0, 2 * SIM_NS), d1 = got_mbit(w, i, 1, 2 * SIM_NS);

		worst = fmax(worst, fabs(got - want) / want);
		dev_worst = fmax(dev_worst, fabs(d0 - d1) / (d0 + d1));
		printf("# c%u: plan %.0f Mbit/s, got %.4f (devices %.4f / %.4f)\n", i, want, got,
		       d0, d1);
	}
	unk = got_mbit(w, SUB_NONE, -1, 2 * SIM_NS);
	sub_sched_get_stats(w->ss, SUB_DOWN, &st);
	SIM_FIGURE("per-subscriber CAKEs, AP and link with room: every subscriber within %.3f %% "
		   "of its plan, its two devices within %.2f %% of half each; the unknown address "
		   "%.3f of 3 Mbit/s; %llu allocations, %llu CAKEs taken, %llu link waits",
		   worst * 100, dev_worst * 100, unk / 3, (unsigned long long)st.allocations,
		   (unsigned long long)st.taken, (unsigned long long)st.link_waits);
	assert_true(worst < 0.01);
	assert_true(dev_worst < 0.02);
	assert_true(fabs(unk / 3 - 1) < 0.01);
	assert_int_equal(st.taken, NSUB);
	check_accounting(w);
	world_free(w);
}

/*
 * The worker away for 50 ms with every subscriber backlogged: each CAKE
 * writes the lost time off (less its lag limit, one frame time at its
 * rate) instead of sending it later as a burst, and its record says how
 * much (lag_skipped_ns). What it delivered plus what it wrote off is its
 * plan's worth of the window.
 */
/*
 * The dequeue takes due subscribers off the heap several at a time (to load
 * their state together) but still serves the soonest due first: a
 * subscriber whose frames were due long before the others' goes again as
 * long as its next one is still the soonest. c3 (20 Mbit/s, one frame each
 * 605.6 us) queues three frames at 0; c0, c1 and c2 one each at 1.5 ms,
 * queued as one burst (sub_sched_enqueue_burst). From 1.5 ms on, c3's three
 * (due at 0, 0.61 and 1.21 ms) leave first.
 */
static void
test_dequeue_soonest_first(void **state)
{
	struct world *w;
	struct sh_pkt *burst[4], *out[32];
	uint32_t subs[4], order[6], n = 0;
	const uint32_t late[3] = { 0, 1, 2 };
	struct sh_pkt_list dropped;

	(void)state;
	sub_lag_ns = 100000000ull; /* 100 ms: no write-off: c3 is 1.5 ms behind by design */
	w = world_new(100, NSUB);
	sub_lag_ns = SCHED_LAG_AUTO;
	sh_pkt_list_init(&dropped);
	for (int k = 0; k < 3; k++) {
		struct src *s = &w->src[3 * NDEV * NFLOW];
		struct sim_pkt *p = sim_pool_take(&w->pool);

		p->src = 3 * NDEV * NFLOW;
		sim_sub_enqueue(w->ss, &w->key, &s->s, s->sub, p, FRAME, 0, &dropped);
	}
	w->now = 1500000; /* 1.5 ms */
	for (int k = 0; k < 3; k++) {
		uint32_t i = late[k] * NDEV * NFLOW;
		struct sim_pkt *p = sim_pool_take(&w->pool);

		p->src = i;
		p->born = w->now;
		sim_build(&w->src[i].s, p, FRAME);
		p->pkt.mem = SIM_MBUF_MEM;
		classify_pkt(&p->pkt, &w->key);
		subs[k] = sub_sched_classify(w->ss, SUB_DOWN, &p->pkt);
		assert_int_equal(subs[k], late[k]);
		burst[k] = &p->pkt;
	}
	sub_sched_enqueue_burst(w->ss, SUB_DOWN, subs, burst, 3, w->now, &dropped);
	assert_null(dropped.head);
	while (n < 6) {
		unsigned int got =
				sub_sched_dequeue_burst(w->ss, SUB_DOWN, out, 32, w->now, &dropped);

		assert_null(dropped.head);
		for (unsigned int k = 0; k < got; k++) {
			struct sim_pkt *p = (struct sim_pkt *)out[k];

			assert_true(n < 6);
			order[n++] = w->src[p->src].sub;
			sim_pool_give(&w->pool, p);
		}
		w->now = sub_sched_next_time(w->ss, SUB_DOWN, w->now) > w->now
					 ? sub_sched_next_time(w->ss, SUB_DOWN, w->now)
					 : w->now + 1;
		assert_true(w->now < 100000000ull);
	}
	for (int k = 0; k < 3; k++)
		assert_int_equal(order[k], 3);
	assert_int_equal(sub_sched_backlog_pkts(w->ss, SUB_DOWN), 0);
	world_free(w);
}

static void
test_stall_written_off(void **state)
{
	const uint64_t stall = 50 * SIM_NS / 1000, from = 2 * SIM_NS, to = 3 * SIM_NS;
	struct world *w = world_new(90, 8);
	struct sub_counters a[NSUB], b;
	double worst = 0, skip_lo = 1, skip_hi = 0;

	(void)state;
	set_on(w, true);
	run(w, from);
	for (uint32_t i = 0; i < NSUB; i++)
		sub_sched_counters(w->ss, i, SUB_DOWN, &a[i]);
	reset_window(w, from);
	run(w, from + SIM_NS / 10);
	w->now += stall; /* nothing runs: no dequeue, no arrival */
	run(w, to);
	for (uint32_t i = 0; i < NSUB; i++) {
		uint64_t frame_ns = (uint64_t)FRAME * 8 * SIM_NS / (plan_mbit[i] * MBIT);
		double skipped, got, owed;

		sub_sched_counters(w->ss, i, SUB_DOWN, &b);
		skipped = (double)(b.lag_skipped_ns - a[i].lag_skipped_ns);
		got = (double)(b.sent_bytes - a[i].sent_bytes) * 8;
		/* Its plan over the window less what it wrote off. */
		owed = (double)(plan_mbit[i] * MBIT) * ((double)(to - from) - skipped) / SIM_NS;
		worst = fmax(worst, fabs(got / owed - 1));
		skip_lo = fmin(skip_lo, skipped / (double)stall);
		skip_hi = fmax(skip_hi, skipped / (double)stall);
		printf("# c%u: wrote off %.3f ms of the %.0f ms away (lag limit %.3f ms), delivered "
		       "%.4f of its plan over the rest\n",
		       i, skipped / 1e6, (double)stall / 1e6,
		       (double)(frame_ns > 250000 ? frame_ns : 250000) / 1e6, got / owed);
		/*
		 * The lost time less its lag limit (one frame time, at least
		 * 250 us) and what the link's pacer kept it waiting after.
		 */
		assert_true(skipped <= (double)stall);
		assert_true(skipped >= 0.9 * (double)stall);
	}
	SIM_FIGURE("the worker away 50 ms, every subscriber backlogged: each wrote off %.3f-%.3f "
		   "of it, and delivered its plan over the rest of the window within %.3f %%",
		   skip_lo, skip_hi, worst * 100);
	assert_true(worst < 0.01);
	check_accounting(w);
	world_free(w);
}

static void
test_node_full(void **state)
{
	/* AP 40 Mbit/s for c0..c5 (5+10+15+20+8+12 = 70): max-min shares. */
	static const double share[NSUB] = { 5, 7, 7, 7, 7, 7, 10 };
	struct world *w = world_new(40, 8);
	double worst = 0, ap = 0;

	(void)state;
	set_on(w, true);
	reset_window(w, 2 * SIM_NS);
	run(w, 4 * SIM_NS);
	for (uint32_t i = 0; i < NSUB; i++) {
		double got = got_mbit(w, i, -1, 2 * SIM_NS);

		worst = fmax(worst, fabs(got - share[i]) / share[i]);
		if (i < 6)
			ap += got;
		printf("# c%u: share %.1f Mbit/s, got %.4f\n", i, share[i], got);
	}
	SIM_FIGURE("per-subscriber CAKEs, AP 40 Mbit/s for 70 of plans: every subscriber within "
		   "%.3f %% of its max-min share; the AP carries %.3f Mbit/s",
		   worst * 100, ap);
	assert_true(worst < 0.01);
	assert_true(ap <= 40 * 1.001);
	check_accounting(w);
	world_free(w);
}

/*
 * The link cut to 40 Mbit/s (as an operator's config change does): the
 * unknown address keeps its 3, c6 its 10, and the access point's six share
 * the other 27 equally (4.5 each, below every plan).
 */
static void
test_link_cut(void **state)
{
	static const double share[NSUB] = { 4.5, 4.5, 4.5, 4.5, 4.5, 4.5, 10 };
	struct world *w = world_new(90, 8);
	double worst = 0, total;

	(void)state;
	set_on(w, true);
	run(w, 1 * SIM_NS);
	sub_sched_set_link_rate(w->ss, SUB_DOWN, 40 * MBIT / 8, w->now);
	reset_window(w, 2 * SIM_NS);
	run(w, 4 * SIM_NS);
	total = got_mbit(w, SUB_NONE, -1, 2 * SIM_NS);
	for (uint32_t i = 0; i < NSUB; i++) {
		double got = got_mbit(w, i, -1, 2 * SIM_NS);

		worst = fmax(worst, fabs(got - share[i]) / share[i]);
		total += got;
		printf("# c%u: share %.1f Mbit/s, got %.4f\n", i, share[i], got);
	}
	SIM_FIGURE("per-subscriber CAKEs, link cut to 40 Mbit/s: every subscriber within %.3f %% "
		   "of its share; %.3f Mbit/s in all",
		   worst * 100, total);
	assert_true(worst < 0.01);
	assert_true(total <= 40 * 1.001);
	check_accounting(w);
	world_free(w);
}

/*
 * The link's rate rises after a frame left at a rate of a few hundred
 * bytes a second (a shard's floor while its part of a shared link was
 * idle): that frame's time at the old rate, about 4 s for 1,500 bytes,
 * is the pacer's wait. Rescaled with the rate, as a CAKE's own clocks are,
 * the link carries its new rate at once; left as it was, nothing left for
 * those seconds.
 */
static void
test_link_rate_rises(void **state)
{
	struct world *w = world_new(90, 8);
	double total;

	(void)state;
	sub_sched_set_link_rate(w->ss, SUB_DOWN, 366, w->now);
	set_on(w, true);
	run(w, SIM_NS / 10);
	assert_true(w->delivered >= 1); /* the first frame left: the pacer waits seconds */
	sub_sched_set_link_rate(w->ss, SUB_DOWN, 40 * MBIT / 8, w->now);
	reset_window(w, w->now);
	run(w, w->now + SIM_NS);
	total = got_mbit(w, SUB_NONE, -1, SIM_NS);
	for (uint32_t i = 0; i < NSUB; i++)
		total += got_mbit(w, i, -1, SIM_NS);
	SIM_FIGURE("the link's rate raised from 366 bytes/s to 40 Mbit/s after a frame left: "
		   "%.3f Mbit/s in the next second",
		   total);
	assert_true(total > 40 * 0.97 && total <= 40 * 1.001);
	check_accounting(w);
	world_free(w);
}

/*
 * A worker slower than the link: turns of 100 us, each taking in 32 frames
 * of 1514 bytes for 64 subscribers (plans of 1 Gbit/s, none binding) and
 * releasing up to as many, as the worker does; 3.9 Gbit/s against a
 * 10 Gbit/s link, so the link pacer's clock falls behind now a little more
 * every turn. Caught up by at most its lag limit, it lets every turn
 * release what came in; restarted at now whenever it fell that far behind,
 * it let one frame out every fourth turn or so and the backlog grew
 * without end, to drops.
 */
#define SLOW_SUBS  64u
#define SLOW_TURNS 5000u

static void
test_slow_worker_keeps_up(void **state)
{
	struct sched_params sp, lp;
	struct sub_sched_config cfg;
	struct sched *link[SUB_DIRS];
	struct sim_src src[SLOW_SUBS];
	struct classify_key key;
	struct sim_pool pool;
	struct sub_set set;
	struct sub_sched *ss;
	struct sub_sched_stats st;
	uint64_t now = SIM_NS, sent = 0, delivered = 0, drops = 0, most = 0;
	char err[256];

	(void)state;
	sim_pool_init(&pool, NPKTS);
	classify_key_init(&key, 7);
	sub_set_init(&set);
	set.nodes[SUB_ROOT].capacity[SUB_DOWN] = 10000 * MBIT;
	set.nodes[SUB_ROOT].capacity[SUB_UP] = 10000 * MBIT;
	for (uint32_t i = 0; i < SLOW_SUBS; i++) {
		uint32_t sub, p;

		assert_int_equal(sub_set_add_sub(&set, &sub), 0);
		snprintf(set.subs[sub].id, SUB_ID_LEN, "s%u", i);
		set.subs[sub].node = SUB_ROOT;
		set.subs[sub].plan[SUB_DOWN].max = 1000 * MBIT;
		set.subs[sub].plan[SUB_UP].max = 1000 * MBIT;
		set.subs[sub].nprefixes = 1;
		set.nodes[SUB_ROOT].nsubs++;
		assert_int_equal(sub_set_add_prefix(&set, &p), 0);
		set.prefixes[p].family = 4;
		set.prefixes[p].len = 32;
		set.prefixes[p].addr[0] = 100;
		set.prefixes[p].addr[1] = 64;
		set.prefixes[p].addr[2] = (uint8_t)i;
		set.prefixes[p].addr[3] = 1;
		set.prefixes[p].sub = sub;
		src[i] = sim_src_udp(sim_ip(9, 0, 1), lan_addr(i, 0), (uint16_t)(4000 + i),
				     1000 * MBIT / 8, FRAME);
	}
	if (sub_set_validate(&set, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	sched_params_default(&lp, SCHED_DISC_CAKE);
	lp.rate = 10000 * MBIT / 8;
	lp.diffserv = SCHED_BESTEFFORT;
	for (int d = 0; d < SUB_DIRS; d++)
		assert_non_null(link[d] = sched_create(&lp, err, sizeof(err)));
	sched_params_default(&sp, SCHED_DISC_CAKE);
	sp.rate = 1000 * MBIT / 8;
	sp.diffserv = SCHED_BESTEFFORT;
	sub_pool_cake_size(&sp);
	memset(&cfg, 0, sizeof(cfg));
	cfg.set = &set;
	cfg.params[SUB_DOWN] = cfg.params[SUB_UP] = sp;
	cfg.active = SLOW_SUBS;
	cfg.link[SUB_DOWN] = link[SUB_DOWN];
	cfg.link[SUB_UP] = link[SUB_UP];
	ss = sub_sched_create(&cfg, err, sizeof(err));
	if (ss == NULL)
		fail_msg("%s", err);

	for (uint32_t t = 0; t < SLOW_TURNS; t++, now += 100000) {
		struct sh_pkt *out[32];
		struct sh_pkt_list dropped;
		unsigned int n;

		sh_pkt_list_init(&dropped);
		for (uint32_t k = 0; k < 32; k++, sent++) {
			uint32_t i = (uint32_t)(sent % SLOW_SUBS);

			sim_sub_enqueue(ss, &key, &src[i], i, sim_pool_take(&pool), FRAME, now,
					&dropped);
		}
		n = sub_sched_dequeue_burst(ss, SUB_DOWN, out, 32, now, &dropped);
		for (unsigned int k = 0; k < n; k++)
			sim_pool_give(&pool, (struct sim_pkt *)out[k]);
		delivered += n;
		for (struct sh_pkt *d; (d = sh_pkt_list_pop(&dropped)) != NULL; drops++)
			sim_pool_give(&pool, (struct sim_pkt *)d);
		if (sub_sched_backlog_pkts(ss, SUB_DOWN) > most)
			most = sub_sched_backlog_pkts(ss, SUB_DOWN);
	}
	sub_sched_get_stats(ss, SUB_DOWN, &st);
	SIM_FIGURE("a worker at 3.9 of a 10 Gbit/s link, 32 frames in per 100 us turn: "
		   "%lu of %lu frames released, %lu dropped, at most %lu queued; the link pacer "
		   "pulled up to its lag limit %lu times",
		   (unsigned long)delivered, (unsigned long)sent, (unsigned long)drops,
		   (unsigned long)most, (unsigned long)st.link_lag_skips);
	assert_int_equal(drops, 0);
	assert_true(most <= 2 * 32);
	assert_int_equal(sent, delivered + sub_sched_backlog_pkts(ss, SUB_DOWN));
	/* The pacer did fall behind the link, and caught up its lag limit's worth. */
	assert_true(st.link_lag_skips > 0);

	/*
	 * Drained, then idle for 10 ms: idle time is no credit. Frames for
	 * every subscriber arriving at once leave one link time apart, the
	 * first at once, not as a burst of the lag limit's worth.
	 */
	for (unsigned int n = 1; n != 0; now += 100000) {
		struct sh_pkt *out[32];
		struct sh_pkt_list dropped;

		sh_pkt_list_init(&dropped);
		n = sub_sched_dequeue_burst(ss, SUB_DOWN, out, 32, now, &dropped);
		for (unsigned int k = 0; k < n; k++)
			sim_pool_give(&pool, (struct sim_pkt *)out[k]);
		assert_true(dropped.count == 0);
	}
	assert_int_equal(sub_sched_backlog_pkts(ss, SUB_DOWN), 0);
	now += 10000000;
	{
		struct sh_pkt *out[SLOW_SUBS];
		struct sh_pkt_list dropped;
		unsigned int n;

		sh_pkt_list_init(&dropped);
		for (uint32_t i = 0; i < SLOW_SUBS; i++)
			sim_sub_enqueue(ss, &key, &src[i], i, sim_pool_take(&pool), FRAME, now,
					&dropped);
		n = sub_sched_dequeue_burst(ss, SUB_DOWN, out, SLOW_SUBS, now, &dropped);
		printf("# after 10 ms idle, %u of %u frames arriving together left at once\n", n,
		       SLOW_SUBS);
		assert_int_equal(n, 1);
		sim_pool_give(&pool, (struct sim_pkt *)out[0]);
	}
	sim_sub_world_free(ss, link, &set);
	sim_pool_destroy(&pool);
}

/*
 * Every subscriber backlogged above its plan and no unknown traffic: each
 * tick's allocation has the last one's input and repeats its rates
 * without a look at any subscriber. Then the link is cut: the ceilings
 * stay (still backlogged), so only the link's rate tells the allocation
 * its input moved; a repeat that missed it would leave every rate as it
 * was, adding up to more than the link.
 */
static void
test_repeat_then_cut(void **state)
{
	struct world *w = world_new(90, 8);
	struct sub_sched_stats st;
	struct sub_counters c;
	uint64_t sum = 0;

	(void)state;
	set_on(w, true);
	w->src[NSRC - 1].on = false; /* the unknown address: its demand moves every tick */
	run(w, 1 * SIM_NS);
	sub_sched_get_stats(w->ss, SUB_DOWN, &st);
	printf("# %lu of %lu allocations repeated the last one's rates\n",
	       (unsigned long)st.repeats, (unsigned long)st.allocations);
	assert_true(st.repeats > st.allocations / 2);
	sub_sched_set_link_rate(w->ss, SUB_DOWN, 40 * MBIT / 8, w->now);
	run(w, 1 * SIM_NS + 2 * SUB_SCHED_TICK_NS);
	for (uint32_t i = 0; i < NSUB; i++) {
		sub_sched_counters(w->ss, i, SUB_DOWN, &c);
		assert_true(c.active);
		sum += c.rate * 8;
	}
	printf("# after the cut to 40 Mbit/s the subscribers' rates add up to %.3f Mbit/s\n",
	       (double)sum / 1e6);
	assert_true(sum <= 40 * MBIT && sum > 39 * MBIT);
	check_accounting(w);
	world_free(w);
}

/*
 * Each subscriber offers only 5 % above its max-min share of the full
 * access point (its plan for c0 and c6), so the AQM keeps its queue at a
 * packet or two. One that held a standing queue at a tick stays
 * backlogged while it still holds a packet: its demand does not go from
 * "all it can get" to its arrival rate and back with every packet, so the
 * allocation keeps its input and repeats its rates. (Backlogged only at
 * two packets or more, this repeated 2 of 200.)
 */
static void
test_hovering_queue(void **state)
{
	static const double share[NSUB] = { 5, 7, 7, 7, 7, 7, 10 };
	struct world *w = world_new(40, 8);
	struct sub_sched_stats st0, st;
	double worst = 0;

	(void)state;
	for (uint32_t i = 0; i < NSRC - 1; i++)
		w->src[i].rate =
				(uint64_t)(share[w->src[i].sub] * 1.05 * MBIT / 8 / (NDEV * NFLOW));
	set_on(w, true);
	w->src[NSRC - 1].on = false; /* the unknown address: its demand moves every tick */
	run(w, 1 * SIM_NS);
	sub_sched_get_stats(w->ss, SUB_DOWN, &st0);
	reset_window(w, 1 * SIM_NS);
	run(w, 2 * SIM_NS);
	sub_sched_get_stats(w->ss, SUB_DOWN, &st);
	for (uint32_t i = 0; i < NSUB; i++) {
		double got = got_mbit(w, i, -1, 1 * SIM_NS);

		worst = fmax(worst, fabs(got - share[i]) / share[i]);
		printf("# c%u: share %.1f Mbit/s, got %.4f\n", i, share[i], got);
	}
	SIM_FIGURE("per-subscriber CAKEs, each offering 1.05 x its share: %llu of %llu "
		   "allocations repeated the last one's rates, %llu rates written; every "
		   "subscriber within %.3f %% of its share",
		   (unsigned long long)(st.repeats - st0.repeats),
		   (unsigned long long)(st.allocations - st0.allocations),
		   (unsigned long long)(st.rate_changes - st0.rate_changes), worst * 100);
	assert_true(st.repeats - st0.repeats > (st.allocations - st0.allocations) * 9 / 10);
	assert_true(worst < 0.01);
	check_accounting(w);
	world_free(w);
}

/*
 * The dead band on rate changes: the link moves 0.05 % at a time, up 100
 * times then down 100 times, so the share of c1..c5 (the access point's
 * part of the link, less c0's plan, in five) drifts a little at every
 * allocation. A rate is rewritten only when the share leaves the band
 * around the rate written: about one step in four, not every one. And the
 * rate stays within the band below the share and never above it, however
 * far the share has drifted since the last write (a band measured from
 * the last share computed rather than from the rate written would let it
 * drift off 5 % here).
 */
static void
test_rate_band(void **state)
{
	struct world *w = world_new(90, 8);
	struct sub_sched_stats st0, st;
	uint64_t link = 40 * MBIT / 8, t = 1 * SIM_NS;
	double worst_above = 0, worst_below = 0;

	(void)state;
	set_on(w, true);
	w->src[NSRC - 1].on = false;
	sub_sched_set_link_rate(w->ss, SUB_DOWN, link, w->now);
	run(w, t);
	sub_sched_get_stats(w->ss, SUB_DOWN, &st0);
	for (int step = 0; step < 200; step++) {
		uint64_t ap;

		link = step < 100 ? link + link / 2000 : link - link / 2000;
		sub_sched_set_link_rate(w->ss, SUB_DOWN, link, w->now);
		t += 2 * SUB_SCHED_TICK_NS; /* an allocation with this link */
		run(w, t);
		/* c6 keeps its plan, 10; c0 its plan, 5; c1..c5 share the rest. */
		ap = link * 8 - 10 * MBIT - 5 * MBIT;
		for (uint32_t i = 1; i < 6; i++) {
			struct sub_counters c;
			double share = (double)(ap / 5) / 8, off;

			sub_sched_counters(w->ss, i, SUB_DOWN, &c);
			off = ((double)c.rate - share) / share;
			worst_above = fmax(worst_above, off);
			worst_below = fmax(worst_below, -off);
		}
	}
	sub_sched_get_stats(w->ss, SUB_DOWN, &st);
	SIM_FIGURE("per-subscriber CAKEs, the link drifting 0.05 %% an allocation: %llu rates "
		   "written for 5 subscribers over 200 drifts; each at most %.3f %% below its "
		   "share and %.4f %% above",
		   (unsigned long long)(st.rate_changes - st0.rate_changes), worst_below * 100,
		   worst_above * 100);
	assert_true(st.rate_changes - st0.rate_changes < 5 * 200 / 2);
	assert_true(worst_below <= 1.0 / 256 + 1e-6);
	assert_true(worst_above <= 1e-5); /* the allocation rounds to the bit/s */
	check_accounting(w);
	world_free(w);
}

static void
test_quiet_and_small_pool(void **state)
{
	struct world *w = world_new(90, 4);
	struct sub_sched_stats st;
	double total = 0;

	(void)state;
	set_on(w, true);
	reset_window(w, 1 * SIM_NS);
	run(w, 2 * SIM_NS);
	sub_sched_get_stats(w->ss, SUB_DOWN, &st);
	for (uint32_t i = 0; i < NSUB; i++)
		total += got_mbit(w, i, -1, 1 * SIM_NS);
	total += got_mbit(w, SUB_NONE, -1, 1 * SIM_NS);
	SIM_FIGURE("a pool of 4 CAKEs for 7 busy subscribers: %llu packets through the link's "
		   "CAKE for want of one, %.2f Mbit/s delivered in all (link 100)",
		   (unsigned long long)st.pool_empty, total);
	assert_int_equal(st.taken, 4);
	assert_true(st.pool_empty > 0);
	assert_true(total <= 100 * 1.001);
	check_accounting(w);

	/* Quiet: drained, then the hold; every CAKE goes back and is taken again later. */
	set_on(w, false);
	run(w, 2 * SIM_NS + SUB_POOL_HOLD_NS + 100000000ull);
	sub_sched_get_stats(w->ss, SUB_DOWN, &st);
	assert_int_equal(st.given, 4);
	assert_int_equal(st.pool_free, 4);
	for (uint32_t i = 0; i < NSUB; i++)
		assert_null(sub_sched_sub(w->ss, i)->dir[SUB_DOWN].cake);
	check_accounting(w);
	assert_int_equal(sim_pool_held(&w->pool), 0); /* everything delivered or dropped */
	set_on(w, true);
	run(w, w->now + 500000000ull);
	sub_sched_get_stats(w->ss, SUB_DOWN, &st);
	assert_int_equal(st.taken, 8);
	check_accounting(w);
	world_free(w);
}

/*
 * The joint limit (the direction's mbuf budget): seven subscribers each
 * offered twice their plan would hold far more than 300 packets in their
 * CAKEs together; with the limit the sum never passes it, the drops it
 * makes fall on the subscribers with standing queues (never on the
 * unknown address's light flow in the link's CAKE), every subscriber still
 * gets its plan, and each subscriber's own counters add up.
 */
static void
test_joint_limit(void **state)
{
	const uint64_t limit = 300;
	struct world *w = world_new(90, 8);
	struct sub_sched_stats st;
	uint64_t budget = 0;
	double worst = 0;

	(void)state;
	sub_sched_set_limit(w->ss, SUB_DOWN, limit);
	set_on(w, true);
	reset_window(w, 1 * SIM_NS);
	run(w, 3 * SIM_NS);
	sub_sched_get_stats(w->ss, SUB_DOWN, &st);
	for (uint32_t i = 0; i < NSUB; i++) {
		struct sub_counters c;
		uint64_t drops = 0;
		double err = fabs(got_mbit(w, i, -1, 2 * SIM_NS) / (double)plan_mbit[i] - 1);

		worst = err > worst ? err : worst;
		sub_sched_counters(w->ss, i, SUB_DOWN, &c);
		for (int k = 0; k < SUB_DROP_KINDS; k++)
			drops += c.dropped[k];
		assert_int_equal(c.packets, c.sent_packets + drops + c.qlen);
		budget += c.dropped[SUB_DROP_BUDGET];
	}
	SIM_FIGURE("joint limit %llu packets: at most %llu held, %llu dropped for it, worst "
		   "subscriber %.3f %% off its plan",
		   (unsigned long long)limit, (unsigned long long)w->max_backlog,
		   (unsigned long long)st.budget_drops, worst * 100);
	assert_true(w->max_backlog <= limit);
	assert_true(st.budget_drops > 0);
	assert_int_equal(budget, st.budget_drops);
	assert_int_equal(w->src[NSRC - 1].drops[SHAPER_DROP_OVERFLOW], 0);
	assert_true(worst < 0.01);
	check_accounting(w);
	world_free(w);
}

/*
 * Two sparse flows (a frame each every 20 ms, both at once: 1.2 Mbit/s) in a
 * subscriber with a 5 Mbit/s plan: alone, and while the other subscribers
 * under its access point fill it (40 Mbit/s for 62). Its share is about
 * what it sends, but the second frame must leave at the plan's pace, one
 * frame time (2.4 ms) after the first, not wait for that share to carry it.
 */
static void
test_sparse_subscriber(void **state)
{
	const double frame_ms = FRAME * 8.0 / (double)(plan_mbit[0] * MBIT) * 1e3;

	(void)state;
	for (int busy = 0; busy < 2; busy++) {
		struct world *w = world_new(busy ? 40 : 90, 8);
		double worst_ms;

		set_on(w, busy != 0);
		for (uint32_t i = 0; i < NSRC; i++)
			if (w->src[i].sub == 0)
				w->src[i].on = false;
		for (uint32_t k = 0; k < 2; k++) { /* two flows, their frames at once */
			w->src[k].on = true;
			w->src[k].rate = FRAME * 50; /* one frame per 20 ms */
			w->src[k].next = w->now;
		}
		reset_window(w, 1 * SIM_NS);
		run(w, 3 * SIM_NS);
		worst_ms = (double)(w->src[0].max_wait > w->src[1].max_wait ? w->src[0].max_wait
									    : w->src[1].max_wait) /
			   1e6;
		SIM_FIGURE("two sparse flows alone in their subscriber (%s): longest wait %.3f ms, one frame "
			   "at its plan %.3f ms",
			   busy ? "its neighbours filling the access point" : "the others idle",
			   worst_ms, frame_ms);
		assert_true(w->src[0].delivered > 100 && w->src[1].delivered > 100);
		assert_true(worst_ms <= frame_ms + 0.5);
		check_accounting(w);
		world_free(w);
	}
}

/* Swap in w->set changed by the caller (a copy, here validated), as the worker does. */
static void
change(struct world *w, struct sub_set *nw, const uint32_t *reset, uint32_t nreset)
{
	struct sub_sched_change *c;
	char err[256];

	if (sub_set_validate(nw, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	c = sub_sched_change_build(w->ss, nw, reset, nreset, NULL, NULL, err, sizeof(err));
	if (c == NULL)
		fail_msg("%s", err);
	sub_sched_change_apply(w->ss, c);
	assert_true(sub_sched_change_applied(c));
	sub_sched_change_free(c);
	sub_set_free(&w->set);
	w->set = *nw;
}

static void
window(struct world *w, uint64_t settle, uint64_t len, double got[NSUB])
{
	run(w, w->now + settle);
	reset_window(w, w->now);
	run(w, w->now + len);
	for (uint32_t i = 0; i < NSUB; i++)
		got[i] = got_mbit(w, i, -1, len);
}

/*
 * Live changes: a plan cut (c1 10 -> 4 Mbit/s) while it is backlogged, a
 * subscriber deleted with packets queued (c6), and a new one in its slot
 * once that has drained, with new counters. The changed subscriber keeps its
 * CAKE and gets its new plan; every other subscriber's rate stays within
 * 0.5 % of what it got before; every frame is accounted.
 */
static void
test_live_change(void **state)
{
	struct world *w;
	double before[NSUB], after[NSUB], worst = 0;
	const struct sched *cake1;
	struct sub_counters c6;
	struct sub_set nw;
	uint32_t slot6 = 6, k, p;
	uint64_t sent6, done6;

	(void)state;
	spare_slots = 2;
	w = world_new(90, 8);
	spare_slots = 0;
	set_on(w, true);
	window(w, 2 * SIM_NS, SIM_NS, before);

	/* 1: a plan cut. */
	cake1 = sub_sched_sub(w->ss, 1)->dir[SUB_DOWN].cake;
	assert_non_null(cake1);
	assert_int_equal(sub_set_copy(&nw, &w->set), 0);
	nw.subs[1].plan[SUB_DOWN].max = 4 * MBIT;
	change(w, &nw, NULL, 0);
	assert_ptr_equal(sub_sched_sub(w->ss, 1)->dir[SUB_DOWN].cake, cake1);
	window(w, SIM_NS / 2, SIM_NS, after);
	for (uint32_t i = 0; i < NSUB; i++) {
		printf("# c%u: before %.4f Mbit/s, after %.4f\n", i, before[i], after[i]);
		if (i != 1)
			worst = fmax(worst, fabs(after[i] - before[i]) / before[i]);
	}
	SIM_FIGURE("live plan change: c1 10 -> 4 Mbit/s got %.4f, its CAKE kept; the others "
		   "within %.3f %% of their rate before",
		   after[1], worst * 100);
	assert_true(fabs(after[1] - 4) / 4 < 0.01);
	assert_true(worst < 0.005);

	/* 2: c6 deleted while backlogged: it stops arriving, its queue drains at its plan. */
	sub_sched_counters(w->ss, slot6, SUB_DOWN, &c6);
	assert_true(c6.qlen > 0);
	for (k = 0; k < NSRC; k++)
		if (w->src[k].sub == slot6)
			w->src[k].on = false;
	assert_int_equal(sub_set_copy(&nw, &w->set), 0);
	for (k = p = 0; k < nw.nprefixes; k++)
		if (nw.prefixes[k].sub != slot6)
			nw.prefixes[p++] = nw.prefixes[k];
	nw.nprefixes = p;
	nw.subs[slot6].id[0] = '\0';
	nw.subs[slot6].nprefixes = 0;
	change(w, &nw, NULL, 0);
	assert_false(sub_sched_slot_idle(w->ss, slot6));
	run(w, w->now + 3 * SIM_NS); /* drained, then held for SUB_POOL_HOLD_NS */
	assert_true(sub_sched_slot_idle(w->ss, slot6));
	sent6 = done6 = 0;
	for (k = 0; k < NSRC; k++)
		if (w->src[k].sub == slot6) {
			uint64_t drops = 0;

			for (int r = 0; r < SHAPER_DROP_MAX; r++)
				drops += w->src[k].drops[r];
			sent6 += w->src[k].sent;
			done6 += w->src[k].delivered + drops;
		}
	SIM_FIGURE("c6 deleted with %u packets queued: all %llu of its frames delivered or "
		   "dropped by its CAKE, its slot free after the drain",
		   c6.qlen, (unsigned long long)sent6);
	assert_int_equal(sent6, done6);

	/* 3: a new subscriber in the freed slot (the same addresses), plan 6 Mbit/s. */
	assert_int_equal(sub_set_copy(&nw, &w->set), 0);
	snprintf(nw.subs[slot6].id, SUB_ID_LEN, "c9");
	nw.subs[slot6].plan[SUB_DOWN].max = nw.subs[slot6].plan[SUB_UP].max = 6 * MBIT;
	assert_int_equal(sub_set_add_prefix(&nw, &p), 0);
	nw.prefixes[p].family = 4;
	nw.prefixes[p].len = 29;
	nw.prefixes[p].addr[0] = 100;
	nw.prefixes[p].addr[1] = 64;
	nw.prefixes[p].addr[2] = 6;
	nw.prefixes[p].sub = slot6;
	nw.subs[slot6].nprefixes = 1;
	change(w, &nw, &slot6, 1);
	sub_sched_counters(w->ss, slot6, SUB_DOWN, &c6);
	assert_int_equal(c6.bytes, 0);
	assert_int_equal(c6.sent_packets, 0);
	for (k = 0; k < NSRC; k++)
		if (w->src[k].sub == slot6)
			w->src[k].on = true, w->src[k].next = w->now + k * 1000ull;
	window(w, SIM_NS, SIM_NS, after);
	SIM_FIGURE("a new subscriber in the freed slot: 6 Mbit/s plan, got %.4f", after[6]);
	assert_true(fabs(after[6] - 6) / 6 < 0.01);
	assert_true(fabs(after[1] - 4) / 4 < 0.01);
	assert_int_equal(sub_sched_changes(w->ss), 3);

	/*
	 * 4: nodes changed live. A site added above the AP after it (the tree
	 * is reordered), a new node AP_B of 12 Mbit/s with c3 (plan 20) moved
	 * under it, an empty node added and removed. c3 gets AP_B's capacity;
	 * nobody else's rate, CAKE or counters move.
	 */
	{
		const struct sched *cakes[NSUB];
		struct sub_counters c0[NSUB], c1;
		struct sub_node_change site = { .name = "Site",
						.capacity = { 95 * MBIT, 95 * MBIT } },
				       ap = { .name = "AP", .parent = "Site" },
				       apb = { .name = "AP_B",
					       .parent = "Site",
					       .capacity = { 12 * MBIT, 12 * MBIT } },
				       spare = { .name = "empty", .capacity = { MBIT, MBIT } };
		double before4[NSUB];
		char err[256];
		bool added;

		memcpy(before4, after, sizeof(before4));
		for (uint32_t i = 0; i < NSUB; i++) {
			cakes[i] = sub_sched_sub(w->ss, i)->dir[SUB_DOWN].cake;
			assert_non_null(cakes[i]);
			sub_sched_counters(w->ss, i, SUB_DOWN, &c0[i]);
		}
		assert_int_equal(sub_set_copy(&nw, &w->set), 0);
		assert_int_equal(sub_set_node_put(&nw, &site, &added, err, sizeof(err)), 0);
		change(w, &nw, NULL, 0);
		assert_int_equal(sub_set_copy(&nw, &w->set), 0);
		if (sub_set_node_put(&nw, &ap, &added, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		assert_true(sub_node_find(&nw, "Site") < sub_node_find(&nw, "AP"));
		change(w, &nw, NULL, 0);
		assert_int_equal(sub_set_copy(&nw, &w->set), 0);
		assert_int_equal(sub_set_node_put(&nw, &apb, &added, err, sizeof(err)), 0);
		assert_int_equal(sub_set_node_put(&nw, &spare, &added, err, sizeof(err)), 0);
		nw.subs[3].node = sub_node_find(&nw, "AP_B");
		change(w, &nw, NULL, 0);
		run(w, w->now + SIM_NS / 4);
		assert_int_equal(sub_set_copy(&nw, &w->set), 0);
		assert_int_equal(sub_set_node_del(&nw, "empty", err, sizeof(err)), 0);
		change(w, &nw, NULL, 0);
		window(w, SIM_NS / 4, SIM_NS, after);
		worst = 0;
		for (uint32_t i = 0; i < NSUB; i++) {
			printf("# c%u: before %.4f Mbit/s, after the node changes %.4f\n", i,
			       before4[i], after[i]);
			assert_ptr_equal(sub_sched_sub(w->ss, i)->dir[SUB_DOWN].cake, cakes[i]);
			sub_sched_counters(w->ss, i, SUB_DOWN, &c1);
			assert_true(c1.sent_packets > c0[i].sent_packets);
			assert_true(c1.bytes > c0[i].bytes);
			if (i != 3)
				worst = fmax(worst, fabs(after[i] - before4[i]) / before4[i]);
		}
		SIM_FIGURE("nodes changed live (a site above the AP, a node of 12 Mbit/s with c3 "
			   "moved under it, an empty node added and removed): c3 got %.4f, the "
			   "others within %.3f %% of their rate before, every CAKE kept",
			   after[3], worst * 100);
		assert_true(fabs(after[3] - 12) / 12 < 0.01);
		assert_true(worst < 0.005);
		assert_int_equal(sub_sched_changes(w->ss), 7);
	}
	check_accounting(w);
	world_free(w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_room),
		cmocka_unit_test(test_stall_written_off),
		cmocka_unit_test(test_dequeue_soonest_first),
		cmocka_unit_test(test_node_full),
		cmocka_unit_test(test_link_cut),
		cmocka_unit_test(test_link_rate_rises),
		cmocka_unit_test(test_slow_worker_keeps_up),
		cmocka_unit_test(test_repeat_then_cut),
		cmocka_unit_test(test_hovering_queue),
		cmocka_unit_test(test_rate_band),
		cmocka_unit_test(test_quiet_and_small_pool),
		cmocka_unit_test(test_joint_limit),
		cmocka_unit_test(test_live_change),
		cmocka_unit_test(test_sparse_subscriber),
	};

	sim_watchdog(280, "the per-subscriber scheduler's test hung");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
