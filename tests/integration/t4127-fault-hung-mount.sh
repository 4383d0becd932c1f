#!/bin/bash
# t4127: a hung mount and a check stuck in the kernel (issue 9), with a
# real stuck statfs. tests/helpers/hung-fuse.py serves a FUSE file system
# whose statfs requests it reads and never answers: the caller waits in the
# kernel, and once SIGKILLed stays there in state D, as on a hard NFS mount
# whose server is gone. That is the one way found to block statfs for real
# without an NFS server (an unreachable NFS server in a network namespace
# needs the NFS client and a mount helper; a FIFO, a stopped process or a
# vfork()ed parent block open or wait, not statfs, and die of SIGKILL).
# It needs root and /dev/fuse (CI runs as root) and skips without them; the
# test runs in a mount namespace of its own (unshare -m), so the mount
# cannot outlive it.
#
# n1's disk check watches the hung mount and the test's own directory: the
# hung one is HUNG disk.hung scoped mount:<it>, which excludes n1 at once
# (a hard finding, not "check unreliable" after repeats), while the other
# mount still reports PASS; later runs start no second probe of the hung
# mount while the first is stuck. n2's site check statfs()es the hung mount
# itself: past its deadline it survives SIGTERM and SIGKILL, is HUNG
# check.hung (state D) and is not started again while it is stuck. Healing
# the mount ends both stuck processes: both checks run and pass again.
if [ -z "${LOCKSTEP_T4127_NS:-}" ]; then
    if [ "$(id -u)" = 0 ] && [ -c /dev/fuse ] && unshare -m true 2>/dev/null
    then
        LOCKSTEP_T4127_NS=1 exec unshare -m --propagation private \
            bash "$0" "$@"
    fi
    echo "ok 1 # SKIP needs root, /dev/fuse and unshare -m (a FUSE mount whose statfs hangs)"
    echo "1..1"
    exit 0
fi
. "$(dirname "$0")/../lib/harness.sh"

MNT=$TEST_DIR/nfs
SITE=$TEST_DIR/site
mkdir -p "$MNT" "$SITE"
# Unmounted before the harness removes the test directory, whatever
# happened; the helper's death (the harness kills it) unblocks whatever
# still waits on it.
trap 'umount -l "$MNT" 2>/dev/null; harness_cleanup' EXIT

"$PY" "$SRC_DIR/tests/helpers/hung-fuse.py" "$MNT" 2>>"$TEST_DIR/fuse.log" &
FUSE_PID=$!
EXTRA_PIDS+=($FUSE_PID)

# The site check is the process that calls statfs (exec): a shell around
# it would die of SIGTERM and leave only its child stuck.
cat >"$SITE/statfs" <<EOF
#!/bin/sh
# lockstep: interval=1s timeout=2s
echo \$\$ >>$TEST_DIR/statfs.pids
exec stat -f --printf '{"status":"PASS","code":"site.statfs","numbers":{"blocks":%b}}\n' "$MNT"
EOF
chmod +x "$SITE/statfs"


# codes NODE CHECK: "STATUS/code/scope" of each result of CHECK, sorted.
codes() {
    ls_cli node "$1" --json |
        jget "\" \".join(sorted(r[\"status\"] + \"/\" + r[\"code\"] + \"/\" + r[\"scope\"] for c in j.get(\"checks\", []) if c[\"check\"] == \"$2\" for r in c[\"results\"]))"
}
# result NODE CHECK FIELD: FIELD of CHECK's first result.
result() {
    ls_cli node "$1" --json |
        jget "[r for c in j.get(\"checks\", []) if c[\"check\"] == \"$2\" for r in c[\"results\"]][0][\"$3\"]"
}
run_of() { # run_of NODE CHECK: the check's latest run
    ls_cli node "$1" --json |
        jget "[c[\"run\"] for c in j.get(\"checks\", []) if c[\"check\"] == \"$2\"][0]"
}
# on_fuse PID: PID waits for an answer of the FUSE mount (its wait
# channel: request_wait_answer, or a fuse function where that is inlined).
on_fuse() {
    case $(cat /proc/$1/wchan 2>/dev/null) in
    request_wait_answer | *fuse*) return 0 ;;
    esac
    return 1
}
# stuck_on_mount: this test's processes in state D waiting on the mount.
stuck_on_mount() {
    local pid
    for pid in $(tagged_pids); do
        on_fuse $pid || continue
        [ "$(awk '{ sub(/.*\) /, ""); print $1 }' /proc/$pid/stat 2>/dev/null)" = D ] &&
            echo "$pid"
    done
    true
}

