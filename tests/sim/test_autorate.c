/*
 * The autorate controller against a modelled line, in 1 ms steps. Each
 * direction has a shaper (the rate autorate sets, a CoDel-like drop when
 * its queue stands above 5 ms for 100 ms, as CAKE's COBALT does) and a
 * modem (its own rate and a drop-tail buffer): upstream the shaper feeds
 * the modem, downstream the modem feeds the shaper. TCP flows are fluid
 * Reno: each sends cwnd per round trip (so it is clocked by whichever
 * queue is the bottleneck, the modem's when the modem is slower), grows a
 * segment per round trip (doubling in slow start) and halves on a drop,
 * once per round trip; its ACKs (a thirtieth of its bytes) go the other
 * way through the other direction's shaper and modem. Each flow gives one
 * WAN-side RTT sample per round trip (what the passive tap gets: one TSval
 * or, for uploads without timestamps, one segment in flight; a download
 * without timestamps gives only its handshake, the first), against a
 * baseline kept as src/rtt/rtt.c keeps it (the lowest over this 10 s
 * window and the last, counted once the flow has two earlier samples, or
 * judged against its server's by rtt.c's own rtt_host_judge), and
 * packets coming down carry their server's TSval (whole ms of its clock,
 * which may run slow or fast), timed by src/rtt/owd.c itself. The WAN-side samples leave out the
 * shaper's own queue (the tap's time at dequeue).
 *
 * Each scenario prints its figures ("# figure:") and asserts the bounds a
 * reviewer would try first: a line that falls to 10 % or 25 % in one step
 * (one direction, or both at once under RRUL), steady load both ways,
 * halving and recovery, a satellite path stepping +25 ms and back every
 * 15 s (and every 5 s on the way up, with a flow joining within each step,
 * or the step dipping a few ms now and then, or the shaper's core stalling 50-80 ms now and
 * then, or on 100/10 and 100/6 lines), a far-end server whose queue grows on one flow,
 * churning short flows (with long ones, and only short ones beside downloads without timestamps),
 * upload only, one direction falling while the other stays, idle then load, flows without
 * timestamps, a queue standing in the modem (drained, not taken as the path's), uploads backing off
 * at once in a burst's queue (not cut to what they sent then), and servers' clocks drifting 50-100
 * ppm against ours.
 *
 * Built with -DAR_OLD against the controller before these changes (a copy
 * of its autorate.c and .h) the same scenarios print what it did.
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

#include "shaper/autorate.h"
#include "shaper/owd.h"
#include "shaper/rtt.h"
#include "sim.h"

#define MBIT(x)    ((double)(x)*125000.0) /* bytes/s */
#define MS(x)      ((uint64_t)(x)*1000000ull)
#define MSS        1448.0
#define NF_MAX     48
#define HIST_MS    4096  /* queue-delay history, for samples that saw the past */
#define WIN_MS     10000 /* baselines: the lowest of this window and the last */
#define CODEL_MS   5.0
#define CODEL_IV   100.0
#define MODEM_BUF  1000000.0 /* bytes, each direction */
#define SHAPER_BUF 4000000.0
#define ACK_SHARE  30.0 /* a delayed ACK (66 B) for two full segments: about 1/45, and options */
#define ACK_SHARE  30.0 /* a delayed ACK (66 B) for two full segments: about 1/45, and options */

enum {
	UP = 0,
	DOWN = 1
};

#ifdef AR_OLD
#define TICK(a, now, sent, arrived, lost) autorate_tick(a, now, sent)
/* Against the old controller: say which bound fails, and go on to the next figure. */
#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			printf("# old controller fails: %s\n", #x);                                \
	} while (0)
#define AR_WHY_NO_SAMPLES 0
#define AR_WHY_PATH       5
#define AR_WHY_OTHER_DIR  8
#else
#define CHECK(x)                          assert_true(x)
#define TICK(a, now, sent, arrived, lost) autorate_tick(a, now, sent, arrived, lost)
#endif

struct flow {
	bool on, ts;
	int dir;                     /* of its data */
	double base_ms;              /* WAN-side round trip */
	double cwnd, ssthresh, left; /* bytes; left < 0: no end */
	double recover_until, next_sample;
	uint32_t start_ms, stop_ms;
	uint32_t id; /* this flow's own (its flow hash for rtt.c's remote-host baselines) */
	/* baselines (rtt.c, owd.c) */
	double win[2];
	uint32_t win_start, nsamp;
	double owin[2];
	uint32_t owin_start, ofirst;
	bool ostarted;
};

struct scen {
	const char *name;
	uint32_t run_ms;
	double (*modem)(int dir, uint32_t t); /* Mbit/s */
	double (*path)(uint32_t t);           /* extra round trip, ms (split half each way) */
	uint32_t (*outage)(uint32_t t);       /* ms left of an outage: both modems carry nothing */
	/*
	 * ms left of a stall of the shaper's core (stolen time): it sends
	 * nothing either way and does not tick; what its taps would have seen
	 * meanwhile is timed when it runs again, that much later.
	 */
	uint32_t (*stall)(uint32_t t);
	bool path_up_only;                   /* ... all of it on the way up (the bed's) */
	double (*far)(int flow, uint32_t t); /* a server's own queue on a flow, ms */
	void (*flows)(struct flow *f, uint32_t t, uint32_t *seed); /* switch flows on/off */
	bool autorate[2];
	double fixed[2];                /* Mbit/s: autorate off, a fixed shaper (and AQM) at this */
	double min[2], max[2], base[2]; /* Mbit/s; base 0: the default */
	bool decay_without_samples;
	double buf_ms[2];    /* a modem's buffer in ms of its rate (0: MODEM_BUF bytes) */
	uint32_t inject_t;   /* at this ms (0: never) ... */
	double inject_ms[2]; /* ... this much queue appears in each modem (a burst of others) */
	double clock_ppm;    /* servers' TSval clocks this much slow (> 0) or fast against ours */
	bool clock_mixed;    /* ... every other flow's the other way */
	/*
	 * At these ms (NULL: never) a burst past the shaper puts backoff_ms of
	 * queue into the upstream modem, and backoff_after ms later every
	 * upload's window collapses as after a timeout (two segments, then slow
	 * start to half its window).
	 */
	bool (*backoff)(uint32_t t);
	double backoff_ms;
	uint32_t backoff_after;
};

struct run {
	double *qd[2];   /* induced latency: the modem's queue, ms */
	double *good[2]; /* Mbit/s the modem (up) / the shaper (down) delivered, per ms */
	double *rate[2]; /* the shaper's rate, Mbit/s */
	double *cap[2];  /* the modem's rate, Mbit/s */
	double *owd;     /* the downstream's one-way rise as autorate has it, ms (-1: none) */
	double *path[2]; /* the part of the rise autorate takes as the path's, ms */
	struct autorate a[2];
	uint64_t samples;
	uint64_t by_src[3]; /* of those, by source: enum rtt_method */
};

/* A shaper in this direction: autorate's, or a fixed one. */
static bool
shaped(const struct scen *s, int d)
{
	return s->autorate[d] || s->fixed[d] > 0;
}

static uint32_t
rnd(uint32_t *s, uint32_t n)
{
	*s = *s * 1103515245u + 12345u;
	return (*s >> 8) % n;
}

/* Open the flows of a scenario as Reno in slow start. */
static void
flow_open(struct flow *f, int dir, double base_ms, bool ts, double bytes, uint32_t t)
{
	static uint32_t flows_opened;

	memset(f, 0, sizeof(*f));
	f->id = ++flows_opened * 2; /* even: id | 1 (rtt.c's and owd.c's tags) tells all apart */
	f->on = true;
	f->ts = ts;
	f->dir = dir;
	f->base_ms = base_ms;
	f->cwnd = 10 * MSS;
	f->ssthresh = 1e12;
	f->left = bytes;
	f->start_ms = t;
	f->next_sample = t + base_ms;
	f->win[0] = f->win[1] = 1e12;
	f->owin[0] = f->owin[1] = 1e12;
}

static void
loss(struct flow *f, double now, double rtt)
{
	if (now < f->recover_until)
		return;
	f->cwnd = f->cwnd / 2 > 2 * MSS ? f->cwnd / 2 : 2 * MSS;
	f->ssthresh = f->cwnd;
	f->recover_until = now + rtt;
}

/* The flow of dir with the largest window not in recovery (drop-tail hits the big ones). */
static int
victim(struct flow *fl, int dir, double now)
{
	int v = -1;

	for (int i = 0; i < NF_MAX; i++)
		if (fl[i].on && fl[i].dir == dir && now >= fl[i].recover_until &&
		    (v < 0 || fl[i].cwnd > fl[v].cwnd))
			v = i;
	return v;
}

/*
 * Remote hosts' baselines: rtt.c's own (rtt_host_judge), a host being a
 * flow's base RTT (the scenarios' servers each have their own).
 * AR_NO_HOST_BASE=1 leaves them out (flows' own baselines only, as before).
 */
static struct rtt_table *hosts;
/* The downstream one-way delays: owd.c's own (the old controller's run uses owd_rise). */
static struct owd_table owds;
static bool no_handshake;   /* AR_NO_HANDSHAKE: downloads without timestamps give no sample */
static bool seq_at_enqueue; /* AR_SEQ_AT_ENQUEUE: upload samples include the shaper's queue */

/* rtt.c's baseline: the lowest of this window and the last; established after 2 samples. */
static bool
base_of(struct flow *f, double rtt, uint32_t t, double *base)
{
	bool ok;

	if (f->nsamp == 0 || t - f->win_start >= WIN_MS) {
		f->win[1] = f->nsamp != 0 ? f->win[0] : 1e12;
		f->win[0] = 1e12;
		f->win_start = t;
	}
#ifdef AR_OLD
	/* As it was: the sample is in its own baseline, the handshake too. */
	if (rtt < f->win[0])
		f->win[0] = rtt;
	*base = f->win[0] < f->win[1] ? f->win[0] : f->win[1];
	ok = true;
#else
	*base = f->win[0] < f->win[1] ? f->win[0] : f->win[1];
	ok = f->nsamp >= 2;
	if (rtt < f->win[0])
		f->win[0] = rtt;
	if (hosts != NULL) {
		struct rtt_sample smp = { .rtt_ns = (uint64_t)(rtt * 1e6),
					  .base_ns = (uint64_t)(*base * 1e6),
					  .established = ok };

		rtt_host_judge(hosts, (uint32_t)f->base_ms * 0x9e3779b1u, f->id, MS(t), &smp);
		ok = smp.established;
		*base = smp.base_ns / 1e6;
	}
#endif
	f->nsamp++;
	return ok;
}

/* owd.c's baseline of a flow's one-way delay (ms); -1 while it settles. */
static double
owd_rise(struct flow *f, double owd, uint32_t t)
{
	double b;

	if (!f->ostarted) {
		f->ostarted = true;
		f->ofirst = f->owin_start = t;
		f->owin[0] = f->owin[1] = owd;
		return -1;
	}
	if (t - f->owin_start >= WIN_MS) {
		f->owin[1] = f->owin[0];
		f->owin[0] = owd;
		f->owin_start = t;
	} else if (owd < f->owin[0]) {
		f->owin[0] = owd;
	}
	b = f->owin[0] < f->owin[1] ? f->owin[0] : f->owin[1];
#ifndef AR_OLD
	if (t - f->ofirst < 500)
		return -1; /* owd.c: not before the flow's baseline has settled */
#endif
	return owd > b ? owd - b : 0;
}

