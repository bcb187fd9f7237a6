/*
 * Passive RTT (see include/shaper/rtt.h): a fixed table of TCP flows, each
 * with a short FIFO of TSvals per direction waiting for their echo and one
 * sampled segment waiting for its ACK. Sequence and timestamp values wrap:
 * every comparison is serial-number arithmetic.
 */
#include <stdlib.h>
#include <string.h>

#include "shaper/rtt.h"

#define RTT_WAYS      4
#define TCP_OPT_EOL   0
#define TCP_OPT_NOP   1
#define TCP_OPT_TS    8
#define TCP_OPT_TSLEN 10
#define TCP_FIN       0x01
#define TCP_SYN       0x02
#define TCP_RST       0x04
#define TCP_ACK       0x10

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

struct rtt_table *
rtt_table_new(uint32_t max_flows, uint64_t seed)
{
	struct rtt_table *t = calloc(1, sizeof(*t));
	uint32_t buckets = 1;

	if (t == NULL)
		return NULL;
	while (buckets * RTT_WAYS < max_flows && buckets < (1u << 24))
		buckets <<= 1;
	t->flows = calloc((size_t)buckets * RTT_WAYS, sizeof(*t->flows));
	t->tags = calloc((size_t)buckets * RTT_WAYS, sizeof(*t->tags));
	if (t->flows == NULL || t->tags == NULL) {
		free(t->flows);
		free(t->tags);
		free(t);
		return NULL;
	}
	t->mask = buckets - 1;
	t->seed = seed | 1;
	return t;
}

void
rtt_table_free(struct rtt_table *t)
{
	if (t == NULL)
		return;
	free(t->flows);
	free(t->tags);
	free(t);
}

/* The flow key in LAN/WAN order as words; IPv4 addresses zero-extended. */
struct rtt_key {
	uint64_t lan[2], wan[2];
	uint32_t ports; /* lan_port << 16 | wan_port */
	uint8_t family;
};

static inline uint64_t
load64(const uint8_t *b)
{
	uint64_t v;

	memcpy(&v, b, sizeof(v));
	return v;
}

static inline uint32_t
load32(const uint8_t *b)
{
	uint32_t v;

	memcpy(&v, b, sizeof(v));
	return v;
}

static inline void
key_set(struct rtt_key *k, uint8_t family, const uint8_t *lan, const uint8_t *wan,
	uint16_t lan_port, uint16_t wan_port)
{
	if (family == 6) {
		k->lan[0] = load64(lan), k->lan[1] = load64(lan + 8);
		k->wan[0] = load64(wan), k->wan[1] = load64(wan + 8);
	} else {
		k->lan[0] = load32(lan), k->lan[1] = 0;
		k->wan[0] = load32(wan), k->wan[1] = 0;
	}
	k->ports = (uint32_t)lan_port << 16 | wan_port;
	k->family = family;
}

/* Never 0: a tag of 0 marks a free way. */
static inline uint32_t
key_hash(const struct rtt_table *t, const struct rtt_key *k)
{
	uint64_t h = t->seed ^ k->ports ^ ((uint64_t)k->family << 40);

	h = (h ^ k->lan[0]) * 0x9e3779b97f4a7c15ull;
	h = (h ^ k->wan[0]) * 0xc2b2ae3d27d4eb4full;
	h = (h ^ k->lan[1] ^ (k->wan[1] << 1)) * 0x9e3779b97f4a7c15ull;
	h ^= h >> 29;
	h ^= h >> 32;
	return (uint32_t)h != 0 ? (uint32_t)h : 1;
}

static inline bool
key_match(const struct rtt_flow *f, const struct rtt_key *k)
{
	return f->family == k->family && ((uint32_t)f->lan_port << 16 | f->wan_port) == k->ports &&
	       load64(f->lan) == k->lan[0] && load64(f->lan + 8) == k->lan[1] &&
	       load64(f->wan) == k->wan[0] && load64(f->wan + 8) == k->wan[1];
}

