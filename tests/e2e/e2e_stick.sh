#!/usr/bin/env bash
# End to end, one port on a stick (ports.single): shaperd's one af_packet
# port is the trunk of a switch with the server on VLAN 100 (wan_vlan) and
# the client on VLAN 200 (lan_vlan) (tools/testbed/bed.sh up PREFIX stick).
# Ping and IPv6 ping cross both ways (so ARP and neighbour discovery do),
# each direction holds its own rate by the shaper's own clock (within 1 %),
# frames on a third VLAN and untagged ones are dropped as other_vlan, stats
# show one port, and the daemon exits with every mbuf back and its counters
# balanced. About 12 s.
#
# usage: e2e_stick.sh SHAPERD   (root; 77 = skipped otherwise)
set -uo pipefail

shaperd=$1
here=$(cd "$(dirname "$0")" && pwd)
bed="$here/../../tools/testbed/bed.sh"
pfx="stk$$"
pfx=${pfx:0:8}
tmp=$(mktemp -d /tmp/shaper_stick.XXXXXX)
fails=0
pid=
DOWN_MBIT=30
UP_MBIT=12

if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v iperf3 >/dev/null ||
	! command -v ping >/dev/null; then
	echo "SKIP: needs root, iproute2, iperf3 and ping"
	exit 77
fi

cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	ip netns pids "${pfx}srv" 2>/dev/null | xargs -r kill 2>/dev/null
	bash "$bed" down "$pfx" >/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

ok() { echo "ok   $*"; }
fail() {
	echo "FAIL $*"
	fails=$((fails + 1))
}

stats() { # [direction]: the stats reply's result as JSON
	/usr/bin/python3 - "$tmp/s.sock" "${1:-}" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
args = {"direction": sys.argv[2]} if sys.argv[2] else {}
s.sendall(json.dumps({"id": 1, "cmd": "stats", "args": args}).encode() + b"\n")
buf = b""
while not buf.endswith(b"\n"):
    buf += s.recv(65536)
print(json.dumps(json.loads(buf)["result"]))
PY
}

bash "$bed" up "$pfx" stick || exit 1

cat >"$tmp/s.json" <<JSON
{"ports": {"single": "net_af_packet0,iface=${pfx}stk0", "wan_vlan": 100, "lan_vlan": 200},
 "upstream": {"discipline": "fifo", "bandwidth": "${UP_MBIT}mbit", "limit": 200},
 "downstream": {"discipline": "fifo", "bandwidth": "${DOWN_MBIT}mbit", "limit": 200},
 "control": {"socket": "$tmp/s.sock"}, "dataplane": {"idle_sleep": "20us", "rt_priority": 50}}
JSON
"$shaperd" --no-huge -m 512 --no-pci --file-prefix="$pfx" -l 0,1 --log-level=lib.eal:warning \
	-- -c "$tmp/s.json" --stats-file "$tmp/s.stats" >"$tmp/s.log" 2>&1 &
pid=$!
for _ in $(seq 50); do
	grep -q bridging "$tmp/s.log" && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if ! grep -q bridging "$tmp/s.log"; then
	cat "$tmp/s.log"
	fail "shaperd did not start"
	exit 1
fi
grep -q "single port: the WAN on VLAN 100, the LAN on VLAN 200" "$tmp/s.log" &&
	ok "the log names both VLANs" || fail "no 'single port: the WAN on VLAN 100...' line"

# 1. ARP, ping and neighbour discovery cross, each way moved to the other VLAN.
ip netns exec "${pfx}cli" ping -c 5 -i 0.2 -W 2 10.99.0.2 >"$tmp/ping" &&
	ok "ping LAN->WAN (ARP crossed): $(tail -1 "$tmp/ping")" || fail "ping LAN->WAN"
ip netns exec "${pfx}srv" ping -c 5 -i 0.2 -W 2 10.99.0.1 >"$tmp/ping" &&
	ok "ping WAN->LAN: $(tail -1 "$tmp/ping")" || fail "ping WAN->LAN"
ip netns exec "${pfx}cli" ping -6 -c 3 -i 0.2 -W 2 fd99::2 >"$tmp/ping" &&
	ok "ping6 (neighbour discovery crossed)" || fail "ping6 LAN->WAN"
