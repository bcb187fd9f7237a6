/*
 * Passive RTT from crafted frames: timestamps echoed both ways (WAN and LAN
 * side) over IPv4 and IPv6, repeated and older TSvals, one TSval in flight,
 * wraparound of TSval and sequence numbers, sequence/ACK sampling with
 * Karn's rule, Ethernet padding, eviction of the least recently seen flow
 * once idle, the baseline (a flow's own and its remote host's) and the
 * histogram.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/classify.h"
#include "shaper/rtt.h"
#include "pktbuild.h"

#define MS(x)           ((uint64_t)(x)*1000000ull)
#define IP4(a, b, c, d) (((uint32_t)(a) << 24) | ((b) << 16) | ((c) << 8) | (d))

static const uint8_t v6lan[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
static const uint8_t v6wan[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2 };

#define LAN_IP   IP4(192, 168, 1, 10)
#define WAN_IP   IP4(203, 0, 113, 5)
#define LAN_PORT 40000
#define WAN_PORT 443

static struct classify_key key;
static struct pb buf;
static struct sh_pkt pkt;

/* Options NOP NOP TS, or none when ts is false. */
struct seg {
	int v6;
	enum rtt_dir dir;
	uint32_t seq, ack;
	uint8_t flags;
	int ts;
	uint32_t tsval, tsecr;
	uint32_t payload;
	uint16_t lan_port;   /* 0: LAN_PORT */
	uint16_t vlan;       /* an 802.1Q tag with this id (IPv4 only); 0: untagged */
	uint32_t wan_ip;     /* the remote host (IPv4); 0: WAN_IP */
	const uint8_t *wan6; /* the remote host (IPv6); NULL: v6wan */
	const uint8_t *opt;  /* other options (a multiple of 4 bytes, optlen), in place of ts */
	uint8_t optlen;
};

/* A SYN's options as Windows sends them by default: MSS, NOP, WS, NOP, NOP, SACK permitted. */
static const uint8_t win_syn_opt[12] = { 2, 4, 0x05, 0xb4, 1, 3, 3, 8, 1, 1, 4, 2 };

static const struct sh_pkt *
build(const struct seg *s)
{
	uint8_t opt[12] = { 1, 1, 8, 10 };
	uint16_t lp = s->lan_port ? s->lan_port : LAN_PORT;
	uint16_t sport = s->dir == RTT_UP ? lp : WAN_PORT;
	uint16_t dport = s->dir == RTT_UP ? WAN_PORT : lp;
	uint32_t wan_ip = s->wan_ip ? s->wan_ip : WAN_IP;
	const uint8_t *wan6 = s->wan6 ? s->wan6 : v6wan;

	opt[4] = (uint8_t)(s->tsval >> 24), opt[5] = (uint8_t)(s->tsval >> 16);
	opt[6] = (uint8_t)(s->tsval >> 8), opt[7] = (uint8_t)s->tsval;
	opt[8] = (uint8_t)(s->tsecr >> 24), opt[9] = (uint8_t)(s->tsecr >> 16);
	opt[10] = (uint8_t)(s->tsecr >> 8), opt[11] = (uint8_t)s->tsecr;
	const uint8_t *o = s->opt != NULL ? s->opt : s->ts ? opt : NULL;
	uint8_t olen = s->opt != NULL ? s->optlen : s->ts ? 12 : 0;

	if (s->v6) {
		pb_init(&buf);
		pb_eth_macs(&buf, 1, 2);
		pb_u16(&buf, 0x86dd);
		pb_ipv6(&buf, s->dir == RTT_UP ? v6lan : wan6, s->dir == RTT_UP ? wan6 : v6lan, 6,
			0, 0);
		pb_tcp(&buf, sport, dport, s->seq, s->ack, s->flags, o, olen);
		for (uint32_t i = 0; i < s->payload; i++)
			pb_u8(&buf, (uint8_t)i);
		pb_finish(&buf);
	} else {
		pb_ipv4_tcp(&buf, s->dir == RTT_UP ? LAN_IP : wan_ip,
			    s->dir == RTT_UP ? wan_ip : LAN_IP, sport, dport, s->seq, s->ack,
			    s->flags, o, olen, s->payload);
	}
	if (s->vlan != 0) {
		/* Tag the finished frame: the IP and TCP bytes do not change. */
		memmove(buf.b + 16, buf.b + 12, buf.len - 12);
		buf.b[12] = 0x81, buf.b[13] = 0x00;
		buf.b[14] = (uint8_t)(s->vlan >> 8), buf.b[15] = (uint8_t)s->vlan;
		buf.len += 4;
	}
	while (buf.len < 60)
		pb_u8(&buf, 0); /* Ethernet padding, not payload */
	pb_to_pkt(&buf, &pkt);
	classify_pkt(&pkt, &key);
	return &pkt;
}

/* The flow of these addresses and ports (family 4 or 6), as dp_rtt_facts finds it. */
static const struct rtt_flow *
find(const struct rtt_table *t, uint8_t family, const uint8_t *a, const uint8_t *b, uint16_t pa,
     uint16_t pb)
{
	return rtt_find(t, classify_flow_hash(&key, family, a, b, pa, pb, 6));
}

/* Feed one segment; returns the sample's RTT in ns, or 0 if none. */
static uint64_t
feed(struct rtt_table *t, const struct seg *s, uint64_t now, struct rtt_sample *out)
{
	struct rtt_sample tmp;

	if (out == NULL)
		out = &tmp;
	return rtt_observe(t, build(s), s->dir, now, out) ? out->rtt_ns : 0;
}

