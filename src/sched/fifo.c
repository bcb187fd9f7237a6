/*
 * fifo: one tail-drop queue with a packet and/or byte limit, optionally
 * paced at a rate. With a large limit it is the "bloated" baseline (a cable
 * modem's buffer) the CAKE results are compared against.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/rate.h"
#include "sched/sched_impl.h"

struct fifo {
	struct sched_params p;
	struct sched_pacer pacer;
	struct sh_pkt_list q;
	uint64_t bytes;
	uint64_t charged; /* against the byte limit: bytes, runts as SCHED_MIN_CHARGE */
	uint64_t mem, mem_max;
	uint64_t overlimits;
	uint64_t sojourn[SCHED_SOJOURN_BUCKETS];
};

static int
fifo_check(const struct sched_params *p, char *err, size_t errlen)
{
	if (p->mtu < SHAPER_MTU_MIN || p->mtu > SHAPER_MTU_MAX) {
		SCHED_ERR(err, errlen, "mtu %u out of range %u..%u", p->mtu, SHAPER_MTU_MIN,
			  SHAPER_MTU_MAX);
		return -EINVAL;
	}
	return 0;
}

static void *
fifo_create(const struct sched_params *p, const struct sched_alloc *a, char *err, size_t errlen)
{
	struct fifo *f;

	if (fifo_check(p, err, errlen) != 0)
		return NULL;
	f = sched_zalloc(a, sizeof(*f));
	if (f == NULL) {
		SCHED_ERR(err, errlen, "out of memory");
		return NULL;
	}
	f->p = *p;
	sched_pacer_set(&f->pacer, p);
	sh_pkt_list_init(&f->q);
	return f;
}

static void
fifo_destroy(void *impl, const struct sched_alloc *a)
{
	sched_mfree(a, impl);
}

static inline void
fifo_uncharge(struct fifo *f, const struct sh_pkt *pkt)
{
	f->bytes -= pkt->len;
	f->charged -= pkt->len > SCHED_MIN_CHARGE ? pkt->len : SCHED_MIN_CHARGE;
	f->mem -= pkt->mem;
}

static int
fifo_enqueue(void *impl, struct sh_pkt *pkt, uint64_t now, uint64_t stamp,
	     struct sh_pkt_list *dropped)
{
	struct fifo *f = impl;

	/* A runt counts as a minimum frame, so a byte limit bounds the mbufs held too. */
	uint32_t charge = pkt->len > SCHED_MIN_CHARGE ? pkt->len : SCHED_MIN_CHARGE;

	if ((f->p.fifo_limit_pkts != 0 && f->q.count >= f->p.fifo_limit_pkts) ||
	    (f->p.fifo_limit_bytes != 0 && f->charged + charge > f->p.fifo_limit_bytes)) {
		pkt->drop_reason = SHAPER_DROP_OVERFLOW;
		sh_pkt_list_push(dropped, pkt);
		return 1;
	}
	if (f->q.count == 0)
		sched_pacer_wake(&f->pacer, now);
	pkt->enq_ns = stamp;
	pkt->tin = 0;
	pkt->adj_len = sched_adjust_len(&f->p, pkt->len, pkt->net_off, NULL);
	sh_pkt_list_push(&f->q, pkt);
	f->bytes += pkt->len;
	f->charged += charge;
	f->mem += pkt->mem;
	if (f->mem > f->mem_max)
		f->mem_max = f->mem;
	return 0;
}

static struct sh_pkt *
fifo_dequeue(void *impl, uint64_t now, struct sh_pkt_list *dropped)
{
	struct fifo *f = impl;
	struct sh_pkt *pkt;

	(void)dropped;
	if (f->q.count == 0)
		return NULL;
	if (sched_pacer_hold(&f->pacer, now)) {
		f->overlimits++;
		return NULL;
	}
	pkt = sh_pkt_list_pop(&f->q);
	fifo_uncharge(f, pkt);
	sched_pacer_charge(&f->pacer, pkt->adj_len);
	sched_sojourn_add(f->sojourn, pkt->enq_ns, now);
	return pkt;
}

