/*
 * fq_codel tests, through the public sched API: DRR fairness in bytes,
 * new-flow priority, the CoDel drop schedule (first drop after an interval
 * above target, then interval/sqrt(count)), its re-entry at count -
 * lastcount, ECN marking instead of drops, ce_threshold, the L4S step
 * (ECT(1) marked past it whatever CoDel says, classic flows untouched,
 * mixed queues, CE by flow history, live switch, l4s off as before), overflow
 * head-drops from the fattest flow (packet and memory limits), the
 * optional time-based shaper, live updates, and the identity enqueued =
 * dequeued + dropped + backlog.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/classify.h"
#include "shaper/rand.h"
#include "shaper/sched.h"
#include "pktbuild.h"

#define POOL 24000
#define HDR  64
#define MS   1000000ULL

/* Packets with their own small header buffer; len is set independently. */
struct pool {
	struct sh_pkt pkt[POOL];
	uint8_t hdr[POOL][HDR];
	int flow[POOL];
	uint32_t seq[POOL];
	struct sh_pkt *free_list;
	struct classify_key key;
	uint32_t next_seq;
};

static struct pool *P;

static int
setup(void **state)
{
	(void)state;
	P = calloc(1, sizeof(*P));
	if (P == NULL)
		return -1;
	classify_key_init(&P->key, 99);
	for (int i = POOL - 1; i >= 0; i--) {
		P->pkt[i].next = P->free_list;
		P->free_list = &P->pkt[i];
	}
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	free(P);
	return 0;
}

static inline int
idx_of(const struct sh_pkt *p)
{
	return (int)(p - P->pkt);
}

/* A UDP packet of flow f (distinct source address/port), len bytes, ECN bits. */
static struct sh_pkt *
mk(int f, uint32_t len, uint8_t ecn)
{
	struct sh_pkt *p = P->free_list;
	struct pb b;
	int i;

	assert_non_null(p);
	P->free_list = p->next;
	i = idx_of(p);
	pb_init(&b);
	pb_eth_macs(&b, 1, 2);
	pb_u16(&b, 0x0800);
	pb_ipv4(&b, 0x0a000000u + (uint32_t)f, 0x08080808u, 17, ecn, 0, 0);
	pb_udp(&b, (uint16_t)(1000 + f), 443);
	pb_finish(&b);
	memcpy(P->hdr[i], b.b, b.len);
	memset(p, 0, sizeof(*p));
	p->data = P->hdr[i];
	p->hdr_len = b.len;
	p->len = len;
	classify_pkt(p, &P->key);
	p->mem = len + 512; /* a buffer footprint larger than the frame */
	P->flow[i] = f;
	P->seq[i] = P->next_seq++;
	return p;
}

static void
release(struct sh_pkt *p)
{
	p->next = P->free_list;
	P->free_list = p;
}

static void
release_list(struct sh_pkt_list *l)
{
	struct sh_pkt *p;

	while ((p = sh_pkt_list_pop(l)) != NULL)
		release(p);
}

static struct sched *
mk_sched(struct sched_params *prm)
{
	char err[128] = "";
	struct sched *s = sched_create(prm, err, sizeof(err));

	if (s == NULL)
		fprintf(stderr, "sched_create: %s\n", err);
	assert_non_null(s);
	return s;
}

static void
drain(struct sched *s, uint64_t now)
{
	struct sh_pkt_list d;
	struct sh_pkt *p;

	sh_pkt_list_init(&d);
	while ((p = sched_dequeue(s, now, &d)) != NULL)
		release(p);
	release_list(&d);
}

static void
check_identity(const struct sched *s)
{
	struct sched_stats st;
	uint64_t drops = 0;

	sched_get_stats(s, &st);
	for (int r = 0; r < SHAPER_DROP_MAX; r++)
		drops += st.dropped[r];
	assert_int_equal(st.enqueued_pkts, st.dequeued_pkts + drops + st.backlog_pkts);
}

/* ---- fairness ---- */

static void
test_equal_byte_shares(void **state)
{
	static const uint32_t sizes[4] = { 1514, 1000, 300, 64 };
	uint64_t bytes[4] = { 0 };
	struct sched_params prm;
	struct sched *s;
	struct sh_pkt_list d;
	uint64_t total = 0;

	(void)state;
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	s = mk_sched(&prm);
	sh_pkt_list_init(&d);
	/* keep every flow backlogged; sojourn 0 so CoDel stays quiet */
	for (int f = 0; f < 4; f++)
		for (int k = 0; k < 400; k++)
			assert_int_equal(sched_enqueue(s, mk(f, sizes[f], 0), 0, &d), 0);
	while (total < 4 * 200000) {
		struct sh_pkt *p = sched_dequeue(s, 0, &d);

		assert_non_null(p);
		bytes[P->flow[idx_of(p)]] += p->len;
		total += p->len;
		/* refill the flow so it never runs dry */
		assert_int_equal(sched_enqueue(s, mk(P->flow[idx_of(p)], p->len, 0), 0, &d), 0);
		release(p);
	}
	assert_int_equal(d.count, 0);
	for (int f = 0; f < 4; f++) {
		double share = (double)bytes[f] / (double)total;

		assert_true(share > 0.24 && share < 0.26);
	}
	check_identity(s);
	drain(s, 0);
	sched_free(s);
}

static void
test_new_flow_priority(void **state)
{
	struct sched_params prm;
	struct sched *s;
	struct sh_pkt_list d;
	struct sh_pkt *p, *sparse;

	(void)state;
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	s = mk_sched(&prm);
	sh_pkt_list_init(&d);
	for (int k = 0; k < 200; k++) {
		sched_enqueue(s, mk(1, 1514, 0), 0, &d);
		sched_enqueue(s, mk(2, 1514, 0), 0, &d);
	}
	for (int k = 0; k < 10; k++)
		release(sched_dequeue(s, 0, &d));
	/* both bulk flows are now in the old list; a new flow jumps ahead */
	sparse = mk(3, 100, 0);
	sched_enqueue(s, sparse, 0, &d);
	p = sched_dequeue(s, 0, &d);
	assert_ptr_equal(p, sparse);
	release(p);
	drain(s, 0);
	sched_free(s);
}

