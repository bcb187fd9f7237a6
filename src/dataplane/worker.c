/*
 * The worker loop: per direction, send what the output port refused last
 * turn, receive a burst, classify and enqueue it, dequeue what the shaper
 * allows, transmit, and free the scheduler's drops counted by reason.
 * Time is read once per turn and passed into the scheduler.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_ring.h>

#include "shaper/dataplane.h"
#include "shaper/log.h"

#define DP_IDLE_POLLS 256 /* empty turns before the worker naps */

/* rx_burst takes a uint16_t count. */
_Static_assert(SHAPER_BURST_MAX <= UINT16_MAX, "a burst must fit rte_eth_rx_burst's count");

static volatile int stop_flag;

void
dp_request_stop(void)
{
	__atomic_store_n(&stop_flag, 1, __ATOMIC_RELEASE);
}

bool
dp_stop_requested(void)
{
	return __atomic_load_n(&stop_flag, __ATOMIC_ACQUIRE) != 0;
}

/*
 * Ports the workers leave alone while the control thread stops and starts
 * them (dp_port_set_paused). Sequentially consistent on both sides, with
 * the heartbeat's store: a worker that began a loop after the control
 * thread set the flag sees it (dp_workers_quiesced).
 */
static uint8_t port_paused[RTE_MAX_ETHPORTS];

void
dp_port_set_paused(uint16_t port_id, bool paused)
{
	if (port_id < RTE_MAX_ETHPORTS)
		__atomic_store_n(&port_paused[port_id], paused ? 1 : 0, __ATOMIC_SEQ_CST);
}

bool
dp_workers_quiesced(const uint64_t *const *beats, unsigned int n, unsigned int timeout_us)
{
	uint64_t seen[SHAPER_MAX_WORKERS];
	unsigned int waited = 0, left;

	if (n > SHAPER_MAX_WORKERS)
		return false;
	for (unsigned int i = 0; i < n; i++)
		seen[i] = __atomic_load_n(beats[i], __ATOMIC_SEQ_CST);
	for (;;) {
		left = 0;
		for (unsigned int i = 0; i < n; i++)
			left += __atomic_load_n(beats[i], __ATOMIC_SEQ_CST) == seen[i];
		if (left == 0)
			return true;
		if (waited >= timeout_us)
			return false;
		rte_delay_us_sleep(50);
		waited += 50;
	}
}

static inline bool
port_is_paused(uint16_t port_id)
{
	return __atomic_load_n(&port_paused[port_id], __ATOMIC_SEQ_CST) != 0;
}

/* Free a list of dropped packets in bulk, counting each under its reason. */
static void
free_drops(struct dp_dir *d, struct sh_pkt_list *drops)
{
	struct rte_mbuf *batch[64];
	unsigned int n = 0;
	struct sh_pkt *p;

	while ((p = sh_pkt_list_pop(drops)) != NULL) {
		d->stats.dropped[p->drop_reason < SHAPER_DROP_MAX ? p->drop_reason
								  : SHAPER_DROP_AQM]++;
		batch[n++] = dp_pkt_mbuf(p);
		if (n == RTE_DIM(batch)) {
			rte_pktmbuf_free_bulk(batch, n);
			n = 0;
		}
	}
	if (n != 0)
		rte_pktmbuf_free_bulk(batch, n);
}

/* Queue a frame for the output port, its length kept beside it. */
static inline void
pending_add(struct dp_dir *d, uint16_t at, struct rte_mbuf *m)
{
	d->pending[at] = m;
	d->pending_len[at] = m->pkt_len;
}

