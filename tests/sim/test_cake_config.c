/*
 * CAKE numbers that follow from the configuration alone (sch_cake's tins, sch_cake's COBALT,
 * sch_cake's cake_overhead(), sch_cake's cake_drop(), the Piece of CAKE paper's figures): tin
 * thresholds, quanta, COBALT target/interval, memory limits, DSCP maps, overhead compensation and
 * the 1/sqrt table.
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

#include "sched/cobalt.h"
#include "sim.h"

#define MBIT(x) ((uint64_t)(x)*125000ull)

static void
cake_params(struct sched_params *p, uint64_t rate)
{
	sched_params_default(p, SCHED_DISC_CAKE);
	p->rate = rate;
}

static struct sched *
mk(const struct sched_params *p)
{
	char err[128] = "";
	struct sched *s = sched_create(p, err, sizeof(err));

	if (s == NULL)
		fail_msg("sched_create: %s", err);
	return s;
}

/* ------------------------------------------------------------ COBALT maths */

static void
test_invsqrt_table(void **state)
{
	uint32_t y = 0xffffffffu, c, i;

	(void)state;
	assert_int_equal(cobalt_rec_inv_sqrt_cache[0], 0xffffffffu);
	for (c = 1; c < COBALT_CACHE_LEN; c++) {
		for (i = 0; i < 4; i++)
			y = cobalt_newton_step(y, c);
		assert_int_equal(cobalt_rec_inv_sqrt_cache[c], y);
		/* Four steps from the previous entry land within 0.1 %. */
		assert_true(fabs(y / 4294967296.0 - 1 / sqrt(c)) < 1e-3);
	}
	/* One step per increment keeps tracking 1/sqrt(count) closely. */
	for (c = COBALT_CACHE_LEN; c < 1000000; c++) {
		y = cobalt_newton_step(y, c);
		if (c % 1000 == 0)
			assert_true(fabs(y / 4294967296.0 * sqrt(c) - 1) < 1e-3);
	}
	/* The control law: interval / sqrt(count), also past 2^32 ns. */
	assert_int_equal(cobalt_control(0, 100000000, cobalt_rec_inv_sqrt_cache[4]), 49999999);
	assert_true(llabs((long long)cobalt_control(5, 1000000000000ull,
						    cobalt_rec_inv_sqrt_cache[4]) -
			  500000000005ll) < 1000);
}

/* ------------------------ config-derived numbers (the Piece of CAKE paper's) */

static void
enqueue_one(struct sched *s, struct sh_pkt *pkt, uint32_t len, uint8_t dscp, uint64_t now)
{
	struct sh_pkt_list dropped;

	memset(pkt, 0, sizeof(*pkt));
	pkt->len = len;
	pkt->mem = len;
	pkt->net_off = 14;
	pkt->l3_off = SH_OFF_NONE;
	pkt->l4_off = SH_OFF_NONE;
	pkt->dscp = dscp;
	pkt->flow_hash = 0x1234u + dscp;
	sh_pkt_list_init(&dropped);
	assert_int_equal(sched_enqueue(s, pkt, now, &dropped), 0);
	assert_int_equal(dropped.count, 0);
}

/*
 * Without overhead settings the size extremes are noted once per burst:
 * they must be those of every frame, wherever in the burst the smallest
 * and the largest are (the last one included).
 */
