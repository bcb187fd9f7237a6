/*
 * libFuzzer harness: the scheduler as a program. The first bytes choose a
 * discipline and its parameters (within the ranges the config accepts);
 * the rest is a sequence of operations: enqueue one packet or a burst
 * (real Ethernet/IPv4/IPv6/TCP/UDP headers, classified, or raw header
 * bytes), advance time, dequeue one or a burst, run the link until due,
 * live update (sched_update), flush all or some, walk the flow facts, reset
 * the statistics. After every operation:
 *   - every packet handed back (sent, dropped, flushed) was queued, and
 *     comes back exactly once; dropped ones carry a scheduler drop reason;
 *   - the counters add up: enqueued, dequeued (sent + flushed), dropped by
 *     reason, backlog packets and bytes match the harness's own tally, and
 *     enqueued = dequeued + dropped + backlog since the last reset;
 *   - with l4s on (cake or fq_codel), each ECT(1) arrival is counted once;
 *   - a packet of one flow and DSCP never overtakes an older one queued
 *     under the same parameters (a live update may put new packets of a
 *     flow in another tin or queue, which may go first);
 *   - a dequeue that returns nothing leaves nothing due (no stall).
 * At the end everything is flushed and every packet must be home. The
 * scheduler is kept for the next program and made fresh by sched_reinit.
 * FUZZ_TRACE=1 prints the program as it runs.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shaper/classify.h"
#include "shaper/config.h"
#include "shaper/pkt.h"
#include "shaper/sched.h"

#define POOL      512
#define HDR       128 /* header bytes stored per packet */
#define MAX_OPS   400
#define N_FLOWS   16
#define N_CLASSES (N_FLOWS * 64)

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_sched: %s:%d: check failed: %s\n", __FILE__,         \
				__LINE__, #cond);                                                  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

enum {
	P_FREE = 0,
	P_QUEUED = 1
};

struct fpkt {
	struct sh_pkt pkt; /* first: a struct sh_pkt * converts back */
	uint64_t seq;      /* enqueue order */
	uint16_t cls;      /* order class (flow * 64 + dscp), N_CLASSES if none */
	uint32_t epoch;    /* live updates applied before it was queued */
	uint8_t state;
	uint8_t buf[HDR];
};

/* The program's input, read front to back; zeros once it runs out. */
struct in {
	const uint8_t *d;
	size_t n, off;
};

static uint8_t
u8(struct in *in)
{
	return in->off < in->n ? in->d[in->off++] : 0;
}

static uint16_t
u16(struct in *in)
{
	uint16_t v = u8(in);

	return (uint16_t)(v << 8 | u8(in));
}

static uint32_t
u32(struct in *in)
{
	uint32_t v = u16(in);

	return v << 16 | u16(in);
}

/* The last packet of an order class and epoch that was sent. */
struct order_mark {
	uint32_t epoch;
	uint64_t seq; /* its seq + 1; 0: none yet */
};

struct state {
	struct sched *s;
	struct sched_params p;
	struct classify_key key;
	struct fpkt pool[POOL];
	uint32_t free_idx[POOL], nfree;
	uint64_t now, seq;
	/* tally since the last stats reset */
	uint64_t enq, enq_bytes, deq, deq_bytes, drops[SHAPER_DROP_MAX];
	uint64_t ect1;         /* ECT(1) packets enqueued with l4s on */
	uint64_t base_backlog; /* packets queued at the last reset */
	/* absolute */
	uint64_t queued, queued_bytes;
	uint32_t epoch; /* live updates applied */
	/*
	 * A diffserv change leaves the old tins draining outside the per-tin
	 * table: their drops count for the direction only, until a stats reset
	 * with nothing queued.
	 */
	bool tins_changed;
	/* per order class and epoch (mod 4): the last one sent */
	struct order_mark last[N_CLASSES][4];
	uint32_t ack_no[N_FLOWS];
};

static struct state S;
static struct sched *cache[3]; /* per discipline, kept across programs */
static int trace;              /* FUZZ_TRACE=1 in the environment: print each operation */

