/*
 * bench_sub_sched: the cost per packet of per-subscriber shaping against
 * one CAKE for the link, on the same traffic, without DPDK. Not a test.
 *
 *   bench_sub_sched link|subs|link-open|subs-open NSUBS ACTIVE PACKETS [WARMUP]
 *
 * NSUBS subscribers are configured (20 Mbit/s plans, one /32 each, under
 * the link at 1 Gbit/s); the first ACTIVE of them each send two UDP flows
 * of 1000-byte frames, 1.2 times the link in all, so the link is full and
 * each gets its max-min share. A turn builds a burst of 32 frames
 * (outside the measured part), then measure_turn classifies it, queues
 * each frame (link: the link's CAKE; subs: its subscriber's CAKE through
 * sub_sched, looked up with the set's own hash lookup, not rte_lpm) and
 * dequeues what is due, as the worker's turn does. The clock is simulated.
 * The -open runs are tools/bench/bench.py's subscriber rows instead: 64-byte
 * frames at 1 Gbit/s offered, plans of 10 Gbit/s under a 100 Gbit/s link,
 * so nothing waits for its rate and every packet leaves in the turn it came,
 * and the flows' packets in a random order (the loaded runs take them in
 * turn, so consecutive packets go to consecutive subscribers).
 *
 * Instructions per packet, repeatable whatever the machine's load:
 *   valgrind --tool=callgrind --collect-atstart=no --toggle-collect=measure_turn \
 *       bench_sub_sched subs 10000 1000 200000
 * then the Ir total over PACKETS. WARMUP packets first go through the same
 * code unmeasured (warm_turn): with 10,000 busy, the first 10,000 packets
 * are each a subscriber's first, taking a CAKE from the pool and moving
 * every share, which is not the steady state. Natively it prints ns per packet, and
 * either way how often the allocation ran and over how many subscribers:
 * its work follows the busy ones, not the configured ones, so
 * "subs 10000 1000" and "subs 1000 1000" cost the same instructions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shaper/classify.h"
#include "shaper/rand.h"
#include "shaper/sched.h"
#include "shaper/subscriber.h"
#include "shaper/subscriber_pool.h"
#include "shaper/subscriber_sched.h"
#include "sim.h"

#define BURST 32u
#define NPKTS 65536u
#define MBIT  1000000ull

/* The loaded run's shape (the open runs, link-open and subs-open, set their own in main). */
static uint32_t frame_len = 1000u;
static uint64_t link_rate = 125000000ull;       /* bytes/s */
static uint64_t plan_bps = 20 * MBIT;           /* bits/s */
static uint64_t offer_num = 12, offer_den = 10; /* offered load over the link */

static struct {
	bool subs;
	struct sub_set set;
	struct sub_sched *ss;
	struct sched *link[SUB_DIRS];
	struct classify_key key;
	struct sim_pkt *pkts;
	uint32_t *free_idx, nfree;
	uint64_t now, delivered, dropped;
	uint64_t t_measured; /* simulated time when the measured packets start */
} B;

static void
give_back(struct sh_pkt *p)
{
	B.free_idx[B.nfree++] = (uint32_t)((struct sim_pkt *)p - B.pkts);
}

/* One worker turn of the downstream direction. */
static inline __attribute__((always_inline)) void
turn(struct sh_pkt **in, unsigned int n)
{
	struct sh_pkt *out[2 * BURST];
	struct sh_pkt_list dropped;
	struct sh_pkt *p;
	unsigned int k;

	sh_pkt_list_init(&dropped);
	classify_burst(in, n, &B.key);
	if (B.subs) {
		uint32_t subs[BURST];

		for (unsigned int i = 0; i < n; i++)
			subs[i] = sub_sched_classify(B.ss, SUB_DOWN, in[i]);
		sub_sched_enqueue_burst(B.ss, SUB_DOWN, subs, in, n, B.now, &dropped);
		k = sub_sched_next_time(B.ss, SUB_DOWN, B.now) <= B.now
				    ? sub_sched_dequeue_burst(B.ss, SUB_DOWN, out, 2 * BURST, B.now,
							      &dropped)
				    : 0;
	} else {
		sched_enqueue_burst(B.link[SUB_DOWN], in, n, B.now, &dropped);
		k = sched_next_time(B.link[SUB_DOWN], B.now) <= B.now
				    ? sched_dequeue_burst(B.link[SUB_DOWN], out, 2 * BURST, B.now,
							  &dropped)
				    : 0;
	}
	for (unsigned int i = 0; i < k; i++)
		give_back(out[i]);
	B.delivered += k;
	while ((p = sh_pkt_list_pop(&dropped)) != NULL) {
		give_back(p);
		B.dropped++;
	}
}

