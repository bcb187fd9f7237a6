/*
 * tc-style unit parsing. The suffix tables follow iproute2's: rate suffixes
 * are decimal (kbit = 1000 bit/s) with binary "ibit" forms, sizes use 1024.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shaper/units.h"

struct unit {
	const char *suffix;
	double scale;
};

/* Multiplier to bits per second. */
static const struct unit rate_units[] = {
	{ "bit", 1. },
	{ "kbit", 1e3 },
	{ "mbit", 1e6 },
	{ "gbit", 1e9 },
	{ "tbit", 1e12 },
	{ "kibit", 1024. },
	{ "mibit", 1048576. },
	{ "gibit", 1073741824. },
	{ "tibit", 1099511627776. },
	{ "bps", 8. },
	{ "kbps", 8e3 },
	{ "mbps", 8e6 },
	{ "gbps", 8e9 },
	{ "tbps", 8e12 },
	{ "kibps", 8. * 1024 },
	{ "mibps", 8. * 1048576 },
	{ "gibps", 8. * 1073741824. },
};

static const struct unit time_units[] = {
	{ "s", 1e9 },     { "sec", 1e9 },   { "secs", 1e9 }, { "ms", 1e6 },
	{ "msec", 1e6 },  { "msecs", 1e6 }, { "us", 1e3 },   { "usec", 1e3 },
	{ "usecs", 1e3 }, { "ns", 1. },     { "nsec", 1. },  { "nsecs", 1. },
};

static const struct unit size_units[] = {
	{ "b", 1. },         { "k", 1024. },         { "kb", 1024. },       { "m", 1048576. },
	{ "mb", 1048576. },  { "g", 1073741824. },   { "gb", 1073741824. }, { "kbit", 128. },
	{ "mbit", 131072. }, { "gbit", 134217728. },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void
set_err(char *err, size_t errlen, const char *fmt, const char *s, const char *hint)
{
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, fmt, s, hint);
}

/*
 * Split "12.5mbit" into 12.5 and "mbit". Returns -1 if there is no leading
 * number, else the scale of the matching unit or 0 if the suffix is unknown.
 */
static int
split_number(const char *s, double *val, const char **suffix)
{
	char *end;

	if (s == NULL || *s == '\0' || isspace((unsigned char)*s) || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	*val = strtod(s, &end);
	if (end == s || errno != 0 || !isfinite(*val) || *val < 0)
		return -1;
	/* Hex floats and exponents are legal strtod input but not tc syntax. */
	for (const char *c = s; c < end; c++)
		if (!isdigit((unsigned char)*c) && *c != '.')
			return -1;
	*suffix = end;
	return 0;
}

static const struct unit *
find_unit(const struct unit *t, size_t n, const char *suffix)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(t[i].suffix, suffix) == 0)
			return &t[i];
	return NULL;
}

/*
 * tc reads "mbps" as megabytes per second, while people who write it
 * usually mean megabits: accept the byte forms only with a capital B.
 */
static int
ambiguous_bps(const char *suffix)
{
	size_t n = strlen(suffix);

	return n >= 3 && strcasecmp(suffix + n - 3, "bps") == 0 && suffix[n - 3] != 'B';
}

int
shaper_parse_rate(const char *s, uint64_t *bytes_per_sec, char *err, size_t errlen)
{
	const struct unit *u;
	const char *suffix;
	double v, bits;

	if (s != NULL && strcasecmp(s, "unlimited") == 0) {
		*bytes_per_sec = 0;
		return 0;
	}
	if (split_number(s, &v, &suffix) != 0) {
		set_err(err, errlen, "\"%s\" is not a rate (%s)", s ? s : "",
			"write a number and a unit, e.g. \"100mbit\" or \"unlimited\"");
		return -EINVAL;
	}
	if (*suffix == '\0') {
		set_err(err, errlen, "\"%s\" has no unit (%s)", s,
			"a bare number is ambiguous: write e.g. \"100mbit\" or \"500kbit\"");
		return -EINVAL;
	}
	u = find_unit(rate_units, NELEM(rate_units), suffix);
	/* "mbps" means megabytes per second to tc; people usually mean mbit. */
	if (u == NULL || ambiguous_bps(suffix)) {
		char hint[96];
		int ndig = (int)(suffix - s);

		if (tolower((unsigned char)suffix[0]) == 'k' ||
		    tolower((unsigned char)suffix[0]) == 'm' ||
		    tolower((unsigned char)suffix[0]) == 'g' ||
		    tolower((unsigned char)suffix[0]) == 't')
			snprintf(hint, sizeof(hint), "try \"%.*s%cbit\"", ndig, s,
				 tolower((unsigned char)suffix[0]));
		else
			snprintf(hint, sizeof(hint),
				 "units: bit kbit mbit gbit tbit, or Bps KBps MBps GBps");
		set_err(err, errlen, "\"%s\" is not a rate (%s)", s, hint);
		return -EINVAL;
	}
	bits = v * u->scale;
	/* llround() and the u64 result both stop short of 2^63. */
	if (bits / 8. >= 9.2e18) {
		set_err(err, errlen, "\"%s\" is too large a rate%s", s, "");
		return -EINVAL;
	}
	/* Below 1kbit a rate would round to (almost) nothing, and 0 means unlimited. */
	if (bits > 0 && bits < 1000.) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "below the minimum of 1kbit");
		return -EINVAL;
	}
	/* Round down, so a rate never exceeds what was asked for. */
	*bytes_per_sec = (uint64_t)floor(bits / 8. + 1e-9);
	return 0;
}

