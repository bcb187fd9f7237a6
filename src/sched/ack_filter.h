/*
 * Private to src/sched: CAKE's TCP ACK filter (sch_cake's
 * cake_ack_filter()).
 * Given a flow queue and the packet just appended to it, find one queued
 * pure ACK that the new one makes redundant. The caller unlinks, accounts
 * and drops it (reason SHAPER_DROP_ACK_FILTER).
 */
#ifndef SHAPER_SCHED_ACK_FILTER_H
#define SHAPER_SCHED_ACK_FILTER_H

#include "shaper/pkt.h"
#include "shaper/sched.h"

/*
 * head: the flow queue's first packet; trigger: the just-appended tail
 * (linked from head through ->next). Packets are parsed from data at
 * l3_off. Returns the queued packet to remove (never trigger) or NULL;
 * *prev receives its predecessor, NULL if it is head. Mode OFF returns NULL.
 */
struct sh_pkt *ack_filter_find(struct sh_pkt *head, struct sh_pkt *trigger,
			       enum sched_ack_filter mode, struct sh_pkt **prev);

#endif
