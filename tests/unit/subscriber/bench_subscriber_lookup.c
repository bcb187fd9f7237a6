/*
 * Address -> subscriber lookup cost: this project's hash-per-length match
 * (src/subscriber/lookup.c) against DPDK's rte_lpm and rte_lpm6, with
 * 10,000 subscribers: each a /32 (one in ten a /29) and a /56 (one in ten
 * also a /64). Looks up 1M addresses inside subscribers' prefixes in random
 * order, then 1M outside any, five times each alternating the two, and
 * prints ns per lookup (the best and the median of the five).
 *
 * Not a test: wall-clock figures on whatever else the machine runs. Run it
 * niced on a quiet machine; on a shared one the figures are noisy.
 * usage: bench_subscriber_lookup
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>

#include "shaper/rand.h"
#include "shaper/subscriber.h"
#include "shaper/subscriber_lookup.h"

#define NSUBS  10000u
#define NQ     (1u << 20)
#define ROUNDS 5

static double
now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static volatile uint64_t sink;

typedef uint64_t (*run_fn)(const void *ctx, const void *q, uint32_t n);

struct ctx4 {
	const struct sub_lookup *l;
	struct rte_lpm *lpm;
};

static uint64_t
run_sub4(const void *ctx, const void *q, uint32_t n)
{
	const struct ctx4 *c = ctx;
	const uint32_t *a = q;
	uint64_t s = 0;

	for (uint32_t i = 0; i < n; i++)
		s += sub_lookup_v4(c->l, 0, a[i]);
	return s;
}

static uint64_t
run_lpm4(const void *ctx, const void *q, uint32_t n)
{
	const struct ctx4 *c = ctx;
	const uint32_t *a = q;
	uint64_t s = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t hop = SUB_NONE;

		if (rte_lpm_lookup(c->lpm, a[i], &hop) != 0)
			hop = SUB_NONE;
		s += hop;
	}
	return s;
}

struct ctx6 {
	const struct sub_lookup *l;
	struct rte_lpm6 *lpm;
};

static uint64_t
run_sub6(const void *ctx, const void *q, uint32_t n)
{
	const struct ctx6 *c = ctx;
	const uint8_t(*a)[16] = q;
	uint64_t s = 0;

	for (uint32_t i = 0; i < n; i++)
		s += sub_lookup_v6(c->l, 0, a[i]);
	return s;
}

static uint64_t
run_lpm6(const void *ctx, const void *q, uint32_t n)
{
	const struct ctx6 *c = ctx;
	const uint8_t(*a)[16] = q;
	uint64_t s = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t hop = SUB_NONE;

		if (rte_lpm6_lookup(c->lpm, a[i], &hop) != 0)
			hop = SUB_NONE;
		s += hop;
	}
	return s;
}

/* Time a and b alternately; print the best and median ns/lookup of each. */
static void
compare(const char *what, run_fn a, run_fn b, const void *ctx, const void *q, uint32_t n)
{
	double ta[ROUNDS], tb[ROUNDS];
	uint64_t sa = 0, sb = 0;

	for (int r = 0; r < ROUNDS; r++) {
		double t0 = now_ns();

		sa = a(ctx, q, n);
		ta[r] = (now_ns() - t0) / n;
		t0 = now_ns();
		sb = b(ctx, q, n);
		tb[r] = (now_ns() - t0) / n;
	}
	sink += sa + sb;
	qsort(ta, ROUNDS, sizeof(double), cmp_double);
	qsort(tb, ROUNDS, sizeof(double), cmp_double);
	printf("%-34s  subscriber lookup %6.1f ns (median %6.1f)   rte_lpm%s %6.1f ns (median "
	       "%6.1f)%s\n",
	       what, ta[0], ta[ROUNDS / 2], strstr(what, "v6") ? "6" : " ", tb[0], tb[ROUNDS / 2],
	       sa == sb ? "" : "   RESULTS DIFFER");
}

