/*
 * Control access levels: who gets which level (root, the daemon's user, the
 * admin group by primary or supplementary gid, everyone else), the socket's
 * cap, and that the protocol refuses a command above the caller's level
 * with "permission_denied" naming both levels, without running it; and
 * that flows shows addresses and ports to operators only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fake_backend.h"

static const struct ctl_access ACCESS = {
	.socket_level = SHAPER_LEVEL_ADMIN,
	.default_level = SHAPER_LEVEL_USER,
	.daemon_uid = 990,
	.has_admin_gid = true,
	.admin_gid = 500,
};

static struct ctl_peer
peer(uid_t uid, gid_t gid)
{
	struct ctl_peer p;

	memset(&p, 0, sizeof(p));
	p.known = true;
	p.pid = 1234;
	p.uid = uid;
	p.gid = gid;
	return p;
}

static void
test_level_by_peer(void **state)
{
	struct ctl_peer p;

	(void)state;
	p = peer(0, 0); /* root */
	assert_int_equal(ctl_access_level(&ACCESS, &p), SHAPER_LEVEL_ADMIN);
	p = peer(990, 990); /* the daemon's own user */
	assert_int_equal(ctl_access_level(&ACCESS, &p), SHAPER_LEVEL_ADMIN);
	p = peer(1000, 500); /* admin group as the primary group */
	assert_int_equal(ctl_access_level(&ACCESS, &p), SHAPER_LEVEL_ADMIN);
	p = peer(1000, 1000); /* anyone else */
	assert_int_equal(ctl_access_level(&ACCESS, &p), SHAPER_LEVEL_USER);
	p.groups[0] = 27;
	p.groups[1] = 500; /* admin group as a supplementary group */
	p.n_groups = 2;
	assert_int_equal(ctl_access_level(&ACCESS, &p), SHAPER_LEVEL_ADMIN);
	p.n_groups = 1; /* only groups the kernel reported count */
	assert_int_equal(ctl_access_level(&ACCESS, &p), SHAPER_LEVEL_USER);
	p = peer(65534, 65534);
	p.known = false; /* no credentials: never root, whatever the fields say */
	p.uid = 0;
	assert_int_equal(ctl_access_level(&ACCESS, &p), SHAPER_LEVEL_USER);
}

static void
test_level_capped_by_socket(void **state)
{
	struct ctl_access a = ACCESS;
	struct ctl_peer root = peer(0, 0), other = peer(1000, 1000);

	(void)state;
	a.socket_level = SHAPER_LEVEL_USER; /* a read-only socket: even root only reads */
	assert_int_equal(ctl_access_level(&a, &root), SHAPER_LEVEL_USER);
	a.socket_level = SHAPER_LEVEL_OPERATOR;
	assert_int_equal(ctl_access_level(&a, &root), SHAPER_LEVEL_OPERATOR);
	assert_int_equal(ctl_access_level(&a, &other), SHAPER_LEVEL_USER);
	a.default_level = SHAPER_LEVEL_ADMIN; /* everyone admin, as before levels existed */
	a.socket_level = SHAPER_LEVEL_ADMIN;
	assert_int_equal(ctl_access_level(&a, &other), SHAPER_LEVEL_ADMIN);
	a.has_admin_gid = false;
	a.default_level = SHAPER_LEVEL_OPERATOR;
	other.gid = 500; /* admin_gid is ignored when there is none */
	assert_int_equal(ctl_access_level(&a, &other), SHAPER_LEVEL_OPERATOR);
}

static void
test_command_levels(void **state)
{
	static const struct {
		const char *cmd;
		enum shaper_level need;
	} want[] = {
		{ "version", SHAPER_LEVEL_USER },         { "stats", SHAPER_LEVEL_USER },
		{ "flows", SHAPER_LEVEL_USER },           { "config.get", SHAPER_LEVEL_USER },
		{ "stats.reset", SHAPER_LEVEL_OPERATOR }, { "config.set", SHAPER_LEVEL_ADMIN },
	};
	enum shaper_level l;

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		l = SHAPER_NUM_LEVELS;
		assert_int_equal(ctl_command_level(want[i].cmd, &l), 0);
		assert_int_equal(l, want[i].need);
	}
	assert_int_equal(ctl_command_level("config", &l), -1);
	assert_int_equal(ctl_command_level("", &l), -1);
}

/* One request at a level: the parsed reply, and the refused command if any. */
static json_t *
call_as(const struct ctl_backend *be, enum shaper_level level, const char *req,
	const char **refused)
{
	char *reply = ctl_handle_request_as(be, level, req, strlen(req), refused);
	json_t *j;

	assert_non_null(reply);
	j = json_loads(reply, 0, NULL);
	free(reply);
	assert_non_null(j);
	return j;
}

static void
assert_denied(json_t *j, const char *cmd, const char *need, const char *has)
{
	const char *msg = json_string_value(jpath(j, "error.message"));

	assert_true(json_is_false(json_object_get(j, "ok")));
	assert_string_equal(json_string_value(jpath(j, "error.code")), "permission_denied");
	assert_int_equal(json_integer_value(json_object_get(j, "id")), 7);
	assert_non_null(msg);
	assert_non_null(strstr(msg, cmd));
	assert_non_null(strstr(msg, need));
	assert_non_null(strstr(msg, has));
}