static void
ts_both_sides(int v6)
{
	struct rtt_table *t = rtt_table_new(64);
	struct rtt_sample smp;
	struct seg up = { .v6 = v6, .dir = RTT_UP, .flags = PB_ACK, .ts = 1, .payload = 100 };
	struct seg dn = { .v6 = v6, .dir = RTT_DOWN, .flags = PB_ACK, .ts = 1 };
	const struct rtt_flow *f;
	uint8_t lan4[4] = { 192, 168, 1, 10 }, wan4[4] = { 203, 0, 113, 5 };
	uint64_t lo, hi;

	assert_non_null(t);
	up.tsval = 1000, up.tsecr = 7000;
	assert_int_equal(feed(t, &up, MS(100), NULL), 0);
	/* R echoes 1000 40 ms later: the WAN side. */
	dn.tsval = 9000, dn.tsecr = 1000;
	assert_int_equal(feed(t, &dn, MS(140), &smp), MS(40));
	assert_int_equal(smp.side, RTT_SIDE_WAN);
	assert_int_equal(smp.method, RTT_BY_TIMESTAMP);
	assert_int_equal(smp.base_ns, MS(40));
	/* L echoes 9000 1.5 ms after it came in: the LAN side. */
	up.tsval = 1001, up.tsecr = 9000;
	assert_int_equal(feed(t, &up, MS(140) + 1500000, &smp), 1500000);
	assert_int_equal(smp.side, RTT_SIDE_LAN);

	f = v6 ? find(t, 6, v6lan, v6wan, LAN_PORT, WAN_PORT)
	       : find(t, 4, lan4, wan4, LAN_PORT, WAN_PORT);
	assert_non_null(f);
	assert_int_equal(f->last_us[RTT_SIDE_WAN], 40000);
	assert_int_equal(f->last_us[RTT_SIDE_LAN], 1500);
	assert_int_equal(t->hist[RTT_SIDE_WAN].samples, 1);
	assert_int_equal(t->hist[RTT_SIDE_LAN].samples, 1);
	/* The interval's range of each side, then a new interval without samples. */
	rtt_range_take(t, RTT_SIDE_WAN, &lo, &hi);
	assert_int_equal(lo, MS(40));
	assert_int_equal(hi, MS(40));
	rtt_range_take(t, RTT_SIDE_WAN, &lo, &hi);
	assert_int_equal(lo, 0);
	assert_int_equal(hi, 0);
	rtt_range_take(t, RTT_SIDE_LAN, &lo, &hi);
	assert_int_equal(lo, 1500000);
	assert_int_equal(hi, 1500000);
	/* Either way round it is one flow; another port is another. */
	assert_ptr_equal(f, v6 ? find(t, 6, v6wan, v6lan, WAN_PORT, LAN_PORT)
			       : find(t, 4, wan4, lan4, WAN_PORT, LAN_PORT));
	assert_null(v6 ? find(t, 6, v6lan, v6wan, LAN_PORT + 1, WAN_PORT)
		       : find(t, 4, lan4, wan4, LAN_PORT + 1, WAN_PORT));
	rtt_table_free(t);
}

static void
test_ts_ipv4(void **state)
{
	(void)state;
	ts_both_sides(0);
}

static void
test_ts_ipv6(void **state)
{
	(void)state;
	ts_both_sides(1);
}

/*
 * A connection on a VLAN: its two directions are one flow of the table (the
 * flow hash takes in the VLAN id the same both ways), found again by its
 * addresses, ports and VLAN; the same addresses and ports on another VLAN
 * are another connection.
 */
static void
test_ts_vlan(void **state)
{
	struct rtt_table *t = rtt_table_new(64);
	struct rtt_sample smp;
	struct seg up = { .dir = RTT_UP, .flags = PB_ACK, .ts = 1, .payload = 100, .vlan = 10 };
	struct seg dn = { .dir = RTT_DOWN, .flags = PB_ACK, .ts = 1, .vlan = 10 };
	const uint8_t lan4[4] = { 192, 168, 1, 10 }, wan4[4] = { 203, 0, 113, 5 };
	const struct rtt_flow *f;

	(void)state;
	assert_non_null(t);
	up.tsval = 1000, up.tsecr = 7000;
	assert_int_equal(feed(t, &up, MS(100), NULL), 0);
	dn.tsval = 9000, dn.tsecr = 1000;
	assert_int_equal(feed(t, &dn, MS(140), &smp), MS(40));
	assert_int_equal(smp.side, RTT_SIDE_WAN);
	f = rtt_find(t, classify_flow_hash_vlan(&key, 10u << 12, 4, lan4, wan4, LAN_PORT, WAN_PORT,
						6));
	assert_non_null(f);
	assert_int_equal(f->last_us[RTT_SIDE_WAN], 40000);
	assert_null(find(t, 4, lan4, wan4, LAN_PORT, WAN_PORT)); /* not the untagged flow */
	/* VLAN 20's echo of the same TSval matches nothing: its own flow, no sample */
	dn.vlan = 20;
	assert_int_equal(feed(t, &dn, MS(150), NULL), 0);
	assert_int_equal(t->hist[RTT_SIDE_WAN].samples, 1);
	rtt_table_free(t);
}

/* A TSval sent again keeps its first time; a second echo, and an older TSval, give nothing. */
static void
test_ts_repeats(void **state)
{
	struct rtt_table *t = rtt_table_new(64);
	struct seg up = { .dir = RTT_UP, .flags = PB_ACK, .ts = 1, .payload = 1000 };
	struct seg dn = { .dir = RTT_DOWN, .flags = PB_ACK, .ts = 1, .tsval = 50 };

	(void)state;
	up.tsval = 500;
	feed(t, &up, MS(0), NULL);
	feed(t, &up, MS(5), NULL); /* same TSval, a later segment of the burst */
	up.tsval = 499;            /* older: not recorded */
	feed(t, &up, MS(6), NULL);
	dn.tsecr = 500;
	assert_int_equal(feed(t, &dn, MS(30), NULL), MS(30));
	assert_int_equal(feed(t, &dn, MS(31), NULL), 0); /* duplicate echo */
	dn.tsecr = 499;
	assert_int_equal(feed(t, &dn, MS(32), NULL), 0);
	/* An echo without the ACK flag, and an echo of 0, are not samples. */
	up.tsval = 600;
	feed(t, &up, MS(40), NULL);
	dn.tsecr = 600, dn.flags = 0;
	assert_int_equal(feed(t, &dn, MS(50), NULL), 0);
	dn.flags = PB_ACK;
	assert_int_equal(feed(t, &dn, MS(51), NULL), MS(11));
	assert_int_equal(t->c.samples, 2);
	rtt_table_free(t);
}

