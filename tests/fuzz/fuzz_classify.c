/*
 * libFuzzer harness: the classifier, the DSCP/CE rewrites and the ACK
 * filter on any bytes. Input: one control byte (DSCP to write, whether the
 * frame is chained), one byte for the contiguous length of a chained frame,
 * then frames, each as a 2-byte big-endian length and its bytes (the last
 * one takes what is left; at most 9000 bytes each, at most 8 frames). Each
 * frame's readable bytes (hdr_len) are copied into a buffer of exactly that
 * size, so ASan reports any read past them. Checked:
 *   - offsets and facts the classifier reports stay inside the frame, and
 *     classifying twice gives the same answer;
 *   - classify_set_dscp changes only the DS field (and the IPv4 checksum,
 *     which stays valid if it was), and the classifier then reads the new
 *     DSCP with the ECN bits unchanged;
 *   - classify_set_ce says 1 exactly for ECT/CE packets, which then read CE;
 *   - the ACK filter, with the frames as one queue and the last as the new
 *     packet, only ever picks a queued packet of the same flow, with the
 *     right predecessor, and nothing when it is off.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/ack_filter.h"
#include "shaper/classify.h"

#define MAX_FRAME  9000
#define MAX_FRAMES 8

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_classify: %s:%d: check failed: %s\n", __FILE__,      \
				__LINE__, #cond);                                                  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static struct classify_key key;

/* The classification facts, without the queue fields. */
static int
same_facts(const struct sh_pkt *a, const struct sh_pkt *b)
{
	return a->flow_hash == b->flow_hash && a->src_hash == b->src_hash &&
	       a->dst_hash == b->dst_hash && a->l3_off == b->l3_off && a->l4_off == b->l4_off &&
	       a->dscp == b->dscp && a->ecn == b->ecn && a->l4_proto == b->l4_proto &&
	       a->flags == b->flags && a->net_off == b->net_off;
}

/* IPv4 header at off complete in the readable bytes: its length, else 0. */
static uint32_t
ipv4_hlen(const struct sh_pkt *p)
{
	uint32_t hl;

	if (!(p->flags & SH_PKT_IPV4) || p->l3_off == SH_OFF_NONE || p->l3_off >= p->hdr_len)
		return 0;
	hl = (p->data[p->l3_off] & 0x0fu) * 4u;
	return hl >= 20 && p->l3_off + hl <= p->hdr_len ? hl : 0;
}

