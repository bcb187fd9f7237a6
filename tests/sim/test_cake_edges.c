/*
 * CAKE behaviour at the edges the other simulation tests leave open, each checked
 * against sch_cake: a host set with more hosts than ways (sch_cake's set-associative cake_hash():
 * the home slot is overwritten and shared), the overlimits counter (sch_cake's shaper gating in
 * cake_dequeue(), sch_cake's TCA_CAKE_STATS_*), diffserv8 and precedence tin quanta (unshaped DRR
 * shares, sch_cake's tin choice in cake_dequeue()) and thresholds (shaped priority, sch_cake's
 * cake_config_diffserv*() tables), and IPv6, VLAN, QinQ and PPPoE frames through the classifier and
 * the scheduler (tin from the inner DSCP, the MAC header stripped in overhead mode, CE written into
 * the inner IP header with a valid checksum).
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

#include "../unit/classify/pktbuild.h"
#include "shaper/classify.h"
#include "sim.h"

#define MBIT(x) ((uint64_t)(x)*125000ull)
#define MS(x)   ((uint64_t)(x)*1000000ull)
#define SEC(x)  ((uint64_t)(x)*SIM_NS)

/* ------------------------------------------------------ full host set */

/*
 * Nine source hosts, all hashed into host set 5 (slots 40..47), one
 * saturating flow each, dual-srchost. The first eight take the eight ways;
 * when the ninth arrives every way has bulk flows, so per sch_cake's set-associative cake_hash() it
 * takes its home slot (43, host 3's; not way 0, so "the first way" would show) and shares it: that
 * slot counts two bulk flows, so host 3 and host 8 each get half a quantum per round. Shares: 1/16
 * for those two, 1/8 for each of the other seven. With the ninth host in another set every host
 * gets 1/9.
 */
static void
host_set_run(bool crowded, double share[9])
{
	struct sched_params p;
	struct sim *sim;
	uint64_t total = 0;
	uint32_t i;

	sched_params_default(&p, SCHED_DISC_CAKE);
	p.rate = MBIT(10);
	p.diffserv = SCHED_BESTEFFORT;
	p.isolation = SCHED_DUAL_SRCHOST;
	p.seed = 7;
	sim = sim_new(&p, 30000, 9);
	for (i = 0; i < 9; i++) {
		struct sim_src s = sim_src_udp(sim_ip(1, 0, (uint8_t)(i + 1)), sim_ip(2, 0, 1),
					       (uint16_t)(1000 + i), MBIT(10), 1000);
		uint32_t k;

		s.start = i == 8 ? MS(500) : 0;
		k = sim_add_src(sim, &s);
		if (i < 8)
			sim->srcs[k].src_hash = ((i + 1) << 16) | (40 + i);
		else
			sim->srcs[k].src_hash = crowded ? (9u << 16) | 43 : (9u << 16) | 100;
	}
	sim->meas_start = SEC(2);
	sim->meas_end = SEC(6);
	sim_run(sim, SEC(6));
	for (i = 0; i < 9; i++)
		total += sim->srcs[i].meas_adj;
	for (i = 0; i < 9; i++)
		share[i] = (double)sim->srcs[i].meas_adj / (double)total;
	sim_drain(sim);
	sim_check_accounting(sim);
	sim_free(sim);
}

static void
test_full_host_set(void **state)
{
	double s[9];
	uint32_t i;

	(void)state;
	host_set_run(true, s);
	for (i = 0; i < 9; i++)
		SIM_FIGURE("full host set: host %u share %.4f", i, s[i]);
	for (i = 0; i < 9; i++) {
		double want = i == 3 || i == 8 ? 0.0625 : 0.125;

		assert_true(s[i] > want * 0.95 && s[i] < want * 1.05);
	}

	host_set_run(false, s);
	for (i = 0; i < 9; i++)
		assert_true(s[i] > (1.0 / 9) * 0.95 && s[i] < (1.0 / 9) * 1.05);
}

/* ------------------------------------------------------- overlimits */

