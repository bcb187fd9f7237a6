/*
 * LibreQoS's ShapedDevices.csv: one row per device, rows with the same
 * Circuit ID forming one circuit (one subscriber). A real CSV reader:
 * quoted fields may hold commas, doubled quotes and line breaks; lines
 * starting with '#' outside quotes are comments.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shaper/sched.h"
#include "subscriber/sub_impl.h"

/*
 * The columns shaperd knows, found by name in the header row (any order,
 * any case): LibreQoS 1.4 has the first thirteen but the IDs, 1.5 adds sqm
 * last, 2.x the node IDs after Parent Node. Columns it does not know are
 * skipped and named in not_applied.
 */
enum sub_col {
	COL_CIRCUIT_ID,
	COL_CIRCUIT_NAME,
	COL_DEVICE_ID,
	COL_DEVICE_NAME,
	COL_PARENT,
	COL_PARENT_ID,
	COL_ANCHOR_ID,
	COL_MAC,
	COL_IPV4,
	COL_IPV6,
	COL_DOWN_MIN,
	COL_UP_MIN,
	COL_DOWN_MAX,
	COL_UP_MAX,
	COL_COMMENT,
	COL_SQM,
	COL_COUNT,
};

static const char *const sub_col_name[COL_COUNT] = {
	"Circuit ID",
	"Circuit Name",
	"Device ID",
	"Device Name",
	"Parent Node",
	"Parent Node ID",
	"Anchor Node ID",
	"MAC",
	"IPv4",
	"IPv6",
	"Download Min Mbps",
	"Upload Min Mbps",
	"Download Max Mbps",
	"Upload Max Mbps",
	"Comment",
	"sqm",
};

/* A file without one of these is not a ShapedDevices.csv shaperd can use. */
static const enum sub_col sub_col_required[] = {
	COL_CIRCUIT_ID, COL_DEVICE_ID, COL_IPV4,     COL_IPV6,
	COL_DOWN_MIN,   COL_UP_MIN,    COL_DOWN_MAX, COL_UP_MAX,
};

/* The most fields a row may have (a Comment with unquoted commas spreads over several). */
#define SUB_CSV_MAX_FIELDS 64

/* Where each known column is in the header (-1: absent), and how many columns it has. */
struct sub_csv_cols {
	int pos[COL_COUNT];
	int n;
};

struct sub_csv {
	char *p, *end;
	uint32_t line; /* line of the next character */
};

/*
 * The next record's fields, unquoted in place and NUL-terminated; *line is
 * where it starts. Returns the field count, 0 at the end of the file, or
 * -EINVAL (an unterminated quote, text after a closing quote). Fields past
 * max are counted, not kept, except the last one (*last).
 */
static int
sub_csv_record(struct sub_csv *c, char **fields, int max, uint32_t *line, char **last)
{
	int n = 0;

	/* Blank lines and comments. */
	for (;;) {
		char *q = c->p;

		while (q < c->end && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q < c->end && *q == '\n') {
			c->p = q + 1;
			c->line++;
			continue;
		}
		if (q < c->end && *q == '#') {
			while (q < c->end && *q != '\n')
				q++;
			c->p = q < c->end ? q + 1 : q;
			c->line++;
			continue;
		}
		break;
	}
	if (c->p >= c->end)
		return 0;
	*line = c->line;
	for (;;) {
		char *out, *start;

		while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
			c->p++;
		start = out = c->p;
		if (c->p < c->end && *c->p == '"') {
			c->p++;
			for (;;) {
				if (c->p >= c->end)
					return -EINVAL;
				if (*c->p == '"') {
					if (c->p + 1 < c->end && c->p[1] == '"') {
						*out++ = '"';
						c->p += 2;
						continue;
					}
					c->p++;
					break;
				}
				if (*c->p == '\n')
					c->line++;
				*out++ = *c->p++;
			}
			while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
				c->p++;
			if (c->p < c->end && *c->p != ',' && *c->p != '\n')
				return -EINVAL;
		} else {
			while (c->p < c->end && *c->p != ',' && *c->p != '\n') {
				if (*c->p == '"')
					return -EINVAL;
				*out++ = *c->p++;
			}
			while (out > start &&
			       (out[-1] == ' ' || out[-1] == '\t' || out[-1] == '\r'))
				out--;
		}
		/* The separator is overwritten only after the field has been copied. */
		{
			char sep = c->p < c->end ? *c->p : '\n';

			if (c->p < c->end)
				c->p++;
			*out = '\0';
			if (n < max)
				fields[n] = start;
			*last = start;
			n++;
			if (sep == '\n') {
				c->line++;
				return n;
			}
			if (c->p >= c->end) { /* "a,b," at the end of the file: one more, empty */
				if (n < max)
					fields[n] = c->p - 1;
				*last = c->p - 1;
				*(c->p - 1) = '\0';
				return n + 1;
			}
		}
	}
}

