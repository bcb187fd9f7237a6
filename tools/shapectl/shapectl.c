/*
 * shapectl: talk to shaperd over its control socket.
 *
 *   shapectl [--socket PATH] [--json] [--timeout SECONDS] COMMAND [ARGS]
 *
 * Human output imitates `tc -s qdisc show` for cake; --json prints the
 * daemon's result untouched, for scripts. Every failure maps to one exit
 * code (see usage()), so scripts can tell a refusal from a dead daemon.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shaper/control.h"
#include "shaper/limits.h"
#include "shaper/metrics.h"
#include "shapectl.h"

_Static_assert(SC_MAX_REPLY > CTL_MAX_OUTQ,
	       "a reply the daemon queues must fit the client's buffer");

#ifndef SHAPER_VERSION
#define SHAPER_VERSION "unknown"
#endif

struct opts {
	const char *socket;
	bool json;
	int timeout_ms;
	/* per command */
	long top;          /* flows, subscribers */
	const char *by;    /* subscribers: bytes, drops, rate, rtt or busy_rtt */
	double interval_s; /* watch */
	long count;        /* watch: 0 = until interrupted */
	bool save;         /* set: write the running settings to the file afterwards */
};

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: shapectl [--socket PATH] [--json] [--timeout SECONDS] <command> [<args>]\n"
		"\n"
		"Query and change a running shaperd through its control socket.\n"
		"\n"
		"commands:\n"
		"  version                          shapectl, shaperd and protocol versions\n"
		"  stats [upstream | downstream]    counters and tin statistics (tc -s qdisc)\n"
		"  flows [--top N] [upstream | downstream]\n"
		"                                   queued flows with the largest backlog\n"
		"                                   (N 1..1000, default 10)\n"
		"  get [upstream | downstream]      the running settings of a direction\n"
		"  set <direction> <key> <value> [<key> <value> ...]\n"
		"                                   change settings at run time, e.g.\n"
		"                                     set downstream bandwidth 200mbit rtt 40ms\n"
		"                                   true/false are booleans, integers numbers,\n"
		"                                   anything else is a string; with --save\n"
		"                                   the running settings are then written to\n"
		"                                   shaperd's configuration file\n"
		"  reload                           read the configuration file again and apply\n"
		"                                   it (as SIGHUP does); refused, with nothing\n"
		"                                   applied, if a key that needs a restart changed\n"
		"  save                             write the running settings to the file\n"
		"  reset                            zero the statistics of both directions\n"
		"  watch [-n SECONDS] [--count N]   refresh a summary every SECONDS (default 1)\n"
		"                                   until interrupted, or N times; with each\n"
		"                                   port's link and the link changes seen\n"
		"  metrics                          statistics in the Prometheus text format\n"
		"  subscribers [--top N] [--by bytes|drops|rate|rtt|busy_rtt]\n"
		"                                   per-subscriber counters and RTT (all, or the\n"
		"                                   N largest by bytes sent, drops, arrival rate,\n"
		"                                   LAN-side median RTT or LAN-side p95 RTT over\n"
		"                                   busy minutes)\n"
		"  subscriber ID|ADDRESS            one subscriber: plan, addresses, counters, RTT\n"
		"  subscriber set ID [download MAX[/MIN]] [upload MAX[/MIN]] [node NAME]\n"
		"                 [name TEXT] [addresses A,B,...]\n"
		"                                   add a subscriber or change one, live\n"
		"  subscriber del ID                remove one (its queue drains at its plan)\n"
		"  node set NAME [parent NODE] [download RATE] [upload RATE] [type TEXT]\n"
		"                                   add a node (site, AP) or change or move one,\n"
		"                                   live\n"
		"  node del NAME                    remove a node with nothing under it\n"
		"\n"
		"options:\n"
		"  -s, --socket PATH       control socket (default: $SHAPER_SOCKET, else\n"
		"                          " SHAPER_DEFAULT_SOCKET ")\n"
		"  -j, --json              print the daemon's JSON result, one line per reply\n"
		"  -t, --timeout SECONDS   give up connecting or waiting for a reply after\n"
		"                          SECONDS (default 5)\n"
		"  -h, --help              print this help and exit\n"
		"  -V, --version           print shapectl's version and exit\n"
		"\n"
		"exit status:\n"
		"  0  success\n"
		"  1  the daemon refused the request (its error code and message are printed)\n"
		"  2  bad arguments\n"
		"  3  shaperd is not running (no socket, or nobody listening on it)\n"
		"  4  permission denied on the socket (join its group, or run as root)\n"
		"  5  I/O or protocol error, or timeout\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("shapectl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\ntry 'shapectl --help' for usage\n", stderr);
	return SC_EXIT_USAGE;
}

/* strtod/strtol that refuse trailing junk: no atoi. */
static int
parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v > 0) || v > 86400)
		return -1;
	*out = v;
	return 0;
}

static int
parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static bool
is_direction(const char *s)
{
	return strcmp(s, "upstream") == 0 || strcmp(s, "downstream") == 0;
}

/* Optional [upstream | downstream] as {"direction": ...}; NULL args when absent. */
static int
direction_args(int argc, char **argv, json_t **args)
{
	*args = NULL;
	if (argc > 1)
		return usage_error("too many arguments: expected at most one direction");
	if (argc == 1) {
		if (!is_direction(argv[0]))
			return usage_error("\"%s\" is not a direction (upstream or downstream)",
					   argv[0]);
		*args = json_pack("{s:s}", "direction", argv[0]);
	}
	return SC_EXIT_OK;
}

int
sc_print_json(const json_t *result)
{
	if (json_dumpf(result, stdout, JSON_COMPACT | JSON_ENCODE_ANY) != 0)
		return SC_EXIT_IO;
	putchar('\n');
	return SC_EXIT_OK;
}

/* ---- version ---- */

static int
show_version(const struct opts *o, const json_t *r)
{
	if (sc_int(r, "protocol") != CTL_PROTOCOL_VERSION)
		fprintf(stderr, "shapectl: warning: shaperd speaks protocol %lld, shapectl %d\n",
			sc_int(r, "protocol"), CTL_PROTOCOL_VERSION);
	if (o->json)
		return sc_print_json(r);
	printf("shapectl %s\n%s %s (protocol %lld)\n", SHAPER_VERSION, sc_str(r, "name"),
	       sc_str(r, "version"), sc_int(r, "protocol"));
	return SC_EXIT_OK;
}

