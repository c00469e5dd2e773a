#!/usr/bin/env bash
# run-mesos.sh serves Corefile.mesos on 127.0.0.1:1053 with bin/coredns-run: the
# Mesos-DNS names of examples/mesos/state.json, which the stand-in master
# (internal/mesosmaster/cmd/mesosmaster) serves on 127.0.0.1:5050 as its own
# state (-own: the leader it names is itself, not the recorded 10.0.0.11).
# Ctrl-C stops both. test/mesos_demo_test.go starts the master with
# master_args and runs every dig and curl command printed below: keep them
# on lines of their own.
#
# CONFIG=FILE (make run-mesos CONFIG=examples/mesos/config.json) serves,
# instead of Corefile.mesos, a Corefile whose mesosschema reads the Mesos-DNS
# config.json FILE as is (its masters must name 127.0.0.1:5050): the log
# shows a warning for each field the Corefile decides. The zones are the
# file's domain only, so the dig -x commands below get no PTR record.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

master_args=(-listen 127.0.0.1:5050 -own -state examples/mesos/state.json)

master_pid=
dns_pid=
out=$(mktemp)
corefile=Corefile.mesos
cleanup() {
	for pid in $dns_pid $master_pid; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -f "$out"
	if [[ "$corefile" != Corefile.mesos ]]; then rm -f "$corefile"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

go build -o bin/mesosmaster ./internal/mesosmaster/cmd/mesosmaster
bin/mesosmaster "${master_args[@]}" >"$out" 2>&1 &
master_pid=$!
for _ in $(seq 1 100); do
	grep -q '^mesosmaster: serving' "$out" && break
	if ! kill -0 "$master_pid" 2>/dev/null; then
		cat "$out" >&2
		exit 1
	fi
	sleep 0.1
done
grep -q '^mesosmaster: serving' "$out" || { cat "$out" >&2; echo "the stand-in master did not start" >&2; exit 1; }
cat "$out" >&2

# config_corefile writes the Corefile of CONFIG: Corefile.mesos's server
# block, its mesosschema reading the file.
config_corefile() {
	[[ -r "$CONFIG" ]] || { echo "CONFIG=$CONFIG: no such file" >&2; exit 1; }
	corefile=$(mktemp)
	cat >"$corefile" <<COREFILE
.:1053 {
    bind 127.0.0.1
    errors
    ready 127.0.0.1:18181
    prometheus 127.0.0.1:19153
    mesosschema {
        config $(realpath "$CONFIG")
    }
    transfer mesos {
        to *
    }
    forward . /etc/resolv.conf
}
COREFILE
	echo "Serving a Corefile whose mesosschema reads $CONFIG:" >&2
	cat "$corefile" >&2
}
if [[ -n "${CONFIG:-}" ]]; then config_corefile; fi

cat >&2 <<'MSG'
Serving Corefile.mesos on 127.0.0.1:1053 (every record: examples/mesos/README.md). Try:
  dig @127.0.0.1 -p 1053 leader.mesos A
  dig @127.0.0.1 -p 1053 _leader._tcp.mesos SRV
  dig @127.0.0.1 -p 1053 master.mesos A
  dig @127.0.0.1 -p 1053 slave.mesos A
  dig @127.0.0.1 -p 1053 marathon.prod.mesos A    (a framework's scheduler)
  dig @127.0.0.1 -p 1053 search.marathon.mesos A
  dig @127.0.0.1 -p 1053 _search._tcp.marathon.mesos SRV    (host ports, to each instance's agent)
  dig @127.0.0.1 -p 1053 web.marathon.mesos A    (container addresses)
  dig @127.0.0.1 -p 1053 _web._tcp.marathon.mesos SRV    (DiscoveryInfo ports, to each instance)
  dig @127.0.0.1 -p 1053 _http._web._tcp.marathon.mesos SRV    (a named DiscoveryInfo port)
  dig @127.0.0.1 -p 1053 apiserver-myservice.marathon.mesos AAAA    (dual stack)
  dig @127.0.0.1 -p 1053 apiserver-myservice.marathon.prod.mesos A
  dig @127.0.0.1 -p 1053 Worker-1.MyFramework.mesos A    (any case)
  dig @127.0.0.1 -p 1053 -x 172.17.0.2    (a container: its instance)
  dig @127.0.0.1 -p 1053 -x 10.0.1.21    (an agent)
  dig @127.0.0.1 -p 1053 -x 127.0.0.1    (the master)
  dig @127.0.0.1 -p 1053 cache.marathon.mesos A    (TASK_STAGING: NXDOMAIN)
  dig @127.0.0.1 -p 1053 mesos AXFR
  curl -s http://127.0.0.1:8123/v1/hosts/search.marathon.mesos
  curl -s http://127.0.0.1:8123/v1/services/_web._tcp.marathon.mesos
  curl -s http://127.0.0.1:8123/v1/enumerate
MSG
bin/coredns-run -conf "$corefile" &
dns_pid=$!
wait "$dns_pid"
