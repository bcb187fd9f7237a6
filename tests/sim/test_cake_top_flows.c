/*
 * sched_top_flows on CAKE (what the control socket's "flows" command
 * shows): the queued flows largest backlog first, with their packet
 * counts, tins and head packets; bounded by max.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"

static void
test_top_flows_order(void **state)
{
	struct sched_params p;
	struct sched_flow_info fi[8];
	struct sim *sim;
	int n;

	(void)state;
	sched_params_default(&p, SCHED_DISC_CAKE);
	p.rate = 125000; /* 1 Mbit: nothing drains in the time we enqueue */
	sim = sim_new(&p, 4096, 8);
	/* Five flows with 1..5 packets of 1000 bytes; flow 4 is EF (Voice tin). */
	for (uint32_t f = 0; f < 5; f++) {
		struct sim_src s = sim_src_udp(sim_ip(10, 0, 1), sim_ip(10, 0, 2),
					       (uint16_t)(1000 + f), 0, 1000);
		uint32_t i;

		if (f == 4)
			s.dscp = 46;
		i = sim_add_src(sim, &s);
		for (uint32_t k = 0; k <= f; k++)
			assert_non_null(sim_emit(sim, i));
	}
	n = sched_top_flows(sim->s, fi, 3);
	assert_int_equal(n, 3);
	assert_int_equal(fi[0].packets, 5);
	assert_int_equal(fi[0].backlog_bytes, 5000);
	assert_int_equal(fi[1].packets, 4);
	assert_int_equal(fi[2].packets, 3);
	/* diffserv3 display order: Bulk 0, Best Effort 1, Voice 2 */
	assert_int_equal(fi[0].tin, 2);
	assert_int_equal(fi[1].tin, 1);
	assert_ptr_equal(fi[0].head, &((struct sim_pkt *)fi[0].head)->pkt);
	assert_int_equal(((const struct sim_pkt *)fi[0].head)->seq, 0); /* the oldest */

	n = sched_top_flows(sim->s, fi, 8);
	assert_int_equal(n, 5);
	for (int i = 1; i < n; i++)
		assert_true(fi[i - 1].backlog_bytes >= fi[i].backlog_bytes);
	assert_int_equal(sched_top_flows(sim->s, fi, 0), 0);
	sim_drain(sim);
	assert_int_equal(sched_top_flows(sim->s, fi, 8), 0);
	sim_check_accounting(sim);
	sim_free(sim);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_top_flows_order),
	};

	return cmocka_run_group_tests_name("cake_top_flows", tests, NULL, NULL);
}
