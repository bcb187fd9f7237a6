/*
 * Control protocol: one JSON request in, one JSON reply out. Every command
 * goes through the backend, so the same handlers serve the socket, the
 * telemetry hooks and the unit tests.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "shaper/config.h"
#include "shaper/control.h"
#include "shaper/reload.h"

static const char *const error_names[] = {
#define CTL_ERROR_NAME(id, name) name,
	CTL_ERRORS(CTL_ERROR_NAME)
#undef CTL_ERROR_NAME
};

const char *
ctl_error_name(enum ctl_error e)
{
	return (unsigned int)e < CTL_ERR_MAX ? error_names[e] : "internal";
}

struct reply {
	json_t *result;     /* set on success */
	enum ctl_error err; /* else */
	char msg[SHAPER_ERR_LEN];
	json_t *keys;            /* with the error: the keys it is about (restart_required) */
	enum shaper_level level; /* the caller's: what the answer may show */
	unsigned int retry_ms;   /* with a rate-limit refusal: when to ask again */
};

static int fail(struct reply *r, enum ctl_error e, const char *fmt, ...)
		__attribute__((format(printf, 3, 4)));

/*
 * Make s valid UTF-8 in place, as jansson checks it (no overlong forms,
 * surrogates or code points past U+10FFFF): a sequence cut short by the end
 * is dropped, any other bad byte becomes '?'. Messages quote user text cut
 * to fit a buffer, and jansson's own syntax errors quote the bad token cut
 * anywhere (`{"cmd":"x\€"}` gave "invalid escape near '"x\<0xe2>'"), so a
 * bad byte can sit in the middle, not just at the end; json_pack would
 * refuse the message and the client would get "internal" instead.
 */
static void
utf8_mend(char *s)
{
	size_t r = 0, w = 0;

	while (s[r] != '\0') {
		unsigned char c = (unsigned char)s[r];
		unsigned int need, k;
		uint32_t cp, min;

		if (c < 0x80) {
			s[w++] = s[r++];
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1, cp = c & 0x1fu, min = 0x80;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2, cp = c & 0x0fu, min = 0x800;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3, cp = c & 0x07u, min = 0x10000;
		} else {
			s[w++] = '?';
			r++;
			continue;
		}
		for (k = 1; k <= need && ((unsigned char)s[r + k] & 0xc0) == 0x80; k++)
			cp = cp << 6 | ((unsigned char)s[r + k] & 0x3fu);
		if (k <= need && s[r + k] == '\0')
			break; /* cut short by the end */
		if (k <= need || cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) {
			s[w++] = '?';
			r++;
			continue;
		}
		for (k = 0; k <= need; k++)
			s[w++] = s[r++];
	}
	s[w] = '\0';
}

static int
fail(struct reply *r, enum ctl_error e, const char *fmt, ...)
{
	va_list ap;

	r->err = e;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	utf8_mend(r->msg);
	return -1;
}

#define J_U64(v) json_integer((json_int_t)(v))

void *
ctl_port_stats_json(const struct ctl_port_counters *pc)
{
	json_t *o = json_object();

	json_object_set_new(o, "name", json_string(pc->name));
	json_object_set_new(o, "rx_packets", J_U64(pc->rx_packets));
	json_object_set_new(o, "tx_packets", J_U64(pc->tx_packets));
	json_object_set_new(o, "rx_bytes", J_U64(pc->rx_bytes));
	json_object_set_new(o, "tx_bytes", J_U64(pc->tx_bytes));
	json_object_set_new(o, "rx_missed", J_U64(pc->rx_missed));
	json_object_set_new(o, "rx_errors", J_U64(pc->rx_errors));
	json_object_set_new(o, "tx_errors", J_U64(pc->tx_errors));
	json_object_set_new(o, "rx_nombuf", J_U64(pc->rx_nombuf));
	json_object_set_new(o, "link_up", json_boolean(pc->link_up));
	json_object_set_new(o, "link_speed", J_U64(pc->link_speed));
	json_object_set_new(o, "link_changes", J_U64(pc->link_changes));
	json_object_set_new(o, "reconnects", J_U64(pc->reconnects));
	return o;
}

void
ctl_dir_port_errors(void *dirs, const void *ports)
{
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		json_t *dir = json_object_get(dirs, shaper_dir_name[d]);
		json_t *port = json_object_get(ports, shaper_port_name[shaper_dir_output(d)]);
		json_t *e;

		if (port == NULL) /* one port on a stick sends both directions */
			port = json_object_get(ports, "single");
		e = json_object_get(port, "tx_errors");

		if (dir != NULL && json_is_integer(e))
			json_object_set(dir, "tx_port_errors", e);
	}
}

