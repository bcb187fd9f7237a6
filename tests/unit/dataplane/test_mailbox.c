/*
 * The control mailbox between the control thread and a worker, driven
 * through the real backend (be.apply, be.reset_stats, be.flows) with a fake
 * worker: a thread that serves requests with dp_control_turn, or one that
 * takes a request and answers it only when told, after the caller has
 * timed out. sched_create/sched_free are wrapped (-Wl,--wrap) to see which
 * scheduler is created, installed and freed; freed ones are only really
 * freed at the end of each test, so a use of one is seen, not undefined.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_eal.h>

#include "shaper/dataplane.h"

#include "eal_test.h"

#define CALL_TIMEOUT_MS 100 /* long enough for a spinning fake worker to take a request */

/* ---- wrapped scheduler life cycle ---- */

struct sched *__real_sched_create(const struct sched_params *p, char *err, size_t errlen);
void __real_sched_free(struct sched *s);
struct sched *__wrap_sched_create(const struct sched_params *p, char *err, size_t errlen);
void __wrap_sched_free(struct sched *s);

#define MAX_TRACKED 64
static struct sched *freed[MAX_TRACKED];
static unsigned int n_freed;
static struct sched *last_created;

struct sched *
__wrap_sched_create(const struct sched_params *p, char *err, size_t errlen)
{
	last_created = __real_sched_create(p, err, errlen);
	return last_created;
}

struct sched *__real_sched_create_on(const struct sched_params *p, const struct sched_alloc *a,
				     char *err, size_t errlen);
struct sched *__wrap_sched_create_on(const struct sched_params *p, const struct sched_alloc *a,
				     char *err, size_t errlen);

/* The backend builds a swap's scheduler with its shard's allocator. */
struct sched *
__wrap_sched_create_on(const struct sched_params *p, const struct sched_alloc *a, char *err,
		       size_t errlen)
{
	last_created = __real_sched_create_on(p, a, err, errlen);
	return last_created;
}

void
__wrap_sched_free(struct sched *s)
{
	if (s == NULL)
		return;
	for (unsigned int i = 0; i < n_freed; i++)
		assert_ptr_not_equal(freed[i], s); /* freed twice */
	assert_true(n_freed < MAX_TRACKED);
	freed[n_freed++] = s; /* quarantined until the test ends */
}

static bool
was_freed(const struct sched *s)
{
	for (unsigned int i = 0; i < n_freed; i++)
		if (freed[i] == s)
			return true;
	return false;
}

/* ---- the data plane under test: two directions, no ports ---- */

static struct dp_dir dirs[SHAPER_NUM_DIRS];
static struct dp_control ctl;
static struct ctl_backend be;
static uint64_t now_ns = 1000000;

static struct sched *
make_sched(enum sched_discipline disc)
{
	struct sched_params p;
	char err[256];
	struct sched *s;

	sched_params_default(&p, disc);
	p.rate = 12500000;
	s = __real_sched_create(&p, err, sizeof(err));
	assert_non_null(s);
	return s;
}

static void server_stop(void);
static void holder_finish(void);

static int
setup(void **state)
{
	(void)state;
	n_freed = 0;
	last_created = NULL;
	memset(dirs, 0, sizeof(dirs));
	memset(&ctl, 0, sizeof(ctl));
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		dirs[d].dir = (enum shaper_dir)d;
		dirs[d].sched = make_sched(SCHED_DISC_FIFO);
		assert_int_equal(dp_dir_control_init(&dirs[d]), 0);
		dp_control_turn(&dirs[d], now_ns); /* first snapshot */
		ctl.dirs[d][0] = &dirs[d];
	}
	ctl.n_shards = 1;
	ctl.timeout_ms = CALL_TIMEOUT_MS;
	dp_control_backend(&ctl, &be);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	server_stop(); /* still running if the test failed */
	holder_finish();
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		dp_dir_control_free(&dirs[d]);
		__wrap_sched_free(dirs[d].sched);
	}
	for (unsigned int i = 0; i < n_freed; i++)
		__real_sched_free(freed[i]);
	n_freed = 0;
	return 0;
}

/* ---- fake workers ---- */

/*
 * Serves the mailboxes of the shards in its mask (bit 2 * dir + shard) until
 * stopped, as the worker loop does; shard 0 of both directions by default.
 */
struct server {
	pthread_t th;
	int stop;
	bool running;
	unsigned int mask;
};