/* ---- stats ---- */

/* A port's link: "up 10000M", "up" (no speed reported), "down", or "-" (not said). */
static void
cell_link(struct sc_table *t, const json_t *p)
{
	if (json_object_get(p, "link_up") == NULL)
		sc_table_cell(t, "-");
	else if (sc_int(p, "link_up") && sc_int(p, "link_speed") == 0)
		sc_table_cell(t, "up");
	else if (sc_int(p, "link_up"))
		sc_table_cell(t, "up %lldM", sc_int(p, "link_speed"));
	else
		sc_table_cell(t, "down");
}

static void
print_ports(const json_t *ports)
{
	static const char *const cols[] = { "rx_packets", "rx_bytes",  "tx_packets", "tx_bytes",
					    "rx_missed",  "rx_errors", "tx_errors",  "rx_nombuf" };
	struct sc_table t;
	const char *k;
	json_t *p;

	if (json_object_size(ports) == 0)
		return;
	sc_table_init(&t, 11);
	t.left[1] = true;
	t.left[2] = true;
	sc_table_cell(&t, "port");
	sc_table_cell(&t, "device");
	sc_table_cell(&t, "link");
	for (size_t i = 0; i < 8; i++)
		sc_table_cell(&t, "%s", cols[i]);
	json_object_foreach ((json_t *)ports, k, p) {
		sc_table_cell(&t, "%s", k);
		sc_table_cell(&t, "%s", sc_str(p, "name"));
		cell_link(&t, p);
		for (size_t i = 0; i < 8; i++)
			sc_table_cell(&t, "%lld", sc_int(p, cols[i]));
	}
	sc_table_print(&t, stdout, "");
	sc_table_free(&t);
}

/* The tin table of tc -s qdisc show (q_cake.c): rows of stats, a column per tin. */
static void
print_tins(const json_t *tins)
{
	enum kind {
		K_RATE,
		K_TIME,
		K_SIZE,
		K_INT,
		K_L4S /* an integer row tc's table lacks */
	};
	static const struct {
		const char *label, *key;
		enum kind kind;
	} rows[] = {
		{ "thresh", "threshold_rate", K_RATE },
		{ "target", "target_us", K_TIME },
		{ "interval", "interval_us", K_TIME },
		{ "pk_delay", "peak_delay_us", K_TIME },
		{ "av_delay", "avg_delay_us", K_TIME },
		{ "sp_delay", "base_delay_us", K_TIME },
		{ "backlog", "backlog_bytes", K_SIZE },
		{ "pkts", "sent_packets", K_INT },
		{ "bytes", "sent_bytes", K_INT },
		{ "way_inds", "way_indirect_hits", K_INT },
		{ "way_miss", "way_misses", K_INT },
		{ "way_cols", "way_collisions", K_INT },
		{ "drops", "drops", K_INT },
		{ "marks", "ecn_mark", K_INT },
		{ "ack_drop", "ack_drops", K_INT },
		/* CAKE's l4s: shown once a tin has seen ECT(1) or marked at the step */
		{ "ect1", "ect1_packets", K_L4S },
		{ "stp_mark", "step_marks", K_L4S },
		{ "sp_flows", "sparse_flows", K_INT },
		{ "bk_flows", "bulk_flows", K_INT },
		{ "un_flows", "unresponsive_flows", K_INT },
		{ "max_len", "max_pkt_len", K_INT },
		{ "quantum", "flow_quantum", K_INT },
	};
	size_t i, n = json_array_size(tins);
	json_t *tin;
	char buf[64];
	bool l4s = false;

	if (n == 0)
		return;
	json_array_foreach (tins, i, tin)
		l4s |= sc_int(tin, "ect1_packets") != 0 || sc_int(tin, "step_marks") != 0;
	printf("%-10s", "");
	json_array_foreach (tins, i, tin)
		printf(" %12s", sc_str(tin, "name"));
	printf("\n");
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		if (rows[r].kind == K_L4S && !l4s)
			continue;
		printf("  %-8s", rows[r].label);
		json_array_foreach (tins, i, tin) {
			uint64_t v = (uint64_t)sc_int(tin, rows[r].key);

			switch (rows[r].kind) {
			case K_RATE:
				sc_fmt_rate(v, buf, sizeof(buf));
				break;
			case K_TIME:
				sc_fmt_time_us(v, buf, sizeof(buf));
				break;
			case K_SIZE:
				sc_fmt_size(v, buf, sizeof(buf));
				break;
			case K_INT:
			case K_L4S:
				snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
				break;
			}
			printf(" %12s", buf);
		}
		printf("\n");
	}
}

/* Passive RTT: the part of the path, the last interval, the histogram; autorate. */
static void
print_rtt(const json_t *r)
{
	const json_t *iv = json_object_get(r, "interval"), *ar = json_object_get(r, "autorate");
	const json_t *b;
	char b1[32], b2[32], b3[32];
	size_t i;

	if (r == NULL)
		return;
	sc_fmt_time_us((uint64_t)sc_int(iv, "min_us"), b1, sizeof(b1));
	sc_fmt_time_us((uint64_t)sc_int(iv, "median_us"), b2, sizeof(b2));
	sc_fmt_time_us((uint64_t)sc_int(iv, "p99_us"), b3, sizeof(b3));
	printf(" rtt (%s side, passive): %lld samples; last interval %lld: min %s median %s p99 %s\n",
	       sc_str(r, "part"), sc_int(r, "samples"), sc_int(iv, "samples"), b1, b2, b3);
	json_array_foreach (json_object_get(r, "histogram_us"), i, b) {
		sc_fmt_time_us((uint64_t)json_integer_value(json_array_get(b, 0)), b1, sizeof(b1));
		sc_fmt_time_us((uint64_t)json_integer_value(json_array_get(b, 1)), b2, sizeof(b2));
		printf("  %9s .. %-9s %lld\n", b1, b2,
		       (long long)json_integer_value(json_array_get(b, 2)));
	}
	if (ar != NULL) {
		sc_fmt_rate((uint64_t)sc_int(ar, "rate"), b1, sizeof(b1));
		sc_fmt_rate((uint64_t)sc_int(ar, "min"), b2, sizeof(b2));
		sc_fmt_rate((uint64_t)sc_int(ar, "max"), b3, sizeof(b3));
		printf(" autorate: %s (bounds %s .. %s), last %s, %lld up %lld down\n", b1, b2, b3,
		       sc_str(ar, "last"), sc_int(ar, "ups"), sc_int(ar, "downs"));
	}
}