/*
 * A new flow that empties while old flows wait is parked at the old tail,
 * so a flow sending one packet at a time cannot keep new-flow priority.
 */
static void
test_anti_starvation(void **state)
{
	struct sched_params prm;
	struct sched *s;
	struct sh_pkt_list d;
	struct sh_pkt *p;

	(void)state;
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	s = mk_sched(&prm);
	sh_pkt_list_init(&d);
	for (int k = 0; k < 50; k++)
		sched_enqueue(s, mk(1, 100, 0), 0, &d);
	/* 16 packets use up flow 1's first quantum; the 17th moves it to old */
	for (int k = 0; k < 17; k++) {
		p = sched_dequeue(s, 0, &d);
		assert_int_equal(P->flow[idx_of(p)], 1);
		release(p);
	}
	sched_enqueue(s, mk(2, 100, 0), 0, &d);
	p = sched_dequeue(s, 0, &d);
	assert_int_equal(P->flow[idx_of(p)], 2); /* new flow first */
	release(p);
	p = sched_dequeue(s, 0, &d);
	assert_int_equal(P->flow[idx_of(p)], 1);
	release(p);
	/* flow 2 returns, but it still sits in old_flows behind flow 1 */
	sched_enqueue(s, mk(2, 100, 0), 0, &d);
	p = sched_dequeue(s, 0, &d);
	assert_int_equal(P->flow[idx_of(p)], 1);
	release(p);
	drain(s, 0);
	sched_free(s);
}

/* ---- CoDel ---- */

/*
 * One flow with 8000 packets queued at t=0, one dequeue per ms: sojourn
 * passes target at 5 ms, so the first signal comes one interval later and
 * then at drop_next += interval/sqrt(count). Returns the signal times (ms)
 * and how many were drops vs marks.
 */
static int
codel_run(uint8_t ecn_bits, bool ecn_on, uint64_t *times, int max, uint64_t *drops, uint64_t *marks,
	  uint64_t *ce_delivered)
{
	struct sched_params prm;
	struct sched *s;
	struct sh_pkt_list d;
	struct sched_stats st;
	int n = 0;

	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	prm.ecn = ecn_on;
	s = mk_sched(&prm);
	sh_pkt_list_init(&d);
	for (int k = 0; k < 8000; k++)
		assert_int_equal(sched_enqueue(s, mk(1, 1000, ecn_bits), 0, &d), 0);
	*ce_delivered = 0;
	for (uint64_t t = 0; t <= 2000; t++) {
		uint32_t before_drops = d.count;
		uint64_t before_marks;
		struct sh_pkt *p;

		sched_get_stats(s, &st);
		before_marks = st.ecn_marked;
		p = sched_dequeue(s, t * MS, &d);
		assert_non_null(p);
		sched_get_stats(s, &st);
		if ((d.count != before_drops || st.ecn_marked != before_marks) && n < max)
			times[n++] = t;
		/* one signal per dequeue in this steady state */
		assert_true(d.count - before_drops + st.ecn_marked - before_marks <= 1);
		if ((p->data[15] & 3) == 3)
			(*ce_delivered)++;
		release(p);
	}
	sched_get_stats(s, &st);
	*drops = st.dropped[SHAPER_DROP_AQM];
	*marks = st.ecn_marked;
	assert_int_equal(st.tin_count, 1);
	assert_string_equal(st.tins[0].name, "fq_codel");
	assert_int_equal(st.tins[0].drops, *drops);
	assert_int_equal(st.tins[0].ecn_mark, *marks);
	for (struct sh_pkt *p = d.head; p != NULL; p = p->next)
		assert_int_equal(p->drop_reason, SHAPER_DROP_AQM);
	release_list(&d);
	check_identity(s);
	drain(s, 3000 * MS);
	sched_free(s);
	return n;
}

/*
 * Linux's CoDel keeps 1/sqrt(count) in 16 bits and takes one Newton step,
 * y' = y (3 - count y^2) / 2, each time count moves (RFC 8289's reference
 * code does the same). Written here from that formula, in doubles with the
 * 16-bit truncation, as the model the schedule is checked against.
 */
static double
linux_inv_sqrt_step(double y, uint32_t count)
{
	double v = y * (3.0 - count * y * y) / 2.0;

	return floor(v * 65536.0) / 65536.0;
}

static void
check_schedule(const uint64_t *times, int n)
{
	double next, y = 65535.0 / 65536.0;

	/* first signal: target reached at 5 ms, plus one interval */
	assert_true(n > 10);
	assert_int_equal(times[0], 105);
	/* Linux's anchors: interval after the first signal, then interval/2 (one
	 * Newton step from 1.0 at count 2), then ~0.5625 interval at count 3. */
	assert_int_equal(times[1], 205);
	assert_true(times[2] >= 254 && times[2] <= 256);
	assert_true(times[3] >= 311 && times[3] <= 313);
	next = 105.0 + 100.0 * y; /* count 1 */
	for (int k = 1; k < n; k++) {
		/* due at the first whole ms at or after drop_next */
		uint64_t due = (uint64_t)ceil(next - 1e-9);

		assert_true(times[k] + 1 >= due && times[k] <= due + 1);
		y = linux_inv_sqrt_step(y, (uint32_t)(k + 1));
		next += 100.0 * y;
	}
	/* After many drops the steps converge on 1/sqrt(count). */
	assert_true(fabs(y - 1.0 / sqrt((double)n)) < 0.01);
}

