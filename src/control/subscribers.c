/*
 * subscribers.list and subscribers.get: each subscriber's counters per
 * direction, read from the worker's per-subscriber scheduler while it runs
 * (sub_sched_counters: relaxed atomic reads, no lock, no message to the
 * worker), named from the loaded set. subscribers.set and subscribers.del:
 * a new set built and checked here, swapped in by the worker between
 * bursts (dp_subs_change). Field names are tc-cake's where it
 * has one (bytes, packets, drops, ecn_mark, qlen, threshold_rate).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "shaper/config.h"
#include "shaper/control.h"
#include "shaper/log.h"
#include "shaper/subscriber.h"
#include "shaper/subscriber_config.h"
#include "shaper/subscriber_diff.h"
#include "shaper/subscriber_qoe.h"
#include "shaper/subscriber_rtt.h"
#include "shaper/subscriber_sched.h"
#include "shaper/units.h"

#define J_U64(v) json_integer((json_int_t)(v))

static const char *const drop_kind_name[SUB_DROP_KINDS] = {
	[SUB_DROP_AQM] = "aqm",
	[SUB_DROP_OVERFLOW] = "overflow",
	[SUB_DROP_ACK_FILTER] = "ack_filter",
	[SUB_DROP_BUDGET] = "budget",
};

enum sort_by {
	BY_BYTES,
	BY_DROPS,
	BY_RATE,
	BY_RTT,
	BY_BUSY_RTT
};

static const char *const rtt_side_name[SUB_RTT_SIDES] = {
	[SUB_RTT_WAN] = "wan",
	[SUB_RTT_LAN] = "lan",
};

static void *
fail(enum ctl_error *err, char *msg, size_t len, enum ctl_error e, const char *text)
{
	*err = e;
	snprintf(msg, len, "%s", text);
	return NULL;
}

static uint64_t
drops_of(const struct sub_counters *c)
{
	uint64_t n = 0;

	for (int k = 0; k < SUB_DROP_KINDS; k++)
		n += c->dropped[k];
	return n;
}

static json_t *
dir_json(const struct sub_counters *c)
{
	json_t *reasons = json_object();

	for (int k = 0; k < SUB_DROP_KINDS; k++)
		json_object_set_new(reasons, drop_kind_name[k], J_U64(c->dropped[k]));
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b}", "bytes",
			 J_U64(c->sent_bytes), "packets", J_U64(c->sent_packets), "drops",
			 J_U64(drops_of(c)), "drop_reasons", reasons, "ecn_mark", J_U64(c->marks),
			 "qlen", J_U64(c->qlen), "threshold_rate", J_U64(c->rate), "arrival_rate",
			 J_U64(c->arrival_bps), "arrived_bytes", J_U64(c->bytes), "arrived_packets",
			 J_U64(c->packets), "lag_skipped_us", J_U64(c->lag_skipped_ns / 1000),
			 "active", c->active);
}

/*
 * Subscriber sub's counters in dir. With several shards it lives on one,
 * and one whose node moved to another shard drains on the old one: the
 * sum over every shard is its whole story.
 */
static void
counters(const struct ctl_backend *be, const struct sub_sched *ss, uint32_t sub, enum sub_dir dir,
	 struct sub_counters *out)
{
	sub_sched_counters(ss, sub, dir, out);
	for (unsigned int i = 1; be->subs_shard != NULL && i < be->n_shards; i++) {
		const struct sub_sched *o = be->subs_shard(be->opaque, i);
		struct sub_counters c;

		if (o == NULL)
			continue;
		sub_sched_counters(o, sub, dir, &c);
		out->rate += c.rate;
		out->arrival_bps += c.arrival_bps;
		out->bytes += c.bytes;
		out->packets += c.packets;
		out->sent_bytes += c.sent_bytes;
		out->sent_packets += c.sent_packets;
		for (int k = 0; k < SUB_DROP_KINDS; k++)
			out->dropped[k] += c.dropped[k];
		out->marks += c.marks;
		out->qlen += c.qlen;
		out->lag_skipped_ns += c.lag_skipped_ns;
		out->active |= c.active;
	}
}

/*
 * Subscriber sub's recent RTT samples of one side, added to h. A
 * subscriber's samples are taken on the worker of its shard (one whose node
 * moved has some on the old one for a while): histograms add up. be NULL:
 * ss's alone (an unknown address's slot, which one shard holds).
 */
static void
rtt_hist(const struct ctl_backend *be, const struct sub_sched *ss, uint32_t sub,
	 enum sub_rtt_side side, uint32_t h[SUB_RTT_BUCKETS])
{
	sub_sched_rtt(ss, sub, side, h);
	for (unsigned int i = 1; be != NULL && be->subs_shard != NULL && i < be->n_shards; i++) {
		const struct sub_sched *o = be->subs_shard(be->opaque, i);

		if (o != NULL)
			sub_sched_rtt(o, sub, side, h);
	}
}

static void
rtt_of(const struct ctl_backend *be, const struct sub_sched *ss, uint32_t sub,
       enum sub_rtt_side side, struct sub_rtt_summary *out)
{
	uint32_t h[SUB_RTT_BUCKETS] = { 0 };

	rtt_hist(be, ss, sub, side, h);
	sub_rtt_summarize(h, out);
}

/*
 * Subscriber sub's recent busy minutes (shaper/subscriber_qoe.h), added to
 * acc over every shard as rtt_hist adds histograms; be NULL: ss's alone.
 */
static void
qoe_of(const struct ctl_backend *be, const struct sub_sched *ss, uint32_t sub,
       struct sub_qoe_acc *acc)
{
	sub_sched_qoe(ss, sub, acc);
	for (unsigned int i = 1; be != NULL && be->subs_shard != NULL && i < be->n_shards; i++) {
		const struct sub_sched *o = be->subs_shard(be->opaque, i);

		if (o != NULL)
			sub_sched_qoe(o, sub, acc);
	}
}

/* {"samples", "p80_us", "p95_us"} of one side over busy minutes. */
static json_t *
busy_side_json(const struct sub_qoe_acc *acc, enum sub_rtt_side side)
{
	struct sub_qoe_summary q;

	sub_qoe_summarize(acc, side, &q);
	return json_pack("{s:o, s:o, s:o}", "samples", J_U64(q.samples), "p80_us",
			 J_U64(q.p80_ns / 1000), "p95_us", J_U64(q.p95_ns / 1000));
}

/* {"minutes", "lan": {...}, "wan": {...}}; minutes: the busy ones (a node: none). */
static json_t *
busy_json(const struct sub_qoe_acc *acc, bool minutes)
{
	json_t *o = json_object();

	if (minutes)
		json_object_set_new(o, "minutes", J_U64(acc->busy_minutes));
	for (int k = SUB_RTT_SIDES; k-- > 0;)
		json_object_set_new(o, rtt_side_name[k], busy_side_json(acc, (enum sub_rtt_side)k));
	return o;
}

static uint64_t
busy_p95_lan(const struct sub_qoe_acc *acc)
{
	struct sub_qoe_summary q;

	sub_qoe_summarize(acc, SUB_RTT_LAN, &q);
	return q.p95_ns;
}

static json_t *
rtt_side_json(const struct sub_rtt_summary *r)
{
	return json_pack("{s:o, s:o, s:o}", "samples", J_U64(r->samples), "median_us",
			 J_U64(r->median_ns / 1000), "p95_us", J_U64(r->p95_ns / 1000));
}

