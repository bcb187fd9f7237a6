/*
 * The log module: plain lines on a terminal or file, the syslog priority
 * prefix journald parses when the stream is the one $JOURNAL_STREAM names,
 * errors and warnings on stderr and the rest on stdout, level filtering, and
 * the rate limit with its "suppressed" line (on a clock the test sets).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "shaper/log.h"

#include "capture.h"

static FILE *out, *err;
static uint64_t fake_now;

static uint64_t
fake_clock(void)
{
	return fake_now;
}

static void
journal_is(FILE *f)
{
	struct stat st;
	char v[64];

	assert_int_equal(fstat(fileno(f), &st), 0);
	snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", v, 1);
}

static int
setup(void **state)
{
	(void)state;
	out = tmpfile();
	err = tmpfile();
	assert_non_null(out);
	assert_non_null(err);
	unsetenv("JOURNAL_STREAM");
	shaper_log_open(out, err);
	shaper_log_set_level(SHAPER_LOG_INFO);
	fake_now = 1000000000u;
	shaper_log_set_clock(fake_clock);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	shaper_log_open(NULL, NULL);
	shaper_log_set_clock(NULL);
	fclose(out);
	fclose(err);
	return 0;
}

/* Not the journal: "shaperd: [level: ]text", errors and warnings on stderr. */
static void
test_plain(void **state)
{
	(void)state;
	shaper_log_error("ports.lan: cannot attach device %s", "net_bogus0");
	shaper_log_warning("--no-strict-modes: not checking %d paths", 2);
	shaper_log_notice("control: refused config.set");
	shaper_log_info("bridging");
	assert_string_equal(take(err),
			    "shaperd: error: ports.lan: cannot attach device net_bogus0\n"
			    "shaperd: warning: --no-strict-modes: not checking 2 paths\n");
	assert_string_equal(take(out), "shaperd: control: refused config.set\nshaperd: bridging\n");
}

/* $JOURNAL_STREAM names stderr only: stderr's lines get "<N>", stdout's stay plain. */
static void
test_journal_stderr_only(void **state)
{
	(void)state;
	journal_is(err);
	shaper_log_open(out, err);
	shaper_log_error("cannot allocate the RTT table");
	shaper_log_warning("metrics: %s", "bad request");
	shaper_log_info("control socket %s", "/run/shaper/shaper.sock");
	assert_string_equal(take(err),
			    "<3>cannot allocate the RTT table\n<4>metrics: bad request\n");
	assert_string_equal(take(out), "shaperd: control socket /run/shaper/shaper.sock\n");
}

static void
test_journal_stdout(void **state)
{
	(void)state;
	journal_is(out);
	shaper_log_open(out, err);
	shaper_log_set_level(SHAPER_LOG_DEBUG);
	shaper_log_notice("lan port net_pcap0: link down");
	shaper_log_info("lan port net_pcap0: link up, 1000 Mbit/s full-duplex");
	shaper_log_debug("steering by %s", "rss");
	shaper_log_warning("plain on stderr");
	assert_string_equal(take(out), "<5>lan port net_pcap0: link down\n"
				       "<6>lan port net_pcap0: link up, 1000 Mbit/s full-duplex\n"
				       "<7>steering by rss\n");
	assert_string_equal(take(err), "shaperd: warning: plain on stderr\n");
}

/* A stream redirected after systemd set the variable is not the journal. */
static void
test_journal_stream_elsewhere(void **state)
{
	FILE *other = tmpfile();

	(void)state;
	assert_non_null(other);
	journal_is(other);
	shaper_log_open(out, err);
	shaper_log_warning("w");
	shaper_log_info("i");
	assert_string_equal(take(err), "shaperd: warning: w\n");
	assert_string_equal(take(out), "shaperd: i\n");
	/* the same inode on another device is another file */
	{
		struct stat st;
		char v[64];

		assert_int_equal(fstat(fileno(err), &st), 0);
		snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev + 1,
			 (unsigned long long)st.st_ino);
		setenv("JOURNAL_STREAM", v, 1);
		shaper_log_open(out, err);
		shaper_log_warning("w");
		assert_string_equal(take(err), "shaperd: warning: w\n");
	}
	setenv("JOURNAL_STREAM", "garbage", 1);
	shaper_log_open(out, err);
	shaper_log_warning("w");
	assert_string_equal(take(err), "shaperd: warning: w\n");
	fclose(other);
}

