/*
 * A new subscriber file as a change of the running set
 * (shaper/subscriber_diff.h). Subscribers are matched by circuit id through
 * a hash of the ids (sub_names), so a file of 10,000 costs a few ms.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shaper/subscriber_diff.h"
#include "sub_impl.h"

/* first[s]..first[s+1]: the prefixes of subscriber s, in set order (a counting sort). */
static uint32_t *
prefixes_by_sub(const struct sub_set *set, uint32_t **order)
{
	uint32_t *first = calloc((size_t)set->nsubs + 2, sizeof(*first)), *pos;

	*order = malloc(((size_t)set->nprefixes + 1) * sizeof(**order));
	pos = calloc((size_t)set->nsubs + 1, sizeof(*pos));
	if (first == NULL || *order == NULL || pos == NULL) {
		free(first);
		free(*order);
		free(pos);
		return NULL;
	}
	for (uint32_t i = 0; i < set->nprefixes; i++)
		first[set->prefixes[i].sub + 1]++;
	for (uint32_t s = 0; s < set->nsubs; s++)
		first[s + 1] += first[s];
	memcpy(pos, first, (size_t)set->nsubs * sizeof(*pos));
	for (uint32_t i = 0; i < set->nprefixes; i++)
		(*order)[pos[set->prefixes[i].sub]++] = i;
	free(pos);
	return first;
}

static bool
same_prefix(const struct sub_prefix *a, const struct sub_prefix *b)
{
	return a->family == b->family && a->len == b->len && a->vlan == b->vlan &&
	       memcmp(a->addr, b->addr, 16) == 0;
}

/*
 * The file's tree against cur's, matched by name: cmap[c] is the file's
 * node for cur's node c (SUB_NONE: removed), up[c] the same, but a removed
 * node's nearest ancestor the file still has (where what drains there
 * goes). Counts what was added, removed, moved and given new capacities.
 */
static int
map_nodes(const struct sub_set *cur, const struct sub_set *file, uint32_t *cmap, uint32_t *up,
	  struct sub_diff *d)
{
	uint32_t *fmap = calloc(file->nnodes, sizeof(*fmap));

	if (fmap == NULL || sub_node_map(cur, file, cmap) != 0 ||
	    sub_node_map(file, cur, fmap) != 0) {
		free(fmap);
		return -ENOMEM;
	}
	for (uint32_t c = 0; c < cur->nnodes; c++) {
		uint32_t f = cmap[c], a = c;

		while (cmap[a] == SUB_NONE)
			a = cur->nodes[a].parent; /* the root always maps */
		up[c] = cmap[a];
		if (f == SUB_NONE) {
			d->nodes_removed++;
			continue;
		}
		if (c != SUB_ROOT && cmap[cur->nodes[c].parent] != file->nodes[f].parent)
			d->nodes_moved++;
		if (memcmp(cur->nodes[c].capacity, file->nodes[f].capacity,
			   sizeof(file->nodes[f].capacity)) != 0)
			d->nodes_changed++;
	}
	for (uint32_t f = 1; f < file->nnodes; f++)
		d->nodes_added += fmap[f] == SUB_NONE;
	free(fmap);
	return 0;
}

/* The scratch of one diff: the node maps, the prefixes by subscriber, the slots kept. */
struct diff_work {
	uint32_t *cmap, *up, *slot_of, *cfirst, *corder, *ffirst, *forder;
	bool *kept;
	struct sub_names ids;
};

static int
diff_work_init(struct diff_work *w, const struct sub_set *cur, const struct sub_set *file,
	       struct sub_diff *d)
{
	w->cmap = calloc(cur->nnodes, sizeof(*w->cmap));
	w->up = calloc(cur->nnodes, sizeof(*w->up));
	w->slot_of = calloc((size_t)file->nsubs + 1, sizeof(*w->slot_of));
	w->kept = calloc((size_t)cur->nsubs + 1, sizeof(*w->kept));
	d->reset = calloc((size_t)file->nsubs + 1, sizeof(*d->reset));
	w->cfirst = prefixes_by_sub(cur, &w->corder);
	w->ffirst = prefixes_by_sub(file, &w->forder);
	if (w->cmap == NULL || w->up == NULL || w->slot_of == NULL || w->kept == NULL ||
	    d->reset == NULL || w->cfirst == NULL || w->ffirst == NULL ||
	    sub_names_init(&w->ids, cur->nsubs) != 0)
		return -ENOMEM;
	if (map_nodes(cur, file, w->cmap, w->up, d) != 0)
		return -ENOMEM;
	for (uint32_t i = 0; i < cur->nsubs; i++)
		if (sub_slot_used(&cur->subs[i]) && sub_names_put(&w->ids, cur->subs[i].id, i) != 0)
			return -ENOMEM;
	return 0;
}