/* received (+ held at the last reset) = sent + dropped + queued, as one line. */
static void
print_accounting(const json_t *a)
{
	const json_t *q = json_object_get(a, "queued");
	long long dropped = 0;
	const char *k;
	json_t *v;

	if (a == NULL)
		return;
	json_object_foreach ((json_t *)json_object_get(a, "dropped"), k, v)
		dropped += json_is_integer(v) ? json_integer_value(v) : 0;
	printf(" accounting: received %lld + held at reset %lld = sent %lld + dropped %lld"
	       " + queued %lld (scheduler %lld, swap %lld, emulator %lld, tx pending %lld),"
	       " unaccounted %lld\n",
	       sc_int(a, "received"), sc_int(a, "held_at_reset"), sc_int(a, "sent"), dropped,
	       sc_int(q, "scheduler") + sc_int(q, "swap") + sc_int(q, "emulator") +
			       sc_int(q, "tx_pending"),
	       sc_int(q, "scheduler"), sc_int(q, "swap"), sc_int(q, "emulator"),
	       sc_int(q, "tx_pending"), sc_int(a, "unaccounted"));
}

static void
print_direction(const char *name, const json_t *d)
{
	static const char *const flow[] = { "lan -> wan", "wan -> lan" };
	char b1[64], b2[64];
	const char *k;
	json_t *v;

	sc_fmt_rate((uint64_t)sc_int(d, "bandwidth"), b1, sizeof(b1));
	printf("%s (%s): %s bandwidth %s\n", name, flow[strcmp(name, "downstream") == 0],
	       sc_str(d, "discipline"), b1);
	/* tc's requeues: here the bursts the output port refused in part (held, sent next turn). */
	printf(" Sent %lld bytes %lld pkt (dropped %lld, overlimits %lld requeues %lld)\n",
	       sc_int(d, "bytes"), sc_int(d, "packets"), sc_int(d, "drops"),
	       sc_int(d, "overlimits"), sc_int(d, "tx_retries"));
	sc_fmt_size((uint64_t)sc_int(d, "backlog"), b1, sizeof(b1));
	printf(" backlog %s %lldp requeues %lld\n", b1, sc_int(d, "qlen"), sc_int(d, "tx_retries"));
	sc_fmt_size((uint64_t)sc_int(d, "memory_used"), b1, sizeof(b1));
	sc_fmt_size((uint64_t)sc_int(d, "memory_limit"), b2, sizeof(b2));
	printf(" memory used: %s of %s\n", b1, b2);
	if (sc_int(d, "capacity_estimate") != 0) {
		sc_fmt_rate((uint64_t)sc_int(d, "capacity_estimate"), b1, sizeof(b1));
		printf(" capacity estimate: %s\n", b1);
	}
	if (sc_int(d, "max_network_size") != 0) {
		printf(" min/max network layer size:     %8lld / %8lld\n",
		       sc_int(d, "min_network_size"), sc_int(d, "max_network_size"));
		printf(" min/max overhead-adjusted size: %8lld / %8lld\n",
		       sc_int(d, "min_adj_size"), sc_int(d, "max_adj_size"));
		printf(" average network hdr offset:     %8lld\n", sc_int(d, "avg_hdr_offset"));
	}
	printf(" rx %lld pkt %lld bytes, tx %lld pkt %lld bytes, tx retries %lld\n",
	       sc_int(d, "rx_packets"), sc_int(d, "rx_bytes"), sc_int(d, "tx_packets"),
	       sc_int(d, "tx_bytes"), sc_int(d, "tx_retries"));
	printf(" longest worker turn %.1f us, longest control slice %.1f us\n",
	       sc_int(d, "turn_max_ns") / 1e3, sc_int(d, "control_max_ns") / 1e3);
	print_rtt(json_object_get(d, "rtt"));
	printf(" dropped:");
	json_object_foreach (json_object_get(d, "drop_reasons"), k, v)
		printf(" %s %lld", k, json_is_integer(v) ? json_integer_value(v) : 0);
	printf("\n");
	print_accounting(json_object_get(d, "accounting"));
	printf(" mbufs in use %lld of %lld\n", sc_int(d, "mbufs_in_use"), sc_int(d, "mbufs"));
	if (json_array_size(json_object_get(d, "tins")) > 0) {
		printf("\n");
		print_tins(json_object_get(d, "tins"));
	}
}

/* One line on the fail-open lease, when the daemon has one. */
static void
print_fail_open(const json_t *fo)
{
	if (!json_is_object(fo))
		return;
	printf("fail-open: %s; taken over %lld time(s), lapsed %lld (%lld late, %lld withheld; "
	       "%.1f ms), withheld %lld, waited for drains %lld, longest look gap %.1f ms\n",
	       json_is_true(json_object_get(fo, "holding")) ? "shaperd holds the line"
							    : "the bridge carries the line",
	       sc_int(fo, "takeovers"), sc_int(fo, "lapses"), sc_int(fo, "lapses_late"),
	       sc_int(fo, "lapses_withheld"), sc_int(fo, "lapsed_us") / 1e3, sc_int(fo, "withheld"),
	       sc_int(fo, "drain_waits"), sc_int(fo, "look_gap_max_us") / 1e3);
}

static int
show_stats(const struct opts *o, const json_t *r)
{
	const json_t *dirs = json_object_get(r, "directions");
	const char *k;
	json_t *d;

	if (o->json)
		return sc_print_json(r);
	print_ports(json_object_get(r, "ports"));
	print_fail_open(json_object_get(r, "fail_open"));
	json_object_foreach ((json_t *)dirs, k, d) {
		printf("\n");
		print_direction(k, d);
	}
	return SC_EXIT_OK;
}

/* ---- flows ---- */

static const char *
proto_name(long long p, char *buf, size_t len)
{
	switch (p) {
	case 1:
		return "icmp";
	case 6:
		return "tcp";
	case 17:
		return "udp";
	case 58:
		return "icmpv6";
	case 132:
		return "sctp";
	default:
		snprintf(buf, len, "%lld", p);
		return buf;
	}
}

/* Flows carry the tin's index in display order; stats has the names. */
static const char *
tin_name(const json_t *stats, const char *dir, long long i)
{
	const json_t *d = json_object_get(json_object_get(stats, "directions"), dir);
	const json_t *tin = json_array_get(json_object_get(d, "tins"), (size_t)i);

	return tin != NULL ? sc_str(tin, "name") : NULL;
}

