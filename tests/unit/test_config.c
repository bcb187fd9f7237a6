/*
 * Unit tests for the JSON config loader (src/config/config.c): defaults,
 * every direction key for each discipline, every error with its exact
 * message (JSON path first), direction_to_json -> parse_direction round
 * trips, load_file, and the example configs in config/.
 *
 * JSON in the tables is written with single quotes and turned into double
 * quotes before parsing (no test input contains a real single quote).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "sched/rate.h"
#include "shaper/config.h"
#include "shaper/limits.h"
#include "shaper/sched.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define PORTS    "'ports': {'wan': 'net_null0', 'lan': 'net_null1'}"

/* 'x' -> "x" into a static buffer. */
static const char *
dq(const char *s)
{
	static char buf[4096];
	size_t i;

	for (i = 0; s[i] != '\0' && i < sizeof(buf) - 1; i++)
		buf[i] = s[i] == '\'' ? '"' : s[i];
	buf[i] = '\0';
	assert_true(s[i] == '\0');
	return buf;
}

static json_t *
jparse(const char *single_quoted)
{
	json_error_t e;
	json_t *j = json_loads(dq(single_quoted), JSON_REJECT_DUPLICATES, &e);

	if (j == NULL)
		print_error("bad test JSON %s: %s\n", single_quoted, e.text);
	assert_non_null(j);
	return j;
}

/* ---- field-by-field comparison of sched_params ---- */

/* clang-format off: one field per line reads better than its reflow */
#define PARAM_FIELDS(X)                                                                            \
	X(discipline)                                                                              \
	X(rate)                                                                                    \
	X(mtu)                                                                                     \
	X(upstream)                                                                                \
	X(seed)                                                                                    \
	X(diffserv)                                                                                \
	X(isolation)                                                                               \
	X(rtt_us)                                                                                  \
	X(target_us)                                                                               \
	X(overhead_mode)                                                                           \
	X(overhead)                                                                                \
	X(mpu)                                                                                     \
	X(framing)                                                                                 \
	X(wash)                                                                                    \
	X(ingress)                                                                                 \
	X(nat)                                                                                     \
	X(vlan_hosts)                                                                              \
	X(lag_limit_ns)                                                                            \
	X(ecn)                                                                                     \
	X(ack_filter)                                                                              \
	X(l4s)                                                                                     \
	X(l4s_step_us)                                                                             \
	X(nqb)                                                                                     \
	X(memlimit)                                                                                \
	X(fifo_limit_pkts)                                                                         \
	X(fifo_limit_bytes)                                                                        \
	X(fqc_flows)                                                                               \
	X(fqc_quantum)                                                                             \
	X(fqc_limit)                                                                               \
	X(fqc_memory_limit)                                                                        \
	X(fqc_target_us)                                                                           \
	X(fqc_interval_us)                                                                         \
	X(fqc_ce_threshold_us)                                                                     \
	X(fqc_drop_batch)
/* clang-format on */

/* Returns the number of fields that differ, printing each. */
static int
params_diff(const char *what, const struct sched_params *got, const struct sched_params *want)
{
	int n = 0;

#define CMP_FIELD(f)                                                                               \
	if ((uint64_t)got->f != (uint64_t)want->f) {                                               \
		print_error("%s: ." #f " = %lld, want %lld\n", what, (long long)got->f,            \
			    (long long)want->f);                                                   \
		n++;                                                                               \
	}
	PARAM_FIELDS(CMP_FIELD)
#undef CMP_FIELD
	return n;
}

/* A field to set on the expected params: name, offset, size, value. */
struct fset {
	const char *name;
	size_t off, size;
	int64_t val;
};

#define F(field, v)                                                                                \
	{                                                                                          \
#field, offsetof(struct sched_params, field),                                      \
				sizeof(((struct sched_params *)0)->field), (int64_t)(v)            \
	}

static void
apply_fsets(struct sched_params *p, const struct fset *s, size_t n)
{
	for (size_t i = 0; i < n && s[i].name != NULL; i++) {
		unsigned char *at = (unsigned char *)p + s[i].off;

		if (s[i].size == sizeof(bool)) {
			bool b = s[i].val != 0;
			memcpy(at, &b, sizeof(b));
		} else if (s[i].size == 4) {
			uint32_t v = (uint32_t)s[i].val;
			memcpy(at, &v, sizeof(v));
		} else if (s[i].size == 8) {
			uint64_t v = (uint64_t)s[i].val;
			memcpy(at, &v, sizeof(v));
		} else {
			fail_msg("field %s has an unexpected size %zu", s[i].name, s[i].size);
		}
	}
}

static struct sched_params
default_dir(enum shaper_dir d)
{
	struct shaper_config c;

	shaper_config_default(&c);
	return c.dir[d];
}

/* ---- loader helpers ---- */

static int
load(const char *single_quoted, struct shaper_config *c, char *err, size_t errlen)
{
	memset(c, 0xa5, sizeof(*c)); /* the loader must fill everything itself */
	err[0] = '\0';
	return shaper_config_load_string(dq(single_quoted), c, err, errlen);
}

static void
load_ok(const char *single_quoted, struct shaper_config *c)
{
	char err[SHAPER_ERR_LEN];
	int rc = load(single_quoted, c, err, sizeof(err));

	if (rc != 0)
		print_error("config %s\n  refused: %s\n", single_quoted, err);
	assert_int_equal(rc, 0);
}

/* ---- defaults ---- */

static void
test_defaults(void **state)
{
	struct shaper_config c;
	struct sched_params want;

	(void)state;
	load_ok("{" PORTS "}", &c);
	assert_string_equal(c.port[SHAPER_PORT_WAN].device, "net_null0");
	assert_string_equal(c.port[SHAPER_PORT_LAN].device, "net_null1");
	for (int i = 0; i < SHAPER_NUM_PORTS; i++) {
		assert_int_equal(c.port[i].rx_desc, 1024);
		assert_int_equal(c.port[i].tx_desc, 1024);
	}
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		const struct sched_params *p = &c.dir[d];

		assert_int_equal(p->discipline, SCHED_DISC_CAKE);
		assert_int_equal(p->rate, 0);
		assert_int_equal(p->mtu, 1514);
		assert_int_equal(p->upstream, d == SHAPER_UP);
		assert_int_equal(p->diffserv, SCHED_DIFFSERV3);
		assert_int_equal(p->isolation, SCHED_TRIPLE_ISOLATE);
		assert_int_equal(p->rtt_us, 100000);
		assert_int_equal(p->target_us, 5000);
		assert_true(p->ecn);
		assert_false(p->wash);
		assert_false(p->ingress);
		assert_false(p->overhead_mode);
		assert_int_equal(p->overhead, 0);
		assert_int_equal(p->mpu, 0);
		assert_int_equal(p->framing, SCHED_FRAMING_NONE);
		assert_int_equal(p->ack_filter, SCHED_ACK_FILTER_OFF);
		assert_int_equal(p->memlimit, 0);
		assert_false(p->l4s); /* off: sch_cake's behaviour exactly */
		assert_int_equal(p->l4s_step_us, 500);
		assert_false(p->nqb);
		assert_int_equal(p->fifo_limit_pkts, 1000);
		assert_int_equal(p->fifo_limit_bytes, 0);
		assert_int_equal(p->fqc_flows, 1024);
		assert_int_equal(p->fqc_quantum, 1514);
		assert_int_equal(p->fqc_limit, 10240);
		assert_int_equal(p->fqc_memory_limit, 32u << 20);
		assert_int_equal(p->fqc_target_us, 5000);
		assert_int_equal(p->fqc_interval_us, 100000);
		assert_int_equal(p->fqc_ce_threshold_us, 0);
		assert_int_equal(p->fqc_drop_batch, 64);
		assert_int_equal(c.emulate[d].delay_ns, 0);
		assert_int_equal(c.emulate[d].jitter_ns, 0);
		assert_int_equal(c.emulate[d].loss_ppm, 0);
		assert_int_equal(c.emulate[d].seed, 0);
	}
	/* the two directions hash differently */
	assert_int_not_equal(c.dir[SHAPER_UP].seed, c.dir[SHAPER_DOWN].seed);
	/* and the whole direction is sched_params_default but for upstream/seed */
	sched_params_default(&want, SCHED_DISC_CAKE);
	want.upstream = true;
	want.seed = c.dir[SHAPER_UP].seed;
	assert_int_equal(params_diff("default upstream", &c.dir[SHAPER_UP], &want), 0);

	assert_true(c.control_enabled);
	assert_string_equal(c.control_socket, "/run/shaper/shaper.sock");
	assert_string_equal(c.control_group, "");
	assert_int_equal(c.control_mode, 0660);
	/* who can open the socket may change the config, as before levels; others read */
	assert_int_equal(c.control_level, SHAPER_LEVEL_ADMIN);
	assert_int_equal(c.control_default_level, SHAPER_LEVEL_USER);
	assert_string_equal(c.control_admin_group, "");
	assert_int_equal(c.n_control_sockets, 0);
	assert_int_equal(c.n_workers, 1);
	assert_int_equal(c.worker_lcore[0], 0);
	assert_int_equal(c.burst, 32);
	assert_int_equal(c.mbufs[SHAPER_UP], 0); /* auto */
	assert_int_equal(c.mbufs[SHAPER_DOWN], 0);
	assert_int_equal(c.emulate[SHAPER_UP].limit, SHAPER_EMU_LIMIT_DEFAULT);
	assert_int_equal(c.idle_sleep_us, 0);
	assert_false(c.pdump);
	assert_true(c.passive_rtt);
}

static void
test_ports(void **state)
{
	struct shaper_config c;

	(void)state;
	/* as objects, with descriptors */
	load_ok("{'ports': {'wan': {'device': '0000:01:00.0', 'rx_descriptors': 2048,"
		" 'tx_descriptors': 512}, 'lan': {'device': 'net_af_packet0,iface=lan0'}}}",
		&c);
	assert_string_equal(c.port[SHAPER_PORT_WAN].device, "0000:01:00.0");
	assert_int_equal(c.port[SHAPER_PORT_WAN].rx_desc, 2048);
	assert_int_equal(c.port[SHAPER_PORT_WAN].tx_desc, 512);
	assert_string_equal(c.port[SHAPER_PORT_LAN].device, "net_af_packet0,iface=lan0");
	assert_int_equal(c.port[SHAPER_PORT_LAN].rx_desc, 1024);
	assert_int_equal(c.port[SHAPER_PORT_LAN].tx_desc, 1024);
	/* mixed, limits of the descriptor range, lan first */
	load_ok("{'ports': {'lan': 'eth1', 'wan': {'device': 'eth0', 'rx_descriptors': 64,"
		" 'tx_descriptors': 16384}}}",
		&c);
	assert_string_equal(c.port[SHAPER_PORT_WAN].device, "eth0");
	assert_string_equal(c.port[SHAPER_PORT_LAN].device, "eth1");
	assert_int_equal(c.port[SHAPER_PORT_WAN].rx_desc, 64);
	assert_int_equal(c.port[SHAPER_PORT_WAN].tx_desc, 16384);
	/* comments at the top level, of any type */
	load_ok("{'comment': 'a note', '_comment': ['x', {'y': 1}], " PORTS "}", &c);
}

/* ---- every direction key ---- */

struct dir_case {
	const char *json; /* the downstream object */
	struct fset set[6];
};

