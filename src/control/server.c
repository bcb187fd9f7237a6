/*
 * The control socket server: a Unix stream socket served from one thread
 * with epoll. Requests are lines of at most CTL_MAX_LINE bytes; a longer one
 * is answered with "too_large" and skipped up to its newline. Replies queue
 * per client up to CTL_MAX_OUTQ; a client that lets more pile up is cut off,
 * so no client can make the daemon grow. The server may listen on several
 * sockets, each with its own access rules; a connection's level is fixed
 * when it is accepted.
 *
 * No client can stall the thread either: a poll does a bounded amount of
 * work (CTL_POLL_*, CTL_CLIENT_REQUESTS), clients taking turns; lines
 * already read but not yet answered keep the epoll fd readable (an eventfd
 * in the set), so the caller comes back for them without new data. Slots
 * are reserved by level and by socket, and idle connections are closed.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "shaper/control.h"
#include "shaper/log.h"

#define NS_PER_MS 1000000ull
#define NS_PER_S  1000000000ull

struct ctl_listener;

struct ctl_conn {
	int fd;
	enum shaper_level level;
	struct ctl_peer peer;
	struct ctl_listener *l;   /* the socket it came in on */
	bool discarding;          /* skipping the rest of an oversize line */
	bool pending;             /* a whole line waits in in[] */
	bool readable;            /* epoll says the socket has data (or an end) */
	bool dead;                /* to close at the end of this poll */
	bool eof;                 /* the client sent its last request: close once answered */
	size_t head, scan, inlen; /* in[head..inlen) unanswered; no newline in [head..scan) */
	char *in;                 /* CTL_MAX_LINE bytes */
	char *out;
	size_t outlen, outcap, outoff;
	uint64_t active_ns;  /* a byte moved either way */
	uint64_t partial_ns; /* the unfinished request began; 0: none */
};

struct ctl_listener {
	int fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct ctl_access access;
	unsigned int n_conns;
};

struct ctl_server {
	int epfd;
	int wakefd; /* eventfd: readable while lines wait unanswered */
	bool woken;
	unsigned int n_listeners;
	struct ctl_listener listeners[SHAPER_MAX_CONTROL_SOCKETS];
	const struct ctl_backend *be;
	struct shaper_log_limit refusal_log; /* refusals: SHAPER_LOG_BURST per 10 s */
	struct shaper_log_limit slot_log;    /* connections refused for want of a slot */
	unsigned int n_conns, rr;
	unsigned int n_level[SHAPER_NUM_LEVELS];
	struct ctl_conn *conns[CTL_MAX_CLIENTS];
	/* Walks below operator: a bucket of CTL_USER_WALKS_PER_S, in ns of credit. */
	uint64_t walk_credit_ns, walk_at_ns;
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
	struct epoll_event ev;

	if (srv == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	srv->be = be;
	srv->refusal_log = (struct shaper_log_limit)SHAPER_LOG_LIMIT_INIT(SHAPER_LOG_BURST,
									  SHAPER_LOG_INTERVAL_S);
	srv->slot_log = (struct shaper_log_limit)SHAPER_LOG_LIMIT_INIT(SHAPER_LOG_BURST,
								       SHAPER_LOG_INTERVAL_S);
	srv->walk_credit_ns = NS_PER_S; /* a full bucket: a second's worth */
	srv->walk_at_ns = shaper_monotonic_ns();
	srv->epfd = epoll_create1(EPOLL_CLOEXEC);
	srv->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = &srv->wakefd;
	if (srv->epfd < 0 || srv->wakefd < 0 ||
	    epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->wakefd, &ev) != 0) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		goto fail;
	}
	if (ctl_server_listen(srv, p, err, errlen) != 0)
		goto fail;
	return srv;
fail:
	if (srv->wakefd >= 0)
		close(srv->wakefd);
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
	srv->n_level[c->level]--;
	c->l->n_conns--;
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
	ev.events = (c->eof ? 0 : EPOLLIN) | (on ? EPOLLOUT : 0);
	ev.data.ptr = c;
	epoll_ctl(srv->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Write what we can; -1 if the connection is dead. */
static int
conn_flush(struct ctl_server *srv, struct ctl_conn *c, uint64_t now)
{
	bool was_waiting = c->outoff < c->outlen;

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
		c->active_ns = now;
	}
	c->outoff = c->outlen = 0;
	if (c->eof)
		return -1; /* all answered */
	if (was_waiting)
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
			   c->l->path, shaper_level_name(need), shaper_level_name(c->level));
}

