#!/usr/bin/env bash
# Every test: installs what is missing and builds; then the timing-sensitive
# suites run in the foreground (unit, config, end to end and pktgen on build/,
# then the integration suite under ASan+UBSan on build-asan/, the soak test
# with it, and last the guest bed's smoke),
# while everything that only needs CPU, disk or the network runs beside them
# at the lowest priority (nice 19, idle I/O class), in two chains:
#  - the ASan+UBSan build and its unit and simulation suites, a release build
#    (-O3, NDEBUG, -Werror) with its unit and simulation suites, the fuzz
#    suite (25 s per libFuzzer harness) and the mutation sample;
#  - the Debian package (tools/build-deb.sh into build/deb, with lintian), the
#    install suite on it, the guest bed's image for it (QEMU and mmdebstrap
#    installed when missing; tests/guest/guest_smoke.py --prepare) and the
#    container image (tools/container-check.sh).
# The foreground suites are built to stay green with a niced CPU hog on both
# cores beside them, and this is one.
# Integration, e2e and the guest bed need root, pktgen needs pktgen-dpdk
# (tools/pktgen/README.md), fuzz needs clang; each is skipped otherwise.
#
# A stage that fails does not stop the run: every other stage still runs and
# reports, the summary at the end lists each stage's time and result and the
# ten slowest tests, and the exit status is non-zero if any stage failed.
# Extra arguments go to `meson test` on build/ instead (e.g. --suite sim).
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
mkdir -p build
results=build/run-tests-stages.txt
bglog=build/run-tests-background.log
pkglog=build/run-tests-package.log
asan_ready=build/run-tests-asan-built
# Written when the package chain is over: the package's path once its guest
# image is ready, empty otherwise.
guest_ready=build/run-tests-guest-image
: >"$results"
rm -f "$asan_ready" "$guest_ready"

# stage NAME CMD...: runs CMD, records its wall time and result (in a file, so
# that the background chain's stages are counted too), carries on.
stage() {
	local name=$1 t0 rc
	shift
	t0=$(date +%s)
	echo "run-tests: -- $name"
	"$@"
	rc=$?
	printf '%s\t%d\t%d\n' "$name" $(($(date +%s) - t0)) "$rc" >>"$results"
	return 0
}

# The ten slowest tests over every meson run of this invocation (each run
# writes its own log, meson-logs/<base>.json, one JSON object a line).
slowest() {
	/usr/bin/python3 - "$@" <<'PY'
import json, os, sys
rows = []
for path in sys.argv[1:]:
    if not os.path.exists(path):
        continue
    tag = path.split("/")[0]
    for line in open(path):
        try:
            t = json.loads(line)
        except ValueError:
            continue
        rows.append((t.get("duration", 0), "%s %s" % (tag, t.get("name")), t.get("result")))
rows.sort(reverse=True)
for d, name, res in rows[:10]:
    print("run-tests:   %7.1f s  %-50s %s" % (d, name, res))
PY
}

setup() { # DIR [meson options...]: configure DIR once, reconfigure after
	local dir=$1
	shift
	if [ -f "$dir/build.ninja" ]; then
		meson setup --reconfigure "$dir" >/dev/null
	else
		meson setup "$dir" "$@" >/dev/null
	fi
}

deps_and_build() {
	bash tools/install-deps.sh && setup build && ninja -C build
}

# meson builds through ccache when it is installed; keyed without the build
# directory's absolute path, so the mutation check's scratch copy of the tree
# (tools/mutate.py) reuses these objects instead of compiling them again.
export CCACHE_NOHASHDIR=1 CCACHE_BASEDIR="$PWD"