static void
test_level_filter(void **state)
{
	enum shaper_log_level l;

	(void)state;
	shaper_log_set_level(SHAPER_LOG_WARNING);
	assert_false(shaper_log_enabled(SHAPER_LOG_NOTICE));
	assert_true(shaper_log_enabled(SHAPER_LOG_WARNING));
	shaper_log_info("dropped");
	shaper_log_notice("dropped");
	shaper_log_debug("dropped");
	shaper_log_warning("kept");
	shaper_log_error("kept too");
	assert_string_equal(take(out), "");
	assert_string_equal(take(err), "shaperd: warning: kept\nshaperd: error: kept too\n");

	shaper_log_set_level(SHAPER_LOG_DEBUG);
	shaper_log_debug("now %s", "seen");
	assert_string_equal(take(out), "shaperd: debug: now seen\n");

	/* the names the option and the config key take */
	assert_int_equal(shaper_log_level_parse("notice", &l), 0);
	assert_int_equal(l, SHAPER_LOG_NOTICE);
	assert_int_equal(shaper_log_level_parse("error", &l), 0);
	assert_int_equal(l, SHAPER_LOG_ERROR);
	assert_int_equal(shaper_log_level_parse("debug", &l), 0);
	assert_int_equal(l, SHAPER_LOG_DEBUG);
	assert_int_equal(shaper_log_level_parse("verbose", &l), -1);
	assert_int_equal(shaper_log_level_parse("Info", &l), -1);
	assert_string_equal(shaper_log_level_name(SHAPER_LOG_WARNING), "warning");
}

/* One event, one line: a newline inside a value cannot forge a second line. */
static void
test_one_line(void **state)
{
	(void)state;
	shaper_log_info("device %s", "eth0\n<3>forged");
	assert_string_equal(take(out), "shaperd: device eth0 <3>forged\n");
}

static unsigned int
count(const char *s, const char *what)
{
	unsigned int n = 0;

	for (const char *p = strstr(s, what); p != NULL; p = strstr(p + 1, what))
		n++;
	return n;
}

/* 3 per 10 s: the rest counted, then one line says how many and the last. */
static void
test_rate_limit(void **state)
{
	/* static: a failed assertion must not leave the module a dangling limit */
	static struct shaper_log_limit lim = SHAPER_LOG_LIMIT_INIT(3, 10);
	char *o;

	(void)state;
	for (int i = 0; i < 10; i++) {
		shaper_log_limited(&lim, SHAPER_LOG_NOTICE, "wan port p0: link down (%d)", i);
		fake_now += 500000000u; /* every 0.5 s */
	}
	o = take(out);
	assert_int_equal(count(o, "link down"), 3);
	assert_non_null(strstr(o, "link down (2)\n"));
	assert_null(strstr(o, "link down (3)"));

	/* the window (opened at the first line) is not over yet: nothing owed */
	fake_now = 1000000000u + 9999999999u;
	shaper_log_flush_suppressed();
	assert_string_equal(take(out), "");
	fake_now = 1000000000u + 10000000000u;
	shaper_log_flush_suppressed();
	assert_string_equal(take(out),
			    "shaperd: 7 similar messages suppressed (at most 3 per 10 s); "
			    "the last: wan port p0: link down (9)\n");
	shaper_log_flush_suppressed();
	assert_string_equal(take(out), "");

	/* a new window: three more lines */
	for (int i = 0; i < 4; i++)
		shaper_log_limited(&lim, SHAPER_LOG_NOTICE, "again %d", i);
	assert_int_equal(count(take(out), "again"), 3);
	shaper_log_limit_release(&lim);
	assert_string_equal(take(out),
			    "shaperd: 1 similar messages suppressed (at most 3 per 10 s); "
			    "the last: again 3\n");
	assert_string_equal(take(err), "");
}

