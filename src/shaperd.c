/*
 * shaperd: wiring only. Parse our own options (after "--"), load and
 * validate the config before EAL touches any device, then start stage by
 * stage (the table at the end: control socket, EAL, ports, workers, ...),
 * and on SIGINT/SIGTERM or a stage that fails undo it all in reverse,
 * returning every mbuf to its pool.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_version.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mempool.h>

#include <jansson.h>

#include <systemd/sd-daemon.h>

#include "shaper/classify.h"
#include "shaper/config.h"
#include "shaper/control.h"
#include "shaper/dataplane.h"
#include "shaper/subscriber_config.h"
#include "shaper/subscriber_pool.h"
#include "shaper/watchdog.h"
#include "shaper/failopen.h"
#include "shaper/tc_translate.h"
#include "shaper/metrics.h"
#include "shaper/pdump.h"
#include "shaper/reload.h"
#include "shaper/sched.h"
#include "shaper/share.h"
#include "shaper/log.h"

#include "check_config.h"

#define LINK_WATCH_MS 500u
#define LINK_WAIT_MS  3000 /* how long start-up waits for the links */

struct app {
	struct shaper_config cfg;
	/*
	 * cfg with the descriptor counts the drivers settled on: what the mbuf
	 * budget counts. cfg itself keeps the file's values (reload compares them).
	 */
	struct shaper_config sized;
	struct rte_mempool *pool[SHAPER_NUM_DIRS]; /* each direction receives into its own */
	uint32_t pool_mbufs[SHAPER_NUM_DIRS];
	struct dp_port port[SHAPER_NUM_PORTS];
	bool port_open[SHAPER_NUM_PORTS];
	uint64_t reconnect_at_ms[SHAPER_NUM_PORTS]; /* next restart of a port down; 0 = none due */
	unsigned int n_shards;                      /* = workers: each shards both directions */
	bool rss_sharded; /* the NICs put frames on their shard's queue: no steering */
	struct dp_lcore *lc[SHAPER_MAX_WORKERS]; /* each worker's context, on its NUMA node */
	struct dp_dir *dir[SHAPER_NUM_DIRS][SHAPER_MAX_WORKERS]; /* its shards, in lc[] */
	struct share_group *share[SHAPER_NUM_DIRS];              /* with several shards */
	struct dp_rtt *rtt[SHAPER_MAX_WORKERS]; /* each worker's, both directions */
	const char *stats_file;
	struct dp_control ctl; /* what the control plane and telemetry reach */
	struct ctl_backend be;
	struct ctl_server *srv; /* opened before EAL, served once the workers run */
	/* What config.reload and SIGHUP read again. */
	struct ctl_config_file config_file;
	struct dp_failopen failopen; /* with fail_open: the lease on the ports' XDP program */
	/* with fail_open: the XDP and tc objects (StrictModes checks them at every reload) */
	char program[2][SHAPER_PATH_LEN * 2 + 64];
	const char *programs[2];
	struct dp_ar_group *ar_group; /* autorate with several workers */
	bool subs_attached;           /* per-subscriber shaping on worker 0 (dp_subs_attach) */
	/* Start-up and shutdown (the stages below). */
	const char *config_path;
	int eal_argc; /* EAL's options: argv[1..eal_argc - 1] */
	char **argv;
	bool eal_up, pdump_on;
	unsigned int driver_held; /* mbufs af_xdp took at start and keeps (wait_links) */
	json_t *counters;         /* the exit counters, read before anything is freed */
	int exit_code;
};

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: shaperd [EAL options] -- -c CONFIG.json [--check-config | --print-tc] [--stats-file FILE]\n"
		"       shaperd --version | --help\n"
		"\n"
		"A transparent WAN/LAN bridge that shapes both directions with CAKE,\n"
		"fq_codel or a plain FIFO.\n"
		"\n"
		"  -c, --config FILE     configuration (JSON); see config/*.json\n"
		"      --log-level LEVEL error, warning, notice, info (default) or debug;\n"
		"                        overrides log.level\n"
		"      --check-config    validate the configuration and exit (0 = valid)\n"
		"      --print-tc        print tc commands that give the ports' kernel\n"
		"                        interfaces the same qdiscs (for fail-open) and exit\n"
		"      --stats-file FILE write the exit counters as JSON to FILE\n"
		"      --no-strict-modes start and reload even if others could write the config\n"
		"                        file, a file it names or a socket directory (e.g. a\n"
		"                        checkout in a home)\n"
		"  -V, --version         print the version and exit\n"
		"  -h, --help            print this help and exit\n"
		"\n"
		"example: shaperd --no-huge -m 512 --no-pci -l 0,1 -- -c /etc/shaper/shaper.json\n");
}

static void
on_signal(int sig)
{
	(void)sig;
	dp_request_stop();
}

/* Our options come after "--"; EAL gets what is before it. */
static int
split_args(int argc, char **argv, int *eal_argc, int *app_first)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			*eal_argc = i;
			*app_first = i + 1;
			return 0;
		}
	/* No "--": everything is ours and EAL runs with its defaults. */
	*eal_argc = 1;
	*app_first = 1;
	return 0;
}

static bool strict_modes = true;
static bool log_level_given; /* --log-level wins over log.level */
static bool print_tc;        /* --print-tc: the config in tc's words, then exit */

static int
parse_app_args(int argc, char **argv, const char **config, bool *check_only,
	       const char **stats_file)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 'k' },
		{ "print-tc", no_argument, NULL, 'T' },
		{ "stats-file", required_argument, NULL, 's' },
		{ "no-strict-modes", no_argument, NULL, 'S' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "c:Vh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			*config = optarg;
			break;
		case 'k':
			*check_only = true;
			break;
		case 'T':
			print_tc = true;
			break;
		case 's':
			*stats_file = optarg;
			break;
		case 'L': {
			enum shaper_log_level level;

			if (shaper_log_level_parse(optarg, &level) != 0) {
				shaper_log_error(
						"--log-level: \"%s\" is not a level (error, warning, "
						"notice, info, debug)",
						optarg);
				return -1;
			}
			shaper_log_set_level(level);
			log_level_given = true;
			break;
		}
		case 'S':
			strict_modes = false;
			break;
		case 'V':
			printf("shaperd %s (%s)\n", SHAPER_VERSION, rte_version());
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		shaper_log_error("unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (*config == NULL) {
		shaper_log_error("no configuration given (use -- -c CONFIG.json)");
		return -1;
	}
	return 0;
}

static void
print_counters(json_t *ports, json_t *dirs)
{
	const char *key;
	json_t *v;

	printf("%-10s %12s %12s %10s %10s %10s\n", "port", "rx_packets", "tx_packets", "rx_missed",
	       "rx_errors", "tx_errors");
	json_object_foreach (ports, key, v)
		printf("%-10s %12lld %12lld %10lld %10lld %10lld\n", key,
		       json_integer_value(json_object_get(v, "rx_packets")),
		       json_integer_value(json_object_get(v, "tx_packets")),
		       json_integer_value(json_object_get(v, "rx_missed")),
		       json_integer_value(json_object_get(v, "rx_errors")),
		       json_integer_value(json_object_get(v, "tx_errors")));
	printf("%-10s %12s %12s %10s  %s\n", "direction", "rx_packets", "tx_packets", "qlen",
	       "dropped by reason");
	json_object_foreach (dirs, key, v) {
		json_t *reasons = json_object_get(v, "drop_reasons"), *n;
		const char *reason;

		printf("%-10s %12lld %12lld %10lld ", key,
		       json_integer_value(json_object_get(v, "rx_packets")),
		       json_integer_value(json_object_get(v, "tx_packets")),
		       json_integer_value(json_object_get(v, "qlen")));
		json_object_foreach (reasons, reason, n)
			printf(" %s=%lld", reason, json_integer_value(n));
		printf("\n");
	}
}

