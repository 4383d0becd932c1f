#!/bin/bash
# tls.sh - what TLS costs per request: two lockstepd side by side, one
# serving plain HTTP (tls = off) and one TLS (a P-256 certificate from
# deploy/tls-certs.sh), measured in the same run by lockstep-tlsbench
# (bench/tlsbench.c): per request, the client's wall time and the
# scheduler's CPU time, for a kept-alive connection, a new connection
# with a full handshake, and a new connection resuming its TLS session;
# each with the ratio TLS / plain. Prints figures; asserts nothing.
#
#   bench/tls.sh [-n REQUESTS] [-r ROUNDS]
#
# Two paths: GET /v1/health (the smallest reply: the per-request cost
# alone) and GET /metrics (about 10 KiB: with the encryption of a body).
# The requests go one at a time over loopback, so the wall times are
# latencies (client and server on one machine), and the CPU figures are
# the scheduler's capacity: a TLS request costs its loop that much.
set -u
N=1000 ROUNDS=5
while [ $# -gt 0 ]; do
    case $1 in
    -n) N=$2; shift 2 ;;
    -r) ROUNDS=$2; shift 2 ;;
    *) sed -n 2,17p "$0" >&2; exit 2 ;;
    esac
done

# The harness lives with the tests; $0 must sit two levels below the root.
. "$(dirname "$0")/../tests/lib/harness.sh"
BENCH=$BUILD_DIR/bench/lockstep-tlsbench
[ -x "$BENCH" ] || { echo "no $BENCH: build first" >&2; exit 1; }
tls_certs

# lockstepd NAME OPTION...: one scheduler in TEST_DIR/NAME; sets PIDS[NAME]
# and PORTS[NAME].
declare -A PIDS=() PORTS=()
lockstepd() {
    local name=$1 d=$TEST_DIR/$1
    shift
    mkdir -p "$d/state"
    "$LOCKSTEPD" -o listen=127.0.0.1:0 -o port_file="$d/port" \
        -o socket="$d/sock" -o state_dir="$d/state" \
        -o cluster_secret_file="$CLUSTER_SECRET" -o log_level=warn \
        "$@" >>"$d/log" 2>&1 &
    PIDS[$name]=$!
    EXTRA_PIDS+=($!)
    wait_until 20 test -s "$d/port" || { cat "$d/log" >&2; exit 1; }
    PORTS[$name]=$(cat "$d/port")
}
lockstepd plain -o tls=off
lockstepd tls -o tls_cert="$TLS_DIR/server.pem" \
    -o tls_key="$TLS_DIR/server.key" -o tls_ca="$TLS_DIR/ca.pem"

echo "# $(nproc) cores, $(uname -r), $(openssl version), lockstep $(git -C "$SRC_DIR" rev-parse --short HEAD 2>/dev/null)"
echo "# certificate: $(openssl x509 -in "$TLS_DIR/server.pem" -noout -text |
    sed -n 's/.*Public Key Algorithm: //p')" \
    "$(openssl x509 -in "$TLS_DIR/server.pem" -noout -text |
        sed -n 's/.*ASN1 OID: //p')"
for path in /v1/health /metrics; do
    echo
    "$BENCH" --plain "http://127.0.0.1:${PORTS[plain]}" --plain-pid "${PIDS[plain]}" \
        --tls "https://127.0.0.1:${PORTS[tls]}" --tls-pid "${PIDS[tls]}" \
        --ca "$TLS_DIR/ca.pem" --path "$path" -n "$N" -r "$ROUNDS" || exit 1
done
curl -s --unix-socket "$TEST_DIR/tls/sock" http://x/metrics |
    grep -E "^lockstep_tls_(handshakes|failures)_total" | sed 's/^/# /'
for name in plain tls; do
    kill -TERM "${PIDS[$name]}" && wait "${PIDS[$name]}"
done