/* Sojourn histogram: [lower ns, upper ns, packets] for each bucket in use. */
static json_t *
sojourn_json(const uint64_t *hist)
{
	json_t *a = json_array();

	for (unsigned int b = 0; b < SCHED_SOJOURN_BUCKETS; b++) {
		uint64_t hi = b + 1 < SCHED_SOJOURN_BUCKETS ? sched_sojourn_bucket_lo_ns(b + 1)
							    : UINT64_MAX >> 1;

		if (hist[b] != 0)
			json_array_append_new(a,
					      json_pack("[III]",
							(json_int_t)sched_sojourn_bucket_lo_ns(b),
							(json_int_t)hi, (json_int_t)hist[b]));
	}
	return a;
}

static json_t *
tin_json(const struct sched_tin_stats *t)
{
	json_t *o = json_object();

	json_object_set_new(o, "name", json_string(t->name));
	json_object_set_new(o, "threshold_rate", J_U64(t->threshold_rate));
	json_object_set_new(o, "sent_bytes", J_U64(t->sent_bytes));
	json_object_set_new(o, "backlog_bytes", J_U64(t->backlog_bytes));
	json_object_set_new(o, "target_us", J_U64(t->target_us));
	json_object_set_new(o, "interval_us", J_U64(t->interval_us));
	json_object_set_new(o, "peak_delay_us", J_U64(t->peak_delay_us));
	json_object_set_new(o, "avg_delay_us", J_U64(t->avg_delay_us));
	json_object_set_new(o, "base_delay_us", J_U64(t->base_delay_us));
	json_object_set_new(o, "sent_packets", J_U64(t->sent_packets));
	json_object_set_new(o, "way_indirect_hits", J_U64(t->way_indirect_hits));
	json_object_set_new(o, "way_misses", J_U64(t->way_misses));
	json_object_set_new(o, "way_collisions", J_U64(t->way_collisions));
	json_object_set_new(o, "drops", J_U64(t->drops));
	json_object_set_new(o, "ecn_mark", J_U64(t->ecn_mark));
	json_object_set_new(o, "ack_drops", J_U64(t->ack_drops));
	/* CAKE's l4s: named like sent_packets and tc's dualpi2 step_marks */
	json_object_set_new(o, "ect1_packets", J_U64(t->ect1_packets));
	json_object_set_new(o, "step_marks", J_U64(t->step_marks));
	json_object_set_new(o, "sparse_flows", J_U64(t->sparse_flows));
	json_object_set_new(o, "bulk_flows", J_U64(t->bulk_flows));
	json_object_set_new(o, "unresponsive_flows", J_U64(t->unresponsive_flows));
	json_object_set_new(o, "max_pkt_len", J_U64(t->max_pkt_len));
	json_object_set_new(o, "flow_quantum", J_U64(t->flow_quantum));
	json_object_set_new(o, "sojourn", sojourn_json(t->sojourn));
	json_object_set_new(o, "sparse_sojourn", sojourn_json(t->sparse_sojourn));
	return o;
}

/*
 * The accounting identity's terms, all from one worker snapshot:
 * received + held_at_reset = sent + dropped (by reason) + queued (by place).
 * "unaccounted" is their difference, 0 unless a packet went missing.
 */
static json_t *
accounting_json(const struct ctl_dir_counters *c)
{
	json_t *dropped = json_object(), *queued = json_object();
	uint64_t in = c->rx_packets + c->held_at_reset, out = c->tx_packets;

	for (int r = 0; r < SHAPER_DROP_MAX; r++) {
		json_object_set_new(dropped, shaper_drop_name(r), J_U64(c->dropped[r]));
		out += c->dropped[r];
	}
	json_object_set_new(queued, "scheduler", J_U64(c->sched_qlen));
	json_object_set_new(queued, "swap", J_U64(c->swap_qlen));
	json_object_set_new(queued, "emulator", J_U64(c->emulator_qlen));
	json_object_set_new(queued, "tx_pending", J_U64(c->tx_pending));
	json_object_set_new(queued, "steering",
			    json_integer((json_int_t)(c->steered_out - c->steered_in)));
	out += c->sched_qlen + c->swap_qlen + c->emulator_qlen + c->tx_pending;
	out += c->steered_out - c->steered_in; /* modulo 2^64: negative for a shard */
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:I}", "received", J_U64(c->rx_packets),
			 "held_at_reset", J_U64(c->held_at_reset), "sent", J_U64(c->tx_packets),
			 "dropped", dropped, "queued", queued, "unaccounted",
			 (json_int_t)(in - out));
}

