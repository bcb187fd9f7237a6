/*
 * The classifier: parses one L2 frame (Ethernet, stacked 802.1Q/802.1ad,
 * PPPoE session, IPv4, IPv6 with extension headers, TCP/UDP/ICMP) and fills
 * the sh_pkt metadata the scheduler needs. It never touches queues or time
 * and never fails: a frame it cannot parse is classified as non-IP (DSCP 0,
 * host hashes 0) and still passes.
 */
#ifndef SHAPER_CLASSIFY_H
#define SHAPER_CLASSIFY_H

#include <stdint.h>

#include "shaper/pkt.h"

/* A random key per scheduler instance keeps the flow hash unpredictable. */
struct classify_key {
	uint64_t k0, k1;
};

void classify_key_init(struct classify_key *key, uint64_t seed);

/*
 * The classifier's keyed hash of n 64-bit words, for other tables whose
 * keys come from the wire (kept apart from the flow and host hashes of the
 * same bytes): without the key, no one can aim many keys at one bucket.
 */
uint32_t classify_hash_key(const struct classify_key *key, const uint64_t *w, unsigned int n);

/*
 * Fill p->flow_hash, src_hash, dst_hash, dscp, ecn, l3_off, l4_off,
 * l4_proto, flags and net_off from p->data[0 .. p->len). The flow hash is
 * direction-symmetric and takes in the ids of the outer two VLAN tags (the
 * host hashes do not). Reads only within the frame.
 */
void classify_pkt(struct sh_pkt *p, const struct classify_key *key);

/*
 * The flow_hash classify_pkt gives an unfragmented packet of this 5-tuple
 * (family 4 or 6; addresses in network order, 4 or 16 bytes), either way
 * round: for finding a flow again from its addresses.
 */
uint32_t classify_flow_hash(const struct classify_key *key, uint8_t family, const uint8_t *src,
			    const uint8_t *dst, uint16_t sport, uint16_t dport, uint8_t proto);

/*
 * The same for a packet that carried VLAN tags: vlan is classify_vlan_key
 * of the packet (0 = untagged, then this is classify_flow_hash).
 */
uint32_t classify_flow_hash_vlan(const struct classify_key *key, uint32_t vlan, uint8_t family,
				 const uint8_t *src, const uint8_t *dst, uint16_t sport,
				 uint16_t dport, uint8_t proto);

/*
 * The VLAN ids of p's outer two tags (802.1Q, 802.1ad or 0x9100) as the flow
 * hash takes them: the outer id in bits 12..23, the next in bits 0..11; 0 if
 * untagged. It reads the tags again, for code that holds a classified packet
 * and wants its VLAN (CAKE's hosts per VLAN, finding a flow by its hash).
 */
static inline uint32_t
classify_vlan_key(const struct sh_pkt *p)
{
	const uint8_t *d = p->data;
	uint32_t v = 0, off = 12;

	if (d == NULL || p->net_off < 18) /* untagged: only 14, or 22 for bare PPPoE */
		return 0;
	for (unsigned int i = 0; i < 2 && off + 6 <= p->hdr_len; i++, off += 4) {
		uint16_t tpid = (uint16_t)(d[off] << 8 | d[off + 1]);

		if (tpid != 0x8100 && tpid != 0x88a8 && tpid != 0x9100)
			break;
		v |= (uint32_t)((d[off + 2] << 8 | d[off + 3]) & 0x0fff) << (i == 0 ? 12 : 0);
	}
	return v;
}

/* Burst form: prefetch-friendly loop over n packets. */
void classify_burst(struct sh_pkt **pkts, unsigned int n, const struct classify_key *key);

/*
 * Rewrite the DSCP of the IP header at p->l3_off, keeping the ECN bits;
 * fixes the IPv4 header checksum incrementally. No-op for non-IP.
 */
void classify_set_dscp(struct sh_pkt *p, uint8_t dscp);

/*
 * Set ECN to CE if the packet is ECT(0) or ECT(1). Returns 1 if it is now
 * CE (changed, or already CE), 0 if Not-ECT or non-IP. IPv4 checksum fixed.
 */
int classify_set_ce(struct sh_pkt *p);

#endif
