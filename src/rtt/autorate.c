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
 * that one's starting rate: see cut_bloat.
 */
#define SERIES_CARRY_NS 1000000000ull

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

static const char *const reason_texts[AR_WHY_N] = {
	[AR_WHY_NO_SAMPLES] = "no TCP sample this interval: held (or decayed, as configured)",
	[AR_WHY_CUT_BLOAT] = "the rise reached bloat: cut below what the line carried",
	[AR_WHY_CUT_STANDING] = "a rise stood between clear and bloat: a small cut to drain it",
	[AR_WHY_RAISE] = "clear and loaded: raised (slowly near the last bloat's rate)",
	[AR_WHY_DECAY] = "clear but not loaded, or idle: towards base",
	[AR_WHY_PATH] = "a rise stayed flat after cuts: the path's, the rate restored",
	[AR_WHY_REFRACTORY] = "bloat within the refractory period of the last cut: held",
	[AR_WHY_DRAINING] = "bloat, but falling (or flat) since the last cut: held while it drains",
	[AR_WHY_OTHER_DIR] = "the rise is the other direction's queue: held, or that cut undone",
	[AR_WHY_HOLD] = "a rise between clear and bloat: held",
	[AR_WHY_REGAIN] = "clear past the last bloat's rate: the line came back, raised faster",
	[AR_WHY_CUT_GROWING] = "the rise still grew fast after the last cut: cut again at once",
};

