/*
 * Ports and the mbuf pool. Any PMD works: a device is found by name, and
 * if it does not exist yet it is hot-plugged from its devargs string, so a
 * config can say "net_af_packet0,iface=lan0" without EAL --vdev flags.
 */
#include <errno.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "shaper/dataplane.h"
#include "shaper/log.h"

uint32_t
dp_mbuf_truesize(const struct rte_mempool *mp)
{
	return (uint32_t)mp->elt_size + (uint32_t)mp->header_size + (uint32_t)mp->trailer_size;
}

struct rte_mempool *
dp_pool_create(const char *name, uint32_t n_mbufs, int socket)
{
	/* The private area holds the sh_pkt, so queues need no other memory. */
	return rte_pktmbuf_pool_create(name, n_mbufs, DP_POOL_CACHE, DP_MBUF_PRIV_SIZE,
				       RTE_MBUF_DEFAULT_BUF_SIZE, socket);
}

static int
find_port(const char *device, uint16_t *port_id, char *err, size_t errlen)
{
	char name[RTE_DEV_NAME_MAX_LEN];
	const char *comma = strchr(device, ',');
	size_t n = comma != NULL ? (size_t)(comma - device) : strlen(device);
	int rc;

	if (rte_eth_dev_get_port_by_name(device, port_id) == 0)
		return 0;
	if (n >= sizeof(name)) {
		snprintf(err, errlen, "device name \"%s\" is too long", device);
		return -EINVAL;
	}
	memcpy(name, device, n);
	name[n] = '\0';
	if (rte_eth_dev_get_port_by_name(name, port_id) == 0)
		return 0;
	/* Not there yet: hot-plug it (vdev, or a PCI device EAL did not probe). */
	rc = rte_dev_probe(device);
	if (rc < 0) {
		snprintf(err, errlen, "cannot attach device \"%s\": %s", device, strerror(-rc));
		return rc;
	}
	if (rte_eth_dev_get_port_by_name(name, port_id) == 0)
		return 0;
	snprintf(err, errlen, "device \"%s\" attached but no ethernet port named \"%s\" appeared",
		 device, name);
	return -ENODEV;
}

/*
 * A net_memif client (role=client, or DPDK's older role=slave; server is
 * the default) connects to its server only when the port starts, and after
 * the server left it stays down (DPDK 22.11's driver): the control thread
 * stops and starts it again until it connects (dp_port_reconnect).
 */
static bool
is_memif_client(const struct rte_eth_dev_info *info)
{
	const struct rte_devargs *da;
	const char *s;

	if (info->driver_name == NULL || strcmp(info->driver_name, "net_memif") != 0 ||
	    info->device == NULL)
		return false;
	da = rte_dev_devargs(info->device);
	if (da == NULL || da->drv_str == NULL)
		return false;
	for (s = da->drv_str; *s != '\0'; s += strcspn(s, ",")) {
		s += *s == ',';
		if (strncmp(s, "role=client", 11) == 0 && (s[11] == ',' || s[11] == '\0'))
			return true;
		if (strncmp(s, "role=slave", 10) == 0 && (s[10] == ',' || s[10] == '\0'))
			return true;
	}
	return false;
}

/*
 * What the device must do for frames of up to max_frame bytes (FCS not
 * counted) received into mp: refuse what it cannot, ask for what it must.
 */
static int
port_conf(const struct dp_port *port, const struct rte_eth_dev_info *info, uint32_t max_frame,
	  struct rte_eth_conf *conf, char *err, size_t errlen)
{
	/* The data room of the pools dp_pool_create makes. */
	uint32_t room = RTE_MBUF_DEFAULT_BUF_SIZE - RTE_PKTMBUF_HEADROOM;

