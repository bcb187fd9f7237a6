/*
 * JSON configuration (jansson) -> validated structs: the typed getters
 * both halves of the parser use and a direction's keys (the daemon's
 * sections are in config_daemon.c). Keys follow tc-cake's words; every
 * error names the JSON path. Nothing here knows DPDK.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <jansson.h>

#include "shaper/config.h"
#include "shaper/config_keys.h"
#include "shaper/limits.h"
#include "shaper/units.h"

#include "config_json.h"

const char *const shaper_dir_name[SHAPER_NUM_DIRS] = { "upstream", "downstream" };
const char *const shaper_port_name[SHAPER_NUM_PORTS] = { "wan", "lan" };

/*
 * Paths and messages quote JSON keys and values, which are UTF-8; a buffer
 * that cuts one short must not split a character (the control socket's
 * JSON replies refuse invalid UTF-8). Drop a sequence left incomplete at
 * the end of s; what comes before it is whole, as the text it was cut from.
 */
static void
utf8_cut_tail(char *s)
{
	size_t n = strlen(s), lead = n;
	unsigned char c;

	while (lead > 0 && n - lead < 3 && ((unsigned char)s[lead - 1] & 0xc0) == 0x80)
		lead--;
	if (lead == 0)
		return;
	c = (unsigned char)s[lead - 1];
	if (c >= 0xc0 && n - (lead - 1) < (c >= 0xf0 ? 4u : c >= 0xe0 ? 3u : 2u))
		s[lead - 1] = '\0';
}

/* "path.key" into buf, cut to fit on a character boundary: the JSON path of key. */
const char *
join_path(char *buf, size_t len, const char *path, const char *key)
{
	snprintf(buf, len, "%s.%s", path, key);
	utf8_cut_tail(buf);
	return buf;
}

void
errf(char *err, size_t errlen, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (err == NULL || errlen == 0)
		return;
	n = snprintf(err, errlen, "%s: ", path);
	if (n >= 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - n, fmt, ap);
		va_end(ap);
	}
	utf8_cut_tail(err);
}

/* "unknown key (known: ...)", the known ones from the key table (config_keys.c). */
int
unknown_key(const char *section, const char *path, const char *what, char *err, size_t errlen)
{
	char list[512];

	shaper_config_key_list(section, list, sizeof(list));
	errf(err, errlen, path, "unknown %s (known: %s)", what, list);
	return -1;
}

static const struct name_val discipline_names[] = { { "fifo", SCHED_DISC_FIFO },
						    { "fq_codel", SCHED_DISC_FQ_CODEL },
						    { "cake", SCHED_DISC_CAKE } };

static const struct name_val diffserv_names[] = {
	{ "diffserv3", SCHED_DIFFSERV3 },   { "diffserv4", SCHED_DIFFSERV4 },
	{ "diffserv8", SCHED_DIFFSERV8 },   { "besteffort", SCHED_BESTEFFORT },
	{ "precedence", SCHED_PRECEDENCE },
};

static const struct name_val isolation_names[] = {
	{ "flowblind", SCHED_FLOWBLIND },
	{ "srchost", SCHED_SRCHOST },
	{ "dsthost", SCHED_DSTHOST },
	{ "hosts", SCHED_HOSTS },
	{ "flows", SCHED_FLOWS },
	{ "dual-srchost", SCHED_DUAL_SRCHOST },
	{ "dual-dsthost", SCHED_DUAL_DSTHOST },
	{ "triple-isolate", SCHED_TRIPLE_ISOLATE },
};

static const struct name_val framing_names[] = { { "noatm", SCHED_FRAMING_NONE },
						 { "atm", SCHED_FRAMING_ATM },
						 { "ptm", SCHED_FRAMING_PTM } };

static const struct name_val ack_filter_names[] = {
	{ "no-ack-filter", SCHED_ACK_FILTER_OFF },
	{ "ack-filter", SCHED_ACK_FILTER_ON },
	{ "ack-filter-aggressive", SCHED_ACK_FILTER_AGGRESSIVE },
};

/* rtt presets: target and interval in µs (iproute2's table). */
static const struct {
	const char *name;
	uint32_t target_us, interval_us;
} rtt_presets[] = {
	{ "datacentre", 5, 100 },        { "lan", 50, 1000 },
	{ "metro", 500, 10000 },         { "regional", 1500, 30000 },
	{ "internet", 5000, 100000 },    { "oceanic", 15000, 300000 },
	{ "satellite", 50000, 1000000 }, { "interplanetary", 50000000, 1000000000 },
};

/*
 * Link-layer keywords, applied left to right as tc-cake(8) does: most add
 * to the overhead; "conservative" (like "overhead N") sets it; each may set
 * the mpu and the framing. "raw", "overhead N", "mpu N", "atm", "ptm",
 * "noatm" and "via-ethernet" are handled in parse_overhead.
 */
static const struct {
	const char *name;
	int32_t overhead;
	int32_t mpu; /* -1 = leave */
	int framing; /* -1 = leave */
} overhead_keywords[] = {
	{ "conservative", 48, -1, SCHED_FRAMING_ATM }, /* sets 48: a whole cell plus framing */
	{ "ipoa-vcmux", 8, -1, SCHED_FRAMING_ATM },
	{ "ipoa-llcsnap", 16, -1, SCHED_FRAMING_ATM },
	{ "bridged-vcmux", 24, -1, SCHED_FRAMING_ATM },
	{ "bridged-llcsnap", 32, -1, SCHED_FRAMING_ATM },
	{ "pppoa-vcmux", 10, -1, SCHED_FRAMING_ATM },
	{ "pppoa-llc", 14, -1, SCHED_FRAMING_ATM },
	{ "pppoe-vcmux", 32, -1, SCHED_FRAMING_ATM },
	{ "pppoe-llcsnap", 40, -1, SCHED_FRAMING_ATM },
	{ "pppoe-ptm", 30, -1, SCHED_FRAMING_PTM },
	{ "bridged-ptm", 22, -1, SCHED_FRAMING_PTM },
	{ "docsis", 18, 64, SCHED_FRAMING_NONE },
	{ "ethernet", 38, 84, -1 },
	{ "ether-vlan", 4, -1, -1 },
};

