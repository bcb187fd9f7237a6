/*
 * The L4S step of CAKE and fq_codel in simulated time: the marking law
 * packet by packet (ECT(1) marked past the step and only past it, ECT(0)
 * left to COBALT or CoDel, CE judged by its flow's history, wash keeping
 * ECT(1), DSCP 45 with nqb), and closed-loop senders against it; each test
 * but nqb's runs once per discipline (fq_codel's figures say so). A window sender here is
 * ACK-clocked over a fixed base RTT (the whole path's delay lumped after the shaper): a scalable
 * one is DCTCP-like (alpha, the EWMA of the marked fraction with gain 1/16, and once a round trip
 * cwnd *= 1 - alpha/2 if any mark came), the classic one is Not-ECT with Reno's growth and CUBIC's
 * 0.7 back-off once a round trip on a loss. Figures are printed ("# figure:") and asserted: a
 * scalable flow alone at <= 1 ms p99 sojourn with >= 95 % of the rate, a scalable and a classic
 * flow each within 10 % of half, and a tunnel (one flow queue) carrying both kinds beside a
 * scalable flow.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"

#define MBIT(x) ((uint64_t)(x)*125000ull)
#define US(x)   ((uint64_t)(x)*1000ull)
#define MS(x)   ((uint64_t)(x)*1000000ull)
#define SEC(x)  ((uint64_t)(x)*SIM_NS)

#define ECT1 1
#define ECT0 2
#define CE   3

static enum sched_discipline cake = SCHED_DISC_CAKE, fq_codel = SCHED_DISC_FQ_CODEL;

/* The discipline a test runs (its prestate), and its figures' prefix. */
static enum sched_discipline
disc_of(void **state)
{
	return *(enum sched_discipline *)*state;
}

static const char *
tag(enum sched_discipline d)
{
	return d == SCHED_DISC_FQ_CODEL ? "fq_codel " : "";
}

static void
l4s_params(struct sched_params *p, enum sched_discipline d, uint64_t rate, bool l4s)
{
	sched_params_default(p, d);
	p->rate = rate;
	p->diffserv = SCHED_BESTEFFORT;
	p->l4s = l4s;
}

/* ----------------------------------------------------- the marking law */

/* The step at rate: l4s_step, at least 1.5 MTU times (COBALT's target floor; fq_codel's too). */
static uint64_t
step_at(uint64_t rate)
{
	uint64_t floor = 1514ull * SIM_NS / rate * 3 / 2;

	return US(SCHED_L4S_STEP_US) > floor ? US(SCHED_L4S_STEP_US) : floor;
}

struct law_log {
	uint64_t step_ns, target_ns;
	uint64_t l4s_pkts, l4s_ce, l4s_wrong;             /* wrong: CE iff past the step fails */
	uint64_t classic_pkts, classic_ce, classic_early; /* early: CE within target */
	uint64_t ect1_kept;                               /* ECT(1) left as ECT(1) below the step */
};

static void
law_deliver(struct sim *sim, struct sim_pkt *p, void *ctx)
{
	struct law_log *l = ctx;
	uint64_t soj = sim->now - p->pkt.enq_ns;
	uint8_t ecn = p->buf[15] & 3;
	bool ce = ecn == CE;

	assert_int_equal(sim_ipv4_csum(p->buf + 14, 20), 0);
	if (sim->srcs[p->src].ecn == ECT1) {
		l->l4s_pkts++;
		l->l4s_ce += ce;
		/* Below COBALT's target the step alone decides. */
		if (soj <= l->target_ns && ce != (soj > l->step_ns))
			l->l4s_wrong++;
		if (!ce && ecn == ECT1)
			l->ect1_kept++;
	} else {
		l->classic_pkts++;
		l->classic_ce += ce;
		if (ce && soj <= l->target_ns)
			l->classic_early++;
	}
}

