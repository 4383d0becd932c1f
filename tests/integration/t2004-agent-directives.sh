#!/bin/bash
# t2004: the control file through which the agent passes gc and checkpoint
# directives to the ranks (docs/cadence.md). Every rank of an attempt gets
# LOCKSTEP_CONTROL_FILE: the agent's <state_dir>/jobs/<job>.<attempt>/
# sdk/control, a valid 4096-byte control file of that attempt that exists
# before the ranks start; a kill -9'd and restarted agent adopts it as it
# is (same file, nothing reset), so the running ranks' mappings stay good.
# Then a job with a GC cadence: the scheduler posts gc directives, the
# agent writes them to the control file, the ranks carry them out at their
# step and acknowledge them in their progress files, and the scheduler
# marks them done. The ranks read the file with Python's mmap and struct
# only, by the layout in common/ctlfile.h (not through the SDK).
. "$(dirname "$0")/../lib/harness.sh"

cat >"$TEST_DIR/rank.py" <<'PY'
import json, mmap, os, struct, sys, time

out = sys.argv[1]
rank = os.environ["RANK"]
path = os.environ.get("LOCKSTEP_CONTROL_FILE", "")


def header(m):
    magic, version, nslots, attempt, gen = struct.unpack_from("=8sIIQQ", m, 0)
    return {"magic": magic.decode("latin-1"), "version": version,
            "nslots": nslots, "attempt": attempt,
            "marker": struct.unpack_from("=Q", m, 32)[0]}


def report(name, rec):
    with open(f"{out}/{name}.tmp", "w") as f:
        json.dump(rec, f)
    os.rename(f"{out}/{name}.tmp", f"{out}/{name}")


st = os.stat(path)
fd = os.open(path, os.O_RDONLY)
m = mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ)
os.close(fd)
rec = header(m)
rec.update(path=path, size=st.st_size, ino=st.st_ino,
           attempt_env=int(os.environ["LOCKSTEP_ATTEMPT"]),
           gc_managed=os.environ.get("LOCKSTEP_GC_MANAGED"))
report(f"rank-{rank}.json", rec)
# Through its own mapping, when asked: what the file holds now.
while not os.path.exists(f"{out}/stop"):
    if os.path.exists(f"{out}/check") and \
            not os.path.exists(f"{out}/rank-{rank}.after.json"):
        report(f"rank-{rank}.after.json", header(m))
    time.sleep(0.1)
PY

# A rank that steps every 30 ms, reports its step in its progress file,
# and carries out the directives of its control file as the SDK would:
# once each, at the first step >= the directive's step, acknowledged in
# the progress file's "acks". It records what it did in out2/rank-<r>.json.
cat >"$TEST_DIR/cad.py" <<'PY'
import json, mmap, os, struct, sys, time

out = sys.argv[1]
rank = os.environ["RANK"]
attempt = int(os.environ["LOCKSTEP_ATTEMPT"])
prog = os.environ["LOCKSTEP_PROGRESS_FILE"]
fd = os.open(os.environ["LOCKSTEP_CONTROL_FILE"], os.O_RDONLY)
m = mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ)
os.close(fd)


def pending():
    magic, version, nslots, att, gen = struct.unpack_from("=8sIIQQ", m, 0)
    if magic != b"LSCTL001" or version != 1 or att != attempt:
        return []
    found = []
    for i in range(nslots):
        s1, kind, _, step, check = struct.unpack_from("=QIIqQ", m, 64 + 32 * i)
        s2 = struct.unpack_from("=Q", m, 64 + 32 * i)[0]
        if s1 != 0 and s1 == s2 == check:
            found.append((s1, kind, step))
    return found


acks, done = [], {}
rec = {"gc_managed": os.environ.get("LOCKSTEP_GC_MANAGED"), "acted": done}
step = 0
while not os.path.exists(f"{out}/stop") and step < 5000:
    step += 1
    for seq, kind, at in pending():
        if str(seq) not in done and step >= at:
            done[str(seq)] = [kind, at, step]
            acks = (acks + [[seq, step, 1]])[-32:]
    with open(prog + ".tmp", "w") as f:
        json.dump({"step": step, "time_ms": int(time.time() * 1000),
                   "attempt": attempt, "pid": os.getpid(), "acks": acks}, f)
    os.rename(prog + ".tmp", prog)
    with open(f"{out}/rank-{rank}.json.tmp", "w") as f:
        json.dump(rec, f)
    os.rename(f"{out}/rank-{rank}.json.tmp", f"{out}/rank-{rank}.json")
    time.sleep(0.03)
PY

# rec FILE EXPR: a field of a rank's record.
rec() {
    jget "$2" <"out/$1"
}

start_scheduler
start_agent n1
mkdir "$TEST_DIR/out"

test_expect_success 'node comes up' 'wait_nodes_up 1'

