/*
 * The subscriber set: its arrays, names, prefixes, and the checks that need
 * the whole picture (mins against capacities, overlapping prefixes).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "subscriber/sub_impl.h"

void
sub_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int
sub_copy_name(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (n >= len) {
		memcpy(dst, src, len - 1);
		dst[len - 1] = '\0';
		return -1;
	}
	memcpy(dst, src, n + 1);
	return 0;
}

/* ------------------------------------------------------------ name table */

static uint32_t
sub_str_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	while (*s != '\0')
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

int
sub_names_init(struct sub_names *t, uint32_t expect)
{
	uint32_t cap = 64;

	while (cap < expect * 2)
		cap *= 2;
	t->keys = calloc(cap, sizeof(*t->keys));
	t->vals = calloc(cap, sizeof(*t->vals));
	t->cap = cap;
	t->n = 0;
	if (t->keys == NULL || t->vals == NULL) {
		sub_names_free(t);
		return -ENOMEM;
	}
	return 0;
}

void
sub_names_free(struct sub_names *t)
{
	free(t->keys);
	free(t->vals);
	t->keys = NULL;
	t->vals = NULL;
	t->cap = t->n = 0;
}

uint32_t
sub_names_get(const struct sub_names *t, const char *key)
{
	uint32_t i;

	for (i = sub_str_hash(key) & (t->cap - 1); t->keys[i] != NULL; i = (i + 1) & (t->cap - 1))
		if (strcmp(t->keys[i], key) == 0)
			return t->vals[i];
	return SUB_NONE;
}

int
sub_names_put(struct sub_names *t, const char *key, uint32_t val)
{
	uint32_t i;

	if ((t->n + 1) * 2 > t->cap) {
		struct sub_names big;
		uint32_t j;

		if (sub_names_init(&big, t->cap) != 0)
			return -ENOMEM;
		for (j = 0; j < t->cap; j++)
			if (t->keys[j] != NULL)
				sub_names_put(&big, t->keys[j], t->vals[j]);
		sub_names_free(t);
		*t = big;
	}
	for (i = sub_str_hash(key) & (t->cap - 1); t->keys[i] != NULL; i = (i + 1) & (t->cap - 1))
		;
	t->keys[i] = key;
	t->vals[i] = val;
	t->n++;
	return 0;
}

/* ------------------------------------------------------------------- set */

static int
sub_grow(void **arr, uint32_t *cap, uint32_t n, size_t elem, uint32_t limit)
{
	uint32_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	if (n >= limit)
		return -E2BIG;
	ncap = *cap ? *cap * 2 : 64;
	p = realloc(*arr, (size_t)ncap * elem);
	if (p == NULL)
		return -ENOMEM;
	memset((char *)p + (size_t)*cap * elem, 0, (size_t)(ncap - *cap) * elem);
	*arr = p;
	*cap = ncap;
	return 0;
}

int
sub_set_add_node(struct sub_set *set, uint32_t *idx)
{
	int rc = sub_grow((void **)&set->nodes, &set->nodes_cap, set->nnodes, sizeof(*set->nodes),
			  SUB_MAX_NODES);

	if (rc == 0)
		*idx = set->nnodes++;
	return rc;
}

int
sub_set_add_sub(struct sub_set *set, uint32_t *idx)
{
	int rc = sub_grow((void **)&set->subs, &set->subs_cap, set->nsubs, sizeof(*set->subs),
			  SUB_MAX_SUBS);

	if (rc == 0)
		*idx = set->nsubs++;
	return rc;
}

int
sub_set_add_prefix(struct sub_set *set, uint32_t *idx)
{
	int rc = sub_grow((void **)&set->prefixes, &set->prefixes_cap, set->nprefixes,
			  sizeof(*set->prefixes), 16 * SUB_MAX_SUBS);

	if (rc == 0)
		*idx = set->nprefixes++;
	return rc;
}

void
sub_set_init(struct sub_set *set)
{
	uint32_t root;

	memset(set, 0, sizeof(*set));
	set->unknown = SUB_UNKNOWN_LINK;
	/* The root always exists; a failed allocation shows as nnodes 0. */
	if (sub_set_add_node(set, &root) == 0) {
		snprintf(set->nodes[root].name, SUB_ID_LEN, "link");
		set->nodes[root].parent = SUB_NONE;
	}
}

void
sub_set_free(struct sub_set *set)
{
	free(set->nodes);
	free(set->subs);
	free(set->prefixes);
	memset(set, 0, sizeof(*set));
}

void
sub_slot_clear(struct sub_subscriber *s)
{
	memset(s, 0, sizeof(*s));
	s->node = SUB_ROOT;
	s->plan[SUB_DOWN].max = s->plan[SUB_UP].max = 1; /* a plan, but never any demand */
}

