/*
 * Unit tests for the control protocol (src/control/protocol.c) against a
 * fake backend: every command's good path with every result field checked
 * against the fake's canned values, every error with its code and message,
 * and a fixed-seed robustness loop of random and mutated requests.
 *
 * Request JSON in the tests is written with single quotes and turned into
 * double quotes before sending (see sq()); raw byte strings go through
 * call_raw().
 */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "fake_backend.h"
#include "shaper/autorate.h"
#include "shaper/config.h"
#include "shaper/control.h"
#include "shaper/metrics.h"
#include "shaper/rand.h"
#include "shaper/sched.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static struct fake F;
static struct ctl_backend BE;
static json_t *last; /* the last parsed reply; freed by the next call */

static int
setup(void **state)
{
	(void)state;
	fake_init(&F);
	fake_backend(&F, &BE);
	last = NULL;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	json_decref(last);
	last = NULL;
	return 0;
}

/* 'x' -> "x" into a static buffer. */
static const char *
sq(const char *s)
{
	static char buf[8192];
	size_t i;

	for (i = 0; s[i] != '\0' && i < sizeof(buf) - 1; i++)
		buf[i] = s[i] == '\'' ? '"' : s[i];
	buf[i] = '\0';
	assert_true(s[i] == '\0');
	return buf;
}

/*
 * Check that reply is one well-formed reply line and return it parsed, or
 * NULL (with the reason printed) if it is not. Used by the tests and the
 * robustness loop.
 */
static json_t *
parse_reply(const char *reply)
{
	json_error_t e;
	json_t *j, *ok, *id, *err, *code, *msg;
	size_t n;

	if (reply == NULL) {
		print_error("reply is NULL\n");
		return NULL;
	}
	n = strlen(reply);
	if (n < 2 || reply[n - 1] != '\n' || strchr(reply, '\n') != reply + n - 1) {
		print_error("reply is not one line ending in a newline: %s\n", reply);
		return NULL;
	}
	j = json_loadb(reply, n - 1, JSON_REJECT_DUPLICATES, &e);
	if (j == NULL) {
		print_error("reply is not JSON (%s): %s\n", e.text, reply);
		return NULL;
	}
	ok = json_object_get(j, "ok");
	id = json_object_get(j, "id");
	if (!json_is_object(j) || !json_is_boolean(ok) || id == NULL ||
	    !(json_is_integer(id) || json_is_string(id) || json_is_null(id)))
		goto bad;
	if (json_is_true(ok)) {
		if (json_object_get(j, "result") == NULL || json_object_get(j, "error") != NULL ||
		    json_object_size(j) != 3)
			goto bad;
	} else {
		err = json_object_get(j, "error");
		code = json_object_get(err, "code");
		msg = json_object_get(err, "message");
		if (json_object_get(j, "result") != NULL || json_object_size(j) != 3 ||
		    !json_is_object(err) || json_object_size(err) != 2 || !json_is_string(code) ||
		    !is_error_code(json_string_value(code)) || !json_is_string(msg) ||
		    json_string_length(msg) == 0)
			goto bad;
	}
	return j;
bad:
	print_error("reply has the wrong shape: %s", reply);
	json_decref(j);
	return NULL;
}

static json_t *
call_raw(const char *line, size_t len)
{
	char *reply = ctl_handle_request(&BE, line, len);
	json_t *j = parse_reply(reply);

	free(reply);
	assert_non_null(j);
	json_decref(last);
	last = j;
	return j;
}

/* Send a single-quoted request; return the parsed reply (valid until the next call). */
static json_t *
call(const char *single_quoted)
{
	const char *s = sq(single_quoted);

	return call_raw(s, strlen(s));
}

/* A request that must succeed: returns its result. */
static json_t *
ok(const char *single_quoted)
{
	json_t *j = call(single_quoted);

	if (!json_is_true(json_object_get(j, "ok")))
		print_error("expected success for %s: error %s: %s\n", single_quoted,
			    json_string_value(jpath(j, "error.code")),
			    json_string_value(jpath(j, "error.message")));
	assert_true(json_is_true(json_object_get(j, "ok")));
	return json_object_get(j, "result");
}

/* Check an already parsed reply is an error with code and a message containing msg. */
static const char *
check_err(json_t *j, const char *what, const char *code, const char *msg)
{
	const char *c, *m;

	assert_true(json_is_false(json_object_get(j, "ok")));
	c = json_string_value(jpath(j, "error.code"));
	m = json_string_value(jpath(j, "error.message"));
	if (strcmp(c, code) != 0 || (msg != NULL && strstr(m, msg) == NULL))
		print_error("%.200s: expected %s \"%s\", got %s \"%s\"\n", what, code,
			    msg ? msg : "", c, m);
	assert_string_equal(c, code);
	if (msg != NULL)
		assert_non_null(strstr(m, msg));
	return m;
}

/* A request that must fail with code; the message must contain msg (unless NULL). */
static const char *
err(const char *single_quoted, const char *code, const char *msg)
{
	return check_err(call(single_quoted), single_quoted, code, msg);
}

static const char *
err_raw(const char *line, size_t len, const char *code, const char *msg)
{
	return check_err(call_raw(line, len), line, code, msg);
}

static void
assert_int_at(json_t *root, const char *path, long long want)
{
	json_t *v = jpath(root, path);

	if (!json_is_integer(v) || json_integer_value(v) != want)
		print_error("%s: expected %lld\n", path, want);
	assert_true(json_is_integer(v));
	assert_int_equal(json_integer_value(v), want);
}

static void
assert_str_at(json_t *root, const char *path, const char *want)
{
	json_t *v = jpath(root, path);

	if (!json_is_string(v))
		print_error("%s: expected \"%s\", got no string\n", path, want);
	assert_true(json_is_string(v));
	assert_string_equal(json_string_value(v), want);
}

/* The object at path has exactly these keys. */
static void
assert_keys(json_t *root, const char *path, const char *const *keys, size_t n)
{
	json_t *o = path[0] ? jpath(root, path) : root;

	assert_true(json_is_object(o));
	for (size_t i = 0; i < n; i++) {
		if (json_object_get(o, keys[i]) == NULL)
			print_error("%s: missing key %s\n", path, keys[i]);
		assert_non_null(json_object_get(o, keys[i]));
	}
	assert_int_equal(json_object_size(o), n);
}

static void
assert_id(json_t *reply, long long want)
{
	json_t *id = json_object_get(reply, "id");

	assert_true(json_is_integer(id));
	assert_int_equal(json_integer_value(id), want);
}

static void
assert_id_null(json_t *reply)
{
	json_t *id = json_object_get(reply, "id");

	assert_non_null(id);
	assert_true(json_is_null(id));
}

/* ---- good paths ---------------------------------------------------------- */

static void
test_version(void **state)
{
	json_t *r;

	(void)state;
	r = ok("{'id':1,'cmd':'version'}");
	assert_id(last, 1);
	assert_int_at(r, "protocol", CTL_PROTOCOL_VERSION);
	assert_int_at(r, "protocol", 1);
	assert_str_at(r, "version", SHAPER_VERSION);
	assert_str_at(r, "name", "shaperd");
	assert_keys(r, "", (const char *const[]){ "protocol", "version", "name" }, 3);
	/* Empty and null args are the same as none. */
	ok("{'id':2,'cmd':'version','args':{}}");
	assert_id(last, 2);
	ok("{'id':3,'cmd':'version','args':null}");
	assert_id(last, 3);
	/* Key order does not matter. */
	ok("{'args':{},'cmd':'version','id':4}");
	assert_id(last, 4);
	/* Whitespace around is fine. */
	ok(" \t{ 'cmd' : 'version' , 'id' : 5 }\t ");
	assert_id(last, 5);
}

static void
test_id_echo(void **state)
{
	(void)state;
	ok("{'id':42,'cmd':'version'}");
	assert_id(last, 42);
	ok("{'id':0,'cmd':'version'}");
	assert_id(last, 0);
	ok("{'id':-7,'cmd':'version'}");
	assert_id(last, -7);
	ok("{'id':9007199254740993,'cmd':'version'}");
	assert_id(last, 9007199254740993LL);
	ok("{'id':9223372036854775807,'cmd':'version'}");
	assert_id(last, INT64_MAX);

	ok("{'id':'abc-1','cmd':'version'}");
	assert_str_at(last, "id", "abc-1");
	ok("{'id':'','cmd':'version'}");
	assert_str_at(last, "id", "");
	ok("{'id':'\\u00e9t\\u00e9 \\\"q\\\"','cmd':'version'}");
	assert_str_at(last, "id", "\xc3\xa9t\xc3\xa9 \"q\"");

	/* No id: the reply carries "id": null. */
	ok("{'cmd':'version'}");
	assert_id_null(last);

	/* The id is echoed on errors too (once it is known to be valid). */
	err("{'id':77,'cmd':'nope'}", "unknown_command", NULL);
	assert_id(last, 77);
	err("{'id':'s-78','cmd':'stats','args':{'direction':'x'}}", "invalid_argument", NULL);
	assert_str_at(last, "id", "s-78");
	err("{'id':79}", "bad_request", NULL);
	assert_id(last, 79);
}

static const char *const dir_keys[] = {
	"discipline",
	"bandwidth",
	"rx_packets",
	"rx_bytes",
	"tx_packets",
	"tx_bytes",
	"tx_retries",
	"rx_foreign",
	"turn_max_ns",
	"control_max_ns",
	"backlogged_us",
	"backlogged_tx_bytes",
	"tx_port_errors",
	"emulator_qlen",
	"accounting",
	"mbufs_in_use",
	"mbufs",
	"drops",
	"drop_reasons",
	"packets",
	"bytes",
	"backlog",
	"qlen",
	"overlimits",
	"lag_skips",
	"lag_skipped_us",
	"time_ns",
	"sojourn",
	"sparse_sojourn",
	"ecn_mark",
	"memory_used",
	"memory_limit",
	"capacity_estimate",
	"min_network_size",
	"max_network_size",
	"min_adj_size",
	"max_adj_size",
	"avg_hdr_offset",
	"tins",
};

