#!/usr/bin/env bash
# `meson install` into a DESTDIR, then check what landed: the binaries run, every
# config/*.json is among the presets and passes the installed shaperd's
# --check-config, `systemd-analyze verify` accepts shaperd@.service without a
# complaint (it only warns on unknown keys, so any message about the unit
# fails), systemd-tmpfiles and systemd-sysusers apply their entries under a
# scratch root, the LibreQoS importer runs, and each man page formats without a groff warning and has a
# NAME line whatis can read.
# usage: install_test.sh MESON BUILD_ROOT SOURCE_ROOT PREFIX BINDIR DATADIR MANDIR UNITDIR TMPFILESDIR SYSUSERSDIR
set -u
meson=$1 build=$2 src=$3 prefix=$4
bindir=$5 datadir=$6 mandir=$7 unitdir=$8 tmpfilesdir=$9 sysusersdir=${10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
D=$tmp/dest
fail=0
bad() {
	echo "FAIL $*"
	fail=1
}

if ! "$meson" install -C "$build" --destdir "$D" --no-rebuild --quiet >"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log"
	echo "FAIL meson install"
	exit 1
fi
echo "ok   meson install --destdir"

for b in shaperd shapectl; do
	if "$D$bindir/$b" --version >"$tmp/v" 2>&1; then
		echo "ok   $bindir/$b: $(head -1 "$tmp/v")"
	else
		bad "$bindir/$b --version: $(cat "$tmp/v")"
	fi
done
# The LibreQoS importer is a Python script: it runs with the system's python3.
imp=$D$bindir/shaper-import-libreqos
if [ -x "$imp" ] && "$imp" --help >"$tmp/v" 2>&1 && grep -q 'lqos_conf' "$tmp/v"; then
	echo "ok   $bindir/shaper-import-libreqos --help"
else
	bad "$bindir/shaper-import-libreqos missing, not executable or not running: $(cat "$tmp/v")"
fi

presets=$D$datadir/shaper/presets
for f in "$src"/config/*.json; do
	p=$presets/$(basename "$f")
	if [ ! -f "$p" ]; then
		bad "$(basename "$f") is in config/ but not installed (list it in dist/meson.build)"
	elif ! cmp -s "$f" "$p"; then
		bad "$p differs from $f"
	elif ! "$D$bindir/shaperd" -- -c "$p" --check-config >/dev/null 2>"$tmp/err" || [ -s "$tmp/err" ]; then
		bad "installed shaperd --check-config $p: $(cat "$tmp/err")"
	fi
done
echo "ok   $(ls "$presets" | wc -l) presets in $datadir/shaper/presets"

dash=$D$datadir/shaper/grafana/shaper-dashboard.json
if cmp -s "$src/tools/grafana/shaper-dashboard.json" "$dash"; then
	echo "ok   Grafana dashboard in $datadir/shaper/grafana"
else
	bad "$datadir/shaper/grafana/shaper-dashboard.json missing or not tools/grafana's"
fi

# the fail-open objects, where shaperd looks for them (SHAPER_BPF_DIR = PREFIX/lib/shaper)
for obj in failopen.bpf.o failopen_tc.bpf.o; do
	if cmp -s "$build/src/$obj" "$D$prefix/lib/shaper/$obj" &&
		strings "$D$bindir/shaperd" | grep -qx "$prefix/lib/shaper"; then
		echo "ok   fail-open object $obj in $prefix/lib/shaper"
	else
		bad "$prefix/lib/shaper/$obj missing, not the build's, or not where shaperd looks"
	fi
done

# systemd
unit=$D$unitdir/shaperd@.service
[ -f "$unit" ] || bad "no $unitdir/shaperd@.service"
[ -f "$D$tmpfilesdir/shaper.conf" ] || bad "no $tmpfilesdir/shaper.conf"
[ -f "$D$sysusersdir/shaper.conf" ] || bad "no $sysusersdir/shaper.conf"
if grep -n '@[a-z]*@' "$unit"; then
	bad "shaperd@.service has unsubstituted @variables@"
fi
if ! command -v systemd-analyze >/dev/null; then
	echo "SKIP systemd-analyze is missing (install systemd)"
	exit 77
fi
# verify checks that ExecStart's binary exists and that the Documentation=
# man pages resolve: point both at the DESTDIR copies. A template is verified
# through an instance.
mkdir -p "$tmp/units"
sed "s|$prefix/|$D$prefix/|g" "$unit" >"$tmp/units/shaperd@verify.service"
MANPATH=$D$mandir systemd-analyze verify "$tmp/units/shaperd@verify.service" >"$tmp/verify" 2>&1
rc=$?
if [ $rc -ne 0 ] || grep -q 'shaperd@' "$tmp/verify"; then
	cat "$tmp/verify"
	bad "systemd-analyze verify shaperd@.service (rc $rc)"
else
	echo "ok   systemd-analyze verify shaperd@.service"
fi
# For the record, not a criterion: systemd's own exposure rating.
systemd-analyze security --offline=yes "$tmp/units/shaperd@verify.service" 2>/dev/null |
	grep 'Overall exposure' | sed 's/^/info /'

root=$tmp/root
mkdir -p "$root/etc"
if systemd-tmpfiles --root="$root" --create "$D$tmpfilesdir/shaper.conf" 2>"$tmp/err" &&
	[ "$(stat -c %a "$root/run/shaper" 2>/dev/null)" = 755 ] && [ ! -s "$tmp/err" ]; then
	echo "ok   systemd-tmpfiles --create makes /run/shaper 0755"
else
	bad "systemd-tmpfiles: $(cat "$tmp/err")"
fi
if systemd-sysusers --root="$root" "$D$sysusersdir/shaper.conf" >/dev/null 2>"$tmp/err" &&
	grep -q '^shaper:' "$root/etc/group"; then
	echo "ok   systemd-sysusers creates the group shaper"
else
	bad "systemd-sysusers: $(cat "$tmp/err")"
fi

# man pages
for page in man8/shaperd.8 man8/shapectl.8 man5/shaper.json.5 man1/shaper-import-libreqos.1; do
	f=$D$mandir/$page
	if [ ! -f "$f" ]; then
		bad "no $mandir/$page"
		continue
	fi
	if ! MANWIDTH=80 man --warnings -l "$f" >"$tmp/out" 2>"$tmp/err" || [ -s "$tmp/err" ] ||
		[ ! -s "$tmp/out" ]; then
		bad "man --warnings -l $page: $(cat "$tmp/err")"
	elif ! groff -ww -z -man "$f" 2>"$tmp/err" || [ -s "$tmp/err" ]; then
		bad "groff -ww -man $page: $(cat "$tmp/err")"
	elif ! lexgrog "$f" >/dev/null 2>&1; then
		bad "lexgrog $page: whatis cannot parse the NAME section"
	else
		echo "ok   man -l $page: $(lexgrog "$f" | sed 's/^[^"]*"//; s/"$//')"
	fi
done
exit $fail
