/*
 * Hierarchical max-min allocation (see shaper/subscriber_alloc.h): one
 * bottom-up pass for every node's floor and ceiling, then a top-down pass
 * splitting each node's rate among its children by water-filling.
 */
#include <stdlib.h>
#include <string.h>

#include "shaper/subscriber_alloc.h"

struct sub_alloc {
	uint32_t nnodes, nsubs;
	uint32_t *parent;      /* node -> parent node (SUB_NONE for the root) */
	uint64_t *capacity;    /* [node][dir] */
	struct sub_plan *plan; /* [sub][dir] */
	uint32_t *sub_node;    /* sub -> node */
	/* Children of node n: kids[kid_start[n] .. kid_start[n + 1]); < nnodes a node, else a sub.
	 */
	uint32_t *kid_start, *kids;
	uint32_t max_kids;
	/* Per run. */
	uint64_t *floor, *ceil; /* [node] then [sub], indexed like kids */
	uint64_t *kfloor, *kceil, *kout, *scratch;
	uint64_t *level[SUB_DIRS]; /* [node]: its last split's water level, where the next starts */
	/*
	 * Per run over the active subscribers only (sub_alloc_run_active): the
	 * nodes on their paths ("touched"), each with its wanting subscribers
	 * and its wanting child nodes as lists in index order, as kids[] has
	 * them; the entries of a node not touched are stale and never read.
	 */
	uint8_t *touched;                 /* [node] */
	uint64_t *tnodes;                 /* the touched nodes, sorted before the passes */
	uint64_t *nfloor, *nceil, *given; /* [node] */
	uint32_t *sub_head, *sub_tail;    /* [node] -> entry */
	uint32_t *node_head, *node_tail;  /* [node] -> child node */
	uint32_t *node_next;              /* [node] -> its next sibling in its parent's list */
	uint32_t *ent_sub, *ent_next;     /* [entry]: one wanting subscriber */
	uint64_t *ent_floor, *ent_ceil;   /* [entry] */
	/*
	 * The last active run's input per direction: a run whose active list,
	 * ceilings and link are the same has the same rates, which are still
	 * in the caller's rate[], so it does not split anything (steadily
	 * backlogged subscribers).
	 */
	struct sub_alloc_last {
		bool valid, same;
		uint32_t n;
		uint64_t link, root;
		uint32_t *sub;  /* [j]: active[j] */
		uint64_t *ceil; /* [j]: its ceiling */
	} last[SUB_DIRS];
};

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

static uint64_t
min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/*
 * Ascending sort of plain integers (the touched nodes): quicksort with a
 * median-of-three pivot, a three-way partition and insertion sort for
 * short runs, recursing into the smaller side. Several times quicker than
 * qsort's comparator calls.
 */
static void
sort_u64_3way(uint64_t *v, uint32_t n)
{
	while (n > 16) {
		uint64_t a = v[0], b = v[n / 2], c = v[n - 1], p, t;
		uint32_t lt = 0, i = 0, gt = n;

		p = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
		while (i < gt) {
			if (v[i] < p) {
				t = v[lt];
				v[lt++] = v[i];
				v[i++] = t;
			} else if (v[i] > p) {
				t = v[--gt];
				v[gt] = v[i];
				v[i] = t;
			} else {
				i++;
			}
		}
		/* v[0..lt) < p == v[lt..gt) < v[gt..n) */
		if (lt < n - gt) {
			sort_u64_3way(v, lt);
			v += gt;
			n -= gt;
		} else {
			sort_u64_3way(v + gt, n - gt);
			n = lt;
		}
	}
	for (uint32_t i = 1; i < n; i++) {
		uint64_t x = v[i];
		uint32_t k = i;

		while (k > 0 && v[k - 1] > x) {
			v[k] = v[k - 1];
			k--;
		}
		v[k] = x;
	}
}

static void
sort_u64(uint64_t *v, uint32_t n)
{
	uint32_t i = 1;

	/* Already in order (one plan, or no mins: all floors 0) costs one look. */
	while (i < n && v[i - 1] <= v[i])
		i++;
	if (i < n)
		sort_u64_3way(v, n);
}

/*
 * S(L) = sum over the children of clamp(L, f, c), saturated past total
 * (only whether it passes total matters then); k, its slope just above L
 * (the children with f <= L < c); next, the first breakpoint (a floor or
 * a ceiling) above L.
 */
struct wf_at {
	uint64_t s, next;
	uint32_t k;
};

