/*
 * LibreQoS's network.json: an object whose keys name nodes, each with
 * downloadBandwidthMbps, uploadBandwidthMbps, an optional type, an optional
 * id (what ShapedDevices.csv's Parent Node ID names), an optional
 * "virtual" (2.x: a grouping that caps nothing) and an optional children
 * object of the same shape. Keys other than these are left alone
 * (integrations add their own, and LibreQoS ignores them too).
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "subscriber/sub_impl.h"

static int
sub_net_mbps(const json_t *node, const char *key, const char *file, const char *path, uint64_t *out,
	     char *err, size_t errlen)
{
	const json_t *v = json_object_get(node, key);
	double mbps;

	if (v == NULL) {
		sub_errf(err, errlen, "%s: %s: missing \"%s\"", file, path, key);
		return -EINVAL;
	}
	if (!json_is_number(v)) {
		sub_errf(err, errlen, "%s: %s.%s: must be a number of Mbit/s", file, path, key);
		return -EINVAL;
	}
	mbps = json_number_value(v);
	if (!(mbps > 0) || mbps > 1e7) {
		sub_errf(err, errlen, "%s: %s.%s: %g Mbit/s, must be above 0 and at most 10 Tbit/s",
			 file, path, key, mbps);
		return -EINVAL;
	}
	*out = (uint64_t)llround(mbps * 1e6);
	return 0;
}

/* A name's value in the table while loading: a node, or a virtual one. */
#define SUB_NET_VIRTUAL 0x80000000u

/* "virtual": true/false, or as integrations write it, 0/1 or "true"/"false". */
static int
sub_net_virtual(const json_t *node, const char *file, const char *path, bool *out, char *err,
		size_t errlen)
{
	const json_t *v = json_object_get(node, "virtual");

	*out = false;
	if (v == NULL || json_is_null(v) || json_is_false(v))
		return 0;
	if (json_is_true(v) || (json_is_integer(v) && json_integer_value(v) == 1)) {
		*out = true;
		return 0;
	}
	if (json_is_integer(v) && json_integer_value(v) == 0)
		return 0;
	if (json_is_string(v) && (strcasecmp(json_string_value(v), "true") == 0 ||
				  strcasecmp(json_string_value(v), "false") == 0)) {
		*out = strcasecmp(json_string_value(v), "true") == 0;
		return 0;
	}
	sub_errf(err, errlen, "%s: %s.virtual: must be true or false", file, path);
	return -EINVAL;
}

/* A node's "id", a string or an integer, into out[SUB_ID_LEN] ("" if none). */
static int
sub_net_id(const json_t *node, const char *file, const char *path, char *out, char *err,
	   size_t errlen)
{
	const json_t *v = json_object_get(node, "id");
	char num[32];
	const char *id = num;

	out[0] = '\0';
	if (v == NULL || json_is_null(v))
		return 0;
	if (json_is_string(v))
		id = json_string_value(v);
	else if (json_is_integer(v))
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else {
		sub_errf(err, errlen, "%s: %s.id: must be a string or an integer", file, path);
		return -EINVAL;
	}
	if (id[0] == '\0' || strlen(id) >= SUB_ID_LEN) {
		sub_errf(err, errlen, "%s: %s.id: must have 1..%u characters", file, path,
			 SUB_ID_LEN - 1);
		return -EINVAL;
	}
	snprintf(out, SUB_ID_LEN, "%s", id);
	return 0;
}

