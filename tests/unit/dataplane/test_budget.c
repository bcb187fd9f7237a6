/*
 * The mbuf budget: what one direction's pool must hold at worst (the
 * scheduler's limits, the emulator, rings, the held tx, a burst, the lcore
 * cache), the pool size "auto" gives, and the refusals, which name the
 * keys to change. No EAL needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/config.h"
#include "shaper/dataplane.h"

static void
load(const char *json, struct shaper_config *c)
{
	char err[SHAPER_ERR_LEN];

	if (shaper_config_load_string(json, c, err, sizeof(err)) != 0)
		fail_msg("%s", err);
}

#define PORTS "\"ports\": {\"wan\": \"net_null0\", \"lan\": \"net_null1\"}"

static void
test_scheduler_bounds(void **state)
{
	const uint32_t ts = 2496;
	struct sched_params p;

	(void)state;
	sched_params_default(&p, SCHED_DISC_FIFO);
	assert_int_equal(sched_max_packets(&p, ts), 1000);
	p.fifo_limit_pkts = 0;
	p.fifo_limit_bytes = 60000; /* runts count as 60 bytes */
	assert_int_equal(sched_max_packets(&p, ts), 1000);
	p.fifo_limit_bytes = 0;
	assert_true(sched_max_packets(&p, ts) == SCHED_UNBOUNDED);

	sched_params_default(&p, SCHED_DISC_FQ_CODEL);
	assert_int_equal(sched_max_packets(&p, ts), 10241); /* limit, one over while dropping */
	p.fqc_memory_limit = 100 * ts;
	assert_int_equal(sched_max_packets(&p, ts), 101);

	sched_params_default(&p, SCHED_DISC_CAKE);
	p.memlimit = 1000 * ts;
	assert_int_equal(sched_max_packets(&p, ts), 1001);
	p.memlimit = 0;
	p.rate = 10000000 / 8; /* 10 Mbit/s: the 4 MB floor */
	assert_int_equal(sched_max_packets(&p, ts), (4u << 20) / ts + 1);
	p.rate = 0; /* unshaped: 10240 MTUs */
	assert_int_equal(sched_max_packets(&p, ts), 10240u * 1514 / ts + 1);
	/*
	 * Priced at the mbuf's footprint (as shaperd sets pkt_mem), the derived
	 * limit holds as many packets as Linux's holds full-size frames: 10240
	 * at 1 Gbit/s, 5 MB / 1514 at 100 Mbit/s; the pool must hold them all.
	 */
	p.pkt_mem = ts;
	assert_int_equal(sched_max_packets(&p, ts), 10240 + 1);
	p.rate = 1000000000 / 8;
	assert_int_equal(sched_max_packets(&p, ts), 10240 + 1);
	p.rate = 100000000 / 8;
	assert_int_equal(sched_max_packets(&p, ts), 5000000u / 1514 + 1);
	p.memlimit = 1000 * ts; /* an explicit memlimit stands as given */
	assert_int_equal(sched_max_packets(&p, ts), 1001);
}

static void
test_budget_parts(void **state)
{
	struct shaper_config c;
	struct dp_mbuf_budget b;

	(void)state;
	load("{\"ports\": {\"wan\": {\"device\": \"net_null0\", \"tx_descriptors\": 512},"
	     " \"lan\": {\"device\": \"net_null1\", \"rx_descriptors\": 2048}},"
	     " \"upstream\": {\"discipline\": \"fq_codel\", \"limit\": 5000,"
	     " \"emulate\": {\"delay\": \"10ms\", \"limit\": 3000}}}",
	     &c);
	dp_mbuf_budget_dir(&c, SHAPER_UP, &c.dir[SHAPER_UP], 2496, &b);
	assert_int_equal(b.sched, 5001);
	assert_int_equal(b.emulator, 3000);
	assert_int_equal(b.rx_ring, 2048); /* upstream receives on the LAN port */
	assert_int_equal(b.tx_ring, 512);  /* and sends on the WAN port */
	assert_int_equal(b.pending, DP_TX_PENDING_MAX);
	assert_int_equal(b.burst, SHAPER_BURST_MAX);
	assert_int_equal(b.held, SCHED_MOVE_HELD_MAX);
	assert_true(b.cache >= DP_POOL_CACHE);
	assert_true(b.main_cache >= DP_POOL_CACHE);
	assert_int_equal(b.fixed, 3000 + 2048 + 512 + DP_TX_PENDING_MAX + SHAPER_BURST_MAX +
						  SCHED_MOVE_HELD_MAX + b.cache + b.main_cache);
	assert_int_equal(b.total, b.fixed + 5001);
	/* The emulator counts only when it is on. */
	dp_mbuf_budget_dir(&c, SHAPER_DOWN, &c.dir[SHAPER_DOWN], 2496, &b);
	assert_int_equal(b.emulator, 0);
	assert_int_equal(b.rx_ring, 1024);
	/* net_af_xdp keeps its fill ring full from the pool whatever rx_descriptors says. */
	load("{\"ports\": {\"wan\": \"net_af_xdp1,iface=w0\","
	     " \"lan\": {\"device\": \"net_af_xdp0,iface=l0\", \"rx_descriptors\": 512}}}",
	     &c);
	dp_mbuf_budget_dir(&c, SHAPER_UP, &c.dir[SHAPER_UP], 2496, &b);
	assert_int_equal(b.rx_ring, 4096);
}