/* Counters at exit, read while the ports still exist. */
static json_t *
collect_counters(struct app *a)
{
	json_t *root = json_object(), *ports = json_object(), *dirs = json_object();

	for (int r = 0; r < shaper_n_ports(&a->cfg); r++)
		if (a->port_open[r]) {
			struct ctl_port_counters pc;

			dp_port_counters(&a->port[r], &pc);
			json_object_set_new(ports, shaper_port_label(&a->cfg, r),
					    ctl_port_stats_json(&pc));
		}
	for (int d = 0; d < SHAPER_NUM_DIRS; d++)
		if (a->dir[d][0] != NULL && a->dir[d][0]->sched != NULL) {
			struct sched_stats *st = calloc(1, sizeof(*st));
			struct sched_stats *one = calloc(1, sizeof(*one));
			struct ctl_dir_counters c;

			if (st == NULL || one == NULL) {
				free(st);
				free(one);
				continue;
			}
			/* Every shard's counters, queues (0 after the drain, unless lost) and RTT.
			 */
			for (unsigned int i = 0; i < a->n_shards && a->dir[d][i] != NULL; i++) {
				const struct dp_dir *dd = a->dir[d][i];
				struct ctl_dir_counters sc = dd->stats;

				dp_dir_sched_stats(dd, i == 0 ? st : one);
				dp_dir_count_queued(dd, &sc);
				dp_rtt_publish(a->dir[d][i], &sc.rtt, dp_now_ns());
				if (i == 0) {
					c = sc;
				} else {
					ctl_dir_counters_merge(&c, &sc);
					sched_stats_merge(st, one);
				}
			}
			json_object_set_new(
					dirs, shaper_dir_name[d],
					ctl_dir_stats_json(&c, st,
							   sched_get_params(a->dir[d][0]->sched)));
			free(st);
			free(one);
		}
	ctl_dir_port_errors(dirs, ports);
	json_object_set_new(root, "ports", ports);
	json_object_set_new(root, "directions", dirs);
	return root;
}

static enum shaper_port_role
dir_input_port(const struct app *a, int d)
{
	return shaper_dir_rx_slot(&a->cfg, (enum shaper_dir)d);
}

/* On a stick the upstream receives into the downstream's pool: the one port's. */
static bool
pool_shared(const struct app *a, int d)
{
	return a->cfg.single_port && d == SHAPER_UP;
}

/* A table on stdout, and JSON for scripts if asked. */
static void
report(struct app *a, json_t *root, unsigned int mbufs_in_use, unsigned int kept)
{
	json_object_set_new(root, "mbufs_in_use", json_integer(mbufs_in_use));
	json_object_set_new(root, "mbufs_kept_by_driver", json_integer(kept));
	print_counters(json_object_get(root, "ports"), json_object_get(root, "directions"));
	printf("mbufs in use at exit: %u\n", mbufs_in_use);
	if (kept != 0)
		printf("mbufs the af_xdp driver took for its fill ring at start and keeps after "
		       "close: %u\n",
		       kept);
	if (a->stats_file != NULL && json_dump_file(root, a->stats_file, JSON_INDENT(2)) != 0)
		shaper_log_warning("cannot write %s", a->stats_file);
	json_decref(root);
}

/*
 * Passive RTT needs both directions of a flow in one table: each worker
 * has one for the two directions of its shard (a host's or a flow's
 * packets both ways are on one shard). Autorate steers one link rate: with
 * several workers, shard 0's controller steers the share group's link rate
 * from every shard's samples (dp_rtt_group_create).
 */
static int
setup_rtt(struct app *a)
{
	char err[SHAPER_ERR_LEN];
	bool autorate = a->cfg.autorate[SHAPER_UP].enabled || a->cfg.autorate[SHAPER_DOWN].enabled;

	if (!a->cfg.passive_rtt && !autorate)
		return 0; /* dataplane.passive_rtt off: no table, no per-packet cost */
	for (unsigned int i = 0; i < a->n_shards; i++) {
		struct dp_rtt *r = dp_rtt_create(&a->cfg);

		if (r == NULL) {
			shaper_log_error("cannot allocate the RTT table");
			return -1;
		}
		a->rtt[i] = r;
		a->dir[SHAPER_UP][i]->rtt = a->dir[SHAPER_DOWN][i]->rtt = r;
	}
	if (autorate && a->n_shards > 1) {
		a->ar_group = dp_rtt_group_create(a->rtt, a->dir[SHAPER_UP], a->dir[SHAPER_DOWN],
						  a->n_shards, err, sizeof(err));
		if (a->ar_group == NULL) {
			shaper_log_error("autorate: %s", err);
			return -1;
		}
	}
	return 0;
}

/* The emulator of one shard of direction d (each shard delays its own frames). */
static int
setup_emulator(struct app *a, int d, struct dp_dir *dd)
{
	const struct shaper_emulate_config *ec = &a->cfg.emulate[d];
	struct emu_params ep = {
		.delay_ns = ec->delay_ns,
		.jitter_ns = ec->jitter_ns,
		.loss_ppm = ec->loss_ppm,
		.seed = ec->seed ^ dd->shard,
		.limit = ec->limit,
	};

	if (!emu_params_active(&ep))
		return 0;
	dd->emu = emu_create(&ep);
	dd->emu_path = ep;
	if (dd->emu == NULL) {
		shaper_log_error("%s.emulate: cannot create the delay line", shaper_dir_name[d]);
		return -1;
	}
	return 0;
}

/*
 * With several shards: one link rate shared among them, and software
 * steering unless the NICs' RSS already puts each frame on its shard.
 */
static int
setup_shards(struct app *a, int d)
{
	struct dp_dir *shards[SHAPER_MAX_WORKERS];
	char err[SHAPER_ERR_LEN];
	uint64_t now = dp_now_ns();

	if (a->n_shards == 1)
		return 0;
	a->share[d] = rte_zmalloc("share", sizeof(*a->share[d]), SHARE_LINE);
	if (a->share[d] == NULL || share_group_init(a->share[d], a->cfg.dir[d].rate, a->n_shards,
						    a->cfg.dir[d].mtu, err, sizeof(err)) != 0) {
		shaper_log_error("%s.bandwidth: %s", shaper_dir_name[d],
				 a->share[d] == NULL ? "out of memory" : err);
		return -1;
	}
	for (unsigned int i = 0; i < a->n_shards; i++) {
		struct dp_dir *dd = a->dir[d][i];

		shards[i] = dd;
		dd->share_group = a->share[d];
		dd->share_by = a->cfg.shard_by;
		share_shard_init(&dd->share, a->share[d], i, dd->sched, now);
	}
	if (a->rss_sharded)
		return 0;
	if (dp_steer_create(shards, a->n_shards, a->cfg.shard_by, err, sizeof(err)) != 0) {
		shaper_log_error("%s: %s", shaper_dir_name[d], err);
		return -1;
	}
	return 0;
}

