/*
 * An executable reference model of CAKE, written from
 * Linux's sch_cake and RFC 8290 (not from src/sched/cake.c): plain
 * and slow on purpose (explicit per-flow packet lists, linear scans, 128-bit
 * arithmetic), so that tests/sim/test_cake_model.c can run it beside the
 * project's sched_* in lockstep and compare every packet, drop, next_time
 * and counter. Where the project differs from sch_cake on purpose
 * (docs/ARCHITECTURE.md), the model follows the project and says so.
 *
 * The project's l4s step and nqb map (not in sch_cake) are modelled from
 * their description in include/shaper/sched.h.
 *
 * Not modelled: the ACK filter. Live updates of every parameter are
 * (rate, rtt, target, overhead, memlimit, ecn, ingress, wash, isolation
 * and diffserv mode).
 */
#ifndef SHAPER_TEST_CAKE_MODEL_H
#define SHAPER_TEST_CAKE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "shaper/sched.h"

/* What the model knows of a packet: what the classifier put in sh_pkt. */
struct cm_pkt {
	uint32_t id;
	uint32_t len, net_off, mem;
	uint32_t flow_hash, src_hash, dst_hash;
	uint8_t dscp;
	uint8_t ecn;   /* the two ECN bits; the model sets 3 (CE) when it marks */
	bool markable; /* an IP packet (CE can be written) */
	/* Set by the model. */
	uint64_t enq;
	uint32_t adj;
	uint8_t tin; /* internal tin index */
	bool l4s;    /* with l4s: judged an L4S packet at enqueue */
	struct cm_pkt *next;
};

struct cm_drop {
	uint32_t id;
	enum shaper_drop_reason reason;
};

#define CM_MAX_DROPS 4096

/* Drops made by one call, in order. */
struct cm_drops {
	struct cm_drop d[CM_MAX_DROPS];
	uint32_t n;
};

struct cake_model;

struct cake_model *cm_new(const struct sched_params *p);
void cm_free(struct cake_model *m);

/* A live update (the project's rules: sched_update). */
void cm_update(struct cake_model *m, const struct sched_params *p);

/*
 * Enqueue pkt at now. The reference leaves the choice among equally fat
 * queues open (sch_cake's cake_drop()): hint lists the packet ids the implementation dropped
 * for overflow, in order, and the model takes a hinted head when it is one
 * of the fattest (and its own first fattest otherwise). Returns 1 if pkt
 * itself was dropped.
 */
int cm_enqueue(struct cake_model *m, struct cm_pkt *pkt, uint64_t now, const uint32_t *hint,
	       uint32_t nhint, struct cm_drops *drops);

/* The next packet at now, or NULL; AQM drops go to drops. */
struct cm_pkt *cm_dequeue(struct cake_model *m, uint64_t now, struct cm_drops *drops);

/* As sched_next_time. */
uint64_t cm_next_time(const struct cake_model *m, uint64_t now);

/* Tins no longer in the mode that still drain (after a diffserv change). */
uint32_t cm_retired_tins(const struct cake_model *m);

/* The discipline's part of sched_stats (no enqueued/dequeued/dropped totals). */
void cm_stats(const struct cake_model *m, struct sched_stats *st);

#endif
