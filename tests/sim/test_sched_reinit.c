/*
 * sched_reinit: a used, flushed scheduler made fresh again behaves exactly
 * as a new one from sched_create (same packets out in the same order, same
 * statistics), for every discipline; it refuses a queued backlog and
 * another discipline. The fuzz harness relies on it to reuse one scheduler.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"

#define N 600

static struct sim_pkt pa[N], pb[N];

/* The same traffic into s from pkts: 6 flows, bursts, time moving on. */
static void
drive(struct sched *s, struct sim_pkt *pkts, uint32_t *order, uint32_t *norder)
{
	struct sim_src src[6];
	struct sh_pkt_list dropped;
	uint64_t now = 1000;
	uint32_t k = 0;

	for (int f = 0; f < 6; f++) {
		src[f] = sim_src_udp(sim_ip(0, 0, (uint8_t)(1 + f % 3)), sim_ip(1, 0, 1),
				     (uint16_t)(1000 + f), 0, 0);
		src[f].flow_hash = 0x1000u * (uint32_t)(f + 1) + 7;
		src[f].src_hash = 0x100u * (uint32_t)(f % 3 + 1);
		src[f].dst_hash = 0x77;
		src[f].dscp = (uint8_t)(f * 10);
	}
	*norder = 0;
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 30 && k < N; i++, k++) {
			struct sim_pkt *p = &pkts[k];

			p->seq = k;
			sim_build(&src[(k * 7) % 6], p, 64 + (k * 97) % 1450);
			p->pkt.mem = SIM_MBUF_MEM;
			sh_pkt_list_init(&dropped);
			sched_enqueue(s, &p->pkt, now, &dropped);
		}
		now += 700000;
		for (;;) {
			struct sh_pkt *d;

			sh_pkt_list_init(&dropped);
			d = sched_dequeue(s, now, &dropped);
			if (d == NULL)
				break;
			order[(*norder)++] = ((struct sim_pkt *)d)->seq;
		}
	}
}

static void
test_reinit_is_fresh(void **state)
{
	static const enum sched_discipline discs[] = { SCHED_DISC_FIFO, SCHED_DISC_FQ_CODEL,
						       SCHED_DISC_CAKE };
	static uint32_t oa[N], ob[N];

	(void)state;
	for (size_t i = 0; i < sizeof(discs) / sizeof(discs[0]); i++) {
		struct sched_params p, q;
		struct sched *used, *fresh;
		struct sched_stats sa, sb;
		struct sh_pkt_list l;
		uint32_t na, nb;
		char err[128];

		sched_params_default(&p, discs[i]);
		p.rate = 1250000;
		p.fifo_limit_pkts = 100;
		p.fqc_limit = 100;
		used = sched_create(&p, err, sizeof(err));
		assert_non_null(used);
		drive(used, pa, oa, &na);
		assert_true(sched_backlog_pkts(used) > 0);
		assert_int_equal(sched_reinit(used, &p, err, sizeof(err)), -EBUSY);
		q = p;
		q.discipline = (enum sched_discipline)((discs[i] + 1) % 3);
		sh_pkt_list_init(&l);
		sched_flush(used, &l);
		assert_int_equal(sched_reinit(used, &q, err, sizeof(err)), -EINVAL);

		/* Fresh again with other parameters, against a new one with them. */
		q = p;
		q.rate = 2500000;
		q.seed = 99;
		q.diffserv = SCHED_DIFFSERV4;
		assert_int_equal(sched_reinit(used, &q, err, sizeof(err)), 0);
		fresh = sched_create(&q, err, sizeof(err));
		assert_non_null(fresh);
		drive(used, pa, oa, &na);
		drive(fresh, pb, ob, &nb);
		assert_true(na > 10);
		assert_int_equal(na, nb);
		assert_memory_equal(oa, ob, na * sizeof(oa[0]));
		sched_get_stats(used, &sa);
		sched_get_stats(fresh, &sb);
		assert_memory_equal(&sa, &sb, sizeof(sa));
		sh_pkt_list_init(&l);
		sched_flush(used, &l);
		sh_pkt_list_init(&l);
		sched_flush(fresh, &l);
		sched_free(used);
		sched_free(fresh);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reinit_is_fresh),
	};

	return cmocka_run_group_tests_name("sched_reinit", tests, NULL, NULL);
}