/*
 * Two unresponsive UDP flows each at 60 % of the rate (so both queue): one
 * ECT(1), one ECT(0). Every ECT(1) packet that waited past the step is
 * marked and none below it; ECT(0) gets only COBALT's marks, past target.
 */
static void
test_marking_law(void **state)
{
	struct sched_params p;
	struct law_log log = { .step_ns = step_at(MBIT(20)), .target_ns = MS(5) };
	struct sched_stats st;
	struct sim *sim;
	struct sim_src a, b;
	enum sched_discipline d = disc_of(state);

	l4s_params(&p, d, MBIT(20), true);
	p.wash = d == SCHED_DISC_CAKE; /* wash rewrites the DSCP and keeps the ECN field */
	sim = sim_new(&p, 20000, 4);
	a = sim_src_udp(sim_ip(1, 0, 1), sim_ip(2, 0, 1), 1000, MBIT(12), 1000);
	a.ecn = ECT1;
	a.dscp = 10;
	a.on_ns = MS(100); /* the queue drains between bursts: packets below the step */
	a.off_ns = MS(100);
	b = sim_src_udp(sim_ip(1, 0, 2), sim_ip(2, 0, 2), 1001, MBIT(12), 1000);
	b.ecn = ECT0;
	sim_add_src(sim, &a);
	sim_add_src(sim, &b);
	sim->on_deliver = law_deliver;
	sim->ctx = &log;
	sim_run(sim, SEC(2));
	sched_get_stats(sim->s, &st);
	SIM_FIGURE("%sl4s law: ECT(1) %llu delivered, %llu CE (step marks %llu), %llu misjudged; "
		   "ECT(0) %llu delivered, %llu CE, %llu within target",
		   tag(d), (unsigned long long)log.l4s_pkts, (unsigned long long)log.l4s_ce,
		   (unsigned long long)st.tins[0].step_marks, (unsigned long long)log.l4s_wrong,
		   (unsigned long long)log.classic_pkts, (unsigned long long)log.classic_ce,
		   (unsigned long long)log.classic_early);
	assert_true(log.l4s_pkts > 1000 && log.classic_pkts > 1000);
	assert_true(log.l4s_ce > 100);
	assert_int_equal(log.l4s_wrong, 0);
	assert_true(log.ect1_kept > 10); /* neither washed nor bleached */
	assert_true(log.classic_ce > 0); /* COBALT (CoDel) still marks ECT(0) */
	assert_int_equal(log.classic_early, 0);
	assert_int_equal(st.tins[0].ect1_packets, sim->srcs[0].tx_pkts);
	assert_true(st.tins[0].step_marks > 0 && st.tins[0].step_marks <= log.l4s_ce);
	assert_int_equal(st.tins[0].step_marks + st.tins[0].ecn_mark, log.l4s_ce + log.classic_ce);
	sim_drain(sim);
	sim_check_accounting(sim);
	sim_free(sim);

	/* Off: ECT(1) is ECT(0), as in sch_cake and Linux's fq_codel; nothing counted. */
	memset(&log, 0, sizeof(log));
	log.step_ns = step_at(MBIT(20));
	log.target_ns = MS(5);
	l4s_params(&p, d, MBIT(20), false);
	sim = sim_new(&p, 20000, 4);
	sim_add_src(sim, &a);
	sim_add_src(sim, &b);
	sim->on_deliver = law_deliver;
	sim->ctx = &log;
	sim_run(sim, SEC(2));
	sched_get_stats(sim->s, &st);
	assert_true(log.l4s_wrong > 100); /* waited past the step, not marked */
	assert_int_equal(st.tins[0].step_marks, 0);
	assert_int_equal(st.tins[0].ect1_packets, 0);
	sim_free(sim);
}

