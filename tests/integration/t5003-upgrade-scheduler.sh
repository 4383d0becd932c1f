#!/bin/bash
# t5003: a scheduler upgrade leaves running jobs untouched. A cluster runs
# on one build of lockstepd with a 2 x 2 PyTorch gloo DDP job and a shell
# job; lockstepd is stopped with SIGTERM (what `systemctl restart` and a
# package upgrade do), stays down for longer than the lease, and another
# build of lockstepd is started on the same state, configuration, socket
# and port. Both jobs stay on attempt 1 with the same processes and no
# restart spent, the DDP job ends SUCCEEDED bitwise equal to an
# uninterrupted run, the new build is the one serving (GET /v1/health),
# and the database is at the new build's schema version: upgraded (and
# the upgrade logged) when the old build's was older, untouched (nothing
# logged) when it was the same (docs/operations.md "Upgrading").
#
# The build upgraded from is, by default, lockstepd-alt (tests/meson.build):
# this tree's code, linked again into another executable that reports
# "<version>+alt". That proves that the state, the socket and the agents'
# protocol survive a swap of binaries after an orderly shutdown, that
# nothing depends on the executable being the one that wrote the state,
# and that the agents carry their ranks over the gap. It does not prove
# that an older release's state and agents work with this one (t5001
# covers the schema of every released version; the protocol is not
# covered). For that, set LOCKSTEP_UPGRADE_FROM to the build directory of
# an older tree: its lockstepd, agents and CLI run the cluster before the
# upgrade; its agents stay on through it (the scheduler is upgraded
# first), and this build's CLI is used after. Agents older than witnesses
# (schema 0013) fence a gap longer than their lease: with those the gap
# is 0 unless UPGRADE_GAP_S says otherwise.
. "$(dirname "$0")/../lib/harness.sh"

NEW_LOCKSTEPD=$LOCKSTEPD
NEW_CLI=$CLI
if [ -n "${LOCKSTEP_UPGRADE_FROM:-}" ]; then
    OLD=$(cd "$LOCKSTEP_UPGRADE_FROM" && pwd)
    OLD_LOCKSTEPD=$OLD/scheduler/lockstepd
    AGENTD=$OLD/agent/lockstep-agent
    CLI=$OLD/cli/lockstep
    if "$AGENTD" --check-config -o witness_port=0 2>&1 |
        grep -q "unknown key 'witness_port'"; then
        AGENT_NO_WITNESS_PORT=1
        : "${UPGRADE_GAP_S:=0}"
    fi
else
    OLD_LOCKSTEPD=$BUILD_DIR/tests/lockstepd-alt
fi
# Longer than the production lease (5 s).
UPGRADE_GAP_S=${UPGRADE_GAP_S:-7}
TRAIN=(--steps 120 --ckpt-every 20 --step-time 0.1)
# Neither job ends before the test is done with it (./finish).
HOLD=(--hold-at 60 --hold-file "$TEST_DIR/finish")
# This tree's newest schema version.
NEW_SCHEMA=$(ls "$SRC_DIR"/schema/[0-9]*.sql | sed -n 's|.*/0*\([0-9]*\)-.*|\1|p' |
    sort -n | tail -n 1)

# server_version: the version the serving lockstepd reports.
server_version() {
    "$PY" -c '
import json, sys, urllib.request
print(json.load(urllib.request.urlopen(sys.argv[1] + "/v1/health"))["version"])
' "$LOCKSTEP_URL"
}

test_reference_run

test_expect_success 'a cluster runs on the old build, with two jobs' '
    LOCKSTEPD=$OLD_LOCKSTEPD start_scheduler &&
    "$OLD_LOCKSTEPD" --version | sed "s/^lockstepd //" >old.version &&
    test "$(server_version)" = "$(cat old.version)" &&
    start_agent n1 && start_agent n2 &&
    ddp_running 2 upgrade -- "${TRAIN[@]}" "${HOLD[@]}" &&
    id=$(submit_id --name shell --nodes 2 --ranks-per-node 1 -- \
        sh -c "echo before; while [ ! -e $TEST_DIR/finish ]; do sleep 0.2; done; echo after") &&
    echo $id >job2 &&
    wait_job_state $id RUNNING 30 &&
    wait_for 60 "ckpt_complete upgrade 20" &&
    wait_for 10 "job_nprocs_ge $id 2" &&
    { job_pids $(cat job); job_pids $id; } | sort >pids.before &&
    test $(wc -l <pids.before) -ge 6 &&
    db_query "PRAGMA user_version" >schema.before && cat schema.before
'

test_expect_success 'SIGTERM: the old build stops cleanly, the jobs run on' '
    stop_scheduler &&
    grep -q "lockstepd stopped" sched/log &&
    sleep $UPGRADE_GAP_S &&
    all_alive pids.before &&
    ! grep -q "fenced: lease expired" agent-n1/log agent-n2/log
'

test_expect_success 'the new build starts on the same state and serves' '
    LOCKSTEPD=$NEW_LOCKSTEPD start_scheduler &&
    CLI=$NEW_CLI &&
    "$NEW_LOCKSTEPD" --version | sed "s/^lockstepd //" >new.version &&
    test "$(readlink -f /proc/$SCHED_PID/exe)" = "$(readlink -f "$NEW_LOCKSTEPD")" &&
    test "$(server_version)" = "$(cat new.version)" &&
    : "lockstepd-alt says it is another build (an older tree need not)" &&
    { [ -n "${LOCKSTEP_UPGRADE_FROM:-}" ] || ! cmp -s old.version new.version; } &&
    grep -q "lockstepd $(cat new.version) started" sched/log &&
    wait_nodes_up 2 20
'

test_expect_success 'the database is at the new build'\''s schema version' '
    test "$(db_query "PRAGMA user_version")" = "$NEW_SCHEMA" &&
    if [ "$(cat schema.before)" = "$NEW_SCHEMA" ]; then
        ! grep "upgraded from schema version" sched/log
    else
        grep -q "upgraded from schema version $(cat schema.before) to $NEW_SCHEMA" sched/log
    fi
'

test_expect_success 'the jobs are untouched: same processes, attempt 1, no restart' '
    for j in $(cat job) $(cat job2); do
        test "$(job_json $j "j[\"attempt\"]")" = 1 &&
        test "$(job_json $j "j[\"state\"]")" = RUNNING &&
        test "$(job_json $j "j[\"restarts\"] + j[\"infra_restarts\"]")" = 0 ||
            return 1
    done &&
    all_alive pids.before
'

test_expect_success 'both succeed on attempt 1; the DDP job bitwise equal' '
    touch finish &&
    wait_job_state $(cat job) SUCCEEDED 120 &&
    wait_job_state $(cat job2) SUCCEEDED 60 &&
    test "$(final_sha $(cat job))" = "$(cat ref.sha)" &&
    for j in $(cat job) $(cat job2); do
        test "$(job_json $j "len(j[\"attempts\"])")" = 1 || return 1
    done &&
    ls_cli logs $(cat job2) --rank 1 | grep -qx after &&
    stop_watch && one_attempt_at_a_time $(cat job) &&
    : "no node was ever declared lost" &&
    ! { db_events node/n1; db_events node/n2; } | grep " node_lost$"
'

test_done
