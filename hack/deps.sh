#!/usr/bin/env bash
# deps.sh installs the Debian packages the tests use, when they are missing:
# dig (bind9-dnsutils) for the real-client checks. Needs root or sudo.
set -euo pipefail

missing=()
command -v dig >/dev/null || missing+=(bind9-dnsutils)
command -v getent >/dev/null || missing+=(libc-bin)
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=
[[ $(id -u) -eq 0 ]] || sudo=sudo
echo "installing ${missing[*]} (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
