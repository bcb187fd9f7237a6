/*
 * L4S (RFC 9331) classification shared by the flow-queuing disciplines
 * (cake, fq_codel) with params.l4s on. Private to src/sched.
 */
#ifndef SHAPER_SCHED_L4S_H
#define SHAPER_SCHED_L4S_H

#include <stdint.h>

#include "shaper/pkt.h"

/* The ECN field (RFC 3168; ECT(1) is L4S's, RFC 9331). */
#define L4S_ECN_ECT1 1u
#define L4S_ECN_CE   3u

/*
 * Is pkt an L4S packet (RFC 9331 section 5.3)? ECT(1) is, ECT(0) and
 * Not-ECT are not, and CE is, as RFC 9331 classifies it, unless the flow's
 * latest packet not CE was classic (a CE packet was ECT before a bottleneck
 * upstream marked it; the flow says which ECT). classic_flag is the bit of
 * *flow_flags that keeps that history. The verdict rides in the packet
 * (SH_PKT_L4S), so the queue's count of classic packets (*classic, raised
 * here for a classic packet) stays exact however the flow's history moves
 * on; *ect1_packets counts ECT(1) arrivals.
 */
static inline void
l4s_classify(struct sh_pkt *pkt, uint8_t *flow_flags, uint8_t classic_flag, uint32_t *classic,
	     uint64_t *ect1_packets)
{
	uint8_t ecn = pkt->ecn & 3u;

	if (ecn == L4S_ECN_ECT1) {
		*flow_flags &= (uint8_t)~classic_flag;
		(*ect1_packets)++;
	} else if (ecn != L4S_ECN_CE) {
		*flow_flags |= classic_flag;
	}
	if (!(*flow_flags & classic_flag)) {
		pkt->flags |= SH_PKT_L4S;
	} else {
		pkt->flags &= (uint8_t)~SH_PKT_L4S;
		(*classic)++;
	}
}

#endif
