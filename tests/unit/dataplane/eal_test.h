/*
 * The EAL start-up every data plane test binary shares: no hugepages, no
 * PCI, no shared config or telemetry, 256 MB, lcore 0 and a file prefix of
 * its own (binaries run one after another must not meet); the runtime
 * directory is removed after (--in-memory would imply --no-shconf, but
 * DPDK 22.11 refuses it with --no-huge). And the ports over rings the
 * tests forward through. Include after cmocka.h.
 */
#ifndef SHAPER_TEST_EAL_TEST_H
#define SHAPER_TEST_EAL_TEST_H

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>

/* Run the group under a started EAL; 1 if EAL does not start. */
static inline int
eal_test_run(const char *name, const struct CMUnitTest *tests, size_t n, CMFixtureFunction setup,
	     CMFixtureFunction teardown)
{
	char prefix[64], rundir[PATH_MAX];
	char *eal_argv[] = {
		(char *)name,     "--no-huge", "--no-pci", "--no-shconf",
		"--no-telemetry", "-m",        "256",      "--log-level",
		"lib.eal:error",  "-l",        "0",        prefix,
	};
	int rc;

	snprintf(prefix, sizeof(prefix), "--file-prefix=%s_%d", name, (int)getpid());
	if (rte_eal_init((int)(sizeof(eal_argv) / sizeof(eal_argv[0])), eal_argv) < 0) {
		fprintf(stderr, "%s: EAL initialisation failed\n", name);
		return 1;
	}
	snprintf(rundir, sizeof(rundir), "%s", rte_eal_get_runtime_dir());
	rc = _cmocka_run_group_tests(name, tests, n, setup, teardown);
	rte_eal_cleanup();
	rmdir(rundir); /* empty without shared config */
	return rc;
}

/*
 * A started port over rings (a binary using it links rte_net_ring): its rx
 * queue reads rx into mbufs of mp, its tx queue writes to tx (rx again for
 * a port that loops back), desc descriptors each.
 */
static inline uint16_t
eal_test_ring_port(const char *name, struct rte_ring *rx, struct rte_ring *tx,
		   struct rte_mempool *mp, uint16_t desc)
{
	struct rte_eth_conf conf;
	int port = rte_eth_from_rings(name, &rx, 1, &tx, 1, (unsigned int)rte_socket_id());

	assert_true(port >= 0);
	memset(&conf, 0, sizeof(conf));
	assert_int_equal(rte_eth_dev_configure((uint16_t)port, 1, 1, &conf), 0);
	assert_int_equal(rte_eth_rx_queue_setup((uint16_t)port, 0, desc, 0, NULL, mp), 0);
	assert_int_equal(rte_eth_tx_queue_setup((uint16_t)port, 0, desc, 0, NULL), 0);
	assert_int_equal(rte_eth_dev_start((uint16_t)port), 0);
	return (uint16_t)port;
}

#define EAL_TEST_RUN(name, tests, setup, teardown)                                                 \
	eal_test_run((name), (tests), sizeof(tests) / sizeof((tests)[0]), (setup), (teardown))

#endif
