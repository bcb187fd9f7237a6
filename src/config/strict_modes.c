/*
 * StrictModes, as sshd has them: the daemon refuses a config file or a
 * control socket directory that someone other than root or its own user
 * could change, since whoever can rewrite the config (or swap the socket)
 * controls the shaper. Checked on the path with symlinks resolved, and on
 * every directory above it: a directory that group or others may write is
 * accepted only with the sticky bit and owned by root or us (as /tmp is),
 * because then nobody else can rename or remove what we own in it.
 */
#include <errno.h>
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
	snprintf(err, errlen, "%s (mode %04o) is writable by %s; run chmod go-w on it", path,
		 (unsigned int)(st->st_mode & 07777),
		 (st->st_mode & S_IWOTH) ? "others" : "its group");
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
