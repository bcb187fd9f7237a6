/*
 * The socket side of shapectl: connect, send one request line, read one
 * reply line, all against a deadline so no command can hang. Each failure
 * is turned into one message and one exit code here, so the commands only
 * deal with results.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "shapectl.h"

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
left_ms(int64_t deadline)
{
	int64_t d = deadline - now_ms();

	return d > 0 ? (int)d : 0;
}

static void
timeout_msg(const struct sc_conn *c, const char *what)
{
	fprintf(stderr, "shapectl: %s: no answer within %g s while %s (--timeout to wait longer)\n",
		c->path, c->timeout_ms / 1000.0, what);
}

/* EACCES: say who owns the socket, so the fix (join the group) is obvious. */
static void
permission_msg(const char *path)
{
	struct stat st;
	struct group *g;
	struct passwd *pw;

	if (stat(path, &st) != 0) {
		fprintf(stderr,
			"shapectl: cannot connect to %s: permission denied (its directory is not "
			"accessible to you); run as root or ask for access\n",
			path);
		return;
	}
	g = getgrgid(st.st_gid);
	pw = getpwuid(st.st_uid);
	fprintf(stderr,
		"shapectl: cannot connect to %s: permission denied (owner %s, group %s, mode "
		"%04o); ",
		path, pw != NULL ? pw->pw_name : "?", g != NULL ? g->gr_name : "?",
		(unsigned int)(st.st_mode & 07777));
	/* Joining the group only helps if the group may write to the socket. */
	if ((st.st_mode & 0020) != 0 && g != NULL)
		fprintf(stderr, "add your user to group \"%s\" or run as root\n", g->gr_name);
	else
		fprintf(stderr, "run as root, or set the daemon's control.group and control.mode "
				"(e.g. \"0660\") and join that group\n");
}

int
sc_connect(struct sc_conn *c, const char *path, int timeout_ms)
{
	struct sockaddr_un sa;
	int64_t deadline = now_ms() + timeout_ms;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->path = path;
	c->timeout_ms = timeout_ms;
	c->next_id = 1;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "shapectl: socket path %s is too long (at most %zu bytes)\n", path,
			sizeof(sa.sun_path) - 1);
		return SC_EXIT_USAGE;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		fprintf(stderr, "shapectl: socket: %s\n", strerror(errno));
		return SC_EXIT_IO;
	}
	for (;;) {
		int e;

		if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return SC_EXIT_OK;
		e = errno;
		switch (e) {
		case EINTR:
			continue;
		case EAGAIN:
		case EINPROGRESS:
			/* A Unix socket's backlog is full: the daemon is busy, retry a little
			 * later. */
			if (left_ms(deadline) == 0) {
				timeout_msg(c, "connecting");
				sc_close(c);
				return SC_EXIT_IO;
			}
			poll(NULL, 0, 10);
			continue;
		case ENOENT:
		case ENOTDIR:
		case ECONNREFUSED:
			fprintf(stderr,
				"shapectl: cannot connect to %s: %s (is shaperd running?)\n", path,
				e == ECONNREFUSED ? "nobody is listening" : "no such socket");
			sc_close(c);
			return SC_EXIT_NO_DAEMON;
		case EACCES:
		case EPERM:
			permission_msg(path);
			sc_close(c);
			return SC_EXIT_PERM;
		default:
			fprintf(stderr, "shapectl: cannot connect to %s: %s\n", path, strerror(e));
			sc_close(c);
			return SC_EXIT_IO;
		}
	}
}

void
sc_close(struct sc_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = 0;
}

static int
send_all(struct sc_conn *c, const char *s, size_t n, int64_t deadline)
{
	while (n > 0) {
		ssize_t w = send(c->fd, s, n, MSG_NOSIGNAL);
		struct pollfd pfd = { .fd = c->fd, .events = POLLOUT };

		if (w > 0) {
			s += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EPIPE || errno == ECONNRESET)) {
			fprintf(stderr, "shapectl: %s: the daemon closed the connection\n",
				c->path);
			return SC_EXIT_IO;
		}
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			fprintf(stderr, "shapectl: %s: cannot send the request: %s\n", c->path,
				strerror(errno));
			return SC_EXIT_IO;
		}
		if (poll(&pfd, 1, left_ms(deadline)) == 0) {
			timeout_msg(c, "sending the request");
			return SC_EXIT_IO;
		}
	}
	return SC_EXIT_OK;
}

