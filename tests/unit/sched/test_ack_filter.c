/*
 * ACK filter tests (sch_cake's cake_ack_filter()): which queued ACK a new one makes
 * redundant, in conservative and aggressive mode, for IPv4, IPv6 and 6in4;
 * and every kind of ACK that carries information (data, flags, options,
 * SACK news, D-SACK, newer timestamps, duplicate ACKs, ECN transitions) or
 * belongs to another flow staying in the queue.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/classify.h"
#include "sched/ack_filter.h"
#include "pktbuild.h"

#define QMAX            64
#define IP4(a, b, c, d) (((uint32_t)(a) << 24) | ((b) << 16) | ((c) << 8) | (d))

static const uint8_t v6a[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
static const uint8_t v6b[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2 };

enum af_family {
	FAM_V4,
	FAM_V6,
	FAM_6IN4
};

/* A flow queue of built packets. */
struct q {
	struct pb buf[QMAX];
	struct sh_pkt pkt[QMAX];
	struct sh_pkt *head, *tail;
	int n;
	struct classify_key key;
};

/* What goes into one segment. */
struct seg {
	enum af_family fam;
	uint32_t src; /* IPv4 source (or a tweak of the IPv6 source) */
	uint32_t dst; /* 0: 192.0.2.7 (IPv6: v6b); else as src */
	uint16_t sport;
	uint16_t dport;       /* 0: 443 */
	uint16_t ip_frag;     /* IPv4 flags and fragment offset; 0: DF */
	uint8_t ip_opt_words; /* IPv4 options (NOPs), in 4-byte words */
	uint32_t ack;
	uint8_t flags;
	const uint8_t *opts;
	uint32_t optlen;
	uint32_t payload;
	uint16_t vlan; /* an 802.1Q tag with this id; 0: untagged */
};

static struct q Q;

static void
q_reset(void)
{
	memset(&Q, 0, sizeof(Q));
	classify_key_init(&Q.key, 7);
}

static struct seg
ack(uint32_t a)
{
	struct seg s = {
		.fam = FAM_V4, .src = IP4(10, 0, 0, 1), .sport = 40000, .ack = a, .flags = PB_ACK
	};
	return s;
}

/* Build s and append it at the queue tail; returns the packet. */
static struct sh_pkt *
q_add(struct seg s)
{
	struct pb *b = &Q.buf[Q.n];
	struct sh_pkt *p = &Q.pkt[Q.n];
	uint8_t src6[16], dst6[16];
	uint32_t dst = s.dst != 0 ? s.dst : IP4(192, 0, 2, 7);

	assert_true(Q.n < QMAX);
	memcpy(src6, v6a, 16);
	src6[15] = (uint8_t)s.src;
	memcpy(dst6, v6b, 16);
	if (s.dst != 0)
		dst6[15] = (uint8_t)s.dst;
	pb_init(b);
	pb_eth_macs(b, 1, 2);
	if (s.vlan != 0)
		pb_vlan(b, 0x8100, s.vlan);
	if (s.fam == FAM_V4) {
		pb_u16(b, 0x0800);
		pb_ipv4(b, s.src, dst, 6, 0, s.ip_frag != 0 ? s.ip_frag : 0x4000, s.ip_opt_words);
	} else if (s.fam == FAM_V6) {
		pb_u16(b, 0x86dd);
		pb_ipv6(b, src6, dst6, 6, 0, 0);
	} else {
		pb_u16(b, 0x0800);
		pb_ipv4(b, IP4(198, 51, 100, 1), IP4(192, 0, 2, 7), 41, 0, 0, 0);
		pb_ipv6(b, src6, dst6, 6, 0, 0);
	}
	pb_tcp(b, s.sport, s.dport != 0 ? s.dport : 443, 1000, s.ack, s.flags, s.opts, s.optlen);
	for (uint32_t i = 0; i < s.payload; i++)
		pb_u8(b, 'x');
	pb_finish(b);
	pb_to_pkt(b, p);
	classify_pkt(p, &Q.key);
	if (Q.tail != NULL)
		Q.tail->next = p;
	else
		Q.head = p;
	Q.tail = p;
	Q.n++;
	return p;
}

