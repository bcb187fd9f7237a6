/*
 * Per-subscriber shaping with two workers: two shards of the downstream
 * direction, each receiving on its own ring port, software steering
 * between them, the link's rate shared as a share group
 * (shaper/share.h), each shard's worker turn (dp_dir_turn) at stepped,
 * simulated times. Every frame arrives on either port, alternately, so
 * every subscriber's frames reach both workers first.
 *
 * The link (40 Mbit/s) is the bottleneck: node A (20 Mbit/s) has three
 * subscribers of 8 Mbit/s, node B (30 Mbit/s) two of 10, c0 (5 Mbit/s)
 * hangs from the link, each offered 1.5 times its plan, and an address no
 * subscriber owns sends 1 Mbit/s. The link's max-min split among its
 * children gives c0 its plan, the unknown address what it sends, and A
 * and B the same share of the rest, whichever shard each is on.
 *
 * Checked: each subscriber's frames (from both of its addresses) are all
 * shaped on one shard, a node's subscribers all on the same one, and both
 * shards have some; each gets its share; no node and not the link carries
 * more than its capacity, and the two shards' rates never add up to more
 * than the link; every frame is sent, dropped under its reason, queued or
 * in a steering ring, per direction and per subscriber. A live change
 * (dp_subs_change: a new plan, then the same set with new address tables)
 * reaches both workers, each through its own mailbox. Draining leaves no
 * mbuf behind.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "shaper/dataplane.h"

#include "eal_test.h"

#define FRAME    1000u
#define NMBUF    16383u
#define STEP_NS  100000ull /* a turn of each worker every 100 us of simulated time */
#define RUN_NS   4000000000ull
#define WIN_FROM 2000000000ull
#define NSHARDS  2u
#define NSRC     7u
#define LINK_MB  40.0

static struct rte_mempool *pool;
static struct rte_ring *in_ring[NSHARDS], *out_ring;
static uint16_t in_port[NSHARDS], out_port;
static char subs_path[64];
static struct share_group group[SHAPER_NUM_DIRS];

/* Downstream: a WAN server -> a subscriber's two addresses in turn (or nobody's). */
static const struct {
	const char *id; /* NULL: nobody's */
	char node;      /* 'A', 'B', or 0 under the link */
	uint8_t third;  /* 100.64.third.1 and 100.65.third.1 */
	uint64_t offered_bps;
} srcs[NSRC] = {
	{ "a1", 'A', 1, 12000000 }, { "a2", 'A', 2, 12000000 }, { "a3", 'A', 3, 12000000 },
	{ "b1", 'B', 4, 15000000 }, { "b2", 'B', 5, 15000000 }, { "c0", 0, 6, 7500000 },
	{ NULL, 0, 7, 1000000 },
};

static const char subs_json[] =
		"{\"link\": {\"download\": \"40mbit\", \"upload\": \"40mbit\"},"
		" \"nodes\": {\"A\": {\"download\": \"%umbit\", \"upload\": \"20mbit\"},"
		"             \"B\": {\"download\": \"30mbit\", \"upload\": \"30mbit\"}},"
		" \"subscribers\": ["
		"  {\"id\": \"a1\", \"node\": \"A\", \"download\": \"8mbit\", \"upload\": \"1mbit\","
		"   \"addresses\": [\"100.64.1.1\", \"100.65.1.1\"]},"
		"  {\"id\": \"a2\", \"node\": \"A\", \"download\": \"8mbit\", \"upload\": \"1mbit\","
		"   \"addresses\": [\"100.64.2.1\", \"100.65.2.1\"]},"
		"  {\"id\": \"a3\", \"node\": \"A\", \"download\": \"8mbit\", \"upload\": \"1mbit\","
		"   \"addresses\": [\"100.64.3.1\", \"100.65.3.1\"]},"
		"  {\"id\": \"b1\", \"node\": \"B\", \"download\": \"10mbit\", \"upload\": \"1mbit\","
		"   \"addresses\": [\"100.64.4.1\", \"100.65.4.1\"]},"
		"  {\"id\": \"b2\", \"node\": \"B\", \"download\": \"10mbit\", \"upload\": \"1mbit\","
		"   \"addresses\": [\"100.64.5.1\", \"100.65.5.1\"]},"
		"  {\"id\": \"c0\", \"download\": \"5mbit\", \"upload\": \"1mbit\","
		"   \"addresses\": [\"100.64.6.1\", \"100.65.6.1\"]}"
		" ]}";

