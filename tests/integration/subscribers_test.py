#!/usr/bin/python3
"""Integration: a real shaperd shapes per subscriber.

shaperd on net_pcap vdevs. The WAN side's pcap holds, for three subscribers
with plans of 1, 2 and 4 Mbit/s, about eight seconds of frames at each plan
(and a few for an address no subscriber owns); they arrive at once and wait
in each subscriber's CAKE, so every subscriber stays backlogged while its
CAKE drains at its plan. The worker mostly naps: the rates do not depend on
how much CPU a shared VM leaves it. Read back through subscribers.list
twice, 3 s apart on shaperd's own clock (time_ns), each subscriber's sent
bytes give its rate: within 2 % of its plan, and still backlogged at the
end of the window. A rate is over the window less the time the subscriber's
CAKE wrote off (lag_skipped_us): time in which the worker was not running
(a VM's stall), which a CAKE does not pay back as a burst. shaperd stopped
for 100 ms (SIGSTOP) then: each subscriber's lag_skipped_us grows by at
least half of it, and shapectl subscriber shows the time written off. c2 and c3 send ECT(0) frames: COBALT marks them (ecn_mark)
instead of dropping; c1's not-ECT frames are dropped (aqm) and never counted
marked. subscribers.get finds a subscriber by id and by address and refuses
an address nobody owns. Then c2's plan is cut from 2 to 1.5 Mbit/s while it
is backlogged (subscribers.set, or shapectl subscriber set), and c3's from 4
to 0.5 Mbit/s (so that its backlog lasts to the end): over the next 2 s each
gets its new plan within 2 %, and c1 what it got before within 1 %. c1 is deleted with packets queued (they drain at its plan) and
a new subscriber added in its place; a reload of a changed file applies it
as a diff (one added, one changed, one removed); then nodes change live; then
a reload adds 1,100 subscribers, more than the spare slots: the slots grow
live and c3 keeps its counters and its backlog. At exit every frame is
accounted and every mbuf is back in its pool.

With --workers 2 the same runs with two workers: each port has two rx queues
and the frames alternate between them, so every subscriber's frames reach
both workers and are steered to the one that shapes it (c1 and c3 on one
worker, c2 on the other: subscribers under the link go by a hash of their
id). The rates, counters (summed over the workers by subscribers.list),
changes and accounting are checked as with one; both workers must have
steered frames to the other, and at exit none may be lost as steer_full.
With --shard-by subscriber as well, nodes are shared among the workers: the
same checks hold (these subscribers go by their id either way), and every
live change and reload of nodes brings both workers new node lines.

usage: subscribers_test.py SHAPERD [SHAPECTL] [--workers N] [--shard-by node|subscriber]
"""
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from shaperlib import (check, check_accounting, failures, pcap_ports_with,  # noqa: E402
                       worker_lcores, workers_option)
from shaperlib.control import Control  # noqa: E402
from shaperlib.daemon import start_shaperd  # noqa: E402

ARGS, WORKERS = workers_option(sys.argv[1:])
# --shard-by subscriber: every subscriber on a worker by its id, nodes shared among workers.
SHARD_BY = "node"
if "--shard-by" in ARGS:
    k = ARGS.index("--shard-by")
    SHARD_BY = ARGS[k + 1]
    del ARGS[k:k + 2]
SHAPERD = ARGS[0]
SHAPECTL = ARGS[1] if len(ARGS) > 1 else None
# id: (plan Mbit/s, address, ECN bits of its frames)
PLANS = {"c1": (1, "100.64.0.1", 0), "c2": (2, "100.64.0.2", 2), "c3": (4, "100.64.0.3", 2)}
BACKLOG_S = 8.0
UNKNOWN = "100.64.9.9"
FRAME = 1000
WINDOW_S = 3.0


def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff)
    return (~(s + (s >> 16))) & 0xffff


def udp_frame(dst, sport, ecn, size):
    """Ether/IPv4/UDP from 198.51.100.1 to dst, size bytes in all."""
    payload = bytes(size - 14 - 20 - 8)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, ecn, 20 + 8 + len(payload), 0, 0, 64, 17, 0,
                     bytes([198, 51, 100, 1]), bytes(int(x) for x in dst.split(".")))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", sport, 9000, 8 + len(payload), 0)
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip + udp + payload


