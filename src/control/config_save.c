/*
 * config.save: the running direction settings written back into the
 * configuration file. Only the keys whose values differ are touched, so
 * comments, the other sections, key order and indentation stay as the
 * user left them; the file is replaced atomically (temporary file in the
 * same directory, fsync, rename, fsync of the directory) and keeps its
 * owner and mode, so StrictModes still accepts it; the file as it was
 * stays beside it as NAME.bak.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "shaper/reload.h"
#include "shaper/log.h"

/* The file's indentation: a tab, or the number of spaces of its first indented line. */
static const char *
indent_unit(const char *text, char *buf, size_t len)
{
	const char *nl = strchr(text, '\n');
	size_t n = 0;

	if (nl == NULL || nl[1] == '\t')
		return "\t";
	while (nl[1 + n] == ' ' && n + 1 < len)
		n++;
	if (n == 0)
		return "\t";
	memset(buf, ' ', n);
	buf[n] = '\0';
	return buf;
}

/*
 * jansson indents with spaces: dump with one space per level, then give
 * each level the file's own unit. Strings never hold a raw newline, so
 * leading spaces are indentation only.
 */
static char *
dump_indented(const json_t *root, const char *unit)
{
	char *one = json_dumps(root, JSON_INDENT(1)), *out, *w;
	size_t depth_max = 0, lines = 1, ul = strlen(unit);

	if (one == NULL)
		return NULL;
	for (const char *p = one; *p != '\0'; p++)
		if (*p == '\n')
			lines++;
	for (const char *p = one; *p != '\0';) {
		size_t n = 0;

		while (p[n] == ' ')
			n++;
		if (n > depth_max)
			depth_max = n;
		p = strchr(p, '\n');
		if (p == NULL)
			break;
		p++;
	}
	out = malloc(strlen(one) + lines * depth_max * ul + 2);
	if (out == NULL) {
		free(one);
		return NULL;
	}
	w = out;
	for (const char *p = one; *p != '\0';) {
		const char *end = strchr(p, '\n');
		size_t n = 0, rest;

		while (p[n] == ' ')
			n++;
		for (size_t i = 0; i < n; i++, w += ul)
			memcpy(w, unit, ul);
		rest = end != NULL ? (size_t)(end - p) + 1 - n : strlen(p + n);
		memcpy(w, p + n, rest);
		w += rest;
		p = end != NULL ? end + 1 : p + n + rest;
	}
	*w++ = '\n';
	*w = '\0';
	free(one);
	return out;
}

static char *
read_text(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (f == NULL) {
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
		return NULL;
	}
	for (;;) {
		if (n + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap = cap * 2 + 8192);

			if (nb == NULL) {
				free(buf);
				fclose(f);
				snprintf(err, errlen, "out of memory");
				return NULL;
			}
			buf = nb;
		}
		size_t got = fread(buf + n, 1, 4096, f);

		n += got;
		if (got < 4096)
			break;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/*
 * Set the keys of each direction object in root that differ from
 * running[], taking their values from the running settings as config.get
 * shows them. move: append the key at the end instead of replacing it in
 * place (an "mpu" must come after an "overhead" keyword that sets one).
 * Keys another discipline has are dropped when the discipline changes.
 */
static unsigned int
patch_dirs(json_t *root, const struct shaper_config *file,
	   const struct sched_params running[SHAPER_NUM_DIRS],
	   const bool skip_rate[SHAPER_NUM_DIRS], bool move, struct ctl_reload_plan *written)
{
	unsigned int total = 0;

	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		const char *keys[CTL_RELOAD_MAX_KEYS];
		unsigned int n = ctl_dir_diff(&file->dir[d], &running[d], skip_rate[d], keys,
					      CTL_RELOAD_MAX_KEYS);
		json_t *obj = json_object_get(root, shaper_dir_name[d]), *now;

		if (n == 0)
			continue;
		total += n;
		if (obj == NULL) {
			obj = json_object();
			json_object_set_new(root, shaper_dir_name[d], obj);
		}
		now = shaper_config_direction_to_json(&running[d]);
		json_object_set_new(now, "seed", json_integer((json_int_t)running[d].seed));
		for (unsigned int i = 0; i < n; i++) {
			json_t *v = json_object_get(now, keys[i]);
			unsigned int k;

			if (v == NULL)
				continue;
			if (move)
				json_object_del(obj, keys[i]);
			json_object_set(obj, keys[i], v);
			for (k = 0; k < written->n_changed[d]; k++)
				if (strcmp(written->changed[d][k], keys[i]) == 0)
					break;
			if (k == written->n_changed[d] && k < CTL_RELOAD_MAX_KEYS)
				written->changed[d][written->n_changed[d]++] = keys[i];
		}
		if (file->dir[d].discipline != running[d].discipline) {
			const char *key;
			json_t *v;
			void *tmp;

			json_object_foreach_safe (obj, tmp, key, v)
				if (json_object_get(now, key) == NULL &&
				    strcmp(key, "emulate") != 0)
					json_object_del(obj, key);
		}
		json_decref(now);
	}
	return total;
}

