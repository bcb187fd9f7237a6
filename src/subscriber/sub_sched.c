/*
 * The per-subscriber scheduler (shaper/subscriber_sched.h): a CAKE per
 * active subscriber from a pool, the allocation every tick, a heap of the
 * subscribers with packets keyed by when each may send next, and a pacer at
 * the link's rate over all of them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shaper/classify.h"
#include "shaper/heapsort.h"
#include "shaper/subscriber_alloc.h"
#include "shaper/subscriber_lookup.h"
#include "shaper/subscriber_qoe.h"
#include "shaper/subscriber_rtt.h"
#include "shaper/subscriber_sched.h"
#include "shaper/subscriber_unknown.h"
#include "sched/rate.h"

/*
 * The link pacer's lag limit when the direction's lag_limit is "auto", as a
 * CAKE's own clocks have it at link rates (sched_lag_limit): a worker that
 * falls behind the link's rate catches up by at most this much, the rest
 * is passed over (sub_sched_stats.link_lag_skipped_ns).
 */
#define SUB_SCHED_LINK_LAG_NS 250000ull

/*
 * The worker is the only writer of a subscriber's counters; the control
 * thread reads them (sub_sched_counters). Relaxed atomic stores cost what
 * plain ones do on the machines DPDK runs on, and make those reads defined.
 */
#define CTR_SET(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define CTR_ADD(x, v) CTR_SET(x, (x) + (v))
#define CTR_GET(x)    __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* ECN's CE codepoint, and a flush_some's bounded search tried this often for one packet. */
#define SUB_ECN_CE       3u
#define SUB_BUDGET_TRIES 16

struct sub_sched_dir {
	struct sub_pool *pool;
	uint64_t link_rate; /* bytes/s for the pacer; 0 = none */
	uint64_t link_bps;  /* bit/s handed to the allocation; 0 = the set's capacity */
	uint64_t root_cap;  /* the set's capacity of the link, bit/s (0 = unlimited) */
	uint64_t link_next; /* the pacer's clock */
	uint64_t link_lag;  /* the most it may lag now and catch up, ns */
	uint64_t next_tick, last_tick;
	/*
	 * The subscribers with packets, a min-heap on each one's next time. A
	 * sift touches the entries only (key and index side by side, one cache
	 * line per level) and the dense pos array, not the subscribers' records:
	 * with thousands busy, those are out of cache.
	 */
	struct sub_heap_ent {
		uint64_t key; /* the scheduler's next time */
		uint32_t sub;
	} * heap;
	uint32_t *pos; /* per subscriber (and the link's entry): its place in heap, or SUB_NONE */
	uint32_t nheap;
	uint64_t *demand, *rate; /* per subscriber (and the link's entry), bit/s */
	uint64_t *tick_bytes;    /* per subscriber: its bytes arrived at the last tick */
	uint64_t queued;         /* packets in all its schedulers */
	uint64_t limit;          /* joint packet limit of them all; 0 = none */
	uint32_t fat;            /* the subscriber found holding the most, last time */
	/*
	 * The subscribers holding a CAKE (and the link's entry), ascending: a
	 * tick looks at these only, so its cost follows the active subscribers,
	 * not the configured ones. One that takes a CAKE goes on fresh and
	 * joins act at the next tick; act loses it when its CAKE goes back.
	 */
	uint32_t *act, *act_tmp, *fresh;
	uint32_t nact, nfresh;
	uint32_t qoe_swept; /* the minute whose start the active ones have seen */
	struct sub_sched_stats st;
};

struct sub_sched {
	uint32_t nsubs; /* the set's; index nsubs is the link's own scheduler */
	/*
	 * A plan per unknown address: slot k of the table is subscriber index
	 * nsubs + 1 + k, under the link at unknown_plan. NULL (nunk 0): such
	 * addresses share the link's entry. unknown_on: new addresses take a
	 * slot (a live change back to "link" clears it; taken slots drain).
	 */
	struct sub_unknown_table *unknown;
	uint32_t nunk;
	bool unknown_on;
	struct sub_plan unknown_plan[SUB_DIRS];
	struct sub_idle *subs;
	uint64_t *plan_max[SUB_DIRS]; /* bit/s, for a fresh CAKE's rate until the next tick */
	struct sub_lookup *lookup;
	bool vlan_prefixes; /* some prefix is VLAN-qualified: tagged frames need lookup */
	uint32_t (*lookup_v4)(const void *ctx, uint32_t addr);
	uint32_t (*lookup_v6)(const void *ctx, const uint8_t addr[16]);
	const void *lookup_ctx;
	struct sub_alloc *alloc;
	uint64_t changes; /* live changes applied */
	struct sub_sched_dir d[SUB_DIRS];
	/* Each subscriber's and the link's RTT samples by side (shaper/subscriber_rtt.h). */
	struct sub_rtt (*rtt)[SUB_RTT_SIDES];
	uint32_t rtt_win; /* the worker's window now, for readers (sub_sched_note_time) */
	/* Each one's busy minutes (shaper/subscriber_qoe.h), and the worker's minute now. */
	struct sub_qoe *qoe;
	uint32_t qoe_min;
};

/* ------------------------------------------------------------------ heap */

/* Subscribers a dequeue takes off the heap at a time, to load their state together. */
#define SUB_DEQUEUE_AHEAD 16u

/*
 * Below this many subscribers holding a CAKE in a direction their state
 * stays in the core's caches (some 2 kB each against an L2 of 1 to 2 MB)
 * and loading a burst's state ahead costs more than it saves: the enqueue and
 * dequeue go without it. Measured with bench_sub_sched's open runs on a
 * 2 MB L2: 40 ns a packet lost at 300 busy, even at 1,000, 150 to 200 ns
 * won at 10,000.
 */
#define SUB_PREFETCH_MIN_ACTIVE 1000u

static inline void
heap_place(struct sub_sched_dir *d, uint32_t pos, uint32_t sub, uint64_t key)
{
	d->heap[pos].key = key;
	d->heap[pos].sub = sub;
	d->pos[sub] = pos;
}

static void
heap_up(struct sub_sched_dir *d, uint32_t pos)
{
	struct sub_heap_ent e = d->heap[pos];

	while (pos > 0) {
		uint32_t parent = (pos - 1) / 2;

		if (d->heap[parent].key <= e.key)
			break;
		heap_place(d, pos, d->heap[parent].sub, d->heap[parent].key);
		pos = parent;
	}
	heap_place(d, pos, e.sub, e.key);
}

static void
heap_down(struct sub_sched_dir *d, uint32_t pos)
{
	struct sub_heap_ent e = d->heap[pos];

	for (;;) {
		uint32_t l = 2 * pos + 1, m = l;

		if (l >= d->nheap)
			break;
		if (l + 1 < d->nheap && d->heap[l + 1].key < d->heap[l].key)
			m = l + 1;
		if (d->heap[m].key >= e.key)
			break;
		heap_place(d, pos, d->heap[m].sub, d->heap[m].key);
		pos = m;
	}
	heap_place(d, pos, e.sub, e.key);
}

/* Set sub's key (UINT64_MAX: no packets, out of the heap). */
static void
heap_set(struct sub_sched *ss, enum sub_dir dir, uint32_t sub, uint64_t key)
{
	struct sub_sched_dir *d = &ss->d[dir];
	uint32_t pos = d->pos[sub];

	if (pos == SUB_NONE) {
		if (key == UINT64_MAX)
			return;
		pos = d->nheap++;
		heap_place(d, pos, sub, key);
		heap_up(d, pos);
		return;
	}
	if (key == UINT64_MAX) {
		uint32_t last = --d->nheap;
		struct sub_heap_ent moved = d->heap[last];

		d->pos[sub] = SUB_NONE;
		if (pos == last)
			return;
		/* The last entry fills the hole, then finds its place either way. */
		heap_place(d, pos, moved.sub, moved.key);
		heap_up(d, pos);
		heap_down(d, d->pos[moved.sub]);
		return;
	}
	if (key == d->heap[pos].key)
		return; /* a packet behind others in a backlogged CAKE: nothing moves */
	if (key < d->heap[pos].key) {
		d->heap[pos].key = key;
		heap_up(d, pos);
	} else {
		d->heap[pos].key = key;
		heap_down(d, pos);
	}
}

/* ---------------------------------------------------------------- create */

/* A line per direction, one the allocation reads and writes, one of drops by reason. */
_Static_assert(sizeof(struct sub_idle_dir) == 64 && sizeof(struct sub_idle) == 4 * 64,
	       "a subscriber's record is a line per direction and two of counters");

