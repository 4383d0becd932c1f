#!/bin/bash
# t6003: per-rank step times, GC and checkpoint durations summarized to
# SQLite once per window (rank_stats_window_ms): a 2x2 job whose rank 1
# steps 2.5 times slower than the others shows it as persistently slow,
# with its node, in `lockstep show` (text and --json), with the last gc
# step, the last complete checkpoint and every rank's figures; the rows
# survive a scheduler kill -9 (mid-run and after the end) and stay bounded
# (the newest RANKWIN_KEEP = 10 windows, one row per rank per window).
. "$(dirname "$0")/../lib/harness.sh"

fault_cluster 2 -o rank_stats_window_ms=1000

rows() {
    db_query "SELECT COUNT(*) FROM rank_stats WHERE job_id = $(cat slow.id)"
}
windows() {
    db_query "SELECT COUNT(DISTINCT window_ms) FROM rank_stats WHERE job_id = $(cat slow.id)"
}

test_expect_success 'a 2x2 job with a slow rank 1 runs; windows are stored as it runs' '
    wait_nodes_up 2 &&
    id=$(cadence_submit slow 2 2 --gc-every 1s --checkpoint-every 3s -- \
        --no-torch --steps 100000 --seconds 22 --step-time 0.02 --garbage 500 \
        --slow-rank 1 --slow-step-time 0.05) && echo $id >slow.id &&
    wait_job_state $id RUNNING 60 &&
    wait_for 60 "test \$(windows) -ge 4" &&
    db_query "SELECT window_ms, rank, node, step_p50_us, median_us, slow, gc_count, checkpoint_count FROM rank_stats WHERE job_id = $id ORDER BY window_ms, rank"
'

test_expect_success 'scheduler kill -9 mid-run: the stored windows survive, the job ends' '
    before=$(rows) && echo "$before rows before the kill" &&
    kill_scheduler && start_scheduler -o rank_stats_window_ms=1000 &&
    test "$(rows)" -ge "$before" &&
    ls_cli show $(cat slow.id) --json | jget "j[\"rank_stats\"][\"windows\"]" &&
    wait_job_state $(cat slow.id) SUCCEEDED 120
'

test_expect_success 'show --json: rank 1 (and only it) is persistently slow, with its node' '
    ls_cli show $(cat slow.id) --json >show.json &&
    jget "j[\"rank_stats\"]" <show.json &&
    node=$(jget "j[\"attempts\"][0][\"ranks\"][1][\"node\"]" <show.json) &&
    test "$(jget "[(r[\"rank\"], r[\"node\"]) for r in j[\"rank_stats\"][\"slow_ranks\"]]" <show.json)" = "[[1, \"$node\"]]" &&
    test "$(jget "[r[\"rank\"] for r in j[\"rank_stats\"][\"ranks\"]]" <show.json)" = "[0, 1, 2, 3]" &&
    test "$(jget "[r[\"persistently_slow\"] for r in j[\"rank_stats\"][\"ranks\"]]" <show.json)" = "[false, true, false, false]" &&
    test "$(jget "j[\"rank_stats\"][\"ranks\"][1][\"slow_windows\"] >= 3" <show.json)" = True &&
    test "$(jget "j[\"rank_stats\"][\"ranks\"][1][\"step_p50_us\"] > 1.25 * j[\"rank_stats\"][\"median_step_p50_us\"]" <show.json)" = True &&
    test "$(jget "all(r[\"step_p50_us\"] > 0 and r[\"step_p99_us\"] >= r[\"step_p50_us\"] for r in j[\"rank_stats\"][\"ranks\"])" <show.json)" = True &&
    test "$(jget "j[\"rank_stats\"][\"slow_rule\"]" <show.json)" = "{\"ratio\": 1.25, \"windows\": 3, \"of\": 5}"
'

test_expect_success 'show --json: last gc step, last complete checkpoint, gc and checkpoint figures' '
    test "$(jget "j[\"rank_stats\"][\"last_gc_step\"] > 0" <show.json)" = True &&
    test "$(jget "j[\"rank_stats\"][\"last_checkpoint_step\"] == j[\"checkpoints\"][-1][\"step\"]" <show.json)" = True &&
    test "$(jget "all(r[\"gc_count\"] > 0 and r[\"gc_max_ms\"] >= r[\"gc_p50_ms\"] > 0 for r in j[\"rank_stats\"][\"ranks\"])" <show.json)" = True &&
    test "$(jget "all(r[\"checkpoint_count\"] > 0 for r in j[\"rank_stats\"][\"ranks\"])" <show.json)" = True &&
    gc=$(jget "j[\"rank_stats\"][\"last_gc_step\"]" <show.json) &&
    records slow "[r[\"gc_steps\"][-3:] for r in recs]" &&
    test "$(records slow "all($gc in r[\"gc_steps\"] for r in recs)")" = True
'

test_expect_success 'show (text) names the slow rank and its node' '
    ls_cli show $(cat slow.id) >show.txt && cat show.txt &&
    node=$(jget "j[\"attempts\"][0][\"ranks\"][1][\"node\"]" <show.json) &&
    grep -q "persistently slow: rank 1 on $node (slow in" show.txt &&
    test "$(grep -c "persistently slow: rank" show.txt)" = 1 &&
    grep -q "last gc of every rank at step $(jget "j[\"rank_stats\"][\"last_gc_step\"]" <show.json)" show.txt &&
    grep -q "last complete checkpoint at step $(jget "j[\"rank_stats\"][\"last_checkpoint_step\"]" <show.json)" show.txt &&
    grep -Eq "^ +1 +$node +[0-9]+ +[0-9.]+/[0-9.]+ ms +[0-9]+ [0-9]+/[0-9]+ ms +[0-9]+ [0-9]+ ms +[0-9]+ of [0-9]+ persistent" show.txt
'

test_expect_success 'the rows stay bounded: the newest 10 windows, one row per rank each' '
    echo "$(rows) rows in $(windows) windows" &&
    test "$(windows)" = 10 &&
    test "$(rows)" -le 40 &&
    test "$(db_query "SELECT COUNT(*) FROM (SELECT window_ms, rank FROM rank_stats WHERE job_id = $(cat slow.id) GROUP BY window_ms, rank HAVING COUNT(*) > 1)")" = 0
'

test_expect_success 'at most one window per rank_stats_window_ms (the rate bound)' '
    db_query "SELECT DISTINCT window_ms FROM rank_stats WHERE job_id = $(cat slow.id) ORDER BY window_ms" >wins &&
    "$PY" -c "import sys; w=[int(x) for x in open(\"wins\")]; g=[b-a for a,b in zip(w,w[1:])][:-1]; print(g); sys.exit(0 if g and min(g) >= 900 else 1)"
'

test_expect_success 'after the end, a scheduler kill -9 and restart: show is the same' '
    kill_scheduler && start_scheduler -o rank_stats_window_ms=1000 &&
    ls_cli show $(cat slow.id) --json | jget "j[\"rank_stats\"]" >after.json &&
    jget "j[\"rank_stats\"]" <show.json >before.json &&
    diff before.json after.json &&
    ls_cli show $(cat slow.id) | grep -q "persistently slow: rank 1 on"
'

test_done