/* A port, or "-" where the reply holds none (null: hidden at this access level). */
static void
port_cell(struct sc_table *t, const json_t *f, const char *key)
{
	if (json_is_integer(json_object_get(f, key)))
		sc_table_cell(t, "%lld", sc_int(f, key));
	else
		sc_table_cell(t, "-");
}

static int
show_flows(const struct opts *o, const json_t *r, const json_t *stats)
{
	const char *k;
	json_t *arr, *f;
	bool first = true;

	if (o->json)
		return sc_print_json(r);
	json_object_foreach ((json_t *)r, k, arr) {
		struct sc_table t;
		size_t i;
		char b1[32], b2[32];

		if (!first)
			printf("\n");
		first = false;
		if (json_array_size(arr) == 0) {
			printf("%s: no queued flows\n", k);
			continue;
		}
		printf("%s: %zu queued flow%s, largest backlog first\n", k, json_array_size(arr),
		       json_array_size(arr) == 1 ? "" : "s");
		sc_table_init(&t, 11);
		t.left[1] = t.left[3] = true;
		sc_table_cell(&t, "proto");
		sc_table_cell(&t, "source");
		sc_table_cell(&t, "sport");
		sc_table_cell(&t, "destination");
		sc_table_cell(&t, "dport");
		sc_table_cell(&t, "tin");
		sc_table_cell(&t, "packets");
		sc_table_cell(&t, "backlog");
		sc_table_cell(&t, "sojourn");
		sc_table_cell(&t, "rtt wan");
		sc_table_cell(&t, "rtt lan");
		json_array_foreach (arr, i, f) {
			sc_table_cell(&t, "%s", proto_name(sc_int(f, "proto"), b1, sizeof(b1)));
			/* Below the operator level the daemon sends networks and no ports. */
			sc_table_cell(&t, "%s", sc_str(f, "src"));
			port_cell(&t, f, "sport");
			sc_table_cell(&t, "%s", sc_str(f, "dst"));
			port_cell(&t, f, "dport");
			if (tin_name(stats, k, sc_int(f, "tin")) != NULL)
				sc_table_cell(&t, "%s", tin_name(stats, k, sc_int(f, "tin")));
			else
				sc_table_cell(&t, "%lld", sc_int(f, "tin"));
			sc_table_cell(&t, "%lld", sc_int(f, "packets"));
			sc_fmt_size((uint64_t)sc_int(f, "backlog_bytes"), b1, sizeof(b1));
			sc_table_cell(&t, "%s", b1);
			sc_fmt_time_us((uint64_t)sc_int(f, "sojourn_us"), b2, sizeof(b2));
			sc_table_cell(&t, "%s", b2);
			/* Passive RTT of the flow's last sample per part, "-" when none yet. */
			for (int part = 0; part < 2; part++) {
				long long us = sc_int(f, part == 0 ? "rtt_wan_us" : "rtt_lan_us");

				sc_fmt_time_us((uint64_t)us, b2, sizeof(b2));
				sc_table_cell(&t, "%s", us > 0 ? b2 : "-");
			}
		}
		sc_table_print(&t, stdout, "  ");
		sc_table_free(&t);
	}
	return SC_EXIT_OK;
}

static int
flows_with_names(struct sc_conn *c, const struct opts *o, const json_t *flows)
{
	json_t *args = NULL, *stats;
	const char *k;
	json_t *v;
	int rc;

	/* One direction asked: fetch just its tins. */
	if (json_object_size(flows) == 1) {
		json_object_foreach ((json_t *)flows, k, v)
			args = json_pack("{s:s}", "direction", k);
	}
	rc = sc_call(c, "stats", args, &stats);
	if (rc != SC_EXIT_OK)
		return rc;
	rc = show_flows(o, flows, stats);
	json_decref(stats);
	return rc;
}

/* ---- get / set ---- */

static void
print_settings(const char *dir, const json_t *s)
{
	struct sc_table t;
	const char *k;
	json_t *v;

	printf("%s\n", dir);
	sc_table_init(&t, 2);
	t.left[1] = true;
	json_object_foreach ((json_t *)s, k, v) {
		sc_table_cell(&t, "%s", k);
		if (json_is_string(v)) {
			sc_table_cell(&t, "%s", json_string_value(v));
		} else {
			char *e = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

			sc_table_cell(&t, "%s", e != NULL ? e : "?");
			free(e);
		}
	}
	sc_table_print(&t, stdout, "  ");
	sc_table_free(&t);
}

static int
show_settings(const struct opts *o, const json_t *r)
{
	const char *k;
	json_t *v;
	bool first = true;

	if (o->json)
		return sc_print_json(r);
	json_object_foreach ((json_t *)r, k, v) {
		if (!first)
			printf("\n");
		first = false;
		print_settings(k, v);
	}
	return SC_EXIT_OK;
}

/*
 * true/false -> bool, an integer literal -> integer, a decimal literal (a
 * percentage such as emulate.loss 0.5) -> real, anything else -> string.
 */
static json_t *
typed_value(const char *s)
{
	char *end;
	long long v;
	double x;

	if (strcmp(s, "true") == 0)
		return json_true();
	if (strcmp(s, "false") == 0)
		return json_false();
	errno = 0;
	v = strtoll(s, &end, 10);
	if (s[0] != '\0' && *end == '\0' && errno == 0 && s[0] != '+')
		return json_integer((json_int_t)v);
	errno = 0;
	x = strtod(s, &end);
	if (s[0] != '\0' && *end == '\0' && errno == 0 && strchr(s, '.') != NULL &&
	    strspn(s, "-0123456789.") == strlen(s))
		return json_real(x);
	return json_string(s);
}

