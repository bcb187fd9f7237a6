/*
 * cake: a CAKE-class discipline (behaviour from Linux's sch_cake and
 * the Piece of CAKE paper, Høiland-Jørgensen et al., 2018).
 *
 * Design note. Each direction has up to 8 tins (DSCP classes). Each tin
 * holds 1024 flow queues (fewer if params.cake_queues asks: a subscriber's
 * CAKE), found by an 8-way set-associative lookup on the
 * flow hash (or a host hash, depending on the isolation mode), so distinct
 * flows rarely share a queue. Inside a tin, DRR++ serves flows from three
 * lists: new (sparse flows, served first), old (bulk rotation) and decaying
 * (empty flows whose AQM state has not relaxed yet). Deficits are charged in
 * overhead-adjusted bytes, and in the dual/triple isolation modes a flow's
 * quantum is divided by the number of bulk flows its host has, so hosts
 * rather than flows share the link. Every flow has a COBALT AQM (cobalt.c).
 *
 * The shaper is time based, not token based: a global clock advances by
 * len/rate per delivered packet and dequeue waits until it comes due, so an
 * idle link accrues no credit and never bursts. Each tin has its own clock
 * at its threshold rate; in shaped mode the highest-index tin whose clock
 * is due wins, else the one due soonest (priority below threshold, share
 * above). Unshaped, tins are served by weighted DRR. A byte limit on buffer
 * memory drops from the head of the fattest queue, found with a max-heap
 * kept up to date only while overflows are recent.
 *
 * Layout: all tables are allocated once at create, in one block (all 8
 * tins, whatever the mode, so a diffserv change never strands packets
 * without state; or only the mode's tins with params.cake_mode_tins, and a
 * change to a mode with more is refused). Queue indices are masks (a power
 * of two of queues per tin), list links are 16-bit indices, rate
 * conversions are multiply+shift. What the set-associative searches read
 * (flow tags, a busy bit per queue, host tags and host bulk counts) sits in
 * dense per-tin arrays, so one search reads one or two cache lines and
 * compares the 8 ways at once (SSE2, or a plain loop). Randomness (quantum dither, BLUE) comes
 * from a xorshift generator seeded by params.seed.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <smmintrin.h>
#define CAKE_HEAP_SSE41 1 /* a sift-down for CPUs with SSE4.1, chosen at run time */
#endif

#include "shaper/classify.h"
#include "shaper/rand.h"
#include "sched/ack_filter.h"
#include "sched/cobalt.h"
#include "sched/l4s.h"
#include "sched/rate.h"
#include "sched/sched_impl.h"

#define CAKE_QUEUES           1024u /* per tin, unless params.cake_queues says fewer */
#define CAKE_QUEUES_MIN       16u
#define CAKE_SET_WAYS         8u
#define CAKE_MAX_TINS         SCHED_MAX_TINS
#define CAKE_NIL              0xffffu /* end of a flow list */
#define CAKE_PKT_LIMIT        10240u  /* only caps the derived byte limit */
#define CAKE_OVERFLOW_TIMEOUT 65535u
#define CAKE_HOST_MAX         1024u /* host bulk counters saturate here */

/* Isolation mode bits. */
#define CAKE_FLOW_SRC   1u
#define CAKE_FLOW_DST   2u
#define CAKE_FLOW_FLOWS 4u

enum cake_set {
	CAKE_SET_NONE = 0,
	CAKE_SET_SPARSE,
	CAKE_SET_SPARSE_WAIT, /* counted sparse, waiting in the old list */
	CAKE_SET_BULK,
	CAKE_SET_DECAYING,
};

/* Flow flags. */
#define CAKE_FLOW_REHOST  1u /* host slots stale after an isolation change */
#define CAKE_FLOW_CLASSIC 2u /* l4s: its latest packet not CE was ECT(0) or Not-ECT */

struct cake_flow {
	struct sh_pkt_list pkts; /* the queued packets; pkts.count is the packet count */
	struct cobalt_vars cvars;
	int32_t deficit;
	uint32_t backlog;    /* bytes (L2 length) */
	uint32_t classic;    /* l4s: queued packets not L4S (the queue is mixed if both) */
	uint16_t next, prev; /* list links, CAKE_NIL terminated */
	uint16_t srchost, dsthost;
	uint8_t set;  /* enum cake_set */
	uint8_t list; /* enum cake_list_id it sits in, or CAKE_LIST_NONE */
	uint8_t flags;
};

struct cake_list {
	uint16_t head, tail;
};

enum cake_list_id {
	CAKE_LIST_NEW = 0,
	CAKE_LIST_OLD,
	CAKE_LIST_DECAYING,
	CAKE_LIST_COUNT,
	CAKE_LIST_NONE = 0xff,
};

struct cake_tin {
	/*
	 * Laid out by who reads it, a cache line each, since with one CAKE per
	 * subscriber each tin is usually out of cache: first what dequeue's
	 * choice of tin reads of every tin and the chosen tin's running state,
	 * then what the flow lookup reads, then the configuration, then the
	 * statistics.
	 */
	uint32_t sparse_flow_count, bulk_flow_count;
	uint64_t time_next_packet;
	struct cake_list lists[CAKE_LIST_COUNT]; /* new, old, decaying */
	uint32_t decaying_flow_count, unresponsive_flow_count;
	uint32_t qlen;         /* packets */
	uint32_t flow_quantum; /* configuration (cake_tin_config), read with the lists */
	uint8_t bit;           /* its bit in tins_with_flows (set by cake_layout) */
	uint64_t backlog;      /* bytes */
	int64_t tin_deficit;

	/* The tin's queues (cake_layout: nq of each; NULL past the allocated tins). */
	struct cake_flow *flows;
	/*
	 * What the 8-way lookups read, kept dense so a set's ways share one
	 * cache line: flow tags, a busy bit per way (flow set != NONE), and
	 * the host tables (tags and bulk flow counts) as separate arrays.
	 */
	uint32_t *tags;
	uint8_t *busy; /* nq / 8 bytes */
	uint32_t *srchost_tag;
	uint32_t *dsthost_tag;
	uint16_t *srchost_bulk;
	uint16_t *dsthost_bulk;
	uint32_t max_len;

	/* Configuration (cake_tin_config). */
	struct sched_rate rate; /* threshold rate */
	struct cobalt_params cparams;
	uint32_t tin_quantum; /* DRR weight when unshaped */
	uint8_t rate_shift;   /* threshold = link rate >> rate_shift (not geometric modes) */
	uint64_t l4s_step;    /* ns: the L4S marking step, at least target's MTU floor */

	/* Statistics: an enqueue's (and drops), then what every dequeue writes. */
	uint64_t packets, bytes;
	uint64_t way_directs, way_hits, way_misses, way_collisions;
	uint64_t drops, ecn_marks;
	uint64_t ack_drops, drop_overlimit;
	uint64_t ect1_packets, step_marks;
	uint64_t peak_delay, avg_delay, base_delay; /* ns, EWMA */
	char name[SCHED_NAME_LEN];
	/* Packets by sojourn bucket: all, and those served from the new list, side by side. */
	struct cake_sojourn {
		uint64_t all, sparse;
	} sojourn[SCHED_SOJOURN_BUCKETS];
	/*
	 * To 29 cache lines (1856 bytes): at 26 (13 x 128) to 28 GCC 12 turns a
	 * tin index's multiply into chains of lea and shift, about 40
	 * instructions a packet more than an imul (docs/PERFORMANCE.md).
	 */
	uint8_t pad_to_29_lines[168];
};

struct cake_heap_ent {
	uint32_t key; /* backlog in bytes */
	uint16_t id;
};
/* cake_heap_down_sse41 reads four entries' keys as the even lanes of two 16-byte loads. */
_Static_assert(sizeof(struct cake_heap_ent) == 8, "a heap entry is two 32-bit lanes");

struct cake {
	/* First: a tin is a whole number of cache lines, so each of its groups above is one. */
	struct cake_tin tins[CAKE_MAX_TINS];

	/*
	 * Then two cache lines with what nearly every enqueue and dequeue
	 * reads: with one CAKE per subscriber, each is usually out of cache.
	 */
	const uint8_t *tin_map; /* DSCP -> tin, the diffserv mode's (shared by every CAKE) */
	struct sched_rate rate; /* global shaper */
	uint64_t time_next_packet;
	uint64_t failsafe_next_packet;
	uint64_t lag;     /* effective lag limit of the clocks, ns */
	uint32_t qmask;   /* nq - 1 */
	uint32_t tin_cnt; /* tins of the current diffserv mode */

	uint64_t backlog; /* bytes */
	uint64_t buffer_used, buffer_max_used, buffer_limit;
	/* Beside the clocks a dequeue reads: sched_lag_skipped_ns reads it after each. */
	uint64_t lag_skipped_ns;
	uint32_t qlen;
	uint32_t overflow_timeout;
	uint32_t slots;          /* tin_alloc x nq: queue ids below this */
	uint32_t tin_scan;       /* tins dequeue looks at (> tin_cnt while old ones drain) */
	uint8_t tins_with_flows; /* bit i: tins[i] has sparse or bulk flows (cake_tin_flows) */
	uint8_t flow_mode;
	bool len_plain;  /* no overhead settings: the charged length is the frame's */
	bool dsrc, ddst; /* cake_dsrc and cake_ddst of flow_mode, once per setting */
	bool resync;     /* config changed: clocks may be stale */

	/* The settings (an enqueue reads its second cache line: overhead, wash, ECN...). */
	struct sched_params p;
	uint64_t rng;
	/* Statistics. */
	uint64_t overlimits;
	uint64_t ecn_marked;
	uint32_t min_netlen, max_netlen, min_adjlen, max_adjlen;
	uint64_t avg_netoff; /* EWMA of net_off << 16 */
	uint16_t quantum_div[CAKE_HOST_MAX + 1];

	/* The shape of the allocation, fixed at create. */
	uint32_t nq, qshift; /* queues per tin (a power of two), log2(nq) */
	uint32_t tin_alloc;  /* tins with queues: 8, or the mode's with cake_mode_tins */
	size_t bytes;        /* the whole block */
	uint32_t cur_tin;    /* unshaped tin DRR position */
	uint8_t tin_order[CAKE_MAX_TINS];
	uint64_t lag_skips;
	/* Rate-independent parts of the tins' CoDel figures (from target and rtt). */
	uint64_t target_ns, interval_over_target_ns; /* rtt - target, mod 2^64 */
	/*
	 * The latest clock of the tins past tin_scan: only a rate change moves
	 * them, so it need not visit them while this is not ahead of now.
	 */
	uint64_t idle_clock_max;
	uint32_t flush_pos; /* cake_flush_some's place: tin << qshift | queue */

	/*
	 * Overflow heap over every queue of the scanned tins, id = (tin <<
	 * qshift) | queue. Each entry carries its key (the flow's backlog) so a sift compares
	 * without following the id; positions live in a dense array. Kept only
	 * while overflow_timeout runs; rebuilt from the flows otherwise.
	 */
	uint32_t heap_len;          /* entries in use: tin_scan x nq */
	bool heap_sse41;            /* the CPU has SSE4.1: cake_heap_down_sse41 */
	struct cake_heap_ent *heap; /* slots entries: max-heap on key */
	uint16_t *heap_pos;         /* slots entries: id -> position in heap[] */
};
_Static_assert(sizeof(struct cake_tin) == 29 * 64, "a tin is 29 cache lines");
_Static_assert(offsetof(struct cake, backlog) == offsetof(struct cake, tin_map) + 64 &&
			       offsetof(struct cake, p) <= offsetof(struct cake, tin_map) + 128,
	       "the hot fields of struct cake are two cache lines");

/* ---------------------------------------------------------------- layout */

#define CAKE_ALIGN(x) (((x) + (size_t)63) & ~(size_t)63)

uint32_t
sched_cake_queues(const struct sched_params *p)
{
	return p->cake_queues != 0 ? p->cake_queues : CAKE_QUEUES;
}

/* Tins the diffserv mode d uses. */
static uint32_t
cake_mode_tins(enum sched_diffserv d)
{
	switch (d) {
	case SCHED_BESTEFFORT:
		return 1;
	case SCHED_DIFFSERV3:
		return 3;
	case SCHED_DIFFSERV4:
		return 4;
	default:
		return CAKE_MAX_TINS;
	}
}