/* CE is L4S by default and after ECT(1), classic after ECT(0) or Not-ECT. */
static void
test_ce_history(void **state)
{
	static const struct {
		uint8_t before; /* the flow's packets before, queued first */
		bool l4s;       /* then a CE packet is judged L4S */
	} cases[] = { { ECT1, true }, { ECT0, false }, { 0, false }, { CE, true } };
	struct sched_params p;
	enum sched_discipline d = disc_of(state);

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct sched_stats st;
		struct sim *sim;
		struct sim_src s;
		struct sim_pkt *q;
		uint32_t i;

		l4s_params(&p, d, MBIT(10), true);
		sim = sim_new(&p, 64, 2);
		s = sim_src_udp(sim_ip(1, 0, 1), sim_ip(2, 0, 1), 1000, 0, 1514);
		s.ecn = cases[k].before;
		sim_add_src(sim, &s);
		for (i = 0; i < 3; i++)
			sim_emit(sim, 0);
		sim->srcs[0].ecn = CE;
		q = sim_emit(sim, 0);
		assert_non_null(q);
		assert_int_equal(!!(q->pkt.flags & SH_PKT_L4S), cases[k].l4s);
		sched_get_stats(sim->s, &st);
		assert_int_equal(st.tins[0].ect1_packets, cases[k].before == ECT1 ? 3 : 0);
		sim_drain(sim);
		sim_free(sim);
	}
}

/* DSCP 45: best effort as in sch_cake, the VA (44) tin with nqb. */
static void
test_nqb(void **state)
{
	static const struct {
		enum sched_diffserv mode;
		uint8_t nqb_tin; /* internal tin of 44 and, with nqb, 45 */
	} modes[] = { { SCHED_DIFFSERV3, 2 },
		      { SCHED_DIFFSERV4, 3 },
		      { SCHED_DIFFSERV8, 6 },
		      { SCHED_BESTEFFORT, 0 },
		      { SCHED_PRECEDENCE, 5 } };
	struct sched_params p;

	(void)state;
	for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
		for (int nqb = 0; nqb < 2; nqb++) {
			struct sim *sim;
			struct sim_src s;
			struct sim_pkt *q;
			uint8_t be, va;

			l4s_params(&p, SCHED_DISC_CAKE, MBIT(10), false);
			p.diffserv = modes[k].mode;
			p.nqb = nqb;
			sim = sim_new(&p, 64, 2);
			s = sim_src_udp(sim_ip(1, 0, 1), sim_ip(2, 0, 1), 1000, 0, 200);
			s.dscp = 0;
			sim_add_src(sim, &s);
			be = sim_emit(sim, 0)->pkt.tin;
			sim->srcs[0].dscp = 44;
			va = sim_emit(sim, 0)->pkt.tin;
			sim->srcs[0].dscp = 45;
			q = sim_emit(sim, 0);
			if (modes[k].mode != SCHED_PRECEDENCE)
				assert_int_equal(va, modes[k].nqb_tin);
			assert_int_equal(q->pkt.tin, nqb || modes[k].mode == SCHED_PRECEDENCE
								     ? modes[k].nqb_tin
								     : be);
			sim_drain(sim);
			sim_free(sim);
		}
	}
}

/* ----------------------------------------------------- closed-loop senders */

#define EV_RING (1u << 15)

struct wflow {
	bool scalable;
	uint64_t rtt; /* base round trip, ns */
	double cwnd;  /* packets */
	bool ss;
	uint32_t inflight;
	uint32_t round_end; /* seq that ends the current round trip */
	uint32_t acked, marked;
	double alpha;
	uint32_t recover; /* classic: no second back-off before this seq */
	/* ACKs and losses on their way back: (time, seq, kind) in time order. */
	struct {
		uint64_t t;
		uint32_t seq;
		uint8_t kind; /* 0 ack, 1 ack with CE echoed, 2 loss */
	} ev[EV_RING];
	uint32_t ev_head, ev_tail;
	/* Measured from meas_start: sojourns (ns) and delivered bytes. */
	uint64_t *soj;
	uint32_t soj_n, soj_cap;
	uint64_t bytes, ce, losses;
};

