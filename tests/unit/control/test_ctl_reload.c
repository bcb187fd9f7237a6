/*
 * config.reload, SIGHUP and config.save without EAL: the diff of a file
 * against the running configuration (each key config.set applies, each
 * key only a restart changes, a bad file), the reload against a fake
 * backend (all of it or nothing, a direction put back when the other
 * refuses) and the save round trip (save, load: the running settings;
 * the file's comments, order, indentation and mode kept).
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "fake_backend.h"
#include "shaper/config.h"
#include "shaper/control.h"
#include "shaper/reload.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

#define PORTS "\"ports\": {\"wan\": \"net_null0\", \"lan\": \"net_null1\"}"

static char dir_tmpl[] = "/tmp/test_ctl_reload.XXXXXX";
static char *tmpdir;
static char path[256];

static void
write_file(const char *p, const char *text, mode_t mode)
{
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(p, mode), 0);
}

static char *
read_file(const char *p)
{
	FILE *f = fopen(p, "r");
	static char buf[16384];
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void
load(const char *json, struct shaper_config *c)
{
	char err[SHAPER_ERR_LEN];

	if (shaper_config_load_string(json, c, err, sizeof(err)) != 0)
		fail_msg("%s: %s", json, err);
}

/* The running parameters of a daemon started on c, as snapshots show them. */
static void
running_of(const struct shaper_config *c, struct sched_params run[SHAPER_NUM_DIRS])
{
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		run[d] = c->dir[d];
		run[d].pkt_mem = 2304; /* shaperd sets it from its pool: not a config key */
	}
}

static bool
listed(const struct ctl_reload_plan *pl, int d, const char *key)
{
	for (unsigned int i = 0; i < pl->n_changed[d]; i++)
		if (strcmp(pl->changed[d][i], key) == 0)
			return true;
	return false;
}

/* {"discipline": disc, "bandwidth": rate} with key set to value (NULL: no key). */
static const char *
dir_obj(const char *disc, const char *rate, const char *key, const char *value, char *buf)
{
	bool in_place = key != NULL &&
			(strcmp(key, "discipline") == 0 || strcmp(key, "bandwidth") == 0);
	char d[64], r[64];

	snprintf(d, sizeof(d), "\"%s\"", disc);
	snprintf(r, sizeof(r), "\"%s\"", rate);
	snprintf(buf, 256, "{\"discipline\": %s, \"bandwidth\": %s%s%s%s%s%s}",
		 in_place && key[0] == 'd' ? value : d, in_place && key[0] == 'b' ? value : r,
		 key != NULL && !in_place ? ", \"" : "", key != NULL && !in_place ? key : "",
		 key != NULL && !in_place ? "\": " : "", key != NULL && !in_place ? value : "", "");
	return buf;
}