/* Send as much of the pending queue as the port takes; keep the rest in order. */
static void
flush_pending(struct dp_dir *d)
{
	uint64_t bytes = 0;
	uint16_t sent, i;

	/* A paused port is being restarted: what waits, waits. */
	if (d->n_pending == 0 || unlikely(port_is_paused(d->tx_port)))
		return;
	/*
	 * The driver may free what it sent (net_null does at once), so sent
	 * mbufs are not read after the burst: their lengths were kept when
	 * they were queued. Reading them here instead cost a pass over the
	 * whole queue on every turn while the port refused frames.
	 */
	sent = rte_eth_tx_burst(d->tx_port, d->queue, d->pending, d->n_pending);
	for (i = 0; i < sent; i++)
		bytes += d->pending_len[i];
	d->stats.tx_packets += sent;
	d->stats.tx_bytes += bytes;
	if (sent < d->n_pending) {
		d->stats.tx_retries++;
		memmove(d->pending, d->pending + sent,
			(size_t)(d->n_pending - sent) * sizeof(d->pending[0]));
		memmove(d->pending_len, d->pending_len + sent,
			(size_t)(d->n_pending - sent) * sizeof(d->pending_len[0]));
	}
	d->n_pending -= sent;
}

static inline void
pkt_from_mbuf(struct rte_mbuf *m, uint32_t truesize)
{
	struct sh_pkt *p = dp_mbuf_pkt(m);

	p->next = NULL;
	p->data = rte_pktmbuf_mtod(m, uint8_t *);
	/* Headers may only be read from the first segment; the whole chain is charged. */
	p->hdr_len = m->data_len;
	p->len = m->pkt_len;
	p->mem = truesize * m->nb_segs;
}

/*
 * A frame in an mbuf of another pool (a net_ring or memif peer's, say) may
 * have no private area for its struct sh_pkt, and its pool is not in the
 * direction's budget: copy it into the direction's pool. NULL if the pool
 * is empty (counted as no_buffer).
 */
static struct rte_mbuf *
adopt_foreign(struct dp_dir *d, struct rte_mbuf *m)
{
	struct rte_mbuf *c = rte_pktmbuf_copy(m, d->pool, 0, UINT32_MAX);

	rte_pktmbuf_free(m);
	d->stats.rx_foreign++;
	if (c == NULL)
		d->stats.dropped[SHAPER_DROP_NO_BUFFER]++;
	return c;
}

/* Mark the LAN hosts (or flows) of a burst active: the shard's weight. */
static void
note_hosts(struct dp_dir *d, struct sh_pkt **pkts, unsigned int n)
{
	bool upstream = d->dir == SHAPER_UP;

	for (unsigned int i = 0; i < n; i++)
		share_hosts_note(&d->hosts, share_key(pkts[i], upstream, d->share_by));
}

void
dp_share_reapply(struct dp_dir *d, uint64_t now)
{
	if (d->share_group != NULL)
		share_shard_rebind(&d->share, d->sched, now);
}

void
dp_rate_applied(struct dp_dir *d, const struct sched_params *p, uint64_t now)
{
	dp_share_reapply(d, now);
	if (d->subs != NULL) {
		/* Several shards: the allocation shares the shard's part of the link. */
		sub_sched_set_link_rate(d->subs, sub_dir_of(d),
					d->share_group != NULL ? d->share.rate : p->rate, now);
		dp_subs_set_limit(d, p);
	}
}

/* The scheduler's backlog and next time, per subscriber or the link's own. */
static inline uint64_t
dir_next_time(const struct dp_dir *d, uint64_t now)
{
	return d->subs != NULL ? sub_sched_next_time(d->subs, sub_dir_of(d), now)
			       : sched_next_time(d->sched, now);
}

static inline unsigned int
dir_dequeue_burst(struct dp_dir *d, struct sh_pkt **pkts, unsigned int max, uint64_t now,
		  struct sh_pkt_list *drops)
{
	if (d->subs != NULL)
		return sub_sched_dequeue_burst(d->subs, sub_dir_of(d), pkts, max, now, drops);
	return sched_dequeue_burst(d->sched, pkts, max, now, drops);
}

