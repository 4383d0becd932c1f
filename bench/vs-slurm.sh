#!/bin/bash
# vs-slurm.sh - lockstep side by side with Slurm 22.05 on this machine:
# the same workload, the same definitions, 16 nodes each on loopback.
# Runs bench/vs-figures.sh for Slurm (bench/slurm/: a private Slurm of
# its own, Debian's packages installed on demand, as root) and then for
# lockstep (the build's daemons: `make` or meson's build/), and prints
#   figure | Slurm | lockstep | ratio
# each figure the median of its repetitions; ratio = how many times
# better lockstep is (Slurm / lockstep for times and memory, lockstep /
# Slurm for rates), > 1: lockstep better. vs-figures.sh's head says what
# each figure is; docs/scale.md "Side by side with Slurm" has a run.
# A development tool: not in the test suite. Asserts nothing.
#
#   bench/vs-slurm.sh [--reps R] [--skip-slow] [--loss-reps R]
#       [--slurmd-timeout S] [--slurm-sched-params P] [--only slurm|lockstep]
#       [--quick] [--keep DIR] [--table DIR]
#       [vs-figures.sh options: --nodes --submit --jobs --dispatch
#        --array --pending]
#
#   --reps R             rounds of each figure (default 3; medians)
#   --skip-slow          leave node loss out (with Slurm's default
#                        SlurmdTimeout of 300 s each round takes ~6 min)
#   --loss-reps R        node-loss rounds (default: --reps)
#   --slurmd-timeout S   Slurm's node-loss timeout (default 300, Slurm's
#                        own default; lockstep runs at its default 10 s)
#   --slurm-sched-params P  Slurm's SchedulerParameters (default: none
#                        set, Slurm's defaults)
#   --only SYSTEM        measure one of them (the other's column is empty)
#   --quick              small counts, to try the tools out (not figures
#                        to quote): --submit 40 --jobs 100 --dispatch 5
#                        --array 100 --pending 500 --reps 1
#   --keep DIR           keep the raw figures (DIR/slurm, DIR/lockstep:
#                        "FIG key value" lines) and the logs in DIR
#   --table DIR          measure nothing: print the table of the raw
#                        figures in DIR/slurm and DIR/lockstep (several
#                        runs' lines may be put together there)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
REPS=3 ONLY='' ARGS=() LOSS='' KEEP='' TABLE=''
while [ $# -gt 0 ]; do
    case $1 in
    --reps) REPS=$2; shift 2 ;;
    --skip-slow) ARGS+=(--skip-slow); shift ;;
    --loss-reps) LOSS=$2; shift 2 ;;
    --slurmd-timeout) export SLURMD_TIMEOUT=$2; shift 2 ;;
    --slurm-sched-params) export SLURM_SCHED_PARAMS=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    --table) TABLE=$2; shift 2 ;;
    --quick) REPS=1
        ARGS+=(--submit 40 --jobs 100 --dispatch 5 --array 100 --pending 500)
        shift ;;
    --nodes | --submit | --jobs | --dispatch | --array | --pending)
        ARGS+=("$1" "$2"); shift 2 ;;
    *) sed -n 2,33p "$0" >&2; exit 2 ;;
    esac
done
ARGS+=(--reps "$REPS" --loss-reps "${LOSS:-$REPS}")

if [ -n "$TABLE" ]; then
    OUT=$TABLE
elif [ -n "$KEEP" ]; then
    OUT=$KEEP
    mkdir -p "$OUT" || exit 1
else
    OUT=$(mktemp -d "${TMPDIR:-/tmp}/vs-slurm.XXXXXX") || exit 1
    trap 'rm -rf "$OUT"' EXIT
fi
[ -n "$TABLE" ] || echo "# $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), reps $REPS;" \
    "SlurmdTimeout ${SLURMD_TIMEOUT:-300} s, lockstep node timeout 10 s"
for sys in slurm lockstep; do
    [ -n "$TABLE" ] && break
    [ -n "$ONLY" ] && [ "$ONLY" != "$sys" ] && { : >"$OUT/$sys"; continue; }
    echo "# measuring $sys ..."
    # the figures on stdout; progress and the daemons' noise in a log
    if ! "$HERE/vs-figures.sh" --system "$sys" "${ARGS[@]}" >"$OUT/$sys" 2>"$OUT/$sys.log"; then
        echo "# $sys: vs-figures.sh failed; its log:"
        tail -n 20 "$OUT/$sys.log" | sed 's/^/#   /'
    fi
    grep '^#' "$OUT/$sys.log"
done

"$PY" - "$OUT/slurm" "$OUT/lockstep" <<'EOF'
import statistics, sys

def load(path):
    figs = {}
    for line in open(path):
        p = line.split()
        if len(p) == 3 and p[0] == "FIG":
            figs.setdefault(p[1], []).append(float(p[2]))
    return figs

s, l = load(sys.argv[1]), load(sys.argv[2])
# figure, higher is better?, what it is
rows = [("submit_1_per_s", True, "jobs/s, 1 CLI client"),
        ("submit_4_per_s", True, "jobs/s, 4 CLI clients"),
        ("array_s", False, "s, 1,000 jobs in one command"),
        ("jobs_1000_s", False, "s, 1,000 `true` one call each -> done"),
        ("dispatch_idle_ms", False, "ms, submit -> running, idle"),
        ("dispatch_idle_p90_ms", False, ""),
        ("dispatch_b2b_ms", False, "ms, submit -> running, back to back"),
        ("dispatch_b2b_p90_ms", False, ""),
        ("node_loss_s", False, "s, daemon kill -9 -> job running again"),
        ("drain_ms", False, "ms, the drain command"),
        ("drain_landed", None, "probes that ran on the drained node"),
        ("drain_job_ok", None, "the job there finished by itself"),
        ("drain_done", None, "the node then drained"),
        ("ctl_rss_mb", False, "MB, controller RSS, --pending (10,000) pending"),
        ("state_mb", False, "MB, state on disk, the same"),
        ("restart_s", False, "s, controller restart -> answering")]
keys = [r[0] for r in rows]
rows += [(k, False, "") for k in sorted(set(s) | set(l)) if k not in keys]

def fmt(v):
    return "%.3g" % v if v < 100 else "%.0f" % v

print("%-22s | %10s | %10s | %7s | %s" % ("figure (median)", "Slurm",
                                         "lockstep", "ratio", ""))
for k, higher, what in rows:
    a, b = s.get(k), l.get(k)
    if a is None and b is None:
        continue
    ma = statistics.median(a) if a else None
    mb = statistics.median(b) if b else None
    ratio = "-"
    if ma and mb and higher is not None:
        ratio = "%.1fx" % (mb / ma if higher else ma / mb)
    if higher is None:  # yes/no figures: the worst round
        ma = min(a) if k != "drain_landed" and a else (max(a) if a else None)
        mb = min(b) if k != "drain_landed" and b else (max(b) if b else None)
    print("%-22s | %10s | %10s | %7s | %s" % (
        k, "-" if ma is None else fmt(ma), "-" if mb is None else fmt(mb),
        ratio, what + (" (n=%d/%d)" % (len(a or []), len(b or [])))))
print("(ratio: how many times better lockstep is; > 1: lockstep better)")
EOF
