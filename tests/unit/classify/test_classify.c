/*
 * Classifier tests: header parsing (Ethernet, VLAN/QinQ, PPPoE, IPv4 with
 * options and fragments, IPv6 extension headers, 6in4, ARP), DSCP/ECN
 * extraction, the symmetric keyed flow hash, frames truncated at every
 * length (guard pages catch any out-of-frame read), random garbage, and
 * the DS-field rewrites (set_dscp, set_ce) with their IPv4 checksum.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "shaper/classify.h"
#include "shaper/rand.h"
#include "guard.h"
#include "pktbuild.h"

#define IP4(a, b, c, d) (((uint32_t)(a) << 24) | ((b) << 16) | ((c) << 8) | (d))

static const uint8_t v6a[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
static const uint8_t v6b[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2 };

static struct classify_key key;

static int
setup(void **state)
{
	(void)state;
	classify_key_init(&key, 12345);
	return 0;
}

static void
classify(struct pb *b, struct sh_pkt *p)
{
	pb_to_pkt(b, p);
	classify_pkt(p, &key);
}

static void
build_v4_tcp(struct pb *b, uint32_t s, uint32_t d, uint16_t sp, uint16_t dp, uint8_t flags,
	     uint8_t tos)
{
	pb_init(b);
	pb_eth_macs(b, 1, 2);
	pb_u16(b, 0x0800);
	pb_ipv4(b, s, d, 6, tos, 0x4000, 0);
	pb_tcp(b, sp, dp, 1, 1, flags, NULL, 0);
	pb_zero(b, 10);
	pb_finish(b);
}

static void
build_v6_udp(struct pb *b, const uint8_t *s, const uint8_t *d, uint16_t sp, uint16_t dp, uint8_t tc,
	     uint32_t label)
{
	pb_init(b);
	pb_eth_macs(b, 1, 2);
	pb_u16(b, 0x86dd);
	pb_ipv6(b, s, d, 17, tc, label);
	pb_udp(b, sp, dp);
	pb_zero(b, 20);
	pb_finish(b);
}

/* ---- parsing ---- */

static void
test_ipv4_tcp(void **state)
{
	struct pb b;
	struct sh_pkt p;

	(void)state;
	/* TOS 0xb9: DSCP 46 (EF), ECN ECT(1). */
	build_v4_tcp(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 1000, 80, PB_ACK, 0xb9);
	classify(&b, &p);
	assert_int_equal(p.flags, SH_PKT_IPV4 | SH_PKT_TCP | SH_PKT_TCP_ACK);
	assert_int_equal(p.l3_off, 14);
	assert_int_equal(p.l4_off, 34);
	assert_int_equal(p.net_off, 14);
	assert_int_equal(p.l4_proto, 6);
	assert_int_equal(p.dscp, 46);
	assert_int_equal(p.ecn, 1);
	assert_int_not_equal(p.src_hash, 0);
	assert_int_not_equal(p.dst_hash, 0);
	assert_int_not_equal(p.src_hash, p.dst_hash);

	build_v4_tcp(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 1000, 80, PB_SYN, 0);
	classify(&b, &p);
	assert_int_equal(p.flags, SH_PKT_IPV4 | SH_PKT_TCP);
	build_v4_tcp(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 1000, 80, PB_SYN | PB_ACK, 0);
	classify(&b, &p);
	assert_int_equal(p.flags, SH_PKT_IPV4 | SH_PKT_TCP);
	build_v4_tcp(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 1000, 80, PB_PSH | PB_ACK | PB_FIN, 0);
	classify(&b, &p);
	assert_int_equal(p.flags, SH_PKT_IPV4 | SH_PKT_TCP | SH_PKT_TCP_ACK);

	/* The same flags through the general parser (an IPv4 option word). */
	for (int k = 0; k < 4; k++) {
		static const uint8_t flags[4] = { PB_ACK, PB_SYN, PB_SYN | PB_ACK,
						  PB_FIN | PB_ACK };

		pb_init(&b);
		pb_eth_macs(&b, 1, 2);
		pb_u16(&b, 0x0800);
		pb_ipv4(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 6, 0, 0x4000, 1);
		pb_tcp(&b, 1000, 80, 1, 1, flags[k], NULL, 0);
		pb_finish(&b);
		classify(&b, &p);
		assert_int_equal(p.l4_off, 38);
		assert_int_equal(p.flags, SH_PKT_IPV4 | SH_PKT_TCP |
							  (flags[k] & PB_SYN ? 0 : SH_PKT_TCP_ACK));
	}
}

static void
test_ipv4_options_udp_icmp(void **state)
{
	struct pb b;
	struct sh_pkt p;

	(void)state;
	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_u16(&b, 0x0800);
	pb_ipv4(&b, IP4(1, 2, 3, 4), IP4(5, 6, 7, 8), 17, 0x20, 0, 2); /* IHL 7 */
	pb_udp(&b, 53, 5353);
	pb_finish(&b);
	classify(&b, &p);
	assert_int_equal(p.flags, SH_PKT_IPV4 | SH_PKT_UDP);
	assert_int_equal(p.l4_off, 14 + 28);
	assert_int_equal(p.l4_proto, 17);
	assert_int_equal(p.dscp, 8);
	assert_int_equal(p.ecn, 0);

	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_u16(&b, 0x0800);
	pb_ipv4(&b, IP4(1, 2, 3, 4), IP4(5, 6, 7, 8), 1, 0, 0, 0);
	pb_u32(&b, 0x08000000);
	pb_u32(&b, 0x00010001);
	pb_finish(&b);
	classify(&b, &p);
	assert_int_equal(p.flags, SH_PKT_IPV4);
	assert_int_equal(p.l4_proto, 1);
	assert_int_equal(p.l4_off, 34);
}