/* {"lan": {...}, "wan": {...}}: the two parts of the path, apart (shaper/subscriber_rtt.h). */
static json_t *
rtt_json(const struct ctl_backend *be, const struct sub_sched *ss, uint32_t sub)
{
	json_t *o = json_object();

	for (int k = SUB_RTT_SIDES; k-- > 0;) {
		struct sub_rtt_summary r;

		rtt_of(be, ss, sub, (enum sub_rtt_side)k, &r);
		json_object_set_new(o, rtt_side_name[k], rtt_side_json(&r));
	}
	return o;
}

/* Slot sub holds no CAKE on any shard. */
static bool
slot_idle(const struct ctl_backend *be, const struct sub_sched *ss, uint32_t sub)
{
	if (!sub_sched_slot_idle(ss, sub))
		return false;
	for (unsigned int i = 1; be->subs_shard != NULL && i < be->n_shards; i++) {
		const struct sub_sched *o = be->subs_shard(be->opaque, i);

		if (o != NULL && !sub_sched_slot_idle(o, sub))
			return false;
	}
	return true;
}

/* One subscriber (sub < nsubs) or the link's own entry (sub == nsubs) as an object. */
static json_t *
sub_json(const struct ctl_backend *be, const struct sub_sched *ss, const struct sub_set *set,
	 uint32_t sub, bool detail)
{
	struct sub_counters c[SUB_DIRS];
	struct sub_qoe_acc q = { 0 };
	json_t *o;

	counters(be, ss, sub, SUB_DOWN, &c[SUB_DOWN]);
	counters(be, ss, sub, SUB_UP, &c[SUB_UP]);
	qoe_of(be, ss, sub, &q);
	o = json_pack("{s:o, s:o, s:o, s:o}", "download", dir_json(&c[SUB_DOWN]), "upload",
		      dir_json(&c[SUB_UP]), "rtt", rtt_json(be, ss, sub), "busy_rtt",
		      busy_json(&q, true));
	if (sub >= set->nsubs)
		return o;
	{
		const struct sub_subscriber *s = &set->subs[sub];
		char path[512];

		sub_node_path(set, s->node, path, sizeof(path));
		json_object_set_new(o, "id", json_string(s->id));
		json_object_set_new(o, "name", json_string(s->name));
		json_object_set_new(o, "node", json_string(path));
		if (detail) {
			json_t *addrs = json_array();

			for (uint32_t i = 0; i < set->nprefixes; i++)
				if (set->prefixes[i].sub == sub) {
					char buf[80];

					sub_prefix_format(&set->prefixes[i], buf, sizeof(buf));
					json_array_append_new(addrs, json_string(buf));
				}
			json_object_set_new(o, "addresses", addrs);
			for (int d = 0; d < SUB_DIRS; d++)
				json_object_set_new(json_object_get(o, d == SUB_DOWN ? "download"
										     : "upload"),
						    "plan",
						    json_pack("{s:o, s:o}", "max",
							      J_U64(s->plan[d].max), "min",
							      J_U64(s->plan[d].min)));
		}
	}
	return o;
}

static const struct sub_sched *
subs_of(const struct ctl_backend *be, const struct sub_set **set, enum ctl_error *err, char *msg,
	size_t len)
{
	const struct sub_sched *ss = be->subs != NULL ? be->subs(be->opaque, set) : NULL;

	if (ss == NULL)
		fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
		     "subscribers are not shaped: the config has no subscribers section");
	return ss;
}

struct ranked {
	uint32_t sub;   /* a slot of the set, or an unknown address's slot k */
	uint32_t shard; /* an unknown address's: its shard */
	bool unknown;
	uint64_t key;
};

static int
by_key_desc(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? 1 : -1;
	if (x->unknown != y->unknown)
		return x->unknown ? 1 : -1;
	if (x->shard != y->shard)
		return x->shard < y->shard ? -1 : 1;
	return x->sub < y->sub ? -1 : x->sub > y->sub;
}

/*
 * What a row is ranked by: bytes sent, drops, arrival rate both ways, the
 * access side's median RTT (lan, read only for BY_RTT): the part of the
 * path the ISP runs, or its 95th percentile over busy minutes (busy_p95,
 * read only for BY_BUSY_RTT).
 */
static uint64_t
rank_key(enum sort_by sort, const struct sub_counters c[SUB_DIRS],
	 const struct sub_rtt_summary *lan, uint64_t busy_p95)
{
	switch (sort) {
	case BY_RTT:
		return lan->median_ns;
	case BY_BUSY_RTT:
		return busy_p95;
	case BY_BYTES:
		return c[0].sent_bytes + c[1].sent_bytes;
	case BY_DROPS:
		return drops_of(&c[0]) + drops_of(&c[1]);
	case BY_RATE:
	default:
		return c[0].arrival_bps + c[1].arrival_bps;
	}
}

/* Shard i's scheduler (0: ss itself), or NULL. */
static const struct sub_sched *
shard_of(const struct ctl_backend *be, const struct sub_sched *ss, unsigned int i)
{
	if (i == 0)
		return ss;
	return be->subs_shard != NULL && i < be->n_shards ? be->subs_shard(be->opaque, i) : NULL;
}

static unsigned int
shards(const struct ctl_backend *be)
{
	return be->subs_shard != NULL && be->n_shards > 1 ? be->n_shards : 1;
}

/*
 * The row of an unknown address with a plan of its own (unknown slot k of
 * shard's scheduler o, which alone shapes it), or NULL if the slot has
 * let it go meanwhile. Its index follows the scheduler's count now: a
 * change that adds slots moves the unknown ones up.
 */
static json_t *
unknown_json(const struct sub_sched *o, uint32_t k)
{
	uint32_t sub = sub_sched_nsubs(o) + 1 + k;
	struct sub_counters c[SUB_DIRS];
	struct sub_qoe_acc q = { 0 };
	struct sub_prefix key;
	char buf[80];

	if (!sub_sched_unknown_key(o, k, &key))
		return NULL;
	sub_prefix_format(&key, buf, sizeof(buf));
	sub_sched_counters(o, sub, SUB_DOWN, &c[SUB_DOWN]);
	sub_sched_counters(o, sub, SUB_UP, &c[SUB_UP]);
	qoe_of(NULL, o, sub, &q);
	return json_pack("{s:s, s:s, s:b, s:o, s:o, s:o, s:o}", "id", buf, "node", "link",
			 "unknown", 1, "download", dir_json(&c[SUB_DOWN]), "upload",
			 dir_json(&c[SUB_UP]), "rtt", rtt_json(NULL, o, sub), "busy_rtt",
			 busy_json(&q, true));
}

