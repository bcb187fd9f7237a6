/*
 * The worker with per-subscriber shaping: frames from ring ports, the
 * worker's own turn (dp_dir_turn) at stepped, simulated times, the
 * subscribers from a file in the JSON form through the config's
 * "subscribers" section (dp_subs_attach). Downstream, four subscribers
 * (plans 2, 4, 6 and 8 Mbit/s, two addresses each) are offered 1.5 times
 * their plans, a fifth owns 10.0.0.1 only on VLAN 200 (3 Mbit/s), and the
 * same address untagged belongs to no one and shares the link's own CAKE.
 * Each subscriber gets its plan within 1 %, the untagged unknown address
 * what it sends; every frame is sent, dropped under a named reason, or
 * still queued; a discipline swap is refused while subscribers are shaped;
 * draining leaves no mbuf behind.
 *
 * Passive RTT per subscriber: two subscribers' TCP flows (timestamps on),
 * each with its own delay beyond the LAN port and beyond the WAN port,
 * through both directions' worker turns with the RTT tap on. Each
 * subscriber's median and p95 per side are its own delays (within the
 * histogram's bucket), not the other's or the other side's; each segment
 * comes right after a frame of an address no subscriber owns, in the same
 * burst, and none of the samples goes to that address.
 */
#include <errno.h>
#include <math.h>
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
#define STEP_NS  100000ull /* a worker turn every 100 us of simulated time */
#define NSRC     6u
#define RUN_NS   3000000000ull
#define WIN_FROM 1000000000ull

static struct rte_mempool *pool;
static struct rte_ring *in_ring, *out_ring, *up_in_ring, *up_out_ring;
static uint16_t in_port, out_port, up_in_port, up_out_port;
static char subs_path[64];

/* Downstream sources: WAN server -> LAN address (on a VLAN or not). */
static const struct {
	uint8_t dst[4];
	uint16_t vlan;
	uint64_t offered_bps;
	double want_mbit; /* what it should get */
} srcs[NSRC] = {
	{ { 100, 64, 0, 1 }, 0, 3000000, 2 },  /* c0, plan 2 */
	{ { 100, 64, 1, 1 }, 0, 6000000, 4 },  /* c1, plan 4 */
	{ { 100, 64, 2, 2 }, 0, 9000000, 6 },  /* c2, plan 6 (its second address) */
	{ { 100, 64, 3, 1 }, 0, 12000000, 8 }, /* c3, plan 8 */
	{ { 10, 0, 0, 1 }, 200, 4500000, 3 },  /* c4: only on VLAN 200, plan 3 */
	{ { 10, 0, 0, 1 }, 0, 5000000, 5 },    /* nobody's untagged: the link's CAKE */
};

static const char subs_json[] =
		"{\"link\": {\"download\": \"100mbit\", \"upload\": \"100mbit\"},"
		" \"nodes\": {\"AP\": {\"download\": \"50mbit\", \"upload\": \"50mbit\"}},"
		" \"subscribers\": ["
		"  {\"id\": \"c0\", \"node\": \"AP\", \"download\": \"2mbit\", \"upload\": \"1mbit\","
		"   \"addresses\": [\"100.64.0.1\", \"100.64.0.2\"]},"
		"  {\"id\": \"c1\", \"node\": \"AP\", \"download\": \"4mbit\", \"upload\": \"1mbit\","
		"   \"addresses\": [\"100.64.1.0/30\"]},"
		"  {\"id\": \"c2\", \"node\": \"AP\", \"download\": \"6mbit\", \"upload\": \"1mbit\","
		"   \"addresses\": [\"100.64.2.1\", \"100.64.2.2\"]},"
		"  {\"id\": \"c3\", \"download\": \"8mbit\", \"upload\": \"1mbit\","
		"   \"addresses\": [\"100.64.3.0/29\", \"2001:db8:3::/56\"]},"
		"  {\"id\": \"c4\", \"download\": \"3mbit\", \"upload\": \"1mbit\","
		"   \"addresses\": [{\"prefix\": \"10.0.0.1\", \"vlan\": 200}]}"
		" ]}";

