/*
 * An in-place ascending heapsort for arrays of an unsigned integer type,
 * for code on a worker: no allocation (glibc's qsort may call malloc) and
 * O(n log n) at worst. SH_HEAPSORT_DEFINE(sort_u32, uint32_t) defines
 * static void sort_u32(uint32_t *v, uint32_t n).
 */
#ifndef SHAPER_HEAPSORT_H
#define SHAPER_HEAPSORT_H

#include <stdint.h>

#define SH_HEAPSORT_DEFINE(name, type)                                                             \
	static void name(type *v, uint32_t n)                                                      \
	{                                                                                          \
		for (uint32_t end = n, start = n / 2;;) {                                          \
			uint32_t root;                                                             \
			type x;                                                                    \
                                                                                                   \
			if (start > 0) {                                                           \
				x = v[--start];                                                    \
				root = start;                                                      \
			} else {                                                                   \
				if (end <= 1)                                                      \
					return;                                                    \
				x = v[--end];                                                      \
				v[end] = v[0];                                                     \
				root = 0;                                                          \
			}                                                                          \
			for (;;) {                                                                 \
				uint32_t c = 2 * root + 1;                                         \
                                                                                                   \
				if (c >= end)                                                      \
					break;                                                     \
				if (c + 1 < end && v[c + 1] > v[c])                                \
					c++;                                                       \
				if (v[c] <= x)                                                     \
					break;                                                     \
				v[root] = v[c];                                                    \
				root = c;                                                          \
			}                                                                          \
			v[root] = x;                                                               \
		}                                                                                  \
	}

#endif