/* Without a flush, the next line after the window says what was suppressed
 * first; the summary carries the most severe level among them. */
static void
test_suppressed_line_before_next(void **state)
{
	/* static: a failed assertion must not leave the module a dangling limit */
	static struct shaper_log_limit lim = SHAPER_LOG_LIMIT_INIT(1, 2);

	(void)state;
	journal_is(err);
	shaper_log_open(out, err);
	shaper_log_limited(&lim, SHAPER_LOG_NOTICE, "first");
	shaper_log_limited(&lim, SHAPER_LOG_NOTICE, "second");
	shaper_log_limited(&lim, SHAPER_LOG_WARNING, "third");
	shaper_log_limited(&lim, SHAPER_LOG_NOTICE, "fourth");
	assert_string_equal(take(out), "shaperd: first\n");
	assert_string_equal(take(err), "");
	fake_now += 2000000000u;
	shaper_log_limited(&lim, SHAPER_LOG_NOTICE, "fifth");
	assert_string_equal(take(err), "<4>3 similar messages suppressed (at most 1 per 2 s); "
				       "the last: fourth\n");
	assert_string_equal(take(out), "shaperd: fifth\n");
	shaper_log_limit_release(&lim);
	/* released: off the list, so a flush does not reach its memory, even
	 * when what is there now looks like a limit owed a line */
	lim.suppressed = 1;
	fake_now += 60000000000u;
	shaper_log_flush_suppressed();
	assert_string_equal(take(out), "");
	assert_string_equal(take(err), "");
}

/* Lines below the level neither print nor use up the burst. */
static void
test_filtered_lines_do_not_count(void **state)
{
	/* static: a failed assertion must not leave the module a dangling limit */
	static struct shaper_log_limit lim = SHAPER_LOG_LIMIT_INIT(2, 10);

	(void)state;
	for (int i = 0; i < 5; i++)
		shaper_log_limited(&lim, SHAPER_LOG_DEBUG, "debug %d", i);
	shaper_log_limited(&lim, SHAPER_LOG_NOTICE, "a");
	shaper_log_limited(&lim, SHAPER_LOG_NOTICE, "b");
	assert_string_equal(take(out), "shaperd: a\nshaperd: b\n");
	shaper_log_limit_release(&lim);
}

/* The per-call-site macro: each site its own limit. */
static void
test_ratelimited_macro(void **state)
{
	(void)state;
	for (unsigned int i = 0; i < 2 * SHAPER_LOG_BURST; i++) {
		shaper_log_ratelimited(SHAPER_LOG_WARNING, "site A %u", i);
		shaper_log_ratelimited(SHAPER_LOG_WARNING, "site B %u", i);
	}
	{
		char *e = take(err);

		assert_int_equal(count(e, "site A"), SHAPER_LOG_BURST);
		assert_int_equal(count(e, "site B"), SHAPER_LOG_BURST);
	}
	fake_now += (uint64_t)SHAPER_LOG_INTERVAL_S * 1000000000u;
	shaper_log_flush_suppressed();
	{
		char *e = take(err);

		assert_int_equal(count(e, "similar messages suppressed"), 2);
		assert_non_null(strstr(e,
				       "shaperd: warning: 5 similar messages suppressed (at most 5 "
				       "per 10 s); the last: site A 9\n"));
	}
}

static void
test_ident(void **state)
{
	(void)state;
	shaper_log_init("shapertest");
	shaper_log_open(out, err);
	shaper_log_warning("w");
	assert_string_equal(take(err), "shapertest: warning: w\n");
	shaper_log_init("shaperd");
	shaper_log_open(out, err);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_plain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_stderr_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_stdout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_stream_elsewhere, setup, teardown),
		cmocka_unit_test_setup_teardown(test_level_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_suppressed_line_before_next, setup, teardown),
		cmocka_unit_test_setup_teardown(test_filtered_lines_do_not_count, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ratelimited_macro, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ident, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