test_expect_success 'a 2-rank job starts and its ranks map the control file' '
    id=$(submit_id --ranks-per-node 2 -- $PY "$TEST_DIR/rank.py" \
        "$TEST_DIR/out") && echo $id >job &&
    wait_job_state $id RUNNING 20 &&
    wait_for 20 "test -s out/rank-0.json && test -s out/rank-1.json"
'

test_expect_success 'LOCKSTEP_CONTROL_FILE is the attempt directory'"'"'s sdk/control' '
    want="$TEST_DIR/agent-n1/state/jobs/$(cat job).1/sdk/control" &&
    test "$(rec rank-0.json "j[\"path\"]")" = "$want" &&
    test "$(rec rank-1.json "j[\"path\"]")" = "$want" &&
    test "$(stat -c %s "$want")" = 4096
'

test_expect_success 'it is a valid control file of attempt 1' '
    for r in 0 1; do
        test "$(rec rank-$r.json "j[\"magic\"]")" = LSCTL001 &&
        test "$(rec rank-$r.json "j[\"version\"]")" = 1 &&
        test "$(rec rank-$r.json "j[\"nslots\"]")" = 32 &&
        test "$(rec rank-$r.json "j[\"size\"]")" = 4096 &&
        test "$(rec rank-$r.json "j[\"attempt\"]")" = 1 &&
        test "$(rec rank-$r.json "j[\"attempt_env\"]")" = 1 &&
        test "$(rec rank-$r.json "j[\"gc_managed\"]")" = None || return 1
    done
'

test_expect_success 'kill -9 the agent and restart it: the job is adopted' '
    ctl=$(rec rank-0.json "j[\"path\"]") &&
    ino=$(stat -c %i "$ctl") && echo $ino >ino &&
    $PY -c "
import mmap, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 4096)
struct.pack_into(\"=Q\", m, 32, 0x5eed)
m.close()
" "$ctl" &&
    kill_agent n1 &&
    start_agent n1 &&
    wait_for 20 "grep -q \"job=$(cat job) attempt=1 adopted supervisor\" agent-n1/log" &&
    wait_nodes_up 1 &&
    job_state_is $(cat job) RUNNING
'

test_expect_success 'the restarted agent keeps the same file, as it was' '
    ctl=$(rec rank-0.json "j[\"path\"]") &&
    test "$(stat -c %i "$ctl")" = "$(cat ino)" &&
    test "$(stat -c %s "$ctl")" = 4096 &&
    ! grep -q "cannot open control file" agent-n1/log &&
    touch out/check &&
    wait_for 20 "test -s out/rank-0.after.json && test -s out/rank-1.after.json" &&
    for r in 0 1; do
        test "$(rec rank-$r.after.json "j[\"magic\"]")" = LSCTL001 &&
        test "$(rec rank-$r.after.json "j[\"attempt\"]")" = 1 &&
        test "$(rec rank-$r.after.json "j[\"marker\"]")" = $((0x5eed)) ||
            return 1
    done
'

test_expect_success 'the job then ends normally' '
    touch out/stop &&
    wait_job_state $(cat job) SUCCEEDED 30
'

# done_gc JOB: the gc directives of the job's attempt 1 that are done.
done_gc() {
    ls_cli show "$1" --json |
        jget "[d for d in j[\"attempts\"][0][\"directives\"] if d[\"kind\"] == \"gc\" and d[\"done_ms\"] > 0]"
}

test_expect_success 'a GC cadence: the scheduler posts gc directives, the ranks carry them out' '
    mkdir out2 &&
    id=$(submit_id --ranks-per-node 2 --gc-every 20steps -- $PY \
        "$TEST_DIR/cad.py" "$TEST_DIR/out2") && echo $id >job2 &&
    wait_job_state $id RUNNING 20 &&
    wait_for 60 "test \"\$(done_gc $id)\" != \"[]\"" &&
    done_gc $id >done.json && cat done.json &&
    grep -q "job=$id attempt=1 directive seq=.* kind=gc step=.* posted to the ranks" agent-n1/log
'

test_expect_success 'both ranks acted on each done directive at or after its step' '
    for r in 0 1; do
        test "$(jget "j[\"gc_managed\"]" <out2/rank-$r.json)" = 1 &&
        jget "all(str(d[\"seq\"]) in __import__(\"json\").load(open(\"out2/rank-$r.json\"))[\"acted\"] for d in j)" <done.json >ok-$r &&
        test "$(cat ok-$r)" = True &&
        jget "all(a[2] >= a[1] and a[0] == 1 for a in __import__(\"json\").load(open(\"out2/rank-$r.json\"))[\"acted\"].values())" <done.json >at-$r &&
        test "$(cat at-$r)" = True || return 1
    done &&
    touch out2/stop &&
    wait_job_state $(cat job2) SUCCEEDED 30
'

test_done
