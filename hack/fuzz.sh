#!/usr/bin/env bash
# make fuzz: every fuzz target of the module, FUZZTIME each (default 60s),
# one after the other. go test writes an input that fails to the package's
# testdata/fuzz/<Target>/, where every later `go test` runs it as a
# regression seed: commit it with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-60s}
failed=()
# The packages that have fuzz targets, found in their test files (listing
# them through `go test -list` would compile every package of the module).
for dir in $(grep -rl --include='*_test.go' '^func Fuzz' plugin coredns hack 2>/dev/null | xargs -n1 dirname | sort -u); do
	for target in $(grep -h '^func Fuzz' "$dir"/*_test.go | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do
		echo "== ./$dir $target for $fuzztime"
		if ! go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "./$dir"; then
			failed+=("./$dir $target")
		fi
	done
done
if ((${#failed[@]})); then
	printf 'failed: %s\n' "${failed[@]}"
	exit 1
fi
echo "every fuzz target ran $fuzztime without a failure"
