/*
 * The config in tc's words (shaper/tc_translate.h): each discipline's
 * options come out under tc-cake(8)'s and tc-fq_codel(8)'s names, on the
 * egress of the interface each direction leaves by.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/tc_translate.h"

static char out[4096];

static void
load(const char *json, struct shaper_config *c)
{
	char err[SHAPER_ERR_LEN];

	if (shaper_config_load_string(json, c, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(shaper_config_tc(c, out, sizeof(out)), 0);
}

static void
test_cake(void **state)
{
	struct shaper_config c;

	(void)state;
	load("{\"ports\": {\"wan\": \"net_af_xdp1,iface=eth2\", \"lan\": \"net_af_xdp0,iface=eth1\"},"
	     " \"upstream\": {\"bandwidth\": \"20mbit\", \"diffserv\": \"diffserv4\","
	     "  \"overhead\": \"docsis\", \"ack_filter\": \"ack-filter\"},"
	     " \"downstream\": {\"bandwidth\": \"280mbit\", \"ingress\": true, \"wash\": true,"
	     "  \"atm\": \"ptm\", \"overhead\": 34, \"rtt\": \"30ms\"}}",
	     &c);
	/* upstream leaves by the WAN interface, downstream by the LAN one */
	assert_non_null(strstr(out, "tc qdisc replace dev eth2 root cake bandwidth 20000000bit "
				    "diffserv4 triple-isolate nonat nowash egress ack-filter "
				    "overhead 18 mpu 64 noatm rtt 100000us\n"));
	assert_non_null(strstr(out, "tc qdisc replace dev eth1 root cake bandwidth 280000000bit "
				    "diffserv3 triple-isolate nonat wash ingress no-ack-filter "
				    "overhead 34 mpu 0 ptm rtt 30000us\n"));
}

static void
test_fq_codel_under_htb(void **state)
{
	struct shaper_config c;

	(void)state;
	load("{\"ports\": {\"wan\": \"0000:01:00.0\", \"lan\": \"0000:01:00.1\"},"
	     " \"upstream\": {\"discipline\": \"fq_codel\", \"bandwidth\": \"10mbit\","
	     "  \"ce_threshold\": \"1ms\", \"ecn\": false},"
	     " \"downstream\": {\"discipline\": \"fifo\", \"limit\": 500}}",
	     &c);
	/* no iface= (vfio-pci): placeholders the user replaces */
	assert_non_null(strstr(out,
			       "tc qdisc replace dev WAN_IF root handle 1: htb default 1\n"
			       "tc class replace dev WAN_IF parent 1: classid 1:1 htb rate "
			       "10000000bit ceil 10000000bit\n"
			       "tc qdisc replace dev WAN_IF parent 1:1 fq_codel limit 10240 "
			       "flows 1024 quantum 1514 target 5000us interval 100000us "
			       "memory_limit 33554432 noecn ce_threshold 1000us drop_batch 64\n"));
	assert_null(strstr(out, "ce_threshold_selector"));
	assert_null(strstr(out, "# l4s"));
	/* l4s: tc's ce_threshold narrowed to ECT(1); a plain ce_threshold beside it is said */
	load("{\"ports\": {\"wan\": \"a\", \"lan\": \"b\"},"
	     " \"upstream\": {\"discipline\": \"fq_codel\", \"l4s\": true},"
	     " \"downstream\": {\"discipline\": \"fq_codel\", \"l4s\": true,"
	     "  \"l4s_step\": \"1ms\", \"ce_threshold\": \"3ms\"}}",
	     &c);
	assert_non_null(strstr(out, "memory_limit 33554432 ecn ce_threshold 500us "
				    "ce_threshold_selector 0x1/0x3 drop_batch 64\n"));
	assert_non_null(strstr(out,
			       "memory_limit 33554432 ecn ce_threshold 1000us "
			       "ce_threshold_selector 0x1/0x3 drop_batch 64\n"
			       "# ce_threshold 3000us for every ECT packet: tc-fq_codel has one "
			       "threshold\n"));
	assert_non_null(strstr(out, "# l4s: tc marks ECT(1) only"));
	load("{\"ports\": {\"wan\": \"0000:01:00.0\", \"lan\": \"0000:01:00.1\"},"
	     " \"upstream\": {\"discipline\": \"fq_codel\", \"bandwidth\": \"10mbit\","
	     "  \"ce_threshold\": \"1ms\", \"ecn\": false},"
	     " \"downstream\": {\"discipline\": \"fifo\", \"limit\": 500}}",
	     &c);
	/* unshaped: no rate limiter, the FIFO at the root */
	assert_non_null(strstr(out, "tc qdisc replace dev LAN_IF root pfifo limit 500\n"));
	assert_null(strstr(out, "dev LAN_IF root handle 1: htb"));
}

static void
test_untranslatable_said(void **state)
{
	struct shaper_config c;

	(void)state;
	load("{\"ports\": {\"wan\": \"a\", \"lan\": \"b\"},"
	     " \"downstream\": {\"bandwidth\": {\"min\": \"10mbit\", \"max\": \"100mbit\"},"
	     "  \"emulate\": {\"delay\": \"20ms\"}}}",
	     &c);
	assert_non_null(strstr(out, "# autorate: tc keeps the starting rate"));
	assert_non_null(strstr(out, "# emulate: not translated"));
	assert_non_null(strstr(out, "bandwidth 100000000bit"));
	/* off by default: nothing said */
	assert_null(strstr(out, "# l4s"));
	assert_null(strstr(out, "# nqb"));
	load("{\"ports\": {\"wan\": \"a\", \"lan\": \"b\"},"
	     " \"upstream\": {\"l4s\": true, \"l4s_step\": \"1ms\", \"nqb\": true}}",
	     &c);
	assert_non_null(strstr(out, "# l4s (step 1000us): tc-cake has no L4S step"));
	assert_non_null(strstr(out, "# nqb: tc-cake leaves DSCP 45 in best effort"));
	/* too small a buffer is refused, not cut */
	assert_int_equal(shaper_config_tc(&c, out, 40), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cake),
		cmocka_unit_test(test_fq_codel_under_htb),
		cmocka_unit_test(test_untranslatable_said),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