static void
test_vlan_qinq(void **state)
{
	struct pb b;
	struct sh_pkt p;
	uint16_t tpids[3] = { 0x8100, 0x88a8, 0x9100 };

	(void)state;
	for (int n = 1; n <= 3; n++) {
		pb_init(&b);
		pb_eth_macs(&b, 1, 2);
		for (int i = 0; i < n; i++)
			pb_vlan(&b, tpids[(3 - n + i) % 3], (uint16_t)(100 + i));
		pb_u16(&b, 0x0800);
		pb_ipv4(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 6, 0x28, 0, 0);
		pb_tcp(&b, 1, 2, 0, 0, PB_ACK, NULL, 0);
		pb_finish(&b);
		classify(&b, &p);
		assert_int_equal(p.net_off, 14 + 4 * n);
		assert_int_equal(p.l3_off, 14 + 4 * n);
		assert_int_equal(p.l4_off, 34 + 4 * n);
		assert_int_equal(p.dscp, 10);
		assert_int_equal(p.flags, SH_PKT_IPV4 | SH_PKT_TCP | SH_PKT_TCP_ACK);
	}
	/* QinQ around IPv6 */
	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_vlan(&b, 0x88a8, 7);
	pb_vlan(&b, 0x8100, 8);
	pb_u16(&b, 0x86dd);
	pb_ipv6(&b, v6a, v6b, 6, 0xb8, 0);
	pb_tcp(&b, 1, 2, 0, 0, PB_ACK, NULL, 0);
	pb_finish(&b);
	classify(&b, &p);
	assert_int_equal(p.net_off, 22);
	assert_int_equal(p.l4_off, 22 + 40);
	assert_int_equal(p.dscp, 46);
	assert_int_equal(p.flags, SH_PKT_IPV6 | SH_PKT_TCP | SH_PKT_TCP_ACK);
}

static void
test_pppoe(void **state)
{
	struct pb b;
	struct sh_pkt p;

	(void)state;
	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_pppoe(&b, 0x0021);
	pb_ipv4(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 17, 0x03, 0, 0);
	pb_udp(&b, 1, 2);
	pb_finish(&b);
	classify(&b, &p);
	assert_int_equal(p.net_off, 22);
	assert_int_equal(p.l3_off, 22);
	assert_int_equal(p.l4_off, 42);
	assert_int_equal(p.ecn, 3);
	assert_int_equal(p.flags, SH_PKT_IPV4 | SH_PKT_UDP);

	/* VLAN + PPPoE + IPv6 */
	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_vlan(&b, 0x8100, 35);
	pb_pppoe(&b, 0x0057);
	pb_ipv6(&b, v6a, v6b, 17, 0x22, 0);
	pb_udp(&b, 1, 2);
	pb_finish(&b);
	classify(&b, &p);
	assert_int_equal(p.net_off, 26);
	assert_int_equal(p.l3_off, 26);
	assert_int_equal(p.l4_off, 66);
	assert_int_equal(p.dscp, 8);
	assert_int_equal(p.ecn, 2);
	assert_int_equal(p.flags, SH_PKT_IPV6 | SH_PKT_UDP);

	/* PPPoE LCP: not IP */
	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_pppoe(&b, 0xc021);
	pb_zero(&b, 20);
	classify(&b, &p);
	assert_int_equal(p.flags, 0);
	assert_int_equal(p.l3_off, SH_OFF_NONE);
	assert_int_equal(p.dscp, 0);
	assert_int_equal(p.src_hash, 0);
	assert_int_equal(p.dst_hash, 0);
}

static void
test_arp_and_non_ip(void **state)
{
	struct pb b, r;
	struct sh_pkt p, q;

	(void)state;
	pb_init(&b);
	pb_eth_macs(&b, 0xff, 2);
	pb_vlan(&b, 0x8100, 5);
	pb_u16(&b, 0x0806);
	pb_zero(&b, 28);
	classify(&b, &p);
	assert_int_equal(p.flags, SH_PKT_ARP);
	assert_int_equal(p.dscp, 56);
	assert_int_equal(p.net_off, 18);
	assert_int_equal(p.l3_off, SH_OFF_NONE);
	assert_int_equal(p.l4_off, SH_OFF_NONE);
	assert_int_equal(p.src_hash, 0);
	assert_int_equal(p.dst_hash, 0);

	/* LLDP: DSCP 0; flow hash symmetric in the MACs, distinct per ethertype */
	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_u16(&b, 0x88cc);
	pb_zero(&b, 40);
	pb_init(&r);
	pb_bytes(&r, b.b + 6, 6);
	pb_bytes(&r, b.b, 6);
	pb_u16(&r, 0x88cc);
	pb_zero(&r, 40);
	classify(&b, &p);
	classify(&r, &q);
	assert_int_equal(p.dscp, 0);
	assert_int_equal(p.flags, 0);
	assert_int_equal(p.flow_hash, q.flow_hash);
	b.b[12] = 0x88;
	b.b[13] = 0xcd;
	classify(&b, &q);
	assert_int_not_equal(p.flow_hash, q.flow_hash);
}

