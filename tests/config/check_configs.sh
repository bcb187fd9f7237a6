#!/usr/bin/env bash
# Every config/*.json (presets and examples) must pass `shaperd --check-config`
# silently (a start-up warning in a shipped preset is a defect too) and carry a
# top-level "comment" saying what it is for. A broken file must be refused, so
# the check cannot pass by accepting anything.
# usage: check_configs.sh SHAPERD CONFIG_DIR
set -u
shaperd=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0

for f in "$dir"/*.json; do
	n=$((n + 1))
	name=$(basename "$f")
	if ! "$shaperd" -- -c "$f" --check-config >"$tmp/out" 2>"$tmp/err"; then
		echo "FAIL $name: refused by --check-config:"
		cat "$tmp/err"
		fail=1
		continue
	fi
	if [ -s "$tmp/err" ]; then
		echo "FAIL $name: accepted, but with messages on stderr:"
		cat "$tmp/err"
		fail=1
		continue
	fi
	if ! grep -q '^	"comment": \[' "$f"; then
		echo "FAIL $name: no top-level \"comment\" saying what line or use it fits"
		fail=1
		continue
	fi
	echo "ok   $name"
done
if [ "$n" -lt 2 ]; then
	echo "FAIL: found $n files in $dir"
	fail=1
fi

# The negative control: a rate in the wrong unit must be refused.
sed 's/"bandwidth": "[^"]*"/"bandwidth": "280mbps"/' "$dir/shaper.json" >"$tmp/bad.json"
if "$shaperd" -- -c "$tmp/bad.json" --check-config >/dev/null 2>"$tmp/err"; then
	echo "FAIL: --check-config accepted \"280mbps\""
	fail=1
elif ! grep -q 'try "280mbit"' "$tmp/err"; then
	echo "FAIL: --check-config refused bad.json without naming the fix:"
	cat "$tmp/err"
	fail=1
else
	echo "ok   a broken file is refused: $(cat "$tmp/err")"
fi
exit $fail
