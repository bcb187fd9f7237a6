/*
 * Control access levels. The kernel vouches for a Unix socket's peer
 * (SO_PEERCRED, SO_PEERGROUPS), so the level is decided once per
 * connection from who the peer is and which socket it came in on.
 */
#include "shaper/control.h"

static bool
in_admin_group(const struct ctl_access *a, const struct ctl_peer *p)
{
	if (!a->has_admin_gid)
		return false;
	if (p->gid == a->admin_gid)
		return true;
	for (unsigned int i = 0; i < p->n_groups && i < CTL_PEER_GROUPS; i++)
		if (p->groups[i] == a->admin_gid)
			return true;
	return false;
}

enum shaper_level
ctl_access_level(const struct ctl_access *a, const struct ctl_peer *p)
{
	enum shaper_level l = a->default_level;

	if (p->known && (p->uid == 0 || p->uid == a->daemon_uid || in_admin_group(a, p)))
		l = SHAPER_LEVEL_ADMIN;
	return l < a->socket_level ? l : a->socket_level;
}