static void
wf_eval(uint32_t n, const uint64_t *F, const uint64_t *C, uint64_t total, uint64_t L,
	struct wf_at *at)
{
	uint64_t s = 0, next = UINT64_MAX;
	uint32_t k = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t f = F[i], c = C[i], v;

		if (L < f) {
			v = f;
			next = f < next ? f : next;
		} else if (L < c) {
			v = L;
			k++;
			next = c < next ? c : next;
		} else {
			v = c;
		}
		s += v;
		if (s < v || s > total)
			s = UINT64_MAX; /* past total: stays past it */
	}
	at->s = s;
	at->k = k;
	at->next = next;
}

/*
 * The water level: the largest L with S(L) <= total, given sum_f <= total
 * < sum_c. Newton's steps from below on the piecewise linear S, each a
 * pass over the children: a step that stays short of the next breakpoint
 * lands on the answer exactly (S is linear up to there); one that passes a
 * breakpoint is checked, and one past a point known to be too high halves
 * the interval instead (S is concave while no floors are crossed, so
 * Newton from below does not overshoot then). hint, a level near the
 * answer (the last run's at this node), or 0.
 */
static uint64_t
wf_level(uint32_t n, const uint64_t *F, const uint64_t *C, uint64_t total, uint64_t hint)
{
	uint64_t lo = 0, hi = UINT64_MAX, cand;
	struct wf_at at, lo_at;

	wf_eval(n, F, C, total, hint, &at);
	if (at.s <= total) {
		lo = hint;
		lo_at = at;
	} else {
		/* Above it: one step down along the slope there, then from 0 if that fails. */
		uint64_t k = at.k != 0 ? at.k : 1, down;

		hi = hint;
		cand = 0;
		if (at.s != UINT64_MAX) {
			down = (at.s - total + k - 1) / k;
			cand = down < hint ? hint - down : 0;
		}
		wf_eval(n, F, C, total, cand, &lo_at);
		if (lo_at.s <= total) {
			lo = cand;
		} else {
			hi = cand;
			wf_eval(n, F, C, total, 0, &lo_at);
		}
	}
	for (;;) {
		if (lo_at.k == 0) {
			cand = lo_at.next; /* flat until the next floor */
		} else {
			uint64_t step = (total - lo_at.s) / lo_at.k;

			if (step < lo_at.next - lo)
				return lo + step;
			cand = lo + step;
		}
		if (cand >= hi)
			cand = lo + (hi - lo) / 2;
		if (cand == lo)
			return lo; /* hi == lo + 1 */
		wf_eval(n, F, C, total, cand, &at);
		if (at.s <= total) {
			lo = cand;
			lo_at = at;
		} else {
			hi = cand;
		}
	}
}

/* sub_waterfill, starting its search at *hint and leaving the level found there. */
static uint64_t
waterfill(uint32_t n, const uint64_t *floor, const uint64_t *ceiling, uint64_t total, uint64_t *out,
	  uint64_t *scratch, uint64_t *hint)
{
	uint64_t sum_f = 0, sum_c = 0, level, sum = 0;
	const uint64_t *F = floor, *C = ceiling;
	uint32_t i, j, idle = 0;

	for (i = 0; i < n; i++) {
		sum_f = sat_add(sum_f, floor[i]);
		sum_c = sat_add(sum_c, ceiling[i]);
		idle += ceiling[i] == 0;
	}
	if (sum_c <= total) {
		memcpy(out, ceiling, n * sizeof(*out));
		return sum_c;
	}
	if (sum_f > total) {
		/* Not even the floors fit (the link was cut below them): scale them. */
		for (i = 0; i < n; i++) {
			out[i] = (uint64_t)((double)floor[i] * ((double)total / (double)sum_f));
			if (out[i] > floor[i])
				out[i] = floor[i];
			sum += out[i];
		}
		return sum;
	}
	/*
	 * Only children that want something count: an idle one (ceiling 0)
	 * adds 0 whatever the level. Under a node of thousands of
	 * subscribers most are idle (in a full run; the active run passes
	 * none).
	 */
	j = n;
	if (idle != 0) {
		for (i = j = 0; i < n; i++)
			if (ceiling[i] != 0) {
				scratch[j] = floor[i];
				scratch[n + j] = ceiling[i];
				j++;
			}
		F = scratch;
		C = scratch + n;
	}
	level = wf_level(j, F, C, total, hint != NULL ? *hint : 0);
	if (hint != NULL)
		*hint = level;
	for (i = 0; i < n; i++) {
		out[i] = level < floor[i] ? floor[i] : level > ceiling[i] ? ceiling[i] : level;
		sum += out[i];
	}
	/* What division left over, one bit/s each to children still rising. */
	for (i = 0; i < n && sum < total; i++)
		if (out[i] < ceiling[i] && out[i] >= floor[i] && out[i] == level) {
			out[i]++;
			sum++;
		}
	return sum;
}

