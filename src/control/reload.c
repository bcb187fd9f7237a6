/*
 * config.reload and SIGHUP: read the configuration file again, tell the
 * direction settings config.set can apply from the keys only a restart
 * changes, and apply the former only if there are none of the latter.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "shaper/reload.h"
#include "shaper/share.h"
#include "shaper/log.h"

/* One direction key: its name, the disciplines that have it, and whether a and b differ. */
struct key_cmp {
	const char *key;
	unsigned int disciplines; /* bit per enum sched_discipline */
	bool (*differs)(const struct sched_params *a, const struct sched_params *b);
};

#define D_FIFO (1u << SCHED_DISC_FIFO)
#define D_FQC  (1u << SCHED_DISC_FQ_CODEL)
#define D_CAKE (1u << SCHED_DISC_CAKE)
#define D_ALL  (D_FIFO | D_FQC | D_CAKE)

#define FIELD_DIFFERS(name, expr)                                                                  \
	static bool name(const struct sched_params *a, const struct sched_params *b)               \
	{                                                                                          \
		return expr;                                                                       \
	}

FIELD_DIFFERS(d_discipline, a->discipline != b->discipline)
FIELD_DIFFERS(d_rate, a->rate != b->rate)
FIELD_DIFFERS(d_mtu, a->mtu != b->mtu)
FIELD_DIFFERS(d_overhead, a->overhead_mode != b->overhead_mode || a->overhead != b->overhead)
FIELD_DIFFERS(d_mpu, a->mpu != b->mpu)
FIELD_DIFFERS(d_atm, a->framing != b->framing)
FIELD_DIFFERS(d_seed, a->seed != b->seed)
FIELD_DIFFERS(d_lag_limit, a->lag_limit_ns != b->lag_limit_ns)
FIELD_DIFFERS(d_rtt, a->rtt_us != b->rtt_us)
FIELD_DIFFERS(d_target, b->discipline == SCHED_DISC_CAKE ? a->target_us != b->target_us
							 : a->fqc_target_us != b->fqc_target_us)
FIELD_DIFFERS(d_diffserv, a->diffserv != b->diffserv)
FIELD_DIFFERS(d_isolation, a->isolation != b->isolation)
FIELD_DIFFERS(d_wash, a->wash != b->wash)
FIELD_DIFFERS(d_ingress, a->ingress != b->ingress)
FIELD_DIFFERS(d_nat, a->nat != b->nat)
FIELD_DIFFERS(d_vlan_hosts, a->vlan_hosts != b->vlan_hosts)
FIELD_DIFFERS(d_ecn, a->ecn != b->ecn)
FIELD_DIFFERS(d_ack_filter, a->ack_filter != b->ack_filter)
FIELD_DIFFERS(d_l4s, a->l4s != b->l4s)
FIELD_DIFFERS(d_l4s_step, a->l4s_step_us != b->l4s_step_us)
FIELD_DIFFERS(d_nqb, a->nqb != b->nqb)
FIELD_DIFFERS(d_memlimit, a->memlimit != b->memlimit)
FIELD_DIFFERS(d_limit, b->discipline == SCHED_DISC_FIFO
				       ? a->fifo_limit_pkts != b->fifo_limit_pkts ||
							 a->fifo_limit_bytes != b->fifo_limit_bytes
				       : a->fqc_limit != b->fqc_limit)
FIELD_DIFFERS(d_flows, a->fqc_flows != b->fqc_flows)
FIELD_DIFFERS(d_quantum, a->fqc_quantum != b->fqc_quantum)
FIELD_DIFFERS(d_memory_limit, a->fqc_memory_limit != b->fqc_memory_limit)
FIELD_DIFFERS(d_interval, a->fqc_interval_us != b->fqc_interval_us)
FIELD_DIFFERS(d_ce_threshold, a->fqc_ce_threshold_us != b->fqc_ce_threshold_us)
FIELD_DIFFERS(d_drop_batch, a->fqc_drop_batch != b->fqc_drop_batch)

/*
 * Every scheduler key config.set takes (autorate's bounds it refuses;
 * "emulate" goes to the delay line, not the scheduler).
 */
