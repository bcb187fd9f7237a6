/*
 * Per-subscriber shaping hung on a worker's two directions: the subscriber
 * files the config names, loaded and checked, and the per-subscriber
 * scheduler around each direction's own scheduler (shaper/subscriber_sched.h).
 * One worker only: the config refuses subscribers with more.
 */
#include <errno.h>
#include <stdio.h>

#include "shaper/dataplane.h"
#include "shaper/subscriber_config.h"

static enum shaper_dir
shaper_dir_of(enum sub_dir sd)
{
	return sd == SUB_DOWN ? SHAPER_DOWN : SHAPER_UP;
}

int
dp_subs_attach(struct dp_dir *dirs[SHAPER_NUM_DIRS], const struct shaper_config *c, char *err,
	       size_t errlen)
{
	struct sub_sched_config cfg = { 0 };
	struct sub_sched *ss;
	struct sub_set set;
	int rc;

	rc = sub_config_load(c, &set, err, errlen);
	if (rc != 0) {
		sub_set_free(&set);
		return rc;
	}
	cfg.set = &set;
	cfg.active = c->subscribers.active;
	for (int sd = 0; sd < SUB_DIRS; sd++) {
		struct dp_dir *d = dirs[shaper_dir_of((enum sub_dir)sd)];

		sub_config_sched_params(c, &set, shaper_dir_of((enum sub_dir)sd), &cfg.params[sd]);
		cfg.link[sd] = d->sched;
	}
	/* The CAKEs on the worker's NUMA node, as its own scheduler's. */
	cfg.mem = dp_dir_alloc(dirs[SHAPER_DOWN]);
	ss = sub_sched_create(&cfg, err, errlen);
	sub_set_free(&set); /* what the scheduler needs it copied */
	if (ss == NULL)
		return -EINVAL;
	for (int sd = 0; sd < SUB_DIRS; sd++) {
		struct dp_dir *d = dirs[shaper_dir_of((enum sub_dir)sd)];

		d->subs = ss;
		sub_sched_set_link_rate(ss, (enum sub_dir)sd, sched_get_params(d->sched)->rate);
	}
	return 0;
}

void
dp_subs_detach(struct dp_dir *dirs[SHAPER_NUM_DIRS])
{
	struct sub_sched *ss = dirs[SHAPER_DOWN]->subs;

	dirs[SHAPER_DOWN]->subs = dirs[SHAPER_UP]->subs = NULL;
	sub_sched_free(ss);
}