static void
diff_work_free(struct diff_work *w)
{
	sub_names_free(&w->ids);
	free(w->cmap);
	free(w->up);
	free(w->slot_of);
	free(w->kept);
	free(w->cfirst);
	free(w->corder);
	free(w->ffirst);
	free(w->forder);
}

/*
 * Too few free slots for the new ones: more at the end (the scheduler grows
 * with them). -E2BIG (err set) when no more can be made.
 */
static int
grow_for_new(struct diff_work *w, const struct sub_set *cur, const struct sub_set *file,
	     bool (*slot_free)(const void *ctx, uint32_t slot), const void *ctx,
	     struct sub_set *out, struct sub_diff *d, char *err, size_t errlen)
{
	uint32_t nnew = 0, nfree = 0;
	bool *k;
	int rc;

	for (uint32_t j = 0; j < file->nsubs; j++)
		nnew += sub_names_get(&w->ids, file->subs[j].id) == SUB_NONE;
	for (uint32_t i = 0; i < cur->nsubs && nfree < nnew; i++)
		nfree += !sub_slot_used(&cur->subs[i]) && slot_free(ctx, i);
	if (nfree >= nnew)
		return 0;
	rc = sub_set_grow_slots(out, nnew - nfree, &d->slots_added);
	if (rc == -E2BIG) {
		sub_errf(err, errlen,
			 "%u subscribers are new, %u slots are free and no more "
			 "than %u can be made",
			 nnew, nfree, SUB_MAX_SUBS);
		return rc;
	}
	k = realloc(w->kept, ((size_t)out->nsubs + 1) * sizeof(*w->kept));
	if (rc != 0 || k == NULL)
		return -ENOMEM;
	w->kept = k;
	memset(w->kept + cur->nsubs, 0, (size_t)(out->nsubs - cur->nsubs) * sizeof(*w->kept));
	return 0;
}

/* Whether running subscriber s and the file's j have the same prefixes, in order. */
static bool
same_prefixes(const struct diff_work *w, const struct sub_set *cur, uint32_t s,
	      const struct sub_set *file, uint32_t j)
{
	bool addrs = w->cfirst[s + 1] - w->cfirst[s] == w->ffirst[j + 1] - w->ffirst[j];

	for (uint32_t k = 0; addrs && k < w->cfirst[s + 1] - w->cfirst[s]; k++)
		addrs = same_prefix(&cur->prefixes[w->corder[w->cfirst[s] + k]],
				    &file->prefixes[w->forder[w->ffirst[j] + k]]);
	return addrs;
}

/* Where each subscriber of the file goes. */
static void
place_file_subs(struct diff_work *w, const struct sub_set *cur, const struct sub_set *file,
		bool (*slot_free)(const void *ctx, uint32_t slot), const void *ctx,
		struct sub_set *out, struct sub_diff *d)
{
	uint32_t next_free = 0;

	for (uint32_t j = 0; j < file->nsubs; j++) {
		uint32_t s = sub_names_get(&w->ids, file->subs[j].id);

		if (s == SUB_NONE) {
			/* A slot of cur's that is free, else one just added (free by birth). */
			while (next_free < cur->nsubs &&
			       (sub_slot_used(&cur->subs[next_free]) || !slot_free(ctx, next_free)))
				next_free++;
			s = next_free++;
			d->reset[d->nreset++] = s;
			d->added++;
			d->addresses = true;
		} else {
			const struct sub_subscriber *a = &cur->subs[s], *b = &file->subs[j];
			bool same = w->cmap[a->node] == b->node && strcmp(a->name, b->name) == 0 &&
				    memcmp(a->plan, b->plan, sizeof(a->plan)) == 0 &&
				    memcmp(a->sqm, b->sqm, sizeof(a->sqm)) == 0;
			bool addrs = same_prefixes(w, cur, s, file, j);

			if (!addrs)
				d->addresses = true;
			if (same && addrs)
				d->unchanged++;
			else
				d->changed++;
		}
		w->slot_of[j] = s;
		w->kept[s] = true;
		out->subs[s] = file->subs[j]; /* its node: the file's tree is out's */
		out->subs[s].nprefixes = w->ffirst[j + 1] - w->ffirst[j];
	}
}

