#!/bin/bash
# vs-figures.sh - the figures of the side-by-side with Slurm, measured on
# one scheduler: lockstep (bench/vs-lockstep.sh) or Slurm
# (bench/slurm/system.sh), the same workload and the same definitions,
# through the adapter's commands. Prints "FIG key value" lines (one per
# measurement; bench/vs-slurm.sh takes the medians) and asserts nothing.
# A development tool: not in the test suite.
#
#   bench/vs-figures.sh --system slurm|lockstep [--reps R] [--nodes N]
#       [--submit N] [--jobs N] [--dispatch N] [--array N] [--pending N]
#       [--loss-reps R] [--skip-slow]
#
# A cluster of --nodes (16) nodes of 8 CPUs on loopback; every job is run
# by root and submitted through the scheduler's CLI, one process per
# call (sbatch / lockstep submit). Each of --reps (3) rounds measures:
#   dispatch_idle_ms: --dispatch (20) one-node jobs one at a time, the
#     cluster idle before each: from just before the submit command
#     starts to the time the job itself wrote into a marker file as its
#     first act (`date +%s.%N > FILE`), the median (and _p90)
#   dispatch_b2b_ms: the same with the --dispatch jobs submitted back to
#     back, each measured from its own submit
#   jobs_1000_s: --jobs (1000) one-node jobs `true`, one CLI call each,
#     one after the other: first call -> no job unfinished (polled every
#     0.2 s by listing the unfinished jobs)
#   then a job holding every node whole (so nothing more can start):
#   submit_1_per_s: --submit (500) one-node jobs submitted by one client
#     (CLI processes one after the other), jobs/s
#   submit_4_per_s: 2 x --submit jobs by 4 clients (4 CLI processes at
#     a time), jobs/s
#   array_s: --array (1000) jobs in one command: sbatch --array=1-N vs
#     lockstep submit --specs - with N lines on stdin; seconds
#   (the pending jobs are cancelled after each, so every submission
#   figure starts on an empty queue)
#   drain_ms: a one-node job `sleep 10` runs on node X; the drain command
#     (scontrol update nodename=X state=drain / lockstep drain X), wall
#     time; then 16 probes of 7 CPUs each are submitted (without the
#     drain one would fit beside the job on X): drain_landed = probes
#     that ran on X (want 0); drain_job_ok = 1 if the job on X then
#     ended by itself with success (not killed), drain_done = 1 if X
#     then reached the drained state (Slurm "drain", lockstep CORDONED)
# Then --loss-reps (default --reps) rounds, unless --skip-slow:
#   node_loss_s: a one-node job that may be requeued/restarted appends
#     its start time to a file and sleeps; its node's daemon and every
#     process on the node (slurmd, slurmstepd and the job / the agent,
#     the supervisor and the rank) are killed -9 at T; seconds from T to
#     the first start time after T (the job running on another node).
#     The node's daemon is started again after each round.
# Then once, behind the job holding every node:
#   pending jobs are added up to --pending (10000);
#   ctl_rss_mb: the controller's resident memory (slurmctld / lockstepd)
#   state_mb: its state directory on disk (du: StateSaveLocation /
#     state_dir, WAL included)
#   restart_s: the controller stopped (SIGTERM: each saves its state and
#     exits) and started again: start -> it answers a query about one
#     job (squeue -j / lockstep show)
set -u
SYSTEM='' REPS=3 NODES=16 NSUB=500 NJOBS=1000 NDISP=20 NARRAY=1000
PENDING=10000 LOSS_REPS='' SLOW=1
while [ $# -gt 0 ]; do
    case $1 in
    --system) SYSTEM=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --submit) NSUB=$2; shift 2 ;;
    --jobs) NJOBS=$2; shift 2 ;;
    --dispatch) NDISP=$2; shift 2 ;;
    --array) NARRAY=$2; shift 2 ;;
    --pending) PENDING=$2; shift 2 ;;
    --loss-reps) LOSS_REPS=$2; shift 2 ;;
    --skip-slow) SLOW=0; shift ;;
    *) sed -n 2,60p "$0" >&2; exit 2 ;;
    esac
done
: "${LOSS_REPS:=$REPS}"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
VS=$HERE/vs.py
case $SYSTEM in
slurm)
    # shellcheck source=bench/slurm/system.sh
    . "$HERE/slurm/system.sh"
    trap sys_stop EXIT
    trap 'exit 130' INT TERM ;;
lockstep) # shellcheck source=bench/vs-lockstep.sh
    . "$HERE/vs-lockstep.sh" ;;
*) sed -n 2,60p "$0" >&2; exit 2 ;;
esac

