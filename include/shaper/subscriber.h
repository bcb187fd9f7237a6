/*
 * Subscribers (circuits) and the tree of nodes (sites, access points) above
 * them, as an ISP's edge shapes them: each subscriber has a plan per
 * direction (a ceiling, and optionally a committed rate it keeps while
 * backlogged), owns IPv4/IPv6 addresses and prefixes (optionally only on
 * one VLAN), and hangs under a node; nodes have a capacity per direction
 * and hang under other nodes or the link itself.
 *
 * Loaded from LibreQoS's ShapedDevices.csv + network.json as they are, or
 * from the JSON form described in docs/subscribers.md. Plain C, no DPDK:
 * this is the control plane's picture, checked once at load. Every error
 * names the file, the line or JSON path, and what is wrong.
 *
 * Rates here are in bit/s (plans are sold in Mbit/s; 0.1 Mbit/s is exact).
 */
#ifndef SHAPER_SUBSCRIBER_H
#define SHAPER_SUBSCRIBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SUB_ID_LEN    64 /* circuit ids and node names, NUL included */
#define SUB_NONE      UINT32_MAX
#define SUB_ROOT      0u         /* node 0 is the link itself */
#define SUB_MAX_SUBS  (1u << 20) /* a sanity bound, far above one box */
#define SUB_MAX_NODES (1u << 16)
#define SUB_MAX_DEPTH 32u

enum sub_dir {
	SUB_DOWN = 0, /* WAN -> LAN, towards the subscriber */
	SUB_UP = 1,
	SUB_DIRS = 2,
};

/* Per-direction queueing a circuit asks for (LibreQoS's "sqm" column). */
enum sub_sqm {
	SUB_SQM_DEFAULT = 0, /* the configured default (cake) */
	SUB_SQM_CAKE,
	SUB_SQM_FQ_CODEL,
	SUB_SQM_NONE, /* shaped, no AQM */
};

/* What happens to a LAN-side address no subscriber owns. */
enum sub_unknown {
	SUB_UNKNOWN_LINK = 0, /* shares the link's own CAKE, outside every plan */
	SUB_UNKNOWN_PLAN,     /* each unknown address gets unknown_plan, under the root */
};

/*
 * The options after a side's discipline in sqm ("cake diffserv4"): none, a
 * diffserv keyword alone (1 + its enum sched_diffserv), or anything else.
 */
#define SUB_SQM_OPT_NONE  0u
#define SUB_SQM_OPT_OTHER 0xffu

struct sub_plan {
	uint64_t min; /* bit/s kept while backlogged; 0 = none */
	uint64_t max; /* bit/s ceiling; > 0 */
};

/* One address or prefix of a subscriber. v4 addresses use addr[0..3]. */
struct sub_prefix {
	uint8_t addr[16]; /* network order, host bits zero */
	uint8_t family;   /* 4 or 6 */
	uint8_t len;      /* prefix length: 0..32 or 0..128 */
	uint16_t vlan;    /* 1..4094: only on this VLAN; 0 = on any */
	uint32_t sub;     /* owning subscriber */
};

struct sub_node {
	char name[SUB_ID_LEN];
	char type[16];               /* "Site", "AP", ... (informational) */
	char id[SUB_ID_LEN];         /* network.json's "id" ("" if none): Parent Node ID's */
	uint32_t parent;             /* SUB_NONE for the root */
	uint32_t depth;              /* root 0 */
	uint64_t capacity[SUB_DIRS]; /* bit/s; 0 on the root = unlimited */
	uint64_t min_sum[SUB_DIRS];  /* mins of every subscriber below (validation) */
	uint32_t nsubs;              /* subscribers directly under it */
};

struct sub_subscriber {
	char id[SUB_ID_LEN];   /* circuit id, unique */
	char name[SUB_ID_LEN]; /* label (often a street address), cut to fit */
	uint32_t node;         /* parent node index (SUB_ROOT = under the link) */
	struct sub_plan plan[SUB_DIRS];
	uint8_t sqm[SUB_DIRS];     /* enum sub_sqm */
	uint8_t sqm_opt[SUB_DIRS]; /* SUB_SQM_OPT_* or 1 + a diffserv mode */
	uint32_t origin;           /* CSV line or index in "subscribers", for messages */
	uint32_t nprefixes;
};

struct sub_set {
	/* Nodes in an order where a parent comes before its children; [0] is the link. */
	struct sub_node *nodes;
	uint32_t nnodes, nodes_cap;
	struct sub_subscriber *subs;
	uint32_t nsubs, subs_cap;
	struct sub_prefix *prefixes;
	uint32_t nprefixes, prefixes_cap;

	enum sub_unknown unknown;
	struct sub_plan unknown_plan[SUB_DIRS];

	/*
	 * Mins under a node that add up to more than its capacity: refused
	 * (false, the default), or accepted (true) with the mins at that node
	 * scaled down together while all are backlogged, as an HTB tree does
	 * with such a file. mins_scaled counts the nodes (and directions)
	 * concerned, for a warning. Set before loading.
	 */
	bool scale_mins;
	uint32_t mins_scaled;

	/* Where the subscribers came from, for messages. */
	char subs_file[256];
	char nodes_file[256]; /* network.json or the JSON form; "" if none */
	bool subs_csv;        /* origin is a CSV line (else an index in "subscribers") */
	/*
	 * What the loader read but does not apply, for the start-up log and
	 * --check-config (columns it does not use; per-circuit sqm shaperd
	 * cannot honour, which sub_config_load adds); "" if nothing.
	 */
	char not_applied[640];
};

