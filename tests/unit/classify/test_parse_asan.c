/*
 * Built with AddressSanitizer/UBSan around the classifier and ACK filter
 * sources: every frame sits in a heap buffer of exactly its length, so a
 * read one byte past the end (or any undefined shift/overflow) aborts.
 * Covers every truncation of a set of templates and random corruptions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/classify.h"
#include "sched/ack_filter.h"
#include "pktbuild.h"

static const uint8_t v6a[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
static const uint8_t v6b[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2 };
static const uint8_t opts[] = { 1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 3, 1, 1, 5, 18,
				0, 0, 1, 0,  0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0 };

#define NTEMPL 6

static uint32_t
templ(struct pb *b, int which, uint32_t ackno)
{
	pb_init(b);
	pb_eth_macs(b, 1, 2);
	switch (which) {
	case 0:
		pb_u16(b, 0x0800);
		pb_ipv4(b, 1, 2, 6, 2, 0, 2);
		pb_tcp(b, 1, 2, 3, ackno, PB_ACK, opts, sizeof(opts));
		break;
	case 1:
		pb_vlan(b, 0x88a8, 1);
		pb_vlan(b, 0x8100, 2);
		pb_pppoe(b, 0x0057);
		pb_ipv6(b, v6a, v6b, 0, 0, 0);
		pb_ipv6_ext(b, 43, 1);
		pb_ipv6_ext(b, 44, 0);
		pb_ipv6_frag(b, 60, 0, 1);
		pb_ipv6_ext(b, 6, 1);
		pb_tcp(b, 1, 2, 3, ackno, PB_ACK, NULL, 0);
		break;
	case 2:
		pb_u16(b, 0x0800);
		pb_ipv4(b, 1, 2, 41, 0, 0, 0);
		pb_ipv6(b, v6a, v6b, 6, 0, 0);
		pb_tcp(b, 1, 2, 3, ackno, PB_ACK, opts, sizeof(opts));
		break;
	case 3:
		pb_u16(b, 0x86dd);
		pb_ipv6(b, v6a, v6b, 6, 0, 0);
		pb_tcp(b, 1, 2, 3, ackno, PB_ACK, opts, sizeof(opts));
		break;
	case 4:
		pb_pppoe(b, 0x0021);
		pb_ipv4(b, 1, 2, 4, 0, 0, 0);
		pb_ipv4(b, 3, 4, 17, 0, 0, 0);
		pb_udp(b, 1, 2);
		break;
	default:
		pb_u16(b, 0x0806);
		pb_zero(b, 28);
		break;
	}
	pb_finish(b);
	return b->len;
}

static uint64_t rs = 0x2545f4914f6cdd1dULL;

static uint32_t
rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (uint32_t)rs;
}

/* An sh_pkt over an exactly-sized heap copy of b[0 .. len). */
static void
heap_pkt(struct sh_pkt *p, const uint8_t *b, uint32_t len, const struct classify_key *k)
{
	memset(p, 0, sizeof(*p));
	p->data = malloc(len ? len : 1);
	assert_non_null(p->data);
	if (len)
		memcpy(p->data, b, len);
	p->len = p->hdr_len = len;
	classify_pkt(p, k);
}

static void
test_truncations(void **state)
{
	struct classify_key k;
	struct pb b;

	(void)state;
	classify_key_init(&k, 1);
	for (int t = 0; t < NTEMPL; t++) {
		uint32_t n = templ(&b, t, 100);

		for (uint32_t len = 0; len <= n; len++) {
			struct sh_pkt head, trig, *prev;

			/* a complete head, the trigger cut at len, and the reverse */
			heap_pkt(&head, b.b, n, &k);
			heap_pkt(&trig, b.b, len, &k);
			head.next = &trig;
			trig.next = NULL;
			(void)ack_filter_find(&head, &trig, SCHED_ACK_FILTER_AGGRESSIVE, &prev);
			free(trig.data);
			heap_pkt(&trig, b.b, n, &k);
			free(head.data);
			heap_pkt(&head, b.b, len, &k);
			head.next = &trig;
			(void)ack_filter_find(&head, &trig, SCHED_ACK_FILTER_AGGRESSIVE, &prev);
			classify_set_dscp(&head, 46);
			(void)classify_set_ce(&head);
			free(head.data);
			free(trig.data);
		}
	}
}

