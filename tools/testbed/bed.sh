#!/usr/bin/env bash
# The namespace bed (tools/testbed/run.py and the e2e suite run on it):
#
#   netns <pfx>cli            root netns (shaperd)              netns <pfx>srv
#   eth0 10.99.0.1/24 ==veth== lan0 [LAN port]  [WAN port] wan0 ==veth== eth0 10.99.0.2/24
#
# usage: bed.sh up|down|status [PREFIX]
# PREFIX (default "shp") names the namespaces and veths, so parallel beds
# do not collide: <pfx>cli, <pfx>srv, <pfx>lan0, <pfx>wan0.
set -euo pipefail

cmd=${1:-}
pfx=${2:-shp}
cli=${pfx}cli
srv=${pfx}srv
lan=${pfx}lan0
wan=${pfx}wan0

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
	ip link add "$wan" type veth peer name eth0 netns "$srv"
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
	echo "bed $pfx up: $cli(10.99.0.1) -- $lan [shaperd] $wan -- $srv(10.99.0.2)"
}

down() {
	ip netns del "$cli" 2>/dev/null || true
	ip netns del "$srv" 2>/dev/null || true
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
	echo "usage: $0 up|down|status [PREFIX]" >&2
	exit 2
	;;
esac