static void
test_size_stats_burst(void **state)
{
	static struct sh_pkt pkts[40];
	struct sh_pkt *burst[8];
	struct sched_params p;
	struct sched_stats st;
	struct sh_pkt_list dropped, out;
	struct sched *s;
	uint32_t i, j, lo = UINT32_MAX, hi = 0;

	(void)state;
	cake_params(&p, 0); /* unlimited, no overhead settings */
	s = mk(&p);
	sh_pkt_list_init(&dropped);
	for (i = 0; i < 5; i++) {
		for (j = 0; j < 8; j++) {
			struct sh_pkt *pkt = &pkts[i * 8 + j];
			/* Burst i has its extremes last (i even) or first (i odd). */
			uint32_t len = 100 + 10 * (i % 2 ? 7 - j : j) + 200 * i;

			memset(pkt, 0, sizeof(*pkt));
			pkt->len = pkt->mem = len;
			pkt->net_off = 14;
			pkt->l3_off = pkt->l4_off = SH_OFF_NONE;
			pkt->flow_hash = 0x1000u + j;
			burst[j] = pkt;
			lo = len < lo ? len : lo;
			hi = len > hi ? len : hi;
		}
		assert_int_equal(sched_enqueue_burst(s, burst, 8, i, &dropped), 0);
		sched_get_stats(s, &st);
		assert_int_equal(st.min_network_size, lo);
		assert_int_equal(st.max_network_size, hi);
		assert_int_equal(st.min_adj_size, lo);
		assert_int_equal(st.max_adj_size, hi);
	}
	assert_int_equal(dropped.count, 0);
	assert_int_equal(lo, 100);
	assert_int_equal(hi, 100 + 70 + 800);
	sh_pkt_list_init(&out);
	sched_flush(s, &out);
	assert_int_equal(out.count, 40);
	sched_free(s);
}

static void
test_config_100mbit_ethernet(void **state)
{
	static struct sh_pkt pkts[2000];
	struct sched_params p;
	struct sched_stats st;
	struct sh_pkt_list out;
	struct sched *s;
	uint32_t i;

	(void)state;
	cake_params(&p, MBIT(100));
	p.overhead_mode = true; /* "ethernet": overhead 38, mpu 84 */
	p.overhead = 38;
	p.mpu = 84;
	s = mk(&p);
	sched_get_stats(s, &st);
	assert_int_equal(st.memory_limit, 5000000);
	assert_int_equal(st.capacity_estimate, MBIT(100));
	assert_int_equal(st.tin_count, 3);
	assert_string_equal(st.tins[0].name, "Bulk");
	assert_string_equal(st.tins[1].name, "Best Effort");
	assert_string_equal(st.tins[2].name, "Voice");
	assert_int_equal(st.tins[0].threshold_rate, 6250000 / 8);
	assert_int_equal(st.tins[1].threshold_rate, 100000000 / 8);
	assert_int_equal(st.tins[2].threshold_rate, 25000000 / 8);
	for (i = 0; i < 3; i++) {
		assert_int_equal(st.tins[i].target_us, 5000);
		assert_int_equal(st.tins[i].interval_us, 100000);
	}
	assert_int_equal(st.tins[0].flow_quantum, 300);
	assert_int_equal(st.tins[1].flow_quantum, 1514);
	assert_int_equal(st.tins[2].flow_quantum, 762);

	/* After traffic: 28-byte and 1500-byte IP packets behind Ethernet. */
	for (i = 0; i < 2000; i++)
		enqueue_one(s, &pkts[i], i % 2 ? 14 + 1500 : 14 + 28, 0, i);
	assert_int_equal(pkts[0].adj_len, 84);
	assert_int_equal(pkts[1].adj_len, 1538);
	sched_get_stats(s, &st);
	assert_int_equal(st.min_network_size, 28);
	assert_int_equal(st.max_network_size, 1500);
	assert_int_equal(st.min_adj_size, 84);
	assert_int_equal(st.max_adj_size, 1538);
	assert_int_equal(st.avg_hdr_offset, 14);
	assert_int_equal(st.tins[1].sent_packets, 2000);
	assert_int_equal(st.tins[1].max_pkt_len, 1514);
	sh_pkt_list_init(&out);
	sched_flush(s, &out);
	assert_int_equal(out.count, 2000);
	/* Flushed in queue order. */
	assert_ptr_equal(out.head, &pkts[0]);
	assert_ptr_equal(out.tail, &pkts[1999]);
	sched_free(s);
}