static const char *const tin_keys[] = {
	"name",
	"threshold_rate",
	"sent_bytes",
	"backlog_bytes",
	"target_us",
	"interval_us",
	"peak_delay_us",
	"avg_delay_us",
	"base_delay_us",
	"sent_packets",
	"way_indirect_hits",
	"way_misses",
	"way_collisions",
	"drops",
	"ecn_mark",
	"ack_drops",
	"ect1_packets",
	"step_marks",
	"sparse_flows",
	"bulk_flows",
	"unresponsive_flows",
	"max_pkt_len",
	"flow_quantum",
	"sojourn",
	"sparse_sojourn",
};

static const char *const port_keys[] = {
	"name",       "rx_packets",   "tx_packets", "rx_bytes",  "tx_bytes",
	"rx_missed",  "rx_errors",    "tx_errors",  "rx_nombuf", "link_up",
	"link_speed", "link_changes", "reconnects",
};

static void
check_port(json_t *r, enum shaper_port_role role)
{
	const struct ctl_port_counters *pc = &F.port[role];
	char base[64], p[128];

	snprintf(base, sizeof(base), "ports.%s", shaper_port_name[role]);
	assert_keys(r, base, port_keys, NELEM(port_keys));
#define PORT_FIELD(f)                                                                              \
	do {                                                                                       \
		snprintf(p, sizeof(p), "%s.%s", base, #f);                                         \
		assert_int_at(r, p, (long long)pc->f);                                             \
	} while (0)
	snprintf(p, sizeof(p), "%s.name", base);
	assert_str_at(r, p, pc->name);
	PORT_FIELD(rx_packets);
	PORT_FIELD(tx_packets);
	PORT_FIELD(rx_bytes);
	PORT_FIELD(tx_bytes);
	PORT_FIELD(rx_missed);
	PORT_FIELD(rx_errors);
	PORT_FIELD(tx_errors);
	PORT_FIELD(rx_nombuf);
	PORT_FIELD(link_speed);
	PORT_FIELD(link_changes);
	PORT_FIELD(reconnects);
#undef PORT_FIELD
	snprintf(p, sizeof(p), "%s.link_up", base);
	assert_true(json_is_boolean(jpath(r, p)));
	assert_int_equal(json_is_true(jpath(r, p)), pc->link_up);
}

static void
check_dir_stats(json_t *r, enum shaper_dir d)
{
	const struct ctl_dir_counters *c = &F.c[d];
	const struct sched_stats *st = &F.st[d];
	char base[64], p[160];
	uint64_t total = 0;

	snprintf(base, sizeof(base), "directions.%s", shaper_dir_name[d]);
	assert_keys(r, base, dir_keys, NELEM(dir_keys));
#define AT(fmt, ...) (snprintf(p, sizeof(p), "%s." fmt, base, __VA_ARGS__), p)
	assert_str_at(r, AT("%s", "discipline"), "cake");
	assert_int_at(r, AT("%s", "bandwidth"), (long long)F.params[d].rate);
	assert_int_at(r, AT("%s", "rx_packets"), (long long)c->rx_packets);
	assert_int_at(r, AT("%s", "rx_bytes"), (long long)c->rx_bytes);
	assert_int_at(r, AT("%s", "tx_packets"), (long long)c->tx_packets);
	assert_int_at(r, AT("%s", "tx_bytes"), (long long)c->tx_bytes);
	assert_int_at(r, AT("%s", "tx_retries"), (long long)c->tx_retries);
	assert_int_at(r, AT("%s", "rx_foreign"), (long long)c->rx_foreign);
	assert_int_at(r, AT("%s", "turn_max_ns"), (long long)c->turn_max_ns);
	assert_int_at(r, AT("%s", "control_max_ns"), (long long)c->control_max_ns);
	assert_int_at(r, AT("%s", "backlogged_us"), (long long)(c->backlogged_ns / 1000));
	assert_int_at(r, AT("%s", "backlogged_tx_bytes"), (long long)c->backlogged_tx_bytes);
	/* the output port's failures, shown beside the direction's tx */
	assert_int_at(r, AT("%s", "tx_port_errors"),
		      (long long)F.port[shaper_dir_output(d)].tx_errors);
	assert_int_at(r, AT("%s", "emulator_qlen"), (long long)c->emulator_qlen);
	for (int i = 0; i < SHAPER_DROP_MAX; i++) {
		assert_int_at(r,
			      AT("drop_reasons.%s", shaper_drop_name((enum shaper_drop_reason)i)),
			      (long long)c->dropped[i]);
		total += c->dropped[i];
	}
	assert_int_equal(json_object_size(jpath(r, AT("%s", "drop_reasons"))), SHAPER_DROP_MAX);
	/* The identity's terms, each from the same counters. */
	assert_keys(r, AT("%s", "accounting"),
		    (const char *const[]){ "received", "held_at_reset", "sent", "dropped", "queued",
					   "unaccounted" },
		    6);
	assert_int_at(r, AT("%s", "accounting.received"), (long long)c->rx_packets);
	assert_int_at(r, AT("%s", "accounting.held_at_reset"), (long long)c->held_at_reset);
	assert_int_at(r, AT("%s", "accounting.sent"), (long long)c->tx_packets);
	for (int i = 0; i < SHAPER_DROP_MAX; i++)
		assert_int_at(r,
			      AT("accounting.dropped.%s",
				 shaper_drop_name((enum shaper_drop_reason)i)),
			      (long long)c->dropped[i]);
	assert_keys(r, AT("%s", "accounting.queued"),
		    (const char *const[]){ "scheduler", "swap", "emulator", "tx_pending",
					   "steering" },
		    5);
	assert_int_at(r, AT("%s", "accounting.queued.scheduler"), (long long)c->sched_qlen);
	assert_int_at(r, AT("%s", "accounting.queued.swap"), (long long)c->swap_qlen);
	assert_int_at(r, AT("%s", "accounting.queued.emulator"), (long long)c->emulator_qlen);
	assert_int_at(r, AT("%s", "accounting.queued.tx_pending"), (long long)c->tx_pending);
	assert_int_at(r, AT("%s", "accounting.queued.steering"),
		      (long long)c->steered_out - (long long)c->steered_in);
	assert_int_at(r, AT("%s", "accounting.unaccounted"),
		      (long long)(c->rx_packets + c->held_at_reset - c->tx_packets - total -
				  c->sched_qlen - c->swap_qlen - c->emulator_qlen - c->tx_pending -
				  (c->steered_out - c->steered_in)));
	assert_int_at(r, AT("%s", "mbufs_in_use"), (long long)c->pool_in_use);
	assert_int_at(r, AT("%s", "mbufs"), (long long)c->pool_size);
	assert_int_at(r, AT("%s", "drops"), (long long)total);
	assert_int_at(r, AT("%s", "packets"), (long long)st->dequeued_pkts);
	assert_int_at(r, AT("%s", "bytes"), (long long)st->dequeued_bytes);
	assert_int_at(r, AT("%s", "backlog"), (long long)st->backlog_bytes);
	assert_int_at(r, AT("%s", "qlen"), (long long)st->backlog_pkts);
	assert_int_at(r, AT("%s", "overlimits"), (long long)st->overlimits);
	assert_int_at(r, AT("%s", "lag_skips"), (long long)st->lag_skips);
	assert_int_at(r, AT("%s", "lag_skipped_us"), (long long)(st->lag_skipped_ns / 1000));
	assert_int_at(r, AT("%s", "time_ns"), (long long)c->time_ns);
	/* Only buckets in use, as [lower ns, upper ns, packets]. */
	assert_int_equal(json_array_size(jpath(r, AT("%s", "sojourn"))), 3);
	assert_int_at(r, AT("%s", "sojourn.0.0"), 0);
	assert_int_at(r, AT("%s", "sojourn.0.1"), 1024);
	assert_int_at(r, AT("%s", "sojourn.0.2"), (long long)st->sojourn[0]);
	assert_int_at(r, AT("%s", "sojourn.1.0"), (long long)sched_sojourn_bucket_lo_ns(40));
	assert_int_at(r, AT("%s", "sojourn.1.1"), (long long)sched_sojourn_bucket_lo_ns(41));
	assert_int_at(r, AT("%s", "sojourn.1.2"), 3);
	assert_int_at(r, AT("%s", "sojourn.2.2"), 1);
	/* The sparse part: its own buckets, not the whole histogram's. */
	assert_int_equal(json_array_size(jpath(r, AT("%s", "sparse_sojourn"))), 1);
	assert_int_at(r, AT("%s", "sparse_sojourn.0.0"), (long long)sched_sojourn_bucket_lo_ns(3));
	assert_int_at(r, AT("%s", "sparse_sojourn.0.2"), (long long)st->sparse_sojourn[3]);
	assert_int_at(r, AT("%s", "ecn_mark"), (long long)st->ecn_marked);
	assert_int_at(r, AT("%s", "memory_used"), (long long)st->memory_used);
	assert_int_at(r, AT("%s", "memory_limit"), (long long)st->memory_limit);
	assert_int_at(r, AT("%s", "capacity_estimate"), (long long)st->capacity_estimate);
	assert_int_at(r, AT("%s", "min_network_size"), st->min_network_size);
	assert_int_at(r, AT("%s", "max_network_size"), st->max_network_size);
	assert_int_at(r, AT("%s", "min_adj_size"), st->min_adj_size);
	assert_int_at(r, AT("%s", "max_adj_size"), st->max_adj_size);
	assert_int_at(r, AT("%s", "avg_hdr_offset"), st->avg_hdr_offset);
	assert_int_equal(json_array_size(jpath(r, AT("%s", "tins"))), st->tin_count);
	for (uint32_t t = 0; t < st->tin_count; t++) {
		const struct sched_tin_stats *ti = &st->tins[t];

		assert_keys(r, AT("tins.%u", t), tin_keys, NELEM(tin_keys));
		assert_str_at(r, AT("tins.%u.name", t), ti->name);
#define TIN_FIELD(f) assert_int_at(r, AT("tins.%u.%s", t, #f), (long long)ti->f)
		TIN_FIELD(threshold_rate);
		assert_int_equal(json_array_size(jpath(r, AT("tins.%u.sojourn", t))), 1);
		assert_int_at(r, AT("tins.%u.sojourn.0.0", t),
			      (long long)sched_sojourn_bucket_lo_ns(5 + t));
		assert_int_at(r, AT("tins.%u.sojourn.0.2", t), (long long)ti->sojourn[5 + t]);
		assert_int_equal(json_array_size(jpath(r, AT("tins.%u.sparse_sojourn", t))), 1);
		assert_int_at(r, AT("tins.%u.sparse_sojourn.0.0", t),
			      (long long)sched_sojourn_bucket_lo_ns(2 + t));
		assert_int_at(r, AT("tins.%u.sparse_sojourn.0.2", t),
			      (long long)ti->sparse_sojourn[2 + t]);
		TIN_FIELD(sent_bytes);
		TIN_FIELD(backlog_bytes);
		TIN_FIELD(target_us);
		TIN_FIELD(interval_us);
		TIN_FIELD(peak_delay_us);
		TIN_FIELD(avg_delay_us);
		TIN_FIELD(base_delay_us);
		TIN_FIELD(sent_packets);
		TIN_FIELD(way_indirect_hits);
		TIN_FIELD(way_misses);
		TIN_FIELD(way_collisions);
		TIN_FIELD(drops);
		TIN_FIELD(ecn_mark);
		TIN_FIELD(ack_drops);
		TIN_FIELD(ect1_packets);
		TIN_FIELD(step_marks);
		TIN_FIELD(sparse_flows);
		TIN_FIELD(bulk_flows);
		TIN_FIELD(unresponsive_flows);
		TIN_FIELD(max_pkt_len);
		TIN_FIELD(flow_quantum);
#undef TIN_FIELD
	}
#undef AT
}

static void
test_stats(void **state)
{
	json_t *r;

	(void)state;
	r = ok("{'id':10,'cmd':'stats'}");
	assert_id(last, 10);
	assert_keys(r, "", (const char *const[]){ "ports", "directions", "memory" }, 3);
	assert_int_at(r, "memory.heap_bytes", 4242000);
	assert_keys(r, "ports", (const char *const[]){ "wan", "lan" }, 2);
	assert_keys(r, "directions", (const char *const[]){ "upstream", "downstream" }, 2);
	check_port(r, SHAPER_PORT_WAN);
	check_port(r, SHAPER_PORT_LAN);
	check_dir_stats(r, SHAPER_UP);
	check_dir_stats(r, SHAPER_DOWN);

	/* Spot checks with literal values, in case the fake and the checks agree wrongly. */
	assert_int_at(r, "ports.wan.rx_packets", 2001);
	assert_str_at(r, "ports.lan.name", "net_tap_lan");
	assert_int_at(r, "directions.upstream.rx_packets", 1234);
	assert_int_at(r, "directions.upstream.emulator_qlen", 9);
	/* 1234 + 5 held = 1200 sent + drops + 21 + 3 + 9 + 2 + (40 - 36) queued, short by the rest
	 */
	assert_int_at(r, "directions.upstream.accounting.unaccounted",
		      1234 + 5 - 1200 -
				      (11 * SHAPER_DROP_MAX +
				       SHAPER_DROP_MAX * (SHAPER_DROP_MAX - 1) / 2) -
				      (21 + 3 + 9 + 2 + 40 - 36));
	assert_int_at(r, "directions.downstream.rx_packets", 101234);
	assert_int_at(r, "directions.upstream.bandwidth", 12500000);
	/* dropped[r] = 11 + r: the total is 11 * n + n * (n - 1) / 2 */
	assert_int_at(r, "directions.upstream.drops",
		      11 * SHAPER_DROP_MAX + SHAPER_DROP_MAX * (SHAPER_DROP_MAX - 1) / 2);
	assert_int_at(r, "directions.upstream.drop_reasons.aqm", 11);
	assert_int_at(r, "directions.upstream.drop_reasons.overflow", 12);
	assert_int_at(r, "directions.upstream.drop_reasons.ack_filter", 13);
	assert_int_at(r, "directions.upstream.drop_reasons.emulated_loss", 14);
	assert_int_at(r, "directions.upstream.drop_reasons.emulator_full", 15);
	/* No number that is never measured: frames the port refuses are held, not given up. */
	assert_null(jpath(r, "directions.upstream.drop_reasons.tx_failed"));
	assert_null(jpath(r, "directions.downstream.drop_reasons.tx_failed"));
	assert_int_at(r, "directions.upstream.drop_reasons.shutdown", 11 + SHAPER_DROP_SHUTDOWN);
	assert_int_at(r, "directions.downstream.drop_reasons.aqm", 100011);
	assert_int_at(r, "directions.upstream.packets", 1199);
	assert_int_at(r, "directions.upstream.qlen", 21);
	assert_int_at(r, "directions.upstream.backlog", 31500);
	assert_str_at(r, "directions.upstream.tins.0.name", "Bulk");
	assert_str_at(r, "directions.upstream.tins.1.name", "Best Effort");
	assert_str_at(r, "directions.upstream.tins.2.name", "Voice");
	assert_int_at(r, "directions.upstream.tins.0.threshold_rate", 1000000);
	assert_int_at(r, "directions.upstream.tins.2.threshold_rate", 3000000);
	assert_int_at(r, "directions.upstream.tins.1.sent_packets", 401);
	assert_int_at(r, "directions.upstream.tins.2.drops", 5);
	assert_int_equal(json_array_size(jpath(r, "directions.downstream.tins")), 1);
	assert_int_at(r, "directions.downstream.tins.0.threshold_rate", 1100000);
	assert_int_equal(F.snapshot_calls, 2);
}

static void
test_stats_direction_filter(void **state)
{
	json_t *r;

	(void)state;
	r = ok("{'id':11,'cmd':'stats','args':{'direction':'upstream'}}");
	assert_keys(r, "directions", (const char *const[]){ "upstream" }, 1);
	assert_keys(r, "ports", (const char *const[]){ "wan", "lan" }, 2);
	check_dir_stats(r, SHAPER_UP);
	assert_int_equal(F.snapshot_calls, 1);

	r = ok("{'id':12,'cmd':'stats','args':{'direction':'downstream'}}");
	assert_keys(r, "directions", (const char *const[]){ "downstream" }, 1);
	check_dir_stats(r, SHAPER_DOWN);
	assert_int_equal(F.snapshot_calls, 2);

	/* A direction whose snapshot fails does not matter when filtered out. */
	F.snapshot_rc[SHAPER_UP] = -EAGAIN;
	r = ok("{'cmd':'stats','args':{'direction':'downstream'}}");
	assert_int_at(r, "directions.downstream.rx_packets", 101234);
}

static void
test_stats_port_unavailable(void **state)
{
	json_t *r;

	(void)state;
	/* A port whose counters cannot be read is left out, the rest still answers. */
	F.port_rc[SHAPER_PORT_LAN] = -ENODEV;
	r = ok("{'cmd':'stats'}");
	assert_keys(r, "ports", (const char *const[]){ "wan" }, 1);
	check_port(r, SHAPER_PORT_WAN);
	check_dir_stats(r, SHAPER_UP);
}

static void
test_stats_reset(void **state)
{
	json_t *r;

	(void)state;
	r = ok("{'id':13,'cmd':'stats.reset'}");
	assert_id(last, 13);
	assert_true(json_is_object(r));
	assert_int_equal(json_object_size(r), 0);
	assert_int_equal(F.reset_calls, 1);
	ok("{'cmd':'stats.reset','args':{}}");
	assert_int_equal(F.reset_calls, 2);

	F.reset_rc = -ETIMEDOUT;
	err("{'id':14,'cmd':'stats.reset'}", "busy", "the data plane did not answer; try again");
	assert_id(last, 14);
	assert_int_equal(F.reset_calls, 3);

	/* Arguments are refused before anything is reset. */
	F.reset_rc = 0;
	err("{'cmd':'stats.reset','args':{'direction':'upstream'}}", "invalid_argument",
	    "args.direction: unknown argument");
	assert_int_equal(F.reset_calls, 3);
}

static void
check_flow(json_t *r, enum shaper_dir d, unsigned int i)
{
	char p[96];
	char want[48];

#define AT(f) (snprintf(p, sizeof(p), "%s.%u.%s", shaper_dir_name[d], i, f), p)
	assert_keys(r, (snprintf(p, sizeof(p), "%s.%u", shaper_dir_name[d], i), p),
		    (const char *const[]){ "src", "dst", "sport", "dport", "proto", "tin",
					   "packets", "backlog_bytes", "sojourn_us", "rtt_wan_us",
					   "rtt_lan_us", "shard" },
		    12);
	snprintf(want, sizeof(want), "192.168.%u.%u", (unsigned int)d, i % 250 + 1);
	assert_str_at(r, AT("src"), want);
	snprintf(want, sizeof(want), "2001:db8::%x", i + 1);
	assert_str_at(r, AT("dst"), want);
	assert_int_at(r, AT("sport"), 40000 + i);
	assert_int_at(r, AT("dport"), d == SHAPER_UP ? 443 : 80);
	assert_int_at(r, AT("proto"), i % 2 ? 17 : 6);
	assert_int_at(r, AT("tin"), i % 3);
	assert_int_at(r, AT("packets"), 2000 - (long long)i);
	assert_int_at(r, AT("backlog_bytes"), 150000 - 1000 * (long long)i);
	assert_int_at(r, AT("sojourn_us"), 2500 + i); /* ns / 1000, truncated */
	assert_int_at(r, AT("rtt_wan_us"), i % 2 ? 0 : 40000 + i);
	assert_int_at(r, AT("rtt_lan_us"), i % 2 ? 0 : 1500);
#undef AT
}

static void
test_flows(void **state)
{
	json_t *r;

	(void)state;
	r = ok("{'id':20,'cmd':'flows'}");
	assert_id(last, 20);
	assert_keys(r, "", (const char *const[]){ "upstream", "downstream" }, 2);
	assert_int_equal(F.flows_max, 10); /* the default top */
	assert_int_equal(F.flows_calls, 2);
	assert_int_equal(json_array_size(json_object_get(r, "upstream")), 3);
	assert_int_equal(json_array_size(json_object_get(r, "downstream")), 5);
	for (unsigned int i = 0; i < 3; i++)
		check_flow(r, SHAPER_UP, i);
	for (unsigned int i = 0; i < 5; i++)
		check_flow(r, SHAPER_DOWN, i);
	assert_str_at(r, "upstream.0.src", "192.168.0.1");
	assert_int_at(r, "downstream.4.sojourn_us", 2504);

	r = ok("{'id':21,'cmd':'flows','args':{'direction':'downstream','top':2}}");
	assert_keys(r, "", (const char *const[]){ "downstream" }, 1);
	assert_int_equal(F.flows_max, 2);
	assert_int_equal(json_array_size(json_object_get(r, "downstream")), 2);
	check_flow(r, SHAPER_DOWN, 1);

	r = ok("{'cmd':'flows','args':{'direction':'upstream','top':1}}");
	assert_keys(r, "", (const char *const[]){ "upstream" }, 1);
	assert_int_equal(F.flows_max, 1);
	assert_int_equal(json_array_size(json_object_get(r, "upstream")), 1);

	/* The largest top; the backend fills all of it. */
	F.n_flows[SHAPER_UP] = FAKE_MAX_FLOWS;
	r = ok("{'cmd':'flows','args':{'direction':'upstream','top':1000}}");
	assert_int_equal(F.flows_max, 1000);
	assert_int_equal(json_array_size(json_object_get(r, "upstream")), 1000);
	check_flow(r, SHAPER_UP, 999);

	/* No flows is an empty array, not an absent key. */
	F.n_flows[SHAPER_DOWN] = 0;
	r = ok("{'cmd':'flows','args':{'direction':'downstream'}}");
	assert_true(json_is_array(json_object_get(r, "downstream")));
	assert_int_equal(json_array_size(json_object_get(r, "downstream")), 0);
}

static void
test_config_get(void **state)
{
	json_t *r, *want;

	(void)state;
	r = ok("{'id':30,'cmd':'config.get'}");
	assert_id(last, 30);
	assert_keys(r, "", (const char *const[]){ "upstream", "downstream" }, 2);
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		want = shaper_config_direction_to_json(&F.params[d]);
		assert_true(json_equal(json_object_get(r, shaper_dir_name[d]), want));
		json_decref(want);
	}
	assert_str_at(r, "upstream.bandwidth", "100Mbit");
	assert_str_at(r, "downstream.bandwidth", "280Mbit");
	assert_str_at(r, "upstream.discipline", "cake");
	assert_str_at(r, "upstream.diffserv", "diffserv3");
	assert_str_at(r, "downstream.diffserv", "diffserv4");
	assert_str_at(r, "downstream.rtt", "100ms");
	assert_str_at(r, "downstream.target", "5ms");

	r = ok("{'cmd':'config.get','args':{'direction':'downstream'}}");
	assert_keys(r, "", (const char *const[]){ "downstream" }, 1);
	assert_str_at(r, "downstream.bandwidth", "280Mbit");
	r = ok("{'cmd':'config.get','args':{'direction':'upstream'}}");
	assert_keys(r, "", (const char *const[]){ "upstream" }, 1);
	assert_str_at(r, "upstream.bandwidth", "100Mbit");
	assert_int_equal(F.apply_calls, 0);
}

