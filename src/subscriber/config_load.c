/*
 * From the daemon's "subscribers" section to a checked subscriber set and
 * the parameters of the per-subscriber CAKEs (shaper/subscriber_config.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "shaper/subscriber_config.h"
#include "shaper/subscriber_pool.h"
#include "subscriber/sub_impl.h"

/* The subscriber model's direction of a daemon direction. */
static enum sub_dir
sub_dir_of(enum shaper_dir d)
{
	return d == SHAPER_DOWN ? SUB_DOWN : SUB_UP;
}

static const char *const sub_diffserv_name[] = {
	[SCHED_DIFFSERV3] = "diffserv3",   [SCHED_DIFFSERV4] = "diffserv4",
	[SCHED_DIFFSERV8] = "diffserv8",   [SCHED_BESTEFFORT] = "besteffort",
	[SCHED_PRECEDENCE] = "precedence",
};

/* What each side of a circuit's sqm asks that its CAKE (of diffserv ds) does not do. */
enum sub_sqm_miss {
	MISS_NONE = 0,
	MISS_FQ_CODEL,
	MISS_NO_AQM,
	MISS_OPTIONS,
	MISS_KINDS
};

static enum sub_sqm_miss
sub_sqm_miss(const struct sub_subscriber *s, enum sub_dir d, enum sched_diffserv ds)
{
	if (s->sqm[d] == SUB_SQM_FQ_CODEL)
		return MISS_FQ_CODEL;
	if (s->sqm[d] == SUB_SQM_NONE)
		return MISS_NO_AQM;
	if (s->sqm_opt[d] == SUB_SQM_OPT_NONE || s->sqm_opt[d] == 1u + (unsigned)ds)
		return MISS_NONE;
	return MISS_OPTIONS;
}

/*
 * Every subscriber is shaped by a CAKE of the subscribers' settings: a
 * per-circuit sqm of cake (with no option, or the diffserv mode those CAKEs
 * have) is what it gets; fq_codel, none and other options are not. Those
 * are counted and the first circuit of each kind named, in not_applied.
 */
static void
sub_sqm_report(const struct shaper_config *cfg, struct sub_set *set)
{
	static const char *const what[MISS_KINDS] = {
		[MISS_FQ_CODEL] = "fq_codel",
		[MISS_NO_AQM] = "none",
		[MISS_OPTIONS] = "cake options",
	};
	enum sched_diffserv ds[SUB_DIRS];
	uint32_t first[MISS_KINDS][SUB_DIRS], count = 0;
	char note[sizeof(set->not_applied)];
	size_t used;
	int n;

	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		struct sched_params p;

		sub_config_sched_params(cfg, set, (enum shaper_dir)d, &p);
		ds[sub_dir_of((enum shaper_dir)d)] = p.diffserv;
	}
	for (int k = 0; k < MISS_KINDS; k++)
		first[k][SUB_DOWN] = first[k][SUB_UP] = SUB_NONE;
	for (uint32_t i = 0; i < set->nsubs; i++) {
		bool missed = false;

		for (int d = 0; d < SUB_DIRS; d++) {
			enum sub_sqm_miss m = sub_sqm_miss(&set->subs[i], (enum sub_dir)d, ds[d]);

			if (m == MISS_NONE)
				continue;
			missed = true;
			if (first[m][d] == SUB_NONE)
				first[m][d] = i;
		}
		count += missed;
	}
	if (count == 0)
		return;
	n = snprintf(note, sizeof(note),
		     "sqm of %u circuit%s (each is shaped by a CAKE, %s down and %s up, "
		     "whatever its sqm asks), the first asking each:",
		     count, count == 1 ? "" : "s", sub_diffserv_name[ds[SUB_DOWN]],
		     sub_diffserv_name[ds[SUB_UP]]);
	for (int k = 1; k < MISS_KINDS && n > 0 && (size_t)n < sizeof(note); k++)
		for (int d = 0; d < SUB_DIRS; d++) {
			char where[300];
			uint32_t i = first[k][d];

			/* A circuit asking the same both ways is named once. */
			if (i == SUB_NONE || (d == SUB_UP && first[k][SUB_DOWN] == i))
				continue;
			sub_where(set, i, where, sizeof(where));
			n += snprintf(note + n, sizeof(note) - (size_t)n, " %s %s %s;", where,
				      what[k],
				      d == SUB_UP             ? "up"
				      : first[k][SUB_UP] == i ? "both ways"
							      : "down");
			if ((size_t)n >= sizeof(note))
				break;
		}
	if ((size_t)n >= sizeof(note))
		n = (int)sizeof(note) - 1;
	if (n > 0 && note[n - 1] == ';')
		note[n - 1] = '\0';
	used = strlen(set->not_applied);
	if (used + 3 < sizeof(set->not_applied))
		snprintf(set->not_applied + used, sizeof(set->not_applied) - used, "%s%s",
			 used != 0 ? "; " : "", note);
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
		return rc;
	}
	sub_sqm_report(cfg, set);
	return 0;
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
