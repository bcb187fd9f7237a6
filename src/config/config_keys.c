/*
 * The configuration's keys and defaults (see shaper/config_keys.h). Order
 * within a section is the order the parser's "unknown key (known: ...)"
 * messages list them in.
 */
#include <stdio.h>
#include <string.h>

#include "shaper/config_keys.h"

/* clang-format off */
const struct shaper_config_key shaper_config_keys[] = {
	{ "top", "ports", "{\"wan\": \"a\", \"lan\": \"b\"}", NULL, true },
	{ "top", "upstream", "{}", NULL, true },
	{ "top", "downstream", "{}", NULL, true },
	{ "top", "control", "{}", NULL, true },
	{ "top", "metrics", "{}", NULL, true },
	{ "top", "log", "{}", NULL, true },
	{ "top", "lcores", "{}", NULL, true },
	{ "top", "dataplane", "{}", NULL, true },
	{ "top", "fail_open", "{}", NULL, true },
	{ "top", "subscribers", "{}", NULL, true },
	{ "top", "comment", "\"what the file is for\"", NULL, true },
	{ "top", "_comment", "\"what the file is for\"", NULL, true },

	{ "ports", "wan", "\"a\"", NULL, true },
	{ "ports", "lan", "\"b\"", NULL, true },
	/* One port on a stick instead of wan and lan. */
	{ "ports.single", "single", "\"a\"", NULL, true },
	{ "ports.single", "wan_vlan", "100", NULL, true },
	{ "ports.single", "lan_vlan", "200", NULL, true },

	{ "port", "device", "\"a\"", NULL, true },
	{ "port", "rx_descriptors", "1024", "1024", true },
	{ "port", "tx_descriptors", "1024", "1024", true },

	{ "dir", "discipline", "\"cake\"", "cake", true },
	{ "dir", "bandwidth", "\"unlimited\"", "unlimited", true },
	{ "dir", "mtu", "1514", "1514", true },
	{ "dir", "overhead", "\"raw\"", "raw", true },
	{ "dir", "mpu", "0", "0", true },
	{ "dir", "atm", "\"noatm\"", "noatm", true },
	/* upstream's; downstream XORs in 1 << 32 */
	{ "dir", "seed", "104373592874733", "0x5eed5eed5eed", true },
	{ "dir", "lag_limit", "\"auto\"", "auto", true },
	{ "dir", "emulate", "{}", "off", true },

	{ "dir.cake", "rtt", "\"internet\"", "internet", true },
	{ "dir.cake", "target", "\"5ms\"", "5ms", true },
	{ "dir.cake", "diffserv", "\"diffserv3\"", "diffserv3", true },
	{ "dir.cake", "isolation", "\"triple-isolate\"", "triple-isolate", true },
	{ "dir.cake", "wash", "false", "false", true },
	{ "dir.cake", "ingress", "false", "false", true },
	{ "dir.cake", "nat", "false", "false", true },
	{ "dir.cake", "vlan_hosts", "false", "false", true },
	{ "dir.cake", "ecn", "true", "true", true },
	{ "dir.cake", "ack_filter", "false", "false", true },
	{ "dir.cake", "l4s", "false", "false", true },
	{ "dir.cake", "l4s_step", "\"500us\"", "500us", true },
	{ "dir.cake", "nqb", "false", "false", true },
	{ "dir.cake", "memlimit", "\"0b\"", "0b", true },

	{ "dir.fq_codel", "limit", "10240", "10240", true },
	{ "dir.fq_codel", "flows", "1024", "1024", true },
	{ "dir.fq_codel", "quantum", "1514", "1514", true },
	{ "dir.fq_codel", "memory_limit", "\"32mb\"", "32mb", true },
	{ "dir.fq_codel", "target", "\"5ms\"", "5ms", true },
	{ "dir.fq_codel", "interval", "\"100ms\"", "100ms", true },
	{ "dir.fq_codel", "ecn", "true", "true", true },
	{ "dir.fq_codel", "ce_threshold", "\"0s\"", "0s", true },
	{ "dir.fq_codel", "drop_batch", "64", "64", true },
	{ "dir.fq_codel", "l4s", "false", "false", true },
	{ "dir.fq_codel", "l4s_step", "\"500us\"", "500us", true },

	{ "dir.fifo", "limit", "1000", "1000", true },

	{ "emulate", "delay", "\"0s\"", "0s", true },
	{ "emulate", "jitter", "\"0s\"", "0s", true },
	{ "emulate", "loss", "0", "0", true },
	{ "emulate", "seed", "0", "0", true },
	{ "emulate", "limit", "10240", "10240", true },

	/* Inside "bandwidth": {"min", "max", "start", ...}; start defaults to max. */
	{ "autorate", "min", "\"10mbit\"", NULL, false },
	{ "autorate", "max", "\"20mbit\"", NULL, false },
	{ "autorate", "start", "\"20mbit\"", NULL, true },
	/* The controller's tuning (include/shaper/autorate.h); base defaults to start. */
	{ "autorate", "base", "\"20mbit\"", NULL, true },
	{ "autorate", "interval", "\"100ms\"", "100ms", true },
	{ "autorate", "early_samples", "4", "4", true },
	{ "autorate", "bloat", "\"8ms\"", "8ms", true },
	{ "autorate", "clear", "\"3ms\"", "3ms", true },
	{ "autorate", "frame", "1514", "1514", true },
	{ "autorate", "refractory", "\"300ms\"", "300ms", true },
	{ "autorate", "cut_min", "10", "10", true },
	{ "autorate", "cut_max", "50", "50", true },
	{ "autorate", "drain", "\"1s\"", "1s", true },
	{ "autorate", "loaded", "75", "75", true },
	{ "autorate", "idle", "10", "10", true },
	{ "autorate", "raise_fast", "5", "5", true },
	{ "autorate", "raise_slow", "1", "1", true },
	{ "autorate", "near_low", "92", "92", true },
	{ "autorate", "near_high", "101", "101", true },
	{ "autorate", "standing_intervals", "5", "5", true },
	{ "autorate", "standing_cut", "3", "3", true },
	{ "autorate", "decay", "1", "1", true },
	{ "autorate", "no_samples", "\"hold\"", "hold", true },
	{ "autorate", "owd_stale", "\"1s\"", "1s", true },
	{ "autorate", "owd_recent", "8", "8", true },
	{ "autorate", "lesser_ratio", "4", "4", true },
	{ "autorate", "path_flat", "\"2ms\"", "2ms", true },
	{ "autorate", "path_checks", "2", "2", true },
	{ "autorate", "path_max", "\"60ms\"", "60ms", true },
	{ "autorate", "at_line", "90", "90", true },
	{ "autorate", "growth", "25", "25", true },
	{ "autorate", "regain", "25", "25", true },
	{ "autorate", "acks_floor", "125", "125", true },

	{ "control", "enabled", "true", "true", true },
	{ "control", "socket", "\"/run/shaper/shaper.sock\"", "/run/shaper/shaper.sock", true },
	{ "control", "group", "\"\"", "", true },
	{ "control", "mode", "\"0660\"", "0660", true },
	{ "control", "level", "\"admin\"", "admin", true },
	{ "control", "default_level", "\"user\"", "user", true },
	{ "control", "admin_group", "\"\"", "", true },
	{ "control", "sockets", "[]", "[]", true },

	{ "control.sockets", "path", "\"/run/shaper/other.sock\"", NULL, true },
	{ "control.sockets", "group", "\"\"", "", true },
	{ "control.sockets", "mode", "\"0660\"", "0660", true },
	{ "control.sockets", "level", "\"user\"", "user", true },

	{ "metrics", "enabled", "false", "false", true },
	/* Giving "listen" turns the endpoint on, so it is not "same". */
	{ "metrics", "listen", "\"127.0.0.1:9464\"", "127.0.0.1:9464", false },
	{ "metrics", "subscribers_top", "0", "0", true },
	{ "metrics", "subscribers_worst", "10", "10", true },

	{ "log", "level", "\"info\"", "info", true },

	{ "lcores", "workers", "[0]", "[0]", true },

	{ "dataplane", "mbufs", "\"auto\"", "auto", true },
	{ "dataplane", "burst", "32", "32", true },
	{ "dataplane", "idle_sleep", "\"0us\"", "0us", true },
	{ "dataplane", "rt_priority", "0", "0", true },
	{ "dataplane", "passive_rtt", "true", "true", true },
	{ "dataplane", "shard_by", "\"host\"", "host", true },
	{ "dataplane", "steering", "\"auto\"", "auto", true },
	{ "dataplane", "pdump", "false", "false", true },

	{ "fail_open", "enabled", "false", "false", true },
	{ "fail_open", "lease", "\"100ms\"", "100ms", true },
	{ "fail_open", "program", "\"auto\"", "auto", true },

	{ "subscribers", "devices", "\"\"", "", true },
	{ "subscribers", "network", "\"\"", "", true },
	{ "subscribers", "file", "\"\"", "", true },
	{ "subscribers", "active", "1000", "1000", true },
	{ "subscribers", "flow_queues", "256", "256", true },
	{ "subscribers", "scale_mins", "false", "false", true },
	{ "subscribers", "unknown", "\"link\"", "link", true },
	{ "subscribers", "unknown_addresses", "100", NULL, false },
	{ "subscribers", "shard_by", "\"node\"", "node", true },

	{ "dataplane.mbufs", "upstream", "\"auto\"", "auto", true },
	{ "dataplane.mbufs", "downstream", "\"auto\"", "auto", true },
};
/* clang-format on */

const size_t shaper_config_n_keys = sizeof(shaper_config_keys) / sizeof(shaper_config_keys[0]);

static bool
in_section(const char *entry, const char *section)
{
	if (strcmp(entry, section) == 0)
		return true;
	/* "dir" takes the keys of the disciplines' sections as well, "ports" a stick's. */
	return (strcmp(section, "dir") == 0 && strncmp(entry, "dir.", 4) == 0) ||
	       (strcmp(section, "ports") == 0 && strcmp(entry, "ports.single") == 0);
}

bool
shaper_config_key_known(const char *section, const char *key)
{
	for (size_t i = 0; i < shaper_config_n_keys; i++)
		if (in_section(shaper_config_keys[i].section, section) &&
		    strcmp(shaper_config_keys[i].key, key) == 0)
			return true;
	return false;
}

void
shaper_config_key_list(const char *section, char *buf, size_t len)
{
	size_t off = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < shaper_config_n_keys && off < len; i++) {
		int n;

		if (strcmp(shaper_config_keys[i].section, section) != 0)
			continue;
		n = snprintf(buf + off, len - off, "%s%s", off ? ", " : "",
			     shaper_config_keys[i].key);
		if (n < 0)
			break;
		off += (size_t)n;
	}
}
