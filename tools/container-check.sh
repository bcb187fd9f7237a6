#!/usr/bin/env bash
# Build docker/Dockerfile with buildah from the Debian package and check the
# image: the package is installed (dpkg-query) and its postinst made the group
# shaper, shaperd --version and shapectl --version run, and shaperd
# --check-config passes on every preset in /usr/share/shaper/presets (as many
# as config/ holds) and on the default /etc/shaper/shaper.json, inside it;
# then it starts the image's default command in a network namespace whose
# eth0 and eth1 lead to a WAN and a LAN namespace, pings across it and stops
# it with SIGINT (exit 0, frames sent on both ports, no mbuf held). The
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

# The image's default command, started as a container runs it: in a network
# namespace of its own whose eth0 and eth1 lead to a WAN and a LAN namespace,
# with the capabilities the Dockerfile names. It must bridge: a ping from the
# LAN side to the WAN side crosses it, and on SIGINT it exits 0 having sent
# frames on both ports and holding no mbuf.
cmd=$(buildah inspect --type image "$image" |
	python3 -c 'import json, shlex, sys; print(shlex.join(json.load(sys.stdin)["OCIv1"]["config"]["Cmd"]))')
ns=shaper-ctrchk-$$
netns_up() {
	ip netns add "$ns" && ip netns add "$ns-wan" && ip netns add "$ns-lan" &&
		ip -n "$ns" link add eth0 type veth peer name eth0 netns "$ns-wan" &&
		ip -n "$ns" link add eth1 type veth peer name eth0 netns "$ns-lan" &&
		for n in "$ns" "$ns-wan" "$ns-lan"; do
			for i in lo eth0 eth1; do
				ip -n "$n" link set "$i" up 2>/dev/null || [ "$i" = eth1 ]
			done
		done &&
		ip -n "$ns-wan" addr add 10.213.0.2/24 dev eth0 &&
		ip -n "$ns-lan" addr add 10.213.0.1/24 dev eth0
}
netns_down() {
	for n in "$ns" "$ns-wan" "$ns-lan"; do ip netns del "$n" 2>/dev/null || true; done
}
trap 'netns_down; cleanup' EXIT
if ! netns_up; then
	fail "could not make the network namespaces for the default command"
else
	log=$work/default-cmd.log
	eval "set -- $cmd"
	ip netns exec "$ns" buildah run --isolation chroot --network host \
		--cap-add CAP_NET_RAW --cap-add CAP_NET_ADMIN --cap-add CAP_SYS_NICE \
		--cap-add CAP_IPC_LOCK "$ctr" -- /usr/bin/shaperd "$@" >"$log" 2>&1 &
	runner=$!
	for _ in $(seq 1 60); do
		grep -q "bridging" "$log" && break
		kill -0 "$runner" 2>/dev/null || break
		sleep 0.5
	done
	if grep -q "bridging" "$log"; then
		echo "ok   default command bridging: shaperd $cmd"
		got=$(ip netns exec "$ns-lan" ping -c 10 -i 0.2 -W 2 10.213.0.2 |
			sed -n 's/.* \([0-9]*\) received.*/\1/p')
		if [ "${got:-0}" -ge 8 ]; then
			echo "ok   a ping from the LAN side to the WAN side through it: $got of 10"
		else
			fail "a ping through the default command's bridge: ${got:-0} of 10 replies (want >= 8)"
		fi
		pid=$(for p in $(ip netns pids "$ns"); do
			[ "$(cat /proc/"$p"/comm 2>/dev/null)" = shaperd ] && echo "$p"
		done | head -1)
		[ -z "$pid" ] || kill -INT "$pid"
	else
		fail "the default command did not start bridging: $(grep -v '^EAL' "$log" | tail -5)"
		kill "$runner" 2>/dev/null || true
	fi
	wait "$runner" && rc=0 || rc=$?
	# The exit summary: each port's rx and tx packets, then the mbufs still held.
	if [ "$rc" = 0 ] && awk '$1 == "wan" || $1 == "lan" { if ($3 + 0 > 0) n++ }
		END { exit n == 2 ? 0 : 1 }' "$log" && grep -q "mbufs in use at exit: 0" "$log"; then
		echo "ok   default command stopped on SIGINT: frames sent on both ports, no mbuf held"
	else
		fail "the default command's exit (status $rc): $(grep -v '^EAL' "$log" | tail -6)"
	fi
fi
[ $fails = 0 ] && echo "container-check: passed" || echo "container-check: $fails check(s) failed"
exit $((fails != 0))
