/*
 * Fail-open for AF_XDP ports: see shaper/failopen.h and failopen.bpf.c.
 * Nothing here runs on the fast path: the lease thread makes one bpf(2)
 * call per port every quarter lease.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/ethtool.h>
#include <linux/sockios.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "shaper/dataplane.h"
#include "shaper/failopen.h"
#include "shaper/log.h"

#ifndef SHAPER_BPF_DIR
#define SHAPER_BPF_DIR "/usr/lib/shaper"
#endif
#define TC_HANDLE   1 /* fixed, so a restarted shaperd replaces its own filter */
#define TC_PRIORITY 1

static bool
is_af_xdp(const char *device)
{
	return strncmp(device, "net_af_xdp", strlen("net_af_xdp")) == 0;
}

static bool
is_af_packet(const char *device)
{
	return strncmp(device, "net_af_packet", strlen("net_af_packet")) == 0;
}

/* The value of key= among device's comma-separated arguments, or NULL. */
static const char *
devarg(const char *device, const char *key, size_t *vlen)
{
	size_t klen = strlen(key);

	for (const char *p = strchr(device, ','); p != NULL; p = strchr(p + 1, ',')) {
		if (strncmp(p + 1, key, klen) == 0 && p[1 + klen] == '=') {
			const char *v = p + 2 + klen;

			*vlen = strcspn(v, ",");
			return v;
		}
	}
	return NULL;
}

int
dp_failopen_iface(const char *device, char *ifname, size_t len)
{
	size_t n = 0;
	const char *v = is_af_xdp(device) || is_af_packet(device) ? devarg(device, "iface", &n)
								  : NULL;

	if (v == NULL || n == 0 || n >= len || n >= IF_NAMESIZE)
		return -1;
	memcpy(ifname, v, n);
	ifname[n] = '\0';
	return 0;
}

int
dp_failopen_devargs(const char *device, const char *program, char *out, size_t len, char *err,
		    size_t errlen)
{
	size_t n;
	int w;

	if (is_af_packet(device)) {
		/* its program goes on tc's ingress hook, not through the driver */
		w = snprintf(out, len, "%s", device);
		if (w < 0 || (size_t)w >= len) {
			snprintf(err, errlen, "\"%s\" is too long", device);
			return -1;
		}
		return 0;
	}
	if (!is_af_xdp(device)) {
		snprintf(err, errlen,
			 "\"%s\" is neither an AF_XDP nor an af_packet device (net_af_xdpN,iface=...)",
			 device);
		return -1;
	}
	if (devarg(device, "xdp_prog", &n) != NULL)
		w = snprintf(out, len, "%s", device); /* a program of the user's own */
	else
		w = snprintf(out, len, "%s,xdp_prog=%s", device, program);
	if (w < 0 || (size_t)w >= len) {
		snprintf(err, errlen, "\"%s\" with the fail-open program is too long", device);
		return -1;
	}
	return 0;
}

void
dp_failopen_program_path(const char *configured, const char *file, char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n;

	if (configured != NULL && configured[0] != '\0') {
		snprintf(out, len, "%s", configured);
		return;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char *slash;

		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash != NULL) {
			slash[1] = '\0';
			snprintf(out, len, "%s%s", exe, file);
			if (access(out, R_OK) == 0)
				return;
		}
	}
	snprintf(out, len, "%s/%s", SHAPER_BPF_DIR, file);
}

/* The rx-N entries under /sys/class/net/IF/queues: the kernel's real rx queues. */
static int
sysfs_rx_queues(const char *ifname)
{
	char path[128];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/sys/class/net/%s/queues", ifname);
	d = opendir(path);
	if (d == NULL)
		return -errno;
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, "rx-", 3) == 0)
			n++;
	closedir(d);
	return n;
}

int
dp_failopen_rx_queues(const char *ifname, bool *combined)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	struct ifreq ifr;
	int fd, rc = -1;

	*combined = true;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&ch;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		rc = ioctl(fd, SIOCETHTOOL, &ifr);
		close(fd);
	}
	if (rc == 0 && ch.combined_count + ch.rx_count > 0) {
		*combined = ch.rx_count == 0;
		return (int)(ch.combined_count + ch.rx_count);
	}
	/* No channel count (a driver without get_channels): what the kernel made. */
	return sysfs_rx_queues(ifname);
}

