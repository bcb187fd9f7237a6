#!/usr/bin/env bash
# Install the Debian 12 packages shaper needs to build, test and run its bed
# (--build-only: to build it; --package: to build and check its Debian package
# with tools/build-deb.sh). Safe to run twice: installs only what is missing
# (needs root for that).
set -euo pipefail

# What building shaperd needs (debian/control's Build-Depends name the same
# libraries).
build_pkgs=(
	gcc libc6-dev meson ninja-build pkg-config
	dpdk dpdk-dev libdpdk-dev libjansson-dev libbpf-dev libxdp-dev libpcap-dev
	# sd_notify: readiness and the worker-health watchdog
	libsystemd-dev
	# the Prometheus /metrics endpoint
	libmicrohttpd-dev
	# the fail-open XDP and tc programs (clang -target bpf)
	clang
)
# tools/build-deb.sh: dpkg-buildpackage, debhelper (the package's unit suite
# needs cmocka) and lintian.
package_pkgs=(dpkg-dev debhelper lintian libcmocka-dev)
test_pkgs=(
	# tests and the namespace bed
	python3 python3-scapy python3-matplotlib iproute2 iputils-ping iperf3 fping irtt ethtool
	tcpdump procps kmod clang-format valgrind
	# the mutation check's scratch build reuses the main build's objects
	ccache
	# the /metrics test scrapes shaperd with a real Prometheus server
	prometheus
	# the install test: systemd-analyze, systemd-tmpfiles, man, groff
	systemd man-db groff-base
	# fuzzing (tests/fuzz, suite fuzz): clang with its libFuzzer, ASan and UBSan runtimes
	clang libclang-rt-14-dev
	# the pktgen load test builds pktgen-dpdk (tools/pktgen/README.md; Lua scripts, socat)
	liblua5.3-dev libnuma-dev socat
)
case ${1:-} in
--build-only) pkgs=("${build_pkgs[@]}") ;;
--package) pkgs=("${build_pkgs[@]}" "${package_pkgs[@]}") ;;
"") pkgs=("${build_pkgs[@]}" "${package_pkgs[@]}" "${test_pkgs[@]}") ;;
*)
	echo "usage: install-deps.sh [--build-only | --package]" >&2
	exit 2
	;;
esac

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#pkgs[@]} packages present"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}" >&2
	echo "install-deps: run as root (or: sudo apt-get install ${missing[*]})" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