static void
test_ipv6_ext_headers(void **state)
{
	struct pb b;
	struct sh_pkt p;

	(void)state;
	/* HBH(8) -> routing(24) -> dest opts(16) -> TCP */
	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_u16(&b, 0x86dd);
	pb_ipv6(&b, v6a, v6b, 0, 0x04, 0x12345);
	pb_ipv6_ext(&b, 43, 0);
	pb_ipv6_ext(&b, 60, 2);
	pb_ipv6_ext(&b, 6, 1);
	pb_tcp(&b, 443, 50000, 7, 9, PB_ACK, NULL, 0);
	pb_finish(&b);
	classify(&b, &p);
	assert_int_equal(p.flags, SH_PKT_IPV6 | SH_PKT_TCP | SH_PKT_TCP_ACK);
	assert_int_equal(p.l4_off, 14 + 40 + 8 + 24 + 16);
	assert_int_equal(p.l4_proto, 6);
	assert_int_equal(p.dscp, 1);

	/* AH after extension headers ends the walk: the SPI is the key, not the ports */
	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_u16(&b, 0x86dd);
	pb_ipv6(&b, v6a, v6b, 0, 0, 0);
	pb_ipv6_ext(&b, 51, 0);
	pb_ipv6_ah(&b, 6, 3);
	pb_tcp(&b, 443, 50000, 7, 9, PB_ACK, NULL, 0);
	pb_finish(&b);
	classify(&b, &p);
	assert_int_equal(p.flags, SH_PKT_IPV6);
	assert_int_equal(p.l4_proto, 51);
	assert_int_equal(p.l4_off, 14 + 40 + 8);

	/* unknown next header stops the walk: proto reported, no flags */
	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_u16(&b, 0x86dd);
	pb_ipv6(&b, v6a, v6b, 0, 0, 0);
	pb_ipv6_ext(&b, 50, 0); /* ESP */
	pb_zero(&b, 16);
	pb_finish(&b);
	classify(&b, &p);
	assert_int_equal(p.flags, SH_PKT_IPV6);
	assert_int_equal(p.l4_proto, 50);
	assert_int_equal(p.l4_off, 14 + 48);
	assert_int_not_equal(p.flow_hash, 0);

	/* ICMPv6 */
	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_u16(&b, 0x86dd);
	pb_ipv6(&b, v6a, v6b, 58, 0, 0);
	pb_u32(&b, 0x80000000);
	pb_finish(&b);
	classify(&b, &p);
	assert_int_equal(p.flags, SH_PKT_IPV6);
	assert_int_equal(p.l4_proto, 58);
	assert_int_equal(p.l4_off, 54);
}

static void
test_fragments(void **state)
{
	struct pb b;
	struct sh_pkt whole, first, later, v6first, v6later;

	(void)state;
	build_v4_tcp(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 1000, 80, PB_ACK, 0);
	classify(&b, &whole);

	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_u16(&b, 0x0800);
	pb_ipv4(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 6, 0, 0x2000, 0); /* MF */
	pb_tcp(&b, 1000, 80, 1, 1, PB_ACK, NULL, 0);
	pb_finish(&b);
	classify(&b, &first);
	assert_true(first.flags & SH_PKT_FRAG);
	assert_true(first.flags & SH_PKT_TCP);
	assert_int_equal(first.l4_off, 34);

	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_u16(&b, 0x0800);
	pb_ipv4(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 6, 0, 185, 0); /* offset 1480 */
	pb_tcp(&b, 5555, 6666, 1, 1, PB_ACK, NULL, 0); /* payload bytes, not a header */
	pb_finish(&b);
	classify(&b, &later);
	assert_int_equal(later.flags, SH_PKT_IPV4 | SH_PKT_FRAG);
	assert_int_equal(later.l4_off, SH_OFF_NONE);
	assert_int_equal(later.l4_proto, 6);
	/* All pieces of a datagram share a queue; the unfragmented flow hashes ports. */
	assert_int_equal(first.flow_hash, later.flow_hash);
	assert_int_not_equal(first.flow_hash, whole.flow_hash);
	assert_int_equal(first.src_hash, whole.src_hash);

	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_u16(&b, 0x86dd);
	pb_ipv6(&b, v6a, v6b, 0, 0, 0);
	pb_ipv6_ext(&b, 44, 0);
	pb_ipv6_frag(&b, 17, 0, 1);
	pb_udp(&b, 4000, 4001);
	pb_finish(&b);
	classify(&b, &v6first);
	assert_int_equal(v6first.flags, SH_PKT_IPV6 | SH_PKT_UDP | SH_PKT_FRAG);
	assert_int_equal(v6first.l4_off, 14 + 40 + 8 + 8);

	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_u16(&b, 0x86dd);
	pb_ipv6(&b, v6a, v6b, 44, 0, 0);
	pb_ipv6_frag(&b, 17, 100, 0);
	pb_u32(&b, 0); /* payload that would look like hop-by-hop if walked */
	pb_zero(&b, 60);
	pb_finish(&b);
	classify(&b, &v6later);
	assert_int_equal(v6later.flags, SH_PKT_IPV6 | SH_PKT_FRAG);
	assert_int_equal(v6later.l4_proto, 17);
	assert_int_equal(v6later.l4_off, SH_OFF_NONE);
	assert_int_equal(v6first.flow_hash, v6later.flow_hash);
}

static void
test_6in4(void **state)
{
	struct pb b;
	struct sh_pkt p, q;

	(void)state;
	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_u16(&b, 0x0800);
	pb_ipv4(&b, IP4(192, 0, 2, 1), IP4(198, 51, 100, 1), 41, 0x48, 0, 0);
	pb_ipv6(&b, v6a, v6b, 6, 0, 0);
	pb_tcp(&b, 1000, 443, 1, 1, PB_ACK, NULL, 0);
	pb_finish(&b);
	classify(&b, &p);
	assert_int_equal(p.l3_off, 14);
	assert_int_equal(p.dscp, 18); /* outer header */
	assert_int_equal(p.flags, SH_PKT_IPV4 | SH_PKT_TCP | SH_PKT_TCP_ACK);
	assert_int_equal(p.l4_proto, 6);
	assert_int_equal(p.l4_off, 14 + 20 + 40);
	/* inner flows of one tunnel are told apart */
	b.b[14 + 20 + 40 + 1] ^= 1;
	classify(&b, &q);
	assert_int_not_equal(p.flow_hash, q.flow_hash);
	assert_int_equal(p.src_hash, q.src_hash);
}