static int
set_args(int argc, char **argv, json_t **args)
{
	json_t *settings;

	*args = NULL;
	if (argc < 1)
		return usage_error("set: missing direction (upstream or downstream)");
	if (!is_direction(argv[0]))
		return usage_error("set: \"%s\" is not a direction (upstream or downstream)",
				   argv[0]);
	if (argc < 3 || (argc - 1) % 2 != 0)
		return usage_error("set: expected <key> <value> pairs after the direction, e.g. "
				   "set %s bandwidth 100mbit",
				   argv[0]);
	settings = json_object();
	for (int i = 1; i + 1 < argc; i += 2) {
		/* "emulate.delay 45ms" is {"emulate": {"delay": "45ms"}} */
		const char *dot = strchr(argv[i], '.');
		json_t *into = settings;
		const char *key = argv[i];

		if (dot != NULL && dot != argv[i] && dot[1] != '\0') {
			char outer[64];

			snprintf(outer, sizeof(outer), "%.*s", (int)(dot - argv[i]), argv[i]);
			into = json_object_get(settings, outer);
			if (into == NULL) {
				into = json_object();
				json_object_set_new(settings, outer, into);
			}
			key = dot + 1;
		}
		if (!json_is_object(into) || json_object_get(into, key) != NULL) {
			json_decref(settings);
			return usage_error("set: \"%s\" is given twice", argv[i]);
		}
		json_object_set_new(into, key, typed_value(argv[i + 1]));
	}
	*args = json_pack("{s:s, s:o}", "direction", argv[0], "settings", settings);
	return SC_EXIT_OK;
}

/* "upstream.bandwidth, downstream.rtt" from {"upstream": [..], "downstream": [..]}. */
static void
print_keys(const json_t *by_dir)
{
	const char *d;
	json_t *a, *k;
	size_t i;
	bool any = false;

	json_object_foreach ((json_t *)by_dir, d, a)
		json_array_foreach (a, i, k) {
			printf("%s%s.%s", any ? ", " : "", d, json_string_value(k));
			any = true;
		}
	if (!any)
		printf("nothing changed");
	printf("\n");
}

static int
show_reload(const struct opts *o, const json_t *r)
{
	if (o->json)
		return sc_print_json(r);
	printf("reloaded %s: ", sc_str(r, "file"));
	print_keys(json_object_get(r, "applied"));
	return SC_EXIT_OK;
}

static int
show_save(const struct opts *o, const json_t *r)
{
	if (o->json)
		return sc_print_json(r);
	if (!json_is_true(json_object_get(r, "written"))) {
		printf("%s already holds the running settings\n", sc_str(r, "file"));
		return SC_EXIT_OK;
	}
	printf("wrote %s: ", sc_str(r, "file"));
	print_keys(json_object_get(r, "keys"));
	if (json_is_string(json_object_get(r, "backup")))
		printf("the file as it was: %s\n", sc_str(r, "backup"));
	return SC_EXIT_OK;
}

/* ---- watch ---- */

static volatile sig_atomic_t stop_watch;

static void
on_signal(int sig)
{
	(void)sig;
	stop_watch = 1;
}

static double
mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Per-second rate of a counter between two samples; negative after a reset. */
static double
per_s(const json_t *now, const json_t *prev, const char *key, double dt)
{
	if (prev == NULL || dt <= 0)
		return -1;
	if (sc_int(now, key) < sc_int(prev, key))
		return -1;
	return (double)(sc_int(now, key) - sc_int(prev, key)) / dt;
}

static void
cell_rate(struct sc_table *t, double v, bool bits)
{
	char buf[32];

	if (v < 0) {
		sc_table_cell(t, "-");
	} else if (bits) {
		sc_fmt_bits(v * 8, buf, sizeof(buf));
		sc_table_cell(t, "%s", buf);
	} else {
		sc_table_cell(t, "%.0f", v);
	}
}

static const json_t *
tin_of(const json_t *dir, size_t i)
{
	return dir != NULL ? json_array_get(json_object_get(dir, "tins"), i) : NULL;
}

/* The last link changes watch saw, oldest first, shown under the port table. */
#define WATCH_LINK_EVENTS 5

struct link_events {
	char line[WATCH_LINK_EVENTS][160];
	unsigned int n; /* seen so far; the last WATCH_LINK_EVENTS are kept */
};

/*
 * A port's link changes between two samples, from its state and its
 * link_changes counter: a flap shorter than the interval leaves the state
 * as it was but the counter moved, and is reported too.
 */
static void
note_link_changes(struct link_events *ev, const json_t *r, const json_t *prev, const char *ts)
{
	const json_t *ports = json_object_get(r, "ports");
	const json_t *pports = prev != NULL ? json_object_get(prev, "ports") : NULL;
	const char *k;
	json_t *p;

	json_object_foreach ((json_t *)ports, k, p) {
		const json_t *pp = json_object_get(pports, k);
		bool up = sc_int(p, "link_up") != 0, was = sc_int(pp, "link_up") != 0;
		long long n = sc_int(p, "link_changes") - sc_int(pp, "link_changes");
		char *line;

		if (pp == NULL || json_object_get(p, "link_up") == NULL)
			continue;
		if (n < 0) /* another daemon answers now: only the state compares */
			n = up != was;
		if (n == 0 && up == was)
			continue;
		line = ev->line[ev->n++ % WATCH_LINK_EVENTS];
		if (n == 1)
			snprintf(line, sizeof(ev->line[0]), "%s  %s port %s: link %s", ts, k,
				 sc_str(p, "name"), up ? "up" : "down");
		else
			snprintf(line, sizeof(ev->line[0]),
				 "%s  %s port %s: link %s, %lld changes since the last look", ts, k,
				 sc_str(p, "name"), up ? "up" : "down", n);
	}
}

static void
watch_ports(const json_t *r, const json_t *prev, double dt, const struct link_events *ev)
{
	const json_t *ports = json_object_get(r, "ports");
	const json_t *pports = prev != NULL ? json_object_get(prev, "ports") : NULL;
	struct sc_table t;
	const char *k;
	json_t *p;

	if (json_object_size(ports) == 0)
		return;
	sc_table_init(&t, 9);
	t.left[1] = true;
	t.left[2] = true;
	sc_table_cell(&t, "port");
	sc_table_cell(&t, "device");
	sc_table_cell(&t, "link");
	sc_table_cell(&t, "changes");
	sc_table_cell(&t, "rx pps");
	sc_table_cell(&t, "tx pps");
	sc_table_cell(&t, "rx rate");
	sc_table_cell(&t, "tx rate");
	sc_table_cell(&t, "rx_missed");
	json_object_foreach ((json_t *)ports, k, p) {
		const json_t *pp = json_object_get(pports, k);

		sc_table_cell(&t, "%s", k);
		sc_table_cell(&t, "%s", sc_str(p, "name"));
		cell_link(&t, p);
		sc_table_cell(&t, "%lld", sc_int(p, "link_changes"));
		cell_rate(&t, per_s(p, pp, "rx_packets", dt), false);
		cell_rate(&t, per_s(p, pp, "tx_packets", dt), false);
		cell_rate(&t, per_s(p, pp, "rx_bytes", dt), true);
		cell_rate(&t, per_s(p, pp, "tx_bytes", dt), true);
		sc_table_cell(&t, "%lld", sc_int(p, "rx_missed"));
	}
	printf("\n");
	sc_table_print(&t, stdout, "");
	sc_table_free(&t);
	if (ev->n == 0)
		return;
	printf("\nlink changes seen (the last %u):\n", WATCH_LINK_EVENTS);
	for (unsigned int i = ev->n > WATCH_LINK_EVENTS ? ev->n - WATCH_LINK_EVENTS : 0; i < ev->n;
	     i++)
		printf("  %s\n", ev->line[i % WATCH_LINK_EVENTS]);
}