/*
 * A sample is timed from when its packet left our own queue: the WAN side
 * leaves out the time the upstream scheduler held it. Only the first packet
 * of the armed TSval counts; a repeat departing later does not move it, nor
 * does a packet of another TSval.
 */
static void
test_departed(void **state)
{
	struct rtt_table *t = rtt_table_new(64);
	struct seg up = { .dir = RTT_UP, .flags = PB_ACK, .ts = 1, .payload = 1000, .tsval = 700 };
	struct seg dn = { .dir = RTT_DOWN, .flags = PB_ACK, .ts = 1, .tsval = 50 };
	struct sh_pkt *burst[] = { &pkt };

	(void)state;
	feed(t, &up, MS(0), NULL); /* armed at enqueue */
	up.tsval = 701;
	build(&up);
	rtt_departed(t, burst, 1, RTT_UP, MS(10)); /* not the armed TSval */
	up.tsval = 700;
	build(&up);
	rtt_departed(t, burst, 1, RTT_DOWN, MS(12)); /* the other direction's queue */
	rtt_departed(t, burst, 1, RTT_UP, MS(15));   /* it left our queue 15 ms on */
	rtt_departed(t, burst, 1, RTT_UP, MS(25));   /* a repeat leaving later: no change */
	dn.tsecr = 700;
	assert_int_equal(feed(t, &dn, MS(55), NULL), MS(40)); /* not 55 */
	/* Armed again: timed from its enqueue until it departs. */
	up.tsval = 800;
	feed(t, &up, MS(60), NULL);
	dn.tsecr = 800;
	assert_int_equal(feed(t, &dn, MS(100), NULL), MS(40));
	rtt_table_free(t);
}

/*
 * A receiver that acknowledges every second segment echoes the first only
 * when the second arrived: the sample carries the time from the sampled
 * segment's departure to the next data segment's of the flow (gap_us), with
 * or without timestamps. Pure ACKs following the sampled one (a download's)
 * are not such a segment.
 */
static void
test_departed_gap(void **state)
{
	struct rtt_table *t = rtt_table_new(64);
	struct seg up = { .dir = RTT_UP, .flags = PB_ACK, .ts = 1, .payload = 1000, .tsval = 700 };
	struct seg dn = { .dir = RTT_DOWN, .flags = PB_ACK, .ts = 1, .tsval = 50 };
	struct sh_pkt *burst[] = { &pkt };
	struct rtt_sample smp;

	(void)state;
	feed(t, &up, MS(0), NULL);
	rtt_departed(t, burst, 1, RTT_UP, MS(5)); /* the sampled segment leaves */
	up.tsval = 720;
	feed(t, &up, MS(6), NULL);
	rtt_departed(t, burst, 1, RTT_UP, MS(25)); /* the next one, 20 ms behind it */
	up.tsval = 740;
	feed(t, &up, MS(26), NULL);
	rtt_departed(t, burst, 1, RTT_UP, MS(45)); /* only the first successor counts */
	dn.tsecr = 700;
	assert_int_equal(feed(t, &dn, MS(70), &smp), MS(65));
	assert_int_equal(smp.gap_us, 20000);
	/* None left before the echo: no gap. */
	up.tsval = 800;
	feed(t, &up, MS(80), NULL);
	rtt_departed(t, burst, 1, RTT_UP, MS(81));
	dn.tsecr = 800;
	assert_int_equal(feed(t, &dn, MS(120), &smp), MS(39));
	assert_int_equal(smp.gap_us, 0);
	/* A download's ACKs going up carry no data: no gap. */
	up.tsval = 900, up.payload = 0;
	feed(t, &up, MS(130), NULL);
	rtt_departed(t, burst, 1, RTT_UP, MS(130));
	up.tsval = 910;
	feed(t, &up, MS(140), NULL);
	rtt_departed(t, burst, 1, RTT_UP, MS(140));
	dn.tsecr = 900, dn.payload = 1000;
	assert_int_equal(feed(t, &dn, MS(170), &smp), MS(40));
	assert_int_equal(smp.gap_us, 0);
	rtt_table_free(t);
	/* Without timestamps: the next segment by sequence. */
	t = rtt_table_new(64);
	struct seg u = { .dir = RTT_UP, .flags = PB_ACK, .seq = 1000, .payload = 1000 };
	struct seg d = { .dir = RTT_DOWN, .flags = PB_ACK };

	feed(t, &u, MS(0), NULL);
	rtt_departed(t, burst, 1, RTT_UP, MS(1));
	u.seq = 2000;
	feed(t, &u, MS(2), NULL);
	rtt_departed(t, burst, 1, RTT_UP, MS(31));
	d.ack = 3000;
	assert_int_equal(feed(t, &d, MS(61), &smp), MS(60));
	assert_int_equal(smp.gap_us, 30000);
	rtt_table_free(t);
}

/*
 * One TSval per direction in flight: the ones sent while it awaits its echo
 * are not timed; an echo of a later TSval (the one in flight was never
 * echoed itself, e.g. its segment was lost) ends it without a sample.
 */
