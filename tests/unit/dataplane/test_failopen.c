/*
 * Fail-open's parts that need no kernel: the device strings shaperd hands
 * net_af_xdp, the lease thread's decision at each look, and the rx queue
 * check. The kernel half
 * (the XDP program and the bridge) is exercised on the namespace bed by
 * tests/e2e/failopen_matrix.py.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/failopen.h"

static void
test_iface(void **state)
{
	char ifname[IF_NAMESIZE];

	(void)state;
	assert_int_equal(dp_failopen_iface("net_af_xdp0,iface=eth1", ifname, sizeof(ifname)), 0);
	assert_string_equal(ifname, "eth1");
	assert_int_equal(dp_failopen_iface("net_af_xdp1,force_copy=1,iface=wan0,queue_count=2",
					   ifname, sizeof(ifname)),
			 0);
	assert_string_equal(ifname, "wan0");
	/* "xiface=" is another key, and a device with no iface= names nothing */
	assert_int_equal(dp_failopen_iface("net_af_xdp0,xiface=eth1", ifname, sizeof(ifname)), -1);
	assert_int_equal(dp_failopen_iface("net_af_packet0,iface=eth1", ifname, sizeof(ifname)), 0);
	assert_string_equal(ifname, "eth1");
	assert_int_equal(dp_failopen_iface("net_pcap0,iface=eth1", ifname, sizeof(ifname)), -1);
	assert_int_equal(dp_failopen_iface("net_af_xdp0,iface=", ifname, sizeof(ifname)), -1);
	assert_int_equal(dp_failopen_iface("net_af_xdp0,iface=averyveryverylongname", ifname,
					   sizeof(ifname)),
			 -1);
}

static void
test_devargs(void **state)
{
	char out[256], err[128];

	(void)state;
	assert_int_equal(dp_failopen_devargs("net_af_xdp0,iface=eth1,force_copy=1", "/p/f.o", out,
					     sizeof(out), err, sizeof(err)),
			 0);
	assert_string_equal(out, "net_af_xdp0,iface=eth1,force_copy=1,xdp_prog=/p/f.o");
	/* a program of the user's own stays */
	assert_int_equal(dp_failopen_devargs("net_af_xdp0,xdp_prog=/mine.o,iface=eth1", "/p/f.o",
					     out, sizeof(out), err, sizeof(err)),
			 0);
	assert_string_equal(out, "net_af_xdp0,xdp_prog=/mine.o,iface=eth1");
	assert_int_equal(dp_failopen_devargs("net_pcap0,iface=eth1", "/p/f.o", out, sizeof(out),
					     err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "neither an AF_XDP nor an af_packet device"));
	/* af_packet: its program goes on tc's hook, the device string stays */
	assert_int_equal(dp_failopen_devargs("net_af_packet0,iface=eth1", "/p/f.o", out,
					     sizeof(out), err, sizeof(err)),
			 0);
	assert_string_equal(out, "net_af_packet0,iface=eth1");
	assert_int_equal(dp_failopen_devargs("net_af_xdp0,iface=eth1", "/p/f.o", out, 20, err,
					     sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "too long"));
}

/* The lease is renewed only at a look where every worker turned since the last. */
static void
test_decide(void **state)
{
	struct dp_failopen fo;
	struct dp_failopen_counters c;
	uint64_t beats[2] = { 0, 0 };
	const uint64_t ms = 1000000u;
	/* the workers emptied their queues just now, at every look */
	uint64_t fresh[2] = { UINT64_MAX, UINT64_MAX };

	(void)state;
	memset(&fo, 0, sizeof(fo));
	pthread_mutex_init(&fo.lock, NULL);
	fo.n_workers = 2;
	fo.lease_ns = 100 * ms;
	/* workers that never turned hold no lease */
	assert_int_equal(dp_failopen_decide(&fo, beats, fresh, 1000 * ms, 1000 * ms, NULL), 0);
	beats[0] = 5;
	beats[1] = 9;
	assert_int_equal(dp_failopen_decide(&fo, beats, fresh, 1025 * ms, 1025 * ms, NULL),
			 1125 * ms);
	beats[0] = 6;
	beats[1] = 10;
	assert_int_equal(dp_failopen_decide(&fo, beats, fresh, 1050 * ms, 1050 * ms, NULL),
			 1150 * ms);
	/* worker 1 stuck: not renewed, whatever worker 0 does */
	beats[0] = 7;
	assert_int_equal(dp_failopen_decide(&fo, beats, fresh, 1075 * ms, 1075 * ms, NULL), 0);
	beats[0] = 8;
	assert_int_equal(dp_failopen_decide(&fo, beats, fresh, 1100 * ms, 1100 * ms, NULL), 0);
	dp_failopen_counters(&fo, &c);
	assert_int_equal(c.withheld, 3);
	assert_true(c.holding); /* 1150 not reached yet */
	assert_int_equal(c.lapses, 0);
	/* it turns again after the lease ran out: a lapse of 1200 - 1150 ms */
	beats[0] = 9;
	beats[1] = 11;
	assert_int_equal(dp_failopen_decide(&fo, beats, fresh, 1200 * ms, 1200 * ms, NULL),
			 1300 * ms);
	dp_failopen_counters(&fo, &c);
	assert_int_equal(c.lapses, 1);
	/* looks came in time and withheld it: the workers' doing, not the thread's */
	assert_int_equal(c.lapses_withheld, 1);
	assert_int_equal(c.lapses_late, 0);
	assert_int_equal(c.look_gap_max_ns, 100 * ms);
	assert_int_equal(c.lapsed_ns, 50 * ms);
	assert_int_equal(c.renewals, 3);
	assert_true(c.holding);
	pthread_mutex_destroy(&fo.lock);
}

