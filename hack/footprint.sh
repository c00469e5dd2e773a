#!/bin/sh
# footprint.sh BINARY...: each CoreDNS binary's size, its start-up to the
# first answer and its idle RSS, on a Corefile of whoami alone on
# loopback; the median of 5 starts, the binaries taken in turn. The
# figures of README's "The binary" come from here.
set -eu
port=${PORT:-10553}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '.:%s {\n    bind 127.0.0.1\n    whoami\n}\n' "$port" >"$dir/Corefile"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for bin in "$@"; do : >"$dir/$(basename "$bin").start"; : >"$dir/$(basename "$bin").rss"; done
for _ in 1 2 3 4 5; do
	for bin in "$@"; do
		name=$(basename "$bin")
		t0=$(date +%s%N)
		"$bin" -conf "$dir/Corefile" >/dev/null 2>&1 &
		pid=$!
		until dig +short +tries=1 +timeout=1 -p "$port" @127.0.0.1 whoami.example >/dev/null 2>&1; do sleep 0.005; done
		t1=$(date +%s%N)
		sleep 1
		awk '/VmRSS/ {print $2}' "/proc/$pid/status" >>"$dir/$name.rss"
		echo $(((t1 - t0) / 1000000)) >>"$dir/$name.start"
		kill "$pid"
		wait "$pid" 2>/dev/null || true
	done
done
printf '%-40s %10s %12s %12s\n' binary "size, MB" "start, ms" "idle RSS, MiB"
for bin in "$@"; do
	name=$(basename "$bin")
	size=$(stat -c %s "$bin")
	printf '%-40s %10.1f %12s %12.1f\n' "$bin" "$(echo "$size / 1000000" | bc -l)" \
		"$(median <"$dir/$name.start")" "$(echo "$(median <"$dir/$name.rss") / 1024" | bc -l)"
done
