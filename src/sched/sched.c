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
#include "shaper/classify.h"

struct sched {
	/* What every enqueue and dequeue reads and writes, in one cache line. */
	const struct sched_ops *ops;
	void *impl;
	uint64_t enqueued_pkts, enqueued_bytes;
	uint64_t dequeued_pkts, dequeued_bytes;
	const struct sched_alloc *alloc; /* where it and its impl live (NULL: calloc) */
	uint64_t dropped[SHAPER_DROP_MAX];
	struct sched_params params;
};

static const char *const drop_names[] = {
#define SHAPER_DROP_NAME(id, name, help) name,
	SHAPER_DROP_REASONS(SHAPER_DROP_NAME)
#undef SHAPER_DROP_NAME
};

const char *
shaper_drop_name(enum shaper_drop_reason r)
{
	return (unsigned int)r < SHAPER_DROP_MAX ? drop_names[r] : "unknown";
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
	p->l4s_step_us = SCHED_L4S_STEP_US;
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
sched_create_on(const struct sched_params *p, const struct sched_alloc *a, char *err, size_t errlen)
{
	const struct sched_ops *ops = ops_for(p->discipline);
	struct sched *s;

	if (ops == NULL) {
		SCHED_ERR(err, errlen, "unknown discipline %d", (int)p->discipline);
		return NULL;
	}
	s = sched_zalloc(a, sizeof(*s));
	if (s == NULL) {
		SCHED_ERR(err, errlen, "out of memory");
		return NULL;
	}
	s->ops = ops;
	s->alloc = a;
	s->params = *p;
	s->impl = ops->create(p, a, err, errlen);
	if (s->impl == NULL) {
		sched_mfree(a, s);
		return NULL;
	}
	return s;
}

struct sched *
sched_create(const struct sched_params *p, char *err, size_t errlen)
{
	return sched_create_on(p, NULL, err, errlen);
}

void
sched_free(struct sched *s)
{
	if (s == NULL)
		return;
	s->ops->destroy(s->impl, s->alloc);
	sched_mfree(s->alloc, s);
}

/* stamped: keep each packet's enq_ns (a move) instead of stamping now. */
static inline unsigned int
enqueue_burst(struct sched *s, struct sh_pkt *const *pkts, unsigned int n, uint64_t now,
	      bool stamped, struct sh_pkt_list *dropped)
{
	int (*enqueue)(void *, struct sh_pkt *, uint64_t, uint64_t, struct sh_pkt_list *) =
			s->ops->enqueue;
	struct sh_pkt *old_tail = dropped->tail;
	void *impl = s->impl;
	uint64_t bytes = 0;
	unsigned int i, self = 0;

	/* One walk of the new drops and one counter update per burst. */
	if (s->ops->enqueue_burst != NULL) {
		for (i = 0; i < n; i++)
			bytes += pkts[i]->len;
		self = s->ops->enqueue_burst(impl, pkts, n, now, stamped, dropped);
	} else {
		for (i = 0; i < n; i++) {
			uint64_t stamp = stamped && pkts[i]->enq_ns < now ? pkts[i]->enq_ns : now;

			bytes += pkts[i]->len;
			self += (unsigned int)enqueue(impl, pkts[i], now, stamp, dropped);
		}
	}
	s->enqueued_pkts += n;
	s->enqueued_bytes += bytes;
	if (dropped->tail != old_tail)
		(void)sched_count_new_drops(dropped, old_tail, s->dropped);
	return self;
}

unsigned int
sched_enqueue_burst(struct sched *s, struct sh_pkt *const *pkts, unsigned int n, uint64_t now,
		    struct sh_pkt_list *dropped)
{
	return enqueue_burst(s, pkts, n, now, false, dropped);
}

unsigned int
sched_enqueue_stamped_burst(struct sched *s, struct sh_pkt *const *pkts, unsigned int n,
			    uint64_t now, struct sh_pkt_list *dropped)
{
	return enqueue_burst(s, pkts, n, now, true, dropped);
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
		(void)sched_count_new_drops(dropped, old_tail, s->dropped);
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

/* Weighted mean of two shards' figures by their packet counts. */
static uint32_t
merge_mean(uint32_t a, uint64_t na, uint32_t b, uint64_t nb)
{
	if (na + nb == 0)
		return a > b ? a : b;
	return (uint32_t)(((double)a * (double)na + (double)b * (double)nb) / (double)(na + nb) +
			  0.5);
}

#define MERGE_MAX(x, y) ((x) = (x) > (y) ? (x) : (y))
#define MERGE_MIN(x, y) ((x) = (x) < (y) ? (x) : (y))

static void
merge_tin(struct sched_tin_stats *a, const struct sched_tin_stats *b)
{
	unsigned int i;

	a->avg_delay_us = merge_mean(a->avg_delay_us, a->sent_packets, b->avg_delay_us,
				     b->sent_packets);
	if (b->sent_packets != 0)
		a->base_delay_us = a->sent_packets != 0
						   ? merge_mean(a->base_delay_us, a->sent_packets,
								b->base_delay_us, b->sent_packets)
						   : b->base_delay_us;
	a->threshold_rate += b->threshold_rate;
	MERGE_MAX(a->peak_delay_us, b->peak_delay_us);
	a->sent_packets += b->sent_packets;
	a->sent_bytes += b->sent_bytes;
	a->backlog_bytes += b->backlog_bytes;
	a->way_indirect_hits += b->way_indirect_hits;
	a->way_misses += b->way_misses;
	a->way_collisions += b->way_collisions;
	a->drops += b->drops;
	a->ecn_mark += b->ecn_mark;
	a->ack_drops += b->ack_drops;
	a->ect1_packets += b->ect1_packets;
	a->step_marks += b->step_marks;
	a->sparse_flows += b->sparse_flows;
	a->bulk_flows += b->bulk_flows;
	a->unresponsive_flows += b->unresponsive_flows;
	MERGE_MAX(a->max_pkt_len, b->max_pkt_len);
	for (i = 0; i < SCHED_SOJOURN_BUCKETS; i++) {
		a->sojourn[i] += b->sojourn[i];
		a->sparse_sojourn[i] += b->sparse_sojourn[i];
	}
}

void
sched_stats_merge(struct sched_stats *into, const struct sched_stats *from)
{
	unsigned int i;

	into->avg_hdr_offset = merge_mean(into->avg_hdr_offset, into->dequeued_pkts,
					  from->avg_hdr_offset, from->dequeued_pkts);
	into->enqueued_pkts += from->enqueued_pkts;
	into->enqueued_bytes += from->enqueued_bytes;
	into->dequeued_pkts += from->dequeued_pkts;
	into->dequeued_bytes += from->dequeued_bytes;
	for (i = 0; i < SHAPER_DROP_MAX; i++)
		into->dropped[i] += from->dropped[i];
	into->backlog_pkts += from->backlog_pkts;
	into->backlog_bytes += from->backlog_bytes;
	into->overlimits += from->overlimits;
	into->lag_skips += from->lag_skips;
	into->lag_skipped_ns += from->lag_skipped_ns;
	into->ecn_marked += from->ecn_marked;
	into->memory_used += from->memory_used;
	into->memory_limit += from->memory_limit;
	MERGE_MIN(into->min_network_size, from->min_network_size);
	MERGE_MAX(into->max_network_size, from->max_network_size);
	MERGE_MIN(into->min_adj_size, from->min_adj_size);
	MERGE_MAX(into->max_adj_size, from->max_adj_size);
	for (i = 0; i < into->tin_count && i < from->tin_count; i++)
		merge_tin(&into->tins[i], &from->tins[i]);
	for (i = 0; i < SCHED_SOJOURN_BUCKETS; i++) {
		into->sojourn[i] += from->sojourn[i];
		into->sparse_sojourn[i] += from->sparse_sojourn[i];
	}
}

int
sched_set_rate(struct sched *s, uint64_t rate, uint64_t now)
{
	if (s->params.rate == 0 || rate == 0)
		return -EINVAL;
	s->ops->set_rate(s->impl, rate, now);
	return 0;
}

uint64_t
sched_enqueued_bytes(const struct sched *s)
{
	return s->enqueued_bytes;
}

void
sched_flush(struct sched *s, struct sh_pkt_list *out)
{
	struct sh_pkt *old_tail = out->tail;
	struct sh_pkt *d;

	s->ops->flush(s->impl, out);
	/* Flushed packets leave the scheduler; the caller decides their fate. */
	for (d = sh_pkt_list_after(out, old_tail); d != NULL; d = d->next) {
		s->dequeued_pkts++;
		s->dequeued_bytes += d->len;
	}
}

int
sched_reinit(struct sched *s, const struct sched_params *p, char *err, size_t errlen)
{
	if (p->discipline != s->params.discipline) {
		SCHED_ERR(err, errlen, "changing the discipline needs a new scheduler");
		return -EINVAL;
	}
	if (s->ops->backlog_pkts(s->impl) != 0) {
		SCHED_ERR(err, errlen, "the scheduler is not empty");
		return -EBUSY;
	}
	if (s->ops->reinit != NULL) {
		int rc = s->ops->reinit(s->impl, p, err, errlen);

		if (rc != 0)
			return rc;
	} else {
		void *impl = s->ops->create(p, s->alloc, err, errlen);

		if (impl == NULL)
			return -EINVAL;
		s->ops->destroy(s->impl, s->alloc);
		s->impl = impl;
	}
	s->params = *p;
	s->enqueued_pkts = s->enqueued_bytes = 0;
	s->dequeued_pkts = s->dequeued_bytes = 0;
	memset(s->dropped, 0, sizeof(s->dropped));
	return 0;
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
		for (unsigned int b = 0; b < SCHED_SOJOURN_BUCKETS; b++) {
			st->sojourn[b] += st->tins[t].sojourn[b];
			st->sparse_sojourn[b] += st->tins[t].sparse_sojourn[b];
		}
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

uint32_t
sched_flow_slots(const struct sched_params *p)
{
	switch (p->discipline) {
	case SCHED_DISC_CAKE:
		return sched_cake_tins(p) * sched_cake_queues(p);
	case SCHED_DISC_FQ_CODEL:
		return p->fqc_flows;
	case SCHED_DISC_FIFO:
		break;
	}
	return 0;
}

unsigned int
sched_flow_facts(const struct sched *s, uint32_t *cursor, unsigned int max_slots, uint64_t now,
		 struct sched_flow_fact *out, unsigned int room)
{
	if (*cursor == SCHED_FACTS_DONE)
		return 0;
	if (s->ops->flow_facts == NULL || room == 0) {
		*cursor = SCHED_FACTS_DONE;
		return 0;
	}
	return s->ops->flow_facts(s->impl, cursor, max_slots, now, out, room);
}

void
sched_fact_from_head(struct sched_flow_fact *f, const struct sh_pkt *p, uint64_t now)
{
	const uint8_t *l3;

	f->sojourn_ns = now > p->enq_ns ? now - p->enq_ns : 0;
	f->l4_proto = p->l4_proto;
	f->family = 0;
	f->vlan = classify_vlan_key(p);
	f->sport = f->dport = 0;
	memset(f->src, 0, sizeof(f->src));
	memset(f->dst, 0, sizeof(f->dst));
	if (p->l3_off == SH_OFF_NONE)
		return;
	l3 = p->data + p->l3_off;
	if ((p->flags & SH_PKT_IPV4) && p->l3_off + 20u <= p->hdr_len) {
		f->family = 4;
		memcpy(f->src, l3 + 12, 4);
		memcpy(f->dst, l3 + 16, 4);
	} else if ((p->flags & SH_PKT_IPV6) && p->l3_off + 40u <= p->hdr_len) {
		f->family = 6;
		memcpy(f->src, l3 + 8, 16);
		memcpy(f->dst, l3 + 24, 16);
	}
	if ((p->flags & (SH_PKT_TCP | SH_PKT_UDP)) && p->l4_off != SH_OFF_NONE &&
	    p->l4_off + 4u <= p->hdr_len) {
		const uint8_t *l4 = p->data + p->l4_off;

		f->sport = (uint16_t)(l4[0] << 8 | l4[1]);
		f->dport = (uint16_t)(l4[2] << 8 | l4[3]);
	}
}

/*
 * Largest backlog first; ties in walk order. Facts are sorted by a merge
 * sort on an index-stable key so equal backlogs never swap.
 */
static void
facts_merge(struct sched_flow_fact *a, struct sched_flow_fact *tmp, unsigned int n)
{
	unsigned int h = n / 2, i = 0, j = h, k = 0;

	if (n < 2)
		return;
	facts_merge(a, tmp, h);
	facts_merge(a + h, tmp, n - h);
	while (i < h && j < n)
		tmp[k++] = a[j].backlog_bytes > a[i].backlog_bytes ? a[j++] : a[i++];
	while (i < h)
		tmp[k++] = a[i++];
	while (j < n)
		tmp[k++] = a[j++];
	memcpy(a, tmp, (size_t)n * sizeof(*a));
}

void
sched_flow_facts_sort(struct sched_flow_fact *f, unsigned int n)
{
	struct sched_flow_fact *tmp;

	if (n < 2)
		return;
	tmp = malloc((size_t)n * sizeof(*tmp));
	if (tmp != NULL) {
		facts_merge(f, tmp, n);
		free(tmp);
		return;
	}
	/* Out of memory: a stable insertion sort in place. */
	for (unsigned int i = 1; i < n; i++) {
		struct sched_flow_fact x = f[i];
		unsigned int j = i;

		for (; j > 0 && f[j - 1].backlog_bytes < x.backlog_bytes; j--)
			f[j] = f[j - 1];
		f[j] = x;
	}
}

uint64_t
sched_max_packets(const struct sched_params *p, uint32_t truesize)
{
	const struct sched_ops *ops = ops_for(p->discipline);

	return ops != NULL ? ops->max_packets(p, truesize > 0 ? truesize : 1) : SCHED_UNBOUNDED;
}

const char *
sched_limit_keys(const struct sched_params *p)
{
	switch (p->discipline) {
	case SCHED_DISC_FIFO:
		return "limit";
	case SCHED_DISC_FQ_CODEL:
		return "limit, memory_limit";
	case SCHED_DISC_CAKE:
		return "memlimit (or bandwidth, rtt)";
	}
	return "limit";
}

uint32_t
sched_backlog_pkts(const struct sched *s)
{
	return s->ops->backlog_pkts(s->impl);
}

uint64_t
sched_lag_skipped_ns(const struct sched *s)
{
	return s->ops->lag_skipped_ns(s->impl);
}

void
sched_prefetch_enqueue(const struct sched *s, const struct sh_pkt *pkt, unsigned int step)
{
	if (step == 0)
		__builtin_prefetch(s, 1); /* the ops, the impl and the counters */
	else if (s->ops->prefetch_enqueue != NULL)
		s->ops->prefetch_enqueue(s->impl, pkt, step - 1);
}

void
sched_prefetch_dequeue(const struct sched *s, uint64_t now, unsigned int step)
{
	if (step == 0)
		__builtin_prefetch(s, 1);
	else if (s->ops->prefetch_dequeue != NULL)
		s->ops->prefetch_dequeue(s->impl, now, step - 1);
}

unsigned int
sched_flush_some(struct sched *s, struct sh_pkt_list *out, unsigned int max)
{
	struct sh_pkt *old_tail = out->tail;
	unsigned int n = s->ops->flush_some(s->impl, out, max);

	/* As sched_flush: taken packets count as dequeued. */
	for (struct sh_pkt *d = sh_pkt_list_after(out, old_tail); d != NULL; d = d->next) {
		s->dequeued_pkts++;
		s->dequeued_bytes += d->len;
	}
	return n;
}

void
sched_move_begin(struct sched_move *mv, struct sched *from)
{
	mv->from = from;
	mv->arrived = 0;
	sh_pkt_list_init(&mv->staged);
}

void
sched_move_stage(struct sched_move *mv, struct sh_pkt *const *pkts, unsigned int n, uint64_t now,
		 struct sh_pkt_list *dropped)
{
	for (unsigned int i = 0; i < n; i++) {
		pkts[i]->enq_ns = now;
		if (mv->staged.count >= SCHED_MOVE_HELD_MAX) {
			pkts[i]->drop_reason = SHAPER_DROP_OVERFLOW;
			sh_pkt_list_push(dropped, pkts[i]);
			continue;
		}
		sh_pkt_list_push(&mv->staged, pkts[i]);
	}
	mv->arrived += n;
}

bool
sched_move_step(struct sched_move *mv, struct sched *to, unsigned int max, uint64_t now,
		struct sh_pkt_list *dropped)
{
	struct sh_pkt *batch[64];
	struct sh_pkt_list l;
	unsigned int moved = 0;

	if (mv->from == NULL)
		return true;
	/* Outpace the arrivals, or the held list never empties. */
	if (max < 2 * mv->arrived)
		max = 2 * mv->arrived;
	mv->arrived = 0;
	while (moved < max) {
		unsigned int want = max - moved, k = 0;
		struct sh_pkt *p;

		if (want > 64)
			want = 64;
		sh_pkt_list_init(&l);
		/* The old backlog first; arrivals only once all of it has moved. */
		if (sched_backlog_pkts(mv->from) != 0)
			sched_flush_some(mv->from, &l, want);
		else
			while (l.count < want && mv->staged.head != NULL)
				sh_pkt_list_push(&l, sh_pkt_list_pop(&mv->staged));
		if (l.count == 0)
			break; /* the bounded search found nothing this time: next turn */
		while ((p = sh_pkt_list_pop(&l)) != NULL)
			batch[k++] = p;
		sched_enqueue_stamped_burst(to, batch, k, now, dropped);
		moved += k;
	}
	return sched_backlog_pkts(mv->from) == 0 && mv->staged.head == NULL;
}

void
sched_move_flush(struct sched_move *mv, struct sh_pkt_list *out)
{
	struct sh_pkt *p;

	if (mv->from != NULL)
		sched_flush(mv->from, out);
	while ((p = sh_pkt_list_pop(&mv->staged)) != NULL)
		sh_pkt_list_push(out, p);
}
