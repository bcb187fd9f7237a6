/*
 * The control plane: newline-delimited JSON over a Unix stream socket.
 *   request:  {"id":1,"cmd":"stats","args":{...}}
 *   reply:    {"id":1,"ok":true,"result":...}
 *          or {"id":1,"ok":false,"error":{"code":"...","message":"..."}}
 * Protocol and server are plain C (jansson, POSIX); what they read and
 * change is reached through struct ctl_backend, which the daemon implements
 * over worker snapshots and mailboxes and the unit tests fake.
 */
#ifndef SHAPER_CONTROL_H
#define SHAPER_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shaper/config.h"
#include "shaper/rtt.h"
#include "shaper/sched.h"

#define CTL_PROTOCOL_VERSION 1
#define CTL_MAX_LINE         (64 * 1024)       /* one request, newline included */
#define CTL_MAX_OUTQ         (4 * 1024 * 1024) /* replies queued for a slow client */
#define CTL_MAX_CLIENTS      256

/*
 * What no client can take from the others (docs/control-protocol.md,
 * "Limits"). Slots: CTL_MAX_CLIENTS in all, of which user-level connections
 * may hold all but CTL_RESERVED_OPERATOR + CTL_RESERVED_ADMIN and
 * operator-level ones all but CTL_RESERVED_ADMIN; with several sockets,
 * each keeps CTL_RESERVED_SOCKET slots that only its own clients take.
 */
#define CTL_RESERVED_ADMIN    32
#define CTL_RESERVED_OPERATOR 32
#define CTL_RESERVED_SOCKET   16
/* Closed: nothing moved either way for this long (and no request of ours waits). */
#define CTL_IDLE_TIMEOUT_S    60
/* Closed: a request begun this long ago and still without its newline. */
#define CTL_REQUEST_TIMEOUT_S 30
/*
 * One ctl_server_poll answers at most CTL_POLL_REQUESTS requests and starts
 * none after CTL_POLL_MS; each client at most CTL_CLIENT_REQUESTS of them,
 * one recv of at most CTL_MAX_LINE bytes, and one command that messages the
 * workers and waits. What is left is served on the next poll, first come.
 */
#define CTL_POLL_REQUESTS     64
#define CTL_POLL_MS           20
#define CTL_CLIENT_REQUESTS   8
#define CTL_POLL_ACCEPTS      16 /* new connections per socket per poll */
/*
 * Commands that message every worker and wait (flows), from connections
 * below operator: CTL_USER_WALKS_PER_S a second on all of them together
 * (a burst of as many), else "busy" with error.retry_ms.
 */
#define CTL_USER_WALKS_PER_S  10

/* Error codes carried in replies (and used as shapectl exit reasons). */
#define CTL_ERRORS(X)                                                                              \
	X(BAD_JSON, "bad_json")                                                                    \
	X(BAD_REQUEST, "bad_request")                                                              \
	X(UNKNOWN_COMMAND, "unknown_command")                                                      \
	X(INVALID_ARGUMENT, "invalid_argument")                                                    \
	X(TOO_LARGE, "too_large")                                                                  \
	X(BUSY, "busy")                                                                            \
	X(PERMISSION_DENIED, "permission_denied")                                                  \
	X(RESTART_REQUIRED, "restart_required")                                                    \
	X(INTERNAL, "internal")

enum ctl_error {
#define CTL_ERROR_ENUM(id, name) CTL_ERR_##id,
	CTL_ERRORS(CTL_ERROR_ENUM)
#undef CTL_ERROR_ENUM
	CTL_ERR_MAX
};

const char *ctl_error_name(enum ctl_error e);

/*
 * A command's first check of its arguments: 0 when every key of args (a
 * jansson object, NULL for none) is one of known (NULL-terminated), else -1
 * with *err CTL_ERR_INVALID_ARGUMENT and msg "args.KEY: unknown argument"
 * (a key too long for msg cut at a character boundary, so msg stays UTF-8).
 */
