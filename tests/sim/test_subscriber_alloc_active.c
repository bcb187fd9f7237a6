/*
 * The allocation over the active subscribers only (sub_alloc_run_active,
 * what the scheduler's tick runs) against the full one over every
 * configured subscriber (sub_alloc_run, the reference): on random trees,
 * plans, mins, capacities, link cuts and active sets, every subscriber's
 * rate, every node's rate and the total must be exactly the same, bit/s
 * for bit/s (rounding remainders included). Demands of subscribers outside
 * the active set are set to "all it can get" in the array the active run
 * sees: it must not read them. One allocator runs many active sets in
 * turn, both directions, so state left from one run would show in the next.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/rand.h"
#include "shaper/subscriber.h"
#include "shaper/subscriber_alloc.h"

#define M      1000000ull
#define UNSET  0xdeadbeefull /* a rate the active run must leave alone */
#define TREES  200
#define ROUNDS 12

static uint64_t
rnd(uint64_t *rng, uint64_t lo, uint64_t hi)
{
	return lo + ((uint64_t)sh_rand32(rng) << 32 | sh_rand32(rng)) % (hi - lo + 1);
}

/*
 * A rate: often a round number of Mbit/s (ties among siblings, so the
 * one-bit remainders of a split decide), else any value.
 */
static uint64_t
rnd_rate(uint64_t *rng, uint64_t lo, uint64_t hi)
{
	uint64_t v = rnd(rng, lo, hi);

	return sh_rand32(rng) % 2 ? v / M * M + (v < M ? v : 0) : v;
}

/* Nodes in a random tree (sometimes a deep chain), subscribers under any of them. */
static void
make_tree(struct sub_set *set, uint64_t *rng)
{
	uint32_t nn = 1 + sh_rand32(rng) % 40, ns = 1 + sh_rand32(rng) % 600, i, idx;
	bool chain = sh_rand32(rng) % 4 == 0;
	int d;

	sub_set_init(set);
	for (i = 1; i < nn; i++) {
		assert_int_equal(sub_set_add_node(set, &idx), 0);
		snprintf(set->nodes[idx].name, SUB_ID_LEN, "n%u", i);
		set->nodes[idx].parent = chain ? i - 1 : sh_rand32(rng) % i;
		for (d = 0; d < SUB_DIRS; d++)
			set->nodes[idx].capacity[d] = rnd_rate(rng, 1 * M, 800 * M);
	}
	for (i = 0; i < ns; i++) {
		struct sub_subscriber *s;

		assert_int_equal(sub_set_add_sub(set, &idx), 0);
		s = &set->subs[idx];
		snprintf(s->id, SUB_ID_LEN, "s%u", i);
		s->node = sh_rand32(rng) % nn;
		for (d = 0; d < SUB_DIRS; d++) {
			s->plan[d].max = rnd_rate(rng, 100000, 300 * M);
			if (sh_rand32(rng) % 3 == 0)
				s->plan[d].min = rnd_rate(rng, 0, s->plan[d].max / 2);
		}
	}
	/* Capacities that hold the mins below them (a valid file). */
	(void)sub_set_validate(set, NULL, 0);
	for (i = nn; i-- > 1;)
		for (d = 0; d < SUB_DIRS; d++)
			if (set->nodes[i].capacity[d] < set->nodes[i].min_sum[d])
				set->nodes[i].capacity[d] = set->nodes[i].min_sum[d];
	for (d = 0; d < SUB_DIRS; d++)
		set->nodes[0].capacity[d] =
				sh_rand32(rng) % 4 == 0
						? 0
						: set->nodes[0].min_sum[d] +
								  rnd_rate(rng, 0, 3000 * M);
	if (sub_set_validate(set, NULL, 0) != 0)
		fail_msg("generated an invalid tree");
}

