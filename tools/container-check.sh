#!/usr/bin/env bash
# Build docker/Dockerfile with buildah and check the image: shaperd --version,
# then shaperd --check-config on the example configs and every preset, inside
# it. Needs root, buildah and debootstrap (installed if missing). No registry
# is needed: without a local debian:bookworm-slim, one is made with
# debootstrap from Debian's mirror (a few minutes, once). buildah with
# --isolation chroot, because where no Docker engine runs and podman's runtimes
# cannot set their rlimits (a sandboxed CI machine), that still builds an image
# and runs a command in it; it is not run as a container with ports.
#
# usage: bash tools/container-check.sh      (exit 0 = image built and checked)
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
if ! buildah inspect --type image "$base" >/dev/null 2>&1; then
	echo "container-check: making $base with debootstrap"
	root=$(mktemp -d)
	trap 'rm -rf "$root"' EXIT
	debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null
	tar -C "$root" -c . | buildah import - "$base" >/dev/null 2>&1 ||
		{ tar -C "$root" -c . | podman import - "$base" >/dev/null; }
fi
start=$(date +%s)
buildah bud --isolation chroot --pull=never -f docker/Dockerfile -t "$image" . >/tmp/container-check.log 2>&1 ||
	{
		tail -30 /tmp/container-check.log
		echo "container-check: FAIL: the image did not build (log: /tmp/container-check.log)"
		exit 1
	}
echo "container-check: built $image in $(($(date +%s) - start)) s"
ctr=$(buildah from "$image")
trap 'buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
fails=0
if out=$(buildah run --isolation chroot "$ctr" -- /usr/local/bin/shaperd --version 2>&1); then
	echo "ok   shaperd --version: $(echo "$out" | head -1)"
else
	echo "FAIL shaperd --version: $out"
	fails=$((fails + 1))
fi
files=$(buildah run --isolation chroot "$ctr" -- sh -c \
	'ls /etc/shaper/*.json /usr/local/share/shaper/presets/*.json')
n=0
for f in $files; do
	n=$((n + 1))
	if out=$(buildah run --isolation chroot "$ctr" -- sh -c \
		"/usr/local/bin/shaperd -- -c $f --check-config" 2>&1); then
		echo "ok   --check-config $f"
	else
		echo "FAIL --check-config $f: $out"
		fails=$((fails + 1))
	fi
done
[ $n -ge 10 ] || {
	echo "FAIL only $n configs found in the image"
	fails=$((fails + 1))
}
[ $fails = 0 ] && echo "container-check: passed" || echo "container-check: $fails check(s) failed"
exit $((fails != 0))