static const struct key_cmp dir_keys[] = {
	{ "discipline", D_ALL, d_discipline },
	{ "bandwidth", D_ALL, d_rate },
	{ "mtu", D_ALL, d_mtu },
	{ "overhead", D_ALL, d_overhead },
	{ "mpu", D_ALL, d_mpu },
	{ "atm", D_ALL, d_atm },
	{ "seed", D_ALL, d_seed },
	{ "lag_limit", D_ALL, d_lag_limit },
	{ "rtt", D_CAKE, d_rtt },
	{ "target", D_CAKE | D_FQC, d_target },
	{ "diffserv", D_CAKE, d_diffserv },
	{ "isolation", D_CAKE, d_isolation },
	{ "wash", D_CAKE, d_wash },
	{ "ingress", D_CAKE, d_ingress },
	{ "nat", D_CAKE, d_nat },
	{ "vlan_hosts", D_CAKE, d_vlan_hosts },
	{ "ecn", D_CAKE | D_FQC, d_ecn },
	{ "ack_filter", D_CAKE, d_ack_filter },
	{ "l4s", D_CAKE | D_FQC, d_l4s },
	{ "l4s_step", D_CAKE | D_FQC, d_l4s_step },
	{ "nqb", D_CAKE, d_nqb },
	{ "memlimit", D_CAKE, d_memlimit },
	{ "limit", D_FIFO | D_FQC, d_limit },
	{ "flows", D_FQC, d_flows },
	{ "quantum", D_FQC, d_quantum },
	{ "memory_limit", D_FQC, d_memory_limit },
	{ "interval", D_FQC, d_interval },
	{ "ce_threshold", D_FQC, d_ce_threshold },
	{ "drop_batch", D_FQC, d_drop_batch },
};

unsigned int
ctl_dir_diff(const struct sched_params *a, const struct sched_params *b, bool skip_rate,
	     const char **keys, unsigned int max)
{
	unsigned int n = 0;

	for (size_t i = 0; i < sizeof(dir_keys) / sizeof(dir_keys[0]); i++) {
		const struct key_cmp *k = &dir_keys[i];

		if (!(k->disciplines & (1u << b->discipline)) ||
		    (skip_rate && k->differs == d_rate))
			continue;
		/* Another discipline's fields mean nothing: only the discipline itself differs. */
		if (k->disciplines != D_ALL && a->discipline != b->discipline)
			continue;
		if (k->differs(a, b) && n < max)
			keys[n++] = k->key;
	}
	return n;
}

static void restart_key(struct ctl_reload_plan *pl, const char *fmt, ...)
		__attribute__((format(printf, 2, 3)));

static void
restart_key(struct ctl_reload_plan *pl, const char *fmt, ...)
{
	va_list ap;

	if (pl->n_restart >= CTL_RELOAD_MAX_KEYS)
		return;
	va_start(ap, fmt);
	vsnprintf(pl->restart[pl->n_restart++], CTL_RELOAD_PATH_LEN, fmt, ap);
	va_end(ap);
}

static bool
sockets_differ(const struct shaper_control_socket *a, const struct shaper_control_socket *b)
{
	return strcmp(a->path, b->path) != 0 || strcmp(a->group, b->group) != 0 ||
	       a->mode != b->mode || a->level != b->level;
}

static bool
autorate_differs(const struct shaper_autorate_config *a, const struct shaper_autorate_config *b)
{
	if (a->enabled != b->enabled)
		return true;
	return a->enabled &&
	       (a->min_rate != b->min_rate || a->max_rate != b->max_rate ||
		a->start_rate != b->start_rate || !autorate_params_same(&a->tune, &b->tune));
}

static bool
emulate_differs(const struct shaper_emulate_config *a, const struct shaper_emulate_config *b)
{
	return a->delay_ns != b->delay_ns || a->jitter_ns != b->jitter_ns ||
	       a->loss_ppm != b->loss_ppm || a->seed != b->seed || a->limit != b->limit;
}

/* The keys shaperd reads once, at start: ports, sockets, lcores, pools, ... */
static void
restart_keys(const struct shaper_config *s, const struct shaper_config *f,
	     struct ctl_reload_plan *pl)
{
	bool socks = s->n_control_sockets != f->n_control_sockets;