int
dp_failopen_queues_check(const char *ifname, int if_queues, bool combined, unsigned int start,
			 unsigned int n, char *err, size_t errlen)
{
	unsigned int q = (unsigned int)if_queues, end, others;
	char served[48];

	if (if_queues < 0) {
		snprintf(err, errlen,
			 "cannot count the rx queues of %s (%s): fail-open cannot tell whether "
			 "every queue has a socket",
			 ifname, strerror(-if_queues));
		return -1;
	}
	if (start == 0 && q <= n)
		return 0;
	end = start + n < q ? start + n : q;
	others = q - (end > start ? end - start : 0);
	if (n == 1)
		snprintf(served, sizeof(served), "queue %u", start);
	else
		snprintf(served, sizeof(served), "queues %u-%u", start, start + n - 1);
	/* A socket takes only its own queue's frames: the others cannot be steered to one. */
	snprintf(err, errlen,
		 "%s has %u rx queues and shaperd's AF_XDP sockets serve %s only (%u worker%s): "
		 "frames the NIC puts on the other %u would pass to the bridge unshaped; %srun "
		 "ethtool -L %s %s %u, or give lcores.workers %u workers (and the device "
		 "queue_count=%u)",
		 ifname, q, served, n, n == 1 ? "" : "s", others,
		 start > 0 ? "drop the device's start_queue= and " : "", ifname,
		 combined ? "combined" : "rx", n, q, q);
	return -1;
}

int
dp_failopen_check_queues(const struct dp_failopen *fo, const struct shaper_config *cfg,
			 unsigned int n, char *err, size_t errlen)
{
	for (int r = 0; r < SHAPER_NUM_PORTS; r++) {
		const char *dev = cfg->port[r].device, *v;
		char why[SHAPER_ERR_LEN];
		unsigned int start = 0;
		bool combined;
		size_t len;
		int q;

		if (!is_af_xdp(dev))
			continue;
		v = devarg(dev, "start_queue", &len);
		if (v != NULL)
			start = (unsigned int)strtoul(v, NULL, 10);
		q = dp_failopen_rx_queues(fo->port[r].ifname, &combined);
		if (dp_failopen_queues_check(fo->port[r].ifname, q, combined, start, n, why,
					     sizeof(why)) != 0) {
			snprintf(err, errlen, "ports.%s: %s", shaper_port_name[r], why);
			return -1;
		}
	}
	return 0;
}

bool
dp_failopen_in_bridge(const char *ifname)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/net/%s/brport", ifname);
	return access(path, F_OK) == 0;
}

/*
 * Our program among those libxdp finds on an interface: the only one when
 * attached alone (no bpffs), else a component of libxdp's dispatcher.
 */
static struct xdp_program *
our_prog(struct xdp_multiprog *mp)
{
	struct xdp_program *prog;

	if (xdp_multiprog__is_legacy(mp)) {
		prog = xdp_multiprog__main_prog(mp);
		return prog != NULL && strcmp(xdp_program__name(prog), DP_FAILOPEN_PROG_NAME) == 0
				       ? prog
				       : NULL;
	}
	for (prog = xdp_multiprog__next_prog(NULL, mp); prog != NULL;
	     prog = xdp_multiprog__next_prog(prog, mp))
		if (strcmp(xdp_program__name(prog), DP_FAILOPEN_PROG_NAME) == 0)
			return prog;
	return NULL;
}

/* Take off a shaper_failopen program a shaperd that was killed left on ifindex. */
static int
detach_stale(const struct dp_failopen_port *p, char *err, size_t errlen)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(p->ifindex);
	struct xdp_program *prog;
	int rc = 0;

	if (mp == NULL || libxdp_get_error(mp) != 0)
		return 0; /* nothing attached */
	prog = our_prog(mp);
	if (prog != NULL)
		rc = xdp_multiprog__is_legacy(mp)
				     ? xdp_multiprog__detach(mp)
				     : xdp_program__detach(prog, p->ifindex,
							   xdp_multiprog__attach_mode(mp), 0);
	xdp_multiprog__close(mp);
	if (rc != 0) {
		snprintf(err, errlen,
			 "%s: cannot take off the XDP program a previous shaperd left: %s",
			 p->ifname, strerror(-rc));
		return -1;
	}
	return 0;
}