void *
ctl_dir_stats_json(const struct ctl_dir_counters *c, const struct sched_stats *st,
		   const struct sched_params *p)
{
	json_t *o = json_object(), *drops = json_object(), *tins = json_array();
	uint64_t total_drops = 0;

	json_object_set_new(o, "discipline", json_string(shaper_discipline_name(p->discipline)));
	json_object_set_new(o, "bandwidth", J_U64(p->rate));
	json_object_set_new(o, "rx_packets", J_U64(c->rx_packets));
	json_object_set_new(o, "rx_bytes", J_U64(c->rx_bytes));
	json_object_set_new(o, "tx_packets", J_U64(c->tx_packets));
	json_object_set_new(o, "tx_bytes", J_U64(c->tx_bytes));
	json_object_set_new(o, "tx_retries", J_U64(c->tx_retries));
	json_object_set_new(o, "rx_foreign", J_U64(c->rx_foreign));
	json_object_set_new(o, "turn_max_ns", J_U64(c->turn_max_ns));
	json_object_set_new(o, "control_max_ns", J_U64(c->control_max_ns));
	json_object_set_new(o, "backlogged_us", J_U64(c->backlogged_ns / 1000));
	json_object_set_new(o, "backlogged_tx_bytes", J_U64(c->backlogged_tx_bytes));
	json_object_set_new(o, "emulator_qlen", J_U64(c->emulator_qlen));
	if (c->rtt.on)
		json_object_set_new(o, "rtt", ctl_rtt_json(&c->rtt));
	json_object_set_new(o, "accounting", accounting_json(c));
	json_object_set_new(o, "mbufs_in_use", J_U64(c->pool_in_use));
	json_object_set_new(o, "mbufs", J_U64(c->pool_size));
	for (int r = 0; r < SHAPER_DROP_MAX; r++) {
		json_object_set_new(drops, shaper_drop_name(r), J_U64(c->dropped[r]));
		total_drops += c->dropped[r];
	}
	json_object_set_new(o, "drops", J_U64(total_drops));
	json_object_set_new(o, "drop_reasons", drops);
	json_object_set_new(o, "packets", J_U64(st->dequeued_pkts));
	json_object_set_new(o, "bytes", J_U64(st->dequeued_bytes));
	json_object_set_new(o, "backlog", J_U64(st->backlog_bytes));
	json_object_set_new(o, "qlen", J_U64(st->backlog_pkts));
	json_object_set_new(o, "overlimits", J_U64(st->overlimits));
	json_object_set_new(o, "lag_skips", J_U64(st->lag_skips));
	json_object_set_new(o, "lag_skipped_us", J_U64(st->lag_skipped_ns / 1000));
	json_object_set_new(o, "time_ns", J_U64(c->time_ns));
	json_object_set_new(o, "sojourn", sojourn_json(st->sojourn));
	json_object_set_new(o, "sparse_sojourn", sojourn_json(st->sparse_sojourn));
	json_object_set_new(o, "ecn_mark", J_U64(st->ecn_marked));
	json_object_set_new(o, "memory_used", J_U64(st->memory_used));
	json_object_set_new(o, "memory_limit", J_U64(st->memory_limit));
	json_object_set_new(o, "capacity_estimate", J_U64(st->capacity_estimate));
	json_object_set_new(o, "min_network_size", J_U64(st->min_network_size));
	json_object_set_new(o, "max_network_size", J_U64(st->max_network_size));
	json_object_set_new(o, "min_adj_size", J_U64(st->min_adj_size));
	json_object_set_new(o, "max_adj_size", J_U64(st->max_adj_size));
	json_object_set_new(o, "avg_hdr_offset", J_U64(st->avg_hdr_offset));
	for (uint32_t t = 0; t < st->tin_count && t < SCHED_MAX_TINS; t++)
		json_array_append_new(tins, tin_json(&st->tins[t]));
	json_object_set_new(o, "tins", tins);
	return o;
}

/* "direction" argument: absent = both (mask 3), else one. */
static int
arg_directions(const json_t *args, unsigned int *mask, bool required, struct reply *r)
{
	const json_t *v = args != NULL ? json_object_get(args, "direction") : NULL;

	if (v == NULL) {
		if (required)
			return fail(r, CTL_ERR_INVALID_ARGUMENT,
				    "args.direction: missing (upstream or downstream)");
		*mask = 3;
		return 0;
	}
	if (!json_is_string(v))
		return fail(r, CTL_ERR_INVALID_ARGUMENT,
			    "args.direction: expected \"upstream\" or \"downstream\"");
	for (int d = 0; d < SHAPER_NUM_DIRS; d++)
		if (strcmp(json_string_value(v), shaper_dir_name[d]) == 0) {
			*mask = 1u << d;
			return 0;
		}
	return fail(r, CTL_ERR_INVALID_ARGUMENT,
		    "args.direction: \"%s\" is not a direction (upstream or downstream)",
		    json_string_value(v));
}

static int
check_args(const json_t *args, const char *const *known, struct reply *r)
{
	return ctl_check_args(args, known, &r->err, r->msg, sizeof(r->msg));
}

static int
cmd_version(const struct ctl_backend *be, const json_t *args, struct reply *r)
{
	static const char *const known[] = { NULL };

	(void)be;
	if (check_args(args, known, r) != 0)
		return -1;
	r->result = json_pack("{s:i, s:s, s:s}", "protocol", CTL_PROTOCOL_VERSION, "version",
			      SHAPER_VERSION, "name", "shaperd");
	return 0;
}

