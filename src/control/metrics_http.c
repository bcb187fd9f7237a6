/*
 * shaperd's Prometheus endpoint: libmicrohttpd with no thread of its own.
 * MHD keeps its sockets in an epoll set (MHD_USE_EPOLL without an internal
 * polling thread); the control thread polls that set's fd together with the
 * control socket and calls MHD_run, which never blocks. A scrape therefore
 * runs on the control thread, like a "stats" request on the socket, and
 * the backend never sees two callers at once. So that no client holds that
 * thread or the endpoint: a cap per address, a deadline per request, and
 * scrapes close together answered from the last one's text.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <jansson.h>
#include <microhttpd.h>

#include "shaper/control.h"
#include "shaper/log.h"
#include "shaper/metrics.h"

#define METRICS_PATH            "/metrics"
#define METRICS_MAX_CONNS       32u /* a scraper or two and a curl: plenty */
#define METRICS_PER_IP          4u  /* one address cannot take them all */
/*
 * Seconds a connection has for each request: from its start, or the end of
 * its previous response, to the end of this one. MHD's own timeout is reset
 * by every byte, so a client trickling one a second would hold it forever;
 * past this deadline the socket is shut down whatever it does.
 */
#define METRICS_REQUEST_TIMEOUT 5u
/* A scrape this soon after the last one gets the same text, not another walk. */
#define METRICS_CACHE_MS        1000u

#define NS_PER_MS 1000000ull

struct metrics_conn {
	struct MHD_Connection *conn; /* NULL: a free slot */
	uint64_t deadline_ns;
	bool cut; /* shut down, MHD closes it on its next run */
};

struct ctl_metrics_http {
	struct MHD_Daemon *mhd;
	const struct ctl_backend *be;
	int epfd;
	bool started;       /* MHD's messages are logged from then on, kept before */
	char last_log[256]; /* MHD's last message, for the start-up error */
	struct shaper_log_limit log_limit;
	struct metrics_conn conns[METRICS_MAX_CONNS];
	char *cache; /* the last scrape's text */
	size_t cache_len;
	uint64_t cache_ns;
};

/* MHD's word on a connection opening or closing: its slot and its deadline. */
static void
on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
	      enum MHD_ConnectionNotificationCode toe)
{
	struct ctl_metrics_http *h = cls;
	struct metrics_conn *m = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (m != NULL)
			m->conn = NULL;
		*socket_context = NULL;
		return;
	}
	for (unsigned int i = 0; i < METRICS_MAX_CONNS; i++)
		if (h->conns[i].conn == NULL) {
			h->conns[i] = (struct metrics_conn){
				.conn = conn,
				.deadline_ns = shaper_monotonic_ns() +
					       METRICS_REQUEST_TIMEOUT * 1000000000ull,
			};
			*socket_context = &h->conns[i];
			return;
		}
	*socket_context = NULL; /* cannot be: MHD admits at most METRICS_MAX_CONNS */
}

/* A response sent: the next request on the connection has its own deadline. */
static void
on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
	     enum MHD_RequestTerminationCode toe)
{
	const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct metrics_conn *m = ci != NULL ? ci->socket_context : NULL;

	(void)cls;
	(void)con_cls;
	(void)toe;
	if (m != NULL && m->conn == conn)
		m->deadline_ns = shaper_monotonic_ns() + METRICS_REQUEST_TIMEOUT * 1000000000ull;
}

/* Shut down the sockets past their deadline; MHD sees the end and closes them. */
static void
cut_late(struct ctl_metrics_http *h)
{
	uint64_t now = shaper_monotonic_ns();

	for (unsigned int i = 0; i < METRICS_MAX_CONNS; i++) {
		struct metrics_conn *m = &h->conns[i];
		const union MHD_ConnectionInfo *ci;

		if (m->conn == NULL || m->cut || now < m->deadline_ns)
			continue;
		ci = MHD_get_connection_info(m->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci != NULL)
			shutdown(ci->connect_fd, SHUT_RDWR);
		m->cut = true;
	}
}