static void
test_broken_ip(void **state)
{
	struct pb b;
	struct sh_pkt p;

	(void)state;
	build_v4_tcp(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 1000, 80, PB_ACK, 0xb8);
	b.b[14] = 0x44; /* IHL 4 */
	classify(&b, &p);
	assert_int_equal(p.flags, 0);
	assert_int_equal(p.dscp, 0);
	assert_int_equal(p.l3_off, SH_OFF_NONE);
	assert_int_equal(p.src_hash, 0);
	b.b[14] = 0x4f; /* IHL 15: 60 bytes, but the frame has 54 */
	p.len = p.hdr_len = 14 + 40;
	p.data = b.b;
	classify_pkt(&p, &key);
	assert_int_equal(p.flags, 0);
	b.b[14] = 0x65; /* version 6 in an IPv4 ethertype */
	classify(&b, &p);
	assert_int_equal(p.flags, 0);
	/* version 4 in an IPv6 ethertype: not IPv6, whatever follows */
	build_v6_udp(&b, v6a, v6b, 1000, 53, 0xb8, 0);
	b.b[14] = (uint8_t)(0x40 | (b.b[14] & 0x0f));
	classify(&b, &p);
	assert_int_equal(p.flags, 0);
	assert_int_equal(p.l3_off, SH_OFF_NONE);
	assert_int_equal(p.dscp, 0);
	assert_int_equal(p.src_hash, 0);

	/* IPv4 header complete, TCP cut short: IP facts kept, no TCP */
	build_v4_tcp(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 1000, 80, PB_ACK, 0xb8);
	pb_to_pkt(&b, &p);
	p.len = p.hdr_len = 14 + 20 + 10;
	classify_pkt(&p, &key);
	assert_int_equal(p.flags, SH_PKT_IPV4);
	assert_int_equal(p.l4_off, SH_OFF_NONE);
	assert_int_equal(p.l4_proto, 6);
	assert_int_equal(p.dscp, 46);
}

/* ---- hashing ---- */

/* An IPv4 frame of protocol proto whose first 8 transport bytes are given. */
static void
build_v4_proto(struct pb *b, uint32_t src, uint32_t dst, uint8_t proto, const uint8_t l4[8])
{
	pb_init(b);
	pb_eth_macs(b, 1, 2);
	pb_u16(b, 0x0800);
	pb_ipv4(b, src, dst, proto, 0, 0, 0);
	pb_bytes(b, l4, 8);
	pb_zero(b, 24);
	pb_finish(b);
}

/*
 * SCTP, DCCP and UDP-Lite flows are told apart by their ports, IPsec SAs
 * (ESP, AH) by their SPI, as Linux's flow dissector does: otherwise every
 * association or SA between two hosts shares one queue.
 */
static void
test_hash_other_transports(void **state)
{
	static const uint8_t protos[] = { 132, 33, 136 };
	struct pb b;
	struct sh_pkt x, y, r;

	(void)state;
	for (size_t i = 0; i < sizeof(protos); i++) {
		const uint8_t a[8] = { 0x9c, 0x40, 0x0b, 0xb8 }, c[8] = { 0x9c, 0x41, 0x0b, 0xb8 };
		const uint8_t rev[8] = { 0x0b, 0xb8, 0x9c, 0x40 };

		build_v4_proto(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), protos[i], a);
		classify(&b, &x);
		build_v4_proto(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), protos[i], c);
		classify(&b, &y);
		assert_int_equal(x.l4_proto, protos[i]);
		assert_int_not_equal(x.flow_hash, y.flow_hash);
		/* still one flow both ways */
		build_v4_proto(&b, IP4(10, 0, 0, 2), IP4(10, 0, 0, 1), protos[i], rev);
		classify(&b, &r);
		assert_int_equal(x.flow_hash, r.flow_hash);
	}
	{
		const uint8_t spi1[8] = { 0, 0, 0x10, 0x01 }, spi2[8] = { 0, 0, 0x10, 0x02 };
		const uint8_t ah1[8] = { 50, 4, 0, 0, 0, 0, 0x10, 0x01 };
		const uint8_t ah2[8] = { 50, 4, 0, 0, 0, 0, 0x10, 0x02 };

		build_v4_proto(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 50, spi1);
		classify(&b, &x);
		build_v4_proto(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 50, spi2);
		classify(&b, &y);
		assert_int_not_equal(x.flow_hash, y.flow_hash);
		build_v4_proto(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 51, ah1);
		classify(&b, &x);
		build_v4_proto(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 51, ah2);
		classify(&b, &y);
		assert_int_not_equal(x.flow_hash, y.flow_hash);
	}
	{
		/*
		 * GRE (a documented deviation): one flow per pair of tunnel
		 * ends. Two tunnels told apart only by their GRE key (K bit,
		 * key 1 and 2, IPv4 inside) hash alike; Linux's dissector would
		 * read the key and the inner packet.
		 */
		const uint8_t g1[8] = { 0x20, 0, 0x08, 0, 0, 0, 0, 1 };
		const uint8_t g2[8] = { 0x20, 0, 0x08, 0, 0, 0, 0, 2 };

		build_v4_proto(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 47, g1);
		classify(&b, &x);
		build_v4_proto(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 47, g2);
		classify(&b, &y);
		assert_int_equal(x.l4_proto, 47);
		assert_int_equal(x.flow_hash, y.flow_hash);
		assert_int_equal(x.flow_hash,
				 classify_flow_hash(&key, 4, (const uint8_t[]){ 10, 0, 0, 1 },
						    (const uint8_t[]){ 10, 0, 0, 2 }, 0, 0, 47));
	}
}

/*
 * The IPv6 flow label is not hashed (a documented deviation): each end
 * picks its own label and may change it mid-connection (Linux does on a
 * retransmission timeout), while the ports stay; so a flow keeps one queue
 * and both directions one hash. Only the 5-tuple tells flows apart.
 */
static void
test_hash_ignores_flow_label(void **state)
{
	static const uint32_t labels[] = { 0, 1, 0x12345, 0xfffff };
	struct pb b;
	struct sh_pkt first, p;

	(void)state;
	build_v6_udp(&b, v6a, v6b, 5000, 6000, 0, labels[0]);
	classify(&b, &first);
	for (size_t i = 1; i < sizeof(labels) / sizeof(labels[0]); i++) {
		build_v6_udp(&b, v6a, v6b, 5000, 6000, 0, labels[i]);
		classify(&b, &p);
		assert_int_equal(p.flow_hash, first.flow_hash);
	}
	build_v6_udp(&b, v6a, v6b, 5001, 6000, 0, labels[0]);
	classify(&b, &p);
	assert_int_not_equal(p.flow_hash, first.flow_hash);
}