/* "100", "2.5", "0.25": Mbit/s with up to 6 decimals, exactly in bit/s. */
static int
sub_parse_mbps(const char *s, uint64_t *bps)
{
	uint64_t whole = 0, frac = 0, scale = 1000000;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	while (*p >= '0' && *p <= '9') {
		whole = whole * 10 + (uint64_t)(*p++ - '0');
		if (whole > 10000000) /* 10 Tbit/s */
			return -EINVAL;
	}
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		while (*p >= '0' && *p <= '9') {
			if (scale == 1)
				return -EINVAL; /* finer than 1 bit/s */
			scale /= 10;
			frac += (uint64_t)(*p++ - '0') * scale;
		}
	}
	if (*p != '\0')
		return -EINVAL;
	*bps = whole * 1000000 + frac;
	return 0;
}

static void
sub_note(struct sub_set *set, const char *what)
{
	size_t used = strlen(set->not_applied);

	if (used + 1 >= sizeof(set->not_applied))
		return;
	snprintf(set->not_applied + used, sizeof(set->not_applied) - used, "%s%s",
		 used != 0 ? "; " : "", what);
}

static int
sub_csv_header(struct sub_set *set, char **f, int n, const char *file, uint32_t line,
	       struct sub_csv_cols *cols, char *err, size_t errlen)
{
	char unused[200] = "";
	int i, c;

	for (c = 0; c < COL_COUNT; c++)
		cols->pos[c] = -1;
	cols->n = n;
	for (i = 0; i < n; i++) {
		for (c = 0; c < COL_COUNT; c++)
			if (strcasecmp(f[i], sub_col_name[c]) == 0)
				break;
		if (c == COL_COUNT) {
			size_t u = strlen(unused);

			if (u + 1 < sizeof(unused))
				snprintf(unused + u, sizeof(unused) - u, "%s\"%s\"", u ? ", " : "",
					 f[i]);
			continue;
		}
		if (cols->pos[c] >= 0) {
			sub_errf(err, errlen, "%s:%u: columns %d and %d are both \"%s\"", file,
				 line, cols->pos[c] + 1, i + 1, sub_col_name[c]);
			return -EINVAL;
		}
		cols->pos[c] = i;
	}
	for (i = 0; i < (int)(sizeof(sub_col_required) / sizeof(sub_col_required[0])); i++)
		if (cols->pos[sub_col_required[i]] < 0) {
			sub_errf(err, errlen,
				 "%s:%u: no \"%s\" column (the header names the columns: Circuit "
				 "ID, Circuit Name, Device ID, Device Name, Parent Node, MAC, IPv4, "
				 "IPv6, Download Min Mbps, Upload Min Mbps, Download Max Mbps, Upload "
				 "Max Mbps, Comment, and optionally sqm and the node IDs)",
				 file, line, sub_col_name[sub_col_required[i]]);
			return -EINVAL;
		}
	if (unused[0] != '\0') {
		char note[256];

		snprintf(note, sizeof(note), "%s: columns not used: %s", file, unused);
		sub_note(set, note);
	}
	return 0;
}

/*
 * One row's cells by column. A row may have more fields than the header
 * only where a Comment holds unquoted commas (LibreQoS's own example has
 * such rows): the fields after the Comment are the last ones. Absent
 * columns read as empty.
 */
static int
sub_csv_cells(const struct sub_csv_cols *cols, char **fields, int n, char *empty, char **cell)
{
	int extra = n - cols->n, comment = cols->pos[COL_COMMENT];

	if (n > SUB_CSV_MAX_FIELDS || extra < 0 || (extra > 0 && comment < 0))
		return -EINVAL;
	for (int c = 0; c < COL_COUNT; c++) {
		int p = cols->pos[c];

		if (p >= 0 && comment >= 0 && p > comment)
			p += extra;
		cell[c] = p >= 0 ? fields[p] : empty;
	}
	return 0;
}