struct world {
	struct sim *sim;
	struct wflow *f;
	uint32_t n;
	uint64_t meas_start;
	/* The tunnel: its classic packets queued now, and step marks made beside them. */
	uint32_t tunnel_srcs; /* sources 0..tunnel_srcs-1 share one queue; 0 = none */
	int64_t tunnel_classic;
	uint64_t tunnel_step_marks, tunnel_mixed_marks;
};

/* A tunnel packet's source is classic (the world's sources 1.. of the tunnel). */
static bool
tunnel_classic(const struct world *w, uint32_t src)
{
	return src < w->tunnel_srcs && !w->f[src].scalable;
}

static void
w_emit(struct sim *sim, struct sim_pkt *p, void *ctx)
{
	struct world *w = ctx;

	(void)sim;
	w->tunnel_classic += tunnel_classic(w, p->src);
}

static void
ev_push(struct wflow *f, uint64_t t, uint32_t seq, uint8_t kind)
{
	assert_true(f->ev_tail - f->ev_head < EV_RING);
	f->ev[f->ev_tail % EV_RING].t = t;
	f->ev[f->ev_tail % EV_RING].seq = seq;
	f->ev[f->ev_tail % EV_RING].kind = kind;
	f->ev_tail++;
}

static void
w_deliver(struct sim *sim, struct sim_pkt *p, void *ctx)
{
	struct world *w = ctx;
	struct wflow *f = &w->f[p->src];
	bool ce = (p->buf[15] & 3) == CE;

	w->tunnel_classic -= tunnel_classic(w, p->src);
	if (p->src < w->tunnel_srcs && f->scalable && ce && sim->now >= w->meas_start &&
	    sim->now - p->pkt.enq_ns <= MS(5)) {
		/* Within target: the step's mark, not COBALT's. */
		w->tunnel_step_marks++;
		w->tunnel_mixed_marks += w->tunnel_classic != 0;
	}
	ev_push(f, sim->now + f->rtt, p->seq, ce ? 1 : 0);
	if (sim->now >= w->meas_start) {
		f->bytes += p->pkt.len;
		f->ce += ce;
		if (f->soj_n < f->soj_cap)
			f->soj[f->soj_n++] = sim->now - p->pkt.enq_ns;
	}
}

static void
w_drop(struct sim *sim, struct sim_pkt *p, void *ctx)
{
	struct world *w = ctx;
	struct wflow *f = &w->f[p->src];

	w->tunnel_classic -= tunnel_classic(w, p->src);
	ev_push(f, sim->now + f->rtt, p->seq, 2);
	if (sim->now >= w->meas_start)
		f->losses++;
}

static void
w_send(struct world *w, uint32_t i)
{
	struct wflow *f = &w->f[i];

	while (f->inflight < (uint32_t)f->cwnd) {
		if (sim_emit(w->sim, i) == NULL)
			fail_msg("packet pool exhausted");
		f->inflight++;
	}
}

/* One ACK (or loss report) at the sender. */
static void
w_feedback(struct world *w, uint32_t i, uint32_t seq, uint8_t kind)
{
	struct wflow *f = &w->f[i];
	uint32_t next = w->sim->srcs[i].seq;

	f->inflight--;
	if (kind == 2 || (kind == 1 && !f->scalable)) {
		/* Classic response (and anyone's to a loss): once a round trip. */
		if ((int32_t)(seq - f->recover) >= 0) {
			f->cwnd *= f->scalable ? 0.5 : 0.7;
			f->recover = next;
		}
		f->ss = false;
	} else {
		if (kind == 1)
			f->ss = false;
		f->cwnd += f->ss ? 1.0 : 1.0 / f->cwnd;
	}
	if (f->scalable && kind != 2) {
		f->acked++;
		f->marked += kind == 1;
		if ((int32_t)(seq - f->round_end) >= 0) {
			/* DCTCP: alpha tracks the marked fraction; one reduction a round trip. */
			double frac = (double)f->marked / (double)f->acked;

			f->alpha += (frac - f->alpha) / 16.0;
			if (f->marked != 0)
				f->cwnd *= 1.0 - f->alpha / 2.0;
			f->acked = f->marked = 0;
			f->round_end = next;
		}
	}
	if (f->cwnd < 2.0)
		f->cwnd = 2.0;
}