static int
setup(void **state)
{
	(void)state;
	pool = dp_pool_create("subs2", NMBUF, (int)rte_socket_id());
	assert_non_null(pool);
	out_ring = rte_ring_create("out", 4096, (int)rte_socket_id(), 0);
	assert_non_null(out_ring);
	out_port = eal_test_ring_port("out", out_ring, out_ring, pool, 64);
	for (uint32_t i = 0; i < NSHARDS; i++) {
		char name[32];

		snprintf(name, sizeof(name), "in%u", i);
		in_ring[i] = rte_ring_create(name, 1024, (int)rte_socket_id(), 0);
		assert_non_null(in_ring[i]);
		in_port[i] = eal_test_ring_port(name, in_ring[i], out_ring, pool, 64);
	}
	snprintf(subs_path, sizeof(subs_path), "/tmp/test_worker_subs_shards_%d.json",
		 (int)getpid());
	return 0;
}

/* The subscriber file with node A's download capacity a_mbit. */
static void
write_subs(unsigned int a_mbit)
{
	FILE *f = fopen(subs_path, "w");

	assert_non_null(f);
	fprintf(f, subs_json, a_mbit);
	fclose(f);
}

/* The level L of a max-min split of total among ceilings: sum(min(c, L)) = total. */
static double
water_level(const double *ceil, unsigned int n, double total)
{
	double left = total, lo = 0;
	unsigned int above = n;

	/* Ascending: each ceiling below the level takes itself, the rest share what is left. */
	for (;;) {
		double level = above != 0 ? left / above : INFINITY, next = INFINITY;
		unsigned int k = 0;

		for (unsigned int i = 0; i < n; i++)
			if (ceil[i] > lo && ceil[i] < next)
				next = ceil[i];
		if (next == INFINITY || next >= level)
			return level;
		for (unsigned int i = 0; i < n; i++)
			if (ceil[i] == next)
				k++;
		left -= next * k;
		above -= k;
		lo = next;
	}
}

static int
teardown(void **state)
{
	(void)state;
	unlink(subs_path);
	return 0;
}

/* A 1000-byte UDP frame to source i's address (its two in turn, by seq). */
static struct rte_mbuf *
frame(uint32_t i, uint32_t seq)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	uint8_t *d, *ip, *udp;

	if (m == NULL)
		return NULL;
	assert_non_null(rte_pktmbuf_append(m, FRAME));
	d = rte_pktmbuf_mtod(m, uint8_t *);
	memset(d, 0, 64);
	d[0] = 0x02;
	d[6] = 0x02;
	d[11] = (uint8_t)i;
	d[12] = 0x08;
	d[13] = 0x00;
	ip = d + 14;
	ip[0] = 0x45;
	ip[2] = (uint8_t)((FRAME - 14) >> 8);
	ip[3] = (uint8_t)(FRAME - 14);
	ip[4] = (uint8_t)(seq >> 8);
	ip[5] = (uint8_t)seq;
	ip[8] = 64;
	ip[9] = 17;
	ip[12] = 198;
	ip[13] = 51;
	ip[14] = 100;
	ip[15] = (uint8_t)(1 + i);
	ip[16] = 100;
	ip[17] = (uint8_t)(srcs[i].id != NULL && seq % 4 >= 2 ? 65 : 64);
	ip[18] = srcs[i].third;
	ip[19] = 1;
	udp = ip + 20;
	udp[0] = 0x13;
	udp[1] = (uint8_t)(0x88 + seq % 2); /* two flows per address */
	udp[2] = 0x1f;
	udp[3] = 0x90;
	return m;
}

static uint32_t
src_of(const struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod(m, const uint8_t *)[11];
}

static void
dir_init(struct dp_dir *d, enum shaper_dir dir, uint32_t shard, const struct shaper_config *c)
{
	char err[256];

	memset(d, 0, sizeof(*d));
	d->dir = dir;
	d->shard = shard;
	d->n_shards = NSHARDS;
	d->rx_port = in_port[shard];
	d->tx_port = out_port;
	d->sched = sched_create(&c->dir[dir], err, sizeof(err));
	if (d->sched == NULL)
		fail_msg("%s", err);
	classify_key_init(&d->key, 1);
	d->pool = pool;
	d->truesize = dp_mbuf_truesize(pool);
	d->pool_mbufs = NMBUF;
	d->share_group = &group[dir];
	d->share_by = SHARE_BY_HOST;
	share_shard_init(&d->share, &group[dir], shard, d->sched, 0);
}

