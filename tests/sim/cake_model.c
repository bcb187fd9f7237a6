/*
 * Reference model of CAKE (see cake_model.h). Comments name the sch_cake
 * function or rule each part follows. Nothing here is fast: lists are
 * arrays searched linearly, the fattest queue is found by scanning every
 * queue, products are taken in 128 bits.
 */
#include "cake_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shaper/rand.h"

#define NQ    1024 /* queues per tin */
#define WAYS  8
#define NTINS 8

typedef unsigned __int128 u128;

enum cm_state {
	ST_NONE,
	ST_SPARSE,
	ST_SPARSE_WAIT,
	ST_BULK,
	ST_DECAYING
};
enum cm_list {
	L_NEW,
	L_OLD,
	L_DECAYING,
	L_NONE
};

struct cm_rate {
	uint64_t rate, rate_ns;
	uint32_t shft;
};

struct cm_cobalt {
	uint32_t count, rec_inv_sqrt, p_drop;
	uint64_t drop_next, blue_timer;
	bool dropping, ecn_marked;
};

struct cm_flow {
	struct cm_pkt *head, *tail;
	uint32_t npkts;
	uint64_t backlog; /* bytes of len */
	int64_t deficit;
	enum cm_state state;
	enum cm_list list;
	uint32_t srchost, dsthost; /* host table slots */
	bool rehost;               /* host slots forgotten by an isolation change */
	struct cm_cobalt cv;
	/* l4s: its last packet other than CE was classic; its classic packets queued. */
	bool was_classic;
	uint32_t classic_queued;
};

struct cm_tin {
	struct cm_flow flows[NQ];
	uint32_t tags[NQ];
	uint32_t src_tag[NQ], dst_tag[NQ];
	uint32_t src_bulk[NQ], dst_bulk[NQ];
	uint32_t list[3][NQ];
	uint32_t list_len[3];
	uint32_t sparse, bulk, decaying, unresponsive;

	struct cm_rate rate;
	uint32_t flow_quantum, tin_quantum;
	uint64_t target, interval, mtu_time;
	uint64_t step; /* l4s marking step, ns */
	char name[SCHED_NAME_LEN];

	uint64_t t_next;
	int64_t tin_deficit;
	uint64_t backlog;
	uint32_t qlen;

	uint64_t packets, bytes, way_hits, way_misses, way_cols;
	uint64_t drops, marks, ack_drops;
	uint64_t ect1, step_marks;
	uint64_t pk_delay, av_delay, sp_delay;
	uint32_t max_len;
	uint64_t sojourn[SCHED_SOJOURN_BUCKETS];
	uint64_t sparse_sojourn[SCHED_SOJOURN_BUCKETS]; /* served from new_flows */
};

struct cake_model {
	struct sched_params p;
	uint32_t tin_cnt;
	uint32_t tin_scan; /* tins dequeue serves: > tin_cnt while retired ones drain */
	uint8_t dscp_tin[64];
	uint8_t tin_order[NTINS];
	uint32_t cur_tin;
	struct cm_rate rate;
	uint64_t t_next, f_next;
	uint64_t lag;
	bool resync;
	uint32_t qlen;
	uint64_t backlog, used, max_used, limit;
	uint64_t rng;
	uint32_t inv_sqrt_table[16];

	uint64_t overlimits, marked;
	uint32_t min_net, max_net, min_adj, max_adj;
	uint64_t avg_netoff;
	struct cm_tin tins[NTINS];
};

/* ------------------------------------------------------------ arithmetic */

/* sch_cake's cake_set_rate(): ns per byte scaled by 2^shft, kept below 2^34. */
static void
rate_set(struct cm_rate *r, uint64_t rate)
{
	r->rate = rate;
	r->rate_ns = 0;
	r->shft = 0;
	if (rate == 0)
		return;
	r->shft = 34;
	r->rate_ns = (uint64_t)(((u128)1000000000 << 34) / (rate > 64 ? rate : 64));
	while (r->rate_ns >= (1ull << 34)) {
		r->rate_ns >>= 1;
		r->shft--;
	}
}

static uint64_t
dur(const struct cm_rate *r, uint64_t len)
{
	return (uint64_t)(((u128)len * r->rate_ns) >> r->shft);
}

/* cobalt_newton_step(): y' = y (3 - count y^2) / 2 in Q0.32, exactly in 128 bits. */
static uint32_t
newton(uint32_t y, uint32_t count)
{
	u128 y2 = ((u128)y * y) >> 32;
	u128 three = (u128)3 << 32;
	u128 cy2 = (u128)count * y2;
	u128 r;

	if (cy2 >= three)
		return y >> 1; /* the estimate overshoots: see the note in cm_new */
	r = ((u128)y * (three - cy2)) >> 33;
	return r > 0xffffffffu ? 0xffffffffu : (uint32_t)r;
}

static void
invsqrt(const struct cake_model *m, struct cm_cobalt *v)
{
	if (v->count < 16)
		v->rec_inv_sqrt = m->inv_sqrt_table[v->count];
	else
		v->rec_inv_sqrt = newton(v->rec_inv_sqrt, v->count);
}

static uint64_t
control(uint64_t t, uint64_t interval, uint32_t ris)
{
	return t + (uint64_t)(((u128)interval * ris) >> 32);
}

/* ------------------------------------------------------------ tins (sch_cake's tins) */

