/*
 * Changing the node tree of a set: a node added, moved under another
 * parent, given a new capacity, or removed once nothing hangs under it.
 * Node indices are not kept (the tree is put back in parent-first order),
 * so whatever holds them is rebuilt from the set, and nodes are matched
 * across sets by name (sub_node_map).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "subscriber/sub_impl.h"

int
sub_node_map(const struct sub_set *from, const struct sub_set *to, uint32_t *map)
{
	struct sub_names names;

	if (sub_names_init(&names, to->nnodes) != 0)
		return -ENOMEM;
	for (uint32_t i = 1; i < to->nnodes; i++)
		if (sub_names_put(&names, to->nodes[i].name, i) != 0) {
			sub_names_free(&names);
			return -ENOMEM;
		}
	map[SUB_ROOT] = SUB_ROOT;
	for (uint32_t i = 1; i < from->nnodes; i++)
		map[i] = sub_names_get(&names, from->nodes[i].name);
	sub_names_free(&names);
	return 0;
}

int
sub_set_order_nodes(struct sub_set *set, char *err, size_t errlen)
{
	uint32_t n = set->nnodes, *first, *kids, *order, *new_of, head = 0, tail = 1, i;
	struct sub_node *nodes;
	bool ordered = true;
	int rc = 0;

	for (i = 1; i < n && ordered; i++)
		ordered = set->nodes[i].parent < i;
	if (ordered) {
		for (i = 1; i < n; i++) {
			set->nodes[i].depth = set->nodes[set->nodes[i].parent].depth + 1;
			if (set->nodes[i].depth > SUB_MAX_DEPTH)
				goto too_deep;
		}
		return 0;
	}
	/* Children of each node, in index order (a counting sort by parent). */
	first = calloc((size_t)n + 1, sizeof(*first));
	kids = calloc(n, sizeof(*kids));
	order = calloc(n, sizeof(*order));
	new_of = calloc(n, sizeof(*new_of));
	nodes = calloc(n, sizeof(*nodes));
	if (first == NULL || kids == NULL || order == NULL || new_of == NULL || nodes == NULL) {
		sub_errf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	for (i = 1; i < n; i++)
		first[set->nodes[i].parent + 1]++;
	for (i = 0; i < n; i++)
		first[i + 1] += first[i];
	for (i = 1; i < n; i++)
		kids[first[set->nodes[i].parent]++] = i;
	for (i = n; i-- > 0;)
		first[i + 1] = first[i];
	first[0] = 0;
	/* Breadth first from the link: a parent always comes first. */
	order[0] = SUB_ROOT;
	while (head < tail) {
		uint32_t p = order[head++];

		for (uint32_t k = first[p]; k < first[p + 1]; k++)
			order[tail++] = kids[k];
	}
	if (tail != n) {
		/* The nodes not reached hang from each other in a ring. */
		sub_errf(err, errlen, "nodes would be their own ancestors");
		rc = -EINVAL;
		goto out;
	}
	for (i = 0; i < n; i++)
		new_of[order[i]] = i;
	for (i = 0; i < n; i++) {
		nodes[i] = set->nodes[order[i]];
		if (i != SUB_ROOT) {
			nodes[i].parent = new_of[nodes[i].parent];
			nodes[i].depth = nodes[nodes[i].parent].depth + 1;
		}
	}
	memcpy(set->nodes, nodes, (size_t)n * sizeof(*nodes));
	for (i = 0; i < set->nsubs; i++)
		set->subs[i].node = new_of[set->subs[i].node];
	for (i = 1; i < n; i++)
		if (set->nodes[i].depth > SUB_MAX_DEPTH) {
			rc = -1;
			break;
		}
out:
	free(first);
	free(kids);
	free(order);
	free(new_of);
	free(nodes);
	if (rc != -1)
		return rc;
too_deep:
	sub_errf(err, errlen, "nodes would nest deeper than %u levels", SUB_MAX_DEPTH);
	return -EINVAL;
}

/* Whether node a lies in the subtree of node b (b itself included). */
static bool
node_under(const struct sub_set *set, uint32_t a, uint32_t b)
{
	for (uint32_t i = a, hops = 0; i != SUB_NONE && hops <= SUB_MAX_DEPTH + 1;
	     i = set->nodes[i].parent, hops++)
		if (i == b)
			return true;
	return false;
}

