/*
 * subscribers.list and subscribers.get (src/control/subscribers.c) against
 * a real per-subscriber scheduler without DPDK: three subscribers, frames
 * queued and sent through it, then the replies' counters, the top-N order,
 * lookups by id and address, and every refusal; subscribers.set and
 * subscribers.del applied to it as the worker would, and their refusals.
 * With two shards (two schedulers over the same set, as two workers have),
 * a subscriber's counters are the sum over both.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>

#include <cmocka.h>
#include <jansson.h>

#include "shaper/classify.h"
#include "shaper/config.h"
#include "shaper/control.h"
#include "shaper/metrics.h"
#include "shaper/sched.h"
#include "shaper/subscriber.h"
#include "shaper/subscriber_pool.h"
#include "shaper/subscriber_qoe.h"
#include "shaper/subscriber_rtt.h"
#include "shaper/subscriber_sched.h"

#define NSUB  3u
#define FRAME 600u

static const uint32_t sent_to[NSUB] = { 0, 2, 5 }; /* frames per subscriber */

static struct {
	struct sub_set set;
	struct sub_sched *ss;
	struct sched *link[SUB_DIRS];
	uint8_t buf[16][FRAME];
	struct sh_pkt pkt[16];
	bool off; /* the backend says subscribers are not shaped */
	/* A second shard: another scheduler over the same set, with its own link schedulers. */
	struct sub_sched *ss2;
	struct sched *link2[SUB_DIRS];
} W;

static const struct sub_sched *
be_subs_shard(void *opaque, unsigned int shard)
{
	(void)opaque;
	return shard == 0 ? W.ss : shard == 1 ? W.ss2 : NULL;
}

static const struct sub_sched *
be_subs(void *opaque, const struct sub_set **set)
{
	(void)opaque;
	if (W.off)
		return NULL;
	*set = &W.set;
	return W.ss;
}

/* The worker's side of a change, done at once. */
static int
be_subs_apply(void *opaque, struct sub_set *set, bool addresses, const uint32_t *reset,
	      uint32_t nreset, char *err, size_t errlen)
{
	struct sub_sched_change *c;

	(void)opaque;
	(void)addresses;
	c = sub_sched_change_build(W.ss, set, reset, nreset, NULL, NULL, err, errlen);
	if (c == NULL) {
		sub_set_free(set);
		return -ENOMEM;
	}
	sub_sched_change_apply(W.ss, c);
	sub_sched_change_free(c);
	sub_set_free(&W.set);
	W.set = *set;
	return 0;
}

/* An untagged IPv4/UDP frame to 100.64.0.(1 + sub). */
static void
frame(struct sh_pkt *p, uint8_t *b, uint32_t sub, const struct classify_key *key)
{
	memset(b, 0, FRAME);
	b[12] = 0x08;
	b[14] = 0x45;
	b[16] = (FRAME - 14) >> 8;
	b[17] = (FRAME - 14) & 0xff;
	b[22] = 64;
	b[23] = 17;
	b[26] = 198, b[27] = 51, b[28] = 100, b[29] = 1;
	b[30] = 100, b[31] = 64, b[32] = 0, b[33] = (uint8_t)(1 + sub);
	b[34] = 0x13, b[36] = 0x23;
	memset(p, 0, sizeof(*p));
	p->data = b;
	p->len = p->hdr_len = FRAME;
	p->mem = 2304;
	classify_pkt(p, key);
}