/* Every key config.set takes, alone: listed for its direction, nothing needs a restart. */
static void
test_diff_each_applicable_key(void **state)
{
	static const struct {
		const char *disc, *key, *value;
	} cases[] = {
		{ "cake", "discipline", "\"fq_codel\"" },
		{ "cake", "bandwidth", "\"150mbit\"" },
		{ "cake", "mtu", "1500" },
		{ "cake", "overhead", "18" },
		{ "cake", "mpu", "64" },
		{ "cake", "atm", "\"atm\"" },
		{ "cake", "seed", "12345" },
		{ "cake", "lag_limit", "\"2ms\"" },
		{ "cake", "rtt", "\"20ms\"" },
		{ "cake", "target", "\"2ms\"" },
		{ "cake", "diffserv", "\"diffserv8\"" },
		{ "cake", "isolation", "\"dual-srchost\"" },
		{ "cake", "wash", "true" },
		{ "cake", "ingress", "true" },
		{ "cake", "nat", "true" },
		{ "cake", "vlan_hosts", "true" },
		{ "cake", "ecn", "false" },
		{ "cake", "ack_filter", "true" },
		{ "cake", "l4s", "true" },
		{ "cake", "l4s_step", "\"1ms\"" },
		{ "cake", "nqb", "true" },
		{ "cake", "memlimit", "\"8mb\"" },
		{ "fq_codel", "limit", "2000" },
		{ "fq_codel", "flows", "256" },
		{ "fq_codel", "quantum", "300" },
		{ "fq_codel", "memory_limit", "\"16mb\"" },
		{ "fq_codel", "interval", "\"50ms\"" },
		{ "fq_codel", "target", "\"3ms\"" },
		{ "fq_codel", "ecn", "false" },
		{ "fq_codel", "ce_threshold", "\"1ms\"" },
		{ "fq_codel", "drop_batch", "16" },
		{ "fq_codel", "l4s", "true" },
		{ "fq_codel", "l4s_step", "\"1ms\"" },
		{ "fifo", "limit", "500" },
		{ "fifo", "discipline", "\"cake\"" },
	};
	struct shaper_config *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	struct ctl_reload_plan *pl = malloc(sizeof(*pl));
	struct sched_params run[SHAPER_NUM_DIRS];
	char ja[1024], jb[1024], o1[256], o2[256];

	(void)state;
	for (size_t i = 0; i < NELEM(cases); i++) {
		for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
			snprintf(ja, sizeof(ja),
				 "{" PORTS
				 ", \"upstream\": {\"discipline\": \"%s\", \"bandwidth\": "
				 "\"100mbit\"}, \"downstream\": {\"discipline\": \"%s\", "
				 "\"bandwidth\": \"200mbit\"}}",
				 cases[i].disc, cases[i].disc);
			/* The same with the key set in direction d. */
			snprintf(jb, sizeof(jb),
				 "{" PORTS ", \"upstream\": %s, \"downstream\": %s}",
				 dir_obj(cases[i].disc, "100mbit",
					 d == SHAPER_UP ? cases[i].key : NULL, cases[i].value, o1),
				 dir_obj(cases[i].disc, "200mbit",
					 d == SHAPER_DOWN ? cases[i].key : NULL, cases[i].value,
					 o2));
			load(ja, a);
			load(jb, b);
			running_of(a, run);
			ctl_reload_diff(a, run, b, pl);
			if (pl->n_restart != 0)
				fail_msg("%s=%s: needs a restart: %s", cases[i].key, cases[i].value,
					 pl->restart[0]);
			if (!pl->change[d] || !listed(pl, d, cases[i].key))
				fail_msg("%s.%s=%s (%s): not seen as changed", shaper_dir_name[d],
					 cases[i].key, cases[i].value, cases[i].disc);
			assert_false(pl->change[1 - d]);
			/* What the direction becomes is what the file says. */
			assert_int_equal(pl->params[d].discipline, b->dir[d].discipline);
			assert_int_equal(pl->params[d].rate, b->dir[d].rate);
			assert_int_equal(pl->params[d].pkt_mem, 2304);
			assert_int_equal(ctl_dir_diff(&pl->params[d], &b->dir[d], false,
						      pl->changed[d], CTL_RELOAD_MAX_KEYS),
					 0);
		}
	}
	/* The same file: nothing to do. */
	load(ja, a);
	running_of(a, run);
	ctl_reload_diff(a, run, a, pl);
	assert_false(pl->change[SHAPER_UP]);
	assert_false(pl->change[SHAPER_DOWN]);
	assert_int_equal(pl->n_restart, 0);
	free(a);
	free(b);
	free(pl);
}