int ctl_check_args(const void *args, const char *const *known, enum ctl_error *err, char *msg,
		   size_t len);

struct sub_sched;
struct sub_set;

/* Per-direction counters kept by the data plane. */
/*
 * Passive RTT and autorate as one direction shows them. The samples a
 * direction's packets complete are of one part of the path: echoes coming
 * down time the WAN side, echoes going up the LAN side.
 */
struct ctl_rtt {
	bool on;
	uint8_t part;         /* enum rtt_side */
	struct rtt_hist hist; /* since start or the last reset */
	uint64_t flows_evicted;
	uint64_t by_method[RTT_METHODS];      /* this side's samples by source (enum rtt_method) */
	uint64_t host_based, host_collisions; /* the WAN side's remote-host baselines */
	/* The last whole interval (ctl_rtt.interval_ns long). */
	uint64_t interval_ns, iv_samples, iv_min_ns, iv_median_ns, iv_p99_ns;
	/* Autorate of this direction. */
	bool autorate;
	bool ar_leader;      /* this shard's controller decides (alone, or a group's first) */
	uint8_t ar_action;   /* enum autorate_action of the last decision */
	uint8_t ar_why;      /* enum autorate_reason of the last decision */
	uint32_t ar_samples; /* in the last interval */
	uint64_t ar_rate, ar_min, ar_max, ar_delivered, ar_delay_ns, ar_ups, ar_downs;
	uint64_t ar_base, ar_arrived, ar_through, ar_path_ns;
	uint64_t ar_decisions[AR_WHY_N]; /* by reason, since start */
	/* Samples this shard took for the controller since start: RTTs by source, one-way rises. */
	uint64_t ar_inputs[RTT_METHODS], ar_one_way;
};

/* The "rtt" object of a direction's stats (json_t *), NULL when RTT is off. */
void *ctl_rtt_json(const struct ctl_rtt *r);

struct ctl_dir_counters {
	struct ctl_rtt rtt; /* filled when the snapshot is published */
	uint64_t rx_packets, rx_bytes;
	uint64_t tx_packets, tx_bytes;
	uint64_t tx_retries;
	uint64_t rx_foreign;     /* frames received in another pool's mbufs, copied */
	uint64_t turn_max_ns;    /* the serving worker's longest turn since the last reset */
	uint64_t control_max_ns; /* the longest slice of control work in one turn, same */
	/*
	 * Time the direction held frames in its scheduler or tx pending queue,
	 * from the first frame it released while others waited: while it
	 * does, the shaper owes the rate, less the stalls it wrote off
	 * (lag_skipped). Summed over shards, so it can exceed wall time.
	 */
	uint64_t backlogged_ns;
	/*
	 * Bytes handed to the output port in that time. The first frame of a
	 * backlog (one that finds the queue empty and leaves at once, or waits
	 * behind the last frame of the one before) is in tx_bytes, not here,
	 * so this over (backlogged_ns - lag_skipped) is the rate kept while
	 * owed, however seldom the sender keeps a queue.
	 */
	uint64_t backlogged_tx_bytes;
	uint64_t dropped[SHAPER_DROP_MAX];
	uint64_t emulator_qlen; /* packets held by the WAN emulator */
	uint64_t time_ns;       /* the worker's clock when these were taken */
	/*
	 * The rest of the accounting identity, taken by the worker in the same
	 * publish as the counters above (one seqlock snapshot), so that
	 *   rx_packets + held_at_reset ==
	 *     tx_packets + sum(dropped) + sched_qlen + swap_qlen + emulator_qlen + tx_pending
	 * holds in every snapshot.
	 */
	uint64_t sched_qlen;    /* packets queued in the scheduler */
	uint64_t swap_qlen;     /* waiting to move into a new scheduler (discipline swap) */
	uint64_t tx_pending;    /* released, refused by the output port, sent first next turn */
	uint64_t held_at_reset; /* packets queued anywhere when the counters were last reset */
	/*
	 * Software steering between shards: frames this shard received and
	 * handed to another, and frames it took from the others. Their
	 * difference is a term of the identity ("queued.steering": in the
	 * rings, for a whole direction; negative for a shard that takes more
	 * than it hands over).
	 */
	uint64_t steered_out, steered_in;
	uint64_t share_rate; /* bytes/s this shard shapes at now (its share of the link); 0 = alone
			      */
	/* The direction's mbuf pool at the same moment (not part of the identity). */
	uint64_t pool_in_use, pool_size;
};

