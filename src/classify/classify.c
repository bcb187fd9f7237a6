/*
 * The classifier: parses an L2 frame into the sh_pkt metadata the
 * schedulers use (flow and host hashes, DSCP/ECN, header offsets, TCP-ACK
 * facts) and rewrites the IP DS field (DSCP wash, ECN CE marking).
 *
 * What the fields mean for unusual frames:
 * - l3_off, dscp, ecn and the IPV4/IPV6 flag describe the OUTERMOST IP
 *   header (the one CAKE washes and marks).
 * - One level of IP-in-IP (IPv4 proto 4, 6in4 proto 41, and the same inside
 *   IPv6) is looked through: l4_proto/l4_off, the TCP/UDP/ACK/FRAG flags and
 *   all three hashes describe the inner packet, like the kernel's flow
 *   dissector, so tunnelled flows and hosts stay apart.
 * - The ids of the outer two VLAN tags are part of the flow hash (Linux's
 *   flow keys carry the outer tag): on a trunk where address space repeats
 *   across VLANs, two customers' flows stay apart. The ids only, not the
 *   priority bits, which may differ within one flow. Untagged frames (and
 *   VLAN id 0, priority tags) hash as before. Host hashes are the address
 *   alone; CAKE's vlan_hosts counts hosts per VLAN (src/sched/cake.c).
 * - Every IP fragment (MF set or offset != 0) is hashed without ports, so
 *   all pieces of a datagram share one queue and cannot be reordered; the
 *   first fragment still gets l4_off and TCP/UDP flags.
 * - IPv6 flow labels are ignored: each end picks its own and may change it
 *   mid-connection, while the ports keep the hash direction-symmetric and a
 *   flow in one queue (Linux's CAKE hashes the label when it is set).
 * - GRE is hashed by its outer addresses and protocol: the key and the
 *   tunnelled packet are not read (Linux's flow dissector reads both), so
 *   a GRE tunnel is one flow.
 * - Flows are keyed by ports for TCP, UDP, UDP-Lite, SCTP and DCCP, and by
 *   the SPI for ESP and AH (several SAs between two gateways are several
 *   flows); other protocols hash by addresses and protocol only. In IPv6,
 *   AH ends the extension-header walk as Linux's flow dissector ends it:
 *   its SPI is the key, what it protects is not read.
 * - Non-IP frames: flow_hash is a keyed hash of the ethertype, the sorted
 *   MAC pair (symmetric too) and the VLAN ids, host hashes are 0, DSCP 0
 *   (ARP: 56).
 * - Frames too short for their headers degrade to the deepest layer fully
 *   present; nothing outside data[0 .. len) is ever read. A frame shorter
 *   than an Ethernet header gets all-zero metadata (net_off 14).
 *
 * Plain C, no DPDK: the simulator and unit tests link it without EAL.
 */
#include <stdbool.h>
#include <string.h>

#include "shaper/classify.h"
#include "shaper/rand.h"

/* ECN codepoints (RFC 3168), the low two bits of the DS field. */
#define ECN_MASK 0x03u
#define ECN_CE   0x03u

/* True if [off, off + n) lies inside the contiguous header bytes. */
static inline int
cls_in_frame(const struct sh_pkt *p, uint32_t off, uint32_t n)
{
	return off <= p->hdr_len && n <= p->hdr_len - off;
}

/*
 * RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), on the 16-bit word that
 * holds version/IHL and TOS. Only this word changes, so the update is exact.
 */
static void
cls_ipv4_set_tos(uint8_t *ip, uint8_t tos)
{
	uint16_t old_w = (uint16_t)((ip[0] << 8) | ip[1]);
	uint16_t new_w = (uint16_t)((ip[0] << 8) | tos);
	uint32_t sum = (uint16_t) ~((ip[10] << 8) | ip[11]);

	sum += (uint16_t)~old_w;
	sum += new_w;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (uint16_t)~sum;
	ip[1] = tos;
	ip[10] = (uint8_t)(sum >> 8);
	ip[11] = (uint8_t)sum;
}

