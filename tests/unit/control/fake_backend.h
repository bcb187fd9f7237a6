/*
 * A fake struct ctl_backend for the control tests: canned, distinct
 * snapshot values per direction and port, a recorded apply() that can be
 * told to fail, a counted reset and a flows() that makes up as many flows
 * as asked for (up to a limit). Plus JSON helpers shared by the tests.
 */
#ifndef SHAPER_TEST_FAKE_BACKEND_H
#define SHAPER_TEST_FAKE_BACKEND_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "shaper/config.h"
#include "shaper/control.h"
#include "shaper/sched.h"

#define FAKE_MAX_FLOWS 1000

struct fake {
	struct ctl_dir_counters c[SHAPER_NUM_DIRS];
	struct sched_stats st[SHAPER_NUM_DIRS];
	struct sched_params params[SHAPER_NUM_DIRS];
	struct ctl_port_counters port[SHAPER_NUM_PORTS];
	unsigned int n_flows[SHAPER_NUM_DIRS]; /* flows() returns min(max, this) */
	/* failure switches */
	int snapshot_rc[SHAPER_NUM_DIRS];
	int port_rc[SHAPER_NUM_PORTS];
	int flows_rc;
	int reset_rc;
	int apply_rc;
	char apply_msg[128];
	/* what was called */
	unsigned int snapshot_calls;
	unsigned int apply_calls;
	enum shaper_dir apply_dir;
	struct sched_params applied;
	unsigned int reset_calls;
	unsigned int flows_calls;
	unsigned int flows_max; /* the max of the last flows() call */
	/* the WAN emulator: only where has_emu */
	bool has_emu[SHAPER_NUM_DIRS];
	struct shaper_emulate_config emu[SHAPER_NUM_DIRS];
	unsigned int emu_set_calls;
};

/* Upstream tins: 3 tins (diffserv3), distinct values everywhere. */
static const char *const fake_tin_names[3] = { "Bulk", "Best Effort", "Voice" };

static __attribute__((unused)) void
fake_fill_dir(struct fake *f, enum shaper_dir d)
{
	uint64_t b = d == SHAPER_UP ? 0 : 100000; /* downstream differs by 100000 */
	struct ctl_dir_counters *c = &f->c[d];
	struct sched_stats *st = &f->st[d];
	struct sched_params *p = &f->params[d];

	memset(c, 0, sizeof(*c));
	c->rx_packets = 1234 + b;
	c->rx_bytes = 1234000 + b;
	c->tx_packets = 1200 + b;
	c->tx_bytes = 1200000 + b;
	c->tx_retries = 7 + b;
	c->backlogged_ns = (98765 + b) * 1000;
	c->backlogged_tx_bytes = 1100000 + b;
	for (int r = 0; r < SHAPER_DROP_MAX; r++)
		c->dropped[r] = 11 + (uint64_t)r + b; /* aqm 11, overflow 12, ... */
	c->emulator_qlen = 9 + b;
	c->sched_qlen = 21 + b;
	c->swap_qlen = 3 + b;
	c->tx_pending = 2 + b;
	c->held_at_reset = 5 + b;
	c->steered_out = 40 + b; /* a shard that hands over more than it takes */
	c->steered_in = 36;
	c->pool_in_use = 77 + b;
	c->pool_size = 4095 + b;
	c->time_ns = 123456789 + b;

	memset(st, 0, sizeof(*st));
	st->enqueued_pkts = 1300 + b;
	st->enqueued_bytes = 1300000 + b;
	st->dequeued_pkts = 1199 + b;
	st->dequeued_bytes = 1199000 + b;
	st->backlog_pkts = 21 + b;
	st->backlog_bytes = 31500 + b;
	st->overlimits = 42 + b;
	st->lag_skips = 2 + b;
	st->lag_skipped_ns = 30500000 + b;
	st->sojourn[0] = 10 + b; /* [0, 1024) ns */
	st->sojourn[40] = 3;     /* one bucket in the middle */
	st->sojourn[SCHED_SOJOURN_BUCKETS - 1] = 1;
	st->sparse_sojourn[3] = 7 + b;
	st->ecn_marked = 5 + b;
	st->memory_used = 65536 + b;
	st->memory_limit = 4194304 + b;
	st->capacity_estimate = 12500000 + b;
	st->min_network_size = 60;
	st->max_network_size = 1514;
	st->min_adj_size = 64;
	st->max_adj_size = 1518;
	st->avg_hdr_offset = 14;
	st->tin_count = d == SHAPER_UP ? 3 : 1;
	for (uint32_t t = 0; t < st->tin_count; t++) {
		struct sched_tin_stats *ti = &st->tins[t];

		snprintf(ti->name, sizeof(ti->name), "%s",
			 d == SHAPER_UP ? fake_tin_names[t] : "Best Effort");
		ti->threshold_rate = 1000000 * (t + 1) + b;
		ti->target_us = 5000 + t;
		ti->interval_us = 100000 + t;
		ti->peak_delay_us = 900 + t;
		ti->avg_delay_us = 300 + t;
		ti->base_delay_us = 20 + t;
		ti->sent_packets = 400 + t + b;
		ti->sent_bytes = 400000 + t + b;
		ti->backlog_bytes = 1500 * t + b;
		ti->way_indirect_hits = 2 + t;
		ti->way_misses = 30 + t;
		ti->way_collisions = 1 + t;
		ti->drops = 3 + t + b;
		ti->ecn_mark = 4 + t;
		ti->ack_drops = 6 + t;
		ti->ect1_packets = 60 + t + b;
		ti->step_marks = 9 + t;
		ti->sparse_flows = 7 + t;
		ti->bulk_flows = 8 + t;
		ti->unresponsive_flows = t;
		ti->max_pkt_len = 1514 - t;
		ti->flow_quantum = 1514 + t;
		ti->sojourn[5 + t] = 100 + t;
		ti->sparse_sojourn[2 + t] = 50 + t;
	}

	sched_params_default(p, SCHED_DISC_CAKE);
	p->upstream = d == SHAPER_UP;
	if (d == SHAPER_UP) {
		p->rate = 12500000; /* 100Mbit */
		p->diffserv = SCHED_DIFFSERV3;
	} else {
		p->rate = 35000000;            /* 280Mbit */
		p->diffserv = SCHED_DIFFSERV4; /* so we see it is kept by config.set */
	}
}

