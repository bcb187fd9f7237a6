/*
 * sched_bench: the classifier and one direction's scheduler alone, in a
 * tight loop, without DPDK. Meant to run under valgrind --tool=callgrind
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
#include <time.h>

#include "shaper/classify.h"
#include "shaper/config.h"
#include "shaper/limits.h"
#include "shaper/pkt.h"
#include "shaper/sched.h"
#include "shaper/share.h"

#define SB_HDR      128  /* header bytes a record keeps (the first segment) */
#define SB_TRUESIZE 2432 /* buffer memory per packet, as a default DPDK mbuf */
#define SB_TX_ROOM  512  /* DP_TX_PENDING_MAX */

struct sb_frame {
	uint32_t len;    /* frame length */
	uint32_t caplen; /* bytes kept (<= SB_HDR) */
	uint8_t hdr[SB_HDR];
};

struct sb_pkt {
	struct sh_pkt pkt; /* first: an sh_pkt pointer converts back */
	uint8_t buf[SB_HDR];
};

struct sb {
	struct sched *s;
	struct classify_key key;
	struct sb_frame *frames;
	uint32_t n_frames, next_frame;
	struct sb_pkt *pool;
	struct sh_pkt **free_stack;
	uint32_t pool_len, n_free;
	uint32_t burst;
	uint64_t now;
	uint64_t ns_per_kbyte; /* arrival time of 1000 bytes at the offered rate */
	/* counters */
	uint64_t offered, offered_bytes, delivered, delivered_bytes, dropped;
	uint64_t starved; /* bursts cut short by an empty pool */
	/*
	 * --shards N: what a worker of N adds per packet: the shard of each
	 * packet (software steering's decision; all stay here, the ring hops
	 * are not modelled), the active-host map at enqueue and dequeue, and
	 * a share_tick every 100 µs of simulated time (the other shards idle).
	 */
	uint32_t shards;
	uint64_t steered; /* packets another shard would have taken */
	struct share_group *group;
	struct share_shard share;
	struct share_hosts hosts;
};

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
make_sched(struct sb *b, const char *dir_json, char *err, size_t errlen)
{
	struct shaper_config cfg;
	char *doc;
	size_t n = strlen(dir_json) + 128;

	doc = malloc(n);
	if (doc == NULL)
		return -1;
	/* The daemon's own loader, so defaults and seeds match shaperd's. */
	snprintf(doc, n,
		 "{\"ports\": {\"wan\": \"bench_wan\", \"lan\": \"bench_lan\"}, "
		 "\"upstream\": %s}",
		 dir_json);
	if (shaper_config_load_string(doc, &cfg, err, errlen) != 0) {
		free(doc);
		return -1;
	}
	free(doc);
	b->s = sched_create(&cfg.dir[SHAPER_UP], err, errlen);
	if (b->s == NULL)
		return -1;
	classify_key_init(&b->key, cfg.dir[SHAPER_UP].seed ^ 0x9e3779b97f4a7c15ULL);
	return 0;
}

/*
 * This bench is shard 0 of b->shards; the others stay idle (they publish
 * nothing), so it shapes at nearly the whole link and its drops match a
 * lone scheduler's: the difference in cost is the sharing's alone.
 */
static int
make_group(struct sb *b, char *err, size_t errlen)
{
	uint64_t rate = sched_get_params(b->s)->rate;

	if (rate == 0 || b->shards > SHARE_MAX_SHARDS) {
		snprintf(err, errlen, "needs a shaped rate and at most %d shards",
			 SHARE_MAX_SHARDS);
		return -1;
	}
	b->group = aligned_alloc(SHARE_LINE, sizeof(*b->group));
	if (b->group == NULL || share_group_init(b->group, rate, b->shards, 1514, err, errlen) != 0)
		return -1;
	/* The idle shards have ticked: each keeps the floor and gave back the rest. */
	for (uint32_t i = 1; i < b->shards; i++) {
		uint64_t had = atomic_load(&b->group->slot[i].rate);

		atomic_fetch_add(&b->group->pool, (int64_t)(had - b->group->floor));
		atomic_store(&b->group->slot[i].rate, b->group->floor);
	}
	share_shard_init(&b->share, b->group, 0, b->s, b->now);
	return 0;
}

static inline void
sb_release(struct sb *b, struct sh_pkt *p)
{
	b->free_stack[b->n_free++] = p;
}

