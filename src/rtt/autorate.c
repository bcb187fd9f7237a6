/*
 * The autorate controller (see include/shaper/autorate.h). Each interval
 * takes the lowest "RTT above baseline" of its samples. Lowering is
 * multiplicative, sized by how far the RTT rose and how long the queue
 * would take to drain, from what actually got through (downstream, the
 * modem sits before us and delivers its own rate; upstream, TCP is clocked
 * by the modem): so it acts at any load, a line that fell to a tenth as
 * much as one that lost a tenth. Raising is fast far from the rate of the
 * last bloat and slow near it, so the line is probed gently where it broke
 * before and regained quickly when it has grown.
 */
#include <string.h>

#include "shaper/autorate.h"

/*
 * A series of cuts that begins this soon after the last one ended takes
 * that one's starting rate: see cut_as.
 */
#define SERIES_CARRY_NS 1000000000ull

/*
 * The rules, in the order they judge an interval: the first that applies
 * in the interval's band and whose condition holds decides (see judge).
 */
enum rule_id {
	R_NO_SAMPLES_DECAY,
	R_NO_SAMPLES,
	R_UNDO_CUT,
	R_OTHER_QUEUE,
	R_OTHER_SHARE,
	R_OTHER_ACKS,
	R_CUT_CONFIRMED,
	R_CUT_GROWING,
	R_REFRACTORY,
	R_CUT_RISING_FAST,
	R_CUT_FROM_RATE,
	R_CUT_AGAIN,
	R_JITTER,
	R_DRAINING,
	R_FLAT,
	R_MODEM_DRAINING,
	R_PATH,
	R_CUT_BLOAT,
	R_REGAIN,
	R_RAISE,
	R_OTHER_STANDING,
	R_PATH_REST,
	R_CUT_STANDING,
	R_HOLD,
	R_DECAY,
	R_N,
};

void
autorate_params_default(struct autorate_params *p, uint64_t min_rate, uint64_t max_rate)
{
	memset(p, 0, sizeof(*p));
	p->min_rate = min_rate;
	p->max_rate = max_rate;
	p->interval_ns = 100000000ull;
	p->early_samples = 4;
	p->bloat_ns = 8000000ull;
	p->clear_ns = 3000000ull;
	p->frame_bytes = 1514;
	p->refractory_ns = 300000000ull;
	p->cut_min_pct = 10;
	p->cut_max_pct = 50;
	p->drain_ns = 1000000000ull;
	p->loaded_pct = 75;
	p->idle_pct = 10;
	p->up_fast_pct = 5;
	p->up_slow_pct = 1;
	p->near_lo_pct = 92;
	p->near_hi_pct = 101;
	p->standing_intervals = 5;
	p->standing_cut_pct = 3;
	p->decay_pct = 1;
	p->decay_without_samples = false;
	p->owd_stale_ns = 1000000000ull;
	p->owd_recent = 8;
	p->lesser_ratio = 4;
	p->path_flat_ns = 2000000ull;
	p->path_checks = 2;
	p->path_max_ns = 60000000ull;
	p->line_pct = 90;
	p->growth_pct = 25;
	p->regain_pct = 25;
	p->acks_floor_pct = 125;
}

bool
autorate_params_same(const struct autorate_params *a, const struct autorate_params *b)
{
	return a->min_rate == b->min_rate && a->max_rate == b->max_rate &&
	       a->start_rate == b->start_rate && a->base_rate == b->base_rate &&
	       a->interval_ns == b->interval_ns && a->early_samples == b->early_samples &&
	       a->bloat_ns == b->bloat_ns && a->clear_ns == b->clear_ns &&
	       a->frame_bytes == b->frame_bytes && a->refractory_ns == b->refractory_ns &&
	       a->cut_min_pct == b->cut_min_pct && a->cut_max_pct == b->cut_max_pct &&
	       a->drain_ns == b->drain_ns && a->loaded_pct == b->loaded_pct &&
	       a->idle_pct == b->idle_pct && a->up_fast_pct == b->up_fast_pct &&
	       a->up_slow_pct == b->up_slow_pct && a->near_lo_pct == b->near_lo_pct &&
	       a->near_hi_pct == b->near_hi_pct && a->standing_intervals == b->standing_intervals &&
	       a->standing_cut_pct == b->standing_cut_pct && a->decay_pct == b->decay_pct &&
	       a->decay_without_samples == b->decay_without_samples &&
	       a->owd_stale_ns == b->owd_stale_ns && a->owd_recent == b->owd_recent &&
	       a->lesser_ratio == b->lesser_ratio && a->path_flat_ns == b->path_flat_ns &&
	       a->path_checks == b->path_checks && a->path_max_ns == b->path_max_ns &&
	       a->line_pct == b->line_pct && a->growth_pct == b->growth_pct &&
	       a->regain_pct == b->regain_pct && a->acks_floor_pct == b->acks_floor_pct &&
	       a->after_modem == b->after_modem;
}

static const char *const reason_names[AR_WHY_N] = {
	[AR_WHY_NO_SAMPLES] = "no_samples",
	[AR_WHY_CUT_BLOAT] = "cut_bloat",
	[AR_WHY_CUT_STANDING] = "cut_standing",
	[AR_WHY_RAISE] = "raise",
	[AR_WHY_DECAY] = "decay",
	[AR_WHY_PATH] = "path",
	[AR_WHY_REFRACTORY] = "refractory",
	[AR_WHY_DRAINING] = "draining",
	[AR_WHY_OTHER_DIR] = "other_direction",
	[AR_WHY_HOLD] = "hold",
	[AR_WHY_REGAIN] = "regain",
	[AR_WHY_CUT_GROWING] = "cut_growing",
};

