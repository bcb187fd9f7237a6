/*
 * The worker's side of passive RTT and autorate: feeds the TCP packets of
 * each burst to the RTT table, WAN-side samples to autorate, applies
 * autorate's rate through sched_update (the path config.set takes), and
 * publishes histograms and interval figures in the snapshot. A direction's
 * packets complete the samples of one part of the path: echoes coming down
 * time the WAN side, echoes going up the LAN side.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_lcore.h>
#include <rte_ring.h>

#include "shaper/dataplane.h"
#include "shaper/share.h"

#define AR_RING_SIZE 4096 /* samples a follower may hand over between the leader's turns */

static inline enum rtt_dir
rtt_dir_of(enum shaper_dir d)
{
	return d == SHAPER_UP ? RTT_UP : RTT_DOWN;
}

static inline enum rtt_side
side_of(enum shaper_dir d)
{
	return d == SHAPER_DOWN ? RTT_SIDE_WAN : RTT_SIDE_LAN;
}

struct dp_rtt *
dp_rtt_create(const struct shaper_config *c)
{
	struct dp_rtt *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->table = rtt_table_new(DP_RTT_FLOWS);
	if (r->table == NULL) {
		free(r);
		return NULL;
	}
	if (c->autorate[SHAPER_UP].enabled || c->autorate[SHAPER_DOWN].enabled) {
		r->owd = malloc(sizeof(*r->owd));
		if (r->owd == NULL) {
			rtt_table_free(r->table);
			free(r);
			return NULL;
		}
		owd_table_init(r->owd);
	}
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		const struct shaper_autorate_config *ac = &c->autorate[d];
		struct autorate_params p;

		r->ar_on[d] = ac->enabled;
		if (ac->enabled)
			p = ac->tune;
		else
			autorate_params_default(&p, 0, 0);
		p.min_rate = ac->min_rate;
		p.max_rate = ac->max_rate;
		p.start_rate = ac->start_rate;
		p.after_modem = d == SHAPER_DOWN;
		autorate_init(&r->ar[d], &p);
	}
	return r;
}

void
dp_rtt_free(struct dp_rtt *r)
{
	if (r == NULL)
		return;
	rtt_table_free(r->table);
	free(r->owd);
	free(r);
}

void
dp_rtt_departed(struct dp_rtt *r, enum shaper_dir dir, struct sh_pkt **pkts, unsigned int n,
		uint64_t now)
{
	if (n != 0)
		rtt_departed(r->table, pkts, n, rtt_dir_of(dir), now);
}

/* A sample into this worker's controllers. */
static void
ar_feed(struct dp_rtt *r, const struct dp_ar_sample *x)
{
	if (x->kind == 1) {
		autorate_owd_sample(&r->ar[SHAPER_DOWN], x->a);
		return;
	}
	/* Both directions' queues beyond the WAN port show in the WAN side. */
	for (int d = 0; d < SHAPER_NUM_DIRS; d++)
		if (r->ar_on[d])
			autorate_sample(&r->ar[d], x->a, x->b);
}

/* A sample: to the leader's ring on a follower, else into our controllers. */
static void
ar_take(struct dp_rtt *r, const struct dp_ar_sample *x)
{
	if (r->group != NULL && r->shard != 0) {
		struct dp_ar_sample copy = *x; /* the ring's API takes no const */

		if (rte_ring_sp_enqueue_elem(r->group->ring[r->shard], &copy, sizeof(copy)) != 0)
			__atomic_fetch_add(&r->group->lost, 1, __ATOMIC_RELAXED);
		return;
	}
	ar_feed(r, x);
}

/* The leader: every follower's samples since its last turn. */
static void
ar_drain(struct dp_rtt *r)
{
	struct dp_ar_sample x[64];

	for (unsigned int i = 1; i < r->group->n; i++) {
		unsigned int got;

		do {
			got = rte_ring_sc_dequeue_burst_elem(r->group->ring[i], x, sizeof(x[0]), 64,
							     NULL);
			for (unsigned int k = 0; k < got; k++)
				ar_feed(r, &x[k]);
		} while (got == 64);
	}
}