static void
test_ts_one_in_flight(void **state)
{
	struct rtt_table *t = rtt_table_new(64);
	struct seg up = { .dir = RTT_UP, .flags = PB_ACK, .ts = 1, .payload = 1000 };
	struct seg dn = { .dir = RTT_DOWN, .flags = PB_ACK, .ts = 1, .tsval = 50 };

	(void)state;
	for (uint32_t i = 0; i < 6; i++) {
		up.tsval = 100 + i;
		feed(t, &up, MS(i), NULL);
	}
	assert_int_equal(t->c.ts_full, 5); /* 101..105 sent while 100 was in flight */
	dn.tsecr = 100;
	assert_int_equal(feed(t, &dn, MS(22), NULL), MS(22));
	dn.tsecr = 103; /* 103 was never timed */
	assert_int_equal(feed(t, &dn, MS(23), NULL), 0);
	up.tsval = 106;
	feed(t, &up, MS(30), NULL);
	dn.tsecr = 105; /* older than the one in flight: it stays */
	assert_int_equal(feed(t, &dn, MS(31), NULL), 0);
	dn.tsecr = 106;
	assert_int_equal(feed(t, &dn, MS(33), NULL), MS(3));
	/* 107 is never echoed: the echo of 108 ends it, and 109 is timed. */
	up.tsval = 107;
	feed(t, &up, MS(40), NULL);
	up.tsval = 108;
	feed(t, &up, MS(41), NULL);
	dn.tsecr = 108;
	assert_int_equal(feed(t, &dn, MS(45), NULL), 0);
	up.tsval = 109;
	feed(t, &up, MS(50), NULL);
	dn.tsecr = 109;
	assert_int_equal(feed(t, &dn, MS(52), NULL), MS(2));
	assert_int_equal(t->c.samples, 3);
	rtt_table_free(t);
}

/* TSvals and sequence numbers wrap through zero. */
static void
test_wraparound(void **state)
{
	struct rtt_table *t = rtt_table_new(64);
	struct seg up = { .dir = RTT_UP, .flags = PB_ACK, .ts = 1, .payload = 1000 };
	struct seg dn = { .dir = RTT_DOWN, .flags = PB_ACK, .ts = 1, .tsval = 50 };
	struct seg sd = { .dir = RTT_UP, .flags = PB_ACK, .payload = 1000, .lan_port = 40001 };
	struct seg sa = { .dir = RTT_DOWN, .flags = PB_ACK, .lan_port = 40001 };

	(void)state;
	up.tsval = 0xfffffffeu;
	feed(t, &up, MS(0), NULL);
	dn.tsecr = 0xfffffffeu;
	assert_int_equal(feed(t, &dn, MS(40), NULL), MS(40));
	up.tsval = 2; /* after 0xfffffffe in serial order: timed */
	feed(t, &up, MS(41), NULL);
	dn.tsecr = 2;
	assert_int_equal(feed(t, &dn, MS(61), NULL), MS(20));
	up.tsval = 0xffffffffu; /* before 2: not timed */
	feed(t, &up, MS(70), NULL);
	dn.tsecr = 0xffffffffu;
	assert_int_equal(feed(t, &dn, MS(80), NULL), 0);

	sd.seq = 0xffffff00u; /* the segment ends past zero */
	feed(t, &sd, MS(100), NULL);
	sa.ack = 0xffffff00u + 1000u;
	assert_int_equal(feed(t, &sa, MS(125), NULL), MS(25));
	rtt_table_free(t);
}

/* Without timestamps: one segment at a time, none across a retransmission. */
static void
test_seq_sampling(void **state)
{
	struct rtt_table *t = rtt_table_new(64);
	struct seg d = { .dir = RTT_UP, .flags = PB_ACK, .payload = 1000 };
	struct seg a = { .dir = RTT_DOWN, .flags = PB_ACK };
	struct rtt_sample smp;

	(void)state;
	d.seq = 1000;
	feed(t, &d, MS(0), NULL);
	d.seq = 2000; /* sent while the first is sampled: not timed */
	feed(t, &d, MS(1), NULL);
	a.ack = 1500; /* covers only part of it */
	assert_int_equal(feed(t, &a, MS(10), NULL), 0);
	a.ack = 2000;
	assert_int_equal(feed(t, &a, MS(30), &smp), MS(30));
	assert_int_equal(smp.method, RTT_BY_SEQUENCE);
	assert_int_equal(smp.side, RTT_SIDE_WAN);
	a.ack = 3000; /* nothing armed */
	assert_int_equal(feed(t, &a, MS(31), NULL), 0);

	/* A retransmission of the sampled segment: its ACK is not a sample. */
	d.seq = 3000;
	feed(t, &d, MS(40), NULL);
	feed(t, &d, MS(90), NULL);
	a.ack = 4000;
	assert_int_equal(feed(t, &a, MS(95), NULL), 0);
	assert_int_equal(t->c.karn, 1);

	/* The LAN side: data coming down, acknowledged by the LAN host. */
	a.seq = 77, a.payload = 500, a.ack = 4000;
	feed(t, &a, MS(100), NULL);
	d.payload = 0, d.seq = 4000, d.ack = 577;
	assert_int_equal(feed(t, &d, MS(102), &smp), MS(2));
	assert_int_equal(smp.side, RTT_SIDE_LAN);
	rtt_table_free(t);
}

/*
 * A connection without timestamps (Windows' default): SYN up, SYN-ACK down
 * is a WAN-side handshake sample, SYN-ACK to the LAN host's first ACK a
 * LAN-side one; then an upload's segment and the ACK covering it are
 * sequence samples, counted apart. A SYN sent again is not timed (Karn).
 */
