/*
 * fq_codel: the discipline Linux ships by default, for A/B tests against
 * CAKE (Linux's sch_fq_codel.c, RFC 8290). Packets hash onto `flows` queues
 * (hash * flows >> 32, collisions share); a DRR scheduler with a quantum in
 * raw bytes serves new flows before old ones; each queue runs CoDel at
 * dequeue. Overflow (packet limit or buffer-memory limit) head-drops a batch
 * from the fattest queue.
 *
 * Unlike the kernel's fq_codel it can also pace its output at params.rate
 * with the same time-based, no-burst-after-idle shaper as fifo, so "shaped
 * fq_codel" can be compared with CAKE on one testbed.
 *
 * With params.l4s it also gives L4S packets (RFC 9331) CAKE's shallow step:
 * ECT(1) packets, and CE ones of flows not last seen classic, are CE-marked
 * at dequeue once they waited past l4s_step, whatever CoDel's state. Off
 * (the default) nothing of it runs and fq_codel is Linux's.
 *
 * Time is plain nanoseconds in 64 bits. The drop schedule is Linux's:
 * 1/sqrt(count) is kept in 16 bits and moved by one Newton step whenever
 * count changes (so the second drop of an episode comes after interval/2,
 * not interval/sqrt(2)), and a re-entry with count = delta takes one step
 * from the old value. Where Linux's step would overflow (count jumped far,
 * e.g. after overflow drops were added to it) the exact value is used.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shaper/classify.h"
#include "sched/l4s.h"
#include "sched/rate.h"
#include "sched/sched_impl.h"

#define FQC_MAX_FLOWS             65536
#define FQC_MIN_QUANTUM           256
/* Bounds the CoDel drop loop of one dequeue, like recent Linux. */
#define FQC_MAX_DROPS_PER_DEQUEUE 256

/* Flow flags. */
#define FQC_FLOW_CLASSIC 1u /* l4s: its latest packet not CE was ECT(0) or Not-ECT */

enum fqc_list {
	FQC_LIST_NONE = 0,
	FQC_LIST_NEW,
	FQC_LIST_OLD,
};

/* CoDel state of one queue. */
struct fqc_codel {
	uint64_t first_above_time; /* 0 = sojourn not above target */
	uint64_t drop_next;
	uint32_t count;
	uint32_t lastcount;
	uint16_t rec_inv_sqrt; /* Q0.16, ~1/sqrt(count), as Linux keeps it */
	bool dropping;
};

struct fqc_flow {
	struct sh_pkt_list pkts; /* the queued packets; pkts.count is the packet count */
	struct fqc_flow *next;   /* link in new_flows or old_flows */
	uint64_t backlog;        /* bytes */
	int32_t deficit;
	uint8_t list;     /* enum fqc_list */
	uint8_t flags;    /* FQC_FLOW_* */
	uint32_t classic; /* l4s: queued packets not L4S (the queue is mixed if both) */
	struct fqc_codel cv;
};

struct fqc_flow_list {
	struct fqc_flow *head, *tail;
	uint32_t len;
};

/* Parameters converted once to the units the fast path uses. */
struct fqc_cfg {
	uint64_t target_ns;
	uint64_t interval_ns;
	uint64_t ce_threshold_ns; /* 0 = off */
	uint64_t l4s_step_ns;     /* with l4s: the step, at least 1.5 MTU times at the rate */
	uint64_t memory_limit;
	uint32_t limit;
	uint32_t quantum;
	uint32_t drop_batch;
	uint32_t mtu;
	bool ecn;
	bool l4s;
};

struct fq_codel {
	struct sched_params p;
	struct fqc_cfg c;
	struct sched_pacer pacer;
	const struct sched_alloc *alloc; /* where flows and this live */
	struct fqc_flow *flows;
	uint32_t nflows;
	struct fqc_flow_list new_flows, old_flows;

	uint32_t qlen;
	uint64_t backlog; /* bytes */
	uint64_t mem, mem_max;
	uint64_t sojourn[SCHED_SOJOURN_BUCKETS];
	uint64_t sparse_sojourn[SCHED_SOJOURN_BUCKETS]; /* served from new_flows */