static void
watch_frame(const struct opts *o, const json_t *r, const json_t *prev, double dt,
	    struct link_events *ev)
{
	const json_t *dirs = json_object_get(r, "directions");
	const json_t *pdirs = prev != NULL ? json_object_get(prev, "directions") : NULL;
	struct sc_table t;
	const char *k;
	json_t *d, *tin;
	char b1[32], b2[32], ts[32];
	time_t now = time(NULL);
	bool tins = false;

	strftime(ts, sizeof(ts), "%H:%M:%S", localtime(&now));
	note_link_changes(ev, r, prev, ts);
	printf("shaperd at %s, every %gs  %s\n\n", o->socket, o->interval_s, ts);
	sc_table_init(&t, 11);
	sc_table_cell(&t, "direction");
	sc_table_cell(&t, "discipline");
	sc_table_cell(&t, "bandwidth");
	sc_table_cell(&t, "rx pps");
	sc_table_cell(&t, "tx pps");
	sc_table_cell(&t, "tx rate");
	sc_table_cell(&t, "drops/s");
	sc_table_cell(&t, "marks/s");
	sc_table_cell(&t, "backlog");
	sc_table_cell(&t, "qlen");
	sc_table_cell(&t, "drops");
	t.left[1] = true;
	json_object_foreach ((json_t *)dirs, k, d) {
		const json_t *p = json_object_get(pdirs, k);

		sc_table_cell(&t, "%s", k);
		sc_table_cell(&t, "%s", sc_str(d, "discipline"));
		sc_fmt_rate((uint64_t)sc_int(d, "bandwidth"), b1, sizeof(b1));
		sc_table_cell(&t, "%s", b1);
		cell_rate(&t, per_s(d, p, "rx_packets", dt), false);
		cell_rate(&t, per_s(d, p, "tx_packets", dt), false);
		cell_rate(&t, per_s(d, p, "tx_bytes", dt), true);
		cell_rate(&t, per_s(d, p, "drops", dt), false);
		cell_rate(&t, per_s(d, p, "ecn_mark", dt), false);
		sc_fmt_size((uint64_t)sc_int(d, "backlog"), b1, sizeof(b1));
		sc_table_cell(&t, "%s", b1);
		sc_table_cell(&t, "%lld", sc_int(d, "qlen"));
		sc_table_cell(&t, "%lld", sc_int(d, "drops"));
		tins |= json_array_size(json_object_get(d, "tins")) > 0;
	}
	sc_table_print(&t, stdout, "");
	sc_table_free(&t);
	watch_ports(r, prev, dt, ev);
	if (!tins)
		return;
	printf("\n");
	sc_table_init(&t, 12);
	t.left[1] = true;
	sc_table_cell(&t, "direction");
	sc_table_cell(&t, "tin");
	sc_table_cell(&t, "thresh");
	sc_table_cell(&t, "in rate"); /* tins count bytes at enqueue, as CAKE does */
	sc_table_cell(&t, "pk_delay");
	sc_table_cell(&t, "av_delay");
	sc_table_cell(&t, "sp_delay");
	sc_table_cell(&t, "backlog");
	sc_table_cell(&t, "drops");
	sc_table_cell(&t, "marks");
	sc_table_cell(&t, "sp/bk/un flows");
	sc_table_cell(&t, "max_len");
	json_object_foreach ((json_t *)dirs, k, d) {
		size_t i;

		json_array_foreach (json_object_get(d, "tins"), i, tin) {
			sc_table_cell(&t, "%s", i == 0 ? k : "");
			sc_table_cell(&t, "%s", sc_str(tin, "name"));
			sc_fmt_rate((uint64_t)sc_int(tin, "threshold_rate"), b1, sizeof(b1));
			sc_table_cell(&t, "%s", b1);
			const json_t *ptin = tin_of(json_object_get(pdirs, k), i);

			cell_rate(&t, per_s(tin, ptin, "sent_bytes", dt), true);
			sc_fmt_time_us((uint64_t)sc_int(tin, "peak_delay_us"), b1, sizeof(b1));
			sc_table_cell(&t, "%s", b1);
			sc_fmt_time_us((uint64_t)sc_int(tin, "avg_delay_us"), b1, sizeof(b1));
			sc_table_cell(&t, "%s", b1);
			sc_fmt_time_us((uint64_t)sc_int(tin, "base_delay_us"), b1, sizeof(b1));
			sc_table_cell(&t, "%s", b1);
			sc_fmt_size((uint64_t)sc_int(tin, "backlog_bytes"), b2, sizeof(b2));
			sc_table_cell(&t, "%s", b2);
			sc_table_cell(&t, "%lld", sc_int(tin, "drops"));
			sc_table_cell(&t, "%lld", sc_int(tin, "ecn_mark"));
			sc_table_cell(&t, "%lld/%lld/%lld", sc_int(tin, "sparse_flows"),
				      sc_int(tin, "bulk_flows"), sc_int(tin, "unresponsive_flows"));
			sc_table_cell(&t, "%lld", sc_int(tin, "max_pkt_len"));
		}
	}
	sc_table_print(&t, stdout, "");
	sc_table_free(&t);
}