/* One port on a stick: each worker sorts its rx queue into its two directions. */
static int
setup_sticks(struct app *a)
{
	if (!a->cfg.single_port)
		return 0;
	for (unsigned int i = 0; i < a->n_shards; i++) {
		struct dp_dir *up = a->dir[SHAPER_UP][i], *down = a->dir[SHAPER_DOWN][i];

		up->stick = down->stick =
				dp_stick_create(up, down, a->cfg.vlan[SHAPER_PORT_WAN],
						a->cfg.vlan[SHAPER_PORT_LAN], dp_dir_socket(up));
		if (up->stick == NULL) {
			shaper_log_error("ports.single: out of memory for worker %u's VLAN sorting",
					 i);
			return -1;
		}
	}
	return 0;
}

static int
setup_dirs(struct app *a)
{
	char err[SHAPER_ERR_LEN];
	struct classify_key shared_key;

	/*
	 * One key both ways: shards pick by the LAN host's hash in both directions,
	 * and passive RTT finds a flow by the same hash from either side.
	 */
	classify_key_init(&shared_key, a->cfg.dir[SHAPER_UP].seed ^ 0x9e3779b97f4a7c15ULL);
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		for (unsigned int i = 0; i < a->n_shards; i++) {
			struct dp_dir *dd = a->dir[d][i];
			struct dp_mbuf_budget b;

			dd->dir = (enum shaper_dir)d;
			dd->shard = i;
			dd->queue = (uint16_t)i;
			dd->n_shards = a->n_shards;
			dd->pool = a->pool[d];
			dd->truesize = dp_mbuf_truesize(a->pool[d]);
			a->cfg.dir[d].pkt_mem = dd->truesize;
			dd->pool_mbufs = a->pool_mbufs[d];
			dp_mbuf_budget_dir(&a->sized, (enum shaper_dir)d, &a->cfg.dir[d],
					   dd->truesize, &b);
			dd->mbuf_fixed = b.fixed;
			dd->rx_port = a->port[dir_input_port(a, d)].port_id;
			dd->tx_port = a->port[shaper_dir_tx_slot(&a->cfg, (enum shaper_dir)d)]
						      .port_id;
			dd->key = shared_key;
			dd->sched = sched_create_on(&a->cfg.dir[d], dp_dir_alloc(dd), err,
						    sizeof(err));
			if (dd->sched == NULL) {
				shaper_log_error("%s: %s", shaper_dir_name[d], err);
				return -1;
			}
			if (setup_emulator(a, d, dd) != 0)
				return -1;
			if (dp_dir_control_init(dd) != 0) {
				shaper_log_error("%s: cannot create the control mailbox",
						 shaper_dir_name[d]);
				return -1;
			}
		}
		if (setup_shards(a, d) != 0)
			return -1;
	}
	if (setup_sticks(a) != 0)
		return -1;
	return setup_rtt(a);
}

/*
 * Per-subscriber shaping around every worker's two schedulers: with several
 * workers each shapes the subscribers of its shard (dp_subs_attach_shards).
 * A discipline change is refused while it is on (the worker's
 * DP_MSG_SWAP), and the subscribers section only changes with a restart,
 * so nothing rebuilds the schedulers under it until teardown.
 */
static int
attach_subscribers(struct app *a)
{
	char err[SHAPER_ERR_LEN];
	struct sub_sched_stats st;

	if (!shaper_subscribers_enabled(&a->cfg))
		return 0;
	if (dp_subs_attach_shards(a->dir[SHAPER_DOWN], a->dir[SHAPER_UP], a->n_shards, &a->cfg, err,
				  sizeof(err)) != 0) {
		/* The loaders' messages name the section or the file already. */
		shaper_log_error("%s%s",
				 strncmp(err, "subscribers", 11) == 0 ? "" : "subscribers: ", err);
		return -1;
	}
	a->subs_attached = true;
	sub_sched_get_stats(a->dir[SHAPER_DOWN][0]->subs, SUB_DOWN, &st);
	{
		const struct sub_set *set = dp_subs_set(a->dir[SHAPER_DOWN][0]);
		uint32_t used = 0;

		for (uint32_t i = 0; i < set->nsubs; i++)
			used += sub_slot_used(&set->subs[i]);
		shaper_log_info("subscribers: %u shaped per subscriber from %s (%u spare slots for "
				"more), %u CAKEs per direction%s",
				used, set->subs_file, set->nsubs - used, st.pool_free,
				a->n_shards > 1 ? " on each worker, each subscriber on one worker "
						  "(by its top-level node)"
						: "");
		if (set->not_applied[0] != '\0')
			shaper_log_notice("subscribers: read but not applied: %s",
					  set->not_applied);
		if (sub_sched_unknown_slots(a->dir[SHAPER_DOWN][0]->subs) != 0)
			shaper_log_info("subscribers: addresses no subscriber owns get a plan each, "
					"up to %u at once%s",
					sub_sched_unknown_slots(a->dir[SHAPER_DOWN][0]->subs),
					a->n_shards > 1 ? " per worker" : "");
	}
	return 0;
}

/*
 * With several workers: RSS does the steering when both ports hash the
 * LAN host (or the flow, symmetrically) onto the same queue numbers;
 * otherwise, or when the config says so, the workers steer in software.
 */
static int
choose_steering(struct app *a)
{
	char why[256];
	int rc;

	if (a->n_shards == 1)
		return 0;
	if (shaper_subscribers_enabled(&a->cfg)) {
		/*
		 * RSS would put a subscriber's addresses on different queues: the
		 * workers steer each frame to its subscriber's worker after the
		 * lookup (the config refuses "rss" with subscribers).
		 */
		a->rss_sharded = false;
		shaper_log_info("%u workers, subscribers steered in software to their worker "
				"(unknown addresses by %s)",
				a->n_shards, shaper_shard_by_name(a->cfg.shard_by));
		return 0;
	}
	rc = dp_steering_choose(&a->port[SHAPER_PORT_LAN], &a->port[SHAPER_PORT_WAN], a->n_shards,
				a->cfg.steering, why, sizeof(why));
	if (rc < 0) {
		shaper_log_error("dataplane.steering: \"rss\", but %s; use \"auto\" or "
				 "\"software\"",
				 why);
		return -1;
	}
	a->rss_sharded = rc == 1;
	shaper_log_info("%u workers, shards by %s, steering by %s (%s)", a->n_shards,
			shaper_shard_by_name(a->cfg.shard_by), a->rss_sharded ? "RSS" : "software",
			why);
	return 0;
}

/*
 * Worker i serves shard i of both directions, on its own lcore: its
 * context (the worker and both shards) is made on that lcore's NUMA node
 * before anything fills the shards.
 */
