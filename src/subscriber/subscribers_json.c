/*
 * The JSON form of the subscriber set (docs/subscribers.md): the link, what
 * unknown addresses get, the node tree and the subscribers, with tc-style
 * rates ("100mbit"). Strict: an unknown key is an error naming its path.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "shaper/units.h"
#include "subscriber/sub_impl.h"

struct sub_jctx {
	struct sub_set *set;
	const char *file;
	char *err;
	size_t errlen;
};

static int sub_jerr(struct sub_jctx *c, const char *path, const char *fmt, ...)
		__attribute__((format(printf, 3, 4)));

static int
sub_jerr(struct sub_jctx *c, const char *path, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sub_errf(c->err, c->errlen, "%s: %s: %s", c->file, path, msg);
	return -EINVAL;
}

/* Every key of obj must be one of known (NULL-terminated). */
static int
sub_jkeys(struct sub_jctx *c, const json_t *obj, const char *path, const char *const *known)
{
	const char *key;
	const json_t *v;

	json_object_foreach ((json_t *)obj, key, v) {
		const char *const *k;

		for (k = known; *k != NULL; k++)
			if (strcmp(*k, key) == 0)
				break;
		if (*k == NULL) {
			char list[256] = "";
			size_t off = 0;

			for (k = known; *k != NULL && off < sizeof(list); k++)
				off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
							off ? ", " : "", *k);
			return sub_jerr(c, path, "unknown key \"%s\" (known: %s)", key, list);
		}
	}
	(void)v;
	return 0;
}

/* A tc-style rate string -> bit/s (> 0). */
static int
sub_jrate(struct sub_jctx *c, const json_t *v, const char *path, uint64_t *bps)
{
	char msg[256];
	uint64_t bytes;

	if (!json_is_string(v))
		return sub_jerr(c, path, "expected a rate such as \"100mbit\"");
	if (shaper_parse_rate(json_string_value(v), &bytes, msg, sizeof(msg)) != 0)
		return sub_jerr(c, path, "%s", msg);
	if (bytes == 0)
		return sub_jerr(c, path, "must be above 0");
	*bps = bytes * 8;
	return 0;
}

/* A plan: "100mbit" (max only) or {"max": ..., "min": ...}. */
static int
sub_jplan(struct sub_jctx *c, const json_t *v, const char *path, struct sub_plan *plan)
{
	static const char *const keys[] = { "max", "min", NULL };
	char sub[256];
	const json_t *x;

	memset(plan, 0, sizeof(*plan));
	if (v == NULL)
		return sub_jerr(c, path,
				"missing (a rate such as \"100mbit\" or {\"max\", \"min\"})");
	if (json_is_string(v))
		return sub_jrate(c, v, path, &plan->max);
	if (!json_is_object(v))
		return sub_jerr(c, path, "expected a rate or an object {\"max\", \"min\"}");
	if (sub_jkeys(c, v, path, keys) != 0)
		return -EINVAL;
	snprintf(sub, sizeof(sub), "%s.max", path);
	x = json_object_get(v, "max");
	if (x == NULL)
		return sub_jerr(c, sub, "missing");
	if (sub_jrate(c, x, sub, &plan->max) != 0)
		return -EINVAL;
	x = json_object_get(v, "min");
	snprintf(sub, sizeof(sub), "%s.min", path);
	if (x != NULL && sub_jrate(c, x, sub, &plan->min) != 0)
		return -EINVAL;
	return 0;
}

static int
sub_jnodes(struct sub_jctx *c, const json_t *obj, uint32_t parent, const char *path,
	   struct sub_names *names)
{
	static const char *const keys[] = { "download", "upload", "type", "children", NULL };
	const char *key;
	const json_t *node;