static void
handshake(int v6)
{
	struct rtt_table *t = rtt_table_new(64);
	struct seg syn = { .v6 = v6, .dir = RTT_UP, .flags = PB_SYN, .seq = 5000 };
	struct seg synack = { .v6 = v6, .dir = RTT_DOWN, .flags = PB_SYN | PB_ACK, .seq = 90000 };
	struct seg ack = { .v6 = v6, .dir = RTT_UP, .flags = PB_ACK, .seq = 5001, .ack = 90001 };
	struct seg back = { .v6 = v6, .dir = RTT_DOWN, .flags = PB_ACK, .seq = 90001 };
	struct rtt_sample smp;

	assert_non_null(t);
	syn.opt = synack.opt = win_syn_opt, syn.optlen = synack.optlen = 12;
	synack.ack = 5001;
	assert_int_equal(feed(t, &syn, MS(10), NULL), 0);
	assert_int_equal(feed(t, &synack, MS(45), &smp), MS(35));
	assert_int_equal(smp.side, RTT_SIDE_WAN);
	assert_int_equal(smp.method, RTT_BY_HANDSHAKE);
	assert_false(smp.established); /* never against itself */
	assert_int_equal(feed(t, &ack, MS(46), &smp), MS(1));
	assert_int_equal(smp.side, RTT_SIDE_LAN);
	assert_int_equal(smp.method, RTT_BY_HANDSHAKE);
	/* Upload data, and the ACK covering it coming down: a sequence sample. */
	ack.payload = 1000;
	feed(t, &ack, MS(50), NULL);
	back.ack = 6001;
	assert_int_equal(feed(t, &back, MS(90), &smp), MS(40));
	assert_int_equal(smp.method, RTT_BY_SEQUENCE);
	assert_int_equal(t->c.by_method[RTT_SIDE_WAN][RTT_BY_HANDSHAKE], 1);
	assert_int_equal(t->c.by_method[RTT_SIDE_LAN][RTT_BY_HANDSHAKE], 1);
	assert_int_equal(t->c.by_method[RTT_SIDE_WAN][RTT_BY_SEQUENCE], 1);
	assert_int_equal(t->c.by_method[RTT_SIDE_WAN][RTT_BY_TIMESTAMP], 0);
	assert_int_equal(t->c.judged[RTT_BY_HANDSHAKE] + t->c.judged[RTT_BY_SEQUENCE], 0);

	/* A second connection whose SYN is sent again: its SYN-ACK answers either copy. */
	syn.lan_port = synack.lan_port = 40001;
	feed(t, &syn, MS(100), NULL);
	feed(t, &syn, MS(1100), NULL);
	assert_int_equal(feed(t, &synack, MS(1130), NULL), 0);
	assert_int_equal(t->c.karn, 1);
	/* A third to the same host: its handshake is judged by the first one's. */
	syn.lan_port = synack.lan_port = 40002;
	feed(t, &syn, MS(1200), NULL);
	assert_int_equal(feed(t, &synack, MS(1260), &smp), MS(60));
	assert_true(smp.established);
	assert_int_equal(smp.base_ns, MS(35));
	assert_int_equal(t->c.judged[RTT_BY_HANDSHAKE], 1);
	rtt_table_free(t);
}

static void
test_handshake_v4(void **state)
{
	(void)state;
	handshake(0);
}

static void
test_handshake_v6(void **state)
{
	(void)state;
	handshake(1);
}

/*
 * With timestamps the handshake is timed by them, and still counted as the
 * handshake's. A SYN's options as Linux lays them out: MSS, SACK permitted,
 * TS, NOP, WS (not the NOP NOP TS of the later segments).
 */
static void
test_handshake_ts(void **state)
{
	/* TSval 100 on the SYN; TSval 7000 echoing 100 on the SYN-ACK. */
	static const uint8_t syn_opt[20] = { 2, 4,   5, 0xb4, 4, 2, 8, 10, 0, 0,
					     0, 100, 0, 0,    0, 0, 1, 3,  3, 7 };
	static const uint8_t synack_opt[20] = { 2,    4,    5, 0xb4, 4, 2,   8, 10, 0, 0,
						0x1b, 0x58, 0, 0,    0, 100, 1, 3,  3, 7 };
	struct rtt_table *t = rtt_table_new(64);
	struct seg syn = { .dir = RTT_UP, .flags = PB_SYN, .seq = 1, .opt = syn_opt, .optlen = 20 };
	struct seg synack = {
		.dir = RTT_DOWN, .flags = PB_SYN | PB_ACK, .ack = 2, .opt = synack_opt, .optlen = 20
	};
	struct seg up = { .dir = RTT_UP, .flags = PB_ACK, .seq = 2, .ts = 1, .payload = 100 };
	struct seg dn = { .dir = RTT_DOWN, .flags = PB_ACK, .ts = 1 };
	struct rtt_sample smp;

	(void)state;
	feed(t, &syn, MS(0), NULL);
	assert_int_equal(feed(t, &synack, MS(30), &smp), MS(30));
	assert_int_equal(smp.method, RTT_BY_HANDSHAKE);
	up.tsval = 101, up.tsecr = 7000;
	assert_int_equal(feed(t, &up, MS(31), &smp), MS(1));
	assert_int_equal(smp.method, RTT_BY_HANDSHAKE);
	dn.tsval = 7001, dn.tsecr = 101;
	assert_int_equal(feed(t, &dn, MS(61), &smp), MS(30));
	assert_int_equal(smp.method, RTT_BY_TIMESTAMP);
	/* A flow first seen after its handshake has no handshake samples. */
	up.lan_port = dn.lan_port = 40009;
	up.tsval = 500;
	feed(t, &up, MS(70), NULL);
	dn.tsecr = 500;
	assert_int_equal(feed(t, &dn, MS(100), &smp), MS(30));
	assert_int_equal(smp.method, RTT_BY_TIMESTAMP);
	rtt_table_free(t);
}

/*
 * Without timestamps too, the sample in flight is timed from when its
 * segment left shaperd's queue (rtt_departed), not from its enqueue.
 */
static void
test_departed_seq(void **state)
{
	struct rtt_table *t = rtt_table_new(64);
	struct seg up = { .dir = RTT_UP, .flags = PB_ACK, .seq = 1000, .payload = 500 };
	struct seg dn = { .dir = RTT_DOWN, .flags = PB_ACK, .ack = 1500 };
	struct sh_pkt *burst[] = { &pkt };

	(void)state;
	feed(t, &up, MS(0), NULL);
	up.seq = 1500;
	build(&up);
	rtt_departed(t, burst, 1, RTT_UP, MS(5)); /* not the awaited segment */
	up.seq = 1000;
	build(&up);
	rtt_departed(t, burst, 1, RTT_UP, MS(20));
	rtt_departed(t, burst, 1, RTT_UP, MS(30)); /* a copy leaving later: no change */
	assert_int_equal(feed(t, &dn, MS(60), NULL), MS(40));
	rtt_table_free(t);
}

