#!/usr/bin/env bash
# Every test: installs what is missing, builds, builds the Debian package
# (tools/build-deb.sh, into build/deb, with lintian), then runs the unit, simulation,
# integration, end-to-end and pktgen suites (integration and e2e need root, and
# pktgen needs pktgen-dpdk, see tools/pktgen/README.md; they are skipped otherwise), then the
# fuzz suite (25 s per libFuzzer harness; skipped without clang), then unit
# and simulation in a release build (build-release/), then unit, simulation
# and integration again under ASan+UBSan in build-asan/, then builds the
# container image from the package (tools/container-check.sh). Extra arguments go
# to `meson test` on build/ instead (e.g. --suite sim).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
stage_start=$start
# Each stage's wall time, so a slow stage shows in CI's log.
stage_done() {
	local now
	now=$(date +%s)
	echo "run-tests: $1 took $((now - stage_start)) s"
	stage_start=$now
}

bash tools/install-deps.sh
# meson builds through ccache when it is installed; keyed without the build
# directory's absolute path, so the mutation check's scratch copy of the tree
# (tools/mutate.py) reuses these objects instead of compiling them again.
export CCACHE_NOHASHDIR=1 CCACHE_BASEDIR="$PWD"
if [ -f build/build.ninja ]; then
	meson setup --reconfigure build >/dev/null
else
	meson setup build >/dev/null
fi
ninja -C build
stage_done "deps and build"
if [ $# -eq 0 ]; then
	# The Debian package from a clean copy of the tree and lintian on it (its
	# own unit run is skipped: the suites below run them on the same code);
	# the install suite's deb_contents test checks what it holds, the
	# container check below installs it.
	DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" bash tools/build-deb.sh build/deb
	stage_done "package and lintian"
fi
if [ $# -gt 0 ]; then
	meson test -C build --print-errorlogs --num-processes 2 "$@"
else
	meson test -C build --print-errorlogs --num-processes 2 --no-suite fuzz
	stage_done "unit, sim, integration, e2e, pktgen"
	# The fuzzers use a whole core each for 25 s: after the timing-sensitive
	# suites, two at a time, one a core (tools/fuzz.sh builds them with clang
	# in build-fuzz/, one build at a time).
	meson test -C build --print-errorlogs --num-processes 2 --suite fuzz
	stage_done "fuzz"
	# A release build (what the deployment guide installs: -O3, NDEBUG) with
	# -Werror: optimisation brings warnings of its own (gcc's
	# maybe-uninitialized), and the unit and simulation suites run on the
	# optimised code. The format check (suite style) needs no second run.
	if [ -f build-release/build.ninja ]; then
		meson setup --reconfigure build-release >/dev/null
	else
		meson setup build-release -Dbuildtype=release -Dwerror=true >/dev/null
	fi
	ninja -C build-release
	meson test -C build-release --print-errorlogs --num-processes 2 \
		--suite unit --suite sim --no-suite style
	stage_done "release build and tests"
	# The unit, simulation and integration suites again, built with ASan and
	# UBSan (any report fails the test that made it); not the benchmark
	# harness's smoke test (suite bench) nor the format check (suite style).
	if [ -f build-asan/build.ninja ]; then
		meson setup --reconfigure build-asan >/dev/null
	else
		meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
	fi
	ninja -C build-asan
	ASAN_OPTIONS=abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C build-asan --print-errorlogs --num-processes 2 \
		--suite unit --suite sim --suite integration --no-suite bench --no-suite style
	stage_done "ASan build and tests"
	# The container image installs the package just built; shaperd passes
	# --check-config on every preset inside it (buildah; not timing-sensitive).
	bash tools/container-check.sh "$(ls -t build/deb/shaper_*_"$(dpkg --print-architecture)".deb | head -1)"
	stage_done "container"
fi
echo "run-tests: passed in $(($(date +%s) - start)) s"