static __attribute__((unused)) void
fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		fake_fill_dir(f, (enum shaper_dir)d);
		f->n_flows[d] = d == SHAPER_UP ? 3 : 5;
	}
	for (int r = 0; r < SHAPER_NUM_PORTS; r++) {
		struct ctl_port_counters *pc = &f->port[r];
		uint64_t b = r == SHAPER_PORT_WAN ? 0 : 500000;

		snprintf(pc->name, sizeof(pc->name), "%s",
			 r == SHAPER_PORT_WAN ? "0000:01:00.0" : "net_tap_lan");
		pc->rx_packets = 2001 + b;
		pc->tx_packets = 2002 + b;
		pc->rx_bytes = 2003 + b;
		pc->tx_bytes = 2004 + b;
		pc->rx_missed = 2005 + b;
		pc->rx_errors = 2006 + b;
		pc->tx_errors = 2007 + b;
		pc->rx_nombuf = 2008 + b;
		pc->link_up = r == SHAPER_PORT_WAN; /* the LAN port's link is down */
		pc->link_speed = r == SHAPER_PORT_WAN ? 10000 : 0;
		pc->link_changes = 2009 + b;
	}
}

static __attribute__((unused)) int
fake_dir_snapshot(void *opaque, enum shaper_dir d, struct ctl_dir_counters *c,
		  struct sched_stats *st, struct sched_params *params)
{
	struct fake *f = opaque;

	f->snapshot_calls++;
	if ((unsigned int)d >= SHAPER_NUM_DIRS)
		return -EINVAL;
	if (f->snapshot_rc[d] != 0)
		return f->snapshot_rc[d];
	*c = f->c[d];
	*st = f->st[d];
	*params = f->params[d];
	return 0;
}

static __attribute__((unused)) int
fake_port_counters(void *opaque, enum shaper_port_role r, struct ctl_port_counters *pc)
{
	struct fake *f = opaque;

	if ((unsigned int)r >= SHAPER_NUM_PORTS)
		return -EINVAL;
	if (f->port_rc[r] != 0)
		return f->port_rc[r];
	*pc = f->port[r];
	return 0;
}

