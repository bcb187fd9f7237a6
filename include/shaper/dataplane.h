/*
 * The data plane: ports (any PMD: PCI, vdev, existing name), the mbuf pool
 * whose private area holds each packet's struct sh_pkt, and the worker loop
 * that moves frames LAN->WAN (upstream) and WAN->LAN (downstream) through
 * one scheduler per direction.
 */
#ifndef SHAPER_DATAPLANE_H
#define SHAPER_DATAPLANE_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "shaper/classify.h"
#include "shaper/config.h"
#include "shaper/pkt.h"
#include "shaper/sched.h"

#define DP_TX_PENDING_MAX 512

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

/* Counters of one direction; written only by the worker that owns it. */
struct dp_dir_stats {
	uint64_t rx_pkts, rx_bytes;  /* received on the input port */
	uint64_t tx_pkts, tx_bytes;  /* accepted by the output port */
	uint64_t tx_retries;         /* turns the output port refused frames */
	uint64_t dropped[SHAPER_DROP_MAX];
};

struct dp_dir {
	enum shaper_dir dir;
	uint16_t rx_port, tx_port;
	struct sched *sched;
	struct classify_key key;
	uint16_t n_pending; /* frames the output port refused, sent first next turn */
	struct rte_mbuf *pending[DP_TX_PENDING_MAX];
	struct dp_dir_stats stats;
};

struct dp_port {
	uint16_t port_id;
	char name[RTE_ETH_NAME_MAX_LEN];
	bool started;
};

struct dp_worker {
	unsigned int lcore;
	unsigned int n_dirs;
	struct dp_dir *dirs[SHAPER_NUM_DIRS];
	uint32_t burst;
	uint32_t idle_sleep_us;
};

/* Memory a queued packet pins, charged against the buffer limit. */
uint32_t dp_mbuf_truesize(const struct rte_mempool *mp);

struct rte_mempool *dp_pool_create(uint32_t n_mbufs, int socket);

/*
 * Find or create the port named by device (PCI address, vdev string such as
 * "net_af_packet0,iface=lan0", or an existing port name), configure one rx
 * and one tx queue, promiscuous mode, and start it. Returns 0 or -errno with
 * a message in err.
 */
int dp_port_open(struct dp_port *port, const struct shaper_port_config *pc,
		 struct rte_mempool *mp, char *err, size_t errlen);
void dp_port_close(struct dp_port *port);

/* Ask every worker to stop (signal-safe). */
void dp_request_stop(void);
bool dp_stop_requested(void);

/* The worker loop; arg is a struct dp_worker *. Returns when stop is requested. */
int dp_worker_main(void *arg);

/* Drop every packet still held by a direction (scheduler and tx pending), counted as shutdown. */
void dp_dir_drain(struct dp_dir *d);

/* Nanoseconds since start from the TSC (set up once by dp_clock_init). */
void dp_clock_init(void);
uint64_t dp_now_ns(void);

#endif
