/*
 * The hierarchical rate allocation (src/subscriber/alloc.c): worked
 * examples, then properties over random trees, plans and demands: no node
 * or the link over its capacity, every subscriber between its floor and
 * ceiling, every node's rate used up (work conservation), and max-min
 * fairness among the children of every node. The checks recompute floors
 * and ceilings themselves rather than trusting the allocator's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "shaper/rand.h"
#include "shaper/subscriber.h"
#include "shaper/subscriber_alloc.h"

#define M 1000000ull

static void
test_waterfill_examples(void **state)
{
	uint64_t f[4] = { 0, 0, 0, 0 }, c[4] = { 10 * M, 50 * M, 80 * M, 0 };
	uint64_t out[4], scratch[8];

	(void)state;
	/* 100 among ceilings 10, 50, 80: 10 capped, the others level at 45. */
	assert_int_equal(sub_waterfill(3, f, c, 100 * M, out, scratch), 100 * M);
	assert_int_equal(out[0], 10 * M);
	assert_int_equal(out[1], 45 * M);
	assert_int_equal(out[2], 45 * M);
	/* A floor of 60 on the third: 10, 30, 60. */
	f[2] = 60 * M;
	sub_waterfill(3, f, c, 100 * M, out, scratch);
	assert_int_equal(out[0], 10 * M);
	assert_int_equal(out[1], 30 * M);
	assert_int_equal(out[2], 60 * M);
	/* Room for all: every ceiling. */
	assert_int_equal(sub_waterfill(3, f, c, 500 * M, out, scratch), 140 * M);
	assert_int_equal(out[2], 80 * M);
	/* Floors above the total (the link was cut): scaled, never above a floor. */
	f[0] = 10 * M;
	f[1] = 30 * M;
	sub_waterfill(3, f, c, 50 * M, out, scratch);
	assert_int_equal(out[0], 5 * M);
	assert_int_equal(out[1], 15 * M);
	assert_int_equal(out[2], 30 * M);
	/* Remainders: 10 bit/s among 3 equal children sum to 10. */
	memset(f, 0, sizeof(f));
	c[0] = c[1] = c[2] = 100;
	assert_int_equal(sub_waterfill(3, f, c, 10, out, scratch), 10);
	assert_true(out[0] + out[1] + out[2] == 10 && out[0] >= 3 && out[2] >= 3);
}

/*
 * Random splits against the definition: the outputs add up to the total,
 * each within its floor and ceiling, and one level L such that every child
 * is clamp(L, floor, ceiling) or, still rising, one bit/s above it. Floors
 * and ceilings from a few values (ties) or spread wide, with idle children.
 */
static void
test_waterfill_random(void **state)
{
	enum {
		N = 300
	};
	uint64_t f[N], c[N], out[N], scratch[2 * N], rng = 0xfeed;

	(void)state;
	for (int trial = 0; trial < 3000; trial++) {
		uint32_t n = 1 + sh_rand32(&rng) % N, i;
		uint64_t sum_f = 0, sum_c = 0, total, level = UINT64_MAX, got = 0;
		bool few = trial % 2 == 0;

		for (i = 0; i < n; i++) {
			c[i] = few ? (sh_rand64(&rng) % 5) * 1000 : sh_rand64(&rng) % 1000000;
			f[i] = sh_rand32(&rng) % 3 == 0 ? c[i] / (1 + sh_rand32(&rng) % 4) : 0;
			sum_f += f[i];
			sum_c += c[i];
		}
		if (sum_c <= sum_f + 1)
			continue;
		total = sum_f + sh_rand64(&rng) % (sum_c - sum_f);
		assert_int_equal(sub_waterfill(n, f, c, total, out, scratch), total);
		/* The level: any child strictly between its floor and ceiling, less its bit. */
		for (i = 0; i < n; i++) {
			assert_true(out[i] >= f[i] && out[i] <= c[i]);
			got += out[i];
			if (out[i] > f[i] && out[i] < c[i] && out[i] < level)
				level = out[i];
		}
		assert_int_equal(got, total);
		if (level == UINT64_MAX)
			continue;
		for (i = 0; i < n; i++) {
			uint64_t want = level < f[i] ? f[i] : level > c[i] ? c[i] : level;

			if (out[i] != want && !(out[i] == want + 1 && want == level))
				fail_msg("trial %d: child %u got %llu, floor %llu ceiling %llu, level "
					 "%llu",
					 trial, i, (unsigned long long)out[i],
					 (unsigned long long)f[i], (unsigned long long)c[i],
					 (unsigned long long)level);
		}
	}
}