/* Hand a burst (received here, or steered here) to the scheduler. */
static void
enqueue_burst(struct dp_dir *d, struct sh_pkt **pkts, unsigned int n, const uint32_t *subs,
	      uint64_t now, struct sh_pkt_list *drops)
{
	struct rtt_sample smp[SHAPER_BURST_MAX]; /* n <= SHAPER_BURST_MAX: one rx burst */
	unsigned int nsmp = 0;

	if (n == 0)
		return;
	if (d->rtt != NULL)
		nsmp = dp_rtt_burst(d->rtt, d->dir, pkts, n, now, smp);
	if (d->subs != NULL) {
		/* Each frame to its subscriber's CAKE; the samples to whom they time. */
		dp_subs_enqueue_burst(d, pkts, n, subs, smp, nsmp, now, drops);
		return;
	}
	if (d->share_group != NULL)
		note_hosts(d, pkts, n);
	if (sched_move_active(&d->move))
		sched_move_stage(&d->move, pkts, n, now, drops); /* behind the old backlog */
	else
		sched_enqueue_burst(d->sched, pkts, n, now, drops);
}

/*
 * Fail-open, while shaperd does not hold the line: the bridge forwarded
 * every frame rx finds (af_packet reads a copy; AF_XDP's queue holds what
 * came before the lease ran out), so sending it would repeat it, late.
 * Counted and freed; a short read says the queue is empty.
 */
static unsigned int
drop_stale(struct dp_dir *d, struct rte_mbuf **rx, uint16_t nb_rx, uint32_t burst)
{
	uint64_t bytes = 0;

	d->rx_drained = nb_rx < burst;
	if (nb_rx == 0)
		return 0;
	for (uint16_t i = 0; i < nb_rx; i++)
		bytes += rx[i]->pkt_len;
	d->stats.rx_packets += nb_rx;
	d->stats.rx_bytes += bytes;
	d->stats.dropped[SHAPER_DROP_STALE] += nb_rx;
	rte_pktmbuf_free_bulk(rx, nb_rx);
	return nb_rx;
}

/*
 * The rx stage: what other shards steered here, then a burst from the
 * port, classified (and steered) and handed to the scheduler. Returns the
 * frames taken in (*n_enq: those that went to this shard's scheduler).
 */
static unsigned int
dir_rx(struct dp_dir *d, uint64_t now, uint32_t burst, struct sh_pkt **pkts,
       struct sh_pkt_list *drops, unsigned int *n_enq)
{
	struct rte_mbuf *rx[SHAPER_BURST_MAX];
	uint32_t subs[SHAPER_BURST_MAX], *looked_up = NULL;
	unsigned int n_in = 0, n = 0;
	uint64_t rx_bytes = 0;
	uint16_t nb_rx;