static struct dp_dir shard1[SHAPER_NUM_DIRS]; /* the second shard, in the two-shard tests */

static void *
server_main(void *arg)
{
	struct server *s = arg;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
			if (s->mask & (1u << (2 * d)))
				dp_control_turn(&dirs[d], __atomic_add_fetch(&now_ns, 1000,
									     __ATOMIC_RELAXED));
			if (s->mask & (2u << (2 * d)))
				dp_control_turn(&shard1[d], __atomic_add_fetch(&now_ns, 1000,
									       __ATOMIC_RELAXED));
		}
		sched_yield();
	}
	return NULL;
}

static struct server srv;

static void
server_start_mask(unsigned int mask)
{
	srv.stop = 0;
	srv.mask = mask;
	assert_int_equal(pthread_create(&srv.th, NULL, server_main, &srv), 0);
	srv.running = true;
}

static void
server_start(void)
{
	server_start_mask(1u | 1u << 2);
}

static void
server_stop(void)
{
	if (!srv.running)
		return;
	__atomic_store_n(&srv.stop, 1, __ATOMIC_RELEASE);
	pthread_join(srv.th, NULL);
	srv.running = false;
}

/* Takes one request of a direction, then stalls until released; answers late. */
struct holder {
	pthread_t th;
	struct dp_dir *d;
	int taken, release, answered;
	bool running;
};

static void *
holder_main(void *arg)
{
	struct holder *h = arg;
	struct dp_msg *m;

	while ((m = dp_mailbox_take(h->d)) == NULL) {
		if (__atomic_load_n(&h->release, __ATOMIC_ACQUIRE))
			return NULL;
		sched_yield();
	}
	__atomic_store_n(&h->taken, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&h->release, __ATOMIC_ACQUIRE))
		usleep(100);
	dp_dir_handle_msg(h->d, m, __atomic_add_fetch(&now_ns, 1000, __ATOMIC_RELAXED));
	dp_mailbox_answer(h->d, m);
	__atomic_store_n(&h->answered, 1, __ATOMIC_RELEASE);
	return NULL;
}

static struct holder h;

static void
holder_start(struct dp_dir *d)
{
	memset(&h, 0, sizeof(h));
	h.d = d;
	assert_int_equal(pthread_create(&h.th, NULL, holder_main, &h), 0);
	h.running = true;
}

/* Let the stalled worker answer now, long after its caller gave up. */
static void
holder_finish(void)
{
	if (!h.running)
		return;
	__atomic_store_n(&h.release, 1, __ATOMIC_RELEASE);
	pthread_join(h.th, NULL);
	h.running = false;
}

static int
apply(enum shaper_dir d, enum sched_discipline disc, uint64_t rate, char *err, size_t errlen)
{
	struct sched_params p;

	sched_params_default(&p, disc);
	p.rate = rate;
	err[0] = '\0';
	return be.apply(be.opaque, d, &p, err, errlen);
}

/* ---- tests ---- */

/* Answered calls: an update, the flows list, a reset. */
static void
test_answered(void **state)
{
	struct ctl_flow flows[4];
	char err[256];

	(void)state;
	server_start();
	assert_int_equal(apply(SHAPER_UP, SCHED_DISC_FIFO, 25000000, err, sizeof(err)), 0);
	assert_int_equal(be.flows(be.opaque, SHAPER_UP, flows, 4), 0);
	assert_int_equal(be.reset_stats(be.opaque), 0);
	server_stop();
	assert_int_equal(sched_get_params(dirs[SHAPER_UP].sched)->rate, 25000000);
	assert_int_equal(n_freed, 0);
}

/*
 * A use-after-free this once had: a reset times out while the worker holds it
 * and is answered late; the next call, a discipline swap, must get its own
 * answer (it took the stale one, -EPROTO, and freed the new scheduler the
 * worker then installed).
 */
