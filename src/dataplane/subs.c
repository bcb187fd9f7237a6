/*
 * Per-subscriber shaping hung on a worker's two directions: the subscriber
 * files the config names, loaded and checked, and the per-subscriber
 * scheduler around each direction's own scheduler (shaper/subscriber_sched.h).
 *
 * With several workers every subscriber belongs to one shard, and its
 * frames both ways are steered to that shard's worker after the address
 * lookup. The shard key is the subscriber's top-level node (the node under
 * the link its node descends from), or the subscriber itself when it hangs
 * from the link: a node's whole subtree is on one worker, so its capacity
 * holds without the workers talking, but one node cannot use more than one
 * worker. With subscribers.shard_by "subscriber" every subscriber is its
 * own key, and the shards split each node's capacity (share_nodes). Every
 * shard runs its own scheduler over the whole set (the same
 * slots everywhere: a change is the same on every shard), and only its own
 * subscribers ever become active there. The shards share the link's rate
 * as other shards do (shaper/share.h).
 *
 * The address lookup of the prefixes on no VLAN is DPDK's rte_lpm and
 * rte_lpm6: several times faster than the set's own hash lookup for IPv4,
 * and for misses of either family (docs/subscribers.md has the figures).
 * VLAN-qualified prefixes, which rte_lpm cannot key, stay with the hash
 * lookup inside the scheduler.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>

#include <rte_errno.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>

#include "shaper/dataplane.h"
#include "shaper/heapsort.h"
#include "shaper/subscriber_config.h"

/* Spare subscriber slots: a quarter of those loaded, at least this many. */
#define DP_SUBS_SPARE_MIN 1024u

/*
 * DPDK's tables for the prefixes on no VLAN. A live change that keeps
 * every address shares them between the old context and the new one, so
 * they are counted; only the control thread takes and drops references.
 */
struct dp_sub_tables {
	struct rte_lpm *v4;  /* NULL: no unqualified v4 prefix */
	struct rte_lpm6 *v6; /* NULL: no unqualified v6 prefix */
	unsigned int refs;
};

/*
 * Nodes shared among shards (subscribers.shard_by "subscriber"): per node,
 * direction and shard, a cache line where that shard alone publishes what
 * its subscribers under the node can use (shaper/share.h's need, base and
 * weight); every shard splits each node's capacity over the lines the same
 * way. One per change of the set (node indices are the set's), shared by
 * every shard's context, counted as the tables are.
 */
struct dp_sub_nodeshare {
	uint32_t nnodes, nshards;
	unsigned int refs;
	struct share_slot *slot; /* [(node * SUB_DIRS + dir) * nshards + shard] */
};

/*
 * The scheduler's lookup context, and the loaded set the control thread
 * names subscribers from (read-only once attached; a live change brings a
 * new context). v4 and v6 are the tables' own, copied for one load less.
 * Every shard has its own context; the tables are shared, and the set is
 * shard 0's (the others' is empty).
 */
struct dp_sub_lpm {
	struct rte_lpm *v4;
	struct rte_lpm6 *v6;
	struct dp_sub_tables *t;
	struct sub_set set;
	/* Several shards: who shapes whom (read by the worker, made by the control thread). */
	uint32_t nshards;
	uint32_t nsubs, nnodes;
	uint8_t *sub_shard;   /* per subscriber slot: its shard */
	uint32_t *node_shard; /* per node: the shard of its subtree (kept across changes) */
	/* The tree as the allocation sees it (a copy: only shard 0's context has the set). */
	uint32_t *sub_node;           /* per slot: its node */
	uint64_t *plan_max[SUB_DIRS]; /* per slot, bit/s */
	uint32_t *node_parent;        /* per node */
	uint64_t *node_cap[SUB_DIRS]; /* per node, bit/s (the root's: 0 = unlimited) */
	/*
	 * The worker's: the link's children in this shard (its top-level nodes,
	 * its subscribers under the link, the link's own entry), each one's
	 * ceiling (bytes/s) as the last allocation's demands make it, sorted,
	 * with prefix sums: what the shard asks of the link (dp_subs_share_tick).
	 */
	uint64_t *node_ceil;          /* scratch, per node, bit/s */
	uint64_t *kid_ceil[SUB_DIRS]; /* nkids, ascending */
	uint64_t *kid_sum[SUB_DIRS];  /* nkids + 1: kid_sum[k] = the k smallest together */
	uint32_t nkids[SUB_DIRS];
	uint64_t seen_allocs[SUB_DIRS]; /* the allocation measured last */
	/*
	 * Nodes spanning shards (NULL unless subscribers.shard_by is
	 * "subscriber" with several): this shard's part of each node's
	 * capacity (bytes/s) and the last split's level, the worker's only.
	 */
	struct dp_sub_nodeshare *ns;
	uint32_t shard;
	uint64_t *node_part[SUB_DIRS];
	double *node_level[SUB_DIRS];
	uint64_t *node_need, *node_base; /* scratch, per node, bytes/s */
	uint32_t *node_weight;
};

static uint32_t
lpm_v4(const void *ctx, uint32_t addr)
{
	const struct dp_sub_lpm *l = ctx;
	uint32_t hop;

	if (l->v4 == NULL || rte_lpm_lookup(l->v4, addr, &hop) != 0)
		return SUB_NONE;
	return hop;
}

static uint32_t
lpm_v6(const void *ctx, const uint8_t addr[16])
{
	const struct dp_sub_lpm *l = ctx;
	uint32_t hop;

	if (l->v6 == NULL || rte_lpm6_lookup(l->v6, addr, &hop) != 0)
		return SUB_NONE;
	return hop;
}

