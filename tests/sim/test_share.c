/*
 * One link rate shared by 1 to 64 shards (shaper/share.h), each a CAKE
 * instance in its own simulator, in simulated time. The shards advance in
 * rounds of SHARE_TICK_NS; shard k ticks at a phase of k/N of a tick, so
 * every shard reads the others' demand as they published it up to a tick
 * before, as workers on separate cores would.
 *
 * Loads: even (hosts spread round robin), skewed (one shard holds 90 % of
 * the hosts) and on/off (shard 0 always busy, the others busy 30 ms out of
 * 60 at staggered phases). Each host is one saturating UDP flow.
 * Checked: the aggregate over the run within 1 % of the rate, no 100 ms
 * window above rate + one MTU per shard, per-host throughput within 5 % of
 * the mean (even and skewed), the shards' rates never summing above the
 * link; and how fast the split follows a shard going idle or busy.
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

#include "shaper/share.h"
#include "sim.h"

#define MS(x)  ((uint64_t)(x)*1000000ull)
#define SEC(x) ((uint64_t)(x)*SIM_NS)

#define HOSTS     128
#define LINK      78125000ull /* bytes/s: 625 Mbit/s, a 1514-byte packet per 2.5 ms per host */
#define FRAME     1514u
#define MEMLIMIT  (2u << 20)
#define POOL_PKTS 2048u

enum load {
	LOAD_EVEN,
	LOAD_SKEWED,
	LOAD_ONOFF,
	/* Shard 1: one host sending 0.5 % of the link (below its share); shard 0: the rest. */
	LOAD_LIGHT,
};

static const char *const load_names[] = { "even", "skewed", "on/off", "light" };

#define ONOFF_PERIOD MS(60)
#define ONOFF_ON     MS(30)

struct dep {
	uint64_t t;
	uint32_t len;
};

struct run;

struct shard {
	struct run *run;
	struct sim *sim;
	struct share_shard sh;
	struct share_hosts hosts;
	uint32_t nhosts;
	uint64_t phase;
};

struct run {
	uint32_t n;
	struct share_group g;
	struct shard shard[SHARE_MAX_SHARDS];
	uint32_t host_shard[HOSTS], host_src[HOSTS];
	struct dep *dep;
	size_t ndep, cap;
	uint64_t link;                       /* the link rate now (config.set can change it) */
	uint64_t rate_sum;                   /* the shards' rates, kept up to date tick by tick */
	double rate_ticks[SHARE_MAX_SHARDS]; /* sum over ticks of each shard's rate */
	uint64_t ticks;
};

static void
note_host(struct sim *sim, struct sim_pkt *p, void *ctx)
{
	struct shard *x = ctx;

	(void)sim;
	share_hosts_note(&x->hosts, p->pkt.src_hash);
}

static void
log_departure(struct sim *sim, struct sim_pkt *p, void *ctx)
{
	struct shard *x = ctx;
	struct run *r = x->run;

	share_hosts_note(&x->hosts, p->pkt.src_hash); /* a host with a backlog is active */
	if (r->ndep == r->cap) {
		r->cap = r->cap != 0 ? 2 * r->cap : 1u << 16;
		r->dep = realloc(r->dep, r->cap * sizeof(*r->dep));
		assert_non_null(r->dep);
	}
	r->dep[r->ndep].t = sim->now;
	r->dep[r->ndep].len = p->pkt.adj_len;
	r->ndep++;
}

static void
shard_params(struct sched_params *p)
{
	sched_params_default(p, SCHED_DISC_CAKE);
	p->rate = LINK;
	p->diffserv = SCHED_BESTEFFORT;
	p->isolation = SCHED_FLOWS; /* one flow per host: flow fairness is host fairness */
	p->memlimit = MEMLIMIT;
}

static uint32_t
shard_of(enum load load, uint32_t n, uint32_t h)
{
	uint32_t busy = HOSTS * 9 / 10;

	if (load == LOAD_LIGHT)
		return h == HOSTS - 1 ? 1 : 0;
	if (load != LOAD_SKEWED)
		return h % n;
	if (n == 1 || h < busy)
		return 0;
	return 1 + (h - busy) % (n - 1);
}