/* One active set and its demands; compare the two runs. Returns the mismatches. */
static int
compare_once(struct sub_alloc *a, const struct sub_set *set, enum sub_dir dir, uint64_t *rng,
	     int tree, int round)
{
	uint32_t ns = set->nsubs, nn = set->nnodes, nact = 0, i, share;
	uint64_t *full_demand = calloc(ns, sizeof(uint64_t));
	uint64_t *act_demand = calloc(ns, sizeof(uint64_t));
	uint64_t *full_rate = calloc(ns, sizeof(uint64_t)),
		 *act_rate = calloc(ns, sizeof(uint64_t));
	uint64_t *full_node = calloc(nn, sizeof(uint64_t)),
		 *act_node = calloc(nn, sizeof(uint64_t));
	uint32_t *active = calloc(ns, sizeof(uint32_t));
	uint64_t link = 0, full_total, act_total;
	int bad = 0;

	assert_true(full_demand && act_demand && full_rate && act_rate && full_node && act_node &&
		    active);
	/* From none to all of them active; an active one may still want nothing. */
	share = sh_rand32(rng) % 101;
	for (i = 0; i < ns; i++) {
		uint32_t r = sh_rand32(rng) % 10;

		act_demand[i] = SUB_DEMAND_ALL; /* not active: must not be read */
		act_rate[i] = UNSET;
		if (sh_rand32(rng) % 100 >= share)
			continue;
		active[nact++] = i;
		full_demand[i] = r < 1 ? 0 : r < 6 ? SUB_DEMAND_ALL : rnd_rate(rng, 1, 200 * M);
		act_demand[i] = full_demand[i];
	}
	/* Now and then the link cut: above the mins, or below them (floors scaled). */
	switch (sh_rand32(rng) % 6) {
	case 0:
		link = set->nodes[0].min_sum[dir] + rnd_rate(rng, 1, 100 * M);
		break;
	case 1:
		link = 1 + rnd(rng, 0, set->nodes[0].min_sum[dir] + 10);
		break;
	default:
		break;
	}
	full_total = sub_alloc_run(a, dir, link, full_demand, full_rate, full_node);
	sub_alloc_forget(a); /* a fresh act_rate: no last run's rates in it */
	act_total = sub_alloc_run_active(a, dir, link, active, nact, act_demand, act_rate,
					 round % 2 ? act_node : NULL);
	if (full_total != act_total && bad++ < 5)
		printf("tree %d round %d: total %lu, active run %lu\n", tree, round,
		       (unsigned long)full_total, (unsigned long)act_total);
	for (i = 0; i < nact; i++) {
		uint32_t s = active[i];

		if (full_rate[s] != act_rate[s] && bad++ < 5)
			printf("tree %d round %d dir %d: sub %u rate %lu, active run %lu\n", tree,
			       round, dir, s, (unsigned long)full_rate[s],
			       (unsigned long)act_rate[s]);
		act_rate[s] = UNSET;
	}
	for (i = 0; i < ns; i++) {
		if (act_rate[i] != UNSET && bad++ < 5)
			printf("tree %d round %d: inactive sub %u written (%lu)\n", tree, round, i,
			       (unsigned long)act_rate[i]);
		if (full_demand[i] == 0 && full_rate[i] != 0 && bad++ < 5)
			printf("tree %d round %d: reference gave idle sub %u %lu\n", tree, round, i,
			       (unsigned long)full_rate[i]);
	}
	if (round % 2)
		for (i = 0; i < nn; i++)
			if (full_node[i] != act_node[i] && bad++ < 5)
				printf("tree %d round %d: node %u rate %lu, active run %lu\n", tree,
				       round, i, (unsigned long)full_node[i],
				       (unsigned long)act_node[i]);
	free(full_demand);
	free(act_demand);
	free(full_rate);
	free(act_rate);
	free(full_node);
	free(act_node);
	free(active);
	return bad;
}

static void
test_active_equals_full(void **state)
{
	uint64_t rng = 0xac71e5ull;
	int bad = 0;

	(void)state;
	for (int tree = 0; tree < TREES; tree++) {
		struct sub_set set;
		struct sub_alloc *a;

		make_tree(&set, &rng);
		a = sub_alloc_create(&set);
		assert_non_null(a);
		for (int round = 0; round < ROUNDS; round++)
			bad += compare_once(a, &set, (enum sub_dir)(round % SUB_DIRS), &rng, tree,
					    round);
		sub_alloc_free(a);
		sub_set_free(&set);
	}
	printf("# %d trees x %d active sets: %d mismatches\n", TREES, ROUNDS, bad);
	assert_int_equal(bad, 0);
}

/* Many subscribers, a few nodes, all of one plan: ties everywhere, remainders decide. */
static void
test_ties(void **state)
{
	struct sub_set set;
	struct sub_alloc *a;
	uint32_t idx, i;
	uint64_t rng = 99;
	int bad = 0;

	(void)state;
	sub_set_init(&set);
	for (i = 1; i < 4; i++) {
		assert_int_equal(sub_set_add_node(&set, &idx), 0);
		snprintf(set.nodes[idx].name, SUB_ID_LEN, "n%u", i);
		set.nodes[idx].parent = i == 3 ? 1 : 0;
		set.nodes[idx].capacity[SUB_DOWN] = set.nodes[idx].capacity[SUB_UP] = 333 * M + i;
	}
	for (i = 0; i < 3000; i++) {
		assert_int_equal(sub_set_add_sub(&set, &idx), 0);
		snprintf(set.subs[idx].id, SUB_ID_LEN, "s%u", i);
		set.subs[idx].node = i % 4;
		set.subs[idx].plan[SUB_DOWN].max = set.subs[idx].plan[SUB_UP].max = 20 * M;
		set.subs[idx].plan[SUB_DOWN].min = i % 7 == 0 ? 1 * M : 0;
	}
	set.nodes[0].capacity[SUB_DOWN] = set.nodes[0].capacity[SUB_UP] = 1000 * M + 7;
	assert_int_equal(sub_set_validate(&set, NULL, 0), 0);
	a = sub_alloc_create(&set);
	assert_non_null(a);
	for (int round = 0; round < 40; round++)
		bad += compare_once(a, &set, (enum sub_dir)(round % SUB_DIRS), &rng, -1, round);
	sub_alloc_free(a);
	sub_set_free(&set);
	assert_int_equal(bad, 0);
}

