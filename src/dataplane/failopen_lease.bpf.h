/*
 * The lease both fail-open programs read (failopen.bpf.c, failopen_tc.bpf.c):
 * the CLOCK_MONOTONIC nanosecond (bpf_ktime_get_ns) until which shaperd
 * forwards, renewed by shaperd's lease thread (src/dataplane/failopen.c).
 */
#ifndef SHAPER_FAILOPEN_LEASE_BPF_H
#define SHAPER_FAILOPEN_LEASE_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} shaper_lease SEC(".maps");

/* Whether shaperd holds the line now. */
static __always_inline int
shaper_lease_held(void)
{
	__u32 key = 0;
	__u64 *until = bpf_map_lookup_elem(&shaper_lease, &key);

	return until != 0 && bpf_ktime_get_ns() <= *until;
}

#endif