if [ $# -gt 0 ]; then
	deps_and_build || exit 1
	exec meson test -C build --print-errorlogs --num-processes 2 "$@"
fi

stage "deps and build" deps_and_build
if [ "$(tail -1 "$results" | cut -f3)" != 0 ]; then
	echo "run-tests: FAILED: nothing can run without the build"
	exit 1
fi

# ASan and UBSan (any report fails the test that made it) on the unit,
# simulation and integration suites; not the benchmark harness's smoke test
# (suite bench) nor the format check (suite style).
asan_env=(env ASAN_OPTIONS=abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1)
asan_build() {
	setup build-asan -Db_sanitize=address,undefined -Db_lundef=false && ninja -C build-asan
}
asan_offline() {
	"${asan_env[@]}" meson test -C build-asan --no-rebuild --print-errorlogs --num-processes 2 \
		--suite unit --suite sim --no-suite style --logbase asan-offline $bg_timeouts
}
# The Debian package from a clean copy of the tree and lintian on it (its own
# unit run is skipped: the suites here run them on the same code); the install
# suite's deb_contents test checks what it holds, the container check installs it.
package() {
	DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" bash tools/build-deb.sh build/deb
}
# A release build (-O3, NDEBUG: what a from-source install for speed builds)
# with -Werror: optimisation brings warnings of its own (gcc's
# maybe-uninitialized), and the unit and simulation suites run on the
# optimised code. The format check (suite style) needs no second run.
release() {
	setup build-release -Dbuildtype=release -Dwerror=true && ninja -C build-release &&
		meson test -C build-release --no-rebuild --print-errorlogs --num-processes 2 \
			--suite unit --suite sim --no-suite style --logbase release $bg_timeouts
}
newest_deb() {
	ls -t build/deb/shaper_*_"$(dpkg --print-architecture)".deb 2>/dev/null | head -1
}
container() {
	local deb
	deb=$(newest_deb)
	[ -n "$deb" ] || {
		echo "run-tests: no package in build/deb to put in the container" >&2
		return 1
	}
	bash tools/container-check.sh "$deb"
}
# The guest bed's image for this package, built beside the foreground so
# that the smoke at its end only boots it (exit 77, not root: skipped).
guest_image() {
	local deb rc
	deb=$(newest_deb)
	[ -n "$deb" ] || {
		echo "run-tests: no package in build/deb for the guest image" >&2
		return 1
	}
	/usr/bin/python3 tests/guest/guest_smoke.py "$PWD" "$PWD/build" --deb "$PWD/$deb" --prepare
	rc=$?
	[ "$rc" = 77 ] && rc=0
	[ "$rc" = 0 ] && echo "$PWD/$deb" >"$guest_ready"
	return "$rc"
}
guest_smoke() {
	[ -s "$guest_ready" ] || {
		echo "run-tests: the guest image was not built (see $pkglog)" >&2
		return 1
	}
	meson test -C build --no-rebuild --print-errorlogs --suite guest --logbase guest \
		--test-args "--deb $(cat "$guest_ready")"
}
# At the lowest priority beside the foreground, a background test takes what
# CPU is left: its timeouts (which guard against a hang, not a speed) are
# stretched to match.
bg_timeouts="--timeout-multiplier 4"
background_cpu() {
	stage "ASan build" asan_build
	touch "$asan_ready"
	stage "ASan unit and sim" asan_offline
	stage "release build and tests" release
	# The fuzzers use a whole core each for 25 s, two at a time (tools/fuzz.sh
	# builds them with clang in build-fuzz/).
	stage "fuzz" meson test -C build --no-rebuild --print-errorlogs --num-processes 2 \
		--suite fuzz --logbase fuzz $bg_timeouts
	stage "mutation sample" meson test -C build --no-rebuild --print-errorlogs \
		--suite mutation --logbase mutation $bg_timeouts
}
# Mostly the network and the disk: it overlaps the CPU chain well.
background_package() {
	stage "package and lintian" package
	stage "install suite" meson test -C build --no-rebuild --print-errorlogs \
		--suite install --logbase install $bg_timeouts
	stage "guest image" guest_image
	touch "$guest_ready"
	stage "container" container
}
echo "run-tests: the background chains run beside the others at nice 19; their logs: $bglog, $pkglog"
# In a process group of its own (job control on for the moment), so that it
# can be held as a whole while pktgen runs.
set -m
(
	renice -n 19 -p $BASHPID >/dev/null
	ionice -c 3 -p $BASHPID 2>/dev/null
	set +m # both chains in this group
	background_cpu >"$bglog" 2>&1 &
	background_package >"$pkglog" 2>&1 &
	wait
) &
bg=$!
set +m

# Each suite runs once where it says most: the simulation suite (simulated
# time) in the ASan and release builds of the CPU chain, the integration
# suite under ASan+UBSan below (the sanitizers see what a plain run sees, and
# its tests take about as long with them); the benchmark harness's smoke test
# here.
stage "unit, config, e2e" meson test -C build --no-rebuild --print-errorlogs \
	--num-processes 2 --suite unit --suite config --suite e2e --suite bench \
	--no-suite install --logbase main
# pktgen is the load generator on the same two cores: the test fails a run
# whose generator falls short of the load it was asked for (that says nothing
# about the shaper), and a compiler beside it takes it short of a million
# frames a second. The background chain is held while it runs.
kill -STOP -- -"$bg" 2>/dev/null
stage "pktgen" meson test -C build --no-rebuild --print-errorlogs --suite pktgen --logbase pktgen
kill -CONT -- -"$bg" 2>/dev/null
while [ ! -e "$asan_ready" ] && kill -0 "$bg" 2>/dev/null; do
	sleep 2
done
stage "ASan integration" "${asan_env[@]}" meson test -C build-asan --no-rebuild --print-errorlogs \
	--suite integration --no-suite bench --no-suite style --logbase asan
# The guest bed last: a TCG guest takes both cores while it boots.
while [ ! -e "$guest_ready" ] && kill -0 "$bg" 2>/dev/null; do
	sleep 2
done
stage "guest smoke" guest_smoke
wait "$bg"
for log in "$bglog" "$pkglog"; do
	echo "run-tests: ---- a background chain's log ($log)"
	cat "$log"
	echo "run-tests: ---- end of $log"
done

echo "run-tests: stages (wall time; the background ones ran beside the others)"
failed=()
while IFS=$'\t' read -r name secs rc; do
	printf 'run-tests:   %-36s %5d s  %s\n' "$name" "$secs" \
		"$([ "$rc" = 0 ] && echo ok || echo "FAILED (exit $rc)")"
	[ "$rc" = 0 ] || failed+=("$name")
done <"$results"
echo "run-tests: the ten slowest tests"
slowest build/meson-logs/main.json build/meson-logs/pktgen.json build-asan/meson-logs/asan.json \
	build-asan/meson-logs/asan-offline.json build/meson-logs/install.json \
	build-release/meson-logs/release.json build/meson-logs/fuzz.json \
	build/meson-logs/mutation.json build/meson-logs/guest.json
total=$(($(date +%s) - start))
if [ ${#failed[@]} -gt 0 ]; then
	echo "run-tests: FAILED in $total s: ${failed[*]}"
	exit 1
fi
echo "run-tests: passed in $total s"
