/*
 * The XDP program shaperd loads on AF_XDP ports when fail_open is on
 * (docs/deployment.md, "Fail-open"). Both ports sit in a Linux bridge; this
 * program hands every frame to shaperd's AF_XDP socket while shaperd holds a
 * lease, and lets it through to the bridge (XDP_PASS) when the lease has run
 * out or the socket is gone. A crash closes the socket, a stopped or stuck
 * shaperd stops renewing the lease: either way the bridge forwards, unshaped,
 * with no one acting.
 *
 * af_packet ports have failopen_tc.bpf.c instead.
 *
 * shaperd finds the maps by name: xsks_map is the one DPDK's net_af_xdp
 * driver fills with its sockets; shaper_lease holds the CLOCK_MONOTONIC
 * nanosecond (bpf_ktime_get_ns) until which shaperd forwards.
 */
#include "failopen_lease.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64); /* rx queues; net_af_xdp's own program has as many */
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

SEC("xdp")
int
shaper_failopen(struct xdp_md *ctx)
{
	if (!shaper_lease_held())
		return XDP_PASS;
	/* No socket on this queue (shaperd exited or crashed): XDP_PASS as well. */
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual BSD/GPL";
