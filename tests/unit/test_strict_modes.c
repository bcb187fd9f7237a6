/*
 * StrictModes: a config file, a file it names (subscribers, BPF programs)
 * or a socket directory that group or others can write, or that another
 * user owns, is refused with the path, the writer and why; a sticky
 * directory such as /tmp above it is fine, a plain writable one not.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shaper/config.h"

#define NELEM_PATH 6 /* entries of named[] */

static char dir[64], sub[96], file[128], err[SHAPER_ERR_LEN];

static int
setup(void **state)
{
	FILE *f;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/shaper-strict-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(sub, sizeof(sub), "%s/etc", dir);
	snprintf(file, sizeof(file), "%s/shaper.json", sub);
	if (mkdir(sub, 0755) != 0 || (f = fopen(file, "w")) == NULL)
		return -1;
	fputs("{}\n", f);
	fclose(f);
	return chmod(file, 0644);
}

/* The files a configuration names, beside it. */
static const char *const named[] = {
	"ShapedDevices.csv", "network.json", "subs.json", "failopen.bpf.o",
	"failopen_tc.bpf.o", "own.o",        NULL
};

static int
teardown(void **state)
{
	char link[160];

	(void)state;
	snprintf(link, sizeof(link), "%s/link.json", dir);
	unlink(link);
	for (const char *const *n = named; *n != NULL; n++) {
		snprintf(link, sizeof(link), "%s/%s", sub, *n);
		unlink(link);
	}
	unlink(file);
	rmdir(sub);
	rmdir(dir);
	return 0;
}

static void
assert_refused(int rc, const char *path, const char *why)
{
	if (rc == 0 || strstr(err, path) == NULL || strstr(err, why) == NULL)
		print_error("rc %d, message \"%s\", want %s and \"%s\"\n", rc, err, path, why);
	assert_int_equal(rc, -1);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, why));
}

static void
test_file_modes(void **state)
{
	(void)state;
	assert_int_equal(shaper_check_file_modes(file, err, sizeof(err)), 0);
	chmod(file, 0600);
	assert_int_equal(shaper_check_file_modes(file, err, sizeof(err)), 0);
	chmod(file, 0664);
	{
		const struct group *g = getgrgid(getegid());
		char why[128];

		/* the writer by name, then the mode */
		snprintf(why, sizeof(why), "is writable by group %s (mode 0664)",
			 g != NULL ? g->gr_name : "");
		assert_refused(shaper_check_file_modes(file, err, sizeof(err)), file,
			       g != NULL ? why : "(mode 0664)");
	}
	chmod(file, 0646);
	assert_refused(shaper_check_file_modes(file, err, sizeof(err)), file, "writable by others");
	chmod(file, 0644);
	/* a directory above it that anyone may write, without the sticky bit */
	chmod(sub, 0777);
	assert_refused(shaper_check_file_modes(file, err, sizeof(err)), sub,
		       "is writable by others (mode 0777)");
	chmod(sub, 0775);
	assert_refused(shaper_check_file_modes(file, err, sizeof(err)), sub, "writable by group");
	/* sticky and ours, as /tmp is root's: nobody else can swap the file */
	chmod(sub, 01777);
	assert_int_equal(shaper_check_file_modes(file, err, sizeof(err)), 0);
	chmod(sub, 0755);
	assert_refused(shaper_check_file_modes(sub, err, sizeof(err)), sub, "not a regular file");
	assert_refused(shaper_check_file_modes("/nonexistent/shaper.json", err, sizeof(err)),
		       "/nonexistent/shaper.json", "No such file");
}

static void
test_symlink_resolved(void **state)
{
	char link[160];

	(void)state;
	snprintf(link, sizeof(link), "%s/link.json", dir);
	assert_int_equal(symlink(file, link), 0);
	assert_int_equal(shaper_check_file_modes(link, err, sizeof(err)), 0);
	chmod(file, 0666); /* what the link points at is what is judged */
	assert_refused(shaper_check_file_modes(link, err, sizeof(err)), file, "writable");
	chmod(file, 0644);
}

static void
test_owner(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* giving a file away needs root */
	assert_int_equal(chown(file, 65534, 65534), 0);
	assert_refused(shaper_check_file_modes(file, err, sizeof(err)), file,
		       "is owned by uid 65534");
	assert_int_equal(chown(file, 0, 0), 0);
	assert_int_equal(chown(sub, 65534, 65534), 0);
	assert_refused(shaper_check_dir_modes(sub, err, sizeof(err)), sub, "owned by uid 65534");
	assert_int_equal(chown(sub, 0, 0), 0);
}