static int
setup(void **state)
{
	struct sched_params lp, sp;
	struct sub_sched_config cfg;
	struct classify_key key;
	struct sh_pkt_list dropped;
	struct sh_pkt *out[16];
	char err[256];
	uint32_t n = 0, got = 0;

	(void)state;
	memset(&W, 0, sizeof(W));
	sub_set_init(&W.set);
	W.set.nodes[SUB_ROOT].capacity[SUB_DOWN] = W.set.nodes[SUB_ROOT].capacity[SUB_UP] =
			100000000;
	for (uint32_t i = 0; i < NSUB; i++) {
		uint32_t s, p;

		assert_int_equal(sub_set_add_sub(&W.set, &s), 0);
		assert_int_equal(sub_set_add_prefix(&W.set, &p), 0);
		snprintf(W.set.subs[s].id, SUB_ID_LEN, "c%u", i);
		snprintf(W.set.subs[s].name, SUB_ID_LEN, "house %u", i);
		W.set.subs[s].node = SUB_ROOT;
		W.set.subs[s].plan[SUB_DOWN].max = (i + 1) * 10000000ull;
		W.set.subs[s].plan[SUB_UP].max = 5000000;
		W.set.subs[s].nprefixes = 1;
		W.set.nodes[SUB_ROOT].nsubs++;
		W.set.prefixes[p].family = 4;
		W.set.prefixes[p].len = 32;
		W.set.prefixes[p].addr[0] = 100;
		W.set.prefixes[p].addr[1] = 64;
		W.set.prefixes[p].addr[3] = (uint8_t)(1 + i);
		W.set.prefixes[p].sub = s;
	}
	{
		uint32_t spare; /* one slot for a subscriber added live */

		assert_int_equal(sub_set_add_sub(&W.set, &spare), 0);
		sub_slot_clear(&W.set.subs[spare]);
	}
	if (sub_set_validate(&W.set, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	sched_params_default(&lp, SCHED_DISC_CAKE);
	lp.rate = 100000000 / 8;
	for (int d = 0; d < SUB_DIRS; d++)
		assert_non_null(W.link[d] = sched_create(&lp, err, sizeof(err)));
	sp = lp;
	sp.rate = 30000000 / 8;
	sub_pool_cake_size(&sp);
	memset(&cfg, 0, sizeof(cfg));
	cfg.set = &W.set;
	cfg.params[SUB_DOWN] = cfg.params[SUB_UP] = sp;
	cfg.active = 4;
	cfg.link[SUB_DOWN] = W.link[SUB_DOWN];
	cfg.link[SUB_UP] = W.link[SUB_UP];
	W.ss = sub_sched_create(&cfg, err, sizeof(err));
	if (W.ss == NULL)
		fail_msg("%s", err);
	classify_key_init(&key, 7);
	sh_pkt_list_init(&dropped);
	for (uint32_t i = 0; i < NSUB; i++)
		for (uint32_t k = 0; k < sent_to[i]; k++, n++) {
			frame(&W.pkt[n], W.buf[n], i, &key);
			assert_int_equal(sub_sched_classify(W.ss, SUB_DOWN, &W.pkt[n]), i);
			sub_sched_enqueue(W.ss, SUB_DOWN, i, &W.pkt[n], 1000, &dropped);
		}
	/* Everything leaves at the plans' pace, a millisecond at a time. */
	for (uint64_t t = 1000000; t < 100000000 && got < n; t += 1000000)
		got += sub_sched_dequeue_burst(W.ss, SUB_DOWN, out, 16, t, &dropped);
	assert_int_equal(got, n);
	assert_int_equal(dropped.count, 0);
	return 0;
}

static int
teardown(void **state)
{
	struct sh_pkt_list rest;

	(void)state;
	sh_pkt_list_init(&rest);
	sub_sched_flush(W.ss, SUB_DOWN, &rest);
	sub_sched_flush(W.ss, SUB_UP, &rest);
	sub_sched_free(W.ss);
	sched_free(W.link[SUB_DOWN]);
	sched_free(W.link[SUB_UP]);
	sub_set_free(&W.set);
	return 0;
}

/* The reply to req at level: its result (ok) or its error object; the caller frees it. */
static json_t *
ask(enum shaper_level level, const char *req, bool want_ok)
{
	struct ctl_backend be = { .subs = be_subs, .subs_apply = be_subs_apply };
	char *line;
	json_t *rep, *part;

	if (W.ss2 != NULL) {
		be.n_shards = 2;
		be.subs_shard = be_subs_shard;
	}
	line = ctl_handle_request_as(&be, level, req, strlen(req), NULL);
	assert_non_null(line);
	rep = json_loads(line, 0, NULL);
	if (rep == NULL || json_is_true(json_object_get(rep, "ok")) != want_ok)
		fail_msg("%s -> %s", req, line);
	free(line);
	part = json_incref(json_object_get(rep, want_ok ? "result" : "error"));
	json_decref(rep);
	return part;
}

/* The id of the i-th subscriber a subscribers.list reply lists. */
static const char *
listed_id(const json_t *r, size_t i)
{
	return json_string_value(json_object_get(
			json_array_get(json_object_get(r, "subscribers"), i), "id"));
}

static void
test_list(void **state)
{
	json_t *r = ask(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.list\"}", true), *s;
	size_t i;

	(void)state;
	assert_int_equal(json_integer_value(json_object_get(r, "count")), NSUB);
	assert_int_equal(json_array_size(json_object_get(r, "subscribers")), NSUB);
	json_array_foreach (json_object_get(r, "subscribers"), i, s) {
		json_t *dn = json_object_get(s, "download");
		char id[8];

		snprintf(id, sizeof(id), "c%zu", i); /* the file's order */
		assert_string_equal(json_string_value(json_object_get(s, "id")), id);
		assert_string_equal(json_string_value(json_object_get(s, "node")), "link");
		assert_int_equal(json_integer_value(json_object_get(dn, "packets")), sent_to[i]);
		assert_int_equal(json_integer_value(json_object_get(dn, "bytes")),
				 sent_to[i] * FRAME);
		assert_int_equal(json_integer_value(json_object_get(dn, "arrived_packets")),
				 sent_to[i]);
		assert_int_equal(json_integer_value(json_object_get(dn, "qlen")), 0);
		assert_int_equal(json_integer_value(json_object_get(dn, "drops")), 0);
		/* A CAKE was taken (at its plan) for a subscriber that sent. */
		assert_int_equal(json_is_true(json_object_get(dn, "active")), sent_to[i] != 0);
		/* Allocated from its demand since (at most its plan); none without a CAKE. */
		assert_int_equal(json_integer_value(json_object_get(dn, "threshold_rate")) != 0,
				 sent_to[i] != 0);
		assert_true(json_integer_value(json_object_get(dn, "threshold_rate")) <=
			    (json_int_t)((i + 1) * 10000000 / 8));
	}
	assert_non_null(json_object_get(json_object_get(r, "link"), "download"));
	json_decref(r);

	r = ask(SHAPER_LEVEL_OPERATOR,
		"{\"cmd\":\"subscribers.list\",\"args\":{\"top\":2,\"by\":\"bytes\"}}", true);
	assert_int_equal(json_array_size(json_object_get(r, "subscribers")), 2);
	assert_string_equal(listed_id(r, 0), "c2");
	assert_string_equal(listed_id(r, 1), "c1");
	json_decref(r);

	/* A page: from the second of the file's order, at most two; count is still all. */
	r = ask(SHAPER_LEVEL_OPERATOR,
		"{\"cmd\":\"subscribers.list\",\"args\":{\"offset\":1,\"limit\":2}}", true);
	assert_int_equal(json_integer_value(json_object_get(r, "count")), NSUB);
	assert_int_equal(json_array_size(json_object_get(r, "subscribers")), 2);
	assert_string_equal(listed_id(r, 0), "c1");
	json_decref(r);
	/* A page of the top-N order, and an offset past the end. */
	r = ask(SHAPER_LEVEL_OPERATOR,
		"{\"cmd\":\"subscribers.list\",\"args\":{\"top\":2,\"offset\":1}}", true);
	assert_int_equal(json_array_size(json_object_get(r, "subscribers")), 1);
	assert_string_equal(listed_id(r, 0), "c1");
	json_decref(r);
	r = ask(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.list\",\"args\":{\"offset\":99}}",
		true);
	assert_int_equal(json_array_size(json_object_get(r, "subscribers")), 0);
	json_decref(r);
}

static void
test_get(void **state)
{
	json_t *r = ask(SHAPER_LEVEL_OPERATOR,
			"{\"cmd\":\"subscribers.get\",\"args\":{\"id\":\"c1\"}}", true);

	(void)state;
	assert_string_equal(json_string_value(json_object_get(r, "name")), "house 1");
	assert_string_equal(json_string_value(json_array_get(json_object_get(r, "addresses"), 0)),
			    "100.64.0.2/32");
	assert_int_equal(json_integer_value(json_object_get(
					 json_object_get(json_object_get(r, "download"), "plan"),
					 "max")),
			 20000000);
	json_decref(r);
	r = ask(SHAPER_LEVEL_OPERATOR,
		"{\"cmd\":\"subscribers.get\",\"args\":{\"address\":\"100.64.0.3\"}}", true);
	assert_string_equal(json_string_value(json_object_get(r, "id")), "c2");
	json_decref(r);
}

/* c1's frames on a second shard too (a subscriber that moved there): the replies add up. */
static void
test_two_shards(void **state)
{
	struct sched_params lp, sp;
	struct sub_sched_config cfg;
	struct classify_key key;
	struct sh_pkt_list dropped, rest;
	char err[256];
	json_t *r, *dn;

	(void)state;
	sched_params_default(&lp, SCHED_DISC_CAKE);
	lp.rate = 100000000 / 8;
	for (int d = 0; d < SUB_DIRS; d++)
		assert_non_null(W.link2[d] = sched_create(&lp, err, sizeof(err)));
	sp = lp;
	sp.rate = 30000000 / 8;
	sub_pool_cake_size(&sp);
	memset(&cfg, 0, sizeof(cfg));
	cfg.set = &W.set;
	cfg.params[SUB_DOWN] = cfg.params[SUB_UP] = sp;
	cfg.active = 4;
	cfg.link[SUB_DOWN] = W.link2[SUB_DOWN];
	cfg.link[SUB_UP] = W.link2[SUB_UP];
	W.ss2 = sub_sched_create(&cfg, err, sizeof(err));
	if (W.ss2 == NULL)
		fail_msg("%s", err);
	classify_key_init(&key, 7);
	sh_pkt_list_init(&dropped);
	for (uint32_t k = 0; k < 3; k++) {
		frame(&W.pkt[8 + k], W.buf[8 + k], 1, &key);
		sub_sched_enqueue(W.ss2, SUB_DOWN, 1, &W.pkt[8 + k], 1000, &dropped);
	}
	assert_int_equal(dropped.count, 0);
	r = ask(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.get\",\"args\":{\"id\":\"c1\"}}",
		true);
	dn = json_object_get(r, "download");
	/* Sent on the first shard, queued on the second. */
	assert_int_equal(json_integer_value(json_object_get(dn, "arrived_packets")),
			 sent_to[1] + 3);
	assert_int_equal(json_integer_value(json_object_get(dn, "packets")), sent_to[1]);
	assert_int_equal(json_integer_value(json_object_get(dn, "qlen")), 3);
	json_decref(r);
	r = ask(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.list\"}", true);
	dn = json_object_get(json_array_get(json_object_get(r, "subscribers"), 1), "download");
	assert_int_equal(json_integer_value(json_object_get(dn, "arrived_bytes")),
			 (sent_to[1] + 3) * FRAME);
	json_decref(r);
	/*
	 * RTT: c1's LAN-side samples on both shards add up (40 at 10 ms on the
	 * first, 60 at 40 ms on the second: the median is the second's), its
	 * WAN side has none.
	 */
	for (int k = 0; k < 40; k++)
		sub_sched_rtt_sample(W.ss, 1, SUB_RTT_LAN, 10000000, 2000000);
	for (int k = 0; k < 60; k++)
		sub_sched_rtt_sample(W.ss2, 1, SUB_RTT_LAN, 40000000, 2000000);
	r = ask(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.get\",\"args\":{\"id\":\"c1\"}}",
		true);
	dn = json_object_get(json_object_get(r, "rtt"), "lan");
	assert_int_equal(json_integer_value(json_object_get(dn, "samples")), 100);
	assert_int_equal(sub_rtt_bucket((uint64_t)json_integer_value(
							json_object_get(dn, "median_us")) *
					1000),
			 sub_rtt_bucket(40000000));
	dn = json_object_get(json_object_get(r, "rtt"), "wan");
	assert_int_equal(json_integer_value(json_object_get(dn, "samples")), 0);
	assert_int_equal(json_integer_value(json_object_get(dn, "median_us")), 0);
	json_decref(r);
	sh_pkt_list_init(&rest);
	sub_sched_flush(W.ss2, SUB_DOWN, &rest);
	assert_int_equal(rest.count, 3);
	sub_sched_free(W.ss2);
	W.ss2 = NULL;
	sched_free(W.link2[SUB_DOWN]);
	sched_free(W.link2[SUB_UP]);
}

static void
refused(enum shaper_level level, const char *req, const char *code)
{
	json_t *e = ask(level, req, false);

	assert_string_equal(json_string_value(json_object_get(e, "code")), code);
	json_decref(e);
}

static void
test_refusals(void **state)
{
	(void)state;
	refused(SHAPER_LEVEL_OPERATOR,
		"{\"cmd\":\"subscribers.get\",\"args\":{\"address\":\"100.64.9.9\"}}",
		"invalid_argument");
	refused(SHAPER_LEVEL_OPERATOR,
		"{\"cmd\":\"subscribers.get\",\"args\":{\"address\":\"100.64.0.0/24\"}}",
		"invalid_argument");
	refused(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.get\",\"args\":{\"id\":\"c9\"}}",
		"invalid_argument");
	refused(SHAPER_LEVEL_OPERATOR,
		"{\"cmd\":\"subscribers.get\",\"args\":{\"id\":\"c1\",\"address\":\"100.64.0.2\"}}",
		"invalid_argument");
	refused(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.get\"}", "invalid_argument");
	refused(SHAPER_LEVEL_OPERATOR,
		"{\"cmd\":\"subscribers.list\",\"args\":{\"by\":\"colour\"}}", "invalid_argument");
	refused(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.list\",\"args\":{\"top\":0}}",
		"invalid_argument");
	refused(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.list\",\"args\":{\"limit\":0}}",
		"invalid_argument");
	refused(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.list\",\"args\":{\"offset\":-1}}",
		"invalid_argument");
	refused(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.list\",\"args\":{\"offset\":\"1\"}}",
		"invalid_argument");
	refused(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.list\",\"args\":{\"x\":1}}",
		"invalid_argument");
	/* Names are often street addresses: not for the user level. */
	refused(SHAPER_LEVEL_USER, "{\"cmd\":\"subscribers.list\"}", "permission_denied");
	W.off = true;
	refused(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.list\"}", "invalid_argument");
	W.off = false;
}

static json_t *
get_id(const char *id)
{
	char req[128];

	snprintf(req, sizeof(req), "{\"cmd\":\"subscribers.get\",\"args\":{\"id\":\"%s\"}}", id);
	return ask(SHAPER_LEVEL_OPERATOR, req, true);
}

static json_int_t
plan_max(const json_t *r, const char *dir)
{
	return json_integer_value(
			json_object_get(json_object_get(json_object_get(r, dir), "plan"), "max"));
}

static json_int_t
count(void)
{
	json_t *r = ask(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.list\"}", true);
	json_int_t n = json_integer_value(json_object_get(r, "count"));

	json_decref(r);
	return n;
}

/* A refused change: its message starts with field, and nothing changed. */
static void
refused_change(const char *req, const char *field)
{
	uint64_t before = sub_sched_changes(W.ss);
	json_t *e = ask(SHAPER_LEVEL_OPERATOR, req, false);
	const char *m = json_string_value(json_object_get(e, "message"));

	if (strncmp(m, field, strlen(field)) != 0)
		fail_msg("%s -> \"%s\", expected it to name %s", req, m, field);
	json_decref(e);
	assert_int_equal(sub_sched_changes(W.ss), before);
}

static void
test_set_del(void **state)
{
	const struct sched *cake2;
	json_t *r;

	(void)state;
	/* A plan change keeps the subscriber's CAKE and counters. */
	cake2 = sub_sched_sub(W.ss, 2)->dir[SUB_DOWN].cake;
	assert_non_null(cake2);
	r = ask(SHAPER_LEVEL_OPERATOR,
		"{\"cmd\":\"subscribers.set\",\"args\":{\"id\":\"c2\",\"download\":{\"max\":"
		"\"5mbit\",\"min\":\"1mbit\"}}}",
		true);
	assert_string_equal(json_string_value(json_object_get(r, "action")), "changed");
	json_decref(r);
	assert_ptr_equal(sub_sched_sub(W.ss, 2)->dir[SUB_DOWN].cake, cake2);
	r = get_id("c2");
	assert_int_equal(plan_max(r, "download"), 5000000);
	assert_int_equal(plan_max(r, "upload"), 5000000);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "download"),
							    "packets")),
			 sent_to[2]);
	json_decref(r);

	/* A new subscriber takes the spare slot; then none is left. */
	r = ask(SHAPER_LEVEL_OPERATOR,
		"{\"cmd\":\"subscribers.set\",\"args\":{\"id\":\"c9\",\"name\":\"new\","
		"\"download\":\"8mbit\",\"upload\":\"2mbit\",\"addresses\":[\"100.64.0.9\","
		"\"2001:db8::/56\"]}}",
		true);
	assert_string_equal(json_string_value(json_object_get(r, "action")), "added");
	json_decref(r);
	r = ask(SHAPER_LEVEL_OPERATOR,
		"{\"cmd\":\"subscribers.get\",\"args\":{\"address\":\"2001:db8::1\"}}", true);
	assert_string_equal(json_string_value(json_object_get(r, "id")), "c9");
	assert_int_equal(plan_max(r, "upload"), 2000000);
	json_decref(r);
	assert_int_equal(count(), NSUB + 1);
	/* None is left: the slots grow (the scheduler with them), and c10 takes the first new. */
	{
		uint32_t slots = sub_sched_nsubs(W.ss);

		r = ask(SHAPER_LEVEL_OPERATOR,
			"{\"cmd\":\"subscribers.set\",\"args\":{\"id\":\"c10\",\"download\":"
			"\"8mbit\",\"upload\":\"2mbit\",\"addresses\":[\"100.64.0.10\"]}}",
			true);
		assert_string_equal(json_string_value(json_object_get(r, "action")), "added");
		json_decref(r);
		assert_true(sub_sched_nsubs(W.ss) > slots);
		assert_int_equal(W.set.nsubs, sub_sched_nsubs(W.ss));
		assert_string_equal(W.set.subs[slots].id, "c10");
		assert_int_equal(count(), NSUB + 2);
	}

	/* Deleted: gone from the replies; its slot (it sent nothing: idle) is free again. */
	r = ask(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.del\",\"args\":{\"id\":\"c0\"}}",
		true);
	assert_string_equal(json_string_value(json_object_get(r, "action")), "removed");
	json_decref(r);
	refused(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.get\",\"args\":{\"id\":\"c0\"}}",
		"invalid_argument");
	refused(SHAPER_LEVEL_OPERATOR,
		"{\"cmd\":\"subscribers.get\",\"args\":{\"address\":\"100.64.0.1\"}}",
		"invalid_argument");
	assert_int_equal(count(), NSUB + 1);
	r = ask(SHAPER_LEVEL_OPERATOR,
		"{\"cmd\":\"subscribers.set\",\"args\":{\"id\":\"c11\",\"download\":\"8mbit\","
		"\"upload\":\"2mbit\",\"addresses\":[\"100.64.0.1\"]}}",
		true);
	json_decref(r);
	assert_int_equal(count(), NSUB + 2);
	assert_int_equal(sub_sched_changes(W.ss), 5);
}

