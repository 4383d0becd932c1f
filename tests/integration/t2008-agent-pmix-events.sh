#!/bin/bash
# t2008: the cadence reaches PMIx clients as PMIx events. A 2-rank job of
# PMIx clients (tests/helpers/pmix_events.c, with liblockstep) run with
# --gc-every/--checkpoint-every step counts: every rank gets, once, an
# event for every gc and checkpoint directive of `lockstep show --json`,
# with its code, kind, step, seq and attempt; a rank that registers its
# handler only after it acted on the first directive (from the control
# file) still gets that directive's event (libpmix's cache); an Open MPI
# rank (MPI_Init, MPI_Allreduce) whose handler passes the event on is not
# aborted (PMIX_EVENT_NON_DEFAULT); LOCKSTEP_PMIX=0 gets no event (the
# control file alone); ranks that a root agent with run_as_submitter runs
# as `nobody` get PMIX_MCA_gds=hash (no "PMIX ERROR" from the root-owned
# shared-memory store) and their events.
# Skipped without the PMIx headers (or a build without libpmix); the MPI
# case without mpicc.
. "$(dirname "$0")/../lib/harness.sh"

if ! pkg-config --exists pmix || ! command -v cc >/dev/null 2>&1 ||
    ! grep -q "LOCKSTEP_HAVE_PMIX 1" "$BUILD_DIR/version.h"; then
    echo "ok 1 # SKIP cc, the PMIx headers or libpmix missing (make deps installs them)"
    echo "1..1"
    exit 0
fi

fault_cluster 1

# skip_case WHY: a case this machine cannot run, counted as skipped.
skip_case() {
    test_count=$((test_count + 1))
    echo "ok $test_count # SKIP $1"
}

