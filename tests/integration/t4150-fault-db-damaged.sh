#!/bin/bash
# t4150: a lost or damaged database at start-up. A first start creates the
# database and its marker (lockstep.db-created); after that, a missing
# file (or one whose WAL is still there), a file emptied, one whose header
# was overwritten, one cut in half and one with a b-tree page overwritten
# are each refused with a message naming the file and what is wrong, exit
# 66 (lost) or 65 (damaged), and never replaced by an empty database.
# Put back, the backup starts and every job is there.
. "$(dirname "$0")/../lib/harness.sh"

STATE=$TEST_DIR/sched/state
DB=$STATE/lockstep.db

# refused: run lockstepd in the foreground on the state directory; it must
# exit at once. Prints its exit status; its log is in refused.log.
refused() {
    timeout 30 "$LOCKSTEPD" -o listen=127.0.0.1:0 -o tls=off -o socket="$TEST_DIR/r.sock" \
        -o state_dir="$STATE" -o cluster_secret_file="$CLUSTER_SECRET" \
        "$@" >refused.log 2>&1
    echo $?
}

# damaged WHAT RC PATTERN: the start is refused with exit RC and a log
# line matching PATTERN, and leaves the database file as it was.
damaged() {
    local sum
    sum=$(cksum <"$DB" 2>/dev/null)
    rc=$(refused) && cat refused.log && test "$rc" = "$2" &&
        grep -q "$3" refused.log &&
        grep -q "restore it from a backup" refused.log &&
        test "$(cksum <"$DB" 2>/dev/null)" = "$sum" &&
        test ! -e "$TEST_DIR/r.sock"
}

restore() {
    rm -f "$DB" "$DB-wal" "$DB-shm" && cp "$TEST_DIR/backup.db" "$DB"
}

# The page (1-based) where table NAME's b-tree starts, and the page size.
rootpage() {
    sqlite3 "$TEST_DIR/backup.db" "SELECT rootpage FROM sqlite_master WHERE name = '$1'"
}
pagesize() {
    sqlite3 "$TEST_DIR/backup.db" "PRAGMA page_size"
}

test_expect_success 'a first start creates the database and its marker' '
    test ! -e "$STATE" &&
    start_scheduler && test -s "$DB" && grep -q "^lockstep database created" "$DB-created" &&
    for i in 1 2 3 4 5; do submit_id --wait-for-nodes -- echo job $i >>ids || return 1; done &&
    test "$(wc -l <ids)" = 5 &&
    stop_scheduler && test ! -e "$DB-wal" &&
    cp "$DB" backup.db
'

test_expect_success 'a missing database is refused: exit 66, nothing created' '
    rm "$DB" &&
    rc=$(refused) && cat refused.log && test "$rc" = 66 &&
    grep -q "database '\''$DB'\'' is missing, but '\''lockstep.db-created'\'' shows there was one" refused.log &&
    grep -q "restore it from a backup" refused.log &&
    test ! -e "$DB"
'

test_expect_success 'so is one whose WAL is still there, without a marker' '
    mv "$DB-created" marker && echo x >"$DB-wal" &&
    rc=$(refused) && cat refused.log && test "$rc" = 66 &&
    grep -q "lockstep.db-wal'\'' shows there was one" refused.log &&
    test ! -e "$DB" && rm "$DB-wal" && mv marker "$DB-created"
'

test_expect_success 'an emptied file is refused: exit 65' '
    restore && : >"$DB" &&
    damaged emptied 65 "is damaged: it holds no schema, but its marker"
'

test_expect_success 'an overwritten header is refused: exit 65' '
    restore &&
    head -c 100 /dev/urandom | dd of="$DB" conv=notrunc status=none &&
    damaged header 65 "is damaged: file is not a database"
'

test_expect_success 'a file cut in half is refused: exit 65' '
    restore && size=$(stat -c %s "$DB") &&
    truncate -s $((size / 2)) "$DB" &&
    damaged truncated 65 "is damaged"
'

test_expect_success 'an overwritten page of the jobs table is refused: exit 65' '
    restore && page=$(rootpage jobs) && ps=$(pagesize) && test "$page" -gt 1 &&
    head -c 64 /dev/urandom |
        dd of="$DB" bs=1 seek=$(((page - 1) * ps)) conv=notrunc status=none &&
    damaged page 65 "is damaged"
'

test_expect_success 'a sound database is checked at start; the check can be off' '
    restore && start_scheduler && stop_scheduler &&
    test "$(grep -c "checked in [0-9]* ms" "$TEST_DIR/sched/log")" = 1 &&
    start_scheduler -o db_check_timeout_ms=0 && stop_scheduler &&
    test "$(grep -c "checked in" "$TEST_DIR/sched/log")" = 1
'

test_expect_success 'the backup put back starts, with every job' '
    restore && start_scheduler &&
    for id in $(cat ids); do
        test "$(job_state $id)" = PENDING || return 1
    done &&
    test "$(ls_cli jobs --json | jget "len(j)")" = 5
'

test_done
