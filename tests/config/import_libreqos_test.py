#!/usr/bin/python3
"""shaper-import-libreqos on lqos.conf files of LibreQoS 1.5 and 2.x (and on a
stick), each beside ShapedDevices.csv and network.json of its release: the
config it writes carries the interfaces, bandwidths, default_sqm and files;
stderr names every key of lqos.conf once, as carried or not, and never a
value it did not carry (the secrets); `shaperd --check-config` accepts the
result and loads the circuits, naming the per-circuit sqm it cannot honour.
On a stick, [single_interface] becomes ports.single with its two VLAN ids.
The port flags (--af-packet, --pci from a sysfs tree, --wan/--lan, --single)
and the refusals (no ports, both port sections, bad VLAN ids, bad TOML, an
sqm that is neither cake nor fq_codel) are checked too.

usage: import_libreqos_test.py IMPORTER SHAPERD SOURCE_ROOT
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib

importer, shaperd, src = sys.argv[1:4]
fixtures = os.path.join(src, "tests", "config", "libreqos")
csvs = os.path.join(src, "tests", "unit", "subscriber", "libreqos")
failures = 0


def check(cond, what, detail=""):
    """Print the check; detail (stderr, say) only when it fails."""
    global failures
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures += 1
        if detail:
            print("     " + detail.strip().replace("\n", "\n     ")[-1500:])
    return cond


def leaf_keys(table, prefix=""):
    for k, v in table.items():
        if isinstance(v, dict) and v:
            yield from leaf_keys(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}"


def report_keys(stderr):
    """The keys stderr says were carried, and those it says were not."""
    carried, dropped, section = [], [], None
    for line in stderr.splitlines():
        if line.startswith("carried ("):
            section = carried
        elif line.startswith("not carried ("):
            section = dropped
        elif line.startswith("  ") and section is carried:
            carried.append(line.strip().split(" = ", 1)[0])
        elif line.startswith("  ") and section is dropped:
            head = line.strip().split(": ", 1)[0]
            # default_sqm's words are reported one by one, beside the key itself.
            dropped += [k for k in head.split(", ") if " word " not in k]
        else:
            section = None
    return carried, dropped


def lqos_dir(tmp, conf, devices, network):
    """A LibreQoS directory in tmp with the two files, and conf pointing at it."""
    d = os.path.join(tmp, "libreqos")
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(csvs, devices), os.path.join(d, "ShapedDevices.csv"))
    if network:
        shutil.copy(os.path.join(csvs, network), os.path.join(d, "network.json"))
    with open(os.path.join(fixtures, conf)) as f:
        text = f.read().replace('"/opt/libreqos/src"', json.dumps(d))
    path = os.path.join(tmp, "lqos.conf")
    with open(path, "w") as f:
        f.write(text)
    return path, d


def run_import(conf, out, *flags):
    p = subprocess.run([sys.executable, importer, conf, "-o", out, *flags],
                       capture_output=True, text=True, timeout=60)
    return p


def check_config(path):
    return subprocess.run([shaperd, "--", "-c", path, "--check-config"], capture_output=True,
                          text=True, timeout=60)


def every_key_reported(conf, p, name):
    with open(conf, "rb") as f:
        keys = list(leaf_keys(tomllib.load(f)))
    carried, dropped = report_keys(p.stderr)
    named = carried + dropped
    check(sorted(named) == sorted(keys),
          f"{name}: stderr names each of the {len(keys)} keys once "
          f"({len(carried)} carried, {len(dropped)} not)")
    missing = set(keys) - set(named)
    extra = [k for k in named if k not in keys or named.count(k) > 1]
    if missing or extra:
        print(f"     missing {sorted(missing)}, extra or twice {sorted(set(extra))}")
    check("NOT-A-REAL" not in p.stderr and "NOT-A-REAL" not in p.stdout,
          f"{name}: no value of a key it did not carry is printed (the secrets)")
    return carried, dropped


with tempfile.TemporaryDirectory() as tmp:
    # LibreQoS 1.5: a Linux bridge, cake diffserv4, the 1.5 CSV with per-circuit sqm.
    conf, d = lqos_dir(tmp, "lqos-1.5.conf", "ShapedDevices-1.5.csv", "network.json")
    out = os.path.join(tmp, "shaper-1.5.json")
    p = run_import(conf, out)
    check(p.returncode == 0, f"1.5: imported (rc {p.returncode})", p.stderr)
    cfg = json.load(open(out))
    check(cfg["ports"] == {"wan": "net_af_xdp0,iface=ens19", "lan": "net_af_xdp1,iface=ens20"},
          f"1.5: to_internet -> wan, to_network -> lan on AF_XDP: {cfg['ports']}")
    check(cfg.get("fail_open") == {"enabled": True},
          "1.5: use_xdp_bridge false (a Linux bridge) -> fail_open on")
    check(cfg["downstream"] == {"discipline": "cake", "bandwidth": "2000mbit",
                                "diffserv": "diffserv4"} and
          cfg["upstream"] == {"discipline": "cake", "bandwidth": "500mbit",
                              "diffserv": "diffserv4"},
          f"1.5: downlink 2000 / uplink 500 Mbit/s, cake diffserv4: {cfg['downstream']}, "
          f"{cfg['upstream']}")
    check(cfg["subscribers"] == {"devices": os.path.join(d, "ShapedDevices.csv"),
                                 "network": os.path.join(d, "network.json"),
                                 "scale_mins": True, "unknown": "link"},
          f"1.5: the files in lqos_directory, unknown addresses on the link: "
          f"{cfg['subscribers']}")
    carried, dropped = every_key_reported(conf, p, "1.5")
    check("ip_ranges.allow_subnets" in carried and "ip_ranges.ignore_subnets" in carried,
          "1.5: ip_ranges carried (as subscribers.unknown \"link\")")
    check("spylnx_integration.api_key" in dropped and "tuning.disable_offload" in dropped,
          "1.5: the integration's and the tuning's keys are not carried, each named")
    c = check_config(out)
    check(c.returncode == 0, f"1.5: shaperd --check-config accepts it (rc {c.returncode})",
          c.stderr)
    check("subscribers: 4 under 3 nodes" in c.stdout, "1.5: 4 circuits under 3 nodes loaded")
    check('ShapedDevices.csv:5 (circuit "201") fq_codel both ways' in c.stdout and
          'ShapedDevices.csv:7 (circuit "203") none up' in c.stdout and
          "sqm of 3 circuits" in c.stdout,
          "1.5: the sqm shaperd cannot honour is named by row (fq_codel, none), "
          "CAKE/ (honoured) is not counted")

    # LibreQoS 2.x: an XDP bridge, sqm with options, the 2.x CSV and network.json.
    conf, d = lqos_dir(tmp, "lqos-2.x.conf", "ShapedDevices-2.x.csv", "network-2.x.json")
    out = os.path.join(tmp, "shaper-2.x.json")
    p = run_import(conf, out, "--active", "500")
    check(p.returncode == 0, f"2.x: imported (rc {p.returncode})", p.stderr)
    cfg = json.load(open(out))
    check("fail_open" not in cfg and "bridge.use_xdp_bridge" in report_keys(p.stderr)[1],
          "2.x: an XDP bridge leaves no Linux bridge: no fail_open, said so")
    want = {"discipline": "cake", "bandwidth": "10000mbit", "ack_filter": "ack-filter",
            "diffserv": "diffserv4", "rtt": "50ms"}
    check(cfg["downstream"] == want and cfg["upstream"]["bandwidth"] == "1000mbit",
          f"2.x: default_sqm's options carried: {cfg['downstream']}")
    check('queues.default_sqm word "split-gso"' in p.stderr,
          "2.x: the sqm word shaperd has no use for is named")
    check(cfg["subscribers"].get("active") == 500, "2.x: --active")
    every_key_reported(conf, p, "2.x")
    c = check_config(out)
    check(c.returncode == 0, f"2.x: shaperd --check-config accepts it (rc {c.returncode})",
          c.stderr)
    check("subscribers: 5 under 4 nodes" in c.stdout,
          "2.x: its 5 circuits under 4 nodes loaded (two virtual nodes are no nodes)")
    check('ShapedDevices.csv:4 (circuit "301") fq_codel up' in c.stdout and
          'ShapedDevices.csv:8 (circuit "305") cake options both ways' in c.stdout and
          "sqm of 2 circuits" in c.stdout,
          "2.x: \"cake diffserv4/fq_codel\" honoured down (the CAKEs are diffserv4), named "
          "up; \"cake besteffort\" named")

    # The ports: af_packet, PCI addresses from sysfs, a device string of one's own.
    p = run_import(conf, out, "--af-packet")
    cfg = json.load(open(out))
    check(p.returncode == 0 and cfg["ports"]["wan"] == "net_af_packet0,iface=enp1s0f0",
          f"--af-packet: {cfg['ports']}")
    sysroot = os.path.join(tmp, "sysroot")
    for iface, pci in (("enp1s0f0", "0000:03:00.0"), ("enp1s0f1", "0000:03:00.1")):
        devdir = os.path.join(sysroot, "sys/devices/pci0000:00", pci)
        os.makedirs(devdir)
        os.makedirs(os.path.join(sysroot, "sys/class/net", iface))
        os.symlink(os.path.relpath(devdir, os.path.join(sysroot, "sys/class/net", iface)),
                   os.path.join(sysroot, "sys/class/net", iface, "device"))
    p = run_import(conf, out, "--pci", "--sysfs-root", sysroot)
    cfg = json.load(open(out))
    check(p.returncode == 0 and cfg["ports"] == {"wan": "0000:03:00.0", "lan": "0000:03:00.1"},
          f"--pci: each interface's PCI address: {cfg['ports']}")
    c = check_config(out)
    check(c.returncode == 0, "--pci: shaperd --check-config accepts it", c.stderr)
    os.unlink(out)
    p = run_import(conf, out, "--pci", "--sysfs-root", os.path.join(tmp, "nothing"))
    check(p.returncode == 1 and "--pci: enp1s0f0: no PCI device" in p.stderr and
          not os.path.exists(out), f"--pci without sysfs entries: refused, nothing written "
          f"{p.stderr.strip()[-200:]!r}")

    # On a stick: one interface, the internet and the network on two VLANs.
    conf, d = lqos_dir(tmp, "lqos-stick.conf", "ShapedDevices-1.4.csv", "network.json")
    p = run_import(conf, out)
    check(p.returncode == 0, f"stick: imported (rc {p.returncode})", p.stderr)
    cfg = json.load(open(out))
    check(cfg["ports"] == {"single": "net_af_xdp0,iface=eth0", "wan_vlan": 2, "lan_vlan": 3},
          f"stick: interface -> ports.single, internet_vlan -> wan_vlan, network_vlan -> "
          f"lan_vlan: {cfg['ports']}")
    check("fail_open" not in cfg and cfg["downstream"]["discipline"] == "fq_codel",
          "stick: no fail_open (refused on a stick), default_sqm fq_codel")
    carried, dropped = every_key_reported(conf, p, "stick")
    check({"single_interface.interface", "single_interface.internet_vlan",
           "single_interface.network_vlan"} <= set(carried),
          "stick: the interface and both VLANs reported as carried")
    check("rxvlan off" in p.stderr, "stick over AF_XDP: the rx VLAN offload note")
    c = check_config(out)
    check(c.returncode == 0 and "subscribers: 3 under 3 nodes" in c.stdout,
          "stick: shaperd --check-config accepts it, 3 circuits under 3 nodes",
          c.stdout + c.stderr)
    p = run_import(conf, out, "--af-packet")
    cfg = json.load(open(out))
    check(p.returncode == 0 and cfg["ports"]["single"] == "net_af_packet0,iface=eth0" and
          "rxvlan" not in p.stderr, f"stick --af-packet: {cfg['ports']}")
    p = run_import(conf, out, "--single", "0000:05:00.0")
    cfg = json.load(open(out))
    check(p.returncode == 0 and cfg["ports"]["single"] == "0000:05:00.0" and
          'not used: ports.single "0000:05:00.0" from --single' in p.stderr,
          f"stick --single: a device of one's own: {cfg['ports']}")
    c = check_config(out)
    check(c.returncode == 0, "stick --single: shaperd --check-config accepts it", c.stderr)
    os.unlink(out)
    p = run_import(conf, out, "--wan", "net_af_packet0,iface=wan0", "--lan",
                   "net_af_packet1,iface=lan0")
    check(p.returncode == 1 and "--single" in p.stderr and not os.path.exists(out),
          f"stick with --wan/--lan: refused, nothing written {p.stderr.strip()[-160:]!r}")
    with open(conf) as f:
        stick_text = f.read()
    for what, text, want in (
            ("the same VLAN both sides", stick_text.replace("network_vlan = 3",
                                                            "network_vlan = 2"),
             "need two VLANs"),
            ("VLAN 4095", stick_text.replace("internet_vlan = 2", "internet_vlan = 4095"),
             "single_interface.internet_vlan: 4095 is not a VLAN id"),
            ("no network_vlan", stick_text.replace("network_vlan = 3\n", ""),
             "single_interface.network_vlan is missing"),
            ("a [bridge] too", stick_text + '\n[bridge]\nto_internet = "a"\nto_network = "b"\n',
             "both [bridge] and [single_interface]")):
        bad = os.path.join(tmp, "stick-bad.conf")
        with open(bad, "w") as f:
            f.write(text)
        p = run_import(bad, out)
        check(p.returncode == 1 and want in p.stderr and not os.path.exists(out),
              f"stick, {what}: refused {p.stderr.strip()[-160:]!r}")
    p = run_import(os.path.join(fixtures, "lqos-1.5.conf"), out, "--single", "x")
    check(p.returncode == 1 and "not --single" in p.stderr, "two ports with --single: refused")

    # Refusals, and a key it does not know.
    bad = os.path.join(tmp, "bad.conf")
    with open(bad, "w") as f:
        f.write("[bridge\nto_internet = 1\n")
    p = run_import(bad, out)
    check(p.returncode == 1 and "not TOML" in p.stderr, "broken TOML: refused")
    with open(os.path.join(fixtures, "lqos-1.5.conf")) as f:
        text = f.read()
    with open(bad, "w") as f:
        f.write(text.replace('default_sqm = "cake diffserv4"', 'default_sqm = "htb"'))
    p = run_import(bad, out)
    check(p.returncode == 1 and '"htb" is neither cake nor fq_codel' in p.stderr,
          f"default_sqm htb: refused: {p.stderr.strip()[-120:]!r}")
    with open(bad, "w") as f:
        f.write(text + "\n[brand_new]\nsetting = 1\n")
    p = run_import(bad, out)
    check(p.returncode == 0 and "brand_new.setting: not a key this importer knows" in p.stderr,
          "an unknown section: imported, its key named as unknown")

print("import_libreqos: " + ("all passed" if failures == 0 else f"{failures} failed"))
sys.exit(1 if failures else 0)
