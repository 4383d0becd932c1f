#!/bin/bash
# t1008: control and history from the CLI (issue 12, test 6): `history`
# lists finished jobs with their times, attempts, end reason and ETTR, with
# --since/--user/--state filters and --json; `jobs --limit/--name`; bulk
# `cancel` by ids, --name and --state (with a failure among the ids);
# `logs --json` (one object per line); `nodes` free/total columns.
. "$(dirname "$0")/../lib/harness.sh"

# test_must_fail_with CODE CMD...: CMD exits with CODE; its stderr is in
# ./err.
test_must_fail_with() {
    local want=$1 rc
    shift
    "$@" >/dev/null 2>err
    rc=$?
    [ "$rc" = "$want" ] && return 0
    echo "exit $rc, wanted $want: $*" >&2
    cat err >&2
    return 1
}

start_scheduler
start_agent n1

test_expect_success 'the node comes up' 'wait_nodes_up 1'

test_expect_success 'three jobs end SUCCEEDED, FAILED and CANCELLED' '
    ok=$(submit_id --name ok -- sleep 1) &&
    bad=$(submit_id --name bad --max-restarts 1 -- sh -c "exit 3") &&
    wait_job_state $ok SUCCEEDED 30 &&
    wait_job_state $bad FAILED 30 &&
    gone=$(submit_id --name gone --wait-for-nodes --nodes 5 -- true) &&
    ls_cli cancel $gone >/dev/null &&
    echo "$ok $bad $gone" >ids
'