/* Drop a reference to ns (control thread); the last frees it. */
static void
nodeshare_put(struct dp_sub_nodeshare *ns)
{
	if (ns != NULL && --ns->refs == 0) {
		free(ns->slot);
		free(ns);
	}
}

static void
lpm_free(struct dp_sub_lpm *l)
{
	if (l == NULL)
		return;
	if (l->t != NULL && --l->t->refs == 0) {
		rte_lpm_free(l->t->v4);
		rte_lpm6_free(l->t->v6);
		free(l->t);
	}
	sub_set_free(&l->set);
	free(l->sub_shard);
	free(l->node_shard);
	free(l->sub_node);
	free(l->node_parent);
	free(l->node_ceil);
	for (int d = 0; d < SUB_DIRS; d++) {
		free(l->plan_max[d]);
		free(l->node_cap[d]);
		free(l->kid_ceil[d]);
		free(l->kid_sum[d]);
		free(l->node_part[d]);
		free(l->node_level[d]);
	}
	free(l->node_need);
	free(l->node_base);
	free(l->node_weight);
	nodeshare_put(l->ns);
	free(l);
}

/*
 * The lines of set's nodes for n shards, with one reference for the caller
 * (each context that joins takes one more). NULL: no memory.
 */
static struct dp_sub_nodeshare *
nodeshare_create(const struct sub_set *set, uint32_t n)
{
	struct dp_sub_nodeshare *ns = calloc(1, sizeof(*ns));
	size_t count = (size_t)set->nnodes * SUB_DIRS * n;

	if (ns == NULL)
		return NULL;
	ns->nnodes = set->nnodes;
	ns->nshards = n;
	ns->refs = 1;
	ns->slot = aligned_alloc(SHARE_LINE, count * sizeof(*ns->slot));
	if (ns->slot == NULL) {
		free(ns);
		return NULL;
	}
	memset(ns->slot, 0, count * sizeof(*ns->slot));
	return ns;
}

/* Context l of shard 'shard' takes part in ns: its private side, the node parts at full. */
static int
nodeshare_join(struct dp_sub_lpm *l, struct dp_sub_nodeshare *ns, uint32_t shard)
{
	uint32_t nn = ns->nnodes;

	l->node_need = calloc(nn, sizeof(*l->node_need));
	l->node_base = calloc(nn, sizeof(*l->node_base));
	l->node_weight = calloc(nn, sizeof(*l->node_weight));
	if (l->node_need == NULL || l->node_base == NULL || l->node_weight == NULL)
		return -ENOMEM;
	for (int d = 0; d < SUB_DIRS; d++) {
		l->node_part[d] = calloc(nn, sizeof(*l->node_part[d]));
		l->node_level[d] = calloc(nn, sizeof(*l->node_level[d]));
		if (l->node_part[d] == NULL || l->node_level[d] == NULL)
			return -ENOMEM;
		for (uint32_t i = 0; i < nn; i++) {
			l->node_part[d][i] = l->node_cap[d][i] / 8;
			l->node_level[d][i] = INFINITY;
		}
	}
	l->ns = ns;
	l->shard = shard;
	ns->refs++;
	return 0;
}

static void
lpm_free_ctx(const void *ctx)
{
	lpm_free((struct dp_sub_lpm *)ctx);
}

/* A context for set (taken) sharing l's tables. NULL if out of memory (set freed). */
static struct dp_sub_lpm *
lpm_share(const struct dp_sub_lpm *l, struct sub_set *set)
{
	struct dp_sub_lpm *n = calloc(1, sizeof(*n));

	if (n == NULL) {
		sub_set_free(set);
		return NULL;
	}
	n->v4 = l->v4;
	n->v6 = l->v6;
	n->t = l->t;
	n->t->refs++;
	n->set = *set;
	return n;
}

/*
 * The tables for set's unqualified prefixes, on socket. Sized from the set:
 * a v4 prefix longer than /24 takes at most one group of tbl8 entries, a
 * v6 prefix one per 8 bits past the first 24.
 */
static struct dp_sub_lpm *
lpm_build(const struct sub_set *set, int socket, char *err, size_t errlen)
{
	static unsigned int seq;
	struct dp_sub_lpm *l = calloc(1, sizeof(*l));
	uint32_t n4 = 0, n6 = 0, t4 = 1, t6 = 1, i;
	char name[32];

	if (l == NULL)
		goto nomem;
	/* l->set stays empty (zeroed): the caller moves the loaded set in. */
	l->t = calloc(1, sizeof(*l->t));
	if (l->t == NULL) {
		lpm_free(l);
		goto nomem;
	}
	l->t->refs = 1;
	for (i = 0; i < set->nprefixes; i++) {
		const struct sub_prefix *p = &set->prefixes[i];

		if (p->vlan != 0)
			continue;
		if (p->family == 4) {
			n4++;
			t4 += p->len > 24;
		} else {
			n6++;
			t6 += p->len > 24 ? (p->len - 24 + 7) / 8u : 0;
		}
	}
	seq++;
	if (n4 != 0) {
		struct rte_lpm_config c = { .max_rules = n4, .number_tbl8s = t4 };

		snprintf(name, sizeof(name), "subs4_%u", seq);
		l->v4 = l->t->v4 = rte_lpm_create(name, socket, &c);
		if (l->v4 == NULL)
			goto fail;
	}
	if (n6 != 0) {
		struct rte_lpm6_config c = { .max_rules = n6, .number_tbl8s = t6 };

		snprintf(name, sizeof(name), "subs6_%u", seq);
		l->v6 = l->t->v6 = rte_lpm6_create(name, socket, &c);
		if (l->v6 == NULL)
			goto fail;
	}
	for (i = 0; i < set->nprefixes; i++) {
		const struct sub_prefix *p = &set->prefixes[i];
		int rc;

		if (p->vlan != 0)
			continue;
		if (p->family == 4)
			rc = rte_lpm_add(l->v4,
					 (uint32_t)p->addr[0] << 24 | (uint32_t)p->addr[1] << 16 |
							 (uint32_t)p->addr[2] << 8 | p->addr[3],
					 p->len, p->sub);
		else
			rc = rte_lpm6_add(l->v6, p->addr, p->len, p->sub);
		if (rc != 0) {
			char pfx[80];

			sub_prefix_format(p, pfx, sizeof(pfx));
			snprintf(err, errlen, "subscribers: rte_lpm%s cannot take %s: %s",
				 p->family == 4 ? "" : "6", pfx, rte_strerror(-rc));
			lpm_free(l);
			return NULL;
		}
	}
	return l;
fail:
	snprintf(err, errlen,
		 "subscribers: no memory for the address tables (%u v4 and %u v6 prefixes): %s", n4,
		 n6, rte_strerror(rte_errno));
	lpm_free(l);
	return NULL;
nomem:
	snprintf(err, errlen, "subscribers: out of memory");
	return NULL;
}

