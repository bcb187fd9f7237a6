/*
 * The link rate split among shards (see shaper/share.h): published demand,
 * a weighted max-min split every shard computes alike, and one atomic pool
 * through which rate moves so the shards' rates never sum above the link.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sched/sched_impl.h"
#include "shaper/share.h"

/* A shard with more packets queued than this is held back by its rate. */
#define SHARE_BUSY_PKTS 2u
/* Idle shards' floors together take at most this fraction of the link. */
#define SHARE_FLOOR_DIV 1024u
/* A shard that keeps up gets its arrival rate plus 1/SHARE_SPARE_DIV. */
#define SHARE_SPARE_DIV 32u
/* The arrival average moves by 1/SHARE_AVG_DIV of the difference a tick. */
#define SHARE_AVG_DIV   4

static uint64_t
share_floor(uint64_t link_rate, uint32_t nshards)
{
	uint64_t floor = link_rate / ((uint64_t)SHARE_FLOOR_DIV * nshards);

	return floor < 64 ? 64 : floor; /* the scheduler's slowest rate */
}

int
share_rate_check(uint64_t link_rate, uint32_t nshards, char *err, size_t errlen)
{
	/* 0 is an unshaped link: nothing to share, but the group stays ready. */
	if (link_rate != 0 && link_rate < 2 * share_floor(link_rate, nshards) * nshards) {
		SCHED_ERR(err, errlen, "rate %llu bytes/s is too low to share among %u shards",
			  (unsigned long long)link_rate, nshards);
		return -EINVAL;
	}
	return 0;
}

int
share_group_init(struct share_group *g, uint64_t link_rate, uint32_t nshards, uint32_t mtu,
		 char *err, size_t errlen)
{
	uint64_t part;
	uint32_t i;

	if (nshards == 0 || nshards > SHARE_MAX_SHARDS) {
		SCHED_ERR(err, errlen, "%u shards: between 1 and %u", nshards, SHARE_MAX_SHARDS);
		return -EINVAL;
	}
	if (share_rate_check(link_rate, nshards, err, errlen) != 0)
		return -EINVAL;
	memset(g, 0, sizeof(*g));
	g->nshards = nshards;
	g->mtu = mtu;
	part = link_rate / nshards;
	atomic_init(&g->link_rate, link_rate);
	atomic_init(&g->pool, (int64_t)(link_rate - part * nshards));
	for (i = 0; i < SHARE_MAX_SHARDS; i++) {
		atomic_init(&g->slot[i].need, 0);
		atomic_init(&g->slot[i].weight, 0);
		atomic_init(&g->slot[i].base, 0);
		atomic_init(&g->slot[i].rate, i < nshards ? part : 0);
	}
	return 0;
}

uint64_t
share_group_floor(const struct share_group *g)
{
	return share_floor(atomic_load_explicit(&g->link_rate, memory_order_relaxed), g->nshards);
}

void
share_group_set_rate(struct share_group *g, uint64_t link_rate)
{
	uint64_t old = atomic_exchange_explicit(&g->link_rate, link_rate, memory_order_acq_rel);

	atomic_fetch_add_explicit(&g->pool, (int64_t)link_rate - (int64_t)old,
				  memory_order_acq_rel);
}

void
share_shard_init(struct share_shard *sh, struct share_group *g, uint32_t id, struct sched *s,
		 uint64_t now)
{
	memset(sh, 0, sizeof(*sh));
	sh->g = g;
	sh->id = id;
	sh->rate = atomic_load_explicit(&g->slot[id].rate, memory_order_relaxed);
	sh->last_tick = now;
	sh->last_enq = sched_enqueued_bytes(s);
	sh->level = INFINITY;
	sched_set_rate(s, sh->rate, now);
}

/* Take up to want from the pool; returns what was taken. */
static uint64_t
share_take(struct share_group *g, uint64_t want)
{
	int64_t avail = atomic_load_explicit(&g->pool, memory_order_acquire);
	uint64_t take;

	do {
		if (avail <= 0)
			return 0;
		take = (uint64_t)avail < want ? (uint64_t)avail : want;
	} while (!atomic_compare_exchange_weak_explicit(&g->pool, &avail, avail - (int64_t)take,
							memory_order_acq_rel,
							memory_order_acquire));
	return take;
}

/*
 * Shape at target (s: the scheduler to move, or NULL when the caller
 * applies sh->rate itself): lower first and give the difference back, or
 * take what the pool has. A pool below 0 means the link was cut and some shards still
 * hold more than their part: until it is repaid no shard keeps more than an
 * even part, so once every shard has acted on the cut (rebind or tick) the
 * shards' rates add up to no more than the new link, whatever the splits
 * each computed from demands published at different moments.
 */
