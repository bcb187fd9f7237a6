/*
 * The pool of per-subscriber schedulers and the memory estimate (see
 * shaper/subscriber_pool.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "shaper/subscriber_alloc.h"
#include "shaper/subscriber_lookup.h"
#include "shaper/subscriber_pool.h"
#include "shaper/subscriber_sched.h"
#include "shaper/subscriber_unknown.h"

struct sub_pool {
	struct sched_params p;
	uint32_t count, nfree;
	struct sched **all;  /* every scheduler of the pool */
	struct sched **free; /* a stack of the ones not taken */
	bool *taken;         /* by index in all */
	/*
	 * Scheduler -> index in all, open addressing: a take or give happens at
	 * every activation of a subscriber, and a scan of all was thousands of
	 * instructions and cache misses each with thousands of CAKEs.
	 */
	uint32_t *slot; /* index in all + 1; 0 = empty */
	uint32_t mask;
};

void
sub_pool_free(struct sub_pool *pool)
{
	uint32_t i;

	if (pool == NULL)
		return;
	for (i = 0; pool->all != NULL && i < pool->count; i++)
		sched_free(pool->all[i]);
	free(pool->all);
	free(pool->free);
	free(pool->taken);
	free(pool->slot);
	free(pool);
}
static uint32_t
slot_hash(const struct sub_pool *pool, const struct sched *s)
{
	uint64_t x = (uint64_t)(uintptr_t)s;

	return (uint32_t)((x * 0x9e3779b97f4a7c15ull) >> 32) & pool->mask;
}

struct sub_pool *
sub_pool_create(const struct sched_params *p, uint32_t count, const struct sched_alloc *a,
		char *err, size_t errlen)
{
	struct sub_pool *pool = calloc(1, sizeof(*pool));
	uint32_t i;

	if (pool == NULL)
		goto nomem;
	pool->p = *p;
	pool->all = calloc(count + 1, sizeof(*pool->all));
	pool->free = calloc(count + 1, sizeof(*pool->free));
	pool->taken = calloc(count + 1, sizeof(*pool->taken));
	for (pool->mask = 15; pool->mask < 2 * (uint64_t)count; pool->mask = pool->mask * 2 + 1)
		;
	pool->slot = calloc((size_t)pool->mask + 1, sizeof(*pool->slot));
	if (pool->all == NULL || pool->free == NULL || pool->taken == NULL || pool->slot == NULL)
		goto nomem;
	for (i = 0; i < count; i++) {
		pool->all[i] = sched_create_on(p, a, err, errlen);
		if (pool->all[i] == NULL) {
			sub_pool_free(pool);
			return NULL;
		}
		pool->count++;
		pool->free[pool->nfree++] = pool->all[i];
		{
			uint32_t h = slot_hash(pool, pool->all[i]);

			while (pool->slot[h] != 0)
				h = (h + 1) & pool->mask;
			pool->slot[h] = i + 1;
		}
	}
	return pool;
nomem:
	sub_pool_free(pool);
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "out of memory for a pool of %u schedulers", count);
	return NULL;
}

/* count when s is not the pool's. */
static uint32_t
sub_pool_index(const struct sub_pool *pool, const struct sched *s)
{
	for (uint32_t h = slot_hash(pool, s); pool->slot[h] != 0; h = (h + 1) & pool->mask)
		if (pool->all[pool->slot[h] - 1] == s)
			return pool->slot[h] - 1;
	return pool->count;
}

struct sched *
sub_pool_take(struct sub_pool *pool)
{
	struct sched *s;

	if (pool->nfree == 0)
		return NULL;
	s = pool->free[--pool->nfree];
	pool->taken[sub_pool_index(pool, s)] = true;
	return s;
}

int
sub_pool_give(struct sub_pool *pool, struct sched *s)
{
	struct sched_stats st;
	uint32_t i;

	i = sub_pool_index(pool, s);
	if (i == pool->count || !pool->taken[i])
		return -EINVAL;
	sched_get_stats(s, &st);
	if (st.backlog_pkts != 0)
		return -EBUSY;
	/* Counters, flow tables, COBALT state and the rate back to the pool's. */
	if (sched_reinit(s, &pool->p, NULL, 0) != 0)
		return -EBUSY;
	pool->taken[i] = false;
	pool->free[pool->nfree++] = s;
	return 0;
}

uint32_t
sub_pool_available(const struct sub_pool *pool)
{
	return pool->nfree;
}

bool
sub_pool_may_return(const struct sched *s, uint64_t last_pkt_ns, uint64_t now)
{
	return sched_next_time(s, now) == UINT64_MAX && now - last_pkt_ns >= SUB_POOL_HOLD_NS;
}

/* ------------------------------------------------------------------ memory */

struct sub_count_alloc {
	size_t bytes;
};

static void *
sub_count_zalloc(size_t size, void *ctx)
{
	((struct sub_count_alloc *)ctx)->bytes += size;
	return calloc(1, size);
}

static void
sub_count_free(void *p, void *ctx)
{
	(void)ctx;
	free(p);
}