/* Run the filter for the tail; unlink the victim like CAKE would. */
static struct sh_pkt *
q_filter(enum sched_ack_filter mode)
{
	struct sh_pkt *prev = (struct sh_pkt *)1, *v;

	v = ack_filter_find(Q.head, Q.tail, mode, &prev);
	if (v == NULL)
		return NULL;
	assert_ptr_not_equal(v, Q.tail);
	if (prev == NULL) {
		assert_ptr_equal(v, Q.head);
		Q.head = v->next;
	} else {
		assert_ptr_equal(prev->next, v);
		prev->next = v->next;
	}
	return v;
}

static int
q_len(void)
{
	int n = 0;

	for (struct sh_pkt *p = Q.head; p != NULL; p = p->next)
		n++;
	return n;
}

/* ---- pure ACK streams ---- */

static void
stream(enum af_family fam, enum sched_ack_filter mode, int keep)
{
	static const uint8_t ts_opts[] = { 1, 1, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0 };
	uint8_t opts[sizeof(ts_opts)];

	q_reset();
	for (uint32_t i = 1; i <= 40; i++) {
		struct seg s = ack(1000 * i);
		struct sh_pkt *before_tail = Q.tail, *v;

		/* non-decreasing timestamps, as a real receiver sends */
		memcpy(opts, ts_opts, sizeof(opts));
		opts[7] = (uint8_t)i;
		opts[11] = (uint8_t)(i / 2);
		s.fam = fam;
		s.opts = opts;
		s.optlen = sizeof(opts);
		q_add(s);
		v = q_filter(mode);
		if (i > (uint32_t)keep) {
			/* the oldest redundant ACK goes: the head here */
			assert_non_null(v);
			assert_true(v != Q.tail);
			if (mode == SCHED_ACK_FILTER_AGGRESSIVE)
				assert_ptr_equal(v, before_tail);
		} else {
			assert_null(v);
		}
		assert_int_equal(q_len(), i < (uint32_t)keep ? (int)i : keep);
	}
	/* the newest ACK (ack 40000) always survives, at the tail */
	{
		struct sh_pkt *last = Q.head;
		const uint8_t *th;

		while (last->next != NULL)
			last = last->next;
		assert_ptr_equal(last, Q.tail);
		th = last->data + last->l4_off;
		assert_int_equal(((uint32_t)th[8] << 24) | ((uint32_t)th[9] << 16) |
						 ((uint32_t)th[10] << 8) | th[11],
				 40000);
	}
}

static void
test_stream_conservative_keeps_two(void **state)
{
	(void)state;
	stream(FAM_V4, SCHED_ACK_FILTER_ON, 2);
	stream(FAM_V6, SCHED_ACK_FILTER_ON, 2);
	stream(FAM_6IN4, SCHED_ACK_FILTER_ON, 2);
}

static void
test_stream_aggressive_keeps_one(void **state)
{
	(void)state;
	stream(FAM_V4, SCHED_ACK_FILTER_AGGRESSIVE, 1);
	stream(FAM_V6, SCHED_ACK_FILTER_AGGRESSIVE, 1);
	stream(FAM_6IN4, SCHED_ACK_FILTER_AGGRESSIVE, 1);
}

static void
test_conservative_drops_oldest(void **state)
{
	struct sh_pkt *a1, *a2;

	(void)state;
	q_reset();
	a1 = q_add(ack(100));
	a2 = q_add(ack(200));
	assert_null(q_filter(SCHED_ACK_FILTER_ON));
	q_add(ack(300));
	assert_ptr_equal(q_filter(SCHED_ACK_FILTER_ON), a1);
	assert_ptr_equal(Q.head, a2);
}

static void
test_off_and_trivial(void **state)
{
	struct seg s;

	(void)state;
	q_reset();
	q_add(ack(100));
	assert_null(q_filter(SCHED_ACK_FILTER_AGGRESSIVE)); /* single packet */
	q_add(ack(200));
	q_add(ack(300));
	assert_null(q_filter(SCHED_ACK_FILTER_OFF));
	/* trigger without ACK, with SYN, or not TCP: nothing happens */
	s = ack(400);
	s.flags = PB_SYN | PB_ACK;
	q_add(s);
	assert_null(q_filter(SCHED_ACK_FILTER_AGGRESSIVE));
	s.flags = PB_RST;
	q_add(s);
	assert_null(q_filter(SCHED_ACK_FILTER_AGGRESSIVE));
}

static void
test_trigger_may_carry_data(void **state)
{
	struct sh_pkt *a1;
	struct seg s;

	(void)state;
	q_reset();
	a1 = q_add(ack(100));
	q_add(ack(200));
	s = ack(300);
	s.payload = 500;
	s.flags = PB_ACK | PB_PSH;
	q_add(s);
	assert_ptr_equal(q_filter(SCHED_ACK_FILTER_ON), a1);
}

