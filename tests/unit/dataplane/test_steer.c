/*
 * Software steering between shards (steer.c) and the order a worker's turn
 * takes frames in (worker.c), on ring ports and real steering rings:
 *  - a flow whose first frames another worker received (and steered) and
 *    whose later frames arrive on this shard's own queue, as when the
 *    kernel's af_packet fanout rolls it over, leaves in order: a turn
 *    enqueues what was steered to it before its own rx burst;
 *  - with three shards and two full rings towards one, each turn takes an
 *    equal part from both rings, so neither source's frames wait (and, in
 *    a busy daemon, are dropped as steer_full) more than the other's.
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

#define FRAME_LEN 100
#define NSHARDS   3

static struct rte_mempool *pool;
static struct rte_ring *rx_ring[NSHARDS], *out_ring;
static uint16_t rx_port[NSHARDS], out_port;
static struct dp_dir dirs[NSHARDS];
static struct classify_key key;

static int
setup(void **state)
{
	(void)state;
	pool = dp_pool_create("steer_pool", 8191, (int)rte_socket_id());
	assert_non_null(pool);
	out_ring = rte_ring_create("out", 4096, (int)rte_socket_id(), 0);
	assert_non_null(out_ring);
	out_port = eal_test_ring_port("out", out_ring, out_ring, pool, 256);
	for (int i = 0; i < NSHARDS; i++) {
		char name[32];

		snprintf(name, sizeof(name), "rx%d", i);
		rx_ring[i] = rte_ring_create(name, 1024, (int)rte_socket_id(), 0);
		assert_non_null(rx_ring[i]);
		rx_port[i] = eal_test_ring_port(name, rx_ring[i], out_ring, pool, 256);
	}
	classify_key_init(&key, 7);
	return 0;
}

/* n upstream shards, each receiving on its own ring port; unshaped fifos. */
static void
shards_init(uint32_t n)
{
	struct dp_dir *ptrs[NSHARDS];
	struct sched_params p;
	char err[256];

	sched_params_default(&p, SCHED_DISC_FIFO);
	for (uint32_t i = 0; i < n; i++) {
		struct dp_dir *d = &dirs[i];

		memset(d, 0, sizeof(*d));
		d->dir = SHAPER_UP;
		d->shard = i;
		d->n_shards = n;
		d->rx_port = rx_port[i];
		d->tx_port = out_port;
		d->key = key;
		d->pool = pool;
		d->truesize = dp_mbuf_truesize(pool);
		d->pool_mbufs = 8191;
		d->sched = sched_create(&p, err, sizeof(err));
		assert_non_null(d->sched);
		ptrs[i] = d;
	}
	assert_int_equal(dp_steer_create(ptrs, n, SHARE_BY_HOST, err, sizeof(err)), 0);
}