uint32_t
sched_cake_tins(const struct sched_params *p)
{
	return p->cake_mode_tins ? cake_mode_tins(p->diffserv) : CAKE_MAX_TINS;
}

/*
 * Where a tin's tables sit in its part of the block, and that part's size:
 * cake_layout's places, and the enqueue prefetch's, which finds them
 * without waiting for the tin's pointers.
 */
struct cake_tin_layout {
	size_t flows, tags, srchost_tag, dsthost_tag, busy, srchost_bulk, dsthost_bulk, bytes;
};

static inline struct cake_tin_layout
cake_tin_layout(uint32_t nq)
{
	struct cake_tin_layout l;

	l.flows = 0;
	l.tags = l.flows + CAKE_ALIGN(nq * sizeof(struct cake_flow));
	l.srchost_tag = l.tags + CAKE_ALIGN(nq * sizeof(uint32_t));
	l.dsthost_tag = l.srchost_tag + CAKE_ALIGN(nq * sizeof(uint32_t));
	l.busy = l.dsthost_tag + CAKE_ALIGN(nq * sizeof(uint32_t));
	l.srchost_bulk = l.busy + CAKE_ALIGN(nq / CAKE_SET_WAYS);
	l.dsthost_bulk = l.srchost_bulk + CAKE_ALIGN(nq * sizeof(uint16_t));
	l.bytes = l.dsthost_bulk + CAKE_ALIGN(nq * sizeof(uint16_t));
	return l;
}

static size_t
cake_tin_bytes(uint32_t nq)
{
	return cake_tin_layout(nq).bytes;
}

/* Where tin t's tables begin. */
static inline char *
cake_tin_base(const struct cake *c, uint32_t t, size_t tin_bytes)
{
	return (char *)c + CAKE_ALIGN(sizeof(*c)) + t * tin_bytes;
}

/* The block for nq queues in each of tins tins: struct cake, the tins' tables, the heap. */
static size_t
cake_block_bytes(uint32_t nq, uint32_t tins)
{
	size_t slots = (size_t)nq * tins;

	return CAKE_ALIGN(sizeof(struct cake)) + tins * cake_tin_bytes(nq) +
	       CAKE_ALIGN(slots * sizeof(struct cake_heap_ent)) +
	       CAKE_ALIGN(slots * sizeof(uint16_t));
}

/* Point the tables into the block after the struct (its shape from p). */
static void
cake_layout(struct cake *c, const struct sched_params *p)
{
	uint32_t i, nq = sched_cake_queues(p);
	struct cake_tin_layout l = cake_tin_layout(nq);
	char *m;

	c->nq = nq;
	c->qmask = nq - 1;
	c->qshift = (uint32_t)__builtin_ctz(nq);
	c->tin_alloc = sched_cake_tins(p);
	c->slots = c->tin_alloc * nq;
	c->bytes = cake_block_bytes(nq, c->tin_alloc);
	for (i = 0; i < c->tin_alloc; i++) {
		struct cake_tin *b = &c->tins[i];

		b->bit = (uint8_t)(1u << i);
		m = cake_tin_base(c, i, l.bytes);
		b->flows = (struct cake_flow *)(void *)(m + l.flows);
		b->tags = (uint32_t *)(void *)(m + l.tags);
		b->srchost_tag = (uint32_t *)(void *)(m + l.srchost_tag);
		b->dsthost_tag = (uint32_t *)(void *)(m + l.dsthost_tag);
		b->busy = (uint8_t *)(m + l.busy);
		b->srchost_bulk = (uint16_t *)(void *)(m + l.srchost_bulk);
		b->dsthost_bulk = (uint16_t *)(void *)(m + l.dsthost_bulk);
	}
	m = cake_tin_base(c, c->tin_alloc, l.bytes);
	c->heap = (struct cake_heap_ent *)(void *)m;
	c->heap_pos = (uint16_t *)(void *)(m + CAKE_ALIGN(c->slots * sizeof(struct cake_heap_ent)));
#ifdef CAKE_HEAP_SSE41
	c->heap_sse41 = __builtin_cpu_supports("sse4.1");
#endif
}

/* ---------------------------------------------------------------- random */

/* For cobalt's BLUE draws (a callback, so it takes a context). */
static uint32_t
cake_rand32(void *ctx)
{
	return sh_rand32(&((struct cake *)ctx)->rng);
}

static void
cake_seed(struct cake *c, uint64_t seed)
{
	/* splitmix64 so that small or similar seeds still diverge. */
	uint64_t z = sh_splitmix64(&seed);

	c->rng = z != 0 ? z : 0x853c49e6748fea9bULL;
}

/* ------------------------------------------------------------- flow lists */

static inline void
cake_list_append(struct cake_tin *b, enum cake_list_id id, uint16_t idx)
{
	struct cake_list *l = &b->lists[id];
	struct cake_flow *f = &b->flows[idx];

	f->next = CAKE_NIL;
	f->prev = l->tail;
	f->list = (uint8_t)id;
	if (l->tail != CAKE_NIL)
		b->flows[l->tail].next = idx;
	else
		l->head = idx;
	l->tail = idx;
}

static inline void
cake_list_unlink(struct cake_tin *b, uint16_t idx)
{
	struct cake_flow *f = &b->flows[idx];
	struct cake_list *l;

	if (f->list == CAKE_LIST_NONE)
		return;
	l = &b->lists[f->list];
	if (f->prev != CAKE_NIL)
		b->flows[f->prev].next = f->next;
	else
		l->head = f->next;
	if (f->next != CAKE_NIL)
		b->flows[f->next].prev = f->prev;
	else
		l->tail = f->prev;
	f->next = f->prev = CAKE_NIL;
	f->list = CAKE_LIST_NONE;
}

/* cake_list_unlink for the head of its list (what dequeue serves): no predecessor. */
static inline void
cake_list_unlink_head(struct cake_tin *b, uint16_t idx)
{
	struct cake_flow *f = &b->flows[idx];
	struct cake_list *l = &b->lists[f->list];

	l->head = f->next;
	if (f->next != CAKE_NIL)
		b->flows[f->next].prev = CAKE_NIL;
	else
		l->tail = CAKE_NIL;
	f->next = CAKE_NIL;
	f->list = CAKE_LIST_NONE;
}

static inline void
cake_list_head_to_tail(struct cake_tin *b, enum cake_list_id id, uint16_t idx)
{
	cake_list_unlink_head(b, idx);
	cake_list_append(b, id, idx);
}

/* ------------------------------------------------------------ host counts */

static inline bool
cake_dsrc(uint8_t mode)
{
	return (mode & (CAKE_FLOW_SRC | CAKE_FLOW_FLOWS)) == (CAKE_FLOW_SRC | CAKE_FLOW_FLOWS);
}

static inline bool
cake_ddst(uint8_t mode)
{
	return (mode & (CAKE_FLOW_DST | CAKE_FLOW_FLOWS)) == (CAKE_FLOW_DST | CAKE_FLOW_FLOWS);
}

static inline void
cake_host_bulk_inc(const struct cake *c, struct cake_tin *b, const struct cake_flow *f)
{
	if (f->flags & CAKE_FLOW_REHOST)
		return; /* not charged to any host until reassigned */
	if (c->dsrc && b->srchost_bulk[f->srchost] < CAKE_HOST_MAX)
		b->srchost_bulk[f->srchost]++;
	if (c->ddst && b->dsthost_bulk[f->dsthost] < CAKE_HOST_MAX)
		b->dsthost_bulk[f->dsthost]++;
}

static inline void
cake_host_bulk_dec(const struct cake *c, struct cake_tin *b, const struct cake_flow *f)
{
	if (f->flags & CAKE_FLOW_REHOST)
		return;
	if (c->dsrc && b->srchost_bulk[f->srchost] > 0)
		b->srchost_bulk[f->srchost]--;
	if (c->ddst && b->dsthost_bulk[f->dsthost] > 0)
		b->dsthost_bulk[f->dsthost]--;
}

/* The flow's quantum divided by its host's bulk flow count, with dither. */
static inline int32_t
cake_flow_quantum(struct cake *c, struct cake_tin *b, const struct cake_flow *f)
{
	uint32_t load = 1;

	if (!(f->flags & CAKE_FLOW_REHOST)) {
		if (c->dsrc && b->srchost_bulk[f->srchost] > load)
			load = b->srchost_bulk[f->srchost];
		if (c->ddst && b->dsthost_bulk[f->dsthost] > load)
			load = b->dsthost_bulk[f->dsthost];
	}
	/* The random 16-bit addend removes the rounding bias of >> 16. */
	return (int32_t)(((uint64_t)b->flow_quantum * c->quantum_div[load] +
			  (sh_rand64(&c->rng) >> 48)) >>
			 16);
}

/* ------------------------------------------------------ 8-way set search */

/* Bit w set where v[w] == x, for the 8 ways of a set starting at v. */
static inline uint32_t
cake_match8(const uint32_t *v, uint32_t x)
{
#ifdef __SSE2__
	__m128i k = _mm_set1_epi32((int)x);
	__m128i a = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)v), k);
	__m128i b = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(v + 4)), k);

	return (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(a)) |
	       ((uint32_t)_mm_movemask_ps(_mm_castsi128_ps(b)) << 4);
#else
	uint32_t m = 0, w;

	for (w = 0; w < CAKE_SET_WAYS; w++)
		m |= (uint32_t)(v[w] == x) << w;
	return m;
#endif
}

/* Bit w set where v[w] == 0, for 8 16-bit counters. */
static inline uint32_t
cake_zero8(const uint16_t *v)
{
#ifdef __SSE2__
	__m128i z = _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)v), _mm_setzero_si128());

	return (uint32_t)_mm_movemask_epi8(_mm_packs_epi16(z, z)) & 0xffu;
#else
	uint32_t m = 0, w;

	for (w = 0; w < CAKE_SET_WAYS; w++)
		m |= (uint32_t)(v[w] == 0) << w;
	return m;
#endif
}

/*
 * The way of mask m met first when probing from way inner upwards with
 * wrap-around (the order of the reference's linear probe), or -1.
 */
static inline int
cake_first_way(uint32_t m, uint32_t inner)
{
	uint32_t r = ((m | (m << CAKE_SET_WAYS)) >> inner) & 0xffu;

	return r != 0 ? (int)((inner + (uint32_t)__builtin_ctz(r)) & (CAKE_SET_WAYS - 1)) : -1;
}

static inline bool
cake_busy(const struct cake_tin *b, uint32_t idx)
{
	return (b->busy[idx / CAKE_SET_WAYS] >> (idx & (CAKE_SET_WAYS - 1))) & 1u;
}

static inline void
cake_busy_set(struct cake_tin *b, uint32_t idx, bool on)
{
	uint8_t bit = (uint8_t)(1u << (idx & (CAKE_SET_WAYS - 1)));

	if (on)
		b->busy[idx / CAKE_SET_WAYS] |= bit;
	else
		b->busy[idx / CAKE_SET_WAYS] &= (uint8_t)~bit;
}

/* How many queues after idx in b, up to its last, in a row have no busy bit. */
static inline uint32_t
cake_idle_after(const struct cake_tin *b, uint32_t idx, uint32_t nq)
{
	uint32_t i = idx + 1;

	while (i < nq) {
		uint32_t bits = (uint32_t)b->busy[i / CAKE_SET_WAYS] >> (i & (CAKE_SET_WAYS - 1));

		if (bits != 0)
			return i + (uint32_t)__builtin_ctz(bits) - idx - 1;
		i = (i | (CAKE_SET_WAYS - 1)) + 1;
	}
	return nq - idx - 1;
}

/*
 * Find (or claim) a host slot in the 8-way set of hash; returns its index.
 * No shortcut through the slot the flow had before: a flow is assigned
 * hosts when it takes a queue another flow left, and that queue's old
 * slots are another flow's hosts far more often than this one's.
 */
static inline __attribute__((always_inline)) uint16_t
cake_host_slot(uint32_t *tags, const uint16_t *bulk, uint32_t hash, uint32_t qmask)
{
	uint32_t idx = hash & qmask;
	uint32_t inner = idx & (CAKE_SET_WAYS - 1);
	uint32_t outer = idx - inner;
	uint32_t k;
	int w;

	if (tags[idx] == hash) /* the home way: where the probe starts */
		return (uint16_t)idx;
	w = cake_first_way(cake_match8(tags + outer, hash), inner);
	if (w >= 0)
		return (uint16_t)(outer + (uint32_t)w);
	if (bulk[idx] == 0) {
		k = idx;
	} else {
		w = cake_first_way(cake_zero8(bulk + outer), inner);
		/* Set full of busy hosts: share the home slot. */
		k = w >= 0 ? outer + (uint32_t)w : idx;
	}
	tags[k] = hash;
	return (uint16_t)k;
}

