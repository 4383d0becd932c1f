#!/bin/bash
# t1033: three replicas of lockstepd. Inconsistent replica settings are
# refused (exit 78); one replica leads, the others say so and send
# clients to it (GET /v1/health, 421 not_leader); the CLI, given every
# replica, finds the leader wherever it is in the list; what the leader
# acknowledged is in every replica's database; `lockstep replicas` lists
# them; SIGHUP reloads each replica's certificate and cluster secret
# while the leader goes on; an operator adds a fourth and removes it; a
# replica stopped and started again catches up; SIGTERM stops a replica
# cleanly, a leader after handing the lead over. The replicas run with
# TLS, as lockstepd does by default: the leader's URL a follower names is
# https://, and the CLI given the replicas' URLs follows it with
# LOCKSTEP_CA.
. "$(dirname "$0")/../lib/harness.sh"
. "$(dirname "$0")/../lib/replicas.sh"

SCHED_TLS=1
replica_tls || exit 1

refused() { # refused WHAT -o ...: --check-config exits 78 naming WHAT
    local what=$1
    shift
    "$LOCKSTEPD" -o cluster_secret_file="$CLUSTER_SECRET" \
        "${REPLICA_TLS_OPTS[@]}" "$@" --check-config 2>err
    local rc=$?
    cat err
    test $rc = 78 && grep -q -- "$what" err
}

test_expect_success 'inconsistent replica settings are refused with exit 78' '
    refused replica_address -o replica_id=1 &&
    refused replica_id -o replicas=1@127.0.0.1:7401 &&
    refused "but replica_address is" -o replica_id=1 \
        -o replica_address=127.0.0.1:7401 -o replicas=1@127.0.0.1:7499 &&
    refused "ID@HOST:PORT" -o replica_id=1 -o replica_address=127.0.0.1:7401 \
        -o replicas=one@127.0.0.1:7401 &&
    refused "repeats" -o replica_id=1 -o replica_address=127.0.0.1:7401 \
        -o replicas=1@127.0.0.1:7401,1@127.0.0.1:7402 &&
    refused node_timeout_ms -o replica_id=1 -o replica_address=127.0.0.1:7401 \
        -o replica_election_timeout_ms=3000 &&
    refused replica_url -o replica_id=1 -o replica_address=127.0.0.1:7401 \
        -o listen=0.0.0.0:7300 &&
    "$LOCKSTEPD" -o cluster_secret_file="$CLUSTER_SECRET" \
        "${REPLICA_TLS_OPTS[@]}" -o replica_id=2 \
        -o replica_address=127.0.0.1:7402 \
        -o replicas="1@127.0.0.1:7401, 2@127.0.0.1:7402, 3@127.0.0.1:7403" \
        --check-config | grep -qx "configuration OK"
'

test_expect_success 'a single scheduler state directory is not taken over' '
    mkdir -p single/state &&
    sqlite3 single/state/lockstep.db "CREATE TABLE x (a PRIMARY KEY); INSERT INTO x VALUES (1)" &&
    ! "$LOCKSTEPD" -o listen=127.0.0.1:0 "${REPLICA_TLS_OPTS[@]}" -o socket= \
        -o state_dir="$TEST_DIR/single/state" \
        -o cluster_secret_file="$CLUSTER_SECRET" -o replica_id=1 \
        -o replica_address=127.0.0.1:$(free_ports 1) 2>err &&
    cat err && grep -q "single scheduler" err &&
    test "$(sqlite3 single/state/lockstep.db "SELECT a FROM x")" = 1
'

test_expect_success 'three replicas elect one leader' '
    start_replicas 3 &&
    leader=$(wait_leader 30) && echo "leader: replica $leader" &&
    echo "$leader" >leader &&
    for i in 1 2 3; do replica_health $i; echo; done >health &&
    cat health &&
    test "$(grep -c "\"role\":\"leader\",\"serving\":true" health)" = 1 &&
    test "$(grep -c "\"role\":\"follower\",\"serving\":false" health)" = 2
'

