/*
 * Prometheus text exposition (format 0.0.4) of one "stats" result, shared by
 * `shapectl metrics` (for the node_exporter textfile collector) and shaperd's
 * HTTP /metrics endpoint. Names follow the
 * Prometheus guide: one "shaper_" prefix, base units (bytes, seconds,
 * bytes per second), "_total" on counters, dimensions as labels (port,
 * direction, tin, reason), never per-flow labels. The qdisc families
 * mirror node_exporter's node_qdisc_* so dashboards carry over.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "shaper/metrics.h"

enum scope {
	S_PORT,
	S_DIR,
	S_TIN
};

enum scale {
	V_INT,
	V_US_TO_S,
	V_NS_TO_S
};

struct metric {
	const char *name;
	const char *type; /* "counter" or "gauge" */
	enum scope scope;
	const char *key; /* field of the port, direction or tin object */
	enum scale scale;
	const char *help;
};

static const struct metric metrics[] = {
	/* ports (rte_eth_stats) */
	{ "shaper_port_receive_packets_total", "counter", S_PORT, "rx_packets", V_INT,
	  "Packets received by the port" },
	{ "shaper_port_receive_bytes_total", "counter", S_PORT, "rx_bytes", V_INT,
	  "Bytes received by the port" },
	{ "shaper_port_transmit_packets_total", "counter", S_PORT, "tx_packets", V_INT,
	  "Packets transmitted by the port" },
	{ "shaper_port_transmit_bytes_total", "counter", S_PORT, "tx_bytes", V_INT,
	  "Bytes transmitted by the port" },
	{ "shaper_port_receive_missed_total", "counter", S_PORT, "rx_missed", V_INT,
	  "Packets the port dropped because the receive queue was full (imissed)" },
	{ "shaper_port_receive_errors_total", "counter", S_PORT, "rx_errors", V_INT,
	  "Erroneous packets received by the port" },
	{ "shaper_port_transmit_errors_total", "counter", S_PORT, "tx_errors", V_INT,
	  "Packets the port failed to transmit" },
	{ "shaper_port_receive_nombuf_total", "counter", S_PORT, "rx_nombuf", V_INT,
	  "Receive failures for want of an mbuf" },
	{ "shaper_port_up", "gauge", S_PORT, "link_up", V_INT, "1 while the port's link is up" },
	{ "shaper_port_link_speed_megabits", "gauge", S_PORT, "link_speed", V_INT,
	  "Link speed the port reports, Mbit/s (0 while down)" },
	{ "shaper_port_link_changes_total", "counter", S_PORT, "link_changes", V_INT,
	  "Times the port's link went down or came up since start" },
	{ "shaper_port_reconnects_total", "counter", S_PORT, "reconnects", V_INT,
	  "Times a net_memif client port was restarted while down and started again" },
	/* directions: the shaper's own counters */
	{ "shaper_config_bandwidth_bytes_per_second", "gauge", S_DIR, "bandwidth", V_INT,
	  "Configured shaper rate of the direction, 0 = unlimited" },
	{ "shaper_direction_receive_packets_total", "counter", S_DIR, "rx_packets", V_INT,
	  "Packets read from the direction's input port" },
	{ "shaper_direction_receive_bytes_total", "counter", S_DIR, "rx_bytes", V_INT,
	  "Bytes read from the direction's input port" },
	{ "shaper_direction_transmit_packets_total", "counter", S_DIR, "tx_packets", V_INT,
	  "Packets handed to the direction's output port" },
	{ "shaper_direction_transmit_bytes_total", "counter", S_DIR, "tx_bytes", V_INT,
	  "Bytes handed to the direction's output port" },
	{ "shaper_direction_transmit_retries_total", "counter", S_DIR, "tx_retries", V_INT,
	  "Transmit bursts the output port did not take in full at once" },
	{ "shaper_direction_receive_foreign_total", "counter", S_DIR, "rx_foreign", V_INT,
	  "Frames received in another pool's mbufs and copied into the direction's pool" },
	{ "shaper_direction_turn_max_seconds", "gauge", S_DIR, "turn_max_ns", V_NS_TO_S,
	  "Longest turn of the serving worker since the last reset (how long rx can wait)" },
	{ "shaper_direction_control_max_seconds", "gauge", S_DIR, "control_max_ns", V_NS_TO_S,
	  "Longest slice of control work in one worker turn since the last reset" },
	{ "shaper_direction_backlogged_seconds_total", "counter", S_DIR, "backlogged_us", V_US_TO_S,
	  "Time the direction held frames to send (summed over shards)" },
	{ "shaper_direction_backlogged_transmit_bytes_total", "counter", S_DIR,
	  "backlogged_tx_bytes", V_INT,
	  "Bytes sent in the time the direction held frames to send" },
	/* directions: the scheduler, named like node_exporter's qdisc collector */
	{ "shaper_qdisc_packets_total", "counter", S_DIR, "packets", V_INT,
	  "Packets dequeued by the scheduler" },
	{ "shaper_qdisc_bytes_total", "counter", S_DIR, "bytes", V_INT,
	  "Bytes dequeued by the scheduler" },
	{ "shaper_qdisc_drops_total", "counter", S_DIR, "drops", V_INT,
	  "Packets dropped in the direction, any reason (the sum of shaper_drops_total)" },
	{ "shaper_qdisc_overlimits_total", "counter", S_DIR, "overlimits", V_INT,
	  "Times the shaper held a packet back to keep to the rate" },
	{ "shaper_qdisc_ecn_marks_total", "counter", S_DIR, "ecn_mark", V_INT,
	  "Packets CE-marked instead of dropped" },
	{ "shaper_qdisc_backlog_bytes", "gauge", S_DIR, "backlog", V_INT,
	  "Bytes queued in the scheduler" },
	{ "shaper_qdisc_current_queue_length", "gauge", S_DIR, "qlen", V_INT,
	  "Packets queued in the scheduler" },
	{ "shaper_qdisc_memory_used_bytes", "gauge", S_DIR, "memory_used", V_INT,
	  "Peak buffer memory used by the scheduler (as tc reports it)" },
	{ "shaper_qdisc_memory_limit_bytes", "gauge", S_DIR, "memory_limit", V_INT,
	  "Buffer memory limit of the scheduler" },
	{ "shaper_qdisc_capacity_estimate_bytes_per_second", "gauge", S_DIR, "capacity_estimate",
	  V_INT, "Scheduler's estimate of the link capacity" },
	/* tins (CAKE; one tin for fq_codel, none for fifo) */
	{ "shaper_tin_sent_packets_total", "counter", S_TIN, "sent_packets", V_INT,
	  "Packets accepted into the tin" },
	{ "shaper_tin_sent_bytes_total", "counter", S_TIN, "sent_bytes", V_INT,
	  "Bytes accepted into the tin" },
	{ "shaper_tin_drops_total", "counter", S_TIN, "drops", V_INT,
	  "Packets dropped by the tin" },
	{ "shaper_tin_ecn_marks_total", "counter", S_TIN, "ecn_mark", V_INT,
	  "Packets CE-marked by the tin" },
	{ "shaper_tin_ack_drops_total", "counter", S_TIN, "ack_drops", V_INT,
	  "TCP ACKs removed by the ACK filter" },
	{ "shaper_tin_ect1_packets_total", "counter", S_TIN, "ect1_packets", V_INT,
	  "ECT(1) (L4S) packets accepted into the tin, counted with CAKE's l4s on" },
	{ "shaper_tin_step_marks_total", "counter", S_TIN, "step_marks", V_INT,
	  "L4S packets CE-marked at the l4s_step (not in shaper_tin_ecn_marks_total)" },
	{ "shaper_tin_way_indirect_hits_total", "counter", S_TIN, "way_indirect_hits", V_INT,
	  "Flow lookups that found their queue by set-associative search" },
	{ "shaper_tin_way_misses_total", "counter", S_TIN, "way_misses", V_INT,
	  "Flow lookups that took an empty queue" },
	{ "shaper_tin_way_collisions_total", "counter", S_TIN, "way_collisions", V_INT,
	  "Flow lookups that had to share a queue with another flow" },
	{ "shaper_tin_backlog_bytes", "gauge", S_TIN, "backlog_bytes", V_INT,
	  "Bytes queued in the tin" },
	{ "shaper_tin_threshold_rate_bytes_per_second", "gauge", S_TIN, "threshold_rate", V_INT,
	  "Rate above which the tin loses priority" },
	{ "shaper_tin_target_seconds", "gauge", S_TIN, "target_us", V_US_TO_S,
	  "CoDel target delay of the tin" },
	{ "shaper_tin_interval_seconds", "gauge", S_TIN, "interval_us", V_US_TO_S,
	  "CoDel interval of the tin" },
	{ "shaper_tin_peak_delay_seconds", "gauge", S_TIN, "peak_delay_us", V_US_TO_S,
	  "Peak queueing delay of the tin (decaying)" },
	{ "shaper_tin_avg_delay_seconds", "gauge", S_TIN, "avg_delay_us", V_US_TO_S,
	  "Average queueing delay of the tin (decaying)" },
	{ "shaper_tin_base_delay_seconds", "gauge", S_TIN, "base_delay_us", V_US_TO_S,
	  "Base (sparse) queueing delay of the tin (decaying)" },
	{ "shaper_tin_sparse_flows", "gauge", S_TIN, "sparse_flows", V_INT,
	  "Sparse flows in the tin" },
	{ "shaper_tin_bulk_flows", "gauge", S_TIN, "bulk_flows", V_INT, "Bulk flows in the tin" },
	{ "shaper_tin_unresponsive_flows", "gauge", S_TIN, "unresponsive_flows", V_INT,
	  "Flows in the tin that do not respond to drops or marks" },
	{ "shaper_tin_max_packet_length_bytes", "gauge", S_TIN, "max_pkt_len", V_INT,
	  "Largest packet seen by the tin" },
	{ "shaper_tin_flow_quantum_bytes", "gauge", S_TIN, "flow_quantum", V_INT,
	  "Bytes a flow of the tin may send per round" },
};