static uint64_t
fifo_next_time(const void *impl, uint64_t now)
{
	const struct fifo *f = impl;

	return sched_pacer_next_time(&f->pacer, f->q.count, now);
}

static int
fifo_update(void *impl, const struct sched_params *p, char *err, size_t errlen)
{
	struct fifo *f = impl;

	if (fifo_check(p, err, errlen) != 0)
		return -EINVAL;
	f->p = *p;
	sched_pacer_set(&f->pacer, p);
	return 0;
}

static void
fifo_set_rate(void *impl, uint64_t rate, uint64_t now)
{
	struct fifo *f = impl;

	sched_pacer_set_rate(&f->pacer, &f->p, rate, now);
}

static void
fifo_flush(void *impl, struct sh_pkt_list *out)
{
	struct fifo *f = impl;
	struct sh_pkt *pkt;

	while ((pkt = sh_pkt_list_pop(&f->q)) != NULL)
		sh_pkt_list_push(out, pkt);
	f->bytes = 0;
	f->charged = 0;
	f->mem = 0;
}

static uint64_t
fifo_max_packets(const struct sched_params *p, uint32_t truesize)
{
	(void)truesize;
	if (p->fifo_limit_pkts != 0)
		return p->fifo_limit_pkts;
	if (p->fifo_limit_bytes != 0)
		return p->fifo_limit_bytes / SCHED_MIN_CHARGE;
	return SCHED_UNBOUNDED;
}

static uint32_t
fifo_backlog_pkts(const void *impl)
{
	return ((const struct fifo *)impl)->q.count;
}

static uint64_t
fifo_lag_skipped_ns(const void *impl)
{
	return ((const struct fifo *)impl)->pacer.lag_skipped_ns;
}

static unsigned int
fifo_flush_some(void *impl, struct sh_pkt_list *out, unsigned int max)
{
	struct fifo *f = impl;
	unsigned int n;

	for (n = 0; n < max && f->q.count != 0; n++) {
		struct sh_pkt *pkt = sh_pkt_list_pop(&f->q);

		fifo_uncharge(f, pkt);
		sh_pkt_list_push(out, pkt);
	}
	return n;
}

static void
fifo_get_stats(const void *impl, struct sched_stats *st)
{
	const struct fifo *f = impl;

	st->backlog_pkts = f->q.count;
	st->backlog_bytes = f->bytes;
	st->overlimits = f->overlimits;
	st->lag_skips = f->pacer.lag_skips;
	st->lag_skipped_ns = f->pacer.lag_skipped_ns;
	memcpy(st->sojourn, f->sojourn, sizeof(st->sojourn));
	st->memory_used = f->mem_max;
	st->memory_limit = f->p.fifo_limit_bytes;
	st->capacity_estimate = f->p.rate;
	st->tin_count = 0;
}

static void
fifo_reset_stats(void *impl)
{
	struct fifo *f = impl;

	f->overlimits = 0;
	f->pacer.lag_skips = f->pacer.lag_skipped_ns = 0;
	memset(f->sojourn, 0, sizeof(f->sojourn));
	f->mem_max = f->mem;
}

const struct sched_ops sched_fifo_ops = {
	.name = "fifo",
	.create = fifo_create,
	.destroy = fifo_destroy,
	.enqueue = fifo_enqueue,
	.dequeue = fifo_dequeue,
	.next_time = fifo_next_time,
	.update = fifo_update,
	.set_rate = fifo_set_rate,
	.flush = fifo_flush,
	.get_stats = fifo_get_stats,
	.reset_stats = fifo_reset_stats,
	.backlog_pkts = fifo_backlog_pkts,
	.lag_skipped_ns = fifo_lag_skipped_ns,
	.flush_some = fifo_flush_some,
	.max_packets = fifo_max_packets,
};
