/*
 * A direction shaped by several shards shown as one (src/control/dir_merge.c):
 * counters summed, and autorate's state taken from the shard whose
 * controller decides (the others hand it their samples), in whatever order
 * the shards come; its decision counts summed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <jansson.h>

#include "shaper/autorate.h"
#include "shaper/control.h"

/* Shard 0 of a group: its controller steers the link from every shard's samples. */
static void
leader(struct ctl_dir_counters *c)
{
	memset(c, 0, sizeof(*c));
	c->rx_packets = 1000;
	c->tx_bytes = 1500000;
	c->rtt.on = true;
	c->rtt.hist.samples = 40;
	c->rtt.autorate = true;
	c->rtt.ar_leader = true;
	c->rtt.ar_action = AUTORATE_DOWN;
	c->rtt.ar_why = AR_WHY_CUT_BLOAT;
	c->rtt.ar_samples = 12;
	c->rtt.ar_rate = 1250000;
	c->rtt.ar_min = 125000;
	c->rtt.ar_max = 12500000;
	c->rtt.ar_delivered = 1300000;
	c->rtt.ar_delay_ns = 9000000;
	c->rtt.ar_ups = 30;
	c->rtt.ar_downs = 7;
	c->rtt.ar_base = 12500000;
	c->rtt.ar_arrived = 1290000;
	c->rtt.ar_through = 1290000;
	c->rtt.ar_path_ns = 2000000;
	c->rtt.ar_decisions[AR_WHY_CUT_BLOAT] = 7;
	c->rtt.ar_decisions[AR_WHY_RAISE] = 30;
	c->rtt.ar_decisions[AR_WHY_HOLD] = 100;
	c->rtt.by_method[RTT_BY_TIMESTAMP] = 30;
	c->rtt.by_method[RTT_BY_HANDSHAKE] = 10;
	c->rtt.host_based = 4;
	c->rtt.ar_inputs[RTT_BY_TIMESTAMP] = 20;
	c->rtt.ar_inputs[RTT_BY_HANDSHAKE] = 5;
	c->rtt.ar_one_way = 300;
}

/* Another shard: its own controller idle (never ticked) but for what it counted. */
static void
follower(struct ctl_dir_counters *c)
{
	memset(c, 0, sizeof(*c));
	c->rx_packets = 500;
	c->tx_bytes = 700000;
	c->rtt.on = true;
	c->rtt.hist.samples = 25;
	c->rtt.autorate = true;
	c->rtt.ar_leader = false;
	c->rtt.ar_why = AR_WHY_NO_SAMPLES;
	c->rtt.ar_rate = 12500000; /* where it started */
	c->rtt.ar_min = 125000;
	c->rtt.ar_max = 12500000;
	c->rtt.ar_delivered = 700000;
	c->rtt.ar_base = 12500000;
	c->rtt.ar_ups = 2;
	c->rtt.ar_downs = 1;
	c->rtt.ar_decisions[AR_WHY_NO_SAMPLES] = 3;
	c->rtt.by_method[RTT_BY_SEQUENCE] = 25;
	c->rtt.host_collisions = 2;
	c->rtt.ar_inputs[RTT_BY_SEQUENCE] = 9;
	c->rtt.ar_one_way = 100;
}