static void
test_protocol_refuses_above_level(void **state)
{
	static const char *const reads[] = {
		"{\"id\":7,\"cmd\":\"version\"}",
		"{\"id\":7,\"cmd\":\"stats\"}",
		"{\"id\":7,\"cmd\":\"flows\"}",
		"{\"id\":7,\"cmd\":\"config.get\"}",
	};
	const char *set = "{\"id\":7,\"cmd\":\"config.set\",\"args\":{\"direction\":\"upstream\","
			  "\"settings\":{\"bandwidth\":\"10mbit\"}}}";
	const char *reset = "{\"id\":7,\"cmd\":\"stats.reset\"}";
	const char *refused;
	struct ctl_backend be;
	struct fake f;
	json_t *j;

	(void)state;
	fake_init(&f);
	fake_backend(&f, &be);
	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
		refused = NULL;
		j = call_as(&be, SHAPER_LEVEL_USER, reads[i], &refused);
		assert_true(json_is_true(json_object_get(j, "ok")));
		assert_null(refused);
		json_decref(j);
	}
	/* user: both writes refused, and neither reached the backend */
	refused = NULL;
	j = call_as(&be, SHAPER_LEVEL_USER, set, &refused);
	assert_denied(j, "config.set", "admin", "user");
	assert_string_equal(refused, "config.set");
	json_decref(j);
	refused = NULL;
	j = call_as(&be, SHAPER_LEVEL_USER, reset, &refused);
	assert_denied(j, "stats.reset", "operator", "user");
	assert_string_equal(refused, "stats.reset");
	json_decref(j);
	assert_int_equal(f.apply_calls, 0);
	assert_int_equal(f.reset_calls, 0);
	/* operator: may reset, may not set */
	refused = NULL;
	j = call_as(&be, SHAPER_LEVEL_OPERATOR, reset, &refused);
	assert_true(json_is_true(json_object_get(j, "ok")));
	assert_null(refused);
	json_decref(j);
	assert_int_equal(f.reset_calls, 1);
	j = call_as(&be, SHAPER_LEVEL_OPERATOR, set, &refused);
	assert_denied(j, "config.set", "admin", "operator");
	json_decref(j);
	assert_int_equal(f.apply_calls, 0);
	/* admin: applied; ctl_handle_request is the admin level */
	refused = NULL;
	j = call_as(&be, SHAPER_LEVEL_ADMIN, set, &refused);
	assert_true(json_is_true(json_object_get(j, "ok")));
	assert_null(refused);
	json_decref(j);
	assert_int_equal(f.apply_calls, 1);
	assert_int_equal(f.applied.rate, 10000000 / 8);
	/* a bad request is still a bad request, not a refusal, at any level */
	refused = NULL;
	j = call_as(&be, SHAPER_LEVEL_USER, "{\"id\":7,\"cmd\":\"config.set\",\"x\":1}", &refused);
	assert_string_equal(json_string_value(jpath(j, "error.code")), "bad_request");
	assert_null(refused);
	json_decref(j);
}

/*
 * flows below the operator level: each address cut to its network (IPv4
 * /24, IPv6 /32), ports null; the queue figures as they are. The operator
 * and the admin see the addresses and ports themselves.
 */
static void
test_flows_masked_below_operator(void **state)
{
	static const enum shaper_level levels[] = { SHAPER_LEVEL_USER, SHAPER_LEVEL_OPERATOR,
						    SHAPER_LEVEL_ADMIN };
	const char *req = "{\"id\":7,\"cmd\":\"flows\",\"args\":{\"direction\":\"downstream\"}}";
	struct ctl_backend be;
	struct fake f;

	(void)state;
	fake_init(&f);
	fake_backend(&f, &be);
	for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]); l++) {
		bool masked = levels[l] < SHAPER_LEVEL_OPERATOR;
		json_t *j = call_as(&be, levels[l], req, NULL);
		json_t *arr = jpath(j, "result.downstream");

		assert_true(json_is_true(json_object_get(j, "ok")));
		assert_int_equal(json_array_size(arr), 5);
		for (size_t i = 0; i < json_array_size(arr); i++) {
			json_t *fl = json_array_get(arr, i);
			char src[48], dst[48];

			/* the fake's flow i: 192.168.1.(i+1):(40000+i) -> [2001:db8::(i+1)]:80 */
			snprintf(src, sizeof(src), "192.168.1.%zu", i + 1);
			snprintf(dst, sizeof(dst), "2001:db8::%zx", i + 1);
			assert_string_equal(json_string_value(json_object_get(fl, "src")),
					    masked ? "192.168.1.0/24" : src);
			assert_string_equal(json_string_value(json_object_get(fl, "dst")),
					    masked ? "2001:db8::/32" : dst);
			if (masked) {
				assert_true(json_is_null(json_object_get(fl, "sport")));
				assert_true(json_is_null(json_object_get(fl, "dport")));
			} else {
				assert_int_equal(json_integer_value(json_object_get(fl, "sport")),
						 40000 + i);
				assert_int_equal(json_integer_value(json_object_get(fl, "dport")),
						 80);
			}
			assert_int_equal(json_integer_value(json_object_get(fl, "backlog_bytes")),
					 150000 - 1000 * i);
			assert_int_equal(json_integer_value(json_object_get(fl, "packets")),
					 2000 - i);
		}
		json_decref(j);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_level_by_peer),
		cmocka_unit_test(test_level_capped_by_socket),
		cmocka_unit_test(test_command_levels),
		cmocka_unit_test(test_protocol_refuses_above_level),
		cmocka_unit_test(test_flows_masked_below_operator),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