/*
 * "shards": each worker's part of a direction, as a direction shows
 * (its counters' identity holds on its own, steering included), with the
 * rate its shard shapes at now. st is scratch space.
 */
static int
shards_json(const struct ctl_backend *be, enum shaper_dir d, json_t *dir, struct sched_stats *st,
	    struct reply *r)
{
	unsigned int n = be->shard_snapshot != NULL && be->n_shards > 1 ? be->n_shards : 1;
	json_t *arr = json_array();

	for (unsigned int i = 0; i < n; i++) {
		struct ctl_dir_counters c;
		struct sched_params p;
		json_t *o;
		int rc = be->shard_snapshot != NULL
					 ? be->shard_snapshot(be->opaque, d, i, &c, st, &p)
					 : be->dir_snapshot(be->opaque, d, &c, st, &p);

		if (rc != 0) {
			json_decref(arr);
			return fail(r, CTL_ERR_BUSY, "%s: no snapshot of shard %u yet",
				    shaper_dir_name[d], i);
		}
		o = ctl_dir_stats_json(&c, st, &p);
		json_object_set_new(o, "shard", json_integer(i));
		json_object_set_new(o, "steered_out", J_U64(c.steered_out));
		json_object_set_new(o, "steered_in", J_U64(c.steered_in));
		json_object_set_new(o, "share_rate",
				    J_U64(c.share_rate != 0 ? c.share_rate : p.rate));
		json_array_append_new(arr, o);
	}
	json_object_set_new(dir, "shards", arr);
	return 0;
}

static int
cmd_stats(const struct ctl_backend *be, const json_t *args, struct reply *r)
{
	static const char *const known[] = { "direction", "shards", NULL };
	const json_t *shards = args != NULL ? json_object_get(args, "shards") : NULL;
	json_t *ports = json_object(), *dirs = json_object();
	unsigned int mask;

	if (check_args(args, known, r) != 0 || arg_directions(args, &mask, false, r) != 0)
		goto err;
	if (shards != NULL && !json_is_boolean(shards)) {
		fail(r, CTL_ERR_INVALID_ARGUMENT, "args.shards: expected true or false");
		goto err;
	}
	for (int i = 0; i < SHAPER_NUM_PORTS; i++) {
		struct ctl_port_counters pc;

		memset(&pc, 0, sizeof(pc));
		if (be->port_counters(be->opaque, (enum shaper_port_role)i, &pc) == 0)
			json_object_set_new(ports,
					    pc.role[0] != '\0' ? pc.role : shaper_port_name[i],
					    ctl_port_stats_json(&pc));
	}
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		struct ctl_dir_counters c;
		struct sched_stats *st;
		struct sched_params p;

		if (!(mask & (1u << d)))
			continue;
		st = calloc(1, sizeof(*st));
		if (st == NULL ||
		    be->dir_snapshot(be->opaque, (enum shaper_dir)d, &c, st, &p) != 0) {
			free(st);
			fail(r, CTL_ERR_BUSY, "%s: no statistics snapshot available yet",
			     shaper_dir_name[d]);
			goto err;
		}
		json_object_set_new(dirs, shaper_dir_name[d], ctl_dir_stats_json(&c, st, &p));
		if (json_is_true(shards) &&
		    shards_json(be, (enum shaper_dir)d, json_object_get(dirs, shaper_dir_name[d]),
				st, r) != 0) {
			free(st);
			goto err;
		}
		free(st);
	}
	ctl_dir_port_errors(dirs, ports);
	r->result = json_pack("{s:o, s:o}", "ports", ports, "directions", dirs);
	if (be->heap_bytes != NULL) {
		uint64_t heap;

		if (be->heap_bytes(be->opaque, &heap) == 0)
			json_object_set_new(r->result, "memory",
					    json_pack("{s:I}", "heap_bytes", (json_int_t)heap));
	}
	if (be->fail_open != NULL) {
		struct ctl_fail_open_counters fo;

		memset(&fo, 0, sizeof(fo));
		if (be->fail_open(be->opaque, &fo) == 0)
			json_object_set_new(
					r->result, "fail_open",
					json_pack("{s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
						  "s:I}",
						  "holding", fo.holding, "renewals",
						  (json_int_t)fo.renewals, "takeovers",
						  (json_int_t)fo.takeovers, "lapses",
						  (json_int_t)fo.lapses, "lapses_late",
						  (json_int_t)fo.lapses_late, "lapses_withheld",
						  (json_int_t)fo.lapses_withheld, "lapsed_us",
						  (json_int_t)(fo.lapsed_ns / 1000u), "withheld",
						  (json_int_t)fo.withheld, "drain_waits",
						  (json_int_t)fo.drain_waits, "look_gap_max_us",
						  (json_int_t)(fo.look_gap_max_ns / 1000u)));
	}
	return 0;
