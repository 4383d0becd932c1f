#!/bin/bash
# t2006: the agent is the PMIx server of the ranks it starts, so Open MPI
# programs run without mpirun: a C program (mpicc) and an mpi4py one on
# 1 node x 2 ranks get the right MPI_Allreduce on every rank (a rank left
# a singleton would print "of 1"); MPI_Abort fails the attempt with its
# message in `lockstep show`, and the other rank is stopped (also when
# the aborting rank, a bare PMIx client, does not exit); a PMIx fence
# across 2 nodes completes (relayed through the scheduler; t2007 runs
# MPI across nodes); a rank may still run mpirun itself; LOCKSTEP_PMIX=0
# leaves a job's environment without PMIx.
# Skipped without mpicc, mpi4py or a build without libpmix.
. "$(dirname "$0")/../lib/harness.sh"

if ! command -v mpicc >/dev/null 2>&1 || ! pkg-config --exists pmix ||
    ! "$PY" -c "import mpi4py" 2>/dev/null ||
    ! grep -q "LOCKSTEP_HAVE_PMIX 1" "$BUILD_DIR/version.h"; then
    echo "ok 1 # SKIP mpicc, mpi4py or libpmix missing (make deps installs them)"
    echo "1..1"
    exit 0
fi

start_scheduler
start_agent n1
start_agent n2

# Open MPI's mpirun refuses root without these; direct launch does not
# need them, but a CI machine runs the tests as root either way.
MPI_ENV=(--env OMPI_ALLOW_RUN_AS_ROOT=1 --env OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)

# ranks_sum_ok ID: every rank of the 2-rank job ID printed the full sum.
ranks_sum_ok() {
    local r
    for r in 0 1; do
        ls_cli logs "$1" --rank $r >rank-$r.out || return 1
        grep -qx "rank $r of 2 sum 1" rank-$r.out || {
            cat rank-$r.out
            ls_cli logs "$1" --rank $r --stream err | tail -n 20
            return 1
        }
    done
}

test_expect_success 'nodes come up, an MPI program compiles' '
    wait_nodes_up 2 &&
    mpicc -o mpi_allreduce "$SRC_DIR/tests/helpers/mpi_allreduce.c"
'

test_expect_success 'an Open MPI C program runs without mpirun' '
    start=$(date +%s%N) &&
    id=$(submit_id --nodes 1 --ranks-per-node 2 "${MPI_ENV[@]}" \
        --workdir "$TEST_DIR" -- ./mpi_allreduce) &&
    wait_job_state $id SUCCEEDED 60 &&
    echo "# 2-rank MPI job, submit to SUCCEEDED:" \
        "$(( ($(date +%s%N) - start) / 1000000 )) ms" >&3 &&
    ranks_sum_ok $id
' 3>&1

