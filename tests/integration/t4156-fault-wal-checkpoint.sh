#!/bin/bash
# t4156: the WAL is checkpointed off the loop (scheduler/walckpt.c), and
# a checkpoint that fails loses nothing. The scheduler's state directory
# is a small tmpfs. Batches of submissions push the WAL past 1,000 pages:
# the checkpoint copies them into lockstep.db (which grows: the commits
# themselves never checkpoint). Then the disk is filled: the WAL is
# reused from its start within the space it already has, so commits go
# on, but the next checkpoint cannot grow lockstep.db: it fails, is
# logged, and commits go on until the WAL needs space of its own (503s
# naming the disk). When space returns (the first request may still get
# the 503 of the reload after the failed write, as in t4151), commits and
# checkpoints succeed again, and after a kill -9 and a restart every
# acknowledged job is there.
HARNESS_MOUNT_NS=1
. "$(dirname "$0")/../lib/harness.sh"

STATE=$TEST_DIR/sched/state
SPEC='{"version": 1, "argv": ["true"], "nodes": 2, "wait_for_nodes": true}'

# batch N: submit N never-placed jobs in one request; appends their ids
# to acked on success; the CLI's exit status.
batch() {
    local i
    for i in $(seq 1 "$1"); do echo "$SPEC"; done >specs.jsonl
    ls_cli submit --json --specs specs.jsonl >batch.out 2>batch.err &&
        jget '"\n".join(str(x) for x in j["ids"])' <batch.out >>acked
}

db_kib() { echo $(($(stat -c %s "$STATE/lockstep.db") / 1024)); }

test_expect_success 'a scheduler on a 24 MiB tmpfs' '
    mount_tmpfs "$STATE" 24m && start_scheduler && : >acked &&
    db_kib >db0 && cat db0
'

test_expect_success 'past 1,000 WAL pages a checkpoint copies them into the database' '
    for i in $(seq 1 40); do
        batch 200 || { cat batch.err; return 1; }
        [ "$(db_kib)" -gt $(($(cat db0) + 512)) ] && break
    done &&
    echo "after $i batches: lockstep.db $(db_kib) KiB, WAL $(($(stat -c %s "$STATE/lockstep.db-wal") / 1024)) KiB" &&
    test "$(db_kib)" -gt $(($(cat db0) + 512))
'

test_expect_success 'disk full: a checkpoint fails and says so; commits go on while the WAL has room' '
    db_kib >db1 && fill_disk "$STATE" &&
    for i in $(seq 1 60); do
        batch 200 || break
        grep -q "checkpoint of .* (the WAL keeps growing until a checkpoint succeeds)" \
            "$TEST_DIR/sched/log" && break
    done &&
    grep "checkpoint of" "$TEST_DIR/sched/log" | head -n 2 &&
    grep -q "checkpoint of .*lockstep.db.* (the WAL keeps growing until a checkpoint succeeds)" \
        "$TEST_DIR/sched/log"
'

test_expect_success 'until the WAL needs space: 503 naming the disk' '
    for i in $(seq 1 60); do batch 200 || break; done &&
    cat batch.err && grep -q "disk is full" batch.err
'

test_expect_success 'space returns: submissions and checkpoints go on' '
    free_disk "$STATE" && db_kib >db2 &&
    for i in $(seq 1 40); do
        batch 200 || { cat batch.err; sleep 1; continue; }
        [ "$(db_kib)" -gt "$(cat db2)" ] && break
    done &&
    test "$(db_kib)" -gt "$(cat db2)"
'

test_expect_success 'kill -9, restart: every acknowledged job is there' '
    kill_scheduler && start_scheduler &&
    db_query "SELECT id FROM jobs" | sort -n >have &&
    sort -n acked >want && wc -l <want &&
    test -z "$(comm -23 want have)"
'

test_done
