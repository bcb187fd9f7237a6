/*
 * Autorate: finds the rate of a line whose speed changes under the shaper
 * (cable, LTE, satellite) from the WAN-side RTT of the users' own flows.
 * When the RTT rises above the flows' baselines while the direction is
 * busy, the queue has moved out of the shaper into the modem: lower the
 * rate. While the direction is loaded and the RTT stays at baseline, raise
 * it. A rise that stands between the clear and bloat thresholds for half a
 * second (default interval) gets a small cut so that it drains. When idle,
 * or with no samples, hold. Plain C, no allocation, time
 * passed in; one instance per direction, fed the same WAN-side samples.
 */
#ifndef SHAPER_AUTORATE_H
#define SHAPER_AUTORATE_H

#include <stdbool.h>
#include <stdint.h>

struct autorate_params {
	uint64_t min_rate, max_rate; /* bytes/s: the bounds from the config */
	uint64_t start_rate;         /* bytes/s, 0 = max_rate */
	uint64_t interval_ns;        /* one decision per interval */
	uint64_t bloat_ns;           /* RTT above baseline that means a queue beyond us */
	uint64_t clear_ns;           /* RTT above baseline that still counts as none */
	uint32_t busy_pct;           /* delivered/rate at least this: a lowering may help */
	uint32_t loaded_pct;         /* delivered/rate at least this: the rate is the limit */
	bool after_modem;            /* downstream: gets the one-way rise (autorate_owd_sample) */
};

/* Defaults: 100 ms interval, 8 ms bloat, 3 ms clear, busy 30 %, loaded 75 %. */
void autorate_params_default(struct autorate_params *p, uint64_t min_rate, uint64_t max_rate);

enum autorate_action {
	AUTORATE_HOLD = 0,
	AUTORATE_UP = 1,
	AUTORATE_DOWN = 2,
};

struct autorate {
	struct autorate_params p;
	uint64_t rate; /* bytes/s the shaper should run at */

	/* This interval. */
	uint64_t tick_start, tick_bytes;
	uint64_t delay_min; /* lowest RTT above baseline among this interval's samples */
	uint32_t nsamples;
	uint64_t owd_min; /* lowest downstream one-way rise among this interval's packets */
	uint32_t owd_n;
	bool started;

	/*
	 * Whose queue a rise is in: the downstream one-way rise of the last
	 * interval that had any (UINT64_MAX: none seen); for the upstream,
	 * the downstream controller's, copied by autorate_attribute.
	 */
	uint64_t owd_last_ns;

	/* Memory of the last lowering. */
	uint64_t last_down_ns;
	uint64_t bloat_rate;    /* what was getting through then: the line's rate, about */
	uint32_t mid_intervals; /* busy intervals in a row between clear and bloat */

	/* For stats. */
	uint64_t delivered_rate; /* bytes/s over the last interval */
	uint64_t last_delay_ns;  /* delay_min of the last interval with samples */
	uint64_t ups, downs;
	uint8_t last_action; /* enum autorate_action */
};

void autorate_init(struct autorate *a, const struct autorate_params *p);

/* One RTT sample (ns) with its flow's baseline (ns). */
void autorate_sample(struct autorate *a, uint64_t rtt_ns, uint64_t base_ns);

/* A downstream packet's one-way delay above its flow's baseline (ns; owd.h). */
static inline void
autorate_owd_sample(struct autorate *a, uint64_t rise_ns)
{
	if (rise_ns < a->owd_min)
		a->owd_min = rise_ns;
	a->owd_n++;
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
 * (no timestamps, or down NULL) each decides on the RTT alone.
 */
void autorate_attribute(struct autorate *up, const struct autorate *down);

/*
 * Call often (every worker turn is fine): at the end of each interval it
 * decides. delivered_bytes is the direction's running count of bytes sent.
 * Returns true when a->rate changed.
 */
bool autorate_tick(struct autorate *a, uint64_t now, uint64_t delivered_bytes);

#endif