int
main(int argc, char **argv)
{
	char prefix[64];
	char *eal_argv[] = { argv[0],          "--no-huge", "--no-pci", "--no-shconf",
			     "--no-telemetry", "-m",        "768",      "--log-level",
			     "lib.eal:error",  "-l",        "0",        prefix };
	struct rte_lpm_config c4 = { .max_rules = 2 * NSUBS, .number_tbl8s = 1u << 14 };
	struct rte_lpm6_config c6 = { .max_rules = 2 * NSUBS, .number_tbl8s = 1u << 16 };
	struct sub_lookup *lookup;
	struct sub_set set;
	struct ctx4 x4;
	struct ctx6 x6;
	uint64_t rng = 1;
	uint32_t *q4, i, idx, *base4;
	uint8_t(*q6)[16], (*base6)[16];

	(void)argc;
	snprintf(prefix, sizeof(prefix), "--file-prefix=bench_sub_lookup_%d", (int)getpid());
	if (rte_eal_init((int)(sizeof(eal_argv) / sizeof(eal_argv[0])), eal_argv) < 0) {
		fprintf(stderr, "EAL initialisation failed\n");
		return 1;
	}
	sub_set_init(&set);
	base4 = calloc(NSUBS, sizeof(*base4));
	base6 = calloc(NSUBS, sizeof(*base6));
	q4 = malloc(NQ * sizeof(*q4));
	q6 = malloc(NQ * sizeof(*q6));
	if (!base4 || !base6 || !q4 || !q6)
		return 1;
	/* Subscriber i: a distinct /29 block of 100.64.0.0/10 and a /56 of 2001:db8::/32. */
	for (i = 0; i < NSUBS; i++) {
		struct sub_prefix *p;
		uint32_t blk = (i * 2654435761u) & ((1u << 19) - 1); /* odd multiplier: distinct */
		uint32_t v6blk = (i * 2246822519u) & 0xffffff;

		if (sub_set_add_sub(&set, &idx) != 0)
			return 1;
		base4[i] = 0x64400000u | blk << 3;
		sub_set_add_prefix(&set, &idx);
		p = &set.prefixes[idx];
		p->family = 4;
		p->len = i % 10 == 0 ? 29 : 32;
		p->addr[0] = (uint8_t)(base4[i] >> 24);
		p->addr[1] = (uint8_t)(base4[i] >> 16);
		p->addr[2] = (uint8_t)(base4[i] >> 8);
		p->addr[3] = (uint8_t)base4[i];
		p->sub = i;
		sub_set_add_prefix(&set, &idx);
		p = &set.prefixes[idx];
		p->family = 6;
		p->len = 56;
		memcpy(p->addr,
		       (uint8_t[]){ 0x20, 0x01, 0x0d, 0xb8, (uint8_t)(v6blk >> 16),
				    (uint8_t)(v6blk >> 8), (uint8_t)v6blk },
		       7);
		memcpy(base6[i], p->addr, 16);
		p->sub = i;
		if (i % 10 == 5) { /* another delegated /64 elsewhere */
			sub_set_add_prefix(&set, &idx);
			set.prefixes[idx] = set.prefixes[idx - 1];
			set.prefixes[idx].addr[4] ^= 0x80;
			set.prefixes[idx].len = 64;
		}
	}
	lookup = sub_lookup_create(&set);
	x4.l = x6.l = lookup;
	x4.lpm = rte_lpm_create("subs4", 0, &c4);
	x6.lpm = rte_lpm6_create("subs6", 0, &c6);
	if (x4.l == NULL || x4.lpm == NULL || x6.lpm == NULL) {
		fprintf(stderr, "cannot create the tables\n");
		return 1;
	}
	for (i = 0; i < set.nprefixes; i++) {
		const struct sub_prefix *p = &set.prefixes[i];
		int rc;

		if (p->family == 4)
			rc = rte_lpm_add(x4.lpm,
					 (uint32_t)p->addr[0] << 24 | (uint32_t)p->addr[1] << 16 |
							 (uint32_t)p->addr[2] << 8 | p->addr[3],
					 p->len, p->sub);
		else
			rc = rte_lpm6_add(x6.lpm, p->addr, p->len, p->sub);
		if (rc != 0) {
			fprintf(stderr, "rte_lpm%s_add: %d\n", p->family == 4 ? "" : "6", rc);
			return 1;
		}
	}
	printf("# %u subscribers, %u prefixes; %u lookups a round, %d rounds; wall clock on a "
	       "shared machine: noisy\n",
	       NSUBS, set.nprefixes, NQ, ROUNDS);
	printf("# memory: subscriber lookup %zu bytes; rte_lpm %zu + rte_lpm6 %zu bytes (tables "
	       "by their config)\n",
	       sub_lookup_bytes(x4.l), (size_t)(1u << 24) * 4 + (size_t)c4.number_tbl8s * 256 * 4,
	       (size_t)(c6.number_tbl8s + 1) * 256 * 4 + (size_t)(1u << 24) * 4);
	/* Hits: a random subscriber, a random host inside its prefix. */
	for (i = 0; i < NQ; i++) {
		uint32_t s = sh_rand32(&rng) % NSUBS;

		q4[i] = base4[s] | (s % 10 == 0 ? sh_rand32(&rng) & 7 : 0);
		memcpy(q6[i], base6[s], 16);
		for (int b = 7; b < 16; b++)
			q6[i][b] = (uint8_t)sh_rand32(&rng);
	}
	compare("v4 hits (/32 and /29)", run_sub4, run_lpm4, &x4, q4, NQ);
	compare("v6 hits (/56 and /64)", run_sub6, run_lpm6, &x6, q6, NQ);
	/* Misses: addresses outside every subscriber. */
	for (i = 0; i < NQ; i++) {
		q4[i] = 0x0a000000u | (sh_rand32(&rng) & 0xffffff);
		q6[i][0] = 0x2a;
	}
	compare("v4 misses (unknown addresses)", run_sub4, run_lpm4, &x4, q4, NQ);
	compare("v6 misses (unknown addresses)", run_sub6, run_lpm6, &x6, q6, NQ);
	rte_lpm_free(x4.lpm);
	rte_lpm6_free(x6.lpm);
	sub_lookup_free(lookup);
	sub_set_free(&set);
	rte_eal_cleanup();
	return 0;
}
