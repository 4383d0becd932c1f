#!/bin/bash
# submit.sh - what a submission costs, with no queue and with a deep one.
# Prints figures; asserts nothing. docs/scale.md says what each means.
#
#   bench/submit.sh [--pending N] [--nodes N] [--count N] [--reps R]
#
# Two fresh lockstepd of the build side by side (production heartbeat
# 1 s, the default per-user limits, db_synchronous=full), each with
# --nodes (100) agents simulated by lockstep-sim (8 GPUs each), all taken
# by one long job, so every job submitted here waits behind it. Scheduler
# A keeps an empty queue; B gets --pending (100000) jobs of two other
# users (alice, carol) first, in batches. The submitter is an ordinary
# user, bob, with a token over TCP. The same measurements then run --reps
# (3) times against A and B in turn (ABAB: a machine whose load drifts
# touches both alike), and each figure is the median:
#   - api_1: one client, --count (1000) submissions one after the other on
#     one keep-alive connection; api_4: four such clients (processes);
#     api_pipe: one connection with 32 requests in flight
#   - cpu_us_per_job: the scheduler's CPU time (user + system) per job
#     over the api_* runs: the cost of a submission, whatever the load
#   - commit_ms: lockstep_db_commit_duration_seconds over the api_* runs
#     (the commit on the loop, without its fsync); commits_per_job and
#     fsyncs_per_job: commits and WAL fsyncs (lockstep_db_fsyncs_total:
#     group commit) per job submitted
#   - cli_seq: 100 `lockstep submit` processes one after the other (a
#     shell loop), cli_par4: 200 of them, 4 at a time
#   - batch_1000: one request of 1000 jobs (POST /v1/jobs with "jobs");
#     cli_specs_1000: `lockstep submit --specs` of 1000 lines
#   - rss_mb: the scheduler's resident memory at the end
# and once, the disk's floor: 4 KiB + fdatasync in the state directory's
# file system, appending (fsync_append_ms) and rewriting (fsync_ms, what
# the WAL mostly does), and how close the serial clients come to it.
set -u
PENDING=100000 NODES=100 COUNT=1000 REPS=3
while [ $# -gt 0 ]; do
    case $1 in
    --pending) PENDING=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --count) COUNT=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    *) sed -n 2,33p "$0" >&2; exit 2 ;;
    esac
done

. "$(dirname "$0")/../tests/lib/harness.sh"
SIM=$BUILD_DIR/bench/lockstep-sim
SUB=$SRC_DIR/bench/submit.py
HEARTBEAT_MS=1000
declare -A FIG=() URL=() PID=() SOCK=()

sb() { "$PY" "$SUB" "$@"; }

cpu_s() { # PID: user + system seconds
    awk '{ printf "%.3f", ($14 + $15) / '"$(getconf CLK_TCK)"' }' "/proc/$1/stat"
}

# record TAG LINE: append each key=value of LINE to FIG[TAG.key] (a list).
record() {
    local tag=$1 kv
    echo "  [$tag] $2"
    for kv in $2; do FIG[$tag.${kv%%=*}]+="${kv#*=} "; done
}

# cluster X: scheduler X (A or B) on its own state directory and port,
# with its simulated nodes and the long job that takes them all.
cluster() {
    local x=$1 d=$TEST_DIR/sched$1 busy
    mkdir -p "$d/state"
    "$LOCKSTEPD" -o listen=127.0.0.1:0 -o port_file="$d/port" -o tls=off \
        -o socket="$d/sock" -o state_dir="$d/state" \
        -o cluster_secret_file="$CLUSTER_SECRET" -o heartbeat_ms=1000 \
        -o master_port_count=1000 >>"$d/log" 2>&1 &
    PID[$x]=$!
    EXTRA_PIDS+=(${PID[$x]})
    wait_until 20 test -s "$d/port" || { tail -n 5 "$d/log" >&2; exit 1; }
    URL[$x]=http://127.0.0.1:$(cat "$d/port")
    SOCK[$x]=$d/sock
    "$SIM" --server "${URL[$x]}" --cluster-secret-file "$CLUSTER_SECRET" \
        --nodes "$NODES" --prefix "sim$x" --gpus 8 --rank-time 36000000 \
        --report-ms 60000 >>"$d/sim.log" 2>&1 &
    EXTRA_PIDS+=($!)
    export LOCKSTEP_SERVER=${SOCK[$x]}
    wait_nodes_up "$NODES" 120 || exit 1
    busy=$(submit_id --nodes "$NODES" --gpus-per-node 8 -- sleep 1000000)
    wait_job_state "$busy" RUNNING 120 || exit 1
    for u in alice bob carol; do
        ls_cli token create --user $u --role user --json |
            jget 'j["token"]' >"$d/$u.tok"
    done
}

