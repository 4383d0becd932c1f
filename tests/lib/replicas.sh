# shellcheck shell=bash
# replicas.sh - a replicated scheduler for integration tests (source it
# after harness.sh)
#
#   start_replicas N [-o key=value]...  N replicas of lockstepd on loopback,
#                                       replica i under $TEST_DIR/rep<i>/
#                                       (state/, sock, port, log), each with
#                                       a fixed API and Raft port; exports
#                                       LOCKSTEP_SERVER (every socket) and
#                                       AGENT_SERVER (the same)
#   start_replica I [-o key=value]...   (re)start replica I on its ports
#   kill_replica I / stop_replica I     SIGKILL / SIGTERM and wait
#   replica_url I                       its API's URL (http:// or https://)
#   replica_health I                    its GET /v1/health
#   serving_replicas                    the indexes of those that serve
#   wait_leader SECS                    until one serves; prints its index
#   replica_db I SQL                    a query on replica I's database
#
# Replica PIDs go into EXTRA_PIDS, so the harness's trap kills them (by
# PID); a replica that re-executes itself keeps its PID. $REPLICA_ET_MS
# sets replica_election_timeout_ms (default 1000).
#
# Like start_scheduler's, the replicas' TCP listeners speak plain HTTP
# (tls = off) unless SCHED_TLS is set: then TLS with tls_certs'
# certificate, their URLs (and the leader's URL in a not_leader answer)
# are https:// and LOCKSTEP_CA names the CA. The agents (start_agent)
# and the CLI reach the replicas through their Unix sockets.

declare -A REPLICA_PID=() REPLICA_API=() REPLICA_RAFT=()
REPLICA_N=0
REPLICA_PEERS=

# free_ports N: N TCP ports free on 127.0.0.1 now.
free_ports() {
    "$PY" -c '
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
' "$1"
}

# replica_tls: REPLICA_TLS_OPTS, the TLS options of every replica: tls =
# off, or (SCHED_TLS) the certificate of tls_certs, with LOCKSTEP_CA.
REPLICA_TLS_OPTS=()
replica_tls() {
    if [ -z "${SCHED_TLS:-}" ]; then
        REPLICA_TLS_OPTS=(-o tls=off)
        return 0
    fi
    tls_certs || return 1
    export LOCKSTEP_CA=$TLS_DIR/ca.pem
    REPLICA_TLS_OPTS=(-o tls=on -o tls_cert="$TLS_DIR/server.pem"
        -o tls_key="$TLS_DIR/server.key" -o tls_ca="$TLS_DIR/ca.pem")
}

# replica_url I: replica I's API URL, as it names itself to clients.
replica_url() {
    echo "http${SCHED_TLS:+s}://127.0.0.1:${REPLICA_API[$1]}"
}

# start_replica I [-o key=value]...
start_replica() {
    local i=$1 d=$TEST_DIR/rep$1
    shift
    mkdir -p "$d/state"
    replica_tls || return 1
    "$LOCKSTEPD" -o listen="127.0.0.1:${REPLICA_API[$i]}" \
        "${REPLICA_TLS_OPTS[@]}" \
        -o port_file="$d/port" -o socket="$d/sock" -o state_dir="$d/state" \
        -o cluster_secret_file="$CLUSTER_SECRET" \
        -o node_timeout_ms="${NODE_TIMEOUT_MS:-10000}" \
        -o heartbeat_ms="${HEARTBEAT_MS:-500}" \
        ${LEASE_MS:+-o lease_ms="$LEASE_MS"} \
        -o master_port_base="$MASTER_PORT_BASE" -o master_port_count=20 \
        -o replica_id="$i" -o replica_address="127.0.0.1:${REPLICA_RAFT[$i]}" \
        -o replicas="$REPLICA_PEERS" \
        -o replica_election_timeout_ms="${REPLICA_ET_MS:-1000}" \
        "$@" >>"$d/log" 2>&1 &
    REPLICA_PID[$i]=$!
    EXTRA_PIDS+=("$!")
}

