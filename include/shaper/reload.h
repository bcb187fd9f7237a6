/*
 * Reloading and saving the configuration file while shaperd runs.
 *
 * A reload reads the file shaperd was started with, compares it with the
 * running configuration and applies what config.set can apply (a
 * direction's settings, to every shard of it) without stopping the
 * workers. A key that only a restart can change (ports, lcores, dataplane,
 * control sockets, metrics, emulate, autorate bounds) stops the reload
 * before anything changes: all of the file or nothing.
 *
 * The diff is plain C over two struct shaper_config and the running
 * parameters, so the unit tests drive it without EAL; applying goes
 * through struct ctl_backend.
 */
#ifndef SHAPER_RELOAD_H
#define SHAPER_RELOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "shaper/config.h"
#include "shaper/control.h"

#define CTL_RELOAD_MAX_KEYS 48 /* more than there are keys of each kind */
#define CTL_RELOAD_PATH_LEN 64

struct ctl_reload_plan {
	/* Per direction: whether it changes, what it becomes, which keys differ. */
	bool change[SHAPER_NUM_DIRS];
	struct sched_params params[SHAPER_NUM_DIRS];
	unsigned int n_changed[SHAPER_NUM_DIRS];
	const char *changed[SHAPER_NUM_DIRS][CTL_RELOAD_MAX_KEYS]; /* key names, static */
	/* JSON paths of the keys that differ and need a restart ("ports.wan.device"). */
	unsigned int n_restart;
	char restart[CTL_RELOAD_MAX_KEYS][CTL_RELOAD_PATH_LEN];
};

/*
 * The direction keys whose values differ between a and b, as the config
 * file names them, into keys[] (static strings, at most max); returns how
 * many. Keys of a discipline are compared only where b's discipline has
 * them; "bandwidth" is skipped when skip_rate.
 */
unsigned int ctl_dir_diff(const struct sched_params *a, const struct sched_params *b,
			  bool skip_rate, const char **keys, unsigned int max);

/*
 * Compare a configuration read from the file with the running one:
 * started is what shaperd started on (the keys only a restart changes are
 * compared with it), running[] each direction's parameters now (config.set
 * may have moved them since). Fills plan; never fails.
 */
void ctl_reload_diff(const struct shaper_config *started,
		     const struct sched_params running[SHAPER_NUM_DIRS],
		     const struct shaper_config *file, struct ctl_reload_plan *plan);

/*
 * Load path and diff it (ctl_reload_diff), then check that each changed
 * direction builds (the checks shaperd makes at start). 0, or -1 with err
 * naming the file and the JSON path.
 */
int ctl_reload_prepare(const char *path, const struct shaper_config *started,
		       const struct sched_params running[SHAPER_NUM_DIRS],
		       struct ctl_reload_plan *plan, char *err, size_t errlen);

/*
 * The whole reload against a backend: read the running parameters, prepare,
 * refuse if a key needs a restart, apply each changed direction (all its
 * shards or none; a direction that took the change is put back if the
 * other refuses). On success *result is {"file", "applied", "config"}; on
 * failure *code and msg say why, and *keys (if not NULL) lists the keys
 * that need a restart (a json_t array, caller decrefs). Logs what it did.
 * via says who asked ("SIGHUP", "config.reload").
 */
int ctl_reload_run(const struct ctl_backend *be, const char *via, void **result,
		   enum ctl_error *code, char *msg, size_t msglen, void **keys);

/*
 * SIGHUP: the handler only notes the signal (async-signal-safe); the
 * control loop calls ctl_reload_poll between polls, which reloads if one
 * came.
 */
void ctl_reload_on_sighup(int sig);
void ctl_reload_poll(const struct ctl_backend *be);

/*
 * config.save: write running[] (each direction's settings now) back into
 * the file at path, atomically (a temporary file in the same directory,
 * fsync, rename), changing only the direction keys whose values differ
 * from what the file says and keeping everything else (comments, order,
 * the other sections, the indentation). The new file keeps the old one's
 * owner and mode and, with strict_modes, must pass StrictModes; the old one
 * stays beside it, its name plus CTL_CONFIG_BACKUP_SUFFIX. skip_rate[d]:
 * leave the bandwidth alone (autorate moves it). Returns 1 if the file was
 * written, 0 if it already said the same, -1 with err.
 * written[] gets the keys written per direction when not NULL.
 */
#define CTL_CONFIG_BACKUP_SUFFIX ".bak"

int ctl_config_save_file(const char *path, const struct sched_params running[SHAPER_NUM_DIRS],
			 const bool skip_rate[SHAPER_NUM_DIRS], bool strict_modes,
			 struct ctl_reload_plan *written, char *err, size_t errlen);

/* config.save against a backend; *result as config.save replies. */
int ctl_config_save(const struct ctl_backend *be, void **result, enum ctl_error *code, char *msg,
		    size_t msglen);

#endif
