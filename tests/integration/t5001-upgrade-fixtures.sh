#!/bin/bash
# t5001: every released schema's database (tests/fixtures/db/NNNN.sql)
# is upgraded in place by the current lockstepd: data kept, the scheduler
# serves it, and new work runs on it. A database newer than the binary is
# refused.
. "$(dirname "$0")/../lib/harness.sh"

FIXTURES=$SRC_DIR/tests/fixtures/db

for fixture in "$FIXTURES"/*.sql; do
    v=$(basename "$fixture" .sql)

    test_expect_success "schema $v: the database is upgraded at start" '
        rm -rf sched && mkdir -p sched/state &&
        sqlite3 sched/state/lockstep.db <"$fixture" &&
        test "$(db_query "PRAGMA user_version")" = "$((10#$v))" &&
        start_scheduler &&
        test "$(db_query "PRAGMA user_version")" -ge "$((10#$v))" &&
        test "$(db_query "PRAGMA integrity_check")" = ok &&
        test "$(db_query "PRAGMA foreign_key_check" | wc -l)" = 0
    '

    test_expect_success "schema $v: old jobs, nodes and tokens are kept" '
        ls_cli jobs --all --json >jobs.json &&
        test "$(jget "sorted((x[\"name\"], x[\"state\"]) for x in j)" <jobs.json)" = \
"[[\"bad-job\", \"FAILED\"], [\"ok-job\", \"SUCCEEDED\"], [\"pending-job\", \"PENDING\"]]" &&
        ls_cli show 2 --json | jget "j[\"exit_code\"]" | grep -qx 3 &&
        ls_cli show 1 --json | jget "len(j[\"attempts\"][0][\"ranks\"])" | grep -qx 4 &&
        test "$(node_state n2)" = CORDONED &&
        test "$(db_query "SELECT user FROM tokens")" = alice
    '

    if [ "$((10#$v))" -ge 2 ]; then
        test_expect_success "schema $v: the failure evidence reads back field by field" '
            ls_cli show 2 --json | jget "j[\"attempts\"][0][\"failure\"]" >failure.txt &&
            cat failure.txt &&
            ls_cli show 2 --json >show2.json &&
            test "$(jget "j[\"attempts\"][0][\"failure\"][\"kind\"]" <show2.json)" = rank_exit &&
            test "$(jget "j[\"attempts\"][0][\"failure\"][\"node\"]" <show2.json)" = n1 &&
            test "$(jget "j[\"attempts\"][0][\"failure\"][\"rank\"]" <show2.json)" = 0 &&
            test "$(jget "j[\"attempts\"][0][\"failure\"][\"exit_code\"]" <show2.json)" = 3 &&
            test "$(jget "j[\"attempts\"][0][\"failure\"][\"blamed\"]" <show2.json)" = n1 &&
            jget "j[\"attempts\"][0][\"failure\"][\"stderr_tail\"]" <show2.json | grep -qx oops
        '

        test_expect_success "schema $v: blame from before statuses counts (confirmed)" '
            ls_cli node n1 --json >n1.json &&
            test "$(jget "[(b[\"job\"], b[\"kind\"], b[\"status\"], b[\"step\"]) for b in j[\"blame\"]]" <n1.json)" = \
"[[2, \"rank_exit\", \"confirmed\", -1]]"
        '
    fi

    test_expect_success "schema $v: jobs from before cadences have none" '
        ls_cli show 1 --json >show1.json &&
        for f in gc_every_s gc_every_steps checkpoint_every_s \
                checkpoint_every_steps; do
            test "$(jget "j[\"$f\"]" <show1.json)" = 0 || return 1
        done
    '

    test_expect_success "schema $v: jobs from before holds are not held" '
        ls_cli jobs --all --json >held.json &&
        test "$(jget "sorted(set(x[\"held_by\"] for x in j))" <held.json)" = "[\"\"]"
    '

    test_expect_success "schema $v: new work runs on the upgraded database" '
        start_agent n1 &&
        wait_for 20 "test \$(node_state n1) = UP" &&
        id=$(submit_id -- true) && wait_job_state $id SUCCEEDED 20 &&
        stop_agent n1 && stop_scheduler
    '
done

test_expect_success 'a database newer than the binary is refused' '
    db_file=sched/state/lockstep.db &&
    sqlite3 $db_file "PRAGMA user_version=9999" &&
    $LOCKSTEPD -o listen= -o socket="$TEST_DIR/sched/sock2" \
        -o state_dir="$TEST_DIR/sched/state" \
        -o cluster_secret_file="$CLUSTER_SECRET" >newer.log 2>&1;
    rc=$?; cat newer.log; test $rc != 0 && grep -q 9999 newer.log
'

test_done
