/*
 * The /shaper/... telemetry commands, asked over DPDK's own telemetry
 * socket (so they run on the telemetry thread, as with dpdk-telemetry.py),
 * against the fake control backend. Covers the shutdown race: once the
 * daemon begins to free what the backend reads, no request may reach it,
 * and one already in flight must finish first.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_eal.h>

#include "../control/fake_backend.h"
#include "shaper/dataplane.h"

static struct fake fake;
static struct ctl_backend be;
static char sock_path[PATH_MAX];

/* A snapshot that can be held inside the backend, to have a request in flight. */
static int snap_calls, snap_hold, snap_inside, snap_done;

static int
slow_dir_snapshot(void *opaque, enum shaper_dir d, struct ctl_dir_counters *c,
		  struct sched_stats *st, struct sched_params *params)
{
	int rc;

	__atomic_add_fetch(&snap_calls, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&snap_inside, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&snap_hold, __ATOMIC_SEQ_CST))
		usleep(100);
	rc = fake_dir_snapshot(opaque, d, c, st, params);
	__atomic_store_n(&snap_done, 1, __ATOMIC_SEQ_CST);
	return rc;
}

/* One telemetry request; the reply (JSON text) in out. */
static void
tel_request(const char *cmd, char *out, size_t len)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	ssize_t n;

	assert_true(fd >= 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock_path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	n = read(fd, out, len - 1); /* the greeting: version, pid, max_output_len */
	assert_true(n > 0);
	assert_int_equal(write(fd, cmd, strlen(cmd)), (ssize_t)strlen(cmd));
	n = read(fd, out, len - 1);
	assert_true(n > 0);
	out[n] = '\0';
	close(fd);
}

struct client {
	pthread_t th;
	char reply[65536];
};

static void *
client_main(void *arg)
{
	struct client *c = arg;

	tel_request("/shaper/stats,upstream", c->reply, sizeof(c->reply));
	return NULL;
}

static void *
shutdown_main(void *arg)
{
	int *snap_done_at_return = arg;

	dp_telemetry_shutdown();
	*snap_done_at_return = __atomic_load_n(&snap_done, __ATOMIC_SEQ_CST);
	return NULL;
}

static int
setup(void **state)
{
	(void)state;
	fake_init(&fake);
	fake_backend(&fake, &be);
	be.dir_snapshot = slow_dir_snapshot;
	snap_calls = snap_hold = snap_inside = snap_done = 0;
	dp_telemetry_register(&be);
	return 0;
}

static void
test_stats_served(void **state)
{
	static char reply[65536];

	(void)state;
	tel_request("/shaper/stats,upstream", reply, sizeof(reply));
	assert_true(snap_calls > 0);
	assert_non_null(strstr(reply, "\"/shaper/stats\""));
	assert_non_null(strstr(reply, "rx_packets\":1234")); /* the fake's upstream counter */
	assert_null(strstr(reply, "\"error\""));
}

/* After shutdown began, a request is answered without reaching the backend. */
static void
test_refused_after_shutdown(void **state)
{
	static char reply[65536];

	(void)state;
	dp_telemetry_shutdown();
	tel_request("/shaper/stats,upstream", reply, sizeof(reply));
	assert_int_equal(snap_calls, 0);
	assert_non_null(strstr(reply, "shutting down"));
	tel_request("/shaper/config", reply, sizeof(reply));
	assert_int_equal(snap_calls, 0);
}

/* Shutdown waits for a request already inside the backend. */
static void
test_shutdown_waits_for_request_in_flight(void **state)
{
	static struct client c;
	pthread_t sd;
	int done_at_return = -1;

	(void)state;
	snap_hold = 1;
	assert_int_equal(pthread_create(&c.th, NULL, client_main, &c), 0);
	while (!__atomic_load_n(&snap_inside, __ATOMIC_SEQ_CST))
		usleep(100);
	assert_int_equal(pthread_create(&sd, NULL, shutdown_main, &done_at_return), 0);
	usleep(5000); /* shutdown is waiting for the request: let it try to return */
	__atomic_store_n(&snap_hold, 0, __ATOMIC_SEQ_CST);
	assert_int_equal(pthread_join(sd, NULL), 0);
	assert_int_equal(done_at_return, 1);
	assert_int_equal(pthread_join(c.th, NULL), 0);
	assert_non_null(strstr(c.reply, "rx_packets\":1234"));
}

static char rundir[PATH_MAX];

/* The telemetry socket is unlinked by an exit handler EAL installs: remove its directory after. */
static void __attribute__((destructor)) remove_rundir(void)
{
	if (rundir[0] != '\0')
		rmdir(rundir);
}

int
main(void)
{
	/* --in-memory would imply --no-shconf, but DPDK 22.11 refuses it with --no-huge. */
	char prefix[64];
	char *eal_argv[] = {
		"test_telemetry", "--no-huge",     "--no-pci", "--no-shconf", "-m",   "256",
		"--log-level",    "lib.eal:error", "-l",       "0",           prefix,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_stats_served, setup),
		cmocka_unit_test_setup(test_refused_after_shutdown, setup),
		cmocka_unit_test_setup(test_shutdown_waits_for_request_in_flight, setup),
	};
	int rc;

	snprintf(prefix, sizeof(prefix), "--file-prefix=test_telemetry_%d", (int)getpid());
	if (rte_eal_init((int)RTE_DIM(eal_argv), eal_argv) < 0) {
		fprintf(stderr, "test_telemetry: EAL initialisation failed\n");
		return 1;
	}
	snprintf(rundir, sizeof(rundir), "%s", rte_eal_get_runtime_dir());
	snprintf(sock_path, sizeof(sock_path), "%s/dpdk_telemetry.v2", rundir);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rte_eal_cleanup();
	return rc;
}