static void
test_codel_drop_schedule(void **state)
{
	uint64_t times[256], drops, marks, ce;
	int n;

	(void)state;
	n = codel_run(0, true, times, 256, &drops, &marks, &ce);
	check_schedule(times, n);
	assert_int_equal(drops, (uint64_t)n);
	assert_int_equal(marks, 0);
	assert_int_equal(ce, 0);
	/* ECN off: ECT packets are dropped as well */
	n = codel_run(2, false, times, 256, &drops, &marks, &ce);
	check_schedule(times, n);
	assert_int_equal(drops, (uint64_t)n);
	assert_int_equal(marks, 0);
}

static void
test_codel_ecn_marks(void **state)
{
	uint64_t times[256], drops, marks, ce;
	int n;

	(void)state;
	n = codel_run(2, true, times, 256, &drops, &marks, &ce); /* ECT(0) */
	check_schedule(times, n);
	assert_int_equal(drops, 0);
	assert_int_equal(marks, (uint64_t)n);
	assert_int_equal(ce, marks);
	/* already-CE packets count as marked */
	n = codel_run(3, true, times, 256, &drops, &marks, &ce);
	assert_int_equal(drops, 0);
	assert_int_equal(marks, (uint64_t)n);
}

/*
 * CoDel's re-entry rule (RFC 8289 section 5: the pseudocode's
 * "delta = count - lastcount"): a queue that goes back above target soon
 * after a dropping episode resumes near the drop rate it left with (count
 * = delta, 1/sqrt(count) one Newton step from where it was, as Linux), so
 * the second drop of the new episode comes about interval/sqrt(delta)
 * after the first; with delta <= 1, or after a long quiet spell (16
 * intervals, as Linux), it starts over at count 1, one drop per interval.
 *
 * One flow, one dequeue per ms, the queue topped up with fresh packets
 * before each dequeue: to 20 (sojourn about 20 ms) in an episode's phase,
 * to 1 in a pause (the episode ends once it has drained). The model below
 * follows count, lastcount and 1/sqrt(count) from the drops each episode
 * made and predicts the gap between the next episode's first two drops.
 */
static const struct {
	uint64_t start_ms, depth;
	bool resumes; /* the episode starting here comes back soon enough */
} reentry_phases[] = {
	{ 0, 20, false },    /* ~29 drops */
	{ 1000, 1, false },  /* 50 ms pause */
	{ 1050, 20, true },  /* resumes at count 28: gap ~19 ms */
	{ 1280, 1, false },  /* 50 ms pause */
	{ 1330, 20, true },  /* resumes at the few drops of the last episode */
	{ 1600, 1, false },  /* 2.1 s pause: longer than 16 intervals */
	{ 3700, 20, false }, /* starts over: gap 100 ms; left after its 2nd drop */
	{ 3906, 1, false },  /* 74 ms pause */
	{ 3980, 20, true },  /* delta 1: starts over although it came back soon */
	{ 4300, 1, false },
};
#define REENTRY_END_MS   4400
#define REENTRY_EPISODES 5

static void
test_codel_reentry(void **state)
{
	uint64_t drops[REENTRY_EPISODES] = { 0 }, first[REENTRY_EPISODES][2];
	uint32_t seen[REENTRY_EPISODES] = { 0 };
	const int nphases = (int)(sizeof(reentry_phases) / sizeof(reentry_phases[0]));
	struct sched_params prm;
	struct sched *s;
	struct sh_pkt_list d;
	struct sched_stats st;
	uint32_t count = 0, lastcount = 0;
	double y = 1.0;
	int phase = 0, ep = -1;

	(void)state;
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	s = mk_sched(&prm);
	sh_pkt_list_init(&d);
	for (uint64_t t = 0; t < REENTRY_END_MS; t++) {
		while (phase + 1 < nphases && t >= reentry_phases[phase + 1].start_ms)
			phase++;
		if (reentry_phases[phase].depth > 1 && t == reentry_phases[phase].start_ms)
			ep++;
		sched_get_stats(s, &st);
		for (uint64_t k = st.backlog_pkts; k < reentry_phases[phase].depth; k++)
			assert_int_equal(sched_enqueue(s, mk(1, 1000, 0), t * MS, &d), 0);
		release(sched_dequeue(s, t * MS, &d));
		assert_true(ep >= 0 && ep < REENTRY_EPISODES);
		for (uint32_t k = 0; k < d.count; k++, drops[ep]++)
			if (seen[ep] < 2)
				first[ep][seen[ep]++] = t;
		release_list(&d);
	}
	drain(s, REENTRY_END_MS * MS);
	sched_free(s);

	assert_int_equal(drops[3], 2); /* the set-up for the delta = 1 case */
	for (int e = 0, p = 0; e < REENTRY_EPISODES; e++, p++) {
		double gap;

		while (reentry_phases[p].depth == 1)
			p++;
		assert_int_equal(seen[e], 2);
		if (reentry_phases[p].resumes && count - lastcount > 1) {
			count -= lastcount;
			y = linux_inv_sqrt_step(y, count);
		} else {
			count = 1;
			y = 65535.0 / 65536.0;
		}
		lastcount = count;
		/* due at the first whole ms at or after first drop + interval * y */
		gap = 100.0 * y;
		assert_true((double)(first[e][1] - first[e][0]) + 1 >= gap &&
			    (double)(first[e][1] - first[e][0]) <= ceil(gap) + 1);
		/* every further drop of the episode: count + 1, one Newton step */
		for (uint64_t k = 1; k < drops[e]; k++) {
			count++;
			y = linux_inv_sqrt_step(y, count);
		}
	}
}