void *
ctl_subscribers_list(const struct ctl_backend *be, const void *argsv, enum ctl_error *err,
		     char *msg, size_t len)
{
	static const char *const known[] = { "top", "by", "offset", "limit", NULL };
	const json_t *args = argsv, *top = args != NULL ? json_object_get(args, "top") : NULL;
	const json_t *by = args != NULL ? json_object_get(args, "by") : NULL;
	const json_t *offset = args != NULL ? json_object_get(args, "offset") : NULL;
	const json_t *limit = args != NULL ? json_object_get(args, "limit") : NULL;
	const struct sub_set *set = NULL;
	const struct sub_sched *ss;
	enum sort_by sort = BY_BYTES;
	struct ranked *r;
	uint32_t n, nunk, want, from, used = 0, unknown_used = 0;
	struct sub_rtt_summary lan = { 0 };
	uint64_t busy = 0;
	json_t *arr, *o;

	if (ctl_check_args(args, known, err, msg, len) != 0)
		return NULL;
	if (top != NULL && (!json_is_integer(top) || json_integer_value(top) < 1 ||
			    json_integer_value(top) > SUB_MAX_SUBS))
		return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
			    "args.top: expected an integer 1..1048576");
	if (limit != NULL && (!json_is_integer(limit) || json_integer_value(limit) < 1 ||
			      json_integer_value(limit) > SUB_MAX_SUBS))
		return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
			    "args.limit: expected an integer 1..1048576");
	if (offset != NULL && (!json_is_integer(offset) || json_integer_value(offset) < 0 ||
			       json_integer_value(offset) > SUB_MAX_SUBS))
		return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
			    "args.offset: expected an integer 0..1048576");
	if (by != NULL) {
		const char *s = json_string_value(by);

		if (s != NULL && strcmp(s, "bytes") == 0)
			sort = BY_BYTES;
		else if (s != NULL && strcmp(s, "drops") == 0)
			sort = BY_DROPS;
		else if (s != NULL && strcmp(s, "rate") == 0)
			sort = BY_RATE;
		else if (s != NULL && strcmp(s, "rtt") == 0)
			sort = BY_RTT;
		else if (s != NULL && strcmp(s, "busy_rtt") == 0)
			sort = BY_BUSY_RTT;
		else
			return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
				    "args.by: expected \"bytes\", \"drops\", \"rate\", \"rtt\" or "
				    "\"busy_rtt\"");
	}
	ss = subs_of(be, &set, err, msg, len);
	if (ss == NULL)
		return NULL;
	/*
	 * The set is indexed by its own count, the link's entry found at the
	 * scheduler's: a change applied while this runs may have grown the
	 * scheduler's slots before the set read here (shaper/subscriber_sched.h).
	 */
	n = set->nsubs;
	nunk = sub_sched_unknown_slots(ss) * shards(be);
	want = top != NULL && json_integer_value(top) < n + nunk ? (uint32_t)json_integer_value(top)
								 : n + nunk;
	r = calloc(n + nunk != 0 ? n + nunk : 1, sizeof(*r));
	if (r == NULL)
		return fail(err, msg, len, CTL_ERR_INTERNAL, "out of memory");
	o = json_object();
	/* Taken before the counters: rate = bytes difference / time difference of two calls. */
	json_object_set_new(o, "time_ns", J_U64(shaper_monotonic_ns()));
	for (uint32_t i = 0; i < n; i++) {
		struct sub_counters c[SUB_DIRS];

		if (!sub_slot_used(&set->subs[i])) {
			/* A spare slot, or a deleted subscriber draining: not listed. */
			continue;
		}
		counters(be, ss, i, SUB_DOWN, &c[SUB_DOWN]);
		counters(be, ss, i, SUB_UP, &c[SUB_UP]);
		r[used].sub = i;
		if (sort == BY_RTT)
			rtt_of(be, ss, i, SUB_RTT_LAN, &lan);
		if (sort == BY_BUSY_RTT) {
			struct sub_qoe_acc q = { 0 };

			qoe_of(be, ss, i, &q);
			busy = busy_p95_lan(&q);
		}
		r[used++].key = rank_key(sort, c, &lan, busy);
	}
	/* Unknown addresses with a plan each: rows of their own, named by address. */
	for (unsigned int sh = 0; nunk != 0 && sh < shards(be); sh++) {
		const struct sub_sched *os = shard_of(be, ss, sh);

		for (uint32_t k = 0; os != NULL && k < sub_sched_unknown_slots(os); k++) {
			struct sub_counters c[SUB_DIRS];
			struct sub_prefix key;
			uint32_t sub = sub_sched_nsubs(os) + 1 + k;

			if (!sub_sched_unknown_key(os, k, &key))
				continue;
			sub_sched_counters(os, sub, SUB_DOWN, &c[SUB_DOWN]);
			sub_sched_counters(os, sub, SUB_UP, &c[SUB_UP]);
			r[used].sub = k;
			r[used].shard = sh;
			r[used].unknown = true;
			if (sort == BY_RTT)
				rtt_of(NULL, os, sub, SUB_RTT_LAN, &lan);
			if (sort == BY_BUSY_RTT) {
				struct sub_qoe_acc q = { 0 };

				qoe_of(NULL, os, sub, &q);
				busy = busy_p95_lan(&q);
			}
			r[used++].key = rank_key(sort, c, &lan, busy);
			unknown_used++;
		}
	}
	if (want > used)
		want = used;
	/* The whole list in the set's order; a top-N cut largest first. */
	if (want < used || by != NULL)
		qsort(r, used, sizeof(*r), by_key_desc);
	/* A page of that order: a long list does not fit in one reply (CTL_MAX_OUTQ). */
	from = offset != NULL ? (uint32_t)json_integer_value(offset) : 0;
	from = from < want ? from : want;
	if (limit != NULL && json_integer_value(limit) < want - from)
		want = from + (uint32_t)json_integer_value(limit);
	arr = json_array();
	for (uint32_t i = from; i < want; i++) {
		json_t *row = !r[i].unknown ? sub_json(be, ss, set, r[i].sub, false)
					    : unknown_json(shard_of(be, ss, r[i].shard), r[i].sub);

		if (row != NULL)
			json_array_append_new(arr, row);
	}
	free(r);
	json_object_set_new(o, "count", J_U64(used));
	json_object_set_new(o, "unknown_count", J_U64(unknown_used));
	json_object_set_new(o, "subscribers", arr);
	/* Addresses no subscriber owns (and subscribers waiting for a CAKE): the link's own. */
	json_object_set_new(o, "link", sub_json(be, ss, set, sub_sched_nsubs(ss), false));
	return o;
}

/*
 * A direction's figures for /metrics: bytes sent, packets dropped (in all
 * and by reason), ECN marks, rate allocated (bytes/s).
 */
struct metric_sums {
	uint64_t bytes, drops, marks, rate;
	uint64_t dropped[SUB_DROP_KINDS];
};

/* A slot's counters c added to m. */
static void
sums_add(struct metric_sums *m, const struct sub_counters *c)
{
	m->bytes += c->sent_bytes;
	m->drops += drops_of(c);
	m->marks += c->marks;
	m->rate += c->rate;
	for (int k = 0; k < SUB_DROP_KINDS; k++)
		m->dropped[k] += c->dropped[k];
}

static json_t *
sums_json(const struct metric_sums *m)
{
	json_t *reasons = json_object();

	for (int k = 0; k < SUB_DROP_KINDS; k++)
		json_object_set_new(reasons, drop_kind_name[k], J_U64(m->dropped[k]));
	return json_pack("{s:o, s:o, s:o, s:o, s:o}", "bytes", J_U64(m->bytes), "drops",
			 J_U64(m->drops), "drop_reasons", reasons, "ecn_mark", J_U64(m->marks),
			 "rate", J_U64(m->rate));
}

/*
 * A subscriber ranks among the worst by its busy minutes' LAN p95 only with
 * this many samples behind it: a handful of samples has no 95th percentile.
 */
#define CTL_BUSY_RANK_SAMPLES 20u

