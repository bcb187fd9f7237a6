/*
 * The autorate controller against a modelled bottleneck: a "modem" with its
 * own rate and a 1 MB buffer next to the shaper, greedy TCP load, and
 * WAN-side RTT samples from two flows (20 and 45 ms away) that see the
 * modem's queue as it was when their segment passed, plus up to 2 ms of
 * delayed-ACK noise. Fluid model in 1 ms steps. The modem's rate steps
 * 100 -> 50 -> 100 Mbit/s, then ramps 100 -> 60 -> 100; a quiet spell
 * checks that an idle link holds its rate. Two placements: the modem after
 * the shaper (upstream: we see what we send) and before it (downstream: we
 * see what the modem delivered).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/autorate.h"
#include "sim.h"

#define MBIT(x)   ((double)(x)*125000.0)
#define MS(x)     ((uint64_t)(x)*1000000ull)
#define STEP_NS   MS(1)
#define RUN_MS    140000u
#define MODEM_BUF (1u << 20)
#define HIST_MS   256 /* queue-delay history, for samples that saw the past */

/* The modem's rate (bit/s) at time t (ms). */
static double
modem_mbit(uint32_t t)
{
	if (t < 30000)
		return 100;
	if (t < 60000)
		return 50;
	if (t < 90000)
		return 100;
	if (t < 110000)
		return 100 - 40.0 * (t - 90000) / 20000.0;
	if (t < 130000)
		return 60 + 40.0 * (t - 110000) / 20000.0;
	return 100;
}

/* The users are quiet from 130 to 135 s. */
static bool
quiet(uint32_t t)
{
	return t >= 130000 && t < 135000;
}

struct run {
	double qdelay_ms[RUN_MS]; /* induced latency: the modem's queue in ms */
	double good_mbit[RUN_MS]; /* what the modem delivered, per ms, as Mbit/s */
	double rate_mbit[RUN_MS]; /* the shaper's rate */
};

static uint32_t lcg = 12345;

static uint32_t
rnd(uint32_t n)
{
	lcg = lcg * 1103515245u + 12345u;
	return (lcg >> 8) % n;
}

static void
simulate(struct run *r, bool modem_before)
{
	struct autorate_params p;
	struct autorate a;
	double q = 0, hist[HIST_MS] = { 0 };
	uint64_t delivered = 0;
	static const uint32_t base_ms[2] = { 20, 45 };

	autorate_params_default(&p, (uint64_t)MBIT(10), (uint64_t)MBIT(120));
	autorate_init(&a, &p);
	for (uint32_t t = 0; t < RUN_MS; t++) {
		uint64_t now = (uint64_t)t * STEP_NS;
		double m = MBIT(modem_mbit(t)) / 1000.0; /* bytes per ms */
		double in = quiet(t) ? MBIT(0.2) / 1000.0 : (double)a.rate / 1000.0;
		double out;

		/* TCP fills the shaper; what it releases queues in the modem. */
		q += in;
		out = q < m ? q : m;
		q -= out;
		if (q > MODEM_BUF)
			q = MODEM_BUF; /* the modem drops the excess */
		delivered += (uint64_t)(modem_before ? out : in);
		hist[t % HIST_MS] = q / m;
		r->qdelay_ms[t] = q / m;
		r->good_mbit[t] = out * 1000.0 / 125000.0;
		r->rate_mbit[t] = (double)a.rate / 125000.0;

		/* Each flow's ACK comes back now and reports the queue it met base ms ago. */
		if (!quiet(t) && t >= 50) {
			for (int f = 0; f < 2; f++) {
				double seen = hist[(t - base_ms[f]) % HIST_MS];
				uint64_t rtt = MS(base_ms[f]) + (uint64_t)(seen * 1e6) +
					       rnd(2000) * 1000ull;

				autorate_sample(&a, rtt, MS(base_ms[f]));
			}
		}
		autorate_tick(&a, now, delivered);
	}
}

static double
mean(const double *v, uint32_t from, uint32_t to)
{
	double s = 0;

	for (uint32_t i = from; i < to; i++)
		s += v[i];
	return s / (to - from);
}

