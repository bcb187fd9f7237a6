/*
 * The key table (src/config/config_keys.c) against the parser: every key it
 * lists is accepted where it says, and loading a key at its listed default
 * gives the same config as leaving it out (so a default changed in the code
 * and not in the table fails here). The parser refuses keys the table does
 * not list, so together they cannot drift apart. With --dump, prints the
 * table (section, key, documented default) for tests/config/check_docs.py.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "shaper/config.h"
#include "shaper/config_keys.h"

#define PORTS "\"ports\": {\"wan\": \"a\", \"lan\": \"b\"}"

/* Where each section's keys go: a base config and the path of the object. */
static const struct {
	const char *section;
	const char *base;
	const char *at[3];
} probes[] = {
	{ "top", "{" PORTS "}", { NULL } },
	{ "ports", "{" PORTS "}", { "ports" } },
	{ "ports.single",
	  "{\"ports\": {\"single\": \"a\", \"wan_vlan\": 100, \"lan_vlan\": 200}}",
	  { "ports" } },
	{ "port",
	  "{\"ports\": {\"wan\": {\"device\": \"a\"}, \"lan\": \"b\"}}",
	  { "ports", "wan" } },
	{ "dir", "{" PORTS ", \"upstream\": {}}", { "upstream" } },
	{ "dir.cake", "{" PORTS ", \"upstream\": {\"discipline\": \"cake\"}}", { "upstream" } },
	{ "dir.fq_codel",
	  "{" PORTS ", \"upstream\": {\"discipline\": \"fq_codel\"}}",
	  { "upstream" } },
	{ "dir.fifo", "{" PORTS ", \"upstream\": {\"discipline\": \"fifo\"}}", { "upstream" } },
	{ "emulate", "{" PORTS ", \"upstream\": {\"emulate\": {}}}", { "upstream", "emulate" } },
	{ "autorate",
	  "{" PORTS ", \"upstream\": {\"bandwidth\": {\"min\": \"10mbit\", \"max\": \"20mbit\"}}}",
	  { "upstream", "bandwidth" } },
	{ "control", "{" PORTS ", \"control\": {}}", { "control" } },
	{ "control.sockets",
	  "{" PORTS ", \"control\": {\"sockets\": [{\"path\": \"/run/shaper/other.sock\"}]}}",
	  { "control", "sockets", "0" } },
	{ "metrics", "{" PORTS ", \"metrics\": {}}", { "metrics" } },
	{ "log", "{" PORTS ", \"log\": {}}", { "log" } },
	{ "lcores", "{" PORTS ", \"lcores\": {}}", { "lcores" } },
	{ "dataplane", "{" PORTS ", \"dataplane\": {}}", { "dataplane" } },
	{ "fail_open", "{" PORTS ", \"fail_open\": {}}", { "fail_open" } },
	{ "subscribers", "{" PORTS ", \"subscribers\": {}}", { "subscribers" } },
	{ "dataplane.mbufs",
	  "{" PORTS ", \"dataplane\": {\"mbufs\": {}}}",
	  { "dataplane", "mbufs" } },
};

static int failures;

static void
fail(const struct shaper_config_key *k, const char *fmt, const char *detail)
{
	fprintf(stderr, "FAIL %s.%s: ", k->section, k->key);
	fprintf(stderr, fmt, detail);
	fprintf(stderr, "\n");
	failures++;
}

/* The config text with k set to its value, or the base alone (k NULL). */
static char *
probe_text(size_t p, const struct shaper_config_key *k)
{
	json_error_t jerr;
	json_t *root = json_loads(probes[p].base, 0, &jerr), *o = root;
	char *text;

	if (root == NULL) {
		fprintf(stderr, "probe %s: %s\n", probes[p].section, jerr.text);
		exit(2);
	}
	for (int i = 0; i < 3 && probes[p].at[i] != NULL; i++)
		o = json_is_array(o) ? json_array_get(o, (size_t)atoi(probes[p].at[i]))
				     : json_object_get(o, probes[p].at[i]);
	if (k != NULL) {
		json_t *v = json_loads(k->value, JSON_DECODE_ANY, &jerr);

		if (v == NULL) {
			fail(k, "the table's value is not JSON: %s", jerr.text);
			json_decref(root);
			return NULL;
		}
		json_object_set_new(o, k->key, v);
	}
	text = json_dumps(root, JSON_PRESERVE_ORDER);
	json_decref(root);
	return text;
}

/* The value as the docs would show it: a string without its quotes. */
static void
shown(const char *value, char *buf, size_t len)
{
	size_t n = strlen(value);

	if (n >= 2 && value[0] == '"' && value[n - 1] == '"')
		snprintf(buf, len, "%.*s", (int)(n - 2), value + 1);
	else
		snprintf(buf, len, "%s", value);
}

static void
check_key(const struct shaper_config_key *k)
{
	static struct shaper_config base, with;
	char err[512], buf[128];
	char *text;
	size_t p;

	for (p = 0; p < sizeof(probes) / sizeof(probes[0]); p++)
		if (strcmp(probes[p].section, k->section) == 0)
			break;
	if (p == sizeof(probes) / sizeof(probes[0])) {
		fail(k, "%s", "no probe for this section in test_config_keys.c");
		return;
	}
	text = probe_text(p, NULL);
	if (shaper_config_load_string(text, &base, err, sizeof(err)) != 0) {
		fprintf(stderr, "probe %s does not load: %s\n", k->section, err);
		exit(2);
	}
	free(text);
	text = probe_text(p, k);
	if (text == NULL)
		return;
	if (shaper_config_load_string(text, &with, err, sizeof(err)) != 0) {
		fail(k, "the parser refuses the table's value: %s", err);
		free(text);
		return;
	}
	free(text);
	if (k->same && memcmp(&base, &with, sizeof(base)) != 0)
		fail(k, "%s is not the parser's default: setting it changes the config", k->value);
	/* The documented default is the value as shown (objects are described). */
	if (k->same && k->doc != NULL && k->value[0] != '{') {
		shown(k->value, buf, sizeof(buf));
		if (strncmp(k->doc, "0x", 2) == 0
				    ? strtoull(k->doc, NULL, 16) != strtoull(k->value, NULL, 10)
				    : strcmp(k->doc, buf) != 0)
			fail(k, "documented default \"%s\" is not the table's value", k->doc);
	}
}

int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--dump") == 0) {
		for (size_t i = 0; i < shaper_config_n_keys; i++) {
			const struct shaper_config_key *k = &shaper_config_keys[i];

			printf("%s\t%s\t%s\t%s\n", k->section, k->key, k->doc != NULL ? "1" : "0",
			       k->doc != NULL ? k->doc : "");
		}
		return 0;
	}
	for (size_t i = 0; i < shaper_config_n_keys; i++)
		check_key(&shaper_config_keys[i]);
	/* The parser lists and refuses by the same table. */
	{
		struct shaper_config c;
		char err[512];

		if (shaper_config_load_string("{" PORTS ", \"dataplane\": {\"no_such_key\": 1}}",
					      &c, err, sizeof(err)) == 0 ||
		    strstr(err, "unknown key (known: mbufs, burst") == NULL) {
			fprintf(stderr, "FAIL an unlisted key: %s\n", err);
			failures++;
		}
	}
	printf("%zu keys checked, %d failures\n", shaper_config_n_keys, failures);
	return failures == 0 ? 0 : 1;
}