/* The tags of a bucket share one cache line: only a flow whose tag matches is read. */
static struct rtt_flow *
flow_lookup(const struct rtt_table *t, const struct rtt_key *k, uint32_t hash)
{
	size_t base = (size_t)(hash & t->mask) * RTT_WAYS;
	const uint32_t *tag = t->tags + base;

	for (unsigned int i = 0; i < RTT_WAYS; i++)
		if (tag[i] == hash && key_match(&t->flows[base + i], k))
			return &t->flows[base + i];
	return NULL;
}

/* A free way of the bucket, else its least recently seen flow (evicted). */
static struct rtt_flow *
flow_insert(struct rtt_table *t, const struct rtt_key *k, uint32_t hash)
{
	size_t base = (size_t)(hash & t->mask) * RTT_WAYS;
	struct rtt_flow *b = t->flows + base, *f;
	unsigned int w = 0;

	for (unsigned int i = 0; i < RTT_WAYS; i++) {
		if (t->tags[base + i] == 0) {
			w = i;
			break;
		}
		if (b[i].seen_ns < b[w].seen_ns)
			w = i;
	}
	if (t->tags[base + w] != 0)
		t->c.evictions++;
	t->tags[base + w] = hash;
	f = &b[w];
	memset(f, 0, sizeof(*f));
	memcpy(f->lan, k->lan, 16);
	memcpy(f->wan, k->wan, 16);
	f->lan_port = (uint16_t)(k->ports >> 16);
	f->wan_port = (uint16_t)k->ports;
	f->family = k->family;
	f->hash = hash;
	for (unsigned int s = 0; s < RTT_SIDES; s++)
		f->side[s].min_ns = f->side[s].win_min[0] = f->side[s].win_min[1] = UINT64_MAX;
	return f;
}

const struct rtt_flow *
rtt_find(const struct rtt_table *t, uint8_t family, const uint8_t *lan, const uint8_t *wan,
	 uint16_t lan_port, uint16_t wan_port)
{
	struct rtt_key k;

	if (family != 4 && family != 6)
		return NULL;
	key_set(&k, family, lan, wan, lan_port, wan_port);
	return flow_lookup(t, &k, key_hash(t, &k));
}

/* Find the timestamp option: the usual NOP,NOP,TS layout first, then a walk. */
static bool
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

unsigned int
rtt_hist_bucket(uint64_t rtt_ns)
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
	uint64_t total = 0, seen = 0;
	double want;

	for (unsigned int i = 0; i < RTT_HIST_BUCKETS; i++)
		total += h->count[i];
	if (total == 0)
		return 0;
	want = p / 100.0 * (double)total;
	for (unsigned int i = 0; i < RTT_HIST_BUCKETS; i++) {
		uint64_t lo, hi;

		if (h->count[i] == 0 || (double)(seen + h->count[i]) < want) {
			seen += h->count[i];
			continue;
		}
		lo = rtt_hist_lower_ns(i);
		hi = i + 1 < RTT_HIST_BUCKETS ? rtt_hist_lower_ns(i + 1) : lo * 2;
		return lo + (uint64_t)((double)(hi - lo) *
				       ((want - (double)seen) / (double)h->count[i]));
	}
	return rtt_hist_lower_ns(RTT_HIST_BUCKETS - 1);
}

void
rtt_hist_diff(const struct rtt_hist *a, const struct rtt_hist *b, struct rtt_hist *out)
{
	for (unsigned int i = 0; i < RTT_HIST_BUCKETS; i++)
		out->count[i] = a->count[i] - b->count[i];
	out->samples = a->samples - b->samples;
	out->sum_ns = a->sum_ns - b->sum_ns;
}

