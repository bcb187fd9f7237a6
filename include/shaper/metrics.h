/*
 * Prometheus text exposition (format 0.0.4) of the control protocol's
 * "version" and "stats" results. One formatter behind both front ends:
 * `shapectl metrics` prints it, shaperd's HTTP /metrics endpoint serves it.
 * Plain C and jansson, no DPDK.
 */
#ifndef SHAPER_METRICS_H
#define SHAPER_METRICS_H

#include <stdint.h>
#include <stdio.h>

struct json_t; /* jansson's json_t */
struct ctl_backend;

/*
 * A field of a JSON object as an integer (missing or another type: 0,
 * booleans 0/1) or a string (""): how every front end reads replies.
 */
long long ctl_json_int(const struct json_t *o, const char *key);
const char *ctl_json_str(const struct json_t *o, const char *key);

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

/*
 * The per-node and per-subscriber families of one "subscribers.metrics"
 * result (shaper_node_* for every node, shaper_subscriber_* for the top N
 * it holds; nothing when it holds none). 0, or -EIO.
 */
int ctl_metrics_print_subscribers(FILE *f, const struct json_t *subs);

/*
 * shaperd's /metrics endpoint (metrics_http.c, libmicrohttpd). It has no
 * thread of its own: MHD runs on an external epoll set whose fd the control
 * thread polls beside the control socket, then calls ctl_metrics_http_run,
 * so the backend is only ever called from that one thread.
 *   GET or HEAD /metrics  200, CTL_METRICS_CONTENT_TYPE
 *   another path          404
 *   another method        405 (with Allow)
 *   a backend error       503 (shaper_up would be a lie)
 */
struct ctl_metrics_http;

/*
 * Listen on addr (numeric IPv4 or IPv6, no brackets) and port. NULL with
 * err on failure (the address is in use, not local, ...).
 */
struct ctl_metrics_http *ctl_metrics_http_open(const char *addr, uint16_t port,
					       const struct ctl_backend *be, char *err,
					       size_t errlen);

/* The fd to poll for POLLIN (MHD's epoll set). */
int ctl_metrics_http_fd(const struct ctl_metrics_http *h);

/* Serve whatever is ready without blocking; 0, or -EIO if MHD failed. */
int ctl_metrics_http_run(struct ctl_metrics_http *h);

/* Close every connection and the listening socket (NULL is a no-op). */
void ctl_metrics_http_close(struct ctl_metrics_http *h);

#endif