	memset(conf, 0, sizeof(*conf));
	if (max_frame + RTE_ETHER_CRC_LEN > info->max_rx_pktlen) {
		snprintf(err, errlen,
			 "%s: the device receives frames of up to %u bytes, but mtu asks for %u "
			 "(lower upstream.mtu / downstream.mtu)",
			 port->name, info->max_rx_pktlen, max_frame + RTE_ETHER_CRC_LEN);
		return -EINVAL;
	}
	if (max_frame > RTE_ETHER_MAX_LEN - RTE_ETHER_CRC_LEN) {
		uint32_t mtu = max_frame - RTE_ETHER_HDR_LEN;

		conf->rxmode.mtu = mtu < info->max_mtu ? mtu : info->max_mtu;
	}
	if (max_frame > room) {
		/* A frame spans several mbufs: the length contract covers chains. */
		if (!(info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER)) {
			snprintf(err, errlen,
				 "%s: frames of %u bytes do not fit one mbuf (%u bytes) and the "
				 "device cannot scatter them (lower upstream.mtu / downstream.mtu)",
				 port->name, max_frame, room);
			return -EINVAL;
		}
		conf->rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
	}
	if (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		conf->txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	/*
	 * A tx queue carries one direction, whose mbufs all come from its own
	 * pool (foreign ones are copied on rx) with one reference each: the
	 * driver may free them in bulk.
	 */
	if (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)
		conf->txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
	return 0;
}

/*
 * A symmetric Toeplitz key (0x6d5a repeated): a flow hashes alike both
 * ways, and with the same key on both ports the LAN host's address hashes
 * alike whether it is the source (LAN port) or the destination (WAN port).
 */
static void
symmetric_key(uint8_t *key, size_t len)
{
	for (size_t i = 0; i < len; i++)
		key[i] = i % 2 == 0 ? 0x6d : 0x5a;
}

/*
 * RSS over the port's n queues. Sharded RSS (each frame lands on its
 * shard's queue) when the device can hash what the shard key needs: the
 * LAN host's address alone (L3 source on the LAN port, destination on the
 * WAN port), or for flow shards the 5-tuple with the symmetric key. Any
 * other RSS it offers still spreads the receive work; software steering
 * then puts frames on their shard.
 */
static void
port_rss(struct dp_port *port, const struct rte_eth_dev_info *info, const struct dp_port_queues *q,
	 struct rte_eth_conf *conf)
{
	uint64_t offl = info->flow_type_rss_offloads, ip = offl & RTE_ETH_RSS_IP, hf;
	uint64_t only = q->lan_side ? RTE_ETH_RSS_L3_SRC_ONLY : RTE_ETH_RSS_L3_DST_ONLY;

	port->rss_sharded = false;
	if (q->n < 2 || ip == 0)
		return;
	if (q->by == SHARE_BY_HOST && (offl & only) != 0) {
		hf = ip | only;
		port->rss_sharded = true;
	} else {
		hf = ip | (offl & (RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP));
		port->rss_sharded = q->by == SHARE_BY_FLOW;
	}
	port->rss_key_len = info->hash_key_size != 0 && info->hash_key_size <= sizeof(port->rss_key)
					    ? info->hash_key_size
					    : 40;
	symmetric_key(port->rss_key, port->rss_key_len);
	conf->rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
	conf->rx_adv_conf.rss_conf.rss_key = port->rss_key;
	conf->rx_adv_conf.rss_conf.rss_key_len = port->rss_key_len;
	conf->rx_adv_conf.rss_conf.rss_hf = hf;
	port->rss_hf = hf;
	port->reta_size = info->reta_size;
}

/* Queue i of n for hash bucket i mod n on both ports, so a host's queue is its shard. */
static int
port_reta(const struct dp_port *port, uint16_t n)
{
	struct rte_eth_rss_reta_entry64 reta[RTE_ETH_RSS_RETA_SIZE_512 / RTE_ETH_RETA_GROUP_SIZE];

	if (port->reta_size == 0 || port->reta_size > RTE_ETH_RSS_RETA_SIZE_512)
		return -ENOTSUP;
	memset(reta, 0, sizeof(reta));
	for (uint16_t i = 0; i < port->reta_size; i++) {
		reta[i / RTE_ETH_RETA_GROUP_SIZE].mask |= 1ull << (i % RTE_ETH_RETA_GROUP_SIZE);
		reta[i / RTE_ETH_RETA_GROUP_SIZE].reta[i % RTE_ETH_RETA_GROUP_SIZE] = i % n;
	}
	return rte_eth_dev_rss_reta_update(port->port_id, reta, port->reta_size);
}

/* Undo a port a failed start-up opened: stop it if started, then close it. */
static void
port_abandon(struct dp_port *port)
{
	if (port->started) {
		rte_eth_dev_stop(port->port_id);
		port->started = false;
	}
	rte_eth_dev_close(port->port_id);
}

int
dp_port_configure(struct dp_port *port, const struct shaper_port_config *pc, uint32_t max_frame,
		  const struct dp_port_queues *q, char *err, size_t errlen)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	int rc;