/* Both workers' mailboxes, served as their loops would between bursts. */
static atomic_bool serving;

static void *
serve_mailboxes(void *arg)
{
	struct dp_dir *down = arg;

	while (atomic_load(&serving))
		for (uint32_t s = 0; s < NSHARDS; s++) {
			struct dp_msg *m = dp_mailbox_take(&down[s]);

			if (m == NULL)
				continue;
			while (!dp_dir_handle_msg(&down[s], m, RUN_NS))
				;
			dp_mailbox_answer(&down[s], m);
		}
	return NULL;
}

/* A change of c0's download plan on every worker; addresses: new tables too. */
static void
change_plan(struct dp_dir *down, struct dp_dir *const *downs, uint64_t bps, bool addresses)
{
	struct sub_set nw;
	char err[256] = "";
	uint32_t c0;

	assert_int_equal(sub_set_copy(&nw, dp_subs_set(&down[0])), 0);
	c0 = sub_find(&nw, "c0");
	assert_int_not_equal(c0, SUB_NONE);
	nw.subs[c0].plan[SUB_DOWN].max = bps;
	if (dp_subs_change(downs, NSHARDS, &nw, addresses, NULL, 0, 2000, err, sizeof(err)) != 0)
		fail_msg("dp_subs_change: %s", err);
	assert_int_equal(dp_subs_set(&down[0])->subs[c0].plan[SUB_DOWN].max, bps);
}

/* The subscriber slot owning source i's first address. */
static uint32_t
slot_of(const struct sub_sched *ss, uint32_t i)
{
	struct sub_prefix p;
	char a[32], err[128];

	snprintf(a, sizeof(a), "100.64.%u.1", srcs[i].third);
	assert_int_equal(sub_prefix_parse(a, &p, err, sizeof(err)), 0);
	return sub_sched_find(ss, &p);
}

/*
 * spread: subscribers.shard_by "subscriber" (each subscriber on a worker by
 * its id, nodes shared among the workers); a_mbit: node A's capacity.
 */
