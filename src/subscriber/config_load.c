/*
 * From the daemon's "subscribers" section to a checked subscriber set and
 * the parameters of the per-subscriber CAKEs (shaper/subscriber_config.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "shaper/subscriber_config.h"
#include "shaper/subscriber_pool.h"

/* The subscriber model's direction of a daemon direction. */
static enum sub_dir
sub_dir_of(enum shaper_dir d)
{
	return d == SHAPER_DOWN ? SUB_DOWN : SUB_UP;
}

int
sub_config_load(const struct shaper_config *cfg, struct sub_set *set, char *err, size_t errlen)
{
	const struct shaper_subscribers_config *sc = &cfg->subscribers;
	int rc;

	sub_set_init(set);
	set->scale_mins = sc->scale_mins;
	if (sc->file[0] != '\0')
		rc = sub_load_json(set, sc->file, err, errlen);
	else if (sc->devices[0] != '\0')
		rc = sub_load_libreqos(set, sc->devices,
				       sc->network[0] != '\0' ? sc->network : NULL, err, errlen);
	else {
		snprintf(err, errlen, "subscribers: neither devices nor file is given");
		return -EINVAL;
	}
	if (rc != 0) {
		char inner[512];

		snprintf(inner, sizeof(inner), "%s", err);
		snprintf(err, errlen, "subscribers: %s", inner);
		return rc;
	}
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		enum sub_dir sd = sub_dir_of((enum shaper_dir)d);
		uint64_t rate = cfg->autorate[d].enabled ? cfg->autorate[d].max_rate
							 : cfg->dir[d].rate;

		if (set->nodes[SUB_ROOT].capacity[sd] == 0)
			set->nodes[SUB_ROOT].capacity[sd] = rate * 8u;
		if (sc->unknown_plan) {
			set->unknown = SUB_UNKNOWN_PLAN;
			set->unknown_plan[sd].min = 0;
			set->unknown_plan[sd].max = sc->unknown_rate[d] * 8u;
		}
	}
	rc = sub_set_validate(set, err, errlen);
	if (rc != 0) {
		char inner[512];

		snprintf(inner, sizeof(inner), "%s", err);
		snprintf(err, errlen, "subscribers: %s", inner);
	}
	return rc;
}

void
sub_config_sched_params(const struct shaper_config *cfg, const struct sub_set *set,
			enum shaper_dir d, struct sched_params *out)
{
	enum sub_dir sd = sub_dir_of(d);
	uint64_t top = 0;

	if (cfg->dir[d].discipline == SCHED_DISC_CAKE) {
		*out = cfg->dir[d];
	} else {
		sched_params_default(out, SCHED_DISC_CAKE);
		out->upstream = cfg->dir[d].upstream;
		out->seed = cfg->dir[d].seed;
		out->mtu = cfg->dir[d].mtu;
	}
	for (uint32_t s = 0; s < set->nsubs; s++)
		if (set->subs[s].plan[sd].max > top)
			top = set->subs[s].plan[sd].max;
	if (set->unknown == SUB_UNKNOWN_PLAN && set->unknown_plan[sd].max > top)
		top = set->unknown_plan[sd].max;
	out->rate = top / 8u > 0 ? top / 8u : 1;
	sub_pool_cake_size(out);
	if (cfg->subscribers.flow_queues != 0)
		out->cake_queues = cfg->subscribers.flow_queues;
}