/* The running ones the file no longer has: no address, drain at their plan. */
static void
drain_removed(const struct diff_work *w, const struct sub_set *cur, struct sub_set *out,
	      struct sub_diff *d)
{
	for (uint32_t i = 0; i < cur->nsubs; i++)
		if (sub_slot_used(&cur->subs[i]) && !w->kept[i]) {
			struct sub_subscriber *s = &out->subs[i];

			s->id[0] = s->name[0] = '\0';
			s->plan[SUB_DOWN].min = s->plan[SUB_UP].min = 0;
			s->nprefixes = 0;
			d->removed++;
			d->addresses = true;
		}
}

/* The file's prefixes, each on its subscriber's slot. */
static int
take_prefixes(const struct diff_work *w, const struct sub_set *file, struct sub_set *out)
{
	free(out->prefixes);
	out->prefixes = malloc(((size_t)file->nprefixes + 1) * sizeof(*out->prefixes));
	if (out->prefixes == NULL)
		return -ENOMEM;
	out->nprefixes = out->prefixes_cap = file->nprefixes;
	for (uint32_t i = 0; i < file->nprefixes; i++) {
		out->prefixes[i] = file->prefixes[i];
		out->prefixes[i].sub = w->slot_of[file->prefixes[i].sub];
	}
	return 0;
}

/*
 * The file's tree (capacities, the link's too, and nodes added, moved or
 * removed); what drains under a removed node goes up to the nearest
 * node that stays.
 */
static int
take_tree(const struct diff_work *w, const struct sub_set *cur, const struct sub_set *file,
	  struct sub_set *out)
{
	for (uint32_t i = 0; i < cur->nsubs; i++)
		if (!w->kept[i])
			out->subs[i].node = w->up[cur->subs[i].node];
	free(out->nodes);
	out->nodes = malloc((size_t)file->nnodes * sizeof(*out->nodes));
	if (out->nodes == NULL)
		return -ENOMEM;
	memcpy(out->nodes, file->nodes, (size_t)file->nnodes * sizeof(*out->nodes));
	out->nnodes = out->nodes_cap = file->nnodes;
	out->scale_mins = file->scale_mins;
	return 0;
}

/* The file's treatment of unknown addresses (the scheduler refuses what needs a restart). */
static void
take_unknown_and_files(const struct sub_set *cur, const struct sub_set *file, struct sub_set *out,
		       struct sub_diff *d)
{
	d->unknown_changed = cur->unknown != file->unknown ||
			     (file->unknown == SUB_UNKNOWN_PLAN &&
			      memcmp(cur->unknown_plan, file->unknown_plan,
				     sizeof(cur->unknown_plan)) != 0);
	out->unknown = file->unknown;
	memcpy(out->unknown_plan, file->unknown_plan, sizeof(out->unknown_plan));
	memcpy(out->subs_file, file->subs_file, sizeof(out->subs_file));
	memcpy(out->nodes_file, file->nodes_file, sizeof(out->nodes_file));
	out->subs_csv = file->subs_csv;
}

int
sub_set_diff(const struct sub_set *cur, const struct sub_set *file,
	     bool (*slot_free)(const void *ctx, uint32_t slot), const void *ctx,
	     struct sub_set *out, struct sub_diff *d, char *err, size_t errlen)
{
	struct diff_work w = { 0 };
	int rc;

	memset(d, 0, sizeof(*d));
	memset(out, 0, sizeof(*out));
	rc = diff_work_init(&w, cur, file, d);
	if (rc == 0)
		rc = sub_set_copy(out, cur);
	if (rc == 0)
		rc = grow_for_new(&w, cur, file, slot_free, ctx, out, d, err, errlen);
	if (rc == 0) {
		place_file_subs(&w, cur, file, slot_free, ctx, out, d);
		drain_removed(&w, cur, out, d);
		rc = take_prefixes(&w, file, out);
	}
	if (rc == 0)
		rc = take_tree(&w, cur, file, out);
	if (rc == 0) {
		take_unknown_and_files(cur, file, out, d);
		rc = sub_set_validate(out, err, errlen);
	} else if (rc != -E2BIG) {
		rc = -ENOMEM;
		sub_errf(err, errlen, "out of memory");
	}
	if (rc != 0) {
		sub_set_free(out);
		free(d->reset);
		d->reset = NULL;
	}
	diff_work_free(&w);
	return rc;
}