/* IPv6 with AH (SPI spi) around TCP sport -> dport. */
static void
build_v6_ah_tcp(struct pb *b, const uint8_t *s, const uint8_t *d, uint32_t spi, uint16_t sp,
		uint16_t dp)
{
	pb_init(b);
	pb_eth_macs(b, 1, 2);
	pb_u16(b, 0x86dd);
	pb_ipv6(b, s, d, 51, 0, 0);
	pb_ipv6_ah_spi(b, 6, 3, spi);
	pb_tcp(b, sp, dp, 1, 1, PB_ACK, NULL, 0);
	pb_finish(b);
}

/*
 * IPv6 AH is keyed by its SPI as in IPv4 (Linux's flow dissector does not
 * walk past AH either): two SAs between the same hosts are two flows, and
 * what AH protects is not looked at.
 */
static void
test_hash_ipv6_ah_spi(void **state)
{
	struct pb b;
	struct sh_pkt x, y;

	(void)state;
	build_v6_ah_tcp(&b, v6a, v6b, 0x1001, 1000, 443);
	classify(&b, &x);
	assert_int_equal(x.l4_proto, 51);
	assert_int_equal(x.flags, SH_PKT_IPV6);
	assert_int_equal(x.l4_off, 14 + 40);
	assert_int_equal(x.flow_hash, classify_flow_hash(&key, 6, v6a, v6b, 0, 0x1001, 51));
	/* another SA, same inner ports: another flow */
	build_v6_ah_tcp(&b, v6a, v6b, 0x1002, 1000, 443);
	classify(&b, &y);
	assert_int_not_equal(x.flow_hash, y.flow_hash);
	/* same SA, other inner ports: the same flow */
	build_v6_ah_tcp(&b, v6a, v6b, 0x1001, 2000, 443);
	classify(&b, &y);
	assert_int_equal(x.flow_hash, y.flow_hash);
}

/*
 * IPv4 TCP s:sp -> d:dp inside n VLAN tags with these TCIs (outer first),
 * then optionally a PPPoE session header.
 */
static void
build_tagged_tcp(struct pb *b, const uint16_t *tci, int n, bool pppoe, uint32_t s, uint32_t d,
		 uint16_t sp, uint16_t dp)
{
	pb_init(b);
	pb_eth_macs(b, 1, 2);
	for (int i = 0; i < n; i++)
		pb_vlan(b, i == 0 && n > 1 ? 0x88a8 : 0x8100, tci[i]);
	if (pppoe)
		pb_pppoe(b, 0x0021);
	else
		pb_u16(b, 0x0800);
	pb_ipv4(b, s, d, 6, 0, 0x4000, 0);
	pb_tcp(b, sp, dp, 1, 1, PB_ACK, NULL, 0);
	pb_finish(b);
}

static uint32_t
tagged_hash(const uint16_t *tci, int n, uint32_t s, uint32_t d, uint16_t sp, uint16_t dp)
{
	struct pb b;
	struct sh_pkt p;

	build_tagged_tcp(&b, tci, n, false, s, d, sp, dp);
	classify(&b, &p);
	return p.flow_hash;
}

/*
 * The VLAN id is part of the flow (Linux's flow keys carry it): on a trunk
 * where two customers use the same addresses, their flows stay apart. Still
 * one flow both ways, which passive RTT and flow sharding rely on.
 */
static void
test_hash_vlan(void **state)
{
	const uint16_t v10[] = { 10 }, v20[] = { 20 }, v0[] = { 0 };
	const uint16_t v10_pcp[] = { 0xa000 | 10 }; /* PCP 5, same id */
	const uint16_t q100_10[] = { 100, 10 }, q100_20[] = { 100, 20 }, q200_10[] = { 200, 10 };
	const uint32_t a = IP4(10, 0, 0, 1), c = IP4(10, 0, 0, 2);
	uint32_t h10 = tagged_hash(v10, 1, a, c, 40000, 443);
	uint32_t untagged = tagged_hash(NULL, 0, a, c, 40000, 443);
	struct pb b;
	struct sh_pkt x, y;

	(void)state;
	assert_int_not_equal(h10, tagged_hash(v20, 1, a, c, 40000, 443));
	assert_int_equal(h10, tagged_hash(v10, 1, a, c, 40000, 443));
	assert_int_not_equal(h10, untagged);
	/* the reverse direction on the same VLAN: the same flow */
	assert_int_equal(h10, tagged_hash(v10, 1, c, a, 443, 40000));
	assert_int_not_equal(tagged_hash(v20, 1, c, a, 443, 40000), h10);
	/* the id, not the priority bits; VLAN 0 is a priority tag: untagged */
	assert_int_equal(h10, tagged_hash(v10_pcp, 1, a, c, 40000, 443));
	assert_int_equal(untagged, tagged_hash(v0, 1, a, c, 40000, 443));
	/* QinQ: both ids count, and both ways are one flow */
	assert_int_not_equal(tagged_hash(q100_10, 2, a, c, 40000, 443),
			     tagged_hash(q100_20, 2, a, c, 40000, 443));
	assert_int_not_equal(tagged_hash(q100_10, 2, a, c, 40000, 443),
			     tagged_hash(q200_10, 2, a, c, 40000, 443));
	assert_int_equal(tagged_hash(q100_10, 2, a, c, 40000, 443),
			 tagged_hash(q100_10, 2, c, a, 443, 40000));

	/* host hashes stay the address alone (CAKE's vlan_hosts adds the VLAN) */
	build_tagged_tcp(&b, v10, 1, false, a, c, 40000, 443);
	classify(&b, &x);
	build_tagged_tcp(&b, v20, 1, false, a, c, 40000, 443);
	classify(&b, &y);
	assert_int_equal(x.src_hash, y.src_hash);
	assert_int_equal(x.dst_hash, y.dst_hash);

	/* IPv6 on a VLAN, both ways */
	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_vlan(&b, 0x8100, 10);
	pb_u16(&b, 0x86dd);
	pb_ipv6(&b, v6a, v6b, 17, 0, 0);
	pb_udp(&b, 5000, 6000);
	pb_finish(&b);
	classify(&b, &x);
	build_v6_udp(&b, v6a, v6b, 5000, 6000, 0, 0);
	classify(&b, &y);
	assert_int_not_equal(x.flow_hash, y.flow_hash);
	pb_init(&b);
	pb_eth_macs(&b, 2, 1);
	pb_vlan(&b, 0x8100, 10);
	pb_u16(&b, 0x86dd);
	pb_ipv6(&b, v6b, v6a, 17, 0, 0);
	pb_udp(&b, 6000, 5000);
	pb_finish(&b);
	classify(&b, &y);
	assert_int_equal(x.flow_hash, y.flow_hash);

	/* non-IP on two VLANs between the same MACs: two flows */
	pb_init(&b);
	pb_eth_macs(&b, 0xff, 2);
	pb_vlan(&b, 0x8100, 10);
	pb_u16(&b, 0x0806);
	pb_zero(&b, 28);
	classify(&b, &x);
	b.b[15] = 20;
	classify(&b, &y);
	assert_int_not_equal(x.flow_hash, y.flow_hash);
}