/* FNV-1a of a subscriber id: where a subscriber under the link goes. */
static uint32_t
id_hash(const char *id)
{
	uint32_t h = 2166136261u;

	for (; *id != '\0'; id++)
		h = (h ^ (uint8_t)*id) * 16777619u;
	return h;
}

static int
by_load_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The shard of every node: the top-level nodes, largest (in subscribers)
 * first, each to the shard with the fewest subscribers so far, after the
 * subscribers under the link (spread by a hash of their id); every other
 * node goes with its top-level node. top: per node, its top-level node.
 * keep: per node, the shard it already has (SUB_NONE: place it), counted
 * as placed before the others; NULL: place every one.
 */
static int
nodes_to_shards(const struct sub_set *set, uint32_t n, const uint32_t *top, const uint32_t *keep,
		uint32_t *node_shard)
{
	uint64_t load[SHAPER_MAX_WORKERS] = { 0 };
	uint64_t *order = calloc(set->nnodes, sizeof(*order));
	uint32_t *count = calloc(set->nnodes, sizeof(*count));
	uint32_t ntop = 0, i;

	if (order == NULL || count == NULL) {
		free(order);
		free(count);
		return -ENOMEM;
	}
	for (i = 0; i < set->nsubs; i++) {
		const struct sub_subscriber *sub = &set->subs[i];

		if (!sub_slot_used(sub))
			continue;
		if (sub->node == SUB_ROOT)
			load[id_hash(sub->id) % n]++;
		else
			count[top[sub->node]]++;
	}
	/* Sorted by (most subscribers, lowest index): the same file, the same shards. */
	for (i = 1; i < set->nnodes; i++)
		if (set->nodes[i].parent == SUB_ROOT) {
			if (keep != NULL && keep[i] != SUB_NONE) {
				node_shard[i] = keep[i];
				load[keep[i]] += count[i];
			} else {
				order[ntop++] = (uint64_t)(UINT32_MAX - count[i]) << 32 | i;
			}
		}
	qsort(order, ntop, sizeof(*order), by_load_desc);
	for (uint32_t k = 0; k < ntop; k++) {
		uint32_t node = (uint32_t)order[k], best = 0;

		for (uint32_t s = 1; s < n; s++)
			if (load[s] < load[best])
				best = s;
		node_shard[node] = best;
		load[best] += count[node];
	}
	node_shard[SUB_ROOT] = 0;
	for (i = 1; i < set->nnodes; i++)
		node_shard[i] = node_shard[top[i]];
	free(order);
	free(count);
	return 0;
}

/*
 * For each top-level node of set, the shard it had in prev (prev_set's
 * nodes), matched by name: a top-level node that stays, or a node moved up
 * to the link, keeps its worker and its subscribers with it; a new one is
 * placed. SUB_NONE where not kept.
 */
static int
kept_shards(const struct sub_set *set, const struct sub_set *prev_set,
	    const struct dp_sub_lpm *prev, uint32_t *keep)
{
	if (sub_node_map(set, prev_set, keep) != 0)
		return -ENOMEM;
	for (uint32_t i = 1; i < set->nnodes; i++)
		if (keep[i] != SUB_NONE)
			keep[i] = keep[i] < prev->nnodes ? prev->node_shard[keep[i]] : SUB_NONE;
	return 0;
}

/*
 * Who shapes whom, for l (set's subscribers among n shards). The nodes keep
 * the shards prev gave them (prev_set: the set prev was made for; nodes are
 * matched by name), so a live change moves no subscriber but one whose node
 * changed or went under another top-level node.
 */