	memset(port, 0, sizeof(*port));
	rc = find_port(pc->device, &port->port_id, err, errlen);
	if (rc != 0)
		return rc;
	rte_eth_dev_get_name_by_port(port->port_id, port->name);
	rc = rte_eth_dev_info_get(port->port_id, &info);
	if (rc != 0) {
		snprintf(err, errlen, "%s: cannot read device info: %s", port->name, strerror(-rc));
		return rc;
	}
	port->reconnects_when_down = is_memif_client(&info);
	rc = port_conf(port, &info, max_frame, &conf, err, errlen);
	if (rc != 0)
		return rc;
	if (info.max_rx_queues < q->n || info.max_tx_queues < q->n) {
		snprintf(err, errlen,
			 "%s: lcores.workers asks for %u rx and tx queues, the device has %u and "
			 "%u (net_af_packet: add qpairs=%u to the device string; net_memif: the "
			 "peer must offer %u queue pairs)",
			 port->name, q->n, info.max_rx_queues, info.max_tx_queues, q->n, q->n);
		return -EINVAL;
	}
	port_rss(port, &info, q, &conf);
	port->offloads = conf.rxmode.offloads | conf.txmode.offloads;
	rc = rte_eth_dev_configure(port->port_id, q->n, q->n, &conf);
	if (rc != 0) {
		snprintf(err, errlen, "%s: configure failed: %s", port->name, strerror(-rc));
		port_abandon(port);
		return rc;
	}
	if (port->rss_sharded && port_reta(port, q->n) != 0)
		port->rss_sharded = false; /* the default table: software steering decides */
	port->n_queues = q->n;
	/* The driver may round the counts up: the mbuf budget needs the real ones. */
	port->nb_rxd = pc->rx_desc;
	port->nb_txd = pc->tx_desc;
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(port->port_id, &port->nb_rxd, &port->nb_txd);
	if (rc != 0) {
		snprintf(err, errlen, "%s: descriptor counts refused: %s", port->name,
			 strerror(-rc));
		port_abandon(port);
		return rc;
	}
	port->socket = rte_eth_dev_socket_id(port->port_id);
	if (port->socket < 0)
		port->socket = (int)rte_socket_id(); /* a vdev: no node of its own */
	return 0;
}

int
dp_port_start(struct dp_port *port, struct rte_mempool *mp, char *err, size_t errlen)
{
	int rc;

	for (uint16_t i = 0; i < port->n_queues; i++) {
		rc = rte_eth_rx_queue_setup(port->port_id, i, port->nb_rxd,
					    (unsigned int)port->socket, NULL, mp);
		if (rc != 0) {
			snprintf(err, errlen, "%s: rx queue %u setup failed: %s", port->name, i,
				 strerror(-rc));
			port_abandon(port);
			return rc;
		}
		rc = rte_eth_tx_queue_setup(port->port_id, i, port->nb_txd,
					    (unsigned int)port->socket, NULL);
		if (rc != 0) {
			snprintf(err, errlen, "%s: tx queue %u setup failed: %s", port->name, i,
				 strerror(-rc));
			port_abandon(port);
			return rc;
		}
	}
	rc = rte_eth_dev_start(port->port_id);
	if (rc != 0 && port->reconnects_when_down) {
		/* No server yet: the port waits, stopped, until one answers. */
		shaper_log_notice("%s: no memif server answers yet; trying again every %u ms",
				  port->name, DP_PORT_RECONNECT_MS);
		dp_port_set_paused(port->port_id, true);
		return 0;
	}
	if (rc != 0) {
		snprintf(err, errlen, "%s: start failed: %s", port->name, strerror(-rc));
		port_abandon(port);
		return rc;
	}
	port->started = true;
	/* A bridge forwards every frame, whatever its destination MAC. */
	rc = rte_eth_promiscuous_enable(port->port_id);
	if (rc != 0 && rc != -ENOTSUP)
		shaper_log_warning("%s: cannot enable promiscuous mode: %s", port->name,
				   strerror(-rc));
	return 0;
}