/*
 * classify_vlan_key reads the ids the classifier hashed, so a flow is found
 * again by its addresses, ports and VLAN (the `flows` listing's RTT).
 */
static void
test_vlan_key_finds_flow(void **state)
{
	static const uint16_t tags[][2] = {
		{ 0, 0 }, { 10, 0 }, { 0xe000 | 4094, 0 }, { 100, 10 }
	};
	const uint32_t a = IP4(192, 168, 1, 1), c = IP4(8, 8, 4, 4);
	const uint8_t ab[4] = { 192, 168, 1, 1 }, cb[4] = { 8, 8, 4, 4 };
	struct pb b;
	struct sh_pkt p;

	(void)state;
	for (int i = 0; i < 4; i++) {
		int n = tags[i][0] == 0 ? 0 : tags[i][1] == 0 ? 1 : 2;

		for (int pppoe = 0; pppoe < 2; pppoe++) {
			uint32_t want = (uint32_t)(tags[i][0] & 0x0fff) << 12 |
					(tags[i][1] & 0x0fff);

			build_tagged_tcp(&b, tags[i], n, pppoe, a, c, 1234, 80);
			classify(&b, &p);
			assert_int_equal(classify_vlan_key(&p), want);
			assert_int_equal(p.flow_hash,
					 classify_flow_hash_vlan(&key, classify_vlan_key(&p), 4, ab,
								 cb, 1234, 80, 6));
			assert_int_equal(p.flow_hash,
					 classify_flow_hash_vlan(&key, classify_vlan_key(&p), 4, cb,
								 ab, 80, 1234, 6));
		}
	}
	assert_int_equal(classify_flow_hash_vlan(&key, 0, 4, ab, cb, 1234, 80, 6),
			 classify_flow_hash(&key, 4, ab, cb, 1234, 80, 6));
}

static void
test_hash_symmetric(void **state)
{
	struct pb b;
	struct sh_pkt ab, ba;

	(void)state;
	build_v4_tcp(&b, IP4(10, 0, 0, 1), IP4(172, 16, 0, 9), 40000, 443, PB_ACK, 0);
	classify(&b, &ab);
	build_v4_tcp(&b, IP4(172, 16, 0, 9), IP4(10, 0, 0, 1), 443, 40000, PB_ACK, 0x10);
	classify(&b, &ba);
	assert_int_equal(ab.flow_hash, ba.flow_hash);
	assert_int_equal(ab.src_hash, ba.dst_hash);
	assert_int_equal(ab.dst_hash, ba.src_hash);

	/* Same address both ways: ordering falls to the ports. */
	build_v4_tcp(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 1), 1, 2, PB_ACK, 0);
	classify(&b, &ab);
	build_v4_tcp(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 1), 2, 1, PB_ACK, 0);
	classify(&b, &ba);
	assert_int_equal(ab.flow_hash, ba.flow_hash);

	/* IPv6, with flow labels that differ per direction */
	build_v6_udp(&b, v6a, v6b, 5000, 6000, 0, 0x11111);
	classify(&b, &ab);
	build_v6_udp(&b, v6b, v6a, 6000, 5000, 0, 0x22222);
	classify(&b, &ba);
	assert_int_equal(ab.flow_hash, ba.flow_hash);
	assert_int_equal(ab.src_hash, ba.dst_hash);
	/* swapping only ports (not addresses) is another flow */
	build_v6_udp(&b, v6a, v6b, 6000, 5000, 0, 0);
	classify(&b, &ba);
	assert_int_not_equal(ab.flow_hash, ba.flow_hash);
}