test_expect_success 'followers name the leader; writes there get 421 not_leader' '
    leader=$(cat leader) && url=$(replica_url "$leader") &&
    echo "$url" | grep -q "^https://" &&
    for i in 1 2 3; do
        [ $i = "$leader" ] && continue
        wait_for 10 "replica_health $i | grep -qF \"\\\"leader\\\":\\\"$url\\\"\"" ||
            return 1
        code=$(curl -s -o out.json -w "%{http_code}" --unix-socket \
            "$TEST_DIR/rep$i/sock" -X POST -d "{}" http://x/v1/jobs) &&
        cat out.json && test "$code" = 421 &&
        test "$(jget "j[\"error\"][\"code\"]" <out.json)" = not_leader &&
        test "$(jget "j[\"leader\"]" <out.json)" = "$url" || return 1
    done
'

test_expect_success 'the CLI finds the leader wherever it is in the list' '
    leader=$(cat leader) &&
    for first in 1 2 3; do
        list=$TEST_DIR/rep$first/sock &&
        for i in 1 2 3; do
            [ $i = $first ] || list=$list,$TEST_DIR/rep$i/sock
        done &&
        LOCKSTEP_SERVER=$list ls_cli submit --json --name "via-$first" \
            --nodes 1 -- true >sub.json && jget "j[\"id\"]" <sub.json ||
            return 1
    done &&
    ls_cli jobs --json | jget "sorted(x[\"name\"] for x in j)" >names &&
    cat names && grep -q via-1 names && grep -q via-2 names &&
    grep -q via-3 names
'

test_expect_success 'over https the CLI follows the leader, named or listed' '
    leader=$(cat leader) && ls_cli token create --user bob >bob.tok &&
    urls= && others= &&
    for i in 1 2 3; do
        urls=$urls${urls:+,}$(replica_url $i) &&
        if [ $i != "$leader" ]; then
            others=$others${others:+,}$(replica_url $i)
        fi
    done &&
    LOCKSTEP_SERVER=$urls LOCKSTEP_TOKEN=$(cat bob.tok) ls_cli submit \
        --json --name via-urls --nodes 1 -- true >sub.json &&
    jget "j[\"id\"]" <sub.json &&
    LOCKSTEP_SERVER=$others LOCKSTEP_TOKEN=$(cat bob.tok) ls_cli submit \
        --json --name via-followers --nodes 1 -- true >sub.json &&
    jget "j[\"id\"]" <sub.json &&
    ls_cli jobs --json --all | jget "[x[\"user\"] for x in j if x[\"name\"].startswith(\"via-\")]" >users &&
    cat users && test "$(grep -o bob users | wc -l)" = 2 &&
    ! env -u LOCKSTEP_CA LOCKSTEP_SERVER="$others" \
        LOCKSTEP_TOKEN="$(cat bob.tok)" "$CLI" jobs 2>err &&
    cat err && grep -q "cannot verify the scheduler" err
'

# same_jobs I: replica I has the leader's jobs, row for row.
same_jobs() {
    local q="SELECT id, name, state FROM jobs ORDER BY id"
    test "$(replica_db "$1" "$q")" = "$(replica_db "$(cat leader)" "$q")"
}

test_expect_success 'what the leader acknowledged is in every replica' '
    for k in $(seq 1 20); do
        ls_cli submit --name "rep-$k" --nodes 1 -- true >/dev/null || return 1
    done &&
    for i in 1 2 3; do wait_until 20 same_jobs $i || return 1; done &&
    test "$(replica_db 1 "SELECT COUNT(*) FROM jobs")" = 25
'

test_expect_success 'lockstep replicas lists them with role, state and lag' '
    ls_cli replicas >out && cat out &&
    grep -q "term" out && test "$(grep -c voter out)" = 3 &&
    ls_cli replicas --json >r.json &&
    test "$(jget "len(j[\"replicas\"])" <r.json)" = 3 &&
    test "$(jget "j[\"leader_id\"]" <r.json)" = "$(cat leader)" &&
    test "$(jget "[m[\"state\"] for m in j[\"replicas\"]].count(\"leader\")" <r.json)" = 1
'

# served_serial I: the serial of the certificate replica I serves.
served_serial() {
    openssl s_client -connect "127.0.0.1:${REPLICA_API[$1]}" \
        -CAfile "$TLS_DIR/ca.pem" -verify_return_error </dev/null 2>/dev/null |
        openssl x509 -noout -serial
}

# register_as NODE KEYFILE: an agent's signed registration of NODE, sent
# to the leader's https:// URL; prints "STATUS BODY".
register_as() {
    SSL_CERT_FILE=$TLS_DIR/ca.pem "$PY" "$SRC_DIR/tests/helpers/agentcred.py" \
        request "$(replica_url "$(cat "$TEST_DIR/leader")")" POST \
        /v1/agent/status --key "$2" --node "$1" --body \
        "{\"version\":1,\"node\":\"$1\",\"register\":true,\"agent_id\":\"a-$1\",\"addr\":\"127.0.0.1\",\"cpus\":1,\"memory_mb\":64,\"gpus\":[],\"labels\":{},\"jobs\":[]}"
}

test_expect_success 'SIGHUP: each replica reloads its certificate and the cluster secret' '
    leader=$(cat leader) &&
    "$SRC_DIR/deploy/tls-certs.sh" "$TLS_DIR" 127.0.0.1 localhost >/dev/null &&
    new=$(openssl x509 -in "$TLS_DIR/server.pem" -noout -serial) &&
    test "$(served_serial 1)" != "$new" &&
    (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d " \n" >new.secret) &&
    key=$(node_key hup "$TEST_DIR/new.secret") &&
    register_as hup "$key" >before && cat before && grep -q "^401 " before &&
    cp new.secret "$CLUSTER_SECRET" &&
    for i in 1 2 3; do kill -HUP "${REPLICA_PID[$i]}" || return 1; done &&
    for i in 1 2 3; do
        wait_until 10 grep -q "reloaded TLS certificate" "$TEST_DIR/rep$i/log" &&
        wait_until 10 grep -q "SIGHUP: cluster secrets read again" \
            "$TEST_DIR/rep$i/log" &&
        test "$(served_serial $i)" = "$new" || return 1
    done &&
    test "$(serving_replicas)" = "$leader" &&
    register_as hup "$key" >after && cat after && grep -q "^200 " after &&
    LOCKSTEP_SERVER=$(replica_url "$leader") LOCKSTEP_TOKEN=$(cat bob.tok) \
        ls_cli jobs >/dev/null
'

test_expect_success 'a follower stopped and started again catches up' '
    leader=$(cat leader) && f=$(( leader % 3 + 1 )) &&
    stop_replica $f &&
    for k in $(seq 1 10); do
        ls_cli submit --name "while-down-$k" --nodes 1 -- true >/dev/null ||
            return 1
    done &&
    start_replica $f &&
    wait_until 30 same_jobs $f &&
    replica_db $f "SELECT name FROM jobs" | grep -qx while-down-10
'

test_expect_success 'an operator adds a fourth replica; it catches up; then removes it' '
    read -r api4 raft4 <<<"$(free_ports 2)" &&
    REPLICA_API[4]=$api4 && REPLICA_RAFT[4]=$raft4 && REPLICA_N=4 &&
    REPLICA_PEERS= start_replica 4 &&
    wait_until 20 test -S "$TEST_DIR/rep4/sock" &&
    replica_health 4 | grep -q "\"role\":\"follower\"" &&
    ls_cli replicas add 4 127.0.0.1:$raft4 --url "$(replica_url 4)" >out &&
    cat out && test "$(grep -c voter out)" = 4 &&
    wait_until 30 same_jobs 4 &&
    ls_cli replicas remove 4 >out && cat out &&
    test "$(grep -c voter out)" = 3 && stop_replica 4 && REPLICA_N=3
'

test_expect_success 'removing an unknown replica or adding a member again is refused' '
    ! ls_cli replicas remove 9 2>err && cat err && grep -q "not a member" err &&
    ! ls_cli replicas add 1 127.0.0.1:1 2>err && cat err &&
    grep -q "member already" err
'

test_expect_success 'SIGTERM stops a follower cleanly; the leader stays' '
    leader=$(cat leader) && f=$(( leader % 3 + 1 )) &&
    stop_replica $f && ! grep -q "still open at exit" "$TEST_DIR/rep$f/log" &&
    test "$(serving_replicas)" = "$leader" &&
    start_replica $f && wait_until 30 same_jobs $f
'

test_expect_success 'SIGTERM stops the leader cleanly; it hands the lead over' '
    leader=$(cat leader) && stop_replica $leader &&
    ! grep -q "still open at exit" "$TEST_DIR/rep$leader/log" &&
    grep -q "handing the lead over" "$TEST_DIR/rep$leader/log" &&
    grep "leads now" "$TEST_DIR/rep$leader/log" &&
    new=$(wait_leader 30) && test "$new" != "$leader" &&
    ls_cli submit --name after-stop --nodes 1 -- true &&
    start_replica $leader &&
    wait_for 30 "replica_db $leader \"SELECT name FROM jobs\" | grep -qx after-stop"
'

test_done