static int
setup(void **state)
{
	FILE *f;

	(void)state;
	pool = dp_pool_create("subs", NMBUF, (int)rte_socket_id());
	in_ring = rte_ring_create("in", 1024, (int)rte_socket_id(), 0);
	out_ring = rte_ring_create("out", 1024, (int)rte_socket_id(), 0);
	assert_non_null(pool);
	assert_non_null(in_ring);
	assert_non_null(out_ring);
	in_port = eal_test_ring_port("in", in_ring, in_ring, pool, 64);
	out_port = eal_test_ring_port("out", out_ring, out_ring, pool, 64);
	up_in_ring = rte_ring_create("upin", 1024, (int)rte_socket_id(), 0);
	up_out_ring = rte_ring_create("upout", 1024, (int)rte_socket_id(), 0);
	assert_non_null(up_in_ring);
	assert_non_null(up_out_ring);
	up_in_port = eal_test_ring_port("upin", up_in_ring, up_in_ring, pool, 64);
	up_out_port = eal_test_ring_port("upout", up_out_ring, up_out_ring, pool, 64);
	snprintf(subs_path, sizeof(subs_path), "/tmp/test_worker_subs_%d.json", (int)getpid());
	f = fopen(subs_path, "w");
	assert_non_null(f);
	fputs(subs_json, f);
	fclose(f);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	unlink(subs_path);
	return 0;
}

static struct rte_mbuf *
frame(uint32_t i, uint32_t seq)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	uint8_t *d, *ip, *udp;
	uint32_t l2 = srcs[i].vlan != 0 ? 18 : 14;

	if (m == NULL)
		return NULL;
	assert_non_null(rte_pktmbuf_append(m, FRAME));
	d = rte_pktmbuf_mtod(m, uint8_t *);
	memset(d, 0, 64);
	d[0] = 0x02;
	d[6] = 0x02;
	d[11] = (uint8_t)i;
	if (srcs[i].vlan != 0) {
		d[12] = 0x81;
		d[13] = 0x00;
		d[14] = (uint8_t)(srcs[i].vlan >> 8);
		d[15] = (uint8_t)srcs[i].vlan;
	}
	d[l2 - 2] = 0x08;
	d[l2 - 1] = 0x00;
	ip = d + l2;
	ip[0] = 0x45;
	ip[2] = (uint8_t)((FRAME - l2) >> 8);
	ip[3] = (uint8_t)(FRAME - l2);
	ip[4] = (uint8_t)(seq >> 8);
	ip[5] = (uint8_t)seq;
	ip[8] = 64;
	ip[9] = 17;
	ip[12] = 198;
	ip[13] = 51;
	ip[14] = 100;
	ip[15] = (uint8_t)(1 + i); /* a server per source */
	memcpy(ip + 16, srcs[i].dst, 4);
	udp = ip + 20;
	udp[0] = 0x13;
	udp[1] = (uint8_t)(0x88 + seq % 2); /* two flows per source */
	udp[2] = 0x1f;
	udp[3] = 0x90;
	return m;
}

/* The source of a sent frame, from its MAC (d[11]). */
static uint32_t
src_of(const struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod(m, const uint8_t *)[11];
}

static void
dir_init(struct dp_dir *d, enum shaper_dir dir, const struct shaper_config *c)
{
	char err[256];

	memset(d, 0, sizeof(*d));
	d->dir = dir;
	d->rx_port = dir == SHAPER_DOWN ? in_port : up_in_port;
	d->tx_port = dir == SHAPER_DOWN ? out_port : up_out_port;
	d->sched = sched_create(&c->dir[dir], err, sizeof(err));
	if (d->sched == NULL)
		fail_msg("%s", err);
	classify_key_init(&d->key, 1);
	d->pool = pool;
	d->truesize = dp_mbuf_truesize(pool);
	d->pool_mbufs = NMBUF;
}

