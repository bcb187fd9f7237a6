/*
 * A discipline swap as the worker does it (sched_move_*, DP_MSG_SWAP): the
 * backlog moves into the new scheduler a slice at a time with its original
 * enqueue stamps, arrivals during the move wait behind it, and nothing is
 * lost or reordered within a flow. Also sched_enqueue_stamped_burst for
 * every discipline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"

#define MS 1000000ull

static const enum sched_discipline discs[] = { SCHED_DISC_FIFO, SCHED_DISC_FQ_CODEL,
					       SCHED_DISC_CAKE };

/* A flow source for packet headers; hashes from a throwaway sim. */
struct flows {
	struct sim *sim;
	struct sim_pkt *pool;
	uint32_t n_pool, used;
	uint32_t nflows;
	uint32_t *next_seq; /* per flow, as built */
	uint32_t *last_out; /* per flow, last seq delivered + 1 */
	uint64_t delivered, reordered;
};

static void
flows_init(struct flows *f, uint32_t nflows, uint32_t n_pool)
{
	struct sched_params p;

	sched_params_default(&p, SCHED_DISC_FIFO);
	f->sim = sim_new(&p, 1, nflows);
	for (uint32_t i = 0; i < nflows; i++) {
		struct sim_src s = sim_src_udp(sim_ip(1, (uint8_t)(i >> 8), (uint8_t)i),
					       sim_ip(2, 0, 1), (uint16_t)(2000 + i), 0, 1000);

		sim_add_src(f->sim, &s);
	}
	f->pool = calloc(n_pool, sizeof(*f->pool));
	f->next_seq = calloc(nflows, sizeof(uint32_t));
	f->last_out = calloc(nflows, sizeof(uint32_t));
	assert_non_null(f->pool);
	f->n_pool = n_pool;
	f->used = 0;
	f->nflows = nflows;
	f->delivered = f->reordered = 0;
}

static void
flows_fini(struct flows *f)
{
	sim_free(f->sim);
	free(f->pool);
	free(f->next_seq);
	free(f->last_out);
}

static struct sh_pkt *
flows_pkt(struct flows *f, uint32_t flow)
{
	struct sim_pkt *p;

	assert_true(f->used < f->n_pool);
	p = &f->pool[f->used++];
	p->src = flow;
	p->seq = f->next_seq[flow]++;
	sim_build(&f->sim->srcs[flow], p, 1000);
	p->pkt.mem = SIM_MBUF_MEM;
	return &p->pkt;
}

static void
flows_out(struct flows *f, struct sh_pkt *pkt)
{
	struct sim_pkt *p = (struct sim_pkt *)pkt;

	if (p->seq + 1 <= f->last_out[p->src])
		f->reordered++;
	f->last_out[p->src] = p->seq + 1;
	f->delivered++;
}

static struct sched *
make(enum sched_discipline d, uint64_t rate)
{
	struct sched_params p;
	char err[128];
	struct sched *s;

	sched_params_default(&p, d);
	p.rate = rate;
	p.fifo_limit_pkts = 0;
	p.fqc_limit = 100000;
	p.fqc_memory_limit = 1ull << 32;
	p.memlimit = 1ull << 32;
	s = sched_create(&p, err, sizeof(err));
	if (s == NULL)
		fail_msg("sched_create: %s", err);
	return s;
}

/* Every discipline keeps the stamp it is given (never later than now). */
static void
test_stamped_enqueue(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(discs) / sizeof(discs[0]); i++) {
		struct sched *s = make(discs[i], 0);
		struct sh_pkt_list drops;
		struct sched_stats st;
		struct flows f;
		struct sh_pkt *p[2], *out;

		flows_init(&f, 1, 2);
		sh_pkt_list_init(&drops);
		p[0] = flows_pkt(&f, 0);
		p[1] = flows_pkt(&f, 0);
		p[0]->enq_ns = 10 * MS;
		p[1]->enq_ns = 90 * MS; /* from the future: clamped to now */
		assert_int_equal(sched_enqueue_stamped_burst(s, p, 2, 50 * MS, &drops), 0);
		assert_int_equal(p[0]->enq_ns, 10 * MS);
		assert_int_equal(p[1]->enq_ns, 50 * MS);
		out = sched_dequeue(s, 50 * MS, &drops);
		assert_ptr_equal(out, p[0]);
		sched_get_stats(s, &st);
		/* The sojourn seen is the 40 ms before the enqueue. */
		assert_int_equal(st.sojourn[sched_sojourn_bucket(40 * MS)], 1);
		assert_ptr_equal(sched_dequeue(s, 50 * MS, &drops), p[1]);
		/* The plain entry point still stamps now. */
		p[0]->enq_ns = 1;
		sched_enqueue(s, p[0], 60 * MS, &drops);
		assert_int_equal(p[0]->enq_ns, 60 * MS);
		assert_int_equal(drops.count, 0);
		sched_free(s);
		flows_fini(&f);
	}
}