/* The walk bucket below operator: may one run now, else in how many ms. */
static bool
walk_allowed(struct ctl_server *srv, uint64_t now, unsigned int *retry_ms)
{
	const uint64_t cost = NS_PER_S / CTL_USER_WALKS_PER_S;

	srv->walk_credit_ns += (now - srv->walk_at_ns);
	srv->walk_at_ns = now;
	if (srv->walk_credit_ns > NS_PER_S)
		srv->walk_credit_ns = NS_PER_S;
	if (srv->walk_credit_ns >= cost)
		return true;
	*retry_ms = (unsigned int)((cost - srv->walk_credit_ns + NS_PER_MS - 1) / NS_PER_MS);
	return false;
}

/* One request line; -1 if the connection should close. *walked: it messaged the workers. */
static int
conn_reply(struct ctl_server *srv, struct ctl_conn *c, const char *line, size_t len, uint64_t now,
	   bool *walked)
{
	struct ctl_request_ctx ctx = { .level = c->level, .walks_allowed = true };
	char *reply;
	int rc;

	if (c->level < SHAPER_LEVEL_OPERATOR)
		ctx.walks_allowed = walk_allowed(srv, now, &ctx.retry_ms);
	reply = ctl_handle_request_ctx(srv->be, line, len, &ctx);
	if (ctx.walked && c->level < SHAPER_LEVEL_OPERATOR)
		srv->walk_credit_ns -= NS_PER_S / CTL_USER_WALKS_PER_S;
	*walked = ctx.walked;
	if (ctx.refused != NULL)
		log_refusal(srv, c, ctx.refused);
	if (reply == NULL)
		return -1;
	rc = conn_queue(c, reply);
	free(reply);
	return rc;
}

/* What one poll may still do. */
struct budget {
	unsigned int requests;
	uint64_t end_ns;
};

static bool
budget_left(const struct budget *b)
{
	return b->requests > 0 && shaper_monotonic_ns() < b->end_ns;
}

/* The buffer is full and holds no newline: answer once, then skip to the newline. */
static int
conn_oversize(struct ctl_conn *c)
{
	if (!c->discarding) {
		char msg[64], *reply;
		int rc;

		snprintf(msg, sizeof(msg), "request longer than %d bytes", CTL_MAX_LINE - 1);
		reply = ctl_error_reply(CTL_ERR_TOO_LARGE, msg);
		rc = reply != NULL ? conn_queue(c, reply) : -1;
		free(reply);
		c->discarding = true;
		if (rc != 0)
			return -1;
	}
	c->head = c->scan = c->inlen = 0;
	return 0;
}

/* Answer the whole lines in in[], within this client's share of the poll. */
static int
conn_answer(struct ctl_server *srv, struct ctl_conn *c, struct budget *b, unsigned int *served,
	    bool *walked)
{
	while (!*walked && *served < CTL_CLIENT_REQUESTS && budget_left(b)) {
		char *nl = memchr(c->in + c->scan, '\n', c->inlen - c->scan);
		size_t start = c->head, end;

		if (nl == NULL) {
			c->scan = c->inlen;
			break;
		}
		end = (size_t)(nl - c->in);
		c->head = c->scan = end + 1;
		c->partial_ns = c->head < c->inlen ? shaper_monotonic_ns() : 0;
		if (c->discarding) {
			c->discarding = false;
			continue;
		}
		if (end == start)
			continue; /* empty lines are ignored, and cost nothing */
		(*served)++;
		b->requests--;
		if (conn_reply(srv, c, c->in + start, end - start, shaper_monotonic_ns(), walked) !=
		    0)
			return -1;
	}
	c->pending = memchr(c->in + c->scan, '\n', c->inlen - c->scan) != NULL;
	if (c->head == c->inlen) {
		c->head = c->scan = c->inlen = 0;
		c->partial_ns = 0;
	}
	return 0;
}

