#!/bin/bash
# t4102: kill -9 of an agent under a running DDP job (node loss, and an
# agent that stays dead while its ranks would run on): the loss is
# detected within the node timeout, the supervisor's lease kills the
# orphaned ranks before the next attempt starts, the job resumes on the
# other nodes and finishes with the same final parameters.
. "$(dirname "$0")/../lib/harness.sh"

fault_cluster 3
TRAIN=(--steps 40 --ckpt-every 10 --step-time 0.15)

test_reference_run

test_expect_success 'the DDP job runs on two of three nodes' '
    ddp_running 3 loss -- "${TRAIN[@]}" &&
    job_json $(cat job) "j[\"attempts\"][0][\"nodes\"][1][\"node\"]" >victim &&
    cat victim
'

test_expect_success 'kill -9 the agent of node rank 1 after a checkpoint' '
    wait_for 90 "ckpt_complete loss 10" &&
    date +%s%3N >killed_at &&
    kill_agent $(cat victim)
'

test_expect_success 'the node is declared LOST within the timeout' '
    wait_for 10 "test \$(node_state $(cat victim)) = LOST" &&
    lost_ms=$(ls_cli node $(cat victim) --json |
        jget "[e[\"time_ms\"] for e in j[\"events\"] if e[\"kind\"] == \"node_lost\"][-1]") &&
    echo "detected after $((lost_ms - $(cat killed_at))) ms" &&
    test $((lost_ms - $(cat killed_at))) -le $((NODE_TIMEOUT_MS + 1500))
'

test_expect_success 'the orphaned ranks died by their lease, not by anyone else' '
    wait_until 10 job_gone $(cat job) $(cat victim) &&
    cat agent-$(cat victim)/state/jobs/*/status.json 2>/dev/null | grep -q "\"fenced\": *true"
'

test_expect_success 'the job resumes on the other nodes and succeeds' '
    wait_job_state $(cat job) SUCCEEDED 120 &&
    job_json $(cat job) "[n[\"node\"] for n in j[\"attempts\"][-1][\"nodes\"]]" >nodes2 &&
    cat nodes2 && ! grep -q "\"$(cat victim)\"" nodes2 &&
    test "$(job_json $(cat job) "j[\"attempts\"][0][\"failure\"][\"kind\"]")" = node_lost &&
    test "$(job_json $(cat job) "j[\"attempts\"][0][\"failure\"][\"blamed\"]")" = "$(cat victim)"
'

test_expect_success 'same final parameters as the uninterrupted run' '
    test "$(final_sha $(cat job))" = "$(cat ref.sha)"
'

test_expect_success 'the old ranks were gone before the next attempt started' '
    stop_watch &&
    cat watch-$(cat job) && one_attempt_at_a_time $(cat job)
'

test_expect_success 'it counts against the infrastructure budget' '
    test "$(job_json $(cat job) "j[\"infra_restarts\"]")" = 1 &&
    test "$(job_json $(cat job) "j[\"restarts\"]")" = 0
'

test_done
