/*
 * shapectl subscribers and shapectl subscriber: the daemon's
 * subscribers.list and subscribers.get as tables (docs/control-protocol.md
 * has the fields), and shapectl subscriber set/del: subscribers.set and
 * subscribers.del.
 */
#include <stdio.h>
#include <string.h>

#include "shapectl.h"

static const char *const dir_key[2] = { "download", "upload" };

/* "1.2Mbit" from bytes/s, "-" for 0 (no CAKE, so no rate allocated). */
static void
cell_rate(struct sc_table *t, long long bytes_per_sec)
{
	char b[32];

	if (bytes_per_sec <= 0) {
		sc_table_cell(t, "-");
		return;
	}
	sc_fmt_bits((double)bytes_per_sec * 8, b, sizeof(b));
	sc_table_cell(t, "%s", b);
}

#define SUBS_PAGE 2000 /* subscribers per page: about 1 MB of reply */

int
sc_list_subscribers(struct sc_conn *c, json_t *args, json_t **result)
{
	json_t *all = NULL;
	long long offset = 0;

	if (args == NULL)
		args = json_object();
	for (;;) {
		json_t *page = NULL, *list;
		size_t n;
		int rc;

		json_object_set_new(args, "offset", json_integer(offset));
		json_object_set_new(args, "limit", json_integer(SUBS_PAGE));
		rc = sc_call(c, "subscribers.list", json_incref(args), &page);
		if (rc != SC_EXIT_OK) {
			json_decref(args);
			json_decref(all);
			return rc;
		}
		list = json_object_get(page, "subscribers");
		n = json_array_size(list);
		offset += (long long)n;
		if (all == NULL) {
			all = page; /* its time_ns, count and link stand for the whole list */
		} else {
			json_array_extend(json_object_get(all, "subscribers"), list);
			json_decref(page);
		}
		if (n == 0 || offset >= sc_int(all, "count"))
			break;
	}
	json_decref(args);
	*result = all;
	return SC_EXIT_OK;
}

/* "12.3/30.1 ms" (median/p95) of one side of a subscriber's RTT, or "-" without samples. */
static void
fmt_rtt(const json_t *side, char *buf, size_t len)
{
	if (sc_int(side, "samples") == 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f/%.1f ms", (double)sc_int(side, "median_us") / 1000.0,
			 (double)sc_int(side, "p95_us") / 1000.0);
}

/* "12.0/20.1 ms" (p80/p95) of the LAN side over busy minutes, or "-" without samples. */
static void
fmt_busy(const json_t *busy, char *buf, size_t len)
{
	const json_t *lan = json_object_get(busy, "lan");

	if (sc_int(lan, "samples") == 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f/%.1f ms", (double)sc_int(lan, "p80_us") / 1000.0,
			 (double)sc_int(lan, "p95_us") / 1000.0);
}

static void
row(struct sc_table *t, const char *id, const char *node, const json_t *s)
{
	const json_t *rtt = json_object_get(s, "rtt");
	char b[32];

	sc_table_cell(t, "%s", id);
	sc_table_cell(t, "%s", node);
	for (int d = 0; d < 2; d++) {
		const json_t *x = json_object_get(s, dir_key[d]);

		cell_rate(t, sc_int(x, "threshold_rate"));
		sc_fmt_size((uint64_t)sc_int(x, "bytes"), b, sizeof(b));
		sc_table_cell(t, "%s", b);
		sc_table_cell(t, "%lld", sc_int(x, "drops"));
		sc_table_cell(t, "%lld", sc_int(x, "ecn_mark"));
		sc_table_cell(t, "%lld", sc_int(x, "qlen"));
	}
	fmt_rtt(json_object_get(rtt, "lan"), b, sizeof(b));
	sc_table_cell(t, "%s", b);
	fmt_rtt(json_object_get(rtt, "wan"), b, sizeof(b));
	sc_table_cell(t, "%s", b);
	fmt_busy(json_object_get(s, "busy_rtt"), b, sizeof(b));
	sc_table_cell(t, "%s", b);
}

int
sc_show_subscribers(const json_t *r, bool json, const char *by)
{
	const json_t *arr = json_object_get(r, "subscribers"), *s;
	struct sc_table t;
	size_t i;

	if (json)
		return sc_print_json(r);
	if (by != NULL)
		printf("%zu of %lld subscribers, most %s first\n", json_array_size(arr),
		       sc_int(r, "count"),
		       strcmp(by, "rtt") == 0        ? "lan rtt (median)"
		       : strcmp(by, "busy_rtt") == 0 ? "lan rtt over busy minutes (p95)"
						     : by);
	else
		printf("%lld subscribers\n", sc_int(r, "count"));
	sc_table_init(&t, 15);
	t.left[0] = t.left[1] = true;
	sc_table_cell(&t, "id");
	sc_table_cell(&t, "node");
	for (int d = 0; d < 2; d++) {
		sc_table_cell(&t, d == 0 ? "down rate" : "up rate");
		sc_table_cell(&t, "sent");
		sc_table_cell(&t, "drops");
		sc_table_cell(&t, "marks");
		sc_table_cell(&t, "qlen");
	}
	/* Median/p95 of the recent samples (docs/subscribers.md: "Passive RTT"). */
	sc_table_cell(&t, "lan rtt");
	sc_table_cell(&t, "wan rtt");
	/* p80/p95 of the LAN side over busy minutes (docs/subscribers.md: "Loaded latency"). */
	sc_table_cell(&t, "busy lan");
	json_array_foreach (arr, i, s)
		row(&t, sc_str(s, "id"), sc_str(s, "node"), s);
	/* Addresses no subscriber owns share the link's own scheduler. */
	row(&t, "(unknown)", "link", json_object_get(r, "link"));
	sc_table_print(&t, stdout, "");
	sc_table_free(&t);
	return SC_EXIT_OK;
}