/*
 * Ticks as the scheduler runs them: one allocator, each run's input the
 * last one's with at most one thing changed (nothing; one demand, to a value
 * of the same ceiling or another; the link; one subscriber joining or
 * leaving the active list; the other direction in between), every run
 * against the full allocation. A run that repeats its last rates when its
 * input moved leaves a stale rate here.
 */
static void
test_repeats(void **state)
{
	uint64_t rng = 0x5e9ea7ull;
	uint32_t repeats = 0, runs = 0;
	int bad = 0;

	(void)state;
	for (int tree = 0; tree < TREES / 4; tree++) {
		struct sub_set set;
		struct sub_alloc *a;
		uint32_t ns, nact = 0, *active;
		uint64_t *demand, *full, *act, link[SUB_DIRS] = { 0, 0 };

		make_tree(&set, &rng);
		ns = set.nsubs;
		a = sub_alloc_create(&set);
		active = calloc(ns, sizeof(*active));
		demand = calloc((size_t)SUB_DIRS * ns, sizeof(*demand));
		full = calloc(ns, sizeof(*full));
		act = calloc((size_t)SUB_DIRS * ns, sizeof(*act));
		assert_true(a && active && demand && full && act);
		for (uint32_t i = 0; i < ns; i++)
			if (sh_rand32(&rng) % 2) {
				active[nact++] = i;
				for (int d = 0; d < SUB_DIRS; d++)
					demand[(size_t)d * ns + i] =
							sh_rand32(&rng) % 2 ? SUB_DEMAND_ALL
									    : rnd_rate(&rng, 1,
										       200 * M);
			}
		for (int round = 0; round < 60; round++) {
			enum sub_dir dir = (enum sub_dir)(round % 5 == 4 ? SUB_UP : SUB_DOWN);
			uint64_t *dm = demand + (size_t)dir * ns, *ar = act + (size_t)dir * ns;
			/* An active one's demand changes; any one may join or leave. */
			uint32_t s = active[nact != 0 ? sh_rand32(&rng) % nact : 0], k;
			unsigned int what = sh_rand32(&rng) % 8;

			if (what == 4 || nact == 0)
				s = sh_rand32(&rng) % ns;
			if (nact == 0 && what < 3)
				what = 7;
			switch (what) {
			case 0: /* one demand moves */
				dm[s] = dm[s] == SUB_DEMAND_ALL ? rnd_rate(&rng, 1, 200 * M)
								: SUB_DEMAND_ALL;
				break;
			case 1: /* above its plan either way: the same ceiling */
				dm[s] = set.subs[s].plan[dir].max + 1 + sh_rand32(&rng) % 1000;
				break;
			case 2: /* by one bit/s */
				dm[s] = dm[s] != 0 && dm[s] != SUB_DEMAND_ALL ? dm[s] - 1 : 1;
				break;
			case 3: /* the link cut, or back */
				link[dir] = link[dir] != 0 ? 0
							   : set.nodes[0].min_sum[dir] +
									     rnd_rate(&rng, 1,
										      100 * M);
				break;
			case 4: /* one joins or leaves, in order */
				for (k = 0; k < nact && active[k] < s; k++)
					;
				if (k < nact && active[k] == s) {
					memmove(&active[k], &active[k + 1],
						(nact - k - 1) * sizeof(*active));
					nact--;
					demand[s] = demand[ns + s] = 0; /* both directions */
				} else {
					memmove(&active[k + 1], &active[k],
						(nact - k) * sizeof(*active));
					active[k] = s;
					nact++;
					demand[s] = demand[ns + s] = SUB_DEMAND_ALL;
				}
				break;
			default: /* nothing */
				break;
			}
			/* Inactive subscribers have no demand in the full run. */
			sub_alloc_run(a, dir, link[dir], dm, full, NULL);
			/* ar: what the last run in dir left, as the scheduler keeps it. */
			sub_alloc_run_active(a, dir, link[dir], active, nact, dm, ar, NULL);
			runs++;
			repeats += sub_alloc_same_as_last(a, dir);
			for (k = 0; k < nact; k++)
				if (ar[active[k]] != full[active[k]] && bad++ < 5)
					printf("tree %d round %d: sub %u rate %lu, full run %lu%s\n",
					       tree, round, active[k], (unsigned long)ar[active[k]],
					       (unsigned long)full[active[k]],
					       sub_alloc_same_as_last(a, dir) ? " (repeated)" : "");
		}
		free(active);
		free(demand);
		free(full);
		free(act);
		sub_alloc_free(a);
		sub_set_free(&set);
	}
	printf("# %u runs, %u of them repeats of the last: %d mismatches\n", runs, repeats, bad);
	assert_int_equal(bad, 0);
	/* The repeat is exercised, and not taken for every run. */
	assert_true(repeats > runs / 10 && repeats < runs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_active_equals_full),
		cmocka_unit_test(test_ties),
		cmocka_unit_test(test_repeats),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
