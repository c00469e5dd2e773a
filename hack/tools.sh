#!/usr/bin/env bash
# tools.sh builds the etcd, kube-apiserver and kubectl binaries that the
# integration tests (package internal/kubeapi, the deploy/ tests) run, the
# promtool that checks the monitoring component's rules and dashboard
# (test/monitoring_test.go), and the staticcheck that `make lint` runs.
# They go to a per-user cache outside the clone, one file per version, so
# that every clone and worktree shares them, a clean of the clone does not
# cost another ten-minute build, and bumping a version in
# hack/tools/<name>/go.mod builds the new one next to the old.
#
# Usage: hack/tools.sh [--print-dir | apiserver | kubectl | staticcheck | promtool | e2e]
#   (none)       build the test tools (etcd, kube-apiserver, kubectl,
#                promtool); the last line on stdout is the tools directory.
#   apiserver    build only etcd and kube-apiserver (what `make run` and
#                internal/kubeapi start); the last line is the tools directory.
#   kubectl      build only kubectl; the last line is the tools directory.
#   e2e          also build the node and controller binaries of the one-node
#                cluster of `make e2e` (kubelet, kube-proxy,
#                kube-controller-manager, kube-scheduler) at the same
#                Kubernetes version; the last line is the tools directory.
#   --print-dir  only print the tools directory; build nothing.
#   staticcheck  build only staticcheck (not the test tools, whose build takes
#                minutes); the last line on stdout is its path.
#   promtool     build only promtool (Prometheus' rule checker and rule unit
#                test runner, pinned in hack/tools/promtool/go.mod); the last
#                line on stdout is its path.
#
# Progress goes to stderr.
# SCHEMADNS_TOOLS_DIR overrides the directory.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${SCHEMADNS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/schemadns/tools}

# tmpdir is the build directory of the binary being built, removed on any exit
# so that an interrupted build leaves nothing behind.
tmpdir=
cleanup() { if [[ -n $tmpdir ]]; then rm -rf "$tmpdir"; fi; }
trap cleanup EXIT
# Bash only runs the EXIT trap on a signal it traps, so turn them into exits.
trap 'exit 130' INT
trap 'exit 143' TERM

# module_version GOMOD MODULE prints the version GOMOD requires of MODULE,
# whether in a one-line require or in a require block.
module_version() {
	awk -v mod="$2" '
		$1 == "require" && $2 == "(" { block = 1; next }
		$1 == "require" && $2 == mod { print $3; exit }
		block && $1 == ")" { block = 0; next }
		block && $1 == mod { print $2; exit }
	' "$1"
}

# lock serialises builds between concurrent runs (two test packages starting
# at once): the second waits, then finds the binary and skips it.
# Each binary has its own lock, so that two different ones build side by
# side (build_kubernetes does).
lock() {
	if command -v flock >/dev/null; then
		exec 9>"$dir/.lock-$1"
		flock 9
	fi
}

# built is the path of the binary the last call of build made or found.
built=

# build NAME TOOLMOD MODULE PACKAGE [GO BUILD FLAGS...] builds PACKAGE inside
# the module hack/tools/TOOLMOD into $dir/NAME-VERSION, VERSION being the one
# that module's go.mod requires of MODULE, and sets built to that path.
build() {
	local name=$1 toolmod=$2 module=$3 pkg=$4
	shift 4
	local gomod=$root/hack/tools/$toolmod/go.mod version
	version=$(module_version "$gomod" "$module")
	if [[ -z $version ]]; then
		echo "tools.sh: $gomod does not require $module" >&2
		exit 1
	fi
	local out=$dir/$name-$version
	built=$out
	if [[ -x $out ]]; then
		return
	fi
	lock "$name"
	if [[ -x $out ]]; then
		return
	fi

	echo "building $name $version (first time only, several minutes on $(getconf _NPROCESSORS_ONLN) cores)…" >&2
	local start=$SECONDS
	tmpdir=$(mktemp -d "$dir/.build-$name.XXXXXX")
	# GOWORK=off: the tools modules must build with their own go.mod, never a
	# go.work that someone keeps above the clone.
	(cd "$root/hack/tools/$toolmod" &&
		GOWORK=off go build -trimpath "$@" -o "$tmpdir/$name" "$pkg")
	# A rename within one directory is atomic: $out is whole or absent.
	mv "$tmpdir/$name" "$out"
	rm -rf "$tmpdir"
	tmpdir=
	echo "built $out in $((SECONDS - start))s" >&2
}