#define TRACE(...)                                                                                 \
	do {                                                                                       \
		if (trace)                                                                         \
			fprintf(stderr, __VA_ARGS__);                                              \
	} while (0)

static const uint64_t rates[] = { 0,         1000,        12500,         125000,
				  1250000,   12500000,    125000000,     1250000000,
				  100000000, 12500000000, 12500000000000 };
static const uint32_t times_us[] = { 1, 5, 50, 500, 1000, 5000, 100000, 1000000, 1000000000 };
static const uint64_t mem_sizes[] = { 0, 4096, 65536, 1 << 20, 4 << 20, 32 << 20, 1ULL << 40 };
static const uint32_t counts[] = { 0, 1, 2, 3, 10, 64, 1000, 10240, 1 << 24 };

static uint64_t
pick64(struct in *in, const uint64_t *t, size_t n)
{
	return t[u8(in) % n];
}

static uint32_t
pick32(struct in *in, const uint32_t *t, size_t n)
{
	return t[u8(in) % n];
}

#define PICK64(in, t) pick64(in, t, sizeof(t) / sizeof((t)[0]))
#define PICK32(in, t) pick32(in, t, sizeof(t) / sizeof((t)[0]))

/* Set one parameter (chosen by the next byte) to a value the config could give. */
static void
tweak(struct in *in, struct sched_params *p)
{
	uint8_t b;

	switch (u8(in) % 25) {
	case 0:
		p->rate = PICK64(in, rates);
		break;
	case 1:
		p->rate = (uint64_t)u32(in) * (1 + u8(in) % 4);
		break;
	case 2:
		p->mtu = 68 + u16(in) % (65535 - 68 + 1);
		break;
	case 3:
		b = u8(in);
		p->lag_limit_ns = b == 0 ? SCHED_LAG_AUTO : (uint64_t)u32(in) % SCHED_LAG_MAX_NS;
		break;
	case 4:
		p->diffserv = (enum sched_diffserv)(u8(in) % 5);
		break;
	case 5:
		p->isolation = (enum sched_isolation)(u8(in) % 8);
		break;
	case 6:
		p->rtt_us = PICK32(in, times_us);
		p->target_us = p->rtt_us / 20 > 0 ? p->rtt_us / 20 : 1;
		break;
	case 7:
		p->target_us = PICK32(in, times_us);
		break;
	case 8:
		p->overhead_mode = u8(in) & 1;
		p->overhead = (int32_t)(u16(in) % 321) - 64;
		break;
	case 9:
		p->mpu = u16(in) % 257;
		p->framing = (enum sched_framing)(u8(in) % 3);
		break;
	case 10:
		b = u8(in);
		p->wash = b & 1;
		p->ingress = b & 2;
		p->ecn = b & 4;
		p->nat = b & 8;
		p->upstream = b & 16;
		break;
	case 11:
		p->ack_filter = (enum sched_ack_filter)(u8(in) % 3);
		break;
	case 12:
		p->memlimit = PICK64(in, mem_sizes);
		break;
	case 13:
		p->fifo_limit_pkts = PICK32(in, counts);
		p->fifo_limit_bytes = 0;
		break;
	case 14:
		p->fifo_limit_pkts = 0;
		p->fifo_limit_bytes = 64 + u32(in) % (1u << 20);
		break;
	case 15:
		p->fqc_flows = 1 + u16(in) % 4096;
		break;
	case 16:
		p->fqc_quantum = 256 + u32(in) % ((1u << 20) - 255);
		break;
	case 17:
		p->fqc_limit = 1 + u32(in) % (1u << 24);
		break;
	case 18:
		p->fqc_memory_limit = 4096 + u32(in);
		break;
	case 19:
		p->fqc_target_us = PICK32(in, times_us);
		break;
	case 20:
		p->fqc_interval_us = PICK32(in, times_us);
		break;
	case 21:
		p->fqc_ce_threshold_us = u8(in) & 1 ? 0 : PICK32(in, times_us);
		break;
	case 22:
		p->fqc_drop_batch = 1 + u16(in) % 4096;
		break;
	case 23:
		p->seed = u32(in);
		break;
	case 24:
		/* L4S, as the config allows it: cake and fq_codel, a 1 us to 1 s step */
		if (p->discipline == SCHED_DISC_FIFO)
			break;
		b = u8(in);
		p->l4s = b & 1;
		p->l4s_step_us = b & 2 ? SCHED_L4S_STEP_US : 1 + u32(in) % 1000000;
		p->nqb = p->discipline == SCHED_DISC_CAKE && (b & 4);
		break;
	}
}

