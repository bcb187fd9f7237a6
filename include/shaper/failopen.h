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
	uint64_t lapses;          /* times the lease ran out while shaperd ran (the two below) */
	uint64_t lapses_late;     /* ... because the thread did not look in time: the process
				     was stopped, or the thread kept off its CPU */
	uint64_t lapses_withheld; /* ... because a worker had not turned for a lease */
	uint64_t lapsed_ns;       /* time the bridge forwarded because of them */
	uint64_t look_gap_max_ns; /* the longest time between two of the thread's looks */
	uint64_t withheld;        /* looks at which a worker had not turned: not renewed */
	uint64_t takeovers;       /* grants after the bridge had the line (the first one too) */
	uint64_t drain_waits;     /* looks that found a worker's rx queues not yet emptied of
				     what the bridge forwarded: not granted */
	bool holding;             /* the lease was valid at the last look */
};

/*
 * The workers take the line as lost this long before the kernel's program
 * does: the two clocks are read apart, and a frame both forward is a
 * duplicate at the far end, where one neither forwards is only a loss.
 */
#define DP_FAILOPEN_MARGIN_NS 500000u

/*
 * A worker's word that its queues are empty counts for this long: what
 * arrives between its last read without the line and the grant, the bridge
 * forwarded too, and the worker sends it once it sees the lease.
 */
#define DP_FAILOPEN_DRAIN_FRESH_NS 1000000u

struct dp_failopen {
	struct dp_failopen_port port[SHAPER_NUM_PORTS];
	uint64_t lease_ns;
	unsigned int rt_priority; /* the workers' (dataplane.rt_priority) */
	unsigned int n_workers;
	const uint64_t *beats[SHAPER_MAX_WORKERS];   /* each worker's heartbeat */
	uint64_t last_beat[SHAPER_MAX_WORKERS];      /* at the previous look */
	const uint64_t *drained[SHAPER_MAX_WORKERS]; /* each worker's drained_ns */
	uint64_t until_ns;                           /* the lease last granted */
	uint64_t last_look_ns;                       /* the previous look, 0 before the first */
	bool withheld_since_grant; /* a look since until_ns was granted did not renew */
	bool lapse_noted;          /* the lapse of until_ns is counted */
	/*
	 * For the workers (struct dp_worker's line_until): the lease's end on
	 * dp_now_ns()'s clock, less DP_FAILOPEN_MARGIN_NS; 0 = not held. Set
	 * from line_next after the kernel's map has the lease, and to 0 before
	 * the map loses it, so the workers never send a frame the bridge sent.
	 */
	uint64_t line_until;
	uint64_t line_next;
	struct dp_failopen_counters c;
	/*
	 * c, between the thread and stats readers; priority-inheriting: a
	 * reader kept off its CPU while holding it must not hold up the
	 * real-time lease thread.
	 */
	pthread_mutex_t lock;
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
 * After the ports started and the workers run (each worker's line_until
 * pointing at fo->line_until, so they drop what the bridge forwards): find
 * each program's lease map and start renewing the lease (lease_ns long,
 * every quarter of it) for as long as every heartbeat in beats moves. The
 * line is taken, at start and after every lapse, only once each worker's
 * drained (its drained_ns) says its rx queues are empty of what came while
 * the bridge had it. The thread runs under SCHED_FIFO, one above the
 * workers' rt_priority (1 when they have none), so that the lease lapses
 * when the workers stop turning and not when other work keeps the thread
 * itself from its CPU; a kernel that refuses it is logged. Returns 0 or -1
 * with err.
 */
int dp_failopen_start(struct dp_failopen *fo, const uint64_t *const *beats,
		      const uint64_t *const *drained, unsigned int n, uint64_t lease_ns,
		      unsigned int rt_priority, char *err, size_t errlen);

/* The SCHED_FIFO priority of the lease thread for workers at rt_priority (0 = none). */
unsigned int dp_failopen_thread_priority(unsigned int rt_priority);

/*
 * Hand the line to the bridge now (the lease revoked), before the workers
 * stop: nothing waits for a lease to run out on a clean stop.
 */
void dp_failopen_stop(struct dp_failopen *fo);

void dp_failopen_counters(struct dp_failopen *fo, struct dp_failopen_counters *out);

/* What one look found, for the thread's log. */
struct dp_failopen_look {
	uint64_t gap_ns;  /* since the previous look */
	bool lapsed;      /* the lease was found run out at this look, for the first time */
	bool late;        /* ... and no look had withheld it: the thread looked too late */
	bool took;        /* this look took the line from the bridge */
	uint64_t dark_ns; /* ... after the lease had been out this long (0: the first) */
};

/*
 * The lease thread's decision at one look, apart from the kernel: whether to
 * renew (every worker turned since the last look and, if the workers had
 * lost the line, each emptied its rx queues since, and within
 * DP_FAILOPEN_DRAIN_FRESH_NS: drained, their drained_ns), updating the
 * counters and line_next. A lease found run out is counted as a lapse once,
 * at the first look after it, and told apart by its cause: late (no look
 * since the grant withheld it, so none came in time) or withheld. now_ns is
 * CLOCK_MONOTONIC's (the kernel's), now_dp dp_now_ns()'s; look (may be NULL)
 * says what happened. Returns the new lease end, or 0 to let the lease run
 * out.
 */
uint64_t dp_failopen_decide(struct dp_failopen *fo, const uint64_t *beats, const uint64_t *drained,
			    uint64_t now_ns, uint64_t now_dp, struct dp_failopen_look *look);

#endif