static void
two_shards(bool spread, unsigned int a_mbit)
{
	static struct shaper_config c;
	static struct dp_dir down[NSHARDS], up[NSHARDS];
	struct dp_dir *downs[NSHARDS], *ups[NSHARDS];
	uint64_t credit[NSRC] = { 0 }, win_bytes[NSRC] = { 0 }, now, sent = 0, no_mbuf = 0;
	uint64_t rx = 0, tx = 0, dropped = 0, queued = 0, ringed = 0, over = 0;
	uint32_t seq[NSRC] = { 0 }, owner[NSRC], turn = 0;
	char text[1024], err[512];
	double got[NSRC], level, want[NSRC], worst = 0, node_a = 0, node_b = 0, link = 0;

	write_subs(a_mbit);
	memset(down, 0, sizeof(down));
	memset(up, 0, sizeof(up));
	snprintf(text, sizeof(text),
		 "{\"ports\": {\"wan\": \"a\", \"lan\": \"b\"},"
		 " \"downstream\": {\"bandwidth\": \"40mbit\", \"diffserv\": \"besteffort\","
		 "  \"isolation\": \"dual-dsthost\", \"memlimit\": \"1mb\"},"
		 " \"upstream\": {\"bandwidth\": \"40mbit\"},"
		 " \"subscribers\": {\"file\": \"%s\", \"active\": 8, \"shard_by\": \"%s\"}}",
		 subs_path, spread ? "subscriber" : "node");
	if (shaper_config_load_string(text, &c, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	for (int d = 0; d < SHAPER_NUM_DIRS; d++)
		assert_int_equal(share_group_init(&group[d], c.dir[d].rate, NSHARDS, 1514, err,
						  sizeof(err)),
				 0);
	for (uint32_t i = 0; i < NSHARDS; i++) {
		dir_init(&down[i], SHAPER_DOWN, i, &c);
		dir_init(&up[i], SHAPER_UP, i, &c);
		downs[i] = &down[i];
		ups[i] = &up[i];
	}
	assert_int_equal(dp_steer_create(downs, NSHARDS, SHARE_BY_HOST, err, sizeof(err)), 0);
	if (dp_subs_attach_shards(downs, ups, NSHARDS, &c, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_non_null(down[0].subs);
	assert_non_null(down[1].subs);
	assert_ptr_not_equal(down[0].subs, down[1].subs);
	assert_ptr_equal(down[1].subs, up[1].subs);

	for (now = STEP_NS; now <= RUN_NS; now += STEP_NS) {
		struct rte_mbuf *out[64];
		unsigned int n;

		for (uint32_t i = 0; i < NSRC; i++) {
			credit[i] += srcs[i].offered_bps * STEP_NS / 8;
			while (credit[i] >= (uint64_t)FRAME * 1000000000ull) {
				struct rte_mbuf *f = frame(i, seq[i]++);

				credit[i] -= (uint64_t)FRAME * 1000000000ull;
				if (f == NULL) {
					no_mbuf++;
					continue;
				}
				/* Either worker's queue, in turn: both see every subscriber. */
				assert_int_equal(rte_ring_enqueue(in_ring[turn++ % NSHARDS], f), 0);
				sent++;
			}
		}
		for (uint32_t s = 0; s < NSHARDS; s++) {
			uint64_t next = UINT64_MAX;

			dp_dir_turn(&down[s], now, 32, &next);
		}
		/* The shards' rates never add up to more than the link. */
		if (down[0].share.rate + down[1].share.rate > c.dir[SHAPER_DOWN].rate)
			over++;
		while ((n = rte_ring_dequeue_burst(out_ring, (void **)out, RTE_DIM(out), NULL)) !=
		       0) {
			for (unsigned int k = 0; k < n; k++)
				if (now > WIN_FROM)
					win_bytes[src_of(out[k])] += out[k]->pkt_len;
			rte_pktmbuf_free_bulk(out, n);
		}
	}
	assert_int_equal(no_mbuf, 0);
	assert_int_equal(over, 0);

	/* Each subscriber on one shard, with both its addresses; a node's on the same one. */
	for (uint32_t i = 0; i < NSRC - 1; i++) {
		uint32_t sub = slot_of(down[0].subs, i), on = 0;

		assert_int_not_equal(sub, SUB_NONE);
		owner[i] = NSHARDS;
		for (uint32_t s = 0; s < NSHARDS; s++) {
			struct sub_counters sc;

			sub_sched_counters(down[s].subs, sub, SUB_DOWN, &sc);
			if (sc.packets == 0)
				continue;
			on++;
			owner[i] = s;
			/* Its own accounting: every frame that reached it sent, dropped or queued.
			 */
			assert_int_equal(sc.packets,
					 sc.sent_packets + sc.dropped[SUB_DROP_AQM] +
							 sc.dropped[SUB_DROP_OVERFLOW] +
							 sc.dropped[SUB_DROP_ACK_FILTER] +
							 sc.dropped[SUB_DROP_BUDGET] + sc.qlen);
		}
		printf("# %s (node %c) shaped on worker %u\n", srcs[i].id,
		       srcs[i].node != 0 ? srcs[i].node : '-', owner[i]);
		assert_int_equal(on, 1);
	}
	if (!spread) {
		assert_int_equal(owner[0], owner[1]);
		assert_int_equal(owner[0], owner[2]);
		assert_int_equal(owner[3], owner[4]);
	} else {
		/* Node A's subscribers on both workers: its capacity is shared. */
		assert_true(owner[0] != owner[1] || owner[0] != owner[2]);
	}
	assert_true(owner[0] != owner[3] || owner[0] != owner[5]); /* both workers have some */

	/*
	 * The link's max-min split among its children: c0 its plan, the
	 * unknown address what it sends (its allocation is its arrival rate
	 * and 1/32 more), A and B each min(its ceiling, the level), shared
	 * within each node equally (every plan is above its part).
	 */
	{
		double kids[4] = { fmin(a_mbit, 3 * 8.0), fmin(30.0, 2 * 10.0), 5.0,
				   1.0 * 33 / 32 };

		level = water_level(kids, 4, LINK_MB);
	}
	for (uint32_t i = 0; i < NSRC; i++) {
		got[i] = (double)win_bytes[i] * 8 / ((RUN_NS - WIN_FROM) / 1e9) / 1e6;
		want[i] = srcs[i].node == 'A'   ? fmin(level, fmin(a_mbit, 24.0)) / 3
			  : srcs[i].node == 'B' ? fmin(level, 20.0) / 2
			  : srcs[i].id != NULL  ? 5.0
						: 1.0;
		printf("# %s: want %.3f Mbit/s, got %.4f\n", srcs[i].id != NULL ? srcs[i].id : "?",
		       want[i], got[i]);
		worst = fmax(worst, fabs(got[i] - want[i]) / want[i]);
		node_a += srcs[i].node == 'A' ? got[i] : 0;
		node_b += srcs[i].node == 'B' ? got[i] : 0;
		link += got[i];
	}
	printf("# figure: two workers%s: node A %.3f of %u, node B %.3f Mbit/s (max-min level "
	       "%.3f), link %.3f of %.0f; every subscriber within %.2f %% of its share\n",
	       spread ? ", nodes shared" : "", node_a, a_mbit, node_b, level, link, LINK_MB,
	       worst * 100);
	assert_true(worst < 0.02);
	assert_true(node_a <= a_mbit * 1.002);
	assert_true(node_b <= 30.0 * 1.002);
	assert_true(link <= LINK_MB * 1.002);

	/* Every frame received: sent, dropped under a reason, queued, or in a steering ring. */
	for (uint32_t s = 0; s < NSHARDS; s++) {
		rx += down[s].stats.rx_packets;
		tx += down[s].stats.tx_packets;
		for (int r = 0; r < SHAPER_DROP_MAX; r++)
			dropped += down[s].stats.dropped[r];
		queued += sub_sched_backlog_pkts(down[s].subs, SUB_DOWN);
		ringed += down[s].steer->steered_out;
		ringed -= down[s].steer->steered_in;
	}
	printf("# frames: %llu received, %llu sent, %llu dropped, %llu queued, %llu in rings; "
	       "steered %llu and %llu\n",
	       (unsigned long long)rx, (unsigned long long)tx, (unsigned long long)dropped,
	       (unsigned long long)queued, (unsigned long long)ringed,
	       (unsigned long long)down[0].steer->steered_out,
	       (unsigned long long)down[1].steer->steered_out);
	assert_int_equal(rx, sent);
	assert_int_equal(rx, tx + dropped + queued + ringed);
	assert_true(down[0].steer->steered_out > 0 && down[1].steer->steered_out > 0);
	assert_int_equal(down[0].stats.dropped[SHAPER_DROP_STEER_FULL] +
					 down[1].stats.dropped[SHAPER_DROP_STEER_FULL],
			 0);

	/* A live change reaches both workers: a plan, then new address tables as well. */
	{
		pthread_t worker;

		for (uint32_t s = 0; s < NSHARDS; s++)
			assert_int_equal(dp_dir_control_init(&down[s]), 0);
		atomic_store(&serving, true);
		assert_int_equal(pthread_create(&worker, NULL, serve_mailboxes, down), 0);
		change_plan(down, downs, 3000000, false);
		change_plan(down, downs, 4000000, true);
		atomic_store(&serving, false);
		pthread_join(worker, NULL);
		for (uint32_t s = 0; s < NSHARDS; s++) {
			assert_int_equal(sub_sched_changes(down[s].subs), 2);
			dp_dir_control_free(&down[s]);
		}
		/* Each worker still finds c0 (new tables on the second change). */
		for (uint32_t s = 0; s < NSHARDS; s++)
			assert_int_equal(slot_of(down[s].subs, 5), slot_of(down[0].subs, 5));
	}

	for (uint32_t s = 0; s < NSHARDS; s++)
		dp_dir_drain(&down[s]);
	for (uint32_t s = 0; s < NSHARDS; s++)
		assert_int_equal(sub_sched_backlog_pkts(down[s].subs, SUB_DOWN), 0);
	dp_subs_detach_shards(downs, ups, NSHARDS);
	assert_null(down[0].subs);
	assert_null(up[1].subs);
	dp_steer_free(downs, NSHARDS);
	for (uint32_t s = 0; s < NSHARDS; s++) {
		sched_free(down[s].sched);
		sched_free(up[s].sched);
	}
	{
		struct rte_mbuf *m;

		while (rte_ring_dequeue(out_ring, (void **)&m) == 0)
			rte_pktmbuf_free(m);
	}
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
}

static void
test_two_shards(void **state)
{
	(void)state;
	two_shards(false, 20);
}

/*
 * Each subscriber on a worker by its id: node A's three on both workers.
 * At 12 Mbit/s A is its subscribers' bottleneck: split among the workers
 * by what each one's subscribers there can use, they get 4 each, and A
 * no more than 12 (each worker allowing A its whole capacity would let it
 * carry up to 20: 8 of a lone subscriber on one, 12 on the other).
 */
static void
test_two_shards_nodes_shared(void **state)
{
	(void)state;
	two_shards(true, 12);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_shards),
		cmocka_unit_test(test_two_shards_nodes_shared),
	};

	return EAL_TEST_RUN("test_worker_subs_shards", tests, setup, teardown);
}
