/*
 * One port on a stick: the worker's rx queue sorted by VLAN into its two
 * directions, and the tag moved to the other side's VLAN in place
 * (shaper/dp_stick.h).
 */
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "shaper/dataplane.h"
#include "shaper/vlan.h"

struct dp_stick *
dp_stick_create(struct dp_dir *up, struct dp_dir *down, uint16_t wan_vlan, uint16_t lan_vlan,
		int socket)
{
	struct dp_stick *s =
			rte_zmalloc_socket("shaper_stick", sizeof(*s), RTE_CACHE_LINE_SIZE, socket);

	if (s == NULL)
		return NULL;
	s->vlan_in[SHAPER_UP] = lan_vlan;
	s->vlan_in[SHAPER_DOWN] = wan_vlan;
	s->dir[SHAPER_UP] = up;
	s->dir[SHAPER_DOWN] = down;
	return s;
}

void
dp_stick_free(struct dp_stick *s)
{
	rte_free(s);
}

/*
 * A PMD that took the tag into the mbuf (af_packet: the kernel had it as
 * metadata) gets it back into the frame, in the headroom: the classifier
 * and the rewrite then see every frame alike, and it leaves tagged.
 */
static inline bool
tag_in_frame(struct rte_mbuf **m)
{
	if (!((*m)->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED))
		return true;
	return rte_vlan_insert(m) == 0;
}

uint16_t
dp_stick_rx(struct dp_stick *s, struct dp_dir *d, struct rte_mbuf **rx, uint32_t burst)
{
	enum shaper_dir me = d->dir, other = me == SHAPER_UP ? SHAPER_DOWN : SHAPER_UP;
	struct dp_dir *down = s->dir[SHAPER_DOWN];
	struct rte_mbuf *drop[SHAPER_BURST_MAX];
	uint16_t n = s->n_held[me], got, n_drop = 0;
	uint32_t want;
	uint64_t drop_bytes = 0;

	/* Held first: they came before anything the port has now. */
	for (uint16_t i = 0; i < n; i++)
		rx[i] = s->held[me][i];
	s->n_held[me] = 0;
	want = burst > n ? burst - n : 0;
	/* Room for the other direction's, should this burst be all theirs. */
	if (want > (uint32_t)(SHAPER_BURST_MAX - s->n_held[other]))
		want = (uint32_t)(SHAPER_BURST_MAX - s->n_held[other]);
	if (want == 0)
		return n;
	got = rte_eth_rx_burst(d->rx_port, d->queue, rx + n, (uint16_t)want);
	/* Kept in place: frame i of the burst is read before slot n <= i is written. */
	for (uint16_t i = 0, base = n; i < got; i++) {
		struct rte_mbuf *m = rx[base + i];
		int vid = -1;

		if (tag_in_frame(&m))
			vid = vlan_outer_id(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len);
		if (vid >= 0 && vid == s->vlan_in[SHAPER_DOWN]) {
			/* Classified as on the LAN VLAN, where it goes. */
			vlan_set_outer_id(rte_pktmbuf_mtod(m, uint8_t *), s->vlan_in[SHAPER_UP]);
			if (me == SHAPER_DOWN)
				rx[n++] = m;
			else
				s->held[SHAPER_DOWN][s->n_held[SHAPER_DOWN]++] = m;
		} else if (vid >= 0 && vid == s->vlan_in[SHAPER_UP]) {
			if (me == SHAPER_UP)
				rx[n++] = m;
			else
				s->held[SHAPER_UP][s->n_held[SHAPER_UP]++] = m;
		} else {
			drop_bytes += m->pkt_len;
			drop[n_drop++] = m;
		}
	}
	if (n_drop != 0) {
		/* Received, and dropped by name: the port's first direction counts them. */
		down->stats.rx_packets += n_drop;
		down->stats.rx_bytes += drop_bytes;
		down->stats.dropped[SHAPER_DROP_OTHER_VLAN] += n_drop;
		rte_pktmbuf_free_bulk(drop, n_drop);
	}
	return n;
}

void
dp_stick_retag_up(const struct dp_stick *s, struct sh_pkt **pkts, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		vlan_set_outer_id(pkts[i]->data, s->vlan_in[SHAPER_DOWN]);
}

void
dp_stick_flush(struct dp_stick *s, struct dp_dir *d)
{
	uint16_t n = s->n_held[d->dir];
	uint64_t bytes = 0;

	for (uint16_t i = 0; i < n; i++)
		bytes += s->held[d->dir][i]->pkt_len;
	d->stats.rx_packets += n;
	d->stats.rx_bytes += bytes;
	d->stats.dropped[SHAPER_DROP_SHUTDOWN] += n;
	if (n != 0)
		rte_pktmbuf_free_bulk(s->held[d->dir], n);
	s->n_held[d->dir] = 0;
}
