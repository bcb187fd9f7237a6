#!/usr/bin/env bash
# Every test: installs what is missing, builds, then runs the unit, simulation,
# integration and end-to-end suites (the last two need root; they are skipped
# otherwise), then the fuzz suite (25 s per libFuzzer harness; skipped without
# clang). Extra arguments go to `meson test` instead (e.g. --suite sim).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

bash tools/install-deps.sh
if [ -f build/build.ninja ]; then
	meson setup --reconfigure build >/dev/null
else
	meson setup build >/dev/null
fi
ninja -C build
if [ $# -gt 0 ]; then
	meson test -C build --print-errorlogs --num-processes 2 "$@"
else
	meson test -C build --print-errorlogs --num-processes 2 --no-suite fuzz
	# The fuzzers use a whole core each for 25 s: after the timing-sensitive
	# suites, one at a time (tools/fuzz.sh builds them with clang in build-fuzz/).
	meson test -C build --print-errorlogs --num-processes 1 --suite fuzz
fi
echo "run-tests: passed in $(($(date +%s) - start)) s"