/* n records, zeroed, each direction's line aligned to a cache line. NULL when out of memory. */
static struct sub_idle *
records_alloc(size_t n)
{
	struct sub_idle *r;

	if (n > SIZE_MAX / sizeof(*r))
		return NULL;
	r = aligned_alloc(_Alignof(struct sub_idle), n * sizeof(*r));
	if (r != NULL)
		memset(r, 0, n * sizeof(*r));
	return r;
}

size_t
sub_sched_bytes_for(uint32_t nsubs)
{
	/* Per subscriber and the link's entry: its record, and per direction its heap entry
	 * and place in it, demand, rate, plan and bytes at the last tick, and its places in
	 * the active lists. */
	size_t per = sizeof(struct sub_idle) + SUB_RTT_SIDES * sizeof(struct sub_rtt) +
		     sizeof(struct sub_qoe) +
		     SUB_DIRS * (sizeof(struct sub_heap_ent) + 4 * sizeof(uint32_t) +
				 4 * sizeof(uint64_t));

	return ((size_t)nsubs + 1) * per + sizeof(struct sub_sched);
}

void
sub_sched_free(struct sub_sched *ss)
{
	if (ss == NULL)
		return;
	for (int dir = 0; dir < SUB_DIRS; dir++) {
		struct sub_sched_dir *d = &ss->d[dir];

		sub_pool_free(d->pool);
		free(d->heap);
		free(d->pos);
		free(d->demand);
		free(d->rate);
		free(d->tick_bytes);
		free(d->act);
		free(d->act_tmp);
		free(d->fresh);
		free(ss->plan_max[dir]);
	}
	sub_lookup_free(ss->lookup);
	sub_alloc_free(ss->alloc);
	sub_unknown_free(ss->unknown);
	free(ss->subs);
	free(ss->rtt);
	free(ss->qoe);
	free(ss);
}

/*
 * The allocator for set plus the link's own scheduler as one more
 * subscriber under the root, and nunk more for unknown addresses there at
 * the unknown plan (unknown_plan: the set's, else plan's, the old one).
 */
static struct sub_alloc *
alloc_with_link(const struct sub_set *set, uint32_t nunk, const struct sub_plan *plan)
{
	struct sub_set tmp = *set;
	struct sub_subscriber *subs = calloc((size_t)set->nsubs + 1 + nunk, sizeof(*subs));
	struct sub_alloc *a;

	if (subs == NULL)
		return NULL;
	memcpy(subs, set->subs, (size_t)set->nsubs * sizeof(*subs));
	snprintf(subs[set->nsubs].id, SUB_ID_LEN, "(link)");
	subs[set->nsubs].node = SUB_ROOT;
	for (int dir = 0; dir < SUB_DIRS; dir++) {
		uint64_t cap = set->nodes[SUB_ROOT].capacity[dir];

		/* The link's whole capacity: it is capped by what the others leave. */
		subs[set->nsubs].plan[dir].max = cap != 0 ? cap : UINT64_MAX / 16;
	}
	for (uint32_t k = 0; k < nunk; k++) {
		struct sub_subscriber *u = &subs[set->nsubs + 1 + k];

		snprintf(u->id, SUB_ID_LEN, "(unknown)");
		u->node = SUB_ROOT;
		for (int dir = 0; dir < SUB_DIRS; dir++)
			u->plan[dir] = set->unknown == SUB_UNKNOWN_PLAN ? set->unknown_plan[dir]
									: plan[dir];
	}
	tmp.subs = subs;
	tmp.nsubs = set->nsubs + 1 + nunk;
	a = sub_alloc_create(&tmp);
	free(subs);
	return a;
}

struct sub_sched *
sub_sched_create(const struct sub_sched_config *cfg, char *err, size_t errlen)
{
	const struct sub_set *set = cfg->set;
	struct sub_sched *ss;
	uint32_t n = set->nsubs + 1, i, nunk = 0;

	nunk = sub_sched_unknown_slots_for(set, cfg->active, cfg->unknown_slots);
	n += nunk;
	for (int dir = 0; dir < SUB_DIRS; dir++)
		if (cfg->link[dir] == NULL) {
			snprintf(err, errlen, "the link's scheduler is missing");
			return NULL;
		}
	ss = calloc(1, sizeof(*ss));
	if (ss == NULL)
		goto nomem;
	ss->nsubs = set->nsubs;
	ss->nunk = nunk;
	ss->unknown_on = nunk != 0;
	memcpy(ss->unknown_plan, set->unknown_plan, sizeof(ss->unknown_plan));
	if (nunk != 0 && (ss->unknown = sub_unknown_create(nunk, &cfg->unknown_key)) == NULL)
		goto nomem;
	for (i = 0; i < set->nprefixes; i++)
		ss->vlan_prefixes |= set->prefixes[i].vlan != 0;
	ss->lookup_v4 = cfg->lookup_v4;
	ss->lookup_v6 = cfg->lookup_v6;
	ss->lookup_ctx = cfg->lookup_ctx;
	ss->subs = records_alloc(n);
	ss->rtt = calloc(n, sizeof(*ss->rtt));
	ss->qoe = calloc(n, sizeof(*ss->qoe));
	ss->lookup = sub_lookup_create(set);
	ss->alloc = alloc_with_link(set, nunk, NULL);
	if (ss->subs == NULL || ss->rtt == NULL || ss->qoe == NULL || ss->lookup == NULL ||
	    ss->alloc == NULL)
		goto nomem;
	for (int dir = 0; dir < SUB_DIRS; dir++) {
		struct sub_sched_dir *d = &ss->d[dir];

		d->heap = calloc(n, sizeof(*d->heap));
		d->pos = malloc(n * sizeof(*d->pos));
		d->demand = calloc(n, sizeof(*d->demand));
		d->rate = calloc(n, sizeof(*d->rate));
		d->tick_bytes = calloc(n, sizeof(*d->tick_bytes));
		ss->plan_max[dir] = calloc(n, sizeof(*ss->plan_max[dir]));
		d->act = calloc(n, sizeof(*d->act));
		d->act_tmp = calloc(n, sizeof(*d->act_tmp));
		d->fresh = calloc(n, sizeof(*d->fresh));
		if (d->heap == NULL || d->pos == NULL || d->demand == NULL || d->rate == NULL ||
		    d->tick_bytes == NULL || ss->plan_max[dir] == NULL || d->act == NULL ||
		    d->act_tmp == NULL || d->fresh == NULL)
			goto nomem;
		/* The link's own scheduler is always there. */
		d->act[d->nact++] = set->nsubs;
		d->pool = sub_pool_create(&cfg->params[dir], cfg->active, cfg->mem, err, errlen);
		if (d->pool == NULL) {
			sub_sched_free(ss);
			return NULL;
		}
		d->root_cap = set->nodes[SUB_ROOT].capacity[dir];
		d->link_lag = cfg->params[dir].lag_limit_ns != SCHED_LAG_AUTO
					      ? cfg->params[dir].lag_limit_ns
					      : SUB_SCHED_LINK_LAG_NS;
		sub_sched_set_link_rate(ss, (enum sub_dir)dir, 0, 0);
		for (i = 0; i < set->nsubs; i++)
			ss->plan_max[dir][i] = set->subs[i].plan[dir].max;
		ss->plan_max[dir][set->nsubs] = set->nodes[SUB_ROOT].capacity[dir];
		for (i = 0; i < nunk; i++)
			ss->plan_max[dir][set->nsubs + 1 + i] = set->unknown_plan[dir].max;
	}
	for (int dir = 0; dir < SUB_DIRS; dir++)
		for (i = 0; i < n; i++)
			ss->d[dir].pos[i] = SUB_NONE;
	/* The link's own scheduler stays with its entry: it never goes to a pool. */
	ss->subs[set->nsubs].dir[SUB_DOWN].cake = cfg->link[SUB_DOWN];
	ss->subs[set->nsubs].dir[SUB_UP].cake = cfg->link[SUB_UP];
	return ss;
nomem:
	sub_sched_free(ss);
	snprintf(err, errlen, "out of memory for %u subscribers", set->nsubs);
	return NULL;
}

void
sub_sched_set_link_rate(struct sub_sched *ss, enum sub_dir dir, uint64_t rate, uint64_t now)
{
	struct sub_sched_dir *d = &ss->d[dir];
	uint64_t old = d->link_rate;

	d->link_bps = rate * 8;
	d->link_rate = rate != 0 ? rate : d->root_cap / 8; /* 0: no pacer */
	sched_rescale_clock(&d->link_next, now, old, d->link_rate);
}