uint64_t
sub_waterfill(uint32_t n, const uint64_t *floor, const uint64_t *ceiling, uint64_t total,
	      uint64_t *out, uint64_t *scratch)
{
	return waterfill(n, floor, ceiling, total, out, scratch, NULL);
}

struct sub_alloc *
sub_alloc_create(const struct sub_set *set)
{
	struct sub_alloc *a = calloc(1, sizeof(*a));
	uint32_t nn = set->nnodes, ns = set->nsubs, i, *fill;
	size_t ents = (size_t)nn + ns;

	if (a == NULL)
		return NULL;
	a->nnodes = nn;
	a->nsubs = ns;
	a->parent = calloc(nn, sizeof(*a->parent));
	a->capacity = calloc((size_t)nn * SUB_DIRS, sizeof(*a->capacity));
	a->plan = calloc((size_t)ns * SUB_DIRS + 1, sizeof(*a->plan));
	a->sub_node = calloc(ns + 1, sizeof(*a->sub_node));
	a->kid_start = calloc(nn + 1, sizeof(*a->kid_start));
	a->kids = calloc(ents, sizeof(*a->kids));
	a->floor = calloc(ents, sizeof(*a->floor));
	a->ceil = calloc(ents, sizeof(*a->ceil));
	fill = calloc(nn, sizeof(*fill));
	if (a->parent == NULL || a->capacity == NULL || a->plan == NULL || a->sub_node == NULL ||
	    a->kid_start == NULL || a->kids == NULL || a->floor == NULL || a->ceil == NULL ||
	    fill == NULL)
		goto fail;
	for (i = 0; i < nn; i++) {
		a->parent[i] = set->nodes[i].parent;
		memcpy(&a->capacity[(size_t)i * SUB_DIRS], set->nodes[i].capacity,
		       sizeof(set->nodes[i].capacity));
		if (i > 0)
			a->kid_start[a->parent[i] + 1]++;
	}
	for (i = 0; i < ns; i++) {
		a->sub_node[i] = set->subs[i].node;
		memcpy(&a->plan[(size_t)i * SUB_DIRS], set->subs[i].plan,
		       sizeof(set->subs[i].plan));
		a->kid_start[a->sub_node[i] + 1]++;
	}
	for (i = 0; i < nn; i++) {
		uint32_t kids = a->kid_start[i + 1];

		if (kids > a->max_kids)
			a->max_kids = kids;
		a->kid_start[i + 1] += a->kid_start[i];
	}
	for (i = 1; i < nn; i++)
		a->kids[a->kid_start[a->parent[i]] + fill[a->parent[i]]++] = i;
	for (i = 0; i < ns; i++)
		a->kids[a->kid_start[a->sub_node[i]] + fill[a->sub_node[i]]++] = nn + i;
	free(fill);
	fill = NULL;
	a->touched = calloc(nn, sizeof(*a->touched));
	a->tnodes = calloc(nn, sizeof(*a->tnodes));
	a->nfloor = calloc(nn, sizeof(*a->nfloor));
	a->nceil = calloc(nn, sizeof(*a->nceil));
	a->given = calloc(nn, sizeof(*a->given));
	a->sub_head = calloc(nn, sizeof(*a->sub_head));
	a->sub_tail = calloc(nn, sizeof(*a->sub_tail));
	a->node_head = calloc(nn, sizeof(*a->node_head));
	a->node_tail = calloc(nn, sizeof(*a->node_tail));
	a->node_next = calloc(nn, sizeof(*a->node_next));
	a->ent_sub = calloc(ns + 1, sizeof(*a->ent_sub));
	a->ent_next = calloc(ns + 1, sizeof(*a->ent_next));
	a->ent_floor = calloc(ns + 1, sizeof(*a->ent_floor));
	a->ent_ceil = calloc(ns + 1, sizeof(*a->ent_ceil));
	for (int d = 0; d < SUB_DIRS; d++) {
		a->last[d].sub = calloc(ns + 1, sizeof(*a->last[d].sub));
		a->last[d].ceil = calloc(ns + 1, sizeof(*a->last[d].ceil));
		a->level[d] = calloc(nn, sizeof(*a->level[d]));
		if (a->last[d].sub == NULL || a->last[d].ceil == NULL || a->level[d] == NULL)
			goto fail;
	}
	if (a->touched == NULL || a->tnodes == NULL || a->nfloor == NULL || a->nceil == NULL ||
	    a->given == NULL || a->sub_head == NULL || a->sub_tail == NULL ||
	    a->node_head == NULL || a->node_tail == NULL || a->node_next == NULL ||
	    a->ent_sub == NULL || a->ent_next == NULL || a->ent_floor == NULL ||
	    a->ent_ceil == NULL)
		goto fail;
	a->kfloor = calloc(a->max_kids + 1, sizeof(*a->kfloor));
	a->kceil = calloc(a->max_kids + 1, sizeof(*a->kceil));
	a->kout = calloc(a->max_kids + 1, sizeof(*a->kout));
	a->scratch = calloc(2 * (size_t)a->max_kids + 1, sizeof(*a->scratch));
	if (a->kfloor == NULL || a->kceil == NULL || a->kout == NULL || a->scratch == NULL)
		goto fail;
	return a;
fail:
	free(fill);
	sub_alloc_free(a);
	return NULL;
}