static void
tin_config(struct cake_model *m, struct cm_tin *b, uint64_t rate, uint32_t quantum,
	   const char *name)
{
	uint64_t target_cfg = (uint64_t)(m->p.target_us ? m->p.target_us : 1) * 1000;
	uint64_t rtt_cfg = (uint64_t)(m->p.rtt_us ? m->p.rtt_us : 1) * 1000;
	uint64_t q;

	rate_set(&b->rate, rate);
	b->tin_quantum = quantum;
	q = rate >> 12;
	b->flow_quantum = rate == 0 ? 1514 : q < 300 ? 300 : q > 1514 ? 1514 : (uint32_t)q;
	b->mtu_time = dur(&b->rate, m->p.mtu);
	b->target = b->mtu_time * 3 / 2 > target_cfg ? b->mtu_time * 3 / 2 : target_cfg;
	b->interval = rtt_cfg + b->target - target_cfg;
	if (b->interval < 2 * b->target)
		b->interval = 2 * b->target;
	/* The l4s step, never under 1.5 MTU times (the floor target has). */
	b->step = (uint64_t)m->p.l4s_step_us * 1000;
	if (b->step < b->mtu_time * 3 / 2)
		b->step = b->mtu_time * 3 / 2;
	snprintf(b->name, sizeof(b->name), "%s", name);
}

static void
config_tins(struct cake_model *m)
{
	static const uint8_t ds3[][2] = { { 1, 1 },  { 8, 1 },  { 4, 2 }, { 44, 2 },
					  { 46, 2 }, { 48, 2 }, { 56, 2 } };
	static const uint8_t ds4[][2] = { { 1, 1 },  { 8, 1 },  { 4, 2 },  { 16, 2 }, { 18, 2 },
					  { 20, 2 }, { 22, 2 }, { 24, 2 }, { 26, 2 }, { 28, 2 },
					  { 30, 2 }, { 34, 2 }, { 36, 2 }, { 38, 2 }, { 32, 3 },
					  { 40, 3 }, { 44, 3 }, { 46, 3 }, { 48, 3 }, { 56, 3 } };
	/* diffserv8 by class (sch_cake's cake_config_diffserv*() tables), default Best effort = 2.
	 */
	static const uint8_t ds8[][2] = {
		{ 1, 0 },  { 2, 1 },  { 8, 1 },  { 10, 1 }, { 12, 1 }, { 14, 1 },
		{ 24, 3 }, { 26, 3 }, { 28, 3 }, { 30, 3 }, { 34, 3 }, { 36, 3 },
		{ 38, 3 }, { 4, 4 },  { 18, 4 }, { 20, 4 }, { 22, 4 }, { 16, 5 },
		{ 32, 6 }, { 40, 6 }, { 44, 6 }, { 46, 6 }, { 48, 7 }, { 56, 7 },
	};
	uint64_t r = m->p.rate;
	uint32_t i;

	memset(m->dscp_tin, 0, sizeof(m->dscp_tin));
	for (i = 0; i < NTINS; i++)
		m->tin_order[i] = (uint8_t)i;
	switch (m->p.diffserv) {
	case SCHED_BESTEFFORT:
		m->tin_cnt = 1;
		tin_config(m, &m->tins[0], r, 65535, "Tin 0");
		break;
	case SCHED_DIFFSERV3:
		m->tin_cnt = 3;
		for (i = 0; i < sizeof(ds3) / sizeof(ds3[0]); i++)
			m->dscp_tin[ds3[i][0]] = ds3[i][1];
		tin_config(m, &m->tins[0], r, 1024, "Best Effort");
		tin_config(m, &m->tins[1], r >> 4, 64, "Bulk");
		tin_config(m, &m->tins[2], r >> 2, 256, "Voice");
		break;
	case SCHED_DIFFSERV4:
		m->tin_cnt = 4;
		for (i = 0; i < sizeof(ds4) / sizeof(ds4[0]); i++)
			m->dscp_tin[ds4[i][0]] = ds4[i][1];
		tin_config(m, &m->tins[0], r, 1024, "Best Effort");
		tin_config(m, &m->tins[1], r >> 4, 64, "Bulk");
		tin_config(m, &m->tins[2], r >> 1, 512, "Video");
		tin_config(m, &m->tins[3], r >> 2, 256, "Voice");
		break;
	case SCHED_DIFFSERV8:
	case SCHED_PRECEDENCE: {
		uint64_t rate = r;
		uint32_t q = 256;

		m->tin_cnt = 8;
		for (i = 0; i < 64; i++)
			m->dscp_tin[i] = m->p.diffserv == SCHED_PRECEDENCE ? (uint8_t)(i >> 3) : 2;
		if (m->p.diffserv == SCHED_DIFFSERV8)
			for (i = 0; i < sizeof(ds8) / sizeof(ds8[0]); i++)
				m->dscp_tin[ds8[i][0]] = ds8[i][1];
		for (i = 0; i < 8; i++) {
			char name[SCHED_NAME_LEN];

			snprintf(name, sizeof(name), "Tin %u", i);
			tin_config(m, &m->tins[i], rate, q, name);
			rate = (rate * 7) >> 3;
			q = (q * 7) >> 3;
			if (q < 1)
				q = 1;
		}
		break;
	}
	}
	/* nqb: DSCP 45 shares the tin of VA (44); precedence's bits put both in tin 5. */
	if (m->p.nqb)
		m->dscp_tin[45] = m->dscp_tin[44];
	if (m->p.diffserv == SCHED_DIFFSERV3 || m->p.diffserv == SCHED_DIFFSERV4) {
		m->tin_order[0] = 1; /* sch_cake's tin_order: Bulk is shown first */
		m->tin_order[1] = 0;
	}
	/*
	 * The project's diffserv change (not in the reference): tins the new
	 * mode does not use keep their packets and drain at the full rate
	 * (tin quantum 1024) until empty.
	 */
	for (i = m->tin_cnt; i < NTINS; i++) {
		char name[SCHED_NAME_LEN];

		snprintf(name, sizeof(name), "Tin %u", i);
		tin_config(m, &m->tins[i], r, 1024, name);
	}
	rate_set(&m->rate, r);
	/*
	 * Not in the reference: the project writes off a clock lag beyond
	 * lag_limit_ns (auto: one MTU time, at least 250 us), sched.h.
	 */
	if (m->p.lag_limit_ns == SCHED_LAG_AUTO) {
		uint64_t mt = dur(&m->rate, m->p.mtu);

		m->lag = mt > SCHED_LAG_AUTO_MIN_NS ? mt : SCHED_LAG_AUTO_MIN_NS;
	} else {
		m->lag = m->p.lag_limit_ns;
	}
}