/* One worker turn: a burst in (classify + enqueue), up to a burst out. */
static inline void
sb_turn(struct sb *b)
{
	struct sh_pkt *pkts[SHAPER_BURST_MAX];
	struct sh_pkt_list drops;
	uint32_t i, n = b->burst, bytes = 0;
	struct sh_pkt *p;

	if (n > b->n_free) {
		n = b->n_free;
		b->starved++;
	}
	for (i = 0; i < n; i++) {
		const struct sb_frame *fr = &b->frames[b->next_frame];
		struct sb_pkt *r;

		if (++b->next_frame == b->n_frames)
			b->next_frame = 0;
		p = b->free_stack[--b->n_free];
		r = (struct sb_pkt *)p;
		/* What the NIC and pkt_from_mbuf() do: fresh bytes, fresh metadata. */
		memcpy(r->buf, fr->hdr, SB_HDR);
		p->next = NULL;
		p->data = r->buf;
		p->hdr_len = fr->caplen;
		p->len = fr->len;
		p->mem = SB_TRUESIZE;
		bytes += fr->len;
		pkts[i] = p;
	}
	sh_pkt_list_init(&drops);
	classify_burst(pkts, n, &b->key);
	if (b->group != NULL)
		for (i = 0; i < n; i++) {
			b->steered += share_shard_of(pkts[i], true, SHARE_BY_HOST, b->shards) != 0;
			share_hosts_note(&b->hosts, pkts[i]->src_hash);
		}
	/* The burst entry points, as dir_turn() uses them. */
	sched_enqueue_burst(b->s, pkts, n, b->now, &drops);
	b->offered += n;
	b->offered_bytes += bytes;
	n = sched_dequeue_burst(b->s, pkts, b->burst < SB_TX_ROOM ? b->burst : SB_TX_ROOM, b->now,
				&drops);
	for (i = 0; i < n; i++) {
		b->delivered++;
		b->delivered_bytes += pkts[i]->len;
		if (b->group != NULL)
			share_hosts_note(&b->hosts, pkts[i]->src_hash);
		sb_release(b, pkts[i]);
	}
	if (b->group != NULL && share_due(&b->share, b->now))
		share_tick(&b->share, b->s, share_hosts_count(&b->hosts, b->now), b->now);
	(void)sched_next_time(b->s, b->now);
	while ((p = sh_pkt_list_pop(&drops)) != NULL) {
		b->dropped++;
		sb_release(b, p);
	}
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

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: sched_bench --pcap FILE [--dir JSON] [--packets N] [--warmup N]\n"
		   "                   [--burst N] [--offered BITS_PER_S] [--pool N]\n"
		   "  --dir      one direction's settings, as in shaperd's config\n"
		   "             (default {\"discipline\":\"cake\"})\n"
		   "  --packets  measured packets (default 1000000)\n"
		   "  --warmup   packets before measuring (default 2 x the pcap, >= 200000)\n"
		   "  --offered  simulated arrival rate in bit/s of frame bytes (default\n"
		   "             2 x the shaped rate, or 10e9 when unlimited)\n"
		   "  --shards   run as one shard of N sharing the rate (default 1: alone)\n"
		   "Prints one JSON line with the counters and ns per packet.\n");
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
		{ "shards", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct sb b;
	const char *pcap = NULL, *dir = "{\"discipline\": \"cake\"}";
	uint64_t packets = 1000000, warmup = 0;
	double offered = 0;
	char err[SHAPER_ERR_LEN];
	struct sched_stats *st;
	uint64_t t0, t1, off0, del0, drop0, bytes0, now0;
	int c;

	b.burst = 32;
	b.pool_len = 65536;
	while ((c = getopt_long(argc, argv, "p:d:n:w:b:o:P:s:h", opts, NULL)) != -1) {
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
		case 's':
			b.shards = (uint32_t)strtoul(optarg, NULL, 0);
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
	if (make_sched(&b, dir, err, sizeof(err)) != 0) {
		fprintf(stderr, "sched_bench: --dir: %s\n", err);
		return 1;
	}
	if (offered <= 0) {
		uint64_t rate = sched_get_params(b.s)->rate; /* bytes/s */

		offered = rate != 0 ? 2.0 * 8.0 * (double)rate : 10e9;
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
	if (b.shards > 1 && make_group(&b, err, sizeof(err)) != 0) {
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
	b.steered = 0;
	del0 = b.delivered;
	drop0 = b.dropped;
	bytes0 = b.delivered_bytes;
	now0 = b.now;
	t0 = mono_ns();
	sb_measure(&b, packets);
	t1 = mono_ns();

	st = calloc(1, sizeof(*st));
	if (st == NULL)
		return 1;
	sched_get_stats(b.s, st);
	printf("{\"frames\": %u, \"offered\": %llu, \"delivered\": %llu, \"dropped\": %llu, "
	       "\"delivered_bytes\": %llu, \"sim_ns\": %llu, \"ns_per_pkt\": %.2f, "
	       "\"drops_aqm\": %llu, \"drops_overflow\": %llu, \"backlog_pkts\": %llu, "
	       "\"starved\": %llu, \"offered_bps\": %.0f, \"shards\": %u, \"steered\": %llu, "
	       "\"share_ticks\": %llu}\n",
	       b.n_frames, (unsigned long long)(b.offered - off0),
	       (unsigned long long)(b.delivered - del0), (unsigned long long)(b.dropped - drop0),
	       (unsigned long long)(b.delivered_bytes - bytes0), (unsigned long long)(b.now - now0),
	       (double)(t1 - t0) / (double)(b.offered - off0),
	       (unsigned long long)st->dropped[SHAPER_DROP_AQM],
	       (unsigned long long)st->dropped[SHAPER_DROP_OVERFLOW],
	       (unsigned long long)st->backlog_pkts, (unsigned long long)b.starved, offered,
	       b.shards > 1 ? b.shards : 1, (unsigned long long)b.steered,
	       (unsigned long long)b.share.ticks);
	free(st);
	sched_free(b.s);
	free(b.group);
	free(b.pool);
	free(b.free_stack);
	free(b.frames);
	return 0;
}
