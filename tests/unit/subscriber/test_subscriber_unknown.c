/*
 * The table of unknown addresses (src/subscriber/unknown.c): keys from
 * frames (v4 address, v6 /64, innermost VLAN), and find/take/release
 * against a plain array over long random runs, so that deletion by
 * backward shift never loses or misplaces a key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shaper/classify.h"
#include "shaper/subscriber_unknown.h"

static struct classify_key key_a, key_b;

static struct sub_prefix
v4_key(uint32_t a, uint16_t vlan)
{
	struct sub_prefix k;

	memset(&k, 0, sizeof(k));
	k.family = 4;
	k.len = 32;
	k.vlan = vlan;
	k.addr[0] = (uint8_t)(a >> 24);
	k.addr[1] = (uint8_t)(a >> 16);
	k.addr[2] = (uint8_t)(a >> 8);
	k.addr[3] = (uint8_t)a;
	return k;
}

/* A frame: Ethernet, optional 802.1Q tag, IPv4 or IPv6, no payload needed. */
static uint32_t
build(uint8_t *f, bool v6, uint16_t vlan, const uint8_t *src, const uint8_t *dst)
{
	uint32_t o = 12, l3;

	memset(f, 0, 128);
	if (vlan != 0) {
		f[o] = 0x81;
		f[o + 1] = 0x00;
		f[o + 2] = (uint8_t)(vlan >> 8);
		f[o + 3] = (uint8_t)vlan;
		o += 4;
	}
	f[o] = v6 ? 0x86 : 0x08;
	f[o + 1] = v6 ? 0xdd : 0x00;
	l3 = o + 2;
	if (v6) {
		f[l3] = 0x60;
		f[l3 + 6] = 17;
		memcpy(f + l3 + 8, src, 16);
		memcpy(f + l3 + 24, dst, 16);
		return l3 + 40 + 8;
	}
	f[l3] = 0x45;
	f[l3 + 9] = 17;
	memcpy(f + l3 + 12, src, 4);
	memcpy(f + l3 + 16, dst, 4);
	return l3 + 20 + 8;
}

/* p: that frame in f, classified. */
static void
frame(struct sh_pkt *p, uint8_t *f, bool v6, uint16_t vlan, const uint8_t *src, const uint8_t *dst,
      const struct classify_key *ck)
{
	memset(p, 0, sizeof(*p));
	p->data = f;
	p->len = p->hdr_len = build(f, v6, vlan, src, dst);
	classify_pkt(p, ck);
}

static void
test_keys_from_frames(void **state)
{
	static const uint8_t s4[4] = { 10, 0, 0, 9 }, d4[4] = { 203, 0, 113, 5 };
	static const uint8_t s6[16] = {
		0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8
	};
	static const uint8_t d6[16] = {
		0x20, 0x01, 0x0d, 0xb8, 9, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1
	};
	struct classify_key ck;
	uint8_t f[128];
	struct sh_pkt p;
	struct sub_prefix k, other;

	(void)state;
	classify_key_init(&ck, 1);
	/* Going up the LAN address is the source, going down the destination. */
	frame(&p, f, false, 0, s4, d4, &ck);
	assert_true(sub_unknown_key_from(&p, SUB_UP, &k));
	assert_int_equal(k.family, 4);
	assert_int_equal(k.len, 32);
	assert_memory_equal(k.addr, s4, 4);
	assert_int_equal(k.vlan, 0);
	assert_true(sub_unknown_key_from(&p, SUB_DOWN, &k));
	assert_memory_equal(k.addr, d4, 4);
	/* v6: the /64, on its VLAN. */
	frame(&p, f, true, 7, s6, d6, &ck);
	assert_true(sub_unknown_key_from(&p, SUB_UP, &k));
	assert_int_equal(k.family, 6);
	assert_int_equal(k.len, 64);
	assert_int_equal(k.vlan, 7);
	assert_memory_equal(k.addr, s6, 8);
	for (int i = 8; i < 16; i++)
		assert_int_equal(k.addr[i], 0);
	/* Another address of the same /64 is the same household; another VLAN is not. */
	{
		uint8_t s6b[16];

		memcpy(s6b, s6, 16);
		s6b[15] ^= 0xff;
		frame(&p, f, true, 7, s6b, d6, &ck);
		assert_true(sub_unknown_key_from(&p, SUB_UP, &other));
		assert_memory_equal(&other, &k, sizeof(k));
		assert_int_equal(sub_unknown_hash(&other, &key_a), sub_unknown_hash(&k, &key_a));
		frame(&p, f, true, 8, s6b, d6, &ck);
		assert_true(sub_unknown_key_from(&p, SUB_UP, &other));
		assert_int_equal(other.vlan, 8);
	}
	/* No IP header: no key. */
	memset(&p, 0, sizeof(p));
	p.data = f;
	p.l3_off = SH_OFF_NONE;
	assert_false(sub_unknown_key_from(&p, SUB_UP, &k));
}