static int
create_workers(struct app *a)
{
	unsigned int lcore = rte_get_main_lcore();
	unsigned int n = a->cfg.n_workers;

	for (unsigned int w = 0; w < n; w++) {
		struct dp_worker *wk;

		if (a->cfg.worker_lcore[w] != 0) {
			lcore = a->cfg.worker_lcore[w];
			if (!rte_lcore_is_enabled(lcore) || lcore == rte_get_main_lcore()) {
				shaper_log_error("lcores.workers[%u]: lcore %u is not an enabled "
						 "worker lcore (give EAL -l with it)",
						 w, lcore);
				return -1;
			}
		} else {
			lcore = rte_get_next_lcore(lcore, 1, 0);
			if (lcore >= RTE_MAX_LCORE) {
				shaper_log_error("%u worker lcore(s) needed: give EAL -l with "
						 "the main lcore plus %u more (e.g. -l 0,1)",
						 n, n);
				return -1;
			}
		}
		a->lc[w] = dp_lcore_create(lcore);
		if (a->lc[w] == NULL) {
			shaper_log_error("no memory for the worker on lcore %u", lcore);
			return -1;
		}
		wk = &a->lc[w]->w;
		wk->burst = a->cfg.burst;
		wk->idle_sleep_us = a->cfg.idle_sleep_us;
		wk->rt_priority = a->cfg.rt_priority;
		/* With fail-open a worker drops what it reads until the lease is granted. */
		wk->line_until = a->cfg.fail_open ? &a->failopen.line_until : NULL;
		for (int d = 0; d < SHAPER_NUM_DIRS; d++)
			a->dir[d][w] = &a->lc[w]->dir[d];
	}
	shaper_log_info("%u worker(s); cache lines their hot state shares: %u", n,
			dp_lcore_shared_lines(a->lc, n));
	return 0;
}

static int
launch_workers(struct app *a)
{
	for (unsigned int w = 0; w < a->cfg.n_workers; w++) {
		int rc = rte_eal_remote_launch(dp_worker_main, &a->lc[w]->w, a->lc[w]->w.lcore);

		if (rc != 0) {
			shaper_log_error("cannot launch worker on lcore %u: %s", a->lc[w]->w.lcore,
					 strerror(-rc));
			dp_request_stop();
			return -1;
		}
	}
	return 0;
}

/*
 * systemd's watchdog (WatchdogSec= in the unit) is fed only while every
 * worker still turns: a stuck worker gets the service restarted. The
 * control thread feeds it, so a feed also proves that thread turns: each
 * pass of run_control's loop is bounded (the control socket's CTL_POLL_*
 * budget, a scrape's cached text), and feed_watchdog runs before and
 * after the socket's turn, so no client can keep the thread from it.
 */
static void
feed_watchdog(struct app *a, struct dp_watchdog *wd, bool *reported)
{
	uint64_t beats[SHAPER_MAX_WORKERS] = { 0 }, since = 0;
	unsigned int w = 0;

	for (unsigned int i = 0; i < wd->n; i++)
		beats[i] = __atomic_load_n(&a->lc[i]->w.heartbeat, __ATOMIC_RELAXED);
	switch (dp_watchdog_check(wd, beats, shaper_monotonic_ns(), &w, &since)) {
	case DP_WD_WAIT:
		break;
	case DP_WD_ALIVE:
		sd_notify(0, "WATCHDOG=1");
		if (*reported) {
			shaper_log_notice("every worker turns again");
			sd_notify(0, "STATUS=bridging");
			*reported = false;
		}
		break;
	case DP_WD_STALLED:
		if (!*reported) {
			shaper_log_ratelimited(SHAPER_LOG_WARNING,
					       "the worker on lcore %u has not turned for %llu ms; "
					       "the watchdog is not fed",
					       a->lc[w]->w.lcore,
					       (unsigned long long)(since / 1000000u));
			sd_notifyf(0, "STATUS=worker on lcore %u stalled", a->lc[w]->w.lcore);
			*reported = true;
		}
		break;
	}
	fflush(stdout);
}

/*
 * A net_memif client whose server left stays down until the port starts
 * again: while it is down, stop and start it every DP_PORT_RECONNECT_MS,
 * the workers kept off it meanwhile. A start that finds no server leaves
 * it stopped (and paused) until the next try.
 */
static void
reconnect_port(struct app *a, int r, uint64_t now_ms)
{
	struct dp_port *p = &a->port[r];
	const uint64_t *beats[SHAPER_MAX_WORKERS];
	int rc;

	if (p->link_up) {
		a->reconnect_at_ms[r] = 0;
		return;
	}
	if (a->reconnect_at_ms[r] == 0) {
		/* Down since this look: the driver gets its own moment first. */
		a->reconnect_at_ms[r] = now_ms + DP_PORT_RECONNECT_MS;
		return;
	}
	if (now_ms < a->reconnect_at_ms[r])
		return;
	a->reconnect_at_ms[r] = now_ms + DP_PORT_RECONNECT_MS;
	for (unsigned int i = 0; i < a->n_shards; i++)
		beats[i] = &a->lc[i]->w.heartbeat;
	dp_port_set_paused(p->port_id, true);
	if (!dp_workers_quiesced(beats, a->n_shards, 200000)) {
		/* A worker off its CPU: never stop a port under it. */
		shaper_log_ratelimited(SHAPER_LOG_WARNING,
				       "%s port %s: a worker did not turn in 200 ms; "
				       "reconnecting later",
				       shaper_port_label(&a->cfg, r), p->name);
	} else if ((rc = dp_port_reconnect(p)) == 0) {
		shaper_log_ratelimited(SHAPER_LOG_NOTICE,
				       "%s port %s: restarted to reconnect to its memif server",
				       shaper_port_label(&a->cfg, r), p->name);
	} else {
		shaper_log_ratelimited(SHAPER_LOG_NOTICE,
				       "%s port %s: no memif server answers (%s); trying again "
				       "every %u ms",
				       shaper_port_label(&a->cfg, r), p->name, strerror(-rc),
				       DP_PORT_RECONNECT_MS);
	}
	/* Polled again if started (a failed stop leaves it so); a stopped port stays paused. */
	dp_port_set_paused(p->port_id, !p->started);
	fflush(stdout);
}

/* Links are looked at twice a second: a flap is logged and counted. */
static void
watch_links(struct app *a, uint64_t *next_ms)
{
	uint64_t now_ms = shaper_monotonic_ns() / 1000000u;

	if (now_ms < *next_ms)
		return;
	*next_ms = now_ms + LINK_WATCH_MS;
	for (int r = 0; r < shaper_n_ports(&a->cfg); r++) {
		dp_port_watch_link(&a->port[r], shaper_port_label(&a->cfg, r));
		if (a->port[r].reconnects_when_down)
			reconnect_port(a, r, now_ms);
	}
}

/*
 * The main lcore serves the control socket and the /metrics endpoint until a
 * signal stops us. Both are polled here, on this one thread, so the backend
 * (worker snapshots and mailboxes) never has two callers at once.
 */