static double
peak(const double *v, uint32_t from, uint32_t to)
{
	double m = 0;

	for (uint32_t i = from; i < to; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(const double *v, uint32_t from, uint32_t to)
{
	uint32_t n = to - from;
	double *c = malloc(n * sizeof(*c));
	double m;

	assert_non_null(c);
	memcpy(c, v + from, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_d);
	m = c[n / 2];
	free(c);
	return m;
}

/* Goodput over [from, to) as a share of what the modem could carry. */
static double
goodput_share(const struct run *r, uint32_t from, uint32_t to)
{
	double cap = 0, got = 0;

	for (uint32_t t = from; t < to; t++) {
		cap += modem_mbit(t);
		got += r->good_mbit[t];
	}
	return got / cap;
}

static void
check_run(const char *name, bool modem_before)
{
	static struct run r;
	uint32_t t, back_under = 0, top = 30000;
	double steady, lat, share, recovered;

	simulate(&r, modem_before);

	/* Steady 100 Mbit/s after the first probe. */
	steady = goodput_share(&r, 10000, 30000);
	lat = median(r.qdelay_ms, 10000, 30000);
	SIM_FIGURE("autorate %s steady 100 Mbit/s: goodput %.3f of the modem, induced latency "
		   "median %.2f ms",
		   name, steady, lat);
	assert_true(steady >= 0.90);
	assert_true(lat <= 5.0);

	/* The modem halves at 30 s: the latency it induces is back under 10 ms within 3 s. */
	for (t = 30000; t < 60000; t++)
		if (r.qdelay_ms[t] > r.qdelay_ms[top])
			top = t;
	for (t = top; t < 60000; t++)
		if (r.qdelay_ms[t] < 10.0) {
			back_under = t;
			break;
		}
	SIM_FIGURE("autorate %s 100->50: induced latency peak %.1f ms, under 10 ms after %.2f s, "
		   "then median %.2f ms, max %.1f ms; goodput %.3f of the modem",
		   name, peak(r.qdelay_ms, 30000, 33000), (back_under - 30000) / 1000.0,
		   median(r.qdelay_ms, 33000, 60000), peak(r.qdelay_ms, 33000, 60000),
		   goodput_share(&r, 35000, 60000));
	assert_true(back_under != 0 && back_under <= 33000);
	/* And it stays low for the rest of the low phase. */
	assert_true(median(r.qdelay_ms, 33000, 60000) <= 5.0);
	assert_true(goodput_share(&r, 35000, 60000) >= 0.90);

	/* The modem recovers at 60 s: goodput back to 0.9 of 100 Mbit/s within 10 s. */
	recovered = mean(r.good_mbit, 69000, 70000);
	for (t = 60000; t < 70000; t += 100)
		if (mean(r.good_mbit, t, t + 1000) >= 90.0)
			break;
	SIM_FIGURE("autorate %s 50->100: goodput at 0.9 of the new rate after %.1f s, %.1f Mbit/s "
		   "in the 10th s",
		   name, (t - 60000 + 1000) / 1000.0, recovered);
	assert_true(recovered >= 90.0);

	/* Ramps down and up: still close to the line, little queue. */
	share = goodput_share(&r, 90000, 130000);
	lat = median(r.qdelay_ms, 90000, 130000);
	SIM_FIGURE("autorate %s ramps 100->60->100: goodput %.3f of the modem, induced latency "
		   "median %.2f ms",
		   name, share, lat);
	assert_true(share >= 0.85);
	assert_true(lat <= 5.0);

	/* Quiet for 5 s: the rate holds. */
	SIM_FIGURE("autorate %s idle: rate %.1f -> %.1f Mbit/s", name, r.rate_mbit[130050],
		   r.rate_mbit[134950]);
	assert_true(fabs(r.rate_mbit[134950] - r.rate_mbit[130050]) < 0.01);
}

/*
 * A queue that stands in the band between clear (3 ms) and bloat (8 ms):
 * the shaper's bound is the modem's rate, so once 5.5 ms of queue is there
 * (a burst at start), nothing the other rules do moves it. As the e2e bed
 * showed once (5.4 ms standing downstream for a whole phase), it must be
 * drained: within 3 s the induced latency is under clear, and stays low
 * while goodput stays at >= 0.95 of the modem.
 */
static void
standing_queue(bool modem_before)
{
	struct autorate_params p;
	struct autorate a;
	const uint32_t run_ms = 20000, base = 20;
	double q, hist[HIST_MS], m = MBIT(100) / 1000.0, got = 0;
	double *qd = calloc(run_ms, sizeof(*qd));
	uint64_t delivered = 0;
	uint32_t t, under = UINT32_MAX; /* never */

	assert_non_null(qd);
	autorate_params_default(&p, (uint64_t)MBIT(10), (uint64_t)MBIT(100));
	autorate_init(&a, &p);
	q = 5.5 * m;
	for (t = 0; t < HIST_MS; t++)
		hist[t] = q / m;
	for (t = 0; t < run_ms; t++) {
		double in = (double)a.rate / 1000.0, out;

		q += in;
		out = q < m ? q : m;
		q -= out;
		delivered += (uint64_t)(modem_before ? out : in);
		hist[t % HIST_MS] = q / m;
		qd[t] = q / m;
		if (t >= 5000)
			got += out;
		if (under == UINT32_MAX && qd[t] < 3.0)
			under = t;
		if (t >= base)
			autorate_sample(&a,
					MS(base) + (uint64_t)(hist[(t - base) % HIST_MS] * 1e6) +
							rnd(2000) * 1000ull,
					MS(base));
		autorate_tick(&a, (uint64_t)t * STEP_NS, delivered);
	}
	SIM_FIGURE("autorate %s standing 5.5 ms at the modem's rate: under 3 ms after %.2f s "
		   "(-1: never), then median %.2f ms, max %.2f ms; goodput %.3f of the modem; "
		   "%llu cuts",
		   modem_before ? "downstream" : "upstream",
		   under == UINT32_MAX ? -1.0 : under / 1000.0, median(qd, 5000, run_ms),
		   peak(qd, 5000, run_ms), got / (m * (run_ms - 5000)),
		   (unsigned long long)a.downs);
	assert_true(under <= 3000);
	assert_true(median(qd, 5000, run_ms) <= 3.0);
	assert_true(got / (m * (run_ms - 5000)) >= 0.95);
	free(qd);
}

static void
test_standing_queue(void **state)
{
	(void)state;
	standing_queue(false);
	standing_queue(true);
}

static void
test_modem_after_shaper(void **state)
{
	(void)state;
	check_run("upstream", false);
}

static void
test_modem_before_shaper(void **state)
{
	(void)state;
	check_run("downstream", true);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modem_after_shaper),
		cmocka_unit_test(test_modem_before_shaper),
		cmocka_unit_test(test_standing_queue),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