err:
	json_decref(ports);
	json_decref(dirs);
	return -1;
}

static int
cmd_stats_reset(const struct ctl_backend *be, const json_t *args, struct reply *r)
{
	static const char *const known[] = { NULL };

	if (check_args(args, known, r) != 0)
		return -1;
	if (be->reset_stats(be->opaque) != 0)
		return fail(r, CTL_ERR_BUSY, "the data plane did not answer; try again");
	r->result = json_object();
	return 0;
}

static int
current_params(const struct ctl_backend *be, enum shaper_dir d, struct sched_params *p,
	       struct reply *r)
{
	struct ctl_dir_counters c;
	struct sched_stats *st = calloc(1, sizeof(*st));
	int rc;

	if (st == NULL)
		return fail(r, CTL_ERR_INTERNAL, "out of memory");
	rc = be->dir_snapshot(be->opaque, d, &c, st, p);
	free(st);
	if (rc != 0)
		return fail(r, CTL_ERR_BUSY, "%s: no snapshot available yet", shaper_dir_name[d]);
	return 0;
}

static int
cmd_config_get(const struct ctl_backend *be, const json_t *args, struct reply *r)
{
	static const char *const known[] = { "direction", NULL };
	struct shaper_emulate_config em;
	unsigned int mask;
	json_t *o;

	if (check_args(args, known, r) != 0 || arg_directions(args, &mask, false, r) != 0)
		return -1;
	o = json_object();
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		struct sched_params p;

		if (!(mask & (1u << d)))
			continue;
		if (current_params(be, (enum shaper_dir)d, &p, r) != 0) {
			json_decref(o);
			return -1;
		}
		json_object_set_new(o, shaper_dir_name[d], shaper_config_direction_to_json(&p));
		if (be->emulate_get != NULL &&
		    be->emulate_get(be->opaque, (enum shaper_dir)d, &em) == 0)
			json_object_set_new(json_object_get(o, shaper_dir_name[d]), "emulate",
					    shaper_config_emulate_to_json(&em));
	}
	r->result = o;
	return 0;
}

static int
cmd_config_set(const struct ctl_backend *be, const json_t *args, struct reply *r)
{
	static const char *const known[] = { "direction", "settings", NULL };
	const json_t *settings = args != NULL ? json_object_get(args, "settings") : NULL;
	struct shaper_emulate_config em = { 0 }, was;
	struct sched_params p;
	bool has_emulate;
	json_t *o;
	char err[SHAPER_ERR_LEN];
	unsigned int mask;
	enum shaper_dir d;
	int rc;

	if (check_args(args, known, r) != 0 || arg_directions(args, &mask, true, r) != 0)
		return -1;
	d = mask == 1 ? SHAPER_UP : SHAPER_DOWN;
	if (settings == NULL || !json_is_object(settings) || json_object_size(settings) == 0)
		return fail(r, CTL_ERR_INVALID_ARGUMENT,
			    "args.settings: expected an object of settings, e.g. "
			    "{\"bandwidth\": \"200mbit\"}");
	if (current_params(be, d, &p, r) != 0)
		return -1;
	has_emulate = json_object_get(settings, "emulate") != NULL;
	if (has_emulate && (be->emulate_get == NULL || be->emulate_get(be->opaque, d, &em) != 0))
		return fail(r, CTL_ERR_INVALID_ARGUMENT,
			    "%s.emulate: this direction has no emulator to change (start "
			    "shaperd with an \"emulate\" section on it)",
			    shaper_dir_name[d]);
	was = em;
	if (shaper_config_parse_direction_live(settings, shaper_dir_name[d], &p,
					       has_emulate ? &em : NULL, err, sizeof(err)) != 0)
		return fail(r, CTL_ERR_INVALID_ARGUMENT, "%s", err);
	if (has_emulate && (em.seed != was.seed || em.limit != was.limit))
		return fail(r, CTL_ERR_INVALID_ARGUMENT,
			    "%s.emulate.%s: fixed at start (restart shaperd to change it)",
			    shaper_dir_name[d], em.seed != was.seed ? "seed" : "limit");
	/* The scheduler's settings first: a refusal there leaves the emulator as it was. */
	if (json_object_size(settings) > (has_emulate ? 1u : 0u)) {
		rc = be->apply(be->opaque, d, &p, err, sizeof(err));
		if (rc != 0)
			/* Refused settings are the caller's to fix; anything else is worth a retry.
			 */
			return fail(r, rc == -EINVAL ? CTL_ERR_INVALID_ARGUMENT : CTL_ERR_BUSY,
				    "%s: %s", shaper_dir_name[d], err);
	}
	if (has_emulate) {
		rc = be->emulate_set(be->opaque, d, &em, err, sizeof(err));
		if (rc != 0)
			return fail(r, CTL_ERR_BUSY, "%s.emulate: %s", shaper_dir_name[d], err);
	}
	o = shaper_config_direction_to_json(&p);
	if (has_emulate)
		json_object_set_new(o, "emulate", shaper_config_emulate_to_json(&em));
	r->result = json_pack("{s:o}", shaper_dir_name[d], o);
	return 0;
}