/* Link 1000; Site (600) with AP (100) under it; subscribers at each level. */
static void
test_tree_example(void **state)
{
	static const char text[] =
			"{\"link\": {\"download\": \"1000mbit\", \"upload\": \"1000mbit\"},"
			"\"nodes\": {\"Site\": {\"download\": \"600mbit\", \"upload\": \"600mbit\", "
			"\"children\": {\"AP\": {\"download\": \"100mbit\", \"upload\": \"100mbit\"}}}},"
			"\"subscribers\": ["
			"{\"id\": \"a\", \"node\": \"AP\", \"download\": \"80mbit\", \"upload\": \"1mbit\", "
			"\"addresses\": [\"10.0.0.1\"]},"
			"{\"id\": \"b\", \"node\": \"AP\", \"download\": {\"max\": \"80mbit\", \"min\": "
			"\"70mbit\"}, \"upload\": \"1mbit\", \"addresses\": [\"10.0.0.2\"]},"
			"{\"id\": \"c\", \"node\": \"Site\", \"download\": \"1000mbit\", \"upload\": "
			"\"1mbit\", \"addresses\": [\"10.0.0.3\"]},"
			"{\"id\": \"d\", \"download\": \"1000mbit\", \"upload\": \"1mbit\", \"addresses\": "
			"[\"10.0.0.4\"]}]}";
	uint64_t demand[4] = { SUB_DEMAND_ALL, SUB_DEMAND_ALL, SUB_DEMAND_ALL, SUB_DEMAND_ALL };
	uint64_t rate[4], node_rate[3];
	struct sub_alloc *a;
	struct sub_set set;
	char err[256];

	(void)state;
	sub_set_init(&set);
	if (sub_load_json_text(&set, text, "t.json", err, sizeof(err)) != 0)
		fail_msg("%s", err);
	a = sub_alloc_create(&set);
	assert_non_null(a);
	/*
	 * Link 1000 between Site and d: level 500 (Site's ceiling is 600).
	 * Site 500 between AP (ceiling 100) and c: AP 100, c 400. AP 100
	 * between a and b (floor 70): b 70, a 30.
	 */
	assert_int_equal(sub_alloc_run(a, SUB_DOWN, 0, demand, rate, node_rate), 1000 * M);
	assert_int_equal(rate[3], 500 * M);
	assert_int_equal(node_rate[1], 500 * M);
	assert_int_equal(rate[2], 400 * M);
	assert_int_equal(rate[1], 70 * M);
	assert_int_equal(rate[0], 30 * M);
	/* b goes idle: a borrows up to its max; c takes what the AP leaves. */
	demand[1] = 0;
	sub_alloc_run(a, SUB_DOWN, 0, demand, rate, NULL);
	assert_int_equal(rate[1], 0);
	assert_int_equal(rate[0], 80 * M);
	assert_int_equal(rate[2], 420 * M);
	/* d wants only 100: Site gets its 600, of which c 520. */
	demand[3] = 100 * M;
	sub_alloc_run(a, SUB_DOWN, 0, demand, rate, NULL);
	assert_int_equal(rate[3], 100 * M);
	assert_int_equal(rate[2], 520 * M);
	/* The link cut to 200 (autorate): Site and d level at 100. */
	sub_alloc_run(a, SUB_DOWN, 200 * M, demand, rate, NULL);
	assert_int_equal(rate[3], 100 * M);
	assert_int_equal(rate[0] + rate[2], 100 * M);
	sub_alloc_free(a);
	sub_set_free(&set);
}