/*
 * Two workers: every holder per shard (a lone busy shard may hold its
 * scheduler's limits), a steered burst beside the own one, the rings
 * between the shards, and the main lcore's cache once.
 */
static void
test_budget_shards(void **state)
{
	struct shaper_config c;
	struct dp_mbuf_budget b;
	uint64_t per_shard;

	(void)state;
	load("{" PORTS ", \"upstream\": {\"discipline\": \"fq_codel\", \"limit\": 5000},"
	     " \"lcores\": {\"workers\": [1, 2]}}",
	     &c);
	dp_mbuf_budget_dir(&c, SHAPER_UP, &c.dir[SHAPER_UP], 2496, &b);
	assert_int_equal(b.shards, 2);
	assert_int_equal(b.sched, 2 * 5001);
	assert_int_equal(b.burst, 2 * SHAPER_BURST_MAX);
	assert_int_equal(b.steer, 2 * dp_steer_ring_size(2));
	per_shard = (uint64_t)b.rx_ring + b.tx_ring + b.pending + b.burst + b.held + b.cache;
	assert_int_equal(b.fixed, 2 * per_shard + b.main_cache + b.steer);
	assert_int_equal(b.total, b.fixed + b.sched);
}

static void
test_pool_size(void **state)
{
	char err[SHAPER_ERR_LEN] = "";
	struct shaper_config c;
	struct dp_mbuf_budget b;
	uint32_t n = 0;

	(void)state;
	/* auto: exactly the worst case */
	load("{" PORTS ", \"upstream\": {\"discipline\": \"fq_codel\"}}", &c);
	dp_mbuf_budget_dir(&c, SHAPER_UP, &c.dir[SHAPER_UP], 2496, &b);
	assert_int_equal(dp_pool_size(&c, SHAPER_UP, 2496, &n, err, sizeof(err)), 0);
	assert_int_equal(n, b.total);

	/* the shipped fq_codel limits in the old shared pool's size: refused, keys named */
	load("{" PORTS ", \"upstream\": {\"discipline\": \"fq_codel\", \"limit\": 10240},"
	     " \"dataplane\": {\"mbufs\": 8191}}",
	     &c);
	assert_int_equal(dp_pool_size(&c, SHAPER_UP, 2496, &n, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "dataplane.mbufs: the upstream pool has 8191 mbufs"));
	assert_non_null(strstr(err, "upstream.limit, memory_limit"));
	assert_non_null(strstr(err, "ports.lan.rx_descriptors"));
	assert_non_null(strstr(err, "ports.wan.tx_descriptors"));

	/* an explicit size that fits is kept, per direction */
	load("{" PORTS ", \"dataplane\": {\"mbufs\": {\"upstream\": 65535}}}", &c);
	assert_int_equal(dp_pool_size(&c, SHAPER_UP, 2496, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 65535);

	/* nothing bounds a fifo without limits */
	load("{" PORTS ", \"downstream\": {\"discipline\": \"fifo\", \"limit\": 0}}", &c);
	assert_int_equal(dp_pool_size(&c, SHAPER_DOWN, 2496, &n, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "set downstream.limit"));
	/* ... unless the user sized the pool that bounds it */
	load("{" PORTS ", \"downstream\": {\"discipline\": \"fifo\", \"limit\": 0},"
	     " \"dataplane\": {\"mbufs\": 50000}}",
	     &c);
	assert_int_equal(dp_pool_size(&c, SHAPER_DOWN, 2496, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 50000);

	/* an emulator holding more than a pool can */
	load("{" PORTS ", \"upstream\": {\"emulate\": {\"delay\": \"1s\", \"limit\": 16777216}}}",
	     &c);
	assert_int_equal(dp_pool_size(&c, SHAPER_UP, 2496, &n, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "upstream.emulate.limit"));
}

static void
test_live_update_checked(void **state)
{
	char err[SHAPER_ERR_LEN] = "";
	struct dp_dir d;
	struct sched_params p;

	(void)state;
	memset(&d, 0, sizeof(d));
	d.dir = SHAPER_DOWN;
	d.truesize = 2496;
	d.pool_mbufs = 14000;
	d.mbuf_fixed = 3200;
	sched_params_default(&p, SCHED_DISC_FQ_CODEL);
	p.fqc_limit = 10000;
	assert_int_equal(dp_budget_check_update(&d, &p, err, sizeof(err)), 0);
	p.fqc_limit = 20000;
	assert_int_equal(dp_budget_check_update(&d, &p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "downstream"));
	assert_non_null(strstr(err, "limit, memory_limit"));
	assert_non_null(strstr(err, "dataplane.mbufs"));
}

/*
 * With subscribers the schedulers' part is at least DP_SUBS_PKTS_PER_CAKE
 * for every CAKE of the pool (the joint limit, dp_subs_set_limit): 10,000
 * subscribers backlogged at slow plans each keep a frame or two standing.
 */
static void
test_budget_subscribers(void **state)
{
	char err[SHAPER_ERR_LEN] = "";
	struct shaper_config c;
	struct dp_mbuf_budget plain, b;
	struct sched_params p;
	struct dp_dir d;

	(void)state;
	load("{" PORTS ", \"upstream\": {\"discipline\": \"fq_codel\", \"limit\": 5000}}", &c);
	dp_mbuf_budget_dir(&c, SHAPER_UP, &c.dir[SHAPER_UP], 2496, &plain);
	snprintf(c.subscribers.file, sizeof(c.subscribers.file), "subscribers.json");
	c.subscribers.active = 1000; /* 4,000: the link's 5,001 is more */
	dp_mbuf_budget_dir(&c, SHAPER_UP, &c.dir[SHAPER_UP], 2496, &b);
	assert_int_equal(b.sched, 5001);
	c.subscribers.active = 10000;
	dp_mbuf_budget_dir(&c, SHAPER_UP, &c.dir[SHAPER_UP], 2496, &b);
	assert_int_equal(b.sched, 10000 * DP_SUBS_PKTS_PER_CAKE);
	assert_int_equal(b.fixed, plain.fixed);
	assert_int_equal(b.total, plain.fixed + 10000 * DP_SUBS_PKTS_PER_CAKE);
	assert_true(dp_budget_sched_part(SCHED_UNBOUNDED, 10000) == SCHED_UNBOUNDED);

	/* A live change is held to the same part: the floor stays whatever the limit. */
	memset(&d, 0, sizeof(d));
	d.dir = SHAPER_UP;
	d.truesize = 2496;
	d.subs_cakes = 10000;
	d.mbuf_fixed = 3200;
	d.pool_mbufs = 3200 + 10000 * DP_SUBS_PKTS_PER_CAKE;
	sched_params_default(&p, SCHED_DISC_FQ_CODEL);
	p.fqc_limit = 100;
	assert_int_equal(dp_budget_check_update(&d, &p, err, sizeof(err)), 0);
	d.pool_mbufs--;
	assert_int_equal(dp_budget_check_update(&d, &p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "upstream"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scheduler_bounds),
		cmocka_unit_test(test_budget_parts),
		cmocka_unit_test(test_budget_shards),
		cmocka_unit_test(test_pool_size),
		cmocka_unit_test(test_live_update_checked),
		cmocka_unit_test(test_budget_subscribers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
