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
  its existence tells the agent that this rank handles SIGUSR1;
- measures timed sections: `with lockstep.timed("compute"):` adds the
  time spent inside the block to the section's total of the current step;
  step() closes the step, and the progress file carries each section's
  per-step median and p99 over the same window as the step time
  ("sections"), from which the scheduler finds stragglers
  (docs/cadence.md "Sections");
- carries out the job's synchronized cadence (docs/cadence.md): it maps the
  control file (LOCKSTEP_CONTROL_FILE) read-only at import and, on step(n),
  reads its 64-bit generation counter from memory; when a gc or checkpoint
  directive's step is reached, step() collects garbage itself or returns an
  action whose .checkpoint is true, and acknowledges it in the progress
  file ("acks"). With LOCKSTEP_GC_MANAGED=1 (the job has a GC cadence) the
  automatic collector is off: gc.disable() at import, gc.freeze() after the
  first scheduled collection.

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
import collections
import faulthandler
import gc
import json
import mmap
import operator
import os
import signal
import struct
import sys
import threading
import time

__all__ = [
    "DUMP_SIGNAL",
    "Action",
    "attempt",
    "checkpoint_committed",
    "checkpoint_dir",
    "resume_from",
    "resume_step",
    "step",
    "timed",
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

#: Acknowledgements kept in the progress file (the newest).
ACKS_MAX = 32
#: Steps over which step_p50_us / step_p99_us are measured.
STEP_WINDOW = 200

_acks = collections.deque(maxlen=ACKS_MAX)   # [seq, step, duration_ms]
_step_times = collections.deque(maxlen=STEP_WINDOW)  # us between step()s
_prev_step_t = None      # time.perf_counter() of the last step()

#: Timed sections kept per rank; more are ignored (one warning).
SECTIONS_MAX = 16
#: A section name's longest length, and its characters.
SECTION_NAME_MAX = 32
_SECTION_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz"
                           "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-")
_sections = {}           # name -> _Section


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


class _Section:
    """One timed section: the time inside it in the current step, and its
    per-step totals over the last STEP_WINDOW steps (us)."""

    __slots__ = ("acc", "start", "depth", "touched", "times")

    def __init__(self):
        self.acc = 0.0        # seconds inside, this step (closed entries)
        self.start = 0.0      # perf_counter of the outermost entry
        self.depth = 0        # entries open (the same name nested)
        self.touched = False  # entered in this step
        self.times = collections.deque(maxlen=STEP_WINDOW)

    def close_step(self, t):
        """The step ends at t: an open section counts up to t here and
        the rest of it to the next step."""
        if self.depth > 0:
            self.acc += t - self.start
            self.start = t
            self.touched = True
        if self.touched:
            self.times.append(self.acc * 1e6)
        self.acc = 0.0
        self.touched = self.depth > 0


class _Timed:
    """The context manager timed() returns (see there)."""

    __slots__ = ("_sec",)

    def __init__(self, sec):
        self._sec = sec

    def __enter__(self):
        sec = self._sec
        if sec is not None:
            if sec.depth == 0:
                sec.start = time.perf_counter()
            sec.depth += 1
            sec.touched = True
        return self

    def __exit__(self, *exc):
        sec = self._sec
        if sec is not None and sec.depth > 0:
            sec.depth -= 1
            if sec.depth == 0:
                sec.acc += time.perf_counter() - sec.start
        return False


_UNTIMED = _Timed(None)