/* AR_DUMP=name: the scenario's time series every 10 ms on stderr (rate, goodput, queue). */
static void
dump(const struct scen *s, const struct run *r)
{
	const char *want = getenv("AR_DUMP");

	if (want == NULL || strcmp(want, s->name) != 0)
		return;
	for (uint32_t t = 0; t < s->run_ms; t += 10)
		fprintf(stderr, "%u %.1f %.1f %.1f %.2f %.1f %.1f %.1f %.2f\n", t, r->cap[DOWN][t],
			r->rate[DOWN][t], r->good[DOWN][t], r->qd[DOWN][t], r->cap[UP][t],
			r->rate[UP][t], r->good[UP][t], r->qd[UP][t]);
}

/* AR_JSONL=file with AR_DUMP=name: the run as stats lines, for tools/autorate_plot.py. */
static void
jsonl_line(FILE *f, const struct run *r, uint64_t now, const double *m, const double *dq)
{
	static const char *const name[2] = { "upstream", "downstream" };

	fprintf(f, "{\"directions\": {");
	for (int d = 0; d < 2; d++) {
		const struct autorate *a = &r->a[d];

		fprintf(f,
			"%s\"%s\": {\"time_ns\": %llu, \"rtt\": {\"autorate\": {\"rate\": %llu, "
			"\"delivered\": %llu, \"delay_us\": %llu",
			d ? ", " : "", name[d], (unsigned long long)now,
			(unsigned long long)a->rate, (unsigned long long)a->delivered_rate,
			(unsigned long long)(a->last_delay_ns / 1000));
#ifndef AR_OLD
		fprintf(f,
			", \"line\": %llu, \"path_us\": %llu, \"decisions\": {\"cut_bloat\": %llu, "
			"\"cut_standing\": %llu, \"path\": %llu}",
			(unsigned long long)a->through_rate,
			(unsigned long long)(a->path.ns / 1000),
			(unsigned long long)a->why[AR_WHY_CUT_BLOAT],
			(unsigned long long)a->why[AR_WHY_CUT_STANDING],
			(unsigned long long)a->why[AR_WHY_PATH]);
#endif
		fprintf(f, "}}}");
	}
	fprintf(f, "}, \"modem\": {");
	for (int d = 0; d < 2; d++)
		fprintf(f, "%s\"%s\": {\"rate\": %.0f, \"queue_us\": %.0f}", d ? ", " : "", name[d],
			m[d] * 1000.0, dq[d] * 1000.0);
	fprintf(f, "}}\n");
}

/* A sample a stalled core's tap took: an RTT's (a, its baseline b) or a one-way rise (a). */
struct late_sample {
	bool owd;
	uint64_t a, b;
};

static bool
trace_decisions(const struct scen *s)
{
	const char *want = getenv("AR_DECISIONS");

	return want != NULL && (strcmp(want, s->name) == 0 || strcmp(want, "all") == 0);
}

static void
simulate(const struct scen *s, struct run *r)
{
	static struct flow fl[NF_MAX];
	double sq[2] = { 0 }, mq[2] = { 0 }, above[2] = { 0 }, next_drop[2] = { 0 };
	double hist[2][HIST_MS];
	uint32_t count[2] = { 0 },
		 seed = getenv("AR_SEED") ? (uint32_t)atol(getenv("AR_SEED")) : 12345;
	uint64_t sent[2] = { 0 }, arrived[2] = { 0 }, lost[2] = { 0 }; /* lost: ns written off */
	double sent_frac[2] = { 0 }, arr_frac[2] = { 0 };
	bool up_first = getenv("AR_UP_FIRST") != NULL;
	/* What a stall's taps saw, fed to the controllers when the core runs again. */
	static struct late_sample late[NF_MAX * 1024];
	uint32_t nlate = 0;

	FILE *jsonl = NULL;

	if (getenv("AR_JSONL") != NULL && getenv("AR_DUMP") != NULL &&
	    strcmp(getenv("AR_DUMP"), s->name) == 0)
		jsonl = fopen(getenv("AR_JSONL"), "w");
	memset(fl, 0, sizeof(fl));
	memset(hist, 0, sizeof(hist));
#ifndef AR_OLD
	owd_table_init(&owds);
	rtt_table_free(hosts);
	hosts = NULL;
	if (getenv("AR_NO_HOST_BASE") == NULL) {
		hosts = rtt_table_new(4);
		assert_non_null(hosts);
	}
#endif
	for (int d = 0; d < 2; d++) {
		struct autorate_params p;

		autorate_params_default(&p, (uint64_t)MBIT(s->min[d]), (uint64_t)MBIT(s->max[d]));
		p.after_modem = d == DOWN;
#ifndef AR_OLD
		p.base_rate = (uint64_t)MBIT(s->base[d]);
		p.decay_without_samples = s->decay_without_samples;
#endif
		autorate_init(&r->a[d], &p);
		r->qd[d] = calloc(s->run_ms, sizeof(double));
		r->good[d] = calloc(s->run_ms, sizeof(double));
		r->rate[d] = calloc(s->run_ms, sizeof(double));
		r->cap[d] = calloc(s->run_ms, sizeof(double));
		r->path[d] = calloc(s->run_ms, sizeof(double));
		assert_non_null(r->cap[d]);
		assert_non_null(r->path[d]);
	}
	r->owd = calloc(s->run_ms, sizeof(double));
	assert_non_null(r->owd);
	r->samples = 0;
	memset(r->by_src, 0, sizeof(r->by_src));
	no_handshake = getenv("AR_NO_HANDSHAKE") != NULL;
	seq_at_enqueue = getenv("AR_SEQ_AT_ENQUEUE") != NULL;
	for (uint32_t t = 0; t < s->run_ms; t++) {
		double m[2], rt[2], dq[2], in[2] = { 0 }, ack[2] = { 0 },
					   path = s->path != NULL ? s->path(t) : 0;
		uint64_t now = MS(t);
		uint32_t out_left = s->outage != NULL ? s->outage(t) : 0;
		uint32_t st_left = s->stall != NULL ? s->stall(t) : 0;

		if (st_left == 0) {
			for (uint32_t k = 0; k < nlate; k++) {
				if (late[k].owd)
					autorate_owd_sample(&r->a[DOWN], late[k].a);
				else
					for (int d = 0; d < 2; d++)
						if (s->autorate[d])
							autorate_sample(&r->a[d], late[k].a,
									late[k].b);
			}
			nlate = 0;
		}
		s->flows(fl, t, &seed);
		for (int d = 0; d < 2; d++) {
			m[d] = MBIT(s->modem(d, t)) / 1000.0; /* bytes per ms */
			rt[d] = s->autorate[d]    ? (double)r->a[d].rate / 1000.0
				: s->fixed[d] > 0 ? MBIT(s->fixed[d]) / 1000.0
						  : 1e12;
			dq[d] = mq[d] / m[d] + out_left;
			hist[d][t % HIST_MS] = dq[d];
			r->cap[d][t] = s->modem(d, t);
		}
		if (s->backoff != NULL && s->backoff(t))
			mq[UP] += s->backoff_ms * m[UP];
		if (s->backoff != NULL && t >= s->backoff_after &&
		    s->backoff(t - s->backoff_after)) {
			for (int i = 0; i < NF_MAX; i++)
				if (fl[i].on && fl[i].dir == UP) {
					fl[i].ssthresh = fl[i].cwnd / 2 > 2 * MSS ? fl[i].cwnd / 2
										  : 2 * MSS;
					fl[i].cwnd = 2 * MSS;
					fl[i].recover_until = t + fl[i].base_ms;
				}
		}
		/* Each flow sends its window per round trip, as it stands now. */
		for (int i = 0; i < NF_MAX; i++) {
			struct flow *f = &fl[i];
			int d = f->dir;
			double far = s->far != NULL ? s->far(i, t) : 0, rtt, x;

			if (!f->on)
				continue;
			rtt = f->base_ms + path + far + dq[UP] + dq[DOWN] +
			      (shaped(s, d) ? sq[d] / rt[d] : 0);
			x = f->cwnd / rtt;
			if (f->left >= 0 && x > f->left)
				x = f->left;
			in[d] += x;
			ack[d ^ 1] += x / ACK_SHARE;
			if (f->left >= 0) {
				f->left -= x;
				if (f->left <= 0) {
					f->on = false;
					continue;
				}
			}
			if (f->cwnd < f->ssthresh)
				f->cwnd *= 1.0 + 0.69 / rtt;
			else
				f->cwnd += MSS / rtt;
			if (f->cwnd > 8e6)
				f->cwnd = 8e6;
			/* One WAN-side sample per round trip: the queues it met on the way. */
			if (t >= f->next_sample) {
				uint32_t back = (uint32_t)(rtt / 2);
				double seen = hist[UP][(t - back) % HIST_MS] +
					      hist[DOWN][(t - back / 2) % HIST_MS];
				double smp = f->base_ms + path + far + seen +
					     rnd(&seed, 2000) / 1000.0 + st_left;

				/* AR_SEQ_AT_ENQUEUE=1: as before, sequence samples timed at
				 * enqueue. */
				if (seq_at_enqueue && !f->ts && d == UP && s->autorate[UP])
					smp += sq[UP] / rt[UP];
				double base;
				/* A flow's first round trip is its handshake: SYN to SYN-ACK. */
				bool hs = f->nsamp == 0;

				f->next_sample = t + rtt;
				/*
				 * Without timestamps a download's one WAN-side sample is
				 * its handshake (AR_NO_HANDSHAKE=1: none, as the model had
				 * it before); an upload's data is timed by the ACKs.
				 */
				if ((f->ts || d == UP || (hs && !no_handshake)) &&
				    base_of(f, smp, t, &base)) {
					if (st_left != 0 && nlate < NF_MAX * 1024)
						late[nlate++] = (struct late_sample){ false,
										      MS(smp),
										      MS(base) };
					for (int k = 0; k < 2 && st_left == 0; k++)
						if (s->autorate[k])
							autorate_sample(&r->a[k], MS(smp),
									MS(base));
					r->samples++;
					r->by_src[hs ? 2 : f->ts ? 0 : 1]++;
				}
			}
			/* What comes down (data, or an upload's ACKs) carries a one-way delay. */
			if (f->ts && s->autorate[DOWN]) {
				double owd = f->base_ms / 2 + (s->path_up_only ? 0 : path / 2) +
					     (d == DOWN ? far : 0) + dq[DOWN] +
					     rnd(&seed, 1000) / 1000.0;
#ifdef AR_OLD
				double rise = owd_rise(f, owd, t);

				if (rise >= 0)
					autorate_owd_sample(&r->a[DOWN], MS(rise));
#else
				/*
				 * owd.c itself, on the TSval of the server's clock when
				 * the packet left (whole ms, so 0-1 ms of rounding as on
				 * a real line; slow or fast by clock_ppm).
				 */
				double ppm = s->clock_mixed && i % 2 ? -s->clock_ppm : s->clock_ppm;
				uint64_t at = MS(t) +
					      rnd(&seed, 1000) * 1000ull; /* within the ms */
				uint64_t seen_at = at + MS(st_left);      /* a stall: read later */
				double sent_ms = (double)at / 1e6 - owd;
				uint32_t tsval = (uint32_t)(int64_t)floor(
						1000000.0 + f->start_ms +
						(sent_ms - f->start_ms) * (1.0 - ppm * 1e-6));
				int64_t rise = owd_observe(&owds, f->id, tsval, seen_at);

				(void)owd_rise;
				if (rise >= 0 && st_left != 0 && nlate < NF_MAX * 1024)
					late[nlate++] = (struct late_sample){ true, (uint64_t)rise,
									      0 };
				else if (rise >= 0 && st_left == 0)
					autorate_owd_sample(&r->a[DOWN], (uint64_t)rise);
#endif
			}
		}
		if (s->inject_t != 0 && t == s->inject_t)
			for (int d = 0; d < 2; d++)
				mq[d] += s->inject_ms[d] * m[d];
		/* Upstream: shaper, then modem. Downstream: modem, then shaper. */
		for (int d = 0; d < 2; d++) {
			in[d] += ack[d]; /* the ACKs of the other direction's data */
			double out, ms_out;
			double buf = s->buf_ms[d] > 0 ? s->buf_ms[d] * m[d] : MODEM_BUF;

			if (d == UP) {
				arr_frac[d] += in[d];
				sq[d] += in[d];
				out = st_left != 0 ? 0 : sq[d] < rt[d] ? sq[d] : rt[d];
				sq[d] -= out;
				mq[d] += out;
				sent_frac[d] += out;
				if (mq[d] > buf) {
					mq[d] = buf;
					int v = victim(fl, d, t);
					if (v >= 0)
						loss(&fl[v], t,
						     fl[v].base_ms + path + dq[UP] + dq[DOWN]);
				}
				ms_out = out_left != 0 ? 0 : mq[d] < m[d] ? mq[d] : m[d];
				mq[d] -= ms_out;
				r->good[d][t] = ms_out * 8.0 / 1000.0;
			} else {
				mq[d] += in[d];
				if (mq[d] > buf) {
					mq[d] = buf;
					int v = victim(fl, d, t);
					if (v >= 0)
						loss(&fl[v], t,
						     fl[v].base_ms + path + dq[UP] + dq[DOWN]);
				}
				ms_out = out_left != 0 ? 0 : mq[d] < m[d] ? mq[d] : m[d];
				mq[d] -= ms_out;
				arr_frac[d] += ms_out;
				sq[d] += ms_out;
				out = st_left != 0 ? 0 : sq[d] < rt[d] ? sq[d] : rt[d];
				sq[d] -= out;
				sent_frac[d] += out;
				r->good[d][t] = out * 8.0 / 1000.0;
				if (sq[d] > SHAPER_BUF)
					sq[d] = SHAPER_BUF;
			}
			/* The shaper's AQM: CoDel's control law on the queue's sojourn. */
			if (shaped(s, d) && sq[d] / rt[d] > CODEL_MS) {
				if (above[d] == 0)
					above[d] = t + CODEL_IV;
				else if (t >= above[d] && t >= next_drop[d]) {
					int v = victim(fl, d, t);

					if (v >= 0)
						loss(&fl[v], t,
						     fl[v].base_ms + path + dq[UP] + dq[DOWN]);
					count[d]++;
					next_drop[d] = t + CODEL_IV / sqrt((double)count[d]);
				}
			} else {
				above[d] = 0;
				count[d] = count[d] > 2 ? count[d] - 2 : 0;
			}
			r->qd[d][t] = mq[d] / m[d] + out_left;
			r->rate[d][t] = s->autorate[d] ? (double)r->a[d].rate / 125000.0
						       : s->fixed[d];
			/* The shaper writes a stall off while packets wait (its lag limit). */
			if (st_left != 0 && sq[d] > 0)
				lost[d] += MS(1);
			sent[d] = (uint64_t)sent_frac[d];
			arrived[d] = (uint64_t)arr_frac[d];
		}
#ifndef AR_OLD
		if (getenv("AR_TRACE") != NULL && strcmp(getenv("AR_TRACE"), s->name) == 0 &&
		    t % 100 == 0)
			for (int d = 0; d < 2; d++)
				fprintf(stderr,
					"%u %s rate %.1f why %d delay %.1f path %.2f samples %u\n",
					t, d ? "down" : "up", r->a[d].rate / 125000.0,
					r->a[d].last_why, r->a[d].last_delay_ns / 1e6,
					r->a[d].path.ns / 1e6, r->a[d].last_samples);
#endif
		if (jsonl != NULL && t % 100 == 0)
			jsonl_line(jsonl, r, now, m, dq);
		if (st_left != 0) { /* the core does not run: no tick */
#ifndef AR_OLD
			for (int d = 0; d < 2; d++)
				r->path[d][t] = r->a[d].path.ns / 1e6;
			r->owd[t] = t > 0 ? r->owd[t - 1] : -1;
#endif
			continue;
		}
		/*
		 * The downstream first, then the upstream seeing its decision, as
		 * the daemon's worker turns them (AR_UP_FIRST=1: the other order,
		 * the downstream deciding without the upstream's decision of the
		 * same ms, to compare).
		 */
		if (up_first && s->autorate[UP]) {
			autorate_attribute(&r->a[UP], s->autorate[DOWN] ? &r->a[DOWN] : NULL);
			TICK(&r->a[UP], now, sent[UP], arrived[UP], lost[UP]);
		}
		if (s->autorate[DOWN])
			TICK(&r->a[DOWN], now, sent[DOWN], arrived[DOWN], lost[DOWN]);
#ifndef AR_OLD
		r->owd[t] = r->a[DOWN].path.owd_last_ns != UINT64_MAX
					    ? r->a[DOWN].path.owd_last_ns / 1e6
					    : -1;
#endif
		if (!up_first && s->autorate[UP]) {
			autorate_attribute(&r->a[UP], s->autorate[DOWN] ? &r->a[DOWN] : NULL);
			TICK(&r->a[UP], now, sent[UP], arrived[UP], lost[UP]);
		}
#ifndef AR_OLD
		for (int d = 0; d < 2; d++) {
			r->path[d][t] = r->a[d].path.ns / 1e6;
			/* AR_DECISIONS=name (or all): every decision of the scenario on stderr. */
			if (trace_decisions(s) && s->autorate[d] && r->a[d].in.start == now &&
			    t > 0)
				fprintf(stderr,
					"%6u %s %-15s %6.2f -> %6.2f Mbit/s modem %6.2f "
					"line %6.2f sent %6.2f rise %5.1f own %5.1f q %6.1f ms\n",
					t, d ? "down" : "up  ",
					autorate_rule_name(r->a[d].last_rule), r->rate[d][t],
					r->a[d].rate / 125000.0, r->cap[d][t],
					r->a[d].through_rate / 125000.0,
					r->a[d].delivered_rate / 125000.0,
					r->a[d].last_delay_ns / 1e6, r->a[d].last_own_ns / 1e6,
					r->qd[d][t]);
		}
#endif
	}
	dump(s, r);
	if (jsonl != NULL)
		fclose(jsonl);
}

