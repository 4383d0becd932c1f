#!/bin/bash
# apt-install.sh - install the Debian packages named that are not
# installed yet, with apt-get (as root, or through sudo), waiting for the
# package manager's locks when another install runs (apt, unattended-
# upgrades, a second `make deps`) instead of failing.
#
#   tools/apt-install.sh PACKAGE...
#
# $LOCKSTEP_APT_LOCK_TIMEOUT (seconds, default 600) bounds the wait for
# each apt-get: apt-get itself waits for dpkg's lock
# (-o DPkg::Lock::Timeout), and a run that still failed on a lock (the
# lists lock of `apt-get update`, or an older apt) is retried every 5 s
# until then. $APT_GET replaces the apt-get command (tests).
set -u

timeout=${LOCKSTEP_APT_LOCK_TIMEOUT:-600}
apt_get=${APT_GET:-apt-get}
missing=()
for p in "$@"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
        grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -gt 0 ] || exit 0
echo "installing: ${missing[*]}"

sudo=
[ "$(id -u)" = 0 ] || sudo=sudo
log=$(mktemp "${TMPDIR:-/tmp}/apt-install.XXXXXX") || exit 1
trap 'rm -f "$log"' EXIT

# apt ARGS...: apt-get ARGS, retried while it fails on a lock.
apt() {
    local deadline=$((SECONDS + timeout)) rc
    while :; do
        $sudo env DEBIAN_FRONTEND=noninteractive "$apt_get" \
            -o DPkg::Lock::Timeout="$timeout" "$@" 2>&1 | tee "$log"
        rc=${PIPESTATUS[0]}
        [ "$rc" = 0 ] && return 0
        grep -qiE 'could not get lock|unable to (acquire|lock)' "$log" ||
            return "$rc"
        if [ $SECONDS -ge $deadline ]; then
            echo "apt-install.sh: the package manager's lock is still held after ${timeout}s" >&2
            return "$rc"
        fi
        echo "apt-install.sh: another package install holds the lock; waiting" >&2
        sleep 5
    done
}

apt update -q && apt install -y -q "${missing[@]}"