static void
run_control(struct app *a)
{
	uint64_t next_link_check = 0, wd_usec = 0;
	struct dp_watchdog wd;
	bool wd_on = sd_watchdog_enabled(0, &wd_usec) > 0 && wd_usec > 0, wd_reported = false;
	struct ctl_server *srv = a->srv;
	struct ctl_metrics_http *mh = NULL;
	char err[SHAPER_ERR_LEN] = "";

	/* Fed at half systemd's interval, as sd_watchdog_enabled(3) advises. */
	if (wd_on)
		dp_watchdog_init(&wd, a->cfg.n_workers, wd_usec * 1000u / 2, shaper_monotonic_ns());

	a->ctl.n_shards = a->n_shards;
	for (int d = 0; d < SHAPER_NUM_DIRS; d++)
		for (unsigned int i = 0; i < a->n_shards; i++)
			a->ctl.dirs[d][i] = a->dir[d][i];
	for (int r = 0; r < shaper_n_ports(&a->cfg); r++) {
		a->ctl.ports[r] = &a->port[r];
		a->ctl.port_label[r] = shaper_port_label(&a->cfg, r);
	}
	a->ctl.failopen = a->cfg.fail_open ? &a->failopen : NULL;
	dp_control_backend(&a->ctl, &a->be);
	dp_telemetry_register(&a->be);
	if (a->cfg.metrics_enabled) {
		bool v6 = strchr(a->cfg.metrics_addr, ':') != NULL;

		mh = ctl_metrics_http_open(a->cfg.metrics_addr, a->cfg.metrics_port, &a->be, err,
					   sizeof(err));
		if (mh == NULL)
			shaper_log_warning("metrics: %s (continuing without it)", err);
		else
			shaper_log_info("metrics on http://%s%s%s:%u/metrics", v6 ? "[" : "",
					a->cfg.metrics_addr, v6 ? "]" : "", a->cfg.metrics_port);
		fflush(stdout);
	}
	if (srv != NULL) {
		shaper_log_info("control socket %s", a->cfg.control_socket);
		for (unsigned int i = 0; i < a->cfg.n_control_sockets; i++)
			shaper_log_info("control socket %s (level %s)",
					a->cfg.control_sockets[i].path,
					shaper_level_name(a->cfg.control_sockets[i].level));
		fflush(stdout);
	}
	while (!dp_stop_requested()) {
		struct pollfd pfd[2];
		nfds_t n = 0;

		watch_links(a, &next_link_check);
		shaper_log_flush_suppressed(); /* "N similar messages suppressed", when due */
		for (unsigned int i = 0; i < a->n_shards; i++)
			if (a->rtt[i] != NULL)
				dp_rtt_log_decisions(
						a->rtt[i]); /* autorate's cuts, from the workers */
		ctl_reload_poll(&a->be); /* after a SIGHUP, even with no control socket */
		if (wd_on)
			feed_watchdog(a, &wd, &wd_reported);
		if (srv != NULL)
			pfd[n++] = (struct pollfd){ .fd = ctl_server_fd(srv), .events = POLLIN };
		if (mh != NULL)
			pfd[n++] = (struct pollfd){ .fd = ctl_metrics_http_fd(mh),
						    .events = POLLIN };
		if (n == 0) {
			usleep(100000);
			continue;
		}
		/*
		 * At most 100 ms: links are watched and MHD's timeouts run each turn;
		 * at once while the control socket has requests read but not answered.
		 */
		if (poll(pfd, n, 100) < 0 && errno != EINTR) {
			usleep(100000);
			continue;
		}
		if (srv != NULL && ctl_server_poll(srv, 0) != 0)
			usleep(100000);
		if (wd_on)
			feed_watchdog(a, &wd, &wd_reported);
		if (mh != NULL && ctl_metrics_http_run(mh) != 0)
			usleep(100000);
	}
	ctl_metrics_http_close(mh);
}

/* The socket's directory: what StrictModes judges. */
static void
socket_dir(const char *path, char *dir, size_t len)
{
	char *slash;

	snprintf(dir, len, "%s", path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash != NULL)
		*slash = '\0';
}

/*
 * The fail-open programs: the XDP object (fail_open.program, or found as
 * dp_failopen_program_path finds it) and the tc one beside it, each only
 * if a port loads it; the other entry NULL.
 */
static void
fail_open_programs(struct app *a)
{
	char *xdp = a->program[0], *tc = a->program[1];
	size_t len = sizeof(a->program[0]);
	char *slash;
	size_t at;

	a->programs[0] = a->programs[1] = NULL;
	if (!a->cfg.fail_open)
		return;
	dp_failopen_program_path(a->cfg.fail_open_program, "failopen.bpf.o", xdp, len);
	/* the tc object sits beside the XDP one */
	snprintf(tc, len, "%s", xdp);
	slash = strrchr(tc, '/');
	at = slash != NULL ? (size_t)(slash + 1 - tc) : 0;
	snprintf(tc + at, len - at, "failopen_tc.bpf.o");
	for (int r = 0; r < SHAPER_NUM_PORTS; r++) {
		const char *dev = a->cfg.port[r].device;

		if (strncmp(dev, "net_af_packet", 13) == 0)
			a->programs[1] = tc;
		else if (strstr(dev, ",xdp_prog=") == NULL)
			a->programs[0] = xdp; /* a port's own xdp_prog is checked with the config */
	}
}

/*
 * Before EAL touches a device: the config file, every file it names and
 * the socket directories pass StrictModes, and every control socket is
 * bound, so a path in use or a missing directory fails start-up instead of
 * leaving a daemon nobody can reach. Clients wait in the backlog until
 * run_control serves them.
 */
static int
open_control(struct app *a)
{
	const struct shaper_config *c = &a->cfg;
	const char *config_path = a->config_path;
	char err[SHAPER_ERR_LEN], dir[SHAPER_PATH_LEN];

	if (!strict_modes)
		shaper_log_warning("--no-strict-modes: not checking who may write "
				   "the configuration, the files it names and the socket "
				   "directories");
	if (strict_modes &&
	    shaper_check_config_modes(config_path, c, a->programs, 2, err, sizeof(err)) != 0) {
		shaper_log_error("refusing the configuration: %s (--no-strict-modes starts "
				 "anyway)",
				 err);
		return -1;
	}
	if (!c->control_enabled)
		return 0;
	for (unsigned int i = 0; strict_modes && i <= c->n_control_sockets; i++) {
		const char *path = i == 0 ? c->control_socket : c->control_sockets[i - 1].path;

		socket_dir(path, dir, sizeof(dir));
		if (shaper_check_dir_modes(dir, err, sizeof(err)) != 0) {
			shaper_log_error("refusing the control socket %s: %s (--no-strict-modes "
					 "starts anyway)",
					 path, err);
			return -1;
		}
	}
	for (unsigned int i = 0; i <= c->n_control_sockets; i++) {
		const struct shaper_control_socket *x = i > 0 ? &c->control_sockets[i - 1] : NULL;
		struct ctl_server_params sp = {
			.path = x != NULL ? x->path : c->control_socket,
			.group = x != NULL ? x->group : c->control_group,
			.mode = x != NULL ? x->mode : c->control_mode,
			.level = x != NULL ? x->level : c->control_level,
			.default_level = c->control_default_level,
			.admin_group = c->control_admin_group,
		};

		if (i == 0)
			a->srv = ctl_server_open(&sp, &a->be, err, sizeof(err));
		if ((i == 0 && a->srv == NULL) ||
		    (i > 0 && ctl_server_listen(a->srv, &sp, err, sizeof(err)) != 0)) {
			shaper_log_error("control socket: %s", err);
			ctl_server_close(a->srv);
			a->srv = NULL;
			return -1;
		}
	}
	return 0;
}

