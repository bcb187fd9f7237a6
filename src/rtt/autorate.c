/*
 * The autorate controller (see include/shaper/autorate.h). Each interval
 * takes the lowest "RTT above baseline" of its samples: a standing queue in
 * the modem lifts every sample, while delayed ACKs and scheduling noise lift
 * only some. Lowering is multiplicative and sized by how far the RTT rose,
 * from what actually got through (downstream, the modem sits before us and
 * delivers less than we allow). Raising is fast far from the rate of the
 * last bloat and slow near it, so the line is probed gently where it broke
 * before and regained quickly when it has grown. A queue standing between
 * the clear and bloat thresholds is drained by a small cut after a while.
 */
#include <string.h>

#include "shaper/autorate.h"

#define AR_DOWN_COOLDOWN 3   /* intervals between two lowerings: let the queue drain */
#define AR_UP_FAST_PCT   5   /* raise per interval away from the last bloat rate */
#define AR_UP_SLOW_PCT   1   /* raise per interval near it */
#define AR_NEAR_LO_PCT   85  /* "near": from this share of the last bloat rate ... */
#define AR_NEAR_HI_PCT   110 /* ... to this one */
/*
 * A queue that stands between clear and bloat is neither cut nor drained by
 * the rules above: with the shaper at the modem's rate it never moves. After
 * this many busy intervals in that band, lower a little so that it drains.
 */
#define AR_MID_INTERVALS 5
#define AR_MID_CUT_PCT   3

void
autorate_params_default(struct autorate_params *p, uint64_t min_rate, uint64_t max_rate)
{
	memset(p, 0, sizeof(*p));
	p->min_rate = min_rate;
	p->max_rate = max_rate;
	p->interval_ns = 100000000ull;
	p->bloat_ns = 8000000ull;
	p->clear_ns = 3000000ull;
	p->busy_pct = 30;
	p->loaded_pct = 75;
}

void
autorate_init(struct autorate *a, const struct autorate_params *p)
{
	memset(a, 0, sizeof(*a));
	a->p = *p;
	if (a->p.interval_ns == 0)
		a->p.interval_ns = 100000000ull;
	if (a->p.max_rate < a->p.min_rate)
		a->p.max_rate = a->p.min_rate;
	a->rate = p->start_rate != 0 ? p->start_rate : a->p.max_rate;
	if (a->rate < a->p.min_rate)
		a->rate = a->p.min_rate;
	if (a->rate > a->p.max_rate)
		a->rate = a->p.max_rate;
	a->delay_min = UINT64_MAX;
	a->owd_min = UINT64_MAX;
	a->owd_last_ns = UINT64_MAX;
}

void
autorate_attribute(struct autorate *up, const struct autorate *down)
{
	up->owd_last_ns = down != NULL ? down->owd_last_ns : UINT64_MAX;
}

/* This direction's share of an RTT rise (see autorate_attribute). */
static uint64_t
own_share(const struct autorate *a, uint64_t delay)
{
	if (a->owd_last_ns == UINT64_MAX)
		return delay;
	if (a->p.after_modem)
		return a->owd_last_ns;
	return delay > a->owd_last_ns ? delay - a->owd_last_ns : 0;
}

void
autorate_sample(struct autorate *a, uint64_t rtt_ns, uint64_t base_ns)
{
	uint64_t d = rtt_ns > base_ns ? rtt_ns - base_ns : 0;

	if (d < a->delay_min)
		a->delay_min = d;
	a->nsamples++;
}

static uint64_t
clamp_rate(const struct autorate *a, uint64_t r)
{
	if (r < a->p.min_rate)
		return a->p.min_rate;
	if (r > a->p.max_rate)
		return a->p.max_rate;
	return r;
}

/*
 * Lower the rate to `to`, remembering `through` (what got through) as about
 * the line's rate; not within the cooldown of the last lowering, which lets
 * the queue drain first. Returns true if it lowered.
 */
static bool
lower(struct autorate *a, uint64_t now, uint64_t through, uint64_t to)
{
	if (a->last_down_ns != 0 && now - a->last_down_ns < AR_DOWN_COOLDOWN * a->p.interval_ns)
		return false;
	a->bloat_rate = through;
	a->rate = clamp_rate(a, to);
	a->last_down_ns = now;
	a->last_action = AUTORATE_DOWN;
	a->downs++;
	return true;
}

bool
autorate_tick(struct autorate *a, uint64_t now, uint64_t delivered_bytes)
{
	uint64_t dt, old = a->rate, delay, got, own, through;
	uint32_t n = a->nsamples, mid;
	bool busy;

	if (!a->started) {
		a->started = true;
		a->tick_start = now;
		a->tick_bytes = delivered_bytes;
		return false;
	}
	if (now - a->tick_start < a->p.interval_ns)
		return false;
	dt = now - a->tick_start;
	got = delivered_bytes - a->tick_bytes;
	a->delivered_rate = (uint64_t)((double)got * 1e9 / (double)dt);
	a->tick_start = now;
	a->tick_bytes = delivered_bytes;
	delay = a->delay_min;
	a->delay_min = UINT64_MAX;
	a->nsamples = 0;
	if (a->p.after_modem && a->owd_n != 0)
		a->owd_last_ns = a->owd_min;
	a->owd_min = UINT64_MAX;
	a->owd_n = 0;
	a->last_action = AUTORATE_HOLD;
	if (n == 0)
		return false; /* no TCP to listen to: nothing is known */
	a->last_delay_ns = delay;

	own = own_share(a, delay);
	busy = a->delivered_rate * 100 >= (uint64_t)a->p.busy_pct * a->rate;
	/* Downstream the modem sits before us and delivers less than we allow. */
	through = a->delivered_rate < a->rate ? a->delivered_rate : a->rate;
	mid = a->mid_intervals;
	a->mid_intervals = 0;
	if (delay >= a->p.bloat_ns && busy) {
		/* The other direction's queue (autorate_attribute): not ours to cut. */
		if (own < a->p.bloat_ns / 2)
			return false;
		uint64_t over = delay - a->p.bloat_ns;
		/* 10 % off at the threshold, up to 30 % off at three times it. */
		double cut = 0.10 +
			     0.20 * (over >= 2 * a->p.bloat_ns
						     ? 1.0
						     : (double)over / (double)(2 * a->p.bloat_ns));

		lower(a, now, through, (uint64_t)((double)through * (1.0 - cut)));
	} else if (own <= a->p.clear_ns &&
		   a->delivered_rate * 100 >= (uint64_t)a->p.loaded_pct * a->rate) {
		bool near = a->bloat_rate != 0 && a->rate * 100 >= a->bloat_rate * AR_NEAR_LO_PCT &&
			    a->rate * 100 < a->bloat_rate * AR_NEAR_HI_PCT;
		uint64_t step = a->rate * (near ? AR_UP_SLOW_PCT : AR_UP_FAST_PCT) / 100;

		a->rate = clamp_rate(a, a->rate + (step != 0 ? step : 1));
		a->last_action = AUTORATE_UP;
		a->ups++;
	} else if (own > a->p.clear_ns && own < a->p.bloat_ns && busy) {
		a->mid_intervals = mid + 1;
		if (a->mid_intervals >= AR_MID_INTERVALS &&
		    lower(a, now, through, through * (100 - AR_MID_CUT_PCT) / 100))
			a->mid_intervals = 0;
	}
	return a->rate != old;
}
