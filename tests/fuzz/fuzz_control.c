/*
 * libFuzzer harness: the control socket's request handler on any bytes,
 * against the unit tests' fake backend (tests/unit/control/fake_backend.h).
 * The input up to the first newline is the request line; bytes after it,
 * if any, make the backend fail (snapshots, ports, apply, reset, flows) or
 * set how many flows it has. Checked: the reply is exactly one line, a JSON
 * object of the documented shape, never "internal" (the fake never runs
 * out of memory), and echoes the request's id when it had a usable one.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fake_backend.h"
#include "fuzz_utf8.h"
#include "shaper/control.h"

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_control: %s:%d: check failed: %s\n", __FILE__,       \
				__LINE__, #cond);                                                  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static struct fake F;

static void
configure(const uint8_t *b, size_t n)
{
	if (n > 0 && (b[0] & 1))
		F.snapshot_rc[b[0] >> 1 & 1] = -EAGAIN;
	if (n > 0 && (b[0] & 4))
		F.port_rc[b[0] >> 3 & 1] = -ENODEV;
	if (n > 0 && (b[0] & 16))
		F.flows_rc = -EAGAIN;
	if (n > 0 && (b[0] & 32))
		F.reset_rc = -EAGAIN;
	if (n > 1 && b[1] != 0) {
		F.apply_rc = b[1] & 1 ? -EINVAL : -EAGAIN;
		snprintf(F.apply_msg, sizeof(F.apply_msg), "refused (%u)", b[1]);
	}
	if (n > 2)
		F.n_flows[b[2] & 1] = (unsigned int)b[2] * 4;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t len = nl != NULL ? (size_t)(nl - data) : size;
	struct ctl_backend be;
	json_t *req, *reply, *ok, *id, *want_id = NULL;
	json_error_t e;
	char *out;
	size_t n;

	fake_init(&F);
	if (nl != NULL)
		configure(nl + 1, size - len - 1);
	fake_backend(&F, &be);

	out = ctl_handle_request(&be, (const char *)data, len);
	CHECK(out != NULL);
	n = strlen(out);
	CHECK(n >= 2 && out[n - 1] == '\n' && memchr(out, '\n', n - 1) == NULL);
	CHECK(fuzz_utf8_valid(out, n));
	reply = json_loadb(out, n - 1, JSON_REJECT_DUPLICATES, &e);
	CHECK(json_is_object(reply));
	ok = json_object_get(reply, "ok");
	id = json_object_get(reply, "id");
	CHECK(json_is_boolean(ok));
	CHECK(id != NULL && (json_is_null(id) || json_is_integer(id) || json_is_string(id)));
	CHECK(json_object_size(reply) == 3);
	if (json_is_true(ok)) {
		CHECK(json_object_get(reply, "result") != NULL);
	} else {
		json_t *err = json_object_get(reply, "error");
		const char *code = json_string_value(json_object_get(err, "code"));
		const char *msg = json_string_value(json_object_get(err, "message"));

		CHECK(json_is_object(err) && json_object_size(err) == 2);
		CHECK(code != NULL && is_error_code(code));
		CHECK(msg != NULL && msg[0] != '\0');
		if (strcmp(code, "internal") == 0)
			fprintf(stderr, "fuzz_control: internal error: %s\n", msg);
		CHECK(strcmp(code, "internal") != 0);
	}

	/* The id comes back when the request was an object with a usable id. */
	req = len < CTL_MAX_LINE ? json_loadb((const char *)data, len, JSON_REJECT_DUPLICATES, &e)
				 : NULL;
	if (json_is_object(req))
		want_id = json_object_get(req, "id");
	if (want_id != NULL && (json_is_integer(want_id) || json_is_string(want_id)))
		CHECK(json_equal(want_id, id));
	json_decref(req);
	json_decref(reply);
	free(out);
	return 0;
}
