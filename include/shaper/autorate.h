/*
 * Autorate: finds the rate of a line whose speed changes under the shaper
 * (cable, LTE, satellite) from the WAN-side RTT of the users' own flows.
 * Each interval it takes the lowest rise above the flows' baselines among
 * that interval's samples (a standing queue lifts every sample; delayed
 * ACKs and scheduling noise lift only some).
 *
 *  - Bloat (the rise at the bloat threshold, whatever the load): the queue
 *    has moved out of the shaper into the modem. The rate is cut below what
 *    got through (downstream the modem's own output, upstream what we sent),
 *    by 10 % at the threshold up to `cut_max_pct` for a queue that would
 *    take longer than `drain_ns` to drain; not again within `refractory_ns`,
 *    and not while the rise is already falling (the queue is draining).
 *  - A rise that stays flat after a cut (within `path_flat_ns`, for
 *    `path_checks` refractory periods, and no larger than `path_max_ns`)
 *    did not drain: it is the path's (a satellite switch, a handover, a
 *    reroute), not a queue. It is taken into the baseline and the rate
 *    goes back to where it was before the cuts. One check's jitter (a
 *    move of up to twice `path_flat_ns`) does not break the flatness. The
 *    path's part goes again once most samples read below it.
 *    A rise falling since the last check is a queue draining, however
 *    large: held. Upstream with one-way figures, a rise still growing
 *    fast an interval into the refractory period is cut again at once.
 *  - Clear (rise under the clear threshold) while loaded: raise, slowly
 *    near the rate of the last bloat; past it with no rise (the line came
 *    back after a fall) the step doubles up to `regain_pct`, no higher
 *    than the rate the fall's cuts started from.
 *  - A direction carrying only the other's ACKs is never cut below
 *    `acks_floor_pct` of what it carries.
 *  - A rise standing between clear and bloat: a small cut after a while.
 *  - Clear but not loaded, or idle (or no samples, when so configured):
 *    move towards `base_rate`.
 * Both thresholds grow by the time one `frame_bytes` frame takes at the
 * current rate: at 2 Mbit/s a 1514-byte frame alone is 6 ms of queue.
 * Plain C, no allocation, time passed in; one instance per direction, fed
 * the same WAN-side samples.
 */
#ifndef SHAPER_AUTORATE_H
#define SHAPER_AUTORATE_H

#include <stdbool.h>
#include <stdint.h>

struct autorate_params {
	uint64_t min_rate, max_rate; /* bytes/s: the bounds from the config */
	uint64_t start_rate;         /* bytes/s, 0 = max_rate */
	uint64_t base_rate;          /* bytes/s the rate decays to when idle; 0 = start_rate */
	uint64_t interval_ns;        /* one decision per interval */
	uint32_t early_samples; /* as many samples all at bloat end an interval early (0: never) */
	uint64_t bloat_ns;      /* rise above baseline that means a queue beyond us */
	uint64_t clear_ns;      /* rise above baseline that still counts as none */
	uint32_t frame_bytes;   /* both thresholds grow by this frame's time at the rate */
	uint64_t refractory_ns; /* after a cut, no other before this */
	uint32_t cut_min_pct;   /* a cut at the bloat threshold */
	uint32_t cut_max_pct;   /* the largest cut */
	uint64_t drain_ns;      /* a cut is sized to drain the rise within this */
	uint32_t loaded_pct;    /* delivered/rate at least this: the rate is the limit */
	uint32_t idle_pct;      /* delivered/rate under this: idle, decay towards base */
	uint32_t up_fast_pct;   /* raise per interval away from the last bloat rate */
	uint32_t up_slow_pct;   /* ... near it */
	uint32_t near_lo_pct;   /* "near": from this share of the last bloat rate */
	uint32_t near_hi_pct;   /* ... to this one */
	uint32_t standing_intervals; /* loaded intervals between clear and bloat before ... */
	uint32_t standing_cut_pct;   /* ... a cut this size, to drain the standing queue */
	uint32_t decay_pct;          /* idle: per interval towards base_rate */
	bool decay_without_samples;  /* no samples for an interval: decay (true) or hold */
	uint64_t owd_stale_ns;       /* a one-way figure older than this is forgotten */
	uint32_t owd_recent;   /* upstream: its share against the highest of this many intervals' */
	uint32_t lesser_ratio; /* a direction this many times less loaded than the other ... */
	uint64_t path_flat_ns; /* a rise that moves less than this after a cut ... */
	uint32_t path_checks;  /* ... for this many refractory periods ... */
	uint64_t path_max_ns;  /* ... and is no larger than this is the path's */
	/*
	 * Without one-way figures: a direction carrying under this share of
	 * what got through at its last cut, while the other carries at least as
	 * much of its own, is not the bottleneck: not cut for a rise (0: no
	 * such rule).
	 */
	uint32_t line_pct;
	/*
	 * Upstream, a rise growing since the last cut by at least this many ms
	 * per 100 ms: the next cut is sized from the line the growth implies
	 * (what was sent over 1 + the growth per second), not from what was
	 * sent (0: never).
	 */
	uint32_t growth_pct;
	/*
	 * Regain: after a fall, a raise that has passed the near band of the
	 * last bloat without a rise doubles its step each clear interval (from
	 * up_fast_pct, after two at it) up to this percent, until the rate is
	 * back at the one the fall's cuts started from (0: never).
	 */
	uint32_t regain_pct;
	/*
	 * A direction carrying only the other's ACKs is never cut below this
	 * percent of what it carries (0: no floor).
	 */
	uint32_t acks_floor_pct;
	bool after_modem; /* downstream: gets the one-way rise (autorate_owd_sample) */
};