int
dp_failopen_prepare(struct dp_failopen *fo, const struct shaper_config *cfg, char *err,
		    size_t errlen)
{
	pthread_mutexattr_t attr;

	memset(fo, 0, sizeof(*fo));
	pthread_mutexattr_init(&attr);
	(void)pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(&fo->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	for (int r = 0; r < SHAPER_NUM_PORTS; r++) {
		struct dp_failopen_port *p = &fo->port[r];

		p->lease_fd = -1;
		p->tc = is_af_packet(cfg->port[r].device);
		if (dp_failopen_iface(cfg->port[r].device, p->ifname, sizeof(p->ifname)) != 0) {
			snprintf(err, errlen,
				 "ports.%s: \"%s\" names no AF_XDP or af_packet interface",
				 shaper_port_name[r], cfg->port[r].device);
			return -1;
		}
		p->ifindex = (int)if_nametoindex(p->ifname);
		if (p->ifindex == 0) {
			snprintf(err, errlen, "ports.%s: no interface \"%s\"", shaper_port_name[r],
				 p->ifname);
			return -1;
		}
		if (!p->tc && detach_stale(p, err, errlen) != 0)
			return -1;
	}
	return 0;
}

static int
silent(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

/*
 * af_packet: shaperd's own tc program on the interface's ingress, replacing
 * the one a killed shaperd left (same handle and priority). Until the lease
 * is granted it passes every frame, so the bridge keeps the line.
 */
static int
attach_tc(struct dp_failopen_port *p, const char *program, char *err, size_t errlen)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = p->ifindex,
			    .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = TC_HANDLE, .priority = TC_PRIORITY,
			    .flags = BPF_TC_F_REPLACE);
	libbpf_print_fn_t old_print;
	struct bpf_program *prog;
	int rc;

	p->obj = bpf_object__open_file(program, NULL);
	if (p->obj == NULL || libbpf_get_error(p->obj) != 0) {
		p->obj = NULL;
		snprintf(err, errlen, "cannot open %s", program);
		return -1;
	}
	rc = bpf_object__load(p->obj);
	prog = bpf_object__find_program_by_name(p->obj, DP_FAILOPEN_PROG_NAME "_tc");
	if (rc != 0 || prog == NULL) {
		snprintf(err, errlen, "%s: cannot load its %s_tc program: %s", program,
			 DP_FAILOPEN_PROG_NAME, rc != 0 ? strerror(-rc) : "not in the file");
		return -1;
	}
	p->lease_fd = bpf_object__find_map_fd_by_name(p->obj, DP_FAILOPEN_MAP_NAME);
	/* The clsact qdisc; there already (a restart) is fine, and not worth libbpf's warning. */
	old_print = libbpf_set_print(silent);
	rc = bpf_tc_hook_create(&hook);
	libbpf_set_print(old_print);
	if (rc != 0 && rc != -EEXIST) {
		snprintf(err, errlen, "%s: cannot add tc's ingress hook: %s", p->ifname,
			 strerror(-rc));
		return -1;
	}
	opts.prog_fd = bpf_program__fd(prog);
	rc = bpf_tc_attach(&hook, &opts);
	if (rc != 0 || p->lease_fd < 0) {
		snprintf(err, errlen, "%s: cannot attach the fail-open tc program: %s", p->ifname,
			 strerror(rc != 0 ? -rc : ENOENT));
		return -1;
	}
	p->tc_attached = true;
	return 0;
}

int
dp_failopen_attach_tc(struct dp_failopen *fo, const char *program, char *err, size_t errlen)
{
	for (int r = 0; r < SHAPER_NUM_PORTS; r++)
		if (fo->port[r].tc && attach_tc(&fo->port[r], program, err, errlen) != 0)
			return -1;
	return 0;
}

