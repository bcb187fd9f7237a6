/*
 * The control thread's half of "flows": the worker copies compact facts of
 * every queued flow (struct sched_flow_fact); here they are ordered, the
 * top ones kept, and their addresses formatted. None of this runs on a
 * worker.
 */
#include <arpa/inet.h>
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

unsigned int
ctl_flows_top(struct sched_flow_fact *facts, unsigned int n, struct ctl_flow *out, unsigned int max)
{
	unsigned int k = n < max ? n : max;

	sched_flow_facts_sort(facts, n);
	for (unsigned int i = 0; i < k; i++)
		ctl_flow_from_fact(&facts[i], &out[i]);
	return k;
}
