/*
 * The "rtt" object of a direction's stats: which part of the path its
 * samples time, the histogram since start (half-octave buckets, µs), the
 * last interval's min/median/p99, and autorate's state when it is on.
 */
#include <jansson.h>

#include "shaper/autorate.h"
#include "shaper/control.h"

#define J_U64(v) json_integer((json_int_t)(v))

static const char *const action_names[] = { "hold", "up", "down" };
/* By enum rtt_method. */
static const char *const source_names[RTT_METHODS] = { "timestamp", "sequence", "handshake" };

/* Counts by the source of the samples: {"timestamp": n, "sequence": n, "handshake": n}. */
static json_t *
sources_json(const uint64_t *by_method)
{
	json_t *o = json_object();

	for (unsigned int i = 0; i < RTT_METHODS; i++)
		json_object_set_new(o, source_names[i], J_U64(by_method[i]));
	return o;
}

void *
ctl_rtt_json(const struct ctl_rtt *r)
{
	json_t *o = json_object(), *hist = json_array(), *iv, *ar, *dec, *src;

	json_object_set_new(o, "part", json_string(r->part == RTT_SIDE_WAN ? "wan" : "lan"));
	json_object_set_new(o, "samples", J_U64(r->hist.samples));
	json_object_set_new(o, "sum_us", J_U64(r->hist.sum_ns / 1000));
	json_object_set_new(o, "flows_evicted", J_U64(r->flows_evicted));
	json_object_set_new(o, "sources", sources_json(r->by_method));
	if (r->part == RTT_SIDE_WAN) {
		json_object_set_new(o, "host_based", J_U64(r->host_based));
		json_object_set_new(o, "host_collisions", J_U64(r->host_collisions));
	}
	/* Non-empty buckets only: [lower edge µs, upper edge µs, count]. */
	for (unsigned int b = 0; b < RTT_HIST_BUCKETS; b++) {
		uint64_t hi = b + 1 < RTT_HIST_BUCKETS ? rtt_hist_lower_ns(b + 1) / 1000 : 0;

		if (r->hist.count[b] != 0)
			json_array_append_new(hist,
					      json_pack("[I, I, I]",
							(json_int_t)(rtt_hist_lower_ns(b) / 1000),
							(json_int_t)hi,
							(json_int_t)r->hist.count[b]));
	}
	json_object_set_new(o, "histogram_us", hist);
	iv = json_object();
	json_object_set_new(iv, "ms", J_U64(r->interval_ns / 1000000));
	json_object_set_new(iv, "samples", J_U64(r->iv_samples));
	json_object_set_new(iv, "min_us", J_U64(r->iv_min_ns / 1000));
	json_object_set_new(iv, "median_us", J_U64(r->iv_median_ns / 1000));
	json_object_set_new(iv, "p99_us", J_U64(r->iv_p99_ns / 1000));
	json_object_set_new(o, "interval", iv);
	if (r->autorate) {
		ar = json_object();
		json_object_set_new(ar, "rate", J_U64(r->ar_rate));
		json_object_set_new(ar, "min", J_U64(r->ar_min));
		json_object_set_new(ar, "max", J_U64(r->ar_max));
		json_object_set_new(ar, "delivered", J_U64(r->ar_delivered));
		json_object_set_new(ar, "delay_us", J_U64(r->ar_delay_ns / 1000));
		json_object_set_new(ar, "ups", J_U64(r->ar_ups));
		json_object_set_new(ar, "downs", J_U64(r->ar_downs));
		json_object_set_new(ar, "last",
				    json_string(action_names[r->ar_action < 3 ? r->ar_action : 0]));
		json_object_set_new(ar, "why", json_string(autorate_reason_name(r->ar_why)));
		json_object_set_new(ar, "samples", J_U64(r->ar_samples));
		json_object_set_new(ar, "base", J_U64(r->ar_base));
		json_object_set_new(ar, "arrived", J_U64(r->ar_arrived));
		json_object_set_new(ar, "line", J_U64(r->ar_through));
		json_object_set_new(ar, "path_us", J_U64(r->ar_path_ns / 1000));
		dec = json_object();
		for (unsigned int i = 0; i < AR_WHY_N; i++)
			json_object_set_new(dec, autorate_reason_name(i),
					    J_U64(r->ar_decisions[i]));
		json_object_set_new(ar, "decisions", dec);
		src = sources_json(r->ar_inputs);
		json_object_set_new(src, "one_way", J_U64(r->ar_one_way));
		json_object_set_new(ar, "inputs", src);
		json_object_set_new(o, "autorate", ar);
	}
	return o;
}