int
sub_set_grow_slots(struct sub_set *set, uint32_t need, uint32_t *added)
{
	uint32_t more = set->nsubs / 4 > need ? set->nsubs / 4 : need;

	*added = 0;
	if (more > SUB_MAX_SUBS - set->nsubs) {
		if (need > SUB_MAX_SUBS - set->nsubs)
			return -E2BIG;
		more = SUB_MAX_SUBS - set->nsubs;
	}
	for (uint32_t i = 0; i < more; i++) {
		uint32_t idx;
		int rc = sub_set_add_sub(set, &idx);

		if (rc != 0)
			return rc;
		sub_slot_clear(&set->subs[idx]);
		(*added)++;
	}
	return 0;
}

int
sub_set_copy(struct sub_set *dst, const struct sub_set *src)
{
	*dst = *src;
	dst->nodes = malloc((size_t)(src->nnodes ? src->nnodes : 1) * sizeof(*dst->nodes));
	dst->subs = malloc((size_t)(src->nsubs ? src->nsubs : 1) * sizeof(*dst->subs));
	dst->prefixes = malloc((size_t)(src->nprefixes ? src->nprefixes : 1) *
			       sizeof(*dst->prefixes));
	dst->nodes_cap = src->nnodes ? src->nnodes : 1;
	dst->subs_cap = src->nsubs ? src->nsubs : 1;
	dst->prefixes_cap = src->nprefixes ? src->nprefixes : 1;
	if (dst->nodes == NULL || dst->subs == NULL || dst->prefixes == NULL) {
		sub_set_free(dst);
		return -ENOMEM;
	}
	memcpy(dst->nodes, src->nodes, (size_t)src->nnodes * sizeof(*dst->nodes));
	memcpy(dst->subs, src->subs, (size_t)src->nsubs * sizeof(*dst->subs));
	memcpy(dst->prefixes, src->prefixes, (size_t)src->nprefixes * sizeof(*dst->prefixes));
	return 0;
}

uint32_t
sub_node_find(const struct sub_set *set, const char *name)
{
	uint32_t i;

	for (i = 1; i < set->nnodes; i++)
		if (strcmp(set->nodes[i].name, name) == 0)
			return i;
	return SUB_NONE;
}

uint32_t
sub_find(const struct sub_set *set, const char *id)
{
	uint32_t i;

	for (i = 0; i < set->nsubs; i++)
		if (strcmp(set->subs[i].id, id) == 0)
			return i;
	return SUB_NONE;
}

void
sub_node_path(const struct sub_set *set, uint32_t node, char *buf, size_t len)
{
	uint32_t chain[SUB_MAX_DEPTH + 1];
	uint32_t n = 0, i;
	size_t off = 0;

	if (node == SUB_ROOT) {
		snprintf(buf, len, "link");
		return;
	}
	for (i = node; i != SUB_ROOT && i != SUB_NONE && n <= SUB_MAX_DEPTH;
	     i = set->nodes[i].parent)
		chain[n++] = i;
	buf[0] = '\0';
	while (n-- > 0 && off < len) {
		int w = snprintf(buf + off, len - off, "%s%s", off ? "/" : "",
				 set->nodes[chain[n]].name);
		if (w < 0)
			break;
		off += (size_t)w;
	}
}

void
sub_where(const struct sub_set *set, uint32_t s, char *buf, size_t len)
{
	const struct sub_subscriber *sub = &set->subs[s];

	if (set->subs_csv)
		snprintf(buf, len, "%s:%u (circuit \"%s\")", set->subs_file, sub->origin, sub->id);
	else
		snprintf(buf, len, "%s: subscribers[%u] (\"%s\")", set->subs_file, sub->origin,
			 sub->id);
}

/* -------------------------------------------------------------- prefixes */

