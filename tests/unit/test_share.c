/*
 * The rate split (shaper/share.h) by hand-worked examples, the host
 * counter, and the pool under concurrent shards: threads tick their own
 * shards against one group as fast as they can, and the rates never sum
 * above the link.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/rand.h"
#include "shaper/share.h"

#define LINK 100000000ull /* bytes/s */

static void
publish(struct share_group *g, uint32_t i, uint32_t weight, uint64_t need)
{
	atomic_store(&g->slot[i].weight, weight);
	atomic_store(&g->slot[i].need, need);
}

static void
test_split(void **state)
{
	struct share_group g;
	uint64_t out[SHARE_MAX_SHARDS], spare;
	char err[128];

	(void)state;
	assert_int_equal(share_group_init(&g, LINK, 4, 1514, err, sizeof(err)), 0);
	/* Idle shards' floors together hold 1/1024 of the link, no more. */
	assert_int_equal(share_group_floor(&g), LINK / 1024 / 4);
	spare = LINK - 4 * share_group_floor(&g);

	/* Two backlogged shards, weights 1 and 3; two idle ones keep the floor. */
	publish(&g, 0, 1, SHARE_NEED_ALL);
	publish(&g, 1, 3, SHARE_NEED_ALL);
	share_split(&g, out);
	assert_int_equal(out[0], share_group_floor(&g) + spare / 4);
	assert_int_equal(out[1], share_group_floor(&g) + spare * 3 / 4);
	assert_int_equal(out[2], share_group_floor(&g));
	assert_int_equal(out[3], share_group_floor(&g));

	/* One shard needs little: it gets that, the busy one the rest. */
	publish(&g, 1, 3, share_group_floor(&g) + 1000000);
	share_split(&g, out);
	assert_int_equal(out[1], share_group_floor(&g) + 1000000);
	assert_int_equal(out[0], share_group_floor(&g) + spare - 1000000);

	/* Nobody backlogged: needs met, the spare by weight (1 : 3). */
	publish(&g, 0, 1, share_group_floor(&g) + 1000000);
	share_split(&g, out);
	assert_true(out[0] + out[1] + out[2] + out[3] <= LINK);
	assert_true(out[0] >= share_group_floor(&g) + 1000000);
	assert_true(out[1] >= share_group_floor(&g) + 1000000);
	assert_true(out[1] - share_group_floor(&g) - 1000000 >
		    2 * (out[0] - share_group_floor(&g) - 1000000));

	/* Bad groups are refused with a reason. */
	assert_int_equal(share_group_init(&g, LINK, 0, 1514, err, sizeof(err)), -EINVAL);
	assert_int_equal(share_group_init(&g, LINK, SHARE_MAX_SHARDS + 1, 1514, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(share_group_init(&g, 1000, 64, 1514, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "too low"));
}

/* Stand-in for the classifier's address hash (murmur3's finaliser). */
static uint32_t
host_hash(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

static void
test_hosts(void **state)
{
	static struct share_hosts h;
	uint32_t i, n;

	(void)state;
	memset(&h, 0, sizeof(h));
	assert_int_equal(share_hosts_count(&h, 0), 0);
	for (i = 0; i < 100; i++)
		share_hosts_note(&h, host_hash(i));
	n = share_hosts_count(&h, 1000);
	assert_true(n >= 97 && n <= 103);
	/* One window later they still count; two windows later they are gone. */
	assert_true(share_hosts_count(&h, SHARE_HOST_WINDOW_NS + 1000) >= 97);
	assert_int_equal(share_hosts_count(&h, 3 * SHARE_HOST_WINDOW_NS), 0);

	for (i = 0; i < 3000; i++)
		share_hosts_note(&h, host_hash(i + 1000));
	n = share_hosts_count(&h, 3 * SHARE_HOST_WINDOW_NS + 1);
	assert_true(n >= 2850 && n <= 3150); /* linear counting stays within 5 % here */

	/*
	 * A slow shard: 100 hosts seen once, then only a few packets a window.
	 * A window waits for SHARE_HOST_ROUNDS packets per host, so all 100
	 * still count three windows later (closing by time alone would count 10).
	 */
	memset(&h, 0, sizeof(h));
	for (i = 0; i < 100; i++)
		share_hosts_note(&h, host_hash(i));
	for (uint64_t t = 1; t <= 6; t++) {
		for (i = 0; i < 10; i++)
			share_hosts_note(&h, host_hash(i));
		n = share_hosts_count(&h, t * SHARE_HOST_WINDOW_NS / 2);
		assert_true(n >= 97 && n <= 103);
	}
}

static void
test_steering(void **state)
{
	uint32_t count[4] = { 0 }, i, n = 4;

	(void)state;
	for (i = 0; i < 40000; i++) {
		struct sh_pkt up, down, other;

		memset(&up, 0, sizeof(up));
		memset(&down, 0, sizeof(down));
		memset(&other, 0, sizeof(other));
		/* The same LAN host to another WAN host: the same shard. */
		other.src_hash = host_hash(i);
		other.dst_hash = host_hash(i + 7);
		/* LAN host i talks to WAN host i + 1: up from it, down to it. */
		up.src_hash = down.dst_hash = host_hash(i);
		up.dst_hash = down.src_hash = host_hash(i + 1);
		up.flow_hash = down.flow_hash = host_hash(i ^ 0x55555555u);
		assert_int_equal(share_shard_of(&up, true, SHARE_BY_HOST, n),
				 share_shard_of(&down, false, SHARE_BY_HOST, n));
		assert_int_equal(share_shard_of(&up, true, SHARE_BY_FLOW, n),
				 share_shard_of(&down, false, SHARE_BY_FLOW, n));
		assert_int_equal(share_shard_of(&up, true, SHARE_BY_HOST, n),
				 share_shard_of(&other, true, SHARE_BY_HOST, n));
		assert_true(share_shard_of(&up, true, SHARE_BY_HOST, n) < n);
		count[share_shard_of(&up, true, SHARE_BY_HOST, n)]++;
	}
	for (i = 0; i < n; i++)
		assert_true(count[i] > 9500 && count[i] < 10500);
	{
		struct sh_pkt arp;

		memset(&arp, 0, sizeof(arp));
		assert_int_equal(share_shard_of(&arp, true, SHARE_BY_HOST, n), 0);
		assert_int_equal(share_shard_of(&arp, false, SHARE_BY_HOST, 1), 0);
	}
}

/* config.set changes the link: a cut is complete once every shard has ticked. */
static void
test_set_rate(void **state)
{
	static struct share_group g;
	struct share_shard sh[3];
	struct sched *s[3];
	struct sched_params p;
	uint64_t now = 0, sum;
	char err[128];
	uint32_t i, round;

	(void)state;
	assert_int_equal(share_group_init(&g, LINK, 3, 1514, err, sizeof(err)), 0);
	sched_params_default(&p, SCHED_DISC_FQ_CODEL);
	p.rate = LINK;
	for (i = 0; i < 3; i++) {
		s[i] = sched_create(&p, err, sizeof(err));
		assert_non_null(s[i]);
		share_shard_init(&sh[i], &g, i, s[i], now);
	}
	for (round = 0; round < 4; round++) {
		uint64_t link = round % 2 == 0 ? LINK / 4 : LINK * 2;

		share_group_set_rate(&g, link);
		now += SHARE_TICK_NS;
		for (i = 0; i < 3; i++)
			share_tick(&sh[i], s[i], i == 0 ? 5 : 0, now); /* shard 0 has hosts */
		now += SHARE_TICK_NS;
		for (i = 0; i < 3; i++)
			share_tick(&sh[i], s[i], i == 0 ? 5 : 0, now);
		sum = sh[0].rate + sh[1].rate + sh[2].rate;
		assert_int_equal(sum + (uint64_t)atomic_load(&g.pool), link);
		assert_true(sum <= link);
		/* The idle shards are at the floor, the one with hosts has the rest. */
		assert_int_equal(sh[1].rate, share_group_floor(&g));
		assert_int_equal(sh[2].rate, share_group_floor(&g));
		assert_true(sh[0].rate >= link - 3 * share_group_floor(&g) - 1);
	}
	for (i = 0; i < 3; i++)
		sched_free(s[i]);
}

/* The shards' rates and the pool: every byte/s of the link is in exactly one place. */
static uint64_t
rates_sum(const struct share_shard *sh, uint32_t n, const struct share_group *g)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < n; i++)
		sum += sh[i].rate;
	assert_int_equal((int64_t)sum + atomic_load(&g->pool), (int64_t)atomic_load(&g->link_rate));
	return sum;
}

/*
 * A cut deep below the start-up rate: 1 Gbit/s shared by two shards, set to
 * 400 kbit/s (link / 2500). The floors follow the link, so the shards hold
 * no more than the new link once each worker has applied the change
 * (share_shard_rebind, as the data plane does after config.set), before any
 * tick, and at every tick after.
 */
static void
test_deep_cut(void **state)
{
	static struct share_group g;
	const uint64_t start = 125000000, cut = 50000;
	struct share_shard sh[2];
	struct sched *s[2];
	struct sched_params p;
	uint64_t now = 0;
	char err[128];
	uint32_t i, t;

	(void)state;
	assert_int_equal(share_group_init(&g, start, 2, 1514, err, sizeof(err)), 0);
	sched_params_default(&p, SCHED_DISC_FQ_CODEL);
	p.rate = start;
	for (i = 0; i < 2; i++) {
		s[i] = sched_create(&p, err, sizeof(err));
		assert_non_null(s[i]);
		share_shard_init(&sh[i], &g, i, s[i], now);
	}
	for (t = 0; t < 10; t++) {
		now += SHARE_TICK_NS;
		for (i = 0; i < 2; i++)
			share_tick(&sh[i], s[i], 0, now); /* idle: both at the floor */
	}
	share_group_set_rate(&g, cut);
	for (i = 0; i < 2; i++)
		share_shard_rebind(&sh[i], s[i], now);
	assert_true(rates_sum(sh, 2, &g) <= cut);
	for (t = 0; t < 100; t++) {
		now += SHARE_TICK_NS;
		for (i = 0; i < 2; i++) {
			share_tick(&sh[i], s[i], i == 0 && t > 50 ? 3 : 0, now);
			assert_true(rates_sum(sh, 2, &g) <= cut);
		}
	}
	assert_true(sh[0].rate + sh[1].rate >= cut * 99 / 100); /* and the link is used */
	for (i = 0; i < 2; i++)
		sched_free(s[i]);
}

/*
 * Any sequence of cuts (down to link / 2000) and rises, 1 to 64 shards with
 * random loads, and the workers applying each change in turn while the
 * others tick: the rates and the pool always add up to the link, and once
 * every shard has acted on a change (applied it or ticked) the rates sum to
 * no more than the new link, at every tick until the next change.
 */
static void
test_cut_sequence(void **state)
{
	static const uint32_t counts[] = { 1, 2, 3, 8, 64 };
	static struct share_group g;
	static struct share_shard sh[SHARE_MAX_SHARDS];
	static struct sched *s[SHARE_MAX_SHARDS];
	const uint64_t base = 125000000;
	uint64_t rng = 0x5eed;
	char err[128];

	(void)state;
	for (uint32_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		uint32_t n = counts[c], i;
		uint64_t now = 0, link = base;
		struct sched_params p;

		assert_int_equal(share_group_init(&g, base, n, 1514, err, sizeof(err)), 0);
		sched_params_default(&p, SCHED_DISC_FIFO);
		p.rate = base;
		for (i = 0; i < n; i++) {
			s[i] = sched_create(&p, err, sizeof(err));
			assert_non_null(s[i]);
			share_shard_init(&sh[i], &g, i, s[i], now);
		}
		for (uint32_t change = 0; change < 200; change++) {
			bool acted[SHARE_MAX_SHARDS] = { false };
			uint32_t left = n, applied = 0;

			/* Between link / 2000 and twice the start, often far from the last. */
			link = base / 2000 + sh_rand64(&rng) % (2 * base);
			if (share_rate_check(link, n, err, sizeof(err)) != 0)
				continue;
			share_group_set_rate(&g, link);
			for (uint32_t t = 0; t < 20; t++) {
				now += SHARE_TICK_NS / 4;
				for (i = 0; i < n; i++) {
					uint64_t r = sh_rand64(&rng);

					/* The control thread reaches the workers one by one. */
					if (applied < n && r % 3 == 0) {
						share_shard_rebind(&sh[applied], s[applied], now);
						if (!acted[applied])
							left--;
						acted[applied++] = true;
					}
					if (r % 2 == 0) {
						share_tick(&sh[i], s[i], (uint32_t)(r >> 32) % 4,
							   now);
						if (!acted[i])
							left--;
						acted[i] = true;
					}
					if (left == 0)
						assert_true(rates_sum(sh, n, &g) <= link);
					else
						(void)rates_sum(sh, n, &g);
				}
			}
		}
		for (i = 0; i < n; i++)
			sched_free(s[i]);
	}
}

/*
 * stats.reset zeroes the scheduler's byte counter under the shard: the
 * next tick counts what arrived since, instead of a wrapped difference
 * (2^64 bytes: a quiet shard would claim the whole link).
 */
static void
test_reset_under_load(void **state)
{
	static struct share_group g;
	struct share_shard sh[2];
	struct sched *s[2];
	struct sched_params p;
	struct sh_pkt pkt[8];
	uint8_t frame[64] = { 0 };
	struct sh_pkt_list dropped, out;
	uint64_t now = 0;
	char err[128];
	uint32_t i, t;

	(void)state;
	sh_pkt_list_init(&dropped);
	assert_int_equal(share_group_init(&g, LINK, 2, 1514, err, sizeof(err)), 0);
	sched_params_default(&p, SCHED_DISC_FIFO);
	p.rate = LINK;
	for (i = 0; i < 2; i++) {
		s[i] = sched_create(&p, err, sizeof(err));
		assert_non_null(s[i]);
		share_shard_init(&sh[i], &g, i, s[i], now);
	}
	/* Shard 1 carries a trickle: one 1514-byte packet a tick (15 MB/s). */
	for (t = 0; t < 50; t++) {
		now += SHARE_TICK_NS;
		memset(&pkt[0], 0, sizeof(pkt[0]));
		pkt[0].data = frame;
		pkt[0].len = 1514;
		pkt[0].hdr_len = sizeof(frame);
		pkt[0].mem = 2048;
		sched_enqueue(s[1], &pkt[0], now, &dropped);
		sh_pkt_list_init(&out);
		sched_flush(s[1], &out);
		share_tick(&sh[1], s[1], 1, now);
		share_tick(&sh[0], s[0], 0, now);
	}
	assert_true(sh[1].arrivals > 14000000 && sh[1].arrivals < 16000000);
	sched_reset_stats(s[1]);
	now += SHARE_TICK_NS;
	share_tick(&sh[1], s[1], 1, now);
	/* Nothing arrived since the reset: the average decays, it does not jump. */
	assert_true(sh[1].arrivals < 16000000);
	assert_true(atomic_load(&g.slot[1].need) < LINK / 4);
	for (i = 0; i < 2; i++)
		sched_free(s[i]);
}

/*
 * What a tick publishes: a shard with more than SHARE_BUSY_PKTS queued asks
 * for all; else its arrivals, 1/32 spare, its floor and its queued packets'
 * worth of a tick; traffic the caller could not attribute to a host still
 * weighs 1; and what the scheduler counted before the shard existed is not
 * an arrival.
 */
static void
test_tick_need(void **state)
{
	static struct share_group g;
	struct share_shard sh;
	struct sched *s;
	struct sched_params p;
	struct sh_pkt pkt[8];
	uint8_t frame[64] = { 0 };
	struct sh_pkt_list dropped, out;
	uint64_t now = 0, need, arr;
	char err[128];
	uint32_t i;

	(void)state;
	sh_pkt_list_init(&dropped);
	assert_int_equal(share_group_init(&g, LINK, 2, 1514, err, sizeof(err)), 0);
	sched_params_default(&p, SCHED_DISC_FIFO);
	p.rate = LINK;
	s = sched_create(&p, err, sizeof(err));
	assert_non_null(s);
	/* 8 packets through the scheduler before the shard is made */
	for (i = 0; i < 8; i++) {
		memset(&pkt[i], 0, sizeof(pkt[i]));
		pkt[i].data = frame;
		pkt[i].len = 1514;
		pkt[i].hdr_len = sizeof(frame);
		pkt[i].mem = 2048;
		sched_enqueue(s, &pkt[i], now, &dropped);
	}
	sh_pkt_list_init(&out);
	sched_flush(s, &out);
	share_shard_init(&sh, &g, 0, s, now);
	now += SHARE_TICK_NS;
	share_tick(&sh, s, 0, now);
	assert_int_equal(sh.arrivals, 0);
	assert_int_equal(atomic_load(&g.slot[0].weight), 0);
	assert_int_equal(atomic_load(&g.slot[0].need), 0);

	/* 1, 2, then 3 packets queued, no host attributed */
	for (i = 0; i < 3; i++) {
		sched_enqueue(s, &pkt[i], now, &dropped);
		now += SHARE_TICK_NS;
		share_tick(&sh, s, 0, now);
		assert_int_equal(atomic_load(&g.slot[0].weight), 1);
		need = atomic_load(&g.slot[0].need);
		arr = sh.arrivals;
		assert_true(arr > 0);
		if (i < 2)
			assert_int_equal(need, arr + arr / 32 + share_group_floor(&g) +
							       (uint64_t)(i + 1) * 1514 *
									       (1000000000ull /
										SHARE_TICK_NS));
		else
			assert_int_equal(need, SHARE_NEED_ALL);
	}
	sched_flush(s, &out);
	sched_free(s);
}

/* ---------------------------------------------------------- concurrency */

#define THREADS 4
#define TICKS   200000

struct worker {
	struct share_group *g;
	struct share_shard sh;
	struct sched *s;
	struct sh_pkt pkts[4];
	uint8_t frame[64];
	uint32_t id;
	uint64_t max_rate, min_rate;
};

static void *
worker_run(void *arg)
{
	struct worker *w = arg;
	struct sh_pkt_list dropped;
	uint64_t now = 0, i;

	sh_pkt_list_init(&dropped);
	w->min_rate = UINT64_MAX;
	for (i = 0; i < TICKS; i++) {
		/* Busy (four packets held) and idle in turns of a length per shard. */
		bool busy = (i / (50 + 17 * w->id)) % 2 == 0;

		now += SHARE_TICK_NS;
		if (busy && sched_backlog_pkts(w->s) == 0) {
			uint32_t k;

			for (k = 0; k < 4; k++) {
				w->pkts[k].data = w->frame;
				w->pkts[k].len = 1514;
				w->pkts[k].hdr_len = sizeof(w->frame);
				w->pkts[k].mem = 2048;
				sched_enqueue(w->s, &w->pkts[k], now, &dropped);
			}
		} else if (!busy) {
			sched_flush(w->s, &dropped);
			sh_pkt_list_init(&dropped);
		}
		share_tick(&w->sh, w->s, busy ? 1 + w->id : 0, now);
		if (w->sh.rate > w->max_rate)
			w->max_rate = w->sh.rate;
		if (w->sh.rate < w->min_rate)
			w->min_rate = w->sh.rate;
	}
	return NULL;
}

static void
test_concurrent(void **state)
{
	static struct share_group g;
	static struct worker w[THREADS];
	pthread_t t[THREADS];
	struct sched_params p;
	uint64_t sum = 0;
	char err[128];
	uint32_t i;

	(void)state;
	assert_int_equal(share_group_init(&g, LINK, THREADS, 1514, err, sizeof(err)), 0);
	sched_params_default(&p, SCHED_DISC_FIFO);
	p.rate = LINK;
	for (i = 0; i < THREADS; i++) {
		w[i].g = &g;
		w[i].id = i;
		w[i].s = sched_create(&p, err, sizeof(err));
		assert_non_null(w[i].s);
		share_shard_init(&w[i].sh, &g, i, w[i].s, 0);
	}
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	for (i = 0; i < THREADS; i++) {
		struct sh_pkt_list out;

		sum += w[i].sh.rate;
		assert_true(w[i].min_rate >= share_group_floor(&g));
		assert_true(w[i].max_rate <= LINK);
		assert_int_equal(w[i].sh.ticks, TICKS);
		sh_pkt_list_init(&out);
		sched_flush(w[i].s, &out);
		sched_free(w[i].s);
	}
	/* Nothing created or lost: rates and pool add up to the link exactly. */
	assert_int_equal(sum + (uint64_t)atomic_load(&g.pool), LINK);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),        cmocka_unit_test(test_hosts),
		cmocka_unit_test(test_steering),     cmocka_unit_test(test_set_rate),
		cmocka_unit_test(test_concurrent),   cmocka_unit_test(test_deep_cut),
		cmocka_unit_test(test_cut_sequence), cmocka_unit_test(test_reset_under_load),
		cmocka_unit_test(test_tick_need),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
