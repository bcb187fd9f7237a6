#!/usr/bin/env bash
# Format every C file with the checked-in .clang-format, or with --check
# list the files that are not formatted and fail.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
	echo "clang-format is not installed (tools/install-deps.sh installs it)"
	exit 77
fi
mapfile -t files < <(git ls-files '*.c' '*.h')
if [ "${1:-}" = "--check" ]; then
	bad=0
	for f in "${files[@]}"; do
		if ! clang-format --style=file "$f" | cmp -s - "$f"; then
			echo "not formatted: $f (run tools/format.sh)"
			bad=1
		fi
	done
	exit $bad
fi
clang-format --style=file -i "${files[@]}"
