#!/bin/bash
# t5004: the benchmarks that drive a scheduler with lockstep-sim run to
# their end at their smallest size and print their figures
# (tests/lib/benchsmoke.sh says why; docs/scale.md what each measures).
# The figures are not checked against anything but their form, except
# what a benchmark counts as a failure itself: a restart that restarted a
# job, a node wrongly found LOST.
. "$(dirname "$0")/../lib/harness.sh"
. "$SRC_DIR/tests/lib/benchsmoke.sh"

test_expect_success 'bench/pings.sh: the pings are answered and costed' '
    bench_smoke pings.sh 120 --nodes 20 --rate 200 --seconds 1 &&
    bench_figure pings.sh "^pings answered: [1-9][0-9]*/s; CPU [0-9]+ ms/s" &&
    bench_figure pings.sh "^at 10,000 busy nodes .*: -?[0-9.]+ of a core"
'

test_expect_success 'bench/reconcile.sh: restarts reconcile every node, no job restarted' '
    bench_smoke reconcile.sh 150 --nodes 8 --jobs 1 --job-nodes 2 \
        --ranks-per-node 2 --trials 1 &&
    bench_figure reconcile.sh "^reconciled_ms p50 +\| +[0-9]+ \| +[0-9]+ \|" &&
    bench_figure reconcile.sh "^cpu_ms p50 +\| +[0-9]+ \| +[0-9]+ \|" &&
    bench_figure reconcile.sh "^jobs restarted or failed after the last restart: 0$"
'

test_expect_success 'bench/submit.sh: both schedulers measured, the disk floor too' '
    bench_smoke submit.sh 200 --pending 100 --nodes 4 --count 20 --reps 1 &&
    bench_figure submit.sh "^api_1_per_s +\| +[0-9]+ \| +[0-9]+ \|" &&
    bench_figure submit.sh "^cli_specs_1000_s +\| +[0-9.]+ \| +[0-9.]+ \|" &&
    bench_figure submit.sh "^fsync floor: [0-9.]+ ms appending"
'

test_expect_success 'bench/scale.sh: idle, dispatch, sweep, gang and queue figures' '
    bench_smoke scale.sh 200 --nodes 20 --base 10 --per-proc 20 --sweep 10 \
        --pending 100 --idle-s 1 --no-faults &&
    bench_figure scale.sh "^dispatch_p50_ms +\| +[0-9.]+ \| +[0-9.]+ \|" &&
    bench_figure scale.sh "^gang_running_ms +\| +[0-9]+ \| +[0-9]+ \|" &&
    bench_figure scale.sh "^sweep_jobs_per_s +\| +[0-9]+ \| +[0-9]+ \|"
'

test_expect_success 'bench/logs.sh: shipped lines counted, no node lost' '
    bench_smoke logs.sh 120 --nodes 4 --log-rate 2 --secs 5 --per-proc 4 &&
    bench_figure logs.sh "^lines_per_s +- +[1-9][0-9]*$" &&
    bench_figure logs.sh "^lost_events +- +0$"
'

test_expect_success 'bench/logread.sh: a whole read timed, with its requests' '
    bench_smoke logread.sh 120 --ranks 4 --lines 5 --sim 4 --reps 1 &&
    bench_figure logread.sh "^this scheduler, this CLI +[0-9]+ +[1-9][0-9]* "
'

test_expect_success 'bench/recovery.sh: a machine lost under load replaced, none wrongly' '
    bench_smoke recovery.sh 150 --trials 1 --loss-only --whole-node --load 10 &&
    bench_figure recovery.sh "^node loss +n=1 +total +[0-9]+ ms +\(detection +[0-9]+, teardown +[0-9]+, start +[0-9]+\)" &&
    bench_figure recovery.sh "^# simulated nodes LOST during the trials \(false positives\): 0$"
'

test_done
