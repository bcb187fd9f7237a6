/* shaperd --check-config's report (check_config.h). */
#include <stdio.h>

#include "shaper/dataplane.h"
#include "shaper/log.h"
#include "shaper/subscriber_config.h"
#include "shaper/subscriber_pool.h"

#include "check_config.h"

/*
 * The memory estimate for n workers: each has its own scheduler over every
 * subscriber (idle state, allocator, the set's own lookup) and its own pool
 * of CAKEs; the rte_lpm tables and the loaded set are there once.
 */
static void
subs_mem_shards(struct sub_mem *m, uint32_t n)
{
	if (n <= 1)
		return;
	/* And each worker's copy of the tree for sharing the link (dp_subs_share_tick). */
	m->idle_bytes = m->idle_bytes * n + n * dp_subs_shard_bytes_for(m->configured, m->nodes);
	m->alloc_bytes *= n;
	m->lookup_bytes *= n;
	m->pool_bytes *= n;
	m->active *= n;
	m->change_bytes = m->lpm_bytes + m->lookup_bytes + m->config_bytes;
	m->total = m->config_bytes + m->idle_bytes + m->lookup_bytes + m->lpm_bytes +
		   m->alloc_bytes + m->pool_bytes + m->change_bytes;
}

static int
report_subscribers(const struct shaper_config *cfg)
{
	char err[SHAPER_ERR_LEN];
	struct sub_set set;
	struct sched_params sp;
	struct sub_mem m;
	char line[512];

	if (sub_config_load(cfg, &set, err, sizeof(err)) != 0) {
		shaper_log_error("%s", err);
		sub_set_free(&set);
		return 1;
	}
	sub_config_sched_params(cfg, &set, SHAPER_DOWN, &sp);
	if (sub_mem_estimate_set(&set, cfg->subscribers.active, cfg->subscribers.unknown_addresses,
				 &sp, &m, err, sizeof(err)) != 0) {
		shaper_log_error("subscribers: %s", err);
		sub_set_free(&set);
		return 1;
	}
	subs_mem_shards(&m, cfg->n_workers);
	sub_mem_format(&m, line, sizeof(line));
	printf("subscribers: %u under %u nodes from %s\n", set.nsubs, set.nnodes - 1,
	       set.subs_file);
	printf("subscribers: memory %s\n", line);
	if (set.not_applied[0] != '\0')
		printf("subscribers: read but not applied: %s\n", set.not_applied);
	if (cfg->n_workers > 1)
		printf("subscribers: %u workers, each with a scheduler over every "
		       "subscriber and a pool of %u CAKEs per direction (counted "
		       "above); the address tables are shared\n",
		       cfg->n_workers, m.active / cfg->n_workers);
	if (set.mins_scaled != 0)
		printf("subscribers: mins above a node's capacity at %u nodes "
		       "(scaled, as scale_mins asks)\n",
		       set.mins_scaled);
	if (cfg->n_workers > 1 && cfg->subscribers.shard_by_subscriber)
		printf("subscribers: each on a worker by its id; every node's "
		       "capacity shared among the workers\n");
	if (set.unknown == SUB_UNKNOWN_PLAN)
		printf("subscribers: addresses no subscriber owns get a plan "
		       "each (%.1f/%.1f Mbit/s), up to %u at once per worker, "
		       "their CAKEs from the pool\n",
		       set.unknown_plan[SUB_DOWN].max / 1e6, set.unknown_plan[SUB_UP].max / 1e6,
		       m.unknown_slots);
	sub_set_free(&set);
	return 0;
}

int
check_config_report(const struct shaper_config *cfg, const uint32_t pool_mbufs[SHAPER_NUM_DIRS],
		    const char *config_path)
{
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		struct dp_mbuf_budget b;

		dp_mbuf_budget_dir(cfg, (enum shaper_dir)d, &cfg->dir[d],
				   dp_mbuf_truesize_planned(), &b);
		printf("%s: mbuf pool of %u (holds up to %llu at once, %u bytes each)\n",
		       shaper_dir_name[d], pool_mbufs[d], (unsigned long long)b.total,
		       dp_mbuf_truesize_planned());
	}
	if (shaper_subscribers_enabled(cfg) && report_subscribers(cfg) != 0)
		return 1;
	printf("%s: configuration is valid\n", config_path);
	return 0;
}