int
sub_prefix_parse(const char *s, struct sub_prefix *out, char *err, size_t errlen)
{
	char addr[64];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	unsigned int max, len, i;
	char *end;

	memset(out, 0, sizeof(*out));
	if (alen == 0 || alen >= sizeof(addr)) {
		sub_errf(err, errlen, "\"%s\" is not an address", s);
		return -EINVAL;
	}
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	if (inet_pton(AF_INET, addr, out->addr) == 1) {
		out->family = 4;
		max = 32;
	} else if (inet_pton(AF_INET6, addr, out->addr) == 1) {
		out->family = 6;
		max = 128;
	} else {
		sub_errf(err, errlen, "\"%s\" is not an IPv4 or IPv6 address", addr);
		return -EINVAL;
	}
	len = max;
	if (slash != NULL) {
		unsigned long v;

		errno = 0;
		v = strtoul(slash + 1, &end, 10);
		if (slash[1] < '0' || slash[1] > '9' || *end != '\0' || errno != 0 || v > max) {
			sub_errf(err, errlen, "\"%s\": the prefix length must be 1..%u", s, max);
			return -EINVAL;
		}
		/* Every address: the lookup tables take 1..max, and "unknown" is for those. */
		if (v == 0) {
			sub_errf(err, errlen,
				 "\"%s\": a /0 owns every address; give the subscriber its "
				 "prefixes, and addresses no subscriber owns a plan with "
				 "\"unknown\"",
				 s);
			return -EINVAL;
		}
		len = (unsigned int)v;
	}
	out->len = (uint8_t)len;
	for (i = len; i < max; i++)
		if (out->addr[i / 8] & (0x80u >> (i % 8))) {
			sub_errf(err, errlen, "\"%s\" has host bits set past /%u", s, len);
			return -EINVAL;
		}
	return 0;
}

void
sub_prefix_format(const struct sub_prefix *p, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	char v[16] = "";

	inet_ntop(p->family == 4 ? AF_INET : AF_INET6, p->addr, a, sizeof(a));
	if (p->vlan != 0)
		snprintf(v, sizeof(v), "vlan %u ", p->vlan);
	snprintf(buf, len, "%s%s/%u", v, a, p->len);
}

