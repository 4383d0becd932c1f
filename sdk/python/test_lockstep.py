"""Tests of the lockstep Python SDK: /usr/bin/python3 -m pytest test_lockstep.py

In-process tests set the LOCKSTEP_* variables with monkeypatch (the module
reads them at each call); what happens at import runs in a subprocess.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import lockstep  # noqa: E402

VARS = ("LOCKSTEP_PROGRESS_FILE", "LOCKSTEP_COMMIT_FILE", "LOCKSTEP_ATTEMPT",
        "LOCKSTEP_RESUME_STEP", "LOCKSTEP_RESUME_FROM",
        "LOCKSTEP_CHECKPOINT_DIR", "LOCKSTEP_JOB_ID")


def _reset():
    lockstep._last_write = None
    lockstep._last_step = None
    lockstep._written_step = None
    lockstep._warned.clear()


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
