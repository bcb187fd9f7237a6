/*
 * A new subscriber file as a change of the running set (sub_set_diff) and
 * the cost of live changes: the diff's counts and slots, the refusals
 * (node tree changed, no spare slot), and, at 10,000 subscribers, the time
 * one subscribers.set and a file diff of 100 changes take on the control
 * thread and on the worker (sub_sched_change_apply), printed (wall clock on
 * a shared machine: figures, not assertions).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "shaper/sched.h"
#include "shaper/subscriber.h"
#include "shaper/subscriber_diff.h"
#include "shaper/subscriber_pool.h"
#include "shaper/subscriber_sched.h"

#define MBIT 1000000ull

/* nsubs subscribers (id "s<i>", 100.64.x.y/32) under nnodes nodes under the link, spare slots
 * after. */
static void
build(struct sub_set *set, uint32_t nsubs, uint32_t nnodes, uint32_t spare, uint64_t plan_mbit)
{
	char err[256];

	sub_set_init(set);
	set->nodes[SUB_ROOT].capacity[SUB_DOWN] = set->nodes[SUB_ROOT].capacity[SUB_UP] =
			10000 * MBIT;
	for (uint32_t n = 0; n < nnodes; n++) {
		uint32_t idx;

		assert_int_equal(sub_set_add_node(set, &idx), 0);
		snprintf(set->nodes[idx].name, SUB_ID_LEN, "AP_%u", n);
		set->nodes[idx].parent = SUB_ROOT;
		set->nodes[idx].depth = 1;
		set->nodes[idx].capacity[SUB_DOWN] = set->nodes[idx].capacity[SUB_UP] = 1000 * MBIT;
	}
	for (uint32_t i = 0; i < nsubs; i++) {
		uint32_t s, p;

		assert_int_equal(sub_set_add_sub(set, &s), 0);
		snprintf(set->subs[s].id, SUB_ID_LEN, "s%u", i);
		set->subs[s].node = nnodes != 0 ? 1 + i % nnodes : SUB_ROOT;
		set->subs[s].plan[SUB_DOWN].max = set->subs[s].plan[SUB_UP].max = plan_mbit * MBIT;
		set->subs[s].nprefixes = 1;
		assert_int_equal(sub_set_add_prefix(set, &p), 0);
		set->prefixes[p].family = 4;
		set->prefixes[p].len = 32;
		set->prefixes[p].addr[0] = 100;
		set->prefixes[p].addr[1] = 64;
		set->prefixes[p].addr[2] = (uint8_t)(i >> 8);
		set->prefixes[p].addr[3] = (uint8_t)i;
		set->prefixes[p].sub = s;
	}
	for (uint32_t i = 0; i < spare; i++) {
		uint32_t s;

		assert_int_equal(sub_set_add_sub(set, &s), 0);
		sub_slot_clear(&set->subs[s]);
	}
	if (sub_set_validate(set, err, sizeof(err)) != 0)
		fail_msg("%s", err);
}

static bool
all_free(const void *ctx, uint32_t slot)
{
	(void)ctx;
	(void)slot;
	return true;
}

static bool
none_free(const void *ctx, uint32_t slot)
{
	(void)ctx;
	(void)slot;
	return false;
}