static void
test_codel_quiet_below_target(void **state)
{
	struct sched_params prm;
	struct sched *s;
	struct sh_pkt_list d;
	struct sched_stats st;

	(void)state;
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	s = mk_sched(&prm);
	sh_pkt_list_init(&d);
	/* sojourn 4 ms, always below the 5 ms target: no signal ever */
	for (uint64_t t = 0; t < 5000; t++) {
		sched_enqueue(s, mk(1, 1000, 0), t * MS, &d);
		if (t >= 4)
			release(sched_dequeue(s, t * MS, &d));
	}
	sched_get_stats(s, &st);
	assert_int_equal(d.count, 0);
	assert_int_equal(st.ecn_marked, 0);
	drain(s, 6000 * MS);
	sched_free(s);
}

static void
test_ce_threshold(void **state)
{
	struct sched_params prm;
	struct sched *s;
	struct sh_pkt_list d;
	struct sh_pkt *p;
	struct sched_stats st;

	(void)state;
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	prm.fqc_ce_threshold_us = 1000;
	s = mk_sched(&prm);
	sh_pkt_list_init(&d);
	sched_enqueue(s, mk(1, 1000, 1), 0, &d);           /* ECT(1), waits 2 ms */
	sched_enqueue(s, mk(2, 1000, 0), 0, &d);           /* Not-ECT, waits 2 ms */
	sched_enqueue(s, mk(3, 1000, 2), 1500 * 1000, &d); /* waits 0.5 ms */
	for (int k = 0; k < 3; k++) {
		p = sched_dequeue(s, 2 * MS, &d);
		assert_non_null(p);
		if (P->flow[idx_of(p)] == 1)
			assert_int_equal(p->data[15] & 3, 3);
		else if (P->flow[idx_of(p)] == 2)
			assert_int_equal(p->data[15] & 3, 0);
		else
			assert_int_equal(p->data[15] & 3, 2);
		release(p);
	}
	sched_get_stats(s, &st);
	assert_int_equal(st.ecn_marked, 1);
	assert_int_equal(d.count, 0);
	sched_free(s);
}

/* ---- L4S ---- */

#define US 1000ULL

/* The ECN bits of a packet built by mk() (IPv4 TOS byte). */
static inline uint8_t
ecn_of(const struct sh_pkt *p)
{
	return p->data[15] & 3;
}

/*
 * A scalable (ECT(1)) flow beside an ECT(0) and a Not-ECT one, every
 * sojourn below CoDel's target: ECT(1) is CE-marked iff it waited past the
 * step, the classic packets never.
 */
static void
test_l4s_step(void **state)
{
	static const uint64_t waits_us[] = { 100, 499, 500, 501, 900, 4000 };
	struct sched_params prm;
	struct sched *s;
	struct sh_pkt_list d;
	struct sched_stats st;
	uint64_t t = 0, marked = 0;

	(void)state;
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	assert_false(prm.l4s);
	assert_int_equal(prm.l4s_step_us, 500);
	prm.l4s = true;
	s = mk_sched(&prm);
	sh_pkt_list_init(&d);
	for (size_t k = 0; k < sizeof(waits_us) / sizeof(waits_us[0]); k++) {
		for (int f = 1; f <= 3; f++)
			sched_enqueue(s, mk(f, 1000, f == 1 ? 1 : f == 2 ? 2 : 0), t, &d);
		for (int n = 0; n < 3; n++) {
			struct sh_pkt *p = sched_dequeue(s, t + waits_us[k] * US, &d);
			int f;

			assert_non_null(p);
			f = P->flow[idx_of(p)];
			if (f == 1) {
				assert_true(p->flags & SH_PKT_L4S);
				assert_int_equal(ecn_of(p), waits_us[k] > 500 ? 3 : 1);
				marked += waits_us[k] > 500;
			} else {
				assert_false(p->flags & SH_PKT_L4S);
				assert_int_equal(ecn_of(p), f == 2 ? 2 : 0);
			}
			release(p);
		}
		t += 10 * MS;
	}
	sched_get_stats(s, &st);
	print_message("l4s step: %llu of %zu ECT(1) packets marked at the 500 us step, "
		      "%llu CoDel marks, %llu ECT(1) seen\n",
		      (unsigned long long)st.tins[0].step_marks,
		      sizeof(waits_us) / sizeof(waits_us[0]),
		      (unsigned long long)st.tins[0].ecn_mark,
		      (unsigned long long)st.tins[0].ect1_packets);
	assert_int_equal(marked, 3);
	assert_int_equal(st.tins[0].step_marks, 3);
	assert_int_equal(st.tins[0].ect1_packets, 6);
	assert_int_equal(st.tins[0].ecn_mark, 0); /* the step's marks are not CoDel's */
	assert_int_equal(st.ecn_marked, 0);
	assert_int_equal(d.count, 0);
	sched_reset_stats(s);
	sched_get_stats(s, &st);
	assert_int_equal(st.tins[0].step_marks, 0);
	assert_int_equal(st.tins[0].ect1_packets, 0);
	check_identity(s);
	sched_free(s);
}

/* What became of each packet of a run: delivered (with its ECN bits and time) or dropped. */
struct fate {
	uint64_t t;
	uint8_t flow, ecn, dropped, reason;
};

struct mix_run {
	struct fate *fate; /* by seq - seq0 */
	uint32_t seq0, n;
	uint64_t ect1_soj_over, ect1_soj_over_ce; /* ECT(1) delivered past the step, and CE */
	uint64_t ce_delivered;
	struct sched_stats st;
};

static void
mix_note_drops(struct mix_run *r, struct sh_pkt_list *d, uint64_t now)
{
	struct sh_pkt *p;

	while ((p = sh_pkt_list_pop(d)) != NULL) {
		struct fate *fa = &r->fate[P->seq[idx_of(p)] - r->seq0];

		fa->t = now;
		fa->flow = (uint8_t)P->flow[idx_of(p)];
		fa->dropped = 1;
		fa->reason = p->drop_reason;
		release(p);
	}
}

