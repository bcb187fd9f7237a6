/*
 * Helpers the subscriber loaders share: growing the set's arrays, a
 * string -> index table for circuit ids, device ids and node names, and a
 * message prefix naming where an element came from.
 */
#ifndef SHAPER_SUB_IMPL_H
#define SHAPER_SUB_IMPL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "shaper/subscriber.h"

/* Open addressing over strings the caller keeps alive; values are indices. */
struct sub_names {
	const char **keys;
	uint32_t *vals;
	uint32_t cap, n;
};

int sub_names_init(struct sub_names *t, uint32_t expect);
void sub_names_free(struct sub_names *t);
/* The value of key, or SUB_NONE. */
uint32_t sub_names_get(const struct sub_names *t, const char *key);
/* Add key (not present) -> val; key must outlive t. 0 or -ENOMEM. */
int sub_names_put(struct sub_names *t, const char *key, uint32_t val);

/* snprintf into err, cut to fit. */
void sub_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* "file:line (circuit "id")" or "file: subscribers[i] ("id")" for subscriber s. */
void sub_where(const struct sub_set *set, uint32_t s, char *buf, size_t len);

/* Copy src into dst[len], reporting whether it had to be cut. */
int sub_copy_name(char *dst, size_t len, const char *src);

/*
 * LibreQoS's sqm value: "cake", "fq_codel", "none", "" (the default), or
 * "down/up" with either side empty for the default. Case-insensitive.
 */
int sub_parse_sqm(const char *s, uint8_t sqm[SUB_DIRS]);

/*
 * network.json's virtual nodes (LibreQoS 2.x, "virtual": true): named for
 * grouping only, never a cap. Each stands for its nearest non-virtual
 * ancestor (the link at the top): circuits naming it, by name or id, hang
 * there, and so do its children.
 */
struct sub_virtual {
	char name[SUB_ID_LEN];
	char id[SUB_ID_LEN]; /* "" if none */
	uint32_t node;       /* the node it stands for */
};
struct sub_virtuals {
	struct sub_virtual *v;
	uint32_t n, cap;
};

/*
 * Load network.json's tree under the root; names indexes the nodes by
 * name, the virtual ones' names included (to the node each stands for),
 * whose records go to virt (freed by the caller).
 */
int sub_load_network(struct sub_set *set, const char *path, struct sub_names *names,
		     struct sub_virtuals *virt, char *err, size_t errlen);

#endif