/* args[key] (0..SHAPER_METRICS_SUBS_TOP_MAX), else dflt; -1 with the error. */
static int
arg_count(const json_t *args, const char *key, uint32_t dflt, uint32_t *out, enum ctl_error *err,
	  char *msg, size_t len)
{
	const json_t *v = args != NULL ? json_object_get(args, key) : NULL;

	*out = dflt;
	if (v == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > SHAPER_METRICS_SUBS_TOP_MAX) {
		*err = CTL_ERR_INVALID_ARGUMENT;
		snprintf(msg, len, "args.%s: expected an integer 0..%d", key,
			 SHAPER_METRICS_SUBS_TOP_MAX);
		return -1;
	}
	*out = (uint32_t)json_integer_value(v);
	return 0;
}

/* acc's samples added to every node from at up to the link. */
static void
busy_up(const struct sub_set *set, struct sub_qoe_acc *node_busy, uint32_t at,
	const struct sub_qoe_acc *acc)
{
	uint32_t any = 0;

	for (int s = 0; s < SUB_RTT_SIDES; s++)
		for (int b = 0; b < SUB_RTT_BUCKETS; b++)
			any |= acc->h[s][b];
	for (uint32_t k = at; any != 0 && k != SUB_NONE; k = set->nodes[k].parent)
		for (int s = 0; s < SUB_RTT_SIDES; s++)
			for (int b = 0; b < SUB_RTT_BUCKETS; b++)
				node_busy[k].h[s][b] += acc->h[s][b];
}

/* h's samples added to side's RTT of every node from at up to the link. */
static void
rtt_up(const struct sub_set *set, uint32_t (*node_rtt)[SUB_RTT_SIDES][SUB_RTT_BUCKETS], uint32_t at,
       int side, const uint32_t h[SUB_RTT_BUCKETS])
{
	uint32_t any = 0;

	for (int b = 0; b < SUB_RTT_BUCKETS; b++)
		any |= h[b];
	for (uint32_t k = at; any != 0 && k != SUB_NONE; k = set->nodes[k].parent)
		for (int b = 0; b < SUB_RTT_BUCKETS; b++)
			node_rtt[k][side][b] += h[b];
}

/* What subscribers.metrics adds up over the set before it writes a line. */
struct metrics_acc {
	const struct ctl_backend *be;
	const struct sub_set *set;
	const struct sub_sched *ss;
	struct metric_sums (*node)[SUB_DIRS];
	uint32_t (*node_rtt)[SUB_RTT_SIDES][SUB_RTT_BUCKETS];
	struct sub_qoe_acc *node_busy;
	struct ranked *rb, *rw; /* by bytes of the last minute, by busy LAN p95 */
	bool *listed;
	uint32_t used, nworst; /* entries in rb, rw */
};

static void
metrics_acc_free(struct metrics_acc *a)
{
	free(a->node);
	free(a->node_rtt);
	free(a->node_busy);
	free(a->rb);
	free(a->rw);
	free(a->listed);
}

/* -1 when out of memory (what was allocated is a's to free). */
static int
metrics_acc_alloc(struct metrics_acc *a)
{
	uint32_t n = a->set->nsubs != 0 ? a->set->nsubs : 1;

	a->node = calloc(a->set->nnodes, sizeof(*a->node));
	a->node_rtt = calloc(a->set->nnodes, sizeof(*a->node_rtt));
	a->node_busy = calloc(a->set->nnodes, sizeof(*a->node_busy));
	a->rb = calloc(n, sizeof(*a->rb));
	a->rw = calloc(n, sizeof(*a->rw));
	a->listed = calloc(n, sizeof(*a->listed));
	if (a->node == NULL || a->node_rtt == NULL || a->node_busy == NULL || a->rb == NULL ||
	    a->rw == NULL || a->listed == NULL)
		return -1;
	return 0;
}

/*
 * Slot i of the set (i == nsubs: the link's own entry) added up its node's
 * path to the link, and a subscriber ranked by bytes and by busy LAN p95.
 */
static void
metrics_add_slot(struct metrics_acc *a, uint32_t i)
{
	const struct sub_set *set = a->set;
	struct sub_qoe_acc q = { 0 };
	struct sub_qoe_summary lan;
	uint32_t at = SUB_ROOT, slot = i;

	if (i < set->nsubs) {
		if (!sub_slot_used(&set->subs[i]))
			return;
		at = set->subs[i].node;
	} else {
		slot = sub_sched_nsubs(a->ss); /* the link's entry */
	}
	for (int d = 0; d < SUB_DIRS; d++) {
		struct sub_counters c;

		counters(a->be, a->ss, slot, (enum sub_dir)d, &c);
		for (uint32_t k = at; k != SUB_NONE; k = set->nodes[k].parent)
			sums_add(&a->node[k][d], &c);
	}
	/* A node's RTT is its subscribers' samples together (the link's: everyone's). */
	for (int k = 0; k < SUB_RTT_SIDES; k++) {
		uint32_t h[SUB_RTT_BUCKETS] = { 0 };

		rtt_hist(a->be, a->ss, slot, (enum sub_rtt_side)k, h);
		rtt_up(set, a->node_rtt, at, k, h);
	}
	qoe_of(a->be, a->ss, slot, &q);
	busy_up(set, a->node_busy, at, &q);
	if (i == set->nsubs)
		return;
	a->rb[a->used].sub = i;
	a->rb[a->used++].key = q.last_bytes;
	sub_qoe_summarize(&q, SUB_RTT_LAN, &lan);
	if (lan.samples >= CTL_BUSY_RANK_SAMPLES) {
		a->rw[a->nworst].sub = i;
		a->rw[a->nworst++].key = lan.p95_ns;
	}
}

/*
 * Unknown addresses with a plan each are the link's too (each on one
 * shard). Not ranked among the top N: they are named by address, and
 * this request is open to the user level.
 */
static void
metrics_add_unknown(struct metrics_acc *a)
{
	for (unsigned int sh = 0; sh < shards(a->be); sh++) {
		const struct sub_sched *os = shard_of(a->be, a->ss, sh);

		for (uint32_t k = 0; os != NULL && k < sub_sched_unknown_slots(os); k++) {
			struct sub_qoe_acc q = { 0 };
			struct sub_prefix key;
			uint32_t sub = sub_sched_nsubs(os) + 1 + k;

			if (!sub_sched_unknown_key(os, k, &key))
				continue;
			for (int d = 0; d < SUB_DIRS; d++) {
				struct sub_counters c;

				sub_sched_counters(os, sub, (enum sub_dir)d, &c);
				sums_add(&a->node[SUB_ROOT][d], &c);
			}
			for (int side = 0; side < SUB_RTT_SIDES; side++)
				sub_sched_rtt(os, sub, (enum sub_rtt_side)side,
					      a->node_rtt[SUB_ROOT][side]);
			sub_sched_qoe(os, sub, &q);
			busy_up(a->set, a->node_busy, SUB_ROOT, &q);
		}
	}
}

