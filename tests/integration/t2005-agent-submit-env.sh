#!/bin/bash
# t2005: a job takes the submitter's environment along. A command found
# only on the submitter's PATH runs on the ranks; a variable of the
# submitter's shell reaches every rank, LOCKSTEP_TOKEN and the other
# variables that never travel do not; --export=NONE and --export=LIST
# choose, --env wins; the job's owner sees the values, an operator only
# the names. Ranks get torchrun's whole contract (GROUP_*, ROLE_*,
# TORCHELASTIC_*, OMP_NUM_THREADS), and TORCHELASTIC_RESTART_COUNT counts
# a restart.
. "$(dirname "$0")/../lib/harness.sh"

# The agents' own environment reaches the ranks too: no OMP_NUM_THREADS
# there, whatever the runner has.
unset OMP_NUM_THREADS
start_scheduler
start_agent n1
start_agent n2

BIN=$TEST_DIR/bin
mkdir -p "$BIN"
cat >"$BIN/mytool" <<'EOF'
#!/bin/sh
# mytool: found only on the submitter's PATH
echo "mytool rank=$RANK var=${MY_VAR-unset} token=${LOCKSTEP_TOKEN-unset}" \
    "display=${DISPLAY-unset} ssh=${SSH_AUTH_SOCK-unset} pwd=$PWD"
env
EOF
chmod +x "$BIN/mytool"
mkdir -p "$TEST_DIR/work"

# as_alice CMD...: run CMD as alice, over TCP with her token.
as_alice() {
    LOCKSTEP_SERVER=$LOCKSTEP_URL LOCKSTEP_TOKEN=$(cat "$TEST_DIR/alice.tok") \
        "$@"
}

test_expect_success 'nodes come up; alice gets a token' '
    wait_nodes_up 2 &&
    ls_cli token create --user alice --json | jget "j[\"token\"]" >alice.tok &&
    test -s alice.tok
'

test_expect_success 'a command on the submitter'"'"'s PATH runs on every rank' '
    id=$(PATH="$BIN:$PATH" MY_VAR="from the shell" DISPLAY=:9 \
        SSH_AUTH_SOCK=/tmp/agent.sock RANK=99 MASTER_PORT=1 \
        as_alice submit_id --nodes 2 --workdir "$TEST_DIR/work" -- mytool) &&
    echo $id >job &&
    wait_job_state $id SUCCEEDED 30 &&
    as_alice ls_cli logs $id >logs &&
    cat logs &&
    test "$(grep -c "mytool rank=" logs)" = 2 &&
    grep -q "mytool rank=0 " logs && grep -q "mytool rank=1 " logs
'

test_expect_success 'a variable of the submitter'"'"'s shell is seen by every rank' '
    test "$(grep -c "var=from the shell" logs)" = 2 &&
    test "$(grep -c "\] PATH=$BIN:" logs)" = 2
'

test_expect_success 'LOCKSTEP_TOKEN, DISPLAY, SSH_AUTH_SOCK and rank variables do not travel' '
    test "$(grep -c "token=unset display=unset ssh=unset" logs)" = 2 &&
    ! grep -qF "$(cat alice.tok)" logs &&
    ! grep -q "\] MASTER_PORT=1$" logs &&
    test "$(grep -c "pwd=$TEST_DIR/work$" logs)" = 2
'

