#!/bin/bash
# t1011: the event history. GET /v1/events and `lockstep events` filter by
# node, job, kind (a pattern) and time, keep to a limit, and --follow
# prints new events as they happen; a plain user sees node events and
# their own jobs', not others'. Every refused operator-only request (403)
# is recorded with who and what. Events older than event_retention_days
# are pruned.
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler
start_agent n1

as_alice() { # CLI over TCP with alice's token
    LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$(cat "$TEST_DIR/alice.tok") \
        ls_cli "$@"
}

test_expect_success 'a job runs; alice is a plain user' '
    wait_nodes_up 1 &&
    ls_cli token create --user alice --role user --json |
        jget "j[\"token\"]" >alice.tok &&
    id=$(submit_id --nodes 1 -- true) && echo $id >job1 &&
    wait_job_state $id SUCCEEDED 30
'

test_expect_success 'events --job: the job events, oldest first' '
    ls_cli events --job $(cat job1) --json >ev.json &&
    jget "[e[\"kind\"] for e in j[\"events\"]]" <ev.json >kinds &&
    grep -q "job_submitted.*job_placed.*job_succeeded" kinds &&
    jget "[e[\"id\"] for e in j[\"events\"]] == sorted(e[\"id\"] for e in j[\"events\"])" <ev.json | grep -qx True &&
    jget "sorted(set(e[\"subject\"] for e in j[\"events\"]))" <ev.json | grep -qx "\[\"job/$(cat job1)\"\]"
'

test_expect_success 'events --node and --kind (a pattern); the table form' '
    ls_cli events --node n1 --json | jget "sorted(set(e[\"subject\"] for e in j[\"events\"]))" |
        grep -qx "\[\"node/n1\"\]" &&
    ls_cli events --kind job_succeeded --json |
        jget "[e[\"kind\"] for e in j[\"events\"]]" | grep -qx "\[\"job_succeeded\"\]" &&
    ls_cli events --kind "job_*" --json |
        jget "all(e[\"kind\"].startswith(\"job_\") for e in j[\"events\"])" | grep -qx True &&
    ls_cli events --job $(cat job1) >table &&
    grep "job/$(cat job1) *job_succeeded" table
'

test_expect_success 'events --since and --limit' '
    ls_cli events --since 10m --json | jget "len(j[\"events\"]) > 3" | grep -qx True &&
    ls_cli events --since 2099-01-01 2>err && grep -q "no events match" err &&
    ls_cli events --limit 1 --json >one.json &&
    test "$(jget "len(j[\"events\"])" <one.json)" = 1 &&
    test "$(jget "j[\"events\"][0][\"id\"]" <one.json)" = \
        "$(db_query "SELECT max(id) FROM events")" &&
    ls_cli events --node n1 --job 1 2>err; test $? = 2 &&
    ls_cli events --since yesterday 2>err; test $? = 2 && grep -q "invalid --since" err
'

test_expect_success 'a non-operator is refused (403), and each attempt is recorded' '
    ! as_alice cordon n1 --reason "try" 2>err && grep -q "operator" err &&
    ! as_alice token create --user mallory --role operator 2>err &&
    ls_cli events --kind request_refused --json >ref.json &&
    test "$(jget "len(j[\"events\"])" <ref.json)" = 2 &&
    jget "[(e[\"actor\"], e[\"subject\"], e[\"detail\"][\"method\"], e[\"detail\"][\"path\"]) for e in j[\"events\"]]" <ref.json >ref &&
    grep -F "[\"alice\", \"node/n1\", \"POST\", \"/v1/nodes/n1/cordon\"]" ref &&
    grep -F "[\"alice\", \"user/alice\", \"POST\", \"/v1/tokens\"]" ref &&
    test "$(node_state n1)" = UP &&
    curl -s $LOCKSTEP_URL/metrics | grep -x "lockstep_http_requests_refused_total 2"
'

test_expect_success 'alice sees node events and her own, not another user'"'"'s job' '
    as_alice events --json >a.json &&
    jget "[e[\"subject\"] for e in j[\"events\"]]" <a.json >subjects &&
    grep -q "node/n1" subjects && grep -q "user/alice" subjects &&
    ! grep -q "job/$(cat job1)" subjects &&
    as_alice events --job $(cat job1) --json | jget "j[\"events\"]" | grep -qx "\[\]"
'

test_expect_success 'events --follow prints new events as they happen' '
    : >follow.out || return 1
    ls_cli events --follow --kind "job_*" --json >follow.out 2>follow.err &
    FOLLOW_PID=$!
    EXTRA_PIDS+=($FOLLOW_PID)
    wait_for 10 "grep -q job_succeeded follow.out" &&
    id=$(submit_id --nodes 1 -- true) && wait_job_state $id SUCCEEDED 30 &&
    wait_for 10 "grep -q \"\\\"job/$id\\\".*job_succeeded\" follow.out" &&
    kill $FOLLOW_PID && { wait $FOLLOW_PID; true; } &&
    test "$(grep -c "\"job/$id\".*job_submitted" follow.out)" = 1
'

test_expect_success 'events older than event_retention_days are pruned' '
    stop_scheduler &&
    old=$(( $(date +%s) * 1000 - 40 * 86400 * 1000 )) &&
    sqlite3 sched/state/lockstep.db \
        "UPDATE events SET time_ms = $old WHERE subject = \"job/$(cat job1)\"" &&
    before=$(db_query "SELECT count(*) FROM events") &&
    start_scheduler -o event_retention_days=30 &&
    wait_for 10 "test \$(db_query \"SELECT count(*) FROM events WHERE subject = \\\"job/$(cat job1)\\\"\") = 0" &&
    test "$(db_query "SELECT count(*) FROM events WHERE subject = \"node/n1\"")" -gt 0 &&
    curl -s $LOCKSTEP_URL/metrics | grep "^lockstep_events_pruned_total [1-9]"
'

test_done
