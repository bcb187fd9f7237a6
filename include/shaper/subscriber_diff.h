/*
 * A new subscriber file as a change of the running set: which subscribers
 * were added, changed or removed, and the set the running scheduler takes
 * (shaper/subscriber_sched.h: its slots never move). Used by a reload of
 * the configuration with subscribers on. Control plane only.
 */
#ifndef SHAPER_SUBSCRIBER_DIFF_H
#define SHAPER_SUBSCRIBER_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shaper/subscriber.h"

struct sub_diff {
	uint32_t added, changed, removed, unchanged;
	uint32_t nodes_changed; /* nodes (the link included) whose capacity changed */
	uint32_t nodes_added, nodes_removed;
	uint32_t nodes_moved; /* under another parent (a subtree counts once) */
	bool addresses;       /* some subscriber's addresses changed: new lookup tables */
	uint32_t *reset;      /* slots that take an added subscriber (malloc'd) */
	uint32_t nreset;
	uint32_t slots_added; /* spare slots added at the end (too few were free) */
	bool unknown_changed; /* the plan per unknown address (or "link") is another */
};

/*
 * Turn file (a freshly loaded, valid set) into out: cur's slots, each
 * subscriber of file in the slot of the same id in cur, or in a free slot
 * (unused in cur and slot_free(ctx, slot): its CAKEs back in the pool); a
 * subscriber of cur missing from file keeps its slot without addresses, to
 * drain at its plan. out's node tree is the file's (nodes are matched by
 * name: added, removed, moved, capacities changed; indices are the file's),
 * and a removed subscriber under a node the file no longer has drains under
 * the nearest ancestor it still has. When too few slots are free, out gets
 * more at the end (sub_set_grow_slots; the scheduler grows with it). out is
 * validated. 0 with out and d filled (free d->reset and out), -E2BIG past
 * SUB_MAX_SUBS, else -EINVAL/-ENOMEM; err says which, naming the file or the
 * node.
 */
int sub_set_diff(const struct sub_set *cur, const struct sub_set *file,
		 bool (*slot_free)(const void *ctx, uint32_t slot), const void *ctx,
		 struct sub_set *out, struct sub_diff *d, char *err, size_t errlen);

#endif
