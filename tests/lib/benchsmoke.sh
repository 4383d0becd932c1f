# benchsmoke.sh - run a benchmark at its smallest size (source it after
# harness.sh). The benchmarks print figures and assert nothing, and no
# test ran them: two of them stopped working unnoticed (bench/submit.sh
# once TLS became the default, bench/cadence.sh at few steps). t5004 and
# t5005 run each one small, to show that it still runs to its end and
# prints its figures; what the figures say at that size means nothing.
#
#   bench_smoke NAME SECONDS ARGS...   bench/NAME ARGS... into NAME.out
#   bench_figure NAME REGEX            NAME.out has a line matching REGEX
#
# A benchmark sources harness.sh itself: its daemons carry a tag of its
# own, under this test's directory (TMPDIR), and its exit kills them.
# bench_smoke checks that none is left, and kills any that is (by PID).

# PIDs of live processes tagged by a benchmark run under this test (its
# harness's directory, and so its tag, is under this test's).
bench_smoke_pids() {
    env_pids -F "LOCKSTEP_TEST_TAG=lockstep-test:$TEST_DIR/"
}

bench_smoke() {
    local name=$1 secs=$2 rc left
    shift 2
    TMPDIR=$TEST_DIR timeout -k 20 "$secs" "$SRC_DIR/bench/$name" "$@" \
        >"$TEST_DIR/$name.out" 2>&1
    rc=$?
    left=$(bench_smoke_pids)
    if [ -n "$left" ]; then
        kill -9 $left 2>/dev/null
        echo "bench/$name left processes behind: $left"
        return 1
    fi
    if [ "$rc" != 0 ]; then
        echo "bench/$name $* exited $rc; the end of its output:"
        grep -v ' Killed ' "$TEST_DIR/$name.out" | tail -n 20
        return 1
    fi
    if grep -E 'Traceback|timed out|did not (come up|succeed|start)' \
        "$TEST_DIR/$name.out"; then
        echo "bench/$name reported a failure (above)"
        return 1
    fi
}

bench_figure() {
    grep -Eq "$2" "$TEST_DIR/$1.out" || {
        echo "bench/$1 printed no line matching: $2"
        grep -v ' Killed ' "$TEST_DIR/$1.out" | tail -n 20
        return 1
    }
}