/*
 * DPDK's rte_lpm and rte_lpm6 as the worker sizes them (src/dataplane/subs.c):
 * a first-level table of 2^24 4-byte entries each, and a group of 256 for
 * every 8 bits a prefix reaches past /24 (v4: one at most).
 */
#define SUB_LPM_TBL24_BYTES (4ull << 24)
#define SUB_LPM_TBL8_BYTES  (256ull * 4)

uint64_t
sub_lpm_bytes_for(uint32_t v4, uint32_t v4_groups, uint32_t v6, uint32_t v6_groups)
{
	uint64_t b = 0;

	if (v4 != 0)
		b += SUB_LPM_TBL24_BYTES + (v4_groups + 1ull) * SUB_LPM_TBL8_BYTES + v4 * 8ull;
	if (v6 != 0)
		b += SUB_LPM_TBL24_BYTES + (v6_groups + 1ull) * SUB_LPM_TBL8_BYTES + v6 * 24ull;
	return b;
}

static int
sub_mem_fill(uint32_t configured, uint32_t prefixes, uint32_t nodes, uint32_t active,
	     uint32_t unknown_slots, uint64_t lpm_bytes, const struct sched_params *p,
	     struct sub_mem *out, char *err, size_t errlen)
{
	struct sub_count_alloc count = { 0 };
	struct sched_alloc a = { sub_count_zalloc, sub_count_free, &count };
	struct sched *s = sched_create_on(p, &a, err, errlen);

	if (s == NULL)
		return -EINVAL;
	sched_free(s);
	/* The pool is made whole at start-up (more than the file has: for those added live). */
	out->configured = configured;
	out->active = active;
	out->prefixes = prefixes;
	out->nodes = nodes;
	out->unknown_slots = unknown_slots;
	out->config_bytes = (uint64_t)configured * sizeof(struct sub_subscriber) +
			    (uint64_t)prefixes * sizeof(struct sub_prefix) +
			    (uint64_t)nodes * sizeof(struct sub_node);
	/* The record of each, and its place; an unknown address's slot is one more. */
	out->idle_bytes = sub_sched_bytes_for(configured + unknown_slots) +
			  sub_unknown_bytes_for(unknown_slots);
	/* Every prefix counted in both tables: an upper bound. */
	out->lookup_bytes = sub_lookup_bytes_for(prefixes, prefixes);
	out->alloc_bytes = sub_alloc_bytes_for(nodes, configured + unknown_slots);
	out->sched_bytes = count.bytes;
	out->pool_bytes = (uint64_t)active * SUB_DIRS * count.bytes;
	out->lpm_bytes = lpm_bytes;
	out->change_bytes = out->lpm_bytes + out->lookup_bytes + out->config_bytes;
	out->total = out->config_bytes + out->idle_bytes + out->lookup_bytes + out->alloc_bytes +
		     out->pool_bytes + out->lpm_bytes + out->change_bytes;
	return 0;
}

int
sub_mem_estimate(uint32_t configured, uint32_t prefixes, uint32_t nodes, uint32_t active,
		 const struct sched_params *p, struct sub_mem *out, char *err, size_t errlen)
{
	/* Without the set: half v4 /32s (a group each), half v6 /56s (four each). */
	uint32_t v4 = prefixes - prefixes / 2, v6 = prefixes / 2;

	return sub_mem_fill(configured, prefixes, nodes, active, 0,
			    sub_lpm_bytes_for(v4, v4, v6, 4 * v6), p, out, err, errlen);
}

int
sub_mem_estimate_set(const struct sub_set *set, uint32_t active, uint32_t unknown_addresses,
		     const struct sched_params *p, struct sub_mem *out, char *err, size_t errlen)
{
	uint32_t v4 = 0, g4 = 0, v6 = 0, g6 = 0;

	for (uint32_t i = 0; i < set->nprefixes; i++) {
		const struct sub_prefix *x = &set->prefixes[i];

		if (x->vlan != 0)
			continue; /* in the hash lookup only */
		if (x->family == 4) {
			v4++;
			g4 += x->len > 24;
		} else {
			v6++;
			g6 += x->len > 24 ? (x->len - 24u + 7) / 8u : 0;
		}
	}
	return sub_mem_fill(set->nsubs, set->nprefixes, set->nnodes, active,
			    sub_sched_unknown_slots_for(set, active, unknown_addresses),
			    sub_lpm_bytes_for(v4, g4, v6, g6), p, out, err, errlen);
}

void
sub_mem_format(const struct sub_mem *m, char *buf, size_t len)
{
	snprintf(buf, len,
		 "%u subscribers (%u active, a scheduler each way): %.3f GB = pool %.3f GB (%u x 2 "
		 "x %llu bytes) + rte_lpm %.1f MB + idle state %.1f MB + configuration %.1f MB + "
		 "lookup %.1f MB + allocator %.1f MB + a live address change's second tables "
		 "%.1f MB",
		 m->configured, m->active, m->total / 1e9, m->pool_bytes / 1e9, m->active,
		 (unsigned long long)m->sched_bytes, m->lpm_bytes / 1e6, m->idle_bytes / 1e6,
		 m->config_bytes / 1e6, m->lookup_bytes / 1e6, m->alloc_bytes / 1e6,
		 m->change_bytes / 1e6);
}