void sub_set_init(struct sub_set *set);
void sub_set_free(struct sub_set *set);

/*
 * Load LibreQoS's two files as they are. network_json may be NULL (a flat
 * network: every circuit under the link). The link's capacity (the root
 * node) is the caller's: set nodes[SUB_ROOT].capacity from the daemon's
 * bandwidth, then call sub_set_validate. Returns 0, or -EINVAL/-ENOMEM/
 * -errno of the file with a message in err naming the file, the line or
 * JSON path and the fault. set must be fresh (sub_set_init).
 */
int sub_load_libreqos(struct sub_set *set, const char *devices_csv, const char *network_json,
		      char *err, size_t errlen);

/* The same from the JSON form (docs/subscribers.md); it may set the link and unknown plan. */
int sub_load_json(struct sub_set *set, const char *path, char *err, size_t errlen);

/* The JSON form from a string (tests, the control socket); name is used in messages. */
int sub_load_json_text(struct sub_set *set, const char *text, const char *name, char *err,
		       size_t errlen);

/*
 * Check what only the whole picture shows: the mins of all subscribers
 * under a node (and the link) fit its capacity (unless scale_mins), no two prefixes overlap on
 * the same VLAN, the unknown plan is sane. The loaders call it; call it
 * again after changing the root's capacity. 0 or -EINVAL with err.
 */
int sub_set_validate(struct sub_set *set, char *err, size_t errlen);

/*
 * A new zeroed node, subscriber or prefix at the end of the set's arrays
 * (its index in *idx), for building a set in code; pointers into the
 * arrays move. 0, -ENOMEM, or -E2BIG past the sanity bounds. A node's
 * parent must come before it; call sub_set_validate when done.
 */
int sub_set_add_node(struct sub_set *set, uint32_t *idx);
int sub_set_add_sub(struct sub_set *set, uint32_t *idx);
int sub_set_add_prefix(struct sub_set *set, uint32_t *idx);

/*
 * A running daemon keeps spare subscriber slots (indices that never move)
 * for subscribers added while it runs: a slot with an empty id owns no
 * address. sub_slot_clear makes s such a slot.
 */
void sub_slot_clear(struct sub_subscriber *s);
static inline bool
sub_slot_used(const struct sub_subscriber *s)
{
	return s->id[0] != '\0';
}

/*
 * At least need more spare slots at the end of set, and a quarter of its
 * slots at the least (so a run of additions grows it a few times, not at
 * each). 0, -ENOMEM or -E2BIG past SUB_MAX_SUBS. *added gets the count.
 */
int sub_set_grow_slots(struct sub_set *set, uint32_t need, uint32_t *added);

/* dst (not initialised) becomes a deep copy of src. 0 or -ENOMEM (dst then empty). */
int sub_set_copy(struct sub_set *dst, const struct sub_set *src);

/* ------------------------------------------------------------------------ */
/* Changing the node tree (live changes: nodes.set/del, a reload's diff)      */

/*
 * map[i] for each node i of from: the node of the same name in to, or
 * SUB_NONE (the root maps to the root). 0 or -ENOMEM.
 */
int sub_node_map(const struct sub_set *from, const struct sub_set *to, uint32_t *map);

/*
 * Put the nodes back in an order where every parent comes before its
 * children (nothing moves if they already are), renumbering the
 * subscribers' nodes, and recompute depths. 0, -EINVAL with err when a
 * node would be its own ancestor or nodes nest deeper than SUB_MAX_DEPTH,
 * or -ENOMEM. Node indices are not kept: match nodes by name.
 */
int sub_set_order_nodes(struct sub_set *set, char *err, size_t errlen);

struct sub_node_change {
	const char *name;            /* the node's, unique; not "link" */
	const char *parent;          /* NULL: keep (a new node: the link); "" or "link": the link */
	uint64_t capacity[SUB_DIRS]; /* bit/s; 0: keep (a new node needs both) */
	const char *type;            /* NULL: keep */
};

/*
 * Add node c->name, or change its parent, capacity or type. A node moved
 * takes its subtree and subscribers with it. Refused (-EINVAL with err
 * naming the argument: "parent: ...") when the parent does not exist or
 * lies under the node. *added says which. Call sub_set_validate after
 * (the mins under the new parent must fit). Node indices change.
 */
int sub_set_node_put(struct sub_set *set, const struct sub_node_change *c, bool *added, char *err,
		     size_t errlen);

/*
 * Remove node name. Only a node with no subscriber and no node under it:
 * else -EBUSY with err counting them (move or delete them first). Slots
 * of deleted subscribers still draining there move up to its parent.
 * Node indices change.
 */
int sub_set_node_del(struct sub_set *set, const char *name, char *err, size_t errlen);

/* Index of the node called name, or SUB_NONE. */
uint32_t sub_node_find(const struct sub_set *set, const char *name);
/* Index of the subscriber with circuit id, or SUB_NONE (linear: control plane only). */
uint32_t sub_find(const struct sub_set *set, const char *id);

/* A node's path for messages: "Site_1/AP_7" (the root is "link"). */
void sub_node_path(const struct sub_set *set, uint32_t node, char *buf, size_t len);

/* Parse "100.64.0.1", "100.64.0.0/29", "2001:db8::/56" (host bits must be zero). */
int sub_prefix_parse(const char *s, struct sub_prefix *out, char *err, size_t errlen);
/* Format a prefix ("100.64.0.0/29", "vlan 100 10.0.0.1/32"). */
void sub_prefix_format(const struct sub_prefix *p, char *buf, size_t len);

#endif