# The sanitizers of this build (b_sanitize): a sanitized liblockstep needs
# its user built the same way, or the ASan runtime does not come first and
# every rank aborts at start.
SANITIZE=$("$PY" -c 'import json, sys
print(next(o["value"] for o in json.load(open(sys.argv[1]))
           if o["name"] == "b_sanitize"))' \
    "$BUILD_DIR/meson-info/intro-buildoptions.json" 2>/dev/null)
# Such ranks check no leaks at exit: libpmix and Open MPI leave theirs
# (liblockstep's own are checked by test_liblockstep under the same build).
SAN_FLAGS=() RANK_ENV=()
case $SANITIZE in
"" | none) ;;
*)
    SAN_FLAGS=(-fsanitize="$SANITIZE")
    RANK_ENV=(--env "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
    ;;
esac

# build_events CC OUT [FLAGS...]: the helper, linked to this build's
# liblockstep (with this build's sanitizers).
build_events() {
    local cc=$1 out=$2
    shift 2
    $cc -Wall "${SAN_FLAGS[@]}" -o "$out" \
        "$SRC_DIR/tests/helpers/pmix_events.c" "$@" \
        -I"$SRC_DIR/sdk/c" -L"$BUILD_DIR/sdk/c" -llockstep \
        -Wl,-rpath,"$BUILD_DIR/sdk/c" $(pkg-config --cflags --libs pmix) \
        -lpthread
}

# events_ok ID [RANKS]: every rank's events are exactly one per gc and
# checkpoint directive the job's attempt 1 has (the show --json list,
# which holds the newest 16: the jobs here stay below), with its kind,
# step, seq and attempt, and the right code; each rank acted on them.
events_ok() {
    local id=$1 nranks=${2:-2} r
    ls_cli show "$id" --json >"$id.json" || return 1
    for r in $(seq 0 $((nranks - 1))); do
        ls_cli logs "$id" --rank "$r" >"$id.rank-$r.out" || return 1
    done
    "$PY" - "$id" "$nranks" <<'EOF'
import json, re, sys
jid, nranks = sys.argv[1], int(sys.argv[2])
j = json.load(open(jid + ".json"))
att = j["attempts"][0]
ds = [d for d in att["directives"] if d["kind"] in ("gc", "checkpoint")]
assert 0 < len(ds) < 16, ds
want = sorted((d["kind"], d["step"], d["seq"]) for d in ds)
code = {"checkpoint": -3101, "gc": -3102}
ev = re.compile(r"event code=(-?\d+) kind=(\w+) step=(-?\d+) seq=(\d+) "
                r"attempt=(\d+) source=(\S+)$")
for r in range(nranks):
    got = []
    for line in open("%s.rank-%d.out" % (jid, r)):
        m = ev.match(line.strip())
        if not m:
            continue
        c, kind, step, seq, a, src = m.groups()
        assert int(c) == code[kind], line
        assert int(a) == 1 and src == "%s.1" % jid, line
        got.append((kind, int(step), int(seq)))
    # Once each (no duplicate although the launch repeats them), and
    # none that is not a directive of the attempt.
    assert sorted(got) == want, (r, sorted(got), want)
print("%d directives, each an event on every rank: %s" % (len(want), want))
EOF
}

test_expect_success 'the PMIx event helpers compile' '
    build_events cc pmix_events
'

test_expect_success 'every rank gets one event per gc and checkpoint directive' '
    mkdir -p ck1 &&
    id=$(submit_id "${RANK_ENV[@]}" --nodes 1 --ranks-per-node 2 --gc-every 40steps \
        --checkpoint-every 100steps --checkpoint-dir "$TEST_DIR/ck1" \
        --workdir "$TEST_DIR" -- ./pmix_events 320 20) &&
    echo $id >plain.id &&
    wait_job_state $id SUCCEEDED 90 &&
    events_ok $id &&
    grep -q "job=$id attempt=1 directive seq=1 kind=.* notified as PMIx event" \
        "$TEST_DIR"/agent-n1/log
'

test_expect_success 'each rank acted (control file) at the steps the events named' '
    id=$(cat plain.id) &&
    want=$(jget "sorted(set(d[\"step\"] for d in j[\"attempts\"][0][\"directives\"] if d[\"step\"] < 320))" <$id.json) &&
    echo "directive steps within the run: $want" &&
    test "$want" != "[]" &&
    for r in 0 1; do
        got=$(sed -n "s/^act step=\([0-9]*\) .*/\1/p" $id.rank-$r.out |
            "$PY" -c "import sys; print(sorted(set(int(x) for x in sys.stdin)))") &&
        test "$got" = "$want" || return 1
    done &&
    test "$(jget "all(d[\"done_ms\"] > 0 for d in j[\"attempts\"][0][\"directives\"] if d[\"step\"] < 320)" <$id.json)" = True
'

test_expect_success 'a rank registering its handler late still gets the cached event' '
    mkdir -p ck2 &&
    id=$(submit_id "${RANK_ENV[@]}" --nodes 1 --ranks-per-node 2 --gc-every 40steps \
        --checkpoint-every 100steps --checkpoint-dir "$TEST_DIR/ck2" \
        --workdir "$TEST_DIR" -- ./pmix_events 220 20 late) &&
    wait_job_state $id SUCCEEDED 90 &&
    events_ok $id &&
    reg=$(sed -n "s/^registered at step //p" $id.rank-1.out) &&
    first=$(jget "min(d[\"step\"] for d in j[\"attempts\"][0][\"directives\"])" <$id.json) &&
    echo "rank 1 registered at step $reg, the first directive was at step $first" &&
    test "$reg" -ge "$first"
'

test_expect_success 'LOCKSTEP_PMIX=0: the control file alone, no event' '
    id=$(submit_id "${RANK_ENV[@]}" --nodes 1 --ranks-per-node 1 --gc-every 40steps \
        --env LOCKSTEP_PMIX=0 --workdir "$TEST_DIR" -- \
        ./pmix_events 160 20) &&
    wait_job_state $id SUCCEEDED 60 &&
    ls_cli logs $id --rank 0 >off.out &&
    grep -qx "no PMIx server" off.out &&
    grep -q "^act step=" off.out &&
    ! grep -q "^event" off.out &&
    ! grep -q "job=$id attempt=1 directive seq=.* notified as PMIx event" \
        "$TEST_DIR"/agent-n1/log
'

if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 &&
    getent passwd nobody >/dev/null; then
test_expect_success 'ranks running as their submitter (nobody) get the events too' '
    chmod 0711 "$TEST_DIR" && chmod 0755 pmix_events &&
    ls_cli cordon n1 --reason "n2 runs ranks as their submitter" &&
    start_agent n2 -o run_as_submitter=true && wait_nodes_up 1 &&
    mkdir -p ck5 && chmod 0777 ck5 &&
    id=$(setpriv --reuid=65534 --regid=65534 --clear-groups -- \
        "$CLI" submit --json "${RANK_ENV[@]}" --nodes 1 --ranks-per-node 2 --gc-every 40steps \
        --checkpoint-every 100steps --checkpoint-dir "$TEST_DIR/ck5" \
        --workdir "$TEST_DIR" -- ./pmix_events 220 20 | jget "j[\"id\"]") &&
    wait_job_state $id SUCCEEDED 90 &&
    events_ok $id &&
    for r in 0 1; do
        grep -x "uid=65534 PMIX_MCA_gds=hash PMIX_GDS_MODULE=.*" \
            $id.rank-$r.out || return 1
        # Without the hash store: "PMIX ERROR: ... gds_ds12_lock_pthread.c"
        ls_cli logs $id --rank $r --stream err >nobody.err &&
        cat nobody.err &&
        ! grep -q "PMIX ERROR" nobody.err || return 1
    done &&
    ls_cli uncordon n1
'
else
    skip_case "not root, or no setpriv or user nobody: the run_as_submitter case"
fi

if command -v mpicc >/dev/null 2>&1; then
test_expect_success 'an Open MPI rank passing the event on is not aborted' '
    build_events mpicc mpi_events -DWITH_MPI &&
    mkdir -p ck4 &&
    id=$(submit_id "${RANK_ENV[@]}" --nodes 1 --ranks-per-node 2 --max-restarts 0 \
        --gc-every 40steps --checkpoint-every 100steps \
        --checkpoint-dir "$TEST_DIR/ck4" --workdir "$TEST_DIR" -- \
        ./mpi_events 320 20) &&
    wait_job_state $id SUCCEEDED 90 &&
    events_ok $id &&
    grep -qx "rank 0 of 2 sum 2" $id.rank-0.out &&
    grep -qx "rank 1 of 2 sum 2" $id.rank-1.out &&
    ! grep -q "called abort\|MPI_Abort" "$TEST_DIR"/agent-n1/log
'
else
    skip_case "mpicc missing: the Open MPI case"
fi

test_done