/*
 * sch_cake's shaper gating in cake_dequeue()/sch_cake's TCA_CAKE_STATS_*: overlimits counts each
 * dequeue the shaper turns away (both clocks ahead of now) and each arrival at an empty qdisc whose
 * clocks are still ahead; a due dequeue, an unshaped one or an arrival behind a backlog does not
 * count.
 */
static void
test_overlimits(void **state)
{
	struct sched_params p;
	struct sched_stats st;
	struct sim *sim;
	uint32_t src;
	struct sim_src s;
	uint64_t t1;

	(void)state;
	sched_params_default(&p, SCHED_DISC_CAKE);
	p.rate = MBIT(1); /* 1000 bytes: 8 ms at the global clock, 12 ms failsafe */
	p.diffserv = SCHED_BESTEFFORT;
	sim = sim_new(&p, 64, 1);
	s = sim_src_udp(sim_ip(1, 0, 1), sim_ip(2, 0, 1), 1000, 0, 1000);
	src = sim_add_src(sim, &s);

	sim->now = MS(1);
	assert_non_null(sim_emit(sim, src));
	assert_non_null(sim_emit(sim, src));
	assert_int_equal(sim_dequeue_once(sim), (int)src); /* due at once */
	sched_get_stats(sim->s, &st);
	assert_int_equal(st.overlimits, 0);
	t1 = sched_next_time(sim->s, sim->now);
	assert_int_equal(t1, MS(1) + MS(8));
	sim->now = t1 - 1;
	assert_int_equal(sim_dequeue_once(sim), -1);
	assert_int_equal(sim_dequeue_once(sim), -1);
	sched_get_stats(sim->s, &st);
	assert_int_equal(st.overlimits, 2);
	/* An arrival behind a backlog is not counted. */
	assert_non_null(sim_emit(sim, src));
	sim->now = t1;
	assert_int_equal(sim_dequeue_once(sim), (int)src);
	sim->now = sched_next_time(sim->s, sim->now);
	assert_int_equal(sim_dequeue_once(sim), (int)src);
	sched_get_stats(sim->s, &st);
	assert_int_equal(st.overlimits, 2);
	assert_int_equal(st.backlog_pkts, 0);
	/* Empty, but the clocks run 8 ms (and 12 ms) ahead: the arrival counts. */
	sim->now += MS(1);
	assert_non_null(sim_emit(sim, src));
	sched_get_stats(sim->s, &st);
	assert_int_equal(st.overlimits, 3);
	sim->now = sched_next_time(sim->s, sim->now);
	assert_int_equal(sim_dequeue_once(sim), (int)src);
	/* Long idle: the clocks are behind, an arrival does not count. */
	sim->now += SEC(1);
	assert_non_null(sim_emit(sim, src));
	assert_int_equal(sim_dequeue_once(sim), (int)src);
	sched_get_stats(sim->s, &st);
	assert_int_equal(st.overlimits, 3);
	sim_check_accounting(sim);
	sim_free(sim);

	/* Unshaped: never. */
	p.rate = 0;
	sim = sim_new(&p, 64, 1);
	src = sim_add_src(sim, &s);
	for (uint32_t i = 0; i < 4; i++)
		assert_non_null(sim_emit(sim, src));
	for (uint32_t i = 0; i < 5; i++)
		sim_dequeue_once(sim);
	sched_get_stats(sim->s, &st);
	assert_int_equal(st.overlimits, 0);
	sim_free(sim);
}

/* ------------------------------------------- diffserv8 / precedence */

static const uint8_t ds8_dscp[8] = { 1, 8, 0, 24, 4, 16, 32, 48 }; /* tin 0..7 */