size_t
sub_alloc_bytes_for(uint32_t nnodes, uint32_t nsubs)
{
	size_t nn = nnodes, ns = nsubs, ents = nn + ns, kids = ents + 1;

	return sizeof(struct sub_alloc) + nn * (sizeof(uint32_t) + SUB_DIRS * sizeof(uint64_t)) +
	       (ns * SUB_DIRS + 1) * sizeof(struct sub_plan) + (ns + 1) * sizeof(uint32_t) +
	       (nn + 1) * sizeof(uint32_t) + ents * (sizeof(uint32_t) + 2 * sizeof(uint64_t)) +
	       kids * 5 * sizeof(uint64_t) +
	       /* the active pass: per node and per subscriber */
	       nn * (1 + 4 * sizeof(uint64_t) + 5 * sizeof(uint32_t)) +
	       (ns + 1) * (2 * sizeof(uint32_t) + 2 * sizeof(uint64_t)) +
	       /* the last run per direction, and each node's last level */
	       SUB_DIRS * (ns + 1) * (sizeof(uint32_t) + sizeof(uint64_t)) +
	       SUB_DIRS * nn * sizeof(uint64_t);
}

void
sub_alloc_free(struct sub_alloc *a)
{
	if (a == NULL)
		return;
	free(a->parent);
	free(a->capacity);
	free(a->plan);
	free(a->sub_node);
	free(a->kid_start);
	free(a->kids);
	free(a->floor);
	free(a->ceil);
	free(a->kfloor);
	free(a->kceil);
	free(a->kout);
	free(a->scratch);
	free(a->touched);
	free(a->tnodes);
	free(a->nfloor);
	free(a->nceil);
	free(a->given);
	free(a->sub_head);
	free(a->sub_tail);
	free(a->node_head);
	free(a->node_tail);
	free(a->node_next);
	free(a->ent_sub);
	free(a->ent_next);
	free(a->ent_floor);
	free(a->ent_ceil);
	for (int d = 0; d < SUB_DIRS; d++) {
		free(a->last[d].sub);
		free(a->last[d].ceil);
		free(a->level[d]);
	}
	free(a);
}

