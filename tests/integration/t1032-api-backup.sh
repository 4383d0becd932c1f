#!/bin/bash
# t1032: `lockstep admin backup` copies the state while the scheduler
# serves (clients keep submitting); a scheduler started on a state
# directory restored from the copy has every job acknowledged before the
# backup began; a user without the operator role is refused.
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler

# client: submit jobs named bg-I until the file stop exists; log the
# acknowledged names to bg.acked.
client() {
    local i=0
    while [ ! -e "$TEST_DIR/stop" ]; do
        i=$((i + 1))
        "$CLI" submit --json --name "bg-$i" --nodes 1 -- true >/dev/null \
            2>&1 && echo "bg-$i" >>"$TEST_DIR/bg.acked"
    done
}

test_expect_success 'jobs acknowledged before the backup' '
    for i in $(seq 1 20); do
        ls_cli submit --name "pre-$i" --nodes 1 -- true >/dev/null || return 1
    done
'

test_expect_success 'backup while clients submit' '
    client & cpid=$! &&
    wait_for 30 "test -s bg.acked" &&
    n_before=$(wc -l <bg.acked) &&
    ls_cli admin backup "$TEST_DIR/backup.db" >out &&
    touch stop && wait $cpid &&
    cat out && grep -q "backup written to $TEST_DIR/backup.db" out &&
    head -n "$n_before" bg.acked >acked.before &&
    test -s acked.before &&
    test ! -e "$TEST_DIR/backup.db.tmp"
'

test_expect_success 'the copy is a whole database' '
    test "$(sqlite3 -readonly backup.db "PRAGMA integrity_check")" = ok
'

test_expect_success 'refused without the operator role' '
    ls_cli token create --user alice >alice.tok &&
    ! LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$(cat alice.tok) \
        "$CLI" admin backup "$TEST_DIR/nope.db" 2>err &&
    grep -q "operator" err && test ! -e nope.db
'

test_expect_success 'a scheduler restored from the copy has every job acknowledged before it' '
    stop_scheduler &&
    mv "$TEST_DIR/sched" "$TEST_DIR/sched.old" &&
    mkdir -p "$TEST_DIR/sched/state" &&
    cp backup.db "$TEST_DIR/sched/state/lockstep.db" &&
    start_scheduler &&
    ls_cli jobs --all --json >all.json &&
    jget "\"\\n\".join(x[\"name\"] for x in j)" <all.json | sort >restored &&
    for i in $(seq 1 20); do
        grep -qx "pre-$i" restored || { echo "pre-$i missing"; return 1; }
    done &&
    missing=$(sort acked.before | comm -23 - restored) &&
    test -z "$missing" || { echo "lost: $missing"; false; }
'

test_expect_success 'the restored scheduler serves: a new job gets a new id' '
    max=$(jget "max(x[\"id\"] for x in j)" <all.json) &&
    id=$(submit_id --nodes 1 -- true) &&
    test "$id" -gt "$max"
'

test_done