def sent_mbit(dn0, dn1, dt):
    """Mbit/s one direction of a subscriber sent between two readings dt s apart, over the
    part of dt its CAKE did not write off (the worker away), and that time written off in s."""
    away = (dn1["lag_skipped_us"] - dn0["lag_skipped_us"]) / 1e6
    return (dn1["bytes"] - dn0["bytes"]) * 8 / (dt - away) / 1e6, away


def stall_written_off(c, d, stop_s=0.1):
    """shaperd stopped (SIGSTOP) for stop_s while every subscriber is backlogged: each
    one's CAKE writes the time off (less its lag limit, a frame time at its plan: 12 ms
    at most here) at its next dequeue, and its lag_skipped_us says so."""
    def skipped():
        return {s["id"]: s["download"]["lag_skipped_us"]
                for s in c.result("subscribers.list")["subscribers"]}

    a = skipped()
    os.kill(d.proc.pid, signal.SIGSTOP)
    time.sleep(stop_s)
    os.kill(d.proc.pid, signal.SIGCONT)
    time.sleep(0.1)  # each subscriber's next frame is due well within this
    b = skipped()
    for i in sorted(b):
        got = (b[i] - a[i]) / 1e3
        check(got >= stop_s * 1e3 / 2,
              "%s: shaperd stopped %.0f ms, its CAKE wrote off %.1f ms (at least half)"
              % (i, stop_s * 1e3, got))


def shapectl(sock, *args):
    p = subprocess.run([SHAPECTL, "-s", sock] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=20)
    print("$ shapectl %s\n%s" % (" ".join(args), p.stdout.rstrip()))
    return p.returncode, p.stdout


def shapectl_checks(sock):
    """shapectl subscribers and shapectl subscriber, human and --json."""
    rc, out = shapectl(sock, "subscribers", "--top", "2", "--by", "bytes")
    rows = [l.split()[0] for l in out.splitlines()[2:] if l.strip()]
    check(rc == 0 and rows[:2] == ["c3", "c2"] and rows[-1] == "(unknown)",
          "shapectl subscribers --top 2: c3, c2 and the link's line (%s)" % rows)
    rc, out = shapectl(sock, "--json", "subscriber", "100.64.0.2")
    check(rc == 0 and json.loads(out)["id"] == "c2", "shapectl --json subscriber ADDRESS finds c2")
    rc, out = shapectl(sock, "subscriber", "c1")
    check(rc == 0 and "subscriber c1" in out and "download: plan 1Mbit" in out,
          "shapectl subscriber c1 shows its plan")
    check("written off" in out.split("upload:")[0],
          "shapectl subscriber c1 shows the time its download wrote off")
    rc, out = shapectl(sock, "subscriber", "nobody")
    check(rc != 0 and "no subscriber" in out, "shapectl subscriber of an unknown id fails: rc %d" % rc)
    rc, out = shapectl(sock, "subscribers", "--by", "colour")
    check(rc != 0, "shapectl subscribers --by colour is a usage error")