/*
 * sch_cake's cake_drop(), as the project chose to differ (docs/ARCHITECTURE.md, "The derived
 * memory limit is counted in packets"): an explicit memlimit stands; the
 * derived byte figure (4 x rate x rtt, at least 4 MiB, at most 10240 x mtu)
 * is read as that many bytes of mtu-size frames, each priced at pkt_mem.
 */
static uint64_t
limit_bytes(const struct sched_params *p)
{
	u128 limit;
	uint64_t per = p->pkt_mem > p->mtu ? p->pkt_mem : p->mtu;

	if (p->memlimit != 0)
		return p->memlimit;
	if (p->rate == 0)
		limit = (u128)UINT64_MAX;
	else
		limit = (u128)p->rate * (p->rtt_us ? p->rtt_us : 1) / 250000;
	if (p->rate != 0 && limit < (4u << 20))
		limit = 4u << 20;
	if (limit > (u128)10240 * p->mtu)
		limit = (u128)10240 * p->mtu;
	return (uint64_t)(limit * per / p->mtu);
}

struct cake_model *
cm_new(const struct sched_params *p)
{
	struct cake_model *m = calloc(1, sizeof(*m));
	uint64_t seed = p->seed, z;
	uint32_t i, k;

	if (m == NULL)
		abort();
	m->p = *p;
	/*
	 * sch_cake's behaviour: the dither and BLUE draws are injectable; the project takes
	 * them from shaper/rand.h's xorshift64* seeded through splitmix64, so
	 * the model draws from the same stream in the same order.
	 */
	z = sh_splitmix64(&seed);
	m->rng = z != 0 ? z : 0x853c49e6748fea9bULL;
	/* sch_cake's cobalt_cache_init(): entry 0 is 1.0; entry n is four Newton steps on from
	 * entry n-1. */
	m->inv_sqrt_table[0] = 0xffffffffu;
	for (i = 1; i < 16; i++) {
		uint32_t y = m->inv_sqrt_table[i - 1];

		for (k = 0; k < 4; k++)
			y = newton(y, i);
		m->inv_sqrt_table[i] = y;
	}
	for (i = 0; i < NTINS; i++) {
		struct cm_tin *b = &m->tins[i];

		for (k = 0; k < NQ; k++)
			b->flows[k].list = L_NONE;
	}
	config_tins(m);
	m->tin_scan = m->tin_cnt;
	m->limit = limit_bytes(p);
	m->min_net = m->min_adj = 65535;
	return m;
}

void
cm_free(struct cake_model *m)
{
	free(m);
}

/*
 * A retired tin that emptied forgets its flows (the project's choice):
 * queues, lists, counts and host bulk counts; its clock, tags and
 * statistics stay.
 */
static void
tin_forget(struct cm_tin *b)
{
	for (uint32_t q = 0; q < NQ; q++) {
		struct cm_flow *f = &b->flows[q];

		memset(f, 0, sizeof(*f));
		f->list = L_NONE;
		b->src_bulk[q] = b->dst_bulk[q] = 0;
	}
	memset(b->list_len, 0, sizeof(b->list_len));
	b->sparse = b->bulk = b->decaying = b->unresponsive = 0;
	b->backlog = 0;
	b->qlen = 0;
	b->tin_deficit = 0;
}

/* Serve the mode's tins and any retired tin still holding packets. */
static void
update_scan(struct cake_model *m)
{
	uint32_t n = m->tin_cnt, i;

	for (i = m->tin_cnt; i < NTINS; i++)
		if (m->tins[i].qlen != 0)
			n = i + 1;
	for (i = n; i < m->tin_scan; i++)
		tin_forget(&m->tins[i]);
	m->tin_scan = n;
	if (m->cur_tin >= n)
		m->cur_tin = 0;
}

void
cm_update(struct cake_model *m, const struct sched_params *p)
{
	if (p->isolation != m->p.isolation) {
		/*
		 * The project's isolation change (not in the reference): the
		 * host tables start empty and every flow reclaims its hosts at
		 * its next packet; until then it is charged to none (load 1).
		 */
		for (uint32_t t = 0; t < NTINS; t++) {
			struct cm_tin *b = &m->tins[t];

			memset(b->src_tag, 0, sizeof(b->src_tag));
			memset(b->dst_tag, 0, sizeof(b->dst_tag));
			memset(b->src_bulk, 0, sizeof(b->src_bulk));
			memset(b->dst_bulk, 0, sizeof(b->dst_bulk));
			for (uint32_t q = 0; q < NQ; q++)
				b->flows[q].rehost = true;
		}
	}
	if (p->overhead_mode != m->p.overhead_mode || p->overhead != m->p.overhead) {
		m->min_net = m->min_adj = 65535; /* sch_cake's TCA_CAKE_* attributes: OVERHEAD or
						    RAW resets them */
		m->max_net = m->max_adj = 0;
	}
	if (p->l4s != m->p.l4s) {
		/* Recount each queue's classic packets by the verdicts they carry (none: classic).
		 */
		for (uint32_t t = 0; t < NTINS; t++)
			for (uint32_t q = 0; q < NQ; q++) {
				struct cm_flow *f = &m->tins[t].flows[q];

				f->classic_queued = 0;
				for (struct cm_pkt *k = f->head; p->l4s && k != NULL; k = k->next)
					f->classic_queued += !k->l4s;
			}
	}
	m->p = *p;
	config_tins(m);
	m->limit = limit_bytes(p);
	update_scan(m);
	/*
	 * The project's update (sched.h: "the new rate holds from the next
	 * packet"): at the next enqueue or dequeue every clock is brought
	 * into [now, now + one MTU at its new rate].
	 */
	m->resync = true;
}