static void
test_config_set(void **state)
{
	struct sched_params before = F.params[SHAPER_DOWN];
	json_t *r;

	(void)state;
	r = ok("{'id':31,'cmd':'config.set','args':{'direction':'downstream',"
	       "'settings':{'bandwidth':'200mbit'}}}");
	assert_id(last, 31);
	assert_int_equal(F.apply_calls, 1);
	assert_int_equal(F.apply_dir, SHAPER_DOWN);
	assert_int_equal(F.applied.rate, 25000000);
	/* Everything else is carried over from the current settings. */
	before.rate = 25000000;
	assert_memory_equal(&F.applied, &before, sizeof(before));
	assert_keys(r, "", (const char *const[]){ "downstream" }, 1);
	assert_str_at(r, "downstream.bandwidth", "200Mbit");
	assert_str_at(r, "downstream.diffserv", "diffserv4");
	assert_str_at(r, "downstream.discipline", "cake");

	/* And config.get now shows it (the fake stores what was applied). */
	r = ok("{'cmd':'config.get'}");
	assert_str_at(r, "downstream.bandwidth", "200Mbit");
	assert_str_at(r, "upstream.bandwidth", "100Mbit");
}

/*
 * The WAN emulator's path changes live (a path step on a test bed): delay,
 * jitter and loss; seed and limit are fixed at start; a direction without
 * an emulator says so; a refused scheduler key leaves the emulator alone.
 */