	/* counters, reset by reset_stats */
	uint64_t overlimits;
	uint64_t drop_overlimit;  /* overflow drops, all causes */
	uint64_t drop_overmemory; /* overflow drops while over memory_limit */
	uint64_t aqm_drops;
	uint64_t ecn_mark;     /* CoDel marks */
	uint64_t ce_mark;      /* ce_threshold marks */
	uint64_t ect1_packets; /* arrived ECT(1), counted with l4s on */
	uint64_t step_marks;   /* L4S packets marked at the step (in neither of the above) */
	uint64_t new_flow_count;
	uint64_t accepted_pkts, accepted_bytes;
	uint32_t maxpacket;
	/* sojourn EWMAs in ns (UINT64_MAX base = no sample yet) */
	uint64_t avg_delay, peak_delay, base_delay;
};

/* ---------------------------------------------------------------------- */
/* Configuration                                                           */
/* ---------------------------------------------------------------------- */

static int
fqc_check(const struct sched_params *p, char *err, size_t errlen)
{
	if (p->mtu < SHAPER_MTU_MIN || p->mtu > SHAPER_MTU_MAX) {
		SCHED_ERR(err, errlen, "mtu %u out of range %u..%u", p->mtu, SHAPER_MTU_MIN,
			  SHAPER_MTU_MAX);
		return -EINVAL;
	}
	if (p->fqc_flows < 1 || p->fqc_flows > FQC_MAX_FLOWS) {
		SCHED_ERR(err, errlen, "fq_codel flows %u out of range 1..%u", p->fqc_flows,
			  FQC_MAX_FLOWS);
		return -EINVAL;
	}
	if (p->fqc_quantum < FQC_MIN_QUANTUM || p->fqc_quantum > (1u << 20)) {
		SCHED_ERR(err, errlen, "fq_codel quantum %u out of range %u..%u", p->fqc_quantum,
			  FQC_MIN_QUANTUM, 1u << 20);
		return -EINVAL;
	}
	if (p->fqc_limit < 1) {
		SCHED_ERR(err, errlen, "fq_codel limit must be at least 1 packet");
		return -EINVAL;
	}
	if (p->fqc_memory_limit < 1) {
		SCHED_ERR(err, errlen, "fq_codel memory_limit must be at least 1 byte");
		return -EINVAL;
	}
	if (p->fqc_target_us < 1 || p->fqc_interval_us < 1) {
		SCHED_ERR(err, errlen, "fq_codel target and interval must be at least 1 us");
		return -EINVAL;
	}
	if (p->fqc_drop_batch < 1) {
		SCHED_ERR(err, errlen, "fq_codel drop_batch must be at least 1");
		return -EINVAL;
	}
	if (p->l4s && (p->l4s_step_us == 0 || p->l4s_step_us > 1000000)) {
		SCHED_ERR(err, errlen, "l4s step %u us out of range 1..1000000", p->l4s_step_us);
		return -EINVAL;
	}
	return 0;
}

/*
 * The step at the pacer's rate: l4s_step, but never below 1.5 MTU times
 * (CAKE's floor), so that on a slow link a packet behind one full-size
 * packet is not marked for that alone. Unshaped, the step as given.
 */
static void
fqc_set_step(struct fq_codel *q)
{
	uint64_t floor = sched_rate_ns(&q->pacer.rate, q->c.mtu) * 3 / 2;

	q->c.l4s_step_ns = (uint64_t)q->p.l4s_step_us * 1000;
	if (q->c.l4s_step_ns < floor)
		q->c.l4s_step_ns = floor;
}

static void
fqc_apply(struct fq_codel *q, const struct sched_params *p)
{
	q->p = *p;
	q->c.target_ns = (uint64_t)p->fqc_target_us * 1000;
	q->c.interval_ns = (uint64_t)p->fqc_interval_us * 1000;
	q->c.ce_threshold_ns = (uint64_t)p->fqc_ce_threshold_us * 1000;
	q->c.memory_limit = p->fqc_memory_limit;
	q->c.limit = p->fqc_limit;
	q->c.quantum = p->fqc_quantum;
	q->c.drop_batch = p->fqc_drop_batch;
	q->c.mtu = p->mtu;
	q->c.ecn = p->ecn;
	q->c.l4s = p->l4s;
	sched_pacer_set(&q->pacer, p);
	fqc_set_step(q);
}