/*
 * Times and sizes parse the same way (a number, then a unit from a table,
 * rounded to the nearest whole unit of the result); only the table and the
 * words of the errors differ.
 */
struct quantity {
	const char *noun;         /* "time": "\"x\" is not a time (...)" */
	const struct unit *units; /* multiplier to ns or bytes */
	size_t n_units;
	const char *how;       /* hint when there is no leading number */
	const char *bare;      /* hint for a number without a unit */
	const char *unit_list; /* hint for an unknown unit */
	const char *too_big;   /* "\"x\" is too long a time" */
};

static const struct quantity time_quantity = {
	.noun = "time",
	.units = time_units,
	.n_units = NELEM(time_units),
	.how = "write a number and a unit, e.g. \"30ms\" or \"100us\"",
	.bare = "a bare number is ambiguous: write e.g. \"30ms\" or \"100us\"",
	.unit_list = "units: s ms us ns",
	.too_big = "too long a time",
};

static const struct quantity size_quantity = {
	.noun = "size",
	.units = size_units,
	.n_units = NELEM(size_units),
	.how = "write a number and a unit, e.g. \"32mb\" or \"1500b\"",
	.bare = "write e.g. \"1500b\", \"64kb\" or \"32mb\"",
	.unit_list = "units: b kb mb gb",
	.too_big = "too large a size",
};

static int
parse_quantity(const struct quantity *q, const char *s, uint64_t *out, char *err, size_t errlen)
{
	const struct unit *u;
	const char *suffix;
	double v;

	if (split_number(s, &v, &suffix) != 0) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "\"%s\" is not a %s (%s)", s ? s : "", q->noun,
				 q->how);
		return -EINVAL;
	}
	if (*suffix == '\0') {
		set_err(err, errlen, "\"%s\" has no unit (%s)", s, q->bare);
		return -EINVAL;
	}
	u = find_unit(q->units, q->n_units, suffix);
	if (u == NULL) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "\"%s\" is not a %s (%s)", s, q->noun, q->unit_list);
		return -EINVAL;
	}
	if (v * u->scale >= 9.2e18) {
		set_err(err, errlen, "\"%s\" is %s", s, q->too_big);
		return -EINVAL;
	}
	*out = (uint64_t)llround(v * u->scale);
	return 0;
}

int
shaper_parse_time(const char *s, uint64_t *ns, char *err, size_t errlen)
{
	return parse_quantity(&time_quantity, s, ns, err, errlen);
}

int
shaper_parse_size(const char *s, uint64_t *bytes, char *err, size_t errlen)
{
	return parse_quantity(&size_quantity, s, bytes, err, errlen);
}

/* Exact forms only, so what is printed parses back to the same value. */
void
shaper_format_rate(uint64_t bytes_per_sec, char *buf, size_t len)
{
	uint64_t bits = bytes_per_sec * 8;

	if (bytes_per_sec == 0)
		snprintf(buf, len, "unlimited");
	else if (bits % 1000000000ULL == 0)
		snprintf(buf, len, "%lluGbit", (unsigned long long)(bits / 1000000000ULL));
	else if (bits % 1000000ULL == 0)
		snprintf(buf, len, "%lluMbit", (unsigned long long)(bits / 1000000ULL));
	else if (bits % 1000ULL == 0)
		snprintf(buf, len, "%lluKbit", (unsigned long long)(bits / 1000ULL));
	else
		snprintf(buf, len, "%llubit", (unsigned long long)bits);
}

/* "%llu.%03llu" without trailing zeros: exact, and tc-like ("1.5ms"). */
static void
format_decimal(char *buf, size_t len, uint64_t whole, uint64_t milli, const char *unit)
{
	char frac[8];
	int n;

	if (milli == 0) {
		snprintf(buf, len, "%llu%s", (unsigned long long)whole, unit);
		return;
	}
	n = snprintf(frac, sizeof(frac), "%03llu", (unsigned long long)milli);
	while (n > 0 && frac[n - 1] == '0')
		frac[--n] = '\0';
	snprintf(buf, len, "%llu.%s%s", (unsigned long long)whole, frac, unit);
}

void
shaper_format_time(uint64_t ns, char *buf, size_t len)
{
	if (ns != 0 && ns % 1000000000ULL == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(ns / 1000000000ULL));
	else if (ns >= 1000000ULL && ns % 1000ULL == 0)
		format_decimal(buf, len, ns / 1000000ULL, (ns / 1000ULL) % 1000ULL, "ms");
	else if (ns >= 1000ULL)
		format_decimal(buf, len, ns / 1000ULL, ns % 1000ULL, "us");
	else
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
}