static void
test_dir_modes(void **state)
{
	char missing[160], deeper[200];

	(void)state;
	assert_int_equal(shaper_check_dir_modes(sub, err, sizeof(err)), 0);
	assert_int_equal(shaper_check_dir_modes("/", err, sizeof(err)), 0);
	chmod(sub, 0770);
	assert_refused(shaper_check_dir_modes(sub, err, sizeof(err)), sub, "writable by group");
	chmod(sub, 0755);
	/* not made yet: its parent decides, as the server makes it 0755 */
	snprintf(missing, sizeof(missing), "%s/run", sub);
	assert_int_equal(shaper_check_dir_modes(missing, err, sizeof(err)), 0);
	chmod(sub, 0777);
	assert_refused(shaper_check_dir_modes(missing, err, sizeof(err)), sub, "others");
	chmod(sub, 0755);
	snprintf(deeper, sizeof(deeper), "%s/run/shaper", sub);
	assert_refused(shaper_check_dir_modes(deeper, err, sizeof(err)), deeper, "missing");
	assert_refused(shaper_check_dir_modes(file, err, sizeof(err)), file, "not a directory");
}

static void
write_named(const char *name, mode_t mode, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/%s", sub, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static void
load_config(const char *json, struct shaper_config *c)
{
	if (shaper_config_load_string(json, c, err, sizeof(err)) != 0)
		fail_msg("%s: %s", json, err);
}

/*
 * Every file a configuration makes shaperd read or load: each kind refused
 * when others may write it, the message naming the key and the file.
 */
static void
test_config_files(void **state)
{
	static struct shaper_config c;
	char p[NELEM_PATH][160], json[1024];
	const char *programs[2];

	(void)state;
	for (int i = 0; named[i] != NULL; i++)
		write_named(named[i], 0644, p[i], sizeof(p[i]));
	programs[0] = p[3];
	programs[1] = p[4];
	snprintf(json, sizeof(json),
		 "{\"ports\": {\"wan\": \"net_af_xdp0,iface=w0\", \"lan\": "
		 "\"net_af_xdp1,iface=l0,xdp_prog=%s\"}, \"fail_open\": {\"enabled\": true}, "
		 "\"subscribers\": {\"devices\": \"%s\", \"network\": \"%s\"}}",
		 p[5], p[0], p[1]);
	load_config(json, &c);
	assert_int_equal(shaper_check_config_modes(file, &c, programs, 2, err, sizeof(err)), 0);
	{
		static const struct {
			int file;
			const char *key;
		} kinds[] = {
			{ 0, "subscribers.devices: " }, { 1, "subscribers.network: " },
			{ 5, "ports.lan: xdp_prog: " }, { 3, "fail_open.program: " },
			{ 4, "fail_open.program: " },
		};

		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			char want[256];

			chmod(p[kinds[k].file], 0664);
			snprintf(want, sizeof(want), "%s%s is writable by group", kinds[k].key,
				 p[kinds[k].file]);
			assert_refused(shaper_check_config_modes(file, &c, programs, 2, err,
								 sizeof(err)),
				       want, "(mode 0664)");
			chmod(p[kinds[k].file], 0644);
		}
	}
	/* the configuration file itself comes first, by its own path */
	chmod(file, 0666);
	assert_refused(shaper_check_config_modes(file, &c, programs, 2, err, sizeof(err)), file,
		       "writable by others (mode 0666)");
	chmod(file, 0644);
	/* a file it names that is not there is refused too, by key */
	unlink(p[1]);
	assert_refused(shaper_check_config_modes(file, &c, programs, 2, err, sizeof(err)),
		       "subscribers.network: ", "No such file");

	/* the JSON form; no fail-open: the programs are not loaded, so not judged */
	snprintf(json, sizeof(json),
		 "{\"ports\": {\"wan\": \"net_null0\", \"lan\": \"net_null1\"}, "
		 "\"subscribers\": {\"file\": \"%s\"}}",
		 p[2]);
	load_config(json, &c);
	chmod(p[3], 0666);
	assert_int_equal(shaper_check_config_modes(file, &c, programs, 2, err, sizeof(err)), 0);
	chmod(p[2], 0620);
	assert_refused(shaper_check_config_modes(file, &c, programs, 2, err, sizeof(err)),
		       "subscribers.file: ", "(mode 0620)");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_file_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_resolved, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dir_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_files, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