static void
test_config_set_emulate(void **state)
{
	json_t *r;

	(void)state;
	err("{'cmd':'config.set','args':{'direction':'upstream','settings':"
	    "{'emulate':{'delay':'45ms'}}}}",
	    "invalid_argument", "upstream.emulate: this direction has no emulator to change");
	assert_int_equal(F.emu_set_calls + F.apply_calls, 0);
	F.has_emu[SHAPER_UP] = true;
	F.emu[SHAPER_UP] = (struct shaper_emulate_config){ .delay_ns = 20000000,
							   .seed = 3,
							   .limit = 10240 };
	r = ok("{'cmd':'config.set','args':{'direction':'upstream','settings':"
	       "{'emulate':{'delay':'45ms','loss':0.5}}}}");
	assert_int_equal(F.emu_set_calls, 1);
	assert_int_equal(F.apply_calls, 0); /* nothing for the scheduler */
	assert_int_equal(F.emu[SHAPER_UP].delay_ns, 45000000);
	assert_int_equal(F.emu[SHAPER_UP].loss_ppm, 5000);
	assert_int_equal(F.emu[SHAPER_UP].jitter_ns, 0);
	assert_int_equal(F.emu[SHAPER_UP].limit, 10240);
	assert_str_at(r, "upstream.emulate.delay", "45ms");
	assert_str_at(r, "upstream.bandwidth", "100Mbit");
	r = ok("{'cmd':'config.get','args':{'direction':'upstream'}}");
	assert_str_at(r, "upstream.emulate.delay", "45ms");
	r = ok("{'cmd':'config.get','args':{'direction':'downstream'}}");
	assert_null(jpath(r, "downstream.emulate"));
	err("{'cmd':'config.set','args':{'direction':'upstream','settings':"
	    "{'emulate':{'limit':100}}}}",
	    "invalid_argument", "upstream.emulate.limit: fixed at start");
	err("{'cmd':'config.set','args':{'direction':'upstream','settings':"
	    "{'emulate':{'delay':'forever'}}}}",
	    "invalid_argument", "upstream.emulate.delay:");
	assert_int_equal(F.emu_set_calls, 1);
	/* Both at once: the scheduler first; its refusal leaves the path as it was. */
	F.apply_rc = -EINVAL;
	snprintf(F.apply_msg, sizeof(F.apply_msg), "no");
	err("{'cmd':'config.set','args':{'direction':'upstream','settings':"
	    "{'bandwidth':'20mbit','emulate':{'delay':'10ms'}}}}",
	    "invalid_argument", "upstream: no");
	assert_int_equal(F.emu_set_calls, 1);
	assert_int_equal(F.emu[SHAPER_UP].delay_ns, 45000000);
	F.apply_rc = 0;
	ok("{'cmd':'config.set','args':{'direction':'upstream','settings':"
	   "{'bandwidth':'20mbit','emulate':{'delay':'10ms'}}}}");
	assert_int_equal(F.applied.rate, 2500000);
	assert_int_equal(F.emu[SHAPER_UP].delay_ns, 10000000);
}

static void
test_config_set_several(void **state)
{
	json_t *r;

	(void)state;
	r = ok("{'id':'up','cmd':'config.set','args':{'settings':{'bandwidth':'20mbit',"
	       "'diffserv':'besteffort','rtt':'50ms','ack_filter':'ack-filter-aggressive','wash':true},"
	       "'direction':'upstream'}}");
	assert_str_at(last, "id", "up");
	assert_int_equal(F.apply_calls, 1);
	assert_int_equal(F.apply_dir, SHAPER_UP);
	assert_int_equal(F.applied.rate, 2500000);
	assert_int_equal(F.applied.diffserv, SCHED_BESTEFFORT);
	assert_int_equal(F.applied.rtt_us, 50000);
	assert_int_equal(F.applied.ack_filter, SCHED_ACK_FILTER_AGGRESSIVE);
	assert_true(F.applied.wash);
	assert_true(F.applied.upstream);
	assert_keys(r, "", (const char *const[]){ "upstream" }, 1);
	assert_str_at(r, "upstream.bandwidth", "20Mbit");
	assert_str_at(r, "upstream.diffserv", "besteffort");
	assert_str_at(r, "upstream.rtt", "50ms");
	assert_str_at(r, "upstream.ack_filter", "ack-filter-aggressive");
	assert_true(json_is_true(jpath(r, "upstream.wash")));

	/* A discipline change starts from that discipline's defaults, keeping the rate. */
	r = ok("{'cmd':'config.set','args':{'direction':'downstream',"
	       "'settings':{'discipline':'fq_codel','limit':500}}}");
	assert_int_equal(F.apply_dir, SHAPER_DOWN);
	assert_int_equal(F.applied.discipline, SCHED_DISC_FQ_CODEL);
	assert_int_equal(F.applied.fqc_limit, 500);
	assert_int_equal(F.applied.rate, 35000000);
	assert_str_at(r, "downstream.discipline", "fq_codel");
	assert_int_at(r, "downstream.limit", 500);
	assert_str_at(r, "downstream.bandwidth", "280Mbit");

	/* Hosts per VLAN, for a trunk: a live change like an isolation change. */
	r = ok("{'cmd':'config.set','args':{'direction':'upstream','settings':"
	       "{'vlan_hosts':true}}}");
	assert_int_equal(F.apply_dir, SHAPER_UP);
	assert_true(F.applied.vlan_hosts);
	assert_true(json_is_true(jpath(r, "upstream.vlan_hosts")));
	r = ok("{'cmd':'config.get'}");
	assert_true(json_is_true(jpath(r, "upstream.vlan_hosts")));
	/* downstream now runs fq_codel, which has no hosts to count */
	assert_null(jpath(r, "downstream.vlan_hosts"));

	/* L4S is switched live, its step with it; fq_codel has no nqb. */
	r = ok("{'cmd':'config.set','args':{'direction':'upstream','settings':"
	       "{'l4s':true,'l4s_step':'300us','nqb':true}}}");
	assert_int_equal(F.apply_dir, SHAPER_UP);
	assert_true(F.applied.l4s);
	assert_int_equal(F.applied.l4s_step_us, 300);
	assert_true(F.applied.nqb);
	assert_true(json_is_true(jpath(r, "upstream.l4s")));
	assert_str_at(r, "upstream.l4s_step", "300us");
	assert_true(json_is_true(jpath(r, "upstream.nqb")));
	err("{'cmd':'config.set','args':{'direction':'downstream','settings':{'nqb':true}}}",
	    "invalid_argument", "downstream.nqb: does not apply to discipline \"fq_codel\"");
	r = ok("{'cmd':'config.set','args':{'direction':'downstream','settings':"
	       "{'l4s':true,'l4s_step':'1ms'}}}");
	assert_int_equal(F.apply_dir, SHAPER_DOWN);
	assert_true(F.applied.l4s);
	assert_int_equal(F.applied.l4s_step_us, 1000);
	assert_true(json_is_true(jpath(r, "downstream.l4s")));
	assert_str_at(r, "downstream.l4s_step", "1ms");

	/* "unlimited" is a rate of 0. */
	r = ok("{'cmd':'config.set','args':{'direction':'upstream','settings':"
	       "{'bandwidth':'unlimited'}}}");
	assert_int_equal(F.applied.rate, 0);
	assert_str_at(r, "upstream.bandwidth", "unlimited");
}