/*
 * Defaults: 100 ms interval (4 samples at bloat end it early), bloat 8 ms,
 * clear 3 ms, frame 1514 B, refractory 300 ms, cuts 10-50 %, drain 1 s,
 * loaded 75 %, idle 10 %, raise 5 % (1 % from 92 to 101 % of the last
 * bloat rate), standing 5 intervals and 3 %, decay 1 % an interval, hold
 * without samples, one-way figures stale after 1 s and the upstream's share
 * against the last 8 intervals', lesser ratio 4, path 2 ms flat for 2
 * checks up to 60 ms, line 90 %, growth 25 %, regain up to 25 %, an ACK
 * direction's floor 125 % of what it carries.
 */
void autorate_params_default(struct autorate_params *p, uint64_t min_rate, uint64_t max_rate);

/* Whether two sets of parameters are alike, field by field. */
bool autorate_params_same(const struct autorate_params *a, const struct autorate_params *b);

enum autorate_action {
	AUTORATE_HOLD = 0,
	AUTORATE_UP = 1,
	AUTORATE_DOWN = 2,
};

/* Why the last decision was taken (counted in autorate.why[]). */
enum autorate_reason {
	AR_WHY_NO_SAMPLES = 0, /* hold (or decay): no sample this interval */
	AR_WHY_CUT_BLOAT,      /* cut: the rise at the bloat threshold */
	AR_WHY_CUT_STANDING,   /* cut: a rise standing between clear and bloat */
	AR_WHY_RAISE,          /* raise: clear and loaded */
	AR_WHY_DECAY,          /* towards base_rate: idle */
	AR_WHY_PATH,           /* a flat rise taken as the path's; the rate restored */
	AR_WHY_REFRACTORY,     /* hold: bloat, but within the refractory period */
	AR_WHY_DRAINING,       /* hold: bloat, but falling since the last cut */
	AR_WHY_OTHER_DIR,      /* hold: the rise is the other direction's queue */
	AR_WHY_HOLD,           /* hold: none of the above */
	AR_WHY_REGAIN,         /* raise: past the last bloat's band, no rise: the line came back */
	AR_WHY_CUT_GROWING,    /* cut within the refractory period: the rise grows fast */
	AR_WHY_N,
};

/* "no_samples", "cut_bloat", ... (the names stats and metrics use). */
const char *autorate_reason_name(unsigned int why);

/*
 * An interval is judged by an ordered list of rules, each counted under
 * one reason: the first that applies decides. The rule that took the last
 * decision (autorate.last_rule): its name ("cut_bloat", "jitter",
 * "undo_cut", ...: the decision log's) and what it saw and did, in a line.
 */