static void
put16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

static void
put32(uint8_t *b, uint32_t v)
{
	put16(b, (uint16_t)(v >> 16));
	put16(b + 2, (uint16_t)v);
}

/*
 * A frame for flow f (0..N_FLOWS-1): even flows TCP, odd UDP; flows with
 * bit 1 set are IPv6; hosts spread so host isolation has work to do. kind
 * picks a TCP segment: pure ACK (rising), data, SYN, ACK with SACK/TS.
 */
static void
build(struct fpkt *fp, unsigned int f, uint8_t dscp, uint8_t ecn, uint8_t kind, bool reverse,
      uint32_t len)
{
	uint8_t *b = fp->buf, *l4;
	bool tcp = !(f & 1), v6 = f & 2;
	uint8_t sh = (uint8_t)(1 + f % 4), dh = (uint8_t)(1 + f / 4);
	uint16_t sport = (uint16_t)(1000 + f), dport = tcp ? 443 : 53;
	uint32_t l3len, hl;

	memset(b, 0, HDR);
	b[0] = 0x02;
	b[5] = reverse ? sh : dh;
	b[6] = 0x02;
	b[11] = reverse ? dh : sh;
	put16(b + 12, v6 ? 0x86dd : 0x0800);
	l3len = len > 14 ? len - 14 : 0;
	if (v6) {
		uint8_t *ip = b + 14;

		put32(ip, 0x60000000u | (uint32_t)dscp << 22 | (uint32_t)(ecn & 3) << 20);
		put16(ip + 4, (uint16_t)(l3len > 40 ? l3len - 40 : 0));
		ip[6] = tcp ? 6 : 17;
		ip[7] = 64;
		ip[8] = 0x20;
		ip[9] = 0x01;
		ip[23] = reverse ? dh : sh;
		ip[24] = 0x20;
		ip[25] = 0x01;
		ip[39] = reverse ? sh : dh;
		ip[38] = 0x80;
		l4 = ip + 40;
	} else {
		uint8_t *ip = b + 14;
		uint32_t sum = 0;

		ip[0] = 0x45;
		ip[1] = (uint8_t)(dscp << 2 | (ecn & 3));
		put16(ip + 2, (uint16_t)l3len);
		ip[8] = 64;
		ip[9] = tcp ? 6 : 17;
		ip[12] = 10;
		ip[15] = reverse ? dh : sh;
		ip[16] = 10;
		ip[17] = 1;
		ip[19] = reverse ? sh : dh;
		for (int i = 0; i < 20; i += 2)
			sum += (uint32_t)ip[i] << 8 | ip[i + 1];
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		put16(ip + 10, (uint16_t)~sum);
		l4 = ip + 20;
	}
	put16(l4, reverse ? dport : sport);
	put16(l4 + 2, reverse ? sport : dport);
	if (tcp) {
		hl = 20;
		put32(l4 + 4, 1000 + (kind & 1 ? fp->seq * 1448u : 0));
		S.ack_no[f] += (kind >> 4) * 1448u;
		put32(l4 + 8, S.ack_no[f]);
		l4[13] = (kind & 3) == 2 ? 0x02 : 0x10; /* SYN or ACK */
		l4[13] |= kind & 0x80 ? 0x40 : 0;       /* ECE */
		put16(l4 + 14, 65535);
		if (kind & 4) { /* NOP NOP TS */
			l4[20] = 1;
			l4[21] = 1;
			l4[22] = 8;
			l4[23] = 10;
			put32(l4 + 24, (uint32_t)fp->seq);
			hl += 12;
		} else if (kind & 8) { /* NOP NOP SACK one block */
			l4[20] = 1;
			l4[21] = 1;
			l4[22] = 5;
			l4[23] = 10;
			put32(l4 + 24, S.ack_no[f] + 2896);
			put32(l4 + 28, S.ack_no[f] + 2896 + (kind >> 4) * 1448u);
			hl += 12;
		}
		l4[12] = (uint8_t)(hl / 4) << 4;
	} else {
		put16(l4 + 4, (uint16_t)(l3len > 20 ? l3len - 20 : 0));
	}
}

