/*
 * The /metrics endpoint (src/control/metrics_http.c) on a real localhost
 * socket with the fake backend, all on this one thread: the test's client
 * writes a request, then turns the server's crank (poll on its fd,
 * ctl_metrics_http_run) until the reply is complete, which is how shaperd's
 * control thread drives it. If MHD needed a thread of its own, nothing
 * would answer. Status codes, the content type, the body's samples from the
 * fake's values, a backend failure (503), and an address already in use.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_backend.h"
#include "shaper/metrics.h"

static struct fake F;
static struct ctl_backend BE;

/* A port nobody listens on now (the kernel's pick), and the socket still holding it. */
static uint16_t
take_port(int *fd_out)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*fd_out = fd;
	return ntohs(sa.sin_port);
}

static struct ctl_metrics_http *
open_server(uint16_t *port)
{
	char err[256] = "";
	struct ctl_metrics_http *h;
	int fd;

	*port = take_port(&fd);
	close(fd);
	h = ctl_metrics_http_open("127.0.0.1", *port, &BE, err, sizeof(err));
	if (h == NULL)
		fail_msg("open: %s", err);
	return h;
}

/* Send a raw request and crank the server until it closes; the whole reply (malloc'd). */
static char *
exchange(struct ctl_metrics_http *h, uint16_t port, const char *request)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_non_null(buf);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(write(fd, request, strlen(request)), (ssize_t)strlen(request));
	assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	for (int turn = 0; turn < 500; turn++) {
		struct pollfd p = { .fd = ctl_metrics_http_fd(h), .events = POLLIN };
		ssize_t n;

		poll(&p, 1, 10);
		assert_int_equal(ctl_metrics_http_run(h), 0);
		n = read(fd, buf + len, cap - 1 - len);
		if (n == 0)
			break;
		if (n < 0) {
			assert_true(errno == EAGAIN);
			continue;
		}
		len += (size_t)n;
		if (len + 1 >= cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

static int
setup(void **state)
{
	(void)state;
	fake_init(&F);
	fake_backend(&F, &BE);
	return 0;
}

static void
test_get_metrics(void **state)
{
	uint16_t port;
	struct ctl_metrics_http *h = open_server(&port);
	char *r;

	(void)state;
	r = exchange(h, port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(r, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
	assert_non_null(strstr(r, "\r\n\r\n# HELP shaper_up 1 while shaperd answers the scrape\n"));
	assert_non_null(strstr(r, "\nshaper_up 1\n"));
	assert_non_null(strstr(r, "\nshaper_build_info{version=\"" SHAPER_VERSION
				  "\",protocol=\"1\"} 1\n"));
	/* the fake's canned counters, as samples */
	assert_non_null(strstr(r,
			       "\nshaper_direction_receive_packets_total{direction=\"upstream\"} "
			       "1234\n"));
	assert_non_null(strstr(r,
			       "\nshaper_direction_receive_packets_total{direction=\"downstream\"} "
			       "101234\n"));
	assert_non_null(strstr(r, "\nshaper_port_transmit_errors_total{port=\"wan\"} 2007\n"));
	free(r);

	/* HTTP/1.0 and HEAD: the same headers, no body */
	r = exchange(h, port, "HEAD /metrics HTTP/1.0\r\n\r\n");
	assert_non_null(strstr(r, " 200 OK\r\n"));
	assert_non_null(strstr(r, "Content-Type: text/plain; version=0.0.4"));
	assert_null(strstr(r, "shaper_up"));
	free(r);
	ctl_metrics_http_close(h);
}

static void
test_not_found_and_method(void **state)
{
	uint16_t port;
	struct ctl_metrics_http *h = open_server(&port);
	char *r;

	(void)state;
	r = exchange(h, port, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 404 Not Found\r\n"));
	assert_null(strstr(r, "shaper_up"));
	free(r);
	r = exchange(h, port, "GET /metrics/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 404 Not Found\r\n"));
	free(r);
	r = exchange(h, port,
		     "POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
		     "Content-Length: 3\r\n\r\nabc");
	assert_non_null(strstr(r, "HTTP/1.1 405 Method Not Allowed\r\n"));
	assert_non_null(strstr(r, "Allow: GET, HEAD\r\n"));
	free(r);
	r = exchange(h, port, "DELETE /nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 404 Not Found\r\n"));
	free(r);
	ctl_metrics_http_close(h);
}

static void
test_backend_failure(void **state)
{
	uint16_t port;
	struct ctl_metrics_http *h = open_server(&port);
	char *r;

	(void)state;
	F.snapshot_rc[SHAPER_DOWN] = -EBUSY;
	r = exchange(h, port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.1 503 Service Unavailable\r\n"));
	assert_non_null(strstr(r, "\r\n\r\nshaperd cannot report: stats: "));
	assert_null(strstr(r, "shaper_up"));
	free(r);
	ctl_metrics_http_close(h);
}

static void
test_address_in_use(void **state)
{
	char err[256] = "", want[128];
	struct ctl_metrics_http *h;
	int fd;
	uint16_t port = take_port(&fd);

	(void)state;
	assert_int_equal(listen(fd, 1), 0);
	h = ctl_metrics_http_open("127.0.0.1", port, &BE, err, sizeof(err));
	assert_null(h);
	snprintf(want, sizeof(want), "cannot listen on 127.0.0.1:%u: ", port);
	assert_true(strncmp(err, want, strlen(want)) == 0);
	assert_non_null(strstr(err, "in use"));
	close(fd);

	/* an IPv6 address is shown in brackets; not numeric is refused */
	port = take_port(&fd);
	close(fd);
	h = ctl_metrics_http_open("::1", port, &BE, err, sizeof(err));
	if (h == NULL) /* a box without IPv6 on lo */
		assert_non_null(strstr(err, "cannot listen on [::1]:"));
	ctl_metrics_http_close(h);
	assert_null(ctl_metrics_http_open("localhost", port, &BE, err, sizeof(err)));
	assert_string_equal(err, "\"localhost\" is not a numeric IP address");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_get_metrics, setup),
		cmocka_unit_test_setup(test_not_found_and_method, setup),
		cmocka_unit_test_setup(test_backend_failure, setup),
		cmocka_unit_test_setup(test_address_in_use, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