/* Delivered share of each of 8 saturating sources, one per tin. */
static void
tin_shares(enum sched_diffserv mode, uint64_t rate, double share[8])
{
	struct sched_params p;
	struct sim *sim;
	uint64_t total = 0;
	uint32_t i;

	sched_params_default(&p, SCHED_DISC_CAKE);
	p.rate = rate;
	p.diffserv = mode;
	p.seed = 3;
	sim = sim_new(&p, 30000, 8);
	if (rate == 0)
		sim->line_rate = MBIT(10); /* an external line paces the unshaped queue */
	for (i = 0; i < 8; i++) {
		struct sim_src s = sim_src_udp(sim_ip(1, 0, (uint8_t)(i + 1)), sim_ip(2, 0, 1),
					       (uint16_t)(1000 + i), MBIT(10), 1000);

		s.dscp = mode == SCHED_PRECEDENCE ? (uint8_t)(i << 3) : ds8_dscp[i];
		sim_add_src(sim, &s);
	}
	sim->meas_start = SEC(1);
	sim->meas_end = SEC(4);
	sim_run(sim, SEC(4));
	for (i = 0; i < 8; i++)
		total += sim->srcs[i].meas_adj;
	for (i = 0; i < 8; i++)
		share[i] = (double)sim->srcs[i].meas_adj / (double)total;
	sim_drain(sim);
	sim_check_accounting(sim);
	sim_free(sim);
}

static void
eight_tin_shares(enum sched_diffserv mode)
{
	static const double quanta[8] = { 256, 224, 196, 171, 149, 130, 113, 98 };
	double s[8], qsum = 0, thr = 1, rest = 1;
	uint32_t i;

	/* Unshaped: weighted DRR, each tin's share is its quantum's. */
	tin_shares(mode, 0, s);
	for (i = 0; i < 8; i++)
		qsum += quanta[i];
	for (i = 0; i < 8; i++) {
		SIM_FIGURE("%s unshaped: tin %u share %.4f (quantum %.4f)",
			   mode == SCHED_PRECEDENCE ? "precedence" : "diffserv8", i, s[i],
			   quanta[i] / qsum);
		assert_true(s[i] > quanta[i] / qsum * 0.95 && s[i] < quanta[i] / qsum * 1.05);
	}

	/*
	 * Shaped, every tin saturated: a tin below its threshold has priority
	 * over lower ones, so from tin 7 down each takes its threshold
	 * (R x 0.875^i) until the rate is used up: tin 7 0.393, tin 6 0.449,
	 * tin 5 the remaining 0.158, tins 0-4 nothing.
	 */
	tin_shares(mode, MBIT(10), s);
	for (i = 8; i-- > 0;) {
		double t = 1;

		for (uint32_t k = 0; k < i; k++)
			t *= 0.875;
		thr = t < rest ? t : rest;
		rest -= thr;
		SIM_FIGURE("%s shaped: tin %u share %.4f (expected %.4f)",
			   mode == SCHED_PRECEDENCE ? "precedence" : "diffserv8", i, s[i], thr);
		if (thr > 0)
			assert_true(s[i] > thr * 0.95 && s[i] < thr * 1.05);
		else
			assert_true(s[i] < 0.005);
	}
}

static void
test_diffserv8_shares(void **state)
{
	(void)state;
	eight_tin_shares(SCHED_DIFFSERV8);
}

static void
test_precedence_shares(void **state)
{
	(void)state;
	eight_tin_shares(SCHED_PRECEDENCE);
}

/* ------------------------------------------- frames through classify */

enum frame_kind {
	F_IPV6,
	F_VLAN,
	F_QINQ,
	F_PPPOE4,
	F_PPPOE6,
	F_KINDS
};

static const char *const frame_name[F_KINDS] = { "IPv6", "VLAN", "QinQ", "PPPoE IPv4",
						 "PPPoE IPv6" };

/* MAC header length the classifier should find, and the DSCP each carries. */
static const uint8_t frame_netoff[F_KINDS] = { 14, 18, 22, 22, 22 };
static const uint8_t frame_dscp[F_KINDS] = { 46, 8, 46, 0, 34 };
/* diffserv3 display column: Bulk 0, Best Effort 1, Voice 2 (AF41 is Best Effort). */
static const uint8_t frame_col[F_KINDS] = { 2, 0, 2, 1, 1 };