/* One reply line into *line (points into c->buf, NUL-terminated); its length in *n. */
static int
recv_line(struct sc_conn *c, int64_t deadline, char **line, size_t *n)
{
	size_t scanned = 0;

	for (;;) {
		char *nl = c->len > scanned ? memchr(c->buf + scanned, '\n', c->len - scanned)
					    : NULL;
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		ssize_t r;
		int p;

		if (nl != NULL) {
			*nl = '\0';
			*line = c->buf;
			*n = (size_t)(nl - c->buf);
			return SC_EXIT_OK;
		}
		scanned = c->len;
		if (c->len + 4096 + 1 > c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 65536;
			char *b;

			if (cap > SC_MAX_REPLY) {
				fprintf(stderr, "shapectl: %s: reply longer than %u bytes\n",
					c->path, SC_MAX_REPLY);
				return SC_EXIT_IO;
			}
			b = realloc(c->buf, cap);
			if (b == NULL) {
				fprintf(stderr, "shapectl: out of memory\n");
				return SC_EXIT_IO;
			}
			c->buf = b;
			c->cap = cap;
		}
		p = poll(&pfd, 1, left_ms(deadline));
		if (p < 0 && errno == EINTR)
			continue;
		if (p == 0) {
			timeout_msg(c, "waiting for the reply");
			return SC_EXIT_IO;
		}
		r = recv(c->fd, c->buf + c->len, c->cap - c->len - 1, 0);
		if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (r < 0 && errno != ECONNRESET) {
			fprintf(stderr, "shapectl: %s: cannot read the reply: %s\n", c->path,
				strerror(errno));
			return SC_EXIT_IO;
		}
		if (r <= 0) {
			/* Also what a client past the daemon's client limit sees. */
			fprintf(stderr,
				"shapectl: %s: the daemon closed the connection without a "
				"reply\n",
				c->path);
			return SC_EXIT_IO;
		}
		c->len += (size_t)r;
	}
}

static void
consume(struct sc_conn *c, size_t n)
{
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
}

static int
protocol_error(const struct sc_conn *c, const char *what)
{
	fprintf(stderr, "shapectl: %s: protocol error: %s\n", c->path, what);
	return SC_EXIT_IO;
}

int
sc_call(struct sc_conn *c, const char *cmd, json_t *args, json_t **result)
{
	int64_t deadline = now_ms() + c->timeout_ms;
	long long id = c->next_id++;
	json_t *req, *reply, *v;
	json_error_t jerr;
	char *s, *line;
	size_t n;
	int rc;

	*result = NULL;
	req = json_pack("{s:I, s:s}", "id", (json_int_t)id, "cmd", cmd);
	if (req == NULL) {
		json_decref(args);
		return protocol_error(c, "cannot build the request");
	}
	if (args != NULL)
		json_object_set_new(req, "args", args);
	s = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (s == NULL)
		return protocol_error(c, "cannot build the request");
	n = strlen(s);
	s[n] = '\n'; /* replaces the NUL: sent as one line */
	rc = send_all(c, s, n + 1, deadline);
	free(s);
	if (rc != SC_EXIT_OK)
		return rc;
	rc = recv_line(c, deadline, &line, &n);
	if (rc != SC_EXIT_OK)
		return rc;
	reply = json_loadb(line, n, 0, &jerr);
	consume(c, n + 1);
	if (reply == NULL || !json_is_object(reply)) {
		json_decref(reply);
		return protocol_error(c, "the reply is not a JSON object");
	}
	v = json_object_get(reply, "id");
	if (v != NULL && !json_is_null(v) && (!json_is_integer(v) || json_integer_value(v) != id)) {
		json_decref(reply);
		return protocol_error(c, "the reply answers another request");
	}
	v = json_object_get(reply, "ok");
	if (json_is_true(v)) {
		*result = json_incref(json_object_get(reply, "result"));
		json_decref(reply);
		return *result != NULL ? SC_EXIT_OK : protocol_error(c, "the reply has no result");
	}
	if (json_is_false(v)) {
		const json_t *e = json_object_get(reply, "error");

		fprintf(stderr, "shapectl: %s: %s\n",
			sc_str(e, "code")[0] ? sc_str(e, "code") : "error", sc_str(e, "message"));
		json_decref(reply);
		return SC_EXIT_REFUSED;
	}
	json_decref(reply);
	return protocol_error(c, "the reply has no \"ok\" field");
}
