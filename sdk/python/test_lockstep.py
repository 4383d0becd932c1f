"""Tests of the lockstep Python SDK: /usr/bin/python3 -m pytest test_lockstep.py

In-process tests set the LOCKSTEP_* variables with monkeypatch (the module
reads them at each call); what happens at import runs in a subprocess.
"""

import gc
import json
import mmap
import os
import shutil
import signal
import struct
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import lockstep  # noqa: E402

VARS = ("LOCKSTEP_PROGRESS_FILE", "LOCKSTEP_COMMIT_FILE", "LOCKSTEP_ATTEMPT",
        "LOCKSTEP_RESUME_STEP", "LOCKSTEP_RESUME_FROM",
        "LOCKSTEP_CHECKPOINT_DIR", "LOCKSTEP_JOB_ID",
        "LOCKSTEP_CONTROL_FILE", "LOCKSTEP_GC_MANAGED")


def _reset():
    lockstep._last_write = None
    lockstep._last_step = None
    lockstep._written_step = None
    lockstep._warned.clear()
    lockstep._cadence_reset()


@pytest.fixture
def outside(monkeypatch):
    for v in VARS:
        monkeypatch.delenv(v, raising=False)
    _reset()
    yield
    _reset()


@pytest.fixture
def inside(monkeypatch, tmp_path):
    sdk = tmp_path / "sdk"
    sdk.mkdir()
    env = {
        "LOCKSTEP_PROGRESS_FILE": str(sdk / "rank-0.progress"),
        "LOCKSTEP_COMMIT_FILE": str(sdk / "rank-0.ckpt"),
        "LOCKSTEP_ATTEMPT": "2",
        "LOCKSTEP_RESUME_STEP": "20",
        "LOCKSTEP_RESUME_FROM": "/ck/step-20",
        "LOCKSTEP_CHECKPOINT_DIR": "/ck",
        "LOCKSTEP_JOB_ID": "7",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    _reset()
    yield sdk
    _reset()


def progress(sdk):
    with open(sdk / "rank-0.progress") as f:
        return json.load(f)


def test_outside_lockstep_everything_is_a_noop(outside, tmp_path):
    os.chdir(tmp_path)
    lockstep.step(1)
    lockstep.step(2, force=True)
    lockstep.checkpoint_committed(2)
    assert lockstep.attempt() is None
    assert lockstep.resume_step() is None
    assert lockstep.resume_from() is None
    assert lockstep.checkpoint_dir() is None
    assert os.listdir(tmp_path) == []
    assert lockstep.DUMP_SIGNAL == signal.SIGUSR1


def test_accessors(inside):
    assert lockstep.attempt() == 2
    assert lockstep.resume_step() == 20
    assert lockstep.resume_from() == "/ck/step-20"
    assert lockstep.checkpoint_dir() == "/ck"


def test_fresh_start_has_no_resume(inside, monkeypatch):
    monkeypatch.setenv("LOCKSTEP_RESUME_STEP", "")
    monkeypatch.setenv("LOCKSTEP_RESUME_FROM", "")
    assert lockstep.resume_step() is None
    assert lockstep.resume_from() is None


def test_step_writes_an_atomic_record_of_the_attempt(inside):
    t0 = int(time.time() * 1000)
    lockstep.step(5)
    rec = progress(inside)
    assert rec["step"] == 5
    assert rec["attempt"] == 2
    assert rec["pid"] == os.getpid()
    assert t0 <= rec["time_ms"] <= int(time.time() * 1000)
    # Replaced by rename: no temporary file is left behind.
    assert sorted(os.listdir(inside)) == ["rank-0.progress"]


def test_step_is_rate_limited_unless_forced(inside):
    lockstep.step(1)
    lockstep.step(2)
    assert progress(inside)["step"] == 1
    lockstep.step(3, force=True)
    assert progress(inside)["step"] == 3
    time.sleep(lockstep.PROGRESS_INTERVAL + 0.02)
    lockstep.step(4)
    assert progress(inside)["step"] == 4


def test_step_is_cheap(inside):
    lockstep.step(0)
    t0 = time.perf_counter()
    for i in range(1, 100001):
        lockstep.step(i)
    per_call = (time.perf_counter() - t0) / 100000
    assert per_call < 20e-6, "%.1f us per step()" % (per_call * 1e6)


def test_step_takes_integer_like_values_only(inside):
    class Idx:
        def __index__(self):
            return 7

    lockstep.step(Idx(), force=True)
    assert progress(inside)["step"] == 7
    with pytest.raises(TypeError):
        lockstep.step(1.5)
    with pytest.raises(TypeError):
        lockstep.step(True)
    with pytest.raises(ValueError):
        lockstep.step(-1)


def test_checkpoint_committed_appends_and_forces_progress(inside):
    lockstep.step(9)
    lockstep.step(10)           # held back by the rate limit
    lockstep.checkpoint_committed(10)
    lockstep.checkpoint_committed(20)
    with open(inside / "rank-0.ckpt") as f:
        assert f.read() == "10 2\n20 2\n"
    assert progress(inside)["step"] == 10


def test_an_unwritable_directory_warns_once_and_never_raises(
        inside, monkeypatch, capsys):
    monkeypatch.setenv("LOCKSTEP_PROGRESS_FILE", "/nonexistent/dir/p")
    monkeypatch.setenv("LOCKSTEP_COMMIT_FILE", "/nonexistent/dir/c")
    lockstep.step(1, force=True)
    lockstep.step(2, force=True)
    lockstep.checkpoint_committed(2)
    err = capsys.readouterr().err
    assert err.count("cannot write progress file") == 1
    assert err.count("cannot write commit file") == 1


def _run(code, env):
    full = {k: v for k, v in os.environ.items() if k not in VARS}
    full.update(env)
    full["PYTHONPATH"] = HERE
    return subprocess.run([sys.executable, "-c", code], env=full,
                          capture_output=True, text=True, timeout=60)


def _run_rank(code, progress, attempt=1):
    """_run as a rank of `attempt`, writing its progress to `progress`."""
    return _run(code, {"LOCKSTEP_PROGRESS_FILE": str(progress),
                       "LOCKSTEP_ATTEMPT": str(attempt)})


def test_import_registers_the_dump_handler_and_announces_it(tmp_path):
    p = tmp_path / "rank-0.progress"
    r = _run_rank("import lockstep, os, signal\n"
                  "def train_loop():\n"
                  "    os.kill(os.getpid(), lockstep.DUMP_SIGNAL)\n"
                  "train_loop()\n"
                  "print('still alive')\n",
                  p, attempt=3)
    assert r.returncode == 0, r.stderr
    assert "still alive" in r.stdout
    assert "most recent call first" in r.stderr
    assert "train_loop" in r.stderr
    rec = json.loads(p.read_text())
    assert rec["step"] == -1 and rec["attempt"] == 3


def test_the_last_step_is_written_at_exit(tmp_path):
    p = tmp_path / "rank-0.progress"
    r = _run_rank("import lockstep\n"
                  "for i in range(1, 1000):\n"
                  "    lockstep.step(i)\n",
                  p)
    assert r.returncode == 0, r.stderr
    assert json.loads(p.read_text())["step"] == 999


def test_a_python_handler_still_runs_after_the_dump(tmp_path):
    p = tmp_path / "rank-0.progress"
    r = _run_rank("import os, signal\n"
                  "signal.signal(signal.SIGUSR1, lambda *a: print('mine'))\n"
                  "import lockstep\n"
                  "os.kill(os.getpid(), signal.SIGUSR1)\n",
                  p)
    assert r.returncode == 0, r.stderr
    assert "mine" in r.stdout
    assert "most recent call first" in r.stderr


def test_outside_lockstep_import_leaves_sigusr1_alone(tmp_path):
    r = _run("import lockstep\n"
             "for line in open('/proc/self/status'):\n"
             "    if line.startswith('SigCgt:'):\n"
             "        print(int(line.split()[1], 16) >> 9 & 1)\n",
             {})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0"


def test_an_existing_progress_file_is_not_reset_by_a_worker(tmp_path):
    p = tmp_path / "rank-0.progress"
    p.write_text('{"step": 42, "time_ms": 1, "attempt": 1, "pid": 1}')
    r = _run_rank("import lockstep\n", p)
    assert r.returncode == 0, r.stderr
    assert json.loads(p.read_text())["step"] == 42


# ---- cadence: directives in the control file (docs/cadence.md) -------------

GC, CHECKPOINT = 1, 2


class Ctl:
    """The agent's side of the control file, written exactly as
    common/ctlfile.c does (layout in common/ctlfile.h), through a shared
    mapping; test_the_layout_is_the_c_writers checks it against the C
    writer byte for byte."""

    def __init__(self, path, attempt):
        with open(path, "wb") as f:
            f.write(bytes(4096))
        fd = os.open(path, os.O_RDWR)
        self.m = mmap.mmap(fd, 4096)
        os.close(fd)
        struct.pack_into("IIQ", self.m, 8, 1, 32, attempt)
        self.m[0:8] = b"LSCTL001"

    def post(self, seq, kind, step):
        off = 64 + (seq - 1) % 32 * 32
        if struct.unpack_from("QIIqQ", self.m, off) == (seq, kind, 0, step,
                                                        seq):
            return
        struct.pack_into("Q", self.m, off, 0)
        struct.pack_into("IIqQ", self.m, off + 8, kind, 0, step, seq)
        struct.pack_into("Q", self.m, off, seq)
        gen = struct.unpack_from("Q", self.m, 24)[0]
        struct.pack_into("Q", self.m, 24, gen + 1)


@pytest.fixture
def ctl(inside, monkeypatch):
    """A rank of attempt 2 with a control file of attempt 2."""
    path = inside / "control"
    c = Ctl(path, 2)
    monkeypatch.setenv("LOCKSTEP_CONTROL_FILE", str(path))
    lockstep._cadence_setup()
    assert lockstep._ctl is not None
    return c


@pytest.fixture
def collections_run():
    """How many full collections ran (gc.callbacks)."""
    count = []

    def cb(phase, info):
        if phase == "stop" and info["generation"] == 2:
            count.append(1)

    gc.callbacks.append(cb)
    yield count
    gc.callbacks.remove(cb)


def test_no_control_file_means_no_action(inside):
    act = lockstep.step(1)
    assert not act
    assert act.gc is False and act.checkpoint is False
    assert repr(act) == "Action(gc=False, checkpoint=False)"


def test_outside_lockstep_step_returns_a_false_action(outside, tmp_path):
    os.chdir(tmp_path)
    act = lockstep.step(3)
    assert isinstance(act, lockstep.Action) and not act
    assert os.listdir(tmp_path) == []


def test_an_unmappable_control_file_warns_once(inside, monkeypatch, capsys):
    monkeypatch.setenv("LOCKSTEP_CONTROL_FILE", str(inside / "missing"))
    lockstep._cadence_setup()
    lockstep._cadence_setup()
    assert not lockstep.step(1)
    err = capsys.readouterr().err
    assert err.count("cannot map control file") == 1


def test_gc_directive_runs_at_its_step_and_is_acked(ctl, inside,
                                                     collections_run):
    lockstep.step(1)
    ctl.post(1, GC, 5)
    assert not lockstep.step(4)
    assert collections_run == []
    assert "acks" not in progress(inside)
    act = lockstep.step(5)
    assert act and act.gc and not act.checkpoint
    assert repr(act) == "Action(gc=True, checkpoint=False)"
    assert len(collections_run) == 1
    # Written at once, though step(4) was less than 100 ms ago.
    rec = progress(inside)
    assert rec["step"] == 5
    assert len(rec["acks"]) == 1
    seq, at, ms = rec["acks"][0]
    assert (seq, at) == (1, 5) and isinstance(ms, int) and ms >= 0
    # A duplicate (the same seq, seen again after gen moved) is not re-run.
    ctl.post(2, CHECKPOINT, 1000)
    assert not lockstep.step(6)
    assert len(collections_run) == 1
    assert len(progress(inside)["acks"]) == 1


def test_a_directive_the_rank_is_already_past_is_late(ctl, inside,
                                                      collections_run):
    for i in range(11):
        lockstep.step(i)
    ctl.post(4, GC, 3)
    act = lockstep.step(11)
    assert act.gc and len(collections_run) == 1
    assert [a[:2] for a in progress(inside)["acks"]] == [[4, 11]]
    assert not lockstep.step(12)


def test_another_attempts_control_file_is_ignored(inside, monkeypatch,
                                                  collections_run):
    path = inside / "control"
    c = Ctl(path, 1)                      # the rank is of attempt 2
    monkeypatch.setenv("LOCKSTEP_CONTROL_FILE", str(path))
    lockstep._cadence_setup()
    c.post(1, GC, 2)
    c.post(2, CHECKPOINT, 2)
    for i in range(5):
        assert not lockstep.step(i)
    assert collections_run == []
    # Made anew for this attempt (as ctlfile_open does): now it counts.
    c = Ctl(path, 2)
    c.post(1, GC, 2)
    assert lockstep.step(5).gc and len(collections_run) == 1


def test_checkpoint_is_acked_when_committed(ctl, inside, collections_run):
    ctl.post(3, CHECKPOINT, 7)
    assert not lockstep.step(6)
    act = lockstep.step(7)
    assert act.checkpoint and not act.gc and collections_run == []
    assert "acks" not in progress(inside)
    assert not lockstep.step(8)          # returned once
    time.sleep(0.03)
    lockstep.checkpoint_committed(6)     # not the directive's step
    assert "acks" not in progress(inside)
    lockstep.checkpoint_committed(7)
    rec = progress(inside)
    assert rec["step"] == 8
    seq, at, ms = rec["acks"][0]
    assert (seq, at) == (3, 7) and 30 <= ms < 10000
    with open(inside / "rank-0.ckpt") as f:
        assert f.read() == "6 2\n7 2\n"
    lockstep.checkpoint_committed(7)     # acked once
    assert len(progress(inside)["acks"]) == 1


def test_directives_due_together(ctl, inside, collections_run):
    ctl.post(1, GC, 4)
    ctl.post(2, GC, 5)
    ctl.post(3, CHECKPOINT, 5)
    lockstep.step(0)
    assert lockstep.step(9) == lockstep.Action(gc=True, checkpoint=True)
    assert len(collections_run) == 1     # one collection serves both
    assert [a[:2] for a in progress(inside)["acks"]] == [[1, 9], [2, 9]]
    lockstep.checkpoint_committed(9)
    assert [a[:2] for a in progress(inside)["acks"]] == [[1, 9], [2, 9],
                                                         [3, 9]]


def test_only_the_newest_acks_are_kept(ctl, inside):
    for seq in range(1, 41):
        ctl.post(seq, GC, seq)
        lockstep.step(seq)
    acks = progress(inside)["acks"]
    assert len(acks) == lockstep.ACKS_MAX == 32
    assert acks[0][0] == 9 and acks[-1][:2] == [40, 40]


def test_a_torn_slot_is_not_trusted(ctl, inside, collections_run):
    # A slot being written (check != seq) is skipped; the generation moved
    # so the next step reads again.
    off = 64
    struct.pack_into("QIIqQ", ctl.m, off, 1, GC, 0, 2, 0)
    struct.pack_into("Q", ctl.m, 24, 1)
    assert not lockstep.step(3)
    struct.pack_into("Q", ctl.m, off + 24, 1)
    struct.pack_into("Q", ctl.m, 24, 2)
    assert lockstep.step(4).gc


def test_step_is_cheap_with_a_control_file(ctl):
    ctl.post(1, GC, 10 ** 9)
    lockstep.step(0)
    t0 = time.perf_counter()
    for i in range(1, 100001):
        lockstep.step(i)
    per_call = (time.perf_counter() - t0) / 100000
    assert per_call < 20e-6, "%.1f us per step()" % (per_call * 1e6)


def test_step_time_percentiles(inside):
    lockstep.step(0, force=True)
    rec = progress(inside)
    assert "step_p50_us" not in rec and "step_p99_us" not in rec
    for i in range(1, 10):
        time.sleep(0.002 if i < 9 else 0.05)
        lockstep.step(i, force=True)
    rec = progress(inside)
    assert 2000 <= rec["step_p50_us"] < 40000
    assert rec["step_p99_us"] >= 50000
    assert isinstance(rec["step_p50_us"], int)


def test_percentiles_are_nearest_rank():
    assert lockstep._percentiles([3.0, 1.0]) == (1, 3)
    assert lockstep._percentiles(list(range(1, 201))) == (100, 198)


def test_action_is_immutable(outside):
    with pytest.raises(AttributeError):
        lockstep.step(0).gc = True


def _control(tmp_path, attempt, posts):
    c = Ctl(tmp_path / "control", attempt)
    for p in posts:
        c.post(*p)
    return c


def test_the_layout_is_the_c_writers(tmp_path):
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    root = os.path.dirname(os.path.dirname(HERE))
    src = tmp_path / "w.c"
    src.write_text(
        '#include <stdlib.h>\n#include "common/ctlfile.h"\n'
        "int main(int argc, char **argv) {\n"
        "    struct ctlfile *cf;\n"
        "    if (ctlfile_open(argv[1], 5, &cf) < 0) return 1;\n"
        "    for (int i = 2; i + 2 < argc; i += 3)\n"
        "        ctlfile_post(cf, strtoull(argv[i], 0, 10),\n"
        "            atoi(argv[i + 1]), atoll(argv[i + 2]));\n"
        "    ctlfile_close(cf);\n    return 0;\n}\n")
    exe = tmp_path / "w"
    subprocess.run([cc, "-std=c11", "-D_GNU_SOURCE", "-I", root, "-o", str(exe), str(src),
                    os.path.join(root, "common", "ctlfile.c")], check=True)
    posts = [(1, GC, 120), (2, CHECKPOINT, 150), (2, CHECKPOINT, 150),
             (34, GC, -7)]
    subprocess.run([str(exe), str(tmp_path / "c-control")] +
                   [str(x) for p in posts for x in p], check=True)
    _control(tmp_path, 5, posts).m.flush()
    assert (tmp_path / "control").read_bytes() == \
        (tmp_path / "c-control").read_bytes()


def test_managed_gc_is_off_at_import_and_frozen_after_the_first(tmp_path):
    _control(tmp_path, 1, [(1, GC, 3)])
    code = ("import gc, os, sys, lockstep\n"
            "print(gc.isenabled(), gc.get_freeze_count() == 0)\n"
            "for i in range(5):\n"
            "    act = lockstep.step(i)\n"
            "    if act: print(i, act)\n"
            "print(gc.isenabled(), gc.get_freeze_count() > 0)\n"
            "sys.stdout.flush()\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    print('child', gc.isenabled()); sys.stdout.flush()\n"
            "    os._exit(0)\n"
            "os.waitpid(pid, 0)\n")
    env = {"LOCKSTEP_PROGRESS_FILE": str(tmp_path / "rank-0.progress"),
           "LOCKSTEP_ATTEMPT": "1",
           "LOCKSTEP_CONTROL_FILE": str(tmp_path / "control"),
           "LOCKSTEP_GC_MANAGED": "1"}
    r = _run(code, env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:4] == [
        "False True", "3 Action(gc=True, checkpoint=False)", "False True",
        "child True"]
    # Unset: the interpreter's GC is left as it is.
    del env["LOCKSTEP_GC_MANAGED"]
    (tmp_path / "rank-0.progress").unlink()
    r = _run(code, env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:3] == [
        "True True", "3 Action(gc=True, checkpoint=False)", "True False"]


def test_a_worker_keeps_its_automatic_gc(tmp_path):
    p = tmp_path / "rank-0.progress"
    p.write_text('{"step": 42, "time_ms": 1, "attempt": 1, "pid": 1}')
    r = _run("import gc, lockstep\nprint(gc.isenabled())\n",
             {"LOCKSTEP_PROGRESS_FILE": str(p), "LOCKSTEP_ATTEMPT": "1",
              "LOCKSTEP_GC_MANAGED": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"


def test_a_rank_started_late_finds_every_pending_directive(tmp_path):
    _control(tmp_path, 1, [(1, GC, 2), (2, CHECKPOINT, 4), (3, GC, 9)])
    r = _run_rank_ctl("import lockstep\n"
                      "for i in range(6):\n"
                      "    act = lockstep.step(i)\n"
                      "    if act: print(i, act)\n"
                      "lockstep.checkpoint_committed(4)\n",
                      tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == [
        "2 Action(gc=True, checkpoint=False)",
        "4 Action(gc=False, checkpoint=True)"]
    acks = json.loads((tmp_path / "rank-0.progress").read_text())["acks"]
    assert [a[:2] for a in acks] == [[1, 2], [2, 4]]


def _run_rank_ctl(code, tmp_path):
    return _run(code, {
        "LOCKSTEP_PROGRESS_FILE": str(tmp_path / "rank-0.progress"),
        "LOCKSTEP_COMMIT_FILE": str(tmp_path / "rank-0.ckpt"),
        "LOCKSTEP_ATTEMPT": "1",
        "LOCKSTEP_CONTROL_FILE": str(tmp_path / "control")})


# ---- timed sections -------------------------------------------------------

class FakeClock:
    """time.perf_counter replaced: advance() moves it, nothing else does
    (timings exact under any load)."""

    def __init__(self, monkeypatch):
        self.t = 1000.0
        monkeypatch.setattr(lockstep.time, "perf_counter", lambda: self.t)

    def advance(self, seconds):
        self.t += seconds


def test_timed_sections_are_summed_per_step(inside, monkeypatch):
    clock = FakeClock(monkeypatch)
    lockstep.step(0, force=True)
    for i in range(1, 6):
        with lockstep.timed("compute"):
            clock.advance(0.004)
        with lockstep.timed("compute"):           # a second entry: summed
            clock.advance(0.004 + 0.001 * i)
        with lockstep.timed("data"):
            clock.advance(0.001)
            with lockstep.timed("decode"):         # different names nest
                clock.advance(0.002)
        clock.advance(0.01)                        # outside every section
        lockstep.step(i, force=True)
    secs = progress(inside)["sections"]
    assert set(secs) == {"compute", "data", "decode"}
    c = secs["compute"]
    assert c["n"] == 5 and all(isinstance(v, int) for v in c.values())
    # Whole microseconds, truncated (the float clock may land a hair below).
    assert 10999 <= c["p50_us"] <= 11000 and 12999 <= c["p99_us"] <= 13000
    assert 2999 <= secs["data"]["p50_us"] <= 3000
    assert 1999 <= secs["decode"]["p50_us"] <= 2000


def test_timed_same_name_nested_counts_the_outermost(inside, monkeypatch):
    clock = FakeClock(monkeypatch)
    lockstep.step(0, force=True)
    with lockstep.timed("x"):
        with lockstep.timed("x"):
            clock.advance(0.005)
        clock.advance(0.005)
    lockstep.step(1, force=True)
    assert 9999 <= progress(inside)["sections"]["x"]["p50_us"] <= 10000


def test_a_section_open_at_step_is_split_between_steps(inside, monkeypatch):
    clock = FakeClock(monkeypatch)
    lockstep.step(0, force=True)
    with lockstep.timed("long"):
        clock.advance(0.01)
        lockstep.step(1, force=True)
        clock.advance(0.02)
    lockstep.step(2, force=True)
    assert [round(t) for t in lockstep._sections["long"].times] == \
        [10000, 20000]


def test_a_step_without_the_section_adds_no_sample(inside):
    lockstep.step(0, force=True)
    with lockstep.timed("rare"):
        pass
    for i in range(1, 4):
        lockstep.step(i, force=True)
    assert progress(inside)["sections"]["rare"]["n"] == 1


def test_timed_names_are_checked(inside):
    for bad in ("", "a b", "x" * 33, "é", 3, None):
        with pytest.raises(ValueError):
            lockstep.timed(bad)
    lockstep.timed("x" * 32)
    lockstep.timed("layer.3:fwd-bwd_x")


def test_at_most_16_sections_and_one_warning(inside, capsys):
    lockstep.step(0, force=True)
    for k in range(20):
        with lockstep.timed("s%d" % k):
            pass
    lockstep.step(1, force=True)
    assert len(progress(inside)["sections"]) == 16
    assert capsys.readouterr().err.count("more than 16 timed sections") == 1


def test_timed_outside_lockstep_is_a_noop(outside, tmp_path):
    with lockstep.timed("compute"):
        pass
    lockstep.step(1)
    assert lockstep._sections == {}
    assert list(tmp_path.iterdir()) == []


def test_timed_is_cheap(inside):
    lockstep.step(0, force=True)
    t = time.perf_counter()
    for _ in range(100000):
        with lockstep.timed("compute"):
            pass
    per = (time.perf_counter() - t) / 100000
    assert per < 20e-6, per


def test_no_section_no_member(inside):
    lockstep.step(0, force=True)
    lockstep.step(1, force=True)
    assert "sections" not in progress(inside)
