/*
 * Differential test: the project's CAKE (sched_*) and the reference model
 * (cake_model.c, written from sch_cake's behaviour) run in lockstep over
 * seeded random programs: packets of random flows, hosts, DSCPs, sizes,
 * ECN bits and MAC header lengths (Ethernet, VLAN, PPPoE; IPv4, IPv6,
 * non-IP), time steps, dequeues and live updates, over every diffserv and
 * isolation mode, shaped and unshaped, egress and ingress, raw and
 * overhead/mpu/ATM/PTM, ECN on and off, derived and tiny memory limits,
 * flow and host hashes aimed at a few sets so ways fill and collide. After
 * every call it compares the packet returned (id, tin, adjusted length,
 * ECN and DSCP bits as rewritten), every drop and its reason, next_time
 * and the whole statistics block (qdisc-wide and per tin). A mismatch
 * names the program seed and step, so it can be replayed alone with
 * CAKE_MODEL_SEED=<seed>.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cake_model.h"
#include "shaper/rand.h"
#include "shaper/sched.h"

#define POOL      6000
#define MAX_FLOWS 64
#define MAX_HOSTS 24
#define STEPS     1500

struct tpkt {
	struct sh_pkt pkt; /* first: an sh_pkt * converts back */
	struct cm_pkt m;
	bool busy;
	uint8_t dscp; /* what it should leave with: 0 if washed at enqueue */
	uint8_t buf[96];
};

struct tflow {
	uint32_t flow_hash, src_hash, dst_hash;
	uint8_t dscp, ecn, net_off, family; /* family 4, 6, 0 = not IP */
	uint32_t min_len, max_len;
};

struct prog {
	uint64_t rng;
	uint64_t seed;
	uint32_t step;
	struct sched_params p;
	struct sched *s;
	struct cake_model *m;
	uint64_t now;
	struct tpkt *pool;
	uint32_t free_n, free_idx[POOL];
	struct tflow flows[MAX_FLOWS];
	uint32_t nflows;
	const char *op;
	bool l4s; /* an l4s program: the step may be switched by updates */
};

/* What all programs together exercised: the test fails if a kind is never met. */
static struct {
	uint64_t programs, deq, aqm, overflow, self_drop, marks, cols, inds, misses;
	uint64_t overlimits, updates, unresponsive, decaying_seen, bulk_seen, retired;
	uint64_t step_marks;
} cover;

static uint64_t
rnd(struct prog *g)
{
	return sh_rand64(&g->rng);
}

static uint32_t
rndn(struct prog *g, uint32_t n)
{
	return (uint32_t)(rnd(g) % n);
}

#define MISMATCH(g, ...)                                                                           \
	do {                                                                                       \
		char msg_[256];                                                                    \
		snprintf(msg_, sizeof(msg_), __VA_ARGS__);                                         \
		fail_msg("program seed %llu (%s), step %u after %s, now %llu: %s",                 \
			 (unsigned long long)(g)->seed, desc(g), (g)->step, (g)->op,               \
			 (unsigned long long)(g)->now, msg_);                                      \
	} while (0)

static const char *
desc(const struct prog *g)
{
	static char d[160];

	snprintf(d, sizeof(d),
		 "diffserv %d iso %d rate %llu ingress %d ecn %d ovh_mode %d ovh %d mpu %u "
		 "framing %d memlimit %llu",
		 (int)g->p.diffserv, (int)g->p.isolation, (unsigned long long)g->p.rate,
		 g->p.ingress, g->p.ecn, g->p.overhead_mode, g->p.overhead, g->p.mpu,
		 (int)g->p.framing, (unsigned long long)g->p.memlimit);
	return d;
}

/* ------------------------------------------------------------ packets */