static int
ipv4_csum_ok(const uint8_t *ip, uint32_t hl)
{
	uint32_t sum = 0;

	for (uint32_t i = 0; i < hl; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

static void
check_facts(const struct sh_pkt *p)
{
	CHECK(p->dscp < 64 || ((p->flags & SH_PKT_ARP) && p->dscp == 56));
	CHECK(p->ecn < 4);
	CHECK(!((p->flags & SH_PKT_IPV4) && (p->flags & SH_PKT_IPV6)));
	CHECK(p->net_off <= 14 + 8 * 4 + 8 + 8);
	if (p->flags & (SH_PKT_IPV4 | SH_PKT_IPV6)) {
		CHECK(p->l3_off != SH_OFF_NONE && p->l3_off < p->hdr_len);
		CHECK(p->l3_off >= p->net_off);
	}
	if (p->l4_off != SH_OFF_NONE) {
		CHECK(p->l3_off != SH_OFF_NONE && p->l4_off > p->l3_off);
		CHECK(p->l4_off <= p->hdr_len);
	}
	if (p->flags & SH_PKT_TCP_ACK)
		CHECK(p->flags & SH_PKT_TCP);
}

/* Rewrite DSCP and set CE on a copy of p, checking what changed. */
static void
check_rewrites(const struct sh_pkt *p, uint8_t dscp)
{
	uint8_t *copy = malloc(p->hdr_len ? p->hdr_len : 1);
	struct sh_pkt q = *p, r;
	uint32_t hl = ipv4_hlen(p);
	int csum_ok = hl != 0 && ipv4_csum_ok(p->data + p->l3_off, hl);
	int ce;

	CHECK(copy != NULL);
	memcpy(copy, p->data, p->hdr_len);
	q.data = copy;
	classify_set_dscp(&q, dscp);
	for (uint32_t i = 0; i < p->hdr_len; i++) {
		uint32_t o = i - (p->l3_off != SH_OFF_NONE ? p->l3_off : 0);
		int may = p->l3_off != SH_OFF_NONE && i >= p->l3_off &&
			  ((p->flags & SH_PKT_IPV4)   ? (o == 1 || o == 10 || o == 11)
			   : (p->flags & SH_PKT_IPV6) ? o <= 1
						      : 0);

		CHECK(may || copy[i] == p->data[i]);
	}
	if (csum_ok)
		CHECK(ipv4_csum_ok(copy + p->l3_off, hl));
	r = q;
	classify_pkt(&r, &key);
	if (p->flags & (SH_PKT_IPV4 | SH_PKT_IPV6)) {
		CHECK(r.dscp == (dscp & 0x3f));
		CHECK(r.ecn == p->ecn);
	} else {
		CHECK(memcmp(copy, p->data, p->hdr_len) == 0);
	}

	ce = classify_set_ce(&q);
	CHECK(ce == 0 || ce == 1);
	if (csum_ok)
		CHECK(ipv4_csum_ok(copy + p->l3_off, hl));
	r = q;
	classify_pkt(&r, &key);
	if (p->flags & (SH_PKT_IPV4 | SH_PKT_IPV6)) {
		CHECK(ce == (p->ecn != 0));
		CHECK(r.ecn == (ce ? 3 : p->ecn));
		CHECK(r.dscp == (dscp & 0x3f));
	} else {
		CHECK(ce == 0);
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sh_pkt pkts[MAX_FRAMES];
	uint8_t ctrl, cut;
	size_t off = 2;
	unsigned int n = 0;

	if (size < 2)
		return 0;
	if (key.k0 == 0)
		classify_key_init(&key, 0x5eed);
	ctrl = data[0];
	cut = data[1];
	while (off < size && n < MAX_FRAMES) {
		size_t len = size - off;
		struct sh_pkt *p = &pkts[n];
		uint8_t *buf;

		if (n + 1 < MAX_FRAMES && len >= 2) {
			size_t want = (size_t)data[off] << 8 | data[off + 1];

			off += 2;
			len = want < size - off ? want : size - off;
		}
		if (len > MAX_FRAME)
			len = MAX_FRAME;
		memset(p, 0, sizeof(*p));
		p->len = (uint32_t)len;
		/* A chained frame: only the first segment is readable. */
		p->hdr_len = (ctrl & 0x40) && cut < len ? cut : (uint32_t)len;
		buf = malloc(p->hdr_len ? p->hdr_len : 1);
		CHECK(buf != NULL);
		memcpy(buf, data + off, p->hdr_len);
		p->data = buf;
		off += len;

		classify_pkt(p, &key);
		check_facts(p);
		{
			struct sh_pkt again = *p;

			classify_pkt(&again, &key);
			CHECK(same_facts(p, &again));
		}
		check_rewrites(p, ctrl & 0x3f);
		n++;
	}
	if (n >= 2) {
		for (unsigned int i = 0; i + 1 < n; i++)
			pkts[i].next = &pkts[i + 1];
		pkts[n - 1].next = NULL;
		for (int mode = SCHED_ACK_FILTER_OFF; mode <= SCHED_ACK_FILTER_AGGRESSIVE; mode++) {
			struct sh_pkt *prev = (struct sh_pkt *)1, *ack;

			ack = ack_filter_find(&pkts[0], &pkts[n - 1], (enum sched_ack_filter)mode,
					      &prev);
			if (mode == SCHED_ACK_FILTER_OFF || ack == NULL) {
				CHECK(ack == NULL);
				continue;
			}
			CHECK(ack != &pkts[n - 1]);
			CHECK(ack >= &pkts[0] && ack < &pkts[n - 1]);
			CHECK(prev == (ack == &pkts[0] ? NULL : ack - 1));
			CHECK(ack->flags & SH_PKT_TCP);
			CHECK(pkts[n - 1].flags & SH_PKT_TCP);
			CHECK(ack->flow_hash == pkts[n - 1].flow_hash);
		}
	}
	for (unsigned int i = 0; i < n; i++)
		free(pkts[i].data);
	return 0;
}
