#!/bin/bash
# t2007: MPI across nodes without mpirun: the agents' PMIx servers relay
# the fences that span nodes through the scheduler (POST
# /v1/agent/collective), so a C program and an mpi4py one on 2 agents x
# 2 ranks (`lockstep submit --nodes 2 --ranks-per-node 2`) get the right
# MPI_Allreduce on every rank; PMIx fences exchange the ranks' data and
# the ranks see the other node's real name; data not exchanged in a
# fence comes by direct modex (POST /v1/agent/modex, the owner agent's
# modex long poll), for a bare PMIx client and for Open MPI with
# async modex and no data collected; an
# MPI_Abort on one node fails the attempt with its message and stops the
# ranks of both nodes. The two "nodes" are two agents on this host: the
# agents' environment carries Open MPI's settings for that (TCP over
# loopback, a shared-memory directory of their own; README "MPI").
# Skipped without mpicc or a build without libpmix; the mpi4py case
# without mpi4py.
. "$(dirname "$0")/../lib/harness.sh"

if ! command -v mpicc >/dev/null 2>&1 || ! pkg-config --exists pmix ||
    ! grep -q "LOCKSTEP_HAVE_PMIX 1" "$BUILD_DIR/version.h"; then
    echo "ok 1 # SKIP mpicc or libpmix missing (make deps installs them)"
    echo "1..1"
    exit 0
fi

# start_mpi_agent NAME: an agent whose ranks may share this host with
# another agent's (docs: README "MPI across nodes on one host").
start_mpi_agent() {
    mkdir -p "$TEST_DIR/shm-$1"
    OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo \
        OMPI_MCA_pml=ob1 \
        OMPI_MCA_btl_vader_backing_directory="$TEST_DIR/shm-$1" \
        start_agent "$1"
}

start_scheduler
start_mpi_agent n1
start_mpi_agent n2

MPI_ENV=(--env OMPI_ALLOW_RUN_AS_ROOT=1 --env OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)