/* Every key shaperd reads only at start: named by its JSON path, alone. */
static void
test_diff_each_restart_key(void **state)
{
	static const struct {
		const char *json, *path; /* the file's extra text, the key it should name */
	} cases[] = {
		{ "\"ports\": {\"wan\": \"net_null9\", \"lan\": \"net_null1\"}",
		  "ports.wan.device" },
		{ "\"ports\": {\"wan\": \"net_null0\", \"lan\": {\"device\": \"net_null1\", "
		  "\"rx_descriptors\": 512}}",
		  "ports.lan.rx_descriptors" },
		{ "\"ports\": {\"wan\": {\"device\": \"net_null0\", \"tx_descriptors\": 2048}, "
		  "\"lan\": \"net_null1\"}",
		  "ports.wan.tx_descriptors" },
		{ PORTS ", \"upstream\": {\"emulate\": {\"delay\": \"10ms\"}}",
		  "upstream.emulate" },
		{ PORTS ", \"downstream\": {\"bandwidth\": {\"min\": \"10mbit\", \"max\": "
			"\"20mbit\"}}",
		  "downstream.bandwidth" },
		{ PORTS ", \"upstream\": {\"mtu\": 9000}", "upstream.mtu" },
		{ PORTS ", \"control\": {\"enabled\": false}", "control.enabled" },
		{ PORTS ", \"control\": {\"socket\": \"/run/other.sock\"}", "control.socket" },
		{ PORTS ", \"control\": {\"group\": \"adm\"}", "control.group" },
		{ PORTS ", \"control\": {\"mode\": \"0600\"}", "control.mode" },
		{ PORTS ", \"control\": {\"level\": \"user\"}", "control.level" },
		{ PORTS ", \"control\": {\"default_level\": \"operator\"}",
		  "control.default_level" },
		{ PORTS ", \"control\": {\"admin_group\": \"wheel\"}", "control.admin_group" },
		{ PORTS ", \"control\": {\"sockets\": [{\"path\": \"/run/ro.sock\"}]}",
		  "control.sockets" },
		{ PORTS ", \"metrics\": {\"enabled\": true}", "metrics.enabled" },
		{ PORTS ", \"metrics\": {\"enabled\": false, \"listen\": \"127.0.0.1:9999\"}",
		  "metrics.listen" },
		{ PORTS ", \"lcores\": {\"workers\": [1, 2]}", "lcores.workers" },
		{ PORTS ", \"dataplane\": {\"mbufs\": 8192}", "dataplane.mbufs" },
		{ PORTS ", \"dataplane\": {\"burst\": 16}", "dataplane.burst" },
		{ PORTS ", \"dataplane\": {\"idle_sleep\": \"50us\"}", "dataplane.idle_sleep" },
		{ PORTS ", \"dataplane\": {\"rt_priority\": 10}", "dataplane.rt_priority" },
		{ PORTS ", \"dataplane\": {\"passive_rtt\": false}", "dataplane.passive_rtt" },
		{ PORTS ", \"dataplane\": {\"shard_by\": \"flow\"}", "dataplane.shard_by" },
		{ PORTS ", \"dataplane\": {\"steering\": \"software\"}", "dataplane.steering" },
		{ PORTS ", \"dataplane\": {\"pdump\": true}", "dataplane.pdump" },
	};
	struct shaper_config *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	struct ctl_reload_plan *pl = malloc(sizeof(*pl));
	struct sched_params run[SHAPER_NUM_DIRS];
	char jb[1024];

	(void)state;
	load("{" PORTS "}", a);
	running_of(a, run);
	for (size_t i = 0; i < NELEM(cases); i++) {
		snprintf(jb, sizeof(jb), "{%s}", cases[i].json);
		load(jb, b);
		ctl_reload_diff(a, run, b, pl);
		if (pl->n_restart != 1 || strcmp(pl->restart[0], cases[i].path) != 0)
			fail_msg("%s: expected %s alone, got %u key(s), first %s", cases[i].json,
				 cases[i].path, pl->n_restart,
				 pl->n_restart > 0 ? pl->restart[0] : "-");
	}
	/* Several at once are all named; a smaller mtu needs no restart. */
	load("{\"ports\": {\"wan\": \"x\", \"lan\": \"y\"}, \"dataplane\": {\"burst\": 8}, "
	     "\"downstream\": {\"mtu\": 1500}}",
	     b);
	ctl_reload_diff(a, run, b, pl);
	assert_int_equal(pl->n_restart, 3);
	assert_string_equal(pl->restart[0], "ports.wan.device");
	assert_string_equal(pl->restart[1], "ports.lan.device");
	assert_string_equal(pl->restart[2], "dataplane.burst");
	assert_true(pl->change[SHAPER_DOWN] && listed(pl, SHAPER_DOWN, "mtu"));
	free(a);
	free(b);
	free(pl);
}

/* Autorate owns the rate: the file's bounds unchanged mean no bandwidth change. */
static void
test_diff_autorate_keeps_rate(void **state)
{
	static const char json[] =
			"{" PORTS ", \"upstream\": {\"bandwidth\": {\"min\": \"10mbit\", "
			"\"max\": \"50mbit\"}}}";
	struct shaper_config *a = malloc(sizeof(*a));
	struct ctl_reload_plan *pl = malloc(sizeof(*pl));
	struct sched_params run[SHAPER_NUM_DIRS];

	(void)state;
	load(json, a);
	running_of(a, run);
	run[SHAPER_UP].rate = 3000000; /* where autorate has taken it */
	ctl_reload_diff(a, run, a, pl);
	assert_int_equal(pl->n_restart, 0);
	assert_false(pl->change[SHAPER_UP]);
	assert_int_equal(pl->params[SHAPER_UP].rate, 3000000);
	free(a);
	free(pl);
}