uint64_t
sub_alloc_run(struct sub_alloc *a, enum sub_dir dir, uint64_t link, const uint64_t *demand,
	      uint64_t *rate, uint64_t *node_rate)
{
	uint32_t nn = a->nnodes, i, n;
	uint64_t *given = a->floor; /* reused top-down: what each node was given */
	uint64_t root;

	/* Subscribers: ceiling min(max, demand), floor min(min, ceiling). */
	for (i = 0; i < a->nsubs; i++) {
		const struct sub_plan *p = &a->plan[(size_t)i * SUB_DIRS + dir];
		uint64_t c = min_u64(p->max, demand[i]);

		a->ceil[nn + i] = c;
		a->floor[nn + i] = min_u64(p->min, c);
	}
	/* Nodes, children first (a child's index is above its parent's). */
	for (n = nn; n-- > 0;) {
		uint64_t f = 0, c = 0, cap = a->capacity[(size_t)n * SUB_DIRS + dir];
		uint32_t k;

		for (k = a->kid_start[n]; k < a->kid_start[n + 1]; k++) {
			f = sat_add(f, a->floor[a->kids[k]]);
			c = sat_add(c, a->ceil[a->kids[k]]);
		}
		if (cap != 0) {
			c = min_u64(c, cap);
			f = min_u64(f, cap);
		}
		a->floor[n] = f;
		a->ceil[n] = c;
	}
	root = a->ceil[SUB_ROOT];
	if (link != 0)
		root = min_u64(root, link);
	/* Top-down: split what each node was given among its children. */
	for (n = 0; n < nn; n++) {
		uint32_t k0 = a->kid_start[n], m = a->kid_start[n + 1] - k0, k;
		uint64_t total = n == SUB_ROOT ? root : given[n];

		if (node_rate != NULL)
			node_rate[n] = total;
		for (k = 0; k < m; k++) {
			a->kfloor[k] = a->floor[a->kids[k0 + k]];
			a->kceil[k] = a->ceil[a->kids[k0 + k]];
		}
		waterfill(m, a->kfloor, a->kceil, total, a->kout, a->scratch, &a->level[dir][n]);
		for (k = 0; k < m; k++) {
			uint32_t e = a->kids[k0 + k];

			if (e < nn)
				given[e] = a->kout[k]; /* a node later in the order: floor no longer
							  needed */
			else
				rate[e - nn] = a->kout[k];
		}
	}
	return root;
}

/* Node n joins this run's touched nodes with nothing below it yet. */
static void
touch(struct sub_alloc *a, uint32_t n, uint32_t *nt)
{
	a->touched[n] = 1;
	a->tnodes[(*nt)++] = n;
	a->nfloor[n] = a->nceil[n] = a->given[n] = 0;
	a->sub_head[n] = a->node_head[n] = SUB_NONE;
}

static inline uint64_t
ceil_of(const struct sub_alloc *a, enum sub_dir dir, uint32_t s, const uint64_t *demand)
{
	return min_u64(a->plan[(size_t)s * SUB_DIRS + dir].max, demand[s]);
}

/*
 * Whether this input is the last run's (each ceiling decides its
 * subscriber's floor and share: the same ceilings, the same split), having
 * looked no further than the first difference.
 */
static bool
same_input(const struct sub_alloc *a, enum sub_dir dir, uint64_t link, const uint32_t *active,
	   uint32_t nactive, const uint64_t *demand)
{
	const struct sub_alloc_last *l = &a->last[dir];
	uint32_t j;

	if (!l->valid || l->n != nactive || l->link != link)
		return false;
	for (j = 0; j < nactive; j++)
		if (l->sub[j] != active[j] || l->ceil[j] != ceil_of(a, dir, active[j], demand))
			return false;
	return true;
}

bool
sub_alloc_same_as_last(const struct sub_alloc *a, enum sub_dir dir)
{
	return a->last[dir].same;
}

void
sub_alloc_forget(struct sub_alloc *a)
{
	for (int d = 0; d < SUB_DIRS; d++)
		a->last[d].valid = a->last[d].same = false;
}

void
sub_alloc_set_capacity(struct sub_alloc *a, enum sub_dir dir, uint32_t node, uint64_t bps)
{
	uint64_t *cap = &a->capacity[(size_t)node * SUB_DIRS + dir];

	if (node == SUB_ROOT || node >= a->nnodes || *cap == bps)
		return;
	*cap = bps;
	a->last[dir].valid = a->last[dir].same = false; /* the same demands split otherwise now */
}

