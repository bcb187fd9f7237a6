/*
 * The control plane's view of the data plane: seqlock snapshots the
 * workers publish, and a one-slot mailbox per direction (see struct
 * dp_mailbox) so changes are applied by the owning worker between bursts.
 * No locks are taken on the worker's side.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "shaper/dataplane.h"
#include "shaper/failopen.h"
#include "shaper/log.h"

#define MBOX_WORD(gen, st) ((gen) << 8 | (uint64_t)(st))
#define MBOX_GEN(w)        ((w) >> 8)
#define MBOX_ST(w)         ((enum dp_mbox_state)((w)&0xff))

void
dp_msg_free(struct dp_msg *m)
{
	if (m == NULL)
		return;
	sched_free(m->sched);
	rte_free(m->facts);
	sub_sched_change_free(m->subs_change);
	rte_free(m);
}

static bool
mbox_cas(struct dp_mailbox *mb, uint64_t *expect, uint64_t want)
{
	return __atomic_compare_exchange_n(&mb->state, expect, want, false, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE);
}

/* Free an answer nobody waited for; true if the slot was (or now is) free. */
static bool
mbox_reclaim(struct dp_mailbox *mb)
{
	uint64_t w = __atomic_load_n(&mb->state, __ATOMIC_ACQUIRE);
	struct dp_msg *orphan;

	if (MBOX_ST(w) == DP_MBOX_FREE)
		return true;
	if (MBOX_ST(w) != DP_MBOX_ORPHANED)
		return false;
	orphan = mb->msg; /* read before the slot is free for the next poster */
	if (!mbox_cas(mb, &w, MBOX_WORD(MBOX_GEN(w), DP_MBOX_FREE)))
		return false;
	dp_msg_free(orphan); /* an old scheduler coming back from a swap included */
	return true;
}

bool
dp_dir_mailbox_free(struct dp_dir *d)
{
	return mbox_reclaim(&d->ctl->mbox);
}

