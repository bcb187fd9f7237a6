#!/usr/bin/env bash
# The main job: build shaperd, make the namespace bed (client on the LAN side,
# server on the WAN side, shaperd between them on af_packet ports, 40 ms of
# base RTT from its delay line) and run an RRUL-like test through it at
# 100 Mbit/s down / 20 Mbit/s up: 5 s of idle latency probes, then 4 TCP
# uploads + 4 downloads marked BE, CS1, CS5, EF with ICMP and UDP (BE, EF)
# probes every 20 ms. First through a bloated FIFO (a modem-like 1000-packet
# buffer at the same rates), then through CAKE. Prints idle and loaded
# latency and goodput, and writes a plot (build/demo/rrul.png).
# Installs what is missing; safe to run twice. Run as root. About 2 minutes.
#
# usage: demo.sh [run.py options]   e.g. demo.sh --duration 30
#        (DEMO_LOAD_SECONDS=N sets the seconds of load, default 15)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

if [ "$(id -u)" != 0 ]; then
	echo "demo: run as root (it makes network namespaces)" >&2
	exit 1
fi
bash tools/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null

out=$root/build/demo
echo "demo: rrul through a bloated FIFO, then through CAKE (~$(((${DEMO_LOAD_SECONDS:-15} + 12) * 2)) s)"
/usr/bin/python3 tools/testbed/run.py rrul --shaperd "$root/build/src/shaperd" \
	--down 100mbit --up 20mbit --rtt 40ms --duration "${DEMO_LOAD_SECONDS:-15}" \
	--disciplines fifo,cake --prefix shp --out "$out" "$@" >"$out.log" 2>&1 || {
	echo "demo: the run failed; its log:" >&2
	tail -30 "$out.log" >&2
	exit 1
}

# The short version: what a user on this link would feel.
/usr/bin/python3 - "$out/rrul.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print()
print("%-6s %10s %12s %12s %13s %13s" % ("", "idle RTT", "loaded RTT", "loaded p99", "download", "upload"))
for name, d in r["disciplines"].items():
    i, l = d["phases"]["idle"]["latency"]["udp_BE"], d["phases"]["loaded"]["latency"]["udp_BE"]
    g = d["phases"]["loaded"]["goodput"]
    print("%-6s %7.1f ms %9.1f ms %9.1f ms %8.1f Mbit %8.1f Mbit" % (
        name, i["median"], l["median"], l["p99"], g["down"]["total"], g["up"]["total"]))
print("(UDP probe medians; base RTT %g ms; goodput is TCP payload at %g/%g Mbit/s shaped)" % (
    r["params"]["rtt_ms"], r["params"]["down_mbit"], r["params"]["up_mbit"]))
PY
echo "plot: $out/rrul.png   data: $out/rrul.json   full table: $out.log"
