/*
 * The outer VLAN tag of an Ethernet frame, read and rewritten in place:
 * what one port on a stick (ports.single) needs to tell the WAN side's
 * frames from the LAN side's and to move each to the other VLAN. Nothing
 * here depends on DPDK; the classifier reads the same tags (802.1Q,
 * 802.1ad and the older QinQ 0x9100) for its hashes.
 */
#ifndef SHAPER_VLAN_H
#define SHAPER_VLAN_H

#include <stdbool.h>
#include <stdint.h>

#define VLAN_TAG_OFF 12u     /* the TPID follows the two MAC addresses */
#define VLAN_ID_MASK 0x0fffu /* the TCI's low 12 bits; PCP and DEI above */

static inline bool
vlan_is_tpid(uint16_t tpid)
{
	return tpid == 0x8100 || tpid == 0x88a8 || tpid == 0x9100;
}

/* The outer tag's VLAN id, or -1 if the frame has none (untagged, or cut inside it). */
static inline int
vlan_outer_id(const uint8_t *frame, uint32_t len)
{
	if (frame == NULL || len < VLAN_TAG_OFF + 4)
		return -1;
	if (!vlan_is_tpid((uint16_t)(frame[12] << 8 | frame[13])))
		return -1;
	return (int)((uint16_t)(frame[14] << 8 | frame[15]) & VLAN_ID_MASK);
}

/* Give the outer tag (vlan_outer_id >= 0) the id vid; its priority and DEI bits stay. */
static inline void
vlan_set_outer_id(uint8_t *frame, uint16_t vid)
{
	frame[14] = (uint8_t)((frame[14] & 0xf0) | ((vid >> 8) & 0x0f));
	frame[15] = (uint8_t)vid;
}

#endif