const char *
autorate_reason_text(unsigned int why)
{
	return why < AR_WHY_N ? reason_texts[why] : reason_texts[AR_WHY_HOLD];
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
static void
decay(struct autorate *a)
{
	uint64_t b = a->p.base_rate, step = a->rate * a->p.decay_pct / 100;

	if (step == 0)
		step = 1;
	if (a->rate == b) {
		decide(a, AUTORATE_HOLD, AR_WHY_DECAY);
		return;
	}
	if (a->rate > b)
		a->rate = a->rate - b > step ? a->rate - step : b;
	else
		a->rate = b - a->rate > step ? a->rate + step : b;
	decide(a, a->rate > b ? AUTORATE_DOWN : AUTORATE_UP, AR_WHY_DECAY);
}

/*
 * Rule acks_floor: a direction that carries only the other's ACKs is not
 * cut below acks_floor_pct of what it carries. Its rate is all the room
 * those ACKs have; cut to a quarter of its modem under churn, it queued
 * them in the shaper and slowed the downloads they clock.
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
static void
cut_as(struct autorate *a, uint64_t now, uint64_t through, uint64_t own, uint64_t bloat,
       enum autorate_reason why)
{
	uint64_t over = less(own, bloat);
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
	decide(a, AUTORATE_DOWN, why);
}

/* Rule cut_bloat: the rise at the bloat threshold, outside a refractory period. */
static void
cut_bloat(struct autorate *a, uint64_t now, uint64_t through, uint64_t own, uint64_t bloat)
{
	cut_as(a, now, through, own, bloat, AR_WHY_CUT_BLOAT);
}

/*
 * Rule cut_growing: upstream, within a refractory period but an interval
 * or more after a cut, a rise still growing at growth_pct or faster: the
 * cut, sized from what was sent, left the rate far over a line that fell
 * far (a tenth: the modem's queue grew 300 ms while the period ran out).
 * Cut again at once, sized from the line the growth implies. Only with
 * one-way figures, which put the rise in this direction: without them it
 * may be the download's queue, growing as that line fell (the upload cut
 * to a quarter of its modem in the simulator). Downstream cuts are sized
 * from what arrives, the modem's own rate: not needed.
 */
static bool
cut_growing(struct autorate *a, uint64_t now, uint64_t through, uint64_t own, uint64_t bloat)
{
	uint64_t dt = now - a->series.last_down_ns;
	double g;

	if (a->p.after_modem || a->path.owd_last_ns == UINT64_MAX || a->p.growth_pct == 0 ||
	    a->series.start_rate == 0 || a->series.last_cut_ns == 0 ||
	    now - a->series.last_cut_ns < a->p.interval_ns ||
	    own <= a->series.cut_delay_ns + a->p.path_flat_ns ||
	    (own - a->series.cut_delay_ns) * 100 < dt * a->p.growth_pct)
		return false;
	g = (double)(own - a->series.cut_delay_ns) / (double)dt;
	cut_as(a, now, (uint64_t)((double)through / (1.0 + g)), own, bloat, AR_WHY_CUT_GROWING);
	return true;
}

/*
 * The cut a reading doubted asked for (rate), confirmed by the next
 * interval: see autorate_tick.
 */
static void
cut_doubted(struct autorate *a, uint64_t now, uint64_t rate)
{
	if (rate < a->rate)
		a->rate = acks_floor(a, rate);
	a->series.regain_n = 0;
	a->series.bloat_rate = a->series.doubt_line;
	a->series.last_down_ns = a->series.last_cut_ns = now;
	decide(a, AUTORATE_DOWN, AR_WHY_CUT_BLOAT);
}

/*
 * Bloat after a cut and its refractory period. Rising: cut again. Falling
 * (this interval and the last, own_pair the higher of the two): the queue
 * drains, wait. Flat for path_checks periods and not too large: the path's,
 * not a queue: take it into the baseline, undo the cuts.
 *
 * Jitter: a move of at most twice path_flat_ns at one check, either way,
 * the check before none. A longer path's rise dips or bumps by a few ms and
 * comes back; a queue left to drain after a cut falls further in a
 * refractory period, and goes on falling, and one that grows goes on
 * growing. Taken as a drain, a dip makes the level it comes back to read
 * as a rise, and a step that dips every few checks is cut again and again,
 * never taken as the path's. So jitter is waited on: the flat checks so
 * far are kept (it is not one), and the next check is judged against both
 * levels.
 */
static void
bloat_again(struct autorate *a, uint64_t now, uint64_t through, uint64_t own, uint64_t own_pair,
	    uint64_t bloat)
{
	uint64_t flat = a->p.path_flat_ns, ref = a->series.cut_delay_ns,
		 alt = a->series.jitter_from_ns;
	uint64_t hi = alt > ref ? alt : ref, lo = alt != 0 && alt < ref ? alt : ref;
	bool rising = own > hi + flat;
	bool falling = own_pair + flat < lo;
	bool jitter = alt == 0 &&
		      (rising ? own <= ref + 2 * flat : falling && own_pair + 2 * flat >= ref);

	if (rising && !a->p.after_modem && a->p.growth_pct != 0 && now > a->series.last_down_ns &&
	    (own - hi) * 100 >= (now - a->series.last_down_ns) * a->p.growth_pct) {
		/*
		 * Upstream, rising fast since the last cut (a line that fell
		 * far): what we send fills the modem faster than it drains. Its
		 * queue's delay grows by (sent - line) / line a second, so the
		 * line is sent / (1 + growth): below what we send, which is all
		 * a cut is otherwise sized from (downstream, what arrives is the
		 * modem's rate). Slower growth (a probe over the line) is cut as
		 * every bloat is.
		 */
		double g = (double)(own - hi) / (double)(now - a->series.last_down_ns);

		/* "near" from that line too: what was sent was over it. */
		cut_bloat(a, now, (uint64_t)((double)through / (1.0 + g)), own, bloat);
		return;
	}
	/*
	 * Rule draining: a rise falling since the last check is a queue
	 * draining, however large. Cut again (it is too large for a path's),
	 * the upload cut from what it sent then, below its line, and took that
	 * as the line: its raises went on at full step past the real one.
	 */
	if ((rising && !jitter) || a->series.start_rate == 0 ||
	    (own > a->p.path_max_ns && !falling) || a->p.path_checks == 0) {
		/*
		 * Downstream without one-way figures, what arrives after the
		 * series' first cut (sized from the modem's rate) far under our
		 * rate: the modem has no queue draining into us, unless its line
		 * fell again. More often the flows are paced by their ACKs,
		 * waiting in the upload's queue, which the rise may be all of
		 * (both lines halved: arrivals at 0.4 of the new line on the
		 * bed). Cut from our rate and keep the line the first cut
		 * measured: a second fall is followed within another refractory
		 * period, and a cut that was not ours costs a tenth to a third
		 * of the rate instead of TCP's whole shortfall, and leaves no
		 * line so low that the download, refilling, looks like the one
		 * probing at the upload's next probe (not_bottleneck).
		 */
		if (a->p.after_modem && a->path.owd_last_ns == UINT64_MAX &&
		    through * 100 < a->rate * a->p.near_lo_pct) {
			uint64_t line = a->series.bloat_rate;

			cut_bloat(a, now, a->rate, own, bloat);
			a->series.bloat_rate = line;
			return;
		}
		cut_bloat(a, now, through, own, bloat);
		return;
	}
	a->series.last_down_ns = now; /* the next check one refractory period on */
	a->series.jitter_from_ns = jitter ? ref : 0;
	if (jitter || falling) {
		a->series.cut_delay_ns = rising ? own : own_pair;
		if (!jitter)
			a->series.flat_checks = 0;
		decide(a, AUTORATE_HOLD, AR_WHY_DRAINING);
		return;
	}
	/* Flat after jitter: at whichever of the two levels it is nearer. */
	if (alt != 0 && (own > alt ? own - alt : alt - own) < (own > ref ? own - ref : ref - own))
		a->series.cut_delay_ns = alt;
	if (++a->series.flat_checks < a->p.path_checks) {
		decide(a, AUTORATE_HOLD, AR_WHY_DRAINING);
		return;
	}
	/*
	 * Downstream, a longer path leaves us the bottleneck after the cut: what
	 * arrives follows our rate down. A line still carrying near the rate at
	 * which it bloated (near_low of it) is the modem draining its own queue
	 * into us at its rate (short flows' slow-start bursts keep one standing
	 * whatever we send): a queue, not the path. Cut again, from our rate.
	 */
	if (a->p.after_modem && a->arrived_rate * 100 >= a->series.bloat_rate * a->p.near_lo_pct) {
		cut_bloat(a, now, a->rate, own, bloat);
		return;
	}
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
	decide(a, AUTORATE_UP, AR_WHY_PATH);
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

bool
autorate_tick(struct autorate *a, uint64_t now, uint64_t sent_bytes, uint64_t arrived_bytes)
{
	uint64_t dt, old = a->rate, delay, raw, got, own, through, bloat, clear, delay_pair,
		     own_pair, last_sent = a->delivered_rate, low = a->series.doubt_rate,
		     doubted = 0;
	uint32_t n = a->in.nsamples, below = a->in.nbelow, mid, regain_n = a->series.regain_n;
	bool loaded, idle, theirs, acks_only, under, confirmed;

	if (!a->in.started) {
		a->in.started = true;
		a->in.start = now;
		a->in.sent = sent_bytes;
		a->in.arrived = arrived_bytes;
		return false;
	}
	/*
	 * An interval ends early when its first early_samples samples, half
	 * of it on, all show bloat: a queue growing at TCP's additive increase
	 * gains 25 ms in 100 ms on a 10 Mbit/s line.
	 */
	if (now - a->in.start < a->p.interval_ns &&
	    (a->p.early_samples == 0 || a->in.nsamples < a->p.early_samples ||
	     now - a->in.start < a->p.interval_ns / 2 ||
	     less(a->in.delay_min, a->path.ns) < autorate_threshold(a, a->p.bloat_ns)))
		return false;
	dt = now - a->in.start;
	got = sent_bytes - a->in.sent;
	a->delivered_rate = (uint64_t)((double)got * 1e9 / (double)dt);
	a->arrived_rate = (uint64_t)((double)(arrived_bytes - a->in.arrived) * 1e9 / (double)dt);
	a->in.start = now;
	a->in.sent = sent_bytes;
	a->in.arrived = arrived_bytes;
	raw = a->in.delay_min;
	a->in.delay_min = UINT64_MAX;
	a->in.nsamples = a->in.nbelow = 0;
	a->last_samples = n;
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
	loaded = a->delivered_rate * 100 >= (uint64_t)a->p.loaded_pct * a->rate;
	a->load_rate = a->delivered_rate > a->arrived_rate ? a->delivered_rate : a->arrived_rate;
	a->load_pct = (uint32_t)(a->load_rate * 100 / (a->rate != 0 ? a->rate : 1));
	idle = a->delivered_rate * 100 < (uint64_t)a->p.idle_pct * a->rate &&
	       a->arrived_rate * 100 < (uint64_t)a->p.idle_pct * a->rate;
	if (n == 0) {
		/* No TCP to listen to: nothing is known. */
		a->path.raw_prev = a->series.delay_prev = a->series.own_prev = UINT64_MAX;
		if (a->p.decay_without_samples)
			decay(a);
		else
			decide(a, AUTORATE_HOLD, AR_WHY_NO_SAMPLES);
		return a->rate != old;
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
	under = below * 2 > n;
	if (under && a->path.raw_prev < a->path.ns)
		a->path.ns = raw > a->path.raw_prev ? raw : a->path.raw_prev;
	a->path.raw_prev = under ? raw : UINT64_MAX;
	delay = raw > a->path.ns ? raw - a->path.ns : 0;
	own = own_share(a, delay);
	a->last_delay_ns = delay;
	a->last_own_ns = own;
	/*
	 * With the last interval's, the higher: what a fall, a flat rise's
	 * level and the end of a standing run are judged on, so that one
	 * interval read low (an echo not held for the flow's next segment)
	 * is not taken for any of them.
	 */
	delay_pair = with_last(&a->series.delay_prev, delay);
	own_pair = with_last(&a->series.own_prev, own);
	bloat = autorate_threshold(a, a->p.bloat_ns);
	clear = autorate_threshold(a, a->p.clear_ns);
	if (a->path.owd_last_ns == UINT64_MAX && a->p.line_pct != 0 && a->other.rate != 0) {
		/*
		 * Without one-way figures both directions judge the same rise:
		 * against the same bloat threshold, the slower line's frame time
		 * in it, so that neither is cut first for being the faster.
		 */
		uint64_t ft = (uint64_t)a->p.frame_bytes * 1000000000ull / a->other.rate;

		if (a->p.bloat_ns + ft > bloat)
			bloat = a->p.bloat_ns + ft;
	}
	if (delay < bloat)
		a->series.bloat_since = 0;
	else if (a->series.bloat_since == 0)
		a->series.bloat_since = now;
	/* Not this one's queue: not cut for it (at bloat, or standing). */
	theirs = not_bottleneck(a, now);
	/*
	 * What the line carries: downstream the modem sits before us, and with a
	 * queue in it what arrives is its rate; upstream TCP is clocked by the
	 * modem, and what we sent is at most our rate.
	 */
	if (a->p.after_modem)
		through = a->arrived_rate;
	else
		through = a->delivered_rate < a->rate ? a->delivered_rate : a->rate;
	/*
	 * Upstream, an interval ended early reads what was sent in part of
	 * one, which may be TCP's pace, not the line's: flows that just backed
	 * off (a loss in the modem's queue) send a fifth of the line for a
	 * round trip or two, while the RTT still holds the queue they sent
	 * before. A line does not fall to a fifth in 50 ms while the RTT
	 * rises 15 ms, and a cut to that is undone only at the raises' pace.
	 * So a cut from such a reading (under three quarters of an interval,
	 * and under loaded_pct of the last interval's) is sized from the last
	 * one's, and the cut the low one asked for is made only when the next
	 * interval confirms it (the rise still growing, what was sent still
	 * under the rate: a line that fell): then at once, refractory period
	 * or not. Downstream what arrives from behind the modem's queue is its
	 * rate over any part of an interval.
	 */
	confirmed = low != 0 && delay >= bloat &&
		    own > a->series.cut_delay_ns + a->p.path_flat_ns && through < a->rate;
	if (!a->p.after_modem && !confirmed && dt * 4 < a->p.interval_ns * 3 &&
	    through * 100 < last_sent * a->p.loaded_pct) {
		doubted = through;
		through = last_sent < a->rate ? last_sent : a->rate;
	}
	a->through_rate = through;
	mid = a->series.mid_intervals;
	a->series.mid_intervals = 0;
	if (own_pair < a->series.flat_min_ns)
		a->series.flat_min_ns = own_pair;
	if (delay_pair < a->series.flat_delay_ns)
		a->series.flat_delay_ns = delay_pair;
	/*
	 * Settling after a path decision ends at the next bloat (cut or not) or
	 * two clear loaded intervals in a row (the step was all taken); a
	 * standing run that breaks starts again.
	 */
	if (delay >= bloat || (own_pair <= clear && loaded))
		a->path.settle_min_ns = UINT64_MAX;
	else if (own <= clear && a->path.settle_min_ns != UINT64_MAX)
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
	acks_only = a->p.lesser_ratio != 0 && a->other.load_rate != 0 &&
		    a->load_rate * a->p.lesser_ratio * a->p.lesser_ratio < a->other.load_rate;
	a->acks_only = acks_only;
	/*
	 * Downstream without one-way figures, cut first as the one probing
	 * (not_bottleneck): the rise outlasted the cut, so that the other was
	 * cut a refractory period or more after it (a cut: its hold while its
	 * own queue drains says nothing of ours), and what arrives followed
	 * our rate down. No queue in the modem drains into us at its rate, so
	 * the rise was never this direction's: the cut is undone, back to the
	 * rate the series started from. Not to what got through when it was
	 * made: that was TCP held back by the other's queue, and a download
	 * put back there after each of the upload's probes held 0.6 of a
	 * halved modem on the bed. A modem's own queue would keep arrivals at its rate,
	 * above ours, until it drained; "followed" allows near_hi_pct of it.
	 * Its line goes back too, to the one before the series if that was
	 * higher: what got through at a cut that was not ours is what TCP
	 * carried then, not the line, and a line left that low makes this
	 * direction look at its line, and probing, when it carries no more
	 * than that (not_bottleneck), so that the other's next rise cuts it
	 * again.
	 */
	if (a->p.after_modem && a->path.owd_last_ns == UINT64_MAX && a->p.line_pct != 0 &&
	    a->series.start_rate != 0 && a->series.last_cut_ns != 0 &&
	    a->other.cut_ns >= a->series.last_cut_ns + a->p.refractory_ns &&
	    a->arrived_rate * 100 <= a->rate * a->p.near_hi_pct) {
		a->rate = clamp_rate(a, a->series.start_rate);
		if (a->series.start_line > a->series.bloat_rate)
			a->series.bloat_rate = a->series.start_line;
		a->series.start_rate = 0;
		a->series.flat_checks = 0;
		decide(a, AUTORATE_UP, AR_WHY_OTHER_DIR);
		return a->rate != old;
	}
	if (delay >= bloat) {
		a->series.below_prev = false;
		/*
		 * The other direction's queue (autorate_attribute). A direction
		 * that carries only the other's ACKs (next to nothing, or far
		 * less of its rate than the other of its own, and far fewer
		 * bytes) is cut only on a one-way figure that puts a large rise
		 * in it: the split of a small one is too uncertain to starve the
		 * ACKs. The bytes matter: a line that fell far below the rate
		 * carries a small share of it, and is no less the bottleneck
		 * (with nothing known of the other direction, the share alone).
		 */
		bool few = a->p.lesser_ratio != 0 &&
			   (uint64_t)a->load_pct * a->p.lesser_ratio < a->other.load_pct;
		bool fewer_bytes = a->p.lesser_ratio == 0 || a->other.load_rate == 0 ||
				   a->load_rate * a->p.lesser_ratio < a->other.load_rate;
		bool lesser = ((idle || few) && fewer_bytes) || acks_only;

		if (theirs || own < bloat / 2 ||
		    (lesser &&
		     (a->path.owd_last_ns == UINT64_MAX || own < a->p.lesser_ratio * bloat)))
			decide(a, AUTORATE_HOLD, AR_WHY_OTHER_DIR);
		else if (confirmed)
			cut_doubted(a, now, low);
		else if (a->series.last_down_ns != 0 &&
			 now - a->series.last_down_ns < a->p.refractory_ns) {
			if (!cut_growing(a, now, through, own, bloat))
				decide(a, AUTORATE_HOLD, AR_WHY_REFRACTORY);
		} else if (a->series.start_rate != 0)
			bloat_again(a, now, through, own, own_pair, bloat);
		else
			cut_bloat(a, now, through, own, bloat);
		if (doubted != 0 && through != 0 && a->series.last_cut_ns == now &&
		    a->last_action == AUTORATE_DOWN) {
			a->series.doubt_line = doubted;
			a->series.doubt_rate =
					clamp_rate(a, (uint64_t)((double)a->rate * (double)doubted /
								 (double)through));
		}
		return a->rate != old;
	}
	/*
	 * Below the threshold twice in a row: the series of cuts, if any, is
	 * over. Once is not enough: one interval read low in the middle of a
	 * flat rise would start a new series from the rate already cut, and a
	 * path decision would then restore only that. Its starting rate is
	 * kept for a series that begins soon after (cut_bloat).
	 */
	if (a->series.below_prev && a->series.start_rate != 0) {
		a->series.prev_start = a->series.start_rate;
		a->series.end_ns = now;
		a->series.start_rate = 0;
		a->series.flat_checks = 0;
	}
	a->series.below_prev = true;
	if (own <= clear && loaded) {
		bool near = a->series.bloat_rate != 0 &&
			    a->rate * 100 >= a->series.bloat_rate * a->p.near_lo_pct &&
			    a->rate * 100 < a->series.bloat_rate * a->p.near_hi_pct;
		bool past = a->series.bloat_rate != 0 &&
			    a->rate * 100 >= a->series.bloat_rate * a->p.near_hi_pct;
		uint64_t step = a->rate * (near ? a->p.up_slow_pct : a->p.up_fast_pct) / 100;

		if (a->series.regain_to <= a->rate)
			a->series.regain_to = 0;
		if (past && a->series.regain_to != 0 && a->p.regain_pct != 0) {
			/*
			 * Rule regain: past the near band of the last bloat,
			 * clear: the line has grown since. Two steps at
			 * up_fast_pct (a probe over a line that did not move
			 * bloats within them), then each clear interval
			 * doubles the step up to regain_pct, no higher than
			 * the rate the fall's cuts started from. At 5 % an
			 * interval a download took 5 s back from a tenth.
			 */
			uint64_t pct = a->p.up_fast_pct, up;

			a->series.regain_n = regain_n + 1;
			for (uint32_t i = 2; i < a->series.regain_n && pct < a->p.regain_pct; i++)
				pct *= 2;
			if (pct > a->p.regain_pct)
				pct = a->p.regain_pct;
			if (pct < a->p.up_fast_pct)
				pct = a->p.up_fast_pct;
			up = a->rate + a->rate * pct / 100;
			a->rate = clamp_rate(a,
					     up < a->series.regain_to ? up : a->series.regain_to);
			decide(a, AUTORATE_UP, AR_WHY_REGAIN);
			return a->rate != old;
		}
		a->rate = clamp_rate(a, a->rate + (step != 0 ? step : 1));
		decide(a, AUTORATE_UP, AR_WHY_RAISE);
	} else if (own > clear && !idle &&
		   (theirs || (acks_only && a->path.owd_last_ns == UINT64_MAX))) {
		decide(a, AUTORATE_HOLD, AR_WHY_OTHER_DIR);
	} else if (own > clear && !idle) {
		a->series.mid_intervals = mid + 1;
		if (a->path.settle_min_ns != UINT64_MAX &&
		    (a->path.settle_min_ns == 0 || delay < a->path.settle_min_ns))
			a->path.settle_min_ns = delay;
		/*
		 * Loaded: only a rate that is being used tells the line's. A
		 * direction refilling its rate (TCP after a cut) sends less than
		 * it, and cutting to that would cut for TCP's pace.
		 */
		if (a->p.standing_intervals != 0 &&
		    a->series.mid_intervals >= a->p.standing_intervals && loaded &&
		    a->path.settle_min_ns != UINT64_MAX) {
			/*
			 * The first standing run after a path decision, at the
			 * rate restored: the rest of the step. The flat rise
			 * the decision took was read at the cut rate, where
			 * a flow's segments are spaced wider, and an echo not
			 * held for the next one reads that much lower
			 * (rtt_sample.gap_us). Below bloat, so bounded.
			 */
			a->series.mid_intervals = 0;
			a->path.ns += a->path.settle_min_ns;
			a->path.settle_min_ns = UINT64_MAX;
			decide(a, AUTORATE_HOLD, AR_WHY_PATH);
		} else if (a->p.standing_intervals != 0 &&
			   a->series.mid_intervals >= a->p.standing_intervals && loaded &&
			   (a->series.last_down_ns == 0 ||
			    now - a->series.last_down_ns >= a->p.refractory_ns)) {
			a->series.mid_intervals = 0;
			a->series.bloat_rate = through;
			a->rate = acks_floor(a,
					     clamp_rate(a, through * (100 - a->p.standing_cut_pct) /
									   100));
			a->series.last_down_ns = a->series.last_cut_ns = now;
			decide(a, AUTORATE_DOWN, AR_WHY_CUT_STANDING);
		} else {
			decide(a, AUTORATE_HOLD, AR_WHY_HOLD);
		}
	} else {
		/*
		 * Clear but not loaded, or idle: nothing says where the line is;
		 * drift towards base (a direction that carries only the other's
		 * ACKs, cut once, finds its way back).
		 */
		decay(a);
	}
	return a->rate != old;
}