test_expect_success 'an mpi4py program runs without mpirun' '
    "$PY" -c "import mpi4py" || { echo "python3-mpi4py missing"; return 1; }
    id=$(submit_id --nodes 1 --ranks-per-node 2 "${MPI_ENV[@]}" -- \
        "$PY" -c "from mpi4py import MPI
c = MPI.COMM_WORLD
print(\"rank\", c.rank, \"of\", c.size, \"sum\", c.allreduce(c.rank))") &&
    wait_job_state $id SUCCEEDED 60 &&
    ranks_sum_ok $id
'

test_expect_success 'a job that starts mpirun itself still works' '
    id=$(submit_id --nodes 1 --ranks-per-node 1 "${MPI_ENV[@]}" \
        --workdir "$TEST_DIR" -- \
        mpirun -n 2 --oversubscribe ./mpi_allreduce) &&
    wait_job_state $id SUCCEEDED 60 &&
    ls_cli logs $id --rank 0 | sort >nested.out &&
    printf "rank 0 of 2 sum 1\nrank 1 of 2 sum 1\n" | diff - nested.out
'

test_expect_success 'MPI_Abort fails the attempt with its message' '
    id=$(submit_id --nodes 1 --ranks-per-node 2 --max-restarts 0 \
        "${MPI_ENV[@]}" --workdir "$TEST_DIR" -- ./mpi_allreduce 1) &&
    echo $id >abort.job &&
    wait_job_state $id FAILED 60 &&
    ls_cli show $id --json >abort.json &&
    test "$(jget "j[\"failed_rank\"]" <abort.json)" = 1 &&
    test "$(jget "j[\"exit_code\"]" <abort.json)" = 3 &&
    jget "j[\"stderr_tail\"]" <abort.json >abort.tail &&
    grep -q "fatal: shard 1 is corrupt" abort.tail &&
    grep -q "lockstep: rank 1 called MPI_Abort/PMIx_Abort (status 3)" \
        abort.tail &&
    ls_cli show $id >abort.txt &&
    grep -q "called MPI_Abort/PMIx_Abort (status 3)" abort.txt
'

test_expect_success 'the rank waiting in MPI_Barrier was stopped' '
    wait_until 15 job_gone $(cat abort.job) &&
    ls_cli show $(cat abort.job) --json >abort.json &&
    test "$(jget "[r[\"signal\"] for r in j[\"attempts\"][0][\"ranks\"] if r[\"rank\"] == 0]" <abort.json)" = "[15]"
'

test_expect_success 'a PMIx abort stops the ranks that do not exit' '
    cc -o pmix_abort "$SRC_DIR/tests/helpers/pmix_abort.c" \
        $(pkg-config --cflags --libs pmix) &&
    id=$(submit_id --nodes 1 --ranks-per-node 2 --max-restarts 0 \
        --workdir "$TEST_DIR" -- ./pmix_abort) &&
    wait_job_state $id FAILED 30 &&
    ls_cli logs $id --rank 1 | grep -q "PMIx_Abort returned SUCCESS" &&
    ls_cli logs $id --rank 1 --stream err |
        grep -qx "lockstep: rank 1 called MPI_Abort/PMIx_Abort (status 5): shard 9 is corrupt" &&
    ls_cli show $id | grep -q "shard 9 is corrupt" &&
    wait_until 15 job_gone $id
'

test_expect_success 'a PMIx fence across 2 nodes completes (t2007: MPI)' '
    start=$SECONDS &&
    cc -o pmix_fence "$SRC_DIR/tests/helpers/pmix_fence.c" \
        $(pkg-config --cflags --libs pmix) &&
    id=$(submit_id --nodes 2 --ranks-per-node 1 --max-restarts 0 \
        --workdir "$TEST_DIR" -- ./pmix_fence 3) &&
    wait_job_state $id SUCCEEDED 30 &&
    test $((SECONDS - start)) -lt 30 &&
    ls_cli logs $id --rank 0 | grep -qx "rank 0 got the key of rank 1" &&
    grep -q "PMIx fence .* across nodes done" "$TEST_DIR"/agent-n*/log
'

test_expect_success 'ranks get PMIx variables; LOCKSTEP_PMIX=0 opts out' '
    id=$(submit_id -- env) && wait_job_state $id SUCCEEDED 30 &&
    ls_cli logs $id --rank 0 >on.env &&
    grep -qx "PMIX_NAMESPACE=$id.1" on.env &&
    grep -qx "PMIX_RANK=0" on.env &&
    grep -q "^PMIX_SERVER_URI41=lockstep.agent.n[12].0;tcp4://127.0.0.1:" \
        on.env &&
    grep -qx "OMPI_MCA_schizo=^orte,slurm" on.env &&
    id=$(submit_id --env LOCKSTEP_PMIX=0 -- env) &&
    wait_job_state $id SUCCEEDED 30 &&
    ls_cli logs $id --rank 0 >off.env &&
    ! grep -q "^PMIX_\|^OMPI_MCA_" off.env
'

test_done
