/*
 * The config's "subscribers" section (src/config/config_daemon.c) and its
 * loading (src/subscriber/config_load.c): the defaults, relative paths
 * resolved beside the config file, the refusals (both forms at once, a
 * network without devices, RSS steering with several workers, half an
 * unknown plan), several workers accepted, the
 * link's capacity taken from the bandwidth, the unknown plan applied, and
 * the preset config/isp-subscribers.json loading its sample files.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "shaper/config.h"
#include "shaper/subscriber_config.h"
#include "shaper/subscriber_pool.h"
#include "shaper/subscriber_sched.h"
#include "shaper/subscriber_unknown.h"

#define PORTS "\"ports\": {\"wan\": \"a\", \"lan\": \"b\"}"
#define ROOT  SHAPER_SOURCE_ROOT

static struct shaper_config cfg;

static int
load(const char *text, char *err, size_t errlen)
{
	return shaper_config_load_string(text, &cfg, err, errlen);
}

static void
test_defaults(void **state)
{
	char err[SHAPER_ERR_LEN];

	(void)state;
	assert_int_equal(load("{" PORTS "}", err, sizeof(err)), 0);
	assert_false(shaper_subscribers_enabled(&cfg));
	assert_int_equal(cfg.subscribers.active, 1000);
	assert_int_equal(cfg.subscribers.flow_queues, 256);
	assert_false(cfg.subscribers.unknown_plan);
	assert_int_equal(load("{" PORTS ", \"subscribers\": {}}", err, sizeof(err)), 0);
	assert_false(shaper_subscribers_enabled(&cfg));
	assert_int_equal(load("{" PORTS ", \"subscribers\": {\"devices\": \"d.csv\", "
			      "\"active\": 2000, \"scale_mins\": true, \"unknown\": "
			      "{\"download\": \"8mbit\", \"upload\": \"2mbit\"}}}",
			      err, sizeof(err)),
			 0);
	assert_true(shaper_subscribers_enabled(&cfg));
	assert_string_equal(cfg.subscribers.devices, "d.csv"); /* a string load keeps it */
	assert_int_equal(cfg.subscribers.active, 2000);
	assert_true(cfg.subscribers.scale_mins);
	assert_true(cfg.subscribers.unknown_plan);
	assert_int_equal(cfg.subscribers.unknown_rate[SHAPER_DOWN], 1000000);
	assert_int_equal(cfg.subscribers.unknown_rate[SHAPER_UP], 250000);
}

static void
refused(const char *text, const char *path, const char *what)
{
	char err[SHAPER_ERR_LEN] = "";

	if (load(text, err, sizeof(err)) == 0)
		fail_msg("accepted: %s", text);
	if (strncmp(err, path, strlen(path)) != 0 || strstr(err, what) == NULL)
		fail_msg("%s: message \"%s\" does not start with %s and say \"%s\"", text, err,
			 path, what);
}

static void
test_refusals(void **state)
{
	(void)state;
	refused("{" PORTS ", \"subscribers\": {\"devices\": \"d.csv\", \"file\": \"s.json\"}}",
		"subscribers.file", "not both");
	refused("{" PORTS ", \"subscribers\": {\"network\": \"n.json\"}}", "subscribers.network",
		"give devices too");
	refused("{" PORTS ", \"lcores\": {\"workers\": [1, 2]}, \"dataplane\": {\"steering\": "
		"\"rss\"}, \"subscribers\": {\"file\": \"s.json\"}}",
		"dataplane.steering", "a subscriber's addresses");
	refused("{" PORTS ", \"subscribers\": {\"file\": \"s.json\", \"unknown\": {\"upload\": "
		"\"1mbit\"}}}",
		"subscribers.unknown", "missing \"download\"");
	refused("{" PORTS ", \"subscribers\": {\"file\": \"s.json\", \"unknown\": \"drop\"}}",
		"subscribers.unknown", "expected \"link\"");
	refused("{" PORTS ", \"subscribers\": {\"file\": \"s.json\", \"active\": 0}}",
		"subscribers.active", "");
	refused("{" PORTS ", \"subscribers\": {\"file\": \"s.json\", \"flow_queues\": 100}}",
		"subscribers.flow_queues", "not a power of two");
	refused("{" PORTS ", \"subscribers\": {\"file\": \"s.json\", \"flow_queues\": 2048}}",
		"subscribers.flow_queues", "");
	refused("{" PORTS ", \"subscribers\": {\"files\": \"s.json\"}}", "subscribers.files",
		"unknown key");
	/* Two workers without subscribers stay fine, and with them (steered in software). */
	char err[SHAPER_ERR_LEN];
	assert_int_equal(load("{" PORTS ", \"lcores\": {\"workers\": [1, 2]}, \"subscribers\": {}}",
			      err, sizeof(err)),
			 0);
	assert_int_equal(load("{" PORTS ", \"lcores\": {\"workers\": [1, 2]}, \"subscribers\": "
			      "{\"file\": \"s.json\"}}",
			      err, sizeof(err)),
			 0);
	assert_int_equal(cfg.n_workers, 2);
	/* Autorate steers the link the subscribers share. */
	assert_int_equal(load("{" PORTS ", \"upstream\": {\"bandwidth\": {\"min\": \"10mbit\", "
			      "\"max\": \"20mbit\"}}, \"subscribers\": {\"file\": \"s.json\"}}",
			      err, sizeof(err)),
			 0);
}

