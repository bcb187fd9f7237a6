/*
 * A small deterministic simulator for the schedulers: synthetic sources
 * (constant rate, on/off, fixed or mixed sizes, TCP ACK streams) make real
 * Ethernet/IPv4/TCP-or-UDP headers in preallocated packets and feed one
 * sched instance in simulated nanoseconds; the "link" dequeues whenever the
 * scheduler says a packet is due (optionally paced by an external line rate
 * for unshaped runs). Every packet is tracked so the tests can check the
 * accounting identity and per-source throughput, delay and drops.
 */
#ifndef SHAPER_TEST_SIM_H
#define SHAPER_TEST_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "shaper/pkt.h"
#include "shaper/sched.h"

#define SIM_HDR_LEN  128  /* header bytes kept per packet */
#define SIM_MBUF_MEM 2304 /* buffer memory a packet pins (mbuf-like) */
#define SIM_NS       1000000000ull

struct sim_pkt {
	struct sh_pkt pkt; /* first: a struct sh_pkt * converts back */
	uint64_t born;
	uint32_t src;
	uint32_t seq;
	uint8_t buf[SIM_HDR_LEN];
};

enum sim_l4 {
	SIM_UDP = 17,
	SIM_TCP = 6,
};

struct sim_src {
	/* Identity: addresses host order, ports, protocol, DS field. */
	uint32_t saddr, daddr;
	uint16_t sport, dport;
	uint8_t proto; /* enum sim_l4 */
	uint8_t dscp;
	uint8_t ecn;  /* 0 Not-ECT, 2 ECT(0), 1 ECT(1) */
	bool tcp_ack; /* pure-ACK stream: 54-byte ACKs, ack number rising */

	/* Traffic. rate (bytes/s of L2 length) or interval (ns) spaces packets. */
	uint64_t rate;
	uint64_t interval;
	uint32_t size;          /* L2 length; 0 = cycle through a mix 64..1514 */
	uint32_t burst;         /* packets per emission (default 1) */
	uint64_t start, stop;   /* stop 0 = never */
	uint64_t on_ns, off_ns; /* on/off pattern; on_ns 0 = always on */
	/*
	 * Sender hiccups: the source is away for the last hiccup_ns of every
	 * hiccup_every ns and then sends what it missed back to back, as a load
	 * generator does when its core is taken for a moment (0 = never).
	 */
	uint64_t hiccup_ns, hiccup_every;

	/* Derived hashes (set by sim_add_src; tests may override). */
	uint32_t flow_hash, src_hash, dst_hash;

	/* Optional per-packet records, arrays owned by the test. */
	uint64_t *delays; /* sojourn of delivered packets, ns */
	uint32_t delays_cap, delays_n;

	/* Running state. */
	uint64_t next;
	uint64_t on_start;
	uint64_t cum_bytes; /* bytes emitted since on_start, for exact spacing */
	uint32_t seq, mix;
	uint32_t last_rx_seq;
	uint32_t ack_no;

	/* Counters. */
	uint64_t tx_pkts, tx_bytes;
	uint64_t rx_pkts, rx_bytes, rx_adj;
	uint64_t meas_bytes, meas_adj, meas_pkts; /* delivered inside the window */
	uint64_t drops[SHAPER_DROP_MAX];
	uint64_t ce;
	uint64_t backlog_bytes;
	uint32_t backlog_pkts, max_backlog_pkts;
	uint64_t reorders;
};

struct sim;

/* Called for each delivered packet before it returns to the pool. */
typedef void (*sim_deliver_fn)(struct sim *sim, struct sim_pkt *p, void *ctx);
/* Called for each dropped packet (after counting). */
typedef void (*sim_drop_fn)(struct sim *sim, struct sim_pkt *p, void *ctx);
/* Called for each new packet before it is enqueued. */
typedef void (*sim_emit_fn)(struct sim *sim, struct sim_pkt *p, void *ctx);

struct sim {
	struct sched *s;
	struct sched_params params;
	uint64_t now;
	struct sim_src *srcs;
	uint32_t nsrc, src_cap;

	struct sim_pkt *pool;
	uint32_t *free_idx;
	uint32_t pool_len, nfree;
	uint32_t mem_per_pkt; /* 0 = SIM_MBUF_MEM */

	uint64_t line_rate; /* external line (bytes/s of adj_len), 0 = none */
	uint64_t line_free;

	uint64_t meas_start, meas_end; /* measurement window for meas_* */

	/* A stall of the whole worker: no arrival is taken and nothing is sent
	 * in [pause_from, pause_until); arrivals wait (as in a NIC ring) and are
	 * enqueued together when it ends. */
	uint64_t pause_from, pause_until;

	/* Totals. */
	uint64_t enq, deq, drops[SHAPER_DROP_MAX];
	uint64_t in_pkts, in_bytes, in_mem, max_in_mem;
	uint64_t stalls;
	uint64_t pool_empty;

