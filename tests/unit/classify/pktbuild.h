/*
 * Test helper: builds Ethernet frames (VLAN, PPPoE, IPv4, IPv6 with
 * extension headers, 6in4, TCP with options, UDP, ICMP, ARP) byte by byte,
 * with correct IPv4 header checksums, so the classifier, the ACK filter and
 * fq_codel tests share one way of making packets.
 */
#ifndef SHAPER_TEST_PKTBUILD_H
#define SHAPER_TEST_PKTBUILD_H

#include <stdint.h>
#include <string.h>

#include "shaper/pkt.h"

#define PB_MAX 2048

struct pb {
	uint8_t b[PB_MAX];
	uint32_t len;
	uint32_t ip_off;  /* last IP header started */
	uint32_t ip4_off; /* last IPv4 header, for total length/checksum */
	uint32_t ip6_off; /* last IPv6 header, for payload length */
	int has_ip4, has_ip6;
	uint32_t ip4_outer; /* first IPv4 header (6in4 outer) */
	int has_ip4_outer;
};

static inline void
pb_init(struct pb *p)
{
	memset(p, 0, sizeof(*p));
}

static inline void
pb_u8(struct pb *p, uint8_t v)
{
	p->b[p->len++] = v;
}

static inline void
pb_u16(struct pb *p, uint16_t v)
{
	pb_u8(p, (uint8_t)(v >> 8));
	pb_u8(p, (uint8_t)v);
}

static inline void
pb_u32(struct pb *p, uint32_t v)
{
	pb_u16(p, (uint16_t)(v >> 16));
	pb_u16(p, (uint16_t)v);
}

static inline void
pb_bytes(struct pb *p, const void *d, uint32_t n)
{
	memcpy(p->b + p->len, d, n);
	p->len += n;
}

static inline void
pb_zero(struct pb *p, uint32_t n)
{
	memset(p->b + p->len, 0, n);
	p->len += n;
}

/* Ethernet header up to, not including, the ethertype. */
static inline void
pb_eth_macs(struct pb *p, uint8_t dst_last, uint8_t src_last)
{
	uint8_t d[6] = { 0x02, 0, 0, 0, 0, dst_last };
	uint8_t s[6] = { 0x02, 0, 0, 0, 1, src_last };

	pb_bytes(p, d, 6);
	pb_bytes(p, s, 6);
}

static inline void
pb_vlan(struct pb *p, uint16_t tpid, uint16_t vid)
{
	pb_u16(p, tpid);
	pb_u16(p, vid);
}

/* PPPoE session header + PPP protocol; payload length patched by pb_finish. */
static inline void
pb_pppoe(struct pb *p, uint16_t ppp_proto)
{
	pb_u16(p, 0x8864);
	pb_u8(p, 0x11);
	pb_u8(p, 0x00);
	pb_u16(p, 0x1234);
	pb_u16(p, 0); /* length, not checked by the classifier */
	pb_u16(p, ppp_proto);
}

static inline void
pb_ipv4(struct pb *p, uint32_t src, uint32_t dst, uint8_t proto, uint8_t tos, uint16_t frag,
	uint32_t opt_words)
{
	if (!p->has_ip4_outer) {
		p->ip4_outer = p->len;
		p->has_ip4_outer = 1;
	}
	p->ip_off = p->ip4_off = p->len;
	p->has_ip4 = 1;
	pb_u8(p, (uint8_t)(0x45 + opt_words));
	pb_u8(p, tos);
	pb_u16(p, 0); /* total length, patched */
	pb_u16(p, 0x1111);
	pb_u16(p, frag);
	pb_u8(p, 64);
	pb_u8(p, proto);
	pb_u16(p, 0); /* checksum, patched */
	pb_u32(p, src);
	pb_u32(p, dst);
	for (uint32_t i = 0; i < opt_words; i++)
		pb_u32(p, 0x01010101); /* NOPs */
}

static inline void
pb_ipv6(struct pb *p, const uint8_t src[16], const uint8_t dst[16], uint8_t nh, uint8_t tc,
	uint32_t flow_label)
{
	p->ip_off = p->ip6_off = p->len;
	p->has_ip6 = 1;
	pb_u32(p, (6u << 28) | ((uint32_t)tc << 20) | (flow_label & 0xfffff));
	pb_u16(p, 0); /* payload length, patched */
	pb_u8(p, nh);
	pb_u8(p, 64);
	pb_bytes(p, src, 16);
	pb_bytes(p, dst, 16);
}

/* Generic IPv6 extension header (hop-by-hop, routing, dest opts): 8*(n+1) bytes. */
static inline void
pb_ipv6_ext(struct pb *p, uint8_t nh, uint8_t len8)
{
	pb_u8(p, nh);
	pb_u8(p, len8);
	pb_zero(p, 6 + 8u * len8);
}