/*
 * rtt_observe_burst_ts hands back the TSvals of the packets it parsed, the
 * ones rtt_tsval reads, in order (the downstream tap's one-way timing), and
 * takes the same samples as rtt_observe_burst.
 */
static void
test_burst_tsvals(void **state)
{
	static struct pb bufs[7];
	static struct sh_pkt pk[7];
	struct rtt_table *t1 = rtt_table_new(64), *t2 = rtt_table_new(64);
	/* MSS, then the timestamp option (TSval 77): not the usual layout, so walked. */
	static const uint8_t mss_ts[16] = { 2, 4, 5, 0xb4, 1, 1, 8, 10, 0, 0, 0, 77, 0, 0, 0, 0 };
	struct seg s[7] = {
		{ .dir = RTT_DOWN, .flags = PB_ACK, .ts = 1, .tsval = 11, .payload = 10 },
		{ .dir = RTT_DOWN, .flags = PB_ACK, .seq = 7, .payload = 10, .lan_port = 1 },
		{ .dir = RTT_DOWN, .flags = PB_SYN | PB_ACK, .ts = 1, .tsval = 33, .lan_port = 2 },
		{ .dir = RTT_DOWN,
		  .flags = PB_ACK,
		  .opt = win_syn_opt,
		  .optlen = 12,
		  .lan_port = 3 },
		{ .dir = RTT_DOWN,
		  .flags = PB_ACK,
		  .ts = 1,
		  .tsval = 55,
		  .tsecr = 9,
		  .lan_port = 4 },
		{ .dir = RTT_DOWN, .flags = PB_ACK, .ts = 1, .tsval = 66, .lan_port = 5 },
		{ .dir = RTT_DOWN, .flags = PB_ACK, .opt = mss_ts, .optlen = 16, .lan_port = 6 },
	};
	struct sh_pkt *burst[7];
	struct rtt_sample a[7], b[7];
	struct rtt_tsval tv[7];
	unsigned int na, nb, nts, k = 0;
	struct seg up = { .dir = RTT_UP, .flags = PB_ACK, .ts = 1, .tsval = 9, .lan_port = 4 };

	(void)state;
	assert_non_null(t1);
	assert_non_null(t2);
	/* Flow 4 has a TSval in flight, so the burst completes a sample. */
	feed(t1, &up, MS(0), NULL);
	feed(t2, &up, MS(0), NULL);
	for (int i = 0; i < 7; i++) {
		build(&s[i]);
		bufs[i] = buf;
		pk[i] = pkt;
		pk[i].data = bufs[i].b;
		burst[i] = &pk[i];
	}
	na = rtt_observe_burst(t1, burst, 7, RTT_DOWN, MS(20), a);
	nb = rtt_observe_burst_ts(t2, burst, 7, RTT_DOWN, MS(20), b, tv, &nts);
	assert_int_equal(na, 1);
	assert_int_equal(nb, na);
	assert_int_equal(b[0].rtt_ns, a[0].rtt_ns);
	for (int i = 0; i < 7; i++) {
		uint32_t v;

		if (!rtt_tsval(burst[i], &v))
			continue;
		assert_true(k < nts);
		assert_int_equal(tv[k].tsval, v);
		assert_int_equal(tv[k].flow_hash, burst[i]->flow_hash);
		k++;
	}
	assert_int_equal(k, 5);
	assert_int_equal(tv[4].tsval, 77);
	assert_int_equal(nts, k);
	rtt_table_free(t1);
	rtt_table_free(t2);
}

/* Bare ACKs padded to 60 bytes carry no data; a flow never seen is not created for them. */
static void
test_padding_and_bare_acks(void **state)
{
	struct rtt_table *t = rtt_table_new(64);
	struct seg a = { .dir = RTT_DOWN, .flags = PB_ACK, .ack = 5 };
	uint8_t lan4[4] = { 192, 168, 1, 10 }, wan4[4] = { 203, 0, 113, 5 };

	(void)state;
	assert_int_equal(feed(t, &a, MS(0), NULL), 0);
	assert_int_equal(buf.len, 60);
	assert_null(find(t, 4, lan4, wan4, LAN_PORT, WAN_PORT));
	rtt_table_free(t);
}

/*
 * A full bucket evicts its least recently seen flow once that has been idle
 * for RTT_IDLE_NS; before, the new flow is not timed. Memory stays as
 * allocated.
 */
