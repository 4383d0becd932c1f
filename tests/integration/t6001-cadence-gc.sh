#!/bin/bash
# t6001: synchronized GC with real PyTorch DDP (gloo) ranks on two agents:
# every rank collects garbage at the same steps, chosen by the scheduler,
# and no automatic collection runs (each rank's own gc.callbacks record);
# a job without a GC cadence keeps the interpreter's GC; a rank that starts
# 3 s late acts at the pending step. The checkpoint side is t6002.
. "$(dirname "$0")/../lib/harness.sh"

fault_cluster 2

test_expect_success 'a 2x4 job with --gc-every 2s runs to the end' '
    wait_nodes_up 2 &&
    id=$(cadence_submit gc 2 4 --gc-every 2s -- --steps 500 \
        --step-time 0.03 --garbage 200) && echo $id >gc.id &&
    wait_job_state $id SUCCEEDED 240
'

test_expect_success 'every rank collected at least 3 times, at the same steps' '
    records gc "[r[\"gc_steps\"] for r in recs]" >gc.steps && cat gc.steps &&
    test "$(records gc "len(recs)")" = 8 &&
    test "$(records gc "len(set(tuple(r[\"gc_steps\"]) for r in recs))")" = 1 &&
    test "$(records gc "len(recs[0][\"gc_steps\"]) >= 3")" = True
'

test_expect_success 'from each rank own gc.callbacks: only those collections ran' '
    records gc "[[c[0] for c in r[\"collections\"]] for r in recs]" &&
    test "$(records gc "all(all(c[1] and c[0] in r[\"gc_steps\"] for c in r[\"collections\"]) for r in recs)")" = True &&
    test "$(records gc "all(len(r[\"collections\"]) == len(r[\"gc_steps\"]) for r in recs)")" = True &&
    test "$(records gc "all(not r[\"gc_enabled_at_start\"] for r in recs)")" = True
'

test_expect_success 'the scheduler saw every gc the ranks reached acknowledged' '
    job_json $(cat gc.id) "[d for d in j[\"attempts\"][0][\"directives\"] if d[\"kind\"] == \"gc\"]" >gc.dirs &&
    cat gc.dirs &&
    test "$(jget "all(d[\"done_ms\"] > 0 for d in j if d[\"step\"] <= 500)" <gc.dirs)" = True &&
    jget "sorted(d[\"step\"] for d in j if d[\"done_ms\"] > 0)" <gc.dirs >done.steps &&
    records gc "sorted(recs[0][\"gc_steps\"])" >rank.steps &&
    "$PY" -c "import json,sys; d=json.load(open(\"done.steps\")); r=json.load(open(\"rank.steps\")); sys.exit(0 if set(d) <= set(r) and r[-len(d):] == d else 1)" &&
    ls_cli show $(cat gc.id) | grep -q "cadence:     gc every 2s"
'

test_expect_success 'without a GC cadence the interpreter GC is left alone' '
    id=$(cadence_submit nogc 1 2 -- --steps 40 --step-time 0.01) &&
    wait_job_state $id SUCCEEDED 120 &&
    test "$(records nogc "all(r[\"gc_enabled_at_start\"] for r in recs)")" = True &&
    test "$(records nogc "sum(len(r[\"gc_steps\"]) for r in recs)")" = 0
'

test_expect_success 'a rank that starts 3 s late acts at the steps already pending' '
    id=$(cadence_submit late 1 2 --gc-every 1s -- --no-torch --steps 300 \
        --step-time 0.02 --late-start 3) && echo $id >late.id &&
    wait_job_state $id SUCCEEDED 180 &&
    records late "[r[\"gc_steps\"] for r in recs]" &&
    test "$(records late "len(set(tuple(r[\"gc_steps\"]) for r in recs))")" = 1 &&
    test "$(records late "len(recs[0][\"gc_steps\"]) >= 2")" = True &&
    first=$(records late "recs[0][\"gc_steps\"][0]") &&
    issued=$(job_json $id "min(d[\"issued_ms\"] for d in j[\"attempts\"][0][\"directives\"])") &&
    started=$(ls_cli logs $id --rank 1 | sed -n "s/^started //p") &&
    echo "first gc at step $first posted at $issued; rank 1 started at $started" &&
    test "$started" -gt "$issued"
'

test_done