static void
share_move_to(struct share_shard *sh, struct sched *s, uint64_t target, uint64_t now)
{
	struct share_group *g = sh->g;

	if (atomic_load_explicit(&g->pool, memory_order_acquire) < 0) {
		uint64_t even = atomic_load_explicit(&g->link_rate, memory_order_relaxed) /
				g->nshards;

		if (target > even)
			target = even;
	}
	if (target < sh->rate) {
		if (s != NULL)
			sched_set_rate(s, target, now);
		atomic_fetch_add_explicit(&g->pool, (int64_t)(sh->rate - target),
					  memory_order_release);
		sh->rate = target;
		sh->rate_changes++;
	} else if (target > sh->rate) {
		uint64_t took = share_take(g, target - sh->rate);

		if (took != 0) {
			sh->rate += took;
			if (s != NULL)
				sched_set_rate(s, sh->rate, now);
			sh->rate_changes++;
		}
	}
	atomic_store_explicit(&g->slot[sh->id].rate, sh->rate, memory_order_relaxed);
}

void
share_shard_rebind(struct share_shard *sh, struct sched *s, uint64_t now)
{
	uint64_t split[SHARE_MAX_SHARDS];

	if (sched_get_params(s)->rate == 0)
		return; /* unshaped: the share waits for a rate */
	if (sched_enqueued_bytes(s) < sh->last_enq)
		sh->last_enq = sched_enqueued_bytes(s); /* a new scheduler counts from 0 */
	if (sh->rate == 0) {
		/*
		 * The link was unshaped and shaping needs some rate: the pool owes
		 * the floor until the others give back. (A shard below the floor
		 * after a rise takes from the pool on its next tick.)
		 */
		sh->rate = share_group_floor(sh->g);
		atomic_fetch_sub_explicit(&sh->g->pool, (int64_t)sh->rate, memory_order_acq_rel);
		atomic_store_explicit(&sh->g->slot[sh->id].rate, sh->rate, memory_order_relaxed);
	} else {
		/* After a cut, down to this shard's part now rather than at its next tick. */
		share_split(sh->g, split);
		share_move_to(sh, s, split[sh->id], now);
	}
	sched_set_rate(s, sh->rate, now);
}

void
share_split(const struct share_group *g, uint64_t *out)
{
	double level;

	share_split_level(g, out, &level);
}

void
share_split_level(const struct share_group *g, uint64_t *out, double *level_out)
{
	uint64_t need[SHARE_MAX_SHARDS], base[SHARE_MAX_SHARDS];
	uint32_t weight[SHARE_MAX_SHARDS];

	for (uint32_t i = 0; i < g->nshards; i++) {
		need[i] = atomic_load_explicit(&g->slot[i].need, memory_order_relaxed);
		base[i] = atomic_load_explicit(&g->slot[i].base, memory_order_relaxed);
		weight[i] = atomic_load_explicit(&g->slot[i].weight, memory_order_relaxed);
	}
	share_split_of(atomic_load_explicit(&g->link_rate, memory_order_relaxed), g->nshards, need,
		       base, weight, out, level_out);
}

void
share_split_of(uint64_t link, uint32_t n, const uint64_t *need, const uint64_t *base,
	       const uint32_t *weight, uint64_t *out, double *level_out)
{
	uint64_t floor = share_floor(link, n);
	uint32_t i;
	double cap[SHARE_MAX_SHARDS], w[SHARE_MAX_SHARDS], extra[SHARE_MAX_SHARDS];
	bool open[SHARE_MAX_SHARDS];
	double left, open_w = 0, all_w = 0, bases = 0;

	*level_out = INFINITY;
	left = link > (uint64_t)n * floor ? (double)(link - (uint64_t)n * floor) : 0;
	for (i = 0; i < n; i++) {
		w[i] = weight[i];
		cap[i] = need[i] == SHARE_NEED_ALL ? INFINITY
			 : need[i] > floor         ? (double)(need[i] - floor)
						   : 0;
		extra[i] = (double)base[i] < cap[i] ? (double)base[i] : cap[i];
		bases += extra[i];
		all_w += w[i];
	}
	/* The bases first (scaled down together if they alone exceed the link). */
	for (i = 0; i < n; i++) {
		if (bases > left)
			extra[i] = extra[i] * left / bases;
		cap[i] -= extra[i];
		open[i] = w[i] > 0 && cap[i] > 0;
		open_w += open[i] ? w[i] : 0;
	}
	left = bases > left ? 0 : left - bases;
	/*
	 * Water-filling: the level (rate per unit of weight) rises until the
	 * rate is gone; shards whose need lies below it keep their need.
	 */
	while (open_w > 0) {
		double level = left / open_w;
		bool froze = false;

		for (i = 0; i < n; i++) {
			if (open[i] && cap[i] <= level * w[i]) {
				extra[i] += cap[i];
				left -= cap[i];
				open_w -= w[i];
				open[i] = false;
				froze = true;
			}
		}
		if (!froze) {
			for (i = 0; i < n; i++)
				if (open[i])
					extra[i] += level * w[i];
			left = 0;
			*level_out = level;
			break;
		}
	}
	/* Everyone active has what it needs: the rest by weight, as spare. */
	if (left > 0 && all_w > 0)
		for (i = 0; i < n; i++)
			extra[i] += left * w[i] / all_w;
	for (i = 0; i < n; i++)
		out[i] = floor + (uint64_t)extra[i];
}

