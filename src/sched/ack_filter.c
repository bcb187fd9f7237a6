/*
 * CAKE's ACK filter, written from the behaviour of sch_cake's
 * cake_ack_filter().
 *
 * On a slow uplink, a bulk download's ACK stream can fill the queue with
 * ACKs that say nothing the newest one does not: a later cumulative ACK
 * covers an earlier one. Removing such ACKs frees uplink capacity. A queued
 * ACK may only go if the new one ("trigger") carries at least the same
 * information: same connection (on the same VLAN), no data, no flags beyond ACK/ECE/CWR, no
 * options the sender needs (MSS, window scale...), no newer timestamps, and
 * either a higher cumulative ACK or strictly more SACKed bytes covering all
 * its blocks. ECE/CWR changes are never merged away.
 *
 * Conservative mode removes the oldest of two redundant ACKs ahead of the
 * trigger (two ACKs stay queued); aggressive mode also removes a lone one
 * directly ahead of it.
 */
#include <string.h>

#include "sched/ack_filter.h"
#include "shaper/classify.h"

#define AF_PROTO_TCP  6
#define AF_PROTO_IPV6 41

#define AF_TCP_FIN      0x01
#define AF_TCP_SYN      0x02
#define AF_TCP_ACK      0x10
#define AF_TCP_ECE      0x40
#define AF_TCP_CWR      0x80
#define AF_TCP_ECN_MASK (AF_TCP_ECE | AF_TCP_CWR)

#define AF_OPT_EOL  0
#define AF_OPT_NOP  1
#define AF_OPT_SACK 5
#define AF_OPT_TS   8
#define AF_OPT_MD5  19

#define AF_MAX_SACK 4 /* 40 option bytes hold at most four blocks */

/* One packet's TCP facts; pointers into its frame. */
struct af_tcp {
	const uint8_t *saddr, *daddr;
	const uint8_t *th; /* TCP header */
	uint32_t thlen;    /* doff * 4, fully inside the frame */
	int64_t payload;   /* IP payload minus TCP header (may be < 0 if bogus) */
	uint8_t alen;      /* 4 or 16: also the IP version key */
};

static inline uint16_t
af_be16(const uint8_t *b)
{
	return (uint16_t)((b[0] << 8) | b[1]);
}

static inline uint32_t
af_be32(const uint8_t *b)
{
	return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}

/* Serial-number order (RFC 1982 style, 32 bits): is a after b? */
static inline int
af_after(uint32_t a, uint32_t b)
{
	return (int32_t)(b - a) < 0;
}

static inline int
af_fits(const struct sh_pkt *p, uint32_t off, uint32_t n)
{
	/* Only the contiguous header bytes are readable, not the whole frame. */
	return off <= p->hdr_len && n <= p->hdr_len - off;
}

/* TCP header at off, checked against the frame; 0 on success. */
static int
af_parse_tcp(const struct sh_pkt *p, uint32_t off, int64_t ip_payload, struct af_tcp *t)
{
	uint32_t doff;

	if (!af_fits(p, off, 20))
		return -1;
	doff = (uint32_t)(p->data[off + 12] >> 4) * 4;
	if (doff < 20 || !af_fits(p, off, doff))
		return -1;
	t->th = p->data + off;
	t->thlen = doff;
	t->payload = ip_payload - doff;
	return 0;
}

/*
 * IPv6 at off whose first next-header is TCP (no extension-header walk,
 * as in the reference).
 */
static int
af_parse_ipv6(const struct sh_pkt *p, uint32_t off, struct af_tcp *t)
{
	const uint8_t *ip = p->data + off;

	if (!af_fits(p, off, 40) || (ip[0] >> 4) != 6 || ip[6] != AF_PROTO_TCP)
		return -1;
	t->saddr = ip + 8;
	t->daddr = ip + 24;
	t->alen = 16;
	return af_parse_tcp(p, off + 40, af_be16(ip + 4), t);
}