static void
test_memlimit_derivation(void **state)
{
	static const struct {
		uint64_t rate, memlimit;
		uint32_t rtt_us;
		uint64_t expect;
	} cases[] = {
		{ MBIT(100), 0, 100000, 5000000 },
		{ MBIT(200), 0, 100000, 10000000 },
		{ MBIT(400), 0, 100000, 15503360 }, /* capped at 10240 x 1514 */
		{ MBIT(50), 0, 100000, 4194304 },   /* floor 4 MiB */
		{ 0, 0, 100000, 15503360 },         /* unlimited rate */
		{ MBIT(100), 0, 300000, 15000000 }, /* oceanic rtt */
		{ MBIT(100), 1000, 100000, 1000 },  /* explicit memlimit */
		{ MBIT(100), 32u << 20, 100000, 32u << 20 },
	};
	struct sched_params p;
	struct sched_stats st;
	uint32_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sched *s;

		cake_params(&p, cases[i].rate);
		p.memlimit = cases[i].memlimit;
		p.rtt_us = cases[i].rtt_us;
		s = mk(&p);
		sched_get_stats(s, &st);
		assert_int_equal(st.memory_limit, cases[i].expect);
		sched_free(s);
	}
}

/* sch_cake's cake_set_rate(): low-rate auto-tuning of quantum, target and interval. */
static void
test_low_rate_table(void **state)
{
	static const struct {
		uint64_t rate;
		uint32_t quantum, target_us, interval_us;
	} cases[] = {
		{ MBIT(1), 300, 18168, 113168 },    { MBIT(2), 300, 9084, 104084 },
		{ MBIT(5), 300, 5000, 100000 },     { MBIT(10), 305, 5000, 100000 },
		{ MBIT(20), 610, 5000, 100000 },    { MBIT(50), 1514, 5000, 100000 },
		{ MBIT(1000), 1514, 5000, 100000 }, { 0, 1514, 5000, 100000 },
	};
	struct sched_params p;
	struct sched_stats st;
	uint32_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sched *s;

		cake_params(&p, cases[i].rate);
		p.diffserv = SCHED_BESTEFFORT;
		s = mk(&p);
		sched_get_stats(s, &st);
		assert_int_equal(st.tin_count, 1);
		assert_string_equal(st.tins[0].name, "Tin 0");
		assert_int_equal(st.tins[0].flow_quantum, cases[i].quantum);
		assert_int_equal(st.tins[0].target_us, cases[i].target_us);
		assert_int_equal(st.tins[0].interval_us, cases[i].interval_us);
		sched_free(s);
	}

	/* Low-threshold tins get their own longer targets: Bulk at 10 Mbit. */
	{
		struct sched *s;

		cake_params(&p, MBIT(10));
		s = mk(&p);
		sched_get_stats(s, &st);
		assert_string_equal(st.tins[0].name, "Bulk");
		assert_int_equal(st.tins[0].threshold_rate, 78125);
		assert_int_equal(st.tins[0].flow_quantum, 300);
		assert_int_equal(st.tins[0].target_us, 29068); /* 1.5 x 19.38 ms */
		assert_int_equal(st.tins[0].interval_us, 124068);
		assert_int_equal(st.tins[1].target_us, 5000);
		sched_free(s);
	}
	/* rtt "lan" (1 ms, target 50 us) at 100 Mbit: target rises to 1.5 MTU. */
	{
		struct sched *s;

		cake_params(&p, MBIT(100));
		p.diffserv = SCHED_BESTEFFORT;
		p.rtt_us = 1000;
		p.target_us = 50;
		s = mk(&p);
		sched_get_stats(s, &st);
		assert_int_equal(st.tins[0].target_us, 181);
		assert_int_equal(st.tins[0].interval_us, 1131);
		sched_free(s);
	}
}

/* sch_cake's cake_config_diffserv*() tables thresholds and quanta of every mode, in display order.
 */