/* At a clean stop: the filter off, so the kernel path holds no program of ours. */
static void
detach_tc(struct dp_failopen_port *p)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = p->ifindex,
			    .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = TC_HANDLE, .priority = TC_PRIORITY);

	if (p->tc_attached)
		(void)bpf_tc_detach(&hook, &opts);
	p->tc_attached = false;
}

/* The lease map of the shaper_failopen program attached to ifindex, or -errno. */
static int
find_lease_map(int ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *prog;
	int fd = -ENOENT;

	if (mp == NULL || libxdp_get_error(mp) != 0)
		return -ENOENT;
	prog = our_prog(mp);
	if (prog != NULL) {
		struct bpf_prog_info info;
		uint32_t ids[16], info_len = sizeof(info);

		memset(&info, 0, sizeof(info));
		info.nr_map_ids = 16;
		info.map_ids = (uint64_t)(uintptr_t)ids;
		if (bpf_obj_get_info_by_fd(xdp_program__fd(prog), &info, &info_len) == 0) {
			for (uint32_t i = 0; i < info.nr_map_ids && i < 16 && fd < 0; i++) {
				struct bpf_map_info mi;
				uint32_t mi_len = sizeof(mi);
				int m = bpf_map_get_fd_by_id(ids[i]);

				if (m < 0)
					continue;
				memset(&mi, 0, sizeof(mi));
				if (bpf_obj_get_info_by_fd(m, &mi, &mi_len) == 0 &&
				    strcmp(mi.name, DP_FAILOPEN_MAP_NAME) == 0)
					fd = m;
				else
					close(m);
			}
		} else {
			fd = -errno;
		}
	}
	xdp_multiprog__close(mp);
	return fd;
}

/* bpf_ktime_get_ns() reads CLOCK_MONOTONIC: the lease is in its nanoseconds. */
static void
grant(struct dp_failopen *fo, uint64_t until_ns)
{
	uint32_t key = 0;

	for (int r = 0; r < SHAPER_NUM_PORTS; r++)
		if (fo->port[r].lease_fd >= 0)
			(void)bpf_map_update_elem(fo->port[r].lease_fd, &key, &until_ns, BPF_ANY);
}

uint64_t
dp_failopen_decide(struct dp_failopen *fo, const uint64_t *beats, const uint64_t *drained,
		   uint64_t now_ns, uint64_t now_dp, struct dp_failopen_look *look)
{
	uint64_t line = __atomic_load_n(&fo->line_until, __ATOMIC_RELAXED);
	bool turned = true, lost = line == 0 || now_dp >= line, drained_all = true;
	struct dp_failopen_look l = { 0 };

	for (unsigned int i = 0; i < fo->n_workers; i++) {
		if (beats[i] == fo->last_beat[i])
			turned = false;
		fo->last_beat[i] = beats[i];
		/*
		 * A worker that lost the line drops what it reads until its queues
		 * are empty; one that has not done so since (a process resumed, a
		 * worker back on its CPU) still holds frames the bridge sent.
		 */
		if (drained[i] == 0 || drained[i] < line ||
		    (drained[i] < now_dp && now_dp - drained[i] > DP_FAILOPEN_DRAIN_FRESH_NS))
			drained_all = false;
	}
	pthread_mutex_lock(&fo->lock);
	if (fo->last_look_ns != 0 && now_ns > fo->last_look_ns) {
		l.gap_ns = now_ns - fo->last_look_ns;
		if (l.gap_ns > fo->c.look_gap_max_ns)
			fo->c.look_gap_max_ns = l.gap_ns;
	}
	fo->last_look_ns = now_ns;
	if (fo->until_ns != 0 && now_ns > fo->until_ns && !fo->lapse_noted) {
		/*
		 * Run out while shaperd runs. A look since the grant that found
		 * every worker turning renewed it, so if none withheld it, none
		 * came in time: the thread was stopped or kept from its CPU.
		 */
		fo->lapse_noted = true;
		l.lapsed = true;
		l.late = !fo->withheld_since_grant;
		fo->c.lapses++;
		if (l.late)
			fo->c.lapses_late++;
		else
			fo->c.lapses_withheld++;
	}
	if (!turned || (lost && !drained_all)) {
		if (!turned) {
			fo->c.withheld++;
			fo->withheld_since_grant = true;
		} else {
			fo->c.drain_waits++;
		}
		fo->c.holding = fo->until_ns > now_ns;
		pthread_mutex_unlock(&fo->lock);
		if (look != NULL)
			*look = l;
		return 0;
	}
	if (lost) {
		fo->c.takeovers++;
		l.took = true;
	}
	if (fo->until_ns != 0 && now_ns > fo->until_ns) {
		/* the time the bridge had the line */
		l.dark_ns = now_ns - fo->until_ns;
		fo->c.lapsed_ns += l.dark_ns;
	}
	fo->c.renewals++;
	fo->c.holding = true;
	fo->until_ns = now_ns + fo->lease_ns;
	fo->withheld_since_grant = false;
	fo->lapse_noted = false;
	fo->line_next = now_dp + fo->lease_ns - DP_FAILOPEN_MARGIN_NS;
	pthread_mutex_unlock(&fo->lock);
	if (look != NULL)
		*look = l;
	return fo->until_ns;
}

