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

#include <rte_errno.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>

#include "shaper/dataplane.h"
#include "shaper/subscriber_config.h"

/*
 * The scheduler's lookup context, and the loaded set the control thread
 * names subscribers from (read-only once attached).
 */
struct dp_sub_lpm {
	struct rte_lpm *v4;  /* NULL: no unqualified v4 prefix */
	struct rte_lpm6 *v6; /* NULL: no unqualified v6 prefix */
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
	rte_lpm_free(l->v4);
	rte_lpm6_free(l->v6);
	sub_set_free(&l->set);
	free(l);
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
	sub_set_init(&l->set);
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
		l->v4 = rte_lpm_create(name, socket, &c);
		if (l->v4 == NULL)
			goto fail;
	}
	if (n6 != 0) {
		struct rte_lpm6_config c = { .max_rules = n6, .number_tbl8s = t6 };

		snprintf(name, sizeof(name), "subs6_%u", seq);
		l->v6 = rte_lpm6_create(name, socket, &c);
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

const struct sub_set *
dp_subs_set(const struct dp_dir *d)
{
	const struct dp_sub_lpm *l;

	if (d->subs == NULL)
		return NULL;
	l = sub_sched_lookup_ctx(d->subs);
	return &l->set;
}