	if (d->steer != NULL) {
		/*
		 * What the other shards' workers received for this one (classified
		 * already) goes in before this turn's own frames: it was received
		 * earlier, so a flow whose frames the kernel moved from another
		 * queue to this one (af_packet's fanout rollover) keeps its order.
		 */
		n_in = dp_steer_take(d, pkts, burst);
		enqueue_burst(d, pkts, n_in, NULL, now, drops);
	}
	*n_enq = n_in;
	d->rx_drained = false;
	if (unlikely(port_is_paused(d->rx_port)))
		return n_in;
	if (d->stick != NULL)
		nb_rx = dp_stick_rx(d->stick, d, rx, burst); /* this direction's VLAN */
	else
		nb_rx = rte_eth_rx_burst(d->rx_port, d->queue, rx, (uint16_t)burst);
	/*
	 * The clock after the read, not the turn's: a process stopped between
	 * the two would send what waited in the queue while the bridge had it.
	 */
	if (d->line_until != NULL) {
		if (unlikely(dp_now_ns() >= __atomic_load_n(d->line_until, __ATOMIC_ACQUIRE)))
			return n_in + drop_stale(d, rx, nb_rx, burst);
	}
	if (nb_rx == 0)
		return n_in;
	/* Stats summed locally: one update of the shared counters per burst. */
	for (uint16_t i = 0; i < nb_rx; i++) {
		struct rte_mbuf *m = rx[i];

		rx_bytes += m->pkt_len;
		if (unlikely(m->pool != d->pool) && d->pool != NULL) {
			m = adopt_foreign(d, m);
			if (m == NULL)
				continue;
		}
		rte_prefetch0(rte_pktmbuf_mtod(m, void *));
		pkt_from_mbuf(m, d->truesize);
		pkts[n++] = dp_mbuf_pkt(m);
	}
	d->stats.rx_packets += nb_rx;
	d->stats.rx_bytes += rx_bytes;
	classify_burst(pkts, n, &d->key);
	if (d->stick != NULL && d->dir == SHAPER_UP)
		dp_stick_retag_up(d->stick, pkts,
				  n); /* classified on the LAN VLAN, sent on the WAN's */
	if (d->steer != NULL && d->subs != NULL) {
		/* Each frame to its subscriber's shard, looked up once. */
		n = dp_subs_steer_burst(d, pkts, n, subs, drops);
		looked_up = subs;
	} else if (d->steer != NULL) {
		n = dp_steer_burst(d, pkts, n, drops);
	}
	enqueue_burst(d, pkts, n, looked_up, now, drops);
	*n_enq += n;
	return n_in + nb_rx;
}

/*
 * The tx stage: dequeue only what the output can hold (the rest waits in
 * the scheduler), through the delay line if there is one, and send.
 * Returns the frames handed to the port's queue.
 */
static unsigned int
dir_tx(struct dp_dir *d, uint64_t now, uint32_t burst, unsigned int room, struct sh_pkt **pkts,
       struct sh_pkt_list *drops)
{
	/* Ask the scheduler only once the shaper can release (keeps overlimits honest). */
	bool due = dir_next_time(d, now) <= now;
	unsigned int n_out = 0, i;

	if (d->emu == NULL) {
		if (due) {
			n_out = dir_dequeue_burst(d, pkts, room, now, drops);
			if (d->rtt != NULL)
				dp_rtt_departed(d->rtt, d->dir, pkts, n_out, now);
			for (i = 0; i < n_out; i++)
				pending_add(d, (uint16_t)(d->n_pending + i), dp_pkt_mbuf(pkts[i]));
			/* A host whose backlog drains is active though it sends nothing new. */
			if (d->share_group != NULL)
				note_hosts(d, pkts, n_out);
		}
	} else {
		/* The emulated path holds what the shaper released until its time. */
		unsigned int n_sched = due ? dir_dequeue_burst(d, pkts, burst, now, drops) : 0;

		if (d->rtt != NULL)
			dp_rtt_departed(d->rtt, d->dir, pkts, n_sched, now);
		if (d->share_group != NULL)
			note_hosts(d, pkts, n_sched);
		for (i = 0; i < n_sched; i++)
			emu_enqueue(d->emu, pkts[i], now, drops);
		while (n_out < room) {
			struct sh_pkt *p = emu_dequeue(d->emu, now);

			if (p == NULL)
				break;
			pending_add(d, (uint16_t)(d->n_pending + n_out), dp_pkt_mbuf(p));
			n_out++;
		}
	}
	d->n_pending = (uint16_t)(d->n_pending + n_out);
	flush_pending(d);
	return n_out;
}