/* A UDP frame of the kind, total length len, DS field ds, source port sport. */
static void
build_frame(struct pb *b, enum frame_kind k, uint8_t ds, uint16_t sport, uint32_t len)
{
	static const uint8_t a6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	static const uint8_t b6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };

	pb_init(b);
	pb_eth_macs(b, 1, 2);
	switch (k) {
	case F_IPV6:
		pb_u16(b, 0x86dd);
		pb_ipv6(b, a6, b6, 17, ds, 0);
		break;
	case F_VLAN:
		pb_vlan(b, 0x8100, 10);
		pb_u16(b, 0x0800);
		pb_ipv4(b, 0x0a000001, 0x0a000002, 17, ds, 0x4000, 0);
		break;
	case F_QINQ:
		pb_vlan(b, 0x88a8, 100);
		pb_vlan(b, 0x8100, 10);
		pb_u16(b, 0x0800);
		pb_ipv4(b, 0x0a000001, 0x0a000002, 17, ds, 0x4000, 0);
		break;
	case F_PPPOE4:
		pb_pppoe(b, 0x0021);
		pb_ipv4(b, 0x0a000001, 0x0a000002, 17, ds, 0x4000, 0);
		break;
	case F_PPPOE6:
		pb_pppoe(b, 0x0057);
		pb_ipv6(b, a6, b6, 17, ds, 0);
		break;
	default:
		fail();
	}
	pb_udp(b, sport, 5001);
	while (b->len < len)
		pb_u8(b, 0);
	pb_finish(b);
}

/* The DS field of a built frame as it is now, and whether its IPv4 checksum holds. */
static uint8_t
frame_ds(const struct pb *b, enum frame_kind k, bool *csum_ok)
{
	const uint8_t *ip = b->b + b->ip_off;

	*csum_ok = true;
	if (k == F_IPV6 || k == F_PPPOE6)
		return (uint8_t)((ip[0] & 0x0f) << 4 | ip[1] >> 4);
	*csum_ok = pb_csum(ip, 20) == 0;
	return ip[1];
}

/*
 * One kind of frame at a time: a few packets of a second flow (other port)
 * and a standing queue of one ECT(0) flow at 100 Mbit with a 10 ms rtt, so
 * COBALT marks. Checks: the inner DSCP picks the tin, the two flows get two
 * queues, the MAC header (VLAN, QinQ, PPPoE tags included) is what overhead
 * mode strips, and CE lands in the inner IP header with its checksum fixed.
 */
