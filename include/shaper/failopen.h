/*
 * Fail-open for AF_XDP and af_packet ports (docs/deployment.md,
 * "Fail-open"): both interfaces sit in a Linux bridge, and shaperd's XDP
 * program (src/dataplane/failopen.bpf.c) hands frames to shaperd, or its tc
 * program (failopen_tc.bpf.c) keeps them from the bridge, only while shaperd
 * holds a lease it renews from a thread of its own, and only while every
 * worker turns. A crash, a kill, a stop, a worker stuck or the whole process
 * stopped (SIGSTOP, a debugger) lets the lease run out or the socket close,
 * and the bridge forwards the frames, unshaped, within one lease.
 */
#ifndef SHAPER_FAILOPEN_H
#define SHAPER_FAILOPEN_H

#include <net/if.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shaper/config.h"

/* The name the XDP program and its lease map carry in the kernel. */
#define DP_FAILOPEN_PROG_NAME "shaper_failopen"
#define DP_FAILOPEN_MAP_NAME  "shaper_lease"

/*
 * The interface an AF_XDP or af_packet device string names
 * ("net_af_xdp0,iface=eth1,..." gives "eth1"). Returns 0, or -1 when device
 * is neither or names no interface.
 */
int dp_failopen_iface(const char *device, char *ifname, size_t len);

/*
 * device with ",xdp_prog=PROGRAM" added (AF_XDP) when it names no program of
 * its own, into out; an af_packet device as it is. Returns 0, or -1 with a
 * message in err (neither kind, too long).
 */
int dp_failopen_devargs(const char *device, const char *program, char *out, size_t len, char *err,
			size_t errlen);

/*
 * Where a program is: the config's path when set, else file
 * (failopen.bpf.o, failopen_tc.bpf.o) beside the running binary (a build
 * tree), else the installed one.
 */
void dp_failopen_program_path(const char *configured, const char *file, char *out, size_t len);

struct bpf_object;

struct dp_failopen_port {
	char ifname[IF_NAMESIZE];
	int ifindex;
	int lease_fd; /* the program's shaper_lease map; -1 until found */
	/* af_packet: failopen_tc.bpf.o on tc's ingress hook, loaded by shaperd */
	bool tc;
	bool tc_attached;
	struct bpf_object *obj;
};

/* What the lease thread did, for the stats. */
struct dp_failopen_counters {
	uint64_t renewals;
	uint64_t lapses;    /* renewals that came after the lease had run out */
	uint64_t lapsed_ns; /* time the bridge forwarded because of them */
	uint64_t withheld;  /* looks at which a worker had not turned: not renewed */
	bool holding;       /* the lease was valid at the last look */
};

struct dp_failopen {
	struct dp_failopen_port port[SHAPER_NUM_PORTS];
	uint64_t lease_ns;
	unsigned int n_workers;
	const uint64_t *beats[SHAPER_MAX_WORKERS]; /* each worker's heartbeat */
	uint64_t last_beat[SHAPER_MAX_WORKERS];    /* at the previous look */
	uint64_t until_ns;                         /* the lease last granted */
	struct dp_failopen_counters c;
	pthread_mutex_t lock; /* c, between the thread and stats readers */
	pthread_t thread;
	bool running;
	volatile bool stop;
};

/*
 * Before the ports start: each port's interface, and any shaper_failopen
 * program a killed shaperd left attached taken off (the driver cannot attach
 * its own over it). Meanwhile the bridge forwards. Returns 0 or -1 with err.
 */
int dp_failopen_prepare(struct dp_failopen *fo, const struct shaper_config *cfg, char *err,
			size_t errlen);

/*
 * af_packet ports: load failopen_tc.bpf.o (program) and put it on each such
 * port's tc ingress hook, passing every frame until the lease is granted.
 * Before the ports start. Returns 0 or -1 with err.
 */
int dp_failopen_attach_tc(struct dp_failopen *fo, const char *program, char *err, size_t errlen);

/*
 * How many rx queues the kernel may put ifname's frames on: its channels
 * (ethtool -l: combined plus rx-only), else the rx-N queues sysfs lists.
 * *combined says the count is of combined channels (what ethtool -L sets
 * with "combined"). Returns the count, or -errno.
 */
int dp_failopen_rx_queues(const char *ifname, bool *combined);

/*
 * AF_XDP with fail-open: the XDP program hands a frame to the socket of
 * the rx queue it came on, and shaperd has sockets on queues start ..
 * start + n - 1 only; a frame on any other queue is passed to the bridge,
 * unshaped, while shaperd runs. 0 when those n cover all if_queues of
 * ifname, else -1 with one line in err naming the interface, its queues,
 * the ones served and the fix. combined as dp_failopen_rx_queues gives it.
 */
int dp_failopen_queues_check(const char *ifname, int if_queues, bool combined, unsigned int start,
			     unsigned int n, char *err, size_t errlen);

/*
 * dp_failopen_queues_check for each AF_XDP port of cfg (after
 * dp_failopen_prepare), with n queues each from its start_queue=. 0 or -1
 * with err naming the port.
 */
int dp_failopen_check_queues(const struct dp_failopen *fo, const struct shaper_config *cfg,
			     unsigned int n, char *err, size_t errlen);

/* Whether ifname is a port of a bridge (fail-open forwards nothing otherwise). */
bool dp_failopen_in_bridge(const char *ifname);

/*
 * After the ports started and the workers run: find each program's lease
 * map and start renewing the lease (lease_ns long, every quarter of it) for
 * as long as every heartbeat in beats moves. Returns 0 or -1 with err.
 */
int dp_failopen_start(struct dp_failopen *fo, const uint64_t *const *beats, unsigned int n,
		      uint64_t lease_ns, char *err, size_t errlen);

/*
 * Hand the line to the bridge now (the lease revoked), before the workers
 * stop: nothing waits for a lease to run out on a clean stop.
 */
void dp_failopen_stop(struct dp_failopen *fo);

void dp_failopen_counters(struct dp_failopen *fo, struct dp_failopen_counters *out);

/*
 * The lease thread's decision at one look, apart from the kernel: whether to
 * renew (every worker turned since the last look), updating the counters.
 * Returns the new lease end, or 0 to let the lease run out.
 */
uint64_t dp_failopen_decide(struct dp_failopen *fo, const uint64_t *beats, uint64_t now_ns);

#endif