static int
cmd_flows(const struct ctl_backend *be, const json_t *args, struct reply *r)
{
	static const char *const known[] = { "direction", "top", NULL };
	const json_t *top = args != NULL ? json_object_get(args, "top") : NULL;
	unsigned int mask, n = 10;
	struct ctl_flow *flows;
	json_t *o;

	if (check_args(args, known, r) != 0 || arg_directions(args, &mask, false, r) != 0)
		return -1;
	if (top != NULL) {
		if (!json_is_integer(top) || json_integer_value(top) < 1 ||
		    json_integer_value(top) > 1000)
			return fail(r, CTL_ERR_INVALID_ARGUMENT,
				    "args.top: expected an integer 1..1000");
		n = (unsigned int)json_integer_value(top);
	}
	flows = calloc(n, sizeof(*flows));
	if (flows == NULL)
		return fail(r, CTL_ERR_INTERNAL, "out of memory");
	o = json_object();
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		json_t *arr;
		int got;

		if (!(mask & (1u << d)))
			continue;
		got = be->flows(be->opaque, (enum shaper_dir)d, flows, n);
		if (got < 0) {
			free(flows);
			json_decref(o);
			return fail(r, CTL_ERR_BUSY, "%s: flows unavailable: %s",
				    shaper_dir_name[d], strerror(-got));
		}
		arr = json_array();
		for (int i = 0; i < got; i++) {
			struct ctl_flow *f = &flows[i];
			bool masked = r->level < SHAPER_LEVEL_OPERATOR;

			if (masked)
				ctl_flow_mask(f);
			json_array_append_new(
					arr,
					json_pack("{s:s, s:s, s:o, s:o, s:i, s:i, s:I, s:I, s:I, s:I, "
						  "s:I, s:i}",
						  "src", f->src, "dst", f->dst, "sport",
						  masked ? json_null() : json_integer(f->sport),
						  "dport",
						  masked ? json_null() : json_integer(f->dport),
						  "proto", f->proto, "tin", f->tin, "packets",
						  (json_int_t)f->packets, "backlog_bytes",
						  (json_int_t)f->backlog_bytes, "sojourn_us",
						  (json_int_t)(f->sojourn_ns / 1000), "rtt_wan_us",
						  (json_int_t)(f->rtt_wan_ns / 1000), "rtt_lan_us",
						  (json_int_t)(f->rtt_lan_ns / 1000), "shard",
						  (int)f->shard));
		}
		json_object_set_new(o, shaper_dir_name[d], arr);
	}
	free(flows);
	r->result = o;
	return 0;
}

/* Read the configuration file again and apply what changed (all of it or nothing). */
static int
cmd_config_reload(const struct ctl_backend *be, const json_t *args, struct reply *r)
{
	static const char *const known[] = { NULL };
	void *result, *keys;

	if (check_args(args, known, r) != 0)
		return -1;
	if (ctl_reload_run(be, "config.reload", &result, &r->err, r->msg, sizeof(r->msg), &keys) !=
	    0) {
		utf8_mend(r->msg);
		r->keys = keys;
		return -1;
	}
	r->result = result;
	return 0;
}

/* Write the running direction settings back into the configuration file. */
static int
cmd_config_save(const struct ctl_backend *be, const json_t *args, struct reply *r)
{
	static const char *const known[] = { NULL };
	void *result;

	if (check_args(args, known, r) != 0)
		return -1;
	if (ctl_config_save(be, &result, &r->err, r->msg, sizeof(r->msg)) != 0) {
		utf8_mend(r->msg);
		return -1;
	}
	r->result = result;
	return 0;
}

/* subscribers.list and subscribers.get (src/control/subscribers.c). */
static int
cmd_subscribers_list(const struct ctl_backend *be, const json_t *args, struct reply *r)
{
	r->result = ctl_subscribers_list(be, args, &r->err, r->msg, sizeof(r->msg));
	return r->result != NULL ? 0 : -1;
}

static int
cmd_subscribers_get(const struct ctl_backend *be, const json_t *args, struct reply *r)
{
	r->result = ctl_subscribers_get(be, args, &r->err, r->msg, sizeof(r->msg));
	return r->result != NULL ? 0 : -1;
}

static int
cmd_subscribers_metrics(const struct ctl_backend *be, const json_t *args, struct reply *r)
{
	r->result = ctl_subscribers_metrics(be, args, &r->err, r->msg, sizeof(r->msg));
	return r->result != NULL ? 0 : -1;
}

static int
cmd_subscribers_set(const struct ctl_backend *be, const json_t *args, struct reply *r)
{
	r->result = ctl_subscribers_set(be, args, &r->err, r->msg, sizeof(r->msg));
	return r->result != NULL ? 0 : -1;
}