static void
test_eviction(void **state)
{
	struct rtt_table *t = rtt_table_new(RTT_BUCKET_WAYS); /* one bucket */
	struct seg up = { .dir = RTT_UP, .flags = PB_ACK, .ts = 1, .tsval = 10, .payload = 10 };
	struct seg dn = { .dir = RTT_DOWN, .flags = PB_ACK, .ts = 1, .tsval = 10, .tsecr = 10 };
	uint8_t lan4[4] = { 192, 168, 1, 10 }, wan4[4] = { 203, 0, 113, 5 };
	uint64_t t0 = MS(5000);

	(void)state;
	assert_int_equal(t->mask, 0);
	for (uint16_t i = 0; i < RTT_BUCKET_WAYS; i++) {
		up.lan_port = (uint16_t)(1000 + i);
		feed(t, &up, t0 + MS(i), NULL);
	}
	/* Flow 1000 is seen again: 1001 is now the oldest. */
	up.lan_port = 1000, up.tsval = 11;
	feed(t, &up, t0 + MS(10), NULL);
	/* All were seen within RTT_IDLE_NS: 2000 is not timed, nobody is evicted. */
	up.lan_port = 2000, up.tsval = 10;
	feed(t, &up, t0 + MS(11), NULL);
	assert_int_equal(t->c.evictions, 0);
	assert_int_equal(t->c.no_room, 1);
	assert_null(find(t, 4, lan4, wan4, 2000, WAN_PORT));
	/* A second later 1001 has been idle long enough to go. */
	feed(t, &up, t0 + MS(1) + RTT_IDLE_NS + MS(1), NULL);
	assert_int_equal(t->c.evictions, 1);
	assert_null(find(t, 4, lan4, wan4, 1001, WAN_PORT));
	assert_non_null(find(t, 4, lan4, wan4, 1000, WAN_PORT));
	assert_non_null(find(t, 4, lan4, wan4, 1002, WAN_PORT));
	assert_non_null(find(t, 4, lan4, wan4, 2000, WAN_PORT));
	/* The evicted flow's echo finds nothing to match; the new one's does. */
	dn.lan_port = 1001;
	assert_int_equal(feed(t, &dn, t0 + RTT_IDLE_NS + MS(20), NULL), 0);
	dn.lan_port = 2000;
	assert_int_equal(feed(t, &dn, t0 + RTT_IDLE_NS + MS(20), NULL), MS(18));
	rtt_table_free(t);
}

/* The baseline is the lowest sample of this window and the one before. */
static void
test_baseline(void **state)
{
	struct rtt_table *t = rtt_table_new(64);
	struct seg up = { .dir = RTT_UP, .flags = PB_ACK, .ts = 1, .payload = 10 };
	struct seg dn = { .dir = RTT_DOWN, .flags = PB_ACK, .ts = 1, .tsval = 1 };
	struct rtt_sample smp;
	uint64_t now = MS(1);
	uint32_t v = 1;

	(void)state;
	/* 20 ms for a while, then 60 ms (a queue) for 25 s. */
	for (int i = 0; i < 400; i++, v++) {
		uint64_t r = i < 100 ? MS(20) : MS(60);

		up.tsval = v;
		feed(t, &up, now, NULL);
		dn.tsecr = v;
		assert_int_equal(feed(t, &dn, now + r, &smp), r);
		/* Against earlier samples only: the first two (the handshake's among them) do not
		 * count. */
		assert_int_equal(smp.established, i >= RTT_BASE_SAMPLES);
		if (i < 100 || now < MS(10000))
			assert_int_equal(smp.base_ns, MS(20));
		now += MS(80);
	}
	/* Two windows without 20 ms: the baseline has moved up. */
	assert_int_equal(smp.base_ns, MS(60));
	/* A sample below the baseline is measured against the earlier ones, not itself. */
	up.tsval = v;
	feed(t, &up, now, NULL);
	dn.tsecr = v++;
	assert_int_equal(feed(t, &dn, now + MS(30), &smp), MS(30));
	assert_int_equal(smp.base_ns, MS(60));
	now += MS(80);
	up.tsval = v;
	feed(t, &up, now, NULL);
	dn.tsecr = v;
	assert_int_equal(feed(t, &dn, now + MS(35), &smp), MS(35));
	assert_int_equal(smp.base_ns, MS(30));
	rtt_table_free(t);
}

/* One WAN-side sample of RTT r on the flow of LAN port lp to the host of seg proto. */
static void
host_sample(struct rtt_table *t, const struct seg *proto, uint16_t lp, uint32_t *v, uint64_t now,
	    uint64_t r, struct rtt_sample *smp)
{
	struct seg up = *proto, dn = *proto;

	up.dir = RTT_UP, up.lan_port = lp, up.tsval = *v, up.payload = 10;
	dn.dir = RTT_DOWN, dn.lan_port = lp, dn.tsval = 1, dn.tsecr = *v, dn.payload = 0;
	(*v)++;
	feed(t, &up, now, NULL);
	assert_int_equal(feed(t, &dn, now + r, smp), r);
}

/*
 * A new flow to a host known from other flows (its /24, or /48) is judged
 * from its first sample against their baseline, never against its own
 * handshake; another prefix is not; a host without samples for two
 * windows starts over; an established flow takes the lower of its own and
 * its host's.
 */
static void
host_baseline(int v6)
{
	static const uint8_t same48[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 9, 0xff, 0,
					    0,    0,    0,    0,    0, 0, 0,    7 };
	static const uint8_t other48[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 10, 0, 0,
					     0,    0,    0,    0,    0, 0,  0, 2 };
	struct rtt_table *t = rtt_table_new(64);
	struct seg a = { .v6 = v6, .flags = PB_ACK, .ts = 1 };
	struct seg same = a, other = a;
	struct rtt_sample smp;
	uint64_t now = MS(1);
	uint32_t v = 100;

	assert_non_null(t);
	same.wan_ip = IP4(203, 0, 113, 77), same.wan6 = same48;
	other.wan_ip = IP4(203, 0, 114, 5), other.wan6 = other48;
	/* Flow 1 alone: its second sample is not judged against its own handshake. */
	host_sample(t, &a, 1001, &v, now, MS(20), &smp);
	assert_false(smp.established);
	host_sample(t, &a, 1001, &v, now += MS(50), MS(21), &smp);
	assert_false(smp.established);
	host_sample(t, &a, 1001, &v, now += MS(50), MS(22), &smp);
	assert_true(smp.established);
	assert_int_equal(smp.base_ns, MS(20));
	/* A new flow to another address of the prefix, under a queue: judged at once. */
	host_sample(t, &same, 2001, &v, now += MS(50), MS(60), &smp);
	assert_true(smp.established);
	assert_int_equal(smp.base_ns, MS(20));
	assert_int_equal(t->c.host_based, 1);
	/* Its next samples too, though its own baseline (60 ms) says "no queue". */
	host_sample(t, &same, 2001, &v, now += MS(60), MS(61), &smp);
	assert_int_equal(smp.base_ns, MS(20));
	host_sample(t, &same, 2001, &v, now += MS(60), MS(62), &smp);
	host_sample(t, &same, 2001, &v, now += MS(60), MS(60), &smp);
	assert_true(smp.established);
	assert_int_equal(smp.base_ns, MS(20));
	/* Another prefix is another host. */
	host_sample(t, &other, 3001, &v, now += MS(50), MS(30), &smp);
	assert_false(smp.established);
	/* Flow 1 below the host's: an established flow keeps its own lower baseline. */
	host_sample(t, &a, 1001, &v, now += MS(50), MS(25), &smp);
	assert_int_equal(smp.base_ns, MS(20));
	/* Two windows without a sample: the host starts over. */
	now += 2 * RTT_BASE_WIN_NS + MS(100);
	host_sample(t, &same, 4001, &v, now, MS(40), &smp);
	assert_false(smp.established);
	/* ... and flow 4's first sample is now the host's: flow 5 is judged against it. */
	host_sample(t, &same, 5001, &v, now += MS(50), MS(55), &smp);
	assert_true(smp.established);
	assert_int_equal(smp.base_ns, MS(40));
	rtt_table_free(t);
}