static void
test_change_refusals(void **state)
{
	(void)state;
	refused_change("{\"cmd\":\"subscribers.del\",\"args\":{\"id\":\"nobody\"}}", "args.id");
	refused_change("{\"cmd\":\"subscribers.set\",\"args\":{\"id\":\"c1\",\"addresses\":["
		       "\"100.64.0.0/24\"]}}",
		       "args.addresses");
	refused_change("{\"cmd\":\"subscribers.set\",\"args\":{\"id\":\"c1\",\"addresses\":["
		       "\"100.64.0.1/24\"]}}",
		       "args.addresses[0]");
	refused_change("{\"cmd\":\"subscribers.set\",\"args\":{\"id\":\"c1\",\"node\":"
		       "\"AP_Z\"}}",
		       "args.node");
	refused_change("{\"cmd\":\"subscribers.set\",\"args\":{\"id\":\"c1\",\"download\":{"
		       "\"max\":\"5mbit\",\"min\":\"6mbit\"}}}",
		       "args.download.min");
	refused_change("{\"cmd\":\"subscribers.set\",\"args\":{\"id\":\"c1\",\"upload\":"
		       "\"fast\"}}",
		       "args.upload");
	refused_change("{\"cmd\":\"subscribers.set\",\"args\":{\"id\":\"n\",\"download\":"
		       "\"8mbit\",\"addresses\":[\"100.64.0.10\"]}}",
		       "args.upload");
	refused_change("{\"cmd\":\"subscribers.set\",\"args\":{\"id\":\"\"}}", "args.id");
	refused_change("{\"cmd\":\"subscribers.set\",\"args\":{\"id\":\"c1\",\"colour\":1}}",
		       "args.colour");
	/* Operator level, as the other subscriber commands. */
	refused(SHAPER_LEVEL_USER, "{\"cmd\":\"subscribers.del\",\"args\":{\"id\":\"c1\"}}",
		"permission_denied");
	assert_int_equal(count(), NSUB);
}

