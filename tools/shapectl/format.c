/*
 * Numbers as tc prints them (iproute2's print_rate, sprint_time and
 * sprint_size), so a cake user reads shapectl's tables at a glance, and a
 * small aligned-table helper.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shaper/metrics.h"
#include "shapectl.h"

/* tc: the largest decimal unit that keeps the number whole (6.25Mbit is 6250Kbit). */
void
sc_fmt_rate(uint64_t bytes_per_sec, char *buf, size_t len)
{
	static const char *const units[] = { "", "K", "M", "G", "T" };
	uint64_t rate = bytes_per_sec * 8;
	unsigned int i;

	if (bytes_per_sec == 0) {
		snprintf(buf, len, "unlimited");
		return;
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]) - 1; i++) {
		if (rate < 1000)
			break;
		if (rate % 1000 != 0 && rate < 1000 * 1000)
			break;
		rate /= 1000;
	}
	snprintf(buf, len, "%llu%sbit", (unsigned long long)rate, units[i]);
}

/* Measured rates are not round: three significant digits. */
void
sc_fmt_bits(double bits, char *buf, size_t len)
{
	static const char *const units[] = { "", "K", "M", "G", "T" };
	unsigned int i = 0;

	while (bits >= 1000 && i < sizeof(units) / sizeof(units[0]) - 1) {
		bits /= 1000;
		i++;
	}
	snprintf(buf, len, "%.3g%sbit", bits, units[i]);
}

void
sc_fmt_time_us(uint64_t us, char *buf, size_t len)
{
	if (us >= 1000000)
		snprintf(buf, len, "%.1fs", us / 1e6);
	else if (us >= 1000)
		snprintf(buf, len, "%.1fms", us / 1e3);
	else
		snprintf(buf, len, "%lluus", (unsigned long long)us);
}

void
sc_fmt_size(uint64_t sz, char *buf, size_t len)
{
	double d = (double)sz;

	if (sz >= 1024 * 1024 && fabs(1024 * 1024 * rint(d / (1024 * 1024)) - d) < 1024)
		snprintf(buf, len, "%gMb", rint(d / (1024 * 1024)));
	else if (sz >= 1024 && fabs(1024 * rint(d / 1024) - d) < 16)
		snprintf(buf, len, "%gKb", rint(d / 1024));
	else
		snprintf(buf, len, "%llub", (unsigned long long)sz);
}

long long
sc_int(const json_t *o, const char *key)
{
	return ctl_json_int(o, key);
}

const char *
sc_str(const json_t *o, const char *key)
{
	return ctl_json_str(o, key);
}

void
sc_table_init(struct sc_table *t, unsigned int ncols)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols < SC_TABLE_MAX_COLS ? ncols : SC_TABLE_MAX_COLS;
	t->left[0] = true; /* row labels */
}

void
sc_table_cell(struct sc_table *t, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (t->ncells == t->cap) {
		unsigned int cap = t->cap ? t->cap * 2 : t->ncols * 8;
		char **p = realloc(t->cells, cap * sizeof(*p));

		if (p == NULL)
			return;
		t->cells = p;
		t->cap = cap;
	}
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	t->cells[t->ncells++] = s;
}

void
sc_table_print(struct sc_table *t, FILE *f, const char *indent)
{
	unsigned int width[SC_TABLE_MAX_COLS] = { 0 };

	for (unsigned int i = 0; i < t->ncells; i++) {
		size_t w = t->cells[i] != NULL ? strlen(t->cells[i]) : 0;

		if (w > width[i % t->ncols])
			width[i % t->ncols] = (unsigned int)w;
	}
	for (unsigned int i = 0; i < t->ncells; i++) {
		unsigned int col = i % t->ncols;
		const char *s = t->cells[i] != NULL ? t->cells[i] : "";
		bool last = col == t->ncols - 1 || i == t->ncells - 1;

		if (col == 0)
			fputs(indent, f);
		else
			fputs("  ", f);
		if (t->left[col])
			fprintf(f, "%-*s", last ? 0 : (int)width[col], s);
		else
			fprintf(f, "%*s", (int)width[col], s);
		if (last)
			fputc('\n', f);
	}
}

void
sc_table_free(struct sc_table *t)
{
	for (unsigned int i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}