static int
lookup(const struct name_val *t, size_t n, const char *name, int *val)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].name, name) == 0) {
			*val = t[i].val;
			return 0;
		}
	return -1;
}

const char *
name_of(const struct name_val *t, size_t n, int val)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].val == val)
			return t[i].name;
	return "?";
}

const char *
shaper_diffserv_name(enum sched_diffserv d)
{
	return name_of(diffserv_names, NELEM(diffserv_names), d);
}

const char *
shaper_isolation_name(enum sched_isolation i)
{
	return name_of(isolation_names, NELEM(isolation_names), i);
}

const char *
shaper_discipline_name(enum sched_discipline d)
{
	return name_of(discipline_names, NELEM(discipline_names), d);
}

static void
list_names(const struct name_val *t, size_t n, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && off < len; i++)
		off += snprintf(buf + off, len - off, "%s%s", i ? ", " : "", t[i].name);
}

const char *
json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "?";
}

/* Typed getters: each checks the type and range and names the path. */
int
get_enum(const json_t *v, const char *path, const struct name_val *t, size_t n, int *out,
	 const char *what, char *err, size_t errlen)
{
	char names[256];

	list_names(t, n, names, sizeof(names));
	if (!json_is_string(v)) {
		errf(err, errlen, path, "expected a string (%s: %s), got %s", what, names,
		     json_type_name(v));
		return -1;
	}
	if (lookup(t, n, json_string_value(v), out) != 0) {
		errf(err, errlen, path, "\"%s\" is not a valid %s (one of: %s)",
		     json_string_value(v), what, names);
		return -1;
	}
	return 0;
}

int
get_bool(const json_t *v, const char *path, bool *out, char *err, size_t errlen)
{
	if (!json_is_boolean(v)) {
		errf(err, errlen, path, "expected true or false, got %s", json_type_name(v));
		return -1;
	}
	*out = json_is_true(v);
	return 0;
}

int
get_int(const json_t *v, const char *path, long long lo, long long hi, long long *out, char *err,
	size_t errlen)
{
	long long x;

	if (!json_is_integer(v)) {
		errf(err, errlen, path, "expected an integer, got %s", json_type_name(v));
		return -1;
	}
	x = json_integer_value(v);
	if (x < lo || x > hi) {
		errf(err, errlen, path, "%lld is out of range %lld..%lld", x, lo, hi);
		return -1;
	}
	*out = x;
	return 0;
}

int
get_unit(const json_t *v, const char *path, unit_parser parse, const char *what, uint64_t lo,
	 uint64_t hi, uint64_t *out, char *err, size_t errlen)
{
	char msg[256];
	uint64_t x;

	if (!json_is_string(v)) {
		errf(err, errlen, path, "expected a %s as a string such as %s, got %s", what,
		     parse == shaper_parse_rate   ? "\"100mbit\""
		     : parse == shaper_parse_time ? "\"30ms\""
						  : "\"32mb\"",
		     json_type_name(v));
		return -1;
	}
	if (parse(json_string_value(v), &x, msg, sizeof(msg)) != 0) {
		errf(err, errlen, path, "%s", msg);
		return -1;
	}
	if (x < lo || x > hi) {
		errf(err, errlen, path, "\"%s\" is out of range for a %s", json_string_value(v),
		     what);
		return -1;
	}
	*out = x;
	return 0;
}

int
get_string(const json_t *v, const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
	if (!json_is_string(v)) {
		errf(err, errlen, path, "expected a string, got %s", json_type_name(v));
		return -1;
	}
	if (strlen(json_string_value(v)) >= outlen) {
		errf(err, errlen, path, "longer than %zu characters", outlen - 1);
		return -1;
	}
	snprintf(out, outlen, "%s", json_string_value(v));
	return 0;
}

int
expect_object(const json_t *v, const char *path, char *err, size_t errlen)
{
	if (!json_is_object(v)) {
		errf(err, errlen, path, "expected an object, got %s", json_type_name(v));
		return -1;
	}
	return 0;
}

/* A whole number token of an overhead string, within lo..hi. */
static int
overhead_number(const char *tok, const char *what, long lo, long hi, long *out, const char *path,
		char *err, size_t errlen)
{
	char *end = NULL;
	long x;

	if (tok == NULL) {
		errf(err, errlen, path, "\"%s\" needs a number after it", what);
		return -1;
	}
	x = strtol(tok, &end, 10);
	if (end == tok || *end != '\0' || x < lo || x > hi) {
		errf(err, errlen, path, "\"%s %s\": expected a whole number %ld..%ld", what, tok,
		     lo, hi);
		return -1;
	}
	*out = x;
	return 0;
}

/*
 * "overhead": an integer N is tc's "overhead N"; a string is tc-cake(8)'s
 * overhead words, applied left to right as tc does: keywords add to the
 * overhead, "conservative" and "overhead N" set it, "mpu N" sets the mpu,
 * "atm"/"ptm"/"noatm" the framing, and "raw" sets overhead 0 and noatm and
 * turns overhead mode off (the L2 length is charged as is) even when an
 * "overhead N" follows it, so "raw overhead 18" charges frame + 18 bytes.
 */