/*
 * A swap keeps the stamps: packets queued at t=0 and moved at t=40 ms are
 * 40 ms old in the new scheduler's sojourn statistics, for each pair.
 */
static void
test_swap_keeps_stamps(void **state)
{
	(void)state;
	for (size_t a = 0; a < 3; a++) {
		for (size_t b = 0; b < 3; b++) {
			struct sched *from = make(discs[a], 0), *to = make(discs[b], 0);
			struct sched_move mv;
			struct sh_pkt_list drops;
			struct sched_stats st;
			struct flows f;
			struct sh_pkt *p;
			uint64_t old = 0;

			flows_init(&f, 4, 64);
			sh_pkt_list_init(&drops);
			for (uint32_t i = 0; i < 40; i++)
				sched_enqueue(from, flows_pkt(&f, i % 4), 0, &drops);
			sched_move_begin(&mv, from);
			while (!sched_move_step(&mv, to, 7, 40 * MS, &drops))
				;
			assert_int_equal(sched_backlog_pkts(from), 0);
			while ((p = sched_dequeue(to, 40 * MS + 1000, &drops)) != NULL)
				flows_out(&f, p);
			/* CAKE's COBALT may drop some: it sees how old they are. */
			for (struct sh_pkt *d = drops.head; d != NULL; d = d->next)
				assert_int_equal(d->drop_reason, SHAPER_DROP_AQM);
			assert_int_equal(f.delivered + drops.count, 40);
			assert_true(f.delivered >= 20);
			assert_int_equal(f.reordered, 0);
			sched_get_stats(to, &st);
			for (unsigned int k = sched_sojourn_bucket(40 * MS);
			     k < SCHED_SOJOURN_BUCKETS; k++)
				old += st.sojourn[k];
			/* Before: the swap restamped them, and every sojourn was ~1 µs. */
			assert_int_equal(old, f.delivered);
			sched_free(from);
			sched_free(to);
			flows_fini(&f);
		}
	}
}

/*
 * A sliced swap with arrivals in every turn and the new scheduler serving
 * meanwhile: each step moves at most its slice, output never stops, and
 * every packet leaves once, in order within its flow.
 */
static void
swap_sliced(enum sched_discipline da, enum sched_discipline db)
{
	const uint32_t nflows = 64, backlog = 64 * 50, turns_after = 50;
	const unsigned int slice = 100, rx = 32, tx = 16;
	struct sched *from = make(da, 0), *to = make(db, 0);
	struct sched_move mv;
	struct sh_pkt_list drops;
	struct flows f;
	struct sh_pkt *p;
	uint64_t now = 0, total, out_during = 0;
	uint32_t turns = 0, flow = 0, prev_left;
	bool done = false;

	flows_init(&f, nflows, backlog + 4096);
	sh_pkt_list_init(&drops);
	for (uint32_t i = 0; i < backlog; i++)
		sched_enqueue(from, flows_pkt(&f, i % nflows), now, &drops);
	sched_move_begin(&mv, from);
	prev_left = sched_backlog_pkts(from);
	while (!done) {
		struct sh_pkt *in[32];

		now += 1000; /* 1 µs a turn: no AQM drop */
		for (unsigned int k = 0; k < rx; k++)
			in[k] = flows_pkt(&f, flow++ % nflows);
		sched_move_stage(&mv, in, rx, now, &drops);
		done = sched_move_step(&mv, to, slice, now, &drops);
		/* Each step takes at most its slice off the old backlog. */
		assert_true(prev_left - sched_backlog_pkts(from) <= slice);
		prev_left = sched_backlog_pkts(from);
		for (unsigned int k = 0; k < tx && (p = sched_dequeue(to, now, &drops)) != NULL;
		     k++) {
			flows_out(&f, p);
			out_during++;
		}
		turns++;
		assert_true(turns < 10000);
	}
	assert_true(turns > backlog / slice);                  /* spread over turns */
	assert_true(out_during >= (uint64_t)(turns - 1) * tx); /* output never stalled */
	assert_null(mv.staged.head);
	/* After the move, arrivals go straight into the new scheduler. */
	for (uint32_t t = 0; t < turns_after; t++) {
		for (unsigned int k = 0; k < rx; k++)
			sched_enqueue(to, flows_pkt(&f, flow++ % nflows), now, &drops);
		now += 1000;
	}
	while ((p = sched_dequeue(to, now, &drops)) != NULL)
		flows_out(&f, p);
	total = f.used;
	assert_int_equal(drops.count, 0);
	assert_int_equal(f.delivered, total); /* nothing lost */
	assert_int_equal(f.reordered, 0);     /* nothing reordered within a flow */
	assert_int_equal(sched_backlog_pkts(from), 0);
	sched_free(from);
	sched_free(to);
	flows_fini(&f);
}