static void
write_headers(struct tpkt *t, const struct tflow *fl)
{
	uint8_t *b = t->buf;
	uint8_t ds = (uint8_t)(fl->dscp << 2 | fl->ecn);
	uint16_t off = fl->net_off;

	memset(b, 0, sizeof(t->buf));
	t->pkt.data = b;
	t->pkt.hdr_len = sizeof(t->buf);
	t->pkt.l3_off = SH_OFF_NONE;
	t->pkt.l4_off = SH_OFF_NONE;
	t->pkt.flags = 0;
	if (fl->family == 4) {
		b[off] = 0x45;
		b[off + 1] = ds;
		b[off + 8] = 64;
		b[off + 9] = 17;
		t->pkt.flags = SH_PKT_IPV4 | SH_PKT_UDP;
		t->pkt.l3_off = off;
		t->pkt.l4_off = (uint16_t)(off + 20);
		t->pkt.l4_proto = 17;
	} else if (fl->family == 6) {
		b[off] = (uint8_t)(0x60 | ds >> 4);
		b[off + 1] = (uint8_t)(ds << 4);
		b[off + 6] = 17;
		b[off + 7] = 64;
		t->pkt.flags = SH_PKT_IPV6 | SH_PKT_UDP;
		t->pkt.l3_off = off;
		t->pkt.l4_off = (uint16_t)(off + 40);
		t->pkt.l4_proto = 17;
	}
}

/* The DS field of a packet as it is now (after wash or CE marking). */
static uint8_t
ds_now(const struct tpkt *t)
{
	const uint8_t *ip = t->buf + t->pkt.l3_off;

	if (t->pkt.flags & SH_PKT_IPV4)
		return ip[1];
	if (t->pkt.flags & SH_PKT_IPV6)
		return (uint8_t)((ip[0] & 0x0f) << 4 | ip[1] >> 4);
	return 0;
}

static struct tpkt *
new_pkt(struct prog *g, const struct tflow *fl)
{
	uint32_t idx;
	struct tpkt *t;
	uint32_t len;

	if (g->free_n == 0)
		return NULL;
	idx = g->free_idx[--g->free_n];
	t = &g->pool[idx];
	assert_false(t->busy);
	memset(&t->pkt, 0, sizeof(t->pkt));
	memset(&t->m, 0, sizeof(t->m));
	t->busy = true;
	write_headers(t, fl);
	len = fl->min_len + rndn(g, fl->max_len - fl->min_len + 1);
	t->pkt.len = len;
	t->pkt.mem = g->p.pkt_mem != 0 ? g->p.pkt_mem : len + 256;
	t->pkt.flow_hash = fl->flow_hash;
	t->pkt.src_hash = fl->src_hash;
	t->pkt.dst_hash = fl->dst_hash;
	t->pkt.dscp = fl->dscp;
	t->pkt.ecn = fl->ecn;
	t->pkt.net_off = fl->net_off;
	t->dscp = g->p.wash ? 0 : fl->dscp;

	t->m.id = idx;
	t->m.len = len;
	t->m.net_off = fl->net_off;
	t->m.mem = t->pkt.mem;
	t->m.flow_hash = fl->flow_hash;
	t->m.src_hash = fl->src_hash;
	t->m.dst_hash = fl->dst_hash;
	t->m.dscp = fl->dscp;
	t->m.ecn = fl->ecn;
	t->m.markable = fl->family != 0;
	return t;
}

static void
release(struct prog *g, struct tpkt *t)
{
	assert_true(t->busy);
	t->busy = false;
	g->free_idx[g->free_n++] = t->m.id;
}

/* Compare the implementation's drop list with the model's and free them. */
static void
match_drops(struct prog *g, struct sh_pkt_list *dl, const struct cm_drops *md)
{
	uint32_t i = 0;
	struct sh_pkt *d;

	if (dl->count != md->n)
		MISMATCH(g, "%u drops, the model %u", dl->count, md->n);
	while ((d = sh_pkt_list_pop(dl)) != NULL) {
		struct tpkt *t = (struct tpkt *)d;

		if (t->m.id != md->d[i].id || d->drop_reason != md->d[i].reason)
			MISMATCH(g, "drop %u: packet %u (%s), the model packet %u (%s)", i, t->m.id,
				 shaper_drop_name(d->drop_reason), md->d[i].id,
				 shaper_drop_name(md->d[i].reason));
		if (d->drop_reason == SHAPER_DROP_AQM)
			cover.aqm++;
		else if (d->drop_reason == SHAPER_DROP_OVERFLOW)
			cover.overflow++;
		release(g, t);
		i++;
	}
}

