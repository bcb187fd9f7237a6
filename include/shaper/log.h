/*
 * The daemon's log: levelled lines on stdout (notice, info, debug) and
 * stderr (error, warning).
 *
 * On a terminal or in a file a line reads "shaperd: warning: TEXT". When the
 * stream is connected to the journal (systemd sets $JOURNAL_STREAM to its
 * device and inode, see systemd.exec(5)), the line starts with the syslog
 * priority in angle brackets instead ("<4>TEXT"), which journald parses and
 * strips (sd-daemon(3)); "journalctl -p warning" then selects by it.
 *
 * Not for the fast path: a line takes a lock, formats and writes. A message
 * that can repeat with the network (a link flapping, a client misbehaving)
 * goes through a rate limit (shaper_log_limited).
 */
#ifndef SHAPER_LOG_H
#define SHAPER_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* The values are the syslog priorities journald stores. */
enum shaper_log_level {
	SHAPER_LOG_ERROR = 3,   /* the daemon cannot do what it was asked */
	SHAPER_LOG_WARNING = 4, /* it carries on, but something is wrong */
	SHAPER_LOG_NOTICE = 5,  /* normal but worth an operator's eye: link down, refusals */
	SHAPER_LOG_INFO = 6,    /* what it did: start-up, ports, workers */
	SHAPER_LOG_DEBUG = 7,
};

#define SHAPER_LOG_LEVEL_DEFAULT SHAPER_LOG_INFO

/* Each rate-limited site prints at most this many lines per interval. */
#define SHAPER_LOG_BURST      5u
#define SHAPER_LOG_INTERVAL_S 10u

/*
 * Set the name lines start with ("shaperd") and look whether stdout and
 * stderr are the journal. Optional: without it the name is "shaperd" and
 * the streams are looked at on the first line.
 */
void shaper_log_init(const char *ident);

/* Lines less severe than level are dropped (default SHAPER_LOG_LEVEL_DEFAULT). */
void shaper_log_set_level(enum shaper_log_level level);
enum shaper_log_level shaper_log_get_level(void);
bool shaper_log_enabled(enum shaper_log_level level);

/* "error", "warning", "notice", "info", "debug"; 0, or -1 for another name. */
int shaper_log_level_parse(const char *name, enum shaper_log_level *level);
const char *shaper_log_level_name(enum shaper_log_level level);

/* One event, one line: a newline inside the text becomes a space. */
void shaper_log(enum shaper_log_level level, const char *fmt, ...)
		__attribute__((format(printf, 2, 3)));

#define shaper_log_error(...)   shaper_log(SHAPER_LOG_ERROR, __VA_ARGS__)
#define shaper_log_warning(...) shaper_log(SHAPER_LOG_WARNING, __VA_ARGS__)
#define shaper_log_notice(...)  shaper_log(SHAPER_LOG_NOTICE, __VA_ARGS__)
#define shaper_log_info(...)    shaper_log(SHAPER_LOG_INFO, __VA_ARGS__)
#define shaper_log_debug(...)   shaper_log(SHAPER_LOG_DEBUG, __VA_ARGS__)

/*
 * A rate limit shared by the lines that pass it: at most burst lines in a
 * window of interval_ns that opens with the first; the rest are counted,
 * and once the window has closed one line says how many were suppressed and
 * what the last of them said. Define one with SHAPER_LOG_LIMIT_INIT (the
 * fields after interval_ns are the module's, under its lock).
 */
struct shaper_log_limit {
	unsigned int burst;
	uint64_t interval_ns;
	uint64_t window_start;
	unsigned int lines, suppressed;
	enum shaper_log_level worst; /* the most severe suppressed line's level */
	bool listed;                 /* on the module's list for shaper_log_flush_suppressed */
	struct shaper_log_limit *next;
	char last[200]; /* the last suppressed line's text */
};

#define SHAPER_LOG_LIMIT_INIT(burst_, interval_s_)                                                 \
	{                                                                                          \
		.burst = (burst_), .interval_ns = (uint64_t)(interval_s_)*1000000000u              \
	}

void shaper_log_limited(struct shaper_log_limit *limit, enum shaper_log_level level,
			const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Before a limit's memory goes: its "suppressed" line if one is owed, and off the list. */
void shaper_log_limit_release(struct shaper_log_limit *limit);

/* A line through its call site's own limit (SHAPER_LOG_BURST per SHAPER_LOG_INTERVAL_S). */
#define shaper_log_ratelimited(level, ...)                                                         \
	do {                                                                                       \
		static struct shaper_log_limit shaper_log_site_ =                                  \
				SHAPER_LOG_LIMIT_INIT(SHAPER_LOG_BURST, SHAPER_LOG_INTERVAL_S);    \
		shaper_log_limited(&shaper_log_site_, (level), __VA_ARGS__);                       \
	} while (0)

/*
 * Print the "suppressed" line of every limit whose window has closed, so a
 * burst that stopped is still accounted for. Call it now and then (the
 * daemon's main loop, about once a second); a limit's next line does it too.
 */
void shaper_log_flush_suppressed(void);

/*
 * A line of someone else's log (DPDK's) at a level: as it is, without our
 * name, with the priority prefix when the stream is the journal.
 */
void shaper_log_foreign(enum shaper_log_level level, const char *text);

/*
 * Send DPDK's rte_log through this module (levels mapped, our level filter
 * applied, no copy to syslog). Call before rte_eal_init. shaperd only: it is
 * built with DPDK (src/log/log_rte.c). 0, or -1 if the stream cannot be made.
 */
int shaper_log_route_rte(void);

/* For tests: the streams to write to, each looked at for $JOURNAL_STREAM
 * now; and the clock (NULL: CLOCK_MONOTONIC). */
void shaper_log_open(FILE *out, FILE *err);
void shaper_log_set_clock(uint64_t (*now_ns)(void));

/* CLOCK_MONOTONIC in nanoseconds: the control plane's clock (never the data plane's). */
uint64_t shaper_monotonic_ns(void);

#endif
