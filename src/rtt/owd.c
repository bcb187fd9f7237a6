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

int64_t
owd_observe(struct owd_table *t, uint32_t flow_hash, uint32_t tsval, uint64_t now)
{
	struct owd_slot *s = &t->slot[flow_hash & (OWD_SLOTS - 1)];
	uint32_t tag = flow_hash | 1;
	uint32_t now_ms = (uint32_t)(now / 1000000);
	uint32_t off = (uint32_t)(now / 1000) - tsval * 1000u;
	uint32_t base;

	if (s->tag != tag) {
		s->tag = tag;
		s->min_cur = s->min_prev = off;
		s->win_start_ms = now_ms;
		return -1;
	}
	if (now_ms - s->win_start_ms >= OWD_WINDOW_MS) {
		s->min_prev = s->min_cur;
		s->min_cur = off;
		s->win_start_ms = now_ms;
	} else if (below(off, s->min_cur)) {
		s->min_cur = off;
	}
	base = below(s->min_prev, s->min_cur) ? s->min_prev : s->min_cur;
	if (below(off, base))
		return 0;
	return (int64_t)(uint32_t)(off - base) * 1000;
}
