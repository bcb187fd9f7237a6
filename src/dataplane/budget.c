/*
 * Each direction receives into its own mbuf pool, so a backlog in one
 * direction can never starve the other's rx (the ACKs of the first among
 * them). The pool must hold everything that can pin one of its mbufs at
 * once; this is that worst case, checked when the config is validated and
 * again for every live change of the scheduler.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "shaper/dataplane.h"

/* The per-lcore cache keeps up to 1.5 x its size before it flushes. */
#define POOL_CACHE_HELD (DP_POOL_CACHE * 3 / 2)
/*
 * net_af_xdp receives into mbufs it hands the kernel through its fill ring
 * (2048 entries, whatever rx_descriptors says) and the kernel holds more in
 * the socket's rx ring (2048): measured, an af_xdp port keeps 2049 of its
 * pool from start to exit.
 */
#define AF_XDP_RX_HELD  4096u

uint32_t
dp_mbuf_truesize_planned(void)
{
	uint32_t elt = (uint32_t)(sizeof(struct rte_mbuf) + DP_MBUF_PRIV_SIZE +
				  RTE_MBUF_DEFAULT_BUF_SIZE);

	/* What the pool will report as elt + header + trailer (dp_mbuf_truesize). */
	return rte_mempool_calc_obj_size(elt, 0, NULL);
}

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t
dp_budget_sched_part(uint64_t one, uint32_t subs_cakes)
{
	uint64_t floor = (uint64_t)subs_cakes * DP_SUBS_PKTS_PER_CAKE;

	if (one == SCHED_UNBOUNDED)
		return one;
	return one > floor ? one : floor;
}

void
dp_mbuf_budget_dir(const struct shaper_config *c, enum shaper_dir d, const struct sched_params *p,
		   uint32_t truesize, struct dp_mbuf_budget *b)
{
	static const int in_port[SHAPER_NUM_DIRS] = { SHAPER_PORT_LAN, SHAPER_PORT_WAN };
	const struct shaper_emulate_config *ec = &c->emulate[d];

	uint64_t n = c->n_workers > 0 ? c->n_workers : 1;
	uint64_t one = dp_budget_sched_part(sched_max_packets(p, truesize),
					    shaper_subscribers_enabled(c) ? c->subscribers.active
									  : 0);

	/* Every shard's scheduler may hold its limits (a lone busy one has the whole link). */
	b->shards = (uint32_t)n;
	b->sched = one == SCHED_UNBOUNDED ? SCHED_UNBOUNDED : one * n;
	b->emulator = ec->delay_ns != 0 || ec->jitter_ns != 0 || ec->loss_ppm != 0 ? ec->limit : 0;
	b->rx_ring = c->port[in_port[d]].rx_desc;
	if (strncmp(c->port[in_port[d]].device, "net_af_xdp", 10) == 0 &&
	    b->rx_ring < AF_XDP_RX_HELD)
		b->rx_ring = AF_XDP_RX_HELD;
	b->tx_ring = c->port[1 - in_port[d]].tx_desc;
	b->pending = DP_TX_PENDING_MAX;
	/* Between rx and the scheduler: a turn's own burst, and with shards a steered one too. */
	b->burst = (uint32_t)(n > 1 ? 2 : 1) * SHAPER_BURST_MAX;
	b->held = SCHED_MOVE_HELD_MAX; /* arrivals held behind a discipline swap */
	b->cache = POOL_CACHE_HELD;    /* each worker's lcore cache of the pool */
	/* The main lcore's cache too: it frees mbufs at shutdown and may hold some. */
	b->main_cache = POOL_CACHE_HELD;
	/* Rings between the shards: n - 1 towards each (dp_steer_ring_size). */
	b->steer = n > 1 ? (uint64_t)n * (n - 1) * dp_steer_ring_size((uint32_t)n) : 0;
	b->fixed = n * ((uint64_t)b->emulator + b->rx_ring + b->tx_ring + b->pending + b->burst +
			b->held + b->cache) +
		   b->main_cache + b->steer;
	b->total = sat_add(b->sched, b->fixed);
}