# start_replicas N [-o key=value]...
start_replicas() {
    local n=$1 i ports socks=
    shift
    REPLICA_N=$n
    read -r -a ports <<<"$(free_ports $((2 * n)))"
    REPLICA_PEERS=
    for i in $(seq 1 "$n"); do
        REPLICA_API[$i]=${ports[$((2 * i - 2))]}
        REPLICA_RAFT[$i]=${ports[$((2 * i - 1))]}
        REPLICA_PEERS+="${REPLICA_PEERS:+,}$i@127.0.0.1:${REPLICA_RAFT[$i]}"
        socks+="${socks:+,}$TEST_DIR/rep$i/sock"
    done
    for i in $(seq 1 "$n"); do
        start_replica "$i" "$@"
    done
    export LOCKSTEP_SERVER=$socks
    export AGENT_SERVER=$socks
    for i in $(seq 1 "$n"); do
        wait_until 20 test -S "$TEST_DIR/rep$i/sock" || {
            tail -n 20 "$TEST_DIR/rep$i/log" >&2
            return 1
        }
    done
}

kill_replica() {
    local pid=${REPLICA_PID[$1]:-}
    [ -n "$pid" ] || return 0
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    REPLICA_PID[$1]=
}

stop_replica() {
    local pid=${REPLICA_PID[$1]:-} rc
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null
    wait "$pid"
    rc=$?
    REPLICA_PID[$1]=
    return $rc
}

replica_health() {
    curl -s --max-time 2 ${SCHED_TLS:+--cacert "$TLS_DIR/ca.pem"} \
        "$(replica_url "$1")/v1/health"
}

# serving_replicas: the indexes of the replicas that lead and serve.
serving_replicas() {
    local i
    for i in $(seq 1 "$REPLICA_N"); do
        [ -n "${REPLICA_PID[$i]:-}" ] || continue
        if replica_health "$i" 2>/dev/null | grep -q '"serving":true'; then
            echo "$i"
        fi
    done
    return 0
}

# one_serving: exactly one replica serves.
one_serving() {
    [ "$(serving_replicas | wc -l)" = 1 ]
}

# wait_leader SECS: wait until exactly one replica serves; print it.
wait_leader() {
    wait_until "${1:-20}" one_serving || return 1
    serving_replicas
}

replica_db() {
    sqlite3 -readonly "$TEST_DIR/rep$1/state/lockstep.db" "$2"
}

# start_replicas_proxied N [-o key=value]...: start_replicas, with the
# Raft traffic between replicas through tests/helpers/raft-proxy.py
# (replica i advertises a proxy port and binds another), so that
# cut_replica can cut one off from the others and heal_replicas undo it.
REPLICA_PROXY_PID=
start_replicas_proxied() {
    local n=$1 i ports pairs=() socks=
    shift
    REPLICA_N=$n
    read -r -a ports <<<"$(free_ports $((3 * n)))"
    REPLICA_PEERS=
    for i in $(seq 1 "$n"); do
        REPLICA_API[$i]=${ports[$((3 * i - 3))]}
        REPLICA_RAFT[$i]=${ports[$((3 * i - 2))]}
        REPLICA_BIND[$i]=${ports[$((3 * i - 1))]}
        pairs+=("${REPLICA_RAFT[$i]}:${REPLICA_BIND[$i]}")
        REPLICA_PEERS+="${REPLICA_PEERS:+,}$i@127.0.0.1:${REPLICA_RAFT[$i]}"
        socks+="${socks:+,}$TEST_DIR/rep$i/sock"
    done
    "$PY" "$SRC_DIR/tests/helpers/raft-proxy.py" "${pairs[@]}" \
        --ready "$TEST_DIR/proxy" >>"$TEST_DIR/proxy.log" 2>&1 &
    REPLICA_PROXY_PID=$!
    EXTRA_PIDS+=("$!")
    wait_until 10 test -s "$TEST_DIR/proxy" || return 1
    for i in $(seq 1 "$n"); do
        start_replica "$i" \
            -o replica_bind_address="127.0.0.1:${REPLICA_BIND[$i]}" "$@"
    done
    export LOCKSTEP_SERVER=$socks
    export AGENT_SERVER=$socks
    for i in $(seq 1 "$n"); do
        wait_until 20 test -S "$TEST_DIR/rep$i/sock" || return 1
    done
}
declare -A REPLICA_BIND=()

# cut_replica I: replica I can no longer reach the others, nor they it.
cut_replica() {
    echo "$1" >"$TEST_DIR/proxy.cut" && kill -USR1 "$REPLICA_PROXY_PID"
}

heal_replicas() {
    kill -USR2 "$REPLICA_PROXY_PID"
}