static struct fpkt *
take(void)
{
	return S.nfree > 0 ? &S.pool[S.free_idx[--S.nfree]] : NULL;
}

static void
give_back(struct fpkt *fp)
{
	CHECK(S.nfree < POOL);
	fp->state = P_FREE;
	S.free_idx[S.nfree++] = (uint32_t)(fp - S.pool);
}

/* A packet handed back by the scheduler: it must be one of ours, queued. */
static struct fpkt *
returned(struct sh_pkt *p)
{
	struct fpkt *fp = (struct fpkt *)p;
	uintptr_t off = (uintptr_t)fp - (uintptr_t)S.pool;

	CHECK(off < sizeof(S.pool) && off % sizeof(S.pool[0]) == 0);
	CHECK(fp->state == P_QUEUED);
	CHECK(S.queued > 0 && S.queued_bytes >= p->len);
	S.queued--;
	S.queued_bytes -= p->len;
	return fp;
}

/*
 * The reason must fit where the drop happened: the AQM (CoDel, BLUE) drops
 * only at dequeue, overflow and the ACK filter only at enqueue. A drop
 * filed under the wrong reason is caught here, not only one without any.
 */
static void
take_drops(struct sh_pkt_list *dropped, bool at_dequeue)
{
	struct sh_pkt *d;

	while ((d = sh_pkt_list_pop(dropped)) != NULL) {
		struct fpkt *fp = returned(d);

		CHECK(d->drop_reason == SHAPER_DROP_AQM || d->drop_reason == SHAPER_DROP_OVERFLOW ||
		      d->drop_reason == SHAPER_DROP_ACK_FILTER);
		CHECK((d->drop_reason == SHAPER_DROP_AQM) == at_dequeue);
		CHECK(d->drop_reason != SHAPER_DROP_ACK_FILTER ||
		      (S.p.discipline == SCHED_DISC_CAKE &&
		       S.p.ack_filter != SCHED_ACK_FILTER_OFF));
		S.drops[d->drop_reason]++;
		TRACE("  dropped seq %llu (%s)\n", (unsigned long long)fp->seq,
		      shaper_drop_name(d->drop_reason));
		give_back(fp);
	}
}

static void
sent(struct sh_pkt *p)
{
	struct fpkt *fp = returned(p);

	S.deq++;
	S.deq_bytes += p->len;
	TRACE("  sent seq %llu class %u len %u\n", (unsigned long long)fp->seq, fp->cls, p->len);
	if (fp->cls < N_CLASSES) {
		struct order_mark *l = &S.last[fp->cls][fp->epoch % 4];

		/* never behind an older one of its epoch (another epoch's: not checked) */
		CHECK(l->seq == 0 || l->epoch != fp->epoch || fp->seq + 1 > l->seq);
		l->epoch = fp->epoch;
		l->seq = fp->seq + 1;
	}
	give_back(fp);
}

static void
flushed(struct sh_pkt_list *l)
{
	struct sh_pkt *d;

	while ((d = sh_pkt_list_pop(l)) != NULL) {
		struct fpkt *fp = returned(d);

		S.deq++;
		S.deq_bytes += d->len;
		give_back(fp);
	}
}

