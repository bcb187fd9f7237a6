/*
 * The daemon's configuration: one JSON file, validated in full before any
 * port is touched. Every error names the JSON path and what is wrong, e.g.
 *   downstream.bandwidth: "280mbps" is not a rate (try "280mbit")
 */
#ifndef SHAPER_CONFIG_H
#define SHAPER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shaper/autorate.h"
#include "shaper/limits.h"
#include "shaper/log.h"
#include "shaper/sched.h"
#include "shaper/share.h"

#define SHAPER_DEV_LEN     256
#define SHAPER_PATH_LEN    108 /* sizeof(sun_path) */
#define SHAPER_MAX_WORKERS 16  /* shards per direction (share.h allows 64) */
#define SHAPER_ERR_LEN     512

/*
 * How frames reach the worker of their shard when there are several:
 * the NIC's RSS hashing the LAN host's address (L3 source on the LAN port,
 * destination on the WAN port), or software steering through rings
 * between the workers. auto takes RSS where both ports offer it.
 */
enum shaper_steering {
	SHAPER_STEER_AUTO = 0,
	SHAPER_STEER_RSS,
	SHAPER_STEER_SOFTWARE,
};

#define SHAPER_EMU_LIMIT_DEFAULT 10240u /* packets the WAN emulator holds at most */

#define SHAPER_METRICS_ADDR_DEFAULT "127.0.0.1"
#define SHAPER_METRICS_PORT_DEFAULT 9464
#define SHAPER_METRICS_ADDR_LEN     46  /* INET6_ADDRSTRLEN */
#define SHAPER_METRICS_SUBS_TOP_MAX 100 /* metrics.subscribers_top: a bound on series */

/* metrics.subscribers_worst: the subscribers with the worst busy RTT that get series */
#define SHAPER_METRICS_SUBS_WORST_DEFAULT 10

#define SHAPER_MAX_CONTROL_SOCKETS 4 /* control.socket plus up to 3 in control.sockets */
#define SHAPER_GROUP_LEN           64

/*
 * Control access levels, as HAProxy's stats socket has them: each includes
 * the ones below it. user reads (version, stats, flows, config.get),
 * operator may also reset counters, admin may also change the configuration.
 */
enum shaper_level {
	SHAPER_LEVEL_USER = 0,
	SHAPER_LEVEL_OPERATOR,
	SHAPER_LEVEL_ADMIN,
	SHAPER_NUM_LEVELS
};

const char *shaper_level_name(enum shaper_level l);

/* One listening control socket (Unix stream sockets only, never a network address). */
struct shaper_control_socket {
	char path[SHAPER_PATH_LEN];
	char group[SHAPER_GROUP_LEN]; /* "" = the daemon's group */
	uint32_t mode;                /* permission bits */
	enum shaper_level level;      /* the most any peer gets on this socket */
};

enum shaper_port_role {
	SHAPER_PORT_WAN = 0,
	SHAPER_PORT_LAN = 1,
	SHAPER_NUM_PORTS
};
/* Upstream = LAN -> WAN (tc-cake "egress"), downstream = WAN -> LAN. */
enum shaper_dir {
	SHAPER_UP = 0,
	SHAPER_DOWN = 1,
	SHAPER_NUM_DIRS
};

/* The port a direction sends on. */
static inline enum shaper_port_role
shaper_dir_output(enum shaper_dir d)
{
	return d == SHAPER_UP ? SHAPER_PORT_WAN : SHAPER_PORT_LAN;
}

struct shaper_port_config {
	char device[SHAPER_DEV_LEN]; /* PCI address, vdev string or port name */
	uint16_t rx_desc;
	uint16_t tx_desc;
};

#define SHAPER_VLAN_MAX 4094 /* 0 and 4095 are reserved ids */

/* The optional WAN emulator after the scheduler (a netem stand-in). */
struct shaper_emulate_config {
	uint64_t delay_ns;
	uint64_t jitter_ns;
	uint32_t loss_ppm; /* parts per million */
	uint64_t seed;
	uint32_t limit; /* packets held at most */
};

/*
 * Autorate (off by default): "bandwidth": {"min": .., "max": .., "start": ..}
 * lets the daemon move the direction's rate within the bounds by the
 * WAN-side RTT of the users' flows (include/shaper/autorate.h).
 */
struct shaper_autorate_config {
	bool enabled;
	uint64_t min_rate, max_rate; /* bytes/s */
	uint64_t start_rate;         /* bytes/s; the direction's rate starts here */
	/* The controller's tuning (min, max, start and after_modem unused here). */
	struct autorate_params tune;
};

