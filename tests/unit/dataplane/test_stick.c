/*
 * One port on a stick (ports.single): frames on the WAN's VLAN are the
 * downstream and leave on the LAN's, frames on the LAN's the upstream and
 * leave on the WAN's, each in the mbuf it came in (no copy) with its
 * priority bits; untagged frames and other VLANs are dropped as
 * other_vlan; a tag the PMD took into the mbuf (af_packet) is put back.
 * Both directions classify a flow alike. The port is a net_ring whose rx
 * and tx are two rings.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "shaper/dataplane.h"
#include "shaper/vlan.h"

#include "eal_test.h"
#include "pktbuild.h"

#define WAN_VLAN 100
#define LAN_VLAN 200
#define NOW      1000000000ULL

static struct rte_mempool *pool;
static struct rte_ring *wire_in, *wire_out;
static uint16_t port;

static int
setup(void **state)
{
	(void)state;
	pool = dp_pool_create("stick", 1023, (int)rte_socket_id());
	wire_in = rte_ring_create("wire_in", 256, (int)rte_socket_id(), 0);
	wire_out = rte_ring_create("wire_out", 256, (int)rte_socket_id(), 0);
	assert_non_null(pool);
	assert_non_null(wire_in);
	assert_non_null(wire_out);
	port = eal_test_ring_port("stick", wire_in, wire_out, pool, 128);
	return 0;
}

/* Both directions of one worker on the one port, unshaped FIFOs. */
static struct dp_stick *
dirs_init(struct dp_dir *up, struct dp_dir *down)
{
	struct dp_dir *d[SHAPER_NUM_DIRS] = { up, down };
	struct dp_stick *s;
	char err[256];

	for (int i = 0; i < SHAPER_NUM_DIRS; i++) {
		struct sched_params p;

		memset(d[i], 0, sizeof(*d[i]));
		d[i]->dir = (enum shaper_dir)i;
		d[i]->rx_port = d[i]->tx_port = port;
		sched_params_default(&p, SCHED_DISC_FIFO);
		d[i]->sched = sched_create(&p, err, sizeof(err));
		assert_non_null(d[i]->sched);
		classify_key_init(&d[i]->key, 7); /* one key both ways, as shaperd has it */
		d[i]->pool = pool;                /* one rx queue: one pool for both */
		d[i]->truesize = dp_mbuf_truesize(pool);
		d[i]->pool_mbufs = 1023;
	}
	s = dp_stick_create(up, down, WAN_VLAN, LAN_VLAN, (int)rte_socket_id());
	assert_non_null(s);
	up->stick = down->stick = s;
	return s;
}

static void
dirs_free(struct dp_dir *up, struct dp_dir *down, struct dp_stick *s)
{
	dp_dir_drain(up);
	dp_dir_drain(down);
	sched_free(up->sched);
	sched_free(down->sched);
	dp_stick_free(s);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
}

/*
 * A UDP/IPv4 frame from host src to host dst (10.0.0.x), with an outer tag
 * of tci (tpid 0: untagged).
 */
static struct rte_mbuf *
frame(uint16_t tpid, uint16_t tci, uint8_t src, uint8_t dst)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct pb b;
	uint8_t *data;

	assert_non_null(m);
	pb_init(&b);
	pb_eth_macs(&b, dst, src);
	if (tpid != 0)
		pb_vlan(&b, tpid, tci);
	pb_u16(&b, 0x0800);
	pb_ipv4(&b, 0x0a000000u | src, 0x0a000000u | dst, 17, 0, 0, 0);
	pb_udp(&b, (uint16_t)(1000 + src), (uint16_t)(1000 + dst));
	pb_zero(&b, 64);
	pb_finish(&b);
	data = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)b.len);
	assert_non_null(data);
	memcpy(data, b.b, b.len);
	return m;
}

static uint16_t
tci_of(const struct rte_mbuf *m)
{
	const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);

	assert_true(vlan_is_tpid((uint16_t)(d[12] << 8 | d[13])));
	return (uint16_t)(d[14] << 8 | d[15]);
}

