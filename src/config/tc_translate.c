/*
 * shaper.json to tc(8) commands (shaper/tc_translate.h). The option names
 * are tc-cake(8)'s and tc-fq_codel(8)'s; a rate is written in bit/s so no
 * unit table stands between the two.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "shaper/tc_translate.h"

struct out {
	char *buf;
	size_t len, used;
	bool full;
};

static void
put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->used) {
		o->full = true;
		return;
	}
	o->used += (size_t)n;
}

/* The interface of "...,iface=NAME,..." or the placeholder. */
static void
iface_of(const char *device, const char *placeholder, char *out, size_t len)
{
	const char *p = strstr(device, ",iface=");
	size_t n;

	if (p == NULL) {
		snprintf(out, len, "%s", placeholder);
		return;
	}
	p += strlen(",iface=");
	n = strcspn(p, ",");
	if (n == 0 || n >= len) {
		snprintf(out, len, "%s", placeholder);
		return;
	}
	memcpy(out, p, n);
	out[n] = '\0';
}

static const char *
ack_filter_word(enum sched_ack_filter a)
{
	switch (a) {
	case SCHED_ACK_FILTER_ON:
		return "ack-filter";
	case SCHED_ACK_FILTER_AGGRESSIVE:
		return "ack-filter-aggressive";
	default:
		return "no-ack-filter";
	}
}

static const char *
framing_word(enum sched_framing f)
{
	return f == SCHED_FRAMING_ATM ? "atm" : f == SCHED_FRAMING_PTM ? "ptm" : "noatm";
}

static void
cake(struct out *o, const char *dev, const struct sched_params *p)
{
	put(o, "tc qdisc replace dev %s root cake", dev);
	if (p->rate != 0)
		put(o, " bandwidth %" PRIu64 "bit", p->rate * 8);
	else
		put(o, " unlimited");
	put(o, " %s %s %s %s %s %s", shaper_diffserv_name(p->diffserv),
	    shaper_isolation_name(p->isolation), p->nat ? "nat" : "nonat",
	    p->wash ? "wash" : "nowash", p->ingress ? "ingress" : "egress",
	    ack_filter_word(p->ack_filter));
	if (p->overhead_mode)
		put(o, " overhead %d", (int)p->overhead);
	else
		put(o, " raw");
	put(o, " mpu %u %s rtt %uus", p->mpu, framing_word(p->framing), p->rtt_us);
	if (p->memlimit != 0)
		put(o, " memlimit %" PRIu64 "b", p->memlimit);
	put(o, "\n");
	if (!p->ecn)
		put(o, "# ecn false: tc-cake always marks ECN-capable packets\n");
	if (!p->overhead_mode && p->overhead != 0)
		put(o, "# raw overhead %d: tc-cake's raw takes no overhead\n", (int)p->overhead);
	if (p->l4s)
		put(o, "# l4s (step %uus): tc-cake has no L4S step; it marks ECT(1) as ECT(0)\n",
		    p->l4s_step_us);
	if (p->nqb)
		put(o, "# nqb: tc-cake leaves DSCP 45 in best effort\n");
}

/* fq_codel and fifo shape only under a rate limiter: HTB with one class. */
static const char *
htb_parent(struct out *o, const char *dev, const struct sched_params *p)
{
	if (p->rate == 0)
		return "root";
	put(o, "tc qdisc replace dev %s root handle 1: htb default 1\n", dev);
	put(o,
	    "tc class replace dev %s parent 1: classid 1:1 htb rate %" PRIu64 "bit ceil %" PRIu64
	    "bit\n",
	    dev, p->rate * 8, p->rate * 8);
	return "parent 1:1";
}

static void
fq_codel(struct out *o, const char *dev, const struct sched_params *p)
{
	const char *at = htb_parent(o, dev, p);

	put(o,
	    "tc qdisc replace dev %s %s fq_codel limit %u flows %u quantum %u target %uus "
	    "interval %uus memory_limit %" PRIu64 " %s",
	    dev, at, p->fqc_limit, p->fqc_flows, p->fqc_quantum, p->fqc_target_us,
	    p->fqc_interval_us, p->fqc_memory_limit, p->ecn ? "ecn" : "noecn");
	/* tc-fq_codel has one threshold: the selector narrows it to ECT(1) */
	if (p->l4s)
		put(o, " ce_threshold %uus ce_threshold_selector 0x1/0x3", p->l4s_step_us);
	else if (p->fqc_ce_threshold_us != 0)
		put(o, " ce_threshold %uus", p->fqc_ce_threshold_us);
	put(o, " drop_batch %u\n", p->fqc_drop_batch);
	if (p->l4s && p->fqc_ce_threshold_us != 0)
		put(o, "# ce_threshold %uus for every ECT packet: tc-fq_codel has one threshold\n",
		    p->fqc_ce_threshold_us);
	if (p->l4s)
		put(o, "# l4s: tc marks ECT(1) only, in mixed queues too, with no MTU floor\n");
}

static void
fifo(struct out *o, const char *dev, const struct sched_params *p)
{
	const char *at = htb_parent(o, dev, p);

	if (p->fifo_limit_bytes != 0)
		put(o, "tc qdisc replace dev %s %s bfifo limit %" PRIu64 "\n", dev, at,
		    p->fifo_limit_bytes);
	else if (p->fifo_limit_pkts != 0)
		put(o, "tc qdisc replace dev %s %s pfifo limit %u\n", dev, at, p->fifo_limit_pkts);
	else
		put(o, "tc qdisc replace dev %s %s pfifo\n", dev, at);
}

int
shaper_config_tc(const struct shaper_config *c, char *out, size_t len)
{
	struct out o = { out, len, 0, false };
	char dev[SHAPER_NUM_DIRS][64];

	if (len == 0)
		return -1;
	out[0] = '\0';
	/* Upstream leaves through the WAN port, downstream through the LAN port. */
	iface_of(c->port[SHAPER_PORT_WAN].device, "WAN_IF", dev[SHAPER_UP], sizeof(dev[0]));
	iface_of(c->port[SHAPER_PORT_LAN].device, "LAN_IF", dev[SHAPER_DOWN], sizeof(dev[0]));
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		const struct sched_params *p = &c->dir[d];

		put(&o, "# %s (%s): %s on %s's egress\n", shaper_dir_name[d],
		    d == SHAPER_UP ? "LAN to WAN" : "WAN to LAN",
		    shaper_discipline_name(p->discipline), dev[d]);
		switch (p->discipline) {
		case SCHED_DISC_CAKE:
			cake(&o, dev[d], p);
			break;
		case SCHED_DISC_FQ_CODEL:
			fq_codel(&o, dev[d], p);
			break;
		case SCHED_DISC_FIFO:
			fifo(&o, dev[d], p);
			break;
		}
		if (c->autorate[d].enabled)
			put(&o,
			    "# autorate: tc keeps the starting rate; it does not follow the line\n");
		if (c->emulate[d].delay_ns != 0 || c->emulate[d].loss_ppm != 0)
			put(&o,
			    "# emulate: not translated (netem would do it; it is a test tool)\n");
	}
	return o.full ? -1 : 0;
}