/* MHD's messages: kept for ctl_metrics_http_open's error, then logged. */
static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct ctl_metrics_http *h = cls;
	size_t n;

	vsnprintf(h->last_log, sizeof(h->last_log), fmt, ap);
	n = strlen(h->last_log);
	while (n > 0 && (h->last_log[n - 1] == '\n' || h->last_log[n - 1] == '.'))
		h->last_log[--n] = '\0';
	/* MHD speaks of a client's misdeeds too (a bad request, a reset): limited */
	if (h->started)
		shaper_log_limited(&h->log_limit, SHAPER_LOG_WARNING, "metrics: %s", h->last_log);
}

/* One command through the same handler as the socket; the result or NULL with msg. */
static json_t *
call(const struct ctl_backend *be, const char *cmd, char *msg, size_t msglen)
{
	char req[64];
	char *reply;
	json_t *root, *result = NULL;

	snprintf(req, sizeof(req), "{\"id\":1,\"cmd\":\"%s\"}", cmd);
	/* /metrics only reads: the lowest level, whoever can reach the port. */
	reply = ctl_handle_request_as(be, SHAPER_LEVEL_USER, req, strlen(req), NULL);
	if (reply == NULL) {
		snprintf(msg, msglen, "%s: out of memory", cmd);
		return NULL;
	}
	root = json_loads(reply, 0, NULL);
	free(reply);
	if (json_is_true(json_object_get(root, "ok"))) {
		result = json_incref(json_object_get(root, "result"));
	} else {
		const char *m = json_string_value(
				json_object_get(json_object_get(root, "error"), "message"));

		snprintf(msg, msglen, "%s: %s", cmd, m != NULL ? m : "no answer");
	}
	json_decref(root);
	return result;
}

static enum MHD_Result
respond(struct MHD_Connection *conn, unsigned int status, char *body, size_t len, const char *type,
	const char *allow)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (r == NULL) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (allow != NULL)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result
respond_text(struct MHD_Connection *conn, unsigned int status, const char *text, const char *allow)
{
	char *body = strdup(text);

	if (body == NULL)
		return MHD_NO;
	return respond(conn, status, body, strlen(body), "text/plain; charset=utf-8", allow);
}

static enum MHD_Result
answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
       const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct ctl_metrics_http *h = cls;
	char msg[256], line[300];
	json_t *v, *s = NULL, *subs;
	char *body = NULL;
	size_t len = 0;
	FILE *f;
	int rc;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;
	if (strcmp(url, METRICS_PATH) != 0)
		return respond_text(conn, MHD_HTTP_NOT_FOUND,
				    "not found: shaperd serves " METRICS_PATH "\n", NULL);
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return respond_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
				    "method not allowed: use GET\n", "GET, HEAD");
	if (h->cache != NULL &&
	    shaper_monotonic_ns() < h->cache_ns + METRICS_CACHE_MS * NS_PER_MS) {
		body = malloc(h->cache_len + 1);
		if (body == NULL)
			return MHD_NO;
		memcpy(body, h->cache, h->cache_len);
		return respond(conn, MHD_HTTP_OK, body, h->cache_len, CTL_METRICS_CONTENT_TYPE,
			       NULL);
	}
	v = call(h->be, "version", msg, sizeof(msg));
	if (v != NULL)
		s = call(h->be, "stats", msg, sizeof(msg));
	if (v == NULL || s == NULL) {
		json_decref(v);
		snprintf(line, sizeof(line), "shaperd cannot report: %s\n", msg);
		return respond_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, line, NULL);
	}
	/* Empty when subscribers are not shaped; a refusal leaves the families out. */
	subs = call(h->be, "subscribers.metrics", msg, sizeof(msg));
	f = open_memstream(&body, &len);
	rc = f != NULL ? ctl_metrics_print(f, v, s, "1 while shaperd answers the scrape") : -ENOMEM;
	if (rc == 0 && subs != NULL)
		rc = ctl_metrics_print_subscribers(f, subs);
	json_decref(subs);
	if (f != NULL && fclose(f) != 0)
		rc = -EIO;
	json_decref(v);
	json_decref(s);
	if (rc != 0) {
		free(body);
		return respond_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				    "shaperd could not format its metrics\n", NULL);
	}
	free(h->cache);
	h->cache = malloc(len + 1);
	if (h->cache != NULL) {
		memcpy(h->cache, body, len);
		h->cache_len = len;
		h->cache_ns = shaper_monotonic_ns();
	}
	return respond(conn, MHD_HTTP_OK, body, len, CTL_METRICS_CONTENT_TYPE, NULL);
}