static int
write_atomically(const char *real, const char *text, const struct stat *st, bool strict_modes,
		 char *err, size_t errlen)
{
	char dir[PATH_MAX], base[PATH_MAX], tmp[PATH_MAX + 16];
	char bak[PATH_MAX + 8], baktmp[PATH_MAX + 24];
	size_t len = strlen(text);
	int fd, dfd;

	snprintf(dir, sizeof(dir), "%s", real);
	snprintf(base, sizeof(base), "%s", real);
	snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dirname(dir), basename(base));
	fd = mkstemp(tmp);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot write a file in %s: %s", real, dir,
			 strerror(errno));
		return -1;
	}
	/* The old file's owner and mode: StrictModes accepted those. */
	if (fchmod(fd, st->st_mode & 07777) != 0 ||
	    (fchown(fd, st->st_uid, st->st_gid) != 0 && errno != EPERM)) {
		snprintf(err, errlen, "%s: cannot set the mode of %s: %s", real, tmp,
			 strerror(errno));
		goto fail;
	}
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, text + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			snprintf(err, errlen, "%s: cannot write %s: %s", real, tmp,
				 strerror(errno));
			goto fail;
		}
		off += (size_t)w;
	}
	if (fsync(fd) != 0) {
		snprintf(err, errlen, "%s: fsync: %s", real, strerror(errno));
		goto fail;
	}
	if (strict_modes && shaper_check_file_modes(tmp, err, errlen) != 0)
		goto fail; /* e.g. not ours to chown back to root */
	close(fd);
	fd = -1;
	/*
	 * The file as it was stays beside it as NAME.bak: a hard link (same
	 * owner and mode) under a temporary name, renamed over the last backup,
	 * so a crash leaves either backup whole and the file never without one.
	 */
	snprintf(bak, sizeof(bak), "%s" CTL_CONFIG_BACKUP_SUFFIX, real);
	snprintf(baktmp, sizeof(baktmp), "%s" CTL_CONFIG_BACKUP_SUFFIX, tmp);
	if (link(real, baktmp) != 0 || rename(baktmp, bak) != 0) {
		snprintf(err, errlen, "%s: cannot keep the file as it was in %s: %s", real, bak,
			 strerror(errno));
		unlink(baktmp);
		goto fail;
	}
	if (rename(tmp, real) != 0) {
		snprintf(err, errlen, "%s: cannot replace it: %s", real, strerror(errno));
		goto fail;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd >= 0) {
		fsync(dfd); /* the rename itself survives a crash */
		close(dfd);
	}
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return -1;
}

/* The directions of text, loaded as shaperd would, differ from running[]? */
static int
still_differs(const char *text, const struct sched_params running[SHAPER_NUM_DIRS],
	      const bool skip_rate[SHAPER_NUM_DIRS], struct shaper_config *out, char *err,
	      size_t errlen)
{
	const char *keys[CTL_RELOAD_MAX_KEYS];
	unsigned int n = 0;

	if (shaper_config_load_string(text, out, err, errlen) != 0)
		return -1;
	for (int d = 0; d < SHAPER_NUM_DIRS; d++)
		n += ctl_dir_diff(&out->dir[d], &running[d], skip_rate[d], keys,
				  CTL_RELOAD_MAX_KEYS);
	return n > 0;
}

int
ctl_config_save_file(const char *path, const struct sched_params running[SHAPER_NUM_DIRS],
		     const bool skip_rate[SHAPER_NUM_DIRS], bool strict_modes,
		     struct ctl_reload_plan *written, char *err, size_t errlen)
{
	struct shaper_config *file = malloc(sizeof(*file));
	char real[PATH_MAX], e[SHAPER_ERR_LEN], unit_buf[32];
	char *text = NULL, *out = NULL;
	json_t *root = NULL;
	json_error_t jerr;
	struct stat st;
	int rc = -1, differs = 0;