/*
 * Fail-open, before the ports start: each AF_XDP port loads shaperd's XDP
 * program (failopen.bpf.c) in place of the driver's own, and one a killed
 * shaperd left is taken off first; each af_packet port gets the tc program
 * (failopen_tc.bpf.c) on its ingress hook. Until the lease is granted the program
 * passes every frame to the bridge, so the line stays lit while we start.
 */
static int
prepare_fail_open(struct app *a)
{
	const char *program = a->program[0], *tc_program = a->program[1];
	char err[SHAPER_ERR_LEN];
	bool any_tc = false;

	if (dp_failopen_prepare(&a->failopen, &a->cfg, err, sizeof(err)) != 0) {
		shaper_log_error("fail_open: %s", err);
		return -1;
	}
	/* Before any program is attached: a refusal leaves the bridge carrying the line. */
	if (dp_failopen_check_queues(&a->failopen, &a->cfg, a->n_shards, err, sizeof(err)) != 0) {
		shaper_log_error("fail_open: %s", err);
		return -1;
	}
	for (int r = 0; r < SHAPER_NUM_PORTS; r++) {
		const char *need = a->failopen.port[r].tc ? tc_program : program;

		any_tc |= a->failopen.port[r].tc;
		if (access(need, R_OK) != 0) {
			shaper_log_error("fail_open.program: cannot read %s: %s", need,
					 strerror(errno));
			return -1;
		}
		if (dp_failopen_devargs(a->cfg.port[r].device, program, a->sized.port[r].device,
					sizeof(a->sized.port[r].device), err, sizeof(err)) != 0) {
			shaper_log_error("ports.%s: %s", shaper_port_name[r], err);
			return -1;
		}
		if (!dp_failopen_in_bridge(a->failopen.port[r].ifname))
			shaper_log_warning("fail_open: %s is in no Linux bridge: nothing forwards "
					   "its frames while shaperd does not",
					   a->failopen.port[r].ifname);
	}
	if (any_tc && dp_failopen_attach_tc(&a->failopen, tc_program, err, sizeof(err)) != 0) {
		shaper_log_error("fail_open: %s", err);
		return -1;
	}
	shaper_log_info("fail_open: %s", any_tc ? tc_program : program);
	return 0;
}

/* With fail-open, once the workers run: take the line from the bridge. */
static int
start_fail_open(struct app *a)
{
	const uint64_t *beats[SHAPER_MAX_WORKERS], *drained[SHAPER_MAX_WORKERS];
	char err[SHAPER_ERR_LEN];

	if (!a->cfg.fail_open)
		return 0;
	for (unsigned int i = 0; i < a->n_shards; i++) {
		beats[i] = &a->lc[i]->w.heartbeat;
		drained[i] = &a->lc[i]->w.drained_ns;
	}
	if (dp_failopen_start(&a->failopen, beats, drained, a->n_shards, a->cfg.fail_open_lease_ns,
			      a->cfg.rt_priority, err, sizeof(err)) != 0) {
		shaper_log_error("fail_open: %s", err);
		return -1;
	}
	shaper_log_info("fail_open: shaperd takes the line once its workers have emptied "
			"their queues, and holds it on a %llu ms lease; the bridge forwards "
			"whenever it lapses",
			(unsigned long long)(a->cfg.fail_open_lease_ns / 1000000u));
	return 0;
}

/* ---------------------------------------------------------------- start-up */

/*
 * Before EAL: the config file, and what it asks of the schedulers and the
 * mbuf pools, refused here as --check-config refuses it.
 */
static int
load_config(struct app *a)
{
	const char *path = a->config_path;
	char err[SHAPER_ERR_LEN];

	if (shaper_config_load_file(path, &a->cfg, err, sizeof(err)) != 0) {
		shaper_log_error("%s: %s", path, err);
		return -1;
	}
	if (!log_level_given)
		shaper_log_set_level(a->cfg.log_level);
	fail_open_programs(a);
	a->config_file = (struct ctl_config_file){ path, &a->cfg, strict_modes, a->programs, 2 };
	a->be.config_file = &a->config_file;
	a->n_shards = a->cfg.n_workers;
	for (int d = 0; d < SHAPER_NUM_DIRS && a->n_shards > 1; d++)
		if (share_rate_check(a->cfg.dir[d].rate, a->n_shards, err, sizeof(err)) != 0) {
			shaper_log_error("%s: %s.bandwidth: %s", path, shaper_dir_name[d], err);
			return -1;
		}
	/* CAKE counts a derived memory limit in packets of this footprint. */
	for (int d = 0; d < SHAPER_NUM_DIRS; d++)
		a->cfg.dir[d].pkt_mem = dp_mbuf_truesize_planned();
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		struct sched *s = sched_create(&a->cfg.dir[d], err, sizeof(err));

		if (s == NULL) {
			shaper_log_error("%s: %s: %s", path, shaper_dir_name[d], err);
			return -1;
		}
		sched_free(s);
		if (dp_pool_size(&a->cfg, (enum shaper_dir)d, dp_mbuf_truesize_planned(),
				 &a->pool_mbufs[d], err, sizeof(err)) != 0) {
			shaper_log_error("%s: %s", path, err);
			return -1;
		}
		if (a->cfg.dir[d].nat)
			shaper_log_warning(
					"%s.nat: accepted, but a bridge has no connection "
					"tracking to look through: per-host fairness sees the addresses on the "
					"wire, so place the box where the LAN hosts' own addresses are visible "
					"(inside the NAT)",
					shaper_dir_name[d]);
	}
	return 0;
}

static int
print_tc_commands(const struct shaper_config *c)
{
	static char tc[8192];

	if (shaper_config_tc(c, tc, sizeof(tc)) != 0) {
		shaper_log_error("the tc commands do not fit in %zu bytes", sizeof(tc));
		return 1;
	}
	fputs(tc, stdout);
	return 0;
}

static void
close_control(struct app *a)
{
	ctl_server_close(a->srv);
	a->srv = NULL;
}

static int
start_eal(struct app *a)
{
	/* DPDK's own messages at their levels, through the same filter and stream. */
	if (shaper_log_route_rte() != 0)
		shaper_log_warning("cannot route DPDK's log: it keeps its own stream");
	if (rte_eal_init(a->eal_argc, a->argv) < 0) {
		/* EAL says why above; rte_errno is not always set (e.g. a --file-prefix in use). */
		shaper_log_error(
				"EAL initialisation failed: %s",
				rte_errno != 0 ? rte_strerror(rte_errno)
					       : "see EAL's message above (is --file-prefix in use?)");
		return -1;
	}
	a->eal_up = true;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, ctl_reload_on_sighup); /* only notes it: run_control reloads */
	dp_clock_begin();                     /* the TSC's calibration runs while the ports start */
	return 0;
}