static void
test_full_and_free(void **state)
{
	struct sub_unknown_table *t = sub_unknown_create(3, &key_a);
	struct sub_prefix a = v4_key(1, 0), b = v4_key(2, 0), c = v4_key(3, 0), d = v4_key(4, 0);
	struct sub_prefix got;
	uint32_t sa, sb, sc;

	(void)state;
	assert_non_null(t);
	sa = sub_unknown_take(t, &a);
	sb = sub_unknown_take(t, &b);
	sc = sub_unknown_take(t, &c);
	assert_true(sa < 3 && sb < 3 && sc < 3 && sa != sb && sb != sc && sa != sc);
	assert_int_equal(sub_unknown_take(t, &d), SUB_NONE); /* full */
	assert_int_equal(sub_unknown_take(t, &a), SUB_NONE); /* already in */
	assert_int_equal(sub_unknown_used(t), 3);
	assert_true(sub_unknown_key_of(t, sb, &got));
	assert_memory_equal(&got, &b, sizeof(b));
	sub_unknown_release(t, sb);
	assert_false(sub_unknown_key_of(t, sb, &got));
	assert_int_equal(sub_unknown_find(t, &b), SUB_NONE);
	assert_int_equal(sub_unknown_find(t, &a), sa);
	assert_int_equal(sub_unknown_find(t, &c), sc);
	assert_int_equal(sub_unknown_take(t, &d), sb); /* the freed slot */
	/* The same address on a VLAN is another key. */
	sub_unknown_release(t, sa);
	{
		struct sub_prefix av = v4_key(1, 5);

		assert_int_not_equal(sub_unknown_take(t, &av), SUB_NONE);
		assert_int_equal(sub_unknown_find(t, &a), SUB_NONE);
	}
	sub_unknown_free(t);
}

/* xorshift: the same run every time. */
static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void
test_random_against_array(void **state)
{
	enum {
		SLOTS = 200,
		ADDRS = 600,
		OPS = 200000
	};
	struct sub_unknown_table *t = sub_unknown_create(SLOTS, &key_a);
	uint32_t where[ADDRS]; /* the slot each address holds, or SUB_NONE */
	uint32_t held = 0;
	uint64_t s = 0x9e3779b97f4a7c15ull;

	(void)state;
	assert_non_null(t);
	for (int i = 0; i < ADDRS; i++)
		where[i] = SUB_NONE;
	for (int op = 0; op < OPS; op++) {
		/* Addresses close together and a few VLANs: many collide in the table. */
		uint32_t i = (uint32_t)(rnd(&s) % ADDRS);
		struct sub_prefix k = v4_key(0x0a000000u + i / 3, (uint16_t)(i % 3));
		uint32_t f = sub_unknown_find(t, &k);

		assert_int_equal(f, where[i]);
		if (where[i] == SUB_NONE) {
			uint32_t got = sub_unknown_take(t, &k);

			if (held == SLOTS) {
				assert_int_equal(got, SUB_NONE);
				continue;
			}
			assert_true(got < SLOTS);
			for (int j = 0; j < ADDRS; j++)
				assert_true(where[j] != got);
			where[i] = got;
			held++;
		} else if (rnd(&s) % 2 == 0) {
			sub_unknown_release(t, where[i]);
			where[i] = SUB_NONE;
			held--;
		}
		assert_int_equal(sub_unknown_used(t), held);
		/* Every so often, all of them. */
		if (op % 5000 == 0)
			for (uint32_t j = 0; j < ADDRS; j++) {
				struct sub_prefix kj =
						v4_key(0x0a000000u + j / 3, (uint16_t)(j % 3));

				assert_int_equal(sub_unknown_find(t, &kj), where[j]);
			}
	}
	sub_unknown_free(t);
}

/*
 * The hash is keyed: addresses that one key sends to one home bucket
 * (what a remote host that can pick its destination addresses, say in the
 * IPv6 /64s routed through the box, would build against a fixed hash)
 * spread under another key, and a table under that key finds each of them
 * in a few probes. Under a fixed hash every such address would land in
 * one run, each lookup walking all of them.
 */
static void
test_keyed(void **state)
{
	enum {
		WANT = 64,
		BUCKETS = 1024
	};
	struct sub_prefix aimed[WANT];
	uint32_t n = 0, home = UINT32_MAX, distinct = 0;
	uint8_t seen[BUCKETS] = { 0 };
	struct sub_unknown_table *t;

	(void)state;
	/* Brute force against key_a, as an attacker who knew it would. */
	for (uint32_t a = 0x0a000000; n < WANT; a++) {
		struct sub_prefix k = v4_key(a, 0);
		uint32_t h = sub_unknown_hash(&k, &key_a) & (BUCKETS - 1);

		if (home == UINT32_MAX)
			home = h;
		if (h == home)
			aimed[n++] = k;
	}
	for (uint32_t i = 0; i < WANT; i++) {
		uint32_t h = sub_unknown_hash(&aimed[i], &key_b) & (BUCKETS - 1);

		distinct += !seen[h];
		seen[h] = 1;
	}
	/* 64 keys over 1024 buckets at random: about 62 distinct. */
	assert_true(distinct >= 50);
	t = sub_unknown_create(BUCKETS / 2, &key_b);
	assert_non_null(t);
	for (uint32_t i = 0; i < WANT; i++)
		assert_int_not_equal(sub_unknown_take(t, &aimed[i]), SUB_NONE);
	for (uint32_t i = 0; i < WANT; i++)
		assert_int_not_equal(sub_unknown_find(t, &aimed[i]), SUB_NONE);
	sub_unknown_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys_from_frames),
		cmocka_unit_test(test_full_and_free),
		cmocka_unit_test(test_random_against_array),
		cmocka_unit_test(test_keyed),
	};

	classify_key_init(&key_a, 1);
	classify_key_init(&key_b, 2);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