static void
test_tin_thresholds(void **state)
{
	static const uint16_t q8[] = { 256, 224, 196, 171, 149, 130, 113, 98 };
	struct sched_params p;
	struct sched_stats st;
	struct sched *s;
	uint64_t r = MBIT(100), t;
	uint32_t i;

	(void)state;
	cake_params(&p, r);
	p.diffserv = SCHED_DIFFSERV4;
	s = mk(&p);
	sched_get_stats(s, &st);
	assert_int_equal(st.tin_count, 4);
	assert_string_equal(st.tins[0].name, "Bulk");
	assert_string_equal(st.tins[1].name, "Best Effort");
	assert_string_equal(st.tins[2].name, "Video");
	assert_string_equal(st.tins[3].name, "Voice");
	assert_int_equal(st.tins[0].threshold_rate, r / 16);
	assert_int_equal(st.tins[1].threshold_rate, r);
	assert_int_equal(st.tins[2].threshold_rate, r / 2);
	assert_int_equal(st.tins[3].threshold_rate, r / 4);
	sched_free(s);

	for (i = 0; i < 2; i++) {
		uint32_t k;

		p.diffserv = i ? SCHED_PRECEDENCE : SCHED_DIFFSERV8;
		s = mk(&p);
		sched_get_stats(s, &st);
		assert_int_equal(st.tin_count, 8);
		t = r;
		for (k = 0; k < 8; k++) {
			char name[16];

			snprintf(name, sizeof(name), "Tin %u", k);
			assert_string_equal(st.tins[k].name, name);
			assert_int_equal(st.tins[k].threshold_rate, t);
			/* The tin quantum is internal; the flow quantum follows the rate. */
			t = t * 7 / 8;
		}
		(void)q8;
		sched_free(s);
	}
}

/* ------------------------------------------------------------- DSCP maps */

/* Expected user-visible tin (display column) per mode, written from sch_cake's
 * cake_config_diffserv*() tables. */
static int
expect_col(enum sched_diffserv mode, unsigned int d)
{
	switch (mode) {
	case SCHED_BESTEFFORT:
		return 0;
	case SCHED_PRECEDENCE:
		return (int)(d >> 3);
	case SCHED_DIFFSERV3:
		/* columns: Bulk, Best Effort, Voice */
		if (d == 1 || d == 8)
			return 0;
		if (d == 4 || d == 44 || d == 46 || d == 48 || d == 56)
			return 2;
		return 1;
	case SCHED_DIFFSERV4:
		/* columns: Bulk, Best Effort, Video, Voice */
		if (d == 1 || d == 8)
			return 0;
		if (d == 4 || d == 16 || d == 18 || d == 20 || d == 22 || d == 24 || d == 26 ||
		    d == 28 || d == 30 || d == 34 || d == 36 || d == 38)
			return 2;
		if (d == 32 || d == 40 || d == 44 || d == 46 || d == 48 || d == 56)
			return 3;
		return 1;
	case SCHED_DIFFSERV8:
		if (d == 1)
			return 0;
		if (d == 2 || d == 8 || d == 10 || d == 12 || d == 14)
			return 1;
		if (d == 24 || d == 26 || d == 28 || d == 30 || d == 34 || d == 36 || d == 38)
			return 3;
		if (d == 4 || d == 18 || d == 20 || d == 22)
			return 4;
		if (d == 16)
			return 5;
		if (d == 32 || d == 40 || d == 44 || d == 46)
			return 6;
		if (d == 48 || d == 56)
			return 7;
		return 2;
	}
	return -1;
}