	for (int r = 0; r < shaper_n_ports(f); r++) {
		const char *name = shaper_port_label(f, r);

		if (s->single_port != f->single_port ||
		    strcmp(s->port[r].device, f->port[r].device) != 0)
			restart_key(pl, "ports.%s.device", name);
		if (s->port[r].rx_desc != f->port[r].rx_desc)
			restart_key(pl, "ports.%s.rx_descriptors", name);
		if (s->port[r].tx_desc != f->port[r].tx_desc)
			restart_key(pl, "ports.%s.tx_descriptors", name);
	}
	if (s->vlan[SHAPER_PORT_WAN] != f->vlan[SHAPER_PORT_WAN])
		restart_key(pl, "ports.wan_vlan");
	if (s->vlan[SHAPER_PORT_LAN] != f->vlan[SHAPER_PORT_LAN])
		restart_key(pl, "ports.lan_vlan");
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		if (emulate_differs(&s->emulate[d], &f->emulate[d]))
			restart_key(pl, "%s.emulate", shaper_dir_name[d]);
		if (autorate_differs(&s->autorate[d], &f->autorate[d]))
			restart_key(pl, "%s.bandwidth", shaper_dir_name[d]);
	}
	/* The ports were opened for the larger mtu: frames above it never arrive. */
	for (int d = 0; d < SHAPER_NUM_DIRS; d++)
		if (f->dir[d].mtu > s->dir[SHAPER_UP].mtu &&
		    f->dir[d].mtu > s->dir[SHAPER_DOWN].mtu)
			restart_key(pl, "%s.mtu", shaper_dir_name[d]);
	if (s->control_enabled != f->control_enabled)
		restart_key(pl, "control.enabled");
	if (strcmp(s->control_socket, f->control_socket) != 0)
		restart_key(pl, "control.socket");
	if (strcmp(s->control_group, f->control_group) != 0)
		restart_key(pl, "control.group");
	if (s->control_mode != f->control_mode)
		restart_key(pl, "control.mode");
	if (s->control_level != f->control_level)
		restart_key(pl, "control.level");
	if (s->control_default_level != f->control_default_level)
		restart_key(pl, "control.default_level");
	if (strcmp(s->control_admin_group, f->control_admin_group) != 0)
		restart_key(pl, "control.admin_group");
	for (unsigned int i = 0; !socks && i < s->n_control_sockets; i++)
		socks = sockets_differ(&s->control_sockets[i], &f->control_sockets[i]);
	if (socks)
		restart_key(pl, "control.sockets");
	if (s->metrics_enabled != f->metrics_enabled)
		restart_key(pl, "metrics.enabled");
	if (strcmp(s->metrics_addr, f->metrics_addr) != 0 || s->metrics_port != f->metrics_port)
		restart_key(pl, "metrics.listen");
	if (s->metrics_subscribers_top != f->metrics_subscribers_top)
		restart_key(pl, "metrics.subscribers_top");
	if (s->metrics_subscribers_worst != f->metrics_subscribers_worst)
		restart_key(pl, "metrics.subscribers_worst");
	if (s->n_workers != f->n_workers ||
	    memcmp(s->worker_lcore, f->worker_lcore, sizeof(s->worker_lcore)) != 0)
		restart_key(pl, "lcores.workers");
	if (memcmp(s->mbufs, f->mbufs, sizeof(s->mbufs)) != 0)
		restart_key(pl, "dataplane.mbufs");
	if (s->burst != f->burst)
		restart_key(pl, "dataplane.burst");
	if (s->idle_sleep_us != f->idle_sleep_us)
		restart_key(pl, "dataplane.idle_sleep");
	if (s->rt_priority != f->rt_priority)
		restart_key(pl, "dataplane.rt_priority");
	if (s->passive_rtt != f->passive_rtt)
		restart_key(pl, "dataplane.passive_rtt");
	if (s->shard_by != f->shard_by)
		restart_key(pl, "dataplane.shard_by");
	if (s->steering != f->steering)
		restart_key(pl, "dataplane.steering");
	if (s->pdump != f->pdump)
		restart_key(pl, "dataplane.pdump");
	if (s->fail_open != f->fail_open)
		restart_key(pl, "fail_open.enabled");
	if (s->fail_open_lease_ns != f->fail_open_lease_ns)
		restart_key(pl, "fail_open.lease");
	if (strcmp(s->fail_open_program, f->fail_open_program) != 0)
		restart_key(pl, "fail_open.program");
	if (memcmp(&s->subscribers, &f->subscribers, sizeof(s->subscribers)) != 0)
		restart_key(pl, "subscribers");
}

