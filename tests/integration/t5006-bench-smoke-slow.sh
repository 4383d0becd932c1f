#!/bin/bash
# t5006: the slower benchmarks (real PyTorch ranks, real agents' health
# checks, a connection flood) run to their end at their smallest size and
# print their figures (tests/lib/benchsmoke.sh says why). About five
# minutes on 2 cores, so only with LOCKSTEP_BENCH_SMOKE_SLOW=1:
#   LOCKSTEP_BENCH_SMOKE_SLOW=1 meson test -C build t5006-bench-smoke-slow
# t5004 and t5005 run the others in every test run.
if [ "${LOCKSTEP_BENCH_SMOKE_SLOW:-}" != 1 ]; then
    echo "ok 1 # SKIP about five minutes: set LOCKSTEP_BENCH_SMOKE_SLOW=1"
    echo "1..1"
    exit 0
fi
. "$(dirname "$0")/../lib/harness.sh"
. "$SRC_DIR/tests/lib/benchsmoke.sh"

test_expect_success 'bench/cadence.sh: pauses, delivery latency, real GC' '
    bench_smoke cadence.sh 400 --rounds 1 --steps 60 &&
    bench_figure cadence.sh "^\(b\) lockstep synchronized pauses [0-9.]+ steps/s$" &&
    bench_figure cadence.sh "^decision -> visible in the rank.s control file: median [0-9]+ ms" &&
    bench_figure cadence.sh "^ratio [0-9.]+$"
'

test_expect_success 'bench/straggler.sh: a slow rank named' '
    bench_smoke straggler.sh 300 --rounds 1 &&
    bench_figure straggler.sh "^1000 +median +[0-9]+ +[0-9.]+ +\(the rule"
'

test_expect_success 'bench/health.sh: what the checks cost and how fast they act' '
    bench_smoke health.sh 300 --trials 1 &&
    bench_figure health.sh "^checks alone: +[0-9.]+ CPU s/min" &&
    bench_figure health.sh "^nvidia-smi ECC error \(1 trials\): excluded after [0-9]+ ms" &&
    bench_figure health.sh "^kernel log XID 79: excluded after [0-9]+ ms"
'

test_expect_success 'bench/attack.sh: a flood of trickling connections' '
    bench_smoke attack.sh 300 --conns 200 --secs 3 --sim-nodes 10 &&
    bench_figure attack.sh "^operator nodes over TCP during: ([0-9]+)/\1 answered" &&
    bench_figure attack.sh "^node_lost events: 0$" &&
    bench_figure attack.sh "^nodes UP now: ([0-9]+) of \1$"
'

test_done