/* Every node's sums, RTT and busy RTT into nodes. */
static void
metrics_nodes_json(const struct metrics_acc *a, json_t *nodes)
{
	char path[512];

	for (uint32_t k = 0; k < a->set->nnodes; k++) {
		json_t *rtt = json_object();

		for (int side = SUB_RTT_SIDES; side-- > 0;) {
			struct sub_rtt_summary sum;

			sub_rtt_summarize(a->node_rtt[k][side], &sum);
			json_object_set_new(rtt, rtt_side_name[side], rtt_side_json(&sum));
		}
		sub_node_path(a->set, k, path, sizeof(path));
		json_array_append_new(nodes, json_pack("{s:s, s:o, s:o, s:o, s:o}", "node", path,
						       "download", sums_json(&a->node[k][SUB_DOWN]),
						       "upload", sums_json(&a->node[k][SUB_UP]),
						       "rtt", rtt, "busy_rtt",
						       busy_json(&a->node_busy[k], false)));
	}
}

/* Subscriber sub's own series into subs. */
static void
metrics_sub_json(const struct metrics_acc *a, uint32_t sub, json_t *subs)
{
	const struct sub_subscriber *s = &a->set->subs[sub];
	struct metric_sums m[SUB_DIRS] = { { 0 } };
	struct sub_qoe_acc q = { 0 };
	char path[512];

	for (int d = 0; d < SUB_DIRS; d++) {
		struct sub_counters c;

		counters(a->be, a->ss, sub, (enum sub_dir)d, &c);
		sums_add(&m[d], &c);
	}
	qoe_of(a->be, a->ss, sub, &q);
	sub_node_path(a->set, s->node, path, sizeof(path));
	json_array_append_new(subs,
			      json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "id", s->id, "node",
					path, "minute_bytes", J_U64(q.last_bytes), "download",
					sums_json(&m[SUB_DOWN]), "upload", sums_json(&m[SUB_UP]),
					"rtt", rtt_json(a->be, a->ss, sub), "busy_rtt",
					busy_json(&q, true)));
}

/*
 * Which subscribers get series of their own is decided from the data
 * plane's figures alone, the same for every caller at the same moment: the
 * top N by bytes in the last whole minute of the worker's clock, and the
 * worst N by their busy minutes' LAN p95. No state is kept between calls,
 * so a second Prometheus (an HA pair), a curl or `shapectl metrics` changes
 * nothing for the others; the values are counters and gauges, which
 * Prometheus rate()s itself.
 */
void *
ctl_subscribers_metrics(const struct ctl_backend *be, const void *argsv, enum ctl_error *err,
			char *msg, size_t len)
{
	static const char *const known[] = { "top", "worst", NULL };
	const json_t *args = argsv;
	const struct shaper_config *started =
			be->config_file != NULL ? be->config_file->started : NULL;
	struct metrics_acc a = { .be = be };
	uint32_t want = 0, worst = 0;
	json_t *o, *nodes, *subs;

	if (ctl_check_args(args, known, err, msg, len) != 0)
		return NULL;
	if (arg_count(args, "top", started != NULL ? started->metrics_subscribers_top : 0, &want,
		      err, msg, len) != 0 ||
	    arg_count(args, "worst", started != NULL ? started->metrics_subscribers_worst : 0,
		      &worst, err, msg, len) != 0)
		return NULL;
	nodes = json_array();
	subs = json_array();
	o = json_pack("{s:o, s:o}", "nodes", nodes, "subscribers", subs);
	a.ss = be->subs != NULL ? be->subs(be->opaque, &a.set) : NULL;
	if (a.ss == NULL) {
		json_object_set_new(o, "top", J_U64(0));
		json_object_set_new(o, "worst", J_U64(0));
		return o;
	}
	if (metrics_acc_alloc(&a) != 0) {
		json_decref(o);
		o = fail(err, msg, len, CTL_ERR_INTERNAL, "out of memory");
		goto out;
	}
	/* Every slot (the set by its own count, as in subscribers.list), then the link's entry. */
	for (uint32_t i = 0; i <= a.set->nsubs; i++)
		metrics_add_slot(&a, i);
	metrics_add_unknown(&a);
	metrics_nodes_json(&a, nodes);
	if (want > a.used)
		want = a.used;
	if (worst > a.nworst)
		worst = a.nworst;
	qsort(a.rb, a.used, sizeof(*a.rb), by_key_desc);
	qsort(a.rw, a.nworst, sizeof(*a.rw), by_key_desc);
	/* The busiest first, then the worst not among them: each subscriber's series once. */
	for (uint32_t j = 0; j < want + worst; j++) {
		uint32_t sub = j < want ? a.rb[j].sub : a.rw[j - want].sub;

		if (a.listed[sub])
			continue;
		a.listed[sub] = true;
		metrics_sub_json(&a, sub, subs);
	}
	json_object_set_new(o, "top", J_U64(want));
	json_object_set_new(o, "worst", J_U64(worst));
out:
	metrics_acc_free(&a);
	return o;
}

void *
ctl_subscribers_get(const struct ctl_backend *be, const void *argsv, enum ctl_error *err, char *msg,
		    size_t len)
{
	static const char *const known[] = { "id", "address", "vlan", NULL };
	const json_t *args = argsv;
	const json_t *id = args != NULL ? json_object_get(args, "id") : NULL;
	const json_t *addr = args != NULL ? json_object_get(args, "address") : NULL;
	const json_t *vlan = args != NULL ? json_object_get(args, "vlan") : NULL;
	const struct sub_set *set = NULL;
	const struct sub_sched *ss;
	uint32_t sub;
	json_t *o;

	if (ctl_check_args(args, known, err, msg, len) != 0)
		return NULL;
	if ((id == NULL) == (addr == NULL))
		return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
			    "args: give \"id\" (a circuit id) or \"address\" (an IPv4 or IPv6 "
			    "address), one of them");
	if (id != NULL && !json_is_string(id))
		return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT, "args.id: expected a string");
	if (addr != NULL && !json_is_string(addr))
		return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
			    "args.address: expected a string");
	if (vlan != NULL && (addr == NULL || !json_is_integer(vlan) ||
			     json_integer_value(vlan) < 0 || json_integer_value(vlan) > 4094))
		return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
			    "args.vlan: expected an integer 0..4094, with \"address\"");
	ss = subs_of(be, &set, err, msg, len);
	if (ss == NULL)
		return NULL;
	if (id != NULL) {
		sub = sub_find(set, json_string_value(id));
		if (sub == SUB_NONE) {
			*err = CTL_ERR_INVALID_ARGUMENT;
			snprintf(msg, len, "args.id: no subscriber \"%.64s\"",
				 json_string_value(id));
			return NULL;
		}
	} else {
		struct sub_prefix p;
		char perr[128];

		if (sub_prefix_parse(json_string_value(addr), &p, perr, sizeof(perr)) != 0 ||
		    p.len != (p.family == 4 ? 32 : 128)) {
			*err = CTL_ERR_INVALID_ARGUMENT;
			snprintf(msg, len,
				 "args.address: expected one IPv4 or IPv6 address, not \"%.64s\"",
				 json_string_value(addr));
			return NULL;
		}
		p.vlan = vlan != NULL ? (uint16_t)json_integer_value(vlan) : 0;
		sub = sub_sched_find(ss, &p);
		if (sub == SUB_NONE || sub >= set->nsubs || !sub_slot_used(&set->subs[sub])) {
			*err = CTL_ERR_INVALID_ARGUMENT;
			snprintf(msg, len, "args.address: %.64s belongs to no subscriber",
				 json_string_value(addr));
			return NULL;
		}
	}
	o = sub_json(be, ss, set, sub, true);
	json_object_set_new(o, "time_ns", J_U64(shaper_monotonic_ns()));
	return o;
}

