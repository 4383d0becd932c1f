#!/bin/bash
# t4114: the scheduler's node-health policy (issue 9: tests 5, 6, 7, 11),
# with real agents and a real DDP job. The agents run no checks
# (health_checks empty: they send no health, like agents before health
# checks), so the checks' results are injected as an agent with checks
# sends them: node reports with `health`, signed with the node's agent
# credential (tests/helpers/post-health.py), for the real nodes, with
# their real agent ids (their own reports, without health, change
# nothing of it). t4115 drives the same path with the agents' own checks.
#
# A node that starts reporting health waits for its first full pass; a
# soft finding makes it SUSPECT (placed last); a hard one excludes it at
# once and the DDP job there resumes elsewhere from its latest complete
# checkpoint, counted against the infrastructure's budget; uncordon does
# not clear that exclusion, a cordon survives passing checks; a node that
# flaps stays out until an operator acknowledges it; drain --wait lets the
# job finish; only operators cordon, drain, uncordon or acknowledge; the
# findings survive a scheduler restart.
. "$(dirname "$0")/../lib/harness.sh"

HOLDDOWN_MS=1500
HEALTH_CHECKS= fault_cluster 3 -o health_holddown_ms=$HOLDDOWN_MS \
    -o health_flap_count=3 -o health_flap_window_ms=120000
TRAIN=(--steps 40 --ckpt-every 10 --step-time 0.15)
POST=$SRC_DIR/tests/helpers/post-health.py
ME=$(id -un)

# health NODE [post-health.py options] [CHECK:STATUS:CODE[:SCOPE]]...
health() {
    local node=$1
    shift
    "$PY" "$POST" "$LOCKSTEP_URL" "$CLUSTER_SECRET" "$node" \
        "$(db_query "SELECT agent_id FROM nodes WHERE name = '$node'")" "$@"
}

node_is() {
    [ "$(node_state "$1")" = "$2" ]
}

node_field() {
    ls_cli node "$1" --json | jget "$2"
}

test_reference_run

test_expect_success 'nodes without health keep their old behaviour' '
    wait_nodes_up 3 &&
    test "$(node_field n1 "j[\"health\"]")" = None
'

test_expect_success 'a node reporting health waits for its first full pass' '
    health n3 --no-full-pass gpu:PASS:gpu.ok >out && grep -qx 200 out &&
    node_is n3 UNHEALTHY &&
    node_field n3 "j[\"reason\"]" | grep -q "waiting for the first full pass" &&
    test "$(node_field n3 "j[\"health\"][\"waiting\"]")" = True &&
    id=$(submit_id --nodes 3 -- true) && echo $id >job3 &&
    sleep 1 && test "$(job_state $id)" = PENDING
'

test_expect_success 'its full pass makes it schedulable' '
    health n3 --run 2 gpu:PASS:gpu.ok &&
    wait_for 10 "node_is n3 UP" &&
    wait_job_state $(cat job3) SUCCEEDED 30 &&
    health n1 gpu:PASS:gpu.ok && health n2 gpu:PASS:gpu.ok &&
    wait_nodes_up 3
'

test_expect_success 'a WARN makes a node SUSPECT, shown with its finding' '
    health n1 --run 2 gpu:WARN:gpu.thermal:gpu:1 &&
    node_is n1 SUSPECT &&
    ls_cli nodes >nodes.txt && cat nodes.txt &&
    grep "^n1 " nodes.txt | grep -q "SUSPECT.*1 finding" &&
    node_field n1 "j[\"findings\"][0][\"code\"]" | grep -qx gpu.thermal
'

test_expect_success 'a SUSPECT node is placed last' '
    id=$(submit_id --nodes 1 -- sleep 30) && echo $id >job1 &&
    wait_job_state $id RUNNING 30 &&
    job_json $id "j[\"attempts\"][0][\"nodes\"][0][\"node\"]" >where &&
    ! grep -qx n1 where &&
    ls_cli cancel $id >/dev/null
'

test_expect_success 'the next passing run clears a soft finding' '
    health n1 --run 3 gpu:PASS:gpu.ok:gpu:1 &&
    node_is n1 UP &&
    node_field n1 "[f[\"closed_how\"] for f in j[\"findings\"]]" | grep -q pass
'

