/*
 * The data plane's clock: TSC ticks since start, in nanoseconds. DPDK's
 * rte_get_tsc_hz() is a rounded figure on some machines (a VM seen here
 * reports 2450 MHz for a 2445.4 MHz TSC: every rate 0.19 % off), so the
 * frequency is measured once at start against CLOCK_MONOTONIC_RAW: from
 * dp_clock_begin (right after EAL starts) to dp_clock_init (once the ports
 * are up), so the 100 ms it needs overlaps the start-up instead of adding to
 * every restart's outage.
 */
#include <stdio.h>
#include <time.h>

#include <rte_cycles.h>

#include "shaper/dataplane.h"
#include "shaper/log.h"

#define CALIBRATION_MS 100 /* the least time between the two (tsc, ns) pairs */

/* The first pair, from dp_clock_begin; ns 0 = not taken. */
static uint64_t cal_tsc0, cal_ns0;

/* TSC -> ns as a 32.32 fixed-point multiply, precomputed once. */
static uint64_t tsc_start;
static uint64_t ns_per_tsc_q32;
static uint64_t tsc_hz;

uint64_t
dp_tsc_hz_from_samples(uint64_t tsc0, uint64_t ns0, uint64_t tsc1, uint64_t ns1)
{
	if (tsc1 <= tsc0 || ns1 <= ns0)
		return 0;
	return (uint64_t)(((unsigned __int128)(tsc1 - tsc0) * 1000000000u + (ns1 - ns0) / 2) /
			  (ns1 - ns0));
}

static uint64_t
mono_raw_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC_RAW, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * One (tsc, ns) pair: the clock read bracketed by two TSC reads, the
 * tightest of a few tries, its TSC taken at the middle.
 */
static void
clock_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 16; i++) {
		uint64_t a = rte_rdtsc_precise(), t = mono_raw_ns(), b = rte_rdtsc_precise();

		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = t;
		}
	}
}

uint64_t
dp_tsc_hz_measure(unsigned int ms)
{
	uint64_t tsc0 = 0, ns0 = 0, tsc1 = 0, ns1 = 0; /* 0: no pair was taken */
	struct timespec nap = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	clock_pair(&tsc0, &ns0);
	nanosleep(&nap, NULL);
	clock_pair(&tsc1, &ns1);
	if (ns0 == 0 || ns1 == 0)
		return 0;
	return dp_tsc_hz_from_samples(tsc0, ns0, tsc1, ns1);
}

void
dp_clock_begin(void)
{
	clock_pair(&cal_tsc0, &cal_ns0);
}

void
dp_clock_init(void)
{
	uint64_t dpdk_hz = rte_get_tsc_hz(), hz = 0, tsc1 = 0, ns1 = 0, since;

	if (cal_ns0 == 0)
		dp_clock_begin();
	since = mono_raw_ns() - cal_ns0;
	if (cal_ns0 != 0 && since < (uint64_t)CALIBRATION_MS * 1000000u) {
		uint64_t rest = (uint64_t)CALIBRATION_MS * 1000000u - since;
		struct timespec nap = { .tv_sec = (time_t)(rest / 1000000000u),
					.tv_nsec = (long)(rest % 1000000000u) };

		nanosleep(&nap, NULL);
	}
	clock_pair(&tsc1, &ns1);
	if (cal_ns0 != 0 && ns1 != 0)
		hz = dp_tsc_hz_from_samples(cal_tsc0, cal_ns0, tsc1, ns1);

	/* A measurement far from DPDK's figure is a broken clock, not a rounding. */
	if (hz == 0 || hz < dpdk_hz - dpdk_hz / 20 || hz > dpdk_hz + dpdk_hz / 20) {
		shaper_log_warning("TSC measured at %llu Hz, DPDK says %llu Hz: using DPDK's",
				   (unsigned long long)hz, (unsigned long long)dpdk_hz);
		hz = dpdk_hz;
	}
	shaper_log_info("TSC %llu Hz (measured; DPDK's figure %llu Hz)", (unsigned long long)hz,
			(unsigned long long)dpdk_hz);
	tsc_hz = hz;
	tsc_start = rte_get_tsc_cycles();
	ns_per_tsc_q32 = (uint64_t)(((unsigned __int128)1000000000 << 32) / hz);
}

uint64_t
dp_tsc_hz(void)
{
	return tsc_hz;
}

uint64_t
dp_now_ns(void)
{
	uint64_t d = rte_get_tsc_cycles() - tsc_start;

	return (uint64_t)(((unsigned __int128)d * ns_per_tsc_q32) >> 32);
}
