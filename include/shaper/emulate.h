/*
 * The WAN emulator: an optional delay line after the scheduler, standing in
 * for netem (the test kernels have none). Fixed delay, jitter that never
 * reorders, and random loss from a seeded generator. Plain C; time is
 * passed in. A queued packet's enq_ns holds its release time.
 */
#ifndef SHAPER_EMULATE_H
#define SHAPER_EMULATE_H

#include <stdbool.h>
#include <stdint.h>

#include "shaper/pkt.h"

struct emu_params {
	uint64_t delay_ns;  /* added to every packet */
	uint64_t jitter_ns; /* uniform in [-jitter, +jitter], clamped so order holds */
	uint32_t loss_ppm;  /* random loss, parts per million */
	uint64_t seed;
	uint32_t limit; /* packets held at most (bounded by the mbuf pool) */
};

struct emulate;

/* NULL on bad params or no memory. */
struct emulate *emu_create(const struct emu_params *p);
void emu_free(struct emulate *e);

/*
 * Change delay, jitter and loss of a running line (a path step: a reroute,
 * a satellite handover); seed and limit stay. Held packets keep their
 * release times and later ones never overtake them, so a shorter delay
 * takes effect once the line has drained to it, as on a real path.
 */
void emu_set_path(struct emulate *e, uint64_t delay_ns, uint64_t jitter_ns, uint32_t loss_ppm);

/* True if the params do anything (delay, jitter or loss). */
bool emu_params_active(const struct emu_params *p);

/*
 * Take a packet the scheduler released at now. Returns 0 if it is held, 1
 * if it was lost or the line was full (appended to dropped with its reason).
 */
int emu_enqueue(struct emulate *e, struct sh_pkt *p, uint64_t now, struct sh_pkt_list *dropped);

/* The next packet whose release time has come, or NULL. */
struct sh_pkt *emu_dequeue(struct emulate *e, uint64_t now);

/* Release time of the head packet; UINT64_MAX when empty. */
uint64_t emu_next_time(const struct emulate *e);

uint32_t emu_count(const struct emulate *e);

/* Remove every held packet, in order, onto out. */
void emu_flush(struct emulate *e, struct sh_pkt_list *out);

#endif