static int
shard_map(struct dp_sub_lpm *l, const struct sub_set *set, const struct dp_sub_lpm *prev,
	  const struct sub_set *prev_set, uint32_t n, uint32_t nunk, struct dp_sub_nodeshare *ns,
	  uint32_t shard)
{
	uint32_t *top, *keep = NULL, nkids_max = set->nsubs + set->nnodes + 1 + nunk;
	bool ok;
	int rc;

	l->nshards = n;
	if (n <= 1)
		return 0;
	l->nsubs = set->nsubs;
	l->nnodes = set->nnodes;
	l->sub_shard = calloc(set->nsubs + 1u, sizeof(*l->sub_shard));
	l->node_shard = calloc(set->nnodes, sizeof(*l->node_shard));
	l->sub_node = calloc(set->nsubs + 1u, sizeof(*l->sub_node));
	l->node_parent = calloc(set->nnodes, sizeof(*l->node_parent));
	l->node_ceil = calloc(set->nnodes, sizeof(*l->node_ceil));
	top = calloc(set->nnodes, sizeof(*top));
	ok = l->sub_shard != NULL && l->node_shard != NULL && l->sub_node != NULL &&
	     l->node_parent != NULL && l->node_ceil != NULL && top != NULL;
	for (int d = 0; d < SUB_DIRS; d++) {
		l->plan_max[d] = calloc(set->nsubs + 1u, sizeof(*l->plan_max[d]));
		l->node_cap[d] = calloc(set->nnodes, sizeof(*l->node_cap[d]));
		l->kid_ceil[d] = calloc(nkids_max, sizeof(*l->kid_ceil[d]));
		l->kid_sum[d] = calloc(nkids_max + 1u, sizeof(*l->kid_sum[d]));
		ok = ok && l->plan_max[d] != NULL && l->node_cap[d] != NULL &&
		     l->kid_ceil[d] != NULL && l->kid_sum[d] != NULL;
	}
	if (!ok) {
		free(top);
		return -ENOMEM;
	}
	top[SUB_ROOT] = SUB_NONE;
	for (uint32_t i = 0; i < set->nnodes; i++) {
		uint32_t p = set->nodes[i].parent;

		if (i != SUB_ROOT)
			top[i] = p == SUB_ROOT ? i : top[p]; /* parents come first */
		l->node_parent[i] = p;
		for (int d = 0; d < SUB_DIRS; d++)
			l->node_cap[d][i] = set->nodes[i].capacity[d];
	}
	if (prev != NULL && prev->node_shard != NULL) {
		keep = calloc(set->nnodes, sizeof(*keep));
		if (keep == NULL || kept_shards(set, prev_set, prev, keep) != 0) {
			free(keep);
			free(top);
			return -ENOMEM;
		}
	}
	rc = nodes_to_shards(set, n, top, keep, l->node_shard);
	free(keep);
	if (rc != 0) {
		free(top);
		return rc;
	}
	for (uint32_t i = 0; i < set->nsubs; i++) {
		const struct sub_subscriber *sub = &set->subs[i];

		l->sub_node[i] = sub->node;
		for (int d = 0; d < SUB_DIRS; d++)
			l->plan_max[d][i] = sub->plan[d].max;
		/* Nodes shared among shards: every subscriber on its own. */
		l->sub_shard[i] = (uint8_t)(sub->node == SUB_ROOT || ns != NULL
							    ? id_hash(sub->id) % n
							    : l->node_shard[sub->node]);
	}
	free(top);
	return ns != NULL ? nodeshare_join(l, ns, shard) : 0;
}

size_t
dp_subs_shard_bytes_for(uint32_t nsubs, uint32_t nnodes)
{
	size_t per_sub = sizeof(uint8_t) + sizeof(uint32_t) + SUB_DIRS * 3 * sizeof(uint64_t);
	size_t per_node = 3 * sizeof(uint32_t) + (1 + 3 * SUB_DIRS) * sizeof(uint64_t);

	return ((size_t)nsubs + 1) * per_sub + (size_t)nnodes * per_node;
}

static enum shaper_dir
shaper_dir_of(enum sub_dir sd)
{
	return sd == SUB_DOWN ? SHAPER_DOWN : SHAPER_UP;
}

/*
 * Slots for subscribers added while shaperd runs (subscribers.set, a
 * reload): a slot id "" owns no address and takes no traffic. Indices never
 * move, so the worker's state needs no copy when one is taken.
 */
static int
add_spare_slots(struct sub_set *set, char *err, size_t errlen)
{
	uint32_t spare = set->nsubs / 4 > DP_SUBS_SPARE_MIN ? set->nsubs / 4 : DP_SUBS_SPARE_MIN;

	if (spare > SUB_MAX_SUBS - set->nsubs)
		spare = SUB_MAX_SUBS - set->nsubs;
	for (uint32_t i = 0; i < spare; i++) {
		uint32_t idx;

		if (sub_set_add_sub(set, &idx) != 0) {
			snprintf(err, errlen, "subscribers: out of memory for %u spare slots",
				 spare);
			return -ENOMEM;
		}
		sub_slot_clear(&set->subs[idx]);
	}
	return 0;
}

/* Free shard i's scheduler and context, if it has one (both directions share them). */
static void
detach_one(struct dp_dir *down, struct dp_dir *up)
{
	struct sub_sched *ss = down->subs;
	struct dp_sub_lpm *lpm;

	if (ss == NULL)
		return;
	lpm = (struct dp_sub_lpm *)sub_sched_lookup_ctx(ss);
	down->subs = up->subs = NULL;
	down->subs_cakes = up->subs_cakes = 0;
	sub_sched_free(ss);
	lpm_free(lpm);
}