/* ---- what must stay ---- */

static void
test_data_and_flags_stay(void **state)
{
	static const uint8_t bad_flags[] = { PB_FIN, PB_SYN, PB_RST, PB_PSH, PB_URG };
	struct sh_pkt *x, *a2;
	struct seg s;

	(void)state;
	/* baseline: a plain ACK in x's place is the victim */
	q_reset();
	x = q_add(ack(100));
	q_add(ack(200));
	q_add(ack(300));
	assert_ptr_equal(q_filter(SCHED_ACK_FILTER_ON), x);

	for (unsigned int i = 0; i <= sizeof(bad_flags); i++) {
		q_reset();
		s = ack(100);
		if (i < sizeof(bad_flags))
			s.flags |= bad_flags[i];
		else
			s.payload = 1; /* one byte of data */
		x = q_add(s);
		a2 = q_add(ack(200));
		q_add(ack(300));
		assert_ptr_equal(q_filter(SCHED_ACK_FILTER_ON), NULL);
		q_add(ack(400));
		/* x is skipped, the next redundant pair loses its oldest */
		assert_ptr_equal(q_filter(SCHED_ACK_FILTER_ON), a2);
		q_add(ack(500));
		assert_ptr_not_equal(q_filter(SCHED_ACK_FILTER_AGGRESSIVE), x);
		assert_ptr_equal(Q.head, x);
	}
	/* reserved / AE bits */
	q_reset();
	x = q_add(ack(100));
	Q.buf[0].b[Q.pkt[0].l4_off + 12] |= 0x01;
	q_add(ack(200));
	assert_ptr_not_equal(q_filter(SCHED_ACK_FILTER_AGGRESSIVE), x);
	q_add(ack(300));
	assert_ptr_not_equal(q_filter(SCHED_ACK_FILTER_ON), x);
	assert_ptr_equal(Q.head, x);
}

static void
test_duplicate_acks_stay(void **state)
{
	(void)state;
	/* equal cumulative ACKs without SACK are dupacks: fast retransmit needs them */
	q_reset();
	q_add(ack(100));
	q_add(ack(100));
	q_add(ack(100));
	assert_null(q_filter(SCHED_ACK_FILTER_ON));
	q_add(ack(100));
	assert_null(q_filter(SCHED_ACK_FILTER_AGGRESSIVE));
	/* an older ACK number in the trigger (reordering) removes nothing */
	q_reset();
	q_add(ack(500));
	q_add(ack(600));
	q_add(ack(400));
	assert_null(q_filter(SCHED_ACK_FILTER_AGGRESSIVE));
}

static void
test_ecn_transitions(void **state)
{
	struct sh_pkt *a1, *e2, *e3;
	struct seg s;

	(void)state;
	/* [a1, e2, e3] + e4: a1 is the last ACK without ECE: it stays */
	q_reset();
	a1 = q_add(ack(100));
	s = ack(200);
	s.flags |= PB_ECE;
	e2 = q_add(s);
	s.ack = 300;
	e3 = q_add(s);
	(void)e3;
	s.ack = 400;
	q_add(s);
	assert_ptr_equal(q_filter(SCHED_ACK_FILTER_ON), e2);
	assert_ptr_equal(Q.head, a1);

	/* aggressive never merges an ECE change into the trigger */
	q_reset();
	a1 = q_add(ack(100));
	s = ack(200);
	s.flags |= PB_ECE | PB_CWR;
	q_add(s);
	assert_null(q_filter(SCHED_ACK_FILTER_AGGRESSIVE));
	s = ack(300);
	s.flags |= PB_CWR;
	q_add(s);
	assert_null(q_filter(SCHED_ACK_FILTER_AGGRESSIVE));
	assert_int_equal(q_len(), 3);
	/* same bits again: now the one before may go */
	s.ack = 400;
	q_add(s);
	assert_non_null(q_filter(SCHED_ACK_FILTER_AGGRESSIVE));
	assert_ptr_equal(Q.head, a1);
}