/* ------------------------------------------------------ set, del, reload */

/* A tc-style rate -> bit/s above 0, or an error naming path. */
static int
arg_rate(const json_t *v, const char *path, uint64_t *bps, char *msg, size_t len)
{
	char why[200];
	uint64_t bytes;

	if (!json_is_string(v)) {
		snprintf(msg, len, "%s: expected a rate such as \"100mbit\"", path);
		return -1;
	}
	if (shaper_parse_rate(json_string_value(v), &bytes, why, sizeof(why)) != 0) {
		snprintf(msg, len, "%s: %s", path, why);
		return -1;
	}
	if (bytes == 0) {
		snprintf(msg, len, "%s: must be above 0", path);
		return -1;
	}
	*bps = bytes * 8;
	return 0;
}

/* A plan as the JSON form writes it: "100mbit" (max only) or {"max", "min"}. */
static int
arg_plan(const json_t *v, const char *path, struct sub_plan *plan, char *msg, size_t len)
{
	const json_t *x;
	char sub[64];
	const char *key;
	json_t *val;

	memset(plan, 0, sizeof(*plan));
	if (json_is_string(v))
		return arg_rate(v, path, &plan->max, msg, len);
	if (!json_is_object(v)) {
		snprintf(msg, len, "%s: expected a rate or an object {\"max\", \"min\"}", path);
		return -1;
	}
	json_object_foreach ((json_t *)v, key, val)
		if (strcmp(key, "max") != 0 && strcmp(key, "min") != 0) {
			snprintf(msg, len, "%s.%s: unknown key (known: max, min)", path, key);
			return -1;
		}
	snprintf(sub, sizeof(sub), "%s.max", path);
	x = json_object_get(v, "max");
	if (x == NULL) {
		snprintf(msg, len, "%s: missing", sub);
		return -1;
	}
	if (arg_rate(x, sub, &plan->max, msg, len) != 0)
		return -1;
	snprintf(sub, sizeof(sub), "%s.min", path);
	x = json_object_get(v, "min");
	if (x != NULL && arg_rate(x, sub, &plan->min, msg, len) != 0)
		return -1;
	if (plan->min > plan->max) {
		snprintf(msg, len, "%s: min %.1f Mbit/s is above its max %.1f Mbit/s", sub,
			 plan->min / 1e6, plan->max / 1e6);
		return -1;
	}
	return 0;
}

/* Drop every prefix of subscriber sub from set (the rest keep their order). */
static void
drop_prefixes(struct sub_set *set, uint32_t sub)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < set->nprefixes; i++)
		if (set->prefixes[i].sub != sub)
			set->prefixes[k++] = set->prefixes[i];
	set->nprefixes = k;
	set->subs[sub].nprefixes = 0;
}

/* args.addresses (strings, or {"prefix", "vlan"} as in the JSON form) onto sub. */
static int
arg_addresses(struct sub_set *set, uint32_t sub, const json_t *arr, char *msg, size_t len)
{
	const json_t *v;
	size_t i;

	if (!json_is_array(arr) || json_array_size(arr) == 0) {
		snprintf(msg, len, "args.addresses: expected a non-empty array of addresses");
		return -1;
	}
	drop_prefixes(set, sub);
	json_array_foreach (arr, i, v) {
		const json_t *pfx = v, *vlan = NULL;
		struct sub_prefix p;
		char why[160];
		uint32_t idx;

		if (json_is_object(v)) {
			pfx = json_object_get(v, "prefix");
			vlan = json_object_get(v, "vlan");
		}
		if (!json_is_string(pfx)) {
			snprintf(msg, len,
				 "args.addresses[%zu]: expected an address or prefix, or "
				 "{\"prefix\", \"vlan\"}",
				 i);
			return -1;
		}
		if (sub_prefix_parse(json_string_value(pfx), &p, why, sizeof(why)) != 0) {
			snprintf(msg, len, "args.addresses[%zu]: %s", i, why);
			return -1;
		}
		if (vlan != NULL && (!json_is_integer(vlan) || json_integer_value(vlan) < 1 ||
				     json_integer_value(vlan) > 4094)) {
			snprintf(msg, len, "args.addresses[%zu].vlan: expected an integer 1..4094",
				 i);
			return -1;
		}
		p.vlan = vlan != NULL ? (uint16_t)json_integer_value(vlan) : 0;
		p.sub = sub;
		if (sub_set_add_prefix(set, &idx) != 0) {
			snprintf(msg, len, "args.addresses: too many prefixes or out of memory");
			return -1;
		}
		set->prefixes[idx] = p;
		set->subs[sub].nprefixes++;
	}
	return 0;
}

/* A slot for a new subscriber: unused, and its CAKEs (if it was deleted) back in the pool. */
static uint32_t
free_slot(const struct ctl_backend *be, const struct sub_sched *ss, const struct sub_set *set,
	  const uint32_t *taken, uint32_t ntaken)
{
	for (uint32_t i = 0; i < set->nsubs; i++) {
		bool used = sub_slot_used(&set->subs[i]);

		for (uint32_t k = 0; !used && k < ntaken; k++)
			used = taken[k] == i;
		if (!used && slot_idle(be, ss, i))
			return i;
	}
	return SUB_NONE;
}

/* A subscriber deleted while it may hold packets: no address, drains at its plan. */
static void
retire(struct sub_set *set, uint32_t sub)
{
	struct sub_subscriber *s = &set->subs[sub];

	drop_prefixes(set, sub);
	s->id[0] = s->name[0] = '\0';
	/* Its min no longer counts towards its node's: it only drains. */
	s->plan[SUB_DOWN].min = s->plan[SUB_UP].min = 0;
}

/* Validate the new set; its message for args. */
static int
check_set(struct sub_set *set, const char *field, enum ctl_error *err, char *msg, size_t len)
{
	char why[400];

	if (sub_set_validate(set, why, sizeof(why)) == 0)
		return 0;
	*err = CTL_ERR_INVALID_ARGUMENT;
	snprintf(msg, len, "%s: %s", field, why);
	return -1;
}

static int
apply(const struct ctl_backend *be, struct sub_set *set, bool addresses, const uint32_t *reset,
      uint32_t nreset, enum ctl_error *err, char *msg, size_t len)
{
	char why[256] = "";

	if (be->subs_apply(be->opaque, set, addresses, reset, nreset, why, sizeof(why)) != 0) {
		*err = CTL_ERR_INTERNAL;
		snprintf(msg, len, "%s", why);
		return -1;
	}
	return 0;
}

static const struct sub_sched *
subs_changeable(const struct ctl_backend *be, const struct sub_set **set, enum ctl_error *err,
		char *msg, size_t len)
{
	const struct sub_sched *ss = subs_of(be, set, err, msg, len);

	if (ss != NULL && be->subs_apply == NULL)
		return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
			    "subscribers cannot change while this daemon runs");
	return ss;
}

/* What every change starts from: a copy nw of the running set *cur, if it may change. */
static const struct sub_sched *
change_begin(const struct ctl_backend *be, const struct sub_set **cur, struct sub_set *nw,
	     enum ctl_error *err, char *msg, size_t len)
{
	const struct sub_sched *ss = subs_changeable(be, cur, err, msg, len);

	if (ss == NULL)
		return NULL;
	if (sub_set_copy(nw, *cur) != 0)
		return fail(err, msg, len, CTL_ERR_INTERNAL, "out of memory");
	return ss;
}