/* Sleep up to s seconds, waking early on a signal. */
static void
nap(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - floor(s)) * 1e9) };

	while (!stop_watch && nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int
cmd_watch(struct sc_conn *c, const struct opts *o)
{
	bool tty = isatty(STDOUT_FILENO);
	json_t *prev = NULL, *r;
	double t_prev = 0;
	int rc = SC_EXIT_OK;
	struct sigaction sa;
	struct link_events ev = { .n = 0 };

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (long n = 0; !stop_watch && (o->count == 0 || n < o->count); n++) {
		double t_now;

		if (n > 0)
			nap(o->interval_s);
		if (stop_watch)
			break;
		rc = sc_call(c, "stats", NULL, &r);
		if (rc != SC_EXIT_OK)
			break;
		t_now = mono_s();
		if (o->json) {
			rc = sc_print_json(r);
		} else {
			/* Clear only a terminal: a file or pipe gets frames one after another. */
			if (tty)
				fputs("\033[H\033[2J", stdout);
			else if (n > 0)
				putchar('\n');
			watch_frame(o, r, prev, t_now - t_prev, &ev);
		}
		fflush(stdout);
		json_decref(prev);
		prev = r;
		t_prev = t_now;
		if (rc != SC_EXIT_OK)
			break;
	}
	json_decref(prev);
	return rc;
}

/* ---- metrics ---- */

static int
cmd_metrics(struct sc_conn *c)
{
	json_t *v, *s, *m = NULL;
	int rc = sc_call(c, "version", NULL, &v);

	if (rc != SC_EXIT_OK)
		return rc;
	rc = sc_call(c, "stats", NULL, &s);
	if (rc == SC_EXIT_OK)
		rc = ctl_metrics_print(stdout, v, s,
				       "1 when shapectl got an answer from shaperd") == 0
				     ? SC_EXIT_OK
				     : SC_EXIT_IO;
	/* Per node and the top subscribers (empty lists when subscribers are not shaped). */
	if (rc == SC_EXIT_OK && sc_call(c, "subscribers.metrics", NULL, &m) == SC_EXIT_OK &&
	    ctl_metrics_print_subscribers(stdout, m) != 0)
		rc = SC_EXIT_IO;
	json_decref(v);
	json_decref(s);
	json_decref(m);
	return rc;
}

/* ---- main ---- */

enum cmd_id {
	C_VERSION,
	C_STATS,
	C_FLOWS,
	C_GET,
	C_SET,
	C_RESET,
	C_WATCH,
	C_METRICS,
	C_RELOAD,
	C_SAVE,
	C_SUBS,
	C_SUB,
	C_NODE
};

static const struct {
	const char *name;
	enum cmd_id id;
} commands[] = {
	{ "version", C_VERSION }, { "stats", C_STATS },      { "flows", C_FLOWS },
	{ "get", C_GET },         { "set", C_SET },          { "reset", C_RESET },
	{ "watch", C_WATCH },     { "metrics", C_METRICS },  { "reload", C_RELOAD },
	{ "save", C_SAVE },       { "subscribers", C_SUBS }, { "subscriber", C_SUB },
	{ "node", C_NODE },
};

/* Options after the command: --top for flows, -n/--count for watch, -j anywhere. */
static int
parse_command_opts(enum cmd_id id, const char *name, int *argc, char ***argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "top", required_argument, NULL, 'T' },
		{ "count", required_argument, NULL, 'C' },
		{ "interval", required_argument, NULL, 'n' },
		{ "save", no_argument, NULL, 'S' },
		{ "by", required_argument, NULL, 'B' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	/*
	 * Options may follow the arguments ("flows upstream --top 5"), except for
	 * set, where "-5" is a value (set upstream overhead -5), not an option.
	 */
	const char *shortopts = id == C_SET ? "+:j" : id == C_WATCH ? ":jn:" : ":j";

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(*argc, *argv, shortopts, lopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o->json = true;
			break;
		case 'S':
			if (id != C_SET)
				return usage_error("%s: --save applies to set only", name);
			o->save = true;
			break;
		case 'T':
			if (id == C_SUBS) {
				if (parse_long(optarg, 1, 1048576, &o->top) != 0)
					return usage_error("subscribers: --top \"%s\": expected "
							   "1..1048576",
							   optarg);
				break;
			}
			if (id != C_FLOWS)
				return usage_error(
						"%s: --top applies to flows and subscribers only",
						name);
			if (parse_long(optarg, 1, 1000, &o->top) != 0)
				return usage_error("flows: --top \"%s\": expected 1..1000", optarg);
			break;
		case 'B':
			if (id != C_SUBS)
				return usage_error("%s: --by applies to subscribers only", name);
			if (strcmp(optarg, "bytes") != 0 && strcmp(optarg, "drops") != 0 &&
			    strcmp(optarg, "rate") != 0 && strcmp(optarg, "rtt") != 0 &&
			    strcmp(optarg, "busy_rtt") != 0)
				return usage_error(
						"subscribers: --by \"%s\": expected bytes, drops, "
						"rate, rtt or busy_rtt",
						optarg);
			o->by = optarg;
			break;
		case 'n':
			if (id != C_WATCH)
				return usage_error("%s: -n applies to watch only", name);
			if (parse_seconds(optarg, &o->interval_s) != 0)
				return usage_error("watch: -n \"%s\": expected seconds > 0",
						   optarg);
			break;
		case 'C':
			if (id != C_WATCH)
				return usage_error("%s: --count applies to watch only", name);
			if (parse_long(optarg, 1, 1000000000, &o->count) != 0)
				return usage_error("watch: --count \"%s\": expected an integer "
						   ">= 1",
						   optarg);
			break;
		case ':':
			return usage_error("%s: option %s needs a value", name,
					   (*argv)[optind - 1]);
		default:
			return usage_error("%s: unknown option %s", name, (*argv)[optind - 1]);
		}
	}
	*argc -= optind;
	*argv += optind;
	return SC_EXIT_OK;
}

