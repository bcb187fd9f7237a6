/*
 * The subscriber loaders (src/subscriber): the shipped LibreQoS samples and
 * the JSON form load to the same circuits, and every kind of bad input is
 * refused with a message naming the file, the line or JSON path and the
 * fault.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "shaper/sched.h"
#include "shaper/subscriber.h"

#define SAMPLES SHAPER_SOURCE_ROOT "/config/subscribers/"

static const char csv_header[] =
		"Circuit ID,Circuit Name,Device ID,Device Name,Parent Node,MAC,IPv4,IPv6,Download Min "
		"Mbps,Upload Min Mbps,Download Max Mbps,Upload Max Mbps,Comment\n";

static const char net_two_aps[] =
		"{\"Site\": {\"downloadBandwidthMbps\": 100, \"uploadBandwidthMbps\": 50, \"children\": {"
		"\"AP_A\": {\"downloadBandwidthMbps\": 60, \"uploadBandwidthMbps\": 20},"
		"\"AP_B\": {\"downloadBandwidthMbps\": 60, \"uploadBandwidthMbps\": 20}}}}";

static char tmpdir[] = "/tmp/test_subscriber_XXXXXX";

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Load csv rows (after the header) with net as network.json into an initialised set. */
static int
load_csv_into(const char *rows, const char *net, struct sub_set *set, char *err, size_t errlen)
{
	char csv[128], nj[128], *text;
	int rc;

	snprintf(csv, sizeof(csv), "%s/ShapedDevices.csv", tmpdir);
	snprintf(nj, sizeof(nj), "%s/network.json", tmpdir);
	text = malloc(strlen(csv_header) + strlen(rows) + 1);
	assert_non_null(text);
	strcpy(text, csv_header);
	strcat(text, rows);
	write_file(csv, text);
	free(text);
	write_file(nj, net ? net : "{}");
	rc = sub_load_libreqos(set, csv, nj, err, errlen);
	return rc;
}

/* The same into a fresh set; 0 or -errno with err. */
static int
load_csv(const char *rows, const char *net, struct sub_set *set, char *err, size_t errlen)
{
	sub_set_init(set);
	return load_csv_into(rows, net, set, err, errlen);
}

static void
expect_csv_error(const char *rows, const char *net, const char *want)
{
	struct sub_set set;
	char err[512] = "";
	int rc = load_csv(rows, net, &set, err, sizeof(err));

	if (rc == 0 || strstr(err, want) == NULL)
		fail_msg("rows:\n%s\nwanted an error with \"%s\", got rc %d: \"%s\"", rows, want,
			 rc, err);
	/* Every message names the file. */
	assert_non_null(strstr(err, "ShapedDevices.csv") ? err : strstr(err, "network.json"));
	sub_set_free(&set);
}

