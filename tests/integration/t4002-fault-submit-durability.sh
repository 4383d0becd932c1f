#!/bin/bash
# t4002: 500 submissions from parallel clients with a kill -9 of lockstepd
# in the middle; after a restart every submission that got a success reply
# exists exactly once, and none is duplicated.
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler

CLIENTS=5
PER_CLIENT=100

# client K: submit PER_CLIENT jobs named dur-K-I; log "name id" for each
# acknowledged one to acked.K, and the names that got an error to failed.K.
client() {
    local k=$1 i out
    for i in $(seq 1 $PER_CLIENT); do
        if out=$("$CLI" submit --json --name "dur-$k-$i" --nodes 1 -- true \
            2>/dev/null); then
            echo "dur-$k-$i $(echo "$out" | jget 'j["id"]')" >>"$TEST_DIR/acked.$k"
        else
            echo "dur-$k-$i" >>"$TEST_DIR/failed.$k"
        fi
    done
}

test_expect_success 'parallel clients submit while the scheduler is killed' '
    pids= &&
    for k in $(seq 1 $CLIENTS); do client $k & pids="$pids $!"; done &&
    wait_for 60 "test \$(cat acked.* 2>/dev/null | wc -l) -ge 150" &&
    kill_scheduler &&
    sleep 0.5 &&
    start_scheduler &&
    wait $pids &&
    cat acked.* | sort >acked &&
    cat failed.* 2>/dev/null | sort >failed;
    echo "acked $(wc -l <acked), failed $(wc -l <failed)" &&
    test "$(wc -l <acked)" -ge 150 &&
    test $(( $(wc -l <acked) + $(wc -l <failed) )) = 500
'

test_expect_success 'some submissions were refused while it was down' '
    test "$(wc -l <failed)" -ge 1
'

test_expect_success 'every acknowledged submission exists exactly once' '
    ls_cli jobs --all --json >all.json &&
    jget "\"\\n\".join(\"%s %s\" % (x[\"name\"], x[\"id\"]) for x in j)" <all.json |
        grep "^dur-" | sort >stored &&
    missing=$(comm -23 acked stored) &&
    test -z "$missing" || { echo "lost: $missing"; false; }
'

test_expect_success 'no submission is duplicated' '
    test -z "$(cut -d" " -f1 stored | sort | uniq -d)" &&
    test -z "$(cut -d" " -f2 stored | sort | uniq -d)"
'

test_expect_success 'unacknowledged submissions stored at most once' '
    test "$(wc -l <stored)" -le 500
'

test_expect_success 'the database passes an integrity check' '
    test "$(db_query "PRAGMA integrity_check")" = ok
'

test_done