static void
test_host_baseline_v4(void **state)
{
	(void)state;
	host_baseline(0);
}

static void
test_host_baseline_v6(void **state)
{
	(void)state;
	host_baseline(1);
}

/*
 * Frames with random bytes flipped, cut short at random, each in an exactly
 * sized heap copy: test_rtt_asan (AddressSanitizer) fails on any read past
 * hdr_len.
 */
static void
test_mangled_frames(void **state)
{
	struct rtt_table *t = rtt_table_new(64);
	struct seg sg = { .flags = PB_ACK, .ts = 1, .tsval = 7, .tsecr = 7, .payload = 40 };
	uint32_t x = 12345;

	(void)state;
	for (int i = 0; i < 20000; i++) {
		struct rtt_sample smp;
		uint8_t *copy;
		uint32_t len;

		sg.v6 = i & 1;
		sg.dir = (i >> 1) & 1 ? RTT_UP : RTT_DOWN;
		build(&sg);
		for (int k = 0; k < 4; k++) {
			x = x * 1103515245u + 12345u;
			buf.b[(x >> 8) % buf.len] ^= (uint8_t)(x >> 24);
		}
		x = x * 1103515245u + 12345u;
		len = 1 + (x >> 8) % buf.len;
		/* An exactly sized heap copy, so a sanitizer build sees any overread. */
		copy = malloc(len);
		assert_non_null(copy);
		memcpy(copy, buf.b, len);
		memset(&pkt, 0, sizeof(pkt));
		pkt.data = copy;
		pkt.len = pkt.hdr_len = len;
		classify_pkt(&pkt, &key);
		rtt_observe(t, &pkt, sg.dir, MS(i), &smp);
		free(copy);
	}
	/* About half are cut inside the headers; the rest still reach the TCP parse (7702). */
	assert_in_range(t->c.packets, 5000, 15000);
	rtt_table_free(t);
}

static void
test_histogram(void **state)
{
	struct rtt_hist h, h0, d;

	(void)state;
	assert_int_equal(rtt_hist_bucket(0), 0);
	assert_int_equal(rtt_hist_bucket(99999), 0);
	assert_int_equal(rtt_hist_bucket(100000), 1);
	for (unsigned int b = 1; b < RTT_HIST_BUCKETS; b++) {
		assert_true(rtt_hist_lower_ns(b) > rtt_hist_lower_ns(b - 1));
		assert_int_equal(rtt_hist_bucket(rtt_hist_lower_ns(b)), b);
		assert_int_equal(rtt_hist_bucket(rtt_hist_lower_ns(b) - 1), b - 1);
	}
	assert_int_equal(rtt_hist_bucket(UINT64_MAX), RTT_HIST_BUCKETS - 1);

	memset(&h, 0, sizeof(h));
	memset(&h0, 0, sizeof(h0));
	for (int i = 0; i < 98; i++)
		h.count[rtt_hist_bucket(MS(20))]++;
	h.count[rtt_hist_bucket(MS(200))] += 2;
	h0 = h;
	/* Within a half-octave bucket: 16..24 ms around 20 ms. */
	assert_in_range(rtt_hist_percentile(&h, 50), MS(16), MS(24));
	/* 200 ms falls in [153.6, 204.8) ms. */
	assert_in_range(rtt_hist_percentile(&h, 99), MS(153), MS(205));
	h.count[rtt_hist_bucket(MS(5))] += 10;
	rtt_hist_diff(&h, &h0, &d);
	assert_in_range(rtt_hist_percentile(&d, 50), MS(4), MS(6));
	memset(&d, 0, sizeof(d));
	assert_int_equal(rtt_hist_percentile(&d, 50), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ts_ipv4),
		cmocka_unit_test(test_ts_ipv6),
		cmocka_unit_test(test_ts_vlan),
		cmocka_unit_test(test_ts_repeats),
		cmocka_unit_test(test_departed),
		cmocka_unit_test(test_departed_gap),
		cmocka_unit_test(test_ts_one_in_flight),
		cmocka_unit_test(test_wraparound),
		cmocka_unit_test(test_seq_sampling),
		cmocka_unit_test(test_padding_and_bare_acks),
		cmocka_unit_test(test_handshake_v4),
		cmocka_unit_test(test_handshake_v6),
		cmocka_unit_test(test_handshake_ts),
		cmocka_unit_test(test_departed_seq),
		cmocka_unit_test(test_burst_tsvals),
		cmocka_unit_test(test_eviction),
		cmocka_unit_test(test_baseline),
		cmocka_unit_test(test_host_baseline_v4),
		cmocka_unit_test(test_host_baseline_v6),
		cmocka_unit_test(test_mangled_frames),
		cmocka_unit_test(test_histogram),
	};

	classify_key_init(&key, 42);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
