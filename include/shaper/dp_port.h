/*
 * Ports and the mbuf pools (src/dataplane/port.c): any PMD (PCI, vdev,
 * an existing port name), opened in two steps so that the pools can be
 * sized and placed from what the drivers settled on; the mbuf private area
 * holds each packet's struct sh_pkt.
 */
#ifndef SHAPER_DP_PORT_H
#define SHAPER_DP_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "shaper/config.h"
#include "shaper/control.h"
#include "shaper/pkt.h"
#include "shaper/share.h"

#define DP_POOL_CACHE     256 /* per-lcore mempool cache */
#define DP_POOL_MIN       2047u
#define DP_POOL_MAX       (1u << 24)
/* The mbuf private area holds the packet's struct sh_pkt. */
#define DP_MBUF_PRIV_SIZE RTE_ALIGN_CEIL(sizeof(struct sh_pkt), RTE_MBUF_PRIV_ALIGN)

static inline struct sh_pkt *
dp_mbuf_pkt(struct rte_mbuf *m)
{
	return (struct sh_pkt *)rte_mbuf_to_priv(m);
}

static inline struct rte_mbuf *
dp_pkt_mbuf(struct sh_pkt *p)
{
	return (struct rte_mbuf *)((char *)p - sizeof(struct rte_mbuf));
}

struct dp_port {
	uint16_t port_id;
	char name[RTE_ETH_NAME_MAX_LEN];
	bool started;
	int socket;                /* NUMA node of the device (its pools and rings go there) */
	uint16_t nb_rxd, nb_txd;   /* descriptors per queue, as the driver adjusted them */
	uint64_t offloads;         /* rx and tx offloads asked of the device */
	bool link_up;              /* as last seen by dp_ports_wait_link or dp_port_watch_link */
	uint32_t link_speed;       /* Mbit/s */
	uint64_t link_changes;     /* up/down transitions seen since start */
	bool reconnects_when_down; /* a net_memif client: restarted while its link is down */
	uint64_t reconnects;       /* restarts that started the port again */
	uint16_t n_queues;         /* rx and tx queues, one pair per worker */
	bool rss_sharded;          /* RSS puts every frame on its shard's queue */
	uint64_t rss_hf;           /* the RSS hash types asked of the device */
	uint16_t reta_size;
	uint8_t rss_key_len;
	uint8_t rss_key[64];
};

/* The queues a port opens: one rx and one tx per worker. */
struct dp_port_queues {
	uint16_t n;
	enum share_by by; /* what RSS should keep together, when it can */
	bool lan_side;    /* the LAN host is the frame's source on this port */
};

/* Memory a queued packet pins, charged against the buffer limit. */
uint32_t dp_mbuf_truesize(const struct rte_mempool *mp);

/* dp_mbuf_truesize of the pools dp_pool_create will make (no EAL needed). */
uint32_t dp_mbuf_truesize_planned(void);

struct rte_mempool *dp_pool_create(const char *name, uint32_t n_mbufs, int socket);

/*
 * Start-up, first half: find or create the port named by device (PCI
 * address, vdev string such as "net_af_packet0,iface=lan0", or an existing
 * port name) and configure q->n rx and tx queues (RSS over them when there
 * are several: see port->rss_sharded) for frames of up to max_frame bytes.
 * The descriptor counts the driver will really use (nb_rxd, nb_txd: it may
 * round up) and the port's NUMA socket are known after this, so the pools
 * can be sized and placed. Returns 0 or -errno with a message in err; a
 * port that failed after its device was configured is closed again.
 */
int dp_port_configure(struct dp_port *port, const struct shaper_port_config *pc, uint32_t max_frame,
		      const struct dp_port_queues *q, char *err, size_t errlen);

/*
 * Second half: rx queues receiving into mp, tx queues, start, promiscuous
 * mode. A net_memif client whose server is not there yet is left stopped
 * and paused (0 returned, port->started false): the control thread starts
 * it once the server answers (dp_port_reconnect).
 */
int dp_port_start(struct dp_port *port, struct rte_mempool *mp, char *err, size_t errlen);

/*
 * Wait up to timeout_ms for the links of ports[0..n) to come up; returns
 * how many are still down (forwarding starts anyway: a bridge's peer may
 * come later).
 */
int dp_ports_wait_link(struct dp_port *ports, unsigned int n, unsigned int timeout_ms);

/*
 * Read the port's link state (control thread, a few times a second) and,
 * when it went down or up since the last look, count it and log it naming
 * the port's role. Returns true on a change.
 */
bool dp_port_watch_link(struct dp_port *port, const char *role);

/* How often a port that reconnects (reconnects_when_down) is restarted while down. */
#define DP_PORT_RECONNECT_MS 1000u

/*
 * Stop the port (if started) and start it again, which makes a net_memif
 * client connect to its server anew. The caller paused the port and saw
 * every worker quiesce (dp_port_set_paused, dp_workers_quiesced), and
 * unpauses it if port->started: after 0, or an error of the stop itself
 * (an error of the start leaves it stopped). Returns 0 or the driver's
 * -errno.
 */
int dp_port_reconnect(struct dp_port *port);

/* Whether the port's driver keeps rx mbufs past close (net_af_xdp's fill ring). */
bool dp_port_keeps_rx_mbufs(const struct dp_port *port);
void dp_port_close(struct dp_port *port);

/* The port's ethdev counters; 0 or -errno. */
int dp_port_counters(const struct dp_port *port, struct ctl_port_counters *pc);

#endif
