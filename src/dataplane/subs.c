/*
 * Per-subscriber shaping hung on a worker's two directions: the subscriber
 * files the config names, loaded and checked, and the per-subscriber
 * scheduler around each direction's own scheduler (shaper/subscriber_sched.h).
 * One worker only: the config refuses subscribers with more.
 *
 * The address lookup of the prefixes on no VLAN is DPDK's rte_lpm and
 * rte_lpm6: several times faster than the set's own hash lookup for IPv4,
 * and for misses of either family (docs/subscribers.md has the figures).
 * VLAN-qualified prefixes, which rte_lpm cannot key, stay with the hash
 * lookup inside the scheduler.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>

#include <rte_errno.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>

#include "shaper/dataplane.h"
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
 * The scheduler's lookup context, and the loaded set the control thread
 * names subscribers from (read-only once attached; a live change brings a
 * new context). v4 and v6 are the tables' own, copied for one load less.
 */
struct dp_sub_lpm {
	struct rte_lpm *v4;
	struct rte_lpm6 *v6;
	struct dp_sub_tables *t;
	struct sub_set set;
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
	free(l);
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

int
dp_subs_attach(struct dp_dir *dirs[SHAPER_NUM_DIRS], const struct shaper_config *c, char *err,
	       size_t errlen)
{
	struct sub_sched_config cfg = { 0 };
	struct dp_sub_lpm *lpm;
	struct sub_sched *ss;
	struct sub_set set;
	int rc;

	rc = sub_config_load(c, &set, err, errlen);
	if (rc == 0)
		rc = add_spare_slots(&set, err, errlen);
	if (rc != 0) {
		sub_set_free(&set);
		return rc;
	}
	cfg.set = &set;
	cfg.active = c->subscribers.active;
	for (int sd = 0; sd < SUB_DIRS; sd++) {
		struct dp_dir *d = dirs[shaper_dir_of((enum sub_dir)sd)];

		sub_config_sched_params(c, &set, shaper_dir_of((enum sub_dir)sd), &cfg.params[sd]);
		cfg.link[sd] = d->sched;
	}
	/* The CAKEs and tables on the worker's NUMA node, as its own scheduler's. */
	cfg.mem = dp_dir_alloc(dirs[SHAPER_DOWN]);
	lpm = lpm_build(&set, dp_dir_socket(dirs[SHAPER_DOWN]), err, errlen);
	if (lpm == NULL) {
		sub_set_free(&set);
		return -ENOMEM;
	}
	cfg.lookup_v4 = lpm_v4;
	cfg.lookup_v6 = lpm_v6;
	cfg.lookup_ctx = lpm;
	ss = sub_sched_create(&cfg, err, errlen);
	/* Kept for the control thread's names (the scheduler copied what it needs). */
	lpm->set = set;
	if (ss == NULL) {
		lpm_free(lpm);
		return -EINVAL;
	}
	for (int sd = 0; sd < SUB_DIRS; sd++) {
		struct dp_dir *d = dirs[shaper_dir_of((enum sub_dir)sd)];

		d->subs = ss;
		sub_sched_set_link_rate(ss, (enum sub_dir)sd, sched_get_params(d->sched)->rate);
		dp_subs_set_limit(d, sched_get_params(d->sched));
	}
	return 0;
}

void
dp_subs_detach(struct dp_dir *dirs[SHAPER_NUM_DIRS])
{
	struct sub_sched *ss = dirs[SHAPER_DOWN]->subs;
	struct dp_sub_lpm *lpm;

	if (ss == NULL)
		return;
	lpm = (struct dp_sub_lpm *)sub_sched_lookup_ctx(ss);
	dirs[SHAPER_DOWN]->subs = dirs[SHAPER_UP]->subs = NULL;
	sub_sched_free(ss);
	lpm_free(lpm);
}

void
dp_subs_set_limit(struct dp_dir *d, const struct sched_params *p)
{
	uint64_t one = sched_max_packets(p, d->truesize);

	if (d->subs == NULL)
		return;
	/*
	 * The budget (shaper/dp_budget.h) has room for what the link's
	 * scheduler can hold: every subscriber's CAKE and the link's share it.
	 * Unbounded (a fifo without limits): what the pool has past the rest.
	 */
	if (one == SCHED_UNBOUNDED)
		one = d->pool_mbufs > d->mbuf_fixed ? d->pool_mbufs - d->mbuf_fixed : 1;
	sub_sched_set_limit(d->subs, d->dir == SHAPER_DOWN ? SUB_DOWN : SUB_UP, one);
}

int
dp_subs_change(struct dp_dir *down, struct sub_set *set, bool addresses, const uint32_t *reset,
	       uint32_t nreset, unsigned int timeout_ms, char *err, size_t errlen)
{
	const struct dp_sub_lpm *cur;
	struct dp_sub_lpm *ctx;
	struct dp_msg *m;
	int rc;

	if (down->subs == NULL) {
		sub_set_free(set);
		snprintf(err, errlen, "subscribers are not shaped");
		return -EINVAL;
	}
	cur = sub_sched_lookup_ctx(down->subs);
	if (addresses) {
		/* New tables, built here: the worker only swaps a pointer. */
		ctx = lpm_build(set, dp_dir_socket(down), err, errlen);
		if (ctx != NULL)
			ctx->set = *set;
		else
			sub_set_free(set);
	} else {
		ctx = lpm_share(cur, set);
	}
	if (ctx == NULL) {
		if (err[0] == '\0')
			snprintf(err, errlen, "subscribers: out of memory");
		return -ENOMEM;
	}
	m = rte_zmalloc(NULL, sizeof(*m), 0);
	if (m == NULL) {
		lpm_free(ctx);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	m->type = DP_MSG_SUBS;
	m->subs_change = sub_sched_change_build(down->subs, &ctx->set, reset, nreset, ctx,
						lpm_free_ctx, err, errlen);
	if (m->subs_change == NULL) {
		lpm_free(ctx);
		rte_free(m);
		return -ENOMEM;
	}
	rc = dp_dir_call(down, &m, timeout_ms);
	if (rc == 0)
		rc = m->rc;
	if (m == NULL)
		snprintf(err, errlen,
			 "the data plane did not answer in time; the change is still being "
			 "applied");
	else if (rc == -ETIMEDOUT)
		snprintf(err, errlen, "the data plane did not answer in time; nothing changed");
	else if (rc == -EBUSY)
		snprintf(err, errlen, "the data plane is still busy with an earlier request");
	else if (rc != 0)
		snprintf(err, errlen, "%s", m->err[0] != '\0' ? m->err : strerror(-rc));
	/* The old state once applied (the old context and its tables' reference), else the new. */
	dp_msg_free(m);
	return rc;
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
