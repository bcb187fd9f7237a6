/*
 * The configuration in tc's words: the commands that give a Linux
 * interface the same CAKE, fq_codel or FIFO settings, for the kernel path
 * that forwards while shaperd does not (fail-open; docs/deployment.md).
 */
#ifndef SHAPER_TC_TRANSLATE_H
#define SHAPER_TC_TRANSLATE_H

#include <stddef.h>

#include "shaper/config.h"

/*
 * tc commands for both directions into out: upstream (LAN to WAN) on the
 * WAN interface's egress, downstream on the LAN interface's. The interfaces
 * are the ports' iface= where they have one, else WAN_IF / LAN_IF. What tc
 * cannot say (mtu, lag_limit, the emulator, autorate's bounds) is listed in
 * "#" lines. Returns 0, or -1 if out is too small.
 */
int shaper_config_tc(const struct shaper_config *c, char *out, size_t len);

#endif
