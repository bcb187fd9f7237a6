/*
 * Packet capture with dpdk-dumpcap (dataplane.pdump): shaperd, the primary
 * process, answers a secondary's requests to copy a port's frames to it.
 */
#ifndef SHAPER_PDUMP_H
#define SHAPER_PDUMP_H

#include <stddef.h>

/*
 * After rte_eal_init: refuses what no secondary process can attach to
 * (--no-huge; --in-memory or --no-shconf, which turn EAL's multi-process
 * channel off) with why in err, so the daemon fails to start rather than
 * leave dumpcap hanging. 0 = dumpcap may attach.
 */
int dp_pdump_init(char *err, size_t errlen);
void dp_pdump_uninit(void);

#endif