int
main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "socket", required_argument, NULL, 's' },  { "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' }, { "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },       { NULL, 0, NULL, 0 },
	};
	struct opts o = { .timeout_ms = 5000, .interval_s = 1.0 };
	const char *env = getenv("SHAPER_SOCKET");
	json_t *args = NULL, *r = NULL;
	const char *sub_cmd = NULL; /* subscriber or node, set or del */
	struct sc_conn conn;
	enum cmd_id id;
	const char *name;
	double secs;
	size_t i;
	int c, rc;

	o.socket = env != NULL && env[0] != '\0' ? env : SHAPER_DEFAULT_SOCKET;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:s:jt:hV", lopts, NULL)) != -1) {
		switch (c) {
		case 's':
			o.socket = optarg;
			break;
		case 'j':
			o.json = true;
			break;
		case 't':
			if (parse_seconds(optarg, &secs) != 0)
				return usage_error("--timeout \"%s\": expected seconds > 0",
						   optarg);
			o.timeout_ms = (int)ceil(secs * 1000);
			break;
		case 'h':
			usage(stdout);
			return SC_EXIT_OK;
		case 'V':
			printf("shapectl %s (control protocol %d)\n", SHAPER_VERSION,
			       CTL_PROTOCOL_VERSION);
			return SC_EXIT_OK;
		case ':':
			return usage_error("option %s needs a value", argv[optind - 1]);
		default:
			return usage_error("unknown option %s", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return usage_error("no command given");
	name = argv[optind];
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(name, commands[i].name) == 0)
			break;
	if (i == sizeof(commands) / sizeof(commands[0]))
		return usage_error("\"%s\" is not a command (version, stats, flows, get, set, "
				   "reset, reload, save, watch, metrics, subscribers, subscriber, "
				   "node)",
				   name);
	id = commands[i].id;
	argc -= optind;
	argv += optind;
	rc = parse_command_opts(id, name, &argc, &argv, &o);
	if (rc != SC_EXIT_OK)
		return rc;

	/* Arguments are checked before connecting: a typo never reaches the daemon. */
	switch (id) {
	case C_VERSION:
	case C_RESET:
	case C_WATCH:
	case C_METRICS:
	case C_RELOAD:
	case C_SAVE:
		if (argc > 0)
			return usage_error("%s: unexpected argument \"%s\"", name, argv[0]);
		break;
	case C_STATS:
	case C_GET:
		rc = direction_args(argc, argv, &args);
		break;
	case C_FLOWS:
		rc = direction_args(argc, argv, &args);
		if (rc == SC_EXIT_OK && o.top > 0) {
			if (args == NULL)
				args = json_object();
			json_object_set_new(args, "top", json_integer(o.top));
		}
		break;
	case C_SUBS:
		if (argc > 0)
			return usage_error("%s: unexpected argument \"%s\"", name, argv[0]);
		if (o.top > 0 || o.by != NULL) {
			args = json_object();
			if (o.top > 0)
				json_object_set_new(args, "top", json_integer(o.top));
			/* A top-N without --by is by bytes, as the daemon sorts it. */
			json_object_set_new(args, "by", json_string(o.by != NULL ? o.by : "bytes"));
			if (o.by == NULL)
				o.by = "bytes";
		}
		break;
	case C_SUB:
		if (argc >= 2 && (strcmp(argv[0], "set") == 0 || strcmp(argv[0], "del") == 0)) {
			rc = sc_subscriber_change_args(argc, argv, &sub_cmd, &args);
			break;
		}
		if (argc != 1)
			return usage_error("subscriber: expected one circuit id or address");
		/*
		 * An IPv6 address has a colon, an IPv4 one dots and digits only;
		 * anything else (numeric circuit ids too) is an id.
		 */
		args = json_pack("{s:s}",
				 strchr(argv[0], ':') != NULL || (strchr(argv[0], '.') != NULL &&
								  strspn(argv[0], "0123456789.") ==
										  strlen(argv[0]))
						 ? "address"
						 : "id",
				 argv[0]);
		break;
	case C_NODE:
		if (argc < 2 || (strcmp(argv[0], "set") != 0 && strcmp(argv[0], "del") != 0))
			return usage_error("node: expected set NAME ... or del NAME");
		rc = sc_node_change_args(argc, argv, &sub_cmd, &args);
		break;
	case C_SET:
		/* "set upstream bandwidth 90mbit --save": the flag may come last. */
		if (argc > 0 && strcmp(argv[argc - 1], "--save") == 0) {
			o.save = true;
			argc--;
		}
		rc = set_args(argc, argv, &args);
		break;
	}
	if (rc != SC_EXIT_OK)
		return rc;

	rc = sc_connect(&conn, o.socket, o.timeout_ms);
	if (rc != SC_EXIT_OK) {
		json_decref(args);
		return rc;
	}
	switch (id) {
	case C_WATCH:
		rc = cmd_watch(&conn, &o);
		break;
	case C_METRICS:
		rc = cmd_metrics(&conn);
		break;
	default: {
		static const char *const wire[] = {
			[C_VERSION] = "version",       [C_STATS] = "stats",
			[C_FLOWS] = "flows",           [C_GET] = "config.get",
			[C_SET] = "config.set",        [C_RESET] = "stats.reset",
			[C_RELOAD] = "config.reload",  [C_SAVE] = "config.save",
			[C_SUBS] = "subscribers.list", [C_SUB] = "subscribers.get",
		};

		if (id == C_SUBS)
			rc = sc_list_subscribers(&conn, args, &r);
		else
			rc = sc_call(&conn, sub_cmd != NULL ? sub_cmd : wire[id], args, &r);
		args = NULL;
		if (rc != SC_EXIT_OK)
			break;
		if (id == C_VERSION)
			rc = show_version(&o, r);
		else if (id == C_STATS)
			rc = show_stats(&o, r);
		else if (id == C_FLOWS && o.json)
			rc = sc_print_json(r);
		else if (id == C_FLOWS)
			rc = flows_with_names(&conn, &o, r);
		else if (id == C_GET || id == C_SET)
			rc = show_settings(&o, r);
		else if (id == C_RELOAD)
			rc = show_reload(&o, r);
		else if (id == C_SAVE)
			rc = show_save(&o, r);
		else if (id == C_SUBS)
			rc = sc_show_subscribers(r, o.json, o.by);
		else if (id == C_NODE)
			rc = sc_show_node_change(r, o.json);
		else if (id == C_SUB && sub_cmd != NULL)
			rc = sc_show_subscriber_change(r, o.json);
		else if (id == C_SUB)
			rc = sc_show_subscriber(r, o.json);
		else if (o.json)
			rc = sc_print_json(r); /* reset: {} */
		json_decref(r);
		/* The change stands even if the save is refused: exit 1 says so. */
		if (rc == SC_EXIT_OK && id == C_SET && o.save) {
			rc = sc_call(&conn, "config.save", NULL, &r);
			if (rc == SC_EXIT_OK) {
				if (!o.json)
					printf("\n");
				rc = show_save(&o, r);
				json_decref(r);
			}
		}
		break;
	}
	}
	sc_close(&conn);
	json_decref(args);
	/* A closed pipe (shapectl stats | head) is an output error, not success. */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (rc == SC_EXIT_OK)
			fprintf(stderr, "shapectl: cannot write the output: %s\n", strerror(errno));
		return rc == SC_EXIT_OK ? SC_EXIT_IO : rc;
	}
	return rc;
}