/* The comma-separated addresses of one IPv4 or IPv6 cell. */
static int
sub_csv_addresses(struct sub_set *set, uint32_t s, char *cell, int family, const char *file,
		  uint32_t line, const char *col, char *err, size_t errlen)
{
	char *save = NULL, *tok;
	char why[160];

	for (tok = strtok_r(cell, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		struct sub_prefix p;
		uint32_t idx;
		char *e;

		while (*tok == ' ' || *tok == '\t')
			tok++;
		e = tok + strlen(tok);
		while (e > tok && (e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		if (*tok == '\0')
			continue;
		if (sub_prefix_parse(tok, &p, why, sizeof(why)) != 0) {
			sub_errf(err, errlen, "%s:%u: %s: %s", file, line, col, why);
			return -EINVAL;
		}
		if (p.family != family) {
			sub_errf(err, errlen, "%s:%u: %s: \"%s\" is an IPv%d address", file, line,
				 col, tok, p.family);
			return -EINVAL;
		}
		if (sub_set_add_prefix(set, &idx) != 0) {
			sub_errf(err, errlen, "%s:%u: too many addresses", file, line);
			return -ENOMEM;
		}
		p.sub = s;
		set->prefixes[idx] = p;
		set->subs[s].nprefixes++;
	}
	return 0;
}

static int
sub_csv_rates(char **f, const char *file, uint32_t line, struct sub_plan plan[SUB_DIRS], char *err,
	      size_t errlen)
{
	static const int col[4] = { COL_DOWN_MIN, COL_UP_MIN, COL_DOWN_MAX, COL_UP_MAX };
	uint64_t v[4];
	int i;

	for (i = 0; i < 4; i++)
		if (sub_parse_mbps(f[col[i]], &v[i]) != 0) {
			sub_errf(err, errlen,
				 "%s:%u: %s: \"%s\" is not a rate in Mbit/s (such as 100 "
				 "or 2.5)",
				 file, line, sub_col_name[col[i]], f[col[i]]);
			return -EINVAL;
		}
	plan[SUB_DOWN].min = v[0];
	plan[SUB_UP].min = v[1];
	plan[SUB_DOWN].max = v[2];
	plan[SUB_UP].max = v[3];
	return 0;
}

/*
 * LibreQoS 2.x's sqm may carry options after each side's discipline
 * ("cake diffserv4/fq_codel"): cut from the cell, leaving what
 * sub_parse_sqm checks, and said per side in opt (SUB_SQM_OPT_*, or 1 + the
 * diffserv mode when that keyword is all a side has). A cell without a
 * slash is both sides.
 */
static void
sub_csv_sqm_options(char *cell, uint8_t opt[SUB_DIRS])
{
	static const char *const modes[] = {
		[SCHED_DIFFSERV3] = "diffserv3",   [SCHED_DIFFSERV4] = "diffserv4",
		[SCHED_DIFFSERV8] = "diffserv8",   [SCHED_BESTEFFORT] = "besteffort",
		[SCHED_PRECEDENCE] = "precedence",
	};
	char *out = cell, *p = cell;
	int side = 0;

	opt[SUB_DOWN] = opt[SUB_UP] = SUB_SQM_OPT_NONE;
	while (*p != '\0' && side < SUB_DIRS) {
		/* One side: its first word, then its options up to the slash. */
		while (*p == ' ' || *p == '\t')
			p++;
		while (*p != '\0' && *p != '/' && *p != ' ' && *p != '\t')
			*out++ = *p++;
		while (*p != '\0' && *p != '/') {
			const char *w;
			size_t n;
			uint8_t o = SUB_SQM_OPT_OTHER;

			while (*p == ' ' || *p == '\t')
				p++;
			w = p;
			while (*p != '\0' && *p != '/' && *p != ' ' && *p != '\t')
				p++;
			n = (size_t)(p - w);
			if (n == 0)
				continue;
			for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
				if (strlen(modes[m]) == n && strncasecmp(w, modes[m], n) == 0)
					o = (uint8_t)(1 + m);
			/* One diffserv keyword is kept; a second word of any kind is "other". */
			opt[side] = opt[side] == SUB_SQM_OPT_NONE ? o : SUB_SQM_OPT_OTHER;
		}
		if (*p == '/') {
			*out++ = *p++;
			side++;
		}
	}
	*out = '\0';
	if (side == 0)
		opt[SUB_UP] = opt[SUB_DOWN];
}

static int
sub_csv_row(struct sub_set *set, char **f, const char *file, uint32_t line,
	    struct sub_names *circuits, struct sub_names *devices, struct sub_names *nodes,
	    const struct sub_names *ids, char *err, size_t errlen)
{
	struct sub_plan plan[SUB_DIRS];
	uint8_t sqm[SUB_DIRS] = { SUB_SQM_DEFAULT, SUB_SQM_DEFAULT }, sqm_opt[SUB_DIRS];
	uint32_t node = SUB_ROOT, s, other;
	struct sub_subscriber *sub;
	int rc;

	if (f[COL_CIRCUIT_ID][0] == '\0' || strlen(f[COL_CIRCUIT_ID]) >= SUB_ID_LEN) {
		sub_errf(err, errlen, "%s:%u: Circuit ID must have 1..%u characters", file, line,
			 SUB_ID_LEN - 1);
		return -EINVAL;
	}
	if (f[COL_DEVICE_ID][0] == '\0' || strlen(f[COL_DEVICE_ID]) >= SUB_ID_LEN) {
		sub_errf(err, errlen, "%s:%u: Device ID must have 1..%u characters", file, line,
			 SUB_ID_LEN - 1);
		return -EINVAL;
	}
	other = sub_names_get(devices, f[COL_DEVICE_ID]);
	if (other != SUB_NONE) {
		sub_errf(err, errlen, "%s:%u: duplicate Device ID \"%s\" (also on line %u)", file,
			 line, f[COL_DEVICE_ID], other);
		return -EINVAL;
	}
	if (sub_names_put(devices, f[COL_DEVICE_ID], line) != 0)
		goto nomem;
	if (f[COL_PARENT][0] != '\0') {
		node = sub_names_get(nodes, f[COL_PARENT]);
		if (node == SUB_NONE) {
			sub_errf(err, errlen,
				 "%s:%u: circuit \"%s\": unknown parent node \"%s\" (not in "
				 "network.json)",
				 file, line, f[COL_CIRCUIT_ID], f[COL_PARENT]);
			return -EINVAL;
		}
	}
	/* Parent Node ID names the node where network.json's nodes have ids. */
	if (f[COL_PARENT_ID][0] != '\0' && ids->n != 0) {
		uint32_t by_id = sub_names_get(ids, f[COL_PARENT_ID]);

		if (by_id == SUB_NONE) {
			sub_errf(err, errlen,
				 "%s:%u: circuit \"%s\": unknown Parent Node ID \"%s\" (no node of "
				 "network.json has that id)",
				 file, line, f[COL_CIRCUIT_ID], f[COL_PARENT_ID]);
			return -EINVAL;
		}
		if (f[COL_PARENT][0] != '\0' && by_id != node) {
			sub_errf(err, errlen,
				 "%s:%u: circuit \"%s\": Parent Node \"%s\" and Parent Node ID "
				 "\"%s\" (node \"%s\") name different nodes",
				 file, line, f[COL_CIRCUIT_ID], f[COL_PARENT], f[COL_PARENT_ID],
				 set->nodes[by_id].name);
			return -EINVAL;
		}
		node = by_id;
	}
	rc = sub_csv_rates(f, file, line, plan, err, errlen);
	if (rc != 0)
		return rc;
	/* Whether shaperd can honour it is sub_config_load's to say (it has the CAKE). */
	sub_csv_sqm_options(f[COL_SQM], sqm_opt);
	if (sub_parse_sqm(f[COL_SQM], sqm) != 0) {
		sub_errf(err, errlen,
			 "%s:%u: sqm: \"%s\" is not cake, fq_codel, none or a down/up pair of them",
			 file, line, f[COL_SQM]);
		return -EINVAL;
	}
	s = sub_names_get(circuits, f[COL_CIRCUIT_ID]);
	if (s == SUB_NONE) {
		if (sub_set_add_sub(set, &s) != 0)
			goto nomem;
		sub = &set->subs[s];
		snprintf(sub->id, sizeof(sub->id), "%s", f[COL_CIRCUIT_ID]);
		sub_copy_name(sub->name, sizeof(sub->name), f[COL_CIRCUIT_NAME]);
		sub->node = node;
		memcpy(sub->plan, plan, sizeof(plan));
		memcpy(sub->sqm, sqm, sizeof(sqm));
		memcpy(sub->sqm_opt, sqm_opt, sizeof(sqm_opt));
		sub->origin = line;
		/* Keys point into the file's buffer: set->subs moves as it grows. */
		if (sub_names_put(circuits, f[COL_CIRCUIT_ID], s) != 0)
			goto nomem;
	} else {
		/* Another device of the circuit: it must say the same about the circuit. */
		sub = &set->subs[s];
		if (sub->node != node) {
			char a[256];

			sub_node_path(set, sub->node, a, sizeof(a));
			sub_errf(err, errlen,
				 "%s:%u: circuit \"%s\" has parent node \"%s\" here but %s on line "
				 "%u: one circuit id, one circuit",
				 file, line, sub->id, f[COL_PARENT], a, sub->origin);
			return -EINVAL;
		}
		if (memcmp(sub->plan, plan, sizeof(plan)) != 0 ||
		    memcmp(sub->sqm, sqm, sizeof(sqm)) != 0 ||
		    memcmp(sub->sqm_opt, sqm_opt, sizeof(sqm_opt)) != 0) {
			sub_errf(err, errlen,
				 "%s:%u: circuit \"%s\" has other rates or sqm here than on line %u "
				 "(every row of a circuit repeats them)",
				 file, line, sub->id, sub->origin);
			return -EINVAL;
		}
	}
	rc = sub_csv_addresses(set, s, f[COL_IPV4], 4, file, line, "IPv4", err, errlen);
	if (rc == 0)
		rc = sub_csv_addresses(set, s, f[COL_IPV6], 6, file, line, "IPv6", err, errlen);
	return rc;
nomem:
	sub_errf(err, errlen, "%s:%u: out of memory", file, line);
	return -ENOMEM;
}

static char *
sub_read_file(const char *path, size_t *len, char *err, size_t errlen)
{
	FILE *fp = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (fp == NULL) {
		int e = errno;

		sub_errf(err, errlen, "%s: %s", path, strerror(e));
		errno = e;
		return NULL;
	}
	if (fseek(fp, 0, SEEK_END) != 0 || (n = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0 ||
	    (buf = malloc((size_t)n + 1)) == NULL || fread(buf, 1, (size_t)n, fp) != (size_t)n) {
		sub_errf(err, errlen, "%s: cannot read the file", path);
		free(buf);
		fclose(fp);
		errno = EIO;
		return NULL;
	}
	fclose(fp);
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

/*
 * The nodes' ids, for Parent Node ID: unique, as the names are. A virtual
 * node's id names the node it stands for (the link: SUB_ROOT).
 */
static int
sub_node_ids(const struct sub_set *set, const struct sub_virtuals *virt, struct sub_names *ids,
	     char *err, size_t errlen)
{
	uint32_t i, other;

	for (i = 1; i < set->nnodes; i++) {
		if (set->nodes[i].id[0] == '\0')
			continue;
		other = sub_names_get(ids, set->nodes[i].id);
		if (other != SUB_NONE) {
			sub_errf(err, errlen, "%s: nodes \"%s\" and \"%s\" have the same id \"%s\"",
				 set->nodes_file, set->nodes[other].name, set->nodes[i].name,
				 set->nodes[i].id);
			return -EINVAL;
		}
		if (sub_names_put(ids, set->nodes[i].id, i) != 0)
			goto nomem;
	}
	for (i = 0; i < virt->n; i++) {
		if (virt->v[i].id[0] == '\0')
			continue;
		other = sub_names_get(ids, virt->v[i].id);
		if (other != SUB_NONE) {
			sub_errf(err, errlen,
				 "%s: virtual node \"%s\" has the id \"%s\" of another node",
				 set->nodes_file, virt->v[i].name, virt->v[i].id);
			return -EINVAL;
		}
		if (sub_names_put(ids, virt->v[i].id, virt->v[i].node) != 0)
			goto nomem;
	}
	return 0;
nomem:
	sub_errf(err, errlen, "out of memory");
	return -ENOMEM;
}

/* The names a file's rows are checked against as they are read. */
struct sub_csv_names {
	struct sub_names nodes, circuits, devices, ids;
};

/* The header, then every row of the file, each a device of a circuit. */
static int
sub_csv_rows(struct sub_set *set, char *buf, size_t len, const char *devices_csv,
	     struct sub_csv_names *nm, char *err, size_t errlen)
{
	struct sub_csv_cols cols = { .n = 0 };
	struct sub_csv c = { .p = buf, .end = buf + len, .line = 1 };
	char *fields[SUB_CSV_MAX_FIELDS], *cell[COL_COUNT], *last = NULL;
	bool header = false;
	uint32_t line;
	int n, rc;

	while ((n = sub_csv_record(&c, fields, SUB_CSV_MAX_FIELDS, &line, &last)) > 0) {
		char empty[1] = "";

		if (!header) {
			if (n > SUB_CSV_MAX_FIELDS) {
				sub_errf(err, errlen,
					 "%s:%u: the header has %d columns (at most %d)",
					 devices_csv, line, n, SUB_CSV_MAX_FIELDS);
				return -EINVAL;
			}
			rc = sub_csv_header(set, fields, n, devices_csv, line, &cols, err, errlen);
			if (rc != 0)
				return rc;
			header = true;
			continue;
		}
		if (sub_csv_cells(&cols, fields, n, empty, cell) != 0) {
			sub_errf(err, errlen,
				 "%s:%u: %d fields, the header has %d (more only where a Comment "
				 "holds commas, and at most %d)",
				 devices_csv, line, n, cols.n, SUB_CSV_MAX_FIELDS);
			return -EINVAL;
		}
		rc = sub_csv_row(set, cell, devices_csv, line, &nm->circuits, &nm->devices,
				 &nm->nodes, &nm->ids, err, errlen);
		if (rc != 0)
			return rc;
	}
	if (n < 0) {
		sub_errf(err, errlen,
			 "%s:%u: a quoted field is not closed, or text follows its closing quote",
			 devices_csv, c.line);
		return -EINVAL;
	}
	if (!header) {
		sub_errf(err, errlen, "%s: no header row (Circuit ID, Circuit Name, ...)",
			 devices_csv);
		return -EINVAL;
	}
	return 0;
}

int
sub_load_libreqos(struct sub_set *set, const char *devices_csv, const char *network_json, char *err,
		  size_t errlen)
{
	struct sub_csv_names nm = { 0 };
	struct sub_virtuals virt = { 0 };
	size_t len;
	char *buf;
	int rc = 0;

	snprintf(set->subs_file, sizeof(set->subs_file), "%s", devices_csv);
	set->subs_csv = true;
	buf = sub_read_file(devices_csv, &len, err, errlen);
	if (buf == NULL)
		return -errno;
	if (sub_names_init(&nm.nodes, 64) != 0 || sub_names_init(&nm.circuits, 1024) != 0 ||
	    sub_names_init(&nm.devices, 1024) != 0 || sub_names_init(&nm.ids, 64) != 0) {
		rc = -ENOMEM;
		sub_errf(err, errlen, "out of memory");
		goto out;
	}
	if (network_json != NULL) {
		rc = sub_load_network(set, network_json, &nm.nodes, &virt, err, errlen);
		if (rc != 0)
			goto out;
	}
	rc = sub_node_ids(set, &virt, &nm.ids, err, errlen);
	if (rc != 0)
		goto out;
	rc = sub_csv_rows(set, buf, len, devices_csv, &nm, err, errlen);
	if (rc != 0)
		goto out;
	for (uint32_t i = 0; i < set->nsubs; i++)
		if (set->subs[i].nprefixes == 0) {
			sub_errf(err, errlen, "%s:%u: circuit \"%s\" has no IPv4 or IPv6 address",
				 devices_csv, set->subs[i].origin, set->subs[i].id);
			rc = -EINVAL;
			goto out;
		}
	rc = sub_set_validate(set, err, errlen);
out:
	sub_names_free(&nm.nodes);
	sub_names_free(&nm.circuits);
	sub_names_free(&nm.devices);
	sub_names_free(&nm.ids);
	free(virt.v);
	free(buf);
	return rc;
}