def timed(name):
    """A context manager that measures the time this rank spends inside
    section `name` (1 to 32 letters, digits, '_', '.', ':' or '-';
    ValueError otherwise) in each step:

        with lockstep.timed("compute"):
            loss = model(batch).sum(); loss.backward()
        lockstep.step(n)

    The time inside every entry of the section between two step() calls
    is summed; step() closes the step (a section open at that moment
    counts up to it, and the rest to the next step). The progress file
    carries each section's per-step median, p99 and count over the last
    200 steps ("sections"); the scheduler compares them across ranks to
    find straggling nodes (docs/cadence.md "Sections"). Sections of
    different names may nest or overlap; the same name nested counts its
    outermost entry only. At most 16 sections per rank: further names are
    not timed (one warning). Cheap: one clock read on entry and one on
    exit, no system call. Outside lockstep it times nothing.
    """
    if (not isinstance(name, str) or not 0 < len(name) <= SECTION_NAME_MAX
            or not _SECTION_CHARS.issuperset(name)):
        raise ValueError("section name must be 1 to %d letters, digits, "
                         "'_', '.', ':' or '-', got %r"
                         % (SECTION_NAME_MAX, name))
    sec = _sections.get(name)
    if sec is None:
        if _env("LOCKSTEP_PROGRESS_FILE") is None:
            return _UNTIMED
        if len(_sections) >= SECTIONS_MAX:
            _warn("more than %d timed sections" % SECTIONS_MAX,
                  "section %r not timed" % name)
            return _UNTIMED
        sec = _sections[name] = _Section()
    return _Timed(sec)


def _sections_json():
    """The "sections" member of the progress record (None: no figures)."""
    out = {}
    for name, sec in list(_sections.items()):
        if sec.times:
            p50, p99 = _percentiles(sec.times)
            out[name] = {"p50_us": p50, "p99_us": p99, "n": len(sec.times)}
    return out or None


def _write_progress(n):
    """Replace the progress file with step n (-1: none yet). Caller holds
    _lock."""
    global _last_write, _written_step
    path = _env("LOCKSTEP_PROGRESS_FILE")
    att = _int_env("LOCKSTEP_ATTEMPT")
    if path is None or att is None:
        return
    obj = {"step": n, "time_ms": int(time.time() * 1000),
           "attempt": att, "pid": os.getpid()}
    if _acks:
        obj["acks"] = list(_acks)
    if _step_times:
        p50, p99 = _percentiles(_step_times)
        obj["step_p50_us"] = p50
        obj["step_p99_us"] = p99
    secs = _sections_json()
    if secs:
        obj["sections"] = secs
    rec = json.dumps(obj)
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