def live_changes(c, sock, rate_before, plans_path):
    """A plan cut mid-stream; a delete with packets queued; an add."""
    new_mbit = {"c2": 1.5, "c3": 0.5}
    if SHAPECTL:
        rc, out = shapectl(sock, "subscriber", "set", "c2", "download", "1500kbit")
        check(rc == 0 and "changed" in out, "shapectl subscriber set c2 download 1500kbit")
    else:
        c.result("subscribers.set", {"id": "c2", "download": "1500kbit"})
    # c3 slower too: its backlog (eight seconds at 4 Mbit/s) must last to grow_slots at the
    # end, which a slow build (ASan, two workers) reached after it had all been sent.
    c.result("subscribers.set", {"id": "c3", "download": "500kbit"})
    time.sleep(0.2)  # the next allocation (5 ms) takes the plan
    a = c.result("subscribers.list")
    time.sleep(2.0)
    b = c.result("subscribers.list")
    dt = (b["time_ns"] - a["time_ns"]) / 1e9
    prev = {s["id"]: s["download"] for s in a["subscribers"]}
    for s in b["subscribers"]:
        dn = s["download"]
        got, away = sent_mbit(prev[s["id"]], dn, dt)
        cut = s["id"] in new_mbit
        want = new_mbit[s["id"]] if cut else rate_before[s["id"]]
        tol = 0.02 if cut else 0.01
        print("figure: after c2's plan cut to 1.5 Mbit/s and c3's to 0.5: %s delivered %.3f Mbit/s "
              "over %.2f s less %.1f ms written off (%s %.3f, %+.2f %%)"
              % (s["id"], got, dt, away * 1e3, "plan" if cut else "before", want,
                 (got / want - 1) * 100))
        check(dn["qlen"] > 0, "%s: still backlogged after the change (%d queued)"
              % (s["id"], dn["qlen"]))
        check(abs(got / want - 1) < tol, "%s: %.3f Mbit/s within %d %% of %s %.3f"
              % (s["id"], got, tol * 100, "its new plan" if cut else "its rate before", want))
    g = c.result("subscribers.get", {"id": "c2"})
    check(g["download"]["plan"]["max"] == 1500000 and g["upload"]["plan"]["max"] == 1000000,
          "c2's download plan is 1.5 Mbit/s, its upload plan unchanged")
    r = c.result("subscribers.del", {"id": "c1"})
    check(r["action"] == "removed" and r["draining"] > 0,
          "c1 deleted with %d packets queued (they drain at its plan)" % r["draining"])
    rep = c.call("subscribers.get", {"id": "c1"})
    check(not rep["ok"], "c1 is gone")
    r = c.result("subscribers.set", {"id": "c4", "download": "3mbit", "upload": "1mbit",
                                     "addresses": ["100.64.0.4"]})
    check(r["action"] == "added", "c4 added live")
    rep = c.call("subscribers.set", {"id": "c5", "download": "3mbit", "upload": "1mbit",
                                     "addresses": ["100.64.0.3"]})
    check(not rep["ok"] and rep["error"]["message"].startswith("args.addresses"),
          "an address of c3 for c5 is refused naming args.addresses: %s"
          % rep.get("error", {}).get("message"))
    lst = c.result("subscribers.list")
    check(sorted(s["id"] for s in lst["subscribers"]) == ["c2", "c3", "c4"],
          "subscribers.list now lists c2, c3, c4")
    # A reload of a changed file: as a diff of what runs (c2 back to 2 Mbit/s, c4 gone, c5 new;
    # c3 at the plan it runs at, unchanged).
    with open(plans_path) as f:
        subs = json.load(f)
    subs["subscribers"] = [s for s in subs["subscribers"] if s["id"] != "c1"]
    for s in subs["subscribers"]:
        if s["id"] == "c3":
            s["download"] = {"max": "500kbit"}
    subs["subscribers"].append({"id": "c5", "download": "2mbit", "upload": "1mbit",
                                "addresses": ["100.64.0.5"]})
    with open(plans_path, "w") as f:
        json.dump(subs, f)
    rep = c.call("config.reload")
    got = rep.get("result", {}).get("subscribers")
    check(rep["ok"] and got == {"added": 1, "changed": 1, "removed": 1, "unchanged": 1,
                                "nodes_changed": 0, "nodes_added": 0, "nodes_removed": 0,
                                "nodes_moved": 0, "slots_added": 0},
          "config.reload applies the subscriber file as a diff: %s" % (got or rep.get("error")))
    lst = c.result("subscribers.list")
    check(sorted(s["id"] for s in lst["subscribers"]) == ["c2", "c3", "c5"],
          "after the reload: c2, c3, c5")
    g = c.result("subscribers.get", {"id": "c2"})
    check(g["download"]["plan"]["max"] == 2000000, "c2's plan is the file's again")
    node_changes(c, plans_path, subs)


