#!/bin/bash
# t1035: a single scheduler becomes three replicas without losing its
# state (lockstepd --seed-from, docs/operations.md "From one scheduler
# to replicas"). A single scheduler with finished jobs, a queued one, one
# running on one of two agents (each the other's witness, so that the
# switch is an outage they ride out, however long it takes under ASan)
# and a token is stopped; replica 1 bootstraps a
# replica set seeded from its database, replicas 2 and 3 join it empty.
# Every replica then holds the seed; the leader has the jobs, the token
# and the nodes, and the rank output copied into each replica's state
# directory; the agents, whose server lists name the replicas after
# the old scheduler, reconnect to the leader and the running job is
# adopted (attempt 1, the same process), also after the leader is
# killed. The seeding replica, deposed, re-executes as a follower
# without its seed. Seeding a replica set that already has state is refused (exit
# 78), as are a damaged seed (exit 65), one of a newer schema, and a
# seed given to a replica that does not bootstrap the set.
. "$(dirname "$0")/../lib/harness.sh"
. "$(dirname "$0")/../lib/replicas.sh"

replica_tls || exit 1

# The replicas' ports and sockets, known before the single scheduler
# starts: the agent's server list names it first, then the replicas.
REPLICA_N=3
read -r -a ports <<<"$(free_ports 6)"
socks=
for i in 1 2 3; do
    REPLICA_API[$i]=${ports[$((2 * i - 2))]}
    REPLICA_RAFT[$i]=${ports[$((2 * i - 1))]}
    REPLICA_PEERS+="${REPLICA_PEERS:+,}$i@127.0.0.1:${REPLICA_RAFT[$i]}"
    socks+="${socks:+,}$TEST_DIR/rep$i/sock"
done
export AGENT_SERVER=$TEST_DIR/sched/sock,$socks

# seed_check [-o key=value]... FILE: lockstepd --check-config as replica
# 1 with --seed-from FILE; its stderr in err, its exit status returned.
seed_check() {
    local file=${*: -1}
    "$LOCKSTEPD" -o cluster_secret_file="$CLUSTER_SECRET" \
        "${REPLICA_TLS_OPTS[@]}" -o replica_id=1 \
        -o replica_address="127.0.0.1:${REPLICA_RAFT[1]}" \
        -o replicas="$REPLICA_PEERS" "${@:1:$#-1}" \
        --seed-from "$file" --check-config >out 2>err
    local rc=$?
    cat out err
    return $rc
}

names() { # names: the jobs' "name state" lines, by id
    ls_cli jobs --all --json |
        jget "\"\\n\".join(x[\"name\"] + \" \" + x[\"state\"] for x in sorted(j, key=lambda x: x[\"id\"]))"
}

test_expect_success 'a single scheduler with jobs, a token and a node' '
    start_scheduler && start_agent n1 && start_agent n2 &&
    wait_nodes_up 2 30 &&
    for k in 1 2; do
        id=$(submit_id --name "done-$k" --nodes 1 -- echo "out-$k") &&
        wait_job_state "$id" SUCCEEDED 30 && echo "$id" >"done-$k" ||
            return 1
    done &&
    id=$(submit_id --name long --nodes 1 -- sleep 600) && echo "$id" >long &&
    wait_job_state "$id" RUNNING 30 &&
    wait_until 20 test -n "\$(rank_pid $id 0)" && rank_pid "$id" 0 >pid &&
    submit_id --name queued --nodes 3 --wait-for-nodes -- true >queued &&
    ls_cli token create --user alice >alice.tok &&
    names >before && cat before && test "$(wc -l <before)" = 4
'

test_expect_success 'a backup is a valid seed; so is the stopped database' '
    ls_cli admin backup "$TEST_DIR/backup.db" &&
    seed_check backup.db && grep -qx "configuration OK" out &&
    stop_scheduler &&
    seed_check "$TEST_DIR/sched/state/lockstep.db"
'

test_expect_success 'refused: a seed to a replica that does not bootstrap, or no replica' '
    ! seed_check -o replica_id=4 -o replica_address=127.0.0.1:1 backup.db &&
    grep -q "not in .replicas." err &&
    ! "$LOCKSTEPD" -o cluster_secret_file="$CLUSTER_SECRET" -o tls=off \
        --seed-from backup.db --check-config 2>err &&
    cat err && grep -q "needs replica_id" err
'

test_expect_success 'refused: a damaged seed, exit 65, naming the file' '
    cp backup.db bad.db &&
    pages=$(( $(stat -c %s bad.db) / 4096 )) && test "$pages" -gt 4 &&
    head -c 4096 /dev/urandom |
        dd of=bad.db bs=4096 seek=$((pages / 2)) conv=notrunc 2>/dev/null &&
    seed_check bad.db; test $? = 65 &&
    grep -q "bad.db.* is damaged" err &&
    head -c 65536 /dev/urandom >noise.db &&
    seed_check noise.db; test $? = 65 && grep -q "noise.db.* is damaged" err
'

