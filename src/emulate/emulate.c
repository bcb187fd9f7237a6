/*
 * Delay line: packets leave in the order they came, each at
 * max(previous release, arrival + delay + jitter sample), so jitter never
 * reorders (unlike netem's plain jitter). Release times are non-decreasing,
 * so one FIFO is the whole structure. The price: when packets come closer
 * together than the jitter span, the order rule lifts the low samples, so
 * the mean delay of dense traffic moves towards delay + jitter.
 */
#include <stdlib.h>

#include "shaper/emulate.h"
#include "shaper/rand.h"
#include "shaper/sched.h"

struct emulate {
	struct emu_params p;
	struct sh_pkt_list q;
	uint64_t last_release;
	uint64_t rng;
	uint64_t loss_threshold; /* loss_ppm scaled to 2^32 */
};

bool
emu_params_active(const struct emu_params *p)
{
	return p->delay_ns != 0 || p->jitter_ns != 0 || p->loss_ppm != 0;
}

struct emulate *
emu_create(const struct emu_params *p)
{
	struct emulate *e;

	if (p->loss_ppm > 1000000 || p->limit == 0)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return NULL;
	e->p = *p;
	e->rng = p->seed != 0 ? p->seed : SH_RAND_GAMMA; /* xorshift needs a nonzero state */
	e->loss_threshold = ((uint64_t)p->loss_ppm << 32) / 1000000;
	sh_pkt_list_init(&e->q);
	return e;
}

void
emu_set_path(struct emulate *e, uint64_t delay_ns, uint64_t jitter_ns, uint32_t loss_ppm)
{
	e->p.delay_ns = delay_ns;
	e->p.jitter_ns = jitter_ns;
	e->p.loss_ppm = loss_ppm;
	e->loss_threshold = ((uint64_t)loss_ppm << 32) / 1000000;
}

void
emu_free(struct emulate *e)
{
	free(e);
}

int
emu_enqueue(struct emulate *e, struct sh_pkt *p, uint64_t now, struct sh_pkt_list *dropped)
{
	uint64_t release = now + e->p.delay_ns;

	if (e->p.loss_ppm != 0 && sh_rand32(&e->rng) < e->loss_threshold) {
		p->drop_reason = SHAPER_DROP_EMULATED_LOSS;
		sh_pkt_list_push(dropped, p);
		return 1;
	}
	if (e->q.count >= e->p.limit) {
		p->drop_reason = SHAPER_DROP_EMULATOR_FULL;
		sh_pkt_list_push(dropped, p);
		return 1;
	}
	if (e->p.jitter_ns != 0) {
		/* Uniform in [-jitter, +jitter] at 2^-32 resolution. */
		uint64_t span = 2 * e->p.jitter_ns;
		uint64_t off = (uint64_t)(((unsigned __int128)span * sh_rand32(&e->rng)) >> 32);

		release = release + off >= e->p.jitter_ns ? release + off - e->p.jitter_ns : now;
		if (release < now)
			release = now;
	}
	if (release < e->last_release)
		release = e->last_release; /* never overtake the packet ahead */
	e->last_release = release;
	p->enq_ns = release;
	sh_pkt_list_push(&e->q, p);
	return 0;
}

struct sh_pkt *
emu_dequeue(struct emulate *e, uint64_t now)
{
	if (e->q.head == NULL || e->q.head->enq_ns > now)
		return NULL;
	return sh_pkt_list_pop(&e->q);
}

uint64_t
emu_next_time(const struct emulate *e)
{
	return e->q.head != NULL ? e->q.head->enq_ns : UINT64_MAX;
}

uint32_t
emu_count(const struct emulate *e)
{
	return e->q.count;
}

void
emu_flush(struct emulate *e, struct sh_pkt_list *out)
{
	struct sh_pkt *p;

	while ((p = sh_pkt_list_pop(&e->q)) != NULL)
		sh_pkt_list_push(out, p);
}