/*
 * With vlan_hosts a host is its address on its VLAN: the classifier's keyed
 * address hash XOR a mix of the VLAN ids. The mix (murmur3's finalizer) is
 * a bijection that spreads into the low bits, which pick the host's set and
 * home way, so one address on two VLANs is two hosts in unrelated slots.
 * Untagged frames keep their hash (the mix of 0 is 0), and a 0 hash (not
 * IP, no host) stays 0.
 */
static inline uint32_t
cake_vlan_host(uint32_t host_hash, uint32_t vlan_mix)
{
	return host_hash != 0 ? host_hash ^ vlan_mix : 0;
}

static inline uint32_t
cake_vlan_mix(const struct cake *c, const struct sh_pkt *pkt)
{
	uint32_t v;

	if (!c->p.vlan_hosts)
		return 0;
	v = classify_vlan_key(pkt);
	v ^= v >> 16;
	v *= 0x85ebca6bu;
	v ^= v >> 13;
	v *= 0xc2b2ae35u;
	return v ^ (v >> 16);
}

/* Inlined: with more flows than queues nearly every packet takes this path. */
static inline __attribute__((always_inline)) void
cake_assign_hosts(struct cake *c, struct cake_tin *b, struct cake_flow *f, const struct sh_pkt *pkt)
{
	uint32_t mix = cake_vlan_mix(c, pkt);

	f->flags &= (uint8_t)~CAKE_FLOW_REHOST;
	if (c->dsrc)
		f->srchost = cake_host_slot(b->srchost_tag, b->srchost_bulk,
					    cake_vlan_host(pkt->src_hash, mix), c->qmask);
	if (c->ddst)
		f->dsthost = cake_host_slot(b->dsthost_tag, b->dsthost_bulk,
					    cake_vlan_host(pkt->dst_hash, mix), c->qmask);
	if (f->set == CAKE_SET_BULK)
		cake_host_bulk_inc(c, b, f);
}

/* ----------------------------------------------------------- flow lookup */

/* The hash pkt's queue is found by (the flow mode is not flow-blind). */
static inline uint32_t
cake_queue_hash(const struct cake *c, const struct sh_pkt *pkt)
{
	uint8_t mode = c->flow_mode;
	uint32_t hash;

	if (mode & CAKE_FLOW_FLOWS)
		return pkt->flow_hash;
	hash = ((mode & CAKE_FLOW_SRC) ? pkt->src_hash : 0) ^
	       ((mode & CAKE_FLOW_DST) ? pkt->dst_hash : 0);
	/* The VLAN after the XOR: mixed into both, `hosts` would cancel it out. */
	return cake_vlan_host(hash, cake_vlan_mix(c, pkt));
}

/* Inlined into the burst enqueue: one call less per packet. */
static inline __attribute__((always_inline)) uint16_t
cake_lookup(struct cake *c, struct cake_tin *b, const struct sh_pkt *pkt)
{
	uint32_t hash, idx, inner, outer, k, free8;
	bool dual = c->dsrc || c->ddst;
	bool assign;
	struct cake_flow *f;
	int w;

	if (c->flow_mode == SCHED_FLOWBLIND)
		return 0;
	hash = cake_queue_hash(c, pkt);
	idx = hash & c->qmask;
	if (b->tags[idx] == hash && cake_busy(b, idx)) {
		b->way_directs++;
		k = idx;
		assign = false;
		goto found;
	}
	inner = idx & (CAKE_SET_WAYS - 1);
	outer = idx - inner;
	w = cake_first_way(cake_match8(b->tags + outer, hash), inner);
	if (w >= 0) {
		k = outer + (uint32_t)w;
		if ((uint32_t)w != inner)
			b->way_hits++;
		assign = !cake_busy(b, k);
		goto found;
	}
	/* A free way (with 100k flows nearly every set is full: test that first). */
	free8 = ~(uint32_t)b->busy[outer / CAKE_SET_WAYS] & 0xffu;
	if (free8 != 0) {
		k = outer + (uint32_t)cake_first_way(free8, inner);
		b->way_misses++;
		assign = true;
		goto found;
	}
	/* Every way busy with another flow: share the home queue. */
	b->way_collisions++;
	k = idx;
	if (b->flows[k].set == CAKE_SET_BULK)
		cake_host_bulk_dec(c, b, &b->flows[k]);
	assign = true;
found:
	b->tags[k] = hash;
	f = &b->flows[k];
	if (dual && (assign || (f->flags & CAKE_FLOW_REHOST)))
		cake_assign_hosts(c, b, f, pkt);
	return (uint16_t)k;
}

/* ------------------------------------------------------- overflow heap */

/*
 * A 4-ary max-heap: half the depth of a binary one, so a sift-up (every
 * enqueue while overflows are recent) takes half the steps and a sift-down
 * half the moves. It covers the tins dequeue scans (heap_len = tin_scan x
 * nq: the only tins that can hold packets); a change of tin_scan stops
 * the heap (overflow_timeout = 0) so the next overflow rebuilds it. Ties
 * are left in heap order (the reference leaves them open).
 *
 * Sifts move a hole instead of swapping at every level: one write per
 * level. Out of line: only used while overflows are recent, and inlined
 * they slow the callers' fast path.
 */
#define CAKE_HEAP_ARY 4u

/*
 * Sink x from position i; returns where it belongs. Ties stay: a child
 * moves up only if its key is larger, and of equal children the first.
 */
static inline __attribute__((always_inline)) uint32_t
cake_heap_sink(struct cake *c, struct cake_heap_ent x, uint32_t i)
{
	struct cake_heap_ent *h = c->heap;
	uint32_t n = c->heap_len;

	for (;;) {
		uint32_t l = CAKE_HEAP_ARY * i + 1, m = i, km = x.key, j;

		if (l + CAKE_HEAP_ARY <= n) {
			/* All four children exist (every parent but the last). */
			if (h[l].key > km) {
				m = l;
				km = h[l].key;
			}
			if (h[l + 1].key > km) {
				m = l + 1;
				km = h[l + 1].key;
			}
			if (h[l + 2].key > km) {
				m = l + 2;
				km = h[l + 2].key;
			}
			if (h[l + 3].key > km)
				m = l + 3;
		} else {
			for (j = l; j < n; j++) {
				if (h[j].key > km) {
					m = j;
					km = h[j].key;
				}
			}
		}
		if (m == i)
			return i;
		h[i] = h[m];
		c->heap_pos[h[i].id] = (uint16_t)i;
		i = m;
	}
}

static __attribute__((noinline)) void
cake_heap_down(struct cake *c, uint32_t i)
{
	struct cake_heap_ent x = c->heap[i];

	i = cake_heap_sink(c, x, i);
	c->heap[i] = x;
	c->heap_pos[x.id] = (uint16_t)i;
}

#ifdef CAKE_HEAP_SSE41
/*
 * The same sift-down (the same moves, so the same heap), with the four
 * children's keys compared in one register: their maximum in every lane,
 * then the first child holding it. Below the parents with four children
 * it finishes as the scalar one.
 */
static __attribute__((noinline, target("sse4.1"))) void
cake_heap_down_sse41(struct cake *c, uint32_t i)
{
	struct cake_heap_ent *h = c->heap;
	struct cake_heap_ent x = h[i];
	uint32_t n = c->heap_len;
	/* Parents below this have four children: 4i + 5 <= n. */
	uint32_t full = n > CAKE_HEAP_ARY ? (n - CAKE_HEAP_ARY - 1) / CAKE_HEAP_ARY + 1 : 0;

	while (i < full) {
		uint32_t l = CAKE_HEAP_ARY * i + 1, m;
		__m128 lo = _mm_loadu_ps((const float *)&h[l]);
		__m128 hi = _mm_loadu_ps((const float *)&h[l + 2]);
		__m128i k = _mm_castps_si128(_mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)));
		__m128i mx = _mm_max_epu32(k, _mm_shuffle_epi32(k, _MM_SHUFFLE(1, 0, 3, 2)));

		mx = _mm_max_epu32(mx, _mm_shuffle_epi32(mx, _MM_SHUFFLE(2, 3, 0, 1)));
		if ((uint32_t)_mm_cvtsi128_si32(mx) <= x.key)
			goto done;
		m = l + (uint32_t)__builtin_ctz((unsigned int)_mm_movemask_ps(
					_mm_castsi128_ps(_mm_cmpeq_epi32(k, mx))));
		h[i] = h[m];
		c->heap_pos[h[m].id] = (uint16_t)i;
		i = m;
	}
	i = cake_heap_sink(c, x, i);
done:
	h[i] = x;
	c->heap_pos[x.id] = (uint16_t)i;
}
#endif

static __attribute__((noinline)) void
cake_heap_up(struct cake *c, uint32_t i)
{
	struct cake_heap_ent x = c->heap[i];
	struct cake_heap_ent *h = c->heap;

	while (i > 0) {
		uint32_t parent = (i - 1) / CAKE_HEAP_ARY;

		if (h[parent].key >= x.key)
			break;
		h[i] = h[parent];
		c->heap_pos[h[parent].id] = (uint16_t)i;
		i = parent;
	}
	h[i] = x;
	c->heap_pos[x.id] = (uint16_t)i;
}

static void
cake_heap_rebuild(struct cake *c)
{
	uint32_t i;

	c->heap_len = c->tin_scan << c->qshift;
	for (i = 0; i < c->heap_len; i++) {
		c->heap[i].key = c->tins[i >> c->qshift].flows[i & c->qmask].backlog;
		c->heap[i].id = (uint16_t)i;
		c->heap_pos[i] = (uint16_t)i;
	}
	for (i = (c->heap_len + CAKE_HEAP_ARY - 2) / CAKE_HEAP_ARY; i-- > 0;)
		cake_heap_down(c, i);
}

/* A queue's heap id from its tin and index (as stored in its packets). */
static inline uint16_t
cake_flow_id(const struct cake *c, uint32_t tin, uint32_t queue)
{
	return (uint16_t)((tin << c->qshift) | queue);
}

/*
 * The heap's keys are upper bounds of the backlogs: a queue that shrinks
 * (dequeue, ACK filter) keeps its old key, and only the root is made
 * exact, by cake_drop_fattest. An exact root is at least every key, so at
 * least every backlog: the fattest queue. This keeps the common operations
 * off the heap: a dequeue never sifts, and an enqueue only when the queue
 * grows past its recorded key.
 */
static inline void
cake_backlog_grew(struct cake *c, uint16_t id, const struct cake_flow *f)
{
	uint32_t pos;

	if (c->overflow_timeout == 0)
		return;
	pos = c->heap_pos[id];
	if (c->heap[pos].key >= f->backlog)
		return;
	c->heap[pos].key = f->backlog;
	cake_heap_up(c, pos);
}

/* ------------------------------------------------------------- shaper */

/* Charge a packet's adjusted length to the clocks; returns that length. */
static inline uint32_t
cake_advance_shaper(struct cake *c, struct cake_tin *b, const struct sh_pkt *pkt, uint64_t now,
		    bool drop)
{
	uint32_t len = pkt->adj_len;
	uint64_t tin_dur, glob_dur;

	if (c->rate.rate == 0)
		return len;
	tin_dur = sched_rate_ns(&b->rate, len);
	glob_dur = sched_rate_ns(&c->rate, len);
	/* A tin clock in the past catches up gradually (no idle credit is
	 * possible: enqueue pulls an idle tin's clock up to now). */
	if (b->time_next_packet < now)
		b->time_next_packet += tin_dur;
	else if (b->time_next_packet < now + tin_dur)
		b->time_next_packet = now + tin_dur;
	c->time_next_packet += glob_dur;
	if (!drop)
		c->failsafe_next_packet += glob_dur + (glob_dur >> 1);
	return len;
}

static inline uint64_t
cake_ewma(uint64_t avg, uint64_t sample, unsigned int shift)
{
	return avg - (avg >> shift) + (sample >> shift);
}