static uint64_t
clamp_clock(uint64_t t, uint64_t lo, uint64_t hi)
{
	return t < lo ? lo : t > hi ? hi : t;
}

static void
resync(struct cake_model *m, uint64_t now)
{
	uint64_t hi = now + dur(&m->rate, m->p.mtu);
	uint32_t i;

	m->resync = false;
	m->t_next = clamp_clock(m->t_next, now, hi);
	m->f_next = clamp_clock(m->f_next, now, hi);
	for (i = 0; i < NTINS; i++)
		m->tins[i].t_next = clamp_clock(m->tins[i].t_next, now,
						now + dur(&m->tins[i].rate, m->p.mtu));
}

/* ------------------------------------------------------------ lists (sch_cake's DRR++) */

static void
list_remove(struct cm_tin *b, uint32_t q)
{
	struct cm_flow *f = &b->flows[q];
	uint32_t i, *l, *n;

	if (f->list == L_NONE)
		return;
	l = b->list[f->list];
	n = &b->list_len[f->list];
	for (i = 0; i < *n; i++)
		if (l[i] == q)
			break;
	if (i == *n)
		abort(); /* the model's own bookkeeping is broken */
	memmove(&l[i], &l[i + 1], (*n - i - 1) * sizeof(*l));
	(*n)--;
	f->list = L_NONE;
}

static void
list_move_tail(struct cm_tin *b, uint32_t q, enum cm_list to)
{
	list_remove(b, q);
	b->list[to][b->list_len[to]++] = q;
	b->flows[q].list = to;
}

/* ------------------------------------------------------------ hosts (sch_cake's host isolation) */

static bool
dual_src(const struct cake_model *m)
{
	return (m->p.isolation & 5) == 5;
}

static bool
dual_dst(const struct cake_model *m)
{
	return (m->p.isolation & 6) == 6;
}

static void
host_bulk_add(struct cake_model *m, struct cm_tin *b, const struct cm_flow *f, int d)
{
	/* Saturating 0..1024 (sch_cake's set-associative cake_hash()). */
	if (f->rehost)
		return;
	if (dual_src(m)) {
		uint32_t *c = &b->src_bulk[f->srchost];

		if (d > 0 && *c < 1024)
			(*c)++;
		else if (d < 0 && *c > 0)
			(*c)--;
	}
	if (dual_dst(m)) {
		uint32_t *c = &b->dst_bulk[f->dsthost];

		if (d > 0 && *c < 1024)
			(*c)++;
		else if (d < 0 && *c > 0)
			(*c)--;
	}
}

/* sch_cake's host-scaled quantum: the host-scaled quantum with a 16-bit random dither. */
static int64_t
host_quantum(struct cake_model *m, struct cm_tin *b, const struct cm_flow *f)
{
	uint32_t load = 1;
	uint64_t r;

	if (dual_src(m) && !f->rehost && b->src_bulk[f->srchost] > load)
		load = b->src_bulk[f->srchost];
	if (dual_dst(m) && !f->rehost && b->dst_bulk[f->dsthost] > load)
		load = b->dst_bulk[f->dsthost];
	r = sh_rand64(&m->rng) >> 48;
	return (int64_t)(((uint64_t)b->flow_quantum * (65535u / load) + r) >> 16);
}

/* cake_hash()'s host lookup, one side: find the host's slot or claim one. */
static uint32_t
host_slot(uint32_t *tags, const uint32_t *bulk, uint32_t hash)
{
	uint32_t idx = hash % NQ, outer = idx - idx % WAYS, inner = idx % WAYS, w;

	for (w = 0; w < WAYS; w++) {
		uint32_t k = outer + (inner + w) % WAYS;

		if (tags[k] == hash)
			return k;
	}
	for (w = 0; w < WAYS; w++) {
		uint32_t k = outer + (inner + w) % WAYS;

		if (bulk[k] == 0) {
			tags[k] = hash;
			return k;
		}
	}
	tags[idx] = hash; /* every way busy: share the home slot */
	return idx;
}

static void
assign_hosts(struct cake_model *m, struct cm_tin *b, struct cm_flow *f, const struct cm_pkt *pkt)
{
	f->rehost = false;
	if (dual_src(m))
		f->srchost = host_slot(b->src_tag, b->src_bulk, pkt->src_hash);
	if (dual_dst(m))
		f->dsthost = host_slot(b->dst_tag, b->dst_bulk, pkt->dst_hash);
	if (f->state == ST_BULK)
		host_bulk_add(m, b, f, +1);
}

