#!/bin/bash
# t4141: the leader of three replicas cut off from the other two (a proxy
# between the replicas; clients still reach every replica). It stops
# acknowledging within half an election timeout (its lease): a write or a
# read sent to it then gets no success reply, and what it took in is
# never committed. The other two elect a new leader, which serves. Once
# healed, the old leader follows the new one and its database converges.
. "$(dirname "$0")/../lib/harness.sh"
. "$(dirname "$0")/../lib/replicas.sh"

ET=1000

test_expect_success 'three replicas behind a proxy elect a leader' '
    REPLICA_ET_MS=$ET start_replicas_proxied 3 &&
    leader=$(wait_leader 30) && echo "$leader" >old &&
    for k in $(seq 1 10); do
        ls_cli submit --name "before-$k" --nodes 1 -- true >/dev/null ||
            return 1
    done
'

old_sock() { echo "$TEST_DIR/rep$(cat "$TEST_DIR/old")/sock"; }

test_expect_success 'cut off, the old leader acknowledges nothing after its lease' '
    cut_replica "$(cat old)" && sleep 0.6 || return 1
    # A read first (no write of its own to wait for: the lease decides),
    # then a write.
    { curl -s -o cut-get.out -w "%{http_code}" --max-time 8 \
        --unix-socket "$(old_sock)" http://x/v1/jobs >cut-get.code; } &
    get=$!
    sleep 0.1
    { LOCKSTEP_SERVER=$(old_sock) "$CLI" submit --json --name during-cut \
        --nodes 1 -- true >cut-submit.out 2>cut-submit.err; echo $? >cut-submit.rc; } &
    sub=$!
    wait $get $sub
    echo "read answered $(cat cut-get.code)" && cat cut-submit.out cut-submit.err &&
    test "$(cat cut-get.code)" != 200 &&
    test "$(cat cut-submit.rc)" != 0 && ! grep -q "\"id\"" cut-submit.out
'

test_expect_success 'the majority elects a new leader that serves' '
    old=$(cat old) &&
    wait_for 20 "serving_replicas | grep -vx $old | grep -q ." &&
    new=$(serving_replicas | grep -vx "$old") && echo "$new" >new &&
    echo "new leader: replica $new" &&
    LOCKSTEP_SERVER=$TEST_DIR/rep$new/sock ls_cli submit --name after-cut \
        --nodes 1 -- true
'

test_expect_success 'the old leader stepped down and says it does not lead' '
    old=$(cat old) &&
    wait_for 20 "replica_health $old | grep -q \"\\\"serving\\\":false\"" &&
    replica_health $old && grep -q "restarting as a follower" "$TEST_DIR/rep$old/log"
'

same_jobs() {
    local q="SELECT id, name, state FROM jobs ORDER BY id"
    test "$(replica_db "$1" "$q")" = "$(replica_db "$2" "$q")"
}

test_expect_success 'healed, the old leader follows the new one and converges' '
    old=$(cat old) new=$(cat new) &&
    heal_replicas &&
    wait_for 30 "replica_health $old | grep -q \"\\\"leader_id\\\":$new\"" &&
    wait_until 30 same_jobs "$old" "$new" &&
    ls_cli submit --name after-heal --nodes 1 -- true >/dev/null &&
    wait_for 30 "replica_db $old \"SELECT name FROM jobs\" | grep -qx after-heal" &&
    test "$(serving_replicas)" = "$new"
'

test_expect_success 'what the cut-off leader took in was never committed' '
    for i in 1 2 3; do
        test -z "$(replica_db $i "SELECT id FROM jobs WHERE name = '\''during-cut'\''")" ||
            return 1
    done &&
    test "$(replica_db "$(cat new)" "SELECT COUNT(*) FROM jobs WHERE name LIKE '\''before-%'\''")" = 10
'

test_done