static const char *
node_of(const char *id)
{
	static char path[256];
	json_t *r = get_id(id);

	snprintf(path, sizeof(path), "%s", json_string_value(json_object_get(r, "node")));
	json_decref(r);
	return path;
}

/*
 * nodes.set and nodes.del: a node added, a subscriber moved under it, the
 * node moved under another added after it (the tree is put back in
 * parent-first order), refusals that change nothing, and removal once
 * empty. Every subscriber keeps its CAKE throughout.
 */
static void
test_nodes(void **state)
{
	const struct sched *cake1, *cake2;
	json_t *r;

	(void)state;
	cake1 = sub_sched_sub(W.ss, 1)->dir[SUB_DOWN].cake;
	cake2 = sub_sched_sub(W.ss, 2)->dir[SUB_DOWN].cake;
	assert_non_null(cake1);
	assert_non_null(cake2);
	r = ask(SHAPER_LEVEL_OPERATOR,
		"{\"cmd\":\"nodes.set\",\"args\":{\"name\":\"AP_A\",\"download\":\"50mbit\","
		"\"upload\":\"20mbit\",\"type\":\"AP\"}}",
		true);
	assert_string_equal(json_string_value(json_object_get(r, "action")), "added");
	assert_string_equal(json_string_value(json_object_get(r, "path")), "AP_A");
	json_decref(r);
	json_decref(ask(SHAPER_LEVEL_OPERATOR,
			"{\"cmd\":\"subscribers.set\",\"args\":{\"id\":\"c2\",\"node\":\"AP_A\","
			"\"download\":{\"max\":\"30mbit\",\"min\":\"5mbit\"}}}",
			true));
	assert_string_equal(node_of("c2"), "AP_A");
	/* A parent added after its child: the tree is reordered, paths follow. */
	json_decref(ask(SHAPER_LEVEL_OPERATOR,
			"{\"cmd\":\"nodes.set\",\"args\":{\"name\":\"Site\",\"download\":"
			"\"100mbit\",\"upload\":\"100mbit\"}}",
			true));
	r = ask(SHAPER_LEVEL_OPERATOR,
		"{\"cmd\":\"nodes.set\",\"args\":{\"name\":\"AP_A\",\"parent\":\"Site\"}}", true);
	assert_string_equal(json_string_value(json_object_get(r, "action")), "changed");
	assert_string_equal(json_string_value(json_object_get(r, "path")), "Site/AP_A");
	json_decref(r);
	assert_string_equal(node_of("c2"), "Site/AP_A");
	assert_string_equal(node_of("c1"), "link");
	assert_int_equal(W.set.nodes[sub_node_find(&W.set, "AP_A")].capacity[SUB_DOWN], 50000000);
	assert_true(W.set.nodes[sub_node_find(&W.set, "AP_A")].parent ==
		    sub_node_find(&W.set, "Site"));
	assert_true(sub_node_find(&W.set, "Site") < sub_node_find(&W.set, "AP_A"));

	refused_change("{\"cmd\":\"nodes.set\",\"args\":{\"name\":\"Site\",\"parent\":"
		       "\"AP_A\"}}",
		       "args.parent");
	refused_change("{\"cmd\":\"nodes.set\",\"args\":{\"name\":\"Site\",\"parent\":"
		       "\"nowhere\"}}",
		       "args.parent");
	/* c2's min of 5 Mbit/s no longer fits. */
	refused_change("{\"cmd\":\"nodes.set\",\"args\":{\"name\":\"AP_A\",\"download\":"
		       "\"4mbit\"}}",
		       "args.download");
	refused_change("{\"cmd\":\"nodes.set\",\"args\":{\"name\":\"AP_B\",\"download\":"
		       "\"4mbit\"}}",
		       "args.upload");
	refused_change("{\"cmd\":\"nodes.set\",\"args\":{\"name\":\"link\",\"download\":"
		       "\"4mbit\"}}",
		       "args.name");
	refused_change("{\"cmd\":\"nodes.set\",\"args\":{\"name\":\"AP_A\",\"colour\":1}}",
		       "args.colour");
	refused_change("{\"cmd\":\"nodes.del\",\"args\":{\"name\":\"AP_A\"}}",
		       "args.name: node \"AP_A\" still has 1 subscriber and 0 nodes");
	refused_change("{\"cmd\":\"nodes.del\",\"args\":{\"name\":\"Site\"}}",
		       "args.name: node \"Site\" still has 0 subscribers and 1 node");
	refused_change("{\"cmd\":\"nodes.del\",\"args\":{\"name\":\"nowhere\"}}", "args.name");
	refused(SHAPER_LEVEL_USER, "{\"cmd\":\"nodes.del\",\"args\":{\"name\":\"Site\"}}",
		"permission_denied");
	assert_string_equal(node_of("c2"), "Site/AP_A");

	/* Emptied, then removed, child first. */
	json_decref(ask(SHAPER_LEVEL_OPERATOR,
			"{\"cmd\":\"subscribers.set\",\"args\":{\"id\":\"c2\",\"node\":\"link\"}}",
			true));
	r = ask(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"nodes.del\",\"args\":{\"name\":\"AP_A\"}}",
		true);
	assert_string_equal(json_string_value(json_object_get(r, "action")), "removed");
	json_decref(r);
	json_decref(ask(SHAPER_LEVEL_OPERATOR,
			"{\"cmd\":\"nodes.del\",\"args\":{\"name\":\"Site\"}}", true));
	assert_int_equal(W.set.nnodes, 1);
	assert_string_equal(node_of("c2"), "link");
	assert_int_equal(sub_sched_changes(W.ss), 7);
	/* Nobody lost the CAKE it held, nor its queue's counters. */
	assert_ptr_equal(sub_sched_sub(W.ss, 1)->dir[SUB_DOWN].cake, cake1);
	assert_ptr_equal(sub_sched_sub(W.ss, 2)->dir[SUB_DOWN].cake, cake2);
	r = get_id("c2");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "download"),
							    "packets")),
			 sent_to[2]);
	json_decref(r);
	assert_int_equal(count(), NSUB);
}