int
dp_subs_attach_shards(struct dp_dir *const *down, struct dp_dir *const *up, uint32_t n,
		      const struct shaper_config *c, char *err, size_t errlen)
{
	struct sub_sched_config cfg = { 0 };
	struct dp_sub_lpm *lpm[SHAPER_MAX_WORKERS] = { NULL };
	struct dp_sub_nodeshare *ns = NULL; /* the contexts' once joined */
	struct sub_set set;
	uint32_t i;
	int rc;

	if (n == 0 || n > SHAPER_MAX_WORKERS) {
		snprintf(err, errlen, "subscribers: %u workers", n);
		return -EINVAL;
	}
	rc = sub_config_load(c, &set, err, errlen);
	if (rc == 0)
		rc = add_spare_slots(&set, err, errlen);
	if (rc != 0) {
		sub_set_free(&set);
		return rc;
	}
	/* One set of tables for every shard, on the first worker's NUMA node. */
	lpm[0] = lpm_build(&set, dp_dir_socket(down[0]), err, errlen);
	if (lpm[0] == NULL) {
		sub_set_free(&set);
		return -ENOMEM;
	}
	/* Kept for the control thread's names (the schedulers copy what they need). */
	lpm[0]->set = set;
	for (i = 1; i < n; i++) {
		struct sub_set none;

		sub_set_init(&none);
		lpm[i] = lpm_share(lpm[0], &none);
		if (lpm[i] == NULL)
			goto nomem;
	}
	if (n > 1 && c->subscribers.shard_by_subscriber &&
	    (ns = nodeshare_create(&lpm[0]->set, n)) == NULL)
		goto nomem;
	for (i = 0; i < n; i++)
		if (shard_map(lpm[i], &lpm[0]->set, i == 0 ? NULL : lpm[0], &lpm[0]->set, n,
			      sub_sched_unknown_slots_for(&lpm[0]->set, c->subscribers.active,
							  c->subscribers.unknown_addresses),
			      ns, i) != 0)
			goto nomem;
	cfg.set = &lpm[0]->set;
	cfg.active = c->subscribers.active;
	cfg.lookup_v4 = lpm_v4;
	cfg.lookup_v6 = lpm_v6;
	cfg.unknown_slots = c->subscribers.unknown_addresses;
	cfg.unknown_key = down[0]->key; /* every shard's: steering and tables agree */
	for (i = 0; i < n; i++) {
		struct dp_dir *dirs[SHAPER_NUM_DIRS] = {
			[SHAPER_DOWN] = down[i], [SHAPER_UP] = up[i]
		};
		struct sub_sched *ss;

		for (int sd = 0; sd < SUB_DIRS; sd++) {
			struct dp_dir *d = dirs[shaper_dir_of((enum sub_dir)sd)];

			sub_config_sched_params(c, cfg.set, shaper_dir_of((enum sub_dir)sd),
						&cfg.params[sd]);
			cfg.link[sd] = d->sched;
		}
		/* The CAKEs on the worker's NUMA node, as its own scheduler's. */
		cfg.mem = dp_dir_alloc(down[i]);
		cfg.lookup_ctx = lpm[i];
		ss = sub_sched_create(&cfg, err, errlen);
		if (ss == NULL) {
			for (uint32_t j = 0; j < i; j++)
				detach_one(down[j], up[j]); /* frees lpm[j] */
			for (uint32_t j = n; j-- > i;)
				lpm_free(lpm[j]); /* lpm[0]'s tables go with the last reference */
			nodeshare_put(ns);
			return -EINVAL;
		}
		lpm[i] = NULL; /* the scheduler's now */
		for (int sd = 0; sd < SUB_DIRS; sd++) {
			struct dp_dir *d = dirs[shaper_dir_of((enum sub_dir)sd)];

			d->subs = ss;
			d->subs_cakes = cfg.active;
			/* With several shards, the allocation shares the shard's part of the link.
			 */
			sub_sched_set_link_rate(ss, (enum sub_dir)sd,
						d->share_group != NULL
								? d->share.rate
								: sched_get_params(d->sched)->rate,
						0); /* nothing sent yet */
			dp_subs_set_limit(d, sched_get_params(d->sched));
		}
	}
	nodeshare_put(ns); /* the contexts hold it now */
	return 0;
nomem:
	for (uint32_t j = n; j-- > 0;)
		lpm_free(lpm[j]);
	nodeshare_put(ns);
	snprintf(err, errlen, "subscribers: out of memory");
	return -ENOMEM;
}

int
dp_subs_attach(struct dp_dir *dirs[SHAPER_NUM_DIRS], const struct shaper_config *c, char *err,
	       size_t errlen)
{
	return dp_subs_attach_shards(&dirs[SHAPER_DOWN], &dirs[SHAPER_UP], 1, c, err, errlen);
}

void
dp_subs_detach_shards(struct dp_dir *const *down, struct dp_dir *const *up, uint32_t n)
{
	/* The last shard first: shard 0's context holds the set the others' were made from. */
	for (uint32_t i = n; i-- > 0;)
		detach_one(down[i], up[i]);
}

void
dp_subs_detach(struct dp_dir *dirs[SHAPER_NUM_DIRS])
{
	detach_one(dirs[SHAPER_DOWN], dirs[SHAPER_UP]);
}

unsigned int
dp_subs_steer_burst(struct dp_dir *d, struct sh_pkt **pkts, unsigned int n, uint32_t *subs,
		    struct sh_pkt_list *drops)
{
	const struct dp_sub_lpm *l = sub_sched_lookup_ctx(d->subs);
	const struct dp_steer *st = d->steer;
	enum sub_dir sd = sub_dir_of(d);
	uint8_t to[SHAPER_BURST_MAX];

	for (unsigned int i = 0; i < n; i++) {
		uint32_t sub = sub_sched_classify(d->subs, sd, pkts[i]), h;

		subs[i] = sub;
		if (sub < l->nsubs)
			to[i] = l->sub_shard[sub];
		else if (sub_sched_unknown_hash(d->subs, sd, pkts[i], &h))
			to[i] = (uint8_t)(((uint64_t)h * st->n) >> 32); /* its plan on one shard */
		else /* unknown addresses on the link: by LAN host (or flow), as without */
			to[i] = (uint8_t)share_shard_of(pkts[i], st->upstream, st->by, st->n);
	}
	return dp_steer_burst_to(d, pkts, to, subs, n, drops);
}

_Static_assert((int)SUB_RTT_WAN == (int)RTT_SIDE_WAN && (int)SUB_RTT_LAN == (int)RTT_SIDE_LAN,
	       "per-subscriber RTT sides are the RTT tap's");

void
dp_subs_enqueue_burst(struct dp_dir *d, struct sh_pkt **pkts, unsigned int n, const uint32_t *subs,
		      const struct rtt_sample *smp, unsigned int nsmp, uint64_t now,
		      struct sh_pkt_list *drops)
{
	enum sub_dir sd = sub_dir_of(d);
	uint32_t looked[SHAPER_BURST_MAX];