const char *autorate_rule_name(unsigned int rule);
const char *autorate_rule_text(unsigned int rule);
unsigned int autorate_rule_count(void); /* the rules are 0 .. this - 1 */

#define AR_OWD_RECENT_MAX 16 /* owd_recent's largest */

/* The interval under way: its start and what its samples showed so far. */
struct autorate_interval {
	uint64_t start;     /* when it began (0 before the first tick: see started) */
	uint64_t sent;      /* the running count of bytes sent then */
	uint64_t arrived;   /* ... and of bytes arrived */
	uint64_t lost;      /* ... and of time the shaper wrote off (autorate_tick's lost_ns) */
	uint64_t delay_min; /* lowest RTT above baseline among its samples */
	uint32_t nsamples;
	uint32_t nbelow;  /* ... of them below path.ns */
	uint64_t owd_min; /* lowest downstream one-way rise among its packets */
	uint64_t owd_now; /* the latest of them */
	uint32_t owd_n;
	bool started;
};

/* Where a rise is: the part known to be the path's, and the one-way figures. */
struct autorate_path {
	uint64_t ns;            /* the part of every rise known to be the path's */
	uint64_t own_ns;        /* ... and of the one-way rise (downstream) */
	uint64_t raw_prev;      /* the last interval's lowest rise, path.ns on, if it read below
				   path.ns (UINT64_MAX: it did not, or no samples) */
	uint64_t settle_min_ns; /* after a path decision: the lowest rise of the standing run
				   that may be the rest of the step (UINT64_MAX: not settling) */
	/*
	 * Whose queue a rise is in: the downstream one-way rise of the last
	 * interval that had any (UINT64_MAX: none seen, or stale); for the
	 * upstream, the downstream controller's, copied by autorate_attribute.
	 */
	uint64_t owd_last_ns, owd_last_at;
	uint64_t owd_recent[AR_OWD_RECENT_MAX]; /* the last intervals' one-way rises (downstream) */
	uint32_t owd_recent_i;
};

/* Memory of the cuts: the last one, the series it began or belongs to, the checks since. */
struct autorate_series {
	uint64_t last_down_ns; /* the last cut, or a hold that restarted the refractory period */
	uint64_t last_cut_ns;  /* the last cut itself */
	uint64_t bloat_rate;   /* what was getting through then: the line's rate, about */
	uint64_t start_rate;   /* the rate before the first cut of this series (0: none) */
	uint64_t start_line;   /* bloat_rate before the first cut of this series (0: none) */
	uint64_t prev_start, end_ns; /* the last series': its start_rate, when it ended */
	uint64_t cut_delay_ns;       /* the rise the last bloat cut answered */
	uint64_t jitter_from_ns;     /* ... before the last check's jitter (0: none) */
	/*
	 * Since then, the lowest of each interval's rise taken with the last
	 * interval's, the higher of the two: one interval read low (an echo not
	 * held for the flow's next segment, rtt_sample.gap_us) is not a fall.
	 */
	uint64_t flat_min_ns;   /* ... of the own share */
	uint64_t flat_delay_ns; /* ... of the rise */
	uint32_t flat_checks;   /* refractory periods in a row the rise stayed flat */
	/*
	 * Upstream, for one interval after a cut whose reading was doubted:
	 * that reading, and the rate it asked for (0: none).
	 */
	uint64_t doubt_line, doubt_rate;
	/*
	 * Regain: the rate the cuts of a fall started from, the highest since
	 * the line was last back there (0: none), and the clear intervals in a
	 * row past the near band (the step doubles with them).
	 */
	uint64_t regain_to;
	uint32_t regain_n;
	uint32_t mid_intervals; /* loaded intervals in a row between clear and bloat */
	uint64_t bloat_since;   /* the first of the intervals in a row at bloat (0: none) */
	uint64_t delay_prev;    /* the last interval's rise (UINT64_MAX: none) */
	uint64_t own_prev;      /* ... and own share */
	bool below_prev;        /* the last interval with samples was below bloat */
};

