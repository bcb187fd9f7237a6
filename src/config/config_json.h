/*
 * What the two halves of the configuration parser share (config.c: the typed
 * getters and a direction's keys; config_daemon.c: the daemon's sections):
 * each getter checks a value's type and range and names its JSON path in err.
 */
#ifndef SHAPER_CONFIG_JSON_H
#define SHAPER_CONFIG_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "shaper/config.h"
#include "shaper/config_keys.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

struct name_val {
	const char *name;
	int val;
};

typedef int (*unit_parser)(const char *, uint64_t *, char *, size_t);

const char *join_path(char *buf, size_t len, const char *path, const char *key);
void errf(char *err, size_t errlen, const char *path, const char *fmt, ...)
		__attribute__((format(printf, 4, 5)));
const char *name_of(const struct name_val *t, size_t n, int val);
const char *json_type_name(const json_t *v);
int get_enum(const json_t *v, const char *path, const struct name_val *t, size_t n, int *out,
	     const char *what, char *err, size_t errlen);
int get_bool(const json_t *v, const char *path, bool *out, char *err, size_t errlen);
int get_int(const json_t *v, const char *path, long long lo, long long hi, long long *out,
	    char *err, size_t errlen);
int get_unit(const json_t *v, const char *path, unit_parser parse, const char *what, uint64_t lo,
	     uint64_t hi, uint64_t *out, char *err, size_t errlen);
int get_string(const json_t *v, const char *path, char *out, size_t outlen, char *err,
	       size_t errlen);
/* "unknown key (known: ...)", the known ones from the key table (config_keys.c); -1. */
int unknown_key(const char *section, const char *path, const char *what, char *err, size_t errlen);

/* A key the table does not list is refused before any parser sees it. */
#define REFUSE_UNLISTED(section, key, path)                                                        \
	do {                                                                                       \
		if (!shaper_config_key_known(section, key))                                        \
			return unknown_key(section, path, "key", err, errlen);                     \
	} while (0)

int expect_object(const json_t *v, const char *path, char *err, size_t errlen);
/* A direction object into *p (and, when not NULL, its emulator and autorate settings). */
int parse_direction(const json_t *obj, const char *path, struct sched_params *p,
		    struct shaper_emulate_config *em, struct shaper_autorate_config *ar, char *err,
		    size_t errlen);

#endif