static void *
fqc_create(const struct sched_params *p, const struct sched_alloc *a, char *err, size_t errlen)
{
	struct fq_codel *q;

	if (fqc_check(p, err, errlen) != 0)
		return NULL;
	q = sched_zalloc(a, sizeof(*q));
	if (q != NULL) {
		q->alloc = a;
		q->flows = sched_zalloc(a, (size_t)p->fqc_flows * sizeof(*q->flows));
	}
	if (q == NULL || q->flows == NULL) {
		sched_mfree(a, q);
		SCHED_ERR(err, errlen, "out of memory");
		return NULL;
	}
	q->nflows = p->fqc_flows;
	q->base_delay = UINT64_MAX;
	fqc_apply(q, p);
	return q;
}

static void
fqc_destroy(void *impl, const struct sched_alloc *a)
{
	struct fq_codel *q = impl;

	if (q == NULL)
		return;
	sched_mfree(a, q->flows);
	sched_mfree(a, q);
}

/* ---------------------------------------------------------------------- */
/* Lists and per-flow FIFOs                                                */
/* ---------------------------------------------------------------------- */

static inline void
fqc_list_append(struct fqc_flow_list *l, struct fqc_flow *f, uint8_t which)
{
	f->next = NULL;
	f->list = which;
	if (l->tail != NULL)
		l->tail->next = f;
	else
		l->head = f;
	l->tail = f;
	l->len++;
}

/* Flows only ever leave a list from its head. */
static inline struct fqc_flow *
fqc_list_pop(struct fqc_flow_list *l)
{
	struct fqc_flow *f = l->head;

	l->head = f->next;
	if (l->head == NULL)
		l->tail = NULL;
	l->len--;
	f->next = NULL;
	f->list = FQC_LIST_NONE;
	return f;
}

/* Remove the head packet of f and take it off every counter. */
static struct sh_pkt *
fqc_flow_pop(struct fq_codel *q, struct fqc_flow *f)
{
	struct sh_pkt *pkt = sh_pkt_list_pop(&f->pkts);

	if (pkt == NULL)
		return NULL;
	f->backlog -= pkt->len;
	q->backlog -= pkt->len;
	q->mem -= pkt->mem;
	q->qlen--;
	if (q->c.l4s && !(pkt->flags & SH_PKT_L4S))
		f->classic--;
	return pkt;
}

static inline void
fqc_drop(struct sh_pkt *pkt, enum shaper_drop_reason why, struct sh_pkt_list *dropped)
{
	pkt->drop_reason = (uint8_t)why;
	sh_pkt_list_push(dropped, pkt);
}

/* ---------------------------------------------------------------------- */
/* CoDel                                                                   */
/* ---------------------------------------------------------------------- */