	if (!json_is_object(obj))
		return sub_jerr(c, path, "expected an object of nodes");
	if (c->set->nodes[parent].depth + 1 > SUB_MAX_DEPTH)
		return sub_jerr(c, path, "nodes nested deeper than %u", SUB_MAX_DEPTH);
	json_object_foreach ((json_t *)obj, key, node) {
		char p[512], q[560];
		uint32_t idx, other;
		const json_t *v;
		int d;

		snprintf(p, sizeof(p), "%s.%s", path, key);
		if (!json_is_object(node))
			return sub_jerr(c, p, "a node must be an object");
		if (sub_jkeys(c, node, p, keys) != 0)
			return -EINVAL;
		if (key[0] == '\0' || strlen(key) >= SUB_ID_LEN)
			return sub_jerr(c, p, "a node name must have 1..%u characters",
					SUB_ID_LEN - 1);
		other = sub_names_get(names, key);
		if (other != SUB_NONE) {
			char op[256];

			sub_node_path(c->set, other, op, sizeof(op));
			return sub_jerr(c, p, "duplicate node name \"%s\" (also at %s)", key, op);
		}
		if (sub_set_add_node(c->set, &idx) != 0)
			return sub_jerr(c, p, "too many nodes or out of memory");
		snprintf(c->set->nodes[idx].name, SUB_ID_LEN, "%s", key);
		c->set->nodes[idx].parent = parent;
		c->set->nodes[idx].depth = c->set->nodes[parent].depth + 1;
		if (sub_names_put(names, key, idx) != 0)
			return sub_jerr(c, p, "out of memory");
		for (d = 0; d < SUB_DIRS; d++) {
			const char *dn = d == SUB_DOWN ? "download" : "upload";

			snprintf(q, sizeof(q), "%s.%s", p, dn);
			v = json_object_get(node, dn);
			if (v == NULL)
				return sub_jerr(c, q, "missing (the node's capacity)");
			if (sub_jrate(c, v, q, &c->set->nodes[idx].capacity[d]) != 0)
				return -EINVAL;
		}
		v = json_object_get(node, "type");
		if (v != NULL) {
			if (!json_is_string(v))
				return sub_jerr(c, p, "type: expected a string");
			snprintf(c->set->nodes[idx].type, sizeof(c->set->nodes[idx].type), "%s",
				 json_string_value(v));
		}
		v = json_object_get(node, "children");
		if (v != NULL) {
			snprintf(q, sizeof(q), "%s.children", p);
			if (sub_jnodes(c, v, idx, q, names) != 0)
				return -EINVAL;
		}
	}
	return 0;
}

static int
sub_jaddress(struct sub_jctx *c, const json_t *v, const char *path, uint32_t s)
{
	static const char *const keys[] = { "prefix", "vlan", NULL };
	struct sub_prefix p;
	const json_t *pfx = v, *vlan = NULL;
	char why[160];
	uint32_t idx;

	if (json_is_object(v)) {
		if (sub_jkeys(c, v, path, keys) != 0)
			return -EINVAL;
		pfx = json_object_get(v, "prefix");
		vlan = json_object_get(v, "vlan");
	}
	if (pfx == NULL || !json_is_string(pfx))
		return sub_jerr(c, path,
				"expected an address or prefix (\"100.64.0.1\", \"2001:db8::/56\") "
				"or {\"prefix\", \"vlan\"}");
	if (sub_prefix_parse(json_string_value(pfx), &p, why, sizeof(why)) != 0)
		return sub_jerr(c, path, "%s", why);
	if (vlan != NULL) {
		if (!json_is_integer(vlan) || json_integer_value(vlan) < 1 ||
		    json_integer_value(vlan) > 4094)
			return sub_jerr(c, path, "vlan: expected a VLAN id 1..4094");
		p.vlan = (uint16_t)json_integer_value(vlan);
	}
	if (sub_set_add_prefix(c->set, &idx) != 0)
		return sub_jerr(c, path, "too many addresses or out of memory");
	p.sub = s;
	c->set->prefixes[idx] = p;
	c->set->subs[s].nprefixes++;
	return 0;
}