static void
test_hash_distinct_and_keyed(void **state)
{
	enum {
		N = 20000,
		BUCKETS = 1024
	};
	static uint32_t hashes[N];
	static uint32_t bucket[BUCKETS];
	struct classify_key other;
	struct pb b;
	struct sh_pkt p, udp;
	unsigned int dups = 0, maxb = 0;

	(void)state;
	memset(bucket, 0, sizeof(bucket));
	for (uint32_t i = 0; i < N; i++) {
		build_v4_tcp(&b, IP4(10, 0, (i >> 8) & 0xff, i & 0xff), IP4(8, 8, 8, 8),
			     (uint16_t)(1024 + i % 7), 443, PB_ACK, 0);
		classify(&b, &p);
		hashes[i] = p.flow_hash;
		bucket[((uint64_t)p.flow_hash * BUCKETS) >> 32]++;
	}
	for (uint32_t i = 0; i < BUCKETS; i++)
		if (bucket[i] > maxb)
			maxb = bucket[i];
	/* mean 19.5; a uniform hash stays well below 2x on every bucket */
	assert_true(maxb < 2 * N / BUCKETS);
	for (uint32_t i = 0; i < N; i++)
		for (uint32_t j = i + 1; j < N && j < i + 64; j++)
			dups += hashes[i] == hashes[j];
	assert_int_equal(dups, 0);

	/* ports matter, protocol matters, key matters */
	build_v4_tcp(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 1000, 80, PB_ACK, 0);
	classify(&b, &p);
	b.b[34 + 1] ^= 1;
	classify(&b, &udp);
	assert_int_not_equal(p.flow_hash, udp.flow_hash);
	b.b[34 + 1] ^= 1;
	b.b[14 + 9] = 17;
	pb_finish(&b);
	classify(&b, &udp);
	assert_int_not_equal(p.flow_hash, udp.flow_hash);
	classify_key_init(&other, 12346);
	pb_to_pkt(&b, &udp);
	classify_pkt(&udp, &other);
	b.b[14 + 9] = 6;
	classify(&b, &p);
	pb_to_pkt(&b, &udp);
	classify_pkt(&udp, &other);
	assert_int_not_equal(p.flow_hash, udp.flow_hash);
	assert_int_not_equal(p.src_hash, udp.src_hash);
}

static void
test_burst_matches_single(void **state)
{
	enum {
		N = 37
	};
	static struct pb bufs[N];
	struct sh_pkt one, many[N], *ptr[N];

	(void)state;
	for (int i = 0; i < N; i++) {
		if (i % 3 == 0)
			build_v6_udp(&bufs[i], v6a, v6b, (uint16_t)i, 9, 0, 0);
		else
			build_v4_tcp(&bufs[i], IP4(1, 1, 1, i), IP4(2, 2, 2, 2), 5, 6, PB_ACK, 0);
		pb_to_pkt(&bufs[i], &many[i]);
		ptr[i] = &many[i];
	}
	classify_burst(ptr, N, &key);
	for (int i = 0; i < N; i++) {
		classify(&bufs[i], &one);
		assert_memory_equal(&one, &many[i], sizeof(one));
	}
	classify_burst(ptr, 0, &key);
}

/* ---- robustness ---- */

/* Representative frames, each cut at every length. */
static uint32_t
build_template(struct pb *b, int which)
{
	static const uint8_t sack_opts[] = { 1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2 };

	pb_init(b);
	pb_eth_macs(b, 1, 2);
	switch (which) {
	case 0:
		pb_u16(b, 0x0800);
		pb_ipv4(b, 1, 2, 6, 0, 0, 3);
		pb_tcp(b, 1, 2, 3, 4, PB_ACK, sack_opts, sizeof(sack_opts));
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
		pb_tcp(b, 1, 2, 3, 4, PB_ACK, NULL, 0);
		break;
	case 2:
		pb_u16(b, 0x0800);
		pb_ipv4(b, 1, 2, 41, 0, 0, 0);
		pb_ipv6(b, v6a, v6b, 60, 0, 0);
		pb_ipv6_ext(b, 6, 0);
		pb_tcp(b, 1, 2, 3, 4, PB_ACK, sack_opts, sizeof(sack_opts));
		break;
	case 3:
		pb_pppoe(b, 0x0021);
		pb_ipv4(b, 1, 2, 4, 0, 0, 0);
		pb_ipv4(b, 3, 4, 17, 0, 0, 0);
		pb_udp(b, 1, 2);
		break;
	default:
		pb_vlan(b, 0x8100, 1);
		pb_u16(b, 0x0806);
		pb_zero(b, 28);
		break;
	}
	pb_finish(b);
	return b->len;
}

