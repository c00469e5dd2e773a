#!/usr/bin/env bash
# deps.sh installs the Debian packages the tests use, when they are missing:
# dig (bind9-dnsutils) for the real-client checks, getent/unshare/mount for
# the glibc resolver in the autopath test. Needs root or sudo.
set -euo pipefail

missing=()
command -v dig >/dev/null || missing+=(bind9-dnsutils)
command -v getent >/dev/null || missing+=(libc-bin)
# The autopath end-to-end test runs glibc's resolver in a mount namespace.
command -v unshare >/dev/null || missing+=(util-linux)
command -v mount >/dev/null || missing+=(mount)
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=
[[ $(id -u) -eq 0 ]] || sudo=sudo
echo "installing ${missing[*]} (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