/* ------------------------------------------------------------ checks */

#define SAME(field)                                                                                \
	do {                                                                                       \
		if (a.field != b.field)                                                            \
			MISMATCH(g, "stats " #field ": %llu, the model %llu",                      \
				 (unsigned long long)a.field, (unsigned long long)b.field);        \
	} while (0)
#define SAME_TIN(field)                                                                            \
	do {                                                                                       \
		if (a.tins[i].field != b.tins[i].field)                                            \
			MISMATCH(g, "tin %u (%s) " #field ": %llu, the model %llu", i,             \
				 a.tins[i].name, (unsigned long long)a.tins[i].field,              \
				 (unsigned long long)b.tins[i].field);                             \
	} while (0)

static void
compare_state(struct prog *g)
{
	struct sched_stats a, b;
	uint64_t nt = sched_next_time(g->s, g->now), mt = cm_next_time(g->m, g->now);
	uint32_t i;

	if (nt != mt)
		MISMATCH(g, "next_time %llu, the model %llu", (unsigned long long)nt,
			 (unsigned long long)mt);
	sched_get_stats(g->s, &a);
	memset(&b, 0, sizeof(b));
	cm_stats(g->m, &b);
	SAME(backlog_pkts);
	SAME(backlog_bytes);
	SAME(overlimits);
	SAME(ecn_marked);
	SAME(memory_used);
	SAME(memory_limit);
	SAME(min_network_size);
	SAME(max_network_size);
	SAME(min_adj_size);
	SAME(max_adj_size);
	SAME(avg_hdr_offset);
	SAME(tin_count);
	for (i = 0; i < a.tin_count; i++) {
		if (strcmp(a.tins[i].name, b.tins[i].name) != 0)
			MISMATCH(g, "tin %u name %s, the model %s", i, a.tins[i].name,
				 b.tins[i].name);
		SAME_TIN(threshold_rate);
		SAME_TIN(target_us);
		SAME_TIN(interval_us);
		SAME_TIN(peak_delay_us);
		SAME_TIN(avg_delay_us);
		SAME_TIN(base_delay_us);
		SAME_TIN(sent_packets);
		SAME_TIN(sent_bytes);
		SAME_TIN(backlog_bytes);
		SAME_TIN(way_indirect_hits);
		SAME_TIN(way_misses);
		SAME_TIN(way_collisions);
		SAME_TIN(drops);
		SAME_TIN(ecn_mark);
		SAME_TIN(ack_drops);
		SAME_TIN(ect1_packets);
		SAME_TIN(step_marks);
		SAME_TIN(sparse_flows);
		SAME_TIN(bulk_flows);
		SAME_TIN(unresponsive_flows);
		SAME_TIN(max_pkt_len);
		SAME_TIN(flow_quantum);
		if (memcmp(a.tins[i].sojourn, b.tins[i].sojourn, sizeof(a.tins[i].sojourn)) != 0)
			MISMATCH(g, "tin %u sojourn histogram differs", i);
		if (memcmp(a.tins[i].sparse_sojourn, b.tins[i].sparse_sojourn,
			   sizeof(a.tins[i].sparse_sojourn)) != 0)
			MISMATCH(g, "tin %u sparse sojourn histogram differs", i);
		if (a.tins[i].unresponsive_flows != 0)
			cover.unresponsive++;
		if (a.tins[i].sparse_flows > 0)
			cover.decaying_seen++;
		if (a.tins[i].bulk_flows > 0)
			cover.bulk_seen++;
	}
}

/* ------------------------------------------------------------ operations */

