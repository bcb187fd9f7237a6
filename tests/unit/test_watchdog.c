/*
 * The watchdog's health rule: ping only while every worker's heartbeat
 * moves between looks; a stalled worker withholds the ping until it turns.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "shaper/watchdog.h"

#define MS 1000000ull

static void
test_pings_only_when_due(void **state)
{
	struct dp_watchdog wd;
	uint64_t beats[2] = { 1, 1 };
	unsigned int w = 99;
	uint64_t since = 0;

	(void)state;
	dp_watchdog_init(&wd, 2, 500 * MS, 0);
	assert_int_equal(dp_watchdog_check(&wd, beats, 499 * MS, &w, &since), DP_WD_WAIT);
	assert_int_equal(dp_watchdog_check(&wd, beats, 500 * MS, &w, &since), DP_WD_ALIVE);
	beats[0] = 7;
	beats[1] = 3;
	/* the next look is a whole period later, not at once */
	assert_int_equal(dp_watchdog_check(&wd, beats, 600 * MS, &w, &since), DP_WD_WAIT);
	assert_int_equal(dp_watchdog_check(&wd, beats, 1000 * MS, &w, &since), DP_WD_ALIVE);
}

static void
test_stalled_worker_withholds(void **state)
{
	struct dp_watchdog wd;
	uint64_t beats[2] = { 10, 20 };
	unsigned int w = 99;
	uint64_t since = 0;

	(void)state;
	dp_watchdog_init(&wd, 2, 500 * MS, 0);
	assert_int_equal(dp_watchdog_check(&wd, beats, 500 * MS, &w, &since), DP_WD_ALIVE);
	beats[0] = 11; /* worker 1 stops turning */
	assert_int_equal(dp_watchdog_check(&wd, beats, 1000 * MS, &w, &since), DP_WD_STALLED);
	assert_int_equal(w, 1);
	assert_int_equal(since, 500 * MS);
	beats[0] = 12;
	assert_int_equal(dp_watchdog_check(&wd, beats, 1500 * MS, &w, &since), DP_WD_STALLED);
	assert_int_equal(w, 1);
	assert_int_equal(since, 1000 * MS); /* counted from its last move */
	assert_true(wd.stalled[1]);
	assert_false(wd.stalled[0]);
	beats[0] = 13;
	beats[1] = 21; /* it turns again: alive */
	assert_int_equal(dp_watchdog_check(&wd, beats, 2000 * MS, &w, &since), DP_WD_ALIVE);
	assert_false(wd.stalled[1]);
}

static void
test_worker_that_never_turned(void **state)
{
	struct dp_watchdog wd;
	uint64_t beats[1] = { 0 };
	unsigned int w = 99;
	uint64_t since = 0;

	(void)state;
	dp_watchdog_init(&wd, 1, 100 * MS, 5 * MS);
	assert_int_equal(dp_watchdog_check(&wd, beats, 105 * MS, &w, &since), DP_WD_STALLED);
	assert_int_equal(w, 0);
	assert_int_equal(since, 100 * MS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pings_only_when_due),
		cmocka_unit_test(test_stalled_worker_withholds),
		cmocka_unit_test(test_worker_that_never_turned),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
