/*
 * Longest-prefix match by hashing (see shaper/subscriber_lookup.h): per
 * family, a table of (vlan, len, masked address) -> subscriber and the
 * list of lengths present, longest first, separately for VLAN-qualified
 * and unqualified prefixes.
 */
#include <stdlib.h>
#include <string.h>

#include "shaper/subscriber_lookup.h"

struct sub_ent4 {
	uint64_t key; /* vlan << 40 | (len + 1) << 32 | masked address; 0 = empty */
	uint32_t sub;
	uint32_t pad;
};

struct sub_ent6 {
	uint64_t hi, lo; /* masked address */
	uint32_t meta;   /* vlan << 8 | len, + 1 << 24 (0 = empty) */
	uint32_t sub;
};

struct sub_lens {
	uint8_t len[129];
	uint8_t n;
};

struct sub_lookup {
	struct sub_ent4 *t4;
	struct sub_ent6 *t6;
	uint32_t mask4, mask6;              /* table size - 1 */
	struct sub_lens lens4[2], lens6[2]; /* [0] unqualified, [1] VLAN-qualified */
	size_t bytes;
};

static inline uint32_t
sub_mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	return (uint32_t)(x >> 32);
}

static inline uint64_t
sub_key4(uint16_t vlan, uint8_t len, uint32_t addr)
{
	uint32_t m = len == 0 ? 0 : ~0u << (32 - len);

	return (uint64_t)vlan << 40 | (uint64_t)(len + 1u) << 32 | (addr & m);
}

static inline void
sub_mask6(const uint8_t a[16], uint8_t len, uint64_t *hi, uint64_t *lo)
{
	uint64_t h, l;

	memcpy(&h, a, 8);
	memcpy(&l, a + 8, 8);
	h = __builtin_bswap64(h); /* network order: the first byte is the most significant */
	l = __builtin_bswap64(l);
	if (len <= 64) {
		h &= len == 0 ? 0 : ~0ull << (64 - len);
		l = 0;
	} else if (len < 128) {
		l &= ~0ull << (128 - len);
	}
	*hi = h;
	*lo = l;
}

static inline uint32_t
sub_meta6(uint16_t vlan, uint8_t len)
{
	return 1u << 24 | (uint32_t)vlan << 8 | len;
}

static uint32_t
sub_table_size(uint32_t n)
{
	uint32_t size = 16;

	while (size < 2 * n) /* load at most one half */
		size *= 2;
	return size;
}

size_t
sub_lookup_bytes_for(uint32_t n4, uint32_t n6)
{
	return sizeof(struct sub_lookup) + sub_table_size(n4) * sizeof(struct sub_ent4) +
	       sub_table_size(n6) * sizeof(struct sub_ent6);
}

static void
sub_lens_add(struct sub_lens *l, uint8_t len)
{
	uint8_t i, j;

	for (i = 0; i < l->n; i++) {
		if (l->len[i] == len)
			return;
		if (l->len[i] < len)
			break;
	}
	for (j = l->n; j > i; j--)
		l->len[j] = l->len[j - 1];
	l->len[i] = len;
	l->n++;
}

