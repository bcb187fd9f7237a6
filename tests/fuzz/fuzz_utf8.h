/* Shared by the config and control harnesses. */
#ifndef SHAPER_FUZZ_UTF8_H
#define SHAPER_FUZZ_UTF8_H

#include <stddef.h>

/* 1 if s[0..n) is well-formed UTF-8 (no cut or stray sequence anywhere). */
static inline int
fuzz_utf8_valid(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		unsigned int need = u[i] < 0x80    ? 0
				    : u[i] >= 0xf8 ? 9
				    : u[i] >= 0xf0 ? 3
				    : u[i] >= 0xe0 ? 2
				    : u[i] >= 0xc0 ? 1
						   : 9;

		if (need == 9 || n - i - 1 < need)
			return 0;
		i++;
		for (unsigned int k = 0; k < need; k++, i++)
			if ((u[i] & 0xc0) != 0x80)
				return 0;
	}
	return 1;
}

#endif
