#!/usr/bin/env bash
# Build the Debian package (debian/, dpkg-buildpackage) from a clean copy of
# the tree: the committed tree plus tracked files changed since (`git stash
# create`), never the build directories. Installs missing build packages with
# tools/install-deps.sh --package, builds source and binary packages (the unit
# suite runs during the build unless DEB_BUILD_OPTIONS has nocheck), runs
# lintian on them and leaves shaper_VERSION_ARCH.deb, the .dsc, .tar.xz,
# .buildinfo, .changes and lintian.txt in OUTDIR.
#
# usage: tools/build-deb.sh OUTDIR [--version VERSION]
#   --version  the package's version instead of debian/changelog's (e.g.
#              0.1.0+1, to build a later package for an upgrade test)
# exit 0 = built, and lintian reported no error
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: build-deb.sh OUTDIR [--version VERSION]}
shift
version=
while [ $# -gt 0 ]; do
	case $1 in
	--version)
		version=${2:?--version needs a value}
		shift 2
		;;
	*)
		echo "build-deb: unknown argument $1" >&2
		exit 2
		;;
	esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

bash "$src/tools/install-deps.sh" --package

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/shaper"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	rev=$(git -C "$src" stash create 2>/dev/null || true)
	git -C "$src" archive "${rev:-HEAD}" | tar -x -C "$tmp/shaper"
else
	tar -C "$src" --exclude='./build*' -c . | tar -x -C "$tmp/shaper"
fi
cd "$tmp/shaper"
if [ -n "$version" ]; then
	sed -i "1s/^shaper ([^)]*)/shaper ($version)/" debian/changelog
fi
version=$(dpkg-parsechangelog -S Version)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)

start=$(date +%s)
if ! nice dpkg-buildpackage -us -uc -j"$(nproc)" >"$tmp/build.log" 2>&1; then
	tail -40 "$tmp/build.log"
	cp "$tmp/build.log" "$out/build.log"
	echo "build-deb: FAIL: dpkg-buildpackage (log: $out/build.log)" >&2
	exit 1
fi
cp "$tmp/build.log" "$out/build.log"
for f in "$tmp"/shaper_"$version"* "$tmp"/shaper-dbgsym_"$version"*; do
	cp "$f" "$out/"
done
echo "build-deb: built $out/shaper_${version}_$arch.deb in $(($(date +%s) - start)) s"

# lintian on the .changes checks the .dsc, the source and the .deb.
changes=$out/shaper_${version}_$arch.changes
rc=0
lintian --info --display-info --fail-on error "$changes" >"$out/lintian.txt" 2>&1 || rc=$?
if [ -s "$out/lintian.txt" ]; then
	cat "$out/lintian.txt"
fi
echo "build-deb: lintian: $(grep -c '^E:' "$out/lintian.txt" || true) error(s)," \
	"$(grep -c '^W:' "$out/lintian.txt" || true) warning(s)," \
	"$(grep -c '^I:' "$out/lintian.txt" || true) info(s)"
if [ $rc -ne 0 ]; then
	echo "build-deb: FAIL: lintian reported errors ($out/lintian.txt)" >&2
	exit 1
fi