/* Subscriber i of file: remove, change, add. */
static void
test_diff_counts(void **state)
{
	struct sub_set cur, file, out;
	struct sub_diff d;
	char err[256];
	uint32_t s;

	(void)state;
	build(&cur, 6, 2, 3, 10);
	build(&file, 6, 2, 0, 10);
	/* s1: new plan; s2: new address; s5 gone; s6 and s7 new (they take free slots). */
	file.subs[1].plan[SUB_DOWN].max = 20 * MBIT;
	file.prefixes[2].addr[3] = 200;
	snprintf(file.subs[5].id, SUB_ID_LEN, "s6");
	assert_int_equal(sub_set_add_sub(&file, &s), 0);
	file.subs[s] = file.subs[4];
	snprintf(file.subs[s].id, SUB_ID_LEN, "s7");
	file.subs[s].nprefixes = 0;
	file.nodes[1].capacity[SUB_UP] = 500 * MBIT;
	if (sub_set_validate(&file, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	if (sub_set_diff(&cur, &file, all_free, NULL, &out, &d, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(d.added, 2);
	assert_int_equal(d.changed, 2);
	assert_int_equal(d.removed, 1);
	assert_int_equal(d.unchanged, 3);
	assert_int_equal(d.nodes_changed, 1);
	assert_true(d.addresses);
	/* Slots never move: the same ids where they were, the new ones in spare slots. */
	assert_int_equal(out.nsubs, cur.nsubs);
	assert_string_equal(out.subs[1].id, "s1");
	assert_int_equal(out.subs[1].plan[SUB_DOWN].max, 20 * MBIT);
	assert_string_equal(out.subs[5].id, ""); /* s5 drains without an address */
	assert_int_equal(out.subs[5].plan[SUB_DOWN].max, 10 * MBIT);
	assert_int_equal(d.nreset, 2);
	assert_string_equal(out.subs[d.reset[0]].id, "s6");
	assert_string_equal(out.subs[d.reset[1]].id, "s7");
	assert_true(d.reset[0] >= 6 && d.reset[1] >= 6);
	assert_int_equal(out.nodes[1].capacity[SUB_UP], 500 * MBIT);
	for (uint32_t i = 0; i < out.nprefixes; i++)
		if (out.prefixes[i].addr[3] == 5) /* s6 took s5's address: s6's slot */
			assert_int_equal(out.prefixes[i].sub, d.reset[0]);
	free(d.reset);
	sub_set_free(&out);

	/* The same file again: nothing to do. */
	sub_set_free(&file);
	build(&file, 6, 2, 0, 10);
	assert_int_equal(sub_set_diff(&cur, &file, all_free, NULL, &out, &d, err, sizeof(err)), 0);
	assert_int_equal(d.unchanged, 6);
	assert_int_equal(d.added + d.changed + d.removed + d.nodes_changed, 0);
	assert_false(d.addresses);
	free(d.reset);
	sub_set_free(&out);

	/* Only the plan per unknown address is new: a change of its own. */
	file.unknown = SUB_UNKNOWN_PLAN;
	file.unknown_plan[SUB_DOWN].max = file.unknown_plan[SUB_UP].max = 5 * MBIT;
	assert_int_equal(sub_set_diff(&cur, &file, all_free, NULL, &out, &d, err, sizeof(err)), 0);
	assert_int_equal(d.unchanged, 6);
	assert_true(d.unknown_changed);
	assert_int_equal(out.unknown, SUB_UNKNOWN_PLAN);
	assert_int_equal(out.unknown_plan[SUB_DOWN].max, 5 * MBIT);
	free(d.reset);
	sub_set_free(&out);
	file.unknown = SUB_UNKNOWN_LINK;

	/*
	 * A new subscriber and no free slot: the set grows at the end, by a
	 * quarter of its slots at the least, and the new one takes the first.
	 */
	assert_int_equal(sub_set_add_sub(&file, &s), 0);
	file.subs[s] = file.subs[0];
	snprintf(file.subs[s].id, SUB_ID_LEN, "new");
	file.subs[s].nprefixes = 0;
	assert_int_equal(sub_set_diff(&cur, &file, none_free, NULL, &out, &d, err, sizeof(err)), 0);
	assert_int_equal(d.added, 1);
	assert_int_equal(d.nreset, 1);
	assert_int_equal(d.slots_added, cur.nsubs / 4 > 1 ? cur.nsubs / 4 : 1);
	assert_int_equal(out.nsubs, cur.nsubs + d.slots_added);
	assert_int_equal(d.reset[0], cur.nsubs);
	assert_string_equal(out.subs[cur.nsubs].id, "new");
	for (uint32_t i = cur.nsubs + 1; i < out.nsubs; i++)
		assert_false(sub_slot_used(&out.subs[i]));
	for (uint32_t i = 0; i < cur.nsubs; i++)
		assert_string_equal(out.subs[i].id, cur.subs[i].id);
	free(d.reset);
	sub_set_free(&out);
	sub_set_free(&file);
	sub_set_free(&cur);
}

/* Subscriber 0 and its prefixes out of set (a file without it). */
static void
drop_first_sub(struct sub_set *set)
{
	uint32_t k = 0;

	memmove(&set->subs[0], &set->subs[1], (set->nsubs - 1) * sizeof(set->subs[0]));
	set->nsubs--;
	for (uint32_t i = 0; i < set->nprefixes; i++)
		if (set->prefixes[i].sub != 0) {
			set->prefixes[k] = set->prefixes[i];
			set->prefixes[k++].sub--;
		}
	set->nprefixes = k;
}

/*
 * A file whose tree differs: AP_2 added (s4 moves under it), AP_1 moved
 * under AP_2, AP_0 removed along with s0 (which drains under the link, AP_0's
 * parent), a capacity changed. The output's tree is the file's, matched by
 * name; every subscriber that stays keeps its slot.
 */
static void
test_diff_nodes(void **state)
{
	struct sub_set cur, file, out;
	struct sub_node_change c = { .name = "AP_2", .capacity = { 900 * MBIT, 900 * MBIT } };
	struct sub_diff d;
	char err[256];
	bool added;

	(void)state;
	build(&cur, 6, 2, 3, 10); /* s0, s2, s4 under AP_0; s1, s3, s5 under AP_1 */
	build(&file, 6, 2, 0, 10);
	if (sub_set_node_put(&file, &c, &added, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_true(added);
	c = (struct sub_node_change){ .name = "AP_1", .parent = "AP_2" };
	if (sub_set_node_put(&file, &c, &added, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_false(added);
	file.subs[4].node = sub_node_find(&file, "AP_2");
	file.subs[2].node = SUB_ROOT;
	file.subs[0].node = SUB_ROOT;
	drop_first_sub(&file); /* s0 goes */
	assert_int_equal(sub_set_node_del(&file, "AP_0", err, sizeof(err)), 0);
	file.nodes[sub_node_find(&file, "AP_1")].capacity[SUB_DOWN] = 200 * MBIT;
	if (sub_set_validate(&file, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	if (sub_set_diff(&cur, &file, all_free, NULL, &out, &d, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(d.nodes_added, 1);
	assert_int_equal(d.nodes_removed, 1);
	assert_int_equal(d.nodes_moved, 1);
	assert_int_equal(d.nodes_changed, 1);
	assert_int_equal(d.changed, 2); /* s2 and s4 moved */
	assert_int_equal(d.removed, 1);
	assert_int_equal(d.added, 0);
	assert_int_equal(out.nnodes, 3);
	assert_int_equal(sub_node_find(&out, "AP_0"), SUB_NONE);
	assert_int_equal(out.nodes[sub_node_find(&out, "AP_1")].parent,
			 sub_node_find(&out, "AP_2"));
	for (uint32_t i = 1; i < out.nnodes; i++)
		assert_true(out.nodes[i].parent < i);
	assert_string_equal(out.subs[4].id, "s4");
	assert_int_equal(out.subs[4].node, sub_node_find(&out, "AP_2"));
	assert_int_equal(out.subs[1].node, sub_node_find(&out, "AP_1"));
	assert_int_equal(out.subs[2].node, SUB_ROOT);
	/* s0 drains without an address where AP_0 was: under the link. */
	assert_string_equal(out.subs[0].id, "");
	assert_int_equal(out.subs[0].node, SUB_ROOT);
	assert_int_equal(out.subs[0].plan[SUB_DOWN].max, 10 * MBIT);
	free(d.reset);
	sub_set_free(&out);
	sub_set_free(&file);
	sub_set_free(&cur);
}

/* The model's refusals: a cycle, a node with something under it; an emptied one goes. */
static void
test_node_refusals(void **state)
{
	struct sub_node_change c = { .name = "AP_9", .capacity = { MBIT, 0 } };
	struct sub_set set;
	char err[256];
	bool added;

	(void)state;
	build(&set, 4, 2, 0, 1);
	assert_int_equal(sub_set_node_put(&set, &c, &added, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "upload: missing"));
	c = (struct sub_node_change){ .name = "AP_0", .parent = "AP_0" };
	assert_int_equal(sub_set_node_put(&set, &c, &added, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "parent: "));
	c = (struct sub_node_change){ .name = "AP_0", .parent = "AP_1" };
	assert_int_equal(sub_set_node_put(&set, &c, &added, err, sizeof(err)), 0);
	c = (struct sub_node_change){ .name = "AP_1", .parent = "AP_0" };
	assert_int_equal(sub_set_node_put(&set, &c, &added, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "parent: AP_1/AP_0 is under node \"AP_1\""));
	assert_int_equal(sub_set_node_del(&set, "AP_1", err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "2 subscribers and 1 node under it"));
	for (uint32_t i = 0; i < set.nsubs; i++)
		set.subs[i].node = SUB_ROOT;
	assert_int_equal(sub_set_node_del(&set, "AP_1", err, sizeof(err)), -EBUSY);
	assert_int_equal(sub_set_node_del(&set, "AP_0", err, sizeof(err)), 0);
	assert_int_equal(sub_set_node_del(&set, "AP_1", err, sizeof(err)), 0);
	assert_int_equal(set.nnodes, 1);
	assert_int_equal(sub_set_validate(&set, err, sizeof(err)), 0);
	sub_set_free(&set);
}

static double
ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

static struct sub_sched *
sched_for(const struct sub_set *set, struct sched *link[SUB_DIRS])
{
	struct sub_sched_config cfg = { 0 };
	struct sched_params p;
	char err[256];
	struct sub_sched *ss;

	sched_params_default(&p, SCHED_DISC_CAKE);
	p.rate = 10000 * MBIT / 8;
	for (int d = 0; d < SUB_DIRS; d++)
		assert_non_null(link[d] = sched_create(&p, err, sizeof(err)));
	p.rate = 10 * MBIT / 8;
	p.diffserv = SCHED_BESTEFFORT;
	sub_pool_cake_size(&p);
	cfg.set = set;
	cfg.params[SUB_DOWN] = cfg.params[SUB_UP] = p;
	cfg.active = 8;
	cfg.link[SUB_DOWN] = link[SUB_DOWN];
	cfg.link[SUB_UP] = link[SUB_UP];
	ss = sub_sched_create(&cfg, err, sizeof(err));
	if (ss == NULL)
		fail_msg("%s", err);
	return ss;
}

#define NBIG   10000u
#define NSPARE 2500u
#define ROUNDS 5

/*
 * 10,000 subscribers under 50 nodes (2,500 spare slots): one plan change
 * as subscribers.set makes it, and a file with 100 changes (40 plans, 30
 * removed, 30 added) as a reload makes it. Control thread: copy, change
 * and check the set (or diff the file), build the allocator, plans and
 * lookup; worker: the swap. The best of ROUNDS runs.
 */
static void
test_change_cost(void **state)
{
	struct sched *link[SUB_DIRS];
	struct sub_set cur, file, nw;
	struct sub_sched *ss;
	double set_ctl = 1e9, set_wk = 1e9, diff_ms = 1e9, diff_ctl = 1e9, diff_wk = 1e9;
	double node_ctl = 1e9, node_wk = 1e9, ndiff_ctl = 1e9, ndiff_wk = 1e9;
	char err[256];

	(void)state;
	build(&cur, NBIG, 50, NSPARE, 10);
	ss = sched_for(&cur, link);
	for (int r = 0; r < ROUNDS; r++) {
		struct sub_sched_change *c;
		struct timespec t0;
		struct sub_diff d;
		double a, b;

		/* One subscriber's plan. */
		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(sub_set_copy(&nw, &cur), 0);
		nw.subs[1234].plan[SUB_DOWN].max = (uint64_t)(20 + r) * MBIT;
		if (sub_set_validate(&nw, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		c = sub_sched_change_build(ss, &nw, NULL, 0, NULL, NULL, err, sizeof(err));
		assert_non_null(c);
		a = ms_since(&t0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		sub_sched_change_apply(ss, c);
		b = ms_since(&t0);
		sub_sched_change_free(c);
		sub_set_free(&cur);
		cur = nw;
		set_ctl = a < set_ctl ? a : set_ctl;
		set_wk = b < set_wk ? b : set_wk;

		/* A file of 10,000 with 100 changes (built outside the clock: loading is the
		 * loader's). */
		build(&file, NBIG, 50, 0, 10);
		for (uint32_t i = 0; i < 40; i++)
			file.subs[i * 97].plan[SUB_UP].max = (uint64_t)(5 + r) * MBIT;
		/* 30 new ids on the addresses of 30 that go (the last round's new ones, later). */
		for (uint32_t i = 0; i < 30; i++)
			snprintf(file.subs[5000 + i].id, SUB_ID_LEN, "new%u_%d", i, r);
		if (sub_set_validate(&file, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (sub_set_diff(&cur, &file, all_free, NULL, &nw, &d, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		a = ms_since(&t0);
		c = sub_sched_change_build(ss, &nw, d.reset, d.nreset, NULL, NULL, err,
					   sizeof(err));
		assert_non_null(c);
		b = ms_since(&t0);
		if (r == 0)
			printf("# diff: %u added, %u changed, %u removed, %u unchanged\n", d.added,
			       d.changed, d.removed, d.unchanged);
		/*
		 * 40, and the one subscribers.set moved (the file puts it back); after
		 * the first round also the 20 (one of them among the 40) the last
		 * round's node file moved into its new node, which this file lacks.
		 */
		assert_int_equal(d.changed, r == 0 ? 41 : 60);
		assert_int_equal(d.nodes_removed, r == 0 ? 0 : 1);
		assert_int_equal(d.added, 30);
		assert_int_equal(d.removed, 30);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		sub_sched_change_apply(ss, c);
		{
			double w = ms_since(&t0);

			diff_wk = w < diff_wk ? w : diff_wk;
		}
		sub_sched_change_free(c);
		free(d.reset);
		sub_set_free(&file);
		sub_set_free(&cur);
		cur = nw;
		diff_ms = a < diff_ms ? a : diff_ms;
		diff_ctl = b < diff_ctl ? b : diff_ctl;

		/*
		 * nodes.set: AP_7 (its 200 subscribers) moved under AP_3 and back,
		 * by turns, with a new capacity; as the control thread does it.
		 */
		{
			struct sub_node_change nc = { .name = "AP_7",
						      .parent = r % 2 == 0 ? "AP_3" : "link",
						      .capacity = { (uint64_t)(300 + r) * MBIT,
								    0 } };
			bool added;

			clock_gettime(CLOCK_MONOTONIC, &t0);
			assert_int_equal(sub_set_copy(&nw, &cur), 0);
			if (sub_set_node_put(&nw, &nc, &added, err, sizeof(err)) != 0 ||
			    sub_set_validate(&nw, err, sizeof(err)) != 0)
				fail_msg("%s", err);
			c = sub_sched_change_build(ss, &nw, NULL, 0, NULL, NULL, err, sizeof(err));
			assert_non_null(c);
			a = ms_since(&t0);
			clock_gettime(CLOCK_MONOTONIC, &t0);
			sub_sched_change_apply(ss, c);
			b = ms_since(&t0);
			sub_sched_change_free(c);
			sub_set_free(&cur);
			cur = nw;
			node_ctl = a < node_ctl ? a : node_ctl;
			node_wk = b < node_wk ? b : node_wk;
		}

		/*
		 * A file of the same subscribers whose tree changed: a node added
		 * with 20 subscribers moved into it, one node moved under another.
		 */
		build(&file, NBIG, 50, 0, 10);
		{
			char an[16], mn[16];
			struct sub_node_change add = { .name = an,
						       .capacity = { 500 * MBIT, 500 * MBIT } },
					       mv = { .name = mn, .parent = "AP_2" };
			bool added;

			/* Each round's own: the last round's node goes, its node moves back. */
			snprintf(an, sizeof(an), "AP_new%d", r);
			snprintf(mn, sizeof(mn), "AP_%d", 10 + r);
			if (sub_set_node_put(&file, &add, &added, err, sizeof(err)) != 0 ||
			    sub_set_node_put(&file, &mv, &added, err, sizeof(err)) != 0)
				fail_msg("%s", err);
			for (uint32_t i = 0; i < 20; i++)
				file.subs[i * 31].node = sub_node_find(&file, an);
		}
		if (sub_set_validate(&file, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (sub_set_diff(&cur, &file, all_free, NULL, &nw, &d, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		c = sub_sched_change_build(ss, &nw, d.reset, d.nreset, NULL, NULL, err,
					   sizeof(err));
		assert_non_null(c);
		a = ms_since(&t0);
		assert_int_equal(d.nodes_added, 1);
		assert_int_equal(d.nodes_moved, r % 2 == 0 ? 2 : 1); /* and AP_7 back */
		if (r == 0)
			printf("# node diff: %u nodes added, %u moved, %u removed; %u subscribers "
			       "added, %u changed, %u removed (the file undoes the last one's)\n",
			       d.nodes_added, d.nodes_moved, d.nodes_removed, d.added, d.changed,
			       d.removed);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		sub_sched_change_apply(ss, c);
		b = ms_since(&t0);
		sub_sched_change_free(c);
		free(d.reset);
		sub_set_free(&file);
		sub_set_free(&cur);
		cur = nw;
		ndiff_ctl = a < ndiff_ctl ? a : ndiff_ctl;
		ndiff_wk = b < ndiff_wk ? b : ndiff_wk;
	}
	printf("# figure: live change at %u subscribers (+%u spare slots), best of %d: one "
	       "subscribers.set %.2f ms on the control thread, %.4f ms on the worker; a file "
	       "diff of 100 changes %.2f ms (diff %.2f ms), %.4f ms on the worker\n",
	       NBIG, NSPARE, ROUNDS, set_ctl, set_wk, diff_ctl, diff_ms, diff_wk);
	printf("# figure: node changes at %u subscribers, best of %d: one nodes.set (a node of "
	       "200 subscribers moved, its capacity changed) %.2f ms on the control thread, %.4f "
	       "ms on the worker; a file diff with a node added (20 subscribers moved into it) and one or two moved %.2f ms, %.4f ms "
	       "on the worker\n",
	       NBIG, ROUNDS, node_ctl, node_wk, ndiff_ctl, ndiff_wk);
	assert_int_equal(sub_sched_changes(ss), 4 * ROUNDS);
	sub_sched_free(ss);
	sched_free(link[SUB_DOWN]);
	sched_free(link[SUB_UP]);
	sub_set_free(&cur);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_diff_counts),
		cmocka_unit_test(test_diff_nodes),
		cmocka_unit_test(test_node_refusals),
		cmocka_unit_test(test_change_cost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
