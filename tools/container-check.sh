#!/usr/bin/env bash
# Build docker/Dockerfile with buildah from the Debian package and check the
# image: the package is installed (dpkg-query) and its postinst made the group
# shaper, shaperd --version and shapectl --version run, and shaperd
# --check-config passes on every preset in /usr/share/shaper/presets (as many
# as config/ holds) and on the default /etc/shaper/shaper.json, inside it. The
# package is DEB if given, else built
# now with tools/build-deb.sh (several minutes). Needs root, buildah and
# debootstrap (installed if missing). No registry is needed: without a local
# debian:bookworm-slim, one is made with debootstrap from Debian's mirror (a
# few minutes, once). buildah with --isolation chroot, because where no Docker
# engine runs and podman's runtimes cannot set their rlimits (a sandboxed CI
# machine), that still builds an image and runs a command in it; it is not run
# as a container with ports.
#
# usage: bash tools/container-check.sh [DEB]   (exit 0 = image built and checked)
set -euo pipefail
cd "$(dirname "$0")/.."
image=localhost/shaper:check
base=docker.io/library/debian:bookworm-slim

if [ "$(id -u)" != 0 ]; then
	echo "container-check: run as root" >&2
	exit 1
fi
for t in buildah debootstrap; do
	if ! command -v "$t" >/dev/null; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah debootstrap >/dev/null
		break
	fi
done
work=$(mktemp -d)
ctr=
cleanup() {
	[ -z "$ctr" ] || buildah rm "$ctr" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

# The build context: the package alone, under the name the Dockerfile copies.
mkdir "$work/ctx"
if [ $# -gt 0 ]; then
	deb=$1
else
	bash tools/build-deb.sh "$work/debs" >"$work/build-deb.log" 2>&1 ||
		{
			tail -30 "$work/build-deb.log"
			echo "container-check: FAIL: tools/build-deb.sh"
			exit 1
		}
	deb=$(ls "$work"/debs/shaper_*.deb)
fi
[ -f "$deb" ] || {
	echo "container-check: FAIL: no package $deb"
	exit 1
}
version=$(dpkg-deb -f "$deb" Version)
cp "$deb" "$work/ctx/shaper_${version}.deb"

if ! buildah inspect --type image "$base" >/dev/null 2>&1; then
	echo "container-check: making $base with debootstrap"
	mkdir -p "$work/root" "$work/base"
	debootstrap --variant=minbase bookworm "$work/root" http://deb.debian.org/debian >/dev/null
	# buildah has no import: an image FROM scratch whose one layer is the tree.
	tar -C "$work/root" -cf "$work/base/rootfs.tar" .
	rm -rf "$work/root"
	printf 'FROM scratch\nADD rootfs.tar /\nCMD ["bash"]\n' >"$work/base/Dockerfile"
	buildah bud --isolation chroot -f "$work/base/Dockerfile" -t "$base" "$work/base" \
		>"$work/base.log" 2>&1 || {
		tail -20 "$work/base.log"
		echo "container-check: FAIL: could not make $base"
		exit 1
	}
	rm -rf "$work/base"
fi
start=$(date +%s)
buildah bud --isolation chroot --pull=never -f docker/Dockerfile -t "$image" "$work/ctx" \
	>/tmp/container-check.log 2>&1 ||
	{
		tail -30 /tmp/container-check.log
		echo "container-check: FAIL: the image did not build (log: /tmp/container-check.log)"
		exit 1
	}
echo "container-check: built $image from $(basename "$deb") in $(($(date +%s) - start)) s"
ctr=$(buildah from "$image")
run() { buildah run --isolation chroot "$ctr" -- "$@"; }
fails=0
fail() {
	echo "FAIL $*"
	fails=$((fails + 1))
}
if out=$(run dpkg-query -W -f='${Status} ${Version}' shaper 2>&1) &&
	[ "$out" = "install ok installed $version" ]; then
	echo "ok   dpkg: shaper $version installed"
else
	fail "dpkg-query shaper: $out (wanted $version installed)"
fi
# The postinst ran: systemd-sysusers made the group the control socket uses.
if out=$(run getent group shaper 2>&1); then
	echo "ok   postinst: group $out"
else
	fail "no group shaper in the image (postinst's systemd-sysusers): $out"
fi
for b in shaperd shapectl; do
	if out=$(run /usr/bin/$b --version 2>&1); then
		echo "ok   $b --version: $(echo "$out" | head -1)"
	else
		fail "$b --version: $out"
	fi
done
files=$(run sh -c 'ls /usr/share/shaper/presets/*.json /etc/shaper/*.json')
n=0
for f in $files; do
	case $f in /usr/share/shaper/presets/*) n=$((n + 1)) ;; esac
	if out=$(run /usr/bin/shaperd -- -c "$f" --check-config 2>&1); then
		echo "ok   --check-config $f"
	else
		fail "--check-config $f: $out"
	fi
done
want=$(ls config/*.json | wc -l)
[ "$n" = "$want" ] || fail "$n presets in the image, config/ has $want"
[ $fails = 0 ] && echo "container-check: passed" || echo "container-check: $fails check(s) failed"
exit $((fails != 0))
