/*
 * subscribers.list and subscribers.get: each subscriber's counters per
 * direction, read from the worker's per-subscriber scheduler while it runs
 * (sub_sched_counters: relaxed atomic reads, no lock, no message to the
 * worker), named from the loaded set. Field names are tc-cake's where it
 * has one (bytes, packets, drops, ecn_mark, qlen, threshold_rate).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "shaper/control.h"
#include "shaper/subscriber.h"
#include "shaper/subscriber_sched.h"

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
	BY_RATE
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
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b}", "bytes",
			 J_U64(c->sent_bytes), "packets", J_U64(c->sent_packets), "drops",
			 J_U64(drops_of(c)), "drop_reasons", reasons, "ecn_mark", J_U64(c->marks),
			 "qlen", J_U64(c->qlen), "threshold_rate", J_U64(c->rate), "arrival_rate",
			 J_U64(c->arrival_bps), "arrived_bytes", J_U64(c->bytes), "arrived_packets",
			 J_U64(c->packets), "active", c->active);
}

/* One subscriber (sub < nsubs) or the link's own entry (sub == nsubs) as an object. */
static json_t *
sub_json(const struct sub_sched *ss, const struct sub_set *set, uint32_t sub, bool detail)
{
	struct sub_counters c[SUB_DIRS];
	json_t *o;

	sub_sched_counters(ss, sub, SUB_DOWN, &c[SUB_DOWN]);
	sub_sched_counters(ss, sub, SUB_UP, &c[SUB_UP]);
	o = json_pack("{s:o, s:o}", "download", dir_json(&c[SUB_DOWN]), "upload",
		      dir_json(&c[SUB_UP]));
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

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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

static int
check_known(const json_t *args, const char *const *known, enum ctl_error *err, char *msg,
	    size_t len)
{
	const char *key;
	json_t *v;

	if (args == NULL)
		return 0;
	json_object_foreach ((json_t *)args, key, v) {
		const char *const *k;

		for (k = known; *k != NULL; k++)
			if (strcmp(*k, key) == 0)
				break;
		if (*k == NULL) {
			*err = CTL_ERR_INVALID_ARGUMENT;
			snprintf(msg, len, "args.%s: unknown argument", key);
			return -1;
		}
	}
	return 0;
}

struct ranked {
	uint32_t sub;
	uint64_t key;
};

static int
by_key_desc(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? 1 : -1;
	return x->sub < y->sub ? -1 : x->sub > y->sub;
}

void *
ctl_subscribers_list(const struct ctl_backend *be, const void *argsv, enum ctl_error *err,
		     char *msg, size_t len)
{
	static const char *const known[] = { "top", "by", NULL };
	const json_t *args = argsv, *top = args != NULL ? json_object_get(args, "top") : NULL;
	const json_t *by = args != NULL ? json_object_get(args, "by") : NULL;
	const struct sub_set *set = NULL;
	const struct sub_sched *ss;
	enum sort_by sort = BY_BYTES;
	struct ranked *r;
	uint32_t n, want;
	json_t *arr, *o;

	if (check_known(args, known, err, msg, len) != 0)
		return NULL;
	if (top != NULL && (!json_is_integer(top) || json_integer_value(top) < 1 ||
			    json_integer_value(top) > SUB_MAX_SUBS))
		return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
			    "args.top: expected an integer 1..1048576");
	if (by != NULL) {
		const char *s = json_string_value(by);

		if (s != NULL && strcmp(s, "bytes") == 0)
			sort = BY_BYTES;
		else if (s != NULL && strcmp(s, "drops") == 0)
			sort = BY_DROPS;
		else if (s != NULL && strcmp(s, "rate") == 0)
			sort = BY_RATE;
		else
			return fail(err, msg, len, CTL_ERR_INVALID_ARGUMENT,
				    "args.by: expected \"bytes\", \"drops\" or \"rate\"");
	}
	ss = subs_of(be, &set, err, msg, len);
	if (ss == NULL)
		return NULL;
	n = sub_sched_nsubs(ss);
	want = top != NULL && json_integer_value(top) < n ? (uint32_t)json_integer_value(top) : n;
	r = calloc(n != 0 ? n : 1, sizeof(*r));
	if (r == NULL)
		return fail(err, msg, len, CTL_ERR_INTERNAL, "out of memory");
	o = json_object();
	/* Taken before the counters: rate = bytes difference / time difference of two calls. */
	json_object_set_new(o, "time_ns", J_U64(now_ns()));
	for (uint32_t i = 0; i < n; i++) {
		struct sub_counters c[SUB_DIRS];

		sub_sched_counters(ss, i, SUB_DOWN, &c[SUB_DOWN]);
		sub_sched_counters(ss, i, SUB_UP, &c[SUB_UP]);
		r[i].sub = i;
		r[i].key = sort == BY_BYTES   ? c[0].sent_bytes + c[1].sent_bytes
			   : sort == BY_DROPS ? drops_of(&c[0]) + drops_of(&c[1])
					      : c[0].arrival_bps + c[1].arrival_bps;
	}
	/* The whole list in the set's order; a top-N cut largest first. */
	if (want < n || by != NULL)
		qsort(r, n, sizeof(*r), by_key_desc);
	arr = json_array();
	for (uint32_t i = 0; i < want; i++)
		json_array_append_new(arr, sub_json(ss, set, r[i].sub, false));
	free(r);
	json_object_set_new(o, "count", J_U64(n));
	json_object_set_new(o, "subscribers", arr);
	/* Addresses no subscriber owns (and subscribers waiting for a CAKE): the link's own. */
	json_object_set_new(o, "link", sub_json(ss, set, n, false));
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

	if (check_known(args, known, err, msg, len) != 0)
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
		if (sub == SUB_NONE) {
			*err = CTL_ERR_INVALID_ARGUMENT;
			snprintf(msg, len, "args.address: %.64s belongs to no subscriber",
				 json_string_value(addr));
			return NULL;
		}
	}
	o = sub_json(ss, set, sub, true);
	json_object_set_new(o, "time_ns", J_U64(now_ns()));
	return o;
}
