/*
 * Fail-open for af_packet ports (docs/deployment.md, "Fail-open"): the
 * packet socket gets its copy of each frame before tc's ingress hook, where
 * shaperd attaches this program, so the bridge's copy is dropped here while
 * shaperd holds its lease and let through once the lease has lapsed (a
 * crash, a stop, a stopped or stuck shaperd). The lease map works as in
 * failopen.bpf.c: CLOCK_MONOTONIC nanoseconds, renewed by shaperd.
 */
#include "failopen_lease.bpf.h"

/* TC_ACT_OK and TC_ACT_SHOT (linux/pkt_cls.h), without its other headers. */
#define SHAPER_TC_ACT_OK   0
#define SHAPER_TC_ACT_SHOT 2

SEC("tc")
int
shaper_failopen_tc(struct __sk_buff *skb)
{
	(void)skb;
	if (!shaper_lease_held())
		return SHAPER_TC_ACT_OK; /* on to the bridge */
	return SHAPER_TC_ACT_SHOT;       /* shaperd's packet socket has its copy */
}

char _license[] SEC("license") = "Dual BSD/GPL";
