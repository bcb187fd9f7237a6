/*
 * DPDK's rte_log through shaper/log.h: one stream (rte_openlog_stream) whose
 * writes are cut into lines, each logged at the level of the message being
 * written (rte_log_cur_msg_loglevel). DPDK's own default stream on Linux
 * writes each message to stdout and to syslog, which under systemd puts it
 * in the journal twice, the stdout copy at info whatever its level.
 */
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include <rte_log.h>

#include "shaper/log.h"

/* A partial line waits here for its newline (DPDK's messages end in one). */
static char pending[1024];
static size_t pending_len;

static enum shaper_log_level
from_rte(int rte_level)
{
	/* RTE_LOG_EMERG (1) .. RTE_LOG_DEBUG (8) are syslog's priorities plus one */
	if (rte_level <= (int)RTE_LOG_ERR)
		return SHAPER_LOG_ERROR;
	if (rte_level >= (int)RTE_LOG_DEBUG)
		return SHAPER_LOG_DEBUG;
	return (enum shaper_log_level)(rte_level - 1);
}

static void
emit_pending(void)
{
	pending[pending_len] = '\0';
	shaper_log_foreign(from_rte(rte_log_cur_msg_loglevel()), pending);
	pending_len = 0;
}

/* Called from rte_vlog in the logging thread: the level is that message's. */
static ssize_t
rte_stream_write(void *cookie, const char *buf, size_t size)
{
	(void)cookie;
	for (size_t i = 0; i < size; i++) {
		if (buf[i] == '\n') {
			emit_pending();
			continue;
		}
		if (pending_len == sizeof(pending) - 1)
			emit_pending(); /* a line longer than the buffer: in pieces */
		pending[pending_len++] = buf[i];
	}
	return (ssize_t)size;
}

int
shaper_log_route_rte(void)
{
	cookie_io_functions_t io = { .write = rte_stream_write };
	FILE *f = fopencookie(NULL, "w", io);

	if (f == NULL)
		return -1;
	/* Unbuffered: vfprintf writes a whole message under the stream's lock,
	 * so a line is never mixed with another thread's nor logged at its level. */
	setvbuf(f, NULL, _IONBF, 0);
	return rte_openlog_stream(f);
}