/* subscribers.metrics through a backend whose started configuration asks for top. */
static json_t *
ask_metrics(const char *req, uint32_t top)
{
	static struct shaper_config started;
	struct ctl_config_file file = { .path = "shaper.json", .started = &started };
	struct ctl_backend be = { .subs = be_subs, .config_file = &file };
	char *line;
	json_t *rep, *res;

	started.metrics_subscribers_top = top;
	line = ctl_handle_request_as(&be, SHAPER_LEVEL_USER, req, strlen(req), NULL);
	assert_non_null(line);
	rep = json_loads(line, 0, NULL);
	if (rep == NULL || !json_is_true(json_object_get(rep, "ok")))
		fail_msg("%s -> %s", req, line);
	free(line);
	res = json_incref(json_object_get(rep, "result"));
	json_decref(rep);
	return res;
}

/*
 * The exposition of one subscribers.metrics result; the caller frees it.
 * Not inlined: gcc 12 at -O3 then takes open_memstream's hold on the local
 * for a dangling pointer in the caller (-Wdangling-pointer).
 */
static __attribute__((noinline)) char *
exposition(const json_t *r)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(ctl_metrics_print_subscribers(f, r), 0);
	assert_int_equal(fclose(f), 0);
	return text;
}

static unsigned int
lines_starting(const char *text, const char *prefix)
{
	unsigned int n = 0;

	for (const char *p = text; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : p)
		n += strncmp(p, prefix, strlen(prefix)) == 0;
	return n;
}