static void
test_late_answer_is_not_taken_by_next_call(void **state)
{
	struct sched *old = dirs[SHAPER_UP].sched, *created;
	char err[256];

	(void)state;
	holder_start(&dirs[SHAPER_UP]);
	assert_int_equal(be.reset_stats(be.opaque), -ETIMEDOUT);
	assert_true(__atomic_load_n(&h.taken, __ATOMIC_ACQUIRE));
	holder_finish(); /* the late answer is now in the mailbox */
	assert_true(h.answered);

	server_start();
	assert_int_equal(apply(SHAPER_UP, SCHED_DISC_FQ_CODEL, 12500000, err, sizeof(err)), 0);
	created = last_created;
	server_stop();

	assert_non_null(created);
	assert_ptr_equal(dirs[SHAPER_UP].sched, created);
	assert_false(was_freed(created)); /* the installed scheduler is alive */
	assert_true(was_freed(old));      /* the one swapped out went back and was freed */
	assert_int_equal(sched_get_params(dirs[SHAPER_UP].sched)->discipline, SCHED_DISC_FQ_CODEL);
}

/*
 * A swap the worker takes but answers late: the caller gets -ETIMEDOUT and
 * lets go of the message; calls meanwhile get -EBUSY (nothing built, nothing
 * posted); the late answer is reclaimed by the next call, and
 * the scheduler it carries back (the old one) is freed, never the new one.
 */
static void
test_busy_while_outstanding_then_reclaimed(void **state)
{
	struct sched *old = dirs[SHAPER_UP].sched, *n1;
	char err[256], err2[256];

	(void)state;
	holder_start(&dirs[SHAPER_UP]);
	assert_int_equal(apply(SHAPER_UP, SCHED_DISC_FQ_CODEL, 12500000, err, sizeof(err)),
			 -ETIMEDOUT);
	n1 = last_created;
	assert_true(__atomic_load_n(&h.taken, __ATOMIC_ACQUIRE));
	assert_false(was_freed(n1)); /* the worker owns it now */

	assert_int_equal(apply(SHAPER_UP, SCHED_DISC_CAKE, 12500000, err2, sizeof(err2)), -EBUSY);
	/* Refused before anything was built or posted: no second scheduler. */
	assert_ptr_equal(last_created, n1);
	assert_non_null(strstr(err, "still being applied"));
	assert_non_null(strstr(err2, "busy"));
	assert_int_equal(be.reset_stats(be.opaque), -EBUSY);

	holder_finish();
	assert_ptr_equal(dirs[SHAPER_UP].sched, n1); /* applied late */
	assert_false(was_freed(old));                /* still in the unclaimed answer */

	server_start();
	assert_int_equal(be.reset_stats(be.opaque), 0);
	assert_int_equal(apply(SHAPER_UP, SCHED_DISC_FQ_CODEL, 25000000, err, sizeof(err)), 0);
	server_stop();
	assert_true(was_freed(old));
	assert_false(was_freed(n1));
	assert_ptr_equal(dirs[SHAPER_UP].sched, n1);
	assert_int_equal(sched_get_params(n1)->rate, 25000000);
}

/* A request the worker never took is withdrawn at the timeout: not applied later. */
static void
test_untaken_request_is_withdrawn(void **state)
{
	struct sched *old = dirs[SHAPER_UP].sched, *n1;
	char err[256];

	(void)state;
	ctl.timeout_ms = 5;
	assert_int_equal(apply(SHAPER_UP, SCHED_DISC_FQ_CODEL, 12500000, err, sizeof(err)),
			 -ETIMEDOUT);
	n1 = last_created;

	dp_control_turn(&dirs[SHAPER_UP], now_ns += 1000); /* the worker comes back */
	assert_ptr_equal(dirs[SHAPER_UP].sched, old);
	assert_true(was_freed(n1));
	assert_non_null(strstr(err, "nothing changed"));

	ctl.n_shards = 1;
	ctl.timeout_ms = CALL_TIMEOUT_MS;
	server_start();
	assert_int_equal(be.reset_stats(be.opaque), 0);
	server_stop();
	assert_ptr_equal(dirs[SHAPER_UP].sched, old);
	assert_false(was_freed(old));
}

/* At shutdown an answer nobody collected is freed with the mailbox. */
static void
test_control_free_reclaims_late_answer(void **state)
{
	struct sched *old = dirs[SHAPER_UP].sched, *n1;
	char err[256];

	(void)state;
	holder_start(&dirs[SHAPER_UP]);
	assert_int_equal(apply(SHAPER_UP, SCHED_DISC_FQ_CODEL, 12500000, err, sizeof(err)),
			 -ETIMEDOUT);
	n1 = last_created;
	assert_true(__atomic_load_n(&h.taken, __ATOMIC_ACQUIRE));
	holder_finish();
	assert_ptr_equal(dirs[SHAPER_UP].sched, n1);
	assert_false(was_freed(old));

	dp_dir_control_free(&dirs[SHAPER_UP]);
	assert_true(was_freed(old));
	assert_false(was_freed(n1));
	assert_int_equal(dp_dir_control_init(&dirs[SHAPER_UP]), 0); /* for teardown */
}

