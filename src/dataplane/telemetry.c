/*
 * DPDK telemetry: the read-only control commands under /shaper/..., so
 * dpdk-telemetry.py shows the same numbers as shapectl. Each callback runs
 * the control protocol's own handler (one action behind every front end)
 * and flattens its JSON into telemetry's dict: nested keys are joined with
 * '_', arrays of objects (the tins) become one array per field.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <rte_telemetry.h>

#include "shaper/dataplane.h"

static const struct ctl_backend *tel_backend;
/*
 * Telemetry runs its handlers on its own threads until rte_eal_cleanup,
 * after the daemon has freed what the backend reads: requests in flight
 * are counted, and once shutdown began new ones are refused.
 */
static unsigned int tel_inflight;
static bool tel_closed;

static bool
tel_enter(void)
{
	__atomic_add_fetch(&tel_inflight, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&tel_closed, __ATOMIC_SEQ_CST))
		return true;
	__atomic_sub_fetch(&tel_inflight, 1, __ATOMIC_SEQ_CST);
	return false;
}

static void
tel_leave(void)
{
	__atomic_sub_fetch(&tel_inflight, 1, __ATOMIC_SEQ_CST);
}

static void
tel_name(char *out, size_t len, const char *prefix, const char *key)
{
	size_t i;

	snprintf(out, len, "%s%s%s", prefix, prefix[0] ? "_" : "", key);
	for (i = 0; out[i] != '\0'; i++)
		if (!((out[i] >= 'a' && out[i] <= 'z') || (out[i] >= 'A' && out[i] <= 'Z') ||
		      (out[i] >= '0' && out[i] <= '9') || out[i] == '_' || out[i] == '/'))
			out[i] = '_';
}

/* Arrays of objects: one telemetry array per field, index = array position. */
static void
flatten_array(struct rte_tel_data *d, const char *name, json_t *arr)
{
	json_t *first = json_array_get(arr, 0), *v;
	const char *key;

	if (!json_is_object(first))
		return;
	json_object_foreach (first, key, v) {
		struct rte_tel_data *a = rte_tel_data_alloc();
		bool is_str = json_is_string(v);
		char full[RTE_TEL_MAX_STRING_LEN];
		size_t i;
		json_t *el;

		if (a == NULL)
			return;
		rte_tel_data_start_array(a, is_str ? RTE_TEL_STRING_VAL : RTE_TEL_U64_VAL);
		json_array_foreach (arr, i, el) {
			json_t *x = json_object_get(el, key);

			if (is_str)
				rte_tel_data_add_array_string(
						a,
						json_string_value(x) ? json_string_value(x) : "");
			else
				rte_tel_data_add_array_u64(a, (uint64_t)json_integer_value(x));
		}
		tel_name(full, sizeof(full), name, key);
		if (rte_tel_data_add_dict_container(d, full, a, 0) != 0)
			rte_tel_data_free(a);
	}
}

static void
flatten(struct rte_tel_data *d, const char *prefix, json_t *o)
{
	const char *key;
	json_t *v;

	json_object_foreach (o, key, v) {
		char name[RTE_TEL_MAX_STRING_LEN];

		tel_name(name, sizeof(name), prefix, key);
		if (json_is_object(v))
			flatten(d, name, v);
		else if (json_is_array(v))
			flatten_array(d, name, v);
		else if (json_is_integer(v))
			rte_tel_data_add_dict_u64(d, name, (uint64_t)json_integer_value(v));
		else if (json_is_string(v))
			rte_tel_data_add_dict_string(d, name, json_string_value(v));
		else if (json_is_boolean(v))
			rte_tel_data_add_dict_int(d, name, json_is_true(v));
	}
}

static int
run_cmd(const char *cmd, const char *params, struct rte_tel_data *d)
{
	char req[256];
	char *reply;
	json_t *rep, *result;
	int rc = -1;

	if (params != NULL && params[0] != '\0')
		snprintf(req, sizeof(req), "{\"cmd\":\"%s\",\"args\":{\"direction\":\"%.32s\"}}",
			 cmd, strchr(params, '"') == NULL ? params : "?");
	else
		snprintf(req, sizeof(req), "{\"cmd\":\"%s\"}", cmd);
	if (!tel_enter()) {
		rte_tel_data_start_dict(d);
		rte_tel_data_add_dict_string(d, "error", "shaperd is shutting down");
		return 0;
	}
	reply = ctl_handle_request(tel_backend, req, strlen(req));
	tel_leave();
	if (reply == NULL)
		return -1;
	rep = json_loads(reply, 0, NULL);
	free(reply);
	result = json_object_get(rep, "result");
	rte_tel_data_start_dict(d);
	if (json_is_object(result)) {
		flatten(d, "", result);
		rc = 0;
	} else {
		json_t *msg = json_object_get(json_object_get(rep, "error"), "message");

		rte_tel_data_add_dict_string(d, "error",
					     json_string_value(msg) ? json_string_value(msg)
								    : "failed");
		rc = 0;
	}
	json_decref(rep);
	return rc;
}

static int
tel_version(const char *c, const char *params, struct rte_tel_data *d)
{
	(void)c;
	(void)params;
	return run_cmd("version", NULL, d);
}

static int
tel_stats(const char *c, const char *params, struct rte_tel_data *d)
{
	(void)c;
	return run_cmd("stats", params, d);
}

static int
tel_config(const char *c, const char *params, struct rte_tel_data *d)
{
	(void)c;
	return run_cmd("config.get", params, d);
}

void
dp_telemetry_register(const struct ctl_backend *be)
{
	tel_backend = be;
	__atomic_store_n(&tel_closed, false, __ATOMIC_SEQ_CST);
	rte_telemetry_register_cmd("/shaper/version", tel_version,
				   "Returns the shaperd and control protocol versions");
	rte_telemetry_register_cmd("/shaper/stats", tel_stats,
				   "Returns port, direction and per-tin statistics. "
				   "Parameters: [upstream|downstream]");
	rte_telemetry_register_cmd(
			"/shaper/config", tel_config,
			"Returns the scheduler settings. Parameters: [upstream|downstream]");
}

void
dp_telemetry_shutdown(void)
{
	__atomic_store_n(&tel_closed, true, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&tel_inflight, __ATOMIC_SEQ_CST) != 0)
		usleep(100);
}
