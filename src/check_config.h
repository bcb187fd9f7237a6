/*
 * shaperd --check-config: what a start with this configuration would set
 * up, printed for the operator, without EAL or any device.
 */
#ifndef SHAPERD_CHECK_CONFIG_H
#define SHAPERD_CHECK_CONFIG_H

#include <stdint.h>

#include "shaper/config.h"

/*
 * Each direction's mbuf pool (pool_mbufs, as dp_pool_size sized it) and,
 * with subscribers, the set, its memory and how it is spread over the
 * workers; then "CONFIG: configuration is valid". Returns the exit status:
 * 0, or 1 when the subscribers do not load (the reason logged).
 */
int check_config_report(const struct shaper_config *cfg, const uint32_t pool_mbufs[SHAPER_NUM_DIRS],
			const char *config_path);

#endif
