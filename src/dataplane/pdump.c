/*
 * dataplane.pdump: rte_pdump lets dpdk-dumpcap, a secondary process, ask
 * us to copy each frame a port receives or sends into its own pool. While
 * nobody captures, the ports carry no callbacks and the workers pay nothing.
 */
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_pdump.h>

#include "shaper/pdump.h"

int
dp_pdump_init(char *err, size_t errlen)
{
	char path[PATH_MAX];
	struct stat st;

	/* A secondary maps the primary's hugepage files: anonymous memory has none. */
	if (!rte_eal_has_hugepages()) {
		snprintf(err, errlen,
			 "dpdk-dumpcap cannot attach to a process started with --no-huge "
			 "(a secondary process maps the primary's hugepages): reserve "
			 "hugepages and start without --no-huge, or set it false");
		return -1;
	}
	/*
	 * A secondary connects to EAL's multi-process socket, which --in-memory
	 * and --no-shconf leave out; rte_pdump_init succeeds without it, so look.
	 */
	snprintf(path, sizeof(path), "%s/mp_socket", rte_eal_get_runtime_dir());
	if (stat(path, &st) != 0 || !S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen,
			 "EAL's multi-process channel is off (no %s; --in-memory and "
			 "--no-shconf turn it off): dpdk-dumpcap needs it to attach; start "
			 "without those options, or set it false",
			 path);
		return -1;
	}
	if (rte_pdump_init() != 0) {
		snprintf(err, errlen, "rte_pdump_init: %s", rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

void
dp_pdump_uninit(void)
{
	rte_pdump_uninit();
}