/* ---- bad paths ----------------------------------------------------------- */

static void
test_bad_json(void **state)
{
	static const struct {
		const char *s;
		size_t len; /* 0 = strlen */
	} cases[] = {
		{ "{", 0 },
		{ "{'id':1,", 0 },
		{ "{'id':1,'cmd':'version'", 0 },
		{ "not json", 0 },
		{ "{id:1,cmd:version}", 0 },
		{ "[1,2", 0 },
		{ "{'id':1,'cmd':'version'} trailing", 0 },
		{ "{'id':1,'cmd':'version'}{'id':2}", 0 },
		{ "{'cmd':'version','cmd':'stats'}", 0 }, /* duplicate key */
		{ "{'cmd':'stats','args':{'direction':'upstream','direction':'upstream'}}", 0 },
		{ "{'cmd':'version','id':1,}", 0 },                      /* trailing comma */
		{ "{'cmd':'\\uZZZZ'}", 0 },                              /* bad escape */
		{ "{'cmd':'\\u0000'}", 0 },                              /* NUL in a string */
		{ "{'id':99999999999999999999999,'cmd':'version'}", 0 }, /* integer too big */
		{ "{'id':1,'cmd':'version','args':{'x':1e999}}", 0 },    /* real overflow */
		{ "1", 0 }, /* not an object or array */
		{ "'version'", 0 },
		{ "null", 0 },
		{ "true", 0 },
		{ " ", 0 },
		{ "{'cmd':'ver\tsion'}", 0 }, /* raw control character */
	};
	char buf[256];

	(void)state;
	for (size_t i = 0; i < NELEM(cases); i++) {
		const char *m;

		snprintf(buf, sizeof(buf), "%s", sq(cases[i].s));
		m = err_raw(buf, strlen(buf), "bad_json", "column ");
		assert_true(strncmp(m, "column ", 7) == 0);
		assert_id_null(last);
	}
	/* An empty request. */
	err_raw("", 0, "bad_json", "column ");
	/* Invalid UTF-8. */
	err_raw("{\"cmd\":\"\xff\xfe\"}", 12, "bad_json", "column ");
	err_raw("{\"cmd\":\"\xc3\"}", 10, "bad_json", "column ");
	/* A raw NUL byte inside the line (len covers it). */
	err_raw("{\"cmd\":\"version\"}\0{}", 20, "bad_json", "column ");
	err_raw("{\"cmd\":\"ver\0sion\"}", 18, "bad_json", "column ");
	/* Only len bytes are read: a valid prefix of a longer buffer works. */
	call_raw("{\"cmd\":\"version\"}garbage", 17);
	assert_true(json_is_true(json_object_get(last, "ok")));
}

static void
test_bad_request(void **state)
{
	(void)state;
	/* not an object */
	err("[]", "bad_request", "a request is a JSON object");
	assert_id_null(last);
	err("[{'id':1,'cmd':'version'}]", "bad_request", "a request is a JSON object");
	assert_id_null(last);

	/* missing cmd / cmd not a string; the id is still echoed */
	err("{}", "bad_request", "cmd: missing or not a string");
	err("{'id':3}", "bad_request", "cmd: missing or not a string");
	assert_id(last, 3);
	err("{'id':4,'cmd':5}", "bad_request", "cmd: missing or not a string");
	assert_id(last, 4);
	err("{'id':5,'cmd':null}", "bad_request", "cmd: missing or not a string");
	err("{'id':6,'cmd':['version']}", "bad_request", "cmd: missing or not a string");
	err("{'id':7,'cmd':{'name':'version'}}", "bad_request", "cmd: missing or not a string");
	err("{'id':8,'cmd':true}", "bad_request", "cmd: missing or not a string");
	err("{'id':8,'args':{}}", "bad_request", "cmd: missing or not a string");

	/* id of the wrong type: refused, and the reply's id is null */
	err("{'id':1.5,'cmd':'version'}", "bad_request", "id: expected an integer or a string");
	assert_id_null(last);
	err("{'id':true,'cmd':'version'}", "bad_request", "id: expected an integer or a string");
	assert_id_null(last);
	err("{'id':[1],'cmd':'version'}", "bad_request", "id: expected an integer or a string");
	err("{'id':{'a':1},'cmd':'version'}", "bad_request", "id: expected an integer or a string");
	err("{'id':null,'cmd':'version'}", "bad_request", "id: expected an integer or a string");
	assert_id_null(last);
	/* a bad id wins over a missing cmd */
	err("{'id':2.0}", "bad_request", "id: expected an integer or a string");

	/* args not an object */
	err("{'id':9,'cmd':'version','args':[]}", "bad_request", "args: expected an object");
	assert_id(last, 9);
	err("{'id':9,'cmd':'stats','args':'upstream'}", "bad_request", "args: expected an object");
	err("{'id':9,'cmd':'stats','args':1}", "bad_request", "args: expected an object");
	err("{'id':9,'cmd':'stats','args':false}", "bad_request", "args: expected an object");

	/* unknown top-level fields */
	err("{'id':10,'cmd':'version','foo':1}", "bad_request",
	    "foo: unknown field (known: id, cmd, args)");
	assert_id(last, 10);
	err("{'id':10,'cmd':'version','arg':{}}", "bad_request", "arg: unknown field");
	err("{'id':10,'cmd':'version','ID':1}", "bad_request", "ID: unknown field");
	err("{'id':10,'cmd':'version','':1}", "bad_request", ": unknown field");
	/* nothing was asked of the backend */
	assert_int_equal(F.snapshot_calls + F.apply_calls + F.reset_calls + F.flows_calls, 0);
}

static void
test_unknown_command(void **state)
{
	const char *m;

	(void)state;
	m = err("{'id':1,'cmd':'reboot'}", "unknown_command",
		"\"reboot\" is not a command (version, stats, stats.reset, flows, config.get, "
		"config.set, config.reload, config.save, subscribers.list, subscribers.get, "
		"subscribers.metrics, subscribers.set, subscribers.del, nodes.set, nodes.del)");
	assert_string_equal(m, "\"reboot\" is not a command (version, stats, stats.reset, flows, "
			       "config.get, config.set, config.reload, config.save, "
			       "subscribers.list, subscribers.get, subscribers.metrics, "
			       "subscribers.set, subscribers.del, nodes.set, nodes.del)");
	assert_id(last, 1);
	err("{'cmd':'Version'}", "unknown_command", "\"Version\" is not a command");
	err("{'cmd':''}", "unknown_command", "\"\" is not a command");
	err("{'cmd':'stats '}", "unknown_command", "\"stats \" is not a command");
	err("{'cmd':'stats.'}", "unknown_command", "\"stats.\" is not a command");
	err("{'cmd':'config'}", "unknown_command", "\"config\" is not a command");
	err("{'cmd':'config.set.x'}", "unknown_command", NULL);
	err("{'cmd':'\\u00e9'}", "unknown_command", "\"\xc3\xa9\" is not a command");
}

static void
test_unknown_argument(void **state)
{
	(void)state;
	err("{'id':2,'cmd':'version','args':{'x':1}}", "invalid_argument",
	    "args.x: unknown argument");
	assert_id(last, 2);
	err("{'cmd':'stats','args':{'top':1}}", "invalid_argument", "args.top: unknown argument");
	err("{'cmd':'stats','args':{'direction':'upstream','verbose':true}}", "invalid_argument",
	    "args.verbose: unknown argument");
	err("{'cmd':'config.get','args':{'settings':{}}}", "invalid_argument",
	    "args.settings: unknown argument");
	err("{'cmd':'flows','args':{'dir':'upstream'}}", "invalid_argument",
	    "args.dir: unknown argument");
	err("{'cmd':'config.set','args':{'direction':'upstream','settings':{'bandwidth':'1mbit'},"
	    "'force':true}}",
	    "invalid_argument", "args.force: unknown argument");
	assert_int_equal(F.apply_calls, 0);
	assert_int_equal(F.snapshot_calls + F.flows_calls, 0);
}

static void
test_bad_direction(void **state)
{
	static const char *const cmds[] = { "stats", "flows", "config.get", "config.set" };
	char req[256];

	(void)state;
	for (size_t i = 0; i < NELEM(cmds); i++) {
		snprintf(req, sizeof(req), "{'id':5,'cmd':'%s','args':{'direction':1}}", cmds[i]);
		err(req, "invalid_argument",
		    "args.direction: expected \"upstream\" or \"downstream\"");
		assert_id(last, 5);
		snprintf(req, sizeof(req), "{'cmd':'%s','args':{'direction':['upstream']}}",
			 cmds[i]);
		err(req, "invalid_argument",
		    "args.direction: expected \"upstream\" or \"downstream\"");
		snprintf(req, sizeof(req), "{'cmd':'%s','args':{'direction':null}}", cmds[i]);
		err(req, "invalid_argument",
		    "args.direction: expected \"upstream\" or \"downstream\"");
		snprintf(req, sizeof(req), "{'cmd':'%s','args':{'direction':'sideways'}}", cmds[i]);
		err(req, "invalid_argument",
		    "args.direction: \"sideways\" is not a direction (upstream or downstream)");
		snprintf(req, sizeof(req), "{'cmd':'%s','args':{'direction':'Upstream'}}", cmds[i]);
		err(req, "invalid_argument", "args.direction: \"Upstream\" is not a direction");
		snprintf(req, sizeof(req), "{'cmd':'%s','args':{'direction':''}}", cmds[i]);
		err(req, "invalid_argument", "args.direction: \"\" is not a direction");
		snprintf(req, sizeof(req), "{'cmd':'%s','args':{'direction':'up'}}", cmds[i]);
		err(req, "invalid_argument", "args.direction: \"up\" is not a direction");
	}
	assert_int_equal(F.apply_calls + F.snapshot_calls + F.flows_calls, 0);
}