/* Account one sample to the flow and the table; fills out. */
static void
take_sample(struct rtt_table *t, struct rtt_flow *f, enum rtt_side side, enum rtt_method method,
	    uint64_t rtt, uint64_t now, struct rtt_sample *out)
{
	struct rtt_side_stats *s = &f->side[side];
	struct rtt_hist *h = &t->hist[side];

	if (now - s->win_start >= RTT_BASE_WIN_NS || s->samples == 0) {
		s->win_min[1] = s->win_min[0];
		s->win_min[0] = UINT64_MAX;
		s->win_start = now;
	}
	if (rtt < s->win_min[0])
		s->win_min[0] = rtt;
	if (rtt < s->min_ns)
		s->min_ns = rtt;
	s->last_ns = rtt;
	s->samples++;
	h->count[rtt_hist_bucket(rtt)]++;
	h->samples++;
	h->sum_ns += rtt;
	t->c.samples++;
	out->rtt_ns = rtt;
	out->base_ns = s->win_min[0] < s->win_min[1] ? s->win_min[0] : s->win_min[1];
	out->side = (uint8_t)side;
	out->method = (uint8_t)method;
}

/* Samples of what dir's opposite direction recorded are of this side. */
static inline enum rtt_side
side_of_recorder(enum rtt_dir recorder)
{
	return recorder == RTT_UP ? RTT_SIDE_WAN : RTT_SIDE_LAN;
}

static bool
ts_observe(struct rtt_table *t, struct rtt_flow *f, enum rtt_dir dir, uint32_t tsval,
	   uint32_t tsecr, bool ack, uint64_t now, struct rtt_sample *out)
{
	struct rtt_half *mine = &f->half[dir], *other = &f->half[dir ^ 1];
	bool got = false;

	/* Only a TSval newer than any before is recorded: repeats keep the first time. */
	if (!mine->have_tsval || after32(tsval, mine->last_tsval)) {
		mine->last_tsval = tsval;
		mine->have_tsval = 1;
		if (mine->ts_n < RTT_TS_SLOTS) {
			unsigned int i = (mine->ts_head + mine->ts_n) % RTT_TS_SLOTS;

			mine->ts_val[i] = tsval;
			mine->ts_ns[i] = now;
			mine->ts_n++;
		} else {
			t->c.ts_full++;
		}
	}
	if (!ack || tsecr == 0)
		return false;
	/* TSvals older than the echo will never be echoed themselves: forget them. */
	while (other->ts_n != 0) {
		unsigned int h = other->ts_head;
		uint32_t v = other->ts_val[h];

		if (after32(v, tsecr))
			break;
		other->ts_head = (uint8_t)((h + 1) % RTT_TS_SLOTS);
		other->ts_n--;
		if (v == tsecr && now - other->ts_ns[h] <= RTT_MAX_NS) {
			take_sample(t, f, side_of_recorder((enum rtt_dir)(dir ^ 1)),
				    RTT_BY_TIMESTAMP, now - other->ts_ns[h], now, out);
			got = true;
			break;
		}
	}
	return got;
}

static bool
seq_observe(struct rtt_table *t, struct rtt_flow *f, enum rtt_dir dir, uint32_t seq,
	    uint32_t seglen, uint32_t ackno, bool ack, uint64_t now, struct rtt_sample *out)
{
	struct rtt_half *mine = &f->half[dir], *other = &f->half[dir ^ 1];
	bool got = false;

	if (seglen != 0) {
		uint32_t end = seq + seglen;

		if (mine->have_seq && !after32(end, mine->seq_max)) {
			/* A retransmission: an ACK may now answer either copy. */
			if (mine->seq_armed && after32(mine->seq_expect, seq)) {
				mine->seq_armed = 0;
				t->c.karn++;
			}
		} else {
			if (mine->have_seq && after32(mine->seq_max, seq) && mine->seq_armed &&
			    after32(mine->seq_expect, seq)) {
				/* Overlaps the sampled segment: partly a retransmission. */
				mine->seq_armed = 0;
				t->c.karn++;
			}
			mine->seq_max = end;
			mine->have_seq = 1;
			if (!mine->seq_armed) {
				mine->seq_armed = 1;
				mine->seq_expect = end;
				mine->seq_ns = now;
			}
		}
	}
	if (ack && other->seq_armed && !after32(other->seq_expect, ackno)) {
		other->seq_armed = 0;
		if (now - other->seq_ns <= RTT_MAX_NS) {
			take_sample(t, f, side_of_recorder((enum rtt_dir)(dir ^ 1)),
				    RTT_BY_SEQUENCE, now - other->seq_ns, now, out);
			got = true;
		}
	}
	return got;
}

