/*
 * libFuzzer harness: the config loader on any text. Checked:
 *   - it answers 0 or -1, and -1 comes with a non-empty message that is
 *     valid UTF-8 (the control socket sends these messages as JSON);
 *   - a small error buffer (exactly sized, so ASan sees an overrun) gets the
 *     same answer, a terminated message that is a prefix of the full one;
 *   - an accepted config's directions pass sched_create, and each one's
 *     JSON (direction_to_json) parses back to settings that print the same
 *     JSON again (a fixed point), as config.get then config.set would.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz_utf8.h"
#include "shaper/config.h"
#include "shaper/sched.h"

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_config: %s:%d: check failed: %s\n", __FILE__,        \
				__LINE__, #cond);                                                  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void
check_direction(const struct sched_params *p, enum shaper_dir d)
{
	char err[SHAPER_ERR_LEN] = "";
	struct sched *s = sched_create(p, err, sizeof(err));
	json_t *j1, *j2;
	char *t1, *t2;
	struct sched_params q;

	if (s == NULL)
		fprintf(stderr, "fuzz_config: %s accepted, sched_create refused: %s\n",
			shaper_dir_name[d], err);
	CHECK(s != NULL);
	sched_free(s);

	j1 = shaper_config_direction_to_json(p);
	CHECK(j1 != NULL);
	t1 = json_dumps(j1, JSON_COMPACT | JSON_SORT_KEYS);
	CHECK(t1 != NULL);
	sched_params_default(&q,
			     p->discipline == SCHED_DISC_CAKE ? SCHED_DISC_FIFO : SCHED_DISC_CAKE);
	q.upstream = p->upstream;
	q.seed = p->seed;
	if (shaper_config_parse_direction(j1, shaper_dir_name[d], &q, err, sizeof(err)) != 0)
		fprintf(stderr, "fuzz_config: %s refused on the way back: %s\n", t1, err);
	CHECK(shaper_config_parse_direction(j1, shaper_dir_name[d], &q, err, sizeof(err)) == 0);
	j2 = shaper_config_direction_to_json(&q);
	t2 = json_dumps(j2, JSON_COMPACT | JSON_SORT_KEYS);
	CHECK(t2 != NULL);
	if (strcmp(t1, t2) != 0)
		fprintf(stderr, "fuzz_config: round trip changed\n  %s\n  %s\n", t1, t2);
	CHECK(strcmp(t1, t2) == 0);
	free(t1);
	free(t2);
	json_decref(j1);
	json_decref(j2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct shaper_config c, c2;
	char err[SHAPER_ERR_LEN];
	char *text = malloc(size + 1), *small;
	size_t smalllen;
	int rc, rc2;

	CHECK(text != NULL);
	memcpy(text, data, size);
	text[size] = '\0';
	memset(err, 'x', sizeof(err));
	rc = shaper_config_load_string(text, &c, err, sizeof(err));
	CHECK(rc == 0 || rc == -1);
	if (rc != 0) {
		CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		CHECK(err[0] != '\0');
		json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, NULL);

		/*
		 * Our messages are whole UTF-8 (config.set sends them as JSON);
		 * jansson's syntax errors quote its token cut anywhere, which
		 * the control protocol mends (utf8_mend) and a file load prints.
		 */
		if (j != NULL && !fuzz_utf8_valid(err, strlen(err)))
			fprintf(stderr, "fuzz_config: message not UTF-8: %s\n", err);
		CHECK(j == NULL || fuzz_utf8_valid(err, strlen(err)));
		json_decref(j);
	}

	smalllen = 1 + (size ? data[size - 1] % 48 : 0);
	small = malloc(smalllen);
	CHECK(small != NULL);
	rc2 = shaper_config_load_string(text, &c2, small, smalllen);
	CHECK(rc2 == rc);
	if (rc != 0) {
		CHECK(memchr(small, '\0', smalllen) != NULL);
		CHECK(strncmp(small, err, strlen(small)) == 0);
	}
	free(small);

	if (rc == 0)
		for (int d = 0; d < SHAPER_NUM_DIRS; d++)
			check_direction(&c.dir[d], (enum shaper_dir)d);
	free(text);
	return 0;
}