/* IPv6 traffic class straddles bytes 0 and 1 (4 bits each). */
static inline uint8_t
cls_ipv6_get_tc(const uint8_t *ip)
{
	return (uint8_t)(((ip[0] & 0x0f) << 4) | (ip[1] >> 4));
}

static inline void
cls_ipv6_set_tc(uint8_t *ip, uint8_t tc)
{
	ip[0] = (uint8_t)((ip[0] & 0xf0) | (tc >> 4));
	ip[1] = (uint8_t)((ip[1] & 0x0f) | ((tc & 0x0f) << 4));
}

/* The IP header at l3_off if the frame is IP and long enough, else NULL. */
static uint8_t *
cls_l3(const struct sh_pkt *p, int *is_v4)
{
	if (p->l3_off == SH_OFF_NONE || p->data == NULL)
		return NULL;
	if (p->flags & SH_PKT_IPV4) {
		if (!cls_in_frame(p, p->l3_off, 20))
			return NULL;
		*is_v4 = 1;
		return p->data + p->l3_off;
	}
	if (p->flags & SH_PKT_IPV6) {
		if (!cls_in_frame(p, p->l3_off, 40))
			return NULL;
		*is_v4 = 0;
		return p->data + p->l3_off;
	}
	return NULL;
}

void
classify_set_dscp(struct sh_pkt *p, uint8_t dscp)
{
	int is_v4 = 0;
	uint8_t *ip = cls_l3(p, &is_v4);
	uint8_t ds;

	if (ip == NULL)
		return;
	if (is_v4) {
		ds = (uint8_t)((dscp << 2) | (ip[1] & ECN_MASK));
		if (ds != ip[1])
			cls_ipv4_set_tos(ip, ds);
	} else {
		ds = (uint8_t)((dscp << 2) | (cls_ipv6_get_tc(ip) & ECN_MASK));
		cls_ipv6_set_tc(ip, ds);
	}
}

int
classify_set_ce(struct sh_pkt *p)
{
	int is_v4 = 0;
	uint8_t *ip = cls_l3(p, &is_v4);
	uint8_t ds;

	if (ip == NULL)
		return 0;
	ds = is_v4 ? ip[1] : cls_ipv6_get_tc(ip);
	if ((ds & ECN_MASK) == 0)
		return 0; /* Not-ECT: the sender cannot understand CE */
	if ((ds & ECN_MASK) == ECN_CE)
		return 1;
	ds |= ECN_CE;
	if (is_v4)
		cls_ipv4_set_tos(ip, ds);
	else
		cls_ipv6_set_tc(ip, ds);
	return 1;
}

/* ---------------------------------------------------------------------- */
/* Keyed hash                                                              */
/* ---------------------------------------------------------------------- */

/*
 * A wyhash-style multiply-fold over 64-bit words: each pair of words is
 * mixed with the key through one 64x64->128 multiply, then one keyed final
 * multiply. Cheap (an IPv4 5-tuple is two multiplies, a host one round and
 * the final) and, with a secret per-instance key, an outsider cannot aim
 * many flows at one queue.
 */
#define CLS_P0 0xa0761d6478bd642fULL
#define CLS_P1 0xe7037ed1a0b428dbULL
#define CLS_P2 0x8ebc6af09c88c6e3ULL

/* Domain tags keep flow, host and non-IP hashes of equal bytes apart. */
#define CLS_TAG_FLOW 0x1ULL
#define CLS_TAG_HOST 0x2ULL
#define CLS_TAG_L2   0x3ULL
#define CLS_TAG_KEY  0x4ULL

