#include <string.h>

#include "shaper/watchdog.h"

void
dp_watchdog_init(struct dp_watchdog *wd, unsigned int n, uint64_t period_ns, uint64_t now)
{
	memset(wd, 0, sizeof(*wd));
	wd->n = n < SHAPER_MAX_WORKERS ? n : SHAPER_MAX_WORKERS;
	wd->period_ns = period_ns;
	wd->next_ns = now + period_ns;
	for (unsigned int i = 0; i < wd->n; i++)
		wd->moved_ns[i] = now;
	/* beat[] starts at 0: a worker that never turned is stalled at the first look */
}

enum dp_watchdog_verdict
dp_watchdog_check(struct dp_watchdog *wd, const uint64_t *beats, uint64_t now, unsigned int *worker,
		  uint64_t *since_ns)
{
	enum dp_watchdog_verdict v = DP_WD_ALIVE;

	if (now < wd->next_ns)
		return DP_WD_WAIT;
	wd->next_ns = now + wd->period_ns;
	for (unsigned int i = 0; i < wd->n; i++) {
		if (beats[i] != wd->beat[i]) {
			wd->beat[i] = beats[i];
			wd->moved_ns[i] = now;
			wd->stalled[i] = false;
			continue;
		}
		if (v == DP_WD_ALIVE) {
			*worker = i;
			*since_ns = now - wd->moved_ns[i];
		}
		wd->stalled[i] = true;
		v = DP_WD_STALLED;
	}
	return v;
}
