#!/usr/bin/python3
"""vs.py - the timing loops of bench/vs-figures.sh, the same for every
scheduler: they only run the command lines the scheduler's adapter
(bench/slurm/system.sh, bench/vs-lockstep.sh) gives them. Prints
key=value figures; asserts nothing.

  vs.py spawn KEY COUNT PAR -- ARGV...
      COUNT processes of ARGV (a CLI submitting one job each), PAR at a
      time; KEY_per_s = COUNT / wall seconds
  vs.py complete KEY COUNT IDLE_CMD -- ARGV...
      COUNT processes of ARGV one after the other, then poll IDLE_CMD
      (a shell command that succeeds once no job is left unfinished)
      every 0.2 s; KEY_s = first call's start -> IDLE_CMD succeeded
  vs.py dispatch KEY COUNT MODE DIR IDLE_CMD -- ARGV...
      COUNT jobs, each ARGV + ["date +%s.%N > DIR/KEY.I"] (the job
      writes the time it started running); MODE idle: one at a time,
      each on an idle cluster (IDLE_CMD succeeded before the next);
      b2b: all submitted back to back, then waited for. KEY_ms = median
      of (the time the job wrote) - (the time just before its submit
      call started), ms; KEY_p90_ms too
  vs.py median V...  /  vs.py first-line-after T FILE
"""
import os
import statistics
import subprocess
import sys
import time


def run(argv):
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def idle(cmd, limit=600):
    deadline = time.time() + limit
    while subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL).returncode != 0:
        if time.time() > deadline:
            sys.exit("timed out waiting for: " + cmd)
        time.sleep(0.2)


def cmd_spawn(key, count, par, argv):
    t0 = time.time()
    running, done = [], 0
    while done < count:
        while len(running) < par and done + len(running) < count:
            running.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL))
        p = running.pop(0)
        if p.wait() != 0:
            sys.exit("failed: " + " ".join(argv))
        done += 1
    print("%s_per_s=%.1f" % (key, count / (time.time() - t0)))


def cmd_complete(key, count, idle_cmd, argv):
    t0 = time.time()
    for _ in range(count):
        run(argv)
    idle(idle_cmd)
    print("%s_s=%.2f" % (key, time.time() - t0))


def read_marker(path, limit=120):
    deadline = time.time() + limit
    while True:
        try:
            with open(path) as f:
                text = f.read().strip()
            if text:
                return float(text)
        except FileNotFoundError:
            pass
        if time.time() > deadline:
            sys.exit("no marker " + path)
        time.sleep(0.005)


def cmd_dispatch(key, count, mode, d, idle_cmd, argv):
    lat, starts = [], []
    idle(idle_cmd)
    for i in range(count):
        mk = os.path.join(d, "%s.%d" % (key, i))
        if os.path.exists(mk):  # an earlier round's
            os.unlink(mk)
        starts.append((time.time(), mk))
        run(argv + ["date +%%s.%%N > %s" % mk])
        if mode == "idle":
            lat.append(read_marker(mk) - starts[-1][0])
            idle(idle_cmd)
    if mode != "idle":
        lat = [read_marker(mk) - t for t, mk in starts]
        idle(idle_cmd)
    lat.sort()
    print("%s_ms=%.1f %s_p90_ms=%.1f" % (
        key, 1000 * statistics.median(lat), key,
        1000 * lat[int(0.9 * (len(lat) - 1))]))


def main(a):
    if len(a) < 2:
        sys.exit(__doc__)
    cmd = a[1]
    if "--" in a:
        k = a.index("--")
        args, argv = a[2:k], a[k + 1:]
    else:
        args, argv = a[2:], []
    if cmd == "spawn":
        cmd_spawn(args[0], int(args[1]), int(args[2]), argv)
    elif cmd == "complete":
        cmd_complete(args[0], int(args[1]), args[2], argv)
    elif cmd == "dispatch":
        cmd_dispatch(args[0], int(args[1]), args[2], args[3], args[4], argv)
    elif cmd == "median":
        v = [float(x) for x in args]
        print(("%.4g" % statistics.median(v)) if v else "-")
    elif cmd == "first-line-after":
        # the first time in FILE (one a line) later than T, or nothing
        t = float(args[0])
        try:
            for line in open(args[1]):
                if line.strip() and float(line) > t:
                    print(line.strip())
                    return 0
        except FileNotFoundError:
            pass
        return 1
    else:
        sys.exit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