/*
 * One client's turn: the lines it already sent, then one read if that left
 * room, then the lines that read completed; -1 if it should close.
 */
static int
conn_serve(struct ctl_server *srv, struct ctl_conn *c, struct budget *b, uint64_t now)
{
	unsigned int served = 0;
	bool walked = false;

	if (conn_answer(srv, c, b, &served, &walked) != 0)
		return -1;
	if (c->readable && !c->pending && !walked && served < CTL_CLIENT_REQUESTS) {
		ssize_t n;

		c->readable = false; /* level-triggered epoll reports what this read leaves */
		if (c->head > 0) {
			memmove(c->in, c->in + c->head, c->inlen - c->head);
			c->inlen -= c->head;
			c->scan -= c->head;
			c->head = 0;
		}
		if (c->inlen == CTL_MAX_LINE && conn_oversize(c) != 0)
			return -1;
		do
			n = recv(c->fd, c->in + c->inlen, CTL_MAX_LINE - c->inlen, MSG_DONTWAIT);
		while (n < 0 && errno == EINTR);
		if (n == 0) {
			/* Every line is answered: send the rest, then close (reading no more). */
			c->eof = true;
			conn_want_write(srv, c, true);
			return conn_flush(srv, c, now);
		}
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		if (n > 0) {
			if (c->inlen == 0)
				c->partial_ns = now;
			c->inlen += (size_t)n;
			c->active_ns = now;
			if (conn_answer(srv, c, b, &served, &walked) != 0)
				return -1;
			if (c->inlen == CTL_MAX_LINE && c->head == 0 && !c->pending &&
			    conn_oversize(c) != 0)
				return -1;
		}
	}
	return conn_flush(srv, c, now);
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

/*
 * Whether a connection at level on l may take a slot; if not, why, into
 * msg. Lower levels leave the reserved slots to higher ones, and each socket
 * leaves the others the slots they keep and do not use.
 */
static bool
slot_free(const struct ctl_server *srv, const struct ctl_listener *l, enum shaper_level level,
	  char *msg, size_t len)
{
	unsigned int at_or_below = 0, limit = CTL_MAX_CLIENTS, kept = 0;

	for (int k = 0; k <= (int)level; k++)
		at_or_below += srv->n_level[k];
	if (level < SHAPER_LEVEL_ADMIN)
		limit -= CTL_RESERVED_ADMIN;
	if (level < SHAPER_LEVEL_OPERATOR)
		limit -= CTL_RESERVED_OPERATOR;
	for (unsigned int k = 0; k < srv->n_listeners; k++)
		if (&srv->listeners[k] != l && srv->listeners[k].n_conns < CTL_RESERVED_SOCKET)
			kept += CTL_RESERVED_SOCKET - srv->listeners[k].n_conns;
	if (srv->n_conns >= CTL_MAX_CLIENTS) {
		snprintf(msg, len, "too many clients; try again later (all %d slots taken)",
			 CTL_MAX_CLIENTS);
		return false;
	}
	if (at_or_below >= limit) {
		snprintf(msg, len,
			 "too many clients; try again later (clients at level %s may take %u of "
			 "the %d slots)",
			 shaper_level_name(level), limit, CTL_MAX_CLIENTS);
		return false;
	}
	if (srv->n_conns + kept >= CTL_MAX_CLIENTS) {
		snprintf(msg, len,
			 "too many clients; try again later (the other control sockets keep %u "
			 "slots)",
			 kept);
		return false;
	}
	return true;
}

/* Say why before hanging up; best effort, the socket is fresh. */
static void
refuse(struct ctl_server *srv, int fd, const struct ctl_listener *l, const char *msg)
{
	char *busy = ctl_error_reply(CTL_ERR_BUSY, msg);

	if (busy != NULL && send(fd, busy, strlen(busy), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		busy[0] = '\0';
	free(busy);
	close(fd);
	shaper_log_limited(&srv->slot_log, SHAPER_LOG_WARNING,
			   "control: a client on %s refused: %s", l->path, msg);
}

static void
accept_some(struct ctl_server *srv, struct ctl_listener *l, uint64_t now)
{
	/* A bounded number per poll: a connect storm does not keep us here. */
	for (int k = 0; k < CTL_POLL_ACCEPTS; k++) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ctl_conn *c;
		struct epoll_event ev;
		struct ctl_peer peer;
		enum shaper_level level;
		char msg[160];

		if (fd < 0)
			return;
		peer_credentials(fd, &peer);
		level = ctl_access_level(&l->access, &peer);
		if (!slot_free(srv, l, level, msg, sizeof(msg))) {
			refuse(srv, fd, l, msg);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (c != NULL)
			c->in = malloc(CTL_MAX_LINE);
		if (c == NULL || c->in == NULL) {
			if (c != NULL)
				free(c->in);
			free(c);
			refuse(srv, fd, l, "too many clients; try again later (out of memory)");
			continue;
		}
		c->fd = fd;
		c->l = l;
		c->peer = peer;
		c->level = level;
		c->active_ns = now;
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
		srv->n_level[level]++;
		l->n_conns++;
	}
}

/* Idle, or a request begun too long ago: the slot goes back. */
static bool
conn_expired(const struct ctl_conn *c, uint64_t now)
{
	if (c->pending)
		return false; /* ours to answer, not the client's delay */
	if (c->partial_ns != 0 && now > c->partial_ns + CTL_REQUEST_TIMEOUT_S * NS_PER_S)
		return true;
	return now > c->active_ns + CTL_IDLE_TIMEOUT_S * NS_PER_S;
}

static struct ctl_listener *
listener_of(struct ctl_server *srv, void *ptr)
{
	for (unsigned int k = 0; k < srv->n_listeners; k++)
		if (ptr == (void *)&srv->listeners[k])
			return &srv->listeners[k];
	return NULL;
}

int
ctl_server_poll(struct ctl_server *srv, int timeout_ms)
{
	struct epoll_event evs[CTL_MAX_CLIENTS + SHAPER_MAX_CONTROL_SOCKETS + 1];
	struct budget b = { .requests = CTL_POLL_REQUESTS };
	bool any_pending = false;
	unsigned int n_conns, start, k;
	uint64_t now;
	int n;

	n = epoll_wait(srv->epfd, evs, (int)(sizeof(evs) / sizeof(evs[0])),
		       srv->woken ? 0 : timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	now = shaper_monotonic_ns();
	b.end_ns = now + CTL_POLL_MS * NS_PER_MS;
	for (int i = 0; i < n; i++) {
		struct ctl_conn *c = evs[i].data.ptr;
		struct ctl_listener *l = listener_of(srv, evs[i].data.ptr);

		if (l != NULL) {
			accept_some(srv, l, now);
			continue;
		}
		if (evs[i].data.ptr == (void *)&srv->wakefd)
			continue;
		if ((evs[i].events & EPOLLOUT) && conn_flush(srv, c, now) != 0)
			c->dead = true;
		if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			c->readable = true;
	}
	/* Turns in rotation; where the budget ran out, the next poll starts. */
	n_conns = srv->n_conns;
	start = n_conns > 0 ? srv->rr % n_conns : 0;
	for (k = 0; k < n_conns; k++) {
		struct ctl_conn *c = srv->conns[(start + k) % n_conns];

		if (c->dead || !(c->readable || c->pending))
			continue;
		if (!budget_left(&b))
			break;
		if (conn_serve(srv, c, &b, now) != 0)
			c->dead = true;
	}
	srv->rr = k < n_conns ? start + k : start + 1;
	now = shaper_monotonic_ns();
	for (unsigned int i = srv->n_conns; i-- > 0;) {
		struct ctl_conn *c = srv->conns[i];

		if (c->dead || conn_expired(c, now))
			conn_close(srv, c);
		else
			any_pending |= c->pending;
	}
	/* Lines waiting unanswered keep the fd readable, so the caller's poll returns. */
	if (any_pending != srv->woken) {
		uint64_t v = 1;

		if (any_pending ? write(srv->wakefd, &v, sizeof(v)) != sizeof(v)
				: read(srv->wakefd, &v, sizeof(v)) != sizeof(v))
			return 0; /* cannot fail for an eventfd we own: try again next poll */
		srv->woken = any_pending;
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
	close(srv->wakefd);
	close(srv->epfd);
	shaper_log_limit_release(&srv->refusal_log);
	shaper_log_limit_release(&srv->slot_log);
	free(srv);
}
