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
#
# A stage that fails does not stop the run: every later stage still runs and
# reports, the summary at the end lists each stage's time and result and the
# ten slowest tests, and the exit status is non-zero if any stage failed.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
stages=()
failed=()

# stage NAME CMD...: runs CMD, records its wall time and result, carries on.
stage() {
	local name=$1 t0 rc
	shift
	t0=$(date +%s)
	echo "run-tests: -- $name"
	"$@"
	rc=$?
	stages+=("$(printf '%-34s %5d s  %s' "$name" $(($(date +%s) - t0)) \
		"$([ $rc = 0 ] && echo ok || echo "FAILED (exit $rc)")")")
	[ $rc = 0 ] || failed+=("$name")
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
# The Debian package from a clean copy of the tree and lintian on it (its
# own unit run is skipped: the suites below run them on the same code);
# the install suite's deb_contents test checks what it holds, the
# container check below installs it.
stage "package and lintian" env DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" \
	bash tools/build-deb.sh build/deb
stage "unit, sim, integration, e2e, pktgen" meson test -C build --print-errorlogs \
	--num-processes 2 --no-suite fuzz --logbase main
# The fuzzers use a whole core each for 25 s: after the timing-sensitive
# suites, two at a time, one a core (tools/fuzz.sh builds them with clang
# in build-fuzz/, one build at a time).
stage "fuzz" meson test -C build --print-errorlogs --num-processes 2 --suite fuzz --logbase fuzz

# A release build (-O3, NDEBUG: what a from-source install for speed builds) with
# -Werror: optimisation brings warnings of its own (gcc's
# maybe-uninitialized), and the unit and simulation suites run on the
# optimised code. The format check (suite style) needs no second run.
release() {
	setup build-release -Dbuildtype=release -Dwerror=true && ninja -C build-release &&
		meson test -C build-release --print-errorlogs --num-processes 2 \
			--suite unit --suite sim --no-suite style --logbase release
}
stage "release build and tests" release

# The unit, simulation and integration suites again, built with ASan and
# UBSan (any report fails the test that made it); not the benchmark
# harness's smoke test (suite bench) nor the format check (suite style).
asan() {
	setup build-asan -Db_sanitize=address,undefined -Db_lundef=false && ninja -C build-asan &&
		ASAN_OPTIONS=abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
			meson test -C build-asan --print-errorlogs --num-processes 2 \
			--suite unit --suite sim --suite integration --no-suite bench --no-suite style \
			--logbase asan
}
stage "ASan build and tests" asan

# The container image installs the package just built; shaperd passes
# --check-config on every preset inside it (buildah; not timing-sensitive).
container() {
	local deb
	deb=$(ls -t build/deb/shaper_*_"$(dpkg --print-architecture)".deb 2>/dev/null | head -1)
	[ -n "$deb" ] || {
		echo "run-tests: no package in build/deb to put in the container" >&2
		return 1
	}
	bash tools/container-check.sh "$deb"
}
stage "container" container

echo "run-tests: stages"
for s in "${stages[@]}"; do
	echo "run-tests:   $s"
done
echo "run-tests: the ten slowest tests"
slowest build/meson-logs/main.json build/meson-logs/fuzz.json \
	build-release/meson-logs/release.json build-asan/meson-logs/asan.json
total=$(($(date +%s) - start))
if [ ${#failed[@]} -gt 0 ]; then
	echo "run-tests: FAILED in $total s: ${failed[*]}"
	exit 1
fi
echo "run-tests: passed in $total s"
