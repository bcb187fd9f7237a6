#!/usr/bin/env bash
# Run a libFuzzer harness from tests/fuzz for a while:
#   tools/fuzz.sh NAME [SECONDS] [libFuzzer options...]
# NAME is classify, sched, config, control or all (one after the other);
# SECONDS defaults to 60 (the test suite 'fuzz' runs 25 each). Builds the
# harnesses with clang in build-fuzz/ (or $FUZZ_BUILD) first. Inputs it
# finds are kept in build-fuzz/fuzz-corpus/NAME (so long runs build on each
# other; the checked-in seeds in tests/fuzz/corpus/NAME are only read), a
# crash is written to build-fuzz/fuzz-artifacts/ and fails the run. Replay
# one with: build-fuzz/tests/fuzz/fuzz_NAME FILE. Exits 77 (skipped) if
# clang or its libFuzzer runtime is missing (tools/install-deps.sh installs
# them).
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: tools/fuzz.sh classify|sched|config|control|all [SECONDS] [libFuzzer options]}
secs=${2:-60}
shift $(($# < 2 ? $# : 2))
build=${FUZZ_BUILD:-build-fuzz}

if [ "$name" = all ]; then
	for n in classify sched config control; do
		bash "$0" "$n" "$secs" "$@"
	done
	exit 0
fi
case $name in
classify) max_len=9100 ;;
sched | config | control) max_len=4096 ;;
*)
	echo "fuzz.sh: unknown harness '$name' (classify, sched, config, control, all)" >&2
	exit 2
	;;
esac

if ! command -v clang >/dev/null; then
	echo "fuzz.sh: clang is not installed (tools/install-deps.sh installs it): skipped"
	exit 77
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$probe/p.c"
if ! clang -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>"$probe/err"; then
	echo "fuzz.sh: clang cannot link libFuzzer (Debian: libclang-rt-14-dev): skipped"
	sed 's/^/  /' "$probe/err" | head -5
	exit 77
fi

# One build at a time: the suite runs the harnesses in parallel.
exec 9<"$0"
flock 9
if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" -Dfuzz=enabled >"$probe/setup.log" 2>&1 || {
		cat "$probe/setup.log"
		exit 1
	}
fi
ninja -C "$build" "tests/fuzz/fuzz_$name" >"$probe/build.log" 2>&1 || {
	cat "$probe/build.log"
	exit 1
}
flock -u 9

corpus="$build/fuzz-corpus/$name"
mkdir -p "$corpus" "$build/fuzz-artifacts"
opts=(-max_total_time="$secs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048
	-error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1
	-artifact_prefix="$build/fuzz-artifacts/$name-")
[ -f "tests/fuzz/$name.dict" ] && opts+=(-dict="tests/fuzz/$name.dict")
log="$build/fuzz-$name.log"
echo "fuzz.sh: $build/tests/fuzz/fuzz_$name for $secs s (log: $log)"
rc=0
"$build/tests/fuzz/fuzz_$name" "${opts[@]}" "$@" "$corpus" "tests/fuzz/corpus/$name" >"$log" 2>&1 || rc=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
if [ "$rc" != 0 ]; then
	tail -60 "$log"
	echo "fuzz.sh: $name FAILED after ${runs:-?} runs; crash input in $build/fuzz-artifacts/"
	exit 1
fi
grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$log" | sed 's/^/  /' || true
echo "fuzz.sh: $name: ${runs:-?} runs in $secs s (${rate:-?}/s), corpus $(find "$corpus" -type f | wc -l) inputs, no crash"
