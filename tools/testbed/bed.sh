#!/usr/bin/env bash
# The namespace bed (tools/testbed/run.py and the e2e suite run on it):
#
#   netns <pfx>cli            root netns (shaperd)              netns <pfx>srv
#   eth0 10.99.0.1/24 ==veth== lan0 [LAN port]  [WAN port] wan0 ==veth== eth0 10.99.0.2/24
#
# usage: bed.sh up|down|status [PREFIX] [modem|stick]
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
#
# With "stick", shaperd has one port, the trunk of a switch in a namespace
# <pfx>sw (vlan_switch.py, in user space: these kernels may have no 802.1Q
# interfaces or VLAN-filtering bridge): the server's access port on VLAN
# 100, the client's on VLAN 200, and only shaperd joins them (ports.single
# with wan_vlan 100 and lan_vlan 200):
#
#   <pfx>cli eth0 ==veth== cli:200 [<pfx>sw: vlan_switch.py] stk ==veth== stk0 [shaperd]
#   <pfx>srv eth0 ==veth== srv:100 [<pfx>sw]
set -euo pipefail

cmd=${1:-}
pfx=${2:-shp}
cli=${pfx}cli
srv=${pfx}srv
lan=${pfx}lan0
wan=${pfx}wan0
mdm=${pfx}mdm
sw=${pfx}sw
stk=${pfx}stk0
modem=${3:-}
here=$(cd "$(dirname "$0")" && pwd)

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
	if [ "$modem" = stick ]; then
		ip netns add "$sw"
		ip link add "$stk" type veth peer name stk netns "$sw"
		ip -n "$sw" link add cli type veth peer name eth0 netns "$cli"
		ip -n "$sw" link add srv type veth peer name eth0 netns "$srv"
		for ifc in stk cli srv; do
			sysctl -qw "net.ipv6.conf.$ifc.disable_ipv6=1" 2>/dev/null || true
			ip netns exec "$sw" sysctl -qw "net.ipv6.conf.$ifc.disable_ipv6=1" || true
			ip -n "$sw" link set "$ifc" up
			offloads_off "$sw" "$ifc"
		done
		ip -n "$sw" link set lo up
		ip netns exec "$sw" setsid /usr/bin/python3 "$here/vlan_switch.py" run stk cli:200 srv:100 \
			</dev/null >/dev/null 2>&1 &
		echo $! >"/run/shaper-bed-$pfx-switch.pid"
	else
		ip link add "$lan" type veth peer name eth0 netns "$cli"
	fi
	if [ "$modem" = stick ]; then
		:
	elif [ "$modem" = modem ]; then
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
	ends=("$lan" "$wan")
	[ "$modem" = stick ] && ends=("$stk")
	for ifc in "${ends[@]}"; do
		# The bridge ends carry no addresses and no IPv6 chatter of their own.
		sysctl -qw "net.ipv6.conf.$ifc.disable_ipv6=1" 2>/dev/null || true
		ip link set "$ifc" up
		offloads_off "" "$ifc"
	done
	if [ "$modem" = stick ]; then
		echo "bed $pfx up: $cli(10.99.0.1) -- VLAN 200 [$sw] $stk [shaperd] [$sw] VLAN 100 -- $srv(10.99.0.2)"
	else
		echo "bed $pfx up: $cli(10.99.0.1) -- $lan [shaperd] $wan --${modem:+ [$mdm] --} $srv(10.99.0.2)"
	fi
}

down() {
	local pidf="/run/shaper-bed-$pfx-switch.pid"
	if [ -f "$pidf" ]; then
		kill "$(cat "$pidf")" 2>/dev/null || true
		rm -f "$pidf"
	fi
	ip netns del "$sw" 2>/dev/null || true
	ip link del "$stk" 2>/dev/null || true
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
	echo "usage: $0 up|down|status [PREFIX] [modem|stick]" >&2
	exit 2
	;;
esac