static void
world_run(struct world *w, uint64_t until)
{
	struct sim *sim = w->sim;
	uint32_t i;

	for (i = 0; i < w->n; i++) {
		w->f[i].cwnd = 10;
		w->f[i].ss = true;
		w->f[i].alpha = 1.0; /* DCTCP's initial alpha */
		w_send(w, i);
	}
	while (sim->now < until) {
		uint64_t t = sched_next_time(sim->s, sim->now), te = UINT64_MAX;

		for (i = 0; i < w->n; i++) {
			struct wflow *f = &w->f[i];

			if (f->ev_head != f->ev_tail && f->ev[f->ev_head % EV_RING].t < te)
				te = f->ev[f->ev_head % EV_RING].t;
		}
		if (t <= sim->now) {
			if (sim_dequeue_once(sim) >= 0)
				continue;
			t = sim->now + 1000; /* held back: look again a microsecond on */
		}
		sim->now = t < te ? t : te;
		if (sim->now > until)
			sim->now = until;
		for (i = 0; i < w->n; i++) {
			struct wflow *f = &w->f[i];
			bool any = false;

			while (f->ev_head != f->ev_tail &&
			       f->ev[f->ev_head % EV_RING].t <= sim->now) {
				w_feedback(w, i, f->ev[f->ev_head % EV_RING].seq,
					   f->ev[f->ev_head % EV_RING].kind);
				f->ev_head++;
				any = true;
			}
			if (any)
				w_send(w, i);
		}
	}
}

/* Source i of a world: a TCP-like flow, ECT(1) if scalable, Not-ECT if not. */
static void
world_add(struct world *w, bool scalable, uint64_t rtt, uint32_t host)
{
	struct sim_src s = sim_src_udp(sim_ip(1, 0, (uint8_t)host), sim_ip(2, 0, (uint8_t)host),
				       (uint16_t)(2000 + w->n), 0, 1514);
	struct wflow *f = &w->f[w->n];

	s.proto = SIM_TCP;
	s.ecn = scalable ? ECT1 : 0;
	sim_add_src(w->sim, &s);
	f->scalable = scalable;
	f->rtt = rtt;
	f->soj_cap = 1u << 20;
	f->soj = calloc(f->soj_cap, sizeof(*f->soj));
	assert_non_null(f->soj);
	w->n++;
}

static void
world_init(struct world *w, const struct sched_params *p, uint32_t nflows, uint64_t meas_start)
{
	memset(w, 0, sizeof(*w));
	w->sim = sim_new(p, 40000, nflows);
	w->f = calloc(nflows, sizeof(*w->f));
	assert_non_null(w->f);
	w->meas_start = meas_start;
	w->sim->on_deliver = w_deliver;
	w->sim->on_drop = w_drop;
	w->sim->on_emit = w_emit;
	w->sim->ctx = w;
}

static void
world_free(struct world *w)
{
	for (uint32_t i = 0; i < w->n; i++)
		free(w->f[i].soj);
	free(w->f);
	sim_free(w->sim);
}

static double
pctl_ms(struct wflow *f, double pc)
{
	return f->soj_n != 0 ? (double)sim_percentile(f->soj, f->soj_n, pc) / 1e6 : 0.0;
}

/* Share of the rate flow f carried from meas_start to until. */
static double
share(const struct world *w, const struct wflow *f, uint64_t rate, uint64_t until)
{
	return (double)f->bytes / ((double)rate * (double)(until - w->meas_start) / 1e9);
}

#define RATE MBIT(100)
#define RTT  MS(20)
#define RUN  SEC(20)
#define MEAS SEC(5)