int
dp_dir_control_init(struct dp_dir *d)
{
	int socket = dp_dir_socket(d);

	/* Zeroed: the mailbox free, no request in progress, the first turn publishes. */
	d->ctl = rte_zmalloc_socket("ctl_block", sizeof(*d->ctl), RTE_CACHE_LINE_SIZE, socket);
	if (d->ctl == NULL)
		return -ENOMEM;
	d->ctl->snap = rte_zmalloc_socket("ctl_snapshot", sizeof(*d->ctl->snap),
					  RTE_CACHE_LINE_SIZE, socket);
	if (d->ctl->snap == NULL) {
		rte_free(d->ctl);
		d->ctl = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Called once the worker has stopped: whatever the mailbox still holds is nobody's but ours. */
void
dp_dir_control_free(struct dp_dir *d)
{
	uint64_t w;

	if (d->ctl == NULL)
		return;
	w = __atomic_load_n(&d->ctl->mbox.state, __ATOMIC_ACQUIRE);

	/* DONE too: an answer dp_dir_drain gave at shutdown that nobody collects. */
	if (MBOX_ST(w) == DP_MBOX_ORPHANED || MBOX_ST(w) == DP_MBOX_ABANDONED ||
	    MBOX_ST(w) == DP_MBOX_DONE)
		dp_msg_free(d->ctl->mbox.msg);
	rte_free(d->ctl->snap);
	rte_free(d->ctl);
	d->ctl = NULL;
}

int
dp_snapshot_read(const struct dp_dir *d, struct dp_snapshot *out)
{
	/*
	 * Spin briefly, then sleep between tries: on a loaded box the worker
	 * can be preempted in the middle of a publish for milliseconds, and the
	 * control thread can afford to wait (up to 200 ms) rather than answer
	 * "busy".
	 */
	for (int tries = 0; tries < 1000 + 10000; tries++) {
		uint32_t s1 = __atomic_load_n(&d->ctl->snap->seq, __ATOMIC_ACQUIRE), s2;

		if (s1 == 0)
			return -EAGAIN; /* nothing published yet */
		if (!(s1 & 1)) {
			memcpy(out, d->ctl->snap, sizeof(*out));
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			s2 = __atomic_load_n(&d->ctl->snap->seq, __ATOMIC_RELAXED);
			if (s1 == s2)
				return 0;
		}
		if (tries < 1000)
			rte_pause();
		else
			usleep(20);
	}
	return -EAGAIN;
}

struct dp_msg *
dp_mailbox_take(struct dp_dir *d)
{
	struct dp_mailbox *mb = &d->ctl->mbox;
	uint64_t w = __atomic_load_n(&mb->state, __ATOMIC_ACQUIRE);

	if (MBOX_ST(w) != DP_MBOX_POSTED)
		return NULL;
	/* Fails only if the caller withdrew it at this moment: then it is not ours. */
	if (!mbox_cas(mb, &w, MBOX_WORD(MBOX_GEN(w), DP_MBOX_TAKEN)))
		return NULL;
	return mb->msg;
}

void
dp_mailbox_answer(struct dp_dir *d, struct dp_msg *m)
{
	struct dp_mailbox *mb = &d->ctl->mbox;
	uint64_t w = MBOX_WORD(m->gen, DP_MBOX_TAKEN);

	/* The caller waits (TAKEN) or gave up (ABANDONED): only it can have changed the state. */
	if (!mbox_cas(mb, &w, MBOX_WORD(m->gen, DP_MBOX_DONE)))
		__atomic_store_n(&mb->state, MBOX_WORD(m->gen, DP_MBOX_ORPHANED), __ATOMIC_RELEASE);
}

int
dp_dir_call(struct dp_dir *d, struct dp_msg **mp, unsigned int timeout_ms)
{
	struct dp_mailbox *mb = &d->ctl->mbox;
	uint64_t deadline = shaper_monotonic_ns() + (uint64_t)timeout_ms * 1000000u;
	uint64_t w, gen;

	/* An earlier answer that came after its caller gave up is freed here. */
	if (!mbox_reclaim(mb))
		return -EBUSY;
	w = __atomic_load_n(&mb->state, __ATOMIC_ACQUIRE);
	gen = MBOX_GEN(w) + 1;
	if (MBOX_ST(w) != DP_MBOX_FREE || !mbox_cas(mb, &w, MBOX_WORD(gen, DP_MBOX_POSTING)))
		return -EBUSY; /* another control thread posts at this moment */
	(*mp)->gen = gen;
	mb->msg = *mp;
	__atomic_store_n(&mb->state, MBOX_WORD(gen, DP_MBOX_POSTED), __ATOMIC_RELEASE);

	for (;;) {
		w = __atomic_load_n(&mb->state, __ATOMIC_ACQUIRE);
		if (w == MBOX_WORD(gen, DP_MBOX_DONE)) {
			__atomic_store_n(&mb->state, MBOX_WORD(gen, DP_MBOX_FREE),
					 __ATOMIC_RELEASE);
			return 0;
		}
		if (shaper_monotonic_ns() >= deadline)
			break;
		usleep(50);
	}
	/* Timed out: withdraw the request if the worker has not taken it yet. */
	for (;;) {
		w = __atomic_load_n(&mb->state, __ATOMIC_ACQUIRE);
		switch (MBOX_ST(w)) {
		case DP_MBOX_POSTED: /* never seen: not applied, still the caller's */
			if (mbox_cas(mb, &w, MBOX_WORD(gen, DP_MBOX_FREE)))
				return -ETIMEDOUT;
			break;
		case DP_MBOX_TAKEN: /* the worker has it: it answers to the mailbox */
			if (mbox_cas(mb, &w, MBOX_WORD(gen, DP_MBOX_ABANDONED))) {
				*mp = NULL;
				return -ETIMEDOUT;
			}
			break;
		case DP_MBOX_DONE: /* answered just now */
			__atomic_store_n(&mb->state, MBOX_WORD(gen, DP_MBOX_FREE),
					 __ATOMIC_RELEASE);
			return 0;
		default:            /* cannot happen: only this caller moves gen on */
			*mp = NULL; /* whose the message is is unknown: leak it rather than race */
			return -EPROTO;
		}
	}
}

void
dp_call_error(int rc, const struct dp_msg *m, char *err, size_t errlen)
{
	if (m == NULL)
		snprintf(err, errlen,
			 "the data plane did not answer in time; the change is "
			 "still being applied");
	else if (rc == -ETIMEDOUT)
		snprintf(err, errlen, "the data plane did not answer in time; nothing changed");
	else if (rc == -EBUSY)
		snprintf(err, errlen, "the data plane is still busy with an earlier request");
	else if (rc != 0)
		snprintf(err, errlen, "%s", m->err[0] != '\0' ? m->err : strerror(-rc));
}

/* The backend the control server calls. */
static int
be_shard_snapshot(void *opaque, enum shaper_dir dir, unsigned int shard, struct ctl_dir_counters *c,
		  struct sched_stats *st, struct sched_params *params)
{
	struct dp_control *ctl = opaque;
	struct dp_snapshot *s;
	int rc;

	if (shard >= ctl->n_shards)
		return -EINVAL;
	s = rte_malloc(NULL, sizeof(*s), 0);
	if (s == NULL)
		return -ENOMEM;
	rc = dp_snapshot_read(ctl->dirs[dir][shard], s);
	if (rc == 0) {
		*c = s->c;
		*st = s->st;
		*params = s->params;
	}
	rte_free(s);
	return rc;
}

/* A direction as a whole: its shards' snapshots merged. */
static int
be_dir_snapshot(void *opaque, enum shaper_dir dir, struct ctl_dir_counters *c,
		struct sched_stats *st, struct sched_params *params)
{
	struct dp_control *ctl = opaque;
	struct ctl_dir_counters *oc;
	struct sched_stats *ost;
	struct sched_params op;
	int rc = be_shard_snapshot(opaque, dir, 0, c, st, params);

	if (rc != 0 || ctl->n_shards <= 1)
		return rc;
	oc = rte_malloc(NULL, sizeof(*oc), 0);
	ost = rte_malloc(NULL, sizeof(*ost), 0);
	if (oc == NULL || ost == NULL)
		rc = -ENOMEM;
	for (unsigned int i = 1; rc == 0 && i < ctl->n_shards; i++) {
		rc = be_shard_snapshot(opaque, dir, i, oc, ost, &op);
		if (rc == 0) {
			ctl_dir_counters_merge(c, oc);
			sched_stats_merge(st, ost);
		}
	}
	rte_free(oc);
	rte_free(ost);
	return rc;
}

static pthread_mutex_t port_stats_lock = PTHREAD_MUTEX_INITIALIZER;

int
dp_port_counters(const struct dp_port *port, struct ctl_port_counters *pc)
{
	struct rte_eth_stats es;
	int rc;

	memset(&es, 0, sizeof(es));
	memset(pc, 0, sizeof(*pc));
	/*
	 * The telemetry thread and the main thread both ask, and ethdev's
	 * stats_get is not safe to call from two threads at once.
	 */
	pthread_mutex_lock(&port_stats_lock);
	rc = rte_eth_stats_get(port->port_id, &es);
	pthread_mutex_unlock(&port_stats_lock);
	if (rc != 0)
		return rc;
	snprintf(pc->name, sizeof(pc->name), "%s", port->name);
	pc->rx_packets = es.ipackets;
	pc->tx_packets = es.opackets;
	pc->rx_bytes = es.ibytes;
	pc->tx_bytes = es.obytes;
	pc->rx_missed = es.imissed;
	pc->rx_errors = es.ierrors;
	pc->tx_errors = es.oerrors;
	pc->rx_nombuf = es.rx_nombuf;
	pc->link_up = port->link_up;
	pc->link_speed = port->link_speed;
	pc->link_changes = port->link_changes;
	pc->reconnects = port->reconnects;
	return 0;
}

static int
be_port_counters(void *opaque, enum shaper_port_role r, struct ctl_port_counters *pc)
{
	struct dp_control *ctl = opaque;
	int rc;

	if (ctl->ports[r] == NULL)
		return -ENOENT;
	rc = dp_port_counters(ctl->ports[r], pc);
	if (rc == 0 && ctl->port_label[r] != NULL)
		snprintf(pc->role, sizeof(pc->role), "%s", ctl->port_label[r]);
	return rc;
}

static int
be_fail_open(void *opaque, struct ctl_fail_open_counters *c)
{
	struct dp_control *ctl = opaque;
	struct dp_failopen_counters fc;

	if (ctl->failopen == NULL)
		return -ENOENT;
	dp_failopen_counters(ctl->failopen, &fc);
	c->holding = fc.holding;
	c->renewals = fc.renewals;
	c->takeovers = fc.takeovers;
	c->lapses = fc.lapses;
	c->lapses_late = fc.lapses_late;
	c->lapses_withheld = fc.lapses_withheld;
	c->lapsed_ns = fc.lapsed_ns;
	c->look_gap_max_ns = fc.look_gap_max_ns;
	c->withheld = fc.withheld;
	c->drain_waits = fc.drain_waits;
	return 0;
}

static int
be_heap_bytes(void *opaque, uint64_t *bytes)
{
	(void)opaque;
	*bytes = 0;
	for (unsigned int i = 0; i < rte_socket_count(); i++) {
		struct rte_malloc_socket_stats ms;

		if (rte_malloc_get_socket_stats(rte_socket_id_by_idx(i), &ms) != 0)
			return -EINVAL;
		*bytes += ms.heap_allocsz_bytes;
	}
	return 0;
}

static unsigned int
call_timeout(const struct dp_control *ctl)
{
	return ctl->timeout_ms != 0 ? ctl->timeout_ms : DP_CALL_TIMEOUT_MS;
}

/*
 * Apply p to one shard of a direction (its worker applies it between
 * bursts). *pending is set when the worker took the change but did not
 * answer in time: it will still apply it.
 */
static int
apply_shard(struct dp_control *ctl, struct dp_dir *d, const struct sched_params *p, char *err,
	    size_t errlen, bool *pending)
{
	struct dp_snapshot *s = rte_malloc(NULL, sizeof(*s), 0);
	struct dp_msg *m = rte_zmalloc(NULL, sizeof(*m), 0);
	int rc;

	*pending = false;
	if (s == NULL || m == NULL) {
		rte_free(s);
		rte_free(m);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = dp_snapshot_read(d, s);
	m->params = *p;
	if (d->pool != NULL)
		m->params.pkt_mem = d->truesize; /* what each queued packet pins here */
	/* The direction's pool must still hold everything the new limits allow. */
	if (rc == 0 && d->pool != NULL &&
	    dp_budget_check_update(d, &m->params, m->err, sizeof(m->err)) != 0)
		rc = -ENOSPC;
	if (rc == 0 && s->params.discipline != p->discipline) {
		/* Built here, off the worker: allocation never happens on the fast path. */
		m->type = DP_MSG_SWAP;
		m->sched = sched_create_on(&m->params, dp_dir_alloc(d), m->err, sizeof(m->err));
		if (m->sched == NULL)
			rc = -EINVAL;
	} else if (rc == 0) {
		m->type = DP_MSG_UPDATE;
	}
	if (rc == 0)
		rc = dp_dir_call(d, &m, call_timeout(ctl));
	if (rc == 0)
		rc = m->rc;
	*pending = m == NULL;
	dp_call_error(rc, m, err, errlen);
	/* The old scheduler after a swap (now empty), or the unused new one. */
	dp_msg_free(m);
	rte_free(s);
	return rc;
}

/* Append " (...)" to err. */
static void
err_append(char *err, size_t errlen, const char *what, unsigned int i, unsigned int n)
{
	size_t k = strlen(err);

	if (k < errlen)
		snprintf(err + k, errlen - k, " (%s %u of %u)", what, i + 1, n);
}

/*
 * Every shard of the direction takes the change, or none does. Nothing is
 * posted while any shard's mailbox still holds an earlier request (the
 * likeliest refusal, found before anything changed); the link rate moves in
 * the share group first, and each shard shapes at its part of it as soon as
 * its worker applies the change (dp_share_reapply). If a shard then refuses
 * or never takes the change, the shards before it are put back on their
 * old parameters and the group on its old rate. If a worker took the change
 * but did not answer in time it will still apply it: then the change goes
 * on to every shard, and the caller is told it is still being applied.
 */
static int
be_apply(void *opaque, enum shaper_dir dir, const struct sched_params *p, char *err, size_t errlen)
{
	struct dp_control *ctl = opaque;
	struct share_group *g = ctl->dirs[dir][0]->share_group;
	uint64_t old_rate = g != NULL ? atomic_load(&g->link_rate) : 0;
	struct dp_snapshot *snap;
	struct sched_params old;
	unsigned int n = ctl->n_shards, i;
	char scratch[256];
	bool pending = false;
	int rc = 0;

	if (g != NULL && share_rate_check(p->rate, n, err, errlen) != 0)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!dp_dir_mailbox_free(ctl->dirs[dir][i])) {
			snprintf(err, errlen,
				 "the data plane is still busy with an earlier request");
			if (n > 1)
				err_append(err, errlen, "on worker", i, n);
			return -EBUSY;
		}
	snap = rte_malloc(NULL, sizeof(*snap), 0);
	if (snap == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = dp_snapshot_read(ctl->dirs[dir][0], snap);
	old = snap->params;
	rte_free(snap);
	if (rc != 0) {
		snprintf(err, errlen, "no statistics snapshot available yet; try again");
		return rc;
	}
	if (g != NULL)
		share_group_set_rate(g, p->rate);
	for (i = 0; i < n; i++) {
		bool late;
		int one = apply_shard(ctl, ctl->dirs[dir][i], p, pending ? scratch : err,
				      pending ? sizeof(scratch) : errlen, &late);

		if (one != 0 && late && !pending) {
			/* Taken late: it will apply, so the rest must follow. */
			pending = true;
			rc = one;
			if (n > 1)
				err_append(err, errlen, "late on worker", i, n);
		} else if (one != 0 && !pending) {
			rc = one;
			break;
		}
	}
	if (rc == 0 || pending)
		return rc;
	/* Shard i refused or never took it: the shards before it go back. */
	if (n > 1)
		err_append(err, errlen, "on worker", i, n);
	if (g != NULL)
		share_group_set_rate(g, old_rate);
	for (unsigned int j = 0; j < i; j++) {
		char undo_err[256];
		bool undo_pending;

		if (apply_shard(ctl, ctl->dirs[dir][j], &old, undo_err, sizeof(undo_err),
				&undo_pending) != 0 &&
		    !undo_pending) {
			size_t k = strlen(err);

			if (k < errlen)
				snprintf(err + k, errlen - k,
					 "; worker %u could not be put back (%s): the workers "
					 "now differ, apply the change again",
					 j + 1, undo_err);
		}
	}
	return rc;
}

static int
be_reset(void *opaque)
{
	struct dp_control *ctl = opaque;

	for (int dir = 0; dir < SHAPER_NUM_DIRS; dir++)
		for (unsigned int i = 0; i < ctl->n_shards; i++) {
			struct dp_msg *m = rte_zmalloc(NULL, sizeof(*m), 0);
			int rc;

			if (m == NULL)
				return -ENOMEM;
			m->type = DP_MSG_RESET;
			rc = dp_dir_call(ctl->dirs[dir][i], &m, call_timeout(ctl));
			dp_msg_free(m);
			if (rc != 0)
				return rc;
		}
	return 0;
}

/* The facts of every queued flow of one shard appended at facts[*n..cap). */
static int
shard_flows(struct dp_control *ctl, struct dp_dir *d, struct sched_flow_fact *facts,
	    unsigned int *n, unsigned int cap)
{
	struct dp_msg *m = rte_zmalloc(NULL, sizeof(*m), 0);
	int rc;

	if (m == NULL)
		return -ENOMEM;
	/* The worker fills a buffer the message owns, so a timeout cannot race the caller's. */
	m->facts = rte_calloc(NULL, cap - *n, sizeof(*m->facts), 0);
	if (m->facts == NULL) {
		dp_msg_free(m);
		return -ENOMEM;
	}
	m->type = DP_MSG_FLOWS;
	m->fact_cap = cap - *n;
	rc = dp_dir_call(d, &m, call_timeout(ctl));
	if (rc == 0)
		rc = m->rc;
	if (rc > 0) {
		memcpy(facts + *n, m->facts, (size_t)rc * sizeof(*facts));
		*n += (unsigned int)rc;
	}
	dp_msg_free(m);
	return rc < 0 ? rc : 0;
}

/*
 * The workers copy the facts of every queued flow, a slice of queues per
 * turn (DP_MSG_FLOWS); ordering, the top-N cut and formatting happen here.
 */
static int
be_flows(void *opaque, enum shaper_dir dir, struct ctl_flow *out, unsigned int max)
{
	struct dp_control *ctl = opaque;
	struct dp_snapshot *s = rte_malloc(NULL, sizeof(*s), 0);
	struct sched_flow_fact *facts;
	unsigned int n = 0;
	uint32_t slots = 0;
	int rc = -ENOMEM;

	if (s != NULL) {
		rc = dp_snapshot_read(ctl->dirs[dir][0], s);
		if (rc == 0)
			slots = sched_flow_slots(&s->params);
	}
	rte_free(s);
	if (rc != 0 || slots == 0)
		return rc; /* 0: the discipline has no flows to show (fifo) */
	facts = rte_calloc(NULL, (size_t)slots * ctl->n_shards, sizeof(*facts), 0);
	if (facts == NULL)
		return -ENOMEM;
	for (unsigned int i = 0; rc == 0 && i < ctl->n_shards; i++)
		rc = shard_flows(ctl, ctl->dirs[dir][i], facts, &n, slots * (i + 1));
	if (rc == 0)
		rc = (int)ctl_flows_top(facts, n, out, max);
	rte_free(facts);
	return rc;
}

/* Worker 0's per-subscriber scheduler and the set, or NULL. */
static const struct sub_sched *
be_subs(void *opaque, const struct sub_set **set)
{
	struct dp_control *ctl = opaque;
	const struct dp_dir *d = ctl->dirs[SHAPER_DOWN][0];

	if (d == NULL || d->subs == NULL)
		return NULL;
	*set = dp_subs_set(d);
	return d->subs;
}

static const struct sub_sched *
be_subs_shard(void *opaque, unsigned int shard)
{
	struct dp_control *ctl = opaque;
	const struct dp_dir *d = shard < ctl->n_shards ? ctl->dirs[SHAPER_DOWN][shard] : NULL;

	return d != NULL ? d->subs : NULL;
}

static int
be_subs_apply(void *opaque, struct sub_set *set, bool addresses, const uint32_t *reset,
	      uint32_t nreset, char *err, size_t errlen)
{
	struct dp_control *ctl = opaque;

	return dp_subs_change(ctl->dirs[SHAPER_DOWN], ctl->n_shards, set, addresses, reset, nreset,
			      call_timeout(ctl), err, errlen);
}

static int
be_emulate_get(void *opaque, enum shaper_dir dir, struct shaper_emulate_config *em)
{
	struct dp_control *ctl = opaque;
	const struct dp_dir *d = ctl->dirs[dir][0];

	if (d->emu == NULL)
		return -ENOENT;
	em->delay_ns = d->emu_path.delay_ns;
	em->jitter_ns = d->emu_path.jitter_ns;
	em->loss_ppm = d->emu_path.loss_ppm;
	em->seed = d->emu_path.seed; /* shard 0's is the configured one */
	em->limit = d->emu_path.limit;
	return 0;
}

/* Every shard's line takes the new path; a shard that does not is named in err. */
static int
be_emulate_set(void *opaque, enum shaper_dir dir, const struct shaper_emulate_config *em, char *err,
	       size_t errlen)
{
	struct dp_control *ctl = opaque;

	for (unsigned int i = 0; i < ctl->n_shards; i++) {
		struct dp_dir *d = ctl->dirs[dir][i];
		struct dp_msg *m = rte_zmalloc(NULL, sizeof(*m), 0);
		int rc;

		if (m == NULL) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		m->type = DP_MSG_EMULATE;
		m->emu = d->emu_path;
		m->emu.delay_ns = em->delay_ns;
		m->emu.jitter_ns = em->jitter_ns;
		m->emu.loss_ppm = em->loss_ppm;
		rc = dp_dir_call(d, &m, call_timeout(ctl));
		if (rc == 0)
			rc = m->rc;
		if (rc == 0) {
			d->emu_path = m->emu;
		} else {
			dp_call_error(rc, m, err, errlen);
			if (ctl->n_shards > 1)
				err_append(err, errlen, "on worker", i, ctl->n_shards);
		}
		dp_msg_free(m);
		if (rc != 0)
			return rc;
	}
	return 0;
}

void
dp_control_backend(struct dp_control *ctl, struct ctl_backend *be)
{
	be->opaque = ctl;
	be->dir_snapshot = be_dir_snapshot;
	be->port_counters = be_port_counters;
	be->heap_bytes = be_heap_bytes;
	be->fail_open = be_fail_open;
	be->apply = be_apply;
	be->reset_stats = be_reset;
	be->flows = be_flows;
	be->n_shards = ctl->n_shards;
	be->shard_snapshot = be_shard_snapshot;
	be->subs = be_subs;
	be->subs_shard = be_subs_shard;
	be->subs_apply = be_subs_apply;
	be->emulate_get = be_emulate_get;
	be->emulate_set = be_emulate_set;
}