	if (subs == NULL) {
		for (unsigned int i = 0; i < n; i++)
			looked[i] = sub_sched_classify(d->subs, sd, pkts[i]);
		subs = looked;
	}
	/*
	 * A sample's packet is the echo: coming down (WAN side) its LAN address
	 * is the destination, going up (LAN side) the source, which is what
	 * the lookup of its own direction keys on.
	 */
	for (unsigned int k = 0; k < nsmp; k++) {
		uint32_t sub = subs[smp[k].pkt];

		/* An unknown address with a slot of its own: its samples are its own. */
		if (sub >= sub_sched_nsubs(d->subs))
			sub = sub_sched_unknown_find(d->subs, sd, pkts[smp[k].pkt]);
		sub_sched_rtt_sample(d->subs, sub, (enum sub_rtt_side)smp[k].side, smp[k].rtt_ns,
				     now);
	}
	sub_sched_enqueue_burst(d->subs, sd, subs, pkts, n, now, drops);
}

static uint64_t
min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

SH_HEAPSORT_DEFINE(sort_u64, uint64_t)

/* A child's ceiling c (bytes/s) under node n: its need, and its base or weight by n's level. */
static inline void
node_kid(struct dp_sub_lpm *l, enum sub_dir sd, uint32_t n, uint64_t c)
{
	l->node_need[n] += c;
	if ((double)c < l->node_level[sd][n])
		l->node_base[n] += c;
	else
		l->node_weight[n]++;
}

/*
 * Nodes shared among shards: what this shard's subscribers under each node
 * can use (each child's ceiling as the allocation takes it, from the last
 * allocation's demands; a child node's capped at the node's capacity),
 * published on the node's line, then the same weighted max-min split of
 * each node's capacity every shard computes (shaper/share.h): this shard's
 * part becomes the node's capacity in its allocation. The parts add up to
 * the node's capacity, so the node carries no more than that whatever the
 * workers its subscribers are on; a shard whose subscribers there are idle
 * keeps a small floor. Once per allocation: O(active subscribers + nodes x
 * shards).
 */
static void
share_nodes(struct dp_dir *d, struct dp_sub_lpm *l, enum sub_dir sd)
{
	uint32_t nsubs = sub_sched_nsubs(d->subs), nact, nn = l->nnodes, nsh = l->ns->nshards;
	const uint32_t *act = sub_sched_active(d->subs, sd, &nact);
	uint64_t need[SHARE_MAX_SHARDS], base[SHARE_MAX_SHARDS], part[SHARE_MAX_SHARDS];
	uint32_t weight[SHARE_MAX_SHARDS];

	memset(l->node_need, 0, nn * sizeof(*l->node_need));
	memset(l->node_base, 0, nn * sizeof(*l->node_base));
	memset(l->node_weight, 0, nn * sizeof(*l->node_weight));
	for (uint32_t j = 0; j < nact; j++) {
		uint32_t i = act[j];
		uint64_t dem;

		if (i >= nsubs || i >= l->nsubs || l->sub_node[i] == SUB_ROOT)
			continue; /* the link's own entry, unknown addresses: under the link */
		dem = sub_sched_demand(d->subs, sd, i);
		if (dem != 0)
			node_kid(l, sd, l->sub_node[i], min_u64(dem, l->plan_max[sd][i]) / 8);
	}
	/* Children before parents: each node's need, capped, is a child of its parent. */
	for (uint32_t n = nn; n-- > 1;) {
		uint64_t cap = l->node_cap[sd][n] / 8;

		if (cap != 0 && l->node_need[n] > cap)
			l->node_need[n] = cap;
		if (l->node_need[n] != 0 && l->node_parent[n] != SUB_ROOT)
			node_kid(l, sd, l->node_parent[n], l->node_need[n]);
	}
	for (uint32_t n = 1; n < nn; n++) {
		struct share_slot *line = &l->ns->slot[((size_t)n * SUB_DIRS + sd) * nsh];
		uint64_t cap = l->node_cap[sd][n] / 8;
		double level;

		atomic_store_explicit(&line[l->shard].need, l->node_need[n], memory_order_relaxed);
		atomic_store_explicit(&line[l->shard].base, l->node_base[n], memory_order_relaxed);
		/*
		 * Some weight while it needs anything: the split then finds a
		 * level (a need met by bases alone leaves none), and the next
		 * tick weighs the children above it.
		 */
		atomic_store_explicit(&line[l->shard].weight,
				      l->node_weight[n] == 0 && l->node_need[n] != 0
						      ? 1
						      : l->node_weight[n],
				      memory_order_relaxed);
		if (cap == 0)
			continue; /* unlimited: nothing to share */
		for (uint32_t k = 0; k < nsh; k++) {
			need[k] = atomic_load_explicit(&line[k].need, memory_order_relaxed);
			base[k] = atomic_load_explicit(&line[k].base, memory_order_relaxed);
			weight[k] = atomic_load_explicit(&line[k].weight, memory_order_relaxed);
		}
		share_split_of(cap, nsh, need, base, weight, part, &level);
		l->node_level[sd][n] = level;
		l->node_part[sd][n] = part[l->shard] != 0 ? part[l->shard] : 1;
		sub_sched_set_node_capacity(d->subs, sd, n, l->node_part[sd][n] * 8);
	}
}

/*
 * The link's children in this shard and each one's ceiling, from the last
 * allocation's demands, as the allocation computes them
 * (shaper/subscriber_alloc.h): a subscriber's min(plan, demand), a node's
 * min(capacity, its children's together), the link's own entry its demand.
 * Sorted, with prefix sums, for dp_subs_share_tick. Once per allocation,
 * over the subscribers holding a CAKE only (an idle one's demand is 0) and
 * the nodes: its cost follows the active subscribers, not the configured
 * ones. Mins are left out: the split among shards does not reserve them
 * (inside a shard the allocation does).
 */
