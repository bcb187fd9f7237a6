/*
 * Ports and the mbuf pool. Any PMD works: a device is found by name, and
 * if it does not exist yet it is hot-plugged from its devargs string, so a
 * config can say "net_af_packet0,iface=lan0" without EAL --vdev flags.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "shaper/dataplane.h"

#define POOL_CACHE 256

uint32_t
dp_mbuf_truesize(const struct rte_mempool *mp)
{
	return (uint32_t)mp->elt_size + (uint32_t)mp->header_size + (uint32_t)mp->trailer_size;
}

struct rte_mempool *
dp_pool_create(uint32_t n_mbufs, int socket)
{
	/* The private area holds the sh_pkt, so queues need no other memory. */
	uint16_t priv = RTE_ALIGN_CEIL(sizeof(struct sh_pkt), RTE_MBUF_PRIV_ALIGN);

	return rte_pktmbuf_pool_create("shaper_pool", n_mbufs, POOL_CACHE, priv,
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

int
dp_port_open(struct dp_port *port, const struct shaper_port_config *pc, struct rte_mempool *mp,
	     char *err, size_t errlen)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	uint16_t nb_rxd = pc->rx_desc, nb_txd = pc->tx_desc;
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
	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_configure(port->port_id, 1, 1, &conf);
	if (rc != 0) {
		snprintf(err, errlen, "%s: configure failed: %s", port->name, strerror(-rc));
		return rc;
	}
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(port->port_id, &nb_rxd, &nb_txd);
	if (rc != 0) {
		snprintf(err, errlen, "%s: descriptor counts refused: %s", port->name,
			 strerror(-rc));
		return rc;
	}
	rc = rte_eth_rx_queue_setup(port->port_id, 0, nb_rxd, rte_eth_dev_socket_id(port->port_id),
				    NULL, mp);
	if (rc != 0) {
		snprintf(err, errlen, "%s: rx queue setup failed: %s", port->name, strerror(-rc));
		return rc;
	}
	rc = rte_eth_tx_queue_setup(port->port_id, 0, nb_txd, rte_eth_dev_socket_id(port->port_id),
				    NULL);
	if (rc != 0) {
		snprintf(err, errlen, "%s: tx queue setup failed: %s", port->name, strerror(-rc));
		return rc;
	}
	rc = rte_eth_dev_start(port->port_id);
	if (rc != 0) {
		snprintf(err, errlen, "%s: start failed: %s", port->name, strerror(-rc));
		return rc;
	}
	port->started = true;
	/* A bridge forwards every frame, whatever its destination MAC. */
	rc = rte_eth_promiscuous_enable(port->port_id);
	if (rc != 0 && rc != -ENOTSUP)
		fprintf(stderr, "shaperd: %s: cannot enable promiscuous mode: %s\n", port->name,
			strerror(-rc));
	return 0;
}

void
dp_port_close(struct dp_port *port)
{
	if (port->started) {
		rte_eth_dev_stop(port->port_id);
		port->started = false;
	}
	rte_eth_dev_close(port->port_id);
}