uint64_t
sub_alloc_run_active(struct sub_alloc *a, enum sub_dir dir, uint64_t link, const uint32_t *active,
		     uint32_t nactive, const uint64_t *demand, uint64_t *rate, uint64_t *node_rate)
{
	struct sub_alloc_last *l = &a->last[dir];
	uint32_t nt = 0, ne = 0, j, t;
	uint64_t root;

	/* The nodes' rates are not kept: a caller asking for them gets a full run. */
	l->same = node_rate == NULL && same_input(a, dir, link, active, nactive, demand);
	if (l->same)
		return l->root;
	touch(a, SUB_ROOT, &nt);
	/*
	 * The subscribers that want something, appended to their node's list
	 * in index order; their floors and ceilings summed into the node's.
	 * One that wants nothing gets 0, as it would from any split.
	 */
	for (j = 0; j < nactive; j++) {
		uint32_t s = active[j], n = a->sub_node[s], e;
		const struct sub_plan *p = &a->plan[(size_t)s * SUB_DIRS + dir];
		uint64_t c = ceil_of(a, dir, s, demand), f = min_u64(p->min, c);

		l->sub[j] = s;
		l->ceil[j] = c;
		if (c == 0) {
			rate[s] = 0;
			continue;
		}
		if (!a->touched[n]) {
			touch(a, n, &nt);
			for (uint32_t q = a->parent[n]; q != SUB_NONE && !a->touched[q];
			     q = a->parent[q])
				touch(a, q, &nt);
		}
		e = ne++;
		a->ent_sub[e] = s;
		a->ent_floor[e] = f;
		a->ent_ceil[e] = c;
		a->ent_next[e] = SUB_NONE;
		if (a->sub_head[n] == SUB_NONE)
			a->sub_head[n] = e;
		else
			a->ent_next[a->sub_tail[n]] = e;
		a->sub_tail[n] = e;
		a->nfloor[n] = sat_add(a->nfloor[n], f);
		a->nceil[n] = sat_add(a->nceil[n], c);
	}
	/* A child's index is above its parent's: sorted, children come after parents. */
	sort_u64(a->tnodes, nt);
	/* Bottom-up: cap each node's sums, add them to its parent's. */
	for (t = nt; t-- > 0;) {
		uint32_t n = (uint32_t)a->tnodes[t];
		uint64_t cap = a->capacity[(size_t)n * SUB_DIRS + dir];

		if (cap != 0) {
			a->nceil[n] = min_u64(a->nceil[n], cap);
			a->nfloor[n] = min_u64(a->nfloor[n], cap);
		}
		if (n != SUB_ROOT) {
			uint32_t q = a->parent[n];

			a->nfloor[q] = sat_add(a->nfloor[q], a->nfloor[n]);
			a->nceil[q] = sat_add(a->nceil[q], a->nceil[n]);
		}
	}
	/* Each parent's list of the child nodes that want something, in index order. */
	for (t = 1; t < nt; t++) {
		uint32_t n = (uint32_t)a->tnodes[t], q = a->parent[n];

		if (a->nceil[n] == 0)
			continue;
		a->node_next[n] = SUB_NONE;
		if (a->node_head[q] == SUB_NONE)
			a->node_head[q] = n;
		else
			a->node_next[a->node_tail[q]] = n;
		a->node_tail[q] = n;
	}
	root = a->nceil[SUB_ROOT];
	if (link != 0)
		root = min_u64(root, link);
	a->given[SUB_ROOT] = root;
	if (node_rate != NULL)
		memset(node_rate, 0, a->nnodes * sizeof(*node_rate));
	/* Top-down: the same split as sub_alloc_run's, over the children that want something. */
	for (t = 0; t < nt; t++) {
		uint32_t n = (uint32_t)a->tnodes[t], m = 0, k, e;
		uint64_t total = a->given[n];

		if (node_rate != NULL)
			node_rate[n] = total;
		for (k = a->node_head[n]; k != SUB_NONE; k = a->node_next[k], m++) {
			a->kfloor[m] = a->nfloor[k];
			a->kceil[m] = a->nceil[k];
		}
		for (e = a->sub_head[n]; e != SUB_NONE; e = a->ent_next[e], m++) {
			a->kfloor[m] = a->ent_floor[e];
			a->kceil[m] = a->ent_ceil[e];
		}
		if (m == 0)
			continue;
		waterfill(m, a->kfloor, a->kceil, total, a->kout, a->scratch, &a->level[dir][n]);
		m = 0;
		for (k = a->node_head[n]; k != SUB_NONE; k = a->node_next[k])
			a->given[k] = a->kout[m++];
		for (e = a->sub_head[n]; e != SUB_NONE; e = a->ent_next[e])
			rate[a->ent_sub[e]] = a->kout[m++];
	}
	for (t = 0; t < nt; t++)
		a->touched[a->tnodes[t]] = 0;
	l->valid = true;
	l->n = nactive;
	l->link = link;
	l->root = root;
	return root;
}

const struct sub_plan *
sub_alloc_plan(const struct sub_alloc *a, enum sub_dir dir, uint32_t s)
{
	return &a->plan[(size_t)s * SUB_DIRS + dir];
}