/*
 * What every change ends with: nw checked (a failure blamed on field) and
 * applied (see apply), or freed with the error.
 */
static int
change_end(const struct ctl_backend *be, struct sub_set *nw, const char *field, bool addresses,
	   const uint32_t *reset, uint32_t nreset, enum ctl_error *err, char *msg, size_t len)
{
	if (check_set(nw, field, err, msg, len) != 0) {
		sub_set_free(nw);
		return -1;
	}
	return apply(be, nw, addresses, reset, nreset, err, msg, len);
}

void *
ctl_subscribers_set(const struct ctl_backend *be, const void *argsv, enum ctl_error *err, char *msg,
		    size_t len)
{
	static const char *const known[] = { "id",     "name",      "node", "download",
					     "upload", "addresses", NULL };
	static const char *const dir_key[SUB_DIRS] = { "download", "upload" };
	const json_t *args = argsv, *id = args != NULL ? json_object_get(args, "id") : NULL;
	const json_t *name = args != NULL ? json_object_get(args, "name") : NULL;
	const json_t *node = args != NULL ? json_object_get(args, "node") : NULL;
	const json_t *addrs = args != NULL ? json_object_get(args, "addresses") : NULL;
	const struct sub_set *cur = NULL;
	const struct sub_sched *ss;
	struct sub_set nw;
	uint32_t sub, reset = 0, nreset = 0;
	const char *field = "args";
	bool added;

	if (ctl_check_args(args, known, err, msg, len) != 0)
		return NULL;
	*err = CTL_ERR_INVALID_ARGUMENT;
	if (!json_is_string(id) || json_string_length(id) == 0 ||
	    json_string_length(id) >= SUB_ID_LEN) {
		snprintf(msg, len, "args.id: expected a circuit id of 1..%u characters",
			 SUB_ID_LEN - 1);
		return NULL;
	}
	if (name != NULL && !json_is_string(name))
		return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
			    "args.name: expected a string");
	if (node != NULL && !json_is_string(node))
		return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
			    "args.node: expected a node name (\"link\" for none)");
	ss = change_begin(be, &cur, &nw, err, msg, len);
	if (ss == NULL)
		return NULL;
	sub = sub_find(&nw, json_string_value(id));
	added = sub == SUB_NONE;
	if (added) {
		/* Everything a subscriber needs, before a slot is spent on it. */
		for (int d = 0; d < SUB_DIRS; d++)
			if (json_object_get(args, dir_key[d]) == NULL) {
				snprintf(msg, len,
					 "args.%s: missing (a new subscriber needs a plan each "
					 "way; \"%.64s\" is not one)",
					 dir_key[d], json_string_value(id));
				goto out;
			}
		if (addrs == NULL) {
			snprintf(msg, len,
				 "args.addresses: missing (a new subscriber needs at least one)");
			goto out;
		}
		sub = free_slot(be, ss, &nw, NULL, 0);
		if (sub == SUB_NONE) {
			/* None free: more slots at the end, which the schedulers grow to. */
			uint32_t first = nw.nsubs, more;

			if (sub_set_grow_slots(&nw, 1, &more) != 0) {
				snprintf(msg, len,
					 "no spare subscriber slot left and no more can be made "
					 "(%u slots)",
					 nw.nsubs);
				goto out;
			}
			sub = first;
		}
		sub_slot_clear(&nw.subs[sub]);
		snprintf(nw.subs[sub].id, SUB_ID_LEN, "%s", json_string_value(id));
		nw.subs[sub].origin = sub;
		reset = sub;
		nreset = 1;
	}
	if (name != NULL)
		snprintf(nw.subs[sub].name, SUB_ID_LEN, "%.63s", json_string_value(name));
	if (node != NULL) {
		const char *nn = json_string_value(node);
		uint32_t n = strcmp(nn, "link") == 0 || nn[0] == '\0' ? SUB_ROOT
								      : sub_node_find(&nw, nn);

		if (n == SUB_NONE) {
			snprintf(msg, len, "args.node: no node \"%.64s\"", nn);
			goto out;
		}
		nw.subs[sub].node = n;
		field = "args.node";
	}
	for (int d = 0; d < SUB_DIRS; d++) {
		const json_t *v = json_object_get(args, dir_key[d]);
		char path[32];

		if (v == NULL)
			continue;
		snprintf(path, sizeof(path), "args.%s", dir_key[d]);
		if (arg_plan(v, path, &nw.subs[sub].plan[d], msg, len) != 0)
			goto out;
		field = path[5] == 'd' ? "args.download" : "args.upload";
	}
	if (addrs != NULL) {
		if (arg_addresses(&nw, sub, addrs, msg, len) != 0)
			goto out;
		field = "args.addresses";
	}
	if (change_end(be, &nw, field, addrs != NULL, &reset, nreset, err, msg, len) != 0)
		return NULL;
	return json_pack("{s:s, s:s}", "id", json_string_value(id), "action",
			 added ? "added" : "changed");
out:
	sub_set_free(&nw);
	return NULL;
}

void *
ctl_subscribers_del(const struct ctl_backend *be, const void *argsv, enum ctl_error *err, char *msg,
		    size_t len)
{
	static const char *const known[] = { "id", NULL };
	const json_t *args = argsv, *id = args != NULL ? json_object_get(args, "id") : NULL;
	const struct sub_set *cur = NULL;
	const struct sub_sched *ss;
	struct sub_counters c[SUB_DIRS];
	struct sub_set nw;
	uint32_t sub;

	if (ctl_check_args(args, known, err, msg, len) != 0)
		return NULL;
	if (!json_is_string(id) || json_string_length(id) == 0)
		return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
			    "args.id: expected a circuit id");
	ss = change_begin(be, &cur, &nw, err, msg, len);
	if (ss == NULL)
		return NULL;
	sub = sub_find(&nw, json_string_value(id));
	if (sub == SUB_NONE) {
		*err = CTL_ERR_INVALID_ARGUMENT;
		snprintf(msg, len, "args.id: no subscriber \"%.64s\"", json_string_value(id));
		sub_set_free(&nw);
		return NULL;
	}
	retire(&nw, sub);
	if (change_end(be, &nw, "args.id", true, NULL, 0, err, msg, len) != 0)
		return NULL;
	/* What it still held when it went: sent at its old plan, then its slot is free. */
	counters(be, ss, sub, SUB_DOWN, &c[SUB_DOWN]);
	counters(be, ss, sub, SUB_UP, &c[SUB_UP]);
	return json_pack("{s:s, s:s, s:I}", "id", json_string_value(id), "action", "removed",
			 "draining", (json_int_t)(c[SUB_DOWN].qlen + c[SUB_UP].qlen));
}

/* ----------------------------------------------------- nodes.set, del */

/* A node's path in set, for replies ("Site_1/AP_7"). */
static json_t *
node_path_json(const struct sub_set *set, const char *name)
{
	uint32_t n = sub_node_find(set, name);
	char path[256];

	sub_node_path(set, n != SUB_NONE ? n : SUB_ROOT, path, sizeof(path));
	return json_string(path);
}