/* sch_cake's set-associative cake_hash(): the queue of pkt in tin b. */
static uint32_t
lookup(struct cake_model *m, struct cm_tin *b, const struct cm_pkt *pkt)
{
	uint32_t mode = m->p.isolation, hash, idx, outer, inner, w, q = 0;
	bool found = false, assign = true;

	if (mode == SCHED_FLOWBLIND)
		return 0;
	if (mode & 4)
		hash = pkt->flow_hash;
	else
		hash = ((mode & 1) ? pkt->src_hash : 0) ^ ((mode & 2) ? pkt->dst_hash : 0);
	idx = hash % NQ;
	outer = idx - idx % WAYS;
	inner = idx % WAYS;
	if (b->tags[idx] == hash && b->flows[idx].state != ST_NONE) {
		q = idx; /* way_directs: not exported */
		found = true;
		assign = false;
	}
	for (w = 0; !found && w < WAYS; w++) {
		uint32_t k = outer + (inner + w) % WAYS;

		if (b->tags[k] == hash) {
			if (w != 0)
				b->way_hits++;
			q = k;
			found = true;
			assign = b->flows[k].state == ST_NONE;
		}
	}
	for (w = 0; !found && w < WAYS; w++) {
		uint32_t k = outer + (inner + w) % WAYS;

		if (b->flows[k].state == ST_NONE) {
			b->way_misses++;
			q = k;
			found = true;
		}
	}
	if (!found) {
		b->way_cols++;
		q = idx;
		if (b->flows[q].state == ST_BULK)
			host_bulk_add(m, b, &b->flows[q], -1);
	}
	b->tags[q] = hash;
	if ((assign || b->flows[q].rehost) && (dual_src(m) || dual_dst(m)))
		assign_hosts(m, b, &b->flows[q], pkt);
	return q;
}

/* ------------------------------------------------------------ COBALT (sch_cake's COBALT) */

/*
 * BLUE forgets with time: the project's documented choice (ARCHITECTURE.md,
 * "BLUE forgets with time"), not sch_cake's. While the flow is not building
 * a queue, p_drop loses a quarter (plus one, so it reaches the floor) per
 * whole target elapsed since blue_timer, not below floor (the last step to
 * zero is cobalt's queue-empty rule, which counts un_flows).
 */
static void
blue_forget(struct cm_cobalt *v, const struct cm_tin *b, uint64_t now, uint32_t floor)
{
	uint64_t steps;

	if (v->p_drop <= floor || (int64_t)(now - v->blue_timer) <= (int64_t)b->target)
		return;
	steps = (now - v->blue_timer) / b->target;
	v->blue_timer += steps * b->target;
	while (steps-- > 0 && v->p_drop > floor) {
		uint32_t d = v->p_drop / 4 + 1;

		v->p_drop = v->p_drop - floor > d ? v->p_drop - d : floor;
	}
}

/* sch_cake's cobalt_queue_full(): returns true when the flow became unresponsive. */
static bool
cobalt_full(struct cm_cobalt *v, const struct cm_tin *b, uint64_t now)
{
	bool up = false;

	if ((int64_t)(now - v->blue_timer) > (int64_t)b->target) {
		up = v->p_drop == 0;
		v->p_drop = v->p_drop > UINT32_MAX - (1u << 24) ? UINT32_MAX
								: v->p_drop + (1u << 24);
		v->blue_timer = now;
	}
	v->dropping = true;
	v->drop_next = now;
	if (v->count == 0)
		v->count = 1;
	return up;
}

/* sch_cake's cobalt_queue_empty(): returns true when p_drop reached zero. */
static bool
cobalt_empty(struct cake_model *m, struct cm_cobalt *v, const struct cm_tin *b, uint64_t now)
{
	bool down = false;

	blue_forget(v, b, now, 1u << 20); /* the project's addition */
	if (v->p_drop != 0 && (int64_t)(now - v->blue_timer) > (int64_t)b->target) {
		v->p_drop = v->p_drop < (1u << 20) ? 0 : v->p_drop - (1u << 20);
		v->blue_timer = now;
		down = v->p_drop == 0;
	}
	v->dropping = false;
	if (v->count != 0 && now >= v->drop_next) {
		v->count--;
		invsqrt(m, v);
		v->drop_next = control(v->drop_next, b->interval, v->rec_inv_sqrt);
	}
	return down;
}

/* sch_cake's cobalt_should_drop(): judge pkt leaving its flow at now; true = drop. */
static bool
cobalt_judge(struct cake_model *m, struct cm_cobalt *v, const struct cm_tin *b, struct cm_pkt *pkt,
	     uint64_t now)
{
	uint64_t sojourn = now - pkt->enq;
	uint64_t bulk = m->p.ingress ? b->bulk : 0;
	int64_t sched = (int64_t)(now - v->drop_next);
	bool over, next_due, drop = false;

	over = sojourn > b->target && sojourn > 2 * b->mtu_time * bulk && sojourn > 4 * b->mtu_time;
	next_due = v->count != 0 && sched >= 0;
	v->ecn_marked = false;
	if (over) {
		if (!v->dropping) {
			v->dropping = true;
			v->drop_next = control(now, b->interval, v->rec_inv_sqrt);
		}
		if (v->count == 0)
			v->count = 1;
	} else {
		v->dropping = false;
		/* The project's BLUE forgetting while packets leave within target/2. */
		if (v->p_drop != 0 && sojourn <= b->target / 2)
			blue_forget(v, b, now, 1u << 20);
	}
	if (next_due && v->dropping) {
		/*
		 * The project has an ecn switch (sched_params.ecn, on by
		 * default); sch_cake always marks ECT packets.
		 */
		if (m->p.ecn && pkt->markable && pkt->ecn != 0) {
			pkt->ecn = 3;
			v->ecn_marked = true;
		}
		drop = !v->ecn_marked;
		if (v->count != UINT32_MAX)
			v->count++;
		invsqrt(m, v);
		v->drop_next = control(v->drop_next, b->interval, v->rec_inv_sqrt);
		sched = (int64_t)(now - v->drop_next);
	} else {
		while (next_due) {
			v->count--;
			invsqrt(m, v);
			v->drop_next = control(v->drop_next, b->interval, v->rec_inv_sqrt);
			sched = (int64_t)(now - v->drop_next);
			next_due = v->count != 0 && sched >= 0;
		}
	}
	/*
	 * BLUE. The reference draws whenever p_drop != 0; the project draws
	 * only when CoDel did not already drop (same outcome, one draw fewer),
	 * and the model must consume the shared stream the same way.
	 */
	if (v->p_drop != 0 && !drop && (uint32_t)(sh_rand64(&m->rng) >> 32) < v->p_drop)
		drop = true;
	if (v->count == 0)
		v->drop_next = now + b->interval;
	else if (sched > 0 && !drop)
		v->drop_next = now;
	return drop;
}

