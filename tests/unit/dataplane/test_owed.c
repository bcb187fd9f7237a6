/*
 * backlogged_us and backlogged_tx_bytes: the time a direction owed its rate
 * and what it sent in that time, driven through dp_dir_turn on a clock of
 * the test's own. A sender that keeps a queue only now and then, its frames
 * arriving while the last frame of the backlog before is still on the wire,
 * must read as the configured rate, neither more nor less.
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

#define FRAME_LEN 1000
#define RATE      1000000ULL /* bytes/s: one frame a millisecond */
#define MS        1000000ULL

static struct rte_mempool *pool;
static struct rte_ring *in_ring, *out_ring;
static uint16_t in_port, out_port;

static int
setup(void **state)
{
	(void)state;
	pool = dp_pool_create("owed", 1023, (int)rte_socket_id());
	in_ring = rte_ring_create("in", 256, (int)rte_socket_id(), 0);
	out_ring = rte_ring_create("out", 256, (int)rte_socket_id(), 0);
	assert_non_null(pool);
	assert_non_null(in_ring);
	assert_non_null(out_ring);
	in_port = eal_test_ring_port("in", in_ring, in_ring, pool, 64);
	out_port = eal_test_ring_port("out", out_ring, out_ring, pool, 64);
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
	p.rate = RATE;
	d->sched = sched_create(&p, err, sizeof(err));
	assert_non_null(d->sched);
	classify_key_init(&d->key, 1);
	d->pool = pool;
	d->truesize = dp_mbuf_truesize(pool);
	d->pool_mbufs = 1023;
}

static void
arrive(unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
		uint8_t *data;

		assert_non_null(m);
		data = (uint8_t *)rte_pktmbuf_append(m, FRAME_LEN);
		assert_non_null(data);
		memset(data, 0x5a, FRAME_LEN);
		data[12] = 0x08; /* IPv4 */
		data[13] = 0x00;
		data[14] = 0x45;
		assert_int_equal(rte_ring_enqueue(in_ring, m), 0);
	}
}

static void
drain_out(void)
{
	struct rte_mbuf *m;

	while (rte_ring_dequeue(out_ring, (void **)&m) == 0)
		rte_pktmbuf_free(m);
}

/*
 * Backlogs of three frames, each arriving half a frame time after the last
 * frame of the one before left: it waits for that frame's time, then the
 * three leave a millisecond apart. The worker turns every quarter
 * millisecond.
 */
static void
test_backlogs_behind_the_last_frame(void **state)
{
	const uint64_t t0 = 1000 * MS, step = MS / 4;
	const unsigned int cycles = 100;
	uint64_t now, next, owed_ns;
	struct dp_dir d;
	double rate;

	(void)state;
	dir_init(&d);
	for (now = t0; now < t0 + cycles * 3 * MS; now += step) {
		uint64_t in = now - t0;

		if (in == 0 || (in >= 5 * MS / 2 && (in - 5 * MS / 2) % (3 * MS) == 0 &&
				in < (cycles - 1) * 3 * MS))
			arrive(3);
		next = UINT64_MAX;
		dp_dir_turn(&d, now, 32, &next);
		drain_out();
	}
	assert_int_equal(d.stats.tx_packets, 3 * cycles);
	owed_ns = d.stats.backlogged_ns;
	/* two frame times a backlog: from its first frame's release to its last */
	assert_true(owed_ns >= (cycles - 1) * 2 * MS);
	assert_true(owed_ns <= cycles * 2 * MS);
	rate = (double)d.stats.backlogged_tx_bytes * 1e9 / (double)owed_ns;
	printf("owed %.1f ms, sent %llu bytes in it: %.0f bytes/s of %llu\n", owed_ns / 1e6,
	       (unsigned long long)d.stats.backlogged_tx_bytes, rate, (unsigned long long)RATE);
	assert_true(rate >= 0.99 * RATE && rate <= 1.01 * RATE);
	sched_free(d.sched);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
}

/* One long backlog: owed from the first release to the last. */
static void
test_one_backlog(void **state)
{
	const uint64_t t0 = 1000 * MS, step = MS / 4;
	uint64_t now, next;
	struct dp_dir d;

	(void)state;
	dir_init(&d);
	arrive(100);
	for (now = t0; now <= t0 + 120 * MS; now += step) {
		next = UINT64_MAX;
		dp_dir_turn(&d, now, 32, &next);
		drain_out();
	}
	assert_int_equal(d.stats.tx_packets, 100);
	assert_int_equal(d.stats.backlogged_ns, 99 * MS);
	assert_int_equal(d.stats.backlogged_tx_bytes, 99 * FRAME_LEN);
	sched_free(d.sched);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backlogs_behind_the_last_frame),
		cmocka_unit_test(test_one_backlog),
	};

	return EAL_TEST_RUN("test_owed", tests, setup, NULL);
}