static void
test_dscp_maps(void **state)
{
	static const enum sched_diffserv modes[] = {
		SCHED_BESTEFFORT, SCHED_PRECEDENCE, SCHED_DIFFSERV3,
		SCHED_DIFFSERV4,  SCHED_DIFFSERV8,
	};
	static struct sh_pkt pkts[64];
	struct sched_params p;
	uint32_t m, d;

	(void)state;
	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		uint64_t want[SCHED_MAX_TINS] = { 0 };
		struct sched_stats st;
		struct sh_pkt_list out;
		struct sched *s;

		cake_params(&p, MBIT(100));
		p.diffserv = modes[m];
		s = mk(&p);
		for (d = 0; d < 64; d++) {
			/* Each codepoint in its own tin, one packet each. */
			enqueue_one(s, &pkts[d], 100, (uint8_t)d, d);
			want[expect_col(modes[m], d)]++;
		}
		sched_get_stats(s, &st);
		for (d = 0; d < st.tin_count; d++)
			assert_int_equal(st.tins[d].sent_packets, want[d]);
		/* And the internal tin recorded per packet matches the column. */
		for (d = 0; d < 64; d++) {
			int col = expect_col(modes[m], d);
			uint8_t internal = pkts[d].tin;

			if (modes[m] == SCHED_DIFFSERV3 || modes[m] == SCHED_DIFFSERV4)
				internal = internal == 0 ? 1 : internal == 1 ? 0 : internal;
			assert_int_equal(internal, col);
		}
		sh_pkt_list_init(&out);
		sched_flush(s, &out);
		assert_int_equal(out.count, 64);
		sched_free(s);
	}
}

/* Wash clears the DSCP on the wire but still classifies by the original. */
static void
test_wash(void **state)
{
	static struct sim_pkt sp;
	struct sim_src src = sim_src_udp(sim_ip(1, 0, 1), sim_ip(2, 0, 1), 1000, 0, 200);
	struct sched_params p;
	struct sched_stats st;
	struct sh_pkt_list dropped;
	struct sched *s;

	(void)state;
	cake_params(&p, MBIT(100));
	p.wash = true;
	s = mk(&p);
	src.dscp = 46; /* EF -> Voice */
	src.ecn = 2;
	sim_build(&src, &sp, 200);
	sp.pkt.mem = 200;
	sh_pkt_list_init(&dropped);
	assert_int_equal(sched_enqueue(s, &sp.pkt, 0, &dropped), 0);
	sched_get_stats(s, &st);
	assert_int_equal(st.tins[2].sent_packets, 1); /* Voice column */
	assert_int_equal(sp.buf[15], 2);              /* DSCP 0, ECT(0) kept */
	assert_int_equal(sim_ipv4_csum(sp.buf + 14, 20), 0);
	assert_ptr_equal(sched_dequeue(s, 0, &dropped), &sp.pkt);
	sched_free(s);
}

/* ----------------------------------------------------- overhead (sch_cake's cake_overhead()) */

struct oh_case {
	const char *name;
	bool mode;
	int32_t overhead;
	uint32_t mpu;
	enum sched_framing framing;
};

/* Written independently of rate.h: cells and PTM bytes by counting. */
static uint32_t
expect_adj(const struct oh_case *c, uint32_t len)
{
	int64_t n = len - (c->mode ? 14 : 0);
	uint32_t cells, extra;

	n += c->overhead;
	if (n < (int64_t)c->mpu)
		n = c->mpu;
	if (c->framing == SCHED_FRAMING_ATM) {
		for (cells = 0; (int64_t)cells * 48 < n; cells++)
			;
		return cells * 53;
	}
	if (c->framing == SCHED_FRAMING_PTM) {
		for (extra = 0; (int64_t)extra * 64 < n; extra++)
			;
		return (uint32_t)n + extra;
	}
	return (uint32_t)n;
}