static inline void
cake_note_sizes(struct cake *c, uint32_t net, uint32_t adj)
{
	if (net < c->min_netlen)
		c->min_netlen = net;
	if (net > c->max_netlen)
		c->max_netlen = net;
	if (adj < c->min_adjlen)
		c->min_adjlen = adj;
	if (adj > c->max_adjlen)
		c->max_adjlen = adj;
}

/*
 * The charged length. Without overhead settings it is the frame's, and
 * the size extremes are the caller's to note (cake_note_plain_sizes, once
 * a burst: a minimum and a maximum do not depend on the order).
 */
static inline __attribute__((always_inline)) uint32_t
cake_overhead(struct cake *c, const struct sh_pkt *pkt)
{
	uint32_t net, adj;

	c->avg_netoff = cake_ewma(c->avg_netoff, (uint64_t)pkt->net_off << 16, 8);
	if (c->len_plain)
		return pkt->len; /* what sched_adjust_len returns for these settings */
	adj = sched_adjust_len(&c->p, pkt->len, pkt->net_off, &net);
	cake_note_sizes(c, net, adj);
	return adj;
}

/* cake_overhead's size extremes for a burst without overhead settings. */
static inline void
cake_note_plain_sizes(struct cake *c, struct sh_pkt *const *pkts, unsigned int n)
{
	uint32_t lo = UINT32_MAX, hi = 0, i;

	for (i = 0; i < n; i++) {
		lo = pkts[i]->len < lo ? pkts[i]->len : lo;
		hi = pkts[i]->len > hi ? pkts[i]->len : hi;
	}
	if (n != 0) {
		cake_note_sizes(c, lo, lo);
		cake_note_sizes(c, hi, hi);
	}
}

/* -------------------------------------------------------- configuration */

struct cake_dscp_entry {
	uint8_t dscp, tin;
};

static const struct cake_dscp_entry cake_diffserv3_map[] = {
	{ 1, 1 }, { 8, 1 }, { 4, 2 }, { 44, 2 }, { 46, 2 }, { 48, 2 }, { 56, 2 },
};

static const struct cake_dscp_entry cake_diffserv4_map[] = {
	{ 1, 1 },  { 8, 1 },  { 4, 2 },  { 16, 2 }, { 18, 2 }, { 20, 2 }, { 22, 2 },
	{ 24, 2 }, { 26, 2 }, { 28, 2 }, { 30, 2 }, { 34, 2 }, { 36, 2 }, { 38, 2 },
	{ 32, 3 }, { 40, 3 }, { 44, 3 }, { 46, 3 }, { 48, 3 }, { 56, 3 },
};

static const struct cake_dscp_entry cake_diffserv8_map[] = {
	{ 1, 0 },  { 2, 1 },  { 8, 1 },  { 10, 1 }, { 12, 1 }, { 14, 1 }, { 24, 3 }, { 26, 3 },
	{ 28, 3 }, { 30, 3 }, { 34, 3 }, { 36, 3 }, { 38, 3 }, { 4, 4 },  { 18, 4 }, { 20, 4 },
	{ 22, 4 }, { 16, 5 }, { 32, 6 }, { 40, 6 }, { 44, 6 }, { 46, 6 }, { 48, 7 }, { 56, 7 },
};

/*
 * NQB (DSCP 45, the IETF's non-queue-building class) with nqb on: the tin
 * of VA (44), the neighbouring low-latency class (RFC 5865), whose
 * traffic is as sparse: Voice in diffserv3 and diffserv4, Minimum latency
 * in diffserv8. That tin is served first only up to its threshold (a
 * quarter of the rate in diffserv3/4), so a flow that marks itself NQB
 * and builds a queue gains nothing. precedence puts 45 in tin 5 by its
 * bits either way; sch_cake's tables leave it best effort.
 */
#define CAKE_DSCP_NQB 45u
static const uint8_t cake_nqb_tin[SCHED_PRECEDENCE + 1] = {
	[SCHED_DIFFSERV3] = 2,
	[SCHED_DIFFSERV4] = 3,
	[SCHED_DIFFSERV8] = 6,
	[SCHED_BESTEFFORT] = 0,
	[SCHED_PRECEDENCE] = CAKE_DSCP_NQB >> 3,
};

/* DSCP -> tin of each diffserv mode (enum sched_diffserv), shared by every CAKE; [1]: nqb. */
static uint8_t cake_tin_maps[2][SCHED_PRECEDENCE + 1][64];
static pthread_once_t cake_tin_maps_once = PTHREAD_ONCE_INIT;

static void
cake_fill_map(uint8_t *map, uint8_t dflt, const struct cake_dscp_entry *m, size_t n)
{
	size_t i;

	memset(map, dflt, 64);
	for (i = 0; i < n; i++)
		map[m[i].dscp] = m[i].tin;
}

static void
cake_fill_tin_maps(void)
{
	uint8_t(*m)[64] = cake_tin_maps[0];

	cake_fill_map(m[SCHED_DIFFSERV3], 0, cake_diffserv3_map,
		      sizeof(cake_diffserv3_map) / sizeof(cake_diffserv3_map[0]));
	cake_fill_map(m[SCHED_DIFFSERV4], 0, cake_diffserv4_map,
		      sizeof(cake_diffserv4_map) / sizeof(cake_diffserv4_map[0]));
	cake_fill_map(m[SCHED_DIFFSERV8], 2, cake_diffserv8_map,
		      sizeof(cake_diffserv8_map) / sizeof(cake_diffserv8_map[0]));
	memset(m[SCHED_BESTEFFORT], 0, 64);
	for (unsigned int i = 0; i < 64; i++)
		m[SCHED_PRECEDENCE][i] = (uint8_t)(i >> 3);
	memcpy(cake_tin_maps[1], cake_tin_maps[0], sizeof(cake_tin_maps[0]));
	for (unsigned int d = 0; d <= SCHED_PRECEDENCE; d++)
		cake_tin_maps[1][d][CAKE_DSCP_NQB] = cake_nqb_tin[d];
}

/* The DSCP -> tin map of diffserv mode d (an unknown one: diffserv3's, as the tins). */
static const uint8_t *
cake_tin_map(enum sched_diffserv d, bool nqb)
{
	pthread_once(&cake_tin_maps_once, cake_fill_tin_maps);
	return cake_tin_maps[nqb][(unsigned int)d <= SCHED_PRECEDENCE ? d : SCHED_DIFFSERV3];
}

/* One tin's threshold rate and what derives from it (sch_cake's cake_set_rate()). */
static void
cake_tin_set_rate(const struct cake *c, struct cake_tin *b, uint64_t rate)
{
	uint64_t q = rate >> 12;
	uint64_t mtu_time, target, interval;

	sched_rate_set(&b->rate, rate);
	b->flow_quantum = (uint32_t)(rate == 0 || q > 1514 ? 1514 : q < 300 ? 300 : q);
	mtu_time = sched_rate_ns(&b->rate, c->p.mtu);
	target = mtu_time * 3 / 2;
	if (target < c->target_ns)
		target = c->target_ns;
	/* rtt + target - target_ns (precomputed mod 2^64), at least twice target */
	interval = target + c->interval_over_target_ns;
	b->cparams.target = target;
	b->cparams.interval = interval < 2 * target ? 2 * target : interval;
	/* The step keeps target's floor: a packet or so of queue on a slow link. */
	b->l4s_step = (uint64_t)c->p.l4s_step_us * 1000;
	if (b->l4s_step < mtu_time * 3 / 2)
		b->l4s_step = mtu_time * 3 / 2;
	b->cparams.mtu_time = mtu_time;
}

/*
 * Configure one tin: its threshold rate >> shift (cake_rates_set keeps the
 * shift for rate changes), DRR weight, BLUE steps and name.
 */
static void
cake_tin_config(struct cake *c, struct cake_tin *b, uint64_t rate, uint8_t shift,
		uint32_t tin_quantum, const char *name)
{
	cake_tin_set_rate(c, b, rate >> shift);
	b->rate_shift = shift;
	b->tin_quantum = tin_quantum;
	b->cparams.p_inc = 1u << 24;
	b->cparams.p_dec = 1u << 20;
	snprintf(b->name, sizeof(b->name), "%s", name);
}

/* diffserv8 and precedence: thresholds and quanta shrink by 7/8 per tin. */
static void
cake_config_geometric(struct cake *c, uint64_t rate)
{
	uint32_t quantum = 256;
	char name[SCHED_NAME_LEN];
	uint32_t i;

	for (i = 0; i < CAKE_MAX_TINS; i++) {
		snprintf(name, sizeof(name), "Tin %u", i);
		cake_tin_config(c, &c->tins[i], rate, 0, quantum, name);
		c->tin_order[i] = (uint8_t)i;
		rate = (rate * 7) >> 3;
		quantum = (quantum * 7) >> 3;
		if (quantum < 1)
			quantum = 1;
	}
	c->tin_cnt = CAKE_MAX_TINS;
}

/* The tins for the diffserv mode, their thresholds fractions of rate r. */
static void
cake_config_tins(struct cake *c, uint64_t r)
{
	uint32_t i;

	c->tin_map = cake_tin_map(c->p.diffserv, c->p.nqb);
	switch (c->p.diffserv) {
	case SCHED_BESTEFFORT:
		cake_tin_config(c, &c->tins[0], r, 0, 65535, "Tin 0");
		c->tin_order[0] = 0;
		c->tin_cnt = 1;
		break;
	case SCHED_PRECEDENCE:
		cake_config_geometric(c, r);
		break;
	case SCHED_DIFFSERV8:
		cake_config_geometric(c, r);
		break;
	case SCHED_DIFFSERV4:
		cake_tin_config(c, &c->tins[0], r, 0, 1024, "Best Effort");
		cake_tin_config(c, &c->tins[1], r, 4, 64, "Bulk");
		cake_tin_config(c, &c->tins[2], r, 1, 512, "Video");
		cake_tin_config(c, &c->tins[3], r, 2, 256, "Voice");
		c->tin_cnt = 4;
		break;
	case SCHED_DIFFSERV3:
	default:
		cake_tin_config(c, &c->tins[0], r, 0, 1024, "Best Effort");
		cake_tin_config(c, &c->tins[1], r, 4, 64, "Bulk");
		cake_tin_config(c, &c->tins[2], r, 2, 256, "Voice");
		c->tin_cnt = 3;
		break;
	}
	if (c->p.diffserv == SCHED_DIFFSERV3 || c->p.diffserv == SCHED_DIFFSERV4) {
		static const uint8_t order[] = { 1, 0, 2, 3 };

		memcpy(c->tin_order, order, sizeof(order));
	}
	/*
	 * Tins beyond the mode still holding packets from before a diffserv
	 * change drain at the full rate; they are reset once empty.
	 */
	for (i = c->tin_cnt; i < c->tin_alloc; i++) {
		char name[SCHED_NAME_LEN];

		snprintf(name, sizeof(name), "Tin %u", i);
		cake_tin_config(c, &c->tins[i], r, 0, 1024, name);
	}
	sched_rate_set(&c->rate, r);
	c->lag = sched_lag_limit(&c->p, &c->rate);
}

/* Out of line: a tin clock ahead of now at a rate change is rare. */
static __attribute__((noinline, cold)) void
cake_rescale_tin_clock(struct cake_tin *b, uint64_t now, uint64_t old, uint64_t r)
{
	sched_rescale_clock(&b->time_next_packet, now, old, r);
}

/* A scanned tin at its new threshold rate; a clock still ahead keeps its wait, rescaled. */
static inline void
cake_tin_new_rate(const struct cake *c, struct cake_tin *b, uint64_t rate, uint64_t now,
		  uint64_t old, uint64_t r)
{
	if (b->time_next_packet > now) /* the rest are not waiting */
		cake_rescale_tin_clock(b, now, old, r);
	cake_tin_set_rate(c, b, rate);
}

/*
 * The link rate went from old to r at now, for the tins configured by
 * cake_config_tins (the same fractions of r): only the rate-derived fields
 * change, the DSCP map, quanta and names stay. Only the tins dequeue scans:
 * the others hold no packets and cake_update reconfigures every tin before
 * the scan can grow. Outside the geometric modes each tin's threshold is
 * r >> rate_shift (0 for tins past the mode, draining after a diffserv
 * change at r), so one loop serves every mode.
 */
