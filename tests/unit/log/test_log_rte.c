/*
 * DPDK's rte_log through the log module (shaper_log_route_rte): each
 * message at its own level, DPDK's text as it is (no "shaperd:"), the
 * priority prefix on every line when the stream is the journal, and our
 * level filter applied. rte_log needs no EAL: its types are registered by
 * constructors.
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
#include <rte_log.h>

#include "shaper/log.h"

#include "capture.h"

static FILE *out, *err;

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
	assert_int_equal(shaper_log_route_rte(), 0);
	rte_log_set_level(RTE_LOGTYPE_EAL, RTE_LOG_DEBUG);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	shaper_log_open(NULL, NULL);
	fclose(out);
	fclose(err);
	return 0;
}

static void
test_rte_plain(void **state)
{
	(void)state;
	rte_log(RTE_LOG_ERR, RTE_LOGTYPE_EAL, "EAL: Cannot open %s\n", "/dev/vfio");
	rte_log(RTE_LOG_WARNING, RTE_LOGTYPE_EAL, "EAL: No free hugepages\n");
	rte_log(RTE_LOG_INFO, RTE_LOGTYPE_EAL, "EAL: Detected %d lcores\n", 2);
	rte_log(RTE_LOG_DEBUG, RTE_LOGTYPE_EAL, "EAL: below our level\n");
	assert_string_equal(take(err), "EAL: Cannot open /dev/vfio\nEAL: No free hugepages\n");
	assert_string_equal(take(out), "EAL: Detected 2 lcores\n");
}

static void
test_rte_journal(void **state)
{
	struct stat so, se;
	char v[64];

	(void)state;
	/* $JOURNAL_STREAM names stderr here, stdout below */
	assert_int_equal(fstat(fileno(err), &se), 0);
	snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)se.st_dev,
		 (unsigned long long)se.st_ino);
	setenv("JOURNAL_STREAM", v, 1);
	shaper_log_open(out, err);
	shaper_log_set_level(SHAPER_LOG_DEBUG);
	rte_log(RTE_LOG_CRIT, RTE_LOGTYPE_EAL, "EAL: two\nlines\n");
	rte_log(RTE_LOG_NOTICE, RTE_LOGTYPE_EAL, "EAL: to stdout, plain\n");
	rte_log(RTE_LOG_WARNING, RTE_LOGTYPE_EAL, "EAL: warned\n");
	assert_string_equal(take(err), "<3>EAL: two\n<3>lines\n<4>EAL: warned\n");
	assert_string_equal(take(out), "EAL: to stdout, plain\n");

	assert_int_equal(fstat(fileno(out), &so), 0);
	snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)so.st_dev,
		 (unsigned long long)so.st_ino);
	setenv("JOURNAL_STREAM", v, 1);
	shaper_log_open(out, err);
	rte_log(RTE_LOG_DEBUG, RTE_LOGTYPE_EAL, "EAL: debug\n");
	rte_log(RTE_LOG_NOTICE, RTE_LOGTYPE_EAL, "EAL: notice\n");
	assert_string_equal(take(out), "<7>EAL: debug\n<5>EAL: notice\n");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rte_plain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rte_journal, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
