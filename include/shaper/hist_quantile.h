/*
 * The quantile of a histogram of samples, interpolated inside its bucket:
 * what the RTT tap's interval figures and the subscribers' RTT and QoE
 * figures are read with. Header-only (plain C, no allocation), so any
 * module can use it without linking another.
 */
#ifndef SHAPER_HIST_QUANTILE_H
#define SHAPER_HIST_QUANTILE_H

#include <stdint.h>

/*
 * The q-th quantile (0..1) of n buckets (n >= 1): count[i] samples in
 * bucket i, which spans [edge[i], edge[i + 1]) (n + 1 edges, ascending). The
 * sample of rank q * total is placed linearly inside its bucket, so q = 0
 * is the lower edge of the first bucket with samples and q = 1 the upper
 * edge of the last; an open last bucket (edge[n] == edge[n - 1]) gives its
 * lower edge. 0 if there are no samples; edge[n - 1] for q above 1.
 */
static inline uint64_t
sh_hist_quantile(const uint64_t *count, const uint64_t *edge, unsigned int n, double q)
{
	uint64_t total = 0, seen = 0;
	double want;

	for (unsigned int i = 0; i < n; i++)
		total += count[i];
	if (total == 0)
		return 0;
	want = q * (double)total;
	for (unsigned int i = 0; i < n; i++) {
		uint64_t lo = edge[i], hi = edge[i + 1];

		if (count[i] == 0 || (double)(seen + count[i]) < want) {
			seen += count[i];
			continue;
		}
		return lo +
		       (uint64_t)((double)(hi - lo) * ((want - (double)seen) / (double)count[i]));
	}
	return edge[n - 1];
}

#endif
