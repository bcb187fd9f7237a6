/*
 * Test helper: copies a frame so that it ends exactly at a PROT_NONE page
 * (or starts exactly after one), so any read past data[len) or before
 * data[0] faults instead of passing silently.
 */
#ifndef SHAPER_TEST_GUARD_H
#define SHAPER_TEST_GUARD_H

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct guard {
	uint8_t *map;
	size_t page;
};

/* Map [16 rw pages][1 PROT_NONE page][16 rw pages]; frames up to 64 KiB fit. */
static inline int
guard_init(struct guard *g)
{
	g->page = (size_t)sysconf(_SC_PAGESIZE);
	g->map = mmap(NULL, 33 * g->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		      0);
	if (g->map == MAP_FAILED)
		return -1;
	return mprotect(g->map + 16 * g->page, g->page, PROT_NONE);
}

static inline void
guard_fini(struct guard *g)
{
	munmap(g->map, 33 * g->page);
}

/* Copy len bytes so the last byte sits right before the guard page. */
static inline uint8_t *
guard_at_end(struct guard *g, const uint8_t *src, uint32_t len)
{
	uint8_t *d = g->map + 16 * g->page - len;

	if (len)
		memcpy(d, src, len);
	return d;
}

/* Copy len bytes so the first byte sits right after the guard page. */
static inline uint8_t *
guard_at_start(struct guard *g, const uint8_t *src, uint32_t len)
{
	uint8_t *d = g->map + 17 * g->page;

	if (len)
		memcpy(d, src, len);
	return d;
}

#endif