const char *
autorate_reason_name(unsigned int why)
{
	return why < AR_WHY_N ? reason_names[why] : "hold";
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

void
autorate_init(struct autorate *a, const struct autorate_params *p)
{
	memset(a, 0, sizeof(*a));
	a->p = *p;
	if (a->p.interval_ns == 0)
		a->p.interval_ns = 100000000ull;
	if (a->p.max_rate < a->p.min_rate)
		a->p.max_rate = a->p.min_rate;
	if (a->p.cut_max_pct > 90)
		a->p.cut_max_pct = 90;
	if (a->p.cut_min_pct > a->p.cut_max_pct)
		a->p.cut_min_pct = a->p.cut_max_pct;
	if (a->p.owd_recent == 0 || a->p.owd_recent > AR_OWD_RECENT_MAX)
		a->p.owd_recent = a->p.owd_recent == 0 ? 1 : AR_OWD_RECENT_MAX;
	a->rate = clamp_rate(a, p->start_rate != 0 ? p->start_rate : a->p.max_rate);
	a->p.base_rate = clamp_rate(a, p->base_rate != 0 ? p->base_rate : a->rate);
	a->in.delay_min = UINT64_MAX;
	a->in.owd_min = UINT64_MAX;
	a->path.owd_last_ns = UINT64_MAX;
	a->path.raw_prev = UINT64_MAX;
	a->series.delay_prev = a->series.own_prev = UINT64_MAX;
	a->path.settle_min_ns = UINT64_MAX;
	for (unsigned int i = 0; i < AR_OWD_RECENT_MAX; i++)
		a->path.owd_recent[i] = UINT64_MAX;
	a->last_why = AR_WHY_NO_SAMPLES;
	a->last_rule = R_NO_SAMPLES;
}

/* What a sees of the other direction o (NULL: none, all zero). */
static void
see_other(struct autorate *a, const struct autorate *o)
{
	a->other.load_pct = o != NULL ? o->load_pct : 0;
	a->other.load_rate = o != NULL ? o->load_rate : 0;
	a->other.line_rate = o != NULL ? o->series.bloat_rate : 0;
	a->other.at_min = o != NULL && o->rate <= o->p.min_rate;
	a->other.down_ns = o != NULL ? o->series.last_down_ns : 0;
	a->other.cut_ns = o != NULL ? o->series.last_cut_ns : 0;
	a->other.rate = o != NULL ? o->rate : 0;
}

void
autorate_attribute(struct autorate *up, struct autorate *down)
{
	uint64_t m = UINT64_MAX;

	see_other(up, down);
	if (down != NULL)
		see_other(down, up);
	/*
	 * The RTT samples the upstream decides on completed up to a round trip
	 * after their packets met the queues; the one-way figures are of now.
	 * A downstream queue that drains after a cut would leave the RTT high
	 * and the one-way rise low, and read as the upstream's: its share is
	 * taken against the highest one-way rise of the last few intervals,
	 * less what the downstream has taken as its path's. The downstream's
	 * interval under way counts too, by its latest figure: when the
	 * upstream's interval ends first (their ends drift apart), a queue
	 * that rose in the downstream's current one (a downstream line that
	 * just fell) is in it and in no finished one. Not by its lowest: the
	 * upstream's samples may all have come late in the interval (its ACKs
	 * wait in that queue), when the queue was long, and its lowest was
	 * early, when it was short.
	 */
	if (down != NULL && (down->path.owd_last_ns != UINT64_MAX || down->in.owd_n != 0)) {
		m = down->in.owd_n != 0 ? down->in.owd_now : 0;
		for (unsigned int i = 0; i < down->p.owd_recent; i++)
			if (down->path.owd_recent[i] != UINT64_MAX && down->path.owd_recent[i] > m)
				m = down->path.owd_recent[i];
		m = m > down->path.own_ns ? m - down->path.own_ns : 0;
	}
	up->path.owd_last_ns = m;
}

uint64_t
autorate_threshold(const struct autorate *a, uint64_t t)
{
	return t + (a->rate != 0 ? (uint64_t)a->p.frame_bytes * 1000000000ull / a->rate : 0);
}

/*
 * This direction's share of the RTT's rise delay (the path's part already
 * off; see autorate_attribute): downstream its one-way rise less the part
 * it took as the path's, upstream the rest of the RTT's.
 */
static uint64_t
own_share(struct autorate *a, uint64_t delay)
{
	if (a->path.owd_last_ns == UINT64_MAX)
		return delay;
	if (a->p.after_modem) {
		if (a->path.owd_last_ns < a->path.own_ns)
			a->path.own_ns = a->path.owd_last_ns;
		return a->path.owd_last_ns - a->path.own_ns;
	}
	return delay > a->path.owd_last_ns ? delay - a->path.owd_last_ns : 0;
}

void
autorate_sample(struct autorate *a, uint64_t rtt_ns, uint64_t base_ns)
{
	uint64_t d = rtt_ns > base_ns ? rtt_ns - base_ns : 0;

	if (d < a->in.delay_min)
		a->in.delay_min = d;
	if (d < a->path.ns)
		a->in.nbelow++;
	a->in.nsamples++;
}

/* The higher of v and *prev (UINT64_MAX: none), which becomes v. */
static uint64_t
with_last(uint64_t *prev, uint64_t v)
{
	uint64_t p = *prev;

	*prev = v;
	return p != UINT64_MAX && p > v ? p : v;
}

static uint64_t
less(uint64_t v, uint64_t by)
{
	return v > by ? v - by : 0;
}

/* What an interval is, by its rise: each rule applies in some of these. */
enum band {
	B_NONE = 1u << 0,  /* no samples */
	B_BLOAT = 1u << 1, /* the rise at bloat */
	B_CLEAR = 1u << 2, /* this direction's share clear, and loaded */
	B_MID = 1u << 3,   /* its share between clear and bloat, not idle */
	B_QUIET = 1u << 4, /* clear but not loaded, or idle */
};
#define B_SAMPLES (B_BLOAT | B_CLEAR | B_MID | B_QUIET)

/*
 * One interval, closed (close_interval) and attributed (attribute): what
 * the rules judge. The rules' conditions read it and change nothing; only
 * the action of the rule that decides changes the controller's state.
 */
struct ar_iv {
	uint64_t now, dt;   /* its end, and the time the shaper ran in it */
	uint64_t old;       /* the rate before the decision */
	uint32_t n, below;  /* its samples, and of them those below path.ns */
	uint32_t mid;       /* series.mid_intervals before it */
	uint32_t regain_n;  /* series.regain_n before it */
	uint64_t low;       /* series.doubt_rate before it: the rate a doubted reading asked for */
	uint64_t last_sent; /* delivered_rate over the interval before */
	bool loaded, idle;
	unsigned int band;             /* enum band */
	uint64_t raw;                  /* its lowest rise, path.ns on */
	uint64_t delay, own;           /* the rise, path.ns off, and this direction's share */
	uint64_t delay_pair, own_pair; /* ... each the higher of it and the last interval's */
	uint64_t bloat, clear;         /* the thresholds at the rate */
	uint64_t through;              /* what the line carried, as a cut is sized from */
	uint64_t doubted; /* upstream: what part of an interval read, doubted (0: none) */
	bool theirs;      /* not the bottleneck (not_bottleneck) */
	bool confirmed;   /* the cut a doubted reading asked for, confirmed */
	/* Against the rise the last cut answered (see since_cut). */
	uint64_t hi;
	bool rising, falling, jitter;
};

static void
decide(struct autorate *a, enum autorate_action act, enum autorate_reason why)
{
	a->last_action = (uint8_t)act;
	a->last_why = (uint8_t)why;
	a->why[why]++;
	if (act == AUTORATE_UP)
		a->ups++;
	else if (act == AUTORATE_DOWN)
		a->downs++;
}

/* Idle: a step of decay_pct towards the base rate. */
static enum autorate_action
decay(struct autorate *a)
{
	uint64_t b = a->p.base_rate, step = a->rate * a->p.decay_pct / 100;

	if (step == 0)
		step = 1;
	if (a->rate == b)
		return AUTORATE_HOLD;
	if (a->rate > b)
		a->rate = a->rate - b > step ? a->rate - step : b;
	else
		a->rate = b - a->rate > step ? a->rate + step : b;
	return a->rate > b ? AUTORATE_DOWN : AUTORATE_UP;
}

/*
 * A floor under every cut: a direction that carries only the other's ACKs
 * is not cut below acks_floor_pct of what it carries. Its rate is all the
 * room those ACKs have; cut to a quarter of its modem under churn, it
 * queued them in the shaper and slowed the downloads they clock.
 */
static uint64_t
acks_floor(const struct autorate *a, uint64_t rate)
{
	uint64_t floor = a->load_rate * a->p.acks_floor_pct / 100;

	if (!a->acks_only || a->p.acks_floor_pct == 0 || rate >= floor)
		return rate;
	return clamp_rate(a, floor < a->rate ? floor : a->rate);
}

/*
 * Cut for a rise of own (ns): 10 % at the threshold to 30 % at three times
 * it, or more if the queue would take longer than drain_ns to drain at the
 * line's rate; between cut_min_pct and cut_max_pct, from through.
 */
static enum autorate_action
cut_as(struct autorate *a, const struct ar_iv *iv, uint64_t through)
{
	uint64_t now = iv->now, own = iv->own, bloat = iv->bloat, over = less(own, bloat);
	double lo = a->p.cut_min_pct / 100.0, hi = a->p.cut_max_pct / 100.0;
	double cut = lo + 0.20 * (over >= 2 * bloat ? 1.0 : (double)over / (double)(2 * bloat));
	double drain = (double)own / (double)a->p.drain_ns;

	if (drain > cut)
		cut = drain;
	if (cut > hi)
		cut = hi;
	/*
	 * A new series starts from the rate now, or from the last series' if
	 * that ended under SERIES_CARRY_NS ago and was higher: right after a
	 * cut at a path step the flows' segments are spaced wider and their
	 * echoes can read the step short for some hundreds of ms (a 25 ms step
	 * read 6-7 ms for 400 ms on the bed), which ends the series; a path
	 * decision in the next one would otherwise restore only the rate the
	 * first had already cut to.
	 */
	if (a->series.start_rate == 0) {
		a->series.start_line = a->series.bloat_rate;
		a->series.start_rate = a->rate;
		if (a->series.prev_start > a->rate && now - a->series.end_ns < SERIES_CARRY_NS)
			a->series.start_rate = a->series.prev_start;
		if (a->series.start_rate > a->series.regain_to)
			a->series.regain_to = a->series.start_rate;
	}
	a->series.regain_n = 0;
	a->series.bloat_rate = through;
	a->rate = acks_floor(a, clamp_rate(a, (uint64_t)((double)through * (1.0 - cut))));
	a->series.last_down_ns = a->series.last_cut_ns = now;
	a->series.cut_delay_ns = own;
	a->series.jitter_from_ns = 0;
	a->series.flat_min_ns = own;
	a->series.flat_delay_ns = UINT64_MAX;
	a->series.flat_checks = 0;
	/* Sized from a doubted reading: the cut it asked for waits on the next interval. */
	if (iv->doubted != 0 && iv->through != 0) {
		a->series.doubt_line = iv->doubted;
		a->series.doubt_rate =
				clamp_rate(a, (uint64_t)((double)a->rate * (double)iv->doubted /
							 (double)iv->through));
	}
	return AUTORATE_DOWN;
}

static bool
in_refractory(const struct autorate *a, const struct ar_iv *iv)
{
	return a->series.last_down_ns != 0 && iv->now - a->series.last_down_ns < a->p.refractory_ns;
}

static bool
in_series(const struct autorate *a)
{
	return a->series.start_rate != 0;
}

static enum autorate_action
act_hold(struct autorate *a, const struct ar_iv *iv)
{
	(void)a;
	(void)iv;
	return AUTORATE_HOLD;
}

static enum autorate_action
act_decay(struct autorate *a, const struct ar_iv *iv)
{
	(void)iv;
	return decay(a);
}

static enum autorate_action
act_cut_bloat(struct autorate *a, const struct ar_iv *iv)
{
	return cut_as(a, iv, iv->through);
}

static bool
when_decay_without_samples(const struct autorate *a, const struct ar_iv *iv)
{
	(void)iv;
	return a->p.decay_without_samples;
}

/*
 * Downstream without one-way figures, cut first as the one probing
 * (not_bottleneck): the rise outlasted the cut, so that the other was cut
 * a refractory period or more after it (a cut: its hold while its own
 * queue drains says nothing of ours), and what arrives followed our rate
 * down. No queue in the modem drains into us at its rate, so the rise was
 * never this direction's: the cut is undone, back to the rate the series
 * started from. Not to what got through when it was made: that was TCP
 * held back by the other's queue, and a download put back there after each
 * of the upload's probes held 0.6 of a halved modem on the bed. A modem's
 * own queue would keep arrivals at its rate, above ours, until it drained;
 * "followed" allows near_hi_pct of it. Its line goes back too, to the one
 * before the series if that was higher: what got through at a cut that was
 * not ours is what TCP carried then, not the line, and a line left that
 * low makes this direction look at its line, and probing, when it carries
 * no more than that (not_bottleneck), so that the other's next rise cuts
 * it again.
 */
static bool
when_undo_cut(const struct autorate *a, const struct ar_iv *iv)
{
	(void)iv;
	return a->p.after_modem && a->path.owd_last_ns == UINT64_MAX && a->p.line_pct != 0 &&
	       a->series.start_rate != 0 && a->series.last_cut_ns != 0 &&
	       a->other.cut_ns >= a->series.last_cut_ns + a->p.refractory_ns &&
	       a->arrived_rate * 100 <= a->rate * a->p.near_hi_pct;
}

static enum autorate_action
act_undo_cut(struct autorate *a, const struct ar_iv *iv)
{
	(void)iv;
	a->rate = clamp_rate(a, a->series.start_rate);
	if (a->series.start_line > a->series.bloat_rate)
		a->series.bloat_rate = a->series.start_line;
	a->series.start_rate = 0;
	a->series.flat_checks = 0;
	return AUTORATE_UP;
}

static bool
when_other_queue(const struct autorate *a, const struct ar_iv *iv)
{
	(void)a;
	return iv->theirs;
}

static bool
when_other_share(const struct autorate *a, const struct ar_iv *iv)
{
	(void)a;
	return iv->own < iv->bloat / 2;
}

static bool again(const struct autorate *a, const struct ar_iv *iv);
static bool when_cut_rising_fast(const struct autorate *a, const struct ar_iv *iv);
static bool when_modem_draining(const struct autorate *a, const struct ar_iv *iv);

/*
 * In a series of cuts, the check a refractory period on that cuts nothing:
 * jitter, a drain, a flat rise, or the path decision that puts the rate
 * back (the rules after other_acks that would cut are the ones left out).
 */
static bool
series_check_holds(const struct autorate *a, const struct ar_iv *iv)
{
	return in_series(a) && !in_refractory(a, iv) && !iv->confirmed && !again(a, iv) &&
	       !when_cut_rising_fast(a, iv) && !when_modem_draining(a, iv);
}

/*
 * A direction that carries only the other's ACKs (next to nothing, or far
 * less of its rate than the other of its own, and far fewer bytes) is cut
 * only on a one-way figure that puts a large rise in it: the split of a
 * small one is too uncertain to starve the ACKs. The bytes matter: a line
 * that fell far below the rate carries a small share of it, and is no less
 * the bottleneck (with nothing known of the other direction, the share
 * alone).
 *
 * Its own series of cuts still gets the checks that cut nothing: those
 * cuts are what left it carrying so few bytes. Held here instead, a
 * 10 Mbit/s upload beside a 100 Mbit/s download, cut twice for a path
 * step, never took the step as the path's and stayed at 0.44 of its modem
 * to the step's end; a stall that read its line at half did the same to a
 * 20 Mbit/s one. A check that would cut again is held, and the next one is
 * a refractory period on against the rise it held for (as after a cut):
 * against the rise of the cut before, a step read short at first rose at
 * every check, and was never flat.
 */
static bool
when_other_acks(const struct autorate *a, const struct ar_iv *iv)
{
	bool few = a->p.lesser_ratio != 0 &&
		   (uint64_t)a->load_pct * a->p.lesser_ratio < a->other.load_pct;
	bool fewer_bytes = a->p.lesser_ratio == 0 || a->other.load_rate == 0 ||
			   a->load_rate * a->p.lesser_ratio < a->other.load_rate;
	bool lesser = ((iv->idle || few) && fewer_bytes) || a->acks_only;

	return lesser &&
	       (a->path.owd_last_ns == UINT64_MAX || iv->own < a->p.lesser_ratio * iv->bloat) &&
	       !series_check_holds(a, iv);
}

static enum autorate_action
act_other_acks(struct autorate *a, const struct ar_iv *iv)
{
	if (in_series(a) && !in_refractory(a, iv)) {
		a->series.last_down_ns = iv->now;
		a->series.jitter_from_ns = 0;
		a->series.cut_delay_ns = iv->own;
		a->series.flat_checks = 0;
	}
	return AUTORATE_HOLD;
}

static bool
when_cut_confirmed(const struct autorate *a, const struct ar_iv *iv)
{
	(void)a;
	return iv->confirmed;
}

/* The cut a doubted reading asked for, confirmed by this interval: see line_carried. */
static enum autorate_action
act_cut_confirmed(struct autorate *a, const struct ar_iv *iv)
{
	if (iv->low < a->rate)
		a->rate = acks_floor(a, iv->low);
	a->series.regain_n = 0;
	a->series.bloat_rate = a->series.doubt_line;
	a->series.last_down_ns = a->series.last_cut_ns = iv->now;
	return AUTORATE_DOWN;
}

/*
 * Upstream, within a refractory period but an interval or more after a
 * cut, a rise still growing at growth_pct or faster: the cut, sized from
 * what was sent, left the rate far over a line that fell far (a tenth: the
 * modem's queue grew 300 ms while the period ran out). Cut again at once,
 * sized from the line the growth implies. Only with one-way figures, which
 * put the rise in this direction: without them it may be the download's
 * queue, growing as that line fell (the upload cut to a quarter of its
 * modem in the simulator). Downstream cuts are sized from what arrives,
 * the modem's own rate: not needed.
 */
static bool
when_cut_growing(const struct autorate *a, const struct ar_iv *iv)
{
	uint64_t now = iv->now, own = iv->own, dt = now - a->series.last_down_ns;

	return in_refractory(a, iv) &&
	       !(a->p.after_modem || a->path.owd_last_ns == UINT64_MAX || a->p.growth_pct == 0 ||
		 a->series.start_rate == 0 || a->series.last_cut_ns == 0 ||
		 now - a->series.last_cut_ns < a->p.interval_ns ||
		 own <= a->series.cut_delay_ns + a->p.path_flat_ns ||
		 (own - a->series.cut_delay_ns) * 100 < dt * a->p.growth_pct);
}

static enum autorate_action
act_cut_growing(struct autorate *a, const struct ar_iv *iv)
{
	uint64_t dt = iv->now - a->series.last_down_ns;
	double g = (double)(iv->own - a->series.cut_delay_ns) / (double)dt;

	return cut_as(a, iv, (uint64_t)((double)iv->through / (1.0 + g)));
}

static bool
when_refractory(const struct autorate *a, const struct ar_iv *iv)
{
	return in_refractory(a, iv);
}

/*
 * Bloat after a cut and its refractory period, in a series of cuts, is
 * judged against the rise the last cut answered (since_cut). Rising: cut
 * again. Falling (this interval and the last, own_pair the higher of the
 * two): the queue drains, wait. Flat for path_checks periods and not too
 * large: the path's, not a queue: take it into the baseline, undo the cuts.
 *
 * Upstream, rising fast since the last cut (a line that fell far): what we
 * send fills the modem faster than it drains. Its queue's delay grows by
 * (sent - line) / line a second, so the line is sent / (1 + growth): below
 * what we send, which is all a cut is otherwise sized from (downstream,
 * what arrives is the modem's rate). Slower growth (a probe over the line)
 * is cut as every bloat is.
 */
static bool
when_cut_rising_fast(const struct autorate *a, const struct ar_iv *iv)
{
	return in_series(a) && iv->rising && !a->p.after_modem && a->p.growth_pct != 0 &&
	       iv->now > a->series.last_down_ns &&
	       (iv->own - iv->hi) * 100 >= (iv->now - a->series.last_down_ns) * a->p.growth_pct;
}

static enum autorate_action
act_cut_rising_fast(struct autorate *a, const struct ar_iv *iv)
{
	double g = (double)(iv->own - iv->hi) / (double)(iv->now - a->series.last_down_ns);

	/* "near" from that line too: what was sent was over it. */
	return cut_as(a, iv, (uint64_t)((double)iv->through / (1.0 + g)));
}

/*
 * Rising (not jitter), or too large for a path's and not falling: cut
 * again. A rise falling since the last check is a queue draining, however
 * large: cut again (it is too large for a path's), the upload cut from
 * what it sent then, below its line, and took that as the line: its raises
 * went on at full step past the real one.
 */
static bool
again(const struct autorate *a, const struct ar_iv *iv)
{
	return in_series(a) &&
	       ((iv->rising && !iv->jitter) || (iv->own > a->p.path_max_ns && !iv->falling) ||
		a->p.path_checks == 0);
}

/*
 * Downstream without one-way figures, what arrives after the series' first
 * cut (sized from the modem's rate) far under our rate: the modem has no
 * queue draining into us, unless its line fell again. More often the flows
 * are paced by their ACKs, waiting in the upload's queue, which the rise
 * may be all of (both lines halved: arrivals at 0.4 of the new line on the
 * bed). Cut from our rate and keep the line the first cut measured: a
 * second fall is followed within another refractory period, and a cut that
 * was not ours costs a tenth to a third of the rate instead of TCP's whole
 * shortfall, and leaves no line so low that the download, refilling, looks
 * like the one probing at the upload's next probe (not_bottleneck).
 */
static bool
when_cut_from_rate(const struct autorate *a, const struct ar_iv *iv)
{
	return again(a, iv) && a->p.after_modem && a->path.owd_last_ns == UINT64_MAX &&
	       iv->through * 100 < a->rate * a->p.near_lo_pct;
}

static enum autorate_action
act_cut_from_rate(struct autorate *a, const struct ar_iv *iv)
{
	uint64_t line = a->series.bloat_rate;

	cut_as(a, iv, a->rate);
	a->series.bloat_rate = line;
	return AUTORATE_DOWN;
}

static bool
when_jitter(const struct autorate *a, const struct ar_iv *iv)
{
	return in_series(a) && iv->jitter;
}

static bool
when_draining(const struct autorate *a, const struct ar_iv *iv)
{
	return in_series(a) && iv->falling;
}

/* Jitter or a drain: wait a refractory period, the flat checks kept only for jitter. */
static enum autorate_action
wait_drain(struct autorate *a, const struct ar_iv *iv, bool jitter)
{
	a->series.last_down_ns = iv->now; /* the next check one refractory period on */
	a->series.jitter_from_ns = jitter ? a->series.cut_delay_ns : 0;
	a->series.cut_delay_ns = iv->rising ? iv->own : iv->own_pair;
	if (!jitter)
		a->series.flat_checks = 0;
	return AUTORATE_HOLD;
}

static enum autorate_action
act_jitter(struct autorate *a, const struct ar_iv *iv)
{
	return wait_drain(a, iv, true);
}

static enum autorate_action
act_draining(struct autorate *a, const struct ar_iv *iv)
{
	return wait_drain(a, iv, false);
}

/* A flat check: one more, at whichever of the two levels it is nearer after jitter. */
static void
flat_check(struct autorate *a, const struct ar_iv *iv)
{
	uint64_t own = iv->own, ref = a->series.cut_delay_ns, alt = a->series.jitter_from_ns;

	a->series.last_down_ns = iv->now;
	a->series.jitter_from_ns = 0;
	if (alt != 0 && (own > alt ? own - alt : alt - own) < (own > ref ? own - ref : ref - own))
		a->series.cut_delay_ns = alt;
	a->series.flat_checks++;
}

static bool
when_flat(const struct autorate *a, const struct ar_iv *iv)
{
	(void)iv;
	return in_series(a) && a->series.flat_checks + 1 < a->p.path_checks;
}

static enum autorate_action
act_flat(struct autorate *a, const struct ar_iv *iv)
{
	flat_check(a, iv);
	return AUTORATE_HOLD;
}

/*
 * Downstream, a longer path leaves us the bottleneck after the cut: what
 * arrives follows our rate down. A line still carrying near the rate at
 * which it bloated (near_low of it) is the modem draining its own queue
 * into us at its rate (short flows' slow-start bursts keep one standing
 * whatever we send): a queue, not the path. Cut again, from our rate.
 */
static bool
when_modem_draining(const struct autorate *a, const struct ar_iv *iv)
{
	(void)iv;
	return in_series(a) && a->p.after_modem &&
	       a->arrived_rate * 100 >= a->series.bloat_rate * a->p.near_lo_pct;
}

static enum autorate_action
act_modem_draining(struct autorate *a, const struct ar_iv *iv)
{
	flat_check(a, iv);
	return cut_as(a, iv, a->rate);
}

static bool
when_path(const struct autorate *a, const struct ar_iv *iv)
{
	(void)iv;
	return in_series(a);
}

static enum autorate_action
act_path(struct autorate *a, const struct ar_iv *iv)
{
	flat_check(a, iv);
	a->path.ns += a->series.flat_delay_ns;
	if (a->p.after_modem && a->path.owd_last_ns != UINT64_MAX)
		a->path.own_ns += a->series.flat_min_ns;
	a->rate = clamp_rate(a, a->series.start_rate);
	a->series.start_rate = 0;
	a->series.flat_checks = 0;
	/*
	 * The standing run after this may be the rest of the step, if the rise
	 * is judged on RTT samples (downstream with one-way figures it is not).
	 */
	if (!a->p.after_modem || a->path.owd_last_ns == UINT64_MAX)
		a->path.settle_min_ns = 0;
	return AUTORATE_UP;
}

/*
 * Regain: past the near band of the last bloat, clear: the line has grown
 * since. Two steps at up_fast_pct (a probe over a line that did not move
 * bloats within them), then each clear interval doubles the step up to
 * regain_pct, no higher than the rate the fall's cuts started from. At 5 %
 * an interval a download took 5 s back from a tenth.
 */
static bool
when_regain(const struct autorate *a, const struct ar_iv *iv)
{
	bool past = a->series.bloat_rate != 0 &&
		    a->rate * 100 >= a->series.bloat_rate * a->p.near_hi_pct;

	(void)iv;
	return past && a->series.regain_to > a->rate && a->p.regain_pct != 0;
}

static enum autorate_action
act_regain(struct autorate *a, const struct ar_iv *iv)
{
	uint64_t pct = a->p.up_fast_pct, up;

	a->series.regain_n = iv->regain_n + 1;
	for (uint32_t i = 2; i < a->series.regain_n && pct < a->p.regain_pct; i++)
		pct *= 2;
	if (pct > a->p.regain_pct)
		pct = a->p.regain_pct;
	if (pct < a->p.up_fast_pct)
		pct = a->p.up_fast_pct;
	up = a->rate + a->rate * pct / 100;
	a->rate = clamp_rate(a, up < a->series.regain_to ? up : a->series.regain_to);
	return AUTORATE_UP;
}

static enum autorate_action
act_raise(struct autorate *a, const struct ar_iv *iv)
{
	bool near = a->series.bloat_rate != 0 &&
		    a->rate * 100 >= a->series.bloat_rate * a->p.near_lo_pct &&
		    a->rate * 100 < a->series.bloat_rate * a->p.near_hi_pct;
	uint64_t step = a->rate * (near ? a->p.up_slow_pct : a->p.up_fast_pct) / 100;

	(void)iv;
	a->rate = clamp_rate(a, a->rate + (step != 0 ? step : 1));
	return AUTORATE_UP;
}

static bool
when_other_standing(const struct autorate *a, const struct ar_iv *iv)
{
	return iv->theirs || (a->acks_only && a->path.owd_last_ns == UINT64_MAX);
}

/* One more interval of a standing run, and its lowest rise while settling. */
static void
count_mid(struct autorate *a, const struct ar_iv *iv)
{
	a->series.mid_intervals = iv->mid + 1;
	if (a->path.settle_min_ns != UINT64_MAX &&
	    (a->path.settle_min_ns == 0 || iv->delay < a->path.settle_min_ns))
		a->path.settle_min_ns = iv->delay;
}

/*
 * A standing run long enough, and loaded: only a rate that is being used
 * tells the line's. A direction refilling its rate (TCP after a cut) sends
 * less than it, and cutting to that would cut for TCP's pace.
 */
static bool
standing(const struct autorate *a, const struct ar_iv *iv)
{
	return a->p.standing_intervals != 0 && iv->mid + 1 >= a->p.standing_intervals && iv->loaded;
}

/*
 * The first standing run after a path decision, at the rate restored: the
 * rest of the step. The flat rise the decision took was read at the cut
 * rate, where a flow's segments are spaced wider, and an echo not held for
 * the next one reads that much lower (rtt_sample.gap_us). Below bloat, so
 * bounded.
 */
static bool
when_path_rest(const struct autorate *a, const struct ar_iv *iv)
{
	return standing(a, iv) && a->path.settle_min_ns != UINT64_MAX;
}

static enum autorate_action
act_path_rest(struct autorate *a, const struct ar_iv *iv)
{
	count_mid(a, iv);
	a->series.mid_intervals = 0;
	a->path.ns += a->path.settle_min_ns;
	a->path.settle_min_ns = UINT64_MAX;
	return AUTORATE_HOLD;
}

static bool
when_cut_standing(const struct autorate *a, const struct ar_iv *iv)
{
	return standing(a, iv) && (a->series.last_down_ns == 0 ||
				   iv->now - a->series.last_down_ns >= a->p.refractory_ns);
}

static enum autorate_action
act_cut_standing(struct autorate *a, const struct ar_iv *iv)
{
	count_mid(a, iv);
	a->series.mid_intervals = 0;
	a->series.bloat_rate = iv->through;
	a->rate = acks_floor(a, clamp_rate(a, iv->through * (100 - a->p.standing_cut_pct) / 100));
	a->series.last_down_ns = a->series.last_cut_ns = iv->now;
	return AUTORATE_DOWN;
}

static enum autorate_action
act_hold_mid(struct autorate *a, const struct ar_iv *iv)
{
	count_mid(a, iv);
	return AUTORATE_HOLD;
}

struct ar_rule {
	const char *name;   /* as the decision log prints it */
	const char *reason; /* what it saw and did, in a line (the decision log's) */
	unsigned int bands; /* enum band: the intervals it judges */
	bool early; /* judged before the band's bookkeeping (enter_band), which ends a series */
	enum autorate_reason why; /* counted under, in stats */
	bool (*when)(const struct autorate *a, const struct ar_iv *iv); /* NULL: always */
	enum autorate_action (*act)(struct autorate *a, const struct ar_iv *iv);
};

#define RULE(id, nm, b, w, cond, action, text)                                                     \
	[id] = { .name = nm, .reason = text, .bands = b, .why = w, .when = cond, .act = action }
#define RULE_EARLY(id, nm, b, w, cond, action, text)                                               \
	[id] = { .name = nm,                                                                       \
		 .reason = text,                                                                   \
		 .bands = b,                                                                       \
		 .early = true,                                                                    \
		 .why = w,                                                                         \
		 .when = cond,                                                                     \
		 .act = action }

/* The policy. Each band's last rule has no condition: every interval is judged. */
static const struct ar_rule rules[R_N] = {
	RULE(R_NO_SAMPLES_DECAY, "no_samples_decay", B_NONE, AR_WHY_DECAY,
	     when_decay_without_samples, act_decay,
	     "no TCP sample this interval: towards base, as configured"),
	RULE(R_NO_SAMPLES, "no_samples", B_NONE, AR_WHY_NO_SAMPLES, NULL, act_hold,
	     "no TCP sample this interval: held"),
	RULE_EARLY(R_UNDO_CUT, "undo_cut", B_SAMPLES, AR_WHY_OTHER_DIR, when_undo_cut, act_undo_cut,
		   "the other cut a refractory period after ours, what arrives followed our rate: "
		   "the rise was its queue, our cut undone"),
	RULE(R_OTHER_QUEUE, "other_queue", B_BLOAT, AR_WHY_OTHER_DIR, when_other_queue, act_hold,
	     "bloat, but this direction is evidently not the bottleneck: the other's queue, held"),
	RULE(R_OTHER_SHARE, "other_share", B_BLOAT, AR_WHY_OTHER_DIR, when_other_share, act_hold,
	     "bloat, but this direction's share of the rise is under half of it: held"),
	RULE(R_OTHER_ACKS, "other_acks", B_BLOAT, AR_WHY_OTHER_DIR, when_other_acks, act_other_acks,
	     "bloat, but this direction carries only the other's ACKs: held"),
	RULE(R_CUT_CONFIRMED, "cut_confirmed", B_BLOAT, AR_WHY_CUT_BLOAT, when_cut_confirmed,
	     act_cut_confirmed,
	     "the rise still grew after a cut read from part of an interval: the cut it asked for"),
	RULE(R_CUT_GROWING, "cut_growing", B_BLOAT, AR_WHY_CUT_GROWING, when_cut_growing,
	     act_cut_growing, "the rise still grew fast after the last cut: cut again at once"),
	RULE(R_REFRACTORY, "refractory", B_BLOAT, AR_WHY_REFRACTORY, when_refractory, act_hold,
	     "bloat within the refractory period of the last cut: held"),
	RULE(R_CUT_RISING_FAST, "cut_rising_fast", B_BLOAT, AR_WHY_CUT_BLOAT, when_cut_rising_fast,
	     act_cut_rising_fast,
	     "the rise grew fast since the last cut: cut from the line the growth implies"),
	RULE(R_CUT_FROM_RATE, "cut_from_rate", B_BLOAT, AR_WHY_CUT_BLOAT, when_cut_from_rate,
	     act_cut_from_rate,
	     "bloat again, what arrives far under our rate: cut from our rate, the line kept"),
	RULE(R_CUT_AGAIN, "cut_again", B_BLOAT, AR_WHY_CUT_BLOAT, again, act_cut_bloat,
	     "the rise grew since the last cut, or is too large for a path's: cut again"),
	RULE(R_JITTER, "jitter", B_BLOAT, AR_WHY_DRAINING, when_jitter, act_jitter,
	     "the rise moved a few ms since the last cut: held, the next check against both"),
	RULE(R_DRAINING, "draining", B_BLOAT, AR_WHY_DRAINING, when_draining, act_draining,
	     "the rise fell since the last cut: held while the queue drains"),
	RULE(R_FLAT, "flat", B_BLOAT, AR_WHY_DRAINING, when_flat, act_flat,
	     "the rise stayed flat since the last cut: held for another check"),
	RULE(R_MODEM_DRAINING, "modem_draining", B_BLOAT, AR_WHY_CUT_BLOAT, when_modem_draining,
	     act_modem_draining,
	     "flat, but what arrives is near the line: the modem's queue, cut from our rate"),
	RULE(R_PATH, "path", B_BLOAT, AR_WHY_PATH, when_path, act_path,
	     "a rise stayed flat after cuts: the path's, the rate restored"),
	RULE(R_CUT_BLOAT, "cut_bloat", B_BLOAT, AR_WHY_CUT_BLOAT, NULL, act_cut_bloat,
	     "the rise reached bloat: cut below what the line carried"),
	RULE(R_REGAIN, "regain", B_CLEAR, AR_WHY_REGAIN, when_regain, act_regain,
	     "clear past the last bloat's rate: the line came back, raised faster"),
	RULE(R_RAISE, "raise", B_CLEAR, AR_WHY_RAISE, NULL, act_raise,
	     "clear and loaded: raised (slowly near the last bloat's rate)"),
	RULE(R_OTHER_STANDING, "other_standing", B_MID, AR_WHY_OTHER_DIR, when_other_standing,
	     act_hold, "a rise between clear and bloat in the other's queue: held"),
	RULE(R_PATH_REST, "path_rest", B_MID, AR_WHY_PATH, when_path_rest, act_path_rest,
	     "a rise stood after a path decision: the rest of the step, taken as the path's"),
	RULE(R_CUT_STANDING, "cut_standing", B_MID, AR_WHY_CUT_STANDING, when_cut_standing,
	     act_cut_standing, "a rise stood between clear and bloat: a small cut to drain it"),
	RULE(R_HOLD, "hold", B_MID, AR_WHY_HOLD, NULL, act_hold_mid,
	     "a rise between clear and bloat: held"),
	RULE(R_DECAY, "decay", B_QUIET, AR_WHY_DECAY, NULL, act_decay,
	     "clear but not loaded, or idle: towards base"),
};

const char *
autorate_rule_name(unsigned int rule)
{
	return rules[rule < R_N ? rule : R_HOLD].name;
}

const char *
autorate_rule_text(unsigned int rule)
{
	return rules[rule < R_N ? rule : R_HOLD].reason;
}

unsigned int
autorate_rule_count(void)
{
	return R_N;
}

/* The band's bookkeeping, before its rules act. */
static void
enter_band(struct autorate *a, const struct ar_iv *iv)
{
	if (iv->band == B_BLOAT) {
		a->series.below_prev = false;
		return;
	}
	if (iv->band == B_NONE)
		return;
	/*
	 * Below the threshold twice in a row: the series of cuts, if any, is
	 * over. Once is not enough: one interval read low in the middle of a
	 * flat rise would start a new series from the rate already cut, and a
	 * path decision would then restore only that. Its starting rate is
	 * kept for a series that begins soon after (cut_as).
	 */
	if (a->series.below_prev && a->series.start_rate != 0) {
		a->series.prev_start = a->series.start_rate;
		a->series.end_ns = iv->now;
		a->series.start_rate = 0;
		a->series.flat_checks = 0;
	}
	a->series.below_prev = true;
	if (iv->band == B_CLEAR && a->series.regain_to <= a->rate)
		a->series.regain_to = 0;
}

/* The first rule of the interval's band whose condition holds decides. */
static void
judge(struct autorate *a, const struct ar_iv *iv)
{
	const struct ar_rule *r = rules;

	while (!(r->bands & iv->band) || (r->when != NULL && !r->when(a, iv)))
		r++;
	if (!r->early)
		enter_band(a, iv);
	decide(a, r->act(a, iv), r->why);
	a->last_rule = (uint8_t)(r - rules);
}

/*
 * Without one-way figures every sample's rise holds both modems' queues.
 * Is this direction evidently not the bottleneck, so that the rise is the
 * other's? "At its line": carrying at least line_pct of what got through
 * at its last cut; the other's counts only while it is loaded (not just
 * this one's ACKs) and can still be cut. A direction never cut has no
 * line, and none of this holds it back.
 *  - Below its line (its TCP refilling the rate after a cut, or held below
 *    it) while the other is at its own: cutting this one again would not
 *    drain the other's queue.
 *  - Within a refractory period of the other's cut, made since this one's
 *    last: the rise may be that queue draining (the samples arrive a round
 *    trip late); this one is cut only if the rise outlasts it.
 *  - Both at their lines: the one carrying the more over its line (what
 *    it carries, up to its rate: the one probing) is cut first, alike the
 *    one carrying fewer bytes (the cheaper cut). By its rate alone, a
 *    download raised far over what its TCP filled (refilling after a cut,
 *    its ACKs slowed by the upload's queue) was taken for the one probing
 *    at every probe of the upload; a queue grows only by what is carried.
 *    The other waits a refractory period from the rise's first interval
 *    at bloat, and is cut if the rise outlasts that (a downstream cut
 *    first then takes its cut back if what arrives followed its rate
 *    down: see autorate_tick).
 * A line that falls takes what a direction carries below its line, and the
 * other's too if it fell (or neither has a line yet): both are then cut.
 */
/* What a direction carries, up to its rate, over its line. */
static double
over_line(uint64_t carried, uint64_t rate, uint64_t line)
{
	return (double)(carried < rate ? carried : rate) / (double)line;
}

static bool
not_bottleneck(const struct autorate *a, uint64_t now)
{
	uint64_t lp = a->p.line_pct, refr = a->p.refractory_ns;
	double mine, other;
	bool other_at_line;

	if (a->path.owd_last_ns != UINT64_MAX || lp == 0 || a->series.bloat_rate == 0)
		return false;
	other_at_line = a->other.line_rate != 0 && !a->other.at_min &&
			a->other.load_pct >= a->p.loaded_pct &&
			a->other.load_rate * 100 >= lp * a->other.line_rate;
	if (a->load_rate * 100 < lp * a->series.bloat_rate)
		return other_at_line;
	if (a->other.down_ns != 0 && now - a->other.down_ns < refr &&
	    a->series.last_down_ns < a->other.down_ns)
		return true;
	if (!other_at_line || a->series.bloat_since == 0 || now - a->series.bloat_since >= refr)
		return false;
	/* Which carries further over its line; alike, the one carrying fewer bytes. */
	mine = over_line(a->load_rate, a->rate, a->series.bloat_rate);
	other = a->other.rate != 0
				? over_line(a->other.load_rate, a->other.rate, a->other.line_rate)
				: 0;
	return mine < other || (mine == other && a->load_rate > a->other.load_rate);
}

/*
 * Close the interval at now, if it is over, into iv (false: it runs on).
 *
 * Its length is the time the shaper ran: time it wrote off (lost_ns, its
 * worker away while packets waited, as stolen time does it) is no time
 * the line was watched. What we sent, we sent only while we ran: a cut
 * sized from it over the whole interval took a 50 ms stall for a line at
 * half its rate. What arrived waited in the port's ring meanwhile and was
 * counted after: over the whole interval. And the interval runs on until
 * it has run its length: an interval that was most of it a stall would
 * end, early, on the samples the stall held back, every one of them late
 * by up to its length.
 */
static bool
close_interval(struct autorate *a, struct ar_iv *iv, uint64_t now, uint64_t sent_bytes,
	       uint64_t arrived_bytes, uint64_t lost_ns)
{
	uint64_t wall, off, ran;

	if (!a->in.started) {
		a->in.started = true;
		a->in.start = now;
		a->in.sent = sent_bytes;
		a->in.arrived = arrived_bytes;
		a->in.lost = lost_ns;
		return false;
	}
	wall = now - a->in.start;
	off = lost_ns > a->in.lost ? lost_ns - a->in.lost : 0; /* went back: statistics reset */
	ran = wall - (off < wall ? off : wall);
	/*
	 * An interval ends early when its first early_samples samples, half
	 * of it on, all show bloat: a queue growing at TCP's additive increase
	 * gains 25 ms in 100 ms on a 10 Mbit/s line.
	 */
	if (ran < a->p.interval_ns &&
	    (a->p.early_samples == 0 || a->in.nsamples < a->p.early_samples ||
	     ran < a->p.interval_ns / 2 ||
	     less(a->in.delay_min, a->path.ns) < autorate_threshold(a, a->p.bloat_ns)))
		return false;
	if (ran == 0)
		ran = 1;
	*iv = (struct ar_iv){ .now = now,
			      .dt = ran,
			      .old = a->rate,
			      .n = a->in.nsamples,
			      .below = a->in.nbelow,
			      .regain_n = a->series.regain_n,
			      .low = a->series.doubt_rate,
			      .last_sent = a->delivered_rate,
			      .raw = a->in.delay_min };
	a->delivered_rate = (uint64_t)((double)(sent_bytes - a->in.sent) * 1e9 / (double)ran);
	a->arrived_rate = (uint64_t)((double)(arrived_bytes - a->in.arrived) * 1e9 / (double)wall);
	a->in.start = now;
	a->in.sent = sent_bytes;
	a->in.arrived = arrived_bytes;
	a->in.lost = lost_ns;
	a->in.delay_min = UINT64_MAX;
	a->in.nsamples = a->in.nbelow = 0;
	a->last_samples = iv->n;
	if (a->p.after_modem) {
		if (a->in.owd_n != 0) {
			a->path.owd_last_ns = a->in.owd_min;
			a->path.owd_last_at = now;
			a->path.owd_recent[a->path.owd_recent_i++ % a->p.owd_recent] =
					a->in.owd_min;
		} else if (a->path.owd_last_ns != UINT64_MAX &&
			   now - a->path.owd_last_at > a->p.owd_stale_ns) {
			a->path.owd_last_ns = UINT64_MAX; /* stale: decide on the RTT alone */
			for (unsigned int i = 0; i < AR_OWD_RECENT_MAX; i++)
				a->path.owd_recent[i] = UINT64_MAX;
		}
	}
	a->in.owd_min = UINT64_MAX;
	a->in.owd_n = 0;
	a->series.doubt_rate = 0;
	a->series.regain_n = 0; /* a clear raise past the band counts on (regain) */
	iv->loaded = a->delivered_rate * 100 >= (uint64_t)a->p.loaded_pct * a->rate;
	a->load_rate = a->delivered_rate > a->arrived_rate ? a->delivered_rate : a->arrived_rate;
	a->load_pct = (uint32_t)(a->load_rate * 100 / (a->rate != 0 ? a->rate : 1));
	iv->idle = a->delivered_rate * 100 < (uint64_t)a->p.idle_pct * a->rate &&
		   a->arrived_rate * 100 < (uint64_t)a->p.idle_pct * a->rate;
	return true;
}

/* The bloat and clear thresholds the interval is judged by, and the run at bloat. */
static void
thresholds(struct autorate *a, struct ar_iv *iv)
{
	iv->bloat = autorate_threshold(a, a->p.bloat_ns);
	iv->clear = autorate_threshold(a, a->p.clear_ns);
	if (a->path.owd_last_ns == UINT64_MAX && a->p.line_pct != 0 && a->other.rate != 0) {
		/*
		 * Without one-way figures both directions judge the same rise:
		 * against the same bloat threshold, the slower line's frame time
		 * in it, so that neither is cut first for being the faster.
		 */
		uint64_t ft = (uint64_t)a->p.frame_bytes * 1000000000ull / a->other.rate;

		if (a->p.bloat_ns + ft > iv->bloat)
			iv->bloat = a->p.bloat_ns + ft;
	}
	if (iv->delay < iv->bloat)
		a->series.bloat_since = 0;
	else if (a->series.bloat_since == 0)
		a->series.bloat_since = iv->now;
}

/*
 * What the line carries: downstream the modem sits before us, and with a
 * queue in it what arrives is its rate; upstream TCP is clocked by the
 * modem, and what we sent is at most our rate.
 *
 * Upstream, an interval ended early reads what was sent in part of one,
 * which may be TCP's pace, not the line's: flows that just backed off (a
 * loss in the modem's queue) send a fifth of the line for a round trip or
 * two, while the RTT still holds the queue they sent before. A line does
 * not fall to a fifth in 50 ms while the RTT rises 15 ms, and a cut to that
 * is undone only at the raises' pace. So a cut from such a reading (under
 * three quarters of an interval, and under loaded_pct of the last
 * interval's) is sized from the last one's, and the cut the low one asked
 * for is made only when the next interval confirms it (the rise still
 * growing, what was sent still under the rate: a line that fell): then at
 * once, refractory period or not. Downstream what arrives from behind the
 * modem's queue is its rate over any part of an interval.
 */
static void
line_carried(struct autorate *a, struct ar_iv *iv)
{
	if (a->p.after_modem)
		iv->through = a->arrived_rate;
	else
		iv->through = a->delivered_rate < a->rate ? a->delivered_rate : a->rate;
	iv->confirmed = iv->low != 0 && iv->delay >= iv->bloat &&
			iv->own > a->series.cut_delay_ns + a->p.path_flat_ns &&
			iv->through < a->rate;
	if (!a->p.after_modem && !iv->confirmed && iv->dt * 4 < a->p.interval_ns * 3 &&
	    iv->through * 100 < iv->last_sent * a->p.loaded_pct) {
		iv->doubted = iv->through;
		iv->through = iv->last_sent < a->rate ? iv->last_sent : a->rate;
	}
	a->through_rate = iv->through;
}

/*
 * The rise against the one the last cut answered (cut_delay_ns), for the
 * series rules. Jitter: a move of at most twice path_flat_ns at one check,
 * either way, the check before none. A longer path's rise dips or bumps by
 * a few ms and comes back; a queue left to drain after a cut falls further
 * in a refractory period, and goes on falling, and one that grows goes on
 * growing. Taken as a drain, a dip makes the level it comes back to read as
 * a rise, and a step that dips every few checks is cut again and again,
 * never taken as the path's. So jitter is waited on: the flat checks so far
 * are kept (it is not one), and the next check is judged against both
 * levels.
 */
static void
since_cut(const struct autorate *a, struct ar_iv *iv)
{
	uint64_t flat = a->p.path_flat_ns, ref = a->series.cut_delay_ns,
		 alt = a->series.jitter_from_ns;
	uint64_t lo = alt != 0 && alt < ref ? alt : ref;

	iv->hi = alt > ref ? alt : ref;
	iv->rising = iv->own > iv->hi + flat;
	iv->falling = iv->own_pair + flat < lo;
	iv->jitter = alt == 0 && (iv->rising ? iv->own <= ref + 2 * flat
					     : iv->falling && iv->own_pair + 2 * flat >= ref);
}

/* Whose rise, and how much of it: the interval's figures the rules judge. */
static void
attribute(struct autorate *a, struct ar_iv *iv)
{
	bool under;

	if (iv->n == 0) {
		/* No TCP to listen to: nothing is known. */
		a->path.raw_prev = a->series.delay_prev = a->series.own_prev = UINT64_MAX;
		iv->band = B_NONE;
		return;
	}
	/*
	 * The path's part goes as soon as the baselines of the flows carrying
	 * it have it (or the path is back): two intervals in a row with most of
	 * their samples below it. Their lowest alone is one flow's: a flow
	 * whose baseline was set within the step (one begun after it) reads
	 * none of the step while the others still carry all of it, and every
	 * interval it gives no sample in would then read the step as a queue.
	 * One interval is not enough: a sample whose receiver did not hold its
	 * echo for the flow's next segment reads its gap too low
	 * (rtt_sample.gap_us), and one such interval would leave a step's whole
	 * remainder looking like a queue.
	 */
	under = iv->below * 2 > iv->n;
	if (under && a->path.raw_prev < a->path.ns)
		a->path.ns = iv->raw > a->path.raw_prev ? iv->raw : a->path.raw_prev;
	a->path.raw_prev = under ? iv->raw : UINT64_MAX;
	iv->delay = iv->raw > a->path.ns ? iv->raw - a->path.ns : 0;
	iv->own = own_share(a, iv->delay);
	a->last_delay_ns = iv->delay;
	a->last_own_ns = iv->own;
	/*
	 * With the last interval's, the higher: what a fall, a flat rise's
	 * level and the end of a standing run are judged on, so that one
	 * interval read low (an echo not held for the flow's next segment)
	 * is not taken for any of them.
	 */
	iv->delay_pair = with_last(&a->series.delay_prev, iv->delay);
	iv->own_pair = with_last(&a->series.own_prev, iv->own);
	thresholds(a, iv);
	/* Not this one's queue: not cut for it (at bloat, or standing). */
	iv->theirs = not_bottleneck(a, iv->now);
	line_carried(a, iv);
	iv->mid = a->series.mid_intervals;
	a->series.mid_intervals = 0;
	if (iv->own_pair < a->series.flat_min_ns)
		a->series.flat_min_ns = iv->own_pair;
	if (iv->delay_pair < a->series.flat_delay_ns)
		a->series.flat_delay_ns = iv->delay_pair;
	/*
	 * Settling after a path decision ends at the next bloat (cut or not) or
	 * two clear loaded intervals in a row (the step was all taken); a
	 * standing run that breaks starts again.
	 */
	if (iv->delay >= iv->bloat || (iv->own_pair <= iv->clear && iv->loaded))
		a->path.settle_min_ns = UINT64_MAX;
	else if (iv->own <= iv->clear && a->path.settle_min_ns != UINT64_MAX)
		a->path.settle_min_ns = 0;
	/*
	 * Far fewer bytes than the other direction carries (lesser_ratio
	 * squared, 16 by default: TCP's ACKs are about a fortieth of the data
	 * they answer): the other's ACKs and requests, however large a share
	 * of its own rate that is. Judged by the share alone, an ACK direction
	 * cut once looks loaded, and the other's queue cut it again and again
	 * (short downloads, which give no one-way figures: to an eighth of its
	 * modem on the bed).
	 */
	a->acks_only = a->p.lesser_ratio != 0 && a->other.load_rate != 0 &&
		       a->load_rate * a->p.lesser_ratio * a->p.lesser_ratio < a->other.load_rate;
	since_cut(a, iv);
	if (iv->delay >= iv->bloat)
		iv->band = B_BLOAT;
	else if (iv->own <= iv->clear && iv->loaded)
		iv->band = B_CLEAR;
	else if (iv->own > iv->clear && !iv->idle)
		iv->band = B_MID;
	else
		iv->band = B_QUIET;
}

/* An interval is closed, attributed, then judged by the rules. */
bool
autorate_tick(struct autorate *a, uint64_t now, uint64_t sent_bytes, uint64_t arrived_bytes,
	      uint64_t lost_ns)
{
	struct ar_iv iv;

	if (!close_interval(a, &iv, now, sent_bytes, arrived_bytes, lost_ns))
		return false;
	attribute(a, &iv);
	judge(a, &iv);
	return a->rate != iv.old;
}