/*
 * The line is taken, at start and after a lapse, only once every worker has
 * emptied its rx queues since it lost the line: before, they hold frames
 * the bridge forwarded, and sending those repeats them.
 */
static void
test_takeover_after_drain(void **state)
{
	struct dp_failopen fo;
	struct dp_failopen_counters c;
	uint64_t beats[2] = { 1, 1 }, drained[2] = { 0, 0 };
	const uint64_t ms = 1000000u, lease = 100 * ms;
	const uint64_t dp0 = 7 * ms; /* the workers' clock runs from elsewhere */

	(void)state;
	memset(&fo, 0, sizeof(fo));
	pthread_mutex_init(&fo.lock, NULL);
	fo.n_workers = 2;
	fo.lease_ns = lease;
	/* start: the workers turn but have not emptied their queues yet */
	assert_int_equal(dp_failopen_decide(&fo, beats, drained, 1000 * ms, dp0, NULL), 0);
	drained[0] = dp0 + 1;
	beats[0] = beats[1] = 2;
	assert_int_equal(dp_failopen_decide(&fo, beats, drained, 1001 * ms, dp0 + 1 * ms, NULL), 0);
	dp_failopen_counters(&fo, &c);
	assert_int_equal(c.drain_waits, 2);
	assert_int_equal(c.withheld, 0);
	assert_int_equal(c.takeovers, 0);
	/* worker 0's word is too old by the time worker 1 has emptied its queues */
	drained[1] = dp0 + 2 * ms;
	beats[0] = beats[1] = 3;
	assert_int_equal(dp_failopen_decide(&fo, beats, drained, 1002 * ms, dp0 + 2 * ms, NULL), 0);
	/* both emptied just now: taken, the workers' end a margin before the kernel's */
	drained[0] = dp0 + 2 * ms;
	beats[0] = beats[1] = 4;
	assert_int_equal(dp_failopen_decide(&fo, beats, drained, 1002 * ms, dp0 + 2 * ms, NULL),
			 1102 * ms);
	assert_int_equal(fo.line_next, dp0 + 2 * ms + lease - DP_FAILOPEN_MARGIN_NS);
	fo.line_until = fo.line_next; /* published, as the thread does after the kernel's map */
	/* held: renewals need no new drain */
	beats[0] = beats[1] = 5;
	assert_int_equal(dp_failopen_decide(&fo, beats, drained, 1027 * ms, dp0 + 27 * ms, NULL),
			 1127 * ms);
	fo.line_until = fo.line_next;
	/* the process stopped for 600 ms: on resume the queues are full of what the bridge sent */
	beats[0] = beats[1] = 6;
	assert_int_equal(dp_failopen_decide(&fo, beats, drained, 1627 * ms, dp0 + 627 * ms, NULL),
			 0);
	/* one worker has emptied its queue since it lost the line, the other not yet */
	drained[0] = dp0 + 628 * ms;
	beats[0] = beats[1] = 7;
	assert_int_equal(dp_failopen_decide(&fo, beats, drained, 1628 * ms, dp0 + 628 * ms, NULL),
			 0);
	drained[1] = dp0 + 628 * ms;
	beats[0] = beats[1] = 8;
	assert_int_equal(dp_failopen_decide(&fo, beats, drained, 1629 * ms, dp0 + 629 * ms, NULL),
			 1729 * ms);
	dp_failopen_counters(&fo, &c);
	assert_int_equal(c.takeovers, 2);
	assert_int_equal(c.drain_waits, 5);
	assert_int_equal(c.lapses, 1);
	/* no look between 1027 and 1627: the thread was stopped with the rest */
	assert_int_equal(c.lapses_late, 1);
	assert_int_equal(c.look_gap_max_ns, 600 * ms);
	assert_int_equal(c.lapsed_ns, 1629 * ms - 1127 * ms);
	pthread_mutex_destroy(&fo.lock);
}

/*
 * A lapse is counted once, at the first look that finds the lease out, with
 * its cause; the look says so, and the takeover says how long the bridge
 * had the line.
 */
