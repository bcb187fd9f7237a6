/*
 * StrictModes: a config file or socket directory that group or others can
 * write, or that another user owns, is refused with the path and why; a
 * sticky directory such as /tmp above it is fine, a plain writable one not.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shaper/config.h"

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

static int
teardown(void **state)
{
	char link[160];

	(void)state;
	snprintf(link, sizeof(link), "%s/link.json", dir);
	unlink(link);
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
	assert_refused(shaper_check_file_modes(file, err, sizeof(err)), file,
		       "(mode 0664) is writable by its group");
	chmod(file, 0646);
	assert_refused(shaper_check_file_modes(file, err, sizeof(err)), file, "writable by others");
	chmod(file, 0644);
	/* a directory above it that anyone may write, without the sticky bit */
	chmod(sub, 0777);
	assert_refused(shaper_check_file_modes(file, err, sizeof(err)), sub,
		       "(mode 0777) is writable by others");
	chmod(sub, 0775);
	assert_refused(shaper_check_file_modes(file, err, sizeof(err)), sub, "its group");
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
	assert_refused(shaper_check_dir_modes(sub, err, sizeof(err)), sub, "its group");
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_file_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_resolved, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dir_modes, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
