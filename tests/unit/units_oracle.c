/*
 * units.c's parsers on stdin, for a script to hold another parser against:
 * each line "rate TEXT", "size TEXT" or "time TEXT" is answered with
 * "ok VALUE" (bytes/s, bytes, ns) or "err MESSAGE", one line each.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "shaper/units.h"

int
main(void)
{
	static char line[65536];

	while (fgets(line, sizeof(line), stdin) != NULL) {
		int (*parse)(const char *, uint64_t *, char *, size_t) = NULL;
		char err[1024] = "";
		char *text = strchr(line, ' ');
		uint64_t v = 0;

		line[strcspn(line, "\n")] = '\0';
		if (text == NULL) {
			printf("bad line\n");
			continue;
		}
		*text++ = '\0';
		if (strcmp(line, "rate") == 0)
			parse = shaper_parse_rate;
		else if (strcmp(line, "size") == 0)
			parse = shaper_parse_size;
		else if (strcmp(line, "time") == 0)
			parse = shaper_parse_time;
		if (parse == NULL)
			printf("bad line\n");
		else if (parse(text, &v, err, sizeof(err)) == 0)
			printf("ok %llu\n", (unsigned long long)v);
		else
			printf("err %s\n", err);
	}
	return 0;
}