/* A file that does not load: the error names the file and the JSON path. */
static void
test_prepare_bad_file(void **state)
{
	struct shaper_config *a = malloc(sizeof(*a));
	struct ctl_reload_plan *pl = malloc(sizeof(*pl));
	struct sched_params run[SHAPER_NUM_DIRS];
	char err[SHAPER_ERR_LEN];

	(void)state;
	load("{" PORTS "}", a);
	running_of(a, run);
	write_file(path, "{" PORTS ", \"upstream\": {\"bandwidth\": \"100mbps\"}}", 0600);
	assert_int_equal(ctl_reload_prepare(path, a, run, pl, err, sizeof(err)), -1);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "upstream.bandwidth: "));
	write_file(path, "{" PORTS ", \"downstream\": {\"discipline\": \"fifo\", \"rtt\": 1}}",
		   0600);
	assert_int_equal(ctl_reload_prepare(path, a, run, pl, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "downstream.rtt: "));
	write_file(path, "{" PORTS ", \"upstream\": {", 0600);
	assert_int_equal(ctl_reload_prepare(path, a, run, pl, err, sizeof(err)), -1);
	free(a);
	free(pl);
}

/* ---- against a fake backend ---- */

static struct fake F;
static struct ctl_backend BE;
static struct shaper_config *started;
static struct ctl_config_file CF;
static int refuse_dir = -1; /* apply() refuses this direction */
static unsigned int applies[SHAPER_NUM_DIRS];

static int
apply_refusing(void *opaque, enum shaper_dir d, const struct sched_params *p, char *err,
	       size_t errlen)
{
	applies[d]++;
	if ((int)d == refuse_dir) {
		snprintf(err, errlen, "the mbuf pool cannot hold that much");
		return -ENOSPC;
	}
	return fake_apply(opaque, d, p, err, errlen);
}

static int
setup_backend(void **state)
{
	(void)state;
	fake_init(&F);
	fake_backend(&F, &BE);
	BE.apply = apply_refusing;
	started = malloc(sizeof(*started));
	load("{" PORTS ", \"upstream\": {\"bandwidth\": \"100mbit\"}, "
	     "\"downstream\": {\"bandwidth\": \"280mbit\", \"diffserv\": \"diffserv4\"}}",
	     started);
	running_of(started, F.params);
	CF = (struct ctl_config_file){ .path = path, .started = started };
	BE.config_file = &CF;
	refuse_dir = -1;
	memset(applies, 0, sizeof(applies));
	return 0;
}

static int
teardown_backend(void **state)
{
	(void)state;
	free(started);
	return 0;
}

static json_t *
request(enum shaper_level level, const char *req)
{
	char *reply = ctl_handle_request_as(&BE, level, req, strlen(req), NULL);
	json_t *j = json_loads(reply, 0, NULL);

	free(reply);
	assert_non_null(j);
	return j;
}

static void
test_reload_applies(void **state)
{
	json_t *r;

	(void)state;
	write_file(path,
		   "{" PORTS ", \"upstream\": {\"bandwidth\": \"150mbit\"}, \"downstream\": "
		   "{\"bandwidth\": \"280mbit\", \"diffserv\": \"diffserv4\"}}",
		   0600);
	r = request(SHAPER_LEVEL_ADMIN, "{\"id\":1,\"cmd\":\"config.reload\"}");
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_string_equal(json_string_value(jpath(r, "result.applied.upstream.0")), "bandwidth");
	assert_int_equal(json_array_size(jpath(r, "result.applied.upstream")), 1);
	assert_int_equal(json_array_size(jpath(r, "result.applied.downstream")), 0);
	assert_string_equal(json_string_value(jpath(r, "result.config.upstream.bandwidth")),
			    "150Mbit");
	assert_int_equal(applies[SHAPER_UP], 1);
	assert_int_equal(applies[SHAPER_DOWN], 0);
	assert_int_equal(F.params[SHAPER_UP].rate, 150000000 / 8);
	json_decref(r);
	/* Again: nothing differs now, nothing is applied. */
	r = request(SHAPER_LEVEL_ADMIN, "{\"id\":2,\"cmd\":\"config.reload\"}");
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_int_equal(json_array_size(jpath(r, "result.applied.upstream")), 0);
	assert_int_equal(applies[SHAPER_UP], 1);
	json_decref(r);
}

static void
test_reload_restart_key_applies_nothing(void **state)
{
	json_t *r;

	(void)state;
	write_file(path,
		   "{\"ports\": {\"wan\": \"net_pcap7\", \"lan\": \"net_null1\"}, \"upstream\": "
		   "{\"bandwidth\": \"150mbit\"}, \"dataplane\": {\"burst\": 8}}",
		   0600);
	r = request(SHAPER_LEVEL_ADMIN, "{\"id\":3,\"cmd\":\"config.reload\"}");
	assert_true(json_is_false(json_object_get(r, "ok")));
	assert_string_equal(json_string_value(jpath(r, "error.code")), "restart_required");
	assert_string_equal(json_string_value(jpath(r, "error.keys.0")), "ports.wan.device");
	assert_string_equal(json_string_value(jpath(r, "error.keys.1")), "dataplane.burst");
	assert_non_null(strstr(json_string_value(jpath(r, "error.message")),
			       "nothing was applied"));
	assert_int_equal(applies[SHAPER_UP] + applies[SHAPER_DOWN], 0);
	assert_int_equal(F.params[SHAPER_UP].rate, 100000000 / 8);
	json_decref(r);
}

