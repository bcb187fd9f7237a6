/*
 * The table of addresses no subscriber owns (shaper/subscriber_unknown.h).
 */
#include <stdlib.h>
#include <string.h>

#include "shaper/classify.h"
#include "shaper/subscriber_unknown.h"

#define KEY_WORDS (sizeof(struct sub_prefix) / sizeof(uint32_t))
_Static_assert(sizeof(struct sub_prefix) % sizeof(uint32_t) == 0, "a key is whole words");

struct sub_unknown_table {
	struct classify_key hkey; /* the hash's: addresses come from the wire */
	uint32_t nslots;
	uint32_t mask;   /* table size - 1; the table has at least twice the slots */
	uint32_t *table; /* a slot, or SUB_NONE */
	uint32_t *hash;  /* per slot: its key's hash (probes compare it first) */
	/*
	 * Per slot: its key as words, so the control thread's reads are
	 * atomic word by word, and a sequence count, odd while the worker
	 * writes the key. family 0: free.
	 */
	uint32_t (*key)[KEY_WORDS];
	uint32_t *seq;
	uint32_t *free; /* a stack of the free slots */
	uint32_t nfree;
	uint32_t used;
};

/* The open-addressed table's size: a power of two, at least twice the slots. */
static uint32_t
table_size(uint32_t nslots)
{
	uint32_t size = 2;

	while (size < 2 * nslots)
		size *= 2;
	return size;
}

size_t
sub_unknown_bytes_for(uint32_t nslots)
{
	struct sub_unknown_table *t;

	if (nslots == 0)
		return 0;
	return sizeof(*t) + table_size(nslots) * sizeof(*t->table) +
	       nslots * (sizeof(*t->hash) + sizeof(*t->key) + sizeof(*t->seq) + sizeof(*t->free));
}

struct sub_unknown_table *
sub_unknown_create(uint32_t nslots, const struct classify_key *key)
{
	struct sub_unknown_table *t;
	uint32_t size;

	if (nslots == 0 || nslots > SUB_MAX_SUBS)
		return NULL;
	size = table_size(nslots);
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->hkey = *key;
	t->nslots = nslots;
	t->mask = size - 1;
	t->table = malloc(size * sizeof(*t->table));
	t->hash = calloc(nslots, sizeof(*t->hash));
	t->key = calloc(nslots, sizeof(*t->key));
	t->seq = calloc(nslots, sizeof(*t->seq));
	t->free = malloc(nslots * sizeof(*t->free));
	if (t->table == NULL || t->hash == NULL || t->key == NULL || t->seq == NULL ||
	    t->free == NULL) {
		sub_unknown_free(t);
		return NULL;
	}
	for (uint32_t i = 0; i < size; i++)
		t->table[i] = SUB_NONE;
	/* Slot 0 on top: the lowest slots are used first. */
	for (uint32_t i = 0; i < nslots; i++)
		t->free[i] = nslots - 1 - i;
	t->nfree = nslots;
	return t;
}

void
sub_unknown_free(struct sub_unknown_table *t)
{
	if (t == NULL)
		return;
	free(t->table);
	free(t->hash);
	free(t->key);
	free(t->seq);
	free(t->free);
	free(t);
}

uint32_t
sub_unknown_slots(const struct sub_unknown_table *t)
{
	return t->nslots;
}

uint32_t
sub_unknown_used(const struct sub_unknown_table *t)
{
	return __atomic_load_n(&t->used, __ATOMIC_RELAXED);
}

bool
sub_unknown_key_from(const struct sh_pkt *pkt, enum sub_dir dir, struct sub_prefix *k)
{
	uint32_t l3 = pkt->l3_off, vkey;
	const uint8_t *ip;

	memset(k, 0, sizeof(*k));
	if (l3 == SH_OFF_NONE)
		return false;
	ip = pkt->data + l3;
	if ((pkt->flags & SH_PKT_IPV4) && l3 + 20u <= pkt->hdr_len) {
		memcpy(k->addr, ip + (dir == SUB_DOWN ? 16 : 12), 4);
		k->family = 4;
		k->len = 32;
	} else if ((pkt->flags & SH_PKT_IPV6) && l3 + 40u <= pkt->hdr_len) {
		memcpy(k->addr, ip + (dir == SUB_DOWN ? 24 : 8), 8);
		k->family = 6;
		k->len = 64;
	} else {
		return false;
	}
	/* The innermost tag, as the subscribers' own lookup takes it. */
	vkey = classify_vlan_key(pkt);
	k->vlan = (uint16_t)((vkey & 0xfffu) != 0 ? vkey & 0xfffu : vkey >> 12);
	return true;
}