static void
test_config_set_bad(void **state)
{
	const char *m;

	(void)state;
	/* direction is required */
	err("{'id':6,'cmd':'config.set','args':{'settings':{'bandwidth':'200mbit'}}}",
	    "invalid_argument", "args.direction: missing (upstream or downstream)");
	assert_id(last, 6);
	err("{'cmd':'config.set'}", "invalid_argument",
	    "args.direction: missing (upstream or downstream)");
	err("{'cmd':'config.set','args':{}}", "invalid_argument", "args.direction: missing");

	/* settings: missing, empty, not an object */
	err("{'cmd':'config.set','args':{'direction':'downstream'}}", "invalid_argument",
	    "args.settings: expected an object of settings");
	err("{'cmd':'config.set','args':{'direction':'downstream','settings':{}}}",
	    "invalid_argument", "args.settings: expected an object of settings");
	err("{'cmd':'config.set','args':{'direction':'downstream','settings':'200mbit'}}",
	    "invalid_argument", "args.settings: expected an object of settings");
	err("{'cmd':'config.set','args':{'direction':'downstream','settings':[]}}",
	    "invalid_argument", "args.settings: expected an object of settings");
	err("{'cmd':'config.set','args':{'direction':'downstream','settings':null}}",
	    "invalid_argument", "args.settings: expected an object of settings");

	/* bad values: the config parser's message, with the JSON path */
	m = err("{'id':7,'cmd':'config.set','args':{'direction':'downstream',"
		"'settings':{'bandwidth':'280mbps'}}}",
		"invalid_argument",
		"downstream.bandwidth: \"280mbps\" is not a rate (try \"280mbit\")");
	assert_true(strncmp(m, "downstream.bandwidth:", 21) == 0);
	assert_id(last, 7);
	err("{'cmd':'config.set','args':{'direction':'upstream','settings':{'bandwidth':'280mbps'}}}",
	    "invalid_argument", "upstream.bandwidth: \"280mbps\" is not a rate (try \"280mbit\")");
	err("{'cmd':'config.set','args':{'direction':'downstream','settings':{'bandwidth':200}}}",
	    "invalid_argument", "downstream.bandwidth: expected a rate as a string");
	err("{'cmd':'config.set','args':{'direction':'downstream','settings':{'bandwidth':'200'}}}",
	    "invalid_argument", "downstream.bandwidth: \"200\" has no unit");
	err("{'cmd':'config.set','args':{'direction':'downstream','settings':{'bandwith':'1mbit'}}}",
	    "invalid_argument", "downstream.bandwith: unknown key");
	err("{'cmd':'config.set','args':{'direction':'downstream','settings':{'limit':100}}}",
	    "invalid_argument", "downstream.limit: does not apply to discipline \"cake\"");
	err("{'cmd':'config.set','args':{'direction':'downstream','settings':{'emulate':{}}}}",
	    "invalid_argument", "downstream.emulate: this direction has no emulator");
	err("{'cmd':'config.set','args':{'direction':'downstream','settings':{'vlan_hosts':'on'}}}",
	    "invalid_argument", "downstream.vlan_hosts: expected true or false, got a string");
	err("{'cmd':'config.set','args':{'direction':'downstream','settings':"
	    "{'diffserv':'diffserv5'}}}",
	    "invalid_argument",
	    "downstream.diffserv: \"diffserv5\" is not a valid diffserv mode (one of: diffserv3, "
	    "diffserv4, diffserv8, besteffort, precedence)");
	/* one bad key spoils the whole set: nothing is applied */
	err("{'cmd':'config.set','args':{'direction':'downstream','settings':"
	    "{'bandwidth':'100mbit','mtu':5}}}",
	    "invalid_argument", "downstream.mtu: 5 is out of range 68..65535");
	assert_int_equal(F.apply_calls, 0);
}

static void
test_config_set_apply_fails(void **state)
{
	struct sched_params before = F.params[SHAPER_DOWN];
	const char *m;
	json_t *r;

	(void)state;
	F.apply_rc = -EINVAL;
	snprintf(F.apply_msg, sizeof(F.apply_msg), "worker refused the rate: queue is draining");
	m = err("{'id':8,'cmd':'config.set','args':{'direction':'downstream',"
		"'settings':{'bandwidth':'200mbit'}}}",
		"invalid_argument", "worker refused the rate: queue is draining");
	assert_string_equal(m, "downstream: worker refused the rate: queue is draining");
	assert_id(last, 8);
	assert_int_equal(F.apply_calls, 1);
	assert_int_equal(F.applied.rate, 25000000); /* it was asked */
	/* the old settings are untouched */
	assert_memory_equal(&F.params[SHAPER_DOWN], &before, sizeof(before));
	F.apply_rc = 0;
	r = ok("{'cmd':'config.get','args':{'direction':'downstream'}}");
	assert_str_at(r, "downstream.bandwidth", "280Mbit");

	/* Anything but -EINVAL (the worker did not answer in time...) is worth a retry. */
	F.apply_rc = -ETIMEDOUT;
	snprintf(F.apply_msg, sizeof(F.apply_msg), "the worker did not answer");
	m = err("{'id':9,'cmd':'config.set','args':{'direction':'upstream',"
		"'settings':{'bandwidth':'5mbit'}}}",
		"busy", NULL);
	assert_string_equal(m, "upstream: the worker did not answer");
	assert_int_equal(F.apply_calls, 2);
	assert_int_equal(F.apply_dir, SHAPER_UP);
	assert_int_equal(F.params[SHAPER_UP].rate, 12500000);
}

static void
test_flows_bad_top(void **state)
{
	static const char *const tops[] = {
		"0",         "1001", "'x'",  "-1",   "1.5",
		"true",      "null", "'10'", "[10]", "9223372036854775807",
		"4294967297"
	};
	char req[256];

	(void)state;
	for (size_t i = 0; i < NELEM(tops); i++) {
		snprintf(req, sizeof(req), "{'id':9,'cmd':'flows','args':{'top':%s}}", tops[i]);
		err(req, "invalid_argument", "args.top: expected an integer 1..1000");
		assert_id(last, 9);
	}
	assert_int_equal(F.flows_calls, 0);
}

static void
test_backend_busy(void **state)
{
	(void)state;
	F.snapshot_rc[SHAPER_UP] = -EAGAIN;
	err("{'id':40,'cmd':'stats'}", "busy", "upstream: no statistics snapshot available yet");
	assert_id(last, 40);
	err("{'cmd':'stats','args':{'direction':'upstream'}}", "busy",
	    "upstream: no statistics snapshot available yet");
	err("{'cmd':'config.get'}", "busy", "upstream: no snapshot available yet");
	err("{'cmd':'config.get','args':{'direction':'upstream'}}", "busy",
	    "upstream: no snapshot available yet");
	err("{'cmd':'config.set','args':{'direction':'upstream','settings':{'bandwidth':'1mbit'}}}",
	    "busy", "upstream: no snapshot available yet");
	assert_int_equal(F.apply_calls, 0);

	F.snapshot_rc[SHAPER_UP] = 0;
	F.snapshot_rc[SHAPER_DOWN] = -ETIMEDOUT;
	err("{'cmd':'stats'}", "busy", "downstream: no statistics snapshot available yet");
	err("{'cmd':'config.get'}", "busy", "downstream: no snapshot available yet");
	ok("{'cmd':'config.get','args':{'direction':'upstream'}}");

	F.flows_rc = -EAGAIN;
	err("{'cmd':'flows'}", "busy", "upstream: flows unavailable: ");
	err("{'cmd':'flows','args':{'direction':'downstream'}}", "busy",
	    "downstream: flows unavailable: ");
	/* version needs no backend */
	ok("{'cmd':'version'}");
}

static void
test_too_large(void **state)
{
	size_t n = CTL_MAX_LINE;
	char *big = malloc(n + 1);
	const char *req = "{\"id\":1,\"cmd\":\"version\"}";
	char want[64];
	const char *m;

	(void)state;
	assert_non_null(big);
	/* The largest request that fits: CTL_MAX_LINE - 1 bytes plus the newline. */
	memset(big, ' ', n);
	memcpy(big, req, strlen(req));
	big[n] = '\0';
	call_raw(big, n - 1);
	assert_true(json_is_true(json_object_get(last, "ok")));
	assert_id(last, 1);
	/* One byte more is too large, without being parsed (the id is not seen). */
	m = err_raw(big, n, "too_large", "request longer than ");
	snprintf(want, sizeof(want), "request longer than %d bytes", CTL_MAX_LINE - 1);
	assert_string_equal(m, want);
	assert_id_null(last);
	m = err_raw(big, n + 1, "too_large", want);
	free(big);
}

static void
test_error_reply(void **state)
{
	char *s;
	json_t *j;

	(void)state;
	/* The reply for an error with no request behind it (oversize line, too many clients). */
	s = ctl_error_reply(CTL_ERR_BUSY, "too many clients; try again");
	j = parse_reply(s);
	free(s);
	assert_non_null(j);
	assert_true(json_is_false(json_object_get(j, "ok")));
	assert_true(json_is_null(json_object_get(j, "id")));
	assert_string_equal(json_string_value(jpath(j, "error.code")), "busy");
	assert_string_equal(json_string_value(jpath(j, "error.message")),
			    "too many clients; try again");
	json_decref(j);
	/* Quotes, backslashes and UTF-8 in the message are escaped, not passed raw. */
	s = ctl_error_reply(CTL_ERR_TOO_LARGE, "a \"quoted\" \\ line\tw\xc3\xa9");
	j = parse_reply(s);
	free(s);
	assert_non_null(j);
	assert_string_equal(json_string_value(jpath(j, "error.code")), "too_large");
	assert_string_equal(json_string_value(jpath(j, "error.message")),
			    "a \"quoted\" \\ line\tw\xc3\xa9");
	json_decref(j);
}

/* ---- regressions of fixed bugs ------------------------------------------- */