unsigned int
dp_failopen_thread_priority(unsigned int rt_priority)
{
	/* Above the workers: its few microseconds a look must not wait behind a busy one. */
	if (rt_priority == 0)
		return 1;
	return rt_priority < 99 ? rt_priority + 1 : 99;
}

/*
 * Under SCHED_FIFO, so that what the lease says is whether the workers turn:
 * at the normal priority a CPU kept busy by other work (a build, a hog, a
 * noisy neighbour) could hold the thread past the lease while the workers
 * forward, and hand the line to the bridge for nothing.
 */
static void
lease_thread_realtime(const struct dp_failopen *fo)
{
	struct sched_param sp = {
		.sched_priority = (int)dp_failopen_thread_priority(fo->rt_priority),
	};
	int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);

	if (rc != 0)
		shaper_log_warning("fail-open: the lease thread runs under the normal scheduler "
				   "(SCHED_FIFO priority %d refused: %s): other work that keeps it "
				   "from its CPU for a lease hands the line to the bridge",
				   sp.sched_priority, strerror(rc));
	else
		shaper_log_info("fail-open: the lease thread runs under SCHED_FIFO priority %d",
				sp.sched_priority);
}

/*
 * The thread logs only once the lease is out (a lapse) or fresh (a
 * takeover): a write that blocks then cannot cost a renewal.
 */
static void
log_look(const struct dp_failopen *fo, const struct dp_failopen_look *l)
{
	if (l->lapsed && l->late)
		shaper_log_ratelimited(SHAPER_LOG_WARNING,
				       "fail-open: the lease ran out: its thread looked %llu ms "
				       "after the look before (shaperd was stopped, or kept from "
				       "its CPU); the bridge forwards",
				       (unsigned long long)(l->gap_ns / 1000000u));
	else if (l->lapsed)
		shaper_log_ratelimited(SHAPER_LOG_WARNING,
				       "fail-open: the lease ran out: a worker has not turned for "
				       "%llu ms; the bridge forwards",
				       (unsigned long long)(fo->lease_ns / 1000000u));
	if (l->took && l->dark_ns != 0)
		shaper_log_ratelimited(SHAPER_LOG_NOTICE,
				       "fail-open: every worker turns and has emptied its queues; "
				       "shaperd takes the line back from the bridge after %llu ms",
				       (unsigned long long)(l->dark_ns / 1000000u));
}