static void
test_overhead(void **state)
{
	static const struct oh_case cases[] = {
		{ "raw", false, 0, 0, SCHED_FRAMING_NONE },
		{ "ethernet", true, 38, 84, SCHED_FRAMING_NONE },
		{ "docsis", true, 18, 64, SCHED_FRAMING_NONE },
		{ "conservative", true, 48, 0, SCHED_FRAMING_ATM },
		{ "pppoe-vcmux", true, 32, 0, SCHED_FRAMING_ATM },
		{ "pppoa-llc", true, 14, 0, SCHED_FRAMING_ATM },
		{ "bridged-ptm", true, 22, 0, SCHED_FRAMING_PTM },
		{ "pppoe-ptm", true, 30, 0, SCHED_FRAMING_PTM },
		{ "overhead -10 mpu 64", true, -10, 64, SCHED_FRAMING_NONE },
		{ "raw overhead 4 ptm", false, 4, 0, SCHED_FRAMING_PTM },
	};
	static struct sh_pkt pkts[1518 - 40 + 1];
	uint32_t c, len, n = 1518 - 40 + 1;

	(void)state;
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct sched_params p;
		struct sh_pkt_list dropped;
		struct sched *s;
		uint64_t now = 0, prev_t = 0;
		uint32_t got = 0;
		struct sh_pkt *prev = NULL;

		cake_params(&p, MBIT(1000)); /* exactly 8 ns per byte */
		p.diffserv = SCHED_BESTEFFORT;
		p.overhead_mode = cases[c].mode;
		p.overhead = cases[c].overhead;
		p.mpu = cases[c].mpu;
		p.framing = cases[c].framing;
		p.rtt_us = 10000000; /* no AQM while the queue drains */
		p.target_us = 1000000;
		s = mk(&p);
		for (len = 40; len <= 1518; len++)
			enqueue_one(s, &pkts[len - 40], len, 0, 0);
		for (len = 40; len <= 1518; len++)
			assert_int_equal(pkts[len - 40].adj_len, expect_adj(&cases[c], len));
		/* The shaper charges exactly adj_len: departures 8 ns/byte apart. */
		sh_pkt_list_init(&dropped);
		while (got < n) {
			struct sh_pkt *d;

			now = sched_next_time(s, now);
			d = sched_dequeue(s, now, &dropped);
			assert_non_null(d);
			assert_ptr_equal(d, &pkts[got]);
			if (prev != NULL)
				assert_int_equal(now - prev_t, (uint64_t)prev->adj_len * 8);
			prev = d;
			prev_t = now;
			got++;
		}
		assert_int_equal(dropped.count, 0);
		assert_int_equal(sched_next_time(s, now), UINT64_MAX);
		sched_free(s);
	}
}

/* Bad parameters are refused with a reason; zero times are bumped. */
static void
test_validation(void **state)
{
	struct sched_params p;
	char err[128];
	struct sched *s;

	(void)state;
	cake_params(&p, MBIT(10));
	p.overhead = 300;
	err[0] = 0;
	assert_null(sched_create(&p, err, sizeof(err)));
	assert_non_null(strstr(err, "overhead"));
	cake_params(&p, MBIT(10));
	p.mpu = 257;
	assert_null(sched_create(&p, err, sizeof(err)));
	cake_params(&p, MBIT(10));
	p.diffserv = 9;
	assert_null(sched_create(&p, err, sizeof(err)));
	cake_params(&p, MBIT(10));
	p.isolation = 8;
	assert_null(sched_create(&p, err, sizeof(err)));
	cake_params(&p, MBIT(10));
	p.rtt_us = 0;
	p.target_us = 0;
	s = sched_create(&p, err, sizeof(err));
	assert_non_null(s);
	cake_params(&p, MBIT(10));
	p.mtu = 10;
	assert_int_equal(sched_update(s, &p, err, sizeof(err)), -22);
	sched_free(s);
}

/*
 * A share-group rate change recomputes only the rate-derived fields: every
 * tin must then read as in a scheduler configured at that rate from the
 * start, in every diffserv mode (thresholds, quantum, target, interval).
 */