static struct run *
run_new(uint32_t n, enum load load, uint64_t host_rate)
{
	struct run *r = calloc(1, sizeof(*r));
	struct sched_params p;
	char err[128] = "";
	uint32_t h, k;

	assert_non_null(r);
	r->n = n;
	r->link = LINK;
	if (share_group_init(&r->g, LINK, n, FRAME, err, sizeof(err)) != 0)
		fail_msg("share_group_init: %s", err);
	shard_params(&p);
	for (k = 0; k < n; k++) {
		struct shard *x = &r->shard[k];

		x->run = r;
		x->sim = sim_new(&p, POOL_PKTS, HOSTS);
		x->sim->ctx = x;
		x->sim->on_emit = note_host;
		x->sim->on_deliver = log_departure;
		x->phase = SHARE_TICK_NS * k / n;
		share_shard_init(&x->sh, &r->g, k, x->sim->s, 0);
		r->rate_sum += x->sh.rate;
	}
	for (h = 0; h < HOSTS; h++)
		r->shard[shard_of(load, n, h)].nhosts++;
	for (h = 0; h < HOSTS; h++) {
		uint32_t k = shard_of(load, n, h);
		struct shard *x = &r->shard[k];
		uint64_t rate = host_rate;
		struct sim_src src;

		if (load == LOAD_LIGHT)
			rate = k == 1 ? LINK / 200 : LINK * 5 / 4 / x->nhosts;
		else if (load == LOAD_ONOFF && k == 0)
			rate = LINK * 5 / 4 / x->nhosts; /* shard 0 alone fills the link */
		else if (load == LOAD_ONOFF)
			rate = LINK * 4 / HOSTS; /* above its share whenever it is on */
		src = sim_src_udp(sim_ip(1, (uint8_t)(h >> 8), (uint8_t)h), sim_ip(200, 0, 1),
				  (uint16_t)(1000 + h), rate, FRAME);
		if (load == LOAD_ONOFF && k != 0) {
			src.start = ONOFF_PERIOD * k / n;
			src.on_ns = ONOFF_ON;
			src.off_ns = ONOFF_PERIOD - ONOFF_ON;
		}
		r->host_shard[h] = k;
		r->host_src[h] = sim_add_src(x->sim, &src);
	}
	return r;
}

static void
run_free(struct run *r)
{
	uint32_t k;

	for (k = 0; k < r->n; k++)
		sim_free(r->shard[k].sim);
	free(r->dep);
	free(r);
}

/* Advance every shard to round end `until`, each ticking at its phase. */
static void
run_round(struct run *r, uint64_t round_start)
{
	uint32_t k;

	for (k = 0; k < r->n; k++) {
		struct shard *x = &r->shard[k];
		uint64_t t = round_start + x->phase, old = x->sh.rate;

		sim_run(x->sim, t);
		share_tick(&x->sh, x->sim->s, share_hosts_count(&x->hosts, t), t);
		r->rate_sum = r->rate_sum - old + x->sh.rate;
		r->rate_ticks[k] += (double)x->sh.rate;
		/* The hard bound: rate only moves through the pool. */
		assert_true(r->rate_sum <= r->link);
		assert_true((int64_t)r->rate_sum + atomic_load(&r->g.pool) == (int64_t)r->link);
	}
	r->ticks++;
}

static void
run_until(struct run *r, uint64_t until)
{
	uint64_t t;

	for (t = r->ticks * SHARE_TICK_NS + SHARE_TICK_NS; t <= until; t += SHARE_TICK_NS)
		run_round(r, t);
}

static int
cmp_dep(const void *a, const void *b)
{
	const struct dep *x = a, *y = b;

	return x->t < y->t ? -1 : x->t > y->t;
}

/* Most bytes (charged) that left in any window of len ns. */
static uint64_t
max_window_bytes(struct run *r, uint64_t len)
{
	uint64_t sum = 0, best = 0;
	size_t i = 0, j;

	qsort(r->dep, r->ndep, sizeof(*r->dep), cmp_dep);
	for (j = 0; j < r->ndep; j++) {
		sum += r->dep[j].len;
		while (r->dep[j].t - r->dep[i].t >= len)
			sum -= r->dep[i++].len;
		if (sum > best)
			best = sum;
	}
	return best;
}