static void
budget_text(const struct shaper_config *c, enum shaper_dir d, const struct sched_params *p,
	    const struct dp_mbuf_budget *b, char *out, size_t len)
{
	static const int in_port[SHAPER_NUM_DIRS] = { SHAPER_PORT_LAN, SHAPER_PORT_WAN };
	const char *dn = shaper_dir_name[d];
	int n;

	if (b->sched == SCHED_UNBOUNDED)
		n = snprintf(out, len, "scheduler unbounded (set %s.%s)", dn, sched_limit_keys(p));
	else if (shaper_subscribers_enabled(c))
		n = snprintf(out, len,
			     "scheduler %" PRIu64 " (%s.%s, at least %u for each of the "
			     "subscribers.active CAKEs)",
			     b->sched, dn, sched_limit_keys(p), DP_SUBS_PKTS_PER_CAKE);
	else
		n = snprintf(out, len, "scheduler %" PRIu64 " (%s.%s)", b->sched, dn,
			     sched_limit_keys(p));
	if (n < 0 || (size_t)n >= len)
		return;
	if (b->emulator != 0) {
		int k = snprintf(out + n, len - (size_t)n, ", emulator %u (%s.emulate.limit)",
				 b->emulator, dn);

		if (k < 0 || (size_t)k >= len - (size_t)n)
			return;
		n += k;
	}
	snprintf(out + n, len - (size_t)n,
		 ", rx ring %u (ports.%s.rx_descriptors), tx ring %u (ports.%s.tx_descriptors), "
		 "tx hold %u, burst %u, swap hold %u, lcore cache %u%s, main lcore cache %u, "
		 "steering rings %" PRIu64,
		 b->rx_ring, shaper_port_name[in_port[d]], b->tx_ring,
		 shaper_port_name[1 - in_port[d]], b->pending, b->burst, b->held, b->cache,
		 b->shards > 1 ? " (each per worker, lcores.workers)" : "", b->main_cache,
		 b->steer);
	(void)c;
}

int
dp_pool_size(const struct shaper_config *c, enum shaper_dir d, uint32_t truesize, uint32_t *n,
	     char *err, size_t errlen)
{
	struct dp_mbuf_budget b;
	char parts[400];

	dp_mbuf_budget_dir(c, d, &c->dir[d], truesize, &b);
	budget_text(c, d, &c->dir[d], &b, parts, sizeof(parts));
	if (c->mbufs[d] != 0 && b.total <= c->mbufs[d]) {
		*n = c->mbufs[d];
		return 0;
	}
	/* An unlimited fifo by the user's choice: the pool they sized bounds it. */
	if (c->mbufs[d] != 0 && b.sched == SCHED_UNBOUNDED && b.fixed < c->mbufs[d]) {
		*n = c->mbufs[d];
		return 0;
	}
	if (c->mbufs[d] == 0 && b.total <= DP_POOL_MAX) {
		*n = b.total < DP_POOL_MIN ? DP_POOL_MIN : (uint32_t)b.total;
		return 0;
	}
	if (c->mbufs[d] != 0 && b.sched != SCHED_UNBOUNDED)
		snprintf(err, errlen,
			 "dataplane.mbufs: the %s pool has %u mbufs, but %s can hold %" PRIu64
			 " at once: %s. Raise dataplane.mbufs (or \"auto\") or lower those limits",
			 shaper_dir_name[d], c->mbufs[d], shaper_dir_name[d], b.total, parts);
	else if (b.sched != SCHED_UNBOUNDED)
		snprintf(err, errlen,
			 "%s can hold %" PRIu64 " mbufs at once, more than a pool of %u: %s. "
			 "Lower those limits",
			 shaper_dir_name[d], b.total, DP_POOL_MAX, parts);
	else
		snprintf(err, errlen,
			 "%s: nothing bounds the packets held (%s): set %s.%s, or size the pool "
			 "that will bound it with dataplane.mbufs",
			 shaper_dir_name[d], parts, shaper_dir_name[d],
			 sched_limit_keys(&c->dir[d]));
	return -1;
}

int
dp_budget_check_update(const struct dp_dir *dd, const struct sched_params *p, char *err,
		       size_t errlen)
{
	uint64_t one = dp_budget_sched_part(sched_max_packets(p, dd->truesize), dd->subs_cakes);
	uint64_t need = sat_add(one == SCHED_UNBOUNDED ? one
						       : one * (dd->n_shards ? dd->n_shards : 1),
				dd->mbuf_fixed);

	if (need <= dd->pool_mbufs)
		return 0;
	snprintf(err, errlen,
		 "these limits let %s hold %" PRIu64
		 " mbufs at once, but its pool has %u (%u taken by rings, "
		 "the emulator and caches): lower %s, or restart with a larger dataplane.mbufs",
		 shaper_dir_name[dd->dir], need, dd->pool_mbufs, (unsigned int)dd->mbuf_fixed,
		 sched_limit_keys(p));
	return -1;
}
