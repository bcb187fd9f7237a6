-- shaper_rate.lua: does shaperd deliver its configured rate (within 1 %)?
--
-- Offer more than the shaper's rate on port 0 (shaperd's LAN side) and
-- measure what arrives on port 1 (its WAN side) over a steady interval.
-- shaperd's rates count frame bytes without FCS unless an overhead keyword
-- is configured; so does pktgen's ibytes, so the two compare directly.
--
--   shaperd config: "upstream": {"discipline": "cake", "bandwidth": "1gbit"}
--   pktgen:         -f tools/pktgen/shaper_rate.lua
--
-- memif reports a 100G link: OFFER = 2 offers 2 Gbit/s (on a 10G NIC, 20).

package.path = package.path .. ";?.lua;test/?.lua;app/?.lua;"
require "Pktgen"

local SEND       = "0"
local RECV       = "1"
local SIZE       = 1518     -- frame size incl. FCS; 64 checks per-packet cost too
local OFFER      = 2        -- percent of the link speed
local EXPECT_BPS = 1e9      -- shaperd's configured bandwidth, bit/s
local TOLERANCE  = 0.01
local WARMUP_MS  = 3000     -- let the queue fill and CoDel settle
local MEASURE_MS = 10000

pktgen.stop("all")
pktgen.reset(SEND)
pktgen.set_type(SEND, "ipv4")
pktgen.set_proto(SEND, "udp")
pktgen.set_ipaddr(SEND, "src", "10.0.0.1/24")
pktgen.set_ipaddr(SEND, "dst", "198.18.0.1")
pktgen.set(SEND, "size", SIZE)
pktgen.set(SEND, "rate", OFFER)
pktgen.set(SEND, "count", 0)
pktgen.set_range(SEND, "off")
pktgen.clr()

pktgen.start(SEND)
pktgen.delay(WARMUP_MS)
local r0 = pktgen.portStats(RECV, "port")[tonumber(RECV)]
local s0 = pktgen.portStats(SEND, "port")[tonumber(SEND)]
pktgen.delay(MEASURE_MS)
local r1 = pktgen.portStats(RECV, "port")[tonumber(RECV)]
local s1 = pktgen.portStats(SEND, "port")[tonumber(SEND)]
pktgen.stop(SEND)

local secs = MEASURE_MS / 1000
local offered = (s1.obytes - s0.obytes) * 8 / secs
local got = (r1.ibytes - r0.ibytes) * 8 / secs
local err = got / EXPECT_BPS - 1
printf("offered %.3f Gbit/s, delivered %.4f Gbit/s, expected %.4f: %+.2f %% -> %s\n",
       offered / 1e9, got / 1e9, EXPECT_BPS / 1e9, err * 100,
       math.abs(err) <= TOLERANCE and "PASS" or "FAIL")
if offered < EXPECT_BPS * 1.2 then
	printf("warning: offered load is not above the shaped rate; raise OFFER\n")
end