static int
cmd_subscribers_del(const struct ctl_backend *be, const json_t *args, struct reply *r)
{
	r->result = ctl_subscribers_del(be, args, &r->err, r->msg, sizeof(r->msg));
	return r->result != NULL ? 0 : -1;
}

static int
cmd_nodes_set(const struct ctl_backend *be, const json_t *args, struct reply *r)
{
	r->result = ctl_nodes_set(be, args, &r->err, r->msg, sizeof(r->msg));
	return r->result != NULL ? 0 : -1;
}

static int
cmd_nodes_del(const struct ctl_backend *be, const json_t *args, struct reply *r)
{
	r->result = ctl_nodes_del(be, args, &r->err, r->msg, sizeof(r->msg));
	return r->result != NULL ? 0 : -1;
}

/*
 * Each command with the lowest access level that may run it, and whether it
 * messages the workers and waits for them (a walk: the server bounds how
 * many it runs per client and per poll, and rate-limits them below operator).
 */
static const struct {
	const char *name;
	int (*fn)(const struct ctl_backend *, const json_t *, struct reply *);
	enum shaper_level level;
	bool walks;
} commands[] = {
	{ "version", cmd_version, SHAPER_LEVEL_USER, false },
	{ "stats", cmd_stats, SHAPER_LEVEL_USER, false },
	{ "stats.reset", cmd_stats_reset, SHAPER_LEVEL_OPERATOR, true },
	{ "flows", cmd_flows, SHAPER_LEVEL_USER, true },
	{ "config.get", cmd_config_get, SHAPER_LEVEL_USER, false },
	{ "config.set", cmd_config_set, SHAPER_LEVEL_ADMIN, true },
	/* Both change the configuration, as config.set does. */
	{ "config.reload", cmd_config_reload, SHAPER_LEVEL_ADMIN, true },
	{ "config.save", cmd_config_save, SHAPER_LEVEL_ADMIN, false },
	/* Subscribers' names are often street addresses: not for every user. */
	{ "subscribers.list", cmd_subscribers_list, SHAPER_LEVEL_OPERATOR, false },
	{ "subscribers.get", cmd_subscribers_get, SHAPER_LEVEL_OPERATOR, false },
	/*
	 * What /metrics (user level) shows: node paths, and circuit ids only for
	 * the top N the operator asked for with metrics.subscribers_top.
	 */
	{ "subscribers.metrics", cmd_subscribers_metrics, SHAPER_LEVEL_USER, false },
	/* An operator changes plans; the daemon's own settings stay the admin's. */
	{ "subscribers.set", cmd_subscribers_set, SHAPER_LEVEL_OPERATOR, true },
	{ "subscribers.del", cmd_subscribers_del, SHAPER_LEVEL_OPERATOR, true },
	/* Sites and access points change with the subscribers under them. */
	{ "nodes.set", cmd_nodes_set, SHAPER_LEVEL_OPERATOR, true },
	{ "nodes.del", cmd_nodes_del, SHAPER_LEVEL_OPERATOR, true },
};

int
ctl_command_level(const char *cmd, enum shaper_level *need)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(cmd, commands[i].name) == 0) {
			*need = commands[i].level;
			return 0;
		}
	return -1;
}

static char *
finish(json_t *id, struct reply *r)
{
	json_t *o;
	char *s, *line;
	size_t n;

	if (r->result != NULL)
		o = json_pack("{s:O?, s:b, s:o}", "id", id, "ok", 1, "result", r->result);
	else
		o = json_pack("{s:O?, s:b, s:{s:s, s:s, s:o*, s:o*}}", "id", id, "ok", 0, "error",
			      "code", ctl_error_name(r->err), "message", r->msg, "keys", r->keys,
			      "retry_ms",
			      r->retry_ms > 0 ? json_integer((json_int_t)r->retry_ms) : NULL);
	r->keys = NULL; /* stolen by json_pack, even when it fails */
	if (o == NULL)  /* never leave a request unanswered */
		o = json_pack("{s:O?, s:b, s:{s:s, s:s}}", "id", id, "ok", 0, "error", "code",
			      ctl_error_name(CTL_ERR_INTERNAL), "message",
			      "the reply could not be encoded");
	if (o == NULL)
		return NULL;
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (s == NULL)
		return NULL;
	n = strlen(s);
	if (n + 1 > CTL_MAX_OUTQ) {
		/* No client may have more queued: say so instead of cutting it off. */
		char msg[160];

		free(s);
		snprintf(msg, sizeof(msg),
			 "the reply would be %zu bytes, over the %d a client may have queued; ask for "
			 "less (e.g. subscribers.list with limit and offset)",
			 n + 1, CTL_MAX_OUTQ);
		o = json_pack("{s:O?, s:b, s:{s:s, s:s}}", "id", id, "ok", 0, "error", "code",
			      ctl_error_name(CTL_ERR_TOO_LARGE), "message", msg);
		s = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
		if (s == NULL)
			return NULL;
		n = strlen(s);
	}
	line = realloc(s, n + 2);
	if (line == NULL) {
		free(s);
		return NULL;
	}
	line[n] = '\n';
	line[n + 1] = '\0';
	return line;
}

