/*
 * Private to src/sched: the operations every discipline provides. The
 * wrapper in sched.c does what all share (counting, drop reasons, stats
 * assembly) so a discipline only queues, releases and reports its state.
 */
#ifndef SHAPER_SCHED_IMPL_H
#define SHAPER_SCHED_IMPL_H

#include <stddef.h>
#include <stdlib.h>

#include "shaper/sched.h"

struct sched_ops {
	const char *name;
	/* Validate p and allocate the discipline's state (from a: sched_zalloc). */
	void *(*create)(const struct sched_params *p, const struct sched_alloc *a, char *err,
			size_t errlen);
	void (*destroy)(void *impl, const struct sched_alloc *a);
	/*
	 * As sched_enqueue; every dropped packet has drop_reason set. The
	 * packet's enq_ns becomes stamp (now, or its original time if it moves
	 * from another scheduler); everything else uses now.
	 */
	int (*enqueue)(void *impl, struct sh_pkt *pkt, uint64_t now, uint64_t stamp,
		       struct sh_pkt_list *dropped);
	struct sh_pkt *(*dequeue)(void *impl, uint64_t now, struct sh_pkt_list *dropped);
	uint64_t (*next_time)(const void *impl, uint64_t now);
	int (*update)(void *impl, const struct sched_params *p, char *err, size_t errlen);
	void (*flush)(void *impl, struct sh_pkt_list *out);
	/* As sched_set_rate: the shaping rate alone, rate != 0 and params shaped. */
	void (*set_rate)(void *impl, uint64_t rate, uint64_t now);
	/* Fill the discipline's fields of st (backlog, tins, memory...). */
	void (*get_stats)(const void *impl, struct sched_stats *st);
	void (*reset_stats)(void *impl);
	/* Packets queued. */
	uint32_t (*backlog_pkts)(const void *impl);
	/* As sched_lag_skipped_ns. */
	uint64_t (*lag_skipped_ns)(const void *impl);
	/* As sched_max_packets (p is valid). */
	uint64_t (*max_packets)(const struct sched_params *p, uint32_t truesize);
	/* As sched_flush_some. */
	unsigned int (*flush_some)(void *impl, struct sh_pkt_list *out, unsigned int max);
	/* Optional: as sched_flow_facts (NULL = the discipline has no flows to show). */
	unsigned int (*flow_facts)(const void *impl, uint32_t *cursor, unsigned int max_slots,
				   uint64_t now, struct sched_flow_fact *out, unsigned int room);
	/*
	 * Optional: make an empty impl what create(p) would return, in place
	 * (0 or -EINVAL with err). Without it sched_reinit creates a new one.
	 */
	int (*reinit)(void *impl, const struct sched_params *p, char *err, size_t errlen);
	/*
	 * Optional: n calls of enqueue in one (each packet's stamp as sched.c's
	 * burst loop computes it), returning the sum of their results. Without
	 * it sched.c calls enqueue for each packet.
	 */
	unsigned int (*enqueue_burst)(void *impl, struct sh_pkt *const *pkts, unsigned int n,
				      uint64_t now, bool stamped, struct sh_pkt_list *dropped);
	/*
	 * Optional: step (0 to SCHED_PREFETCH_ENQUEUE_STEPS - 2) of sched_prefetch_enqueue
	 * for the discipline's own state. NULL: nothing to prefetch.
	 */
	void (*prefetch_enqueue)(const void *impl, const struct sh_pkt *pkt, unsigned int step);
	/* Optional: the same for sched_prefetch_dequeue. */
	void (*prefetch_dequeue)(const void *impl, uint64_t now, unsigned int step);
};

extern const struct sched_ops sched_fifo_ops;
extern const struct sched_ops sched_fq_codel_ops;
extern const struct sched_ops sched_cake_ops;

/* Fill a fact's header fields from a flow's oldest packet (bounds-checked). */
void sched_fact_from_head(struct sched_flow_fact *f, const struct sh_pkt *head, uint64_t now);

/* Zeroed memory from a, or calloc without one. */
static inline void *
sched_zalloc(const struct sched_alloc *a, size_t size)
{
	return a != NULL ? a->zalloc(size, a->ctx) : calloc(1, size);
}

static inline void
sched_mfree(const struct sched_alloc *a, void *p)
{
	if (p == NULL)
		return;
	if (a != NULL)
		a->free(p, a->ctx);
	else
		free(p);
}

/* Helper for validation messages. */
#define SCHED_ERR(err, errlen, ...)                                                                \
	do {                                                                                       \
		if ((err) != NULL && (errlen) > 0)                                                 \
			snprintf((err), (errlen), __VA_ARGS__);                                    \
	} while (0)

#endif
