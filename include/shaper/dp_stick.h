/*
 * One port on a stick (ports.single): the WAN side's frames arrive tagged
 * with wan_vlan and the LAN side's with lan_vlan, on the same rx queue.
 * The worker that owns the queue reads it for both of its directions:
 * each frame goes to the direction its VLAN says (the other direction's
 * wait in the stick until that direction's turn, in the order they came)
 * and leaves on the same port with the other side's id, rewritten in
 * place (priority bits kept). Frames without a tag or on a third VLAN are
 * dropped, counted as other_vlan in the downstream's counters: a bridge on
 * a stick that sent them back would echo the switch's own traffic to it.
 *
 * Both directions classify a frame as it is on the LAN VLAN (downstream
 * after its rewrite, upstream before it), so a flow hashes alike both
 * ways, as passive RTT and steering need.
 */
#ifndef SHAPER_DP_STICK_H
#define SHAPER_DP_STICK_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "shaper/config.h"
#include "shaper/limits.h"
#include "shaper/pkt.h"

struct dp_dir;

struct dp_stick {
	uint16_t vlan_in[SHAPER_NUM_DIRS]; /* the id a direction's frames arrive with */
	struct dp_dir *dir[SHAPER_NUM_DIRS];
	uint16_t n_held[SHAPER_NUM_DIRS];
	/* Read in the other direction's turn, for this one's next. */
	struct rte_mbuf *held[SHAPER_NUM_DIRS][SHAPER_BURST_MAX];
};

/*
 * A stick for a worker's two directions (the same rx queue of one port):
 * wan_vlan and lan_vlan as in ports.single. NULL if out of memory.
 */
struct dp_stick *dp_stick_create(struct dp_dir *up, struct dp_dir *down, uint16_t wan_vlan,
				 uint16_t lan_vlan, int socket);
/* Frees the stick (its held frames were freed by dp_stick_flush). */
void dp_stick_free(struct dp_stick *s);

/*
 * d's rx for its turn: the frames held for it, then up to the rest of
 * burst from the port, sorted by VLAN. Returns the frames for d in rx[]
 * (downstream's already on lan_vlan); the other direction's are held.
 */
uint16_t dp_stick_rx(struct dp_stick *s, struct dp_dir *d, struct rte_mbuf **rx, uint32_t burst);

/* Upstream, after the classifier: the frames onto wan_vlan. */
void dp_stick_retag_up(const struct dp_stick *s, struct sh_pkt **pkts, unsigned int n);

/* At shutdown: what is held for d, counted in and dropped as shutdown. */
void dp_stick_flush(struct dp_stick *s, struct dp_dir *d);

#endif
