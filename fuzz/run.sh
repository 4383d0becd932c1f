#!/bin/bash
# run.sh - run every fuzz harness (or those named) for a bounded time
#
#   fuzz/run.sh [-t SECONDS] [-o DIR] [-s SEEDS] [-n] BUILD_DIR [HARNESS...]
#
# BUILD_DIR is a build configured with -Dfuzz=true (make fuzz makes one:
# build-fuzz). Each harness first runs every input it has: the regression
# input of every finding fixed (fuzz/corpus/<name>, committed), its seeds
# (fuzz/seeds.py takes them from the tests and the docs, into DIR/seeds)
# and what earlier runs kept (DIR/corpus/<name>); then it mutates for
# SECONDS (default $FUZZ_SECONDS, else 60), keeping what it finds new in
# DIR/corpus/<name> (DIR: -o, default BUILD_DIR/fuzz-run). A crash, leak,
# timeout (10 s an input), memory blow-up or sanitizer report fails the
# harness; the input that caused it is kept as
# DIR/findings/<name>-<kind>-<sha1>. -s SEEDS: seeds fuzz/seeds.py wrote
# already (tools/fuzz-campaign.sh writes them once); -n: do not build.
#
# One line per harness, "ok N fuzz_NAME: ..." or "not ok N fuzz_NAME: ...",
# with its executions, executions per second and coverage (libFuzzer's cov:
# edges reached, ft: features), then the summary CI reads:
# "N passed, N failed".
set -u
secs=${FUZZ_SECONDS:-60}
out= seeds= build_it=1
while getopts "t:o:s:nh" c; do
    case $c in
    t) secs=$OPTARG ;;
    o) out=$OPTARG ;;
    s) seeds=$OPTARG ;;
    n) build_it= ;;
    *) sed -n '2,23s/^# \{0,1\}//p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '2,23s/^# \{0,1\}//p' "$0"; exit 2; }
build=$1
shift
src=$(cd "$(dirname "$0")/.." && pwd)
out=${out:-$build/fuzz-run}

if [ $# -gt 0 ]; then
    names="$*"
else
    names=$(cd "$src/fuzz" && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//')
fi
# Build what is missing or stale (only the harnesses and what they link).
targets=
for n in $names; do targets="$targets fuzz/fuzz_$n"; done
mkdir -p "$out/corpus" "$out/findings" "$out/logs"
# shellcheck disable=SC2086
[ -z "$build_it" ] || ninja -C "$build" $targets >"$out/build.log" 2>&1 || {
    tail -n 30 "$out/build.log"
    echo "fuzz: cannot build the harnesses (all of it in $out/build.log)"
    echo "0 passed, 1 failed"
    exit 1
}
if [ -z "$seeds" ]; then
    seeds=$out/seeds
    python3 "$src/fuzz/seeds.py" "$seeds" || {
        echo "fuzz: cannot write the seeds"
        echo "0 passed, 1 failed"
        exit 1
    }
fi

# What libFuzzer needs beyond its defaults, per harness: the longest
# input worth trying, the dictionary of the JSON parsers.
opts_of() {
    local json="-dict=$seeds/json.dict"
    case $1 in
    http_request) echo "-max_len=65536" ;;
    kmsg|rank_output) echo "-max_len=8192" ;;
    gpu_csv|config|attempt_files) echo "-max_len=8192 $json" ;;
    cli_reply|progress|health_output) echo "-max_len=16384 $json" ;;
    witness|fence) echo "-max_len=600" ;;
    *) echo "-max_len=16384 $json" ;;
    esac
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

i=0 passed=0 failed=0 total=0
for n in $names; do
    i=$((i + 1))
    exe=$build/fuzz/fuzz_$n
    corpus=$out/corpus/$n
    log=$out/logs/$n.log
    mkdir -p "$corpus"
    rm -f "$out/findings/$n"-*
    dirs=("$corpus")
    for d in "$seeds/$n" "$src/fuzz/corpus/$n"; do
        [ -d "$d" ] && dirs+=("$d")
    done
    # shellcheck disable=SC2046
    "$exe" $(opts_of "$n") -max_total_time="$secs" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$out/findings/$n-" "${dirs[@]}" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    cov=$(grep -a -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE|INITED)' "$log" |
        tail -n 1 | sed -n 's/.*cov: \([0-9]*\) ft: \([0-9]*\).*/\1 \2/p')
    found=$(ls "$out/findings/$n"-* 2>/dev/null | head -n 1)
    what="${execs:-0} execs, ${rate:-0}/s, cov ${cov% *} ft ${cov#* }"
    total=$((total + ${execs:-0}))
    if [ $rc -eq 0 ] && [ -z "$found" ]; then
        passed=$((passed + 1))
        echo "ok $i fuzz_$n: $what"
    else
        failed=$((failed + 1))
        echo "not ok $i fuzz_$n: exit $rc, $what${found:+, input $found}"
        grep -a -E 'ERROR|SUMMARY|fuzz_assert|refuses|runtime error' "$log" |
            head -n 5 | sed 's/^/#   /'
        echo "#   log: $log"
    fi
done
echo "# fuzz: $total executions in all, ${secs}s a harness"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
