/*
 * shapectl: the command-line client of shaperd's control socket. Plain C
 * and jansson; it shares with the daemon the protocol constants
 * (include/shaper/control.h) and the Prometheus formatter
 * (src/control/metrics.c, jansson only), so it builds without DPDK.
 */
#ifndef SHAPECTL_H
#define SHAPECTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "shaper/limits.h"

/* Exit codes: distinct so scripts can tell "refused" from "not running". */
enum sc_exit {
	SC_EXIT_OK = 0,
	SC_EXIT_REFUSED = 1,   /* the daemon answered with an error */
	SC_EXIT_USAGE = 2,     /* bad arguments */
	SC_EXIT_NO_DAEMON = 3, /* no socket, or nobody listening on it */
	SC_EXIT_PERM = 4,      /* EACCES/EPERM on connect */
	SC_EXIT_IO = 5,        /* I/O or protocol error, timeout */
};

#define SC_MAX_REPLY (16u * 1024 * 1024) /* well above the daemon's 4 MiB queue */

/* client.c: one connection, requests answered in order. */
struct sc_conn {
	int fd;
	const char *path;
	int timeout_ms;
	long long next_id;
	char *buf; /* bytes received and not yet consumed */
	size_t len, cap;
};

/* Connect within the timeout; SC_EXIT_OK or an exit code (message printed). */
int sc_connect(struct sc_conn *c, const char *path, int timeout_ms);
void sc_close(struct sc_conn *c);

/*
 * Send {"id","cmd","args"} (args is stolen, may be NULL) and wait for the
 * reply. On success *result is a new reference. A refusal prints
 * "shapectl: <code>: <message>" and returns SC_EXIT_REFUSED.
 */
int sc_call(struct sc_conn *c, const char *cmd, json_t *args, json_t **result);

/* format.c: numbers the way tc prints them. */
void sc_fmt_rate(uint64_t bytes_per_sec, char *buf, size_t len); /* 100Mbit, 6250Kbit */
void sc_fmt_time_us(uint64_t us, char *buf, size_t len);         /* 5.0ms, 24us */
void sc_fmt_size(uint64_t bytes, char *buf, size_t len);         /* 1514b, 4Kb, 4Mb */
void sc_fmt_bits(double bits_per_sec, char *buf, size_t len);    /* measured rates */

/* An aligned text table: add rows of strings, then print. */
#define SC_TABLE_MAX_COLS 24

struct sc_table {
	unsigned int ncols, ncells, cap;
	char **cells;                 /* row-major, malloc'd strings */
	bool left[SC_TABLE_MAX_COLS]; /* left-align this column (else right) */
};

void sc_table_init(struct sc_table *t, unsigned int ncols);
/* Append a cell to the current row; a row is complete after ncols cells. */
void sc_table_cell(struct sc_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sc_table_print(struct sc_table *t, FILE *f, const char *indent);
void sc_table_free(struct sc_table *t);

/*
 * subscribers.list (by: the sort key asked, or NULL) and subscribers.get
 * results as tables, or their JSON (src: tools/shapectl/subscribers.c).
 */
/* subscribers.list in pages (one reply holds at most 4 MiB), merged into one result. */
int sc_list_subscribers(struct sc_conn *c, json_t *args, json_t **result);
int sc_show_subscribers(const json_t *r, bool json, const char *by);
int sc_show_subscriber(const json_t *r, bool json);
/* "subscriber set ID [download MAX[/MIN]] ..." or "subscriber del ID" (argv[0] set/del). */
int sc_subscriber_change_args(int argc, char **argv, const char **cmd, json_t **args);
int sc_show_subscriber_change(const json_t *r, bool json);
/* "node set NAME [parent P] [download RATE] [upload RATE] [type T]" or "node del NAME". */
int sc_node_change_args(int argc, char **argv, const char **cmd, json_t **args);
int sc_show_node_change(const json_t *r, bool json);

/* Field access that tolerates a missing key (prints as 0 / ""). */
long long sc_int(const json_t *o, const char *key);
const char *sc_str(const json_t *o, const char *key);

/* result as one compact JSON line on stdout (--json). */
int sc_print_json(const json_t *result);

#endif
