/*
 * Prometheus text exposition (format 0.0.4) of the control protocol's
 * "version" and "stats" results. One formatter behind both front ends:
 * `shapectl metrics` prints it, shaperd's HTTP /metrics endpoint serves it.
 * Plain C and jansson, no DPDK.
 */
#ifndef SHAPER_METRICS_H
#define SHAPER_METRICS_H

#include <stdio.h>

struct json_t; /* jansson's json_t */

/* The content type of the text this module writes. */
#define CTL_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/*
 * Write every shaper_* family of one "stats" result to f, with shaper_up 1
 * and shaper_build_info from the "version" result. up_help is the HELP text
 * of shaper_up (the front end says what "up" means to it). Fields missing
 * from the results print as 0 or ""; booleans as 0/1. Returns 0, or -EIO if
 * writing to f failed.
 */
int ctl_metrics_print(FILE *f, const struct json_t *version, const struct json_t *stats,
		      const char *up_help);

#endif
