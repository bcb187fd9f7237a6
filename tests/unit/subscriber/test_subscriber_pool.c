/*
 * The per-subscriber scheduler pool (src/subscriber/pool.c): take until
 * empty, refuse a scheduler that still holds packets or is not the pool's,
 * hand back a cleared one; and the memory estimate for 10,000 configured /
 * 2,000 active subscribers, printed as a figure.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/pkt.h"
#include "shaper/sched.h"
#include "shaper/subscriber_pool.h"

static void
cake_params(struct sched_params *p)
{
	sched_params_default(p, SCHED_DISC_CAKE);
	p->rate = 100000000 / 8; /* a 100 Mbit/s plan */
	p->diffserv = SCHED_DIFFSERV4;
	p->isolation = SCHED_TRIPLE_ISOLATE;
}

static void
test_pool(void **state)
{
	struct sched_params p;
	struct sub_pool *pool;
	struct sched *s[3], *other;
	struct sh_pkt pkt, *out;
	struct sh_pkt_list dropped;
	struct sched_stats st;
	uint8_t frame[64] = { 0 };
	char err[128];
	int i;

	(void)state;
	cake_params(&p);
	pool = sub_pool_create(&p, 3, NULL, err, sizeof(err));
	assert_non_null(pool);
	for (i = 0; i < 3; i++) {
		s[i] = sub_pool_take(pool);
		assert_non_null(s[i]);
	}
	assert_null(sub_pool_take(pool));
	assert_int_equal(sub_pool_available(pool), 0);

	/* A packet queued: not given back; sent: given back, cleared. */
	memset(&pkt, 0, sizeof(pkt));
	pkt.data = frame;
	pkt.len = pkt.hdr_len = sizeof(frame);
	pkt.mem = 2048;
	pkt.l3_off = pkt.l4_off = SH_OFF_NONE;
	sh_pkt_list_init(&dropped);
	assert_int_equal(sched_enqueue(s[0], &pkt, 1000, &dropped), 0);
	assert_false(sub_pool_may_return(s[0], 1000, 1000 + SUB_POOL_HOLD_NS));
	assert_int_equal(sub_pool_give(pool, s[0]), -EBUSY);
	out = sched_dequeue(s[0], 2000000, &dropped);
	assert_ptr_equal(out, &pkt);
	assert_false(sub_pool_may_return(s[0], 1000, 1000 + SUB_POOL_HOLD_NS / 2));
	assert_true(sub_pool_may_return(s[0], 1000, 1000 + SUB_POOL_HOLD_NS));
	assert_int_equal(sub_pool_give(pool, s[0]), 0);
	sched_get_stats(s[0], &st);
	assert_int_equal(st.enqueued_pkts, 0);                /* cleared for the next subscriber */
	assert_int_equal(sub_pool_give(pool, s[0]), -EINVAL); /* given back twice */

	other = sched_create(&p, err, sizeof(err));
	assert_non_null(other);
	assert_int_equal(sub_pool_give(pool, other), -EINVAL);
	sched_free(other);

	assert_ptr_equal(sub_pool_take(pool), s[0]);
	for (i = 0; i < 3; i++)
		assert_int_equal(sub_pool_give(pool, s[i]), 0);
	assert_int_equal(sub_pool_available(pool), 3);
	sub_pool_free(pool);
}

static void
test_memory_estimate(void **state)
{
	struct sched_params p;
	struct sub_mem m, m0;
	char buf[512], err[128];

	(void)state;
	cake_params(&p);
	/* 10,000 circuits, 2 addresses each (a v4 and a v6 prefix), 50 nodes + the link. */
	/* The link's size of CAKE (8 tins x 1024 queues) misses the goal... */
	assert_int_equal(sub_mem_estimate(10000, 20000, 51, 2000, &p, &m, err, sizeof(err)), 0);
	sub_mem_format(&m, buf, sizeof(buf));
	printf("# figure: memory with the link's CAKE size: %s\n", buf);
	assert_true(m.total > 2000000000ull);
	/* ... the subscriber size (4 tins x 256 queues for diffserv4) meets it. */
	sub_pool_cake_size(&p);
	assert_int_equal(sub_mem_estimate(10000, 20000, 51, 2000, &p, &m, err, sizeof(err)), 0);
	sub_mem_format(&m, buf, sizeof(buf));
	printf("# figure: memory with the subscriber CAKE size: %s\n", buf);
	printf("# figure: the goal of 2 GB is %s (%.3f GB)\n",
	       m.total <= 2000000000ull ? "met" : "NOT met", m.total / 1e9);
	assert_true(m.total <= 2000000000ull);
	/* The parts add up, and the pool is what grows with active subscribers. */
	assert_int_equal(m.total, m.config_bytes + m.idle_bytes + m.lookup_bytes + m.alloc_bytes +
						  m.pool_bytes + m.lpm_bytes + m.change_bytes);
	/* A live change of addresses holds a second set of tables beside the first. */
	assert_int_equal(m.change_bytes, m.lpm_bytes + m.lookup_bytes + m.config_bytes);
	/* The two first-level tables (64 MiB each) and the groups of 10,000 /32s and /56s. */
	assert_true(m.lpm_bytes > (128ull << 20) && m.lpm_bytes < (200ull << 20));
	assert_int_equal(m.pool_bytes, 2000ull * 2 * m.sched_bytes);
	assert_true(m.sched_bytes > sizeof(struct sub_idle));
	assert_int_equal(sub_mem_estimate(10000, 20000, 51, 0, &p, &m0, err, sizeof(err)), 0);
	assert_int_equal(m0.pool_bytes, 0);
	/*
	 * Idle subscribers cost little: under 1.9 KB each, besides the fixed LPM
	 * tables (about 1,000 bytes of counters, plans, addresses and places, 296
	 * of RTT histograms and 488 of busy minutes).
	 */
	printf("# figure: an idle subscriber: %llu bytes, the LPM tables and a change's aside\n",
	       (unsigned long long)((m0.total - m0.lpm_bytes - m0.change_bytes) / 10000));
	assert_true((m0.total - m0.lpm_bytes - m0.change_bytes) / 10000 < 1820);
	p.rate = 0;
	p.discipline = (enum sched_discipline)99;
	assert_int_equal(sub_mem_estimate(10, 10, 1, 1, &p, &m, err, sizeof(err)), -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool),
		cmocka_unit_test(test_memory_estimate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