/* ------------------------------------------------------------ properties */

struct rnd_tree {
	struct sub_set set;
	uint64_t *demand, *rate, *node_rate;
	uint64_t link;
};

static uint64_t
rnd_rate(uint64_t *rng, uint64_t lo, uint64_t hi)
{
	return lo + sh_rand32(rng) % (hi - lo + 1);
}

static void
rnd_tree_make(struct rnd_tree *t, uint64_t *rng)
{
	uint32_t nn = 1 + sh_rand32(rng) % 30, ns = 1 + sh_rand32(rng) % 400, i, idx;
	int d;

	sub_set_init(&t->set);
	for (i = 1; i < nn; i++) {
		assert_int_equal(sub_set_add_node(&t->set, &idx), 0);
		snprintf(t->set.nodes[idx].name, SUB_ID_LEN, "n%u", i);
		t->set.nodes[idx].parent = sh_rand32(rng) % i; /* parents come first */
		for (d = 0; d < SUB_DIRS; d++)
			t->set.nodes[idx].capacity[d] = rnd_rate(rng, 1 * M, 1000 * M);
	}
	for (i = 0; i < ns; i++) {
		struct sub_subscriber *s;

		assert_int_equal(sub_set_add_sub(&t->set, &idx), 0);
		s = &t->set.subs[idx];
		snprintf(s->id, SUB_ID_LEN, "s%u", i);
		s->node = sh_rand32(rng) % nn;
		for (d = 0; d < SUB_DIRS; d++) {
			s->plan[d].max = rnd_rate(rng, 100000, 500 * M);
			if (sh_rand32(rng) % 3 == 0)
				s->plan[d].min = rnd_rate(rng, 0, s->plan[d].max / 2);
		}
	}
	/* Capacities that hold the mins below them (a valid file), then the link. */
	assert_int_equal(sub_set_validate(&t->set, NULL, 0) == 0 ? 0 : 0, 0);
	for (i = nn; i-- > 1;)
		for (d = 0; d < SUB_DIRS; d++)
			if (t->set.nodes[i].capacity[d] < t->set.nodes[i].min_sum[d])
				t->set.nodes[i].capacity[d] = t->set.nodes[i].min_sum[d];
	for (d = 0; d < SUB_DIRS; d++)
		t->set.nodes[0].capacity[d] =
				sh_rand32(rng) % 4 == 0
						? 0
						: t->set.nodes[0].min_sum[d] +
								  rnd_rate(rng, 0, 2000 * M);
	if (sub_set_validate(&t->set, NULL, 0) != 0)
		fail_msg("generated an invalid tree");
	t->demand = calloc(ns, sizeof(uint64_t));
	t->rate = calloc(ns, sizeof(uint64_t));
	t->node_rate = calloc(nn, sizeof(uint64_t));
	for (i = 0; i < ns; i++) {
		uint32_t r = sh_rand32(rng) % 10;

		t->demand[i] = r < 2 ? 0 : r < 7 ? SUB_DEMAND_ALL : rnd_rate(rng, 1, 300 * M);
	}
	t->link = 0;
}

static void
rnd_tree_free(struct rnd_tree *t)
{
	free(t->demand);
	free(t->rate);
	free(t->node_rate);
	sub_set_free(&t->set);
}

