/*
 * Limits that more than one part of the project must agree on (the config
 * parser and the data plane, the scheduler, the daemon and shapectl),
 * defined once here. Where a size or another limit depends on one of them,
 * a _Static_assert next to that code says so.
 */
#ifndef SHAPER_LIMITS_H
#define SHAPER_LIMITS_H

/*
 * Largest rx/tx burst: sizes the worker's per-turn stack arrays, and
 * "dataplane.burst" is refused above it.
 */
#define SHAPER_BURST_MAX 256

/*
 * The frame size a direction's "mtu" may take: IPv4's minimum MTU (RFC 791)
 * up to the largest IP datagram. The config parser and every discipline's
 * validation check the same bounds.
 */
#define SHAPER_MTU_MIN 68
#define SHAPER_MTU_MAX 65535

/* The control socket when neither the config nor shapectl names one. */
#define SHAPER_DEFAULT_SOCKET "/run/shaper/shaper.sock"

#endif