/* Make one packet from the program; NULL if the pool is empty. */
static struct fpkt *
make(struct in *in, uint8_t flow_byte)
{
	struct fpkt *fp = take();
	uint8_t sz = u8(in), ds = u8(in), kind = u8(in);
	unsigned int f = flow_byte % N_FLOWS;
	uint32_t len;

	if (fp == NULL)
		return NULL;
	if (sz == 255)
		len = 9000;
	else if (sz == 254) /* headers only: a pure ACK, for the ACK filter */
		len = 14 + (f & 2 ? 40 : 20) + (f & 1 ? 8 : kind & 12 ? 32 : 20);
	else if (sz < 8)
		len = 1 + sz * 9u; /* runts */
	else
		len = 60 + (sz * 37u) % 1455;
	memset(&fp->pkt, 0, sizeof(fp->pkt));
	fp->seq = S.seq++;
	fp->epoch = S.epoch;
	fp->cls = N_CLASSES;
	if (flow_byte >= 0xf0) {
		/* raw header bytes from the program */
		unsigned int n = flow_byte & 0x0f;

		memset(fp->buf, 0, HDR);
		for (unsigned int i = 0; i < n * 8 && i < HDR; i++)
			fp->buf[i] = u8(in);
	} else {
		build(fp, f, ds >> 2, ds & 3, kind, flow_byte & 0x40, len);
		/* whole headers (runts classify as other flows), one direction */
		if (!(flow_byte & 0x40) && len >= HDR)
			fp->cls = (uint16_t)(f * 64 + (ds >> 2));
	}
	fp->pkt.data = fp->buf;
	fp->pkt.len = len;
	fp->pkt.hdr_len = len < HDR ? len : HDR;
	fp->pkt.mem = len <= 2048 ? 2304 : len + 256;
	classify_pkt(&fp->pkt, &S.key);
	TRACE("  enqueue seq %llu class %u len %u flow_hash %08x\n", (unsigned long long)fp->seq,
	      fp->cls, len, fp->pkt.flow_hash);
	fp->state = P_QUEUED;
	S.queued++;
	S.queued_bytes += len;
	S.enq++;
	S.enq_bytes += len;
	S.ect1 += S.p.l4s && fp->pkt.ecn == 1;
	return fp;
}

static void
check_counters(void)
{
	struct sched_stats st;
	uint64_t dropped = 0, tin_backlog = 0;

	sched_get_stats(S.s, &st);
	CHECK(st.enqueued_pkts == S.enq);
	CHECK(st.enqueued_bytes == S.enq_bytes);
	CHECK(st.dequeued_pkts == S.deq);
	CHECK(st.dequeued_bytes == S.deq_bytes);
	for (int r = 0; r < SHAPER_DROP_MAX; r++) {
		CHECK(st.dropped[r] == S.drops[r]);
		dropped += st.dropped[r];
	}
	CHECK(st.backlog_pkts == S.queued);
	CHECK(st.backlog_bytes == S.queued_bytes);
	CHECK(sched_backlog_pkts(S.s) == S.queued);
	CHECK(S.base_backlog + st.enqueued_pkts == st.dequeued_pkts + dropped + st.backlog_pkts);
	CHECK(st.tin_count <= SCHED_MAX_TINS);
	for (uint32_t t = 0; t < st.tin_count; t++)
		tin_backlog += st.tins[t].backlog_bytes;
	CHECK(tin_backlog <= st.backlog_bytes);
	{
		/* l4s counts each ECT(1) arrival once, in the tin it went to */
		uint64_t ect1 = 0;

		for (uint32_t t = 0; t < st.tin_count; t++)
			ect1 += st.tins[t].ect1_packets;
		CHECK(S.tins_changed ? ect1 <= S.ect1 : ect1 == S.ect1);
	}
	if (S.p.discipline == SCHED_DISC_CAKE && !S.tins_changed) {
		/* CAKE's per-tin drop counters add up to the direction's, by reason */
		uint64_t tin_drops = 0, tin_ack_drops = 0;

		for (uint32_t t = 0; t < st.tin_count; t++) {
			tin_drops += st.tins[t].drops;
			tin_ack_drops += st.tins[t].ack_drops;
		}
		CHECK(tin_drops == st.dropped[SHAPER_DROP_AQM] + st.dropped[SHAPER_DROP_OVERFLOW]);
		CHECK(tin_ack_drops == st.dropped[SHAPER_DROP_ACK_FILTER]);
	}
	CHECK((S.queued == 0) == (sched_next_time(S.s, S.now) == UINT64_MAX));
	CHECK(S.nfree + S.queued == POOL);
}

