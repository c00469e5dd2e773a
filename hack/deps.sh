#!/usr/bin/env bash
# deps.sh installs the Debian packages the tests use, when they are missing:
# dig (bind9-dnsutils) for the real-client checks, getent/unshare/mount for
# the glibc resolver in the autopath test, and the compilers and files the
# e2e images are built from (gcc, musl-gcc, busybox-static: package
# test/e2e/images, whose test runs in make test too), and ZooKeeper with a
# JRE for the Mesos leader detection tests (package internal/zookeeper runs its
# jar, not its service). Needs root or sudo.
#
# Usage: hack/deps.sh [e2e]
#   e2e  also the one-node cluster's runtime and network: containerd, runc,
#        the CNI plugins, iptables, conntrack, nsenter (make e2e).
set -euo pipefail

missing=()
need() { command -v "$1" >/dev/null || missing+=("$2"); }
need dig bind9-dnsutils
need getent libc-bin
# The autopath end-to-end test runs glibc's resolver in a mount namespace.
need unshare util-linux
need mount mount
# The stock README corpus starts each example in a network namespace with
# loopback up.
need ip iproute2
need gcc gcc
need musl-gcc musl-tools
[[ -x /bin/busybox ]] || missing+=(busybox-static)
# The server class and its libraries; the package's own init scripts are not
# used (internal/zookeeper runs the jar on a port and data dir of its own).
need java default-jre-headless
[[ -f /usr/share/java/zookeeper.jar ]] || missing+=(zookeeper)
if [[ ${1:-} == e2e ]]; then
	need containerd containerd
	need runc runc
	need ctr containerd
	[[ -x /usr/lib/cni/bridge ]] || missing+=(containernetworking-plugins)
	need iptables iptables
	need conntrack conntrack
	need nsenter util-linux
fi
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=
[[ $(id -u) -eq 0 ]] || sudo=sudo
echo "installing ${missing[*]} (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
