/*
 * LAN-side address -> subscriber, longest-prefix match, optionally per
 * VLAN. One open-addressing hash table per address family keyed by (VLAN,
 * prefix length, masked address); a lookup probes the lengths that occur,
 * longest first, so a set of /32s and /56s costs one probe per hit. A
 * prefix qualified by a VLAN wins over an unqualified one on that VLAN
 * (address space repeated behind several VLANs); an unqualified prefix
 * matches on any VLAN.
 *
 * Measured against DPDK's rte_lpm/rte_lpm6 with 10,000 subscribers
 * (bench_subscriber_lookup; figures in docs/subscribers.md): rte_lpm is
 * several times faster for v4 and for misses of either family, so the data
 * path is to use rte_lpm/rte_lpm6 for unqualified prefixes and this table
 * for the VLAN-qualified ones, which rte_lpm cannot key. This one needs no
 * EAL and about 1 MB where rte_lpm's tables take some 200 MB: it is what
 * the control plane and the tests use. Read-only once built: any number of
 * threads may share one; a change builds a new one.
 */
#ifndef SHAPER_SUBSCRIBER_LOOKUP_H
#define SHAPER_SUBSCRIBER_LOOKUP_H

#include <stddef.h>
#include <stdint.h>

#include "shaper/subscriber.h"

struct sub_lookup;

/* Built from set's prefixes (set must be valid). NULL if out of memory. */
struct sub_lookup *sub_lookup_create(const struct sub_set *set);
void sub_lookup_free(struct sub_lookup *l);

/* The subscriber owning v4 address addr (host order) on vlan (0 = untagged), or SUB_NONE. */
uint32_t sub_lookup_v4(const struct sub_lookup *l, uint16_t vlan, uint32_t addr);

/* The same for a v6 address (16 bytes, network order). */
uint32_t sub_lookup_v6(const struct sub_lookup *l, uint16_t vlan, const uint8_t addr[16]);

/* Bytes the tables take (for the memory estimate). */
size_t sub_lookup_bytes(const struct sub_lookup *l);

/* What sub_lookup_bytes would be for n4 v4 and n6 v6 prefixes (estimates before building). */
size_t sub_lookup_bytes_for(uint32_t n4, uint32_t n6);

#endif