struct dp_ar_group *
dp_rtt_group_create(struct dp_rtt **r, struct dp_dir *const *up, struct dp_dir *const *down,
		    unsigned int n, char *err, size_t errlen)
{
	struct dp_ar_group *g = calloc(1, sizeof(*g));

	if (g == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	g->n = n;
	for (unsigned int i = 0; i < n; i++) {
		g->dir[SHAPER_UP][i] = up[i];
		g->dir[SHAPER_DOWN][i] = down[i];
		if (i > 0) {
			char name[RTE_RING_NAMESIZE];

			snprintf(name, sizeof(name), "shaper_ar%u", i);
			g->ring[i] = rte_ring_create_elem(name, sizeof(struct dp_ar_sample),
							  AR_RING_SIZE, (int)rte_socket_id(),
							  RING_F_SP_ENQ | RING_F_SC_DEQ);
			if (g->ring[i] == NULL) {
				snprintf(err, errlen, "cannot make autorate's sample ring %u: %s",
					 i, rte_strerror(rte_errno));
				dp_rtt_group_free(g);
				return NULL;
			}
		}
	}
	for (int d = 0; d < SHAPER_NUM_DIRS; d++)
		atomic_store(&g->rate[d], r[0]->ar[d].rate);
	for (unsigned int i = 0; i < n; i++) {
		r[i]->group = g;
		r[i]->shard = i;
		for (int d = 0; d < SHAPER_NUM_DIRS; d++)
			r[i]->applied[d] = r[0]->ar[d].rate;
	}
	return g;
}

void
dp_rtt_group_free(struct dp_ar_group *g)
{
	if (g == NULL)
		return;
	for (unsigned int i = 0; i < g->n; i++)
		rte_ring_free(g->ring[i]);
	free(g);
}

unsigned int
dp_rtt_burst(struct dp_rtt *r, enum shaper_dir dir, struct sh_pkt **pkts, unsigned int n,
	     uint64_t now, struct rtt_sample *smp)
{
	struct rtt_tsval ts[SHAPER_BURST_MAX]; /* n <= SHAPER_BURST_MAX: one rx burst */
	unsigned int m, nts;

	assert(n <= SHAPER_BURST_MAX);
	if (!r->ar_on[SHAPER_UP] && !r->ar_on[SHAPER_DOWN])
		return rtt_observe_burst(r->table, pkts, n, rtt_dir_of(dir), now, smp);
	if (dir == SHAPER_DOWN) {
		/* The TSvals of the RTT tap's one parse also time the one-way delay. */
		m = rtt_observe_burst_ts(r->table, pkts, n, RTT_DOWN, now, smp, ts, &nts);
		for (unsigned int i = 0; i < nts; i++) {
			int64_t rise = owd_observe(r->owd, ts[i].flow_hash, ts[i].tsval, now);

			if (rise >= 0)
				ar_take(r,
					&(struct dp_ar_sample){ .kind = 1, .a = (uint64_t)rise });
		}
	} else {
		m = rtt_observe_burst(r->table, pkts, n, RTT_UP, now, smp);
	}
	for (unsigned int i = 0; i < m; i++) {
		const struct rtt_sample *s = &smp[i];
		uint64_t rtt = s->rtt_ns, gap = (uint64_t)s->gap_us * 1000;

		if (s->side != RTT_SIDE_WAN || !s->established)
			continue;
		/*
		 * Less the flow's own spacing, which a receiver acknowledging every
		 * second segment may have added: at a few Mbit/s shared by several
		 * uploads that is tens of ms, and cutting for it spaces them wider.
		 */
		if (rtt > s->base_ns)
			rtt = rtt - s->base_ns > gap ? rtt - gap : s->base_ns;
		ar_take(r, &(struct dp_ar_sample){ .kind = 0, .a = rtt, .b = s->base_ns });
	}
	return m;
}

/* Worker: one decision into the log's ring, or counted as lost if the reader is behind. */
static void
log_push(struct dp_ar_log *l, const struct autorate *a, uint64_t from, uint64_t now)
{
	uint32_t head = l->head, tail = __atomic_load_n(&l->tail, __ATOMIC_ACQUIRE);
	struct dp_ar_event *e;

	if (head - tail >= DP_AR_EVENTS) {
		l->lost++;
		return;
	}
	e = &l->ev[head % DP_AR_EVENTS];
	*e = (struct dp_ar_event){ .time_ns = now,
				   .from = from,
				   .to = a->rate,
				   .delay_ns = a->last_delay_ns,
				   .own_ns = a->last_own_ns,
				   .line = a->through_rate,
				   .path_ns = a->path.ns,
				   .why = a->last_why,
				   .rule = a->last_rule };
	__atomic_store_n(&l->head, head + 1, __ATOMIC_RELEASE);
}

void
dp_rtt_log_decisions(struct dp_rtt *r)
{
	static struct shaper_log_limit limit[SHAPER_NUM_DIRS] = {
		SHAPER_LOG_LIMIT_INIT(SHAPER_LOG_BURST, SHAPER_LOG_INTERVAL_S),
		SHAPER_LOG_LIMIT_INIT(SHAPER_LOG_BURST, SHAPER_LOG_INTERVAL_S),
	};

	if (r == NULL)
		return;
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		struct dp_ar_log *l = &r->log[d];
		uint32_t tail = l->tail, head = __atomic_load_n(&l->head, __ATOMIC_ACQUIRE);

		for (; tail != head; tail++) {
			const struct dp_ar_event *e = &l->ev[tail % DP_AR_EVENTS];

			if (shaper_log_enabled(SHAPER_LOG_DEBUG))
				shaper_log_debug(
						"autorate %s: %.3f s %s %.3f -> %.3f Mbit/s, rise %.2f "
						"ms (own %.2f), line %.3f Mbit/s, path %.2f ms: %s",
						shaper_dir_name[d], e->time_ns / 1e9,
						autorate_rule_name(e->rule), e->from / 125000.0,
						e->to / 125000.0, e->delay_ns / 1e6,
						e->own_ns / 1e6, e->line / 125000.0,
						e->path_ns / 1e6, autorate_rule_text(e->rule));
			else if (e->why == AR_WHY_PATH)
				shaper_log_limited(
						&limit[d], SHAPER_LOG_INFO,
						"autorate %s: a rise of %.1f ms did not drain after "
						"cuts: taken as the path's, rate back to %.2f Mbit/s",
						shaper_dir_name[d], e->path_ns / 1e6,
						e->to / 125000.0);
			else
				shaper_log_limited(
						&limit[d], SHAPER_LOG_INFO,
						"autorate %s: %s %.2f -> %.2f Mbit/s (rise %.1f ms, "
						"the line carried %.2f Mbit/s)",
						shaper_dir_name[d], autorate_reason_name(e->why),
						e->from / 125000.0, e->to / 125000.0,
						e->delay_ns / 1e6, e->line / 125000.0);
		}
		__atomic_store_n(&l->tail, tail, __ATOMIC_RELEASE);
	}
}