static void
test_vlan_helpers(void **state)
{
	uint8_t f[18] = { 0 };

	(void)state;
	assert_int_equal(vlan_outer_id(f, sizeof(f)), -1); /* no TPID: untagged */
	f[12] = 0x81;
	f[13] = 0x00;
	f[14] = 0xb0; /* PCP 5, DEI 1, id 0x064 = 100 */
	f[15] = 0x64;
	assert_int_equal(vlan_outer_id(f, sizeof(f)), 100);
	assert_int_equal(vlan_outer_id(f, 15), -1); /* cut inside the tag */
	vlan_set_outer_id(f, 0xfc8);                /* 4040 */
	assert_int_equal(f[14], 0xbf);
	assert_int_equal(f[15], 0xc8);
	assert_int_equal(vlan_outer_id(f, sizeof(f)), 4040);
	f[12] = 0x88; /* 802.1ad outer tag */
	f[13] = 0xa8;
	assert_int_equal(vlan_outer_id(f, sizeof(f)), 4040);
}

static void
test_stick_sorts_and_retags(void **state)
{
	struct dp_dir up, down;
	struct dp_stick *s = dirs_init(&up, &down);
	struct rte_mbuf *in[6], *out[8];
	uint64_t next = UINT64_MAX;
	unsigned int n;

	(void)state;
	in[0] = frame(0x8100, 0xa000 | WAN_VLAN, 9, 1); /* down, PCP 5 */
	in[1] = frame(0x8100, 0x6000 | LAN_VLAN, 1, 9); /* up, PCP 3 */
	in[2] = frame(0x8100, 300, 1, 9);               /* a third VLAN */
	in[3] = frame(0, 0, 1, 9);                      /* untagged */
	in[4] = frame(0x88a8, 0x1000 | WAN_VLAN, 9, 2); /* down, DEI set, 802.1ad */
	in[5] = frame(0x8100, LAN_VLAN, 2, 9);          /* up */
	assert_int_equal(rte_ring_enqueue_bulk(wire_in, (void **)in, 6, NULL), 6);

	/* The upstream's turn reads the port: its two go out, the downstream's wait. */
	dp_dir_turn(&up, NOW, 32, &next);
	n = rte_ring_dequeue_burst(wire_out, (void **)out, 8, NULL);
	assert_int_equal(n, 2);
	assert_ptr_equal(out[0], in[1]); /* the same mbufs: rewritten in place */
	assert_ptr_equal(out[1], in[5]);
	assert_int_equal(tci_of(out[0]), 0x6000 | WAN_VLAN);
	assert_int_equal(tci_of(out[1]), WAN_VLAN);
	assert_int_equal(up.stats.rx_packets, 2);
	assert_int_equal(up.stats.tx_packets, 2);
	rte_pktmbuf_free_bulk(out, n);

	/* The downstream's turn: what was held, in order, on the LAN's VLAN. */
	dp_dir_turn(&down, NOW, 32, &next);
	n = rte_ring_dequeue_burst(wire_out, (void **)out, 8, NULL);
	assert_int_equal(n, 2);
	assert_ptr_equal(out[0], in[0]);
	assert_ptr_equal(out[1], in[4]);
	assert_int_equal(tci_of(out[0]), 0xa000 | LAN_VLAN);
	assert_int_equal(tci_of(out[1]), 0x1000 | LAN_VLAN);
	assert_int_equal(rte_pktmbuf_mtod(out[1], uint8_t *)[12], 0x88); /* TPID as it came */
	/* Neither VLAN: received, dropped by name, in the downstream's counters. */
	assert_int_equal(down.stats.dropped[SHAPER_DROP_OTHER_VLAN], 2);
	assert_int_equal(down.stats.rx_packets, 4);
	assert_int_equal(down.stats.tx_packets, 2);
	assert_int_equal(up.stats.dropped[SHAPER_DROP_OTHER_VLAN], 0);
	rte_pktmbuf_free_bulk(out, n);
	dirs_free(&up, &down, s);
}