void *
ctl_nodes_set(const struct ctl_backend *be, const void *argsv, enum ctl_error *err, char *msg,
	      size_t len)
{
	static const char *const known[] = { "name", "parent", "download", "upload", "type", NULL };
	static const char *const dir_key[SUB_DIRS] = { "download", "upload" };
	const json_t *args = argsv, *name = args != NULL ? json_object_get(args, "name") : NULL;
	const json_t *parent = args != NULL ? json_object_get(args, "parent") : NULL;
	const json_t *type = args != NULL ? json_object_get(args, "type") : NULL;
	struct sub_node_change c = { 0 };
	const struct sub_set *cur = NULL;
	const char *field = "args";
	struct sub_set nw;
	char why[400];
	bool added;

	if (ctl_check_args(args, known, err, msg, len) != 0)
		return NULL;
	*err = CTL_ERR_INVALID_ARGUMENT;
	if (!json_is_string(name))
		return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
			    "args.name: expected a node name");
	if (parent != NULL && !json_is_string(parent))
		return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
			    "args.parent: expected a node name (\"link\" for the link)");
	if (type != NULL && (!json_is_string(type) || json_string_length(type) >= 16))
		return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
			    "args.type: expected a string of at most 15 characters");
	c.name = json_string_value(name);
	c.parent = parent != NULL ? json_string_value(parent) : NULL;
	c.type = type != NULL ? json_string_value(type) : NULL;
	for (int d = 0; d < SUB_DIRS; d++) {
		const json_t *v = json_object_get(args, dir_key[d]);
		char path[32];

		if (v == NULL)
			continue;
		snprintf(path, sizeof(path), "args.%s", dir_key[d]);
		if (arg_rate(v, path, &c.capacity[d], msg, len) != 0)
			return NULL;
		field = d == SUB_DOWN ? "args.download" : "args.upload";
	}
	if (parent != NULL)
		field = "args.parent";
	if (change_begin(be, &cur, &nw, err, msg, len) == NULL)
		return NULL;
	if (sub_set_node_put(&nw, &c, &added, why, sizeof(why)) != 0) {
		/* The model's message starts with the argument at fault. */
		snprintf(msg, len, "args.%s", why);
		goto out;
	}
	/* The addresses stay: the worker keeps its lookup tables. */
	if (change_end(be, &nw, field, false, NULL, 0, err, msg, len) != 0)
		return NULL;
	be->subs(be->opaque, &cur);
	return json_pack("{s:s, s:o, s:s}", "name", c.name, "path", node_path_json(cur, c.name),
			 "action", added ? "added" : "changed");
out:
	sub_set_free(&nw);
	return NULL;
}

void *
ctl_nodes_del(const struct ctl_backend *be, const void *argsv, enum ctl_error *err, char *msg,
	      size_t len)
{
	static const char *const known[] = { "name", NULL };
	const json_t *args = argsv, *name = args != NULL ? json_object_get(args, "name") : NULL;
	const struct sub_set *cur = NULL;
	struct sub_set nw;
	char why[400];

	if (ctl_check_args(args, known, err, msg, len) != 0)
		return NULL;
	if (!json_is_string(name))
		return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
			    "args.name: expected a node name");
	if (change_begin(be, &cur, &nw, err, msg, len) == NULL)
		return NULL;
	if (sub_set_node_del(&nw, json_string_value(name), why, sizeof(why)) != 0) {
		*err = CTL_ERR_INVALID_ARGUMENT;
		snprintf(msg, len, "args.%s", why);
		sub_set_free(&nw);
		return NULL;
	}
	if (change_end(be, &nw, "args.name", false, NULL, 0, err, msg, len) != 0)
		return NULL;
	return json_pack("{s:s, s:s}", "name", json_string_value(name), "action", "removed");
}

/* ------------------------------------------------------------- reload */

struct ctl_subs_reload {
	struct sub_set set; /* the running slots with the file's subscribers */
	struct sub_diff d;
};

static bool
slot_free_cb(const void *ctx, uint32_t slot)
{
	const struct ctl_backend *be = ctx;
	const struct sub_set *set;

	return slot_idle(be, be->subs(be->opaque, &set), slot);
}

int
ctl_subscribers_reload_prepare(const struct ctl_backend *be, const char *path,
			       struct ctl_subs_reload **out, char *err, size_t errlen)
{
	const struct sub_set *cur = NULL;
	const struct sub_sched *ss = be->subs != NULL && be->subs_apply != NULL
						     ? be->subs(be->opaque, &cur)
						     : NULL;
	struct shaper_config *cfg;
	struct ctl_subs_reload *r;
	struct sub_set file;
	char e[SHAPER_ERR_LEN];
	int rc;

	*out = NULL;
	if (ss == NULL)
		return 0; /* not shaped: the section's keys are compared as any other */
	cfg = malloc(sizeof(*cfg));
	r = calloc(1, sizeof(*r));
	if (cfg == NULL || r == NULL) {
		free(cfg);
		free(r);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = shaper_config_load_file(path, cfg, e, sizeof(e));
	if (rc != 0) {
		snprintf(err, errlen, "%s: %s", path, e);
		rc = -EINVAL;
		goto out;
	}
	rc = sub_config_load(cfg, &file, e, sizeof(e));
	if (rc == 0)
		rc = sub_set_diff(cur, &file, slot_free_cb, be, &r->set, &r->d, e, sizeof(e));
	sub_set_free(&file);
	if (rc != 0)
		snprintf(err, errlen, "subscribers: %s", e);
out:
	free(cfg);
	if (rc != 0) {
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

int
ctl_subscribers_reload_apply(const struct ctl_backend *be, struct ctl_subs_reload *r, char *err,
			     size_t errlen)
{
	struct sub_diff *d = &r->d;
	int rc;

	if (d->added + d->changed + d->removed + d->nodes_changed + d->nodes_added +
					    d->nodes_removed + d->nodes_moved ==
			    0 &&
	    !d->unknown_changed)
		return 0; /* the same subscribers: nothing to post */
	rc = be->subs_apply(be->opaque, &r->set, d->addresses, d->reset, d->nreset, err, errlen);
	memset(&r->set, 0, sizeof(r->set)); /* taken */
	return rc;
}

void *
ctl_subscribers_reload_summary(const struct ctl_subs_reload *r)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "added",
			 (json_int_t)r->d.added, "changed", (json_int_t)r->d.changed, "removed",
			 (json_int_t)r->d.removed, "unchanged", (json_int_t)r->d.unchanged,
			 "nodes_changed", (json_int_t)r->d.nodes_changed, "nodes_added",
			 (json_int_t)r->d.nodes_added, "nodes_removed",
			 (json_int_t)r->d.nodes_removed, "nodes_moved",
			 (json_int_t)r->d.nodes_moved, "slots_added", (json_int_t)r->d.slots_added);
}

void
ctl_subscribers_reload_describe(const struct ctl_subs_reload *r, char *buf, size_t len)
{
	snprintf(buf, len,
		 "%u added, %u changed, %u removed (their queues drain at their plans), %u "
		 "unchanged; nodes: %u added, %u removed, %u moved, %u capacities changed; %u "
		 "subscriber slots added%s",
		 r->d.added, r->d.changed, r->d.removed, r->d.unchanged, r->d.nodes_added,
		 r->d.nodes_removed, r->d.nodes_moved, r->d.nodes_changed, r->d.slots_added,
		 r->d.unknown_changed ? "; unknown addresses: another plan" : "");
}

void
ctl_subscribers_reload_free(struct ctl_subs_reload *r)
{
	if (r == NULL)
		return;
	sub_set_free(&r->set);
	free(r->d.reset);
	free(r);
}
