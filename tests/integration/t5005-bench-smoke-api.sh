#!/bin/bash
# t5005: the benchmarks of the API, the CLI, TLS, the database and the
# side by side with Slurm (lockstep's half) run to their end at their
# smallest size and print their figures (tests/lib/benchsmoke.sh says
# why). The figures are checked for their form only.
. "$(dirname "$0")/../lib/harness.sh"
. "$SRC_DIR/tests/lib/benchsmoke.sh"

test_expect_success 'bench/run.sh (make bench): throughput and dispatch' '
    bench_smoke run.sh 200 "$BUILD_DIR" &&
    bench_figure run.sh "^  serial +[0-9]+ submits/s" &&
    bench_figure run.sh "^  pipelined +[0-9]+ submits/s" &&
    bench_figure run.sh "^  median +[0-9.]+ ms +p99 +[0-9.]+ ms"
'

test_expect_success 'bench/tls.sh: TLS beside plain HTTP, no handshake failed' '
    bench_smoke tls.sh 120 -n 20 -r 1 &&
    bench_figure tls.sh "^keep-alive +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$" &&
    bench_figure tls.sh "^# lockstep_tls_failures_total\{kind=\"tls\"\} 0$"
'

test_expect_success 'bench/metrics.sh: scrapes timed at each queue' '
    bench_smoke metrics.sh 120 --jobs "0 100" --scrapes 5 &&
    bench_figure metrics.sh "^100 +- +[0-9.]+ +-$"
'

test_expect_success 'bench/dbcheck.sh: the start-up check timed' '
    bench_smoke dbcheck.sh 120 --jobs 100 --runs 1 &&
    bench_figure dbcheck.sh "^jobs=100 " &&
    bench_figure dbcheck.sh "^start with the check: +[0-9]+ ms"
'

test_expect_success 'bench/cli.sh: what a CLI call costs, against the fsync floor' '
    bench_smoke cli.sh 120 -n 5 -r 1 &&
    bench_figure cli.sh "^submit_per_s +\| +- \| +[0-9.]+$" &&
    bench_figure cli.sh "^fdatasync in the state directory: median [0-9.]+ ms"
'

test_expect_success 'bench/conns.py: idle connections held and costed' '
    bench_smoke conns.py 120 "$BUILD_DIR" 100 &&
    bench_figure conns.py "^connections opened: 100 in [0-9.]+ s; held by lockstepd: 100$"
'

test_expect_success 'bench/vs-figures.sh: every figure of the side by side' '
    bench_smoke vs-figures.sh 200 --system lockstep --reps 1 --nodes 4 \
        --submit 20 --jobs 20 --dispatch 3 --array 50 --pending 100 \
        --loss-reps 1 --skip-slow &&
    for f in dispatch_idle_ms dispatch_b2b_ms jobs_20_s submit_1_per_s \
        submit_4_per_s array_s drain_ms ctl_rss_mb state_mb restart_s; do
        bench_figure vs-figures.sh "^FIG $f [0-9.]+$" || return 1
    done &&
    bench_figure vs-figures.sh "^FIG drain_job_ok 1$" &&
    bench_figure vs-figures.sh "^FIG drain_landed 0$"
'

test_expect_success 'bench/replicas.sh: three replicas beside one, a failover' '
    bench_smoke replicas.sh 200 --jobs 50 --trials 1 &&
    bench_figure replicas.sh "submit, one at a time: rate +[0-9]+ +[0-9]+ +[0-9.]+$" &&
    bench_figure replicas.sh "^  failover \(kill -> next acknowledged submit, 1 trials\): p50 [0-9]+ ms"
'

test_done