/* af_packet hands the tag over in the mbuf: it goes back into the frame, rewritten. */
static void
test_stripped_tag_put_back(void **state)
{
	struct dp_dir up, down;
	struct dp_stick *s = dirs_init(&up, &down);
	struct rte_mbuf *m = frame(0, 0, 9, 1), *out = NULL;
	uint64_t next = UINT64_MAX;
	uint32_t len = m->pkt_len;

	(void)state;
	m->vlan_tci = 0x6000 | WAN_VLAN; /* PCP 3 */
	m->ol_flags |= RTE_MBUF_F_RX_VLAN | RTE_MBUF_F_RX_VLAN_STRIPPED;
	assert_int_equal(rte_ring_enqueue(wire_in, m), 0);
	dp_dir_turn(&down, NOW, 32, &next);
	assert_int_equal(rte_ring_dequeue(wire_out, (void **)&out), 0);
	assert_ptr_equal(out, m);
	assert_int_equal(out->pkt_len, len + 4);
	assert_int_equal(rte_pktmbuf_mtod(out, uint8_t *)[12], 0x81);
	assert_int_equal(tci_of(out), 0x6000 | LAN_VLAN);
	assert_int_equal(rte_pktmbuf_mtod(out, uint8_t *)[16], 0x08); /* the IPv4 ethertype after */
	assert_false(out->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED);
	assert_int_equal(down.stats.rx_bytes, len + 4);
	rte_pktmbuf_free(out);
	dirs_free(&up, &down, s);
}

/* A flow hashes alike both ways (passive RTT, steering): both seen on the LAN's VLAN. */
static void
test_flow_hash_both_ways(void **state)
{
	struct dp_dir up, down;
	struct dp_stick *s = dirs_init(&up, &down);
	struct rte_mbuf *out[2];
	uint64_t next = UINT64_MAX;
	uint32_t h_up, h_down;

	(void)state;
	assert_int_equal(rte_ring_enqueue(wire_in, frame(0x8100, LAN_VLAN, 1, 9)), 0);
	assert_int_equal(rte_ring_enqueue(wire_in, frame(0x8100, WAN_VLAN, 9, 1)), 0);
	dp_dir_turn(&up, NOW, 32, &next);
	dp_dir_turn(&down, NOW, 32, &next);
	assert_int_equal(rte_ring_dequeue_burst(wire_out, (void **)out, 2, NULL), 2);
	h_up = dp_mbuf_pkt(out[0])->flow_hash;
	h_down = dp_mbuf_pkt(out[1])->flow_hash;
	assert_int_not_equal(h_up, 0);
	assert_int_equal(h_up, h_down);
	rte_pktmbuf_free_bulk(out, 2);
	dirs_free(&up, &down, s);
}

/* Held for a direction when the daemon stops: counted in, dropped as shutdown. */
static void
test_held_at_shutdown(void **state)
{
	struct dp_dir up, down;
	struct dp_stick *s = dirs_init(&up, &down);
	uint64_t next = UINT64_MAX;

	(void)state;
	assert_int_equal(rte_ring_enqueue(wire_in, frame(0x8100, WAN_VLAN, 9, 1)), 0);
	dp_dir_turn(&up, NOW, 32, &next);
	assert_int_equal(rte_ring_count(wire_out), 0);
	assert_int_equal(down.stats.rx_packets, 0);
	dp_dir_drain(&down);
	assert_int_equal(down.stats.rx_packets, 1);
	assert_int_equal(down.stats.dropped[SHAPER_DROP_SHUTDOWN], 1);
	dirs_free(&up, &down, s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vlan_helpers),
		cmocka_unit_test(test_stick_sorts_and_retags),
		cmocka_unit_test(test_stripped_tag_put_back),
		cmocka_unit_test(test_flow_hash_both_ways),
		cmocka_unit_test(test_held_at_shutdown),
	};

	return EAL_TEST_RUN("test_stick", tests, setup, NULL);
}
