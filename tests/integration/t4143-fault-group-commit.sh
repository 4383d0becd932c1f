#!/bin/bash
# t4143: group commit with the WAL's fsync off the loop (docs/scale.md
# "Group commit"). An LD_PRELOAD shim (tests/helpers/fsync_delay.c) makes
# every fdatasync of the WAL take 400 ms longer and logs when each starts
# and ends. A reply must not leave before an fsync that began after its
# request was sent has ended; parallel clients share fsyncs; and a kill -9
# while fsyncs are slow loses no acknowledged submission. A replica runs no
# WAL syncer at all (its replies wait for the quorum instead, through the
# same holds: docs/architecture.md "Durable replies").
. "$(dirname "$0")/../lib/harness.sh"
. "$SRC_DIR/tests/lib/replicas.sh"

SHIM=$TEST_DIR/fsync_delay.so
SYNCLOG=$TEST_DIR/fsync.log

now_ns() { date +%s%N; }

# syncs_within T0 T1: how many fsyncs started after T0 and ended by T1.
syncs_within() {
    awk -v t0="$1" -v t1="$2" '
        $1 == "start" { s = $2 }
        $1 == "end" && s >= t0 && $2 <= t1 { n++ }
        END { print n + 0 }' "$SYNCLOG"
}

# Under ASan its runtime must come first in LD_PRELOAD.
PRELOAD=$(ldd "$LOCKSTEPD" | awk '/libasan/ { printf "%s ", $3 }')$SHIM

test_expect_success 'the scheduler runs with slow WAL fsyncs' '
    cc -shared -fPIC -o "$SHIM" "$SRC_DIR/tests/helpers/fsync_delay.c" -ldl &&
    LD_PRELOAD=$PRELOAD FSYNC_DELAY_MS=400 FSYNC_DELAY_LOG=$SYNCLOG \
        start_scheduler &&
    ls_cli jobs >/dev/null
'

test_expect_success 'a submit is answered only after an fsync that followed it' '
    t0=$(now_ns) &&
    id=$(submit_id --nodes 1 -- true) &&
    t1=$(now_ns) &&
    echo "job $id in $(( (t1 - t0) / 1000000 )) ms" &&
    test $(( (t1 - t0) / 1000000 )) -ge 400 &&
    test "$(syncs_within $t0 $t1)" -ge 1
'

# client P K N: N submissions named P-K-I; "name id" of each acknowledged
# one to acked.K, the names of the others to failed.K.
client() {
    local p=$1 k=$2 n=$3 i out
    for i in $(seq 1 "$n"); do
        if out=$("$CLI" submit --json --name "$p-$k-$i" --nodes 1 -- true \
            2>/dev/null); then
            echo "$p-$k-$i $(echo "$out" | jget 'j["id"]')" >>"$TEST_DIR/acked.$k"
        else
            echo "$p-$k-$i" >>"$TEST_DIR/failed.$k"
        fi
    done
}

test_expect_success 'four parallel clients share fsyncs (fewer than replies)' '
    t0=$(now_ns) &&
    pids= &&
    for k in 1 2 3 4; do client gc $k 8 & pids="$pids $!"; done &&
    wait $pids &&
    t1=$(now_ns) &&
    acked=$(cat acked.* | wc -l) &&
    syncs=$(syncs_within $t0 $t1) &&
    echo "acknowledged $acked, fsyncs $syncs" &&
    test "$acked" = 32 &&
    test "$syncs" -lt "$acked"
'

test_expect_success 'kill -9 while fsyncs are slow: acknowledged submissions survive' '
    rm -f acked.* failed.* &&
    pids= &&
    for k in 1 2 3; do client kill $k 20 & pids="$pids $!"; done &&
    wait_for 60 "test \$(cat acked.* 2>/dev/null | wc -l) -ge 10" &&
    kill_scheduler &&
    start_scheduler &&
    wait $pids &&
    cat acked.* | sort >acked &&
    ls_cli jobs --all --json >all.json &&
    jget "\"\\n\".join(\"%s %s\" % (x[\"name\"], x[\"id\"]) for x in j)" <all.json |
        grep "^kill-" | sort >stored &&
    echo "acked $(wc -l <acked), stored $(wc -l <stored)" &&
    missing=$(comm -23 acked stored) &&
    { test -z "$missing" || { echo "lost: $missing"; false; }; } &&
    test -z "$(cut -d" " -f1 stored | sort | uniq -d)"
'

test_expect_success 'the database passes an integrity check' '
    test "$(db_query "PRAGMA integrity_check")" = ok
'

# wal_syncs_since T0: fdatasyncs of a WAL that started after T0.
wal_syncs_since() {
    awk -v t0="$1" '$1 == "start" && $2 >= t0 { n++ } END { print n + 0 }' \
        "$SYNCLOG"
}

test_expect_success 'a replica fsyncs no WAL: its replies wait for the quorum' '
    LD_PRELOAD=$PRELOAD FSYNC_DELAY_MS=400 FSYNC_DELAY_LOG=$SYNCLOG \
        start_replicas 3 -o tls=off &&
    leader=$(wait_leader 30) &&
    t0=$(now_ns) &&
    for i in 1 2 3 4 5; do submit_id --nodes 1 -- true >/dev/null || return 1; done &&
    m=$(curl -s "http://127.0.0.1:${REPLICA_API[$leader]}/metrics") &&
    echo "$m" | grep "^lockstep_db_" | grep -v bucket &&
    echo "$m" | grep -q "^lockstep_db_commits_total [1-9]" &&
    echo "$m" | grep -qx "lockstep_db_fsyncs_total 0" &&
    test "$(wal_syncs_since "$t0")" = 0 &&
    test "$(ls_cli jobs --all --json | jget "len(j)")" -ge 5
'

test_done
