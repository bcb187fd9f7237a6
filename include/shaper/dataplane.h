/*
 * The data plane: ports (any PMD: PCI, vdev, existing name), the mbuf pool
 * whose private area holds each packet's struct sh_pkt, and the worker loop
 * that moves frames LAN->WAN (upstream) and WAN->LAN (downstream). With N
 * workers each direction is N shards, one scheduler each: worker i owns
 * rx and tx queue i of both ports and the i-th shard of both directions,
 * frames reach their shard by RSS or by software steering (steer.c), and
 * the shards of a direction share its link rate (shaper/share.h).
 *
 * One header per object, as DPDK's ip_pipeline example keeps them:
 * dp_port.h (ports, pools), dp_worker.h (shards, workers, the loop),
 * dp_steer.h (steering between shards), dp_stick.h (one port on a stick),
 * dp_mailbox.h (control to worker),
 * dp_budget.h (the mbuf budget); this one adds the control backend and
 * the clock, and includes them all.
 */
#ifndef SHAPER_DATAPLANE_H
#define SHAPER_DATAPLANE_H

#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "shaper/autorate.h"
#include "shaper/classify.h"
#include "shaper/config.h"
#include "shaper/control.h"
#include "shaper/emulate.h"
#include "shaper/owd.h"
#include "shaper/pkt.h"
#include "shaper/rtt.h"
#include "shaper/sched.h"
#include "shaper/share.h"

#include "shaper/dp_budget.h"
#include "shaper/dp_mailbox.h"
#include "shaper/dp_port.h"
#include "shaper/dp_steer.h"
#include "shaper/dp_stick.h"
#include "shaper/dp_worker.h"

/* What the control server needs to reach the data plane. */
struct dp_control {
	uint32_t n_shards;
	struct dp_dir *dirs[SHAPER_NUM_DIRS][SHAPER_MAX_WORKERS]; /* each direction's shards */
	struct dp_port *ports[SHAPER_NUM_PORTS];  /* NULL: no such port (one on a stick) */
	const char *port_label[SHAPER_NUM_PORTS]; /* its name in stats; NULL: "wan", "lan" */
	unsigned int timeout_ms;      /* mailbox answer timeout; 0 = DP_CALL_TIMEOUT_MS */
	struct dp_failopen *failopen; /* NULL without fail-open */
};

void dp_control_backend(struct dp_control *ctl, struct ctl_backend *be);

/* Register /shaper/... telemetry commands served through be. */
void dp_telemetry_register(const struct ctl_backend *be);
/*
 * Refuse further /shaper/... requests and wait for those in flight: after
 * this, what be reaches may be freed (the telemetry thread lives until
 * rte_eal_cleanup).
 */
void dp_telemetry_shutdown(void);

/*
 * Nanoseconds since start from the TSC (set up once by dp_clock_init, which
 * measures the TSC's frequency against CLOCK_MONOTONIC_RAW over at least
 * 100 ms from dp_clock_begin, sleeping only for what start-up between the
 * two did not already take; without dp_clock_begin, over 100 ms from now).
 */
void dp_clock_begin(void);
void dp_clock_init(void);
uint64_t dp_now_ns(void);
uint64_t dp_tsc_hz(void); /* the frequency in use */
/* Measure the TSC against CLOCK_MONOTONIC_RAW over ms milliseconds; 0 on failure. */
uint64_t dp_tsc_hz_measure(unsigned int ms);
/* Ticks per second from two (tsc, ns) samples; 0 if they do not advance. */
uint64_t dp_tsc_hz_from_samples(uint64_t tsc0, uint64_t ns0, uint64_t tsc1, uint64_t ns1);

#endif