/* The rate into this shard's scheduler, as config.set would apply it. */
static bool
ar_apply(struct dp_dir *d, uint64_t rate, uint64_t now)
{
	struct sched_params p = *sched_get_params(d->sched);
	char err[256];

	p.rate = rate;
	/* A rate the pool cannot back (a derived memlimit grows with it) is not taken. */
	if (dp_budget_check_update(d, &p, err, sizeof(err)) != 0 ||
	    sched_update(d->sched, &p, err, sizeof(err)) != 0)
		return false;
	dp_rate_applied(d, &p, now); /* with shards: back to this shard's part of the link */
	return true;
}

void
dp_rtt_autorate(struct dp_dir *d, uint64_t now)
{
	struct dp_rtt *r = d->rtt;
	struct dp_ar_group *g;
	struct autorate *a;
	uint64_t from, sent, arrived, lost, want;
	bool moved;

	if (r == NULL || !r->ar_on[d->dir] || sched_move_active(&d->move))
		return;
	g = r->group;
	a = &r->ar[d->dir];
	lost = sched_lag_skipped_ns(d->sched) + d->carried.lag_skipped_ns;
	if (g != NULL)
		__atomic_store_n(&d->ar_lost_ns, lost, __ATOMIC_RELAXED);
	if (g == NULL || r->shard == 0) {
		if (g != NULL)
			ar_drain(r);
		if (d->dir == SHAPER_UP)
			autorate_attribute(a, &r->ar[SHAPER_DOWN]);
		from = a->rate;
		sent = d->stats.tx_bytes;
		arrived = d->stats.rx_bytes;
		/*
		 * The leader judges what the whole line carried, every shard's
		 * part; the time written off, only as far as every shard's worker
		 * was away (the others sent meanwhile).
		 */
		for (unsigned int i = 1; g != NULL && i < g->n; i++) {
			uint64_t l = __atomic_load_n(&g->dir[d->dir][i]->ar_lost_ns,
						     __ATOMIC_RELAXED);

			sent += __atomic_load_n(&g->dir[d->dir][i]->stats.tx_bytes,
						__ATOMIC_RELAXED);
			arrived += __atomic_load_n(&g->dir[d->dir][i]->stats.rx_bytes,
						   __ATOMIC_RELAXED);
			if (l < lost)
				lost = l;
		}
		moved = autorate_tick(a, now, sent, arrived, lost);
		/* At debug level every decision (an interval ended), for a trace of a run. */
		if (a->in.start == now && shaper_log_enabled(SHAPER_LOG_DEBUG))
			log_push(&r->log[d->dir], a, from, now);
		else if (moved &&
			 (a->last_why == AR_WHY_CUT_BLOAT || a->last_why == AR_WHY_CUT_STANDING ||
			  a->last_why == AR_WHY_CUT_GROWING || a->last_why == AR_WHY_PATH))
			log_push(&r->log[d->dir], a, from, now);
		if (moved) {
			if (g == NULL) {
				if (!ar_apply(d, a->rate, now))
					a->rate = sched_get_params(d->sched)->rate;
				return;
			}
			share_group_set_rate(d->share_group, a->rate);
			atomic_store_explicit(&g->rate[d->dir], a->rate, memory_order_release);
		}
		if (g == NULL)
			return;
	}
	/* Every shard, the leader too: take the group's rate when it moved. */
	want = atomic_load_explicit(&g->rate[d->dir], memory_order_acquire);
	if (want != r->applied[d->dir] && ar_apply(d, want, now))
		r->applied[d->dir] = want;
}