static void
test_options(void **state)
{
	static const uint8_t mss[] = { 2, 4, 0x05, 0xb4 };
	static const uint8_t wscale[] = { 1, 3, 3, 7 };
	static const uint8_t sackok[] = { 1, 1, 4, 2 };
	static const uint8_t tfo[] = { 34, 2, 1, 1 };
	static const uint8_t unknown[] = { 99, 4, 0, 0 };
	static const uint8_t md5[] = { 1, 1, 19, 18, 1,  2,  3,  4,  5,  6,
				       7, 8, 9,  10, 11, 12, 13, 14, 15, 16 };
	static const uint8_t bad_sack_len[] = { 1, 1, 5, 9, 0, 0, 0, 1, 0, 0, 0, 2, 0 };
	static const uint8_t bad_ts_len[] = { 1, 1, 8, 8, 0, 0, 0, 1, 0, 0 };
	static const uint8_t long_ts_len[] = { 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t malformed[] = { 1, 1, 2, 0 }; /* length 0 ends the walk */
	static const uint8_t overlong[] = { 1, 1, 2, 30 };
	struct {
		const uint8_t *o;
		uint32_t n;
		int removable;
	} cases[] = {
		{ mss, sizeof(mss), 0 },
		{ wscale, sizeof(wscale), 0 },
		{ sackok, sizeof(sackok), 0 },
		{ tfo, sizeof(tfo), 0 },
		{ unknown, sizeof(unknown), 0 },
		{ bad_sack_len, sizeof(bad_sack_len), 0 },
		{ bad_ts_len, sizeof(bad_ts_len), 0 },
		{ long_ts_len, sizeof(long_ts_len), 0 },
		{ md5, sizeof(md5), 1 },
		{ malformed, sizeof(malformed), 1 },
		{ overlong, sizeof(overlong), 1 },
	};

	(void)state;
	for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sh_pkt *x;
		struct seg s = ack(100);

		q_reset();
		s.opts = cases[i].o;
		s.optlen = cases[i].n;
		x = q_add(s);
		q_add(ack(200));
		q_add(ack(300));
		if (cases[i].removable)
			assert_ptr_equal(q_filter(SCHED_ACK_FILTER_ON), x);
		else
			assert_ptr_not_equal(q_filter(SCHED_ACK_FILTER_ON), x);
	}
}

static void
put32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

static void
ts_opt(uint8_t o[12], uint32_t tsval, uint32_t tsecr)
{
	o[0] = 1;
	o[1] = 1;
	o[2] = 8;
	o[3] = 10;
	put32(o + 4, tsval);
	put32(o + 8, tsecr);
}

/* Candidate with (tsval, tsecr), trigger with (tv, te): removable? */
static int
ts_case(uint32_t cv, uint32_t ce, uint32_t tv, uint32_t te, int trig_has_ts)
{
	uint8_t a[12], b[12];
	struct seg s = ack(100);
	struct sh_pkt *x;

	q_reset();
	ts_opt(a, cv, ce);
	ts_opt(b, tv, te);
	s.opts = a;
	s.optlen = 12;
	x = q_add(s);
	s.ack = 200;
	s.opts = trig_has_ts ? b : NULL;
	s.optlen = trig_has_ts ? 12 : 0;
	q_add(s);
	return q_filter(SCHED_ACK_FILTER_AGGRESSIVE) == x;
}

static void
test_timestamps(void **state)
{
	(void)state;
	assert_true(ts_case(100, 50, 100, 50, 1));  /* same: fine */
	assert_true(ts_case(100, 50, 101, 51, 1));  /* older: fine */
	assert_false(ts_case(102, 50, 101, 50, 1)); /* newer TSval */
	assert_false(ts_case(100, 52, 101, 51, 1)); /* newer TSecr */
	/* serial-number order across the wrap */
	assert_true(ts_case(0xfffffff0u, 7, 0x10, 7, 1));
	assert_false(ts_case(0x10, 7, 0xfffffff0u, 7, 1));
	/* trigger without timestamps counts as 0/0 */
	assert_false(ts_case(5, 5, 0, 0, 0));
	assert_true(ts_case(0, 0, 0, 0, 0));
}

/* SACK option with n blocks. */
static uint32_t
sack_opt(uint8_t *o, const uint32_t (*blk)[2], unsigned int n)
{
	o[0] = 1;
	o[1] = 1;
	o[2] = 5;
	o[3] = (uint8_t)(2 + 8 * n);
	for (unsigned int i = 0; i < n; i++) {
		put32(o + 4 + 8 * i, blk[i][0]);
		put32(o + 8 + 8 * i, blk[i][1]);
	}
	return 4 + 8 * n;
}