/*
 * A frame whose headers sit in a first segment of seg bytes while the whole
 * chain is frame bytes long (a jumbo frame a PMD chained), filled the way
 * the worker fills it.
 */
static void
seg_pkt(struct sh_pkt *p, const uint8_t *b, uint32_t seg, uint32_t frame,
	const struct classify_key *k)
{
	memset(p, 0, sizeof(*p));
	p->data = malloc(seg ? seg : 1);
	assert_non_null(p->data);
	if (seg)
		memcpy(p->data, b, seg);
	p->hdr_len = seg;
	p->len = frame;
	classify_pkt(p, k);
}

/*
 * Header reads are bounded by the contiguous bytes, never by the frame
 * length: the ACK filter, the DSCP/CE rewrites and the classifier must not
 * read past the first segment however long the chain is.
 */
static void
test_segmented(void **state)
{
	struct classify_key k;
	struct pb b;

	(void)state;
	classify_key_init(&k, 3);
	for (int t = 0; t < NTEMPL; t++) {
		uint32_t n = templ(&b, t, 100);

		for (uint32_t seg = 0; seg <= n; seg++) {
			struct sh_pkt head, trig, *prev;

			seg_pkt(&head, b.b, n, 9000, &k);
			seg_pkt(&trig, b.b, seg, 9000, &k);
			head.next = &trig;
			trig.next = NULL;
			(void)ack_filter_find(&head, &trig, SCHED_ACK_FILTER_AGGRESSIVE, &prev);
			free(head.data);
			/* the cut packet queued, a complete one as the trigger */
			seg_pkt(&head, b.b, seg, 9000, &k);
			trig.next = NULL;
			free(trig.data);
			seg_pkt(&trig, b.b, n, 9000, &k);
			head.next = &trig;
			(void)ack_filter_find(&head, &trig, SCHED_ACK_FILTER_AGGRESSIVE, &prev);
			/* as a later turn sees it: the classifier runs again on the same record */
			classify_pkt(&head, &k);
			classify_set_dscp(&head, 46);
			(void)classify_set_ce(&head);
			free(head.data);
			free(trig.data);
		}
	}
}

static void
test_random(void **state)
{
	enum {
		QLEN = 6
	};
	struct classify_key k;
	struct pb b;

	(void)state;
	classify_key_init(&k, 2);
	for (int it = 0; it < 30000; it++) {
		struct sh_pkt q[QLEN], *prev;

		for (int i = 0; i < QLEN; i++) {
			uint32_t n = templ(&b, (int)(rnd() % NTEMPL), 100 + (uint32_t)i);
			uint32_t flips = rnd() % 6;

			for (uint32_t f = 0; f < flips; f++)
				b.b[rnd() % n] = (uint8_t)rnd();
			if (rnd() % 8 == 0)
				n = rnd() % (n + 1);
			heap_pkt(&q[i], b.b, n, &k);
			/* the filter must cope with any l3_off a caller might pass */
			if (rnd() % 16 == 0)
				q[i].l3_off = (uint16_t)(rnd() % (n + 8));
			q[i].next = i + 1 < QLEN ? &q[i + 1] : NULL;
		}
		(void)ack_filter_find(&q[0], &q[QLEN - 1], (enum sched_ack_filter)(1 + rnd() % 2),
				      &prev);
		for (int i = 0; i < QLEN; i++) {
			classify_set_dscp(&q[i], (uint8_t)(rnd() & 63));
			(void)classify_set_ce(&q[i]);
			free(q[i].data);
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_segmented),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