test_expect_success 'history --json: finished jobs, newest first, with goodput' '
    read ok bad gone <ids &&
    ls_cli history --json >h.json &&
    test "$(jget "[x[\"id\"] for x in j]" <h.json)" = "[$gone, $bad, $ok]" &&
    jget "[x[\"state\"] for x in j]" <h.json >states &&
    test "$(cat states)" = "[\"CANCELLED\", \"FAILED\", \"SUCCEEDED\"]" &&
    test "$(jget "j[1][\"attempt\"]" <h.json)" = 2 &&
    test "$(jget "all(x[\"end_ms\"] >= x[\"submit_ms\"] > 0 for x in j)" <h.json)" = True &&
    test "$(jget "j[2][\"goodput\"][\"ettr\"] > 0" <h.json)" = True &&
    test "$(jget "j[0][\"goodput\"][\"wall_ms\"]" <h.json)" = 0 &&
    jget "j[1][\"reason\"]" <h.json | grep -q "code 3"
'

test_expect_success 'history as a table names times, attempts and ETTR' '
    ls_cli history >h.txt &&
    head -1 h.txt | grep -q "SUBMITTED.*ATTEMPTS.*ETTR.*REASON" &&
    grep -E "^[0-9]+ +ok .*SUCCEEDED.* 1 +[0-9]+%" h.txt &&
    grep -E " bad .*FAILED.* 2 +[0-9]+% .*code 3" h.txt
'

test_expect_success 'history filters: --state, --user, --since, --name, --limit' '
    read ok bad gone <ids &&
    test "$(ls_cli history --state failed --json | jget "[x[\"id\"] for x in j]")" = "[$bad]" &&
    test "$(ls_cli history --user nobody-else --json | jget "len(j)")" = 0 &&
    test "$(ls_cli history --since 1h --json | jget "len(j)")" = 3 &&
    test "$(ls_cli history --since 2099-01-01 --json | jget "len(j)")" = 0 &&
    test "$(ls_cli history --since "$(date -d "-1 hour" "+%Y-%m-%d %H:%M")" --json | jget "len(j)")" = 3 &&
    test "$(ls_cli history --name ok --json | jget "[x[\"id\"] for x in j]")" = "[$ok]" &&
    test "$(ls_cli history --limit 1 --json | jget "[x[\"id\"] for x in j]")" = "[$gone]"
'

test_expect_success 'history refuses what it cannot mean' '
    test_must_fail_with 2 ls_cli history --state RUNNING &&
    grep -q "expected SUCCEEDED, FAILED or CANCELLED" err &&
    test_must_fail_with 2 ls_cli history --since yesterday-ish &&
    grep -q "invalid --since" err &&
    out=$(curl -s --unix-socket "$LOCKSTEP_SERVER" \
        "http://x/v1/history?state=RUNNING") &&
    echo "$out" | grep -q "not a final state"
'

test_expect_success 'jobs --limit and --name' '
    read ok bad gone <ids &&
    test "$(ls_cli jobs --all --limit 2 --json | jget "[x[\"id\"] for x in j]")" = "[$gone, $bad]" &&
    test "$(ls_cli jobs --all --name bad --json | jget "[x[\"id\"] for x in j]")" = "[$bad]" &&
    test_must_fail_with 2 ls_cli jobs --limit 0
'

test_expect_success 'bulk cancel by --name cancels exactly the matching jobs' '
    a=$(submit_id --name p1 --wait-for-nodes --nodes 5 -- true) &&
    b=$(submit_id --name p1 --wait-for-nodes --nodes 5 -- true) &&
    c=$(submit_id --name p2 --wait-for-nodes --nodes 5 -- true) &&
    echo "$a $b $c" >pids &&
    ls_cli cancel --name p1 >out &&
    grep -q "cancelled job $a" out && grep -q "cancelled job $b" out &&
    test "$(wc -l <out)" = 2 &&
    test "$(job_state $c)" = PENDING
'

test_expect_success 'bulk cancel by --state, with --json lines' '
    read a b c <pids &&
    d=$(submit_id --name p3 --wait-for-nodes --nodes 5 -- true) &&
    ls_cli cancel --state pending --json >out &&
    test "$(jget "[j[\"id\"], j[\"state\"]]" <<<"$(sed -n 1p out)")" = "[$d, \"CANCELLED\"]" &&
    test "$(jget "[j[\"id\"], j[\"state\"]]" <<<"$(sed -n 2p out)")" = "[$c, \"CANCELLED\"]" &&
    test "$(wc -l <out)" = 2 &&
    ls_cli cancel --state PENDING 2>err >out &&
    grep -q "no unfinished jobs match" err && test ! -s out
'

test_expect_success 'cancel of several ids: one unknown fails the command, not the others' '
    e=$(submit_id --wait-for-nodes --nodes 5 -- true) &&
    f=$(submit_id --wait-for-nodes --nodes 5 -- true) &&
    test_must_fail_with 1 ls_cli cancel $e 99999 $f &&
    grep -q "job 99999" err &&
    test "$(job_state $e)" = CANCELLED &&
    test "$(job_state $f)" = CANCELLED
'

test_expect_success 'cancel: ids and filters together, or --all-users alone, are usage errors' '
    test_must_fail_with 2 ls_cli cancel 1 --name x &&
    grep -q "not both" err &&
    test_must_fail_with 2 ls_cli cancel --all-users &&
    test_must_fail_with 2 ls_cli cancel --state FAILED &&
    test_must_fail_with 2 ls_cli cancel
'

test_expect_success 'logs --json: one object per line, rank, attempt, stream, text' '
    id=$(submit_id --ranks-per-node 2 -- sh -c \
        "echo \"hello \$RANK\"; printf \"tail \\\"q\\\" \$RANK\"") &&
    wait_job_state $id SUCCEEDED 30 &&
    ls_cli logs $id --json >logs.json &&
    test "$(wc -l <logs.json)" = 4 &&
    "$PY" - logs.json <<-\EOF
	import json, sys
	rows = [json.loads(l) for l in open(sys.argv[1])]
	assert all(set(r) == {"rank", "attempt", "stream", "text"} for r in rows), rows
	got = sorted((r["rank"], r["text"]) for r in rows)
	assert got == [(0, "hello 0"), (0, "tail \"q\" 0"),
	               (1, "hello 1"), (1, "tail \"q\" 1")], got
	assert all(r["attempt"] == 1 and r["stream"] == "out" for r in rows)
	EOF
'

test_expect_success 'nodes shows free/total for CPUs, memory and GPUs' '
    wait_until 10 nodes_idle &&
    ls_cli nodes >nodes.txt &&
    head -1 nodes.txt | grep -q "CPUS(free/total) *MEM(free/total) *GPUS(free/total)" &&
    grep -E "^n1 +UP +8/8 +16G/16G +4/4 " nodes.txt
'

test_done