static void
dequeue_some(unsigned int max)
{
	struct sh_pkt *out[64];
	struct sh_pkt_list dropped;
	unsigned int n;

	sh_pkt_list_init(&dropped);
	if (max == 1) {
		struct sh_pkt *p = sched_dequeue(S.s, S.now, &dropped);

		n = p != NULL;
		out[0] = p;
	} else {
		n = sched_dequeue_burst(S.s, out, max, S.now, &dropped);
		CHECK(n <= max);
	}
	take_drops(&dropped, true);
	for (unsigned int i = 0; i < n; i++)
		sent(out[i]);
	if (n < max) /* nothing more came out: nothing may be due */
		CHECK(sched_next_time(S.s, S.now) > S.now);
}

static void
facts_walk(void)
{
	static struct sched_flow_fact facts[SCHED_FACTS_SLICE];
	uint32_t cursor = 0, slots = sched_flow_slots(&S.p);
	uint64_t pkts = 0, bytes = 0;
	unsigned int turns = 0;

	while (cursor != SCHED_FACTS_DONE) {
		unsigned int n = sched_flow_facts(S.s, &cursor, SCHED_FACTS_SLICE, S.now, facts,
						  SCHED_FACTS_SLICE);

		CHECK(n <= SCHED_FACTS_SLICE);
		for (unsigned int i = 0; i < n; i++) {
			CHECK(facts[i].packets > 0);
			CHECK(facts[i].family == 0 || facts[i].family == 4 || facts[i].family == 6);
			pkts += facts[i].packets;
			bytes += facts[i].backlog_bytes;
		}
		CHECK(++turns <= slots / SCHED_FACTS_SLICE + 2);
	}
	if (S.p.discipline != SCHED_DISC_FIFO) {
		CHECK(pkts == S.queued);
		CHECK(bytes == S.queued_bytes);
	}
}