/*
 * Per-node series for every node, per-subscriber ones only for the top N
 * by bytes in the worker's last whole minute, label values escaped; a
 * second caller right after sees the same top N (no state between calls).
 */
static void
test_metrics(void **state)
{
	const char *req = "{\"cmd\":\"subscribers.metrics\"}";
	uint32_t tower;
	json_t *r;
	char *text;

	(void)state;
	/* c2 under a node whose name, like c2's id, needs escaping. */
	assert_int_equal(sub_set_add_node(&W.set, &tower), 0);
	snprintf(W.set.nodes[tower].name, SUB_ID_LEN, "tower \"A\"\\1");
	W.set.nodes[tower].parent = SUB_ROOT;
	W.set.subs[2].node = tower;
	snprintf(W.set.subs[2].id, SUB_ID_LEN, "c\"2\\");

	/* The frames arrived in the worker's first minute; it is in its second now. */
	sub_sched_note_time(W.ss, SUB_QOE_MINUTE_NS + 1000000);
	r = ask_metrics(req, 2);
	assert_int_equal(json_integer_value(json_object_get(r, "top")), 2);
	assert_int_equal(json_integer_value(json_object_get(
					 json_array_get(json_object_get(r, "subscribers"), 0),
					 "minute_bytes")),
			 5 * FRAME);
	text = exposition(r);
	/* Every node, both directions (drops by four reasons); the top two of three. */
	assert_int_equal(lines_starting(text, "shaper_node_bytes_total{"), 4);
	assert_int_equal(lines_starting(text, "shaper_node_drops_total{"), 16);
	assert_int_equal(lines_starting(text, "shaper_node_ecn_marks_total{"), 4);
	assert_int_equal(lines_starting(text, "shaper_subscriber_drops_total{"), 16);
	assert_int_equal(lines_starting(text, "shaper_node_rate_bytes_per_second{"), 4);
	assert_int_equal(lines_starting(text, "shaper_subscriber_bytes_total{"), 4);
	assert_int_equal(lines_starting(text, "shaper_subscriber_rate_bytes_per_second{"), 4);
	assert_int_equal(lines_starting(text, "# TYPE shaper_subscriber_bytes_total counter"), 1);
	assert_non_null(strstr(text,
			       "shaper_node_bytes_total{node=\"link\",direction=\"downstream\"} "
			       "4200\n"));
	assert_non_null(strstr(text, "shaper_node_bytes_total{node=\"tower \\\"A\\\"\\\\1\","
				     "direction=\"downstream\"} 3000\n"));
	assert_non_null(strstr(text,
			       "shaper_subscriber_bytes_total{subscriber=\"c\\\"2\\\\\","
			       "node=\"tower \\\"A\\\"\\\\1\",direction=\"downstream\"} 3000\n"));
	assert_non_null(strstr(text,
			       "shaper_subscriber_bytes_total{subscriber=\"c1\",node=\"link\","
			       "direction=\"upstream\"} 0\n"));
	assert_null(strstr(text, "subscriber=\"c0\"")); /* sent nothing: not in the top two */
	free(text);
	json_decref(r);

	/*
	 * Another scraper (or shapectl metrics) right after: the same top one.
	 * Ranked by what was sent since the previous call, this was c0 (all
	 * tied at 0, in slot order).
	 */
	for (int k = 0; k < 2; k++) {
		r = ask_metrics(req, 1);
		assert_int_equal(json_array_size(json_object_get(r, "subscribers")), 1);
		assert_string_equal(
				json_string_value(json_object_get(
						json_array_get(json_object_get(r, "subscribers"),
							       0),
						"id")),
				"c\"2\\");
		json_decref(r);
	}
	/* A minute later with nothing more sent: all tie at 0, in slot order. */
	sub_sched_note_time(W.ss, 2 * SUB_QOE_MINUTE_NS + 1000000);
	r = ask_metrics(req, 1);
	assert_string_equal(json_string_value(json_object_get(
					    json_array_get(json_object_get(r, "subscribers"), 0),
					    "id")),
			    "c0");
	json_decref(r);

	/*
	 * RTT: c2 (under the tower) at 50 ms on the LAN side, c1 at 5 ms; the
	 * tower's series are c2's, the link's both together, and only a side
	 * with samples has quantile series.
	 */
	for (int k = 0; k < 30; k++) {
		sub_sched_rtt_sample(W.ss, 2, SUB_RTT_LAN, 50000000, 2000000);
		sub_sched_rtt_sample(W.ss, 1, SUB_RTT_LAN, 5000000, 2000000);
	}
	r = ask_metrics("{\"cmd\":\"subscribers.metrics\",\"args\":{\"top\":3}}", 0);
	text = exposition(r);
	assert_int_equal(lines_starting(text, "shaper_subscriber_rtt_seconds{"), 4);
	assert_int_equal(lines_starting(text, "shaper_subscriber_rtt_samples{"), 6);
	assert_int_equal(lines_starting(text, "shaper_node_rtt_seconds{"), 4);
	assert_non_null(strstr(text, "shaper_node_rtt_samples{node=\"link\",side=\"lan\"} 60\n"));
	assert_non_null(strstr(text, "shaper_node_rtt_samples{node=\"tower \\\"A\\\"\\\\1\","
				     "side=\"lan\"} 30\n"));
	{
		const char *at = strstr(text, "shaper_subscriber_rtt_seconds{subscriber=\"c1\","
					      "node=\"link\",side=\"lan\",quantile=\"0.5\"} ");
		double v = 0;

		assert_non_null(at);
		assert_int_equal(sscanf(at, "%*[^}]} %lf", &v), 1);
		assert_int_equal(sub_rtt_bucket((uint64_t)(v * 1e9 + 0.5)),
				 sub_rtt_bucket(5000000));
	}
	free(text);
	json_decref(r);
	/* By RTT: c2, c1, then c0 (no samples). */
	r = ask(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.list\",\"args\":{\"by\":\"rtt\"}}",
		true);
	assert_string_equal(listed_id(r, 0), "c\"2\\");
	assert_string_equal(listed_id(r, 1), "c1");
	assert_string_equal(listed_id(r, 2), "c0");
	json_decref(r);

	/* top 0 (the default): nodes only; args.top overrides the configuration. */
	r = ask_metrics(req, 0);
	text = exposition(r);
	assert_int_equal(lines_starting(text, "shaper_subscriber_"), 0);
	assert_int_equal(lines_starting(text, "shaper_node_bytes_total{"), 4);
	free(text);
	json_decref(r);
	r = ask_metrics("{\"cmd\":\"subscribers.metrics\",\"args\":{\"top\":100}}", 0);
	assert_int_equal(json_array_size(json_object_get(r, "subscribers")), NSUB);
	json_decref(r);
	refused(SHAPER_LEVEL_USER, "{\"cmd\":\"subscribers.metrics\",\"args\":{\"top\":101}}",
		"invalid_argument");

	/* Subscribers not shaped: empty lists, no families. */
	W.off = true;
	r = ask_metrics(req, 5);
	text = exposition(r);
	assert_string_equal(text, "");
	free(text);
	json_decref(r);
	W.off = false;
}