static void
do_enqueue(struct prog *g, struct tflow *fl)
{
	struct sh_pkt_list dl;
	struct cm_drops *md = calloc(1, sizeof(*md));
	uint32_t hint[CM_MAX_DROPS], nh = 0;
	struct tpkt *t = new_pkt(g, fl);
	struct sh_pkt *d;
	int rs, rm;

	assert_non_null(md);
	if (t == NULL) {
		free(md);
		return;
	}
	g->op = "enqueue";
	sh_pkt_list_init(&dl);
	rs = sched_enqueue(g->s, &t->pkt, g->now, &dl);
	for (d = dl.head; d != NULL && nh < CM_MAX_DROPS; d = d->next)
		if (d->drop_reason == SHAPER_DROP_OVERFLOW)
			hint[nh++] = ((struct tpkt *)d)->m.id;
	rm = cm_enqueue(g->m, &t->m, g->now, hint, nh, md);
	if (rs != rm)
		MISMATCH(g, "enqueue of packet %u returned %d, the model %d", t->m.id, rs, rm);
	if (rs == 1)
		cover.self_drop++;
	if (rs == 0 && t->pkt.tin != t->m.tin)
		MISMATCH(g, "packet %u in tin %u, the model %u", t->m.id, t->pkt.tin, t->m.tin);
	if (rs == 0 && t->pkt.adj_len != t->m.adj)
		MISMATCH(g, "packet %u adj_len %u, the model %u", t->m.id, t->pkt.adj_len,
			 t->m.adj);
	match_drops(g, &dl, md);
	free(md);
}

/* Dequeue until either side has nothing or max packets left. */
static void
do_dequeue(struct prog *g, uint32_t max)
{
	struct cm_drops *md = calloc(1, sizeof(*md));

	assert_non_null(md);
	g->op = "dequeue";
	for (uint32_t n = 0; n < max; n++) {
		struct sh_pkt_list dl;
		struct sh_pkt *p;
		struct cm_pkt *q;

		sh_pkt_list_init(&dl);
		md->n = 0;
		p = sched_dequeue(g->s, g->now, &dl);
		q = cm_dequeue(g->m, g->now, md);
		match_drops(g, &dl, md);
		if ((p == NULL) != (q == NULL))
			MISMATCH(g, "dequeue gave %s, the model %s", p ? "a packet" : "nothing",
				 q ? "a packet" : "nothing");
		if (p == NULL)
			break;
		{
			struct tpkt *t = (struct tpkt *)p;
			uint8_t ds = ds_now(t);

			if (t->m.id != q->id)
				MISMATCH(g, "dequeued packet %u, the model %u", t->m.id, q->id);
			if (t->pkt.flags & (SH_PKT_IPV4 | SH_PKT_IPV6)) {
				if ((ds & 3) != q->ecn)
					MISMATCH(g, "packet %u leaves with ECN %u, the model %u",
						 t->m.id, ds & 3, q->ecn);
				if ((ds >> 2) != t->dscp)
					MISMATCH(g, "packet %u leaves with DSCP %u, not %u",
						 t->m.id, ds >> 2, t->dscp);
				if ((ds & 3) == 3 && t->pkt.ecn != 3)
					cover.marks++;
			}
			cover.deq++;
			release(g, t);
		}
	}
	free(md);
}

/* ------------------------------------------------------------ programs */

static const uint64_t rates[] = { 0, 0, 125000, 625000, 1250000, 12500000, 125000000 };
static const uint8_t dscps[] = {
	0, 1, 2, 4, 8, 10, 16, 18, 24, 26, 32, 34, 40, 44, 46, 48, 56, 63
};

static void
random_overheads(struct prog *g, struct sched_params *p)
{
	p->overhead_mode = rndn(g, 2) != 0;
	p->overhead = p->overhead_mode || rndn(g, 4) == 0 ? (int32_t)rndn(g, 321) - 64 : 0;
	p->mpu = rndn(g, 3) == 0 ? rndn(g, 257) : 0;
	p->framing = (enum sched_framing)rndn(g, 3);
}