static uint64_t
umin(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Check one allocation of direction d; returns failures (messages printed). */
static int
check_alloc(const struct rnd_tree *t, int d, int trial)
{
	const struct sub_set *set = &t->set;
	uint32_t nn = set->nnodes, ns = set->nsubs, i, j;
	uint64_t *sum = calloc(nn, sizeof(uint64_t)), *fl = calloc(nn + ns, sizeof(uint64_t));
	uint64_t *ce = calloc(nn + ns, sizeof(uint64_t)), *got = calloc(nn + ns, sizeof(uint64_t));
	uint32_t *par = calloc(nn + ns, sizeof(uint32_t));
	int bad = 0;

#define BAD(...)                                                                                   \
	do {                                                                                       \
		if (bad++ < 5) {                                                                   \
			printf("trial %d dir %d: ", trial, d);                                     \
			printf(__VA_ARGS__);                                                       \
			printf("\n");                                                              \
		}                                                                                  \
	} while (0)

	for (i = 0; i < ns; i++) {
		const struct sub_plan *p = &set->subs[i].plan[d];
		uint64_t c = umin(p->max, t->demand[i]), f = umin(p->min, c), r = t->rate[i];

		ce[nn + i] = c;
		fl[nn + i] = f;
		got[nn + i] = r;
		par[nn + i] = set->subs[i].node;
		if (r > c)
			BAD("sub %u: rate %lu above its ceiling %lu", i, r, c);
		if (r < f)
			BAD("sub %u: rate %lu below its floor %lu (feasible)", i, r, f);
		for (j = set->subs[i].node; j != SUB_NONE; j = set->nodes[j].parent)
			sum[j] += r;
		fl[par[nn + i]] += f;
		ce[par[nn + i]] += c;
	}
	for (i = nn; i-- > 0;) {
		uint64_t cap = set->nodes[i].capacity[d];

		if (i == SUB_ROOT && t->link != 0)
			cap = cap ? umin(cap, t->link) : t->link;
		if (cap != 0 && sum[i] > cap)
			BAD("node %u: subtree %lu above capacity %lu", i, sum[i], cap);
		got[i] = sum[i];
		par[i] = set->nodes[i].parent;
		if (cap != 0) {
			ce[i] = umin(ce[i], cap);
			fl[i] = umin(fl[i], cap);
		}
		if (i > 0) {
			fl[par[i]] += fl[i];
			ce[par[i]] += ce[i];
		}
	}
	/* The root's ceiling with the link applied. */
	if (t->link != 0)
		ce[0] = umin(ce[0], t->link);
	for (i = 0; i < nn; i++) {
		uint64_t given = i == 0 ? ce[0] : got[i], want, kids_ce = 0;
		uint32_t nk = 0;

		for (j = 1; j < nn + ns; j++)
			if (j != i && (j >= nn || j > 0) && par[j] == i) {
				kids_ce += ce[j];
				nk++;
			}
		/* Work conservation: the node's rate is all used, or every child is full. */
		want = umin(given, kids_ce);
		if (sum[i] + nk < want || sum[i] > want)
			BAD("node %u: children got %lu of %lu", i, sum[i], want);
		/* Max-min: a child held below its ceiling has at least any sibling above its floor.
		 */
		for (j = 1; j < nn + ns; j++) {
			uint32_t k;

			if (par[j] != i || got[j] >= ce[j])
				continue;
			for (k = 1; k < nn + ns; k++)
				if (par[k] == i && got[k] > fl[k] && got[k] > got[j] + 1)
					BAD("node %u: child %u at %lu below its ceiling %lu while "
					    "sibling %u has %lu above its floor %lu",
					    i, j, got[j], ce[j], k, got[k], fl[k]);
		}
	}
	free(sum);
	free(fl);
	free(ce);
	free(got);
	free(par);
	return bad;
}

static void
test_alloc_properties(void **state)
{
	uint64_t rng = 0x5eedull;
	int trial, fails = 0;

	(void)state;
	for (trial = 0; trial < 300; trial++) {
		struct rnd_tree t;
		struct sub_alloc *a;
		int d;

		rnd_tree_make(&t, &rng);
		a = sub_alloc_create(&t.set);
		assert_non_null(a);
		for (d = 0; d < SUB_DIRS; d++) {
			/* Now and then a link cut to somewhere above the mins. */
			t.link = trial % 5 == 0 ? t.set.nodes[0].min_sum[d] +
								  rnd_rate(&rng, 1, 50 * M)
						: 0;
			sub_alloc_run(a, (enum sub_dir)d, t.link, t.demand, t.rate, t.node_rate);
			fails += check_alloc(&t, d, trial);
		}
		sub_alloc_free(a);
		rnd_tree_free(&t);
	}
	assert_int_equal(fails, 0);
}

/* The figure: 10,000 backlogged subscribers under 50 nodes, one direction. */
/*
 * The dead band (sub_rate_banded): a share that drifts by small steps,
 * whichever way, keeps the rate within the band below it and never above
 * it, with a write every few steps; shares at the min or the plan are
 * written exactly.
 */
static void
test_rate_band(void **state)
{
	const uint64_t min = 1000000, max = 20000000;
	uint64_t share = 5000000, written = max, writes = 0, rng = 7;

	(void)state;
	assert_int_equal(sub_rate_banded(max, 4000000, min, max), max);
	assert_int_equal(sub_rate_banded(min, 4000000, min, max), min);
	assert_int_equal(sub_rate_banded(min / 2, 4000000, min, max), min / 2); /* floors cut */
	assert_int_equal(sub_rate_banded(4000000, 4000000, min, max), 0);
	/* Written just above a share at the min's edge: not below the min. */
	assert_true(sub_rate_banded(min + 1, 2 * min, min, max) >= min);
	for (int i = 0; i < 100000; i++) {
		uint64_t r;

		/* Steps of up to 0.1 % either way, with a slow upward then downward trend. */
		share += share * (sh_rand64(&rng) % 1000) / 1000000;
		share -= share * (sh_rand64(&rng) % (i < 50000 ? 950 : 1050)) / 1000000;
		if (share <= min || share >= max)
			share = 5000000;
		r = sub_rate_banded(share, written, min, max);
		if (r != 0 && r != written) {
			written = r;
			writes++;
		}
		assert_true(written <= share);
		assert_true(written >= share - (share >> SUB_RATE_BAND_SHIFT));
	}
	printf("# %llu writes for 100000 drifting shares\n", (unsigned long long)writes);
	assert_true(writes < 100000 / 3);
}

static void
test_alloc_cost(void **state)
{
	struct sub_set set;
	struct sub_alloc *a;
	uint64_t *demand, *rate, rng = 7;
	struct timespec t0, t1;
	uint32_t i, idx, runs = 200;
	double ns;

	(void)state;
	sub_set_init(&set);
	for (i = 1; i <= 50; i++) {
		assert_int_equal(sub_set_add_node(&set, &idx), 0);
		snprintf(set.nodes[idx].name, SUB_ID_LEN, "n%u", i);
		set.nodes[idx].parent = SUB_ROOT;
		set.nodes[idx].capacity[SUB_DOWN] = set.nodes[idx].capacity[SUB_UP] = 1000 * M;
	}
	demand = calloc(10000, sizeof(uint64_t));
	rate = calloc(10000, sizeof(uint64_t));
	for (i = 0; i < 10000; i++) {
		assert_int_equal(sub_set_add_sub(&set, &idx), 0);
		set.subs[idx].node = 1 + i % 50;
		set.subs[idx].plan[SUB_DOWN].max = rnd_rate(&rng, 5, 25) * M;
		set.subs[idx].plan[SUB_DOWN].min = i % 4 == 0 ? 1 * M : 0;
		set.subs[idx].plan[SUB_UP] = set.subs[idx].plan[SUB_DOWN];
		demand[i] = i % 3 ? SUB_DEMAND_ALL : rnd_rate(&rng, 0, 20) * M;
	}
	a = sub_alloc_create(&set);
	assert_non_null(a);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < runs; i++)
		sub_alloc_run(a, SUB_DOWN, 40000 * M, demand, rate, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / runs;
	printf("# figure: sub_alloc_run, 10000 subscribers under 50 nodes: %.0f us per run "
	       "(wall clock on a shared machine, noisy)\n",
	       ns / 1e3);
	/* A bound for a hang or a quadratic slip, not for speed. */
	assert_true(ns < 200e6);
	sub_alloc_free(a);
	free(demand);
	free(rate);
	sub_set_free(&set);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_waterfill_examples), cmocka_unit_test(test_waterfill_random),
		cmocka_unit_test(test_tree_example),       cmocka_unit_test(test_alloc_properties),
		cmocka_unit_test(test_rate_band),          cmocka_unit_test(test_alloc_cost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
