#!/usr/bin/python3
"""cadence_rank.py - the rank of bench/cadence.sh. Prints figures only.

Modes:
  pause   a torch.distributed (gloo) all_reduce every step; a 50 ms pause
          standing for a GC: --pause random (each rank on its own, with
          probability 1/--every per step), --pause lockstep (when
          lockstep.step() says gc, i.e. at the same step on every rank) or
          --pause none. Rank 0 prints "steps/s X" over the steps after a
          warm-up.
  realgc  the same loop with a real object graph that makes a full
          collection take tens of ms: automatic GC, or under --gc-every
          the SDK's scheduled collections. Rank 0 prints "steps/s X" and
          every rank "gc_ms ..." (the collections' durations).
  latency no torch: steps at --rate per second, and a thread that watches
          the control file (LOCKSTEP_CONTROL_FILE) every millisecond and
          prints "seen SEQ T_MS" the first time each directive appears.
"""
import argparse
import gc
import mmap
import os
import random
import struct
import sys
import threading
import time

import lockstep

RANK = int(os.environ.get("RANK", "0"))


def watch_control(stop):
    path = os.environ.get("LOCKSTEP_CONTROL_FILE")
    seen = set()
    mm = None
    while not stop.is_set():
        if mm is None:
            try:
                with open(path, "rb") as f:
                    mm = mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ)
            except OSError:
                time.sleep(0.01)
                continue
        for i in range(32):
            off = 64 + 32 * i
            seq = struct.unpack_from("<Q", mm, off)[0]
            if seq and seq not in seen:
                seen.add(seq)
                print("seen %d %d" % (seq, int(time.time() * 1000)),
                      flush=True)
        time.sleep(0.001)


def run_latency(a):
    stop = threading.Event()
    t = threading.Thread(target=watch_control, args=(stop,), daemon=True)
    t.start()
    end = time.monotonic() + a.seconds
    step = 0
    while time.monotonic() < end:
        step += 1
        lockstep.step(step)
        time.sleep(1.0 / a.rate)
    stop.set()


def run_torch(a):
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", rank=RANK,
                            world_size=int(os.environ["WORLD_SIZE"]))
    torch.set_num_threads(1)
    rng = random.Random(1000 + RANK)
    buf = torch.ones(1024)
    graph = []
    gc_ms = []
    started = [0.0]

    def on_gc(phase, info):
        if info.get("generation") != 2:
            return
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            gc_ms.append((time.perf_counter() - started[0]) * 1000)

    if a.mode == "realgc":
        gc.callbacks.append(on_gc)
    t0 = None
    for step in range(1, a.steps + 1):
        if step == a.warmup:
            dist.barrier()
            t0 = time.perf_counter()
        dist.all_reduce(buf)
        if a.mode == "realgc":
            # Long-lived, cyclic objects: each full collection walks them.
            graph.append([{"i": i, "s": [i]} for i in range(a.objects)])
            if len(graph) > a.keep:
                graph.pop(0)
        act = lockstep.step(step)
        if a.mode == "pause":
            if a.pause == "random" and rng.random() < 1.0 / a.every:
                time.sleep(a.pause_ms / 1000)
            elif a.pause == "lockstep" and act.gc:
                time.sleep(a.pause_ms / 1000)
        if a.step_time > 0:
            time.sleep(a.step_time)
    dist.barrier()
    took = time.perf_counter() - t0
    if RANK == 0:
        print("steps/s %.2f" % ((a.steps - a.warmup) / took), flush=True)
    if a.mode == "realgc":
        print("gc_ms rank %d n %d total %.1f max %.1f" % (
            RANK, len(gc_ms), sum(gc_ms), max(gc_ms) if gc_ms else 0.0),
            flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["pause", "realgc", "latency"])
    ap.add_argument("--pause", choices=["random", "lockstep", "none"],
                    default="none")
    ap.add_argument("--pause-ms", type=float, default=50)
    ap.add_argument("--every", type=int, default=20)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--step-time", type=float, default=0.01)
    ap.add_argument("--objects", type=int, default=2000)
    ap.add_argument("--keep", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--rate", type=float, default=100)
    a = ap.parse_args()
    if a.mode != "latency" and a.steps <= a.warmup:
        ap.error("--steps (%d) must be more than --warmup (%d): the steps "
                 "after the warm-up are the ones timed" % (a.steps, a.warmup))
    if a.mode == "latency":
        run_latency(a)
    else:
        run_torch(a)


if __name__ == "__main__":
    sys.exit(main())