/* One turn of one direction; returns the number of frames moved. */
unsigned int
dp_dir_turn(struct dp_dir *d, uint64_t now, uint32_t burst, uint64_t *next_due)
{
	struct sh_pkt *pkts[2 * SHAPER_BURST_MAX]; /* a dequeue takes up to 2 bursts */
	struct sh_pkt_list drops;
	unsigned int n_rx, n_enq, n_out, room, want;
	const bool owed = d->owing;
	const uint64_t tx_bytes0 = d->stats.tx_bytes;
	uint64_t t;

	sh_pkt_list_init(&drops);
	if (owed && now > d->turn_ns)
		d->stats.backlogged_ns += now - d->turn_ns;
	d->turn_ns = now;
	flush_pending(d);

	n_rx = dir_rx(d, now, burst, pkts, &drops, &n_enq);
	/*
	 * Release up to what came in this turn (own rx and steered, up to 2
	 * bursts) when the rate allows: a worker short of CPU then sheds load
	 * at its rx queue, for free, instead of classifying and queueing
	 * frames only to drop them as overflow.
	 */
	want = n_enq > burst ? n_enq : burst;
	room = DP_TX_PENDING_MAX - d->n_pending;
	if (room > want)
		room = want;
	n_out = dir_tx(d, now, burst, room, pkts, &drops);
	/* What this turn sent is what the backlogged time since the last one owed. */
	if (owed)
		d->stats.backlogged_tx_bytes += d->stats.tx_bytes - tx_bytes0;

	if (drops.count != 0)
		free_drops(d, &drops);
	if (d->share_group != NULL && share_due(&d->share, now)) {
		if (d->subs != NULL)
			dp_subs_share_tick(d, now);
		else
			share_tick(&d->share, d->sched, share_hosts_count(&d->hosts, now), now);
	}
	t = dir_next_time(d, now);
	d->backlogged = (d->subs != NULL ? sub_sched_backlog_pkts(d->subs, sub_dir_of(d)) != 0
					 : t != UINT64_MAX) ||
			d->n_pending != 0;
	/*
	 * The rate is owed from the first frame released with others left
	 * waiting. Frames that arrive while the last one of a backlog is still
	 * on the wire wait without being owed: their time is that frame's.
	 */
	d->owing = d->backlogged && (owed || d->stats.tx_bytes != tx_bytes0);
	if (d->emu != NULL && emu_next_time(d->emu) < t)
		t = emu_next_time(d->emu);
	if (d->n_pending != 0)
		t = now;
	if (t < *next_due)
		*next_due = t;
	return n_rx + n_out;
}

#define DP_SNAPSHOT_NS 10000000ULL /* publish counters every 10 ms */

void
dp_dir_count_queued(const struct dp_dir *d, struct ctl_dir_counters *c)
{
	c->sched_qlen = d->subs != NULL ? sub_sched_backlog_pkts(d->subs, sub_dir_of(d))
					: sched_backlog_pkts(d->sched);
	c->swap_qlen = 0;
	if (sched_move_active(&d->move))
		c->swap_qlen = sched_backlog_pkts(d->move.from) + d->move.staged.count;
	c->emulator_qlen = d->emu != NULL ? emu_count(d->emu) : 0;
	c->tx_pending = d->n_pending;
	if (d->steer != NULL) {
		c->steered_out = d->steer->steered_out;
		c->steered_in = d->steer->steered_in;
	}
	c->share_rate = d->share_group != NULL ? d->share.rate : 0;
	/*
	 * Taken with the queue lengths, so in use minus queued is what the
	 * drivers hold: constant unless mbufs leak (caches count as free).
	 */
	if (d->pool != NULL) {
		c->pool_in_use = rte_mempool_in_use_count(d->pool);
		c->pool_size = d->pool->size;
	}
}

/* The counters that carry across a discipline swap, added from one block to another. */
static void
sched_counters_add(struct sched_stats *to, const struct sched_stats *from)
{
	to->dequeued_pkts += from->dequeued_pkts;
	to->dequeued_bytes += from->dequeued_bytes;
	to->overlimits += from->overlimits;
	to->ecn_marked += from->ecn_marked;
	to->lag_skips += from->lag_skips;
	to->lag_skipped_ns += from->lag_skipped_ns;
}

void
dp_dir_sched_stats(const struct dp_dir *d, struct sched_stats *st)
{
	sched_get_stats(d->sched, st);
	sched_counters_add(st, &d->carried);
}