struct ctl_port_counters {
	char name[64];
	char role[16]; /* what stats lists it under ("wan", "lan", "single"); "" = by its slot */
	uint64_t rx_packets, tx_packets, rx_bytes, tx_bytes;
	uint64_t rx_missed, rx_errors, tx_errors, rx_nombuf;
	bool link_up;
	uint32_t link_speed;   /* Mbit/s, 0 while down */
	uint64_t link_changes; /* up/down transitions since start */
	uint64_t reconnects;   /* restarts of a net_memif client while down that started it */
};

/* One queued flow, as shown by the "flows" command. */
struct ctl_flow {
	char src[48], dst[48]; /* addresses as text */
	uint16_t sport, dport;
	uint8_t proto;
	uint8_t tin;
	uint32_t packets;
	uint64_t backlog_bytes;
	uint64_t sojourn_ns;             /* age of the head packet */
	uint64_t rtt_wan_ns, rtt_lan_ns; /* last passive RTT samples, 0 = none */
	uint16_t shard;                  /* the shard (worker) that queues it */
};

/* One flow's facts as the control socket shows them (addresses as text). */
void ctl_flow_from_fact(const struct sched_flow_fact *f, struct ctl_flow *out);

/*
 * A flow as a client below the operator level sees it: each address cut to
 * its network (IPv4 /24, IPv6 /32, written "192.0.2.0/24"), the ports 0 (the
 * reply shows them as null). Who talks to whom stays with operators; the
 * queue figures stay for everyone. IPv6 /32, not /48: ISPs assign a /48 or
 * a /56 to one customer, so a /48 names one; a /32 is an ISP's allocation.
 */
#define CTL_FLOW_MASK_V4 24
#define CTL_FLOW_MASK_V6 32
void ctl_flow_mask(struct ctl_flow *f);

/*
 * The "flows" answer from a walk's facts: sorts facts[0..n) largest
 * backlog first (ties in walk order) and formats the first max into out;
 * returns how many.
 */
unsigned int ctl_flows_top(struct sched_flow_fact *facts, unsigned int n, struct ctl_flow *out,
			   unsigned int max);

/*
 * The configuration file behind config.reload and config.save: the path
 * shaperd was started with and the configuration it started on (what the
 * keys only a restart changes are compared with).
 */
struct ctl_config_file {
	const char *path;
	const struct shaper_config *started;
	bool strict_modes; /* the file must keep passing StrictModes (shaperd(8)) */
	/* The fail-open BPF objects loaded at start: a reload checks them as a start would. */
	const char *const *programs;
	unsigned int n_programs;
};

/* The fail-open lease (docs/deployment.md, "Fail-open"), for stats. */
struct ctl_fail_open_counters {
	bool holding;             /* shaperd held the line at the lease thread's last look */
	uint64_t renewals;        /* leases granted */
	uint64_t takeovers;       /* grants after the bridge had the line (the first one too) */
	uint64_t lapses;          /* times the lease ran out while shaperd ran */
	uint64_t lapses_late;     /* ... because the lease thread did not look in time */
	uint64_t lapses_withheld; /* ... because a worker had not turned */
	uint64_t lapsed_ns;       /* time the bridge forwarded because of them */
	uint64_t look_gap_max_ns; /* the longest time between two looks of the lease thread */
	uint64_t withheld;        /* looks at which a worker had not turned */
	uint64_t drain_waits;     /* looks at which a worker still held frames the bridge sent */
};