test_expect_success 'the DDP job runs on two of three nodes' '
    wait_until 30 nodes_idle 3 &&
    ddp_running 3 excl -- "${TRAIN[@]}" &&
    job_json $(cat job) "j[\"attempts\"][0][\"nodes\"][1][\"node\"]" >victim &&
    cat victim
'

test_expect_success 'a failing check excludes its node at once' '
    wait_for 90 "ckpt_complete excl 10" &&
    health $(cat victim) --run 5 gpu:FAIL:gpu.ecc_uncorrectable:gpu:2 &&
    node_is $(cat victim) UNHEALTHY &&
    node_field $(cat victim) "j[\"reason\"]" | grep -q gpu.ecc_uncorrectable &&
    db_events node/$(cat victim) | grep -qx "scheduler node_excluded" &&
    db_events node/$(cat victim) | grep -qx "scheduler health_finding_excluding"
'

test_expect_success 'the job resumes on the other nodes from its checkpoint' '
    wait_job_state $(cat job) SUCCEEDED 120 &&
    test "$(job_json $(cat job) "j[\"attempts\"][0][\"failure\"][\"kind\"]")" = node_excluded &&
    job_json $(cat job) "[n[\"node\"] for n in j[\"attempts\"][-1][\"nodes\"]]" >nodes2 &&
    cat nodes2 && ! grep -q "\"$(cat victim)\"" nodes2 &&
    job_json $(cat job) "j[\"attempts\"][1][\"resume_step\"]" | grep -qx 10 &&
    test "$(final_sha $(cat job))" = "$(cat ref.sha)"
'

test_expect_success 'it counts against the infrastructure budget, no blame' '
    test "$(job_json $(cat job) "j[\"infra_restarts\"]")" = 1 &&
    test "$(job_json $(cat job) "j[\"restarts\"]")" = 0 &&
    test "$(db_query "SELECT count(*) FROM blame WHERE node = '\''$(cat victim)'\''")" = 0
'

test_expect_success 'uncordon does not clear an automatic exclusion' '
    ls_cli uncordon $(cat victim) >out && cat out &&
    node_is $(cat victim) UNHEALTHY
'

test_expect_success 'a cordon is a person'\''s: who and why are kept' '
    ls_cli cordon $(cat victim) --reason "swap gpu 2" >/dev/null &&
    node_is $(cat victim) CORDONED &&
    test "$(node_field $(cat victim) "j[\"cordoned_by\"]")" = "$ME" &&
    test "$(node_field $(cat victim) "j[\"reason\"]")" = "swap gpu 2" &&
    ls_cli nodes | grep "^$(cat victim) " | grep -q "swap gpu 2 (by $ME)"
'

test_expect_success 'passing checks clear the finding, not the cordon' '
    health $(cat victim) --run 6 gpu:PASS:gpu.ok:gpu:2 &&
    sleep $((HOLDDOWN_MS / 1000 + 1)) &&
    health $(cat victim) --run 7 gpu:PASS:gpu.ok:gpu:2 &&
    db_events node/$(cat victim) | grep -qx "scheduler health_finding_cleared" &&
    node_field $(cat victim) "[f[\"closed_how\"] for f in j[\"findings\"] if f[\"code\"] == \"gpu.ecc_uncorrectable\"]" |
        grep -q holddown &&
    node_is $(cat victim) CORDONED &&
    ls_cli uncordon $(cat victim) >/dev/null &&
    node_is $(cat victim) UP
'

test_expect_success 'an operator acknowledges a latched finding, with who and why' '
    health n2 --run 20 nic:FAIL:nic.port_down:nic:ib0 &&
    node_is n2 UNHEALTHY &&
    ls_cli health ack n2 nic.port_down@nic:ib0 --reason "cable reseated" >out &&
    cat out && grep -q "node n2 is UP" out &&
    db_events node/n2 | grep -qx "$ME node_health_ack" &&
    node_field n2 "[f[\"closed_by\"] + \"/\" + f[\"closed_why\"] for f in j[\"findings\"] if f[\"code\"] == \"nic.port_down\"]" |
        grep -q "$ME/cable reseated"
'

test_expect_success 'an ack of no open finding is refused' '
    ! ls_cli health ack n2 nic.port_down --reason again 2>err &&
    grep -q "no open finding" err
'

