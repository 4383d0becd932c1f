#!/bin/bash
# t6004: a straggler found from timed sections. A 2x2 PyTorch DDP (gloo)
# job times its compute with lockstep.timed("compute"); rank 3 sleeps 25%
# longer inside the section each step. Every rank's step time is the same
# (the others wait for it in the gradient all-reduce), so the step
# statistics name no one; the section times do: within a few windows
# (rank_stats_window_ms=1000, 3 of 5 windows above 1.15 x the median)
# `show --json` names rank 3's node as the straggler with its figures, the
# other node is not named, one "straggler" node event is written, and the
# text view names it; a scheduler restarted mid-run finds it again without
# a second event. A job without a slow rank names no straggler.
. "$(dirname "$0")/../lib/harness.sh"

fault_cluster 2 -o rank_stats_window_ms=1000

TRAIN=$SRC_DIR/tests/helpers/straggler_train.py

straggler_submit() {
    local name=$1
    shift
    mkdir -p "$TEST_DIR/$name"
    submit_id --name "$name" --nodes 2 --ranks-per-node 2 \
        --workdir "$TEST_DIR/$name" --env PYTHONPATH="$SRC_DIR/sdk/python" \
        -- "$PY" "$TRAIN" "$@"
}

stragglers() {
    job_json "$1" "[(s[\"node\"], s[\"rank\"], s[\"section\"]) for s in ((j[\"rank_stats\"] or {}).get(\"stragglers\") or [])]"
}

test_expect_success 'a 2x2 DDP job with rank 3 25% slower inside "compute" runs' '
    wait_nodes_up 2 &&
    id=$(straggler_submit slow --steps 800 --compute 0.04 --slow-rank 3 \
        --slow-factor 1.25) && echo $id >slow.id &&
    wait_job_state $id RUNNING 60 &&
    date +%s%N >running.ns
'