static void
cake_rates_set(struct cake *c, uint64_t r, uint64_t now, uint64_t old)
{
	struct cake_tin *t = c->tins;
	uint32_t i, n = c->tin_scan < CAKE_MAX_TINS ? c->tin_scan : CAKE_MAX_TINS;

	if (c->p.diffserv == SCHED_PRECEDENCE || c->p.diffserv == SCHED_DIFFSERV8) {
		uint64_t rate = r;

		cake_tin_new_rate(c, &t[0], r, now, old, r);
		for (i = 1; i < n; i++) {
			rate = (rate * 7) >> 3;
			cake_tin_new_rate(c, &t[i], rate, now, old, r);
		}
	} else {
		for (i = 0; i < n; i++) /* n >= tin_cnt >= 1: tin 0 is set */
			cake_tin_new_rate(c, &t[i], r >> t[i].rate_shift, now, old, r);
	}
	c->rate = t[0].rate;
	/* sched_lag_limit: tin 0's MTU time is the link's (same rate, same MTU). */
	c->lag = c->p.lag_limit_ns != SCHED_LAG_AUTO             ? c->p.lag_limit_ns
		 : t[0].cparams.mtu_time > SCHED_LAG_AUTO_MIN_NS ? t[0].cparams.mtu_time
								 : SCHED_LAG_AUTO_MIN_NS;
}

/*
 * The buffer limit (sch_cake's cake_drop()). Linux derives "4 x rate x rtt, at least 4 MiB, at
 * most 10240 x mtu" and charges skb truesize, which for a full-size frame
 * is about its length: the limit means that much traffic and at most 10240
 * full-size packets. Here every packet pins a whole mbuf (pkt_mem, ~2.4 KB,
 * more than a 1514-byte frame) whatever its length, so the same byte
 * figures would admit only ~6400 packets of any size: 3.3 ms of 64-byte
 * frames at 1 Gbit/s, less than target, and the overflow that follows
 * feeds BLUE. A derived limit is therefore counted in packets as
 * Linux counts full-size ones and priced at pkt_mem each: the figures above
 * times pkt_mem / mtu. An explicit memlimit is taken as is.
 */
static uint64_t
cake_limit_bytes(const struct sched_params *p)
{
	uint64_t limit, mtu = p->mtu; /* >= SHAPER_MTU_MIN, see cake_check */
	uint64_t per_pkt = p->pkt_mem > mtu ? p->pkt_mem : mtu;

	/* Linux caps at max(10240 x mtu, memlimit): an explicit memlimit stands. */
	if (p->memlimit != 0)
		return p->memlimit;
	if (p->rate == 0) {
		limit = UINT64_MAX;
	} else {
		/* 4 x rate x rtt, split so that huge rates cannot overflow. */
		limit = p->rate / 250000 * p->rtt_us + p->rate % 250000 * p->rtt_us / 250000;
		if (limit < (4u << 20))
			limit = 4u << 20;
	}
	if (limit > (uint64_t)CAKE_PKT_LIMIT * mtu)
		limit = (uint64_t)CAKE_PKT_LIMIT * mtu;
	return limit / mtu * per_pkt + limit % mtu * per_pkt / mtu;
}

static void
cake_config_limit(struct cake *c)
{
	c->buffer_limit = cake_limit_bytes(&c->p);
}

/* Enqueue drops until the memory charged (>= truesize a packet) is within the limit. */
static uint64_t
cake_max_packets(const struct sched_params *p, uint32_t truesize)
{
	return cake_limit_bytes(p) / truesize + 1;
}

static int
cake_check(const struct sched_params *p, char *err, size_t errlen)
{
	if (p->mtu < SHAPER_MTU_MIN || p->mtu > SHAPER_MTU_MAX) {
		SCHED_ERR(err, errlen, "mtu %u out of range %u..%u", p->mtu, SHAPER_MTU_MIN,
			  SHAPER_MTU_MAX);
		return -EINVAL;
	}
	if ((unsigned int)p->diffserv > SCHED_PRECEDENCE) {
		SCHED_ERR(err, errlen, "unknown diffserv mode %d", (int)p->diffserv);
		return -EINVAL;
	}
	if ((unsigned int)p->isolation > SCHED_TRIPLE_ISOLATE) {
		SCHED_ERR(err, errlen, "unknown isolation mode %d", (int)p->isolation);
		return -EINVAL;
	}
	if (p->overhead < -64 || p->overhead > 256) {
		SCHED_ERR(err, errlen, "overhead %d out of range -64..256", p->overhead);
		return -EINVAL;
	}
	if (p->mpu > 256) {
		SCHED_ERR(err, errlen, "mpu %u out of range 0..256", p->mpu);
		return -EINVAL;
	}
	if ((unsigned int)p->framing > SCHED_FRAMING_PTM) {
		SCHED_ERR(err, errlen, "unknown framing %d", (int)p->framing);
		return -EINVAL;
	}
	if ((unsigned int)p->ack_filter > SCHED_ACK_FILTER_AGGRESSIVE) {
		SCHED_ERR(err, errlen, "unknown ack-filter mode %d", (int)p->ack_filter);
		return -EINVAL;
	}
	if (p->l4s && (p->l4s_step_us == 0 || p->l4s_step_us > 1000000)) {
		SCHED_ERR(err, errlen, "l4s step %u us out of range 1..1000000", p->l4s_step_us);
		return -EINVAL;
	}
	if (p->rate > (UINT64_MAX >> 20)) {
		SCHED_ERR(err, errlen, "rate %llu bytes/s too large", (unsigned long long)p->rate);
		return -EINVAL;
	}
	if (p->cake_queues != 0 &&
	    (p->cake_queues < CAKE_QUEUES_MIN || p->cake_queues > CAKE_QUEUES ||
	     (p->cake_queues & (p->cake_queues - 1)) != 0)) {
		SCHED_ERR(err, errlen, "cake queues %u: a power of two %u..%u", p->cake_queues,
			  CAKE_QUEUES_MIN, CAKE_QUEUES);
		return -EINVAL;
	}
	return 0;
}

/* Copy p, bumping zero times to 1 µs as tc does. */
static void
cake_set_params(struct cake *c, const struct sched_params *p)
{
	c->p = *p;
	if (c->p.rtt_us == 0)
		c->p.rtt_us = 1;
	if (c->p.target_us == 0)
		c->p.target_us = 1;
	c->target_ns = (uint64_t)c->p.target_us * 1000;
	c->interval_over_target_ns = (uint64_t)c->p.rtt_us * 1000 - c->target_ns;
	c->flow_mode = (uint8_t)p->isolation;
	c->dsrc = cake_dsrc(c->flow_mode);
	c->ddst = cake_ddst(c->flow_mode);
	c->len_plain = !p->overhead_mode && p->overhead == 0 && p->mpu == 0 &&
		       p->framing == SCHED_FRAMING_NONE;
}

static void
cake_reset_size_stats(struct cake *c)
{
	c->min_netlen = c->min_adjlen = 65535;
	c->max_netlen = c->max_adjlen = 0;
}

/*
 * Keep b's bit in tins_with_flows after its sparse or bulk count moved: the
 * choice of tin then reads only the tins that have flows (each tin is
 * another cache line, and a subscriber's CAKE usually uses one or two).
 */
static inline void
cake_tin_flows(struct cake *c, const struct cake_tin *b)
{
	if (b->sparse_flow_count + b->bulk_flow_count != 0)
		c->tins_with_flows |= b->bit;
	else
		c->tins_with_flows &= (uint8_t)~b->bit;
}

/* Forget all flow state of an empty tin. */
static void
cake_tin_reset(struct cake *c, struct cake_tin *b)
{
	uint32_t i;

	for (i = 0; i < c->nq; i++) {
		struct cake_flow *f = &b->flows[i];

		sh_pkt_list_init(&f->pkts);
		memset(&f->cvars, 0, sizeof(f->cvars));
		f->deficit = 0;
		f->backlog = 0;
		f->classic = 0;
		f->next = f->prev = CAKE_NIL;
		f->set = CAKE_SET_NONE;
		f->list = CAKE_LIST_NONE;
		f->flags = 0;
		b->srchost_bulk[i] = 0;
		b->dsthost_bulk[i] = 0;
	}
	memset(b->busy, 0, c->nq / CAKE_SET_WAYS);
	for (i = 0; i < CAKE_LIST_COUNT; i++)
		b->lists[i].head = b->lists[i].tail = CAKE_NIL;
	b->sparse_flow_count = b->bulk_flow_count = 0;
	cake_tin_flows(c, b);
	b->decaying_flow_count = b->unresponsive_flow_count = 0;
	b->backlog = 0;
	b->qlen = 0;
	b->tin_deficit = 0;
}

/* After tin_scan or the clocks past it changed: see idle_clock_max. */
static void
cake_note_idle_clocks(struct cake *c)
{
	uint32_t i;

	c->idle_clock_max = 0;
	for (i = c->tin_scan; i < c->tin_alloc; i++)
		if (c->tins[i].time_next_packet > c->idle_clock_max)
			c->idle_clock_max = c->tins[i].time_next_packet;
}

static void
cake_update_scan(struct cake *c)
{
	uint32_t i, n = c->tin_cnt;

	for (i = c->tin_cnt; i < c->tin_alloc; i++)
		if (c->tins[i].qlen != 0)
			n = i + 1;
	/* Retired tins that emptied lose their (decaying) flow state. */
	for (i = n; i < c->tin_scan; i++)
		cake_tin_reset(c, &c->tins[i]);
	if (n != c->tin_scan)
		c->overflow_timeout = 0; /* the heap's size follows tin_scan: rebuild */
	c->tin_scan = n;
	cake_note_idle_clocks(c);
	if (c->cur_tin >= n)
		c->cur_tin = 0;
}

/* A zeroed struct cake -> as configured by p, empty. */
static void
cake_init(struct cake *c, const struct sched_params *p)
{
	uint32_t i;

	cake_set_params(c, p);
	cake_seed(c, p->seed);
	c->quantum_div[0] = UINT16_MAX;
	for (i = 1; i <= CAKE_HOST_MAX; i++)
		c->quantum_div[i] = (uint16_t)(65535 / i);
	for (i = 0; i < c->tin_alloc; i++)
		cake_tin_reset(c, &c->tins[i]);
	cake_config_tins(c, c->p.rate);
	c->tin_scan = c->tin_cnt;
	cake_note_idle_clocks(c);
	cake_config_limit(c);
	cake_reset_size_stats(c);
}

static void *
cake_create(const struct sched_params *p, const struct sched_alloc *a, char *err, size_t errlen)
{
	struct cake *c;

	if (cake_check(p, err, errlen) != 0)
		return NULL;
	c = sched_zalloc(a, cake_block_bytes(sched_cake_queues(p), sched_cake_tins(p)));
	if (c == NULL) {
		SCHED_ERR(err, errlen, "out of memory");
		return NULL;
	}
	cake_layout(c, p);
	cake_init(c, p);
	return c;
}

/* As a fresh cake_create(p) in the same memory (the caller checked it is empty). */
static int
cake_reinit(void *impl, const struct sched_params *p, char *err, size_t errlen)
{
	struct cake *c = impl;

	if (cake_check(p, err, errlen) != 0)
		return -EINVAL;
	if (sched_cake_queues(p) != c->nq || sched_cake_tins(p) != c->tin_alloc) {
		SCHED_ERR(err, errlen,
			  "made with %u tins of %u queues; these params need %u of %u (make a new one)",
			  c->tin_alloc, c->nq, sched_cake_tins(p), sched_cake_queues(p));
		return -EINVAL;
	}
	memset(c, 0, c->bytes);
	cake_layout(c, p);
	cake_init(c, p);
	return 0;
}

static void
cake_destroy(void *impl, const struct sched_alloc *a)
{
	sched_mfree(a, impl);
}

/* ---------------------------------------------------------------- enqueue */

/*
 * After a reconfiguration (no time is passed to update) clocks left in the
 * past, e.g. from an unshaped period, would let a backlog out as a burst
 * while they catch up: restart them at now.
 */
