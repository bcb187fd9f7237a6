/*
 * The scheduler seam: picks the discipline's operations and keeps the
 * counters every discipline shares (enqueued, dequeued, drops by reason), so
 * the accounting identity enqueued = dequeued + dropped + backlog can be
 * checked against the discipline's own backlog in every test.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched_impl.h"

struct sched {
	const struct sched_ops *ops;
	void *impl;
	struct sched_params params;
	uint64_t enqueued_pkts, enqueued_bytes;
	uint64_t dequeued_pkts, dequeued_bytes;
	uint64_t dropped[SHAPER_DROP_MAX];
};

static const char *const drop_names[] = {
#define SHAPER_DROP_NAME(id, name, help) name,
	SHAPER_DROP_REASONS(SHAPER_DROP_NAME)
#undef SHAPER_DROP_NAME
};

static const char *const drop_helps[] = {
#define SHAPER_DROP_HELP(id, name, help) help,
	SHAPER_DROP_REASONS(SHAPER_DROP_HELP)
#undef SHAPER_DROP_HELP
};

const char *
shaper_drop_name(enum shaper_drop_reason r)
{
	return (unsigned int)r < SHAPER_DROP_MAX ? drop_names[r] : "unknown";
}

const char *
shaper_drop_help(enum shaper_drop_reason r)
{
	return (unsigned int)r < SHAPER_DROP_MAX ? drop_helps[r] : "unknown";
}

void
sched_params_default(struct sched_params *p, enum sched_discipline d)
{
	memset(p, 0, sizeof(*p));
	p->discipline = d;
	p->mtu = 1514;
	p->seed = 0x5eed5eed5eedULL;
	p->lag_limit_ns = SCHED_LAG_AUTO;
	p->diffserv = SCHED_DIFFSERV3;
	p->isolation = SCHED_TRIPLE_ISOLATE;
	p->rtt_us = 100000;
	p->target_us = 5000;
	p->ecn = true;
	p->fifo_limit_pkts = 1000; /* like a txqueuelen of 1000 */
	p->fqc_flows = 1024;
	p->fqc_quantum = 1514;
	p->fqc_limit = 10240;
	p->fqc_memory_limit = 32u << 20;
	p->fqc_target_us = 5000;
	p->fqc_interval_us = 100000;
	p->fqc_drop_batch = 64;
}

static const struct sched_ops *
ops_for(enum sched_discipline d)
{
	switch (d) {
	case SCHED_DISC_FIFO:
		return &sched_fifo_ops;
	case SCHED_DISC_FQ_CODEL:
		return &sched_fq_codel_ops;
	case SCHED_DISC_CAKE:
		return &sched_cake_ops;
	}
	return NULL;
}

