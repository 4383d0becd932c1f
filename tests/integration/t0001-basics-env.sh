#!/bin/bash
# t0001: a 2-node x 2-rank job gets the torchrun-style rank environment,
# distinct GPUs per rank on a node, ends SUCCEEDED, and every rank's output
# is readable through the API with `lockstep logs`.
. "$(dirname "$0")/../lib/harness.sh"

start_scheduler
start_agent n1
start_agent n2

test_expect_success 'two agents register and are UP' '
    wait_nodes_up 2 &&
    ls_cli nodes --json | jget "sorted(n[\"name\"] for n in j)" |
        grep -qF "[\"n1\", \"n2\"]"
'

test_expect_success 'a 2x2 job runs and ends SUCCEEDED' '
    mkdir -p work &&
    id=$(submit_id --name envjob --nodes 2 --ranks-per-node 2 \
        --gpus-per-node 2 --env USER_VAR=hello --workdir "$TEST_DIR/work" \
        -- "$SRC_DIR/tests/helpers/print-env.sh") &&
    echo "$id" >job1 &&
    wait_job_state "$id" SUCCEEDED 30
'

# Fetch every rank's stdout through the API into rank-<r>.env.
test_expect_success 'logs returns each rank output through the API' '
    id=$(cat job1) &&
    for r in 0 1 2 3; do
        ls_cli logs "$id" --rank $r >rank-$r.env || return 1
        grep -qx "RANK=$r" rank-$r.env || return 1
    done &&
    ls_cli logs "$id" --rank 1 --stream err | grep -qx "done rank 1"
'

test_expect_success 'RANK, WORLD_SIZE, LOCAL_RANK, NODE_RANK are right' '
    for r in 0 1 2 3; do
        f=rank-$r.env
        grep -qx "WORLD_SIZE=4" $f &&
        grep -qx "LOCAL_WORLD_SIZE=2" $f &&
        grep -qx "LOCAL_RANK=$((r % 2))" $f &&
        grep -qx "NODE_RANK=$((r / 2))" $f &&
        grep -qx "GROUP_RANK=$((r / 2))" $f || { cat $f; return 1; }
    done
'

test_expect_success 'every rank agrees on MASTER_ADDR and MASTER_PORT' '
    test "$(grep -h ^MASTER_ADDR= rank-*.env | sort -u)" = \
        "MASTER_ADDR=127.0.0.1" &&
    test "$(grep -h ^MASTER_PORT= rank-*.env | sort -u | wc -l)" = 1 &&
    port=$(grep -h ^MASTER_PORT= rank-0.env | cut -d= -f2) &&
    test "$port" -gt 0 && test "$port" -lt 65536
'

test_expect_success 'ranks on one node get distinct GPU ids' '
    for node in 0 1; do
        a=$(grep -h ^CUDA_VISIBLE_DEVICES= rank-$((node * 2)).env) &&
        b=$(grep -h ^CUDA_VISIBLE_DEVICES= rank-$((node * 2 + 1)).env) &&
        test "$a" != "$b" &&
        test "$a" != "CUDA_VISIBLE_DEVICES=" &&
        test "$b" != "CUDA_VISIBLE_DEVICES=" || return 1
    done
'

test_expect_success 'ranks on one node sit on that node, job env and workdir' '
    id=$(cat job1) &&
    test "$(grep -h ^LOCKSTEP_NODE= rank-0.env rank-1.env | sort -u | wc -l)" = 1 &&
    test "$(grep -h ^LOCKSTEP_NODE= rank-2.env rank-3.env | sort -u | wc -l)" = 1 &&
    ! test "$(grep -h ^LOCKSTEP_NODE= rank-0.env)" = \
        "$(grep -h ^LOCKSTEP_NODE= rank-2.env)" &&
    grep -qx "LOCKSTEP_JOB_ID=$id" rank-3.env &&
    grep -qx "LOCKSTEP_ATTEMPT=1" rank-3.env &&
    grep -qx "LOCKSTEP_RESUME_FROM=" rank-3.env &&
    grep -qx "USER_VAR=hello" rank-2.env &&
    grep -qx "PWD=$TEST_DIR/work" rank-2.env
'

test_expect_success 'show --json has state, attempts and the submitting user' '
    ls_cli show "$(cat job1)" --json >show.json &&
    test "$(jget "j[\"state\"]" <show.json)" = SUCCEEDED &&
    test "$(jget "len(j[\"attempts\"])" <show.json)" = 1 &&
    test "$(jget "j[\"user\"]" <show.json)" = "$(id -un)" &&
    test "$(jget "len(j[\"attempts\"][0][\"ranks\"])" <show.json)" = 4 &&
    test "$(jget "sorted(set(r[\"exit_code\"] for r in j[\"attempts\"][0][\"ranks\"]))" <show.json)" = "[0]"
'

test_expect_success 'jobs --all lists it; jobs hides finished jobs' '
    id=$(cat job1) &&
    ls_cli jobs --all --json | jget "[x[\"state\"] for x in j if x[\"id\"] == $id]" |
        grep -qF "[\"SUCCEEDED\"]" &&
    test "$(ls_cli jobs --json | jget "len([x for x in j if x[\"id\"] == $id])")" = 0
'

test_expect_success 'nothing of the job is left running' '
    wait_until 5 job_gone "$(cat job1)"
'

test_expect_success 'scheduler and agents shut down cleanly on SIGTERM' '
    stop_agent n1 && stop_agent n2 && stop_scheduler
'

test_done