/* A scalable flow alone at the shaped rate; and the same flow with l4s off. */
static void
test_scalable_alone(void **state)
{
	struct sched_params p;
	struct sched_stats st;
	struct world w;
	double p99, sh, p99_off;
	enum sched_discipline d = disc_of(state);

	sim_watchdog(600, "test_scalable_alone");
	l4s_params(&p, d, RATE, true);
	world_init(&w, &p, 1, MEAS);
	world_add(&w, true, RTT, 1);
	world_run(&w, RUN);
	sched_get_stats(w.sim->s, &st);
	sh = share(&w, &w.f[0], RATE, RUN);
	p99 = pctl_ms(&w.f[0], 99);
	SIM_FIGURE("%sl4s alone: 100 Mbit/s, 20 ms RTT: %.3f of the rate, sojourn p50 %.3f ms "
		   "p99 %.3f ms, %llu step marks, %llu %s marks, %llu losses",
		   tag(d), sh, pctl_ms(&w.f[0], 50), p99, (unsigned long long)st.tins[0].step_marks,
		   (unsigned long long)st.tins[0].ecn_mark,
		   d == SCHED_DISC_CAKE ? "COBALT" : "CoDel", (unsigned long long)w.f[0].losses);
	assert_true(sh >= 0.95);
	assert_true(p99 <= 1.0);
	assert_true(st.tins[0].step_marks > 0);
	assert_int_equal(w.f[0].losses, 0);
	world_free(&w);

	/* The same sender without l4s: COBALT's (CoDel's) 5 ms law. */
	l4s_params(&p, d, RATE, false);
	world_init(&w, &p, 1, MEAS);
	world_add(&w, true, RTT, 1);
	world_run(&w, RUN);
	p99_off = pctl_ms(&w.f[0], 99);
	SIM_FIGURE("%sl4s off, same sender: %.3f of the rate, sojourn p50 %.3f ms p99 %.3f ms",
		   tag(d), share(&w, &w.f[0], RATE, RUN), pctl_ms(&w.f[0], 50), p99_off);
	assert_true(p99_off > 3.0);
	world_free(&w);
}

/* A scalable and a classic flow in one tin (two flow queues). */
static void
test_scalable_and_classic(void **state)
{
	struct sched_params p;
	struct sched_stats st;
	struct world w;
	double s0, s1, p99, c50;
	enum sched_discipline d = disc_of(state);

	sim_watchdog(600, "test_scalable_and_classic");
	l4s_params(&p, d, RATE, true);
	world_init(&w, &p, 2, MEAS);
	world_add(&w, true, RTT, 1);
	world_add(&w, false, RTT, 2);
	world_run(&w, RUN);
	sched_get_stats(w.sim->s, &st);
	s0 = share(&w, &w.f[0], RATE, RUN);
	s1 = share(&w, &w.f[1], RATE, RUN);
	p99 = pctl_ms(&w.f[0], 99);
	c50 = pctl_ms(&w.f[1], 50);
	SIM_FIGURE("%sl4s + classic: scalable %.3f of the rate, p99 %.3f ms; classic %.3f, "
		   "sojourn p50 %.3f ms p99 %.3f ms, %llu losses",
		   tag(d), s0, p99, s1, c50, pctl_ms(&w.f[1], 99),
		   (unsigned long long)w.f[1].losses);
	assert_true(fabs(s0 - 0.5) <= 0.05);
	assert_true(fabs(s1 - 0.5) <= 0.05);
	assert_true(p99 <= 1.0);
	/* COBALT (CoDel) holds the classic queue about its 5 ms target. */
	assert_true(c50 >= 1.0 && c50 <= 7.5);
	assert_true(w.f[1].losses > 0);
	assert_int_equal(w.f[1].ce, 0);
	world_free(&w);
}

/*
 * A tunnel: one scalable and two classic flows whose packets all hash to
 * one flow queue (the outer header's 5-tuple), beside a scalable flow of
 * its own. The mixed queue gets COBALT's law and no step marks, so its
 * scalable flow is not starved by a queue its classic flows keep at target;
 * the flow beside it keeps its millisecond.
 */
