/*
 * What a test wrote through the log module to one of its temporary files:
 * take(f) returns it and empties the file. Two buffers in turn, so a test
 * can compare the output of two calls. Include after cmocka.h.
 */
#ifndef SHAPER_TEST_LOG_CAPTURE_H
#define SHAPER_TEST_LOG_CAPTURE_H

#include <stdio.h>
#include <unistd.h>

static char *
take(FILE *f)
{
	static char buf[2][8192];
	static int which;
	char *b = buf[which ^= 1];
	size_t n;

	fflush(f);
	rewind(f);
	n = fread(b, 1, sizeof(buf[0]) - 1, f);
	b[n] = '\0';
	assert_int_equal(ftruncate(fileno(f), 0), 0);
	rewind(f);
	return b;
}

#endif