/* Candidate (ack ca, blocks A) vs trigger (ack ta, blocks B): removable? */
static int
sack_case(uint32_t ca, const uint32_t (*a)[2], unsigned int na, uint32_t ta, const uint32_t (*b)[2],
	  unsigned int nb)
{
	uint8_t oa[40], ob[40];
	struct seg s = ack(ca);
	struct sh_pkt *x;

	q_reset();
	s.opts = oa;
	s.optlen = na ? sack_opt(oa, a, na) : 0;
	x = q_add(s);
	s = ack(ta);
	s.opts = ob;
	s.optlen = nb ? sack_opt(ob, b, nb) : 0;
	q_add(s);
	return q_filter(SCHED_ACK_FILTER_AGGRESSIVE) == x;
}

static void
test_sack(void **state)
{
	static const uint32_t b200_300[][2] = { { 200, 300 } };
	static const uint32_t b200_400[][2] = { { 200, 400 } };
	static const uint32_t b400_500[][2] = { { 400, 500 } };
	static const uint32_t two[][2] = { { 200, 300 }, { 400, 500 } };
	static const uint32_t three[][2] = { { 200, 300 }, { 400, 500 }, { 600, 700 } };
	static const uint32_t dsack[][2] = { { 50, 80 } };
	static const uint32_t dsack_more[][2] = { { 50, 80 }, { 200, 300 } };
	static const uint32_t b400_600[][2] = { { 400, 600 } };
	static const uint32_t short_and_far[][2] = { { 200, 300 }, { 500, 700 } };
	static const uint32_t wrap_a[][2] = { { 0xfffffff0u, 0x10 } };
	static const uint32_t wrap_b[][2] = { { 0xffffffe0u, 0x20 } };

	(void)state;
	/* trigger adds a block: the plain dupack may go */
	assert_true(sack_case(100, NULL, 0, 100, b200_300, 1));
	/* candidate has blocks the trigger lacks: keep */
	assert_false(sack_case(100, b200_300, 1, 150, NULL, 0));
	/* same blocks, same ACK: nothing new */
	assert_false(sack_case(100, b200_300, 1, 100, b200_300, 1));
	/* same blocks, higher ACK: fine */
	assert_true(sack_case(100, b200_300, 1, 150, b200_300, 1));
	/* trigger's block grew */
	assert_true(sack_case(100, b200_300, 1, 100, b200_400, 1));
	/* candidate's block not covered by the trigger's: keep */
	assert_false(sack_case(100, b200_300, 1, 100, b400_500, 1));
	assert_false(sack_case(100, two, 2, 100, b200_400, 1));
	/* more SACKed bytes do not help if an old block is not covered */
	assert_false(sack_case(100, b200_300, 1, 100, b400_600, 1));
	assert_false(sack_case(100, b200_300, 1, 150, b400_600, 1));
	/* a trigger block that starts with the old one but ends before it: keep */
	assert_false(sack_case(100, b200_400, 1, 100, short_and_far, 2));
	/* more blocks, all covering */
	assert_true(sack_case(100, two, 2, 100, three, 3));
	assert_true(sack_case(100, b400_500, 1, 100, two, 2));
	/* D-SACK (block below the cumulative ACK) always stays */
	assert_false(sack_case(100, dsack, 1, 100, dsack, 1));
	assert_false(sack_case(100, dsack, 1, 200, three, 3));
	assert_false(sack_case(100, dsack, 1, 100, dsack_more, 2));
	assert_false(sack_case(100, dsack, 1, 150, dsack_more, 2));
	/* blocks across the sequence wrap */
	assert_true(sack_case(0xffffff00u, wrap_a, 1, 0xffffff00u, wrap_b, 1));
	assert_false(sack_case(0xffffff00u, wrap_b, 1, 0xffffff00u, wrap_a, 1));
	/* a zero-block SACK option is allowed and counts as no blocks */
	{
		static const uint8_t empty_sack[] = { 1, 1, 5, 2 };
		struct seg s = ack(100);
		struct sh_pkt *x;

		q_reset();
		s.opts = empty_sack;
		s.optlen = sizeof(empty_sack);
		x = q_add(s);
		q_add(ack(200));
		assert_ptr_equal(q_filter(SCHED_ACK_FILTER_AGGRESSIVE), x);
	}
}

