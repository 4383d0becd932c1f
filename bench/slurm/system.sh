# shellcheck shell=bash disable=SC2034 # sets variables its caller uses
# system.sh - the Slurm adapter of bench/vs-figures.sh (sourced by it
# with --system slurm): the commands each figure runs, in Slurm's words.
# bench/vs-lockstep.sh is lockstep's; vs-figures.sh lists what each
# function must do. The cluster is bench/slurm/cluster.sh's.

# shellcheck source=bench/slurm/cluster.sh
. "$(dirname "${BASH_SOURCE[0]}")/cluster.sh"

SYS_LABEL="Slurm $(slurmctld -V 2>/dev/null | awk '{print $2}')"
# one job of one task on one node, one CPU, requeued if its node is lost;
# the job's shell command comes last (--wrap: sbatch writes the script)
SUBMIT1=(sbatch --parsable -o /dev/null -e /dev/null -N1 -n1 -c1 --requeue --wrap)
# 7 of a node's 8 CPUs (the drain probes)
SUBMIT7=(sbatch --parsable -o /dev/null -e /dev/null -N1 -n1 -c7 --wrap)
# shellcheck disable=SC2016 # run by sh -c
IDLE_CMD='test -z "$(squeue -h -o %i)"'

sys_start() { slurm_start "$1"; }
sys_stop() { slurm_stop; }
sys_submit1() { "${SUBMIT1[@]}" "$1"; }
sys_submit7() { "${SUBMIT7[@]}" "$1"; }

# sys_busy: a job holding every node whole, until cancelled; its id.
sys_busy() {
    local id
    id=$(sbatch --parsable -o /dev/null -N"$SLURM_NODES" --exclusive --wrap 'sleep 1000000') || return 1
    if ! slurm_wait 120 slurm_job_is "$id" RUNNING; then
        squeue -h -j "$id" -o 'job %i %T %r' >&2
        sinfo -N >&2
        return 1
    fi
    echo "$id"
}

# sys_array N: N one-node jobs `true` in one submission (sys_array_prep
# N before it, untimed, writes what it needs)
sys_array_prep() { :; }
sys_array() {
    sbatch -o /dev/null -e /dev/null -N1 -n1 -c1 --array=1-"$1" --wrap true >/dev/null
}

# sys_fill N: N more pending jobs (one record each: an array stays one
# record until it runs), 4 sbatch at a time.
sys_fill() {
    "$PY" "$VS" spawn fill "$1" 4 -- "${SUBMIT1[@]}" true >/dev/null
}

slurm_none() { [ -z "$(squeue -h ${1:+-t "$1"} -o %i)" ]; } # [STATE]
sys_cancel_pending() {
    scancel -t PENDING
    slurm_wait 120 slurm_none PENDING
}
sys_cancel() { scancel "$@"; }
sys_cancel_all() {
    scancel -u "$(id -un)"
    slurm_wait 120 slurm_none
}

# sys_running_on ID: the node ID runs on, if it is running.
sys_running_on() {
    [ "$(squeue -h -j "$1" -o %T 2>/dev/null)" = RUNNING ] &&
        squeue -h -j "$1" -o %N
}

# sys_ended_ok ID: ID ended by itself with exit 0 (COMPLETED).
sys_ended_ok() {
    [ "$(scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')" = COMPLETED ]
}

sys_kill_node() { slurm_kill_node "$1"; }
sys_revive_node() {
    slurm_start_node "$1"
    slurm_wait 120 slurm_nodes_up "$SLURM_NODES"
}

sys_drain() { scontrol update nodename="$1" state=drain reason=bench; }
sys_drained() { [ "$(sinfo -h -n "$1" -o %t)" = drain ]; }
sys_undrain() { scontrol update nodename="$1" state=resume; }

sys_ctl_pid() { echo "$SLURM_CTLD_PID"; }
sys_state_dir() { echo "$SLURM_DIR/state"; }
sys_ctl_stop() {
    kill -TERM "$SLURM_CTLD_PID"
    slurm_wait 60 slurm_gone "$SLURM_CTLD_PID"
}
sys_ctl_start() { slurm_start_ctld; }
sys_answering() { [ "$(squeue -h -j "$1" -o %i 2>/dev/null)" = "$1" ]; }
sys_dir() { echo "$SLURM_DIR"; }