static void
test_swap_sliced_with_arrivals(void **state)
{
	(void)state;
	for (size_t a = 0; a < 3; a++)
		for (size_t b = 0; b < 3; b++)
			swap_sliced(discs[a], discs[b]);
}

/*
 * A swap under sustained overload: every turn takes in 512 frames (a full
 * rx burst and a full steered one) while the new scheduler releases 256.
 * A step that moved a fixed slice of 512 never caught up with the held
 * arrivals and the swap never ended; now it ends within a few dozen turns,
 * no more than SCHED_MOVE_HELD_MAX arrivals are ever held, and every packet
 * leaves or is dropped (named) exactly once, in order within its flow.
 */
static void
swap_overloaded(enum sched_discipline da, enum sched_discipline db)
{
	const uint32_t nflows = 256, backlog = 10000, rx = 2 * SHAPER_BURST_MAX, tx = 256;
	struct sched *from = make(da, 0), *to = make(db, 0);
	struct sh_pkt_list drops;
	struct sched_move mv;
	struct flows f;
	struct sh_pkt *p, *in[2 * SHAPER_BURST_MAX];
	uint64_t now = 0, dropped = 0;
	uint32_t turns = 0, flow = 0, held_max = 0;
	bool done = false;

	flows_init(&f, nflows, backlog + 200 * rx);
	sh_pkt_list_init(&drops);
	for (uint32_t i = 0; i < backlog; i++)
		sched_enqueue(from, flows_pkt(&f, i % nflows), now, &drops);
	sched_move_begin(&mv, from);
	while (!done) {
		now += 1000;
		for (unsigned int k = 0; k < rx; k++)
			in[k] = flows_pkt(&f, flow++ % nflows);
		sched_move_stage(&mv, in, rx, now, &drops);
		done = sched_move_step(&mv, to, SCHED_MOVE_SLICE, now, &drops);
		if (mv.staged.count > held_max)
			held_max = mv.staged.count;
		for (unsigned int k = 0; k < tx && (p = sched_dequeue(to, now, &drops)) != NULL;
		     k++)
			flows_out(&f, p);
		turns++;
		assert_true(turns < 200);
	}
	while ((p = sched_dequeue(to, now, &drops)) != NULL)
		flows_out(&f, p);
	while ((p = sh_pkt_list_pop(&drops)) != NULL) {
		struct sim_pkt *sp = (struct sim_pkt *)p;

		/* A dropped packet counts as seen for the order check. */
		if (sp->seq + 1 > f.last_out[sp->src])
			f.last_out[sp->src] = sp->seq + 1;
		dropped++;
	}
	SIM_FIGURE("swap %d -> %d under 512 frames a turn: %u turns, at most %u held, %llu dropped",
		   (int)da, (int)db, turns, held_max, (unsigned long long)dropped);
	assert_true(held_max <= SCHED_MOVE_HELD_MAX);
	assert_int_equal(f.delivered + dropped, f.used); /* each packet once */
	assert_int_equal(f.reordered, 0);
	sched_free(from);
	sched_free(to);
	flows_fini(&f);
}

static void
test_swap_overloaded(void **state)
{
	(void)state;
	for (size_t a = 0; a < 3; a++)
		for (size_t b = 0; b < 3; b++)
			swap_overloaded(discs[a], discs[b]);
}

/* Shutdown in the middle of a move: everything still waiting comes out once. */
static void
test_move_flush(void **state)
{
	struct sched *from = make(SCHED_DISC_CAKE, 0), *to = make(SCHED_DISC_FQ_CODEL, 0);
	struct sched_move mv;
	struct sh_pkt_list drops, out;
	struct flows f;
	struct sh_pkt *in[10];

	(void)state;
	flows_init(&f, 8, 200);
	sh_pkt_list_init(&drops);
	sh_pkt_list_init(&out);
	for (uint32_t i = 0; i < 100; i++)
		sched_enqueue(from, flows_pkt(&f, i % 8), 0, &drops);
	sched_move_begin(&mv, from);
	for (unsigned int k = 0; k < 10; k++)
		in[k] = flows_pkt(&f, k % 8);
	sched_move_stage(&mv, in, 10, 1000, &drops);
	assert_false(sched_move_step(&mv, to, 30, 1000, &drops));
	sched_move_flush(&mv, &out);
	sched_flush(to, &out);
	assert_int_equal(out.count + drops.count, 110);
	sched_free(from);
	sched_free(to);
	flows_fini(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stamped_enqueue),
		cmocka_unit_test(test_swap_keeps_stamps),
		cmocka_unit_test(test_swap_sliced_with_arrivals),
		cmocka_unit_test(test_swap_overloaded),
		cmocka_unit_test(test_move_flush),
	};

	return cmocka_run_group_tests_name("sched_move", tests, NULL, NULL);
}
