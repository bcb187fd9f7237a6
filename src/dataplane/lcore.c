/*
 * A worker's context: its struct dp_worker and the shards it serves, in
 * one cache-aligned block on the NUMA node of its lcore, and the allocator
 * that puts the shards' schedulers there too. With every worker's hot state
 * on lines of its own, no worker's stores invalidate a line another one
 * reads every loop (false sharing), and none reaches across nodes.
 */
#include <stdint.h>

#include <rte_lcore.h>
#include <rte_malloc.h>

#include "shaper/dataplane.h"

static void *
dir_zalloc(size_t size, void *ctx)
{
	const struct dp_dir *d = ctx;

	return rte_zmalloc_socket("sched", size, RTE_CACHE_LINE_SIZE, d->socket);
}

static void
dir_free(void *p, void *ctx)
{
	(void)ctx;
	rte_free(p);
}

void
dp_dir_set_socket(struct dp_dir *d, int socket)
{
	d->socket = socket;
	d->alloc.zalloc = dir_zalloc;
	d->alloc.free = dir_free;
	d->alloc.ctx = d;
}

const struct sched_alloc *
dp_dir_alloc(const struct dp_dir *d)
{
	return d->alloc.zalloc != NULL ? &d->alloc : NULL;
}

int
dp_dir_socket(const struct dp_dir *d)
{
	return dp_dir_alloc(d) != NULL ? d->socket : SOCKET_ID_ANY;
}

struct dp_lcore *
dp_lcore_create(unsigned int lcore)
{
	unsigned int socket = rte_lcore_to_socket_id(lcore);
	struct dp_lcore *lc;

	lc = rte_zmalloc_socket("worker", sizeof(*lc), RTE_CACHE_LINE_SIZE, (int)socket);
	if (lc == NULL)
		return NULL;
	lc->w.lcore = lcore;
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		dp_dir_set_socket(&lc->dir[d], (int)socket);
		lc->w.dirs[d] = &lc->dir[d];
	}
	lc->w.n_dirs = SHAPER_NUM_DIRS;
	return lc;
}

void
dp_lcore_free(struct dp_lcore *lc)
{
	rte_free(lc);
}

/*
 * Hot object k of a worker: 0 its struct dp_worker, then the struct dp_dir of
 * each shard it serves (the pointers the loop follows, not the context's
 * layout, so a worker whose shards live elsewhere is caught). Sets the
 * first and last cache line it covers.
 */
static void
hot_lines(const struct dp_lcore *lc, unsigned int k, uintptr_t *first, uintptr_t *last)
{
	const void *p = k == 0 ? (const void *)&lc->w : (const void *)lc->w.dirs[k - 1];
	size_t len = k == 0 ? sizeof(struct dp_worker) : sizeof(struct dp_dir);

	*first = (uintptr_t)p / RTE_CACHE_LINE_SIZE;
	*last = ((uintptr_t)p + len - 1) / RTE_CACHE_LINE_SIZE;
}

unsigned int
dp_lcore_shared_lines(struct dp_lcore *const *lc, unsigned int n)
{
	unsigned int shared = 0;

	for (unsigned int i = 0; i < n; i++)
		for (unsigned int j = i + 1; j < n; j++)
			for (unsigned int a = 0; a <= lc[i]->w.n_dirs; a++)
				for (unsigned int b = 0; b <= lc[j]->w.n_dirs; b++) {
					uintptr_t f1, l1, f2, l2;

					hot_lines(lc[i], a, &f1, &l1);
					hot_lines(lc[j], b, &f2, &l2);
					if (f1 <= l2 && f2 <= l1)
						shared += (unsigned int)((l1 < l2 ? l1 : l2) -
									 (f1 > f2 ? f1 : f2) + 1);
				}
	return shared;
}
