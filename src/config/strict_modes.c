/*
 * StrictModes, as sshd has them: the daemon refuses a config file, a file
 * it names (subscribers, BPF programs) or a control socket directory that
 * someone other than root or its own user could change, since whoever can
 * rewrite them (or swap the socket) controls the shaper, or the kernel. Checked on the path with
 * symlinks resolved, and on every directory above it: a directory that group or others may write is
 * accepted only with the sticky bit and owned by root or us (as /tmp is),
 * because then nobody else can rename or remove what we own in it.
 */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shaper/config.h"

static bool
trusted_owner(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/* One path's owner and mode; what is wrong in err. */
static int
check_one(const char *path, const struct stat *st, char *err, size_t errlen)
{
	bool dir = S_ISDIR(st->st_mode);

	if (!trusted_owner(st->st_uid)) {
		snprintf(err, errlen,
			 "%s is owned by uid %u; only root or the daemon's user (uid %u) may own "
			 "it",
			 path, (unsigned int)st->st_uid, (unsigned int)geteuid());
		return -1;
	}
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) == 0)
		return 0;
	if (dir && (st->st_mode & S_ISVTX))
		return 0; /* sticky, owned by root or us: others cannot replace our files */
	if (st->st_mode & S_IWOTH) {
		snprintf(err, errlen, "%s is writable by others (mode %04o); run chmod go-w on it",
			 path, (unsigned int)(st->st_mode & 07777));
	} else {
		/* The writer by name: who could have changed it is what the admin asks next. */
		const struct group *g = getgrgid(st->st_gid);

		if (g != NULL)
			snprintf(err, errlen,
				 "%s is writable by group %s (mode %04o); run chmod go-w on it",
				 path, g->gr_name, (unsigned int)(st->st_mode & 07777));
		else
			snprintf(err, errlen,
				 "%s is writable by group %u (mode %04o); run chmod go-w on it",
				 path, (unsigned int)st->st_gid,
				 (unsigned int)(st->st_mode & 07777));
	}
	return -1;
}

/* Every directory above the resolved path real (which starts with '/'). */
static int
check_parents(const char *real, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", real);
	while ((slash = strrchr(dir, '/')) != NULL) {
		struct stat st;

		if (slash == dir)
			slash[1] = '\0'; /* the root directory itself */
		else
			*slash = '\0';
		if (stat(dir, &st) != 0) {
			snprintf(err, errlen, "%s: %s", dir, strerror(errno));
			return -1;
		}
		if (check_one(dir, &st, err, errlen) != 0)
			return -1;
		if (slash == dir)
			break;
	}
	return 0;
}

int
shaper_check_file_modes(const char *file, char *err, size_t errlen)
{
	char real[PATH_MAX];
	struct stat st;

	if (realpath(file, real) == NULL || stat(real, &st) != 0) {
		snprintf(err, errlen, "%s: %s", file, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a regular file", file);
		return -1;
	}
	if (check_one(real, &st, err, errlen) != 0)
		return -1;
	return check_parents(real, err, errlen);
}

int
shaper_check_dir_modes(const char *dir, char *err, size_t errlen)
{
	char real[PATH_MAX];
	struct stat st;

	if (realpath(dir, real) == NULL) {
		char parent[PATH_MAX];
		char *slash;

		/* Not there yet: the control server makes it 0755, so its parent is what counts. */
		if (errno != ENOENT) {
			snprintf(err, errlen, "%s: %s", dir, strerror(errno));
			return -1;
		}
		snprintf(parent, sizeof(parent), "%s", dir);
		slash = strrchr(parent, '/');
		if (slash == NULL || slash == parent)
			snprintf(parent, sizeof(parent), "/");
		else
			*slash = '\0';
		if (realpath(parent, real) == NULL) {
			snprintf(err, errlen, "the socket directory %s is missing, and so is %s",
				 dir, parent);
			return -1;
		}
	}
	if (stat(real, &st) != 0) {
		snprintf(err, errlen, "%s: %s", real, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s is not a directory", real);
		return -1;
	}
	if (check_one(real, &st, err, errlen) != 0)
		return -1;
	return check_parents(real, err, errlen);
}

/* One file a configuration names: err as "KEY: why". */
static int
check_named(const char *key, const char *file, char *err, size_t errlen)
{
	char why[SHAPER_ERR_LEN];

	if (shaper_check_file_modes(file, why, sizeof(why)) == 0)
		return 0;
	snprintf(err, errlen, "%s: %s", key, why);
	return -1;
}

/* The program an AF_XDP device loads itself (",xdp_prog=PATH"), into out; false if none. */
static bool
device_program(const char *device, char *out, size_t len)
{
	const char *p = strstr(device, ",xdp_prog=");
	size_t n;

	if (strncmp(device, "net_af_xdp", strlen("net_af_xdp")) != 0 || p == NULL)
		return false;
	p += strlen(",xdp_prog=");
	n = strcspn(p, ",");
	if (n == 0 || n >= len)
		return false;
	memcpy(out, p, n);
	out[n] = '\0';
	return true;
}

int
shaper_check_config_modes(const char *path, const struct shaper_config *c,
			  const char *const *programs, unsigned int n_programs, char *err,
			  size_t errlen)
{
	const struct shaper_subscribers_config *sc = &c->subscribers;
	char key[64], prog[SHAPER_PATH_LEN * 2];

	if (shaper_check_file_modes(path, err, errlen) != 0)
		return -1;
	/* The subscriber files are re-read on every reload: whoever writes them sets the plans. */
	if (sc->file[0] != '\0' && check_named("subscribers.file", sc->file, err, errlen) != 0)
		return -1;
	if (sc->devices[0] != '\0' &&
	    check_named("subscribers.devices", sc->devices, err, errlen) != 0)
		return -1;
	if (sc->network[0] != '\0' &&
	    check_named("subscribers.network", sc->network, err, errlen) != 0)
		return -1;
	/* BPF objects run in the kernel, loaded as root: the same rule, at least. */
	for (int r = 0; r < SHAPER_NUM_PORTS; r++) {
		if (!device_program(c->port[r].device, prog, sizeof(prog)))
			continue;
		snprintf(key, sizeof(key), "ports.%s: xdp_prog", shaper_port_name[r]);
		if (check_named(key, prog, err, errlen) != 0)
			return -1;
	}
	for (unsigned int i = 0; c->fail_open && i < n_programs; i++)
		if (programs[i] != NULL && programs[i][0] != '\0' &&
		    check_named("fail_open.program", programs[i], err, errlen) != 0)
			return -1;
	return 0;
}