static void
cake_resync(struct cake *c, uint64_t now)
{
	/*
	 * A clock left far ahead by a slower old rate would stall the new one:
	 * no clock may be further ahead than one MTU at its new rate. Clocks
	 * behind now come up to now (no credit for the past).
	 */
	uint64_t cap = now + sched_rate_ns(&c->rate, c->p.mtu);
	uint32_t i;

	c->resync = false;
	if (c->time_next_packet < now)
		c->time_next_packet = now;
	if (c->time_next_packet > cap)
		c->time_next_packet = cap;
	if (c->failsafe_next_packet < now)
		c->failsafe_next_packet = now;
	if (c->failsafe_next_packet > cap)
		c->failsafe_next_packet = cap;
	for (i = 0; i < c->tin_alloc; i++) {
		struct cake_tin *b = &c->tins[i];
		uint64_t tcap = now + sched_rate_ns(&b->rate, c->p.mtu);

		if (b->time_next_packet < now)
			b->time_next_packet = now;
		if (b->time_next_packet > tcap)
			b->time_next_packet = tcap;
	}
	cake_note_idle_clocks(c);
}

/*
 * The worker was away (not scheduled) while packets waited: the clocks lag
 * now by more than the limit. Write the lost time off rather than pay it
 * back as a back-to-back burst; tin clocks lose the same time so no tin
 * gains priority from the stall.
 */
static void
cake_write_off_lag(struct cake *c, uint64_t now)
{
	uint64_t skipped = sched_clamp_lag(&c->time_next_packet, now, c->lag);
	uint32_t i;

	if (skipped == 0)
		return;
	c->lag_skips++;
	c->lag_skipped_ns += skipped;
	sched_clamp_lag(&c->failsafe_next_packet, now, c->lag);
	for (i = 0; i < c->tin_scan && i < CAKE_MAX_TINS; i++)
		sched_clamp_lag(&c->tins[i].time_next_packet, now, c->lag);
}

/* Remove the head packet of a flow and account for it. */
static inline struct sh_pkt *
cake_flow_pop(struct cake *c, struct cake_tin *b, struct cake_flow *f)
{
	struct sh_pkt *pkt = sh_pkt_list_pop(&f->pkts);

	if (pkt == NULL)
		return NULL;
	f->backlog -= pkt->len;
	b->backlog -= pkt->len;
	b->qlen--;
	c->backlog -= pkt->len;
	c->qlen--;
	c->buffer_used -= pkt->mem;
	if (c->p.l4s && !(pkt->flags & SH_PKT_L4S))
		f->classic--;
	return pkt; /* the heap key stays as an upper bound */
}

/* Drop one packet from the head of the fattest queue (sch_cake's cake_drop()). */
static __attribute__((noinline)) struct sh_pkt *
cake_drop_fattest(struct cake *c, uint64_t now, struct sh_pkt_list *dropped)
{
	struct cake_tin *b;
	struct cake_flow *f;
	struct sh_pkt *pkt;
	uint16_t e;

	if (c->overflow_timeout == 0)
		cake_heap_rebuild(c);
	c->overflow_timeout = CAKE_OVERFLOW_TIMEOUT;
	/* Make the root exact; once it is, it is the fattest queue. */
	for (;;) {
		e = c->heap[0].id;
		b = &c->tins[e >> c->qshift];
		f = &b->flows[e & c->qmask];
		if (c->heap[0].key == f->backlog)
			break;
		c->heap[0].key = f->backlog;
#ifdef CAKE_HEAP_SSE41
		if (c->heap_sse41) {
			cake_heap_down_sse41(c, 0);
			continue;
		}
#endif
		cake_heap_down(c, 0);
	}
	pkt = cake_flow_pop(c, b, f);
	if (pkt == NULL) {
		c->overflow_timeout = 0; /* heap out of date: rebuild next time */
		return NULL;
	}
	if (cobalt_queue_full(&f->cvars, &b->cparams, now))
		b->unresponsive_flow_count++;
	b->drops++;
	b->drop_overlimit++;
	if (c->p.ingress)
		cake_advance_shaper(c, b, pkt, now, true);
	pkt->drop_reason = SHAPER_DROP_OVERFLOW;
	sh_pkt_list_push(dropped, pkt);
	return pkt;
}

static void
cake_ack_filter(struct cake *c, struct cake_tin *b, struct cake_flow *f, struct sh_pkt *pkt,
		uint64_t now, struct sh_pkt_list *dropped)
{
	struct sh_pkt *prev = NULL;
	struct sh_pkt *ack = ack_filter_find(f->pkts.head, pkt, c->p.ack_filter, &prev);

	if (ack == NULL || ack == pkt)
		return;
	sh_pkt_list_unlink(&f->pkts, prev, ack);
	f->backlog -= ack->len;
	b->backlog -= ack->len;
	b->qlen--;
	c->backlog -= ack->len;
	c->qlen--;
	c->buffer_used -= ack->mem;
	if (c->p.l4s && !(ack->flags & SH_PKT_L4S))
		f->classic--;
	b->ack_drops++;
	if (c->p.ingress)
		cake_advance_shaper(c, b, ack, now, true);
	ack->drop_reason = SHAPER_DROP_ACK_FILTER;
	sh_pkt_list_push(dropped, ack);
}

/* The tin pkt goes to: its DSCP's, or the first for a DSCP the mode leaves out. */
static inline uint32_t
cake_tin_of(const struct cake *c, const struct sh_pkt *pkt)
{
	uint32_t tin = c->tin_map[pkt->dscp & 63];

	return tin < c->tin_cnt ? tin : 0;
}

static inline __attribute__((always_inline)) int
cake_enqueue_one(struct cake *c, struct sh_pkt *pkt, uint64_t now, uint64_t stamp,
		 struct sh_pkt_list *dropped)
{
	struct cake_tin *b;
	struct cake_flow *f;
	uint32_t tin;
	uint16_t idx;
	bool self_dropped = false;

	if (c->resync)
		cake_resync(c, now);
	if (c->p.wash && (pkt->dscp & 63) != 0)
		classify_set_dscp(pkt, 0); /* the original DSCP still classifies */
	tin = cake_tin_of(c, pkt);
	b = &c->tins[tin];
	idx = cake_lookup(c, b, pkt);
	f = &b->flows[idx];

	/* No credit for idle time: pull stale clocks up to now. */
	if (b->backlog == 0 && c->rate.rate != 0) {
		if (b->time_next_packet < now)
			b->time_next_packet = now;
		if (c->qlen == 0) {
			if (c->time_next_packet < now) {
				c->time_next_packet = now;
				c->failsafe_next_packet = now;
			} else if (c->time_next_packet > now && c->failsafe_next_packet > now) {
				c->overlimits++;
			}
		}
	}

	pkt->enq_ns = stamp;
	pkt->tin = (uint8_t)tin;
	pkt->queue = idx;
	pkt->adj_len = cake_overhead(c, pkt);
	if (c->p.l4s)
		l4s_classify(pkt, &f->flags, CAKE_FLOW_CLASSIC, &f->classic, &b->ect1_packets);
	sh_pkt_list_push(&f->pkts, pkt);
	f->backlog += pkt->len;
	b->backlog += pkt->len;
	b->qlen++;
	c->backlog += pkt->len;
	c->qlen++;
	c->buffer_used += pkt->mem;
	b->packets++;
	b->bytes += pkt->len;
	if (pkt->len > b->max_len)
		b->max_len = pkt->len;

	if (c->p.ack_filter != SCHED_ACK_FILTER_OFF && f->pkts.head != pkt)
		cake_ack_filter(c, b, f, pkt, now, dropped);
	if (c->overflow_timeout != 0) /* the heap is kept only while overflows are recent */
		cake_backlog_grew(c, cake_flow_id(c, tin, idx), f);

	if (f->set == CAKE_SET_NONE || f->set == CAKE_SET_DECAYING) {
		if (f->set == CAKE_SET_DECAYING) {
			b->decaying_flow_count--;
			cake_list_unlink(b, idx);
		} else {
			cake_busy_set(b, idx, true); /* an idle flow is in no list */
		}
		cake_list_append(b, CAKE_LIST_NEW, idx);
		f->set = CAKE_SET_SPARSE;
		b->sparse_flow_count++;
		c->tins_with_flows |= b->bit;
		f->deficit = cake_flow_quantum(c, b, f);
	} else if (f->set == CAKE_SET_SPARSE_WAIT) {
		f->set = CAKE_SET_BULK;
		b->sparse_flow_count--;
		b->bulk_flow_count++;
		cake_host_bulk_inc(c, b, f);
	}

	if (c->buffer_used > c->buffer_max_used)
		c->buffer_max_used = c->buffer_used;
	while (c->buffer_used > c->buffer_limit) {
		struct sh_pkt *d = cake_drop_fattest(c, now, dropped);

		if (d == NULL)
			break;
		if (d == pkt)
			self_dropped = true;
	}
	return self_dropped ? 1 : 0;
}

static int
cake_enqueue(void *impl, struct sh_pkt *pkt, uint64_t now, uint64_t stamp,
	     struct sh_pkt_list *dropped)
{
	struct cake *c = impl;

	if (c->len_plain)
		cake_note_plain_sizes(c, &pkt, 1);
	return cake_enqueue_one(c, pkt, now, stamp, dropped);
}

/* Prefetch lines [from, to] of the object at base. */
static inline void
cake_prefetch_span(const void *base, size_t from, size_t to)
{
	for (size_t off = from & ~(size_t)63; off <= to; off += 64)
		__builtin_prefetch((const char *)base + off, 1);
}

/* The lines of struct cake both an enqueue and a dequeue read. */
static inline void
cake_prefetch_hot(const struct cake *c)
{
	cake_prefetch_span(c, offsetof(struct cake, tin_map), offsetof(struct cake, resync));
	cake_prefetch_span(c, offsetof(struct cake, p.overhead_mode),
			   offsetof(struct cake, p.vlan_hosts));
	__builtin_prefetch(&c->rng, 1); /* and the frame size statistics */
	__builtin_prefetch(&c->quantum_div[1]);
}

/*
 * sched_prefetch_enqueue's steps for a CAKE: 0 the lines of struct cake an
 * enqueue reads, 1 (from those) pkt's tin and its queue's tag, busy bit and
 * flow, and the host slots a new flow takes, found where cake_layout put
 * them rather than through the tin's pointers, which would be a step more.
 * A packet that lands in another way of the set still waits.
 */
static void
cake_prefetch_enqueue(const void *impl, const struct sh_pkt *pkt, unsigned int step)
{
	const struct cake *c = impl;
	const struct cake_tin *b;
	struct cake_tin_layout l;
	uint32_t idx, tin;
	const char *m;

	if (step == 0) {
		cake_prefetch_hot(c);
		return;
	}
	if (step != 1)
		return;
	tin = cake_tin_of(c, pkt);
	b = &c->tins[tin];
	__builtin_prefetch(b, 1);
	__builtin_prefetch(&b->flows, 1);
	__builtin_prefetch(&b->packets, 1);
	l = cake_tin_layout(c->qmask + 1);
	m = cake_tin_base(c, tin, l.bytes);
	idx = c->flow_mode == SCHED_FLOWBLIND ? 0 : cake_queue_hash(c, pkt) & c->qmask;
	__builtin_prefetch(m + l.tags + idx * sizeof(uint32_t), 1);
	__builtin_prefetch(m + l.busy + idx / CAKE_SET_WAYS, 1);
	cake_prefetch_span(m + l.flows + idx * sizeof(struct cake_flow), 0,
			   sizeof(struct cake_flow) - 1);
	if (c->dsrc || c->ddst) {
		uint32_t mix = cake_vlan_mix(c, pkt);

		if (c->dsrc) {
			idx = cake_vlan_host(pkt->src_hash, mix) & c->qmask;
			__builtin_prefetch(m + l.srchost_tag + idx * sizeof(uint32_t), 1);
			__builtin_prefetch(m + l.srchost_bulk + idx * sizeof(uint16_t), 1);
		}
		if (c->ddst) {
			idx = cake_vlan_host(pkt->dst_hash, mix) & c->qmask;
			__builtin_prefetch(m + l.dsthost_tag + idx * sizeof(uint32_t), 1);
			__builtin_prefetch(m + l.dsthost_bulk + idx * sizeof(uint16_t), 1);
		}
	}
}

/*
 * sched_prefetch_dequeue's steps for a CAKE: 0 struct cake, 1 what a
 * dequeue reads of each tin with flows, 2 the flow at the head of their
 * lists, 3 that flow's head packet, 4 the sojourn bucket it will count in.
 */