static void
test_frames_through_classifier(void **state)
{
	enum {
		N = 600,
		LEN = 1000
	};
	struct classify_key key;
	struct pb *frames = calloc(N, sizeof(*frames));
	struct sh_pkt *pkts = calloc(N, sizeof(*pkts));

	(void)state;
	assert_non_null(frames);
	assert_non_null(pkts);
	classify_key_init(&key, 11);
	for (int k = 0; k < F_KINDS; k++) {
		struct sched_params p;
		struct sched_stats st;
		struct sh_pkt_list dl;
		struct sched *s;
		char err[128];
		uint64_t now = SEC(1);
		uint32_t marked = 0, delivered = 0, bad = 0;
		const struct sched_tin_stats *t;

		sched_params_default(&p, SCHED_DISC_CAKE);
		p.rate = MBIT(100);
		p.rtt_us = 10000;
		p.target_us = 500;
		p.overhead_mode = true; /* strip the MAC header, add nothing */
		s = sched_create(&p, err, sizeof(err));
		assert_non_null(s);
		sh_pkt_list_init(&dl);
		for (uint32_t i = 0; i < N; i++) {
			/* Every 100th packet belongs to the second flow (port 2000). */
			uint16_t sport = i % 100 == 99 ? 2000 : 1000;

			build_frame(&frames[i], (enum frame_kind)k,
				    (uint8_t)(frame_dscp[k] << 2 | 2), sport, LEN);
			pb_to_pkt(&frames[i], &pkts[i]);
			classify_pkt(&pkts[i], &key);
			assert_int_equal(pkts[i].net_off, frame_netoff[k]);
			assert_int_equal(pkts[i].dscp, frame_dscp[k]);
			assert_int_equal(sched_enqueue(s, &pkts[i], now, &dl), 0);
		}
		assert_int_equal(dl.count, 0);
		sched_get_stats(s, &st);
		t = &st.tins[frame_col[k]];
		assert_int_equal(t->sent_packets, N);
		assert_int_equal(t->way_misses + t->way_indirect_hits + t->way_collisions, 2);
		assert_int_equal(st.min_network_size, LEN - frame_netoff[k]);
		assert_int_equal(st.max_network_size, LEN - frame_netoff[k]);
		assert_int_equal(st.max_adj_size, LEN - frame_netoff[k]);
		{
			/* sch_cake's cake_overhead(): the header offset's EWMA (1/256) after N
			 * equal samples. */
			uint64_t avg = 0;

			for (uint32_t i = 0; i < N; i++)
				avg = avg - avg / 256 + ((uint64_t)frame_netoff[k] << 16) / 256;
			assert_int_equal(st.avg_hdr_offset, (avg + 0x8000) >> 16);
		}

		while (sched_next_time(s, now) != UINT64_MAX) {
			struct sh_pkt *out;

			now = sched_next_time(s, now);
			out = sched_dequeue(s, now, &dl);
			if (out == NULL)
				continue;
			bool ok;
			uint8_t ds = frame_ds(&frames[out - pkts], (enum frame_kind)k, &ok);

			delivered++;
			marked += (ds & 3) == 3;
			bad += !ok || (ds >> 2) != frame_dscp[k];
		}
		sched_get_stats(s, &st);
		t = &st.tins[frame_col[k]];
		SIM_FIGURE("%s: %u delivered, %u CE-marked, %u AQM drops", frame_name[k], delivered,
			   marked, (unsigned int)st.dropped[SHAPER_DROP_AQM]);
		assert_int_equal(delivered, N);
		assert_int_equal(bad, 0);
		assert_true(marked > 0);
		assert_int_equal(t->ecn_mark, marked);
		assert_int_equal(st.dropped[SHAPER_DROP_AQM], 0);
		sched_free(s);
	}
	free(frames);
	free(pkts);
}

/* ------------------------------------------------------ hosts per VLAN */

/*
 * A trunk where two customers use the same address 10.0.0.1: one on VLAN 10
 * with one bulk flow, one on VLAN 20 with eight. Frames are built whole and
 * classified. With vlan_hosts they are two hosts and each gets half the
 * link; without, CAKE sees one host with nine flows (1/9 for VLAN 10's).
 * Returns VLAN 10's share of dequeued packets number skip .. skip + count
 * of a standing backlog; with flip, vlan_hosts is switched on by a live
 * update after the first skip packets (hosts are found again).
 */