/* The direction as a whole: the shards' statistics merged add up. */
static void
check_merged(const struct run *r)
{
	struct sched_stats all, one;
	uint64_t enq = 0, deq = 0, drops = 0, merged_drops = 0, rate = 0, peak = 0;
	uint32_t k, i;

	for (k = 0; k < r->n; k++) {
		const struct sim *sim = r->shard[k].sim;

		sched_get_stats(sim->s, &one);
		if (k == 0)
			all = one;
		else
			sched_stats_merge(&all, &one);
		enq += sim->enq;
		deq += sim->deq;
		for (i = 0; i < SHAPER_DROP_MAX; i++)
			drops += sim->drops[i];
		rate += r->shard[k].sh.rate;
		if (one.tins[0].peak_delay_us > peak)
			peak = one.tins[0].peak_delay_us;
	}
	assert_int_equal(all.enqueued_pkts, enq);
	assert_int_equal(all.dequeued_pkts, deq);
	for (i = 0; i < SHAPER_DROP_MAX; i++)
		merged_drops += all.dropped[i];
	assert_int_equal(merged_drops, drops);
	assert_int_equal(all.enqueued_pkts, all.dequeued_pkts + merged_drops + all.backlog_pkts);
	assert_int_equal(all.tin_count, 1);
	assert_int_equal(all.tins[0].threshold_rate, rate); /* the shards' shares: the link */
	assert_true(rate <= LINK);
	assert_int_equal(all.tins[0].peak_delay_us, peak);
	assert_int_equal(all.capacity_estimate, LINK);
}

static void
check_run(uint32_t n, enum load load, uint64_t dur)
{
	/* Every host asks for 1.25 times its share of the link. */
	struct run *r = run_new(n, load, LINK * 5 / 4 / HOSTS);
	uint64_t total = 0, win, bound, meas_from = MS(500);
	double expect = (double)LINK * (double)dur / 1e9, err, worst = 0;
	uint32_t h, k;

	for (k = 0; k < n; k++) {
		r->shard[k].sim->meas_start = meas_from;
		r->shard[k].sim->meas_end = dur;
	}
	run_until(r, dur);
	for (k = 0; k < n; k++) {
		struct sim *sim = r->shard[k].sim;

		sim_check_accounting(sim);
		for (h = 0; h < sim->nsrc; h++) {
			total += sim->srcs[h].rx_adj;
			assert_int_equal(sim->srcs[h].reorders, 0); /* rate changes keep order */
		}
	}
	check_merged(r);
	err = ((double)total - expect) / expect;
	win = max_window_bytes(r, MS(100));
	bound = LINK / 10 + (uint64_t)n * FRAME;
	if (load != LOAD_ONOFF) {
		double mean = 0;

		for (h = 0; h < HOSTS; h++)
			mean += (double)r->shard[r->host_shard[h]]
						.sim->srcs[r->host_src[h]]
						.meas_bytes;
		mean /= HOSTS;
		for (h = 0; h < HOSTS; h++) {
			double b = (double)r->shard[r->host_shard[h]]
						   .sim->srcs[r->host_src[h]]
						   .meas_bytes;

			if (fabs(b / mean - 1) > worst)
				worst = fabs(b / mean - 1);
		}
	}
	SIM_FIGURE("share %2u shards %-6s: aggregate %+.3f %% over %.1f s, busiest 100 ms window "
		   "%+lld bytes vs rate (bound +%llu), worst host %.2f %% from the mean",
		   n, load_names[load], err * 100, (double)dur / 1e9,
		   (long long)win - (long long)(LINK / 10), (unsigned long long)(bound - LINK / 10),
		   worst * 100);
	assert_true(fabs(err) <= 0.01);
	assert_true(win <= bound);
	assert_true(worst <= 0.05);
	run_free(r);
}

/* Shard k's rate when the shards in `busy` are backlogged, the rest idle. */
static uint64_t
ideal_rate(const struct run *r, uint32_t k, const bool *busy)
{
	uint64_t w = 0, spare = LINK - (uint64_t)r->n * share_group_floor(&r->g);
	uint32_t j;

	for (j = 0; j < r->n; j++)
		if (busy[j])
			w += r->shard[j].nhosts;
	return share_group_floor(&r->g) + (busy[k] ? spare * r->shard[k].nhosts / w : 0);
}

