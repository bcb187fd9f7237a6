/*
 * One-way delay of the downstream path, from the TCP timestamps of the
 * packets coming in on the WAN port (for autorate). A packet's TSval
 * is its sender's clock when it left; its arrival here minus that clock is
 * the sender's clock offset plus the path's delay. The offset is fixed per
 * connection (random in Linux), so each flow keeps the lowest value seen
 * (over this and the last window) as its baseline, and the rise above it is
 * the queueing added on the way down: the modem's downstream buffer, not the
 * upstream one, which an RTT cannot tell apart. TSvals are taken as
 * milliseconds (Linux, the BSDs, macOS and Windows tick at 1 kHz); a sender
 * whose clock runs at another rate drifts out of its window and is ignored
 * by the interval's minimum over all flows. Fixed memory, no allocation
 * after owd_table_init.
 */
#ifndef SHAPER_OWD_H
#define SHAPER_OWD_H

#include <stdbool.h>
#include <stdint.h>

#define OWD_SLOTS     1024  /* direct-mapped by flow hash; a collision restarts the slot */
#define OWD_WINDOW_MS 10000 /* baseline: the lowest of this window and the last */

struct owd_slot {
	uint32_t tag;      /* flow_hash | 1 (0: empty) */
	uint32_t min_cur;  /* lowest arrival - TSval (us, mod 2^32) this window */
	uint32_t min_prev; /* ... in the last window */
	uint32_t win_start_ms;
};

struct owd_table {
	struct owd_slot slot[OWD_SLOTS];
};

void owd_table_init(struct owd_table *t);

/*
 * A packet of the flow flow_hash carrying tsval arrived at now (ns).
 * Returns its delay above the flow's baseline in ns, or -1 while the flow
 * has no baseline yet (its first packet here).
 */
int64_t owd_observe(struct owd_table *t, uint32_t flow_hash, uint32_t tsval, uint64_t now);

#endif
