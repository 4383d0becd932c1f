#!/bin/bash
# compare.sh - the benchmarks of two revisions, measured in one run
#
#   bench/compare.sh [--rev REV] [--rounds N] [--trials T] [--jobs J]
#
# Builds REV (default HEAD~1; pass the commit your change started from)
# in a temporary worktree, then runs
# bench/run.sh and bench/recovery.sh of each revision against its own
# build, alternating which goes first in each round, so both see the same
# machine at the same time. Prints every figure as the median over the
# rounds, before and after, with their ratio. Asserts nothing: these
# machines are shared and noisy, so read ratios, and rerun when a figure
# surprises you.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
REV=HEAD~1
ROUNDS=3
TRIALS=5
JOBS=10000
while [ $# -gt 0 ]; do
    case $1 in
    --rev) REV=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --trials) TRIALS=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    *) echo "usage: bench/compare.sh [--rev REV] [--rounds N] [--trials T]" \
            "[--jobs J]" >&2
       exit 2 ;;
    esac
done

old=$(mktemp -d /tmp/ls-compare.XXXXXX)
out=$(mktemp -d /tmp/ls-compare-out.XXXXXX)
cleanup() {
    git -C "$root" worktree remove --force "$old/tree" >/dev/null 2>&1 || true
    rm -rf "$old" "$out"
}
trap cleanup EXIT
git -C "$root" worktree add --detach "$old/tree" "$REV" >/dev/null 2>&1
echo "# building $REV ($(git -C "$root" rev-parse --short "$REV")) and HEAD" \
    "($(git -C "$root" rev-parse --short HEAD))"
(cd "$old/tree" && meson setup build >/dev/null && ninja -C build >/dev/null)
(cd "$root" && { [ -f build/build.ninja ] || meson setup build >/dev/null; } &&
    ninja -C build >/dev/null)

run_one() { # NAME TREE ROUND
    local name=$1 tree=$2 round=$3
    (cd "$tree" && bench/run.sh build --jobs "$JOBS") \
        >"$out/$name.run.$round" 2>&1 || true
    (cd "$tree" && bench/recovery.sh --trials "$TRIALS") \
        >"$out/$name.recovery.$round" 2>&1 || true
}

for round in $(seq 1 "$ROUNDS"); do
    echo "# round $round of $ROUNDS"
    if [ $((round % 2)) = 1 ]; then
        run_one before "$old/tree" "$round"
        run_one after "$root" "$round"
    else
        run_one after "$root" "$round"
        run_one before "$old/tree" "$round"
    fi
done

/usr/bin/python3 - "$out" "$ROUNDS" <<'PY'
import re, statistics, sys

out, rounds = sys.argv[1], int(sys.argv[2])
patterns = [
    ("submit serial (submits/s)", "run", r"serial\s+(\d+) submits/s"),
    ("  baseline GET /v1/health (req/s)", "run",
     r"serial\s+\d+ submits/s\s+\(GET /v1/health:\s+(\d+)"),
    ("submit pipelined (submits/s)", "run", r"pipelined\s+(\d+) submits/s"),
    ("  baseline GET /v1/health (req/s)", "run",
     r"pipelined\s+\d+ submits/s\s+\(GET /v1/health:\s+(\d+)"),
    ("dispatch median (ms)", "run", r"median\s+([\d.]+) ms\s+p99"),
    ("dispatch p99 (ms)", "run", r"median\s+[\d.]+ ms\s+p99\s+([\d.]+) ms"),
    ("  baseline fork/exec median (ms)", "run",
     r"direct fork/exec.*median ([\d.]+) ms"),
    ("rank crash -> running (ms)", "recovery",
     r"rank crash\s+n=\d+\s+total\s+(\d+) ms"),
    ("  detection (ms)", "recovery",
     r"rank crash.*detection\s+(\d+)"),
    ("  teardown (ms)", "recovery", r"rank crash.*teardown\s+(\d+)"),
    ("  start (ms)", "recovery", r"rank crash.*start\s+(\d+)"),
    ("node loss -> running (ms)", "recovery",
     r"node loss\s+n=\d+\s+total\s+(\d+) ms"),
    ("  detection (ms)", "recovery", r"node loss.*detection\s+(\d+)"),
    ("  teardown (ms)", "recovery", r"node loss.*teardown\s+(\d+)"),
    ("  start (ms)", "recovery", r"node loss.*start\s+(\d+)"),
]


def values(name, kind, rx):
    v = []
    for r in range(1, rounds + 1):
        try:
            text = open("%s/%s.%s.%d" % (out, name, kind, r)).read()
        except OSError:
            continue
        m = re.search(rx, text)
        if m:
            v.append(float(m.group(1)))
    return v


print("%-36s %12s %12s %8s" % ("figure (median of %d rounds)" % rounds,
                               "before", "after", "ratio"))
for label, kind, rx in patterns:
    b, a = values("before", kind, rx), values("after", kind, rx)
    if not b or not a:
        print("%-36s %12s %12s %8s" % (label, b and "%g" % statistics.median(b)
              or "-", a and "%g" % statistics.median(a) or "-", "-"))
        continue
    mb, ma = statistics.median(b), statistics.median(a)
    print("%-36s %12.6g %12.6g %8.2f" % (label, mb, ma,
                                          ma / mb if mb else float("nan")))
PY