struct sub_lookup *
sub_lookup_create(const struct sub_set *set)
{
	struct sub_lookup *l = calloc(1, sizeof(*l));
	uint32_t n4 = 0, n6 = 0, i;

	if (l == NULL)
		return NULL;
	for (i = 0; i < set->nprefixes; i++)
		set->prefixes[i].family == 4 ? n4++ : n6++;
	l->mask4 = sub_table_size(n4) - 1;
	l->mask6 = sub_table_size(n6) - 1;
	l->t4 = calloc(l->mask4 + 1, sizeof(*l->t4));
	l->t6 = calloc(l->mask6 + 1, sizeof(*l->t6));
	if (l->t4 == NULL || l->t6 == NULL) {
		sub_lookup_free(l);
		return NULL;
	}
	l->bytes = sub_lookup_bytes_for(n4, n6);
	for (i = 0; i < set->nprefixes; i++) {
		const struct sub_prefix *p = &set->prefixes[i];
		uint32_t h;

		if (p->family == 4) {
			uint32_t a = (uint32_t)p->addr[0] << 24 | (uint32_t)p->addr[1] << 16 |
				     (uint32_t)p->addr[2] << 8 | p->addr[3];
			uint64_t key = sub_key4(p->vlan, p->len, a);

			for (h = sub_mix(key) & l->mask4; l->t4[h].key != 0; h = (h + 1) & l->mask4)
				;
			l->t4[h].key = key;
			l->t4[h].sub = p->sub;
			sub_lens_add(&l->lens4[p->vlan != 0], p->len);
		} else {
			uint64_t hi, lo;
			uint32_t meta = sub_meta6(p->vlan, p->len);

			sub_mask6(p->addr, p->len, &hi, &lo);
			for (h = sub_mix(hi ^ lo * 3 ^ meta) & l->mask6; l->t6[h].meta != 0;
			     h = (h + 1) & l->mask6)
				;
			l->t6[h].hi = hi;
			l->t6[h].lo = lo;
			l->t6[h].meta = meta;
			l->t6[h].sub = p->sub;
			sub_lens_add(&l->lens6[p->vlan != 0], p->len);
		}
	}
	return l;
}

void
sub_lookup_free(struct sub_lookup *l)
{
	if (l == NULL)
		return;
	free(l->t4);
	free(l->t6);
	free(l);
}

size_t
sub_lookup_bytes(const struct sub_lookup *l)
{
	return l->bytes;
}

static inline uint32_t
sub_find4(const struct sub_lookup *l, const struct sub_lens *lens, uint16_t vlan, uint32_t addr)
{
	uint8_t i;

	for (i = 0; i < lens->n; i++) {
		uint64_t key = sub_key4(vlan, lens->len[i], addr);
		uint32_t h;

		for (h = sub_mix(key) & l->mask4; l->t4[h].key != 0; h = (h + 1) & l->mask4)
			if (l->t4[h].key == key)
				return l->t4[h].sub;
	}
	return SUB_NONE;
}

uint32_t
sub_lookup_v4(const struct sub_lookup *l, uint16_t vlan, uint32_t addr)
{
	if (vlan != 0 && l->lens4[1].n != 0) {
		uint32_t s = sub_find4(l, &l->lens4[1], vlan, addr);

		if (s != SUB_NONE)
			return s;
	}
	return sub_find4(l, &l->lens4[0], 0, addr);
}

static inline uint32_t
sub_find6(const struct sub_lookup *l, const struct sub_lens *lens, uint16_t vlan, uint64_t ahi,
	  uint64_t alo)
{
	uint8_t i;

	for (i = 0; i < lens->n; i++) {
		uint8_t len = lens->len[i];
		uint32_t meta = sub_meta6(vlan, len), h;
		uint64_t hi = len == 0 ? 0 : len < 64 ? ahi & ~0ull << (64 - len) : ahi;
		uint64_t lo = len <= 64 ? 0 : len < 128 ? alo & ~0ull << (128 - len) : alo;

		for (h = sub_mix(hi ^ lo * 3 ^ meta) & l->mask6; l->t6[h].meta != 0;
		     h = (h + 1) & l->mask6)
			if (l->t6[h].hi == hi && l->t6[h].lo == lo && l->t6[h].meta == meta)
				return l->t6[h].sub;
	}
	return SUB_NONE;
}

uint32_t
sub_lookup_v6(const struct sub_lookup *l, uint16_t vlan, const uint8_t addr[16])
{
	uint64_t hi, lo;

	sub_mask6(addr, 128, &hi, &lo);
	if (vlan != 0 && l->lens6[1].n != 0) {
		uint32_t s = sub_find6(l, &l->lens6[1], vlan, hi, lo);

		if (s != SUB_NONE)
			return s;
	}
	return sub_find6(l, &l->lens6[0], 0, hi, lo);
}