static void
test_tunnel(void **state)
{
	struct sched_params p;
	struct sched_stats st;
	struct world w;
	double tun[3], out, out99, tun50;
	uint32_t i;
	enum sched_discipline d = disc_of(state);

	sim_watchdog(600, "test_tunnel");
	l4s_params(&p, d, RATE, true);
	p.isolation = SCHED_FLOWS;
	world_init(&w, &p, 4, MEAS);
	world_add(&w, true, RTT, 1);
	world_add(&w, false, RTT, 1);
	world_add(&w, false, RTT, 1);
	world_add(&w, true, RTT, 2);
	w.tunnel_srcs = 3;
	for (i = 1; i < 3; i++) {
		w.sim->srcs[i].flow_hash = w.sim->srcs[0].flow_hash;
		w.sim->srcs[i].src_hash = w.sim->srcs[0].src_hash;
		w.sim->srcs[i].dst_hash = w.sim->srcs[0].dst_hash;
	}
	world_run(&w, RUN);
	sched_get_stats(w.sim->s, &st);
	for (i = 0; i < 3; i++)
		tun[i] = share(&w, &w.f[i], RATE, RUN);
	out = share(&w, &w.f[3], RATE, RUN);
	out99 = pctl_ms(&w.f[3], 99);
	tun50 = pctl_ms(&w.f[0], 50);
	SIM_FIGURE("%sl4s tunnel: in it scalable %.3f (CE %llu, %llu of them step marks, %llu "
		   "beside classic packets; sojourn p50 %.3f ms), classic %.3f and %.3f (p50 %.3f "
		   "ms); beside it scalable %.3f, p99 %.3f ms; step marks %llu, %s marks %llu",
		   tag(d), tun[0], (unsigned long long)w.f[0].ce,
		   (unsigned long long)w.tunnel_step_marks,
		   (unsigned long long)w.tunnel_mixed_marks, tun50, tun[1], tun[2],
		   pctl_ms(&w.f[1], 50), out, out99, (unsigned long long)st.tins[0].step_marks,
		   d == SCHED_DISC_CAKE ? "COBALT" : "CoDel",
		   (unsigned long long)st.tins[0].ecn_mark);
	/* Queue against queue: the tunnel and the flow beside it halve the link. */
	assert_true(fabs(out - 0.5) <= 0.05);
	assert_true(fabs(tun[0] + tun[1] + tun[2] - 0.5) <= 0.05);
	assert_true(out99 <= 1.0);
	/* Nobody in the tunnel starves; its queue stands at COBALT's target. */
	for (i = 0; i < 3; i++)
		assert_true(tun[i] >= 0.05);
	assert_true(tun50 >= 1.0 && tun50 <= 7.5);
	/* The step marks its scalable packets only while no classic packet is queued with them. */
	assert_true(w.f[0].ce > 0);
	assert_int_equal(w.tunnel_mixed_marks, 0);
	world_free(&w);
}

int
main(void)
{
/* Each test's name says the discipline it runs; its state points at it. */
#define L4S_TEST(fn, d)                                                                            \
	{                                                                                          \
#d "_" #fn, fn, NULL, NULL, &d                                                     \
	}
	const struct CMUnitTest tests[] = {
		L4S_TEST(test_marking_law, cake),
		L4S_TEST(test_ce_history, cake),
		cmocka_unit_test(test_nqb),
		L4S_TEST(test_scalable_alone, cake),
		L4S_TEST(test_scalable_and_classic, cake),
		L4S_TEST(test_tunnel, cake),
		L4S_TEST(test_marking_law, fq_codel),
		L4S_TEST(test_ce_history, fq_codel),
		L4S_TEST(test_scalable_alone, fq_codel),
		L4S_TEST(test_scalable_and_classic, fq_codel),
		L4S_TEST(test_tunnel, fq_codel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