/*
 * subscribers: per-subscriber plans under a tree of nodes, read from
 * LibreQoS's ShapedDevices.csv (+ network.json) or from the JSON form
 * (docs/subscribers.md). Off while neither devices nor file is given.
 * Relative paths are resolved against the config file's directory when the
 * file is loaded (shaper_config_load_file).
 */
#define SHAPER_SUBS_PATH_LEN   512
#define SHAPER_SUBS_ACTIVE_DEF 1000u /* CAKEs in each direction's pool */
#define SHAPER_SUBS_QUEUES_DEF 256u  /* flow queues per tin of a subscriber's CAKE */

struct shaper_subscribers_config {
	char devices[SHAPER_SUBS_PATH_LEN]; /* ShapedDevices.csv; "" = none */
	char network[SHAPER_SUBS_PATH_LEN]; /* network.json; "" = a flat network */
	char file[SHAPER_SUBS_PATH_LEN];    /* the JSON form; "" = none */
	uint32_t active;                    /* subscribers with a CAKE at once, per direction */
	uint32_t flow_queues;               /* per tin of each subscriber's CAKE: 16..1024, 2^n */
	bool scale_mins;                    /* accept mins above a node's capacity */
	/* Addresses no subscriber owns: the link's CAKE (false) or a plan each (true). */
	bool unknown_plan;
	uint64_t unknown_rate[SHAPER_NUM_DIRS]; /* bytes/s: the plan's max per direction */
	uint32_t unknown_addresses; /* such addresses shaped at once per worker; 0 = active / 4 */
	/*
	 * Several workers: a top-level node's whole subtree on one worker
	 * (false), or each subscriber on a worker of its own and every node's
	 * capacity shared among the workers that have its subscribers (true).
	 */
	bool shard_by_subscriber;
};

struct shaper_config {
	struct shaper_port_config port[SHAPER_NUM_PORTS];
	/*
	 * ports.single ("on a stick"): one device carries both sides, the WAN
	 * on one VLAN and the LAN on another. Both port[] entries then hold
	 * that device; vlan[r] is the id side r's frames carry (0: two ports).
	 */
	bool single_port;
	uint16_t vlan[SHAPER_NUM_PORTS];
	struct sched_params dir[SHAPER_NUM_DIRS];
	struct shaper_emulate_config emulate[SHAPER_NUM_DIRS];
	struct shaper_autorate_config autorate[SHAPER_NUM_DIRS];
	/* control socket */
	bool control_enabled;
	char control_socket[SHAPER_PATH_LEN];
	char control_group[SHAPER_GROUP_LEN]; /* "" = the daemon's group */
	uint32_t control_mode;                /* permission bits, default 0660 */
	enum shaper_level control_level;      /* the most control.socket grants; admin */
	/* Peers that are neither root, the daemon's user nor in the admin group get this. */
	enum shaper_level control_default_level;
	char control_admin_group[SHAPER_GROUP_LEN]; /* "" = each socket's own group */
	unsigned int n_control_sockets;             /* entries of control.sockets */
	struct shaper_control_socket control_sockets[SHAPER_MAX_CONTROL_SOCKETS - 1];
	/* Prometheus /metrics over HTTP, served by the control thread; off by default */
	bool metrics_enabled;
	char metrics_addr[SHAPER_METRICS_ADDR_LEN]; /* numeric IPv4 or IPv6, no brackets */
	uint16_t metrics_port;
	/* Subscribers given series of their own on /metrics: the top N by bytes in
	 * the last whole minute, and the worst N by their LAN-side p95 RTT over
	 * busy minutes; 0 = none (per-node series only). */
	uint32_t metrics_subscribers_top;
	uint32_t metrics_subscribers_worst;
	/*
	 * lcores: each worker serves both directions of its shard (its rx and
	 * tx queue of each port); one link rate is shared among the shards.
	 */
	unsigned int n_workers;
	unsigned int worker_lcore[SHAPER_MAX_WORKERS]; /* 0 = pick automatically */
	/* data plane */
	uint32_t mbufs[SHAPER_NUM_DIRS]; /* each direction's pool; 0 = auto (its worst case) */
	uint32_t burst;                  /* rx/tx burst, 1..SHAPER_BURST_MAX */
	uint32_t idle_sleep_us;          /* back-off after idle polls; 0 = busy-poll */
	uint32_t rt_priority;            /* workers under SCHED_FIFO at this priority; 0 = off */
	/* passive RTT of TCP flows, on by default (about 9 % of
	 * CAKE's instructions per packet, docs/PERFORMANCE.md); autorate needs it */
	bool passive_rtt;
	/* With several workers: what keeps packets together on one shard. */
	enum share_by shard_by;        /* host (default) or flow */
	enum shaper_steering steering; /* how a frame reaches its shard */
	/* rte_pdump for dpdk-dumpcap (a secondary process: needs hugepages
	 * and EAL's multi-process runtime); off by default */
	bool pdump;
	/* log.level: the least severe lines shaperd prints (shaper/log.h); info */
	enum shaper_log_level log_level;
	/*
	 * fail_open: AF_XDP or af_packet ports in a Linux bridge that forwards whenever
	 * shaperd does not (shaper/failopen.h); off by default
	 */
	bool fail_open;
	uint64_t fail_open_lease_ns;                 /* 100 ms */
	char fail_open_program[SHAPER_PATH_LEN * 2]; /* "" (auto): beside shaperd, or installed */
	struct shaper_subscribers_config subscribers;
};

