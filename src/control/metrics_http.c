/*
 * shaperd's Prometheus endpoint: libmicrohttpd with no thread of its own.
 * MHD keeps its sockets in an epoll set (MHD_USE_EPOLL without an internal
 * polling thread); the control thread polls that set's fd together with the
 * control socket and calls MHD_run, which never blocks. A scrape therefore
 * runs on the control thread, like a "stats" request on the socket, and
 * the backend never sees two callers at once.
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

#include <jansson.h>
#include <microhttpd.h>

#include "shaper/control.h"
#include "shaper/log.h"
#include "shaper/metrics.h"

#define METRICS_PATH         "/metrics"
#define METRICS_MAX_CONNS    32u /* a scraper or two and a curl: plenty */
#define METRICS_CONN_TIMEOUT 10u /* seconds an idle connection is kept */

struct ctl_metrics_http {
	struct MHD_Daemon *mhd;
	const struct ctl_backend *be;
	int epfd;
	bool started;       /* MHD's messages are logged from then on, kept before */
	char last_log[256]; /* MHD's last message, for the start-up error */
	struct shaper_log_limit log_limit;
};

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
				  METRICS_MAX_CONNS, MHD_OPTION_CONNECTION_TIMEOUT,
				  METRICS_CONN_TIMEOUT, MHD_OPTION_END);
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
	return MHD_run(h->mhd) == MHD_YES ? 0 : -EIO;
}

void
ctl_metrics_http_close(struct ctl_metrics_http *h)
{
	if (h == NULL)
		return;
	MHD_stop_daemon(h->mhd);
	shaper_log_limit_release(&h->log_limit);
	free(h);
}
