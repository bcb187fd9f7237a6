-- shaper_load.lua: offered load through shaperd, measured at both ends.
--
-- Port 0 sends into shaperd's LAN port (upstream), port 1 receives what
-- shaperd's WAN port delivers. Many flows come from range mode: SRC_IPS
-- source hosts x SRC_PORTS source ports (x DST_IPS servers).
--
-- Run inside pktgen (built with -Denable_lua=true):
--   pktgen ... -- -P -m "[2:3].0,[4:5].1" -f tools/pktgen/shaper_load.lua
-- or send it to a running pktgen's Lua socket (pktgen -G):
--   socat - TCP4:localhost:22022 < tools/pktgen/shaper_load.lua
--
-- Edit the settings below. RATE is a percent of the port's reported link
-- speed: on memif (which reports 100G) RATE = 1 is 1 Gbit/s, i.e. about
-- 1.49 Mpps of 64-byte frames; never use 100 there (pktgen would try to
-- send 148.8 Mpps and measure its own limit, not shaperd's).

package.path = package.path .. ";?.lua;test/?.lua;app/?.lua;"
require "Pktgen"

local SEND      = "0"      -- into shaperd's LAN port
local RECV      = "1"      -- from shaperd's WAN port
local SIZE      = 64       -- frame size incl. FCS (64..1518)
local RATE      = 1        -- percent of link speed (memif: 1 = 1 Gbit/s)
local WARMUP_MS = 2000
local MEASURE_MS = 10000
local PROTO     = "udp"    -- "udp" or "tcp"
local SRC_IP    = "10.0.0.1"   -- LAN hosts 10.0.0.1 ..
local SRC_IPS   = 100          -- .. this many hosts
local DST_IP    = "198.18.0.1" -- servers 198.18.0.1 ..
local DST_IPS   = 16
local SRC_PORT  = 10000
local SRC_PORTS = 100          -- flows = SRC_IPS x SRC_PORTS (x DST_IPS)
local DST_PORT  = 443
local TOS       = 0            -- DS byte (DSCP << 2): 0 BE, 32 CS1, 136 AF41, 184 EF

local function ip_plus(ip, n)
	local a, b, c, d = ip:match("(%d+)%.(%d+)%.(%d+)%.(%d+)")
	local v = ((tonumber(a) * 256 + tonumber(b)) * 256 + tonumber(c)) * 256 + tonumber(d) + n
	return string.format("%d.%d.%d.%d", (v >> 24) & 255, (v >> 16) & 255, (v >> 8) & 255, v & 255)
end

local function setup()
	pktgen.stop("all")
	pktgen.reset(SEND)
	pktgen.set_type(SEND, "ipv4")
	pktgen.set_proto(SEND, PROTO)
	pktgen.set(SEND, "size", SIZE)
	pktgen.set(SEND, "rate", RATE)
	pktgen.set(SEND, "count", 0)
	pktgen.set(SEND, "burst", 32)

	pktgen.range.ip_proto(SEND, PROTO)
	pktgen.range.pkt_size(SEND, "start", SIZE)
	pktgen.range.pkt_size(SEND, "min", SIZE)
	pktgen.range.pkt_size(SEND, "max", SIZE)
	pktgen.range.pkt_size(SEND, "inc", 0)

	pktgen.range.src_ip(SEND, "start", SRC_IP)
	pktgen.range.src_ip(SEND, "min", SRC_IP)
	pktgen.range.src_ip(SEND, "max", ip_plus(SRC_IP, SRC_IPS - 1))
	pktgen.range.src_ip(SEND, "inc", "0.0.0.1")

	pktgen.range.dst_ip(SEND, "start", DST_IP)
	pktgen.range.dst_ip(SEND, "min", DST_IP)
	pktgen.range.dst_ip(SEND, "max", ip_plus(DST_IP, DST_IPS - 1))
	pktgen.range.dst_ip(SEND, "inc", "0.0.0.1")

	pktgen.range.src_port(SEND, "start", SRC_PORT)
	pktgen.range.src_port(SEND, "min", SRC_PORT)
	pktgen.range.src_port(SEND, "max", SRC_PORT + SRC_PORTS - 1)
	pktgen.range.src_port(SEND, "inc", 1)

	pktgen.range.dst_port(SEND, "start", DST_PORT)
	pktgen.range.dst_port(SEND, "min", DST_PORT)
	pktgen.range.dst_port(SEND, "max", DST_PORT)
	pktgen.range.dst_port(SEND, "inc", 0)

	-- range.tos exists in pktgen 23.x; skip quietly where it does not.
	if pktgen.range.tos ~= nil then
		pktgen.range.tos(SEND, "start", TOS)
		pktgen.range.tos(SEND, "min", TOS)
		pktgen.range.tos(SEND, "max", TOS)
		pktgen.range.tos(SEND, "inc", 0)
	end
	pktgen.set_range(SEND, "on")
end

local function counters()
	local s = pktgen.portStats(SEND, "port")[tonumber(SEND)]
	local r = pktgen.portStats(RECV, "port")[tonumber(RECV)]
	return { tx = s.opackets, txb = s.obytes, rx = r.ipackets, rxb = r.ibytes }
end

local function report(a, b, secs)
	local txp = (b.tx - a.tx) / secs
	local rxp = (b.rx - a.rx) / secs
	printf("offered   %8.3f Mpps  %8.3f Gbit/s (frame bytes, no FCS)\n", txp / 1e6,
	       (b.txb - a.txb) * 8 / secs / 1e9)
	printf("delivered %8.3f Mpps  %8.3f Gbit/s\n", rxp / 1e6, (b.rxb - a.rxb) * 8 / secs / 1e9)
	printf("lost in shaperd (drops + queue) %.2f %%\n", txp > 0 and (1 - rxp / txp) * 100 or 0)
end

setup()
pktgen.clr()
printf("shaper_load: %d B frames, rate %s %%, %d x %d flows, %d s\n", SIZE, RATE,
       SRC_IPS, SRC_PORTS, MEASURE_MS / 1000)
pktgen.start(SEND)
pktgen.delay(WARMUP_MS)
local a = counters()
pktgen.delay(MEASURE_MS)
local b = counters()
pktgen.stop(SEND)
report(a, b, MEASURE_MS / 1000)
