/*
 * The control thread's half of "flows": the worker copies compact facts of
 * every queued flow (struct sched_flow_fact); here they are ordered, the
 * top ones kept, and their addresses formatted. None of this runs on a
 * worker.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "shaper/control.h"

void
ctl_flow_from_fact(const struct sched_flow_fact *f, struct ctl_flow *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->src, sizeof(out->src), "-");
	snprintf(out->dst, sizeof(out->dst), "-");
	if (f->family == 4) {
		inet_ntop(AF_INET, f->src, out->src, sizeof(out->src));
		inet_ntop(AF_INET, f->dst, out->dst, sizeof(out->dst));
	} else if (f->family == 6) {
		inet_ntop(AF_INET6, f->src, out->src, sizeof(out->src));
		inet_ntop(AF_INET6, f->dst, out->dst, sizeof(out->dst));
	}
	out->sport = f->sport;
	out->dport = f->dport;
	out->proto = f->l4_proto;
	out->tin = f->tin;
	out->packets = f->packets;
	out->backlog_bytes = f->backlog_bytes;
	out->sojourn_ns = f->sojourn_ns;
	out->rtt_wan_ns = f->rtt_wan_ns;
	out->rtt_lan_ns = f->rtt_lan_ns;
	out->shard = f->shard;
}

/* addr (text, in place) cut to its first bits: the network it is in. */
static void
mask_addr(char *addr, size_t len)
{
	uint8_t a[16];
	char net[INET6_ADDRSTRLEN];
	int af, bits;

	if (inet_pton(AF_INET, addr, a) == 1)
		af = AF_INET, bits = CTL_FLOW_MASK_V4;
	else if (inet_pton(AF_INET6, addr, a) == 1)
		af = AF_INET6, bits = CTL_FLOW_MASK_V6;
	else
		return; /* not an address ("-"): nothing to hide */
	_Static_assert(CTL_FLOW_MASK_V4 % 8 == 0 && CTL_FLOW_MASK_V6 % 8 == 0, "whole bytes");
	memset(a + bits / 8, 0, (af == AF_INET ? 4 : 16) - bits / 8);
	inet_ntop(af, a, net, sizeof(net));
	snprintf(addr, len, "%s/%d", net, bits);
}

void
ctl_flow_mask(struct ctl_flow *f)
{
	mask_addr(f->src, sizeof(f->src));
	mask_addr(f->dst, sizeof(f->dst));
	f->sport = 0;
	f->dport = 0;
}

unsigned int
ctl_flows_top(struct sched_flow_fact *facts, unsigned int n, struct ctl_flow *out, unsigned int max)
{
	unsigned int k = n < max ? n : max;

	sched_flow_facts_sort(facts, n);
	for (unsigned int i = 0; i < k; i++)
		ctl_flow_from_fact(&facts[i], &out[i]);
	return k;
}
