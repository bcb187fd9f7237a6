/* Downstream one-way delay above each flow's baseline (see include/shaper/owd.h). */
#include <string.h>

#include "shaper/owd.h"

void
owd_table_init(struct owd_table *t)
{
	memset(t, 0, sizeof(*t));
}

/* Mod-2^32 values compared by their difference (both within 35 minutes). */
static inline bool
below(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

/*
 * A minimum taken at at_ms, as it stands at now_ms: risen by OWD_CREEP_PPM
 * of the time since (in us: ms * ppm / 1000), so a sender's clock running
 * that much slower than ours is followed and does not read as a queue.
 */
static inline uint32_t
crept(uint32_t min, uint32_t at_ms, uint32_t now_ms)
{
	return min + (uint32_t)((uint64_t)(now_ms - at_ms) * OWD_CREEP_PPM / 1000);
}

/* A new flow in slot s (its first packet here). */
static void
slot_start(struct owd_slot *s, uint32_t tag, uint32_t tsval, uint32_t off, uint32_t now_ms)
{
	s->tag = tag;
	s->min_cur = s->min_prev = off;
	s->min_cur_ms = s->min_prev_ms = now_ms;
	s->win_start_ms = s->first_ms = s->last_ms = now_ms;
	s->first_tsval = tsval;
	s->state = OWD_SETTLING;
}

/* Settled: is the flow's TSval clock at about 1 kHz against ours? */
static uint32_t
clock_check(struct owd_table *t, const struct owd_slot *s, uint32_t tsval, uint32_t now_ms)
{
	uint64_t ticks = (uint32_t)(tsval - s->first_tsval), ms = now_ms - s->first_ms;

	if (ticks * 100 < ms * OWD_RATE_LO_PCT || ticks * 100 > ms * OWD_RATE_HI_PCT) {
		t->c.bad_clock++;
		return OWD_BAD_CLOCK;
	}
	return OWD_OK;
}

int64_t
owd_observe(struct owd_table *t, uint32_t flow_hash, uint32_t tsval, uint64_t now)
{
	struct owd_slot *s = &t->slot[flow_hash & (OWD_SLOTS - 1)];
	uint32_t tag = flow_hash | 1;
	uint32_t now_ms = (uint32_t)(now / 1000000);
	uint32_t off = (uint32_t)(now / 1000) - tsval * 1000u;
	uint32_t base, cur, prev;

	if (s->tag != tag) {
		/* Another flow's slot: taken over only once that flow has gone quiet. */
		if (s->tag != 0 && now_ms - s->last_ms < OWD_STALE_MS) {
			t->c.collisions++;
			return -1;
		}
		slot_start(s, tag, tsval, off, now_ms);
		return -1;
	}
	if (now_ms - s->last_ms >= OWD_STALE_MS) {
		/* Back after a long silence: its baseline is stale, start over. */
		slot_start(s, tag, tsval, off, now_ms);
		return -1;
	}
	s->last_ms = now_ms;
	if (now_ms - s->win_start_ms >= OWD_WINDOW_MS) {
		s->min_prev = s->min_cur;
		s->min_prev_ms = s->min_cur_ms;
		s->min_cur = off;
		s->min_cur_ms = now_ms;
		s->win_start_ms = now_ms;
	} else if (below(off, crept(s->min_cur, s->min_cur_ms, now_ms))) {
		s->min_cur = off;
		s->min_cur_ms = now_ms;
	}
	if (s->state == OWD_SETTLING) {
		if (now_ms - s->first_ms < OWD_SETTLE_MS)
			return -1;
		s->state = clock_check(t, s, tsval, now_ms);
	}
	if (s->state != OWD_OK)
		return -1;
	cur = crept(s->min_cur, s->min_cur_ms, now_ms);
	prev = crept(s->min_prev, s->min_prev_ms, now_ms);
	base = below(prev, cur) ? prev : cur;
	t->c.rises++;
	if (below(off, base))
		return 0;
	return (int64_t)(uint32_t)(off - base) * 1000;
}
