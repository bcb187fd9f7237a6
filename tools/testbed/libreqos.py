#!/usr/bin/python3
"""An imported LibreQoS setup on the namespace bed: run.py's subscribers scenario with
three circuits under two access points, from LibreQoS's own files.

    libreqos.py [run.py options: --shaperd PATH --out DIR --duration S ...]

It writes, for the bed's two interfaces, an lqos.conf (LibreQoS 2.x style, link
--down/--up), a 2.x ShapedDevices.csv and a 2.x network.json: circuits A
(10.99.0.11) and B (10.99.0.12) with plans of 30 % of the link under AP_1, capped
at 40 %, and C (10.99.0.13) with 50 % under AP_2 (60 %), both APs under a virtual
Region of 10 % (a grouping: it must cap nothing). shaper-import-libreqos turns
lqos.conf into the config shaperd runs, with the bed's ports and delay line; each
circuit then runs 4 downloads and 2 uploads, the probes run from A. The max-min
shares are 20 %, 20 % and 50 % of the link each way: run.py's table gives each
circuit's rate out of the shaper (over its own clock) against its plan, and A's
latency inside its own CAKE. Results: DIR/subscribers.json, as run.py writes them.
Needs what run.py needs (root, iperf3, fping, irtt).
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

IMPORTER = os.path.join(HERE, "..", "shaper-import-libreqos")
# circuit -> (address, plan as a share of the link, access point)
CIRCUITS = {"A": ("10.99.0.11", 0.3, "AP_1"), "B": ("10.99.0.12", 0.3, "AP_1"),
            "C": ("10.99.0.13", 0.5, "AP_2")}
APS = {"AP_1": 0.4, "AP_2": 0.6}
# What max-min gives each when all are backlogged: AP_1's 40 % split in two, C its plan.
EXPECTED = {"A": 0.2, "B": 0.2, "C": 0.5}
imported = {}


def mbps(bps):
    """A LibreQoS Mbps figure (fractions in ShapedDevices.csv and network.json)."""
    return ("%.3f" % (bps / 1e6)).rstrip("0").rstrip(".")


def libreqos_files(args, tmp, disc):
    """lqos.conf, ShapedDevices.csv and network.json; the imported config's path."""
    d = os.path.join(tmp, "libreqos")
    os.makedirs(d, exist_ok=True)
    pfx = args.prefix
    with open(os.path.join(tmp, "lqos.conf"), "w") as f:
        f.write('version = "1.5"\nlqos_directory = %s\nnode_id = "bed"\nnode_name = "bed"\n\n'
                '[bridge]\nuse_xdp_bridge = true\nto_internet = "%swan0"\nto_network = "%slan0"\n\n'
                '[queues]\ndefault_sqm = "cake diffserv4"\nqueue_mode = "shape"\n'
                'uplink_bandwidth_mbps = %d\ndownlink_bandwidth_mbps = %d\n'
                'generated_pn_download_mbps = %d\ngenerated_pn_upload_mbps = %d\n\n'
                '[ip_ranges]\nignore_subnets = []\nallow_subnets = ["10.99.0.0/24"]\n'
                % (json.dumps(d), pfx, pfx, round(args.up_bps / 1e6), round(args.down_bps / 1e6),
                   round(args.down_bps / 1e6), round(args.up_bps / 1e6)))
    net = {"Region": {"id": "region-1", "type": "Site", "virtual": True,
                      "downloadBandwidthMbps": float(mbps(args.down_bps * 0.1)),
                      "uploadBandwidthMbps": float(mbps(args.up_bps * 0.1)),
                      "children": {ap: {"id": "ap-%s" % ap[-1], "type": "AP", "name": ap,
                                        "downloadBandwidthMbps": float(mbps(args.down_bps * cap)),
                                        "uploadBandwidthMbps": float(mbps(args.up_bps * cap)),
                                        "children": {}}
                                   for ap, cap in sorted(APS.items())}}}
    with open(os.path.join(d, "network.json"), "w") as f:
        json.dump(net, f, indent="\t")
    with open(os.path.join(d, "ShapedDevices.csv"), "w") as f:
        f.write("Circuit ID,Circuit Name,Device ID,Device Name,Parent Node,Parent Node ID,"
                "Anchor Node ID,MAC,IPv4,IPv6,Download Min Mbps,Upload Min Mbps,"
                "Download Max Mbps,Upload Max Mbps,Comment,sqm\n")
        for i, (c, (addr, share, ap)) in enumerate(sorted(CIRCUITS.items())):
            f.write('%s,"circuit %s",d%d,router,%s,ap-%s,region-1,,%s,,1,0.5,%s,%s,,cake\n'
                    % (c, c, i, ap, ap[-1], addr, mbps(args.down_bps * share),
                       mbps(args.up_bps * share)))
    out = os.path.join(tmp, "imported.json")
    p = subprocess.run([sys.executable, IMPORTER, os.path.join(tmp, "lqos.conf"), "-o", out,
                        "--af-packet", "--active", "8"], capture_output=True, text=True)
    run.log("shaper-import-libreqos (rc %d):\n%s" % (p.returncode, p.stderr))
    if p.returncode != 0:
        raise SystemExit("libreqos.py: the import failed")
    imported.clear()
    imported.update(json.load(open(out)))
    return out


start_daemon = run.Bed.start_daemon


def start_imported(self, cfg):
    """The imported config, with the bed's ports (Bed.start_daemon's) and delay line."""
    if not imported:
        return start_daemon(self, cfg)
    new = {k: v for k, v in imported.items() if k not in ("comment", "ports", "fail_open")}
    for d in ("upstream", "downstream"):
        new[d] = dict(imported[d], emulate=cfg[d]["emulate"])
    run.log("imported config on the bed: %s" % json.dumps(new))
    return start_daemon(self, new)


run.SUBSCRIBERS = {c: (addr, share) for c, (addr, share, _) in CIRCUITS.items()}
run.subscribers_file = libreqos_files
run.Bed.start_daemon = start_imported

if __name__ == "__main__":
    sys.argv[1:1] = ["subscribers", "--disciplines", "cake"]
    rc = run.main()
    print("libreqos.py: max-min shares of the link: " +
          ", ".join("%s %.0f %%" % (c, s * 100) for c, s in sorted(EXPECTED.items())))
    sys.exit(rc)