static void
stop_eal(struct app *a)
{
	if (a->eal_up)
		rte_eal_cleanup();
}

static int
start_pdump(struct app *a)
{
	char err[SHAPER_ERR_LEN];

	if (!a->cfg.pdump)
		return 0;
	if (dp_pdump_init(err, sizeof(err)) != 0) {
		shaper_log_error("dataplane.pdump: %s", err);
		return -1;
	}
	a->pdump_on = true;
	return 0;
}

static void
stop_pdump(struct app *a)
{
	if (a->pdump_on)
		dp_pdump_uninit();
}

/*
 * The ports first: the descriptor counts their drivers really use and
 * their NUMA nodes decide each direction's pool, which goes on the node
 * of the port that receives into it.
 */
static int
configure_ports(struct app *a)
{
	char err[SHAPER_ERR_LEN];

	for (int r = 0; r < shaper_n_ports(&a->cfg); r++) {
		/* A bridge carries the same frames both ways: the larger mtu. */
		uint32_t max_frame = a->cfg.dir[SHAPER_UP].mtu > a->cfg.dir[SHAPER_DOWN].mtu
						     ? a->cfg.dir[SHAPER_UP].mtu
						     : a->cfg.dir[SHAPER_DOWN].mtu;
		struct dp_port_queues q = {
			.n = (uint16_t)a->n_shards,
			.by = a->cfg.shard_by,
			.lan_side = r == SHAPER_PORT_LAN,
		};

		if (dp_port_configure(&a->port[r], &a->sized.port[r], max_frame, &q, err,
				      sizeof(err)) != 0) {
			shaper_log_error("ports.%s: %s", shaper_port_label(&a->cfg, r), err);
			return -1;
		}
		a->port_open[r] = true;
		/* One hash for both sides' frames cannot keep a host on its shard. */
		if (a->cfg.single_port)
			a->port[r].rss_sharded = false;
		if (a->port[r].nb_rxd != a->cfg.port[r].rx_desc ||
		    a->port[r].nb_txd != a->cfg.port[r].tx_desc)
			shaper_log_info("ports.%s: the driver uses %u rx and %u tx descriptors "
					"(asked %u and %u)",
					shaper_port_label(&a->cfg, r), a->port[r].nb_rxd,
					a->port[r].nb_txd, a->cfg.port[r].rx_desc,
					a->cfg.port[r].tx_desc);
		a->sized.port[r].rx_desc = a->port[r].nb_rxd;
		a->sized.port[r].tx_desc = a->port[r].nb_txd;
	}
	if (a->cfg.single_port) {
		/* The one port is each direction's input and output. */
		a->port[SHAPER_PORT_LAN] = a->port[SHAPER_PORT_WAN];
		a->sized.port[SHAPER_PORT_LAN] = a->sized.port[SHAPER_PORT_WAN];
	}
	return 0;
}

static int
create_pools(struct app *a)
{
	char err[SHAPER_ERR_LEN];

	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		const struct dp_port *in = &a->port[dir_input_port(a, d)];
		char name[RTE_MEMPOOL_NAMESIZE];

		/* Sized again with the descriptor counts the drivers settled on. */
		if (dp_pool_size(&a->sized, (enum shaper_dir)d, dp_mbuf_truesize_planned(),
				 &a->pool_mbufs[d], err, sizeof(err)) != 0) {
			shaper_log_error("%s: %s", a->config_path, err);
			return -1;
		}
		if (pool_shared(a, d))
			continue; /* the downstream's, made with room for both */
		if (a->cfg.single_port) {
			uint32_t up;

			if (dp_pool_size(&a->sized, SHAPER_UP, dp_mbuf_truesize_planned(), &up, err,
					 sizeof(err)) != 0) {
				shaper_log_error("%s: %s", a->config_path, err);
				return -1;
			}
			a->pool_mbufs[d] += up;
		}
		snprintf(name, sizeof(name), "shaper_%s", shaper_dir_name[d]);
		a->pool[d] = dp_pool_create(name, a->pool_mbufs[d], in->socket);
		if (a->pool[d] == NULL) {
			shaper_log_error("cannot create the %s pool of %u mbufs on socket %d: %s "
					 "(give EAL more memory, -m, or lower dataplane.mbufs)",
					 shaper_dir_name[d], a->pool_mbufs[d], in->socket,
					 rte_strerror(rte_errno));
			return -1;
		}
	}
	if (a->cfg.single_port) {
		a->pool[SHAPER_UP] = a->pool[SHAPER_DOWN];
		a->pool_mbufs[SHAPER_UP] = a->pool_mbufs[SHAPER_DOWN];
	}
	return 0;
}

static int
start_ports(struct app *a)
{
	char err[SHAPER_ERR_LEN];

	for (int r = 0; r < shaper_n_ports(&a->cfg); r++) {
		/* A port receives the direction it is the input of (on a stick, both). */
		enum shaper_dir in_dir = r == SHAPER_PORT_LAN ? SHAPER_UP : SHAPER_DOWN;

		if (dp_port_start(&a->port[r], a->pool[in_dir], err, sizeof(err)) != 0) {
			shaper_log_error("ports.%s: %s", shaper_port_label(&a->cfg, r), err);
			a->port_open[r] = false; /* closed by dp_port_start */
			return -1;
		}
		shaper_log_info("%s port %u is %s", shaper_port_label(&a->cfg, r),
				a->port[r].port_id, a->port[r].name);
	}
	if (a->cfg.single_port) {
		a->port[SHAPER_PORT_LAN] = a->port[SHAPER_PORT_WAN];
		shaper_log_info("single port: the WAN on VLAN %u, the LAN on VLAN %u",
				a->cfg.vlan[SHAPER_PORT_WAN], a->cfg.vlan[SHAPER_PORT_LAN]);
	}
	return 0;
}

/* With fail-open its programs first (they carry the line meanwhile), then the ports and pools. */
static int
open_ports(struct app *a)
{
	a->sized = a->cfg;
	if (a->cfg.fail_open && prepare_fail_open(a) != 0)
		return -1;
	if (configure_ports(a) != 0 || create_pools(a) != 0 || start_ports(a) != 0)
		return -1;
	return 0;
}

/* The workers have stopped: the counters at exit, while the ports and shards exist. */
static void
read_exit_counters(struct app *a)
{
	/* A start that failed leaves no program of ours on the ports (a second call is a no-op). */
	if (a->cfg.fail_open)
		dp_failopen_stop(&a->failopen);
	/* Telemetry answers until rte_eal_cleanup: stop it reaching what is freed next. */
	dp_telemetry_shutdown();
	a->counters = collect_counters(a);
}