static void
shards_fini(uint32_t n)
{
	struct dp_dir *ptrs[NSHARDS];
	struct rte_mbuf *m;

	for (uint32_t i = 0; i < n; i++) {
		dp_dir_drain(&dirs[i]);
		sched_free(dirs[i].sched);
		ptrs[i] = &dirs[i];
	}
	dp_steer_free(ptrs, n);
	while (rte_ring_dequeue(out_ring, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
}

/* A UDP/IPv4 frame from LAN host 10.0.0.host to a server, its number in the payload. */
static struct rte_mbuf *
frame(uint8_t host, uint32_t seq)
{
	static const uint8_t hdr[42] = {
		0,    1, 2, 3,  4,   5,  0,    1, 2,    3,    4,    6,    0x08, 0x00, /* Ethernet,
											 IPv4 */
		0x45, 0, 0, 86, 0,   0,  0x40, 0, 64,   17,   0,    0, /* IPv4, UDP */
		10,   0, 0, 0,  198, 51, 100,  1, 0x30, 0x39, 0x01, 0xbb, 0,    66,   0,
		0, /* addrs, UDP */
	};
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	uint8_t *data;

	assert_non_null(m);
	assert_non_null(rte_pktmbuf_append(m, FRAME_LEN));
	data = rte_pktmbuf_mtod(m, uint8_t *);
	memset(data, 0, FRAME_LEN);
	memcpy(data, hdr, sizeof(hdr));
	data[29] = host;
	memcpy(data + 42, &seq, sizeof(seq));
	return m;
}

static uint32_t
seq_of(const struct rte_mbuf *m)
{
	uint32_t seq;

	memcpy(&seq, rte_pktmbuf_mtod(m, const uint8_t *) + 42, sizeof(seq));
	return seq;
}

/* The shard software steering puts LAN host 10.0.0.host on. */
static uint32_t
shard_of_host(uint8_t host, uint32_t n)
{
	struct rte_mbuf *m = frame(host, 0);
	struct sh_pkt *p = dp_mbuf_pkt(m);
	uint32_t s;

	memset(p, 0, sizeof(*p));
	p->data = rte_pktmbuf_mtod(m, uint8_t *);
	p->hdr_len = p->len = m->pkt_len;
	classify_burst(&p, 1, &key);
	s = share_shard_of(p, true, SHARE_BY_HOST, n);
	rte_pktmbuf_free(m);
	return s;
}

static void
test_steered_frames_go_first(void **state)
{
	const uint32_t half = 30;
	uint64_t next = UINT64_MAX, now = 1000000000ull;
	struct rte_mbuf *m;
	uint32_t expect = 0;
	uint8_t host = 1;

	(void)state;
	shards_init(2);
	while (shard_of_host(host, 2) != 1)
		host++;
	/* The flow's first frames reach worker 0's queue, which steers them to shard 1... */
	for (uint32_t i = 0; i < half; i++)
		assert_int_equal(rte_ring_enqueue(rx_ring[0], frame(host, i)), 0);
	dp_dir_turn(&dirs[0], now, 64, &next);
	assert_int_equal(dirs[0].steer->steered_out, half);
	/* ...then the kernel moves the flow: its later frames arrive on shard 1's own queue. */
	for (uint32_t i = half; i < 2 * half; i++)
		assert_int_equal(rte_ring_enqueue(rx_ring[1], frame(host, i)), 0);
	dp_dir_turn(&dirs[1], now + 1000, 64, &next);
	assert_int_equal(rte_ring_count(out_ring), 2 * half);
	while (rte_ring_dequeue(out_ring, (void **)&m) == 0) {
		assert_int_equal(seq_of(m), expect);
		expect++;
		rte_pktmbuf_free(m);
	}
	shards_fini(2);
}

static void
test_rings_drained_fairly(void **state)
{
	const unsigned int per_ring = 1024, turn = 32;
	uint32_t got[NSHARDS] = { 0 }, worst = 0;
	struct sh_pkt *pkts[32];

	(void)state;
	shards_init(NSHARDS);
	/* Shards 1 and 2 each have a full ring's worth of frames waiting for shard 0. */
	for (uint32_t src = 1; src < NSHARDS; src++)
		for (uint32_t i = 0; i < per_ring; i++) {
			struct rte_mbuf *m = frame((uint8_t)src, i);

			m->hash.usr = src;
			assert_int_equal(rte_ring_enqueue(dirs[src].steer->out[0], m), 0);
		}
	/* Every turn both sources get through alike: never more than a burst apart. */
	for (uint32_t t = 0; t < per_ring / (turn / 2); t++) {
		unsigned int n = dp_steer_take(&dirs[0], pkts, turn);

		assert_int_equal(n, turn);
		for (unsigned int i = 0; i < n; i++) {
			struct rte_mbuf *m = dp_pkt_mbuf(pkts[i]);

			got[m->hash.usr]++;
			rte_pktmbuf_free(m);
		}
		if ((got[1] > got[2] ? got[1] - got[2] : got[2] - got[1]) > worst)
			worst = got[1] > got[2] ? got[1] - got[2] : got[2] - got[1];
	}
	printf("# figure: steering rings drained: %u and %u frames, at most %u apart\n", got[1],
	       got[2], worst);
	assert_int_equal(got[1], per_ring);
	assert_int_equal(got[2], per_ring);
	assert_true(worst <= turn);
	shards_fini(NSHARDS);
}

/* RSS steers only when both ports put a LAN host on the same queue numbers. */
static void
test_steering_choice(void **state)
{
	struct dp_port lan, wan;
	char why[256];

	(void)state;
	memset(&lan, 0, sizeof(lan));
	snprintf(lan.name, sizeof(lan.name), "lan");
	lan.rss_sharded = true;
	lan.rss_hf = RTE_ETH_RSS_IP | RTE_ETH_RSS_L3_SRC_ONLY;
	lan.reta_size = 128;
	lan.rss_key_len = 40;
	wan = lan;
	snprintf(wan.name, sizeof(wan.name), "wan");
	wan.rss_hf = RTE_ETH_RSS_IP | RTE_ETH_RSS_L3_DST_ONLY;
	assert_int_equal(dp_steering_choose(&lan, &wan, 2, SHAPER_STEER_AUTO, why, sizeof(why)), 1);
	assert_int_equal(dp_steering_choose(&lan, &wan, 3, SHAPER_STEER_RSS, why, sizeof(why)), 1);
	assert_int_equal(dp_steering_choose(&lan, &wan, 2, SHAPER_STEER_SOFTWARE, why, sizeof(why)),
			 0);
	/* One port hashes IPv4 only: the same host may land on other queues each way. */
	wan.rss_hf = RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_L3_DST_ONLY;
	assert_int_equal(dp_steering_choose(&lan, &wan, 2, SHAPER_STEER_AUTO, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "different packet types"));
	assert_int_equal(dp_steering_choose(&lan, &wan, 2, SHAPER_STEER_RSS, why, sizeof(why)), -1);
	wan.rss_hf = RTE_ETH_RSS_IP | RTE_ETH_RSS_L3_DST_ONLY;
	/* Tables of 128 and 512 entries agree on i mod 4, not on i mod 3. */
	wan.reta_size = 512;
	assert_int_equal(dp_steering_choose(&lan, &wan, 4, SHAPER_STEER_AUTO, why, sizeof(why)), 1);
	assert_int_equal(dp_steering_choose(&lan, &wan, 3, SHAPER_STEER_AUTO, why, sizeof(why)), 0);
	wan.reta_size = 128;
	wan.rss_key_len = 52;
	assert_int_equal(dp_steering_choose(&lan, &wan, 2, SHAPER_STEER_AUTO, why, sizeof(why)), 0);
	wan.rss_key_len = 40;
	wan.rss_sharded = false;
	assert_int_equal(dp_steering_choose(&lan, &wan, 2, SHAPER_STEER_RSS, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "cannot hash"));
}

/*
 * Each worker's context is a block of whole cache lines of its own: no line
 * of one worker's hot state (its struct dp_worker, its shards) is another's.
 * A worker pointed at another's shard shares every line of it.
 */
static void
test_worker_contexts_share_no_line(void **state)
{
	struct dp_lcore *lc[4];
	unsigned int lines = (unsigned int)(sizeof(struct dp_dir) / RTE_CACHE_LINE_SIZE);

	(void)state;
	for (int i = 0; i < 4; i++) {
		lc[i] = dp_lcore_create(rte_get_main_lcore());
		assert_non_null(lc[i]);
		assert_int_equal((uintptr_t)lc[i] % RTE_CACHE_LINE_SIZE, 0);
		assert_ptr_equal(lc[i]->w.dirs[SHAPER_DOWN], &lc[i]->dir[SHAPER_DOWN]);
		assert_non_null(dp_dir_alloc(&lc[i]->dir[SHAPER_UP]));
	}
	/* The heartbeat, stored every loop, is alone on its line. */
	assert_int_equal(offsetof(struct dp_worker, heartbeat) % RTE_CACHE_LINE_SIZE, 0);
	assert_int_equal(sizeof(struct dp_worker) - offsetof(struct dp_worker, heartbeat),
			 RTE_CACHE_LINE_SIZE);
	printf("# figure: cache lines 4 workers' hot state shares: %u\n",
	       dp_lcore_shared_lines(lc, 4));
	assert_int_equal(dp_lcore_shared_lines(lc, 4), 0);
	lc[3]->w.dirs[SHAPER_UP] = &lc[0]->dir[SHAPER_DOWN];
	assert_int_equal(dp_lcore_shared_lines(lc, 4), lines);
	for (int i = 0; i < 4; i++)
		dp_lcore_free(lc[i]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steered_frames_go_first),
		cmocka_unit_test(test_rings_drained_fairly),
		cmocka_unit_test(test_steering_choice),
		cmocka_unit_test(test_worker_contexts_share_no_line),
	};

	return EAL_TEST_RUN("test_steer", tests, setup, NULL);
}