static int
parse_overhead(const json_t *v, const char *path, struct sched_params *p, char *err, size_t errlen)
{
	char buf[256], *tok, *save = NULL;
	int32_t overhead = 0;
	bool overhead_set = false, raw = false;
	long long x;
	long n;

	if (json_is_integer(v)) {
		if (get_int(v, path, -64, 256, &x, err, errlen) != 0)
			return -1;
		p->overhead = (int32_t)x;
		p->overhead_mode = true;
		return 0;
	}
	if (!json_is_string(v)) {
		errf(err, errlen, path,
		     "expected an integer (-64..256) or link-layer keywords such as \"ethernet\" "
		     "or \"docsis\", got %s",
		     json_type_name(v));
		return -1;
	}
	if (strlen(json_string_value(v)) >= sizeof(buf)) {
		errf(err, errlen, path, "too long (%zu bytes, at most %zu)",
		     strlen(json_string_value(v)), sizeof(buf) - 1);
		return -1;
	}
	snprintf(buf, sizeof(buf), "%s", json_string_value(v));
	for (tok = strtok_r(buf, " ", &save); tok != NULL; tok = strtok_r(NULL, " ", &save)) {
		size_t i;

		if (strcmp(tok, "raw") == 0) {
			overhead = 0;
			overhead_set = raw = true;
			p->framing = SCHED_FRAMING_NONE;
			continue;
		}
		if (strcmp(tok, "overhead") == 0) {
			if (overhead_number(strtok_r(NULL, " ", &save), "overhead", -64, 256, &n,
					    path, err, errlen) != 0)
				return -1;
			overhead = (int32_t)n;
			overhead_set = true;
			continue;
		}
		if (strcmp(tok, "mpu") == 0) {
			if (overhead_number(strtok_r(NULL, " ", &save), "mpu", 0, 256, &n, path,
					    err, errlen) != 0)
				return -1;
			p->mpu = (uint32_t)n;
			continue;
		}
		if (strcmp(tok, "atm") == 0 || strcmp(tok, "ptm") == 0 ||
		    strcmp(tok, "noatm") == 0) {
			p->framing = tok[0] == 'a'   ? SCHED_FRAMING_ATM
				     : tok[0] == 'p' ? SCHED_FRAMING_PTM
						     : SCHED_FRAMING_NONE;
			continue;
		}
		if (strcmp(tok, "via-ethernet") == 0)
			continue; /* a legacy no-op in tc as well */
		for (i = 0; i < NELEM(overhead_keywords); i++)
			if (strcmp(tok, overhead_keywords[i].name) == 0)
				break;
		if (i == NELEM(overhead_keywords)) {
			errf(err, errlen, path,
			     "\"%s\" is not a link-layer keyword (raw, ethernet, ether-vlan, docsis, "
			     "conservative, pppoe-ptm, bridged-ptm, pppoa-vcmux, pppoa-llc, "
			     "pppoe-vcmux, pppoe-llcsnap, ipoa-vcmux, ipoa-llcsnap, bridged-vcmux, "
			     "bridged-llcsnap, atm, ptm, noatm, overhead N, mpu N)",
			     tok);
			return -1;
		}
		if (strcmp(tok, "conservative") == 0)
			overhead = overhead_keywords[i].overhead;
		else
			overhead += overhead_keywords[i].overhead;
		overhead_set = true;
		if (overhead_keywords[i].mpu >= 0)
			p->mpu = (uint32_t)overhead_keywords[i].mpu;
		if (overhead_keywords[i].framing >= 0)
			p->framing = (enum sched_framing)overhead_keywords[i].framing;
	}
	if (overhead < -64 || overhead > 256) {
		errf(err, errlen, path, "the keywords add up to %d bytes, outside -64..256",
		     overhead);
		return -1;
	}
	if (overhead_set) {
		p->overhead = overhead;
		p->overhead_mode = !raw;
	}
	return 0;
}

static int
parse_rtt(const json_t *v, const char *path, struct sched_params *p, char *err, size_t errlen)
{
	uint64_t ns;

	if (json_is_string(v))
		for (size_t i = 0; i < NELEM(rtt_presets); i++)
			if (strcmp(json_string_value(v), rtt_presets[i].name) == 0) {
				p->rtt_us = rtt_presets[i].interval_us;
				p->target_us = rtt_presets[i].target_us;
				return 0;
			}
	if (json_is_string(v) && shaper_parse_time(json_string_value(v), &ns, NULL, 0) != 0) {
		errf(err, errlen, path,
		     "\"%s\" is not a time or rtt preset (e.g. \"40ms\", or one of datacentre, lan, "
		     "metro, regional, internet, oceanic, satellite, interplanetary)",
		     json_string_value(v));
		return -1;
	}
	if (get_unit(v, path, shaper_parse_time, "time", 1000, 1000000000000ULL, &ns, err,
		     errlen) != 0)
		return -1;
	p->rtt_us = (uint32_t)(ns / 1000);
	p->target_us = p->rtt_us / 20 > 0 ? p->rtt_us / 20 : 1;
	return 0;
}