static void
test_reload_bad_file_applies_nothing(void **state)
{
	json_t *r;

	(void)state;
	write_file(path, "{" PORTS ", \"upstream\": {\"bandwidth\": \"100mbps\"}}", 0600);
	r = request(SHAPER_LEVEL_ADMIN, "{\"cmd\":\"config.reload\"}");
	assert_true(json_is_false(json_object_get(r, "ok")));
	assert_string_equal(json_string_value(jpath(r, "error.code")), "invalid_argument");
	assert_non_null(strstr(json_string_value(jpath(r, "error.message")), "upstream.bandwidth"));
	assert_null(jpath(r, "error.keys"));
	assert_int_equal(applies[SHAPER_UP] + applies[SHAPER_DOWN], 0);
	json_decref(r);
}

/* Downstream refuses after upstream took it: upstream goes back to what ran. */
static void
test_reload_all_or_nothing(void **state)
{
	json_t *r;

	(void)state;
	write_file(path,
		   "{" PORTS ", \"upstream\": {\"bandwidth\": \"150mbit\"}, \"downstream\": "
		   "{\"bandwidth\": \"300mbit\"}}",
		   0600);
	refuse_dir = SHAPER_DOWN;
	r = request(SHAPER_LEVEL_ADMIN, "{\"cmd\":\"config.reload\"}");
	assert_true(json_is_false(json_object_get(r, "ok")));
	assert_non_null(strstr(json_string_value(jpath(r, "error.message")), "mbuf pool"));
	assert_int_equal(applies[SHAPER_UP], 2); /* the change, then back */
	assert_int_equal(F.params[SHAPER_UP].rate, 100000000 / 8);
	assert_int_equal(F.params[SHAPER_DOWN].rate, 280000000 / 8);
	assert_int_equal(F.params[SHAPER_DOWN].diffserv, SCHED_DIFFSERV4);
	json_decref(r);
}

/* reload and save change the configuration: config.set's level, admin. */
static void
test_reload_save_need_admin(void **state)
{
	static const char *const cmds[] = { "config.reload", "config.save" };
	enum shaper_level need;
	char req[128];

	(void)state;
	for (size_t i = 0; i < NELEM(cmds); i++) {
		json_t *r;

		assert_int_equal(ctl_command_level(cmds[i], &need), 0);
		assert_int_equal(need, SHAPER_LEVEL_ADMIN);
		snprintf(req, sizeof(req), "{\"cmd\":\"%s\"}", cmds[i]);
		r = request(SHAPER_LEVEL_OPERATOR, req);
		assert_string_equal(json_string_value(jpath(r, "error.code")), "permission_denied");
		json_decref(r);
		snprintf(req, sizeof(req), "{\"cmd\":\"%s\",\"args\":{\"x\":1}}", cmds[i]);
		r = request(SHAPER_LEVEL_ADMIN, req);
		assert_string_equal(json_string_value(jpath(r, "error.code")), "invalid_argument");
		json_decref(r);
	}
	assert_int_equal(applies[SHAPER_UP] + applies[SHAPER_DOWN], 0);
	/* A daemon with no file to read refuses both. */
	BE.config_file = NULL;
	json_decref(request(SHAPER_LEVEL_ADMIN, "{\"cmd\":\"config.reload\"}"));
	assert_int_equal(applies[SHAPER_UP] + applies[SHAPER_DOWN], 0);
}

