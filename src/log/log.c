/*
 * Levelled log lines for the terminal and for journald (see shaper/log.h).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "shaper/log.h"

#define LINE_MAX_LEN 1024

/* Everything below is guarded by lock: lines from several threads stay whole. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static enum shaper_log_level threshold = SHAPER_LOG_LEVEL_DEFAULT;
static char ident[32] = "shaperd";
static bool opened;
static FILE *out_stream, *err_stream;
static bool out_journal, err_journal;
static uint64_t (*clock_fn)(void);
static struct shaper_log_limit *limits; /* every limit that has suppressed a line */

static const char *const level_names[] = {
	[SHAPER_LOG_ERROR] = "error",   [SHAPER_LOG_WARNING] = "warning",
	[SHAPER_LOG_NOTICE] = "notice", [SHAPER_LOG_INFO] = "info",
	[SHAPER_LOG_DEBUG] = "debug",
};

uint64_t
shaper_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* $JOURNAL_STREAM is "DEVICE:INODE" of the stream systemd connected to the
 * journal; a stream redirected since (to a file, a pipe) is not it. */
static bool
is_journal(FILE *f)
{
	const char *env = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	int fd;

	if (f == NULL || env == NULL || sscanf(env, "%llu:%llu", &dev, &ino) != 2)
		return false;
	fd = fileno(f);
	if (fd < 0 || fstat(fd, &st) != 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

static void
open_locked(FILE *out, FILE *err)
{
	out_stream = out;
	err_stream = err;
	out_journal = is_journal(out);
	err_journal = is_journal(err);
	opened = true;
}

void
shaper_log_open(FILE *out, FILE *err)
{
	pthread_mutex_lock(&lock);
	open_locked(out, err);
	pthread_mutex_unlock(&lock);
}

void
shaper_log_init(const char *name)
{
	pthread_mutex_lock(&lock);
	snprintf(ident, sizeof(ident), "%s", name);
	open_locked(stdout, stderr);
	pthread_mutex_unlock(&lock);
}

void
shaper_log_set_clock(uint64_t (*now_ns)(void))
{
	pthread_mutex_lock(&lock);
	clock_fn = now_ns;
	pthread_mutex_unlock(&lock);
}

void
shaper_log_set_level(enum shaper_log_level level)
{
	if (level < SHAPER_LOG_ERROR)
		level = SHAPER_LOG_ERROR;
	if (level > SHAPER_LOG_DEBUG)
		level = SHAPER_LOG_DEBUG;
	__atomic_store_n(&threshold, level, __ATOMIC_RELAXED);
}

enum shaper_log_level
shaper_log_get_level(void)
{
	return __atomic_load_n(&threshold, __ATOMIC_RELAXED);
}

bool
shaper_log_enabled(enum shaper_log_level level)
{
	return level <= shaper_log_get_level();
}

int
shaper_log_level_parse(const char *name, enum shaper_log_level *level)
{
	for (int l = SHAPER_LOG_ERROR; l <= SHAPER_LOG_DEBUG; l++)
		if (name != NULL && strcmp(name, level_names[l]) == 0) {
			*level = (enum shaper_log_level)l;
			return 0;
		}
	return -1;
}

const char *
shaper_log_level_name(enum shaper_log_level level)
{
	if (level < SHAPER_LOG_ERROR || level > SHAPER_LOG_DEBUG)
		return "?";
	return level_names[level];
}

static uint64_t
now_locked(void)
{
	return clock_fn != NULL ? clock_fn() : shaper_monotonic_ns();
}

/* One line out, whole; ours carry our name and (plain) the level's word. */
static void
write_locked(enum shaper_log_level level, bool ours, const char *text)
{
	bool to_err = level <= SHAPER_LOG_WARNING;
	FILE *f;
	bool journal;

	if (!opened)
		open_locked(stdout, stderr);
	f = to_err ? err_stream : out_stream;
	journal = to_err ? err_journal : out_journal;
	if (f == NULL)
		return;
	if (journal)
		fprintf(f, "<%d>%s\n", (int)level, text);
	else if (!ours)
		fprintf(f, "%s\n", text);
	else if (level == SHAPER_LOG_ERROR || level == SHAPER_LOG_WARNING ||
		 level == SHAPER_LOG_DEBUG)
		fprintf(f, "%s: %s: %s\n", ident, level_names[level], text);
	else
		fprintf(f, "%s: %s\n", ident, text);
	/* stdout is a pipe under systemd: without this a line waits for 4 KiB more. */
	fflush(f);
}

static void
format_text(char *buf, size_t len, const char *fmt, va_list ap)
{
	vsnprintf(buf, len, fmt, ap);
	for (char *p = buf; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

void
shaper_log(enum shaper_log_level level, const char *fmt, ...)
{
	char text[LINE_MAX_LEN];
	va_list ap;

	if (!shaper_log_enabled(level))
		return;
	va_start(ap, fmt);
	format_text(text, sizeof(text), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&lock);
	write_locked(level, true, text);
	pthread_mutex_unlock(&lock);
}

void
shaper_log_foreign(enum shaper_log_level level, const char *text)
{
	if (!shaper_log_enabled(level))
		return;
	pthread_mutex_lock(&lock);
	write_locked(level, false, text);
	pthread_mutex_unlock(&lock);
}

/* The window closed with lines suppressed: say how many, and the last. */
static void
report_suppressed_locked(struct shaper_log_limit *lim)
{
	char text[LINE_MAX_LEN];

	snprintf(text, sizeof(text),
		 "%u similar messages suppressed (at most %u per %llu s); the last: %s",
		 lim->suppressed, lim->burst, (unsigned long long)(lim->interval_ns / 1000000000u),
		 lim->last);
	write_locked(lim->worst, true, text);
	lim->suppressed = 0;
}

void
shaper_log_limited(struct shaper_log_limit *lim, enum shaper_log_level level, const char *fmt, ...)
{
	char text[LINE_MAX_LEN];
	uint64_t now;
	va_list ap;

	if (!shaper_log_enabled(level))
		return;
	va_start(ap, fmt);
	format_text(text, sizeof(text), fmt, ap);
	va_end(ap);

	pthread_mutex_lock(&lock);
	now = now_locked();
	if (lim->lines == 0 || now - lim->window_start >= lim->interval_ns) {
		if (lim->suppressed > 0)
			report_suppressed_locked(lim);
		lim->window_start = now;
		lim->lines = 0;
	}
	if (lim->lines < lim->burst) {
		lim->lines++;
		write_locked(level, true, text);
	} else {
		if (lim->suppressed == 0 || level < lim->worst)
			lim->worst = level;
		lim->suppressed++;
		snprintf(lim->last, sizeof(lim->last), "%s", text);
		if (!lim->listed) {
			lim->next = limits;
			limits = lim;
			lim->listed = true;
		}
	}
	pthread_mutex_unlock(&lock);
}

void
shaper_log_flush_suppressed(void)
{
	uint64_t now;

	pthread_mutex_lock(&lock);
	now = now_locked();
	for (struct shaper_log_limit *lim = limits; lim != NULL; lim = lim->next)
		if (lim->suppressed > 0 && now - lim->window_start >= lim->interval_ns)
			report_suppressed_locked(lim); /* the next line opens a new window */
	pthread_mutex_unlock(&lock);
}

void
shaper_log_limit_release(struct shaper_log_limit *lim)
{
	pthread_mutex_lock(&lock);
	if (lim->suppressed > 0)
		report_suppressed_locked(lim);
	for (struct shaper_log_limit **p = &limits; *p != NULL; p = &(*p)->next)
		if (*p == lim) {
			*p = lim->next;
			break;
		}
	lim->listed = false;
	lim->lines = 0;
	pthread_mutex_unlock(&lock);
}