static void
test_truncated_every_length(void **state)
{
	struct guard g;
	struct pb b;
	struct sh_pkt p, full;

	(void)state;
	assert_int_equal(guard_init(&g), 0);
	for (int t = 0; t < 5; t++) {
		uint32_t n = build_template(&b, t);

		classify(&b, &full);
		for (uint32_t len = 0; len <= n; len++) {
			memset(&p, 0, sizeof(p));
			p.data = guard_at_end(&g, b.b, len);
			p.len = p.hdr_len = len;
			classify_pkt(&p, &key);
			if (p.l3_off != SH_OFF_NONE)
				assert_true(p.l3_off < len);
			if (p.l4_off != SH_OFF_NONE)
				assert_true(p.l4_off <= len);
			if (len == n)
				assert_memory_equal(&p.flow_hash, &full.flow_hash, 4);
			/* the rewrites must stay inside the frame too */
			classify_set_dscp(&p, 10);
			(void)classify_set_ce(&p);
			p.data = guard_at_start(&g, b.b, len);
			classify_pkt(&p, &key);
			classify_set_dscp(&p, 12);
			(void)classify_set_ce(&p);
		}
		/* headers complete only at the full length: full facts */
		assert_int_equal(full.flags & (SH_PKT_TCP | SH_PKT_UDP | SH_PKT_ARP) ? 1 : 0, 1);
	}
	guard_fini(&g);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t
rng(void)
{
	return sh_rand32(&rng_state);
}

static void
test_random_garbage(void **state)
{
	struct guard g;
	struct pb b;
	struct sh_pkt p;

	(void)state;
	assert_int_equal(guard_init(&g), 0);
	for (int i = 0; i < 200000; i++) {
		uint32_t n = build_template(&b, (int)(rng() % 5));
		uint32_t flips = rng() % 8;

		/* corrupt a few bytes of a plausible frame, then cut it */
		for (uint32_t k = 0; k < flips; k++)
			b.b[rng() % n] = (uint8_t)rng();
		if (rng() % 4 == 0)
			for (uint32_t k = 14; k < n; k++)
				b.b[k] = (uint8_t)rng();
		n = rng() % (n + 1);
		memset(&p, 0, sizeof(p));
		p.data = guard_at_end(&g, b.b, n);
		p.len = p.hdr_len = n;
		classify_pkt(&p, &key);
		classify_set_dscp(&p, (uint8_t)(rng() & 63));
		(void)classify_set_ce(&p);
	}
	guard_fini(&g);
}

/* ---- DS field rewrites ---- */

static int
ipv4_csum_ok(const uint8_t *ip)
{
	return pb_csum(ip, (ip[0] & 0x0f) * 4u) == 0;
}

static void
test_set_ce_ipv4(void **state)
{
	struct pb b;
	struct sh_pkt p;

	(void)state;
	for (uint8_t ecn = 0; ecn < 4; ecn++) {
		build_v4_tcp(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 1, 2, PB_ACK,
			     (uint8_t)((26 << 2) | ecn));
		classify(&b, &p);
		assert_true(ipv4_csum_ok(b.b + 14));
		int rc = classify_set_ce(&p);

		assert_int_equal(rc, ecn != 0);
		assert_int_equal(b.b[15], (26 << 2) | (ecn ? 3 : 0));
		assert_true(ipv4_csum_ok(b.b + 14));
	}
	/* non-IP and unclassified */
	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_u16(&b, 0x0806);
	pb_zero(&b, 28);
	classify(&b, &p);
	assert_int_equal(classify_set_ce(&p), 0);
}

static void
test_set_ce_ipv6(void **state)
{
	struct pb b;
	struct sh_pkt p;
	uint8_t before[40];

	(void)state;
	for (uint8_t ecn = 0; ecn < 4; ecn++) {
		build_v6_udp(&b, v6a, v6b, 1, 2, (uint8_t)((46 << 2) | ecn), 0xabcde);
		classify(&b, &p);
		memcpy(before, b.b + 14, 40);
		assert_int_equal(classify_set_ce(&p), ecn != 0);
		classify(&b, &p);
		assert_int_equal(p.dscp, 46);
		assert_int_equal(p.ecn, ecn ? 3 : 0);
		/* version and flow label untouched */
		assert_int_equal(b.b[14] >> 4, 6);
		assert_int_equal(b.b[15] & 0x0f, before[1] & 0x0f);
		assert_memory_equal(b.b + 16, before + 2, 38);
	}
}

static void
test_set_dscp(void **state)
{
	struct pb b;
	struct sh_pkt p;

	(void)state;
	for (uint8_t d = 0; d < 64; d++) {
		for (uint8_t ecn = 0; ecn < 4; ecn++) {
			pb_init(&b);
			pb_eth_macs(&b, 1, 2);
			pb_vlan(&b, 0x8100, 3);
			pb_u16(&b, 0x0800);
			pb_ipv4(&b, rng(), rng(), 17, (uint8_t)((rng() & 0xfc) | ecn),
				(uint16_t)(rng() & 0x5fff), rng() % 4);
			pb_udp(&b, 1, 2);
			pb_finish(&b);
			classify(&b, &p);
			classify_set_dscp(&p, d);
			assert_true(ipv4_csum_ok(b.b + p.l3_off));
			classify(&b, &p);
			assert_int_equal(p.dscp, d);
			assert_int_equal(p.ecn, ecn);

			build_v6_udp(&b, v6a, v6b, 1, 2, (uint8_t)((rng() & 0xfc) | ecn), 0xfffff);
			classify(&b, &p);
			classify_set_dscp(&p, d);
			classify(&b, &p);
			assert_int_equal(p.dscp, d);
			assert_int_equal(p.ecn, ecn);
			assert_int_equal(b.b[14] >> 4, 6);
			assert_int_equal(((b.b[15] & 0x0f) << 16) | (b.b[16] << 8) | b.b[17],
					 0xfffff);
		}
	}
	/*
	 * RFC 1624's corner: a header whose checksum field is 0x0000 and a
	 * +1 change of the TOS word (ECT(0) -> CE) needs the second fold.
	 */
	int corner = 0;

	for (uint32_t id = 0; id < 65536 && !corner; id++) {
		build_v4_tcp(&b, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 1, 2, PB_ACK, 0x02);
		b.b[18] = (uint8_t)(id >> 8);
		b.b[19] = (uint8_t)id;
		b.b[24] = b.b[25] = 0;
		uint16_t c = pb_csum(b.b + 14, 20);

		if (c != 0)
			continue;
		classify(&b, &p);
		assert_int_equal(classify_set_ce(&p), 1);
		assert_int_equal(b.b[15], 0x03);
		assert_true(ipv4_csum_ok(b.b + 14));
		corner = 1;
	}
	assert_true(corner);
	/* and random headers in general */
	for (int i = 0; i < 100000; i++) {
		build_v4_tcp(&b, rng(), rng(), 1, 2, PB_ACK, (uint8_t)rng());
		classify(&b, &p);
		classify_set_dscp(&p, (uint8_t)(rng() & 63));
		if (rng() & 1)
			(void)classify_set_ce(&p);
		assert_true(ipv4_csum_ok(b.b + 14));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4_tcp),
		cmocka_unit_test(test_ipv4_options_udp_icmp),
		cmocka_unit_test(test_vlan_qinq),
		cmocka_unit_test(test_pppoe),
		cmocka_unit_test(test_arp_and_non_ip),
		cmocka_unit_test(test_ipv6_ext_headers),
		cmocka_unit_test(test_fragments),
		cmocka_unit_test(test_6in4),
		cmocka_unit_test(test_broken_ip),
		cmocka_unit_test(test_hash_ipv6_ah_spi),
		cmocka_unit_test(test_hash_vlan),
		cmocka_unit_test(test_vlan_key_finds_flow),
		cmocka_unit_test(test_hash_ignores_flow_label),
		cmocka_unit_test(test_hash_symmetric),
		cmocka_unit_test(test_hash_other_transports),
		cmocka_unit_test(test_hash_distinct_and_keyed),
		cmocka_unit_test(test_burst_matches_single),
		cmocka_unit_test(test_truncated_every_length),
		cmocka_unit_test(test_random_garbage),
		cmocka_unit_test(test_set_ce_ipv4),
		cmocka_unit_test(test_set_ce_ipv6),
		cmocka_unit_test(test_set_dscp),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