static void
random_timing(struct prog *g, struct sched_params *p)
{
	static const uint32_t rtts[] = { 100000, 10000, 1000, 300000, 30000 };

	p->rtt_us = rtts[rndn(g, 5)];
	p->target_us = rndn(g, 4) == 0 ? 1 + rndn(g, p->rtt_us) : p->rtt_us / 20;
	p->ecn = rndn(g, 4) != 0;
	p->ingress = rndn(g, 3) == 0;
	p->wash = rndn(g, 4) == 0;
	p->memlimit = rndn(g, 3) == 0 ? 8000 + rndn(g, 200000) : 0;
}

/* l4s programs: the step on or off (a live switch recounts), its value, nqb. */
static void
random_l4s(struct prog *g, struct sched_params *p)
{
	static const uint32_t steps[] = { 500, 1, 1000, 3000, 20000 };

	p->l4s = rndn(g, 4) != 0;
	p->l4s_step_us = steps[rndn(g, 5)];
	p->nqb = rndn(g, 2) != 0;
}

/* A hash whose queue lies in one of a few sets, so ways fill up and collide. */
static uint32_t
crowded_hash(struct prog *g)
{
	return (uint32_t)(rnd(g) << 10) | (rndn(g, 3) * 8 + rndn(g, 8));
}

static void
make_flows(struct prog *g)
{
	uint32_t hosts[MAX_HOSTS], nhosts = 1 + rndn(g, MAX_HOSTS), i;
	bool crowd = rndn(g, 2) != 0;

	/* Sometimes more hosts than one host set has ways: they share slots (sch_cake's
	 * set-associative cake_hash()). */
	bool one_set = crowd && rndn(g, 2) != 0;

	for (i = 0; i < nhosts; i++)
		hosts[i] = one_set               ? (uint32_t)(rnd(g) << 10) | rndn(g, 8)
			   : crowd && rndn(g, 2) ? crowded_hash(g)
						 : (uint32_t)(rnd(g) >> 32);
	g->nflows = 1 + rndn(g, MAX_FLOWS);
	for (i = 0; i < g->nflows; i++) {
		struct tflow *f = &g->flows[i];
		static const uint8_t offs[] = { 14, 14, 18, 22, 26 };

		f->family = (uint8_t[]){ 4, 4, 6, 0 }[rndn(g, 4)];
		f->net_off = offs[rndn(g, 5)];
		f->src_hash = f->family ? hosts[rndn(g, nhosts)] : 0;
		f->dst_hash = f->family ? hosts[rndn(g, nhosts)] : 0;
		f->flow_hash = crowd && rndn(g, 2) ? crowded_hash(g) : (uint32_t)(rnd(g) >> 32);
		f->dscp = f->family ? dscps[rndn(g, sizeof(dscps))] : (rndn(g, 2) ? 56 : 0);
		f->ecn = f->family ? (uint8_t)rndn(g, 4) : 0;
		f->min_len = 60 + rndn(g, 200);
		f->max_len = rndn(g, 2) ? f->min_len : f->min_len + rndn(g, 1515 - f->min_len);
	}
}

static void
advance_time(struct prog *g)
{
	uint64_t nt = sched_next_time(g->s, g->now);
	uint32_t r = rndn(g, 100);

	g->op = "time step";
	if (r < 40 && nt != UINT64_MAX && nt > g->now)
		g->now = nt - (rndn(g, 4) == 0 ? 1 : 0);
	else if (r < 90)
		g->now += rnd(g) % 2000000;
	else if (r < 98)
		g->now += rnd(g) % 200000000;
	else
		g->now += rnd(g) % 3000000000ull;
}

static void
live_update(struct prog *g)
{
	struct sched_params p = g->p;
	char err[128];

	g->op = "update";
	switch (rndn(g, 6)) {
	case 0:
		p.rate = rates[rndn(g, sizeof(rates) / sizeof(rates[0]))];
		break;
	case 1:
		random_overheads(g, &p);
		break;
	case 2:
		random_timing(g, &p);
		break;
	case 3:
		p.isolation = (enum sched_isolation)rndn(g, 8);
		break;
	case 4:
		p.diffserv = (enum sched_diffserv)rndn(g, 5);
		break;
	default:
		p.lag_limit_ns = rndn(g, 2) ? SCHED_LAG_AUTO : 1000 + rnd(g) % 100000000;
		break;
	}
	if (g->l4s && rndn(g, 4) == 0)
		random_l4s(g, &p);
	if (sched_update(g->s, &p, err, sizeof(err)) != 0)
		fail_msg("update refused: %s", err);
	cm_update(g->m, &p);
	g->p = p;
	cover.updates++;
}