#define LQOS ROOT "/tests/unit/subscriber/libreqos/"

/* Load LibreQoS files under a config whose directions are down and up; not_applied into out. */
static void
sqm_report(const char *down, const char *up, const char *csv, const char *net, char *out,
	   size_t len)
{
	char text[1024], err[SHAPER_ERR_LEN];
	struct sub_set set;

	snprintf(text, sizeof(text),
		 "{" PORTS ", \"downstream\": {%s}, \"upstream\": {%s}, \"subscribers\": "
		 "{\"devices\": \"%s\", \"network\": \"%s\", \"scale_mins\": true}}",
		 down, up, csv, net);
	if (load(text, err, sizeof(err)) != 0)
		fail_msg("%s: %s", text, err);
	if (sub_config_load(&cfg, &set, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	snprintf(out, len, "%s", set.not_applied);
	sub_set_free(&set);
}

/*
 * A circuit's sqm: cake (bare, or with the diffserv mode of the subscribers'
 * CAKEs) is what it gets; fq_codel, none and other CAKE options are named,
 * the first circuit of each kind and side, with the count.
 */
static void
test_sqm_report(void **state)
{
	char na[sizeof(((struct sub_set *)0)->not_applied)];

	(void)state;
	sqm_report("\"diffserv\": \"diffserv4\"", "\"diffserv\": \"diffserv4\"",
		   LQOS "ShapedDevices-1.5.csv", LQOS "network.json", na, sizeof(na));
	print_message("1.5: %s\n", na);
	assert_non_null(strstr(na, "sqm of 3 circuits (each is shaped by a CAKE, diffserv4 down "
				   "and diffserv4 up"));
	assert_non_null(strstr(na, "ShapedDevices-1.5.csv:5 (circuit \"201\") fq_codel both ways"));
	assert_non_null(strstr(na, "ShapedDevices-1.5.csv:7 (circuit \"203\") none up"));
	assert_null(strstr(na, "\"204\"")); /* CAKE/: cake down, the default up */
	/* 301 "cake diffserv4/fq_codel", 305 "cake besteffort", under diffserv4 down, diffserv3 up.
	 */
	sqm_report("\"diffserv\": \"diffserv4\"", "\"discipline\": \"cake\"",
		   LQOS "ShapedDevices-2.x.csv", LQOS "network-2.x.json", na, sizeof(na));
	print_message("2.x: %s\n", na);
	assert_non_null(strstr(na, "sqm of 2 circuits (each is shaped by a CAKE, diffserv4 down "
				   "and diffserv3 up"));
	assert_non_null(strstr(na, "ShapedDevices-2.x.csv:4 (circuit \"301\") fq_codel up"));
	assert_non_null(strstr(na, "ShapedDevices-2.x.csv:8 (circuit \"305\") cake options both "
				   "ways"));
	assert_null(strstr(na, "\"301\") cake options"));
	/* besteffort both ways: 305's sqm is honoured, 301's diffserv4 down is not. */
	sqm_report("\"diffserv\": \"besteffort\"", "\"diffserv\": \"besteffort\"",
		   LQOS "ShapedDevices-2.x.csv", LQOS "network-2.x.json", na, sizeof(na));
	assert_non_null(strstr(na, "sqm of 1 circuit ("));
	assert_non_null(strstr(na, "(circuit \"301\") fq_codel up"));
	assert_non_null(strstr(na, "(circuit \"301\") cake options down"));
	assert_null(strstr(na, "\"305\""));
	/* A 1.4 file has no sqm: nothing to say. */
	sqm_report("\"diffserv\": \"diffserv4\"", "\"diffserv\": \"diffserv4\"",
		   LQOS "ShapedDevices-1.4.csv", LQOS "network.json", na, sizeof(na));
	assert_null(strstr(na, "sqm"));
}

/* The preset and its samples: paths resolved beside it, whatever the working directory. */
static void
test_preset(void **state)
{
	char err[SHAPER_ERR_LEN], cwd[4096];
	struct sub_set set;
	struct sched_params sp;
	struct sub_mem m;

	(void)state;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir("/"), 0);
	if (shaper_config_load_file(ROOT "/config/isp-subscribers.json", &cfg, err, sizeof(err)) !=
	    0)
		fail_msg("%s", err);
	assert_string_equal(cfg.subscribers.devices, ROOT "/config/subscribers/ShapedDevices.csv");
	assert_string_equal(cfg.subscribers.network, ROOT "/config/subscribers/network.json");
	if (sub_config_load(&cfg, &set, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(set.nsubs, 5);
	/* The link is the bandwidth: 1500/1000 Mbit/s. */
	assert_int_equal(set.nodes[SUB_ROOT].capacity[SUB_DOWN], 1500000000ull);
	assert_int_equal(set.nodes[SUB_ROOT].capacity[SUB_UP], 1000000000ull);
	assert_int_equal(set.unknown, SUB_UNKNOWN_LINK);
	sub_config_sched_params(&cfg, &set, SHAPER_DOWN, &sp);
	assert_int_equal(sp.discipline, SCHED_DISC_CAKE);
	assert_int_equal(sp.diffserv, SCHED_DIFFSERV4);
	assert_int_equal(sp.isolation, SCHED_DUAL_DSTHOST);
	assert_int_equal(sp.rate, 200000000 / 8); /* the largest plan: c103's 200 Mbit/s */
	assert_int_equal(sub_mem_estimate_set(&set, cfg.subscribers.active, 0, &sp, &m, err,
					      sizeof(err)),
			 0);
	assert_int_equal(m.unknown_slots, 0); /* unknown addresses share the link's CAKE */
	/* The whole pool, made at start-up: room for subscribers added live and unknown ones. */
	assert_int_equal(m.active, cfg.subscribers.active);
	assert_int_equal(sp.cake_queues, 256);
	/* sch_cake's 1024 flow queues per tin, chosen: a CAKE that much larger. */
	{
		struct sched_params big;
		struct sub_mem mb;

		cfg.subscribers.flow_queues = 1024;
		sub_config_sched_params(&cfg, &set, SHAPER_DOWN, &big);
		assert_int_equal(big.cake_queues, 1024);
		assert_int_equal(sub_mem_estimate_set(&set, cfg.subscribers.active, 0, &big, &mb,
						      err, sizeof(err)),
				 0);
		assert_true(mb.total > m.total);
	}
	/* A plan for unknown addresses: their slots' records and table count too. */
	{
		struct sub_mem mu;

		set.unknown = SUB_UNKNOWN_PLAN;
		assert_int_equal(sub_mem_estimate_set(&set, cfg.subscribers.active, 100, &sp, &mu,
						      err, sizeof(err)),
				 0);
		set.unknown = SUB_UNKNOWN_LINK;
		assert_int_equal(mu.unknown_slots, 100);
		assert_int_equal(mu.idle_bytes - m.idle_bytes,
				 sub_sched_bytes_for(set.nsubs + 100) -
						 sub_sched_bytes_for(set.nsubs) +
						 sub_unknown_bytes_for(100));
		assert_true(mu.alloc_bytes > m.alloc_bytes);
		assert_int_equal(mu.pool_bytes, m.pool_bytes); /* their CAKEs are the pool's */
	}
	sub_set_free(&set);
}

/* The JSON form with a link of its own keeps it; an unknown plan in the config wins. */
static void
test_json_form(void **state)
{
	char err[SHAPER_ERR_LEN];
	struct sub_set set;

	(void)state;
	assert_int_equal(load("{" PORTS ", \"downstream\": {\"bandwidth\": \"2gbit\"}, "
			      "\"subscribers\": {\"file\": \"" ROOT
			      "/config/subscribers/isp-subscribers.json\", "
			      "\"unknown\": {\"download\": \"8mbit\", \"upload\": \"2mbit\"}}}",
			      err, sizeof(err)),
			 0);
	if (sub_config_load(&cfg, &set, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(set.nodes[SUB_ROOT].capacity[SUB_DOWN], 1500000000ull); /* the file's */
	assert_int_equal(set.unknown, SUB_UNKNOWN_PLAN);
	assert_int_equal(set.unknown_plan[SUB_DOWN].max, 8000000ull);
	assert_int_equal(set.unknown_plan[SUB_UP].max, 2000000ull);
	sub_set_free(&set);

	/* A link below the mins of the sample is refused, naming the section. */
	assert_int_equal(load("{" PORTS ", \"downstream\": {\"bandwidth\": \"50mbit\"}, "
			      "\"subscribers\": {\"devices\": \"" ROOT
			      "/config/subscribers/ShapedDevices.csv\", \"network\": \"" ROOT
			      "/config/subscribers/network.json\"}}",
			      err, sizeof(err)),
			 0);
	assert_int_not_equal(sub_config_load(&cfg, &set, err, sizeof(err)), 0);
	if (strncmp(err, "subscribers: ", 13) != 0 || strstr(err, "mins") == NULL)
		fail_msg("message: %s", err);
	sub_set_free(&set);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),  cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_preset),    cmocka_unit_test(test_sqm_report),
		cmocka_unit_test(test_json_form),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