/*
 * A change the worker applies after the control thread stopped waiting:
 * the scheduler has its new count (and records) while the backend still
 * hands out the old set, exactly as large as its own count. The readers
 * index the set by that count and find the link's entry at the
 * scheduler's: nothing is read past the old set (the _asan build checks),
 * and the link's counters are the link's.
 */
static void
test_late_change(void **state)
{
	struct sh_pkt_list dropped;
	struct sub_sched_change *c;
	struct classify_key key;
	struct sh_pkt *out[4];
	struct sub_set old, grown;
	uint32_t added, got = 0;
	char err[256];
	json_t *r, *nodes, *link;

	(void)state;
	/* A frame no subscriber owns: the link's entry sends it. */
	classify_key_init(&key, 7);
	sh_pkt_list_init(&dropped);
	frame(&W.pkt[15], W.buf[15], 40, &key);
	assert_int_equal(sub_sched_classify(W.ss, SUB_DOWN, &W.pkt[15]), SUB_NONE);
	sub_sched_enqueue(W.ss, SUB_DOWN, SUB_NONE, &W.pkt[15], 200000000, &dropped);
	for (uint64_t t = 201000000; t < 300000000 && got == 0; t += 1000000)
		got += sub_sched_dequeue_burst(W.ss, SUB_DOWN, out, 4, t, &dropped);
	assert_int_equal(got, 1);

	assert_int_equal(sub_set_copy(&old, &W.set), 0);
	assert_int_equal(sub_set_copy(&grown, &W.set), 0);
	assert_int_equal(sub_set_grow_slots(&grown, 4096, &added), 0);
	c = sub_sched_change_build(W.ss, &grown, NULL, 0, NULL, NULL, err, sizeof(err));
	if (c == NULL)
		fail_msg("%s", err);
	sub_sched_change_apply(W.ss, c);
	sub_sched_change_free(c);
	sub_set_free(&grown);
	assert_int_equal(sub_sched_nsubs(W.ss), old.nsubs + added);
	sub_set_free(&W.set);
	W.set = old; /* what the backend hands out: the set from before */

	r = ask(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.list\"}", true);
	assert_int_equal(json_integer_value(json_object_get(r, "count")), NSUB);
	link = json_object_get(json_object_get(r, "link"), "download");
	assert_int_equal(json_integer_value(json_object_get(link, "bytes")), FRAME);
	json_decref(r);

	r = ask_metrics("{\"cmd\":\"subscribers.metrics\",\"args\":{\"top\":100}}", 0);
	assert_int_equal(json_array_size(json_object_get(r, "subscribers")), NSUB);
	nodes = json_object_get(r, "nodes");
	assert_int_equal(json_array_size(nodes), 1);
	/* The link's node: the three subscribers' 4200 bytes and the unknown frame. */
	assert_int_equal(json_integer_value(json_object_get(
					 json_object_get(json_array_get(nodes, 0), "download"),
					 "bytes")),
			 4200 + FRAME);
	json_decref(r);

	r = ask(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.get\",\"args\":{\"id\":\"c2\"}}",
		true);
	assert_int_equal(json_integer_value(
					 json_object_get(json_object_get(r, "download"), "bytes")),
			 sent_to[2] * FRAME);
	json_decref(r);
}

