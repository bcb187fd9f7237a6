/*
 * sched_bench: the classifier and the scheduler alone, in a tight loop,
 * without DPDK. Meant to run under valgrind --tool=callgrind
 * (instructions per packet, repeatable whatever the machine's load) and
 * natively (ns per packet of the CPU work, no I/O).
 *
 * Packets are the frames of a pcap (tools/bench/gen_pcap.py), replayed in a
 * cycle into a pool of preallocated sh_pkt records with their own header
 * bytes, the way the worker loop (src/dataplane/worker.c, dir_turn) treats
 * mbufs: a burst is classified (classify_burst), enqueued (sched_enqueue_burst),
 * then up to a burst is dequeued (sched_dequeue_burst); delivered and dropped
 * records go back to the pool. The clock is simulated: it advances by each
 * burst's bytes at the offered rate, so a shaped mode sees a fixed
 * overload (AQM and overflow drops busy) whatever the host's speed.
 *
 * A pcap may hold both directions (gen_pcap.py --rtt): frames whose source
 * MAC is the router's (02:5e:00:00:00:01) come down, the rest go up. Each
 * direction then has its own scheduler with the same settings, and a turn
 * takes frames in pcap order until one direction's burst is full and runs
 * the upstream then the downstream burst, as the worker does. Such a pcap
 * is replayed with its TCP sequence, ACK and timestamp values moved on by
 * 2^24 every cycle, so a flow keeps sending new values. --rtt adds the
 * passive RTT tap after classify, as dir_turn() does with
 * dataplane.passive_rtt: rtt_observe_burst over a table of the daemon's
 * size shared by both directions, and rtt_departed over what each dequeue
 * released, as dir_tx() does.
 *
 * The direction is configured from the same JSON keys as shaperd's config
 * (the same loader), e.g.
 *   sched_bench --pcap t.pcap --dir '{"discipline":"cake","bandwidth":"5gbit"}'
 *
 * Under callgrind, run with --collect-atstart=no --toggle-collect=sb_measure
 * so that only the measured phase counts (setup and warm-up do not).
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shaper/classify.h"
#include "shaper/config.h"
#include "shaper/limits.h"
#include "shaper/log.h"
#include "shaper/pkt.h"
#include "shaper/rtt.h"
#include "shaper/sched.h"
#include "shaper/share.h"

#define SB_HDR         128   /* header bytes a record keeps (the first segment) */
#define SB_TRUESIZE    2432  /* buffer memory per packet, as a default DPDK mbuf */
#define SB_TX_ROOM     512   /* DP_TX_PENDING_MAX */
#define SB_RTT_FLOWS   32768 /* DP_RTT_FLOWS, the default of --rtt-flows */
#define SB_CYCLE_SHIFT 24    /* TCP numbers move on by 2^24 per replay of the pcap */

static const uint8_t sb_router_mac[6] = { 0x02, 0x5e, 0x00, 0x00, 0x00, 0x01 };

struct sb_frame {
	uint32_t len;    /* frame length */
	uint32_t caplen; /* bytes kept (<= SB_HDR) */
	uint8_t dir;     /* SHAPER_UP, or SHAPER_DOWN if from the router's MAC */
	uint8_t tcp_off; /* offset of the TCP header, 0 if none */
	uint8_t ts_off;  /* offset of the TSval of a NOP,NOP,TS option, 0 if none */
	uint8_t hdr[SB_HDR];
};

struct sb_dir {
	struct sched *s;
	struct classify_key key;
	uint64_t samples; /* RTT samples the direction's packets completed */
	/*
	 * --shards N: what a worker of N adds per packet: the shard of each
	 * packet (software steering's decision; all stay here, the ring hops
	 * are not modelled), the active-host map at enqueue and dequeue, and
	 * a share_tick every 100 µs of simulated time (the other shards idle).
	 */
	uint64_t steered; /* packets another shard would have taken */
	struct share_group *group;
	struct share_shard share;
	struct share_hosts hosts;
};

struct sb_pkt {
	struct sh_pkt pkt; /* first: an sh_pkt pointer converts back */
	uint8_t buf[SB_HDR];
};