/* ------------------------------------------------------------ shaper (sch_cake's shaper) */

static void
advance(struct cake_model *m, struct cm_tin *b, uint32_t len, uint64_t now, bool drop)
{
	uint64_t td, gd;

	if (m->rate.rate == 0)
		return;
	td = dur(&b->rate, len);
	gd = dur(&m->rate, len);
	if (b->t_next < now)
		b->t_next += td;
	else if (b->t_next < now + td)
		b->t_next = now + td;
	m->t_next += gd;
	if (!drop)
		m->f_next += gd + gd / 2;
}

/* sch_cake's cake_overhead(). Negative sizes are clamped at 0 (the reference leaves them open). */
static uint32_t
adjust(struct cake_model *m, const struct cm_pkt *pkt)
{
	int64_t n = pkt->len;

	if (m->p.overhead_mode)
		n -= pkt->net_off;
	if (n < 0)
		n = 0;
	if ((uint32_t)n < m->min_net)
		m->min_net = (uint32_t)n;
	if ((uint32_t)n > m->max_net)
		m->max_net = (uint32_t)n;
	n += m->p.overhead;
	if (n < (int64_t)m->p.mpu)
		n = m->p.mpu;
	if (n < 0)
		n = 0;
	if (m->p.framing == SCHED_FRAMING_ATM)
		n = (n + 47) / 48 * 53;
	else if (m->p.framing == SCHED_FRAMING_PTM)
		n += (n + 63) / 64;
	if ((uint32_t)n < m->min_adj)
		m->min_adj = (uint32_t)n;
	if ((uint32_t)n > m->max_adj)
		m->max_adj = (uint32_t)n;
	m->avg_netoff = m->avg_netoff - m->avg_netoff / 256 + ((uint64_t)pkt->net_off << 16) / 256;
	return (uint32_t)n;
}

/* ------------------------------------------------------------ enqueue */

static struct cm_pkt *
flow_pop(struct cake_model *m, struct cm_tin *b, struct cm_flow *f)
{
	struct cm_pkt *pkt = f->head;

	if (pkt == NULL)
		return NULL;
	f->head = pkt->next;
	if (f->head == NULL)
		f->tail = NULL;
	pkt->next = NULL;
	f->npkts--;
	if (m->p.l4s && !pkt->l4s)
		f->classic_queued--;
	f->backlog -= pkt->len;
	b->backlog -= pkt->len;
	b->qlen--;
	m->backlog -= pkt->len;
	m->qlen--;
	m->used -= pkt->mem;
	return pkt;
}

static void
add_drop(struct cm_drops *d, const struct cm_pkt *pkt, enum shaper_drop_reason r)
{
	if (d->n < CM_MAX_DROPS) {
		d->d[d->n].id = pkt->id;
		d->d[d->n].reason = r;
	}
	d->n++;
}

/* sch_cake's cake_drop(): drop the head of a fattest queue; hint may name which one. */
static struct cm_pkt *
drop_fattest(struct cake_model *m, uint64_t now, uint32_t hint, struct cm_drops *drops)
{
	struct cm_tin *bb = NULL;
	struct cm_flow *ff = NULL;
	uint64_t max = 0;
	uint32_t t, q;
	struct cm_pkt *pkt;

	for (t = 0; t < NTINS; t++)
		for (q = 0; q < NQ; q++)
			if (m->tins[t].flows[q].backlog > max)
				max = m->tins[t].flows[q].backlog;
	for (t = 0; t < NTINS; t++) {
		for (q = 0; q < NQ; q++) {
			struct cm_flow *f = &m->tins[t].flows[q];

			if (f->backlog != max || f->head == NULL)
				continue;
			if (ff == NULL || f->head->id == hint) {
				ff = f;
				bb = &m->tins[t];
			}
		}
	}
	if (ff == NULL)
		return NULL;
	pkt = flow_pop(m, bb, ff);
	if (cobalt_full(&ff->cv, bb, now))
		bb->unresponsive++;
	bb->drops++;
	if (m->p.ingress)
		advance(m, bb, pkt->adj, now, true);
	add_drop(drops, pkt, SHAPER_DROP_OVERFLOW);
	return pkt;
}