def node_changes(c, plans_path, subs):
    """Nodes changed live, through nodes.set/del and a reload; every frame is still
    accounted at exit (main's checks), whichever node it was shaped under."""
    r = c.result("nodes.set", {"name": "AP_X", "download": "50mbit", "upload": "10mbit"})
    check(r["action"] == "added" and r["path"] == "AP_X", "nodes.set adds AP_X: %s" % r)
    c.result("subscribers.set", {"id": "c3", "node": "AP_X"})
    r = c.result("nodes.set", {"name": "Site", "download": "80mbit", "upload": "20mbit"})
    r = c.result("nodes.set", {"name": "AP_X", "parent": "Site", "download": "40mbit"})
    check(r["path"] == "Site/AP_X", "AP_X moved under Site: %s" % r["path"])
    g = c.result("subscribers.get", {"id": "c3"})
    check(g["node"] == "Site/AP_X", "c3 moved with its node: %s" % g["node"])
    rep = c.call("nodes.del", {"name": "AP_X"})
    check(not rep["ok"] and "still has 1 subscriber" in rep["error"]["message"],
          "a node with a subscriber is not removed: %s" % rep.get("error"))
    rep = c.call("nodes.set", {"name": "Site", "parent": "AP_X"})
    check(not rep["ok"] and rep["error"]["message"].startswith("args.parent"),
          "a node under its own child is refused: %s" % rep.get("error"))
    # The file with a node: the reload's diff takes the tree from it (Site and AP_X go,
    # AP_F comes with c5 under it; c3 back under the link).
    subs["nodes"] = {"AP_F": {"download": "30mbit", "upload": "5mbit"}}
    for s in subs["subscribers"]:
        if s["id"] == "c5":
            s["node"] = "AP_F"
    with open(plans_path, "w") as f:
        json.dump(subs, f)
    rep = c.call("config.reload")
    got = rep.get("result", {}).get("subscribers")
    check(rep["ok"] and got is not None and got["nodes_added"] == 1 and
          got["nodes_removed"] == 2 and got["changed"] == 2,
          "config.reload applies the file's tree as a diff: %s" % (got or rep.get("error")))
    g = c.result("subscribers.get", {"id": "c5"})
    check(g["node"] == "AP_F", "c5 under AP_F: %s" % g["node"])
    g = c.result("subscribers.get", {"id": "c3"})
    check(g["node"] == "link", "c3 back under the link: %s" % g["node"])
    grow_slots(c, plans_path, subs)