test_expect_success 'within a few windows, show --json names rank 3 node, only it' '
    id=$(cat slow.id) &&
    wait_for 60 "test \"\$(stragglers $id)\" != \"[]\"" &&
    echo "found after $(( ($(date +%s%N) - $(cat running.ns)) / 1000000 )) ms" &&
    ls_cli show $id --json >show.json &&
    jget "j[\"rank_stats\"][\"stragglers\"]" <show.json &&
    node=$(jget "j[\"attempts\"][0][\"ranks\"][3][\"node\"]" <show.json) &&
    other=$(jget "j[\"attempts\"][0][\"ranks\"][0][\"node\"]" <show.json) &&
    test "$node" != "$other" &&
    test "$(jget "[(s[\"node\"], s[\"rank\"], s[\"section\"]) for s in j[\"rank_stats\"][\"stragglers\"]]" <show.json)" = "[[\"$node\", 3, \"compute\"]]" &&
    test "$(jget "j[\"rank_stats\"][\"stragglers\"][0][\"ratio\"] > 1.15" <show.json)" = True &&
    test "$(jget "j[\"rank_stats\"][\"stragglers\"][0][\"slow_windows\"] >= 3" <show.json)" = True &&
    test "$(jget "j[\"rank_stats\"][\"stragglers\"][0][\"p50_us\"] > 1.15 * j[\"rank_stats\"][\"stragglers\"][0][\"median_us\"] > 0" <show.json)" = True &&
    test "$(jget "j[\"rank_stats\"][\"straggler_rule\"]" <show.json)" = "{\"ratio\": 1.15, \"windows\": 3, \"of\": 5}"
'

test_expect_success 'the section figures: every rank has compute, only rank 3 straggles' '
    jget "[(s[\"rank\"], s[\"section\"], s[\"p50_us\"], s[\"median_us\"], s[\"ratio\"]) for s in j[\"rank_stats\"][\"sections\"]]" <show.json &&
    test "$(jget "sorted(s[\"rank\"] for s in j[\"rank_stats\"][\"sections\"] if s[\"section\"] == \"compute\")" <show.json)" = "[0, 1, 2, 3]" &&
    test "$(jget "[s[\"rank\"] for s in j[\"rank_stats\"][\"sections\"] if s[\"straggling\"]]" <show.json)" = "[3]" &&
    test "$(jget "all(s[\"n\"] > 0 and s[\"p99_us\"] >= s[\"p50_us\"] >= 40000 for s in j[\"rank_stats\"][\"sections\"])" <show.json)" = True
'

test_expect_success 'step times alone name no one: all within 10%, none persistently slow' '
    jget "[r[\"step_p50_us\"] for r in j[\"rank_stats\"][\"ranks\"]]" <show.json &&
    test "$(jget "max(r[\"step_p50_us\"] for r in j[\"rank_stats\"][\"ranks\"]) <= 1.1 * min(r[\"step_p50_us\"] for r in j[\"rank_stats\"][\"ranks\"])" <show.json)" = True &&
    test "$(jget "j[\"rank_stats\"][\"slow_ranks\"]" <show.json)" = "[]"
'

test_expect_success 'one "straggler" node event, on that node, with the evidence' '
    node=$(jget "j[\"attempts\"][0][\"ranks\"][3][\"node\"]" <show.json) &&
    db_query "SELECT subject, detail FROM events WHERE kind = '"'"'straggler'"'"'" >ev &&
    cat ev &&
    test "$(wc -l <ev)" = 1 &&
    grep -q "^node/$node|" ev &&
    cut -d"|" -f2- ev >ev.json &&
    test "$(jget "[j[\"job\"], j[\"attempt\"], j[\"rank\"], j[\"section\"], j[\"windows\"] >= 3, j[\"ratio\"] > 1.15]" <ev.json)" = "[$(cat slow.id), 1, 3, \"compute\", true, true]"
'

test_expect_success 'its node is SUSPECT with the figures; the other node is not' '
    node=$(jget "j[\"attempts\"][0][\"ranks\"][3][\"node\"]" <show.json) &&
    other=$(jget "j[\"attempts\"][0][\"ranks\"][0][\"node\"]" <show.json) &&
    test "$(node_state $node)" = SUSPECT &&
    ls_cli node $node --json >sus.json &&
    jget "[f[\"code\"] + \"@\" + f[\"scope\"] for f in j[\"findings\"] if f[\"open\"]]" <sus.json >codes &&
    grep -q "straggler@job:$(cat slow.id)" codes &&
    jget "j[\"reason\"]" <sus.json | grep -q "compute" &&
    test "$(node_state $other)" = UP
'

test_expect_success 'show (text) names the straggling rank and node' '
    node=$(jget "j[\"attempts\"][0][\"ranks\"][3][\"node\"]" <show.json) &&
    ls_cli show $(cat slow.id) >show.txt && cat show.txt &&
    grep -Eq "straggler: node $node, rank 3, section compute: [0-9.]+ ms per step, 1\.[0-9]+x the median [0-9.]+ ms \(slow in [3-5] of the last [3-5] windows\)" show.txt &&
    test "$(grep -c "straggler: node" show.txt)" = 1
'

test_expect_success 'scheduler kill -9 and restart mid-run: found again, not raised again' '
    id=$(cat slow.id) &&
    job_state_is $id RUNNING &&
    kill_scheduler && start_scheduler -o rank_stats_window_ms=1000 &&
    before=$(db_query "SELECT MAX(window_ms) FROM rank_sections WHERE job_id = $id") &&
    wait_for 30 "test \$(db_query \"SELECT COUNT(DISTINCT window_ms) FROM rank_sections WHERE job_id = $id AND window_ms > $before\") -ge 4" &&
    job_state_is $id RUNNING &&
    test "$(stragglers $id)" = "$(jget "[(s[\"node\"], s[\"rank\"], s[\"section\"]) for s in j[\"rank_stats\"][\"stragglers\"]]" <show.json)" &&
    grep -q "is a straggler" "$TEST_DIR/sched/log" &&
    wait_job_state $id SUCCEEDED 120 &&
    test "$(db_query "SELECT COUNT(*) FROM events WHERE kind = '"'"'straggler'"'"'")" = 1
'

test_expect_success 'a job without a slow rank: no straggler' '
    id=$(straggler_submit even --steps 200 --compute 0.04) &&
    wait_job_state $id SUCCEEDED 120 &&
    ls_cli show $id --json >even.json &&
    test "$(jget "len(j[\"rank_stats\"][\"sections\"]) == 4" <even.json)" = True &&
    test "$(jget "j[\"rank_stats\"][\"stragglers\"]" <even.json)" = "[]" &&
    ls_cli show $id | grep -q "stragglers: none" &&
    test "$(db_query "SELECT COUNT(*) FROM events WHERE kind = '"'"'straggler'"'"'")" = 1
'

test_done
