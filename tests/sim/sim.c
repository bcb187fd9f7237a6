/*
 * The simulator behind the sim suite (see sim.h): an event loop over
 * source emissions and scheduler dequeues in integer nanoseconds. Nothing
 * is random here; randomness inside the scheduler comes from params.seed.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "shaper/classify.h"
#include "shaper/subscriber.h"
#include "shaper/subscriber_sched.h"
#include "sim.h"

/* Packet sizes the mixed sources cycle through (L2, Ethernet header incl.). */
static const uint32_t sim_mix[] = { 64, 1514, 590, 1514, 128, 1514, 1024, 1514, 300, 1514 };
#define SIM_MIX_LEN (sizeof(sim_mix) / sizeof(sim_mix[0]))

static uint32_t
sim_mix32(uint32_t h)
{
	/* murmur3 finaliser: a good avalanche for synthetic hashes. */
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

static uint32_t
sim_hash_flow(const struct sim_src *s)
{
	/* Direction-symmetric, as the classifier's hash is. */
	uint32_t a = s->saddr, b = s->daddr;
	uint32_t pa = s->sport, pb = s->dport;

	if (a > b || (a == b && pa > pb)) {
		uint32_t t = a;

		a = b;
		b = t;
		t = pa;
		pa = pb;
		pb = t;
	}
	return sim_mix32(sim_mix32(a ^ 0x1234567u) ^ sim_mix32(b + 0x9e3779b9u) ^
			 sim_mix32((pa << 16) | pb) ^ s->proto);
}

uint16_t
sim_ipv4_csum(const uint8_t *ip, uint32_t hlen)
{
	uint32_t sum = 0, i;

	for (i = 0; i < hlen; i += 2)
		sum += ((uint32_t)ip[i] << 8) | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
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

void
sim_build(struct sim_src *src, struct sim_pkt *p, uint32_t len)
{
	uint8_t *e = p->buf, *ip = p->buf + 14, *l4 = p->buf + 34;
	uint16_t csum;

	memset(p->buf, 0, 64);
	/* Ethernet: locally administered MACs from the addresses. */
	e[0] = 0x02;
	put32(e + 2, src->daddr);
	e[6] = 0x02;
	put32(e + 8, src->saddr);
	put16(e + 12, 0x0800);
	ip[0] = 0x45;
	ip[1] = (uint8_t)((src->dscp << 2) | (src->ecn & 3));
	put16(ip + 2, (uint16_t)(len - 14));
	put16(ip + 4, (uint16_t)p->seq);
	ip[8] = 64;
	ip[9] = src->proto;
	put32(ip + 12, src->saddr);
	put32(ip + 16, src->daddr);
	csum = sim_ipv4_csum(ip, 20);
	put16(ip + 10, csum);
	put16(l4, src->sport);
	put16(l4 + 2, src->dport);
	if (src->proto == SIM_TCP) {
		put32(l4 + 4, src->tcp_ack ? 1000 : 1000 + p->seq * 1448u);
		put32(l4 + 8, src->ack_no);
		l4[12] = 5 << 4;
		l4[13] = 0x10; /* ACK */
		put16(l4 + 14, 65535);
	} else {
		put16(l4 + 4, (uint16_t)(len - 34));
	}

	p->pkt.next = NULL;
	p->pkt.data = p->buf;
	p->pkt.len = len;
	p->pkt.hdr_len = len < SIM_HDR_LEN ? len : SIM_HDR_LEN; /* only the headers are stored */
	p->pkt.flow_hash = src->flow_hash;
	p->pkt.src_hash = src->src_hash;
	p->pkt.dst_hash = src->dst_hash;
	p->pkt.l3_off = 14;
	p->pkt.l4_off = 34;
	p->pkt.dscp = src->dscp;
	p->pkt.ecn = src->ecn & 3;
	p->pkt.l4_proto = src->proto;
	p->pkt.flags = SH_PKT_IPV4 |
		       (src->proto == SIM_TCP ? SH_PKT_TCP | SH_PKT_TCP_ACK : SH_PKT_UDP);
	p->pkt.net_off = 14;
	p->pkt.drop_reason = 0;
}

struct sim *
sim_new(const struct sched_params *p, uint32_t pool_len, uint32_t max_src)
{
	struct sim *sim = calloc(1, sizeof(*sim));
	char err[128] = "";
	uint32_t i;

	assert_non_null(sim);
	sim->params = *p;
	sim->s = sched_create(p, err, sizeof(err));
	if (sim->s == NULL)
		fail_msg("sched_create: %s", err);
	sim->pool = calloc(pool_len, sizeof(*sim->pool));
	sim->free_idx = calloc(pool_len, sizeof(*sim->free_idx));
	sim->srcs = calloc(max_src, sizeof(*sim->srcs));
	assert_non_null(sim->pool);
	assert_non_null(sim->free_idx);
	assert_non_null(sim->srcs);
	sim->pool_len = pool_len;
	for (i = 0; i < pool_len; i++)
		sim->free_idx[i] = pool_len - 1 - i;
	sim->nfree = pool_len;
	sim->src_cap = max_src;
	sim->meas_end = UINT64_MAX;
	return sim;
}

void
sim_free(struct sim *sim)
{
	if (sim == NULL)
		return;
	sched_free(sim->s);
	free(sim->pool);
	free(sim->free_idx);
	free(sim->srcs);
	free(sim);
}

void
sim_pool_init(struct sim_pool *pl, uint32_t len)
{
	pl->pkts = calloc(len, sizeof(*pl->pkts));
	pl->free_idx = calloc(len, sizeof(*pl->free_idx));
	assert_non_null(pl->pkts);
	assert_non_null(pl->free_idx);
	pl->len = len;
	for (pl->nfree = 0; pl->nfree < len; pl->nfree++)
		pl->free_idx[pl->nfree] = pl->nfree;
}

void
sim_pool_destroy(struct sim_pool *pl)
{
	free(pl->pkts);
	free(pl->free_idx);
	memset(pl, 0, sizeof(*pl));
}

struct sim_pkt *
sim_pool_take(struct sim_pool *pl)
{
	assert_true(pl->nfree > 0);
	return &pl->pkts[pl->free_idx[--pl->nfree]];
}

void
sim_pool_give(struct sim_pool *pl, struct sim_pkt *p)
{
	pl->free_idx[pl->nfree++] = (uint32_t)(p - pl->pkts);
}

void
sim_sub_enqueue(struct sub_sched *ss, const struct classify_key *key, struct sim_src *src,
		uint32_t want, struct sim_pkt *p, uint32_t len, uint64_t now,
		struct sh_pkt_list *dropped)
{
	uint32_t sub;

	p->born = now;
	sim_build(src, p, len);
	p->pkt.mem = SIM_MBUF_MEM;
	classify_pkt(&p->pkt, key);
	sub = sub_sched_classify(ss, SUB_DOWN, &p->pkt);
	assert_int_equal(sub, want);
	sub_sched_enqueue(ss, SUB_DOWN, sub, &p->pkt, now, dropped);
}

void
sim_sub_world_free(struct sub_sched *ss, struct sched *link[2], struct sub_set *set)
{
	struct sh_pkt_list rest;

	sh_pkt_list_init(&rest);
	sub_sched_flush(ss, SUB_DOWN, &rest);
	sub_sched_flush(ss, SUB_UP, &rest);
	sub_sched_free(ss);
	sched_free(link[SUB_DOWN]);
	sched_free(link[SUB_UP]);
	sub_set_free(set);
}

struct sim_src
sim_src_udp(uint32_t saddr, uint32_t daddr, uint16_t sport, uint64_t rate, uint32_t size)
{
	struct sim_src s;

	memset(&s, 0, sizeof(s));
	s.saddr = saddr;
	s.daddr = daddr;
	s.sport = sport;
	s.dport = 5001;
	s.proto = SIM_UDP;
	s.rate = rate;
	s.size = size;
	s.burst = 1;
	return s;
}

uint32_t
sim_add_src(struct sim *sim, const struct sim_src *tmpl)
{
	struct sim_src *s;

	assert_true(sim->nsrc < sim->src_cap);
	s = &sim->srcs[sim->nsrc];
	*s = *tmpl;
	if (s->burst == 0)
		s->burst = 1;
	if (s->flow_hash == 0)
		s->flow_hash = sim_hash_flow(s);
	if (s->src_hash == 0)
		s->src_hash = sim_mix32(s->saddr ^ 0x5bd1e995u);
	if (s->dst_hash == 0)
		s->dst_hash = sim_mix32(s->daddr ^ 0x5bd1e995u);
	s->next = s->start;
	s->on_start = s->start;
	s->ack_no = 1;
	return sim->nsrc++;
}

static struct sim_pkt *
sim_alloc(struct sim *sim)
{
	if (sim->nfree == 0) {
		sim->pool_empty++;
		return NULL;
	}
	return &sim->pool[sim->free_idx[--sim->nfree]];
}

static void
sim_release(struct sim *sim, struct sim_pkt *p)
{
	sim->free_idx[sim->nfree++] = (uint32_t)(p - sim->pool);
}

static void
sim_leave(struct sim *sim, struct sim_pkt *p)
{
	struct sim_src *s = &sim->srcs[p->src];

	sim->in_pkts--;
	sim->in_bytes -= p->pkt.len;
	sim->in_mem -= p->pkt.mem;
	s->backlog_pkts--;
	s->backlog_bytes -= p->pkt.len;
}

static void
sim_take_drops(struct sim *sim, struct sh_pkt_list *dropped)
{
	struct sh_pkt *d;

	while ((d = sh_pkt_list_pop(dropped)) != NULL) {
		struct sim_pkt *p = (struct sim_pkt *)d;
		struct sim_src *s = &sim->srcs[p->src];
		uint32_t r = d->drop_reason < SHAPER_DROP_MAX ? d->drop_reason : SHAPER_DROP_AQM;

		if (sim->check_fattest && r == SHAPER_DROP_OVERFLOW) {
			uint64_t max = 0;
			uint32_t i;

			for (i = 0; i < sim->nsrc; i++)
				if (sim->srcs[i].backlog_bytes > max)
					max = sim->srcs[i].backlog_bytes;
			sim->overflow_checked++;
			if (s->backlog_bytes != max)
				sim->fattest_violations++;
		}
		sim_leave(sim, p);
		sim->drops[r]++;
		s->drops[r]++;
		if (sim->on_drop != NULL)
			sim->on_drop(sim, p, sim->ctx);
		sim_release(sim, p);
	}
}

struct sim_pkt *
sim_emit(struct sim *sim, uint32_t i)
{
	struct sim_src *s = &sim->srcs[i];
	struct sh_pkt_list dropped;
	struct sim_pkt *p = sim_alloc(sim);
	uint32_t len;

	if (p == NULL)
		return NULL;
	if (s->tcp_ack)
		len = 54;
	else if (s->size != 0)
		len = s->size;
	else
		len = sim_mix[s->mix++ % SIM_MIX_LEN];
	p->src = i;
	p->seq = s->seq++;
	p->born = sim->now;
	if (s->tcp_ack)
		s->ack_no += 2896; /* every ACK covers two more segments */
	sim_build(s, p, len);
	p->pkt.mem = sim->mem_per_pkt != 0 ? sim->mem_per_pkt : SIM_MBUF_MEM;

	s->tx_pkts++;
	s->tx_bytes += len;
	s->backlog_pkts++;
	s->backlog_bytes += len;
	sim->enq++;
	sim->in_pkts++;
	sim->in_bytes += len;
	sim->in_mem += p->pkt.mem;
	if (sim->on_emit != NULL)
		sim->on_emit(sim, p, sim->ctx);
	sh_pkt_list_init(&dropped);
	sched_enqueue(sim->s, &p->pkt, sim->now, &dropped);
	if (sim->in_mem > sim->max_in_mem) {
		/* Sample after the scheduler's own overflow drops. */
		uint64_t mem = sim->in_mem;
		struct sh_pkt *d;

		for (d = dropped.head; d != NULL; d = d->next)
			mem -= d->mem;
		if (mem > sim->max_in_mem)
			sim->max_in_mem = mem;
	}
	sim_take_drops(sim, &dropped);
	/* After the enqueue's own drops (overflow, ACK filter). */
	if (s->backlog_pkts > s->max_backlog_pkts)
		s->max_backlog_pkts = s->backlog_pkts;
	return p;
}

int
sim_dequeue_once(struct sim *sim)
{
	struct sh_pkt_list dropped;
	struct sh_pkt *d;
	struct sim_pkt *p;
	struct sim_src *s;
	int ret;

	sh_pkt_list_init(&dropped);
	d = sched_dequeue(sim->s, sim->now, &dropped);
	sim_take_drops(sim, &dropped);
	if (d == NULL)
		return -1;
	p = (struct sim_pkt *)d;
	s = &sim->srcs[p->src];
	sim_leave(sim, p);
	sim->deq++;
	s->rx_pkts++;
	s->rx_bytes += d->len;
	s->rx_adj += d->adj_len;
	if (sim->now >= sim->meas_start && sim->now < sim->meas_end) {
		s->meas_pkts++;
		s->meas_bytes += d->len;
		s->meas_adj += d->adj_len;
	}
	if (p->seq < s->last_rx_seq)
		s->reorders++;
	s->last_rx_seq = p->seq;
	if ((p->buf[15] & 3) == 3)
		s->ce++;
	if (s->delays != NULL && s->delays_n < s->delays_cap)
		s->delays[s->delays_n++] = sim->now - p->born;
	if (sim->line_rate != 0)
		sim->line_free = sim->now + (uint64_t)d->adj_len * SIM_NS / sim->line_rate;
	if (sim->on_deliver != NULL)
		sim->on_deliver(sim, p, sim->ctx);
	ret = (int)p->src;
	sim_release(sim, p);
	return ret;
}

/* Schedule the source's next emission after one was made. */
static void
sim_src_advance(struct sim_src *s, uint32_t len)
{
	if (s->interval != 0) {
		s->next += s->interval;
	} else {
		s->cum_bytes += len;
		s->next = s->on_start + (uint64_t)((double)s->cum_bytes * 1e9 / (double)s->rate);
	}
	if (s->on_ns != 0 && s->next >= s->on_start + s->on_ns) {
		s->on_start += s->on_ns + s->off_ns;
		s->cum_bytes = 0;
		s->next = s->on_start;
	}
}

static inline bool
sim_src_live(const struct sim_src *s)
{
	return (s->rate != 0 || s->interval != 0) && (s->stop == 0 || s->next < s->stop);
}

/* When the source really sends its next packet (after a hiccup if in one). */
static inline uint64_t
sim_src_when(const struct sim_src *s)
{
	uint64_t t = s->next;

	if (s->hiccup_every != 0 && t % s->hiccup_every >= s->hiccup_every - s->hiccup_ns)
		t = (t / s->hiccup_every + 1) * s->hiccup_every;
	return t;
}

void
sim_run(struct sim *sim, uint64_t until)
{
	uint64_t stall_until = 0;

	for (;;) {
		uint64_t t_src = UINT64_MAX, t_deq;
		uint32_t i, who = 0;

		for (i = 0; i < sim->nsrc; i++) {
			struct sim_src *s = &sim->srcs[i];

			if (sim_src_live(s) && sim_src_when(s) < t_src) {
				t_src = sim_src_when(s);
				who = i;
			}
		}
		t_deq = sched_next_time(sim->s, sim->now);
		if (t_deq != UINT64_MAX) {
			if (sim->line_rate != 0 && t_deq < sim->line_free)
				t_deq = sim->line_free;
			if (t_deq < stall_until)
				t_deq = stall_until;
		}
		if (t_src != UINT64_MAX && t_src >= sim->pause_from && t_src < sim->pause_until)
			t_src = sim->pause_until;
		if (t_deq != UINT64_MAX && t_deq >= sim->pause_from && t_deq < sim->pause_until)
			t_deq = sim->pause_until;
		if (t_src >= until && t_deq >= until) {
			sim->now = until;
			return;
		}
		if (t_src <= t_deq) {
			struct sim_src *s = &sim->srcs[who];
			uint32_t b, len = 0;

			sim->now = t_src;
			for (b = 0; b < s->burst; b++) {
				struct sim_pkt *p = sim_emit(sim, who);

				if (p != NULL)
					len += p->pkt.len;
			}
			sim_src_advance(s, len != 0 ? len : (s->size != 0 ? s->size : 1514));
		} else {
			sim->now = t_deq;
			if (sim_dequeue_once(sim) < 0 &&
			    sched_next_time(sim->s, sim->now) <= sim->now) {
				/* Due but nothing came out: a scheduler fault. */
				sim->stalls++;
				stall_until = sim->now + 1;
			}
		}
	}
}

void
sim_drain(struct sim *sim)
{
	uint32_t i;

	for (i = 0; i < sim->nsrc; i++) {
		sim->srcs[i].rate = 0;
		sim->srcs[i].interval = 0;
	}
	while (sched_next_time(sim->s, sim->now) != UINT64_MAX) {
		uint64_t t = sched_next_time(sim->s, sim->now);

		if (sim->line_rate != 0 && t < sim->line_free)
			t = sim->line_free;
		sim->now = t > sim->now ? t : sim->now;
		if (sim_dequeue_once(sim) < 0 && sched_next_time(sim->s, sim->now) <= sim->now) {
			sim->stalls++;
			sim->now++;
			if (sim->stalls > 1000)
				fail_msg("scheduler stalls while draining");
		}
	}
}

static const char *sim_watchdog_what;

static void
sim_watchdog_fire(int sig)
{
	static const char pre[] = "watchdog: still running: ";
	const char *w = sim_watchdog_what != NULL ? sim_watchdog_what : "?";

	(void)sig;
	/* Only async-signal-safe calls here. */
	if (write(STDERR_FILENO, pre, sizeof(pre) - 1) < 0 ||
	    write(STDERR_FILENO, w, strlen(w)) < 0 || write(STDERR_FILENO, "\n", 1) < 0)
		_exit(2);
	_exit(1);
}

void
sim_watchdog(unsigned int seconds, const char *what)
{
	sim_watchdog_what = what;
	signal(SIGALRM, sim_watchdog_fire);
	alarm(seconds);
}

bool
sim_short(void)
{
	const char *v = getenv("SHAPER_SIM_SHORT");

	return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

void
sim_check_accounting(struct sim *sim)
{
	struct sched_stats st;
	uint64_t dropped = 0, tin_backlog = 0;
	uint32_t r, i;

	sched_get_stats(sim->s, &st);
	for (r = 0; r < SHAPER_DROP_MAX; r++) {
		dropped += st.dropped[r];
		assert_int_equal(st.dropped[r], sim->drops[r]);
	}
	assert_int_equal(st.enqueued_pkts, st.dequeued_pkts + dropped + st.backlog_pkts);
	assert_int_equal(st.enqueued_pkts, sim->enq);
	assert_int_equal(st.dequeued_pkts, sim->deq);
	assert_int_equal(st.backlog_pkts, sim->in_pkts);
	assert_int_equal(st.backlog_bytes, sim->in_bytes);
	for (i = 0; i < st.tin_count; i++)
		tin_backlog += st.tins[i].backlog_bytes;
	/* Tins of an old diffserv mode may still drain: never more than all. */
	assert_true(tin_backlog <= st.backlog_bytes);
	assert_int_equal(sim->nfree + sim->in_pkts, sim->pool_len);
	assert_int_equal(sim->stalls, 0);
	assert_int_equal(sim->pool_empty, 0);
}

double
sim_jain(const double *x, uint32_t n)
{
	double s = 0, s2 = 0;
	uint32_t i;

	for (i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
	}
	return s2 > 0 ? s * s / (n * s2) : 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t
sim_percentile(uint64_t *v, uint32_t n, double p)
{
	uint32_t k;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u64);
	k = (uint32_t)(p / 100.0 * (n - 1) + 0.5);
	return v[k < n ? k : n - 1];
}