struct sb {
	struct sb_dir dir[SHAPER_NUM_DIRS];
	bool two_way;          /* the pcap has frames of both directions */
	struct rtt_table *rtt; /* --rtt, else NULL */
	uint32_t rtt_flows;    /* its size */
	struct sb_frame *frames;
	uint32_t n_frames, next_frame, cycle;
	struct sb_pkt *pool;
	struct sh_pkt **free_stack;
	uint32_t pool_len, n_free;
	uint32_t burst;
	uint32_t shards; /* --shards */
	uint64_t now;
	uint64_t ns_per_kbyte; /* arrival time of 1000 bytes at the offered rate */
	/* counters */
	uint64_t offered, offered_bytes, delivered, delivered_bytes, dropped;
	uint64_t starved; /* bursts cut short by an empty pool */
};

/* Direction and where the TCP numbers are (plain Ethernet, as gen_pcap writes). */
static void
frame_facts(struct sb_frame *fr)
{
	const uint8_t *h = fr->hdr;
	uint32_t l4 = 0;

	fr->dir = memcmp(h + 6, sb_router_mac, 6) == 0 ? SHAPER_DOWN : SHAPER_UP;
	fr->tcp_off = fr->ts_off = 0;
	if (fr->caplen < 14 + 20 + 20)
		return;
	if (h[12] == 0x08 && h[13] == 0x00 && (h[14] >> 4) == 4 && h[23] == 6)
		l4 = 14 + (uint32_t)(h[14] & 0x0f) * 4;
	else if (h[12] == 0x86 && h[13] == 0xdd && fr->caplen >= 14 + 40 + 20 && h[20] == 6)
		l4 = 14 + 40;
	if (l4 == 0 || l4 + 20 > fr->caplen)
		return;
	fr->tcp_off = (uint8_t)l4;
	if ((h[l4 + 12] >> 4) >= 8 && l4 + 32 <= fr->caplen && h[l4 + 20] == 1 && h[l4 + 21] == 1 &&
	    h[l4 + 22] == 8 && h[l4 + 23] == 10)
		fr->ts_off = (uint8_t)(l4 + 24);
}

static void
add_be32(uint8_t *b, uint32_t v)
{
	uint32_t x = ((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]) + v;

	b[0] = (uint8_t)(x >> 24);
	b[1] = (uint8_t)(x >> 16);
	b[2] = (uint8_t)(x >> 8);
	b[3] = (uint8_t)x;
}