static int
sub_jsubscriber(struct sub_jctx *c, const json_t *v, uint32_t i, struct sub_names *ids,
		const struct sub_names *nodes)
{
	static const char *const keys[] = { "id",        "name", "node",    "download", "upload",
					    "addresses", "sqm",  "comment", NULL };
	char p[64], q[128];
	const json_t *x, *a;
	struct sub_subscriber *sub;
	uint32_t s, other;
	size_t k;
	int d;

	snprintf(p, sizeof(p), "subscribers[%u]", i);
	if (!json_is_object(v))
		return sub_jerr(c, p, "a subscriber must be an object");
	if (sub_jkeys(c, v, p, keys) != 0)
		return -EINVAL;
	x = json_object_get(v, "id");
	if (x == NULL || !json_is_string(x) || json_string_length(x) == 0 ||
	    json_string_length(x) >= SUB_ID_LEN)
		return sub_jerr(c, p, "id: expected a string of 1..%u characters", SUB_ID_LEN - 1);
	other = sub_names_get(ids, json_string_value(x));
	if (other != SUB_NONE)
		return sub_jerr(c, p, "duplicate id \"%s\" (also subscribers[%u])",
				json_string_value(x), c->set->subs[other].origin);
	if (sub_set_add_sub(c->set, &s) != 0)
		return sub_jerr(c, p, "too many subscribers or out of memory");
	sub = &c->set->subs[s];
	snprintf(sub->id, sizeof(sub->id), "%s", json_string_value(x));
	sub->origin = i;
	sub->node = SUB_ROOT;
	/* The key is the document's string, alive as long as the table. */
	if (sub_names_put(ids, json_string_value(x), s) != 0)
		return sub_jerr(c, p, "out of memory");
	x = json_object_get(v, "name");
	if (x != NULL) {
		if (!json_is_string(x))
			return sub_jerr(c, p, "name: expected a string");
		sub_copy_name(sub->name, sizeof(sub->name), json_string_value(x));
	}
	x = json_object_get(v, "node");
	if (x != NULL) {
		if (!json_is_string(x))
			return sub_jerr(c, p, "node: expected a node name");
		sub->node = sub_names_get(nodes, json_string_value(x));
		if (sub->node == SUB_NONE)
			return sub_jerr(c, p, "node: unknown node \"%s\" (not in \"nodes\")",
					json_string_value(x));
	}
	for (d = 0; d < SUB_DIRS; d++) {
		const char *dn = d == SUB_DOWN ? "download" : "upload";

		snprintf(q, sizeof(q), "%s.%s", p, dn);
		if (sub_jplan(c, json_object_get(v, dn), q, &c->set->subs[s].plan[d]) != 0)
			return -EINVAL;
	}
	x = json_object_get(v, "sqm");
	if (x != NULL &&
	    (!json_is_string(x) || sub_parse_sqm(json_string_value(x), c->set->subs[s].sqm) != 0))
		return sub_jerr(c, p,
				"sqm: expected \"cake\", \"fq_codel\", \"none\" or a "
				"\"down/up\" pair of them");
	a = json_object_get(v, "addresses");
	if (a == NULL || !json_is_array(a) || json_array_size(a) == 0)
		return sub_jerr(c, p, "addresses: expected a non-empty array of addresses");
	json_array_foreach (a, k, x) {
		snprintf(q, sizeof(q), "%s.addresses[%zu]", p, k);
		if (sub_jaddress(c, x, q, s) != 0)
			return -EINVAL;
	}
	return 0;
}

static int
sub_junknown(struct sub_jctx *c, const json_t *v)
{
	static const char *const keys[] = { "download", "upload", NULL };
	int d;

	if (json_is_string(v) && strcmp(json_string_value(v), "link") == 0) {
		c->set->unknown = SUB_UNKNOWN_LINK;
		return 0;
	}
	if (!json_is_object(v))
		return sub_jerr(c, "unknown",
				"expected \"link\" or a plan {\"download\", \"upload\"}");
	if (sub_jkeys(c, v, "unknown", keys) != 0)
		return -EINVAL;
	for (d = 0; d < SUB_DIRS; d++) {
		const char *dn = d == SUB_DOWN ? "download" : "upload";
		char q[64];

		snprintf(q, sizeof(q), "unknown.%s", dn);
		if (sub_jplan(c, json_object_get(v, dn), q, &c->set->unknown_plan[d]) != 0)
			return -EINVAL;
	}
	c->set->unknown = SUB_UNKNOWN_PLAN;
	return 0;
}