void
sub_sched_set_node_capacity(struct sub_sched *ss, enum sub_dir dir, uint32_t node, uint64_t bps)
{
	sub_alloc_set_capacity(ss->alloc, dir, node, bps);
}

/* -------------------------------------------------------------- classify */

uint32_t
sub_sched_classify(const struct sub_sched *ss, enum sub_dir dir, const struct sh_pkt *pkt)
{
	uint32_t l3 = pkt->l3_off, vkey;
	uint16_t vlan;
	const uint8_t *ip;

	if (l3 == SH_OFF_NONE)
		return SUB_NONE;
	/* Only a set with VLAN-qualified prefixes needs the frame's VLAN. */
	vlan = 0;
	if (ss->vlan_prefixes) {
		vkey = classify_vlan_key(pkt);
		vlan = (uint16_t)((vkey & 0xfffu) != 0 ? vkey & 0xfffu : vkey >> 12);
	}
	ip = pkt->data + l3;
	if ((pkt->flags & SH_PKT_IPV4) && l3 + 20 <= pkt->hdr_len) {
		const uint8_t *a = ip + (dir == SUB_DOWN ? 16 : 12);
		uint32_t addr = (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 |
				a[3];

		if (vlan == 0 && ss->lookup_v4 != NULL)
			return ss->lookup_v4(ss->lookup_ctx, addr);
		return sub_lookup_v4(ss->lookup, vlan, addr);
	}
	if ((pkt->flags & SH_PKT_IPV6) && l3 + 40 <= pkt->hdr_len) {
		const uint8_t *a = ip + (dir == SUB_DOWN ? 24 : 8);

		if (vlan == 0 && ss->lookup_v6 != NULL)
			return ss->lookup_v6(ss->lookup_ctx, a);
		return sub_lookup_v6(ss->lookup, vlan, a);
	}
	return SUB_NONE;
}

/* ------------------------------------------------------- unknown slots */

/*
 * Subscriber i's CAKE in dir went back to the pool. An unknown address's
 * slot holding no CAKE either way is free for the next new address.
 */
static void
cake_given(struct sub_sched *ss, enum sub_dir dir, uint32_t i)
{
	struct sub_idle *s = &ss->subs[i];

	CTR_SET(s->dir[dir].cake, NULL); /* sub_sched_slot_idle reads it */
	CTR_SET(s->rate[dir], 0);
	ss->d[dir].st.given++;
	if (i > ss->nsubs && s->dir[dir == SUB_DOWN ? SUB_UP : SUB_DOWN].cake == NULL)
		sub_unknown_release(ss->unknown, i - ss->nsubs - 1);
}

/* The subscriber index of pkt's unknown address: its slot, a new one, or the link's entry. */
static uint32_t
unknown_claim(struct sub_sched *ss, enum sub_dir dir, const struct sh_pkt *pkt)
{
	struct sub_prefix k;
	uint32_t slot, sub;

	if (!sub_unknown_key_from(pkt, dir, &k))
		return ss->nsubs;
	slot = sub_unknown_find(ss->unknown, &k);
	if (slot != SUB_NONE)
		return ss->nsubs + 1 + slot;
	/* A slot is held only with a CAKE: none free, and the link's entry takes it. */
	if (sub_pool_available(ss->d[dir].pool) == 0) {
		ss->d[dir].st.pool_empty++;
		return ss->nsubs;
	}
	slot = sub_unknown_take(ss->unknown, &k);
	if (slot == SUB_NONE) {
		ss->d[dir].st.unknown_full++;
		return ss->nsubs;
	}
	/* Its last address's counters and RTT are not this one's. */
	sub = ss->nsubs + 1 + slot;
	memset(&ss->subs[sub], 0, sizeof(ss->subs[sub]));
	for (int d = 0; d < SUB_DIRS; d++)
		ss->d[d].tick_bytes[sub] = 0;
	memset(ss->rtt[sub], 0, sizeof(ss->rtt[sub]));
	memset(&ss->qoe[sub], 0, sizeof(ss->qoe[sub]));
	return sub;
}

uint32_t
sub_sched_unknown_slots_for(const struct sub_set *set, uint32_t active, uint32_t want)
{
	if (set->unknown != SUB_UNKNOWN_PLAN)
		return 0;
	if (want == 0)
		want = active / 4 > 0 ? active / 4 : 1;
	return want < active ? want : active; /* each holds a CAKE: no more than the pool */
}

uint64_t
sub_sched_plan_max(const struct sub_sched *ss, enum sub_dir dir, uint32_t sub)
{
	return ss->plan_max[dir][sub];
}

uint32_t
sub_sched_unknown_slots(const struct sub_sched *ss)
{
	return ss->nunk;
}

uint32_t
sub_sched_unknown_used(const struct sub_sched *ss)
{
	return ss->unknown != NULL ? sub_unknown_used(ss->unknown) : 0;
}

bool
sub_sched_unknown_key(const struct sub_sched *ss, uint32_t k, struct sub_prefix *key)
{
	return ss->unknown != NULL && sub_unknown_key_of(ss->unknown, k, key);
}

uint32_t
sub_sched_unknown_find(const struct sub_sched *ss, enum sub_dir dir, const struct sh_pkt *pkt)
{
	struct sub_prefix k;
	uint32_t slot;

	if (ss->unknown == NULL || !sub_unknown_key_from(pkt, dir, &k))
		return SUB_NONE;
	slot = sub_unknown_find(ss->unknown, &k);
	return slot != SUB_NONE ? ss->nsubs + 1 + slot : SUB_NONE;
}

bool
sub_sched_unknown_hash(const struct sub_sched *ss, enum sub_dir dir, const struct sh_pkt *pkt,
		       uint32_t *hash)
{
	struct sub_prefix k;

	if (!ss->unknown_on || !sub_unknown_key_from(pkt, dir, &k))
		return false;
	*hash = sub_unknown_hash_of(ss->unknown, &k);
	return true;
}

/* ------------------------------------------------------ loaded latency */

/* Subscriber i's minute, if the worker's moved on since its last (shaper/subscriber_qoe.h). */
static void
qoe_turn(struct sub_sched *ss, uint32_t i)
{
	struct sub_qoe *q = &ss->qoe[i];
	const struct sub_idle *s;
	uint64_t bytes[SUB_DIRS], plan[SUB_DIRS];

	if (q->min == ss->qoe_min)
		return;
	s = &ss->subs[i];
	for (int d = 0; d < SUB_DIRS; d++) {
		bytes[d] = s->dir[d].bytes;
		plan[d] = ss->plan_max[d][i];
	}
	sub_qoe_turn(q, ss->qoe_min, bytes, plan);
}

/*
 * A new minute: every subscriber holding a CAKE this way starts it, so what
 * arrives from now on is the new minute's. One that holds none starts it
 * when it takes one (or with its next RTT sample): until then nothing
 * arrives for it. Once a minute, over the active ones only.
 */
static void
qoe_minute(struct sub_sched *ss, struct sub_sched_dir *d, uint64_t now)
{
	uint32_t m = sub_qoe_minute(now);

	if (m == d->qoe_swept)
		return;
	if (m != ss->qoe_min)
		__atomic_store_n(&ss->qoe_min, m, __ATOMIC_RELAXED);
	for (uint32_t j = 0; j < d->nact; j++)
		qoe_turn(ss, d->act[j]);
	for (uint32_t j = 0; j < d->nfresh; j++)
		qoe_turn(ss, d->fresh[j]);
	d->qoe_swept = m;
}

/* ------------------------------------------------------------ allocation */

/*
 * What subscriber i can use, in bit/s, from its backlog and arrivals since
 * the last tick; was_all: it was backlogged (SUB_DEMAND_ALL) at the last.
 */
static uint64_t
demand_of(struct sub_idle *s, enum sub_dir dir, uint64_t *tick_bytes, uint64_t dt, bool was_all)
{
	uint64_t arrived = s->dir[dir].bytes - *tick_bytes, now_bps, keep_up, drain;
	/* Its CAKE's backlog, kept beside the rest: no read of the CAKE per subscriber per tick. */
	uint32_t backlog = s->dir[dir].qlen;

	*tick_bytes = s->dir[dir].bytes;
	now_bps = dt != 0 ? arrived * 8u * 1000000000ull / dt : 0;
	/* An average over about four ticks, so one burst does not set the demand. */
	CTR_SET(s->arrivals[dir], (3 * s->arrivals[dir] + now_bps) / 4);
	/*
	 * A standing queue: all it can get. It stays so while it holds a
	 * packet, and leaves only once its queue is found empty: served at
	 * its share, it keeps one or two packets (the AQM keeps the queue
	 * short, and at a share of a few hundred kbit/s one frame takes
	 * longer than a tick to send), so a threshold of two alone would
	 * flip it between its share and its plan from tick to tick. Only an
	 * empty queue shows that its rate carried all it sent.
	 */
	if (backlog >= 2 || (backlog != 0 && was_all))
		return SUB_DEMAND_ALL;
	if (s->arrivals[dir] == 0 && backlog == 0)
		return 0;
	/*
	 * Keeping up: its arrivals and 1/32 more. What it is given and does not
	 * use is lost to the others until the next tick, so no more than that;
	 * but at least enough to send a frame left in its queue within four
	 * ticks, or a subscriber whose arrivals stopped would keep it.
	 */
	keep_up = s->arrivals[dir] + s->arrivals[dir] / 32;
	drain = (uint64_t)backlog * 8u * 1514u * 1000000000ull / (4 * SUB_SCHED_TICK_NS);
	return keep_up > drain ? keep_up : drain;
}

SH_HEAPSORT_DEFINE(sort_u32, uint32_t)

/*
 * The time to the next allocation: SUB_SCHED_TICK_NS, or, with so many
 * subscribers holding a CAKE that their average share of the link takes
 * longer than four ticks to carry one full frame, a quarter of that time
 * (up to SUB_SCHED_TICK_MAX_NS). A split finer than that changes nothing
 * the next frame of any of them could show, and each one costs a pass
 * over them all and a new rate written into thousands of CAKEs: with
 * 10,000 busy on 1 Gbit/s (100 kbit/s each, 121 ms a frame), every 30 ms
 * instead of every 5.
 */
static uint64_t
tick_period(const struct sub_sched_dir *d)
{
	uint64_t bps = d->link_bps != 0 ? d->link_bps : d->root_cap;
	double t;

	if (bps == 0)
		return SUB_SCHED_TICK_NS;
	t = (double)d->nact * SUB_SCHED_FRAME_BITS * 1e9 / (4.0 * (double)bps);
	if (t <= (double)SUB_SCHED_TICK_NS)
		return SUB_SCHED_TICK_NS;
	return t >= (double)SUB_SCHED_TICK_MAX_NS ? SUB_SCHED_TICK_MAX_NS : (uint64_t)t;
}

/* The subscribers that took a CAKE since the last tick join the active list, in order. */
static void
merge_fresh(struct sub_sched_dir *d)
{
	uint32_t i = 0, j = 0, n = 0, *t;

	if (d->nfresh == 0)
		return;
	/* Not backlogged before its first tick (its entry may be from an earlier CAKE). */
	for (j = 0; j < d->nfresh; j++)
		d->demand[d->fresh[j]] = 0;
	j = 0;
	sort_u32(d->fresh, d->nfresh);
	while (i < d->nact || j < d->nfresh)
		if (j == d->nfresh || (i < d->nact && d->act[i] < d->fresh[j]))
			d->act_tmp[n++] = d->act[i++];
		else
			d->act_tmp[n++] = d->fresh[j++];
	t = d->act;
	d->act = d->act_tmp;
	d->act_tmp = t;
	d->nact = n;
	d->nfresh = 0;
}

/*
 * The allocation over the subscribers holding a CAKE; every other one has
 * no demand, so it takes nothing and needs no look. In ascending order, as
 * a scan of them all would visit them (the pool and the heap see the same
 * sequence of calls).
 */
static void
sub_sched_tick(struct sub_sched *ss, enum sub_dir dir, uint64_t now)
{
	struct sub_sched_dir *d = &ss->d[dir];
	uint64_t dt = now - d->last_tick;
	uint32_t i, j, w;
	bool same;

	qoe_minute(ss, d, now);
	merge_fresh(d);
	for (j = w = 0; j < d->nact; j++) {
		struct sub_idle *s;

		i = d->act[j];
		s = &ss->subs[i];
		if (s->dir[dir].cake == NULL)
			continue;
		d->demand[i] = demand_of(s, dir, &d->tick_bytes[i], dt,
					 d->demand[i] == SUB_DEMAND_ALL);
		/* Drained and quiet for the hold: the CAKE goes back. */
		if (i != ss->nsubs && d->demand[i] == 0 && d->pos[i] == SUB_NONE &&
		    sub_pool_may_return(s->dir[dir].cake, s->dir[dir].last_pkt_ns, now) &&
		    sub_pool_give(d->pool, s->dir[dir].cake) == 0) {
			cake_given(ss, dir, i);
			continue;
		}
		d->act[w++] = i;
	}
	d->nact = w;
	sub_alloc_run_active(ss->alloc, dir, d->link_bps, d->act, d->nact, d->demand, d->rate,
			     NULL);
	/*
	 * The same input as last tick (the same list, each with the same
	 * ceiling): what follows would set every rate to what it set last tick,
	 * since it depends on the ceiling alone (demand counts only while under
	 * the plan, where the ceiling is the demand). Outside this loop a rate
	 * changes only when a CAKE is taken or given back, which changes the
	 * list. So this pass over the records is not needed.
	 */
	same = sub_alloc_same_as_last(ss->alloc, dir);
	if (same)
		d->st.repeats++;
	for (j = same ? d->nact : 0; j < d->nact; j++) {
		struct sub_idle *s;
		uint64_t bps, r, w, max;

		i = d->act[j];
		s = &ss->subs[i];
		bps = d->rate[i];
		/*
		 * A subscriber without a standing queue is paced at its plan, not
		 * at the share it was given: that share is about what it sends,
		 * so a packet of a sparse flow (a call, a ping) would wait for the
		 * rate to carry it, one inter-arrival time. Over a tick it still
		 * sends about its demand, which the others' shares leave it; the
		 * link's pacer bounds the sum. Only while it got all it asked for:
		 * one held below its demand competes for its node or the link, so
		 * it would flip between the two rates from tick to tick (a rate
		 * change costs a few hundred instructions) as its queue comes and
		 * goes, and its share is what it may have.
		 */
		if (d->demand[i] != SUB_DEMAND_ALL && d->rate[i] >= d->demand[i] &&
		    ss->plan_max[dir][i] > bps)
			bps = ss->plan_max[dir][i];
		r = bps / 8;
		w = s->rate[dir];
		if (r == 0 || r == w)
			continue;
		/*
		 * Within the dead band below its share: kept
		 * (shaper/subscriber_alloc.h). The plan's min is read only for
		 * a write: the rates written are at least the min, so a share
		 * above one is above the min (after a live change that raised
		 * the min, the old rate is kept only while within the band).
		 */
		max = ss->plan_max[dir][i] / 8;
		if (r < max && sub_rate_band_keeps(r, w))
			continue;
		r = sub_rate_banded(r, w, sub_alloc_plan(ss->alloc, dir, i)->min / 8, max);
		if (r == 0 || r == w)
			continue;
		if (sched_set_rate(s->dir[dir].cake, r, now) == 0) {
			CTR_SET(s->rate[dir], r);
			d->st.rate_changes++;
			/* A new rate moves its next time. */
			if (d->pos[i] != SUB_NONE)
				heap_set(ss, dir, i, sched_next_time(s->dir[dir].cake, now));
		}
	}
	d->st.allocations++;
	d->last_tick = now;
	d->next_tick = now + tick_period(d);
}

/* --------------------------------------------------------------- enqueue */

/* Count the drops appended after old_tail (NULL: the whole list) on s; how many there were. */
static inline uint32_t
count_drops(struct sub_idle *s, enum sub_dir dir, const struct sh_pkt_list *dropped,
	    const struct sh_pkt *old_tail)
{
	uint64_t r[SHAPER_DROP_MAX] = { 0 };
	uint32_t n = sched_count_new_drops(dropped, old_tail, r);
	uint64_t other = n - r[SHAPER_DROP_AQM] - r[SHAPER_DROP_ACK_FILTER];

	/* A CAKE drops by AQM, ACK filter or overflow: anything else is its overflow. */
	if (r[SHAPER_DROP_AQM] != 0)
		CTR_ADD(s->dropped[dir][SUB_DROP_AQM], r[SHAPER_DROP_AQM]);
	if (r[SHAPER_DROP_ACK_FILTER] != 0)
		CTR_ADD(s->dropped[dir][SUB_DROP_ACK_FILTER], r[SHAPER_DROP_ACK_FILTER]);
	if (other != 0)
		CTR_ADD(s->dropped[dir][SUB_DROP_OVERFLOW], other);
	return n;
}

/*
 * Whose packet goes when the direction holds more than its joint limit: one
 * holding at least the average backlog (so never a light subscriber for a
 * heavy one). The arriving subscriber if it does, else the one found last
 * time if it still does, else the largest (a scan of those with packets,
 * needed only when the fat one changed).
 */
static uint32_t
budget_victim(struct sub_sched *ss, enum sub_dir dir, uint32_t arriving)
{
	struct sub_sched_dir *d = &ss->d[dir];
	uint64_t avg = d->nheap != 0 ? d->queued / d->nheap : 0;
	uint32_t best = arriving;

	if (ss->subs[arriving].dir[dir].qlen != 0 && ss->subs[arriving].dir[dir].qlen >= avg)
		return arriving;
	if (d->fat <= ss->nsubs + ss->nunk && ss->subs[d->fat].dir[dir].qlen != 0 &&
	    ss->subs[d->fat].dir[dir].qlen >= avg)
		return d->fat;
	for (uint32_t i = 0; i < d->nheap; i++)
		if (ss->subs[d->heap[i].sub].dir[dir].qlen > ss->subs[best].dir[dir].qlen)
			best = d->heap[i].sub;
	d->fat = best;
	return best;
}

/* One packet off the head of a fat subscriber's CAKE, to keep the direction within its limit. */
static void
budget_drop(struct sub_sched *ss, enum sub_dir dir, uint32_t arriving, uint64_t now,
	    struct sh_pkt_list *dropped)
{
	struct sub_sched_dir *d = &ss->d[dir];
	uint32_t victim = budget_victim(ss, dir, arriving);
	struct sub_idle *v = &ss->subs[victim];
	struct sh_pkt *old_tail = dropped->tail, *p;
	unsigned int n = 0;

	if (v->dir[dir].cake == NULL || v->dir[dir].qlen == 0)
		return;
	/* The search is bounded per call: a packet far along the queues takes a few. */
	for (int i = 0; n == 0 && i < SUB_BUDGET_TRIES; i++)
		n = sched_flush_some(v->dir[dir].cake, dropped, 1);
	if (n == 0)
		return;
	p = sh_pkt_list_after(dropped, old_tail);
	p->drop_reason = SHAPER_DROP_OVERFLOW;
	CTR_ADD(v->dropped[dir][SUB_DROP_BUDGET], 1);
	CTR_SET(v->dir[dir].qlen, v->dir[dir].qlen - 1);
	d->queued--;
	d->st.budget_drops++;
	heap_set(ss, dir, victim, sched_next_time(v->dir[dir].cake, now));
}

void
sub_sched_set_limit(struct sub_sched *ss, enum sub_dir dir, uint64_t pkts)
{
	ss->d[dir].limit = pkts;
}

int
sub_sched_enqueue(struct sub_sched *ss, enum sub_dir dir, uint32_t sub, struct sh_pkt *pkt,
		  uint64_t now, struct sh_pkt_list *dropped)
{
	struct sub_sched_dir *d = &ss->d[dir];
	struct sh_pkt *old_tail = dropped->tail;
	struct sub_idle *s;
	uint32_t nd;
	int self;

	if (sub >= ss->nsubs) {
		d->st.unknown++;
		sub = ss->unknown_on ? unknown_claim(ss, dir, pkt) : ss->nsubs;
	}
	s = &ss->subs[sub];
	if (s->dir[dir].cake == NULL) {
		struct sched *c = sub_pool_take(d->pool);

		if (c == NULL) {
			/* None free: the link's scheduler holds it until one is. */
			d->st.pool_empty++;
			CTR_ADD(s->dir[dir].bytes, pkt->len); /* its demand still counts */
			s->dir[dir].last_pkt_ns = now;
			sub = ss->nsubs;
			s = &ss->subs[sub];
		} else {
			uint64_t r = ss->plan_max[dir][sub] / 8;

			CTR_SET(s->dir[dir].cake, c);
			s->dir[dir].lag_seen = sched_lag_skipped_ns(c);
			qoe_turn(ss, sub); /* what arrives from now on is this minute's */
			d->st.taken++;
			d->fresh[d->nfresh++] = sub;
			/* Its plan until the allocation says more; the link pacer bounds the sum.
			 */
			if (r != 0 && sched_set_rate(c, r, now) == 0)
				CTR_SET(s->rate[dir], r);
		}
	}
	self = sched_enqueue(s->dir[dir].cake, pkt, now, dropped);
	CTR_ADD(s->dir[dir].bytes, pkt->len);
	CTR_ADD(s->dir[dir].packets, 1);
	s->dir[dir].last_pkt_ns = now;
	nd = dropped->tail == old_tail ? 0 : count_drops(s, dir, dropped, old_tail);
	CTR_SET(s->dir[dir].qlen, s->dir[dir].qlen + 1 - nd);
	/* No credit for idle time: an idle direction's pacer starts again at now. */
	if (d->queued == 0 && d->link_next < now)
		d->link_next = now;
	d->queued = d->queued + 1 - nd;
	heap_set(ss, dir, sub, sched_next_time(s->dir[dir].cake, now));
	if (d->limit != 0 && d->queued > d->limit && !self)
		budget_drop(ss, dir, sub, now, dropped);
	return self;
}

/*
 * Start loading what the enqueues of a burst will touch: the records and
 * heap places, then each CAKE, a step of it over the whole burst at a time.
 */
static void
load_ahead(const struct sub_sched *ss, enum sub_dir dir, const uint32_t *subs,
	   struct sh_pkt *const *pkts, unsigned int n)
{
	const struct sub_sched_dir *d = &ss->d[dir];
	unsigned int i, step;

	for (i = 0; i < n; i++) {
		if (subs[i] < ss->nsubs) {
			__builtin_prefetch(&ss->subs[subs[i]].dir[dir], 1);
			__builtin_prefetch(&d->pos[subs[i]]);
		}
	}
	for (step = 0; step < SCHED_PREFETCH_ENQUEUE_STEPS; step++) {
		for (i = 0; i < n; i++) {
			const struct sched *c = subs[i] < ss->nsubs
								? ss->subs[subs[i]].dir[dir].cake
								: NULL;

			if (c == NULL)
				continue;
			if (step == 0 && d->pos[subs[i]] != SUB_NONE)
				__builtin_prefetch(&d->heap[d->pos[subs[i]]], 1);
			sched_prefetch_enqueue(c, pkts[i], step);
		}
	}
}

void
sub_sched_enqueue_burst(struct sub_sched *ss, enum sub_dir dir, const uint32_t *subs,
			struct sh_pkt *const *pkts, unsigned int n, uint64_t now,
			struct sh_pkt_list *dropped)
{
	/* With few busy their state is in cache, and loading it ahead costs more than it saves. */
	if (ss->d[dir].nact >= SUB_PREFETCH_MIN_ACTIVE)
		load_ahead(ss, dir, subs, pkts, n);
	for (unsigned int i = 0; i < n; i++)
		sub_sched_enqueue(ss, dir, subs[i], pkts[i], now, dropped);
}

/* --------------------------------------------------------------- dequeue */

/*
 * Add what s's CAKE wrote off since the last look to its record. A CAKE
 * writes off only in a dequeue, so a look after each misses nothing.
 */
static inline void
fold_lag(struct sub_idle *s, enum sub_dir dir)
{
	uint64_t cur = sched_lag_skipped_ns(s->dir[dir].cake);

	if (cur == s->dir[dir].lag_seen)
		return;
	/* Below the last count: stats.reset zeroed it (the link's own scheduler's entry). */
	CTR_ADD(s->lag_skipped_ns[dir],
		cur > s->dir[dir].lag_seen ? cur - s->dir[dir].lag_seen : cur);
	s->dir[dir].lag_seen = cur;
}

/* The ECN bits in the packet's IP header now (its pkt->ecn is what it arrived with). */
static inline unsigned int
ecn_now(const struct sh_pkt *pkt)
{
	const uint8_t *ip = pkt->data + pkt->l3_off;

	if (pkt->l3_off == SH_OFF_NONE || pkt->l3_off + 2u > pkt->hdr_len)
		return 0;
	if (pkt->flags & SH_PKT_IPV4)
		return ip[1] & 3u;
	return pkt->flags & SH_PKT_IPV6 ? (ip[1] >> 4) & 3u : 0;
}

/*
 * Take up to max of the subscribers due at now off the top of the heap,
 * soonest first, into ahead, and start loading what their dequeues will
 * read (sched_prefetch_dequeue), a step over all of them at a time: with
 * thousands busy each one's CAKE is out of cache, and the loads overlap.
 */
static unsigned int
take_ahead(struct sub_sched *ss, enum sub_dir dir, struct sub_heap_ent *ahead, unsigned int max,
	   uint64_t now)
{
	struct sub_sched_dir *d = &ss->d[dir];
	unsigned int n = 0, i, step;

	while (n < max && d->nheap != 0 && d->heap[0].key <= now) {
		ahead[n++] = d->heap[0];
		heap_set(ss, dir, d->heap[0].sub, UINT64_MAX);
	}
	if (n < 2 || d->nact < SUB_PREFETCH_MIN_ACTIVE) /* nothing to overlap with, or in cache */
		return n;
	for (i = 0; i < n; i++) {
		const struct sub_idle *s = &ss->subs[ahead[i].sub];

		__builtin_prefetch(&s->dir[dir], 1);
	}
	for (step = 0; step < SCHED_PREFETCH_DEQUEUE_STEPS; step++)
		for (i = 0; i < n; i++)
			sched_prefetch_dequeue(ss->subs[ahead[i].sub].dir[dir].cake, now, step);
	return n;
}

unsigned int
sub_sched_dequeue_burst(struct sub_sched *ss, enum sub_dir dir, struct sh_pkt **out,
			unsigned int max, uint64_t now, struct sh_pkt_list *dropped)
{
	struct sub_sched_dir *d = &ss->d[dir];
	unsigned int n = 0;
	struct sub_heap_ent ahead[SUB_DEQUEUE_AHEAD];
	unsigned int na = 0, ia = 0;
	uint32_t last = SUB_NONE; /* the subscriber served last */

	if (now >= d->next_tick)
		sub_sched_tick(ss, dir, now);
	while (n < max) {
		uint32_t sub, nd;
		struct sub_idle *s;
		struct sh_pkt *old_tail = dropped->tail, *pkt;
		uint64_t next;

		if (ia == na) {
			na = take_ahead(ss, dir, ahead,
					max - n < SUB_DEQUEUE_AHEAD ? max - n : SUB_DEQUEUE_AHEAD,
					now);
			ia = 0;
			if (na == 0)
				break;
		}
		/*
		 * The soonest due is the first taken ahead, unless one served
		 * since went back into the heap before it, or the one served
		 * last is due as soon (a heap keeps its top on a tie): the order
		 * of the heap alone, but among others due at the same time.
		 */
		sub = d->nheap != 0 && (d->heap[0].key < ahead[ia].key ||
					(d->heap[0].key == ahead[ia].key && d->heap[0].sub == last))
				      ? d->heap[0].sub
				      : ahead[ia].sub;
		if (d->link_rate != 0 && d->link_next > now) {
			d->st.link_waits++;
			break;
		}
		if (sub == ahead[ia].sub)
			ia++;
		s = &ss->subs[sub];
		pkt = sched_dequeue(s->dir[dir].cake, now, dropped);
		fold_lag(s, dir);
		nd = dropped->tail == old_tail ? 0 : count_drops(s, dir, dropped, old_tail);
		d->queued -= nd + (pkt != NULL);
		CTR_SET(s->dir[dir].qlen, s->dir[dir].qlen - nd - (pkt != NULL));
		next = sched_next_time(s->dir[dir].cake, now);
		if (pkt != NULL) {
			uint32_t len = pkt->adj_len != 0 ? pkt->adj_len : pkt->len;

			CTR_ADD(s->dir[dir].sent_bytes, pkt->len);
			CTR_ADD(s->dir[dir].sent_packets, 1);
			/* Arrived ECT and leaves CE: its CAKE marked it. */
			if (pkt->ecn != 0 && pkt->ecn != SUB_ECN_CE && ecn_now(pkt) == SUB_ECN_CE)
				CTR_ADD(s->marks[dir], 1);
			out[n++] = pkt;
			if (d->link_rate != 0) {
				/*
				 * Behind by more than the lag limit: the rest is passed
				 * over, but the limit's worth is still caught up. Restarted
				 * at now instead, a worker slower than the link would send
				 * one frame in every turn that found it that far behind.
				 */
				uint64_t skipped = sched_clamp_lag(&d->link_next, now, d->link_lag);

				if (skipped != 0) {
					d->st.link_lag_skips++;
					d->st.link_lag_skipped_ns += skipped;
				}
				d->link_next += (uint64_t)len * 1000000000ull / d->link_rate;
			}
		} else if (next <= now) {
			next = now + 1; /* held back inside (overlimit): look again later */
		}
		heap_set(ss, dir, sub, next);
		last = sub;
	}
	/* What was taken ahead and not served goes back as it was. */
	for (; ia < na; ia++)
		heap_set(ss, dir, ahead[ia].sub, ahead[ia].key);
	return n;
}

uint64_t
sub_sched_next_time(const struct sub_sched *ss, enum sub_dir dir, uint64_t now)
{
	const struct sub_sched_dir *d = &ss->d[dir];
	uint64_t t = d->next_tick;

	/* Nothing queued and no CAKE to give back: nothing to do until a packet comes. */
	if (d->queued == 0 && d->st.taken == d->st.given)
		return UINT64_MAX;
	if (d->nheap != 0) {
		uint64_t k = d->heap[0].key;

		if (d->link_rate != 0 && d->link_next > k)
			k = d->link_next;
		if (k < t)
			t = k;
	}
	return t > now ? t : now;
}

void
sub_sched_flush(struct sub_sched *ss, enum sub_dir dir, struct sh_pkt_list *out)
{
	struct sub_sched_dir *d = &ss->d[dir];

	for (uint32_t i = 0; i <= ss->nsubs + ss->nunk; i++) {
		struct sub_idle *s = &ss->subs[i];

		if (s->dir[dir].cake == NULL)
			continue;
		sched_flush(s->dir[dir].cake, out);
		CTR_SET(s->dir[dir].qlen, 0);
		if (d->pos[i] != SUB_NONE)
			heap_set(ss, dir, i, UINT64_MAX);
		if (i != ss->nsubs && sub_pool_give(d->pool, s->dir[dir].cake) == 0)
			cake_given(ss, dir, i);
	}
	d->queued = 0;
	/* Whatever kept its CAKE (none should) stays active. */
	d->nact = d->nfresh = 0;
	for (uint32_t i = 0; i <= ss->nsubs + ss->nunk; i++)
		if (ss->subs[i].dir[dir].cake != NULL)
			d->act[d->nact++] = i;
}

uint64_t
sub_sched_backlog_pkts(const struct sub_sched *ss, enum sub_dir dir)
{
	return ss->d[dir].queued;
}

void
sub_sched_get_stats(const struct sub_sched *ss, enum sub_dir dir, struct sub_sched_stats *st)
{
	const struct sub_sched_dir *d = &ss->d[dir];

	*st = d->st;
	st->pool_free = sub_pool_available(d->pool);
	st->active = (uint32_t)(d->st.taken - d->st.given);
}

const void *
sub_sched_lookup_ctx(const struct sub_sched *ss)
{
	return __atomic_load_n(&ss->lookup_ctx, __ATOMIC_ACQUIRE);
}

const struct sub_idle *
sub_sched_sub(const struct sub_sched *ss, uint32_t sub)
{
	return &ss->subs[sub];
}

/*
 * Subscriber sub's record as another thread reads it, or NULL past the
 * slots: a live change may grow them (sub_sched_change_apply stores the
 * new records before the new count, so a count read first never runs past
 * the records read after it). The old records stay valid until the change
 * that replaced them is freed, after the worker has answered.
 */
static const struct sub_idle *
record_of(const struct sub_sched *ss, uint32_t sub)
{
	uint32_t n = __atomic_load_n(&ss->nsubs, __ATOMIC_ACQUIRE);

	if (sub > n + ss->nunk)
		return NULL;
	return &__atomic_load_n(&ss->subs, __ATOMIC_ACQUIRE)[sub];
}

void
sub_sched_counters(const struct sub_sched *ss, uint32_t sub, enum sub_dir dir,
		   struct sub_counters *out)
{
	const struct sub_idle *s = record_of(ss, sub);

	if (s == NULL) {
		memset(out, 0, sizeof(*out));
		return;
	}
	out->rate = CTR_GET(s->rate[dir]);
	out->arrival_bps = CTR_GET(s->arrivals[dir]);
	out->bytes = CTR_GET(s->dir[dir].bytes);
	out->packets = CTR_GET(s->dir[dir].packets);
	out->sent_bytes = CTR_GET(s->dir[dir].sent_bytes);
	out->sent_packets = CTR_GET(s->dir[dir].sent_packets);
	for (int k = 0; k < SUB_DROP_KINDS; k++)
		out->dropped[k] = CTR_GET(s->dropped[dir][k]);
	out->marks = CTR_GET(s->marks[dir]);
	out->qlen = CTR_GET(s->dir[dir].qlen);
	out->lag_skipped_ns = CTR_GET(s->lag_skipped_ns[dir]);
	/* The link's entry always holds the link's scheduler. */
	out->active = sub != sub_sched_nsubs(ss) && out->rate != 0;
}

uint32_t
sub_sched_nsubs(const struct sub_sched *ss)
{
	return __atomic_load_n(&ss->nsubs, __ATOMIC_ACQUIRE);
}

uint32_t
sub_sched_find(const struct sub_sched *ss, const struct sub_prefix *a)
{
	if (a->family == 4)
		return sub_lookup_v4(ss->lookup, a->vlan,
				     (uint32_t)a->addr[0] << 24 | (uint32_t)a->addr[1] << 16 |
						     (uint32_t)a->addr[2] << 8 | a->addr[3]);
	return sub_lookup_v6(ss->lookup, a->vlan, a->addr);
}

/* ---------------------------------------------------------- live changes */

struct sub_sched_change {
	bool applied;
	/* Before apply the new state, after it the old one. */
	struct sub_alloc *alloc;
	uint64_t *plan_max[SUB_DIRS];
	uint64_t root_cap[SUB_DIRS];
	struct sub_lookup *lookup;
	bool vlan_prefixes;
	const void *lookup_ctx; /* NULL: the scheduler keeps its own */
	void (*ctx_free)(const void *ctx);
	uint32_t *reset; /* slots that take a new subscriber */
	uint32_t nreset;
	bool unknown_on; /* new unknown addresses take a slot */
	struct sub_plan unknown_plan[SUB_DIRS];
	/*
	 * More slots than the scheduler has (nsubs, the set's): every array
	 * per slot, made here at the new size; apply moves the state into
	 * them and hands back the old ones. NULL when the count stays.
	 */
	uint32_t nsubs;
	struct sub_idle *subs;
	struct sub_rtt (*rtt)[SUB_RTT_SIDES];
	struct sub_qoe *qoe;
	struct sub_heap_ent *heap[SUB_DIRS];
	uint32_t *pos[SUB_DIRS], *act[SUB_DIRS], *act_tmp[SUB_DIRS], *fresh[SUB_DIRS];
	uint64_t *demand[SUB_DIRS], *rate[SUB_DIRS], *tick_bytes[SUB_DIRS];
};

void
sub_sched_change_free(struct sub_sched_change *c)
{
	if (c == NULL)
		return;
	sub_alloc_free(c->alloc);
	for (int dir = 0; dir < SUB_DIRS; dir++) {
		free(c->plan_max[dir]);
		free(c->heap[dir]);
		free(c->pos[dir]);
		free(c->act[dir]);
		free(c->act_tmp[dir]);
		free(c->fresh[dir]);
		free(c->demand[dir]);
		free(c->rate[dir]);
		free(c->tick_bytes[dir]);
	}
	free(c->subs);
	free(c->rtt);
	free(c->qoe);
	sub_lookup_free(c->lookup);
	if (c->lookup_ctx != NULL && c->ctx_free != NULL)
		c->ctx_free(c->lookup_ctx);
	free(c->reset);
	free(c);
}

/* The arrays per slot at n (the new count, the link's entry and the unknown slots with it). */
static int
grow_build(struct sub_sched_change *c, uint32_t n)
{
	c->subs = records_alloc(n);
	c->rtt = calloc(n, sizeof(*c->rtt));
	c->qoe = calloc(n, sizeof(*c->qoe));
	if (c->subs == NULL || c->rtt == NULL || c->qoe == NULL)
		return -ENOMEM;
	for (int dir = 0; dir < SUB_DIRS; dir++) {
		c->heap[dir] = calloc(n, sizeof(*c->heap[dir]));
		c->pos[dir] = malloc(n * sizeof(*c->pos[dir]));
		c->act[dir] = calloc(n, sizeof(*c->act[dir]));
		c->act_tmp[dir] = calloc(n, sizeof(*c->act_tmp[dir]));
		c->fresh[dir] = calloc(n, sizeof(*c->fresh[dir]));
		c->demand[dir] = calloc(n, sizeof(*c->demand[dir]));
		c->rate[dir] = calloc(n, sizeof(*c->rate[dir]));
		c->tick_bytes[dir] = calloc(n, sizeof(*c->tick_bytes[dir]));
		if (c->heap[dir] == NULL || c->pos[dir] == NULL || c->act[dir] == NULL ||
		    c->act_tmp[dir] == NULL || c->fresh[dir] == NULL || c->demand[dir] == NULL ||
		    c->rate[dir] == NULL || c->tick_bytes[dir] == NULL)
			return -ENOMEM;
		for (uint32_t i = 0; i < n; i++)
			c->pos[dir][i] = SUB_NONE;
	}
	return 0;
}

struct sub_sched_change *
sub_sched_change_build(const struct sub_sched *ss, const struct sub_set *set, const uint32_t *reset,
		       uint32_t nreset, const void *lookup_ctx, void (*ctx_free)(const void *ctx),
		       char *err, size_t errlen)
{
	struct sub_sched_change *c;
	uint32_t n = set->nsubs + 1 + ss->nunk, i;
	bool plan = set->unknown == SUB_UNKNOWN_PLAN;

	if (set->nsubs < ss->nsubs) {
		snprintf(err, errlen, "the change has %u subscriber slots, the scheduler %u",
			 set->nsubs, ss->nsubs);
		return NULL;
	}
	/* The slots of unknown addresses are made at start-up. */
	if (plan && ss->nunk == 0) {
		snprintf(err, errlen,
			 "unknown: a plan per unknown address needs a restart (shaperd started "
			 "with unknown addresses on the link)");
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		goto nomem;
	c->lookup_ctx = lookup_ctx;
	c->ctx_free = ctx_free;
	c->nsubs = set->nsubs;
	if (set->nsubs > ss->nsubs && grow_build(c, n) != 0)
		goto nomem;
	/* Back to "link": new addresses share the link, the slots taken drain at their plan. */
	c->unknown_on = plan;
	memcpy(c->unknown_plan, plan ? set->unknown_plan : ss->unknown_plan,
	       sizeof(c->unknown_plan));
	c->alloc = alloc_with_link(set, ss->nunk, c->unknown_plan);
	c->lookup = sub_lookup_create(set);
	c->reset = calloc(nreset != 0 ? nreset : 1, sizeof(*c->reset));
	if (c->alloc == NULL || c->lookup == NULL || c->reset == NULL)
		goto nomem;
	if (nreset != 0)
		memcpy(c->reset, reset, (size_t)nreset * sizeof(*reset));
	c->nreset = nreset;
	for (i = 0; i < set->nprefixes; i++)
		c->vlan_prefixes |= set->prefixes[i].vlan != 0;
	for (int dir = 0; dir < SUB_DIRS; dir++) {
		c->plan_max[dir] = calloc(n, sizeof(*c->plan_max[dir]));
		if (c->plan_max[dir] == NULL)
			goto nomem;
		for (i = 0; i < set->nsubs; i++)
			c->plan_max[dir][i] = set->subs[i].plan[dir].max;
		c->root_cap[dir] = set->nodes[SUB_ROOT].capacity[dir];
		c->plan_max[dir][set->nsubs] = c->root_cap[dir];
		for (i = 0; i < ss->nunk; i++)
			c->plan_max[dir][set->nsubs + 1 + i] = c->unknown_plan[dir].max;
	}
	return c;
nomem:
	if (c != NULL)
		c->lookup_ctx = NULL; /* still the caller's */
	sub_sched_change_free(c);
	snprintf(err, errlen, "out of memory for a change of %u subscribers", set->nsubs);
	return NULL;
}

#define SWAP(a, b)                                                                                 \
	do {                                                                                       \
		__typeof__(a) t_ = (a);                                                            \
		(a) = (b);                                                                         \
		(b) = t_;                                                                          \
	} while (0)

/*
 * Move the state into c's larger arrays: the slots keep their indices, the
 * link's entry and the unknown slots after them move up by the slots
 * added (in every heap entry and list that names them). A copy of the
 * records, some hundreds of bytes a slot: about a millisecond for 10,000,
 * once per growth by a quarter.
 */
static void
grow_apply(struct sub_sched *ss, struct sub_sched_change *c)
{
	uint32_t old = ss->nsubs, nw = c->nsubs, tail = 1 + ss->nunk, delta = nw - old;

#define REMAP(i) ((i) < old ? (i) : (i) + delta)
	memcpy(c->subs, ss->subs, (size_t)old * sizeof(*c->subs));
	memcpy(c->subs + nw, ss->subs + old, (size_t)tail * sizeof(*c->subs));
	memcpy(c->rtt, ss->rtt, (size_t)old * sizeof(*c->rtt));
	memcpy(c->rtt + nw, ss->rtt + old, (size_t)tail * sizeof(*c->rtt));
	memcpy(c->qoe, ss->qoe, (size_t)old * sizeof(*c->qoe));
	memcpy(c->qoe + nw, ss->qoe + old, (size_t)tail * sizeof(*c->qoe));
	for (int dir = 0; dir < SUB_DIRS; dir++) {
		struct sub_sched_dir *d = &ss->d[dir];

		for (uint32_t i = 0; i < old + tail; i++) {
			c->pos[dir][REMAP(i)] = d->pos[i];
			c->demand[dir][REMAP(i)] = d->demand[i];
			c->rate[dir][REMAP(i)] = d->rate[i];
			c->tick_bytes[dir][REMAP(i)] = d->tick_bytes[i];
		}
		for (uint32_t k = 0; k < d->nheap; k++) {
			c->heap[dir][k].key = d->heap[k].key;
			c->heap[dir][k].sub = REMAP(d->heap[k].sub);
		}
		for (uint32_t j = 0; j < d->nact; j++)
			c->act[dir][j] = REMAP(d->act[j]);
		for (uint32_t j = 0; j < d->nfresh; j++)
			c->fresh[dir][j] = REMAP(d->fresh[j]);
		d->fat = d->fat < old + tail ? REMAP(d->fat) : 0;
		SWAP(d->heap, c->heap[dir]);
		SWAP(d->pos, c->pos[dir]);
		SWAP(d->act, c->act[dir]);
		SWAP(d->act_tmp, c->act_tmp[dir]);
		SWAP(d->fresh, c->fresh[dir]);
		SWAP(d->demand, c->demand[dir]);
		SWAP(d->rate, c->rate[dir]);
		SWAP(d->tick_bytes, c->tick_bytes[dir]);
	}
#undef REMAP
	/* Records first, then the count: readers (record_of) load them the other way round. */
	{
		struct sub_idle *subs = c->subs;
		struct sub_rtt(*rtt)[SUB_RTT_SIDES] = c->rtt;
		struct sub_qoe *qoe = c->qoe;

		c->subs = ss->subs;
		c->rtt = ss->rtt;
		c->qoe = ss->qoe;
		__atomic_store_n(&ss->subs, subs, __ATOMIC_RELEASE);
		__atomic_store_n(&ss->rtt, rtt, __ATOMIC_RELEASE);
		__atomic_store_n(&ss->qoe, qoe, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&ss->nsubs, nw, __ATOMIC_RELEASE);
}

void
sub_sched_change_apply(struct sub_sched *ss, struct sub_sched_change *c)
{
	if (c->subs != NULL && c->nsubs > ss->nsubs)
		grow_apply(ss, c);
	SWAP(ss->alloc, c->alloc);
	/* Its last run's rates were not the ones this scheduler set since. */
	sub_alloc_forget(ss->alloc);
	SWAP(ss->lookup, c->lookup);
	ss->vlan_prefixes = c->vlan_prefixes;
	SWAP(ss->unknown_on, c->unknown_on);
	{
		struct sub_plan t[SUB_DIRS];

		memcpy(t, ss->unknown_plan, sizeof(t));
		memcpy(ss->unknown_plan, c->unknown_plan, sizeof(t));
		memcpy(c->unknown_plan, t, sizeof(t));
	}
	/*
	 * The context (and the set its owner keeps in it) after the count and
	 * the records: a reader that loads the new context (acquire) finds the
	 * count and the arrays it was made for. One that loads the old one
	 * indexes the old set by its own count, which the new records cover.
	 * A change applied after the control thread stopped waiting runs while
	 * that thread reads.
	 */
	if (c->lookup_ctx != NULL) {
		const void *old = ss->lookup_ctx;

		__atomic_store_n(&ss->lookup_ctx, c->lookup_ctx, __ATOMIC_RELEASE);
		c->lookup_ctx = old;
	}
	for (int dir = 0; dir < SUB_DIRS; dir++) {
		struct sub_sched_dir *d = &ss->d[dir];
		uint64_t cap = c->root_cap[dir];

		SWAP(ss->plan_max[dir], c->plan_max[dir]);
		c->root_cap[dir] = d->root_cap;
		d->root_cap = cap;
		/* The pacer follows a new capacity of the link unless a rate is set. */
		if (d->link_bps == 0)
			d->link_rate = cap / 8;
	}
	/*
	 * A reused slot was idle (no CAKE, no packet queued): its new
	 * subscriber's counters start from zero.
	 */
	for (uint32_t i = 0; i < c->nreset; i++) {
		struct sub_idle *s = &ss->subs[c->reset[i]];

		if (c->reset[i] >= ss->nsubs || s->dir[SUB_DOWN].cake != NULL ||
		    s->dir[SUB_UP].cake != NULL)
			continue;
		memset(s, 0, sizeof(*s)); /* idle: out of both heaps already */
		memset(ss->rtt[c->reset[i]], 0, sizeof(ss->rtt[0])); /* not the old one's RTT */
		memset(&ss->qoe[c->reset[i]], 0, sizeof(ss->qoe[0]));
	}
	ss->changes++;
	c->applied = true;
}

bool
sub_sched_change_applied(const struct sub_sched_change *c)
{
	return c->applied;
}

bool
sub_sched_slot_idle(const struct sub_sched *ss, uint32_t sub)
{
	const struct sub_idle *s = record_of(ss, sub);

	return s == NULL ||
	       (CTR_GET(s->dir[SUB_DOWN].cake) == NULL && CTR_GET(s->dir[SUB_UP].cake) == NULL);
}

uint64_t
sub_sched_changes(const struct sub_sched *ss)
{
	return ss->changes;
}

const uint32_t *
sub_sched_active(const struct sub_sched *ss, enum sub_dir dir, uint32_t *n)
{
	*n = ss->d[dir].nact;
	return ss->d[dir].act;
}

uint64_t
sub_sched_demand(const struct sub_sched *ss, enum sub_dir dir, uint32_t sub)
{
	return ss->subs[sub].dir[dir].cake != NULL ? ss->d[dir].demand[sub] : 0;
}

/* ------------------------------------------------------------------- RTT */

void
sub_sched_note_time(struct sub_sched *ss, uint64_t now)
{
	uint32_t w = sub_rtt_window(now), m = sub_qoe_minute(now);

	if (w != ss->rtt_win)
		__atomic_store_n(&ss->rtt_win, w, __ATOMIC_RELAXED);
	if (m != ss->qoe_min)
		__atomic_store_n(&ss->qoe_min, m, __ATOMIC_RELAXED);
}

void
sub_sched_rtt_sample(struct sub_sched *ss, uint32_t sub, enum sub_rtt_side side, uint64_t rtt_ns,
		     uint64_t now)
{
	if (sub > ss->nsubs + ss->nunk)
		sub = ss->nsubs; /* an address no subscriber owns: the link's entry */
	sub_sched_note_time(ss, now);
	sub_rtt_add(&ss->rtt[sub][side], ss->rtt_win, rtt_ns);
	qoe_turn(ss, sub);
	sub_qoe_sample(&ss->qoe[sub], side, sub_rtt_bucket(rtt_ns));
}

void
sub_sched_rtt(const struct sub_sched *ss, uint32_t sub, enum sub_rtt_side side,
	      uint32_t h[SUB_RTT_BUCKETS])
{
	uint32_t n = __atomic_load_n(&ss->nsubs, __ATOMIC_ACQUIRE);

	if (sub > n + ss->nunk)
		return;
	sub_rtt_merge(&__atomic_load_n(&ss->rtt, __ATOMIC_ACQUIRE)[sub][side],
		      __atomic_load_n(&ss->rtt_win, __ATOMIC_RELAXED), h);
}

void
sub_sched_qoe(const struct sub_sched *ss, uint32_t sub, struct sub_qoe_acc *acc)
{
	const struct sub_idle *s = record_of(ss, sub);
	uint64_t bytes[SUB_DIRS];

	if (s == NULL)
		return;
	for (int d = 0; d < SUB_DIRS; d++)
		bytes[d] = CTR_GET(s->dir[d].bytes);
	sub_qoe_merge(&__atomic_load_n(&ss->qoe, __ATOMIC_ACQUIRE)[sub],
		      __atomic_load_n(&ss->qoe_min, __ATOMIC_RELAXED), bytes, acc);
}