static void
measure_kids(struct dp_dir *d, struct dp_sub_lpm *l, enum sub_dir sd)
{
	uint32_t nsubs = sub_sched_nsubs(d->subs), k = 0, nact;
	const uint32_t *act = sub_sched_active(d->subs, sd, &nact);
	uint64_t *kid = l->kid_ceil[sd], *sum = l->kid_sum[sd], dem;

	memset(l->node_ceil, 0, l->nnodes * sizeof(*l->node_ceil));
	for (uint32_t j = 0; j < nact; j++) {
		uint32_t i = act[j];
		uint64_t c;

		if (i == nsubs || i >= l->nsubs + 1 + sub_sched_unknown_slots(d->subs))
			continue; /* the link's own entry: below */
		dem = sub_sched_demand(d->subs, sd, i);
		if (dem == 0)
			continue;
		if (i > nsubs) {
			/* An unknown address with a plan: one more child of the link. */
			kid[k++] = min_u64(dem, sub_sched_plan_max(d->subs, sd, i)) / 8;
			continue;
		}
		c = min_u64(dem, l->plan_max[sd][i]);
		if (l->sub_node[i] == SUB_ROOT)
			kid[k++] = c / 8;
		else if (l->node_ceil[l->sub_node[i]] < UINT64_MAX - c)
			l->node_ceil[l->sub_node[i]] += c;
	}
	/* Children before parents: each node capped (its part, if shared), then added to its
	 * parent. */
	for (uint32_t n = l->nnodes; n-- > 1;) {
		uint64_t c = min_u64(l->node_ceil[n],
				     l->ns != NULL ? l->node_part[sd][n] * 8 : l->node_cap[sd][n]);

		if (c == 0)
			continue;
		if (l->node_parent[n] == SUB_ROOT)
			kid[k++] = c / 8;
		else if (l->node_ceil[l->node_parent[n]] < UINT64_MAX - c)
			l->node_ceil[l->node_parent[n]] += c;
	}
	dem = sub_sched_demand(d->subs, sd, nsubs); /* the link's own entry: unknown addresses */
	if (dem != 0)
		kid[k++] = (l->node_cap[sd][SUB_ROOT] != 0 ? min_u64(dem, l->node_cap[sd][SUB_ROOT])
							   : dem) /
			   8;
	sort_u64(kid, k);
	sum[0] = 0;
	for (uint32_t i = 0; i < k; i++)
		sum[i + 1] = sum[i] + kid[i] < sum[i] ? UINT64_MAX : sum[i] + kid[i];
	l->nkids[sd] = k;
}

void
dp_subs_share_tick(struct dp_dir *d, uint64_t now)
{
	struct dp_sub_lpm *l = (struct dp_sub_lpm *)sub_sched_lookup_ctx(d->subs);
	enum sub_dir sd = sub_dir_of(d);
	struct sub_sched_stats st;
	uint64_t need = 0, base = 0, floor = share_group_floor(d->share_group);
	uint32_t below = 0, n;

	sub_sched_get_stats(d->subs, sd, &st);
	if (st.allocations != l->seen_allocs[sd]) {
		l->seen_allocs[sd] = st.allocations;
		if (l->ns != NULL)
			share_nodes(d, l, sd);
		measure_kids(d, l, sd);
	}
	n = l->nkids[sd];
	if (n != 0) {
		/*
		 * The link splits its rate among its children max-min: those whose
		 * ceiling lies below the level (the last split's) take their
		 * ceiling, the base; the others, the weight, one share each.
		 */
		uint64_t level = d->share.level >= 0x1p63 ? UINT64_MAX : (uint64_t)d->share.level;
		uint32_t lo = 0, hi = n;

		while (lo < hi) {
			uint32_t mid = (lo + hi) / 2;

			if (l->kid_ceil[sd][mid] < level)
				lo = mid + 1;
			else
				hi = mid;
		}
		below = lo;
		base = l->kid_sum[sd][below];
		need = l->kid_sum[sd][n] >= SHARE_NEED_ALL - floor ? SHARE_NEED_ALL
								   : l->kid_sum[sd][n] + floor;
	}
	sub_sched_set_link_rate(d->subs, sd, share_tick_need(&d->share, need, base, n - below, now),
				now);
}

void
dp_subs_set_limit(struct dp_dir *d, const struct sched_params *p)
{
	uint64_t one = dp_budget_sched_part(sched_max_packets(p, d->truesize), d->subs_cakes);

	if (d->subs == NULL)
		return;
	/*
	 * The budget (shaper/dp_budget.h) has room for what the link's
	 * scheduler can hold, and at least a few packets for each CAKE of the
	 * pool: every subscriber's CAKE and the link's share it.
	 * Unbounded (a fifo without limits): what the pool has past the rest.
	 */
	if (one == SCHED_UNBOUNDED)
		one = d->pool_mbufs > d->mbuf_fixed ? d->pool_mbufs - d->mbuf_fixed : 1;
	sub_sched_set_limit(d->subs, sub_dir_of(d), one);
}

/* The likeliest refusals, found before anything is built or changed (set freed then). */
static int
subs_change_refused(struct dp_dir *const *down, uint32_t n, struct sub_set *set, char *err,
		    size_t errlen)
{
	if (down[0]->subs == NULL) {
		sub_set_free(set);
		snprintf(err, errlen, "subscribers are not shaped");
		return -EINVAL;
	}
	for (uint32_t i = 0; i < n; i++)
		if (!dp_dir_mailbox_free(down[i])) {
			sub_set_free(set);
			snprintf(err, errlen,
				 "the data plane is still busy with an earlier request");
			return -EBUSY;
		}
	return 0;
}

