/*
 * The control socket server: a Unix stream socket served from one thread
 * with epoll. Requests are lines of at most CTL_MAX_LINE bytes; a longer one
 * is answered with "too_large" and skipped up to its newline. Replies queue
 * per client up to CTL_MAX_OUTQ; a client that lets more pile up is cut off,
 * so no client can make the daemon grow or stall. The server may listen on
 * several sockets, each with its own access rules; a connection's level is
 * fixed when it is accepted.
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
#include "shaper/log.h"

struct ctl_conn {
	int fd;
	enum shaper_level level;
	struct ctl_peer peer;
	const char *path; /* the socket it came in on */
	bool discarding;  /* skipping the rest of an oversize line */
	size_t inlen;
	char *in; /* CTL_MAX_LINE bytes */
	char *out;
	size_t outlen, outcap, outoff;
};

struct ctl_listener {
	int fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct ctl_access access;
};

struct ctl_server {
	int epfd;
	unsigned int n_listeners;
	struct ctl_listener listeners[SHAPER_MAX_CONTROL_SOCKETS];
	const struct ctl_backend *be;
	struct shaper_log_limit refusal_log; /* refusals: SHAPER_LOG_BURST per 10 s */
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
	if (fd < 0) {
		snprintf(err, errlen, "%s: socket: %s", path, strerror(errno));
		return -1;
	}
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

/* The socket's own directory may be made (e.g. /run/shaper); a missing parent of it is an error. */
static int
make_parent_dir(const char *path, char *err, size_t errlen)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct stat st;
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "%s: cannot create the socket directory %s: %s", path, dir,
			 strerror(errno));
		return -1;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: the socket directory %s is not a directory", path, dir);
		return -1;
	}
	return 0;
}

/* Who is an admin on a socket: the named admin group, else the socket's own group. */
static int
resolve_access(const struct ctl_server_params *p, struct ctl_access *a, char *err, size_t errlen)
{
	const char *name = p->admin_group != NULL && p->admin_group[0] != '\0' ? p->admin_group
									       : p->group;

	a->socket_level = p->level;
	a->default_level = p->default_level;
	a->daemon_uid = geteuid();
	a->has_admin_gid = true;
	a->admin_gid = getegid();
	if (name != NULL && name[0] != '\0') {
		struct group *g = getgrnam(name);

		if (g == NULL) {
			snprintf(err, errlen, "%s: %s \"%s\" (no such group)", p->path,
				 name == p->group ? "cannot give the socket to group"
						  : "admin group",
				 name);
			return -1;
		}
		a->admin_gid = g->gr_gid;
	}
	return 0;
}

int
ctl_server_listen(struct ctl_server *srv, const struct ctl_server_params *p, char *err,
		  size_t errlen)
{
	struct ctl_listener *l;
	struct sockaddr_un sa;
	struct epoll_event ev;
	int rc;

	if (srv->n_listeners >= SHAPER_MAX_CONTROL_SOCKETS) {
		snprintf(err, errlen, "%s: at most %d control sockets", p->path,
			 SHAPER_MAX_CONTROL_SOCKETS);
		return -1;
	}
	if (strlen(p->path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path %s is too long", p->path);
		return -1;
	}
	l = &srv->listeners[srv->n_listeners];
	memset(l, 0, sizeof(*l));
	l->fd = -1;
	snprintf(l->path, sizeof(l->path), "%s", p->path);
	if (resolve_access(p, &l->access, err, errlen) != 0)
		return -1;
	if (make_parent_dir(p->path, err, errlen) != 0)
		return -1;
	rc = check_existing(p->path, err, errlen);
	if (rc != 0)
		return -1;
	l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", p->path);
	{
		/* Create the file without any access beyond the owner's, then widen it. */
		mode_t old_mask = umask(0177);

		rc = bind(l->fd, (struct sockaddr *)&sa, sizeof(sa));
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
			goto fail_unlink;
		}
	}
	if (chmod(p->path, p->mode) != 0 || listen(l->fd, 64) != 0) {
		snprintf(err, errlen, "%s: %s", p->path, strerror(errno));
		goto fail_unlink;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = l;
	if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, l->fd, &ev) != 0) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		goto fail_unlink;
	}
	srv->n_listeners++;
	return 0;
fail_unlink:
	unlink(p->path);
fail:
	close(l->fd);
	l->fd = -1;
	return -1;
}

struct ctl_server *
ctl_server_open(const struct ctl_server_params *p, const struct ctl_backend *be, char *err,
		size_t errlen)
{
	struct ctl_server *srv = calloc(1, sizeof(*srv));

	if (srv == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	srv->be = be;
	srv->refusal_log = (struct shaper_log_limit)SHAPER_LOG_LIMIT_INIT(SHAPER_LOG_BURST,
									  SHAPER_LOG_INTERVAL_S);
	srv->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (srv->epfd < 0) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		free(srv);
		return NULL;
	}
	if (ctl_server_listen(srv, p, err, errlen) != 0) {
		close(srv->epfd);
		free(srv);
		return NULL;
	}
	return srv;
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

/* A refused request goes to the log, unless a client floods it with them. */
static void
log_refusal(struct ctl_server *srv, const struct ctl_conn *c, const char *cmd)
{
	enum shaper_level need = SHAPER_LEVEL_ADMIN;
	char peer[64];

	ctl_command_level(cmd, &need);
	if (c->peer.known)
		snprintf(peer, sizeof(peer), "uid %u (pid %d)", (unsigned int)c->peer.uid,
			 (int)c->peer.pid);
	else
		snprintf(peer, sizeof(peer), "an unknown peer");
	shaper_log_limited(&srv->refusal_log, SHAPER_LOG_NOTICE,
			   "control: refused %s from %s on %s: needs level %s, has %s", cmd, peer,
			   c->path, shaper_level_name(need), shaper_level_name(c->level));
}

static int
conn_reply(struct ctl_server *srv, struct ctl_conn *c, const char *line, size_t len)
{
	const char *refused = NULL;
	char *reply = ctl_handle_request_as(srv->be, c->level, line, len, &refused);
	int rc;

	if (refused != NULL)
		log_refusal(srv, c, refused);
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

/* What the kernel says about the peer; unknown (default level) if it says nothing. */
static void
peer_credentials(int fd, struct ctl_peer *p)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	memset(p, 0, sizeof(*p));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) != 0 || len != sizeof(uc))
		return;
	p->known = true;
	p->pid = uc.pid;
	p->uid = uc.uid;
	p->gid = uc.gid;
#ifdef SO_PEERGROUPS
	len = sizeof(p->groups);
	/* ERANGE: more groups than we look at; the primary group still counts. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, p->groups, &len) == 0)
		p->n_groups = len / sizeof(p->groups[0]);
#endif
}

static void
accept_all(struct ctl_server *srv, const struct ctl_listener *l)
{
	for (;;) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
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
		c->path = l->path;
		peer_credentials(fd, &c->peer);
		c->level = ctl_access_level(&l->access, &c->peer);
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
		const struct ctl_listener *l = NULL;

		for (unsigned int k = 0; k < srv->n_listeners; k++)
			if (evs[i].data.ptr == (void *)&srv->listeners[k])
				l = &srv->listeners[k];
		if (l != NULL) {
			accept_all(srv, l);
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
	for (unsigned int k = 0; k < srv->n_listeners; k++) {
		close(srv->listeners[k].fd);
		unlink(srv->listeners[k].path);
	}
	close(srv->epfd);
	shaper_log_limit_release(&srv->refusal_log);
	free(srv);
}
