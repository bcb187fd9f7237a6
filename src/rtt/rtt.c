/*
 * Passive RTT (see include/shaper/rtt.h): a fixed table of TCP flows, each
 * with one sample in flight per direction: a TSval waiting for its echo or,
 * without timestamps, a segment waiting for its ACK. Sequence and timestamp
 * values wrap: every comparison is serial-number arithmetic.
 *
 * The cost per packet is what passive RTT's budget is about (at most 10 %
 * on top of the fast path, docs/PERFORMANCE.md), so the path of the usual
 * packet (TCP with the timestamp option first) is kept short:
 * the flow is found by the hash the classifier already computed, the
 * option is recognised by one 32-bit compare, and the flow's state is one
 * cache line; anything unusual goes to pkt_observe_slow.
 */
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "shaper/hist_quantile.h"
#include "shaper/rtt.h"

#define TCP_OPT_EOL    0
#define TCP_OPT_NOP    1
#define TCP_OPT_TS     8
#define TCP_OPT_TSLEN  10
#define TCP_FIN        0x01
#define TCP_SYN        0x02
#define TCP_RST        0x04
#define TCP_ACK        0x10
#define RTT_SEEN_SHIFT 16 /* bucket ages in units of 65.5 us: wrap after 78 hours */
#define RTT_WIN_SHIFT  20 /* rtt_flow.win_start's unit, about 1 ms */
#define RTT_WIN_UNITS  ((RTT_BASE_WIN_NS + (1ull << RTT_WIN_SHIFT) - 1) >> RTT_WIN_SHIFT)
#define RTT_IDLE_UNITS (RTT_IDLE_NS >> RTT_WIN_SHIFT)

_Static_assert(sizeof(struct rtt_flow) == 64, "a flow is one cache line");
_Static_assert(sizeof(struct rtt_bucket) == 32, "a bucket is half a cache line");
_Static_assert(RTT_MAX_NS / 1000 <= UINT32_MAX, "a sample fits 32-bit us");
_Static_assert((RTT_HOST_SLOTS & (RTT_HOST_SLOTS - 1)) == 0, "host slots: a power of two");
_Static_assert(RTT_HOST_V6_BITS % 8 == 0 && RTT_HOST_V6_BITS <= 56, "a /48 is whole bytes");

/* The state bits of direction dir. */
#define ST_HAVE(dir)     ((uint8_t)(RTT_HAVE << (2 * (dir))))
#define ST_ARMED(dir)    ((uint8_t)(RTT_ARMED << (2 * (dir))))
/* The armed packet of dir has left our own queue (rtt_departed): its time is final. */
#define ST_DEPARTED(dir) ((uint8_t)(RTT_DEPARTED << (dir)))