static __attribute__((unused)) int
fake_apply(void *opaque, enum shaper_dir d, const struct sched_params *p, char *err, size_t errlen)
{
	struct fake *f = opaque;

	f->apply_calls++;
	f->apply_dir = d;
	f->applied = *p;
	if (f->apply_rc != 0) {
		snprintf(err, errlen, "%s", f->apply_msg);
		return f->apply_rc;
	}
	if ((unsigned int)d < SHAPER_NUM_DIRS)
		f->params[d] = *p;
	return 0;
}

static __attribute__((unused)) int
fake_emulate_get(void *opaque, enum shaper_dir d, struct shaper_emulate_config *em)
{
	struct fake *f = opaque;

	if (!f->has_emu[d])
		return -ENOENT;
	*em = f->emu[d];
	return 0;
}

static __attribute__((unused)) int
fake_emulate_set(void *opaque, enum shaper_dir d, const struct shaper_emulate_config *em, char *err,
		 size_t errlen)
{
	struct fake *f = opaque;

	(void)err;
	(void)errlen;
	f->emu_set_calls++;
	f->emu[d] = *em;
	return 0;
}

static __attribute__((unused)) int
fake_reset_stats(void *opaque)
{
	struct fake *f = opaque;

	f->reset_calls++;
	return f->reset_rc;
}

static __attribute__((unused)) int
fake_flows(void *opaque, enum shaper_dir d, struct ctl_flow *out, unsigned int max)
{
	struct fake *f = opaque;
	unsigned int n;

	f->flows_calls++;
	f->flows_max = max;
	if (f->flows_rc != 0)
		return f->flows_rc;
	n = f->n_flows[d] < max ? f->n_flows[d] : max;
	for (unsigned int i = 0; i < n; i++) {
		struct ctl_flow *fl = &out[i];

		memset(fl, 0, sizeof(*fl));
		snprintf(fl->src, sizeof(fl->src), "192.168.%u.%u", (unsigned int)d, i % 250 + 1);
		snprintf(fl->dst, sizeof(fl->dst), "2001:db8::%x", i + 1);
		fl->sport = (uint16_t)(40000 + i);
		fl->dport = d == SHAPER_UP ? 443 : 80;
		fl->proto = i % 2 ? 17 : 6;
		fl->tin = (uint8_t)(i % 3);
		fl->packets = 2000 - i;
		fl->backlog_bytes = 150000 - 1000 * (uint64_t)i;
		fl->sojourn_ns = 2500000 + 1000 * (uint64_t)i + 999; /* truncates to us */
		if (fl->proto == 6) {                                /* passive RTT, TCP only */
			fl->rtt_wan_ns = 40000000 + 1000 * (uint64_t)i + 999;
			fl->rtt_lan_ns = 1500000;
		}
	}
	return (int)n;
}

static int
fake_heap_bytes(void *opaque, uint64_t *bytes)
{
	(void)opaque;
	*bytes = 4242000;
	return 0;
}

static __attribute__((unused)) void
fake_backend(struct fake *f, struct ctl_backend *be)
{
	memset(be, 0, sizeof(*be));
	be->opaque = f;
	be->dir_snapshot = fake_dir_snapshot;
	be->port_counters = fake_port_counters;
	be->apply = fake_apply;
	be->reset_stats = fake_reset_stats;
	be->flows = fake_flows;
	be->heap_bytes = fake_heap_bytes;
	be->emulate_get = fake_emulate_get;
	be->emulate_set = fake_emulate_set;
}

/* Known error codes, for checks that a reply names one of them. */
static __attribute__((unused)) int
is_error_code(const char *s)
{
	static const char *const codes[] = { "bad_json",          "bad_request",
					     "unknown_command",   "invalid_argument",
					     "too_large",         "busy",
					     "permission_denied", "restart_required",
					     "internal" };

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (strcmp(s, codes[i]) == 0)
			return 1;
	return 0;
}

/*
 * Follow a dotted path ("result.tins.1.name"; numbers index arrays) from
 * root. NULL if any step is missing. Keys containing dots are not supported.
 */
static __attribute__((unused)) json_t *
jpath(json_t *root, const char *path)
{
	char buf[256], *tok, *save = NULL;
	json_t *j = root;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok != NULL && j != NULL;
	     tok = strtok_r(NULL, ".", &save)) {
		if (json_is_array(j)) {
			char *end;
			unsigned long i = strtoul(tok, &end, 10);

			j = *end == '\0' ? json_array_get(j, i) : NULL;
		} else {
			j = json_object_get(j, tok);
		}
	}
	return j;
}

#endif
