/*
 * The daemon's "subscribers" section (shaper/config.h) turned into a
 * loaded, checked subscriber set, and the parameters of the CAKEs its pool
 * holds. Shared by shaperd --check-config and the start-up path.
 */
#ifndef SHAPER_SUBSCRIBER_CONFIG_H
#define SHAPER_SUBSCRIBER_CONFIG_H

#include <stddef.h>

#include "shaper/config.h"
#include "shaper/sched.h"
#include "shaper/subscriber.h"

/*
 * Load the files cfg->subscribers names into set (fresh, sub_set_init'd
 * here): the link's capacity per direction is the file's "link" if it has
 * one, else the direction's bandwidth (its autorate max when autorate is
 * on; unlimited stays unlimited); subscribers.unknown, when it is a plan,
 * replaces what the file says. 0, or -errno with a message naming the file
 * and line or JSON path. The caller frees set (sub_set_free) either way.
 */
int sub_config_load(const struct shaper_config *cfg, struct sub_set *set, char *err, size_t errlen);

/*
 * The parameters of one subscriber's CAKE in direction d: the direction's
 * own CAKE settings when it runs CAKE (else CAKE's defaults), shaping at
 * the largest plan max of set in that direction (the allocation moves each
 * to its rate), at the subscriber size (sub_pool_cake_size).
 */
void sub_config_sched_params(const struct shaper_config *cfg, const struct sub_set *set,
			     enum shaper_dir d, struct sched_params *out);

#endif