# ranks_sum_ok ID: every rank of the 4-rank job ID printed the full sum.
ranks_sum_ok() {
    local r
    for r in 0 1 2 3; do
        ls_cli logs "$1" --rank $r >rank-$r.out || return 1
        grep -qx "rank $r of 4 sum 6" rank-$r.out || {
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

test_expect_success 'an Open MPI C program runs on 2 nodes without mpirun' '
    for i in 1 2 3; do
        start=$(date +%s%N) &&
        id=$(submit_id --nodes 2 --ranks-per-node 2 "${MPI_ENV[@]}" \
            --workdir "$TEST_DIR" -- ./mpi_allreduce) &&
        wait_job_state $id SUCCEEDED 60 &&
        echo "# 2x2 MPI job, submit to SUCCEEDED:" \
            "$(( ($(date +%s%N) - start) / 1000000 )) ms" >&3 &&
        ranks_sum_ok $id || return 1
    done &&
    grep -h "PMIx fence .* across nodes done in" "$TEST_DIR"/agent-n*/log |
        sed "s/.*done in/# fence relayed in/" | head -n 8 >&3 &&
    test "$(grep -c "PMIx fence .* across nodes done" \
        "$TEST_DIR"/agent-n1/log)" -ge 3
' 3>&1

test_expect_success 'PMIx fences across nodes exchange data; real node names' '
    cc -o pmix_fence "$SRC_DIR/tests/helpers/pmix_fence.c" \
        $(pkg-config --cflags --libs pmix) &&
    id=$(submit_id --nodes 2 --ranks-per-node 2 --workdir "$TEST_DIR" -- \
        ./pmix_fence 50) &&
    wait_job_state $id SUCCEEDED 60 &&
    for r in 0 1 2 3; do
        ls_cli logs $id --rank $r >fence-$r.out &&
        peer=$(( (r / 2 + 1) * 2 % 4 )) &&
        grep -qx "rank $r got the key of rank $peer" fence-$r.out &&
        grep -qx "rank $r peer $peer host n$(( peer / 2 + 1 ))" fence-$r.out &&
        grep -q "^rank $r fences 50 median_us" fence-$r.out || {
            cat fence-$r.out; return 1; }
    done &&
    sed "s/^/# empty PMIx_Fence across 2 agents: /" fence-0.out |
        grep median >&3
' 3>&1

test_expect_success 'direct modex: ranks get the data of the other node ranks' '
    cc -o pmix_dmodex "$SRC_DIR/tests/helpers/pmix_dmodex.c" \
        $(pkg-config --cflags --libs pmix) &&
    id=$(submit_id --nodes 2 --ranks-per-node 2 --workdir "$TEST_DIR" -- \
        ./pmix_dmodex get) &&
    wait_job_state $id SUCCEEDED 60 &&
    for r in 0 1 2 3; do
        ls_cli logs $id --rank $r >dmodex-$r.out &&
        grep -q "^rank $r got 2 remote keys median_us" dmodex-$r.out || {
            cat dmodex-$r.out; return 1; }
    done &&
    cat dmodex-*.out | sed "s/^/# PMIx_Get by direct modex: /" >&3 &&
    grep -h "PMIx direct modex of rank .* done in" "$TEST_DIR"/agent-n*/log |
        sed "s/.*done in/# direct modex relayed in/" | head -n 8 >&3 &&
    for n in 1 2; do
        grep "job=$id attempt=1 PMIx direct modex of rank" \
            "$TEST_DIR/agent-n$n/log" >dmodex-n$n.log
    done &&
    grep -c "done in" dmodex-n1.log >dmodex.count &&
    grep -c "done in" dmodex-n2.log >>dmodex.count &&
    cat dmodex.count | sed "s/^/# direct modex upcalls per agent: /" >&3 &&
    test "$(sed -n 1p dmodex.count)" -ge 2 &&
    test "$(sed -n 2p dmodex.count)" -ge 2 &&
    ! grep -q "failed" dmodex-n1.log dmodex-n2.log
' 3>&1

test_expect_success 'Open MPI with direct modex (async modex, no data collected)' '
    id=$(submit_id --nodes 2 --ranks-per-node 2 "${MPI_ENV[@]}" \
        --env OMPI_MCA_pmix_base_async_modex=1 \
        --env OMPI_MCA_pmix_base_collect_data=0 \
        --workdir "$TEST_DIR" -- ./mpi_allreduce) &&
    wait_job_state $id SUCCEEDED 60 &&
    ranks_sum_ok $id &&
    grep -q "job=$id attempt=1 PMIx direct modex of rank .* done in" \
        "$TEST_DIR"/agent-n*/log
'

test_expect_success 'an mpi4py program runs on 2 nodes without mpirun' '
    if ! "$PY" -c "import mpi4py" 2>/dev/null; then
        echo "# SKIP python3-mpi4py missing" >&3
        return 0
    fi
    id=$(submit_id --nodes 2 --ranks-per-node 2 "${MPI_ENV[@]}" -- \
        "$PY" -c "from mpi4py import MPI
c = MPI.COMM_WORLD
print(\"rank\", c.rank, \"of\", c.size, \"sum\", c.allreduce(c.rank))") &&
    wait_job_state $id SUCCEEDED 60 &&
    ranks_sum_ok $id
' 3>&1

test_expect_success 'MPI_Abort on one node fails the attempt with its message' '
    id=$(submit_id --nodes 2 --ranks-per-node 2 --max-restarts 0 \
        "${MPI_ENV[@]}" --workdir "$TEST_DIR" -- ./mpi_allreduce 3) &&
    wait_job_state $id FAILED 60 &&
    ls_cli show $id --json >abort.json &&
    test "$(jget "j[\"failed_rank\"]" <abort.json)" = 3 &&
    test "$(jget "j[\"exit_code\"]" <abort.json)" = 3 &&
    jget "j[\"stderr_tail\"]" <abort.json >abort.tail &&
    grep -q "fatal: shard 3 is corrupt" abort.tail &&
    grep -q "lockstep: rank 3 called MPI_Abort/PMIx_Abort (status 3)" \
        abort.tail &&
    wait_until 20 job_gone $id
'

test_done
