#!/usr/bin/env bash
# deps.sh installs the Debian packages `make bench` uses, when they are
# missing: dnsperf (the load generator) and taskset (util-linux, to pin the
# servers and the load generator to separate CPUs). Needs root or sudo.
set -euo pipefail

missing=()
command -v dnsperf >/dev/null || missing+=(dnsperf)
command -v taskset >/dev/null || missing+=(util-linux)
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=
[[ $(id -u) -eq 0 ]] || sudo=sudo
echo "installing ${missing[*]} (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
