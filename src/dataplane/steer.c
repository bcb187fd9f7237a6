/*
 * Software steering: with N workers and ports whose PMD cannot hash the
 * LAN host's address into the right rx queue (every vdev here, NICs
 * without L3_SRC_ONLY/DST_ONLY RSS), a worker classifies what its queue
 * received and hands frames of other shards to their workers through
 * single-producer single-consumer rings, one per (from, to) pair of a
 * direction. A full ring drops the frame, counted as steer_full: a worker
 * never waits for another.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_malloc.h>
#include <rte_ring.h>

#include "shaper/dataplane.h"

/* Frames in flight towards one shard, from all the others together. */
#define STEER_IN_PER_SHARD 4096u
#define STEER_RING_MIN     512u

uint32_t
dp_steer_ring_size(uint32_t n)
{
	uint32_t size = n > 1 ? STEER_IN_PER_SHARD / (n - 1) : STEER_RING_MIN;

	if (size < STEER_RING_MIN)
		size = STEER_RING_MIN;
	return rte_align32prevpow2(size);
}

int
dp_steering_choose(const struct dp_port *lan, const struct dp_port *wan, uint32_t n,
		   enum shaper_steering want, char *why, size_t len)
{
	const uint64_t side = RTE_ETH_RSS_L3_SRC_ONLY | RTE_ETH_RSS_L3_DST_ONLY;
	const char *no = NULL;

	if (!lan->rss_sharded || !wan->rss_sharded) {
		snprintf(why, len, "%s cannot hash the LAN host onto its queues",
			 !lan->rss_sharded ? lan->name : wan->name);
		return want == SHAPER_STEER_RSS ? -1 : 0;
	}
	if ((lan->rss_hf & ~side) != (wan->rss_hf & ~side))
		no = "the two ports hash different packet types";
	else if (lan->rss_key_len != wan->rss_key_len)
		no = "the two ports' hash keys differ in length";
	/* Tables of different sizes agree on i mod n only when n divides both. */
	else if (lan->reta_size != wan->reta_size && (n & (n - 1)) != 0)
		no = "their redirection tables differ in size and the workers are not a power of 2";
	if (no != NULL) {
		snprintf(why, len, "%s / %s: %s", lan->name, wan->name, no);
		return want == SHAPER_STEER_RSS ? -1 : 0;
	}
	snprintf(why, len, "%s and %s hash the same way", lan->name, wan->name);
	return want != SHAPER_STEER_SOFTWARE;
}

void
dp_steer_free(struct dp_dir *const *dirs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct dp_steer *st = dirs[i]->steer;

		if (st == NULL)
			continue;
		for (uint32_t j = 0; j < n; j++)
			rte_ring_free(st->out[j]); /* each ring is some shard's out */
		rte_free(st);
		dirs[i]->steer = NULL;
	}
}

int
dp_steer_create(struct dp_dir *const *dirs, uint32_t n, enum share_by by, char *err, size_t errlen)
{
	uint32_t size = dp_steer_ring_size(n);

	for (uint32_t i = 0; i < n; i++) {
		dirs[i]->steer = rte_zmalloc_socket("steer", sizeof(struct dp_steer),
						    RTE_CACHE_LINE_SIZE, dp_dir_socket(dirs[i]));
		if (dirs[i]->steer == NULL) {
			snprintf(err, errlen, "out of memory for the steering state");
			dp_steer_free(dirs, n);
			return -ENOMEM;
		}
		dirs[i]->steer->by = by;
		dirs[i]->steer->upstream = dirs[i]->dir == SHAPER_UP;
		dirs[i]->steer->n = n;
	}
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < n; j++) {
			char name[RTE_RING_NAMESIZE];
			struct rte_ring *r;

			if (i == j)
				continue;
			snprintf(name, sizeof(name), "steer_%c%u_%u",
				 dirs[i]->dir == SHAPER_UP ? 'u' : 'd', i, j);
			/* On the node of the worker that takes from it. */
			r = rte_ring_create(name, size, dp_dir_socket(dirs[j]),
					    RING_F_SP_ENQ | RING_F_SC_DEQ);
			if (r == NULL) {
				snprintf(err, errlen, "cannot create steering ring %s: %s", name,
					 rte_strerror(rte_errno));
				dp_steer_free(dirs, n);
				return -ENOMEM;
			}
			dirs[i]->steer->out[j] = r;
			dirs[j]->steer->in[i] = r;
		}
	return 0;
}