bool
rtt_observe(struct rtt_table *t, const struct sh_pkt *p, enum rtt_dir dir, uint64_t now,
	    struct rtt_sample *out)
{
	const uint8_t *d = p->data, *ip, *th, *src, *dst;
	uint32_t l3 = p->l3_off, l4 = p->l4_off, doff, ip_end, seglen, tsval = 0, tsecr = 0;
	struct rtt_key k;
	struct rtt_flow *f;
	uint32_t hash;
	uint8_t fl, family;
	bool has_ts;

	if ((p->flags & (SH_PKT_TCP | SH_PKT_FRAG)) != SH_PKT_TCP || l3 == SH_OFF_NONE ||
	    l4 == SH_OFF_NONE || l4 < l3 || l4 + 20 > p->hdr_len)
		return false;
	t->c.packets++;
	ip = d + l3;
	th = d + l4;
	if ((ip[0] >> 4) == 4 && l3 + 20 <= l4) {
		family = 4;
		src = ip + 12;
		dst = ip + 16;
		ip_end = l3 + be16(ip + 2);
	} else if ((ip[0] >> 4) == 6 && l3 + 40 <= l4) {
		family = 6;
		src = ip + 8;
		dst = ip + 24;
		ip_end = l3 + 40 + be16(ip + 4);
	} else {
		return false;
	}
	doff = (uint32_t)(th[12] >> 4) * 4;
	if (doff < 20 || l4 + doff > p->hdr_len)
		return false;
	fl = th[13];
	if (fl & TCP_RST)
		return false;
	/* The IP length, not the frame's: Ethernet pads short frames. */
	seglen = ip_end > l4 + doff ? ip_end - l4 - doff : 0;
	if (fl & (TCP_SYN | TCP_FIN))
		seglen++;
	has_ts = doff > 20 && tcp_find_ts(th + 20, doff - 20, &tsval, &tsecr);
	if (dir == RTT_UP)
		key_set(&k, family, src, dst, be16(th), be16(th + 2));
	else
		key_set(&k, family, dst, src, be16(th + 2), be16(th));
	hash = key_hash(t, &k);
	f = flow_lookup(t, &k, hash);
	if (f == NULL) {
		/* Nothing to time on a bare ACK of a flow never seen. */
		if (!has_ts && seglen == 0)
			return false;
		f = flow_insert(t, &k, hash);
	}
	f->seen_ns = now;
	if (has_ts) {
		f->has_ts = 1;
		return ts_observe(t, f, dir, tsval, tsecr, (fl & TCP_ACK) != 0, now, out);
	}
	if (f->has_ts)
		return false; /* a flow with timestamps is timed by them alone */
	return seq_observe(t, f, dir, be32(th + 4), seglen, be32(th + 8), (fl & TCP_ACK) != 0, now,
			   out);
}

unsigned int
rtt_observe_burst(struct rtt_table *t, struct sh_pkt *const *pkts, unsigned int n, enum rtt_dir dir,
		  uint64_t now, struct rtt_sample *out)
{
	unsigned int m = 0;

	for (unsigned int i = 0; i < n; i++)
		if ((pkts[i]->flags & SH_PKT_TCP) && rtt_observe(t, pkts[i], dir, now, &out[m]))
			m++;
	return m;
}