static int
load_pcap(struct sb *b, const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t gh[24], rh[16];
	uint32_t magic, cap = 0;
	int swap;

	if (f == NULL) {
		fprintf(stderr, "sched_bench: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fread(gh, 1, sizeof(gh), f) != sizeof(gh)) {
		fprintf(stderr, "sched_bench: %s: not a pcap\n", path);
		fclose(f);
		return -1;
	}
	memcpy(&magic, gh, 4);
	swap = magic == 0xd4c3b2a1u || magic == 0x4d3cb2a1u;
	if (!swap && magic != 0xa1b2c3d4u && magic != 0xa1b23c4du) {
		fprintf(stderr, "sched_bench: %s: bad pcap magic %08x\n", path, magic);
		fclose(f);
		return -1;
	}
	while (fread(rh, 1, sizeof(rh), f) == sizeof(rh)) {
		uint32_t incl, orig;
		struct sb_frame *fr;

		memcpy(&incl, rh + 8, 4);
		memcpy(&orig, rh + 12, 4);
		if (swap) {
			incl = __builtin_bswap32(incl);
			orig = __builtin_bswap32(orig);
		}
		if (b->n_frames == cap) {
			cap = cap != 0 ? cap * 2 : 65536;
			b->frames = realloc(b->frames, (size_t)cap * sizeof(*b->frames));
			if (b->frames == NULL) {
				fprintf(stderr, "sched_bench: out of memory\n");
				fclose(f);
				return -1;
			}
		}
		fr = &b->frames[b->n_frames];
		fr->len = orig;
		fr->caplen = incl < SB_HDR ? incl : SB_HDR;
		memset(fr->hdr, 0, sizeof(fr->hdr));
		if (fread(fr->hdr, 1, fr->caplen, f) != fr->caplen ||
		    (incl > fr->caplen && fseek(f, incl - fr->caplen, SEEK_CUR) != 0))
			break;
		frame_facts(fr);
		b->two_way |= fr->dir == SHAPER_DOWN;
		b->n_frames++;
	}
	fclose(f);
	if (b->n_frames == 0) {
		fprintf(stderr, "sched_bench: %s: no packets\n", path);
		return -1;
	}
	return 0;
}

static int
make_sched(struct sb *b, const char *dir_json, bool rtt, char *err, size_t errlen)
{
	struct shaper_config cfg;
	char *doc;
	size_t n = 2 * strlen(dir_json) + 128;

	doc = malloc(n);
	if (doc == NULL)
		return -1;
	/* The daemon's own loader, so defaults and seeds match shaperd's. */
	snprintf(doc, n,
		 "{\"ports\": {\"wan\": \"bench_wan\", \"lan\": \"bench_lan\"}, "
		 "\"upstream\": %s, \"downstream\": %s}",
		 dir_json, dir_json);
	if (shaper_config_load_string(doc, &cfg, err, errlen) != 0) {
		free(doc);
		return -1;
	}
	free(doc);
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		b->dir[d].s = sched_create(&cfg.dir[d], err, errlen);
		if (b->dir[d].s == NULL)
			return -1;
		/* As shaperd: one classifier key for both directions. */
		classify_key_init(&b->dir[d].key, cfg.dir[SHAPER_UP].seed ^ 0x9e3779b97f4a7c15ULL);
	}
	if (rtt) {
		b->rtt = rtt_table_new(b->rtt_flows);
		if (b->rtt == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	return 0;
}

/*
 * This bench is shard 0 of b->shards in each direction; the others stay
 * idle (they publish nothing), so it shapes at nearly the whole link and
 * its drops match a lone scheduler's: the difference in cost is the
 * sharing's alone.
 */
static int
make_group(struct sb *b, struct sb_dir *d, char *err, size_t errlen)
{
	uint64_t rate = sched_get_params(d->s)->rate;

	if (rate == 0 || b->shards > SHARE_MAX_SHARDS) {
		snprintf(err, errlen, "needs a shaped rate and at most %d shards",
			 SHARE_MAX_SHARDS);
		return -1;
	}
	d->group = aligned_alloc(SHARE_LINE, sizeof(*d->group));
	if (d->group == NULL || share_group_init(d->group, rate, b->shards, 1514, err, errlen) != 0)
		return -1;
	/* The idle shards have ticked: each keeps the floor and gave back the rest. */
	for (uint32_t i = 1; i < b->shards; i++) {
		uint64_t had = atomic_load(&d->group->slot[i].rate);

		atomic_fetch_add(&d->group->pool, (int64_t)(had - share_group_floor(d->group)));
		atomic_store(&d->group->slot[i].rate, share_group_floor(d->group));
	}
	share_shard_init(&d->share, d->group, 0, d->s, b->now);
	return 0;
}

static inline void
sb_release(struct sb *b, struct sh_pkt *p)
{
	b->free_stack[b->n_free++] = p;
}

/* One direction's turn: a burst in (classify, RTT, enqueue), up to a burst out. */
static inline void
sb_dir_turn(struct sb *b, enum shaper_dir dir, struct sh_pkt **pkts, uint32_t n)
{
	struct sb_dir *d = &b->dir[dir];
	struct rtt_sample smp[SHAPER_BURST_MAX];
	struct sh_pkt_list drops;
	struct sh_pkt *p;
	bool upstream = dir == SHAPER_UP;
	uint32_t i;

	sh_pkt_list_init(&drops);
	classify_burst(pkts, n, &d->key);
	if (b->rtt != NULL)
		d->samples += rtt_observe_burst(b->rtt, pkts, n, upstream ? RTT_UP : RTT_DOWN,
						b->now, smp);
	if (d->group != NULL)
		for (i = 0; i < n; i++) {
			d->steered += share_shard_of(pkts[i], upstream, SHARE_BY_HOST, b->shards) !=
				      0;
			share_hosts_note(&d->hosts, share_key(pkts[i], upstream, SHARE_BY_HOST));
		}
	/* The burst entry points, as dir_turn() uses them. */
	sched_enqueue_burst(d->s, pkts, n, b->now, &drops);
	n = sched_dequeue_burst(d->s, pkts, b->burst < SB_TX_ROOM ? b->burst : SB_TX_ROOM, b->now,
				&drops);
	if (b->rtt != NULL) /* dir_tx()'s dp_rtt_departed: the departure of awaited segments */
		rtt_departed(b->rtt, pkts, n, upstream ? RTT_UP : RTT_DOWN, b->now);
	for (i = 0; i < n; i++) {
		b->delivered++;
		b->delivered_bytes += pkts[i]->len;
		if (d->group != NULL)
			share_hosts_note(&d->hosts, share_key(pkts[i], upstream, SHARE_BY_HOST));
		sb_release(b, pkts[i]);
	}
	if (d->group != NULL && share_due(&d->share, b->now))
		share_tick(&d->share, d->s, share_hosts_count(&d->hosts, b->now), b->now);
	(void)sched_next_time(d->s, b->now);
	while ((p = sh_pkt_list_pop(&drops)) != NULL) {
		b->dropped++;
		sb_release(b, p);
	}
}

/*
 * One worker turn: frames in pcap order until a direction's burst is full,
 * then the upstream burst and (for a two-way pcap) the downstream one.
 */
static inline void
sb_turn(struct sb *b)
{
	struct sh_pkt *pkts[SHAPER_NUM_DIRS][SHAPER_BURST_MAX];
	uint32_t n[SHAPER_NUM_DIRS] = { 0, 0 }, bytes = 0, taken = 0;

	while (n[SHAPER_UP] < b->burst && n[SHAPER_DOWN] < b->burst) {
		const struct sb_frame *fr = &b->frames[b->next_frame];
		struct sb_pkt *r;
		struct sh_pkt *p;

		if (b->n_free == 0) {
			b->starved++;
			break;
		}
		p = b->free_stack[--b->n_free];
		r = (struct sb_pkt *)p;
		/* What the NIC and pkt_from_mbuf() do: fresh bytes, fresh metadata. */
		memcpy(r->buf, fr->hdr, SB_HDR);
		if (b->two_way && fr->tcp_off != 0) {
			uint32_t add = b->cycle << SB_CYCLE_SHIFT;

			add_be32(r->buf + fr->tcp_off + 4, add);
			add_be32(r->buf + fr->tcp_off + 8, add);
			if (fr->ts_off != 0) {
				add_be32(r->buf + fr->ts_off, add);
				add_be32(r->buf + fr->ts_off + 4, add);
			}
		}
		p->next = NULL;
		p->data = r->buf;
		p->hdr_len = fr->caplen;
		p->len = fr->len;
		p->mem = SB_TRUESIZE;
		bytes += fr->len;
		pkts[fr->dir][n[fr->dir]++] = p;
		taken++;
		if (++b->next_frame == b->n_frames) {
			b->next_frame = 0;
			b->cycle++;
		}
	}
	sb_dir_turn(b, SHAPER_UP, pkts[SHAPER_UP], n[SHAPER_UP]);
	if (b->two_way)
		sb_dir_turn(b, SHAPER_DOWN, pkts[SHAPER_DOWN], n[SHAPER_DOWN]);
	b->offered += taken;
	b->offered_bytes += bytes;
	b->now += (uint64_t)bytes * b->ns_per_kbyte / 1000;
}

/* Kept out of line: callgrind collects inside this function only. */
__attribute__((noinline)) void sb_measure(struct sb *b, uint64_t packets);

__attribute__((noinline)) void
sb_measure(struct sb *b, uint64_t packets)
{
	uint64_t end = b->offered + packets;

	while (b->offered < end)
		sb_turn(b);
}

/*
 * --set-rate N: N share-group rate changes of a direction's scheduler, as a
 * shard's share_tick makes them (alternating its rate and 9/10 of it, 100 µs
 * apart). Kept out of line so callgrind can count it alone
 * (--toggle-collect=sb_set_rates).
 */
__attribute__((noinline)) void sb_set_rates(struct sched *s, uint64_t n, uint64_t now);

__attribute__((noinline)) void
sb_set_rates(struct sched *s, uint64_t n, uint64_t now)
{
	uint64_t rate = sched_get_params(s)->rate;

	for (uint64_t i = 0; i < n; i++)
		(void)sched_set_rate(s, (i & 1) ? rate : rate / 10 * 9, now + i * 100000);
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: sched_bench --pcap FILE [--dir JSON] [--packets N] [--warmup N]\n"
		   "                   [--burst N] [--offered BITS_PER_S] [--pool N] [--rtt]\n"
		   "                   [--rtt-flows N] [--shards N] [--set-rate N]\n"
		   "  --dir      one direction's settings, as in shaperd's config\n"
		   "             (default {\"discipline\":\"cake\"}); both directions\n"
		   "             get them\n"
		   "  --packets  measured packets (default 1000000)\n"
		   "  --warmup   packets before measuring (default 2 x the pcap, >= 200000)\n"
		   "  --offered  simulated arrival rate in bit/s of frame bytes (default\n"
		   "             2 x the shaped rate per direction, or 10e9 when unlimited)\n"
		   "  --rtt      time TCP flows as dataplane.passive_rtt does\n"
		   "  --rtt-flows  the RTT table's size (default: the daemon's)\n"
		   "  --shards   run as shard 0 of N sharing each direction's rate\n"
		   "             (default 1: alone)\n"
		   "  --set-rate after the packets, N rate changes of the upstream\n"
		   "             scheduler (a shaped rate; count them with callgrind's\n"
		   "             --toggle-collect=sb_set_rates)\n"
		   "Prints one JSON line with the counters of the measured packets and ns\n"
		   "per packet.\n");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pcap", required_argument, NULL, 'p' },
		{ "dir", required_argument, NULL, 'd' },
		{ "packets", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "burst", required_argument, NULL, 'b' },
		{ "offered", required_argument, NULL, 'o' },
		{ "pool", required_argument, NULL, 'P' },
		{ "rtt", no_argument, NULL, 'r' },
		{ "rtt-flows", required_argument, NULL, 'F' },
		{ "shards", required_argument, NULL, 's' },
		{ "set-rate", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct sb b;
	const char *pcap = NULL, *dir = "{\"discipline\": \"cake\"}";
	uint64_t packets = 1000000, warmup = 0, set_rates = 0;
	double offered = 0;
	char err[SHAPER_ERR_LEN];
	struct sched_stats *st;
	uint64_t aqm = 0, overflow = 0, backlog = 0, samples0[SHAPER_NUM_DIRS];
	struct rtt_counters rc0 = { 0 };
	bool rtt = false;
	uint64_t t0, t1, off0, del0, drop0, bytes0, now0;
	int c;

	b.burst = 32;
	b.pool_len = 65536;
	b.rtt_flows = SB_RTT_FLOWS;
	while ((c = getopt_long(argc, argv, "p:d:n:w:b:o:P:rF:s:R:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			pcap = optarg;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'n':
			packets = strtoull(optarg, NULL, 0);
			break;
		case 'w':
			warmup = strtoull(optarg, NULL, 0);
			break;
		case 'b':
			b.burst = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'o':
			offered = strtod(optarg, NULL);
			break;
		case 'P':
			b.pool_len = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			rtt = true;
			break;
		case 'F':
			b.rtt_flows = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 's':
			b.shards = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'R':
			set_rates = strtoull(optarg, NULL, 0);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (pcap == NULL || b.burst == 0 || b.burst > SHAPER_BURST_MAX ||
	    b.pool_len < 2 * b.burst) {
		usage(stderr);
		return 2;
	}
	if (load_pcap(&b, pcap) != 0)
		return 1;
	if (make_sched(&b, dir, rtt, err, sizeof(err)) != 0) {
		fprintf(stderr, "sched_bench: --dir: %s\n", err);
		return 1;
	}
	if (offered <= 0) {
		uint64_t rate = sched_get_params(b.dir[SHAPER_UP].s)->rate; /* bytes/s */

		offered = rate != 0 ? (b.two_way ? 2 : 1) * 2.0 * 8.0 * (double)rate : 10e9;
	}
	b.ns_per_kbyte = (uint64_t)(8.0 * 1000.0 * 1e9 / offered + 0.5);
	if (b.ns_per_kbyte == 0)
		b.ns_per_kbyte = 1;
	b.pool = calloc(b.pool_len, sizeof(*b.pool));
	b.free_stack = calloc(b.pool_len, sizeof(*b.free_stack));
	if (b.pool == NULL || b.free_stack == NULL) {
		fprintf(stderr, "sched_bench: out of memory\n");
		return 1;
	}
	for (uint32_t i = b.pool_len; i-- > 0;)
		sb_release(&b, &b.pool[i].pkt);
	b.now = 1000000000ULL;
	for (int d = 0; d < SHAPER_NUM_DIRS && b.shards > 1; d++)
		if (make_group(&b, &b.dir[d], err, sizeof(err)) != 0) {
			fprintf(stderr, "sched_bench: --shards: %s\n", err);
			return 1;
		}
	if (warmup == 0) {
		warmup = 2ULL * b.n_frames;
		if (warmup < 200000)
			warmup = 200000;
	}

	while (b.offered < warmup)
		sb_turn(&b);
	off0 = b.offered;
	del0 = b.delivered;
	drop0 = b.dropped;
	bytes0 = b.delivered_bytes;
	now0 = b.now;
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		samples0[d] = b.dir[d].samples;
		b.dir[d].steered = 0;
	}
	if (b.rtt != NULL)
		rc0 = b.rtt->c;
	t0 = shaper_monotonic_ns();
	sb_measure(&b, packets);
	t1 = shaper_monotonic_ns();
	if (set_rates != 0) {
		if (sched_get_params(b.dir[SHAPER_UP].s)->rate == 0) {
			fprintf(stderr, "sched_bench: --set-rate needs a shaped rate\n");
			return 2;
		}
		sb_set_rates(b.dir[SHAPER_UP].s, set_rates, b.now);
	}

	st = calloc(1, sizeof(*st));
	if (st == NULL)
		return 1;
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		sched_get_stats(b.dir[d].s, st);
		aqm += st->dropped[SHAPER_DROP_AQM];
		overflow += st->dropped[SHAPER_DROP_OVERFLOW];
		backlog += st->backlog_pkts;
	}
	printf("{\"frames\": %u, \"offered\": %llu, \"delivered\": %llu, \"dropped\": %llu, "
	       "\"delivered_bytes\": %llu, \"sim_ns\": %llu, \"ns_per_pkt\": %.2f, "
	       "\"drops_aqm\": %llu, \"drops_overflow\": %llu, \"backlog_pkts\": %llu, "
	       "\"starved\": %llu, \"offered_bps\": %.0f, \"two_way\": %s, \"shards\": %u, "
	       "\"steered\": %llu, \"share_ticks\": %llu, \"set_rates\": %llu",
	       b.n_frames, (unsigned long long)(b.offered - off0),
	       (unsigned long long)(b.delivered - del0), (unsigned long long)(b.dropped - drop0),
	       (unsigned long long)(b.delivered_bytes - bytes0), (unsigned long long)(b.now - now0),
	       (double)(t1 - t0) / (double)(b.offered - off0), (unsigned long long)aqm,
	       (unsigned long long)overflow, (unsigned long long)backlog,
	       (unsigned long long)b.starved, offered, b.two_way ? "true" : "false",
	       b.shards > 1 ? b.shards : 1,
	       (unsigned long long)(b.dir[SHAPER_UP].steered + b.dir[SHAPER_DOWN].steered),
	       (unsigned long long)(b.dir[SHAPER_UP].share.ticks + b.dir[SHAPER_DOWN].share.ticks),
	       (unsigned long long)set_rates);
	if (b.rtt != NULL)
		printf(", \"rtt\": {\"tcp_packets\": %llu, \"samples_wan\": %llu, "
		       "\"samples_lan\": %llu, \"evictions\": %llu, \"no_room\": %llu, "
		       "\"ts_full\": %llu, \"karn\": %llu}",
		       (unsigned long long)(b.rtt->c.packets - rc0.packets),
		       (unsigned long long)(b.dir[SHAPER_DOWN].samples - samples0[SHAPER_DOWN]),
		       (unsigned long long)(b.dir[SHAPER_UP].samples - samples0[SHAPER_UP]),
		       (unsigned long long)(b.rtt->c.evictions - rc0.evictions),
		       (unsigned long long)(b.rtt->c.no_room - rc0.no_room),
		       (unsigned long long)(b.rtt->c.ts_full - rc0.ts_full),
		       (unsigned long long)(b.rtt->c.karn - rc0.karn));
	printf("}\n");
	free(st);
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		sched_free(b.dir[d].s);
		free(b.dir[d].group);
	}
	rtt_table_free(b.rtt);
	free(b.pool);
	free(b.free_stack);
	free(b.frames);
	return 0;
}
