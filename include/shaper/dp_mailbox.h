/*
 * Control thread to worker (src/dataplane/control_backend.c): the seqlock
 * snapshots a worker publishes and the one-slot mailbox through which the
 * control thread posts requests that the owning worker applies between
 * bursts. No locks on the worker's side.
 */
#ifndef SHAPER_DP_MAILBOX_H
#define SHAPER_DP_MAILBOX_H

#include <stdbool.h>
#include <stdint.h>

#include "shaper/control.h"
#include "shaper/emulate.h"
#include "shaper/sched.h"

struct dp_dir;
struct sub_sched_change;

/*
 * What the worker publishes for the control thread every few ms and after
 * every change: a seqlock (odd seq = being written) so readers never stop it.
 */
struct dp_snapshot {
	uint32_t seq;
	uint64_t time_ns;
	struct ctl_dir_counters c;
	struct sched_params params;
	struct sched_stats st;
};

/* Control -> worker requests, posted in the direction's mailbox. */
enum dp_msg_type {
	DP_MSG_UPDATE,  /* sched_update with params */
	DP_MSG_SWAP,    /* replace the scheduler (new discipline): queued packets move over */
	DP_MSG_RESET,   /* zero the counters */
	DP_MSG_FLOWS,   /* copy the facts of every queued flow */
	DP_MSG_SUBS,    /* swap in a change of the subscriber set (subscriber_sched.h) */
	DP_MSG_EMULATE, /* the delay line's delay, jitter and loss (emu_set_path) */
};

/*
 * A message owns everything it points to (dp_msg_free releases it all): the
 * scheduler of a SWAP is the new one until the worker installs it, nothing
 * while the worker moves the backlog (the direction holds the old one), and
 * the old one, empty, in the answer; so whoever frees the message frees the
 * right one. SWAP and FLOWS are served a slice per turn; the worker keeps
 * the message until it answers.
 */
struct dp_msg {
	enum dp_msg_type type;
	uint64_t gen; /* the mailbox generation it was posted under */
	struct sched_params params;
	struct sched *sched;           /* SWAP: the new one in, the old one back out */
	struct sched_flow_fact *facts; /* FLOWS: fact_cap of them, filled by the worker */
	unsigned int fact_cap;
	struct sub_sched_change *subs_change; /* SUBS: the new state in, the old one out */
	struct emu_params emu;                /* EMULATE: delay, jitter and loss */
	uint32_t cursor;                      /* FLOWS: the walk's place (sched_flow_facts) */
	int rc;                               /* result: 0 / -errno, or the number of facts */
	char err[256];
};

/*
 * A direction's control mailbox: one request slot. The state word holds a
 * generation (bits 8..63, one per posted request) and a state (bits 0..7);
 * every transition is a compare-and-swap of the whole word, so a caller can
 * only ever act on the request it posted itself, never on an older answer.
 *   FREE -> POSTING -> POSTED                 control posts a request
 *   POSTED -> TAKEN -> DONE -> FREE           worker serves, caller collects
 *   POSTED -> FREE                            caller times out first: withdrawn
 *   TAKEN -> ABANDONED -> ORPHANED -> FREE    caller times out while the worker
 *                                             works; the worker answers anyway
 *                                             and the next caller (or
 *                                             dp_dir_control_free) frees it
 * The worker's side is two atomic operations, no lock, no allocation.
 */
enum dp_mbox_state {
	DP_MBOX_FREE,
	DP_MBOX_POSTING,
	DP_MBOX_POSTED,
	DP_MBOX_TAKEN,
	DP_MBOX_DONE,
	DP_MBOX_ABANDONED,
	DP_MBOX_ORPHANED,
};

struct dp_mailbox {
	uint64_t state;     /* gen << 8 | enum dp_mbox_state */
	struct dp_msg *msg; /* written by the poster before POSTED */
};

#define DP_CALL_TIMEOUT_MS 2000 /* how long the control thread waits for an answer */

/*
 * The cold part of a shard of a direction: what the control thread writes
 * (the mailbox) or reads (the snapshots), in a block of its own so that
 * its writes never land on a line the worker's hot path uses.
 */
struct dp_dir_ctl {
	struct dp_mailbox mbox;   /* control requests */
	struct dp_msg *busy;      /* a request served over several turns, or NULL */
	struct dp_snapshot *snap; /* published every DP_SNAPSHOT_NS and after every change */
	uint64_t next_snap_ns;
};

/* Create the direction's mailbox and snapshot; 0 or -errno. */
int dp_dir_control_init(struct dp_dir *d);
void dp_dir_control_free(struct dp_dir *d);

/* Read a consistent snapshot (control thread); 0 or -EAGAIN if none yet. */
int dp_snapshot_read(const struct dp_dir *d, struct dp_snapshot *out);

/*
 * Post *mp and wait up to timeout_ms for the worker's answer (control
 * thread). Returns 0 (answered: m->rc holds the result), -EBUSY (an earlier
 * request is still with the worker; nothing posted) or -ETIMEDOUT. On
 * return *mp is NULL when the mailbox kept the message (the worker took it
 * and has not answered: it will be freed once it has), else still the
 * caller's to dp_msg_free. A timed-out request the worker never took is
 * withdrawn and not applied.
 */
int dp_dir_call(struct dp_dir *d, struct dp_msg **mp, unsigned int timeout_ms);

/*
 * Why a change posted with dp_dir_call did not take (rc != 0, its result or
 * m->rc), into err: m NULL means the worker took it but did not answer in
 * time, so it will still apply it.
 */
void dp_call_error(int rc, const struct dp_msg *m, char *err, size_t errlen);

/*
 * Whether d's mailbox can take a request now (control thread): an answer
 * nobody collected is freed on the way.
 */
bool dp_dir_mailbox_free(struct dp_dir *d);

/* Free a message and everything it owns (NULL is fine). */
void dp_msg_free(struct dp_msg *m);

/* Worker side: the posted request, now taken, or NULL. Lock-free. */
struct dp_msg *dp_mailbox_take(struct dp_dir *d);
/* Worker side: hand back the answer to a request dp_mailbox_take returned. */
void dp_mailbox_answer(struct dp_dir *d, struct dp_msg *m);

/*
 * Serve one request, or its next slice (worker side, between bursts): call
 * once per turn with the same message until it returns true, then answer.
 * A slice is bounded: SCHED_FACTS_SLICE queues of a FLOWS walk, or
 * SCHED_MOVE_SLICE packets of a SWAP's backlog.
 */
bool dp_dir_handle_msg(struct dp_dir *d, struct dp_msg *m, uint64_t now);

/*
 * The worker's control turn: serve a slice of the request in progress (or
 * take the next one), answer it once complete, publish the snapshot when due.
 */
void dp_control_turn(struct dp_dir *d, uint64_t now);

#endif