static void
test_other_flows_untouched(void **state)
{
	struct sh_pkt *o1, *a1;
	struct seg s;

	(void)state;
	q_reset();
	/* another port, another address, another family: never candidates */
	s = ack(100);
	s.sport = 40001;
	o1 = q_add(s);
	s = ack(100);
	s.src = IP4(10, 0, 0, 2);
	q_add(s);
	s = ack(100);
	s.fam = FAM_V6;
	q_add(s);
	q_add(ack(200));
	assert_null(q_filter(SCHED_ACK_FILTER_ON));
	assert_null(q_filter(SCHED_ACK_FILTER_AGGRESSIVE));
	/* two redundant-looking ACKs of a flow that differs only in its
	 * destination port or address, IPv4 and IPv6: both stay */
	for (int k = 0; k < 4; k++) {
		q_reset();
		for (uint32_t a = 100; a <= 150; a += 50) {
			s = ack(a);
			s.fam = k < 2 ? FAM_V4 : FAM_V6;
			if (k % 2 == 0)
				s.dport = 444;
			else
				s.dst = k < 2 ? IP4(192, 0, 2, 8) : 9;
			q_add(s);
		}
		s = ack(200);
		s.fam = k < 2 ? FAM_V4 : FAM_V6;
		q_add(s);
		assert_null(q_filter(SCHED_ACK_FILTER_ON));
		assert_null(q_filter(SCHED_ACK_FILTER_AGGRESSIVE));
	}

	/* the same addresses and ports on another VLAN (trunks reuse address
	 * space): another customer's flow, whose ACKs stay */
	q_reset();
	for (uint32_t a = 100; a <= 150; a += 50) {
		s = ack(a);
		s.vlan = 10;
		q_add(s);
	}
	s = ack(200);
	s.vlan = 20;
	q_add(s);
	assert_null(q_filter(SCHED_ACK_FILTER_ON));
	assert_null(q_filter(SCHED_ACK_FILTER_AGGRESSIVE));
	s.ack = 300;
	s.vlan = 10;
	q_add(s);
	assert_non_null(q_filter(SCHED_ACK_FILTER_ON)); /* its own VLAN's pair */

	/* interleaved: the victim is ours, prev points at the foreign packet */
	q_reset();
	s = ack(100);
	s.sport = 40001;
	o1 = q_add(s);
	a1 = q_add(ack(100));
	s.ack = 200;
	q_add(s);
	q_add(ack(200));
	s.ack = 300;
	q_add(s);
	q_add(ack(300));
	assert_ptr_equal(q_filter(SCHED_ACK_FILTER_ON), a1);
	assert_ptr_equal(Q.head, o1);
	assert_int_equal(q_len(), 5);
	/* the foreign flow's own trigger sees its own pair */
	s.ack = 400;
	q_add(s);
	assert_ptr_equal(q_filter(SCHED_ACK_FILTER_ON), o1);
	/* IPv4 options do not make a pure ACK look like data */
	q_reset();
	s = ack(100);
	s.ip_opt_words = 2;
	a1 = q_add(s);
	s.ack = 150;
	q_add(s);
	s.ack = 200;
	q_add(s);
	assert_ptr_equal(q_filter(SCHED_ACK_FILTER_ON), a1);
	/* IPv4 fragments (first, MF set): what follows need not be TCP */
	q_reset();
	s = ack(100);
	s.ip_frag = 0x2000;
	q_add(s);
	s.ack = 150;
	q_add(s);
	q_add(ack(200));
	assert_null(q_filter(SCHED_ACK_FILTER_ON));
	assert_null(q_filter(SCHED_ACK_FILTER_AGGRESSIVE));
	/* aggressive mode takes a lone ACK only from directly ahead of the
	 * trigger: another flow's packet between them keeps it */
	q_reset();
	q_add(ack(100));
	s = ack(100);
	s.sport = 40001;
	q_add(s);
	q_add(ack(200));
	assert_null(q_filter(SCHED_ACK_FILTER_AGGRESSIVE));
	/* UDP trigger: nothing */
	q_reset();
	q_add(ack(100));
	q_add(ack(200));
	Q.buf[1].b[14 + 9] = 17;
	assert_null(q_filter(SCHED_ACK_FILTER_AGGRESSIVE));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_conservative_keeps_two),
		cmocka_unit_test(test_stream_aggressive_keeps_one),
		cmocka_unit_test(test_conservative_drops_oldest),
		cmocka_unit_test(test_off_and_trivial),
		cmocka_unit_test(test_trigger_may_carry_data),
		cmocka_unit_test(test_data_and_flags_stay),
		cmocka_unit_test(test_duplicate_acks_stay),
		cmocka_unit_test(test_ecn_transitions),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_timestamps),
		cmocka_unit_test(test_sack),
		cmocka_unit_test(test_other_flows_untouched),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