ip -n "${pfx}cli" neigh show 10.99.0.2 | grep -q lladdr &&
	ok "the client learnt the server's MAC by ARP" || fail "no ARP entry for the server"

# 2. Each direction at its own rate: the frame bytes the shaper sent in the
# time it held a backlog over that time, less the time its worker was not
# scheduled (written off, never made up), once it has owed the rate for two
# seconds, as e2e_bridge.sh judges it (tools/shaperlib/owed.py).
rate_check() { # direction, Mbit/s
	/usr/bin/python3 "$here/../../tools/shaperlib/owed.py" "$tmp/s.sock" "$1" "$2" \
		"shaped $1 at $2 Mbit/s"
}
for dir in upstream downstream; do
	ip netns exec "${pfx}srv" iperf3 -s -1 -D -B 10.99.0.2 >/dev/null 2>&1
	sleep 0.3
	if [ $dir = upstream ]; then
		ip netns exec "${pfx}cli" iperf3 -c 10.99.0.2 -t 6 >/dev/null 2>&1 &
		rate_check upstream $UP_MBIT || fails=$((fails + 1))
	else
		ip netns exec "${pfx}cli" iperf3 -c 10.99.0.2 -t 6 -R >/dev/null 2>&1 &
		rate_check downstream $DOWN_MBIT || fails=$((fails + 1))
	fi
	wait $!
done

# 3. Frames on VLAN 300 and untagged frames reach the port: dropped by name,
# in the downstream's counters, not sent back to the switch.
before=$(stats | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)
print(r["directions"]["downstream"]["drop_reasons"]["other_vlan"], r["ports"]["single"]["tx_packets"])')
ip netns exec "${pfx}sw" /usr/bin/python3 "$here/../../tools/testbed/vlan_switch.py" inject stk 20
sleep 0.5
after=$(stats | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)
print(r["directions"]["downstream"]["drop_reasons"]["other_vlan"], r["ports"]["single"]["tx_packets"],
      r["directions"]["upstream"]["drop_reasons"]["other_vlan"], ",".join(sorted(r["ports"])))')
set -- $before $after
[ $(($3 - $1)) = 40 ] && ok "other_vlan: the 40 frames on VLAN 300 or untagged dropped by name" ||
	fail "other_vlan counted $(($3 - $1)) of 40 injected frames"
# Idle otherwise: anything sent meanwhile would be a frame echoed (ARP and
# ping are done; a few stray frames of the kernel's own are allowed).
[ $(($4 - $2)) -lt 5 ] && ok "none sent back: $(($4 - $2)) frames out meanwhile" ||
	fail "$(($4 - $2)) frames sent while 40 foreign ones came in"
[ "$5" = 0 ] && ok "upstream other_vlan 0" || fail "upstream other_vlan $5"
[ "$6" = single ] && ok "stats list one port, \"single\"" || fail "stats ports: $6"

# 4. A clean exit: every frame counted, every mbuf back, one port in the table.
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
[ $rc = 0 ] && ok "shaperd exited cleanly" || fail "shaperd exit code $rc"
/usr/bin/python3 - "$tmp/s.stats" "$here/../../tools" <<'PY' || fails=$((fails + 1))
import json, sys
sys.path.insert(0, sys.argv[2])
from shaperlib import check, check_accounting, failures
st = json.load(open(sys.argv[1]))
for d, v in st["directions"].items():
    check(v["rx_packets"] > 0, "%s: rx %d frames" % (d, v["rx_packets"]))
check_accounting(st, "at exit")
p = st["ports"]["single"]
rx = sum(v["rx_packets"] for v in st["directions"].values())
tx = sum(v["tx_packets"] for v in st["directions"].values())
check(p["rx_packets"] == rx and p["tx_packets"] == tx,
      "the port's rx %d and tx %d are the two directions' (%d, %d)" % (p["rx_packets"], p["tx_packets"], rx, tx))
check(st["mbufs_in_use"] == 0, "mbufs in use at exit %d" % st["mbufs_in_use"])
sys.exit(1 if failures else 0)
PY

[ $fails = 0 ] && echo "all checks passed" || echo "$fails check(s) failed"
exit $((fails != 0))
