/*
 * Autorate: finds the rate of a line whose speed changes under the shaper
 * (cable, LTE, satellite) from the WAN-side RTT of the users' own flows.
 * When the RTT rises above the flows' baselines while the direction is
 * busy, the queue has moved out of the shaper into the modem: lower the
 * rate. While the direction is loaded and the RTT stays at baseline, raise
 * it. When idle, or with no samples, hold. Plain C, no allocation, time
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
	bool started;

	/* Memory of the last lowering. */
	uint64_t last_down_ns;
	uint64_t bloat_rate; /* what was getting through then: the line's rate, about */

	/* For stats. */
	uint64_t delivered_rate; /* bytes/s over the last interval */
	uint64_t last_delay_ns;  /* delay_min of the last interval with samples */
	uint64_t ups, downs;
	uint8_t last_action; /* enum autorate_action */
};

void autorate_init(struct autorate *a, const struct autorate_params *p);

/* One RTT sample (ns) with its flow's baseline (ns). */
void autorate_sample(struct autorate *a, uint64_t rtt_ns, uint64_t base_ns);

/*
 * Call often (every worker turn is fine): at the end of each interval it
 * decides. delivered_bytes is the direction's running count of bytes sent.
 * Returns true when a->rate changed.
 */
bool autorate_tick(struct autorate *a, uint64_t now, uint64_t delivered_bytes);

#endif
