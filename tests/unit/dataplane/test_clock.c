/*
 * The data plane clock: dp_now_ns() must advance at the rate of real time.
 * DPDK's rte_get_tsc_hz() is rounded on some VMs (2450 MHz for a 2445.4 MHz
 * TSC), which put every shaped rate 0.19 % off; dp_clock_init measures it.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <rte_cycles.h>
#include <rte_eal.h>

#include "shaper/dataplane.h"

#include "eal_test.h"

static void
test_hz_from_samples(void **state)
{
	(void)state;
	assert_int_equal(dp_tsc_hz_from_samples(1000, 0, 2445407000ull + 1000, 1000000000ull),
			 2445407000ull);
	/* Rounded to the nearest tick per second. */
	assert_int_equal(dp_tsc_hz_from_samples(0, 0, 3, 2), 1500000000ull);
	/* Clocks that did not advance give 0, never a division by zero. */
	assert_int_equal(dp_tsc_hz_from_samples(5, 10, 5, 20), 0);
	assert_int_equal(dp_tsc_hz_from_samples(5, 10, 9, 10), 0);
}

static uint64_t
mono_raw(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* dp_now_ns and CLOCK_MONOTONIC_RAW read as close together as we can. */
static void
pair(uint64_t *now, uint64_t *raw)
{
	uint64_t best = UINT64_MAX;

	*now = *raw = 0; /* the first read always replaces them; gcc -O3 cannot tell */
	for (int i = 0; i < 16; i++) {
		uint64_t a = mono_raw(), n = dp_now_ns(), b = mono_raw();

		if (b - a < best) {
			best = b - a;
			*now = n;
			*raw = a + (b - a) / 2;
		}
	}
}

static void
test_now_runs_at_real_time(void **state)
{
	uint64_t n0, r0, n1, r1;
	double err;
	struct timespec nap = { .tv_sec = 0, .tv_nsec = 300000000 };

	(void)state;
	dp_clock_init();
	pair(&n0, &r0);
	nanosleep(&nap, NULL);
	pair(&n1, &r1);
	err = ((double)(n1 - n0) - (double)(r1 - r0)) / (double)(r1 - r0);
	printf("# figure: TSC %llu Hz in use, DPDK's figure %llu Hz; dp_now_ns over %.3f s of "
	       "CLOCK_MONOTONIC_RAW: %+.5f %%\n",
	       (unsigned long long)dp_tsc_hz(), (unsigned long long)rte_get_tsc_hz(),
	       (double)(r1 - r0) / 1e9, err * 100);
	/* Reads bracket each other within µs: 0.02 % of 300 ms is 60 µs. */
	assert_true(err < 2e-4 && err > -2e-4);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hz_from_samples),
		cmocka_unit_test(test_now_runs_at_real_time),
	};

	return EAL_TEST_RUN("test_clock", tests, NULL, NULL);
}