static int
af_parse(const struct sh_pkt *p, struct af_tcp *t)
{
	uint32_t off = p->l3_off, ihl;
	const uint8_t *ip;

	if (p->data == NULL || off == SH_OFF_NONE || !af_fits(p, off, 1))
		return -1;
	ip = p->data + off;
	if ((ip[0] >> 4) == 6)
		return af_parse_ipv6(p, off, t);
	if ((ip[0] >> 4) != 4 || !af_fits(p, off, 20))
		return -1;
	ihl = (uint32_t)(ip[0] & 0x0f) * 4;
	if (ihl < 20 || !af_fits(p, off, ihl))
		return -1;
	/* A fragment's payload need not start with a TCP header. */
	if ((af_be16(ip + 6) & 0x3fff) != 0)
		return -1;
	if (ip[9] == AF_PROTO_IPV6)
		return af_parse_ipv6(p, off + ihl, t);
	if (ip[9] != AF_PROTO_TCP)
		return -1;
	t->saddr = ip + 12;
	t->daddr = ip + 16;
	t->alen = 4;
	return af_parse_tcp(p, off + ihl, (int64_t)af_be16(ip + 2) - ihl, t);
}

static inline uint8_t
af_flags(const struct af_tcp *t)
{
	return t->th[13];
}

static inline uint32_t
af_ack_seq(const struct af_tcp *t)
{
	return af_be32(t->th + 8);
}

static int
af_same_flow(const struct af_tcp *a, const struct af_tcp *b)
{
	return a->alen == b->alen &&
	       memcmp(a->th, b->th, 4) == 0 && /* source and destination ports */
	       memcmp(a->saddr, b->saddr, a->alen) == 0 && memcmp(a->daddr, b->daddr, a->alen) == 0;
}

/* Options of interest, gathered in one walk. */
struct af_opts {
	uint32_t sack[AF_MAX_SACK][2];
	unsigned int nsack; /* blocks of the first SACK option */
	int has_sack;       /* a SACK option was seen (maybe with 0 blocks) */
	uint32_t tsval, tsecr;
	int has_ts;      /* a well-formed (length 10) timestamp */
	int only_benign; /* nothing beyond SACK (2 mod 8), TS (len 10), MD5 */
};

/*
 * Walk the option list: EOL ends, NOP is skipped, a malformed length ends
 * the walk (what came before still counts).
 */
static void
af_walk_opts(const struct af_tcp *t, struct af_opts *o)
{
	const uint8_t *opt = t->th + 20;
	uint32_t left = t->thlen - 20;

	memset(o, 0, sizeof(*o));
	o->only_benign = 1;
	while (left > 0) {
		uint8_t kind = opt[0], olen;

		if (kind == AF_OPT_EOL)
			break;
		if (kind == AF_OPT_NOP) {
			opt++;
			left--;
			continue;
		}
		if (left < 2)
			break;
		olen = opt[1];
		if (olen < 2 || olen > left)
			break;
		switch (kind) {
		case AF_OPT_MD5:
			break;
		case AF_OPT_SACK:
			if ((olen & 7) != 2) {
				o->only_benign = 0;
				break;
			}
			if (!o->has_sack) {
				unsigned int i, n = (olen - 2u) / 8;

				o->has_sack = 1;
				for (i = 0; i < n && i < AF_MAX_SACK; i++) {
					o->sack[i][0] = af_be32(opt + 2 + 8 * i);
					o->sack[i][1] = af_be32(opt + 6 + 8 * i);
				}
				o->nsack = i;
			}
			break;
		case AF_OPT_TS:
			if (olen != 10) {
				o->only_benign = 0;
				break;
			}
			if (!o->has_ts) {
				o->has_ts = 1;
				o->tsval = af_be32(opt + 2);
				o->tsecr = af_be32(opt + 6);
			}
			break;
		default:
			o->only_benign = 0; /* MSS, wscale, SACK-permitted, TFO... */
			break;
		}
		opt += olen;
		left -= olen;
	}
}

/*
 * Does trigger b carry strictly more SACK information than candidate a, or
 * the same? Returns 1 (b greater), 0 (equal), -1 (a must stay).
 */