/* Mbit/s, 0 when the device does not say (net_virtio reports UINT32_MAX for that). */
static uint32_t
link_speed_known(const struct rte_eth_link *link)
{
	return link->link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : link->link_speed;
}

int
dp_ports_wait_link(struct dp_port *ports, unsigned int n, unsigned int timeout_ms)
{
	unsigned int waited = 0, up = 0;

	for (;;) {
		up = 0;
		for (unsigned int i = 0; i < n; i++) {
			struct rte_eth_link link;

			memset(&link, 0, sizeof(link));
			if (rte_eth_link_get_nowait(ports[i].port_id, &link) != 0 ||
			    link.link_status == RTE_ETH_LINK_UP)
				up++; /* a PMD without link state counts as up */
			ports[i].link_up = link.link_status == RTE_ETH_LINK_UP;
			ports[i].link_speed = link_speed_known(&link);
		}
		if (up == n || waited >= timeout_ms)
			break;
		rte_delay_us_sleep(10000);
		waited += 10;
	}
	return (int)(n - up);
}

/*
 * Whether the kernel interface a port is bound to (af_packet, af_xdp) has
 * carrier: those PMDs report their link up from start to stop whatever the
 * interface does. 1 running, 0 not, -1 no such interface or no answer.
 */
static int
kernel_if_running(uint16_t port_id)
{
	struct rte_eth_dev_info info;
	struct ifreq ifr;
	int fd, rc = -1;

	if (rte_eth_dev_info_get(port_id, &info) != 0 || info.if_index == 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	if (if_indextoname(info.if_index, ifr.ifr_name) == NULL)
		return -1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0)
		rc = (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING);
	close(fd);
	return rc;
}

bool
dp_port_watch_link(struct dp_port *port, const char *role)
{
	struct rte_eth_link link;
	bool up;

	memset(&link, 0, sizeof(link));
	if (rte_eth_link_get_nowait(port->port_id, &link) != 0)
		return false; /* no link state: nothing to watch */
	up = link.link_status == RTE_ETH_LINK_UP && kernel_if_running(port->port_id) != 0;
	port->link_speed = up ? link_speed_known(&link) : 0;
	if (up == port->link_up)
		return false;
	port->link_up = up;
	port->link_changes++;
	if (up && port->link_speed == 0)
		shaper_log_ratelimited(SHAPER_LOG_NOTICE, "%s port %s: link up, speed not reported",
				       role, port->name);
	else if (up)
		shaper_log_ratelimited(
				SHAPER_LOG_NOTICE, "%s port %s: link up, %u Mbit/s %s-duplex", role,
				port->name, link.link_speed,
				link.link_duplex == RTE_ETH_LINK_FULL_DUPLEX ? "full" : "half");
	else
		shaper_log_ratelimited(SHAPER_LOG_NOTICE, "%s port %s: link down", role,
				       port->name);
	fflush(stdout);
	return true;
}

int
dp_port_reconnect(struct dp_port *port)
{
	int rc;

	if (port->started) {
		rc = rte_eth_dev_stop(port->port_id);
		if (rc != 0)
			return rc;
		port->started = false;
	}
	rc = rte_eth_dev_start(port->port_id);
	if (rc != 0)
		return rc;
	port->started = true;
	port->reconnects++;
	return 0;
}

bool
dp_port_keeps_rx_mbufs(const struct dp_port *port)
{
	struct rte_eth_dev_info info;

	return rte_eth_dev_info_get(port->port_id, &info) == 0 && info.driver_name != NULL &&
	       strcmp(info.driver_name, "net_af_xdp") == 0;
}

void
dp_port_close(struct dp_port *port)
{
	/*
	 * Let the driver reap what it has sent: some (af_xdp) free a sent mbuf
	 * only when a later tx call finds its completion.
	 */
	for (int i = 0; port->started && i < 10; i++) {
		for (uint16_t qi = 0; qi < port->n_queues; qi++) {
			rte_eth_tx_done_cleanup(port->port_id, qi, 0);
			rte_eth_tx_burst(port->port_id, qi, NULL, 0);
		}
		rte_delay_us_sleep(1000);
	}
	if (port->started) {
		rte_eth_dev_stop(port->port_id);
		port->started = false;
	}
	rte_eth_dev_close(port->port_id);
}