static const struct dir_case dir_cases[] = {
	{ "{}", { { 0 } } },
	{ "{'discipline': 'cake'}", { { 0 } } },
	/* bandwidth, mtu, seed: every discipline */
	{ "{'bandwidth': '280mbit'}", { F(rate, 35000000) } },
	{ "{'bandwidth': '45Mbit'}", { F(rate, 5625000) } },
	{ "{'bandwidth': '1gbit'}", { F(rate, 125000000) } },
	{ "{'bandwidth': '500kbit'}", { F(rate, 62500) } },
	{ "{'bandwidth': '10MBps'}", { F(rate, 10000000) } },
	{ "{'bandwidth': '1kbit'}", { F(rate, 125) } },
	{ "{'bandwidth': '100tbit'}", { F(rate, 12500000000000LL) } },
	{ "{'bandwidth': 'unlimited'}", { F(rate, 0) } },
	{ "{'bandwidth': '0bit'}", { F(rate, 0) } },
	{ "{'mtu': 1500}", { F(mtu, 1500) } },
	{ "{'mtu': 68}", { F(mtu, 68) } },
	{ "{'mtu': 65535}", { F(mtu, 65535) } },
	{ "{'seed': 42}", { F(seed, 42) } },
	{ "{'seed': 0}", { F(seed, 0) } },
	{ "{'seed': 9223372036854775807}", { F(seed, INT64_MAX) } },
	/* rtt: every preset, and times (target = rtt / 20, at least 1 us) */
	{ "{'rtt': 'datacentre'}", { F(rtt_us, 100), F(target_us, 5) } },
	{ "{'rtt': 'lan'}", { F(rtt_us, 1000), F(target_us, 50) } },
	{ "{'rtt': 'metro'}", { F(rtt_us, 10000), F(target_us, 500) } },
	{ "{'rtt': 'regional'}", { F(rtt_us, 30000), F(target_us, 1500) } },
	{ "{'rtt': 'internet'}", { F(rtt_us, 100000), F(target_us, 5000) } },
	{ "{'rtt': 'oceanic'}", { F(rtt_us, 300000), F(target_us, 15000) } },
	{ "{'rtt': 'satellite'}", { F(rtt_us, 1000000), F(target_us, 50000) } },
	{ "{'rtt': 'interplanetary'}", { F(rtt_us, 1000000000), F(target_us, 50000000) } },
	{ "{'rtt': '40ms'}", { F(rtt_us, 40000), F(target_us, 2000) } },
	{ "{'rtt': '200ms'}", { F(rtt_us, 200000), F(target_us, 10000) } },
	{ "{'rtt': '1.5s'}", { F(rtt_us, 1500000), F(target_us, 75000) } },
	{ "{'rtt': '1ms'}", { F(rtt_us, 1000), F(target_us, 50) } },
	{ "{'rtt': '10us'}", { F(rtt_us, 10), F(target_us, 1) } },
	{ "{'rtt': '1us'}", { F(rtt_us, 1), F(target_us, 1) } },
	{ "{'rtt': '1000s'}", { F(rtt_us, 1000000000), F(target_us, 50000000) } },
	{ "{'target': '10ms'}", { F(target_us, 10000) } },
	{ "{'target': '1us'}", { F(target_us, 1) } },
	{ "{'rtt': '40ms', 'target': '3ms'}", { F(rtt_us, 40000), F(target_us, 3000) } },
	/* diffserv and isolation: every name */
	{ "{'diffserv': 'diffserv3'}", { F(diffserv, SCHED_DIFFSERV3) } },
	{ "{'diffserv': 'diffserv4'}", { F(diffserv, SCHED_DIFFSERV4) } },
	{ "{'diffserv': 'diffserv8'}", { F(diffserv, SCHED_DIFFSERV8) } },
	{ "{'diffserv': 'besteffort'}", { F(diffserv, SCHED_BESTEFFORT) } },
	{ "{'diffserv': 'precedence'}", { F(diffserv, SCHED_PRECEDENCE) } },
	{ "{'isolation': 'flowblind'}", { F(isolation, SCHED_FLOWBLIND) } },
	{ "{'isolation': 'srchost'}", { F(isolation, SCHED_SRCHOST) } },
	{ "{'isolation': 'dsthost'}", { F(isolation, SCHED_DSTHOST) } },
	{ "{'isolation': 'hosts'}", { F(isolation, SCHED_HOSTS) } },
	{ "{'isolation': 'flows'}", { F(isolation, SCHED_FLOWS) } },
	{ "{'isolation': 'dual-srchost'}", { F(isolation, SCHED_DUAL_SRCHOST) } },
	{ "{'isolation': 'dual-dsthost'}", { F(isolation, SCHED_DUAL_DSTHOST) } },
	{ "{'isolation': 'triple-isolate'}", { F(isolation, SCHED_TRIPLE_ISOLATE) } },
	/* overhead as an integer */
	{ "{'overhead': 0}", { F(overhead_mode, 1), F(overhead, 0) } },
	{ "{'overhead': 18}", { F(overhead_mode, 1), F(overhead, 18) } },
	{ "{'overhead': -4}", { F(overhead_mode, 1), F(overhead, -4) } },
	{ "{'overhead': -64}", { F(overhead_mode, 1), F(overhead, -64) } },
	{ "{'overhead': 256}", { F(overhead_mode, 1), F(overhead, 256) } },
	/* overhead keywords: every one, and combinations */
	{ "{'overhead': 'raw'}", { F(overhead_mode, 0), F(overhead, 0) } },
	{ "{'overhead': 'ethernet'}", { F(overhead_mode, 1), F(overhead, 38), F(mpu, 84) } },
	{ "{'overhead': 'ether-vlan'}", { F(overhead_mode, 1), F(overhead, 4) } },
	{ "{'overhead': 'ethernet ether-vlan'}",
	  { F(overhead_mode, 1), F(overhead, 42), F(mpu, 84) } },
	{ "{'overhead': '  ethernet   ether-vlan '}",
	  { F(overhead_mode, 1), F(overhead, 42), F(mpu, 84) } },
	{ "{'overhead': 'docsis'}",
	  { F(overhead_mode, 1), F(overhead, 18), F(mpu, 64), F(framing, SCHED_FRAMING_NONE) } },
	{ "{'overhead': 'docsis ether-vlan'}",
	  { F(overhead_mode, 1), F(overhead, 22), F(mpu, 64) } },
	{ "{'overhead': 'conservative'}",
	  { F(overhead_mode, 1), F(overhead, 48), F(framing, SCHED_FRAMING_ATM) } },
	{ "{'overhead': 'pppoe-ptm'}",
	  { F(overhead_mode, 1), F(overhead, 30), F(framing, SCHED_FRAMING_PTM) } },
	{ "{'overhead': 'bridged-ptm'}",
	  { F(overhead_mode, 1), F(overhead, 22), F(framing, SCHED_FRAMING_PTM) } },
	{ "{'overhead': 'ipoa-vcmux'}",
	  { F(overhead_mode, 1), F(overhead, 8), F(framing, SCHED_FRAMING_ATM) } },
	{ "{'overhead': 'ipoa-llcsnap'}",
	  { F(overhead_mode, 1), F(overhead, 16), F(framing, SCHED_FRAMING_ATM) } },
	{ "{'overhead': 'bridged-vcmux'}",
	  { F(overhead_mode, 1), F(overhead, 24), F(framing, SCHED_FRAMING_ATM) } },
	{ "{'overhead': 'bridged-llcsnap'}",
	  { F(overhead_mode, 1), F(overhead, 32), F(framing, SCHED_FRAMING_ATM) } },
	{ "{'overhead': 'pppoa-vcmux'}",
	  { F(overhead_mode, 1), F(overhead, 10), F(framing, SCHED_FRAMING_ATM) } },
	{ "{'overhead': 'pppoa-llc'}",
	  { F(overhead_mode, 1), F(overhead, 14), F(framing, SCHED_FRAMING_ATM) } },
	{ "{'overhead': 'pppoe-vcmux'}",
	  { F(overhead_mode, 1), F(overhead, 32), F(framing, SCHED_FRAMING_ATM) } },
	{ "{'overhead': 'pppoe-llcsnap'}",
	  { F(overhead_mode, 1), F(overhead, 40), F(framing, SCHED_FRAMING_ATM) } },
	{ "{'overhead': 'pppoe-ptm ether-vlan'}",
	  { F(overhead_mode, 1), F(overhead, 34), F(framing, SCHED_FRAMING_PTM) } },
	/* overhead, mpu and atm apply in file order, as tc's words do left to right */
	{ "{'overhead': 'ethernet', 'mpu': 64}",
	  { F(overhead_mode, 1), F(overhead, 38), F(mpu, 64) } },
	{ "{'mpu': 64, 'overhead': 'ethernet'}",
	  { F(overhead_mode, 1), F(overhead, 38), F(mpu, 84) } },
	{ "{'mpu': 0, 'overhead': 'docsis'}",
	  { F(overhead_mode, 1), F(overhead, 18), F(mpu, 64) } },
	{ "{'overhead': 'docsis', 'mpu': 0}", { F(overhead_mode, 1), F(overhead, 18), F(mpu, 0) } },
	{ "{'overhead': 'docsis', 'atm': 'ptm'}",
	  { F(overhead_mode, 1), F(overhead, 18), F(mpu, 64), F(framing, SCHED_FRAMING_PTM) } },
	{ "{'atm': 'ptm', 'overhead': 'docsis'}",
	  { F(overhead_mode, 1), F(overhead, 18), F(mpu, 64), F(framing, SCHED_FRAMING_NONE) } },
	{ "{'atm': 'noatm', 'overhead': 'conservative'}",
	  { F(overhead_mode, 1), F(overhead, 48), F(framing, SCHED_FRAMING_ATM) } },
	/* tc-cake(8)'s combinations inside one overhead string */
	{ "{'overhead': 'docsis conservative'}",
	  { F(overhead_mode, 1), F(overhead, 48), F(mpu, 64), F(framing, SCHED_FRAMING_ATM) } },
	{ "{'overhead': 'conservative docsis'}",
	  { F(overhead_mode, 1), F(overhead, 66), F(mpu, 64), F(framing, SCHED_FRAMING_NONE) } },
	{ "{'overhead': 'raw overhead 18'}",
	  { F(overhead_mode, 0), F(overhead, 18), F(framing, SCHED_FRAMING_NONE) } },
	{ "{'overhead': 'overhead 18 raw'}", { F(overhead_mode, 0), F(overhead, 0) } },
	{ "{'overhead': 'ptm raw'}", { F(overhead_mode, 0), F(framing, SCHED_FRAMING_NONE) } },
	{ "{'atm': 'atm', 'overhead': 'raw'}",
	  { F(overhead_mode, 0), F(framing, SCHED_FRAMING_NONE) } },
	{ "{'overhead': 'docsis mpu 100'}", { F(overhead_mode, 1), F(overhead, 18), F(mpu, 100) } },
	{ "{'overhead': 'mpu 100 docsis'}", { F(overhead_mode, 1), F(overhead, 18), F(mpu, 64) } },
	{ "{'overhead': 'overhead 20 mpu 72 atm'}",
	  { F(overhead_mode, 1), F(overhead, 20), F(mpu, 72), F(framing, SCHED_FRAMING_ATM) } },
	{ "{'overhead': 'ethernet overhead -4'}",
	  { F(overhead_mode, 1), F(overhead, -4), F(mpu, 84) } },
	{ "{'overhead': 'via-ethernet docsis'}",
	  { F(overhead_mode, 1), F(overhead, 18), F(mpu, 64) } },
	{ "{'nat': true}", { F(nat, 1) } },
	{ "{'nat': false}", { F(nat, 0) } },
	{ "{'vlan_hosts': true}", { F(vlan_hosts, 1) } },
	{ "{'vlan_hosts': false}", { F(vlan_hosts, 0) } },
	/* mpu and atm alone */
	{ "{'mpu': 0}", { F(mpu, 0) } },
	{ "{'mpu': 64}", { F(mpu, 64) } },
	{ "{'mpu': 256}", { F(mpu, 256) } },
	{ "{'atm': 'atm'}", { F(framing, SCHED_FRAMING_ATM) } },
	{ "{'atm': 'ptm'}", { F(framing, SCHED_FRAMING_PTM) } },
	{ "{'atm': 'noatm'}", { F(framing, SCHED_FRAMING_NONE) } },
	/* cake flags */
	{ "{'wash': true}", { F(wash, 1) } },
	{ "{'wash': false}", { F(wash, 0) } },
	{ "{'ingress': true}", { F(ingress, 1) } },
	{ "{'ingress': false}", { F(ingress, 0) } },
	{ "{'ecn': false}", { F(ecn, 0) } },
	{ "{'ecn': true}", { F(ecn, 1) } },
	{ "{'ack_filter': true}", { F(ack_filter, SCHED_ACK_FILTER_ON) } },
	{ "{'ack_filter': false}", { F(ack_filter, SCHED_ACK_FILTER_OFF) } },
	{ "{'ack_filter': 'ack-filter'}", { F(ack_filter, SCHED_ACK_FILTER_ON) } },
	{ "{'ack_filter': 'ack-filter-aggressive'}",
	  { F(ack_filter, SCHED_ACK_FILTER_AGGRESSIVE) } },
	{ "{'ack_filter': 'no-ack-filter'}", { F(ack_filter, SCHED_ACK_FILTER_OFF) } },
	{ "{'memlimit': '32mb'}", { F(memlimit, 33554432) } },
	{ "{'memlimit': '4kb'}", { F(memlimit, 4096) } },
	{ "{'memlimit': '0b'}", { F(memlimit, 0) } },
	{ "{'memlimit': '1024gb'}", { F(memlimit, 1099511627776LL) } },
	/* L4S: the switch, its step (a time, kept in µs) and the NQB map */
	{ "{'l4s': true}", { F(l4s, 1) } },
	{ "{'l4s': false}", { F(l4s, 0) } },
	{ "{'l4s': true, 'l4s_step': '1ms'}", { F(l4s, 1), F(l4s_step_us, 1000) } },
	{ "{'l4s_step': '250us'}", { F(l4s_step_us, 250) } },
	{ "{'l4s_step': '1us'}", { F(l4s_step_us, 1) } },
	{ "{'l4s_step': '1s'}", { F(l4s_step_us, 1000000) } },
	{ "{'l4s_step': '0.75ms'}", { F(l4s_step_us, 750) } },
	{ "{'nqb': true}", { F(nqb, 1) } },
	{ "{'nqb': false}", { F(nqb, 0) } },
	/* fq_codel: every key */
	{ "{'discipline': 'fq_codel'}", { F(discipline, SCHED_DISC_FQ_CODEL) } },
	{ "{'discipline': 'fq_codel', 'flows': 1}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(fqc_flows, 1) } },
	{ "{'discipline': 'fq_codel', 'flows': 65536}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(fqc_flows, 65536) } },
	{ "{'discipline': 'fq_codel', 'quantum': 300}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(fqc_quantum, 300) } },
	{ "{'discipline': 'fq_codel', 'quantum': 256}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(fqc_quantum, 256) } },
	{ "{'discipline': 'fq_codel', 'limit': 1000}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(fqc_limit, 1000) } },
	{ "{'discipline': 'fq_codel', 'limit': 1}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(fqc_limit, 1) } },
	{ "{'discipline': 'fq_codel', 'memory_limit': '4mb'}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(fqc_memory_limit, 4194304) } },
	{ "{'discipline': 'fq_codel', 'memory_limit': '4kb'}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(fqc_memory_limit, 4096) } },
	{ "{'discipline': 'fq_codel', 'target': '1ms'}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(fqc_target_us, 1000), F(target_us, 5000) } },
	{ "{'discipline': 'fq_codel', 'interval': '200ms'}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(fqc_interval_us, 200000) } },
	{ "{'discipline': 'fq_codel', 'ce_threshold': '2ms'}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(fqc_ce_threshold_us, 2000) } },
	{ "{'discipline': 'fq_codel', 'ce_threshold': '0us'}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(fqc_ce_threshold_us, 0) } },
	{ "{'discipline': 'fq_codel', 'l4s': true}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(l4s, 1) } },
	{ "{'discipline': 'fq_codel', 'l4s': true, 'l4s_step': '1ms', 'ce_threshold': '2ms'}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(l4s, 1), F(l4s_step_us, 1000),
	    F(fqc_ce_threshold_us, 2000) } },
	{ "{'discipline': 'fq_codel', 'l4s_step': '1s'}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(l4s_step_us, 1000000) } },
	{ "{'discipline': 'fq_codel', 'drop_batch': 32}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(fqc_drop_batch, 32) } },
	{ "{'discipline': 'fq_codel', 'drop_batch': 4096}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(fqc_drop_batch, 4096) } },
	{ "{'discipline': 'fq_codel', 'ecn': false}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(ecn, 0) } },
	{ "{'discipline': 'fq_codel', 'bandwidth': '20mbit', 'overhead': 'ethernet', 'atm': "
	  "'ptm'}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(rate, 2500000), F(overhead_mode, 1),
	    F(overhead, 38), F(mpu, 84), F(framing, SCHED_FRAMING_PTM) } },
	/* the discipline is read first, wherever it is written */
	{ "{'flows': 16, 'discipline': 'fq_codel'}",
	  { F(discipline, SCHED_DISC_FQ_CODEL), F(fqc_flows, 16) } },
	/* fifo: limit as packets or as bytes */
	{ "{'discipline': 'fifo'}", { F(discipline, SCHED_DISC_FIFO) } },
	{ "{'discipline': 'fifo', 'limit': 500}",
	  { F(discipline, SCHED_DISC_FIFO), F(fifo_limit_pkts, 500), F(fifo_limit_bytes, 0) } },
	{ "{'discipline': 'fifo', 'limit': 16777216}",
	  { F(discipline, SCHED_DISC_FIFO), F(fifo_limit_pkts, 16777216) } },
	{ "{'discipline': 'fifo', 'limit': '1mb'}",
	  { F(discipline, SCHED_DISC_FIFO), F(fifo_limit_pkts, 0), F(fifo_limit_bytes, 1048576) } },
	{ "{'discipline': 'fifo', 'limit': '64b'}",
	  { F(discipline, SCHED_DISC_FIFO), F(fifo_limit_pkts, 0), F(fifo_limit_bytes, 64) } },
	{ "{'discipline': 'fifo', 'limit': '1500kb'}",
	  { F(discipline, SCHED_DISC_FIFO), F(fifo_limit_pkts, 0), F(fifo_limit_bytes, 1536000) } },
	{ "{'discipline': 'fifo', 'bandwidth': '10mbit', 'mtu': 9000, 'overhead': 'docsis'}",
	  { F(discipline, SCHED_DISC_FIFO), F(rate, 1250000), F(mtu, 9000), F(overhead_mode, 1),
	    F(overhead, 18), F(mpu, 64) } },
	/* emulate does not touch the scheduler's parameters */
	{ "{'emulate': {'delay': '20ms'}}", { { 0 } } },
};

/*
 * What a frame is charged after the overhead words (tc-cake(8)): a full
 * 1514-byte Ethernet frame (1500 network bytes) and a 60-byte one (46).
 */
static void
test_overhead_charged_size(void **state)
{
	static const struct {
		const char *overhead; /* JSON value */
		uint32_t full, small;
	} cases[] = {
		{ "'raw'", 1514, 60 },
		{ "'ethernet'", 1538, 84 },             /* +38, mpu 84 */
		{ "'docsis'", 1518, 64 },               /* +18, mpu 64 */
		{ "'conservative'", 1749, 106 },        /* 48 set, ATM: 33 and 2 cells */
		{ "'docsis conservative'", 1749, 106 }, /* conservative sets, not adds */
		{ "'conservative docsis'", 1566, 112 }, /* docsis adds 18 and sets noatm */
		{ "'bridged-ptm'", 1546, 70 },          /* +22, 64b/65b */
		{ "'pppoe-vcmux'", 1696, 106 },         /* +32, ATM: 32 and 2 cells */
		{ "'raw overhead 18'", 1532, 78 },      /* raw L2 length + 18 */
		{ "'overhead 18 raw'", 1514, 60 },      /* raw resets the overhead */
		{ "'ptm raw'", 1514, 60 },              /* raw forces noatm */
		{ "'docsis mpu 100'", 1518, 100 },      /* the later mpu wins */
		{ "'mpu 100 docsis'", 1518, 64 },       /* ... either way round */
		{ "'ethernet ether-vlan ether-vlan'", 1546, 92 },
		{ "18", 1518, 64 }, /* overhead 18: strip 14, add 18 */
		{ "'overhead 18'", 1518, 64 },
	};

	(void)state;
	for (size_t i = 0; i < NELEM(cases); i++) {
		char json[256], err[SHAPER_ERR_LEN];
		struct shaper_config c;
		uint32_t full, small;

		snprintf(json, sizeof(json), "{" PORTS ", 'downstream': {'overhead': %s}}",
			 cases[i].overhead);
		if (load(json, &c, err, sizeof(err)) != 0)
			fail_msg("overhead %s refused: %s", cases[i].overhead, err);
		full = sched_adjust_len(&c.dir[SHAPER_DOWN], 1514, 14, NULL);
		small = sched_adjust_len(&c.dir[SHAPER_DOWN], 60, 14, NULL);
		if (full != cases[i].full || small != cases[i].small)
			fail_msg("overhead %s: charged %u and %u bytes, want %u and %u",
				 cases[i].overhead, full, small, cases[i].full, cases[i].small);
	}
}

static void
test_direction_keys(void **state)
{
	int failures = 0;

	(void)state;
	for (size_t i = 0; i < NELEM(dir_cases); i++) {
		char json[1024], err[SHAPER_ERR_LEN], what[1100];
		struct shaper_config c;
		struct sched_params want_down = default_dir(SHAPER_DOWN);
		struct sched_params want_up = default_dir(SHAPER_UP);

		apply_fsets(&want_down, dir_cases[i].set, NELEM(dir_cases[i].set));
		snprintf(json, sizeof(json), "{" PORTS ", 'downstream': %s}", dir_cases[i].json);
		if (load(json, &c, err, sizeof(err)) != 0) {
			print_error("downstream %s: refused: %s\n", dir_cases[i].json, err);
			failures++;
			continue;
		}
		snprintf(what, sizeof(what), "downstream %s", dir_cases[i].json);
		failures += params_diff(what, &c.dir[SHAPER_DOWN], &want_down);
		snprintf(what, sizeof(what), "upstream after downstream %s", dir_cases[i].json);
		failures += params_diff(what, &c.dir[SHAPER_UP], &want_up);

		/* the same object applies the same way to upstream */
		if (strstr(dir_cases[i].json, "'seed'") != NULL)
			continue; /* default seeds differ per direction by design */
		want_down.upstream = want_up.upstream;
		want_down.seed = want_up.seed;
		snprintf(json, sizeof(json), "{" PORTS ", 'upstream': %s}", dir_cases[i].json);
		if (load(json, &c, err, sizeof(err)) != 0) {
			print_error("upstream %s: refused: %s\n", dir_cases[i].json, err);
			failures++;
			continue;
		}
		snprintf(what, sizeof(what), "upstream %s", dir_cases[i].json);
		failures += params_diff(what, &c.dir[SHAPER_UP], &want_down);
	}
	assert_int_equal(failures, 0);
}

/* A discipline change keeps the link (rate, mtu, overhead...), resets the rest. */
static void
test_discipline_switch(void **state)
{
	struct sched_params p, want;
	char err[SHAPER_ERR_LEN] = "";
	json_t *j;

	(void)state;
	p = default_dir(SHAPER_UP);
	j = jparse("{'bandwidth': '20mbit', 'mtu': 1500, 'overhead': 'docsis', 'atm': 'ptm',"
		   " 'rtt': '40ms', 'diffserv': 'diffserv4', 'wash': true, 'ecn': false,"
		   " 'seed': 7}");
	assert_int_equal(shaper_config_parse_direction(j, "upstream", &p, err, sizeof(err)), 0);
	json_decref(j);

	j = jparse("{'discipline': 'fq_codel'}");
	assert_int_equal(shaper_config_parse_direction(j, "upstream", &p, err, sizeof(err)), 0);
	json_decref(j);
	sched_params_default(&want, SCHED_DISC_FQ_CODEL);
	want.rate = 2500000;
	want.mtu = 1500;
	want.upstream = true;
	want.seed = 7;
	want.overhead_mode = true;
	want.overhead = 18;
	want.mpu = 64;
	want.framing = SCHED_FRAMING_PTM;
	assert_int_equal(params_diff("cake -> fq_codel", &p, &want), 0);

	/* naming the current discipline again changes nothing */
	p.fqc_flows = 99;
	j = jparse("{'discipline': 'fq_codel'}");
	assert_int_equal(shaper_config_parse_direction(j, "upstream", &p, err, sizeof(err)), 0);
	json_decref(j);
	assert_int_equal(p.fqc_flows, 99);

	j = jparse("{'discipline': 'fifo', 'limit': 10}");
	assert_int_equal(shaper_config_parse_direction(j, "upstream", &p, err, sizeof(err)), 0);
	json_decref(j);
	sched_params_default(&want, SCHED_DISC_FIFO);
	want.rate = 2500000;
	want.mtu = 1500;
	want.upstream = true;
	want.seed = 7;
	want.overhead_mode = true;
	want.overhead = 18;
	want.mpu = 64;
	want.framing = SCHED_FRAMING_PTM;
	want.fifo_limit_pkts = 10;
	assert_int_equal(params_diff("fq_codel -> fifo", &p, &want), 0);
}

/* An error leaves the parameters exactly as they were. */
static void
test_direction_error_is_atomic(void **state)
{
	struct sched_params p = default_dir(SHAPER_DOWN), before = p;
	char err[SHAPER_ERR_LEN] = "";
	json_t *j;

	(void)state;
	j = jparse("{'discipline': 'fq_codel', 'bandwidth': '10mbit', 'flows': 16, 'mtu': 1}");
	assert_int_equal(shaper_config_parse_direction(j, "downstream", &p, err, sizeof(err)), -1);
	json_decref(j);
	assert_string_equal(err, "downstream.mtu: 1 is out of range 68..65535");
	assert_int_equal(params_diff("after error", &p, &before), 0);

	/* emulate belongs to the file, not to a live direction change */
	j = jparse("{'bandwidth': '10mbit', 'emulate': {'delay': '1ms'}}");
	assert_int_equal(shaper_config_parse_direction(j, "upstream", &p, err, sizeof(err)), -1);
	json_decref(j);
	assert_string_equal(err, "upstream.emulate: cannot be changed here");
	assert_int_equal(params_diff("after emulate", &p, &before), 0);

	/* no message buffer */
	j = jparse("{'flows': 16}");
	assert_int_equal(shaper_config_parse_direction(j, "x", &p, NULL, 0), -1);
	json_decref(j);
	/* the path is any prefix the caller likes */
	j = jparse("{'bandwidth': '280mbps'}");
	assert_int_equal(shaper_config_parse_direction(j, "config set up", &p, err, sizeof(err)),
			 -1);
	json_decref(j);
	assert_string_equal(err, "config set up.bandwidth: \"280mbps\" is not a rate (try "
				 "\"280mbit\")");
	/* not an object */
	j = json_string("cake");
	assert_int_equal(shaper_config_parse_direction(j, "up", &p, err, sizeof(err)), -1);
	json_decref(j);
	assert_string_equal(err, "up: expected an object, got a string");
}

/* ---- emulate, control, lcores, dataplane ---- */

static void
test_emulate(void **state)
{
	struct shaper_config c;

	(void)state;
	load_ok("{" PORTS ", 'downstream': {'emulate': {'delay': '20ms', 'jitter': '5ms',"
		" 'loss': 1.5, 'seed': 42, 'limit': 5000}}, 'upstream': {'emulate': {'loss': 100}}}",
		&c);
	assert_int_equal(c.emulate[SHAPER_DOWN].limit, 5000);
	assert_int_equal(c.emulate[SHAPER_UP].limit, SHAPER_EMU_LIMIT_DEFAULT);
	assert_int_equal(c.emulate[SHAPER_DOWN].delay_ns, 20000000);
	assert_int_equal(c.emulate[SHAPER_DOWN].jitter_ns, 5000000);
	assert_int_equal(c.emulate[SHAPER_DOWN].loss_ppm, 15000);
	assert_int_equal(c.emulate[SHAPER_DOWN].seed, 42);
	assert_int_equal(c.emulate[SHAPER_UP].delay_ns, 0);
	assert_int_equal(c.emulate[SHAPER_UP].loss_ppm, 1000000);

	load_ok("{" PORTS ", 'upstream': {'discipline': 'fifo', 'emulate': {'delay': '60s',"
		" 'jitter': '0ns', 'loss': 0, 'seed': 0}},"
		" 'downstream': {'emulate': {'loss': 0.0001, 'delay': '100us'}}}",
		&c);
	assert_int_equal(c.emulate[SHAPER_UP].delay_ns, 60000000000ULL);
	assert_int_equal(c.emulate[SHAPER_UP].jitter_ns, 0);
	assert_int_equal(c.emulate[SHAPER_UP].loss_ppm, 0);
	assert_int_equal(c.emulate[SHAPER_DOWN].loss_ppm, 1);
	assert_int_equal(c.emulate[SHAPER_DOWN].delay_ns, 100000);
	assert_int_equal(c.dir[SHAPER_UP].discipline, SCHED_DISC_FIFO);
}

static void
test_control_lcores_dataplane(void **state)
{
	struct shaper_config c;

	(void)state;
	load_ok("{" PORTS ", 'control': {'enabled': false, 'socket': '/tmp/s/ctl.sock',"
		" 'group': 'shaper', 'mode': '0600'}, 'lcores': {'workers': [1, 2]},"
		" 'dataplane': {'mbufs': 32767, 'burst': 64, 'idle_sleep': '20us',"
		" 'rt_priority': 50, 'pdump': true,"
		" 'passive_rtt': false},"
		" 'upstream': {'bandwidth': '20mbit', 'lag_limit': '1ms'},"
		" 'downstream': {'discipline': 'fifo', 'lag_limit': 'auto'}}",
		&c);
	assert_int_equal(c.rt_priority, 50);
	assert_true(c.pdump);
	assert_false(c.passive_rtt);
	assert_int_equal(c.dir[SHAPER_UP].lag_limit_ns, 1000000);
	assert_true(c.dir[SHAPER_DOWN].lag_limit_ns == SCHED_LAG_AUTO);
	assert_false(c.control_enabled);
	assert_string_equal(c.control_socket, "/tmp/s/ctl.sock");
	assert_string_equal(c.control_group, "shaper");
	assert_int_equal(c.control_mode, 0600);
	assert_int_equal(c.n_workers, 2);
	assert_int_equal(c.worker_lcore[0], 1);
	assert_int_equal(c.worker_lcore[1], 2);
	assert_int_equal(c.mbufs[SHAPER_UP], 32767);
	assert_int_equal(c.mbufs[SHAPER_DOWN], 32767);
	assert_int_equal(c.burst, 64);
	assert_int_equal(c.idle_sleep_us, 20);

	load_ok("{" PORTS ", 'control': {'enabled': true, 'mode': '660'},"
		" 'lcores': {'workers': [1]},"
		" 'dataplane': {'mbufs': 1024, 'burst': 1, 'idle_sleep': '10ms'}}",
		&c);
	assert_true(c.control_enabled);
	assert_string_equal(c.control_socket, "/run/shaper/shaper.sock");
	assert_int_equal(c.control_mode, 0660);
	assert_int_equal(c.n_workers, 1);
	assert_int_equal(c.worker_lcore[0], 1);
	assert_int_equal(c.mbufs[SHAPER_UP], 1024);
	assert_int_equal(c.burst, 1);
	assert_int_equal(c.idle_sleep_us, 10000);

	/* a pool size per direction, "auto" for one */
	load_ok("{" PORTS ", 'dataplane': {'mbufs': {'upstream': 200000, 'downstream': 'auto'}}}",
		&c);
	assert_int_equal(c.mbufs[SHAPER_UP], 200000);
	assert_int_equal(c.mbufs[SHAPER_DOWN], 0);
	load_ok("{" PORTS ", 'dataplane': {'mbufs': 'auto'}}", &c);
	assert_int_equal(c.mbufs[SHAPER_UP], 0);

	load_ok("{" PORTS
		", 'control': {'mode': '0', 'group': ''}, 'lcores': {'workers': [1023, 0]},"
		" 'dataplane': {'mbufs': 16777216, 'burst': 256, 'idle_sleep': '0us'}}",
		&c);
	assert_int_equal(c.control_mode, 0);
	assert_string_equal(c.control_group, "");
	assert_int_equal(c.n_workers, 2);
	assert_int_equal(c.worker_lcore[0], 1023);
	assert_int_equal(c.worker_lcore[1], 0);
	assert_int_equal(c.mbufs[SHAPER_DOWN], 16777216);
	assert_int_equal(c.burst, 256);
	assert_int_equal(c.idle_sleep_us, 0);
	/* a sleep below 1 µs is still a sleep: rounded up, never to 0 (no sleep) */
	load_ok("{" PORTS ", 'dataplane': {'idle_sleep': '500ns'}}", &c);
	assert_int_equal(c.idle_sleep_us, 1);
	load_ok("{" PORTS ", 'dataplane': {'idle_sleep': '1001ns'}}", &c);
	assert_int_equal(c.idle_sleep_us, 2);

	/* access levels and a second, read-only socket */
	load_ok("{" PORTS ", 'control': {'level': 'operator', 'default_level': 'user',"
		" 'admin_group': 'shaper-admin', 'sockets': [{'path': '/run/shaper/ro.sock',"
		" 'mode': '0666'}, {'path': '/run/shaper/op.sock', 'group': 'ops',"
		" 'level': 'operator'}]}}",
		&c);
	assert_int_equal(c.control_level, SHAPER_LEVEL_OPERATOR);
	assert_int_equal(c.control_default_level, SHAPER_LEVEL_USER);
	assert_string_equal(c.control_admin_group, "shaper-admin");
	assert_int_equal(c.n_control_sockets, 2);
	assert_string_equal(c.control_sockets[0].path, "/run/shaper/ro.sock");
	assert_int_equal(c.control_sockets[0].mode, 0666);
	assert_string_equal(c.control_sockets[0].group, "");
	assert_int_equal(c.control_sockets[0].level, SHAPER_LEVEL_USER); /* read-only unless said */
	assert_string_equal(c.control_sockets[1].group, "ops");
	assert_int_equal(c.control_sockets[1].mode, 0660);
	assert_int_equal(c.control_sockets[1].level, SHAPER_LEVEL_OPERATOR);
	assert_string_equal(shaper_level_name(SHAPER_LEVEL_ADMIN), "admin");
	assert_string_equal(shaper_level_name(SHAPER_NUM_LEVELS), "?");

	load_ok("{" PORTS ", 'control': {'mode': '0777'}, 'lcores': {}, 'dataplane': {}}", &c);
	assert_int_equal(c.control_mode, 0777);
	assert_int_equal(c.n_workers, 1);
	assert_int_equal(c.burst, 32);
}

static void
test_metrics(void **state)
{
	struct shaper_config c;

	(void)state;
	/* off by default, and on localhost once turned on */
	load_ok("{" PORTS "}", &c);
	assert_false(c.metrics_enabled);
	assert_string_equal(c.metrics_addr, "127.0.0.1");
	assert_int_equal(c.metrics_port, 9464);
	load_ok("{" PORTS ", 'metrics': {}}", &c);
	assert_false(c.metrics_enabled);
	load_ok("{" PORTS ", 'metrics': {'enabled': true}}", &c);
	assert_true(c.metrics_enabled);
	assert_string_equal(c.metrics_addr, "127.0.0.1");
	assert_int_equal(c.metrics_port, 9464);
	/* a listen address turns it on; a bare port means 127.0.0.1 */
	load_ok("{" PORTS ", 'metrics': {'listen': '9100'}}", &c);
	assert_true(c.metrics_enabled);
	assert_string_equal(c.metrics_addr, "127.0.0.1");
	assert_int_equal(c.metrics_port, 9100);
	load_ok("{" PORTS ", 'metrics': {'listen': '192.0.2.7:65535'}}", &c);
	assert_string_equal(c.metrics_addr, "192.0.2.7");
	assert_int_equal(c.metrics_port, 65535);
	load_ok("{" PORTS ", 'metrics': {'listen': '[::1]:9464'}}", &c);
	assert_true(c.metrics_enabled);
	assert_string_equal(c.metrics_addr, "::1");
	assert_int_equal(c.metrics_port, 9464);
	load_ok("{" PORTS ", 'metrics': {'listen': '[::]:1'}}", &c);
	assert_string_equal(c.metrics_addr, "::");
	assert_int_equal(c.metrics_port, 1);
	/* an explicit "enabled": false wins, in either order */
	load_ok("{" PORTS ", 'metrics': {'listen': '9464', 'enabled': false}}", &c);
	assert_false(c.metrics_enabled);
	load_ok("{" PORTS ", 'metrics': {'enabled': false, 'listen': '0.0.0.0:9464'}}", &c);
	assert_false(c.metrics_enabled);
	assert_string_equal(c.metrics_addr, "0.0.0.0");
}

/* log.level: each of the five names, info when absent */
static void
test_log_level(void **state)
{
	static const struct {
		const char *name;
		enum shaper_log_level level;
	} levels[] = {
		{ "error", SHAPER_LOG_ERROR },   { "warning", SHAPER_LOG_WARNING },
		{ "notice", SHAPER_LOG_NOTICE }, { "info", SHAPER_LOG_INFO },
		{ "debug", SHAPER_LOG_DEBUG },
	};
	struct shaper_config c;
	char json[256];

	(void)state;
	load_ok("{" PORTS "}", &c);
	assert_int_equal(c.log_level, SHAPER_LOG_INFO);
	load_ok("{" PORTS ", 'log': {}}", &c);
	assert_int_equal(c.log_level, SHAPER_LOG_INFO);
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		snprintf(json, sizeof(json), "{" PORTS ", 'log': {'level': '%s'}}", levels[i].name);
		load_ok(json, &c);
		assert_int_equal(c.log_level, levels[i].level);
	}
}

/* ---- every error, with its exact message ---- */

struct err_case {
	const char *json; /* single-quoted */
	const char *msg;
};

#define DOWN(body) "{" PORTS ", 'downstream': " body "}"
#define UP(body)   "{" PORTS ", 'upstream': " body "}"
#define FQC(keys)  DOWN("{'discipline': 'fq_codel', " keys "}")
#define FIFO(keys) DOWN("{'discipline': 'fifo', " keys "}")
#define TOP(keys)  "{" PORTS ", " keys "}"
#define NOT_NET    "must be an absolute path (control is a Unix socket, never a network address)"

#define TOP_KEYS                                                                                   \
	"(known: ports, upstream, downstream, control, metrics, log, lcores, dataplane, fail_open, subscribers, comment, _comment)"
#define DS_NAMES "diffserv3, diffserv4, diffserv8, besteffort, precedence"
#define ISO_NAMES                                                                                  \
	"flowblind, srchost, dsthost, hosts, flows, dual-srchost, dual-dsthost, triple-isolate"
#define ACK_NAMES "no-ack-filter, ack-filter, ack-filter-aggressive"
#define LL_KEYWORDS                                                                                \
	"(raw, ethernet, ether-vlan, docsis, conservative, pppoe-ptm, bridged-ptm, "               \
	"pppoa-vcmux, pppoa-llc, pppoe-vcmux, pppoe-llcsnap, ipoa-vcmux, ipoa-llcsnap, "           \
	"bridged-vcmux, bridged-llcsnap, atm, ptm, noatm, overhead N, mpu N)"
#define RTT_HINT                                                                                   \
	"is not a time or rtt preset (e.g. \"40ms\", or one of datacentre, lan, metro, "           \
	"regional, internet, oceanic, satellite, interplanetary)"
#define WORKERS_MSG                                                                                \
	"lcores.workers: expected a list of 1 to 16 lcore ids (each worker shapes both "           \
	"directions of its share of the hosts)"
#define RATE_TYPE "expected a rate as a string such as \"100mbit\""
#define TIME_TYPE "expected a time as a string such as \"30ms\""
#define SIZE_TYPE "expected a size as a string such as \"32mb\""

static const struct err_case err_cases[] = {
	/* top level */
	{ "[1]", "(top level): expected an object, got an array" },
	{ TOP("'foo': 1"), "foo: unknown key " TOP_KEYS },
	{ TOP("'Comment': 'x'"), "Comment: unknown key " TOP_KEYS },
	{ TOP("'port': {}"), "port: unknown key " TOP_KEYS },
	/* ports */
	{ "{}", "ports.wan: missing: name the wan port's device" },
	{ "{'ports': {}}", "ports.wan: missing: name the wan port's device" },
	{ "{'ports': {'lan': 'eth1'}}", "ports.wan: missing: name the wan port's device" },
	{ "{'ports': {'wan': 'eth0'}}", "ports.lan: missing: name the lan port's device" },
	{ "{'ports': {'wan': '', 'lan': 'eth1'}}",
	  "ports.wan: missing: name the wan port's device" },
	{ "{'ports': {'wan': 'eth0', 'lan': 'eth0'}}",
	  "ports: wan and lan name the same device \"eth0\"" },
	{ "{'ports': {'wan': {'device': '0000:01:00.0'}, 'lan': '0000:01:00.0'}}",
	  "ports: wan and lan name the same device \"0000:01:00.0\"" },
	/* one port on a stick */
	{ "{'ports': {'single': 'eth0', 'wan_vlan': 100}}",
	  "ports.lan_vlan: missing: with ports.single, the VLAN id (1..4094) the subscribers' "
	  "side's frames carry on the port (LibreQoS's network_vlan)" },
	{ "{'ports': {'single': 'eth0', 'lan_vlan': 200}}",
	  "ports.wan_vlan: missing: with ports.single, the VLAN id (1..4094) the internet side's "
	  "frames carry on the port (LibreQoS's internet_vlan)" },
	{ "{'ports': {'single': 'eth0', 'wan_vlan': 100, 'lan_vlan': 100}}",
	  "ports.lan_vlan: 100 is ports.wan_vlan too: the two sides must be on different VLANs" },
	{ "{'ports': {'single': 'eth0', 'wan_vlan': 0, 'lan_vlan': 200}}",
	  "ports.wan_vlan: 0 is out of range 1..4094" },
	{ "{'ports': {'single': 'eth0', 'wan_vlan': 100, 'lan_vlan': 4095}}",
	  "ports.lan_vlan: 4095 is out of range 1..4094" },
	{ "{'ports': {'single': 'eth0', 'wan_vlan': '100', 'lan_vlan': 200}}",
	  "ports.wan_vlan: expected a VLAN id 1..4094, got a string" },
	{ "{'ports': {'single': 'eth0', 'lan': 'eth1', 'wan_vlan': 100, 'lan_vlan': 200}}",
	  "ports.single: one port on a stick replaces ports.wan and ports.lan: give single (with "
	  "wan_vlan and lan_vlan) or wan and lan, not both" },
	{ "{'ports': {'wan': 'eth0', 'lan': 'eth1', 'wan_vlan': 100}}",
	  "ports.wan_vlan: only with ports.single (one port on a stick); two ports take every "
	  "VLAN as it comes" },
	{ "{'ports': {'single': {'rx_descriptors': 512}, 'wan_vlan': 100, 'lan_vlan': 200}}",
	  "ports.single: missing \"device\" (a PCI address, vdev string or port name)" },
	{ "{'ports': {'single': 'net_af_packet0,iface=eth0', 'wan_vlan': 100, 'lan_vlan': 200}, "
	  "'fail_open': {'enabled': true}}",
	  "fail_open.enabled: cannot be used with ports.single: a Linux bridge never sends a "
	  "frame back out of the port it came in on, nor moves it from one VLAN to another, so "
	  "nothing would carry the line while shaperd does not" },
	{ "{'ports': {'single': 'eth0', 'wan_vlan': 100, 'lan_vlan': 200}, "
	  "'lcores': {'workers': [1, 2]}, 'dataplane': {'steering': 'rss'}}",
	  "dataplane.steering: \"rss\" cannot be used with ports.single and 2 workers: one port "
	  "hashes both sides' frames alike, and a LAN host is the source on one VLAN and the "
	  "destination on the other (use \"auto\" or \"software\")" },
	{ "{'ports': ['eth0', 'eth1']}", "ports: expected an object, got an array" },
	{ "{'ports': 'eth0'}", "ports: expected an object, got a string" },
	{ "{'ports': {'wan': 'eth0', 'lan': 'eth1', 'dmz': 'eth2'}}",
	  "ports.dmz: unknown port (known: wan, lan, single, wan_vlan, lan_vlan)" },
	{ "{'ports': {'WAN': 'eth0', 'lan': 'eth1'}}",
	  "ports.WAN: unknown port (known: wan, lan, single, wan_vlan, lan_vlan)" },
	{ "{'ports': {'wan': 5, 'lan': 'eth1'}}",
	  "ports.wan: expected a device string or an object, got an integer" },
	{ "{'ports': {'wan': null, 'lan': 'eth1'}}",
	  "ports.wan: expected a device string or an object, got null" },
	{ "{'ports': {'wan': {}, 'lan': 'eth1'}}",
	  "ports.wan: missing \"device\" (a PCI address, vdev string or port name)" },
	{ "{'ports': {'wan': {'device': 5}, 'lan': 'eth1'}}",
	  "ports.wan.device: expected a string, got an integer" },
	{ "{'ports': {'wan': {'device': 'eth0', 'rx_descriptors': 32}, 'lan': 'eth1'}}",
	  "ports.wan.rx_descriptors: 32 is out of range 64..16384" },
	{ "{'ports': {'wan': 'eth0', 'lan': {'device': 'eth1', 'tx_descriptors': 16385}}}",
	  "ports.lan.tx_descriptors: 16385 is out of range 64..16384" },
	{ "{'ports': {'wan': {'device': 'eth0', 'rx_descriptors': '1024'}, 'lan': 'eth1'}}",
	  "ports.wan.rx_descriptors: expected an integer, got a string" },
	{ "{'ports': {'wan': {'device': 'eth0', 'mtu': 1500}, 'lan': 'eth1'}}",
	  "ports.wan.mtu: unknown key (known: device, rx_descriptors, tx_descriptors)" },
	/* direction: shape and keys */
	{ DOWN("'cake'"), "downstream: expected an object, got a string" },
	{ UP("[]"), "upstream: expected an object, got an array" },
	{ DOWN("{'foo': 1}"), "downstream.foo: unknown key" },
	{ DOWN("{'comment': 'no'}"), "downstream.comment: unknown key" },
	{ DOWN("{'Bandwidth': '1mbit'}"), "downstream.Bandwidth: unknown key" },
	{ DOWN("{'discipline': 'htb'}"), "downstream.discipline: \"htb\" is not a valid "
					 "discipline (one of: fifo, fq_codel, cake)" },
	{ DOWN("{'discipline': 'CAKE'}"), "downstream.discipline: \"CAKE\" is not a valid "
					  "discipline (one of: fifo, fq_codel, cake)" },
	{ DOWN("{'discipline': 2}"), "downstream.discipline: expected a string (discipline: "
				     "fifo, fq_codel, cake), got an "
				     "integer" },
	/* keys that do not apply to the discipline */
	{ FIFO("'diffserv': 'diffserv4'"),
	  "downstream.diffserv: does not apply to discipline \"fifo\"" },
	{ FIFO("'rtt': '40ms'"), "downstream.rtt: does not apply to discipline \"fifo\"" },
	{ FIFO("'target': '5ms'"), "downstream.target: does not apply to discipline \"fifo\"" },
	{ FIFO("'ecn': true"), "downstream.ecn: does not apply to discipline \"fifo\"" },
	{ FIFO("'flows': 1024"), "downstream.flows: does not apply to discipline \"fifo\"" },
	{ FIFO("'ack_filter': true"),
	  "downstream.ack_filter: does not apply to discipline \"fifo\"" },
	{ FIFO("'wash': true"), "downstream.wash: does not apply to discipline \"fifo\"" },
	{ FQC("'diffserv': 'diffserv3'"),
	  "downstream.diffserv: does not apply to discipline \"fq_codel\"" },
	{ FQC("'rtt': 'internet'"), "downstream.rtt: does not apply to discipline \"fq_codel\"" },
	{ FQC("'isolation': 'flows'"),
	  "downstream.isolation: does not apply to discipline \"fq_codel\"" },
	{ FQC("'vlan_hosts': true"),
	  "downstream.vlan_hosts: does not apply to discipline \"fq_codel\"" },
	{ FIFO("'vlan_hosts': true"),
	  "downstream.vlan_hosts: does not apply to discipline \"fifo\"" },
	{ FQC("'wash': true"), "downstream.wash: does not apply to discipline \"fq_codel\"" },
	{ FQC("'ingress': true"), "downstream.ingress: does not apply to discipline \"fq_codel\"" },
	{ FQC("'memlimit': '4mb'"),
	  "downstream.memlimit: does not apply to discipline \"fq_codel\"" },
	{ FQC("'ack_filter': true"),
	  "downstream.ack_filter: does not apply to discipline \"fq_codel\"" },
	{ FIFO("'l4s': true"), "downstream.l4s: does not apply to discipline \"fifo\"" },
	{ FIFO("'l4s_step': '1ms'"), "downstream.l4s_step: does not apply to discipline \"fifo\"" },
	{ FQC("'nqb': true"), "downstream.nqb: does not apply to discipline \"fq_codel\"" },
	{ FQC("'l4s_step': '0us'"), "downstream.l4s_step: \"0us\" is out of range for a time" },
	{ FQC("'l4s': 1"), "downstream.l4s: expected true or false, got an integer" },
	{ FIFO("'nqb': true"), "downstream.nqb: does not apply to discipline \"fifo\"" },
	{ DOWN("{'flows': 1024}"), "downstream.flows: does not apply to discipline \"cake\"" },
	{ DOWN("{'limit': 1000}"), "downstream.limit: does not apply to discipline \"cake\"" },
	{ DOWN("{'quantum': 1514}"), "downstream.quantum: does not apply to discipline \"cake\"" },
	{ DOWN("{'interval': '100ms'}"),
	  "downstream.interval: does not apply to discipline \"cake\"" },
	{ DOWN("{'ce_threshold': '1ms'}"),
	  "downstream.ce_threshold: does not apply to discipline \"cake\"" },
	{ DOWN("{'drop_batch': 64}"),
	  "downstream.drop_batch: does not apply to discipline \"cake\"" },
	{ DOWN("{'memory_limit': '32mb'}"),
	  "downstream.memory_limit: does not apply to discipline \"cake\"" },
	/* bandwidth */
	{ DOWN("{'bandwidth': '280mbps'}"),
	  "downstream.bandwidth: \"280mbps\" is not a rate (try \"280mbit\")" },
	{ UP("{'bandwidth': '20Mbps'}"),
	  "upstream.bandwidth: \"20Mbps\" is not a rate (try \"20mbit\")" },
	{ UP("{'bandwidth': '20'}"),
	  "upstream.bandwidth: \"20\" has no unit (a bare number is ambiguous: write e.g. "
	  "\"100mbit\" or \"500kbit\")" },
	{ DOWN("{'bandwidth': 'fast'}"),
	  "downstream.bandwidth: \"fast\" is not a rate (write a number and a unit, e.g. "
	  "\"100mbit\" or \"unlimited\")" },
	{ DOWN("{'bandwidth': ''}"),
	  "downstream.bandwidth: \"\" is not a rate (write a number and a unit, e.g. "
	  "\"100mbit\" or \"unlimited\")" },
	{ DOWN("{'bandwidth': 280}"), "downstream.bandwidth: " RATE_TYPE ", got an integer" },
	{ DOWN("{'bandwidth': 2.5}"), "downstream.bandwidth: " RATE_TYPE ", got a number" },
	{ DOWN("{'bandwidth': null}"), "downstream.bandwidth: " RATE_TYPE ", got null" },
	{ DOWN("{'bandwidth': '101tbit'}"),
	  "downstream.bandwidth: \"101tbit\" is out of range for a rate" },
	{ DOWN("{'bandwidth': '992bit'}"), "downstream.bandwidth: below the minimum of 1kbit" },
	{ DOWN("{'bandwidth': '0.5kbit'}"), "downstream.bandwidth: below the minimum of 1kbit" },
	{ DOWN("{'bandwidth': '100bit'}"), "downstream.bandwidth: below the minimum of 1kbit" },
	/* mtu, overhead, mpu, atm, seed */
	{ DOWN("{'mtu': 67}"), "downstream.mtu: 67 is out of range 68..65535" },
	{ DOWN("{'mtu': 65536}"), "downstream.mtu: 65536 is out of range 68..65535" },
	{ DOWN("{'mtu': 1500.0}"), "downstream.mtu: expected an integer, got a number" },
	{ DOWN("{'mtu': '1500'}"), "downstream.mtu: expected an integer, got a string" },
	{ DOWN("{'overhead': 300}"), "downstream.overhead: 300 is out of range -64..256" },
	{ DOWN("{'overhead': 257}"), "downstream.overhead: 257 is out of range -64..256" },
	{ DOWN("{'overhead': -65}"), "downstream.overhead: -65 is out of range -64..256" },
	{ DOWN("{'overhead': true}"), "downstream.overhead: expected an integer (-64..256) "
				      "or link-layer keywords such as "
				      "\"ethernet\" or \"docsis\", got a boolean" },
	{ DOWN("{'overhead': 1.5}"), "downstream.overhead: expected an integer (-64..256) "
				     "or link-layer keywords such as "
				     "\"ethernet\" or \"docsis\", got a number" },
	{ DOWN("{'overhead': 'ethernt'}"),
	  "downstream.overhead: \"ethernt\" is not a link-layer keyword " LL_KEYWORDS },
	{ DOWN("{'overhead': 'Ethernet'}"),
	  "downstream.overhead: \"Ethernet\" is not a link-layer keyword " LL_KEYWORDS },
	{ DOWN("{'overhead': 'ethernet vlan'}"),
	  "downstream.overhead: \"vlan\" is not a link-layer keyword " LL_KEYWORDS },
	{ DOWN("{'overhead': '18'}"),
	  "downstream.overhead: \"18\" is not a link-layer keyword " LL_KEYWORDS },
	{ DOWN("{'overhead': 'pppoe-llcsnap pppoe-llcsnap pppoe-llcsnap pppoe-llcsnap "
	       "pppoe-llcsnap pppoe-llcsnap pppoe-llcsnap'}"),
	  "downstream.overhead: the keywords add up to 280 bytes, outside -64..256" },
	{ DOWN("{'overhead': 'docsis overhead'}"),
	  "downstream.overhead: \"overhead\" needs a number after it" },
	{ DOWN("{'overhead': 'overhead x'}"),
	  "downstream.overhead: \"overhead x\": expected a whole number -64..256" },
	{ DOWN("{'overhead': 'mpu 300'}"),
	  "downstream.overhead: \"mpu 300\": expected a whole number 0..256" },
	{ DOWN("{'nat': 1}"), "downstream.nat: expected true or false, got an integer" },
	{ DOWN("{'vlan_hosts': 'yes'}"),
	  "downstream.vlan_hosts: expected true or false, got a string" },
	{ DOWN("{'mpu': -1}"), "downstream.mpu: -1 is out of range 0..256" },
	{ DOWN("{'mpu': 257}"), "downstream.mpu: 257 is out of range 0..256" },
	{ DOWN("{'mpu': '64'}"), "downstream.mpu: expected an integer, got a string" },
	{ DOWN("{'atm': 'yes'}"),
	  "downstream.atm: \"yes\" is not a valid framing (one of: noatm, atm, ptm)" },
	{ DOWN("{'atm': true}"),
	  "downstream.atm: expected a string (framing: noatm, atm, ptm), got a boolean" },
	{ DOWN("{'seed': -1}"), "downstream.seed: -1 is out of range 0..9223372036854775807" },
	{ DOWN("{'seed': '42'}"), "downstream.seed: expected an integer, got a string" },
	/* rtt and target */
	{ DOWN("{'rtt': 'fast'}"), "downstream.rtt: \"fast\" " RTT_HINT },
	{ DOWN("{'rtt': 'Internet'}"), "downstream.rtt: \"Internet\" " RTT_HINT },
	{ DOWN("{'rtt': '100'}"), "downstream.rtt: \"100\" " RTT_HINT },
	{ DOWN("{'rtt': '40mbit'}"), "downstream.rtt: \"40mbit\" " RTT_HINT },
	{ DOWN("{'rtt': 100}"), "downstream.rtt: " TIME_TYPE ", got an integer" },
	{ DOWN("{'rtt': '0.5us'}"), "downstream.rtt: \"0.5us\" is out of range for a time" },
	{ DOWN("{'rtt': '0ms'}"), "downstream.rtt: \"0ms\" is out of range for a time" },
	{ DOWN("{'rtt': '1001s'}"), "downstream.rtt: \"1001s\" is out of range for a time" },
	{ DOWN("{'target': '0us'}"), "downstream.target: \"0us\" is out of range for a time" },
	{ DOWN("{'target': 'internet'}"),
	  "downstream.target: \"internet\" is not a time (write a number and a unit, e.g. "
	  "\"30ms\" or \"100us\")" },
	{ DOWN("{'target': '5'}"),
	  "downstream.target: \"5\" has no unit (a bare number is ambiguous: write e.g. "
	  "\"30ms\" or \"100us\")" },
	{ DOWN("{'target': 5}"), "downstream.target: " TIME_TYPE ", got an integer" },
	/* cake enums and flags */
	{ DOWN("{'diffserv': 'diffserv5'}"),
	  "downstream.diffserv: \"diffserv5\" is not a valid diffserv mode (one of: " DS_NAMES
	  ")" },
	{ DOWN("{'diffserv': 'Diffserv3'}"),
	  "downstream.diffserv: \"Diffserv3\" is not a valid diffserv mode (one of: " DS_NAMES
	  ")" },
	{ DOWN("{'diffserv': 3}"),
	  "downstream.diffserv: expected a string (diffserv mode: " DS_NAMES "), got an integer" },
	{ DOWN("{'isolation': 'dual'}"),
	  "downstream.isolation: \"dual\" is not a valid isolation mode (one of: " ISO_NAMES ")" },
	{ DOWN("{'isolation': ['flows']}"),
	  "downstream.isolation: expected a string (isolation mode: " ISO_NAMES "), got an array" },
	{ DOWN("{'wash': 'yes'}"), "downstream.wash: expected true or false, got a string" },
	{ DOWN("{'wash': 1}"), "downstream.wash: expected true or false, got an integer" },
	{ DOWN("{'ingress': null}"), "downstream.ingress: expected true or false, got null" },
	{ DOWN("{'ecn': 'on'}"), "downstream.ecn: expected true or false, got a string" },
	{ DOWN("{'ack_filter': 'aggressive'}"),
	  "downstream.ack_filter: \"aggressive\" is not a valid ACK filter mode (one "
	  "of: " ACK_NAMES ")" },
	{ DOWN("{'ack_filter': 1}"),
	  "downstream.ack_filter: expected a string (ACK filter mode: " ACK_NAMES "), got an "
	  "integer" },
	{ DOWN("{'memlimit': '2tb'}"),
	  "downstream.memlimit: \"2tb\" is not a size (units: b kb mb gb)" },
	{ DOWN("{'memlimit': '1025gb'}"),
	  "downstream.memlimit: \"1025gb\" is out of range for a size" },
	{ DOWN("{'memlimit': 1000}"), "downstream.memlimit: " SIZE_TYPE ", got an integer" },
	{ DOWN("{'l4s': 'on'}"), "downstream.l4s: expected true or false, got a string" },
	{ DOWN("{'nqb': 1}"), "downstream.nqb: expected true or false, got an integer" },
	{ DOWN("{'l4s_step': '0us'}"), "downstream.l4s_step: \"0us\" is out of range for a time" },
	{ DOWN("{'l4s_step': '2s'}"), "downstream.l4s_step: \"2s\" is out of range for a time" },
	{ DOWN("{'l4s_step': 500}"), "downstream.l4s_step: " TIME_TYPE ", got an integer" },
	{ DOWN("{'l4s_step': '500'}"),
	  "downstream.l4s_step: \"500\" has no unit (a bare number is ambiguous: write e.g. "
	  "\"30ms\" or \"100us\")" },
	{ DOWN("{'memlimit': '32'}"), "downstream.memlimit: \"32\" has no unit (write e.g. "
				      "\"1500b\", \"64kb\" or \"32mb\")" },
	/* fq_codel */
	{ FQC("'flows': 0"), "downstream.flows: 0 is out of range 1..65536" },
	{ FQC("'flows': 65537"), "downstream.flows: 65537 is out of range 1..65536" },
	{ FQC("'flows': '1024'"), "downstream.flows: expected an integer, got a string" },
	{ FQC("'quantum': 255"), "downstream.quantum: 255 is out of range 256..1048576" },
	{ FQC("'quantum': 1048577"), "downstream.quantum: 1048577 is out of range 256..1048576" },
	{ FQC("'limit': 0"), "downstream.limit: 0 is out of range 1..16777216" },
	{ FQC("'limit': 16777217"), "downstream.limit: 16777217 is out of range 1..16777216" },
	{ FQC("'limit': '1mb'"), "downstream.limit: expected an integer, got a string" },
	{ FQC("'memory_limit': '1kb'"),
	  "downstream.memory_limit: \"1kb\" is out of range for a size" },
	{ FQC("'memory_limit': 4096"), "downstream.memory_limit: " SIZE_TYPE ", got an integer" },
	{ FQC("'target': '0ms'"), "downstream.target: \"0ms\" is out of range for a time" },
	{ FQC("'interval': '0us'"), "downstream.interval: \"0us\" is out of range for a time" },
	{ FQC("'interval': '100'"),
	  "downstream.interval: \"100\" has no unit (a bare number is ambiguous: write e.g. "
	  "\"30ms\" or \"100us\")" },
	{ FQC("'ce_threshold': 1"), "downstream.ce_threshold: " TIME_TYPE ", got an integer" },
	{ FQC("'ce_threshold': '1h'"),
	  "downstream.ce_threshold: \"1h\" is not a time (units: s ms us ns)" },
	{ FQC("'drop_batch': 0"), "downstream.drop_batch: 0 is out of range 1..4096" },
	{ FQC("'drop_batch': 4097"), "downstream.drop_batch: 4097 is out of range 1..4096" },
	{ FQC("'ecn': 0"), "downstream.ecn: expected true or false, got an integer" },
	/* fifo */
	{ FIFO("'limit': -1"), "downstream.limit: -1 is out of range 0..16777216" },
	{ FIFO("'limit': '32b'"), "downstream.limit: \"32b\" is out of range for a size" },
	{ FIFO("'limit': '1mbps'"),
	  "downstream.limit: \"1mbps\" is not a size (units: b kb mb gb)" },
	{ FIFO("'limit': '1000'"), "downstream.limit: \"1000\" has no unit (write e.g. "
				   "\"1500b\", \"64kb\" or \"32mb\")" },
	{ FIFO("'limit': true"), "downstream.limit: expected an integer, got a boolean" },
	/* emulate */
	{ DOWN("{'emulate': 'none'}"), "downstream.emulate: expected an object, got a string" },
	{ DOWN("{'emulate': {'delay': '61s'}}"),
	  "downstream.emulate.delay: \"61s\" is out of range for a time" },
	{ DOWN("{'emulate': {'delay': 20}}"),
	  "downstream.emulate.delay: " TIME_TYPE ", got an integer" },
	{ UP("{'emulate': {'jitter': '5'}}"), "upstream.emulate.jitter: \"5\" has no unit "
					      "(a bare number is ambiguous: write e.g. "
					      "\"30ms\" or \"100us\")" },
	{ DOWN("{'emulate': {'loss': 101}}"),
	  "downstream.emulate.loss: expected a percentage 0..100" },
	{ DOWN("{'emulate': {'loss': -0.5}}"),
	  "downstream.emulate.loss: expected a percentage 0..100" },
	{ DOWN("{'emulate': {'loss': '1%'}}"),
	  "downstream.emulate.loss: expected a percentage 0..100" },
	{ DOWN("{'emulate': {'seed': -1}}"),
	  "downstream.emulate.seed: -1 is out of range 0..9223372036854775807" },
	{ DOWN("{'emulate': {'rate': '1mbit'}}"),
	  "downstream.emulate.rate: unknown key (known: delay, jitter, loss, seed, limit)" },
	/* control */
	{ TOP("'control': true"), "control: expected an object, got a boolean" },
	{ TOP("'control': {'enabled': 'yes'}"),
	  "control.enabled: expected true or false, got a string" },
	{ TOP("'control': {'socket': 'shaper.sock'}"), "control.socket: " NOT_NET },
	{ TOP("'control': {'socket': './shaper.sock'}"), "control.socket: " NOT_NET },
	{ TOP("'control': {'socket': ''}"), "control.socket: " NOT_NET },
	{ TOP("'control': {'socket': 5}"), "control.socket: expected a string, got an integer" },
	{ TOP("'control': {'group': 0}"), "control.group: expected a string, got an integer" },
	{ TOP("'control': {'mode': 432}"), "control.mode: expected a string, got an integer" },
	{ TOP("'control': {'mode': '0999'}"),
	  "control.mode: \"0999\" is not an octal mode such as \"0660\"" },
	{ TOP("'control': {'mode': '8'}"),
	  "control.mode: \"8\" is not an octal mode such as \"0660\"" },
	{ TOP("'control': {'mode': '1777'}"),
	  "control.mode: \"1777\" is not an octal mode such as \"0660\"" },
	{ TOP("'control': {'mode': 'rw-rw----'}"),
	  "control.mode: \"rw-rw----\" is not an octal mode such as \"0660\"" },
	{ TOP("'control': {'mode': ''}"),
	  "control.mode: \"\" is not an octal mode such as \"0660\"" },
	{ TOP("'control': {'mode': '0660 '}"),
	  "control.mode: \"0660 \" is not an octal mode such as \"0660\"" },
	{ TOP("'control': {'mode': '-1'}"),
	  "control.mode: \"-1\" is not an octal mode such as \"0660\"" },
	{ TOP("'control': {'mode': '00000000000000000660'}"),
	  "control.mode: longer than 15 characters" },
	{ TOP("'control': {'path': '/run/x'}"),
	  "control.path: unknown key (known: enabled, socket, group, mode, level, default_level, "
	  "admin_group, sockets)" },
	/* control is a Unix socket only: a network address is not a path */
	{ TOP("'control': {'socket': '127.0.0.1:9000'}"), "control.socket: " NOT_NET },
	{ TOP("'control': {'socket': '@abstract'}"), "control.socket: " NOT_NET },
	{ TOP("'control': {'sockets': [{'path': '[::1]:9000'}]}"),
	  "control.sockets[0].path: " NOT_NET },
	{ TOP("'control': {'level': 'root'}"),
	  "control.level: \"root\" is not a level (user, operator or admin)" },
	{ TOP("'control': {'default_level': 2}"),
	  "control.default_level: expected a string, got an integer" },
	{ TOP("'control': {'admin_group': 0}"),
	  "control.admin_group: expected a string, got an integer" },
	{ TOP("'control': {'sockets': {'path': '/run/x'}}"),
	  "control.sockets: expected an array of sockets, got an object" },
	{ TOP("'control': {'sockets': [{'mode': '0666'}]}"),
	  "control.sockets[0]: missing \"path\"" },
	{ TOP("'control': {'sockets': [{'path': '/a', 'level': 'guest'}]}"),
	  "control.sockets[0].level: \"guest\" is not a level (user, operator or admin)" },
	{ TOP("'control': {'sockets': [{'path': '/a', 'user': 'x'}]}"),
	  "control.sockets[0].user: unknown key (known: path, group, mode, level)" },
	{ TOP("'control': {'sockets': [{'path': '/a'}, {'path': '/b'}, {'path': '/c'}, "
	      "{'path': '/d'}]}"),
	  "control.sockets: at most 3 sockets besides control.socket" },
	{ TOP("'control': {'sockets': [{'path': '/run/shaper/shaper.sock'}]}"),
	  "control.sockets[0].path: \"/run/shaper/shaper.sock\" is control.socket already" },
	{ TOP("'control': {'sockets': [{'path': '/a'}, {'path': '/a'}]}"),
	  "control.sockets[1].path: \"/a\" is control.sockets[0] already" },
	/* log */
	{ TOP("'log': 'debug'"), "log: expected an object, got a string" },
	{ TOP("'log': {'verbosity': 'debug'}"), "log.verbosity: unknown key (known: level)" },
	{ TOP("'log': {'level': 'verbose'}"),
	  "log.level: expected \"error\", \"warning\", \"notice\", \"info\" or \"debug\"" },
	{ TOP("'log': {'level': 7}"),
	  "log.level: expected \"error\", \"warning\", \"notice\", \"info\" or \"debug\"" },
	/* metrics */
	{ TOP("'metrics': 9464"), "metrics: expected an object, got an integer" },
	{ TOP("'metrics': {'port': 9464}"),
	  "metrics.port: unknown key (known: enabled, listen, subscribers_top, subscribers_worst)" },
	{ TOP("'metrics': {'subscribers_top': 101}"),
	  "metrics.subscribers_top: 101 is out of range 0..100" },
	{ TOP("'metrics': {'subscribers_worst': 101}"),
	  "metrics.subscribers_worst: 101 is out of range 0..100" },
	{ TOP("'metrics': {'enabled': 1}"),
	  "metrics.enabled: expected true or false, got an integer" },
	{ TOP("'metrics': {'listen': 9464}"), "metrics.listen: expected a string, got an integer" },
	{ TOP("'metrics': {'listen': ''}"),
	  "metrics.listen: \"\" is not a port (1..65535), \"address:port\" or \"[address]:port\"" },
	{ TOP("'metrics': {'listen': '0'}"),
	  "metrics.listen: \"0\" is not a port (1..65535), \"address:port\" or \"[address]:port\"" },
	{ TOP("'metrics': {'listen': '65536'}"),
	  "metrics.listen: \"65536\" is not a port (1..65535), \"address:port\" or "
	  "\"[address]:port\"" },
	{ TOP("'metrics': {'listen': '127.0.0.1:'}"),
	  "metrics.listen: \"127.0.0.1:\" is not a port (1..65535), \"address:port\" or "
	  "\"[address]:port\"" },
	{ TOP("'metrics': {'listen': '127.0.0.1:-1'}"),
	  "metrics.listen: \"127.0.0.1:-1\" is not a port (1..65535), \"address:port\" or "
	  "\"[address]:port\"" },
	{ TOP("'metrics': {'listen': ':9464'}"),
	  "metrics.listen: \"\" is not an IPv4 address (host names are not resolved; a port "
	  "alone listens on 127.0.0.1)" },
	{ TOP("'metrics': {'listen': 'localhost:9464'}"),
	  "metrics.listen: \"localhost\" is not an IPv4 address (host names are not resolved; a "
	  "port alone listens on 127.0.0.1)" },
	{ TOP("'metrics': {'listen': '127.0.0.256:9464'}"),
	  "metrics.listen: \"127.0.0.256\" is not an IPv4 address (host names are not resolved; a "
	  "port alone listens on 127.0.0.1)" },
	{ TOP("'metrics': {'listen': '::1:9464'}"),
	  "metrics.listen: \"::1:9464\": write an IPv6 address in brackets, as in "
	  "\"[::1]:9464\"" },
	{ TOP("'metrics': {'listen': '[::1]'}"),
	  "metrics.listen: \"[::1]\": an IPv6 address needs a port after its brackets, as in "
	  "\"[::1]:9464\"" },
	{ TOP("'metrics': {'listen': '[::1:9464'}"),
	  "metrics.listen: \"[::1:9464\": an IPv6 address needs a port after its brackets, as in "
	  "\"[::1]:9464\"" },
	{ TOP("'metrics': {'listen': '[127.0.0.1]:9464'}"),
	  "metrics.listen: \"127.0.0.1\" is not an IPv6 address" },
	{ TOP("'metrics': {'listen': '[::1]:http'}"),
	  "metrics.listen: \"[::1]:http\" is not a port (1..65535), \"address:port\" or "
	  "\"[address]:port\"" },
	/* lcores */
	{ TOP("'lcores': [1]"), "lcores: expected an object, got an array" },
	{ TOP("'lcores': {'workers': []}"), WORKERS_MSG },
	{ TOP("'lcores': {'workers': [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]}"),
	  WORKERS_MSG },
	{ TOP("'lcores': {'workers': 1}"), WORKERS_MSG },
	{ TOP("'lcores': {'workers': ['1']}"),
	  "lcores.workers[0]: expected an integer, got a string" },
	{ TOP("'lcores': {'workers': [1, 1024]}"),
	  "lcores.workers[1]: 1024 is out of range 0..1023" },
	{ TOP("'lcores': {'workers': [-1]}"), "lcores.workers[0]: -1 is out of range 0..1023" },
	{ TOP("'lcores': {'workers': [3, 3]}"),
	  "lcores.workers[1]: lcore 3 is already lcores.workers[0]: each worker needs its own" },
	{ TOP("'lcores': {'workers': [1, 0, 2, 0, 1]}"),
	  "lcores.workers[4]: lcore 1 is already lcores.workers[0]: each worker needs its own" },
	{ TOP("'dataplane': {'shard_by': 'port'}"),
	  "dataplane.shard_by: \"port\" is not a valid shard key (one of: host, flow)" },
	{ TOP("'dataplane': {'steering': 1}"),
	  "dataplane.steering: expected a string (steering: auto, rss, software), got an integer" },
	{ TOP("'lcores': {'main': 0}"), "lcores: unknown key \"main\" (known: workers)" },
	/* dataplane */
	{ TOP("'dataplane': 1"), "dataplane: expected an object, got an integer" },
	{ TOP("'dataplane': {'mbufs': 1023}"),
	  "dataplane.mbufs: 1023 is out of range 1024..16777216" },
	{ TOP("'dataplane': {'mbufs': 'lots'}"),
	  "dataplane.mbufs: expected \"auto\" or an integer 1024..16777216" },
	{ TOP("'dataplane': {'mbufs': {'up': 4096}}"),
	  "dataplane.mbufs.up: unknown key (known: upstream, downstream)" },
	{ TOP("'dataplane': {'mbufs': {'downstream': 12}}"),
	  "dataplane.mbufs.downstream: 12 is out of range 1024..16777216" },
	{ TOP("'dataplane': {'burst': 0}"), "dataplane.burst: 0 is out of range 1..256" },
	{ TOP("'dataplane': {'burst': 257}"), "dataplane.burst: 257 is out of range 1..256" },
	{ TOP("'dataplane': {'burst': 32.0}"),
	  "dataplane.burst: expected an integer, got a number" },
	{ TOP("'dataplane': {'idle_sleep': 20}"),
	  "dataplane.idle_sleep: " TIME_TYPE ", got an integer" },
	{ TOP("'dataplane': {'idle_sleep': '11ms'}"),
	  "dataplane.idle_sleep: \"11ms\" is out of range for a time" },
	{ TOP("'dataplane': {'rt_priority': 100}"),
	  "dataplane.rt_priority: 100 is out of range 0..99" },
	{ DOWN("{'lag_limit': 'never'}"),
	  "downstream.lag_limit: \"never\" is neither \"auto\" nor a time such as \"1ms\"" },
	{ DOWN("{'lag_limit': '11s'}"),
	  "downstream.lag_limit: \"11s\" is out of range for a time or \"auto\"" },
	{ TOP("'dataplane': {'passive_rtt': 1}"),
	  "dataplane.passive_rtt: expected true or false, got an integer" },
	{ TOP("'dataplane': {'pdump': 'yes'}"),
	  "dataplane.pdump: expected true or false, got a string" },
	{ TOP("'dataplane': {'ring': 1024}"),
	  "dataplane.ring: unknown key (known: mbufs, burst, idle_sleep, rt_priority, passive_rtt, "
	  "shard_by, steering, pdump)" },
	/* fail-open hands frames to a kernel bridge: AF_XDP ports only */
	{ TOP("'fail_open': {'enabled': true}"),
	  "fail_open.enabled: needs AF_XDP or af_packet ports in a Linux bridge "
	  "(net_af_xdpN,iface=IF or net_af_packetN,iface=IF); ports.wan is \"net_null0\"" },
	{ "{'ports': {'wan': 'net_af_xdp0,iface=eth0', 'lan': 'net_af_xdp1,iface=eth1'},"
	  " 'fail_open': {'enabled': true, 'lease': '20ms'}, 'dataplane': {'idle_sleep': '5ms'}}",
	  "fail_open.lease: must be more than 4 x dataplane.idle_sleep (5000 us): the lease is "
	  "renewed only while every worker turns" },
	{ TOP("'fail_open': {'lease': '5ms'}"),
	  "fail_open.lease: \"5ms\" is out of range for a time" },
	{ TOP("'fail_open': {'bridge': 'br0'}"),
	  "fail_open.bridge: unknown key (known: enabled, lease, program)" },
	/* the first error in file order is the one reported */
	{ "{'foo': 1, 'ports': {}}", "foo: unknown key " TOP_KEYS },
	{ DOWN("{'mtu': 1, 'bandwidth': '1mbps'}"), "downstream.mtu: 1 is out of range 68..65535" },
	/* autorate bounds */
	{ DOWN("{'bandwidth': 'auto'}"),
	  "downstream.bandwidth: \"auto\" needs its bounds: {\"min\": \"20mbit\", \"max\": \"100mbit\"}" },
	{ DOWN("{'bandwidth': {'min': '10mbit'}}"),
	  "downstream.bandwidth: autorate needs both \"min\" and \"max\": {\"min\": \"20mbit\", \"max\": \"100mbit\"}" },
	{ DOWN("{'bandwidth': {'min': '10mbit', 'max': '10mbps'}}"),
	  "downstream.bandwidth.max: \"10mbps\" is not a rate (try \"10mbit\")" },
	{ DOWN("{'bandwidth': {'min': '50mbit', 'max': '10mbit'}}"),
	  "downstream.bandwidth.min: is above \"max\"" },
	{ DOWN("{'bandwidth': {'min': '5mbit', 'max': '10mbit', 'start': '1mbit'}}"),
	  "downstream.bandwidth.start: is outside [min, max]" },
	{ DOWN("{'bandwidth': {'min': '5mbit', 'max': '10mbit', 'step': '1mbit'}}"),
	  "downstream.bandwidth.step: unknown key (known: min, max, start, base, interval, "
	  "early_samples, bloat, clear, frame, refractory, cut_min, cut_max, drain, loaded, idle, "
	  "raise_fast, raise_slow, near_low, near_high, standing_intervals, standing_cut, decay, "
	  "no_samples, owd_stale, owd_recent, lesser_ratio, path_flat, path_checks, path_max, "
	  "at_line, growth, regain, acks_floor)" },
	/* autorate's tuning */
	{ DOWN("{'bandwidth': {'min': '5mbit', 'max': '10mbit', 'bloat': '2ms', 'clear': '3ms'}}"),
	  "downstream.bandwidth: \"clear\" is above \"bloat\"" },
	{ DOWN("{'bandwidth': {'min': '5mbit', 'max': '10mbit', 'base': '20mbit'}}"),
	  "downstream.bandwidth: \"base\" is outside \"min\"..\"max\"" },
	{ DOWN("{'bandwidth': {'min': '5mbit', 'max': '10mbit', 'cut_max': 95}}"),
	  "downstream.bandwidth.cut_max: 95 is out of range 1..90" },
	{ DOWN("{'bandwidth': {'min': '5mbit', 'max': '10mbit', 'no_samples': 'guess'}}"),
	  "downstream.bandwidth.no_samples: \"guess\" is not a valid choice (one of: hold, decay)" },
	{ DOWN("{'bandwidth': {'min': '5mbit', 'max': '10mbit', 'interval': '1ms'}}"),
	  "downstream.bandwidth.interval: \"1ms\" is out of range for a time" },
	{ DOWN("{'bandwidth': {'min': '0bit', 'max': '10mbit'}}"),
	  "downstream.bandwidth.min: \"0bit\" is out of range for a rate" },
};

/* Fail-open on AF_XDP ports: the lease and the program path as given. */
static void
test_fail_open(void **state)
{
	struct shaper_config c;

	(void)state;
	load_ok(TOP("'lcores': {}"), &c);
	assert_false(c.fail_open);
	assert_int_equal(c.fail_open_lease_ns, 100000000ull);
	assert_string_equal(c.fail_open_program, "");
	load_ok("{'ports': {'wan': 'net_af_xdp0,iface=eth0', 'lan': 'net_af_xdp1,iface=eth1'},"
		" 'fail_open': {'enabled': true, 'lease': '250ms', 'program': '/opt/f.o'}}",
		&c);
	assert_true(c.fail_open);
	assert_int_equal(c.fail_open_lease_ns, 250000000ull);
	assert_string_equal(c.fail_open_program, "/opt/f.o");
}

/* ports.single: one device for both sides, each side's VLAN. */
static void
test_single_port(void **state)
{
	struct shaper_config c;

	(void)state;
	load_ok(TOP("'lcores': {}"), &c);
	assert_false(c.single_port);
	assert_int_equal(shaper_n_ports(&c), 2);
	assert_int_equal(c.vlan[SHAPER_PORT_WAN], 0);
	load_ok("{'ports': {'wan_vlan': 100, 'single': {'device': 'net_af_packet0,iface=eth0', "
		"'rx_descriptors': 2048}, 'lan_vlan': 4094}}",
		&c);
	assert_true(c.single_port);
	assert_int_equal(shaper_n_ports(&c), 1);
	assert_int_equal(c.vlan[SHAPER_PORT_WAN], 100);
	assert_int_equal(c.vlan[SHAPER_PORT_LAN], 4094);
	for (int r = 0; r < SHAPER_NUM_PORTS; r++) {
		assert_string_equal(c.port[r].device, "net_af_packet0,iface=eth0");
		assert_int_equal(c.port[r].rx_desc, 2048);
		assert_int_equal(c.port[r].tx_desc, 1024);
		assert_string_equal(shaper_port_label(&c, r), "single");
	}
	/* Both directions receive and send on the one port. */
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		assert_int_equal(shaper_dir_rx_slot(&c, (enum shaper_dir)d), SHAPER_PORT_WAN);
		assert_int_equal(shaper_dir_tx_slot(&c, (enum shaper_dir)d), SHAPER_PORT_WAN);
	}
	/* Several workers steer in software ("auto" picks it; RSS cannot, see err_cases). */
	load_ok("{'ports': {'single': 'eth0', 'wan_vlan': 100, 'lan_vlan': 200}, "
		"'lcores': {'workers': [1, 2]}}",
		&c);
	assert_int_equal(c.n_workers, 2);
}

/* "bandwidth" as bounds turns autorate on for that direction alone, starting at max. */
static void
test_autorate_bounds(void **state)
{
	struct shaper_config c;

	(void)state;
	load_ok(DOWN("{'bandwidth': {'min': '20mbit', 'max': '100mbit'}}"), &c);
	assert_true(c.autorate[SHAPER_DOWN].enabled);
	assert_false(c.autorate[SHAPER_UP].enabled);
	assert_int_equal(c.autorate[SHAPER_DOWN].min_rate, 2500000);
	assert_int_equal(c.autorate[SHAPER_DOWN].max_rate, 12500000);
	assert_int_equal(c.dir[SHAPER_DOWN].rate, 12500000);
	load_ok(DOWN("{'bandwidth': {'min': '20mbit', 'max': '100mbit', 'start': '50mbit'}}"), &c);
	assert_int_equal(c.dir[SHAPER_DOWN].rate, 6250000);
	assert_int_equal(c.autorate[SHAPER_DOWN].start_rate, 6250000);
	/* The tuning: defaults, base at start, and keys that set it. */
	assert_int_equal(c.autorate[SHAPER_DOWN].tune.base_rate, 6250000);
	assert_int_equal(c.autorate[SHAPER_DOWN].tune.bloat_ns, 8000000);
	load_ok(DOWN("{'bandwidth': {'min': '20mbit', 'max': '100mbit', 'base': '40mbit', "
		     "'bloat': '15ms', 'cut_max': 40, 'no_samples': 'decay', 'path_checks': 0}}"),
		&c);
	assert_int_equal(c.autorate[SHAPER_DOWN].tune.base_rate, 5000000);
	assert_int_equal(c.autorate[SHAPER_DOWN].tune.bloat_ns, 15000000);
	assert_int_equal(c.autorate[SHAPER_DOWN].tune.cut_max_pct, 40);
	assert_true(c.autorate[SHAPER_DOWN].tune.decay_without_samples);
	assert_int_equal(c.autorate[SHAPER_DOWN].tune.path_checks, 0);
	load_ok(DOWN("{'bandwidth': '30mbit'}"), &c);
	assert_false(c.autorate[SHAPER_DOWN].enabled);
}

static void
test_errors(void **state)
{
	int failures = 0;

	(void)state;
	for (size_t i = 0; i < NELEM(err_cases); i++) {
		char err[SHAPER_ERR_LEN];
		struct shaper_config c;
		int rc = load(err_cases[i].json, &c, err, sizeof(err));

		if (rc != -1 || strcmp(err, err_cases[i].msg) != 0) {
			print_error("%s\n  rc %d\n  got  '%s'\n  want '%s'\n", err_cases[i].json,
				    rc, err, err_cases[i].msg);
			failures++;
		}
	}
	assert_int_equal(failures, 0);
}

/*
 * The limits in shaper/limits.h are the ones every consumer checks.
 * Fails before: the schedulers took an mtu of 64..67 that the config
 * refused, and the config's burst bound was a copy of the worker's array size.
 */
static void
test_shared_limits(void **state)
{
	static const enum sched_discipline discs[] = { SCHED_DISC_FIFO, SCHED_DISC_FQ_CODEL,
						       SCHED_DISC_CAKE };
	const long long mtus[] = { SHAPER_MTU_MIN - 1, SHAPER_MTU_MIN, SHAPER_MTU_MAX,
				   SHAPER_MTU_MAX + 1 };
	char json[256], err[SHAPER_ERR_LEN], want[SHAPER_ERR_LEN];
	struct shaper_config c;

	(void)state;
	snprintf(json, sizeof(json), TOP("'dataplane': {'burst': %d}"), SHAPER_BURST_MAX);
	load_ok(json, &c);
	assert_int_equal(c.burst, SHAPER_BURST_MAX);
	snprintf(json, sizeof(json), TOP("'dataplane': {'burst': %d}"), SHAPER_BURST_MAX + 1);
	assert_int_equal(load(json, &c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "dataplane.burst: %d is out of range 1..%d",
		 SHAPER_BURST_MAX + 1, SHAPER_BURST_MAX);
	assert_string_equal(err, want);

	/* The config and each discipline's own validation agree on the mtu. */
	for (size_t d = 0; d < NELEM(discs); d++) {
		for (size_t i = 0; i < NELEM(mtus); i++) {
			bool in_range = mtus[i] >= SHAPER_MTU_MIN && mtus[i] <= SHAPER_MTU_MAX;
			struct sched_params p;
			struct sched *s;

			snprintf(json, sizeof(json), DOWN("{'discipline': '%s', 'mtu': %lld}"),
				 shaper_discipline_name(discs[d]), mtus[i]);
			assert_int_equal(load(json, &c, err, sizeof(err)), in_range ? 0 : -1);
			sched_params_default(&p, discs[d]);
			p.mtu = (uint32_t)mtus[i];
			s = sched_create(&p, err, sizeof(err));
			if (in_range)
				assert_non_null(s);
			else
				assert_null(s);
			sched_free(s);
		}
	}

	load_ok("{" PORTS "}", &c);
	assert_string_equal(c.control_socket, SHAPER_DEFAULT_SOCKET);
}

/* JSON syntax errors: "(string):line:col: jansson's text". Not single-quoted. */
static const struct err_case syntax_cases[] = {
	{ "{", "(string):1:1: string or '}' expected near end of file" },
	{ "", "(string):1:0: '[' or '{' expected near end of file" },
	{ "{\"ports\": {\"wan\": \"a\", \"lan\": \"b\"},}",
	  "(string):1:36: string or '}' expected near '}'" },
	{ "{'ports': 1}", "(string):1:2: string or '}' expected near '''" },
	{ "{\"ports\": {\"wan\": \"a\", \"lan\": \"b\"}, \"ports\": {}}",
	  "(string):1:43: duplicate object key near '\"ports\"'" },
	{ "{\"ports\": {\"wan\": \"a\", \"lan\": \"b\"},\n \"downstream\": {\"rtt\": "
	  "\"40ms\",\n"
	  "  \"rtt\": \"50ms\"}}",
	  "(string):3:7: duplicate object key near '\"rtt\"'" },
	{ "{\"ports\": {\"wan\": \"a\", \"wan\": \"b\"}}",
	  "(string):1:28: duplicate object key near '\"wan\"'" },
	{ "\"ports\"", "(string):1:7: '[' or '{' expected near '\"ports\"'" },
	{ "{\"a\": 1} x", "(string):1:10: end of file expected near 'x'" },
};

static void
test_syntax_errors(void **state)
{
	int failures = 0;

	(void)state;
	for (size_t i = 0; i < NELEM(syntax_cases); i++) {
		char err[SHAPER_ERR_LEN] = "";
		struct shaper_config c;
		int rc = shaper_config_load_string(syntax_cases[i].json, &c, err, sizeof(err));

		if (rc != -1 || strcmp(err, syntax_cases[i].msg) != 0) {
			print_error("%s\n  rc %d\n  got  '%s'\n  want '%s'\n", syntax_cases[i].json,
				    rc, err, syntax_cases[i].msg);
			failures++;
		}
		/* every syntax error names the source first */
		if (strncmp(err, "(string):", 9) != 0)
			failures++;
	}
	assert_int_equal(failures, 0);
}

/* Strings longer than their fields, and small error buffers. */
static void
test_lengths(void **state)
{
	char json[1024], dev[300], sock[200], err[SHAPER_ERR_LEN];
	char small[16];
	struct shaper_config c;

	(void)state;
	memset(dev, 'd', sizeof(dev) - 1);
	dev[sizeof(dev) - 1] = '\0';
	dev[SHAPER_DEV_LEN - 1] = '\0'; /* 255 characters: fits */
	snprintf(json, sizeof(json), "{'ports': {'wan': '%s', 'lan': 'x'}}", dev);
	load_ok(json, &c);
	assert_int_equal(strlen(c.port[SHAPER_PORT_WAN].device), SHAPER_DEV_LEN - 1);
	dev[SHAPER_DEV_LEN - 1] = 'd'; /* 256: one too many */
	dev[SHAPER_DEV_LEN] = '\0';
	snprintf(json, sizeof(json), "{'ports': {'wan': 'x', 'lan': {'device': '%s'}}}", dev);
	assert_int_equal(load(json, &c, err, sizeof(err)), -1);
	assert_string_equal(err, "ports.lan.device: longer than 255 characters");
	snprintf(json, sizeof(json), "{'ports': {'wan': '%s', 'lan': 'x'}}", dev);
	assert_int_equal(load(json, &c, err, sizeof(err)), -1);
	assert_string_equal(err, "ports.wan: longer than 255 characters");

	/* the socket path must fit sun_path */
	sock[0] = '/';
	memset(sock + 1, 's', SHAPER_PATH_LEN - 2);
	sock[SHAPER_PATH_LEN - 1] = '\0'; /* 107 characters */
	snprintf(json, sizeof(json), "{" PORTS ", 'control': {'socket': '%s'}}", sock);
	load_ok(json, &c);
	assert_string_equal(c.control_socket, sock);
	sock[SHAPER_PATH_LEN - 1] = 's';
	sock[SHAPER_PATH_LEN] = '\0'; /* 108 */
	snprintf(json, sizeof(json), "{" PORTS ", 'control': {'socket': '%s'}}", sock);
	assert_int_equal(load(json, &c, err, sizeof(err)), -1);
	assert_string_equal(err, "control.socket: longer than 107 characters");

	/* group */
	memset(dev, 'g', 64);
	dev[63] = '\0';
	snprintf(json, sizeof(json), "{" PORTS ", 'control': {'group': '%s'}}", dev);
	load_ok(json, &c);
	dev[63] = 'g';
	dev[64] = '\0';
	snprintf(json, sizeof(json), "{" PORTS ", 'control': {'group': '%s'}}", dev);
	assert_int_equal(load(json, &c, err, sizeof(err)), -1);
	assert_string_equal(err, "control.group: longer than 63 characters");

	/* a short buffer gets a truncated, terminated message; none gets nothing */
	memset(small, 'x', sizeof(small));
	assert_int_equal(shaper_config_load_string(dq(DOWN("{'bandwidth': '280mbps'}")), &c, small,
						   sizeof(small)),
			 -1);
	assert_string_equal(small, "downstream.band");
	memset(small, 'x', sizeof(small));
	assert_int_equal(shaper_config_load_string(dq(DOWN("{'bandwidth': '280mbps'}")), &c, small,
						   5),
			 -1);
	assert_string_equal(small, "down");
	assert_int_equal(shaper_config_load_string(dq(DOWN("{'bandwidth': '280mbps'}")), &c, NULL,
						   0),
			 -1);
	assert_int_equal(shaper_config_load_string("{", &c, NULL, 0), -1);
}

/* ---- direction_to_json -> parse_direction ---- */

static int
round_trip(const char *what, const struct sched_params *p, enum sched_discipline start)
{
	struct sched_params q;
	char err[SHAPER_ERR_LEN] = "";
	json_t *j = shaper_config_direction_to_json(p);
	int n;

	if (j == NULL) {
		print_error("%s: direction_to_json returned NULL\n", what);
		return 1;
	}
	/* start from another discipline's defaults, with the same link identity */
	sched_params_default(&q, start);
	q.upstream = p->upstream;
	q.seed = p->seed; /* the seed is not part of the JSON */
	if (shaper_config_parse_direction(j, "rt", &q, err, sizeof(err)) != 0) {
		char *s = json_dumps(j, JSON_COMPACT);

		print_error("%s: %s refused: %s\n", what, s, err);
		free(s);
		json_decref(j);
		return 1;
	}
	n = params_diff(what, &q, p);
	if (n != 0) {
		char *s = json_dumps(j, JSON_COMPACT);

		print_error("  via %s\n", s);
		free(s);
	}
	json_decref(j);
	return n;
}

/* Parameters built by loading a direction object, then round-tripped. */
static const char *const rt_cases[] = {
	"{}",
	"{'bandwidth': '280mbit', 'rtt': '40ms', 'diffserv': 'diffserv4',"
	" 'isolation': 'dual-dsthost', 'overhead': 'docsis', 'wash': true, 'ingress': true,"
	" 'ecn': false, 'ack_filter': 'ack-filter-aggressive', 'memlimit': '32mb', 'mtu': "
	"1500}",
	"{'bandwidth': '20mbit', 'rtt': 'satellite', 'diffserv': 'besteffort',"
	" 'isolation': 'flowblind', 'overhead': 'pppoe-ptm', 'ack_filter': true, 'mpu': "
	"72}",
	"{'bandwidth': '45Mbit', 'rtt': 'interplanetary', 'diffserv': 'diffserv8',"
	" 'isolation': 'hosts', 'overhead': -4, 'atm': 'atm', 'vlan_hosts': true}",
	"{'bandwidth': '100mbit', 'l4s': true, 'l4s_step': '750us', 'nqb': true,"
	" 'diffserv': 'diffserv4'}",
	"{'l4s': true, 'l4s_step': '1s'}",
	"{'l4s_step': '1us', 'nqb': true}",
	"{'bandwidth': '500kbit', 'rtt': 'datacentre', 'diffserv': 'precedence',"
	" 'overhead': 'ethernet ether-vlan', 'target': '1234us'}",
	"{'bandwidth': '1kbit', 'rtt': '1us', 'overhead': 0}",
	"{'bandwidth': '100tbit', 'rtt': '1000s', 'overhead': 256}",
	"{'discipline': 'fq_codel'}",
	"{'discipline': 'fq_codel', 'bandwidth': '1gbit', 'flows': 4096, 'quantum': 300,"
	" 'limit': 1000, 'memory_limit': '4mb', 'target': '1ms', 'interval': '20ms',"
	" 'ce_threshold': '500us', 'drop_batch': 8, 'ecn': false, 'overhead': 'docsis'}",
	"{'discipline': 'fq_codel', 'memory_limit': '1500kb', 'target': '2.5ms',"
	" 'interval': '999.999ms', 'ce_threshold': '1us', 'atm': 'ptm'}",
	"{'discipline': 'fq_codel', 'l4s': true, 'l4s_step': '250us', 'bandwidth': '50mbit'}",
	"{'discipline': 'fq_codel', 'l4s_step': '1s', 'ce_threshold': '1ms'}",
	"{'discipline': 'fifo'}",
	"{'discipline': 'fifo', 'bandwidth': '10mbit', 'limit': 500}",
	"{'discipline': 'fifo', 'bandwidth': 'unlimited', 'limit': '1mb', 'mtu': 9000}",
	"{'discipline': 'fifo', 'limit': '1500b', 'overhead': 'conservative', 'mpu': 0}",
};

static void
test_direction_round_trip(void **state)
{
	static const enum sched_discipline starts[] = { SCHED_DISC_FIFO, SCHED_DISC_FQ_CODEL,
							SCHED_DISC_CAKE };
	int failures = 0;

	(void)state;
	for (size_t i = 0; i < NELEM(rt_cases); i++) {
		for (int up = 0; up < 2; up++) {
			struct sched_params p = default_dir(up ? SHAPER_UP : SHAPER_DOWN);
			char err[SHAPER_ERR_LEN] = "", what[600];
			json_t *j = jparse(rt_cases[i]);

			if (shaper_config_parse_direction(j, "x", &p, err, sizeof(err)) != 0) {
				print_error("%s: refused: %s\n", rt_cases[i], err);
				failures++;
				json_decref(j);
				continue;
			}
			json_decref(j);
			for (size_t s = 0; s < NELEM(starts); s++) {
				snprintf(what, sizeof(what), "%s (from %s)", rt_cases[i],
					 shaper_discipline_name(starts[s]));
				failures += round_trip(what, &p, starts[s]);
			}
		}
	}
	assert_int_equal(failures, 0);
}

/* The JSON carries exactly the keys of its discipline, in tc's words. */
static void
test_direction_to_json_keys(void **state)
{
	static const struct {
		enum sched_discipline d;
		const char *keys;
	} want[] = {
		{ SCHED_DISC_CAKE, "discipline bandwidth mtu overhead mpu atm lag_limit rtt target "
				   "diffserv isolation wash ingress nat vlan_hosts ecn ack_filter "
				   "l4s l4s_step nqb memlimit " },
		{ SCHED_DISC_FQ_CODEL,
		  "discipline bandwidth mtu overhead mpu atm lag_limit limit flows quantum "
		  "memory_limit target interval ecn ce_threshold drop_batch l4s l4s_step " },
		{ SCHED_DISC_FIFO, "discipline bandwidth mtu overhead mpu atm lag_limit limit " },
	};
	struct sched_params p;

	(void)state;
	for (size_t i = 0; i < NELEM(want); i++) {
		char keys[512] = "";
		const char *k;
		json_t *v, *j;

		sched_params_default(&p, want[i].d);
		j = shaper_config_direction_to_json(&p);
		json_object_foreach (j, k, v) {
			strcat(keys, k);
			strcat(keys, " ");
		}
		assert_string_equal(keys, want[i].keys);
		json_decref(j);
	}

	/* values as tc writes them */
	sched_params_default(&p, SCHED_DISC_CAKE);
	p.rate = 35000000;
	p.overhead_mode = true;
	p.overhead = 18;
	p.mpu = 64;
	p.ack_filter = SCHED_ACK_FILTER_AGGRESSIVE;
	p.memlimit = 33554432;
	{
		json_t *j = shaper_config_direction_to_json(&p);
		char *s = json_dumps(j, JSON_COMPACT);

		assert_string_equal(
				s,
				"{\"discipline\":\"cake\",\"bandwidth\":\"280Mbit\",\"mtu\":1514,"
				"\"overhead\":18,\"mpu\":64,\"atm\":\"noatm\",\"lag_limit\":\"auto\","
				"\"rtt\":\"100ms\","
				"\"target\":\"5ms\",\"diffserv\":\"diffserv3\",\"isolation\":"
				"\"triple-isolate\",\"wash\":false,\"ingress\":false,\"nat\":false,"
				"\"vlan_hosts\":false,\"ecn\":true,"
				"\"ack_filter\":\"ack-filter-aggressive\",\"l4s\":false,"
				"\"l4s_step\":\"500us\",\"nqb\":false,\"memlimit\":"
				"\"33554432b\"}");
		free(s);
		json_decref(j);
	}
	sched_params_default(&p, SCHED_DISC_FIFO);
	p.fifo_limit_pkts = 0;
	p.fifo_limit_bytes = 1048576;
	{
		json_t *j = shaper_config_direction_to_json(&p);
		char *s = json_dumps(j, JSON_COMPACT);

		assert_string_equal(s, "{\"discipline\":\"fifo\",\"bandwidth\":\"unlimited\","
				       "\"mtu\":1514,\"overhead\":\"raw\",\"mpu\":0,\"atm\":"
				       "\"noatm\",\"lag_limit\":\"auto\",\"limit\":\"1048576b\"}");
		free(s);
		json_decref(j);
	}
}

static void
test_names(void **state)
{
	(void)state;
	assert_string_equal(shaper_discipline_name(SCHED_DISC_FIFO), "fifo");
	assert_string_equal(shaper_discipline_name(SCHED_DISC_FQ_CODEL), "fq_codel");
	assert_string_equal(shaper_discipline_name(SCHED_DISC_CAKE), "cake");
	assert_string_equal(shaper_diffserv_name(SCHED_DIFFSERV3), "diffserv3");
	assert_string_equal(shaper_diffserv_name(SCHED_DIFFSERV4), "diffserv4");
	assert_string_equal(shaper_diffserv_name(SCHED_DIFFSERV8), "diffserv8");
	assert_string_equal(shaper_diffserv_name(SCHED_BESTEFFORT), "besteffort");
	assert_string_equal(shaper_diffserv_name(SCHED_PRECEDENCE), "precedence");
	assert_string_equal(shaper_isolation_name(SCHED_FLOWBLIND), "flowblind");
	assert_string_equal(shaper_isolation_name(SCHED_SRCHOST), "srchost");
	assert_string_equal(shaper_isolation_name(SCHED_DSTHOST), "dsthost");
	assert_string_equal(shaper_isolation_name(SCHED_HOSTS), "hosts");
	assert_string_equal(shaper_isolation_name(SCHED_FLOWS), "flows");
	assert_string_equal(shaper_isolation_name(SCHED_DUAL_SRCHOST), "dual-srchost");
	assert_string_equal(shaper_isolation_name(SCHED_DUAL_DSTHOST), "dual-dsthost");
	assert_string_equal(shaper_isolation_name(SCHED_TRIPLE_ISOLATE), "triple-isolate");
	assert_string_equal(shaper_isolation_name((enum sched_isolation)42), "?");
	assert_string_equal(shaper_dir_name[SHAPER_UP], "upstream");
	assert_string_equal(shaper_dir_name[SHAPER_DOWN], "downstream");
	assert_string_equal(shaper_port_name[SHAPER_PORT_WAN], "wan");
	assert_string_equal(shaper_port_name[SHAPER_PORT_LAN], "lan");
}

/* ---- files ---- */

static void
test_load_file(void **state)
{
	char path[] = "/tmp/shaper_test_config_XXXXXX";
	char err[SHAPER_ERR_LEN] = "", want[SHAPER_ERR_LEN + 64];
	struct shaper_config c;
	FILE *f;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(dq("{\n  " PORTS ",\n  'downstream': {'bandwidth': '45Mbit'}\n}\n"), f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(shaper_config_load_file(path, &c, err, sizeof(err)), 0);
	assert_int_equal(c.dir[SHAPER_DOWN].rate, 5625000);
	assert_string_equal(c.port[SHAPER_PORT_LAN].device, "net_null1");

	/* a path error in a file reads the same as from a string */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(dq("{\n  " PORTS ",\n  'downstream': {'bandwidth': '280mbps'}\n}\n"), f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(shaper_config_load_file(path, &c, err, sizeof(err)), -1);
	assert_string_equal(err,
			    "downstream.bandwidth: \"280mbps\" is not a rate (try \"280mbit\")");

	/* a syntax error names the file, line and column */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\n  \"ports\": {\n    \"wan\": \"a\"\n    \"lan\": \"b\"\n  }\n}\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(shaper_config_load_file(path, &c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s:4:9: '}' expected near '\"lan\"'", path);
	assert_string_equal(err, want);
	unlink(path);

	/* a missing file: the message starts with its path and says why */
	err[0] = '\0';
	assert_int_equal(shaper_config_load_file("/nonexistent/shaper.json", &c, err, sizeof(err)),
			 -1);
	assert_string_equal(err,
			    "unable to open /nonexistent/shaper.json: No such file or directory");
}

#ifndef SHAPER_SOURCE_ROOT
#error "tests/unit/meson.build passes -DSHAPER_SOURCE_ROOT for test_config"
#endif

static void
load_example(const char *name, struct shaper_config *c)
{
	char path[512], err[SHAPER_ERR_LEN] = "";
	int rc;

	snprintf(path, sizeof(path), "%s/config/%s", SHAPER_SOURCE_ROOT, name);
	rc = shaper_config_load_file(path, c, err, sizeof(err));
	if (rc != 0)
		print_error("%s: %s\n", path, err);
	assert_int_equal(rc, 0);
}

static void
test_example_shaper_json(void **state)
{
	struct shaper_config c;
	const struct sched_params *down = &c.dir[SHAPER_DOWN], *up = &c.dir[SHAPER_UP];

	(void)state;
	load_example("shaper.json", &c);
	assert_string_equal(c.port[SHAPER_PORT_WAN].device, "0000:01:00.0");
	assert_string_equal(c.port[SHAPER_PORT_LAN].device, "0000:02:00.0");
	assert_int_equal(down->discipline, SCHED_DISC_CAKE);
	assert_int_equal(down->rate, 35000000);
	assert_int_equal(down->diffserv, SCHED_DIFFSERV3);
	assert_int_equal(down->isolation, SCHED_DUAL_DSTHOST);
	assert_true(down->ingress);
	assert_true(down->wash);
	assert_int_equal(down->overhead, 18);
	assert_int_equal(down->mpu, 64);
	assert_int_equal(up->discipline, SCHED_DISC_CAKE);
	assert_int_equal(up->rate, 2500000);
	assert_int_equal(up->isolation, SCHED_DUAL_SRCHOST);
	assert_int_equal(up->ack_filter, SCHED_ACK_FILTER_ON);
	assert_false(up->ingress);
	assert_true(up->overhead_mode);
	assert_int_equal(up->overhead, 18);
	assert_int_equal(up->mpu, 64);
	assert_true(c.control_enabled);
	assert_string_equal(c.control_socket, "/run/shaper/shaper.sock");
	assert_int_equal(c.control_mode, 0660);
	assert_int_equal(c.n_workers, 1);
	assert_int_equal(c.worker_lcore[0], 1);
}

static void
test_example_pcap_bridge(void **state)
{
	struct shaper_config c;

	(void)state;
	load_example("pcap-bridge.json", &c);
	assert_true(strncmp(c.port[SHAPER_PORT_WAN].device, "net_pcap", 8) == 0);
	assert_true(strncmp(c.port[SHAPER_PORT_LAN].device, "net_pcap", 8) == 0);
	assert_int_equal(c.dir[SHAPER_DOWN].discipline, SCHED_DISC_FIFO);
	assert_int_equal(c.dir[SHAPER_DOWN].fifo_limit_pkts, 1000);
	assert_int_equal(c.dir[SHAPER_UP].discipline, SCHED_DISC_FIFO);
	assert_int_equal(c.dir[SHAPER_UP].fifo_limit_bytes, 1048576);
	assert_int_equal(c.dir[SHAPER_UP].rate, 0);
	assert_false(c.control_enabled);
}

static void
test_example_af_packet_bed(void **state)
{
	struct shaper_config c;

	(void)state;
	load_example("af-packet-bed.json", &c);
	assert_string_equal(c.port[SHAPER_PORT_LAN].device, "net_af_packet0,iface=shplan0");
	assert_string_equal(c.port[SHAPER_PORT_WAN].device, "net_af_packet1,iface=shpwan0");
	assert_int_equal(c.dir[SHAPER_DOWN].discipline, SCHED_DISC_CAKE);
	assert_int_equal(c.dir[SHAPER_DOWN].rate, 12500000);
	assert_int_equal(c.dir[SHAPER_UP].discipline, SCHED_DISC_CAKE);
	assert_int_equal(c.dir[SHAPER_UP].rate, 2500000);
	assert_int_equal(c.idle_sleep_us, 20);
	assert_int_equal(c.rt_priority, 50);
	assert_true(strncmp(c.control_socket, "/run/shaper/", 12) == 0);
}

static void
test_example_fq_codel(void **state)
{
	struct shaper_config c;
	struct sched_params want;

	(void)state;
	load_example("fq_codel.json", &c);
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		assert_int_equal(c.dir[d].discipline, SCHED_DISC_FQ_CODEL);
		/* spelled-out defaults are the defaults */
		sched_params_default(&want, SCHED_DISC_FQ_CODEL);
		want.upstream = c.dir[d].upstream;
		want.seed = c.dir[d].seed;
		want.rate = d == SHAPER_DOWN ? 35000000 : 2500000;
		want.overhead_mode = true;
		want.overhead = 18;
		want.mpu = 64;
		assert_int_equal(params_diff(shaper_dir_name[d], &c.dir[d], &want), 0);
	}
}

/*
 * The presets: each direction is the discipline's defaults plus exactly the
 * line facts its comment promises (rate, overhead words, isolation, ...). A
 * key slipped into a preset, or a rate written in the wrong unit, shows up
 * as a field that differs from what the line needs.
 */
struct preset_dir_want {
	enum sched_discipline disc;
	uint64_t rate; /* bytes/s */
	int32_t overhead;
	uint32_t mpu;
	enum sched_framing framing;
	enum sched_isolation isolation;
	enum sched_diffserv diffserv;
	bool ingress, wash, ack_filter;
	uint32_t rtt_us;    /* cake: 0 = the default */
	uint32_t fqc_flows; /* fq_codel: 0 = the default */
	uint32_t fqc_limit;
	uint64_t delay_ns; /* emulate.delay */
};

struct preset_want {
	const char *file;
	struct preset_dir_want dir[SHAPER_NUM_DIRS]; /* [SHAPER_UP], [SHAPER_DOWN] */
	unsigned int n_workers;
};

static const struct preset_want presets[] = {
	/* 280/45 Mbit/s VDSL2 with PPPoE: pppoe-ptm ether-vlan = 30 + 4, PTM; rtt 30 ms */
	{ "home-pppoe-vdsl.json",
	  { [SHAPER_UP] = { SCHED_DISC_CAKE, 45000000 / 8, 34, 0, SCHED_FRAMING_PTM,
			    SCHED_DUAL_SRCHOST, SCHED_DIFFSERV3, false, false, true, 30000 },
	    [SHAPER_DOWN] = { SCHED_DISC_CAKE, 280000000 / 8, 34, 0, SCHED_FRAMING_PTM,
			      SCHED_DUAL_DSTHOST, SCHED_DIFFSERV3, true, false, false, 30000 } },
	  1 },
	/* 110/11 Mbit/s cable: docsis = 18 bytes, mpu 64 */
	{ "cable-docsis.json",
	  { [SHAPER_UP] = { SCHED_DISC_CAKE, 11000000 / 8, 18, 64, SCHED_FRAMING_NONE,
			    SCHED_DUAL_SRCHOST, SCHED_DIFFSERV3, false, false, true },
	    [SHAPER_DOWN] = { SCHED_DISC_CAKE, 110000000 / 8, 18, 64, SCHED_FRAMING_NONE,
			      SCHED_DUAL_DSTHOST, SCHED_DIFFSERV3, true, false, false } },
	  1 },
	/* the same line under fq_codel as pf sets it: flows 1024, qlimit 1024 */
	{ "cable-docsis-fq_codel.json",
	  { [SHAPER_UP] = { SCHED_DISC_FQ_CODEL, 11000000 / 8, 18, 64, SCHED_FRAMING_NONE,
			    .fqc_flows = 1024, .fqc_limit = 1024 },
	    [SHAPER_DOWN] = { SCHED_DISC_FQ_CODEL, 110000000 / 8, 18, 64, SCHED_FRAMING_NONE,
			      .fqc_flows = 1024, .fqc_limit = 1024 } },
	  1 },
	/* 950/950 Mbit/s fibre on a gigabit handoff: ethernet = 38 bytes, mpu 84 */
	{ "fiber-gbit.json",
	  { [SHAPER_UP] = { SCHED_DISC_CAKE, 950000000 / 8, 38, 84, SCHED_FRAMING_NONE,
			    SCHED_DUAL_SRCHOST, SCHED_DIFFSERV3, false, false, false },
	    [SHAPER_DOWN] = { SCHED_DISC_CAKE, 950000000 / 8, 38, 84, SCHED_FRAMING_NONE,
			      SCHED_DUAL_DSTHOST, SCHED_DIFFSERV3, true, false, false } },
	  2 },
	/* the BBR bed: 80 Mbit/s, raw L2 frames, 10 ms each way */
	{ "testbed-bbr.json",
	  { [SHAPER_UP] = { SCHED_DISC_CAKE, 80000000 / 8, 0, 0, SCHED_FRAMING_NONE,
			    SCHED_DUAL_SRCHOST, SCHED_DIFFSERV3, false, false, false,
			    .delay_ns = 10000000 },
	    [SHAPER_DOWN] = { SCHED_DISC_CAKE, 80000000 / 8, 0, 0, SCHED_FRAMING_NONE,
			      SCHED_DUAL_DSTHOST, SCHED_DIFFSERV3, true, false, false,
			      .delay_ns = 10000000 } },
	  1 },
	/* the flent bed: 20 Mbit/s, 48 ms RTT = 24 ms each way */
	{ "testbed-flent.json",
	  { [SHAPER_UP] = { SCHED_DISC_CAKE, 20000000 / 8, 0, 0, SCHED_FRAMING_NONE,
			    SCHED_DUAL_SRCHOST, SCHED_DIFFSERV3, false, false, true,
			    .delay_ns = 24000000 },
	    [SHAPER_DOWN] = { SCHED_DISC_CAKE, 20000000 / 8, 0, 0, SCHED_FRAMING_NONE,
			      SCHED_DUAL_DSTHOST, SCHED_DIFFSERV3, true, false, false,
			      .delay_ns = 24000000 } },
	  1 },
	/* the container image's default: eth0/eth1 as AF_PACKET ports, 95/19 Mbit/s raw */
	{ "container.json",
	  { [SHAPER_UP] = { SCHED_DISC_CAKE, 19000000 / 8, 0, 0, SCHED_FRAMING_NONE,
			    SCHED_DUAL_SRCHOST, SCHED_DIFFSERV3, false, false, true },
	    [SHAPER_DOWN] = { SCHED_DISC_CAKE, 95000000 / 8, 0, 0, SCHED_FRAMING_NONE,
			      SCHED_DUAL_DSTHOST, SCHED_DIFFSERV3, true, false, false } },
	  1 },
	/* an ISP's shared 600 Mbit/s backhaul: ethernet ether-vlan = 42, one tin, washed */
	{ "isp-edge.json",
	  { [SHAPER_UP] = { SCHED_DISC_CAKE, 600000000 / 8, 42, 84, SCHED_FRAMING_NONE,
			    SCHED_DUAL_SRCHOST, SCHED_BESTEFFORT, false, true, false },
	    [SHAPER_DOWN] = { SCHED_DISC_CAKE, 600000000 / 8, 42, 84, SCHED_FRAMING_NONE,
			      SCHED_DUAL_DSTHOST, SCHED_BESTEFFORT, true, true, false } },
	  2 },
};

static void
test_presets(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
		const struct preset_want *pw = &presets[i];
		struct shaper_config c;

		load_example(pw->file, &c);
		assert_int_equal(c.n_workers, pw->n_workers);
		for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
			const struct preset_dir_want *w = &pw->dir[d];
			struct sched_params want;
			char what[96];

			sched_params_default(&want, w->disc);
			want.upstream = c.dir[d].upstream;
			want.seed = c.dir[d].seed;
			want.rate = w->rate;
			want.overhead_mode = w->overhead != 0 || w->mpu != 0;
			want.overhead = w->overhead;
			want.mpu = w->mpu;
			want.framing = w->framing;
			if (w->disc == SCHED_DISC_CAKE) {
				want.isolation = w->isolation;
				want.diffserv = w->diffserv;
				want.ingress = w->ingress;
				want.wash = w->wash;
				want.ack_filter = w->ack_filter ? SCHED_ACK_FILTER_ON
								: SCHED_ACK_FILTER_OFF;
				if (w->rtt_us != 0) {
					want.rtt_us = w->rtt_us;
					want.target_us = w->rtt_us / 20;
				}
			} else {
				want.fqc_flows = w->fqc_flows;
				want.fqc_limit = w->fqc_limit;
			}
			snprintf(what, sizeof(what), "%s %s", pw->file, shaper_dir_name[d]);
			assert_int_equal(params_diff(what, &c.dir[d], &want), 0);
			if (c.emulate[d].delay_ns != w->delay_ns)
				print_error("%s: emulate.delay %llu ns, want %llu\n", what,
					    (unsigned long long)c.emulate[d].delay_ns,
					    (unsigned long long)w->delay_ns);
			assert_int_equal(c.emulate[d].delay_ns, w->delay_ns);
			assert_int_equal(c.emulate[d].jitter_ns, 0);
			assert_int_equal(c.emulate[d].loss_ppm, 0);
		}
	}
}

/* ---- regressions of fixed bugs ---- */

/* Fixed bug: "target" written before "rtt" is overwritten with rtt / 20. */
static void
test_bug_target_before_rtt(void **state)
{
	struct shaper_config c;

	(void)state;
	load_ok(DOWN("{'target': '10ms', 'rtt': '100ms'}"), &c);
	assert_int_equal(c.dir[SHAPER_DOWN].rtt_us, 100000);
	assert_int_equal(c.dir[SHAPER_DOWN].target_us, 10000);
}

/*
 * Fixed bug: "1bit".."3bit" round to 0 bytes/s, which means unlimited, and pass
 * the 1kbit minimum that "4bit" and "992bit" fail; the check is made on the
 * rounded byte rate, so "996bit".."999bit" (125 B/s) pass it as well.
 */
static void
test_bug_tiny_rate_is_unlimited(void **state)
{
	struct shaper_config c;
	char err[SHAPER_ERR_LEN];

	(void)state;
	assert_int_equal(load(DOWN("{'bandwidth': '1bit'}"), &c, err, sizeof(err)), -1);
	assert_string_equal(err, "downstream.bandwidth: below the minimum of 1kbit");
	assert_int_equal(load(DOWN("{'bandwidth': '0.0009mbit'}"), &c, err, sizeof(err)), -1);
	/* and 996..999bit round up to 125 B/s, passing it too */
	assert_int_equal(load(DOWN("{'bandwidth': '999bit'}"), &c, err, sizeof(err)), -1);
}

/*
 * Fixed bug: config get -> config set changes values: rates that are not whole
 * kbit lose their remainder ("10mibit": 1310720 B/s -> "10485Kbit" ->
 * 1310625), times >= 1 s lose digits in "%g", and a fifo with neither limit
 * prints "limit": 0, which the parser refuses.
 */
static void
test_bug_round_trip_precision(void **state)
{
	struct sched_params p;
	int failures = 0;
	json_t *j;
	char err[SHAPER_ERR_LEN];

	(void)state;
	p = default_dir(SHAPER_DOWN);
	j = jparse("{'bandwidth': '10mibit', 'rtt': '1234567us'}");
	assert_int_equal(shaper_config_parse_direction(j, "x", &p, err, sizeof(err)), 0);
	json_decref(j);
	failures += round_trip("10mibit, rtt 1234567us", &p, SCHED_DISC_CAKE);

	sched_params_default(&p, SCHED_DISC_FIFO);
	p.fifo_limit_pkts = 0;
	p.fifo_limit_bytes = 0;
	failures += round_trip("fifo without limits", &p, SCHED_DISC_FIFO);
	assert_int_equal(failures, 0);
}

/* 1 if s is well-formed UTF-8 (no cut or stray sequence anywhere). */
static int
utf8_valid(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	while (*u != '\0') {
		unsigned int need = *u < 0x80    ? 0
				    : *u >= 0xf0 ? 3
				    : *u >= 0xe0 ? 2
				    : *u >= 0xc0 ? 1
						 : 9;

		if (need == 9)
			return 0;
		u++;
		for (unsigned int i = 0; i < need; i++, u++)
			if ((*u & 0xc0) != 0x80)
				return 0;
	}
	return 1;
}

/*
 * An unknown key long enough to fill a path buffer (160 bytes for
 * "upstream.KEY", 64 for "ports.KEY") was cut in the middle of a multi-byte
 * UTF-8 character; the control socket then could not encode the message and
 * answered "internal". Every place that builds a path: the cut falls before
 * the character, and the message still names the key and says what is wrong.
 */
static void
test_bug_utf8_path_cut(void **state)
{
	static const char *const chars[] = { "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x90\x8c" };
	static const struct {
		const char *tmpl; /* %s is the key; double quotes */
		const char *start;
		const char *says;
	} sites[] = {
		{ "{\"upstream\": {\"%s\": 1}}", "upstream.", ": unknown key" },
		{ "{\"downstream\": {\"emulate\": {\"%s\": 1}}}", "downstream.emulate.",
		  ": unknown key" },
		{ "{\"ports\": {\"wan\": {\"%s\": 1}, \"lan\": \"x\"}}", "ports.wan.",
		  ": unknown key" },
		{ "{\"ports\": {\"%s\": \"x\"}}", "ports.", ": unknown port" },
		{ "{\"control\": {\"%s\": 1}}", "control.", ": unknown key" },
		{ "{\"dataplane\": {\"%s\": 1}}", "dataplane.", ": unknown key" },
		{ "{\"%s\": 1}", "", ": unknown key" },
	};
	char key[700], json[1024], err[SHAPER_ERR_LEN];
	struct shaper_config c;
	unsigned int failures = 0;

	(void)state;
	for (size_t t = 0; t < NELEM(sites); t++)
		for (size_t ch = 0; ch < NELEM(chars); ch++)
			for (size_t prefix = 0; prefix < 4; prefix++) {
				size_t k = 0, w = strlen(chars[ch]);

				for (size_t i = 0; i < prefix; i++)
					key[k++] = 'k';
				while (k + w < 600) {
					memcpy(key + k, chars[ch], w);
					k += w;
				}
				key[k] = '\0';
				snprintf(json, sizeof(json), sites[t].tmpl, key);
				err[0] = '\0';
				if (shaper_config_load_string(json, &c, err, sizeof(err)) == 0 ||
				    !utf8_valid(err) ||
				    strncmp(err, sites[t].start, strlen(sites[t].start)) != 0 ||
				    (t + 1 < NELEM(sites) && strstr(err, sites[t].says) == NULL)) {
					print_error("site %zu char %zu prefix %zu: %s\n", t, ch,
						    prefix, err);
					failures++;
				}
			}
	assert_int_equal(failures, 0);

	/* The same case through parse_direction: "é" straddles byte 159. */
	memset(key, 'k', 149);
	memcpy(key + 149, "\xc3\xa9tail", 7);
	{
		struct sched_params p = default_dir(SHAPER_UP);
		json_t *j = json_object();

		json_object_set_new(j, key, json_integer(1));
		assert_int_equal(shaper_config_parse_direction(j, "upstream", &p, err, sizeof(err)),
				 -1);
		json_decref(j);
		assert_true(utf8_valid(err));
		assert_true(strncmp(err, "upstream.kkk", 12) == 0);
		assert_non_null(strstr(err, ": unknown key"));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_direction_keys),
		cmocka_unit_test(test_overhead_charged_size),
		cmocka_unit_test(test_discipline_switch),
		cmocka_unit_test(test_direction_error_is_atomic),
		cmocka_unit_test(test_emulate),
		cmocka_unit_test(test_control_lcores_dataplane),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_shared_limits),
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_direction_round_trip),
		cmocka_unit_test(test_direction_to_json_keys),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_example_shaper_json),
		cmocka_unit_test(test_example_pcap_bridge),
		cmocka_unit_test(test_example_af_packet_bed),
		cmocka_unit_test(test_example_fq_codel),
		cmocka_unit_test(test_presets),
		cmocka_unit_test(test_metrics),
		cmocka_unit_test(test_log_level),
		cmocka_unit_test(test_bug_target_before_rtt),
		cmocka_unit_test(test_bug_tiny_rate_is_unlimited),
		cmocka_unit_test(test_bug_round_trip_precision),
		cmocka_unit_test(test_bug_utf8_path_cut),
		cmocka_unit_test(test_autorate_bounds),
		cmocka_unit_test(test_fail_open),
		cmocka_unit_test(test_single_port),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