static void
cake_prefetch_dequeue(const void *impl, uint64_t now, unsigned int step)
{
	const struct cake *c = impl;

	if (step == 0) {
		cake_prefetch_hot(c);
		return;
	}
	for (uint32_t m = c->tins_with_flows & ((1u << c->tin_scan) - 1); m != 0; m &= m - 1) {
		const struct cake_tin *b = &c->tins[__builtin_ctz(m)];

		if (step == 1) {
			__builtin_prefetch(b, 1);
			__builtin_prefetch(&b->flows);
			__builtin_prefetch(&b->rate);
			__builtin_prefetch(&b->peak_delay, 1);
			continue;
		}
		for (unsigned int l = 0; l < CAKE_LIST_COUNT; l++) {
			const struct cake_flow *f;

			if (b->lists[l].head == CAKE_NIL)
				continue;
			f = &b->flows[b->lists[l].head];
			if (step == 2)
				cake_prefetch_span(f, 0, sizeof(*f) - 1);
			else if (f->pkts.head != NULL && step == 3)
				__builtin_prefetch(f->pkts.head);
			else if (f->pkts.head != NULL)
				__builtin_prefetch(&b->sojourn[sched_sojourn_bucket(
								   now - f->pkts.head->enq_ns)],
						   1);
			break;
		}
	}
}

/* A burst in one call: one function entry instead of one per packet. */
static unsigned int
cake_enqueue_burst(void *impl, struct sh_pkt *const *pkts, unsigned int n, uint64_t now,
		   bool stamped, struct sh_pkt_list *dropped)
{
	struct cake *c = impl;
	unsigned int i, self = 0;

	if (c->len_plain)
		cake_note_plain_sizes(c, pkts, n);
	if (stamped) {
		for (i = 0; i < n; i++)
			self += (unsigned int)cake_enqueue_one(
					c, pkts[i], now,
					pkts[i]->enq_ns < now ? pkts[i]->enq_ns : now, dropped);
		return self;
	}
	for (i = 0; i < n; i++)
		self += (unsigned int)cake_enqueue_one(c, pkts[i], now, now, dropped);
	return self;
}

/* ---------------------------------------------------------------- dequeue */

static bool
cake_mark(void *pkt)
{
	return classify_set_ce(pkt) != 0;
}

/*
 * l4s: CE-mark an L4S packet that waited past the step (RFC 9331's
 * immediate, shallow signal), whatever COBALT's state, which still
 * judges every packet first: an ECT(1) flow that ignores its marks builds
 * a queue, and COBALT and BLUE then treat it as any unresponsive flow.
 *
 * A queue holding classic packets too (a tunnel whose outer header
 * carries its inner flows' ECN fields, RFC 6040) is one FIFO: its delay is
 * set by its classic traffic at COBALT's target, so a step would mark
 * every L4S packet and starve the L4S flow. RFC 9331 section 5.4.2 asks a
 * shared queue to couple L4S marking to its classic signal rather than
 * mark it on its own; CAKE couples them as one: while a queue holds any
 * classic packet its L4S packets get COBALT's marks only, as ECT(0) ones
 * do (the sender sees a classic ECN bottleneck, RFC 9331 section 4.3), and
 * the step applies again once no classic packet is queued in it.
 */
static inline void
cake_l4s_step(struct cake_tin *b, const struct cake_flow *f, struct sh_pkt *pkt, uint64_t now)
{
	if (f->classic == 0 && !f->cvars.ecn_marked && now - pkt->enq_ns > b->l4s_step &&
	    classify_set_ce(pkt) != 0)
		b->step_marks++;
}

/* Shaped: highest-index tin already due, else the one due soonest (sch_cake's tin choice in
 * cake_dequeue()). */
static struct cake_tin *
cake_pick_tin_shaped(struct cake *c, uint64_t now)
{
	int64_t best = INT64_MAX;
	struct cake_tin *pick = NULL;
	uint32_t m = c->tins_with_flows & ((1u << c->tin_scan) - 1);

	/* The tins with flows in index order, as a scan of all would visit them. */
	for (; m != 0; m &= m - 1) {
		struct cake_tin *b = &c->tins[__builtin_ctz(m)];
		int64_t d;

		d = (int64_t)(b->time_next_packet - now);
		if (d <= 0 || d <= best) {
			best = d;
			pick = b;
		}
	}
	return pick;
}

/* Unshaped: weighted DRR over tins by tin_quantum. */
static struct cake_tin *
cake_pick_tin_drr(struct cake *c)
{
	uint32_t steps = 0;
	bool any = false;

	for (;;) {
		struct cake_tin *b = &c->tins[c->cur_tin];
		bool busy = b->sparse_flow_count + b->bulk_flow_count != 0;

		if (busy && b->tin_deficit >= 0)
			return b;
		any |= busy;
		if (b->tin_deficit <= 0)
			b->tin_deficit += b->tin_quantum;
		if (++c->cur_tin >= c->tin_scan)
			c->cur_tin = 0;
		if (++steps >= c->tin_scan && !any)
			return NULL;
	}
}

/*
 * A flow found empty: decay its AQM state or retire it (cake_dequeue()'s empty-flow branch).
 * idx is the head of its list, as dequeue found it.
 */
static void
cake_flow_empty(struct cake *c, struct cake_tin *b, uint16_t idx, uint64_t now)
{
	struct cake_flow *f = &b->flows[idx];

	if (cobalt_queue_empty(&f->cvars, &b->cparams, now))
		b->unresponsive_flow_count--;
	if (cobalt_busy(&f->cvars, now)) {
		cake_list_head_to_tail(b, CAKE_LIST_DECAYING, idx);
		if (f->set == CAKE_SET_BULK) {
			b->bulk_flow_count--;
			cake_host_bulk_dec(c, b, f);
			b->decaying_flow_count++;
		} else if (f->set == CAKE_SET_SPARSE || f->set == CAKE_SET_SPARSE_WAIT) {
			b->sparse_flow_count--;
			b->decaying_flow_count++;
		}
		f->set = CAKE_SET_DECAYING;
	} else {
		cake_list_unlink_head(b, idx);
		if (f->set == CAKE_SET_SPARSE || f->set == CAKE_SET_SPARSE_WAIT) {
			b->sparse_flow_count--;
		} else if (f->set == CAKE_SET_BULK) {
			b->bulk_flow_count--;
			cake_host_bulk_dec(c, b, f);
		} else if (f->set == CAKE_SET_DECAYING) {
			b->decaying_flow_count--;
		}
		f->set = CAKE_SET_NONE;
		f->flags &= (uint8_t)~CAKE_FLOW_CLASSIC; /* the next flow here has no history */
		cake_busy_set(b, idx, false);
	}
	cake_tin_flows(c, b);
}

static struct sh_pkt *
cake_dequeue(void *impl, uint64_t now, struct sh_pkt_list *dropped)
{
	struct cake *c = impl;
	struct cake_tin *b;
	struct cake_flow *f;
	struct sh_pkt *pkt;
	bool first = true;
	/* Fixed at create; read once (the stores below could alias it). */
	const uint32_t max_restarts = 2 * c->slots + 16;
	uint32_t len, restarts = 0;
	uint16_t idx;

	if (c->resync)
		cake_resync(c, now);
	if (c->tin_scan > c->tin_cnt)
		cake_update_scan(c);
begin:
	/* Each restart retires an empty flow, so this bound is never hit
	 * unless the state is corrupt; then refuse rather than spin. */
	if (c->qlen == 0 || ++restarts > max_restarts)
		return NULL;
	if (c->rate.rate != 0 && c->time_next_packet > now && c->failsafe_next_packet > now) {
		c->overlimits++;
		return NULL;
	}
	if (c->rate.rate != 0 && now > c->lag && c->time_next_packet < now - c->lag)
		cake_write_off_lag(c, now);
	b = c->rate.rate != 0 ? cake_pick_tin_shaped(c, now) : cake_pick_tin_drr(c);
	if (b == NULL)
		return NULL;

retry:
	/* A decaying flow gets one look per call so its state can relax. */
	if (first && b->lists[CAKE_LIST_DECAYING].head != CAKE_NIL)
		idx = b->lists[CAKE_LIST_DECAYING].head;
	else if (b->lists[CAKE_LIST_NEW].head != CAKE_NIL)
		idx = b->lists[CAKE_LIST_NEW].head;
	else if (b->lists[CAKE_LIST_OLD].head != CAKE_NIL)
		idx = b->lists[CAKE_LIST_OLD].head;
	else if (b->lists[CAKE_LIST_DECAYING].head != CAKE_NIL)
		idx = b->lists[CAKE_LIST_DECAYING].head;
	else
		goto begin;
	first = false;
	f = &b->flows[idx];

	if (f->deficit <= 0) {
		/* Spent its credit: join (or stay in) the bulk rotation. */
		if (f->set == CAKE_SET_SPARSE) {
			if (f->pkts.head != NULL) {
				b->sparse_flow_count--;
				b->bulk_flow_count++;
				cake_host_bulk_inc(c, b, f);
				f->set = CAKE_SET_BULK;
			} else {
				f->set = CAKE_SET_SPARSE_WAIT;
			}
		}
		f->deficit += cake_flow_quantum(c, b, f);
		cake_list_head_to_tail(b, CAKE_LIST_OLD, idx);
		goto retry;
	}

	for (;;) {
		pkt = cake_flow_pop(c, b, f);
		if (pkt == NULL) {
			cake_flow_empty(c, b, idx, now);
			/*
			 * Egress: no clock, tin deficit or other tin moved since
			 * b was picked, so while b still has flows (and packets
			 * remain) tin selection would pick b again: skip it.
			 */
			if (!c->p.ingress && c->qlen != 0 &&
			    b->sparse_flow_count + b->bulk_flow_count != 0 &&
			    ++restarts <= max_restarts)
				goto retry;
			goto begin;
		}
		if (!cobalt_should_drop(&f->cvars, &b->cparams, now, pkt->enq_ns,
					c->p.ingress ? b->bulk_flow_count : 0,
					c->p.ecn ? cake_mark : NULL, pkt, cake_rand32, c) ||
		    f->pkts.head == NULL)
			break; /* the last packet of a flow is never dropped */
		b->drops++;
		pkt->drop_reason = SHAPER_DROP_AQM;
		sh_pkt_list_push(dropped, pkt);
		if (c->p.ingress) {
			/* The dropped packet already used the link. */
			len = cake_advance_shaper(c, b, pkt, now, true);
			f->deficit -= (int32_t)len;
			b->tin_deficit -= len;
			goto retry;
		}
	}

	if (f->cvars.ecn_marked) {
		b->ecn_marks++;
		c->ecn_marked++;
	}
	if (c->p.l4s && (pkt->flags & SH_PKT_L4S))
		cake_l4s_step(b, f, pkt, now);
	{
		uint64_t delay = now - pkt->enq_ns;
		unsigned int bucket = sched_sojourn_bucket(delay);

		b->avg_delay = cake_ewma(b->avg_delay, delay, 8);
		b->peak_delay = cake_ewma(b->peak_delay, delay, delay > b->peak_delay ? 2 : 8);
		b->base_delay = cake_ewma(b->base_delay, delay, delay < b->base_delay ? 2 : 8);
		b->sojourn[bucket].all++;
		if (f->list == CAKE_LIST_NEW)
			b->sojourn[bucket].sparse++;
	}
	len = cake_advance_shaper(c, b, pkt, now, false);
	f->deficit -= (int32_t)len;
	b->tin_deficit -= len;
	if (c->overflow_timeout != 0)
		c->overflow_timeout--;
	return pkt;
}

static uint64_t
cake_next_time(const void *impl, uint64_t now)
{
	const struct cake *c = impl;
	uint64_t t;

	if (c->qlen == 0)
		return UINT64_MAX;
	if (c->rate.rate == 0 || c->resync)
		return now; /* after an update the clocks are recomputed at dequeue */
	t = c->time_next_packet < c->failsafe_next_packet ? c->time_next_packet
							  : c->failsafe_next_packet;
	return t > now ? t : now;
}

/* ----------------------------------------------------------------- update */

/*
 * l4s switched: each queue's count of classic packets from the verdicts its
 * packets carry (0 with l4s off, where nothing keeps it), as a pop will
 * uncount them: packets queued while it was off count as classic.
 */
