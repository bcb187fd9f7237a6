/*
 * The daemon's sections of the configuration file (ports, control, metrics,
 * lcores, dataplane), its defaults and the loader; a direction's keys are
 * in config.c. Every error names the JSON path. Nothing here knows DPDK.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <jansson.h>

#include "shaper/config.h"
#include "shaper/config_keys.h"
#include "shaper/limits.h"
#include "shaper/units.h"

#include "config_json.h"

void
shaper_config_default(struct shaper_config *c)
{
	memset(c, 0, sizeof(*c));
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		sched_params_default(&c->dir[d], SCHED_DISC_CAKE);
		c->dir[d].upstream = d == SHAPER_UP;
		c->dir[d].seed ^= (uint64_t)d << 32;
	}
	for (int i = 0; i < SHAPER_NUM_PORTS; i++) {
		c->port[i].rx_desc = 1024;
		c->port[i].tx_desc = 1024;
	}
	c->control_enabled = true;
	snprintf(c->control_socket, sizeof(c->control_socket), "%s", SHAPER_DEFAULT_SOCKET);
	c->control_mode = 0660;
	c->control_level = SHAPER_LEVEL_ADMIN;
	c->control_default_level = SHAPER_LEVEL_USER;
	snprintf(c->metrics_addr, sizeof(c->metrics_addr), "%s", SHAPER_METRICS_ADDR_DEFAULT);
	c->metrics_port = SHAPER_METRICS_PORT_DEFAULT;
	c->metrics_subscribers_worst = SHAPER_METRICS_SUBS_WORST_DEFAULT;
	c->n_workers = 1;
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		c->mbufs[d] = 0; /* auto: each direction's pool sized to its worst case */
		c->emulate[d].limit = SHAPER_EMU_LIMIT_DEFAULT;
	}
	c->burst = 32;
	c->log_level = SHAPER_LOG_LEVEL_DEFAULT;
	c->fail_open_lease_ns = 100000000ull; /* 100 ms */
	c->idle_sleep_us = 0;
	c->passive_rtt = true;
	c->subscribers.active = SHAPER_SUBS_ACTIVE_DEF;
	c->subscribers.flow_queues = SHAPER_SUBS_QUEUES_DEF;
}

/* One pool size: "auto" (0) or an integer. */
static int
parse_pool_size(const json_t *x, const char *path, uint32_t *out, char *err, size_t errlen)
{
	long long n;

	if (json_is_string(x) && strcmp(json_string_value(x), "auto") == 0) {
		*out = 0;
		return 0;
	}
	if (!json_is_integer(x)) {
		errf(err, errlen, path, "expected \"auto\" or an integer 1024..16777216");
		return -1;
	}
	if (get_int(x, path, 1024, 1 << 24, &n, err, errlen) != 0)
		return -1;
	*out = (uint32_t)n;
	return 0;
}

/* dataplane.mbufs: one size for both directions' pools, or {"upstream": .., "downstream": ..}. */
static int
parse_mbufs(const json_t *x, const char *path, uint32_t mbufs[SHAPER_NUM_DIRS], char *err,
	    size_t errlen)
{
	const char *key;
	json_t *v;
	char sub[160];

	if (!json_is_object(x)) {
		if (parse_pool_size(x, path, &mbufs[0], err, errlen) != 0)
			return -1;
		mbufs[1] = mbufs[0];
		return 0;
	}
	json_object_foreach ((json_t *)x, key, v) {
		int d = strcmp(key, "upstream") == 0     ? SHAPER_UP
			: strcmp(key, "downstream") == 0 ? SHAPER_DOWN
							 : -1;

		join_path(sub, sizeof(sub), path, key);
		if (d < 0 || !shaper_config_key_known("dataplane.mbufs", key))
			return unknown_key("dataplane.mbufs", sub, "key", err, errlen);
		if (parse_pool_size(v, sub, &mbufs[d], err, errlen) != 0)
			return -1;
	}
	return 0;
}