static void
test_samples(void **state)
{
	struct sub_set csv, js;
	char err[512] = "";
	uint32_t i, s;

	(void)state;
	sub_set_init(&csv);
	if (sub_load_libreqos(&csv, SAMPLES "ShapedDevices.csv", SAMPLES "network.json", err,
			      sizeof(err)) != 0)
		fail_msg("%s", err);
	sub_set_init(&js);
	if (sub_load_json(&js, SAMPLES "isp-subscribers.json", err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(csv.nnodes, 6); /* link + 2 sites + 3 children */
	assert_int_equal(csv.nsubs, 5);
	assert_int_equal(js.nsubs, 6);
	/* A circuit of two devices is one subscriber with both addresses. */
	s = sub_find(&csv, "c100");
	assert_int_not_equal(s, SUB_NONE);
	assert_int_equal(csv.subs[s].nprefixes, 3);
	assert_string_equal(csv.subs[s].name, "12 Elm St, Apt 3");
	assert_int_equal(csv.subs[s].plan[SUB_DOWN].max, 100000000);
	assert_int_equal(csv.subs[s].plan[SUB_UP].min, 5000000);
	/* Fractional Mbit/s are exact, the sqm column directional. */
	s = sub_find(&csv, "c102");
	assert_int_equal(csv.subs[s].plan[SUB_DOWN].max, 25500000);
	assert_int_equal(csv.subs[s].plan[SUB_DOWN].min, 500000);
	assert_int_equal(csv.subs[s].sqm[SUB_DOWN], SUB_SQM_CAKE);
	assert_int_equal(csv.subs[s].sqm[SUB_UP], SUB_SQM_FQ_CODEL);
	assert_int_equal(csv.nodes[sub_node_find(&csv, "Building_S1")].capacity[SUB_DOWN],
			 200500000);
	assert_int_equal(csv.subs[sub_find(&csv, "c104")].node, SUB_ROOT);
	/* The two forms agree on every circuit the CSV has (plans and parents). */
	for (i = 0; i < csv.nsubs; i++) {
		const struct sub_subscriber *a = &csv.subs[i];
		const struct sub_subscriber *b = &js.subs[sub_find(&js, a->id)];

		if (strcmp(a->id, "c104") == 0)
			continue; /* the JSON sample gives it no mins */
		assert_memory_equal(a->plan, b->plan, sizeof(a->plan));
		assert_string_equal(csv.nodes[a->node].name, js.nodes[b->node].name);
		assert_int_equal(a->nprefixes, b->nprefixes);
	}
	for (i = 0; i < csv.nnodes; i++)
		assert_memory_equal(csv.nodes[i].capacity,
				    js.nodes[i == 0 ? 0 : sub_node_find(&js, csv.nodes[i].name)]
						    .capacity,
				    i == 0 ? 0 : sizeof(csv.nodes[i].capacity));
	/* What only the JSON form says. */
	assert_int_equal(js.nodes[SUB_ROOT].capacity[SUB_DOWN], 1500000000);
	assert_int_equal(js.unknown, SUB_UNKNOWN_PLAN);
	assert_int_equal(js.unknown_plan[SUB_DOWN].max, 5000000);
	s = sub_find(&js, "c105");
	for (i = 0; i < js.nprefixes; i++)
		if (js.prefixes[i].sub == s)
			assert_int_equal(js.prefixes[i].vlan, 200);
	sub_set_free(&csv);
	sub_set_free(&js);
}

static void
test_csv_quoting(void **state)
{
	struct sub_set set;
	char err[512] = "", path[128];

	(void)state;
	/* Doubled quotes, a comma and a line break inside quotes, CRLF, comments, spaces. */
	if (load_csv("# a comment line\r\n"
		     "\"c1\",\"O\"\"Brien, Main St\nBuilding 2\",\"d1\",\"x\",\"\",\"\","
		     " \"10.0.0.1 , 10.0.0.2\" ,\"\",\"1\",\"1\",\"10\",\"5\",\"\"\r\n"
		     "\n"
		     "c2,plain,d2,x,,,10.0.0.3,,0,0,2.5,0.5,\n"
		     "c3,last line without a newline,d3,x,,,10.0.0.4,,0,0,1,1,",
		     NULL, &set, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(set.nsubs, 3);
	assert_string_equal(set.subs[0].name, "O\"Brien, Main St\nBuilding 2");
	assert_int_equal(set.subs[0].nprefixes, 2);
	assert_int_equal(set.subs[1].origin, 6); /* lines count the break inside quotes */
	assert_int_equal(set.subs[1].plan[SUB_UP].max, 500000);
	assert_int_equal(set.subs[2].nprefixes, 1);
	sub_set_free(&set);

	/*
	 * An unquoted Comment with commas (as in LibreQoS's own example):
	 * extra fields belong to the Comment, and sqm is the last field.
	 */
	snprintf(path, sizeof(path), "%s/ShapedDevices.csv", tmpdir);
	write_file(path, "Circuit ID,Circuit Name,Device ID,Device Name,Parent Node,MAC,IPv4,IPv6,"
			 "Download Min Mbps,Upload Min Mbps,Download Max Mbps,Upload Max Mbps,"
			 "Comment,sqm\n"
			 "c1,a,d1,x,,,10.0.0.1,,0,0,10,10,Down=cake, Up=fq_codel,cake/fq_codel\n");
	sub_set_init(&set);
	if (sub_load_libreqos(&set, path, NULL, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(set.subs[0].sqm[SUB_DOWN], SUB_SQM_CAKE);
	assert_int_equal(set.subs[0].sqm[SUB_UP], SUB_SQM_FQ_CODEL);
	sub_set_free(&set);
}

static void
test_csv_errors(void **state)
{
	(void)state;
	expect_csv_error("c1,a,d1,x,,,10.0.0.1,,0,0,10,10,\nc2,b,d1,x,,,10.0.0.2,,0,0,10,10,\n",
			 NULL, "ShapedDevices.csv:3: duplicate Device ID \"d1\" (also on line 2)");
	expect_csv_error("c1,a,d1,x,AP_Z,,10.0.0.1,,0,0,10,10,\n", net_two_aps,
			 "ShapedDevices.csv:2: circuit \"c1\": unknown parent node \"AP_Z\"");
	expect_csv_error("c1,a,d1,x,AP_A,,10.0.0.1,,0,0,10,10,\nc1,a,d2,x,AP_B,,10.0.0.2,,0,0,10,"
			 "10,\n",
			 net_two_aps,
			 ":3: circuit \"c1\" has parent node \"AP_B\" here but Site/AP_A");
	expect_csv_error("c1,a,d1,x,,,10.0.0.1,,0,0,10,10,\nc1,a,d2,x,,,10.0.0.2,,0,0,20,10,\n",
			 NULL, ":3: circuit \"c1\" has other rates or sqm here than on line 2");
	expect_csv_error("c1,a,d1,x,,,10.0.0.1,,20,0,10,10,\n", NULL,
			 ":2 (circuit \"c1\"): download min 20.0 Mbit/s is above its max 10.0");
	expect_csv_error("c1,a,d1,x,,,10.0.0.1,,0,0,0,10,\n", NULL,
			 ":2 (circuit \"c1\"): download max must be above 0");
	expect_csv_error("c1,a,d1,x,,,10.0.0.0/24,,0,0,10,10,\nc2,a,d2,x,,,10.0.0.7,,0,0,10,10,\n",
			 NULL,
			 ":3 (circuit \"c2\"): 10.0.0.7/32 overlaps 10.0.0.0/24 of circuit \"c1\" "
			 "(line 2)");
	expect_csv_error("c1,a,d1,x,,,,2001:db8::/56,0,0,10,10,\nc2,a,d2,x,,,,2001:db8::/48,0,0,10,"
			 "10,\n",
			 NULL, ":3 (circuit \"c2\"): 2001:db8::/48 overlaps 2001:db8::/56");
	expect_csv_error("c1,a,d1,x,,,\"10.0.0.1, 10.0.0.1\",,0,0,10,10,\n", NULL,
			 ":2 (circuit \"c1\"): 10.0.0.1/32 and 10.0.0.1/32 overlap");
	expect_csv_error(
			"c1,a,d1,x,AP_A,,10.0.0.1,,40,0,50,10,\nc2,a,d2,x,AP_A,,10.0.0.2,,30,0,50,"
			"10,\n",
			net_two_aps,
			"network.json: node Site/AP_A: the download mins of the subscribers under it add up to "
			"70.0 Mbit/s, above its capacity 60.0");
	/* The same accepted with scale_mins, the node counted for a warning. */
	{
		struct sub_set set;
		char err[512] = "";

		sub_set_init(&set);
		set.scale_mins = true;
		if (load_csv_into("c1,a,d1,x,AP_A,,10.0.0.1,,40,0,50,10,\nc2,a,d2,x,AP_A,,10.0.0.2,,30,"
				  "0,50,10,\n",
				  net_two_aps, &set, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		assert_int_equal(set.mins_scaled, 1);
		sub_set_free(&set);
	}
	/* Mins that fit each AP but not their site together. */
	expect_csv_error("c1,a,d1,x,AP_A,,10.0.0.1,,0,15,50,20,\nc2,a,d2,x,AP_B,,10.0.0.2,,0,15,"
			 "50,20,\nc3,a,d3,x,Site,,10.0.0.3,,0,25,50,30,\n",
			 net_two_aps, "network.json: node Site: the upload mins");
	expect_csv_error("c1,a,d1,x,,,10.0.0.1/33,,0,0,10,10,\n", NULL,
			 ":2: IPv4: \"10.0.0.1/33\": the prefix length must be 1..32");
	expect_csv_error("c1,a,d1,x,,,0.0.0.0/0,,0,0,10,10,\n", NULL,
			 ":2: IPv4: \"0.0.0.0/0\": a /0 owns every address");
	expect_csv_error("c1,a,d1,x,,,,::/0,0,0,10,10,\n", NULL,
			 ":2: IPv6: \"::/0\": a /0 owns every address");
	expect_csv_error("c1,a,d1,x,,,10.0.0.1/24,,0,0,10,10,\n", NULL,
			 "\"10.0.0.1/24\" has host bits set past /24");
	expect_csv_error("c1,a,d1,x,,,2001:db8::1,,0,0,10,10,\n", NULL,
			 ":2: IPv4: \"2001:db8::1\" is an IPv6 address");
	expect_csv_error("c1,a,d1,x,,,10.0.0.1,,0,0,10Mbps,10,\n", NULL,
			 ":2: Download Max Mbps: \"10Mbps\" is not a rate in Mbit/s");
	expect_csv_error("c1,a,d1,x,,,10.0.0.1,,0,0,10,10\n", NULL,
			 ":2: 12 fields, the header has 13");
	expect_csv_error("c1,\"a,d1,x,,,10.0.0.1,,0,0,10,10,\n", NULL,
			 "a quoted field is not closed");
	expect_csv_error("c1,a,d1,x,,,,,0,0,10,10,\n", NULL,
			 ":2: circuit \"c1\" has no IPv4 or IPv6 address");
	expect_csv_error("c1,a,d1,x,,,10.0.0.1,,0,0,10,10,\n",
			 "{\"A\": {\"downloadBandwidthMbps\": 1, \"uploadBandwidthMbps\": 1, "
			 "\"children\": {\"A\": {\"downloadBandwidthMbps\": 1, "
			 "\"uploadBandwidthMbps\": 1}}}}",
			 "network.json: A.children.A: duplicate node name \"A\" (also at A)");
	expect_csv_error("c1,a,d1,x,,,10.0.0.1,,0,0,10,10,\n",
			 "{\"A\": {\"downloadBandwidthMbps\": \"1\", \"uploadBandwidthMbps\": 1}}",
			 "network.json: A.downloadBandwidthMbps: must be a number of Mbit/s");
	expect_csv_error("c1,a,d1,x,,,10.0.0.1,,0,0,10,10,\n",
			 "{\"A\": {\"uploadBandwidthMbps\": 1}}",
			 "network.json: A: missing \"downloadBandwidthMbps\"");
	expect_csv_error("c1,a,d1,x,,,10.0.0.1,,0,0,10,10,\n", "{\"A\": ", "network.json:1:");
}

#define LQOS SHAPER_SOURCE_ROOT "/tests/unit/subscriber/libreqos/"

static const struct sub_subscriber *
sub_by_id(const struct sub_set *set, const char *id)
{
	for (uint32_t i = 0; i < set->nsubs; i++)
		if (strcmp(set->subs[i].id, id) == 0)
			return &set->subs[i];
	fail_msg("no circuit %s", id);
	return NULL;
}

static const char *
parent_of(const struct sub_set *set, const char *id)
{
	return set->nodes[sub_by_id(set, id)->node].name;
}

static void expect_net_error(const char *net, const char *want);

/* LibreQoS 1.4, 1.5 and 2.x files, each as its release writes it. */
static void
test_libreqos_versions(void **state)
{
	struct sub_set set;
	char err[512] = "";
	const struct sub_subscriber *s;

	(void)state;
	sub_set_init(&set);
	if (sub_load_libreqos(&set, LQOS "ShapedDevices-1.4.csv", LQOS "network.json", err,
			      sizeof(err)) != 0)
		fail_msg("1.4: %s", err);
	assert_int_equal(set.nsubs, 3);
	assert_int_equal(sub_by_id(&set, "101")->nprefixes, 4);
	assert_string_equal(parent_of(&set, "102"), "AP_South");
	assert_int_equal(sub_by_id(&set, "103")->node, SUB_ROOT);
	assert_string_equal(set.not_applied, "");
	sub_set_free(&set);

	sub_set_init(&set);
	if (sub_load_libreqos(&set, LQOS "ShapedDevices-1.5.csv", LQOS "network.json", err,
			      sizeof(err)) != 0)
		fail_msg("1.5: %s", err);
	assert_int_equal(set.nsubs, 4);
	s = sub_by_id(&set, "201");
	assert_int_equal(s->plan[SUB_DOWN].min, 500000);
	assert_int_equal(s->plan[SUB_UP].max, 1000000);
	assert_int_equal(s->sqm[SUB_DOWN], SUB_SQM_FQ_CODEL);
	assert_int_equal(s->sqm[SUB_UP], SUB_SQM_FQ_CODEL);
	s = sub_by_id(&set, "202"); /* its Comment holds a comma */
	assert_int_equal(s->plan[SUB_UP].max, 5250000);
	assert_int_equal(s->sqm[SUB_DOWN], SUB_SQM_CAKE);
	assert_int_equal(s->sqm[SUB_UP], SUB_SQM_FQ_CODEL);
	s = sub_by_id(&set, "203");
	assert_int_equal(s->sqm[SUB_DOWN], SUB_SQM_DEFAULT);
	assert_int_equal(s->sqm[SUB_UP], SUB_SQM_NONE);
	s = sub_by_id(&set, "204");
	assert_int_equal(s->sqm[SUB_DOWN], SUB_SQM_CAKE);
	assert_int_equal(s->sqm[SUB_UP], SUB_SQM_DEFAULT);
	assert_int_equal(s->sqm_opt[SUB_DOWN], SUB_SQM_OPT_NONE);
	/* Whether shaperd honours a circuit's sqm is said by sub_config_load, not here. */
	assert_string_equal(set.not_applied, "");
	sub_set_free(&set);

	/*
	 * 2.x: parents by Parent Node ID where network.json has ids; sqm options
	 * kept per side; virtual nodes (a grouping, no cap) stand for their
	 * nearest real ancestor, by name and by id; the fields integrations add
	 * (name, latitude, parent_site, uisp_device, an empty children, a null
	 * type) and fractional capacities load.
	 */
	sub_set_init(&set);
	if (sub_load_libreqos(&set, LQOS "ShapedDevices-2.x.csv", LQOS "network-2.x.json", err,
			      sizeof(err)) != 0)
		fail_msg("2.x: %s", err);
	assert_int_equal(set.nsubs, 5);
	s = sub_by_id(&set, "301");
	assert_int_equal(s->plan[SUB_DOWN].max, 150500000);
	assert_int_equal(s->plan[SUB_UP].max, 30250000);
	assert_int_equal(s->sqm[SUB_DOWN], SUB_SQM_CAKE);
	assert_int_equal(s->sqm[SUB_UP], SUB_SQM_FQ_CODEL);
	assert_int_equal(s->sqm_opt[SUB_DOWN], 1 + SCHED_DIFFSERV4);
	assert_int_equal(s->sqm_opt[SUB_UP], SUB_SQM_OPT_NONE);
	s = sub_by_id(&set, "305"); /* "cake besteffort": one side for both */
	assert_int_equal(s->sqm[SUB_UP], SUB_SQM_CAKE);
	assert_int_equal(s->sqm_opt[SUB_DOWN], 1 + SCHED_BESTEFFORT);
	assert_int_equal(s->sqm_opt[SUB_UP], 1 + SCHED_BESTEFFORT);
	assert_string_equal(parent_of(&set, "301"), "AP_North");
	assert_string_equal(parent_of(&set, "302"), "AP_South"); /* by its id alone */
	assert_string_equal(parent_of(&set, "303"), "Site_1");
	assert_string_equal(parent_of(&set, "304"), "Site_1");    /* North_Group is virtual */
	assert_int_equal(sub_by_id(&set, "305")->node, SUB_ROOT); /* a top-level virtual id */
	/* Site_1, AP_North, AP_South, Site_2: no node for the two virtual ones. */
	assert_int_equal(set.nnodes, 5);
	for (uint32_t i = 1; i < set.nnodes; i++) {
		const struct sub_node *n = &set.nodes[i];

		assert_string_not_equal(n->name, "North_Group");
		assert_string_not_equal(n->name, "Region_East");
		if (strcmp(n->name, "AP_North") == 0)
			assert_string_equal(set.nodes[n->parent].name, "Site_1");
		if (strcmp(n->name, "AP_South") == 0) {
			assert_int_equal(n->capacity[SUB_DOWN], 300500000);
			assert_int_equal(n->capacity[SUB_UP], 80250000);
		}
		if (strcmp(n->name, "Site_2") == 0) {
			assert_int_equal(n->parent, SUB_ROOT);
			assert_int_equal(n->capacity[SUB_DOWN], 128000);
			assert_string_equal(n->id, "42");
		}
	}
	assert_string_equal(set.not_applied, "");
	sub_set_free(&set);
	/* A virtual node's name is taken like any other; its "virtual" must be a truth value. */
	expect_net_error(
			"{\"A\": {\"virtual\": true, \"children\": {\"A\": {\"downloadBandwidthMbps\": 1, "
			"\"uploadBandwidthMbps\": 1}}}}",
			"duplicate node name \"A\" (also at virtual node A)");
	expect_net_error("{\"A\": {\"virtual\": \"maybe\", \"downloadBandwidthMbps\": 1, "
			 "\"uploadBandwidthMbps\": 1}}",
			 "A.virtual: must be true or false");
	expect_net_error(
			"{\"A\": {\"id\": \"x\", \"downloadBandwidthMbps\": 1, \"uploadBandwidthMbps\": "
			"1}, \"V\": {\"virtual\": true, \"id\": \"x\"}}",
			"virtual node \"V\" has the id \"x\" of another node");
}

/* Load a whole CSV text (header included) with net as network.json. */
static int
load_csv_text(const char *text, const char *net, struct sub_set *set, char *err, size_t errlen)
{
	char csv[128], nj[128];

	snprintf(csv, sizeof(csv), "%s/ShapedDevices.csv", tmpdir);
	snprintf(nj, sizeof(nj), "%s/network.json", tmpdir);
	write_file(csv, text);
	write_file(nj, net ? net : "{}");
	sub_set_init(set);
	return sub_load_libreqos(set, csv, nj, err, errlen);
}

static void
expect_text_error(const char *text, const char *net, const char *want)
{
	struct sub_set set;
	char err[512] = "";
	int rc = load_csv_text(text, net, &set, err, sizeof(err));

	if (rc == 0 || strstr(err, want) == NULL)
		fail_msg("%s\nwanted an error with \"%s\", got rc %d: \"%s\"", text, want, rc, err);
	sub_set_free(&set);
}

/* A one-circuit CSV under net as network.json: refused, with want in the message. */
static void
expect_net_error(const char *net, const char *want)
{
	expect_text_error("Circuit ID,Device ID,IPv4,IPv6,Download Min Mbps,Upload Min "
			  "Mbps,Download Max Mbps,Upload Max Mbps\nc1,d1,10.0.0.1,,1,1,2,1\n",
			  net, want);
}

/* Columns are found by name: any order, any case; unknown ones named, not fatal. */
static void
test_csv_columns_by_name(void **state)
{
	static const char net_ids[] =
			"{\"S\": {\"id\": 7, \"downloadBandwidthMbps\": 100, "
			"\"uploadBandwidthMbps\": 50, \"children\": {\"A\": {\"id\": \"a-1\", "
			"\"downloadBandwidthMbps\": 60, \"uploadBandwidthMbps\": 20}}}}";
	struct sub_set set;
	char err[512] = "";

	(void)state;
	if (load_csv_text("ipv4,IPV6,circuit id,device id,download max mbps,upload max mbps,"
			  "download min mbps,upload min mbps,Region\n"
			  "10.0.0.1,,c1,d1,20,5,1,1,north\n",
			  NULL, &set, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(set.nsubs, 1);
	assert_int_equal(set.subs[0].plan[SUB_DOWN].max, 20000000);
	assert_int_equal(set.subs[0].node, SUB_ROOT);
	assert_non_null(strstr(set.not_applied, "columns not used: \"Region\""));
	sub_set_free(&set);
	/* A numeric id names its node too. */
	if (load_csv_text("Circuit ID,Device ID,Parent Node,Parent Node ID,IPv4,IPv6,Download Min "
			  "Mbps,Upload Min Mbps,Download Max Mbps,Upload Max Mbps\n"
			  "c1,d1,,7,10.0.0.1,,1,1,20,5\nc2,d2,A,a-1,10.0.0.2,,1,1,20,5\n",
			  net_ids, &set, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_string_equal(parent_of(&set, "c1"), "S");
	assert_string_equal(parent_of(&set, "c2"), "A");
	sub_set_free(&set);
	expect_text_error("Circuit ID,Device ID,IPv4,Download Min Mbps,Upload Min Mbps,Download "
			  "Max Mbps,Upload Max Mbps\n",
			  NULL, ":1: no \"IPv6\" column");
	expect_text_error("Circuit ID,Device ID,IPv4,IPv6,ipv4,Download Min Mbps,Upload Min "
			  "Mbps,Download Max Mbps,Upload Max Mbps\n",
			  NULL, ":1: columns 3 and 5 are both \"IPv4\"");
	expect_text_error("Circuit ID,Device ID,Parent Node ID,IPv4,IPv6,Download Min Mbps,Upload "
			  "Min Mbps,Download Max Mbps,Upload Max Mbps\nc1,d1,nope,10.0.0.1,,1,1,20,"
			  "5\n",
			  net_ids, ":2: circuit \"c1\": unknown Parent Node ID \"nope\"");
	expect_text_error("Circuit ID,Device ID,Parent Node,Parent Node ID,IPv4,IPv6,Download Min "
			  "Mbps,Upload Min Mbps,Download Max Mbps,Upload Max Mbps\n"
			  "c1,d1,A,7,10.0.0.1,,1,1,20,5\n",
			  net_ids,
			  "Parent Node \"A\" and Parent Node ID \"7\" (node \"S\") name "
			  "different nodes");
	/* More fields than the header with no Comment to hold them. */
	expect_text_error("Circuit ID,Device ID,IPv4,IPv6,Download Min Mbps,Upload Min "
			  "Mbps,Download Max Mbps,Upload Max Mbps\nc1,d1,10.0.0.1,,1,1,20,5,x\n",
			  NULL, ":2: 9 fields, the header has 8");
	expect_text_error(csv_header,
			  "{\"A\": {\"id\": \"x\", \"downloadBandwidthMbps\": 1, "
			  "\"uploadBandwidthMbps\": 1}, \"B\": {\"id\": \"x\", "
			  "\"downloadBandwidthMbps\": 1, \"uploadBandwidthMbps\": 1}}",
			  "have the same id \"x\"");
}

static void
expect_json_error(const char *text, const char *want)
{
	struct sub_set set;
	char err[512] = "";
	int rc;

	sub_set_init(&set);
	rc = sub_load_json_text(&set, text, "subs.json", err, sizeof(err));
	if (rc == 0 || strstr(err, want) == NULL)
		fail_msg("%s\nwanted an error with \"%s\", got rc %d: \"%s\"", text, want, rc, err);
	sub_set_free(&set);
}

#define ONE_SUB(extra)                                                                             \
	"{\"nodes\": {\"AP\": {\"download\": \"100mbit\", \"upload\": \"50mbit\"}},"               \
	"\"subscribers\": [{\"id\": \"a\", \"node\": \"AP\", \"download\": \"10mbit\", "           \
	"\"upload\": \"5mbit\", \"addresses\": [\"10.0.0.1\"]}" extra "]}"

static void
test_json_form(void **state)
{
	struct sub_set set;
	char err[512] = "";

	(void)state;
	sub_set_init(&set);
	if (sub_load_json_text(&set, ONE_SUB(""), "subs.json", err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(set.subs[0].plan[SUB_DOWN].max, 10000000);
	assert_int_equal(set.unknown, SUB_UNKNOWN_LINK);
	assert_false(set.scale_mins);
	sub_set_free(&set);
	/* scale_mins, as documented, in the file itself. */
	sub_set_init(&set);
	if (sub_load_json_text(&set,
			       "{\"scale_mins\": true, \"nodes\": {\"AP\": {\"download\": "
			       "\"100mbit\", \"upload\": \"50mbit\"}}, \"subscribers\": [{\"id\": "
			       "\"a\", \"node\": \"AP\", \"download\": \"10mbit\", \"upload\": "
			       "\"5mbit\", \"addresses\": [\"10.0.0.1\"]}]}",
			       "subs.json", err, sizeof(err)) != 0)
		fail_msg("scale_mins: %s", err);
	assert_true(set.scale_mins);
	sub_set_free(&set);

	expect_json_error(
			ONE_SUB(",{\"id\": \"a\", \"download\": \"1mbit\", \"upload\": \"1mbit\", "
				"\"addresses\": [\"10.0.0.2\"]}"),
			"subs.json: subscribers[1]: duplicate id \"a\" (also subscribers[0])");
	expect_json_error(ONE_SUB(",{\"id\": \"b\", \"node\": \"AP9\", \"download\": \"1mbit\", "
				  "\"upload\": \"1mbit\", \"addresses\": [\"10.0.0.2\"]}"),
			  "subs.json: subscribers[1]: node: unknown node \"AP9\"");
	expect_json_error(
			ONE_SUB(",{\"id\": \"b\", \"download\": {\"max\": \"1mbit\", \"min\": "
				"\"2mbit\"}, \"upload\": \"1mbit\", \"addresses\": [\"10.0.0.2\"]}"),
			"subs.json: subscribers[1] (\"b\"): download min 2.0 Mbit/s is above its "
			"max 1.0");
	expect_json_error(
			ONE_SUB(",{\"id\": \"b\", \"download\": \"1mbps\", \"upload\": \"1mbit\", "
				"\"addresses\": [\"10.0.0.2\"]}"),
			"subs.json: subscribers[1].download: ");
	expect_json_error(
			ONE_SUB(",{\"id\": \"b\", \"download\": \"1mbit\", \"upload\": \"1mbit\", "
				"\"addresses\": [\"10.0.0.0/30\"]}"),
			"subs.json: subscribers[1] (\"b\"): 10.0.0.0/30 overlaps 10.0.0.1/32 of "
			"subscribers[0] (\"a\")");
	/* The same address on another VLAN is another subscriber's. */
	sub_set_init(&set);
	if (sub_load_json_text(&set,
			       ONE_SUB(",{\"id\": \"b\", \"download\": \"1mbit\", \"upload\": "
				       "\"1mbit\", \"addresses\": [{\"prefix\": \"10.0.0.1\", "
				       "\"vlan\": 7}]}"),
			       "subs.json", err, sizeof(err)) != 0)
		fail_msg("%s", err);
	sub_set_free(&set);
	expect_json_error(
			ONE_SUB(",{\"id\": \"b\", \"download\": \"1mbit\", \"upload\": \"1mbit\", "
				"\"addresses\": [{\"prefix\": \"10.0.0.1\", \"vlan\": 4095}]}"),
			"subscribers[1].addresses[0]: vlan: expected a VLAN id 1..4094");
	expect_json_error(ONE_SUB(",{\"id\": \"b\", \"downlaod\": \"1mbit\"}"),
			  "subs.json: subscribers[1]: unknown key \"downlaod\"");
	expect_json_error("{\"nodes\": {\"AP\": {\"download\": \"100mbit\"}}, \"subscribers\": []}",
			  "subs.json: nodes.AP.upload: missing");
	expect_json_error(
			"{\"link\": {\"download\": \"10mbit\"}, \"subscribers\": [{\"id\": \"a\", "
			"\"download\": {\"max\": \"20mbit\", \"min\": \"11mbit\"}, \"upload\": "
			"\"1mbit\", \"addresses\": [\"10.0.0.1\"]}]}",
			"subs.json: node link: the download mins of the subscribers under it add up to 11.0");
	expect_json_error("{\"unknown\": {\"download\": \"1mbit\"}, \"subscribers\": []}",
			  "subs.json: unknown.upload: missing");
	expect_json_error("{\"subscribers\": [}", "subs.json:1:");
}

static void
test_prefix_parse(void **state)
{
	struct sub_prefix p;
	char err[128], buf[64];

	(void)state;
	assert_int_equal(sub_prefix_parse("100.64.0.8/29", &p, err, sizeof(err)), 0);
	assert_int_equal(p.family, 4);
	assert_int_equal(p.len, 29);
	sub_prefix_format(&p, buf, sizeof(buf));
	assert_string_equal(buf, "100.64.0.8/29");
	assert_int_equal(sub_prefix_parse("2001:db8:100::/56", &p, err, sizeof(err)), 0);
	assert_int_equal(p.len, 56);
	assert_int_equal(sub_prefix_parse("2001:db8:100::1/56", &p, err, sizeof(err)), -EINVAL);
	assert_int_equal(sub_prefix_parse("10.0.0.1/", &p, err, sizeof(err)), -EINVAL);
	assert_int_equal(sub_prefix_parse("10.0.0.1/ 8", &p, err, sizeof(err)), -EINVAL);
	assert_int_equal(sub_prefix_parse("10.0.0", &p, err, sizeof(err)), -EINVAL);
}

static int
setup(void **state)
{
	(void)state;
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int
teardown(void **state)
{
	char p[128];

	(void)state;
	snprintf(p, sizeof(p), "%s/ShapedDevices.csv", tmpdir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/network.json", tmpdir);
	unlink(p);
	rmdir(tmpdir);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_samples),
		cmocka_unit_test(test_csv_quoting),
		cmocka_unit_test(test_csv_errors),
		cmocka_unit_test(test_json_form),
		cmocka_unit_test(test_prefix_parse),
		cmocka_unit_test(test_libreqos_versions),
		cmocka_unit_test(test_csv_columns_by_name),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