/* The measured part; the warm-up's turns are the same code under another name. */
__attribute__((noinline)) void measure_turn(struct sh_pkt **in, unsigned int n);
__attribute__((noinline)) void warm_turn(struct sh_pkt **in, unsigned int n);

__attribute__((noinline)) void
measure_turn(struct sh_pkt **in, unsigned int n)
{
	turn(in, n);
}

__attribute__((noinline)) void
warm_turn(struct sh_pkt **in, unsigned int n)
{
	turn(in, n);
}

static void
setup(uint32_t nsubs, uint32_t active)
{
	struct sched_params lp, sp;
	struct sub_sched_config cfg;
	char err[256];

	sub_set_init(&B.set);
	B.set.nodes[SUB_ROOT].capacity[SUB_DOWN] = link_rate * 8;
	B.set.nodes[SUB_ROOT].capacity[SUB_UP] = link_rate * 8;
	for (uint32_t i = 0; i < nsubs; i++) {
		uint32_t s, p;

		if (sub_set_add_sub(&B.set, &s) != 0 || sub_set_add_prefix(&B.set, &p) != 0)
			exit(1);
		snprintf(B.set.subs[s].id, SUB_ID_LEN, "c%u", i);
		B.set.subs[s].node = SUB_ROOT;
		B.set.subs[s].plan[SUB_DOWN].max = plan_bps;
		B.set.subs[s].plan[SUB_UP].max = plan_bps;
		B.set.subs[s].nprefixes = 1;
		B.set.nodes[SUB_ROOT].nsubs++;
		B.set.prefixes[p].family = 4;
		B.set.prefixes[p].len = 32;
		B.set.prefixes[p].addr[0] = 100;
		B.set.prefixes[p].addr[1] = (uint8_t)(64 + (i >> 16));
		B.set.prefixes[p].addr[2] = (uint8_t)(i >> 8);
		B.set.prefixes[p].addr[3] = (uint8_t)i;
		B.set.prefixes[p].sub = s;
	}
	if (sub_set_validate(&B.set, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	sched_params_default(&lp, SCHED_DISC_CAKE);
	lp.rate = link_rate;
	lp.isolation = SCHED_DUAL_DSTHOST;
	lp.pkt_mem = SIM_MBUF_MEM;
	for (int d = 0; d < SUB_DIRS; d++)
		B.link[d] = sched_create(&lp, err, sizeof(err));
	sp = lp;
	sp.rate = plan_bps / 8;
	sub_pool_cake_size(&sp);
	memset(&cfg, 0, sizeof(cfg));
	cfg.set = &B.set;
	cfg.params[SUB_DOWN] = cfg.params[SUB_UP] = sp;
	cfg.active = B.subs ? active : 1; /* the link's run takes no CAKE from it */
	cfg.link[SUB_DOWN] = B.link[SUB_DOWN];
	cfg.link[SUB_UP] = B.link[SUB_UP];
	B.ss = sub_sched_create(&cfg, err, sizeof(err));
	if (B.ss == NULL) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	/* The joint limit shaperd sets: what the link's CAKE alone may hold. */
	sub_sched_set_limit(B.ss, SUB_DOWN, sched_max_packets(&lp, SIM_MBUF_MEM));
}

int
main(int argc, char **argv)
{
	uint32_t nsubs, active, nsrc, src = 0;
	uint64_t rng = SH_RAND_GAMMA;
	bool shuffled = false;
	uint64_t packets, warmup = 0, warmup_done = 0, sent = 0, t0 = 0, t1;
	struct sim_src *srcs;
	struct timespec ts;

	if ((argc != 5 && argc != 6) ||
	    (strncmp(argv[1], "link", 4) != 0 && strncmp(argv[1], "subs", 4) != 0) ||
	    (argv[1][4] != '\0' && strcmp(argv[1] + 4, "-open") != 0)) {
		fprintf(stderr, "usage: bench_sub_sched link|subs|link-open|subs-open NSUBS ACTIVE "
				"PACKETS [WARMUP]\n");
		return 2;
	}
	B.subs = strncmp(argv[1], "subs", 4) == 0;
	if (argv[1][4] != '\0') {
		frame_len = 64;
		link_rate = 100000 * MBIT / 8;
		plan_bps = 10000 * MBIT;
		offer_num = 1; /* 1 Gbit/s offered: nothing ever waits for its rate */
		offer_den = 100;
		shuffled = true;
	}
	nsubs = (uint32_t)strtoul(argv[2], NULL, 0);
	active = (uint32_t)strtoul(argv[3], NULL, 0);
	packets = strtoull(argv[4], NULL, 0);
	if (argc == 6)
		warmup = strtoull(argv[5], NULL, 0);
	if (nsubs == 0 || active == 0 || active > nsubs || nsubs > 65536 * 4)
		return 2;
	classify_key_init(&B.key, 42);
	setup(nsubs, active);
	B.pkts = calloc(NPKTS, sizeof(*B.pkts));
	B.free_idx = calloc(NPKTS, sizeof(*B.free_idx));
	nsrc = 2 * active;
	srcs = calloc(nsrc, sizeof(*srcs));
	for (uint32_t i = 0; i < NPKTS; i++)
		B.free_idx[B.nfree++] = i;
	for (uint32_t i = 0; i < nsrc; i++) {
		uint32_t s = i / 2;

		srcs[i] = sim_src_udp(sim_ip(9, 0, 1),
				      (100u << 24) | ((64u + (s >> 16)) << 16) | (s & 0xffffu),
				      (uint16_t)(1000 + (i & 1)), 1, frame_len);
	}
	while (t0 == 0 || sent - warmup_done < packets) {
		struct sh_pkt *in[BURST];
		unsigned int n = 0;

		while (n < BURST && B.nfree > 0) {
			struct sim_pkt *p = &B.pkts[B.free_idx[--B.nfree]];

			p->src = src;
			sim_build(&srcs[src], p, frame_len);
			p->pkt.mem = SIM_MBUF_MEM;
			in[n++] = &p->pkt;
			/* Open: in a random order, as gen_pcap shuffles the bench's flows. */
			src = shuffled ? (uint32_t)(((uint64_t)sh_rand32(&rng) * nsrc) >> 32)
			      : src + 1 < nsrc ? src + 1
					       : 0;
		}
		if (t0 == 0 && sent >= warmup) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			t0 = (uint64_t)ts.tv_sec * SIM_NS + (uint64_t)ts.tv_nsec;
			B.delivered = B.dropped = 0;
			B.t_measured = B.now;
			warmup_done = sent;
		}
		if (t0 == 0)
			warm_turn(in, n);
		else
			measure_turn(in, n);
		sent += n;
		/* A burst's bytes at the offered load (1.2 x the link, or 1 % open). */
		B.now += (uint64_t)n * frame_len * SIM_NS * offer_den / (link_rate * offer_num);
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t1 = (uint64_t)ts.tv_sec * SIM_NS + (uint64_t)ts.tv_nsec;
	if (B.subs) {
		struct sub_sched_stats st;

		sub_sched_get_stats(B.ss, SUB_DOWN, &st);
		printf("allocation: %llu runs (%llu repeating the last one's rates) over the %u "
		       "subscribers holding a CAKE at the end (of %u configured); %llu CAKEs taken, "
		       "%llu given back; %llu rates written\n",
		       (unsigned long long)st.allocations, (unsigned long long)st.repeats,
		       st.active, nsubs, (unsigned long long)st.taken, (unsigned long long)st.given,
		       (unsigned long long)st.rate_changes);
	}
	printf("%s: %u subscribers, %u active: %llu packets offered, %llu delivered "
	       "(%.1f Mbit/s over %.3f s simulated), %llu dropped, %.1f ns per packet (the "
	       "frames' building included)\n",
	       argv[1], nsubs, active, (unsigned long long)(sent - warmup_done),
	       (unsigned long long)B.delivered,
	       (double)B.delivered * frame_len * 8 / ((double)(B.now - B.t_measured) / SIM_NS) /
			       1e6,
	       (double)(B.now - B.t_measured) / SIM_NS, (unsigned long long)B.dropped,
	       (double)(t1 - t0) / (double)(sent - warmup_done));
	return 0;
}