# apiserver_ldflags VERSION stamps the version the way Kubernetes' own build
# does, so /version and kubectl report v1.36.3 instead of v0.0.0-master.
apiserver_ldflags() {
	local v=${1#v} pkg=k8s.io/component-base/version
	local major=${v%%.*} rest=${v#*.}
	local minor=${rest%%.*}
	echo "-X $pkg.gitVersion=$1 -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
}

# build_kubernetes apiserver|kubectl builds etcd and kube-apiserver, or
# kubectl, from the Kubernetes release pinned in hack/tools/kube-apiserver.
build_kubernetes() {
	local version ldflags
	version=$(module_version "$root/hack/tools/kube-apiserver/go.mod" k8s.io/kubernetes)
	ldflags=$(apiserver_ldflags "$version")
	case $1 in
	apiserver)
		# etcd builds beside kube-apiserver: on a fresh machine each one's
		# downloads and link then overlap the other's compiling.
		(
			trap cleanup EXIT
			trap 'exit 130' INT
			trap 'exit 143' TERM
			build etcd etcd go.etcd.io/etcd/server/v3 go.etcd.io/etcd/server/v3
		) &
		local etcd_pid=$!
		build kube-apiserver kube-apiserver k8s.io/kubernetes k8s.io/kubernetes/cmd/kube-apiserver \
			-ldflags "$ldflags"
		if ! wait "$etcd_pid"; then
			echo "tools.sh: building etcd failed" >&2
			exit 1
		fi
		;;
	kubectl)
		# kubectl comes from the same Kubernetes release: the deploy/ tests
		# render the base and its components with `kubectl kustomize` and
		# dry-run them on the server.
		build kubectl kube-apiserver k8s.io/kubernetes k8s.io/kubernetes/cmd/kubectl \
			-ldflags "$ldflags"
		;;
	esac
}

main() {
	if [[ $# -gt 1 ]]; then
		echo "usage: $0 [--print-dir | apiserver | kubectl | staticcheck | promtool | e2e]" >&2
		exit 2
	fi
	local e2e=
	case ${1:-} in
	--print-dir)
		echo "$dir"
		return
		;;
	staticcheck)
		mkdir -p "$dir"
		build staticcheck staticcheck honnef.co/go/tools honnef.co/go/tools/cmd/staticcheck
		echo "$built"
		return
		;;
	promtool)
		mkdir -p "$dir"
		build promtool promtool github.com/prometheus/prometheus github.com/prometheus/prometheus/cmd/promtool
		echo "$built"
		return
		;;
	apiserver | kubectl)
		mkdir -p "$dir"
		build_kubernetes "$1"
		echo "$dir"
		return
		;;
	e2e) e2e=1 ;;
	"") ;;
	*)
		echo "usage: $0 [--print-dir | apiserver | kubectl | staticcheck | promtool | e2e]" >&2
		exit 2
		;;
	esac
	mkdir -p "$dir"
	build_kubernetes apiserver
	build_kubernetes kubectl
	local version ldflags
	version=$(module_version "$root/hack/tools/kube-apiserver/go.mod" k8s.io/kubernetes)
	ldflags=$(apiserver_ldflags "$version")
	# promtool checks and unit-tests the monitoring component's rules and
	# dashboard queries (test/monitoring_test.go).
	build promtool promtool github.com/prometheus/prometheus github.com/prometheus/prometheus/cmd/promtool
	if [[ -n $e2e ]]; then
		local cmd
		for cmd in kube-controller-manager kube-scheduler kube-proxy kubelet; do
			build "$cmd" kube-apiserver k8s.io/kubernetes "k8s.io/kubernetes/cmd/$cmd" \
				-ldflags "$ldflags"
		done
	fi
	echo "$dir"
}

main "$@"