void
ctl_reload_diff(const struct shaper_config *started,
		const struct sched_params running[SHAPER_NUM_DIRS],
		const struct shaper_config *file, struct ctl_reload_plan *plan)
{
	memset(plan, 0, sizeof(*plan));
	restart_keys(started, file, plan);
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		struct sched_params *p = &plan->params[d];
		bool autorate = file->autorate[d].enabled && started->autorate[d].enabled;

		*p = file->dir[d];
		/* Not config keys: what shaperd set up at start. */
		p->pkt_mem = running[d].pkt_mem;
		p->upstream = running[d].upstream;
		/* Autorate owns the rate while its bounds stay what they were. */
		if (autorate)
			p->rate = running[d].rate;
		plan->n_changed[d] = ctl_dir_diff(&running[d], p, autorate, plan->changed[d],
						  CTL_RELOAD_MAX_KEYS);
		plan->change[d] = plan->n_changed[d] > 0;
	}
}

int
ctl_reload_prepare(const char *path, const struct shaper_config *started,
		   const struct sched_params running[SHAPER_NUM_DIRS], struct ctl_reload_plan *plan,
		   char *err, size_t errlen)
{
	struct shaper_config *file = malloc(sizeof(*file));
	char e[SHAPER_ERR_LEN];

	if (file == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (shaper_config_load_file(path, file, e, sizeof(e)) != 0) {
		snprintf(err, errlen, "%s: %s", path, e);
		free(file);
		return -1;
	}
	ctl_reload_diff(started, running, file, plan);
	free(file);
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		struct sched *s;

		if (!plan->change[d])
			continue;
		/* The check shaperd makes at start; the workers refuse the rest. */
		if (started->n_workers > 1 &&
		    share_rate_check(plan->params[d].rate, started->n_workers, e, sizeof(e)) != 0) {
			snprintf(err, errlen, "%s: %s.bandwidth: %s", path, shaper_dir_name[d], e);
			return -1;
		}
		s = sched_create(&plan->params[d], e, sizeof(e));
		if (s == NULL) {
			snprintf(err, errlen, "%s: %s: %s", path, shaper_dir_name[d], e);
			return -1;
		}
		sched_free(s);
	}
	return 0;
}

/*
 * StrictModes, as at start: a reload must not apply a file (or a
 * subscriber file, or run beside a program) that a fresh start would
 * refuse. A file that does not load is judged alone; prepare says why it
 * does not load.
 */
static int
check_modes(const struct ctl_config_file *cf, char *err, size_t errlen)
{
	struct shaper_config *file = malloc(sizeof(*file));
	char e[SHAPER_ERR_LEN];
	int rc;

	if (file == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (shaper_config_load_file(cf->path, file, e, sizeof(e)) == 0)
		rc = shaper_check_config_modes(cf->path, file, cf->programs, cf->n_programs, err,
					       errlen);
	else
		rc = shaper_check_file_modes(cf->path, err, errlen);
	free(file);
	return rc;
}

/* Each direction's parameters now, as config.get shows them. */
static int
running_params(const struct ctl_backend *be, struct sched_params running[SHAPER_NUM_DIRS],
	       char *err, size_t errlen)
{
	struct sched_stats *st = calloc(1, sizeof(*st));
	struct ctl_dir_counters c;

	if (st == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int d = 0; d < SHAPER_NUM_DIRS; d++)
		if (be->dir_snapshot(be->opaque, (enum shaper_dir)d, &c, st, &running[d]) != 0) {
			snprintf(err, errlen, "%s: no snapshot available yet; try again",
				 shaper_dir_name[d]);
			free(st);
			return -EAGAIN;
		}
	free(st);
	return 0;
}

/* "a.b, c.d" from the plan's restart keys. */
static void
join_restart(const struct ctl_reload_plan *pl, char *buf, size_t len)
{
	size_t k = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < pl->n_restart && k < len; i++)
		k += (size_t)snprintf(buf + k, len - k, "%s%s", i > 0 ? ", " : "", pl->restart[i]);
}