/*
 * Fixed bugs (protocol.c fail()/finish(), config.c's path buffers): a
 * message that quotes user text is cut to SHAPER_ERR_LEN (512) or a 160-byte
 * path buffer, which could split a multi-byte UTF-8 character; json_pack("s")
 * refused the invalid UTF-8 and the client got no reply, and later
 * "internal" / "the reply could not be encoded" (a cut in the
 * middle of the message, from config.c's path, which utf8_trim() cannot
 * mend). Expected: the error the request deserves, naming what was wrong.
 */
static void
test_bug_utf8_cut_in_message(void **state)
{
	/* "€" is 3 bytes, so one of three prefix lengths always splits it. */
	static const char *const codes[] = { "unknown_command",  "bad_request",
					     "invalid_argument", "invalid_argument",
					     "invalid_argument", "invalid_argument" };
	static const char *const templates[] = {
		"{\"id\":1,\"cmd\":\"%s\"}",                          /* unknown_command */
		"{\"id\":1,\"cmd\":\"version\",\"%s\":1}",            /* unknown field */
		"{\"id\":1,\"cmd\":\"version\",\"args\":{\"%s\":1}}", /* unknown argument */
		"{\"id\":1,\"cmd\":\"stats\",\"args\":{\"direction\":\"%s\"}}",
		("{\"id\":1,\"cmd\":\"config.set\",\"args\":{\"direction\":\"upstream\","
		 "\"settings\":{\"%s\":1}}}"), /* config.c's 160-byte path */
		/* the subscriber commands' unknown argument */
		"{\"id\":1,\"cmd\":\"subscribers.list\",\"args\":{\"%s\":1}}",
	};
	char name[1024], req[2048];
	unsigned int failures = 0;

	(void)state;
	for (size_t t = 0; t < NELEM(templates); t++)
		for (int prefix = 0; prefix < 3; prefix++) {
			size_t k = 0;
			char *reply;
			json_t *j;

			for (int i = 0; i < prefix; i++)
				name[k++] = 'x';
			for (int i = 0; i < 200; i++) {
				memcpy(name + k, "\xe2\x82\xac", 3);
				k += 3;
			}
			name[k] = '\0';
			snprintf(req, sizeof(req), templates[t], name);
			reply = ctl_handle_request(&BE, req, strlen(req));
			if (reply == NULL)
				print_error("NULL reply for template %zu prefix %d\n", t, prefix);
			j = parse_reply(reply);
			free(reply);
			if (j == NULL || !json_is_false(json_object_get(j, "ok"))) {
				failures++;
			} else if (strcmp(json_string_value(jpath(j, "error.code")), codes[t]) !=
				   0) {
				print_error("template %zu prefix %d: %s: %s\n", t, prefix,
					    json_string_value(jpath(j, "error.code")),
					    json_string_value(jpath(j, "error.message")));
				failures++;
			}
			json_decref(j);
		}
	assert_int_equal(failures, 0);
	/* An unknown argument too long to quote whole is cut at a character, not its tail. */
	snprintf(req, sizeof(req), templates[5], name);
	err_raw(req, strlen(req), "invalid_argument", ": unknown argument");
	/* The key is named: the message starts with as much of the path as fits. */
	memset(name, 'k', 149);
	memcpy(name + 149, "\xc3\xa9tail", 7); /* "é" straddles byte 159 of the path */
	snprintf(req, sizeof(req), templates[4], name);
	err_raw(req, strlen(req), "invalid_argument", ": unknown key");
	assert_true(strncmp(json_string_value(jpath(last, "error.message")), "upstream.kkkk", 13) ==
		    0);
}

/*
 * Found by tests/fuzz/fuzz_config: jansson's syntax error quotes the bad
 * token cut after a byte, here inside "€" and before a closing quote, so
 * the message had invalid UTF-8 in its middle; the reply could not be
 * encoded and the client got "internal" instead of "bad_json".
 */
static void
test_bug_bad_json_message_utf8(void **state)
{
	static const char *const reqs[] = {
		"{\"id\":1,\"cmd\":\"x\\\xe2\x82\xac\"}",
		"{\"id\":1,\"cmd\":\"\\\xc3\xa9\"}",
		"{\"id\":1,\"cmd\":\"\\\xf0\x9f\x90\x8c\"}",
		"{\"id\":1,\"cmd\":\"\xc3\"}",         /* invalid UTF-8 in the request */
		"{\"id\":1,\"cmd\":\"\xed\xa0\x80\"}", /* a surrogate */
	};

	(void)state;
	for (size_t i = 0; i < NELEM(reqs); i++)
		err_raw(reqs[i], strlen(reqs[i]), "bad_json", NULL);
}

/* ---- robustness ---------------------------------------------------------- */

static uint64_t rng_state;

static uint32_t
rng(void)
{
	return sh_rand32(&rng_state);
}

static const char *const corpus[] = {
	"{\"id\":1,\"cmd\":\"version\"}",
	"{\"id\":2,\"cmd\":\"stats\"}",
	"{\"id\":3,\"cmd\":\"stats\",\"args\":{\"direction\":\"upstream\"}}",
	"{\"id\":\"x\",\"cmd\":\"stats.reset\",\"args\":{}}",
	"{\"id\":4,\"cmd\":\"flows\",\"args\":{\"direction\":\"downstream\",\"top\":5}}",
	"{\"id\":5,\"cmd\":\"config.get\",\"args\":{\"direction\":\"downstream\"}}",
	"{\"id\":6,\"cmd\":\"config.set\",\"args\":{\"direction\":\"downstream\","
	"\"settings\":{\"bandwidth\":\"200mbit\"}}}",
	"{\"id\":7,\"cmd\":\"config.set\",\"args\":{\"direction\":\"upstream\","
	"\"settings\":{\"discipline\":\"fq_codel\",\"limit\":100,\"target\":\"3ms\"}}}",
	"{\"id\":8,\"cmd\":\"config.set\",\"args\":{\"direction\":\"upstream\","
	"\"settings\":{\"overhead\":\"docsis\",\"rtt\":\"metro\",\"diffserv\":\"diffserv8\","
	"\"isolation\":\"dual-srchost\",\"ack_filter\":true,\"memlimit\":\"32mb\"}}}",
	"{\"id\":9,\"cmd\":\"config.set\",\"args\":{\"direction\":\"downstream\","
	"\"settings\":{\"discipline\":\"fifo\",\"limit\":\"1mb\"}}}",
};

static const char *const fragments[] = {
	"{",
	"}",
	"[",
	"]",
	"\"",
	":",
	",",
	"null",
	"true",
	"false",
	"0",
	"-1",
	"1e999",
	"1.5",
	"\"id\"",
	"\"cmd\"",
	"\"args\"",
	"\"direction\"",
	"\"settings\"",
	"\"top\"",
	"\"upstream\"",
	"\"downstream\"",
	"\"bandwidth\"",
	"\"200mbit\"",
	"\"280mbps\"",
	"{}",
	"[]",
	"\"\\u00e9\"",
	"\"\\ud800\"",
	"\"\\u0000\"",
	"\\",
	"\\u",
	"\xc3\xa9",
	"\xe2\x82\xac",
	"\xff",
	"\x80",
	"\t",
	" ",
	"\n",
	"\r",
	"9223372036854775808",
	"\"version\"",
	"\"stats\"",
	"\"flows\"",
	"\"config.set\"",
	"\"config.get\"",
	"\"stats.reset\"",
	"\"discipline\"",
	"\"cake\"",
	"\"fq_codel\"",
	"\"fifo\"",
	"\"overhead\"",
	"\"emulate\"",
	"\"limit\"",
	"1000",
	"1001",
};

/* A random JSON value, depth-limited. */
static void
rand_value(char *buf, size_t cap, size_t *k, int depth)
{
#define PUT(s)                                                                                     \
	do {                                                                                       \
		const char *s_ = (s);                                                              \
		size_t n_ = strlen(s_);                                                            \
		if (*k + n_ < cap) {                                                               \
			memcpy(buf + *k, s_, n_);                                                  \
			*k += n_;                                                                  \
		}                                                                                  \
	} while (0)
	unsigned int kind = rng() % (depth > 2 ? 4 : 6);

	switch (kind) {
	case 0:
		PUT(fragments[rng() % 12 + 7]); /* scalars and keys */
		break;
	case 1:
		PUT(fragments[14 + rng() % 12]);
		break;
	case 2:
		PUT(fragments[40 + rng() % 16]);
		break;
	case 3: {
		char num[32];

		snprintf(num, sizeof(num), "%d", (int)(rng() % 2001) - 500);
		PUT(num);
		break;
	}
	case 4: {
		unsigned int n = rng() % 4;

		PUT("{");
		for (unsigned int i = 0; i < n; i++) {
			if (i)
				PUT(",");
			PUT(fragments[14 + rng() % 12]);
			PUT(":");
			rand_value(buf, cap, k, depth + 1);
		}
		PUT("}");
		break;
	}
	default: {
		unsigned int n = rng() % 3;

		PUT("[");
		for (unsigned int i = 0; i < n; i++) {
			if (i)
				PUT(",");
			rand_value(buf, cap, k, depth + 1);
		}
		PUT("]");
		break;
	}
	}
#undef PUT
}

static size_t
mutate(char *buf, size_t len, size_t cap)
{
	unsigned int rounds = 1 + rng() % 4;

	for (unsigned int r = 0; r < rounds; r++) {
		size_t pos = len ? rng() % (len + 1) : 0;

		switch (rng() % 6) {
		case 0: /* overwrite a byte */
			if (len > 0)
				buf[rng() % len] = (char)(rng() % 256);
			break;
		case 1: { /* delete a span */
			size_t n = len > pos ? rng() % (len - pos + 1) : 0;

			if (n > 8)
				n = 1 + n % 8;
			memmove(buf + pos, buf + pos + n, len - pos - n);
			len -= n;
			break;
		}
		case 2:
		case 3: { /* insert a fragment */
			const char *f = fragments[rng() % NELEM(fragments)];
			size_t n = strlen(f);

			if (len + n < cap) {
				memmove(buf + pos + n, buf + pos, len - pos);
				memcpy(buf + pos, f, n);
				len += n;
			}
			break;
		}
		case 4: /* truncate */
			len = pos;
			break;
		default: { /* duplicate a span */
			size_t n = rng() % 16;

			if (pos + n <= len && len + n < cap) {
				memmove(buf + pos + n, buf + pos, len - pos);
				len += n;
			}
			break;
		}
		}
	}
	return len;
}