int
sub_set_node_put(struct sub_set *set, const struct sub_node_change *c, bool *added, char *err,
		 size_t errlen)
{
	uint32_t node, parent = SUB_ROOT;

	if (c->name[0] == '\0' || strlen(c->name) >= SUB_ID_LEN || strcmp(c->name, "link") == 0) {
		sub_errf(err, errlen,
			 "name: a node name must have 1..%u characters and not be \"link\" (the "
			 "link itself)",
			 SUB_ID_LEN - 1);
		return -EINVAL;
	}
	if (c->parent != NULL && c->parent[0] != '\0' && strcmp(c->parent, "link") != 0) {
		parent = sub_node_find(set, c->parent);
		if (parent == SUB_NONE) {
			sub_errf(err, errlen, "parent: no node \"%.64s\"", c->parent);
			return -EINVAL;
		}
	}
	node = sub_node_find(set, c->name);
	*added = node == SUB_NONE;
	if (*added) {
		for (int d = 0; d < SUB_DIRS; d++)
			if (c->capacity[d] == 0) {
				sub_errf(err, errlen,
					 "%s: missing (a new node needs a capacity each way)",
					 d == SUB_DOWN ? "download" : "upload");
				return -EINVAL;
			}
		if (sub_set_add_node(set, &node) != 0) {
			sub_errf(err, errlen, "name: too many nodes or out of memory");
			return -ENOMEM;
		}
		memset(&set->nodes[node], 0, sizeof(set->nodes[node]));
		snprintf(set->nodes[node].name, SUB_ID_LEN, "%s", c->name);
		set->nodes[node].parent = parent;
	} else if (c->parent != NULL) {
		if (node_under(set, parent, node)) {
			char path[256];

			sub_node_path(set, parent, path, sizeof(path));
			sub_errf(err, errlen, "parent: %s is under node \"%s\" itself", path,
				 c->name);
			return -EINVAL;
		}
		set->nodes[node].parent = parent;
	}
	for (int d = 0; d < SUB_DIRS; d++)
		if (c->capacity[d] != 0)
			set->nodes[node].capacity[d] = c->capacity[d];
	if (c->type != NULL)
		snprintf(set->nodes[node].type, sizeof(set->nodes[node].type), "%s", c->type);
	{
		char why[160];
		int rc = sub_set_order_nodes(set, why, sizeof(why));

		if (rc != 0)
			sub_errf(err, errlen, "parent: %s", why);
		return rc;
	}
}

int
sub_set_node_del(struct sub_set *set, const char *name, char *err, size_t errlen)
{
	uint32_t node = name[0] != '\0' ? sub_node_find(set, name) : SUB_NONE, kids = 0, subs = 0,
		 parent, k = 0, i;
	uint32_t *new_of;

	if (node == SUB_NONE) {
		sub_errf(err, errlen, "name: no node \"%.64s\"", name);
		return -EINVAL;
	}
	for (i = 1; i < set->nnodes; i++)
		kids += set->nodes[i].parent == node;
	for (i = 0; i < set->nsubs; i++)
		subs += sub_slot_used(&set->subs[i]) && set->subs[i].node == node;
	if (kids != 0 || subs != 0) {
		sub_errf(err, errlen,
			 "name: node \"%s\" still has %u subscriber%s and %u node%s under it: "
			 "move or delete them first",
			 name, subs, subs == 1 ? "" : "s", kids, kids == 1 ? "" : "s");
		return -EBUSY;
	}
	new_of = calloc(set->nnodes, sizeof(*new_of));
	if (new_of == NULL) {
		sub_errf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	parent = set->nodes[node].parent;
	for (i = 0; i < set->nnodes; i++) {
		new_of[i] = i == node ? SUB_NONE : k;
		if (i != node)
			set->nodes[k++] = set->nodes[i];
	}
	new_of[node] = new_of[parent]; /* parents come first: already renumbered */
	set->nnodes = k;
	for (i = 1; i < set->nnodes; i++)
		set->nodes[i].parent = new_of[set->nodes[i].parent];
	/* Deleted subscribers still draining there go up to its parent. */
	for (i = 0; i < set->nsubs; i++)
		set->subs[i].node = new_of[set->subs[i].node];
	free(new_of);
	return 0;
}