struct ctl_backend {
	void *opaque;
	/* NULL: config.reload and config.save are refused (no file to read). */
	const struct ctl_config_file *config_file;
	/* A consistent snapshot of one direction; 0 or -errno. */
	int (*dir_snapshot)(void *opaque, enum shaper_dir d, struct ctl_dir_counters *c,
			    struct sched_stats *st, struct sched_params *params);
	int (*port_counters)(void *opaque, enum shaper_port_role r, struct ctl_port_counters *pc);
	/* Bytes allocated from the DPDK heap now (leak checks); NULL if not known. */
	int (*heap_bytes)(void *opaque, uint64_t *bytes);
	/* What the fail-open lease thread did; NULL, or -ENOENT, without fail-open. */
	int (*fail_open)(void *opaque, struct ctl_fail_open_counters *c);
	/* Apply params to a direction between bursts; 0, or -errno with err. */
	int (*apply)(void *opaque, enum shaper_dir d, const struct sched_params *p, char *err,
		     size_t errlen);
	int (*reset_stats)(void *opaque);
	/* Up to max flows of a direction with the largest backlog; count or -errno. */
	int (*flows)(void *opaque, enum shaper_dir d, struct ctl_flow *out, unsigned int max);
	/*
	 * A direction shaped by several shards (workers): dir_snapshot merges
	 * them (sums; tin tables merged), shard_snapshot shows one (optional:
	 * NULL or n_shards <= 1 means one shard).
	 */
	unsigned int n_shards;
	int (*shard_snapshot)(void *opaque, enum shaper_dir d, unsigned int shard,
			      struct ctl_dir_counters *c, struct sched_stats *st,
			      struct sched_params *params);
	/*
	 * Per-subscriber shaping (src/control/subscribers.c); NULL, or subs
	 * returning NULL, when it is off. subs: the scheduler and the set it
	 * shapes (read-only, valid while the daemon runs).
	 */
	const struct sub_sched *(*subs)(void *opaque, const struct sub_set **set);
	/*
	 * With several shards: shard i's scheduler (i < n_shards; 0 is what
	 * subs returns). A subscriber lives on one shard: its counters are the
	 * sum over all. NULL: one shard.
	 */
	const struct sub_sched *(*subs_shard)(void *opaque, unsigned int shard);
	/*
	 * Shape set (taken, freed either way; the slots of the running one)
	 * from now on: dp_subs_change. NULL when subscribers cannot change.
	 */
	int (*subs_apply)(void *opaque, struct sub_set *set, bool addresses, const uint32_t *reset,
			  uint32_t nreset, char *err, size_t errlen);
	/*
	 * The WAN emulator of direction d: its settings now (-ENOENT when the
	 * direction has none), and a change of its delay, jitter and loss on
	 * every shard (0, or -errno with err). NULL: no emulator can change.
	 */
	int (*emulate_get)(void *opaque, enum shaper_dir d, struct shaper_emulate_config *em);
	int (*emulate_set)(void *opaque, enum shaper_dir d, const struct shaper_emulate_config *em,
			   char *err, size_t errlen);
};

/*
 * subscribers.list and subscribers.get: the reply's result (a jansson
 * object), or NULL with *err and msg.
 */
void *ctl_subscribers_list(const struct ctl_backend *be, const void *args, enum ctl_error *err,
			   char *msg, size_t len);
void *ctl_subscribers_get(const struct ctl_backend *be, const void *args, enum ctl_error *err,
			  char *msg, size_t len);