/* Every mbuf should be back in its pool once the ports are closed: the report says. */
static void
close_ports(struct app *a)
{
	unsigned int in_use = 0, kept;

	for (int r = 0; r < shaper_n_ports(&a->cfg); r++)
		if (a->port_open[r])
			dp_port_close(&a->port[r]);
	for (int d = 0; d < SHAPER_NUM_DIRS; d++)
		if (a->pool[d] != NULL && !pool_shared(a, d))
			in_use += (unsigned int)rte_mempool_in_use_count(a->pool[d]);
	kept = in_use < a->driver_held ? in_use : a->driver_held;
	report(a, a->counters, in_use - kept, kept);
	a->counters = NULL;
	if (in_use - kept != 0)
		a->exit_code = 3;
	for (int d = 0; d < SHAPER_NUM_DIRS; d++)
		if (!pool_shared(a, d))
			rte_mempool_free(a->pool[d]);
}

static int
wait_links(struct app *a)
{
	if (dp_ports_wait_link(a->port, (unsigned int)shaper_n_ports(&a->cfg), LINK_WAIT_MS) != 0)
		for (int r = 0; r < shaper_n_ports(&a->cfg); r++)
			if (!a->port[r].link_up)
				shaper_log_ratelimited(
						SHAPER_LOG_NOTICE,
						"%s port %s: link down after %u ms; forwarding "
						"starts when it comes up",
						shaper_port_label(&a->cfg, r), a->port[r].name,
						LINK_WAIT_MS);
	/*
	 * net_af_xdp fills its fill ring from the rx pool at start and does not
	 * give those mbufs back at close: note how many it took, before any
	 * frame moved, so the exit count can tell them from a leak of ours.
	 */
	for (int d = 0; d < SHAPER_NUM_DIRS; d++)
		if (a->pool[d] != NULL && !pool_shared(a, d) &&
		    dp_port_keeps_rx_mbufs(&a->port[dir_input_port(a, d)]))
			a->driver_held += (unsigned int)rte_mempool_in_use_count(a->pool[d]);
	dp_clock_init();
	return 0;
}

/*
 * Launched or not (waiting for none is at once): the bridge takes the line
 * before the workers stop, not a lease later; then every shard is drained.
 */
static void
stop_workers(struct app *a)
{
	if (a->cfg.fail_open)
		dp_failopen_stop(&a->failopen);
	dp_request_stop();
	rte_eal_mp_wait_lcore();
	for (int d = 0; d < SHAPER_NUM_DIRS; d++)
		for (unsigned int i = 0; i < a->n_shards; i++)
			if (a->dir[d][i] != NULL && a->dir[d][i]->sched != NULL)
				dp_dir_drain(a->dir[d][i]);
}

static void
free_workers(struct app *a)
{
	for (unsigned int i = 0; i < a->n_shards; i++)
		dp_lcore_free(a->lc[i]);
}

static void
free_dirs(struct app *a)
{
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		struct dp_dir *shards[SHAPER_MAX_WORKERS];
		unsigned int made = 0;

		/* The contexts are made in order: those after a failed one are not there. */
		while (made < a->n_shards && a->dir[d][made] != NULL) {
			shards[made] = a->dir[d][made];
			sched_free(shards[made]->sched);
			emu_free(shards[made]->emu);
			dp_dir_control_free(shards[made]);
			made++;
		}
		dp_steer_free(shards, made);
		rte_free(a->share[d]);
	}
	dp_rtt_group_free(a->ar_group);
	for (unsigned int i = 0; i < a->n_shards; i++) {
		if (a->dir[SHAPER_UP][i] != NULL)
			dp_stick_free(a->dir[SHAPER_UP][i]->stick);
		dp_rtt_free(a->rtt[i]);
	}
}

static void
detach_subscribers(struct app *a)
{
	if (a->subs_attached) /* drained by stop_workers; before the link's schedulers go */
		dp_subs_detach_shards(a->dir[SHAPER_DOWN], a->dir[SHAPER_UP], a->n_shards);
}

/*
 * Start-up, stage by stage. A stage that fails returns -1 having said why,
 * and is unwound with those before it: its stop and undo cope with a start
 * cut short. Unwinding (at a failure, or once a signal stops the bridge)
 * takes two passes, each in reverse: every stop first, after which nothing
 * moves a frame or a counter and the exit counters are read, then every
 * undo, which frees what its stage made. So the exit report comes once the
 * shards are freed (they hold no mbuf after the drain) and the ports closed.
 */
struct stage {
	const char *name;
	int (*start)(struct app *a);
	void (*stop)(struct app *a); /* NULL: nothing of it runs */
	void (*undo)(struct app *a); /* NULL: nothing of its own to free */
};

static const struct stage stages[] = {
	{ "control socket", open_control, NULL, close_control },
	{ "EAL", start_eal, NULL, stop_eal },
	{ "packet capture", start_pdump, NULL, stop_pdump },
	{ "ports", open_ports, read_exit_counters, close_ports },
	{ "steering", choose_steering, NULL, NULL },
	{ "links", wait_links, NULL, NULL },
	{ "workers", create_workers, stop_workers, free_workers },
	{ "shards", setup_dirs, NULL, free_dirs },
	{ "subscribers", attach_subscribers, NULL, detach_subscribers },
	{ "launch", launch_workers, NULL, NULL },
	{ "fail-open", start_fail_open, NULL, NULL },
};

/* How many stages began: all, or up to the one that failed (*failed then true). */
static size_t
start_stages(struct app *a, bool *failed)
{
	for (size_t i = 0; i < RTE_DIM(stages); i++) {
		shaper_log_debug("start-up: %s", stages[i].name);
		if (stages[i].start(a) != 0) {
			*failed = true;
			return i + 1;
		}
	}
	*failed = false;
	return RTE_DIM(stages);
}

static void
unwind_stages(struct app *a, size_t begun)
{
	for (size_t i = begun; i-- > 0;)
		if (stages[i].stop != NULL)
			stages[i].stop(a);
	for (size_t i = begun; i-- > 0;)
		if (stages[i].undo != NULL) {
			shaper_log_debug("shutdown: %s", stages[i].name);
			stages[i].undo(a);
		}
}

static void
bridge(struct app *a)
{
	shaper_log_info("bridging (upstream %s, downstream %s); SIGINT or SIGTERM stops",
			shaper_discipline_name(a->cfg.dir[SHAPER_UP].discipline),
			shaper_discipline_name(a->cfg.dir[SHAPER_DOWN].discipline));
	fflush(stdout);
	sd_notify(0, "READY=1\nSTATUS=bridging");
	run_control(a);
	sd_notify(0, "STOPPING=1");
}

int
main(int argc, char **argv)
{
	static struct app a;
	bool check_only = false, failed;
	int app_first;
	size_t begun;

	shaper_log_init("shaperd");
	split_args(argc, argv, &a.eal_argc, &app_first);
	a.argv = argv;
	/* --version/--help/--check-config work without EAL, before any device is touched. */
	if (parse_app_args(argc - app_first + 1, argv + app_first - 1, &a.config_path, &check_only,
			   &a.stats_file) != 0)
		return 2;
	if (load_config(&a) != 0)
		return 1;
	if (print_tc)
		return print_tc_commands(&a.cfg);
	if (check_only)
		return check_config_report(&a.cfg, a.pool_mbufs, a.config_path);
	begun = start_stages(&a, &failed);
	if (!failed)
		bridge(&a);
	a.exit_code = failed ? 1 : 0; /* 3 instead if an mbuf is missing at exit */
	unwind_stages(&a, begun);
	return a.exit_code;
}
