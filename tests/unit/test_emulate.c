/*
 * The WAN emulator's delay line: exact fixed delay, jitter inside its
 * bounds that never reorders, seeded loss at the configured rate, the
 * packet limit, flush, and a path step on a running line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/emulate.h"
#include "shaper/sched.h"

#define N 20000

static struct sh_pkt pkts[N];

static void
test_fixed_delay(void **state)
{
	struct emu_params p = { .delay_ns = 20000000, .limit = N };
	struct emulate *e = emu_create(&p);
	struct sh_pkt_list drops;

	(void)state;
	sh_pkt_list_init(&drops);
	assert_non_null(e);
	for (int i = 0; i < 100; i++)
		assert_int_equal(emu_enqueue(e, &pkts[i], 1000 + (uint64_t)i * 7919, &drops), 0);
	assert_int_equal(emu_count(e), 100);
	/* Nothing leaves a nanosecond early; each leaves exactly 20 ms after it came. */
	assert_null(emu_dequeue(e, 1000 + 20000000 - 1));
	for (int i = 0; i < 100; i++) {
		uint64_t due = 1000 + (uint64_t)i * 7919 + 20000000;

		assert_int_equal(emu_next_time(e), due);
		if (i > 0)
			assert_null(emu_dequeue(e, due - 1));
		assert_ptr_equal(emu_dequeue(e, due), &pkts[i]);
	}
	assert_int_equal(emu_next_time(e), UINT64_MAX);
	assert_int_equal(drops.count, 0);
	emu_free(e);
}

static void
test_jitter_keeps_order(void **state)
{
	struct emu_params p = { .delay_ns = 10000000, .jitter_ns = 3000000, .seed = 7, .limit = N };
	struct emulate *e = emu_create(&p);
	struct sh_pkt_list drops;
	uint64_t last = 0, min_d = UINT64_MAX, max_d = 0;
	int out = 0;

	(void)state;
	sh_pkt_list_init(&drops);
	/* Packets 5 ms apart: jitter can rarely be cut by the order rule. */
	for (int i = 0; i < N; i++)
		assert_int_equal(emu_enqueue(e, &pkts[i], (uint64_t)i * 5000000, &drops), 0);
	for (uint64_t now = 0; out < N; now += 50000) {
		struct sh_pkt *q;

		while ((q = emu_dequeue(e, now)) != NULL) {
			uint64_t sent = (uint64_t)(q - pkts) * 5000000, d = q->enq_ns - sent;

			assert_ptr_equal(q, &pkts[out]); /* in order */
			assert_true(q->enq_ns >= last);
			last = q->enq_ns;
			min_d = d < min_d ? d : min_d;
			max_d = d > max_d ? d : max_d;
			out++;
		}
	}
	/* Delay stays within delay ± jitter; with order kept only the floor moves up. */
	assert_true(min_d >= 7000000);
	assert_true(max_d <= 13000000);
	assert_true(max_d - min_d > 5000000); /* the jitter is really there */
	emu_free(e);
}

static void
test_loss_rate(void **state)
{
	struct emu_params p = { .loss_ppm = 10000, .seed = 42, .limit = N }; /* 1 % */
	struct emulate *e = emu_create(&p);
	struct sh_pkt_list drops;
	int lost = 0;

	(void)state;
	sh_pkt_list_init(&drops);
	for (int i = 0; i < N; i++)
		lost += emu_enqueue(e, &pkts[i], 0, &drops);
	assert_int_equal((int)drops.count, lost);
	assert_int_equal(emu_count(e) + (uint32_t)lost, N);
	/* 200 expected; a binomial 4-sigma band */
	assert_in_range(lost, 144, 256);
	for (struct sh_pkt *q = drops.head; q != NULL; q = q->next)
		assert_int_equal(q->drop_reason, SHAPER_DROP_EMULATED_LOSS);
	emu_free(e);

	/* The same seed loses the same packets. */
	e = emu_create(&p);
	sh_pkt_list_init(&drops);
	for (int i = 0; i < N; i++)
		emu_enqueue(e, &pkts[i], 0, &drops);
	assert_int_equal((int)drops.count, lost);
	emu_free(e);
}

static void
test_limit_and_flush(void **state)
{
	struct emu_params p = { .delay_ns = 1000, .limit = 10 };
	struct emulate *e = emu_create(&p);
	struct sh_pkt_list drops, out;

	(void)state;
	sh_pkt_list_init(&drops);
	sh_pkt_list_init(&out);
	for (int i = 0; i < 15; i++)
		emu_enqueue(e, &pkts[i], 0, &drops);
	assert_int_equal(emu_count(e), 10);
	assert_int_equal(drops.count, 5);
	assert_int_equal(drops.head->drop_reason, SHAPER_DROP_EMULATOR_FULL);
	emu_flush(e, &out);
	assert_int_equal(out.count, 10);
	assert_ptr_equal(out.head, &pkts[0]);
	assert_int_equal(emu_count(e), 0);
	assert_false(emu_params_active(&(struct emu_params){ .limit = 1 }));
	assert_true(emu_params_active(&p));
	p.limit = 0;
	assert_null(emu_create(&p));
	emu_free(e);
}

/*
 * A step up applies to the next packet; a step down never lets a packet
 * overtake one held under the longer delay, and applies once the line has
 * drained to it. Loss set live takes effect at once.
 */
static void
test_path_step(void **state)
{
	struct emu_params p = { .delay_ns = 10000000, .limit = N };
	struct emulate *e = emu_create(&p);
	struct sh_pkt_list drops;
	uint64_t ms = 1000000;

	(void)state;
	sh_pkt_list_init(&drops);
	assert_int_equal(emu_enqueue(e, &pkts[0], 0, &drops), 0);
	emu_set_path(e, 35 * ms, 0, 0); /* +25 ms */
	assert_int_equal(emu_enqueue(e, &pkts[1], 1 * ms, &drops), 0);
	assert_int_equal(pkts[0].enq_ns, 10 * ms);
	assert_int_equal(pkts[1].enq_ns, 36 * ms);
	emu_set_path(e, 10 * ms, 0, 0); /* and back */
	assert_int_equal(emu_enqueue(e, &pkts[2], 2 * ms, &drops), 0);
	assert_int_equal(pkts[2].enq_ns, 36 * ms); /* behind pkts[1], not at 12 ms */
	assert_int_equal(emu_enqueue(e, &pkts[3], 40 * ms, &drops), 0);
	assert_int_equal(pkts[3].enq_ns, 50 * ms); /* drained: the short path again */
	for (int i = 0; i < 4; i++)
		assert_ptr_equal(emu_dequeue(e, 50 * ms), &pkts[i]);
	emu_set_path(e, 10 * ms, 0, 1000000); /* 100 % loss */
	assert_int_equal(emu_enqueue(e, &pkts[4], 60 * ms, &drops), 1);
	assert_int_equal(drops.count, 1);
	assert_int_equal(drops.head->drop_reason, SHAPER_DROP_EMULATED_LOSS);
	emu_set_path(e, 10 * ms, 0, 0);
	assert_int_equal(emu_enqueue(e, &pkts[5], 60 * ms, &drops), 0);
	emu_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed_delay), cmocka_unit_test(test_jitter_keeps_order),
		cmocka_unit_test(test_loss_rate),   cmocka_unit_test(test_limit_and_flush),
		cmocka_unit_test(test_path_step),
	};

	return cmocka_run_group_tests_name("emulate", tests, NULL, NULL);
}