static inline uint64_t
cls_mum(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* Inlined so that n and tag fold at each call site (no loop, no call). */
static inline __attribute__((always_inline)) uint32_t
cls_hash_words(const struct classify_key *key, const uint64_t *w, unsigned int n, uint64_t tag)
{
	/* Tag and length enter the first round's keyed operand (no multiply
	 * of their own: they are constants at every call site). */
	uint64_t h = key->k1 ^ CLS_P0 ^ (tag << 56) ^ ((uint64_t)n << 48);
	unsigned int i;

	for (i = 0; i + 1 < n; i += 2)
		h = cls_mum(w[i] ^ key->k0 ^ CLS_P1, w[i + 1] ^ h ^ CLS_P2);
	if (i < n)
		h = cls_mum(w[i] ^ key->k0 ^ CLS_P2, h ^ CLS_P1);
	h = cls_mum(h ^ key->k1, CLS_P0 ^ key->k0);
	return (uint32_t)(h ^ (h >> 32));
}

uint32_t
classify_hash_key(const struct classify_key *key, const uint64_t *w, unsigned int n)
{
	return cls_hash_words(key, w, n, CLS_TAG_KEY);
}

void
classify_key_init(struct classify_key *key, uint64_t seed)
{
	uint64_t x = seed;

	/* splitmix64 spreads a small seed over both key words. */
	key->k0 = sh_splitmix64(&x);
	key->k1 = sh_splitmix64(&x);
}

/* ---------------------------------------------------------------------- */
/* Parser                                                                  */
/* ---------------------------------------------------------------------- */

#define ETH_HLEN        14
#define ETH_P_IPV4      0x0800
#define ETH_P_ARP       0x0806
#define ETH_P_8021Q     0x8100
#define ETH_P_8021AD    0x88a8
#define ETH_P_QINQ_OLD  0x9100
#define ETH_P_IPV6      0x86dd
#define ETH_P_PPPOE_SES 0x8864
#define PPP_IPV4        0x0021
#define PPP_IPV6        0x0057

#define IPPROTO_V_ICMP    1
#define IPPROTO_V_IPIP    4
#define IPPROTO_V_TCP     6
#define IPPROTO_V_UDP     17
#define IPPROTO_V_DCCP    33
#define IPPROTO_V_ESP     50
#define IPPROTO_V_AH      51
#define IPPROTO_V_SCTP    132
#define IPPROTO_V_UDPLITE 136
#define IPPROTO_V_IPV6    41
#define IPPROTO_V_ICMPV6  58

#define CLS_MAX_VLAN   8 /* bounds the tag loop (and net_off <= 54) */
#define CLS_MAX_V6_EXT 8 /* bounds the extension-header walk */

#define TCP_FLAG_SYN 0x02
#define TCP_FLAG_ACK 0x10

/* What the flow key is built from; addresses in network byte order. */
struct cls_flow {
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint8_t proto;
	uint8_t alen; /* 4 or 16; 0 = no IP found */
};

static inline uint16_t
cls_be16(const uint8_t *b)
{
	return (uint16_t)((b[0] << 8) | b[1]);
}

static inline uint64_t
cls_load64(const uint8_t *b)
{
	uint64_t v;

	memcpy(&v, b, sizeof(v));
	return v;
}

static inline uint64_t
cls_load32(const uint8_t *b)
{
	uint32_t v;

	memcpy(&v, b, sizeof(v));
	return v;
}

/*
 * Transport header at off of protocol proto. frag_nofirst: a non-first
 * fragment, whose payload is not a header. Fills ports (unless the packet
 * is a fragment at all), flags and l4_off.
 */
static void
cls_parse_l4(struct sh_pkt *p, struct cls_flow *f, uint32_t off, uint8_t proto, bool is_frag,
	     bool frag_nofirst)
{
	const uint8_t *d = p->data;
	uint32_t need;

	p->l4_proto = proto;
	f->proto = proto;
	if (is_frag)
		p->flags |= SH_PKT_FRAG;
	if (frag_nofirst)
		return;
	switch (proto) {
	case IPPROTO_V_TCP:
		need = 20;
		break;
	case IPPROTO_V_UDP:
		need = 8;
		break;
	case IPPROTO_V_ICMP:
	case IPPROTO_V_ICMPV6:
	case IPPROTO_V_DCCP:
	case IPPROTO_V_SCTP:
	case IPPROTO_V_UDPLITE:
	case IPPROTO_V_ESP:
		need = 4;
		break;
	case IPPROTO_V_AH:
		need = 8;
		break;
	default:
		need = 0;
		break;
	}
	if (!cls_in_frame(p, off, need))
		return;
	if (!is_frag) {
		/* Ports of the other port-based transports; the SPI tells IPsec SAs apart. */
		const uint8_t *k = NULL;

		if (proto == IPPROTO_V_DCCP || proto == IPPROTO_V_SCTP ||
		    proto == IPPROTO_V_UDPLITE || proto == IPPROTO_V_ESP)
			k = d + off;
		else if (proto == IPPROTO_V_AH)
			k = d + off + 4;
		if (k != NULL) {
			f->sport = cls_be16(k);
			f->dport = cls_be16(k + 2);
		}
	}
	p->l4_off = (uint16_t)off;
	if (proto == IPPROTO_V_TCP) {
		uint8_t fl = d[off + 13];

		p->flags |= SH_PKT_TCP;
		if ((fl & TCP_FLAG_ACK) && !(fl & TCP_FLAG_SYN))
			p->flags |= SH_PKT_TCP_ACK;
	} else if (proto == IPPROTO_V_UDP) {
		p->flags |= SH_PKT_UDP;
	}
	if ((proto == IPPROTO_V_TCP || proto == IPPROTO_V_UDP) && !is_frag) {
		f->sport = cls_be16(d + off);
		f->dport = cls_be16(d + off + 2);
	}
}

static void cls_parse_ipv6(struct sh_pkt *p, struct cls_flow *f, uint32_t off, bool outer);

/*
 * IPv4 at off. outer: this is the outermost IP header (sets l3_off, dscp,
 * ecn); an inner one only replaces the flow key and the L4 facts.
 */
static void
cls_parse_ipv4(struct sh_pkt *p, struct cls_flow *f, uint32_t off, bool outer)
{
	const uint8_t *ip = p->data + off;
	uint32_t ihl;
	uint16_t frag;
	bool is_frag, nofirst;

	if (!cls_in_frame(p, off, 20) || (ip[0] >> 4) != 4)
		return;
	ihl = (uint32_t)(ip[0] & 0x0f) * 4;
	if (ihl < 20 || !cls_in_frame(p, off, ihl))
		return;
	if (outer) {
		p->flags |= SH_PKT_IPV4;
		p->l3_off = (uint16_t)off;
		p->dscp = ip[1] >> 2;
		p->ecn = ip[1] & ECN_MASK;
	}
	memcpy(f->src, ip + 12, 4);
	memcpy(f->dst, ip + 16, 4);
	f->alen = 4;
	f->proto = ip[9];
	frag = cls_be16(ip + 6);
	nofirst = (frag & 0x1fff) != 0;
	is_frag = nofirst || (frag & 0x2000) != 0;
	/* Only an unfragmented outer packet can hold a whole inner header. */
	if (outer && !is_frag && ip[9] == IPPROTO_V_IPIP) {
		struct cls_flow in = { .alen = 0 };

		cls_parse_ipv4(p, &in, off + ihl, false);
		if (in.alen != 0) {
			*f = in;
			return;
		}
	} else if (outer && !is_frag && ip[9] == IPPROTO_V_IPV6) {
		struct cls_flow in = { .alen = 0 };

		cls_parse_ipv6(p, &in, off + ihl, false);
		if (in.alen != 0) {
			*f = in;
			return;
		}
	}
	cls_parse_l4(p, f, off + ihl, ip[9], is_frag, nofirst);
}

static void
cls_parse_ipv6(struct sh_pkt *p, struct cls_flow *f, uint32_t off, bool outer)
{
	const uint8_t *d = p->data;
	const uint8_t *ip = d + off;
	uint8_t nh;
	uint32_t pos, hl;
	bool is_frag = false, nofirst = false;
	unsigned int n;

	if (!cls_in_frame(p, off, 40) || (ip[0] >> 4) != 6)
		return;
	if (outer) {
		uint8_t tc = cls_ipv6_get_tc(ip);

		p->flags |= SH_PKT_IPV6;
		p->l3_off = (uint16_t)off;
		p->dscp = tc >> 2;
		p->ecn = tc & ECN_MASK;
	}
	memcpy(f->src, ip + 8, 16);
	memcpy(f->dst, ip + 24, 16);
	f->alen = 16;
	nh = ip[6];
	f->proto = nh;
	pos = off + 40;
	for (n = 0; n < CLS_MAX_V6_EXT; n++) {
		switch (nh) {
		case 0:  /* hop-by-hop */
		case 43: /* routing */
		case 60: /* destination options */
			if (!cls_in_frame(p, pos, 2))
				return;
			hl = ((uint32_t)d[pos + 1] + 1) * 8;
			break;
		case 44: { /* fragment */
			uint16_t fo;

			if (!cls_in_frame(p, pos, 8))
				return;
			fo = cls_be16(d + pos + 2);
			is_frag = true;
			hl = 8;
			if ((fo & 0xfff8) != 0) {
				/* What follows is payload, not headers. */
				nofirst = true;
				nh = d[pos];
				f->proto = nh;
				pos += hl;
				goto done;
			}
			break;
		}
		default:
			/* AH (51) ends the walk too: its SPI keys the flow, as in IPv4. */
			goto done;
		}
		if (!cls_in_frame(p, pos, hl))
			return;
		nh = d[pos];
		f->proto = nh;
		pos += hl;
	}
	/* Too many extension headers: keep the addresses, skip L4. */
	return;
done:
	if (outer && !is_frag && (nh == IPPROTO_V_IPIP || nh == IPPROTO_V_IPV6)) {
		struct cls_flow in = { .alen = 0 };

		if (nh == IPPROTO_V_IPIP)
			cls_parse_ipv4(p, &in, pos, false);
		else
			cls_parse_ipv6(p, &in, pos, false);
		if (in.alen != 0) {
			*f = in;
			return;
		}
	}
	cls_parse_l4(p, f, pos, nh, is_frag, nofirst);
}

/* Big-endian (memcmp) order of two 4-byte addresses loaded natively. */
static inline uint32_t
cls_bswap32(uint32_t v)
{
	return __builtin_bswap32(v);
}

/*
 * Direction-symmetric flow hashes: order the two (address, port) endpoints
 * so that A->B and B->A feed identical words. Addresses compare as memcmp
 * would (big-endian integers), without a libc call.
 */
static inline uint32_t
cls_flow_hash4(const struct classify_key *key, uint32_t sa, uint32_t da, uint16_t sport,
	       uint16_t dport, uint8_t proto, uint32_t vlan)
{
	uint32_t bs = cls_bswap32(sa), bd = cls_bswap32(da);
	uint64_t w[3];

	if (bs > bd || (bs == bd && sport > dport)) {
		uint32_t ta = sa;
		uint16_t tp = sport;

		sa = da;
		da = ta;
		sport = dport;
		dport = tp;
	}
	w[0] = (uint64_t)sa | ((uint64_t)da << 32);
	w[1] = ((uint64_t)sport << 16) | dport | ((uint64_t)proto << 32) | (4ULL << 40);
	if (vlan == 0)
		return cls_hash_words(key, w, 2, CLS_TAG_FLOW);
	/* A tagged flow takes one word more (the length is hashed: no overlap). */
	w[2] = vlan;
	return cls_hash_words(key, w, 3, CLS_TAG_FLOW);
}

static inline uint32_t
cls_flow_hash6(const struct classify_key *key, const uint8_t *src, const uint8_t *dst,
	       uint16_t sport, uint16_t dport, uint8_t proto, uint32_t vlan)
{
	uint64_t s0 = cls_load64(src), s1 = cls_load64(src + 8);
	uint64_t d0 = cls_load64(dst), d1 = cls_load64(dst + 8);
	uint64_t bs0 = __builtin_bswap64(s0), bd0 = __builtin_bswap64(d0);
	uint64_t bs1 = __builtin_bswap64(s1), bd1 = __builtin_bswap64(d1);
	bool swap = bs0 > bd0 || (bs0 == bd0 && (bs1 > bd1 || (bs1 == bd1 && sport > dport)));
	uint64_t w[6];

	if (swap) {
		w[0] = d0;
		w[1] = d1;
		w[2] = s0;
		w[3] = s1;
		w[4] = ((uint64_t)dport << 16) | sport;
	} else {
		w[0] = s0;
		w[1] = s1;
		w[2] = d0;
		w[3] = d1;
		w[4] = ((uint64_t)sport << 16) | dport;
	}
	w[4] |= ((uint64_t)proto << 32) | (16ULL << 40);
	if (vlan == 0)
		return cls_hash_words(key, w, 5, CLS_TAG_FLOW);
	w[5] = vlan;
	return cls_hash_words(key, w, 6, CLS_TAG_FLOW);
}

static uint32_t
cls_flow_hash(const struct classify_key *key, const struct cls_flow *f, uint32_t vlan)
{
	if (f->alen == 4)
		return cls_flow_hash4(key, (uint32_t)cls_load32(f->src),
				      (uint32_t)cls_load32(f->dst), f->sport, f->dport, f->proto,
				      vlan);
	return cls_flow_hash6(key, f->src, f->dst, f->sport, f->dport, f->proto, vlan);
}

uint32_t
classify_flow_hash_vlan(const struct classify_key *key, uint32_t vlan, uint8_t family,
			const uint8_t *src, const uint8_t *dst, uint16_t sport, uint16_t dport,
			uint8_t proto)
{
	struct cls_flow f = { .sport = sport, .dport = dport, .proto = proto };

	f.alen = family == 4 ? 4 : 16;
	memcpy(f.src, src, f.alen);
	memcpy(f.dst, dst, f.alen);
	return cls_flow_hash(key, &f, vlan);
}

uint32_t
classify_flow_hash(const struct classify_key *key, uint8_t family, const uint8_t *src,
		   const uint8_t *dst, uint16_t sport, uint16_t dport, uint8_t proto)
{
	return classify_flow_hash_vlan(key, 0, family, src, dst, sport, dport, proto);
}

/* Host hash of an IPv4 address loaded natively (as cls_host_hash). */
static inline uint32_t
cls_host_hash4(const struct classify_key *key, uint32_t a)
{
	uint64_t w = (uint64_t)a | (4ULL << 32);

	return cls_hash_words(key, &w, 1, CLS_TAG_HOST);
}

static inline uint32_t
cls_host_hash6(const struct classify_key *key, const uint8_t *a)
{
	uint64_t w[2] = { cls_load64(a), cls_load64(a + 8) };

	return cls_hash_words(key, w, 2, CLS_TAG_HOST);
}

/* Host hash: the address alone, as CAKE's srchost/dsthost hashes. */
static uint32_t
cls_host_hash(const struct classify_key *key, const uint8_t *a, uint8_t alen)
{
	if (alen == 4)
		return cls_host_hash4(key, (uint32_t)cls_load32(a));
	return cls_host_hash6(key, a);
}

/* Non-IP: ethertype plus the MAC pair, sorted for symmetry, and the VLAN ids. */
static uint32_t
cls_l2_hash(const struct classify_key *key, const uint8_t *d, uint16_t etype, uint32_t vlan)
{
	uint64_t a = 0, b = 0, w[3];

	memcpy(&a, d, 6);
	memcpy(&b, d + 6, 6);
	if (a > b) {
		uint64_t t = a;

		a = b;
		b = t;
	}
	w[0] = a | ((uint64_t)etype << 48);
	w[1] = b;
	if (vlan == 0)
		return cls_hash_words(key, w, 2, CLS_TAG_L2);
	w[2] = vlan;
	return cls_hash_words(key, w, 3, CLS_TAG_L2);
}

/*
 * The common case in one straight line: untagged Ethernet, IPv4 without
 * options or IPv6 without extension headers, unfragmented TCP or UDP, all
 * headers inside the frame. Fills exactly what the general parser would
 * (same hashes); returns false to leave any other frame to it.
 */
static inline __attribute__((always_inline)) bool
cls_fast(struct sh_pkt *p, const struct classify_key *key)
{
	const uint8_t *d = p->data;
	const uint8_t *ip = d + ETH_HLEN;
	uint32_t len = p->hdr_len;
	uint16_t etype, sport, dport;
	uint8_t proto, ds, fl = 0;
	uint32_t l4;

	if (len < ETH_HLEN + 20 + 8)
		return false;
	etype = cls_be16(d + 12);
	if (etype == ETH_P_IPV4) {
		uint32_t sa, da;

		/* Version 4, IHL 5; no MF, offset 0 (DF allowed). */
		if (ip[0] != 0x45 || (cls_be16(ip + 6) & 0x3fff) != 0)
			return false;
		proto = ip[9];
		l4 = ETH_HLEN + 20;
		if (proto == IPPROTO_V_TCP) {
			if (len < l4 + 20)
				return false;
			fl = SH_PKT_IPV4 | SH_PKT_TCP;
		} else if (proto == IPPROTO_V_UDP) {
			fl = SH_PKT_IPV4 | SH_PKT_UDP;
		} else {
			return false;
		}
		ds = ip[1];
		sa = (uint32_t)cls_load32(ip + 12);
		da = (uint32_t)cls_load32(ip + 16);
		sport = cls_be16(d + l4);
		dport = cls_be16(d + l4 + 2);
		p->flow_hash = cls_flow_hash4(key, sa, da, sport, dport, proto, 0);
		p->src_hash = cls_host_hash4(key, sa);
		p->dst_hash = cls_host_hash4(key, da);
	} else if (etype == ETH_P_IPV6) {
		l4 = ETH_HLEN + 40;
		if ((ip[0] >> 4) != 6 || len < l4 + 8)
			return false;
		proto = ip[6];
		if (proto == IPPROTO_V_TCP) {
			if (len < l4 + 20)
				return false;
			fl = SH_PKT_IPV6 | SH_PKT_TCP;
		} else if (proto == IPPROTO_V_UDP) {
			fl = SH_PKT_IPV6 | SH_PKT_UDP;
		} else {
			return false;
		}
		ds = cls_ipv6_get_tc(ip);
		sport = cls_be16(d + l4);
		dport = cls_be16(d + l4 + 2);
		p->flow_hash = cls_flow_hash6(key, ip + 8, ip + 24, sport, dport, proto, 0);
		p->src_hash = cls_host_hash6(key, ip + 8);
		p->dst_hash = cls_host_hash6(key, ip + 24);
	} else {
		return false;
	}
	if (proto == IPPROTO_V_TCP) {
		uint8_t tf = d[l4 + 13];

		if ((tf & TCP_FLAG_ACK) && !(tf & TCP_FLAG_SYN))
			fl |= SH_PKT_TCP_ACK;
	}
	p->l3_off = ETH_HLEN;
	p->l4_off = (uint16_t)l4;
	p->dscp = ds >> 2;
	p->ecn = ds & ECN_MASK;
	p->l4_proto = proto;
	p->flags = fl;
	p->net_off = ETH_HLEN;
	return true;
}

/* Everything cls_fast declines: tags, PPPoE, options, tunnels, fragments... */
static __attribute__((noinline)) void
cls_slow(struct sh_pkt *p, const struct classify_key *key)
{
	const uint8_t *d = p->data;
	struct cls_flow f;
	uint32_t off = 12, vlan = 0;
	uint16_t etype;
	unsigned int tags;

	p->flow_hash = p->src_hash = p->dst_hash = 0;
	p->l3_off = p->l4_off = SH_OFF_NONE;
	p->dscp = p->ecn = p->l4_proto = p->flags = 0;
	p->net_off = ETH_HLEN;
	if (d == NULL || p->hdr_len < ETH_HLEN)
		return;

	etype = cls_be16(d + off);
	for (tags = 0; tags < CLS_MAX_VLAN &&
		       (etype == ETH_P_8021Q || etype == ETH_P_8021AD || etype == ETH_P_QINQ_OLD);
	     tags++) {
		if (!cls_in_frame(p, off + 4, 2)) {
			p->net_off = (uint8_t)(off + 2);
			goto non_ip; /* cut inside the tags: hash what we have */
		}
		/* The VLAN ids (low 12 bits of the TCI) of the outer two tags. */
		if (tags < 2)
			vlan |= (uint32_t)(cls_be16(d + off + 2) & 0x0fff) << (tags == 0 ? 12 : 0);
		off += 4;
		etype = cls_be16(d + off);
	}
	off += 2;
	p->net_off = (uint8_t)off;

	if (etype == ETH_P_PPPOE_SES) {
		/* 6 bytes PPPoE header, then the 2-byte PPP protocol. */
		if (!cls_in_frame(p, off, 8))
			goto non_ip;
		switch (cls_be16(d + off + 6)) {
		case PPP_IPV4:
			etype = ETH_P_IPV4;
			break;
		case PPP_IPV6:
			etype = ETH_P_IPV6;
			break;
		default:
			goto non_ip;
		}
		off += 8;
		p->net_off = (uint8_t)off;
	}

	memset(&f, 0, sizeof(f));
	if (etype == ETH_P_IPV4)
		cls_parse_ipv4(p, &f, off, true);
	else if (etype == ETH_P_IPV6)
		cls_parse_ipv6(p, &f, off, true);
	if (f.alen != 0) {
		p->flow_hash = cls_flow_hash(key, &f, vlan);
		p->src_hash = cls_host_hash(key, f.src, f.alen);
		p->dst_hash = cls_host_hash(key, f.dst, f.alen);
		return;
	}
	/* An IP ethertype with a broken header lands here as plain non-IP. */
	p->flags = 0;
	p->l3_off = p->l4_off = SH_OFF_NONE;
	p->dscp = p->ecn = p->l4_proto = 0;
non_ip:
	if (etype == ETH_P_ARP) {
		p->flags |= SH_PKT_ARP;
		p->dscp = 56; /* CS7, as CAKE treats ARP */
	}
	p->flow_hash = cls_l2_hash(key, d, etype, vlan);
}

void
classify_pkt(struct sh_pkt *p, const struct classify_key *key)
{
	if (p->data == NULL || !cls_fast(p, key))
		cls_slow(p, key);
}

void
classify_burst(struct sh_pkt **pkts, unsigned int n, const struct classify_key *key)
{
	unsigned int i;

	/* Headers of packet i+1 load while packet i is parsed. */
	if (n > 0)
		__builtin_prefetch(pkts[0]->data);
	for (i = 0; i < n; i++) {
		if (i + 2 < n)
			__builtin_prefetch(pkts[i + 2]);
		if (i + 1 < n)
			__builtin_prefetch(pkts[i + 1]->data);
		classify_pkt(pkts[i], key);
	}
}