static double
vlan_hosts_share(enum sched_isolation mode, bool vlan_hosts, bool flip)
{
	enum {
		FLOWS = 9,
		PER_FLOW = 250,
		N = FLOWS * PER_FLOW,
		SKIP = 100,
		COUNT = 300,
		LEN = 1000
	};
	struct classify_key key;
	struct pb *frames = calloc(N, sizeof(*frames));
	struct sh_pkt *pkts = calloc(N, sizeof(*pkts));
	struct sched_params p;
	struct sh_pkt_list dl;
	struct sched *s;
	char err[128];
	uint64_t now = SEC(1);
	uint32_t seen = 0, vlan10 = 0;
	bool refilled = false;

	assert_non_null(frames);
	assert_non_null(pkts);
	classify_key_init(&key, 5);
	sched_params_default(&p, SCHED_DISC_CAKE);
	p.rate = 0; /* unshaped: no time passes, so no AQM drop blurs the shares */
	p.diffserv = SCHED_BESTEFFORT;
	p.isolation = mode;
	p.upstream = true;
	p.vlan_hosts = vlan_hosts && !flip;
	p.memlimit = 64u << 20; /* the whole backlog stands */
	s = sched_create(&p, err, sizeof(err));
	assert_non_null(s);
	sh_pkt_list_init(&dl);
	for (uint32_t i = 0; i < N; i++) {
		uint32_t flow = i % FLOWS; /* flow 0 on VLAN 10, flows 1..8 on VLAN 20 */
		struct pb *b = &frames[i];

		pb_init(b);
		pb_eth_macs(b, 1, 2);
		pb_vlan(b, 0x8100, flow == 0 ? 10 : 20);
		pb_u16(b, 0x0800);
		pb_ipv4(b, 0x0a000001, 0x0a090909, 17, 0, 0x4000, 0);
		pb_udp(b, (uint16_t)(1000 + flow), 5001);
		pb_zero(b, LEN - b->len);
		pb_finish(b);
		pb_to_pkt(b, &pkts[i]);
		classify_pkt(&pkts[i], &key);
	}
	/* Half the packets, SKIP dequeues, (the switch,) the other half: hosts
	 * are found again as packets arrive, as after an isolation change. */
	for (uint32_t i = 0; i < N / 2; i++)
		assert_int_equal(sched_enqueue(s, &pkts[i], now, &dl), 0);
	{
		/* `flows` sees each queue's VLAN, so the RTT table's hash can be rebuilt */
		struct sched_flow_fact facts[16];
		uint32_t cursor = 0, n = 0;

		while (cursor != SCHED_FACTS_DONE && n < 16)
			n += sched_flow_facts(s, &cursor, SCHED_FACTS_SLICE, now, facts + n,
					      16 - n);
		assert_true(n >= 1); /* one queue in a host mode without vlan_hosts */
		for (uint32_t i = 0; i < n; i++)
			if (facts[i].family == 4)
				assert_int_equal(facts[i].vlan, (facts[i].sport == 1000 ? 10u : 20u)
										<< 12);
	}
	while (seen < SKIP + COUNT && sched_next_time(s, now) != UINT64_MAX) {
		struct sh_pkt *out;

		if (seen == SKIP && !refilled) {
			refilled = true;
			if (flip) {
				p.vlan_hosts = true;
				assert_int_equal(sched_update(s, &p, err, sizeof(err)), 0);
			}
			for (uint32_t i = N / 2; i < N; i++)
				assert_int_equal(sched_enqueue(s, &pkts[i], now, &dl), 0);
		}
		now = sched_next_time(s, now);
		out = sched_dequeue(s, now, &dl);
		if (out == NULL)
			continue;
		if (seen >= SKIP && classify_vlan_key(out) == 10u << 12)
			vlan10++;
		seen++;
	}
	assert_int_equal(seen, SKIP + COUNT);
	assert_int_equal(dl.count, 0);
	sched_free(s);
	free(frames);
	free(pkts);
	return (double)vlan10 / COUNT;
}

static void
test_vlan_hosts(void **state)
{
	static const enum sched_isolation modes[] = { SCHED_DUAL_SRCHOST, SCHED_TRIPLE_ISOLATE,
						      SCHED_SRCHOST, SCHED_HOSTS };

	(void)state;
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		double off = vlan_hosts_share(modes[m], false, false);
		double on = vlan_hosts_share(modes[m], true, false);
		double flipped = vlan_hosts_share(modes[m], true, true);

		SIM_FIGURE("isolation %d: VLAN 10's host share %.3f by address, %.3f per VLAN, "
			   "%.3f after a live switch",
			   (int)modes[m], off, on, flipped);
		assert_true(off > 0.08 && off < 0.15);
		assert_true(on > 0.45 && on < 0.55);
		if (modes[m] == SCHED_SRCHOST || modes[m] == SCHED_HOSTS) {
			/*
			 * Here a host is a queue: what was queued stays in the old
			 * shared queue (1/9 VLAN 10's), new packets go to one queue
			 * per VLAN; three queues in turn give VLAN 10 1/3 + 1/27.
			 */
			assert_true(fabs(flipped - 10.0 / 27) < 0.05);
		} else {
			assert_true(flipped > 0.45 && flipped < 0.55);
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_host_set),
		cmocka_unit_test(test_overlimits),
		cmocka_unit_test(test_diffserv8_shares),
		cmocka_unit_test(test_precedence_shares),
		cmocka_unit_test(test_frames_through_classifier),
		cmocka_unit_test(test_vlan_hosts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