long long
ctl_json_int(const json_t *o, const char *key)
{
	const json_t *v = o != NULL ? json_object_get(o, key) : NULL;

	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_real(v))
		return (long long)json_real_value(v);
	if (json_is_boolean(v))
		return json_is_true(v);
	return 0;
}

const char *
ctl_json_str(const json_t *o, const char *key)
{
	const json_t *v = o != NULL ? json_object_get(o, key) : NULL;

	return json_is_string(v) ? json_string_value(v) : "";
}

/* Label values may hold anything: escape \, " and newline as the format requires. */
static void
put_label(FILE *f, const char *name, const char *value, bool first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", name);
	for (const char *p = value; *p != '\0'; p++) {
		if (*p == '\\')
			fputs("\\\\", f);
		else if (*p == '"')
			fputs("\\\"", f);
		else if (*p == '\n')
			fputs("\\n", f);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void
put_value(FILE *f, const json_t *o, const char *key, enum scale scale)
{
	long long v = ctl_json_int(o, key);

	if (scale == V_US_TO_S)
		fprintf(f, " %.9g\n", v / 1e6);
	else if (scale == V_NS_TO_S)
		fprintf(f, " %.9g\n", v / 1e9);
	else
		fprintf(f, " %lld\n", v);
}

static void
header(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One family: its header, then a sample per port, direction or tin that has the field. */
static void
family(FILE *f, const struct metric *m, const json_t *ports, const json_t *dirs)
{
	const char *k, *dk;
	json_t *o, *d;
	bool any = false;

	/* Emit the header only for families with samples (fifo has no tins). */
	if (m->scope == S_PORT) {
		json_object_foreach ((json_t *)ports, k, o) {
			if (json_object_get(o, m->key) == NULL)
				continue;
			if (!any)
				header(f, m->name, m->type, m->help);
			any = true;
			fprintf(f, "%s{", m->name);
			put_label(f, "port", k, true);
			fputc('}', f);
			put_value(f, o, m->key, m->scale);
		}
		return;
	}
	json_object_foreach ((json_t *)dirs, dk, d) {
		size_t i;

		if (m->scope == S_DIR) {
			if (json_object_get(d, m->key) == NULL)
				continue;
			if (!any)
				header(f, m->name, m->type, m->help);
			any = true;
			fprintf(f, "%s{", m->name);
			put_label(f, "direction", dk, true);
			fputc('}', f);
			put_value(f, d, m->key, m->scale);
			continue;
		}
		json_array_foreach (json_object_get(d, "tins"), i, o) {
			if (json_object_get(o, m->key) == NULL)
				continue;
			if (!any)
				header(f, m->name, m->type, m->help);
			any = true;
			fprintf(f, "%s{", m->name);
			put_label(f, "direction", dk, true);
			put_label(f, "tin", ctl_json_str(o, "name"), false);
			fputc('}', f);
			put_value(f, o, m->key, m->scale);
		}
	}
}

/* Labels of a direction's rtt object: direction and the part of the path it times. */
static void
rtt_labels(FILE *f, const char *name, const char *dir, const json_t *rtt, const char *suffix)
{
	fprintf(f, "%s%s{", name, suffix);
	put_label(f, "direction", dir, true);
	put_label(f, "part", ctl_json_str(rtt, "part"), false);
}

/* Autorate's decisions by reason, and the figures it decides on. */
static void
autorate_families(FILE *f, const json_t *dirs)
{
	static const struct {
		const char *name, *type, *help, *key;
		enum scale conv;
	} g[] = {
		{ "shaper_autorate_delay_seconds", "gauge",
		  "Lowest rise of the WAN-side RTT over the flows' baselines in autorate's last "
		  "interval with samples",
		  "delay_us", V_US_TO_S },
		{ "shaper_autorate_path_seconds", "gauge",
		  "Part of the RTT's rise autorate has taken as a longer path, not a queue",
		  "path_us", V_US_TO_S },
		{ "shaper_autorate_delivered_bytes_per_second", "gauge",
		  "What the direction sent over autorate's last interval", "delivered", V_INT },
		{ "shaper_autorate_line_bytes_per_second", "gauge",
		  "What the line carried as autorate's last decision took it", "line", V_INT },
		{ "shaper_autorate_base_bytes_per_second", "gauge",
		  "Rate autorate decays to while the direction is idle", "base", V_INT },
	};
	const char *k, *reason;
	json_t *d, *ar, *n;
	bool any = false;

	for (size_t m = 0; m < sizeof(g) / sizeof(g[0]); m++) {
		any = false;
		json_object_foreach ((json_t *)dirs, k, d) {
			if ((ar = json_object_get(json_object_get(d, "rtt"), "autorate")) == NULL)
				continue;
			if (!any)
				header(f, g[m].name, g[m].type, g[m].help);
			any = true;
			fprintf(f, "%s{", g[m].name);
			put_label(f, "direction", k, true);
			fputc('}', f);
			put_value(f, ar, g[m].key, g[m].conv);
		}
	}
	any = false;
	json_object_foreach ((json_t *)dirs, k, d) {
		if ((ar = json_object_get(json_object_get(d, "rtt"), "autorate")) == NULL)
			continue;
		if (!any)
			header(f, "shaper_autorate_decisions_total", "counter",
			       "Autorate's decisions by reason (cut_bloat, cut_standing, raise, decay, "
			       "path; holds: no_samples, refractory, draining, other_direction, hold)");
		any = true;
		json_object_foreach (json_object_get(ar, "decisions"), reason, n) {
			fprintf(f, "shaper_autorate_decisions_total{");
			put_label(f, "direction", k, true);
			put_label(f, "reason", reason, false);
			fprintf(f, "} %lld\n", (long long)json_integer_value(n));
		}
	}
}

/*
 * Passive RTT as a Prometheus histogram (cumulative le buckets in seconds)
 * with the last interval's min/median/p99, and autorate's rate and decisions.
 */
static void
rtt_families(FILE *f, const json_t *dirs)
{
	static const char *const iv_keys[] = { "min_us", "median_us", "p99_us" };
	static const char *const iv_names[] = { "shaper_rtt_interval_min_seconds",
						"shaper_rtt_interval_median_seconds",
						"shaper_rtt_interval_p99_seconds" };
	const char *k;
	json_t *d, *r, *b;
	bool any = false;
	size_t i;

	json_object_foreach ((json_t *)dirs, k, d) {
		long long cum = 0;

		if ((r = json_object_get(d, "rtt")) == NULL)
			continue;
		if (!any)
			header(f, "shaper_rtt_seconds", "histogram",
			       "Passive TCP round-trip times the direction's packets completed, by "
			       "part of the path (wan: beyond the WAN port, lan: to the LAN host)");
		any = true;
		json_array_foreach (json_object_get(r, "histogram_us"), i, b) {
			long long hi = (long long)json_integer_value(json_array_get(b, 1));

			cum += (long long)json_integer_value(json_array_get(b, 2));
			if (hi == 0)
				continue; /* the open last bucket is +Inf */
			rtt_labels(f, "shaper_rtt_seconds", k, r, "_bucket");
			fprintf(f, ",le=\"%.6g\"} %lld\n", hi / 1e6, cum);
		}
		rtt_labels(f, "shaper_rtt_seconds", k, r, "_bucket");
		fprintf(f, ",le=\"+Inf\"} %lld\n", ctl_json_int(r, "samples"));
		rtt_labels(f, "shaper_rtt_seconds", k, r, "_sum");
		fprintf(f, "} %.9g\n", ctl_json_int(r, "sum_us") / 1e6);
		rtt_labels(f, "shaper_rtt_seconds", k, r, "_count");
		fprintf(f, "} %lld\n", ctl_json_int(r, "samples"));
	}
	for (size_t m = 0; m < 3 && any; m++) {
		header(f, iv_names[m], "gauge",
		       "Passive TCP round-trip time over the last interval");
		json_object_foreach ((json_t *)dirs, k, d) {
			if ((r = json_object_get(d, "rtt")) == NULL)
				continue;
			rtt_labels(f, iv_names[m], k, r, "");
			fputc('}', f);
			put_value(f, json_object_get(r, "interval"), iv_keys[m], V_US_TO_S);
		}
	}
	any = false;
	json_object_foreach ((json_t *)dirs, k, d) {
		json_t *ar = json_object_get(json_object_get(d, "rtt"), "autorate");

		if (ar == NULL)
			continue;
		if (!any)
			header(f, "shaper_autorate_rate_bytes_per_second", "gauge",
			       "Rate autorate has set for the direction");
		any = true;
		fprintf(f, "shaper_autorate_rate_bytes_per_second{");
		put_label(f, "direction", k, true);
		fputc('}', f);
		put_value(f, ar, "rate", V_INT);
	}
	autorate_families(f, dirs);
}

/* One node's or top-N subscriber's labels: the circuit id and its node, or the node. */
static void
sub_labels(FILE *f, const json_t *o, bool sub)
{
	if (sub) {
		put_label(f, "subscriber", ctl_json_str(o, "id"), true);
		put_label(f, "node", ctl_json_str(o, "node"), false);
	} else {
		put_label(f, "node", ctl_json_str(o, "node"), true);
	}
}

/*
 * RTT of each node or top-N subscriber of list: the median and 95th
 * percentile of each part of the path over the last 10 to 20 s (seconds),
 * and the samples they come from (samples). A side without samples has no
 * quantile series (a 0 would read as "no delay").
 */
static void
sub_rtt_families(FILE *f, const json_t *list, bool sub, const char *seconds, const char *samples)
{
	static const char *const side[] = { "lan", "wan" };
	static const struct {
		const char *q, *key;
	} quant[] = { { "0.5", "median_us" }, { "0.95", "p95_us" } };
	json_t *o;
	size_t i;

	header(f, seconds, "gauge",
	       sub ? "Round-trip time of the subscriber's TCP flows by part of the path (lan: "
		     "shaperd to the subscriber and back; wan: shaperd to the remote and back), "
		     "quantile over the last 10 to 20 s"
		   : "Round-trip time of the TCP flows of the subscribers under the node, by "
		     "part of the path, quantile over the last 10 to 20 s");
	json_array_foreach (list, i, o) {
		const json_t *rtt = json_object_get(o, "rtt");

		for (int k = 0; k < 2; k++) {
			const json_t *r = json_object_get(rtt, side[k]);

			if (ctl_json_int(r, "samples") == 0)
				continue;
			for (int q = 0; q < 2; q++) {
				fprintf(f, "%s{", seconds);
				sub_labels(f, o, sub);
				put_label(f, "side", side[k], false);
				put_label(f, "quantile", quant[q].q, false);
				fputc('}', f);
				put_value(f, r, quant[q].key, V_US_TO_S);
			}
		}
	}
	header(f, samples, "gauge",
	       "RTT samples the quantiles come from (the last 10 to 20 s), by part of the path");
	json_array_foreach (list, i, o) {
		for (int k = 0; k < 2; k++) {
			fprintf(f, "%s{", samples);
			sub_labels(f, o, sub);
			put_label(f, "side", side[k], false);
			fputc('}', f);
			put_value(f, json_object_get(json_object_get(o, "rtt"), side[k]), "samples",
				  V_INT);
		}
	}
}

/*
 * The busy RTT of each node or listed subscriber (the "busy_rtt" of a
 * subscribers.metrics entry): the 80th and 95th percentile per part of the
 * path over the busy minutes of the last 15 to 30 minutes (seconds), the
 * samples they come from, and for a subscriber its busy minutes. A side
 * without samples has no quantile series.
 */
static void
sub_busy_families(FILE *f, const json_t *list, bool sub, const char *seconds, const char *samples)
{
	static const char *const side[] = { "lan", "wan" };
	static const struct {
		const char *q, *key;
	} quant[] = { { "0.8", "p80_us" }, { "0.95", "p95_us" } };
	json_t *o;
	size_t i;

	header(f, seconds, "gauge",
	       sub ? "Round-trip time of the subscriber's TCP flows over its busy minutes (its "
		     "own traffic at 10 % of its plan or more) of the last 15 to 30 minutes, by "
		     "part of the path, quantile"
		   : "Round-trip time of the TCP flows of the subscribers under the node over "
		     "their busy minutes of the last 15 to 30 minutes, by part of the path, "
		     "quantile");
	json_array_foreach (list, i, o) {
		const json_t *rtt = json_object_get(o, "busy_rtt");

		for (int k = 0; k < 2; k++) {
			const json_t *r = json_object_get(rtt, side[k]);

			if (ctl_json_int(r, "samples") == 0)
				continue;
			for (int q = 0; q < 2; q++) {
				fprintf(f, "%s{", seconds);
				sub_labels(f, o, sub);
				put_label(f, "side", side[k], false);
				put_label(f, "quantile", quant[q].q, false);
				fputc('}', f);
				put_value(f, r, quant[q].key, V_US_TO_S);
			}
		}
	}
	header(f, samples, "gauge",
	       "RTT samples of busy minutes the busy quantiles come from, by part of the path");
	json_array_foreach (list, i, o) {
		for (int k = 0; k < 2; k++) {
			fprintf(f, "%s{", samples);
			sub_labels(f, o, sub);
			put_label(f, "side", side[k], false);
			fputc('}', f);
			put_value(f, json_object_get(json_object_get(o, "busy_rtt"), side[k]),
				  "samples", V_INT);
		}
	}
	if (!sub)
		return;
	header(f, "shaper_subscriber_busy_minutes", "gauge",
	       "Minutes of the last 15 to 30 in which the subscriber's traffic came to 10 % of "
	       "its plan or more, either way");
	json_array_foreach (list, i, o) {
		fprintf(f, "shaper_subscriber_busy_minutes{");
		sub_labels(f, o, true);
		fputc('}', f);
		put_value(f, json_object_get(o, "busy_rtt"), "minutes", V_INT);
	}
}

/* Drops of each node or listed subscriber of list by direction and reason. */
static void
sub_drop_family(FILE *f, const json_t *list, bool sub, const char *name, const char *help)
{
	static const char *const dir_key[] = { "download", "upload" };
	static const char *const dir_label[] = { "downstream", "upstream" };
	json_t *o, *v;
	const char *r;
	size_t i;

	header(f, name, "counter", help);
	json_array_foreach (list, i, o) {
		for (int d = 0; d < 2; d++) {
			json_object_foreach (json_object_get(json_object_get(o, dir_key[d]),
							     "drop_reasons"),
					     r, v) {
				fprintf(f, "%s{", name);
				sub_labels(f, o, sub);
				put_label(f, "direction", dir_label[d], false);
				put_label(f, "reason", r, false);
				fprintf(f, "} %lld\n",
					json_is_integer(v) ? json_integer_value(v) : 0);
			}
		}
	}
}

/*
 * Per-node and listed subscriber families from a subscribers.metrics
 * result. Directions are named as the rest of the output names them: a
 * subscriber's download is the downstream direction, its upload upstream.
 * Family names are written out whole, so the dashboard's check finds them.
 */
int
ctl_metrics_print_subscribers(FILE *f, const json_t *subs)
{
	static const struct {
		const char *node, *sub, *type, *key, *help_node, *help_sub;
	} g[] = {
		{ "shaper_node_bytes_total", "shaper_subscriber_bytes_total", "counter", "bytes",
		  "Bytes the subscribers under the node sent (the link: also addresses no "
		  "subscriber owns); falls when a subscriber leaves it",
		  "Bytes the subscriber sent" },
		{ "shaper_node_ecn_marks_total", "shaper_subscriber_ecn_marks_total", "counter",
		  "ecn_mark",
		  "Packets of the subscribers under the node their CAKEs marked CE (ECN)",
		  "Packets of the subscriber its CAKE marked CE (ECN)" },
		{ "shaper_node_rate_bytes_per_second", "shaper_subscriber_rate_bytes_per_second",
		  "gauge", "rate", "Rate allocated to the subscribers under the node now",
		  "Rate allocated to the subscriber now (0 while idle)" },
	};
	static const char *const dir_key[] = { "download", "upload" };
	static const char *const dir_label[] = { "downstream", "upstream" };
	const json_t *nodes = json_object_get(subs, "nodes");
	const json_t *list = json_object_get(subs, "subscribers");
	json_t *o;
	size_t i;

	for (size_t m = 0; m < sizeof(g) / sizeof(g[0]) && json_array_size(nodes) > 0; m++) {
		header(f, g[m].node, g[m].type, g[m].help_node);
		json_array_foreach (nodes, i, o) {
			for (int d = 0; d < 2; d++) {
				fprintf(f, "%s{", g[m].node);
				sub_labels(f, o, false);
				put_label(f, "direction", dir_label[d], false);
				fputc('}', f);
				put_value(f, json_object_get(o, dir_key[d]), g[m].key, V_INT);
			}
		}
	}
	if (json_array_size(nodes) > 0)
		sub_drop_family(f, nodes, false, "shaper_node_drops_total",
				"Packets of the subscribers under the node dropped, by reason");
	for (size_t m = 0; m < sizeof(g) / sizeof(g[0]) && json_array_size(list) > 0; m++) {
		header(f, g[m].sub, g[m].type, g[m].help_sub);
		json_array_foreach (list, i, o) {
			for (int d = 0; d < 2; d++) {
				fprintf(f, "%s{", g[m].sub);
				sub_labels(f, o, true);
				put_label(f, "direction", dir_label[d], false);
				fputc('}', f);
				put_value(f, json_object_get(o, dir_key[d]), g[m].key, V_INT);
			}
		}
	}
	if (json_array_size(list) > 0)
		sub_drop_family(f, list, true, "shaper_subscriber_drops_total",
				"Packets of the subscriber dropped, by reason");
	if (json_array_size(nodes) > 0) {
		sub_rtt_families(f, nodes, false, "shaper_node_rtt_seconds",
				 "shaper_node_rtt_samples");
		sub_busy_families(f, nodes, false, "shaper_node_busy_rtt_seconds",
				  "shaper_node_busy_rtt_samples");
	}
	if (json_array_size(list) > 0) {
		sub_rtt_families(f, list, true, "shaper_subscriber_rtt_seconds",
				 "shaper_subscriber_rtt_samples");
		sub_busy_families(f, list, true, "shaper_subscriber_busy_rtt_seconds",
				  "shaper_subscriber_busy_rtt_samples");
	}
	return ferror(f) ? -EIO : 0;
}

/* The fail-open lease, when the daemon has one. */
static void
fail_open_families(FILE *f, const json_t *fo)
{
	static const struct {
		const char *name, *type, *key, *help;
	} fams[] = {
		{ "shaper_fail_open_holding", "gauge", "holding",
		  "1 while shaperd holds the line (fail-open's lease)" },
		{ "shaper_fail_open_renewals_total", "counter", "renewals", "Leases granted" },
		{ "shaper_fail_open_takeovers_total", "counter", "takeovers",
		  "Times shaperd took the line from the bridge" },
		{ "shaper_fail_open_lapses_total", "counter", "lapses",
		  "Times the lease ran out while shaperd ran" },
		{ "shaper_fail_open_lapses_late_total", "counter", "lapses_late",
		  "Lapses because the lease thread did not look in time (stopped, or off its CPU)" },
		{ "shaper_fail_open_lapses_withheld_total", "counter", "lapses_withheld",
		  "Lapses because a worker had not turned" },
		{ "shaper_fail_open_withheld_total", "counter", "withheld",
		  "Lease renewals withheld because a worker had not turned" },
		{ "shaper_fail_open_drain_waits_total", "counter", "drain_waits",
		  "Takeovers put off while a worker still held frames the bridge sent" },
	};

	if (!json_is_object(fo))
		return;
	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
		const json_t *v = json_object_get(fo, fams[i].key);

		header(f, fams[i].name, fams[i].type, fams[i].help);
		fprintf(f, "%s %lld\n", fams[i].name,
			json_is_boolean(v)   ? (long long)json_is_true(v)
			: json_is_integer(v) ? json_integer_value(v)
					     : 0);
	}
	header(f, "shaper_fail_open_lapsed_seconds_total", "counter",
	       "Time the bridge carried the line because a lease ran out");
	fprintf(f, "shaper_fail_open_lapsed_seconds_total %.6f\n",
		(double)ctl_json_int(fo, "lapsed_us") / 1e6);
}

int
ctl_metrics_print(FILE *f, const json_t *version, const json_t *stats, const char *up_help)
{
	const json_t *ports = json_object_get(stats, "ports");
	const json_t *dirs = json_object_get(stats, "directions");
	const char *k, *r;
	json_t *o, *v;
	bool any;
	char buf[32];

	header(f, "shaper_up", "gauge", up_help);
	fprintf(f, "shaper_up 1\n");
	header(f, "shaper_build_info", "gauge", "Version of shaperd and of its control protocol");
	fprintf(f, "shaper_build_info{");
	put_label(f, "version", ctl_json_str(version, "version"), true);
	snprintf(buf, sizeof(buf), "%lld", ctl_json_int(version, "protocol"));
	put_label(f, "protocol", buf, false);
	fprintf(f, "} 1\n");
	header(f, "shaper_port_info", "gauge", "Device behind each port role");
	json_object_foreach ((json_t *)ports, k, o) {
		fprintf(f, "shaper_port_info{");
		put_label(f, "port", k, true);
		put_label(f, "device", ctl_json_str(o, "name"), false);
		fprintf(f, "} 1\n");
	}
	header(f, "shaper_qdisc_info", "gauge", "Discipline shaping each direction");
	json_object_foreach ((json_t *)dirs, k, o) {
		fprintf(f, "shaper_qdisc_info{");
		put_label(f, "direction", k, true);
		put_label(f, "discipline", ctl_json_str(o, "discipline"), false);
		fprintf(f, "} 1\n");
	}
	for (size_t i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++)
		family(f, &metrics[i], ports, dirs);
	rtt_families(f, dirs);
	/* Drop reasons: the daemon's table, whatever reasons it has. */
	any = false;
	json_object_foreach ((json_t *)dirs, k, o) {
		json_object_foreach (json_object_get(o, "drop_reasons"), r, v) {
			if (!any)
				header(f, "shaper_drops_total", "counter",
				       "Packets dropped, by direction and reason");
			any = true;
			fprintf(f, "shaper_drops_total{");
			put_label(f, "direction", k, true);
			put_label(f, "reason", r, false);
			fprintf(f, "} %lld\n", json_is_integer(v) ? json_integer_value(v) : 0);
		}
	}
	fail_open_families(f, json_object_get(stats, "fail_open"));
	return ferror(f) ? -EIO : 0;
}