static void
test_worker_subscribers(void **state)
{
	static struct shaper_config c;
	struct dp_dir down, up, *dirs[SHAPER_NUM_DIRS];
	uint64_t credit[NSRC] = { 0 }, win_bytes[NSRC] = { 0 }, now, sent = 0, no_mbuf = 0;
	uint64_t dropped = 0, queued;
	uint32_t seq[NSRC] = { 0 };
	char text[1024], err[512];
	double worst = 0;
	struct rte_malloc_socket_stats before, after;
	uint64_t lpm_est;
	struct dp_msg m;

	(void)state;
	snprintf(text, sizeof(text),
		 "{\"ports\": {\"wan\": \"a\", \"lan\": \"b\"},"
		 " \"downstream\": {\"bandwidth\": \"100mbit\", \"diffserv\": \"besteffort\","
		 "  \"isolation\": \"dual-dsthost\", \"memlimit\": \"1mb\"},"
		 " \"upstream\": {\"bandwidth\": \"100mbit\"},"
		 " \"subscribers\": {\"file\": \"%s\", \"active\": 8}}",
		 subs_path);
	if (shaper_config_load_string(text, &c, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	dir_init(&down, SHAPER_DOWN, &c);
	dir_init(&up, SHAPER_UP, &c);
	dirs[SHAPER_DOWN] = &down;
	dirs[SHAPER_UP] = &up;
	rte_malloc_get_socket_stats((int)rte_socket_id(), &before);
	if (dp_subs_attach(dirs, &c, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_ptr_equal(down.subs, up.subs);
	/*
	 * The rte_lpm and rte_lpm6 tables it made (the CAKEs are calloc'd here)
	 * are what the memory estimate says for 6 v4 prefixes past /24 and one
	 * v6 /56, within 5 %.
	 */
	rte_malloc_get_socket_stats((int)rte_socket_id(), &after);
	lpm_est = sub_lpm_bytes_for(6, 6, 1, 4);
	printf("# figure: rte_lpm + rte_lpm6 for the test's subscribers: %zu bytes, estimated "
	       "%llu\n",
	       after.heap_allocsz_bytes - before.heap_allocsz_bytes, (unsigned long long)lpm_est);
	assert_true(fabs((double)(after.heap_allocsz_bytes - before.heap_allocsz_bytes) /
					 (double)lpm_est -
			 1) < 0.05);

	for (now = STEP_NS; now <= RUN_NS; now += STEP_NS) {
		uint64_t next = UINT64_MAX;
		struct rte_mbuf *out[64];
		unsigned int n;

		/* What each source sent in this step, at its rate. */
		for (uint32_t i = 0; i < NSRC; i++) {
			credit[i] += srcs[i].offered_bps * STEP_NS / 8;
			while (credit[i] >= (uint64_t)FRAME * 1000000000ull) {
				struct rte_mbuf *f = frame(i, seq[i]++);

				credit[i] -= (uint64_t)FRAME * 1000000000ull;
				if (f == NULL) {
					no_mbuf++;
					continue;
				}
				assert_int_equal(rte_ring_enqueue(in_ring, f), 0);
				sent++;
			}
		}
		dp_dir_turn(&down, now, 32, &next);
		while ((n = rte_ring_dequeue_burst(out_ring, (void **)out, RTE_DIM(out), NULL)) !=
		       0) {
			for (unsigned int k = 0; k < n; k++) {
				if (now > WIN_FROM)
					win_bytes[src_of(out[k])] += out[k]->pkt_len;
			}
			rte_pktmbuf_free_bulk(out, n);
		}
	}
	assert_int_equal(no_mbuf, 0);
	for (uint32_t i = 0; i < NSRC; i++) {
		double got = (double)win_bytes[i] * 8 / ((RUN_NS - WIN_FROM) / 1e9) / 1e6;

		printf("# source %u: want %.1f Mbit/s, got %.4f\n", i, srcs[i].want_mbit, got);
		worst = fmax(worst, fabs(got - srcs[i].want_mbit) / srcs[i].want_mbit);
	}
	printf("# figure: the worker with per-subscriber CAKEs: every subscriber (and the "
	       "unknown address) within %.3f %% of its plan (what it sends)\n",
	       worst * 100);
	assert_true(worst < 0.01);

	/* Every frame sent, dropped under a named reason, or queued. */
	for (int r = 0; r < SHAPER_DROP_MAX; r++)
		dropped += down.stats.dropped[r];
	queued = sub_sched_backlog_pkts(down.subs, SUB_DOWN);
	assert_int_equal(down.stats.rx_packets, sent);
	assert_int_equal(down.stats.rx_packets, down.stats.tx_packets + dropped + queued);
	assert_true(down.stats.dropped[SHAPER_DROP_AQM] +
				    down.stats.dropped[SHAPER_DROP_OVERFLOW] ==
		    dropped);
	assert_true(dropped > 0); /* offered 1.5 x: the CAKEs dropped the rest */

	/* A discipline swap is refused while subscribers hang on the link's scheduler. */
	assert_int_equal(dp_dir_control_init(&down), 0);
	memset(&m, 0, sizeof(m));
	m.type = DP_MSG_SWAP;
	assert_true(dp_dir_handle_msg(&down, &m, now));
	assert_int_equal(m.rc, -EINVAL);
	assert_non_null(strstr(m.err, "subscribers"));
	/* The snapshot counts what the subscribers' CAKEs hold. */
	assert_int_equal(down.ctl->snap->c.sched_qlen, queued);
	dp_dir_control_free(&down);

	/* Drain: what was queued is dropped as shutdown, no mbuf left behind. */
	dp_dir_drain(&down);
	assert_int_equal(down.stats.dropped[SHAPER_DROP_SHUTDOWN], queued);
	assert_int_equal(sub_sched_backlog_pkts(down.subs, SUB_DOWN), 0);
	dp_subs_detach(dirs);
	assert_null(down.subs);
	sched_free(down.sched);
	sched_free(up.sched);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
}

/*
 * A TCP segment with timestamps between a subscriber's LAN address and a
 * server (198.51.100.9:443): going down from the server, going up to it.
 */
static struct rte_mbuf *
tcp_frame(const uint8_t lan[4], bool down, uint32_t tsval, uint32_t tsecr, uint16_t payload)
{
	static const uint8_t server[4] = { 198, 51, 100, 9 };
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	uint16_t len = (uint16_t)(14 + 20 + 32 + payload);
	uint8_t *d, *ip, *th;

	assert_non_null(m);
	assert_non_null(rte_pktmbuf_append(m, len < 60 ? 60 : len));
	d = rte_pktmbuf_mtod(m, uint8_t *);
	memset(d, 0, len < 60 ? 60 : len);
	d[0] = d[6] = 0x02;
	d[12] = 0x08;
	ip = d + 14;
	ip[0] = 0x45;
	ip[2] = (uint8_t)((len - 14) >> 8);
	ip[3] = (uint8_t)(len - 14);
	ip[8] = 64;
	ip[9] = 6;
	memcpy(ip + 12, down ? server : lan, 4);
	memcpy(ip + 16, down ? lan : server, 4);
	th = ip + 20;
	th[0] = down ? 0x01 : 0x9c; /* 443 down, 40000 up */
	th[1] = down ? 0xbb : 0x40;
	th[2] = down ? 0x9c : 0x01;
	th[3] = down ? 0x40 : 0xbb;
	th[7] = (uint8_t)tsval; /* a sequence number that moves */
	th[12] = 0x80;          /* 32 bytes: the timestamp option */
	th[13] = 0x18;          /* PSH, ACK */
	th[14] = 0xff;
	th[20] = th[21] = 1; /* NOP, NOP, TS */
	th[22] = 8;
	th[23] = 10;
	for (int b = 0; b < 4; b++) {
		th[24 + b] = (uint8_t)(tsval >> (24 - 8 * b));
		th[28 + b] = (uint8_t)(tsecr >> (24 - 8 * b));
	}
	return m;
}

static void
drain_ring(struct rte_ring *r)
{
	struct rte_mbuf *out[64];
	unsigned int n;

	while ((n = rte_ring_dequeue_burst(r, (void **)out, RTE_DIM(out), NULL)) != 0)
		rte_pktmbuf_free_bulk(out, n);
}

/*
 * A histogram's figure is interpolated inside a bucket a third of an octave
 * wide: the delay it stands for lies in that bucket (give or take 1 %).
 */
static bool
same_bucket(uint64_t figure_ns, double want_ns)
{
	unsigned int b = sub_rtt_bucket(figure_ns);

	return want_ns >= (double)sub_rtt_lower_ns(b) * 0.99 &&
	       want_ns <= (double)sub_rtt_lower_ns(b + 1) * 1.01;
}

/*
 * unknown: with a plan per unknown address, and a third flow of an address
 * no subscriber owns (100.64.9.1), whose samples go to its own slot.
 */
static void
worker_subscriber_rtt(bool unknown)
{
	static struct shaper_config c;
	/* c1 (100.64.1.1) and c3 (100.64.3.1): ms beyond the LAN port and beyond the WAN port. */
	static const struct {
		uint8_t lan[4];
		const char *id;
		uint64_t lan_ms, wan_ms;
	} f[3] = { { { 100, 64, 1, 1 }, "c1", 8, 40 },
		   { { 100, 64, 3, 1 }, "c3", 25, 120 },
		   { { 100, 64, 9, 1 }, NULL, 12, 60 } };
	struct dp_dir down, up, *dirs[SHAPER_NUM_DIRS];
	uint64_t next_down[3] = { 1000000, 3000000, 2000000 }, now;
	uint32_t k[3] = { 0 }, fill = 0, nf = unknown ? 3 : 2;
	bool echo_due[3] = { false };
	uint64_t echo_at[3] = { 0 };
	char text[1024], err[512];

	snprintf(text, sizeof(text),
		 "{\"ports\": {\"wan\": \"a\", \"lan\": \"b\"},"
		 " \"downstream\": {\"bandwidth\": \"100mbit\"},"
		 " \"upstream\": {\"bandwidth\": \"100mbit\"},"
		 " \"subscribers\": {\"file\": \"%s\", \"active\": 8%s}}",
		 subs_path,
		 unknown ? ", \"unknown\": {\"download\": \"5mbit\", \"upload\": \"5mbit\"}" : "");
	if (shaper_config_load_string(text, &c, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	dir_init(&down, SHAPER_DOWN, &c);
	dir_init(&up, SHAPER_UP, &c);
	dirs[SHAPER_DOWN] = &down;
	dirs[SHAPER_UP] = &up;
	if (dp_subs_attach(dirs, &c, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	down.rtt = up.rtt = dp_rtt_create(&c);
	assert_non_null(down.rtt);

	/*
	 * Each flow in turns: the server's segment comes down (TSval s, echoing
	 * the host's last), the host's ACK goes up lan_ms later (echoing s: a
	 * LAN-side sample), the server's next segment comes down wan_ms after
	 * that (echoing the host's: a WAN-side sample).
	 */
	for (now = STEP_NS; now <= 3000000000ull; now += STEP_NS) {
		uint64_t next = UINT64_MAX;

		for (uint32_t i = 0; i < nf; i++) {
			if (now >= next_down[i]) {
				/* Another frame first: the sample's packet is not the burst's
				 * first. */
				assert_int_equal(rte_ring_enqueue(in_ring, frame(5, fill++)), 0);
				assert_int_equal(rte_ring_enqueue(in_ring,
								  tcp_frame(f[i].lan, true,
									    1000 + k[i],
									    5000 + k[i] - 1, 200)),
						 0);
				echo_at[i] = now + f[i].lan_ms * 1000000;
				echo_due[i] = true;
				next_down[i] = echo_at[i] + f[i].wan_ms * 1000000;
			}
			if (echo_due[i] && now >= echo_at[i]) {
				assert_int_equal(rte_ring_enqueue(up_in_ring, frame(5, fill++)), 0);
				assert_int_equal(rte_ring_enqueue(up_in_ring,
								  tcp_frame(f[i].lan, false,
									    5000 + k[i],
									    1000 + k[i], 0)),
						 0);
				echo_due[i] = false;
				k[i]++;
			}
		}
		dp_dir_turn(&down, now, 32, &next);
		dp_dir_turn(&up, now, 32, &next);
		drain_ring(out_ring);
		drain_ring(up_out_ring);
	}
	for (uint32_t i = 0; i < nf; i++) {
		const struct sub_set *set = dp_subs_set(&down);
		uint32_t sub = SUB_NONE;

		if (f[i].id != NULL) {
			sub = sub_find(set, f[i].id);
		} else {
			/* The unknown address's slot. */
			for (uint32_t u = 0; u < sub_sched_unknown_slots(down.subs); u++) {
				struct sub_prefix key;

				if (sub_sched_unknown_key(down.subs, u, &key) &&
				    memcmp(key.addr, f[i].lan, 4) == 0)
					sub = sub_sched_nsubs(down.subs) + 1 + u;
			}
		}
		assert_int_not_equal(sub, SUB_NONE);
		for (int side = 0; side < SUB_RTT_SIDES; side++) {
			uint32_t h[SUB_RTT_BUCKETS] = { 0 };
			struct sub_rtt_summary r;
			double want = (double)(side == SUB_RTT_LAN ? f[i].lan_ms : f[i].wan_ms) *
				      1e6;

			sub_sched_rtt(down.subs, sub, (enum sub_rtt_side)side, h);
			sub_rtt_summarize(h, &r);
			printf("# %s %s: %llu samples, median %.2f ms, p95 %.2f ms (flow's: %.0f ms)\n",
			       f[i].id != NULL ? f[i].id : "unknown",
			       side == SUB_RTT_LAN ? "lan" : "wan", (unsigned long long)r.samples,
			       r.median_ns / 1e6, r.p95_ns / 1e6, want / 1e6);
			/* One sample a round trip, less the flow's first. */
			assert_true(r.samples >= k[i] - 2);
			/* Every sample is one delay: both figures in the bucket that holds it. */
			assert_true(same_bucket(r.median_ns, want));
			assert_true(same_bucket(r.p95_ns, want));
		}
	}
	/* Nobody's samples reached the link's own entry. */
	{
		uint32_t h[SUB_RTT_BUCKETS] = { 0 };
		struct sub_rtt_summary r;

		sub_sched_rtt(down.subs, sub_sched_nsubs(down.subs), SUB_RTT_WAN, h);
		sub_sched_rtt(down.subs, sub_sched_nsubs(down.subs), SUB_RTT_LAN, h);
		sub_rtt_summarize(h, &r);
		assert_int_equal(r.samples, 0);
	}
	dp_dir_drain(&down);
	dp_dir_drain(&up);
	dp_subs_detach(dirs);
	dp_rtt_free(down.rtt);
	sched_free(down.sched);
	sched_free(up.sched);
	drain_ring(out_ring);
	drain_ring(up_out_ring);
	assert_int_equal(rte_mempool_in_use_count(pool), 0);
}

static void
test_worker_subscriber_rtt(void **state)
{
	(void)state;
	worker_subscriber_rtt(false);
}

static void
test_worker_unknown_rtt(void **state)
{
	(void)state;
	worker_subscriber_rtt(true);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_worker_subscribers),
		cmocka_unit_test(test_worker_subscriber_rtt),
		cmocka_unit_test(test_worker_unknown_rtt),
	};

	return EAL_TEST_RUN("test_worker_subs", tests, setup, teardown);
}
