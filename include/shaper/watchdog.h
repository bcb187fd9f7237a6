/*
 * The service watchdog's health rule: systemd is told the daemon is alive
 * only while every worker is still turning (its heartbeat counter moved
 * since the last look), so a worker stuck in a loop or starved gets the
 * service restarted, not just a main thread that still answers.
 * Plain C, time passed in; shaperd feeds it and sends the notifications.
 */
#ifndef SHAPER_WATCHDOG_H
#define SHAPER_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>

#include "shaper/config.h"

struct dp_watchdog {
	unsigned int n;                        /* workers watched */
	uint64_t period_ns;                    /* how often to look (half systemd's WatchdogSec) */
	uint64_t next_ns;                      /* the next look */
	uint64_t beat[SHAPER_MAX_WORKERS];     /* heartbeats at the last look */
	uint64_t moved_ns[SHAPER_MAX_WORKERS]; /* when each heartbeat last moved */
	bool stalled[SHAPER_MAX_WORKERS];      /* reported stalled, not yet recovered */
};

enum dp_watchdog_verdict {
	DP_WD_WAIT,    /* not time to look yet */
	DP_WD_ALIVE,   /* every worker turned: ping systemd */
	DP_WD_STALLED, /* a worker has not turned since the last look: withhold the ping */
};

void dp_watchdog_init(struct dp_watchdog *wd, unsigned int n, uint64_t period_ns, uint64_t now);

/*
 * Look at the workers' heartbeats if a period has passed. On DP_WD_STALLED,
 * *worker is the first stalled one and *since_ns how long its heartbeat has
 * stood still (as far as this rule can tell).
 */
enum dp_watchdog_verdict dp_watchdog_check(struct dp_watchdog *wd, const uint64_t *beats,
					   uint64_t now, unsigned int *worker, uint64_t *since_ns);

#endif