static void
test_robustness(void **state)
{
	static const char *const cmds[] = { "version",    "stats",      "stats.reset", "flows",
					    "config.get", "config.set", "bogus" };
	char buf[4096];
	unsigned int n_ok = 0, n_err = 0, codes[CTL_ERR_MAX] = { 0 };

	(void)state;
	rng_state = 0x5eedc0ffee123457ULL;
	for (unsigned int it = 0; it < 6000; it++) {
		size_t len = 0;
		char *reply;
		json_t *j;

		/* Now and then make the backend fail, and restore it. */
		if (it % 97 == 0) {
			fake_init(&F);
			F.snapshot_rc[rng() % 2] = rng() % 3 == 0 ? -EAGAIN : 0;
			F.flows_rc = rng() % 4 == 0 ? -EAGAIN : 0;
			F.apply_rc = rng() % 4 == 0 ? -EINVAL : 0;
			snprintf(F.apply_msg, sizeof(F.apply_msg), "refused %u", it);
		}
		if (it % 3 == 0) {
			/* A structured request with random pieces. */
			size_t k = 0;

			k += (size_t)snprintf(buf, sizeof(buf), "{\"id\":%u,\"cmd\":\"%s\"", it,
					      cmds[rng() % NELEM(cmds)]);
			if (rng() % 4 != 0) {
				unsigned int n = rng() % 4;

				k += (size_t)snprintf(buf + k, sizeof(buf) - k, ",\"args\":{");
				for (unsigned int i = 0; i < n; i++) {
					if (i)
						buf[k++] = ',';
					k += (size_t)snprintf(buf + k, sizeof(buf) - k,
							      "%s:", fragments[14 + rng() % 12]);
					rand_value(buf, sizeof(buf) - 8, &k, 0);
				}
				buf[k++] = '}';
			}
			buf[k++] = '}';
			len = k;
			if (rng() % 2)
				len = mutate(buf, len, sizeof(buf));
		} else {
			const char *c = corpus[rng() % NELEM(corpus)];

			len = strlen(c);
			memcpy(buf, c, len);
			len = mutate(buf, len, sizeof(buf));
		}
		buf[len] = '\0';
		reply = ctl_handle_request(&BE, buf, len);
		j = parse_reply(reply);
		if (j == NULL) {
			print_error("iteration %u: request (%zu bytes): ", it, len);
			for (size_t i = 0; i < len; i++)
				print_error(isprint((unsigned char)buf[i]) ? "%c" : "\\x%02x",
					    (unsigned char)buf[i]);
			print_error("\n");
		}
		free(reply);
		assert_non_null(j);
		if (json_is_true(json_object_get(j, "ok"))) {
			n_ok++;
		} else {
			const char *code = json_string_value(jpath(j, "error.code"));

			n_err++;
			for (int e = 0; e < CTL_ERR_MAX; e++)
				if (strcmp(code, ctl_error_name((enum ctl_error)e)) == 0)
					codes[e]++;
		}
		json_decref(j);
	}
	/* The loop reached both outcomes and most error kinds. */
	assert_true(n_ok > 100);
	assert_true(n_err > 1000);
	assert_true(codes[CTL_ERR_BAD_JSON] > 0);
	assert_true(codes[CTL_ERR_BAD_REQUEST] > 0);
	assert_true(codes[CTL_ERR_UNKNOWN_COMMAND] > 0);
	assert_true(codes[CTL_ERR_INVALID_ARGUMENT] > 0);
	assert_true(codes[CTL_ERR_BUSY] > 0);
	assert_int_equal(codes[CTL_ERR_INTERNAL], 0);
}

static void
test_error_names(void **state)
{
	(void)state;
	assert_string_equal(ctl_error_name(CTL_ERR_BAD_JSON), "bad_json");
	assert_string_equal(ctl_error_name(CTL_ERR_BAD_REQUEST), "bad_request");
	assert_string_equal(ctl_error_name(CTL_ERR_UNKNOWN_COMMAND), "unknown_command");
	assert_string_equal(ctl_error_name(CTL_ERR_INVALID_ARGUMENT), "invalid_argument");
	assert_string_equal(ctl_error_name(CTL_ERR_TOO_LARGE), "too_large");
	assert_string_equal(ctl_error_name(CTL_ERR_BUSY), "busy");
	assert_string_equal(ctl_error_name(CTL_ERR_RESTART_REQUIRED), "restart_required");
	assert_string_equal(ctl_error_name(CTL_ERR_INTERNAL), "internal");
	assert_string_equal(ctl_error_name(CTL_ERR_MAX), "internal");
	assert_string_equal(ctl_error_name((enum ctl_error) - 1), "internal");
}

/* Passive RTT and autorate in stats, and from there in the Prometheus text. */
static void
test_stats_rtt(void **state)
{
	struct ctl_rtt *rt = &F.c[SHAPER_DOWN].rtt;
	json_t *r, *v;
	char *text = NULL;
	size_t len = 0;
	FILE *mf;

	(void)state;
	memset(rt, 0, sizeof(*rt));
	rt->on = true;
	rt->part = RTT_SIDE_WAN;
	rt->hist.count[rtt_hist_bucket(40000000)] = 7; /* 40 ms: [38.4, 51.2) ms */
	rt->hist.count[rtt_hist_bucket(90000000)] = 3; /* 90 ms: [76.8, 102.4) ms */
	rt->hist.samples = 10;
	rt->hist.sum_ns = 7 * 40000000ull + 3 * 90000000ull;
	rt->interval_ns = 1000000000;
	rt->iv_samples = 4;
	rt->iv_min_ns = 39500000;
	rt->iv_median_ns = 41000000;
	rt->iv_p99_ns = 88000000;
	rt->autorate = true;
	rt->ar_rate = 11000000;
	rt->ar_min = 2500000;
	rt->ar_max = 12500000;
	rt->ar_action = AUTORATE_DOWN;
	rt->ar_downs = 2;
	rt->ar_why = AR_WHY_CUT_BLOAT;
	rt->ar_delay_ns = 12000000;
	rt->ar_path_ns = 25000000;
	rt->ar_through = 10000000;
	rt->ar_decisions[AR_WHY_CUT_BLOAT] = 2;
	rt->ar_decisions[AR_WHY_PATH] = 1;
	r = ok("{'id':11,'cmd':'stats'}");
	assert_null(jpath(r, "directions.upstream.rtt"));
	assert_str_at(r, "directions.downstream.rtt.part", "wan");
	assert_int_at(r, "directions.downstream.rtt.samples", 10);
	assert_int_at(r, "directions.downstream.rtt.sum_us", 550000);
	assert_int_at(r, "directions.downstream.rtt.interval.min_us", 39500);
	assert_int_at(r, "directions.downstream.rtt.interval.median_us", 41000);
	assert_int_at(r, "directions.downstream.rtt.interval.p99_us", 88000);
	assert_int_at(r, "directions.downstream.rtt.autorate.rate", 11000000);
	assert_str_at(r, "directions.downstream.rtt.autorate.last", "down");
	assert_str_at(r, "directions.downstream.rtt.autorate.why", "cut_bloat");
	assert_int_at(r, "directions.downstream.rtt.autorate.path_us", 25000);
	assert_int_at(r, "directions.downstream.rtt.autorate.line", 10000000);
	assert_int_at(r, "directions.downstream.rtt.autorate.decisions.cut_bloat", 2);
	assert_int_at(r, "directions.downstream.rtt.autorate.decisions.raise", 0);
	v = jpath(r, "directions.downstream.rtt.histogram_us");
	assert_int_equal(json_array_size(v), 2);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(v, 0), 0)), 38400);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(v, 0), 1)), 51200);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(v, 0), 2)), 7);

	mf = open_memstream(&text, &len);
	assert_non_null(mf);
	assert_int_equal(ctl_metrics_print(mf, jpath(r, "directions"), r, "up"), 0);
	fclose(mf);
	assert_non_null(strstr(text, "shaper_rtt_seconds_bucket{direction=\"downstream\","
				     "part=\"wan\",le=\"0.0512\"} 7\n"));
	assert_non_null(strstr(text, "shaper_rtt_seconds_bucket{direction=\"downstream\","
				     "part=\"wan\",le=\"0.1024\"} 10\n"));
	assert_non_null(strstr(text, "shaper_rtt_seconds_bucket{direction=\"downstream\","
				     "part=\"wan\",le=\"+Inf\"} 10\n"));
	assert_non_null(strstr(text, "shaper_rtt_seconds_count{direction=\"downstream\","
				     "part=\"wan\"} 10\n"));
	assert_non_null(strstr(text, "shaper_rtt_interval_p99_seconds{direction=\"downstream\","
				     "part=\"wan\"} 0.088\n"));
	assert_non_null(strstr(text,
			       "shaper_autorate_rate_bytes_per_second{direction=\"downstream\"}"
			       " 11000000\n"));
	assert_non_null(strstr(text, "shaper_autorate_decisions_total{direction=\"downstream\","
				     "reason=\"path\"} 1\n"));
	assert_non_null(strstr(text, "shaper_autorate_delay_seconds{direction=\"downstream\"} "
				     "0.012\n"));
	assert_non_null(strstr(text, "shaper_autorate_line_bytes_per_second{direction="
				     "\"downstream\"} 10000000\n"));
	assert_null(strstr(text, "direction=\"upstream\",part="));
	free(text);
	memset(rt, 0, sizeof(*rt));
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_version),
		T(test_id_echo),
		T(test_stats),
		T(test_stats_rtt),
		T(test_stats_direction_filter),
		T(test_stats_port_unavailable),
		T(test_stats_reset),
		T(test_flows),
		T(test_config_get),
		T(test_config_set),
		T(test_config_set_several),
		T(test_config_set_emulate),
		T(test_bad_json),
		T(test_bad_request),
		T(test_unknown_command),
		T(test_unknown_argument),
		T(test_bad_direction),
		T(test_config_set_bad),
		T(test_config_set_apply_fails),
		T(test_flows_bad_top),
		T(test_backend_busy),
		T(test_too_large),
		T(test_error_reply),
		T(test_error_names),
		T(test_robustness),
		T(test_bug_utf8_cut_in_message),
		T(test_bug_bad_json_message_utf8),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