def grow_slots(c, plans_path, subs):
    """A reload that adds more subscribers than there are spare slots (1024 at start-up
    beyond the file's): the slots grow live, and c3, backlogged, carries on at its rate."""
    more = 1100
    a = c.result("subscribers.list", {"top": 1, "by": "bytes"})
    for k in range(more):
        subs["subscribers"].append({"id": "g%d" % k, "download": "1mbit", "upload": "1mbit",
                                    "addresses": ["100.65.%d.%d" % (k // 250, 1 + k % 250)]})
    with open(plans_path, "w") as f:
        json.dump(subs, f)
    t = time.monotonic()
    rep = c.call("config.reload")
    took = time.monotonic() - t
    got = rep.get("result", {}).get("subscribers")
    check(rep["ok"] and got is not None and got["added"] == more and got["slots_added"] > 0,
          "config.reload adds %d subscribers past the spare slots, which grow: %s"
          % (more, got or rep.get("error")))
    print("figure: %d subscribers added by a reload, %s slots added, in %.0f ms (wall clock, "
          "the whole reload)" % (more, got and got.get("slots_added"), took * 1000))
    b = c.result("subscribers.list", {"top": 1, "by": "bytes"})
    check(b["count"] == 3 + more, "subscribers.list counts %d: %d" % (3 + more, b["count"]))
    g = c.result("subscribers.get", {"address": "100.65.4.100"})
    check(g["id"] == "g1099", "the last one added owns its address: %s" % g["id"])
    # c3 (the most bytes, still backlogged) kept its counters and its queue.
    x, y = a["subscribers"][0], b["subscribers"][0]
    check(x["id"] == y["id"] == "c3" and y["download"]["bytes"] >= x["download"]["bytes"]
          and y["download"]["qlen"] > 0,
          "c3 kept its counters and its backlog across the growth: %s %d -> %s %d bytes, "
          "%d queued" % (x["id"], x["download"]["bytes"], y["id"], y["download"]["bytes"],
                         y["download"]["qlen"]))


def main():
    tmp = tempfile.mkdtemp(prefix="shaper_subs_")
    frames = []
    # BACKLOG_S at each plan, interleaved (two flows each); the AQM's drops of c1 come
    # out of its backlog, so it gets 180 % more (it must outlast the plan change below).
    count = {cid: int(mbit * 1e6 * BACKLOG_S / 8 / FRAME * (2.8 if ecn == 0 else 1))
             for cid, (mbit, _, ecn) in PLANS.items()}
    for k in range(max(count.values())):
        for cid, (_, addr, ecn) in sorted(PLANS.items()):
            if k < count[cid]:
                frames.append(udp_frame(addr, 1000 + (k & 1), ecn, FRAME))
        if k < 50:
            frames.append(udp_frame(UNKNOWN, 2000, 0, FRAME))
    subs = {
        "link": {"download": "100mbit", "upload": "100mbit"},
        "subscribers": [
            {"id": cid, "name": "house %s" % cid,
             "download": {"max": "%dmbit" % mbit}, "upload": {"max": "1mbit"},
             "addresses": [addr]}
            for cid, (mbit, addr, _) in sorted(PLANS.items())
        ],
    }
    with open(os.path.join(tmp, "plans.json"), "w") as f:
        json.dump(subs, f)
    cfg = {
        # One file per rx queue, the frames alternating: every subscriber on every queue.
        "ports": pcap_ports_with(tmp, frames, WORKERS),
        # memlimit: room for the whole backlog in the subscribers' CAKEs (their joint
        # limit is the link's), so nothing overflows and each stays backlogged.
        # rtt oceanic (300 ms interval): COBALT's drop rate on c1's not-ECT flows grows with
        # (time / interval)^2, and at the default 100 ms they emptied c1's backlog after
        # about 6 s, before the plan change and the delete below had seen it backlogged.
        "downstream": {"discipline": "cake", "bandwidth": "100mbit", "ecn": True,
                       "memlimit": "32mb", "rtt": "oceanic"},
        "upstream": {"discipline": "cake", "bandwidth": "100mbit"},
        "subscribers": {"file": os.path.join(tmp, "plans.json"), "active": 8,
                        "shard_by": SHARD_BY},
        # The worker naps when idle, and is not pushed aside by a busy VM's other work.
        "dataplane": {"rt_priority": 50, "idle_sleep": "20us"},
    }
    lcores = worker_lcores(cfg, WORKERS)
    d, sock, stats_path = start_shaperd(SHAPERD, tmp, "subs", cfg, lcores=lcores, mem_mb=768,
                                        timeout=30)
    if d is None:
        check(False, "shaperd started with subscribers and opened its control socket")
        sys.exit(1)
    try:
        with Control(sock, timeout=20) as c:
            time.sleep(1.0)  # every frame queued, the allocation settled
            a = c.result("subscribers.list")
            time.sleep(WINDOW_S)
            b = c.result("subscribers.list")
            dt = (b["time_ns"] - a["time_ns"]) / 1e9
            check(b["count"] == 3 and len(b["subscribers"]) == 3, "subscribers.list lists 3")
            before = {s["id"]: s for s in a["subscribers"]}
            for s in b["subscribers"]:
                mbit = PLANS[s["id"]][0]
                dn, dn0 = s["download"], before[s["id"]]["download"]
                got, away = sent_mbit(dn0, dn, dt)
                err = got / mbit - 1
                print("figure: %s plan %d Mbit/s, delivered %.3f Mbit/s over %.2f s of shaperd's "
                      "clock less %.1f ms written off (%+.2f %%); drops %s, ecn_mark %d" % (
                          s["id"], mbit, got, dt, away * 1e3, err * 100,
                          json.dumps(dn["drop_reasons"]), dn["ecn_mark"]))
                check(dn["qlen"] > 0, "%s: still backlogged at the end of the window (%d queued)"
                      % (s["id"], dn["qlen"]))
                tol = 0.02
                check(abs(err) < tol, "%s: delivered %.3f Mbit/s within %d %% of its plan %d"
                      % (s["id"], got, tol * 100, mbit))
                check(dn["threshold_rate"] * 8 == mbit * 1000000,
                      "%s: allocated its plan (threshold_rate %d bytes/s)" % (s["id"], dn["threshold_rate"]))
                check(dn["arrived_packets"] == count[s["id"]]
                      and dn["arrived_bytes"] == count[s["id"]] * FRAME,
                      "%s: counted every frame sent to it: %d of %d"
                      % (s["id"], dn["arrived_packets"], count[s["id"]]))
                # Not one instant (the worker runs on): within two bursts.
                gap = dn["arrived_packets"] - dn["packets"] - dn["drops"] - dn["qlen"]
                check(abs(gap) <= 64, "%s: arrived %d = sent %d + dropped %d + queued %d (off by %d)"
                      % (s["id"], dn["arrived_packets"], dn["packets"], dn["drops"], dn["qlen"], gap))
            by = {s["id"]: s["download"] for s in b["subscribers"]}
            for cid in ("c2", "c3"):
                check(by[cid]["ecn_mark"] > 0 and by[cid]["drop_reasons"]["aqm"] == 0,
                      "%s (ECT frames): %d CE-marked, none dropped by the AQM"
                      % (cid, by[cid]["ecn_mark"]))
            check(by["c1"]["ecn_mark"] == 0 and by["c1"]["drop_reasons"]["aqm"] > 0,
                  "c1 (not ECT): never counted marked, %d dropped by the AQM"
                  % by["c1"]["drop_reasons"]["aqm"])
            link = b["link"]["download"]
            check(link["arrived_packets"] == 50 and link["packets"] + link["drops"] == 50,
                  "the unknown address's 50 frames went through the link's CAKE (%d sent)"
                  % link["packets"])
            top = c.result("subscribers.list", {"top": 1, "by": "bytes"})
            check([s["id"] for s in top["subscribers"]] == ["c3"], "top 1 by bytes is c3")
            g = c.result("subscribers.get", {"id": "c2"})
            check(g["id"] == "c2" and g["addresses"] == ["100.64.0.2/32"]
                  and g["download"]["plan"]["max"] == PLANS["c2"][0] * 1000000,
                  "subscribers.get by id: %s, its address and plan" % g["id"])
            g = c.result("subscribers.get", {"address": "100.64.0.3"})
            check(g["id"] == "c3", "subscribers.get by address finds c3")
            rep = c.call("subscribers.get", {"address": UNKNOWN})
            check(not rep["ok"] and rep["error"]["code"] == "invalid_argument",
                  "an unknown address is refused: %s" % rep.get("error", {}).get("message"))
            rep = c.call("subscribers.list", {"by": "colour"})
            check(not rep["ok"], "subscribers.list by an unknown key is refused")
            if WORKERS > 1:
                st = c.result("stats", {"shards": True})["directions"]["downstream"]["shards"]
                steered = [x.get("steered_out", 0) for x in st]
                print("figure: %d workers: frames steered to the other worker: %s" % (WORKERS, steered))
                check(len(st) == WORKERS and all(n > 0 for n in steered),
                      "every worker steered frames to the other (%s)" % steered)
            stall_written_off(c, d)
            if SHAPECTL:
                shapectl_checks(sock)
            live_changes(c, sock, {s["id"]: sent_mbit(before[s["id"]]["download"], s["download"],
                                                      dt)[0] for s in b["subscribers"]},
                         os.path.join(tmp, "plans.json"))
            # The link's scheduler sits under the subscribers: its discipline cannot change
            # live (the reply says so), its settings and the link's rate can.
            rep = c.call("config.set", {"direction": "downstream",
                                        "settings": {"discipline": "fq_codel"}})
            check(not rep["ok"] and "subscribers" in rep["error"]["message"],
                  "a discipline change is refused while subscribers are shaped: %s"
                  % rep.get("error", {}).get("message"))
            rep = c.call("config.set", {"direction": "downstream", "settings": {"bandwidth": "50mbit"}})
            check(rep["ok"], "the link's bandwidth changes live: %s" % rep.get("error"))
    finally:
        rc = d.stop()
        for line in d.lines:
            if "subscribers" in line or "error" in line:
                print("shaperd: " + line)
    check(rc == 0, "shaperd exit code %d" % rc)
    with open(stats_path) as f:
        st = json.load(f)
    check_accounting(st, "at exit")
    full = st["directions"]["downstream"]["drop_reasons"].get("steer_full", 0)
    check(full == 0, "no frame lost to a full steering ring (%d)" % full)
    check(st["mbufs_in_use"] == 0, "every mbuf back in the pool at exit (%d)" % st["mbufs_in_use"])
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
