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

/* cur's node for each of file's, or -ENOTSUP with err when the trees differ. */
static int
map_nodes(const struct sub_set *cur, const struct sub_set *file, uint32_t *map, char *err,
	  size_t errlen)
{
	map[SUB_ROOT] = SUB_ROOT;
	if (file->nnodes != cur->nnodes) {
		sub_errf(err, errlen,
			 "the node tree changed (%u nodes, %u running): node changes need a "
			 "restart",
			 file->nnodes - 1, cur->nnodes - 1);
		return -ENOTSUP;
	}
	for (uint32_t n = 1; n < file->nnodes; n++) {
		uint32_t c = sub_node_find(cur, file->nodes[n].name);

		if (c == SUB_NONE || cur->nodes[c].parent != map[file->nodes[n].parent]) {
			char path[256];

			sub_node_path(file, n, path, sizeof(path));
			sub_errf(err, errlen,
				 "node %s is %s: node changes need a restart (capacities alone "
				 "apply live)",
				 path, c == SUB_NONE ? "new" : "under another parent");
			return -ENOTSUP;
		}
		map[n] = c;
	}
	return 0;
}

int
sub_set_diff(const struct sub_set *cur, const struct sub_set *file,
	     bool (*slot_free)(const void *ctx, uint32_t slot), const void *ctx,
	     struct sub_set *out, struct sub_diff *d, char *err, size_t errlen)
{
	uint32_t *map = NULL, *slot_of = NULL, *cfirst = NULL, *corder = NULL, *ffirst = NULL,
		 *forder = NULL, next_free = 0, i;
	bool *kept = NULL;
	struct sub_names ids = { 0 };
	int rc = -ENOMEM;

	memset(d, 0, sizeof(*d));
	memset(out, 0, sizeof(*out));
	map = calloc(file->nnodes, sizeof(*map));
	slot_of = calloc((size_t)file->nsubs + 1, sizeof(*slot_of));
	kept = calloc((size_t)cur->nsubs + 1, sizeof(*kept));
	d->reset = calloc((size_t)file->nsubs + 1, sizeof(*d->reset));
	cfirst = prefixes_by_sub(cur, &corder);
	ffirst = prefixes_by_sub(file, &forder);
	if (map == NULL || slot_of == NULL || kept == NULL || d->reset == NULL || cfirst == NULL ||
	    ffirst == NULL || sub_names_init(&ids, cur->nsubs) != 0)
		goto nomem;
	rc = map_nodes(cur, file, map, err, errlen);
	if (rc != 0)
		goto out;
	for (i = 0; i < cur->nsubs; i++)
		if (sub_slot_used(&cur->subs[i]) && sub_names_put(&ids, cur->subs[i].id, i) != 0)
			goto nomem;
	if (sub_set_copy(out, cur) != 0)
		goto nomem;
	/* Where each subscriber of the file goes. */
	for (uint32_t j = 0; j < file->nsubs; j++) {
		uint32_t s = sub_names_get(&ids, file->subs[j].id);

		if (s == SUB_NONE) {
			while (next_free < cur->nsubs &&
			       (sub_slot_used(&cur->subs[next_free]) || !slot_free(ctx, next_free)))
				next_free++;
			if (next_free == cur->nsubs) {
				sub_errf(err, errlen,
					 "%u subscribers are new and only %u spare slots are free "
					 "(a removed subscriber's slot is free once it has drained): "
					 "restart shaperd to add more",
					 file->nsubs - d->unchanged - d->changed, d->nreset);
				rc = -ENOSPC;
				goto out;
			}
			s = next_free++;
			d->reset[d->nreset++] = s;
			d->added++;
			d->addresses = true;
		} else {
			const struct sub_subscriber *a = &cur->subs[s], *b = &file->subs[j];
			bool same = a->node == map[b->node] && strcmp(a->name, b->name) == 0 &&
				    memcmp(a->plan, b->plan, sizeof(a->plan)) == 0 &&
				    memcmp(a->sqm, b->sqm, sizeof(a->sqm)) == 0;
			bool addrs = cfirst[s + 1] - cfirst[s] == ffirst[j + 1] - ffirst[j];

			for (uint32_t k = 0; addrs && k < cfirst[s + 1] - cfirst[s]; k++)
				addrs = same_prefix(&cur->prefixes[corder[cfirst[s] + k]],
						    &file->prefixes[forder[ffirst[j] + k]]);
			if (!addrs)
				d->addresses = true;
			if (same && addrs)
				d->unchanged++;
			else
				d->changed++;
		}
		slot_of[j] = s;
		kept[s] = true;
		out->subs[s] = file->subs[j];
		out->subs[s].node = map[file->subs[j].node];
		out->subs[s].nprefixes = ffirst[j + 1] - ffirst[j];
	}
	/* The running ones the file no longer has: no address, drain at their plan. */
	for (i = 0; i < cur->nsubs; i++)
		if (sub_slot_used(&cur->subs[i]) && !kept[i]) {
			struct sub_subscriber *s = &out->subs[i];

			s->id[0] = s->name[0] = '\0';
			s->plan[SUB_DOWN].min = s->plan[SUB_UP].min = 0;
			s->nprefixes = 0;
			d->removed++;
			d->addresses = true;
		}
	/* The file's prefixes, each on its subscriber's slot. */
	free(out->prefixes);
	out->prefixes = malloc(((size_t)file->nprefixes + 1) * sizeof(*out->prefixes));
	if (out->prefixes == NULL)
		goto nomem;
	out->nprefixes = out->prefixes_cap = file->nprefixes;
	for (i = 0; i < file->nprefixes; i++) {
		out->prefixes[i] = file->prefixes[i];
		out->prefixes[i].sub = slot_of[file->prefixes[i].sub];
	}
	/* Capacities (the link's too) as the file has them; the tree itself is cur's. */
	for (uint32_t n = 0; n < file->nnodes; n++)
		if (memcmp(out->nodes[map[n]].capacity, file->nodes[n].capacity,
			   sizeof(file->nodes[n].capacity)) != 0) {
			memcpy(out->nodes[map[n]].capacity, file->nodes[n].capacity,
			       sizeof(file->nodes[n].capacity));
			d->nodes_changed++;
		}
	out->scale_mins = file->scale_mins;
	memcpy(out->subs_file, file->subs_file, sizeof(out->subs_file));
	memcpy(out->nodes_file, file->nodes_file, sizeof(out->nodes_file));
	out->subs_csv = file->subs_csv;
	rc = sub_set_validate(out, err, errlen);
	goto out;
nomem:
	rc = -ENOMEM;
	sub_errf(err, errlen, "out of memory");
out:
	if (rc != 0) {
		sub_set_free(out);
		free(d->reset);
		d->reset = NULL;
	}
	sub_names_free(&ids);
	free(map);
	free(slot_of);
	free(kept);
	free(cfirst);
	free(corder);
	free(ffirst);
	free(forder);
	return rc;
}