/* The other direction, as autorate_attribute last saw it (all zero: none). */
struct autorate_other {
	uint32_t load_pct;  /* its load_pct */
	uint64_t load_rate; /* its load_rate */
	uint64_t line_rate; /* its series.bloat_rate */
	bool at_min;        /* its rate is at its min */
	uint64_t down_ns;   /* its series.last_down_ns */
	uint64_t cut_ns;    /* its series.last_cut_ns */
	uint64_t rate;      /* its rate */
};

struct autorate {
	struct autorate_params p;
	uint64_t rate; /* bytes/s the shaper should run at */

	struct autorate_interval in;
	struct autorate_path path;
	struct autorate_series series;
	struct autorate_other other;

	/* The last interval, as it was closed and judged. */
	uint32_t load_pct;  /* sent or arrived over it, percent of the rate */
	uint64_t load_rate; /* bytes/s sent or arrived over it, the larger */
	bool acks_only;     /* it carried only the other's ACKs */

	/* For stats. */
	uint64_t delivered_rate; /* bytes/s sent over the last interval */
	uint64_t arrived_rate;   /* bytes/s that arrived to be shaped over the last interval */
	uint64_t through_rate;  /* what the line carried, as the last interval's decision took it */
	uint64_t last_delay_ns; /* delay_min of the last interval with samples, path.ns off */
	uint64_t last_own_ns;   /* this direction's share of it (own_share) */
	uint32_t last_samples;  /* samples in the last interval */
	uint64_t ups, downs;
	uint64_t why[AR_WHY_N]; /* decisions by reason */
	uint8_t last_action;    /* enum autorate_action */
	uint8_t last_why;       /* enum autorate_reason */
	uint8_t last_rule;      /* the rule that decided (autorate_rule_name) */
};

void autorate_init(struct autorate *a, const struct autorate_params *p);

/* One RTT sample (ns) with its flow's baseline (ns), from a flow whose baseline is established. */
void autorate_sample(struct autorate *a, uint64_t rtt_ns, uint64_t base_ns);

/* A downstream packet's one-way delay above its flow's baseline (ns; owd.h). */
static inline void
autorate_owd_sample(struct autorate *a, uint64_t rise_ns)
{
	if (rise_ns < a->in.owd_min)
		a->in.owd_min = rise_ns;
	a->in.owd_now = rise_ns;
	a->in.owd_n++;
}

/*
 * Whose queue is it? A WAN-side RTT rises with a queue in either direction
 * of the modem, so each controller alone would lower its rate for the
 * other's queue too, and could not raise while the other's queue stands.
 * The downstream controller (after_modem) also gets the downstream one-way
 * rise (autorate_owd_sample); the upstream's share is the RTT's rise less
 * that. A rise of the RTT to the bloat threshold then lowers only a
 * direction whose share is at least half the threshold (one of them is),
 * and a direction raises when its own share is clear. Call this before the
 * upstream's tick with the downstream's controller. Without one-way figures
 * (no timestamps, stale ones, or down NULL) each decides on the RTT alone,
 * except that a direction that carries only the other's ACKs is not cut,
 * nor with one-way figures unless its share is lesser_ratio times bloat:
 * one lesser_ratio times less loaded (share of its rate) than the other,
 * or idle, and carrying lesser_ratio times fewer bytes. Both, because after
 * a line falls its rate is far above what it carries: a download on a
 * line that fell to a tenth, beside an upload held at its minimum, carries
 * a tenth of its rate and still five times the upload's bytes.
 */
void autorate_attribute(struct autorate *up, struct autorate *down);

/* The threshold t (ns) at the current rate: t plus one frame's time. */
uint64_t autorate_threshold(const struct autorate *a, uint64_t t);

/*
 * Call often (every worker turn is fine): at the end of each interval it
 * decides. sent_bytes is the direction's running count of bytes sent (what
 * the shaper let through), arrived_bytes of bytes received to be shaped
 * (downstream: what the modem delivered), lost_ns of the time the shaper
 * wrote off, its worker away while packets waited (sched_lag_skipped_ns;
 * 0 if not known): an interval lasts its length of the time the shaper
 * ran, and what was sent is a rate over that time. Returns true when
 * a->rate changed.
 */
bool autorate_tick(struct autorate *a, uint64_t now, uint64_t sent_bytes, uint64_t arrived_bytes,
		   uint64_t lost_ns);

#endif
