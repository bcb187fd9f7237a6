/*
 * The control thread's half of "flows" (src/control/flows.c): facts the
 * worker copied over several slices are merged, ordered largest backlog
 * first (ties in walk order), cut to the top N and formatted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/control.h"

static struct sched_flow_fact
fact(uint64_t backlog, uint16_t queue)
{
	struct sched_flow_fact f;

	memset(&f, 0, sizeof(f));
	f.backlog_bytes = backlog;
	f.packets = (uint32_t)(backlog / 100);
	f.queue = queue;
	return f;
}

static void
test_format(void **state)
{
	struct sched_flow_fact f = fact(3000, 1);
	static const uint8_t v6s[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	static const uint8_t v6d[16] = { 0xfe, 0x80, [15] = 2 };
	struct ctl_flow c;

	(void)state;
	f.family = 4;
	f.l4_proto = 6;
	f.src[0] = 10, f.src[3] = 1;
	f.dst[0] = 192, f.dst[1] = 168, f.dst[2] = 1, f.dst[3] = 13;
	f.sport = 5003;
	f.dport = 443;
	f.tin = 2;
	f.sojourn_ns = 1800000;
	ctl_flow_from_fact(&f, &c);
	assert_string_equal(c.src, "10.0.0.1");
	assert_string_equal(c.dst, "192.168.1.13");
	assert_int_equal(c.sport, 5003);
	assert_int_equal(c.dport, 443);
	assert_int_equal(c.proto, 6);
	assert_int_equal(c.tin, 2);
	assert_int_equal(c.packets, 30);
	assert_int_equal(c.backlog_bytes, 3000);
	assert_int_equal(c.sojourn_ns, 1800000);

	f.family = 6;
	memcpy(f.src, v6s, 16);
	memcpy(f.dst, v6d, 16);
	ctl_flow_from_fact(&f, &c);
	assert_string_equal(c.src, "2001:db8::1");
	assert_string_equal(c.dst, "fe80::2");

	f.family = 0; /* not IP */
	f.sport = f.dport = 0;
	ctl_flow_from_fact(&f, &c);
	assert_string_equal(c.src, "-");
	assert_string_equal(c.dst, "-");
	assert_int_equal(c.sport, 0);
}

/* Facts from three slices, concatenated as the worker writes them. */
/* What a client below the operator level sees of a flow: networks, no ports. */
static void
test_mask(void **state)
{
	static const struct {
		const char *addr, *masked;
	} cases[] = {
		{ "10.0.0.1", "10.0.0.0/24" },
		{ "192.168.1.13", "192.168.1.0/24" },
		{ "255.255.255.255", "255.255.255.0/24" },
		{ "2001:db8:abcd:12::1", "2001:db8::/32" }, /* one customer's /48 hidden */
		{ "2001:db8::1", "2001:db8::/32" },
		{ "fe80::2", "fe80::/32" },
		{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff::/32" },
		{ "::ffff:192.0.2.7", "::/32" },
		{ "-", "-" }, /* not IP: nothing to hide */
	};
	struct ctl_flow c;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&c, 0, sizeof(c));
		snprintf(c.src, sizeof(c.src), "%s", cases[i].addr);
		snprintf(c.dst, sizeof(c.dst), "%s", cases[i].addr);
		c.sport = 5003;
		c.dport = 443;
		c.packets = 7;
		c.backlog_bytes = 7000;
		ctl_flow_mask(&c);
		assert_string_equal(c.src, cases[i].masked);
		assert_string_equal(c.dst, cases[i].masked);
		assert_int_equal(c.sport, 0);
		assert_int_equal(c.dport, 0);
		assert_int_equal(c.packets, 7);
		assert_int_equal(c.backlog_bytes, 7000);
	}
}

static void
test_merge_top(void **state)
{
	struct sched_flow_fact f[9];
	struct ctl_flow out[9];
	static const uint64_t backlog[9] = { 100, 900, 500, 500, 0, 900, 200, 700, 500 };
	unsigned int n;

	(void)state;
	for (uint16_t i = 0; i < 9; i++)
		f[i] = fact(backlog[i], i);
	n = ctl_flows_top(f, 9, out, 4);
	assert_int_equal(n, 4);
	/* 900 (queue 1), 900 (queue 5), 700, then the first 500 (queue 2). */
	assert_int_equal(f[0].queue, 1);
	assert_int_equal(f[1].queue, 5);
	assert_int_equal(f[2].queue, 7);
	assert_int_equal(f[3].queue, 2);
	assert_int_equal(f[4].queue, 3);
	assert_int_equal(f[5].queue, 8);
	assert_int_equal(out[0].backlog_bytes, 900);
	assert_int_equal(out[3].backlog_bytes, 500);
	/* More asked for than there are: all of them. */
	for (uint16_t i = 0; i < 9; i++)
		f[i] = fact(backlog[i], i);
	assert_int_equal(ctl_flows_top(f, 9, out, 1000), 9);
	assert_int_equal(out[8].backlog_bytes, 0);
	assert_int_equal(ctl_flows_top(f, 0, out, 10), 0);
}

/* Many facts: sorted whatever their number (a merge sort, not insertion). */
static void
test_many(void **state)
{
	static struct sched_flow_fact f[8192];
	static struct ctl_flow out[1000];

	(void)state;
	for (uint32_t i = 0; i < 8192; i++)
		f[i] = fact((uint64_t)((i * 2654435761u) % 5000u), (uint16_t)(i & 1023));
	assert_int_equal(ctl_flows_top(f, 8192, out, 1000), 1000);
	for (uint32_t i = 1; i < 8192; i++)
		assert_true(f[i - 1].backlog_bytes >= f[i].backlog_bytes);
	for (uint32_t i = 1; i < 1000; i++)
		assert_true(out[i - 1].backlog_bytes >= out[i].backlog_bytes);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_mask),
		cmocka_unit_test(test_merge_top),
		cmocka_unit_test(test_many),
	};

	return cmocka_run_group_tests_name("ctl_flows", tests, NULL, NULL);
}