static int
sub_jroot(struct sub_jctx *c, const json_t *root)
{
	static const char *const keys[] = { "comment", "link",        "unknown", "scale_mins",
					    "nodes",   "subscribers", NULL };
	static const char *const link_keys[] = { "download", "upload", NULL };
	struct sub_names nodes = { 0 }, ids = { 0 };
	const json_t *v;
	size_t i;
	int rc = -EINVAL, d;

	if (!json_is_object(root))
		return sub_jerr(c, "(top level)", "expected an object");
	if (sub_jkeys(c, root, "(top level)", keys) != 0)
		return -EINVAL;
	if (sub_names_init(&nodes, 64) != 0 || sub_names_init(&ids, 1024) != 0) {
		rc = -ENOMEM;
		sub_errf(c->err, c->errlen, "out of memory");
		goto out;
	}
	v = json_object_get(root, "link");
	if (v != NULL) {
		if (!json_is_object(v)) {
			sub_jerr(c, "link", "expected {\"download\", \"upload\"}");
			goto out;
		}
		if (sub_jkeys(c, v, "link", link_keys) != 0)
			goto out;
		for (d = 0; d < SUB_DIRS; d++) {
			const char *dn = d == SUB_DOWN ? "download" : "upload";
			const json_t *x = json_object_get(v, dn);
			char q[32];

			snprintf(q, sizeof(q), "link.%s", dn);
			if (x != NULL &&
			    sub_jrate(c, x, q, &c->set->nodes[SUB_ROOT].capacity[d]) != 0)
				goto out;
		}
	}
	v = json_object_get(root, "unknown");
	if (v != NULL && sub_junknown(c, v) != 0)
		goto out;
	v = json_object_get(root, "scale_mins");
	if (v != NULL) {
		if (!json_is_boolean(v)) {
			sub_jerr(c, "scale_mins", "expected true or false");
			goto out;
		}
		c->set->scale_mins = json_is_true(v);
	}
	v = json_object_get(root, "nodes");
	if (v != NULL && sub_jnodes(c, v, SUB_ROOT, "nodes", &nodes) != 0)
		goto out;
	v = json_object_get(root, "subscribers");
	if (v == NULL || !json_is_array(v)) {
		sub_jerr(c, "subscribers", "expected an array of subscribers");
		goto out;
	}
	for (i = 0; i < json_array_size(v); i++)
		if (sub_jsubscriber(c, json_array_get(v, i), (uint32_t)i, &ids, &nodes) != 0)
			goto out;
	rc = sub_set_validate(c->set, c->err, c->errlen);
out:
	sub_names_free(&nodes);
	sub_names_free(&ids);
	return rc;
}

int
sub_load_json_text(struct sub_set *set, const char *text, const char *name, char *err,
		   size_t errlen)
{
	struct sub_jctx c = { set, name, err, errlen };
	json_error_t jerr;
	json_t *root;
	int rc;

	snprintf(set->subs_file, sizeof(set->subs_file), "%s", name);
	snprintf(set->nodes_file, sizeof(set->nodes_file), "%s", name);
	set->subs_csv = false;
	root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		sub_errf(err, errlen, "%s:%d:%d: %s", name, jerr.line, jerr.column, jerr.text);
		return -EINVAL;
	}
	rc = sub_jroot(&c, root);
	json_decref(root);
	return rc;
}

int
sub_load_json(struct sub_set *set, const char *path, char *err, size_t errlen)
{
	struct sub_jctx c = { set, path, err, errlen };
	json_error_t jerr;
	json_t *root;
	int rc;

	snprintf(set->subs_file, sizeof(set->subs_file), "%s", path);
	snprintf(set->nodes_file, sizeof(set->nodes_file), "%s", path);
	set->subs_csv = false;
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		sub_errf(err, errlen, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
		return -EINVAL;
	}
	rc = sub_jroot(&c, root);
	json_decref(root);
	return rc;
}