	memset(written, 0, sizeof(*written));
	if (file == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* A symlink stays one: the file it points to is replaced. */
	if (realpath(path, real) == NULL || stat(real, &st) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (access(real, W_OK) != 0) {
		snprintf(err, errlen, "%s: not writable by shaperd: %s", path, strerror(errno));
		goto out;
	}
	text = read_text(real, err, errlen);
	if (text == NULL)
		goto out;
	/* What the file says now; a file that no longer loads is the user's to fix first. */
	if (shaper_config_load_string(text, file, e, sizeof(e)) != 0) {
		snprintf(err, errlen, "%s: %s (fix the file first; nothing was written)", path, e);
		goto out;
	}
	root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		snprintf(err, errlen, "%s: line %d: %s", path, jerr.line, jerr.text);
		goto out;
	}
	/*
	 * Replace the keys that differ in place; a changed discipline brings
	 * its own defaults, so look again; keys still off (an "overhead"
	 * keyword after them sets them) move to the end of their object.
	 */
	for (int round = 0; round < 3; round++) {
		if (patch_dirs(root, file, running, skip_rate, round == 2, written) == 0)
			break; /* round 0: the file already says what runs */
		free(out);
		out = dump_indented(root, indent_unit(text, unit_buf, sizeof(unit_buf)));
		if (out == NULL) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		/* file becomes what the new text loads to. */
		differs = still_differs(out, running, skip_rate, file, e, sizeof(e));
		if (differs <= 0)
			break;
	}
	if (differs < 0) {
		snprintf(err, errlen,
			 "%s: the settings written would not load (%s); nothing was written", path,
			 e);
		goto out;
	}
	if (differs > 0) {
		snprintf(err, errlen,
			 "%s: the running settings cannot be written in the file's terms; nothing "
			 "was written",
			 path);
		goto out;
	}
	if (out == NULL) {
		rc = 0;
		goto out;
	}
	rc = write_atomically(real, out, &st, strict_modes, err, errlen) == 0 ? 1 : -1;
out:
	json_decref(root);
	free(out);
	free(text);
	free(file);
	return rc;
}

int
ctl_config_save(const struct ctl_backend *be, void **result, enum ctl_error *code, char *msg,
		size_t msglen)
{
	const struct ctl_config_file *cf = be->config_file;
	struct sched_params running[SHAPER_NUM_DIRS];
	bool skip_rate[SHAPER_NUM_DIRS];
	struct sched_stats *st;
	struct ctl_dir_counters c;
	struct ctl_reload_plan *w;
	json_t *keys;
	int rc;

	*result = NULL;
	if (cf == NULL || cf->path == NULL || cf->started == NULL) {
		*code = CTL_ERR_INVALID_ARGUMENT;
		snprintf(msg, msglen, "this daemon was not started from a configuration file");
		return -1;
	}
	st = calloc(1, sizeof(*st));
	w = malloc(sizeof(*w));
	if (st == NULL || w == NULL) {
		free(st);
		free(w);
		*code = CTL_ERR_INTERNAL;
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		/* Autorate moves the rate; its bounds are what the file keeps. */
		skip_rate[d] = cf->started->autorate[d].enabled;
		if (be->dir_snapshot(be->opaque, (enum shaper_dir)d, &c, st, &running[d]) != 0) {
			free(st);
			free(w);
			*code = CTL_ERR_BUSY;
			snprintf(msg, msglen, "%s: no snapshot available yet; try again",
				 shaper_dir_name[d]);
			return -1;
		}
	}
	free(st);
	rc = ctl_config_save_file(cf->path, running, skip_rate, cf->strict_modes, w, msg, msglen);
	if (rc < 0) {
		*code = CTL_ERR_INVALID_ARGUMENT;
		shaper_log_warning("config.save refused: %s", msg);
		free(w);
		return -1;
	}
	keys = json_object();
	for (int d = 0; d < SHAPER_NUM_DIRS; d++) {
		json_t *a = json_array();

		for (unsigned int i = 0; i < w->n_changed[d]; i++)
			json_array_append_new(a, json_string(w->changed[d][i]));
		json_object_set_new(keys, shaper_dir_name[d], a);
	}
	shaper_log_notice("config.save: %s: %s", cf->path,
			  rc == 1 ? "written (the file as it was kept as " CTL_CONFIG_BACKUP_SUFFIX
				    ")"
				  : "unchanged (it already holds the running settings)");
	fflush(stdout);
	*result = json_pack("{s:s, s:b, s:o}", "file", cf->path, "written", rc == 1, "keys", keys);
	if (rc == 1 && *result != NULL) {
		char real[PATH_MAX], bak[PATH_MAX + 8];

		if (realpath(cf->path, real) != NULL) {
			snprintf(bak, sizeof(bak), "%s" CTL_CONFIG_BACKUP_SUFFIX, real);
			json_object_set_new(*result, "backup", json_string(bak));
		}
	}
	free(w);
	return 0;
}
