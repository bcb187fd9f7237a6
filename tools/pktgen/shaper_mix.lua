-- shaper_mix.lua: IMIX sizes and a DSCP mix over every diffserv4 tin, from
-- pktgen's sequence mode (12 packets per cycle, one flow each):
--   7 x 64 B, 4 x 594 B, 1 x 1518 B (IMIX 7:4:1), DS bytes of BE, CS1
--   (Bulk), AF41/CS3 (Video) and EF/CS5 (Voice).
-- Check per-tin counters with `shapectl stats` (or the control socket's
-- "stats": directions.upstream.tins[]) while it runs.
--
--   pktgen ... -f tools/pktgen/shaper_mix.lua

package.path = package.path .. ";?.lua;test/?.lua;app/?.lua;"
require "Pktgen"

local SEND       = "0"
local RECV       = "1"
local RATE       = 2        -- percent of link speed (memif: 2 = 2 Gbit/s)
local SECONDS    = 30
local DST_MAC    = "02:5e:00:00:00:01"
local SRC_MAC    = "02:00:00:00:00:01"

-- size (incl. FCS), DS byte (DSCP << 2), protocol
local mix = {
	{ 64, 0, "udp" }, { 64, 0, "tcp" }, { 64, 32, "udp" }, { 64, 136, "udp" },
	{ 64, 184, "udp" }, { 64, 0, "tcp" }, { 64, 160, "udp" },
	{ 594, 0, "tcp" }, { 594, 136, "tcp" }, { 594, 96, "udp" }, { 594, 32, "tcp" },
	{ 1518, 0, "tcp" },
}

pktgen.stop("all")
pktgen.reset(SEND)
for i, m in ipairs(mix) do
	pktgen.seqTable(i - 1, SEND, {
		eth_dst_addr = DST_MAC,
		eth_src_addr = SRC_MAC,
		ip_dst_addr = "198.18.0." .. i,
		ip_src_addr = "10.0.0." .. i .. "/24",
		sport = 10000 + i,
		dport = 443,
		ethType = "ipv4",
		ipProto = m[3],
		vlanid = 1,
		pktSize = m[1],
		cos = 0,
		tos = m[2],
	})
end
pktgen.set(SEND, "seq_cnt", #mix)
pktgen.set(SEND, "rate", RATE)
pktgen.set(SEND, "count", 0)
pktgen.clr()
pktgen.start(SEND)
pktgen.delay(SECONDS * 1000)
pktgen.stop(SEND)
local s = pktgen.portStats(SEND, "port")[tonumber(SEND)]
local r = pktgen.portStats(RECV, "port")[tonumber(RECV)]
printf("sent %d packets, %d arrived (%.2f %% lost or still queued)\n", s.opackets, r.ipackets,
       s.opackets > 0 and (1 - r.ipackets / s.opackets) * 100 or 0)
