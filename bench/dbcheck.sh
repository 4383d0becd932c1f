#!/bin/bash
# dbcheck.sh - what the start-up check of the database (PRAGMA quick_check,
# db_check_timeout_ms) costs on a big database. Prints figures; asserts
# nothing.
#
#   bench/dbcheck.sh [--jobs N] [--runs R] [--warm]
#
# Runs one real 2-rank job on one agent, stops the daemons, then copies
# that finished job, with its attempt, placements, ranks and events, until
# the database holds N jobs (default 100000). Then starts lockstepd on it
# R times (default 3) with the check off (db_check_timeout_ms=0) and R
# times with it on, and prints the database's size, the time quick_check
# took (lockstepd logs it) and the time from exec to the port file,
# median of R, with the check and without. Each start begins with a cold
# page cache (as after a reboot; needs root), unless --warm (as after a
# restart of the daemon alone).
set -u
NJOBS=100000 RUNS=3 WARM=0
while [ $# -gt 0 ]; do
    case $1 in
    --jobs) NJOBS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --warm) WARM=1; shift ;;
    *) sed -n 2,17p "$0" >&2; exit 2 ;;
    esac
done

# The harness lives with the tests; $0 must sit two levels below the root.
. "$(dirname "$0")/../tests/lib/harness.sh"
DB=$TEST_DIR/sched/state/lockstep.db

start_scheduler
start_agent n1
wait_nodes_up 1 || { echo "no node came up" >&2; exit 1; }
id=$(submit_id --ranks-per-node 2 -- sh -c 'echo hello from $RANK') &&
    wait_job_state "$id" SUCCEEDED 60 || exit 1
stop_agent n1
stop_scheduler

echo "copying job $id until the database holds $NJOBS jobs ..."
"$PY" - "$DB" "$id" "$NJOBS" <<'PYEOF'
import sqlite3, sys
db, src, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
c = sqlite3.connect(db)
c.execute("PRAGMA journal_mode=WAL")
def cols(t):
    return [r[1] for r in c.execute("PRAGMA table_info(%s)" % t)]
have = c.execute("SELECT max(id) FROM jobs").fetchone()[0]
jcols = [x for x in cols("jobs") if x != "id"]
c.execute("CREATE TEMP TABLE k(k INTEGER PRIMARY KEY)")
c.execute("WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s "
          "WHERE x < ?) INSERT INTO k SELECT x FROM s", (n - have,))
c.execute("INSERT INTO jobs (id, %s) SELECT ? + k, %s FROM jobs, k "
          "WHERE id = ?" % (",".join(jcols), ",".join(jcols)), (have, src))
for t in ("attempts", "placements", "ranks"):
    tc = [x for x in cols(t) if x != "job_id"]
    c.execute("INSERT INTO %s (job_id, %s) SELECT ? + k, %s FROM %s, k "
              "WHERE job_id = ?" % (t, ",".join(tc), ",".join(tc), t),
              (have, src))
ec = [x for x in cols("events") if x not in ("id", "subject")]
c.execute("INSERT INTO events (subject, %s) SELECT 'job/' || (? + k), %s "
          "FROM events, k WHERE subject = ?" % (",".join(ec), ",".join(ec)),
          (have, "job/%d" % src))
c.commit()
c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
print("jobs=%d events=%d" % (c.execute("SELECT count(*) FROM jobs").fetchone()[0],
      c.execute("SELECT count(*) FROM events").fetchone()[0]))
PYEOF
[ $? = 0 ] || exit 1
echo "database: $(du -m "$DB" | cut -f1) MiB"

# start_ms CHECK_MS: ms from exec to the port file; the scheduler is
# stopped again. Drops the page cache first unless --warm.
start_ms() {
    local t0 t1
    sync
    [ "$WARM" = 1 ] || echo 1 >/proc/sys/vm/drop_caches
    : >"$TEST_DIR/sched/log"
    t0=$(date +%s%N)
    start_scheduler -o db_check_timeout_ms="$1" || return 1
    t1=$(date +%s%N)
    stop_scheduler
    echo $(((t1 - t0) / 1000000))
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

for check in 0 60000; do
    : >"$TEST_DIR/times"
    : >"$TEST_DIR/checks"
    for _ in $(seq 1 "$RUNS"); do
        start_ms "$check" >>"$TEST_DIR/times" || exit 1
        sed -n 's/.*checked in \([0-9]*\) ms.*/\1/p' "$TEST_DIR/sched/log" \
            >>"$TEST_DIR/checks"
    done
    if [ "$check" = 0 ]; then
        base=$(median <"$TEST_DIR/times")
        echo "start without the check: ${base} ms (median of $RUNS)"
    else
        with=$(median <"$TEST_DIR/times")
        echo "start with the check:    ${with} ms (median of $RUNS);" \
            "quick_check $(median <"$TEST_DIR/checks") ms;" \
            "the check adds $((with - base)) ms"
    fi
done
