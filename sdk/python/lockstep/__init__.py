"""lockstep - report a rank's progress and checkpoints to the lockstep agent.

Standard library only. Under lockstep (the agent sets LOCKSTEP_* variables
in every rank's environment) this module:

- writes the rank's progress file (LOCKSTEP_PROGRESS_FILE) on step(): a
  JSON object {"step": N, "time_ms": T, "attempt": A, "pid": P}, replaced
  atomically, at most every 100 ms, so calling step() on every training
  step costs a clock read;
- appends "<step> <attempt>" to the rank's commit file
  (LOCKSTEP_COMMIT_FILE) on checkpoint_committed(), and fsyncs it;
- registers faulthandler on SIGUSR1 (DUMP_SIGNAL) at import, so the agent
  can ask for every thread's Python stack (it lands on stderr) before a hung
  attempt is torn down. The progress file is created at import (step -1):
  its existence tells the agent that this rank handles SIGUSR1.

Outside lockstep (the variables are unset) every call is a harmless no-op
and nothing is registered, so a script runs anywhere unchanged.

Fencing: every record carries the attempt number, and the files live in a
directory of their own attempt, so a rank of an old attempt can never be
mistaken for one of the current attempt; the agent ignores records of any
other attempt.

The SDK never raises because a file cannot be written: training matters
more than its telemetry. It warns once on stderr instead.
"""

import atexit
import faulthandler
import json
import operator
import os
import signal
import sys
import threading
import time

__all__ = [
    "DUMP_SIGNAL",
    "attempt",
    "checkpoint_committed",
    "checkpoint_dir",
    "resume_from",
    "resume_step",
    "step",
]

#: The signal the agent sends for a stack dump (faulthandler is registered
#: on it at import, under lockstep).
DUMP_SIGNAL = signal.SIGUSR1

#: Minimum time between two progress writes, in seconds.
PROGRESS_INTERVAL = 0.1

_lock = threading.Lock()
_last_write = None       # time.monotonic() of the last progress write
_last_step = None        # last step given to step()
_written_step = None     # last step written to the file
_warned = set()


def _env(name):
    """The variable's value, or None when unset or empty."""
    v = os.environ.get(name)
    return v if v else None


def _int_env(name):
    v = _env(name)
    if v is None:
        return None
    try:
        return int(v)
    except ValueError:
        return None


def _warn(what, err):
    if what in _warned:
        return
    _warned.add(what)
    try:
        sys.stderr.write("lockstep: %s: %s (continuing without it)\n"
                         % (what, err))
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _check_step(n):
    """n as an int (numpy and torch integers too); TypeError for floats
    and bools, ValueError below 0."""
    if isinstance(n, bool):
        raise TypeError("step must be an int, not bool")
    try:
        v = operator.index(n)
    except TypeError:
        raise TypeError("step must be an int, not %s"
                        % type(n).__name__) from None
    if v < 0:
        raise ValueError("step must be >= 0, got %d" % v)
    return v


def _write_progress(n):
    """Replace the progress file with step n (-1: none yet). Caller holds
    _lock."""
    global _last_write, _written_step
    path = _env("LOCKSTEP_PROGRESS_FILE")
    att = _int_env("LOCKSTEP_ATTEMPT")
    if path is None or att is None:
        return
    rec = json.dumps({"step": n, "time_ms": int(time.time() * 1000),
                      "attempt": att, "pid": os.getpid()})
    # Per process: two processes of a rank never share a temporary file.
    tmp = "%s.%d.tmp" % (path, os.getpid())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, rec.encode())
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as e:
        _warn("cannot write progress file %s" % path, e)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return
    # The announcement at import (-1) does not count against the rate.
    if n >= 0:
        _last_write = time.monotonic()
    _written_step = n


def step(n, force=False):
    """Report that this rank reached step n (an int >= 0).

    Cheap: the progress file is written at most every 100 ms (always with
    force=True); the latest step is also written at exit.
    """
    global _last_step
    n = _check_step(n)
    _last_step = n
    now = time.monotonic()
    if (not force and _last_write is not None
            and now - _last_write < PROGRESS_INTERVAL):
        return
    if _env("LOCKSTEP_PROGRESS_FILE") is None:
        return
    with _lock:
        _write_progress(n)


def checkpoint_committed(n):
    """Record that this rank's part of checkpoint step n is durable.

    Appends "<n> <attempt>" to the commit file and fsyncs it, then writes
    the progress file at once. The scheduler counts a checkpoint complete
    once every rank committed it for the same attempt.
    """
    n = _check_step(n)
    path = _env("LOCKSTEP_COMMIT_FILE")
    att = _int_env("LOCKSTEP_ATTEMPT")
    if path is None or att is None:
        return
    with _lock:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                         0o644)
            try:
                os.write(fd, ("%d %d\n" % (n, att)).encode())
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            _warn("cannot write commit file %s" % path, e)
        _write_progress(_last_step if _last_step is not None else n)


def attempt():
    """This attempt's number (1, 2, ...), or None outside lockstep."""
    return _int_env("LOCKSTEP_ATTEMPT")


def resume_step():
    """The step of the checkpoint to resume from, or None for a fresh
    start (or outside lockstep)."""
    return _int_env("LOCKSTEP_RESUME_STEP")


def resume_from():
    """The checkpoint directory to resume from (DIR/step-<N>), or None."""
    return _env("LOCKSTEP_RESUME_FROM")


def checkpoint_dir():
    """The job's checkpoint directory, or None when it has none."""
    return _env("LOCKSTEP_CHECKPOINT_DIR")


def _flush_at_exit():
    """Write the last step if the rate limit held it back."""
    if _last_step is None or _last_step == _written_step:
        return
    with _lock:
        _write_progress(_last_step)


def _setup():
    path = _env("LOCKSTEP_PROGRESS_FILE")
    if path is None or _int_env("LOCKSTEP_ATTEMPT") is None:
        return
    # A Python handler already there keeps running after the dump; a
    # default or ignored disposition must not be chained to (the default
    # would kill the process).
    prev = signal.getsignal(DUMP_SIGNAL)
    chain = prev not in (signal.SIG_DFL, signal.SIG_IGN)
    try:
        faulthandler.register(DUMP_SIGNAL, file=sys.stderr,
                              all_threads=True, chain=chain)
    except (AttributeError, OSError, RuntimeError, ValueError) as e:
        # No usable stderr (closed, replaced by an object without a file
        # descriptor): no dumps, and no progress file to announce them.
        _warn("cannot register the stack dump handler", e)
        return
    # Announce the handler, unless another process of this rank (a data
    # loader worker importing us anew) already did: its steps win.
    if not os.path.exists(path):
        with _lock:
            _write_progress(-1)
    atexit.register(_flush_at_exit)


_setup()
