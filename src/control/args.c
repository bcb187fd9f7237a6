/*
 * The check every command's arguments go through first, shared by the
 * protocol's own handlers and the subscriber commands: a command refuses an
 * argument it does not take rather than ignoring a misspelt one.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "shaper/control.h"

int
ctl_check_args(const void *args, const char *const *known, enum ctl_error *err, char *msg,
	       size_t len)
{
	static const char head[] = "args.", tail[] = ": unknown argument";
	const char *key;
	json_t *v;

	if (args == NULL)
		return 0;
	json_object_foreach ((json_t *)args, key, v) {
		const char *const *k;
		size_t n, room;

		for (k = known; *k != NULL; k++)
			if (strcmp(*k, key) == 0)
				break;
		if (*k != NULL)
			continue;
		/* A key too long for msg is cut before a character's first byte:
		 * the message stays UTF-8 (jansson's keys are) and keeps its tail. */
		n = strlen(key);
		room = len > sizeof(head) + sizeof(tail) ? len - sizeof(head) - sizeof(tail) + 1
							 : 0;
		if (n > room) {
			n = room;
			while (n > 0 && ((unsigned char)key[n] & 0xc0) == 0x80)
				n--;
		}
		*err = CTL_ERR_INVALID_ARGUMENT;
		snprintf(msg, len, "%s%.*s%s", head, (int)n, key, tail);
		return -1;
	}
	return 0;
}
