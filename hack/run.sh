#!/usr/bin/env bash
# run.sh serves Corefile.example on 127.0.0.1:1053 with bin/coredns-run
# (make run-build: the example Corefiles' plugins only).
#   - By default the cluster is the objects of examples/, served by a
#     stand-in API server (hack/exampleapi, package internal/exampleapi):
#     read-only, and an edited file is seen within a second. It builds
#     with the DNS server, so a fresh machine serves in a few minutes.
#   - APISERVER=kube starts a real etcd and kube-apiserver instead
#     (test/localapi), built once into the tools cache (about 15 more
#     minutes on a fresh 2-core machine), with examples/ created in it:
#     then kubectl changes the cluster.
#   - With KUBECONFIG set it serves that cluster.
# Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

state=.localapi
api_pid=
tools_pid=
cleanup() {
	for pid in $tools_pid $api_pid; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

apiserver=${APISERVER:-examples}
if [[ -n ${KUBECONFIG:-} ]]; then
	apiserver=
fi
case $apiserver in
'' | examples | kube) ;;
*)
	echo "APISERVER=$apiserver: want examples (the default) or kube" >&2
	exit 2
	;;
esac
mkdir -p "$state"
rm -f "$state/kubeconfig"

# With APISERVER=kube, most of a first run's wait is building etcd and
# kube-apiserver (once per version into the tools cache; only these, not
# the test tools). They build side by side with bin/coredns-run, so that
# one's module downloads and links overlap the others' compiling.
if [[ $apiserver == kube ]]; then
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

# start_api runs the API server command given and waits for the
# kubeconfig it writes.
start_api() {
	"$@" >"$state/api.out" 2>&1 &
	api_pid=$!
	for _ in $(seq 1 600); do
		[[ -s $state/kubeconfig ]] && break
		if ! kill -0 "$api_pid" 2>/dev/null; then
			cat "$state/api.out" >&2
			exit 1
		fi
		sleep 0.5
	done
	[[ -s $state/kubeconfig ]] || { echo "the API server did not start; see $state/api.out" >&2; exit 1; }
	export KUBECONFIG=$PWD/$state/kubeconfig
}

case $apiserver in
examples)
	go build -o "$state/exampleapi" ./hack/exampleapi
	echo "serving examples/ from a stand-in API server (log: $state/api.out); edit a file there and the answers follow" >&2
	start_api "$state/exampleapi" -dir examples -kubeconfig "$state/kubeconfig"
	;;
kube)
	go build -o "$state/localapi" ./test/localapi
	echo "starting a local kube-apiserver with examples/ (log: $state/kubeapi.log)" >&2
	start_api "$state/localapi" -kubeconfig "$state/kubeconfig" -log "$state/kubeapi.log" -apply examples
	echo "export KUBECONFIG=$KUBECONFIG   # for kubectl: changes reach the answers" >&2
	;;
esac

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