/*
 * subscribers.metrics, what /metrics shows of subscribers: every node's
 * bytes sent, drops by reason, ECN marks and allocated rate per direction
 * and its RTT (the sums over the subscribers below it; the link's also
 * counts addresses no subscriber owns), and the top args.top subscribers
 * (default metrics.subscribers_top of the started configuration) by bytes
 * in the last whole minute with the worst args.worst (default
 * metrics.subscribers_worst) by LAN-side p95 RTT over busy minutes, each
 * at most SHAPER_METRICS_SUBS_TOP_MAX, by id and node only. Decided from
 * the data plane's figures alone: no state between calls. Empty lists
 * when subscribers are not shaped.
 */
void *ctl_subscribers_metrics(const struct ctl_backend *be, const void *args, enum ctl_error *err,
			      char *msg, size_t len);
/*
 * subscribers.set (add a subscriber, or change one's plan, addresses, node
 * or name) and subscribers.del, applied while the worker runs: the new set
 * is built and checked here, the worker swaps it in between bursts. Bad
 * input changes nothing and the error names the argument.
 */
void *ctl_subscribers_set(const struct ctl_backend *be, const void *args, enum ctl_error *err,
			  char *msg, size_t len);
void *ctl_subscribers_del(const struct ctl_backend *be, const void *args, enum ctl_error *err,
			  char *msg, size_t len);
/*
 * nodes.set (add a node, or change one's parent, capacity or type; a node
 * moved takes its subtree and subscribers along) and nodes.del (a node with
 * nothing under it), applied as subscribers.set is. Bad input, a parent
 * under the node itself, mins that no longer fit, or a node still holding
 * subscribers or nodes change nothing, and the error names the argument.
 */
void *ctl_nodes_set(const struct ctl_backend *be, const void *args, enum ctl_error *err, char *msg,
		    size_t len);
void *ctl_nodes_del(const struct ctl_backend *be, const void *args, enum ctl_error *err, char *msg,
		    size_t len);

/*
 * A reload with subscribers shaped: the subscriber files the configuration
 * at path names, as a diff of the running subscribers (sub_set_diff),
 * prepared (*out; NULL when subscribers are not shaped) and checked before
 * anything is applied, then applied (a change of the running scheduler;
 * nothing is posted when nothing changed). prepare returns 0, -ENOTSUP when
 * the node tree changed (a restart applies that), or -errno; err names the
 * file and line or node. summary: {"added", "changed", "removed",
 * "unchanged", "nodes_changed"}.
 */
struct ctl_subs_reload;
int ctl_subscribers_reload_prepare(const struct ctl_backend *be, const char *path,
				   struct ctl_subs_reload **out, char *err, size_t errlen);
int ctl_subscribers_reload_apply(const struct ctl_backend *be, struct ctl_subs_reload *r, char *err,
				 size_t errlen);
void *ctl_subscribers_reload_summary(const struct ctl_subs_reload *r);
/* One line for the log: "2 added, 1 changed, ...". */
void ctl_subscribers_reload_describe(const struct ctl_subs_reload *r, char *buf, size_t len);
void ctl_subscribers_reload_free(struct ctl_subs_reload *r);

/* Fold one shard's counters into a direction's (sums; maxima for the longest turns). */
void ctl_dir_counters_merge(struct ctl_dir_counters *into, const struct ctl_dir_counters *from);

/*
 * Handle one request line (without its newline). Always returns a reply
 * line (malloc'd, newline-terminated, caller frees), never NULL unless out
 * of memory. ctl_handle_request runs it at the admin level.
 */
char *ctl_handle_request(const struct ctl_backend *be, const char *line, size_t len);

/*
 * The same for a client at the given access level: a command that needs a
 * higher one is answered "permission_denied" naming both, and *refused (if
 * not NULL) is set to the command's name (a static string) so the caller
 * can log it; it is left alone otherwise.
 */
char *ctl_handle_request_as(const struct ctl_backend *be, enum shaper_level level, const char *line,
			    size_t len, const char **refused);