test_expect_success 'a node that flaps stays out until a person returns it' '
    run=30 &&
    for i in 1 2 3; do
        health n3 --run $run gpu:FAIL:gpu.xid_79 &&
        node_is n3 UNHEALTHY &&
        health n3 --run $((run + 1)) gpu:PASS:gpu.ok &&
        sleep $((HOLDDOWN_MS / 1000 + 1)) &&
        health n3 --run $((run + 2)) gpu:PASS:gpu.ok &&
        run=$((run + 3)) || return 1
        [ $i = 3 ] || node_is n3 UP || return 1
    done &&
    node_is n3 UNHEALTHY &&
    node_field n3 "j[\"reason\"]" | grep -q flapping &&
    sleep $((HOLDDOWN_MS / 1000 + 1)) &&
    health n3 --run 50 gpu:PASS:gpu.ok &&
    node_is n3 UNHEALTHY &&
    ls_cli uncordon n3 >/dev/null && node_is n3 UNHEALTHY &&
    ls_cli health ack n3 health.flapping --reason "gpu replaced" >/dev/null &&
    node_is n3 UP
'

test_expect_success 'only operators cordon, drain, uncordon or acknowledge (403)' '
    tok=$(ls_cli token create --user alice --role user --json | jget "j[\"token\"]") &&
    for verb in cordon uncordon drain health/ack; do
        code=$(curl -s -o body -w "%{http_code}" -X POST \
            -H "Authorization: Bearer $tok" \
            -d "{\"version\":1,\"reason\":\"x\",\"finding\":\"x\"}" \
            "$LOCKSTEP_URL/v1/nodes/n1/$verb") &&
        test "$code" = 403 || return 1
    done &&
    test "$(db_query "SELECT count(*) FROM events WHERE kind = '\''request_refused'\'' AND actor = '\''alice'\'' AND subject = '\''node/n1'\''")" = 4 &&
    ! LOCKSTEP_TOKEN=$tok LOCKSTEP_SERVER=$LOCKSTEP_URL \
        ls_cli drain n1 --reason x 2>err && grep -q operator err &&
    node_is n1 UP
'

test_expect_success 'drain --wait lets the job finish, then the node is cordoned' '
    id=$(submit_id --nodes 1 -- sleep 3) &&
    wait_job_state $id RUNNING 30 &&
    node=$(job_json $id "j[\"attempts\"][0][\"nodes\"][0][\"node\"]") &&
    ls_cli drain $node --reason "kernel update" --wait >out &&
    cat out && grep -q "waiting for its jobs" out &&
    test "$(job_state $id)" = SUCCEEDED &&
    node_is $node CORDONED &&
    test "$(node_field $node "j[\"drain\"]")" = True &&
    db_events node/$node | grep -qx "$ME node_drain" &&
    ls_cli uncordon $node >/dev/null && node_is $node UP
'

test_expect_success 'cordon and uncordon take several nodes (--json: an array)' '
    ls_cli cordon n1 n2 --reason rack --json >out &&
    test "$(jget "[n[\"state\"] for n in j]" <out)" = "[\"CORDONED\", \"CORDONED\"]" &&
    ls_cli uncordon n1 n2 >/dev/null && wait_nodes_up 3
'

test_expect_success 'findings survive a scheduler restart; a re-sent run counts once' '
    health n1 --run 60 disk:WARN:disk.inodes:mount:/data &&
    node_is n1 SUSPECT &&
    stop_scheduler && start_scheduler -o health_holddown_ms=$HOLDDOWN_MS &&
    wait_until 20 node_is n1 SUSPECT &&
    health n1 --run 60 disk:WARN:disk.inodes:mount:/data &&
    test "$(node_field n1 "[f[\"consecutive\"] for f in j[\"findings\"] if f[\"open\"]]")" = "[1]" &&
    health n1 --run 61 disk:WARN:disk.inodes:mount:/data &&
    test "$(node_field n1 "[f[\"consecutive\"] for f in j[\"findings\"] if f[\"open\"]]")" = "[2]" &&
    node_field n1 "j[\"checks\"]" | grep -q disk.inodes &&
    node_field n1 "j[\"health_history\"]" | grep -q disk.inodes
'

test_expect_success 'lockstep node shows checks, findings and history' '
    ls_cli node n1 >node.txt && cat node.txt &&
    grep -q "^checks (latest run):" node.txt &&
    grep -q "^findings:" node.txt &&
    grep -q "disk.inodes@mount:/data" node.txt &&
    grep -q "^health history:" node.txt
'

test_done