vs() { "$PY" "$VS" "$@"; }
measure() { # VS-ARGS...: vs.py's figures, or die
    local out
    out=$(vs "$@") || die "$1 $2 failed"
    # shellcheck disable=SC2086 # key=value words
    fig $out
}
fig() { # KEY=VALUE...: one line per figure
    local kv
    for kv in "$@"; do echo "FIG ${kv%%=*} ${kv#*=}"; done
}
die() { echo "vs-figures ($SYSTEM): $*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { "$PY" -c "import sys; print('%.${3:-3}f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$2"; }

sys_start "$NODES" || die "the cluster did not start"
WORK=$(sys_dir)/work # removed with the cluster's directory
mkdir -p "$WORK" && cd "$WORK" || exit 1
echo "# $SYS_LABEL: $NODES nodes, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

idle() { sh -c "$IDLE_CMD"; }

drain_round() {
    local j x t0 t1 p probes=() landed=0 node
    j=$(sys_submit1 'sleep 10') || die "submit"
    wait_for_node() { x=$(sys_running_on "$j"); [ -n "$x" ]; }
    for _ in $(seq 1 300); do wait_for_node && break; sleep 0.1; done
    [ -n "$x" ] || die "the drain job did not start"
    t0=$(now)
    sys_drain "$x" || die "drain $x"
    t1=$(now)
    for _ in $(seq 1 "$NODES"); do probes+=("$(sys_submit7 'sleep 60')"); done
    # until the job on X ended, watch where the probes run
    while [ -n "$(sys_running_on "$j")" ]; do
        for p in "${probes[@]}"; do
            node=$(sys_running_on "$p") && [ "$node" = "$x" ] && landed=1
        done
        sleep 0.5
    done
    sleep 2
    for p in "${probes[@]}"; do
        node=$(sys_running_on "$p") && [ "$node" = "$x" ] && landed=1
    done
    local ok=0 done=0
    sys_ended_ok "$j" && ok=1
    for _ in $(seq 1 100); do sys_drained "$x" && { done=1; break; }; sleep 0.1; done
    fig drain_ms="$(elapsed "$t0" "$t1" 4 | awk '{ printf "%.1f", $1 * 1000 }')" \
        drain_landed=$landed drain_job_ok=$ok drain_done=$done
    sys_cancel "${probes[@]}"
    sys_undrain "$x"
    sys_cancel_all
}

loss_round() {
    local j x t0 first mk=$WORK/loss.$1
    j=$(sys_submit1 "date +%s.%N >> $mk; exec sleep 100000") || die "submit"
    for _ in $(seq 1 300); do x=$(sys_running_on "$j") && [ -s "$mk" ] && break; sleep 0.1; done
    [ -n "$x" ] || die "the node-loss job did not start"
    t0=$(now)
    sys_kill_node "$x"
    first=
    for _ in $(seq 1 9000); do # 15 minutes
        first=$(vs first-line-after "$t0" "$mk") && break
        sleep 0.1
    done
    [ -n "$first" ] || die "the job did not run again within 15 minutes"
    fig node_loss_s="$(elapsed "$t0" "$first" 2)"
    echo "#   node loss: job $j on $x, again running on $(sys_running_on "$j")" >&2
    sys_cancel_all
    sys_revive_node "$x" || die "node $x did not come back"
}

for r in $(seq 1 "$REPS"); do
    echo "# round $r of $REPS (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    idle || sys_cancel_all
    measure dispatch dispatch_idle "$NDISP" idle "$WORK" "$IDLE_CMD" -- "${SUBMIT1[@]}"
    measure dispatch dispatch_b2b "$NDISP" b2b "$WORK" "$IDLE_CMD" -- "${SUBMIT1[@]}"
    measure complete "jobs_$NJOBS" "$NJOBS" "$IDLE_CMD" -- "${SUBMIT1[@]}" true
    busy=$(sys_busy) || die "the job holding every node did not start"
    measure spawn submit_1 "$NSUB" 1 -- "${SUBMIT1[@]}" true
    sys_cancel_pending
    measure spawn submit_4 $((NSUB * 2)) 4 -- "${SUBMIT1[@]}" true
    sys_cancel_pending
    sys_array_prep "$NARRAY"
    t0=$(now)
    sys_array "$NARRAY" || die "array"
    fig array_s="$(elapsed "$t0" "$(now)")"
    sys_cancel_pending
    sys_cancel_all
    drain_round
done

if [ "$SLOW" = 1 ]; then
    for r in $(seq 1 "$LOSS_REPS"); do
        echo "# node loss $r of $LOSS_REPS" >&2
        loss_round "$r"
    done
fi

echo "# $PENDING pending jobs" >&2
busy=$(sys_busy) || die "the job holding every node did not start"
sys_fill "$PENDING" || die "fill"
pid=$(sys_ctl_pid)
fig ctl_rss_mb="$(awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status")" \
    state_mb="$(du -sk "$(sys_state_dir)" | awk '{ printf "%.1f", $1 / 1024 }')"
sys_ctl_stop
t0=$(now)
sys_ctl_start
for _ in $(seq 1 1200); do sys_answering "$busy" && break; sleep 0.05; done
sys_answering "$busy" || die "the controller did not answer after its restart"
fig restart_s="$(elapsed "$t0" "$(now)")"
sys_cancel_all