/*
 * The same with what the server's budgets need. In: the level, and whether
 * a command that messages the workers and waits may run now (if not, it is
 * answered "busy" with error.retry_ms = retry_ms). Out: refused as above,
 * walked when the command run was such a one.
 */
struct ctl_request_ctx {
	enum shaper_level level;
	bool walks_allowed;
	unsigned int retry_ms;
	const char *refused;
	bool walked;
};
char *ctl_handle_request_ctx(const struct ctl_backend *be, const char *line, size_t len,
			     struct ctl_request_ctx *ctx);

/* The lowest level that may run cmd; -1 if cmd is not a command. */
int ctl_command_level(const char *cmd, enum shaper_level *need);

/* What decides a control client's access level. */
struct ctl_access {
	enum shaper_level socket_level;  /* the most the socket grants anyone */
	enum shaper_level default_level; /* for peers that are not admins */
	uid_t daemon_uid;                /* the daemon's own user is an admin, as root is */
	bool has_admin_gid;
	gid_t admin_gid; /* members (primary or supplementary group) are admins */
};

#define CTL_PEER_GROUPS 64 /* supplementary groups looked at; more are ignored */

/* A client as the kernel vouches for it (SO_PEERCRED, SO_PEERGROUPS). */
struct ctl_peer {
	bool known; /* false: the kernel told us nothing; the default level applies */
	pid_t pid;
	uid_t uid;
	gid_t gid;
	unsigned int n_groups;
	gid_t groups[CTL_PEER_GROUPS];
};

/*
 * A peer's level: admin for root, the daemon's user and the admin group,
 * the default level for everyone else, and never above the socket's level.
 */
enum shaper_level ctl_access_level(const struct ctl_access *a, const struct ctl_peer *p);

/* A reply line for an error that has no request to go with it (id null). */
char *ctl_error_reply(enum ctl_error code, const char *message);

/* Build the "stats" result for one direction (json_t *), shared with the exit report. */
void *ctl_dir_stats_json(const struct ctl_dir_counters *c, const struct sched_stats *st,
			 const struct sched_params *p);
void *ctl_port_stats_json(const struct ctl_port_counters *pc);

/*
 * Put the output port's tx_errors into a direction's stats object: frames the
 * direction handed over (counted in tx_packets) that the port then failed to
 * send. A no-op when the port's counters are not in ports (json objects).
 */
void ctl_dir_port_errors(void *dirs, const void *ports);

/* The socket server. */
struct ctl_server;

struct ctl_server_params {
	const char *path;
	const char *group; /* "" or NULL: keep the process's group */
	uint32_t mode;
	enum shaper_level level;         /* the most this socket grants */
	enum shaper_level default_level; /* for peers that are neither root nor admins */
	const char *admin_group;         /* "" or NULL: the socket's group */
};

/*
 * Create the listening socket. Refuses to replace a path that exists and
 * is not a stale socket (one nobody listens on), and a socket directory
 * that is missing (its parent is not) is created 0755. NULL with err on
 * failure.
 */
struct ctl_server *ctl_server_open(const struct ctl_server_params *p, const struct ctl_backend *be,
				   char *err, size_t errlen);

/* Listen on one more socket (up to SHAPER_MAX_CONTROL_SOCKETS in all); 0 or -1 with err. */
int ctl_server_listen(struct ctl_server *srv, const struct ctl_server_params *p, char *err,
		      size_t errlen);

/* Serve for up to timeout_ms; returns 0, or -errno on a fatal error. */
int ctl_server_poll(struct ctl_server *srv, int timeout_ms);

unsigned int ctl_server_clients(const struct ctl_server *srv);

/* The server's epoll fd: poll it for POLLIN to wait beside other fds, then ctl_server_poll(0). */
int ctl_server_fd(const struct ctl_server *srv);

/* Close every client and the sockets, and unlink their paths. */
void ctl_server_close(struct ctl_server *srv);

#endif