/* ---- two shards of one link ---- */

static struct share_group group;

static int
setup_two(void **state)
{
	setup(state);
	assert_int_equal(share_group_init(&group, 12500000, 2, 1514, NULL, 0), 0);
	memset(shard1, 0, sizeof(shard1));
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		shard1[d].dir = (enum shaper_dir)d;
		shard1[d].shard = 1;
		shard1[d].sched = make_sched(SCHED_DISC_FIFO);
		assert_int_equal(dp_dir_control_init(&shard1[d]), 0);
		dp_control_turn(&shard1[d], now_ns);
		ctl.dirs[d][1] = &shard1[d];
	}
	dirs[SHAPER_UP].share_group = shard1[SHAPER_UP].share_group = &group;
	share_shard_init(&dirs[SHAPER_UP].share, &group, 0, dirs[SHAPER_UP].sched, now_ns);
	share_shard_init(&shard1[SHAPER_UP].share, &group, 1, shard1[SHAPER_UP].sched, now_ns);
	ctl.n_shards = 2;
	dp_control_backend(&ctl, &be);
	return 0;
}

static int
teardown_two(void **state)
{
	server_stop();
	holder_finish();
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		dp_dir_control_free(&shard1[d]);
		__wrap_sched_free(shard1[d].sched);
	}
	return teardown(state);
}

static uint64_t
rate_of(const struct dp_dir *d)
{
	return sched_get_params(d->sched)->rate;
}

/*
 * config.set reaches the first shard, and the second one's worker never
 * takes it: the call fails naming that worker, and the first shard and the
 * group go back to the old rate, so the shards never run on different
 * parameters.
 */
static void
test_shard_refusal_rolls_back(void **state)
{
	char err[256];

	(void)state;
	ctl.timeout_ms = 20;
	server_start_mask(1u); /* shard 0 of upstream only */
	assert_int_equal(apply(SHAPER_UP, SCHED_DISC_FIFO, 25000000, err, sizeof(err)), -ETIMEDOUT);
	server_stop();
	assert_non_null(strstr(err, "nothing changed"));
	assert_non_null(strstr(err, "worker 2 of 2"));
	assert_int_equal(rate_of(&dirs[SHAPER_UP]), 12500000);
	assert_int_equal(atomic_load(&group.link_rate), 12500000);
	dp_control_turn(&shard1[SHAPER_UP], now_ns += 1000); /* its worker comes back */
	assert_int_equal(rate_of(&shard1[SHAPER_UP]), 12500000);
	assert_true(dirs[SHAPER_UP].share.rate + shard1[SHAPER_UP].share.rate <= 12500000);
}

/*
 * The first shard's worker takes the change and answers late: it will
 * apply it, so the group keeps the new rate and the second shard gets the
 * change too; the caller is told it is still being applied.
 */
static void
test_late_shard_still_applies(void **state)
{
	char err[256];

	(void)state;
	ctl.timeout_ms = 50;
	holder_start(&dirs[SHAPER_UP]);
	server_start_mask(2u); /* shard 1 of upstream */
	assert_int_equal(apply(SHAPER_UP, SCHED_DISC_FIFO, 25000000, err, sizeof(err)), -ETIMEDOUT);
	server_stop();
	assert_non_null(strstr(err, "still being applied"));
	assert_int_equal(atomic_load(&group.link_rate), 25000000);
	assert_int_equal(rate_of(&shard1[SHAPER_UP]), 25000000);
	holder_finish();
	assert_int_equal(rate_of(&dirs[SHAPER_UP]), 25000000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_answered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_answer_is_not_taken_by_next_call, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_busy_while_outstanding_then_reclaimed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_untaken_request_is_withdrawn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_control_free_reclaims_late_answer, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_shard_refusal_rolls_back, setup_two,
						teardown_two),
		cmocka_unit_test_setup_teardown(test_late_shard_still_applies, setup_two,
						teardown_two),
	};

	return EAL_TEST_RUN("test_mailbox", tests, NULL, NULL);
}