/* SIGHUP only notes it; the next poll reloads, once. */
static void
test_sighup(void **state)
{
	(void)state;
	write_file(path,
		   "{" PORTS ", \"upstream\": {\"bandwidth\": \"120mbit\"}, \"downstream\": "
		   "{\"bandwidth\": \"280mbit\", \"diffserv\": \"diffserv4\"}}",
		   0600);
	signal(SIGHUP, ctl_reload_on_sighup);
	ctl_reload_poll(&BE);
	assert_int_equal(applies[SHAPER_UP], 0); /* no signal yet */
	raise(SIGHUP);
	assert_int_equal(applies[SHAPER_UP], 0); /* the handler applies nothing */
	ctl_reload_poll(&BE);
	assert_int_equal(applies[SHAPER_UP], 1);
	assert_int_equal(F.params[SHAPER_UP].rate, 120000000 / 8);
	/* The signal was taken: a later edit waits for the next one. */
	write_file(path,
		   "{" PORTS ", \"upstream\": {\"bandwidth\": \"130mbit\"}, \"downstream\": "
		   "{\"bandwidth\": \"280mbit\", \"diffserv\": \"diffserv4\"}}",
		   0600);
	ctl_reload_poll(&BE);
	assert_int_equal(applies[SHAPER_UP], 1);
	assert_int_equal(F.params[SHAPER_UP].rate, 120000000 / 8);
	signal(SIGHUP, SIG_DFL);
}

/* A config.reload refused by StrictModes: the message, and nothing applied. */
static void
reload_refused(const char *why1, const char *why2)
{
	unsigned int before = applies[SHAPER_UP] + applies[SHAPER_DOWN];
	uint64_t rate = F.params[SHAPER_UP].rate;
	const char *m;
	json_t *r;

	r = request(SHAPER_LEVEL_ADMIN, "{\"cmd\":\"config.reload\"}");
	assert_true(json_is_false(json_object_get(r, "ok")));
	assert_string_equal(json_string_value(jpath(r, "error.code")), "invalid_argument");
	m = json_string_value(jpath(r, "error.message"));
	if (strstr(m, why1) == NULL || strstr(m, why2) == NULL ||
	    strstr(m, "nothing was applied") == NULL)
		fail_msg("\"%s\" does not say \"%s\" and \"%s\"", m, why1, why2);
	assert_int_equal(applies[SHAPER_UP] + applies[SHAPER_DOWN], before);
	assert_int_equal(F.params[SHAPER_UP].rate, rate);
	json_decref(r);
}

/*
 * StrictModes at every reload, as at start: the file made group-writable
 * after start is refused (config.reload and SIGHUP), and so are a
 * subscriber file and a fail-open program others may write.
 */
static void
test_reload_strict_modes(void **state)
{
	static const char body[] = "{" PORTS ", \"upstream\": {\"bandwidth\": \"150mbit\"}, "
				   "\"downstream\": {\"bandwidth\": \"280mbit\", \"diffserv\": "
				   "\"diffserv4\"}}";
	char subs[300], prog[300], text[1024], why[320];
	const char *programs[1] = { prog };
	json_t *r;

	(void)state;
	CF.strict_modes = true;
	write_file(path, body, 0664);
	snprintf(why, sizeof(why), "%s is writable by group", path);
	reload_refused(why, "(mode 0664)");
	/* SIGHUP takes the same path: logged, nothing applied. */
	signal(SIGHUP, ctl_reload_on_sighup);
	raise(SIGHUP);
	ctl_reload_poll(&BE);
	assert_int_equal(applies[SHAPER_UP], 0);
	signal(SIGHUP, SIG_DFL);
	/* Put right: the same file applies. */
	assert_int_equal(chmod(path, 0644), 0);
	r = request(SHAPER_LEVEL_ADMIN, "{\"cmd\":\"config.reload\"}");
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_int_equal(F.params[SHAPER_UP].rate, 150000000 / 8);
	json_decref(r);

	/* A subscriber file the file names. */
	snprintf(subs, sizeof(subs), "%s/subs.json", tmpdir);
	write_file(subs, "{\"subscribers\": []}", 0646);
	snprintf(text, sizeof(text),
		 "{" PORTS ", \"subscribers\": {\"file\": \"subs.json\"}, \"upstream\": "
		 "{\"bandwidth\": \"120mbit\"}}");
	write_file(path, text, 0644);
	snprintf(why, sizeof(why), "subscribers.file: %s is writable by others", subs);
	reload_refused(why, "(mode 0646)");
	assert_int_equal(chmod(subs, 0644), 0);
	/* Past StrictModes now: the section itself is what a restart changes. */
	r = request(SHAPER_LEVEL_ADMIN, "{\"cmd\":\"config.reload\"}");
	assert_string_equal(json_string_value(jpath(r, "error.code")), "restart_required");
	json_decref(r);

	/* The fail-open program loaded at start. */
	snprintf(prog, sizeof(prog), "%s/failopen.bpf.o", tmpdir);
	write_file(prog, "", 0664);
	CF.programs = programs;
	CF.n_programs = 1;
	write_file(path,
		   "{\"ports\": {\"wan\": \"net_af_xdp0,iface=w0\", \"lan\": "
		   "\"net_af_xdp1,iface=l0\"}, \"fail_open\": {\"enabled\": true}}",
		   0644);
	snprintf(why, sizeof(why), "fail_open.program: %s is writable by group", prog);
	reload_refused(why, "run chmod go-w on it");
	/* Without StrictModes (--no-strict-modes) none of it is looked at. */
	CF.strict_modes = false;
	r = request(SHAPER_LEVEL_ADMIN, "{\"cmd\":\"config.reload\"}");
	assert_string_equal(json_string_value(jpath(r, "error.code")), "restart_required");
	json_decref(r);
	CF.programs = NULL;
	CF.n_programs = 0;
	unlink(subs);
	unlink(prog);
}