test_expect_success 'the owner sees the values; the job holds no denied name' '
    as_alice ls_cli show $(cat job) --json >alice.json &&
    test "$(jget "j[\"env\"][\"MY_VAR\"]" <alice.json)" = "from the shell" &&
    test "$(jget "[k for k in (\"LOCKSTEP_TOKEN\", \"LOCKSTEP_SERVER\",
        \"DISPLAY\", \"SSH_AUTH_SOCK\", \"RANK\", \"MASTER_PORT\", \"PWD\",
        \"SHLVL\", \"_\") if k in j[\"env\"]]" <alice.json)" = "[]"
'

test_expect_success 'an operator sees only the names, in show and in the listing' '
    ls_cli show $(cat job) --json >op.json &&
    test "$(jget "j[\"env\"][\"MY_VAR\"]" <op.json)" = None &&
    test "$(jget "all(v is None for v in j[\"env\"].values())" <op.json)" = True &&
    ls_cli jobs --all --json | jget "[j2[\"env\"] for j2 in j if j2[\"id\"] == $(cat job)][0][\"MY_VAR\"]" >op.list &&
    test "$(cat op.list)" = None &&
    ls_cli show $(cat job) >op.txt &&
    cat op.txt &&
    grep -q "env: .*variables:" op.txt && grep -qw MY_VAR op.txt &&
    ! grep -q "from the shell" op.txt
'

test_expect_success '--export=NONE drops the variable; --env still sets one' '
    id=$(MY_VAR=dropped submit_id --export=NONE --env OTHER=kept -- \
        sh -c "echo var=\${MY_VAR-unset} other=\$OTHER") &&
    wait_job_state $id SUCCEEDED 30 &&
    ls_cli logs $id | grep -qx "var=unset other=kept" &&
    test "$(ls_cli show $id --json | jget "sorted(j[\"env\"])")" = "[\"OTHER\"]"
'

test_expect_success '--export=NONE: a command only the submitter has is not found, naming the PATH' '
    id=$(PATH="$BIN:$PATH" submit_id --export=NONE --max-restarts 0 -- mytool) &&
    wait_job_state $id FAILED 30 &&
    ls_cli show $id --json >none.json &&
    jget "j[\"stderr_tail\"]" <none.json | tee tail.txt &&
    grep -q "cannot execute .mytool.: No such file or directory (not in PATH=" tail.txt &&
    ! grep -q "$BIN" tail.txt
'

test_expect_success '--env overrides the shell; --export=LIST takes only those' '
    id=$(MY_VAR=shell OTHER=o THIRD=t submit_id --env MY_VAR=flag \
        --export=MY_VAR,SET=x,OTHER -- \
        sh -c "echo var=\$MY_VAR other=\$OTHER set=\$SET third=\${THIRD-unset}") &&
    wait_job_state $id SUCCEEDED 30 &&
    ls_cli logs $id | grep -qx "var=flag other=o set=x third=unset" &&
    test "$(ls_cli show $id --json | jget "sorted(j[\"env\"])")" = \
        "[\"MY_VAR\", \"OTHER\", \"SET\"]"
'

test_expect_success 'bad --export values are usage errors naming the problem' '
    ls_cli submit --export=LOCKSTEP_TOKEN -- true 2>err; rc=$?; cat err &&
    test $rc = 2 && grep -q "LOCKSTEP_TOKEN never travels" err &&
    ls_cli submit --export=NO_SUCH_VAR_T2005 -- true 2>err; rc=$?; cat err &&
    test $rc = 2 && grep -q "NO_SUCH_VAR_T2005 is not set" err &&
    ls_cli submit --export=NONE,PATH -- true 2>err; rc=$?; cat err &&
    test $rc = 2 && grep -q NONE err
'

test_expect_success 'an environment over the limits is refused, naming the limit' '
    big=$(head -c 40000 /dev/zero | tr "\0" x) &&
    BIG_T2005=$big ls_cli submit -- true 2>err; rc=$?; cat err &&
    test $rc = 2 && grep -q "BIG_T2005 is 40000 bytes, over the 32768" err &&
    (for i in $(seq 1 300); do export "MANY_T2005_$i=1"; done
     ls_cli submit -- true) 2>err; rc=$?; cat err &&
    test $rc = 2 && grep -q "more than the 256" err && grep -q -- --export err
'

TORCH_VARS='for k in RANK WORLD_SIZE GROUP_RANK GROUP_WORLD_SIZE ROLE_RANK \
    ROLE_WORLD_SIZE ROLE_NAME LOCAL_WORLD_SIZE TORCHELASTIC_RESTART_COUNT \
    TORCHELASTIC_MAX_RESTARTS TORCHELASTIC_RUN_ID OMP_NUM_THREADS; do
    eval "echo $k=\${$k-unset}"; done
[ "$LOCKSTEP_ATTEMPT" = 1 ] || exit 0
touch "$BARRIER/$RANK"
while [ "$(ls "$BARRIER" | wc -l)" -lt 4 ]; do sleep 0.1; done
exit 1'

# Attempt 1 fails only once every rank has printed (a rank that fails
# first has the others stopped, perhaps before they print).
BARRIER=$TEST_DIR/barrier
mkdir -p "$BARRIER"

# torch_want R ID COUNT: the torchrun variables rank R of a 2x2 job
# should print.
torch_want() {
    printf "%s\n" "RANK=$1" WORLD_SIZE=4 "GROUP_RANK=$(($1 / 2))" \
        GROUP_WORLD_SIZE=2 "ROLE_RANK=$1" ROLE_WORLD_SIZE=4 ROLE_NAME=default \
        LOCAL_WORLD_SIZE=2 "TORCHELASTIC_RESTART_COUNT=$3" \
        TORCHELASTIC_MAX_RESTARTS=1 "TORCHELASTIC_RUN_ID=$2" OMP_NUM_THREADS=1
}

test_expect_success 'ranks get the torchrun variables; a restart counts' '
    id=$(env -u OMP_NUM_THREADS "$CLI" submit --json --nodes 2 \
        --ranks-per-node 2 --max-restarts 1 --env BARRIER="$BARRIER" \
        -- sh -c "$TORCH_VARS" |
        jget "j[\"id\"]") &&
    wait_job_state $id SUCCEEDED 60 &&
    test "$(job_json $id "j[\"attempt\"]")" = 2 &&
    for r in 0 1 2 3; do
        ls_cli logs $id --rank $r --attempt 1 >a1-$r &&
        ls_cli logs $id --rank $r --attempt 2 >a2-$r &&
        torch_want $r $id 0 | diff - a1-$r &&
        torch_want $r $id 1 | diff - a2-$r || return 1
    done
'

test_expect_success 'OMP_NUM_THREADS: the job'"'"'s value wins; one rank per node gets none' '
    id=$(OMP_NUM_THREADS=3 submit_id --ranks-per-node 2 -- \
        sh -c "echo omp=\$OMP_NUM_THREADS") &&
    id1=$(env -u OMP_NUM_THREADS "$CLI" submit --json --nodes 2 -- \
        sh -c "echo omp=\${OMP_NUM_THREADS-unset}" | jget "j[\"id\"]") &&
    wait_job_state $id SUCCEEDED 30 && wait_job_state $id1 SUCCEEDED 30 &&
    test "$(ls_cli logs $id | grep -c "omp=3")" = 2 &&
    test "$(ls_cli logs $id1 | grep -c "omp=unset")" = 2
'

test_done