int
cm_enqueue(struct cake_model *m, struct cm_pkt *pkt, uint64_t now, const uint32_t *hint,
	   uint32_t nhint, struct cm_drops *drops)
{
	uint32_t tin, q, nh = 0;
	struct cm_tin *b;
	struct cm_flow *f;
	int self = 0;

	if (m->resync)
		resync(m, now);
	/* sch_cake's cake_select_tin() (wash rewrites the packet, the original DSCP classifies). */
	tin = m->p.diffserv == SCHED_BESTEFFORT ? 0 : m->dscp_tin[pkt->dscp & 63];
	if (tin >= m->tin_cnt)
		tin = 0;
	b = &m->tins[tin];
	q = lookup(m, b, pkt);
	f = &b->flows[q];

	/* sch_cake's shaper gating in cake_dequeue(): no credit for idle time. */
	if (m->rate.rate != 0 && b->backlog == 0) {
		if (b->t_next < now)
			b->t_next = now;
		if (m->qlen == 0) {
			if (m->t_next < now) {
				m->t_next = now;
				m->f_next = now;
			} else if (m->t_next > now && m->f_next > now) {
				m->overlimits++;
			}
		}
	}

	pkt->enq = now;
	pkt->tin = (uint8_t)tin;
	pkt->adj = adjust(m, pkt);
	pkt->next = NULL;
	if (m->p.l4s) {
		/* ECT(1) is L4S; CE is too unless the flow's last other packet was classic. */
		if (pkt->ecn == 1) {
			b->ect1++;
			f->was_classic = false;
		} else if (pkt->ecn != 3) {
			f->was_classic = true;
		}
		pkt->l4s = !f->was_classic;
		if (!pkt->l4s)
			f->classic_queued++;
	}
	if (f->tail != NULL)
		f->tail->next = pkt;
	else
		f->head = pkt;
	f->tail = pkt;
	f->npkts++;
	f->backlog += pkt->len;
	b->backlog += pkt->len;
	b->qlen++;
	m->backlog += pkt->len;
	m->qlen++;
	m->used += pkt->mem;
	b->packets++;
	b->bytes += pkt->len;
	if (pkt->len > b->max_len)
		b->max_len = pkt->len;

	/* cake_enqueue()'s flow-list rules. */
	switch (f->state) {
	case ST_NONE:
	case ST_DECAYING:
		if (f->state == ST_DECAYING)
			b->decaying--;
		list_move_tail(b, q, L_NEW);
		f->state = ST_SPARSE;
		b->sparse++;
		f->deficit = host_quantum(m, b, f);
		break;
	case ST_SPARSE_WAIT:
		f->state = ST_BULK;
		b->sparse--;
		b->bulk++;
		host_bulk_add(m, b, f, +1);
		break;
	default:
		break;
	}

	if (m->used > m->max_used)
		m->max_used = m->used;
	while (m->used > m->limit) {
		struct cm_pkt *d = drop_fattest(m, now, nh < nhint ? hint[nh] : UINT32_MAX, drops);

		nh++;
		if (d == NULL)
			break;
		if (d == pkt)
			self = 1;
	}
	return self;
}

/* ------------------------------------------------------------ dequeue */

/* sch_cake's tin choice in cake_dequeue() shaped: highest-index due tin, else the soonest (ties:
 * higher). */
static struct cm_tin *
pick_shaped(struct cake_model *m, uint64_t now)
{
	struct cm_tin *best = NULL;
	int64_t best_d = 0;
	uint32_t i;

	for (i = 0; i < m->tin_scan; i++) {
		struct cm_tin *b = &m->tins[i];
		int64_t d = (int64_t)(b->t_next - now);

		if (b->sparse + b->bulk == 0)
			continue;
		if (best == NULL || d <= 0 || d <= best_d) {
			best = b;
			best_d = d;
		}
	}
	return best;
}

/* sch_cake's tin choice in cake_dequeue() unlimited: weighted DRR over the tins. */
static struct cm_tin *
pick_drr(struct cake_model *m)
{
	uint32_t steps = 0;

	for (;;) {
		struct cm_tin *b = &m->tins[m->cur_tin];
		bool busy = b->sparse + b->bulk != 0;

		if (busy && b->tin_deficit >= 0)
			return b;
		if (b->tin_deficit <= 0)
			b->tin_deficit += b->tin_quantum;
		m->cur_tin = (m->cur_tin + 1) % m->tin_scan;
		/* A full wrap with no flows anywhere. */
		if (++steps >= m->tin_scan) {
			bool any = false;

			for (uint32_t i = 0; i < m->tin_scan; i++)
				any |= m->tins[i].sparse + m->tins[i].bulk != 0;
			if (!any)
				return NULL;
		}
	}
}

/* cake_dequeue()'s empty-flow branch: the flow was found empty. */
static void
flow_empty(struct cake_model *m, struct cm_tin *b, uint32_t q, uint64_t now)
{
	struct cm_flow *f = &b->flows[q];
	struct cm_cobalt *v = &f->cv;

	if (cobalt_empty(m, v, b, now))
		b->unresponsive--;
	if (v->p_drop != 0 || v->count != 0 || now < v->drop_next) {
		list_move_tail(b, q, L_DECAYING);
		if (f->state == ST_BULK) {
			b->bulk--;
			host_bulk_add(m, b, f, -1);
			b->decaying++;
		} else if (f->state == ST_SPARSE || f->state == ST_SPARSE_WAIT) {
			b->sparse--;
			b->decaying++;
		}
		f->state = ST_DECAYING;
	} else {
		list_remove(b, q);
		if (f->state == ST_SPARSE || f->state == ST_SPARSE_WAIT)
			b->sparse--;
		else if (f->state == ST_BULK) {
			b->bulk--;
			host_bulk_add(m, b, f, -1);
		} else if (f->state == ST_DECAYING)
			b->decaying--;
		f->state = ST_NONE;
		f->was_classic = false; /* a flow taking this queue next has no history */
	}
}

static uint64_t
ewma(uint64_t avg, uint64_t sample, unsigned int s)
{
	return avg - (avg >> s) + (sample >> s);
}

