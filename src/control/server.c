/*
 * The control socket server: a Unix stream socket served from one thread
 * with epoll. Requests are lines of at most CTL_MAX_LINE bytes; a longer one
 * is answered with "too_large" and skipped up to its newline. Replies queue
 * per client up to CTL_MAX_OUTQ; a client that lets more pile up is cut off,
 * so no client can make the daemon grow or stall.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "shaper/control.h"

struct ctl_conn {
	int fd;
	bool discarding; /* skipping the rest of an oversize line */
	size_t inlen;
	char *in; /* CTL_MAX_LINE bytes */
	char *out;
	size_t outlen, outcap, outoff;
};

struct ctl_server {
	int listen_fd;
	int epfd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const struct ctl_backend *be;
	unsigned int n_conns;
	struct ctl_conn *conns[CTL_MAX_CLIENTS];
};

/* A socket file nobody answers on is left over from a crash: safe to replace. */
static int
check_existing(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) != 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a socket; refusing to replace it",
			 path);
		return -EEXIST;
	}
	/* Non-blocking probe: a live server with a full backlog answers EAGAIN, not never. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (rc != 0 && errno != ECONNREFUSED && errno != ENOENT) {
		int e = errno;

		close(fd);
		if (e == EAGAIN || e == EINPROGRESS) {
			snprintf(err, errlen, "%s: another daemon is listening there", path);
			return -EADDRINUSE;
		}
		snprintf(err, errlen, "%s: cannot probe the existing socket: %s", path,
			 strerror(e));
		return -e;
	}
	close(fd);
	if (rc == 0) {
		snprintf(err, errlen, "%s: another daemon is listening there", path);
		return -EADDRINUSE;
	}
	if (unlink(path) != 0) {
		snprintf(err, errlen, "%s: cannot remove stale socket: %s", path, strerror(errno));
		return -errno;
	}
	return 0;
}

static void
make_parent_dir(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return;
	*slash = '\0';
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return; /* bind() will report the real problem */
}

struct ctl_server *
ctl_server_open(const struct ctl_server_params *p, const struct ctl_backend *be, char *err,
		size_t errlen)
{
	struct ctl_server *srv;
	struct sockaddr_un sa;
	struct epoll_event ev;
	int rc;

	if (strlen(p->path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path %s is too long", p->path);
		return NULL;
	}
	srv = calloc(1, sizeof(*srv));
	if (srv == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	srv->listen_fd = srv->epfd = -1;
	srv->be = be;
	snprintf(srv->path, sizeof(srv->path), "%s", p->path);
	make_parent_dir(p->path);
	rc = check_existing(p->path, err, errlen);
	if (rc != 0)
		goto fail;
	srv->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (srv->listen_fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		goto fail;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", p->path);
	{
		/* Create the file without any access beyond the owner's, then widen it. */
		mode_t old_mask = umask(0177);

		rc = bind(srv->listen_fd, (struct sockaddr *)&sa, sizeof(sa));
		umask(old_mask);
	}
	if (rc != 0) {
		snprintf(err, errlen, "bind %s: %s", p->path, strerror(errno));
		goto fail;
	}
	if (p->group != NULL && p->group[0] != '\0') {
		struct group *g = getgrnam(p->group);

		if (g == NULL || chown(p->path, (uid_t)-1, g->gr_gid) != 0) {
			snprintf(err, errlen, "%s: cannot give the socket to group \"%s\"%s",
				 p->path, p->group, g == NULL ? " (no such group)" : "");
			unlink(p->path);
			goto fail;
		}
	}
	if (chmod(p->path, p->mode) != 0 || listen(srv->listen_fd, 64) != 0) {
		snprintf(err, errlen, "%s: %s", p->path, strerror(errno));
		unlink(p->path);
		goto fail;
	}
	srv->epfd = epoll_create1(EPOLL_CLOEXEC);
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = NULL; /* NULL = the listening socket */
	if (srv->epfd < 0 || epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->listen_fd, &ev) != 0) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		unlink(p->path);
		goto fail;
	}
	return srv;
fail:
	if (srv->listen_fd >= 0)
		close(srv->listen_fd);
	if (srv->epfd >= 0)
		close(srv->epfd);
	free(srv);
	return NULL;
}

static void
conn_close(struct ctl_server *srv, struct ctl_conn *c)
{
	for (unsigned int i = 0; i < srv->n_conns; i++)
		if (srv->conns[i] == c) {
			srv->conns[i] = srv->conns[--srv->n_conns];
			break;
		}
	epoll_ctl(srv->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->in);
	free(c->out);
	free(c);
}

static void
conn_want_write(struct ctl_server *srv, struct ctl_conn *c, bool on)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | (on ? EPOLLOUT : 0);
	ev.data.ptr = c;
	epoll_ctl(srv->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Write what we can; -1 if the connection is dead. */
static int
conn_flush(struct ctl_server *srv, struct ctl_conn *c)
{
	while (c->outoff < c->outlen) {
		ssize_t n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				conn_want_write(srv, c, true);
				return 0;
			}
			if (errno == EINTR)
				continue;
			return -1;
		}
		c->outoff += (size_t)n;
	}
	c->outoff = c->outlen = 0;
	conn_want_write(srv, c, false);
	return 0;
}