/* The arrival rate's moving average after a tick that saw arrived bytes over dt ns. */
static uint64_t
share_arrivals(uint64_t avg, uint64_t arrived, uint64_t dt)
{
	double inst = dt != 0 ? (double)arrived * 1e9 / (double)dt : 0;
	double next = (double)avg + (inst - (double)avg) / SHARE_AVG_DIV;

	/* Bounded so the need computed from it cannot overflow: 2^48 bytes/s is plenty. */
	if (next <= 0)
		return 0;
	return next >= 0x1p48 ? 1ull << 48 : (uint64_t)next;
}

uint64_t
share_tick(struct share_shard *sh, struct sched *s, uint32_t weight, uint64_t now)
{
	struct share_group *g = sh->g;
	struct share_slot *me = &g->slot[sh->id];
	uint64_t enq = sched_enqueued_bytes(s), dt = now - sh->last_tick;
	/* The counter restarts at 0 on stats.reset: what it holds arrived since. */
	uint64_t arrived = enq >= sh->last_enq ? enq - sh->last_enq : enq;
	uint64_t split[SHARE_MAX_SHARDS], need, floor = share_group_floor(g);
	uint32_t backlog = sched_backlog_pkts(s);

	sh->arrivals = share_arrivals(sh->arrivals, arrived, dt);
	sh->last_enq = enq;
	sh->last_tick = now;
	sh->ticks++;
	if (weight == 0 && (backlog != 0 || arrived != 0))
		weight = 1; /* traffic the caller could not attribute to a host */
	if (backlog > SHARE_BUSY_PKTS)
		need = SHARE_NEED_ALL;
	else if (weight == 0)
		need = 0;
	else
		/* What arrives, a little spare, and the few packets queued out within a tick. */
		need = sh->arrivals + sh->arrivals / SHARE_SPARE_DIV + floor +
		       (uint64_t)backlog * g->mtu * (1000000000ull / SHARE_TICK_NS);
	atomic_store_explicit(&me->weight, weight, memory_order_relaxed);
	atomic_store_explicit(&me->need, need, memory_order_relaxed);

	share_split(g, split);
	share_move_to(sh, s, split[sh->id], now);
	return sh->rate;
}

uint64_t
share_tick_need(struct share_shard *sh, uint64_t need, uint64_t base, uint32_t weight, uint64_t now)
{
	struct share_group *g = sh->g;
	uint64_t split[SHARE_MAX_SHARDS];

	sh->last_tick = now;
	sh->ticks++;
	if (need != 0 && weight == 0)
		weight = 1;
	atomic_store_explicit(&g->slot[sh->id].base, base, memory_order_relaxed);
	atomic_store_explicit(&g->slot[sh->id].weight, weight, memory_order_relaxed);
	atomic_store_explicit(&g->slot[sh->id].need, need, memory_order_relaxed);
	share_split_level(g, split, &sh->level);
	share_move_to(sh, NULL, split[sh->id], now);
	return sh->rate;
}

uint32_t
share_hosts_count(struct share_hosts *h, uint64_t now)
{
	uint32_t zeros;

	if (h->cur_pkts != h->seen_pkts) {
		h->seen_pkts = h->cur_pkts;
		h->last_active = now;
	}
	if (now - h->last_active >= 2 * SHARE_HOST_WINDOW_NS) {
		/* Nothing noted for two windows: the shard is idle. */
		memset(h->prev, 0, sizeof(h->prev));
		memset(h->cur, 0, sizeof(h->cur));
		h->cur_bits = h->union_bits = h->cur_pkts = h->seen_pkts = 0;
		h->window_start = now;
	} else if (now - h->window_start >= SHARE_HOST_WINDOW_NS &&
		   h->cur_pkts >= SHARE_HOST_ROUNDS * h->cur_bits) {
		/*
		 * A window closes once it saw every host it counts a few times
		 * on average: round-robin dequeues visit each backlogged host
		 * once a round, so a slow link, whose round outlasts the window,
		 * still counts all of them.
		 */
		memcpy(h->prev, h->cur, sizeof(h->prev));
		memset(h->cur, 0, sizeof(h->cur));
		h->union_bits = h->cur_bits;
		h->cur_bits = h->cur_pkts = h->seen_pkts = 0;
		h->window_start = now;
	}
	if (h->union_bits == 0)
		return 0;
	zeros = SHARE_HOST_BITS - h->union_bits;
	if (zeros == 0)
		zeros = 1;
	return (uint32_t)(SHARE_HOST_BITS * log((double)SHARE_HOST_BITS / zeros) + 0.5);
}
