/*
 * One-way delay of the downstream path, from the TCP timestamps of the
 * packets coming in on the WAN port (for autorate). A packet's TSval
 * is its sender's clock when it left; its arrival here minus that clock is
 * the sender's clock offset plus the path's delay. The offset is fixed per
 * connection (random in Linux), so each flow keeps the lowest value seen
 * (over this and the last window) as its baseline, and the rise above it is
 * the queueing added on the way down: the modem's downstream buffer, not the
 * upstream one, which an RTT cannot tell apart. The lowest value creeps up
 * slowly with its age (OWD_CREEP_PPM), so a sender's clock that runs slow
 * against ours is followed, not taken for a growing queue. TSvals are taken as
 * milliseconds (Linux, the BSDs, macOS and Windows tick at 1 kHz); a flow
 * whose TSvals advance at another rate against our clock (Linux can send
 * microsecond timestamps) is found by its first half second and left out,
 * as it would read "no queue" on every packet. Fixed memory, no allocation
 * after owd_table_init.
 */
#ifndef SHAPER_OWD_H
#define SHAPER_OWD_H

#include <stdbool.h>
#include <stdint.h>

#define OWD_SLOTS     1024  /* direct-mapped by flow hash */
#define OWD_WINDOW_MS 10000 /* baseline: the lowest of this window and the last */
#define OWD_SETTLE_MS 500   /* a flow's rises count from this long after its first packet */
#define OWD_STALE_MS  2000  /* a slot without a packet this long goes to another flow */
/*
 * A flow's baseline rises by this many parts per million of the time since
 * its minimum was taken (0.2 ms in a second): a sender whose clock runs up
 * to this much slower than ours (an NTP-slewed server's against our
 * undisciplined TSC, commonly 50-100 ppm) is followed instead of reading as
 * a queue that grows 1 ms every 10 s; a real queue, which grows by
 * milliseconds in a round trip, is under-read by at most this much.
 */
#ifndef OWD_CREEP_PPM
#define OWD_CREEP_PPM 200
#endif
/* A TSval clock at 1 kHz advances 1 a ms: one outside 1/2..2 a ms is not taken as one. */
#define OWD_RATE_LO_PCT 50
#define OWD_RATE_HI_PCT 200

enum owd_slot_state {
	OWD_SETTLING = 0,  /* younger than OWD_SETTLE_MS: no rises yet */
	OWD_OK = 1,        /* its clock ticks at about 1 kHz */
	OWD_BAD_CLOCK = 2, /* another rate (a usec clock, 100 Hz): left out */
};

struct owd_slot {
	uint32_t tag;                     /* flow_hash | 1 (0: empty) */
	uint32_t min_cur;                 /* lowest arrival - TSval (us, mod 2^32) this window */
	uint32_t min_prev;                /* ... in the last window */
	uint32_t min_cur_ms, min_prev_ms; /* when each was taken (OWD_CREEP_PPM) */
	uint32_t win_start_ms;
	uint32_t first_ms, first_tsval; /* the flow's first packet here */
	uint32_t last_ms;               /* its latest */
	uint32_t state;                 /* enum owd_slot_state */
};

struct owd_counters {
	uint64_t collisions; /* packets of a flow whose slot another flow holds: not timed */
	uint64_t bad_clock;  /* flows whose TSval clock is not at 1 kHz: left out */
	uint64_t rises;      /* figures handed out (owd_observe >= 0) */
};

struct owd_table {
	struct owd_slot slot[OWD_SLOTS];
	struct owd_counters c;
};

void owd_table_init(struct owd_table *t);

/*
 * A packet of the flow flow_hash carrying tsval arrived at now (ns).
 * Returns its delay above the flow's baseline in ns, or -1 while the flow
 * has no settled baseline (its first OWD_SETTLE_MS), when its TSval clock
 * does not tick at about 1 kHz, or when its slot belongs to another flow
 * that is still sending (a slot is taken over after OWD_STALE_MS).
 */
int64_t owd_observe(struct owd_table *t, uint32_t flow_hash, uint32_t tsval, uint64_t now);

#endif