char *
ctl_error_reply(enum ctl_error code, const char *message)
{
	struct reply r = { .result = NULL, .err = code, .msg = "" };

	snprintf(r.msg, sizeof(r.msg), "%s", message);
	utf8_mend(r.msg);
	return finish(NULL, &r);
}

char *
ctl_handle_request(const struct ctl_backend *be, const char *line, size_t len)
{
	return ctl_handle_request_as(be, SHAPER_LEVEL_ADMIN, line, len, NULL);
}

char *
ctl_handle_request_as(const struct ctl_backend *be, enum shaper_level level, const char *line,
		      size_t len, const char **refused)
{
	struct ctl_request_ctx ctx = { .level = level, .walks_allowed = true };
	char *out = ctl_handle_request_ctx(be, line, len, &ctx);

	if (refused != NULL && ctx.refused != NULL)
		*refused = ctx.refused;
	return out;
}

char *
ctl_handle_request_ctx(const struct ctl_backend *be, const char *line, size_t len,
		       struct ctl_request_ctx *ctx)
{
	enum shaper_level level = ctx->level;
	struct reply r = { .result = NULL, .err = CTL_ERR_INTERNAL, .msg = "", .level = level };
	json_error_t jerr;
	json_t *req, *id = NULL, *cmd, *args;
	char *out;

	if (len >= CTL_MAX_LINE) {
		fail(&r, CTL_ERR_TOO_LARGE, "request longer than %d bytes", CTL_MAX_LINE - 1);
		return finish(NULL, &r);
	}
	req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (req == NULL) {
		fail(&r, CTL_ERR_BAD_JSON, "column %d: %s", jerr.column, jerr.text);
		return finish(NULL, &r);
	}
	if (!json_is_object(req)) {
		fail(&r, CTL_ERR_BAD_REQUEST, "a request is a JSON object {\"id\":..,\"cmd\":..}");
		goto out;
	}
	id = json_object_get(req, "id");
	if (id != NULL && !json_is_integer(id) && !json_is_string(id)) {
		id = NULL;
		fail(&r, CTL_ERR_BAD_REQUEST, "id: expected an integer or a string");
		goto out;
	}
	cmd = json_object_get(req, "cmd");
	args = json_object_get(req, "args");
	if (cmd == NULL || !json_is_string(cmd)) {
		fail(&r, CTL_ERR_BAD_REQUEST, "cmd: missing or not a string");
		goto out;
	}
	if (args != NULL && json_is_null(args))
		args = NULL;
	if (args != NULL && !json_is_object(args)) {
		fail(&r, CTL_ERR_BAD_REQUEST, "args: expected an object");
		goto out;
	}
	{
		const char *const *k;
		const char *known[] = { "id", "cmd", "args", NULL };
		const char *key;
		json_t *v;

		json_object_foreach (req, key, v) {
			for (k = known; *k != NULL; k++)
				if (strcmp(*k, key) == 0)
					break;
			if (*k == NULL) {
				fail(&r, CTL_ERR_BAD_REQUEST,
				     "%s: unknown field (known: id, cmd, args)", key);
				goto out;
			}
		}
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(json_string_value(cmd), commands[i].name) == 0) {
			if (level < commands[i].level) {
				fail(&r, CTL_ERR_PERMISSION_DENIED,
				     "%s needs access level %s; this connection has level %s",
				     commands[i].name, shaper_level_name(commands[i].level),
				     shaper_level_name(level));
				ctx->refused = commands[i].name;
				goto out;
			}
			if (commands[i].walks && !ctx->walks_allowed) {
				r.retry_ms = ctx->retry_ms > 0 ? ctx->retry_ms : 1;
				fail(&r, CTL_ERR_BUSY,
				     "rate limited: %s at level %s runs at most %u times a second on "
				     "all such connections together; retry in %u ms",
				     commands[i].name, shaper_level_name(level),
				     CTL_USER_WALKS_PER_S, r.retry_ms);
				goto out;
			}
			ctx->walked = commands[i].walks;
			commands[i].fn(be, args, &r);
			goto out;
		}
	fail(&r, CTL_ERR_UNKNOWN_COMMAND,
	     "\"%s\" is not a command (version, stats, stats.reset, flows, config.get, "
	     "config.set, config.reload, config.save, subscribers.list, subscribers.get, "
	     "subscribers.metrics, subscribers.set, subscribers.del, nodes.set, nodes.del)",
	     json_string_value(cmd));
out:
	out = finish(id, &r);
	json_decref(req);
	return out;
}