static void
key_words(const struct sub_prefix *k, uint32_t w[KEY_WORDS])
{
	struct sub_prefix c = *k;

	c.sub = 0; /* not part of the key */
	memcpy(w, &c, sizeof(c));
}

uint32_t
sub_unknown_hash(const struct sub_prefix *k, const struct classify_key *key)
{
	uint64_t w[(KEY_WORDS + 1) / 2] = { 0 };
	uint32_t w32[KEY_WORDS];

	key_words(k, w32);
	memcpy(w, w32, sizeof(w32));
	return classify_hash_key(key, w, (KEY_WORDS + 1) / 2);
}

uint32_t
sub_unknown_hash_of(const struct sub_unknown_table *t, const struct sub_prefix *k)
{
	return sub_unknown_hash(k, &t->hkey);
}

static bool
key_is(const struct sub_unknown_table *t, uint32_t slot, const uint32_t w[KEY_WORDS])
{
	return memcmp(t->key[slot], w, sizeof(t->key[slot])) == 0;
}

/* Where slot s sits in the table (its key is in), or where k would go. */
static uint32_t
probe(const struct sub_unknown_table *t, const uint32_t w[KEY_WORDS], uint32_t h)
{
	uint32_t i = h & t->mask;

	while (t->table[i] != SUB_NONE && !(t->hash[t->table[i]] == h && key_is(t, t->table[i], w)))
		i = (i + 1) & t->mask;
	return i;
}

uint32_t
sub_unknown_find(const struct sub_unknown_table *t, const struct sub_prefix *k)
{
	uint32_t w[KEY_WORDS];

	key_words(k, w);
	return t->table[probe(t, w, sub_unknown_hash(k, &t->hkey))];
}

uint32_t
sub_unknown_take(struct sub_unknown_table *t, const struct sub_prefix *k)
{
	uint32_t w[KEY_WORDS], h = sub_unknown_hash(k, &t->hkey), i, s;

	key_words(k, w);
	i = probe(t, w, h);
	if (t->table[i] != SUB_NONE || t->nfree == 0)
		return SUB_NONE;
	s = t->free[--t->nfree];
	__atomic_store_n(&t->seq[s], t->seq[s] + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (size_t j = 0; j < KEY_WORDS; j++)
		__atomic_store_n(&t->key[s][j], w[j], __ATOMIC_RELAXED);
	__atomic_store_n(&t->seq[s], t->seq[s] + 1, __ATOMIC_RELEASE);
	t->hash[s] = h;
	t->table[i] = s;
	__atomic_store_n(&t->used, t->used + 1, __ATOMIC_RELAXED);
	return s;
}

void
sub_unknown_release(struct sub_unknown_table *t, uint32_t slot)
{
	uint32_t i, j, home;

	/* A free slot's key is all zero (a key in use has a family). */
	if (slot >= t->nslots ||
	    memcmp(t->key[slot], (uint32_t[KEY_WORDS]){ 0 }, sizeof(t->key[slot])) == 0)
		return;
	i = probe(t, t->key[slot], t->hash[slot]);
	/*
	 * Backward shift: each entry after the hole that may live there (its
	 * home is not inside the run between the hole and it) moves into it.
	 */
	for (j = (i + 1) & t->mask; t->table[j] != SUB_NONE; j = (j + 1) & t->mask) {
		home = t->hash[t->table[j]] & t->mask;
		if (((j - home) & t->mask) >= ((j - i) & t->mask)) {
			t->table[i] = t->table[j];
			i = j;
		}
	}
	t->table[i] = SUB_NONE;
	__atomic_store_n(&t->seq[slot], t->seq[slot] + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (size_t w = 0; w < KEY_WORDS; w++)
		__atomic_store_n(&t->key[slot][w], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->seq[slot], t->seq[slot] + 1, __ATOMIC_RELEASE);
	t->free[t->nfree++] = slot;
	__atomic_store_n(&t->used, t->used - 1, __ATOMIC_RELAXED);
}

bool
sub_unknown_key_of(const struct sub_unknown_table *t, uint32_t slot, struct sub_prefix *k)
{
	uint32_t w[KEY_WORDS], s0, s1;

	if (slot >= t->nslots)
		return false;
	s0 = __atomic_load_n(&t->seq[slot], __ATOMIC_ACQUIRE);
	if (s0 & 1u)
		return false;
	for (size_t j = 0; j < KEY_WORDS; j++)
		w[j] = __atomic_load_n(&t->key[slot][j], __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	s1 = __atomic_load_n(&t->seq[slot], __ATOMIC_RELAXED);
	if (s0 != s1)
		return false;
	memcpy(k, w, sizeof(*k));
	return k->family != 0;
}