static bool
rates_reached(const struct run *r, const bool *busy, double frac)
{
	uint32_t k;

	for (k = 0; k < r->n; k++)
		if (busy[k] && (double)r->shard[k].sh.rate < frac * (double)ideal_rate(r, k, busy))
			return false;
	return true;
}

/*
 * All hosts bulk (four times their share, a packet every 0.5 ms: a host
 * counts towards its shard's weight once it has sent). Shard 1 stops; from
 * the tick its queue is empty, how long until the others have its rate;
 * then it starts again: how long until it has its share back.
 */
static void
check_convergence(uint32_t n)
{
	struct run *r = run_new(n, LOAD_EVEN, LINK * 4 / HOSTS);
	struct sim *one = r->shard[1].sim;
	bool busy[SHARE_MAX_SHARDS];
	uint64_t t_idle = 0, t_back, t_conv = 0, idle_ns, busy_ns;
	uint32_t k, i;

	for (k = 0; k < n; k++)
		busy[k] = true;
	run_until(r, MS(50));
	assert_true(rates_reached(r, busy, 0.95));
	for (i = 0; i < one->nsrc; i++)
		one->srcs[i].stop = MS(50) + 1;
	busy[1] = false;
	while (t_conv == 0) {
		run_round(r, (r->ticks + 1) * SHARE_TICK_NS);
		if (t_idle == 0 && sched_backlog_pkts(one->s) == 0)
			t_idle = r->ticks * SHARE_TICK_NS;
		if (t_idle != 0 && rates_reached(r, busy, 0.995))
			t_conv = r->ticks * SHARE_TICK_NS;
		/* Its queue (2 MB of unresponsive UDP) drains at its share first. */
		assert_true(r->ticks * SHARE_TICK_NS < SEC(2));
	}
	idle_ns = t_conv - t_idle;

	t_back = t_conv + MS(20);
	run_until(r, t_back);
	for (i = 0; i < one->nsrc; i++) {
		one->srcs[i].stop = 0;
		one->srcs[i].next = one->srcs[i].on_start = t_back;
		one->srcs[i].cum_bytes = 0;
	}
	busy[1] = true;
	t_conv = 0;
	while (t_conv == 0) {
		run_round(r, (r->ticks + 1) * SHARE_TICK_NS);
		if (rates_reached(r, busy, 0.95))
			t_conv = r->ticks * SHARE_TICK_NS;
		assert_true(r->ticks * SHARE_TICK_NS < t_back + MS(100));
	}
	busy_ns = t_conv - t_back;
	SIM_FIGURE("share %2u shards: the others hold the idle shard's rate %.1f us after its queue "
		   "emptied; it has its share back %.1f us after its hosts resume",
		   n, (double)idle_ns / 1e3, (double)busy_ns / 1e3);
	assert_true(idle_ns <= MS(1));
	assert_true(busy_ns <= MS(1));
	for (k = 0; k < n; k++)
		sim_check_accounting(r->shard[k].sim);
	run_free(r);
}

static void
test_convergence(void **state)
{
	static const uint32_t counts[] = { 2, 4, 16, 64 };
	uint32_t i;

	(void)state;
	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		check_convergence(counts[i]);
}

/*
 * A nearly idle shard next to a busy one: it loses nothing and holds little
 * more rate than it uses (the busy shard gets the rest, the link stays full).
 */
static void
test_light(void **state)
{
	struct run *r = run_new(2, LOAD_LIGHT, 0);
	struct sim *light;
	uint64_t total = 0, dur = SEC(2);
	double held, err;
	uint32_t k, i;

	(void)state;
	run_until(r, dur);
	light = r->shard[1].sim;
	for (k = 0; k < 2; k++) {
		sim_check_accounting(r->shard[k].sim);
		for (i = 0; i < r->shard[k].sim->nsrc; i++)
			total += r->shard[k].sim->srcs[i].rx_adj;
	}
	held = r->rate_ticks[1] / (double)r->ticks;
	err = ((double)total - (double)LINK * 2) / ((double)LINK * 2);
	SIM_FIGURE("share light shard: sends %.0f bytes/s, holds %.0f bytes/s on average (%.2f x); "
		   "aggregate %+.3f %%",
		   (double)light->srcs[0].rx_bytes / 2, held,
		   held / ((double)light->srcs[0].rx_bytes / 2), err * 100);
	for (i = 0; i < SHAPER_DROP_MAX; i++)
		assert_int_equal(light->drops[i], 0);
	assert_true(held <= 1.25 * (double)(LINK / 200));
	assert_true(fabs(err) <= 0.01);
	run_free(r);
}