/* "upstream.bandwidth, downstream.rtt" from the plan's changed keys. */
static void
join_changed(const struct ctl_reload_plan *pl, char *buf, size_t len)
{
	size_t k = 0;

	buf[0] = '\0';
	for (int d = 0; d < SHAPER_NUM_DIRS; d++)
		for (unsigned int i = 0; i < pl->n_changed[d] && k < len; i++)
			k += (size_t)snprintf(buf + k, len - k, "%s%s.%s", k > 0 ? ", " : "",
					      shaper_dir_name[d], pl->changed[d][i]);
}

static int reload_fail(enum ctl_error *code, char *msg, size_t msglen, enum ctl_error c,
		       const char *via, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Set the reply's error and log it. */
static int
reload_fail(enum ctl_error *code, char *msg, size_t msglen, enum ctl_error c, const char *via,
	    const char *fmt, ...)
{
	va_list ap;

	*code = c;
	va_start(ap, fmt);
	vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
	shaper_log_warning("reload (%s) refused: %s", via, msg);
	return -1;
}

/* A plan with keys only a restart applies: refused, the keys named in the reply. */
static int
refuse_restart(const struct ctl_reload_plan *pl, const char *path, const char *via,
	       enum ctl_error *code, char *msg, size_t msglen, void **keys)
{
	char list[SHAPER_ERR_LEN];

	join_restart(pl, list, sizeof(list));
	reload_fail(code, msg, msglen, CTL_ERR_RESTART_REQUIRED, via,
		    "%s: %s %s changed and only a restart applies %s; nothing was applied", path,
		    list, pl->n_restart > 1 ? "have" : "has", pl->n_restart > 1 ? "them" : "it");
	if (keys != NULL) {
		json_t *a = json_array();

		for (unsigned int i = 0; i < pl->n_restart; i++)
			json_array_append_new(a, json_string(pl->restart[i]));
		*keys = a;
	}
	return -1;
}

/*
 * Each changed direction, then the subscribers (last: the one step that
 * cannot be put back once taken). All of the file or nothing: on a failure
 * the directions that took it go back to running.
 */
static int
apply_plan(const struct ctl_backend *be, const struct ctl_reload_plan *pl,
	   const struct sched_params running[SHAPER_NUM_DIRS], struct ctl_subs_reload *subs,
	   const char *via, enum ctl_error *code, char *msg, size_t msglen)
{
	const char *path = be->config_file->path;
	bool done[SHAPER_NUM_DIRS] = { false, false };
	char err[SHAPER_ERR_LEN];
	const char *what = NULL;
	int rc = 0;

	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		if (!pl->change[d])
			continue;
		rc = be->apply(be->opaque, (enum shaper_dir)d, &pl->params[d], err, sizeof(err));
		if (rc != 0) {
			what = shaper_dir_name[d];
			break;
		}
		done[d] = true;
	}
	if (what == NULL && subs != NULL) {
		rc = ctl_subscribers_reload_apply(be, subs, err, sizeof(err));
		if (rc != 0)
			what = "subscribers";
	}
	if (what == NULL)
		return 0;
	for (int u = 0; u < SHAPER_NUM_DIRS; u++) {
		char undo[256];

		if (done[u] &&
		    be->apply(be->opaque, (enum shaper_dir)u, &running[u], undo, sizeof(undo)) != 0)
			return reload_fail(code, msg, msglen, CTL_ERR_BUSY, via,
					   "%s: %s: %s; and %s could not be put back (%s): it "
					   "runs the file's settings, %s its old ones",
					   path, what, err, shaper_dir_name[u], undo, what);
	}
	return reload_fail(code, msg, msglen,
			   rc == -EINVAL ? CTL_ERR_INVALID_ARGUMENT : CTL_ERR_BUSY, via,
			   "%s: %s: %s; nothing was applied", path, what, err);
}

/* The reply of a reload that took: what changed and each direction's settings now. */
static json_t *
reload_result(const struct ctl_reload_plan *pl, const struct sched_params running[SHAPER_NUM_DIRS],
	      struct ctl_subs_reload *subs, const char *path, const char *via)
{
	json_t *applied = json_object(), *cfg = json_object(), *result;
	char list[SHAPER_ERR_LEN];

	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		json_t *a = json_array();