static void
check_merged(const struct ctl_dir_counters *m)
{
	assert_int_equal(m->rx_packets, 1500);
	assert_int_equal(m->tx_bytes, 2200000);
	assert_int_equal(m->rtt.hist.samples, 65);
	assert_true(m->rtt.autorate);
	assert_true(m->rtt.ar_leader);
	/* The state is the leader's ... */
	assert_int_equal(m->rtt.ar_action, AUTORATE_DOWN);
	assert_int_equal(m->rtt.ar_why, AR_WHY_CUT_BLOAT);
	assert_int_equal(m->rtt.ar_samples, 12);
	assert_int_equal(m->rtt.ar_rate, 1250000);
	assert_int_equal(m->rtt.ar_delivered, 1300000);
	assert_int_equal(m->rtt.ar_delay_ns, 9000000);
	assert_int_equal(m->rtt.ar_arrived, 1290000);
	assert_int_equal(m->rtt.ar_through, 1290000);
	assert_int_equal(m->rtt.ar_path_ns, 2000000);
	/* ... the counts are every shard's. */
	assert_int_equal(m->rtt.ar_ups, 32);
	assert_int_equal(m->rtt.ar_downs, 8);
	assert_int_equal(m->rtt.ar_decisions[AR_WHY_CUT_BLOAT], 7);
	assert_int_equal(m->rtt.ar_decisions[AR_WHY_RAISE], 30);
	assert_int_equal(m->rtt.ar_decisions[AR_WHY_HOLD], 100);
	assert_int_equal(m->rtt.ar_decisions[AR_WHY_NO_SAMPLES], 3);
	/* Samples by source, and those the controller took: every shard's. */
	assert_int_equal(m->rtt.by_method[RTT_BY_TIMESTAMP], 30);
	assert_int_equal(m->rtt.by_method[RTT_BY_SEQUENCE], 25);
	assert_int_equal(m->rtt.by_method[RTT_BY_HANDSHAKE], 10);
	assert_int_equal(m->rtt.host_based, 4);
	assert_int_equal(m->rtt.host_collisions, 2);
	assert_int_equal(m->rtt.ar_inputs[RTT_BY_TIMESTAMP], 20);
	assert_int_equal(m->rtt.ar_inputs[RTT_BY_SEQUENCE], 9);
	assert_int_equal(m->rtt.ar_inputs[RTT_BY_HANDSHAKE], 5);
	assert_int_equal(m->rtt.ar_one_way, 400);
}

static void
test_leader_first(void **state)
{
	struct ctl_dir_counters m, f;

	(void)state;
	leader(&m);
	follower(&f);
	ctl_dir_counters_merge(&m, &f);
	check_merged(&m);
}

static void
test_follower_first(void **state)
{
	struct ctl_dir_counters m, l;

	(void)state;
	follower(&m);
	leader(&l);
	ctl_dir_counters_merge(&m, &l);
	check_merged(&m);
}

/* Three shards, the leader in the middle: the same. */
static void
test_three_shards(void **state)
{
	struct ctl_dir_counters m, l, f;

	(void)state;
	follower(&m);
	leader(&l);
	follower(&f);
	ctl_dir_counters_merge(&m, &l);
	ctl_dir_counters_merge(&m, &f);
	assert_int_equal(m.rtt.ar_rate, 1250000);
	assert_int_equal(m.rtt.ar_why, AR_WHY_CUT_BLOAT);
	assert_int_equal(m.rtt.ar_ups, 34);
	assert_int_equal(m.rtt.ar_downs, 9);
	assert_int_equal(m.rtt.ar_decisions[AR_WHY_NO_SAMPLES], 6);
	assert_int_equal(m.rx_packets, 2000);
}

/*
 * The rtt object as stats shows it: samples by source, the remote-host
 * counters on the WAN side only, and what fed the controller.
 */
static void
test_json_sources(void **state)
{
	struct ctl_dir_counters c;
	json_t *o, *ar;

	(void)state;
	leader(&c);
	o = ctl_rtt_json(&c.rtt);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "sources"),
							    "handshake")),
			 10);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "sources"),
							    "timestamp")),
			 30);
	assert_int_equal(json_integer_value(json_object_get(o, "host_based")), 4);
	ar = json_object_get(o, "autorate");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(ar, "inputs"),
							    "handshake")),
			 5);
	assert_int_equal(json_integer_value(
					 json_object_get(json_object_get(ar, "inputs"), "one_way")),
			 300);
	json_decref(o);
	c.rtt.part = RTT_SIDE_LAN;
	o = ctl_rtt_json(&c.rtt);
	assert_null(json_object_get(o, "host_based"));
	assert_non_null(json_object_get(o, "sources"));
	json_decref(o);
}

/* A shard without RTT (off) adds nothing to the RTT figures; one with takes its place. */
static void
test_rtt_off(void **state)
{
	struct ctl_dir_counters m, l;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.rx_packets = 10;
	leader(&l);
	ctl_dir_counters_merge(&m, &l);
	assert_int_equal(m.rx_packets, 1010);
	assert_true(m.rtt.on && m.rtt.autorate);
	assert_int_equal(m.rtt.ar_rate, 1250000);
	assert_int_equal(m.rtt.ar_ups, 30);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_leader_first), cmocka_unit_test(test_follower_first),
		cmocka_unit_test(test_three_shards), cmocka_unit_test(test_rtt_off),
		cmocka_unit_test(test_json_sources),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
