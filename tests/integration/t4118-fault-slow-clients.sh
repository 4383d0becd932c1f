#!/bin/bash
# t4118: slow and hostile clients. Hundreds of connections trickle a
# request head one byte at a time (tests/helpers/slowloris.py, raw
# sockets, from 127.0.0.2 while the agents and the CLI use 127.0.0.1):
# the header deadline closes them, the per-peer cap keeps one address
# from taking more than its share, and when every user slot is taken new
# user connections get a clean 503 with Retry-After while the agents (over
# TCP, their connections in the reserved budget) keep reporting: no node
# goes LOST, a job still runs to SUCCEEDED, the CLI still answers on the
# Unix socket. Afterwards the connections return to their baseline.
. "$(dirname "$0")/../lib/harness.sh"

fault_timeouts
start_scheduler -o max_connections=160 -o agent_reserved_connections=40 \
    -o max_connections_per_peer=60 -o http_header_timeout_ms=2000
export AGENT_SERVER=$LOCKSTEP_URL
start_agent n1
start_agent n2
PORT=$(cat "$TEST_DIR/sched/port")
LORIS=$SRC_DIR/tests/helpers/slowloris.py

# loris NAME N SECONDS SOURCE [options]: an attack in the background.
loris() {
    local name=$1 n=$2 secs=$3 src=$4
    shift 4
    "$PY" "$LORIS" 127.0.0.1 "$PORT" "$n" "$secs" "$TEST_DIR/$name.json" \
        --source "$src" "$@" &
    EXTRA_PIDS+=($!)
    echo $! >"$TEST_DIR/$name.pid"
}

stat() { # NAME KEY
    jget "j[\"$2\"]" <"$TEST_DIR/$1.json"
}

metric() { # NAME{labels}: its value in /metrics, over the Unix socket
    curl -s --unix-socket "$TEST_DIR/sched/sock" http://x/metrics |
        awk -v m="$1" '$1 == m { print $2 }'
}

users_at_most() { # N: at most N user connections are open
    test "$(metric 'lockstep_http_connections{class="user"}')" -le "$1"
}

# Every node stays UP for SECONDS, checked twice a second.
nodes_stay_up() {
    local i
    for i in $(seq 1 $(($1 * 2))); do
        nodes_up_is 2 || { ls_cli nodes >&2; return 1; }
        sleep 0.5
    done
}

test_expect_success 'two agents over TCP are UP; an operator token for TCP' '
    wait_nodes_up 2 &&
    ls_cli token create --user alice --role user --json | jget "j[\"token\"]" >alice.tok &&
    test "$(metric lockstep_http_connection_limit{limit=\"max\"})" = 160 &&
    metric lockstep_http_connections{class=\"user\"} >base.txt &&
    metric lockstep_http_connections{class=\"agent\"} && cat base.txt
'

test_expect_success 'one address trickling 100 connections: agents stay UP' '
    loris a1 100 14 127.0.0.2 &&
    sleep 2 &&
    nodes_stay_up 6
'

test_expect_success 'a job runs to SUCCEEDED during the attack' '
    id=$(submit_id --nodes 2 -- true) && wait_job_state $id SUCCEEDED 30
'

test_expect_success 'the CLI answers on the Unix socket and over TCP' '
    ls_cli nodes >/dev/null &&
    LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$(cat alice.tok) ls_cli jobs >/dev/null
'

test_expect_success 'a second address is refused by the per-peer cap: 503' '
    code=$(curl -s -o body.txt -D hdr.txt -w "%{http_code}" --interface 127.0.0.2 \
        -H "Authorization: Bearer $(cat alice.tok)" "$LOCKSTEP_URL/v1/jobs") &&
    cat body.txt && echo && test "$code" = 503 &&
    grep -qi "^retry-after: 5" hdr.txt && grep -q "peer cap" body.txt
'

test_expect_success 'the header deadline closed the trickling connections' '
    wait "$(cat a1.pid)"; cat a1.json && echo &&
    test "$(stat a1 closed_by_server)" -ge 100 &&
    "$PY" -c "import json,sys; l=json.load(open(sys.argv[1]))[\"closed_lifetimes_max\"]; sys.exit(0 if l < 6 else 1)" a1.json &&
    test "$(metric lockstep_http_timeouts_total{deadline=\"header\"})" -ge 100
'

test_expect_success 'user slots full (3 addresses x 50): agents keep reporting' '
    loris b2 50 16 127.0.0.2 && loris b3 50 16 127.0.0.3 &&
    loris b4 50 16 127.0.0.4 &&
    sleep 3 &&
    test "$(metric lockstep_http_connections{class=\"user\"})" -ge 120 &&
    nodes_stay_up 8
'

test_expect_success 'a new user is refused cleanly: 503 with Retry-After' '
    code=$(curl -s -o body.txt -D hdr.txt -w "%{http_code}" \
        -H "Authorization: Bearer $(cat alice.tok)" "$LOCKSTEP_URL/v1/jobs") &&
    cat body.txt && echo && test "$code" = 503 &&
    grep -qi "^retry-after: 5" hdr.txt && grep -q "overloaded" body.txt
'

test_expect_success 'meanwhile a job still runs to SUCCEEDED (Unix socket CLI)' '
    id=$(submit_id --nodes 2 -- true) && wait_job_state $id SUCCEEDED 30 &&
    ls_cli nodes >/dev/null
'

test_expect_success 'the refusals and evictions are counted in /metrics' '
    for p in b2 b3 b4; do wait "$(cat $p.pid)"; done &&
    curl -s "$LOCKSTEP_URL/metrics" >m.txt &&
    grep "^lockstep_http_" m.txt &&
    awk "/^lockstep_http_connections_refused_total/ { n += \$2 } END { exit !(n >= 2) }" m.txt
'

test_expect_success 'no node was ever LOST' '
    test "$(db_query "SELECT count(*) FROM events WHERE kind = '\''node_lost'\''")" = 0
'

test_expect_success 'after the attack the connections return to the baseline' '
    wait_for 10 "users_at_most \$((\$(cat base.txt) + 2))" ||
        { metric lockstep_http_connections{class=\"user\"}; false; } &&
    LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$(cat alice.tok) ls_cli jobs >/dev/null
'

test_done