unsigned int
dp_steer_burst_to(struct dp_dir *d, struct sh_pkt **pkts, const uint8_t *to, uint32_t *tag,
		  unsigned int n, struct sh_pkt_list *drops)
{
	struct dp_steer *st = d->steer;
	void *away[SHAPER_BURST_MAX];
	uint32_t counts[SHAPER_MAX_WORKERS] = { 0 };
	unsigned int keep = 0, i;

	for (i = 0; i < n; i++)
		counts[to[i]]++;
	if (counts[d->shard] == n)
		return n; /* the common case with host-aware RSS, and a fast path */
	for (uint32_t s = 0; s < st->n; s++) {
		unsigned int k = 0, sent;

		if (s == d->shard || counts[s] == 0)
			continue;
		for (i = 0; i < n; i++)
			if (to[i] == s)
				away[k++] = dp_pkt_mbuf(pkts[i]);
		sent = rte_ring_sp_enqueue_burst(st->out[s], away, k, NULL);
		st->steered_out += sent;
		for (i = sent; i < k; i++) {
			struct sh_pkt *p = dp_mbuf_pkt(away[i]);

			p->drop_reason = SHAPER_DROP_STEER_FULL;
			sh_pkt_list_push(drops, p);
		}
	}
	for (i = 0; i < n; i++)
		if (to[i] == d->shard) {
			if (tag != NULL)
				tag[keep] = tag[i];
			pkts[keep++] = pkts[i];
		}
	return keep;
}

unsigned int
dp_steer_burst(struct dp_dir *d, struct sh_pkt **pkts, unsigned int n, struct sh_pkt_list *drops)
{
	struct dp_steer *st = d->steer;
	uint8_t to[SHAPER_BURST_MAX];

	for (unsigned int i = 0; i < n; i++)
		to[i] = (uint8_t)share_shard_of(pkts[i], st->upstream, st->by, st->n);
	return dp_steer_burst_to(d, pkts, to, NULL, n, drops);
}

unsigned int
dp_steer_take(struct dp_dir *d, struct sh_pkt **pkts, unsigned int max)
{
	struct dp_steer *st = d->steer;
	void *got[SHAPER_BURST_MAX];
	unsigned int n = 0, quota;
	uint32_t first = st->next_in;

	if (max > SHAPER_BURST_MAX)
		max = SHAPER_BURST_MAX;
	/*
	 * Every source gets an equal part of the burst first, then what is left
	 * goes round starting one source further each turn: a fixed order
	 * would always serve the same ring last, and its worker would see its
	 * frames dropped as steer_full while the others' got through.
	 */
	quota = st->n > 1 ? max / (st->n - 1) : max;
	if (quota == 0)
		quota = 1;
	for (int pass = 0; pass < 2 && n < max; pass++)
		for (uint32_t k = 0; k < st->n && n < max; k++) {
			uint32_t s = (first + k) % st->n;
			unsigned int want = max - n;

			if (st->in[s] == NULL)
				continue;
			if (pass == 0 && want > quota)
				want = quota;
			n += rte_ring_sc_dequeue_burst(st->in[s], got + n, want, NULL);
		}
	st->next_in = (first + 1) % st->n;
	for (unsigned int i = 0; i < n; i++)
		pkts[i] = dp_mbuf_pkt(got[i]);
	st->steered_in += n;
	return n;
}

void
dp_steer_flush(struct dp_dir *d, struct sh_pkt_list *out)
{
	struct sh_pkt *pkts[SHAPER_BURST_MAX];
	unsigned int n;

	if (d->steer == NULL)
		return;
	while ((n = dp_steer_take(d, pkts, SHAPER_BURST_MAX)) != 0)
		for (unsigned int i = 0; i < n; i++)
			sh_pkt_list_push(out, pkts[i]);
}