static int
af_sack_compare(uint32_t ack_a, const struct af_opts *a, const struct af_opts *b)
{
	uint64_t bytes_a = 0, bytes_b = 0;
	unsigned int i, j;

	if (a->nsack > 0 && b->nsack == 0)
		return -1;
	if (a->nsack == 0)
		return b->nsack > 0 ? 1 : 0;
	for (i = 0; i < a->nsack; i++) {
		uint32_t sa = a->sack[i][0], ea = a->sack[i][1];
		int covered = 0;

		/* A block below the cumulative ACK is a D-SACK: news of a duplicate. */
		if (af_after(ack_a, sa))
			return -1;
		for (j = 0; j < b->nsack && !covered; j++)
			covered = !af_after(b->sack[j][0], sa) && !af_after(ea, b->sack[j][1]);
		if (!covered)
			return -1;
		bytes_a += (uint32_t)(ea - sa);
	}
	for (j = 0; j < b->nsack; j++)
		bytes_b += (uint32_t)(b->sack[j][1] - b->sack[j][0]);
	return bytes_b > bytes_a ? 1 : 0;
}

/* Candidate eligibility test (cake_ack_filter()'s eligibility rules). */
static int
af_eligible(const struct af_tcp *c, const struct af_tcp *trig, const struct af_opts *topts)
{
	struct af_opts co;
	uint32_t cack = af_ack_seq(c), tack = af_ack_seq(trig);
	int cmp;

	/* ACK only (ECE/CWR free); reserved bits and AE clear. */
	if ((af_flags(c) & ~AF_TCP_ECN_MASK) != AF_TCP_ACK || (c->th[12] & 0x0f) != 0)
		return 0;
	af_walk_opts(c, &co);
	if (!co.only_benign)
		return 0;
	if (co.has_ts && (af_after(co.tsval, topts->tsval) || af_after(co.tsecr, topts->tsecr)))
		return 0;
	if (c->payload != 0)
		return 0;
	if (af_after(cack, tack))
		return 0;
	cmp = af_sack_compare(cack, &co, topts);
	if (cmp < 0 || (cmp == 0 && cack == tack))
		return 0;
	return 1;
}

struct sh_pkt *
ack_filter_find(struct sh_pkt *head, struct sh_pkt *trigger, enum sched_ack_filter mode,
		struct sh_pkt **prev)
{
	struct sh_pkt *elig = NULL, *elig_prev = NULL, *cur, *cur_prev = NULL;
	struct af_tcp trig, c;
	struct af_opts topts;
	uint32_t vlan;
	uint8_t elig_ecn = 0;
	int found = 0;

	*prev = NULL;
	if (mode == SCHED_ACK_FILTER_OFF || head == NULL || head == trigger || trigger == NULL)
		return NULL;
	if (af_parse(trigger, &trig) != 0 ||
	    (af_flags(&trig) & (AF_TCP_ACK | AF_TCP_SYN)) != AF_TCP_ACK)
		return NULL;
	af_walk_opts(&trig, &topts);
	if (!topts.has_ts)
		topts.tsval = topts.tsecr = 0;
	/* The same addresses and ports on another VLAN are another customer's flow. */
	vlan = classify_vlan_key(trigger);

	for (cur = head; cur != NULL && cur != trigger; cur_prev = cur, cur = cur->next) {
		if (af_parse(cur, &c) != 0 || !af_same_flow(&c, &trig) ||
		    classify_vlan_key(cur) != vlan)
			continue;
		/* An ECE/CWR change is a congestion signal: keep its carrier. */
		if (elig != NULL && (af_flags(&c) & AF_TCP_ECN_MASK) != elig_ecn) {
			elig = NULL;
			elig_prev = NULL;
			found--;
		}
		if (!af_eligible(&c, &trig, &topts))
			continue;
		if (elig == NULL) {
			elig = cur;
			elig_prev = cur_prev;
			elig_ecn = af_flags(&c) & AF_TCP_ECN_MASK;
		}
		if (found++ > 0) {
			*prev = elig_prev;
			return elig;
		}
	}
	if (mode == SCHED_ACK_FILTER_AGGRESSIVE && found == 1 && elig != NULL &&
	    elig->next == trigger && elig_ecn == (af_flags(&trig) & AF_TCP_ECN_MASK)) {
		*prev = elig_prev;
		return elig;
	}
	return NULL;
}