/*
 * A swap begins: what the old scheduler sent and counted carries on in the
 * new one's figures. What it still holds is counted when the new one sends it.
 */
static void
carry_sched_counters(struct dp_dir *d, const struct sched *old)
{
	struct sched_stats st;

	sched_get_stats(old, &st);
	sched_counters_add(&d->carried, &st);
}

static void
publish_snapshot(struct dp_dir *d, uint64_t now)
{
	struct dp_snapshot *s = d->ctl->snap;
	uint32_t seq = s->seq;

	__atomic_store_n(&s->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	s->time_ns = now;
	/* Counters and queue lengths from the same moment: the accounting identity holds. */
	s->c = d->stats;
	dp_dir_count_queued(d, &s->c);
	s->c.time_ns = now;
	dp_rtt_publish(d, &s->c.rtt, now);
	if (d->subs != NULL)
		sub_sched_note_time(d->subs, now); /* which RTT windows are recent */
	s->params = *sched_get_params(d->sched);
	dp_dir_sched_stats(d, &s->st);
	__atomic_store_n(&s->seq, seq + 2, __ATOMIC_RELEASE);
	d->ctl->next_snap_ns = now + DP_SNAPSHOT_NS;
}

/* Handle one control request, or its next slice, between bursts; true when complete. */
bool
dp_dir_handle_msg(struct dp_dir *d, struct dp_msg *m, uint64_t now)
{
	struct sh_pkt_list drops;
	bool done = true;

	switch (m->type) {
	case DP_MSG_UPDATE:
		dp_rtt_update_params(d, &m->params);
		m->rc = sched_update(d->sched, &m->params, m->err, sizeof(m->err));
		if (m->rc == 0)
			dp_rate_applied(d, &m->params, now);
		break;
	case DP_MSG_SWAP:
		if (d->subs != NULL) {
			/* The per-subscriber scheduler holds the link's: it cannot be swapped live.
			 */
			m->rc = -EINVAL;
			snprintf(m->err, sizeof(m->err),
				 "the discipline cannot change while subscribers are shaped "
				 "(restart shaperd)");
			break;
		}
		if (!sched_move_active(&d->move)) {
			/* The new one serves from now on; the old backlog moves over. */
			carry_sched_counters(d, d->sched);
			sched_move_begin(&d->move, d->sched);
			d->sched = m->sched;
			m->sched = NULL;
			dp_share_reapply(d, now);
		}
		sh_pkt_list_init(&drops);
		done = sched_move_step(&d->move, d->sched, SCHED_MOVE_SLICE, now, &drops);
		free_drops(d, &drops);
		if (done) {
			m->sched = d->move.from; /* empty now: back to the control thread */
			d->move.from = NULL;
			m->rc = 0;
		}
		break;
	case DP_MSG_RESET: {
		struct ctl_dir_counters q;

		/* What is queued now was received before: the new count starts from it. */
		dp_dir_count_queued(d, &q);
		memset(&d->stats, 0, sizeof(d->stats));
		memset(&d->carried, 0, sizeof(d->carried));
		d->stats.held_at_reset =
				q.sched_qlen + q.swap_qlen + q.emulator_qlen + q.tx_pending;
		if (d->steer != NULL)
			d->steer->steered_out = d->steer->steered_in = 0;
		dp_rtt_reset(d);
		sched_reset_stats(d->sched);
		m->rc = 0;
		break;
	}
	case DP_MSG_SUBS:
		/* Pointer swaps: both directions share the scheduler, and this worker. */
		if (d->subs == NULL) {
			m->rc = -EINVAL;
			snprintf(m->err, sizeof(m->err), "subscribers are not shaped");
			break;
		}
		sub_sched_change_apply(d->subs, m->subs_change);
		m->rc = 0;
		break;
	case DP_MSG_EMULATE:
		if (d->emu == NULL) {
			m->rc = -EINVAL;
			snprintf(m->err, sizeof(m->err), "this direction has no emulator");
			break;
		}
		emu_set_path(d->emu, m->emu.delay_ns, m->emu.jitter_ns, m->emu.loss_ppm);
		m->rc = 0;
		break;
	case DP_MSG_FLOWS: {
		unsigned int k;

		if (m->rc < 0 || (unsigned int)m->rc > m->fact_cap)
			m->rc = 0;
		k = sched_flow_facts(d->sched, &m->cursor, SCHED_FACTS_SLICE, now, m->facts + m->rc,
				     m->fact_cap - (unsigned int)m->rc);
		for (unsigned int j = 0; j < k; j++)
			m->facts[m->rc + (int)j].shard = (uint16_t)d->shard;
		dp_rtt_facts(d, m->facts + m->rc, k); /* the RTT table is this worker's */
		m->rc += (int)k;
		done = m->cursor == SCHED_FACTS_DONE;
		break;
	}
	}
	if (done)
		publish_snapshot(d, now);
	return done;
}

void
dp_control_turn(struct dp_dir *d, uint64_t now)
{
	struct dp_msg *m;

	if (d->ctl == NULL)
		return;
	m = d->ctl->busy;
	if (m == NULL)
		m = dp_mailbox_take(d);
	if (m != NULL) {
		uint64_t t0 = dp_now_ns(), took;

		d->ctl->busy = m; /* ours until answered, whatever the caller does meanwhile */
		if (dp_dir_handle_msg(d, m, now)) {
			d->ctl->busy = NULL;
			dp_mailbox_answer(d, m);
		}
		/* What one slice of a request costs the worker (stats shows the longest). */
		took = dp_now_ns() - t0;
		if (took > d->stats.control_max_ns)
			d->stats.control_max_ns = took;
	}
	if (now >= d->ctl->next_snap_ns)
		publish_snapshot(d, now);
	dp_rtt_autorate(d, now);
}

/*
 * A worker that must wait behind other threads on its core holds every
 * packet that long: under SCHED_FIFO it preempts them. Its idle naps give
 * the core back, so the rest of the box keeps running.
 */
static void
worker_set_realtime(const struct dp_worker *w)
{
	struct sched_param sp = { .sched_priority = (int)w->rt_priority };
	int rc;

	if (w->rt_priority == 0)
		return;
	rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (rc != 0)
		shaper_log_warning("worker on lcore %u: SCHED_FIFO priority %u refused: %s",
				   w->lcore, w->rt_priority, strerror(rc));
	else
		shaper_log_info("worker on lcore %u runs under SCHED_FIFO priority %u", w->lcore,
				w->rt_priority);
	fflush(NULL);
}

/*
 * Fail-open: a turn without the line whose every rx read came back short
 * (each judged stale after it) tells the lease thread it may take the line
 * now: what arrives later is new.
 */
static void
note_drained(struct dp_worker *w, uint64_t now)
{
	for (unsigned int i = 0; i < w->n_dirs; i++)
		if (!w->dirs[i]->rx_drained)
			return;
	__atomic_store_n(&w->drained_ns, now, __ATOMIC_RELEASE);
}

int
dp_worker_main(void *arg)
{
	struct dp_worker *w = arg;
	unsigned int idle = 0;

	worker_set_realtime(w);
	for (unsigned int i = 0; i < w->n_dirs; i++)
		w->dirs[i]->line_until = w->line_until;

	while (!dp_stop_requested()) {
		uint64_t now = dp_now_ns();
		uint64_t next_due = UINT64_MAX;
		unsigned int work = 0;
		uint64_t took;
		bool held;

		/*
		 * Alive for the service watchdog, and the point between loops that
		 * dp_workers_quiesced waits for: no port call is in flight here.
		 * Only the main thread reads it.
		 */
		__atomic_store_n(&w->heartbeat, w->heartbeat + 1, __ATOMIC_SEQ_CST);

		held = w->line_until == NULL ||
		       now < __atomic_load_n(w->line_until, __ATOMIC_ACQUIRE);
		for (unsigned int i = 0; i < w->n_dirs; i++)
			work += dp_dir_turn(w->dirs[i], now, w->burst, &next_due);
		if (unlikely(!held))
			note_drained(w, now);
		/*
		 * Control work, the downstream's first. When both autorate
		 * intervals end in one turn the upstream decides second, knowing
		 * the downstream's decision (autorate_attribute runs right before
		 * its tick): without one-way figures both judge the same rise,
		 * and a downstream cut just made holds the upstream for its
		 * refractory period. The other way round the downstream decided
		 * without the upstream's cut of the same turn, and both were cut
		 * for one queue. The controller's model, tests/sim/test_autorate.c,
		 * ticks them in this order.
		 */
		for (unsigned int pass = 0; pass < 2; pass++)
			for (unsigned int i = 0; i < w->n_dirs; i++)
				if ((w->dirs[i]->dir == SHAPER_DOWN) == (pass == 0))
					dp_control_turn(w->dirs[i], now);
		/* The longest turn: how long rx may wait at worst (control work included). */
		took = dp_now_ns() - now;
		for (unsigned int i = 0; i < w->n_dirs; i++)
			if (took > w->dirs[i]->stats.turn_max_ns)
				w->dirs[i]->stats.turn_max_ns = took;
		if (work != 0 || w->idle_sleep_us == 0) {
			idle = 0;
			continue;
		}
		/*
		 * Idle back-off: after many empty polls, nap a few µs, but never
		 * past the moment the shaper wants to release a packet.
		 */
		if (++idle < DP_IDLE_POLLS)
			continue;
		if (next_due > now) {
			uint64_t nap_ns = (uint64_t)w->idle_sleep_us * 1000;

			if (next_due - now < nap_ns)
				nap_ns = next_due - now;
			if (nap_ns >= 2000)
				rte_delay_us_sleep((unsigned int)(nap_ns / 1000));
		}
	}
	return 0;
}

void
dp_dir_drain(struct dp_dir *d)
{
	struct sh_pkt_list out;
	struct sh_pkt *p;
	struct dp_msg *m = d->ctl != NULL ? d->ctl->busy : NULL;

	sh_pkt_list_init(&out);
	if (d->stick != NULL)
		dp_stick_flush(d->stick, d); /* read in the other direction's turn, not yet taken */
	if (d->emu != NULL)
		emu_flush(d->emu, &out);
	if (d->subs != NULL)
		sub_sched_flush(d->subs, sub_dir_of(d), &out); /* the link's scheduler too */
	sched_flush(d->sched, &out);
	/* Frames other workers steered here (every worker has stopped). */
	{
		struct sh_pkt_list in;

		sh_pkt_list_init(&in);
		dp_steer_flush(d, &in);
		for (p = in.head; p != NULL; p = p->next)
			p->drop_reason = SHAPER_DROP_SHUTDOWN;
		free_drops(d, &in);
	}
	if (sched_move_active(&d->move)) {
		/* Stopped in the middle of a swap: the rest never moved. */
		sched_move_flush(&d->move, &out);
		if (m != NULL && m->type == DP_MSG_SWAP) {
			m->sched = d->move.from;
			m->rc = 0;
		}
		d->move.from = NULL;
	}
	if (m != NULL) {
		d->ctl->busy = NULL;
		dp_mailbox_answer(d, m); /* freed by dp_dir_control_free */
	}
	for (p = out.head; p != NULL; p = p->next)
		p->drop_reason = SHAPER_DROP_SHUTDOWN;
	free_drops(d, &out);
	if (d->n_pending != 0) {
		d->stats.dropped[SHAPER_DROP_SHUTDOWN] += d->n_pending;
		rte_pktmbuf_free_bulk(d->pending, d->n_pending);
		d->n_pending = 0;
	}
}