/*
 * Three flows, ECT(1), ECT(0) and Not-ECT, each sending 1000 bytes every
 * 100 us into a discipline that serves two packets in that time: queues
 * build, CoDel drops and marks, overflow head-drops. Every packet's fate
 * is kept for comparing runs.
 */
static void
run_mix(struct sched_params *prm, struct mix_run *r)
{
	enum {
		STEPS = 6000
	};
	struct sched *s = mk_sched(prm);
	struct sh_pkt_list d;
	struct sh_pkt *p;
	uint64_t now = 0;

	memset(r, 0, sizeof(*r));
	r->fate = calloc(3 * STEPS, sizeof(*r->fate));
	assert_non_null(r->fate);
	r->seq0 = P->next_seq;
	r->n = 3 * STEPS;
	sh_pkt_list_init(&d);
	for (int k = 0; k < STEPS; k++) {
		now = (uint64_t)k * 100 * US;
		for (int f = 1; f <= 3; f++)
			sched_enqueue(s, mk(f, 1000, f == 1 ? 1 : f == 2 ? 2 : 0), now, &d);
		mix_note_drops(r, &d, now);
		for (int n = 0; n < 2; n++) {
			uint64_t t = now + (uint64_t)n * 50 * US;

			p = sched_dequeue(s, t, &d);
			mix_note_drops(r, &d, t);
			if (p == NULL)
				continue;
			struct fate *fa = &r->fate[P->seq[idx_of(p)] - r->seq0];

			fa->t = t;
			fa->flow = (uint8_t)P->flow[idx_of(p)];
			fa->ecn = ecn_of(p);
			r->ce_delivered += fa->ecn == 3;
			if (fa->flow == 1 && t - p->enq_ns > 500 * US) {
				r->ect1_soj_over++;
				r->ect1_soj_over_ce += fa->ecn == 3;
			}
			release(p);
		}
	}
	sched_get_stats(s, &r->st);
	check_identity(s);
	drain(s, now);
	sched_free(s);
}

static uint64_t
mix_diff(const struct mix_run *a, const struct mix_run *b, bool classic_only)
{
	uint64_t n = 0;

	assert_int_equal(a->n, b->n);
	for (uint32_t i = 0; i < a->n; i++) {
		const struct fate *x = &a->fate[i], *y = &b->fate[i];

		if (classic_only && (x->flow == 1 || y->flow == 1))
			continue;
		n += memcmp(x, y, sizeof(*x)) != 0;
	}
	return n;
}

/*
 * The same overload with l4s on and off: the classic flows' packets meet
 * exactly the same fate, each at the same time, while the scalable flow's
 * are marked past the step on top of CoDel (CoDel still marks it: it does
 * not respond here).
 */
static void
test_l4s_classic_untouched(void **state)
{
	struct sched_params prm;
	struct mix_run on, off;
	uint64_t classic_diff;

	(void)state;
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	prm.fqc_limit = 3000;
	run_mix(&prm, &off);
	prm.l4s = true;
	run_mix(&prm, &on);
	classic_diff = mix_diff(&on, &off, true);
	print_message("l4s beside classic: %llu classic packets differ; ECT(1) past the step "
		      "%llu, CE %llu (off: %llu); step marks %llu, CoDel marks %llu (off: %llu), "
		      "AQM drops %llu (off: %llu)\n",
		      (unsigned long long)classic_diff, (unsigned long long)on.ect1_soj_over,
		      (unsigned long long)on.ect1_soj_over_ce,
		      (unsigned long long)off.ect1_soj_over_ce,
		      (unsigned long long)on.st.tins[0].step_marks,
		      (unsigned long long)on.st.tins[0].ecn_mark,
		      (unsigned long long)off.st.tins[0].ecn_mark,
		      (unsigned long long)on.st.dropped[SHAPER_DROP_AQM],
		      (unsigned long long)off.st.dropped[SHAPER_DROP_AQM]);
	assert_int_equal(classic_diff, 0);
	assert_true(off.st.dropped[SHAPER_DROP_AQM] > 0 && off.st.tins[0].ecn_mark > 0);
	assert_true(off.st.dropped[SHAPER_DROP_OVERFLOW] > 0);
	/* on: every ECT(1) packet past the step leaves CE, off only CoDel's share */
	assert_true(on.ect1_soj_over > 1000);
	assert_int_equal(on.ect1_soj_over_ce, on.ect1_soj_over);
	assert_true(off.ect1_soj_over_ce < off.ect1_soj_over / 2);
	assert_true(on.st.tins[0].step_marks > 0);
	assert_int_equal(on.st.tins[0].ect1_packets, on.n / 3);
	assert_int_equal(on.st.tins[0].step_marks + on.st.tins[0].ecn_mark, on.ce_delivered);
	assert_int_equal(off.st.tins[0].step_marks, 0);
	assert_int_equal(off.st.tins[0].ect1_packets, 0);
	free(on.fate);
	free(off.fate);
}

/* l4s off, whatever its step: every packet's fate is the default's. */
static void
test_l4s_off_as_before(void **state)
{
	struct sched_params prm;
	struct mix_run dflt, off;

	(void)state;
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	prm.fqc_limit = 3000;
	run_mix(&prm, &dflt);
	prm.l4s = false;
	prm.l4s_step_us = 1;
	run_mix(&prm, &off);
	assert_int_equal(mix_diff(&dflt, &off, false), 0);
	assert_memory_equal(&dflt.st.dropped, &off.st.dropped, sizeof(dflt.st.dropped));
	assert_int_equal(dflt.st.ecn_marked, off.st.ecn_marked);
	assert_int_equal(off.st.tins[0].step_marks, 0);
	/* and with l4s on the scalable flow's fate does change */
	prm.l4s = true;
	prm.l4s_step_us = 500;
	free(off.fate);
	run_mix(&prm, &off);
	assert_true(mix_diff(&dflt, &off, false) > 1000);
	free(off.fate);
	free(dflt.fate);
}

