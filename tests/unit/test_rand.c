/*
 * include/shaper/rand.h: the generator cake, the emulator and the
 * classifier share. The values were taken from the three copies it
 * replaced, so seeded runs draw what they drew before.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "shaper/classify.h"
#include "shaper/rand.h"

/* cake: its default seed through splitmix64, then xorshift64* draws. */
static void
test_cake_sequence(void **state)
{
	uint64_t seed = 0x5eed5eed5eedULL, rng;

	(void)state;
	rng = sh_splitmix64(&seed);
	assert_int_equal(rng, 0x71b7e3b9e6252c8bULL);
	assert_int_equal(sh_rand64(&rng), 0xb4623b46a8b1e5c4ULL);
	assert_int_equal(sh_rand64(&rng), 0xbe52c34bb138c6b2ULL);
	assert_int_equal(sh_rand64(&rng), 0xbd1b6a0731f55918ULL);
}

/* The emulator seeds the state directly and draws 32 bits at a time. */
static void
test_emulate_sequence(void **state)
{
	uint64_t rng = 42;

	(void)state;
	assert_int_equal(sh_rand32(&rng), 0x56ce4ab7u);
	assert_int_equal(sh_rand32(&rng), 0xc841eb53u);
	assert_int_equal(sh_rand32(&rng), 0xca466be0u);
}

/* The classifier's key: two splitmix64 steps from the seed. */
static void
test_classify_key(void **state)
{
	struct classify_key k;

	(void)state;
	classify_key_init(&k, 7);
	assert_int_equal(k.k0, 0x63cbe1e459320dd7ULL);
	assert_int_equal(k.k1, 0x044c3cd7f43c661cULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cake_sequence),
		cmocka_unit_test(test_emulate_sequence),
		cmocka_unit_test(test_classify_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