struct ctl_metrics_http *
ctl_metrics_http_open(const char *addr, uint16_t port, const struct ctl_backend *be, char *err,
		      size_t errlen)
{
	struct ctl_metrics_http *h = calloc(1, sizeof(*h));
	struct sockaddr_in6 sa6;
	struct sockaddr_in sa4;
	struct sockaddr *sa;
	unsigned int flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	const union MHD_DaemonInfo *info;
	bool v6 = false;

	if (h == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	h->be = be;
	h->log_limit = (struct shaper_log_limit)SHAPER_LOG_LIMIT_INIT(SHAPER_LOG_BURST,
								      SHAPER_LOG_INTERVAL_S);
	memset(&sa4, 0, sizeof(sa4));
	memset(&sa6, 0, sizeof(sa6));
	if (inet_pton(AF_INET, addr, &sa4.sin_addr) == 1) {
		sa4.sin_family = AF_INET;
		sa4.sin_port = htons(port);
		sa = (struct sockaddr *)&sa4;
	} else if (inet_pton(AF_INET6, addr, &sa6.sin6_addr) == 1) {
		sa6.sin6_family = AF_INET6;
		sa6.sin6_port = htons(port);
		sa = (struct sockaddr *)&sa6;
		flags |= MHD_USE_IPv6;
		v6 = true;
	} else {
		snprintf(err, errlen, "\"%s\" is not a numeric IP address", addr);
		free(h);
		return NULL;
	}
	h->mhd = MHD_start_daemon(flags, port, NULL, NULL, answer, h, MHD_OPTION_EXTERNAL_LOGGER,
				  mhd_log, h, MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_CONNECTION_LIMIT,
				  METRICS_MAX_CONNS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				  METRICS_PER_IP, MHD_OPTION_CONNECTION_TIMEOUT,
				  METRICS_REQUEST_TIMEOUT, MHD_OPTION_NOTIFY_CONNECTION,
				  on_connection, h, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				  MHD_OPTION_END);
	if (h->mhd == NULL) {
		snprintf(err, errlen, "cannot listen on %s%s%s:%u: %s", v6 ? "[" : "", addr,
			 v6 ? "]" : "", port,
			 h->last_log[0] != '\0' ? h->last_log : "libmicrohttpd refused to start");
		free(h);
		return NULL;
	}
	info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (info == NULL || info->epoll_fd < 0) {
		snprintf(err, errlen, "libmicrohttpd has no epoll fd to poll");
		MHD_stop_daemon(h->mhd);
		free(h);
		return NULL;
	}
	h->epfd = info->epoll_fd;
	h->started = true;
	return h;
}

int
ctl_metrics_http_fd(const struct ctl_metrics_http *h)
{
	return h->epfd;
}

int
ctl_metrics_http_run(struct ctl_metrics_http *h)
{
	int rc = MHD_run(h->mhd) == MHD_YES ? 0 : -EIO;

	cut_late(h);
	return rc;
}

void
ctl_metrics_http_close(struct ctl_metrics_http *h)
{
	if (h == NULL)
		return;
	MHD_stop_daemon(h->mhd);
	shaper_log_limit_release(&h->log_limit);
	free(h->cache);
	free(h);
}