/*
 * One queue holding both kinds (a tunnel): its L4S packets get no step mark
 * while a classic packet is queued with them, and the step again once none
 * is. The classic ones are judged by CoDel alone.
 */
static void
test_l4s_mixed_queue(void **state)
{
	struct sched_params prm;
	struct sched *s;
	struct sh_pkt_list d;
	struct sh_pkt *p;
	struct sched_stats st;

	(void)state;
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	prm.l4s = true;
	s = mk_sched(&prm);
	sh_pkt_list_init(&d);
	/* one 5-tuple: ECT(1), ECT(0), ECT(1), ECT(1) */
	sched_enqueue(s, mk(7, 1000, 1), 0, &d);
	sched_enqueue(s, mk(7, 1000, 2), 0, &d);
	sched_enqueue(s, mk(7, 1000, 1), 0, &d);
	sched_enqueue(s, mk(7, 1000, 1), 0, &d);
	for (int k = 0; k < 4; k++) {
		static const uint8_t want[] = { 1, 2, 3, 3 };

		p = sched_dequeue(s, 2 * MS, &d);
		assert_non_null(p);
		/* the first is behind a classic packet; the last two are not */
		assert_int_equal(ecn_of(p), want[k]);
		release(p);
	}
	sched_get_stats(s, &st);
	assert_int_equal(st.tins[0].step_marks, 2);
	assert_int_equal(st.tins[0].ect1_packets, 3);
	/* CE after ECT(0) in the same flow is classic; after ECT(1) it is L4S */
	sched_enqueue(s, mk(8, 1000, 2), 10 * MS, &d);
	p = mk(8, 1000, 3);
	sched_enqueue(s, p, 10 * MS, &d);
	assert_false(p->flags & SH_PKT_L4S);
	sched_enqueue(s, mk(8, 1000, 1), 10 * MS, &d);
	p = mk(8, 1000, 3);
	sched_enqueue(s, p, 10 * MS, &d);
	assert_true(p->flags & SH_PKT_L4S);
	/* a new flow's CE packet is L4S (RFC 9331's classifier) */
	p = mk(9, 1000, 3);
	sched_enqueue(s, p, 10 * MS, &d);
	assert_true(p->flags & SH_PKT_L4S);
	check_identity(s);
	drain(s, 10 * MS);
	assert_int_equal(d.count, 0);
	sched_free(s);
}

/*
 * Switched live: packets queued while l4s was off count as classic until
 * they leave; on a slow link the step is at least 1.5 MTU times; with
 * ce_threshold too, a packet past both is counted once, as a step mark.
 */
static void
test_l4s_update_floor(void **state)
{
	struct sched_params prm;
	struct sched *s;
	struct sh_pkt_list d;
	struct sh_pkt *p;
	struct sched_stats st;
	char err[160] = "";

	(void)state;
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	prm.l4s = true;
	s = mk_sched(&prm);
	sh_pkt_list_init(&d);
	sched_enqueue(s, mk(1, 1000, 1), 0, &d); /* L4S */
	prm.l4s = false;
	assert_int_equal(sched_update(s, &prm, err, sizeof(err)), 0);
	sched_enqueue(s, mk(1, 1000, 1), 0, &d); /* queued while off: no verdict, classic */
	prm.l4s = true;
	assert_int_equal(sched_update(s, &prm, err, sizeof(err)), 0);
	p = sched_dequeue(s, 2 * MS, &d);
	assert_int_equal(ecn_of(p), 1); /* a classic packet is queued behind it */
	release(p);
	p = sched_dequeue(s, 2 * MS, &d);
	assert_int_equal(ecn_of(p), 1); /* no verdict, no step */
	release(p);
	sched_enqueue(s, mk(1, 1000, 1), 3 * MS, &d);
	p = sched_dequeue(s, 4 * MS, &d);
	assert_int_equal(ecn_of(p), 3); /* the queue is L4S only again */
	release(p);
	/* off again with an L4S packet queued: nothing marks */
	sched_enqueue(s, mk(1, 1000, 1), 5 * MS, &d);
	prm.l4s = false;
	assert_int_equal(sched_update(s, &prm, err, sizeof(err)), 0);
	p = sched_dequeue(s, 7 * MS, &d);
	assert_int_equal(ecn_of(p), 1);
	release(p);
	sched_get_stats(s, &st);
	assert_int_equal(st.tins[0].step_marks, 1);
	/* a step out of range is refused */
	prm.l4s = true;
	prm.l4s_step_us = 0;
	assert_int_equal(sched_update(s, &prm, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "l4s step"));
	check_identity(s);
	sched_free(s);

	/* 10 Mbit/s: the step is 1.5 x 1514 bytes' time, 1.817 ms, not 500 us */
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	prm.l4s = true;
	prm.rate = 1250000;
	s = mk_sched(&prm);
	sched_enqueue(s, mk(1, 1000, 1), 0, &d);
	p = sched_dequeue(s, 1700 * US, &d); /* the first after idle is not held */
	assert_non_null(p);
	assert_int_equal(ecn_of(p), 1);
	release(p);
	sched_enqueue(s, mk(1, 1000, 1), 100 * MS, &d);
	p = sched_dequeue(s, 101900 * US, &d);
	assert_non_null(p);
	assert_int_equal(ecn_of(p), 3);
	release(p);
	/* a rate set below it (autorate) raises the floor with it */
	sched_set_rate(s, 625000, 200 * MS);
	sched_enqueue(s, mk(1, 1000, 1), 200 * MS, &d);
	p = sched_dequeue(s, 203 * MS, &d); /* 3 ms, under 3.634 */
	assert_non_null(p);
	assert_int_equal(ecn_of(p), 1);
	release(p);
	sched_free(s);

	/* with ce_threshold too: each packet past both is counted once */
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	prm.l4s = true;
	prm.fqc_ce_threshold_us = 1000;
	s = mk_sched(&prm);
	sched_enqueue(s, mk(1, 1000, 1), 0, &d);
	sched_enqueue(s, mk(2, 1000, 2), 0, &d);
	for (int k = 0; k < 2; k++) {
		p = sched_dequeue(s, 2 * MS, &d);
		assert_int_equal(ecn_of(p), 3);
		release(p);
	}
	sched_get_stats(s, &st);
	assert_int_equal(st.tins[0].step_marks, 1);
	assert_int_equal(st.tins[0].ecn_mark, 1); /* ce_threshold's, on the ECT(0) packet */
	assert_int_equal(d.count, 0);
	check_identity(s);
	sched_free(s);
}