static int
conn_queue(struct ctl_conn *c, const char *s)
{
	size_t n = strlen(s);

	if (c->outlen - c->outoff + n > CTL_MAX_OUTQ)
		return -1; /* the client does not read its replies */
	if (c->outoff > 0) {
		/* Keep only what is unsent, so the buffer never outgrows the cap. */
		memmove(c->out, c->out + c->outoff, c->outlen - c->outoff);
		c->outlen -= c->outoff;
		c->outoff = 0;
	}
	if (c->outlen + n > c->outcap) {
		size_t cap = c->outcap ? c->outcap : 4096;
		char *p;

		while (cap < c->outlen + n)
			cap *= 2;
		p = realloc(c->out, cap);
		if (p == NULL)
			return -1;
		c->out = p;
		c->outcap = cap;
	}
	memcpy(c->out + c->outlen, s, n);
	c->outlen += n;
	return 0;
}

static int
conn_reply(struct ctl_server *srv, struct ctl_conn *c, const char *line, size_t len)
{
	char *reply = ctl_handle_request(srv->be, line, len);
	int rc;

	if (reply == NULL)
		return -1;
	rc = conn_queue(c, reply);
	free(reply);
	return rc;
}

/* Read and answer every complete line; -1 if the connection should close. */
static int
conn_read(struct ctl_server *srv, struct ctl_conn *c)
{
	/* A few buffers per wake-up, so one pipelining client cannot starve the rest. */
	for (int rounds = 0; rounds < 4; rounds++) {
		ssize_t n = recv(c->fd, c->in + c->inlen, CTL_MAX_LINE - c->inlen, MSG_DONTWAIT);
		size_t start = 0, i;

		if (n == 0)
			return -1;
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR)
				continue;
			return -1;
		}
		i = c->inlen;
		c->inlen += (size_t)n;
		for (; i < c->inlen; i++) {
			if (c->in[i] != '\n')
				continue;
			if (c->discarding)
				c->discarding = false;
			else if (i > start && conn_reply(srv, c, c->in + start, i - start) != 0)
				return -1;
			start = i + 1;
		}
		memmove(c->in, c->in + start, c->inlen - start);
		c->inlen -= start;
		if (c->inlen == CTL_MAX_LINE) {
			/* No newline in a whole buffer: answer once, then skip to the newline. */
			if (!c->discarding) {
				char msg[64], *reply;
				int rc;

				snprintf(msg, sizeof(msg), "request longer than %d bytes",
					 CTL_MAX_LINE - 1);
				reply = ctl_error_reply(CTL_ERR_TOO_LARGE, msg);
				rc = reply != NULL ? conn_queue(c, reply) : -1;

				free(reply);
				c->discarding = true;
				if (rc != 0)
					return -1;
			}
			c->inlen = 0;
		}
		if (conn_flush(srv, c) != 0)
			return -1;
	}
	return 0; /* level-triggered epoll calls again for what is left */
}

static void
accept_all(struct ctl_server *srv)
{
	for (;;) {
		int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ctl_conn *c;
		struct epoll_event ev;

		if (fd < 0)
			return;
		c = calloc(1, sizeof(*c));
		if (c != NULL)
			c->in = malloc(CTL_MAX_LINE);
		if (srv->n_conns >= CTL_MAX_CLIENTS || c == NULL || c->in == NULL) {
			/* Say why before hanging up; best effort, the socket is fresh. */
			char *busy = ctl_error_reply(CTL_ERR_BUSY, "too many clients; try again");

			if (busy != NULL &&
			    send(fd, busy, strlen(busy), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
				busy[0] = '\0';
			free(busy);
			if (c != NULL)
				free(c->in);
			free(c);
			close(fd);
			continue;
		}
		c->fd = fd;
		memset(&ev, 0, sizeof(ev));
		ev.events = EPOLLIN;
		ev.data.ptr = c;
		if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
			free(c->in);
			free(c);
			close(fd);
			continue;
		}
		srv->conns[srv->n_conns++] = c;
	}
}

int
ctl_server_poll(struct ctl_server *srv, int timeout_ms)
{
	struct epoll_event evs[32];
	int n = epoll_wait(srv->epfd, evs, 32, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		struct ctl_conn *c = evs[i].data.ptr;

		if (c == NULL) {
			accept_all(srv);
			continue;
		}
		if ((evs[i].events & EPOLLOUT) && conn_flush(srv, c) != 0) {
			conn_close(srv, c);
			continue;
		}
		if ((evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && conn_read(srv, c) != 0)
			conn_close(srv, c);
	}
	return 0;
}

unsigned int
ctl_server_clients(const struct ctl_server *srv)
{
	return srv->n_conns;
}

int
ctl_server_fd(const struct ctl_server *srv)
{
	return srv->epfd;
}

void
ctl_server_close(struct ctl_server *srv)
{
	if (srv == NULL)
		return;
	while (srv->n_conns > 0)
		conn_close(srv, srv->conns[0]);
	close(srv->listen_fd);
	close(srv->epfd);
	unlink(srv->path);
	free(srv);
}