static inline bool
after32(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

static inline uint16_t
be16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static inline uint32_t
be32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static inline uint32_t
load32(const uint8_t *b)
{
	uint32_t v;

	memcpy(&v, b, sizeof(v));
	return v;
}

struct rtt_table *
rtt_table_new(uint32_t max_flows)
{
	struct rtt_table *t = calloc(1, sizeof(*t));
	uint32_t buckets = 1;

	if (t == NULL)
		return NULL;
	while (buckets * RTT_BUCKET_WAYS < max_flows && buckets < (1u << 22))
		buckets <<= 1;
	/* aligned_alloc wants a multiple of the alignment */
	t->buckets = aligned_alloc(64, ((size_t)buckets * sizeof(*t->buckets) + 63) & ~(size_t)63);
	t->flows = aligned_alloc(64, (size_t)buckets * RTT_BUCKET_WAYS * sizeof(*t->flows));
	t->hosts = calloc(RTT_HOST_SLOTS, sizeof(*t->hosts));
	if (t->buckets == NULL || t->flows == NULL || t->hosts == NULL) {
		free(t->buckets);
		free(t->flows);
		free(t->hosts);
		free(t);
		return NULL;
	}
	memset(t->buckets, 0, (size_t)buckets * sizeof(*t->buckets));
	t->mask = buckets - 1;
	for (int side = 0; side < RTT_SIDES; side++)
		t->lo_ns[side] = UINT64_MAX;
	return t;
}

void
rtt_table_free(struct rtt_table *t)
{
	if (t == NULL)
		return;
	free(t->buckets);
	free(t->flows);
	free(t->hosts);
	free(t);
}

void
rtt_range_take(struct rtt_table *t, enum rtt_side side, uint64_t *lo_ns, uint64_t *hi_ns)
{
	*lo_ns = t->lo_ns[side] != UINT64_MAX ? t->lo_ns[side] : 0;
	*hi_ns = t->hi_ns[side];
	t->lo_ns[side] = UINT64_MAX;
	t->hi_ns[side] = 0;
}

/* ---------------------------------------------------------------------- */
/* Lookup                                                                  */
/* ---------------------------------------------------------------------- */

/* The bucket of a flow hash, and the tag that marks the flow in it (never 0). */
static inline uint32_t
bucket_idx(const struct rtt_table *t, uint32_t hash)
{
	return hash & t->mask;
}

static inline uint32_t
tag_of(uint32_t hash)
{
	return hash | 1;
}

/* Bit w set if way w holds tag x. */
static inline uint32_t
match4(const uint32_t *v, uint32_t x)
{
#ifdef __SSE2__
	__m128i a = _mm_cmpeq_epi32(_mm_load_si128((const __m128i *)v), _mm_set1_epi32((int)x));

	return (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(a));
#else
	uint32_t m = 0;

	for (unsigned int w = 0; w < RTT_BUCKET_WAYS; w++)
		m |= (uint32_t)(v[w] == x) << w;
	return m;
#endif
}

/*
 * A free way of the bucket, else its least recently seen flow if that has
 * been idle for RTT_IDLE_NS (evicted), cleared for the new flow; or -1 if
 * every flow of the bucket is in use (the new one is not timed).
 */
static __attribute__((noinline)) int
flow_insert(struct rtt_table *t, uint32_t idx, uint32_t tag, uint32_t now16)
{
	struct rtt_bucket *b = &t->buckets[idx];
	unsigned int w = 0;
	uint32_t age = 0; /* of way w; a free way counts as idle forever */

	for (unsigned int i = 0; i < RTT_BUCKET_WAYS; i++) {
		if (b->tag[i] == 0) {
			w = i;
			age = UINT32_MAX;
			break;
		}
		if (now16 - b->seen[i] >= age) {
			age = now16 - b->seen[i];
			w = i;
		}
	}
	if (age < (RTT_IDLE_NS >> RTT_SEEN_SHIFT)) {
		t->c.no_room++;
		return -1;
	}
	if (b->tag[w] != 0)
		t->c.evictions++;
	b->tag[w] = tag;
	memset(&t->flows[(size_t)idx * RTT_BUCKET_WAYS + w], 0, sizeof(struct rtt_flow));
	return (int)w;
}

/* The flow of this hash, created if absent (when create and there is room); its age renewed. */
static inline __attribute__((always_inline)) struct rtt_flow *
flow_get(struct rtt_table *t, uint32_t hash, bool create, uint32_t now16)
{
	uint32_t idx = bucket_idx(t, hash), m = match4(t->buckets[idx].tag, tag_of(hash));
	int w;

	if (m != 0) {
		w = __builtin_ctz(m);
	} else {
		if (!create || (w = flow_insert(t, idx, tag_of(hash), now16)) < 0)
			return NULL;
	}
	t->buckets[idx].seen[w] = now16;
	return &t->flows[(size_t)idx * RTT_BUCKET_WAYS + (unsigned int)w];
}

const struct rtt_flow *
rtt_find(const struct rtt_table *t, uint32_t flow_hash)
{
	uint32_t idx = bucket_idx(t, flow_hash);
	uint32_t m = match4(t->buckets[idx].tag, tag_of(flow_hash));

	return m != 0 ? &t->flows[(size_t)idx * RTT_BUCKET_WAYS + (unsigned int)__builtin_ctz(m)]
		      : NULL;
}

/* Find the timestamp option by walking the options (the fast path knows the usual layout). */
static __attribute__((noinline)) bool
tcp_find_ts(const uint8_t *opt, unsigned int len, uint32_t *tsval, uint32_t *tsecr)
{
	unsigned int i = 0;

	if (len >= 12 && opt[0] == TCP_OPT_NOP && opt[1] == TCP_OPT_NOP && opt[2] == TCP_OPT_TS &&
	    opt[3] == TCP_OPT_TSLEN) {
		*tsval = be32(opt + 4);
		*tsecr = be32(opt + 8);
		return true;
	}
	while (i < len) {
		uint8_t kind = opt[i], olen;

		if (kind == TCP_OPT_EOL)
			return false;
		if (kind == TCP_OPT_NOP) {
			i++;
			continue;
		}
		if (i + 1 >= len)
			return false;
		olen = opt[i + 1];
		if (olen < 2 || i + olen > len)
			return false;
		if (kind == TCP_OPT_TS && olen == TCP_OPT_TSLEN) {
			*tsval = be32(opt + i + 2);
			*tsecr = be32(opt + i + 6);
			return true;
		}
		i += olen;
	}
	return false;
}

bool
rtt_tsval(const struct sh_pkt *p, uint32_t *tsval)
{
	const uint8_t *th;
	uint32_t doff, tsecr;

	if (p->l4_off == SH_OFF_NONE || p->l4_proto != 6 || p->l4_off + 20u > p->hdr_len)
		return false;
	th = p->data + p->l4_off;
	doff = (uint32_t)(th[12] >> 4) * 4;
	if (doff <= 20 || p->l4_off + doff > p->hdr_len)
		return false;
	return tcp_find_ts(th + 20, doff - 20, tsval, &tsecr);
}

static inline unsigned int
hist_bucket(uint64_t rtt_ns)
{
	uint64_t v = rtt_ns / RTT_HIST_UNIT_NS;
	unsigned int m, b;

	if (v <= 1)
		return (unsigned int)v;
	/* Octave m (v in [2^m, 2^(m+1))) has two buckets: its lower and upper half. */
	m = 63u - (unsigned int)__builtin_clzll(v);
	b = (unsigned int)(v >> (m - 1)) & 1u;
	if (2 * m + b >= RTT_HIST_BUCKETS)
		return RTT_HIST_BUCKETS - 1;
	return 2 * m + b;
}

unsigned int
rtt_hist_bucket(uint64_t rtt_ns)
{
	return hist_bucket(rtt_ns);
}

uint64_t
rtt_hist_lower_ns(unsigned int bucket)
{
	unsigned int m = bucket / 2;

	if (bucket <= 1)
		return bucket * RTT_HIST_UNIT_NS;
	return RTT_HIST_UNIT_NS * ((1ull << m) + (bucket % 2 ? 1ull << (m - 1) : 0));
}

uint64_t
rtt_hist_percentile(const struct rtt_hist *h, double p)
{
	uint64_t edge[RTT_HIST_BUCKETS + 1];

	for (unsigned int i = 0; i < RTT_HIST_BUCKETS; i++)
		edge[i] = rtt_hist_lower_ns(i);
	edge[RTT_HIST_BUCKETS] = edge[RTT_HIST_BUCKETS - 1] * 2; /* the last: one more octave */
	return sh_hist_quantile(h->count, edge, RTT_HIST_BUCKETS, p / 100.0);
}

void
rtt_hist_diff(const struct rtt_hist *a, const struct rtt_hist *b, struct rtt_hist *out)
{
	for (unsigned int i = 0; i < RTT_HIST_BUCKETS; i++)
		out->count[i] = a->count[i] - b->count[i];
	out->samples = a->samples - b->samples;
	out->sum_ns = a->sum_ns - b->sum_ns;
}

/* A new baseline window for both sides of the flow (its first sample, or 10 s on). */
static __attribute__((noinline)) void
window_turn(struct rtt_flow *f, uint32_t now_w)
{
	for (unsigned int s = 0; s < RTT_SIDES; s++) {
		f->win_min_us[s][1] = (f->state & RTT_SAMPLED) ? f->win_min_us[s][0] : UINT32_MAX;
		f->win_min_us[s][0] = UINT32_MAX;
	}
	f->win_start = now_w;
	f->state |= RTT_SAMPLED;
}

/* Account one sample to the flow and the table; fills out. */
static inline __attribute__((always_inline)) void
take_sample(struct rtt_table *t, struct rtt_flow *f, const enum rtt_side side,
	    enum rtt_method method, uint64_t rtt, uint64_t now, struct rtt_sample *out)
{
	uint32_t us = (uint32_t)(rtt / 1000), now_w = (uint32_t)(now >> RTT_WIN_SHIFT);
	uint32_t *wm = f->win_min_us[side];
	struct rtt_hist *h = &t->hist[side];

	uint32_t base;

	if (!(f->state & RTT_SAMPLED) || now_w - f->win_start >= RTT_WIN_UNITS)
		window_turn(f, now_w);
	/* Against the flow's earlier samples: a sample is never its own baseline. */
	base = wm[0] < wm[1] ? wm[0] : wm[1];
	out->established = base != UINT32_MAX && f->nsamples[side] >= RTT_BASE_SAMPLES;
	if (base == UINT32_MAX)
		base = us;
	if (f->nsamples[side] == 0 && f->syn)
		method = RTT_BY_HANDSHAKE; /* the flow was seen from its SYN */
	if (f->nsamples[side] < UINT8_MAX)
		f->nsamples[side]++;
	if (us < wm[0])
		wm[0] = us;
	f->last_us[side] = us;
	h->count[hist_bucket(rtt)]++;
	h->samples++;
	h->sum_ns += rtt;
	if (rtt < t->lo_ns[side])
		t->lo_ns[side] = rtt;
	if (rtt > t->hi_ns[side])
		t->hi_ns[side] = rtt;
	t->c.samples++;
	t->c.by_method[side][method]++;
	out->rtt_ns = rtt;
	out->base_ns = (uint64_t)base * 1000;
	out->side = (uint8_t)side;
	out->method = (uint8_t)method;
	out->gap_us = 0;
}

/* ---------------------------------------------------------------------- */
/* Remote hosts' baselines (RTT_HOST_SLOTS)                                */
/* ---------------------------------------------------------------------- */

uint32_t
rtt_host_key(const struct sh_pkt *p, enum rtt_dir dir)
{
	const uint8_t *ip = p->data + p->l3_off;
	uint64_t v = 0;

	if (p->flags & SH_PKT_IPV4) {
		v = be32(ip + (dir == RTT_DOWN ? 12 : 16)) >> (32 - RTT_HOST_V4_BITS);
	} else {
		const uint8_t *a = ip + (dir == RTT_DOWN ? 8 : 24);

		for (unsigned int i = 0; i < RTT_HOST_V6_BITS / 8; i++)
			v = v << 8 | a[i];
		v |= 1ull << 63; /* apart from every IPv4 prefix */
	}
	v *= 0x9e3779b97f4a7c15ull; /* Fibonacci hashing: the high half is well mixed */
	return (uint32_t)(v >> 32);
}

void
rtt_host_judge(struct rtt_table *t, uint32_t host_key, uint32_t flow_hash, uint64_t now,
	       struct rtt_sample *s)
{
	struct rtt_host *h = &t->hosts[host_key & (RTT_HOST_SLOTS - 1)];
	uint32_t tag = host_key | 1, me = flow_hash | 1, now_w = (uint32_t)(now >> RTT_WIN_SHIFT);
	uint32_t us = (uint32_t)(s->rtt_ns / 1000), base = UINT32_MAX;

	if (h->tag != tag) {
		if (h->tag != 0 && now_w - h->last < RTT_IDLE_UNITS) {
			t->c.host_collisions++;
			return;
		}
		memset(h, 0, sizeof(*h));
		h->tag = tag;
		h->win_min_us[0] = h->win_min_us[1] = UINT32_MAX;
		h->win_start = now_w;
	} else if (now_w - h->win_start >= RTT_WIN_UNITS) {
		/* A window on; after two without a sample, nothing of before is current. */
		h->win_min_us[1] = now_w - h->win_start < 2 * RTT_WIN_UNITS ? h->win_min_us[0]
									    : UINT32_MAX;
		h->who[1] = h->who[0];
		h->win_min_us[0] = UINT32_MAX;
		h->win_start = now_w;
	}
	/* A young flow only against other flows' samples: never its own handshake. */
	for (unsigned int w = 0; w < 2; w++)
		if (h->win_min_us[w] < base && (s->established || h->who[w] != me))
			base = h->win_min_us[w];
	if (base != UINT32_MAX && (!s->established || (uint64_t)base * 1000 < s->base_ns)) {
		s->base_ns = (uint64_t)base * 1000;
		s->established = true;
		t->c.host_based++;
	}
	h->last = now_w;
	if (us < h->win_min_us[0]) {
		h->win_min_us[0] = us;
		h->who[0] = me;
	}
}

/* A time in microseconds, wrapping every 71 minutes (RTT_MAX_NS is far less). */
static inline uint32_t
us_of(uint64_t ns)
{
	return (uint32_t)(ns / 1000);
}

/* Samples of what dir's opposite direction recorded are of this side. */
#define SIDE_OF_RECORDER(recorder) ((recorder) == RTT_UP ? RTT_SIDE_WAN : RTT_SIDE_LAN)

/* The echo of what od recorded came at now: a sample, unless it took longer than RTT_MAX_NS. */
static inline __attribute__((always_inline)) bool
take_echo(struct rtt_table *t, struct rtt_flow *f, const enum rtt_dir od, enum rtt_method method,
	  uint64_t now, struct rtt_sample *out)
{
	const struct rtt_half *h = &f->half[od];
	uint32_t el = us_of(now) - h->us;

	if (el > RTT_MAX_NS / 1000)
		return false;
	take_sample(t, f, SIDE_OF_RECORDER(od), method, (uint64_t)el * 1000, now, out);
	out->gap_us = h->gap_us != RTT_GAP_NONE ? h->gap_us : 0;
	return true;
}

/* A packet of a flow with timestamps; dir is a constant where this is inlined. */
static inline __attribute__((always_inline)) bool
ts_observe(struct rtt_table *t, struct rtt_flow *f, const enum rtt_dir dir, uint32_t tsval,
	   uint32_t tsecr, bool ack, uint64_t now, struct rtt_sample *out)
{
	const enum rtt_dir od = (enum rtt_dir)(dir ^ 1);
	struct rtt_half *mine = &f->half[dir], *other = &f->half[od];
	uint8_t st = f->state;

	if (!(st & RTT_HAS_TS))
		st = (uint8_t)((st & RTT_SAMPLED) |
			       RTT_HAS_TS); /* what sequence sampling left goes */
	/* Only a TSval newer than any before is timed: repeats keep the first time. */
	if (!(st & ST_HAVE(dir)) || after32(tsval, mine->last)) {
		mine->last = tsval;
		st |= ST_HAVE(dir);
		if (!(st & ST_ARMED(dir))) {
			mine->want = tsval;
			mine->us = us_of(now);
			mine->gap_us = 0;
			st |= ST_ARMED(dir);
			st &= (uint8_t)~ST_DEPARTED(dir);
		} else {
			t->c.ts_full++;
		}
	}
	/* An echo of the TSval in flight is a sample; of a later one, it never will be. */
	if ((st & ST_ARMED(od)) && ack && tsecr != 0 && !after32(other->want, tsecr)) {
		f->state = st & (uint8_t)~ST_ARMED(od);
		return other->want == tsecr && take_echo(t, f, od, RTT_BY_TIMESTAMP, now, out);
	}
	f->state = st;
	return false;
}

/* A packet of a flow without timestamps (seglen: the sequence space it takes). */
static inline __attribute__((always_inline)) bool
seq_observe(struct rtt_table *t, struct rtt_flow *f, const enum rtt_dir dir, uint32_t seq,
	    uint32_t seglen, uint32_t ackno, bool ack, uint64_t now, struct rtt_sample *out)
{
	const enum rtt_dir od = (enum rtt_dir)(dir ^ 1);
	struct rtt_half *mine = &f->half[dir], *other = &f->half[od];
	uint8_t st = f->state;

	if (st & RTT_HAS_TS)
		return false; /* a flow with timestamps is timed by them alone */
	if (seglen != 0) {
		uint32_t end = seq + seglen;

		if ((st & ST_HAVE(dir)) && !after32(end, mine->last)) {
			/* A retransmission: an ACK may now answer either copy. */
			if ((st & ST_ARMED(dir)) && after32(mine->want, seq)) {
				st &= (uint8_t)~ST_ARMED(dir);
				t->c.karn++;
			}
		} else {
			if ((st & ST_HAVE(dir)) && after32(mine->last, seq) &&
			    (st & ST_ARMED(dir)) && after32(mine->want, seq)) {
				/* Overlaps the sampled segment: partly a retransmission. */
				st &= (uint8_t)~ST_ARMED(dir);
				t->c.karn++;
			}
			mine->last = end;
			st |= ST_HAVE(dir);
			if (!(st & ST_ARMED(dir))) {
				st |= ST_ARMED(dir);
				st &= (uint8_t)~ST_DEPARTED(dir);
				mine->want = end;
				mine->us = us_of(now);
				mine->gap_us = 0;
			}
		}
	}
	if (ack && (st & ST_ARMED(od)) && !after32(other->want, ackno)) {
		f->state = st & (uint8_t)~ST_ARMED(od);
		return take_echo(t, f, od, RTT_BY_SEQUENCE, now, out);
	}
	f->state = st;
	return false;
}

/* ---------------------------------------------------------------------- */
/* Per packet                                                              */
/* ---------------------------------------------------------------------- */

/*
 * Worth a look: unfragmented TCP. What the classifier guarantees then:
 * l3_off is the (outermost) IP header, whole, flagged SH_PKT_IPV4 or
 * SH_PKT_IPV6; l4_off a TCP header whose 20 bytes are within hdr_len;
 * flow_hash the flow's, the same both ways when both directions classify
 * with one key.
 */
static inline bool
pkt_wanted(const struct sh_pkt *p)
{
	return (p->flags & (SH_PKT_TCP | SH_PKT_FRAG)) == SH_PKT_TCP;
}

/* Sequence space a segment takes: its data by the IP length (Ethernet pads short frames), SYN, FIN.
 */
static inline uint32_t
tcp_seglen(const struct sh_pkt *p, const uint8_t *th, uint32_t doff)
{
	const uint8_t *ip = p->data + p->l3_off;
	uint32_t end = (p->flags & SH_PKT_IPV4) ? p->l3_off + be16(ip + 2)
						: p->l3_off + 40u + be16(ip + 4);
	uint32_t hdr_end = p->l4_off + doff;
	uint32_t len = end > hdr_end ? end - hdr_end : 0;

	return len + ((th[13] & (TCP_SYN | TCP_FIN)) != 0);
}

/* A segment without timestamps whose options (if any) end at doff. */
static inline __attribute__((always_inline)) bool
pkt_observe_seq(struct rtt_table *t, const struct sh_pkt *p, const enum rtt_dir dir,
		const uint8_t *th, uint32_t doff, uint32_t now16, uint64_t now,
		struct rtt_sample *out)
{
	uint32_t seglen = tcp_seglen(p, th, doff);
	/* Nothing to time on a bare ACK of a flow never seen. */
	struct rtt_flow *f = flow_get(t, p->flow_hash, seglen != 0, now16);

	return f != NULL && seq_observe(t, f, dir, be32(th + 4), seglen, be32(th + 8),
					(th[13] & TCP_ACK) != 0, now, out);
}

/* A TSval for the caller (rtt_observe_burst_ts), where it wants them (tv != NULL). */
static inline __attribute__((always_inline)) void
hand_tsval(struct rtt_tsval **tv, const struct sh_pkt *p, uint32_t tsval)
{
	if (tv != NULL) {
		(*tv)->flow_hash = p->flow_hash;
		(*tv)->tsval = tsval;
		(*tv)++;
	}
}

/* Options in another layout (walked), RST, malformed headers. */
static __attribute__((noinline)) bool
pkt_observe_slow(struct rtt_table *t, const struct sh_pkt *p, enum rtt_dir dir, uint32_t now16,
		 uint64_t now, struct rtt_sample *out, struct rtt_tsval **tv)
{
	const uint8_t *th = p->data + p->l4_off;
	uint32_t doff = (uint32_t)(th[12] >> 4) * 4, tsval, tsecr;
	bool ack = (th[13] & TCP_ACK) != 0, syn = (th[13] & TCP_SYN) != 0;
	struct rtt_flow *f;

	if (doff < 20 || p->l4_off + doff > p->hdr_len || (th[13] & TCP_RST))
		return false;
	/*
	 * A SYN or SYN-ACK (they carry options, an MSS at least, so they come
	 * this way): the flow's first sample of each side is the handshake's.
	 */
	if (syn && (f = flow_get(t, p->flow_hash, true, now16)) != NULL)
		f->syn = 1;
	if (!tcp_find_ts(th + 20, doff - 20, &tsval, &tsecr))
		return dir == RTT_UP ? pkt_observe_seq(t, p, RTT_UP, th, doff, now16, now, out)
				     : pkt_observe_seq(t, p, RTT_DOWN, th, doff, now16, now, out);
	hand_tsval(tv, p, tsval);
	f = flow_get(t, p->flow_hash, true, now16);
	if (f == NULL)
		return false;
	return dir == RTT_UP ? ts_observe(t, f, RTT_UP, tsval, tsecr, ack, now, out)
			     : ts_observe(t, f, RTT_DOWN, tsval, tsecr, ack, now, out);
}

/*
 * One packet that pkt_wanted; dir is a constant where this is inlined, and
 * tv NULL where the caller wants no TSvals.
 */
static inline __attribute__((always_inline)) bool
pkt_observe(struct rtt_table *t, const struct sh_pkt *p, const enum rtt_dir dir, uint32_t now16,
	    uint64_t now, struct rtt_sample *out, struct rtt_tsval **tv)
{
	static const uint8_t ts_opt[4] = { TCP_OPT_NOP, TCP_OPT_NOP, TCP_OPT_TS, TCP_OPT_TSLEN };
	const uint8_t *th = p->data + p->l4_off;
	/* Data offset (high nibble) and reserved bits, then the flags. */
	uint32_t off_flags = (uint32_t)th[12] | (uint32_t)th[13] << 8;

	/* The usual layout (Linux, the BSDs, macOS): NOP, NOP, TS first (offset >= 32 B), no RST.
	 */
	if ((off_flags & (TCP_RST << 8 | 0x80)) == 0x80 && p->l4_off + 32u <= p->hdr_len &&
	    load32(th + 20) == load32(ts_opt)) {
		struct rtt_flow *f;

		hand_tsval(tv, p, be32(th + 24));
		f = flow_get(t, p->flow_hash, true, now16);
		return f != NULL && ts_observe(t, f, dir, be32(th + 24), be32(th + 28),
					       (off_flags & TCP_ACK << 8) != 0, now, out);
	}
	/* No options, no RST: timed by sequence numbers. */
	if ((off_flags & (TCP_RST << 8 | 0xf0)) == 0x50)
		return pkt_observe_seq(t, p, dir, th, 20, now16, now, out);
	return pkt_observe_slow(t, p, dir, now16, now, out, tv);
}

bool
rtt_observe(struct rtt_table *t, const struct sh_pkt *p, enum rtt_dir dir, uint64_t now,
	    struct rtt_sample *out)
{
	uint32_t now16 = (uint32_t)(now >> RTT_SEEN_SHIFT);

	if (!pkt_wanted(p))
		return false;
	t->c.packets++;
	if (dir == RTT_UP)
		return pkt_observe(t, p, RTT_UP, now16, now, out, NULL);
	if (!pkt_observe(t, p, RTT_DOWN, now16, now, out, NULL))
		return false;
	if (out->side == RTT_SIDE_WAN) {
		rtt_host_judge(t, rtt_host_key(p, RTT_DOWN), p->flow_hash, now, out);
		t->c.judged[out->method] += out->established;
	}
	return true;
}

/* The sequence number after a segment's (SYN, data, FIN), if its header is whole. */
static bool
seq_end(const struct sh_pkt *p, uint32_t *end)
{
	const uint8_t *th = p->data + p->l4_off;
	uint32_t doff, len;

	if (p->l4_off == SH_OFF_NONE || p->l4_off + 20u > p->hdr_len)
		return false;
	doff = (uint32_t)(th[12] >> 4) * 4;
	if (doff < 20 || p->l4_off + doff > p->hdr_len)
		return false;
	len = tcp_seglen(p, th, doff);
	*end = be32(th + 4) + len;
	return len != 0;
}

static inline __attribute__((always_inline)) unsigned int
observe_burst(struct rtt_table *t, struct sh_pkt *const *pkts, unsigned int n,
	      const enum rtt_dir dir, uint64_t now, struct rtt_sample *out, struct rtt_tsval **tv)
{
	uint32_t now16 = (uint32_t)(now >> RTT_SEEN_SHIFT);
	struct rtt_sample *o = out;
	unsigned int tcp = 0;

	for (unsigned int i = 0; i < n; i++) {
		const struct sh_pkt *p = pkts[i];

		if (!pkt_wanted(p))
			continue;
		tcp++;
		if (!pkt_observe(t, p, dir, now16, now, o, tv))
			continue;
		o->pkt = (uint16_t)i; /* whose it is: per-subscriber RTT */
		/* An echo coming down completes a WAN-side sample: its host's baseline too. */
		if (dir == RTT_DOWN && o->side == RTT_SIDE_WAN) {
			rtt_host_judge(t, rtt_host_key(p, RTT_DOWN), p->flow_hash, now, o);
			t->c.judged[o->method] += o->established;
		}
		o++;
	}
	t->c.packets += tcp;
	return (unsigned int)(o - out);
}

void
rtt_departed(struct rtt_table *t, struct sh_pkt *const *pkts, unsigned int n, enum rtt_dir dir,
	     uint64_t now)
{
	for (unsigned int i = 0; i < n; i++) {
		const struct sh_pkt *p = pkts[i];
		uint32_t idx, m, tsval;
		struct rtt_flow *f;

		if (p->l4_proto != 6)
			continue;
		idx = bucket_idx(t, p->flow_hash);
		m = match4(t->buckets[idx].tag, tag_of(p->flow_hash));
		if (m == 0)
			continue;
		f = &t->flows[(size_t)idx * RTT_BUCKET_WAYS + (unsigned int)__builtin_ctz(m)];
		if (!(f->state & ST_ARMED(dir)))
			continue;
		if (f->state & ST_DEPARTED(dir)) {
			/*
			 * The flow's next segment with data after the sampled one:
			 * how long the receiver may have held its echo (rtt_sample).
			 */
			if (f->half[dir].gap_us == 0) {
				uint32_t gap = us_of(now) - f->half[dir].us;

				/* A pure ACK next (a download's): no such wait, stop looking. */
				if (!pkt_wanted(p) || !seq_end(p, &tsval))
					gap = RTT_GAP_NONE;
				f->half[dir].gap_us = gap != 0 ? gap : 1;
			}
			continue;
		}
		/*
		 * Only the first packet of the armed TSval moves its time (repeats
		 * follow it); without timestamps, the segment whose end is awaited.
		 */
		if (f->state & RTT_HAS_TS) {
			if (!rtt_tsval(p, &tsval) || tsval != f->half[dir].want)
				continue;
		} else if (!pkt_wanted(p) || !seq_end(p, &tsval) || tsval != f->half[dir].want) {
			continue;
		}
		if ((int32_t)(us_of(now) - f->half[dir].us) > 0)
			f->half[dir].us = us_of(now);
		f->state |= ST_DEPARTED(dir);
	}
}

unsigned int
rtt_observe_burst(struct rtt_table *t, struct sh_pkt *const *pkts, unsigned int n, enum rtt_dir dir,
		  uint64_t now, struct rtt_sample *out)
{
	if (dir == RTT_UP)
		return observe_burst(t, pkts, n, RTT_UP, now, out, NULL);
	return observe_burst(t, pkts, n, RTT_DOWN, now, out, NULL);
}

unsigned int
rtt_observe_burst_ts(struct rtt_table *t, struct sh_pkt *const *pkts, unsigned int n,
		     enum rtt_dir dir, uint64_t now, struct rtt_sample *out, struct rtt_tsval *ts,
		     unsigned int *nts)
{
	struct rtt_tsval *tv = ts;
	unsigned int m = dir == RTT_UP ? observe_burst(t, pkts, n, RTT_UP, now, out, &tv)
				       : observe_burst(t, pkts, n, RTT_DOWN, now, out, &tv);

	*nts = (unsigned int)(tv - ts);
	return m;
}