static void
run_free(struct run *r)
{
	for (int d = 0; d < 2; d++) {
		free(r->qd[d]);
		free(r->good[d]);
		free(r->rate[d]);
		free(r->cap[d]);
		free(r->path[d]);
	}
	free(r->owd);
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(const double *v, uint32_t from, uint32_t to)
{
	uint32_t n = to - from;
	double *c = malloc(n * sizeof(*c));
	double m;

	assert_non_null(c);
	memcpy(c, v + from, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_d);
	m = c[n / 2];
	free(c);
	return m;
}

static double
pct(const double *v, uint32_t from, uint32_t to, double p)
{
	uint32_t n = to - from;
	double *c = malloc(n * sizeof(*c));
	double m;

	assert_non_null(c);
	memcpy(c, v + from, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_d);
	m = c[(uint32_t)(n * p / 100.0) < n ? (uint32_t)(n * p / 100.0) : n - 1];
	free(c);
	return m;
}

static double
peak(const double *v, uint32_t from, uint32_t to)
{
	double m = 0;

	for (uint32_t i = from; i < to; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

/* Goodput over [from, to) as a share of what the modem could carry. */
static double
share(const struct run *r, int d, uint32_t from, uint32_t to)
{
	double cap = 0, got = 0;

	for (uint32_t t = from; t < to; t++) {
		cap += r->cap[d][t];
		got += r->good[d][t];
	}
	return got / cap;
}

/*
 * Seconds from `from` until the induced latency, once over `ms`, is back
 * under it (0: never over; -1: never back). The later probes' peaks are in
 * the median and p95 figures.
 */
static double
settled_after(const struct run *r, int d, uint32_t from, uint32_t to, double ms)
{
	uint32_t t = from;

	while (t < to && r->qd[d][t] < ms)
		t++;
	if (t == to)
		return 0;
	while (t < to && r->qd[d][t] >= ms)
		t++;
	return t < to ? (t - from) / 1000.0 : -1;
}

/* Seconds from `from` until the goodput over the next second is at least frac of the modem. */
static double
reached_after(const struct run *r, int d, uint32_t from, uint32_t to, double frac)
{
	for (uint32_t t = from; t + 1000 <= to; t += 50)
		if (share(r, d, t, t + 1000) >= frac)
			return (t + 1000 - from) / 1000.0;
	return -1;
}

/* ---------------------------------------------------------------------- */
/* Load                                                                    */
/* ---------------------------------------------------------------------- */

static const double rtts[8] = { 20, 45, 30, 60, 25, 38, 52, 80 };

/* RRUL-like: four long flows each way from the start. */
static void
flows_rrul(struct flow *f, uint32_t t, uint32_t *seed)
{
	(void)seed;
	if (t != 0)
		return;
	for (int i = 0; i < 8; i++)
		flow_open(&f[i], i < 4 ? DOWN : UP, rtts[i], true, -1, 0);
}

static void
flows_down(struct flow *f, uint32_t t, uint32_t *seed)
{
	(void)seed;
	if (t != 0)
		return;
	for (int i = 0; i < 8; i++)
		flow_open(&f[i], DOWN, rtts[i], true, -1, 0);
}

static void
flows_up(struct flow *f, uint32_t t, uint32_t *seed)
{
	(void)seed;
	if (t != 0)
		return;
	for (int i = 0; i < 4; i++)
		flow_open(&f[i], UP, rtts[i], true, -1, 0);
}

/* Idle for 20 s (a little ping-like traffic), then RRUL. */
static void
flows_idle_then_load(struct flow *f, uint32_t t, uint32_t *seed)
{
	(void)seed;
	if (t == 0)
		flow_open(&f[10], DOWN, 30, true, -1, 0);
	if (t < 20000)
		f[10].cwnd = 2 * MSS; /* a trickle: 2 segments a round trip */
	if (t == 20000)
		flows_rrul(f, 0, seed);
}

/*
 * Downloads without timestamps (Windows' default): a handshake each, to
 * four servers, none with another flow's baseline: no sample is judged.
 */
static void
flows_no_ts(struct flow *f, uint32_t t, uint32_t *seed)
{
	(void)seed;
	if (t != 0)
		return;
	for (int i = 0; i < 4; i++)
		flow_open(&f[i], DOWN, rtts[i], false, -1, 0);
}

/* HTTP-like churn: a new flow every 100 ms, 200 kB to 2 MB, half each way; never long ones. */
static void
flows_churn(struct flow *f, uint32_t t, uint32_t *seed)
{
	if (t % 100 != 0)
		return;
	for (int i = 0; i < NF_MAX; i++)
		if (!f[i].on) {
			int dir = rnd(seed, 4) == 0 ? UP : DOWN;
			double bytes = (200 + rnd(seed, 1800)) * 1000.0 / (dir == UP ? 5 : 1);

			flow_open(&f[i], dir, rtts[rnd(seed, 8)], true, bytes, t);
			return;
		}
}

/* ---------------------------------------------------------------------- */
/* Lines                                                                   */
/* ---------------------------------------------------------------------- */

static double fall_to; /* share of 100 the downstream falls to at 10 s */

static double
modem_fall(int d, uint32_t t)
{
	if (d == UP)
		return 20;
	return t < 10000 ? 100 : 100 * fall_to;
}

static double
modem_fall_up(int d, uint32_t t)
{
	if (d == DOWN)
		return 100;
	return t < 10000 ? 20 : 20 * fall_to;
}

static double
modem_steady(int d, uint32_t t)
{
	(void)t;
	return d == UP ? 20 : 100;
}

/* Both directions fall to fall_to of their rate at 10 s (the bed's e2e_autorate_fall). */
static double
modem_fall_both(int d, uint32_t t)
{
	return (d == UP ? 20 : 100) * (t < 10000 ? 1.0 : fall_to);
}

/* Halved at 10 s, back at 25 s, both directions. */
static double
modem_halving(int d, uint32_t t)
{
	double f = t >= 10000 && t < 25000 ? 0.5 : 1.0;

	return (d == UP ? 20 : 100) * f;
}

/* +25 ms every other 15 s (a satellite switch), at constant capacity. */
static double
path_starlink(uint32_t t)
{
	return (t / 15000) % 2 == 1 ? 25.0 : 0.0;
}

/* One flow's server: its own send queue grows 0 -> 300 ms from 5 s to 35 s. */
static double
far_growing(int flow, uint32_t t)
{
	if (flow != 1 || t < 5000)
		return 0;
	return t > 35000 ? 300 : (t - 5000) * 0.01;
}

static struct scen
scen(const char *name, uint32_t run_ms, double (*modem)(int, uint32_t),
     void (*flows)(struct flow *, uint32_t, uint32_t *))
{
	struct scen s = { .name = name, .run_ms = run_ms, .modem = modem, .flows = flows };

	s.autorate[UP] = s.autorate[DOWN] = true;
	s.min[DOWN] = 5;
	s.max[DOWN] = 110; /* a little over the line: the controller finds it */
	s.min[UP] = 1;
	s.max[UP] = 22;
	return s;
}

static uint64_t
why(const struct autorate *a, int reason)
{
#ifdef AR_OLD
	(void)a;
	(void)reason;
	return 0;
#else
	return a->why[reason];
#endif
}

/* ---------------------------------------------------------------------- */
/* Scenarios                                                               */
/* ---------------------------------------------------------------------- */

/* The line falls from full rate to a share in one step: latency under 15 ms within 2 s. */
static void
falls(double to, int d)
{
	struct scen s = scen("fall", 30000, d == DOWN ? modem_fall : modem_fall_up,
			     d == DOWN ? flows_down : flows_up);
	struct run r;
	double settle, good, pk, p95, med;
	char name[32];

	/* fall_down_10, fall_up_25, ... (for AR_DUMP) */
	snprintf(name, sizeof(name), "fall_%s_%.0f", d == DOWN ? "down" : "up", to * 100);
	s.name = name;
	fall_to = to;
	simulate(&s, &r);
	settle = settled_after(&r, d, 10000, 30000, 15.0);
	p95 = pct(r.qd[d], 12000, 30000, 95);
	med = median(r.qd[d], 12000, 30000);
	good = share(&r, d, 15000, 30000);
	pk = peak(r.qd[d], 10000, 30000);
	SIM_FIGURE("autorate %s falls 100%% -> %.0f%%: induced latency peak %.0f ms, under 15 ms "
		   "after %.2f s (-1: never), from 2 s on median %.1f ms, p95 %.1f ms; goodput %.3f "
		   "of the new modem from 5 s on, rate %.1f Mbit/s at the end (modem %.1f), %llu "
		   "cuts; the other direction (ACKs) at %.1f Mbit/s",
		   d == DOWN ? "downstream" : "upstream", to * 100, pk, settle, med, p95, good,
		   r.rate[d][29999], r.cap[d][29999], (unsigned long long)r.a[d].downs,
		   r.rate[d ^ 1][29999]);
	CHECK(settle >= 0 && settle <= 2.0);
	/* The upload to a tenth: 1.40 s while the refractory period held its second cut. */
	CHECK(d == DOWN || to > 0.2 || settle <= 1.2);
	/* 5 ms, and one frame's time at the new rate (6 ms at 2 Mbit/s) */
	CHECK(med <= 5.0 + 1514 * 8 / (r.cap[d][29999] * 1000.0));
	CHECK(good >= 0.85);
	/* The other direction, carrying only ACKs, is not cut for this one's queue. */
	CHECK(r.rate[d ^ 1][29999] >= 0.5 * s.max[d ^ 1]);
	run_free(&r);
}

static void
test_falls_to_10(void **state)
{
	(void)state;
	falls(0.10, DOWN);
	falls(0.10, UP);
}

static void
test_falls_to_25(void **state)
{
	(void)state;
	falls(0.25, DOWN);
	falls(0.25, UP);
}

/*
 * Seconds from `from` to the end of the first 1-s window (in 100 ms steps)
 * whose median of v is under ms (-1: none before `to`): the bed's figure
 * for a ping that crosses both modems.
 */
static double
median_back_under(const double *v, uint32_t from, uint32_t to, double ms)
{
	for (uint32_t t = from; t + 1000 <= to; t += 100)
		if (median(v, t, t + 1000) < ms)
			return (t + 1000 - from) / 1000.0;
	return -1;
}

/*
 * Both modems fall to 10 % at once under RRUL, as on the bed: max the
 * nominal rate, min 5 % of it, and a downstream modem whose queue stands no
 * higher than 30 ms (on the bed the tbf sits in the server's own qdisc,
 * where TCP's small-queue limit holds it to about that; an AQM in a cable
 * modem does the same). The upload, cut first for the 400 ms its modem
 * held, soon sits at its minimum and carries all of its rate; the download
 * carries a tenth of its own. That must not read as "the download carries
 * only the upload's ACKs": it carries five times the upload's bytes.
 */
static void
test_falls_both_to_10(void **state)
{
	struct scen s = scen("fall_both_10", 30000, modem_fall_both, flows_rrul);
	struct run r;
	double settle, med[2], good[2], *ping = calloc(30000, sizeof(double));

	(void)state;
	assert_non_null(ping);
	s.max[DOWN] = 100;
	s.max[UP] = 20;
	s.buf_ms[DOWN] = 30;
	fall_to = 0.10;
	simulate(&s, &r);
	for (uint32_t t = 0; t < 30000; t++)
		ping[t] = r.qd[UP][t] + r.qd[DOWN][t];
	settle = median_back_under(ping, 10000, 30000, 15.0);
	for (int d = 0; d < 2; d++) {
		med[d] = median(r.qd[d], 12000, 30000);
		good[d] = share(&r, d, 15000, 30000);
	}
	SIM_FIGURE("autorate both directions fall 100%% -> 10%% under RRUL (down modem holding "
		   "<= 30 ms): both modems' queues' 1-s median back under 15 ms after "
		   "%.2f s (-1: never), from 2 s on median %.1f down / %.1f ms up; goodput %.3f / "
		   "%.3f of the new modem from 5 s on; rate %.1f / %.1f Mbit/s at the end (modem 10 "
		   "/ 2), %llu / %llu cuts, %llu / %llu held for the other direction",
		   settle, med[DOWN], med[UP], good[DOWN], good[UP], r.rate[DOWN][29999],
		   r.rate[UP][29999], (unsigned long long)r.a[DOWN].downs,
		   (unsigned long long)r.a[UP].downs,
		   (unsigned long long)why(&r.a[DOWN], AR_WHY_OTHER_DIR),
		   (unsigned long long)why(&r.a[UP], AR_WHY_OTHER_DIR));
	/*
	 * 2 s for what crosses both (2.2 s when the upload's second cut was
	 * sized from what it sent, growth 0: 2.9 Mbit/s into a 2 Mbit/s modem,
	 * its 360 ms draining at 0.3 Mbit/s). Each direction's median holds
	 * the 5 ms.
	 */
	CHECK(settle >= 0 && settle <= 2.0);
	CHECK(med[DOWN] <= 5.0 && med[UP] <= 5.0 + 1514 * 8 / (2.0 * 1000.0));
	CHECK(good[DOWN] >= 0.85 && good[UP] >= 0.85);
	free(ping);
	run_free(&r);
}

/* Steady modem under RRUL: >= 0.92 down, >= 0.88 up, induced median <= 3 ms. */
static void
test_steady(void **state)
{
	struct scen s = scen("steady", 30000, modem_steady, flows_rrul);
	struct run r;
	double gd, gu, ld, lu;

	(void)state;
	simulate(&s, &r);
	gd = share(&r, DOWN, 10000, 30000);
	gu = share(&r, UP, 10000, 30000);
	ld = median(r.qd[DOWN], 10000, 30000);
	lu = median(r.qd[UP], 10000, 30000);
	SIM_FIGURE("autorate steady RRUL 100/20: goodput %.3f down / %.3f up of the modem, induced "
		   "median %.2f / %.2f ms, %llu samples/s",
		   gd, gu, ld, lu, (unsigned long long)(r.samples / 30));
	CHECK(gd >= 0.92);
	CHECK(gu >= 0.88);
	CHECK(ld <= 3.0 && lu <= 3.0);
	run_free(&r);
}

/* Halving and recovery under RRUL: < 10 ms 1 s after, 0.9 of the modem within 3 s. */
static void
test_halving(void **state)
{
	struct scen s = scen("halving", 40000, modem_halving, flows_rrul);
	struct run r;

	(void)state;
	simulate(&s, &r);
	for (int d = 0; d < 2; d++) {
		double settle = settled_after(&r, d, 10000, 25000, 10.0);
		double lat = median(r.qd[d], 11000, 25000), p95 = pct(r.qd[d], 11000, 25000, 95);
		double g = share(&r, d, 13000, 25000);
		double back = reached_after(&r, d, 25000, 40000, 0.9);

		SIM_FIGURE("autorate halving %s: induced latency under 10 ms after %.2f s, then "
			   "median %.2f ms, p95 %.1f ms, goodput %.3f of the halved modem; back at "
			   "0.9 of the full modem after %.2f s",
			   d == DOWN ? "down" : "up", settle, lat, p95, g, back);
		CHECK(settle >= 0 && settle <= 1.0);
		CHECK(lat <= 5.0);
		CHECK(back >= 0 && back <= 3.0);
	}
	run_free(&r);
}

/* A satellite path: +25 ms and back every 15 s at constant capacity: >= 0.9 over 60 s. */
static void
test_path_steps(void **state)
{
	struct scen s = scen("path", 65000, modem_steady, flows_rrul);
	struct run r;
	double gd, gu, lo_d = 1e9, lo_u = 1e9;

	(void)state;
	s.path = path_starlink;
	simulate(&s, &r);
	gd = share(&r, DOWN, 5000, 65000);
	gu = share(&r, UP, 5000, 65000);
	for (uint32_t t = 5000; t < 65000; t++) {
		lo_d = r.rate[DOWN][t] < lo_d ? r.rate[DOWN][t] : lo_d;
		lo_u = r.rate[UP][t] < lo_u ? r.rate[UP][t] : lo_u;
	}
	SIM_FIGURE("autorate path +25 ms every 15 s: goodput %.3f down / %.3f up of the modem over "
		   "60 s, lowest rate %.1f / %.1f Mbit/s, %llu path steps taken as such",
		   gd, gu, lo_d, lo_u,
		   (unsigned long long)(why(&r.a[DOWN], AR_WHY_PATH) + why(&r.a[UP], AR_WHY_PATH)));
	CHECK(gd >= 0.90 && gu >= 0.90);
	run_free(&r);
}

/* +25 ms for 5 s every 10 s from 5 s (the bed's e2e_autorate_path), at constant capacity. */
static double
path_5s(uint32_t t)
{
	return (t / 5000) % 2 == 1 ? 25.0 : 0.0;
}

/*
 * The same, but the step reads 3 ms short for 150 ms every 450 ms (the
 * jitter of a handover path): the rise at a refractory period's end dips
 * now and then.
 */
static double
path_5s_dips(uint32_t t)
{
	if ((t / 5000) % 2 == 0)
		return 0.0;
	return t % 450 < 150 ? 22.0 : 25.0;
}

/*
 * RRUL, and 2 s into each step up an upload to a server of its own (150 ms
 * away) whose baseline is set within the step: its rise is 0 while the
 * other flows' is the step, and it gives a sample only every other interval
 * or so.
 */
static void
flows_rrul_joined(struct flow *f, uint32_t t, uint32_t *seed)
{
	flows_rrul(f, t, seed);
	if (t % 10000 == 7000)
		flow_open(&f[8 + (t / 10000) % 4], UP, 150, true, -1, t);
}

/*
 * Path steps of 5 s (+25 ms, then back) on the way up, as the bed makes
 * them (its delay line is on the upstream), at a constant line: each step
 * up is taken as the path's within 2 s and kept, and the rate is not cut
 * far for it.
 */
struct path_run {
	double lo[2];   /* each direction's lowest rate from 5 s on, over the modem's */
	double late[2]; /* ... from 2 s into each step up to its end */
	double absorb;  /* the latest time (s into a step up) the upload's step was not yet,
			   or no longer, taken as the path's */
};

/* AR_STALL=at,ms[,every]: a stall of the shaper's core (exploration of the path scenarios). */
static uint32_t stall_at, stall_ms, stall_every;

static uint32_t
stall_env(uint32_t t)
{
	uint32_t at = stall_at;

	if (stall_every != 0 && t >= stall_at)
		at = stall_at + (t - stall_at) / stall_every * stall_every;
	return t >= at && t < at + stall_ms ? at + stall_ms - t : 0;
}

static void
path_steps_5s(struct scen *s, struct run *r, struct path_run *p)
{
	if (getenv("AR_STALL") != NULL &&
	    sscanf(getenv("AR_STALL"), "%u,%u,%u", &stall_at, &stall_ms, &stall_every) >= 2)
		s->stall = stall_env;
	s->path = s->path != NULL ? s->path : path_5s;
	s->path_up_only = true;
	s->max[DOWN] = s->modem(DOWN, 0);
	s->max[UP] = s->modem(UP, 0);
	simulate(s, r);
	p->absorb = 0;
	for (int d = 0; d < 2; d++) {
		p->lo[d] = p->late[d] = 1e9;
		for (uint32_t t = 5000; t < s->run_ms; t++) {
			double f = r->rate[d][t] / r->cap[d][t], in = (t % 10000) / 1000.0 - 5.0;

			p->lo[d] = f < p->lo[d] ? f : p->lo[d];
			if (in >= 2.0 && f < p->late[d])
				p->late[d] = f;
			/* Downstream the step is not in the one-way rise it is judged on. */
			if (d == UP && in >= 0 && r->path[d][t] < 20.0 && in > p->absorb)
				p->absorb = in;
		}
	}
}

static void
path_steps_check(const char *what, struct run *r, const struct path_run *p)
{
	SIM_FIGURE("autorate path +25 ms up for 5 s every 10 s, %s: lowest rate %.3f down / %.3f "
		   "up of the modem, from 2 s into a step %.3f / %.3f; the upload's step taken "
		   "as the path's for good %.2f s into it at the latest; %llu cuts up, %llu path "
		   "decisions",
		   what, p->lo[DOWN], p->lo[UP], p->late[DOWN], p->late[UP], p->absorb,
		   (unsigned long long)r->a[UP].downs,
		   (unsigned long long)why(&r->a[UP], AR_WHY_PATH));
	/*
	 * The bed's bound is 0.25; two cuts before the decision (the first on
	 * the step's first, partial reading) leave 0.37-0.51 of the upload
	 * (twelve seeds). The download does not see the step in the one-way
	 * rise it is judged on (cut for its own probes only).
	 */
	CHECK(p->lo[UP] >= 0.3 && p->lo[DOWN] >= 0.5);
	CHECK(p->late[UP] >= 0.9);
	CHECK(p->absorb <= 2.0);
	run_free(r);
}

/* A flow whose baseline holds the step is not all the flows' baselines. */
static void
test_path_steps_flow_joins(void **state)
{
	struct scen s = scen("path_joins", 30000, modem_steady, flows_rrul_joined);
	struct run r;
	struct path_run p;

	(void)state;
	path_steps_5s(&s, &r, &p);
	path_steps_check("an upload joining 2 s into each", &r, &p);
}

/* A step that dips a few ms now and then is still flat. */
static void
test_path_steps_dips(void **state)
{
	struct scen s = scen("path_dips", 30000, modem_steady, flows_rrul);
	struct run r;
	struct path_run p;

	(void)state;
	s.path = path_5s_dips;
	path_steps_5s(&s, &r, &p);
	path_steps_check("dipping 3 ms for 150 ms every 450 ms", &r, &p);
}

/*
 * Stolen time: the shaper's core stalls 50 ms in the first refractory
 * period of the step up at 5 s (the next cut read what was sent over an
 * interval half of it stalled: a line at half), 80 ms as an interval
 * begins at 17.6 s, that step already taken (every sample of the interval
 * came late, at bloat, and next to nothing was sent), and 50 ms in the
 * third step's first refractory period.
 */
static uint32_t
stalls_3(uint32_t t)
{
	static const uint32_t at[3][2] = { { 5380, 50 }, { 17593, 80 }, { 25367, 50 } };

	for (int i = 0; i < 3; i++)
		if (t >= at[i][0] && t < at[i][0] + at[i][1])
			return at[i][0] + at[i][1] - t;
	return 0;
}

/* The time the core was away is no time the line was watched. */
static void
test_path_steps_stalls(void **state)
{
	struct scen s = scen("path_stalls", 30000, modem_steady, flows_rrul_joined);
	struct run r;
	struct path_run p;

	(void)state;
	s.stall = stalls_3;
	path_steps_5s(&s, &r, &p);
	path_steps_check("an upload joining 2 s into each, the core stalling 50-80 ms thrice", &r,
			 &p);
}

static double up_mbit; /* modem_100_up's upload */

static double
modem_100_up(int d, uint32_t t)
{
	(void)t;
	return d == UP ? up_mbit : 100;
}

/*
 * 100/10 and 100/6: two cuts for a step leave the upload carrying under a
 * sixteenth of the download's bytes, as its ACKs would (lesser_ratio
 * squared), or it did at the step's first reading: its series of cuts
 * must still end in a path decision.
 */
static void
test_path_steps_acks(void **state)
{
	static const double ups[] = { 10, 6 };

	(void)state;
	for (int i = 0; i < 2; i++) {
		struct scen s = scen("path_acks", 30000, modem_100_up, flows_rrul_joined);
		struct run r;
		struct path_run p;
		char what[64];

		up_mbit = ups[i];
		snprintf(what, sizeof(what), "100/%.0f, an upload joining 2 s into each", ups[i]);
		path_steps_5s(&s, &r, &p);
		path_steps_check(what, &r, &p);
	}
}

/*
 * A queue standing in the modem: the shaper's bound is the modem's rate, so
 * once 20 ms of queue is there (a burst of someone else's at 10 s), TCP
 * keeps it full and nothing the raise and bloat rules do moves it unless it
 * is cut below the line. It must drain, and not be taken as the path's.
 */
static void
test_standing_queue(void **state)
{
	struct scen s = scen("standing", 30000, modem_steady, flows_rrul);
	struct run r;
	double settle, lat, g;

	(void)state;
	s.max[DOWN] = 100;
	s.max[UP] = 20;
	s.inject_t = 10000;
	s.inject_ms[DOWN] = 20;
	s.inject_ms[UP] = 5.5;
	simulate(&s, &r);
	settle = settled_after(&r, DOWN, 10000, 30000, 3.0);
	lat = median(r.qd[DOWN], 13000, 30000);
	g = share(&r, DOWN, 13000, 30000);
	SIM_FIGURE("autorate standing queue of 20 ms down / 5.5 ms up at the modem's rate: down "
		   "under 3 ms after %.2f s, then median %.2f ms / %.2f ms up, goodput %.3f down / "
		   "%.3f up; %llu taken as the path's",
		   settle, lat, median(r.qd[UP], 13000, 30000), g, share(&r, UP, 13000, 30000),
		   (unsigned long long)(why(&r.a[DOWN], AR_WHY_PATH) + why(&r.a[UP], AR_WHY_PATH)));
	CHECK(settle >= 0 && settle <= 3.0);
	/*
	 * Down: the rise a standing queue must reach to be cut is `clear` (3
	 * ms), read from TSvals in whole ms and as an interval's lowest of a
	 * queue TCP moves up and down: 3.6-4.0 ms stays (owd.c on whole-ms
	 * TSvals; 1.9 ms in a model without their rounding).
	 */
	CHECK(lat <= 4.5 && median(r.qd[UP], 13000, 30000) <= 3.0);
	CHECK(g >= 0.90 && share(&r, UP, 13000, 30000) >= 0.88);
	CHECK(why(&r.a[DOWN], AR_WHY_PATH) + why(&r.a[UP], AR_WHY_PATH) == 0);
	run_free(&r);
}

/*
 * The bed's RRUL through its modems with the shaper's max at their rate
 * (e2e_autorate_workers), the upstream modem carrying 2 % less of what the
 * shaper counts (its framing): the upload fills the modem's queue slowly
 * and is cut for it now and then. Every 2.013 s from 5 s (a new phase
 * against the intervals each time) a burst past the shaper puts 40 ms
 * into that queue and, a round trip later, the uploads back off at once (a
 * timeout: two segments, then slow start). An interval that reads the
 * queue ends early, and what was sent in it is TCP's pace after the
 * back-off (a third of the line), not the line's: a line does not fall to
 * a third in 50 ms while the RTT rises 25 ms. Before, cut to 0.26 of the
 * modem and not back at 0.8 of it before the next burst.
 */
static double
modem_framed(int d, uint32_t t)
{
	(void)t;
	return d == UP ? 19.6 : 100;
}

#define BACKOFF_EVERY 2013

static bool
backoff_every_2s(uint32_t t)
{
	return t >= 5000 && t % BACKOFF_EVERY == 0;
}

static void
test_backoff(void **state)
{
	struct scen s = scen("backoff", 30000, modem_framed, flows_rrul);
	struct run r;
	double lo = 1e9, held = 0, back = 0, gu;

	(void)state;
	s.max[DOWN] = 100;
	s.max[UP] = 20;
	s.backoff = backoff_every_2s;
	s.backoff_ms = 40;
	s.backoff_after = 60;
	simulate(&s, &r);
	for (uint32_t t = 5000; t < 30000; t++) {
		double f = r.rate[UP][t] / r.cap[UP][t];

		lo = f < lo ? f : lo;
		held += f;
	}
	held /= 25000;
	/* The longest from a burst until the rate is back at 0.8 of the modem (a probe's cut
	 * leaves 0.87-0.89). */
	for (uint32_t t0 = 3 * BACKOFF_EVERY; t0 + BACKOFF_EVERY <= 30000; t0 += BACKOFF_EVERY)
		for (uint32_t t = t0; t < t0 + BACKOFF_EVERY; t++)
			if (r.rate[UP][t] < 0.8 * r.cap[UP][t] && (t + 1 - t0) / 1000.0 > back)
				back = (t + 1 - t0) / 1000.0;
	gu = share(&r, UP, 5000, 30000);
	SIM_FIGURE("autorate uploads backing off in a burst's queue every 2 s, max the modem's "
		   "rate: lowest upload rate %.3f of the modem, %.3f on average; under 0.8 of it "
		   "until %.2f s after a burst at the latest; goodput %.3f up; %llu cuts up",
		   lo, held, back, gu, (unsigned long long)r.a[UP].downs);
	CHECK(lo >= 0.5);
	CHECK(back <= 1.5);
	CHECK(gu >= 0.88);
	run_free(&r);
}

/* A far-end server's own queue grows on one flow of eight: not the line's; no cuts for it. */
static void
test_far_end_queue(void **state)
{
	struct scen s = scen("far", 40000, modem_steady, flows_down);
	struct run r;
	double g;

	(void)state;
	s.far = far_growing;
	simulate(&s, &r);
	g = share(&r, DOWN, 10000, 40000);
	SIM_FIGURE("autorate far-end queue 0 -> 300 ms on one flow: goodput %.3f of the modem, "
		   "rate %.1f Mbit/s at the end, induced median %.2f ms",
		   g, r.rate[DOWN][39999], median(r.qd[DOWN], 10000, 40000));
	CHECK(g >= 0.90);
	run_free(&r);
}

/* Churn of short flows; the downstream modem halves at 20 s. */
static double
modem_churn(int d, uint32_t t)
{
	return d == UP ? 20 : (t < 20000 ? 100 : 50);
}

static void
test_churn(void **state)
{
	struct scen s = scen("churn", 40000, modem_churn, flows_churn);
	struct run r;
	double settle, lat, p95;

	(void)state;
	simulate(&s, &r);
	settle = settled_after(&r, DOWN, 20000, 40000, 10.0);
	lat = median(r.qd[DOWN], 22000, 40000);
	p95 = pct(r.qd[DOWN], 22000, 40000, 95);
	SIM_FIGURE("autorate churn of short flows, down modem halved: induced latency under 10 ms "
		   "after %.2f s, then median %.2f ms, p95 %.1f ms; rate %.1f Mbit/s at the end, "
		   "goodput %.3f of the modem from 2 s on",
		   settle, lat, p95, r.rate[DOWN][39999], share(&r, DOWN, 22000, 40000));
	CHECK(settle >= 0 && settle <= 2.0);
	CHECK(lat <= 5.0);
	run_free(&r);
}

/*
 * Short flows only, on a steady 100/20 line: a new download every 20 ms,
 * 15 to 60 kB (a web page's objects, an API's answers), to one of eight
 * servers, each over in one to three round trips; from 10 s four bulk
 * downloads without timestamps (Windows' default: no WAN-side sample of
 * their own but the handshake) fill the modem. A short flow begun under that queue has at
 * most one sample past its first two, against a minimum it took under the
 * queue: by its own baseline the line reads clear.
 */
static void
flows_churn_short(struct flow *f, uint32_t t, uint32_t *seed)
{
	if (t == 10000)
		for (int i = 0; i < 4; i++)
			flow_open(&f[i], DOWN, rtts[i], false, -1, t);
	if (t % 20 != 0)
		return;
	for (int i = 4; i < NF_MAX; i++)
		if (!f[i].on) {
			double bytes = (15 + rnd(seed, 45)) * 1000.0;

			flow_open(&f[i], DOWN, rtts[rnd(seed, 8)], true, bytes, t);
			return;
		}
}

static void
test_churn_short(void **state)
{
	struct scen s = scen("churn_short", 40000, modem_steady, flows_churn_short);
	struct run r;
	double settle, lat, p95, g;

	(void)state;
	s.max[DOWN] = 100;
	simulate(&s, &r);
	settle = settled_after(&r, DOWN, 10000, 40000, 15.0);
	lat = median(r.qd[DOWN], 12000, 40000);
	p95 = pct(r.qd[DOWN], 12000, 40000, 95);
	g = share(&r, DOWN, 12000, 40000);
	SIM_FIGURE("autorate short flows only (15-60 kB every 20 ms), then bulk downloads without "
		   "timestamps from 10 s: induced latency peak %.0f ms, under 15 ms after %.2f s "
		   "(-1: never), then median %.1f ms, p95 %.1f ms; goodput %.3f of the modem; rate "
		   "%.1f Mbit/s at the end, %llu cuts, %llu samples/s",
		   peak(r.qd[DOWN], 10000, 40000), settle, lat, p95, g, r.rate[DOWN][39999],
		   (unsigned long long)r.a[DOWN].downs, (unsigned long long)(r.samples / 40));
	CHECK(settle >= 0 && settle <= 2.0);
	CHECK(lat <= 5.0);
	CHECK(g >= 0.85);
	run_free(&r);
}

/*
 * Windows' default everywhere: the short flows of flows_churn_short and
 * then the bulk downloads, all without timestamps. Their only WAN-side
 * samples are the handshakes (SYN to SYN-ACK, one a flow, waiting in the
 * downstream modem's queue like the data), each judged by its server's
 * baseline from the other flows' handshakes.
 */
static void
flows_churn_no_ts(struct flow *f, uint32_t t, uint32_t *seed)
{
	flows_churn_short(f, t, seed);
	for (int i = 4; i < NF_MAX; i++)
		if (f[i].on && f[i].start_ms == t)
			f[i].ts = false;
}

static void
test_churn_no_ts(void **state)
{
	struct scen s = scen("churn_no_ts", 40000, modem_steady, flows_churn_no_ts);
	struct run r;
	double settle, lat, p95, g;

	(void)state;
	s.max[DOWN] = 100;
	simulate(&s, &r);
	settle = settled_after(&r, DOWN, 10000, 40000, 15.0);
	lat = median(r.qd[DOWN], 12000, 40000);
	p95 = pct(r.qd[DOWN], 12000, 40000, 95);
	g = share(&r, DOWN, 12000, 40000);
	SIM_FIGURE("autorate short flows (15-60 kB every 20 ms) and from 10 s bulk downloads, none "
		   "with timestamps: induced latency peak %.0f ms, under 15 ms after %.2f s (-1: "
		   "never), then median %.1f ms, p95 %.1f ms; goodput %.3f of the modem; rate %.1f "
		   "Mbit/s at the end, %llu cuts; samples/s %llu (handshake %llu, sequence %llu, "
		   "timestamp %llu)",
		   peak(r.qd[DOWN], 10000, 40000), settle, lat, p95, g, r.rate[DOWN][39999],
		   (unsigned long long)r.a[DOWN].downs, (unsigned long long)(r.samples / 40),
		   (unsigned long long)(r.by_src[2] / 40), (unsigned long long)(r.by_src[1] / 40),
		   (unsigned long long)(r.by_src[0] / 40));
	CHECK(r.by_src[0] == 0 && r.by_src[2] > 0);
	CHECK(settle >= 0 && settle <= 2.0);
	CHECK(lat <= 5.0);
	CHECK(g >= 0.85);
	run_free(&r);
}

/*
 * Servers whose TSval clocks run slow or fast against ours (an NTP-slewed
 * clock against the undisciplined TSC: 50-100 ppm), steady RRUL for 60 s.
 * A clock 100 ppm slow puts 1 ms more into the one-way delay every 10 s:
 * against a minimum up to 20 s old, a false rise of up to 2 ms, which
 * owd.c must not pass on as the downstream's queue.
 */
static void
drift(double ppm, bool mixed, double *gd, double *gu, uint64_t *cuts, double *lo, double *rise)
{
	struct scen s = scen("drift", 60000, modem_steady, flows_rrul);
	struct run r;

	s.clock_ppm = ppm;
	s.clock_mixed = mixed;
	simulate(&s, &r);
	*gd = share(&r, DOWN, 10000, 60000);
	*gu = share(&r, UP, 10000, 60000);
	*cuts = r.a[DOWN].downs + r.a[UP].downs;
	*lo = 1e9;
	for (uint32_t t = 10000; t < 60000; t++)
		*lo = r.rate[DOWN][t] < *lo ? r.rate[DOWN][t] : *lo;
	*rise = median(r.owd, 10000, 60000);
	SIM_FIGURE("autorate servers' clocks %s%.0f ppm%s, steady RRUL 60 s: downstream one-way "
		   "rise median %.2f ms, p95 %.2f ms; goodput %.3f down / %.3f up from 10 s on, "
		   "lowest downstream rate %.1f Mbit/s, %llu cuts down (%llu standing) / %llu up",
		   ppm > 0   ? "slow "
		   : ppm < 0 ? "fast "
			     : "",
		   fabs(ppm), mixed ? " (every other fast)" : "", *rise,
		   pct(r.owd, 10000, 60000, 95), *gd, *gu, *lo, (unsigned long long)r.a[DOWN].downs,
		   (unsigned long long)why(&r.a[DOWN], AR_WHY_CUT_STANDING),
		   (unsigned long long)r.a[UP].downs);
	run_free(&r);
}

static void
test_clock_drift(void **state)
{
	static const double ppm[] = { 0, 50, 100, -100, 100 };
	double gd[5], gu[5], lo[5], rise[5];
	uint64_t cuts[5];

	(void)state;
	for (int i = 0; i < 5; i++)
		drift(ppm[i], i == 4, &gd[i], &gu[i], &cuts[i], &lo[i], &rise[i]);
	/*
	 * The false rise is gone (without owd.c's creep: a median of 0.82 ms
	 * at 50 ppm and 1.64 ms at 100), so nothing more is cut than with
	 * true clocks (the count varies by a few either way).
	 */
	for (int i = 1; i < 5; i++) {
		CHECK(rise[i] <= 0.5);
		CHECK(gd[i] >= 0.92 && gu[i] >= 0.88);
		CHECK(cuts[i] <= cuts[0] + 5);
	}
}

/* Upload only, the up modem falling to a quarter: the downstream (ACKs only) is left alone. */
static void
test_upload_only(void **state)
{
	struct scen s = scen("upload", 30000, modem_fall_up, flows_up);
	struct run r;
	double settle, g;

	(void)state;
	fall_to = 0.25;
	simulate(&s, &r);
	settle = settled_after(&r, UP, 10000, 30000, 15.0);
	g = share(&r, UP, 15000, 30000);
	SIM_FIGURE("autorate upload only, up modem 20 -> 5: latency under 15 ms after %.2f s, "
		   "goodput %.3f; downstream rate %.1f Mbit/s (of 100), %llu downstream cuts",
		   settle, g, r.rate[DOWN][29999], (unsigned long long)r.a[DOWN].downs);
	CHECK(settle >= 0 && settle <= 2.0);
	CHECK(g >= 0.85);
	CHECK(r.rate[DOWN][29999] >= 90.0);
	run_free(&r);
}

/* Uploads without timestamps (timed by sequence and ACK), the up modem 20 -> 5 at 10 s. */
static void
flows_up_no_ts(struct flow *f, uint32_t t, uint32_t *seed)
{
	flows_up(f, t, seed);
	for (int i = 0; i < 4 && t == 0; i++)
		f[i].ts = false;
}

static void
test_upload_no_ts(void **state)
{
	struct scen s = scen("upload_no_ts", 30000, modem_fall_up, flows_up_no_ts);
	struct run r;
	double settle, g0, g, held0;

	(void)state;
	fall_to = 0.25;
	simulate(&s, &r);
	settle = settled_after(&r, UP, 10000, 30000, 15.0);
	g0 = share(&r, UP, 3000, 10000);
	g = share(&r, UP, 15000, 30000);
	held0 = median(r.rate[UP], 3000, 10000);
	SIM_FIGURE("autorate uploads without timestamps, up modem 20 -> 5: rate held %.1f Mbit/s "
		   "before the fall (modem 20), goodput %.3f; after it latency under 15 ms after %.2f "
		   "s, goodput %.3f; %llu cuts; samples/s %llu (sequence %llu, handshake %llu)",
		   held0, g0, settle, g, (unsigned long long)r.a[UP].downs,
		   (unsigned long long)(r.samples / 30), (unsigned long long)(r.by_src[1] / 30),
		   (unsigned long long)(r.by_src[2] / 30));
	CHECK(r.by_src[1] > 0 && r.by_src[0] == 0);
	CHECK(g0 >= 0.90);
	CHECK(settle >= 0 && settle <= 2.0);
	CHECK(g >= 0.85);
	run_free(&r);
}

/* RRUL, the down modem falls to 25 % and the up stays: the upload keeps its rate. */
static void
test_asymmetric(void **state)
{
	struct scen s = scen("asym", 30000, modem_fall, flows_rrul);
	struct run r;
	double settle, gd, gu;

	(void)state;
	fall_to = 0.25;
	simulate(&s, &r);
	settle = settled_after(&r, DOWN, 10000, 30000, 15.0);
	gd = share(&r, DOWN, 15000, 30000);
	gu = share(&r, UP, 10000, 30000);
	SIM_FIGURE("autorate asymmetric, down 100 -> 25, up stays 20: down latency under 15 ms "
		   "after %.2f s, goodput %.3f down / %.3f up",
		   settle, gd, gu);
	CHECK(settle >= 0 && settle <= 2.0);
	CHECK(gd >= 0.85 && gu >= 0.85);
	run_free(&r);
}

/* Idle 20 s (the rate decays to base), then RRUL on a line below base. */
static double
modem_low(int d, uint32_t t)
{
	(void)t;
	return d == UP ? 8 : 40;
}

static void
test_idle_then_load(void **state)
{
	struct scen s = scen("idle", 35000, modem_low, flows_idle_then_load);
	struct run r;
	double settle, g;

	(void)state;
	s.base[DOWN] = 50;
	s.base[UP] = 10;
	simulate(&s, &r);
	settle = settled_after(&r, DOWN, 20000, 35000, 15.0);
	g = share(&r, DOWN, 25000, 35000);
	SIM_FIGURE("autorate idle 20 s then RRUL on a 40/8 line: rate at the end of idle %.1f / "
		   "%.1f Mbit/s (base 50 / 10); latency under 15 ms after %.2f s, goodput %.3f down",
		   r.rate[DOWN][19999], r.rate[UP][19999], settle, g);
	CHECK(fabs(r.rate[DOWN][19999] - 50) < 2.5 && fabs(r.rate[UP][19999] - 10) < 0.5);
	CHECK(settle >= 0 && settle <= 2.0);
	CHECK(g >= 0.85);
	run_free(&r);
}

/*
 * RRUL with timestamps off on the client (Windows' default), both modems
 * halved at 10 s and back at 25 s: the downloads' only WAN-side samples are
 * their handshakes, so every sample after them comes from the uploads'
 * sequence/ACK timing, and carries both modems' queues. Each direction
 * must still be cut for its own queue only.
 */
static void
flows_rrul_no_ts(struct flow *f, uint32_t t, uint32_t *seed)
{
	flows_rrul(f, t, seed);
	for (int i = 0; i < 8 && t == 0; i++)
		f[i].ts = false;
}

static void
test_halving_no_ts(void **state)
{
	struct scen s = scen("halving_no_ts", 40000, modem_halving, flows_rrul_no_ts);
	struct run r;

	(void)state;
	s.max[DOWN] = 100;
	s.max[UP] = 20;
	simulate(&s, &r);
	for (int d = 0; d < 2; d++) {
		double settle = median_back_under(r.qd[d], 10000, 25000, 10.0);
		double lat = median(r.qd[d], 11000, 25000), p95 = pct(r.qd[d], 11000, 25000, 95);
		double held = 0, g = share(&r, d, 13000, 25000);

		for (uint32_t t = 13000; t < 25000; t++)
			held += r.rate[d][t] / r.cap[d][t];
		held /= 12000;
		SIM_FIGURE("autorate halving without timestamps %s: induced latency's 1-s median "
			   "under 10 ms after %.2f s, then median %.2f ms, p95 %.1f ms, peak %.0f ms; "
			   "rate held %.3f of the halved modem, goodput %.3f; %llu cuts; samples/s "
			   "%llu (sequence %llu, handshake %llu)",
			   d == DOWN ? "down" : "up", settle, lat, p95, peak(r.qd[d], 11000, 25000),
			   held, g, (unsigned long long)r.a[d].downs,
			   (unsigned long long)(r.samples / 40),
			   (unsigned long long)(r.by_src[1] / 40),
			   (unsigned long long)(r.by_src[2] / 40));
		/*
		 * The bed's measure (a probe's 1-s median). The probes over each
		 * line's rate still reach 10-20 ms for a refractory period when
		 * the wrong one of the two is cut first (p95, peak).
		 */
		CHECK(settle >= 0 && settle <= 1.0);
		CHECK(lat <= 5.0 && p95 <= 15.0);
		CHECK(held >= 0.70);
		CHECK(g >= 0.70);
	}
	CHECK(r.by_src[0] == 0 && r.by_src[1] > 0);
	run_free(&r);
}

/*
 * The same without timestamps, the down modem alone falling 100 -> 25 under
 * RRUL: every sample holds both modems' queues. The upload may be cut
 * once or twice for the download's queue (at its line while the download
 * fell below its own), but no more: without at_line (0) it was cut at every
 * rise with the download, to 0.45 of its modem (21 / 8 cuts now, 25 / 24).
 */
static void
test_asymmetric_no_ts(void **state)
{
	struct scen s = scen("asym_no_ts", 30000, modem_fall, flows_rrul_no_ts);
	struct run r;
	double settle, gd, gu;

	(void)state;
	s.max[DOWN] = 100;
	s.max[UP] = 20;
	fall_to = 0.25;
	simulate(&s, &r);
	settle = median_back_under(r.qd[DOWN], 10000, 30000, 15.0);
	gd = share(&r, DOWN, 15000, 30000);
	gu = share(&r, UP, 10000, 30000);
	SIM_FIGURE("autorate asymmetric without timestamps, down 100 -> 25, up stays 20: down "
		   "latency's 1-s median under 15 ms after %.2f s, then median %.2f ms; goodput "
		   "%.3f down / %.3f up; %llu / %llu cuts",
		   settle, median(r.qd[DOWN], 12000, 30000), gd, gu,
		   (unsigned long long)r.a[DOWN].downs, (unsigned long long)r.a[UP].downs);
	CHECK(settle >= 0 && settle <= 2.0);
	CHECK(gd >= 0.85 && gu >= 0.70);
	run_free(&r);
}

/* Downloads without timestamps: no samples; stats say so, and the rate holds or decays. */
static void
test_no_timestamps(void **state)
{
	struct scen s = scen("no_ts", 10000, modem_steady, flows_no_ts);
	struct run r;

	(void)state;
	s.max[DOWN] = 120;
	s.base[DOWN] = 80;
	simulate(&s, &r);
	SIM_FIGURE("autorate downloads without timestamps, hold: %llu samples, %llu intervals "
		   "\"no_samples\", rate %.1f Mbit/s (start 120)",
		   (unsigned long long)r.samples,
		   (unsigned long long)why(&r.a[DOWN], AR_WHY_NO_SAMPLES), r.rate[DOWN][9999]);
	CHECK(r.samples == 0);
	CHECK(why(&r.a[DOWN], AR_WHY_NO_SAMPLES) >= 90);
	CHECK(fabs(r.rate[DOWN][9999] - 120) < 0.01);
	run_free(&r);
	s.decay_without_samples = true;
	simulate(&s, &r);
	SIM_FIGURE("autorate downloads without timestamps, decay: rate %.1f Mbit/s after 10 s "
		   "(base 80)",
		   r.rate[DOWN][9999]);
	CHECK(fabs(r.rate[DOWN][9999] - 80) < 1.0);
	run_free(&r);
}

/* ---------------------------------------------------------------------- */
/* Lines that move all the time                                            */
/* ---------------------------------------------------------------------- */

/*
 * A line's rates in steps: from at (ms) on, down and up Mbit/s (the last
 * step's end is the run's). Each scenario below fills one.
 */
struct step {
	uint32_t at;
	double down, up;
};

#define STEPS_MAX 128
static struct step steps[STEPS_MAX];
static uint32_t nsteps;
static uint32_t outage_every, outage_ms; /* every so many ms, an outage this long (0: never) */

static double
modem_steps(int d, uint32_t t)
{
	uint32_t i = 0;
	double m;

	while (i + 1 < nsteps && steps[i + 1].at <= t)
		i++;
	m = d == UP ? steps[i].up : steps[i].down;
	return m;
}

/* ms left of the outage under way (the line carries nothing; what waits leaves after). */
static uint32_t
outage_steps(uint32_t t)
{
	if (outage_every == 0 || t < outage_every || t % outage_every >= outage_ms)
		return 0;
	return outage_ms - t % outage_every;
}

static void
steps_add(uint32_t at, double down, double up)
{
	assert_true(nsteps < STEPS_MAX);
	steps[nsteps++] = (struct step){ .at = at, .down = down, .up = up };
}

/*
 * The walk of the modem's rates a new user tries under RRUL, 12 s each:
 * full, the download falls to half, then the upload too, a partial
 * recovery, a fall to a tenth, a full recovery.
 */
static void
line_walk(void)
{
	nsteps = outage_every = 0;
	steps_add(0, 100, 20);
	steps_add(12000, 50, 20);
	steps_add(24000, 50, 10);
	steps_add(36000, 75, 15);
	steps_add(48000, 10, 2);
	steps_add(60000, 100, 20);
	steps_add(72000, 100, 20);
}

/* A fall to a quarter and back to the full line, twice, 12 s each. */
static void
line_fall_recover(void)
{
	nsteps = outage_every = 0;
	steps_add(0, 100, 20);
	steps_add(12000, 25, 5);
	steps_add(24000, 100, 20);
	steps_add(36000, 25, 5);
	steps_add(48000, 100, 20);
	steps_add(60000, 100, 20);
}

/* LTE: both rates drawn anew every 1-2 s, 20-100 down and 4-20 up, for 60 s. */
static void
line_lte(void)
{
	uint32_t seed = 4242, t = 0;

	nsteps = outage_every = 0;
	while (t < 60000) {
		double f = 0.2 + rnd(&seed, 800) / 1000.0;

		steps_add(t, 100 * f, 20 * (0.2 + rnd(&seed, 800) / 1000.0));
		t += 1000 + rnd(&seed, 1000);
	}
	steps_add(60000, steps[nsteps - 1].down, steps[nsteps - 1].up);
}

/*
 * Starlink-like: a new satellite every 15 s, its rates 40-100 down and 8-20
 * up, a path 0-20 ms longer or shorter, and 100 ms of outage at each
 * switch.
 */
static const double starlink_down[] = { 100, 60, 85, 40, 95 };
static const double starlink_up[] = { 20, 12, 17, 8, 19 };
static const double starlink_path[] = { 0, 15, 5, 20, 0 };

static void
line_starlink(void)
{
	nsteps = 0;
	for (uint32_t i = 0; i < 5; i++)
		steps_add(i * 15000, starlink_down[i], starlink_up[i]);
	steps_add(75000, starlink_down[4], starlink_up[4]);
	outage_every = 15000;
	outage_ms = 100;
}

static double
path_starlink_walk(uint32_t t)
{
	return starlink_path[t / 15000 < 5 ? t / 15000 : 4];
}

/* Fine for a minute, then half for 3 s, then fine again. */
static void
line_dip(void)
{
	nsteps = outage_every = 0;
	steps_add(0, 100, 20);
	steps_add(60000, 50, 10);
	steps_add(63000, 100, 20);
	steps_add(75000, 100, 20);
}

/* What a step [from, to) of the line gave: the figures the walk is judged by. */
struct phase_fig {
	double med, p95; /* induced latency a ping crossing both modems meets, ms */
	double good[2];  /* goodput over the modem's rate, by direction */
	double back;     /* s until a second's goodput down is 0.85 of the modem (-1: never) */
};

static double *
ping_of(const struct run *r, uint32_t n)
{
	double *ping = calloc(n, sizeof(double));

	assert_non_null(ping);
	for (uint32_t t = 0; t < n; t++)
		ping[t] = r->qd[UP][t] + r->qd[DOWN][t];
	return ping;
}

static struct phase_fig figs[STEPS_MAX], fixs[STEPS_MAX];

/*
 * Runs s over the line in steps[] with autorate (into figs[], the run kept
 * in *r) and again with a fixed shaper at 95 % of the line's highest rates
 * (into fixs[]), and prints each step's figures side by side (per_step).
 */
static void
moving_line(struct scen *s, struct run *r, bool per_step)
{
	double hi[2] = { 0 };

	s->run_ms = steps[nsteps - 1].at;
	s->modem = modem_steps;
	for (uint32_t i = 0; i < nsteps; i++) {
		hi[DOWN] = steps[i].down > hi[DOWN] ? steps[i].down : hi[DOWN];
		hi[UP] = steps[i].up > hi[UP] ? steps[i].up : hi[UP];
	}
	for (int pass = 1; pass >= 0; pass--) {
		struct scen f = *s;
		struct phase_fig *out = pass == 0 ? figs : fixs;
		struct run fixed, *rr = pass == 0 ? r : &fixed;
		double *ping;

		if (pass == 1) {
			f.autorate[UP] = f.autorate[DOWN] = false;
			f.fixed[DOWN] = 0.95 * hi[DOWN];
			f.fixed[UP] = 0.95 * hi[UP];
		}
		simulate(&f, rr);
		ping = ping_of(rr, f.run_ms);
		for (uint32_t i = 0; i + 1 < nsteps; i++) {
			uint32_t a = steps[i].at, b = steps[i + 1].at;
			struct phase_fig *p = &out[i];

			p->med = median(ping, a, b);
			p->p95 = pct(ping, a, b, 95);
			for (int d = 0; d < 2; d++)
				p->good[d] = share(rr, d, a, b);
			p->back = reached_after(rr, DOWN, a, b, 0.85);
		}
		free(ping);
		if (pass == 1)
			run_free(&fixed);
	}
	for (uint32_t i = 0; per_step && i + 1 < nsteps; i++)
		SIM_FIGURE("autorate %s %u: %.0f / %.0f Mbit/s for %.0f s: induced median %.1f ms, "
			   "p95 %.1f ms, held %.3f down / %.3f up, 0.85 down after %.2f s | fixed "
			   "95 %%: median %.1f ms, p95 %.1f ms, held %.3f / %.3f",
			   s->name, i, steps[i].down, steps[i].up,
			   (steps[i + 1].at - steps[i].at) / 1000.0, figs[i].med, figs[i].p95,
			   figs[i].good[DOWN], figs[i].good[UP], figs[i].back, fixs[i].med,
			   fixs[i].p95, fixs[i].good[DOWN], fixs[i].good[UP]);
}

/*
 * The figures a walk is judged by: every step's induced median within 15
 * ms, and the p95 within 30 ms but in the steps of tail_ok (a bit per
 * step); the download held at 0.80 of the modem in the steps of low, and
 * 0.85 of it within back_s in the steps of back.
 */
static void
check_steps(uint32_t tail_ok, uint32_t low, uint32_t back, double back_s)
{
	for (uint32_t i = 0; i + 1 < nsteps; i++) {
		CHECK(figs[i].med <= 15.0);
		if (!(tail_ok >> i & 1))
			CHECK(figs[i].p95 <= 30.0);
		if (low >> i & 1)
			CHECK(figs[i].good[DOWN] >= 0.80);
		if (back >> i & 1)
			CHECK(figs[i].back >= 0 && figs[i].back <= back_s);
	}
}

/* The walk of the modem's rates a new user tries under RRUL (the bed's walk in short). */
static void
test_walk(void **state)
{
	struct scen s = scen("walk", 0, modem_steps, flows_rrul);
	struct run r;

	(void)state;
	line_walk();
	moving_line(&s, &r, true);
	/*
	 * Not the p95 of the fall to a tenth (10/2): the upload sends 7x its
	 * line until its first reading that puts the rise in it, 30-230 ms
	 * on as the fall meets the intervals, and its modem's queue is then
	 * 150-300 ms, which takes longer than 5 % of the step to drain at any
	 * rate (82-195 ms across changes that only move that meeting). Back
	 * at 0.85 within 4 s (the bound is 10): at the probe step alone, 5.25 s
	 * (regain).
	 */
	check_steps(1u << 4, 0x1e, 1u << 5, 4.0);
	run_free(&r);
}

static void
test_fall_recover(void **state)
{
	struct scen s = scen("fall_recover", 0, modem_steps, flows_rrul);
	struct run r;

	(void)state;
	line_fall_recover();
	moving_line(&s, &r, true);
	/*
	 * The falls to a quarter leave a p95 of 101 and 33 ms, the upload's
	 * queue again (the first cut sized from what it sent in the part of an
	 * interval before the rise was read). Back within 3.5 s: 3.85 and 4.0
	 * s at the probe step alone.
	 */
	check_steps(0x0a, 0x0a, 0x14, 3.5);
	run_free(&r);
}

/* LTE: the figures over 10-s windows (a step of 1-2 s is too short to judge alone). */
static void
test_lte(void **state)
{
	struct scen s = scen("lte", 0, modem_steps, flows_rrul);
	struct run r, fixed;
	double *ping, *fping;

	(void)state;
	line_lte();
	moving_line(&s, &r, false);
	s.autorate[UP] = s.autorate[DOWN] = false;
	s.fixed[DOWN] = 95;
	s.fixed[UP] = 19;
	simulate(&s, &fixed);
	ping = ping_of(&r, s.run_ms);
	fping = ping_of(&fixed, s.run_ms);
	for (uint32_t t = 0; t < s.run_ms; t += 10000)
		SIM_FIGURE("autorate lte %u-%u s: induced median %.1f ms, p95 %.1f ms, held %.3f "
			   "down / %.3f up | fixed 95 %%: median %.1f ms, p95 %.1f ms, held %.3f / "
			   "%.3f",
			   t / 1000, t / 1000 + 10, median(ping, t, t + 10000),
			   pct(ping, t, t + 10000, 95), share(&r, DOWN, t, t + 10000),
			   share(&r, UP, t, t + 10000), median(fping, t, t + 10000),
			   pct(fping, t, t + 10000, 95), share(&fixed, DOWN, t, t + 10000),
			   share(&fixed, UP, t, t + 10000));
	SIM_FIGURE("autorate lte 5-60 s: induced median %.1f ms, p95 %.1f ms, held %.3f down / "
		   "%.3f up; %llu / %llu cuts",
		   median(ping, 5000, s.run_ms), pct(ping, 5000, s.run_ms, 95),
		   share(&r, DOWN, 5000, s.run_ms), share(&r, UP, 5000, s.run_ms),
		   (unsigned long long)r.a[DOWN].downs, (unsigned long long)r.a[UP].downs);
	/*
	 * The median only: each of the falls every 1-2 s queues 30-80 ms for
	 * a few hundred ms (a p95 of 35-79 ms per 10 s), and each rise waits
	 * on the raises (0.69-0.87 held).
	 */
	CHECK(median(ping, 5000, s.run_ms) <= 15.0);
	free(ping);
	free(fping);
	run_free(&r);
	run_free(&fixed);
}

static void
test_starlink(void **state)
{
	struct scen s = scen("starlink", 0, modem_steps, flows_rrul);
	struct run r;

	(void)state;
	line_starlink();
	s.path = path_starlink_walk;
	s.outage = outage_steps;
	moving_line(&s, &r, true);
	outage_every = 0;
	check_steps(0, 0x1e, 0x14, 10.0);
	run_free(&r);
}

static void
test_dip(void **state)
{
	struct scen s = scen("dip", 0, modem_steps, flows_rrul);
	struct run r;

	(void)state;
	line_dip();
	moving_line(&s, &r, true);
	/* The 3 s at half: a p95 of 37 ms (the fall's queue is 12 % of the step). */
	check_steps(0x2, 0x2, 0x4, 10.0);
	run_free(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_falls_to_10),
		cmocka_unit_test(test_falls_to_25),
		cmocka_unit_test(test_steady),
		cmocka_unit_test(test_halving),
		cmocka_unit_test(test_path_steps),
		cmocka_unit_test(test_path_steps_flow_joins),
		cmocka_unit_test(test_path_steps_dips),
		cmocka_unit_test(test_path_steps_stalls),
		cmocka_unit_test(test_path_steps_acks),
		cmocka_unit_test(test_far_end_queue),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_churn),
		cmocka_unit_test(test_churn_short),
		cmocka_unit_test(test_churn_no_ts),
		cmocka_unit_test(test_upload_no_ts),
		cmocka_unit_test(test_upload_only),
		cmocka_unit_test(test_asymmetric),
		cmocka_unit_test(test_idle_then_load),
		cmocka_unit_test(test_no_timestamps),
		cmocka_unit_test(test_standing_queue),
		cmocka_unit_test(test_falls_both_to_10),
		cmocka_unit_test(test_clock_drift),
		cmocka_unit_test(test_halving_no_ts),
		cmocka_unit_test(test_asymmetric_no_ts),
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_fall_recover),
		cmocka_unit_test(test_lte),
		cmocka_unit_test(test_starlink),
		cmocka_unit_test(test_dip),
	};

	/* AR_ONLY=pattern: those scenarios only; AR_SEED=n: another draw of the jitter. */
	if (getenv("AR_ONLY") != NULL)
		cmocka_set_test_filter(getenv("AR_ONLY"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
