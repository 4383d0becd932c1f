#!/bin/bash
# t4109: a rank that cannot be started - a missing working directory, a
# command that does not exist, a script without its execute bit - is a
# launch failure: the job ends FAILED after ONE attempt, with the cause as
# the first line `submit --wait` prints on stdout and as the reason `show`
# gives first, no restart budget spent and no node blamed. A command that
# ran and exited 127 by itself is no launch failure: it is retried.
. "$(dirname "$0")/../lib/harness.sh"

fault_timeouts
start_scheduler
start_agent n1
start_agent n2

printf '#!/bin/sh\necho never\n' >"$TEST_DIR/noexec.sh"
chmod 644 "$TEST_DIR/noexec.sh"

# launch_fails CAUSE ARGS...: submit --wait ARGS; it fails (exit 1) and
# the first line of its stdout is "job N FAILED: launch failed: CAUSE
# (rank 0 on node n?); ...". The job id goes to ./job.
launch_fails() {
    local cause=$1 rc
    shift
    ls_cli submit --wait "$@" >out 2>err
    rc=$?
    cat out err
    test $rc = 1 || return 1
    head -n 1 out >first
    grep -q "^job [0-9]* FAILED: launch failed: $cause (rank 0 on node n[12]); not restarted" first &&
        sed -n "s/^submitted job \([0-9]*\)$/\1/p" err >job && test -s job
}

# one_attempt ID KIND: the job is FAILED after one attempt whose failure
# is KIND, blaming no node, spending no restart.
one_attempt() {
    ls_cli show "$1" --json >show.json &&
        test "$(jget "j[\"state\"]" <show.json)" = FAILED &&
        test "$(jget "len(j[\"attempts\"])" <show.json)" = 1 &&
        test "$(jget "j[\"attempts\"][0][\"failure\"][\"kind\"]" <show.json)" = "$2" &&
        test "$(jget "\"blamed\" in j[\"attempts\"][0][\"failure\"]" <show.json)" = False &&
        test "$(jget "j[\"restarts\"] + j[\"infra_restarts\"]" <show.json)" = 0
}

# show_reason_first ID CAUSE: `lockstep show` gives the cause first: its
# reason line starts with "launch failed: CAUSE".
show_reason_first() {
    ls_cli show "$1" >show.txt &&
        sed -n 2p show.txt | grep -q "^  reason:      launch failed: $2 (rank 0 on node n[12])"
}

test_expect_success 'two nodes are up' 'wait_nodes_up 2'

test_expect_success 'a missing working directory fails after one attempt' '
    cause="cannot change to working directory '\''/nonexistent-dir'\'': No such file or directory" &&
    launch_fails "$cause" --workdir /nonexistent-dir -- true &&
    one_attempt $(cat job) launch_failed &&
    show_reason_first $(cat job) "$cause"
'

test_expect_success 'a command that does not exist fails after one attempt' '
    cause="cannot execute '\''no-such-command-xyz'\'': No such file or directory (not in PATH=[^)]*)" &&
    launch_fails "$cause" -- no-such-command-xyz --flag &&
    one_attempt $(cat job) launch_failed &&
    show_reason_first $(cat job) "$cause" &&
    ls_cli show $(cat job) --json | jget "j[\"attempts\"][0][\"failure\"][\"exit_code\"]" | grep -qx 127
'

test_expect_success 'a script without its execute bit fails after one attempt' '
    cause="cannot execute '\''$TEST_DIR/noexec.sh'\'': Permission denied" &&
    launch_fails "$cause" -- "$TEST_DIR/noexec.sh" &&
    one_attempt $(cat job) launch_failed &&
    show_reason_first $(cat job) "$cause" &&
    ls_cli show $(cat job) --json | jget "j[\"attempts\"][0][\"failure\"][\"exit_code\"]" | grep -qx 126
'

test_expect_success 'a 2-node job whose command is missing: one attempt too' '
    id=$(submit_id --nodes 2 -- /no/such/train) &&
    wait_job_state $id FAILED 30 &&
    one_attempt $id launch_failed &&
    ls_cli show $id --json | jget "j[\"reason\"]" | grep -q "^launch failed: cannot execute '\''/no/such/train'\''"
'

test_expect_success 'no node is blamed or excluded' '
    test "$(node_state n1)" = UP && test "$(node_state n2)" = UP &&
    test "$(db_query "SELECT count(*) FROM blame")" = 0 &&
    for n in n1 n2; do
        ls_cli node $n --json | jget "[e[\"kind\"] for e in j[\"events\"]]" >kinds &&
        ! grep -q "node_blamed\|node_excluded\|node_unhealthy" kinds || return 1
    done &&
    ls_cli nodes | grep -q "^n1 *UP" && ls_cli nodes | grep -q "^n2 *UP"
'

test_expect_success 'the failure events say launch_failed, the job_failed event too' '
    id=$(cat job) &&
    db_query "SELECT detail FROM events WHERE subject = '\''job/$id'\'' AND kind = '\''job_failure'\''" >ev &&
    grep -q "\"kind\":\"launch_failed\"" ev &&
    db_query "SELECT detail FROM events WHERE subject = '\''job/$id'\'' AND kind = '\''job_failed'\''" >ev &&
    grep -q "\"launch_failed\":true" ev
'

test_expect_success 'stats count launch failures' '
    ls_cli stats --json | jget "j[\"failures\"][\"launch_failed\"]" | grep -qx 4
'

test_expect_success 'a command that ran and exited 127 itself is retried' '
    id=$(submit_id --max-restarts 1 -- sh -c "exit 127") &&
    wait_job_state $id FAILED 30 &&
    ls_cli show $id --json >show.json &&
    test "$(jget "len(j[\"attempts\"])" <show.json)" = 2 &&
    test "$(jget "j[\"attempts\"][0][\"failure\"][\"kind\"]" <show.json)" = rank_exit
'

test_expect_success 'a good job still runs on both nodes' '
    id=$(submit_id --nodes 2 -- true) && wait_job_state $id SUCCEEDED 30
'

test_done