/*
 * config.set while every shard is backlogged: the link cut to 1/2000 of
 * itself, then raised back. The daemon's control thread sets the group's
 * rate and each worker applies the change before its next turn
 * (share_shard_rebind), which is what happens here between two rounds; from
 * then on run_round checks at every tick that the shards' rates sum to no
 * more than the new link. What leaves over the low phase is the new rate,
 * and after the rise the link is full again.
 */
static void
set_link(struct run *r, uint64_t link, uint64_t now)
{
	uint32_t k;

	share_group_set_rate(&r->g, link);
	r->link = link;
	for (k = 0; k < r->n; k++) {
		struct shard *x = &r->shard[k];
		uint64_t old = x->sh.rate;

		share_shard_rebind(&x->sh, x->sim->s, now);
		r->rate_sum = r->rate_sum - old + x->sh.rate;
	}
	assert_true(r->rate_sum <= link);
}

static uint64_t
bytes_between(const struct run *r, uint64_t from, uint64_t to)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < r->ndep; i++)
		if (r->dep[i].t >= from && r->dep[i].t < to)
			sum += r->dep[i].len;
	return sum;
}

static void
check_cut(uint32_t n)
{
	struct run *r = run_new(n, LOAD_EVEN, LINK * 5 / 4 / HOSTS);
	const uint64_t low = LINK / 2000, t_cut = MS(300), t_rise = SEC(4), end = SEC(5);
	uint64_t got_low, got_high;
	double low_err, high_err;
	uint32_t k;

	run_until(r, t_cut);
	set_link(r, low, t_cut);
	run_until(r, t_rise);
	set_link(r, LINK, t_rise);
	run_until(r, end);
	for (k = 0; k < n; k++)
		sim_check_accounting(r->shard[k].sim);
	/* From 0.5 s after the cut (the packets already paced out at the old rate left). */
	got_low = bytes_between(r, t_cut + MS(500), t_rise);
	got_high = bytes_between(r, t_rise + MS(200), end);
	low_err = (double)got_low / ((double)low * 3.2) - 1;
	high_err = (double)got_high / ((double)LINK * 0.8) - 1;
	SIM_FIGURE("share %2u shards cut to 1/2000: %+.2f %% of the new rate over 3.2 s, %+.2f %% "
		   "of the link 0.2-1 s after the rise",
		   n, low_err * 100, high_err * 100);
	assert_true(got_low <= (uint64_t)((double)low * 3.2 * 1.01) + (uint64_t)n * FRAME);
	assert_true(low_err >= -0.05);
	assert_true(fabs(high_err) <= 0.02);
	run_free(r);
}

static void
test_cut(void **state)
{
	(void)state;
	check_cut(2);
	check_cut(8);
}

static const uint32_t shard_counts[] = { 1, 2, 4, 16, 64 };
#define NCOUNTS (sizeof(shard_counts) / sizeof(shard_counts[0]))
/* Ten seconds of simulated time each; three in a sanitizer build's short run. */
#define RUN_NS  (sim_short() ? SEC(3) : SEC(10))

static void
test_even(void **state)
{
	uint32_t i;

	(void)state;
	for (i = 0; i < NCOUNTS; i++)
		check_run(shard_counts[i], LOAD_EVEN, RUN_NS);
}

static void
test_skewed(void **state)
{
	uint32_t i;

	(void)state;
	for (i = 0; i < NCOUNTS; i++)
		check_run(shard_counts[i], LOAD_SKEWED, RUN_NS);
}

static void
test_onoff(void **state)
{
	uint32_t i;

	(void)state;
	for (i = 0; i < NCOUNTS; i++)
		check_run(shard_counts[i], LOAD_ONOFF, RUN_NS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_even),  cmocka_unit_test(test_skewed),
		cmocka_unit_test(test_onoff), cmocka_unit_test(test_convergence),
		cmocka_unit_test(test_light), cmocka_unit_test(test_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