static void
test_set_rate_matches_create(void **state)
{
	static const enum sched_diffserv modes[] = { SCHED_BESTEFFORT, SCHED_DIFFSERV3,
						     SCHED_DIFFSERV4, SCHED_DIFFSERV8,
						     SCHED_PRECEDENCE };
	static const uint64_t rates[] = { MBIT(1), MBIT(7), MBIT(100), MBIT(5000) };
	struct sched_params p;
	struct sched_stats *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	uint32_t m, r, t;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
		for (r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
			struct sched *fresh, *moved;

			cake_params(&p, rates[r]);
			p.diffserv = modes[m];
			fresh = mk(&p);
			p.rate = MBIT(33);
			moved = mk(&p);
			assert_int_equal(sched_set_rate(moved, rates[r], 1000000), 0);
			sched_get_stats(fresh, a);
			sched_get_stats(moved, b);
			assert_int_equal(a->tin_count, b->tin_count);
			for (t = 0; t < a->tin_count; t++) {
				assert_string_equal(a->tins[t].name, b->tins[t].name);
				assert_int_equal(a->tins[t].threshold_rate,
						 b->tins[t].threshold_rate);
				assert_int_equal(a->tins[t].flow_quantum, b->tins[t].flow_quantum);
				assert_int_equal(a->tins[t].target_us, b->tins[t].target_us);
				assert_int_equal(a->tins[t].interval_us, b->tins[t].interval_us);
			}
			sched_free(fresh);
			sched_free(moved);
		}
	free(a);
	free(b);
}

/*
 * A rate change rescales the clocks of tins that left the scan too: a
 * tin drained after a diffserv change, its clock ahead, must come back
 * with the clock the rate change gave it. Diffserv4 at 8 Mbit: a
 * full-size Voice packet puts Voice's clock 6.056 ms ahead; besteffort
 * retires the tin (its clock capped to 1.514 ms by the resync); the share
 * drops to a quarter (clock 6.056 ms); back in diffserv4 Voice is not due
 * at 2 ms, so a Video packet goes first. Left at 1.514 ms, Voice would be
 * due and, the later tin, served first.
 */
static void
test_set_rate_rescales_retired_tins(void **state)
{
	static struct sh_pkt pkt[4];
	struct sh_pkt_list dropped;
	struct sched_params p;
	struct sched *s;
	struct sh_pkt *d;

	(void)state;
	cake_params(&p, MBIT(8));
	p.diffserv = SCHED_DIFFSERV4;
	s = mk(&p);
	sh_pkt_list_init(&dropped);
	enqueue_one(s, &pkt[0], 1514, 46, 0); /* EF: Voice, a quarter of the rate */
	assert_ptr_equal(sched_dequeue(s, 0, &dropped), &pkt[0]);
	p.diffserv = SCHED_BESTEFFORT;
	assert_int_equal(sched_update(s, &p, NULL, 0), 0);
	enqueue_one(s, &pkt[1], 64, 0, 0); /* runs the resync */
	assert_int_equal(sched_set_rate(s, MBIT(2), 0), 0);
	p.diffserv = SCHED_DIFFSERV4;
	assert_int_equal(sched_update(s, &p, NULL, 0), 0);
	enqueue_one(s, &pkt[2], 64, 46, 0);
	enqueue_one(s, &pkt[3], 64, 34, 0); /* AF41: Video */
	d = sched_dequeue(s, 2000000, &dropped);
	assert_ptr_equal(d, &pkt[3]);
	assert_int_equal(dropped.count, 0);
	sched_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invsqrt_table),
		cmocka_unit_test(test_size_stats_burst),
		cmocka_unit_test(test_config_100mbit_ethernet),
		cmocka_unit_test(test_memlimit_derivation),
		cmocka_unit_test(test_low_rate_table),
		cmocka_unit_test(test_tin_thresholds),
		cmocka_unit_test(test_dscp_maps),
		cmocka_unit_test(test_wash),
		cmocka_unit_test(test_overhead),
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_set_rate_matches_create),
		cmocka_unit_test(test_set_rate_rescales_retired_tins),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
