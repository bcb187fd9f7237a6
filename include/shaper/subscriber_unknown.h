/*
 * Addresses no subscriber owns, each shaped at a plan of its own
 * (subscribers.unknown as a plan): a fixed table from such an address to
 * one of a fixed number of slots, filled by the worker at an address's
 * first packet and emptied once its CAKEs have drained and gone back.
 *
 * The key is what a household is: an IPv4 address, or an IPv6 /64 (a
 * device's privacy addresses come and go inside its /64), on its VLAN
 * (the same private address behind two VLANs is two households).
 *
 * Open addressing with linear probing and deletion by backward shift (no
 * tombstones, so a long run of arrivals and departures never slows a
 * lookup). One writer, the worker; the control thread may read a slot's
 * key (sub_unknown_key_of) while it runs. Plain C, no allocation after
 * create.
 */
#ifndef SHAPER_SUBSCRIBER_UNKNOWN_H
#define SHAPER_SUBSCRIBER_UNKNOWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shaper/classify.h"
#include "shaper/pkt.h"
#include "shaper/subscriber.h"

/*
 * A key is a struct sub_prefix (shaper/subscriber.h): a /32 or a /64, the
 * frame's innermost VLAN id (0 untagged), sub 0; sub_prefix_format names it.
 */
struct sub_unknown_table;

/*
 * A table of nslots slots (> 0), hashed with key (the classifier's: the
 * addresses come from the wire, and a remote host that can pick them must
 * not be able to build one long probe run). NULL if memory runs out.
 */
struct sub_unknown_table *sub_unknown_create(uint32_t nslots, const struct classify_key *key);
/* The bytes sub_unknown_create takes for nslots slots (0 for none). */
size_t sub_unknown_bytes_for(uint32_t nslots);
void sub_unknown_free(struct sub_unknown_table *t);
uint32_t sub_unknown_slots(const struct sub_unknown_table *t);
/* Slots in use now (any thread: a relaxed read). */
uint32_t sub_unknown_used(const struct sub_unknown_table *t);

/*
 * The key of a classified packet going dir: its LAN-side address (the
 * destination going down, the source going up). false if it has no IP
 * header in reach.
 */
bool sub_unknown_key_from(const struct sh_pkt *pkt, enum sub_dir dir, struct sub_prefix *k);

/*
 * A 32-bit keyed hash of k, the same on every worker given the same key
 * (steering by it keeps an address on one); _of: with t's key.
 */
uint32_t sub_unknown_hash(const struct sub_prefix *k, const struct classify_key *key);
uint32_t sub_unknown_hash_of(const struct sub_unknown_table *t, const struct sub_prefix *k);

/* The slot holding k, or SUB_NONE. */
uint32_t sub_unknown_find(const struct sub_unknown_table *t, const struct sub_prefix *k);

/* A free slot for k (not already in), or SUB_NONE when every slot is taken. */
uint32_t sub_unknown_take(struct sub_unknown_table *t, const struct sub_prefix *k);

/* Slot back to the free ones; its key no longer finds it. */
void sub_unknown_release(struct sub_unknown_table *t, uint32_t slot);

/*
 * Slot's key as another thread may read it: true and *k if the slot is in
 * use and its key was not being changed meanwhile, else false.
 */
bool sub_unknown_key_of(const struct sub_unknown_table *t, uint32_t slot, struct sub_prefix *k);

#endif