static int
parse_emulate(const json_t *obj, const char *path, struct shaper_emulate_config *em, char *err,
	      size_t errlen)
{
	const char *key;
	json_t *v;
	char sub[160];

	if (expect_object(obj, path, err, errlen) != 0)
		return -1;
	json_object_foreach ((json_t *)obj, key, v) {
		join_path(sub, sizeof(sub), path, key);
		REFUSE_UNLISTED("emulate", key, sub);
		if (strcmp(key, "delay") == 0) {
			if (get_unit(v, sub, shaper_parse_time, "time", 0, 60000000000ULL,
				     &em->delay_ns, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "jitter") == 0) {
			if (get_unit(v, sub, shaper_parse_time, "time", 0, 60000000000ULL,
				     &em->jitter_ns, err, errlen) != 0)
				return -1;
		} else if (strcmp(key, "loss") == 0) {
			double pct;

			if (!json_is_number(v) || (pct = json_number_value(v)) < 0 || pct > 100) {
				errf(err, errlen, sub, "expected a percentage 0..100");
				return -1;
			}
			em->loss_ppm = (uint32_t)(pct * 10000. + 0.5);
		} else if (strcmp(key, "seed") == 0) {
			long long x;

			if (get_int(v, sub, 0, INT64_MAX, &x, err, errlen) != 0)
				return -1;
			em->seed = (uint64_t)x;
		} else if (strcmp(key, "limit") == 0) {
			long long x;

			if (get_int(v, sub, 1, 1 << 24, &x, err, errlen) != 0)
				return -1;
			em->limit = (uint32_t)x;
		} else {
			return unknown_key("emulate", sub, "key", err, errlen);
		}
	}
	return 0;
}

/*
 * Direction keys, table-driven: each key names the disciplines it applies
 * to and a parser. Most keys set one sched_params field through a generic
 * parser (an integer, a bool, an enum name, a time in µs, a size, a rate)
 * with the field and range in the table; the rest have their own.
 */
struct dir_parse {
	struct sched_params *n;            /* the direction being built */
	struct shaper_emulate_config *em;  /* NULL where "emulate" cannot change */
	struct shaper_autorate_config *ar; /* NULL where autorate cannot change */
	const char *path;                  /* JSON path of the key, for errors */
	char *err;
	size_t errlen;
};

struct dir_key {
	const char *key;
	unsigned int disciplines; /* bit per enum sched_discipline */
	/* NULL: read before the other keys (discipline, rtt). */
	int (*parse)(const json_t *v, const struct dir_key *k, struct dir_parse *d);
	/* For the generic parsers: the field, its range, enum names. */
	size_t off, size;
	long long lo, hi; /* the integer, or ns, bytes, bytes/s */
	const struct name_val *names;
	size_t n_names;
	const char *what;
};

/* Store v in the (unsigned integer or enum) field k names. */
static void
set_field(struct sched_params *n, const struct dir_key *k, uint64_t v)
{
	char *f = (char *)n + k->off;
	uint8_t v8 = (uint8_t)v;
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;

	switch (k->size) {
	case 1:
		memcpy(f, &v8, 1);
		break;
	case 2:
		memcpy(f, &v16, 2);
		break;
	case 4:
		memcpy(f, &v32, 4);
		break;
	default:
		memcpy(f, &v, 8);
		break;
	}
}

static int
key_int(const json_t *v, const struct dir_key *k, struct dir_parse *d)
{
	long long x;

	if (get_int(v, d->path, k->lo, k->hi, &x, d->err, d->errlen) != 0)
		return -1;
	set_field(d->n, k, (uint64_t)x);
	return 0;
}

static int
key_bool(const json_t *v, const struct dir_key *k, struct dir_parse *d)
{
	bool b;

	if (get_bool(v, d->path, &b, d->err, d->errlen) != 0)
		return -1;
	memcpy((char *)d->n + k->off, &b, sizeof(b));
	return 0;
}

static int
key_enum(const json_t *v, const struct dir_key *k, struct dir_parse *d)
{
	int e;

	if (get_enum(v, d->path, k->names, k->n_names, &e, k->what, d->err, d->errlen) != 0)
		return -1;
	set_field(d->n, k, (uint64_t)e);
	return 0;
}

/* A time stored in µs; the range is in ns. */
static int
key_time_us(const json_t *v, const struct dir_key *k, struct dir_parse *d)
{
	uint64_t ns;

	if (get_unit(v, d->path, shaper_parse_time, "time", (uint64_t)k->lo, (uint64_t)k->hi, &ns,
		     d->err, d->errlen) != 0)
		return -1;
	set_field(d->n, k, ns / 1000);
	return 0;
}

static int
key_size(const json_t *v, const struct dir_key *k, struct dir_parse *d)
{
	uint64_t x;

	if (get_unit(v, d->path, shaper_parse_size, "size", (uint64_t)k->lo, (uint64_t)k->hi, &x,
		     d->err, d->errlen) != 0)
		return -1;
	set_field(d->n, k, x);
	return 0;
}

static int
key_rate(const json_t *v, const struct dir_key *k, struct dir_parse *d)
{
	uint64_t x;

	if (get_unit(v, d->path, shaper_parse_rate, "rate", (uint64_t)k->lo, (uint64_t)k->hi, &x,
		     d->err, d->errlen) != 0)
		return -1;
	set_field(d->n, k, x);
	return 0;
}

#define AUTORATE_EXAMPLE "{\"min\": \"20mbit\", \"max\": \"100mbit\"}"

/* Autorate's tuning keys (next to min, max, start): defaults in autorate_params_default. */
enum ar_kind {
	AR_TIME,
	AR_U32,
	AR_RATE,
	AR_NO_SAMPLES
};
struct ar_key {
	const char *name;
	enum ar_kind kind;
	size_t off;
	uint64_t lo, hi; /* ns for times, bytes/s for rates */
};
#define AR_MS(x) ((uint64_t)(x)*1000000ull)
#define ARK(n, kind, f, lo, hi)                                                                    \
	{                                                                                          \
		n, kind, offsetof(struct autorate_params, f), lo, hi                               \
	}
static const struct ar_key ar_keys[] = {
	ARK("base", AR_RATE, base_rate, 1, 0),
	ARK("interval", AR_TIME, interval_ns, AR_MS(10), AR_MS(1000)),
	ARK("early_samples", AR_U32, early_samples, 0, 1000),
	ARK("bloat", AR_TIME, bloat_ns, AR_MS(1), AR_MS(1000)),
	ARK("clear", AR_TIME, clear_ns, 0, AR_MS(1000)),
	ARK("frame", AR_U32, frame_bytes, 0, 65535),
	ARK("refractory", AR_TIME, refractory_ns, 0, AR_MS(10000)),
	ARK("cut_min", AR_U32, cut_min_pct, 1, 90),
	ARK("cut_max", AR_U32, cut_max_pct, 1, 90),
	ARK("drain", AR_TIME, drain_ns, AR_MS(10), AR_MS(60000)),
	ARK("loaded", AR_U32, loaded_pct, 1, 100),
	ARK("idle", AR_U32, idle_pct, 0, 100),
	ARK("raise_fast", AR_U32, up_fast_pct, 0, 100),
	ARK("raise_slow", AR_U32, up_slow_pct, 0, 100),
	ARK("near_low", AR_U32, near_lo_pct, 0, 1000),
	ARK("near_high", AR_U32, near_hi_pct, 0, 1000),
	ARK("standing_intervals", AR_U32, standing_intervals, 0, 1000),
	ARK("standing_cut", AR_U32, standing_cut_pct, 0, 90),
	ARK("decay", AR_U32, decay_pct, 0, 100),
	ARK("no_samples", AR_NO_SAMPLES, decay_without_samples, 0, 0),
	ARK("owd_stale", AR_TIME, owd_stale_ns, AR_MS(1), AR_MS(600000)),
	ARK("owd_recent", AR_U32, owd_recent, 1, AR_OWD_RECENT_MAX),
	ARK("lesser_ratio", AR_U32, lesser_ratio, 0, 1000),
	ARK("path_flat", AR_TIME, path_flat_ns, 0, AR_MS(1000)),
	ARK("path_checks", AR_U32, path_checks, 0, 100),
	ARK("path_max", AR_TIME, path_max_ns, 0, AR_MS(10000)),
	ARK("at_line", AR_U32, line_pct, 0, 100),
	ARK("growth", AR_U32, growth_pct, 0, 1000),
	ARK("regain", AR_U32, regain_pct, 0, 100),
	ARK("acks_floor", AR_U32, acks_floor_pct, 0, 1000),
};

static int
ar_tune_key(const json_t *x, const char *sub, const struct ar_key *ak, uint64_t rate_hi,
	    struct autorate_params *t, char *err, size_t errlen)
{
	static const struct name_val no_samples[] = { { "hold", 0 }, { "decay", 1 } };
	char *f = (char *)t + ak->off;
	uint64_t u;
	long long i;
	int e;

	switch (ak->kind) {
	case AR_TIME:
		if (get_unit(x, sub, shaper_parse_time, "time", ak->lo, ak->hi, &u, err, errlen) !=
		    0)
			return -1;
		memcpy(f, &u, sizeof(u));
		return 0;
	case AR_RATE:
		if (get_unit(x, sub, shaper_parse_rate, "rate", ak->lo, rate_hi, &u, err, errlen) !=
		    0)
			return -1;
		memcpy(f, &u, sizeof(u));
		return 0;
	case AR_U32: {
		uint32_t v;

		if (get_int(x, sub, (long long)ak->lo, (long long)ak->hi, &i, err, errlen) != 0)
			return -1;
		v = (uint32_t)i;
		memcpy(f, &v, sizeof(v));
		return 0;
	}
	case AR_NO_SAMPLES: {
		bool b;

		if (get_enum(x, sub, no_samples, 2, &e, "choice", err, errlen) != 0)
			return -1;
		b = e == 1;
		memcpy(f, &b, sizeof(b));
		return 0;
	}
	}
	return -1;
}

/* The tuning's keys that must keep an order: clear <= bloat, cut_min <= cut_max, ... */
static int
ar_tune_check(const struct shaper_autorate_config *ar, const char *path, char *err, size_t errlen)
{
	const struct autorate_params *t = &ar->tune;
	const char *bad = t->clear_ns > t->bloat_ns         ? "clear\" is above \"bloat"
			  : t->cut_min_pct > t->cut_max_pct ? "cut_min\" is above \"cut_max"
			  : t->near_lo_pct > t->near_hi_pct ? "near_low\" is above \"near_high"
			  : t->base_rate < ar->min_rate || t->base_rate > ar->max_rate
					  ? "base\" is outside \"min\"..\"max"
					  : NULL;

	if (bad == NULL)
		return 0;
	errf(err, errlen, path, "\"%s\"", bad);
	return -1;
}

/* "100mbit", or autorate's bounds: {"min": .., "max": .., "start": ..}. */
static int
key_bandwidth(const json_t *v, const struct dir_key *k, struct dir_parse *d)
{
	struct shaper_autorate_config ar = { .enabled = true };
	const char *key;
	char sub[200];
	json_t *x;

	if (json_is_string(v) && strcmp(json_string_value(v), "auto") == 0) {
		errf(d->err, d->errlen, d->path, "\"auto\" needs its bounds: %s", AUTORATE_EXAMPLE);
		return -1;
	}
	if (!json_is_object(v)) {
		if (d->ar != NULL)
			d->ar->enabled = false;
		return key_rate(v, k, d);
	}
	if (d->ar == NULL) {
		errf(d->err, d->errlen, d->path,
		     "autorate bounds are set in the config file, not changed live");
		return -1;
	}
	autorate_params_default(&ar.tune, 0, 0);
	json_object_foreach ((json_t *)v, key, x) {
		uint64_t *out = strcmp(key, "min") == 0     ? &ar.min_rate
				: strcmp(key, "max") == 0   ? &ar.max_rate
				: strcmp(key, "start") == 0 ? &ar.start_rate
							    : NULL;
		const struct ar_key *ak = NULL;

		join_path(sub, sizeof(sub), d->path, key);
		for (size_t i = 0;
		     out == NULL && ak == NULL && i < sizeof(ar_keys) / sizeof(*ar_keys); i++)
			if (strcmp(key, ar_keys[i].name) == 0)
				ak = &ar_keys[i];
		if ((out == NULL && ak == NULL) || !shaper_config_key_known("autorate", key))
			return unknown_key("autorate", sub, "key", d->err, d->errlen);
		if (ak != NULL) {
			if (ar_tune_key(x, sub, ak, (uint64_t)k->hi, &ar.tune, d->err, d->errlen) !=
			    0)
				return -1;
			continue;
		}
		if (get_unit(x, sub, shaper_parse_rate, "rate", 1, (uint64_t)k->hi, out, d->err,
			     d->errlen) != 0)
			return -1;
	}
	if (ar.min_rate == 0 || ar.max_rate == 0) {
		errf(d->err, d->errlen, d->path, "autorate needs both \"min\" and \"max\": %s",
		     AUTORATE_EXAMPLE);
		return -1;
	}
	if (ar.min_rate > ar.max_rate) {
		join_path(sub, sizeof(sub), d->path, "min");
		errf(d->err, d->errlen, sub, "is above \"max\"");
		return -1;
	}
	if (ar.start_rate == 0)
		ar.start_rate = ar.max_rate;
	if (ar.start_rate < ar.min_rate || ar.start_rate > ar.max_rate) {
		join_path(sub, sizeof(sub), d->path, "start");
		errf(d->err, d->errlen, sub, "is outside [min, max]");
		return -1;
	}
	if (ar.tune.base_rate == 0)
		ar.tune.base_rate = ar.start_rate;
	if (ar_tune_check(&ar, d->path, d->err, d->errlen) != 0)
		return -1;
	*d->ar = ar;
	d->n->rate = ar.start_rate;
	return 0;
}

static int
key_overhead(const json_t *v, const struct dir_key *k, struct dir_parse *d)
{
	(void)k;
	return parse_overhead(v, d->path, d->n, d->err, d->errlen);
}

/* "auto" or how far the shaper may fall behind before it forgets. */
static int
key_lag_limit(const json_t *v, const struct dir_key *k, struct dir_parse *d)
{
	uint64_t u;

	(void)k;
	if (json_is_string(v) && strcmp(json_string_value(v), "auto") == 0) {
		d->n->lag_limit_ns = SCHED_LAG_AUTO;
		return 0;
	}
	if (json_is_string(v) && shaper_parse_time(json_string_value(v), &u, NULL, 0) != 0) {
		errf(d->err, d->errlen, d->path,
		     "\"%s\" is neither \"auto\" nor a time such as \"1ms\"", json_string_value(v));
		return -1;
	}
	return get_unit(v, d->path, shaper_parse_time, "time or \"auto\"", 0, SCHED_LAG_MAX_NS,
			&d->n->lag_limit_ns, d->err, d->errlen);
}

/* cake's and fq_codel's targets are separate fields. */
static int
key_target(const json_t *v, const struct dir_key *k, struct dir_parse *d)
{
	uint64_t u;

	(void)k;
	if (get_unit(v, d->path, shaper_parse_time, "time", 1000, 1000000000000ULL, &u, d->err,
		     d->errlen) != 0)
		return -1;
	if (d->n->discipline == SCHED_DISC_CAKE)
		d->n->target_us = (uint32_t)(u / 1000);
	else
		d->n->fqc_target_us = (uint32_t)(u / 1000);
	return 0;
}

static int
key_ack_filter(const json_t *v, const struct dir_key *k, struct dir_parse *d)
{
	if (json_is_boolean(v)) {
		d->n->ack_filter = json_is_true(v) ? SCHED_ACK_FILTER_ON : SCHED_ACK_FILTER_OFF;
		return 0;
	}
	return key_enum(v, k, d);
}

/* fifo: an integer is packets (0 = none), a size string bytes; fq_codel: packets. */
static int
key_limit(const json_t *v, const struct dir_key *k, struct dir_parse *d)
{
	struct sched_params *n = d->n;
	long long x;

	(void)k;
	if (n->discipline == SCHED_DISC_FIFO && json_is_string(v)) {
		if (get_unit(v, d->path, shaper_parse_size, "size", 64, 1ULL << 40,
			     &n->fifo_limit_bytes, d->err, d->errlen) != 0)
			return -1;
		n->fifo_limit_pkts = 0;
		return 0;
	}
	/* fifo: 0 = no packet limit (the mbuf pool still bounds it). */
	if (get_int(v, d->path, n->discipline == SCHED_DISC_FIFO ? 0 : 1, 1 << 24, &x, d->err,
		    d->errlen) != 0)
		return -1;
	if (n->discipline == SCHED_DISC_FIFO) {
		n->fifo_limit_pkts = (uint32_t)x;
		n->fifo_limit_bytes = 0;
	} else {
		n->fqc_limit = (uint32_t)x;
	}
	return 0;
}

static int
key_emulate(const json_t *v, const struct dir_key *k, struct dir_parse *d)
{
	(void)k;
	if (d->em == NULL) {
		errf(d->err, d->errlen, d->path, "cannot be changed here");
		return -1;
	}
	return parse_emulate(v, d->path, d->em, d->err, d->errlen);
}

/* Which disciplines a key applies to (bit per enum sched_discipline). */
#define D_FIFO (1u << SCHED_DISC_FIFO)
#define D_FQC  (1u << SCHED_DISC_FQ_CODEL)
#define D_CAKE (1u << SCHED_DISC_CAKE)
#define D_ALL  (D_FIFO | D_FQC | D_CAKE)

#define FIELD(f)                                                                                   \
	.off = offsetof(struct sched_params, f), .size = sizeof(((struct sched_params *)0)->f)
#define NAMES(t, w) .names = (t), .n_names = NELEM(t), .what = (w)

/* One key per entry, aligned (clang-format would put each field on its own line). */
/* clang-format off */
static const struct dir_key direction_keys[] = {
	{ .key = "discipline",   .disciplines = D_ALL,          .parse = NULL },
	{ .key = "bandwidth",    .disciplines = D_ALL,          .parse = key_bandwidth,
	  FIELD(rate), .lo = 0, .hi = 12500000000000LL },
	{ .key = "mtu",          .disciplines = D_ALL,          .parse = key_int,
	  FIELD(mtu), .lo = SHAPER_MTU_MIN, .hi = SHAPER_MTU_MAX },
	{ .key = "overhead",     .disciplines = D_ALL,          .parse = key_overhead },
	{ .key = "mpu",          .disciplines = D_ALL,          .parse = key_int,
	  FIELD(mpu), .lo = 0, .hi = 256 },
	{ .key = "atm",          .disciplines = D_ALL,          .parse = key_enum,
	  FIELD(framing), NAMES(framing_names, "framing") },
	{ .key = "seed",         .disciplines = D_ALL,          .parse = key_int,
	  FIELD(seed), .lo = 0, .hi = INT64_MAX },
	{ .key = "lag_limit",    .disciplines = D_ALL,          .parse = key_lag_limit },
	{ .key = "rtt",          .disciplines = D_CAKE,         .parse = NULL },
	{ .key = "target",       .disciplines = D_CAKE | D_FQC, .parse = key_target },
	{ .key = "diffserv",     .disciplines = D_CAKE,         .parse = key_enum,
	  FIELD(diffserv), NAMES(diffserv_names, "diffserv mode") },
	{ .key = "isolation",    .disciplines = D_CAKE,         .parse = key_enum,
	  FIELD(isolation), NAMES(isolation_names, "isolation mode") },
	{ .key = "wash",         .disciplines = D_CAKE,         .parse = key_bool, FIELD(wash) },
	{ .key = "ingress",      .disciplines = D_CAKE,         .parse = key_bool, FIELD(ingress) },
	/* Accepted as tc accepts it; a bridge has no conntrack to look in. */
	{ .key = "nat",          .disciplines = D_CAKE,         .parse = key_bool, FIELD(nat) },
	{ .key = "vlan_hosts",   .disciplines = D_CAKE,         .parse = key_bool, FIELD(vlan_hosts) },
	{ .key = "ecn",          .disciplines = D_CAKE | D_FQC, .parse = key_bool, FIELD(ecn) },
	{ .key = "ack_filter",   .disciplines = D_CAKE,         .parse = key_ack_filter,
	  FIELD(ack_filter), NAMES(ack_filter_names, "ACK filter mode") },
	{ .key = "l4s",          .disciplines = D_CAKE | D_FQC, .parse = key_bool, FIELD(l4s) },
	{ .key = "l4s_step",     .disciplines = D_CAKE | D_FQC, .parse = key_time_us,
	  FIELD(l4s_step_us), .lo = 1000, .hi = 1000000000LL },
	{ .key = "nqb",          .disciplines = D_CAKE,         .parse = key_bool, FIELD(nqb) },
	{ .key = "memlimit",     .disciplines = D_CAKE,         .parse = key_size,
	  FIELD(memlimit), .lo = 0, .hi = 1LL << 40 },
	{ .key = "limit",        .disciplines = D_FIFO | D_FQC, .parse = key_limit },
	{ .key = "flows",        .disciplines = D_FQC,          .parse = key_int,
	  FIELD(fqc_flows), .lo = 1, .hi = 65536 },
	{ .key = "quantum",      .disciplines = D_FQC,          .parse = key_int,
	  FIELD(fqc_quantum), .lo = 256, .hi = 1 << 20 },
	{ .key = "memory_limit", .disciplines = D_FQC,          .parse = key_size,
	  FIELD(fqc_memory_limit), .lo = 4096, .hi = 1LL << 40 },
	{ .key = "interval",     .disciplines = D_FQC,          .parse = key_time_us,
	  FIELD(fqc_interval_us), .lo = 1000, .hi = 1000000000000LL },
	{ .key = "ce_threshold", .disciplines = D_FQC,          .parse = key_time_us,
	  FIELD(fqc_ce_threshold_us), .lo = 0, .hi = 1000000000000LL },
	{ .key = "drop_batch",   .disciplines = D_FQC,          .parse = key_int,
	  FIELD(fqc_drop_batch), .lo = 1, .hi = 4096 },
	{ .key = "emulate",      .disciplines = D_ALL,          .parse = key_emulate },
};
/* clang-format on */

#undef FIELD
#undef NAMES

int
parse_direction(const json_t *obj, const char *path, struct sched_params *p,
		struct shaper_emulate_config *em, struct shaper_autorate_config *ar, char *err,
		size_t errlen)
{
	struct sched_params n = *p;
	struct dir_parse d = { .n = &n, .em = em, .ar = ar, .err = err, .errlen = errlen };
	const char *key;
	json_t *v;
	char sub[160];
	int e;

	if (expect_object(obj, path, err, errlen) != 0)
		return -1;
	/* The discipline decides which keys apply, so read it first. */
	v = json_object_get(obj, "discipline");
	if (v != NULL) {
		snprintf(sub, sizeof(sub), "%s.discipline", path);
		if (get_enum(v, sub, discipline_names, NELEM(discipline_names), &e, "discipline",
			     err, errlen) != 0)
			return -1;
		if ((enum sched_discipline)e != n.discipline) {
			/* A new discipline starts from its own defaults, keeping the link. */
			struct sched_params def;

			sched_params_default(&def, (enum sched_discipline)e);
			def.rate = n.rate;
			def.mtu = n.mtu;
			def.upstream = n.upstream;
			def.seed = n.seed;
			def.lag_limit_ns = n.lag_limit_ns;
			def.pkt_mem = n.pkt_mem;
			def.overhead = n.overhead;
			def.overhead_mode = n.overhead_mode;
			def.mpu = n.mpu;
			def.framing = n.framing;
			n = def;
		}
	}
	/* rtt implies a target; an explicit "target" wins whatever the key order. */
	v = json_object_get(obj, "rtt");
	if (v != NULL && n.discipline == SCHED_DISC_CAKE) {
		snprintf(sub, sizeof(sub), "%s.rtt", path);
		if (parse_rtt(v, sub, &n, err, errlen) != 0)
			return -1;
	}
	/*
	 * The rest in file order: overhead, mpu and atm apply as tc applies its
	 * words, left to right: an "mpu" after "overhead": "docsis" replaces the
	 * 64 docsis set, an "mpu" before it is replaced by it.
	 */
	json_object_foreach ((json_t *)obj, key, v) {
		const struct dir_key *k = NULL;

		join_path(sub, sizeof(sub), path, key);
		for (size_t i = 0; i < NELEM(direction_keys) && k == NULL; i++)
			if (strcmp(key, direction_keys[i].key) == 0)
				k = &direction_keys[i];
		if (k == NULL || !shaper_config_key_known("dir", key)) {
			errf(err, errlen, sub, "unknown key");
			return -1;
		}
		if (!(k->disciplines & (1u << n.discipline))) {
			errf(err, errlen, sub, "does not apply to discipline \"%s\"",
			     shaper_discipline_name(n.discipline));
			return -1;
		}
		d.path = sub;
		if (k->parse != NULL && k->parse(v, k, &d) != 0)
			return -1;
	}
	*p = n;
	return 0;
}

int
shaper_config_parse_direction(const void *jobj, const char *path, struct sched_params *p, char *err,
			      size_t errlen)
{
	return parse_direction(jobj, path, p, NULL, NULL, err, errlen);
}

int
shaper_config_parse_direction_live(const void *jobj, const char *path, struct sched_params *p,
				   struct shaper_emulate_config *em, char *err, size_t errlen)
{
	return parse_direction(jobj, path, p, em, NULL, err, errlen);
}

void *
shaper_config_emulate_to_json(const struct shaper_emulate_config *em)
{
	char buf[64];
	json_t *o = json_object();

	shaper_format_time(em->delay_ns, buf, sizeof(buf));
	json_object_set_new(o, "delay", json_string(buf));
	shaper_format_time(em->jitter_ns, buf, sizeof(buf));
	json_object_set_new(o, "jitter", json_string(buf));
	json_object_set_new(o, "loss", json_real(em->loss_ppm / 10000.));
	json_object_set_new(o, "seed", json_integer((json_int_t)em->seed));
	json_object_set_new(o, "limit", json_integer(em->limit));
	return o;
}

void *
shaper_config_direction_to_json(const struct sched_params *p)
{
	char buf[64];
	json_t *o = json_object();

	json_object_set_new(o, "discipline", json_string(shaper_discipline_name(p->discipline)));
	shaper_format_rate(p->rate, buf, sizeof(buf));
	json_object_set_new(o, "bandwidth", json_string(buf));
	json_object_set_new(o, "mtu", json_integer(p->mtu));
	if (p->overhead_mode) {
		json_object_set_new(o, "overhead", json_integer(p->overhead));
	} else if (p->overhead != 0) {
		snprintf(buf, sizeof(buf), "raw overhead %d", (int)p->overhead);
		json_object_set_new(o, "overhead", json_string(buf));
	} else {
		json_object_set_new(o, "overhead", json_string("raw"));
	}
	json_object_set_new(o, "mpu", json_integer(p->mpu));
	json_object_set_new(o, "atm",
			    json_string(name_of(framing_names, NELEM(framing_names), p->framing)));
	if (p->lag_limit_ns == SCHED_LAG_AUTO) {
		json_object_set_new(o, "lag_limit", json_string("auto"));
	} else {
		shaper_format_time(p->lag_limit_ns, buf, sizeof(buf));
		json_object_set_new(o, "lag_limit", json_string(buf));
	}
	switch (p->discipline) {
	case SCHED_DISC_CAKE:
		shaper_format_time((uint64_t)p->rtt_us * 1000, buf, sizeof(buf));
		json_object_set_new(o, "rtt", json_string(buf));
		shaper_format_time((uint64_t)p->target_us * 1000, buf, sizeof(buf));
		json_object_set_new(o, "target", json_string(buf));
		json_object_set_new(o, "diffserv", json_string(shaper_diffserv_name(p->diffserv)));
		json_object_set_new(o, "isolation",
				    json_string(shaper_isolation_name(p->isolation)));
		json_object_set_new(o, "wash", json_boolean(p->wash));
		json_object_set_new(o, "ingress", json_boolean(p->ingress));
		json_object_set_new(o, "nat", json_boolean(p->nat));
		json_object_set_new(o, "vlan_hosts", json_boolean(p->vlan_hosts));
		json_object_set_new(o, "ecn", json_boolean(p->ecn));
		json_object_set_new(o, "ack_filter",
				    json_string(name_of(ack_filter_names, NELEM(ack_filter_names),
							p->ack_filter)));
		json_object_set_new(o, "l4s", json_boolean(p->l4s));
		shaper_format_time((uint64_t)p->l4s_step_us * 1000, buf, sizeof(buf));
		json_object_set_new(o, "l4s_step", json_string(buf));
		json_object_set_new(o, "nqb", json_boolean(p->nqb));
		snprintf(buf, sizeof(buf), "%llub", (unsigned long long)p->memlimit);
		json_object_set_new(o, "memlimit", json_string(buf));
		break;
	case SCHED_DISC_FQ_CODEL:
		json_object_set_new(o, "limit", json_integer(p->fqc_limit));
		json_object_set_new(o, "flows", json_integer(p->fqc_flows));
		json_object_set_new(o, "quantum", json_integer(p->fqc_quantum));
		snprintf(buf, sizeof(buf), "%llub", (unsigned long long)p->fqc_memory_limit);
		json_object_set_new(o, "memory_limit", json_string(buf));
		shaper_format_time((uint64_t)p->fqc_target_us * 1000, buf, sizeof(buf));
		json_object_set_new(o, "target", json_string(buf));
		shaper_format_time((uint64_t)p->fqc_interval_us * 1000, buf, sizeof(buf));
		json_object_set_new(o, "interval", json_string(buf));
		json_object_set_new(o, "ecn", json_boolean(p->ecn));
		shaper_format_time((uint64_t)p->fqc_ce_threshold_us * 1000, buf, sizeof(buf));
		json_object_set_new(o, "ce_threshold", json_string(buf));
		json_object_set_new(o, "drop_batch", json_integer(p->fqc_drop_batch));
		json_object_set_new(o, "l4s", json_boolean(p->l4s));
		shaper_format_time((uint64_t)p->l4s_step_us * 1000, buf, sizeof(buf));
		json_object_set_new(o, "l4s_step", json_string(buf));
		break;
	case SCHED_DISC_FIFO:
		if (p->fifo_limit_bytes != 0) {
			snprintf(buf, sizeof(buf), "%llub",
				 (unsigned long long)p->fifo_limit_bytes);
			json_object_set_new(o, "limit", json_string(buf));
		} else {
			json_object_set_new(o, "limit", json_integer(p->fifo_limit_pkts));
		}
		break;
	}
	return o;
}