static int
sub_net_add_virtual(struct sub_virtuals *virt, uint32_t *idx)
{
	if (virt->n == virt->cap) {
		uint32_t cap = virt->cap != 0 ? virt->cap * 2 : 16;
		struct sub_virtual *v = realloc(virt->v, (size_t)cap * sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		virt->v = v;
		virt->cap = cap;
	}
	*idx = virt->n++;
	memset(&virt->v[*idx], 0, sizeof(virt->v[*idx]));
	return 0;
}

/* A node's name: an object's, 1..SUB_ID_LEN-1 characters, unique among nodes and virtual ones. */
static int
sub_net_name(const struct sub_set *set, const json_t *node, const char *key, const char *file,
	     const char *sub, const struct sub_names *names, const struct sub_virtuals *virt,
	     char *err, size_t errlen)
{
	uint32_t other;

	if (!json_is_object(node)) {
		sub_errf(err, errlen, "%s: %s: a node must be an object", file, sub);
		return -EINVAL;
	}
	if (key[0] == '\0' || strlen(key) >= SUB_ID_LEN) {
		sub_errf(err, errlen, "%s: %s: a node name must have 1..%u characters", file, sub,
			 SUB_ID_LEN - 1);
		return -EINVAL;
	}
	other = sub_names_get(names, key);
	if (other != SUB_NONE) {
		char op[256];

		if (other & SUB_NET_VIRTUAL)
			snprintf(op, sizeof(op), "virtual node %s",
				 virt->v[other & ~SUB_NET_VIRTUAL].name);
		else
			sub_node_path(set, other, op, sizeof(op));
		sub_errf(err, errlen,
			 "%s: %s: duplicate node name \"%s\" (also at %s): circuits name "
			 "their parent node, so names must be unique",
			 file, sub, key, op);
		return -EINVAL;
	}
	return 0;
}

/* A node's capacities, type and id. */
static int
sub_net_fields(struct sub_set *set, uint32_t idx, const json_t *node, const char *file,
	       const char *sub, char *err, size_t errlen)
{
	const json_t *v;
	int rc;

	rc = sub_net_mbps(node, "downloadBandwidthMbps", file, sub,
			  &set->nodes[idx].capacity[SUB_DOWN], err, errlen);
	if (rc == 0)
		rc = sub_net_mbps(node, "uploadBandwidthMbps", file, sub,
				  &set->nodes[idx].capacity[SUB_UP], err, errlen);
	if (rc != 0)
		return rc;
	v = json_object_get(node, "type");
	if (v != NULL && !json_is_null(v)) {
		if (!json_is_string(v)) {
			sub_errf(err, errlen, "%s: %s.type: must be a string", file, sub);
			return -EINVAL;
		}
		snprintf(set->nodes[idx].type, sizeof(set->nodes[idx].type), "%s",
			 json_string_value(v));
	}
	/* An "id" (LibreQoS 2.x, from its integrations): what Parent Node ID names. */
	return sub_net_id(node, file, sub, set->nodes[idx].id, err, errlen);
}

/*
 * One level of the tree under parent, the nearest non-virtual node above
 * it; depth is that of the level's nodes (virtual ones count, as LibreQoS
 * nests them).
 */
static int
sub_net_level(struct sub_set *set, const json_t *obj, uint32_t parent, uint32_t depth,
	      const char *file, const char *path, struct sub_names *names,
	      struct sub_virtuals *virt, char *err, size_t errlen)
{
	const char *key;
	const json_t *node;
	int rc;

	if (depth > SUB_MAX_DEPTH) {
		sub_errf(err, errlen, "%s: %s: nodes nested deeper than %u", file, path,
			 SUB_MAX_DEPTH);
		return -EINVAL;
	}
	json_object_foreach ((json_t *)obj, key, node) {
		char sub[512];
		const json_t *v;
		uint32_t idx;
		struct sub_node *n;
		bool is_virtual;

		snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] ? ".children." : "", key);
		rc = sub_net_name(set, node, key, file, sub, names, virt, err, errlen);
		if (rc != 0)
			return rc;
		rc = sub_net_virtual(node, file, sub, &is_virtual, err, errlen);
		if (rc != 0)
			return rc;
		if (is_virtual) {
			/* No node: its name and id stand for parent, its children hang there. */
			struct sub_virtual *vn;

			if (sub_net_add_virtual(virt, &idx) != 0 ||
			    sub_names_put(names, key, idx | SUB_NET_VIRTUAL) != 0) {
				sub_errf(err, errlen, "out of memory");
				return -ENOMEM;
			}
			vn = &virt->v[idx];
			snprintf(vn->name, sizeof(vn->name), "%s", key);
			vn->node = parent;
			rc = sub_net_id(node, file, sub, vn->id, err, errlen);
			if (rc != 0)
				return rc;
			v = json_object_get(node, "children");
			if (v != NULL && !json_is_object(v)) {
				sub_errf(err, errlen, "%s: %s.children: must be an object of nodes",
					 file, sub);
				return -EINVAL;
			}
			if (v != NULL) {
				rc = sub_net_level(set, v, parent, depth + 1, file, sub, names,
						   virt, err, errlen);
				if (rc != 0)
					return rc;
			}
			continue;
		}
		rc = sub_set_add_node(set, &idx);
		if (rc != 0) {
			sub_errf(err, errlen, "%s: %s: %s", file, sub,
				 rc == -E2BIG ? "too many nodes" : "out of memory");
			return rc;
		}
		n = &set->nodes[idx];
		snprintf(n->name, sizeof(n->name), "%s", key);
		n->parent = parent;
		n->depth = set->nodes[parent].depth + 1;
		if (sub_names_put(names, key, idx) != 0) {
			sub_errf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		rc = sub_net_fields(set, idx, node, file, sub, err, errlen);
		if (rc != 0)
			return rc;
		v = json_object_get(node, "children");
		if (v != NULL) {
			if (!json_is_object(v)) {
				sub_errf(err, errlen, "%s: %s.children: must be an object of nodes",
					 file, sub);
				return -EINVAL;
			}
			/* set->nodes may move as it grows: pass indices, never pointers. */
			rc = sub_net_level(set, v, idx, depth + 1, file, sub, names, virt, err,
					   errlen);
			if (rc != 0)
				return rc;
		}
	}
	return 0;
}

int
sub_load_network(struct sub_set *set, const char *path, struct sub_names *names,
		 struct sub_virtuals *virt, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root;
	int rc;

	snprintf(set->nodes_file, sizeof(set->nodes_file), "%s", path);
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		sub_errf(err, errlen, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
		return -EINVAL;
	}
	if (!json_is_object(root)) {
		sub_errf(err, errlen, "%s: the top level must be an object of nodes ({} for none)",
			 path);
		json_decref(root);
		return -EINVAL;
	}
	rc = sub_net_level(set, root, SUB_ROOT, 1, path, "", names, virt, err, errlen);
	/*
	 * The table's keys were the document's own strings: index the names
	 * kept in set->nodes instead, which stay put now that no node is added.
	 */
	if (rc == 0) {
		uint32_t i;

		sub_names_free(names);
		rc = sub_names_init(names, set->nnodes);
		for (i = 1; rc == 0 && i < set->nnodes; i++)
			rc = sub_names_put(names, set->nodes[i].name, i);
		for (i = 0; rc == 0 && i < virt->n; i++)
			rc = sub_names_put(names, virt->v[i].name, virt->v[i].node);
		if (rc != 0)
			sub_errf(err, errlen, "out of memory");
	}
	json_decref(root);
	return rc;
}