struct cm_pkt *
cm_dequeue(struct cake_model *m, uint64_t now, struct cm_drops *drops)
{
	bool first = true;
	struct cm_tin *b;
	struct cm_flow *f;
	struct cm_pkt *pkt;
	uint32_t q, i, from;
	uint64_t delay;

	if (m->resync)
		resync(m, now);
	if (m->tin_scan > m->tin_cnt)
		update_scan(m);
pick_tin:
	if (m->qlen == 0)
		return NULL;
	if (m->rate.rate != 0 && m->t_next > now && m->f_next > now) {
		m->overlimits++;
		return NULL;
	}
	if (m->rate.rate != 0 && now > m->lag && m->t_next < now - m->lag) {
		/* The project's lag write-off (sched.h lag_limit_ns). */
		m->t_next = now - m->lag;
		if (m->f_next < now - m->lag)
			m->f_next = now - m->lag;
		for (i = 0; i < m->tin_scan; i++)
			if (m->tins[i].t_next < now - m->lag)
				m->tins[i].t_next = now - m->lag;
	}
	b = m->rate.rate != 0 ? pick_shaped(m, now) : pick_drr(m);
	if (b == NULL)
		return NULL;
pick_flow:
	if (first && b->list_len[L_DECAYING] != 0)
		from = L_DECAYING;
	else if (b->list_len[L_NEW] != 0)
		from = L_NEW;
	else if (b->list_len[L_OLD] != 0)
		from = L_OLD;
	else if (b->list_len[L_DECAYING] != 0)
		from = L_DECAYING;
	else
		goto pick_tin;
	q = b->list[from][0];
	first = false;
	f = &b->flows[q];
	if (f->deficit <= 0) {
		if (f->state == ST_SPARSE) {
			if (f->head != NULL) {
				b->sparse--;
				b->bulk++;
				f->state = ST_BULK;
				host_bulk_add(m, b, f, +1);
			} else {
				f->state = ST_SPARSE_WAIT;
			}
		}
		f->deficit += host_quantum(m, b, f);
		list_move_tail(b, q, L_OLD);
		goto pick_flow;
	}
	for (;;) {
		pkt = flow_pop(m, b, f);
		if (pkt == NULL) {
			flow_empty(m, b, q, now);
			goto pick_tin;
		}
		if (!cobalt_judge(m, &f->cv, b, pkt, now) || f->head == NULL)
			break; /* the last packet of a flow is never dropped */
		b->drops++;
		add_drop(drops, pkt, SHAPER_DROP_AQM);
		if (m->p.ingress) {
			advance(m, b, pkt->adj, now, true);
			f->deficit -= pkt->adj;
			b->tin_deficit -= pkt->adj;
			goto pick_flow;
		}
	}
	if (f->cv.ecn_marked) {
		b->marks++;
		m->marked++;
	}
	delay = now - pkt->enq;
	/*
	 * l4s: an L4S packet past the step gets CE unless COBALT marked it,
	 * and only while its queue holds no classic packet (a mixed queue
	 * keeps COBALT's law alone).
	 */
	if (m->p.l4s && pkt->l4s && !f->cv.ecn_marked && f->classic_queued == 0 &&
	    delay > b->step && pkt->markable && pkt->ecn != 0) {
		pkt->ecn = 3;
		b->step_marks++;
	}
	b->av_delay = ewma(b->av_delay, delay, 8);
	b->pk_delay = ewma(b->pk_delay, delay, delay > b->pk_delay ? 2 : 8);
	b->sp_delay = ewma(b->sp_delay, delay, delay < b->sp_delay ? 2 : 8);
	b->sojourn[sched_sojourn_bucket(delay)]++;
	if (from == L_NEW)
		b->sparse_sojourn[sched_sojourn_bucket(delay)]++;
	advance(m, b, pkt->adj, now, false);
	f->deficit -= pkt->adj;
	b->tin_deficit -= pkt->adj;
	return pkt;
}

uint64_t
cm_next_time(const struct cake_model *m, uint64_t now)
{
	uint64_t t;

	if (m->qlen == 0)
		return UINT64_MAX;
	if (m->rate.rate == 0 || m->resync)
		return now;
	t = m->t_next < m->f_next ? m->t_next : m->f_next;
	return t > now ? t : now;
}

uint32_t
cm_retired_tins(const struct cake_model *m)
{
	return m->tin_scan - m->tin_cnt;
}

void
cm_stats(const struct cake_model *m, struct sched_stats *st)
{
	uint32_t i;

	st->backlog_pkts = m->qlen;
	st->backlog_bytes = m->backlog;
	st->overlimits = m->overlimits;
	st->ecn_marked = m->marked;
	st->memory_used = m->max_used;
	st->memory_limit = m->limit;
	st->capacity_estimate = m->p.rate;
	st->min_network_size = m->min_net;
	st->max_network_size = m->max_net;
	st->min_adj_size = m->min_adj;
	st->max_adj_size = m->max_adj;
	st->avg_hdr_offset = (uint32_t)((m->avg_netoff + 0x8000) >> 16);
	st->tin_count = m->tin_cnt;
	for (i = 0; i < m->tin_cnt; i++) {
		const struct cm_tin *b = &m->tins[m->tin_order[i]];
		struct sched_tin_stats *t = &st->tins[i];

		snprintf(t->name, sizeof(t->name), "%s", b->name);
		t->threshold_rate = b->rate.rate;
		t->target_us = (uint32_t)(b->target / 1000);
		t->interval_us = (uint32_t)(b->interval / 1000);
		t->peak_delay_us = (uint32_t)(b->pk_delay / 1000);
		t->avg_delay_us = (uint32_t)(b->av_delay / 1000);
		t->base_delay_us = (uint32_t)(b->sp_delay / 1000);
		t->sent_packets = b->packets;
		t->sent_bytes = b->bytes;
		t->backlog_bytes = b->backlog;
		t->way_indirect_hits = b->way_hits;
		t->way_misses = b->way_misses;
		t->way_collisions = b->way_cols;
		t->drops = b->drops;
		t->ecn_mark = b->marks;
		t->ack_drops = b->ack_drops;
		t->ect1_packets = b->ect1;
		t->step_marks = b->step_marks;
		t->sparse_flows = b->sparse + b->decaying;
		t->bulk_flows = b->bulk;
		t->unresponsive_flows = b->unresponsive;
		t->max_pkt_len = b->max_len;
		t->flow_quantum = b->flow_quantum;
		memcpy(t->sojourn, b->sojourn, sizeof(t->sojourn));
		memcpy(t->sparse_sojourn, b->sparse_sojourn, sizeof(t->sparse_sojourn));
	}
}