/* floor(sqrt(x)) for 64-bit x, bit by bit (used only on count jumps). */
static uint64_t
fqc_isqrt(uint64_t x)
{
	uint64_t r = 0, bit = 1ULL << 62;

	while (bit > x)
		bit >>= 2;
	while (bit != 0) {
		if (x >= r + bit) {
			x -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
		bit >>= 2;
	}
	return r;
}

/* 1/sqrt(count) in Q0.16, computed exactly: 2^32 / sqrt(count * 2^32). */
static uint16_t
fqc_inv_sqrt_exact(uint32_t count)
{
	uint64_t v;

	if (count <= 1)
		return UINT16_MAX;
	v = (1ULL << 48) / fqc_isqrt((uint64_t)count << 32);
	return (uint16_t)(v >> 16);
}

/*
 * One Newton step y' = y * (3 - count * y^2) / 2 after count changed, as
 * Linux's CoDel does it: y widened from 16 to 32 fraction bits, the result
 * truncated back to 16. From 1.0 at count 2 it gives 0.5 (not 0.707): the
 * schedule is Linux's on purpose, since that is the fq_codel users run.
 */
static void
fqc_newton_step(struct fqc_codel *cv)
{
	uint64_t y = (uint64_t)cv->rec_inv_sqrt << 16;
	uint64_t y2 = (y * y) >> 32;
	uint64_t three = 3ULL << 32;
	uint64_t v;

	if (y2 != 0 && (uint64_t)cv->count >= three / y2) {
		/* Linux's arithmetic would wrap here: take the exact value. */
		cv->rec_inv_sqrt = fqc_inv_sqrt_exact(cv->count);
		return;
	}
	v = three - (uint64_t)cv->count * y2;
	v >>= 2; /* so that v * y fits 64 bits */
	v = (v * y) >> 31;
	cv->rec_inv_sqrt = (uint16_t)(v >> 16);
}

/* t + interval / sqrt(count), without a 128-bit multiply. */
static inline uint64_t
fqc_control_law(const struct fq_codel *q, const struct fqc_codel *cv, uint64_t t)
{
	uint64_t iv = q->c.interval_ns, y = (uint64_t)cv->rec_inv_sqrt << 16;

	return t + (iv >> 32) * y + (((iv & 0xffffffffULL) * y) >> 32);
}

/*
 * The sojourn test of CoDel: true once pkt's sojourn has stayed at or above
 * target (with more than an MTU queued in the whole qdisc) for an interval.
 */
static bool
fqc_should_drop(struct fq_codel *q, struct fqc_codel *cv, const struct sh_pkt *pkt, uint64_t now)
{
	uint64_t sojourn;

	if (pkt == NULL) {
		cv->first_above_time = 0;
		return false;
	}
	sojourn = now > pkt->enq_ns ? now - pkt->enq_ns : 0;
	if (sojourn < q->c.target_ns || q->backlog <= q->c.mtu) {
		cv->first_above_time = 0;
		return false;
	}
	if (cv->first_above_time == 0) {
		cv->first_above_time = now + q->c.interval_ns;
		return false;
	}
	return now >= cv->first_above_time;
}

/* Mark pkt CE if ECN is on and it is ECN-capable; true if it now is CE. */
static inline bool
fqc_mark(struct fq_codel *q, struct sh_pkt *pkt)
{
	return q->c.ecn && classify_set_ce(pkt) == 1;
}

/*
 * l4s: CE-mark an L4S packet that waited past the step (RFC 9331's
 * immediate, shallow signal), whatever CoDel's state; CoDel still judged it
 * first (marked: CoDel marked it just now), so an ECT(1) flow that ignores
 * its marks builds a queue and meets CoDel like any unresponsive flow.
 * True if it marked (the step's mark is the packet's only one counted).
 *
 * A queue holding classic packets too (a tunnel whose outer header carries
 * its inner flows' ECN fields, RFC 6040, or two flows in one hash slot) is
 * one FIFO whose delay its classic traffic sets at CoDel's target: a step
 * would mark every L4S packet in it and starve the L4S flow. As CAKE does
 * (RFC 9331 section 5.4.2), while a queue holds any classic packet its L4S
 * packets get CoDel's marks only, and the step applies again once none is
 * queued.
 */
static inline bool
fqc_l4s_step(struct fq_codel *q, const struct fqc_flow *f, struct sh_pkt *pkt, uint64_t now,
	     bool marked)
{
	if (f->classic != 0 || marked || now <= pkt->enq_ns ||
	    now - pkt->enq_ns <= q->c.l4s_step_ns || classify_set_ce(pkt) != 1)
		return false;
	q->step_marks++;
	return true;
}

/* Dequeue through CoDel: head packet of f to deliver, or NULL if f ran dry. */
static struct sh_pkt *
fqc_codel_dequeue(struct fq_codel *q, struct fqc_flow *f, uint64_t now, struct sh_pkt_list *dropped)
{
	struct fqc_codel *cv = &f->cv;
	struct sh_pkt *pkt = fqc_flow_pop(q, f);
	unsigned int drops = 0;
	bool drop, marked = false;

	if (pkt == NULL) {
		cv->dropping = false;
		return NULL;
	}
	drop = fqc_should_drop(q, cv, pkt, now);
	if (cv->dropping) {
		if (!drop) {
			cv->dropping = false;
		} else {
			while (cv->dropping && now >= cv->drop_next &&
			       drops < FQC_MAX_DROPS_PER_DEQUEUE) {
				if (cv->count < UINT32_MAX)
					cv->count++;
				fqc_newton_step(cv);
				if (fqc_mark(q, pkt)) {
					q->ecn_mark++;
					marked = true;
					cv->drop_next = fqc_control_law(q, cv, cv->drop_next);
					break;
				}
				fqc_drop(pkt, SHAPER_DROP_AQM, dropped);
				q->aqm_drops++;
				drops++;
				pkt = fqc_flow_pop(q, f);
				if (!fqc_should_drop(q, cv, pkt, now))
					cv->dropping = false; /* also ends the loop if pkt is NULL
							       */
				else
					cv->drop_next = fqc_control_law(q, cv, cv->drop_next);
			}
		}
	} else if (drop) {
		uint32_t delta;

		if (fqc_mark(q, pkt)) {
			q->ecn_mark++;
			marked = true;
		} else {
			fqc_drop(pkt, SHAPER_DROP_AQM, dropped);
			q->aqm_drops++;
			pkt = fqc_flow_pop(q, f);
			(void)fqc_should_drop(q, cv, pkt, now);
		}
		cv->dropping = true;
		/*
		 * Coming back soon after the last episode: resume near the old
		 * drop rate instead of starting over at one drop per interval.
		 */
		delta = cv->count - cv->lastcount;
		if (delta > 1 &&
		    (int64_t)(now - cv->drop_next) < (int64_t)(16 * q->c.interval_ns)) {
			cv->count = delta;
			fqc_newton_step(cv); /* from the old value; later steps correct it */
		} else {
			cv->count = 1;
			cv->rec_inv_sqrt = UINT16_MAX;
		}
		cv->lastcount = cv->count;
		cv->drop_next = fqc_control_law(q, cv, now);
	}
	if (pkt != NULL && q->c.l4s && (pkt->flags & SH_PKT_L4S) &&
	    fqc_l4s_step(q, f, pkt, now, marked))
		return pkt;
	if (pkt != NULL && q->c.ce_threshold_ns != 0 && now > pkt->enq_ns &&
	    now - pkt->enq_ns > q->c.ce_threshold_ns && classify_set_ce(pkt) == 1)
		q->ce_mark++;
	return pkt;
}

/* ---------------------------------------------------------------------- */
/* Enqueue, overflow, dequeue                                              */
/* ---------------------------------------------------------------------- */

/*
 * Head-drop from the flow with the largest byte backlog: up to drop_batch
 * packets or until half its backlog is gone. Only flows on a list can hold
 * packets, so scanning the two lists is enough. Returns the flow hit.
 */
static struct fqc_flow *
fqc_drop_fattest(struct fq_codel *q, struct sh_pkt_list *dropped, uint32_t *ndrop)
{
	struct fqc_flow *fat = NULL, *f;
	uint64_t max = 0, threshold, gone = 0;
	uint32_t i = 0;

	for (f = q->new_flows.head; f != NULL; f = f->next)
		if (f->backlog > max) {
			max = f->backlog;
			fat = f;
		}
	for (f = q->old_flows.head; f != NULL; f = f->next)
		if (f->backlog > max) {
			max = f->backlog;
			fat = f;
		}
	*ndrop = 0;
	if (fat == NULL)
		return NULL;
	threshold = max >> 1;
	do {
		struct sh_pkt *pkt = fqc_flow_pop(q, fat);

		if (pkt == NULL)
			break;
		gone += pkt->len;
		fqc_drop(pkt, SHAPER_DROP_OVERFLOW, dropped);
		i++;
	} while (i < q->c.drop_batch && gone < threshold);
	/* The flow is clearly over its share: make CoDel harsher on it. */
	fat->cv.count += i;
	*ndrop = i;
	return fat;
}

static int
fqc_enqueue(void *impl, struct sh_pkt *pkt, uint64_t now, uint64_t stamp,
	    struct sh_pkt_list *dropped)
{
	struct fq_codel *q = impl;
	struct sh_pkt *old_tail = dropped->tail;
	struct fqc_flow *f;
	uint32_t idx, ndrop;
	bool over_mem;

	idx = (uint32_t)(((uint64_t)pkt->flow_hash * q->nflows) >> 32);
	f = &q->flows[idx];
	if (q->qlen == 0)
		sched_pacer_wake(&q->pacer, now);
	pkt->enq_ns = stamp;
	pkt->queue = (uint16_t)idx;
	pkt->tin = 0;
	pkt->adj_len = sched_adjust_len(&q->p, pkt->len, pkt->net_off, NULL);
	if (q->c.l4s)
		l4s_classify(pkt, &f->flags, FQC_FLOW_CLASSIC, &f->classic, &q->ect1_packets);
	sh_pkt_list_push(&f->pkts, pkt);
	f->backlog += pkt->len;
	q->backlog += pkt->len;
	q->mem += pkt->mem;
	q->qlen++;
	q->accepted_pkts++;
	q->accepted_bytes += pkt->len;
	if (pkt->len > q->maxpacket)
		q->maxpacket = pkt->len;
	if (q->mem > q->mem_max)
		q->mem_max = q->mem;
	if (f->list == FQC_LIST_NONE) {
		fqc_list_append(&q->new_flows, f, FQC_LIST_NEW);
		f->deficit = (int32_t)q->c.quantum;
		q->new_flow_count++;
	}
	over_mem = q->mem > q->c.memory_limit;
	if (q->qlen <= q->c.limit && !over_mem)
		return 0;

	fqc_drop_fattest(q, dropped, &ndrop);
	q->drop_overlimit += ndrop;
	if (over_mem)
		q->drop_overmemory += ndrop;
	/* Was the new packet itself among the victims? */
	for (struct sh_pkt *d = sh_pkt_list_after(dropped, old_tail); d != NULL; d = d->next)
		if (d == pkt)
			return 1;
	return 0;
}

/* Sojourn EWMAs like CAKE's tin stats: avg 1/256; peak/base 1/4 toward the sample. */
static void
fqc_delay_stats(struct fq_codel *q, uint64_t sojourn)
{
	if (q->base_delay == UINT64_MAX) {
		q->avg_delay = q->peak_delay = q->base_delay = sojourn;
		return;
	}
	q->avg_delay = q->avg_delay - (q->avg_delay >> 8) + (sojourn >> 8);
	if (sojourn > q->peak_delay)
		q->peak_delay = q->peak_delay - (q->peak_delay >> 2) + (sojourn >> 2);
	else
		q->peak_delay = q->peak_delay - (q->peak_delay >> 8) + (sojourn >> 8);
	if (sojourn < q->base_delay)
		q->base_delay = q->base_delay - (q->base_delay >> 2) + (sojourn >> 2);
	else
		q->base_delay = q->base_delay - (q->base_delay >> 8) + (sojourn >> 8);
}

static struct sh_pkt *
fqc_dequeue(void *impl, uint64_t now, struct sh_pkt_list *dropped)
{
	struct fq_codel *q = impl;
	struct fqc_flow_list *l;
	struct fqc_flow *f;
	struct sh_pkt *pkt;

	if (q->qlen == 0)
		return NULL;
	if (sched_pacer_hold(&q->pacer, now)) {
		q->overlimits++;
		return NULL;
	}
	for (;;) {
		l = q->new_flows.head != NULL ? &q->new_flows : &q->old_flows;
		f = l->head;
		if (f == NULL)
			return NULL;
		if (f->deficit <= 0) {
			f->deficit += (int32_t)q->c.quantum;
			fqc_list_pop(l);
			fqc_list_append(&q->old_flows, f, FQC_LIST_OLD);
			continue;
		}
		pkt = fqc_codel_dequeue(q, f, now, dropped);
		if (pkt != NULL)
			break;
		fqc_list_pop(l);
		/* An emptied new flow waits in old_flows so it cannot starve them. */
		if (l == &q->new_flows && q->old_flows.head != NULL)
			fqc_list_append(&q->old_flows, f, FQC_LIST_OLD);
		else
			f->flags = 0; /* gone: the next flow here has no history */
	}
	f->deficit -= (int32_t)pkt->len;
	sched_pacer_charge(&q->pacer, pkt->adj_len);
	fqc_delay_stats(q, now > pkt->enq_ns ? now - pkt->enq_ns : 0);
	if (l == &q->new_flows)
		q->sparse_sojourn[sched_sojourn_add(q->sojourn, pkt->enq_ns, now)]++;
	else
		sched_sojourn_add(q->sojourn, pkt->enq_ns, now);
	return pkt;
}

static uint64_t
fqc_next_time(const void *impl, uint64_t now)
{
	const struct fq_codel *q = impl;

	return sched_pacer_next_time(&q->pacer, q->qlen, now);
}

static void
fqc_set_rate(void *impl, uint64_t rate, uint64_t now)
{
	struct fq_codel *q = impl;

	sched_pacer_set_rate(&q->pacer, &q->p, rate, now);
	fqc_set_step(q);
}

/*
 * l4s switched: each queue's count of classic packets from the verdicts its
 * packets carry (0 with l4s off, where nothing keeps it), as a pop will
 * uncount them: packets queued while it was off count as classic.
 */
static void
fqc_l4s_recount(struct fq_codel *q, bool on)
{
	for (uint32_t i = 0; i < q->nflows; i++) {
		struct fqc_flow *f = &q->flows[i];

		f->classic = 0;
		for (const struct sh_pkt *p = f->pkts.head; on && p != NULL; p = p->next)
			if (!(p->flags & SH_PKT_L4S))
				f->classic++;
	}
}

static int
fqc_update(void *impl, const struct sched_params *p, char *err, size_t errlen)
{
	struct fq_codel *q = impl;

	if (fqc_check(p, err, errlen) != 0)
		return -EINVAL;
	if (p->fqc_flows != q->nflows) {
		struct fqc_flow *nf;

		if (q->qlen != 0) {
			SCHED_ERR(err, errlen,
				  "fq_codel flows can only change while the queue is empty (%u packets queued)",
				  q->qlen);
			return -EINVAL;
		}
		nf = sched_zalloc(q->alloc, (size_t)p->fqc_flows * sizeof(*nf));
		if (nf == NULL) {
			SCHED_ERR(err, errlen, "out of memory");
			return -EINVAL;
		}
		sched_mfree(q->alloc, q->flows);
		q->flows = nf;
		q->nflows = p->fqc_flows;
		memset(&q->new_flows, 0, sizeof(q->new_flows));
		memset(&q->old_flows, 0, sizeof(q->old_flows));
	} else if (p->l4s != q->p.l4s) {
		fqc_l4s_recount(q, p->l4s);
	}
	fqc_apply(q, p);
	return 0;
}

static void
fqc_flush(void *impl, struct sh_pkt_list *out)
{
	struct fq_codel *q = impl;
	struct fqc_flow_list *lists[2] = { &q->new_flows, &q->old_flows };
	struct sh_pkt *pkt;

	for (int i = 0; i < 2; i++) {
		while (lists[i]->head != NULL) {
			struct fqc_flow *f = fqc_list_pop(lists[i]);

			while ((pkt = fqc_flow_pop(q, f)) != NULL)
				sh_pkt_list_push(out, pkt);
			memset(&f->cv, 0, sizeof(f->cv));
			f->deficit = 0;
			f->flags = 0;
		}
	}
}

static uint32_t
fqc_backlog_pkts(const void *impl)
{
	return ((const struct fq_codel *)impl)->qlen;
}

static uint64_t
fqc_lag_skipped_ns(const void *impl)
{
	return ((const struct fq_codel *)impl)->pacer.lag_skipped_ns;
}

/* fqc_flush a slice at a time: the flow at the head of new, then old. */
static unsigned int
fqc_flush_some(void *impl, struct sh_pkt_list *out, unsigned int max)
{
	struct fq_codel *q = impl;
	struct fqc_flow_list *lists[2] = { &q->new_flows, &q->old_flows };
	struct sh_pkt *pkt;
	unsigned int n = 0;

	for (int i = 0; i < 2 && n < max; i++) {
		while (lists[i]->head != NULL && n < max) {
			struct fqc_flow *f = lists[i]->head;

			while (n < max && (pkt = fqc_flow_pop(q, f)) != NULL) {
				sh_pkt_list_push(out, pkt);
				n++;
			}
			if (f->pkts.head != NULL)
				break;
			fqc_list_pop(lists[i]);
			memset(&f->cv, 0, sizeof(f->cv));
			f->deficit = 0;
			f->flags = 0;
		}
	}
	return n;
}

/* Worker side of "flows": compact facts of up to max_slots flow slots. */
static unsigned int
fqc_flow_facts(const void *impl, uint32_t *cursor, unsigned int max_slots, uint64_t now,
	       struct sched_flow_fact *out, unsigned int room)
{
	const struct fq_codel *q = impl;
	uint32_t pos = *cursor;
	unsigned int n = 0, visits = 0;

	while (pos < q->nflows && visits < max_slots && n < room && q->qlen != 0) {
		const struct fqc_flow *f = &q->flows[pos];

		visits++;
		if (f->pkts.head != NULL) {
			struct sched_flow_fact *fi = &out[n++];

			fi->backlog_bytes = f->backlog;
			fi->packets = f->pkts.count;
			fi->queue = (uint16_t)pos;
			fi->tin = 0;
			sched_fact_from_head(fi, f->pkts.head, now);
		}
		pos++;
	}
	*cursor = pos >= q->nflows || n == room || q->qlen == 0 ? SCHED_FACTS_DONE : pos;
	return n;
}

static inline uint32_t
fqc_us(uint64_t ns)
{
	uint64_t us = ns / 1000;

	return us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

static void
fqc_get_stats(const void *impl, struct sched_stats *st)
{
	const struct fq_codel *q = impl;
	struct sched_tin_stats *t = &st->tins[0];

	st->backlog_pkts = q->qlen;
	st->backlog_bytes = q->backlog;
	st->overlimits = q->overlimits;
	st->lag_skips = q->pacer.lag_skips;
	st->lag_skipped_ns = q->pacer.lag_skipped_ns;
	st->ecn_marked = q->ecn_mark + q->ce_mark;
	st->memory_used = q->mem_max;
	st->memory_limit = q->c.memory_limit;
	st->capacity_estimate = q->p.rate;
	st->tin_count = 1;
	snprintf(t->name, sizeof(t->name), "fq_codel");
	t->threshold_rate = q->p.rate;
	t->target_us = q->p.fqc_target_us;
	t->interval_us = q->p.fqc_interval_us;
	if (q->base_delay != UINT64_MAX) {
		t->peak_delay_us = fqc_us(q->peak_delay);
		t->avg_delay_us = fqc_us(q->avg_delay);
		t->base_delay_us = fqc_us(q->base_delay);
	}
	t->sent_packets = q->accepted_pkts;
	t->sent_bytes = q->accepted_bytes;
	t->backlog_bytes = q->backlog;
	t->drops = q->aqm_drops + q->drop_overlimit;
	t->ecn_mark = q->ecn_mark + q->ce_mark;
	t->ect1_packets = q->ect1_packets;
	t->step_marks = q->step_marks;
	t->sparse_flows = q->new_flows.len;
	t->bulk_flows = q->old_flows.len;
	t->max_pkt_len = q->maxpacket;
	t->flow_quantum = q->c.quantum;
	memcpy(t->sojourn, q->sojourn, sizeof(t->sojourn));
	memcpy(t->sparse_sojourn, q->sparse_sojourn, sizeof(t->sparse_sojourn));
}

static void
fqc_reset_stats(void *impl)
{
	struct fq_codel *q = impl;

	q->overlimits = 0;
	q->pacer.lag_skips = q->pacer.lag_skipped_ns = 0;
	memset(q->sojourn, 0, sizeof(q->sojourn));
	memset(q->sparse_sojourn, 0, sizeof(q->sparse_sojourn));
	q->drop_overlimit = q->drop_overmemory = 0;
	q->aqm_drops = 0;
	q->ecn_mark = q->ce_mark = 0;
	q->ect1_packets = q->step_marks = 0;
	q->new_flow_count = 0;
	q->accepted_pkts = q->accepted_bytes = 0;
	q->maxpacket = 0;
	q->mem_max = q->mem;
	q->base_delay = UINT64_MAX;
	q->avg_delay = q->peak_delay = 0;
}

/* Drops run once qlen passes limit or memory passes memory_limit: one over at most. */
static uint64_t
fqc_max_packets(const struct sched_params *p, uint32_t truesize)
{
	uint64_t by_mem = p->fqc_memory_limit / truesize + 1;

	return by_mem < (uint64_t)p->fqc_limit + 1 ? by_mem : (uint64_t)p->fqc_limit + 1;
}

const struct sched_ops sched_fq_codel_ops = {
	.name = "fq_codel",
	.create = fqc_create,
	.destroy = fqc_destroy,
	.enqueue = fqc_enqueue,
	.dequeue = fqc_dequeue,
	.next_time = fqc_next_time,
	.update = fqc_update,
	.set_rate = fqc_set_rate,
	.flush = fqc_flush,
	.get_stats = fqc_get_stats,
	.reset_stats = fqc_reset_stats,
	.backlog_pkts = fqc_backlog_pkts,
	.lag_skipped_ns = fqc_lag_skipped_ns,
	.flush_some = fqc_flush_some,
	.max_packets = fqc_max_packets,
	.flow_facts = fqc_flow_facts,
};