/* Whether the config names subscriber files. */
static inline bool
shaper_subscribers_enabled(const struct shaper_config *c)
{
	return c->subscribers.devices[0] != '\0' || c->subscribers.file[0] != '\0';
}

extern const char *const shaper_dir_name[SHAPER_NUM_DIRS];
extern const char *const shaper_port_name[SHAPER_NUM_PORTS];

/* The devices shaperd opens: one on a stick (port[SHAPER_PORT_WAN]), else two. */
static inline int
shaper_n_ports(const struct shaper_config *c)
{
	return c->single_port ? 1 : SHAPER_NUM_PORTS;
}

/* How stats, logs and errors name port slot r: "single" on a stick. */
static inline const char *
shaper_port_label(const struct shaper_config *c, int r)
{
	return c->single_port ? "single" : shaper_port_name[r];
}

/* The slot of the device direction d receives on and sends on (one on a stick). */
static inline enum shaper_port_role
shaper_dir_rx_slot(const struct shaper_config *c, enum shaper_dir d)
{
	return c->single_port || d == SHAPER_DOWN ? SHAPER_PORT_WAN : SHAPER_PORT_LAN;
}

static inline enum shaper_port_role
shaper_dir_tx_slot(const struct shaper_config *c, enum shaper_dir d)
{
	return c->single_port ? SHAPER_PORT_WAN : shaper_dir_output(d);
}

void shaper_config_default(struct shaper_config *c);

const char *shaper_shard_by_name(enum share_by b);

/*
 * Load and validate a config file. Returns 0, or -1 with a message in err
 * that starts with the JSON path (or the file name for I/O/syntax errors).
 */
int shaper_config_load_file(const char *path, struct shaper_config *c, char *err, size_t errlen);
int shaper_config_load_string(const char *json, struct shaper_config *c, char *err, size_t errlen);

/*
 * Apply one direction's settings from a JSON object (the same keys as in the
 * file) on top of p. path prefixes error messages. Used by the file loader
 * and by the control socket's "config set". jobj is a json_t *.
 */
int shaper_config_parse_direction(const void *jobj, const char *path, struct sched_params *p,
				  char *err, size_t errlen);
/*
 * The same, and an "emulate" object applied on top of em (config.set on a
 * direction with a WAN emulator); em NULL refuses "emulate" as above.
 */
int shaper_config_parse_direction_live(const void *jobj, const char *path, struct sched_params *p,
				       struct shaper_emulate_config *em, char *err, size_t errlen);

/*
 * StrictModes, as sshd has them: 0 if the file (or directory) and every
 * directory above it, symlinks resolved, is owned by root or the daemon's
 * user and not writable by group or others (a sticky directory may be, as
 * /tmp is); else -1 with the path and why in err. A directory not made yet
 * is judged by its parent.
 */
int shaper_check_file_modes(const char *file, char *err, size_t errlen);
int shaper_check_dir_modes(const char *dir, char *err, size_t errlen);

/*
 * StrictModes over every file a configuration has shaperd read or load:
 * the configuration file at path, the subscriber files c's "subscribers"
 * section names, a program an AF_XDP port's device string gives itself
 * (xdp_prog=) and, with fail_open on, programs[0..n_programs) (the
 * fail-open BPF objects, where shaperd finds them; NULL or "" skipped).
 * 0, or -1 with err naming the file and, for all but the configuration
 * file, the key that names it ("subscribers.devices: PATH is writable by
 * group shaper (mode 0664); ...").
 */
int shaper_check_config_modes(const char *path, const struct shaper_config *c,
			      const char *const *programs, unsigned int n_programs, char *err,
			      size_t errlen);

/* The direction's settings as a JSON object (json_t *, caller decrefs). */
void *shaper_config_direction_to_json(const struct sched_params *p);
/* A WAN emulator's settings, as the "emulate" object of the file. */
void *shaper_config_emulate_to_json(const struct shaper_emulate_config *em);

/* Names of enum values, as tc writes them. */
const char *shaper_diffserv_name(enum sched_diffserv d);
const char *shaper_isolation_name(enum sched_isolation i);
const char *shaper_discipline_name(enum sched_discipline d);

#endif
