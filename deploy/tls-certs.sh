#!/usr/bin/env bash
# tls-certs.sh - a private CA and a certificate for lockstepd's TLS
#
#   tls-certs.sh [--days N] DIR NAME...
#
# In DIR (created when missing):
#   ca.pem, ca.key          the CA: made on the first run, kept after
#                           (10 years); ca.pem is what clients trust
#                           (LOCKSTEP_CA, the agents' server_ca, the
#                           scheduler's tls_ca)
#   server.pem, server.key  a new key and a certificate for it, signed by
#                           the CA, valid for N days (default 365) for
#                           every NAME: a host name (DNS) or an address
#                           (IP), as clients write it in their URLs
#
# Each run makes a new server key and certificate from the same CA: that
# is a rotation (docs/operations.md "TLS"), and clients need nothing new.
# The files are replaced whole (written aside, then renamed), so a
# scheduler reloading them never reads half a file. The keys are mode
# 0600, except that a new server.key takes the group and mode of the one
# it replaces (so that a scheduler running as its own user can still read
# it after a rotation). Needs the openssl command (Debian's openssl
# package).
#
# For sites with their own CA: use its certificate for the scheduler's
# names instead, and give clients that CA's certificate.
set -euo pipefail

prog=tls-certs.sh
die() {
    echo "$prog: $*" >&2
    exit 1
}
usage() {
    echo "usage: $prog [--days N] DIR NAME..." >&2
    exit 2
}

days=365
while [ $# -gt 0 ]; do
    case $1 in
    --days)
        [ $# -ge 2 ] || usage
        days=$2
        shift 2
        ;;
    --days=*)
        days=${1#*=}
        shift
        ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    -*) usage ;;
    *) break ;;
    esac
done
[ $# -ge 2 ] || usage
[[ $days =~ ^[1-9][0-9]*$ ]] && [ "$days" -le 36500 ] ||
    die "invalid --days '$days': expected 1 to 36500"
dir=$1
shift
command -v openssl >/dev/null 2>&1 ||
    die "the openssl command is missing (Debian: apt-get install openssl)"

# The subjectAltName of the names: IP: for addresses, DNS: for the rest.
san=
for name in "$@"; do
    if [[ $name =~ ^[0-9]+(\.[0-9]+){3}$ || $name == *:* ]]; then
        san+="${san:+,}IP:$name"
    elif [[ $name =~ ^[A-Za-z0-9*]([A-Za-z0-9.-]*[A-Za-z0-9])?$ ]]; then
        san+="${san:+,}DNS:$name"
    else
        die "invalid name '$name': expected a host name or an IP address"
    fi
done

mkdir -p "$dir" || die "cannot create '$dir'"
tmp=$(mktemp -d "$dir/.tls-certs.XXXXXX") || die "cannot write in '$dir'"
trap 'rm -rf "$tmp"' EXIT
umask 077

# openssl is quiet when it works; show what it said when it does not.
run() {
    "$@" 2>"$tmp/err" || {
        cat "$tmp/err" >&2
        die "failed: $*"
    }
}

if [ ! -s "$dir/ca.pem" ] || [ ! -s "$dir/ca.key" ]; then
    run openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
        -nodes -keyout "$tmp/ca.key" -out "$tmp/ca.pem" -days 3650 \
        -subj "/CN=lockstep CA $(hostname) $(date -u +%Y-%m-%d)" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -addext "subjectKeyIdentifier=hash"
    chmod 644 "$tmp/ca.pem"
    mv "$tmp/ca.key" "$dir/ca.key"
    mv "$tmp/ca.pem" "$dir/ca.pem"
    echo "made a CA: $dir/ca.pem (its key: $dir/ca.key)"
fi

run openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$tmp/server.key" -out "$tmp/server.csr" -subj "/CN=$1"
printf '%s\n' "subjectAltName=$san" "basicConstraints=CA:FALSE" \
    "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" \
    "subjectKeyIdentifier=hash" "authorityKeyIdentifier=keyid" >"$tmp/ext"
run openssl x509 -req -in "$tmp/server.csr" -CA "$dir/ca.pem" \
    -CAkey "$dir/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
    -days "$days" -sha256 -extfile "$tmp/ext" -out "$tmp/server.pem"
chmod 644 "$tmp/server.pem"
chmod 600 "$tmp/server.key"
if [ -e "$dir/server.key" ]; then
    chgrp --reference="$dir/server.key" "$tmp/server.key" 2>/dev/null || true
    chmod --reference="$dir/server.key" "$tmp/server.key"
fi
# The key first: a reload between the two renames fails its check (key
# and certificate differ) and keeps the old pair, rather than loading a
# certificate without its key.
mv "$tmp/server.key" "$dir/server.key"
mv "$tmp/server.pem" "$dir/server.pem"
echo "made a certificate for $san, valid $days days: $dir/server.pem (key: $dir/server.key)"