static int
parse_port(const json_t *v, const char *path, struct shaper_port_config *pc, char *err,
	   size_t errlen)
{
	const char *key;
	json_t *x;
	char sub[160];
	long long n;

	/* A bare string is the device. */
	if (json_is_string(v))
		return get_string(v, path, pc->device, sizeof(pc->device), err, errlen);
	if (!json_is_object(v)) {
		errf(err, errlen, path, "expected a device string or an object, got %s",
		     json_type_name(v));
		return -1;
	}
	json_object_foreach ((json_t *)v, key, x) {
		join_path(sub, sizeof(sub), path, key);
		REFUSE_UNLISTED("port", key, sub);
		if (strcmp(key, "device") == 0) {
			if (get_string(x, sub, pc->device, sizeof(pc->device), err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "rx_descriptors") == 0 ||
			   strcmp(key, "tx_descriptors") == 0) {
			if (get_int(x, sub, 64, 16384, &n, err, errlen) != 0)
				return -1;
			if (key[0] == 'r')
				pc->rx_desc = (uint16_t)n;
			else
				pc->tx_desc = (uint16_t)n;
		} else {
			return unknown_key("port", sub, "key", err, errlen);
		}
	}
	if (pc->device[0] == '\0') {
		errf(err, errlen, path,
		     "missing \"device\" (a PCI address, vdev string or port "
		     "name)");
		return -1;
	}
	return 0;
}

/* A VLAN id of ports.single: 1..4094. */
static int
get_vlan(const json_t *x, const char *path, uint16_t *out, char *err, size_t errlen)
{
	long long n;

	if (!json_is_integer(x)) {
		errf(err, errlen, path, "expected a VLAN id 1..%d, got %s", SHAPER_VLAN_MAX,
		     json_type_name(x));
		return -1;
	}
	if (get_int(x, path, 1, SHAPER_VLAN_MAX, &n, err, errlen) != 0)
		return -1;
	*out = (uint16_t)n;
	return 0;
}

/*
 * ports: "wan" and "lan", two devices; or "single", one device on a stick,
 * with the VLAN ids of its two sides ("wan_vlan", "lan_vlan"). What a stick
 * cannot do beside other sections is checked after the whole file
 * (check_single_port).
 */
static int
parse_ports(const json_t *v, struct shaper_config *c, char *err, size_t errlen)
{
	struct shaper_port_config one = c->port[SHAPER_PORT_WAN]; /* the defaults */
	bool given[SHAPER_NUM_PORTS] = { false, false }, single = false;
	const char *pk;
	json_t *pv;

	if (expect_object(v, "ports", err, errlen) != 0)
		return -1;
	json_object_foreach ((json_t *)v, pk, pv) {
		char sub[64];

		join_path(sub, sizeof(sub), "ports", pk);
		if (!shaper_config_key_known("ports", pk)) {
			errf(err, errlen, sub,
			     "unknown port (known: wan, lan, single, wan_vlan, lan_vlan)");
			return -1;
		}
		if (strcmp(pk, "wan") == 0 || strcmp(pk, "lan") == 0) {
			int r = pk[0] == 'w' ? SHAPER_PORT_WAN : SHAPER_PORT_LAN;

			if (parse_port(pv, sub, &c->port[r], err, errlen) != 0)
				return -1;
			given[r] = true;
		} else if (strcmp(pk, "single") == 0) {
			if (parse_port(pv, sub, &one, err, errlen) != 0)
				return -1;
			single = true;
		} else {
			int r = pk[0] == 'w' ? SHAPER_PORT_WAN : SHAPER_PORT_LAN;

			if (get_vlan(pv, sub, &c->vlan[r], err, errlen) != 0)
				return -1;
		}
	}
	if (single && (given[SHAPER_PORT_WAN] || given[SHAPER_PORT_LAN])) {
		errf(err, errlen, "ports.single",
		     "one port on a stick replaces ports.wan and ports.lan: give single (with "
		     "wan_vlan and lan_vlan) or wan and lan, not both");
		return -1;
	}
	for (int r = 0; r < SHAPER_NUM_PORTS; r++) {
		char sub[32];

		snprintf(sub, sizeof(sub), "ports.%s_vlan", shaper_port_name[r]);
		if (!single && c->vlan[r] != 0) {
			errf(err, errlen, sub,
			     "only with ports.single (one port on a stick); two ports take every "
			     "VLAN as it comes");
			return -1;
		}
		if (single && c->vlan[r] == 0) {
			errf(err, errlen, sub,
			     "missing: with ports.single, the VLAN id (1..%d) the %s side's frames "
			     "carry on the port (LibreQoS's %s)",
			     SHAPER_VLAN_MAX, r == SHAPER_PORT_WAN ? "internet" : "subscribers'",
			     r == SHAPER_PORT_WAN ? "internet_vlan" : "network_vlan");
			return -1;
		}
	}
	if (single && c->vlan[SHAPER_PORT_WAN] == c->vlan[SHAPER_PORT_LAN]) {
		errf(err, errlen, "ports.lan_vlan",
		     "%u is ports.wan_vlan too: the two sides must be on different VLANs",
		     c->vlan[SHAPER_PORT_LAN]);
		return -1;
	}
	if (single) {
		c->single_port = true;
		c->port[SHAPER_PORT_WAN] = c->port[SHAPER_PORT_LAN] = one;
	}
	return 0;
}

static const char *const level_names[SHAPER_NUM_LEVELS] = { "user", "operator", "admin" };

const char *
shaper_level_name(enum shaper_level l)
{
	return (unsigned int)l < SHAPER_NUM_LEVELS ? level_names[l] : "?";
}

static int
get_level(const json_t *v, const char *path, enum shaper_level *out, char *err, size_t errlen)
{
	char buf[16];

	if (get_string(v, path, buf, sizeof(buf), err, errlen) != 0)
		return -1;
	for (int l = 0; l < SHAPER_NUM_LEVELS; l++)
		if (strcmp(buf, level_names[l]) == 0) {
			*out = (enum shaper_level)l;
			return 0;
		}
	errf(err, errlen, path, "\"%s\" is not a level (user, operator or admin)", buf);
	return -1;
}

/* A socket path: absolute, so never a network address ("127.0.0.1:9000") or an abstract name. */
static int
get_socket_path(const json_t *v, const char *path, char *out, size_t outlen, char *err,
		size_t errlen)
{
	if (get_string(v, path, out, outlen, err, errlen) != 0)
		return -1;
	if (out[0] != '/') {
		errf(err, errlen, path,
		     "must be an absolute path (control is a Unix socket, never a network "
		     "address)");
		return -1;
	}
	return 0;
}

static int
get_mode(const json_t *v, const char *path, uint32_t *out, char *err, size_t errlen)
{
	char buf[16], *end;
	unsigned long m;

	if (get_string(v, path, buf, sizeof(buf), err, errlen) != 0)
		return -1;
	m = strtoul(buf, &end, 8);
	if (*end != '\0' || end == buf || m > 0777) {
		errf(err, errlen, path, "\"%s\" is not an octal mode such as \"0660\"", buf);
		return -1;
	}
	*out = (uint32_t)m;
	return 0;
}

/* One entry of control.sockets: {"path", "group", "mode", "level"}. */
static int
parse_control_socket(const json_t *v, const char *path, struct shaper_control_socket *s, char *err,
		     size_t errlen)
{
	const char *key;
	json_t *x;
	char sub[160];

	if (expect_object(v, path, err, errlen) != 0)
		return -1;
	s->mode = 0660;
	s->level = SHAPER_LEVEL_USER; /* an extra socket is read-only unless it says otherwise */
	json_object_foreach ((json_t *)v, key, x) {
		join_path(sub, sizeof(sub), path, key);
		REFUSE_UNLISTED("control.sockets", key, sub);
		if (strcmp(key, "path") == 0) {
			if (get_socket_path(x, sub, s->path, sizeof(s->path), err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "group") == 0) {
			if (get_string(x, sub, s->group, sizeof(s->group), err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "mode") == 0) {
			if (get_mode(x, sub, &s->mode, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "level") == 0) {
			if (get_level(x, sub, &s->level, err, errlen) != 0)
				return -1;
		} else {
			return unknown_key("control.sockets", sub, "key", err, errlen);
		}
	}
	if (s->path[0] == '\0') {
		errf(err, errlen, path, "missing \"path\"");
		return -1;
	}
	return 0;
}

static int
parse_control_sockets(const json_t *v, struct shaper_config *c, char *err, size_t errlen)
{
	size_t i;
	json_t *x;

	if (!json_is_array(v)) {
		errf(err, errlen, "control.sockets", "expected an array of sockets, got %s",
		     json_type_name(v));
		return -1;
	}
	if (json_array_size(v) > SHAPER_MAX_CONTROL_SOCKETS - 1) {
		errf(err, errlen, "control.sockets", "at most %d sockets besides control.socket",
		     SHAPER_MAX_CONTROL_SOCKETS - 1);
		return -1;
	}
	c->n_control_sockets = 0;
	json_array_foreach (v, i, x) {
		char sub[64];

		snprintf(sub, sizeof(sub), "control.sockets[%zu]", i);
		memset(&c->control_sockets[i], 0, sizeof(c->control_sockets[i]));
		if (parse_control_socket(x, sub, &c->control_sockets[i], err, errlen) != 0)
			return -1;
		c->n_control_sockets++;
	}
	return 0;
}

/* Two sockets on one path would replace each other's file. */
static int
check_control_paths(const struct shaper_config *c, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < c->n_control_sockets; i++) {
		char sub[64];

		snprintf(sub, sizeof(sub), "control.sockets[%u].path", i);
		if (strcmp(c->control_sockets[i].path, c->control_socket) == 0) {
			errf(err, errlen, sub, "\"%s\" is control.socket already",
			     c->control_socket);
			return -1;
		}
		for (unsigned int j = 0; j < i; j++)
			if (strcmp(c->control_sockets[i].path, c->control_sockets[j].path) == 0) {
				errf(err, errlen, sub, "\"%s\" is control.sockets[%u] already",
				     c->control_sockets[j].path, j);
				return -1;
			}
	}
	return 0;
}

static int
parse_control(const json_t *v, struct shaper_config *c, char *err, size_t errlen)
{
	const char *key;
	json_t *x;
	char sub[160];

	if (expect_object(v, "control", err, errlen) != 0)
		return -1;
	json_object_foreach ((json_t *)v, key, x) {
		join_path(sub, sizeof(sub), "control", key);
		REFUSE_UNLISTED("control", key, sub);
		if (strcmp(key, "enabled") == 0) {
			if (get_bool(x, sub, &c->control_enabled, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "socket") == 0) {
			if (get_socket_path(x, sub, c->control_socket, sizeof(c->control_socket),
					    err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "group") == 0) {
			if (get_string(x, sub, c->control_group, sizeof(c->control_group), err,
				       errlen) != 0)
				return -1;
		} else if (strcmp(key, "mode") == 0) {
			if (get_mode(x, sub, &c->control_mode, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "level") == 0) {
			if (get_level(x, sub, &c->control_level, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "default_level") == 0) {
			if (get_level(x, sub, &c->control_default_level, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "admin_group") == 0) {
			if (get_string(x, sub, c->control_admin_group,
				       sizeof(c->control_admin_group), err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "sockets") == 0) {
			if (parse_control_sockets(x, c, err, errlen) != 0)
				return -1;
		} else {
			return unknown_key("control", sub, "key", err, errlen);
		}
	}
	return check_control_paths(c, err, errlen);
}

/* s[0..n) as a NUL-terminated numeric address of family af in out. */
static bool
numeric_addr(int af, const char *s, size_t n, char *out, size_t outlen)
{
	unsigned char bin[16];

	if (n >= outlen)
		return false;
	memcpy(out, s, n);
	out[n] = '\0';
	return inet_pton(af, out, bin) == 1;
}

/*
 * metrics.listen: "9464" (on 127.0.0.1), "127.0.0.1:9464", "[::1]:9464".
 * Only numeric addresses: a name would be resolved once at start and could
 * silently bind somewhere else than the reader of the config expects.
 */
static int
parse_listen(const json_t *v, const char *path, struct shaper_config *c, char *err, size_t errlen)
{
	char buf[80], addr[SHAPER_METRICS_ADDR_LEN];
	const char *port_s;
	unsigned long port;
	char *end;

	if (get_string(v, path, buf, sizeof(buf), err, errlen) != 0)
		return -1;
	if (buf[0] == '[') {
		char *close = strchr(buf, ']');
		size_t n;

		if (close == NULL || close[1] != ':') {
			errf(err, errlen, path,
			     "\"%s\": an IPv6 address needs a port after its brackets, as in "
			     "\"[::1]:9464\"",
			     buf);
			return -1;
		}
		n = (size_t)(close - buf - 1);
		if (!numeric_addr(AF_INET6, buf + 1, n, addr, sizeof(addr))) {
			errf(err, errlen, path, "\"%.*s\" is not an IPv6 address", (int)n, buf + 1);
			return -1;
		}
		port_s = close + 2;
	} else if (strchr(buf, ':') == NULL) {
		snprintf(addr, sizeof(addr), "%s", SHAPER_METRICS_ADDR_DEFAULT);
		port_s = buf;
	} else {
		char *colon = strrchr(buf, ':');
		size_t n = (size_t)(colon - buf);

		if (strchr(buf, ':') != colon) {
			errf(err, errlen, path,
			     "\"%s\": write an IPv6 address in brackets, as in \"[::1]:9464\"",
			     buf);
			return -1;
		}
		if (!numeric_addr(AF_INET, buf, n, addr, sizeof(addr))) {
			errf(err, errlen, path,
			     "\"%.*s\" is not an IPv4 address (host names are not resolved; a "
			     "port alone listens on 127.0.0.1)",
			     (int)n, buf);
			return -1;
		}
		port_s = colon + 1;
	}
	errno = 0;
	port = strtoul(port_s, &end, 10);
	if (port_s[0] < '0' || port_s[0] > '9' || *end != '\0' || errno != 0 || port < 1 ||
	    port > 65535) {
		errf(err, errlen, path,
		     "\"%s\" is not a port (1..65535), \"address:port\" or \"[address]:port\"",
		     buf);
		return -1;
	}
	snprintf(c->metrics_addr, sizeof(c->metrics_addr), "%s", addr);
	c->metrics_port = (uint16_t)port;
	return 0;
}

/* "metrics": {"listen": ...} turns the endpoint on; "enabled": false keeps it off. */
static int
parse_metrics(const json_t *v, struct shaper_config *c, char *err, size_t errlen)
{
	bool listen = false, enabled_set = false;
	const char *key;
	json_t *x;
	char sub[160];

	if (expect_object(v, "metrics", err, errlen) != 0)
		return -1;
	json_object_foreach ((json_t *)v, key, x) {
		snprintf(sub, sizeof(sub), "metrics.%s", key);
		REFUSE_UNLISTED("metrics", key, sub);
		if (strcmp(key, "enabled") == 0) {
			if (get_bool(x, sub, &c->metrics_enabled, err, errlen) != 0)
				return -1;
			enabled_set = true;
		} else if (strcmp(key, "listen") == 0) {
			if (parse_listen(x, sub, c, err, errlen) != 0)
				return -1;
			listen = true;
		} else if (strcmp(key, "subscribers_top") == 0) {
			long long n;

			if (get_int(x, sub, 0, SHAPER_METRICS_SUBS_TOP_MAX, &n, err, errlen) != 0)
				return -1;
			c->metrics_subscribers_top = (uint32_t)n;
		} else if (strcmp(key, "subscribers_worst") == 0) {
			long long n;

			if (get_int(x, sub, 0, SHAPER_METRICS_SUBS_TOP_MAX, &n, err, errlen) != 0)
				return -1;
			c->metrics_subscribers_worst = (uint32_t)n;
		} else {
			return unknown_key("metrics", sub, "key", err, errlen);
		}
	}
	if (listen && !enabled_set)
		c->metrics_enabled = true;
	return 0;
}

/* "log": {"level": "notice"}: the least severe lines printed. */
static int
parse_log(const json_t *v, struct shaper_config *c, char *err, size_t errlen)
{
	const char *key;
	json_t *x;
	char sub[160];

	if (expect_object(v, "log", err, errlen) != 0)
		return -1;
	json_object_foreach ((json_t *)v, key, x) {
		snprintf(sub, sizeof(sub), "log.%s", key);
		REFUSE_UNLISTED("log", key, sub);
		if (strcmp(key, "level") == 0) {
			if (!json_is_string(x) ||
			    shaper_log_level_parse(json_string_value(x), &c->log_level) != 0) {
				errf(err, errlen, sub,
				     "expected \"error\", \"warning\", \"notice\", \"info\" or "
				     "\"debug\"");
				return -1;
			}
		} else {
			return unknown_key("log", sub, "key", err, errlen);
		}
	}
	return 0;
}

static int
parse_lcores(const json_t *v, struct shaper_config *c, char *err, size_t errlen)
{
	const char *key;
	json_t *x;

	if (expect_object(v, "lcores", err, errlen) != 0)
		return -1;
	json_object_foreach ((json_t *)v, key, x) {
		if (shaper_config_key_known("lcores", key) && strcmp(key, "workers") == 0) {
			size_t i;
			json_t *e;

			if (!json_is_array(x) || json_array_size(x) < 1 ||
			    json_array_size(x) > SHAPER_MAX_WORKERS) {
				errf(err, errlen, "lcores.workers",
				     "expected a list of 1 to %d lcore ids (each worker shapes "
				     "both directions of its share of the hosts)",
				     SHAPER_MAX_WORKERS);
				return -1;
			}
			c->n_workers = (unsigned int)json_array_size(x);
			json_array_foreach (x, i, e) {
				char sub[64];
				long long n;

				snprintf(sub, sizeof(sub), "lcores.workers[%zu]", i);
				if (get_int(e, sub, 0, 1023, &n, err, errlen) != 0)
					return -1;
				c->worker_lcore[i] = (unsigned int)n;
				for (size_t j = 0; j < i && n != 0; j++)
					if (c->worker_lcore[j] == (unsigned int)n) {
						errf(err, errlen, sub,
						     "lcore %lld is already lcores.workers[%zu]: "
						     "each worker needs its own",
						     n, j);
						return -1;
					}
			}
		} else {
			char list[64];

			shaper_config_key_list("lcores", list, sizeof(list));
			errf(err, errlen, "lcores", "unknown key \"%s\" (known: %s)", key, list);
			return -1;
		}
	}
	return 0;
}

static const struct name_val shard_by_names[] = {
	{ "host", SHARE_BY_HOST },
	{ "flow", SHARE_BY_FLOW },
};

static const struct name_val steering_names[] = {
	{ "auto", SHAPER_STEER_AUTO },
	{ "rss", SHAPER_STEER_RSS },
	{ "software", SHAPER_STEER_SOFTWARE },
};

const char *
shaper_shard_by_name(enum share_by b)
{
	return name_of(shard_by_names, NELEM(shard_by_names), (int)b);
}

static int
parse_dataplane(const json_t *v, struct shaper_config *c, char *err, size_t errlen)
{
	const char *key;
	json_t *x;
	char sub[160];
	long long n;
	uint64_t ns;

	if (expect_object(v, "dataplane", err, errlen) != 0)
		return -1;
	json_object_foreach ((json_t *)v, key, x) {
		join_path(sub, sizeof(sub), "dataplane", key);
		REFUSE_UNLISTED("dataplane", key, sub);
		if (strcmp(key, "mbufs") == 0) {
			if (parse_mbufs(x, sub, c->mbufs, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "burst") == 0) {
			if (get_int(x, sub, 1, SHAPER_BURST_MAX, &n, err, errlen) != 0)
				return -1;
			c->burst = (uint32_t)n;
		} else if (strcmp(key, "idle_sleep") == 0) {
			if (get_unit(x, sub, shaper_parse_time, "time", 0, 10000000, &ns, err,
				     errlen) != 0)
				return -1;
			c->idle_sleep_us = (uint32_t)((ns + 999) / 1000); /* never 0 by rounding */
		} else if (strcmp(key, "rt_priority") == 0) {
			/* SCHED_FIFO for the workers: no wait behind other threads. */
			if (get_int(x, sub, 0, 99, &n, err, errlen) != 0)
				return -1;
			c->rt_priority = (uint32_t)n;
		} else if (strcmp(key, "passive_rtt") == 0) {
			if (get_bool(x, sub, &c->passive_rtt, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "shard_by") == 0) {
			int by;

			if (get_enum(x, sub, shard_by_names, NELEM(shard_by_names), &by,
				     "shard key", err, errlen) != 0)
				return -1;
			c->shard_by = (enum share_by)by;
		} else if (strcmp(key, "steering") == 0) {
			int st;

			if (get_enum(x, sub, steering_names, NELEM(steering_names), &st, "steering",
				     err, errlen) != 0)
				return -1;
			c->steering = (enum shaper_steering)st;
		} else if (strcmp(key, "pdump") == 0) {
			if (get_bool(x, sub, &c->pdump, err, errlen) != 0)
				return -1;
		} else {
			return unknown_key("dataplane", sub, "key", err, errlen);
		}
	}
	return 0;
}

static int
parse_fail_open(const json_t *v, struct shaper_config *c, char *err, size_t errlen)
{
	const char *key;
	json_t *x;
	char sub[160];
	uint64_t ns;

	if (expect_object(v, "fail_open", err, errlen) != 0)
		return -1;
	json_object_foreach ((json_t *)v, key, x) {
		join_path(sub, sizeof(sub), "fail_open", key);
		REFUSE_UNLISTED("fail_open", key, sub);
		if (strcmp(key, "enabled") == 0) {
			if (get_bool(x, sub, &c->fail_open, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "lease") == 0) {
			/* Renewed every quarter lease: under 10 ms a stolen slice lapses it. */
			if (get_unit(x, sub, shaper_parse_time, "time", 10000000ull, 10000000000ull,
				     &ns, err, errlen) != 0)
				return -1;
			c->fail_open_lease_ns = ns;
		} else if (strcmp(key, "program") == 0) {
			if (get_string(x, sub, c->fail_open_program, sizeof(c->fail_open_program),
				       err, errlen) != 0)
				return -1;
			if (strcmp(c->fail_open_program, "auto") == 0)
				memset(c->fail_open_program, 0, sizeof(c->fail_open_program));
		} else {
			return unknown_key("fail_open", sub, "key", err, errlen);
		}
	}
	return 0;
}

/*
 * What one port on a stick cannot do: fail open (a Linux bridge sends a
 * frame on out of other ports, never back out of the one it came in on
 * with its VLAN changed), or have the NIC's RSS pick the shard (a host is
 * the L3 source of the frames on one VLAN and the destination of those on
 * the other, and one port has one hash).
 */
static int
check_single_port(const struct shaper_config *c, char *err, size_t errlen)
{
	if (!c->single_port)
		return 0;
	if (c->fail_open) {
		errf(err, errlen, "fail_open.enabled",
		     "cannot be used with ports.single: a Linux bridge never sends a frame back "
		     "out of the port it came in on, nor moves it from one VLAN to another, so "
		     "nothing would carry the line while shaperd does not");
		return -1;
	}
	if (c->n_workers > 1 && c->steering == SHAPER_STEER_RSS) {
		errf(err, errlen, "dataplane.steering",
		     "\"rss\" cannot be used with ports.single and %u workers: one port hashes "
		     "both sides' frames alike, and a LAN host is the source on one VLAN and the "
		     "destination on the other (use \"auto\" or \"software\")",
		     c->n_workers);
		return -1;
	}
	return 0;
}

/* Fail-open hands frames to a kernel bridge: only ports the kernel still sees can. */
static int
check_fail_open(const struct shaper_config *c, char *err, size_t errlen)
{
	if (!c->fail_open)
		return 0;
	for (int r = 0; r < SHAPER_NUM_PORTS; r++) {
		const char *dev = c->port[r].device;

		if ((strncmp(dev, "net_af_xdp", 10) != 0 &&
		     strncmp(dev, "net_af_packet", 13) != 0) ||
		    strstr(dev, ",iface=") == NULL) {
			errf(err, errlen, "fail_open.enabled",
			     "needs AF_XDP or af_packet ports in a Linux bridge (net_af_xdpN,iface=IF "
			     "or net_af_packetN,iface=IF); ports.%s is \"%s\"",
			     shaper_port_name[r], dev);
			return -1;
		}
	}
	/* A worker sleeping a quarter lease would let the lease lapse while idle. */
	if ((uint64_t)c->idle_sleep_us * 1000u * 4u >= c->fail_open_lease_ns) {
		errf(err, errlen, "fail_open.lease",
		     "must be more than 4 x dataplane.idle_sleep (%u us): the lease is renewed "
		     "only while every worker turns",
		     c->idle_sleep_us);
		return -1;
	}
	return 0;
}

/* subscribers.unknown: "link", or {"download": rate, "upload": rate}. */
static int
parse_subs_unknown(const json_t *v, struct shaper_subscribers_config *sc, char *err, size_t errlen)
{
	const char *key;
	json_t *x;

	if (json_is_string(v) && strcmp(json_string_value(v), "link") == 0) {
		sc->unknown_plan = false;
		memset(sc->unknown_rate, 0, sizeof(sc->unknown_rate));
		return 0;
	}
	if (!json_is_object(v)) {
		errf(err, errlen, "subscribers.unknown",
		     "expected \"link\" or {\"download\": rate, \"upload\": rate}, got %s",
		     json_type_name(v));
		return -1;
	}
	json_object_foreach ((json_t *)v, key, x) {
		char sub[64];
		int d;

		snprintf(sub, sizeof(sub), "subscribers.unknown.%s", key);
		if (strcmp(key, "download") == 0)
			d = SHAPER_DOWN;
		else if (strcmp(key, "upload") == 0)
			d = SHAPER_UP;
		else {
			errf(err, errlen, sub, "unknown key (known: download, upload)");
			return -1;
		}
		if (get_unit(x, sub, shaper_parse_rate, "rate", 125, UINT64_MAX / 8,
			     &sc->unknown_rate[d], err, errlen) != 0)
			return -1;
	}
	for (int d = 0; d < SHAPER_NUM_DIRS; d++)
		if (sc->unknown_rate[d] == 0) {
			errf(err, errlen, "subscribers.unknown",
			     "missing \"%s\": a plan for unknown addresses needs a rate each way",
			     d == SHAPER_DOWN ? "download" : "upload");
			return -1;
		}
	sc->unknown_plan = true;
	return 0;
}

static int
parse_subscribers(const json_t *v, struct shaper_config *c, char *err, size_t errlen)
{
	struct shaper_subscribers_config *sc = &c->subscribers;
	const char *key;
	json_t *x;
	char sub[160];
	long long n;

	if (expect_object(v, "subscribers", err, errlen) != 0)
		return -1;
	json_object_foreach ((json_t *)v, key, x) {
		join_path(sub, sizeof(sub), "subscribers", key);
		REFUSE_UNLISTED("subscribers", key, sub);
		if (strcmp(key, "devices") == 0) {
			if (get_string(x, sub, sc->devices, sizeof(sc->devices), err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "network") == 0) {
			if (get_string(x, sub, sc->network, sizeof(sc->network), err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "file") == 0) {
			if (get_string(x, sub, sc->file, sizeof(sc->file), err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "active") == 0) {
			if (get_int(x, sub, 1, 1000000, &n, err, errlen) != 0)
				return -1;
			sc->active = (uint32_t)n;
		} else if (strcmp(key, "flow_queues") == 0) {
			if (get_int(x, sub, 16, 1024, &n, err, errlen) != 0)
				return -1;
			if ((n & (n - 1)) != 0) {
				errf(err, errlen, sub,
				     "%lld is not a power of two (16, 32, ... 1024; sch_cake has 1024)",
				     (long long)n);
				return -1;
			}
			sc->flow_queues = (uint32_t)n;
		} else if (strcmp(key, "scale_mins") == 0) {
			if (get_bool(x, sub, &sc->scale_mins, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "unknown") == 0) {
			if (parse_subs_unknown(x, sc, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "shard_by") == 0) {
			const char *s = json_string_value(x);

			if (s != NULL && strcmp(s, "node") == 0) {
				sc->shard_by_subscriber = false;
			} else if (s != NULL && strcmp(s, "subscriber") == 0) {
				sc->shard_by_subscriber = true;
			} else {
				errf(err, errlen, sub, "expected \"node\" or \"subscriber\"");
				return -1;
			}
		} else if (strcmp(key, "unknown_addresses") == 0) {
			if (get_int(x, sub, 1, 1000000, &n, err, errlen) != 0)
				return -1;
			sc->unknown_addresses = (uint32_t)n;
		} else {
			return unknown_key("subscribers", sub, "key", err, errlen);
		}
	}
	if (sc->devices[0] != '\0' && sc->file[0] != '\0') {
		errf(err, errlen, "subscribers.file",
		     "give either devices (LibreQoS's ShapedDevices.csv, with network) or file "
		     "(the JSON form), not both");
		return -1;
	}
	if (sc->network[0] != '\0' && sc->devices[0] == '\0') {
		errf(err, errlen, "subscribers.network",
		     "network.json describes the nodes of a ShapedDevices.csv: give devices too");
		return -1;
	}
	return 0;
}

/*
 * Subscribers with several workers are steered in software to their
 * worker after the address lookup: RSS cannot keep them there.
 */
static int
check_subscribers(const struct shaper_config *c, char *err, size_t errlen)
{
	if (!shaper_subscribers_enabled(c))
		return 0;
	if (c->n_workers > 1 && c->steering == SHAPER_STEER_RSS) {
		errf(err, errlen, "dataplane.steering",
		     "\"rss\" cannot be used with subscribers and %u workers: the NICs hash "
		     "addresses, and a subscriber's addresses (and a node's subscribers) must all "
		     "reach one worker, so the workers steer in software after the lookup (use "
		     "\"auto\" or \"software\")",
		     c->n_workers);
		return -1;
	}
	return 0;
}

/*
 * A relative subscriber path names a file beside the config file (so a
 * preset and its samples move together); "" stays "".
 */
static int
resolve_beside(char *p, size_t len, const char *config_path, const char *key, char *err,
	       size_t errlen)
{
	const char *slash = strrchr(config_path, '/');
	char buf[SHAPER_SUBS_PATH_LEN];
	int n;

	if (p[0] == '\0' || p[0] == '/' || slash == NULL)
		return 0;
	n = snprintf(buf, sizeof(buf), "%.*s/%s", (int)(slash - config_path), config_path, p);
	if (n < 0 || (size_t)n >= len || (size_t)n >= sizeof(buf)) {
		errf(err, errlen, key, "\"%s\" beside %s is longer than %zu characters", p,
		     config_path, len - 1);
		return -1;
	}
	memcpy(p, buf, (size_t)n + 1);
	return 0;
}

static int
parse_root(const json_t *root, struct shaper_config *c, char *err, size_t errlen)
{
	const char *key;
	json_t *v;

	if (expect_object(root, "(top level)", err, errlen) != 0)
		return -1;
	json_object_foreach ((json_t *)root, key, v) {
		REFUSE_UNLISTED("top", key, key);
		if (strcmp(key, "ports") == 0) {
			if (parse_ports(v, c, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "upstream") == 0 || strcmp(key, "downstream") == 0) {
			int d = key[0] == 'u' ? SHAPER_UP : SHAPER_DOWN;

			if (parse_direction(v, key, &c->dir[d], &c->emulate[d], &c->autorate[d],
					    err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "control") == 0) {
			if (parse_control(v, c, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "metrics") == 0) {
			if (parse_metrics(v, c, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "log") == 0) {
			if (parse_log(v, c, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "lcores") == 0) {
			if (parse_lcores(v, c, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "dataplane") == 0) {
			if (parse_dataplane(v, c, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "fail_open") == 0) {
			if (parse_fail_open(v, c, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "subscribers") == 0) {
			if (parse_subscribers(v, c, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "comment") == 0 || strcmp(key, "_comment") == 0) {
			continue; /* JSON has no comments; allow a note */
		} else {
			return unknown_key("top", key, "key", err, errlen);
		}
	}
	for (int r = 0; r < SHAPER_NUM_PORTS; r++)
		if (c->port[r].device[0] == '\0') {
			char sub[32];

			snprintf(sub, sizeof(sub), "ports.%s", shaper_port_name[r]);
			errf(err, errlen, sub, "missing: name the %s port's device",
			     shaper_port_name[r]);
			return -1;
		}
	if (!c->single_port && strcmp(c->port[0].device, c->port[1].device) == 0) {
		errf(err, errlen, "ports", "wan and lan name the same device \"%s\"",
		     c->port[0].device);
		return -1;
	}
	if (check_single_port(c, err, errlen) != 0)
		return -1;
	if (check_subscribers(c, err, errlen) != 0)
		return -1;
	return check_fail_open(c, err, errlen);
}

static int
load_json(json_t *root, const json_error_t *jerr, const char *name, struct shaper_config *c,
	  char *err, size_t errlen)
{
	int rc;

	shaper_config_default(c);
	if (root == NULL) {
		if (err == NULL)
			return -1;
		if (jerr->line < 0) /* could not read the file at all */
			snprintf(err, errlen, "%s", jerr->text);
		else
			snprintf(err, errlen, "%s:%d:%d: %s", name, jerr->line, jerr->column,
				 jerr->text);
		return -1;
	}
	rc = parse_root(root, c, err, errlen);
	json_decref(root);
	return rc;
}

int
shaper_config_load_file(const char *path, struct shaper_config *c, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	struct shaper_subscribers_config *sc = &c->subscribers;

	if (load_json(root, &jerr, path, c, err, errlen) != 0)
		return -1;
	if (resolve_beside(sc->devices, sizeof(sc->devices), path, "subscribers.devices", err,
			   errlen) != 0 ||
	    resolve_beside(sc->network, sizeof(sc->network), path, "subscribers.network", err,
			   errlen) != 0 ||
	    resolve_beside(sc->file, sizeof(sc->file), path, "subscribers.file", err, errlen) != 0)
		return -1;
	return 0;
}

int
shaper_config_load_string(const char *json, struct shaper_config *c, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);

	return load_json(root, &jerr, "(string)", c, err, errlen);
}