static inline void
pb_ipv6_frag(struct pb *p, uint8_t nh, uint16_t offset8, int more)
{
	pb_u8(p, nh);
	pb_u8(p, 0);
	pb_u16(p, (uint16_t)((offset8 << 3) | (more ? 1 : 0)));
	pb_u32(p, 0xabcdef01);
}

/* AH: length field in 4-byte units minus 2; n4 = payload words after the 12 fixed bytes. */
/* IPv6 AH with this SPI, 12 + 4*n4 bytes. */
static inline void
pb_ipv6_ah_spi(struct pb *p, uint8_t nh, uint8_t n4, uint32_t spi)
{
	pb_u8(p, nh);
	pb_u8(p, (uint8_t)(n4 + 1));
	pb_u16(p, 0);
	pb_u32(p, spi);
	pb_u32(p, 1);
	pb_zero(p, 4u * n4);
}

static inline void
pb_ipv6_ah(struct pb *p, uint8_t nh, uint8_t n4)
{
	pb_ipv6_ah_spi(p, nh, n4, 0x100);
}

#define PB_FIN 0x01
#define PB_SYN 0x02
#define PB_RST 0x04
#define PB_PSH 0x08
#define PB_ACK 0x10
#define PB_URG 0x20
#define PB_ECE 0x40
#define PB_CWR 0x80

/* TCP header with raw options, padded with EOL to a multiple of 4. */
static inline void
pb_tcp(struct pb *p, uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack, uint8_t flags,
       const uint8_t *opts, uint32_t optlen)
{
	uint32_t pad = (4 - optlen % 4) % 4;

	pb_u16(p, sport);
	pb_u16(p, dport);
	pb_u32(p, seq);
	pb_u32(p, ack);
	pb_u8(p, (uint8_t)(((20 + optlen + pad) / 4) << 4));
	pb_u8(p, flags);
	pb_u16(p, 65535);
	pb_u16(p, 0);
	pb_u16(p, 0);
	if (optlen)
		pb_bytes(p, opts, optlen);
	for (uint32_t i = 0; i < pad; i++)
		pb_u8(p, 0); /* EOL */
}

static inline void
pb_udp(struct pb *p, uint16_t sport, uint16_t dport)
{
	pb_u16(p, sport);
	pb_u16(p, dport);
	pb_u16(p, 8);
	pb_u16(p, 0);
}

static inline uint16_t
pb_csum(const uint8_t *d, uint32_t n)
{
	uint32_t s = 0;

	for (uint32_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)((d[i] << 8) | d[i + 1]);
	if (n & 1)
		s += (uint32_t)(d[n - 1] << 8);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Patch lengths and checksums of the IP headers written so far. */
static inline void
pb_finish(struct pb *p)
{
	if (p->has_ip6) {
		uint32_t pl = p->len - p->ip6_off - 40;

		p->b[p->ip6_off + 4] = (uint8_t)(pl >> 8);
		p->b[p->ip6_off + 5] = (uint8_t)pl;
	}
	if (p->has_ip4) {
		uint32_t offs[2] = { p->ip4_outer, p->ip4_off };

		for (int i = 0; i < 2; i++) {
			uint8_t *ip = p->b + offs[i];
			uint32_t tl = p->len - offs[i];
			uint32_t ihl = (ip[0] & 0x0f) * 4u;

			ip[2] = (uint8_t)(tl >> 8);
			ip[3] = (uint8_t)tl;
			ip[10] = ip[11] = 0;
			uint16_t c = pb_csum(ip, ihl);
			ip[10] = (uint8_t)(c >> 8);
			ip[11] = (uint8_t)c;
		}
	}
}

/* Point an sh_pkt at the built frame. */
static inline void
pb_to_pkt(struct pb *p, struct sh_pkt *pkt)
{
	memset(pkt, 0, sizeof(*pkt));
	pkt->data = p->b;
	pkt->len = pkt->hdr_len = p->len;
	pkt->mem = p->len + 256;
}

/* A whole IPv4/TCP frame in one call. */
static inline void
pb_ipv4_tcp(struct pb *p, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, uint32_t seq,
	    uint32_t ack, uint8_t flags, const uint8_t *opts, uint32_t optlen, uint32_t payload)
{
	pb_init(p);
	pb_eth_macs(p, 1, 2);
	pb_u16(p, 0x0800);
	pb_ipv4(p, src, dst, 6, 0, 0x4000, 0);
	pb_tcp(p, sport, dport, seq, ack, flags, opts, optlen);
	for (uint32_t i = 0; i < payload; i++)
		pb_u8(p, (uint8_t)i);
	pb_finish(p);
}

#endif