/*
 * Loaded latency: c1 on a 4 kbit/s plan gets 3,000 bytes in a minute (a
 * tenth of its plan over the minute: busy) with 60 ms samples on the LAN
 * side; c0, with 5 ms samples, sends nothing that minute. Only c1 has a
 * busy RTT, in subscribers.get and the list's order by busy_rtt, and the
 * worst-N list and its series name c1 alone; the link's node has c1's
 * busy samples.
 */
static void
test_busy(void **state)
{
	const uint64_t t0 = 10 * SUB_QOE_MINUTE_NS + 1000000;
	struct sh_pkt_list dropped;
	struct classify_key key;
	struct sh_pkt *out[16];
	const json_t *busy;
	json_t *r;
	char *text;

	(void)state;
	r = ask(SHAPER_LEVEL_OPERATOR,
		"{\"cmd\":\"subscribers.set\",\"args\":{\"id\":\"c1\",\"download\":\"4kbit\","
		"\"upload\":\"4kbit\"}}",
		true);
	json_decref(r);
	classify_key_init(&key, 7);
	sh_pkt_list_init(&dropped);
	/* The worker's minute 11 begins: its tick starts it for the active ones. */
	sub_sched_note_time(W.ss, t0);
	sub_sched_dequeue_burst(W.ss, SUB_DOWN, out, 16, t0, &dropped);
	for (uint32_t k = 8; k < 13; k++) {
		frame(&W.pkt[k], W.buf[k], 1, &key);
		sub_sched_enqueue(W.ss, SUB_DOWN, 1, &W.pkt[k], t0, &dropped);
	}
	for (int k = 0; k < 30; k++) {
		sub_sched_rtt_sample(W.ss, 1, SUB_RTT_LAN, 60000000, t0);
		sub_sched_rtt_sample(W.ss, 0, SUB_RTT_LAN, 5000000, t0);
	}

	r = ask(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.get\",\"args\":{\"id\":\"c1\"}}",
		true);
	busy = json_object_get(r, "busy_rtt");
	assert_int_equal(json_integer_value(json_object_get(busy, "minutes")), 1);
	assert_int_equal(json_integer_value(
					 json_object_get(json_object_get(busy, "lan"), "samples")),
			 30);
	assert_int_equal(sub_rtt_bucket((uint64_t)json_integer_value(json_object_get(
							json_object_get(busy, "lan"), "p95_us")) *
					1000),
			 sub_rtt_bucket(60000000));
	json_decref(r);
	r = ask(SHAPER_LEVEL_OPERATOR, "{\"cmd\":\"subscribers.get\",\"args\":{\"id\":\"c0\"}}",
		true);
	busy = json_object_get(r, "busy_rtt");
	assert_int_equal(json_integer_value(json_object_get(busy, "minutes")), 0);
	assert_int_equal(json_integer_value(
					 json_object_get(json_object_get(busy, "lan"), "samples")),
			 0);
	/* Its plain RTT has the samples: only the busy figure leaves them out. */
	assert_int_equal(json_integer_value(json_object_get(
					 json_object_get(json_object_get(r, "rtt"), "lan"),
					 "samples")),
			 30);
	json_decref(r);
	r = ask(SHAPER_LEVEL_OPERATOR,
		"{\"cmd\":\"subscribers.list\",\"args\":{\"by\":\"busy_rtt\",\"top\":1}}", true);
	assert_string_equal(listed_id(r, 0), "c1");
	json_decref(r);

	r = ask_metrics("{\"cmd\":\"subscribers.metrics\",\"args\":{\"top\":0,\"worst\":5}}", 0);
	assert_int_equal(json_integer_value(json_object_get(r, "worst")), 1);
	assert_int_equal(json_array_size(json_object_get(r, "subscribers")), 1);
	text = exposition(r);
	assert_int_equal(lines_starting(text, "shaper_subscriber_busy_rtt_seconds{"), 2);
	assert_non_null(strstr(text, "shaper_subscriber_busy_minutes{subscriber=\"c1\","
				     "node=\"link\"} 1\n"));
	assert_non_null(strstr(text, "shaper_subscriber_busy_rtt_samples{subscriber=\"c1\","
				     "node=\"link\",side=\"lan\"} 30\n"));
	assert_non_null(strstr(text, "shaper_node_busy_rtt_samples{node=\"link\",side=\"lan\"} "
				     "30\n"));
	assert_non_null(strstr(text, "shaper_node_busy_rtt_seconds{node=\"link\",side=\"lan\","
				     "quantile=\"0.8\"} "));
	assert_null(strstr(text, "subscriber=\"c0\""));
	free(text);
	json_decref(r);
	/* Both lists at once: each subscriber's series once. */
	r = ask_metrics("{\"cmd\":\"subscribers.metrics\",\"args\":{\"top\":3,\"worst\":5}}", 0);
	assert_int_equal(json_array_size(json_object_get(r, "subscribers")), NSUB);
	text = exposition(r);
	assert_int_equal(lines_starting(text, "shaper_subscriber_busy_minutes{subscriber=\"c1\""),
			 1);
	free(text);
	json_decref(r);
	refused(SHAPER_LEVEL_USER, "{\"cmd\":\"subscribers.metrics\",\"args\":{\"worst\":101}}",
		"invalid_argument");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_shards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_del, setup, teardown),
		cmocka_unit_test_setup_teardown(test_change_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nodes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_change, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