static void *
lease_thread(void *arg)
{
	struct dp_failopen *fo = arg;
	struct timespec step = {
		.tv_sec = (time_t)(fo->lease_ns / 4 / 1000000000u),
		.tv_nsec = (long)(fo->lease_ns / 4 % 1000000000u),
	};
	/* While the workers empty their queues, look again soon: the bridge has the line. */
	const struct timespec soon = { .tv_sec = 0, .tv_nsec = 1000000 };

	lease_thread_realtime(fo);
	while (!fo->stop) {
		uint64_t beats[SHAPER_MAX_WORKERS], drained[SHAPER_MAX_WORKERS];
		/* only this thread writes the counters */
		uint64_t until, waits = fo->c.drain_waits;
		struct dp_failopen_look look;

		for (unsigned int i = 0; i < fo->n_workers; i++) {
			beats[i] = __atomic_load_n(fo->beats[i], __ATOMIC_RELAXED);
			drained[i] = __atomic_load_n(fo->drained[i], __ATOMIC_ACQUIRE);
		}
		until = dp_failopen_decide(fo, beats, drained, shaper_monotonic_ns(), dp_now_ns(),
					   &look);
		if (until != 0) {
			/* The kernel's program first: until it has the lease, the bridge sends. */
			grant(fo, until);
			__atomic_store_n(&fo->line_until, fo->line_next, __ATOMIC_RELEASE);
		}
		log_look(fo, &look);
		clock_nanosleep(CLOCK_MONOTONIC, 0, fo->c.drain_waits != waits ? &soon : &step,
				NULL);
	}
	return NULL;
}

int
dp_failopen_start(struct dp_failopen *fo, const uint64_t *const *beats,
		  const uint64_t *const *drained, unsigned int n, uint64_t lease_ns,
		  unsigned int rt_priority, char *err, size_t errlen)
{
	int rc;

	fo->lease_ns = lease_ns;
	fo->rt_priority = rt_priority;
	fo->n_workers = n < SHAPER_MAX_WORKERS ? n : SHAPER_MAX_WORKERS;
	for (unsigned int i = 0; i < fo->n_workers; i++) {
		fo->beats[i] = beats[i];
		fo->drained[i] = drained[i];
		fo->last_beat[i] = 0; /* a worker that never turned holds no lease */
	}
	for (int r = 0; r < SHAPER_NUM_PORTS; r++) {
		int fd;

		if (fo->port[r].tc)
			continue; /* its lease map came with its object (attach_tc) */
		fd = find_lease_map(fo->port[r].ifindex);
		if (fd < 0) {
			snprintf(err, errlen,
				 "ports.%s: %s has no XDP program with a \"%s\" map attached (%s): "
				 "is fail_open.program shaperd's failopen.bpf.o?",
				 shaper_port_name[r], fo->port[r].ifname, DP_FAILOPEN_MAP_NAME,
				 strerror(-fd));
			return -1;
		}
		fo->port[r].lease_fd = fd;
	}
	fo->stop = false;
	rc = pthread_create(&fo->thread, NULL, lease_thread, fo);
	if (rc != 0) {
		snprintf(err, errlen, "cannot start the fail-open lease thread: %s", strerror(rc));
		return -1;
	}
	fo->running = true;
	return 0;
}

void
dp_failopen_stop(struct dp_failopen *fo)
{
	if (fo->running) {
		fo->stop = true;
		pthread_join(fo->thread, NULL);
		fo->running = false;
	}
	/* The workers let go first: a frame neither sends is lost, one both send repeats. */
	__atomic_store_n(&fo->line_until, 0, __ATOMIC_RELEASE);
	grant(fo, 0); /* the bridge forwards from the next frame on */
	pthread_mutex_lock(&fo->lock);
	fo->until_ns = 0;
	fo->c.holding = false;
	pthread_mutex_unlock(&fo->lock);
	for (int r = 0; r < SHAPER_NUM_PORTS; r++) {
		struct dp_failopen_port *p = &fo->port[r];

		if (p->tc) {
			detach_tc(p);
			bpf_object__close(p->obj); /* closes the lease map's fd too */
			p->obj = NULL;
		} else if (p->lease_fd >= 0) {
			close(p->lease_fd);
		}
		p->lease_fd = -1;
	}
}

void
dp_failopen_counters(struct dp_failopen *fo, struct dp_failopen_counters *out)
{
	pthread_mutex_lock(&fo->lock);
	*out = fo->c;
	pthread_mutex_unlock(&fo->lock);
}