void
dp_rtt_update_params(const struct dp_dir *d, struct sched_params *p)
{
	if (d->rtt != NULL && d->rtt->ar_on[d->dir])
		p->rate = d->rtt->ar[d->dir].rate;
}

void
dp_rtt_facts(const struct dp_dir *d, struct sched_flow_fact *f, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		const struct rtt_flow *rf;

		f[i].rtt_wan_ns = f[i].rtt_lan_ns = 0;
		if (d->rtt == NULL || f[i].l4_proto != 6 || (f[i].family != 4 && f[i].family != 6))
			continue;
		/* The table knows flows by the classifier's hash, alike both ways. */
		rf = rtt_find(d->rtt->table,
			      classify_flow_hash_vlan(&d->key, f[i].vlan, f[i].family, f[i].src,
						      f[i].dst, f[i].sport, f[i].dport, 6));
		if (rf != NULL) {
			f[i].rtt_wan_ns = (uint64_t)rf->last_us[RTT_SIDE_WAN] * 1000;
			f[i].rtt_lan_ns = (uint64_t)rf->last_us[RTT_SIDE_LAN] * 1000;
		}
	}
}

static uint64_t
clamp_seen(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void
dp_rtt_publish(struct dp_dir *d, struct ctl_rtt *out, uint64_t now)
{
	struct dp_rtt *r = d->rtt;
	enum rtt_side side = side_of(d->dir);
	const struct rtt_hist *h;
	struct ctl_rtt *last;
	const struct autorate *a;

	memset(out, 0, sizeof(*out));
	if (r == NULL)
		return;
	h = &r->table->hist[side];
	last = &r->last[side];
	if (r->iv_start[side] == 0) {
		r->iv_start[side] = now;
		r->iv_base[side] = *h;
	} else if (now - r->iv_start[side] >= DP_RTT_INTERVAL_NS) {
		struct rtt_hist iv;
		uint64_t lo, hi;

		rtt_hist_diff(h, &r->iv_base[side], &iv);
		rtt_range_take(r->table, side, &lo, &hi);
		last->interval_ns = now - r->iv_start[side];
		last->iv_samples = iv.samples;
		last->iv_min_ns = lo;
		/* Interpolated in a half-octave bucket: keep them inside what was seen. */
		last->iv_median_ns = clamp_seen(rtt_hist_percentile(&iv, 50), lo, hi);
		last->iv_p99_ns = clamp_seen(rtt_hist_percentile(&iv, 99), lo, hi);
		r->iv_base[side] = *h;
		r->iv_start[side] = now;
	}
	*out = *last;
	out->on = true;
	out->part = (uint8_t)side;
	out->hist = *h;
	out->flows_evicted = r->table->c.evictions;
	memcpy(out->by_method, r->table->c.by_method[side], sizeof(out->by_method));
	if (side == RTT_SIDE_WAN) {
		out->host_based = r->table->c.host_based;
		out->host_collisions = r->table->c.host_collisions;
	}
	a = &r->ar[d->dir];
	out->autorate = r->ar_on[d->dir];
	if (out->autorate) {
		out->ar_leader = r->group == NULL || r->shard == 0;
		out->ar_action = a->last_action;
		out->ar_rate = a->rate;
		out->ar_min = a->p.min_rate;
		out->ar_max = a->p.max_rate;
		out->ar_delivered = a->delivered_rate;
		out->ar_delay_ns = a->last_delay_ns;
		out->ar_ups = a->ups;
		out->ar_downs = a->downs;
		out->ar_why = a->last_why;
		out->ar_samples = a->last_samples;
		out->ar_base = a->p.base_rate;
		out->ar_arrived = a->arrived_rate;
		out->ar_through = a->through_rate;
		out->ar_path_ns = a->path.ns;
		/* What fed this controller: WAN-side samples with a baseline, one-way rises. */
		memcpy(out->ar_inputs, r->table->c.judged, sizeof(r->table->c.judged));
		out->ar_one_way = d->dir == SHAPER_DOWN && r->owd != NULL ? r->owd->c.rises : 0;
		memcpy(out->ar_decisions, a->why, sizeof(out->ar_decisions));
	}
}

void
dp_rtt_reset(struct dp_dir *d)
{
	enum rtt_side side = side_of(d->dir);

	if (d->rtt == NULL)
		return;
	memset(&d->rtt->table->hist[side], 0, sizeof(d->rtt->table->hist[side]));
	memset(&d->rtt->iv_base[side], 0, sizeof(d->rtt->iv_base[side]));
}