static void
run_program(uint64_t seed, enum sched_diffserv ds, enum sched_isolation iso, bool l4s)
{
	struct prog *g = calloc(1, sizeof(*g));
	char err[128];
	uint32_t hot = 0, i;

	assert_non_null(g);
	g->seed = seed;
	g->rng = seed * 2 + 1;
	rnd(g);
	g->pool = calloc(POOL, sizeof(*g->pool));
	assert_non_null(g->pool);
	for (i = 0; i < POOL; i++)
		g->free_idx[g->free_n++] = POOL - 1 - i;

	sched_params_default(&g->p, SCHED_DISC_CAKE);
	g->p.diffserv = ds;
	g->p.isolation = iso;
	g->p.rate = rates[rndn(g, sizeof(rates) / sizeof(rates[0]))];
	g->p.seed = rnd(g);
	g->p.pkt_mem = (uint32_t[]){ 0, 2304, 2496 }[rndn(g, 3)];
	if (rndn(g, 2))
		random_overheads(g, &g->p);
	if (rndn(g, 2))
		random_timing(g, &g->p);
	g->l4s = l4s;
	if (l4s)
		random_l4s(g, &g->p);
	g->s = sched_create(&g->p, err, sizeof(err));
	if (g->s == NULL)
		fail_msg("sched_create: %s", err);
	g->m = cm_new(&g->p);
	g->now = 1000000000ull + rnd(g) % 1000000000ull;
	make_flows(g);

	for (g->step = 0; g->step < STEPS; g->step++) {
		uint32_t r = rndn(g, 100);

		if (r < 45) {
			uint32_t n = 1 + rndn(g, rndn(g, 4) == 0 ? 40 : 6);

			if (rndn(g, 8) == 0)
				hot = rndn(g, g->nflows);
			for (i = 0; i < n; i++)
				do_enqueue(g, &g->flows[rndn(g, 3) ? hot : rndn(g, g->nflows)]);
		} else if (r < 80) {
			do_dequeue(g, 1 + rndn(g, 24));
		} else if (r < 99) {
			advance_time(g);
		} else {
			live_update(g);
		}
		compare_state(g);
		cover.retired += cm_retired_tins(g->m) != 0;
	}
	/* Drain: follow next_time until both are empty. */
	for (i = 0; i < 100000 && sched_next_time(g->s, g->now) != UINT64_MAX; i++) {
		uint64_t nt = sched_next_time(g->s, g->now);

		g->now = nt > g->now ? nt : g->now + 1000;
		do_dequeue(g, 64);
		compare_state(g);
	}
	if (cm_next_time(g->m, g->now) != UINT64_MAX)
		MISMATCH(g, "the model still holds packets after the drain");
	{
		struct sched_stats st;

		sched_get_stats(g->s, &st);
		cover.overlimits += st.overlimits;
		for (i = 0; i < st.tin_count; i++) {
			cover.cols += st.tins[i].way_collisions;
			cover.inds += st.tins[i].way_indirect_hits;
			cover.step_marks += st.tins[i].step_marks;
			cover.misses += st.tins[i].way_misses;
		}
	}
	assert_int_equal(g->free_n, POOL);
	cover.programs++;
	cm_free(g->m);
	sched_free(g->s);
	free(g->pool);
	free(g);
}

/* Programs per (diffserv, isolation) pair; CAKE_MODEL_RUNS overrides. */
static uint32_t
runs_per_mode(void)
{
	const char *e = getenv("CAKE_MODEL_RUNS");

	return e != NULL ? (uint32_t)strtoul(e, NULL, 10) : 3;
}