# measure X: one round of every figure against scheduler X.
measure() {
    local x=$1 d=$TEST_DIR/sched$1 url=${URL[$1]} bob m0 m1 c0 c1 t0 t1 n
    bob=$(<"$d/bob.tok")
    m0=$(sb metrics "$url" "$bob") c0=$(cpu_s "${PID[$x]}")
    record "$x" "$(sb rate "$url" "$bob" 1 "$COUNT" | sed 's/.*jobs_per_s/api_1_per_s/')"
    record "$x" "$(sb rate "$url" "$bob" 4 $((COUNT / 2)) | sed 's/.*jobs_per_s/api_4_per_s/')"
    record "$x" "$(sb pipe "$url" "$bob" $((COUNT * 2)) 32 | sed 's/.*jobs_per_s/api_pipe_per_s/')"
    m1=$(sb metrics "$url" "$bob") c1=$(cpu_s "${PID[$x]}")
    n=$((COUNT * 4))
    record "$x" "$("$PY" -c '
import sys
def kv(s):
    return dict(p.split("=") for p in s.split())
a, b = kv(sys.argv[1]), kv(sys.argv[2])
c0, c1, n = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
commits = float(b["commits"]) - float(a["commits"])
fsyncs = float(b["fsyncs"]) - float(a["fsyncs"])
print("cpu_us_per_job=%.0f commit_ms=%.3f commits_per_job=%.2f "
      "fsyncs_per_job=%.2f" % (
    1e6 * (c1 - c0) / n,
    1000 * (float(b["commit_s"]) - float(a["commit_s"])) / max(commits, 1),
    commits / n, fsyncs / n))' "$m0" "$m1" "$c0" "$c1" "$n")"
    record "$x" "$(LOCKSTEP_SERVER=$url LOCKSTEP_TOKEN=$bob sb cli "$CLI" 100 1 |
        sed 's/.*jobs_per_s/cli_seq_per_s/; s/call_ms_p50/cli_seq_call_ms/')"
    record "$x" "$(LOCKSTEP_SERVER=$url LOCKSTEP_TOKEN=$bob sb cli "$CLI" 200 4 |
        sed 's/.*jobs_per_s/cli_par4_per_s/; s/call_ms_p50/cli_par4_call_ms/')"
    record "$x" "$(sb batch "$url" "$bob" 1000 | sed 's/batch=1000 //; s/batch_s/batch_1000_s/; s/batch_jobs_per_s/batch_1000_per_s/')"
    t0=$(date +%s.%N)
    LOCKSTEP_SERVER=$url LOCKSTEP_TOKEN=$bob "$CLI" submit --gpus-per-node 1 \
        --specs "$TEST_DIR/specs.jsonl" >/dev/null || exit 1
    t1=$(date +%s.%N)
    record "$x" "cli_specs_1000_s=$("$PY" -c "print('%.3f' % ($t1 - $t0))")"
}

median() { # VALUES...
    "$PY" -c 'import sys, statistics
v = [float(x) for x in sys.argv[1:]]
print(("%.3f" if v and statistics.median(v) < 10 else "%.0f") % statistics.median(v) if v else "")' "$@"
}

row() { # FIGURE BASE VALUE
    "$PY" -c '
import sys
f, b, v = sys.argv[1:4]
try:
    r = "%.2f" % (float(v) / float(b))
except (ValueError, ZeroDivisionError):
    r = "-"
print("%-20s | %12s | %14s | %6s" % (f, b, v, r))
' "$@"
}

"$PY" -c 'import json
for i in range(1000):
    print(json.dumps({"argv": ["sleep", "1"], "name": "s%d" % i}))' >"$TEST_DIR/specs.jsonl"
cluster A
cluster B
echo "# $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), 2 x $NODES simulated nodes, lockstep $(git -C "$SRC_DIR" rev-parse --short HEAD 2>/dev/null)"
record disk "$(sb fsync "$TEST_DIR/schedA/state" 300 | sed 's/fsync_ms/fsync_append_ms/; s/fsyncs_per_s/fsync_append_per_s/')"
record disk "$(sb fsync "$TEST_DIR/schedA/state" 300 rewrite)"
half=$((PENDING / 2))
record fill "$(sb fill "${URL[B]}" "$(<"$TEST_DIR/schedB/alice.tok")" $half)"
record fill "$(sb fill "${URL[B]}" "$(<"$TEST_DIR/schedB/carol.tok")" $((PENDING - half)))"
for r in $(seq 1 "$REPS"); do
    echo "# round $r of $REPS (load $(cut -d' ' -f1 /proc/loadavg))"
    measure A
    measure B
done
for x in A B; do
    FIG[$x.rss_mb]=$(awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/${PID[$x]}/status")
done

echo
printf '%-20s | %12s | %14s | %6s\n' "figure (median)" "pending=0" "pending=$PENDING" ratio
for k in api_1_per_s api_4_per_s api_pipe_per_s cpu_us_per_job commit_ms \
    commits_per_job fsyncs_per_job cli_seq_per_s cli_seq_call_ms cli_par4_per_s \
    cli_par4_call_ms batch_1000_s batch_1000_per_s cli_specs_1000_s rss_mb; do
    row "$k" "$(median ${FIG[A.$k]:-})" "$(median ${FIG[B.$k]:-})"
done
echo
"$PY" -c '
import sys
fa, fr, cli, api = map(float, sys.argv[1:5])
print("fsync floor: %.2f ms appending (%.0f/s), %.2f ms rewriting (%.0f/s);"
      " serial API client %.0f/s (%.2f ms a job), serial CLI %.0f/s"
      " (%.1f ms a job)" % (fa, 1000 / fa, fr, 1000 / fr, api, 1000 / api,
                          cli, 1000 / cli))' \
    "$(median ${FIG[disk.fsync_append_ms]})" "$(median ${FIG[disk.fsync_ms]})" \
    "$(median ${FIG[A.cli_seq_per_s]})" "$(median ${FIG[A.api_1_per_s]})"
echo "Slurm 22.05 on this machine class (the issue's figures): sbatch 45-92/s" \
    "one call per job, 227-260/s from 4 clients; --array of 1000: 1-2 s"