# A statfs of it waits for an answer; once the helper holds the request,
# SIGKILL leaves it waiting (state D) until the mount heals. Before the
# daemons start: the only statfs of the mount is this one.
test_expect_success 'the FUSE mount is up and its statfs hangs, unkillable' '
    wait_for 10 "test -e $MNT.ready" &&
    stat "$MNT" >/dev/null &&
    { stat -f "$MNT" >/dev/null 2>&1 & } &&
    p=$! && echo $p >probe.pid &&
    wait_for 20 "test -s $MNT.held" &&
    on_fuse $p &&
    kill -9 $p &&
    wait_for 10 "stuck_on_mount | grep -qx $p"
'

start_scheduler -o health_unreliable_repeats=1000
start_agent n1 -o health_checks=disk -o health_mounts="$MNT,$TEST_DIR" \
    -o health_interval_ms=1000 -o health_timeout_ms=4000
start_agent n2 -o health_checks= -o health_checks_dir="$SITE" \
    -o health_kill_grace_ms=500

test_expect_success 'disk: the hung mount is HUNG disk.hung; the other reports' '
    wait_for 20 "test -n \"\$(codes n1 disk)\"" &&
    codes n1 disk >c && cat c &&
    test "$(cat c)" = "HUNG/disk.hung/mount:$MNT PASS/disk.ok/mount:$TEST_DIR" &&
    grep -q "health check=disk run=1 status=HUNG code=disk.hung scope=mount:$MNT: $MNT: statfs did not return within 2000 ms" agent-n1/log
'

test_expect_success 'the hung mount excludes n1 at once, as a hard finding' '
    wait_for 10 "test \"\$(node_state n1)\" = UNHEALTHY" &&
    ls_cli node n1 --json | jget "j[\"reason\"]" >reason && cat reason &&
    grep -q "^health check failed: HUNG disk.hung mount:$MNT" reason
'

test_expect_success 'later runs start no second probe while the first is stuck' '
    r=$(run_of n1 disk) &&
    wait_for 20 "test \$(run_of n1 disk) -ge $((r + 3))" &&
    test "$(codes n1 disk)" = "HUNG/disk.hung/mount:$MNT PASS/disk.ok/mount:$TEST_DIR" &&
    result n1 disk evidence | grep -q "of an earlier run" &&
    test -s $TEST_DIR/agent-n1/state/health/disk-stuck &&
    pid=$(cut -d" " -f1 $TEST_DIR/agent-n1/state/health/disk-stuck) &&
    echo "stuck probe $pid" &&
    tr "\0" " " </proc/$pid/cmdline | grep -q "lockstep-check disk" &&
    for p in $(stuck_on_mount); do
        if tr "\0" " " </proc/$p/cmdline | grep -q "lockstep-check disk"; then
            echo $p
        fi
    done >disk-stuck && cat disk-stuck &&
    test "$(cat disk-stuck)" = "$pid"
'

test_expect_success 'a site check stuck in statfs is HUNG (state D)' '
    wait_for 20 "test \"\$(result n2 site:statfs status)\" = HUNG" &&
    test "$(result n2 site:statfs code)" = check.hung &&
    result n2 site:statfs evidence >ev && cat ev &&
    grep -q "survived SIGKILL (state D, wchan [a-z_]*)" ev &&
    pid=$(head -n 1 $TEST_DIR/statfs.pids) &&
    grep -q "^pid $pid " ev &&
    stuck_on_mount | grep -qx "$pid" &&
    wait_for 10 "test \"\$(node_state n2)\" = UNHEALTHY" &&
    ls_cli node n2 --json | jget "j[\"reason\"]" | grep -q "HUNG check.hung"
'

# Its interval is 1 s: in 4 s of n1 runs it would have started 3 times.
test_expect_success 'it is not started again while it is stuck' '
    r=$(run_of n1 disk) &&
    wait_for 20 "test \$(run_of n1 disk) -ge $((r + 4))" &&
    test "$(wc -l <$TEST_DIR/statfs.pids)" = 1 &&
    test "$(result n2 site:statfs status)" = HUNG &&
    pid=$(head -n 1 $TEST_DIR/statfs.pids) &&
    stuck_on_mount | grep -qx "$pid"
'

test_expect_success 'healed, the stuck processes end and both checks pass' '
    kill -USR1 $FUSE_PID &&
    wait_for 20 "test \"\$(codes n1 disk)\" = \"PASS/disk.ok/mount:$TEST_DIR PASS/disk.ok/mount:$MNT\"" &&
    ! test -e $TEST_DIR/agent-n1/state/health/disk-stuck &&
    wait_for 20 "test \"\$(result n2 site:statfs status)\" = PASS" &&
    test "$(wc -l <$TEST_DIR/statfs.pids)" -ge 2 &&
    test "$(result n2 site:statfs code)" = site.statfs &&
    { wait $(cat probe.pid) || true; } && test -z "$(stuck_on_mount)"
'

test_expect_success 'the mount goes' '
    kill -TERM $FUSE_PID && wait $FUSE_PID &&
    ! grep -q " $MNT " /proc/mounts
'

test_done