/*
 * The l4s set runs a third as many: the step's law is one rule beside
 * COBALT's, and each (diffserv, isolation) pair still gets a program.
 */
static uint32_t
l4s_runs_per_mode(void)
{
	return (runs_per_mode() + 2) / 3;
}

static void
run_diffserv_l4s(enum sched_diffserv ds, bool l4s)
{
	const char *one = getenv("CAKE_MODEL_SEED");
	uint32_t runs = l4s ? l4s_runs_per_mode() : runs_per_mode();

	for (uint32_t iso = 0; iso < 8; iso++) {
		for (uint32_t r = 0; r < runs; r++) {
			uint64_t seed = (uint64_t)l4s << 40 | ((uint64_t)ds << 32) | (iso << 16) |
					r;

			if (one != NULL && strtoull(one, NULL, 0) != seed)
				continue;
			run_program(seed, ds, (enum sched_isolation)iso, l4s);
		}
	}
}

static void
run_diffserv(enum sched_diffserv ds)
{
	run_diffserv_l4s(ds, false);
}

/* Programs with the l4s step (and nqb) in every mode; ECT(1), CE and classic mixed in flows. */
static void
test_l4s(void **state)
{
	(void)state;
	for (uint32_t ds = 0; ds <= SCHED_PRECEDENCE; ds++)
		run_diffserv_l4s((enum sched_diffserv)ds, true);
}

static void
test_besteffort(void **state)
{
	(void)state;
	run_diffserv(SCHED_BESTEFFORT);
}

static void
test_diffserv3(void **state)
{
	(void)state;
	run_diffserv(SCHED_DIFFSERV3);
}

static void
test_diffserv4(void **state)
{
	(void)state;
	run_diffserv(SCHED_DIFFSERV4);
}

static void
test_diffserv8(void **state)
{
	(void)state;
	run_diffserv(SCHED_DIFFSERV8);
}

static void
test_precedence(void **state)
{
	(void)state;
	run_diffserv(SCHED_PRECEDENCE);
}

/* The programs met every kind of event the comparison is meant to cover. */
static void
test_coverage(void **state)
{
	(void)state;
	if (getenv("CAKE_MODEL_SEED") != NULL)
		skip();
	printf("# figure: cake model: %llu programs, %llu packets delivered, %llu aqm drops, "
	       "%llu overflow drops (%llu of the arriving packet), %llu CE marks, %llu updates, "
	       "%llu overlimits, way misses/inds/cols %llu/%llu/%llu, steps with retired tins draining %llu\n",
	       (unsigned long long)cover.programs, (unsigned long long)cover.deq,
	       (unsigned long long)cover.aqm, (unsigned long long)cover.overflow,
	       (unsigned long long)cover.self_drop, (unsigned long long)cover.marks,
	       (unsigned long long)cover.updates, (unsigned long long)cover.overlimits,
	       (unsigned long long)cover.misses, (unsigned long long)cover.inds,
	       (unsigned long long)cover.cols, (unsigned long long)cover.retired);
	assert_int_equal(cover.programs, 5 * 8 * (runs_per_mode() + l4s_runs_per_mode()));
	assert_true(cover.step_marks > 0);
	assert_true(cover.deq > 0);
	assert_true(cover.aqm > 0);
	assert_true(cover.overflow > 0);
	assert_true(cover.self_drop > 0);
	assert_true(cover.marks > 0);
	assert_true(cover.updates > 0);
	assert_true(cover.overlimits > 0);
	assert_true(cover.cols > 0);
	assert_true(cover.inds > 0);
	assert_true(cover.unresponsive > 0);
	assert_true(cover.bulk_seen > 0);
	assert_true(cover.retired > 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_besteffort), cmocka_unit_test(test_diffserv3),
		cmocka_unit_test(test_diffserv4),  cmocka_unit_test(test_diffserv8),
		cmocka_unit_test(test_precedence), cmocka_unit_test(test_l4s),
		cmocka_unit_test(test_coverage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
