/*
 * Every key of the configuration file, with its default, in one table: the
 * parser refuses a key the table does not list (and lists the known ones
 * from it), tests/unit/test_config_keys.c loads each key at its default and
 * checks that nothing changes, and tests/config/check_docs.py checks
 * docs/configuration.md and shaper.json(5) against it.
 */
#ifndef SHAPER_CONFIG_KEYS_H
#define SHAPER_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>

struct shaper_config_key {
	/*
	 * Where the key lives: "top", "ports" (wan, lan), "ports.single"
	 * (single, wan_vlan, lan_vlan: one port on a stick), "port" (inside
	 * ports.wan/lan), "dir" (every discipline), "dir.cake", "dir.fq_codel",
	 * "dir.fifo", "emulate", "autorate" (bandwidth's bounds), "control",
	 * "control.sockets", "metrics", "lcores", "dataplane", "dataplane.mbufs".
	 */
	const char *section;
	const char *key;
	/* JSON the parser accepts for it: the default where same is true. */
	const char *value;
	/* The default as the docs show it; NULL where there is none. */
	const char *doc;
	/* Loading value gives the same config as leaving the key out. */
	bool same;
};

extern const struct shaper_config_key shaper_config_keys[];
extern const size_t shaper_config_n_keys;

/*
 * Whether key belongs in section. The section "dir" also takes the keys of
 * "dir.cake", "dir.fq_codel" and "dir.fifo" (the discipline decides which
 * of them apply).
 */
bool shaper_config_key_known(const char *section, const char *key);

/* "a, b, c": the keys of section, in table order, cut to len. */
void shaper_config_key_list(const char *section, char *buf, size_t len);

#endif