/* ---- overflow ---- */

static void
test_overflow_fattest(void **state)
{
	struct sched_params prm;
	struct sched *s;
	struct sh_pkt_list d;
	struct sched_stats st;
	uint32_t first_seq = 0, expect;

	(void)state;
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	prm.fqc_limit = 100;
	s = mk_sched(&prm);
	sh_pkt_list_init(&d);
	for (int k = 0; k < 70; k++) {
		struct sh_pkt *p = mk(1, 1000, 0);

		if (k == 0)
			first_seq = P->seq[idx_of(p)];
		sched_enqueue(s, p, 0, &d);
	}
	for (int k = 0; k < 30; k++)
		sched_enqueue(s, mk(2, 1500, 0), 0,
			      &d); /* more packets would not matter: bytes do */
	assert_int_equal(d.count, 0);
	/* flow 1: 70000 B, flow 2: 45000 B; the 101st packet overflows */
	assert_int_equal(sched_enqueue(s, mk(3, 100, 0), 0, &d), 0);
	/* head drops from flow 1 until half its bytes are gone: 35 packets */
	assert_int_equal(d.count, 35);
	expect = first_seq;
	for (struct sh_pkt *p = d.head; p != NULL; p = p->next) {
		assert_int_equal(P->flow[idx_of(p)], 1);
		assert_int_equal(P->seq[idx_of(p)], expect++);
		assert_int_equal(p->drop_reason, SHAPER_DROP_OVERFLOW);
	}
	sched_get_stats(s, &st);
	assert_int_equal(st.dropped[SHAPER_DROP_OVERFLOW], 35);
	assert_int_equal(st.backlog_pkts, 66);
	assert_int_equal(st.tins[0].drops, 35);
	release_list(&d);
	check_identity(s);
	drain(s, 0);
	sched_free(s);

	/* drop_batch caps one overflow; a lone packet of the fattest flow goes itself */
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	prm.fqc_limit = 100;
	prm.fqc_drop_batch = 8;
	s = mk_sched(&prm);
	for (int k = 0; k < 100; k++)
		sched_enqueue(s, mk(1, 1000, 0), 0, &d);
	assert_int_equal(sched_enqueue(s, mk(2, 100, 0), 0, &d), 0);
	assert_int_equal(d.count, 8);
	release_list(&d);
	drain(s, 0);
	sched_free(s);

	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	prm.fqc_limit = 1;
	s = mk_sched(&prm);
	sched_enqueue(s, mk(1, 100, 0), 0, &d);
	{
		struct sh_pkt *big = mk(2, 1500, 0);

		assert_int_equal(sched_enqueue(s, big, 0, &d), 1);
		assert_ptr_equal(d.head, big);
	}
	check_identity(s);
	release_list(&d);
	drain(s, 0);
	sched_free(s);
}

static void
test_memory_limit(void **state)
{
	struct sched_params prm;
	struct sched *s;
	struct sh_pkt_list d;
	struct sched_stats st;
	uint64_t dropped = 0;
	bool first_overflow = true;

	(void)state;
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	prm.fqc_memory_limit = 100 * (1000 + 512); /* 100 packets' buffers */
	s = mk_sched(&prm);
	sh_pkt_list_init(&d);
	for (int k = 0; k < 1000; k++) {
		sched_enqueue(s, mk(k % 3 == 0 ? 1 : 2, 1000, 0), 0, &d);
		sched_get_stats(s, &st);
		/* one batch per enqueue brings memory back under the limit here */
		assert_true(st.backlog_pkts <= 100);
		dropped += d.count;
		if (d.count != 0 && first_overflow) {
			/* flow 2 holds two thirds of the bytes: it pays, by half its backlog */
			assert_int_equal(d.count, 34);
			for (struct sh_pkt *p = d.head; p != NULL; p = p->next)
				assert_int_equal(P->flow[idx_of(p)], 2);
			first_overflow = false;
		}
		release_list(&d);
	}
	sched_get_stats(s, &st);
	assert_int_equal(st.dropped[SHAPER_DROP_OVERFLOW], dropped);
	assert_true(dropped >= 900);
	assert_int_equal(st.memory_limit, prm.fqc_memory_limit);
	/* peak memory: at most one packet over the limit before the drop */
	assert_true(st.memory_used <= prm.fqc_memory_limit + 1512);
	assert_true(st.memory_used > prm.fqc_memory_limit);
	check_identity(s);
	drain(s, 0);
	sched_free(s);
}

/* ---- shaper ---- */