test_expect_success 'refused: a seed of a newer schema, or not a lockstep database' '
    cp backup.db newer.db &&
    sqlite3 newer.db "PRAGMA user_version = 99999" &&
    seed_check newer.db; test $? = 78 && grep -q "newer than this" err &&
    sqlite3 other.db "CREATE TABLE t (a INTEGER PRIMARY KEY)" &&
    seed_check other.db; test $? = 78 && grep -q "not a lockstep database" err &&
    seed_check nothere.db; test $? = 78 && grep -q "nothere.db" err
'

test_expect_success 'three replicas seeded from the stopped scheduler' '
    export LOCKSTEP_SERVER=$socks &&
    for i in 1 2 3; do
        mkdir -p "rep$i/state" && cp -a sched/state/logs "rep$i/state/" ||
            return 1
    done &&
    start_replica 1 --seed-from "$TEST_DIR/sched/state/lockstep.db" &&
    start_replica 2 -o replicas= && start_replica 3 -o replicas= &&
    for i in 1 2 3; do
        wait_until 20 test -S "$TEST_DIR/rep$i/sock" || return 1
    done &&
    leader=$(wait_leader 30) && test "$leader" = 1 &&
    grep -q "seeded the replica set" rep1/log &&
    names >after && cat after && diff before after
'

# same_state I: replica I holds the leader'"'"'s jobs, nodes and tokens.
same_state() {
    local q="SELECT id, name, state FROM jobs ORDER BY id;
        SELECT name FROM nodes ORDER BY name; SELECT COUNT(*) FROM tokens"
    test "$(replica_db "$1" "$q")" = "$(replica_db "$(wait_leader 10)" "$q")"
}

test_expect_success 'every replica holds the seed; the token and node are there' '
    for i in 1 2 3; do wait_until 30 same_state $i || return 1; done &&
    test "$(replica_db 2 "SELECT COUNT(*) FROM jobs")" = 4 &&
    LOCKSTEP_SERVER=$(replica_url 1) LOCKSTEP_TOKEN=$(cat alice.tok) \
        ls_cli jobs --all >alice.out && cat alice.out &&
    ls_cli nodes --json | jget "\" \".join(sorted(n[\"name\"] for n in j))" |
        grep -qx "n1 n2" &&
    ls_cli logs "$(cat done-1)" | grep -qx out-1
'

running_adopted() { # the long job runs on attempt 1 in its first process
    test "$(job_json "$(cat long)" "j[\"state\"]")" = RUNNING &&
        test "$(job_json "$(cat long)" "len(j[\"attempts\"])")" = 1 &&
        kill -0 "$(cat pid)" && test "$(rank_pid "$(cat long)" 0)" = "$(cat pid)"
}

test_expect_success 'the agent reconnects to the leader; its job is adopted' '
    wait_until 30 nodes_up_is 2 &&
    wait_until 30 running_adopted
'

# is_follower I: replica I says it is a follower.
is_follower() {
    replica_health "$1" | grep -q "\"role\":\"follower\""
}

# leads_not I: a replica other than I serves.
leads_not() {
    local l
    l=$(serving_replicas) && [ -n "$l" ] && [ "$l" != "$1" ]
}

test_expect_success 'the seeding replica, deposed, comes back a follower' '
    kill -STOP "${REPLICA_PID[1]}" &&
    { wait_until 30 leads_not 1; rc=$?; kill -CONT "${REPLICA_PID[1]}"; } &&
    test $rc = 0 &&
    wait_until 30 grep -q "restarting as a follower" rep1/log &&
    wait_until 30 same_state 1 && kill -0 "${REPLICA_PID[1]}" &&
    ! grep -q "already has state" rep1/log &&
    : "a replica just restarted may be a candidate for an election timeout" &&
    wait_until 10 is_follower 1
'

test_expect_success 'the leader killed: the new leader has it all' '
    old=$(wait_leader 30) && echo "$old" >killed && kill_replica "$old" &&
    leader=$(wait_leader 30) && test "$leader" != "$old" &&
    names >after2 && cat after2 && diff before after2 &&
    ls_cli logs "$(cat done-2)" | grep -qx out-2 &&
    LOCKSTEP_SERVER=$(replica_url "$leader") LOCKSTEP_TOKEN=$(cat alice.tok) \
        ls_cli jobs --all >/dev/null &&
    wait_until 30 nodes_up_is 2 && wait_until 30 running_adopted &&
    max=$(replica_db "$leader" "SELECT MAX(id) FROM jobs") &&
    id=$(submit_id --name after --nodes 1 -- true) && test "$id" -gt "$max" &&
    wait_job_state "$id" SUCCEEDED 30 &&
    start_replica "$old" && wait_until 30 same_state "$old"
'

test_expect_success 'seeding a replica set that already has state is refused' '
    stop_replica 1 &&
    start_replica 1 --seed-from "$TEST_DIR/backup.db" &&
    wait "${REPLICA_PID[1]}"; rc=$? && REPLICA_PID[1]= &&
    test $rc = 78 && grep -q "already has state" rep1/log &&
    start_replica 1 && wait_until 30 same_state 1 &&
    test "$(replica_db 1 "SELECT COUNT(*) FROM jobs WHERE name = \"after\"")" = 1 &&
    wait_until 30 running_adopted
'

test_done