def _percentiles(times):
    """(p50, p99) of times, in whole microseconds: nearest rank, the same
    rule as liblockstep."""
    v = sorted(times)
    return (int(v[(50 * len(v) + 99) // 100 - 1]),
            int(v[(99 * len(v) + 99) // 100 - 1]))


# ---- cadence: the control file (common/ctlfile.h) -------------------------

_CTL_MAGIC = b"LSCTL001"
_CTL_VERSION = 1
_CTL_SIZE = 4096
_CTL_SLOTS = 32
_CTL_HEADER = 64
_CTL_SLOT_SIZE = 32
_CTL_OFF_GEN = 24
_KIND_GC = 1
_KIND_CHECKPOINT = 2
_NEVER = 1 << 63                # no directive pending
_u64_at = struct.Struct("Q").unpack_from
_HANDLED_MAX = 1024             # seqs remembered as carried out

_ctl = None          # the mmap of the control file, or None: cadence off
_ctl_attempt = None  # the attempt the file must belong to
_ctl_gen = None      # the generation the pending set is consistent with
_pending = {}        # seq -> (kind, step): read, not yet carried out
_next_due = _NEVER   # the smallest step in _pending
_handled = set()     # seqs carried out (or ignored)
_handled_floor = 0   # every seq <= this counts as handled (see _handle)
_checkpoints = []    # (seq, step acted at, perf_counter) awaiting commit
_gc_managed = False  # gc.disable() at import (LOCKSTEP_GC_MANAGED=1)
_gc_frozen = False


class Action:
    """What step(n) asks of the caller: false when nothing.

    .gc: the SDK collected garbage inside this step() (a gc directive for
    this step; nothing for the caller to do). .checkpoint: save a
    checkpoint of this step now, then call checkpoint_committed(n).
    Immutable."""

    __slots__ = ("gc", "checkpoint")

    def __init__(self, gc=False, checkpoint=False):
        object.__setattr__(self, "gc", bool(gc))
        object.__setattr__(self, "checkpoint", bool(checkpoint))

    def __setattr__(self, name, value):
        raise AttributeError("lockstep.Action is immutable")

    def __bool__(self):
        return self.gc or self.checkpoint

    def __eq__(self, other):
        if not isinstance(other, Action):
            return NotImplemented
        return (self.gc, self.checkpoint) == (other.gc, other.checkpoint)

    def __hash__(self):
        return hash((self.gc, self.checkpoint))

    def __repr__(self):
        return "Action(gc=%r, checkpoint=%r)" % (self.gc, self.checkpoint)


_NOTHING = Action()


def _ctl_valid(m):
    """Whether m is a control file of our attempt."""
    magic, version, nslots, att = struct.unpack_from("8sIIQ", m, 0)
    return (magic == _CTL_MAGIC and version == _CTL_VERSION
            and nslots == _CTL_SLOTS and att == _ctl_attempt)


def _ctl_reload(gen):
    """Read the slots (gen just moved to gen): the seq/fields/seq protocol
    of ctlfile.h. Directives never retract, so what is read is added to
    _pending; _ctl_gen advances only when gen held still while reading, so
    a read that raced the writer is done again at the next step."""
    global _ctl_gen, _next_due
    m = _ctl
    if not _ctl_valid(m):
        # Not ours (another attempt's, or not yet made): nothing to read;
        # _ctl_gen stays unset, so the header is checked again next step.
        _ctl_gen = None
        return
    unpack = struct.unpack_from
    for i in range(_CTL_SLOTS):
        off = _CTL_HEADER + i * _CTL_SLOT_SIZE
        s1 = unpack("Q", m, off)[0]
        if s1 == 0 or s1 <= _handled_floor or s1 in _handled \
                or s1 in _pending:
            continue
        kind, _, at, check = unpack("IIqQ", m, off + 8)
        if unpack("Q", m, off)[0] != s1 or check != s1:
            continue
        if kind not in (_KIND_GC, _KIND_CHECKPOINT):
            _handle(s1)
            continue
        _pending[s1] = (kind, at)
        if at < _next_due:
            _next_due = at
    if unpack("Q", m, _CTL_OFF_GEN)[0] == gen and _ctl_valid(m):
        _ctl_gen = gen


def _handle(seq):
    """Remember seq as carried out. Bounded: past _HANDLED_MAX the oldest
    seqs are dropped and everything up to them counts as handled (seqs
    grow, and a directive is read long before 1024 newer ones)."""
    global _handled_floor
    _handled.add(seq)
    if len(_handled) > _HANDLED_MAX:
        for old in sorted(_handled)[:len(_handled) - _HANDLED_MAX // 2]:
            _handled.discard(old)
            _handled_floor = max(_handled_floor, old)


def _act(n):
    """Carry out every pending directive due at step n (>= its step)."""
    global _next_due, _gc_frozen
    due = sorted((at, seq, kind) for seq, (kind, at) in _pending.items()
                 if at <= n)
    for _, seq, _ in due:
        del _pending[seq]
        _handle(seq)
    _next_due = min((at for _, at in _pending.values()), default=_NEVER)
    gcs = [seq for _, seq, kind in due if kind == _KIND_GC]
    ckpts = [seq for _, seq, kind in due if kind == _KIND_CHECKPOINT]
    if gcs:
        # Several due at once (a late rank): one collection serves all.
        t0 = time.perf_counter()
        gc.collect()
        ms = int(round((time.perf_counter() - t0) * 1000))
        if _gc_managed and not _gc_frozen:
            gc.freeze()
            _gc_frozen = True
        with _lock:
            for seq in gcs:
                _acks.append([seq, n, ms])
    if ckpts:
        t = time.perf_counter()
        with _lock:
            for seq in ckpts:
                _checkpoints.append((seq, n, t))
            # Never committed: forget the oldest rather than grow.
            del _checkpoints[:-ACKS_MAX]
    return Action(gc=bool(gcs), checkpoint=bool(ckpts))


def step(n, force=False):
    """Report that this rank reached step n (an int >= 0); returns the
    Action due at this step (false when none).

    Cheap: the progress file is written at most every 100 ms (always with
    force=True, or when an acknowledgement was added); the latest step is
    also written at exit. A scheduled collection runs inside this call.
    """
    global _last_step, _prev_step_t
    n = _check_step(n)
    _last_step = n
    t = time.perf_counter()
    if _prev_step_t is not None:
        _step_times.append((t - _prev_step_t) * 1e6)
    _prev_step_t = t
    for sec in _sections.values():
        sec.close_step(t)
    act = _NOTHING
    if _ctl is not None:
        gen = _u64_at(_ctl, _CTL_OFF_GEN)[0]
        if gen != _ctl_gen:
            _ctl_reload(gen)
        if n >= _next_due:
            act = _act(n)
            force = force or act.gc
    now = time.monotonic()
    if (not force and _last_write is not None
            and now - _last_write < PROGRESS_INTERVAL):
        return act
    if _env("LOCKSTEP_PROGRESS_FILE") is None:
        return act
    with _lock:
        _write_progress(n)
    return act


def checkpoint_committed(n):
    """Record that this rank's part of checkpoint step n is durable.

    Appends "<n> <attempt>" to the commit file and fsyncs it, then writes
    the progress file at once. The scheduler counts a checkpoint complete
    once every rank committed it for the same attempt. A checkpoint
    directive that step(n) returned is acknowledged here (same n), with
    the time since that step() returned.
    """
    n = _check_step(n)
    path = _env("LOCKSTEP_COMMIT_FILE")
    att = _int_env("LOCKSTEP_ATTEMPT")
    with _lock:
        now = time.perf_counter()
        for c in [c for c in _checkpoints if c[1] == n]:
            _checkpoints.remove(c)
            _acks.append([c[0], n, int(round((now - c[2]) * 1000))])
        if path is None or att is None:
            return
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
    """The step of the checkpoint to resume from: the last step it holds,
    so training goes on at resume_step() + 1. None for a fresh start,
    outside lockstep, or a --resume-from path not named step-<N>."""
    return _int_env("LOCKSTEP_RESUME_STEP")


def resume_from():
    """The checkpoint directory to resume from (DIR/step-<N>, or what
    --resume-from named), or None."""
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


def _cadence_reset():
    """Forget the control file and every directive (for tests)."""
    global _ctl, _ctl_attempt, _ctl_gen, _next_due, _handled_floor
    global _prev_step_t
    if _ctl is not None:
        _ctl.close()
    _ctl = _ctl_attempt = _ctl_gen = _prev_step_t = None
    _next_due = _NEVER
    _handled_floor = 0
    for c in (_pending, _handled, _checkpoints, _acks, _step_times,
              _sections):
        c.clear()


def _cadence_setup():
    """Map the control file (LOCKSTEP_CONTROL_FILE) of this attempt.
    Cadence is off, with one warning, when it cannot be mapped."""
    global _ctl, _ctl_attempt
    path = _env("LOCKSTEP_CONTROL_FILE")
    att = _int_env("LOCKSTEP_ATTEMPT")
    if path is None or att is None:
        return
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            if os.fstat(fd).st_size < _CTL_SIZE:
                raise OSError("shorter than %d bytes" % _CTL_SIZE)
            m = mmap.mmap(fd, _CTL_SIZE, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
    except (OSError, ValueError) as e:
        _warn("cannot map control file %s" % path, e)
        return
    _ctl = m
    _ctl_attempt = att


def _gc_setup(primary):
    """LOCKSTEP_GC_MANAGED=1: the job's GC cadence replaces the automatic
    collector, in the rank's own process only: a data loader worker (a
    process importing us after the rank announced itself, or a fork of the
    rank) keeps, or gets back, the automatic collector, as it never calls
    step()."""
    global _gc_managed
    if _env("LOCKSTEP_GC_MANAGED") != "1" or not primary:
        return
    gc.disable()
    _gc_managed = True
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_gc_child)


def _gc_child():
    global _gc_managed
    if _gc_managed:
        _gc_managed = False
        gc.enable()


def _setup():
    path = _env("LOCKSTEP_PROGRESS_FILE")
    if path is None or _int_env("LOCKSTEP_ATTEMPT") is None:
        return
    # Another process of this rank (a data loader worker importing us
    # anew) already announced itself: its steps win.
    primary = not os.path.exists(path)
    _cadence_setup()
    _gc_setup(primary)
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
    if primary:
        with _lock:
            _write_progress(-1)
    atexit.register(_flush_at_exit)


_setup()