	/* Check that each overflow drop comes from the source with the
	 * largest backlog (sources map 1:1 to queues in such tests). */
	bool check_fattest;
	uint64_t overflow_checked, fattest_violations;

	sim_deliver_fn on_deliver;
	sim_drop_fn on_drop;
	sim_emit_fn on_emit;
	void *ctx;
};

/* Create with params p (discipline, rate...), a pool of pool_len packets. */
struct sim *sim_new(const struct sched_params *p, uint32_t pool_len, uint32_t max_src);
void sim_free(struct sim *sim);

/* Add a source; returns its index. Fills hashes from the identity. */
uint32_t sim_add_src(struct sim *sim, const struct sim_src *tmpl);

/* A source template with sensible defaults for host pair (a, b), flow n. */
struct sim_src sim_src_udp(uint32_t saddr, uint32_t daddr, uint16_t sport, uint64_t rate,
			   uint32_t size);

/* Run until simulated time until (ns). */
void sim_run(struct sim *sim, uint64_t until);

/* Stop all sources and run until the scheduler is empty. */
void sim_drain(struct sim *sim);

/* Enqueue one packet of source i now (outside the source's own pacing). */
struct sim_pkt *sim_emit(struct sim *sim, uint32_t i);

/* Dequeue once at now; returns the delivered packet's source or -1. */
int sim_dequeue_once(struct sim *sim);

/*
 * Assert enqueued = dequeued + dropped(by reason) + backlog, both from the
 * scheduler's stats and from the simulator's own tracking, and that the
 * pool is whole.
 */
void sim_check_accounting(struct sim *sim);

/*
 * A pool of packets for a test that drives its scheduler itself (the
 * per-subscriber scheduler's worlds) rather than through struct sim.
 */
struct sim_pool {
	struct sim_pkt *pkts;
	uint32_t *free_idx;
	uint32_t len, nfree;
};

void sim_pool_init(struct sim_pool *pl, uint32_t len);
void sim_pool_destroy(struct sim_pool *pl);
/* A free packet (the test fails if none is left). */
struct sim_pkt *sim_pool_take(struct sim_pool *pl);
void sim_pool_give(struct sim_pool *pl, struct sim_pkt *p);

/* Packets out of the pool: queued in the scheduler, or in the test's hands. */
static inline uint32_t
sim_pool_held(const struct sim_pool *pl)
{
	return pl->len - pl->nfree;
}

struct sub_sched;
struct sub_set;
struct classify_key;
/*
 * Builds p as a len-byte frame of src, classifies it with key and queues it
 * downstream in ss at now (drops onto dropped); the test fails unless it
 * goes to subscriber want (SUB_NONE: an address no subscriber owns).
 */
void sim_sub_enqueue(struct sub_sched *ss, const struct classify_key *key, struct sim_src *src,
		     uint32_t want, struct sim_pkt *p, uint32_t len, uint64_t now,
		     struct sh_pkt_list *dropped);
/* Flushes both directions of ss and frees it, the link's schedulers and set. */
void sim_sub_world_free(struct sub_sched *ss, struct sched *link[2], struct sub_set *set);

/* Host order IPv4 address helper: 10.x.y.z. */
static inline uint32_t
sim_ip(uint8_t x, uint8_t y, uint8_t z)
{
	return (10u << 24) | ((uint32_t)x << 16) | ((uint32_t)y << 8) | z;
}

/* Build a frame for source i into p (headers only; len may exceed them). */
void sim_build(struct sim_src *src, struct sim_pkt *p, uint32_t len);

/* RFC 1071 checksum over an IPv4 header; 0 if valid. */
uint16_t sim_ipv4_csum(const uint8_t *ip, uint32_t hlen);

/* Jain's fairness index of n values. */
double sim_jain(const double *x, uint32_t n);

/* p-th percentile (0..100) of n values (sorted in place). */
uint64_t sim_percentile(uint64_t *v, uint32_t n, double p);

/*
 * Fail the test program if it is still running seconds from now (0 cancels):
 * a scheduler call that never returns (a loop that cannot progress) then
 * fails with what as its reason instead of hanging until the harness kills
 * it. The bound is for a hang, not for speed: keep it many times the
 * expected run time, sanitizers and a busy machine included.
 */
void sim_watchdog(unsigned int seconds, const char *what);

/* True when SHAPER_SIM_SHORT is set: the sanitizer builds' run of the longest
 * scenarios (tests/sim/meson.build), which checks the same code over less
 * simulated time, since instrumented code runs several times slower. */
bool sim_short(void);

/* Print a measured figure for the report (greppable "# figure:"). */
#define SIM_FIGURE(...)                                                                            \
	do {                                                                                       \
		printf("# figure: " __VA_ARGS__);                                                  \
		printf("\n");                                                                      \
		fflush(stdout);                                                                    \
	} while (0)

#endif