/* Order: VLAN, family, address, then shorter first (a cover before what it covers). */
static int
sub_prefix_cmp(const void *a, const void *b)
{
	const struct sub_prefix *x = a, *y = b;
	int c;

	if (x->vlan != y->vlan)
		return x->vlan < y->vlan ? -1 : 1;
	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	c = memcmp(x->addr, y->addr, 16);
	if (c != 0)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* Does prefix a contain the first address of b (same VLAN and family)? */
static bool
sub_prefix_covers(const struct sub_prefix *a, const struct sub_prefix *b)
{
	unsigned int i;

	if (a->vlan != b->vlan || a->family != b->family || a->len > b->len)
		return false;
	for (i = 0; i < a->len; i++)
		if ((a->addr[i / 8] ^ b->addr[i / 8]) & (0x80u >> (i % 8)))
			return false;
	return true;
}

/*
 * Sorted, two prefixes overlap only if one contains the other, and then
 * the container is the latest "open" prefix: keep the one whose range
 * reaches farthest and compare each next prefix with it.
 */
static int
sub_check_overlaps(const struct sub_set *set, char *err, size_t errlen)
{
	struct sub_prefix *sorted;
	uint32_t i, open = SUB_NONE;

	if (set->nprefixes < 2)
		return 0;
	sorted = malloc((size_t)set->nprefixes * sizeof(*sorted));
	if (sorted == NULL)
		return -ENOMEM;
	memcpy(sorted, set->prefixes, (size_t)set->nprefixes * sizeof(*sorted));
	qsort(sorted, set->nprefixes, sizeof(*sorted), sub_prefix_cmp);
	for (i = 0; i < set->nprefixes; i++) {
		if (open != SUB_NONE && sub_prefix_covers(&sorted[open], &sorted[i])) {
			const struct sub_prefix *x = &sorted[i], *y = &sorted[open];
			char a[64], b[64], wx[200];

			/* Blame the one that comes later in the file. */
			if (set->subs[y->sub].origin > set->subs[x->sub].origin) {
				x = &sorted[open];
				y = &sorted[i];
			}
			sub_prefix_format(x, a, sizeof(a));
			sub_prefix_format(y, b, sizeof(b));
			sub_where(set, x->sub, wx, sizeof(wx));
			if (x->sub == y->sub)
				sub_errf(err, errlen,
					 "%s: %s and %s overlap (an address listed twice?)", wx, a,
					 b);
			else if (set->subs_csv)
				sub_errf(err, errlen,
					 "%s: %s overlaps %s of circuit \"%s\" (line %u)", wx, a, b,
					 set->subs[y->sub].id, set->subs[y->sub].origin);
			else
				sub_errf(err, errlen,
					 "%s: %s overlaps %s of subscribers[%u] (\"%s\")", wx, a, b,
					 set->subs[y->sub].origin, set->subs[y->sub].id);
			free(sorted);
			return -EINVAL;
		}
		/* A prefix not covered starts a new range; a covered one cannot reach past it. */
		open = i;
	}
	free(sorted);
	return 0;
}

static const char *const sub_dir_name[SUB_DIRS] = { "download", "upload" };

static int
sub_check_plan(const struct sub_set *set, uint32_t s, char *err, size_t errlen)
{
	const struct sub_subscriber *sub = &set->subs[s];
	char where[200];
	int d;

	for (d = 0; d < SUB_DIRS; d++) {
		if (sub->plan[d].max == 0 || sub->plan[d].min > sub->plan[d].max) {
			sub_where(set, s, where, sizeof(where));
			if (sub->plan[d].max == 0)
				sub_errf(err, errlen, "%s: %s max must be above 0", where,
					 sub_dir_name[d]);
			else
				sub_errf(err, errlen,
					 "%s: %s min %.1f Mbit/s is above its max %.1f Mbit/s",
					 where, sub_dir_name[d], sub->plan[d].min / 1e6,
					 sub->plan[d].max / 1e6);
			return -EINVAL;
		}
	}
	return 0;
}

int
sub_set_validate(struct sub_set *set, char *err, size_t errlen)
{
	uint32_t i, n;
	int d, rc;

	if (set->nnodes == 0) {
		sub_errf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	set->mins_scaled = 0;
	for (i = 0; i < set->nnodes; i++) {
		memset(set->nodes[i].min_sum, 0, sizeof(set->nodes[i].min_sum));
		set->nodes[i].nsubs = 0;
	}
	for (i = 0; i < set->nsubs; i++) {
		rc = sub_check_plan(set, i, err, errlen);
		if (rc != 0)
			return rc;
		set->nodes[set->subs[i].node].nsubs++;
		for (d = 0; d < SUB_DIRS; d++)
			set->nodes[set->subs[i].node].min_sum[d] += set->subs[i].plan[d].min;
	}
	/* Children follow their parents: a backward walk sums every subtree. */
	for (n = set->nnodes; n-- > 1;)
		for (d = 0; d < SUB_DIRS; d++)
			set->nodes[set->nodes[n].parent].min_sum[d] += set->nodes[n].min_sum[d];
	for (n = 0; n < set->nnodes; n++) {
		const struct sub_node *nd = &set->nodes[n];

		for (d = 0; d < SUB_DIRS; d++) {
			if (nd->capacity[d] != 0 && nd->min_sum[d] > nd->capacity[d]) {
				char path[256];

				if (set->scale_mins) {
					set->mins_scaled++;
					continue;
				}

				sub_node_path(set, n, path, sizeof(path));
				sub_errf(err, errlen,
					 "%s: node %s: the %s mins of the subscribers under it add up to "
					 "%.1f Mbit/s, above its capacity %.1f Mbit/s (lower them, or "
					 "scale_mins to accept)",
					 n == SUB_ROOT || set->nodes_file[0] == '\0'
							 ? set->subs_file
							 : set->nodes_file,
					 path, sub_dir_name[d], nd->min_sum[d] / 1e6,
					 nd->capacity[d] / 1e6);
				return -EINVAL;
			}
		}
	}
	if (set->unknown == SUB_UNKNOWN_PLAN)
		for (d = 0; d < SUB_DIRS; d++)
			if (set->unknown_plan[d].max == 0 ||
			    set->unknown_plan[d].min > set->unknown_plan[d].max) {
				sub_errf(err, errlen,
					 "the %s plan for unknown addresses needs a max above 0 "
					 "and not below its min",
					 sub_dir_name[d]);
				return -EINVAL;
			}
	rc = sub_check_overlaps(set, err, errlen);
	if (rc == -ENOMEM)
		sub_errf(err, errlen, "out of memory");
	return rc;
}

static int
sub_sqm_word(const char *s, size_t n, uint8_t *out)
{
	static const struct {
		const char *name;
		enum sub_sqm v;
	} t[] = { { "cake", SUB_SQM_CAKE },
		  { "fq_codel", SUB_SQM_FQ_CODEL },
		  { "none", SUB_SQM_NONE } };
	size_t i;

	while (n > 0 && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n == 0) {
		*out = SUB_SQM_DEFAULT;
		return 0;
	}
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strlen(t[i].name) == n && strncasecmp(s, t[i].name, n) == 0) {
			*out = (uint8_t)t[i].v;
			return 0;
		}
	return -EINVAL;
}

int
sub_parse_sqm(const char *s, uint8_t sqm[SUB_DIRS])
{
	const char *slash = strchr(s, '/');

	if (slash == NULL) {
		if (sub_sqm_word(s, strlen(s), &sqm[SUB_DOWN]) != 0)
			return -EINVAL;
		sqm[SUB_UP] = sqm[SUB_DOWN];
		return 0;
	}
	if (strchr(slash + 1, '/') != NULL)
		return -EINVAL;
	if (sub_sqm_word(s, (size_t)(slash - s), &sqm[SUB_DOWN]) != 0 ||
	    sub_sqm_word(slash + 1, strlen(slash + 1), &sqm[SUB_UP]) != 0)
		return -EINVAL;
	return 0;
}
