/*
 * A direction shaped by several shards is shown as one: their counters
 * summed, their RTT histograms added, autorate's state the deciding
 * shard's. Each shard's snapshot is consistent
 * in itself; the sum of snapshots taken a few microseconds apart is not,
 * so the accounting identity of a merged view is exact only once the
 * workers have stopped (the in-flight difference shows as "unaccounted"
 * while traffic runs).
 */
#include <string.h>

#include "shaper/control.h"

static uint64_t
max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/*
 * Autorate with several shards: one controller (the group's first shard)
 * decides from every shard's samples and what the whole line carried, so
 * its state is the direction's, whichever order the shards come in; the
 * decision counts are summed (the others' stay 0 while they only hand
 * their samples over).
 */
static void
autorate_merge(struct ctl_rtt *into, const struct ctl_rtt *from)
{
	uint64_t ups = into->ar_ups + from->ar_ups, downs = into->ar_downs + from->ar_downs;
	uint64_t dec[AR_WHY_N];

	if (!from->autorate)
		return;
	for (unsigned int i = 0; i < AR_WHY_N; i++)
		dec[i] = into->ar_decisions[i] + from->ar_decisions[i];
	if (!into->autorate || (from->ar_leader && !into->ar_leader)) {
		into->autorate = true;
		into->ar_leader = from->ar_leader;
		into->ar_action = from->ar_action;
		into->ar_why = from->ar_why;
		into->ar_samples = from->ar_samples;
		into->ar_rate = from->ar_rate;
		into->ar_min = from->ar_min;
		into->ar_max = from->ar_max;
		into->ar_delivered = from->ar_delivered;
		into->ar_delay_ns = from->ar_delay_ns;
		into->ar_base = from->ar_base;
		into->ar_arrived = from->ar_arrived;
		into->ar_through = from->ar_through;
		into->ar_path_ns = from->ar_path_ns;
	}
	/* Every shard's samples reach the deciding one: the inputs are the sum. */
	for (unsigned int i = 0; i < RTT_METHODS; i++)
		into->ar_inputs[i] += from->ar_inputs[i];
	into->ar_one_way += from->ar_one_way;
	into->ar_ups = ups;
	into->ar_downs = downs;
	memcpy(into->ar_decisions, dec, sizeof(dec));
}

static void
rtt_merge(struct ctl_rtt *into, const struct ctl_rtt *from)
{
	if (!from->on)
		return;
	if (!into->on) {
		*into = *from;
		return;
	}
	autorate_merge(into, from);
	for (unsigned int b = 0; b < RTT_HIST_BUCKETS; b++)
		into->hist.count[b] += from->hist.count[b];
	into->hist.samples += from->hist.samples;
	into->hist.sum_ns += from->hist.sum_ns;
	into->flows_evicted += from->flows_evicted;
	for (unsigned int i = 0; i < RTT_METHODS; i++)
		into->by_method[i] += from->by_method[i];
	into->host_based += from->host_based;
	into->host_collisions += from->host_collisions;
	/* Interval figures cannot be added: the busier shard's median, the extremes of both. */
	if (from->iv_samples > into->iv_samples)
		into->iv_median_ns = from->iv_median_ns;
	if (from->iv_samples != 0 && (into->iv_samples == 0 || from->iv_min_ns < into->iv_min_ns))
		into->iv_min_ns = from->iv_min_ns;
	into->iv_p99_ns = max_u64(into->iv_p99_ns, from->iv_p99_ns);
	into->iv_samples += from->iv_samples;
}

void
ctl_dir_counters_merge(struct ctl_dir_counters *into, const struct ctl_dir_counters *from)
{
	rtt_merge(&into->rtt, &from->rtt);
	into->rx_packets += from->rx_packets;
	into->rx_bytes += from->rx_bytes;
	into->tx_packets += from->tx_packets;
	into->tx_bytes += from->tx_bytes;
	into->tx_retries += from->tx_retries;
	into->rx_foreign += from->rx_foreign;
	into->turn_max_ns = max_u64(into->turn_max_ns, from->turn_max_ns);
	into->control_max_ns = max_u64(into->control_max_ns, from->control_max_ns);
	into->backlogged_ns += from->backlogged_ns;
	into->backlogged_tx_bytes += from->backlogged_tx_bytes;
	for (int r = 0; r < SHAPER_DROP_MAX; r++)
		into->dropped[r] += from->dropped[r];
	into->emulator_qlen += from->emulator_qlen;
	into->time_ns = max_u64(into->time_ns, from->time_ns);
	into->sched_qlen += from->sched_qlen;
	into->swap_qlen += from->swap_qlen;
	into->tx_pending += from->tx_pending;
	into->held_at_reset += from->held_at_reset;
	into->steered_out += from->steered_out;
	into->steered_in += from->steered_in;
	into->share_rate += from->share_rate;
	/* The shards of a direction draw from one pool: its figures are not per shard. */
	into->pool_in_use = max_u64(into->pool_in_use, from->pool_in_use);
	into->pool_size = max_u64(into->pool_size, from->pool_size);
}