int
sc_show_subscriber(const json_t *r, bool json)
{
	const json_t *addrs = json_object_get(r, "addresses"), *a;
	size_t i;

	if (json)
		return sc_print_json(r);
	printf("subscriber %s \"%s\" under %s\n", sc_str(r, "id"), sc_str(r, "name"),
	       sc_str(r, "node"));
	printf("  addresses:");
	json_array_foreach (addrs, i, a)
		printf(" %s", json_string_value(a));
	printf("\n");
	for (int d = 0; d < 2; d++) {
		const json_t *x = json_object_get(r, dir_key[d]),
			     *plan = json_object_get(x, "plan");
		const json_t *why = json_object_get(x, "drop_reasons");
		char pmax[32], pmin[32], alloc[32], arr[32], sent[32];

		sc_fmt_bits((double)sc_int(plan, "max"), pmax, sizeof(pmax));
		sc_fmt_bits((double)sc_int(plan, "min"), pmin, sizeof(pmin));
		if (sc_int(x, "threshold_rate") > 0)
			sc_fmt_bits((double)sc_int(x, "threshold_rate") * 8, alloc, sizeof(alloc));
		else
			snprintf(alloc, sizeof(alloc), "- (idle)");
		sc_fmt_bits((double)sc_int(x, "arrival_rate"), arr, sizeof(arr));
		sc_fmt_size((uint64_t)sc_int(x, "bytes"), sent, sizeof(sent));
		printf("  %s: plan %s (min %s), allocated %s, arriving %s\n", dir_key[d], pmax,
		       sc_int(plan, "min") > 0 ? pmin : "none", alloc, arr);
		printf("    sent %s %lld pkt, dropped %lld (aqm %lld overflow %lld ack_filter %lld "
		       "budget %lld), ecn_mark %lld, qlen %lld",
		       sent, sc_int(x, "packets"), sc_int(x, "drops"), sc_int(why, "aqm"),
		       sc_int(why, "overflow"), sc_int(why, "ack_filter"), sc_int(why, "budget"),
		       sc_int(x, "ecn_mark"), sc_int(x, "qlen"));
		/* Time its plan was not paced for: the worker was away (see lag_limit). */
		if (sc_int(x, "lag_skipped_us") > 0)
			printf(", written off %.1f ms",
			       (double)sc_int(x, "lag_skipped_us") / 1000.0);
		printf("\n");
	}
	/* The access side first: the part of the path the ISP runs. */
	for (int k = 0; k < 2; k++) {
		const json_t *x =
				json_object_get(json_object_get(r, "rtt"), k == 0 ? "lan" : "wan");
		const char *what = k == 0 ? "lan, to the subscriber and back"
					  : "wan, to the remote and back";

		if (sc_int(x, "samples") == 0)
			printf("  rtt (%s): no samples in the last 10-20 s\n", what);
		else
			printf("  rtt (%s): median %.1f ms, p95 %.1f ms of %lld samples in the "
			       "last 10-20 s\n",
			       what, (double)sc_int(x, "median_us") / 1000.0,
			       (double)sc_int(x, "p95_us") / 1000.0, sc_int(x, "samples"));
	}
	/* Loaded latency: the same samples, of the minutes its own traffic was busy. */
	{
		const json_t *busy = json_object_get(r, "busy_rtt");

		printf("  busy minutes (10 %% of its plan or more, either way): %lld in the last "
		       "15-30 min\n",
		       sc_int(busy, "minutes"));
		for (int k = 0; k < 2; k++) {
			const json_t *x = json_object_get(busy, k == 0 ? "lan" : "wan");

			if (sc_int(x, "samples") == 0)
				printf("  rtt over busy minutes (%s): no samples\n",
				       k == 0 ? "lan" : "wan");
			else
				printf("  rtt over busy minutes (%s): p80 %.1f ms, p95 %.1f ms of "
				       "%lld samples\n",
				       k == 0 ? "lan" : "wan", (double)sc_int(x, "p80_us") / 1000.0,
				       (double)sc_int(x, "p95_us") / 1000.0, sc_int(x, "samples"));
		}
	}
	return SC_EXIT_OK;
}