		for (unsigned int i = 0; i < pl->n_changed[d]; i++)
			json_array_append_new(a, json_string(pl->changed[d][i]));
		json_object_set_new(applied, shaper_dir_name[d], a);
		json_object_set_new(cfg, shaper_dir_name[d],
				    shaper_config_direction_to_json(pl->change[d] ? &pl->params[d]
										  : &running[d]));
	}
	join_changed(pl, list, sizeof(list));
	shaper_log_notice("reload (%s): %s: %s%s", via, path, list[0] != '\0' ? "applied " : "",
			  list[0] != '\0' ? list : "no change");
	result = json_pack("{s:s, s:o, s:o}", "file", path, "applied", applied, "config", cfg);
	if (subs != NULL) {
		json_object_set_new(result, "subscribers", ctl_subscribers_reload_summary(subs));
		ctl_subscribers_reload_describe(subs, list, sizeof(list));
		shaper_log_notice("reload (%s): subscribers: %s", via, list);
	}
	return result;
}

int
ctl_reload_run(const struct ctl_backend *be, const char *via, void **result, enum ctl_error *code,
	       char *msg, size_t msglen, void **keys)
{
	const struct ctl_config_file *cf = be->config_file;
	struct sched_params running[SHAPER_NUM_DIRS];
	struct ctl_reload_plan *pl;
	char err[SHAPER_ERR_LEN];
	struct ctl_subs_reload *subs = NULL;
	int rc;

	*result = NULL;
	if (keys != NULL)
		*keys = NULL;
	if (cf == NULL || cf->path == NULL || cf->started == NULL)
		return reload_fail(code, msg, msglen, CTL_ERR_INVALID_ARGUMENT, via,
				   "this daemon was not started from a configuration file");
	rc = running_params(be, running, err, sizeof(err));
	if (rc != 0)
		return reload_fail(code, msg, msglen, CTL_ERR_BUSY, via, "%s", err);
	if (cf->strict_modes && check_modes(cf, err, sizeof(err)) != 0)
		return reload_fail(code, msg, msglen, CTL_ERR_INVALID_ARGUMENT, via,
				   "%s; nothing was applied (StrictModes, as at start)", err);
	pl = malloc(sizeof(*pl));
	if (pl == NULL)
		return reload_fail(code, msg, msglen, CTL_ERR_INTERNAL, via, "out of memory");
	if (ctl_reload_prepare(cf->path, cf->started, running, pl, err, sizeof(err)) != 0) {
		reload_fail(code, msg, msglen, CTL_ERR_INVALID_ARGUMENT, via,
			    "%s; nothing was applied", err);
		free(pl);
		return -1;
	}
	if (pl->n_restart > 0) {
		refuse_restart(pl, cf->path, via, code, msg, msglen, keys);
		free(pl);
		return -1;
	}
	/* The subscriber files as a diff of the running subscribers, checked before anything. */
	rc = ctl_subscribers_reload_prepare(be, cf->path, &subs, err, sizeof(err));
	if (rc != 0) {
		reload_fail(code, msg, msglen,
			    rc == -ENOTSUP ? CTL_ERR_RESTART_REQUIRED : CTL_ERR_INVALID_ARGUMENT,
			    via, "%s; nothing was applied", err);
		free(pl);
		return -1;
	}
	rc = apply_plan(be, pl, running, subs, via, code, msg, msglen);
	if (rc == 0) {
		*result = reload_result(pl, running, subs, cf->path, via);
		fflush(stdout);
	}
	ctl_subscribers_reload_free(subs);
	free(pl);
	return rc;
}

static volatile sig_atomic_t hup_pending;

void
ctl_reload_on_sighup(int sig)
{
	(void)sig;
	hup_pending = 1;
}

void
ctl_reload_poll(const struct ctl_backend *be)
{
	enum ctl_error code;
	char msg[SHAPER_ERR_LEN];
	void *result;

	if (!hup_pending)
		return;
	hup_pending = 0;
	/* Logged either way; a signal has nobody to answer. */
	if (ctl_reload_run(be, "SIGHUP", &result, &code, msg, sizeof(msg), NULL) == 0)
		json_decref(result);
}