static void
run(struct in *in)
{
	struct sh_pkt_list dropped;
	char err[256];

	for (unsigned int op = 0; op < MAX_OPS && in->off < in->n; op++) {
		uint8_t code = u8(in);

		TRACE("op %u: %u at %llu ns, %llu queued\n", op, code % 11,
		      (unsigned long long)S.now, (unsigned long long)S.queued);

		switch (code % 11) {
		case 0: { /* enqueue one */
			struct fpkt *fp = make(in, u8(in));
			int r;

			if (fp == NULL)
				break;
			sh_pkt_list_init(&dropped);
			r = sched_enqueue(S.s, &fp->pkt, S.now, &dropped);
			CHECK(r == 0 || r == 1);
			{
				bool self = false;

				for (struct sh_pkt *d = dropped.head; d != NULL; d = d->next)
					self |= d == &fp->pkt;
				CHECK(self == (r == 1));
			}
			take_drops(&dropped, false);
			break;
		}
		case 1: { /* a burst of one flow (or a few) */
			struct sh_pkt *burst[32];
			uint8_t fb = u8(in), spread = u8(in);
			unsigned int n = 1 + code / 11 % 32, k = 0;
			unsigned int r;

			for (unsigned int i = 0; i < n; i++) {
				struct in rep = *in; /* the same packet description again */
				struct fpkt *fp = make(&rep, (uint8_t)(fb + i % (1 + spread % 4)));

				if (fp == NULL)
					break;
				burst[k++] = &fp->pkt;
				if (i + 1 == n)
					*in = rep;
			}
			if (k < n) /* pool empty: skip the description */
				in->off = in->off + 3 < in->n ? in->off + 3 : in->n;
			sh_pkt_list_init(&dropped);
			r = sched_enqueue_burst(S.s, burst, k, S.now, &dropped);
			CHECK(r <= k && r <= dropped.count);
			take_drops(&dropped, false);
			break;
		}
		case 2: { /* advance time */
			uint8_t e = u8(in);
			uint64_t d = (uint64_t)u16(in) << (e % 24);

			S.now += d;
			break;
		}
		case 3:
			dequeue_some(1);
			break;
		case 4:
			dequeue_some(1 + u8(in) % 64);
			break;
		case 5: { /* the link: jump to the next due time and send, n times */
			unsigned int n = 1 + u8(in);

			for (unsigned int i = 0; i < n; i++) {
				uint64_t t = sched_next_time(S.s, S.now);

				if (t == UINT64_MAX || t > S.now + 60 * 1000000000ull)
					break;
				if (t > S.now)
					S.now = t;
				dequeue_some(1);
			}
			break;
		}
		case 6: { /* live update */
			struct sched_params np = S.p, before = *sched_get_params(S.s);
			unsigned int n = 1 + u8(in) % 4;

			for (unsigned int i = 0; i < n; i++)
				tweak(in, &np);
			np.discipline = S.p.discipline;
			if (sched_update(S.s, &np, err, sizeof(err)) == 0) {
				S.tins_changed |= np.diffserv != before.diffserv;
				S.p = np;
				/* tins and queues may change: order holds within an epoch */
				S.epoch++;
			} else {
				CHECK(memcmp(&before, sched_get_params(S.s), sizeof(before)) == 0);
			}
			break;
		}
		case 7:
			sh_pkt_list_init(&dropped);
			sched_flush(S.s, &dropped);
			flushed(&dropped);
			CHECK(S.queued == 0);
			break;
		case 8: {
			unsigned int max = u8(in), n;

			/* bounded work per call: fewer than max is allowed, no progress twice not
			 */
			for (int tries = 0; tries < 2; tries++) {
				sh_pkt_list_init(&dropped);
				n = sched_flush_some(S.s, &dropped, max);
				CHECK(n == dropped.count && n <= max);
				flushed(&dropped);
				if (n != 0 || max == 0 || S.queued == 0)
					break;
				CHECK(tries == 0);
			}
			CHECK(S.p.discipline == SCHED_DISC_CAKE || n == max || S.queued == 0);
			break;
		}
		case 9:
			facts_walk();
			break;
		case 10:
			sched_reset_stats(S.s);
			S.enq = S.enq_bytes = S.deq = S.deq_bytes = S.ect1 = 0;
			memset(S.drops, 0, sizeof(S.drops));
			S.base_backlog = S.queued;
			S.tins_changed &= S.queued != 0;
			break;
		}
		check_counters();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size, 0 };
	struct sh_pkt_list l;
	char err[256];
	unsigned int n;
	uint8_t b;

	memset(&S, 0, sizeof(S));
	trace = getenv("FUZZ_TRACE") != NULL;
	for (uint32_t i = 0; i < POOL; i++)
		S.free_idx[i] = POOL - 1 - i;
	S.nfree = POOL;
	b = u8(&in);
	sched_params_default(&S.p, (enum sched_discipline)(b % 3));
	S.p.rate = PICK64(&in, rates);
	n = u8(&in) % 8;
	for (unsigned int i = 0; i < n; i++)
		tweak(&in, &S.p);
	b = u8(&in);
	S.now = b < 128 ? 0 : (uint64_t)b << 48; /* up to ~9 years of uptime */
	classify_key_init(&S.key, 42);
	/*
	 * One scheduler per discipline, made fresh again for each program by
	 * sched_reinit (a new CAKE costs a megabyte of page faults under ASan).
	 */
	if (cache[S.p.discipline] != NULL) {
		int rc = sched_reinit(cache[S.p.discipline], &S.p, err, sizeof(err));

		CHECK(rc == 0 || rc == -EINVAL);
		S.s = rc == 0 ? cache[S.p.discipline] : NULL;
	} else {
		S.s = cache[S.p.discipline] = sched_create(&S.p, err, sizeof(err));
	}
	TRACE("%s rate %llu: %s\n", shaper_discipline_name(S.p.discipline),
	      (unsigned long long)S.p.rate, S.s != NULL ? "created" : err);
	if (S.s == NULL)
		return 0;
	check_counters();
	run(&in);
	/* flush_some, not flush: CAKE's flush also resets 8 x 1024 queues, as reinit will */
	for (int i = 0; i < 16 && S.queued != 0; i++) {
		sh_pkt_list_init(&l);
		sched_flush_some(S.s, &l, POOL);
		flushed(&l);
	}
	check_counters();
	CHECK(S.queued == 0 && S.nfree == POOL);
	return 0;
}
