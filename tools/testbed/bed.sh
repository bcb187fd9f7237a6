#!/usr/bin/env bash
# The namespace bed (tools/testbed/run.py and the e2e suite run on it):
#
#   netns <pfx>cli            root netns (shaperd)              netns <pfx>srv
#   eth0 10.99.0.1/24 ==veth== lan0 [LAN port]  [WAN port] wan0 ==veth== eth0 10.99.0.2/24
#
# usage: bed.sh up|down|status [PREFIX] [modem]
# PREFIX (default "shp") names the namespaces and veths, so parallel beds
# do not collide: <pfx>cli, <pfx>srv, <pfx>lan0, <pfx>wan0.
#
# With "modem", a third namespace <pfx>mdm sits between the WAN port and the
# server, its two veths in a Linux bridge:
#
#   [WAN port] wan0 ==veth== wan [<pfx>mdm: bridge] srv ==veth== eth0 <pfx>srv
#
# A qdisc on <pfx>mdm's "wan" (towards shaperd) is then a downstream modem
# that the server's TCP cannot see: on the server's own eth0 it would be,
# and TCP small queues (the kernel's per-socket limit of about 1 ms of the
# pacing rate in its host's qdiscs) would keep the "modem" nearly empty,
# as no modem at the far end of a line is.
set -euo pipefail

cmd=${1:-}
pfx=${2:-shp}
cli=${pfx}cli
srv=${pfx}srv
lan=${pfx}lan0
wan=${pfx}wan0
mdm=${pfx}mdm
modem=${3:-}

offloads_off() { # netns-or-empty ifname
	local ns=$1 ifc=$2 run=()
	[ -n "$ns" ] && run=(ip netns exec "$ns")
	# af_packet hands DPDK frames with unfinished checksums unless these are off.
	"${run[@]}" ethtool -K "$ifc" tx off rx off gso off tso off gro off >/dev/null 2>&1 || true
}

up() {
	down quiet
	ip netns add "$cli"
	ip netns add "$srv"
	ip link add "$lan" type veth peer name eth0 netns "$cli"
	if [ "$modem" = modem ]; then
		ip netns add "$mdm"
		ip link add "$wan" type veth peer name wan netns "$mdm"
		ip -n "$mdm" link add srv type veth peer name eth0 netns "$srv"
		ip -n "$mdm" link add br0 type bridge forward_delay 0
		for ifc in wan srv; do
			ip -n "$mdm" link set "$ifc" master br0
			ip -n "$mdm" link set "$ifc" up
			offloads_off "$mdm" "$ifc"
		done
		ip -n "$mdm" link set lo up
		ip -n "$mdm" link set br0 up
	else
		ip link add "$wan" type veth peer name eth0 netns "$srv"
	fi
	ip netns exec "$cli" ip addr add 10.99.0.1/24 dev eth0
	ip netns exec "$srv" ip addr add 10.99.0.2/24 dev eth0
	ip netns exec "$cli" ip -6 addr add fd99::1/64 dev eth0 nodad
	ip netns exec "$srv" ip -6 addr add fd99::2/64 dev eth0 nodad
	for ns in "$cli" "$srv"; do
		ip netns exec "$ns" ip link set lo up
		ip netns exec "$ns" ip link set eth0 up
		offloads_off "$ns" eth0
	done
	for ifc in "$lan" "$wan"; do
		# The bridge ends carry no addresses and no IPv6 chatter of their own.
		sysctl -qw "net.ipv6.conf.$ifc.disable_ipv6=1" 2>/dev/null || true
		ip link set "$ifc" up
		offloads_off "" "$ifc"
	done
	echo "bed $pfx up: $cli(10.99.0.1) -- $lan [shaperd] $wan --${modem:+ [$mdm] --} $srv(10.99.0.2)"
}

down() {
	ip netns del "$cli" 2>/dev/null || true
	ip netns del "$srv" 2>/dev/null || true
	ip netns del "$mdm" 2>/dev/null || true
	ip link del "$lan" 2>/dev/null || true
	ip link del "$wan" 2>/dev/null || true
	[ "${1:-}" = quiet ] || echo "bed $pfx down"
}

case "$cmd" in
up) up ;;
down) down ;;
status)
	ip netns list | grep -E "^($cli|$srv)\b" || echo "no bed $pfx"
	;;
*)
	echo "usage: $0 up|down|status [PREFIX] [modem]" >&2
	exit 2
	;;
esac