static void
cake_l4s_recount(struct cake *c, bool on)
{
	for (uint32_t i = 0; i < c->tin_alloc; i++) {
		struct cake_tin *b = &c->tins[i];

		for (uint32_t j = 0; j < c->nq; j++) {
			struct cake_flow *f = &b->flows[j];

			f->classic = 0;
			for (const struct sh_pkt *q = f->pkts.head; on && q != NULL; q = q->next)
				if (!(q->flags & SH_PKT_L4S))
					f->classic++;
		}
	}
}

static int
cake_update(void *impl, const struct sched_params *p, char *err, size_t errlen)
{
	struct cake *c = impl;
	/* Either changes what a host (or a host mode's flow) is. */
	bool iso_changed = p->isolation != c->p.isolation || p->vlan_hosts != c->p.vlan_hosts;
	uint32_t i, j;

	if (cake_check(p, err, errlen) != 0)
		return -EINVAL;
	if (sched_cake_queues(p) != c->nq) {
		SCHED_ERR(err, errlen, "cake queues: %u per tin, fixed when it was made", c->nq);
		return -EINVAL;
	}
	if (cake_mode_tins(p->diffserv) > c->tin_alloc) {
		SCHED_ERR(err, errlen,
			  "diffserv mode %d needs %u tins; this CAKE was made with %u (for its "
			  "mode only)",
			  (int)p->diffserv, cake_mode_tins(p->diffserv), c->tin_alloc);
		return -EINVAL;
	}
	if (p->overhead_mode != c->p.overhead_mode || p->overhead != c->p.overhead)
		cake_reset_size_stats(c);
	if (p->l4s != c->p.l4s)
		cake_l4s_recount(c, p->l4s);
	cake_set_params(c, p);
	cake_config_tins(c, c->p.rate);
	cake_config_limit(c);
	if (iso_changed) {
		/*
		 * Host slots and bulk counts were kept for the old mode: clear
		 * them and let each flow reclaim its hosts on its next packet.
		 */
		for (i = 0; i < c->tin_alloc; i++) {
			struct cake_tin *b = &c->tins[i];

			memset(b->srchost_tag, 0, c->nq * sizeof(*b->srchost_tag));
			memset(b->dsthost_tag, 0, c->nq * sizeof(*b->dsthost_tag));
			memset(b->srchost_bulk, 0, c->nq * sizeof(*b->srchost_bulk));
			memset(b->dsthost_bulk, 0, c->nq * sizeof(*b->dsthost_bulk));
			for (j = 0; j < c->nq; j++)
				b->flows[j].flags |= CAKE_FLOW_REHOST;
		}
	}
	/* Packets stay in the tins they were queued in. */
	cake_update_scan(c);
	c->resync = true;
	return 0;
}

/*
 * The shard's share of the link changed: every clock keeps the part of its
 * wait not yet elapsed, rescaled to the new rate (tin thresholds move with
 * the rate, so one factor fits them all). The buffer limit stays that of
 * the configured rate.
 */
static void
cake_set_rate(void *impl, uint64_t rate, uint64_t now)
{
	struct cake *c = impl;
	uint64_t old = c->rate.rate;
	uint32_t i;

	sched_rescale_clock(&c->time_next_packet, now, old, rate);
	sched_rescale_clock(&c->failsafe_next_packet, now, old, rate);
	/* Past the scan only while one of those clocks is ahead (rare). */
	if (c->idle_clock_max > now) {
		for (i = c->tin_scan; i < c->tin_alloc; i++)
			sched_rescale_clock(&c->tins[i].time_next_packet, now, old, rate);
		/* Rescaling keeps the order of clocks: the max stays the max. */
		sched_rescale_clock(&c->idle_clock_max, now, old, rate);
	}
	cake_rates_set(c, rate, now, old); /* and the scanned tins' clocks */
}

static void
cake_flush(void *impl, struct sh_pkt_list *out)
{
	struct cake *c = impl;
	uint32_t i, j;

	/* Tins past tin_scan hold nothing and were reset when they left the scan. */
	for (i = 0; i < c->tin_scan; i++) {
		struct cake_tin *b = &c->tins[i];

		for (j = 0; j < c->nq && b->qlen != 0; j++) {
			struct sh_pkt *pkt;

			while ((pkt = cake_flow_pop(c, b, &b->flows[j])) != NULL)
				sh_pkt_list_push(out, pkt);
		}
		cake_tin_reset(c, b);
	}
	c->overflow_timeout = 0;
	c->tin_scan = c->tin_cnt;
	cake_note_idle_clocks(c);
	c->cur_tin = 0;
}

/* ------------------------------------------------------------------ stats */

static void
cake_get_stats(const void *impl, struct sched_stats *st)
{
	const struct cake *c = impl;
	uint32_t i;

	st->backlog_pkts = c->qlen;
	st->backlog_bytes = c->backlog;
	st->overlimits = c->overlimits;
	st->lag_skips = c->lag_skips;
	st->lag_skipped_ns = c->lag_skipped_ns;
	st->ecn_marked = c->ecn_marked;
	st->memory_used = c->buffer_max_used;
	st->memory_limit = c->buffer_limit;
	st->capacity_estimate = c->p.rate;
	st->min_network_size = c->min_netlen;
	st->max_network_size = c->max_netlen;
	st->min_adj_size = c->min_adjlen;
	st->max_adj_size = c->max_adjlen;
	st->avg_hdr_offset = (uint32_t)((c->avg_netoff + 0x8000) >> 16);
	st->tin_count = c->tin_cnt;
	for (i = 0; i < c->tin_cnt; i++) {
		const struct cake_tin *b = &c->tins[c->tin_order[i]];
		struct sched_tin_stats *t = &st->tins[i];

		snprintf(t->name, sizeof(t->name), "%s", b->name);
		t->threshold_rate = b->rate.rate;
		t->target_us = (uint32_t)(b->cparams.target / 1000);
		t->interval_us = (uint32_t)(b->cparams.interval / 1000);
		t->peak_delay_us = (uint32_t)(b->peak_delay / 1000);
		t->avg_delay_us = (uint32_t)(b->avg_delay / 1000);
		t->base_delay_us = (uint32_t)(b->base_delay / 1000);
		t->sent_packets = b->packets;
		t->sent_bytes = b->bytes;
		t->backlog_bytes = b->backlog;
		t->way_indirect_hits = b->way_hits;
		t->way_misses = b->way_misses;
		t->way_collisions = b->way_collisions;
		t->drops = b->drops;
		t->ecn_mark = b->ecn_marks;
		t->ack_drops = b->ack_drops;
		t->ect1_packets = b->ect1_packets;
		t->step_marks = b->step_marks;
		t->sparse_flows = b->sparse_flow_count + b->decaying_flow_count;
		t->bulk_flows = b->bulk_flow_count;
		t->unresponsive_flows = b->unresponsive_flow_count;
		t->max_pkt_len = b->max_len;
		t->flow_quantum = b->flow_quantum;
		for (unsigned int k = 0; k < SCHED_SOJOURN_BUCKETS; k++) {
			t->sojourn[k] = b->sojourn[k].all;
			t->sparse_sojourn[k] = b->sojourn[k].sparse;
		}
	}
}

static void
cake_reset_stats(void *impl)
{
	struct cake *c = impl;
	uint32_t i;

	c->overlimits = 0;
	c->lag_skips = c->lag_skipped_ns = 0;
	c->ecn_marked = 0;
	c->buffer_max_used = c->buffer_used;
	cake_reset_size_stats(c);
	for (i = 0; i < c->tin_alloc; i++) {
		struct cake_tin *b = &c->tins[i];

		b->packets = b->bytes = 0;
		b->way_directs = b->way_hits = b->way_misses = b->way_collisions = 0;
		b->drops = b->ecn_marks = b->ack_drops = b->drop_overlimit = 0;
		b->ect1_packets = b->step_marks = 0;
		b->peak_delay = b->avg_delay = b->base_delay = 0;
		b->max_len = 0;
		memset(b->sojourn, 0, sizeof(b->sojourn));
	}
}

static uint32_t
cake_backlog_pkts(const void *impl)
{
	return ((const struct cake *)impl)->qlen;
}

static uint64_t
cake_lag_skipped_ns(const void *impl)
{
	return ((const struct cake *)impl)->lag_skipped_ns;
}

/*
 * Up to max packets in flush order (queue by queue, each oldest first),
 * resuming where the last call stopped. The flows stay in their lists,
 * empty ones are retired by dequeue as usual. At most max + 2 x nq
 * queue visits per call: it may return 0 while packets remain (call again).
 */
static unsigned int
cake_flush_some(void *impl, struct sh_pkt_list *out, unsigned int max)
{
	struct cake *c = impl;
	uint32_t pos = c->flush_pos < c->slots ? c->flush_pos : 0;
	unsigned int n = 0, visits = 0;

	while (n < max && c->qlen != 0 && visits < max + 2 * c->nq) {
		struct cake_tin *b = &c->tins[pos >> c->qshift];
		struct cake_flow *f = &b->flows[pos & c->qmask];
		struct sh_pkt *pkt;

		visits++;
		if (b->qlen == 0) { /* the rest of an empty tin in one step */
			pos = ((pos >> c->qshift) + 1) << c->qshift;
			if (pos >= c->slots)
				pos = 0;
			continue;
		}
		if (f->pkts.head == NULL) {
			/*
			 * The queues after it without the busy bit hold no
			 * packet either: step over them as that many visits, read
			 * from the bitmap, not one flow (cache line) each.
			 */
			uint32_t skip = cake_idle_after(b, pos & c->qmask, c->nq);
			uint32_t room = max + 2 * c->nq - visits;

			if (skip > room)
				skip = room;
			pos += 1 + skip;
			visits += skip;
			if (pos >= c->slots)
				pos = 0;
			continue;
		}
		while (n < max && (pkt = cake_flow_pop(c, b, f)) != NULL) {
			sh_pkt_list_push(out, pkt);
			n++;
		}
	}
	c->flush_pos = pos; /* the heap keys stay upper bounds, as after any pop */
	return n;
}

/* Worker side of "flows": compact facts of up to max_slots queues. */
static unsigned int
cake_flow_facts(const void *impl, uint32_t *cursor, unsigned int max_slots, uint64_t now,
		struct sched_flow_fact *out, unsigned int room)
{
	const struct cake *c = impl;
	uint32_t pos = *cursor;
	unsigned int n = 0, visits = 0;
	uint8_t display[CAKE_MAX_TINS];

	for (uint32_t i = 0; i < CAKE_MAX_TINS; i++)
		display[i] = (uint8_t)i;
	for (uint32_t i = 0; i < c->tin_cnt; i++)
		display[c->tin_order[i]] = (uint8_t)i;
	/* An empty tin is skipped in one visit. */
	while (pos < c->slots && visits < max_slots && n < room) {
		const struct cake_tin *b = &c->tins[pos >> c->qshift];
		const struct cake_flow *f = &b->flows[pos & c->qmask];
		struct sched_flow_fact *fi;

		visits++;
		if (b->qlen == 0) { /* skip the rest of an empty tin */
			pos = ((pos >> c->qshift) + 1) << c->qshift;
			continue;
		}
		if (f->pkts.head != NULL) {
			fi = &out[n++];
			fi->backlog_bytes = f->backlog;
			fi->packets = f->pkts.count;
			fi->queue = (uint16_t)(pos & c->qmask);
			fi->tin = display[pos >> c->qshift];
			sched_fact_from_head(fi, f->pkts.head, now);
		}
		pos++;
	}
	*cursor = pos >= c->slots || n == room ? SCHED_FACTS_DONE : pos;
	return n;
}

const struct sched_ops sched_cake_ops = {
	.name = "cake",
	.create = cake_create,
	.destroy = cake_destroy,
	.enqueue = cake_enqueue,
	.dequeue = cake_dequeue,
	.next_time = cake_next_time,
	.update = cake_update,
	.set_rate = cake_set_rate,
	.flush = cake_flush,
	.get_stats = cake_get_stats,
	.reset_stats = cake_reset_stats,
	.backlog_pkts = cake_backlog_pkts,
	.lag_skipped_ns = cake_lag_skipped_ns,
	.flush_some = cake_flush_some,
	.reinit = cake_reinit,
	.flow_facts = cake_flow_facts,
	.max_packets = cake_max_packets,
	.enqueue_burst = cake_enqueue_burst,
	.prefetch_enqueue = cake_prefetch_enqueue,
	.prefetch_dequeue = cake_prefetch_dequeue,
};