/* "100mbit" or "100mbit/20mbit" (max/min) as the daemon's plan argument. */
static json_t *
plan_arg(const char *v)
{
	const char *slash = strchr(v, '/');

	if (slash == NULL)
		return json_string(v);
	return json_pack("{s:s%, s:s}", "max", v, (size_t)(slash - v), "min", slash + 1);
}

/* What "set NAME FIELD VALUE ..." and "del NAME" build for one kind of object. */
struct change_kind {
	const char *what;        /* "subscriber": its name in messages */
	const char *del_expects; /* the message for a del without exactly one name */
	const char *key;         /* the argument naming it */
	const char *set_cmd, *del_cmd;
	const char *fields; /* listed when a field is not one */
	/* Put field k = v into args; false if k is not one of its fields. */
	bool (*field)(json_t *args, const char *k, const char *v);
};

/* The command and arguments for "set NAME FIELD VALUE ..." or "del NAME" of one kind. */
static int
change_args(const struct change_kind *kind, int argc, char **argv, const char **cmd, json_t **args)
{
	int i;

	if (strcmp(argv[0], "del") == 0) {
		if (argc != 2) {
			fprintf(stderr, "shapectl: %s del: expected %s\n", kind->what,
				kind->del_expects);
			return SC_EXIT_USAGE;
		}
		*cmd = kind->del_cmd;
		*args = json_pack("{s:s}", kind->key, argv[1]);
		return SC_EXIT_OK;
	}
	*cmd = kind->set_cmd;
	*args = json_pack("{s:s}", kind->key, argv[1]);
	for (i = 2; i < argc; i += 2) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (v == NULL) {
			fprintf(stderr, "shapectl: %s set: %s needs a value\n", kind->what, k);
			goto usage;
		}
		if (!kind->field(*args, k, v)) {
			fprintf(stderr, "shapectl: %s set: \"%s\" is not a field (%s)\n",
				kind->what, k, kind->fields);
			goto usage;
		}
	}
	return SC_EXIT_OK;
usage:
	json_decref(*args);
	*args = NULL;
	return SC_EXIT_USAGE;
}

static bool
subscriber_field(json_t *args, const char *k, const char *v)
{
	if (strcmp(k, "download") == 0 || strcmp(k, "upload") == 0) {
		json_object_set_new(args, k, plan_arg(v));
	} else if (strcmp(k, "node") == 0 || strcmp(k, "name") == 0) {
		json_object_set_new(args, k, json_string(v));
	} else if (strcmp(k, "addresses") == 0 || strcmp(k, "address") == 0) {
		json_t *a = json_array();
		char buf[1024], *save = NULL, *t;

		snprintf(buf, sizeof(buf), "%s", v);
		for (t = strtok_r(buf, ", ", &save); t != NULL; t = strtok_r(NULL, ", ", &save))
			json_array_append_new(a, json_string(t));
		json_object_set_new(args, "addresses", a);
	} else {
		return false;
	}
	return true;
}

int
sc_subscriber_change_args(int argc, char **argv, const char **cmd, json_t **args)
{
	static const struct change_kind kind = {
		.what = "subscriber",
		.del_expects = "one circuit id",
		.key = "id",
		.set_cmd = "subscribers.set",
		.del_cmd = "subscribers.del",
		.fields = "download, upload, node, name, addresses",
		.field = subscriber_field,
	};

	return change_args(&kind, argc, argv, cmd, args);
}

int
sc_show_subscriber_change(const json_t *r, bool json)
{
	if (json)
		return sc_print_json(r);
	printf("subscriber %s %s", sc_str(r, "id"), sc_str(r, "action"));
	if (json_object_get(r, "draining") != NULL)
		printf(" (%lld packets still queued, sent at its old plan)", sc_int(r, "draining"));
	printf("\n");
	return SC_EXIT_OK;
}

static bool
node_field(json_t *args, const char *k, const char *v)
{
	if (strcmp(k, "download") != 0 && strcmp(k, "upload") != 0 && strcmp(k, "parent") != 0 &&
	    strcmp(k, "type") != 0)
		return false;
	json_object_set_new(args, k, json_string(v));
	return true;
}

int
sc_node_change_args(int argc, char **argv, const char **cmd, json_t **args)
{
	static const struct change_kind kind = {
		.what = "node",
		.del_expects = "one node name",
		.key = "name",
		.set_cmd = "nodes.set",
		.del_cmd = "nodes.del",
		.fields = "download, upload, parent, type",
		.field = node_field,
	};

	return change_args(&kind, argc, argv, cmd, args);
}

int
sc_show_node_change(const json_t *r, bool json)
{
	if (json)
		return sc_print_json(r);
	if (json_object_get(r, "path") != NULL)
		printf("node %s %s\n", sc_str(r, "path"), sc_str(r, "action"));
	else
		printf("node %s %s\n", sc_str(r, "name"), sc_str(r, "action"));
	return SC_EXIT_OK;
}
