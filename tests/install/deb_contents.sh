#!/usr/bin/env bash
# Check the Debian package tools/build-deb.sh left in DEB_DIR (the newest
# shaper_*.deb there) without installing it: dpkg-deb's listing holds the
# binaries, man pages, the template unit, the sysusers and tmpfiles entries,
# every config/*.json as a preset, the Grafana dashboard, the fail-open XDP
# object and the copyright
# file; that file is debian/copyright, whose licence text is LICENSE's; the
# extracted shaperd runs and passes --check-config on every extracted preset;
# Depends names the PMDs shaperd loads at run time and no test tool; the
# maintainer scripts restart running instances on upgrade and stop them on
# removal; the version is the project's. Exit 77 when no package was built.
# usage: deb_contents.sh DEB_DIR SOURCE_ROOT PROJECT_VERSION
set -u
dir=$1 src=$2 project_version=$3
arch=$(dpkg --print-architecture)
deb=$(ls -t "$dir"/shaper_*_"$arch".deb 2>/dev/null | head -1)
if [ -z "$deb" ]; then
	echo "SKIP no shaper_*_$arch.deb in $dir (tools/build-deb.sh $dir builds one)"
	exit 77
fi
echo "info $deb"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() {
	echo "FAIL $*"
	fail=1
}

dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$tmp/list"
want=(/usr/bin/shaperd /usr/bin/shapectl /usr/bin/shaper-import-libreqos
	/usr/share/man/man8/shaperd.8.gz /usr/share/man/man8/shapectl.8.gz
	/usr/share/man/man1/shaper-import-libreqos.1.gz
	/usr/share/man/man5/shaper.json.5.gz
	/lib/systemd/system/shaperd@.service /lib/systemd/system/shaper-pci@.service
	/lib/systemd/system/shaper-rebind@.service /usr/lib/shaper/shaper-pci-setup
	/usr/lib/shaper/shaper-pci-rebind /usr/share/doc/shaper/examples/fail-open.conf
	/usr/lib/sysusers.d/shaper.conf /usr/lib/tmpfiles.d/shaper.conf
	/usr/share/shaper/grafana/shaper-dashboard.json /usr/lib/shaper/failopen.bpf.o /usr/lib/shaper/failopen_tc.bpf.o
	/usr/share/doc/shaper/copyright /etc/shaper/)
for f in "$src"/config/*.json; do
	want+=("/usr/share/shaper/presets/$(basename "$f")")
done
missing=0
for p in "${want[@]}"; do
	grep -qxF "$p" "$tmp/list" || {
		bad "$p is not in the package"
		missing=1
	}
done
[ $missing = 1 ] || echo "ok   dpkg-deb -c: all ${#want[@]} expected paths"
npresets=$(grep -c '^/usr/share/shaper/presets/[^/]*\.json$' "$tmp/list")
nconfig=$(ls "$src"/config/*.json | wc -l)
[ "$npresets" = "$nconfig" ] || bad "$npresets presets in the package, $nconfig in config/"

dpkg-deb -x "$deb" "$tmp/x"
x=$tmp/x
if cmp -s "$src/debian/copyright" "$x/usr/share/doc/shaper/copyright"; then
	echo "ok   /usr/share/doc/shaper/copyright is debian/copyright"
else
	bad "/usr/share/doc/shaper/copyright differs from debian/copyright"
fi
# The licence paragraph of debian/copyright (DEP-5: " ." for blank lines)
# against LICENSE from its first numbered clause on, words only.
words() { tr -s ' \n\t' '\n\n\n' | grep -v '^\.\?$'; }
awk '/^License: BSD-3-Clause$/ { text = ""; on = 1; next } on { text = text $0 "\n" }
	END { printf "%s", text }' "$src/debian/copyright" | words >"$tmp/dep5"
sed -n '/^Redistribution and use/,$p' "$src/LICENSE" | words >"$tmp/license"
if [ -s "$tmp/license" ] && cmp -s "$tmp/dep5" "$tmp/license" &&
	grep -q '^Files: \*$' "$src/debian/copyright" &&
	grep -q "^Copyright: $(sed -n 's/^Copyright (c) \([0-9]*\), \(.*\)$/\1 \2/p' "$src/LICENSE")$" \
		"$src/debian/copyright"; then
	echo "ok   debian/copyright: BSD-3-Clause, holder and text as in LICENSE"
else
	diff "$tmp/license" "$tmp/dep5" | head -5
	bad "debian/copyright does not agree with LICENSE"
fi

if out=$("$x/usr/bin/shaperd" --version 2>&1) && out2=$("$x/usr/bin/shapectl" --version 2>&1); then
	echo "ok   extracted shaperd and shapectl run: $(echo "$out" | head -1)"
else
	bad "extracted binaries: $out $out2"
fi
for p in "$x"/usr/share/shaper/presets/*.json; do
	"$x/usr/bin/shaperd" -- -c "$p" --check-config >/dev/null 2>"$tmp/err" ||
		bad "extracted shaperd --check-config $(basename "$p"): $(cat "$tmp/err")"
done
echo "ok   extracted shaperd --check-config on $npresets presets"
unit=$x/lib/systemd/system/shaperd@.service
if grep -q '^ExecStart=/usr/bin/shaperd ' "$unit" && ! grep -q '@[a-z]*@' "$unit" &&
	grep -q '/etc/shaper/%i.json' "$unit"; then
	echo "ok   unit runs /usr/bin/shaperd with /etc/shaper/%i.json"
else
	bad "shaperd@.service: ExecStart or config path wrong"
fi

depends=$(dpkg-deb -f "$deb" Depends)
for p in librte-mempool-ring23 librte-bus-vdev23 librte-bus-pci23 librte-net-af-xdp23 \
	librte-net-af-packet23 libjansson4 libmicrohttpd12 python3; do
	echo "$depends" | grep -qE "(^|, )$p( |,|$)" || bad "Depends lacks $p: $depends"
done
for p in clang valgrind cmocka meson; do
	echo "$depends $(dpkg-deb -f "$deb" Recommends)" | grep -q "$p" && bad "the package pulls in $p"
done
echo "info Depends: $depends"

dpkg-deb -e "$deb" "$tmp/ctrl"
grep -q "try-restart 'shaperd@\*.service'" "$tmp/ctrl/postinst" ||
	bad "postinst does not restart running shaperd@ instances"
grep -q "stop 'shaperd@\*.service'" "$tmp/ctrl/prerm" ||
	bad "prerm does not stop shaperd@ instances on removal"
grep -q 'systemd-sysusers' "$tmp/ctrl/postinst" || bad "postinst does not create the group"
grep -q 'systemd-tmpfiles' "$tmp/ctrl/postinst" || bad "postinst does not create /run/shaper"
for s in postinst prerm; do
	sh -n "$tmp/ctrl/$s" || bad "$s does not parse"
done
echo "ok   maintainer scripts: group, /run/shaper, try-restart on upgrade, stop on removal"

version=$(dpkg-deb -f "$deb" Version)
[ "${version%%[+~-]*}" = "$project_version" ] ||
	bad "package version $version is not the project's $project_version (debian/changelog)"
exit $fail