struct sched *
sched_create(const struct sched_params *p, char *err, size_t errlen)
{
	const struct sched_ops *ops = ops_for(p->discipline);
	struct sched *s;

	if (ops == NULL) {
		SCHED_ERR(err, errlen, "unknown discipline %d", (int)p->discipline);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		SCHED_ERR(err, errlen, "out of memory");
		return NULL;
	}
	s->ops = ops;
	s->params = *p;
	s->impl = ops->create(p, err, errlen);
	if (s->impl == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

void
sched_free(struct sched *s)
{
	if (s == NULL)
		return;
	s->ops->destroy(s->impl);
	free(s);
}

/* Count the drops appended to the list since old_tail. */
static inline void
count_new_drops(struct sched *s, const struct sh_pkt_list *dropped, struct sh_pkt *old_tail)
{
	struct sh_pkt *d = old_tail != NULL ? old_tail->next : dropped->head;

	for (; d != NULL; d = d->next)
		s->dropped[d->drop_reason < SHAPER_DROP_MAX ? d->drop_reason : SHAPER_DROP_AQM]++;
}

unsigned int
sched_enqueue_burst(struct sched *s, struct sh_pkt *const *pkts, unsigned int n, uint64_t now,
		    struct sh_pkt_list *dropped)
{
	int (*enqueue)(void *, struct sh_pkt *, uint64_t, struct sh_pkt_list *) = s->ops->enqueue;
	struct sh_pkt *old_tail = dropped->tail;
	void *impl = s->impl;
	uint64_t bytes = 0;
	unsigned int i, self = 0;

	/* One walk of the new drops and one counter update per burst. */
	for (i = 0; i < n; i++) {
		bytes += pkts[i]->len;
		self += (unsigned int)enqueue(impl, pkts[i], now, dropped);
	}
	s->enqueued_pkts += n;
	s->enqueued_bytes += bytes;
	if (dropped->tail != old_tail)
		count_new_drops(s, dropped, old_tail);
	return self;
}

unsigned int
sched_dequeue_burst(struct sched *s, struct sh_pkt **out, unsigned int max, uint64_t now,
		    struct sh_pkt_list *dropped)
{
	struct sh_pkt *(*dequeue)(void *, uint64_t, struct sh_pkt_list *) = s->ops->dequeue;
	struct sh_pkt *old_tail = dropped->tail;
	void *impl = s->impl;
	uint64_t bytes = 0;
	unsigned int n;

	for (n = 0; n < max; n++) {
		struct sh_pkt *p = dequeue(impl, now, dropped);

		if (p == NULL)
			break;
		bytes += p->len;
		out[n] = p;
	}
	s->dequeued_pkts += n;
	s->dequeued_bytes += bytes;
	if (dropped->tail != old_tail)
		count_new_drops(s, dropped, old_tail);
	return n;
}

/* The one-packet forms are bursts of one: one place counts and walks drops. */
int
sched_enqueue(struct sched *s, struct sh_pkt *pkt, uint64_t now, struct sh_pkt_list *dropped)
{
	return (int)sched_enqueue_burst(s, &pkt, 1, now, dropped);
}

struct sh_pkt *
sched_dequeue(struct sched *s, uint64_t now, struct sh_pkt_list *dropped)
{
	struct sh_pkt *p;

	return sched_dequeue_burst(s, &p, 1, now, dropped) == 1 ? p : NULL;
}

uint64_t
sched_next_time(const struct sched *s, uint64_t now)
{
	return s->ops->next_time(s->impl, now);
}

int
sched_update(struct sched *s, const struct sched_params *p, char *err, size_t errlen)
{
	int rc;

	if (p->discipline != s->params.discipline) {
		SCHED_ERR(err, errlen, "changing the discipline needs a new scheduler");
		return -EINVAL;
	}
	rc = s->ops->update(s->impl, p, err, errlen);
	if (rc == 0)
		s->params = *p;
	return rc;
}

void
sched_flush(struct sched *s, struct sh_pkt_list *out)
{
	struct sh_pkt *old_tail = out->tail;
	struct sh_pkt *d;

	s->ops->flush(s->impl, out);
	/* Flushed packets leave the scheduler; the caller decides their fate. */
	for (d = old_tail != NULL ? old_tail->next : out->head; d != NULL; d = d->next) {
		s->dequeued_pkts++;
		s->dequeued_bytes += d->len;
	}
}

void
sched_get_stats(const struct sched *s, struct sched_stats *st)
{
	memset(st, 0, sizeof(*st));
	s->ops->get_stats(s->impl, st);
	st->enqueued_pkts = s->enqueued_pkts;
	st->enqueued_bytes = s->enqueued_bytes;
	st->dequeued_pkts = s->dequeued_pkts;
	st->dequeued_bytes = s->dequeued_bytes;
	memcpy(st->dropped, s->dropped, sizeof(st->dropped));
	for (uint32_t t = 0; t < st->tin_count && t < SCHED_MAX_TINS; t++)
		for (unsigned int b = 0; b < SCHED_SOJOURN_BUCKETS; b++)
			st->sojourn[b] += st->tins[t].sojourn[b];
}

void
sched_reset_stats(struct sched *s)
{
	s->enqueued_pkts = s->enqueued_bytes = 0;
	s->dequeued_pkts = s->dequeued_bytes = 0;
	memset(s->dropped, 0, sizeof(s->dropped));
	s->ops->reset_stats(s->impl);
}

const struct sched_params *
sched_get_params(const struct sched *s)
{
	return &s->params;
}

int
sched_top_flows(const struct sched *s, struct sched_flow_info *out, unsigned int max)
{
	if (s->ops->top_flows == NULL || max == 0)
		return 0;
	return s->ops->top_flows(s->impl, out, max);
}
