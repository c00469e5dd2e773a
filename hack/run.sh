#!/usr/bin/env bash
# run.sh serves Corefile.example on 127.0.0.1:1053 with bin/coredns-run
# (make run-build: the example Corefiles' plugins only).
# Without KUBECONFIG it first starts a local etcd + kube-apiserver
# (test/localapi) loaded with the objects in examples/; with KUBECONFIG set it
# serves that cluster. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

state=.localapi
api_pid=
cleanup() {
	if [[ -n ${tools_pid:-} ]]; then
		kill "$tools_pid" 2>/dev/null || true
		wait "$tools_pid" 2>/dev/null || true
	fi
	if [[ -n $api_pid ]]; then
		kill "$api_pid" 2>/dev/null || true
		wait "$api_pid" 2>/dev/null || true
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# On a fresh machine most of the wait is building: bin/coredns-run, and the
# local API server's etcd and kube-apiserver (built once per version into
# the tools cache; only these, not the test tools). They build side by
# side, so that one's module downloads and links overlap the others'
# compiling.
tools_pid=
if [[ -z ${KUBECONFIG:-} ]]; then
	mkdir -p "$state"
	hack/tools.sh apiserver >"$state/tools.out" 2>&1 &
	tools_pid=$!
fi
${MAKE:-make} --no-print-directory run-build
if [[ -n $tools_pid ]]; then
	status=0
	wait "$tools_pid" || status=$?
	tools_pid= # reaped: its number may be another process's now
	if ((status != 0)); then
		cat "$state/tools.out" >&2
		echo "building etcd and kube-apiserver failed (above)" >&2
		exit 1
	fi
fi

if [[ -z ${KUBECONFIG:-} ]]; then
	rm -f "$state/kubeconfig"
	go build -o "$state/localapi" ./test/localapi
	echo "starting a local kube-apiserver with examples/ (log: $state/kubeapi.log)" >&2
	"$state/localapi" -kubeconfig "$state/kubeconfig" -log "$state/kubeapi.log" -apply examples >"$state/localapi.out" 2>&1 &
	api_pid=$!
	for _ in $(seq 1 600); do
		[[ -s $state/kubeconfig ]] && break
		if ! kill -0 "$api_pid" 2>/dev/null; then
			cat "$state/localapi.out" >&2
			exit 1
		fi
		sleep 0.5
	done
	[[ -s $state/kubeconfig ]] || { echo "local API server did not start; see $state/localapi.out" >&2; exit 1; }
	export KUBECONFIG=$PWD/$state/kubeconfig
fi

cat >&2 <<'MSG'
Serving Corefile.example on 127.0.0.1:1053. Try:
  dig @127.0.0.1 -p 1053 web.demo.svc.cluster.local A
  dig @127.0.0.1 -p 1053 _http._tcp.web.demo.svc.cluster.local SRV
  dig @127.0.0.1 -p 1053 dual.demo.svc.cluster.local AAAA
  dig @127.0.0.1 -p 1053 db.demo.svc.cluster.local A
  dig @127.0.0.1 -p 1053 db-0.db.demo.svc.cluster.local A
  dig @127.0.0.1 -p 1053 db.demo.svc.cluster.local SRV
  dig @127.0.0.1 -p 1053 zone-a.pin._zone.db.demo.svc.cluster.local A     (zonal: zone-a only)
  dig @127.0.0.1 -p 1053 zone-c.prefer._zone.db.demo.svc.cluster.local A  (no zone-c: every endpoint)
  dig @127.0.0.1 -p 1053 -x 10.96.100.10
  dig @127.0.0.1 -p 1053 -x 10.96.255.254    (a free service address: NXDOMAIN here, not asked upstream)
  dig @127.0.0.1 -p 1053 alias.demo.svc.cluster.local A
  dig @127.0.0.1 -p 1053 warmup.demo.svc.cluster.local A
  dig @127.0.0.1 -p 1053 workers.demo.svc.cluster.local A
  dig @127.0.0.1 -p 1053 10-244-0-10.demo.pod.cluster.local A
  dig @127.0.0.1 -p 1053 dns-version.cluster.local TXT
  dig @127.0.0.1 -p 1053 cluster.local AXFR
  dig @127.0.0.1 -p 1053 web.demo.svc.clusterset.local AAAA
  dig @127.0.0.1 -p 1053 _http._tcp.web.demo.svc.clusterset.local SRV
  dig @127.0.0.1 -p 1053 db.demo.svc.clusterset.local A
  dig @127.0.0.1 -p 1053 db-0.cluster-west.db.demo.svc.clusterset.local A
  dig @127.0.0.1 -p 1053 _pg._tcp.db.demo.svc.clusterset.local SRV
  dig @127.0.0.1 -p 1053 cache.demo.svc.clusterset.local A    (PreferClose: this cluster's endpoint only)
  dig @127.0.0.1 -p 1053 cache-1.cluster-west.cache.demo.svc.clusterset.local A
  dig @127.0.0.1 -p 1053 -x 10.245.1.10    (an imported address: the multicluster PTR)
  dig @127.0.0.1 -p 1053 -x 10.244.1.10    (a local endpoint: the cluster-local PTR wins)
  dig @127.0.0.1 -p 1053 dns-version.clusterset.local TXT
MSG
bin/coredns-run -conf Corefile.example