static void
test_rate_no_burst_after_idle(void **state)
{
	struct sched_params prm;
	struct sched *s;
	struct sh_pkt_list d;
	struct sh_pkt *p;
	uint64_t now = 0, last = 0;
	int got = 0;

	(void)state;
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	prm.rate = 125000;          /* 1 Mbit/s: a 1250-byte packet every 10 ms */
	prm.fqc_target_us = 500000; /* keep CoDel out of the pacing check */
	s = mk_sched(&prm);
	sh_pkt_list_init(&d);
	for (int k = 0; k < 20; k++)
		sched_enqueue(s, mk(k % 2, 1250, 0), 0, &d);
	while (got < 20) {
		uint64_t t = sched_next_time(s, now);

		assert_true(t != UINT64_MAX);
		now = t > now ? t : now;
		p = sched_dequeue(s, now, &d);
		if (p == NULL) {
			now++;
			continue;
		}
		if (got > 0)
			assert_true(now - last >= 10 * MS - 1000 && now - last <= 10 * MS + 1000);
		last = now;
		got++;
		release(p);
	}
	assert_int_equal(sched_next_time(s, now), UINT64_MAX);
	/* a second of silence earns no credit: still one packet per 10 ms */
	now += 1000 * MS;
	for (int k = 0; k < 3; k++)
		sched_enqueue(s, mk(5, 1250, 0), now, &d);
	p = sched_dequeue(s, now, &d);
	assert_non_null(p);
	release(p);
	assert_null(sched_dequeue(s, now + 5 * MS, &d));
	assert_int_equal(sched_next_time(s, now), now + 10 * MS);
	drain(s, now + 100 * MS);
	sched_free(s);
}

/* ---- update and accounting ---- */

static void
test_update(void **state)
{
	struct sched_params prm;
	struct sched *s;
	struct sh_pkt_list d;
	char err[160] = "";

	(void)state;
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	s = mk_sched(&prm);
	sh_pkt_list_init(&d);
	sched_enqueue(s, mk(1, 1000, 0), 0, &d);
	prm.rate = 1000000;
	prm.fqc_target_us = 2000;
	prm.fqc_interval_us = 50000;
	prm.ecn = false;
	assert_int_equal(sched_update(s, &prm, err, sizeof(err)), 0);
	prm.fqc_flows = 2048;
	assert_int_equal(sched_update(s, &prm, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "flows"));
	drain(s, 10 * MS);
	assert_int_equal(sched_update(s, &prm, err, sizeof(err)), 0);
	prm.fqc_quantum = 10;
	assert_int_equal(sched_update(s, &prm, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "quantum"));
	sched_free(s);
	/* create validates too */
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	prm.fqc_flows = 0;
	assert_null(sched_create(&prm, err, sizeof(err)));
	assert_non_null(strstr(err, "flows"));
}

static uint64_t rs = 88172645463325252ULL;

static uint32_t
rnd(void)
{
	return sh_rand32(&rs);
}

static void
test_accounting_random(void **state)
{
	struct sched_params prm;
	struct sched *s;
	struct sh_pkt_list d, fl;
	struct sched_stats st;
	uint64_t now = 0, dropped_bytes = 0, queued = 0;

	(void)state;
	sched_params_default(&prm, SCHED_DISC_FQ_CODEL);
	prm.fqc_limit = 500;
	prm.fqc_flows = 64;
	prm.rate = 2000000;
	prm.fqc_memory_limit = 400000;
	s = mk_sched(&prm);
	sh_pkt_list_init(&d);
	for (int step = 0; step < 200000; step++) {
		now += rnd() % 200000;
		if (rnd() % 3 != 0) {
			uint32_t len = 60 + rnd() % 1455;

			sched_enqueue(s, mk((int)(rnd() % 100), len, (uint8_t)(rnd() % 4)), now,
				      &d);
		} else {
			struct sh_pkt *p = sched_dequeue(s, now, &d);

			if (p != NULL)
				release(p);
		}
		for (struct sh_pkt *p = d.head; p != NULL; p = p->next)
			dropped_bytes += p->len;
		release_list(&d);
		if (step % 97 == 0) {
			uint64_t drops = 0;

			sched_get_stats(s, &st);
			for (int r = 0; r < SHAPER_DROP_MAX; r++)
				drops += st.dropped[r];
			assert_int_equal(st.enqueued_pkts,
					 st.dequeued_pkts + drops + st.backlog_pkts);
			assert_int_equal(st.enqueued_bytes,
					 st.dequeued_bytes + dropped_bytes + st.backlog_bytes);
			assert_int_equal(st.tins[0].drops,
					 st.dropped[SHAPER_DROP_AQM] +
							 st.dropped[SHAPER_DROP_OVERFLOW]);
			assert_true(st.backlog_pkts <= 500);
		}
	}
	sched_get_stats(s, &st);
	assert_true(st.dropped[SHAPER_DROP_OVERFLOW] > 0);
	assert_true(st.dropped[SHAPER_DROP_AQM] > 0);
	assert_true(st.ecn_marked > 0);
	/* flush hands back exactly the backlog */
	sh_pkt_list_init(&fl);
	sched_flush(s, &fl);
	queued = st.backlog_pkts;
	assert_int_equal(fl.count, queued);
	release_list(&fl);
	sched_get_stats(s, &st);
	assert_int_equal(st.backlog_pkts, 0);
	assert_int_equal(st.backlog_bytes, 0);
	check_identity(s);
	sched_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_equal_byte_shares),
		cmocka_unit_test(test_new_flow_priority),
		cmocka_unit_test(test_anti_starvation),
		cmocka_unit_test(test_codel_drop_schedule),
		cmocka_unit_test(test_codel_ecn_marks),
		cmocka_unit_test(test_codel_reentry),
		cmocka_unit_test(test_codel_quiet_below_target),
		cmocka_unit_test(test_ce_threshold),
		cmocka_unit_test(test_l4s_step),
		cmocka_unit_test(test_l4s_classic_untouched),
		cmocka_unit_test(test_l4s_off_as_before),
		cmocka_unit_test(test_l4s_mixed_queue),
		cmocka_unit_test(test_l4s_update_floor),
		cmocka_unit_test(test_overflow_fattest),
		cmocka_unit_test(test_memory_limit),
		cmocka_unit_test(test_rate_no_burst_after_idle),
		cmocka_unit_test(test_update),
		cmocka_unit_test(test_accounting_random),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
