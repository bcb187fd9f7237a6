/*
 * A direction receives frames in mbufs of its own pool, whose private area
 * holds each frame's struct sh_pkt. A PMD that hands over a peer's mbufs
 * (net_ring, here) may deliver mbufs with no private area: the worker must
 * copy those into its pool rather than write the sh_pkt over the peer's
 * headroom, and an empty pool is a counted drop, never a lost mbuf.
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

#include "eal_test.h"

#define HEADROOM_BYTE 0xa5
#define FRAME_LEN     100

static struct rte_mempool *own, *foreign;
static struct rte_ring *in_ring, *out_ring;
static uint16_t in_port, out_port;

static int
setup(void **state)
{
	(void)state;
	own = dp_pool_create("own", 1023, (int)rte_socket_id());
	/* A peer's pool: no private area at all. */
	foreign = rte_pktmbuf_pool_create("foreign", 255, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					  (int)rte_socket_id());
	in_ring = rte_ring_create("in", 256, (int)rte_socket_id(), 0);
	out_ring = rte_ring_create("out", 256, (int)rte_socket_id(), 0);
	assert_non_null(own);
	assert_non_null(foreign);
	assert_non_null(in_ring);
	assert_non_null(out_ring);
	in_port = eal_test_ring_port("in", in_ring, in_ring, own, 64);
	out_port = eal_test_ring_port("out", out_ring, out_ring, own, 64);
	return 0;
}

static void
dir_init(struct dp_dir *d)
{
	struct sched_params p;
	char err[256];

	memset(d, 0, sizeof(*d));
	d->dir = SHAPER_UP;
	d->rx_port = in_port;
	d->tx_port = out_port;
	sched_params_default(&p, SCHED_DISC_FIFO);
	d->sched = sched_create(&p, err, sizeof(err));
	assert_non_null(d->sched);
	classify_key_init(&d->key, 1);
	d->pool = own;
	d->truesize = dp_mbuf_truesize(own);
	d->pool_mbufs = 1023;
}

/* A UDP/IPv4 frame in a foreign mbuf whose headroom is filled with a pattern. */
static struct rte_mbuf *
foreign_frame(uint8_t fill)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(foreign);
	uint8_t *data;

	assert_non_null(m);
	memset(m->buf_addr, HEADROOM_BYTE, m->data_off);
	data = (uint8_t *)rte_pktmbuf_append(m, FRAME_LEN);
	assert_non_null(data);
	memset(data, fill, FRAME_LEN);
	data[12] = 0x08; /* IPv4 */
	data[13] = 0x00;
	data[14] = 0x45;
	return m;
}

static bool
headroom_intact(const struct rte_mbuf *m)
{
	const uint8_t *h = m->buf_addr;

	for (unsigned int i = 0; i < m->data_off; i++)
		if (h[i] != HEADROOM_BYTE)
			return false;
	return true;
}

static void
test_foreign_mbuf_is_copied(void **state)
{
	struct dp_dir d;
	struct rte_mbuf *m = foreign_frame(0x11), *out = NULL;
	uint64_t next = UINT64_MAX;
	const uint8_t *got;

	(void)state;
	dir_init(&d);
	assert_int_equal(rte_ring_enqueue(in_ring, m), 0);
	dp_dir_turn(&d, 1000000000ULL, 32, &next);

	/* The peer's mbuf was read, not written, and went back to its pool. */
	assert_true(headroom_intact(m));
	assert_int_equal(rte_mempool_in_use_count(foreign), 0);
	assert_int_equal(d.stats.rx_packets, 1);
	assert_int_equal(d.stats.rx_foreign, 1);
	/* The same bytes left in one of the direction's own mbufs. */
	assert_int_equal(rte_ring_dequeue(out_ring, (void **)&out), 0);
	assert_ptr_equal(out->pool, own);
	assert_int_equal(out->pkt_len, FRAME_LEN);
	got = rte_pktmbuf_mtod(out, const uint8_t *);
	assert_int_equal(got[0], 0x11);
	assert_int_equal(got[FRAME_LEN - 1], 0x11);
	assert_int_equal(d.stats.tx_packets, 1);
	rte_pktmbuf_free(out);
	sched_free(d.sched);
	assert_int_equal(rte_mempool_in_use_count(own), 0);
}

static void
test_foreign_mbuf_no_buffer_is_counted(void **state)
{
	struct rte_mbuf *hog[1023];
	unsigned int n = 0;
	struct dp_dir d;
	uint64_t next = UINT64_MAX;

	(void)state;
	dir_init(&d);
	/* Take every mbuf of the direction's pool. */
	while (n < RTE_DIM(hog) && (hog[n] = rte_pktmbuf_alloc(own)) != NULL)
		n++;
	assert_int_equal(rte_ring_enqueue(in_ring, foreign_frame(0x22)), 0);
	dp_dir_turn(&d, 1000000000ULL, 32, &next);
	assert_int_equal(d.stats.rx_packets, 1);
	assert_int_equal(d.stats.dropped[SHAPER_DROP_NO_BUFFER], 1);
	assert_int_equal(d.stats.tx_packets, 0);
	assert_int_equal(rte_ring_count(out_ring), 0);
	assert_int_equal(rte_mempool_in_use_count(foreign), 0); /* freed, not lost */
	rte_pktmbuf_free_bulk(hog, n);
	sched_free(d.sched);
}

/* The direction's own mbufs take the fast path: nothing copied. */
static void
test_own_mbuf_not_copied(void **state)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(own), *out = NULL;
	uint64_t next = UINT64_MAX;
	struct dp_dir d;
	uint8_t *data;

	(void)state;
	dir_init(&d);
	assert_non_null(m);
	data = (uint8_t *)rte_pktmbuf_append(m, FRAME_LEN);
	memset(data, 0x33, FRAME_LEN);
	assert_int_equal(rte_ring_enqueue(in_ring, m), 0);
	dp_dir_turn(&d, 1000000000ULL, 32, &next);
	assert_int_equal(rte_ring_dequeue(out_ring, (void **)&out), 0);
	assert_ptr_equal(out, m);
	assert_int_equal(d.stats.rx_foreign, 0);
	rte_pktmbuf_free(out);
	sched_free(d.sched);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_foreign_mbuf_is_copied),
		cmocka_unit_test(test_foreign_mbuf_no_buffer_is_counted),
		cmocka_unit_test(test_own_mbuf_not_copied),
	};

	return EAL_TEST_RUN("test_rx_pool", tests, setup, NULL);
}