/*
 * Each shard's lookup context for set (taken): shard 0's with new address
 * tables (built here: the workers only swap a pointer) or the running
 * ones, the others sharing shard 0's; each mapped onto its shard's running
 * slots, with the nodes shared among shards (*ns) if the running set's
 * are. -ENOMEM: what was built is in ctx and *ns, for the caller to free.
 */
static int
subs_change_contexts(struct dp_dir *const *down, uint32_t n, struct sub_set *set, bool addresses,
		     struct dp_sub_lpm **ctx, struct dp_sub_nodeshare **ns, char *err,
		     size_t errlen)
{
	const struct dp_sub_lpm *cur = sub_sched_lookup_ctx(down[0]->subs);

	if (addresses) {
		ctx[0] = lpm_build(set, dp_dir_socket(down[0]), err, errlen);
		if (ctx[0] != NULL)
			ctx[0]->set = *set;
		else
			sub_set_free(set);
	} else {
		ctx[0] = lpm_share(cur, set);
	}
	if (ctx[0] == NULL)
		return -ENOMEM;
	for (uint32_t i = 1; i < n; i++) {
		struct sub_set none;

		sub_set_init(&none);
		ctx[i] = lpm_share(ctx[0], &none);
		if (ctx[i] == NULL)
			return -ENOMEM;
	}
	/* Nodes shared among shards: new lines for the new set's nodes. */
	if (cur->ns != NULL && (*ns = nodeshare_create(&ctx[0]->set, n)) == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		if (shard_map(ctx[i], &ctx[0]->set, sub_sched_lookup_ctx(down[i]->subs), &cur->set,
			      n, sub_sched_unknown_slots(down[i]->subs), *ns, i) != 0)
			return -ENOMEM;
	return 0;
}

/*
 * Every shard's message, built before any is posted so that a failure
 * here changes nothing; each takes its context (ctx[i] NULL once it has).
 * -ENOMEM: what was built is in m and ctx, for the caller to free.
 */
static int
subs_change_messages(struct dp_dir *const *down, uint32_t n, const uint32_t *reset, uint32_t nreset,
		     struct dp_sub_lpm **ctx, struct dp_msg **m, char *err, size_t errlen)
{
	const struct sub_set *nset = &ctx[0]->set; /* the first change's once built, lives on */

	for (uint32_t i = 0; i < n; i++) {
		m[i] = rte_zmalloc(NULL, sizeof(*m[i]), 0);
		if (m[i] == NULL)
			return -ENOMEM;
		m[i]->type = DP_MSG_SUBS;
		/* ctx[0]'s set is read here only: the change copies what it keeps. */
		m[i]->subs_change = sub_sched_change_build(down[i]->subs, nset, reset, nreset,
							   ctx[i], lpm_free_ctx, err, errlen);
		if (m[i]->subs_change == NULL)
			return -ENOMEM;
		ctx[i] = NULL; /* the change's now */
	}
	return 0;
}

/*
 * Post shard by shard. The mailboxes were free, so a refusal means a
 * worker that did not take the change in time; the others still take it (a
 * change carries the whole set, so the next one brings that shard level
 * with the rest), and err names the first worker that refused.
 */
static int
subs_change_post(struct dp_dir *const *down, uint32_t n, struct dp_msg **m, unsigned int timeout_ms,
		 char *err, size_t errlen)
{
	int rc = 0;

	for (uint32_t i = 0; i < n; i++) {
		char one[256] = "";
		int r = dp_dir_call(down[i], &m[i], timeout_ms);

		if (r == 0)
			r = m[i]->rc;
		if (r == 0)
			continue;
		dp_call_error(r, m[i], one, sizeof(one));
		if (rc == 0) {
			rc = r;
			if (n > 1)
				snprintf(err, errlen, "%s (worker %u of %u)", one, i + 1, n);
			else
				snprintf(err, errlen, "%s", one);
		}
	}
	return rc;
}

int
dp_subs_change(struct dp_dir *const *down, uint32_t n, struct sub_set *set, bool addresses,
	       const uint32_t *reset, uint32_t nreset, unsigned int timeout_ms, char *err,
	       size_t errlen)
{
	struct dp_sub_lpm *ctx[SHAPER_MAX_WORKERS] = { NULL };
	struct dp_msg *m[SHAPER_MAX_WORKERS] = { NULL };
	struct dp_sub_nodeshare *ns = NULL; /* the contexts' once joined */
	int rc = subs_change_refused(down, n, set, err, errlen);

	if (rc != 0)
		return rc;
	if (subs_change_contexts(down, n, set, addresses, ctx, &ns, err, errlen) == 0 &&
	    subs_change_messages(down, n, reset, nreset, ctx, m, err, errlen) == 0) {
		rc = subs_change_post(down, n, m, timeout_ms, err, errlen);
		/*
		 * The old state once applied (the old context and its tables'
		 * reference), else the new. The last shard first: shard 0's
		 * context holds the set.
		 */
		for (uint32_t i = n; i-- > 0;)
			dp_msg_free(m[i]);
		nodeshare_put(ns); /* the contexts hold it now */
		return rc;
	}
	for (uint32_t i = n; i-- > 0;) {
		dp_msg_free(m[i]); /* frees its context too */
		lpm_free(ctx[i]);
	}
	nodeshare_put(ns);
	if (err[0] == '\0')
		snprintf(err, errlen, "subscribers: out of memory");
	return -ENOMEM;
}

const struct sub_set *
dp_subs_set(const struct dp_dir *d)
{
	const struct dp_sub_lpm *l;

	if (d->subs == NULL)
		return NULL;
	l = sub_sched_lookup_ctx(d->subs);
	return &l->set;
}
