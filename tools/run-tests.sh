#!/usr/bin/env bash
# Every test: installs what is missing, builds, then runs the unit, simulation,
# integration and end-to-end suites (the last two need root; they are skipped
# otherwise). Extra arguments go to `meson test` (e.g. --suite sim).
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
meson test -C build --print-errorlogs --num-processes 2 "$@"
echo "run-tests: passed in $(($(date +%s) - start)) s"