/* ---- config.save ---- */

static const char saved_file[] = "{\n"
				 "\t\"comment\": [\"the bed\", \"keep me\"],\n"
				 "\t\"ports\": {\n"
				 "\t\t\"wan\": \"net_null0\",\n"
				 "\t\t\"lan\": \"net_null1\"\n"
				 "\t},\n"
				 "\t\"upstream\": {\n"
				 "\t\t\"bandwidth\": \"100mbit\",\n"
				 "\t\t\"mpu\": 32,\n"
				 "\t\t\"overhead\": \"docsis\",\n"
				 "\t\t\"rtt\": \"internet\"\n"
				 "\t},\n"
				 "\t\"downstream\": {\n"
				 "\t\t\"bandwidth\": \"280mbit\",\n"
				 "\t\t\"diffserv\": \"diffserv4\"\n"
				 "\t},\n"
				 "\t\"dataplane\": {\n"
				 "\t\t\"burst\": 16\n"
				 "\t}\n"
				 "}\n";

static void
test_save_round_trip(void **state)
{
	struct sched_params run[SHAPER_NUM_DIRS];
	struct shaper_config *c = malloc(sizeof(*c)), *after = malloc(sizeof(*after));
	struct ctl_reload_plan *w = malloc(sizeof(*w));
	const bool skip[SHAPER_NUM_DIRS] = { false, false };
	char err[SHAPER_ERR_LEN], *text;
	const char *keys[CTL_RELOAD_MAX_KEYS];
	char bak[300];
	struct stat st;

	(void)state;
	write_file(path, saved_file, 0640);
	load(saved_file, c);
	running_of(c, run);
	/* Unchanged: the file is left alone. */
	assert_int_equal(ctl_config_save_file(path, run, skip, false, w, err, sizeof(err)), 0);
	assert_string_equal(read_file(path), saved_file);
	/* What config.set could have done since. */
	run[SHAPER_UP].rate = 150000000 / 8;
	run[SHAPER_UP].mpu = 0; /* below the 64 "docsis" sets: must come after it */
	run[SHAPER_UP].rtt_us = 20000;
	run[SHAPER_UP].target_us = 1000;
	run[SHAPER_UP].seed = 777;
	sched_params_default(&run[SHAPER_DOWN], SCHED_DISC_FQ_CODEL);
	run[SHAPER_DOWN].rate = 35000000;
	run[SHAPER_DOWN].fqc_limit = 2000;
	run[SHAPER_DOWN].seed = c->dir[SHAPER_DOWN].seed;
	if (ctl_config_save_file(path, run, skip, false, w, err, sizeof(err)) != 1)
		fail_msg("save: %s", err);
	text = strdup(read_file(path));
	assert_non_null(text);
	/* The file as it was, beside it, with its mode. */
	snprintf(bak, sizeof(bak), "%s.bak", path);
	assert_string_equal(read_file(bak), saved_file);
	assert_int_equal(stat(bak, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	/* Loads to the running settings. */
	load(text, after);
	for (int d = 0; d < SHAPER_NUM_DIRS; d++)
		if (ctl_dir_diff(&after->dir[d], &run[d], false, keys, CTL_RELOAD_MAX_KEYS) != 0)
			fail_msg("%s.%s differs after the save:\n%s", shaper_dir_name[d], keys[0],
				 text);
	/* The rest kept: comments, other sections, tabs; diffserv gone with cake. */
	assert_non_null(strstr(text, "\"keep me\""));
	assert_non_null(strstr(text, "\n\t\"dataplane\": {\n\t\t\"burst\": 16\n\t}"));
	assert_non_null(strstr(text, "\"overhead\": \"docsis\""));
	assert_null(strstr(text, "diffserv"));
	assert_int_equal(after->burst, 16);
	assert_true(strstr(text, "\"comment\"") < strstr(text, "\"ports\""));
	assert_true(w->n_changed[SHAPER_UP] >= 4 && w->n_changed[SHAPER_DOWN] >= 2);
	/* Same mode; no temporary file left behind. */
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(system("test $(ls -A /tmp/test_ctl_reload.* | grep -c '^\\.') = 0"), 0);
	/* A second save keeps the first one's file, not the original. */
	run[SHAPER_UP].rate = 120000000 / 8;
	if (ctl_config_save_file(path, run, skip, false, w, err, sizeof(err)) != 1)
		fail_msg("save: %s", err);
	assert_string_equal(read_file(bak), text);
	unlink(bak);
	free(text);
	free(c);
	free(after);
	free(w);
}

/* Through the protocol: the running settings of the fake land in the file. */
static void
test_save_request(void **state)
{
	struct shaper_config *after = malloc(sizeof(*after));
	json_t *r;

	(void)state;
	write_file(path,
		   "{" PORTS ", \"upstream\": {\"bandwidth\": \"100mbit\"}, \"downstream\": "
		   "{\"bandwidth\": \"280mbit\", \"diffserv\": \"diffserv4\"}}",
		   0600);
	F.params[SHAPER_UP].rate = 50000000 / 8;
	r = request(SHAPER_LEVEL_ADMIN, "{\"cmd\":\"config.save\"}");
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_true(json_is_true(jpath(r, "result.written")));
	assert_string_equal(json_string_value(jpath(r, "result.keys.upstream.0")), "bandwidth");
	assert_non_null(strstr(json_string_value(jpath(r, "result.backup")), ".bak"));
	assert_int_equal(access(json_string_value(jpath(r, "result.backup")), R_OK), 0);
	unlink(json_string_value(jpath(r, "result.backup")));
	json_decref(r);
	load(read_file(path), after);
	assert_int_equal(after->dir[SHAPER_UP].rate, 50000000 / 8);
	free(after);
}

/* A file shaperd may not write: refused, clearly, and left as it was. */
static void
test_save_not_writable(void **state)
{
	struct sched_params run[SHAPER_NUM_DIRS];
	struct shaper_config *c = malloc(sizeof(*c));
	const bool skip[SHAPER_NUM_DIRS] = { false, false };
	pid_t pid;
	int status;

	(void)state;
	write_file(path, saved_file, 0644);
	load(saved_file, c);
	running_of(c, run);
	run[SHAPER_UP].rate = 1000000;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ctl_reload_plan w;
		char err[SHAPER_ERR_LEN];

		/* root may write anything: try as nobody, or with the file read-only. */
		if (getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
			_exit(10);
		if (getuid() != 0 && chmod(path, 0444) != 0 && errno != EPERM)
			_exit(11);
		if (ctl_config_save_file(path, run, skip, false, &w, err, sizeof(err)) != -1)
			_exit(12);
		_exit(strstr(err, "not writable") != NULL && strstr(err, path) != NULL ? 0 : 13);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_string_equal(read_file(path), saved_file);
	free(c);
}

static int
group_setup(void **state)
{
	(void)state;
	tmpdir = mkdtemp(dir_tmpl);
	if (tmpdir == NULL)
		return -1;
	chmod(tmpdir, 0755);
	snprintf(path, sizeof(path), "%s/shaper.json", tmpdir);
	return 0;
}

static int
group_teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_diff_each_applicable_key),
		cmocka_unit_test(test_diff_each_restart_key),
		cmocka_unit_test(test_diff_autorate_keeps_rate),
		cmocka_unit_test(test_prepare_bad_file),
		cmocka_unit_test_setup_teardown(test_reload_applies, setup_backend,
						teardown_backend),
		cmocka_unit_test_setup_teardown(test_reload_restart_key_applies_nothing,
						setup_backend, teardown_backend),
		cmocka_unit_test_setup_teardown(test_reload_bad_file_applies_nothing, setup_backend,
						teardown_backend),
		cmocka_unit_test_setup_teardown(test_reload_all_or_nothing, setup_backend,
						teardown_backend),
		cmocka_unit_test_setup_teardown(test_reload_save_need_admin, setup_backend,
						teardown_backend),
		cmocka_unit_test_setup_teardown(test_sighup, setup_backend, teardown_backend),
		cmocka_unit_test_setup_teardown(test_reload_strict_modes, setup_backend,
						teardown_backend),
		cmocka_unit_test(test_save_round_trip),
		cmocka_unit_test_setup_teardown(test_save_request, setup_backend, teardown_backend),
		cmocka_unit_test(test_save_not_writable),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
