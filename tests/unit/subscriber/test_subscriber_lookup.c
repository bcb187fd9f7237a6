/*
 * Address -> subscriber (src/subscriber/lookup.c) against a brute-force
 * longest-prefix match over random prefix sets, v4 and v6, with and
 * without VLAN-qualified prefixes, hits and misses; and the samples.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/rand.h"
#include "shaper/subscriber.h"
#include "shaper/subscriber_lookup.h"

static bool
covers(const struct sub_prefix *p, int family, const uint8_t *a)
{
	unsigned int i;

	if (p->family != family)
		return false;
	for (i = 0; i < p->len; i++)
		if ((p->addr[i / 8] ^ a[i / 8]) & (0x80u >> (i % 8)))
			return false;
	return true;
}

/* The rule, spelled out: the longest prefix on this VLAN, else the longest on any. */
static uint32_t
brute(const struct sub_set *set, int family, uint16_t vlan, const uint8_t *a)
{
	int pass;

	for (pass = 0; pass < 2; pass++) {
		uint16_t want = pass == 0 ? vlan : 0;
		int best = -1;
		uint32_t sub = SUB_NONE, i;

		if (pass == 0 && vlan == 0)
			continue;
		for (i = 0; i < set->nprefixes; i++) {
			const struct sub_prefix *p = &set->prefixes[i];

			if (p->vlan == want && covers(p, family, a) && p->len > best) {
				best = p->len;
				sub = p->sub;
			}
		}
		if (sub != SUB_NONE)
			return sub;
	}
	return SUB_NONE;
}

static void
random_prefix(uint64_t *rng, int family, struct sub_prefix *p)
{
	unsigned int max = family == 4 ? 32 : 128, i;

	memset(p, 0, sizeof(*p));
	p->family = (uint8_t)family;
	/* Lengths around what ISPs use, plus anything now and then. */
	if (family == 4)
		p->len = (uint8_t)(sh_rand32(rng) % 4 ? 32 - sh_rand32(rng) % 4
						      : sh_rand32(rng) % 33);
	else
		p->len = (uint8_t)(sh_rand32(rng) % 4 ? 48 + 8 * (sh_rand32(rng) % 3)
						      : sh_rand32(rng) % 129);
	/* A narrow address space so prefixes nest and collide. */
	p->addr[0] = family == 4 ? 100 : 0x20;
	p->addr[1] = family == 4 ? 64 : 0x01;
	for (i = 2; i < max / 8; i++)
		p->addr[i] = (uint8_t)(i < (family == 4 ? 4u : 8u) ? sh_rand32(rng) % 4 : 0);
	if (family == 4)
		p->addr[3] = (uint8_t)sh_rand32(rng);
	for (i = p->len; i < max; i++)
		p->addr[i / 8] &= (uint8_t) ~(0x80u >> (i % 8));
	p->vlan = (uint16_t)(sh_rand32(rng) % 5 == 0 ? 1 + sh_rand32(rng) % 3 : 0);
}

static void
test_lookup_random(void **state)
{
	uint64_t rng = 42;
	int round, mismatches = 0, hits = 0;

	(void)state;
	for (round = 0; round < 40; round++) {
		struct sub_set set;
		struct sub_lookup *l;
		uint32_t n = 1 + sh_rand32(&rng) % 300, i, idx;
		int q;

		sub_set_init(&set);
		for (i = 0; i < n; i++) {
			assert_int_equal(sub_set_add_prefix(&set, &idx), 0);
			random_prefix(&rng, sh_rand32(&rng) % 2 ? 4 : 6, &set.prefixes[idx]);
			set.prefixes[idx].sub = i;
		}
		l = sub_lookup_create(&set);
		assert_non_null(l);
		for (q = 0; q < 2000; q++) {
			struct sub_prefix a;
			int family = q % 2 ? 4 : 6;
			uint16_t vlan = (uint16_t)(sh_rand32(&rng) % 3 == 0 ? sh_rand32(&rng) % 4
									    : 0);
			uint32_t got, want;

			/* An address inside a random prefix (a hit, mostly) or anywhere near. */
			if (q % 3 && set.nprefixes) {
				const struct sub_prefix *p = &set.prefixes[sh_rand32(&rng) % n];
				unsigned int b, max = p->family == 4 ? 32 : 128;

				a = *p;
				family = p->family;
				for (b = p->len; b < max; b++)
					if (sh_rand32(&rng) & 1)
						a.addr[b / 8] |= (uint8_t)(0x80u >> (b % 8));
			} else {
				random_prefix(&rng, family, &a);
			}
			if (family == 4)
				got = sub_lookup_v4(l, vlan,
						    (uint32_t)a.addr[0] << 24 |
								    (uint32_t)a.addr[1] << 16 |
								    (uint32_t)a.addr[2] << 8 |
								    a.addr[3]);
			else
				got = sub_lookup_v6(l, vlan, a.addr);
			want = brute(&set, family, vlan, a.addr);
			hits += want != SUB_NONE;
			if (got != want && mismatches++ < 5) {
				char buf[80];

				sub_prefix_format(&a, buf, sizeof(buf));
				printf("round %d: %s vlan %u: got %u, want %u\n", round, buf, vlan,
				       got, want);
			}
		}
		sub_lookup_free(l);
		sub_set_free(&set);
	}
	assert_int_equal(mismatches, 0);
	assert_true(hits > 20000); /* the queries did find subscribers */
}

static void
test_lookup_samples(void **state)
{
	static const uint8_t in56[16] = { 0x20, 0x01, 0x0d, 0xb8, 0x01, 0x02, 0x00, 0xff, 1 };
	static const uint8_t in64[16] = { 0x20, 0x01, 0x0d, 0xb8, 0x11, 0x02, 0, 0,
					  0,    0,    0,    0,    0,    0,    0, 9 };
	struct sub_set set;
	struct sub_lookup *l;
	char err[256];

	(void)state;
	sub_set_init(&set);
	if (sub_load_json(&set, SHAPER_SOURCE_ROOT "/config/subscribers/isp-subscribers.json", err,
			  sizeof(err)) != 0)
		fail_msg("%s", err);
	l = sub_lookup_create(&set);
	assert_non_null(l);
	assert_int_equal(sub_lookup_v4(l, 0, 0x64400001), sub_find(&set, "c100"));
	assert_int_equal(sub_lookup_v4(l, 0, 0x6440000d), sub_find(&set, "c101")); /* in the /29 */
	assert_int_equal(sub_lookup_v4(l, 0, 0x64400010), SUB_NONE);
	/* 100.64.0.1 is c105's on VLAN 200 and c100's anywhere else. */
	assert_int_equal(sub_lookup_v4(l, 200, 0x64400001), sub_find(&set, "c105"));
	assert_int_equal(sub_lookup_v4(l, 201, 0x64400001), sub_find(&set, "c100"));
	assert_int_equal(sub_lookup_v6(l, 0, in56), sub_find(&set, "c102"));
	assert_int_equal(sub_lookup_v6(l, 0, in64), sub_find(&set, "c102"));
	assert_true(sub_lookup_bytes(l) >= sub_lookup_bytes_for(8, 4));
	sub_lookup_free(l);
	sub_set_free(&set);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup_random),
		cmocka_unit_test(test_lookup_samples),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
