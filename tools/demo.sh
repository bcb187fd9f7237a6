#!/usr/bin/env bash
# The main job on an embedded default: build shaperd, make the namespace bed
# (client on the LAN side, server on the WAN side), and measure ping latency
# idle and under a full TCP load in both directions, first through a bloated
# FIFO (a modem-like 1000-packet buffer at the same rates), then through CAKE.
# Installs what is missing; safe to run twice. Run as root.
#
# usage: demo.sh [CONFIG.json]   (default config/af-packet-bed.json)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
config=${1:-config/af-packet-bed.json}
load_s=${DEMO_LOAD_SECONDS:-12}

if [ "$(id -u)" != 0 ]; then
	echo "demo: run as root (it makes network namespaces)" >&2
	exit 1
fi
bash tools/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
shaperd=$root/build/src/shaperd

tmp=$(mktemp -d /tmp/shaper_demo.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	ip netns pids shpsrv 2>/dev/null | xargs -r kill 2>/dev/null
	ip netns pids shpcli 2>/dev/null | xargs -r kill 2>/dev/null
	bash tools/testbed/bed.sh down shp >/dev/null
}
trap cleanup EXIT
bash tools/testbed/bed.sh up shp

# The FIFO baseline: same ports and rates, one big tail-drop queue per direction.
/usr/bin/python3 - "$config" "$tmp" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg.setdefault("control", {})["enabled"] = False
json.dump(cfg, open(sys.argv[2] + "/cake.json", "w"), indent=1)
for d in ("upstream", "downstream"):
    cfg[d] = {"discipline": "fifo", "bandwidth": cfg[d].get("bandwidth", "unlimited"), "limit": 1000}
json.dump(cfg, open(sys.argv[2] + "/fifo.json", "w"), indent=1)
PY

run() { # name
	local name=$1
	"$shaperd" --no-huge -m 512 --no-pci --file-prefix="demo_$name" -l 0,1 \
		--log-level=lib.eal:warning -- -c "$tmp/$name.json" --stats-file "$tmp/$name.stats" \
		>"$tmp/$name.log" 2>&1 &
	pid=$!
	for _ in $(seq 50); do grep -q bridging "$tmp/$name.log" && break; sleep 0.1; done
	grep -q bridging "$tmp/$name.log" || { cat "$tmp/$name.log"; exit 1; }
	echo "demo: $name: idle ping for 3 s, then 4 uploads + 4 downloads for ${load_s} s"
	ip netns exec shpcli ping -c 30 -i 0.1 10.99.0.2 >"$tmp/$name.idle"
	ip netns exec shpsrv iperf3 -s -1 -D -p 5201 >/dev/null
	ip netns exec shpsrv iperf3 -s -1 -D -p 5202 >/dev/null
	sleep 0.3
	ip netns exec shpcli iperf3 -c 10.99.0.2 -p 5201 -P 4 -t "$load_s" -J >"$tmp/$name.up" 2>&1 &
	local up=$!
	ip netns exec shpcli iperf3 -c 10.99.0.2 -p 5202 -P 4 -t "$load_s" -R -J >"$tmp/$name.down" 2>&1 &
	local down=$!
	sleep 3 # let the queues fill
	ip netns exec shpcli ping -c $(((load_s - 4) * 10)) -i 0.1 10.99.0.2 >"$tmp/$name.loaded" || true
	wait $up $down || true
	kill -TERM "$pid"
	wait "$pid" || true
	pid=
}

run fifo
run cake

/usr/bin/python3 - "$tmp" <<'PY'
import json, re, statistics, sys
tmp = sys.argv[1]
def rtts(path):
    return [float(x) for x in re.findall(r"time=([\d.]+) ms", open(path).read())]
def mbit(path):
    try:
        return json.load(open(path))["end"]["sum_received"]["bits_per_second"] / 1e6
    except Exception:
        return float("nan")
print()
print("%-6s %12s %14s %14s %12s %14s" % ("", "idle ping ms", "loaded ms p50", "loaded ms p90", "upload Mbit", "download Mbit"))
for name in ("fifo", "cake"):
    idle, loaded = rtts(tmp + "/%s.idle" % name), rtts(tmp + "/%s.loaded" % name)
    p90 = sorted(loaded)[int(0.9 * (len(loaded) - 1))] if loaded else float("nan")
    print("%-6s %12.2f %14.2f %14.2f %12.1f %14.1f" % (
        name, statistics.median(idle), statistics.median(loaded) if loaded else float("nan"), p90,
        mbit(tmp + "/%s.up" % name), mbit(tmp + "/%s.down" % name)))
print("\nraw results in", tmp)
PY