static void
test_lapse_once(void **state)
{
	struct dp_failopen fo;
	struct dp_failopen_counters c;
	struct dp_failopen_look l;
	uint64_t beats[1] = { 1 }, drained[1] = { 0 };
	const uint64_t ms = 1000000u, lease = 100 * ms;

	(void)state;
	memset(&fo, 0, sizeof(fo));
	pthread_mutex_init(&fo.lock, NULL);
	fo.n_workers = 1;
	fo.lease_ns = lease;
	/* the first look: nothing to compare with, so no gap and no lapse */
	assert_int_equal(dp_failopen_decide(&fo, beats, drained, 1000 * ms, 1000 * ms, &l), 0);
	assert_false(l.lapsed);
	assert_int_equal(l.gap_ns, 0);
	drained[0] = 1001 * ms;
	beats[0] = 2;
	assert_int_equal(dp_failopen_decide(&fo, beats, drained, 1001 * ms, 1001 * ms, &l),
			 1101 * ms);
	assert_true(l.took);
	assert_int_equal(l.dark_ns, 0); /* the first: the bridge had it before shaperd ran */
	fo.line_until = fo.line_next;
	/* the thread kept from its CPU for 150 ms: out at this look, and late */
	beats[0] = 3;
	assert_int_equal(dp_failopen_decide(&fo, beats, drained, 1151 * ms, 1151 * ms, &l), 0);
	assert_true(l.lapsed);
	assert_true(l.late);
	assert_int_equal(l.gap_ns, 150 * ms);
	/* still draining: the same lapse, not another */
	beats[0] = 4;
	assert_int_equal(dp_failopen_decide(&fo, beats, drained, 1152 * ms, 1152 * ms, &l), 0);
	assert_false(l.lapsed);
	drained[0] = 1153 * ms;
	beats[0] = 5;
	assert_int_equal(dp_failopen_decide(&fo, beats, drained, 1153 * ms, 1153 * ms, &l),
			 1253 * ms);
	assert_true(l.took);
	assert_int_equal(l.dark_ns, 52 * ms);
	dp_failopen_counters(&fo, &c);
	assert_int_equal(c.lapses, 1);
	assert_int_equal(c.lapses_late, 1);
	assert_int_equal(c.lapses_withheld, 0);
	assert_int_equal(c.takeovers, 2);
	assert_int_equal(c.drain_waits, 3); /* at 1000, 1151 and 1152 ms */
	pthread_mutex_destroy(&fo.lock);
}

/* The lease thread sits one above the workers, and real-time even when they are not. */
static void
test_thread_priority(void **state)
{
	(void)state;
	assert_int_equal(dp_failopen_thread_priority(0), 1);
	assert_int_equal(dp_failopen_thread_priority(50), 51);
	assert_int_equal(dp_failopen_thread_priority(98), 99);
	assert_int_equal(dp_failopen_thread_priority(99), 99);
}

/* AF_XDP with fail-open: every rx queue of the interface needs a socket of shaperd's. */
static void
test_queues(void **state)
{
	char err[512];
	bool combined;

	(void)state;
	assert_int_equal(dp_failopen_queues_check("eth1", 1, true, 0, 1, err, sizeof(err)), 0);
	assert_int_equal(dp_failopen_queues_check("eth1", 2, true, 0, 2, err, sizeof(err)), 0);
	assert_int_equal(dp_failopen_queues_check("eth1", 4, true, 0, 1, err, sizeof(err)), -1);
	assert_string_equal(err, "eth1 has 4 rx queues and shaperd's AF_XDP sockets serve queue 0 "
				 "only (1 worker): frames the NIC puts on the other 3 would pass "
				 "to the bridge unshaped; run ethtool -L eth1 combined 1, or give "
				 "lcores.workers 4 workers (and the device queue_count=4)");
	/* rx-only channels (a veth): the fix says rx */
	assert_int_equal(dp_failopen_queues_check("v0", 3, false, 0, 2, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "serve queues 0-1 only (2 workers)"));
	assert_non_null(strstr(err, "the other 1 would"));
	assert_non_null(strstr(err, "ethtool -L v0 rx 2"));
	/* queue 0 unserved when the sockets start further on */
	assert_int_equal(dp_failopen_queues_check("eth1", 2, true, 1, 1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "serve queue 1 only"));
	assert_non_null(strstr(err, "drop the device's start_queue="));
	assert_int_equal(dp_failopen_queues_check("eth1", -ENODEV, true, 0, 1, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "cannot count the rx queues of eth1"));
	/* the kernel's own count: lo has one queue, a missing interface none */
	assert_int_equal(dp_failopen_rx_queues("lo", &combined), 1);
	assert_true(dp_failopen_rx_queues("shaper-nosuch0", &combined) < 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_iface),      cmocka_unit_test(test_devargs),
		cmocka_unit_test(test_decide),     cmocka_unit_test(test_takeover_after_drain),
		cmocka_unit_test(test_lapse_once), cmocka_unit_test(test_thread_priority),
		cmocka_unit_test(test_queues),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
